#include "io/h5_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t h5_lock = PTHREAD_MUTEX_INITIALIZER;
static H5E_auto2_t saved_func;
static void *saved_data;
static char remembered[512]; /* erase_h5_remember(); guarded by h5_lock */

/* HDF5's printing of its error stack off for good, not only between
 * enter and leave: with it on when HDF5 shuts down (at exit, or in
 * MPI_Finalize) after a group header of a damaged file failed its
 * checksum, HDF5 1.10 cannot free its free lists and prints "HDF5:
 * infinite loop closing library" and a line of 100 codes under the one
 * line that named the file. Errors reach users through erase_status_t. */
static void silence_for_good(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void erase_h5_enter(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, silence_for_good);
    pthread_mutex_lock(&h5_lock);
    H5Eget_auto2(H5E_DEFAULT, &saved_func, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    remembered[0] = '\0';
}

void erase_h5_leave(void)
{
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, saved_func, saved_data);
    pthread_mutex_unlock(&h5_lock);
}

typedef struct {
    char *text;
    size_t size;
    int found;
} detail_t;

/* H5E_WALK_UPWARD visits the innermost (most specific) error first. Its
 * text on one line: HDF5's descriptions of failed system calls hold line
 * breaks ("time = ...\n, filename = ..."), and an error is one line. */
static herr_t detail_walk(unsigned n, const H5E_error2_t *err, void *data)
{
    detail_t *d = data;
    if (!d->found && err->desc && err->desc[0]) {
        snprintf(d->text, d->size, "%s", err->desc);
        for (char *c = d->text; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        d->found = 1;
    }
    return 0;
}

const char *erase_h5_detail(char *text, size_t size)
{
    if (size == 0)
        return text;
    text[0] = '\0';
    detail_t d = { text, size, 0 };
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, detail_walk, &d);
    H5Eclear2(H5E_DEFAULT);
    if (!d.found)
        snprintf(text, size, "%s", remembered);
    remembered[0] = '\0';
    return text;
}

void erase_h5_remember(void)
{
    char text[sizeof remembered];
    detail_t d = { text, sizeof text, 0 };
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, detail_walk, &d);
    if (d.found)
        snprintf(remembered, sizeof remembered, "%s", text);
}

int erase_h5_exists(hid_t loc, const char *path)
{
    char prefix[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof prefix)
        return n == 0 ? 0 : -1;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && path[i] != '/')
            continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        htri_t r = H5Lexists(loc, prefix, H5P_DEFAULT);
        if (r < 0) {
            erase_h5_remember();
            return -1;
        }
        if (r == 0)
            return 0;
    }
    return 1;
}

const char *erase_h5_type_name(hid_t type, char *text, size_t size)
{
    H5T_class_t cls = H5Tget_class(type);
    size_t bytes = H5Tget_size(type);
    switch (cls) {
    case H5T_INTEGER:
        snprintf(text, size, "%s%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int", bytes * 8);
        break;
    case H5T_FLOAT: snprintf(text, size, "float%zu", bytes * 8); break;
    case H5T_STRING: snprintf(text, size, "string"); break;
    case H5T_COMPOUND: snprintf(text, size, "compound"); break;
    case H5T_ENUM: snprintf(text, size, "enum"); break;
    case H5T_ARRAY: snprintf(text, size, "array"); break;
    case H5T_OPAQUE: snprintf(text, size, "opaque"); break;
    case H5T_BITFIELD: snprintf(text, size, "bitfield%zu", bytes * 8); break;
    default: snprintf(text, size, "an unknown type"); break;
    }
    return text;
}

/* Create (replacing any old one) and write an attribute of `type` and `space`. */
static int attr_write(hid_t loc, const char *name, hid_t type, hid_t space, hid_t mem_type,
                      const void *value)
{
    if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0) {
        erase_h5_remember();
        return -1;
    }
    hid_t a = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) {
        erase_h5_remember();
        return -1;
    }
    int rc = H5Awrite(a, mem_type, value) < 0 ? -1 : 0;
    if (rc)
        erase_h5_remember();
    H5Aclose(a);
    return rc;
}

int erase_h5_attr_write_string(hid_t loc, const char *name, const char *value)
{
    size_t n = strlen(value);
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return -1;
    H5Tset_size(t, n + 1); /* with the terminating NUL, as C writes it */
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t s = H5Screate(H5S_SCALAR);
    int rc = s < 0 ? -1 : attr_write(loc, name, t, s, t, value);
    if (s >= 0)
        H5Sclose(s);
    H5Tclose(t);
    return rc;
}

int erase_h5_attr_write_int64(hid_t loc, const char *name, int64_t value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    if (s < 0)
        return -1;
    int rc = attr_write(loc, name, H5T_STD_I64LE, s, H5T_NATIVE_INT64, &value);
    H5Sclose(s);
    return rc;
}

int erase_h5_attr_write_array(hid_t loc, const char *name, hid_t mem_type, const void *values,
                              size_t n)
{
    hsize_t dims[1] = { n };
    hid_t s = H5Screate_simple(1, dims, NULL);
    if (s < 0)
        return -1;
    hid_t file_type = H5Tequal(mem_type, H5T_NATIVE_UINT32) > 0  ? H5T_STD_U32LE
                      : H5Tequal(mem_type, H5T_NATIVE_FLOAT) > 0 ? H5T_IEEE_F32LE
                      : H5Tequal(mem_type, H5T_NATIVE_INT64) > 0 ? H5T_STD_I64LE
                                                                 : H5T_IEEE_F64LE;
    int rc = attr_write(loc, name, file_type, s, mem_type, values);
    H5Sclose(s);
    return rc;
}

char *erase_h5_attr_read_string_alloc(hid_t loc, const char *name, int *rc)
{
    *rc = 1;
    if (H5Aexists(loc, name) <= 0)
        return NULL;
    *rc = -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0)
        return NULL;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    char *out = NULL;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING &&
        H5Sget_simple_extent_type(sp) == H5S_SCALAR) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        if (H5Tis_variable_str(t) > 0) {
            char *v = NULL;
            H5Tset_size(mt, H5T_VARIABLE);
            if (H5Aread(a, mt, &v) >= 0)
                out = strdup(v ? v : "");
            if (v)
                H5free_memory(v);
        } else {
            size_t n = H5Tget_size(t);
            out = calloc(n + 2, 1);
            H5Tset_size(mt, n + 1);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            if (out && H5Aread(a, mt, out) < 0) {
                free(out);
                out = NULL;
            }
        }
        H5Tclose(mt);
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Aclose(a);
    if (out)
        *rc = 0;
    return out;
}

int erase_h5_attr_read_string(hid_t loc, const char *name, char *text, size_t size)
{
    int rc;
    char *value = erase_h5_attr_read_string_alloc(loc, name, &rc);
    if (size)
        snprintf(text, size, "%s", value ? value : "");
    free(value);
    return rc;
}

int erase_h5_attr_read_int64(hid_t loc, const char *name, int64_t *value)
{
    if (H5Aexists(loc, name) <= 0)
        return 1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    int rc = -1;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_INTEGER &&
        H5Sget_simple_extent_npoints(sp) == 1 && H5Aread(a, H5T_NATIVE_INT64, value) >= 0)
        rc = 0;
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Aclose(a);
    return rc;
}

int erase_h5_write_vector(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *data, size_t n)
{
    hsize_t dims[1] = { n };
    hid_t sp = H5Screate_simple(1, dims, NULL);
    if (sp < 0)
        return -1;
    hid_t d = H5Dcreate2(loc, name, file_type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = d < 0 || (n && H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) ? -1 : 0;
    if (rc)
        erase_h5_remember();
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(sp);
    return rc;
}

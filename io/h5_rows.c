#include "io/h5_rows.h"

#include "io/h5_util.h"
#include "lib/core/fs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

erase_status_t erase_h5_rows_open(hid_t file, const char *path, const erase_h5_rows_spec_t *spec, int64_t rows,
                                  hid_t *out)
{
    *out = -1;
    int exists = erase_h5_exists(file, spec->name);
    if (exists < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: the file is damaged (HDF5 cannot look the name up: %s)",
                           path, spec->name, erase_h5_detail(detail, sizeof detail));
    }
    if (exists == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: missing", path, spec->name);
    hid_t o = H5Oopen(file, spec->name, H5P_DEFAULT);
    int is_dataset = o >= 0 && H5Iget_type(o) == H5I_DATASET;
    if (o >= 0)
        H5Oclose(o);
    if (!is_dataset)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: missing (the name is not a dataset)", path,
                           spec->name);
    hid_t d = H5Dopen2(file, spec->name, H5P_DEFAULT);
    if (d < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot open: %s", path, spec->name,
                           erase_h5_detail(detail, sizeof detail));
    }
    *out = d;
    hid_t t = H5Dget_type(d);
    int type_ok = t >= 0 && H5Tget_class(t) == spec->cls && H5Tget_size(t) == spec->bytes &&
                  (spec->cls != H5T_INTEGER || H5Tget_sign(t) == spec->sign);
    if (!type_ok) {
        char name[32] = "an unreadable type";
        if (t >= 0)
            erase_h5_type_name(t, name, sizeof name);
        if (t >= 0)
            H5Tclose(t);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected %s, got %s", path, spec->name, spec->type,
                           name);
    }
    H5Tclose(t);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[H5S_MAX_RANK] = { 0 };
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (rank > 0)
        H5Sget_simple_extent_dims(sp, dims, NULL);
    if (sp >= 0)
        H5Sclose(sp);
    int shape_ok = rank == spec->rank && (int64_t)dims[0] == rows && (spec->rank == 1 || (int64_t)dims[1] == spec->cols);
    if (!shape_ok) {
        char want[64], got[128] = "";
        if (spec->rank == 1)
            snprintf(want, sizeof want, "[%" PRId64 "]", rows);
        else
            snprintf(want, sizeof want, "[%" PRId64 ", %" PRId64 "]", rows, spec->cols);
        if (rank < 0) {
            snprintf(got, sizeof got, "an unreadable shape");
        } else {
            size_t n = 0;
            n += (size_t)snprintf(got + n, sizeof got - n, "[");
            for (int i = 0; i < rank && n < sizeof got - 24; i++)
                n += (size_t)snprintf(got + n, sizeof got - n, i ? ", %llu" : "%llu", (unsigned long long)dims[i]);
            snprintf(got + n, sizeof got - n, "]");
        }
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected shape %s (rows = %" PRId64 "), got %s", path,
                           spec->name, want, rows, got);
    }
    return ERASE_OK;
}

void erase_h5_rows_layout(hid_t d, int64_t *chunk_rows, int *deflated, int *checksummed)
{
    *chunk_rows = 0;
    *deflated = *checksummed = 0;
    hid_t p = H5Dget_create_plist(d);
    if (p < 0)
        return;
    hsize_t chunk[H5S_MAX_RANK] = { 0 };
    if (H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, H5S_MAX_RANK, chunk) >= 1)
        *chunk_rows = (int64_t)chunk[0];
    int n = H5Pget_nfilters(p);
    for (int i = 0; i < n; i++) {
        unsigned flags, config;
        size_t nvalues = 0;
        H5Z_filter_t id = H5Pget_filter2(p, (unsigned)i, &flags, &nvalues, NULL, 0, NULL, &config);
        *deflated |= id == H5Z_FILTER_DEFLATE;
        *checksummed |= id == H5Z_FILTER_FLETCHER32;
    }
    H5Pclose(p);
}

/* Read (`writing` 0) or write rows [begin, begin + count) of a dataset;
 * writing extends it to begin + count rows first. */
static erase_status_t transfer(hid_t d, const char *path, const erase_h5_rows_spec_t *spec, hid_t mem_type,
                               int64_t begin, int64_t count, void *buf, int writing)
{
    hsize_t start[2] = { (hsize_t)begin, 0 }, n[2] = { (hsize_t)count, (hsize_t)spec->cols };
    hsize_t size[2] = { (hsize_t)(begin + count), (hsize_t)spec->cols };
    herr_t rc = writing ? H5Dset_extent(d, size) : 0;
    hid_t fs = rc >= 0 ? H5Dget_space(d) : -1;
    hid_t ms = H5Screate_simple(spec->rank, n, NULL);
    rc = -1;
    if (fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, n, NULL) >= 0)
        rc = writing ? H5Dwrite(d, mem_type, ms, fs, H5P_DEFAULT, buf) : H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, buf);
    char detail[512] = "";
    if (rc < 0) /* before any other HDF5 call clears the error stack */
        erase_h5_detail(detail, sizeof detail);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (rc < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: %s rows [%" PRId64 ", %" PRId64 ") failed: %s", path,
                           spec->name, writing ? "writing" : "reading", begin, begin + count,
                           detail[0] ? detail : "HDF5 gives no reason");
    return ERASE_OK;
}

erase_status_t erase_h5_rows_read(hid_t d, const char *path, const erase_h5_rows_spec_t *spec, hid_t mem_type,
                                  int64_t begin, int64_t count, void *out)
{
    return transfer(d, path, spec, mem_type, begin, count, out, 0);
}

erase_status_t erase_h5_rows_create(hid_t file, const char *path, const erase_h5_rows_spec_t *spec,
                                    hid_t file_type, const erase_h5_rows_layout_t *layout, hid_t *out)
{
    *out = -1;
    hsize_t cols = (hsize_t)spec->cols;
    hsize_t dims[2] = { 0, cols }, maxdims[2] = { H5S_UNLIMITED, cols };
    hsize_t chunk[2] = { (hsize_t)layout->chunk_rows, cols };
    hid_t sp = H5Screate_simple(spec->rank, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    int ok = sp >= 0 && dcpl >= 0 && dapl >= 0 && H5Pset_chunk(dcpl, spec->rank, chunk) >= 0 &&
             H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0;
    if (ok && layout->shuffle)
        ok = H5Pset_shuffle(dcpl) >= 0;
    if (ok && layout->deflate)
        ok = H5Pset_deflate(dcpl, 1) >= 0;
    /* a checksum of every chunk, verified by HDF5 on every read: what
     * protects an uncompressed chunk (and values no range check can tell
     * from damage) */
    if (ok)
        ok = H5Pset_fletcher32(dcpl) >= 0;
    /* room for a few chunks, so that unaligned appends do not re-read */
    size_t chunk_bytes = (size_t)layout->chunk_rows * cols * spec->bytes;
    if (ok)
        ok = H5Pset_chunk_cache(dapl, 521, 4 * chunk_bytes + (1 << 20), 1.0) >= 0;
    if (ok)
        ok = (*out = H5Dcreate2(file, spec->name, file_type, sp, H5P_DEFAULT, dcpl, dapl)) >= 0;
    char detail[256] = "";
    if (!ok) /* before the closes below clear HDF5's error stack */
        erase_h5_detail(detail, sizeof detail);
    if (sp >= 0)
        H5Sclose(sp);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (dapl >= 0)
        H5Pclose(dapl);
    if (!ok)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot create: %s", path, spec->name, detail);
    return ERASE_OK;
}

erase_status_t erase_h5_rows_append(hid_t d, const char *path, const erase_h5_rows_spec_t *spec, hid_t mem_type,
                                    int64_t rows, int64_t n, const void *data)
{
    return transfer(d, path, spec, mem_type, rows, n, (void *)data, 1);
}

erase_status_t erase_h5_rows_open_file(const char *path, hid_t *file)
{
    *file = -1;
    ERASE_CHECK(erase_file_check_regular(path)); /* H5Fopen would wait on a FIFO */
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file >= 0)
        return ERASE_OK;
    char detail[512];
    erase_h5_detail(detail, sizeof detail);
    return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: not an HDF5 file or damaged (truncated?): %s", path,
                       detail[0] ? detail : "the HDF5 library cannot open it");
}

erase_status_t erase_h5_rows_finish(hid_t *file, hid_t *d, const erase_h5_rows_spec_t *specs, int n,
                                    const char *temp, const char *bad_attribute)
{
    erase_status_t st = ERASE_OK;
    char detail[256];
    if (bad_attribute)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: attribute %s: cannot write: %s", temp, bad_attribute,
                         erase_h5_detail(detail, sizeof detail));
    for (int i = 0; i < n; i++) {
        if (d[i] >= 0 && H5Dclose(d[i]) < 0 && st == ERASE_OK)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: closing failed: %s", temp, specs[i].name,
                             erase_h5_detail(detail, sizeof detail));
        d[i] = -1;
    }
    if (st == ERASE_OK && H5Fflush(*file, H5F_SCOPE_GLOBAL) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: flush failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (H5Fclose(*file) < 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    *file = -1;
    ERASE_CHECK(st);
    if (erase_fsync_path(temp, 0) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    return ERASE_OK;
}

erase_status_t erase_h5_rows_publish(const char *temp, const char *path, int *renamed)
{
    if (rename(temp, path) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    *renamed = 1;
    if (erase_fsync_parent(path) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the directory failed: %s", path, strerror(errno));
    return ERASE_OK;
}

void erase_h5_attr_text(hid_t loc, const char *name, char *text, int size)
{
    if (size <= 0)
        return;
    text[0] = '\0';
    int64_t v;
    if (erase_h5_attr_read_string(loc, name, text, (size_t)size) != 0 && erase_h5_attr_read_int64(loc, name, &v) == 0)
        snprintf(text, (size_t)size, "%" PRId64, v);
}

erase_status_t erase_h5_rows_check_format(hid_t file, const char *path, const char *format, const char *kind)
{
    char got[256];
    int rc = erase_h5_attr_read_string(file, "format", got, sizeof got);
    if (rc == 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: not an erase %s shard: no attribute 'format' on the root group",
                           path, kind);
    if (rc < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute format: expected \"%s\", got a value that is not a string",
                           path, format);
    if (strcmp(got, format) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute format: expected \"%s\", got \"%s\"", path, format, got);
    return ERASE_OK;
}

int erase_h5_rows_probe(const char *path, const char *format)
{
    if (access(path, R_OK) != 0 || erase_file_check_regular(path) != ERASE_OK) {
        erase_error_clear();
        return 0;
    }
    char got[64] = "";
    erase_h5_enter();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) {
        if (erase_h5_attr_read_string(f, "format", got, sizeof got) != 0)
            got[0] = '\0';
        H5Fclose(f);
    }
    char detail[16];
    erase_h5_detail(detail, sizeof detail); /* nothing kept for a later message */
    erase_h5_leave();
    return strcmp(got, format) == 0;
}

erase_status_t erase_h5_rows_open_shard(const char *path, hid_t *file, erase_status_t (*validate)(void *shard),
                                        void *shard)
{
    *file = -1;
    if (access(path, R_OK) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_open_file(path, file);
    if (st == ERASE_OK) {
        st = validate(shard);
        if (st != ERASE_OK)
            erase_error_trail(__FILE__, __LINE__);
    }
    erase_h5_leave();
    return st;
}

void erase_h5_rows_close_shard(hid_t *file, hid_t *d, int n)
{
    erase_h5_enter();
    for (int i = 0; i < n; i++) {
        if (d[i] >= 0)
            H5Dclose(d[i]);
        d[i] = -1;
    }
    if (*file >= 0)
        H5Fclose(*file);
    *file = -1;
    erase_h5_leave();
}

void erase_h5_rows_attr_text(hid_t file, const char *name, char *text, int size)
{
    erase_h5_enter();
    erase_h5_attr_text(file, name, text, size);
    erase_h5_leave();
}

#include "io/ctr_shard.h"

#include "io/h5_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct erase_ctr_shard {
    char *path;
    hid_t file;
    hid_t label, dense, sparse; /* datasets */
    int64_t rows, chunk_rows;
    int compressed;   /* /dense has the deflate filter */
    int checksummed;  /* /dense has the Fletcher32 filter */
};

typedef struct {
    const char *name;  /* "/label" */
    int rank;          /* 1 or 2 */
    int64_t cols;      /* second dimension */
    H5T_class_t cls;
    H5T_sign_t sign;
    size_t bytes;
    const char *type;  /* "uint8" */
} dataset_spec_t;

static const dataset_spec_t specs[3] = {
    { "/label", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 1, "uint8" },
    { "/dense", 2, ERASE_CTR_SHARD_DENSE, H5T_FLOAT, H5T_SGN_ERROR, 4, "float32" },
    { "/sparse", 2, ERASE_CTR_SHARD_FIELDS, H5T_INTEGER, H5T_SGN_NONE, 4, "uint32" },
};

/* Open and check one dataset; the lock is held. */
static erase_status_t open_dataset(erase_ctr_shard_t *s, const dataset_spec_t *spec, hid_t *out)
{
    *out = -1;
    if (H5Lexists(s->file, spec->name, H5P_DEFAULT) <= 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: missing", s->path, spec->name);
    hid_t o = H5Oopen(s->file, spec->name, H5P_DEFAULT);
    int is_dataset = o >= 0 && H5Iget_type(o) == H5I_DATASET;
    if (o >= 0)
        H5Oclose(o);
    if (!is_dataset)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: missing (the name is not a dataset)",
                           s->path, spec->name);
    hid_t d = H5Dopen2(s->file, spec->name, H5P_DEFAULT);
    if (d < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot open: %s", s->path, spec->name,
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
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected %s, got %s", s->path, spec->name,
                           spec->type, name);
    }
    H5Tclose(t);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[H5S_MAX_RANK] = { 0 };
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (rank > 0)
        H5Sget_simple_extent_dims(sp, dims, NULL);
    if (sp >= 0)
        H5Sclose(sp);
    int shape_ok = rank == spec->rank && (int64_t)dims[0] == s->rows &&
                   (spec->rank == 1 || (int64_t)dims[1] == spec->cols);
    if (!shape_ok) {
        char want[64], got[128] = "";
        if (spec->rank == 1)
            snprintf(want, sizeof want, "[%" PRId64 "]", s->rows);
        else
            snprintf(want, sizeof want, "[%" PRId64 ", %" PRId64 "]", s->rows, spec->cols);
        if (rank < 0) {
            snprintf(got, sizeof got, "an unreadable shape");
        } else {
            size_t n = 0;
            n += (size_t)snprintf(got + n, sizeof got - n, "[");
            for (int i = 0; i < rank && n < sizeof got - 24; i++)
                n += (size_t)snprintf(got + n, sizeof got - n, i ? ", %llu" : "%llu",
                                      (unsigned long long)dims[i]);
            snprintf(got + n, sizeof got - n, "]");
        }
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected shape %s (rows = %" PRId64 "), got %s",
                           s->path, spec->name, want, s->rows, got);
    }
    return ERASE_OK;
}

/* Layout facts for erase-inspect and the reader's defaults; the lock is held. */
static void read_layout(erase_ctr_shard_t *s)
{
    hid_t p = H5Dget_create_plist(s->label);
    if (p >= 0) {
        hsize_t chunk[1] = { 0 };
        if (H5Pget_layout(p) == H5D_CHUNKED && H5Pget_chunk(p, 1, chunk) == 1)
            s->chunk_rows = (int64_t)chunk[0];
        H5Pclose(p);
    }
    p = H5Dget_create_plist(s->dense);
    if (p >= 0) {
        int n = H5Pget_nfilters(p);
        for (int i = 0; i < n; i++) {
            unsigned flags, config;
            size_t nvalues = 0;
            H5Z_filter_t id = H5Pget_filter2(p, (unsigned)i, &flags, &nvalues, NULL, 0, NULL, &config);
            s->compressed |= id == H5Z_FILTER_DEFLATE;
            s->checksummed |= id == H5Z_FILTER_FLETCHER32;
        }
        H5Pclose(p);
    }
}

/* The checks of erase_ctr_shard_open after the file is open; the lock is held. */
static erase_status_t validate(erase_ctr_shard_t *s)
{
    char format[256];
    int rc = erase_h5_attr_read_string(s->file, "format", format, sizeof format);
    if (rc == 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT,
                           "%s: not an erase CTR shard: no attribute 'format' on the root group", s->path);
    if (rc < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute format: expected \"%s\", got a value that is not a string",
                           s->path, ERASE_CTR_FORMAT);
    if (strcmp(format, ERASE_CTR_FORMAT) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute format: expected \"%s\", got \"%s\"", s->path,
                           ERASE_CTR_FORMAT, format);
    if (erase_h5_attr_read_int64(s->file, "rows", &s->rows) != 0 || s->rows < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute rows: expected an integer >= 0", s->path);
    int64_t missing;
    rc = erase_h5_attr_read_int64(s->file, "sparse_missing", &missing); /* optional; if there, the reserved id */
    if (rc < 0 || (rc == 0 && missing != (int64_t)ERASE_CTR_SPARSE_MISSING))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute sparse_missing: expected %" PRIu32 " (0xFFFFFFFF)%s",
                           s->path, ERASE_CTR_SPARSE_MISSING, rc < 0 ? ", got a value that is not an integer" : "");
    hid_t *ids[3] = { &s->label, &s->dense, &s->sparse };
    for (int i = 0; i < 3; i++)
        ERASE_CHECK(open_dataset(s, &specs[i], ids[i]));
    read_layout(s);
    return ERASE_OK;
}

erase_status_t erase_ctr_shard_open(const char *path, erase_ctr_shard_t **out)
{
    *out = NULL;
    if (access(path, R_OK) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    erase_ctr_shard_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    s->label = s->dense = s->sparse = -1;
    erase_h5_enter();
    erase_status_t st = ERASE_OK;
    s->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (s->file < 0) {
        char detail[512];
        erase_h5_detail(detail, sizeof detail);
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: not an HDF5 file or damaged (truncated?): %s", path,
                         detail[0] ? detail : "the HDF5 library cannot open it");
    } else {
        st = validate(s);
        if (st != ERASE_OK)
            erase_error_trail(__FILE__, __LINE__);
    }
    erase_h5_leave();
    if (st != ERASE_OK) {
        erase_ctr_shard_close(s);
        return st;
    }
    *out = s;
    return ERASE_OK;
}

void erase_ctr_shard_close(erase_ctr_shard_t *s)
{
    if (!s)
        return;
    erase_h5_enter();
    if (s->label >= 0)
        H5Dclose(s->label);
    if (s->dense >= 0)
        H5Dclose(s->dense);
    if (s->sparse >= 0)
        H5Dclose(s->sparse);
    if (s->file >= 0)
        H5Fclose(s->file);
    erase_h5_leave();
    free(s->path);
    free(s);
}

const char *erase_ctr_shard_path(const erase_ctr_shard_t *s) { return s->path; }
int64_t erase_ctr_shard_rows(const erase_ctr_shard_t *s) { return s->rows; }
int64_t erase_ctr_shard_chunk_rows(const erase_ctr_shard_t *s) { return s->chunk_rows; }
int erase_ctr_shard_compressed(const erase_ctr_shard_t *s) { return s->compressed; }
int erase_ctr_shard_checksummed(const erase_ctr_shard_t *s) { return s->checksummed; }

void erase_ctr_shard_attr_text(erase_ctr_shard_t *s, const char *name, char *text, int size)
{
    if (size <= 0)
        return;
    text[0] = '\0';
    erase_h5_enter();
    int64_t v;
    if (erase_h5_attr_read_string(s->file, name, text, (size_t)size) != 0 &&
        erase_h5_attr_read_int64(s->file, name, &v) == 0)
        snprintf(text, (size_t)size, "%" PRId64, v);
    erase_h5_leave();
}

/* Read rows [begin, begin + count) of a 1-D or 2-D dataset; the lock is held. */
static erase_status_t read_rows(erase_ctr_shard_t *s, hid_t d, const dataset_spec_t *spec, hid_t mem_type,
                                int64_t begin, int64_t count, void *out)
{
    hsize_t start[2] = { (hsize_t)begin, 0 }, n[2] = { (hsize_t)count, (hsize_t)spec->cols };
    hid_t fs = H5Dget_space(d);
    hid_t ms = H5Screate_simple(spec->rank, n, NULL);
    herr_t rc = -1;
    if (fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, n, NULL) >= 0)
        rc = H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, out);
    char detail[512] = "";
    if (rc < 0) /* before any other HDF5 call clears the error stack */
        erase_h5_detail(detail, sizeof detail);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (rc < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: reading rows [%" PRId64 ", %" PRId64 ") failed: %s",
                           s->path, spec->name, begin, begin + count, detail[0] ? detail : "HDF5 gives no reason");
    return ERASE_OK;
}

/* 1 if x is +inf or -inf (NaN, the missing value, is not): on the bits, so
 * that the loop below vectorizes. */
static inline uint32_t is_infinite(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7fffffffu) == 0x7f800000u;
}

/*
 * The values that a chunk checksum does not protect (older shards'
 * uncompressed chunks have none; a checksum only says the chunk is as written): every label 0 or 1, every dense value finite or NaN
 * (missing). One pass OR-ing over what was just read; only on a bad value a
 * second pass finds the first one for the message. Rows [begin, begin +
 * count) of the shard.
 */
static erase_status_t check_values(const erase_ctr_shard_t *s, int64_t begin, int64_t count, const uint8_t *label,
                                   const float *dense)
{
    if (label) {
        uint8_t any = 0;
        for (int64_t i = 0; i < count; i++)
            any |= label[i];
        if (any > 1)
            for (int64_t i = 0; i < count; i++)
                if (label[i] > 1)
                    return ERASE_ERROR(ERASE_ERR_FORMAT,
                                       "%s: dataset /label: row %" PRId64 " is %u, expected 0 or 1 (damaged shard?)",
                                       s->path, begin + i, (unsigned)label[i]);
    }
    if (dense) {
        int64_t n = count * ERASE_CTR_SHARD_DENSE;
        uint32_t any = 0;
        for (int64_t k = 0; k < n; k++)
            any |= is_infinite(dense[k]);
        if (any)
            for (int64_t k = 0; k < n; k++)
                if (is_infinite(dense[k])) {
                    int j = (int)(k % ERASE_CTR_SHARD_DENSE);
                    return ERASE_ERROR(ERASE_ERR_FORMAT,
                                       "%s: dataset /dense: row %" PRId64 " feature %d (I%d) is %s, expected a finite "
                                       "value or NaN = missing (damaged shard?)",
                                       s->path, begin + k / ERASE_CTR_SHARD_DENSE, j, j + 1,
                                       dense[k] > 0 ? "inf" : "-inf");
                }
    }
    return ERASE_OK;
}

erase_status_t erase_ctr_shard_read(erase_ctr_shard_t *s, int64_t begin, int64_t count, uint8_t *label,
                                    float *dense, uint32_t *sparse)
{
    if (begin < 0 || count < 0 || begin + count > s->rows)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "%s: rows [%" PRId64 ", %" PRId64 ") outside the shard's %" PRId64 " rows", s->path, begin,
                           begin + count, s->rows);
    if (count == 0)
        return ERASE_OK;
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    if (label)
        st = read_rows(s, s->label, &specs[0], H5T_NATIVE_UINT8, begin, count, label);
    if (st == ERASE_OK && dense)
        st = read_rows(s, s->dense, &specs[1], H5T_NATIVE_FLOAT, begin, count, dense);
    if (st == ERASE_OK && sparse)
        st = read_rows(s, s->sparse, &specs[2], H5T_NATIVE_UINT32, begin, count, sparse);
    erase_h5_leave();
    ERASE_CHECK(st);
    ERASE_CHECK(check_values(s, begin, count, label, dense));
    return ERASE_OK;
}

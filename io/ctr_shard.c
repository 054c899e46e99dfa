#include "io/ctr_shard.h"

#include "io/h5_rows.h"
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
    hid_t d[3]; /* datasets /label, /dense, /sparse */
    int64_t rows, chunk_rows;
    int compressed;   /* /dense has the deflate filter */
    int checksummed;  /* /dense has the Fletcher32 filter */
};

enum { LABEL = 0, DENSE, SPARSE }; /* the datasets, in the order of specs */

static const erase_h5_rows_spec_t specs[3] = {
    { "/label", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 1, "uint8" },
    { "/dense", 2, ERASE_CTR_SHARD_DENSE, H5T_FLOAT, H5T_SGN_ERROR, 4, "float32" },
    { "/sparse", 2, ERASE_CTR_SHARD_FIELDS, H5T_INTEGER, H5T_SGN_NONE, 4, "uint32" },
};

/* The checks of erase_ctr_shard_open after the file is open; the lock is held. */
static erase_status_t validate(void *shard)
{
    erase_ctr_shard_t *s = shard;
    ERASE_CHECK(erase_h5_rows_check_format(s->file, s->path, ERASE_CTR_FORMAT, "CTR"));
    if (erase_h5_attr_read_int64(s->file, "rows", &s->rows) != 0 || s->rows < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute rows: expected an integer >= 0", s->path);
    int64_t missing;
    int rc = erase_h5_attr_read_int64(s->file, "sparse_missing", &missing); /* optional; if there, the reserved id */
    if (rc < 0 || (rc == 0 && missing != (int64_t)ERASE_CTR_SPARSE_MISSING))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute sparse_missing: expected %" PRIu32 " (0xFFFFFFFF)%s",
                           s->path, ERASE_CTR_SPARSE_MISSING, rc < 0 ? ", got a value that is not an integer" : "");
    hid_t *ids[3] = { &s->d[LABEL], &s->d[DENSE], &s->d[SPARSE] };
    for (int i = 0; i < 3; i++)
        ERASE_CHECK(erase_h5_rows_open(s->file, s->path, &specs[i], s->rows, ids[i]));
    /* layout facts for erase-inspect and the reader's defaults */
    int64_t chunk;
    int deflated, checksummed;
    erase_h5_rows_layout(s->d[LABEL], &s->chunk_rows, &deflated, &checksummed);
    erase_h5_rows_layout(s->d[DENSE], &chunk, &s->compressed, &s->checksummed);
    return ERASE_OK;
}

erase_status_t erase_ctr_shard_open(const char *path, erase_ctr_shard_t **out)
{
    *out = NULL;
    erase_ctr_shard_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    s->d[LABEL] = s->d[DENSE] = s->d[SPARSE] = -1;
    erase_status_t st = erase_h5_rows_open_shard(path, &s->file, validate, s);
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
    erase_h5_rows_close_shard(&s->file, s->d, 3);
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
    erase_h5_rows_attr_text(s->file, name, text, size);
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
        st = erase_h5_rows_read(s->d[LABEL], s->path, &specs[0], H5T_NATIVE_UINT8, begin, count, label);
    if (st == ERASE_OK && dense)
        st = erase_h5_rows_read(s->d[DENSE], s->path, &specs[1], H5T_NATIVE_FLOAT, begin, count, dense);
    if (st == ERASE_OK && sparse)
        st = erase_h5_rows_read(s->d[SPARSE], s->path, &specs[2], H5T_NATIVE_UINT32, begin, count, sparse);
    erase_h5_leave();
    ERASE_CHECK(st);
    ERASE_CHECK(check_values(s, begin, count, label, dense));
    return ERASE_OK;
}

#include "io/ctr_shard.h"

#include "io/ctr_shard_internal.h"
#include "lib/core/checked.h"
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
    hid_t d[CTR_DATASETS]; /* the datasets of its version, the others -1 */
    int64_t rows, chunk_rows;
    int version;      /* 1 or 2 */
    int64_t ids;      /* T: ids in all rows */
    uint32_t max_hotness[ERASE_CTR_SHARD_FIELDS];
    int compressed;   /* /dense has the deflate filter */
    int checksummed;  /* /dense has the Fletcher32 filter */
    /* what erase_ctr_shard_read_ids hands out, and its room (elements) */
    uint32_t *scratch;
    int64_t scratch_cap;
    int64_t *offsets; /* [count] of a version 2 read */
    int64_t offsets_cap;
};

const erase_h5_rows_spec_t erase_ctr_specs[CTR_DATASETS] = {
    { "/label", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 1, "uint8" },
    { "/dense", 2, ERASE_CTR_SHARD_DENSE, H5T_FLOAT, H5T_SGN_ERROR, 4, "float32" },
    { "/sparse", 2, ERASE_CTR_SHARD_FIELDS, H5T_INTEGER, H5T_SGN_NONE, 4, "uint32" },
    { "/sparse_lengths", 2, ERASE_CTR_SHARD_FIELDS, H5T_INTEGER, H5T_SGN_NONE, 4, "uint32" },
    { "/sparse_offsets", 1, 1, H5T_INTEGER, H5T_SGN_2, 8, "int64" },
    { "/sparse_ids", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 4, "uint32" },
};

/* The version 2 attributes sparse_ids and max_hotness; the lock is held. */
static erase_status_t read_multi_attributes(erase_ctr_shard_t *s)
{
    if (erase_h5_attr_read_int64(s->file, "sparse_ids", &s->ids) != 0 || s->ids < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute sparse_ids: expected an integer >= 0", s->path);
    int ok = 0;
    hid_t a = H5Aexists(s->file, "max_hotness") > 0 ? H5Aopen(s->file, "max_hotness", H5P_DEFAULT) : -1;
    if (a >= 0) {
        hid_t sp = H5Aget_space(a);
        ok = sp >= 0 && H5Sget_simple_extent_npoints(sp) == ERASE_CTR_SHARD_FIELDS &&
             H5Aread(a, H5T_NATIVE_UINT32, s->max_hotness) >= 0;
        if (sp >= 0)
            H5Sclose(sp);
        H5Aclose(a);
    }
    for (int f = 0; ok && f < ERASE_CTR_SHARD_FIELDS; f++)
        ok = s->max_hotness[f] >= 1;
    if (!ok)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute max_hotness: expected %d integers >= 1", s->path,
                           ERASE_CTR_SHARD_FIELDS);
    return ERASE_OK;
}

/* The checks of erase_ctr_shard_open after the file is open; the lock is held. */
static erase_status_t validate(void *shard)
{
    erase_ctr_shard_t *s = shard;
    char format[32] = "";
    s->version = erase_h5_attr_read_string(s->file, "format", format, sizeof format) == 0 &&
                         strcmp(format, ERASE_CTR_FORMAT_MULTI) == 0
                     ? 2
                     : 1;
    if (s->version == 1)
        ERASE_CHECK(erase_h5_rows_check_format(s->file, s->path, ERASE_CTR_FORMAT, "CTR"));
    if (erase_h5_attr_read_int64(s->file, "rows", &s->rows) != 0 || s->rows < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute rows: expected an integer >= 0", s->path);
    int64_t missing;
    int rc = erase_h5_attr_read_int64(s->file, "sparse_missing", &missing); /* optional; if there, the reserved id */
    if (rc < 0 || (rc == 0 && missing != (int64_t)ERASE_CTR_SPARSE_MISSING))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute sparse_missing: expected %" PRIu32 " (0xFFFFFFFF)%s",
                           s->path, ERASE_CTR_SPARSE_MISSING, rc < 0 ? ", got a value that is not an integer" : "");
    if (s->version == 2) {
        ERASE_CHECK(read_multi_attributes(s));
    } else {
        for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++)
            s->max_hotness[f] = 1;
        s->ids = s->rows * ERASE_CTR_SHARD_FIELDS;
    }
    for (int i = 0; i < CTR_DATASETS; i++)
        if (erase_ctr_dataset_in(i, s->version))
            ERASE_CHECK(erase_h5_rows_open(s->file, s->path, &erase_ctr_specs[i], i == CTR_IDS ? s->ids : s->rows,
                                           &s->d[i]));
    /* layout facts for erase-inspect and the reader's defaults */
    int64_t chunk;
    int deflated, checksummed;
    erase_h5_rows_layout(s->d[CTR_LABEL], &s->chunk_rows, &deflated, &checksummed);
    erase_h5_rows_layout(s->d[CTR_DENSE], &chunk, &s->compressed, &s->checksummed);
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
    for (int i = 0; i < CTR_DATASETS; i++)
        s->d[i] = -1;
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
    erase_h5_rows_close_shard(&s->file, s->d, CTR_DATASETS);
    free(s->scratch);
    free(s->offsets);
    free(s->path);
    free(s);
}

const char *erase_ctr_shard_path(const erase_ctr_shard_t *s) { return s->path; }
int64_t erase_ctr_shard_rows(const erase_ctr_shard_t *s) { return s->rows; }
int64_t erase_ctr_shard_chunk_rows(const erase_ctr_shard_t *s) { return s->chunk_rows; }
int erase_ctr_shard_compressed(const erase_ctr_shard_t *s) { return s->compressed; }
int erase_ctr_shard_checksummed(const erase_ctr_shard_t *s) { return s->checksummed; }
int erase_ctr_shard_version(const erase_ctr_shard_t *s) { return s->version; }
const uint32_t *erase_ctr_shard_max_hotness(const erase_ctr_shard_t *s) { return s->max_hotness; }
int64_t erase_ctr_shard_ids(const erase_ctr_shard_t *s) { return s->ids; }

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

/* ERASE_ERR_INVALID unless [begin, begin + count) lies in the shard's rows. */
static erase_status_t check_range(const erase_ctr_shard_t *s, int64_t begin, int64_t count)
{
    if (begin < 0 || count < 0 || begin > s->rows || count > s->rows - begin)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "%s: rows [%" PRId64 ", %" PRId64 ") outside the shard's %" PRId64 " rows", s->path, begin,
                           begin + count, s->rows);
    return ERASE_OK;
}

erase_status_t erase_ctr_shard_read(erase_ctr_shard_t *s, int64_t begin, int64_t count, uint8_t *label,
                                    float *dense, uint32_t *sparse)
{
    ERASE_CHECK(check_range(s, begin, count));
    if (count == 0)
        return ERASE_OK;
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    if (label)
        st = erase_h5_rows_read(s->d[CTR_LABEL], s->path, &erase_ctr_specs[CTR_LABEL], H5T_NATIVE_UINT8, begin, count,
                                label);
    if (st == ERASE_OK && dense)
        st = erase_h5_rows_read(s->d[CTR_DENSE], s->path, &erase_ctr_specs[CTR_DENSE], H5T_NATIVE_FLOAT, begin, count,
                                dense);
    if (st == ERASE_OK && sparse && s->version == 1)
        st = erase_h5_rows_read(s->d[CTR_SPARSE], s->path, &erase_ctr_specs[CTR_SPARSE], H5T_NATIVE_UINT32, begin,
                                count, sparse);
    erase_h5_leave();
    ERASE_CHECK(st);
    ERASE_CHECK(check_values(s, begin, count, label, dense));
    if (sparse && s->version == 2) {
        /* one id per (row, feature) or an error */
        const uint32_t *ids;
        int64_t nids;
        ERASE_CHECK(erase_ctr_shard_read_ids(s, begin, count, sparse, &ids, &nids));
        for (int64_t k = 0; k < count * ERASE_CTR_SHARD_FIELDS; k++)
            if (sparse[k] != 1)
                return ERASE_ERROR(ERASE_ERR_FORMAT,
                                   "%s: row %" PRId64 " feature C%d has %" PRIu32 " ids: a multi-hot shard (%s); "
                                   "read it with erase_ctr_shard_read_ids",
                                   s->path, begin + k / ERASE_CTR_SHARD_FIELDS, (int)(k % ERASE_CTR_SHARD_FIELDS) + 1,
                                   sparse[k], ERASE_CTR_FORMAT_MULTI);
        memcpy(sparse, ids, sizeof *ids * (size_t)nids);
    }
    return ERASE_OK;
}

/* Room for n elements in *buf (capacity *cap), grown by half again. */
static erase_status_t reserve(const erase_ctr_shard_t *s, void **buf, int64_t *cap, int64_t n, size_t elem)
{
    if (n <= *cap)
        return ERASE_OK;
    int64_t want = n + n / 2;
    size_t bytes;
    void *p = erase_bytes(elem, want, 1, &bytes) ? realloc(*buf, bytes) : NULL;
    if (!p)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for %" PRId64 " ids", s->path, n);
    *buf = p;
    *cap = want;
    return ERASE_OK;
}

/* Version 2: lengths and offsets of rows [begin, begin + count) checked
 * against each other; the ids they span go to s->scratch. The lock is not held. */
static erase_status_t read_ids_v2(erase_ctr_shard_t *s, int64_t begin, int64_t count, uint32_t *lengths,
                                  int64_t *nids)
{
    ERASE_CHECK(reserve(s, (void **)&s->offsets, &s->offsets_cap, count, sizeof *s->offsets));
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_read(s->d[CTR_LENGTHS], s->path, &erase_ctr_specs[CTR_LENGTHS],
                                           H5T_NATIVE_UINT32, begin, count, lengths);
    if (st == ERASE_OK)
        st = erase_h5_rows_read(s->d[CTR_OFFSETS], s->path, &erase_ctr_specs[CTR_OFFSETS], H5T_NATIVE_INT64, begin,
                                count, s->offsets);
    erase_h5_leave();
    ERASE_CHECK(st);
    int64_t first = s->offsets[0], at = first;
    for (int64_t i = 0; i < count; i++) {
        if (s->offsets[i] != at)
            return ERASE_ERROR(ERASE_ERR_FORMAT,
                               "%s: dataset /sparse_offsets: row %" PRId64 " starts at id %" PRId64
                               ", expected %" PRId64 " (the lengths of the rows before it; damaged shard?)",
                               s->path, begin + i, s->offsets[i], at);
        for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++) {
            uint32_t n = lengths[i * ERASE_CTR_SHARD_FIELDS + f];
            if (n == 0)
                return ERASE_ERROR(ERASE_ERR_FORMAT,
                                   "%s: dataset /sparse_lengths: row %" PRId64 " feature C%d has 0 ids, expected >= 1 "
                                   "(damaged shard?)",
                                   s->path, begin + i, f + 1);
            at += n; /* at most ids + 26 * 2^32: no overflow */
        }
        if (at > s->ids || first < 0)
            break;
    }
    if (first < 0 || at > s->ids)
        return ERASE_ERROR(ERASE_ERR_FORMAT,
                           "%s: dataset /sparse_ids: rows [%" PRId64 ", %" PRId64 ") end at id %" PRId64
                           ", the dataset has %" PRId64 " (damaged shard?)",
                           s->path, begin, begin + count, at, s->ids);
    *nids = at - first;
    ERASE_CHECK(reserve(s, (void **)&s->scratch, &s->scratch_cap, *nids, sizeof *s->scratch));
    erase_h5_enter();
    st = erase_h5_rows_read(s->d[CTR_IDS], s->path, &erase_ctr_specs[CTR_IDS], H5T_NATIVE_UINT32, first, *nids,
                            s->scratch);
    erase_h5_leave();
    return st;
}

erase_status_t erase_ctr_shard_read_ids(erase_ctr_shard_t *s, int64_t begin, int64_t count, uint32_t *lengths,
                                        const uint32_t **ids, int64_t *nids)
{
    *ids = NULL;
    *nids = 0;
    ERASE_CHECK(check_range(s, begin, count));
    if (count == 0)
        return ERASE_OK;
    if (s->version == 2) {
        ERASE_CHECK(read_ids_v2(s, begin, count, lengths, nids));
    } else {
        int64_t n = count * ERASE_CTR_SHARD_FIELDS;
        ERASE_CHECK(reserve(s, (void **)&s->scratch, &s->scratch_cap, n, sizeof *s->scratch));
        erase_h5_enter();
        erase_status_t st = erase_h5_rows_read(s->d[CTR_SPARSE], s->path, &erase_ctr_specs[CTR_SPARSE],
                                               H5T_NATIVE_UINT32, begin, count, s->scratch);
        erase_h5_leave();
        ERASE_CHECK(st);
        for (int64_t k = 0; k < n; k++)
            lengths[k] = 1;
        *nids = n;
    }
    *ids = s->scratch;
    return ERASE_OK;
}

erase_status_t erase_ctr_shard_read_padded(erase_ctr_shard_t *s, int64_t begin, int64_t count,
                                           const uint32_t *hotness, int64_t width, uint32_t *padded, uint32_t *len)
{
    int64_t h = 0;
    for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++) {
        if (hotness[f] == 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: hotness of C%d is 0, expected >= 1", s->path, f + 1);
        h += hotness[f];
    }
    if (h != width)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: padded width %" PRId64 ", the hotness adds up to %" PRId64,
                           s->path, width, h);
    uint32_t *lengths = len;
    uint32_t *own = NULL;
    if (!lengths) {
        size_t bytes;
        own = erase_bytes(sizeof *own, count, ERASE_CTR_SHARD_FIELDS, &bytes) ? malloc(bytes ? bytes : 1) : NULL;
        if (!own)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the lengths of %" PRId64 " rows", s->path,
                               count);
        lengths = own;
    }
    const uint32_t *ids;
    int64_t nids;
    erase_status_t st = erase_ctr_shard_read_ids(s, begin, count, lengths, &ids, &nids);
    for (int64_t i = 0; st == ERASE_OK && i < count; i++) {
        uint32_t *out = padded + i * width;
        const uint32_t *n = lengths + i * ERASE_CTR_SHARD_FIELDS;
        for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++) {
            if (n[f] > hotness[f]) {
                st = ERASE_ERROR(ERASE_ERR_FORMAT,
                                 "%s: row %" PRId64 " feature C%d has %" PRIu32
                                 " ids, more than its hotness %" PRIu32
                                 " (a model file's hotness = [26 capacities] or \"mlperf\" raises it)",
                                 s->path, begin + i, f + 1, n[f], hotness[f]);
                break;
            }
            memcpy(out, ids, sizeof *ids * n[f]);
            for (uint32_t k = n[f]; k < hotness[f]; k++)
                out[k] = ERASE_CTR_SPARSE_MISSING;
            ids += n[f];
            out += hotness[f];
        }
    }
    free(own);
    return st;
}

#include "io/cls_shard.h"

#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct erase_cls_shard {
    char *path;
    hid_t file;
    hid_t d[2]; /* /features, /label */
    int64_t rows, features, chunk_rows;
    int classes;
    int compressed, checksummed; /* of /features */
};

/* The two datasets for F features (specs[0].cols = F). */
static void make_specs(erase_h5_rows_spec_t specs[2], int64_t features)
{
    const erase_h5_rows_spec_t f = { "/features", 2, features, H5T_FLOAT, H5T_SGN_ERROR, 4, "float32" };
    const erase_h5_rows_spec_t l = { "/label", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 1, "uint8" };
    specs[0] = f;
    specs[1] = l;
}

/* The checks of erase_cls_shard_open after the file is open; the lock is held. */
static erase_status_t validate(void *shard)
{
    erase_cls_shard_t *s = shard;
    ERASE_CHECK(erase_h5_rows_check_format(s->file, s->path, ERASE_CLS_FORMAT, "classification"));
    int64_t classes;
    if (erase_h5_attr_read_int64(s->file, "rows", &s->rows) != 0 || s->rows < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute rows: expected an integer >= 0", s->path);
    if (erase_h5_attr_read_int64(s->file, "features", &s->features) != 0 || s->features < 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute features: expected an integer >= 1", s->path);
    if (erase_h5_attr_read_int64(s->file, "classes", &classes) != 0 || classes < 1 || classes > ERASE_CLS_MAX_CLASSES)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute classes: expected an integer in 1..%d", s->path,
                           ERASE_CLS_MAX_CLASSES);
    s->classes = (int)classes;
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, s->features);
    for (int i = 0; i < 2; i++)
        ERASE_CHECK(erase_h5_rows_open(s->file, s->path, &specs[i], s->rows, &s->d[i]));
    erase_h5_rows_layout(s->d[0], &s->chunk_rows, &s->compressed, &s->checksummed);
    return ERASE_OK;
}

erase_status_t erase_cls_shard_open(const char *path, erase_cls_shard_t **out)
{
    *out = NULL;
    erase_cls_shard_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    s->d[0] = s->d[1] = -1;
    erase_status_t st = erase_h5_rows_open_shard(path, &s->file, validate, s);
    if (st != ERASE_OK) {
        erase_cls_shard_close(s);
        return st;
    }
    *out = s;
    return ERASE_OK;
}

int erase_cls_shard_probe(const char *path)
{
    return erase_h5_rows_probe(path, ERASE_CLS_FORMAT);
}

void erase_cls_shard_close(erase_cls_shard_t *s)
{
    if (!s)
        return;
    erase_h5_rows_close_shard(&s->file, s->d, 2);
    free(s->path);
    free(s);
}

const char *erase_cls_shard_path(const erase_cls_shard_t *s) { return s->path; }
int64_t erase_cls_shard_rows(const erase_cls_shard_t *s) { return s->rows; }
int64_t erase_cls_shard_features(const erase_cls_shard_t *s) { return s->features; }
int erase_cls_shard_classes(const erase_cls_shard_t *s) { return s->classes; }
int64_t erase_cls_shard_chunk_rows(const erase_cls_shard_t *s) { return s->chunk_rows; }
int erase_cls_shard_compressed(const erase_cls_shard_t *s) { return s->compressed; }
int erase_cls_shard_checksummed(const erase_cls_shard_t *s) { return s->checksummed; }

void erase_cls_shard_attr_text(erase_cls_shard_t *s, const char *name, char *text, int size)
{
    erase_h5_rows_attr_text(s->file, name, text, size);
}

/* Labels below C and finite features: a pass OR-ing over what was read,
 * a second one for the message only when something is bad. */
static erase_status_t check_values(const erase_cls_shard_t *s, int64_t begin, int64_t count, const float *features,
                                   const uint8_t *label)
{
    if (label) {
        uint8_t max = 0;
        for (int64_t i = 0; i < count; i++)
            max = label[i] > max ? label[i] : max;
        if (max >= s->classes)
            for (int64_t i = 0; i < count; i++)
                if (label[i] >= s->classes)
                    return ERASE_ERROR(ERASE_ERR_FORMAT,
                                       "%s: dataset /label: row %" PRId64 " is %u, expected 0..%d (damaged shard?)",
                                       s->path, begin + i, (unsigned)label[i], s->classes - 1);
    }
    if (features) {
        int64_t n = count * s->features;
        uint32_t bad = 0;
        for (int64_t k = 0; k < n; k++) {
            uint32_t u;
            memcpy(&u, &features[k], sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u; /* inf or NaN */
        }
        if (bad)
            for (int64_t k = 0; k < n; k++)
                if (!isfinite(features[k]))
                    return ERASE_ERROR(ERASE_ERR_FORMAT,
                                       "%s: dataset /features: row %" PRId64 " feature %" PRId64
                                       " is %g, expected a finite value (damaged shard?)",
                                       s->path, begin + k / s->features, k % s->features, (double)features[k]);
    }
    return ERASE_OK;
}

erase_status_t erase_cls_shard_read(erase_cls_shard_t *s, int64_t begin, int64_t count, float *features,
                                    uint8_t *label)
{
    if (begin < 0 || count < 0 || begin > s->rows || count > s->rows - begin)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "%s: rows [%" PRId64 ", %" PRId64 ") outside the shard's %" PRId64 " rows", s->path, begin,
                           begin + count, s->rows);
    if (count == 0)
        return ERASE_OK;
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, s->features);
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    if (features)
        st = erase_h5_rows_read(s->d[0], s->path, &specs[0], H5T_NATIVE_FLOAT, begin, count, features);
    if (st == ERASE_OK && label)
        st = erase_h5_rows_read(s->d[1], s->path, &specs[1], H5T_NATIVE_UINT8, begin, count, label);
    erase_h5_leave();
    ERASE_CHECK(st);
    ERASE_CHECK(check_values(s, begin, count, features, label));
    return ERASE_OK;
}

#include "io/ctr_dataset_write.h"

#include "io/ctr_index.h"
#include "lib/core/fs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    erase_ctr_writer_t *w;
    char name[32];    /* part-00000.h5 (units: .unit-00000-00000.h5 until published) */
    int unit, index;  /* units: the unit and the shard's number in it; else -1, 0 */
    int finished;     /* erase_ctr_writer_finish done */
    char *sources;    /* one per line */
    int64_t rows;
    int published;    /* renamed to its final name by a commit */
} shard_t;

struct erase_ctr_dataset_writer {
    char *dir;
    int64_t shard_rows, rows;
    erase_ctr_write_options_t o;
    shard_t *shards;
    int count, cap;
    int committed;
    int made_dir;     /* the directory was created by this writer */
    int force;        /* an old dataset in dir is replaced by the commit */
    int unit, unit_shards; /* the current unit (-1: none) and its shards so far */
    int multi_hot_given;   /* options->multi_hot: each unit starts from it */
};

erase_status_t erase_dataset_remove(const char *dir)
{
    /* the index first (what it lists read before): from then on nothing
     * in dir looks like a dataset, however far the deletion gets */
    erase_ctr_list_t old;
    const char *in[1] = { dir };
    int listed = erase_ctr_list_resolve(in, 1, &old) == ERASE_OK;
    erase_error_clear();
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, ERASE_CTR_INDEX_NAME);
    erase_status_t st = ERASE_OK;
    if (unlink(path) != 0 && errno != ENOENT)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot delete: %s", path, strerror(errno));
    for (int i = 0; listed && i < old.count && st == ERASE_OK; i++)
        if (unlink(old.paths[i]) != 0 && errno != ENOENT)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot delete: %s", old.paths[i], strerror(errno));
    if (listed)
        erase_ctr_list_free(&old);
    return st;
}

erase_status_t erase_dataset_dir_prepare(const char *dir, int force, int *made_dir)
{
    *made_dir = 0;
    if (!dir || !dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory given");
    ERASE_CHECK(erase_dir_make(dir, made_dir));
    char index[4096];
    snprintf(index, sizeof index, "%s/%s", dir, ERASE_CTR_INDEX_NAME);
    if (access(index, F_OK) == 0) {
        if (!force)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "%s: already holds a dataset (%s); remove it or replace it (--force)", dir,
                               ERASE_CTR_INDEX_NAME);
    }
    return ERASE_OK;
}

erase_status_t erase_ctr_dataset_writer_open(const char *dir, int64_t shard_rows,
                                             const erase_ctr_write_options_t *options, int force,
                                             erase_ctr_dataset_writer_t **out)
{
    *out = NULL;
    if (!dir || !dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory given");
    if (shard_rows < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: rows per shard must be >= 1, got %" PRId64, dir, shard_rows);
    int made_dir;
    ERASE_CHECK(erase_dataset_dir_prepare(dir, force, &made_dir));
    erase_ctr_dataset_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        if (made_dir)
            rmdir(dir);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    }
    w->made_dir = made_dir;
    w->force = force;
    w->shard_rows = shard_rows;
    w->unit = -1;
    w->multi_hot_given = options ? options->multi_hot : 0;
    w->o = options ? *options : erase_ctr_write_options_default();
    if (w->o.chunk_rows > shard_rows) /* no chunk larger than a shard */
        w->o.chunk_rows = shard_rows;
    *out = w;
    return ERASE_OK;
}

/* Begin shard number w->count. */
static erase_status_t begin_shard(erase_ctr_dataset_writer_t *w)
{
    if (w->count == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        shard_t *s = realloc(w->shards, sizeof *s * (size_t)cap);
        if (!s)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
        w->shards = s;
        w->cap = cap;
    }
    shard_t *s = &w->shards[w->count];
    memset(s, 0, sizeof *s);
    s->unit = w->unit;
    if (w->unit >= 0) {
        s->index = w->unit_shards++;
        snprintf(s->name, sizeof s->name, ".unit-%05d-%05d.h5", w->unit, s->index);
    } else
        snprintf(s->name, sizeof s->name, "part-%05d.h5", w->count);
    w->count++;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", w->dir, s->name);
    ERASE_CHECK(erase_ctr_writer_open(path, &w->o, &s->w));
    return ERASE_OK;
}

static erase_status_t finish_shard(shard_t *s)
{
    if (s->finished)
        return ERASE_OK;
    ERASE_CHECK(erase_ctr_writer_finish(s->w, s->sources));
    s->finished = 1;
    return ERASE_OK;
}

/* Record `source` for shard s unless it is already its last one. */
static erase_status_t add_source(shard_t *s, const char *source)
{
    size_t old = s->sources ? strlen(s->sources) : 0, n = strlen(source);
    if (s->sources) {
        const char *last = strrchr(s->sources, '\n');
        last = last ? last + 1 : s->sources;
        if (strcmp(last, source) == 0)
            return ERASE_OK;
    }
    char *t = realloc(s->sources, old + n + 2);
    if (!t)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
    if (old)
        t[old++] = '\n';
    memcpy(t + old, source, n + 1);
    s->sources = t;
    return ERASE_OK;
}

erase_status_t erase_ctr_dataset_writer_append_ids(erase_ctr_dataset_writer_t *w, int64_t n, const uint8_t *label,
                                                   const float *dense, const uint32_t *lengths, const uint32_t *ids,
                                                   const char *source)
{
    if (w->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after commit", w->dir);
    while (n > 0) {
        shard_t *s = w->count ? &w->shards[w->count - 1] : NULL;
        if (!s || s->rows == w->shard_rows || s->unit != w->unit) {
            if (s)
                ERASE_CHECK(finish_shard(s));
            ERASE_CHECK(begin_shard(w));
            s = &w->shards[w->count - 1];
        }
        int64_t k = w->shard_rows - s->rows < n ? w->shard_rows - s->rows : n;
        ERASE_CHECK(erase_ctr_writer_append_ids(s->w, k, label, dense, lengths, ids));
        /* once multi-hot, the shards after it start as version 2 */
        w->o.multi_hot |= erase_ctr_writer_version(s->w) == 2;
        ERASE_CHECK(add_source(s, source));
        s->rows += k;
        w->rows += k;
        n -= k;
        label += k;
        dense += k * ERASE_CTR_SHARD_DENSE;
        int64_t used = k * ERASE_CTR_SHARD_FIELDS;
        if (lengths) {
            used = 0;
            for (int64_t j = 0; j < k * ERASE_CTR_SHARD_FIELDS; j++)
                used += lengths[j];
            lengths += k * ERASE_CTR_SHARD_FIELDS;
        }
        ids += used;
    }
    return ERASE_OK;
}

erase_status_t erase_ctr_dataset_writer_append(erase_ctr_dataset_writer_t *w, int64_t n, const uint8_t *label,
                                               const float *dense, const uint32_t *sparse, const char *source)
{
    return erase_ctr_dataset_writer_append_ids(w, n, label, dense, NULL, sparse, source);
}

int erase_ctr_dataset_writer_shards(const erase_ctr_dataset_writer_t *w) { return w->count; }
int64_t erase_ctr_dataset_writer_rows(const erase_ctr_dataset_writer_t *w) { return w->rows; }

erase_status_t erase_ctr_dataset_writer_commit(erase_ctr_dataset_writer_t *w)
{
    if (w->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: committed twice", w->dir);
    if (w->rows == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no rows to write", w->dir);
    ERASE_CHECK(erase_ctr_dataset_writer_finish(w));
    const char **names = malloc(sizeof *names * (size_t)w->count);
    int64_t *rows = malloc(sizeof *rows * (size_t)w->count);
    erase_status_t st = ERASE_OK;
    if (!names || !rows)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
    if (st == ERASE_OK && w->force) /* the new shards are whole: now the old dataset goes */
        st = erase_dataset_remove(w->dir);
    for (int i = 0; st == ERASE_OK && i < w->count; i++) {
        st = erase_ctr_writer_publish(w->shards[i].w);
        w->shards[i].published = st == ERASE_OK;
        names[i] = w->shards[i].name;
        rows[i] = w->shards[i].rows;
    }
    if (st == ERASE_OK)
        st = erase_ctr_index_write(w->dir, names, rows, w->count);
    free(names);
    free(rows);
    ERASE_CHECK(st);
    w->committed = 1;
    return ERASE_OK;
}

erase_status_t erase_ctr_dataset_writer_finish(erase_ctr_dataset_writer_t *w)
{
    return w->count ? finish_shard(&w->shards[w->count - 1]) : ERASE_OK;
}

erase_status_t erase_ctr_dataset_writer_begin_unit(erase_ctr_dataset_writer_t *w, int unit)
{
    ERASE_CHECK(erase_ctr_dataset_writer_finish(w));
    w->unit = unit;
    w->unit_shards = 0;
    /* a unit's first shard starts as the options say, not as the units
     * this rank converted before: the format does not depend on the ranks */
    w->o.multi_hot = w->multi_hot_given;
    return ERASE_OK; /* the next append begins a shard of this unit */
}

erase_status_t erase_ctr_dataset_writer_unit_rows(const erase_ctr_dataset_writer_t *w, int64_t *rows, int units)
{
    for (int i = 0; i < w->count; i++) {
        const shard_t *s = &w->shards[i];
        if (s->unit < 0 || s->unit >= units)
            return ERASE_ERROR(ERASE_ERR_STATE, "%s: shard %s is of no unit", w->dir, s->name);
        rows[s->unit] += s->rows;
    }
    return ERASE_OK;
}

int64_t erase_ctr_unit_shards(int64_t rows, int64_t shard_rows)
{
    return rows > 0 ? (rows - 1) / shard_rows + 1 : 0;
}

/* first[u] = the number of the first shard of unit u (shards of the units before). */
static erase_status_t unit_first_shards(int64_t shard_rows, const int64_t *unit_rows, int units, int64_t **first)
{
    *first = malloc(sizeof **first * (size_t)(units + 1));
    if (!*first)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %d units", units);
    (*first)[0] = 0;
    for (int u = 0; u < units; u++)
        (*first)[u + 1] = (*first)[u] + erase_ctr_unit_shards(unit_rows[u], shard_rows);
    return ERASE_OK;
}

erase_status_t erase_ctr_dataset_writer_publish_units(erase_ctr_dataset_writer_t *w, const int64_t *unit_rows,
                                                      int units)
{
    int64_t *first;
    ERASE_CHECK(unit_first_shards(w->shard_rows, unit_rows, units, &first));
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < w->count && st == ERASE_OK; i++) {
        shard_t *s = &w->shards[i];
        if (s->unit < 0 || s->unit >= units) {
            st = ERASE_ERROR(ERASE_ERR_STATE, "%s: shard %s is of no unit", w->dir, s->name);
            break;
        }
        snprintf(s->name, sizeof s->name, "part-%05" PRId64 ".h5", first[s->unit] + s->index);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", w->dir, s->name);
        st = erase_ctr_writer_publish_as(s->w, path);
        s->published = st == ERASE_OK;
    }
    free(first);
    return st;
}

erase_status_t erase_ctr_dataset_index_units(const char *dir, int64_t shard_rows, const int64_t *unit_rows,
                                             int units)
{
    int64_t *first;
    ERASE_CHECK(unit_first_shards(shard_rows, unit_rows, units, &first));
    int64_t n = first[units];
    if (n == 0 || n > INT32_MAX) {
        free(first);
        return n == 0 ? ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no rows to write", dir)
                      : ERASE_ERROR(ERASE_ERR_INVALID, "%s: more than %d shards", dir, INT32_MAX);
    }
    char(*names)[32] = malloc(sizeof *names * (size_t)n);
    const char **name_ptrs = malloc(sizeof *name_ptrs * (size_t)n);
    int64_t *rows = malloc(sizeof *rows * (size_t)n);
    erase_status_t st = ERASE_OK;
    if (!names || !name_ptrs || !rows)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the index", dir);
    for (int u = 0; u < units && st == ERASE_OK; u++)
        for (int64_t k = first[u]; k < first[u + 1]; k++) {
            snprintf(names[k], sizeof names[k], "part-%05" PRId64 ".h5", k);
            name_ptrs[k] = names[k];
            rows[k] = k + 1 < first[u + 1] ? shard_rows : unit_rows[u] - (k - first[u]) * shard_rows;
        }
    if (st == ERASE_OK)
        st = erase_ctr_index_write(dir, name_ptrs, rows, (int)n);
    free(first);
    free(names);
    free(name_ptrs);
    free(rows);
    return st;
}

void erase_ctr_dataset_writer_keep(erase_ctr_dataset_writer_t *w)
{
    w->committed = 1;
}

void erase_ctr_dataset_writer_free(erase_ctr_dataset_writer_t *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->count; i++) {
        /* temporary files go with the writer; a shard published by a
         * commit that failed later (no index) is deleted too */
        erase_ctr_writer_free(w->shards[i].w);
        if (!w->committed && w->shards[i].published) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", w->dir, w->shards[i].name);
            unlink(path);
        }
        free(w->shards[i].sources);
    }
    if (!w->committed && w->made_dir)
        rmdir(w->dir); /* the empty directory a failed conversion would leave */
    free(w->shards);
    free(w->dir);
    free(w);
}

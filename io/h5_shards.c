#include "io/h5_shards.h"

#include "io/ctr_dataset_write.h"
#include "io/ctr_index.h"
#include "io/h5_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

erase_status_t erase_h5_shards_init(erase_h5_shards_t *set, const char *dir, int force, int compress,
                                    void (*free_shard)(erase_h5_shard_t *shard))
{
    memset(set, 0, sizeof *set);
    set->free_shard = free_shard;
    if (compress && (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0 || H5Zfilter_avail(H5Z_FILTER_SHUFFLE) <= 0))
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: this HDF5 library has no deflate or shuffle filter; "
                           "write uncompressed shards", dir);
    ERASE_CHECK(erase_dataset_dir_prepare(dir, force, &set->made_dir));
    set->force = force;
    if (!(set->dir = strdup(dir))) {
        if (set->made_dir)
            rmdir(dir);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    }
    return ERASE_OK;
}

erase_status_t erase_h5_shards_begin(erase_h5_shards_t *set, erase_h5_shard_t *s, const erase_h5_rows_spec_t *specs,
                                     const hid_t *file_types, int n, const erase_h5_rows_layout_t *layout)
{
    s->file = -1;
    for (int i = 0; i < ERASE_H5_SHARD_MAX_DATASETS; i++)
        s->d[i] = -1;
    if (set->count == set->cap) {
        int cap = set->cap ? 2 * set->cap : 16;
        erase_h5_shard_t **p = realloc(set->shards, sizeof *p * (size_t)cap);
        if (p)
            set->shards = p;
        const char **names = realloc(set->names, sizeof *names * (size_t)cap);
        if (names)
            set->names = names;
        int64_t *r = realloc(set->rows_of, sizeof *r * (size_t)cap);
        if (r)
            set->rows_of = r;
        if (!p || !names || !r) {
            set->free_shard(s);
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", set->dir);
        }
        set->cap = cap;
    }
    snprintf(s->name, sizeof s->name, "part-%05d.h5", set->count);
    snprintf(s->path, sizeof s->path, "%s/%s", set->dir, s->name);
    snprintf(s->temp, sizeof s->temp, "%s.tmp", s->path);
    set->names[set->count] = s->name;
    set->shards[set->count++] = s;
    s->nd = n;
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    s->file = H5Fcreate(s->temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (s->file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", s->temp, erase_h5_detail(detail, sizeof detail));
    }
    for (int i = 0; i < n && st == ERASE_OK; i++)
        st = erase_h5_rows_create(s->file, s->temp, &specs[i], file_types[i], layout, &s->d[i]);
    erase_h5_leave();
    return st;
}

erase_status_t erase_h5_shards_commit(erase_h5_shards_t *set)
{
    if (set->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: committed twice", set->dir);
    if (set->force) /* the new shards are whole: now the old dataset goes */
        ERASE_CHECK(erase_dataset_remove(set->dir));
    for (int i = 0; i < set->count; i++) {
        erase_h5_shard_t *s = set->shards[i];
        ERASE_CHECK(erase_h5_rows_publish(s->temp, s->path, &s->published));
        set->rows_of[i] = s->rows;
    }
    ERASE_CHECK(erase_ctr_index_write(set->dir, set->names, set->rows_of, set->count));
    set->committed = 1;
    return ERASE_OK;
}

void erase_h5_shards_free(erase_h5_shards_t *set)
{
    for (int i = 0; i < set->count; i++) {
        erase_h5_shard_t *s = set->shards[i];
        if (s->file >= 0) {
            erase_h5_enter();
            for (int k = 0; k < s->nd; k++)
                if (s->d[k] >= 0)
                    H5Dclose(s->d[k]);
            H5Fclose(s->file);
            erase_h5_leave();
        }
        if (!s->published)
            unlink(s->temp);
        else if (!set->committed)
            unlink(s->path);
        set->free_shard(s);
    }
    if (!set->committed && set->made_dir && set->dir)
        rmdir(set->dir); /* the empty directory a failed conversion would leave */
    free(set->shards);
    free(set->names);
    free(set->rows_of);
    free(set->dir);
    memset(set, 0, sizeof *set);
}

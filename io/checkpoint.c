#include "io/checkpoint.h"

#include "config.h"
#include "io/ctr_shard_write.h"
#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/checked.h"
#include "lib/core/fs.h"
#include "lib/core/timer.h"

static const char description[] =
    "erase checkpoint (format erase-ckpt-1; io/checkpoint.h). /meta: attributes of the run (step, "
    "samples_seen, epoch, sizes, schedule, optimizers, seed, the model file text `model`, the run "
    "options `options`, version). /params/<block>/<path>: float32 parameters (docs/models.md). "
    "/optim: the optimizer clock (attributes step, lr) and /optim/<block>/<path>/<slot>: float32 "
    "optimizer state. /rng/<rank>: uint64 random-number state words of each rank. /data/cursor: "
    "int64 {epoch, samples of the epoch delivered}; /data/rank_cursors: the cursor of every rank. "
    "/index: every dataset with its type, shape and FNV-1a 64 checksum (also each dataset's "
    "`fnv1a64` attribute), verified on load; a tensor sharded over ranks (attribute `sharding`: "
    "where its rows were; its /index line ends \"rows\") has an FNV-1a 64 per row in "
    "/row_fnv1a64/<params|optim>/<path>, its rows written by their owners.";

int64_t erase_ckpt_tensor_numel(const erase_ckpt_tensor_t *t)
{
    return t->ndim == 2 ? t->dims[0] * t->dims[1] : t->dims[0];
}

/* FNV-1a 64 of `bytes` more bytes after the state h. */
static uint64_t fnv_add(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t erase_ckpt_fnv1a64(const void *data, size_t bytes)
{
    return fnv_add(0xcbf29ce484222325ull, data, bytes);
}

static const char *nz(const char *s) { return s ? s : ""; }

uint64_t erase_ckpt_meta_fnv1a64(const erase_ckpt_meta_t *m)
{
    const struct {
        const char *name;
        int64_t value;
    } ints[] = { { "meta.step", m->step },         { "meta.samples_seen", m->samples_seen },
                 { "meta.epoch", m->epoch },       { "meta.global_batch", m->global_batch },
                 { "meta.world_size", m->world_size }, { "meta.dp_size", m->dp_size },
                 { "meta.pp_size", m->pp_size },   { "optim.step", m->clock_step } };
    const struct {
        const char *name, *value;
    } strs[] = { { "meta.pp_layout", m->pp_layout },
                 { "meta.schedule", m->schedule },
                 { "meta.dense_optimizer", m->dense_optimizer },
                 { "meta.embedding_optimizer", m->embedding_optimizer },
                 { "meta.model", m->model },
                 { "meta.options", m->options },
                 { "meta.version", m->version },
                 { "meta.created", m->created } };
    uint64_t h = erase_ckpt_fnv1a64("", 0);
    char line[96];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        h = fnv_add(h, line, (size_t)snprintf(line, sizeof line, "%s=%" PRId64 "\n", ints[i].name, ints[i].value));
    h = fnv_add(h, line, (size_t)snprintf(line, sizeof line, "meta.seed=%" PRIu64 "\n", m->seed));
    uint32_t bits;
    memcpy(&bits, &m->clock_lr, sizeof bits);
    h = fnv_add(h, line, (size_t)snprintf(line, sizeof line, "optim.lr=%08" PRIx32 "\n", bits));
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        const char *v = nz(strs[i].value);
        size_t len = strlen(v);
        h = fnv_add(h, line, (size_t)snprintf(line, sizeof line, "%s=%zu:", strs[i].name, len));
        h = fnv_add(fnv_add(h, v, len), "\n", 1);
    }
    if (m->embeddings && *m->embeddings) { /* only then: the files written before it keep their sum */
        size_t len = strlen(m->embeddings);
        h = fnv_add(h, line, (size_t)snprintf(line, sizeof line, "meta.embeddings=%zu:", len));
        h = fnv_add(fnv_add(h, m->embeddings, len), "\n", 1);
    }
    return h;
}

/* The integer attribute `attr` ("/meta step") of the checkpoint `path` is
 * in [lo, hi]. */
static erase_status_t int_in_range(const char *path, const char *attr, int64_t v, int64_t lo, int64_t hi)
{
    if (v < lo)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute %s = %" PRId64 ": expected an integer >= %" PRId64, path,
                           attr, v, lo);
    if (v > hi)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute %s = %" PRId64 ": expected an integer <= %" PRId64, path,
                           attr, v, hi);
    return ERASE_OK;
}

erase_status_t erase_ckpt_meta_check(const char *path, const erase_ckpt_meta_t *m)
{
    ERASE_CHECK(int_in_range(path, "/meta step", m->step, 0, ERASE_CKPT_STEP_MAX));
    ERASE_CHECK(int_in_range(path, "/meta samples_seen", m->samples_seen, 0, INT64_MAX));
    if (m->step == 0 && m->samples_seen != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta samples_seen = %" PRId64 ": expected 0 at step 0",
                           path, m->samples_seen);
    if (m->samples_seen < m->step)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta samples_seen = %" PRId64 ": expected an integer "
                           ">= step %" PRId64 " (a step takes at least one sample)", path, m->samples_seen, m->step);
    ERASE_CHECK(int_in_range(path, "/meta epoch", m->epoch, 0, INT64_MAX));
    if (m->epoch_samples < 0 || m->epoch_samples > m->samples_seen)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /data/cursor: samples of the epoch %" PRId64 ": expected "
                           "an integer in [0, samples_seen %" PRId64 "]", path, m->epoch_samples, m->samples_seen);
    ERASE_CHECK(int_in_range(path, "/meta global_batch", m->global_batch, 1, INT64_MAX));
    ERASE_CHECK(int_in_range(path, "/meta world_size", m->world_size, 1, ERASE_CKPT_RANKS_MAX));
    ERASE_CHECK(int_in_range(path, "/meta dp_size", m->dp_size, 1, ERASE_CKPT_RANKS_MAX));
    ERASE_CHECK(int_in_range(path, "/meta pp_size", m->pp_size, 1, ERASE_CKPT_RANKS_MAX));
    if ((int64_t)m->dp_size * m->pp_size != m->world_size)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta world_size = %d: expected dp_size x pp_size = %d x "
                           "%d", path, m->world_size, m->dp_size, m->pp_size);
    ERASE_CHECK(int_in_range(path, "/optim step", m->clock_step, 0, ERASE_CKPT_STEP_MAX));
    if (!isfinite(m->clock_lr) || m->clock_lr < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /optim lr = %g: expected a finite number >= 0", path,
                           (double)m->clock_lr);
    return ERASE_OK;
}

/* ---- small file-system helpers ------------------------------------------------ */

/* "dir/name" into out (ERASE_CKPT_PATH_MAX). Returns -1 when too long. */
static int join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, ERASE_CKPT_PATH_MAX, "%s/%s", dir, name);
    return n < 0 || n >= ERASE_CKPT_PATH_MAX ? -1 : 0;
}

int64_t erase_ckpt_name_step(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "ckpt-", 5) != 0)
        return -1;
    const char *p = base + 5;
    if (*p < '0' || *p > '9')
        return -1;
    int64_t step = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (step > (INT64_MAX - 9) / 10)
            return -1;
        step = step * 10 + (*p - '0');
    }
    return strcmp(p, ".h5") == 0 ? step : -1;
}

int erase_ckpt_stage_path(const char *path, int stage, char *out, size_t size)
{
    int n = stage == 0 ? snprintf(out, size, "%s", path) : snprintf(out, size, "%s.stage%d", path, stage);
    return n < 0 || (size_t)n >= size || stage < 0 ? -1 : 0;
}

/* Step of a stage file name "ckpt-<step>.h5.stage<s>" (s >= 1), or -1. */
static int64_t stage_name_step(const char *name)
{
    const char *dot = strstr(name, ".h5.stage");
    if (!dot || dot[9] < '1' || dot[9] > '9' || strspn(dot + 9, "0123456789") != strlen(dot + 9))
        return -1;
    char head[ERASE_CKPT_PATH_MAX];
    snprintf(head, sizeof head, "%.*s.h5", (int)(dot - name), name);
    return erase_ckpt_name_step(head);
}

/* A temporary file of ours: ".ckpt-<step>.h5.tmp". */
static int is_temp_name(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, ".ckpt-", 6) && n > 4 && !strcmp(name + n - 4, ".tmp");
}

typedef struct {
    int64_t step;
    char *name;
} entry_t;

static int entry_newest_first(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : strcmp(x->name, y->name);
}

/* The checkpoint files of dir, newest first. A missing directory: none. */
static erase_status_t list_dir(const char *dir, entry_t **out, int *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return ERASE_OK;
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot list the checkpoint directory: %s", dir, strerror(errno));
    }
    entry_t *list = NULL;
    int count = 0, cap = 0;
    erase_status_t st = ERASE_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t step = erase_ckpt_name_step(e->d_name);
        if (step < 0)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            entry_t *grown = realloc(list, (size_t)cap * sizeof *grown);
            if (!grown) {
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory listing checkpoints", dir);
                break;
            }
            list = grown;
        }
        if (!(list[count].name = strdup(e->d_name))) {
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory listing checkpoints", dir);
            break;
        }
        list[count++].step = step;
    }
    closedir(d);
    if (st != ERASE_OK) {
        for (int i = 0; i < count; i++)
            free(list[i].name);
        free(list);
        return st;
    }
    if (count > 1)
        qsort(list, (size_t)count, sizeof *list, entry_newest_first);
    *out = list;
    *n = count;
    return ERASE_OK;
}

static void free_list(entry_t *list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i].name);
    free(list);
}

/* Keep the `keep` newest checkpoints of steps <= step; remove stale
 * temporary files. Returns how many checkpoints were removed. */
static int prune(const char *dir, int64_t step, int keep)
{
    entry_t *list;
    int n, removed = 0;
    if (list_dir(dir, &list, &n) != ERASE_OK) {
        erase_error_clear(); /* pruning is best effort: the checkpoint is published */
        return 0;
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (list[i].step > step)
            continue;
        if (kept < keep) {
            kept++;
            continue;
        }
        char path[ERASE_CKPT_PATH_MAX];
        if (join(path, dir, list[i].name) == 0 && unlink(path) == 0)
            removed++;
    }
    free_list(list, n);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char path[ERASE_CKPT_PATH_MAX], main_path[ERASE_CKPT_PATH_MAX];
            int64_t s = stage_name_step(e->d_name);
            if (is_temp_name(e->d_name) && join(path, dir, e->d_name) == 0)
                unlink(path);
            /* a pipeline checkpoint's stage file whose ckpt-<step>.h5 is gone
             * (removed above, renamed damaged/superseded, or never published) */
            else if (s >= 0 && s <= step && join(path, dir, e->d_name) == 0 &&
                     snprintf(main_path, sizeof main_path, "%.*s", (int)(strstr(path, ".h5.stage") - path + 3),
                              path) > 0 &&
                     access(main_path, F_OK) != 0)
                unlink(path);
        }
        closedir(d);
    }
    return removed;
}

erase_status_t erase_ckpt_candidates(const char *dir, char ***paths, int *n)
{
    *paths = NULL;
    *n = 0;
    entry_t *list;
    int count;
    ERASE_CHECK(list_dir(dir, &list, &count));
    char **out = calloc((size_t)count + 1, sizeof *out);
    erase_status_t st = out ? ERASE_OK : ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    int k = 0;
    for (int i = 0; st == ERASE_OK && i < count; i++) {
        char path[ERASE_CKPT_PATH_MAX];
        if (join(path, dir, list[i].name) != 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "%s/%s: path too long", dir, list[i].name);
        else if (!(out[k] = strdup(path)))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
        else
            k++;
    }
    free_list(list, count);
    if (st != ERASE_OK) {
        erase_ckpt_candidates_free(out, k);
        return st;
    }
    *paths = out;
    *n = k;
    return ERASE_OK;
}

void erase_ckpt_candidates_free(char **paths, int n)
{
    if (!paths)
        return;
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

erase_status_t erase_ckpt_open_newest(const char *dir, erase_ckpt_skip_fn skipped, void *ctx, erase_ckpt_t **out)
{
    return erase_ckpt_open_newest_flags(dir, 0, skipped, ctx, out);
}

erase_status_t erase_ckpt_open_newest_flags(const char *dir, int flags, erase_ckpt_skip_fn skipped, void *ctx,
                                            erase_ckpt_t **out)
{
    *out = NULL;
    char **paths;
    int n;
    ERASE_CHECK(erase_ckpt_candidates(dir, &paths, &n));
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < n; i++) {
        st = erase_ckpt_open_flags(paths[i], flags, out);
        if (st == ERASE_OK || st == ERASE_ERR_NOMEM)
            break; /* opened, or a failure that is not this file's */
        const char *why = erase_error_reason();
        size_t len = strlen(paths[i]);
        if (!strncmp(why, paths[i], len) && !strncmp(why + len, ": ", 2))
            why += len + 2; /* the message names the file already */
        if (skipped)
            skipped(ctx, paths[i], why);
    }
    if (st != ERASE_OK && st != ERASE_ERR_NOMEM)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "none of the %d checkpoint%s in %s is usable (all damaged%s)", n,
                         n == 1 ? "" : "s", dir, skipped ? ", see above" : "");
    erase_ckpt_candidates_free(paths, n);
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* ---- writing ----------------------------------------------------------------- */

/* A tensor name: components of [A-Za-z0-9_.-], separated by single '/'. */
static int valid_name(const char *name)
{
    if (!name[0] || name[0] == '/' || strlen(name) >= ERASE_CKPT_NAME_MAX - 32)
        return 0;
    const char *prev = "/";
    for (const char *p = name; *p; prev = p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '-' || c == '.' || c == '/';
        if (!ok || (c == '/' && *prev == '/'))
            return 0;
    }
    return *prev != '/';
}

static void shape_text(int ndim, const int64_t *dims, char *text, size_t size)
{
    if (ndim == 2)
        snprintf(text, size, "[%" PRId64 ", %" PRId64 "]", dims[0], dims[1]);
    else
        snprintf(text, size, "[%" PRId64 "]", dims[0]);
}

static int attr_write_scalar(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = s >= 0 ? H5Acreate2(loc, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = a >= 0 && H5Awrite(a, mem_type, value) >= 0 ? 0 : -1;
    if (rc)
        erase_h5_remember();
    if (a >= 0)
        H5Aclose(a);
    if (s >= 0)
        H5Sclose(s);
    return rc;
}

typedef struct {
    hid_t file;
    const char *temp;    /* for messages */
    FILE *index;         /* the /index text */
    hid_t lcpl;          /* creates intermediate groups */
    uint64_t meta_sum;   /* erase_ckpt_meta_fnv1a64 of what write_body wrote */
} writer_t;

/* Write one dataset with its shape, meaning and checksum attributes and
 * its /index line; the lock is held. */
static erase_status_t write_dataset(writer_t *w, const char *path, hid_t file_type, hid_t mem_type,
                                    int ndim, const int64_t *dims, const void *data, size_t elem,
                                    const char *meaning, const uint64_t *sum)
{
    hsize_t hd[2] = { (hsize_t)dims[0], ndim == 2 ? (hsize_t)dims[1] : 1 };
    size_t bytes = elem * (size_t)hd[0] * (size_t)hd[1];
    uint64_t h = sum ? *sum : erase_ckpt_fnv1a64(data, bytes);
    char shape[64], type[32];
    shape_text(ndim, dims, shape, sizeof shape);
    hid_t sp = H5Screate_simple(ndim, hd, NULL);
    hid_t d = sp >= 0 ? H5Dcreate2(w->file, path, file_type, sp, w->lcpl, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int ok = d >= 0 && (bytes == 0 || H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    if (!ok)
        erase_h5_remember();
    ok = ok && erase_h5_attr_write_string(d, "shape", shape) == 0 &&
         erase_h5_attr_write_string(d, "meaning", meaning ? meaning : "") == 0 &&
         attr_write_scalar(d, "fnv1a64", H5T_STD_U64LE, H5T_NATIVE_UINT64, &h) == 0;
    if (ok)
        erase_h5_type_name(file_type, type, sizeof type);
    if (d >= 0)
        H5Dclose(d);
    if (sp >= 0)
        H5Sclose(sp);
    if (!ok) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot write: %s", w->temp, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    fprintf(w->index, "%s %s %s %016" PRIx64 "\n", path, type, shape, h);
    return ERASE_OK;
}

/* The dataset of the per-row checksums of the sharded dataset `path`
 * ("/params/0/emb/3" -> "/row_fnv1a64/params/0/emb/3"). */
#define ROWSUM_GROUP "/row_fnv1a64"
static void rowsum_path(const char *path, char *out, size_t size)
{
    snprintf(out, size, ROWSUM_GROUP "%s", path);
}

/* A dataset of `type` [dims] created with its space allocated in the file
 * now and never filled (its writers fill it: erase_ckpt_write_rows, whose
 * MPI-IO writes need the space allocated); the lock is held. -1 on
 * failure (remembered). */
static hid_t create_unwritten(writer_t *w, const char *path, hid_t type, int ndim, const int64_t *dims)
{
    hsize_t hd[2] = { (hsize_t)dims[0], ndim == 2 ? (hsize_t)dims[1] : 1 };
    hid_t sp = H5Screate_simple(ndim, hd, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = sp >= 0 && dcpl >= 0 && H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
                      H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0
                  ? H5Dcreate2(w->file, path, type, sp, w->lcpl, dcpl, H5P_DEFAULT)
                  : -1;
    if (d < 0)
        erase_h5_remember();
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (sp >= 0)
        H5Sclose(sp);
    return d;
}

/* A sharded tensor's dataset (whole shape, no data: its owners write the
 * rows) with its shape, meaning and sharding attributes, its per-row
 * checksum dataset, and its /index line "<path> float32 <shape> rows";
 * the lock is held. */
static erase_status_t write_sharded(writer_t *w, const char *path, const erase_ckpt_tensor_t *t)
{
    char sums[ERASE_CKPT_NAME_MAX + 32], shape[64];
    rowsum_path(path, sums, sizeof sums);
    shape_text(t->ndim, t->dims, shape, sizeof shape);
    hid_t d = create_unwritten(w, path, H5T_IEEE_F32LE, t->ndim, t->dims);
    int ok = d >= 0 && erase_h5_attr_write_string(d, "shape", shape) == 0 &&
             erase_h5_attr_write_string(d, "meaning", t->meaning ? t->meaning : "") == 0 &&
             erase_h5_attr_write_string(d, "sharding", t->sharding) == 0 &&
             erase_h5_attr_write_string(d, "row_fnv1a64", sums) == 0;
    if (d >= 0)
        H5Dclose(d);
    hid_t c = ok ? create_unwritten(w, sums, H5T_STD_U64LE, 1, t->dims) : -1;
    ok = c >= 0 && erase_h5_attr_write_string(c, "meaning", "FNV-1a 64 of each row's bytes (little-endian) of "
                                                            "the dataset of the same path below /, written by "
                                                            "the row's owner") == 0;
    if (c >= 0)
        H5Dclose(c);
    if (!ok) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot create: %s", w->temp, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    fprintf(w->index, "%s float32 %s rows\n", path, shape);
    return ERASE_OK;
}

static erase_status_t write_tensors(writer_t *w, const char *group, const erase_ckpt_tensor_t *t, int n,
                                    const uint64_t *sums)
{
    for (int i = 0; i < n; i++) {
        char path[ERASE_CKPT_NAME_MAX + 16];
        snprintf(path, sizeof path, "/%s/%s", group, t[i].name);
        if (t[i].sharding) {
            ERASE_CHECK(write_sharded(w, path, &t[i]));
            continue;
        }
        ERASE_CHECK(write_dataset(w, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, t[i].ndim, t[i].dims, t[i].data,
                                  sizeof(float), t[i].meaning, sums ? &sums[i] : NULL));
    }
    return ERASE_OK;
}

/* /meta and its attributes (m->version and m->created too); the lock is
 * held. Returns the failing name or NULL. */
static const char *write_meta(hid_t file, const erase_ckpt_meta_t *m)
{
    hid_t g = H5Gcreate2(file, "/meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) {
        erase_h5_remember();
        return "/meta";
    }
    const char *bad = NULL;
    if (erase_h5_attr_write_int64(g, "step", m->step)) bad = "step";
    else if (erase_h5_attr_write_int64(g, "samples_seen", m->samples_seen)) bad = "samples_seen";
    else if (erase_h5_attr_write_int64(g, "epoch", m->epoch)) bad = "epoch";
    else if (erase_h5_attr_write_int64(g, "global_batch", m->global_batch)) bad = "global_batch";
    else if (erase_h5_attr_write_int64(g, "world_size", m->world_size)) bad = "world_size";
    else if (erase_h5_attr_write_int64(g, "dp_size", m->dp_size)) bad = "dp_size";
    else if (erase_h5_attr_write_int64(g, "pp_size", m->pp_size)) bad = "pp_size";
    else if (erase_h5_attr_write_string(g, "pp_layout", nz(m->pp_layout))) bad = "pp_layout";
    else if (erase_h5_attr_write_string(g, "schedule", nz(m->schedule))) bad = "schedule";
    else if (erase_h5_attr_write_string(g, "dense_optimizer", nz(m->dense_optimizer))) bad = "dense_optimizer";
    else if (erase_h5_attr_write_string(g, "embedding_optimizer", nz(m->embedding_optimizer))) bad = "embedding_optimizer";
    else if (attr_write_scalar(g, "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64, &m->seed)) bad = "seed";
    else if (erase_h5_attr_write_string(g, "model", nz(m->model))) bad = "model";
    else if (erase_h5_attr_write_string(g, "options", nz(m->options))) bad = "options";
    else if (erase_h5_attr_write_string(g, "version", nz(m->version))) bad = "version";
    else if (erase_h5_attr_write_string(g, "created", nz(m->created))) bad = "created";
    else if (m->embeddings && *m->embeddings && erase_h5_attr_write_string(g, "embeddings", m->embeddings))
        bad = "embeddings";
    H5Gclose(g);
    return bad;
}

/* Everything but the `format` attribute; the lock is held. */
static erase_status_t write_body(writer_t *w, const erase_ckpt_meta_t *given, const erase_ckpt_tensor_t *params,
                                 int np, const erase_ckpt_tensor_t *optim, int no,
                                 const erase_ckpt_rank_t *ranks, int nranks, const uint64_t *sums,
                                 int sleep_ms)
{
    char detail[256], created[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    erase_ckpt_meta_t full = *given, *m = &full;
    full.version = PACKAGE_NAME " " PACKAGE_VERSION;
    full.created = created;
    w->meta_sum = erase_ckpt_meta_fnv1a64(m);
    if (erase_h5_attr_write_string(w->file, "description", description))
        return ERASE_ERROR(ERASE_ERR_IO, "%s: attribute description: cannot write: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    const char *bad = write_meta(w->file, m);
    if (bad)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: /meta attribute %s: cannot write: %s", w->temp, bad,
                           erase_h5_detail(detail, sizeof detail));
    ERASE_CHECK(write_tensors(w, "params", params, np, sums));
    if (sleep_ms > 0) {
        erase_h5_leave(); /* let other HDF5 users (the data reader) run meanwhile */
        usleep((useconds_t)sleep_ms * 1000);
        erase_h5_enter();
    }
    hid_t g = H5Gcreate2(w->file, "/optim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int ok = g >= 0 && erase_h5_attr_write_int64(g, "step", m->clock_step) == 0 &&
             attr_write_scalar(g, "lr", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &m->clock_lr) == 0 &&
             erase_h5_attr_write_string(g, "meaning", "optimizer clock: step = updates applied, lr = learning "
                                                      "rate of the last update; below: state slots per parameter") == 0;
    if (!ok)
        erase_h5_remember();
    if (g >= 0)
        H5Gclose(g);
    if (!ok)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: group /optim: cannot write the clock: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    ERASE_CHECK(write_tensors(w, "optim", optim, no, sums ? sums + np : NULL));
    for (int r = 0; r < nranks; r++) {
        char path[64];
        snprintf(path, sizeof path, "/rng/%d", r);
        int64_t dims[1] = { 2 };
        ERASE_CHECK(write_dataset(w, path, H5T_STD_U64LE, H5T_NATIVE_UINT64, 1, dims, ranks[r].rng, 8,
                                  "random-number state words of this rank: {seed, draws}; erase draws "
                                  "random numbers only as pure functions of (seed, epoch, block), so draws is 0",
                                  NULL));
    }
    int64_t cursor[2] = { m->epoch, m->epoch_samples }, cdims[1] = { 2 };
    ERASE_CHECK(write_dataset(w, "/data/cursor", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, cdims, cursor, 8,
                              "data cursor {epoch, samples of that epoch delivered over all ranks}: the "
                              "next step starts at that position of the epoch's global sample order",
                              NULL));
    int64_t *rc = malloc(sizeof(int64_t) * 2 * (size_t)(nranks > 0 ? nranks : 1));
    if (!rc)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->temp);
    for (int r = 0; r < nranks; r++) {
        rc[2 * r] = ranks[r].epoch;
        rc[2 * r + 1] = ranks[r].samples;
    }
    int64_t rdims[2] = { nranks, 2 };
    erase_status_t st = write_dataset(w, "/data/rank_cursors", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, rdims, rc, 8,
                                      "row r: the data cursor {epoch, samples} rank r reported", NULL);
    free(rc);
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Write the /index text as a scalar string dataset, and its checksum and
 * the attributes' (w->meta_sum) as root attributes; the lock is held. */
static erase_status_t write_index(writer_t *w, const char *text, size_t len)
{
    uint64_t h = erase_ckpt_fnv1a64(text, len);
    hid_t t = H5Tcopy(H5T_C_S1);
    int ok = t >= 0 && H5Tset_size(t, len + 1) >= 0 && H5Tset_strpad(t, H5T_STR_NULLTERM) >= 0;
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t d = ok && s >= 0 ? H5Dcreate2(w->file, "/index", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    ok = d >= 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0 &&
         erase_h5_attr_write_string(d, "meaning", "every dataset of this file: path, type, shape, FNV-1a 64 "
                                                  "of its bytes (little-endian), hex") == 0 &&
         attr_write_scalar(w->file, "index_fnv1a64", H5T_STD_U64LE, H5T_NATIVE_UINT64, &h) == 0 &&
         attr_write_scalar(w->file, "meta_fnv1a64", H5T_STD_U64LE, H5T_NATIVE_UINT64, &w->meta_sum) == 0;
    if (!ok)
        erase_h5_remember();
    if (d >= 0)
        H5Dclose(d);
    if (s >= 0)
        H5Sclose(s);
    if (t >= 0)
        H5Tclose(t);
    if (!ok) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset /index: cannot write: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    }
    return ERASE_OK;
}

static erase_status_t check_tensors(const char *what, const erase_ckpt_tensor_t *t, int n)
{
    for (int i = 0; i < n; i++) {
        if (!valid_name(t[i].name))
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s tensor %d: bad name '%s' (components of "
                               "[A-Za-z0-9_.-] separated by '/')", what, i, t[i].name);
        size_t bytes;
        if ((t[i].ndim != 1 && t[i].ndim != 2) ||
            !erase_bytes(sizeof(float), t[i].dims[0], t[i].ndim == 2 ? t[i].dims[1] : 1, &bytes))
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: bad shape", what, t[i].name);
        if (t[i].sharding && (t[i].row0 < 0 || t[i].held < 0 || t[i].row0 > t[i].dims[0] - t[i].held))
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: rows [%" PRId64 ", %" PRId64 " + %" PRId64
                               ") of a sharded tensor of %" PRId64 " rows", what, t[i].name, t[i].row0, t[i].row0,
                               t[i].held, t[i].dims[0]);
        if (!t[i].data && (t[i].sharding ? t[i].held * (t[i].ndim == 2 ? t[i].dims[1] : 1)
                                         : erase_ckpt_tensor_numel(&t[i])) > 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: no data", what, t[i].name);
        for (int j = 0; j < i; j++)
            if (!strcmp(t[i].name, t[j].name))
                return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: written twice", what, t[i].name);
    }
    return ERASE_OK;
}

/* The counts and tensors of a write. */
static erase_status_t check_contents(const erase_ckpt_tensor_t *params, int np, const erase_ckpt_tensor_t *optim,
                                     int no, int nranks)
{
    if (np < 0 || no < 0 || nranks < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: negative count");
    ERASE_CHECK(check_tensors("params", params, np));
    return check_tensors("optim", optim, no);
}

static int debug_sleep_ms(void)
{
    const char *e = getenv("ERASE_DEBUG_CKPT_SLEEP_MS");
    return e ? atoi(e) : 0;
}

erase_status_t erase_ckpt_write(const char *dir, const erase_ckpt_meta_t *meta,
                                const erase_ckpt_tensor_t *params, int np,
                                const erase_ckpt_tensor_t *optim, int no,
                                const erase_ckpt_rank_t *ranks, int nranks,
                                const uint64_t *sums, int keep, erase_ckpt_report_t *report)
{
    return erase_ckpt_write_part(dir, meta, 0, params, np, optim, no, ranks, nranks, sums, keep, NULL, NULL,
                                 report);
}

/* Write the whole file `temp` (created or truncated), flush, close and
 * fsync it; the arguments are checked. On failure `temp` may remain (the
 * caller removes it). */
static erase_status_t write_temp(const char *temp, const erase_ckpt_meta_t *meta,
                                 const erase_ckpt_tensor_t *params, int np, const erase_ckpt_tensor_t *optim,
                                 int no, const erase_ckpt_rank_t *ranks, int nranks, const uint64_t *sums)
{
    erase_status_t st = ERASE_OK;
    char *index = NULL;
    size_t index_len = 0;
    writer_t w = { .file = -1, .temp = temp, .index = open_memstream(&index, &index_len), .lcpl = -1 };
    if (!w.index)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", temp);
    char detail[256];
    erase_h5_enter();
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* the 1.8 format: checksummed superblock and object headers; any size of attribute */
    if (fapl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 ||
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot set up HDF5 file access: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK && (w.lcpl = H5Pcreate(H5P_LINK_CREATE)) >= 0)
        H5Pset_create_intermediate_group(w.lcpl, 1);
    if (st == ERASE_OK && (w.file = H5Fcreate(temp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK)
        st = write_body(&w, meta, params, np, optim, no, ranks, nranks, sums, debug_sleep_ms());
    if (st == ERASE_OK) {
        fflush(w.index);
        st = write_index(&w, index, index_len);
    }
    if (st == ERASE_OK && erase_h5_attr_write_string(w.file, "format", ERASE_CKPT_FORMAT))
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: attribute format: cannot write: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK && H5Fflush(w.file, H5F_SCOPE_GLOBAL) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: flush failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (w.file >= 0 && H5Fclose(w.file) < 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (w.lcpl >= 0)
        H5Pclose(w.lcpl);
    if (fapl >= 0)
        H5Pclose(fapl);
    erase_h5_leave();
    fclose(w.index);
    free(index);
    if (st == ERASE_OK && erase_fsync_path(temp, 0) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    return st;
}

/* The temporary name of a checkpoint file's name. */
#define TEMP_NAME ".%s.tmp"

int erase_ckpt_temp_path(const char *dir, int64_t step, char *out, size_t size)
{
    char name[64];
    snprintf(name, sizeof name, "ckpt-%" PRId64 ".h5", step);
    int n = snprintf(out, size, "%s/" TEMP_NAME, dir, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Elements of a row of t. */
static int64_t row_elems(const erase_ckpt_tensor_t *t)
{
    return t->ndim == 2 ? t->dims[1] : 1;
}

/* The per-row checksums of this rank's rows of every sharded tensor of
 * t[n], appended at sums[*at...] (held values each). */
/* The FNV-1a of each of the rows a sharded tensor holds, into sums[held]. */
static void row_sums(const erase_ckpt_tensor_t *t, uint64_t *sums)
{
    size_t row = sizeof(float) * (size_t)row_elems(t);
    for (int64_t r = 0; r < t->held; r++)
        sums[r] = erase_ckpt_fnv1a64((const char *)t->data + (size_t)r * row, row);
}

/* Write rows [row0, row0 + held) (cols elements of mem_type each) from
 * `data` into dataset `path` of the open file, collectively (a rank with
 * no rows selects none); the lock is held. 0 or -1 (remembered). */
static int write_part_rows(hid_t file, hid_t dxpl, const char *path, hid_t mem_type, int ndim, int64_t row0,
                           int64_t held, int64_t cols, const void *data)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t start[2] = { (hsize_t)row0, 0 }, count[2] = { (hsize_t)held, (hsize_t)cols };
    hsize_t one = 1;
    hid_t ms = held > 0 ? H5Screate_simple(ndim, count, NULL) : H5Screate_simple(1, &one, NULL);
    int ok = fs >= 0 && ms >= 0;
    if (ok && held > 0)
        ok = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0;
    else if (ok)
        ok = H5Sselect_none(fs) >= 0 && H5Sselect_none(ms) >= 0;
    static const uint64_t none = 0;
    ok = ok && H5Dwrite(d, mem_type, ms, fs, dxpl, held > 0 ? data : (const void *)&none) >= 0;
    if (!ok)
        erase_h5_remember();
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    return ok ? 0 : -1;
}

erase_status_t erase_ckpt_write_rows(const char *temp, MPI_Comm comm, const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    /* everything that may fail on one rank alone, before any collective */
    erase_status_t st = check_contents(params, np, optim, no, 0);
    size_t rows = 0; /* the most rows of one tensor: its checksums are made just before it is written */
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < (g ? no : np); i++) {
            const erase_ckpt_tensor_t *t = g ? &optim[i] : &params[i];
            if (t->sharding && st == ERASE_OK && (size_t)t->held > rows)
                rows = (size_t)t->held;
        }
    uint64_t *sums = st == ERASE_OK ? malloc(sizeof *sums * (rows ? rows : 1)) : NULL;
    if (st == ERASE_OK && !sums)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for %zu row checksums", temp, rows);
    /* a rank that cannot open the file (another file system, a directory it
     * cannot see) fails here, with the others: a collective MPI-IO open that
     * fails on some ranks only may never return (Open MPI's OMPIO) */
    int fd = st == ERASE_OK ? open(temp, O_RDWR) : -1;
    if (st == ERASE_OK && fd < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: rank %d cannot open the checkpoint being written: %s (every rank of a "
                         "run with sharded tables writes its rows into it: the checkpoint directory must be the same "
                         "on every rank)", temp, rank, strerror(errno));
    if (fd >= 0)
        close(fd);
    const char *fail = getenv("ERASE_DEBUG_CKPT_ROWS_FAIL");
    if (st == ERASE_OK && fail && *fail && atoi(fail) == rank)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: ERASE_DEBUG_CKPT_ROWS_FAIL: rank %d does not write its rows", temp, rank);
    int mine = st == ERASE_OK, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: the ranks' agreement before writing the rows failed (MPI)", temp);
    if (st != ERASE_OK || !all) { /* a rank failed: its status is the answer, no rank writes */
        free(sums);
        return st;
    }
    char detail[256];
    erase_h5_enter();
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER), file = -1;
    if (fapl < 0 || dxpl < 0 || H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0 ||
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 ||
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot set up parallel HDF5 access: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK && (file = H5Fopen(temp, H5F_ACC_RDWR, fapl)) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open with MPI-IO to write the sharded rows: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    /* every rank goes through the same tensors in the same order (collective) */
    for (int g = 0; st == ERASE_OK && g < 2; g++)
        for (int i = 0; st == ERASE_OK && i < (g ? no : np); i++) {
            const erase_ckpt_tensor_t *t = g ? &optim[i] : &params[i];
            if (!t->sharding)
                continue;
            char path[ERASE_CKPT_NAME_MAX + 16], sums_path[ERASE_CKPT_NAME_MAX + 32];
            snprintf(path, sizeof path, "/%s/%s", g ? "optim" : "params", t->name);
            rowsum_path(path, sums_path, sizeof sums_path);
            row_sums(t, sums);
            if (write_part_rows(file, dxpl, path, H5T_NATIVE_FLOAT, t->ndim, t->row0, t->held, row_elems(t),
                                t->data) != 0)
                st = ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot write rows [%" PRId64 ", %" PRId64 "): %s",
                                 temp, path, t->row0, t->row0 + t->held, erase_h5_detail(detail, sizeof detail));
            else if (write_part_rows(file, dxpl, sums_path, H5T_NATIVE_UINT64, 1, t->row0, t->held, 1,
                                     sums) != 0)
                st = ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot write rows [%" PRId64 ", %" PRId64 "): %s",
                                 temp, sums_path, t->row0, t->row0 + t->held, erase_h5_detail(detail, sizeof detail));
        }
    if (file >= 0 && st == ERASE_OK && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: flush failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (file >= 0 && H5Fclose(file) < 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (dxpl >= 0)
        H5Pclose(dxpl);
    if (fapl >= 0)
        H5Pclose(fapl);
    erase_h5_leave();
    free(sums);
    if (st == ERASE_OK && rank == 0 && erase_fsync_path(temp, 0) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    return st;
}

/* The gate's verdict on st (st itself without a gate). */
static erase_status_t pass_gate(erase_ckpt_gate_fn gate, void *ctx, erase_status_t st)
{
    return gate ? gate(ctx, st) : st;
}

erase_status_t erase_ckpt_write_part(const char *dir, const erase_ckpt_meta_t *meta, int part,
                                     const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no,
                                     const erase_ckpt_rank_t *ranks, int nranks,
                                     const uint64_t *sums, int keep, erase_ckpt_gate_fn gate, void *ctx,
                                     erase_ckpt_report_t *report)
{
    double t0 = erase_now_s();
    if (report)
        memset(report, 0, sizeof *report);
    erase_status_t st = ERASE_OK;
    if (keep < 1)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: keep %d: must be >= 1", keep);
    else if (part < 0 || part >= meta->pp_size)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: part %d: expected a stage of the %d (0 to %d)", part,
                         meta->pp_size, meta->pp_size - 1);
    if (st == ERASE_OK)
        st = check_contents(params, np, optim, no, nranks);
    if (st == ERASE_OK && mkdir(dir, 0777) != 0 && errno != EEXIST)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the checkpoint directory: %s", dir, strerror(errno));
    char name[96], temp_name[112], path[ERASE_CKPT_PATH_MAX], temp[ERASE_CKPT_PATH_MAX], latest[ERASE_CKPT_PATH_MAX];
    char main_name[64];
    snprintf(main_name, sizeof main_name, "ckpt-%" PRId64 ".h5", meta->step);
    erase_ckpt_stage_path(main_name, part, name, sizeof name);
    snprintf(temp_name, sizeof temp_name, TEMP_NAME, name);
    if (st == ERASE_OK && (join(path, dir, name) || join(temp, dir, temp_name) || join(latest, dir, "latest")))
        st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: checkpoint directory path too long", dir);
    if (st == ERASE_OK)
        st = erase_ckpt_meta_check(path, meta);
    if (st != ERASE_OK)
        return pass_gate(gate, ctx, st);

    st = write_temp(temp, meta, params, np, optim, no, ranks, nranks, sums);
    /* a stage file is published before the gate, the checkpoint's own file
     * (part 0) after it: last, once every part is in place */
    if (st == ERASE_OK && part > 0 && rename(temp, path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    if (st == ERASE_OK && part > 0 && erase_fsync_path(dir, 1) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the checkpoint directory failed: %s", dir, strerror(errno));
    st = pass_gate(gate, ctx, st);
    if (st == ERASE_OK && part == 0 && rename(temp, path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    if (st != ERASE_OK) {
        unlink(temp);
        erase_error_trail(__FILE__, __LINE__);
        return st;
    }
    int removed = 0;
    if (part == 0) {
        if (erase_fsync_path(dir, 1) != 0)
            return ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the checkpoint directory failed: %s", dir,
                               strerror(errno));
        char line[128];
        snprintf(line, sizeof line, "%s\n", name);
        ERASE_CHECK(erase_write_file_atomic(latest, line, strlen(line)));
        removed = prune(dir, meta->step, keep);
    }
    if (report) {
        struct stat sb;
        snprintf(report->path, sizeof report->path, "%s", path);
        report->bytes = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
        report->seconds = erase_now_s() - t0;
        report->mb_per_s = report->seconds > 0 ? (double)report->bytes / report->seconds / 1e6 : 0;
        report->removed = removed;
    }
    return ERASE_OK;
}

erase_status_t erase_ckpt_write_file(const char *path, const erase_ckpt_meta_t *meta,
                                     const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no,
                                     const erase_ckpt_rank_t *ranks, int nranks, int overwrite)
{
    char dir[ERASE_CKPT_PATH_MAX], temp[ERASE_CKPT_PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    int len = slash ? (int)(slash - path) : 0;
    if (slash && len)
        snprintf(dir, sizeof dir, "%.*s", len, path);
    else
        snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
    int n = snprintf(temp, sizeof temp, "%.*s%s.%s.tmp", len, path, slash ? "/" : "", base);
    if (!*base || n < 0 || n >= (int)sizeof temp)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: not a file name, or too long", path);
    ERASE_CHECK(check_contents(params, np, optim, no, nranks));
    ERASE_CHECK(erase_ckpt_meta_check(path, meta));
    if (!overwrite && access(path, F_OK) == 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: exists (not overwritten)", path);
    erase_status_t st = write_temp(temp, meta, params, np, optim, no, ranks, nranks, NULL);
    /* without overwrite, link() publishes only where nothing is (atomically) */
    if (st == ERASE_OK && (overwrite ? rename(temp, path) : link(temp, path)) != 0)
        st = errno == EEXIST ? ERASE_ERROR(ERASE_ERR_INVALID, "%s: exists (not overwritten)", path)
                             : ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    unlink(temp); /* the temporary file on failure; without overwrite, its second name */
    if (st == ERASE_OK && erase_fsync_path(dir, 1) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the directory failed: %s", dir, strerror(errno));
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    return st;
}

/* ---- reading ----------------------------------------------------------------- */

struct erase_ckpt {
    char *path;
    erase_ckpt_meta_t meta;
    char *text[9];                     /* owned strings of meta */
    erase_ckpt_tensor_t *t[2];         /* params, optim */
    int n[2], cap[2];
    struct tensor_info {               /* per tensor of t[g] */
        uint64_t sum;                  /* the whole dataset's fnv1a64 (not row-checksummed) */
        int rows;                      /* row-checksummed: written sharded (/row_fnv1a64/...) */
        char *sharding;                /* its `sharding` attribute (row-checksummed), owned */
    } *info[2];
    erase_ckpt_rank_t *ranks;
    int nranks;
    int attributes_summed;             /* meta_fnv1a64 present (and matching) */
    int flags;                         /* ERASE_CKPT_OPEN_LAZY_* of the main file */
};
typedef struct tensor_info tensor_info_t;

const char *erase_ckpt_path(const erase_ckpt_t *ck) { return ck->path; }
const erase_ckpt_meta_t *erase_ckpt_meta(const erase_ckpt_t *ck) { return &ck->meta; }
int erase_ckpt_count(const erase_ckpt_t *ck, erase_ckpt_group_t g) { return ck->n[g]; }
int erase_ckpt_ranks(const erase_ckpt_t *ck) { return ck->nranks; }
int erase_ckpt_attributes_summed(const erase_ckpt_t *ck) { return ck->attributes_summed; }

const erase_ckpt_tensor_t *erase_ckpt_tensor(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i)
{
    return i >= 0 && i < ck->n[g] ? &ck->t[g][i] : NULL;
}

const erase_ckpt_tensor_t *erase_ckpt_find(const erase_ckpt_t *ck, erase_ckpt_group_t g, const char *name)
{
    for (int i = 0; i < ck->n[g]; i++)
        if (!strcmp(ck->t[g][i].name, name))
            return &ck->t[g][i];
    return NULL;
}

const erase_ckpt_rank_t *erase_ckpt_rank(const erase_ckpt_t *ck, int r)
{
    return r >= 0 && r < ck->nranks ? &ck->ranks[r] : NULL;
}

void erase_ckpt_close(erase_ckpt_t *ck)
{
    if (!ck)
        return;
    for (int g = 0; g < 2; g++) {
        for (int i = 0; i < ck->n[g]; i++) {
            free(ck->t[g][i].data);
            free(ck->info[g][i].sharding);
        }
        free(ck->t[g]);
        free(ck->info[g]);
    }
    for (size_t i = 0; i < sizeof ck->text / sizeof ck->text[0]; i++)
        free(ck->text[i]);
    free(ck->ranks);
    free(ck->path);
    free(ck);
}

/* A string attribute of any length (malloc'ed), or NULL when missing or not
 * a scalar string; the lock is held. */
static char *read_string_attr(hid_t loc, const char *name)
{
    int rc;
    return erase_h5_attr_read_string_alloc(loc, name, &rc);
}

/* A scalar numeric attribute converted to mem_type; 0 or -1. */
static int read_scalar_attr(hid_t loc, const char *name, hid_t mem_type, void *value)
{
    if (H5Aexists(loc, name) <= 0)
        return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    hid_t sp = H5Aget_space(a), t = H5Aget_type(a);
    H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    int rc = sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 && (c == H5T_INTEGER || c == H5T_FLOAT) &&
                     H5Aread(a, mem_type, value) >= 0
                 ? 0
                 : -1;
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    H5Aclose(a);
    return rc;
}

/* The /index text (malloc'ed) or NULL; the lock is held. */
static char *read_index(hid_t file)
{
    if (H5Lexists(file, "/index", H5P_DEFAULT) <= 0)
        return NULL;
    hid_t d = H5Dopen2(file, "/index", H5P_DEFAULT);
    if (d < 0)
        return NULL;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    char *out = NULL;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
        H5Sget_simple_extent_type(sp) == H5S_SCALAR) {
        size_t n = H5Tget_size(t);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, n + 1);
        H5Tset_strpad(mt, H5T_STR_NULLTERM);
        out = calloc(n + 2, 1);
        if (out && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
            erase_h5_remember();
            free(out);
            out = NULL;
        }
        H5Tclose(mt);
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Dclose(d);
    return out;
}

/* Append a tensor (data may be NULL: not loaded); `info`'s sharding
 * becomes the checkpoint's (freed with it) even on failure. */
static erase_status_t add_tensor(erase_ckpt_t *ck, int g, const char *name, int ndim, const int64_t *dims,
                                 float *data, tensor_info_t info)
{
    if (ck->n[g] == ck->cap[g]) {
        int cap = ck->cap[g] ? 2 * ck->cap[g] : 64;
        erase_ckpt_tensor_t *grown = realloc(ck->t[g], (size_t)cap * sizeof *grown);
        if (grown)
            ck->t[g] = grown;
        tensor_info_t *more = realloc(ck->info[g], (size_t)cap * sizeof *more);
        if (more)
            ck->info[g] = more;
        if (!grown || !more) {
            free(info.sharding);
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
        }
        ck->cap[g] = cap;
    }
    ck->info[g][ck->n[g]] = info;
    erase_ckpt_tensor_t *t = &ck->t[g][ck->n[g]++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->dims[0] = dims[0];
    t->dims[1] = ndim == 2 ? dims[1] : 1;
    t->data = data;
    t->sharding = info.sharding;
    return ERASE_OK;
}

/* Parse "[a]" or "[a, b]". */
static int parse_shape(const char *s, int *ndim, int64_t *dims)
{
    long long a, b;
    char end;
    if (sscanf(s, "[%lld, %lld%c", &a, &b, &end) == 3 && end == ']' && a >= 0 && b >= 0) {
        *ndim = 2;
        dims[0] = a;
        dims[1] = b;
        return 0;
    }
    if (sscanf(s, "[%lld%c", &a, &end) == 2 && end == ']' && a >= 0) {
        *ndim = 1;
        dims[0] = a;
        dims[1] = 1;
        return 0;
    }
    return -1;
}

/* Open dataset `path` listed in /index and check its type and shape
 * against the index's into *d (closed by the caller); the element's
 * memory type and size. The lock is held. */
static erase_status_t open_checked(const erase_ckpt_t *ck, hid_t file, const char *path, const char *type,
                                   int ndim, const int64_t *dims, hid_t *d, hid_t *mem_type, size_t *elem)
{
    *d = -1;
    hid_t want_class;
    if (!strcmp(type, "float32")) {
        *mem_type = H5T_NATIVE_FLOAT, want_class = H5T_FLOAT, *elem = 4;
    } else if (!strcmp(type, "int64")) {
        *mem_type = H5T_NATIVE_INT64, want_class = H5T_INTEGER, *elem = 8;
    } else if (!strcmp(type, "uint64")) {
        *mem_type = H5T_NATIVE_UINT64, want_class = H5T_INTEGER, *elem = 8;
    } else {
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: dataset %s has type %s (float32, int64 or uint64 "
                           "expected)", ck->path, path, type);
    }
    if (H5Lexists(file, path, H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s is missing (listed in /index)", ck->path, path);
    }
    hid_t id = H5Dopen2(file, path, H5P_DEFAULT);
    if (id < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot open: %s", ck->path, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    hid_t t = H5Dget_type(id), sp = H5Dget_space(id);
    hsize_t hd[2] = { 0, 0 };
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (rank == ndim)
        H5Sget_simple_extent_dims(sp, hd, NULL);
    char got[32] = "?";
    if (t >= 0)
        erase_h5_type_name(t, got, sizeof got);
    erase_status_t st = ERASE_OK;
    if (t < 0 || H5Tget_class(t) != want_class || H5Tget_size(t) != *elem || strcmp(got, type))
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: type %s, /index says %s", ck->path, path, got, type);
    else if (rank != ndim || (int64_t)hd[0] != dims[0] || (ndim == 2 && (int64_t)hd[1] != dims[1])) {
        char want[64], have[64];
        shape_text(ndim, dims, want, sizeof want);
        int64_t hv[2] = { (int64_t)hd[0], (int64_t)hd[1] };
        if (rank == 1 || rank == 2)
            shape_text(rank, hv, have, sizeof have);
        else
            snprintf(have, sizeof have, "rank %d", rank);
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: shape %s, /index says %s", ck->path, path, have, want);
    }
    size_t bytes = 0;
    if (st == ERASE_OK && !erase_bytes(*elem, dims[0], ndim == 2 ? dims[1] : 1, &bytes)) {
        char want[64];
        shape_text(ndim, dims, want, sizeof want);
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: shape %s of %zu-byte elements is more than "
                         "memory can address", ck->path, path, want, *elem);
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    if (st != ERASE_OK) {
        H5Dclose(id);
        return st;
    }
    *d = id;
    return ERASE_OK;
}

/* Read and verify one dataset listed in /index; the lock is held. *data is
 * malloc'ed (elem-byte elements). */
static erase_status_t read_dataset(erase_ckpt_t *ck, hid_t file, const char *path, const char *type,
                                   int ndim, const int64_t *dims, uint64_t sum, void **data)
{
    *data = NULL;
    hid_t d, mem_type;
    size_t elem;
    ERASE_CHECK(open_checked(ck, file, path, type, ndim, dims, &d, &mem_type, &elem));
    size_t bytes = elem * (size_t)dims[0] * (size_t)(ndim == 2 ? dims[1] : 1); /* checked */
    erase_status_t st = ERASE_OK;
    void *buf = malloc(bytes + 1);
    if (!buf)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory (%zu bytes)", ck->path, path, bytes);
    if (st == ERASE_OK && bytes > 0 && H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot read: %s", ck->path, path,
                         erase_h5_detail(detail, sizeof detail));
    }
    if (st == ERASE_OK) {
        uint64_t h = erase_ckpt_fnv1a64(buf, bytes), attr = 0;
        if (h != sum)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: checksum %016" PRIx64 " does not match the "
                             "stored %016" PRIx64 " (damaged data)", ck->path, path, h, sum);
        else if (read_scalar_attr(d, "fnv1a64", H5T_NATIVE_UINT64, &attr) != 0 || attr != sum)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: attribute fnv1a64 missing or not the checksum "
                             "in /index", ck->path, path);
    }
    H5Dclose(d);
    if (st != ERASE_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    return ERASE_OK;
}

/* Rows per read of a dataset streamed through its checksum. */
#define STREAM_BYTES ((size_t)1 << 20)

/*
 * Rows [row0, row0 + n) of tensor i of group g (float32, in range) into
 * out, read from the open file and verified: a row-checksummed tensor's
 * rows against their /row_fnv1a64 checksums (only those rows are read), a
 * whole-checksummed one by streaming the whole dataset through FNV-1a
 * (STREAM_BYTES at a time; only the rows asked for are kept). The lock is
 * held. Errors: ERASE_ERR_FORMAT naming the file, dataset (and row),
 * ERASE_ERR_NOMEM.
 */
static erase_status_t read_rows(const erase_ckpt_t *ck, hid_t file, int g, int i, int64_t row0, int64_t n,
                                float *out)
{
    const erase_ckpt_tensor_t *t = &ck->t[g][i];
    const tensor_info_t *f = &ck->info[g][i];
    char path[ERASE_CKPT_NAME_MAX + 16], sums_path[ERASE_CKPT_NAME_MAX + 32];
    snprintf(path, sizeof path, "/%s/%s", g ? "optim" : "params", t->name);
    rowsum_path(path, sums_path, sizeof sums_path);
    int64_t cols = row_elems(t);
    size_t row = sizeof(float) * (size_t)cols;
    hid_t d, mem_type;
    size_t elem;
    ERASE_CHECK(open_checked(ck, file, path, "float32", t->ndim, t->dims, &d, &mem_type, &elem));
    erase_status_t st = ERASE_OK;
    const erase_h5_rows_spec_t rows_of = { .name = path, .rank = t->ndim, .cols = cols },
                               sums_of = { .name = sums_path, .rank = 1, .cols = 1 };
    if (f->rows) {
        int64_t one[1] = { t->dims[0] };
        hid_t c = -1;
        uint64_t *sums = malloc(sizeof *sums * (size_t)(n ? n : 1));
        if (!sums)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory", ck->path, sums_path);
        if (st == ERASE_OK)
            st = open_checked(ck, file, sums_path, "uint64", 1, one, &c, &mem_type, &elem);
        if (st == ERASE_OK && n > 0)
            st = erase_h5_rows_read(d, ck->path, &rows_of, H5T_NATIVE_FLOAT, row0, n, out);
        if (st == ERASE_OK && n > 0)
            st = erase_h5_rows_read(c, ck->path, &sums_of, H5T_NATIVE_UINT64, row0, n, sums);
        for (int64_t r = 0; st == ERASE_OK && r < n; r++) {
            uint64_t h = erase_ckpt_fnv1a64(out + r * cols, row);
            if (h != sums[r])
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: row %" PRId64 ": checksum %016" PRIx64 " does "
                                 "not match the stored %016" PRIx64 " (damaged data)", ck->path, path, row0 + r, h,
                                 sums[r]);
        }
        if (c >= 0)
            H5Dclose(c);
        free(sums);
    } else {
        int64_t chunk = (int64_t)(STREAM_BYTES / (row ? row : 1)), rows = t->dims[0];
        chunk = chunk < 1 ? 1 : chunk;
        float *buf = malloc(row * (size_t)chunk);
        uint64_t h = erase_ckpt_fnv1a64("", 0);
        if (!buf)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory", ck->path, path);
        for (int64_t at = 0; st == ERASE_OK && at < rows; at += chunk) {
            int64_t k = rows - at < chunk ? rows - at : chunk;
            if ((st = erase_h5_rows_read(d, ck->path, &rows_of, H5T_NATIVE_FLOAT, at, k, buf)) != ERASE_OK)
                break;
            h = fnv_add(h, buf, row * (size_t)k);
            int64_t a = at > row0 ? at : row0, b = at + k < row0 + n ? at + k : row0 + n;
            if (a < b)
                memcpy(out + (a - row0) * cols, buf + (a - at) * cols, row * (size_t)(b - a));
        }
        if (st == ERASE_OK && h != f->sum)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: checksum %016" PRIx64 " does not match the "
                             "stored %016" PRIx64 " (damaged data)", ck->path, path, h, f->sum);
        free(buf);
    }
    H5Dclose(d);
    return st;
}

/* A row-checksummed (sharded) dataset's `sharding` attribute (malloc'ed;
 * "" when missing), or NULL when out of memory; the lock is held. */
static char *read_sharding(hid_t file, const char *path)
{
    char *text = NULL;
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d >= 0 && H5Aexists(d, "sharding") > 0)
        text = read_string_attr(d, "sharding");
    if (d >= 0)
        H5Dclose(d);
    return text ? text : strdup("");
}

/* One /index line: path type shape sum. */
static erase_status_t load_line(erase_ckpt_t *ck, hid_t file, char *line, int64_t *cursor, int *have_cursor,
                                int64_t **rank_cursors, int64_t *rank_cursor_rows)
{
    char path[ERASE_CKPT_NAME_MAX + 16], type[32], shape[64];
    unsigned long long sum;
    char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    char *sp3 = sp2 ? strrchr(sp2 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || !sp3 || (size_t)(sp1 - line) >= sizeof path || (size_t)(sp2 - sp1 - 1) >= sizeof type ||
        (size_t)(sp3 - sp2 - 1) >= sizeof shape)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: bad line '%s'", ck->path, line);
    snprintf(path, sizeof path, "%.*s", (int)(sp1 - line), line);
    snprintf(type, sizeof type, "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
    snprintf(shape, sizeof shape, "%.*s", (int)(sp3 - sp2 - 1), sp2 + 1);
    char *end;
    errno = 0;
    int rows = !strcmp(sp3 + 1, "rows"); /* written sharded: a checksum per row */
    sum = rows ? 0 : strtoull(sp3 + 1, &end, 16);
    int ndim;
    int64_t dims[2];
    if ((!rows && (errno || *end || end == sp3 + 1)) || parse_shape(shape, &ndim, dims) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: bad line '%s'", ck->path, line);
    int tensor = !strncmp(path, "/params/", 8) || !strncmp(path, "/optim/", 7);
    if (tensor && strcmp(type, "float32"))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: type %s, float32 expected", ck->path, path, type);
    if (rows && !tensor)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: dataset %s: only /params and /optim tensors have "
                           "checksums per row", ck->path, path);
    if (tensor) {
        int g = path[1] == 'p' ? ERASE_CKPT_PARAMS : ERASE_CKPT_OPTIM;
        tensor_info_t info = { .sum = (uint64_t)sum, .rows = rows };
        if (rows && !(info.sharding = read_sharding(file, path)))
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
        erase_status_t st = add_tensor(ck, g, path + (g == ERASE_CKPT_PARAMS ? 8 : 7), ndim, dims, NULL, info);
        int i = ck->n[g] - 1;
        hid_t d, mem_type, c;
        size_t elem, bytes = sizeof(float) * (size_t)dims[0] * (size_t)(ndim == 2 ? dims[1] : 1);
        int64_t one[1] = { dims[0] };
        char sums_path[ERASE_CKPT_NAME_MAX + 32];
        rowsum_path(path, sums_path, sizeof sums_path);
        if (st != ERASE_OK || (ck->flags & ERASE_CKPT_OPEN_LAZY_ALL))
            return st; /* checked when read (erase_ckpt_load) */
        if (rows && (ck->flags & ERASE_CKPT_OPEN_LAZY_ROWS)) { /* present, with their shapes */
            ERASE_CHECK(open_checked(ck, file, path, type, ndim, dims, &d, &mem_type, &elem));
            H5Dclose(d);
            ERASE_CHECK(open_checked(ck, file, sums_path, "uint64", 1, one, &c, &mem_type, &elem));
            H5Dclose(c);
            return ERASE_OK;
        }
        if (!rows)
            return read_dataset(ck, file, path, type, ndim, dims, (uint64_t)sum, (void **)&ck->t[g][i].data);
        ERASE_CHECK(open_checked(ck, file, path, type, ndim, dims, &d, &mem_type, &elem)); /* size checked */
        H5Dclose(d);
        float *data = malloc(bytes + 1);
        if (!data)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory (%zu bytes)", ck->path, path, bytes);
        st = read_rows(ck, file, g, i, 0, dims[0], data);
        if (st != ERASE_OK)
            free(data);
        else
            ck->t[g][i].data = data;
        return st;
    }
    void *data;
    ERASE_CHECK(read_dataset(ck, file, path, type, ndim, dims, (uint64_t)sum, &data));
    erase_status_t st = ERASE_OK;
    if (!strncmp(path, "/rng/", 5)) {
        char *e;
        long r = strtol(path + 5, &e, 10);
        if (*e || e == path + 5 || r < 0 || r >= ERASE_CKPT_RANKS_MAX || strcmp(type, "uint64") || ndim != 1 || dims[0] != 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected /rng/<rank> uint64 [2]", ck->path, path);
        if (st == ERASE_OK && r >= ck->nranks) {
            erase_ckpt_rank_t *grown = realloc(ck->ranks, (size_t)(r + 1) * sizeof *grown);
            if (!grown)
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
            else {
                memset(grown + ck->nranks, 0, (size_t)(r + 1 - ck->nranks) * sizeof *grown);
                ck->ranks = grown;
                ck->nranks = (int)r + 1;
            }
        }
        if (st == ERASE_OK)
            memcpy(ck->ranks[r].rng, data, 2 * sizeof(uint64_t));
    } else if (!strcmp(path, "/data/cursor")) {
        if (strcmp(type, "int64") || ndim != 1 || dims[0] != 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected int64 [2]", ck->path, path);
        else {
            memcpy(cursor, data, 2 * sizeof(int64_t));
            *have_cursor = 1;
        }
    } else if (!strcmp(path, "/data/rank_cursors")) {
        if (strcmp(type, "int64") || ndim != 2 || dims[1] != 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected int64 [ranks, 2]", ck->path, path);
        else {
            free(*rank_cursors);
            *rank_cursors = data;
            *rank_cursor_rows = dims[0];
            return ERASE_OK;
        }
    } /* other datasets (later versions) are verified and ignored */
    free(data);
    return st;
}

/* /meta's attributes into ck->meta; the lock is held. */
static erase_status_t read_meta(erase_ckpt_t *ck, hid_t file)
{
    if (H5Lexists(file, "/meta", H5P_DEFAULT) <= 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: group /meta is missing", ck->path);
    hid_t g = H5Gopen2(file, "/meta", H5P_DEFAULT);
    if (g < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: group /meta: cannot open", ck->path);
    static const char *const ints[] = { "step", "samples_seen", "epoch", "global_batch", "world_size", "dp_size",
                                        "pp_size" };
    int64_t v[7];
    static const char *const strs[] = { "pp_layout", "schedule", "dense_optimizer", "embedding_optimizer",
                                        "model", "options", "version", "created" };
    erase_status_t st = ERASE_OK;
    for (int i = 0; st == ERASE_OK && i < 7; i++)
        if (read_scalar_attr(g, ints[i], H5T_NATIVE_INT64, &v[i]) != 0)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute %s is missing or not an integer", ck->path, ints[i]);
    for (int i = 0; st == ERASE_OK && i < 8; i++)
        if (!(ck->text[i] = read_string_attr(g, strs[i])))
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute %s is missing or not a string", ck->path, strs[i]);
    if (st == ERASE_OK && read_scalar_attr(g, "seed", H5T_NATIVE_UINT64, &ck->meta.seed) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute seed is missing", ck->path);
    /* optional: only a run with sharded tables writes it */
    if (st == ERASE_OK && H5Aexists(g, "embeddings") > 0 && !(ck->text[8] = read_string_attr(g, "embeddings")))
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute embeddings is not a string", ck->path);
    H5Gclose(g);
    for (int i = 4; st == ERASE_OK && i < 7; i++) { /* before they become ints */
        char attr[32];
        snprintf(attr, sizeof attr, "/meta %s", ints[i]);
        st = int_in_range(ck->path, attr, v[i], 1, ERASE_CKPT_RANKS_MAX);
    }
    if (st != ERASE_OK)
        return st;
    erase_ckpt_meta_t *m = &ck->meta;
    m->step = v[0], m->samples_seen = v[1], m->epoch = v[2], m->global_batch = v[3];
    m->world_size = (int)v[4], m->dp_size = (int)v[5], m->pp_size = (int)v[6];
    m->pp_layout = ck->text[0], m->schedule = ck->text[1], m->dense_optimizer = ck->text[2];
    m->embedding_optimizer = ck->text[3], m->model = ck->text[4], m->options = ck->text[5];
    m->version = ck->text[6], m->created = ck->text[7], m->embeddings = ck->text[8];
    if (H5Lexists(file, "/optim", H5P_DEFAULT) <= 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: group /optim is missing", ck->path);
    hid_t o = H5Gopen2(file, "/optim", H5P_DEFAULT);
    if (o < 0 || read_scalar_attr(o, "step", H5T_NATIVE_INT64, &m->clock_step) != 0 ||
        read_scalar_attr(o, "lr", H5T_NATIVE_FLOAT, &m->clock_lr) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /optim: the clock attributes step and lr are missing", ck->path);
    if (o >= 0)
        H5Gclose(o);
    return st;
}

/* Everything of an open file; the lock is held. */
static erase_status_t load_file(erase_ckpt_t *ck, hid_t file)
{
    char format[64];
    int rc = erase_h5_attr_read_string(file, "format", format, sizeof format);
    if (rc == 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no format attribute: not an erase checkpoint, or not "
                           "completely written", ck->path);
    if (rc != 0 || strcmp(format, ERASE_CKPT_FORMAT))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: format '%s', expected '%s'", ck->path, format, ERASE_CKPT_FORMAT);
    char *index = read_index(file);
    if (!index) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /index is missing or unreadable%s%s", ck->path,
                           erase_h5_detail(detail, sizeof detail)[0] ? ": " : "", detail);
    }
    uint64_t want = 0;
    erase_status_t st = ERASE_OK;
    if (read_scalar_attr(file, "index_fnv1a64", H5T_NATIVE_UINT64, &want) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute index_fnv1a64 is missing", ck->path);
    else if (erase_ckpt_fnv1a64(index, strlen(index)) != want)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /index: checksum does not match (damaged)", ck->path);
    int64_t cursor[2] = { 0, 0 }, *rank_cursors = NULL, rows = 0;
    int have_cursor = 0;
    for (char *line = index, *next; st == ERASE_OK && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (*line)
            st = load_line(ck, file, line, cursor, &have_cursor, &rank_cursors, &rows);
    }
    free(index);
    if (st == ERASE_OK)
        st = read_meta(ck, file);
    if (st == ERASE_OK && !have_cursor)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /data/cursor is missing", ck->path);
    if (st == ERASE_OK && rank_cursors && rows != ck->nranks)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /data/rank_cursors has %" PRId64 " rows, /rng %d ranks", ck->path,
                         rows, ck->nranks);
    if (st == ERASE_OK && !ck->n[ERASE_CKPT_PARAMS])
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no parameters under /params", ck->path);
    for (int r = 0; st == ERASE_OK && rank_cursors && r < ck->nranks; r++) {
        ck->ranks[r].epoch = rank_cursors[2 * r];
        ck->ranks[r].samples = rank_cursors[2 * r + 1];
    }
    free(rank_cursors);
    /* the ranges first, so that a value out of range is named; then whether
     * the attributes are the ones written */
    ck->meta.epoch_samples = cursor[1];
    if (st == ERASE_OK)
        st = erase_ckpt_meta_check(ck->path, &ck->meta);
    if (st == ERASE_OK && cursor[0] != ck->meta.epoch)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /data/cursor epoch %" PRId64 ", /meta epoch %" PRId64, ck->path,
                         cursor[0], ck->meta.epoch);
    if (st == ERASE_OK && ck->nranks != ck->meta.world_size)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /rng holds %d ranks, attribute /meta world_size = %d", ck->path,
                         ck->nranks, ck->meta.world_size);
    uint64_t meta_sum = 0;
    /* without meta_fnv1a64 (an erase before it): range-checked only, and
     * said so (erase_ckpt_attributes_summed) */
    ck->attributes_summed = st == ERASE_OK && H5Aexists(file, "meta_fnv1a64") > 0;
    if (st == ERASE_OK && ck->attributes_summed &&
        read_scalar_attr(file, "meta_fnv1a64", H5T_NATIVE_UINT64, &meta_sum) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute meta_fnv1a64 cannot be read (damaged)", ck->path);
    if (st == ERASE_OK && ck->attributes_summed && erase_ckpt_meta_fnv1a64(&ck->meta) != meta_sum)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the attributes of /meta and /optim: checksum %016" PRIx64 " does not "
                         "match the stored meta_fnv1a64 %016" PRIx64 " (damaged)", ck->path,
                         erase_ckpt_meta_fnv1a64(&ck->meta), meta_sum);
    return st;
}

erase_status_t erase_ckpt_open_path(const char *path, erase_ckpt_skip_fn skipped, void *ctx, erase_ckpt_t **out)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ERASE_CHECK(erase_ckpt_open(path, out));
        return ERASE_OK;
    }
    ERASE_CHECK(erase_ckpt_open_newest(path, skipped, ctx, out));
    if (!*out)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no checkpoint (ckpt-<step>.h5) in this directory", path);
    return ERASE_OK;
}

/* Open one file: the checkpoint's own or a stage file. */
static erase_status_t open_file(const char *path, int flags, erase_ckpt_t **out);

/* A pipeline checkpoint (pp_size > 1): every stage file <path>.stage<s>
 * opens (validated completely) and is of the same step and layout. */
static erase_status_t check_stage_files(const erase_ckpt_t *ck)
{
    const erase_ckpt_meta_t *m = &ck->meta;
    for (int s = 1; s < m->pp_size; s++) {
        char path[ERASE_CKPT_PATH_MAX];
        if (erase_ckpt_stage_path(ck->path, s, path, sizeof path) != 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: path too long for its stage files", ck->path);
        erase_ckpt_t *part;
        if (open_file(path, 0, &part) != ERASE_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", erase_error_reason());
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: stage %d of %d: %s", ck->path, s, m->pp_size, why);
        }
        const erase_ckpt_meta_t *q = &part->meta;
        erase_status_t st = ERASE_OK;
        if (q->step != m->step || q->pp_size != m->pp_size || strcmp(nz(q->pp_layout), nz(m->pp_layout)))
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: stage %d of %d: %s is of step %lld, %d stages (%s), expected "
                             "step %lld, %d stages (%s)", ck->path, s, m->pp_size, path, (long long)q->step,
                             q->pp_size, nz(q->pp_layout), (long long)m->step, m->pp_size, nz(m->pp_layout));
        erase_ckpt_close(part);
        ERASE_CHECK(st);
    }
    return ERASE_OK;
}

erase_status_t erase_ckpt_open(const char *path, erase_ckpt_t **out)
{
    return erase_ckpt_open_flags(path, 0, out);
}

erase_status_t erase_ckpt_open_flags(const char *path, int flags, erase_ckpt_t **out)
{
    ERASE_CHECK(open_file(path, flags, out));
    const char *base = strrchr(path, '/');
    int stage_file = stage_name_step(base ? base + 1 : path) >= 0; /* opened alone */
    erase_status_t st = (*out)->meta.pp_size > 1 && !stage_file ? check_stage_files(*out) : ERASE_OK;
    if (st != ERASE_OK) {
        erase_ckpt_close(*out);
        *out = NULL;
    }
    return st;
}

erase_status_t erase_ckpt_open_stage(const char *path, int stage, erase_ckpt_t **out)
{
    *out = NULL;
    char part[ERASE_CKPT_PATH_MAX];
    if (stage < 0 || erase_ckpt_stage_path(path, stage, part, sizeof part) != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: stage %d: not a stage, or the path is too long", path, stage);
    return open_file(part, 0, out);
}

static erase_status_t open_file(const char *path, int flags, erase_ckpt_t **out)
{
    *out = NULL;
    if (access(path, R_OK) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    erase_ckpt_t *ck = calloc(1, sizeof *ck);
    if (!ck || !(ck->path = strdup(path))) {
        free(ck);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    ck->flags = flags;
    erase_status_t st;
    erase_h5_enter();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: cannot open as HDF5 (truncated or not a checkpoint): %s", path,
                         erase_h5_detail(detail, sizeof detail));
    } else {
        st = load_file(ck, file);
        H5Fclose(file);
    }
    erase_h5_leave();
    if (st != ERASE_OK) {
        erase_ckpt_close(ck);
        return st;
    }
    *out = ck;
    return ERASE_OK;
}

erase_status_t erase_ckpt_sum_squares(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i, double *out)
{
    const erase_ckpt_tensor_t *t = &ck->t[g][i];
    int64_t cols = row_elems(t), rows = t->dims[0];
    double ss = 0;
    if (t->data) {
        int64_t k = rows * cols;
        for (int64_t j = 0; j < k; j++)
            ss += (double)t->data[j] * (double)t->data[j];
        *out = ss;
        return ERASE_OK;
    }
    int64_t chunk = (int64_t)(STREAM_BYTES / (sizeof(float) * (size_t)(cols ? cols : 1)));
    chunk = chunk < 1 ? 1 : chunk;
    float *buf = malloc(sizeof(float) * (size_t)cols * (size_t)chunk);
    if (!buf)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory to read %s", ck->path, t->name);
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    hid_t file = H5Fopen(ck->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: cannot open as HDF5 to read %s: %s", ck->path, t->name,
                         erase_h5_detail(detail, sizeof detail));
    }
    for (int64_t at = 0; st == ERASE_OK && at < rows; at += chunk) {
        int64_t k = rows - at < chunk ? rows - at : chunk;
        if ((st = read_rows(ck, file, g, i, at, k, buf)) != ERASE_OK)
            break;
        for (int64_t j = 0; j < k * cols; j++) /* in order: the sum of a loaded tensor's, bitwise */
            ss += (double)buf[j] * (double)buf[j];
    }
    if (file >= 0)
        H5Fclose(file);
    erase_h5_leave();
    free(buf);
    *out = ss;
    return st;
}

erase_status_t erase_ckpt_load(const erase_ckpt_t *ck, erase_ckpt_group_t g, erase_ckpt_tensor_t *want,
                               int n, const char *what)
{
    enum { LISTED = 10 };
    const char *group = g == ERASE_CKPT_PARAMS ? "params" : "optim";
    char *msg = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&msg, &len);
    if (!m)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
    int diffs = 0;
    for (int i = 0; i < n; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, g, want[i].name);
        char a[64] = "missing", b[64];
        shape_text(want[i].ndim, want[i].dims, b, sizeof b);
        if (t)
            shape_text(t->ndim, t->dims, a, sizeof a);
        if ((!t || strcmp(a, b)) && diffs++ < LISTED)
            fprintf(m, "%s%s/%s %s -> %s", diffs > 1 ? "; " : "", group, want[i].name, a, b);
    }
    for (int i = 0; i < ck->n[g]; i++) {
        int found = 0;
        for (int j = 0; !found && j < n; j++)
            found = !strcmp(ck->t[g][i].name, want[j].name);
        char a[64];
        shape_text(ck->t[g][i].ndim, ck->t[g][i].dims, a, sizeof a);
        if (!found && diffs++ < LISTED)
            fprintf(m, "%s%s/%s %s -> missing", diffs > 1 ? "; " : "", group, ck->t[g][i].name, a);
    }
    if (diffs > LISTED)
        fprintf(m, "; and %d more", diffs - LISTED);
    fclose(m);
    if (diffs) {
        erase_status_t st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: %s differs from the checkpoint's in %d tensor%s "
                                        "(checkpoint -> this run): %s", ck->path, what, diffs,
                                        diffs == 1 ? "" : "s", msg);
        free(msg);
        return st;
    }
    free(msg);
    for (int i = 0; i < n; i++) { /* the rows asked for: all, or a sharded tensor's */
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, g, want[i].name);
        int64_t row0 = want[i].sharding ? want[i].row0 : 0, rows = want[i].sharding ? want[i].held : t->dims[0];
        if (row0 < 0 || rows < 0 || row0 > t->dims[0] - rows)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: %s/%s: rows [%" PRId64 ", %" PRId64 " + %" PRId64 ") asked "
                               "of %" PRId64, ck->path, group, want[i].name, row0, row0, rows, t->dims[0]);
    }
    hid_t file = -1; /* opened for the first tensor not loaded */
    erase_status_t st = ERASE_OK;
    for (int i = 0; st == ERASE_OK && i < n; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, g, want[i].name);
        int64_t row0 = want[i].sharding ? want[i].row0 : 0, rows = want[i].sharding ? want[i].held : t->dims[0];
        int64_t cols = row_elems(t);
        if (t->data) {
            memcpy(want[i].data, t->data + row0 * cols, sizeof(float) * (size_t)(rows * cols));
            continue;
        }
        if (file < 0) {
            erase_h5_enter();
            if ((file = H5Fopen(ck->path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
                char detail[256];
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: cannot open as HDF5 to read %s/%s: %s", ck->path, group,
                                 t->name, erase_h5_detail(detail, sizeof detail));
                erase_h5_leave();
                break;
            }
        }
        st = read_rows(ck, file, g, (int)(t - ck->t[g]), row0, rows, want[i].data);
    }
    if (file >= 0) {
        H5Fclose(file);
        erase_h5_leave();
    }
    return st;
}

#include "io/cls_shard_write.h"

#include "config.h"
#include "io/ctr_dataset_write.h"
#include "io/ctr_index.h"
#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char name[32];        /* part-00000.h5 */
    char path[4096], temp[4100];
    hid_t file, d[2];     /* /features, /label */
    int64_t rows;
    int64_t counts[ERASE_CLS_MAX_CLASSES];
    int finished, published;
} shard_t;

struct erase_cls_dataset_writer {
    char *dir, *sources;
    int64_t features, shard_rows, rows;
    int classes;
    erase_cls_write_options_t o;
    int64_t counts[ERASE_CLS_MAX_CLASSES];
    shard_t **shards;
    const char **names;   /* [count] the shards' names, for the index */
    int64_t *rows_of;     /* [count] their rows, for the index */
    int count, cap;
    int committed, made_dir;
};

static const char description[] =
    "erase classification shard (format erase-cls-1). /features float32 [rows, features]: the model's "
    "input as is (MNIST: pixel / 255 in [0, 1], 28 x 28 row-major). /label uint8 [rows]: the class, "
    "0..classes-1. Attributes: rows, features, classes, class_counts [classes], source_files, converter.";

erase_cls_write_options_t erase_cls_write_options_default(void)
{
    erase_cls_write_options_t o = { .chunk_rows = 1024, .compress = 1, .converter = NULL };
    return o;
}

static void make_specs(erase_h5_rows_spec_t specs[2], int64_t features)
{
    const erase_h5_rows_spec_t f = { "/features", 2, features, H5T_FLOAT, H5T_SGN_ERROR, 4, "float32" };
    const erase_h5_rows_spec_t l = { "/label", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 1, "uint8" };
    specs[0] = f;
    specs[1] = l;
}

/* Close (and, if unpublished, delete) one shard's files. */
static void shard_free(shard_t *s, int delete_published)
{
    if (!s)
        return;
    if (s->file >= 0) {
        erase_h5_enter();
        for (int i = 0; i < 2; i++)
            if (s->d[i] >= 0)
                H5Dclose(s->d[i]);
        H5Fclose(s->file);
        erase_h5_leave();
    }
    if (!s->published)
        unlink(s->temp);
    else if (delete_published)
        unlink(s->path);
    free(s);
}

/* Begin shard number w->count as "<name>.tmp". */
static erase_status_t begin_shard(erase_cls_dataset_writer_t *w)
{
    if (w->count == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        shard_t **p = realloc(w->shards, sizeof *p * (size_t)cap);
        if (p)
            w->shards = p;
        const char **n = realloc(w->names, sizeof *n * (size_t)cap);
        if (n)
            w->names = n;
        int64_t *r = realloc(w->rows_of, sizeof *r * (size_t)cap);
        if (r)
            w->rows_of = r;
        if (!p || !n || !r)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
        w->cap = cap;
    }
    shard_t *s = calloc(1, sizeof *s);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->dir);
    s->file = s->d[0] = s->d[1] = -1;
    snprintf(s->name, sizeof s->name, "part-%05d.h5", w->count);
    snprintf(s->path, sizeof s->path, "%s/%s", w->dir, s->name);
    snprintf(s->temp, sizeof s->temp, "%s.tmp", s->path);
    w->names[w->count] = s->name;
    w->shards[w->count++] = s;
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, w->features);
    hid_t file_types[2] = { H5T_IEEE_F32LE, H5T_STD_U8LE };
    erase_h5_rows_layout_t layout = { w->o.chunk_rows, w->o.compress, w->o.compress };
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    s->file = H5Fcreate(s->temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (s->file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", s->temp, erase_h5_detail(detail, sizeof detail));
    }
    for (int i = 0; i < 2 && st == ERASE_OK; i++)
        st = erase_h5_rows_create(s->file, s->temp, &specs[i], file_types[i], &layout, &s->d[i]);
    erase_h5_leave();
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Attributes, format last; the lock is held. Returns the failing name or NULL. */
static const char *write_attributes(const erase_cls_dataset_writer_t *w, const shard_t *s)
{
    char converter[128];
    snprintf(converter, sizeof converter, "%s", w->o.converter ? w->o.converter : "erase " PACKAGE_VERSION);
    hid_t f = s->file;
    if (erase_h5_attr_write_int64(f, "rows", s->rows)) return "rows";
    if (erase_h5_attr_write_int64(f, "features", w->features)) return "features";
    if (erase_h5_attr_write_int64(f, "classes", w->classes)) return "classes";
    if (erase_h5_attr_write_array(f, "class_counts", H5T_NATIVE_INT64, s->counts, (size_t)w->classes))
        return "class_counts";
    if (erase_h5_attr_write_string(f, "source_files", w->sources ? w->sources : "")) return "source_files";
    if (erase_h5_attr_write_string(f, "converter", converter)) return "converter";
    if (erase_h5_attr_write_string(f, "description", description)) return "description";
    if (erase_h5_attr_write_string(f, "format", ERASE_CLS_FORMAT)) return "format";
    return NULL;
}

/* Attributes, close, fsync: the shard is complete under its temporary name. */
static erase_status_t finish_shard(erase_cls_dataset_writer_t *w, shard_t *s)
{
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, w->features);
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_finish(&s->file, s->d, specs, 2, s->temp, write_attributes(w, s));
    erase_h5_leave();
    ERASE_CHECK(st);
    s->finished = 1;
    return ERASE_OK;
}

erase_status_t erase_cls_dataset_writer_open(const char *dir, int64_t features, int classes, int64_t shard_rows,
                                             const erase_cls_write_options_t *options, const char *sources,
                                             int force, erase_cls_dataset_writer_t **out)
{
    *out = NULL;
    erase_cls_write_options_t o = options ? *options : erase_cls_write_options_default();
    if (!dir || !dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory given");
    if (features < 1 || classes < 1 || classes > ERASE_CLS_MAX_CLASSES || shard_rows < 1 || o.chunk_rows < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "%s: %" PRId64 " features, %d classes, %" PRId64 " rows per shard, %" PRId64
                           " rows per chunk: expected >= 1, 1..%d, >= 1, >= 1",
                           dir, features, classes, shard_rows, o.chunk_rows, ERASE_CLS_MAX_CLASSES);
    if (o.compress && (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0 || H5Zfilter_avail(H5Z_FILTER_SHUFFLE) <= 0))
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: this HDF5 library has no deflate or shuffle filter; "
                           "write uncompressed shards", dir);
    int made_dir;
    ERASE_CHECK(erase_dataset_dir_prepare(dir, force, &made_dir));
    erase_cls_dataset_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir)) || (sources && !(w->sources = strdup(sources)))) {
        if (w)
            free(w->dir);
        free(w);
        if (made_dir)
            rmdir(dir);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    }
    w->made_dir = made_dir;
    w->features = features;
    w->classes = classes;
    w->shard_rows = shard_rows;
    w->o = o;
    if (w->o.chunk_rows > shard_rows) /* no chunk larger than a shard */
        w->o.chunk_rows = shard_rows;
    *out = w;
    return ERASE_OK;
}

erase_status_t erase_cls_dataset_writer_append(erase_cls_dataset_writer_t *w, int64_t n, const float *features,
                                               const uint8_t *label)
{
    if (w->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after commit", w->dir);
    for (int64_t i = 0; i < n; i++)
        if (label[i] >= w->classes)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: row %" PRId64 " has label %u, expected 0..%d", w->dir,
                               w->rows + i, (unsigned)label[i], w->classes - 1);
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, w->features);
    while (n > 0) {
        shard_t *s = w->count ? w->shards[w->count - 1] : NULL;
        if (!s || s->rows == w->shard_rows) {
            if (s)
                ERASE_CHECK(finish_shard(w, s));
            ERASE_CHECK(begin_shard(w));
            s = w->shards[w->count - 1];
        }
        int64_t k = w->shard_rows - s->rows < n ? w->shard_rows - s->rows : n;
        erase_h5_enter();
        erase_status_t st = erase_h5_rows_append(s->d[0], s->temp, &specs[0], H5T_NATIVE_FLOAT, s->rows, k, features);
        if (st == ERASE_OK)
            st = erase_h5_rows_append(s->d[1], s->temp, &specs[1], H5T_NATIVE_UINT8, s->rows, k, label);
        erase_h5_leave();
        ERASE_CHECK(st);
        for (int64_t i = 0; i < k; i++) {
            s->counts[label[i]]++;
            w->counts[label[i]]++;
        }
        s->rows += k;
        w->rows += k;
        n -= k;
        features += k * w->features;
        label += k;
    }
    return ERASE_OK;
}

int erase_cls_dataset_writer_shards(const erase_cls_dataset_writer_t *w) { return w->count; }
int64_t erase_cls_dataset_writer_rows(const erase_cls_dataset_writer_t *w) { return w->rows; }

int64_t erase_cls_dataset_writer_class_rows(const erase_cls_dataset_writer_t *w, int c)
{
    return c >= 0 && c < w->classes ? w->counts[c] : 0;
}

erase_status_t erase_cls_dataset_writer_commit(erase_cls_dataset_writer_t *w)
{
    if (w->committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: committed twice", w->dir);
    if (w->rows == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no rows to write", w->dir);
    ERASE_CHECK(finish_shard(w, w->shards[w->count - 1]));
    for (int i = 0; i < w->count; i++) {
        shard_t *s = w->shards[i];
        ERASE_CHECK(erase_h5_rows_publish(s->temp, s->path, &s->published));
        w->rows_of[i] = s->rows;
    }
    ERASE_CHECK(erase_ctr_index_write(w->dir, w->names, w->rows_of, w->count));
    w->committed = 1;
    return ERASE_OK;
}

void erase_cls_dataset_writer_free(erase_cls_dataset_writer_t *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->count; i++)
        shard_free(w->shards[i], !w->committed);
    if (!w->committed && w->made_dir)
        rmdir(w->dir); /* the empty directory a failed conversion would leave */
    free(w->shards);
    free(w->names);
    free(w->rows_of);
    free(w->sources);
    free(w->dir);
    free(w);
}

#include "io/cls_shard_write.h"

#include "config.h"
#include "io/h5_rows.h"
#include "io/h5_shards.h"
#include "io/h5_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    erase_h5_shard_t h;   /* /features, /label */
    int64_t counts[ERASE_CLS_MAX_CLASSES];
} shard_t;

struct erase_cls_dataset_writer {
    erase_h5_shards_t set;
    char *sources;
    int64_t features, shard_rows, rows;
    int classes;
    erase_cls_write_options_t o;
    int64_t counts[ERASE_CLS_MAX_CLASSES];
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

static void shard_free(erase_h5_shard_t *h)
{
    free(h);
}

/* Begin the next shard. */
static erase_status_t begin_shard(erase_cls_dataset_writer_t *w)
{
    shard_t *s = calloc(1, sizeof *s);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->set.dir);
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, w->features);
    const hid_t file_types[2] = { H5T_IEEE_F32LE, H5T_STD_U8LE };
    erase_h5_rows_layout_t layout = { w->o.chunk_rows, w->o.compress, w->o.compress };
    return erase_h5_shards_begin(&w->set, &s->h, specs, file_types, 2, &layout);
}

/* Attributes, format last; the lock is held. Returns the failing name or NULL. */
static const char *write_attributes(const erase_cls_dataset_writer_t *w, const shard_t *s)
{
    char converter[128];
    snprintf(converter, sizeof converter, "%s", w->o.converter ? w->o.converter : "erase " PACKAGE_VERSION);
    hid_t f = s->h.file;
    if (erase_h5_attr_write_int64(f, "rows", s->h.rows)) return "rows";
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
    erase_status_t st = erase_h5_rows_finish(&s->h.file, s->h.d, specs, 2, s->h.temp, write_attributes(w, s));
    erase_h5_leave();
    return st;
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
    erase_cls_dataset_writer_t *w = calloc(1, sizeof *w);
    if (!w || (sources && !(w->sources = strdup(sources)))) {
        free(w);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    }
    erase_status_t st = erase_h5_shards_init(&w->set, dir, force, o.compress, shard_free);
    if (st != ERASE_OK) {
        free(w->sources);
        free(w);
        return st;
    }
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
    if (w->set.committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after commit", w->set.dir);
    for (int64_t i = 0; i < n; i++)
        if (label[i] >= w->classes)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: row %" PRId64 " has label %u, expected 0..%d", w->set.dir,
                               w->rows + i, (unsigned)label[i], w->classes - 1);
    erase_h5_rows_spec_t specs[2];
    make_specs(specs, w->features);
    while (n > 0) {
        shard_t *s = w->set.count ? (shard_t *)w->set.shards[w->set.count - 1] : NULL;
        if (!s || s->h.rows == w->shard_rows) {
            if (s)
                ERASE_CHECK(finish_shard(w, s));
            ERASE_CHECK(begin_shard(w));
            s = (shard_t *)w->set.shards[w->set.count - 1];
        }
        int64_t k = w->shard_rows - s->h.rows < n ? w->shard_rows - s->h.rows : n;
        erase_h5_enter();
        erase_status_t st =
            erase_h5_rows_append(s->h.d[0], s->h.temp, &specs[0], H5T_NATIVE_FLOAT, s->h.rows, k, features);
        if (st == ERASE_OK)
            st = erase_h5_rows_append(s->h.d[1], s->h.temp, &specs[1], H5T_NATIVE_UINT8, s->h.rows, k, label);
        erase_h5_leave();
        ERASE_CHECK(st);
        for (int64_t i = 0; i < k; i++) {
            s->counts[label[i]]++;
            w->counts[label[i]]++;
        }
        s->h.rows += k;
        w->rows += k;
        n -= k;
        features += k * w->features;
        label += k;
    }
    return ERASE_OK;
}

int erase_cls_dataset_writer_shards(const erase_cls_dataset_writer_t *w) { return w->set.count; }
int64_t erase_cls_dataset_writer_rows(const erase_cls_dataset_writer_t *w) { return w->rows; }

int64_t erase_cls_dataset_writer_class_rows(const erase_cls_dataset_writer_t *w, int c)
{
    return c >= 0 && c < w->classes ? w->counts[c] : 0;
}

erase_status_t erase_cls_dataset_writer_commit(erase_cls_dataset_writer_t *w)
{
    if (w->set.committed)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: committed twice", w->set.dir);
    if (w->rows == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no rows to write", w->set.dir);
    ERASE_CHECK(finish_shard(w, (shard_t *)w->set.shards[w->set.count - 1]));
    return erase_h5_shards_commit(&w->set);
}

void erase_cls_dataset_writer_free(erase_cls_dataset_writer_t *w)
{
    if (!w)
        return;
    erase_h5_shards_free(&w->set);
    free(w->sources);
    free(w);
}

#include "io/ctr_shard_write.h"

#include "config.h"
#include "io/ctr_shard_internal.h"
#include "lib/core/checked.h"
#include "io/h5_util.h"
#include "lib/core/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct erase_ctr_writer {
    char *path, *temp;
    erase_ctr_write_options_t o;
    hid_t file, d[CTR_DATASETS]; /* the datasets of its version, the others -1 */
    int version;                 /* 1 until a row has more than one id in a feature (or o.multi_hot) */
    int64_t rows, clicks, ids;
    uint32_t max_hotness[ERASE_CTR_SHARD_FIELDS];
    int finished, published;
};

static const char description[] =
    "erase CTR shard (format erase-ctr-1). /label uint8 [rows]: click 0/1. "
    "/dense float32 [rows, 13]: raw integer counts I1..I13, NaN = missing; readers feed the model "
    "log1p(max(x, 0)) with missing -> 0. /sparse uint32 [rows, 26]: categorical C1..C26 as the "
    "32-bit value of the hex token, 0xFFFFFFFF = missing (a real ffffffff token is stored as "
    "0xFFFFFFFE); the model reduces ids modulo its table sizes.";

static const char description_multi[] =
    "erase CTR shard (format erase-ctr-2, multi-hot). /label uint8 [rows]: click 0/1. "
    "/dense float32 [rows, 13]: raw integer counts I1..I13, NaN = missing; readers feed the model "
    "log1p(max(x, 0)) with missing -> 0. Categorical C1..C26, several ids per feature: "
    "/sparse_lengths uint32 [rows, 26]: ids of each (row, feature), >= 1 (a missing feature is one "
    "id 0xFFFFFFFF); /sparse_offsets int64 [rows]: index in /sparse_ids of each row's first id; "
    "/sparse_ids uint32 [sparse_ids]: the ids row by row, feature by feature, as the 32-bit value of "
    "the hex token (a real ffffffff token is stored as 0xFFFFFFFE). Attribute max_hotness uint32 "
    "[26]: the most ids of a row per feature.";

erase_ctr_write_options_t erase_ctr_write_options_default(void)
{
    erase_ctr_write_options_t o = { .chunk_rows = 1024, .compress = 1, .converter = NULL, .multi_hot = 0,
                                    .vocab_digest = NULL };
    return o;
}

/* Create dataset i; the lock is held. */
static erase_status_t create_dataset(erase_ctr_writer_t *w, int i)
{
    static const hid_t *file_types[CTR_DATASETS] = { &H5T_STD_U8LE_g,  &H5T_IEEE_F32LE_g, &H5T_STD_U32LE_g,
                                                     &H5T_STD_U32LE_g, &H5T_STD_I64LE_g,  &H5T_STD_U32LE_g };
    /* /sparse and /sparse_ids without the shuffle filter: repeated 4-byte
     * ids compress better (Kaggle sample: 57% instead of 80% of the raw
     * size) and faster (91 instead of 55 MB/s) when LZ77 sees them whole */
    int ids = i == CTR_SPARSE || i == CTR_IDS;
    erase_h5_rows_layout_t layout = { w->o.chunk_rows * (i == CTR_IDS ? ERASE_CTR_IDS_CHUNK_PER_ROW : 1),
                                      w->o.compress && !ids, w->o.compress };
    return erase_h5_rows_create(w->file, w->temp, &erase_ctr_specs[i], *file_types[i], &layout, &w->d[i]);
}

/* Create the datasets of version `version`; the lock is held. */
static erase_status_t create_datasets(erase_ctr_writer_t *w, int version)
{
    for (int i = 0; i < CTR_DATASETS; i++)
        if (erase_ctr_dataset_in(i, version) && w->d[i] < 0)
            ERASE_CHECK(create_dataset(w, i));
    w->version = version;
    return ERASE_OK;
}

erase_status_t erase_ctr_writer_open(const char *path, const erase_ctr_write_options_t *options,
                                     erase_ctr_writer_t **out)
{
    *out = NULL;
    erase_ctr_write_options_t o = options ? *options : erase_ctr_write_options_default();
    if (o.chunk_rows < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: chunk rows must be >= 1, got %" PRId64, path, o.chunk_rows);
    if (o.compress && (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0 || H5Zfilter_avail(H5Z_FILTER_SHUFFLE) <= 0))
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: this HDF5 library has no deflate or shuffle filter; "
                           "write uncompressed shards", path);
    erase_ctr_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    w->o = o;
    w->file = -1;
    for (int i = 0; i < CTR_DATASETS; i++)
        w->d[i] = -1;
    for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++)
        w->max_hotness[f] = 1;
    size_t n = strlen(path);
    w->path = strdup(path);
    w->temp = malloc(n + 5);
    if (!w->path || !w->temp) {
        erase_ctr_writer_free(w);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(w->temp, n + 5, "%s.tmp", path);
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    w->file = H5Fcreate(w->temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (w->file < 0) {
        char detail[256];
        erase_h5_detail(detail, sizeof detail);
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", w->temp, detail);
    } else {
        st = create_datasets(w, o.multi_hot ? 2 : 1);
    }
    erase_h5_leave();
    if (st != ERASE_OK) {
        erase_ctr_writer_free(w);
        return st;
    }
    *out = w;
    return ERASE_OK;
}

/* Append n rows of categorical ids in version 2's datasets: lengths
 * [n, 26] (NULL: all 1), ids flat (`total` of them); the lock is held. */
static erase_status_t append_v2(erase_ctr_writer_t *w, int64_t n, const uint32_t *lengths, const uint32_t *ids,
                                int64_t total)
{
    size_t bytes;
    if (!erase_bytes(sizeof(int64_t), n, ERASE_CTR_SHARD_FIELDS, &bytes))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: %" PRId64 " rows: too many", w->temp, n);
    /* room for the offsets [n] and, without lengths, ones [n, 26] */
    int64_t *offsets = malloc(bytes);
    if (!offsets)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the offsets of %" PRId64 " rows", w->temp, n);
    uint32_t *ones = (uint32_t *)(offsets + n);
    if (!lengths)
        for (int64_t k = 0; k < n * ERASE_CTR_SHARD_FIELDS; k++)
            ones[k] = 1;
    const uint32_t *len = lengths ? lengths : ones;
    int64_t at = w->ids;
    for (int64_t i = 0; i < n; i++) {
        offsets[i] = at;
        for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++)
            at += len[i * ERASE_CTR_SHARD_FIELDS + f];
    }
    erase_status_t st = erase_h5_rows_append(w->d[CTR_LENGTHS], w->temp, &erase_ctr_specs[CTR_LENGTHS],
                                             H5T_NATIVE_UINT32, w->rows, n, len);
    if (st == ERASE_OK)
        st = erase_h5_rows_append(w->d[CTR_OFFSETS], w->temp, &erase_ctr_specs[CTR_OFFSETS], H5T_NATIVE_INT64,
                                  w->rows, n, offsets);
    if (st == ERASE_OK)
        st = erase_h5_rows_append(w->d[CTR_IDS], w->temp, &erase_ctr_specs[CTR_IDS], H5T_NATIVE_UINT32, w->ids,
                                  total, ids);
    free(offsets);
    return st;
}

/*
 * From version 1 to 2 when the first row with several ids in a feature
 * comes: the version 2 datasets are created, the rows written so far are
 * copied into them from /sparse, and /sparse is deleted (HDF5 reuses its
 * space for what is written next). The lock is held.
 */
static erase_status_t switch_to_multi_hot(erase_ctr_writer_t *w)
{
    ERASE_CHECK(create_datasets(w, 2));
    enum { BLOCK = 4096 };
    uint32_t *buf = malloc(sizeof *buf * BLOCK * ERASE_CTR_SHARD_FIELDS);
    if (!buf)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->temp);
    erase_status_t st = ERASE_OK;
    int64_t rows = w->rows;
    w->rows = w->ids = 0; /* counted again as the rows are copied */
    for (int64_t b = 0; st == ERASE_OK && b < rows; b += BLOCK) {
        int64_t n = rows - b < BLOCK ? rows - b : BLOCK;
        st = erase_h5_rows_read(w->d[CTR_SPARSE], w->temp, &erase_ctr_specs[CTR_SPARSE], H5T_NATIVE_UINT32, b, n,
                                buf);
        if (st == ERASE_OK)
            st = append_v2(w, n, NULL, buf, n * ERASE_CTR_SHARD_FIELDS);
        w->rows += n;
        w->ids += n * ERASE_CTR_SHARD_FIELDS;
    }
    free(buf);
    w->rows = rows;
    ERASE_CHECK(st);
    char detail[256];
    if (H5Dclose(w->d[CTR_SPARSE]) < 0 || (w->d[CTR_SPARSE] = -1, H5Ldelete(w->file, "/sparse", H5P_DEFAULT) < 0))
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset /sparse: cannot delete: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    w->d[CTR_SPARSE] = -1;
    return ERASE_OK;
}

erase_status_t erase_ctr_writer_append_ids(erase_ctr_writer_t *w, int64_t n, const uint8_t *label,
                                           const float *dense, const uint32_t *lengths, const uint32_t *ids)
{
    if (w->finished)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after finish", w->temp);
    if (n < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: append of %" PRId64 " rows", w->temp, n);
    if (n == 0)
        return ERASE_OK;
    int64_t total = n * ERASE_CTR_SHARD_FIELDS; /* n fits: HDF5 would not take more */
    int multi = 0;
    uint32_t hot[ERASE_CTR_SHARD_FIELDS];
    memcpy(hot, w->max_hotness, sizeof hot);
    if (lengths) {
        total = 0;
        for (int64_t k = 0; k < n * ERASE_CTR_SHARD_FIELDS; k++) {
            uint32_t m = lengths[k];
            int f = (int)(k % ERASE_CTR_SHARD_FIELDS);
            if (m == 0)
                return ERASE_ERROR(ERASE_ERR_INVALID, "%s: row %" PRId64 " feature C%d has 0 ids, expected >= 1",
                                   w->temp, w->rows + k / ERASE_CTR_SHARD_FIELDS, f + 1);
            multi |= m > 1;
            hot[f] = m > hot[f] ? m : hot[f];
            total += m;
        }
    }
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    if (multi && w->version == 1)
        st = switch_to_multi_hot(w);
    if (st == ERASE_OK)
        st = erase_h5_rows_append(w->d[CTR_LABEL], w->temp, &erase_ctr_specs[CTR_LABEL], H5T_NATIVE_UINT8, w->rows,
                                  n, label);
    if (st == ERASE_OK)
        st = erase_h5_rows_append(w->d[CTR_DENSE], w->temp, &erase_ctr_specs[CTR_DENSE], H5T_NATIVE_FLOAT, w->rows,
                                  n, dense);
    if (st == ERASE_OK && w->version == 1)
        st = erase_h5_rows_append(w->d[CTR_SPARSE], w->temp, &erase_ctr_specs[CTR_SPARSE], H5T_NATIVE_UINT32,
                                  w->rows, n, ids);
    if (st == ERASE_OK && w->version == 2)
        st = append_v2(w, n, lengths, ids, total);
    erase_h5_leave();
    ERASE_CHECK(st);
    for (int64_t i = 0; i < n; i++)
        w->clicks += label[i] != 0;
    memcpy(w->max_hotness, hot, sizeof hot);
    w->rows += n;
    w->ids += total;
    return ERASE_OK;
}

erase_status_t erase_ctr_writer_append(erase_ctr_writer_t *w, int64_t n, const uint8_t *label,
                                       const float *dense, const uint32_t *sparse)
{
    return erase_ctr_writer_append_ids(w, n, label, dense, NULL, sparse);
}

int erase_ctr_writer_version(const erase_ctr_writer_t *w) { return w->version; }

int64_t erase_ctr_writer_rows(const erase_ctr_writer_t *w) { return w->rows; }

/* Attributes, format last; the lock is held. Returns the failing name or NULL. */
static const char *write_attributes(erase_ctr_writer_t *w, const char *sources)
{
    char converter[128];
    snprintf(converter, sizeof converter, "%s", w->o.converter ? w->o.converter : "erase " PACKAGE_VERSION);
    hid_t f = w->file;
    if (erase_h5_attr_write_int64(f, "rows", w->rows)) return "rows";
    if (erase_h5_attr_write_int64(f, "clicks", w->clicks)) return "clicks";
    if (erase_h5_attr_write_string(f, "source_files", sources ? sources : "")) return "source_files";
    if (erase_h5_attr_write_string(f, "converter", converter)) return "converter";
    if (erase_h5_attr_write_int64(f, "dense_features", ERASE_CTR_SHARD_DENSE)) return "dense_features";
    if (erase_h5_attr_write_int64(f, "sparse_features", ERASE_CTR_SHARD_FIELDS)) return "sparse_features";
    if (erase_h5_attr_write_int64(f, "sparse_missing", ERASE_CTR_SPARSE_MISSING)) return "sparse_missing";
    int multi = w->version == 2;
    if (multi && erase_h5_attr_write_int64(f, "sparse_ids", w->ids)) return "sparse_ids";
    if (multi && erase_h5_attr_write_array(f, "max_hotness", H5T_NATIVE_UINT32, w->max_hotness,
                                           ERASE_CTR_SHARD_FIELDS))
        return "max_hotness";
    if (erase_h5_attr_write_string(f, "description", multi ? description_multi : description)) return "description";
    if (w->o.vocab_digest && (erase_h5_attr_write_string(f, "vocab_digest", w->o.vocab_digest) ||
                              erase_h5_attr_write_int64(f, "vocab_threshold", w->o.vocab_threshold) ||
                              erase_h5_attr_write_array(f, "vocab_table_rows", H5T_NATIVE_INT64,
                                                        w->o.vocab_table_rows, ERASE_CTR_SHARD_FIELDS)))
        return "vocab_digest";
    if (erase_h5_attr_write_string(f, "format", multi ? ERASE_CTR_FORMAT_MULTI : ERASE_CTR_FORMAT)) return "format";
    return NULL;
}

erase_status_t erase_ctr_writer_finish(erase_ctr_writer_t *w, const char *sources)
{
    if (w->finished)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: finished twice", w->temp);
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_finish(&w->file, w->d, erase_ctr_specs, CTR_DATASETS, w->temp, write_attributes(w, sources));
    erase_h5_leave();
    ERASE_CHECK(st);
    w->finished = 1;
    return ERASE_OK;
}

erase_status_t erase_ctr_writer_publish(erase_ctr_writer_t *w)
{
    if (!w->finished || w->published)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: publish of a shard that is %s", w->path,
                           w->published ? "already published" : "not finished");
    ERASE_CHECK(erase_h5_rows_publish(w->temp, w->path, &w->published));
    return ERASE_OK;
}

erase_status_t erase_ctr_writer_publish_as(erase_ctr_writer_t *w, const char *path)
{
    char *p = strdup(path);
    if (!p)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    free(w->path);
    w->path = p;
    return erase_ctr_writer_publish(w);
}

void erase_ctr_writer_free(erase_ctr_writer_t *w)
{
    if (!w)
        return;
    if (w->file >= 0) {
        erase_h5_enter();
        for (int i = 0; i < CTR_DATASETS; i++)
            if (w->d[i] >= 0)
                H5Dclose(w->d[i]);
        H5Fclose(w->file);
        erase_h5_leave();
    }
    if (!w->published && w->temp)
        unlink(w->temp);
    free(w->path);
    free(w->temp);
    free(w);
}

erase_status_t erase_write_file_atomic(const char *path, const char *text, size_t len)
{
    size_t n = strlen(path) + 5;
    char *temp = malloc(n);
    if (!temp)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    snprintf(temp, n, "%s.tmp", path);
    erase_status_t st = ERASE_OK;
    int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, strerror(errno));
        goto done;
    }
    for (size_t off = 0; off < len;) {
        ssize_t k = write(fd, text + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: write failed: %s", temp, strerror(errno));
            break;
        }
        off += (size_t)k;
    }
    if (st == ERASE_OK && fsync(fd) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    close(fd);
    if (st == ERASE_OK && rename(temp, path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    if (st != ERASE_OK)
        unlink(temp);
    else if (erase_fsync_parent(path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the directory failed: %s", path, strerror(errno));
done:
    free(temp);
    return st;
}

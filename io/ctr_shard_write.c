#include "io/ctr_shard_write.h"

#include "config.h"
#include "io/h5_rows.h"
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
    hid_t file, d[3]; /* label, dense, sparse */
    int64_t rows, clicks;
    int finished, published;
};

static const erase_h5_rows_spec_t specs[3] = {
    { "/label", 1, 1, H5T_INTEGER, H5T_SGN_NONE, 1, "uint8" },
    { "/dense", 2, ERASE_CTR_SHARD_DENSE, H5T_FLOAT, H5T_SGN_ERROR, 4, "float32" },
    { "/sparse", 2, ERASE_CTR_SHARD_FIELDS, H5T_INTEGER, H5T_SGN_NONE, 4, "uint32" },
};

static const char description[] =
    "erase CTR shard (format erase-ctr-1). /label uint8 [rows]: click 0/1. "
    "/dense float32 [rows, 13]: raw integer counts I1..I13, NaN = missing; readers feed the model "
    "log1p(max(x, 0)) with missing -> 0. /sparse uint32 [rows, 26]: categorical C1..C26 as the "
    "32-bit value of the hex token, 0xFFFFFFFF = missing (a real ffffffff token is stored as "
    "0xFFFFFFFE); the model reduces ids modulo its table sizes.";

erase_ctr_write_options_t erase_ctr_write_options_default(void)
{
    erase_ctr_write_options_t o = { .chunk_rows = 1024, .compress = 1, .converter = NULL, .vocab_digest = NULL };
    return o;
}

/* Create the three datasets; the lock is held. */
static erase_status_t create_datasets(erase_ctr_writer_t *w)
{
    hid_t file_types[3] = { H5T_STD_U8LE, H5T_IEEE_F32LE, H5T_STD_U32LE };
    for (int i = 0; i < 3; i++) {
        /* /sparse without the shuffle filter: repeated 4-byte ids compress
         * better (Kaggle sample: 57% instead of 80% of the raw size) and
         * faster (91 instead of 55 MB/s) when LZ77 sees them whole */
        erase_h5_rows_layout_t layout = { w->o.chunk_rows, w->o.compress && i != 2, w->o.compress };
        ERASE_CHECK(erase_h5_rows_create(w->file, w->temp, &specs[i], file_types[i], &layout, &w->d[i]));
    }
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
    w->file = w->d[0] = w->d[1] = w->d[2] = -1;
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
        st = create_datasets(w);
    }
    erase_h5_leave();
    if (st != ERASE_OK) {
        erase_ctr_writer_free(w);
        return st;
    }
    *out = w;
    return ERASE_OK;
}

erase_status_t erase_ctr_writer_append(erase_ctr_writer_t *w, int64_t n, const uint8_t *label,
                                       const float *dense, const uint32_t *sparse)
{
    if (w->finished)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: append after finish", w->temp);
    if (n < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: append of %" PRId64 " rows", w->temp, n);
    if (n == 0)
        return ERASE_OK;
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_append(w->d[0], w->temp, &specs[0], H5T_NATIVE_UINT8, w->rows, n, label);
    if (st == ERASE_OK)
        st = erase_h5_rows_append(w->d[1], w->temp, &specs[1], H5T_NATIVE_FLOAT, w->rows, n, dense);
    if (st == ERASE_OK)
        st = erase_h5_rows_append(w->d[2], w->temp, &specs[2], H5T_NATIVE_UINT32, w->rows, n, sparse);
    erase_h5_leave();
    ERASE_CHECK(st);
    for (int64_t i = 0; i < n; i++)
        w->clicks += label[i] != 0;
    w->rows += n;
    return ERASE_OK;
}

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
    if (erase_h5_attr_write_string(f, "description", description)) return "description";
    if (w->o.vocab_digest && (erase_h5_attr_write_string(f, "vocab_digest", w->o.vocab_digest) ||
                              erase_h5_attr_write_int64(f, "vocab_threshold", w->o.vocab_threshold) ||
                              erase_h5_attr_write_array(f, "vocab_table_rows", H5T_NATIVE_INT64,
                                                        w->o.vocab_table_rows, ERASE_CTR_SHARD_FIELDS)))
        return "vocab_digest";
    if (erase_h5_attr_write_string(f, "format", ERASE_CTR_FORMAT)) return "format";
    return NULL;
}

erase_status_t erase_ctr_writer_finish(erase_ctr_writer_t *w, const char *sources)
{
    if (w->finished)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: finished twice", w->temp);
    erase_h5_enter();
    erase_status_t st = erase_h5_rows_finish(&w->file, w->d, specs, 3, w->temp, write_attributes(w, sources));
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

void erase_ctr_writer_free(erase_ctr_writer_t *w)
{
    if (!w)
        return;
    if (w->file >= 0) {
        erase_h5_enter();
        for (int i = 0; i < 3; i++)
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

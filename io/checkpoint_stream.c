/*
 * Reading a checkpoint's tensors a bounded block of rows at a time
 * (io/checkpoint.h: erase_ckpt_stream, erase_ckpt_sum_squares, and the
 * reads of erase_ckpt_load and of the verification at open), each block
 * verified against the file's checksums (FNV-1a 64, per row or of the
 * whole dataset).
 */
#include "io/checkpoint_stream.h"

#include "config.h"
#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

erase_status_t ckpt_stream_rows(const erase_ckpt_t *ck, hid_t file, int g, int i, int64_t row0, int64_t n,
                                erase_ckpt_rows_fn fn, void *ctx)
{
    const erase_ckpt_tensor_t *t = &ck->t[g][i];
    const tensor_info_t *f = &ck->info[g][i];
    char path[ERASE_CKPT_NAME_MAX + 16], sums_path[ERASE_CKPT_NAME_MAX + 32];
    snprintf(path, sizeof path, "/%s/%s", g ? "optim" : "params", t->name);
    ckpt_rowsum_path(path, sums_path, sizeof sums_path);
    int64_t cols = ckpt_row_elems(t);
    size_t row = sizeof(float) * (size_t)cols;
    hid_t d, mem_type;
    size_t elem;
    ERASE_CHECK(ckpt_open_checked(ck, file, path, "float32", t->ndim, t->dims, &d, &mem_type, &elem));
    erase_status_t st = ERASE_OK;
    const erase_h5_rows_spec_t rows_of = { .name = path, .rank = t->ndim, .cols = cols },
                               sums_of = { .name = sums_path, .rank = 1, .cols = 1 };
    int64_t chunk = (int64_t)(CKPT_STREAM_BYTES / (row ? row : 1));
    chunk = chunk < 1 ? 1 : chunk;
    float *buf = malloc(row * (size_t)chunk + 1);
    uint64_t *sums = f->rows ? malloc(sizeof *sums * (size_t)chunk) : NULL;
    if (!buf || (f->rows && !sums))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory", ck->path, path);
    if (f->rows) {
        int64_t one[1] = { t->dims[0] };
        hid_t c = -1;
        if (st == ERASE_OK)
            st = ckpt_open_checked(ck, file, sums_path, "uint64", 1, one, &c, &mem_type, &elem);
        for (int64_t at = row0; st == ERASE_OK && at < row0 + n; at += chunk) {
            int64_t k = row0 + n - at < chunk ? row0 + n - at : chunk;
            st = erase_h5_rows_read(d, ck->path, &rows_of, H5T_NATIVE_FLOAT, at, k, buf);
            if (st == ERASE_OK)
                st = erase_h5_rows_read(c, ck->path, &sums_of, H5T_NATIVE_UINT64, at, k, sums);
            for (int64_t r = 0; st == ERASE_OK && r < k; r++) {
                uint64_t h = erase_ckpt_fnv1a64(buf + r * cols, row);
                if (h != sums[r])
                    st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: row %" PRId64 ": checksum %016" PRIx64 " does "
                                     "not match the stored %016" PRIx64 " (damaged data)", ck->path, path, at + r, h,
                                     sums[r]);
            }
            if (st == ERASE_OK)
                st = fn(ctx, at, k, buf);
        }
        if (c >= 0)
            H5Dclose(c);
    } else {
        int64_t rows = t->dims[0];
        uint64_t h = erase_ckpt_fnv1a64("", 0);
        for (int64_t at = 0; st == ERASE_OK && at < rows; at += chunk) {
            int64_t k = rows - at < chunk ? rows - at : chunk;
            if ((st = erase_h5_rows_read(d, ck->path, &rows_of, H5T_NATIVE_FLOAT, at, k, buf)) != ERASE_OK)
                break;
            h = ckpt_fnv_add(h, buf, row * (size_t)k);
            int64_t a = at > row0 ? at : row0, b = at + k < row0 + n ? at + k : row0 + n;
            if (a < b)
                st = fn(ctx, a, b - a, buf + (a - at) * cols);
        }
        if (st == ERASE_OK && h != f->sum)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: checksum %016" PRIx64 " does not match the "
                             "stored %016" PRIx64 " (damaged data)", ck->path, path, h, f->sum);
    }
    free(buf);
    free(sums);
    H5Dclose(d);
    return st;
}

/* ckpt_stream_rows' fn of read_rows: the rows into out (rows [row0, ...)). */
typedef struct {
    float *out;
    int64_t row0, cols;
} rows_into_t;

static erase_status_t copy_rows(void *ctx, int64_t row0, int64_t n, const float *rows)
{
    const rows_into_t *c = ctx;
    memcpy(c->out + (row0 - c->row0) * c->cols, rows, sizeof(float) * (size_t)(n * c->cols));
    return ERASE_OK;
}

erase_status_t ckpt_read_rows(const erase_ckpt_t *ck, hid_t file, int g, int i, int64_t row0, int64_t n,
                              float *out)
{
    rows_into_t into = { out, row0, ckpt_row_elems(&ck->t[g][i]) };
    return ckpt_stream_rows(ck, file, g, i, row0, n, copy_rows, &into);
}


/* erase_ckpt_stream's fn of erase_ckpt_sum_squares: the squares of the
 * rows added in order. */
typedef struct {
    double ss;
    int64_t cols;
} squares_t;

static erase_status_t add_squares(void *ctx, int64_t row0, int64_t n, const float *rows)
{
    (void)row0;
    squares_t *q = ctx;
    for (int64_t j = 0; j < n * q->cols; j++)
        q->ss += (double)rows[j] * (double)rows[j];
    return ERASE_OK;
}

erase_status_t erase_ckpt_sum_squares(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i, double *out)
{
    /* in order, block by block: a loaded tensor's sum and a streamed one's are the same, bitwise */
    squares_t q = { 0, ckpt_row_elems(&ck->t[g][i]) };
    erase_status_t st = erase_ckpt_stream(ck, g, i, add_squares, &q);
    *out = q.ss;
    return st;
}

erase_status_t erase_ckpt_stream(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i, erase_ckpt_rows_fn fn,
                                 void *ctx)
{
    const erase_ckpt_tensor_t *t = &ck->t[g][i];
    if (t->data)
        return fn(ctx, 0, t->dims[0], t->data);
    erase_h5_enter();
    hid_t file = H5Fopen(ck->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    erase_status_t st;
    if (file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: cannot open as HDF5 to read %s/%s: %s", ck->path,
                         g == ERASE_CKPT_PARAMS ? "params" : "optim", t->name, erase_h5_detail(detail, sizeof detail));
    } else {
        st = ckpt_stream_rows(ck, file, g, i, 0, t->dims[0], fn, ctx);
        H5Fclose(file);
    }
    erase_h5_leave();
    return st;
}

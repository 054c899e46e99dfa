/*
 * CPU kernel bodies of the ops, written once for a real type and compiled
 * twice (kernels_f32.c: REAL = float, the kernels the CPU backend runs;
 * kernels_f64.c: REAL = double, the same arithmetic in double precision
 * for finite-difference gradient checks and as the fp32 reference).
 *
 * Conventions: row-major; batch-major activations [batch, width]; a
 * backward writes (does not accumulate into) its outputs; NULL output
 * pointers are skipped where documented in lib/ops/ops.h.
 *
 * Include with REAL, SUF(name) and GEMM defined.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/philox.h"
#include "lib/core/simd.h"
#include "lib/device/cpu/cpu.h"
#include "lib/ops/ops.h"

/* Grain of the loops split over the stream's threads (erase_cpu_parallel,
 * lib/device/cpu/cpu.h): ERASE_CPU_PARALLEL_ELEMENTS elements, and the
 * rows of a row loop that hold that many. */
#define PARALLEL_ELEMENTS ERASE_CPU_PARALLEL_ELEMENTS
#define PARALLEL_ROWS(width) ((size_t)((width) < PARALLEL_ELEMENTS ? PARALLEL_ELEMENTS / ((width) > 0 ? (width) : 1) : 1))

/* exp in the kernel's precision (float: erase_k_exp_f32, which vectorizes,
 * for the hot loops of the transformer's activation and softmax). */
#define EXP(v) _Generic((v), float: erase_k_exp_f32, default: exp)(v)

typedef struct {
    int batch, out;
    const REAL *b, *dy;
    REAL *y, *db;
} SUF(bias_args_t);

/* y[r] += b for rows [r0, r1). */
ERASE_SIMD_CLONES static void SUF(bias_add_rows)(void *p, size_t r0, size_t r1)
{
    const SUF(bias_args_t) *a = p;
    const int out = a->out;
    const REAL *b = a->b;
    for (size_t r = r0; r < r1; r++) {
        REAL *yr = a->y + r * out;
        for (int j = 0; j < out; j++)
            yr[j] += b[j];
    }
}

/* db[j] = the sum over the rows in order of dy[r, j], for columns [j0, j1). */
ERASE_SIMD_CLONES static void SUF(bias_grad_columns)(void *p, size_t j0, size_t j1)
{
    const SUF(bias_args_t) *a = p;
    REAL *db = a->db;
    for (size_t j = j0; j < j1; j++)
        db[j] = 0;
    for (int r = 0; r < a->batch; r++) {
        const REAL *dyr = a->dy + (size_t)r * a->out;
        for (size_t j = j0; j < j1; j++)
            db[j] += dyr[j];
    }
}

void SUF(erase_k_linear_forward)(int batch, int in, int out, const REAL *x, const REAL *w,
                                 const REAL *b, REAL *y)
{
    if (in > 0)
        GEMM(0, 1, batch, out, in, 1, x, in, w, in, 0, y, out);
    else
        memset(y, 0, sizeof(REAL) * (size_t)batch * out);
    if (b) {
        SUF(bias_args_t) a = { .batch = batch, .out = out, .b = b, .y = y };
        erase_cpu_parallel((size_t)batch, PARALLEL_ROWS(out), SUF(bias_add_rows), &a);
    }
}

void SUF(erase_k_linear_backward)(int batch, int in, int out, const REAL *x, const REAL *w,
                                  const REAL *dy, REAL *dx, REAL *dw, REAL *db)
{
    if (dx)
        GEMM(0, 0, batch, in, out, 1, dy, out, w, in, 0, dx, in);
    if (dw)
        GEMM(1, 0, out, in, batch, 1, dy, out, x, in, 0, dw, in);
    if (db) { /* 16 columns a part: a cache line of each row */
        SUF(bias_args_t) a = { .batch = batch, .out = out, .dy = dy, .db = db };
        erase_cpu_parallel((size_t)out, 16, SUF(bias_grad_columns), &a);
    }
}

typedef struct {
    const REAL *x, *dy;
    REAL *y;
} SUF(map_args_t);

ERASE_SIMD_CLONES static void SUF(relu_forward_range)(void *p, size_t begin, size_t end)
{
    const SUF(map_args_t) *a = p;
    const REAL *x = a->x;
    REAL *y = a->y;
    for (size_t i = begin; i < end; i++) /* NaN stays NaN, as torch.relu */
        y[i] = x[i] <= 0 ? 0 : x[i];
}

void SUF(erase_k_relu_forward)(size_t n, const REAL *x, REAL *y)
{
    SUF(map_args_t) a = { .x = x, .y = y };
    erase_cpu_parallel(n, PARALLEL_ELEMENTS, SUF(relu_forward_range), &a);
}

/* x holds the forward's output y. */
ERASE_SIMD_CLONES static void SUF(relu_backward_range)(void *p, size_t begin, size_t end)
{
    const SUF(map_args_t) *a = p;
    const REAL *y = a->x, *dy = a->dy;
    REAL *dx = a->y;
    for (size_t i = begin; i < end; i++)
        dx[i] = y[i] > 0 ? dy[i] : 0;
}

void SUF(erase_k_relu_backward)(size_t n, const REAL *y, const REAL *dy, REAL *dx)
{
    SUF(map_args_t) a = { .x = y, .dy = dy, .y = dx };
    erase_cpu_parallel(n, PARALLEL_ELEMENTS, SUF(relu_backward_range), &a);
}

/* GELU with the exact erf form, as torch.nn.GELU() by default. */
void SUF(erase_k_gelu_forward)(size_t n, const REAL *x, REAL *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (REAL)(0.5 * x[i] * (1.0 + erf(x[i] * 0.70710678118654752440)));
}

void SUF(erase_k_gelu_backward)(size_t n, const REAL *x, const REAL *dy, REAL *dx)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        double cdf = 0.5 * (1.0 + erf(v * 0.70710678118654752440));
        double pdf = 0.39894228040143267794 * exp(-0.5 * v * v);
        dx[i] = (REAL)(dy[i] * (cdf + v * pdf));
    }
}

/*
 * GELU, tanh form: 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
 * computed as x sigmoid(2u) (the same function: 0.5 (1 + tanh u) =
 * sigmoid(2u)), which keeps its relative precision where 1 + tanh(u)
 * cancels (x far below 0). In the kernel's precision (EXP).
 */
#define SQRT_2_OVER_PI 0.79788456080286535588
#define GELU_TANH_A 0.044715

ERASE_SIMD_CLONES static void SUF(gelu_tanh_forward_range)(void *p, size_t begin, size_t end)
{
    const SUF(map_args_t) *a = p;
    const REAL *x = a->x;
    REAL *y = a->y;
    for (size_t i = begin; i < end; i++) {
        REAL v = x[i], u = (REAL)SQRT_2_OVER_PI * (v + (REAL)GELU_TANH_A * v * v * v);
        y[i] = v / (1 + EXP(-2 * u));
    }
}

void SUF(erase_k_gelu_tanh_forward)(size_t n, const REAL *x, REAL *y)
{
    SUF(map_args_t) a = { .x = x, .y = y };
    erase_cpu_parallel(n, PARALLEL_ELEMENTS, SUF(gelu_tanh_forward_range), &a);
}

/* dy/dx = s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2), s = sigmoid(2u). */
ERASE_SIMD_CLONES static void SUF(gelu_tanh_backward_range)(void *p, size_t begin, size_t end)
{
    const SUF(map_args_t) *a = p;
    const REAL *x = a->x, *dy = a->dy;
    REAL *dx = a->y;
    for (size_t i = begin; i < end; i++) {
        REAL v = x[i], u = (REAL)SQRT_2_OVER_PI * (v + (REAL)GELU_TANH_A * v * v * v);
        REAL s = 1 / (1 + EXP(-2 * u)), sc = 1 - s; /* no inf/inf where exp overflows */
        REAL du = (REAL)SQRT_2_OVER_PI * (1 + (REAL)(3 * GELU_TANH_A) * v * v);
        dx[i] = dy[i] * (s + 2 * v * s * sc * du);
    }
}

void SUF(erase_k_gelu_tanh_backward)(size_t n, const REAL *x, const REAL *dy, REAL *dx)
{
    SUF(map_args_t) a = { .x = x, .dy = dy, .y = dx };
    erase_cpu_parallel(n, PARALLEL_ELEMENTS, SUF(gelu_tanh_backward_range), &a);
}

/* Inverted dropout: keep element i when its Philox uniform is >= p. */
void SUF(erase_k_dropout)(size_t n, float p, uint64_t seed, uint64_t offset, const REAL *x, REAL *y)
{
    REAL scale = p < 1 ? (REAL)(1.0 / (1.0 - p)) : 0;
    for (size_t i = 0; i < n; i++)
        y[i] = erase_philox_uniform(seed, offset, i) >= p ? x[i] * scale : 0;
}

void SUF(erase_k_concat_forward)(int batch, int n, const int *widths, const REAL *const *xs, REAL *y)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += widths[i];
    for (int r = 0; r < batch; r++) {
        REAL *yr = y + (size_t)r * total;
        for (int i = 0; i < n; i++) {
            memcpy(yr, xs[i] + (size_t)r * widths[i], sizeof(REAL) * (size_t)widths[i]);
            yr += widths[i];
        }
    }
}

void SUF(erase_k_concat_backward)(int batch, int n, const int *widths, const REAL *dy, REAL *const *dxs)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += widths[i];
    for (int r = 0; r < batch; r++) {
        const REAL *dyr = dy + (size_t)r * total;
        for (int i = 0; i < n; i++) {
            if (dxs[i])
                memcpy(dxs[i] + (size_t)r * widths[i], dyr, sizeof(REAL) * (size_t)widths[i]);
            dyr += widths[i];
        }
    }
}

/* Field f's hotness and length in sample r (bag NULL or without
 * lengths: one id), and the first column of field f in a row of ids. */
static inline int bag_hotness(const erase_bag_t *bag, int f)
{
    return bag ? bag->hotness[f] : 1;
}

static inline int bag_length(const erase_bag_t *bag, int fields, int r, int f)
{
    return bag && bag->lengths ? (int)bag->lengths[(size_t)r * fields + f] : 1;
}

static inline int bag_offset(const erase_bag_t *bag, int f)
{
    int off = 0;
    for (int g = 0; g < f; g++)
        off += bag_hotness(bag, g);
    return off;
}

/* Pool len vectors in order (lib/ops/ops.h): vector j is src's row
 * erase_embedding_row(ids[j], rows), or src's row j when ids is NULL. */
static void SUF(pool_bag)(int dim, int len, int mean, const REAL *src, const uint32_t *ids, uint32_t rows,
                          REAL *out)
{
    for (int j = 0; j < len; j++) {
        const REAL *v = src + (size_t)(ids ? erase_embedding_row(ids[j], rows) : (uint32_t)j) * dim;
        if (j == 0) {
            memcpy(out, v, sizeof(REAL) * (size_t)dim);
        } else {
            for (int d = 0; d < dim; d++)
                out[d] += v[d];
        }
    }
    if (mean && len > 1)
        for (int d = 0; d < dim; d++)
            out[d] /= (REAL)len;
}

void SUF(erase_k_embedding_bag_forward)(int batch, int fields, int dim, const uint32_t *rows,
                                        const erase_bag_t *bag, const uint32_t *ids,
                                        const REAL *const *tables, REAL *out)
{
    int H = bag_offset(bag, fields), mean = bag && bag->pooling == ERASE_BAG_MEAN;
    for (int r = 0; r < batch; r++)
        for (int f = 0, off = 0; f < fields; off += bag_hotness(bag, f), f++)
            SUF(pool_bag)(dim, bag_length(bag, fields, r, f), mean, tables[f], ids + (size_t)r * H + off,
                          rows[f], out + ((size_t)r * fields + f) * dim);
}

void SUF(erase_k_embedding_pool)(int batch, int fields, int dim, const erase_bag_t *bag, const REAL *vecs,
                                 REAL *out)
{
    int H = bag_offset(bag, fields), mean = bag->pooling == ERASE_BAG_MEAN;
    for (int r = 0; r < batch; r++)
        for (int f = 0, off = 0; f < fields; off += bag_hotness(bag, f), f++)
            SUF(pool_bag)(dim, bag_length(bag, fields, r, f), mean, vecs + ((size_t)r * H + off) * dim, NULL, 0,
                          out + ((size_t)r * fields + f) * dim);
}

void SUF(erase_k_embedding_forward)(int batch, int fields, int dim, const uint32_t *rows,
                                    const uint32_t *ids, const REAL *const *tables, REAL *out)
{
    SUF(erase_k_embedding_bag_forward)(batch, fields, dim, rows, NULL, ids, tables, out);
}

typedef struct {
    uint32_t row;
    int sample;
} SUF(row_ref_t);

/*
 * Stable LSD radix sort of n row references by row, 8 bits a pass, passes
 * whose digit is the same for every key skipped: O(n) for the small row
 * numbers of embedding tables. `tmp` holds n references; returns the
 * buffer holding the sorted result (refs or tmp).
 */
static SUF(row_ref_t) *SUF(radix_sort_rows)(SUF(row_ref_t) *refs, SUF(row_ref_t) *tmp, int n)
{
    uint32_t all_or = 0, all_and = UINT32_MAX;
    for (int i = 0; i < n; i++) {
        all_or |= refs[i].row;
        all_and &= refs[i].row;
    }
    for (int shift = 0; shift < 32; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xffu) == 0)
            continue; /* every key has this digit */
        int count[257] = { 0 };
        for (int i = 0; i < n; i++)
            count[((refs[i].row >> shift) & 0xffu) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (int i = 0; i < n; i++)
            tmp[count[(refs[i].row >> shift) & 0xffu]++] = refs[i];
        SUF(row_ref_t) *t = refs;
        refs = tmp;
        tmp = t;
    }
    return refs;
}

/*
 * Sparse gradient of one field's table: the distinct rows touched, sorted,
 * each with the sum of its ids' contributions (dout of the sample's field,
 * divided by the bag's length for mean pooling) added in (sample, column)
 * order (deterministic: the sort is stable) in chunks of
 * ERASE_SPARSE_SUM_CHUNK (lib/ops/ops.h: each chunk from 0, then the chunk
 * sums from 0). `scratch` holds ERASE_EMBEDDING_SCRATCH_BYTES(batch x the
 * field's hotness). Returns the number of distinct rows written to
 * out_rows / out_grads. bag NULL: one id per sample.
 */
int SUF(erase_k_embedding_bag_backward_field)(int batch, int fields, int dim, int f, uint32_t rows,
                                              const erase_bag_t *bag, const uint32_t *ids, const REAL *dout,
                                              void *scratch, uint32_t *out_rows, REAL *out_grads)
{
    int H = bag_offset(bag, fields), off = bag_offset(bag, f), m = 0;
    int mean = bag && bag->pooling == ERASE_BAG_MEAN;
    SUF(row_ref_t) *refs = scratch, *tmp = refs + (size_t)batch * bag_hotness(bag, f);
    for (int r = 0; r < batch; r++)
        for (int j = 0, len = bag_length(bag, fields, r, f); j < len; j++, m++) {
            refs[m].row = erase_embedding_row(ids[(size_t)r * H + off + j], rows);
            refs[m].sample = r;
        }
    refs = SUF(radix_sort_rows)(refs, tmp, m);
    int n = 0;
    for (int a = 0, b; a < m; a = b, n++) { /* the run [a, b) of one row */
        for (b = a + 1; b < m && refs[b].row == refs[a].row; b++)
            ;
        out_rows[n] = refs[a].row;
        for (int d = 0; d < dim; d++) {
            REAL total = 0;
            for (int c = a; c < b; c += ERASE_SPARSE_SUM_CHUNK) {
                int end = b - c > ERASE_SPARSE_SUM_CHUNK ? c + ERASE_SPARSE_SUM_CHUNK : b;
                REAL part = 0;
                for (int i = c; i < end; i++) {
                    int q = refs[i].sample;
                    REAL g = dout[((size_t)q * fields + f) * dim + d];
                    part += mean ? g / (REAL)bag_length(bag, fields, q, f) : g;
                }
                total += part;
            }
            out_grads[(size_t)n * dim + d] = total;
        }
    }
    return n;
}

int SUF(erase_k_embedding_backward_field)(int batch, int fields, int dim, int f, uint32_t rows,
                                          const uint32_t *ids, const REAL *dout, void *scratch,
                                          uint32_t *out_rows, REAL *out_grads)
{
    return SUF(erase_k_embedding_bag_backward_field)(batch, fields, dim, f, rows, NULL, ids, dout, scratch,
                                                     out_rows, out_grads);
}

/*
 * DLRM pairwise-dot interaction of nvec vectors of width dim per sample:
 * v_0 = dense[r], v_1.. = emb[r, 0..nvec-2]; out[r] = [v_0, <v_i,v_j> i<j].
 */
ERASE_SIMD_CLONES void SUF(erase_k_interaction_forward)(int batch, int nvec, int dim, const REAL *dense,
                                      const REAL *emb, REAL *out)
{
    int width = dim + nvec * (nvec - 1) / 2;
    for (int r = 0; r < batch; r++) {
        const REAL *v0 = dense + (size_t)r * dim;
        const REAL *e = emb + (size_t)r * (nvec - 1) * dim;
        REAL *o = out + (size_t)r * width;
        memcpy(o, v0, sizeof(REAL) * (size_t)dim);
        REAL *z = o + dim;
        for (int i = 0; i < nvec; i++) {
            const REAL *vi = i == 0 ? v0 : e + (size_t)(i - 1) * dim;
            for (int j = i + 1; j < nvec; j++) {
                const REAL *vj = e + (size_t)(j - 1) * dim;
                REAL s = 0;
                for (int d = 0; d < dim; d++)
                    s += vi[d] * vj[d];
                *z++ = s;
            }
        }
    }
}

ERASE_SIMD_CLONES void SUF(erase_k_interaction_backward)(int batch, int nvec, int dim, const REAL *dense,
                                       const REAL *emb, const REAL *dout, REAL *ddense, REAL *demb)
{
    int width = dim + nvec * (nvec - 1) / 2;
    for (int r = 0; r < batch; r++) {
        const REAL *v0 = dense + (size_t)r * dim;
        const REAL *e = emb + (size_t)r * (nvec - 1) * dim;
        const REAL *g = dout + (size_t)r * width;
        REAL *dv0 = ddense + (size_t)r * dim;
        REAL *de = demb + (size_t)r * (nvec - 1) * dim;
        memcpy(dv0, g, sizeof(REAL) * (size_t)dim);
        memset(de, 0, sizeof(REAL) * (size_t)(nvec - 1) * dim);
        const REAL *gz = g + dim;
        for (int i = 0; i < nvec; i++) {
            const REAL *vi = i == 0 ? v0 : e + (size_t)(i - 1) * dim;
            REAL *dvi = i == 0 ? dv0 : de + (size_t)(i - 1) * dim;
            for (int j = i + 1; j < nvec; j++) {
                const REAL *vj = e + (size_t)(j - 1) * dim;
                REAL *dvj = de + (size_t)(j - 1) * dim;
                REAL gij = *gz++;
                for (int d = 0; d < dim; d++) {
                    dvi[d] += gij * vj[d];
                    dvj[d] += gij * vi[d];
                }
            }
        }
    }
}

/*
 * Binary cross-entropy with logits, mean over the batch:
 * l = max(z,0) - z*y + log1p(exp(-|z|)) (exact for any finite z).
 * Returns the mean loss; dz = weight * (sigmoid(z) - y) / batch if dz.
 */
double SUF(erase_k_bce_with_logits)(int batch, const REAL *z, const REAL *y, double weight, REAL *dz)
{
    double sum = 0;
    for (int r = 0; r < batch; r++) {
        double v = z[r], t = y[r];
        sum += (v > 0 ? v : 0) - v * t + log1p(exp(-fabs(v)));
        if (dz) {
            double s = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
            dz[r] = (REAL)(weight * (s - t) / batch);
        }
    }
    return batch ? sum / batch : 0;
}

/* Rows of a block of the losses' sum: the sum is taken block by block,
 * each block's rows in order from 0, then the blocks in order, on any
 * number of threads. */
#define LOSS_BLOCK_ROWS 64

typedef struct {
    int batch, classes;
    const REAL *z;
    const int32_t *labels;
    double weight;
    REAL *dz;
    double *block_sums;
} SUF(xent_args_t);

/* Block b of LOSS_BLOCK_ROWS rows: dz, and the sum of its losses. */
static double SUF(softmax_xent_block)(const SUF(xent_args_t) *a, size_t b)
{
    const int classes = a->classes;
    size_t r1 = (b + 1) * LOSS_BLOCK_ROWS < (size_t)a->batch ? (b + 1) * LOSS_BLOCK_ROWS : (size_t)a->batch;
    double sum = 0;
    for (size_t r = b * LOSS_BLOCK_ROWS; r < r1; r++) {
        const REAL *zr = a->z + r * classes;
        double m = zr[0];
        for (int c = 1; c < classes; c++)
            if (zr[c] > m)
                m = zr[c];
        double se = 0;
        for (int c = 0; c < classes; c++)
            se += exp(zr[c] - m);
        double lse = m + log(se);
        sum += lse - zr[a->labels[r]];
        if (a->dz) {
            REAL *dzr = a->dz + r * classes;
            for (int c = 0; c < classes; c++)
                dzr[c] = (REAL)(a->weight * (exp(zr[c] - lse) - (c == a->labels[r])) / a->batch);
        }
    }
    return sum;
}

static void SUF(softmax_xent_blocks)(void *p, size_t b0, size_t b1)
{
    const SUF(xent_args_t) *a = p;
    for (size_t b = b0; b < b1; b++)
        a->block_sums[b] = SUF(softmax_xent_block)(a, b);
}

/* Softmax cross-entropy with integer labels, mean over the batch; blocks
 * of rows split over the stream's threads. */
double SUF(erase_k_softmax_xent)(int batch, int classes, const REAL *z, const int32_t *labels,
                                 double weight, REAL *dz)
{
    if (batch <= 0)
        return 0;
    size_t blocks = ((size_t)batch + LOSS_BLOCK_ROWS - 1) / LOSS_BLOCK_ROWS;
    double on_stack[256], *sums = blocks <= 256 ? on_stack : malloc(blocks * sizeof *sums);
    SUF(xent_args_t) a = { .batch = batch, .classes = classes, .z = z, .labels = labels,
                           .weight = weight, .dz = dz, .block_sums = sums };
    double total = 0;
    if (sums) {
        erase_cpu_parallel(blocks, (size_t)(PARALLEL_ROWS(classes) + LOSS_BLOCK_ROWS - 1) / LOSS_BLOCK_ROWS,
                           SUF(softmax_xent_blocks), &a);
        for (size_t b = 0; b < blocks; b++)
            total += sums[b];
        if (sums != on_stack)
            free(sums);
    } else { /* no memory for the block sums: the same blocks in order, alone */
        for (size_t b = 0; b < blocks; b++)
            total += SUF(softmax_xent_block)(&a, b);
    }
    return total / batch;
}

typedef struct {
    int batch, dim;
    double eps;
    const REAL *x, *gamma, *beta, *mean_in, *rstd_in, *dy;
    REAL *y, *mean, *rstd, *dx, *dgamma, *dbeta;
} SUF(layernorm_args_t);

static void SUF(layernorm_forward_rows)(void *p, size_t r0, size_t r1)
{
    const SUF(layernorm_args_t) *a = p;
    const int dim = a->dim;
    for (size_t r = r0; r < r1; r++) {
        const REAL *xr = a->x + r * dim;
        REAL *yr = a->y + r * dim;
        double mu = 0, var = 0;
        for (int d = 0; d < dim; d++)
            mu += xr[d];
        mu /= dim;
        for (int d = 0; d < dim; d++)
            var += (xr[d] - mu) * (xr[d] - mu);
        var /= dim;
        double rs = 1.0 / sqrt(var + a->eps);
        for (int d = 0; d < dim; d++)
            yr[d] = (REAL)((xr[d] - mu) * rs * a->gamma[d] + a->beta[d]);
        a->mean[r] = (REAL)mu;
        a->rstd[r] = (REAL)rs;
    }
}

/* Layer norm over the last dimension (biased variance, as PyTorch); rows
 * split over the stream's threads. */
void SUF(erase_k_layernorm_forward)(int batch, int dim, double eps, const REAL *x,
                                    const REAL *gamma, const REAL *beta, REAL *y, REAL *mean,
                                    REAL *rstd)
{
    SUF(layernorm_args_t) a = { .batch = batch, .dim = dim, .eps = eps, .x = x, .gamma = gamma,
                                .beta = beta, .y = y, .mean = mean, .rstd = rstd };
    erase_cpu_parallel((size_t)batch, PARALLEL_ROWS(dim), SUF(layernorm_forward_rows), &a);
}

/* dx of rows [r0, r1): each row's own sums. */
static void SUF(layernorm_backward_rows)(void *p, size_t r0, size_t r1)
{
    const SUF(layernorm_args_t) *a = p;
    const int dim = a->dim;
    for (size_t r = r0; r < r1; r++) {
        const REAL *xr = a->x + r * dim, *dyr = a->dy + r * dim;
        double mu = a->mean_in[r], rs = a->rstd_in[r], sum_g = 0, sum_gx = 0;
        for (int d = 0; d < dim; d++) {
            double xhat = (xr[d] - mu) * rs, g = dyr[d] * a->gamma[d];
            sum_g += g;
            sum_gx += g * xhat;
        }
        REAL *dxr = a->dx + r * dim;
        for (int d = 0; d < dim; d++) {
            double xhat = (xr[d] - mu) * rs;
            dxr[d] = (REAL)(rs * (dyr[d] * a->gamma[d] - (sum_g + xhat * sum_gx) / dim));
        }
    }
}

/* dgamma and dbeta of columns [d0, d1): each a sum over the rows in
 * order, whatever the split. */
static void SUF(layernorm_backward_columns)(void *p, size_t d0, size_t d1)
{
    const SUF(layernorm_args_t) *a = p;
    const int dim = a->dim;
    if (a->dgamma)
        for (size_t d = d0; d < d1; d++)
            a->dgamma[d] = 0;
    if (a->dbeta)
        for (size_t d = d0; d < d1; d++)
            a->dbeta[d] = 0;
    for (int r = 0; r < a->batch; r++) {
        const REAL *xr = a->x + (size_t)r * dim, *dyr = a->dy + (size_t)r * dim;
        double mu = a->mean_in[r], rs = a->rstd_in[r];
        if (a->dgamma)
            for (size_t d = d0; d < d1; d++)
                a->dgamma[d] += (REAL)(dyr[d] * ((xr[d] - mu) * rs));
        if (a->dbeta)
            for (size_t d = d0; d < d1; d++)
                a->dbeta[d] += dyr[d];
    }
}

void SUF(erase_k_layernorm_backward)(int batch, int dim, const REAL *x, const REAL *gamma,
                                     const REAL *mean, const REAL *rstd, const REAL *dy, REAL *dx,
                                     REAL *dgamma, REAL *dbeta)
{
    SUF(layernorm_args_t) a = { .batch = batch, .dim = dim, .x = x, .gamma = gamma,
                                .mean_in = mean, .rstd_in = rstd, .dy = dy, .dx = dx,
                                .dgamma = dgamma, .dbeta = dbeta };
    if (dgamma || dbeta) /* about 16 columns a part: a cache line of each row */
        erase_cpu_parallel((size_t)dim, 16, SUF(layernorm_backward_columns), &a);
    if (dx)
        erase_cpu_parallel((size_t)batch, PARALLEL_ROWS(dim), SUF(layernorm_backward_rows), &a);
}

/* ---- transformer (the gpt model) ------------------------------------------ */

/* out[b, t, :] = wte[tokens[b*T + t], :] + wpe[t, :]; tokens checked by the caller. */
ERASE_SIMD_CLONES void SUF(erase_k_token_embedding_forward)(int batch, int T, int dim,
                                                            const int32_t *tokens, const REAL *wte,
                                                            const REAL *wpe, REAL *out)
{
    for (size_t i = 0; i < (size_t)batch * T; i++) {
        const REAL *e = wte + (size_t)tokens[i] * dim, *p = wpe + (i % (size_t)T) * dim;
        REAL *o = out + i * dim;
        for (int d = 0; d < dim; d++)
            o[d] = e[d] + p[d];
    }
}

/*
 * dwpe[t] = sum over b ascending of dout[b, t]; dwte[v] (+)= the sum of
 * dout at the positions holding token v, added in ascending position order
 * (one pass over the positions in order: deterministic). accumulate = 0
 * zeroes dwte first. dwte or dwpe NULL: not computed.
 */
ERASE_SIMD_CLONES void SUF(erase_k_token_embedding_backward)(int batch, int T, int dim, int vocab,
                                                             const int32_t *tokens, const REAL *dout,
                                                             REAL *dwte, REAL *dwpe, int accumulate)
{
    if (dwpe) {
        memset(dwpe, 0, sizeof(REAL) * (size_t)T * dim);
        for (size_t i = 0; i < (size_t)batch * T; i++) {
            const REAL *g = dout + i * dim;
            REAL *p = dwpe + (i % (size_t)T) * dim;
            for (int d = 0; d < dim; d++)
                p[d] += g[d];
        }
    }
    if (dwte) {
        if (!accumulate)
            memset(dwte, 0, sizeof(REAL) * (size_t)vocab * dim);
        for (size_t i = 0; i < (size_t)batch * T; i++) {
            const REAL *g = dout + i * dim;
            REAL *e = dwte + (size_t)tokens[i] * dim;
            for (int d = 0; d < dim; d++)
                e[d] += g[d];
        }
    }
}

#include "lib/ops/cpu/attention_impl.h"

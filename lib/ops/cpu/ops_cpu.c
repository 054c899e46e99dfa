/*
 * The ops of lib/ops/ops.h on the CPU backend: the single-precision kernel
 * of lib/ops/cpu/kernels_impl.h launched on the stream with a copy of its
 * arguments. Arguments were validated by lib/ops/ops.c; this file exports
 * its launchers only through the table erase_ops_cpu (at its end).
 */
#include "lib/ops/cpu/ops_cpu.h"

#include "lib/core/simd.h"
#include "lib/ops/cpu/kernels.h"

#include <stdlib.h>
#include <string.h>

/* ---- linear ------------------------------------------------------------- */

typedef struct {
    int batch, in, out;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db;
} linear_args_t;

static erase_status_t linear_fwd_k(const void *p)
{
    const linear_args_t *a = p;
    erase_k_linear_forward_f32(a->batch, a->in, a->out, a->x, a->w, a->b, a->y);
    return ERASE_OK;
}

static erase_status_t linear_bwd_k(const void *p)
{
    const linear_args_t *a = p;
    erase_k_linear_backward_f32(a->batch, a->in, a->out, a->x, a->w, a->dy, a->dx, a->dw, a->db);
    return ERASE_OK;
}

static erase_status_t cpu_linear_forward(erase_stream_t *s, int batch, int in, int out, const float *x,
                                    const float *w, const float *b, float *y)
{
    linear_args_t a = { .batch = batch, .in = in, .out = out, .x = x, .w = w, .b = b, .y = y };
    LAUNCH(s, linear_fwd_k, a);
}

static erase_status_t cpu_linear_backward(erase_stream_t *s, int batch, int in, int out,
                                     const float *x, const float *w, const float *dy, float *dx,
                                     float *dw, float *db)
{
    linear_args_t a = { .batch = batch, .in = in, .out = out, .x = x, .w = w, .dy = dy,
                        .dx = dx, .dw = dw, .db = db };
    LAUNCH(s, linear_bwd_k, a);
}

/* ---- elementwise -------------------------------------------------------- */

typedef struct {
    size_t n;
    const float *x, *y, *dy;
    float *out;
    float p, alpha;
    uint64_t seed, offset;
} eltwise_args_t;

static erase_status_t relu_fwd_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_relu_forward_f32(a->n, a->x, a->out);
    return ERASE_OK;
}

static erase_status_t relu_bwd_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_relu_backward_f32(a->n, a->y, a->dy, a->out);
    return ERASE_OK;
}

static erase_status_t gelu_fwd_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_gelu_forward_f32(a->n, a->x, a->out);
    return ERASE_OK;
}

static erase_status_t gelu_bwd_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_gelu_backward_f32(a->n, a->x, a->dy, a->out);
    return ERASE_OK;
}

static erase_status_t gelu_tanh_fwd_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_gelu_tanh_forward_f32(a->n, a->x, a->out);
    return ERASE_OK;
}

static erase_status_t gelu_tanh_bwd_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_gelu_tanh_backward_f32(a->n, a->x, a->dy, a->out);
    return ERASE_OK;
}

static erase_status_t dropout_k(const void *p)
{
    const eltwise_args_t *a = p;
    erase_k_dropout_f32(a->n, a->p, a->seed, a->offset, a->x, a->out);
    return ERASE_OK;
}

ERASE_SIMD_CLONES static void axpy_range(void *p, size_t begin, size_t end)
{
    const eltwise_args_t *a = p;
    float *out = a->out, alpha = a->alpha;
    const float *x = a->x;
    for (size_t i = begin; i < end; i++)
        out[i] += alpha * x[i];
}

/* Element-wise: split over the stream's threads (erase_cpu_parallel). */
static erase_status_t axpy_k(const void *p)
{
    eltwise_args_t a = *(const eltwise_args_t *)p;
    erase_cpu_parallel(a.n, ERASE_CPU_PARALLEL_ELEMENTS, axpy_range, &a);
    return ERASE_OK;
}

static erase_status_t cpu_relu_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    eltwise_args_t a = { .n = n, .x = x, .out = y };
    LAUNCH(s, relu_fwd_k, a);
}

static erase_status_t cpu_relu_backward(erase_stream_t *s, size_t n, const float *y, const float *dy,
                                   float *dx)
{
    eltwise_args_t a = { .n = n, .y = y, .dy = dy, .out = dx };
    LAUNCH(s, relu_bwd_k, a);
}

static erase_status_t cpu_gelu_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    eltwise_args_t a = { .n = n, .x = x, .out = y };
    LAUNCH(s, gelu_fwd_k, a);
}

static erase_status_t cpu_gelu_backward(erase_stream_t *s, size_t n, const float *x, const float *dy,
                                   float *dx)
{
    eltwise_args_t a = { .n = n, .x = x, .dy = dy, .out = dx };
    LAUNCH(s, gelu_bwd_k, a);
}

static erase_status_t cpu_gelu_tanh_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    eltwise_args_t a = { .n = n, .x = x, .out = y };
    LAUNCH(s, gelu_tanh_fwd_k, a);
}

static erase_status_t cpu_gelu_tanh_backward(erase_stream_t *s, size_t n, const float *x,
                                             const float *dy, float *dx)
{
    eltwise_args_t a = { .n = n, .x = x, .dy = dy, .out = dx };
    LAUNCH(s, gelu_tanh_bwd_k, a);
}

static erase_status_t cpu_dropout(erase_stream_t *s, size_t n, float p, uint64_t seed, uint64_t offset,
                             const float *x, float *y)
{
    eltwise_args_t a = { .n = n, .p = p, .seed = seed, .offset = offset, .x = x, .out = y };
    LAUNCH(s, dropout_k, a);
}

static erase_status_t cpu_axpy(erase_stream_t *s, size_t n, float alpha, const float *x, float *y)
{
    eltwise_args_t a = { .n = n, .alpha = alpha, .x = x, .out = y };
    LAUNCH(s, axpy_k, a);
}

/* ---- concat ------------------------------------------------------------- */

typedef struct {
    int batch, n;
    int widths[ERASE_CONCAT_MAX];
    const float *xs[ERASE_CONCAT_MAX];
    float *dxs[ERASE_CONCAT_MAX];
    const float *dy;
    float *y;
} concat_args_t;

static erase_status_t concat_fwd_k(const void *p)
{
    const concat_args_t *a = p;
    erase_k_concat_forward_f32(a->batch, a->n, a->widths, a->xs, a->y);
    return ERASE_OK;
}

static erase_status_t concat_bwd_k(const void *p)
{
    const concat_args_t *a = p;
    erase_k_concat_backward_f32(a->batch, a->n, a->widths, a->dy, a->dxs);
    return ERASE_OK;
}

/* Fill the launch arguments' shape part (validated by lib/ops/ops.c). */
static void concat_args(concat_args_t *a, int batch, int n, const int *widths)
{
    memset(a, 0, sizeof *a);
    a->batch = batch;
    a->n = n;
    for (int i = 0; i < n; i++)
        a->widths[i] = widths[i];
}

static erase_status_t cpu_concat_forward(erase_stream_t *s, int batch, int n, const int *widths,
                                    const float *const *xs, float *y)
{
    concat_args_t a;
    concat_args(&a, batch, n, widths);
    for (int i = 0; i < n; i++)
        a.xs[i] = xs[i];
    a.y = y;
    LAUNCH(s, concat_fwd_k, a);
}

static erase_status_t cpu_concat_backward(erase_stream_t *s, int batch, int n, const int *widths,
                                     const float *dy, float *const *dxs)
{
    concat_args_t a;
    concat_args(&a, batch, n, widths);
    for (int i = 0; i < n; i++)
        a.dxs[i] = dxs[i];
    a.dy = dy;
    LAUNCH(s, concat_bwd_k, a);
}

/* ---- embeddings ---------------------------------------------------------- */

typedef struct {
    int batch, fields, dim;
    uint32_t rows[ERASE_FIELDS_MAX];
    erase_bag_t bag;
    const uint32_t *ids;
    const float *tables[ERASE_FIELDS_MAX];
    const float *vecs;
    float *out;
    const float *dout;
    uint32_t *grad_rows[ERASE_FIELDS_MAX];
    float *grad_values[ERASE_FIELDS_MAX];
    int *count;
} embedding_args_t;

/* The lengths the bag kernels trust, checked when the op runs. */
static erase_status_t bag_lengths_ok(const embedding_args_t *a)
{
    int r, f;
    uint32_t n;
    if (erase_k_bag_bad_length(a->batch, a->fields, &a->bag, &r, &f, &n))
        return ERASE_ERROR(ERASE_ERR_INVALID, "embedding bag: sample %d field %d has %u ids, expected 1 to %d", r,
                           f, n, a->bag.hotness[f]);
    return ERASE_OK;
}

static erase_status_t embedding_fwd_k(const void *p)
{
    const embedding_args_t *a = p;
    ERASE_CHECK(bag_lengths_ok(a));
    erase_k_embedding_bag_forward_f32(a->batch, a->fields, a->dim, a->rows, &a->bag, a->ids, a->tables, a->out);
    return ERASE_OK;
}

static erase_status_t embedding_pool_k(const void *p)
{
    const embedding_args_t *a = p;
    ERASE_CHECK(bag_lengths_ok(a));
    erase_k_embedding_pool_f32(a->batch, a->fields, a->dim, &a->bag, a->vecs, a->out);
    return ERASE_OK;
}

static erase_status_t embedding_bwd_k(const void *p)
{
    const embedding_args_t *a = p;
    ERASE_CHECK(bag_lengths_ok(a));
    int hmax = 1;
    for (int f = 0; f < a->fields; f++)
        hmax = a->bag.hotness[f] > hmax ? a->bag.hotness[f] : hmax;
    void *scratch = malloc(ERASE_EMBEDDING_SCRATCH_BYTES((size_t)a->batch * (size_t)hmax) + 1);
    if (!scratch)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "embedding backward: no memory for %d x %d rows", a->batch, hmax);
    for (int f = 0; f < a->fields; f++)
        a->count[f] = erase_k_embedding_bag_backward_field_f32(a->batch, a->fields, a->dim, f, a->rows[f], &a->bag,
                                                                a->ids, a->dout, scratch, a->grad_rows[f],
                                                                a->grad_values[f]);
    free(scratch);
    return ERASE_OK;
}

/* Fill the launch arguments' shape part (validated by lib/ops/ops.c). */
static void embedding_args(embedding_args_t *a, int batch, int fields, int dim, const uint32_t *rows,
                           const erase_bag_t *bag, const uint32_t *ids)
{
    memset(a, 0, sizeof *a);
    a->batch = batch;
    a->fields = fields;
    a->dim = dim;
    a->bag = *bag;
    a->ids = ids;
    for (int f = 0; rows && f < fields; f++)
        a->rows[f] = rows[f];
}

static erase_status_t cpu_embedding_forward(erase_stream_t *s, int batch, int fields, int dim,
                                            const uint32_t *rows, const erase_bag_t *bag, const uint32_t *ids,
                                            const float *const *tables, float *out)
{
    embedding_args_t a;
    embedding_args(&a, batch, fields, dim, rows, bag, ids);
    for (int f = 0; f < fields; f++)
        a.tables[f] = tables[f];
    a.out = out;
    LAUNCH(s, embedding_fwd_k, a);
}

static erase_status_t cpu_embedding_pool(erase_stream_t *s, int batch, int fields, int dim, const erase_bag_t *bag,
                                         const float *vecs, float *out)
{
    embedding_args_t a;
    embedding_args(&a, batch, fields, dim, NULL, bag, NULL);
    a.vecs = vecs;
    a.out = out;
    LAUNCH(s, embedding_pool_k, a);
}

static erase_status_t cpu_embedding_backward(erase_stream_t *s, int batch, int fields, int dim,
                                             const uint32_t *rows, const erase_bag_t *bag, const uint32_t *ids,
                                             const float *dout, uint32_t *const *grad_rows,
                                             float *const *grad_values, int *count)
{
    embedding_args_t a;
    embedding_args(&a, batch, fields, dim, rows, bag, ids);
    for (int f = 0; f < fields; f++) {
        a.grad_rows[f] = grad_rows[f];
        a.grad_values[f] = grad_values[f];
    }
    a.dout = dout;
    a.count = count;
    LAUNCH(s, embedding_bwd_k, a);
}

/* ---- interaction --------------------------------------------------------- */

typedef struct {
    int batch, nvec, dim;
    const float *dense, *emb, *dout;
    float *out, *ddense, *demb;
} interaction_args_t;

static erase_status_t interaction_fwd_k(const void *p)
{
    const interaction_args_t *a = p;
    erase_k_interaction_forward_f32(a->batch, a->nvec, a->dim, a->dense, a->emb, a->out);
    return ERASE_OK;
}

static erase_status_t interaction_bwd_k(const void *p)
{
    const interaction_args_t *a = p;
    erase_k_interaction_backward_f32(a->batch, a->nvec, a->dim, a->dense, a->emb, a->dout,
                                     a->ddense, a->demb);
    return ERASE_OK;
}

static erase_status_t cpu_interaction_forward(erase_stream_t *s, int batch, int nvec, int dim,
                                         const float *dense, const float *emb, float *out)
{
    interaction_args_t a = { .batch = batch, .nvec = nvec, .dim = dim, .dense = dense, .emb = emb, .out = out };
    LAUNCH(s, interaction_fwd_k, a);
}

static erase_status_t cpu_interaction_backward(erase_stream_t *s, int batch, int nvec, int dim,
                                          const float *dense, const float *emb, const float *dout,
                                          float *ddense, float *demb)
{
    interaction_args_t a = { .batch = batch, .nvec = nvec, .dim = dim, .dense = dense, .emb = emb,
                             .dout = dout, .ddense = ddense, .demb = demb };
    LAUNCH(s, interaction_bwd_k, a);
}

/* ---- losses ------------------------------------------------------------- */

typedef struct {
    int batch, classes;
    const float *z, *y;
    const int32_t *labels;
    float weight;
    float *loss, *dz;
} loss_args_t;

static erase_status_t bce_k(const void *p)
{
    const loss_args_t *a = p;
    *a->loss = (float)erase_k_bce_with_logits_f32(a->batch, a->z, a->y, a->weight, a->dz);
    return ERASE_OK;
}

static erase_status_t xent_k(const void *p)
{
    const loss_args_t *a = p;
    for (int r = 0; r < a->batch; r++)
        if (a->labels[r] < 0 || a->labels[r] >= a->classes)
            return ERASE_ERROR(ERASE_ERR_INVALID, "softmax cross-entropy: label %d of sample %d outside [0, %d)",
                               a->labels[r], r, a->classes);
    *a->loss = (float)erase_k_softmax_xent_f32(a->batch, a->classes, a->z, a->labels, a->weight, a->dz);
    return ERASE_OK;
}

static erase_status_t cpu_bce_with_logits(erase_stream_t *s, int batch, const float *z, const float *y,
                                     float weight, float *loss, float *dz)
{
    loss_args_t a = { .batch = batch, .z = z, .y = y, .weight = weight, .loss = loss, .dz = dz };
    LAUNCH(s, bce_k, a);
}

static erase_status_t cpu_softmax_xent(erase_stream_t *s, int batch, int classes, const float *z,
                                  const int32_t *labels, float weight, float *loss, float *dz)
{
    loss_args_t a = { .batch = batch, .classes = classes, .z = z, .labels = labels,
                      .weight = weight, .loss = loss, .dz = dz };
    LAUNCH(s, xent_k, a);
}

/* ---- layer norm ---------------------------------------------------------- */

typedef struct {
    int batch, dim;
    float eps;
    const float *x, *gamma, *beta, *dy;
    float *y, *mean, *rstd, *dx, *dgamma, *dbeta;
    const float *cmean, *crstd;
} layernorm_args_t;

static erase_status_t layernorm_fwd_k(const void *p)
{
    const layernorm_args_t *a = p;
    erase_k_layernorm_forward_f32(a->batch, a->dim, a->eps, a->x, a->gamma, a->beta, a->y,
                                  a->mean, a->rstd);
    return ERASE_OK;
}

static erase_status_t layernorm_bwd_k(const void *p)
{
    const layernorm_args_t *a = p;
    erase_k_layernorm_backward_f32(a->batch, a->dim, a->x, a->gamma, a->cmean, a->crstd, a->dy,
                                   a->dx, a->dgamma, a->dbeta);
    return ERASE_OK;
}

static erase_status_t cpu_layernorm_forward(erase_stream_t *s, int batch, int dim, float eps,
                                       const float *x, const float *gamma, const float *beta,
                                       float *y, float *mean, float *rstd)
{
    layernorm_args_t a = { .batch = batch, .dim = dim, .eps = eps, .x = x, .gamma = gamma,
                           .beta = beta, .y = y, .mean = mean, .rstd = rstd };
    LAUNCH(s, layernorm_fwd_k, a);
}

static erase_status_t cpu_layernorm_backward(erase_stream_t *s, int batch, int dim, const float *x,
                                        const float *gamma, const float *mean, const float *rstd,
                                        const float *dy, float *dx, float *dgamma, float *dbeta)
{
    layernorm_args_t a = { .batch = batch, .dim = dim, .x = x, .gamma = gamma, .cmean = mean,
                           .crstd = rstd, .dy = dy, .dx = dx, .dgamma = dgamma, .dbeta = dbeta };
    LAUNCH(s, layernorm_bwd_k, a);
}

/* The CPU table of lib/ops/ops_impl.h (optimizer, sparse and shard
 * launchers from optim_cpu.c, sparse_cpu.c, shard_cpu.c and
 * transformer_cpu.c). */
const erase_ops_impl_t erase_ops_cpu = {
    .name = "cpu",
    .linear_forward = cpu_linear_forward,
    .linear_backward = cpu_linear_backward,
    .relu_forward = cpu_relu_forward,
    .relu_backward = cpu_relu_backward,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .dropout = cpu_dropout,
    .concat_forward = cpu_concat_forward,
    .concat_backward = cpu_concat_backward,
    .embedding_forward = cpu_embedding_forward,
    .embedding_backward = cpu_embedding_backward,
    .embedding_pool = cpu_embedding_pool,
    .interaction_forward = cpu_interaction_forward,
    .interaction_backward = cpu_interaction_backward,
    .bce_with_logits = cpu_bce_with_logits,
    .softmax_xent = cpu_softmax_xent,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .gelu_tanh_forward = cpu_gelu_tanh_forward,
    .gelu_tanh_backward = cpu_gelu_tanh_backward,
    .token_embedding_forward = erase_cpu_token_embedding_forward,
    .token_embedding_backward = erase_cpu_token_embedding_backward,
    .attention_forward = erase_cpu_attention_forward,
    .attention_backward = erase_cpu_attention_backward,
    .attention_decode = erase_cpu_attention_decode,
    .rmsnorm_forward = erase_cpu_rmsnorm_forward,
    .rmsnorm_backward = erase_cpu_rmsnorm_backward,
    .rotary = erase_cpu_rotary,
    .cross_forward = erase_cpu_cross_forward,
    .cross_backward = erase_cpu_cross_backward,
    .relu2_forward = erase_cpu_relu2_forward,
    .relu2_backward = erase_cpu_relu2_backward,
    .softcap_forward = erase_cpu_softcap_forward,
    .softcap_backward = erase_cpu_softcap_backward,
    .gqa_attention_forward = erase_cpu_gqa_attention_forward,
    .gqa_attention_backward = erase_cpu_gqa_attention_backward,
    .gqa_attention_decode = erase_cpu_gqa_attention_decode,
    .axpy = cpu_axpy,
    .sparse_pack = erase_cpu_sparse_pack,
    .sparse_merge = erase_cpu_sparse_merge,
    .shard_route = erase_cpu_shard_route,
    .gather_rows = erase_cpu_gather_rows,
    .sparse_split = erase_cpu_sparse_split,
    .optim_clock_advance = erase_cpu_optim_clock_advance,
    .check_finite = erase_cpu_check_finite,
    .sgd_update = erase_cpu_sgd_update,
    .adamw_update = erase_cpu_adamw_update,
    .muon_update = erase_cpu_muon_update,
    .rowwise_adagrad_update = erase_cpu_rowwise_adagrad_update,
    .sparse_sgd_update = erase_cpu_sparse_sgd_update,
    .sum_squares = erase_cpu_sum_squares,
    .clip_by_norm = erase_cpu_clip_by_norm,
};

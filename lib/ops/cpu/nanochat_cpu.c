/*
 * The nanochat model's ops of lib/ops/ops.h on the CPU backend
 * (parameter-free RMSNorm, rotary embedding, ReLU squared, logit softcap,
 * grouped-query attention): single-precision loops launched on the
 * stream with a copy of their arguments; the attention runs the GQA
 * kernels of attention_impl.h. Shapes were validated by lib/ops/ops.c.
 */
#include "lib/ops/cpu/ops_cpu.h"

#include "lib/core/simd.h"
#include "lib/ops/cpu/kernels.h"

#include <math.h>

/* ---- RMSNorm ------------------------------------------------------------------ */

typedef struct {
    int rows, dim;
    float eps;
    const float *x, *crstd, *dy;
    float *y, *rstd, *dx;
} rmsnorm_args_t;

/* Rows [begin, end) of the forward (each row on its own: the split over
 * threads changes no value). */
static void rmsnorm_fwd_rows(void *p, size_t begin, size_t end)
{
    const rmsnorm_args_t *a = p;
    for (size_t r = begin; r < end; r++) {
        const float *x = a->x + (size_t)r * a->dim;
        float *y = a->y + (size_t)r * a->dim;
        double ss = 0;
        for (int i = 0; i < a->dim; i++)
            ss += (double)x[i] * x[i];
        float rstd = (float)(1.0 / sqrt(ss / a->dim + a->eps));
        a->rstd[r] = rstd;
        for (int i = 0; i < a->dim; i++)
            y[i] = x[i] * rstd;
    }
}

static void rmsnorm_bwd_rows(void *p, size_t begin, size_t end)
{
    const rmsnorm_args_t *a = p;
    for (size_t r = begin; r < end; r++) {
        const float *x = a->x + (size_t)r * a->dim, *dy = a->dy + (size_t)r * a->dim;
        float *dx = a->dx + (size_t)r * a->dim;
        double rstd = a->crstd[r], dot = 0;
        for (int i = 0; i < a->dim; i++)
            dot += (double)dy[i] * x[i] * rstd;
        double m = dot / a->dim;
        for (int i = 0; i < a->dim; i++)
            dx[i] = (float)(rstd * (dy[i] - x[i] * rstd * m));
    }
}

/* Rows split over the stream's threads (erase_cpu_parallel), about
 * ERASE_CPU_PARALLEL_ELEMENTS elements a part. */
static erase_status_t rmsnorm_fwd_k(const void *p)
{
    rmsnorm_args_t a = *(const rmsnorm_args_t *)p;
    erase_cpu_parallel((size_t)a.rows, ERASE_CPU_PARALLEL_ELEMENTS / (size_t)a.dim + 1, rmsnorm_fwd_rows, &a);
    return ERASE_OK;
}

static erase_status_t rmsnorm_bwd_k(const void *p)
{
    rmsnorm_args_t a = *(const rmsnorm_args_t *)p;
    erase_cpu_parallel((size_t)a.rows, ERASE_CPU_PARALLEL_ELEMENTS / (size_t)a.dim + 1, rmsnorm_bwd_rows, &a);
    return ERASE_OK;
}

erase_status_t erase_cpu_rmsnorm_forward(erase_stream_t *s, int rows, int dim, float eps, const float *x, float *y,
                                          float *rstd)
{
    rmsnorm_args_t a = { .rows = rows, .dim = dim, .eps = eps, .x = x, .y = y, .rstd = rstd };
    LAUNCH(s, rmsnorm_fwd_k, a);
}

erase_status_t erase_cpu_rmsnorm_backward(erase_stream_t *s, int rows, int dim, const float *x, const float *rstd,
                                           const float *dy, float *dx)
{
    rmsnorm_args_t a = { .rows = rows, .dim = dim, .x = x, .crstd = rstd, .dy = dy, .dx = dx };
    LAUNCH(s, rmsnorm_bwd_k, a);
}

/* ---- rotary embedding ----------------------------------------------------------- */

typedef struct {
    int batch, T, t0, heads, hd, inverse;
    float base;
    const float *x;
    float *y;
} rotary_args_t;

/* Positions [begin, end) (each on its own: the split over threads
 * changes no value). */
static void rotary_positions(void *p, size_t begin, size_t end)
{
    const rotary_args_t *a = p;
    const int d = a->hd / 2;
    const float sign = a->inverse ? -1.0f : 1.0f;
    for (int t = (int)begin; t < (int)end; t++)
        for (int i = 0; i < d; i++) {
            /* torch's float arithmetic: inv_freq = 1 / base^(2i/hd), angle = pos * inv_freq;
             * the power in double, rounded once to float, so that the CUDA kernel
             * (lib/ops/cuda/nanochat.cu), whose powf may differ from glibc's by
             * an ulp, computes the same bits: an ulp of inv_freq is ~3e-5 rad at
             * position 1000 */
            float inv_freq = 1.0f / (float)pow((double)a->base, (double)((float)(2 * i) / (float)a->hd));
            float angle = (float)(a->t0 + t) * inv_freq;
            float c = cosf(angle), sn = sign * sinf(angle);
            for (int b = 0; b < a->batch; b++)
                for (int h = 0; h < a->heads; h++) {
                    size_t off = (((size_t)b * a->T + t) * a->heads + h) * a->hd;
                    float x1 = a->x[off + i], x2 = a->x[off + i + d];
                    a->y[off + i] = x1 * c + x2 * sn;
                    a->y[off + i + d] = -x1 * sn + x2 * c;
                }
        }
}

/* Positions split over the stream's threads (erase_cpu_parallel). */
static erase_status_t rotary_k(const void *p)
{
    rotary_args_t a = *(const rotary_args_t *)p;
    size_t per = (size_t)a.batch * (size_t)a.heads * (size_t)a.hd;
    erase_cpu_parallel((size_t)a.T, ERASE_CPU_PARALLEL_ELEMENTS / per + 1, rotary_positions, &a);
    return ERASE_OK;
}

erase_status_t erase_cpu_rotary(erase_stream_t *s, int batch, int T, int t0, int heads, int hd, float base,
                                 int inverse, const float *x, float *y)
{
    rotary_args_t a = { .batch = batch, .T = T, .t0 = t0, .heads = heads, .hd = hd, .inverse = inverse,
                        .base = base, .x = x, .y = y };
    LAUNCH(s, rotary_k, a);
}

/* ---- ReLU squared and softcap ------------------------------------------------------ */

typedef struct {
    size_t n;
    float cap;
    const float *x, *dy;
    float *y, *dx;
} pointwise_args_t;

/* Branch-free (a sign test per element mispredicts half the time) and
 * vectorised (the clones, the pointers in locals); the values as before. */
ERASE_SIMD_CLONES static void relu2_fwd_range(void *p, size_t begin, size_t end)
{
    const pointwise_args_t *a = p;
    const float *x = a->x;
    float *y = a->y;
    for (size_t i = begin; i < end; i++) {
        float r = x[i] > 0.0f ? x[i] : 0.0f;
        y[i] = r * r;
    }
}

ERASE_SIMD_CLONES static void relu2_bwd_range(void *p, size_t begin, size_t end)
{
    const pointwise_args_t *a = p;
    const float *x = a->x, *dy = a->dy;
    float *dx = a->dx;
    for (size_t i = begin; i < end; i++)
        dx[i] = dy[i] * 2.0f * (x[i] > 0.0f ? x[i] : 0.0f);
}

/* Element-wise: split over the stream's threads (erase_cpu_parallel). */
static erase_status_t relu2_fwd_k(const void *p)
{
    pointwise_args_t a = *(const pointwise_args_t *)p;
    erase_cpu_parallel(a.n, ERASE_CPU_PARALLEL_ELEMENTS, relu2_fwd_range, &a);
    return ERASE_OK;
}

static erase_status_t relu2_bwd_k(const void *p)
{
    pointwise_args_t a = *(const pointwise_args_t *)p;
    erase_cpu_parallel(a.n, ERASE_CPU_PARALLEL_ELEMENTS, relu2_bwd_range, &a);
    return ERASE_OK;
}

static erase_status_t softcap_fwd_k(const void *p)
{
    const pointwise_args_t *a = p;
    for (size_t i = 0; i < a->n; i++)
        a->y[i] = a->cap * tanhf(a->x[i] / a->cap);
    return ERASE_OK;
}

/* x holds the forward's output y */
static erase_status_t softcap_bwd_k(const void *p)
{
    const pointwise_args_t *a = p;
    for (size_t i = 0; i < a->n; i++) {
        float u = a->x[i] / a->cap;
        a->dx[i] = a->dy[i] * (1.0f - u * u);
    }
    return ERASE_OK;
}

erase_status_t erase_cpu_relu2_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    pointwise_args_t a = { .n = n, .x = x, .y = y };
    LAUNCH(s, relu2_fwd_k, a);
}

erase_status_t erase_cpu_relu2_backward(erase_stream_t *s, size_t n, const float *x, const float *dy, float *dx)
{
    pointwise_args_t a = { .n = n, .x = x, .dy = dy, .dx = dx };
    LAUNCH(s, relu2_bwd_k, a);
}

erase_status_t erase_cpu_softcap_forward(erase_stream_t *s, size_t n, float cap, const float *x, float *y)
{
    pointwise_args_t a = { .n = n, .cap = cap, .x = x, .y = y };
    LAUNCH(s, softcap_fwd_k, a);
}

erase_status_t erase_cpu_softcap_backward(erase_stream_t *s, size_t n, float cap, const float *y, const float *dy,
                                           float *dx)
{
    pointwise_args_t a = { .n = n, .cap = cap, .x = y, .dy = dy, .dx = dx };
    LAUNCH(s, softcap_bwd_k, a);
}

/* ---- grouped-query attention ---------------------------------------------------------- */

typedef struct {
    int batch, T, heads, kv_heads, hd, t;
    const float *q, *k, *v, *catt, *dout;
    float *att, *out, *scratch, *dq, *dk, *dv, *kcache, *vcache;
} gqa_args_t;

static erase_status_t gqa_fwd_k(const void *p)
{
    const gqa_args_t *a = p;
    int ldq = a->heads * a->hd, ldkv = a->kv_heads * a->hd;
    erase_k_gqa_attention_forward_f32(a->batch, a->T, a->heads, a->kv_heads, a->hd, a->q, ldq, a->k, ldkv, a->v,
                                      ldkv, a->att, a->out);
    return ERASE_OK;
}

static erase_status_t gqa_bwd_k(const void *p)
{
    const gqa_args_t *a = p;
    int ldq = a->heads * a->hd, ldkv = a->kv_heads * a->hd;
    erase_k_gqa_attention_backward_f32(a->batch, a->T, a->heads, a->kv_heads, a->hd, a->q, ldq, a->k, ldkv, a->v,
                                       ldkv, a->catt, a->dout, a->scratch, a->dq, a->dk, a->dv);
    return ERASE_OK;
}

erase_status_t erase_cpu_gqa_attention_forward(erase_stream_t *s, int batch, int T, int heads, int kv_heads,
                                                int hd, const float *q, const float *k, const float *v, float *att,
                                                float *out)
{
    gqa_args_t a = { .batch = batch, .T = T, .heads = heads, .kv_heads = kv_heads, .hd = hd, .q = q, .k = k,
                     .v = v, .att = att, .out = out };
    LAUNCH(s, gqa_fwd_k, a);
}

erase_status_t erase_cpu_gqa_attention_backward(erase_stream_t *s, int batch, int T, int heads, int kv_heads,
                                                 int hd, const float *q, const float *k, const float *v,
                                                 const float *att, const float *dout, float *scratch, float *dq,
                                                 float *dk, float *dv)
{
    gqa_args_t a = { .batch = batch, .T = T, .heads = heads, .kv_heads = kv_heads, .hd = hd, .q = q, .k = k,
                     .v = v, .catt = att, .dout = dout, .scratch = scratch, .dq = dq, .dk = dk, .dv = dv };
    LAUNCH(s, gqa_bwd_k, a);
}

/* T holds cache_len. */
static erase_status_t gqa_decode_k(const void *p)
{
    const gqa_args_t *a = p;
    erase_k_gqa_attention_decode_f32(a->batch, a->t, a->T, a->heads, a->kv_heads, a->hd, a->q, a->heads * a->hd,
                                     a->k, a->v, a->kv_heads * a->hd, a->kcache, a->vcache, a->scratch, a->out);
    return ERASE_OK;
}

erase_status_t erase_cpu_gqa_attention_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads,
                                              int kv_heads, int hd, const float *q, const float *k, const float *v,
                                              float *kcache, float *vcache, float *scratch, float *out)
{
    gqa_args_t a = { .batch = batch, .T = cache_len, .heads = heads, .kv_heads = kv_heads, .hd = hd, .t = t,
                     .q = q, .k = k, .v = v, .kcache = kcache, .vcache = vcache, .scratch = scratch, .out = out };
    LAUNCH(s, gqa_decode_k, a);
}

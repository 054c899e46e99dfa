/* Optimizer ops of lib/ops/ops.h on the CPU backend (single precision);
 * arguments validated by lib/ops/ops.c. */
#include "lib/ops/cpu/ops_cpu.h"

#include "lib/core/simd.h"

#include <math.h>

typedef struct {
    size_t n;
    int dim;
    float *w, *m, *v, *acc;
    const float *g;
    const uint32_t *rows;
    const int *count;
    erase_optim_clock_t *clock;
    const erase_optim_clock_t *cclock;
    erase_lr_schedule_t schedule;
    float lr_mult, momentum, beta1, beta2, eps, wd;
    int code;
    float *acc1;              /* sum_squares: the one float it adds to */
    const float *sumsq;       /* clip_by_norm */
    float max_norm;
} optim_args_t;

static erase_status_t clock_k(const void *p)
{
    const optim_args_t *a = p;
    a->clock->step += 1;
    a->clock->lr = (float)erase_lr_at(&a->schedule, a->clock->step);
    a->clock->nonfinite = 0;
    return ERASE_OK;
}

ERASE_SIMD_CLONES static erase_status_t finite_k(const void *p)
{
    const optim_args_t *a = p;
    size_t n = a->count ? (size_t)*a->count * a->n : a->n;
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= !isfinite(a->g[i]);
    if (bad && a->clock->nonfinite == 0)
        a->clock->nonfinite = a->code;
    return ERASE_OK;
}

ERASE_SIMD_CLONES static erase_status_t sgd_k(const void *p)
{
    const optim_args_t *a = p;
    if (a->cclock->nonfinite)
        return ERASE_OK; /* a non-finite gradient somewhere: the step is skipped */
    float lr = a->cclock->lr * a->lr_mult;
    int first = a->cclock->step <= 1;
    for (size_t i = 0; i < a->n; i++) {
        float g = a->g[i] + a->wd * a->w[i];
        if (a->m) {
            a->m[i] = first ? g : a->momentum * a->m[i] + g;
            g = a->m[i];
        }
        a->w[i] -= lr * g;
    }
    return ERASE_OK;
}

typedef struct {
    const optim_args_t *a;
    float step_size, bc2_sqrt, decay;
} adamw_range_t;

ERASE_SIMD_CLONES static void adamw_range(void *p, size_t begin, size_t end)
{
    const adamw_range_t *r = p;
    const optim_args_t *a = r->a;
    float *w = a->w, *m = a->m, *v = a->v;
    const float *gr = a->g;
    const float beta1 = a->beta1, beta2 = a->beta2, eps = a->eps;
    const float step_size = r->step_size, bc2_sqrt = r->bc2_sqrt, decay = r->decay;
    for (size_t i = begin; i < end; i++) {
        float g = gr[i];
        w[i] *= decay;
        m[i] = beta1 * m[i] + (1.0f - beta1) * g;
        v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
        w[i] -= step_size * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
    }
}

/* Element-wise: split over the stream's threads (erase_cpu_parallel). */
static erase_status_t adamw_k(const void *p)
{
    const optim_args_t *a = p;
    if (a->cclock->nonfinite)
        return ERASE_OK; /* a non-finite gradient somewhere: the step is skipped */
    float lr = a->cclock->lr * a->lr_mult;
    double t = (double)a->cclock->step;
    float bc1 = (float)(1.0 - pow(a->beta1, t)), bc2 = (float)(1.0 - pow(a->beta2, t));
    adamw_range_t r = { .a = a, .step_size = lr / bc1, .bc2_sqrt = sqrtf(bc2), .decay = 1.0f - lr * a->wd };
    erase_cpu_parallel(a->n, ERASE_CPU_PARALLEL_ELEMENTS, adamw_range, &r);
    return ERASE_OK;
}

typedef struct {
    int64_t rows, cols;
    float *w, *buf, *work;
    const float *g;
    const erase_optim_clock_t *clock;
    float lr_mult, momentum;
    int64_t momentum_warmup;
} muon_args_t;

/* torch.lerp(a, b, t): a + t (b - a) for t < 0.5, else b - (b - a)(1 - t). */
static inline float lerp(float a, float b, float t)
{
    return t < 0.5f ? a + t * (b - a) : b - (b - a) * (1.0f - t);
}

/* erase_muon_update (lib/ops/ops.h). work: X [k, n], X2 [k, n], A [k, k],
 * B [k, k]; X holds the update oriented wide (u, or u^T when rows > cols). */
ERASE_SIMD_CLONES static erase_status_t muon_k(const void *p)
{
    const muon_args_t *a = p;
    if (a->clock->nonfinite)
        return ERASE_OK; /* a non-finite gradient somewhere: the step is skipped */
    const int tall = a->rows > a->cols;
    const int k = (int)(tall ? a->cols : a->rows), n = (int)(tall ? a->rows : a->cols);
    const size_t kn = (size_t)k * n;
    float *x = a->work, *x2 = x + kn, *am = x2 + kn, *bm = am + (size_t)k * k;
    const float mu = erase_muon_momentum_at(a->momentum, a->momentum_warmup, a->clock->step);
    for (size_t i = 0; i < kn; i++) {
        a->buf[i] = lerp(a->buf[i], a->g[i], 1.0f - mu);
        float u = lerp(a->g[i], a->buf[i], mu);
        size_t r = i / (size_t)a->cols, c = i % (size_t)a->cols;
        x[tall ? c * (size_t)n + r : i] = u;
    }
    double sq = 0;
    for (size_t i = 0; i < kn; i++)
        sq += (double)x[i] * x[i];
    float denom = (float)sqrt(sq) + 1e-7f;
    for (size_t i = 0; i < kn; i++)
        x[i] /= denom;
    for (int step = 0; step < ERASE_MUON_NS_STEPS; step++) {
        /* A = X X^T; B = b A + c A A; X2 = a X + B X */
        erase_cpu_gemm_f32(0, 1, k, k, n, 1.0f, x, n, x, n, 0.0f, am, k);
        for (size_t i = 0; i < (size_t)k * k; i++)
            bm[i] = ERASE_MUON_NS_B * am[i];
        erase_cpu_gemm_f32(0, 0, k, k, k, ERASE_MUON_NS_C, am, k, am, k, 1.0f, bm, k);
        for (size_t i = 0; i < kn; i++)
            x2[i] = ERASE_MUON_NS_A * x[i];
        erase_cpu_gemm_f32(0, 0, k, n, k, 1.0f, bm, k, x, n, 1.0f, x2, n);
        float *t = x;
        x = x2;
        x2 = t;
    }
    float aspect = (float)a->rows / (float)a->cols;
    float step = a->clock->lr * a->lr_mult * sqrtf(aspect > 1.0f ? aspect : 1.0f);
    for (size_t i = 0; i < kn; i++) {
        size_t r = i / (size_t)a->cols, c = i % (size_t)a->cols;
        a->w[i] -= step * x[tall ? c * (size_t)n + r : i];
    }
    return ERASE_OK;
}

ERASE_SIMD_CLONES static erase_status_t adagrad_k(const void *p)
{
    const optim_args_t *a = p;
    if (a->cclock->nonfinite)
        return ERASE_OK; /* a non-finite gradient somewhere: the step is skipped */
    float lr = a->cclock->lr * a->lr_mult;
    for (int i = 0; i < *a->count; i++) {
        const float *g = a->g + (size_t)i * a->dim;
        float *w = a->w + (size_t)a->rows[i] * a->dim;
        float sq = 0;
        for (int d = 0; d < a->dim; d++)
            sq += g[d] * g[d];
        a->acc[a->rows[i]] += sq / (float)a->dim;
        float scale = lr / (sqrtf(a->acc[a->rows[i]]) + a->eps);
        for (int d = 0; d < a->dim; d++)
            w[d] -= scale * g[d];
    }
    return ERASE_OK;
}

ERASE_SIMD_CLONES static erase_status_t sparse_sgd_k(const void *p)
{
    const optim_args_t *a = p;
    if (a->cclock->nonfinite)
        return ERASE_OK; /* a non-finite gradient somewhere: the step is skipped */
    float lr = a->cclock->lr * a->lr_mult;
    for (int i = 0; i < *a->count; i++) {
        const float *g = a->g + (size_t)i * a->dim;
        float *w = a->w + (size_t)a->rows[i] * a->dim;
        for (int d = 0; d < a->dim; d++)
            w[d] -= lr * g[d];
    }
    return ERASE_OK;
}

/* *acc1 += sum of g[i]^2: 8 double lanes (lane i % 8), then the lanes in
 * order, added to *acc1 in double and rounded once: a fixed order, so equal
 * inputs give equal sums, on any stream and in every schedule. */
ERASE_SIMD_CLONES static erase_status_t sum_squares_k(const void *p)
{
    const optim_args_t *a = p;
    double lane[8] = { 0 };
    size_t i = 0;
    for (; i + 8 <= a->n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += (double)a->g[i + j] * a->g[i + j];
    for (int j = 0; i < a->n; i++, j++)
        lane[j] += (double)a->g[i] * a->g[i];
    double sum = *a->acc1;
    for (int j = 0; j < 8; j++)
        sum += lane[j];
    *a->acc1 = (float)sum;
    return ERASE_OK;
}

/* torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when
 * that is below 1 (a NaN norm leaves x as it is: the step is skipped by
 * the finiteness check). */
ERASE_SIMD_CLONES static erase_status_t clip_by_norm_k(const void *p)
{
    const optim_args_t *a = p;
    float coef = a->max_norm / (sqrtf(*a->sumsq) + 1e-6f);
    if (!(coef < 1.0f))
        return ERASE_OK;
    for (size_t i = 0; i < a->n; i++)
        a->w[i] *= coef;
    return ERASE_OK;
}

erase_status_t erase_cpu_sum_squares(erase_stream_t *s, size_t n, const float *x, float *acc)
{
    optim_args_t a = { .n = n, .g = x, .acc1 = acc };
    LAUNCH(s, sum_squares_k, a);
}

erase_status_t erase_cpu_clip_by_norm(erase_stream_t *s, size_t n, float *x, const float *sumsq,
                                      float max_norm)
{
    optim_args_t a = { .n = n, .w = x, .sumsq = sumsq, .max_norm = max_norm };
    LAUNCH(s, clip_by_norm_k, a);
}

erase_status_t erase_cpu_optim_clock_advance(erase_stream_t *s, erase_optim_clock_t *clock,
                                         const erase_lr_schedule_t *schedule)
{
    optim_args_t a = { .clock = clock, .schedule = *schedule };
    LAUNCH(s, clock_k, a);
}

erase_status_t erase_cpu_check_finite(erase_stream_t *s, const float *x, size_t n, const int *rows,
                                  int code, erase_optim_clock_t *clock)
{
    optim_args_t a = { .n = n, .g = x, .count = rows, .clock = clock, .code = code };
    LAUNCH(s, finite_k, a);
}

erase_status_t erase_cpu_sgd_update(erase_stream_t *s, size_t n, float *w, const float *g, float *buf,
                                const erase_optim_clock_t *clock, float lr_mult, float momentum,
                                float weight_decay)
{
    optim_args_t a = { .n = n, .w = w, .g = g, .m = momentum != 0.0f ? buf : NULL,
                       .cclock = clock, .lr_mult = lr_mult, .momentum = momentum,
                       .wd = weight_decay };
    LAUNCH(s, sgd_k, a);
}

erase_status_t erase_cpu_adamw_update(erase_stream_t *s, size_t n, float *w, const float *g, float *m,
                                  float *v, const erase_optim_clock_t *clock, float lr_mult,
                                  float beta1, float beta2, float eps, float weight_decay)
{
    optim_args_t a = { .n = n, .w = w, .g = g, .m = m, .v = v, .cclock = clock,
                       .lr_mult = lr_mult, .beta1 = beta1, .beta2 = beta2, .eps = eps,
                       .wd = weight_decay };
    LAUNCH(s, adamw_k, a);
}

erase_status_t erase_cpu_muon_update(erase_stream_t *s, int64_t rows, int64_t cols, float *w,
                                     const float *g, float *buf, float *work,
                                     const erase_optim_clock_t *clock, float lr_mult, float momentum,
                                     int64_t momentum_warmup)
{
    muon_args_t a = { .rows = rows, .cols = cols, .w = w, .g = g, .buf = buf, .work = work,
                      .clock = clock, .lr_mult = lr_mult, .momentum = momentum,
                      .momentum_warmup = momentum_warmup };
    LAUNCH(s, muon_k, a);
}

erase_status_t erase_cpu_rowwise_adagrad_update(erase_stream_t *s, int dim, float *table, float *acc,
                                            const uint32_t *grad_rows, const float *grad_values,
                                            const int *count, const erase_optim_clock_t *clock,
                                            float lr_mult, float eps)
{
    optim_args_t a = { .dim = dim, .w = table, .acc = acc, .rows = grad_rows, .g = grad_values,
                       .count = count, .cclock = clock, .lr_mult = lr_mult, .eps = eps };
    LAUNCH(s, adagrad_k, a);
}

erase_status_t erase_cpu_sparse_sgd_update(erase_stream_t *s, int dim, float *table,
                                       const uint32_t *grad_rows, const float *grad_values,
                                       const int *count, const erase_optim_clock_t *clock,
                                       float lr_mult)
{
    optim_args_t a = { .dim = dim, .w = table, .rows = grad_rows, .g = grad_values,
                       .count = count, .cclock = clock, .lr_mult = lr_mult };
    LAUNCH(s, sparse_sgd_k, a);
}

#include "apps/bench/bench.h"

#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/train_step.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

int bench_parse_device(const char *text, erase_device_kind_t *kind)
{
    if (!strcmp(text, "cpu"))
        *kind = ERASE_DEVICE_CPU;
    else if (!strcmp(text, "cuda"))
        *kind = ERASE_DEVICE_CUDA;
    else
        return -1;
    return 0;
}

erase_device_t *bench_open_device(const char *command, const erase_device_options_t *o, int describe)
{
    erase_device_t *dev;
    if (erase_device_open(o, &dev) != ERASE_OK) {
        fprintf(stderr, "erase-bench %s: --device %s%s%s: %s\n", command, o->kind == ERASE_DEVICE_CUDA ? "cuda" : "cpu",
                o->gemm != ERASE_GEMM_FP32 ? " --gemm " : "", o->gemm != ERASE_GEMM_FP32 ? erase_gemm_precision_name(o->gemm) : "",
                erase_error_reason());
        return NULL;
    }
    if (describe) {
        char text[512];
        erase_device_describe(dev, text, sizeof text);
        printf("# device: %s\n", text);
    }
    return dev;
}

float *bench_device_floats(erase_device_t *dev, const float *values, size_t n)
{
    float *ptr;
    ERASE_MUST(erase_malloc(dev, n * sizeof(float), (void **)&ptr));
    ERASE_MUST(erase_memcpy_sync(dev, ptr, values, n * sizeof(float)));
    return ptr;
}

#define FMA_ITERS 4000000L /* iterations of 12 independent vector FMAs */

/* Twelve accumulators in registers (twelve > FMA latency x FMA ports on
 * current x86 cores), so the loop is bound by FMA throughput alone. */
#define FMA12(fma)                                                         \
    do {                                                                   \
        a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c);       \
        a3 = fma(a3, m, c); a4 = fma(a4, m, c); a5 = fma(a5, m, c);       \
        a6 = fma(a6, m, c); a7 = fma(a7, m, c); a8 = fma(a8, m, c);       \
        a9 = fma(a9, m, c); a10 = fma(a10, m, c); a11 = fma(a11, m, c);   \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static double fma_avx512(void)
{
    __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    /* distinct starting values, or the compiler merges identical chains */
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f),
           a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f),
           a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f),
           a9 = _mm512_set1_ps(9.0f), a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    for (long it = 0; it < FMA_ITERS; it++)
        FMA12(_mm512_fmadd_ps);
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    if (_mm512_reduce_add_ps(s) == 12345.0f) /* keep the result alive */
        printf(" ");
    return (double)FMA_ITERS * 12 * 16 * 2;
}

__attribute__((target("avx2,fma"))) static double fma_avx2(void)
{
    __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(1.0f), a2 = _mm256_set1_ps(2.0f),
           a3 = _mm256_set1_ps(3.0f), a4 = _mm256_set1_ps(4.0f), a5 = _mm256_set1_ps(5.0f),
           a6 = _mm256_set1_ps(6.0f), a7 = _mm256_set1_ps(7.0f), a8 = _mm256_set1_ps(8.0f),
           a9 = _mm256_set1_ps(9.0f), a10 = _mm256_set1_ps(10.0f), a11 = _mm256_set1_ps(11.0f);
    for (long it = 0; it < FMA_ITERS; it++)
        FMA12(_mm256_fmadd_ps);
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float buf[8];
    _mm256_storeu_ps(buf, s);
    if (buf[0] == 12345.0f)
        printf(" ");
    return (double)FMA_ITERS * 12 * 8 * 2;
}
#endif

/* One thread of bench_fma_peak_gflops: its FMA loop, its start and end. */
typedef struct {
    double (*loop)(void); /* returns the FLOPs it did */
    double flop, start, end;
} fma_thread_t;

static void *fma_thread(void *p)
{
    fma_thread_t *t = p;
    t->start = erase_now_s();
    t->flop = t->loop();
    t->end = erase_now_s();
    return NULL;
}

double bench_fma_peak_gflops(int threads, const char **isa)
{
    double (*loop)(void) = NULL;
    *isa = "unknown ISA (no peak)";
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *isa = "AVX-512 FMA";
        loop = fma_avx512;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *isa = "AVX2 FMA";
        loop = fma_avx2;
    }
#endif
    if (!loop || threads < 1)
        return 0.0;
    fma_thread_t t[64];
    pthread_t id[64];
    int n = threads < 64 ? threads : 64, started = 0;
    for (int i = 0; i < n; i++) {
        t[i] = (fma_thread_t){ .loop = loop };
        if (i > 0 && pthread_create(&id[i], NULL, fma_thread, &t[i]) != 0)
            break; /* fewer threads: a smaller peak, never a larger one */
        started = i + 1;
    }
    fma_thread(&t[0]);
    double flop = t[0].flop, first = t[0].start, last = t[0].end;
    for (int i = 1; i < started; i++) {
        pthread_join(id[i], NULL);
        flop += t[i].flop;
        first = t[i].start < first ? t[i].start : first;
        last = t[i].end > last ? t[i].end : last;
    }
    return last > first ? flop / (last - first) / 1e9 : 0.0;
}

double bench_seconds(void (*fn)(void *), void *arg, int reps)
{
    double t0 = erase_now_s();
    for (int r = 0; r < reps; r++)
        fn(arg);
    return erase_now_s() - t0;
}

bench_spread_t bench_spread(double *x, size_t n)
{
    bench_spread_t s = { 0, 0, 0 };
    if (n == 0)
        return s;
    s.median = erase_quantile(x, n, 0.5); /* sorted now */
    s.min = x[0];
    s.max = x[n - 1];
    return s;
}

int bench_spread_warning(bench_spread_t s, const char *what, const char *unit, char *buf, size_t size)
{
    double spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
    if (size)
        buf[0] = '\0';
    if (!(spread > BENCH_SPREAD_LIMIT))
        return 0;
    snprintf(buf, size, "warning: %s: samples spread %.0f%% (%.3g .. %.3g %s): the machine was busy; "
             "figures are not reliable", what, 100 * spread, s.min, s.max, unit);
    return 1;
}

void bench_spread_check(bench_spread_t s, const char *what, const char *unit)
{
    char text[512];
    if (bench_spread_warning(s, what, unit, text, sizeof text))
        printf("# %s\n", text);
}

int bench_parse_list(const char *text, int *out, int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > 1 << 20 || n == max)
            return -1;
        out[n++] = (int)v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        p = end;
    }
    return n;
}

int bench_parse_number(const char *text, int positive, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < 0 || (positive && v == 0))
        return -1;
    *out = v;
    return 0;
}

int bench_parse_option_number(const bench_number_t *n, const char *text)
{
    double v;
    if (bench_parse_number(text, n->positive, &v) != 0 || (n->most > 0 && (v != floor(v) || v > n->most)))
        return -1;
    *n->v = v;
    return 0;
}

int bench_parse_ms_list(const char *text, int positive, double *out)
{
    char buf[1024];
    if (strlen(text) >= sizeof buf)
        return -1;
    strcpy(buf, text);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        double v;
        if (n == 64 || bench_parse_number(tok, positive, &v) != 0)
            return -1;
        out[n++] = v * 1e-3;
    }
    return n > 0 && text[strlen(text) - 1] != ',' && text[0] != ',' && !strstr(text, ",,") ? n : -1;
}

int bench_measure_blocks(const char *command, const erase_model_config_t *cfg_in, const uint32_t *cut_masks, int n,
                         int batch, int repeats, bench_block_times_t *bt)
{
    erase_device_options_t dopt = erase_device_options_default();
    dopt.blas_threads = 1;
    erase_device_t *dev = bench_open_device(command, &dopt, 1);
    if (!dev)
        return 1;
    erase_network_t *net[BENCH_MAX_NETS];
    erase_optimizer_t *opt[BENCH_MAX_NETS];
    erase_batch_t b[BENCH_MAX_NETS];
    erase_stream_t *s;
    erase_optim_config_t ocfg = erase_optim_config_default();
    ERASE_MUST(erase_stream_create(dev, &s));
    for (int i = 0; i < n; i++) {
        erase_model_config_t cfg = *cfg_in;
        cfg.cut_mask = cut_masks[i];
        if (erase_network_create(dev, &cfg, batch, &net[i]) != ERASE_OK) {
            fprintf(stderr, "erase-bench %s: %s: %s\n", command, bt[i].model, erase_error_reason());
            for (int j = 0; j < i; j++) {
                erase_batch_free_random(net[j], &b[j]);
                erase_optimizer_destroy(opt[j]);
                erase_network_destroy(net[j]);
            }
            erase_stream_destroy(s);
            erase_device_close(dev);
            return 1;
        }
        ERASE_MUST(erase_optimizer_create(net[i], &ocfg, &opt[i]));
        ERASE_MUST(erase_batch_random(net[i], batch, 7, &b[i]));
    }
    int B = erase_network_blocks(net[0]);
    size_t per = (size_t)3 * (size_t)B * (size_t)repeats; /* [what][block][repeat] of one network */
    double *x = calloc(per * (size_t)n, sizeof(double));
    if (!x)
        erase_fatal(__FILE__, __LINE__, "allocate the block times", ERASE_ERR_NOMEM);
    for (int r = -1; r < repeats; r++) /* r = -1: warm-up */
        for (int i = 0; i < n; i++) {
            double *xi = x + per * (size_t)i;
            for (int k = 0; k < B; k++) {
                double t0 = erase_now_s();
                ERASE_MUST(erase_network_forward_block(net[i], k, s, &b[i]));
                ERASE_MUST(erase_stream_synchronize(s));
                if (r >= 0)
                    xi[(0 * B + k) * repeats + r] = erase_now_s() - t0;
            }
            for (int k = B - 1; k >= 0; k--) {
                double t0 = erase_now_s();
                ERASE_MUST(erase_network_backward_block(net[i], k, s, &b[i]));
                ERASE_MUST(erase_stream_synchronize(s));
                if (r >= 0)
                    xi[(1 * B + k) * repeats + r] = erase_now_s() - t0;
            }
            ERASE_MUST(erase_optimizer_begin_step(opt[i], s));
            for (int k = 0; k < B; k++) {
                double t0 = erase_now_s();
                ERASE_MUST(erase_optimizer_update_block(opt[i], k, s));
                ERASE_MUST(erase_stream_synchronize(s));
                if (r >= 0)
                    xi[(2 * B + k) * repeats + r] = erase_now_s() - t0;
            }
        }
    for (int i = 0; i < n; i++) {
        double *xi = x + per * (size_t)i;
        bt[i].blocks = B;
        bt[i].batch = batch;
        bt[i].forward = calloc((size_t)B, sizeof(double));
        bt[i].backward = calloc((size_t)B, sizeof(double));
        bt[i].update = calloc((size_t)B, sizeof(double));
        bt[i].boundary_bytes = calloc((size_t)B, sizeof(double));
        if (!bt[i].forward || !bt[i].backward || !bt[i].update || !bt[i].boundary_bytes)
            erase_fatal(__FILE__, __LINE__, "allocate the block times", ERASE_ERR_NOMEM);
        for (int k = 0; k < B; k++) {
            bt[i].forward[k] = erase_quantile(xi + (0 * B + k) * repeats, (size_t)repeats, 0.5);
            bt[i].backward[k] = erase_quantile(xi + (1 * B + k) * repeats, (size_t)repeats, 0.5);
            bt[i].update[k] = erase_quantile(xi + (2 * B + k) * repeats, (size_t)repeats, 0.5);
            int width = 0;
            if (k >= 1)
                erase_network_body_output(net[i], k - 1, &width);
            bt[i].boundary_bytes[k] = (double)width * batch * sizeof(float);
        }
        erase_batch_free_random(net[i], &b[i]);
        erase_optimizer_destroy(opt[i]);
        erase_network_destroy(net[i]);
    }
    free(x);
    erase_stream_destroy(s);
    erase_device_close(dev);
    return 0;
}

void bench_block_times_free(bench_block_times_t *bt)
{
    free(bt->forward);
    free(bt->backward);
    free(bt->update);
    free(bt->boundary_bytes);
    bt->forward = bt->backward = bt->update = bt->boundary_bytes = NULL;
}

/* 2 B in out multiply-adds per GEMM: forward, weight gradient and (with
 * `dx`) input gradient. */
static double linear_flop(double batch, double in, double out, int dx)
{
    return 2 * batch * in * out * (dx ? 3 : 2);
}

double bench_block_gemm_flop(const erase_model_config_t *c, int batch, int b)
{
    if (c->kind == ERASE_MODEL_CTR) {
        /* a head where the next boundary is a cut, and on the last block (docs/models.md) */
        int head = b == c->ctr.subarchs || ((c->cut_mask >> (b + 1)) & 1);
        int interaction = c->ctr.embedding_dim + 27 * 26 / 2;
        if (b == 0) { /* bottom MLP (no input gradient for the features) and the input head */
            double f = 0;
            int in = ERASE_CTR_DENSE;
            for (int i = 0; i < c->ctr.bottom_layers; i++) {
                f += linear_flop(batch, in, c->ctr.bottom_mlp[i], i > 0);
                in = c->ctr.bottom_mlp[i];
            }
            return f + (head ? linear_flop(batch, interaction, 1, 1) : 0);
        }
        int in = b == 1 ? interaction : c->ctr.subarch_width, w = c->ctr.subarch_width;
        int cut = (c->cut_mask >> b) & 1;
        return linear_flop(batch, in, w, !cut) + linear_flop(batch, w, w, 1) +
               (head ? linear_flop(batch, w, 1, 1) : 0);
    }
    if (c->kind == ERASE_MODEL_MLP) {
        int in = b == 0 ? c->mlp.inputs : c->mlp.hidden[b - 1], h = c->mlp.hidden[b];
        int cut = b == 0 || ((c->cut_mask >> b) & 1);
        return linear_flop(batch, in, h, !cut) + linear_flop(batch, h, c->mlp.classes, 1);
    }
    return -1;
}

int bench_bad_option(const char *command, const char *name, const char *text, const char *what)
{
    fprintf(stderr, "erase-bench %s: --%s %s: expected %s\n", command, name, text, what);
    return 2;
}

double bench_step_gemm_flop(const erase_model_config_t *c, int batch)
{
    if (c->kind != ERASE_MODEL_DCN) {
        double f = 0;
        for (int b = 0; b < erase_model_config_blocks(c); b++) {
            double fb = bench_block_gemm_flop(c, batch, b);
            if (fb < 0)
                return -1;
            f += fb;
        }
        return f;
    }
    if (c->cut_mask)
        return -1;
    double f = 0, width = 27.0 * c->ctr.embedding_dim, r = c->dcn.cross_rank;
    int in = ERASE_CTR_DENSE;
    for (int i = 0; i < c->ctr.bottom_layers; i++) { /* the dense arch: no input gradient for the features */
        f += linear_flop(batch, in, c->ctr.bottom_mlp[i], i > 0);
        in = c->ctr.bottom_mlp[i];
    }
    for (int l = 0; l < c->dcn.cross_layers; l++) /* V then W (low rank), or the W x W kernel */
        f += r > 0 ? 2 * linear_flop(batch, width, r, 1) : linear_flop(batch, width, width, 1);
    double prev = width;
    for (int j = 0; j < c->dcn.top_layers; j++) {
        f += linear_flop(batch, prev, c->dcn.top_mlp[j], 1);
        prev = c->dcn.top_mlp[j];
    }
    return f;
}

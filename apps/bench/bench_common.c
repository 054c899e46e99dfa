#include "apps/bench/bench.h"

#include "lib/core/stats.h"
#include "lib/core/timer.h"

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
__attribute__((target("avx512f"))) static double peak_avx512(void)
{
    __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    /* distinct starting values, or the compiler merges identical chains */
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f),
           a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f),
           a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f),
           a9 = _mm512_set1_ps(9.0f), a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    double t = erase_now_s();
    for (long it = 0; it < FMA_ITERS; it++)
        FMA12(_mm512_fmadd_ps);
    t = erase_now_s() - t;
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    if (_mm512_reduce_add_ps(s) == 12345.0f) /* keep the result alive */
        printf(" ");
    return (double)FMA_ITERS * 12 * 16 * 2 / t / 1e9;
}

__attribute__((target("avx2,fma"))) static double peak_avx2(void)
{
    __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(1.0f), a2 = _mm256_set1_ps(2.0f),
           a3 = _mm256_set1_ps(3.0f), a4 = _mm256_set1_ps(4.0f), a5 = _mm256_set1_ps(5.0f),
           a6 = _mm256_set1_ps(6.0f), a7 = _mm256_set1_ps(7.0f), a8 = _mm256_set1_ps(8.0f),
           a9 = _mm256_set1_ps(9.0f), a10 = _mm256_set1_ps(10.0f), a11 = _mm256_set1_ps(11.0f);
    double t = erase_now_s();
    for (long it = 0; it < FMA_ITERS; it++)
        FMA12(_mm256_fmadd_ps);
    t = erase_now_s() - t;
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float buf[8];
    _mm256_storeu_ps(buf, s);
    if (buf[0] == 12345.0f)
        printf(" ");
    return (double)FMA_ITERS * 12 * 8 * 2 / t / 1e9;
}
#endif

double bench_fma_peak_gflops(const char **isa)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *isa = "AVX-512 FMA";
        return peak_avx512();
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *isa = "AVX2 FMA";
        return peak_avx2();
    }
#endif
    *isa = "unknown ISA (no peak)";
    return 0.0;
}

double bench_median_seconds(void (*fn)(void *), void *arg, int reps, int samples)
{
    double *t = malloc((size_t)samples * sizeof *t);
    if (!t)
        return 0;
    fn(arg);
    for (int s = 0; s < samples; s++) {
        double t0 = erase_now_s();
        for (int r = 0; r < reps; r++)
            fn(arg);
        t[s] = erase_now_s() - t0;
    }
    double med = erase_quantile(t, (size_t)samples, 0.5);
    free(t);
    return med;
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

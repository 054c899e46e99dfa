#include "apps/bench/bench.h"

#include "lib/core/stats.h"
#include "lib/core/timer.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

erase_device_t *bench_open_device(int blas_threads)
{
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = blas_threads;
    erase_device_t *dev;
    ERASE_MUST(erase_device_open(&o, &dev));
    char text[512];
    erase_device_describe(dev, text, sizeof text);
    printf("# device: %s\n", text);
    return dev;
}

#define FMA_ITERS 20000000L

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static double peak_avx512(void)
{
    __m512 acc[12], m = _mm512_set1_ps(0.9999999f), a = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        acc[i] = _mm512_set1_ps((float)i);
    double t = erase_now_s();
    for (long it = 0; it < FMA_ITERS / 12; it++)
        for (int i = 0; i < 12; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    t = erase_now_s() - t;
    float sink = 0;
    for (int i = 0; i < 12; i++)
        sink += _mm512_reduce_add_ps(acc[i]);
    if (sink == 12345.0f)
        printf(" ");
    return (double)(FMA_ITERS / 12) * 12 * 16 * 2 / t / 1e9;
}

__attribute__((target("avx2,fma"))) static double peak_avx2(void)
{
    __m256 acc[12], m = _mm256_set1_ps(0.9999999f), a = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        acc[i] = _mm256_set1_ps((float)i);
    double t = erase_now_s();
    for (long it = 0; it < FMA_ITERS / 12; it++)
        for (int i = 0; i < 12; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    t = erase_now_s() - t;
    float buf[8], sink = 0;
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(buf, acc[i]);
        sink += buf[0];
    }
    if (sink == 12345.0f)
        printf(" ");
    return (double)(FMA_ITERS / 12) * 12 * 8 * 2 / t / 1e9;
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

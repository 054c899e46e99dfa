/*
 * The BLAS of the CPU backend, loaded with dlopen() once per process.
 *
 * Why dlopen: OpenBLAS built with DYNAMIC_ARCH (Debian's) chooses its compute
 * kernel in a constructor that runs when the library is loaded, from the
 * CPU model or OPENBLAS_CORETYPE. OpenBLAS 0.3.21 does not know recent CPUs
 * with AVX-512 (it takes e.g. a Sapphire Rapids for "Prescott" or a Zen 5
 * for "Haswell") and then runs 2-6x below the core's peak. erase therefore
 * decides the kernel from CPUID first, puts it in OPENBLAS_CORETYPE, and only
 * then loads the library:
 *   - ERASE_BLAS_CORE=NAME, if set, is used as is (the user's choice);
 *   - else, on a CPU with AVX-512 F/BW/DQ/VL, "SkylakeX" (OpenBLAS's AVX-512
 *     SGEMM kernel), even over an OPENBLAS_CORETYPE already in the
 *     environment (reported in the device description);
 *   - else OpenBLAS's own detection (or the environment's OPENBLAS_CORETYPE).
 * A self-check of a small GEMM against a double-precision reference then
 * guards against a kernel that computes wrong results on this CPU.
 *
 * OpenBLAS starts its thread pool when it is loaded, and a new thread copies
 * the floating-point control state of the thread that creates it: the
 * loading thread therefore sets flush-to-zero and denormals-are-zero
 * (lib/core/fpmode.h) before dlopen(), so that the pool computes with them.
 *
 * OpenBLAS's thread count (openblas_set_num_threads) is process-wide; the
 * device sets it to its "BLAS threads per stream". With one thread, calls
 * from several streams' workers run concurrently without OpenBLAS's thread
 * server; with more, each call uses that many OpenBLAS threads.
 */
#include "lib/device/cpu/cpu_internal.h"

#include "config.h"
#include "lib/core/fpmode.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CBLAS constants (fixed by the CBLAS standard). */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int order, int transa, int transb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c,
                         int ldc);

typedef void (*dgemm_fn)(int order, int transa, int transb, int m, int n, int k, double alpha,
                         const double *a, int lda, const double *b, int ldb, double beta, double *c,
                         int ldc);

static struct {
    pthread_once_t once;
    erase_status_t status;
    char error[1024];
    void *handle;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    void (*set_threads)(int);
    erase_blas_info_t info;
} blas = { .once = PTHREAD_ONCE_INIT };

static int cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

static void choose_kernel(void)
{
    const char *user = getenv("ERASE_BLAS_CORE");
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (user && *user) {
        setenv("OPENBLAS_CORETYPE", user, 1);
        snprintf(blas.info.kernel_note, sizeof blas.info.kernel_note,
                 "set by ERASE_BLAS_CORE=%s", user);
    } else if (cpu_has_avx512()) {
        if (env && strcmp(env, "SkylakeX") != 0 && strcmp(env, "SKYLAKEX") != 0)
            snprintf(blas.info.kernel_note, sizeof blas.info.kernel_note,
                     "chosen by erase for this AVX-512 CPU over OPENBLAS_CORETYPE=%s; "
                     "set ERASE_BLAS_CORE to choose", env);
        else
            snprintf(blas.info.kernel_note, sizeof blas.info.kernel_note,
                     "chosen by erase for this AVX-512 CPU");
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    } else if (env && *env) {
        snprintf(blas.info.kernel_note, sizeof blas.info.kernel_note,
                 "set by OPENBLAS_CORETYPE=%s", env);
    } else {
        snprintf(blas.info.kernel_note, sizeof blas.info.kernel_note, "detected by the library");
    }
}

/* Naive double reference for the self-check, row-major, no transposes. */
static double self_check(void)
{
    enum { M = 37, N = 29, K = 67 };
    static float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)((i * 7919 % 211) - 105) / 97.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)((i * 104729 % 199) - 99) / 89.0f;
    /* through the wrapper: the loading thread's GEMMs are watched (its buffers advised) */
    erase_cpu_gemm_f32(0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int p = 0; p < K; p++) {
                s += (double)a[i * K + p] * b[p * N + j];
                mag += fabs((double)a[i * K + p] * b[p * N + j]);
            }
            double err = fabs(c[i * N + j] - s) / (mag + 1e-30);
            if (err > worst)
                worst = err;
        }
    return worst;
}

static void load_once(void)
{
    choose_kernel();
    const char *lib = getenv("ERASE_BLAS_LIBRARY");
    if (!lib || !*lib)
        lib = ERASE_BLAS_LIBRARY;
    blas.info.library = lib;
    erase_fp_thread_init(); /* inherited by the BLAS threads started by dlopen */
    blas.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!blas.handle) {
        blas.status = ERASE_ERR_BACKEND;
        snprintf(blas.error, sizeof blas.error, "cannot load the BLAS library %s: %s", lib, dlerror());
        return;
    }
    *(void **)&blas.sgemm = dlsym(blas.handle, "cblas_sgemm");
    *(void **)&blas.dgemm = dlsym(blas.handle, "cblas_dgemm");
    if (!blas.sgemm || !blas.dgemm) {
        blas.status = ERASE_ERR_BACKEND;
        snprintf(blas.error, sizeof blas.error, "the BLAS library %s has no cblas_sgemm or cblas_dgemm", lib);
        return;
    }
    *(void **)&blas.set_threads = dlsym(blas.handle, "openblas_set_num_threads");
    char *(*corename)(void);
    char *(*config)(void);
    *(void **)&corename = dlsym(blas.handle, "openblas_get_corename");
    *(void **)&config = dlsym(blas.handle, "openblas_get_config");
    blas.info.has_thread_control = blas.set_threads != NULL;
    if (config) {
        /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21" */
        const char *cfg = config();
        int words = 0;
        size_t n = 0;
        while (cfg[n] && n + 1 < sizeof blas.info.name) {
            if (cfg[n] == ' ' && ++words == 2)
                break;
            n++;
        }
        memcpy(blas.info.name, cfg, n);
        blas.info.name[n] = '\0';
    } else {
        snprintf(blas.info.name, sizeof blas.info.name, "CBLAS (%s)", lib);
        snprintf(blas.info.kernel_note, sizeof blas.info.kernel_note, "chosen by the library");
    }
    snprintf(blas.info.kernel, sizeof blas.info.kernel, "%s", corename ? corename() : "-");
    if (blas.set_threads)
        blas.set_threads(1);
    double err = self_check();
    if (!(err < 1e-5)) {
        blas.status = ERASE_ERR_BACKEND;
        snprintf(blas.error, sizeof blas.error,
                 "BLAS self-check failed: %s kernel %s (%s) computes a 37x29x67 SGEMM with "
                 "relative error %.3g; choose another kernel with ERASE_BLAS_CORE (e.g. Haswell)",
                 blas.info.name, blas.info.kernel, blas.info.kernel_note, err);
    }
}

erase_status_t erase_blas_load(const erase_blas_info_t **info)
{
    pthread_once(&blas.once, load_once);
    if (blas.status != ERASE_OK)
        return ERASE_ERROR(blas.status, "%s", blas.error);
    *info = &blas.info;
    return ERASE_OK;
}

void erase_blas_set_threads(int n)
{
    if (blas.set_threads)
        blas.set_threads(n);
}

/* OpenBLAS keeps one pool of packing buffers for the process: a level-3
 * call that needs one (not every call does: OpenBLAS computes some thin
 * products without it) takes a free one, and maps a new one, without
 * huge-page advice, when none is free. A thread's GEMMs therefore run
 * between two reads of the process's mappings, and what appeared is
 * advised (cpu_hugepages.c), until one GEMM advised a mapping or 64 have
 * run. A thread whose GEMMs find free buffers maps nothing: those were
 * advised when a watched GEMM mapped them. (OpenBLAS's own threads map
 * one each as they start, outside any watch; the next buffer mapped
 * usually lands beside it, the kernel merges the two mappings, and the
 * watch advises both.) The buffers are large (Debian's OpenBLAS:
 * 128 MiB); the few mappings other threads make meanwhile are advised
 * too, which changes only their page size. */
static __thread int thread_gemms_watched; /* GEMMs run between two reads; -1: done */
enum { MAPS_MAX = 1024, WATCH_GEMMS = 64 };

/* Before a watched GEMM: the mappings now (freed by watch_end), or NULL
 * when this thread is done watching or cannot (it stops then). */
static erase_cpu_map_t *watch_begin(int *nbefore)
{
    erase_cpu_map_t *before = NULL;
    if (erase_cpu_thp_advise() && (before = malloc(2 * MAPS_MAX * sizeof *before)) != NULL &&
        (*nbefore = erase_cpu_anon_maps(before, MAPS_MAX)) >= 0 && *nbefore <= MAPS_MAX)
        return before;
    free(before);
    thread_gemms_watched = -1;
    return NULL;
}

/* After it: advises what appeared; done once it advised something, the
 * mappings cannot be read, or WATCH_GEMMS GEMMs have run. */
static void watch_end(erase_cpu_map_t *before, int nbefore)
{
    erase_cpu_map_t *after = before + MAPS_MAX;
    int na = erase_cpu_anon_maps(after, MAPS_MAX);
    size_t advised = na >= 0 ? erase_cpu_thp_advise_new(before, nbefore, after, na < MAPS_MAX ? na : MAPS_MAX) : 0;
    free(before);
    if (advised > 0 || na < 0 || ++thread_gemms_watched >= WATCH_GEMMS)
        thread_gemms_watched = -1;
}

void erase_cpu_gemm_f32(int transa, int transb, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    int nbefore = 0;
    erase_cpu_map_t *before = thread_gemms_watched >= 0 ? watch_begin(&nbefore) : NULL;
    blas.sgemm(CBLAS_ROW_MAJOR, transa ? CBLAS_TRANS : CBLAS_NO_TRANS,
               transb ? CBLAS_TRANS : CBLAS_NO_TRANS, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (before)
        watch_end(before, nbefore);
}

void erase_cpu_gemm_f64(int transa, int transb, int m, int n, int k, double alpha,
                        const double *a, int lda, const double *b, int ldb, double beta, double *c,
                        int ldc)
{
    blas.dgemm(CBLAS_ROW_MAJOR, transa ? CBLAS_TRANS : CBLAS_NO_TRANS,
               transb ? CBLAS_TRANS : CBLAS_NO_TRANS, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

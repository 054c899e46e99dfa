/*
 * The CUDA backend (lib/device/cuda) against device.h's semantics and
 * against the CPU backend (the oracle).
 *
 * Runs everywhere: opening a CUDA device on a machine without a usable GPU
 * fails with ERASE_ERR_UNSUPPORTED and a root cause starting with
 * "no CUDA device visible: " (with a GPU: an out-of-range ordinal is
 * ERASE_ERR_INVALID naming the GPU count). Every other case needs a GPU
 * and reports SKIP with the reason when there is none: memory and copies,
 * stream order and cross-stream event waits, events (query, synchronize,
 * elapsed, the never-recorded rules), a fork/join graph over two side
 * streams replayed 1,000 times bitwise equal to eager issue, the capture
 * rules (unjoined streams, synchronize while capturing), SGEMM of every
 * transpose case / leading dimension / alpha-beta / k = 0 / batch against
 * the CPU backend within 1e-5 of the terms' magnitude (strict fp32, the
 * default), the tensor-core modes (--gemm tf32 within 2e-3, bf16 within
 * 2e-2 norm-wise of a double reference, and measurably not fp32), trace
 * markers (eager and in a graph), and the fault word.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "lib/core/rng.h"
#include "lib/core/timer.h"
#include "lib/device/cuda/cuda.h"
#include "lib/device/device.h"
#include "tests/device/gemm_case.h"
#include "tests/gpu_tap.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

static erase_device_t *gpu;     /* NULL: no GPU here (reason below) */
static erase_device_t *cpu;     /* the oracle for SGEMM */
static char no_gpu_reason[1024];

/* The root cause of an error trail "a.c:1 -> b.c:2: text": "text". */
static const char *root_cause(const char *msg)
{
    const char *last = msg, *p;
    while ((p = strstr(last, " -> ")) != NULL)
        last = p + 4;
    p = strstr(last, ": ");
    return p ? p + 2 : last;
}

/* Open the GPU (or note why not) and the CPU oracle. */
static int open_devices(void)
{
    erase_device_options_t o = erase_device_options_default();
    o.kind = ERASE_DEVICE_CUDA;
    erase_status_t st = erase_device_open(&o, &gpu);
    if (st != ERASE_OK) {
        gpu = NULL;
        snprintf(no_gpu_reason, sizeof no_gpu_reason, "%s", root_cause(erase_error_message()));
    } else {
        char text[640];
        erase_device_describe(gpu, text, sizeof text);
        printf("# %s\n", text);
    }
    if (erase_device_open(NULL, &cpu) != ERASE_OK)
        return -1;
    return 0;
}

static void close_devices(void)
{
    erase_device_close(gpu);
    erase_device_close(cpu);
}

/* Without a GPU main() reports every case below as SKIP itself (cmocka
 * 1.1.5 prints a skipped case as "not ok # SKIP", which automake's TAP
 * driver counts as a failure); with one, a case needing it never skips. */
#define NEED_GPU() assert_non_null(gpu)

/* ---- always runs ---------------------------------------------------------- */

/* Plain checks (no cmocka: they also run when the cmocka cases are all
 * skipped); prints what is wrong and returns the number of failures. */
#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            printf("# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static int open_errors_check(void)
{
    int failures = 0;
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    erase_device_options_t o = erase_device_options_default();
    o.kind = ERASE_DEVICE_CUDA;
    erase_device_t *d = NULL;
    if (rc != cudaSuccess || count == 0) {
        printf("# no GPU: checking the error of erase_device_open(CUDA)\n");
        for (int ordinal = 0; ordinal <= 3; ordinal += 3) {
            o.ordinal = ordinal;
            CHECK(erase_device_open(&o, &d) == ERASE_ERR_UNSUPPORTED);
            CHECK(d == NULL);
            const char *why = root_cause(erase_error_message());
            printf("# %s\n", why);
            CHECK(strncmp(why, "no CUDA device visible: ", 24) == 0);
            if (rc != cudaSuccess)
                CHECK(strstr(why, cudaGetErrorString(rc)) != NULL);
        }
        CHECK(gpu == NULL);
    } else {
        printf("# %d GPU(s): checking out-of-range ordinals\n", count);
        int bad[2] = { count, -1 };
        for (int i = 0; i < 2; i++) {
            o.ordinal = bad[i];
            CHECK(erase_device_open(&o, &d) == ERASE_ERR_INVALID);
            CHECK(d == NULL);
            char want[64];
            snprintf(want, sizeof want, "%d GPU", count);
            CHECK(strstr(erase_error_message(), "out of range") != NULL);
            CHECK(strstr(erase_error_message(), want) != NULL);
        }
        CHECK(gpu != NULL);
    }
    for (int c = 0; c < ERASE_CUDA_FAULT_COUNT; c++)
        for (int k = 0; k < c; k++)
            CHECK(strcmp(erase_cuda_fault_text(c), erase_cuda_fault_text(k)) != 0);
    return failures;
}

static void test_open_errors(void **state) { assert_int_equal(open_errors_check(), 0); }

/* ---- device and memory --------------------------------------------------- */

static void test_describe(void **state)
{
    NEED_GPU();
    char text[640];
    erase_device_describe(gpu, text, sizeof text);
    assert_int_equal(strncmp(text, "cuda:0 ", 7), 0);
    assert_non_null(strstr(text, "SMs"));
    assert_int_equal(erase_device_kind(gpu), ERASE_DEVICE_CUDA);
    assert_true(erase_device_cores(gpu) >= 1);
    assert_int_equal(erase_device_blas_threads(gpu), 1);
    MUST(erase_device_set_blas_threads(gpu, 7));
    assert_int_equal(erase_device_blas_threads(gpu), 1);
    assert_int_equal(erase_device_host_accessible(gpu), 0);
    assert_int_equal(erase_cuda_ordinal(gpu), 0);
    MUST(erase_cuda_make_current(gpu));
}

static void test_memory(void **state)
{
    NEED_GPU();
    enum { N = 1 << 20 };
    void *z1, *z2;
    MUST(erase_malloc(gpu, 0, &z1));
    MUST(erase_malloc(gpu, 0, &z2));
    assert_non_null(z1);
    assert_non_null(z2);
    assert_ptr_not_equal(z1, z2);
    erase_free(gpu, z1);
    erase_free(gpu, z2);
    MUST(erase_host_alloc(gpu, 0, &z1));
    assert_non_null(z1);
    erase_host_free(gpu, z1);

    unsigned char *h, *back, *d1, *d2;
    MUST(erase_host_alloc(gpu, N, (void **)&h));
    back = malloc(N); /* pageable on purpose */
    assert_non_null(back);
    MUST(erase_malloc(gpu, N, (void **)&d1));
    MUST(erase_malloc(gpu, N, (void **)&d2));
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7 + 3);
    MUST(erase_memcpy_sync(gpu, d1, h, N));
    memset(back, 0, N);
    MUST(erase_memcpy_sync(gpu, back, d1, N));
    assert_memory_equal(back, h, N);
    MUST(erase_memset_sync(gpu, d1, 0x5a, N / 2));
    MUST(erase_memcpy_sync(gpu, back, d1, N));
    for (int i = 0; i < N; i++)
        assert_int_equal(back[i], i < N / 2 ? 0x5a : h[i]);

    erase_stream_t *s;
    MUST(erase_stream_create(gpu, &s));
    assert_non_null(erase_cuda_stream(s));
    uint64_t before = erase_stream_enqueued(s);
    MUST(erase_memcpy_async(s, d2, d1, N));       /* device to device */
    MUST(erase_memset_async(s, d2, 0x11, 100));
    MUST(erase_memcpy_async(s, h, d2, N));        /* device to pinned host */
    MUST(erase_stream_synchronize(s));
    assert_int_equal(erase_stream_enqueued(s) - before, 3);
    for (int i = 0; i < N; i++)
        assert_int_equal(h[i], i < 100 ? 0x11 : back[i]);
    /* a strided copy (cudaMemcpy2DAsync): every 4th byte of d1 into the first N / 4 of d2 */
    MUST(erase_memcpy2d_async(s, d2, 1, d1, 4, 1, N / 4));
    MUST(erase_memcpy_async(s, h, d2, N / 4));
    MUST(erase_stream_synchronize(s));
    for (int i = 0; i < N / 4; i++)
        assert_int_equal(h[i], back[4 * i]);
    erase_stream_destroy(s);
    erase_free(gpu, d1);
    erase_free(gpu, d2);
    erase_host_free(gpu, h);
    free(back);
}

/* ---- streams and events ----------------------------------------------------- */

enum { BIG = 2048 }; /* a GEMM long enough (~20 GFLOP) to expose missing waits */

typedef struct {
    float *a, *b, *c;  /* BIG x BIG */
} big_t;

static void big_init(big_t *g)
{
    size_t n = (size_t)BIG * BIG;
    float *h = malloc(n * sizeof(float));
    assert_non_null(h);
    uint64_t rng = 11;
    for (size_t i = 0; i < n; i++)
        h[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
    MUST(erase_malloc(gpu, n * sizeof(float), (void **)&g->a));
    MUST(erase_malloc(gpu, n * sizeof(float), (void **)&g->b));
    MUST(erase_malloc(gpu, n * sizeof(float), (void **)&g->c));
    MUST(erase_memcpy_sync(gpu, g->a, h, n * sizeof(float)));
    MUST(erase_memcpy_sync(gpu, g->b, h, n * sizeof(float)));
    free(h);
}

static void big_free(big_t *g)
{
    erase_free(gpu, g->a);
    erase_free(gpu, g->b);
    erase_free(gpu, g->c);
}

static erase_status_t big_gemm(erase_stream_t *s, big_t *g)
{
    return erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, BIG, BIG, BIG, 1.0f, g->a, BIG, g->b, BIG,
                       0.0f, g->c, BIG);
}

static void test_cross_stream_wait(void **state)
{
    NEED_GPU();
    enum { M = 4096 };
    big_t g;
    big_init(&g);
    erase_stream_t *prod, *cons;
    erase_event_t *ready;
    float *x, *seen, *want;
    MUST(erase_stream_create(gpu, &prod));
    MUST(erase_stream_create(gpu, &cons));
    MUST(erase_event_create(gpu, &ready));
    MUST(erase_malloc(gpu, M * sizeof(float), (void **)&x));
    MUST(erase_host_alloc(gpu, M * sizeof(float), (void **)&seen));
    want = malloc(M * sizeof(float));
    assert_non_null(want);
    for (int round = 0; round < 5; round++) {
        MUST(erase_memset_sync(gpu, x, 0xff, M * sizeof(float))); /* NaN */
        MUST(erase_memset_sync(gpu, g.c, 0xff, (size_t)BIG * BIG * sizeof(float)));
        /* producer: a long GEMM, then its first M results into x */
        MUST(big_gemm(prod, &g));
        MUST(erase_memcpy_async(prod, x, g.c, M * sizeof(float)));
        MUST(erase_event_record(ready, prod));
        /* consumer: waits, then reads x */
        MUST(erase_stream_wait_event(cons, ready));
        MUST(erase_memcpy_async(cons, seen, x, M * sizeof(float)));
        MUST(erase_stream_synchronize(cons)); /* only the consumer */
        MUST(erase_stream_synchronize(prod));
        MUST(erase_memcpy_sync(gpu, want, g.c, M * sizeof(float)));
        for (int i = 0; i < M; i++)
            assert_false(isnan(seen[i]));
        assert_memory_equal(seen, want, M * sizeof(float));
    }
    printf("# consumer saw the producer's GEMM results in 5 rounds\n");
    free(want);
    erase_host_free(gpu, seen);
    erase_free(gpu, x);
    erase_event_destroy(ready);
    erase_stream_destroy(prod);
    erase_stream_destroy(cons);
    big_free(&g);
}

static void test_stream_order(void **state)
{
    NEED_GPU();
    /* a chain of fills and copies on one stream: each reads what the
     * previous one wrote, so any reordering changes the result */
    enum { N = 1 << 16, STEPS = 64 };
    unsigned char *buf[2], *h, *want = malloc(N);
    assert_non_null(want);
    MUST(erase_malloc(gpu, N, (void **)&buf[0]));
    MUST(erase_malloc(gpu, N, (void **)&buf[1]));
    MUST(erase_host_alloc(gpu, N, (void **)&h));
    erase_stream_t *s;
    MUST(erase_stream_create(gpu, &s));
    MUST(erase_memset_async(s, buf[0], 0, N));
    memset(want, 0, N);
    for (int i = 0; i < STEPS; i++) {
        size_t off = (size_t)i * (N / STEPS), len = N - off;
        MUST(erase_memset_async(s, buf[0] + off, i + 1, len / 2));
        memset(want + off, i + 1, len / 2);
        MUST(erase_memcpy_async(s, buf[1], buf[0], N));
        MUST(erase_memcpy_async(s, buf[0], buf[1], N));
    }
    MUST(erase_memcpy_async(s, h, buf[0], N));
    MUST(erase_stream_synchronize(s));
    assert_memory_equal(h, want, N);
    erase_stream_destroy(s);
    erase_free(gpu, buf[0]);
    erase_free(gpu, buf[1]);
    erase_host_free(gpu, h);
    free(want);
}

static void test_events(void **state)
{
    NEED_GPU();
    big_t g;
    big_init(&g);
    erase_stream_t *s, *t;
    erase_event_t *never, *e0, *e1;
    MUST(erase_stream_create(gpu, &s));
    MUST(erase_stream_create(gpu, &t));
    MUST(erase_event_create(gpu, &never));
    MUST(erase_event_create(gpu, &e0));
    MUST(erase_event_create(gpu, &e1));
    double ms = -1;
    /* never recorded: reached, waitable, but has no time */
    MUST(erase_event_query(never));
    MUST(erase_event_synchronize(never));
    MUST(erase_stream_wait_event(t, never));
    MUST(erase_stream_synchronize(t));
    assert_int_equal(erase_event_elapsed_ms(never, never, &ms), ERASE_ERR_INVALID);
    MUST(erase_event_record(e0, s));
    MUST(erase_event_synchronize(e0));
    assert_int_equal(erase_event_elapsed_ms(e0, never, &ms), ERASE_ERR_INVALID);
    assert_int_equal(erase_event_elapsed_ms(never, e0, &ms), ERASE_ERR_INVALID);

    MUST(erase_event_record(e0, s));
    for (int i = 0; i < 3; i++)
        MUST(big_gemm(s, &g));
    MUST(erase_event_record(e1, s));
    erase_status_t q = erase_event_query(e1);
    assert_true(q == ERASE_OK || q == ERASE_ERR_NOT_READY);
    q = erase_event_elapsed_ms(e0, e1, &ms);
    assert_true(q == ERASE_OK || q == ERASE_ERR_NOT_READY);
    MUST(erase_event_synchronize(e1));
    MUST(erase_event_query(e1));
    MUST(erase_event_elapsed_ms(e0, e1, &ms));
    printf("# 3 GEMMs of %d^3: %.3f ms\n", BIG, ms);
    assert_true(ms > 0.0);
    double back = 0;
    MUST(erase_event_elapsed_ms(e1, e0, &back));
    assert_true(back <= 0.0);
    MUST(erase_stream_synchronize(s));
    erase_event_destroy(never);
    erase_event_destroy(e0);
    erase_event_destroy(e1);
    erase_stream_destroy(s);
    erase_stream_destroy(t);
    big_free(&g);
}

/* ---- graphs ------------------------------------------------------------------ */

enum { D = 96 };

typedef struct {
    erase_stream_t *main, *side[2];
    erase_event_t *fork, *join[2];
    float *x, *w, *y[2];
} forkjoin_t;

/* One step: two side streams read x (y0 = x w, y1 = x w^T), the main
 * stream joins them and updates x = 1e-3 y0 y1 + 0.5 x. */
static void forkjoin_issue(forkjoin_t *f)
{
    MUST(erase_event_record(f->fork, f->main));
    for (int i = 0; i < 2; i++) {
        MUST(erase_stream_wait_event(f->side[i], f->fork));
        MUST(erase_sgemm(f->side[i], ERASE_NO_TRANS, i ? ERASE_TRANS : ERASE_NO_TRANS, D, D, D,
                         1.0f, f->x, D, f->w, D, 0.0f, f->y[i], D));
        MUST(erase_event_record(f->join[i], f->side[i]));
        MUST(erase_stream_wait_event(f->main, f->join[i]));
    }
    MUST(erase_sgemm(f->main, ERASE_NO_TRANS, ERASE_NO_TRANS, D, D, D, 1e-3f, f->y[0], D, f->y[1],
                     D, 0.5f, f->x, D));
}

static void forkjoin_reset(forkjoin_t *f)
{
    float h[D * D];
    uint64_t rng = 5;
    for (int i = 0; i < D * D; i++)
        h[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
    MUST(erase_memcpy_sync(gpu, f->x, h, sizeof h));
    for (int i = 0; i < D * D; i++)
        h[i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
    MUST(erase_memcpy_sync(gpu, f->w, h, sizeof h));
}

static void test_graph_replay(void **state)
{
    NEED_GPU();
    enum { REPLAYS = 1000 };
    forkjoin_t f;
    MUST(erase_stream_create(gpu, &f.main));
    MUST(erase_event_create(gpu, &f.fork));
    MUST(erase_malloc(gpu, D * D * sizeof(float), (void **)&f.x));
    MUST(erase_malloc(gpu, D * D * sizeof(float), (void **)&f.w));
    for (int i = 0; i < 2; i++) {
        MUST(erase_stream_create(gpu, &f.side[i]));
        MUST(erase_event_create(gpu, &f.join[i]));
        MUST(erase_malloc(gpu, D * D * sizeof(float), (void **)&f.y[i]));
    }
    static float eager[D * D], replay[D * D];

    forkjoin_reset(&f);
    for (int r = 0; r < REPLAYS; r++)
        forkjoin_issue(&f);
    MUST(erase_stream_synchronize(f.main));
    MUST(erase_memcpy_sync(gpu, eager, f.x, sizeof eager));

    forkjoin_reset(&f);
    erase_graph_t *g = NULL;
    MUST(erase_stream_begin_capture(f.main));
    forkjoin_issue(&f);
    assert_int_equal(erase_stream_is_capturing(f.side[0]), 1);
    MUST(erase_stream_end_capture(f.main, &g));
    assert_non_null(g);
    assert_int_equal(erase_stream_is_capturing(f.main), 0);
    assert_int_equal(erase_stream_is_capturing(f.side[0]), 0);
    assert_int_equal(erase_stream_is_capturing(f.side[1]), 0);
    printf("# fork/join graph: %zu nodes\n", erase_graph_node_count(g));
    assert_true(erase_graph_node_count(g) >= 3);
    for (int r = 0; r < REPLAYS; r++)
        MUST(erase_graph_launch(g, f.main));
    MUST(erase_stream_synchronize(f.main));
    MUST(erase_memcpy_sync(gpu, replay, f.x, sizeof replay));
    int finite = 0;
    for (int i = 0; i < D * D; i++)
        finite += isfinite(eager[i]) && eager[i] != 0.0f;
    assert_int_equal(finite, D * D);
    assert_memory_equal(eager, replay, sizeof eager);
    printf("# %d replays bitwise equal to %d eager steps\n", REPLAYS, REPLAYS);

    erase_graph_destroy(g);
    for (int i = 0; i < 2; i++) {
        erase_stream_destroy(f.side[i]);
        erase_event_destroy(f.join[i]);
        erase_free(gpu, f.y[i]);
    }
    erase_stream_destroy(f.main);
    erase_event_destroy(f.fork);
    erase_free(gpu, f.x);
    erase_free(gpu, f.w);
}

static void test_capture_rules(void **state)
{
    NEED_GPU();
    erase_stream_t *o, *side;
    erase_event_t *fork, *outside;
    erase_graph_t *g = NULL;
    float *x;
    MUST(erase_stream_create(gpu, &o));
    MUST(erase_stream_create(gpu, &side));
    MUST(erase_event_create(gpu, &fork));
    MUST(erase_event_create(gpu, &outside));
    MUST(erase_malloc(gpu, 16 * sizeof(float), (void **)&x));

    MUST(erase_stream_begin_capture(o));
    assert_int_equal(erase_stream_is_capturing(o), 1);
    assert_int_equal(erase_stream_begin_capture(o), ERASE_ERR_STATE);
    assert_int_equal(erase_stream_synchronize(o), ERASE_ERR_STATE);
    assert_non_null(strstr(erase_error_message(), "while the stream is capturing"));
    MUST(erase_memset_async(o, x, 0, 16 * sizeof(float)));
    MUST(erase_stream_end_capture(o, &g));
    assert_int_equal(erase_graph_node_count(g), 1);
    assert_int_equal(erase_stream_end_capture(o, &g), ERASE_ERR_STATE);

    /* a graph cannot be launched into a capturing stream */
    erase_graph_t *g2 = NULL;
    MUST(erase_stream_begin_capture(side));
    assert_int_equal(erase_graph_launch(g, side), ERASE_ERR_STATE);
    MUST(erase_stream_end_capture(side, &g2));
    erase_graph_destroy(g2);
    erase_graph_destroy(g);
    g = NULL;

    /* a side stream that joins and is never joined back */
    MUST(erase_stream_begin_capture(o));
    MUST(erase_event_record(fork, o));
    MUST(erase_stream_wait_event(side, fork));
    assert_int_equal(erase_stream_is_capturing(side), 1);
    MUST(erase_memset_async(side, x, 1, 16 * sizeof(float)));
    assert_int_equal(erase_stream_end_capture(side, &g), ERASE_ERR_STATE);
    assert_int_equal(erase_stream_end_capture(o, &g), ERASE_ERR_STATE);
    printf("# unjoined: %s\n", erase_error_message());
    assert_non_null(strstr(erase_error_message(), "was not joined back into the origin"));
    assert_null(g);
    assert_int_equal(erase_stream_is_capturing(o), 0);
    assert_int_equal(erase_stream_is_capturing(side), 0);
    /* both streams work again */
    MUST(erase_memset_async(side, x, 2, 16 * sizeof(float)));
    MUST(erase_stream_synchronize(side));
    MUST(erase_stream_synchronize(o));

    /* the host cannot wait on an event recorded inside a capture */
    MUST(erase_stream_begin_capture(o));
    MUST(erase_event_record(fork, o));
    MUST(erase_stream_end_capture(o, &g));
    assert_int_equal(erase_event_synchronize(fork), ERASE_ERR_STATE);
    assert_int_equal(erase_event_query(fork), ERASE_ERR_STATE);
    assert_int_equal(erase_stream_wait_event(side, fork), ERASE_ERR_STATE);
    erase_graph_destroy(g);

    /* waiting inside a capture on an event recorded outside it */
    MUST(erase_event_record(outside, side));
    MUST(erase_stream_begin_capture(o));
    assert_int_equal(erase_stream_wait_event(o, outside), ERASE_ERR_STATE);
    printf("# outside event: %s\n", erase_error_message());
    g = NULL;
    assert_int_equal(erase_stream_end_capture(o, &g), ERASE_ERR_STATE);
    assert_null(g);
    assert_int_equal(erase_stream_is_capturing(o), 0);
    MUST(erase_stream_synchronize(o));
    MUST(erase_stream_synchronize(side));

    erase_free(gpu, x);
    erase_event_destroy(fork);
    erase_event_destroy(outside);
    erase_stream_destroy(o);
    erase_stream_destroy(side);
}

/* ---- SGEMM against the CPU backend --------------------------------------------- */


/* Random nonzero value: magnitude in [0.25, 1], random sign. */
static float nonzero(uint64_t *rng)
{
    float v = erase_rng_uniform(rng, 0.25f, 1.0f);
    return erase_rng_below(rng, 2) ? v : -v;
}

/* Run one case on both devices; returns the worst error relative to the
 * magnitude of the terms, |alpha| sum |a b| + |beta c|. Elements of C
 * outside the m x n matrices (row padding, gaps between batch entries)
 * are NaN before and must be NaN after on both. */
static double gemm_case(const gemm_case_t *g, uint64_t *rng)
{
    size_t asize, bsize, csize;
    gemm_case_sizes(g, &asize, &bsize, &csize);
    float *a = malloc(asize * sizeof(float)), *b = malloc(bsize * sizeof(float));
    float *c0 = malloc(csize * sizeof(float)), *cg = malloc(csize * sizeof(float));
    unsigned char *inside = calloc(csize, 1);
    assert_true(a && b && c0 && cg && inside);
    for (size_t i = 0; i < asize; i++)
        a[i] = nonzero(rng);
    for (size_t i = 0; i < bsize; i++)
        b[i] = nonzero(rng);
    for (int q = 0; q < g->batch; q++)
        for (int i = 0; i < g->m; i++)
            for (int j = 0; j < g->n; j++)
                inside[(size_t)q * g->sc + (size_t)i * g->ldc + j] = 1;
    for (size_t i = 0; i < csize; i++)
        c0[i] = inside[i] && g->beta != 0.0f ? nonzero(rng) : NAN;

    /* CPU (host-accessible memory) */
    float *ca, *cb, *cc;
    erase_stream_t *cs;
    MUST(erase_stream_create(cpu, &cs));
    MUST(erase_malloc(cpu, asize * sizeof(float), (void **)&ca));
    MUST(erase_malloc(cpu, bsize * sizeof(float), (void **)&cb));
    MUST(erase_malloc(cpu, csize * sizeof(float), (void **)&cc));
    memcpy(ca, a, asize * sizeof(float));
    memcpy(cb, b, bsize * sizeof(float));
    memcpy(cc, c0, csize * sizeof(float));
    MUST(erase_sgemm_strided_batched(cs, g->ta, g->tb, g->m, g->n, g->k, g->alpha, ca, g->lda, g->sa,
                                     cb, g->ldb, g->sb, g->beta, cc, g->ldc, g->sc, g->batch));
    MUST(erase_stream_synchronize(cs));

    /* GPU */
    float *ga, *gb, *gc;
    erase_stream_t *gs;
    MUST(erase_stream_create(gpu, &gs));
    MUST(erase_malloc(gpu, asize * sizeof(float), (void **)&ga));
    MUST(erase_malloc(gpu, bsize * sizeof(float), (void **)&gb));
    MUST(erase_malloc(gpu, csize * sizeof(float), (void **)&gc));
    MUST(erase_memcpy_sync(gpu, ga, a, asize * sizeof(float)));
    MUST(erase_memcpy_sync(gpu, gb, b, bsize * sizeof(float)));
    MUST(erase_memcpy_sync(gpu, gc, c0, csize * sizeof(float)));
    MUST(erase_sgemm_strided_batched(gs, g->ta, g->tb, g->m, g->n, g->k, g->alpha, ga, g->lda, g->sa,
                                     gb, g->ldb, g->sb, g->beta, gc, g->ldc, g->sc, g->batch));
    MUST(erase_stream_synchronize(gs));
    MUST(erase_memcpy_sync(gpu, cg, gc, csize * sizeof(float)));

    double worst = 0;
    for (int q = 0; q < g->batch; q++)
        for (int i = 0; i < g->m; i++)
            for (int j = 0; j < g->n; j++) {
                size_t at = (size_t)q * g->sc + (size_t)i * g->ldc + j;
                double mag = 0;
                for (int p = 0; p < g->k; p++)
                    mag += fabs((double)elem(a + q * g->sa, g->lda, g->ta, i, p) *
                                elem(b + q * g->sb, g->ldb, g->tb, p, j));
                double scale = fabs(g->alpha) * mag;
                if (g->beta != 0.0f)
                    scale += fabs((double)g->beta * c0[at]);
                assert_true(isfinite(cc[at]));
                assert_true(isfinite(cg[at]));
                double err = fabs((double)cg[at] - cc[at]);
                double rel = scale > 0 ? err / scale : err;
                if (rel > worst)
                    worst = rel;
            }
    for (size_t i = 0; i < csize; i++)
        if (!inside[i]) {
            assert_true(isnan(cc[i]));
            assert_true(isnan(cg[i]));
        }
    erase_free(cpu, ca);
    erase_free(cpu, cb);
    erase_free(cpu, cc);
    erase_stream_destroy(cs);
    erase_free(gpu, ga);
    erase_free(gpu, gb);
    erase_free(gpu, gc);
    erase_stream_destroy(gs);
    free(a);
    free(b);
    free(c0);
    free(cg);
    free(inside);
    return worst;
}

static void test_sgemm_vs_cpu(void **state)
{
    NEED_GPU();
    uint64_t rng = 2024;
    const int sizes[][3] = { { 1, 1, 1 }, { 7, 5, 3 }, { 33, 17, 65 }, { 129, 64, 130 },
                             { 4, 200, 9 }, { 64, 1, 64 }, { 3, 7, 0 } };
    const float ab[][2] = { { 1.0f, 0.0f }, { -0.75f, 0.5f }, { 2.0f, 1.0f }, { 0.0f, -1.5f } };
    double worst = 0;
    int cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t ai = 0; ai < sizeof ab / sizeof ab[0]; ai++)
                    for (int pad = 0; pad < 2; pad++) {
                        gemm_case_t g = { .ta = ta, .tb = tb, .m = sizes[si][0],
                                          .n = sizes[si][1], .k = sizes[si][2], .batch = 1,
                                          .alpha = ab[ai][0], .beta = ab[ai][1] };
                        int acols = ta ? g.m : g.k, bcols = tb ? g.k : g.n;
                        g.lda = (acols > 1 ? acols : 1) + pad * 3;
                        g.ldb = (bcols > 1 ? bcols : 1) + pad * 5;
                        g.ldc = g.n + pad * 2;
                        double w = gemm_case(&g, &rng);
                        if (w > worst)
                            worst = w;
                        cases++;
                    }
    printf("# %d single GEMMs: worst relative error %.3g\n", cases, worst);
    assert_true(worst <= 1e-5);
}

/*
 * --gemm tf32 / bf16: a 256^3 GEMM of operands uniform in ±[0.25, 1) on a CUDA
 * device opened in that mode, against a double-precision product of the
 * same fp32 operands: the norm-wise relative error stays within the
 * stated bound (tf32 2e-3: operands rounded to 10 mantissa bits; bf16
 * 2e-2: 7 bits) and is above 1e-5, the fp32 level (the mode took effect).
 */
static double tensor_core_error(erase_gemm_precision_t mode, uint64_t seed)
{
    const int n = 256;
    const size_t nn = (size_t)n * n;
    erase_device_options_t o = erase_device_options_default();
    o.kind = ERASE_DEVICE_CUDA;
    o.gemm = mode;
    erase_device_t *d;
    MUST(erase_device_open(&o, &d));
    float *ha = malloc(nn * sizeof(float)), *hb = malloc(nn * sizeof(float)),
          *hc = malloc(nn * sizeof(float));
    assert_non_null(ha);
    assert_non_null(hb);
    assert_non_null(hc);
    uint64_t rng = seed;
    for (size_t i = 0; i < nn; i++) {
        ha[i] = nonzero(&rng);
        hb[i] = nonzero(&rng);
    }
    float *a, *b, *c;
    MUST(erase_malloc(d, nn * sizeof(float), (void **)&a));
    MUST(erase_malloc(d, nn * sizeof(float), (void **)&b));
    MUST(erase_malloc(d, nn * sizeof(float), (void **)&c));
    MUST(erase_memcpy_sync(d, a, ha, nn * sizeof(float)));
    MUST(erase_memcpy_sync(d, b, hb, nn * sizeof(float)));
    erase_stream_t *s;
    MUST(erase_stream_create(d, &s));
    MUST(erase_sgemm(s, ERASE_NO_TRANS, ERASE_NO_TRANS, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n));
    MUST(erase_stream_synchronize(s));
    MUST(erase_memcpy_sync(d, hc, c, nn * sizeof(float)));
    double num = 0, den = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double ref = 0;
            for (int k = 0; k < n; k++)
                ref += (double)ha[(size_t)i * n + k] * (double)hb[(size_t)k * n + j];
            double diff = (double)hc[(size_t)i * n + j] - ref;
            num += diff * diff;
            den += ref * ref;
        }
    erase_stream_destroy(s);
    erase_free(d, a);
    erase_free(d, b);
    erase_free(d, c);
    erase_device_close(d);
    free(ha);
    free(hb);
    free(hc);
    return sqrt(num / den);
}

static void test_sgemm_tensor_cores(void **state)
{
    NEED_GPU();
    double tf32 = tensor_core_error(ERASE_GEMM_TF32, 11);
    double bf16 = tensor_core_error(ERASE_GEMM_BF16, 12);
    double fp32 = tensor_core_error(ERASE_GEMM_FP32, 13);
    printf("# 256^3 GEMM, norm-wise relative error: fp32 %.3g, tf32 %.3g, bf16 %.3g\n", fp32,
           tf32, bf16);
    assert_true(fp32 <= 1e-5);
    assert_true(tf32 <= 2e-3 && tf32 > 1e-5);
    assert_true(bf16 <= 2e-2 && bf16 > 1e-5);
}

static void test_sgemm_batched_vs_cpu(void **state)
{
    NEED_GPU();
    uint64_t rng = 77;
    double worst = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int k = 0; k <= 40; k += 40) {
                int m = 19, n = 23;
                gemm_case_t g = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .batch = 5,
                                  .alpha = 0.5f, .beta = k ? 0.25f : 0.0f };
                g.lda = (ta ? m : (k ? k : 1)) + 1;
                g.ldb = (tb ? (k ? k : 1) : n) + 2;
                g.ldc = n + 3;
                g.sa = (int64_t)(ta ? k : m) * g.lda + 7;
                g.sb = tb ? 0 : (int64_t)k * g.ldb + 1; /* stride 0: one B for all */
                g.sc = (int64_t)m * g.ldc + 11;
                double w = gemm_case(&g, &rng);
                if (w > worst)
                    worst = w;
                g.beta = 1.0f; /* k == 0 and beta == 1: C unchanged */
                w = gemm_case(&g, &rng);
                if (w > worst)
                    worst = w;
            }
    printf("# batched GEMMs: worst relative error %.3g\n", worst);
    assert_true(worst <= 1e-5);
}

/* ---- trace ------------------------------------------------------------------ */

static void check_records(const erase_trace_record_t *r, size_t n, const char *const *labels,
                          const int *begins, int stream, int64_t after)
{
    int64_t now = erase_now_ns();
    for (size_t i = 0; i < n; i++) {
        printf("#   %s %s stream %d at %+.3f us\n", r[i].label, r[i].begin ? "begin" : "end",
               r[i].stream, (double)(r[i].time_ns - after) / 1e3);
        assert_string_equal(r[i].label, labels[i]);
        assert_int_equal(r[i].begin, begins[i]);
        assert_int_equal(r[i].stream, stream);
        assert_true(r[i].time_ns >= after - 100000); /* 100 us: the time base's accuracy, generously */
        assert_true(r[i].time_ns <= now + 100000);
        if (i > 0)
            assert_true(r[i].time_ns >= r[i - 1].time_ns);
    }
}

static void test_trace(void **state)
{
    NEED_GPU();
    big_t g;
    big_init(&g);
    erase_trace_record_t rec[16];
    size_t dropped = 1;
    MUST(erase_device_trace_enable(gpu, 64));
    erase_stream_t *other, *s;
    MUST(erase_stream_create(gpu, &other));
    MUST(erase_stream_create(gpu, &s));
    int number = erase_stream_number(s);
    static const char *const eager_labels[] = { "gemm", "gemm", "copy", "copy" };
    static const int eager_begins[] = { 1, 0, 1, 0 };
    int64_t t0 = erase_now_ns();
    MUST(erase_stream_mark(s, "gemm", 1));
    MUST(big_gemm(s, &g));
    MUST(erase_stream_mark(s, "gemm", 0));
    MUST(erase_stream_mark(s, "copy", 1));
    MUST(erase_memcpy_async(s, g.a, g.c, 4096));
    MUST(erase_stream_mark(s, "copy", 0));
    MUST(erase_stream_synchronize(s));
    size_t n = erase_device_trace_drain(gpu, rec, 16, &dropped);
    assert_int_equal(n, 4);
    assert_int_equal(dropped, 0);
    check_records(rec, n, eager_labels, eager_begins, number, t0);
    assert_true(rec[1].time_ns - rec[0].time_ns > 1000); /* the GEMM takes more than 1 us */

    /* marks captured into a graph come back at each replay */
    static const char *const graph_labels[] = { "step", "step" };
    static const int graph_begins[] = { 1, 0 };
    erase_graph_t *graph;
    MUST(erase_stream_begin_capture(s));
    MUST(erase_stream_mark(s, "step", 1));
    MUST(big_gemm(s, &g));
    MUST(erase_stream_mark(s, "step", 0));
    MUST(erase_stream_end_capture(s, &graph));
    assert_int_equal(erase_device_trace_drain(gpu, rec, 16, NULL), 0); /* capture: nothing ran */
    int64_t last = 0;
    for (int r = 0; r < 3; r++) {
        int64_t tr = erase_now_ns();
        MUST(erase_graph_launch(graph, s));
        MUST(erase_stream_synchronize(s));
        n = erase_device_trace_drain(gpu, rec, 16, &dropped);
        assert_int_equal(n, 2);
        check_records(rec, n, graph_labels, graph_begins, number, tr);
        assert_true(rec[0].time_ns > last);
        last = rec[1].time_ns;
    }
    assert_int_equal(dropped, 0);
    erase_graph_destroy(graph);
    erase_stream_destroy(s);
    erase_stream_destroy(other);
    big_free(&g);
}

/* ---- fault word ------------------------------------------------------------- */

static void test_fault_word(void **state)
{
    NEED_GPU();
    erase_stream_t *s;
    MUST(erase_stream_create(gpu, &s));
    int *word = erase_cuda_fault_word(s);
    assert_non_null(word);
    MUST(erase_cuda_take_fault(gpu));
    int code = ERASE_CUDA_FAULT_SPARSE_MERGE_COUNT;
    MUST(erase_memcpy_sync(gpu, word, &code, sizeof code));
    assert_int_equal(erase_cuda_take_fault(gpu), ERASE_ERR_INVALID);
    assert_non_null(strstr(erase_error_message(), erase_cuda_fault_text(code)));
    MUST(erase_cuda_take_fault(gpu)); /* cleared */
    int back = -1;
    MUST(erase_memcpy_sync(gpu, &back, word, sizeof back));
    assert_int_equal(back, 0);
    /* a stream synchronize reports it too */
    code = ERASE_CUDA_FAULT_CLASS_LABEL;
    MUST(erase_memcpy_sync(gpu, word, &code, sizeof code));
    assert_int_equal(erase_stream_synchronize(s), ERASE_ERR_INVALID);
    printf("# %s\n", erase_error_message());
    assert_non_null(strstr(erase_error_message(), erase_cuda_fault_text(code)));
    MUST(erase_stream_synchronize(s));
    erase_stream_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_stream_order),
        cmocka_unit_test(test_cross_stream_wait),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_capture_rules),
        cmocka_unit_test(test_sgemm_vs_cpu),
        cmocka_unit_test(test_sgemm_batched_vs_cpu),
        cmocka_unit_test(test_sgemm_tensor_cores),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_fault_word),
    };
    const size_t ntests = sizeof tests / sizeof tests[0];
    if (open_devices() != 0) {
        printf("Bail out! cannot open the CPU device: %s\n", erase_error_message());
        return 1;
    }
    int failed;
    if (gpu) {
        failed = cmocka_run_group_tests(tests, NULL, NULL);
    } else {
        /* TAP by hand: the no-GPU check, then every GPU case as SKIP */
        printf("1..%zu\n", ntests);
        failed = open_errors_check() != 0;
        printf("%s 1 - %s\n", failed ? "not ok" : "ok", tests[0].name);
        gpu_tap_skip(tests, ntests, 1, no_gpu_reason);
    }
    close_devices();
    return failed ? 1 : 0;
}

/*
 * The CPU device's kernel team (lib/device/cpu/cpu_team.c) behind
 * erase_cpu_parallel: ranges that cover the loop once, on the stream's
 * worker and a helper at the same time; one call on the caller where no
 * team applies; a second stream's region while the team is busy; the
 * team's start inside a drain of the device; many short regions on two
 * streams at once; the helpers gone with the device; the helper in the worker's floating-point
 * mode; and the kernels that split their loops (GELU, ReLU, LayerNorm,
 * softmax cross-entropy, bias, residual adds, AdamW) giving the same bits on one and on two
 * threads. Needs 2 cores for the cases that use a helper (they skip on
 * one); run under ThreadSanitizer in the TSan build (the team is not
 * capped to one thread there, unlike the BLAS).
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/core/fpmode.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"
#include "lib/device/cpu/cpu.h"
#include "lib/ops/cpu/kernels.h"
#include "lib/ops/ops.h"
#include "tests/cpu_device.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

enum { MAX_RANGES = 1024 };

/* What a region's ranges did: each range's bounds and thread. The first
 * range to run waits (up to 10 s): with wait_for_two until a second
 * thread is inside the function, so a region that used a helper proves
 * it; with hold_until until *hold_until is set. */
typedef struct {
    pthread_mutex_t lock;
    size_t begin[MAX_RANGES], end[MAX_RANGES];
    pthread_t thread[MAX_RANGES];
    unsigned fp_mode[MAX_RANGES]; /* the thread's flush-to-zero state (lib/core/fpmode.h) */
    int n;
    atomic_int wait_for_two, inside, timed_out;
    atomic_int *_Atomic hold_until;
    pthread_t worker;
} ranges_t;

static void record(void *p, size_t begin, size_t end)
{
    ranges_t *r = p;
    atomic_fetch_add(&r->inside, 1);
    int two = atomic_exchange(&r->wait_for_two, 0);
    atomic_int *hold = atomic_exchange(&r->hold_until, NULL); /* the first range only */
    if (two || hold) {
        int64_t until = erase_now_ns() + 10 * (int64_t)1000000000;
        while ((two ? atomic_load(&r->inside) < 2 : hold && !atomic_load(hold)) && erase_now_ns() < until)
            nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
        if (erase_now_ns() >= until)
            atomic_store(&r->timed_out, 1);
    }
    pthread_mutex_lock(&r->lock);
    if (r->n < MAX_RANGES) {
        r->begin[r->n] = begin;
        r->end[r->n] = end;
        r->thread[r->n] = pthread_self();
        r->fp_mode[r->n] = erase_fp_flush_state();
    }
    r->n++;
    pthread_mutex_unlock(&r->lock);
}

typedef struct {
    ranges_t *r;
    size_t n, grain;
} region_args_t;

static erase_status_t region_k(const void *p)
{
    const region_args_t *a = p;
    a->r->worker = pthread_self();
    erase_cpu_parallel(a->n, a->grain, record, a->r);
    return ERASE_OK;
}

/* Sort the ranges by begin and check that they cover [0, n) once, each
 * beginning at a multiple of grain; returns the distinct threads. */
static int check_cover(ranges_t *r, size_t n, size_t grain)
{
    assert_true(r->n >= 1 && r->n <= MAX_RANGES);
    for (int i = 1; i < r->n; i++)
        for (int j = i; j > 0 && r->begin[j - 1] > r->begin[j]; j--) {
            size_t b = r->begin[j], e = r->end[j];
            pthread_t t = r->thread[j];
            unsigned m = r->fp_mode[j];
            r->begin[j] = r->begin[j - 1], r->end[j] = r->end[j - 1], r->thread[j] = r->thread[j - 1];
            r->fp_mode[j] = r->fp_mode[j - 1];
            r->begin[j - 1] = b, r->end[j - 1] = e, r->thread[j - 1] = t, r->fp_mode[j - 1] = m;
        }
    size_t at = 0;
    for (int i = 0; i < r->n; i++) {
        assert_int_equal(r->begin[i], at);
        assert_true(r->end[i] > r->begin[i]);
        assert_int_equal(r->begin[i] % grain, 0);
        at = r->end[i];
    }
    assert_int_equal(at, n);
    int threads = 0;
    for (int i = 0; i < r->n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= pthread_equal(r->thread[i], r->thread[j]);
        threads += !seen;
    }
    return threads;
}

static ranges_t *ranges_new(int wait_for_two)
{
    ranges_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    pthread_mutex_init(&r->lock, NULL);
    r->wait_for_two = wait_for_two;
    return r;
}

static void ranges_free(ranges_t *r)
{
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static int threads_of_process(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8))
            n = atoi(line + 8);
    if (f)
        fclose(f);
    return n;
}

/* Outside a stream's worker: one call with the whole loop, on the caller. */
static void test_outside_a_worker(void **state)
{
    (void)state;
    ranges_t *r = ranges_new(0);
    erase_cpu_parallel(1000, 7, record, r);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->begin[0], 0);
    assert_int_equal(r->end[0], 1000);
    assert_true(pthread_equal(r->thread[0], pthread_self()));
    erase_cpu_parallel(0, 7, record, r); /* nothing to do: no call */
    assert_int_equal(r->n, 1);
    ranges_free(r);
}

/* Two threads: the worker and a helper inside the function at once, the
 * ranges covering the loop once at multiples of the grain. One thread:
 * one call on the worker. */
static void test_worker_and_helper(void **state)
{
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 2)
        skip(); /* one core: the team has no helper */
    erase_device_t *dev;
    erase_stream_t *s;
    assert_int_equal(erase_test_cpu_open_stream(2, 0, &dev, &s, NULL), 0);
    int before = threads_of_process();
    ranges_t *r = ranges_new(1);
    region_args_t a = { .r = r, .n = 1000, .grain = 7 };
    MUST(erase_cpu_launch(s, region_k, &a, sizeof a));
    MUST(erase_stream_synchronize(s));
    int threads = check_cover(r, 1000, 7);
    print_message("1000 indices, grain 7: %d ranges on %d threads\n", r->n, threads);
    assert_false(atomic_load(&r->timed_out));
    assert_int_equal(threads, 2);
    assert_int_equal(threads_of_process() - before, cores - 1); /* the team started */
    int on_worker = 0;
    for (int i = 0; i < r->n; i++)
        on_worker |= pthread_equal(r->thread[i], r->worker);
    assert_true(on_worker);
    for (int i = 0; i < r->n; i++) /* the helper runs in the worker's floating-point mode */
        assert_int_equal(r->fp_mode[i], r->fp_mode[0]);
    ranges_free(r);

    MUST(erase_device_set_blas_threads(dev, 1));
    r = ranges_new(0);
    a.r = r;
    MUST(erase_cpu_launch(s, region_k, &a, sizeof a));
    MUST(erase_stream_synchronize(s));
    assert_int_equal(r->n, 1);
    assert_int_equal(r->end[0], 1000);
    assert_true(pthread_equal(r->thread[0], r->worker));
    ranges_free(r);
    erase_test_cpu_close_stream(dev, s, NULL);
    /* the helpers joined, and the stream's worker (the count can lag a
     * join by a moment: the kernel lowers it after the thread's id clears) */
    int64_t until = erase_now_ns() + 2 * (int64_t)1000000000;
    while (threads_of_process() != before - 1 && erase_now_ns() < until)
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    assert_int_equal(threads_of_process(), before - 1);
}

/* A kernel that sleeps 200 ms on its stream. */
static erase_status_t nap_k(const void *p)
{
    (void)p;
    nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
    return ERASE_OK;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char text[] = "test-team: the device's first region deadlocked with a drain (30 s)\n";
    (void)!write(2, text, sizeof text - 1);
    _exit(1);
}

/* The device's first region starts the team while the host drains the
 * device (erase_event_destroy waits for every stream's queue): the start
 * must not wait for the lock the drain holds. Ends in 30 s or fails. */
static void test_first_region_during_drain(void **state)
{
    (void)state;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip();
    erase_device_t *dev;
    erase_stream_t *s;
    erase_event_t *e;
    assert_int_equal(erase_test_cpu_open_stream(2, 0, &dev, &s, NULL), 0);
    MUST(erase_event_create(dev, &e));
    ranges_t *r = ranges_new(0);
    region_args_t a = { .r = r, .n = 1000, .grain = 7 };
    MUST(erase_cpu_launch(s, nap_k, NULL, 0));
    MUST(erase_cpu_launch(s, region_k, &a, sizeof a));
    signal(SIGALRM, on_alarm);
    alarm(30);
    erase_event_destroy(e); /* the drain: the region starts the team inside it */
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    MUST(erase_stream_synchronize(s));
    check_cover(r, 1000, 7);
    ranges_free(r);
    erase_test_cpu_close_stream(dev, s, NULL);
}

/* A region that finds the team busy (stream 1's region holds it until
 * stream 2's has ended) runs alone on its worker: one call. */
typedef struct {
    ranges_t *r;
    atomic_int *done;
} second_args_t;

static erase_status_t second_region_k(const void *p)
{
    const second_args_t *a = p;
    a->r->worker = pthread_self();
    erase_cpu_parallel(4096, 1, record, a->r);
    atomic_store(a->done, 1);
    return ERASE_OK;
}

static void test_busy_team(void **state)
{
    (void)state;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip();
    erase_device_t *dev;
    erase_stream_t *s1, *s2;
    assert_int_equal(erase_test_cpu_open_stream(2, 0, &dev, &s1, NULL), 0);
    MUST(erase_stream_create(dev, &s2));
    atomic_int second_done = 0;
    ranges_t *r1 = ranges_new(0), *r2 = ranges_new(0);
    atomic_store(&r1->hold_until, &second_done);
    region_args_t a1 = { .r = r1, .n = 4096, .grain = 1 };
    MUST(erase_cpu_launch(s1, region_k, &a1, sizeof a1));
    int64_t until = erase_now_ns() + 10 * (int64_t)1000000000;
    while (atomic_load(&r1->inside) == 0 && erase_now_ns() < until) /* stream 1 holds the team */
        nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
    assert_int_equal(atomic_load(&r1->inside) > 0, 1);
    second_args_t a2 = { .r = r2, .done = &second_done };
    MUST(erase_cpu_launch(s2, second_region_k, &a2, sizeof a2));
    MUST(erase_stream_synchronize(s2));
    MUST(erase_stream_synchronize(s1));
    assert_false(atomic_load(&r1->timed_out)); /* stream 2 ended while stream 1 held the team */
    assert_int_equal(r2->n, 1);
    assert_int_equal(r2->begin[0], 0);
    assert_int_equal(r2->end[0], 4096);
    assert_true(pthread_equal(r2->thread[0], r2->worker));
    check_cover(r1, 4096, 1);
    ranges_free(r1);
    ranges_free(r2);
    erase_stream_destroy(s2);
    erase_test_cpu_close_stream(dev, s1, NULL);
}

/* Many short regions back to back on two streams at once (helpers late
 * for a region, the team passing between streams): every index of every
 * region counted once. */
typedef struct {
    atomic_long *count;
} count_args_t;

static void count_range(void *p, size_t begin, size_t end)
{
    atomic_fetch_add(((count_args_t *)p)->count, (long)(end - begin));
}

static erase_status_t count_k(const void *p)
{
    count_args_t a = *(const count_args_t *)p;
    erase_cpu_parallel(64, 1, count_range, &a);
    return ERASE_OK;
}

static void test_many_regions(void **state)
{
    (void)state;
    enum { REGIONS = 3000 };
    erase_device_t *dev;
    erase_stream_t *s[2];
    assert_int_equal(erase_test_cpu_open_stream(2, 0, &dev, &s[0], NULL), 0);
    MUST(erase_stream_create(dev, &s[1]));
    atomic_long count[2] = { 0, 0 };
    for (int i = 0; i < REGIONS; i++)
        for (int j = 0; j < 2; j++) {
            count_args_t a = { &count[j] };
            MUST(erase_cpu_launch(s[j], count_k, &a, sizeof a));
        }
    MUST(erase_stream_synchronize(s[0]));
    MUST(erase_stream_synchronize(s[1]));
    assert_int_equal(atomic_load(&count[0]), 64L * REGIONS);
    assert_int_equal(atomic_load(&count[1]), 64L * REGIONS);
    erase_stream_destroy(s[1]);
    erase_test_cpu_close_stream(dev, s[0], NULL);
}

/* ---- the ops that split their loops: the same bits on 1 and 2 threads ---- */

enum { ROWS = 517, DIM = 96, CLASSES = 131, ELEMS = ROWS * DIM };

typedef struct {
    float x[ELEMS], dy[ELEMS], gamma[DIM], beta[DIM], z[ROWS * CLASSES];
    int32_t labels[ROWS];
    float w0[ELEMS], m0[ELEMS], v0[ELEMS];
} inputs_t;

typedef struct {
    float gelu[ELEMS], dgelu[ELEMS], ln[ELEMS], mean[ROWS], rstd[ROWS], dx[ELEMS], dgamma[DIM],
        dbeta[DIM], loss, dz[ROWS * CLASSES], w[ELEMS], m[ELEMS], v[ELEMS], biased[ELEMS], db[DIM], relu[ELEMS], drelu[ELEMS],
        axpy[ELEMS];
} outputs_t;

/* The linear layer's bias kernels without a GEMM (in = 0; no dx, dw):
 * GEMMs may round differently on another BLAS thread count. */
typedef struct {
    const inputs_t *in;
    outputs_t *out;
} bias_args_t;

static erase_status_t bias_k(const void *p)
{
    const bias_args_t *a = p;
    erase_k_linear_forward_f32(ROWS, 0, DIM, NULL, NULL, a->in->beta, a->out->biased);
    erase_k_linear_backward_f32(ROWS, 0, DIM, NULL, NULL, a->in->dy, NULL, NULL, a->out->db);
    return ERASE_OK;
}

static void fill_inputs(inputs_t *in)
{
    uint64_t rng = 20261203;
    for (int i = 0; i < ELEMS; i++) {
        in->x[i] = erase_rng_uniform(&rng, -4, 4);
        in->dy[i] = erase_rng_uniform(&rng, -1, 1);
        in->w0[i] = erase_rng_uniform(&rng, -1, 1);
        in->m0[i] = erase_rng_uniform(&rng, -0.1f, 0.1f);
        in->v0[i] = erase_rng_uniform(&rng, 0, 0.01f);
    }
    for (int d = 0; d < DIM; d++) {
        in->gamma[d] = erase_rng_uniform(&rng, 0.5f, 1.5f);
        in->beta[d] = erase_rng_uniform(&rng, -0.5f, 0.5f);
    }
    for (int i = 0; i < ROWS * CLASSES; i++)
        in->z[i] = erase_rng_uniform(&rng, -8, 8);
    for (int r = 0; r < ROWS; r++)
        in->labels[r] = (int32_t)(erase_rng_next(&rng) % CLASSES);
}

/* Every op on a device of `threads` threads, outputs poisoned first. */
static void run_ops(const inputs_t *in, int threads, outputs_t *out)
{
    erase_device_t *dev;
    erase_stream_t *s;
    assert_int_equal(erase_test_cpu_open_stream(threads, 0, &dev, &s, NULL), 0);
    memset(out, 0xff, sizeof *out);
    memcpy(out->w, in->w0, sizeof out->w);
    memcpy(out->m, in->m0, sizeof out->m);
    memcpy(out->v, in->v0, sizeof out->v);
    erase_optim_clock_t clock = { .step = 3, .lr = 1e-3f, .nonfinite = 0 };
    MUST(erase_gelu_tanh_forward(s, ELEMS, in->x, out->gelu));
    MUST(erase_gelu_tanh_backward(s, ELEMS, in->x, in->dy, out->dgelu));
    MUST(erase_layernorm_forward(s, ROWS, DIM, 1e-5f, in->x, in->gamma, in->beta, out->ln, out->mean, out->rstd));
    MUST(erase_layernorm_backward(s, ROWS, DIM, in->x, in->gamma, out->mean, out->rstd, in->dy, out->dx,
                                  out->dgamma, out->dbeta));
    MUST(erase_softmax_xent(s, ROWS, CLASSES, in->z, in->labels, 0.5f, &out->loss, out->dz));
    MUST(erase_adamw_update(s, ELEMS, out->w, in->dy, out->m, out->v, &clock, 1.0f, 0.9f, 0.95f, 1e-8f, 0.1f));
    MUST(erase_relu_forward(s, ELEMS, in->x, out->relu));
    MUST(erase_relu_backward(s, ELEMS, out->relu, in->dy, out->drelu));
    memcpy(out->axpy, in->w0, sizeof out->axpy);
    MUST(erase_axpy(s, ELEMS, 0.75f, in->x, out->axpy));
    bias_args_t b = { in, out };
    MUST(erase_cpu_launch(s, bias_k, &b, sizeof b));
    MUST(erase_stream_synchronize(s));
    erase_test_cpu_close_stream(dev, s, NULL);
}

static void test_ops_same_bits(void **state)
{
    (void)state;
    inputs_t *in = malloc(sizeof *in);
    outputs_t *one = malloc(sizeof *one), *two = malloc(sizeof *two);
    assert_true(in && one && two);
    fill_inputs(in);
    run_ops(in, 1, one);
    run_ops(in, 2, two);
#define SAME(field) assert_memory_equal(one->field, two->field, sizeof one->field)
    SAME(gelu);
    SAME(dgelu);
    SAME(ln);
    SAME(mean);
    SAME(rstd);
    SAME(dx);
    SAME(dgamma);
    SAME(dbeta);
    assert_memory_equal(&one->loss, &two->loss, sizeof one->loss);
    SAME(dz);
    SAME(w);
    SAME(m);
    SAME(v);
    SAME(biased);
    SAME(db);
    SAME(relu);
    SAME(drelu);
    SAME(axpy);
#undef SAME
    /* and they are the loss: against the double-precision kernel */
    double *z8 = malloc(sizeof(double) * ROWS * CLASSES);
    assert_non_null(z8);
    for (int i = 0; i < ROWS * CLASSES; i++)
        z8[i] = in->z[i];
    double ref = erase_k_softmax_xent_f64(ROWS, CLASSES, z8, in->labels, 0.5, NULL);
    print_message("softmax cross-entropy: %.7g (double: %.7g)\n", one->loss, ref);
    assert_true(fabs(one->loss - ref) <= 1e-5 * ref);
    free(z8);
    free(in);
    free(one);
    free(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outside_a_worker),
        cmocka_unit_test(test_worker_and_helper),
        cmocka_unit_test(test_busy_team),
        cmocka_unit_test(test_first_region_during_drain),
        cmocka_unit_test(test_many_regions),
        cmocka_unit_test(test_ops_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

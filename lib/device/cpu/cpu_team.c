/*
 * A CPU device's kernel team: helper threads that split a kernel's loop
 * with the stream worker that runs it (erase_cpu_parallel, cpu.h).
 *
 * Why: a stream with n BLAS threads runs its GEMMs on n cores, but the
 * kernels between them (GELU, LayerNorm, softmax, AdamW) ran on its worker
 * alone while OpenBLAS's other threads waited. With the team, a stream's
 * non-GEMM kernels use as many threads as its GEMMs do (the device's BLAS
 * thread count); a stream with one BLAS thread, as the early-backward
 * schedules give each of their side streams, runs them alone as before.
 *
 * How: the team holds cores - 1 helpers, started with the first region
 * that can use one. A region is published as a generation number beside
 * its loop; the worker and the helpers claim its parts through one atomic
 * word holding (generation, parts, next part), so a helper late for one
 * region can never claim a part of the next, nor read the next one's
 * fields while they are written. The worker waits for every part it
 * did not run. A helper sleeps on a condition variable between regions:
 * polling for the next one instead (50 us) made no difference to gpt's
 * steps and cost ctr's 5% on 2 cores, where it took the second core from
 * OpenBLAS's thread in the GEMMs that follow (bench/RESULTS.md). One
 * stream uses the team at a time: a second stream's region that finds it
 * busy runs alone on its worker (same results: see erase_cpu_parallel).
 * Every sleeping helper is woken for a region, also those beyond the
 * stream's threads that will not join it: cheap with the few cores of a
 * rank here; a host with many cores per rank would want one wake-up per
 * joining helper.
 * Helpers set the worker's floating-point mode (lib/core/fpmode.h), so a
 * part computes the same bits on either thread.
 */
#include "lib/device/cpu/cpu_internal.h"

#include "lib/core/fpmode.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Parts per thread of a region: parts are claimed as they finish, so a
 * helper preempted by another process delays the region by one part. */
#define PARTS_PER_THREAD 4
#define PARTS_MAX 0xffff /* parts and next part: 16 bits each of the claim word */
#define GEN(c) ((uint32_t)((c) >> 32))
#define PARTS(c) ((uint32_t)((c) >> 16) & PARTS_MAX)
#define NEXT(c) ((uint32_t)(c) & PARTS_MAX)

struct cpu_team {
    pthread_mutex_t busy;      /* held by the worker running a region */
    pthread_mutex_t lock;      /* guards sleeping and shutdown, and the wake-up */
    pthread_cond_t wake;
    int helpers;               /* started */
    pthread_t *threads;
    int sleeping, shutdown;
    /* the region: written by its worker before it publishes the generation */
    erase_cpu_range_fn fn;
    void *ctx;
    size_t n, grain;
    _Atomic int joining;       /* helpers that may join it (BLAS threads - 1); a hint */
    _Atomic uint64_t claim;    /* generation << 32 | parts << 16 | next part */
    _Atomic uint32_t done;     /* parts completed */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Part p of `parts` of the region: boundaries at multiples of grain. */
static void run_part(cpu_team_t *t, uint32_t p, uint32_t parts)
{
    size_t units = (t->n + t->grain - 1) / t->grain;
    size_t b = units * p / parts * t->grain, e = units * (p + 1) / parts * t->grain;
    if (e > t->n)
        e = t->n;
    if (b < e)
        t->fn(t->ctx, b, e);
}

/* Claim and run parts of generation gen until none is left. A part
 * claimed keeps its region's fields from changing: the worker waits for
 * it before it returns. */
static void run_parts(cpu_team_t *t, uint32_t gen)
{
    uint64_t c = atomic_load_explicit(&t->claim, memory_order_acquire);
    for (;;) {
        if (GEN(c) != gen || NEXT(c) >= PARTS(c))
            return;
        if (atomic_compare_exchange_weak_explicit(&t->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            run_part(t, NEXT(c), PARTS(c));
            atomic_fetch_add_explicit(&t->done, 1, memory_order_release);
            c = atomic_load_explicit(&t->claim, memory_order_acquire);
        }
    }
}

typedef struct {
    cpu_team_t *team;
    int index; /* 0-based among the helpers */
} helper_arg_t;

static void *helper_main(void *arg)
{
    helper_arg_t h = *(helper_arg_t *)arg;
    free(arg);
    cpu_team_t *t = h.team;
    erase_fp_thread_init(); /* the stream worker's mode: lib/core/fpmode.h */
    uint32_t seen = 0; /* the team's generation when it started: the first region may be out already */
    for (;;) {
        pthread_mutex_lock(&t->lock);
        t->sleeping++;
        uint32_t gen = seen;
        while (!t->shutdown && (gen = GEN(atomic_load_explicit(&t->claim, memory_order_acquire))) == seen)
            pthread_cond_wait(&t->wake, &t->lock);
        t->sleeping--;
        int stop = t->shutdown;
        pthread_mutex_unlock(&t->lock);
        if (stop)
            return NULL;
        seen = gen;
        if (h.index < atomic_load_explicit(&t->joining, memory_order_relaxed))
            run_parts(t, gen);
    }
}

/* Device d's team, its helpers (cores - 1) started by the first call;
 * NULL when none could start (then regions run on their worker alone). */
static cpu_team_t *team_of(cpu_device_t *d)
{
    cpu_team_t *t = atomic_load_explicit(&d->team, memory_order_acquire);
    if (t)
        return t->helpers > 0 ? t : NULL;
    pthread_mutex_lock(&d->team_lock);
    t = atomic_load_explicit(&d->team, memory_order_relaxed);
    if (!t && d->cores > 1 && (t = calloc(1, sizeof *t)) != NULL) {
        t->threads = calloc((size_t)d->cores - 1, sizeof *t->threads);
        pthread_mutex_init(&t->busy, NULL);
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->wake, NULL);
        for (int i = 0; t->threads && i < d->cores - 1; i++) {
            helper_arg_t *a = malloc(sizeof *a);
            if (!a)
                break;
            *a = (helper_arg_t){ t, i };
            if (pthread_create(&t->threads[i], NULL, helper_main, a) != 0) {
                free(a);
                break;
            }
            t->helpers++;
        }
        atomic_store_explicit(&d->team, t, memory_order_release); /* kept with 0 helpers: not tried again */
    }
    pthread_mutex_unlock(&d->team_lock);
    return t && t->helpers > 0 ? t : NULL;
}

void cpu_team_stop(cpu_device_t *d)
{
    cpu_team_t *t = atomic_load_explicit(&d->team, memory_order_acquire);
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->shutdown = 1;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < t->helpers; i++)
        pthread_join(t->threads[i], NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->busy);
    free(t->threads);
    free(t);
    atomic_store_explicit(&d->team, NULL, memory_order_relaxed);
}

void erase_cpu_parallel(size_t n, size_t grain, erase_cpu_range_fn fn, void *ctx)
{
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    cpu_stream_t *s = cpu_stream_of_worker();
    int threads = s ? s->dev->threads : 1;
    size_t units = (n + grain - 1) / grain;
    cpu_team_t *t = threads >= 2 && units >= 2 ? team_of(s->dev) : NULL;
    if (!t) {
        fn(ctx, 0, n);
        return;
    }
    if (pthread_mutex_trylock(&t->busy) != 0) {
        fn(ctx, 0, n); /* another stream's region holds the team */
        return;
    }
    size_t parts = (size_t)threads * PARTS_PER_THREAD;
    if (parts > units)
        parts = units;
    if (parts > PARTS_MAX)
        parts = PARTS_MAX;
    t->fn = fn;
    t->ctx = ctx;
    t->n = n;
    t->grain = grain;
    atomic_store_explicit(&t->joining, threads - 1, memory_order_relaxed);
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    uint32_t gen = GEN(atomic_load_explicit(&t->claim, memory_order_relaxed)) + 1;
    atomic_store_explicit(&t->claim, (uint64_t)gen << 32 | (uint64_t)parts << 16, memory_order_seq_cst);
    pthread_mutex_lock(&t->lock);
    if (t->sleeping)
        pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    run_parts(t, gen);
    for (int i = 0; atomic_load_explicit(&t->done, memory_order_acquire) < parts;) {
        if (i < 4096) {
            cpu_relax();
            i++;
        } else {
            sched_yield(); /* a helper was preempted inside its part */
        }
    }
    pthread_mutex_unlock(&t->busy);
}

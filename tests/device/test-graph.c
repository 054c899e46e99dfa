/*
 * Graph replay equals eager issue, bitwise, on 1 to 4 streams.
 *
 * A random program (fixed seed per case) of elementwise kernels, GEMMs and
 * cross-stream reads with event edges is issued once eagerly and once
 * captured and replayed; the buffers must match bit for bit, also after
 * replaying several times in a row, and a small graph survives 1,000
 * replays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/core/rng.h"
#include "tests/cpu_device.h"
#include "tests/device/kernels.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

enum { MAX_STREAMS = 4, DIM = 24, WIDTH = DIM * DIM, OPS = 300 };

static erase_device_t *dev;

typedef struct {
    int nstreams;
    erase_stream_t *s[MAX_STREAMS];
    erase_event_t *wrote[MAX_STREAMS]; /* after the last write of buf[i] */
    erase_event_t *read[MAX_STREAMS][MAX_STREAMS]; /* [reader][owner]: after a read */
    erase_event_t *fork, *join[MAX_STREAMS];
    float *buf[MAX_STREAMS];  /* owned (written) by stream i */
    float *tmp[MAX_STREAMS];  /* GEMM output scratch of stream i */
    float *w;                 /* read-only weights */
} world_t;

static void world_init(world_t *w, int nstreams)
{
    memset(w, 0, sizeof *w);
    w->nstreams = nstreams;
    MUST(erase_malloc(dev, WIDTH * sizeof(float), (void **)&w->w));
    uint64_t rng = 7;
    for (int i = 0; i < WIDTH; i++)
        w->w[i] = erase_rng_uniform(&rng, -0.2f, 0.2f);
    MUST(erase_event_create(dev, &w->fork));
    for (int i = 0; i < nstreams; i++) {
        MUST(erase_stream_create(dev, &w->s[i]));
        MUST(erase_event_create(dev, &w->wrote[i]));
        MUST(erase_event_create(dev, &w->join[i]));
        for (int j = 0; j < nstreams; j++)
            MUST(erase_event_create(dev, &w->read[i][j]));
        MUST(erase_malloc(dev, WIDTH * sizeof(float), (void **)&w->buf[i]));
        MUST(erase_malloc(dev, WIDTH * sizeof(float), (void **)&w->tmp[i]));
    }
}

static void world_reset(world_t *w)
{
    for (int i = 0; i < w->nstreams; i++) {
        MUST(erase_stream_synchronize(w->s[i]));
        uint64_t rng = 100 + (uint64_t)i;
        for (int j = 0; j < WIDTH; j++)
            w->buf[i][j] = erase_rng_uniform(&rng, -1.0f, 1.0f);
        memset(w->tmp[i], 0, WIDTH * sizeof(float));
    }
}

static void world_free(world_t *w)
{
    for (int i = 0; i < w->nstreams; i++) {
        MUST(erase_stream_synchronize(w->s[i]));
        erase_stream_destroy(w->s[i]);
        erase_event_destroy(w->wrote[i]);
        erase_event_destroy(w->join[i]);
        for (int j = 0; j < w->nstreams; j++)
            erase_event_destroy(w->read[i][j]);
        erase_free(dev, w->buf[i]);
        erase_free(dev, w->tmp[i]);
    }
    erase_event_destroy(w->fork);
    erase_free(dev, w->w);
}

/*
 * Issue the random program. Stream 0 forks the others first and joins them
 * at the end (needed for capture, harmless eagerly). Stream i writes only
 * buf[i] and tmp[i]; reading buf[j] waits for j's last write, and j's next
 * write waits for that read (write-after-read).
 */
static void issue_program(world_t *w, uint64_t seed)
{
    int n = w->nstreams;
    MUST(erase_event_record(w->fork, w->s[0]));
    for (int i = 1; i < n; i++)
        MUST(erase_stream_wait_event(w->s[i], w->fork));
    uint64_t rng = seed;
    for (int op = 0; op < OPS; op++) {
        int i = (int)erase_rng_below(&rng, (uint32_t)n);
        erase_stream_t *s = w->s[i];
        int kind = (int)erase_rng_below(&rng, 3);
        /* before writing buf[i], wait for every reader of the previous value */
        for (int r = 0; r < n; r++)
            if (r != i)
                MUST(erase_stream_wait_event(s, w->read[r][i]));
        if (kind == 0) {
            MUST(k_affine(s, w->buf[i], WIDTH, erase_rng_uniform(&rng, 0.5f, 1.0f),
                          erase_rng_uniform(&rng, -0.1f, 0.1f)));
        } else if (kind == 1 && n > 1) {
            int j = (i + 1 + (int)erase_rng_below(&rng, (uint32_t)n - 1)) % n;
            MUST(erase_stream_wait_event(s, w->wrote[j]));
            MUST(k_axpy(s, w->buf[i], w->buf[j], WIDTH, erase_rng_uniform(&rng, -0.5f, 0.5f)));
            MUST(erase_event_record(w->read[i][j], s));
        } else {
            MUST(erase_sgemm(s, ERASE_NO_TRANS, (kind & 1) ? ERASE_TRANS : ERASE_NO_TRANS, DIM, DIM,
                             DIM, 1.0f, w->buf[i], DIM, w->w, DIM, 0.0f, w->tmp[i], DIM));
            MUST(k_axpy(s, w->buf[i], w->tmp[i], WIDTH, 0.5f));
            MUST(k_affine(s, w->buf[i], WIDTH, 0.5f, 0.0f));
        }
        MUST(erase_event_record(w->wrote[i], s));
    }
    for (int i = 1; i < n; i++) {
        MUST(erase_event_record(w->join[i], w->s[i]));
        MUST(erase_stream_wait_event(w->s[0], w->join[i]));
    }
}

static void snapshot(world_t *w, float *out)
{
    MUST(erase_stream_synchronize(w->s[0]));
    for (int i = 0; i < w->nstreams; i++)
        memcpy(out + (size_t)i * WIDTH, w->buf[i], WIDTH * sizeof(float));
}

static int count_differences(const float *a, const float *b, size_t n)
{
    int diff = 0;
    for (size_t i = 0; i < n; i++)
        diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return diff;
}

static void replay_matches_eager(int nstreams, int repeats)
{
    /* separate worlds (same initial values): CUDA forbids waiting inside a
     * capture on events recorded outside it, so eager and captured issue
     * must not share events */
    world_t w, e;
    world_init(&w, nstreams);
    world_init(&e, nstreams);
    size_t total = (size_t)nstreams * WIDTH;
    float *eager = malloc(total * sizeof(float)), *replay = malloc(total * sizeof(float));
    assert_non_null(eager);
    assert_non_null(replay);
    uint64_t seed = 1000 + (uint64_t)nstreams;

    world_reset(&e);
    for (int r = 0; r < repeats; r++)
        issue_program(&e, seed);
    snapshot(&e, eager);

    world_reset(&w);
    erase_graph_t *g;
    MUST(erase_stream_begin_capture(w.s[0]));
    issue_program(&w, seed);
    MUST(erase_stream_end_capture(w.s[0], &g));
    for (int i = 0; i < WIDTH; i++) /* capture ran nothing */
        assert_true(w.buf[0][i] >= -1.0f && w.buf[0][i] <= 1.0f);
    for (int r = 0; r < repeats; r++)
        MUST(erase_graph_launch(g, w.s[0]));
    snapshot(&w, replay);

    int diff = count_differences(eager, replay, total);
    print_message("%d stream%s, %zu graph nodes, %d replay%s: %d of %zu floats differ from eager issue\n",
                  nstreams, nstreams > 1 ? "s" : "", erase_graph_node_count(g), repeats,
                  repeats > 1 ? "s" : "", diff, total);
    assert_int_equal(diff, 0);
    erase_graph_destroy(g);
    free(eager);
    free(replay);
    world_free(&w);
    world_free(&e);
}

static void test_replay_1_stream(void **state) { replay_matches_eager(1, 1); }
static void test_replay_2_streams(void **state) { replay_matches_eager(2, 1); }
static void test_replay_3_streams(void **state) { replay_matches_eager(3, 3); }
static void test_replay_4_streams(void **state) { replay_matches_eager(4, 3); }

/* A fork/join graph replayed 1,000 times: counts every execution. */
static void test_thousand_replays(void **state)
{
    erase_stream_t *a, *b;
    erase_event_t *fork, *join;
    MUST(erase_stream_create(dev, &a));
    MUST(erase_stream_create(dev, &b));
    MUST(erase_event_create(dev, &fork));
    MUST(erase_event_create(dev, &join));
    float *x, *y;
    MUST(erase_malloc(dev, sizeof(float), (void **)&x));
    MUST(erase_malloc(dev, sizeof(float), (void **)&y));
    *x = 0;
    *y = 0;
    erase_graph_t *g;
    MUST(erase_stream_begin_capture(a));
    MUST(erase_event_record(fork, a));
    MUST(erase_stream_wait_event(b, fork));
    MUST(k_affine(a, x, 1, 1.0f, 1.0f));
    MUST(k_affine(b, y, 1, 1.0f, 2.0f));
    MUST(erase_event_record(join, b));
    MUST(erase_stream_wait_event(a, join));
    MUST(k_axpy(a, x, y, 1, 0.0f));
    MUST(erase_stream_end_capture(a, &g));
    for (int i = 0; i < 1000; i++)
        MUST(erase_graph_launch(g, a));
    MUST(erase_stream_synchronize(a));
    print_message("1000 replays: x = %.0f (expected 1000), y = %.0f (expected 2000)\n", *x, *y);
    assert_true(*x == 1000.0f);
    assert_true(*y == 2000.0f);
    erase_graph_destroy(g);
    erase_free(dev, x);
    erase_free(dev, y);
    erase_event_destroy(fork);
    erase_event_destroy(join);
    erase_stream_destroy(a);
    erase_stream_destroy(b);
}

static int setup(void **state)
{
    return erase_test_cpu_open(1, 0, &dev);
}

static int teardown(void **state)
{
    erase_device_close(dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_1_stream),
        cmocka_unit_test(test_replay_2_streams),
        cmocka_unit_test(test_replay_3_streams),
        cmocka_unit_test(test_replay_4_streams),
        cmocka_unit_test(test_thousand_replays),
    };
    return cmocka_run_group_tests_name("device graphs", tests, setup, teardown);
}

/*
 * Pipeline schedules (lib/sched/pipe_schedule.h): for gpipe, 1f1b, paci and
 * local, P = 1..8 stages, M = 1..9 micro-batches (M < P and M not a
 * multiple of P included), 1..3 steps and paci's a in {1, 2, P-1, M},
 * every stage's list is checked against the definitions by an independent
 * scan (each micro-batch forwarded and backwarded once, in order; the
 * UPDATEs; the micro-batches in flight; every BACKWARD's drift; steps and
 * the rule that a message's send is issued no later than its receive;
 * local: stage s's steps s .. steps+s-1, each F m B m of its M
 * micro-batches then UPDATE, an activation received one step after its
 * send, no gradient message) and replayed with unit times without
 * deadlock. Local's makespan with equal stage times is checked against
 * its formula. The replay's times are checked against
 * hand computations and the analytic bubble; mismatched lists are reported
 * as deadlocks at the stage that waits; bad options and lists of different
 * schedules are refused with their messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/sched/pipe_schedule.h"

/* Stage lists 0..P-1 of one configuration into l[]. */
static void build_all(pipe_kind_t kind, int P, int M, int a, int64_t steps, pipe_schedule_t *l)
{
    for (int s = 0; s < P; s++) {
        pipe_schedule_options_t o = { .kind = kind, .stages = P, .stage = s, .micro_batches = M,
                                      .accumulate = a, .steps = steps };
        assert_int_equal(pipe_schedule_build(&o, &l[s]), ERASE_OK);
    }
}

static void free_all(pipe_schedule_t *l, int P)
{
    for (int s = 0; s < P; s++)
        pipe_schedule_free(&l[s]);
}

/* Index of stage list l's action (kind, m); -1 when absent. */
static int64_t find(const pipe_schedule_t *l, pipe_action_kind_t kind, int64_t m)
{
    for (int64_t i = 0; i < l->count; i++)
        if (l->actions[i].kind == kind && l->actions[i].micro == m)
            return i;
    return -1;
}

/* One stage's list against the definitions (see the file's comment).
 * Local: stage s runs batch i (micro-batches iM .. iM+M-1) in step i + s,
 * F m immediately followed by B m, the UPDATE closing the batch. */
static void check_stage(const pipe_schedule_t *l, pipe_kind_t kind, int P, int s, int M, int a, int64_t steps)
{
    int64_t lead = kind == PIPE_LOCAL ? s : 0; /* the steps a batch is behind on this stage */
    int64_t N = M * steps, nf = 0, nb = 0, nu = 0, since = 0, in_flight = 0, peak = 0, last_step = lead;
    int max_drift = 0;
    int64_t *fwd_at = calloc((size_t)N, sizeof *fwd_at); /* UPDATEs before FORWARD m */
    assert_non_null(fwd_at);
    for (int64_t i = 0; i < l->count; i++) {
        const pipe_action_t *x = &l->actions[i];
        assert_true(x->step >= last_step && x->step < steps + lead); /* monotone, in the segment (+ drain) */
        last_step = x->step;
        if (x->kind == PIPE_FORWARD) {
            assert_int_equal(x->micro, nf); /* every micro-batch once, in increasing order */
            fwd_at[nf++] = nu;
            peak = ++in_flight > peak ? in_flight : peak;
        } else if (x->kind == PIPE_BACKWARD) {
            assert_int_equal(x->micro, nb);
            assert_true(x->micro < nf); /* after its FORWARD */
            if (kind == PIPE_LOCAL) /* right after it */
                assert_true(i > 0 && l->actions[i - 1].kind == PIPE_FORWARD && l->actions[i - 1].micro == x->micro);
            assert_int_equal(x->drift, nu - fwd_at[nb]);
            max_drift = x->drift > max_drift ? x->drift : max_drift;
            nb++;
            since++;
            in_flight--;
        } else {
            assert_int_equal(x->micro, -1);
            assert_true(i > 0 && l->actions[i - 1].kind == PIPE_BACKWARD);
            if (kind == PIPE_PACI) /* after every a-th BACKWARD, and the drain after the last */
                assert_true(since == a || (nb == N && since > 0 && since < a && i == l->count - 1));
            else /* at the end of each step: all its micro-batches backwarded */
                assert_true(nb == (x->step - lead + 1) * M && nf == nb);
            since = 0;
            nu++;
        }
        if (kind != PIPE_PACI && x->kind != PIPE_UPDATE)
            assert_int_equal(x->step, x->micro / M + lead); /* the micro-batch's step */
    }
    assert_int_equal(nf, N);
    assert_int_equal(nb, N);
    assert_int_equal(l->actions[l->count - 1].kind, PIPE_UPDATE);
    assert_int_equal(nu, kind == PIPE_PACI ? (N + a - 1) / a : steps);
    /* in flight: gpipe M, 1f1b min(M, P-s), paci min(N, P-s) (reached), local 1 */
    int64_t bound = kind == PIPE_GPIPE ? M : kind == PIPE_1F1B ? (M < P - s ? M : P - s)
                  : kind == PIPE_LOCAL ? 1 : (N < P - s ? N : P - s);
    assert_int_equal(peak, bound);
    assert_int_equal(l->max_in_flight, peak);
    assert_int_equal(l->max_drift, max_drift);
    int drift_bound = pipe_drift_bound(kind, P, s, a);
    assert_true(max_drift <= drift_bound);
    if (kind != PIPE_PACI)
        assert_int_equal(max_drift, 0);
    else if (N > P - 1 - s + a) /* the bound is reached once enough micro-batches pass */
        assert_int_equal(max_drift, drift_bound);
    free(fwd_at);
}

/* Messages: activation m leaves FORWARD m of s in a step <= FORWARD m of
 * s+1 (local: exactly one step before); gradient m leaves BACKWARD m of
 * s+1 in a step <= BACKWARD m of s (local: no gradient message). */
static void check_message_steps(const pipe_schedule_t *l, pipe_kind_t kind, int P, int64_t N)
{
    for (int s = 0; s + 1 < P; s++)
        for (int64_t m = 0; m < N; m++) {
            int64_t sent = l[s].actions[find(&l[s], PIPE_FORWARD, m)].step;
            int64_t received = l[s + 1].actions[find(&l[s + 1], PIPE_FORWARD, m)].step;
            if (kind == PIPE_LOCAL)
                assert_int_equal(received, sent + 1);
            else
                assert_true(sent <= received);
            if (kind != PIPE_LOCAL)
                assert_true(l[s + 1].actions[find(&l[s + 1], PIPE_BACKWARD, m)].step <=
                            l[s].actions[find(&l[s], PIPE_BACKWARD, m)].step);
        }
}

static const pipe_stage_time_t unit = { 1, 1, 1, 0 };
static const pipe_link_t free_link = { 0, 1, 0 };

static void test_every_configuration(void **state)
{
    (void)state;
    int configs = 0;
    for (int kind = PIPE_GPIPE; kind <= PIPE_LOCAL; kind++)
        for (int P = 1; P <= 8; P++)
            for (int M = 1; M <= 9; M++)
                for (int ai = 0; ai < (kind == PIPE_PACI ? 4 : 1); ai++) {
                    int a = kind != PIPE_PACI ? 1 : ai == 0 ? 1 : ai == 1 ? 2 : ai == 2 ? P - 1 : M;
                    if (a < 1)
                        continue;
                    for (int64_t steps = 1; steps <= 3; steps++) {
                        pipe_schedule_t l[8];
                        pipe_stage_time_t t[8];
                        build_all(kind, P, M, a, steps, l);
                        for (int s = 0; s < P; s++) {
                            check_stage(&l[s], kind, P, s, M, a, steps);
                            t[s] = unit;
                        }
                        check_message_steps(l, (pipe_kind_t)kind, P, M * steps);
                        pipe_replay_t r;
                        assert_int_equal(pipe_replay(l, P, t, &free_link, &r), ERASE_OK);
                        if (r.deadlock)
                            fail_msg("%s P %d M %d a %d steps %lld: deadlock at stage %lld action %lld",
                                     pipe_kind_name(kind), P, M, a, (long long)steps, (long long)r.stuck_stage,
                                     (long long)r.stuck_action);
                        assert_true(r.makespan_s > 0);
                        assert_true(fabs(r.throughput_mbps - M * steps / r.makespan_s) < 1e-12);
                        for (int s = 0; s < P; s++)
                            assert_int_equal(r.max_drift[s], l[s].max_drift);
                        free_all(l, P);
                        configs++;
                    }
                }
    printf("# %d configurations\n", configs);
}

/* The worked example of the header: paci, P = 4, a = 1: stage 0's drift
 * reaches its bound 3 (B3 follows F3, B0 U, F4 B1 U, F5 B2 U: 3 UPDATEs),
 * stage 1 2, stage 2 1, the last stage 0. */
static void test_paci_drift_tight(void **state)
{
    (void)state;
    pipe_schedule_t l[4];
    build_all(PIPE_PACI, 4, 4, 1, 2, l);
    for (int s = 0; s < 4; s++) {
        assert_int_equal(pipe_drift_bound(PIPE_PACI, 4, s, 1), 3 - s);
        assert_int_equal(l[s].max_drift, 3 - s);
    }
    assert_int_equal(l[0].actions[find(&l[0], PIPE_BACKWARD, 3)].drift, 3);
    assert_int_equal(l[0].actions[find(&l[0], PIPE_BACKWARD, 0)].drift, 0);
    free_all(l, 4);
    assert_int_equal(pipe_drift_bound(PIPE_PACI, 4, 0, 2), 2);
    assert_int_equal(pipe_drift_bound(PIPE_PACI, 4, 1, 2), 1);
    assert_int_equal(pipe_drift_bound(PIPE_PACI, 8, 0, 3), 3);
    assert_int_equal(pipe_drift_bound(PIPE_1F1B, 4, 0, 1), 0);
    assert_int_equal(pipe_drift_bound(PIPE_PACI, 4, 4, 1), -1);
    assert_int_equal(pipe_drift_bound(PIPE_PACI, 4, 0, 0), -1);
}

/* Stage list l as text: "F0 B0 ... U", and the step of each action as digits. */
static void list_text(const pipe_schedule_t *l, char *text, size_t size, char *steps)
{
    text[0] = 0;
    for (int64_t i = 0; i < l->count; i++) {
        const pipe_action_t *x = &l->actions[i];
        size_t at = strlen(text);
        if (x->kind == PIPE_UPDATE)
            snprintf(text + at, size - at, "%sU", i ? " " : "");
        else
            snprintf(text + at, size - at, "%s%c%lld", i ? " " : "", x->kind == PIPE_FORWARD ? 'F' : 'B',
                     (long long)x->micro);
        steps[i] = (char)('0' + x->step);
    }
    steps[l->count] = 0;
}

/* The exact lists of one small case of each kind (P = 2, M = 3; local:
 * 2 steps, stage 1 a step behind stage 0). */
static void test_lists(void **state)
{
    (void)state;
    static const char *want[3][2] = {
        { "F0 F1 F2 B0 B1 B2 U", "F0 F1 F2 B0 B1 B2 U" },
        { "F0 F1 B0 F2 B1 B2 U", "F0 B0 F1 B1 F2 B2 U" },
        /* a = 2, steps 2: F0 of step 0 ... F5 of step 1; step = that of the latest FORWARD */
        { "F0 F1 B0 F2 B1 U F3 B2 F4 B3 U F5 B4 B5 U", "F0 B0 F1 B1 U F2 B2 F3 B3 U F4 B4 F5 B5 U" },
    };
    static const char *want_steps[2] = { "000000111111111", "000000011111111" };
    for (int kind = 0; kind < 3; kind++)
        for (int s = 0; s < 2; s++) {
            pipe_schedule_options_t o = { kind, 2, s, 3, 2, kind == PIPE_PACI ? 2 : 1 };
            pipe_schedule_t l;
            assert_int_equal(pipe_schedule_build(&o, &l), ERASE_OK);
            char text[128], steps[64];
            list_text(&l, text, sizeof text, steps);
            assert_string_equal(text, want[kind][s]);
            if (kind == PIPE_PACI) {
                assert_string_equal(steps, want_steps[s]);
                /* B2 of stage 0 follows F3 (step 1) and one UPDATE (after B1) since its FORWARD */
                assert_int_equal(l.actions[find(&l, PIPE_BACKWARD, 2)].drift, s == 0 ? 1 : 0);
            }
            pipe_schedule_free(&l);
        }
    static const char *want_local[2] = { "00000001111111", "11111112222222" };
    for (int s = 0; s < 2; s++) {
        pipe_schedule_options_t o = { PIPE_LOCAL, 2, s, 3, 0, 2 };
        pipe_schedule_t l;
        assert_int_equal(pipe_schedule_build(&o, &l), ERASE_OK);
        char text[128], steps[64];
        list_text(&l, text, sizeof text, steps);
        assert_string_equal(text, "F0 B0 F1 B1 F2 B2 U F3 B3 F4 B4 F5 B5 U");
        assert_string_equal(steps, want_local[s]);
        assert_int_equal(l.max_in_flight, 1);
        assert_int_equal(l.max_drift, 0);
        pipe_schedule_free(&l);
    }
}

/*
 * With equal stage times f and b on every stage, free links and no update
 * time, gpipe's and 1f1b's makespan is (M + P - 1)(f + b) per step and
 * every stage is busy M(f + b) of it: the bubble is exactly
 * (P-1)/(M+P-1), for any f and b (so also with b = 2f, tested here), M < P
 * included. (With update time, latency or unequal stages it is not.)
 */
/* The replay of kind's P lists (M, a, steps; P <= 8) with times t on every
 * stage and free links, into *r: no deadlock. */
static void replay_equal(pipe_kind_t kind, int P, int M, int a, int64_t steps, pipe_stage_time_t t, pipe_replay_t *r)
{
    pipe_schedule_t l[8];
    pipe_stage_time_t ts[8];
    memset(l, 0, sizeof l); /* stages P .. 7 unused */
    memset(ts, 0, sizeof ts);
    build_all(kind, P, M, a, steps, l);
    for (int s = 0; s < P; s++)
        ts[s] = t;
    assert_int_equal(pipe_replay(l, P, ts, &free_link, r), ERASE_OK);
    assert_int_equal(r->deadlock, 0);
    free_all(l, P);
}

static void test_bubble_analytic(void **state)
{
    (void)state;
    for (int kind = PIPE_GPIPE; kind <= PIPE_1F1B; kind++)
        for (int P = 1; P <= 8; P++)
            for (int M = 1; M <= 9; M++)
                for (int64_t steps = 1; steps <= 2; steps++) {
                    pipe_replay_t r;
                    replay_equal(kind, P, M, 1, steps, (pipe_stage_time_t){ 1, 2, 0, 0 }, &r);
                    assert_true(fabs(r.makespan_s - (double)steps * (M + P - 1) * 3) < 1e-12);
                    for (int s = 0; s < P; s++)
                        if (fabs(r.bubble[s] - pipe_bubble_analytic(P, M)) > 1e-12)
                            fail_msg("%s P %d M %d stage %d: bubble %.17g, analytic %.17g", pipe_kind_name(kind), P,
                                     M, s, r.bubble[s], pipe_bubble_analytic(P, M));
                }
    /* an update of 1 s after each step's backwards: no longer the formula */
    pipe_schedule_t l[2];
    pipe_stage_time_t t[2] = { { 1, 2, 1, 0 }, { 1, 2, 1, 0 } };
    build_all(PIPE_1F1B, 2, 2, 1, 1, l);
    pipe_replay_t r;
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_OK);
    /* stage 0: F0 0-1 F1 1-2, B0 waits for stage 1's F0 1-2 B0 2-4: 4-6, B1 (stage 1's F1 4-5 B1 5-7) 7-9,
     * U 9-10; busy 7 of 10 */
    assert_true(fabs(r.makespan_s - 10) < 1e-12 && fabs(r.bubble[0] - 0.3) < 1e-12);
    free_all(l, 2);
}

/*
 * Links: latency + bytes / bandwidth per message, FIFO per direction.
 * gpipe, P = 2, M = 3, forward = backward = 1 s, no update, a transfer of
 * 2 s (2 bytes at 1 B/s) and no latency: stage 0's activations leave at
 * 1, 2, 3 and arrive at 3, 5, 7 (each after the previous one's arrival +
 * 2: FIFO, not 3, 4, 5); stage 1 runs F0 3-4, F1 5-6, F2 7-8, B0 8-9,
 * B1 9-10, B2 10-11, sending gradients that arrive at 11, 13, 15; stage 0
 * runs B0 11-12, B1 13-14, B2 15-16. Makespan 16, both stages busy 6:
 * bubble 0.625. With latency 0.5 s and a transfer of 1 s instead, P = 2,
 * M = 1: F0 0-1, arrives 2.5, F0 2.5-3.5, B0 3.5-4.5, arrives 6, B0 6-7.
 */
static void test_replay_links(void **state)
{
    (void)state;
    pipe_schedule_t l[2];
    pipe_stage_time_t t[2] = { { 1, 1, 0, 0 }, { 1, 1, 0, 0 } };
    pipe_replay_t r;
    build_all(PIPE_GPIPE, 2, 3, 1, 1, l);
    pipe_link_t slow = { 0, 1, 2 };
    assert_int_equal(pipe_replay(l, 2, t, &slow, &r), ERASE_OK);
    assert_int_equal(r.deadlock, 0);
    assert_true(fabs(r.makespan_s - 16) < 1e-12);
    assert_true(fabs(r.bubble[0] - 0.625) < 1e-12 && fabs(r.bubble[1] - 0.625) < 1e-12);
    assert_true(fabs(r.throughput_mbps - 3.0 / 16) < 1e-12);
    free_all(l, 2);
    build_all(PIPE_1F1B, 2, 1, 1, 1, l);
    pipe_link_t lat = { 0.5, 1e6, 1e6 };
    assert_int_equal(pipe_replay(l, 2, t, &lat, &r), ERASE_OK);
    assert_true(fabs(r.makespan_s - 7) < 1e-12);
    assert_true(fabs(r.bubble[0] - (1 - 2.0 / 7)) < 1e-12);
    free_all(l, 2);
}

/*
 * The host's time between steps (host_s): 1f1b, P = 2, M = 1, 2 steps,
 * forward = backward = 1 s, no update, a free link, host 0.5 s on stage 0
 * and 3 s on stage 1. Step 0: stage 0 F0 0-1; stage 1 F0 1-2 B0 2-3;
 * stage 0 B0 3-4 U 4. Step 1: stage 0 F1 4.5-5.5 (4 + 0.5); stage 1 F1
 * 6-7 (its step 0 ended at 3, + 3: later than the activation at 5.5), B1
 * 7-8; stage 0 B1 8-9. Makespan 9 (8 without the host), busy 4 of 9 on
 * each; the first step has no host time before it.
 */
static void test_replay_host(void **state)
{
    (void)state;
    pipe_schedule_t l[2];
    pipe_stage_time_t t[2] = { { 1, 1, 0, 0.5 }, { 1, 1, 0, 3 } };
    pipe_replay_t r;
    build_all(PIPE_1F1B, 2, 1, 1, 2, l);
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_OK);
    assert_int_equal(r.deadlock, 0);
    assert_true(fabs(r.makespan_s - 9) < 1e-12);
    assert_true(fabs(r.bubble[0] - 5.0 / 9) < 1e-12 && fabs(r.bubble[1] - 5.0 / 9) < 1e-12);
    t[1].host_s = -1;
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: stage 1's times forward 1 s, backward 1 s, update 0 s, "
                        "host -1 s (expected a forward > 0, the others >= 0)");
    free_all(l, 2);
}

/*
 * Local with equal stage times f, b, u on every stage, free links and no
 * host time: stage s > 0 waits only for its first activation, which
 * stage s-1 sends at the end of its first FORWARD (f after that stage's
 * start), and from then on runs the same list as s-1 shifted by f (each
 * FORWARD m's input leaves s-1 exactly when s reaches it: no gradient
 * waits, no flush), so
 *     makespan = (P - 1) f + steps (M (f + b) + u),
 * every stage busy steps (M (f + b) + u) of it. (gpipe and 1f1b pay
 * (P - 1)(f + b) per step instead: test_bubble_analytic.) f = 1, b = 2,
 * u = 0.5: exact in binary.
 */
static void test_local_replay(void **state)
{
    (void)state;
    for (int P = 1; P <= 4; P++)
        for (int M = 1; M <= 9; M++)
            for (int64_t steps = 1; steps <= 3; steps++) {
                pipe_replay_t r;
                replay_equal(PIPE_LOCAL, P, M, 0, steps, (pipe_stage_time_t){ 1, 2, 0.5, 0 }, &r);
                double busy = (double)steps * (M * 3 + 0.5), want = (P - 1) * 1 + busy;
                if (r.makespan_s != want)
                    fail_msg("local P %d M %d steps %lld: makespan %.17g, (P-1) f + steps (M (f+b) + u) = %.17g", P,
                             M, (long long)steps, r.makespan_s, want);
                for (int s = 0; s < P; s++)
                    assert_true(r.bubble[s] == 1 - busy / want && r.max_drift[s] == 0);
            }
}

static void swap(pipe_schedule_t *l, int64_t i, int64_t j)
{
    pipe_action_t x = l->actions[i];
    l->actions[i] = l->actions[j];
    l->actions[j] = x;
}

/* Mismatched lists: the stage that waits for a message that never comes. */
static void test_deadlock(void **state)
{
    (void)state;
    pipe_schedule_t l[4];
    pipe_stage_time_t t[4] = { unit, unit, unit, unit };
    pipe_replay_t r;
    /* 1f1b P = 4, M = 4: stage 2 runs F0 F1 B0 F2 ...; with F1 and F2 swapped its
     * action 1 (FORWARD 2) faces activation 1 at the head of the link from stage 1 */
    build_all(PIPE_1F1B, 4, 4, 1, 1, l);
    assert_int_equal(find(&l[2], PIPE_FORWARD, 1), 1);
    swap(&l[2], 1, find(&l[2], PIPE_FORWARD, 2));
    assert_int_equal(pipe_replay(l, 4, t, &free_link, &r), ERASE_OK);
    assert_int_equal(r.deadlock, 1);
    assert_int_equal(r.stuck_stage, 2);
    assert_int_equal(r.stuck_action, 1);
    assert_true(r.throughput_mbps == 0);
    free_all(l, 4);
    /* the sender's forwards swapped (stage 0 sends 0, 2, 1): stage 1, the
     * receiver, waits at its FORWARD 1 (action 1) */
    build_all(PIPE_1F1B, 4, 4, 1, 1, l);
    swap(&l[0], 1, 2);
    assert_int_equal(pipe_replay(l, 4, t, &free_link, &r), ERASE_OK);
    assert_true(r.deadlock && r.stuck_stage == 1 && r.stuck_action == 1);
    free_all(l, 4);
    /* a cycle: P = 2, M = 2, stage 0 F0 B0 F1 B1 (waits at B0 for gradient
     * 0), stage 1 F0 F1 B0 B1 (waits at F1 for activation 1): the lowest
     * stage is named */
    build_all(PIPE_1F1B, 2, 2, 1, 1, l);
    swap(&l[0], 1, 2);
    swap(&l[1], 1, 2);
    assert_int_equal(l[0].actions[1].kind, PIPE_BACKWARD);
    assert_int_equal(l[1].actions[1].kind, PIPE_FORWARD);
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_OK);
    assert_true(r.deadlock && r.stuck_stage == 0 && r.stuck_action == 1);
    /* stage 1 stops before B1: stage 0 waits at B1 (action 3) for a
     * gradient its sender, finished, never sends */
    swap(&l[0], 1, 2);
    swap(&l[1], 1, 2);
    l[1].count -= 2;
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_OK);
    assert_true(r.deadlock && r.stuck_stage == 0 && r.stuck_action == 3);
    /* stage 0 stops before F1 (and stage 1's list is whole): stage 1 waits at F1 */
    l[1].count += 2;
    l[0].count = 1;
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_OK);
    assert_true(r.deadlock && r.stuck_stage == 1 && r.stuck_action == 2);
    /* stage 0 stops before B1, stage 1 sends gradient 1 all the same: no
     * stage waits, stage 0 finished with a message for it left over */
    l[0].count = 3;
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_OK);
    assert_true(r.deadlock && r.stuck_stage == 0 && r.stuck_action == 3);
    free_all(l, 2);
}

static void expect_build_error(pipe_schedule_options_t o, const char *message)
{
    pipe_schedule_t l;
    assert_int_equal(pipe_schedule_build(&o, &l), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), message);
    assert_null(l.actions);
}

static void test_build_errors(void **state)
{
    (void)state;
    expect_build_error((pipe_schedule_options_t){ 4, 2, 0, 2, 1, 1 },
                       "pipe schedule: kind 4 (expected gpipe, 1f1b, paci or local)");
    expect_build_error((pipe_schedule_options_t){ PIPE_GPIPE, 0, 0, 2, 1, 1 },
                       "pipe schedule: stages 0 (expected >= 1)");
    expect_build_error((pipe_schedule_options_t){ PIPE_1F1B, 4, 4, 2, 1, 1 },
                       "pipe schedule: stage 4 (expected 0 .. 3 for 4 stages)");
    expect_build_error((pipe_schedule_options_t){ PIPE_1F1B, 4, -1, 2, 1, 1 },
                       "pipe schedule: stage -1 (expected 0 .. 3 for 4 stages)");
    expect_build_error((pipe_schedule_options_t){ PIPE_1F1B, 4, 0, 0, 1, 1 },
                       "pipe schedule: micro-batches 0 (expected >= 1)");
    expect_build_error((pipe_schedule_options_t){ PIPE_PACI, 4, 0, 2, 0, 1 },
                       "pipe schedule: accumulate 0 (expected >= 1 backwards per update)");
    expect_build_error((pipe_schedule_options_t){ PIPE_PACI, 4, 0, 2, 1, 0 },
                       "pipe schedule: steps 0 (expected >= 1)");
    expect_build_error((pipe_schedule_options_t){ PIPE_GPIPE, 4, 0, 4, 1, INT64_MAX / 2 },
                       "pipe schedule: 4 micro-batches x 4611686018427387903 steps is too many micro-batches");
    expect_build_error((pipe_schedule_options_t){ PIPE_GPIPE, 4, 0, 1, 1, INT64_MAX / 2 },
                       "pipe schedule: 1 micro-batches x 4611686018427387903 steps: the action list's size "
                       "overflows");
    /* gpipe, 1f1b and local ignore the accumulation */
    pipe_schedule_t l;
    assert_int_equal(pipe_schedule_build(&(pipe_schedule_options_t){ PIPE_1F1B, 2, 0, 2, 0, 1 }, &l), ERASE_OK);
    pipe_schedule_free(&l);
    assert_int_equal(pipe_schedule_build(&(pipe_schedule_options_t){ PIPE_LOCAL, 2, 1, 2, 0, 1 }, &l), ERASE_OK);
    pipe_schedule_free(&l);
}

static void test_replay_errors(void **state)
{
    (void)state;
    pipe_schedule_t l[2], g;
    pipe_stage_time_t t[2] = { unit, unit };
    pipe_replay_t r;
    build_all(PIPE_1F1B, 2, 2, 1, 1, l);
    pipe_schedule_options_t o = { PIPE_GPIPE, 2, 0, 2, 1, 1 };
    assert_int_equal(pipe_schedule_build(&o, &g), ERASE_OK);
    pipe_schedule_t mixed[2] = { g, l[1] };
    assert_int_equal(pipe_replay(mixed, 2, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(),
                        "pipe replay: stage 1's list is 1f1b, stage 0's gpipe (expected the lists of one schedule)");
    pipe_schedule_t order[2] = { l[1], l[0] };
    assert_int_equal(pipe_replay(order, 2, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: list 0 is stage 1 of 2 (expected stage 0 of 2)");
    assert_int_equal(pipe_replay(l, 1, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: list 0 is stage 0 of 2 (expected stage 0 of 1)");
    assert_int_equal(pipe_replay(l, 65, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: 65 stages (expected 1 .. 64)");
    pipe_schedule_t other;
    o = (pipe_schedule_options_t){ PIPE_1F1B, 2, 1, 3, 1, 1 };
    assert_int_equal(pipe_schedule_build(&o, &other), ERASE_OK);
    pipe_schedule_t m3[2] = { l[0], other };
    assert_int_equal(pipe_replay(m3, 2, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: stage 1's list has micro-batches 3, accumulate 1, steps "
                        "1; stage 0's 2, 1, 1 (expected the same)");
    t[1].forward_s = 0;
    assert_int_equal(pipe_replay(l, 2, t, &free_link, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: stage 1's times forward 0 s, backward 1 s, update 1 s, "
                        "host 0 s (expected a forward > 0, the others >= 0)");
    t[1] = unit;
    pipe_link_t bad = { 0, 0, 1 };
    assert_int_equal(pipe_replay(l, 2, t, &bad, &r), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "pipe replay: link latency 0 s, bandwidth 0 B/s, activation 1 B "
                        "(expected latency and bytes >= 0, bandwidth > 0)");
    /* an infinite bandwidth is a free link */
    bad.bandwidth_Bps = INFINITY;
    assert_int_equal(pipe_replay(l, 2, t, &bad, &r), ERASE_OK);
    assert_int_equal(r.deadlock, 0);
    pipe_schedule_free(&other);
    pipe_schedule_free(&g);
    free_all(l, 2);
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(pipe_kind_parse("gpipe"), PIPE_GPIPE);
    assert_int_equal(pipe_kind_parse("1f1b"), PIPE_1F1B);
    assert_int_equal(pipe_kind_parse("paci"), PIPE_PACI);
    assert_int_equal(pipe_kind_parse("local"), PIPE_LOCAL);
    assert_int_equal(pipe_kind_parse("PACI"), -1);
    assert_int_equal(pipe_kind_parse(NULL), -1);
    assert_string_equal(pipe_kind_name(PIPE_1F1B), "1f1b");
    assert_string_equal(pipe_kind_name(PIPE_LOCAL), "local");
    assert_null(pipe_kind_name((pipe_kind_t)4));
    assert_true(fabs(pipe_bubble_analytic(8, 1) - 7.0 / 8) < 1e-15);
    assert_true(isnan(pipe_bubble_analytic(8, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_configuration), cmocka_unit_test(test_paci_drift_tight),
        cmocka_unit_test(test_lists),               cmocka_unit_test(test_bubble_analytic),
        cmocka_unit_test(test_replay_links),        cmocka_unit_test(test_replay_host),
        cmocka_unit_test(test_deadlock),            cmocka_unit_test(test_local_replay),
        cmocka_unit_test(test_build_errors),        cmocka_unit_test(test_replay_errors),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Pipeline schedules: the builders of each stage's action list and their
 * discrete-event replay (pipe_schedule.h; docs/pipelines.md).
 *
 * The lists are STATIC: built once from (kind, P, s, M, a, steps), the
 * same on every run and every machine, never reordered by what arrives
 * first. That is what makes every schedule, PACI included, bitwise
 * reproducible: which UPDATEs a BACKWARD sees (its drift) and the order
 * in which gradients are accumulated are fixed by the list, not by
 * timing. (A dynamic "run whatever gradient arrived first" executor would
 * make the weights depend on message timing.) PACI's rule "every due
 * BACKWARD first, then at most one FORWARD while fewer than P - s are in
 * flight" is realised by the 1F1B order it settles into: warm-up
 * min(N, P-1-s) FORWARDs over the segment's N = M x steps micro-batches,
 * then FORWARD m + w, BACKWARD m alternately, then the cool-down
 * BACKWARDs; the last stage (w = 0) runs FORWARD m, BACKWARD m back to
 * back.
 *
 * Steps (pipe_action_t.step), one rule for every kind: an action's step is
 * the step floor(m / M) of the latest FORWARD m at or before it in the
 * stage's list (every list starts with a FORWARD); local adds s (stage s
 * runs batch i in step i + s). For gpipe and 1f1b that
 * is the step of the action's own micro-batch (each step's actions end
 * with its UPDATE). For paci a BACKWARD m of stage s comes after FORWARD
 * min(m + P-1-s, N-1), so its step is floor(min(m + P-1-s, N-1) / M), a
 * step that grows with m and is never smaller on stage s than on s+1;
 * hence every message's send is issued in a step no later than its
 * receive: an activation m is sent and received in step floor(m / M) (the
 * FORWARD m of both stages), a gradient m is sent by BACKWARD m of s+1 in
 * a step <= that of BACKWARD m of s. Each list is monotone in step since
 * FORWARDs come in increasing m.
 */
#include "lib/sched/pipe_schedule.h"

#include "lib/core/checked.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = { "gpipe", "1f1b", "paci", "local" };
#define KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

int pipe_kind_parse(const char *name)
{
    for (int k = 0; name && k < KINDS; k++)
        if (!strcmp(name, kind_names[k]))
            return k;
    return -1;
}

const char *pipe_kind_name(pipe_kind_t kind)
{
    return (unsigned)kind < (unsigned)KINDS ? kind_names[kind] : NULL;
}

/* -1 for arguments out of range (P < 1, s outside 0..P-1, a < 1 for paci). */
int pipe_drift_bound(pipe_kind_t kind, int stages, int stage, int accumulate)
{
    if (stages < 1 || stage < 0 || stage >= stages || (kind == PIPE_PACI && accumulate < 1))
        return -1;
    if (kind != PIPE_PACI)
        return 0;
    int ahead = stages - 1 - stage;
    return ahead / accumulate + (ahead % accumulate != 0);
}

/* NaN for P < 1 or M < 1. */
double pipe_bubble_analytic(int stages, int micro_batches)
{
    if (stages < 1 || micro_batches < 1)
        return NAN;
    return ((double)stages - 1) / ((double)micro_batches + stages - 1);
}

/* ---- builders --------------------------------------------------------------- */

typedef struct {
    pipe_schedule_t *sc;
    int64_t cap;             /* actions allocated */
    int64_t micro_batches;   /* M, for the step of a FORWARD */
    int64_t step;            /* the step of the latest FORWARD */
    int64_t lead;            /* local: s, the steps a FORWARD's batch is behind its step */
    int accumulate;          /* paci: UPDATE after every a-th BACKWARD; 0: UPDATEs are explicit */
    int64_t backwards;       /* BACKWARDs so far */
    int64_t updates;         /* UPDATEs so far */
    int64_t *fwd_updates;    /* ring: UPDATEs before the FORWARD of each micro-batch in flight */
    int ring;                /* its size (the in-flight bound of the schedule) */
    int64_t oldest, in_flight;
} builder_t;

static erase_status_t push(builder_t *b, pipe_action_kind_t kind, int64_t micro, int drift)
{
    pipe_schedule_t *sc = b->sc;
    if (sc->count == b->cap)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipe schedule: more actions than counted (%lld)", (long long)b->cap);
    sc->actions[sc->count++] = (pipe_action_t){ .kind = kind, .micro = micro, .step = b->step, .drift = drift };
    return ERASE_OK;
}

static erase_status_t forward(builder_t *b, int64_t m)
{
    if (b->in_flight == b->ring)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipe schedule: FORWARD %lld beyond %d micro-batches in flight",
                           (long long)m, b->ring);
    b->fwd_updates[(b->oldest + b->in_flight) % b->ring] = b->updates;
    if (++b->in_flight > b->sc->max_in_flight)
        b->sc->max_in_flight = (int)b->in_flight;
    b->step = m / b->micro_batches + b->lead;
    return push(b, PIPE_FORWARD, m, 0);
}

static erase_status_t update(builder_t *b)
{
    b->updates++;
    return push(b, PIPE_UPDATE, -1, 0);
}

/* BACKWARD of the oldest micro-batch in flight, m (lists are FIFO), and
 * paci's UPDATE after every a-th BACKWARD. */
static erase_status_t backward(builder_t *b, int64_t m)
{
    if (b->in_flight == 0)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipe schedule: BACKWARD %lld with nothing in flight", (long long)m);
    int drift = (int)(b->updates - b->fwd_updates[b->oldest]);
    b->oldest = (b->oldest + 1) % b->ring;
    b->in_flight--;
    if (drift > b->sc->max_drift)
        b->sc->max_drift = drift;
    ERASE_CHECK(push(b, PIPE_BACKWARD, m, drift));
    b->backwards++;
    if (b->accumulate && b->backwards % b->accumulate == 0)
        ERASE_CHECK(update(b));
    return ERASE_OK;
}

/* Micro-batches first .. first+n-1 in 1F1B order with warm-up w <= n:
 * FORWARD first .. first+w-1, then FORWARD first+w+i, BACKWARD first+i
 * for i < n-w, then the cool-down BACKWARDs. w = n gives gpipe's order. */
static erase_status_t one_f_one_b(builder_t *b, int64_t first, int64_t n, int64_t w)
{
    for (int64_t i = 0; i < w; i++)
        ERASE_CHECK(forward(b, first + i));
    for (int64_t i = 0; i < n - w; i++) {
        ERASE_CHECK(forward(b, first + w + i));
        ERASE_CHECK(backward(b, first + i));
    }
    for (int64_t i = n - w; i < n; i++)
        ERASE_CHECK(backward(b, first + i));
    return ERASE_OK;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The options' errors (ERASE_ERR_INVALID), and N = M x steps. */
static erase_status_t check_options(const pipe_schedule_options_t *o, int64_t *n)
{
    if (!pipe_kind_name(o->kind))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: kind %d (expected gpipe, 1f1b, paci or local)",
                           (int)o->kind);
    if (o->stages < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: stages %d (expected >= 1)", o->stages);
    if (o->stage < 0 || o->stage >= o->stages)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: stage %d (expected 0 .. %d for %d stages)", o->stage,
                           o->stages - 1, o->stages);
    if (o->micro_batches < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: micro-batches %d (expected >= 1)", o->micro_batches);
    if (o->kind == PIPE_PACI && o->accumulate < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: accumulate %d (expected >= 1 backwards per update)",
                           o->accumulate);
    if (o->steps < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: steps %lld (expected >= 1)", (long long)o->steps);
    if (!erase_mul_i64(o->micro_batches, o->steps, n))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: %d micro-batches x %lld steps is too many micro-batches",
                           o->micro_batches, (long long)o->steps);
    return ERASE_OK;
}

erase_status_t pipe_schedule_build(const pipe_schedule_options_t *o, pipe_schedule_t *out)
{
    memset(out, 0, sizeof *out);
    int64_t n = 0, total, updates;
    ERASE_CHECK(check_options(o, &n));
    int64_t ahead = o->stages - 1 - o->stage;    /* P-1-s: the stages after this one */
    if (o->kind == PIPE_PACI)
        updates = n / o->accumulate + (n % o->accumulate != 0);
    else
        updates = o->steps;
    size_t bytes;
    if (!erase_mul_i64(n, 2, &total) || !erase_add_i64(total, updates, &total) ||
        !erase_bytes(sizeof(pipe_action_t), total, 1, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe schedule: %d micro-batches x %lld steps: the action list's "
                           "size overflows", o->micro_batches, (long long)o->steps);
    /* in flight at most: gpipe M, 1f1b min(M, P-s), paci min(N, P-s), local 1 */
    int ring = (int)(o->kind == PIPE_GPIPE   ? o->micro_batches
                     : o->kind == PIPE_LOCAL ? 1
                                             : min64(o->kind == PIPE_1F1B ? o->micro_batches : n, ahead + 1));
    builder_t b = { .sc = out, .cap = total, .micro_batches = o->micro_batches, .ring = ring,
                    .accumulate = o->kind == PIPE_PACI ? o->accumulate : 0 };
    out->actions = malloc(bytes);
    b.fwd_updates = malloc((size_t)ring * sizeof *b.fwd_updates);
    if (!out->actions || !b.fwd_updates) {
        free(b.fwd_updates);
        pipe_schedule_free(out);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "pipe schedule: no memory for %lld actions", (long long)total);
    }
    out->options = *o;
    erase_status_t st = ERASE_OK;
    if (o->kind == PIPE_PACI) {
        st = one_f_one_b(&b, 0, n, min64(n, ahead));
        if (st == ERASE_OK && b.backwards % o->accumulate != 0)
            st = update(&b); /* the drain */
    } else if (o->kind == PIPE_LOCAL) {
        /* batch i in step i + s: every FORWARD's step is floor(m / M) + s */
        b.lead = o->stage;
        for (int64_t i = 0; st == ERASE_OK && i < o->steps; i++) {
            st = one_f_one_b(&b, i * o->micro_batches, o->micro_batches, 0);
            if (st == ERASE_OK)
                st = update(&b);
        }
    } else {
        int64_t w = o->kind == PIPE_GPIPE ? o->micro_batches : min64(o->micro_batches, ahead);
        for (int64_t t = 0; st == ERASE_OK && t < o->steps; t++) {
            st = one_f_one_b(&b, t * o->micro_batches, o->micro_batches, w);
            if (st == ERASE_OK)
                st = update(&b);
        }
    }
    free(b.fwd_updates);
    if (st == ERASE_OK && out->count != total)
        st = ERASE_ERROR(ERASE_ERR_STATE, "pipe schedule: %lld actions, counted %lld", (long long)out->count,
                         (long long)total);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        pipe_schedule_free(out);
    }
    return st;
}

void pipe_schedule_free(pipe_schedule_t *sc)
{
    free(sc->actions);
    memset(sc, 0, sizeof *sc);
}

/* ---- replay ----------------------------------------------------------------- */

/* One direction of one link: the messages sent and not yet received, in
 * send order (a FIFO), and the arrival of the last one sent. */
typedef struct {
    struct msg {
        int64_t micro;
        double arrive;
    } *m;
    int64_t head, n, cap;
    double last_arrive;
} fifo_t;

static erase_status_t fifo_push(fifo_t *q, int64_t micro, double arrive)
{
    if (q->head > 0 && q->n == q->cap) { /* compact */
        memmove(q->m, q->m + q->head, (size_t)(q->n - q->head) * sizeof *q->m);
        q->n -= q->head;
        q->head = 0;
    }
    if (q->n == q->cap) {
        int64_t cap = q->cap ? 2 * q->cap : 16;
        struct msg *m = realloc(q->m, (size_t)cap * sizeof *m);
        if (!m)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "pipe replay: no memory for %lld messages", (long long)cap);
        q->m = m;
        q->cap = cap;
    }
    q->m[q->n++] = (struct msg){ micro, arrive };
    q->last_arrive = arrive;
    return ERASE_OK;
}

/* The lists must be the stages 0..P-1 of one configuration. */
static erase_status_t check_lists(const pipe_schedule_t *lists, int stages)
{
    const pipe_schedule_options_t *o0 = &lists[0].options;
    for (int s = 0; s < stages; s++) {
        const pipe_schedule_options_t *o = &lists[s].options;
        if (o->kind != o0->kind)
            return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: stage %d's list is %s, stage 0's %s (expected "
                               "the lists of one schedule)", s, pipe_kind_name(o->kind) ? pipe_kind_name(o->kind)
                               : "unknown", pipe_kind_name(o0->kind) ? pipe_kind_name(o0->kind) : "unknown");
        if (o->stages != stages || o->stage != s)
            return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: list %d is stage %d of %d (expected stage %d of %d)",
                               s, o->stage, o->stages, s, stages);
        if (o->micro_batches != o0->micro_batches || o->steps != o0->steps ||
            (o->kind == PIPE_PACI && o->accumulate != o0->accumulate))
            return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: stage %d's list has micro-batches %d, accumulate %d, "
                               "steps %lld; stage 0's %d, %d, %lld (expected the same)", s, o->micro_batches,
                               o->accumulate, (long long)o->steps, o0->micro_batches, o0->accumulate,
                               (long long)o0->steps);
    }
    return ERASE_OK;
}

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

static erase_status_t check_times(const pipe_stage_time_t *times, int stages, const pipe_link_t *link)
{
    for (int s = 0; s < stages; s++)
        if (!finite_nonneg(times[s].forward_s) || times[s].forward_s == 0 || !finite_nonneg(times[s].backward_s) ||
            !finite_nonneg(times[s].update_s) || !finite_nonneg(times[s].host_s))
            return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: stage %d's times forward %g s, backward %g s, update "
                               "%g s, host %g s (expected a forward > 0, the others >= 0)", s, times[s].forward_s,
                               times[s].backward_s, times[s].update_s, times[s].host_s);
    if (!finite_nonneg(link->latency_s) || !(link->bandwidth_Bps > 0) || !finite_nonneg(link->activation_bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: link latency %g s, bandwidth %g B/s, activation %g B "
                           "(expected latency and bytes >= 0, bandwidth > 0)", link->latency_s, link->bandwidth_Bps,
                           link->activation_bytes);
    return ERASE_OK;
}

/*
 * The receive of stage s's next action, or NULL: FORWARD on s > 0 from
 * act[s-1], BACKWARD on s < P-1 from grad[s]. Likewise its send.
 */
static fifo_t *recv_of(const pipe_action_t *a, pipe_kind_t kind, int s, int P, fifo_t *act, fifo_t *grad)
{
    if (a->kind == PIPE_FORWARD && s > 0)
        return &act[s - 1];
    if (a->kind == PIPE_BACKWARD && s < P - 1 && kind != PIPE_LOCAL)
        return &grad[s];
    return NULL;
}

static fifo_t *send_of(const pipe_action_t *a, pipe_kind_t kind, int s, int P, fifo_t *act, fifo_t *grad)
{
    if (a->kind == PIPE_FORWARD && s < P - 1)
        return &act[s];
    if (a->kind == PIPE_BACKWARD && s > 0 && kind != PIPE_LOCAL)
        return &grad[s - 1];
    return NULL;
}

/*
 * Run every stage as far as its messages allow, round after round, until
 * no stage can move. A stage's times depend only on its own list order
 * and the arrivals of its messages, and a link's arrivals only on its
 * sender's order, so the order in which stages are advanced does not
 * change any time: the result is exact for the model of pipe_replay.
 */
erase_status_t pipe_replay(const pipe_schedule_t *lists, int stages, const pipe_stage_time_t *times,
                           const pipe_link_t *link, pipe_replay_t *out)
{
    memset(out, 0, sizeof *out);
    if (stages < 1 || stages > 64)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: %d stages (expected 1 .. 64)", stages);
    ERASE_CHECK(check_lists(lists, stages));
    ERASE_CHECK(check_times(times, stages, link));
    int P = stages;
    pipe_kind_t kind = lists[0].options.kind;
    int64_t micro;
    if (!erase_mul_i64(lists[0].options.micro_batches, lists[0].options.steps, &micro))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipe replay: %d micro-batches x %lld steps is too many micro-batches",
                           lists[0].options.micro_batches, (long long)lists[0].options.steps);
    fifo_t act[64], grad[64]; /* act[s]: s -> s+1, grad[s]: s+1 -> s */
    memset(act, 0, sizeof act);
    memset(grad, 0, sizeof grad);
    int64_t next[64] = { 0 };
    double clock[64] = { 0 }, busy[64] = { 0 };
    double transfer = link->activation_bytes / link->bandwidth_Bps;
    erase_status_t st = ERASE_OK;
    for (int moved = 1; moved && st == ERASE_OK;) {
        moved = 0;
        for (int s = 0; s < P && st == ERASE_OK; s++) {
            const pipe_schedule_t *l = &lists[s];
            for (; next[s] < l->count; next[s]++, moved = 1) {
                const pipe_action_t *a = &l->actions[next[s]];
                fifo_t *q = recv_of(a, kind, s, P, act, grad);
                double start = clock[s];
                if (next[s] > 0 && a->step != l->actions[next[s] - 1].step)
                    start += times[s].host_s; /* the host between two steps */
                if (q) {
                    if (q->head == q->n || q->m[q->head].micro != a->micro)
                        break; /* not sent yet, or a mismatch: waits */
                    start = fmax(start, q->m[q->head++].arrive);
                }
                double d = a->kind == PIPE_FORWARD ? times[s].forward_s
                           : a->kind == PIPE_BACKWARD ? times[s].backward_s : times[s].update_s;
                clock[s] = start + d;
                busy[s] += d;
                fifo_t *sq = send_of(a, kind, s, P, act, grad);
                /* FIFO per direction: after the previous message has arrived + its own transfer */
                if (sq && (st = fifo_push(sq, a->micro, fmax(clock[s] + link->latency_s + transfer,
                                                             (sq->n ? sq->last_arrive : -INFINITY) + transfer))))
                    break;
            }
        }
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        goto done;
    }
    /* Deadlock: the stuck stage whose wait can never end for a reason of
     * its own (its next receive does not match the next message on the
     * link, or the sender has finished without sending it), else (a cycle
     * of waits) the lowest stuck stage; with no stage stuck, the lowest
     * stage that finished with messages for it left over (stuck_action =
     * its count). */
    int cause = -1, stuck = -1, left = -1;
    for (int s = 0; s < P; s++) {
        if (next[s] < lists[s].count) {
            const pipe_action_t *a = &lists[s].actions[next[s]];
            fifo_t *q = recv_of(a, kind, s, P, act, grad);
            if (stuck < 0)
                stuck = s;
            if (cause < 0 && q && ((q->head < q->n && q->m[q->head].micro != a->micro) ||
                                   (q->head == q->n && next[a->kind == PIPE_FORWARD ? s - 1 : s + 1] ==
                                                       lists[a->kind == PIPE_FORWARD ? s - 1 : s + 1].count)))
                cause = s;
        } else if (left < 0 && ((s > 0 && act[s - 1].head < act[s - 1].n) || (s < P - 1 && grad[s].head < grad[s].n)))
            left = s;
    }
    int named = cause >= 0 ? cause : stuck >= 0 ? stuck : left;
    if (named >= 0) {
        out->deadlock = 1;
        out->stuck_stage = named;
        out->stuck_action = next[named];
    }
    double makespan = 0;
    for (int s = 0; s < P; s++)
        makespan = fmax(makespan, clock[s]);
    out->makespan_s = makespan;
    out->throughput_mbps = out->deadlock || makespan == 0 ? 0 : (double)micro / makespan;
    for (int s = 0; s < P; s++) {
        out->bubble[s] = makespan > 0 ? 1 - busy[s] / makespan : 0;
        out->max_drift[s] = lists[s].max_drift;
    }
done:
    for (int s = 0; s < P; s++) {
        free(act[s].m);
        free(grad[s].m);
    }
    return st;
}

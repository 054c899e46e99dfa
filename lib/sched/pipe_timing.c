/*
 * The stage executor's timing (lib/sched/pipe_internal.h): begin/end event
 * pairs around the compute and side streams' actions, and at each step's
 * end the union of their spans (busy) against the step's wall: the bubble.
 */
#include "lib/sched/pipe_internal.h"

#include <stdlib.h>

/* Record the begin (open < 0: a new pair, its index into *open) or the
 * end (the pair *open, then closed) of a timing span on stream s. Each
 * stream has at most one span open: the compute stream's and the side
 * stream's may interleave (an early backward inside a forward), so a pair
 * is reserved at its begin. */
erase_status_t pipe_mark_time_on(erase_pipe_t *p, erase_stream_t *s, pipe_action_kind_t kind, int *open)
{
    if (*open >= 0) {
        ERASE_CHECK(erase_event_record(p->tev[*open + 1], s));
        *open = -1;
        return ERASE_OK;
    }
    if (p->tev_used == p->ntev) {
        int cap = p->ntev ? 2 * p->ntev : 64;
        erase_event_t **t = realloc(p->tev, (size_t)cap * sizeof *t);
        if (!t)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory for timing events");
        p->tev = t;
        unsigned char *k = realloc(p->tkind, (size_t)cap / 2);
        if (!k)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory for timing events");
        p->tkind = k;
        for (int i = p->ntev; i < cap; i++) {
            erase_status_t st = erase_event_create(p->dev, &p->tev[i]);
            if (st != ERASE_OK) {
                p->ntev = i;
                ERASE_CHECK(st);
            }
        }
        p->ntev = cap;
    }
    p->tkind[p->tev_used / 2] = (unsigned char)kind;
    *open = p->tev_used;
    p->tev_used += 2;
    ERASE_CHECK(erase_event_record(p->tev[*open], s));
    return ERASE_OK;
}

/* The same on the compute stream, for an action of `kind`. */
erase_status_t pipe_mark_time(erase_pipe_t *p, pipe_action_kind_t kind)
{
    return pipe_mark_time_on(p, p->compute, kind, &p->open_compute);
}

static int span_cmp(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return (x > y) - (x < y);
}

/* Reverse pairs [a, b) of tev and tkind. */
static void reverse_pairs(erase_pipe_t *p, int a, int b)
{
    for (b--; a < b; a++, b--) {
        for (int k = 0; k < 2; k++) {
            erase_event_t *e = p->tev[2 * a + k];
            p->tev[2 * a + k] = p->tev[2 * b + k];
            p->tev[2 * b + k] = e;
        }
        unsigned char c = p->tkind[a];
        p->tkind[a] = p->tkind[b];
        p->tkind[b] = c;
    }
}

/* Busy: the union of the first n spans (compute and side streams may
 * overlap), and each span by its kind of action; wall: the origin (the
 * step's start on the compute stream, before any wait: a stage waiting
 * for its first input is idle) to the last span's end. The host's time
 * between steps is in neither; with a step enqueued ahead, the next
 * step's origin is reached as this one ends. */
erase_status_t pipe_account_time(erase_pipe_t *p, erase_event_t *origin, int n)
{
    if (n == 0)
        return ERASE_OK;
    if (n > p->nspans) {
        double (*sp)[2] = realloc(p->spans, sizeof *sp * (size_t)n);
        if (!sp)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory for %d timing spans", n);
        p->spans = sp;
        p->nspans = n;
    }
    for (int i = 0; i < n; i++) {
        ERASE_CHECK(erase_event_elapsed_ms(origin, p->tev[2 * i], &p->spans[i][0]));
        ERASE_CHECK(erase_event_elapsed_ms(origin, p->tev[2 * i + 1], &p->spans[i][1]));
        p->stats.action_ms[p->tkind[i]] += p->spans[i][1] - p->spans[i][0];
    }
    qsort(p->spans, (size_t)n, sizeof p->spans[0], span_cmp);
    double busy = 0, end = 0, from = p->spans[0][0], to = p->spans[0][1];
    for (int i = 1; i < n; i++) {
        if (p->spans[i][0] > to) {
            busy += to - from;
            from = p->spans[i][0];
        }
        if (p->spans[i][1] > to)
            to = p->spans[i][1];
    }
    busy += to - from;
    end = to;
    p->stats.busy_ms += busy;
    p->stats.wall_ms += end;
    p->stats.bubble = p->stats.wall_ms > 0 ? 1.0 - p->stats.busy_ms / p->stats.wall_ms : 0;
    /* rotate pairs [0, used) left by n: the younger step's to the front,
     * the accounted ones behind them, free again */
    int used = p->tev_used / 2;
    reverse_pairs(p, 0, n);
    reverse_pairs(p, n, used);
    reverse_pairs(p, 0, used);
    p->tev_used -= 2 * n;
    return ERASE_OK;
}

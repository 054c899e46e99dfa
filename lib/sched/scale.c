/* The cost model of data-parallel steps (see scale.h for the formulas
 * and their sources). */
#include "lib/sched/scale.h"

#include <math.h>
#include <stdlib.h>

#define MAX_BLOCKS 64

/* ceil(log2 n) for n >= 1. */
static int ceil_log2(int n)
{
    int k = 0;
    while ((1L << k) < n)
        k++;
    return k;
}

/* A flat collective among n ranks on one link. */
static double ring_allreduce(int n, erase_scale_link_t l, double bytes)
{
    return n < 2 ? 0 : 2.0 * (n - 1) * l.alpha_s + 2.0 * (n - 1) / n * bytes * l.beta_s_per_byte;
}

static double tree_allreduce(int n, erase_scale_link_t l, double bytes)
{
    return n < 2 ? 0 : 2.0 * ceil_log2(n) * l.alpha_s + 2.0 * bytes * l.beta_s_per_byte;
}

/* Ring reduce-scatter (or all-gather) of `bytes` in all over n ranks. */
static double ring_half(int n, erase_scale_link_t l, double bytes)
{
    return n < 2 ? 0 : (n - 1) * l.alpha_s + (double)(n - 1) / n * bytes * l.beta_s_per_byte;
}

double erase_scale_allreduce_s(const erase_scale_cluster_t *c, double bytes)
{
    if (bytes <= 0)
        return 0;
    int N = c->nodes, G = c->gpus;
    double inter = c->algo == ERASE_SCALE_TREE ? tree_allreduce(N, c->inter, bytes / G)
                                               : ring_allreduce(N, c->inter, bytes / G);
    return 2 * ring_half(G, c->intra, bytes) + inter;
}

double erase_scale_allgather_s(const erase_scale_cluster_t *c, double bytes)
{
    if (bytes <= 0)
        return 0;
    int N = c->nodes, G = c->gpus;
    double inter = N < 2 ? 0 : (N - 1) * (c->inter.alpha_s + bytes * c->inter.beta_s_per_byte);
    double intra = G < 2 ? 0 : (G - 1) * (c->intra.alpha_s + N * bytes * c->intra.beta_s_per_byte);
    return inter + intra;
}

double erase_scale_reduce_s(const erase_scale_cluster_t *c, const erase_scale_block_t *b)
{
    double t = erase_scale_allreduce_s(c, b->grad_bytes);
    if (b->gathers > 0 && (c->nodes > 1 || c->gpus > 1)) {
        /* the bytes once, every further all-gather its latency */
        erase_scale_cluster_t zero = *c;
        zero.inter.beta_s_per_byte = zero.intra.beta_s_per_byte = 0;
        t += erase_scale_allgather_s(c, b->gather_bytes) + (b->gathers - 1) * erase_scale_allgather_s(&zero, 1);
    }
    return t;
}

static int bad(double x) { return !isfinite(x) || x < 0; }

static double max2(double a, double b) { return a > b ? a : b; }

/* The early plan's step time with reduction times r[] (see scale.h).
 * Concurrent compute: each update follows its reduction on the comm
 * stream. Shared compute: the updates take the compute resource too (on
 * the CPU the comm stream's worker computes them on the same cores), one
 * after another in the comm stream's order as their reductions end, so
 * the step ends no earlier than all compute (forwards, backwards,
 * updates) and no earlier than any reduction's end plus the updates
 * still to run after it. */
static double early_step(const erase_scale_block_t *bl, int B, const int *cut, const double *r, int concurrent)
{
    double main_t = 0, side_t = 0, comm_t = 0, done[MAX_BLOCKS], ready[MAX_BLOCKS], updates = 0;
    int order[MAX_BLOCKS], n = 0, lo = 0;
    for (int b = 0; b < B; b++) {
        main_t += bl[b].forward_s; /* shared compute: main_t is the compute resource's clock */
        if (b + 1 < B && (cut ? !cut[b + 1] : 0))
            continue; /* attached: the segment goes on */
        double t = concurrent ? max2(side_t, main_t) : main_t;
        for (int k = b; k >= lo; k--) {
            t += bl[k].backward_s;
            done[k] = t;
        }
        if (concurrent)
            side_t = t;
        else
            main_t = t;
        for (int k = b; k >= lo; k--) { /* the comm stream: reduce, then (concurrent) update */
            comm_t = max2(comm_t, done[k]) + r[k] + (concurrent ? bl[k].update_s : 0);
            ready[n] = comm_t;
            order[n++] = k;
            updates += bl[k].update_s;
        }
        lo = b + 1;
    }
    double end = max2(max2(main_t, side_t), comm_t);
    if (!concurrent) {
        end = max2(end, main_t + updates);
        double tail = 0;
        for (int i = n - 1; i >= 0; i--) {
            tail += bl[order[i]].update_s;
            end = max2(end, ready[i] + tail);
        }
    }
    return end;
}

erase_status_t erase_scale_step(const erase_scale_block_t *bl, int B, const int *cut, const erase_scale_cluster_t *c,
                                 int concurrent, erase_scale_step_t *out)
{
    if (B < 1 || B > MAX_BLOCKS)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scale: %d blocks (expected 1 .. %d)", B, MAX_BLOCKS);
    if (c->nodes < 1 || c->gpus < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "scale: %d nodes x %d ranks (expected at least 1 x 1)", c->nodes,
                           c->gpus);
    if (bad(c->intra.alpha_s) || bad(c->intra.beta_s_per_byte) || bad(c->inter.alpha_s) ||
        bad(c->inter.beta_s_per_byte))
        return ERASE_ERROR(ERASE_ERR_INVALID, "scale: a link's latency or seconds per byte is negative or "
                           "not finite (intra %g s, %g s/B; inter %g s, %g s/B)", c->intra.alpha_s,
                           c->intra.beta_s_per_byte, c->inter.alpha_s, c->inter.beta_s_per_byte);
    for (int b = 0; b < B; b++)
        if (bad(bl[b].forward_s) || bad(bl[b].backward_s) || bad(bl[b].update_s) || bad(bl[b].grad_bytes) ||
            bad(bl[b].gather_bytes) || bl[b].gathers < 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "scale: block %d: a time or byte count is negative or not "
                               "finite (forward %g s, backward %g s, update %g s, %g gradient bytes, %g "
                               "gathered bytes in %d all-gathers)", b, bl[b].forward_s, bl[b].backward_s,
                               bl[b].update_s, bl[b].grad_bytes, bl[b].gather_bytes, bl[b].gathers);
    double r[MAX_BLOCKS], none[MAX_BLOCKS] = { 0 };
    erase_scale_step_t s = { 0 };
    for (int b = 0; b < B; b++) {
        r[b] = erase_scale_reduce_s(c, &bl[b]);
        s.compute_s += bl[b].forward_s + bl[b].backward_s + bl[b].update_s;
        s.comm_s += r[b];
    }
    s.early_s = early_step(bl, B, cut, r, concurrent);
    s.off_s = s.compute_s + s.comm_s;
    s.gain = s.early_s > 0 ? s.off_s / s.early_s : 1;
    double alone = early_step(bl, B, cut, none, concurrent); /* one rank: the compute's critical path */
    s.exposed_s = s.early_s - alone;
    s.efficiency = s.early_s > 0 ? alone / s.early_s : 1;
    *out = s;
    return ERASE_OK;
}

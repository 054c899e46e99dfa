/* Gradient accumulation over micro-batches (grad_accum.h), moved out of
 * the pipeline stage executor so that the data-parallel scheduler's
 * --accumulate adds and merges gradients the same way. */
#include "lib/sched/grad_accum.h"

#include "lib/core/checked.h"
#include "lib/ops/ops.h"
#include "lib/sched/reduce.h"

#include <limits.h>
#include <stdlib.h>

/* Embedding rows of one block, packed per micro-batch until the update
 * merges them. */
typedef struct {
    int tables, first, dim;
    int *counts;        /* [W][tables] */
    uint32_t *rows;     /* [W][tables * cap] */
    float *values;      /* [W][tables * cap * dim] */
} sparse_acc_t;

/* The pairwise sums of one block's dense gradients (SCHED_ACCUM_PAIRWISE):
 * a stack of partial sums of 2^k micro-batches each, largest at the
 * bottom; level 0 is the network's gradient buffer, levels 1 .. levels-1
 * are `extra`. */
typedef struct {
    float *extra;       /* [levels - 1][n] */
    int depth;          /* partial sums on the stack (issue time) */
    int next;           /* the region the next add must name */
} pairwise_t;

struct sched_accum {
    erase_network_t *net;
    erase_device_t *dev;
    int windows, micro_size;
    int cap;            /* a window's sparse rows per table: micro_size x ids per sample */
    int pairwise, levels;
    sparse_acc_t sparse[ERASE_MAX_BLOCKS];
    pairwise_t pair[ERASE_MAX_BLOCKS];
};

/* The deepest stack W adds reach: the most set bits of a count 1..W. */
static int pairwise_levels(int windows)
{
    int most = 1;
    for (int c = 1; c <= windows; c++)
        most = __builtin_popcount((unsigned)c) > most ? __builtin_popcount((unsigned)c) : most;
    return most;
}

/* Level k of block b's stack (n floats). */
static float *pairwise_level(sched_accum_t *a, int b, int k, size_t n)
{
    return k == 0 ? erase_network_block_grads(a->net, b, &n) : a->pair[b].extra + (size_t)(k - 1) * n;
}

static erase_status_t sparse_setup(sched_accum_t *a, int b)
{
    sparse_acc_t *sa = &a->sparse[b];
    ERASE_CHECK(sched_block_tables(a->net, b, &sa->first, &sa->tables, &sa->dim));
    if (sa->tables == 0)
        return ERASE_OK;
    size_t slots = (size_t)a->windows * (size_t)sa->tables, rows, vals;
    if (!erase_bytes(1, (int64_t)slots, a->cap, &rows) || !erase_bytes(rows, 1, sa->dim, &vals))
        return ERASE_ERROR(ERASE_ERR_INVALID, "gradient accumulation: embedding rows of %d micro-batches overflow",
                           a->windows);
    ERASE_CHECK(erase_malloc(a->dev, sizeof(int) * slots, (void **)&sa->counts));
    ERASE_CHECK(erase_malloc(a->dev, sizeof(uint32_t) * rows, (void **)&sa->rows));
    ERASE_CHECK(erase_malloc(a->dev, sizeof(float) * vals, (void **)&sa->values));
    ERASE_CHECK(erase_memset_sync(a->dev, sa->counts, 0, sizeof(int) * slots));
    return ERASE_OK;
}

erase_status_t sched_accum_create(erase_network_t *net, int first, int last, int windows, int micro_size,
                                  int flags, sched_accum_t **out)
{
    if (windows < 1 || micro_size < 1 || first < 0 || last > erase_network_blocks(net) || first >= last)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gradient accumulation: %d micro-batches of %d samples over blocks "
                           "[%d, %d)", windows, micro_size, first, last);
    int64_t cap = (int64_t)micro_size * erase_network_ids_per_sample(net), rows = (int64_t)windows * cap;
    if (rows > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gradient accumulation: %d micro-batches of %d samples: too many rows",
                           windows, micro_size);
    sched_accum_t *a = calloc(1, sizeof *a);
    if (!a)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "gradient accumulation: no memory");
    a->net = net;
    a->dev = erase_network_device(net);
    a->windows = windows;
    a->micro_size = micro_size;
    a->cap = (int)cap;
    a->pairwise = (flags & SCHED_ACCUM_PAIRWISE) != 0;
    a->levels = a->pairwise ? pairwise_levels(windows) : 1;
    erase_status_t st = erase_network_reserve_sparse_rows(net, (int)rows);
    for (int b = first; st == ERASE_OK && b < last; b++) {
        size_t n, bytes;
        float *g = erase_network_block_grads(net, b, &n);
        if (n)
            st = erase_memset_sync(a->dev, g, 0, sizeof(float) * n);
        if (st == ERASE_OK && n && a->levels > 1) {
            if (!erase_bytes(sizeof(float), a->levels - 1, (int64_t)n, &bytes))
                st = ERASE_ERROR(ERASE_ERR_INVALID, "gradient accumulation: %d partial sums of %zu gradients "
                                 "overflow", a->levels - 1, n);
            else
                st = erase_malloc(a->dev, bytes, (void **)&a->pair[b].extra);
        }
        if (st == ERASE_OK)
            st = sparse_setup(a, b);
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        sched_accum_destroy(a);
        return st;
    }
    *out = a;
    return ERASE_OK;
}

void sched_accum_destroy(sched_accum_t *a)
{
    if (!a)
        return;
    for (int b = 0; b < ERASE_MAX_BLOCKS; b++) {
        erase_free(a->dev, a->sparse[b].counts);
        erase_free(a->dev, a->sparse[b].rows);
        erase_free(a->dev, a->sparse[b].values);
        erase_free(a->dev, a->pair[b].extra);
    }
    free(a);
}

/* Add the top partial sum of block b's stack into the one below it, and
 * pop it. */
static erase_status_t pairwise_merge_top(sched_accum_t *a, int b, size_t n, erase_stream_t *s)
{
    pairwise_t *p = &a->pair[b];
    ERASE_CHECK(erase_axpy(s, n, 1.0f, pairwise_level(a, b, p->depth - 1, n),
                           pairwise_level(a, b, p->depth - 2, n)));
    p->depth--;
    return ERASE_OK;
}

/*
 * Micro-batch `region` (the next in order) of block b into the pairwise
 * stack: the c-th add (c = region + 1) pushes its gradient and then merges
 * the top two sums as often as c has trailing zero bits, so that after
 * the last add of a power-of-two W the bottom holds the pairwise tree
 * ((g0 + g1) + (g2 + g3)) + ... ; for other W the stack is then folded
 * from the top, which is the same level-wise tree with the odd node of a
 * level carried up: the order the all-reduce of a power-of-two number of
 * ranks continues (lib/comm/mpi_collectives.c, halving_allreduce). The first push
 * is a copy, not an add into zeros (a -0.0 stays -0.0, as a leaf does).
 */
static erase_status_t pairwise_add(sched_accum_t *a, int b, const float *g, size_t n, int region,
                                   erase_stream_t *s)
{
    pairwise_t *p = &a->pair[b];
    if (region != p->next)
        return ERASE_ERROR(ERASE_ERR_INVALID, "gradient accumulation: block %d added micro-batch %d where %d was "
                           "next (pairwise sums take them in order)", b, region, p->next);
    unsigned c = (unsigned)region + 1;
    if (c & 1) {
        ERASE_CHECK(erase_memcpy_async(s, pairwise_level(a, b, p->depth, n), g, sizeof(float) * n));
        p->depth++;
    } else {
        ERASE_CHECK(erase_axpy(s, n, 1.0f, g, pairwise_level(a, b, p->depth - 1, n)));
        for (c >>= 1; !(c & 1); c >>= 1)
            ERASE_CHECK(pairwise_merge_top(a, b, n, s));
    }
    if (++p->next < a->windows)
        return ERASE_OK;
    while (p->depth > 1)
        ERASE_CHECK(pairwise_merge_top(a, b, n, s));
    p->depth = 0;
    p->next = 0;
    return ERASE_OK;
}

erase_status_t sched_accum_add(sched_accum_t *a, erase_network_t *replica, int region, int b0, int b1,
                               erase_stream_t *s)
{
    int np;
    erase_param_t *rp = erase_network_params(replica, &np);
    for (int b = b0; b < b1; b++) {
        size_t n;
        const float *g = erase_network_block_grads(replica, b, &n);
        if (n && a->pairwise)
            ERASE_CHECK(pairwise_add(a, b, g, n, region, s));
        else if (n)
            ERASE_CHECK(erase_axpy(s, n, 1.0f, g, erase_network_block_grads(a->net, b, &n)));
        sparse_acc_t *sa = &a->sparse[b];
        if (sa->tables == 0)
            continue;
        const int *counts[ERASE_FIELDS_MAX];
        const uint32_t *rows[ERASE_FIELDS_MAX];
        const float *values[ERASE_FIELDS_MAX];
        for (int t = 0; t < sa->tables; t++) {
            counts[t] = rp[sa->first + t].grad_count;
            rows[t] = rp[sa->first + t].grad_rows;
            values[t] = rp[sa->first + t].grad_values;
        }
        size_t at = (size_t)region * (size_t)sa->tables, cap = (size_t)a->cap;
        ERASE_CHECK(erase_sparse_pack(s, sa->tables, a->cap, sa->dim, counts, rows, values, sa->counts + at,
                                      sa->rows + at * cap, sa->values + at * cap * (size_t)sa->dim));
    }
    return ERASE_OK;
}

erase_status_t sched_accum_merge(sched_accum_t *a, int b, erase_stream_t *s)
{
    sparse_acc_t *sa = &a->sparse[b];
    if (sa->tables == 0)
        return ERASE_OK;
    int np;
    erase_param_t *params = erase_network_params(a->net, &np);
    int *counts[ERASE_FIELDS_MAX];
    uint32_t *rows[ERASE_FIELDS_MAX];
    float *values[ERASE_FIELDS_MAX];
    for (int t = 0; t < sa->tables; t++) {
        counts[t] = params[sa->first + t].grad_count;
        rows[t] = params[sa->first + t].grad_rows;
        values[t] = params[sa->first + t].grad_values;
    }
    ERASE_CHECK(erase_sparse_merge(s, a->windows, sa->tables, a->cap, sa->dim, 1.0f, sa->counts, sa->rows,
                                   sa->values, counts, rows, values));
    ERASE_CHECK(erase_memset_async(s, sa->counts, 0, sizeof(int) * (size_t)a->windows * (size_t)sa->tables));
    return ERASE_OK;
}

erase_status_t sched_accum_zero(sched_accum_t *a, int b, erase_stream_t *s)
{
    if (a->pairwise)
        return ERASE_OK; /* the next step's first micro-batch is copied in (pairwise_add), not added */
    size_t n;
    float *g = erase_network_block_grads(a->net, b, &n);
    return n ? erase_memset_async(s, g, 0, sizeof(float) * n) : ERASE_OK;
}

/* The sharded tables' exchange ops of lib/ops/ops.h (shard route, gather
 * rows, sparse split) on the CPU backend; arguments validated by
 * lib/ops/ops.c. Run-time failures are returned to the stream. */
#include "lib/ops/cpu/ops_cpu.h"
#include "lib/ops/cpu/kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int n, tables, ranks, tmax, capacity;
    erase_bag_t bag;
    int columns, offset[ERASE_FIELDS_MAX]; /* H; table t's first column */
    const uint32_t *ids, *table_rows;
    const int64_t *bounds;
    const int32_t *slot;
    uint32_t *send_rows, *pos;
    int *send_counts;
} route_args_t;

/* Route table t's ids in (sample, column) order; `next` counts the entries
 * given to each rank so far ([ranks], zeroed here). */
static erase_status_t route_table(const route_args_t *a, int t, int *next)
{
    const int64_t *b = a->bounds + (size_t)t * (a->ranks + 1);
    const int32_t *slot = a->slot + (size_t)t * a->ranks;
    memset(next, 0, sizeof(int) * (size_t)a->ranks);
    for (int i = 0; i < a->n; i++) {
        int len = a->bag.lengths ? (int)a->bag.lengths[(size_t)i * a->tables + t] : 1;
        for (int j = 0; j < a->bag.hotness[t]; j++) {
            size_t c = (size_t)i * a->columns + (size_t)a->offset[t] + (size_t)j;
            if (j >= len) {
                a->pos[c] = ERASE_SHARD_PAD;
                continue;
            }
            uint32_t row = erase_embedding_row(a->ids[c], a->table_rows[t]);
            int r = erase_shard_range_owner(b, a->ranks, row);
            if (r == a->ranks)
                return ERASE_ERROR(ERASE_ERR_INVALID,
                                   "shard route: table %d sample %d: row %u is outside the bounds [0, %lld)",
                                   t, i, row, (long long)b[a->ranks]);
            int k = slot[r];
            if (k < 0 || k >= a->tmax)
                return ERASE_ERROR(ERASE_ERR_INVALID,
                                   "shard route: table %d sample %d: row %u's owner, rank %d, has slot %d "
                                   "(expected 0 to tmax-1 = %d)",
                                   t, i, row, r, k, a->tmax - 1);
            size_t at = ((size_t)r * a->tmax + (size_t)k) * a->capacity + (size_t)next[r]++;
            a->send_rows[at] = (uint32_t)(row - b[r]);
            a->pos[c] = (uint32_t)at;
        }
    }
    for (int r = 0; r < a->ranks; r++)
        if (slot[r] >= 0 && slot[r] < a->tmax)
            a->send_counts[(size_t)r * a->tmax + (size_t)slot[r]] = next[r];
    return ERASE_OK;
}

static erase_status_t route_k(const void *p)
{
    const route_args_t *a = p;
    int bad_r, bad_t;
    uint32_t bad_n;
    if (erase_k_bag_bad_length(a->n, a->tables, &a->bag, &bad_r, &bad_t, &bad_n))
        return ERASE_ERROR(ERASE_ERR_INVALID, "shard route: sample %d table %d has %u ids, expected 1 to %d",
                           bad_r, bad_t, bad_n, a->bag.hotness[bad_t]);
    size_t entries = (size_t)a->ranks * a->tmax * a->capacity;
    for (size_t e = 0; e < entries; e++)
        a->send_rows[e] = ERASE_SHARD_PAD;
    memset(a->send_counts, 0, sizeof(int) * (size_t)a->ranks * (size_t)a->tmax);
    int *next = malloc(sizeof(int) * (size_t)a->ranks);
    if (!next)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "shard route: no memory for %d counters", a->ranks);
    erase_status_t st = ERASE_OK;
    for (int t = 0; t < a->tables && st == ERASE_OK; t++)
        st = route_table(a, t, next);
    free(next);
    return st;
}

erase_status_t erase_cpu_shard_route(erase_stream_t *s, int n, int tables, const erase_bag_t *bag,
                                     const uint32_t *ids, const uint32_t *table_rows, int ranks,
                                     const int64_t *bounds, const int32_t *slot, int tmax, int capacity,
                                     uint32_t *send_rows, int *send_counts, uint32_t *pos)
{
    route_args_t a = { .n = n, .tables = tables, .ranks = ranks, .tmax = tmax,
                       .capacity = capacity, .bag = *bag, .ids = ids, .table_rows = table_rows,
                       .bounds = bounds, .slot = slot, .send_rows = send_rows,
                       .send_counts = send_counts, .pos = pos };
    for (int t = 0; t < tables; t++) {
        a.offset[t] = a.columns;
        a.columns += bag->hotness[t];
    }
    LAUNCH(s, route_k, a);
}

typedef struct {
    int n, dim;
    const uint32_t *index;
    size_t index_stride, out_stride;
    const float *src;
    int64_t src_rows;
    float *out;
} gather_args_t;

static erase_status_t gather_k(const void *p)
{
    const gather_args_t *a = p;
    for (int i = 0; i < a->n; i++) {
        uint32_t j = a->index[(size_t)i * a->index_stride];
        float *o = a->out + (size_t)i * a->out_stride;
        if (j == ERASE_SHARD_PAD) {
            memset(o, 0, sizeof(float) * (size_t)a->dim);
            continue;
        }
        if ((int64_t)j >= a->src_rows)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "gather rows: entry %d: index %u is not below the source's %lld rows",
                               i, j, (long long)a->src_rows);
        memcpy(o, a->src + (size_t)j * a->dim, sizeof(float) * (size_t)a->dim);
    }
    return ERASE_OK;
}

erase_status_t erase_cpu_gather_rows(erase_stream_t *s, int n, int dim, const uint32_t *index,
                                     size_t index_stride, const float *src, int64_t src_rows,
                                     float *out, size_t out_stride)
{
    gather_args_t a = { .n = n, .dim = dim, .index = index, .index_stride = index_stride,
                        .out_stride = out_stride, .src = src, .src_rows = src_rows, .out = out };
    LAUNCH(s, gather_k, a);
}

typedef struct {
    int capacity, dim, ranks;
    const int *count;
    const uint32_t *rows;
    const float *values;
    const int64_t *bounds;
    const int32_t *slot_index;
    int *out_counts;
    uint32_t *out_rows;
    float *out_values;
} split_args_t;

static erase_status_t split_k(const void *p)
{
    const split_args_t *a = p;
    int n = *a->count;
    if (n < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sparse split: count %d is negative", n);
    for (int r = 0; r < a->ranks; r++)
        if (a->slot_index[r] >= 0)
            a->out_counts[a->slot_index[r]] = 0;
    for (int i = 0; i < n; i++) {
        uint32_t row = a->rows[i];
        int r = erase_shard_range_owner(a->bounds, a->ranks, row);
        if (r == a->ranks)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "sparse split: row %u is outside the bounds [0, %lld)", row,
                               (long long)a->bounds[a->ranks]);
        int q = a->slot_index[r];
        if (q < 0)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "sparse split: row %u belongs to rank %d, which has no slot (-1)",
                               row, r);
        int j = a->out_counts[q];
        if (j >= a->capacity)
            return ERASE_ERROR(ERASE_ERR_INVALID,
                               "sparse split: rank %d's rows (slot %d) are above the capacity %d",
                               r, q, a->capacity);
        a->out_counts[q] = j + 1;
        size_t at = (size_t)q * a->capacity + (size_t)j;
        a->out_rows[at] = (uint32_t)(row - a->bounds[r]);
        memcpy(a->out_values + at * a->dim, a->values + (size_t)i * a->dim,
               sizeof(float) * (size_t)a->dim);
    }
    return ERASE_OK;
}

erase_status_t erase_cpu_sparse_split(erase_stream_t *s, int capacity, int dim, const int *count,
                                      const uint32_t *rows, const float *values, int ranks,
                                      const int64_t *bounds, const int32_t *slot_index,
                                      int *out_counts, uint32_t *out_rows, float *out_values)
{
    split_args_t a = { .capacity = capacity, .dim = dim, .ranks = ranks, .count = count,
                       .rows = rows, .values = values, .bounds = bounds,
                       .slot_index = slot_index, .out_counts = out_counts,
                       .out_rows = out_rows, .out_values = out_values };
    LAUNCH(s, split_k, a);
}

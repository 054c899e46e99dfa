#include "lib/sched/reduce.h"
#include "lib/sched/sched.h"

#include "lib/ops/ops.h"
#include "lib/sched/embed_shard.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int tables, first;          /* embedding params [first, first + tables) */
    int dim;
    int *counts, *all_counts;   /* [tables], [D * tables] */
    uint32_t *rows, *all_rows;  /* [tables * cap], [D * tables * cap] */
    float *values, *all_values; /* [tables * cap * dim], [D * ...] */
} sparse_block_t;

struct sched_reduce {
    erase_network_t *net;
    erase_device_t *dev;
    erase_comm_t *dp;
    int ranks, capacity;        /* capacity: rows per table per rank = max_batch x ids per sample */
    sparse_block_t blocks[ERASE_MAX_BLOCKS];
    erase_embed_shard_t *shard;  /* NULL: every table replicated */
};

/* Block b's all-gather buffers, freed. */
static void free_block(sched_reduce_t *r, int b)
{
    sparse_block_t *sb = &r->blocks[b];
    void *bufs[] = { sb->counts, sb->all_counts, sb->rows, sb->all_rows, sb->values, sb->all_values };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        erase_free(r->dev, bufs[i]);
    sb->counts = sb->all_counts = NULL;
    sb->rows = sb->all_rows = NULL;
    sb->values = sb->all_values = NULL;
}

void sched_reduce_set_shard(sched_reduce_t *r, erase_embed_shard_t *es)
{
    r->shard = es;
    if (es) /* its exchange has buffers of its own */
        free_block(r, erase_embed_shard_block(es));
}

/* Block b's tables are sharded. */
static int sharded(const sched_reduce_t *r, int b)
{
    return r && r->shard && erase_embed_shard_block(r->shard) == b;
}

#define ALLOC(ptr, n) ERASE_CHECK(erase_malloc(r->dev, sizeof(*(ptr)) * (size_t)(n), (void **)&(ptr)))

erase_status_t sched_block_tables(erase_network_t *net, int b, int *first, int *tables, int *dim)
{
    int p0, count, n;
    erase_param_t *params = erase_network_params(net, &n);
    erase_network_block_params(net, b, &p0, &count);
    *first = *tables = *dim = 0;
    for (int i = p0; i < p0 + count; i++) {
        if (params[i].kind != ERASE_PARAM_EMBEDDING)
            continue;
        if (*tables == 0) {
            *first = i;
            *dim = (int)params[i].cols;
        } else if (i != *first + *tables || params[i].cols != *dim) {
            return ERASE_ERROR(ERASE_ERR_INVALID, "reduce: block %d's tables are not consecutive "
                               "parameters of one width", b);
        }
        (*tables)++;
    }
    if (*tables > ERASE_FIELDS_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "reduce: %d tables in a block (at most %d)", *tables, ERASE_FIELDS_MAX);
    return ERASE_OK;
}

static erase_status_t setup_block(sched_reduce_t *r, int b)
{
    sparse_block_t *sb = &r->blocks[b];
    ERASE_CHECK(sched_block_tables(r->net, b, &sb->first, &sb->tables, &sb->dim));
    if (sb->tables == 0)
        return ERASE_OK;
    size_t slots = (size_t)sb->tables * (size_t)r->capacity;
    ALLOC(sb->counts, sb->tables);
    ALLOC(sb->all_counts, (size_t)r->ranks * sb->tables);
    ALLOC(sb->rows, slots);
    ALLOC(sb->all_rows, slots * (size_t)r->ranks);
    ALLOC(sb->values, slots * (size_t)sb->dim);
    ALLOC(sb->all_values, slots * (size_t)sb->dim * (size_t)r->ranks);
    return ERASE_OK;
}

erase_status_t sched_reduce_create(erase_network_t *net, erase_comm_t *dp, int capacity, sched_reduce_t **out)
{
    sched_reduce_t *r = calloc(1, sizeof *r);
    if (!r)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "reduce: no memory");
    r->net = net;
    r->dev = erase_network_device(net);
    r->dp = dp;
    r->ranks = erase_comm_size(dp);
    int64_t rows = (int64_t)capacity * erase_network_ids_per_sample(net); /* multi-hot: ids, not samples */
    r->capacity = (int)rows;
    erase_status_t st = rows * r->ranks > INT_MAX
                            ? ERASE_ERROR(ERASE_ERR_INVALID, "reduce: %d ranks x %lld sparse rows are more than %d",
                                          r->ranks, (long long)rows, INT_MAX)
                            : erase_network_reserve_sparse_rows(net, r->ranks * r->capacity);
    for (int b = 0; st == ERASE_OK && b < erase_network_blocks(net); b++)
        st = setup_block(r, b);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        sched_reduce_destroy(r);
        return st;
    }
    *out = r;
    return ERASE_OK;
}

void sched_reduce_destroy(sched_reduce_t *r)
{
    if (!r)
        return;
    for (int b = 0; b < ERASE_MAX_BLOCKS; b++)
        free_block(r, b);
    free(r);
}

erase_status_t sched_reduce_block(sched_reduce_t *r, int b, erase_stream_t *s)
{
    size_t count;
    float *grads = erase_network_block_grads(r->net, b, &count);
    if (count)
        ERASE_CHECK(erase_allreduce(r->dp, s, grads, grads, count, ERASE_DTYPE_F32, ERASE_REDUCE_MEAN));
    sparse_block_t *sb = &r->blocks[b];
    if (sb->tables == 0)
        return ERASE_OK;
    if (sharded(r, b))
        return erase_embed_shard_reduce(r->shard, r->dp, s);
    int n;
    erase_param_t *params = erase_network_params(r->net, &n) + sb->first;
    const int *counts[ERASE_FIELDS_MAX];
    const uint32_t *rows[ERASE_FIELDS_MAX];
    const float *values[ERASE_FIELDS_MAX];
    int *out_counts[ERASE_FIELDS_MAX];
    uint32_t *out_rows[ERASE_FIELDS_MAX];
    float *out_values[ERASE_FIELDS_MAX];
    for (int t = 0; t < sb->tables; t++) {
        counts[t] = out_counts[t] = params[t].grad_count;
        rows[t] = out_rows[t] = params[t].grad_rows;
        values[t] = out_values[t] = params[t].grad_values;
    }
    size_t slots = (size_t)sb->tables * (size_t)r->capacity;
    ERASE_CHECK(erase_sparse_pack(s, sb->tables, r->capacity, sb->dim, counts, rows, values,
                                  sb->counts, sb->rows, sb->values));
    ERASE_CHECK(erase_allgather(r->dp, s, sb->counts, sb->all_counts, (size_t)sb->tables, ERASE_DTYPE_I32));
    ERASE_CHECK(erase_allgather(r->dp, s, sb->rows, sb->all_rows, slots, ERASE_DTYPE_I32));
    ERASE_CHECK(erase_allgather(r->dp, s, sb->values, sb->all_values, slots * (size_t)sb->dim, ERASE_DTYPE_F32));
    ERASE_CHECK(erase_sparse_merge(s, r->ranks, sb->tables, r->capacity, sb->dim, 1.0f / (float)r->ranks,
                                   sb->all_counts, sb->all_rows, sb->all_values, out_counts, out_rows,
                                   out_values));
    return ERASE_OK;
}

erase_status_t erase_sched_reduce_bytes(erase_network_t *net, int b, int capacity, double *dense, double *gathered,
                                        int *gathers)
{
    int first, tables, dim;
    size_t count;
    erase_network_block_grads(net, b, &count);
    ERASE_CHECK(sched_block_tables(net, b, &first, &tables, &dim));
    double slots = (double)tables * capacity * erase_network_ids_per_sample(net); /* sparse_block_t's of one rank */
    *dense = (double)count * sizeof(float);
    *gathered = tables ? tables * sizeof(int) + slots * sizeof(uint32_t) + slots * dim * sizeof(float) : 0;
    *gathers = tables ? 3 : 0;
    return ERASE_OK;
}

erase_status_t sched_reduce_and_check(sched_reduce_t *r, erase_network_t *net, erase_optimizer_t *opt, int b,
                                      erase_stream_t *s)
{
    if (r)
        ERASE_CHECK(sched_reduce_block(r, b, s));
    erase_optim_clock_t *clock = erase_optimizer_clock(opt);
    size_t count;
    const float *grads = erase_network_block_grads(net, b, &count);
    if (count)
        ERASE_CHECK(erase_check_finite(s, grads, count, NULL, b + 1, clock));
    int first, n, np;
    erase_param_t *params = erase_network_params(net, &np);
    erase_network_block_params(net, b, &first, &n);
    for (int i = first; i < first + n; i++)
        if (params[i].kind == ERASE_PARAM_EMBEDDING)
            ERASE_CHECK(erase_check_finite(s, params[i].grad_values, (size_t)params[i].cols,
                                           params[i].grad_count, b + 1, clock));
    if (sharded(r, b))
        ERASE_CHECK(erase_allreduce(r->dp, s, &clock->nonfinite, &clock->nonfinite, 1, ERASE_DTYPE_I32,
                                    ERASE_REDUCE_MAX));
    return ERASE_OK;
}

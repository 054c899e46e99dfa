/*
 * Sharded embeddings (lib/sched/embed_shard.h): buffers, the forward's
 * all-to-alls, the gradients' exchange.
 *
 * Layout of every exchanged buffer: D blocks (one per peer rank, the
 * all-to-all's block r), each of Tmax slots (slot k of block r: the k-th
 * table, in table order, of which rank r holds rows), each slot max_batch
 * (B) rows or B x dim floats, of which the counted all-to-alls
 * (erase_alltoall_slots) move the slot's count.
 */
#include "lib/sched/embed_shard.h"

#include "lib/core/checked.h"
#include "lib/ops/ops.h"
#include "lib/sched/reduce.h"

#include <stdlib.h>
#include <string.h>

struct erase_embed_shard {
    erase_network_t *net;
    erase_device_t *dev;
    erase_comm_t *emb;
    erase_comm_t *dp;                   /* the last reduce's (erase_embed_shard_traffic) */
    int block, first, tables, dim;      /* tables: params [first, first + tables) of width dim */
    int samples, cap;                   /* max_batch; B = a slot's entries, max_batch x ids per sample */
    erase_bag_t bag;                    /* the model's multi-hot layout (lengths: the batch's) */
    int columns;                        /* H: ids per sample over all tables (tables when one-hot) */
    float *vecs;                        /* [max_batch][H][dim]: the looked-up rows before pooling (multi-hot) */
    int ranks, rank, tmax;
    int owned[ERASE_FIELDS_MAX];        /* the tables this rank holds rows of, in slot order */
    int nowned;
    uint32_t *table_rows;               /* device [T]: R_t */
    int64_t *bounds;                    /* device [T][D + 1]: rank r holds rows [bounds[t][r], bounds[t][r+1]) */
    int32_t *slot;                      /* device [T][D]: table t's slot in rank r's block, -1: r holds none */
    int32_t *slot_index;                /* device [T][D]: r x Tmax + slot, -1: r holds none */
    uint32_t *pos;                      /* [max_batch][H]: where sample i's id in column c went in rows_send */
    uint32_t *rows_send, *rows_recv;    /* [D][Tmax][B]: routed rows (local to their holder), or pad */
    int *fcnt_send, *fcnt_recv;         /* [D][Tmax]: rows routed into each slot, received in each */
    float *vec_send, *vec_recv;         /* [D][Tmax][B][dim] */
    int *cnt_send, *cnt_recv;           /* [D][Tmax] */
    uint32_t *grow_send, *grow_recv;    /* [D][Tmax][B] */
    float *gval_send, *gval_recv;       /* [D][Tmax][B][dim] */
    int *pad_counts;                    /* [Tmax]: the merge's outputs for slots no table fills */
    uint32_t *pad_rows;                 /* [D][B] */
    float *pad_values;                  /* [D][B][dim] */
};

static erase_status_t shard_forward(void *ctx, erase_stream_t *s, int n, const uint32_t *ids, const uint32_t *lengths,
                                    float *emb);

/* Slot buffers of `per` elements of `elem` bytes per (rank, slot). */
static erase_status_t alloc_slots(erase_embed_shard_t *es, size_t elem, int64_t per, void **out)
{
    size_t bytes;
    int64_t blocks = (int64_t)es->ranks * es->tmax;
    if (!erase_bytes(elem, blocks, per, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: %lld slots of %lld elements overflow",
                           (long long)blocks, (long long)per);
    return erase_malloc(es->dev, bytes ? bytes : elem, out);
}

/* A device copy of `bytes` bytes of host data. */
static erase_status_t upload(erase_embed_shard_t *es, const void *host, size_t bytes, void **out)
{
    ERASE_CHECK(erase_malloc(es->dev, bytes, out));
    return erase_memcpy_sync(es->dev, *out, host, bytes);
}

/* The placement's row ranges, slots and device tables (see the struct). */
static erase_status_t place(erase_embed_shard_t *es, const erase_shard_t *plan)
{
    int D = es->ranks, T = es->tables, count[ERASE_FIELDS_MAX] = { 0 };
    int np;
    erase_param_t *params = erase_network_params(es->net, &np) + es->first;
    uint32_t rows[ERASE_FIELDS_MAX];
    int32_t slot[ERASE_FIELDS_MAX * ERASE_FIELDS_MAX], slot_index[ERASE_FIELDS_MAX * ERASE_FIELDS_MAX];
    int64_t bounds[ERASE_FIELDS_MAX * (ERASE_FIELDS_MAX + 1)];
    if (D > ERASE_FIELDS_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: %d ranks (at most %d)", D, ERASE_FIELDS_MAX);
    for (int t = 0; t < T; t++) {
        const erase_shard_t *p = &plan[t];
        const erase_param_t *q = &params[t];
        if ((p->kind != ERASE_SHARD_TABLE && p->kind != ERASE_SHARD_ROW) || p->ranks != D ||
            (p->kind == ERASE_SHARD_TABLE && (p->owner < 0 || p->owner >= D)))
            return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: table %d's placement is %s on "
                               "rank %d of %d; expected table-wise on one of %d ranks or row-wise", t,
                               erase_shard_kind_name(p->kind) ? erase_shard_kind_name(p->kind) : "?",
                               p->owner, p->ranks, D);
        if (q->rows != p->rows || q->rows < 2 || q->rows > UINT32_MAX)
            return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: table %s has %lld rows, its "
                               "placement %lld", q->name, (long long)q->rows, (long long)p->rows);
        if (q->row0 != erase_shard_first_row(p, es->rank) || q->held != erase_shard_rows_on(p, es->rank))
            return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: table %s holds rows %lld+%lld on rank %d, "
                               "its placement %lld+%lld (build the network with erase_network_create_placed)",
                               q->name, (long long)q->row0, (long long)q->held, es->rank,
                               (long long)erase_shard_first_row(p, es->rank),
                               (long long)erase_shard_rows_on(p, es->rank));
        rows[t] = (uint32_t)q->rows;
        int64_t *b = &bounds[t * (D + 1)];
        b[0] = 0;
        for (int r = 0; r < D; r++) {
            int64_t n = erase_shard_rows_on(p, r);
            b[r + 1] = b[r] + n;
            slot[t * D + r] = n > 0 ? count[r]++ : -1;
            if (n > 0 && r == es->rank)
                es->owned[es->nowned++] = t;
        }
    }
    for (int r = 0; r < D; r++)
        es->tmax = count[r] > es->tmax ? count[r] : es->tmax;
    for (int i = 0; i < T * D; i++)
        slot_index[i] = slot[i] < 0 ? -1 : (i % D) * es->tmax + slot[i];
    ERASE_CHECK(upload(es, rows, sizeof(uint32_t) * (size_t)T, (void **)&es->table_rows));
    ERASE_CHECK(upload(es, bounds, sizeof(int64_t) * (size_t)(T * (D + 1)), (void **)&es->bounds));
    ERASE_CHECK(upload(es, slot, sizeof(int32_t) * (size_t)(T * D), (void **)&es->slot));
    ERASE_CHECK(upload(es, slot_index, sizeof(int32_t) * (size_t)(T * D), (void **)&es->slot_index));
    return ERASE_OK;
}

static erase_status_t setup(erase_embed_shard_t *es, const erase_shard_t *plan)
{
    ERASE_CHECK(place(es, plan));
    int64_t B = es->cap, vec;
    if (!erase_mul_i64(B, es->dim, &vec))
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: %lld x %d floats overflow", (long long)B, es->dim);
    if ((int64_t)es->ranks * es->tmax * B > UINT32_MAX - 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: %d ranks x %d slots x %lld rows do not fit "
                           "32-bit positions", es->ranks, es->tmax, (long long)B);
    size_t pos_bytes, vec_bytes;
    if (!erase_bytes(sizeof(uint32_t), es->samples, es->columns, &pos_bytes) ||
        !erase_bytes(sizeof(float) * (size_t)es->dim, es->samples, es->columns, &vec_bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: %d samples x %d ids overflow", es->samples,
                           es->columns);
    ERASE_CHECK(erase_malloc(es->dev, pos_bytes, (void **)&es->pos));
    if (es->columns > es->tables) /* multi-hot: vectors are pooled here, at the destination */
        ERASE_CHECK(erase_malloc(es->dev, vec_bytes, (void **)&es->vecs));
    ERASE_CHECK(alloc_slots(es, sizeof(uint32_t), B, (void **)&es->rows_send));
    ERASE_CHECK(alloc_slots(es, sizeof(uint32_t), B, (void **)&es->rows_recv));
    ERASE_CHECK(alloc_slots(es, sizeof(int), 1, (void **)&es->fcnt_send));
    ERASE_CHECK(alloc_slots(es, sizeof(int), 1, (void **)&es->fcnt_recv));
    ERASE_CHECK(alloc_slots(es, sizeof(float), vec, (void **)&es->vec_send));
    ERASE_CHECK(alloc_slots(es, sizeof(float), vec, (void **)&es->vec_recv));
    ERASE_CHECK(alloc_slots(es, sizeof(int), 1, (void **)&es->cnt_send));
    ERASE_CHECK(alloc_slots(es, sizeof(int), 1, (void **)&es->cnt_recv));
    ERASE_CHECK(alloc_slots(es, sizeof(uint32_t), B, (void **)&es->grow_send));
    ERASE_CHECK(alloc_slots(es, sizeof(uint32_t), B, (void **)&es->grow_recv));
    ERASE_CHECK(alloc_slots(es, sizeof(float), vec, (void **)&es->gval_send));
    ERASE_CHECK(alloc_slots(es, sizeof(float), vec, (void **)&es->gval_recv));
    /* slots no table fills send a count of 0, forever */
    size_t slots = (size_t)es->ranks * (size_t)es->tmax;
    ERASE_CHECK(erase_memset_sync(es->dev, es->cnt_send, 0, sizeof(int) * (slots ? slots : 1)));
    size_t pad;
    ERASE_CHECK(erase_malloc(es->dev, sizeof(int) * (size_t)(es->tmax ? es->tmax : 1), (void **)&es->pad_counts));
    if (!erase_bytes(sizeof(float), (int64_t)es->ranks * B, es->dim, &pad))
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: padding rows overflow");
    ERASE_CHECK(erase_malloc(es->dev, sizeof(uint32_t) * (size_t)es->ranks * (size_t)B, (void **)&es->pad_rows));
    ERASE_CHECK(erase_malloc(es->dev, pad, (void **)&es->pad_values));
    return ERASE_OK;
}

erase_status_t erase_embed_shard_create(erase_network_t *net, erase_comm_t *emb, const erase_shard_t *plan,
                                        int tables, erase_embed_shard_t **out)
{
    erase_embed_shard_t *es = calloc(1, sizeof *es);
    if (!es)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "sharded embeddings: no memory");
    es->net = net;
    es->dev = erase_network_device(net);
    es->emb = emb;
    es->ranks = erase_comm_size(emb);
    es->rank = erase_comm_rank(emb);
    es->samples = erase_network_max_batch(net);
    es->bag = erase_network_bag(net, NULL);
    int64_t cap = (int64_t)es->samples * erase_network_ids_per_sample(net); /* network.c: an int */
    es->cap = (int)cap;
    es->block = -1;
    erase_status_t st = ERASE_OK;
    for (int b = 0; st == ERASE_OK && es->block < 0 && b < erase_network_blocks(net); b++) {
        st = sched_block_tables(net, b, &es->first, &es->tables, &es->dim);
        if (es->tables > 0)
            es->block = b;
    }
    if (st == ERASE_OK && es->block < 0)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: the model (%s) has no embedding tables",
                         erase_model_config_name(erase_network_config(net)));
    else if (st == ERASE_OK && tables != es->tables)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: a placement of %d tables for a model of %d",
                         tables, es->tables);
    if (st == ERASE_OK)
        es->columns = erase_bag_columns(&es->bag, es->tables);
    if (st == ERASE_OK)
        st = setup(es, plan);
    if (st == ERASE_OK) {
        erase_embedding_provider_t p = { .forward = shard_forward };
        st = erase_network_set_embedding_provider(net, es->block, &p, es);
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_embed_shard_destroy(es);
        return st;
    }
    *out = es;
    return ERASE_OK;
}

void erase_embed_shard_destroy(erase_embed_shard_t *es)
{
    if (!es)
        return;
    if (es->block >= 0)
        erase_network_set_embedding_provider(es->net, es->block, NULL, NULL);
    void *bufs[] = { es->table_rows, es->bounds, es->slot, es->slot_index, es->pos, es->vecs, es->rows_send,
                     es->rows_recv, es->fcnt_send, es->fcnt_recv, es->vec_send, es->vec_recv, es->cnt_send, es->cnt_recv, es->grow_send,
                     es->grow_recv, es->gval_send, es->gval_recv, es->pad_counts, es->pad_rows, es->pad_values };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        erase_free(es->dev, bufs[i]);
    free(es);
}

int erase_embed_shard_block(const erase_embed_shard_t *es)
{
    return es->block;
}

int64_t erase_embed_shard_bytes(const erase_embed_shard_t *es)
{
    int64_t slots = (int64_t)es->ranks * es->tmax, B = es->cap;
    return 4 * slots * (2 + 2 * B + 2 * B * es->dim) + 16 * (int64_t)(es->ranks - 1) * es->tmax;
}

erase_status_t erase_embed_shard_traffic(const erase_embed_shard_t *es, int64_t *bytes_sent, double *seconds)
{
    if (!es)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: traffic of NULL");
    erase_comm_t *comms[2] = { es->emb, es->dp };
    int64_t bytes = 0;
    double secs = 0;
    for (int i = 0; i < 2; i++) {
        erase_comm_stats_t st;
        if (!comms[i] || (i == 1 && comms[1] == comms[0]))
            continue;
        ERASE_CHECK(erase_comm_stats(comms[i], &st));
        bytes += (int64_t)st.kind[ERASE_COMM_ALLTOALL].bytes_sent;
        secs += st.kind[ERASE_COMM_ALLTOALL].seconds;
    }
    if (bytes_sent)
        *bytes_sent = bytes;
    if (seconds)
        *seconds = secs;
    return ERASE_OK;
}

/* Offset (elements) of slot k of block r in buffers of `per` elements per slot. */
static size_t at(const erase_embed_shard_t *es, int r, int k, size_t per)
{
    return ((size_t)r * (size_t)es->tmax + (size_t)k) * per;
}

/* The provider: see the header. */
static erase_status_t shard_forward(void *ctx, erase_stream_t *s, int n, const uint32_t *ids, const uint32_t *lengths,
                                    float *emb)
{
    erase_embed_shard_t *es = ctx;
    size_t B = (size_t)es->cap, vec = B * (size_t)es->dim, slots = (size_t)es->tmax;
    erase_bag_t bag = es->bag;
    bag.lengths = lengths;
    if (n < 0 || n > es->samples)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sharded embeddings: a batch of %d samples (at most %d)", n, es->samples);
    ERASE_CHECK(erase_shard_route_bag(s, n, es->tables, &bag, ids, es->table_rows, es->ranks, es->bounds, es->slot,
                                      es->tmax, es->cap, es->rows_send, es->fcnt_send, es->pos));
    /* the counts first (fixed size); rows the peers do not send stay pads,
     * which erase_gather_rows turns into zero vectors nobody unpacks */
    ERASE_CHECK(erase_alltoall(es->emb, s, es->fcnt_send, es->fcnt_recv, slots, ERASE_DTYPE_I32));
    ERASE_CHECK(erase_memset_async(s, es->rows_recv, 0xFF, sizeof(uint32_t) * (size_t)es->ranks * slots * B));
    ERASE_CHECK(erase_alltoall_slots(es->emb, s, es->rows_send, es->rows_recv, es->tmax, B, es->fcnt_send,
                                     es->fcnt_recv, 1, ERASE_DTYPE_I32));
    int np;
    erase_param_t *params = erase_network_params(es->net, &np) + es->first;
    for (int r = 0; r < es->ranks; r++)
        for (int k = 0; k < es->nowned; k++) {
            const erase_param_t *p = &params[es->owned[k]];
            ERASE_CHECK(erase_gather_rows(s, es->cap, es->dim, es->rows_recv + at(es, r, k, B), 1, p->value, p->held,
                                          es->vec_send + at(es, r, k, vec), (size_t)es->dim));
        }
    /* the vectors back: as many as each peer sent rows (the counts reversed) */
    ERASE_CHECK(erase_alltoall_slots(es->emb, s, es->vec_send, es->vec_recv, es->tmax, vec, es->fcnt_recv,
                                     es->fcnt_send, (size_t)es->dim, ERASE_DTYPE_F32));
    /* one-hot: emb[i, t] = the vector of sample i's row of table t, where
     * route put it; multi-hot: every id's vector into vecs [n, H], then
     * pooled here in column order (erase_embedding_pool), the arithmetic
     * of the replicated lookup, so the result is bitwise the same */
    int64_t src_rows = (int64_t)es->ranks * es->tmax * es->cap;
    if (!es->vecs)
        return erase_gather_rows(s, n * es->tables, es->dim, es->pos, 1, es->vec_recv, src_rows, emb,
                                 (size_t)es->dim);
    ERASE_CHECK(erase_gather_rows(s, n * es->columns, es->dim, es->pos, 1, es->vec_recv, src_rows, es->vecs,
                                  (size_t)es->dim));
    return n ? erase_embedding_pool(s, n, es->tables, es->dim, &bag, es->vecs, emb) : ERASE_OK;
}

erase_status_t erase_embed_shard_reduce(erase_embed_shard_t *es, erase_comm_t *dp, erase_stream_t *s)
{
    size_t B = (size_t)es->cap, vec = B * (size_t)es->dim, slots = (size_t)es->tmax;
    int np, D = es->ranks;
    erase_param_t *params = erase_network_params(es->net, &np) + es->first;
    es->dp = dp;
    for (int t = 0; t < es->tables; t++)
        ERASE_CHECK(erase_sparse_split(s, es->cap, es->dim, params[t].grad_count, params[t].grad_rows,
                                       params[t].grad_values, D, es->bounds + (size_t)t * (size_t)(D + 1),
                                       es->slot_index + (size_t)t * (size_t)D, es->cnt_send, es->grow_send,
                                       es->gval_send));
    ERASE_CHECK(erase_alltoall(dp, s, es->cnt_send, es->cnt_recv, slots, ERASE_DTYPE_I32));
    ERASE_CHECK(erase_alltoall_slots(dp, s, es->grow_send, es->grow_recv, es->tmax, B, es->cnt_send, es->cnt_recv,
                                     1, ERASE_DTYPE_I32));
    ERASE_CHECK(erase_alltoall_slots(dp, s, es->gval_send, es->gval_recv, es->tmax, vec, es->cnt_send,
                                     es->cnt_recv, (size_t)es->dim, ERASE_DTYPE_F32));
    for (int t = 0; t < es->tables; t++)
        if (params[t].held == 0)
            ERASE_CHECK(erase_memset_async(s, params[t].grad_count, 0, sizeof(int)));
    if (es->nowned == 0)
        return ERASE_OK;
    int *out_counts[ERASE_FIELDS_MAX];
    uint32_t *out_rows[ERASE_FIELDS_MAX];
    float *out_values[ERASE_FIELDS_MAX];
    for (int k = 0; k < es->tmax; k++) {
        erase_param_t *p = k < es->nowned ? &params[es->owned[k]] : NULL;
        out_counts[k] = p ? p->grad_count : &es->pad_counts[k];
        out_rows[k] = p ? p->grad_rows : es->pad_rows;
        out_values[k] = p ? p->grad_values : es->pad_values;
    }
    /* rows local to this rank's part: the update indexes value [held, dim] */
    return erase_sparse_merge(s, es->ranks, es->tmax, es->cap, es->dim, 1.0f / (float)es->ranks, es->cnt_recv,
                              es->grow_recv, es->gval_recv, out_counts, out_rows, out_values);
}

/*
 * Sharded embeddings (lib/sched/embed_shard.h) under mpirun -np 1, 2 and
 * 4: training with ctr's tables table-wise, row-wise and auto gives
 * bitwise the parameters of replicated tables (each row compared on the
 * rank that holds it, every row held once, the dense parameters on every
 * rank) under off, blocking, async and graph; the ids at a table's
 * boundaries (row 0, the last regular row, the missing value's row, an id
 * that wraps) and at the edges of its row-wise parts come back from their
 * holder as the replicated lookup gives them; a rank with an empty batch
 * still takes part in every all-to-all (the script's timeout bounds a
 * hang). Multi-hot ctr (issue 35): the same equality with MLPerf's hotness,
 * sum and mean pooling, and the boundary ids spread over bags of 1 to 9
 * ids. Rank 0 prints TAP; the counts it asserts are summed over all
 * ranks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/nn/train_step.h"
#include "lib/ops/ops.h"
#include "lib/sched/embed_shard.h"
#include "lib/sched/reduce.h"
#include "tests/sched/equivalence.h"

#define STEPS 20

/* ctr's placement of `kind` over the world's ranks (by rows, one lookup each). */
static void place(const erase_model_config_t *cfg, erase_shard_kind_t kind, erase_shard_t *plan)
{
    int64_t rows[ERASE_CTR_FIELDS];
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        rows[f] = cfg->ctr.table_rows[f];
    assert_int_equal(erase_shard_plan(kind, ERASE_CTR_FIELDS, rows, NULL, (int64_t)cfg->ctr.embedding_dim * 4,
                                      eq_world.size, 0, plan), ERASE_OK);
}

/* A network of cfg for `batch` samples holding this rank's rows of plan. */
static erase_network_t *placed(const erase_model_config_t *cfg, const erase_shard_t *plan, int batch)
{
    erase_network_t *net;
    assert_int_equal(erase_network_create_placed(eq_dev, cfg, batch, plan, ERASE_CTR_FIELDS, eq_world.rank, &net),
                     ERASE_OK);
    return net;
}

/* Train replicated and sharded as `kind` says under `o`; count the floats
 * that differ (each table row on its holder only, dense parameters
 * everywhere) and those compared, summed over ranks. */
static void compare(const erase_model_config_t *cfg, erase_shard_kind_t kind, const erase_sched_options_t *o,
                    const char *what)
{
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(cfg, kind, plan);
    size_t n_ref, n;
    float *ref = equivalence_train(eq_dev, cfg, o, STEPS, eq_world.dp_rank, eq_world.dp_size, &n_ref);
    float *got = equivalence_train_sharded(eq_dev, cfg, o, plan, STEPS, eq_world.dp_rank, eq_world.dp_size, &n);
    erase_network_t *net;
    assert_int_equal(erase_network_create(eq_dev, cfg, 1, &net), ERASE_OK);
    int np;
    erase_param_t *params = erase_network_params(net, &np);
    size_t off = 0;
    int64_t differ = 0, compared = 0, tables = 0, moved = 0;
    size_t at = 0; /* in got: each table's held rows */
    for (int i = 0; i < np; i++) {
        size_t numel = (size_t)params[i].rows * (size_t)params[i].cols, cols = (size_t)params[i].cols;
        int t = -1;
        if (params[i].kind == ERASE_PARAM_EMBEDDING)
            sscanf(params[i].name, "input/emb/%d", &t);
        size_t row0 = t < 0 ? 0 : (size_t)erase_shard_first_row(&plan[t], eq_world.rank);
        size_t held = t < 0 ? (size_t)params[i].rows : (size_t)erase_shard_rows_on(&plan[t], eq_world.rank);
        differ += (int64_t)equivalence_differ(ref + off + row0 * cols, got + at, held * cols);
        compared += (int64_t)(held * cols);
        tables += t >= 0 ? (int64_t)(held * cols) : 0;
        off += numel;
        at += held * cols;
    }
    assert_int_equal(at, n);
    /* the run trained: the tables moved from their initial values */
    float *init = malloc(n_ref * sizeof(float));
    erase_network_copy_params(net, init);
    moved = (int64_t)equivalence_differ(ref, init, n_ref);
    free(init);
    int64_t all_tables = 0;
    for (int t = 0; t < ERASE_CTR_FIELDS; t++)
        all_tables += (int64_t)cfg->ctr.table_rows[t] * cfg->ctr.embedding_dim;
    differ = equivalence_sum_ranks(differ);
    compared = equivalence_sum_ranks(compared);
    tables = equivalence_sum_ranks(tables);
    print_message("%s, %-5s on %d ranks, %-8s update %-5s: %lld of %lld floats differ from replicated "
                  "(tables: %lld floats, each row on its holder); %lld of %zu moved by training\n", what,
                  erase_shard_kind_name(kind), eq_world.size, erase_early_backward_name(o->mode),
                  o->update == ERASE_AT_EARLY ? "early" : "end", (long long)differ, (long long)compared,
                  (long long)tables, (long long)moved, n_ref);
    assert_int_equal(differ, 0);
    assert_int_equal(tables, all_tables);
    assert_true(moved > (int64_t)n / 2);
    erase_network_destroy(net);
    free(ref);
    free(got);
}

static void test_equal_to_replicated(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_sched_options_t o = erase_sched_options_default();
    o.dp = erase_dp_comm();
    static const struct { erase_early_backward_t mode; erase_timing_t reduce, update; int side; } cases[] = {
        { ERASE_EB_OFF, ERASE_AT_EARLY, ERASE_AT_EARLY, 1 },
        { ERASE_EB_BLOCKING, ERASE_AT_EARLY, ERASE_AT_EARLY, 1 },
        { ERASE_EB_ASYNC, ERASE_AT_EARLY, ERASE_AT_EARLY, 2 },
        { ERASE_EB_ASYNC, ERASE_AT_END, ERASE_AT_END, 1 },
        { ERASE_EB_GRAPH, ERASE_AT_EARLY, ERASE_AT_EARLY, 1 },
    };
    for (int kind = ERASE_SHARD_TABLE; kind <= ERASE_SHARD_AUTO; kind++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            o.mode = cases[i].mode;
            o.reduce = cases[i].reduce;
            o.update = cases[i].update;
            o.side_streams = cases[i].side;
            /* auto: one table above a rank's fair share goes row-wise (on 2 and 4 ranks) */
            erase_model_config_t c = cfg;
            if (kind == ERASE_SHARD_AUTO)
                c.ctr.table_rows[5] = 2000;
            compare(&c, (erase_shard_kind_t)kind, &o, kind == ERASE_SHARD_AUTO ? "ctr (six cuts, table 5 of 2000 rows)"
                                                                                 : "ctr (six cuts)");
        }
    }
    /* no cuts: block 0's backward (with the tables) runs last */
    cfg.cut_mask = 0;
    o.mode = ERASE_EB_GRAPH;
    o.reduce = o.update = ERASE_AT_EARLY;
    compare(&cfg, ERASE_SHARD_ROW, &o, "ctr (no cuts)");
}

/*
 * Multi-hot (issue 35): ctr with MLPerf's hotness (up to 100 ids of a
 * field per sample, 214 in all, on tables of 40-65 rows: bags that hit
 * one row many times) trains to bitwise the replicated parameters:
 * row-wise under every early-backward mode, table-wise and auto under two
 * each (the route and the exchange are the same code for every kind; the
 * driver's time stays within a minute), sum and mean pooling alternating:
 * the vectors come back one per id and are pooled at the destination in
 * column order, as the replicated lookup pools them, and the gradients
 * are the replicated sums.
 */
static void test_multi_hot_equal_to_replicated(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    memcpy(cfg.ctr.hotness, (const uint32_t[ERASE_CTR_FIELDS])ERASE_CTR_HOTNESS_MLPERF, sizeof cfg.ctr.hotness);
    erase_sched_options_t o = erase_sched_options_default();
    o.dp = erase_dp_comm();
    static const struct {
        erase_shard_kind_t kind;
        erase_early_backward_t mode;
        erase_timing_t timing;
        int side;
    } cases[] = {
        { ERASE_SHARD_ROW, ERASE_EB_OFF, ERASE_AT_EARLY, 1 },   { ERASE_SHARD_ROW, ERASE_EB_BLOCKING, ERASE_AT_EARLY, 1 },
        { ERASE_SHARD_ROW, ERASE_EB_ASYNC, ERASE_AT_EARLY, 2 }, { ERASE_SHARD_ROW, ERASE_EB_ASYNC, ERASE_AT_END, 1 },
        { ERASE_SHARD_ROW, ERASE_EB_GRAPH, ERASE_AT_EARLY, 1 }, { ERASE_SHARD_TABLE, ERASE_EB_BLOCKING, ERASE_AT_EARLY, 1 },
        { ERASE_SHARD_TABLE, ERASE_EB_ASYNC, ERASE_AT_END, 1 }, { ERASE_SHARD_AUTO, ERASE_EB_OFF, ERASE_AT_EARLY, 1 },
        { ERASE_SHARD_AUTO, ERASE_EB_GRAPH, ERASE_AT_EARLY, 1 },
    };
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        o.mode = cases[n].mode;
        o.reduce = o.update = cases[n].timing;
        o.side_streams = cases[n].side;
        erase_model_config_t c = cfg;
        c.ctr.pooling = n % 2 ? ERASE_POOLING_MEAN : ERASE_POOLING_SUM;
        if (cases[n].kind == ERASE_SHARD_AUTO) /* one table above a rank's fair share goes row-wise */
            c.ctr.table_rows[5] = 2000;
        compare(&c, cases[n].kind, &o, n % 2 ? "ctr multi-hot (mlperf, mean)" : "ctr multi-hot (mlperf, sum)");
    }
}

/*
 * The ids at the boundaries of every table travel to their holder and
 * back: the prediction of a sharded network equals a replicated one's
 * bitwise on a batch whose ids are row 0, the last regular row (rows - 2),
 * the missing value (0xFFFFFFFF: row rows - 1), an id that wraps (rows - 1:
 * row 0), and the first row of rank 1's and of the last rank's row-wise
 * parts and the row before each, in each field; tables table-wise and
 * row-wise. A sharded network holds no other rank's rows, so a lookup
 * anywhere but on the holder would fail. Rank 1 (if any) has an empty
 * batch: it still takes part in the all-to-alls.
 */
/* The bytes this rank sends in a forward whose every non-empty rank has
 * the batch `ids` [b][fields] (rank 1 empty when there are more): the
 * counts (4 (D-1) Tmax), the counted rows exchange (its counts + 4 per id
 * routed to another rank) and the vectors back (its counts + 4 dim per id
 * another rank routed to this one). */
static int64_t forward_traffic(const erase_model_config_t *cfg, const erase_shard_t *plan, const uint32_t *ids,
                               const uint32_t *lengths, int b)
{
    int H = (int)erase_model_config_hot_width(cfg);
    int D = eq_world.size, me = eq_world.rank, tmax = 0;
    for (int r = 0; r < D; r++) {
        int held = 0;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            held += erase_shard_rows_on(&plan[f], r) > 0;
        tmax = held > tmax ? held : tmax;
    }
    int64_t to_others = 0, to_me = 0; /* routed by one non-empty rank */
    for (int i = 0; i < b; i++)
        for (int f = 0, c = 0; f < ERASE_CTR_FIELDS; c += cfg->ctr.hotness[f], f++)
            for (uint32_t j = 0; j < (lengths ? lengths[i * ERASE_CTR_FIELDS + f] : 1); j++) {
                uint32_t row = erase_embedding_row(ids[i * H + c + (int)j], cfg->ctr.table_rows[f]);
                int owner = erase_shard_owner(&plan[f], row, NULL);
                to_others += owner != me;
                to_me += owner == me;
            }
    int senders = 0; /* other ranks with a batch */
    for (int r = 0; r < D; r++)
        senders += r != me && !(r == 1 && D > 1);
    int own = !(me == 1 && D > 1);
    return 3 * 4 * (int64_t)(D - 1) * tmax + 4 * (own ? to_others : 0) +
           4 * (int64_t)cfg->ctr.embedding_dim * senders * to_me;
}

/* The first column of field f in a row of ids. */
static int first_column(const erase_model_config_t *cfg, int f)
{
    int c = 0;
    for (int g = 0; g < f; g++)
        c += cfg->ctr.hotness[g];
    return c;
}

static void boundaries(erase_shard_kind_t kind, int multi_hot)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    for (int f = 0; multi_hot && f < ERASE_CTR_FIELDS; f++) /* every boundary id in one bag, or spread over several */
        cfg.ctr.hotness[f] = 1 + (uint32_t)(f % 9);
    cfg.ctr.pooling = multi_hot ? ERASE_POOLING_MEAN : ERASE_POOLING_SUM;
    int H = (int)erase_model_config_hot_width(&cfg);
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(&cfg, kind, plan);
    enum { B = 8 };
    erase_network_t *rep, *sh = placed(&cfg, plan, B);
    assert_int_equal(erase_network_create(eq_dev, &cfg, B, &rep), ERASE_OK);
    erase_embed_shard_t *es;
    assert_int_equal(erase_embed_shard_create(sh, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_OK);
    erase_batch_t batch;
    assert_int_equal(erase_batch_random(rep, B, 7 + (uint64_t)eq_world.rank, &batch), ERASE_OK);
    uint32_t *ids = (uint32_t *)batch.sparse, want_all[B * 9 * ERASE_CTR_FIELDS];
    int last = eq_world.size - 1, second = eq_world.size > 1 ? 1 : 0;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        uint32_t rows = cfg.ctr.table_rows[f];
        uint32_t edge1 = (uint32_t)erase_shard_first_row(&plan[f], second) + (kind == ERASE_SHARD_TABLE ? 1 : 0);
        uint32_t edge2 = (uint32_t)erase_shard_first_row(&plan[f], last) + (kind == ERASE_SHARD_TABLE ? 2 : 0);
        const uint32_t want_ids[B] = { 0, rows - 2, 0xFFFFFFFFu, rows - 1, edge1 - 1, edge1, edge2 - 1, edge2 };
        for (int i = 0; multi_hot && i < B; i++) /* the same lengths on every rank (traffic is counted from them) */
            ((uint32_t *)batch.sparse_len)[i * ERASE_CTR_FIELDS + f] = 1 + (uint32_t)((i + f) % cfg.ctr.hotness[f]);
        for (int i = 0; i < B; i++) /* sample i's bag: the boundary ids from the i-th on (padding too: never read) */
            for (int j = 0; j < (int)cfg.ctr.hotness[f]; j++)
                ids[i * H + first_column(&cfg, f) + j] = want_all[i * H + first_column(&cfg, f) + j] =
                    want_ids[(i + j) % B];
    }
    batch.size = eq_world.rank == 1 ? 0 : B;
    erase_stream_t *s;
    assert_int_equal(erase_stream_create(eq_dev, &s), ERASE_OK);
    int w;
    float want[B], got[B];
    if (batch.size > 0) {
        assert_int_equal(erase_network_forward_predict(rep, s, &batch), ERASE_OK);
        assert_int_equal(erase_stream_synchronize(s), ERASE_OK);
        memcpy(want, erase_network_head_output(rep, erase_network_blocks(rep) - 1, &w), sizeof want);
    }
    erase_comm_stats_reset(erase_emb_comm());
    assert_int_equal(erase_network_forward_predict(sh, s, &batch), ERASE_OK);
    assert_int_equal(erase_stream_synchronize(s), ERASE_OK);
    memcpy(got, erase_network_head_output(sh, erase_network_blocks(sh) - 1, &w), sizeof got);
    int64_t traffic, want_traffic = forward_traffic(&cfg, plan, want_all, batch.sparse_len, B);
    double seconds;
    assert_int_equal(erase_embed_shard_traffic(es, &traffic, &seconds), ERASE_OK);
    int64_t differ = equivalence_sum_ranks((int64_t)equivalence_differ(want, got, (size_t)batch.size));
    int64_t samples = equivalence_sum_ranks(batch.size);
    int64_t bytes = erase_embed_shard_bytes(es);
    int64_t traffic_wrong = equivalence_sum_ranks(traffic != want_traffic);
    print_message("%s%s: boundary ids (0, rows-2, missing, rows-1, the parts' edges) on %d ranks, rank 1's batch "
                  "empty: %lld of %lld predictions differ from replicated; rank %d sent %lld bytes in the forward "
                  "(expected %lld; at most %lld per step)\n",
                  erase_shard_kind_name(kind), multi_hot ? " multi-hot (1-9 ids, mean)" : "", eq_world.size,
                  (long long)differ, (long long)samples, eq_world.rank,
                  (long long)traffic, (long long)want_traffic, (long long)bytes);
    assert_int_equal(differ, 0);
    assert_int_equal(traffic_wrong, 0);
    assert_int_equal(samples, (int64_t)B * (eq_world.size > 1 ? eq_world.size - 1 : 1));
    erase_stream_destroy(s);
    erase_batch_free_random(rep, &batch);
    erase_embed_shard_destroy(es);
    erase_network_destroy(sh);
    erase_network_destroy(rep);
}

static void test_boundaries(void **state)
{
    boundaries(ERASE_SHARD_TABLE, 0);
    boundaries(ERASE_SHARD_ROW, 0);
    boundaries(ERASE_SHARD_TABLE, 1);
    boundaries(ERASE_SHARD_ROW, 1);
}

/* Of a batch [b] that every rank has: the present ids this rank routes
 * to other ranks, the ids it holds, and the bags (sample, field) with at
 * least one id it holds (what it would send back per peer if it pooled
 * its part of each bag itself). */
static void multi_hot_counts(const erase_model_config_t *cfg, const erase_shard_t *plan, const uint32_t *ids,
                             const uint32_t *lengths, int b, int64_t *to_others, int64_t *mine, int64_t *bags_mine)
{
    int H = (int)erase_model_config_hot_width(cfg), me = eq_world.rank;
    *to_others = *mine = *bags_mine = 0;
    for (int i = 0; i < b; i++)
        for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
            int hit = 0;
            for (uint32_t j = 0; j < lengths[i * ERASE_CTR_FIELDS + f]; j++) {
                uint32_t row = erase_embedding_row(ids[i * H + first_column(cfg, f) + (int)j], cfg->ctr.table_rows[f]);
                int owner = erase_shard_owner(&plan[f], row, NULL);
                *to_others += owner != me;
                *mine += owner == me;
                hit |= owner == me;
            }
            *bags_mine += hit;
        }
}

/*
 * The bytes of the multi-hot exchange on a random batch of MLPerf's
 * hotness (row-wise, every rank the same batch): measured equal to the
 * count of ids each rank routes and serves, and compared with pooling at
 * the owner (not done: a bag split over owners would be summed in
 * another order than the replicated lookup's, so not bitwise).
 */
static void test_multi_hot_traffic(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    memcpy(cfg.ctr.hotness, (const uint32_t[ERASE_CTR_FIELDS])ERASE_CTR_HOTNESS_MLPERF, sizeof cfg.ctr.hotness);
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        cfg.ctr.table_rows[f] = 100003;
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(&cfg, ERASE_SHARD_ROW, plan);
    enum { B = 16 };
    erase_network_t *sh = placed(&cfg, plan, B);
    erase_embed_shard_t *es;
    assert_int_equal(erase_embed_shard_create(sh, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_OK);
    erase_batch_t batch;
    assert_int_equal(erase_batch_random(sh, B, 9, &batch), ERASE_OK); /* the same batch on every rank */
    erase_stream_t *s;
    assert_int_equal(erase_stream_create(eq_dev, &s), ERASE_OK);
    erase_comm_stats_reset(erase_emb_comm());
    assert_int_equal(erase_network_forward_predict(sh, s, &batch), ERASE_OK);
    assert_int_equal(erase_stream_synchronize(s), ERASE_OK);
    int64_t traffic, ids = 0, D = eq_world.size, to_others, mine, bags_mine;
    assert_int_equal(erase_embed_shard_traffic(es, &traffic, NULL), ERASE_OK);
    for (int i = 0; i < B * ERASE_CTR_FIELDS; i++)
        ids += batch.sparse_len[i];
    multi_hot_counts(&cfg, plan, batch.sparse, batch.sparse_len, B, &to_others, &mine, &bags_mine);
    /* 3 count exchanges of 26 slots, 4 bytes per id sent out, a vector
     * back to each other rank per id this rank holds (row-wise: every
     * rank holds rows of all 26 tables) */
    int64_t vec = 4 * (int64_t)cfg.ctr.embedding_dim, back = (D - 1) * mine * vec;
    int64_t want = 3 * 4 * (D - 1) * ERASE_CTR_FIELDS + 4 * to_others + back, owner = (D - 1) * bags_mine * vec;
    print_message("multi-hot (mlperf, %lld ids in %d samples), row-wise on %lld ranks: rank %d sent %lld bytes in the "
                  "forward (expected %lld), of which %lld vectors, one per id; pooling at the owner would send %lld "
                  "bytes of vectors (%.2fx fewer)\n", (long long)ids, B, (long long)D, eq_world.rank,
                  (long long)traffic, (long long)want, (long long)back, (long long)owner,
                  owner ? (double)back / (double)owner : 0.0);
    assert_int_equal(equivalence_sum_ranks(traffic != want), 0);
    erase_stream_destroy(s);
    erase_batch_free_random(sh, &batch);
    erase_embed_shard_destroy(es);
    erase_network_destroy(sh);
}

/*
 * A non-finite row gradient that only the table's owner sees after the
 * exchange (the last rank's, of a table rank 0 owns; every other
 * gradient 0) stops the step on every rank alike: each rank's optimizer
 * clock names block 0 (input).
 */
static void test_nonfinite_shared(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(&cfg, ERASE_SHARD_TABLE, plan);
    int t = 0;
    while (plan[t].owner != 0)
        t++;
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_embed_shard_t *es;
    sched_reduce_t *r = NULL;
    erase_stream_t *s;
    erase_optim_config_t ocfg = erase_optim_config_default();
    net = placed(&cfg, plan, 4);
    assert_int_equal(erase_optimizer_create(net, &ocfg, &opt), ERASE_OK);
    assert_int_equal(erase_embed_shard_create(net, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_OK);
    if (eq_world.size > 1) {
        assert_int_equal(sched_reduce_create(net, erase_dp_comm(), 4, &r), ERASE_OK);
        sched_reduce_set_shard(r, es);
    }
    assert_int_equal(erase_stream_create(eq_dev, &s), ERASE_OK);
    size_t count;
    float *grads = erase_network_block_grads(net, 0, &count);
    assert_int_equal(erase_memset_sync(eq_dev, grads, 0, count * sizeof(float)), ERASE_OK);
    int np;
    erase_param_t *params = erase_network_params(net, &np);
    erase_param_t *table = NULL;
    for (int i = 0; i < np; i++)
        if (params[i].kind == ERASE_PARAM_EMBEDDING) {
            int zero = 0;
            assert_int_equal(erase_memcpy_sync(eq_dev, params[i].grad_count, &zero, sizeof zero), ERASE_OK);
            table = table ? table : &params[i + t];
        }
    if (eq_world.rank == eq_world.size - 1) {
        int one = 1;
        uint32_t row = 5;
        float inf[4] = { INFINITY, 0, 0, 0 };
        assert_int_equal(erase_memcpy_sync(eq_dev, table->grad_count, &one, sizeof one), ERASE_OK);
        assert_int_equal(erase_memcpy_sync(eq_dev, table->grad_rows, &row, sizeof row), ERASE_OK);
        assert_int_equal(erase_memcpy_sync(eq_dev, table->grad_values, inf, sizeof inf), ERASE_OK);
    }
    assert_int_equal(erase_optimizer_begin_step(opt, s), ERASE_OK);
    assert_int_equal(sched_reduce_and_check(r, net, opt, 0, s), ERASE_OK);
    assert_int_equal(erase_stream_synchronize(s), ERASE_OK);
    erase_optim_clock_t clock;
    assert_int_equal(erase_optimizer_read_clock(opt, &clock), ERASE_OK);
    int64_t found = equivalence_sum_ranks(clock.nonfinite == 1);
    print_message("an infinite row gradient of table %d (owner rank 0) from rank %d: %lld of %d ranks stop the "
                  "step at block input\n", t, eq_world.size - 1, (long long)found, eq_world.size);
    assert_int_equal(found, eq_world.size);
    erase_stream_destroy(s);
    sched_reduce_destroy(r);
    erase_embed_shard_destroy(es);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
}

/* The errors' text. */
static void test_errors(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(&cfg, ERASE_SHARD_TABLE, plan);
    erase_network_t *net;
    erase_embed_shard_t *es = NULL;
    net = placed(&cfg, plan, 4);
    plan[3].kind = ERASE_SHARD_REPLICATED;
    plan[3].owner = -1;
    assert_int_equal(erase_embed_shard_create(net, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_ERR_INVALID);
    char want[256];
    snprintf(want, sizeof want, "sharded embeddings: table 3's placement is replicated on rank -1 of %d; "
             "expected table-wise on one of %d ranks or row-wise", eq_world.size, eq_world.size);
    assert_string_equal(erase_error_reason(), want);
    /* a network that holds other rows than the plan gives this rank */
    place(&cfg, ERASE_SHARD_ROW, plan);
    if (eq_world.size > 1) {
        assert_int_equal(erase_embed_shard_create(net, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es),
                         ERASE_ERR_INVALID);
        printf("# %s\n", erase_error_reason());
        assert_non_null(strstr(erase_error_reason(), "(build the network with erase_network_create_placed)"));
    }
    assert_int_equal(erase_embed_shard_create(net, erase_emb_comm(), plan, 5, &es), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sharded embeddings: a placement of 5 tables for a model of 26");
    erase_network_destroy(net);
    erase_model_config_t mlp = equivalence_model(ERASE_MODEL_MLP);
    assert_int_equal(erase_network_create(eq_dev, &mlp, 4, &net), ERASE_OK);
    assert_int_equal(erase_embed_shard_create(net, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "sharded embeddings: the model (mlp) has no embedding tables");
    erase_embedding_provider_t p = { 0 };
    assert_int_equal(erase_network_set_embedding_provider(net, 0, &p, NULL), ERASE_ERR_INVALID);
    assert_string_equal(erase_error_reason(), "network: block layer0 has no embedding lookup to provide");
    erase_network_destroy(net);
    assert_null(es);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_to_replicated),
        cmocka_unit_test(test_multi_hot_equal_to_replicated),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_multi_hot_traffic),
        cmocka_unit_test(test_nonfinite_shared),
        cmocka_unit_test(test_errors),
    };
    return equivalence_mpi_main(&argc, &argv, "sharded embeddings", tests, sizeof tests / sizeof tests[0]);
}

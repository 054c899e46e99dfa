/*
 * Table-wise sharded embeddings (lib/sched/embed_shard.h) under mpirun
 * -np 1, 2 and 4: training with ctr's tables table-wise gives bitwise the
 * parameters of replicated tables (each table compared on its owner, the
 * dense parameters on every rank) under off, blocking, async and graph;
 * the ids at a table's boundaries (row 0, the last regular row, the
 * missing value's row, an id that wraps) come back from their owner as
 * the replicated lookup gives them; a rank with an empty batch still
 * takes part in every all-to-all (the script's timeout bounds a hang).
 * Rank 0 prints TAP; the counts it asserts are summed over all ranks.
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
#include "lib/sched/embed_shard.h"
#include "lib/sched/reduce.h"
#include "tests/sched/equivalence.h"

#define STEPS 20

/* ctr's table-wise placement over the world's ranks (by rows, one lookup each). */
static void place(const erase_model_config_t *cfg, erase_shard_t *plan)
{
    int64_t rows[ERASE_CTR_FIELDS];
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        rows[f] = cfg->ctr.table_rows[f];
    assert_int_equal(erase_shard_plan(ERASE_SHARD_TABLE, ERASE_CTR_FIELDS, rows, NULL,
                                      (int64_t)cfg->ctr.embedding_dim * 4, eq_world.size, 0, plan), ERASE_OK);
}

/* Train replicated and table-wise under `o`; count the floats that differ
 * (each table on its owner only, dense parameters everywhere) and those
 * compared, summed over ranks. */
static void compare(const erase_model_config_t *cfg, const erase_sched_options_t *o, const char *what)
{
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(cfg, plan);
    size_t n_ref, n;
    float *ref = equivalence_train(eq_dev, cfg, o, STEPS, eq_world.dp_rank, eq_world.dp_size, &n_ref);
    float *got = equivalence_train_sharded(eq_dev, cfg, o, plan, STEPS, eq_world.dp_rank, eq_world.dp_size, &n);
    assert_int_equal(n, n_ref);
    erase_network_t *net;
    assert_int_equal(erase_network_create(eq_dev, cfg, 1, &net), ERASE_OK);
    int np;
    erase_param_t *params = erase_network_params(net, &np);
    size_t off = 0;
    int64_t differ = 0, compared = 0, tables = 0, moved = 0;
    for (int i = 0; i < np; i++) {
        size_t numel = (size_t)params[i].rows * (size_t)params[i].cols;
        int t = -1;
        if (params[i].kind == ERASE_PARAM_EMBEDDING)
            sscanf(params[i].name, "input/emb/%d", &t);
        if (t < 0 || plan[t].owner == eq_world.rank) {
            differ += (int64_t)equivalence_differ(ref + off, got + off, numel);
            compared += (int64_t)numel;
            tables += t >= 0 ? (int64_t)numel : 0;
        }
        off += numel;
    }
    /* the run trained: the tables moved from their initial values */
    float *init = malloc(n * sizeof(float));
    erase_network_copy_params(net, init);
    moved = (int64_t)equivalence_differ(ref, init, n);
    free(init);
    int64_t all_tables = 0;
    for (int t = 0; t < ERASE_CTR_FIELDS; t++)
        all_tables += (int64_t)cfg->ctr.table_rows[t] * cfg->ctr.embedding_dim;
    differ = equivalence_sum_ranks(differ);
    compared = equivalence_sum_ranks(compared);
    tables = equivalence_sum_ranks(tables);
    print_message("%s on %d ranks, %-8s update %-5s: %lld of %lld floats differ from replicated "
                  "(tables: %lld floats, each on its owner); %lld of %zu moved by training\n", what, eq_world.size,
                  erase_early_backward_name(o->mode), o->update == ERASE_AT_EARLY ? "early" : "end",
                  (long long)differ, (long long)compared, (long long)tables, (long long)moved, n);
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.mode = cases[i].mode;
        o.reduce = cases[i].reduce;
        o.update = cases[i].update;
        o.side_streams = cases[i].side;
        compare(&cfg, &o, "ctr (six cuts)");
    }
    /* no cuts: block 0's backward (with the tables) runs last */
    cfg.cut_mask = 0;
    o.mode = ERASE_EB_GRAPH;
    o.reduce = o.update = ERASE_AT_EARLY;
    compare(&cfg, &o, "ctr (no cuts)");
}

/*
 * The ids at the boundaries of every table travel to its owner and back:
 * the prediction of a sharded network equals a replicated one's bitwise on
 * a batch whose ids are row 0, the last regular row (rows - 2), the
 * missing value (0xFFFFFFFF: row rows - 1) and an id that wraps (rows - 1:
 * row 0), in each field; the non-owners' copies of a table are zeroed
 * first, so a lookup anywhere but on the owner would show. Rank 1 (if
 * any) has an empty batch: it still takes part in the all-to-alls.
 */
static void test_boundaries(void **state)
{
    erase_model_config_t cfg = equivalence_model(ERASE_MODEL_CTR);
    erase_shard_t plan[ERASE_CTR_FIELDS];
    place(&cfg, plan);
    enum { B = 8 };
    erase_network_t *rep, *sh;
    assert_int_equal(erase_network_create(eq_dev, &cfg, B, &rep), ERASE_OK);
    assert_int_equal(erase_network_create(eq_dev, &cfg, B, &sh), ERASE_OK);
    erase_embed_shard_t *es;
    assert_int_equal(erase_embed_shard_create(sh, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_OK);
    int np;
    erase_param_t *params = erase_network_params(sh, &np);
    for (int i = 0; i < np; i++) {
        int t = -1;
        if (params[i].kind == ERASE_PARAM_EMBEDDING)
            sscanf(params[i].name, "input/emb/%d", &t);
        if (t >= 0 && plan[t].owner != eq_world.rank) {
            float *zero = calloc((size_t)params[i].rows * (size_t)params[i].cols, sizeof(float));
            assert_int_equal(erase_network_write_param(sh, &params[i], zero), ERASE_OK);
            free(zero);
        }
    }
    erase_batch_t batch;
    assert_int_equal(erase_batch_random(rep, B, 7 + (uint64_t)eq_world.rank, &batch), ERASE_OK);
    uint32_t *ids = (uint32_t *)batch.sparse;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++) {
        uint32_t rows = cfg.ctr.table_rows[f];
        ids[0 * ERASE_CTR_FIELDS + f] = 0;
        ids[1 * ERASE_CTR_FIELDS + f] = rows - 2;
        ids[2 * ERASE_CTR_FIELDS + f] = 0xFFFFFFFFu;
        ids[3 * ERASE_CTR_FIELDS + f] = rows - 1;
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
    assert_int_equal(erase_network_forward_predict(sh, s, &batch), ERASE_OK);
    assert_int_equal(erase_stream_synchronize(s), ERASE_OK);
    memcpy(got, erase_network_head_output(sh, erase_network_blocks(sh) - 1, &w), sizeof got);
    int64_t differ = equivalence_sum_ranks((int64_t)equivalence_differ(want, got, (size_t)batch.size));
    int64_t samples = equivalence_sum_ranks(batch.size);
    int64_t bytes = erase_embed_shard_bytes(es);
    print_message("boundary ids (0, rows-2, missing, rows-1) on %d ranks, rank 1's batch empty: %lld of %lld "
                  "predictions differ from replicated; %lld bytes sent per step per rank\n", eq_world.size,
                  (long long)differ, (long long)samples, (long long)bytes);
    assert_int_equal(differ, 0);
    assert_int_equal(samples, (int64_t)B * (eq_world.size > 1 ? eq_world.size - 1 : 1));
    erase_stream_destroy(s);
    erase_batch_free_random(rep, &batch);
    erase_embed_shard_destroy(es);
    erase_network_destroy(sh);
    erase_network_destroy(rep);
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
    place(&cfg, plan);
    int t = 0;
    while (plan[t].owner != 0)
        t++;
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_embed_shard_t *es;
    sched_reduce_t *r = NULL;
    erase_stream_t *s;
    erase_optim_config_t ocfg = erase_optim_config_default();
    assert_int_equal(erase_network_create(eq_dev, &cfg, 4, &net), ERASE_OK);
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
    place(&cfg, plan);
    erase_network_t *net;
    erase_embed_shard_t *es = NULL;
    assert_int_equal(erase_network_create(eq_dev, &cfg, 4, &net), ERASE_OK);
    plan[3].kind = ERASE_SHARD_ROW;
    plan[3].owner = -1;
    assert_int_equal(erase_embed_shard_create(net, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &es), ERASE_ERR_INVALID);
    char want[160];
    snprintf(want, sizeof want, "sharded embeddings: table 3's placement is row on rank -1 of %d; "
             "expected table-wise on one of %d ranks", eq_world.size, eq_world.size);
    assert_string_equal(erase_error_reason(), want);
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
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_nonfinite_shared),
        cmocka_unit_test(test_errors),
    };
    return equivalence_mpi_main(&argc, &argv, "table-wise sharded embeddings", tests, sizeof tests / sizeof tests[0]);
}

#include "tests/sched/equivalence.h"

#include "lib/nn/train_step.h"
#include "lib/sched/embed_shard.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLOBAL_BATCH 64
#define POOL 4

erase_model_config_t equivalence_model(erase_model_kind_t kind)
{
    erase_model_config_t c = erase_model_config_default(kind);
    if (kind == ERASE_MODEL_CTR) {
        c.ctr.embedding_dim = 4;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            c.ctr.table_rows[f] = 40 + (uint32_t)f;
        c.ctr.bottom_mlp[0] = 8;
        c.ctr.bottom_mlp[1] = 4;
        c.ctr.subarch_width = 32;
    } else if (kind == ERASE_MODEL_DCN) {
        /* DLRM-DCNv2 in small, cut at 2 (between cross layers: x0 detached
         * too), 4 (cross network | over arch) and 5; headless blocks 0, 2, 5 */
        static const int top[] = { 16, 12, 8, 1 };
        c.ctr.embedding_dim = 4;
        for (int f = 0; f < ERASE_CTR_FIELDS; f++)
            c.ctr.table_rows[f] = 40 + (uint32_t)f;
        c.ctr.bottom_layers = 2;
        c.ctr.bottom_mlp[0] = 8;
        c.ctr.bottom_mlp[1] = 4;
        c.dcn.cross_rank = 8;
        c.dcn.top_layers = 4;
        memcpy(c.dcn.top_mlp, top, sizeof top);
        c.cut_mask = (1u << 2) | (1u << 4) | (1u << 5);
    } else if (kind == ERASE_MODEL_GPT) {
        /* the NanoChat setting in small: 6 layers cut at 2 and 4 */
        c.gpt.layers = 6;
        c.gpt.heads = 2;
        c.gpt.width = 16;
        c.gpt.context = 8;
        c.gpt.vocab = 32;
        c.cut_mask = (1u << 2) | (1u << 4);
    } else {
        c.mlp.inputs = 24;
        c.mlp.hidden[0] = c.mlp.hidden[1] = c.mlp.hidden[2] = 48;
        c.mlp.classes = 6;
    }
    return c;
}

#define MUST(call)                                                                       \
    do {                                                                                 \
        erase_status_t st_ = (call);                                                     \
        if (st_ != ERASE_OK) {                                                           \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, erase_error_message()); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* Rank `rank`'s rows of global batch `k`: rows [rank*local, (rank+1)*local). */
static void slice(erase_network_t *net, const erase_batch_t *global, int rank, int local, erase_batch_t *out)
{
    const erase_model_config_t *c = erase_network_config(net);
    *out = *global;
    out->size = local;
    size_t r0 = (size_t)rank * (size_t)local;
    if (c->kind == ERASE_MODEL_GPT) {
        out->tokens = global->tokens + r0 * (size_t)c->gpt.context;
        out->targets = global->targets + r0 * (size_t)c->gpt.context;
    } else if (erase_model_config_has_tables(c)) {
        out->dense = global->dense + r0 * ERASE_CTR_DENSE;
        out->sparse = global->sparse + r0 * (size_t)erase_model_config_hot_width(c);
        out->sparse_len = global->sparse_len ? global->sparse_len + r0 * ERASE_CTR_FIELDS : NULL;
        out->label = global->label + r0;
    } else {
        out->features = global->features + r0 * (size_t)c->mlp.inputs;
        out->classes = global->classes + r0;
    }
}

/* Device-to-device copy of a batch's arrays (any backend). */
static void copy_batch(erase_network_t *net, const erase_batch_t *from, erase_batch_t *to)
{
    const erase_model_config_t *c = erase_network_config(net);
    erase_device_t *dev = erase_network_device(net);
    size_t n = (size_t)from->size;
    if (c->kind == ERASE_MODEL_GPT) {
        size_t bytes = n * (size_t)c->gpt.context * sizeof(int32_t);
        MUST(erase_memcpy_sync(dev, (void *)to->tokens, from->tokens, bytes));
        MUST(erase_memcpy_sync(dev, (void *)to->targets, from->targets, bytes));
    } else if (erase_model_config_has_tables(c)) {
        MUST(erase_memcpy_sync(dev, (void *)to->dense, from->dense, n * ERASE_CTR_DENSE * sizeof(float)));
        size_t H = (size_t)erase_model_config_hot_width(c);
        MUST(erase_memcpy_sync(dev, (void *)to->sparse, from->sparse, n * H * sizeof(uint32_t)));
        if (from->sparse_len) /* multi-hot */
            MUST(erase_memcpy_sync(dev, (void *)to->sparse_len, from->sparse_len,
                                   n * ERASE_CTR_FIELDS * sizeof(uint32_t)));
        MUST(erase_memcpy_sync(dev, (void *)to->label, from->label, n * sizeof(float)));
    } else {
        MUST(erase_memcpy_sync(dev, (void *)to->features, from->features,
                               n * (size_t)c->mlp.inputs * sizeof(float)));
        MUST(erase_memcpy_sync(dev, (void *)to->classes, from->classes, n * sizeof(int32_t)));
    }
}

float *equivalence_train(erase_device_t *dev, const erase_model_config_t *cfg,
                         const erase_sched_options_t *o, int steps, int rank, int dp, size_t *n)
{
    return equivalence_train_clipped(dev, cfg, o, 0.0f, steps, rank, dp, n);
}

static float *train(erase_device_t *dev, const erase_model_config_t *cfg, const erase_sched_options_t *options,
                    float grad_clip, const erase_shard_t *plan, int steps, int rank, int dp, size_t *n);

float *equivalence_train_clipped(erase_device_t *dev, const erase_model_config_t *cfg,
                                 const erase_sched_options_t *o, float grad_clip, int steps,
                                 int rank, int dp, size_t *n)
{
    return train(dev, cfg, o, grad_clip, NULL, steps, rank, dp, n);
}

float *equivalence_train_sharded(erase_device_t *dev, const erase_model_config_t *cfg,
                                 const erase_sched_options_t *o, const erase_shard_t *plan, int steps,
                                 int rank, int dp, size_t *n)
{
    return train(dev, cfg, o, 0.0f, plan, steps, rank, dp, n);
}

static float *train(erase_device_t *dev, const erase_model_config_t *cfg, const erase_sched_options_t *options,
                    float grad_clip, const erase_shard_t *plan, int steps, int rank, int dp, size_t *n)
{
    erase_sched_options_t so = *options;
    const erase_sched_options_t *o = &so;
    erase_embed_shard_t *shard = NULL;
    int local = GLOBAL_BATCH / dp;
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_optim_config_t ocfg = erase_optim_config_default();
    ocfg.schedule.warmup_steps = 5;
    ocfg.grad_clip = grad_clip;
    if (plan) /* this rank's rows of each table only */
        MUST(erase_network_create_placed(dev, cfg, local, plan, ERASE_CTR_FIELDS, rank, &net));
    else
        MUST(erase_network_create(dev, cfg, local, &net));
    MUST(erase_optimizer_create(net, &ocfg, &opt));
    if (plan) {
        MUST(erase_embed_shard_create(net, erase_emb_comm(), plan, ERASE_CTR_FIELDS, &shard));
        so.shard = shard;
    }
    MUST(erase_sched_create(net, opt, o, &sc));
    erase_batch_t global[POOL], mine[POOL], fixed;
    for (int k = 0; k < POOL; k++) {
        MUST(erase_batch_random(net, GLOBAL_BATCH, 500 + (uint64_t)k, &global[k]));
        slice(net, &global[k], rank, local, &mine[k]);
    }
    MUST(erase_batch_random(net, local, 1, &fixed));
    for (int t = 0; t < steps; t++) {
        if (o->mode == ERASE_EB_GRAPH) {
            MUST(erase_sched_synchronize(sc));
            copy_batch(net, &mine[t % POOL], &fixed);
            MUST(erase_sched_step(sc, &fixed));
        } else {
            MUST(erase_sched_step(sc, &mine[t % POOL]));
        }
    }
    MUST(erase_sched_synchronize(sc));
    size_t total = erase_network_copy_params(net, NULL);
    float *out = malloc(total * sizeof(float));
    erase_network_copy_params(net, out);
    *n = total;
    erase_sched_destroy(sc);
    erase_embed_shard_destroy(shard);
    for (int k = 0; k < POOL; k++)
        erase_batch_free_random(net, &global[k]);
    erase_batch_free_random(net, &fixed);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    return out;
}

size_t equivalence_differ(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

double equivalence_relative(const float *a, const float *b, const float *b0, size_t n)
{
    double diff = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        moved = fmax(moved, fabs((double)b[i] - b0[i]));
    }
    return moved > 0 ? diff / moved : -1;
}

void equivalence_check_modes(erase_device_t *dev, erase_model_kind_t kind, int steps)
{
    erase_model_config_t cfg = equivalence_model(kind);
    const char *what = kind == ERASE_MODEL_CTR   ? "ctr (six cuts)"
                       : kind == ERASE_MODEL_DCN ? "dcn (cuts at 2, 4 and 5 of 7 blocks)"
                       : kind == ERASE_MODEL_GPT ? "gpt (6 layers, cuts at 2 and 4)" : "mlp (three blocks)";
    equivalence_check_config(dev, &cfg, what, 0.0f, steps);
    /* With automatic BLAS threads off runs every core's threads per GEMM,
     * graph a share: bitwise equal with thread-invariant BLAS kernels,
     * within rounding with OpenBLAS's AVX2 ones. */
    erase_sched_options_t off = erase_sched_options_default(), graph = off;
    graph.mode = ERASE_EB_GRAPH;
    size_t n, n_graph, n0;
    float *a = equivalence_train(dev, &cfg, &off, steps, 0, 1, &n);
    float *b = equivalence_train(dev, &cfg, &graph, steps, 0, 1, &n_graph);
    float *start = equivalence_train(dev, &cfg, &off, 0, 0, 1, &n0);
    assert_int_equal(n, n_graph);
    double rel = equivalence_relative(b, a, start, n);
    print_message("%s, %d steps, automatic BLAS threads (off on all %d cores, graph on a share): %zu of %zu "
                  "parameters differ, max |graph - off| / max |off - initial| = %.2e (bound 1e-3)\n",
                  what, steps, erase_device_cores(dev), equivalence_differ(a, b, n), n, rel);
    assert_true(rel >= 0 && rel <= 1e-3); /* -1: off did not move */
    free(a);
    free(b);
    free(start);
}

void equivalence_check_config(erase_device_t *dev, const erase_model_config_t *model, const char *what,
                              float grad_clip, int steps)
{
    erase_model_config_t cfg = *model;
    erase_sched_options_t base = erase_sched_options_default();
    base.blas_threads = 1; /* every mode's GEMMs on equal BLAS threads (lib/sched/sched.h) */
    size_t n_ref, n0;
    float *ref = equivalence_train_clipped(dev, &cfg, &base, grad_clip, steps, 0, 1, &n_ref);
    float *initial = equivalence_train(dev, &cfg, &base, 0, 0, 1, &n0);
    size_t moved = equivalence_differ(ref, initial, n_ref);
    print_message("off moved %zu of %zu parameters in %d steps\n", moved, n_ref, steps);
    assert_true(moved > n_ref / 2); /* the comparison below is not between untrained models */
    free(initial);
    if (grad_clip > 0) { /* the clipping is not a no-op */
        float *unclipped = equivalence_train(dev, &cfg, &base, steps, 0, 1, &n0);
        size_t clipped = equivalence_differ(ref, unclipped, n_ref);
        print_message("grad clip %g: %zu of %zu parameters differ from the unclipped run\n",
                      (double)grad_clip, clipped, n_ref);
        assert_true(clipped > n_ref / 2);
        free(unclipped);
    }
    static const struct { erase_early_backward_t mode; erase_timing_t update; int side; erase_timing_t reduce; } cases[] = {
        { ERASE_EB_BLOCKING, ERASE_AT_EARLY, 1, ERASE_AT_EARLY }, { ERASE_EB_BLOCKING, ERASE_AT_END, 1, ERASE_AT_EARLY },
        { ERASE_EB_BLOCKING, ERASE_AT_EARLY, 2, ERASE_AT_EARLY }, { ERASE_EB_ASYNC, ERASE_AT_EARLY, 1, ERASE_AT_EARLY },
        { ERASE_EB_ASYNC, ERASE_AT_END, 2, ERASE_AT_EARLY },      { ERASE_EB_GRAPH, ERASE_AT_EARLY, 1, ERASE_AT_EARLY },
        { ERASE_EB_GRAPH, ERASE_AT_END, 2, ERASE_AT_EARLY },      { ERASE_EB_ASYNC, ERASE_AT_END, 1, ERASE_AT_END },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        erase_sched_options_t o = base;
        o.mode = cases[i].mode;
        o.update = cases[i].update;
        o.side_streams = cases[i].side;
        o.reduce = cases[i].reduce;
        size_t n;
        float *got = equivalence_train_clipped(dev, &cfg, &o, grad_clip, steps, 0, 1, &n);
        assert_int_equal(n, n_ref);
        size_t differ = equivalence_differ(ref, got, n);
        print_message("%s (cut mask 0x%x), grad clip %g, %d steps: %-8s update %-5s %d side stream%s, "
                      "reduce %s: %zu of %zu parameters differ from off\n",
                      what, (unsigned)cfg.cut_mask, (double)grad_clip, steps,
                      erase_early_backward_name(o.mode), o.update == ERASE_AT_EARLY ? "early" : "end",
                      o.side_streams, o.side_streams > 1 ? "s" : "",
                      o.reduce == ERASE_AT_EARLY ? "early" : "end", differ, n);
        assert_int_equal(differ, 0);
        free(got);
    }
    free(ref);
}

/* ---- under mpirun ---------------------------------------------------------- */

erase_device_t *eq_dev;
erase_world_t eq_world;
erase_stream_t *eq_host;

int64_t equivalence_sum_ranks(int64_t v)
{
    int64_t out;
    assert_int_equal(erase_allreduce(erase_world_comm(), eq_host, &v, &out, 1, ERASE_DTYPE_I64, ERASE_REDUCE_SUM),
                     ERASE_OK);
    assert_int_equal(erase_stream_synchronize(eq_host), ERASE_OK);
    return out;
}

static int mpi_setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    if (erase_device_open(&o, &eq_dev) != ERASE_OK || erase_stream_create(eq_dev, &eq_host) != ERASE_OK)
        return -1;
    return 0;
}

static int mpi_teardown(void **state)
{
    erase_stream_destroy(eq_host);
    erase_device_close(eq_dev);
    return 0;
}

int equivalence_mpi_main(int *argc, char ***argv, const char *what, const struct CMUnitTest *tests, size_t n)
{
    erase_world_options_t wo = { .pp_size = 1 };
    ERASE_MUST(erase_world_init(argc, argv, &wo, &eq_world));
    if (eq_world.rank != 0 && !freopen("/dev/null", "w", stdout))
        erase_fatal(__FILE__, __LINE__, "silence stdout", ERASE_ERR_IO);
    char name[128];
    snprintf(name, sizeof name, "%s on %d ranks", what, eq_world.size);
    int failed = _cmocka_run_group_tests(name, tests, n, mpi_setup, mpi_teardown);
    erase_world_finalize();
    return failed;
}

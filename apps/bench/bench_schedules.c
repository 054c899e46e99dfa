/*
 * erase-bench schedules: QPS of the early-backward modes against `off`
 * (the baseline, given its best BLAS setting: one stream with all cores)
 * measured in the same run, for ctr (six cuts, and no cuts) and mlp over
 * batch sizes; per mode: QPS p50 and p90 after warm-up (samples per second
 * of one step across all ranks; p90 is the fast end, as in the ERASE
 * paper), the ratio to off, the overlap fraction (share of backward time
 * that ran while a forward ran, from a traced run) and the BLAS threads per
 * stream, and each mode's step time (min, median, max; a warning when they
 * spread too far). `--model dcn` is MLPerf's DLRM-DCNv2 (docs/models.md,
 * no cuts: TorchRec's DLRM_DCN), `dcn-cuts` the same with six detached
 * dense sub-architectures (cuts 2-7, docs/models.md); `--table-rows N` sets
 * every table of ctr and dcn to N rows, `--threads N` the cores a rank
 * uses (default: the host's online cores over its local ranks). The modes
 * run interleaved, a step of each in turn, so a busy spell of the machine
 * cannot favour one of them. Each step is timed
 * from issue to completion. Run it under `mpirun -np N` for data
 * parallelism (global batch = N x batch).
 *
 * `--feasibility`: the ERASE paper's MLP experiment: a 3-layer MLP with
 * every layer detached; per batch size and mode, backward time, whole-step
 * time and their change against off, the overlap fraction and samples/s,
 * beside the paper's A100 figures (printed as reference lines, not
 * measured). `--data DIR` feeds it real batches: classification shards
 * (erase-convert mnist ... -o X, then --data X/train) read in the reader's
 * global order, a new batch every step, copied into each mode's fixed
 * device batch before its step (as erase-train does); without it every
 * mode trains on one fixed random batch.
 *
 * `--model gpt`: the ERASE NanoChat setting, the gpt model with two cuts
 * (6 layers cut at 2 and 4: three sub-graphs of two layers, local LM heads
 * on the first two), at each of --widths (heads = width / 64, at least 1)
 * and each batch (sequences of --context tokens): from kernels too small
 * to fill the machine, where a backward on a side stream runs in the
 * forward's idle time, to kernels that fill it, where early backward
 * stops paying (the paper's saturation limit).
 *
 * `--model nanochat`: the same for nanochat's transformer (docs/models.md)
 * with two cuts (4 layers cut at 1 and 3: three sub-graphs, h0 | h1-h2 |
 * h3, local LM heads on h0 and h2; jobs/nanochat-d4-cuts.cfg at width
 * 256), heads = ceil(width / 128) as nanochat's depth rule gives them.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "io/cls_reader.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/train_step.h"
#include "lib/sched/sched.h"
#include "lib/sched/trace.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double p50, p90, step_ms, overlap, backward_ms;
    double exposed_ms;               /* backward time per step not overlapped by a forward */
    bench_spread_t ms;               /* step time: min, median, max */
    int threads;
} point_t;

/* One mode's training state in run_points. */
typedef struct {
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_batch_t data;              /* fixed device buffers (erase_batch_random's); with a
                                      * reader, each step's batch is copied into them */
    double *qps, *ms;
    erase_trace_record_t *rec;       /* with trace: the mode's records of the timed steps */
    size_t nrec;
    int threads;                     /* the BLAS threads its scheduler chose (a device-wide
                                      * setting: set again before each of its steps) */
} mode_run_t;

#define TRACE_CAP ((size_t)1 << 18)

/* The next batch of `data` (past an epoch's end: the next epoch's first). */
static erase_status_t next_batch(erase_reader_t *data, erase_cls_batch_t *b)
{
    do
        ERASE_CHECK(erase_cls_reader_next(data, b));
    while (b->end_of_epoch);
    return ERASE_OK;
}

/* Copy this rank's batch `b` (host memory, [n, F] features and [n]
 * classes, n = the network's batch) into the mode's fixed device buffers,
 * on its main stream before the step that reads them; the caller
 * synchronizes the step before the reader reuses b's memory. */
static erase_status_t load_batch(mode_run_t *m, const erase_cls_batch_t *b)
{
    erase_stream_t *s = erase_sched_main_stream(m->sc);
    size_t n = (size_t)b->size, f = (size_t)b->features_per_row;
    if (b->size != m->data.size)
        return ERASE_ERROR(ERASE_ERR_STATE, "schedules: a batch of %lld rows, the network takes %d",
                           (long long)b->size, m->data.size);
    ERASE_CHECK(erase_memcpy_async(s, (void *)m->data.features, b->features, n * f * sizeof(float)));
    ERASE_CHECK(erase_memcpy_async(s, (void *)m->data.classes, b->classes, n * sizeof(int32_t)));
    return ERASE_OK;
}

/*
 * The modes[0..n) on one configuration, interleaved: each mode has its own
 * network and scheduler, and every step round runs one step of each mode
 * in turn (warm-up rounds first), so a busy spell of the machine slows
 * every mode alike instead of the one whose block of steps it hit; each
 * mode's steps run with the BLAS threads its scheduler chose (off: all
 * cores on one stream). Each step is timed from issue to completion.
 * `data` NULL: every step of a mode trains on one fixed random batch;
 * else (an mlp whose inputs and classes match it) every round takes the
 * reader's next batch and each mode copies it to the device inside its
 * timed step. out[k]: mode k's QPS p50/p90 and step time spread; with
 * `trace`, its overlap and backward times from the traced steps.
 */
static erase_status_t run_points(erase_device_t *dev, const erase_model_config_t *cfg, int batch,
                                 const erase_early_backward_t *modes, int n, int steps, int warmup, int trace,
                                 erase_comm_t *dp, erase_reader_t *data, point_t *out)
{
    int rank = dp ? erase_comm_rank(dp) : 0, ranks = dp ? erase_comm_size(dp) : 1;
    mode_run_t run[4] = { { 0 } };
    erase_status_t st = n >= 1 && n <= 4 ? ERASE_OK
                                         : ERASE_ERROR(ERASE_ERR_INVALID, "schedules: %d modes (1 to 4)", n);
    for (int k = 0; k < n && st == ERASE_OK; k++) {
        mode_run_t *m = &run[k];
        erase_optim_config_t ocfg = erase_optim_config_default();
        erase_sched_options_t o = erase_sched_options_default();
        o.mode = modes[k];
        o.dp = dp;
        o.trace = trace;
        ERASE_CHECK_GOTO(erase_network_create(dev, cfg, batch, &m->net), st, done);
        ERASE_CHECK_GOTO(erase_optimizer_create(m->net, &ocfg, &m->opt), st, done);
        ERASE_CHECK_GOTO(erase_sched_create(m->net, m->opt, &o, &m->sc), st, done);
        m->threads = erase_device_blas_threads(dev);
        ERASE_CHECK_GOTO(erase_batch_random(m->net, batch, 11 + (uint64_t)rank, &m->data), st, done);
        m->qps = malloc(sizeof(double) * (size_t)steps);
        m->ms = malloc(sizeof(double) * (size_t)steps);
        m->rec = trace ? malloc(TRACE_CAP * sizeof *m->rec) : NULL;
        if (!m->qps || !m->ms || (trace && !m->rec))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "schedules: no memory for the samples");
    }
    for (int i = 0; i < warmup + steps && st == ERASE_OK; i++) {
        erase_cls_batch_t b;
        if (data)
            ERASE_CHECK_GOTO(next_batch(data, &b), st, done);
        for (int k = 0; k < n && st == ERASE_OK; k++) {
            mode_run_t *m = &run[k];
            /* the streams are idle here: the previous step was synchronized */
            ERASE_CHECK_GOTO(erase_device_set_blas_threads(dev, m->threads), st, done);
            double t0 = erase_now_s();
            if (data)
                ERASE_CHECK_GOTO(load_batch(m, &b), st, done);
            ERASE_CHECK_GOTO(erase_sched_step(m->sc, &m->data), st, done);
            ERASE_CHECK_GOTO(erase_sched_synchronize(m->sc), st, done);
            double dt = erase_now_s() - t0;
            if (i >= warmup) {
                m->qps[i - warmup] = (double)batch * ranks / dt;
                m->ms[i - warmup] = dt * 1e3;
            }
            /* the device's trace log holds every mode's records: this
             * step's go to its mode now (the warm-up's are dropped) */
            if (trace)
                m->nrec += erase_sched_trace_collect(m->sc, m->rec + m->nrec, TRACE_CAP - m->nrec) *
                           (i >= warmup);
        }
    }
    for (int k = 0; k < n && st == ERASE_OK; k++) {
        mode_run_t *m = &run[k];
        point_t *p = &out[k];
        memset(p, 0, sizeof *p);
        p->p50 = erase_quantile(m->qps, (size_t)steps, 0.5);
        p->p90 = erase_quantile(m->qps, (size_t)steps, 0.9);
        p->ms = bench_spread(m->ms, (size_t)steps);
        p->step_ms = p->ms.median;
        p->threads = m->threads;
        if (trace) {
            erase_trace_overlap_t ov = erase_trace_overlap(m->rec, m->nrec);
            p->overlap = ov.overlap_fraction;
            p->backward_ms = ov.backward_ms / steps;
            p->exposed_ms = (ov.backward_ms - ov.overlapped_ms) / steps;
        }
    }
done:
    for (int k = 0; k < n && k < 4; k++) {
        mode_run_t *m = &run[k];
        free(m->qps);
        free(m->ms);
        free(m->rec);
        if (m->net)
            erase_batch_free_random(m->net, &m->data);
        erase_sched_destroy(m->sc);
        erase_optimizer_destroy(m->opt);
        erase_network_destroy(m->net);
    }
    return st;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: [mpirun -np N] erase-bench schedules [--model ctr|ctr-nocuts|mlp|all|gpt|nanochat|dcn|\n"
               "          dcn-cuts] [--batch LIST] [--modes LIST] [--steps N] [--warmup N]\n"
               "          [--threads N] [--table-rows N]\n"
               "          [--widths LIST] [--context T]\n"
               "          [--feasibility [--data DIR]] [--device cpu|cuda] [--gemm fp32|tf32|bf16]\n"
               "  --feasibility  the ERASE paper's MLP table (--batch 64,256,1024 unless given);\n"
               "                 --data DIR: on classification shards (erase-convert mnist ... -o X:\n"
               "                 --data X/train), a new batch every step; else synthetic batches\n"
               "  --model gpt    the two-cut gpt (6 layers cut at 2 and 4: three sub-graphs; heads =\n"
               "                 width / 64, vocab 256) at each of --widths (default 64,128,384) and\n"
               "                 --batch (sequences of --context tokens; defaults 2,8,32 and 64);\n"
               "                 QPS = sequences/s; --steps 10 --warmup 3 unless given\n"
               "  --model dcn    MLPerf's DLRM-DCNv2 (jobs/dcn.cfg's sizes, no cuts); dcn-cuts: cuts 2-7\n"
               "  --threads N    cores (BLAS threads) per rank; default the host's over its local ranks\n"
               "  --table-rows N every embedding table of ctr and dcn N rows (default 10007)\n"
               "  --model nanochat  the same for the two-cut nanochat (4 layers cut at 1 and 3: three\n"
               "                 sub-graphs; heads = ceil(width / 128), vocab 256)\n"
               "  defaults: --model all (ctr, ctr-nocuts, mlp) --batch 64,256,1024,4096\n"
               "            --modes off,blocking,async,graph\n"
               "            --steps 30 --warmup 5 --device cpu (cuda: the GPU of the local rank)\n"
               "            --gemm fp32 (tf32, bf16: tensor cores, cuda only)\n");
}

/* What --feasibility compares: the batches, where they come from. */
typedef struct {
    const int *batches;  /* per rank */
    int nbatches;
    const erase_early_backward_t *modes; /* modes[0] = off */
    int nmodes;
    int steps, warmup;
    const char *data;    /* classification shards (a directory or shard), or NULL: synthetic */
} feas_options_t;

/*
 * Open --data for batches of `global_batch` rows over the ranks of `dp`
 * (NULL: one rank) and give the mlp of *cfg its inputs and classes. On
 * every rank alike (the same files): rank 0 prints "erase-bench
 * schedules: --data DIR: why" (and, for a file or format error, "; expected
 * classification shards ...") and *out = NULL; returns 1 then, else 0. A
 * failure on only some ranks takes the fatal path.
 */
static int open_data(const char *dir, int64_t global_batch, erase_comm_t *dp, erase_model_config_t *cfg,
                     erase_reader_t **out)
{
    erase_reader_options_t ro = erase_reader_options_default();
    ro.global_batch = global_batch;
    ro.dp_rank = dp ? erase_comm_rank(dp) : 0;
    ro.dp_size = dp ? erase_comm_size(dp) : 1;
    *out = NULL;
    erase_status_t st = erase_cls_reader_open(&dir, 1, &ro, out);
    int64_t features = 0;
    int classes = 0, all, any;
    if (st == ERASE_OK && (st = erase_cls_reader_shape(*out, &features, &classes)) == ERASE_OK) {
        cfg->mlp.inputs = (int)features;
        cfg->mlp.classes = classes;
    }
    char why[1024];
    snprintf(why, sizeof why, "%s", st == ERASE_OK ? "" : erase_error_reason());
    ERASE_MUST(erase_world_agree(st != ERASE_OK, &all, &any));
    if (any && !all)
        ERASE_MUST(st != ERASE_OK ? st : ERASE_ERROR(ERASE_ERR_STATE, "another rank could not open --data %s", dir));
    if (!any)
        return 0;
    if (!dp || erase_comm_rank(dp) == 0)
        fprintf(stderr, "erase-bench schedules: --data %s: %s%s\n", dir, why,
                st == ERASE_ERR_IO || st == ERASE_ERR_FORMAT
                    ? "; expected classification shards (erase-cls-1: /features float [N, F], /label; "
                      "erase-convert mnist IMAGES LABELS -o X, then --data X/train)"
                    : "");
    erase_reader_close(*out);
    *out = NULL;
    return 1;
}

/* "+12%", "-58%" or "0%": the change of x against the baseline base. */
static const char *change(double x, double base, char *buf, size_t size)
{
    double pct = base > 0 ? 100 * (x - base) / base : 0.0;
    snprintf(buf, size, pct > -0.5 && pct < 0.5 ? "0%%" : "%+.0f%%", pct);
    return buf;
}

/*
 * The ERASE feasibility table (see the top of this file): per batch and
 * mode, on rank 0's clock. Returns the exit status: 0, or 1 when --data
 * cannot be read as classification shards (after the message).
 */
static int feasibility(erase_device_t *dev, erase_comm_t *dp, const feas_options_t *o, int is_root)
{
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_MLP); /* 784-1024x3-10, all cut */
    int ranks = dp ? erase_comm_size(dp) : 1;
    for (int i = 0; i < o->nbatches; i++) {
        erase_reader_t *data = NULL;
        if (o->data && open_data(o->data, (int64_t)o->batches[i] * ranks, dp, &cfg, &data))
            return 1;
        if (is_root && i == 0) {
            printf("# ERASE feasibility: MLP %d", cfg.mlp.inputs);
            for (int l = 0; l < cfg.mlp.hidden_layers; l++)
                printf("-%d", cfg.mlp.hidden[l]);
            printf("-%d, each layer detached (local softmax heads)\n", cfg.mlp.classes);
            if (o->data)
                printf("# batches: %s, the classification reader's global order (shuffled, seed 0), a new batch "
                       "every step, the same for every mode; global batch = %d x batch\n", o->data, ranks);
            else
                printf("# batches: synthetic (one fixed random batch per mode); global batch = %d x batch\n", ranks);
            printf("# step: the batch's copy to the device (--data) and the training step, issue to completion, "
                   "rank 0; min, median, max of %d steps after %d warm-up, the modes interleaved\n",
                   o->steps, o->warmup);
            printf("# backward_ms: the sum of the block backward times of a step (traced ranges, mean over the "
                   "steps); exposed_ms: the part of it no forward overlapped; overlap = 1 - exposed / backward\n");
            printf("# paper off    backward 23.5 ms          step 41.2 ms           "
                   "(the ERASE paper's A100 figures: reference, not measured here)\n");
            printf("# paper early  backward  9.9 ms (-58%%)   step 28.8 ms (-30%%)   "
                   "(the paper's batch size: not stated in what erase has of it)\n");
            printf("%6s %-9s %11s %7s %10s %9s %9s %9s %7s %8s %10s\n", "batch", "mode", "backward_ms", "bwd_vs",
                   "exposed_ms", "min_ms", "step_ms", "max_ms", "step_vs", "overlap", "samples/s");
        }
        point_t p[4];
        ERASE_MUST(run_points(dev, &cfg, o->batches[i], o->modes, o->nmodes, o->steps, o->warmup, 1, dp, data, p));
        erase_reader_close(data);
        for (int m = 0; m < o->nmodes && is_root; m++) {
            char bwd[16], step[16], what[64];
            printf("%6d %-9s %11.3f %7s %10.3f %9.3f %9.3f %9.3f %7s %7.0f%% %10.0f\n", o->batches[i],
                   erase_early_backward_name(o->modes[m]), p[m].backward_ms,
                   m ? change(p[m].backward_ms, p[0].backward_ms, bwd, sizeof bwd) : "-", p[m].exposed_ms,
                   p[m].ms.min, p[m].step_ms, p[m].ms.max,
                   m ? change(p[m].step_ms, p[0].step_ms, step, sizeof step) : "-", 100 * p[m].overlap, p[m].p50);
            snprintf(what, sizeof what, "batch %d, %s", o->batches[i], erase_early_backward_name(o->modes[m]));
            bench_spread_check(p[m].ms, what, "ms");
        }
        fflush(stdout);
    }
    return 0;
}

/* One row per mode of model `name` at `batch`: the modes interleaved
 * untraced, then a shorter traced run for the overlap. */
static void schedules_point(erase_device_t *dev, erase_comm_t *dp, const erase_model_config_t *cfg, const char *name,
                            int batch, const erase_early_backward_t *modes, int nmodes, int steps, int warmup,
                            int root)
{
    point_t p[4], traced[4];
    ERASE_MUST(run_points(dev, cfg, batch, modes, nmodes, steps, warmup, 0, dp, NULL, p));
    ERASE_MUST(run_points(dev, cfg, batch, modes, nmodes, steps / 3 + 1, 2, 1, dp, NULL, traced));
    for (int k = 0; k < nmodes && root; k++) {
        printf("%-13s %6d %-9s %12.0f %12.0f %7.2fx %7.2fx %8.2f %8.2f %8.2f %7.0f%% %8d\n", name, batch,
               erase_early_backward_name(modes[k]), p[k].p50, p[k].p90, p[k].p50 / p[0].p50, p[k].p90 / p[0].p90,
               p[k].ms.min, p[k].step_ms, p[k].ms.max, 100 * traced[k].overlap, p[k].threads);
        char what[64];
        snprintf(what, sizeof what, "%s batch %d, %s", name, batch, erase_early_backward_name(modes[k]));
        bench_spread_check(p[k].ms, what, "ms");
    }
    fflush(stdout);
}

/* The two-cut language model of `--model gpt` or `--model nanochat` (see
 * the top of this file) of width `width` and context `context`, vocab 256. */
static erase_model_config_t lm_config(erase_model_kind_t kind, int width, int context)
{
    erase_model_config_t cfg = erase_model_config_default(kind);
    if (kind == ERASE_MODEL_GPT) {
        cfg.gpt.layers = 6;
        cfg.gpt.width = width;
        cfg.gpt.heads = width >= 64 && width % 64 == 0 ? width / 64 : 1;
        cfg.cut_mask = 1u << 2 | 1u << 4;
    } else {
        cfg.nanochat.layers = 4;
        cfg.nanochat.width = width;
        cfg.nanochat.heads = cfg.nanochat.kv_heads = (width + 127) / 128;
        cfg.cut_mask = 1u << 1 | 1u << 3;
    }
    *(int *)erase_model_config_context(&cfg) = context;
    return cfg; /* vocab 256: both defaults' */
}

int bench_schedules(int argc, char **argv)
{
    const char *models = "all", *batch_text = NULL, *mode_text = "off,blocking,async,graph";
    const char *device = "cpu", *gemm = "fp32", *data = NULL, *width_text = "64,128,384";
    int steps = -1, warmup = -1, feas = 0, context = 64, threads = 0;
    long table_rows = 0;
    static const struct option opts[] = { { "model", required_argument, 0, 'm' },
                                          { "batch", required_argument, 0, 'b' },
                                          { "modes", required_argument, 0, 'o' },
                                          { "steps", required_argument, 0, 'n' },
                                          { "warmup", required_argument, 0, 'w' },
                                          { "feasibility", no_argument, 0, 'f' },
                                          { "data", required_argument, 0, 'D' },
                                          { "device", required_argument, 0, 'd' },
                                          { "gemm", required_argument, 0, 'g' },
                                          { "widths", required_argument, 0, 'W' },
                                          { "context", required_argument, 0, 'T' },
                                          { "threads", required_argument, 0, 'j' },
                                          { "table-rows", required_argument, 0, 'R' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': models = optarg; break;
        case 'b': batch_text = optarg; break;
        case 'o': mode_text = optarg; break;
        case 'n': steps = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'f': feas = 1; break;
        case 'D': data = optarg; break;
        case 'd': device = optarg; break;
        case 'g': gemm = optarg; break;
        case 'W': width_text = optarg; break;
        case 'T': context = atoi(optarg); break;
        case 'j': threads = atoi(optarg); break;
        case 'R': table_rows = atol(optarg); break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench schedules", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench schedules", argv[optind]);
    int batches[16], nmodes = 0, widths[8], nanochat = !strcmp(models, "nanochat");
    int lm = nanochat || !strcmp(models, "gpt"); /* a two-cut language model at each width */
    erase_early_backward_t modes[4];
    if (!batch_text)
        batch_text = feas ? "64,256,1024" : lm ? "2,8,32" : "64,256,1024,4096";
    if (steps == -1)
        steps = lm ? 10 : 30;
    if (warmup == -1)
        warmup = lm ? 3 : 5;
    int nb = bench_parse_list(batch_text, batches, 16), nw = bench_parse_list(width_text, widths, 8);
    erase_device_kind_t kind;
    erase_gemm_precision_t precision;
    if (bench_parse_device(device, &kind) != 0) {
        fprintf(stderr, "erase-bench schedules: --device %s: expected cpu or cuda\n", device);
        return 2;
    }
    if (erase_gemm_precision_parse(gemm, &precision) != 0) {
        fprintf(stderr, "erase-bench schedules: --gemm %s: expected fp32, tf32 or bf16\n", gemm);
        return 2;
    }
    char *mlist = strdup(mode_text);
    for (char *tok = strtok(mlist, ","); tok && nmodes < 4; tok = strtok(NULL, ",")) {
        int m = erase_early_backward_parse(tok);
        if (m < 0) {
            fprintf(stderr, "erase-bench schedules: unknown mode '%s' (off, blocking, async, graph)\n", tok);
            free(mlist);
            return 2;
        }
        modes[nmodes++] = (erase_early_backward_t)m;
    }
    free(mlist);
    if (strcmp(models, "all") && strcmp(models, "ctr") && strcmp(models, "ctr-nocuts") && strcmp(models, "mlp") &&
        strcmp(models, "dcn") && strcmp(models, "dcn-cuts") && !lm) {
        fprintf(stderr, "erase-bench schedules: --model %s: expected ctr, ctr-nocuts, mlp, all, gpt, nanochat, dcn "
                "or dcn-cuts\n", models);
        return 2;
    }
    if (threads < 0 || table_rows < 0 || table_rows == 1 || table_rows > INT32_MAX) {
        fprintf(stderr, "erase-bench schedules: --threads %d --table-rows %ld: expected threads >= 1 and rows "
                "2 .. %d\n", threads, table_rows, INT32_MAX);
        return 2;
    }
    if (lm && (nw <= 0 || context < 1 || feas)) {
        fprintf(stderr, "erase-bench schedules: --model %s: --widths a list of widths >= 1, --context >= 1, "
                "no --feasibility\n", models);
        usage(stderr);
        return 2;
    }
    if (data && !feas) {
        fprintf(stderr, "erase-bench schedules: --data feeds --feasibility (the MLP); give both\n");
        usage(stderr);
        return 2;
    }
    if (nb <= 0 || nmodes == 0 || steps < 1 || warmup < 0 || modes[0] != ERASE_EB_OFF) {
        fprintf(stderr, "erase-bench schedules: bad options (the first mode must be off, the baseline)\n");
        usage(stderr);
        return 2;
    }
    erase_world_t world;
    erase_world_options_t wo = { .pp_size = 1 };
    ERASE_MUST(erase_world_init(&argc, &argv, &wo, &world));
    int root = world.rank == 0;
    erase_comm_t *dp = world.dp_size > 1 ? erase_dp_comm() : NULL;
    erase_device_t *dev;
    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = kind;
    dopt.gemm = precision;
    dopt.ordinal = world.local_rank;                 /* CUDA: one GPU per rank of a host */
    dopt.cores = threads ? threads : erase_world_cores_per_rank(&world); /* ranks on one host share its cores */
    if (!(dev = bench_open_device("schedules", &dopt, 0))) { /* every rank fails alike */
        erase_world_finalize();
        return 1;
    }
    erase_world_log_device(dev); /* ERASE_VERBOSE >= 1: one line per rank */
    /* CUDA: NCCL communicators for the gradient collectives of the step */
    ERASE_MUST(erase_world_attach_device(dev));
    if (root) {
        char text[512];
        erase_device_describe(dev, text, sizeof text);
        printf("# device: %s\n# ranks: %d (data parallel); QPS = samples/s of one step over all ranks\n",
               text, world.size);
    }
    if (feas) {
        feas_options_t fo = { .batches = batches, .nbatches = nb, .modes = modes, .nmodes = nmodes,
                              .steps = steps, .warmup = warmup, .data = data };
        int rc = feasibility(dev, dp, &fo, root);
        erase_device_close(dev);
        erase_world_finalize();
        return rc;
    }
    if (root && nanochat)
        printf("# nanochat: 4 layers cut at 1 and 3 (three sub-graphs), heads = ceil(width / 128), context %d, "
               "vocab 256; model nanochat/wC: width C; batch: sequences (QPS: sequences/s)\n", context);
    else if (root && lm)
        printf("# gpt: 6 layers cut at 2 and 4 (three sub-graphs), heads = width / 64, context %d, vocab 256; "
               "model gpt/wC: width C; batch: sequences (QPS: sequences/s)\n", context);
    if (root)
        printf("%-13s %6s %-9s %12s %12s %8s %8s %8s %8s %8s %8s %8s\n", "model", "batch", "mode", "qps_p50",
               "qps_p90", "x_off", "x_off90", "min_ms", "step_ms", "max_ms", "overlap", "threads");
    static const char *const names[] = { "ctr", "ctr-nocuts", "mlp", "gpt", "nanochat", "dcn", "dcn-cuts" };
    static const erase_model_kind_t kinds[] = { ERASE_MODEL_CTR, ERASE_MODEL_CTR, ERASE_MODEL_MLP, ERASE_MODEL_GPT,
                                                ERASE_MODEL_NANOCHAT, ERASE_MODEL_DCN, ERASE_MODEL_DCN };
    for (int m = 0; m < 7; m++) {
        int m_lm = kinds[m] == ERASE_MODEL_GPT || kinds[m] == ERASE_MODEL_NANOCHAT;
        int m_dcn = kinds[m] == ERASE_MODEL_DCN; /* only when named, as the language models */
        if (lm || m_lm || m_dcn ? strcmp(models, names[m]) : strcmp(models, "all") && strcmp(models, names[m]))
            continue;
        erase_model_config_t cfg = erase_model_config_default(kinds[m]);
        if (m == 1)
            cfg.cut_mask = 0;
        if (m == 6) /* six detached dense sub-architectures: cuts 2..7 (docs/models.md) */
            cfg.cut_mask = 0xfc;
        for (int f = 0; f < ERASE_CTR_FIELDS && table_rows && !m_lm && kinds[m] != ERASE_MODEL_MLP; f++)
            cfg.ctr.table_rows[f] = (uint32_t)table_rows;
        for (int wi = 0; wi < (m_lm ? nw : 1); wi++) {
            char name[32];
            snprintf(name, sizeof name, "%s", names[m]);
            if (m_lm) {
                cfg = lm_config(kinds[m], widths[wi], context);
                snprintf(name, sizeof name, "%s/w%d", names[m], widths[wi]);
            }
            double gemm_flop = bench_step_gemm_flop(&cfg, 1);
            if (root && gemm_flop > 0 && (m == 1 || m >= 5))
                printf("# %s: GEMM FLOP per sample %.0f (forward, weight and input gradients; "
                       "bench_step_gemm_flop)\n", name, gemm_flop);
            for (int bi = 0; bi < nb; bi++)
                schedules_point(dev, dp, &cfg, name, batches[bi], modes, nmodes, steps, warmup, root);
        }
    }
    erase_device_close(dev);
    erase_world_finalize();
    return 0;
}

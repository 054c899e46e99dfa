/*
 * erase-bench schedules: QPS of the early-backward modes against `off`
 * (the baseline, given its best BLAS setting: one stream with all cores)
 * measured in the same run, for ctr (six cuts, and no cuts) and mlp over
 * batch sizes; per mode: QPS p50 and p90 after warm-up (samples per second
 * of one step across all ranks; p90 is the fast end, as in the ERASE
 * paper), the ratio to off, the overlap fraction (share of backward time
 * that ran while a forward ran, from a traced run) and the BLAS threads per
 * stream, and each mode's step time (min, median, max; a warning when they
 * spread too far). The modes run interleaved, a step of each in turn, so a
 * busy spell of the machine cannot favour one of them. Each step is timed
 * from issue to completion. Run it under `mpirun -np N` for data
 * parallelism (global batch = N x batch).
 *
 * `--feasibility`: the ERASE paper's MLP experiment: a 3-layer MLP with
 * every layer detached; backward time and whole-step time with and without
 * early backward.
 */
#include "apps/bench/bench.h"

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
    bench_spread_t ms;               /* step time: min, median, max */
    int threads;
} point_t;

/* One mode's training state in run_points. */
typedef struct {
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_batch_t data;
    double *qps, *ms;
    erase_trace_record_t *rec;       /* with trace: the mode's records of the timed steps */
    size_t nrec;
} mode_run_t;

#define TRACE_CAP ((size_t)1 << 18)

/*
 * The modes[0..n) on one configuration, interleaved: each mode has its own
 * network and scheduler, and every step round runs one step of each mode
 * in turn (warm-up rounds first), so a busy spell of the machine slows
 * every mode alike instead of the one whose block of steps it hit. Each
 * step is timed from issue to completion. out[k]: mode k's QPS p50/p90
 * and step time spread; with `trace`, its overlap from the traced steps.
 */
static erase_status_t run_points(erase_device_t *dev, const erase_model_config_t *cfg, int batch,
                                 const erase_early_backward_t *modes, int n, int steps, int warmup, int trace,
                                 erase_comm_t *dp, point_t *out)
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
        ERASE_CHECK_GOTO(erase_batch_random(m->net, batch, 11 + (uint64_t)rank, &m->data), st, done);
        m->qps = malloc(sizeof(double) * (size_t)steps);
        m->ms = malloc(sizeof(double) * (size_t)steps);
        m->rec = trace ? malloc(TRACE_CAP * sizeof *m->rec) : NULL;
        if (!m->qps || !m->ms || (trace && !m->rec))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "schedules: no memory for the samples");
    }
    for (int i = 0; i < warmup + steps && st == ERASE_OK; i++)
        for (int k = 0; k < n && st == ERASE_OK; k++) {
            mode_run_t *m = &run[k];
            double t0 = erase_now_s();
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
    for (int k = 0; k < n && st == ERASE_OK; k++) {
        mode_run_t *m = &run[k];
        point_t *p = &out[k];
        memset(p, 0, sizeof *p);
        p->p50 = erase_quantile(m->qps, (size_t)steps, 0.5);
        p->p90 = erase_quantile(m->qps, (size_t)steps, 0.9);
        p->ms = bench_spread(m->ms, (size_t)steps);
        p->step_ms = p->ms.median;
        p->threads = erase_device_blas_threads(dev);
        if (trace) {
            erase_trace_overlap_t ov = erase_trace_overlap(m->rec, m->nrec);
            p->overlap = ov.overlap_fraction;
            p->backward_ms = ov.backward_ms / steps;
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
    fprintf(f, "usage: [mpirun -np N] erase-bench schedules [--model ctr|ctr-nocuts|mlp|all]\n"
               "          [--batch LIST] [--modes LIST] [--steps N] [--warmup N] [--feasibility]\n"
               "          [--device cpu|cuda] [--gemm fp32|tf32|bf16]\n"
               "  defaults: --model all --batch 64,256,1024,4096 --modes off,blocking,async,graph\n"
               "            --steps 30 --warmup 5 --device cpu (cuda: the GPU of the local rank)\n"
               "            --gemm fp32 (tf32, bf16: tensor cores, cuda only)\n");
}

static int feasibility(erase_device_t *dev, erase_comm_t *dp, int steps, int warmup, int is_root)
{
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_MLP); /* 784-1024x3-10, all cut */
    if (is_root) {
        printf("# ERASE feasibility: MLP 784-1024-1024-1024-10, each layer detached (local softmax heads)\n");
        printf("%6s %-9s %9s %9s %9s %14s %10s\n", "batch", "mode", "min_ms", "step_ms", "max_ms", "backward_ms",
               "overlap");
    }
    static const int batches[] = { 64, 256, 1024 };
    static const erase_early_backward_t modes[2] = { ERASE_EB_OFF, ERASE_EB_ASYNC };
    for (int i = 0; i < 3; i++) {
        point_t p[2];
        ERASE_MUST(run_points(dev, &cfg, batches[i], modes, 2, steps, warmup, 1, dp, p));
        for (int m = 0; m < 2 && is_root; m++) {
            printf("%6d %-9s %9.3f %9.3f %9.3f %14.3f %9.0f%%\n", batches[i], erase_early_backward_name(modes[m]),
                   p[m].ms.min, p[m].step_ms, p[m].ms.max, p[m].backward_ms, 100 * p[m].overlap);
            char what[64];
            snprintf(what, sizeof what, "batch %d, %s", batches[i], erase_early_backward_name(modes[m]));
            bench_spread_check(p[m].ms, what, "ms");
        }
    }
    return 0;
}

int bench_schedules(int argc, char **argv)
{
    const char *models = "all", *batch_text = "64,256,1024,4096", *mode_text = "off,blocking,async,graph";
    const char *device = "cpu", *gemm = "fp32";
    int steps = 30, warmup = 5, feas = 0;
    static const struct option opts[] = { { "model", required_argument, 0, 'm' },
                                          { "batch", required_argument, 0, 'b' },
                                          { "modes", required_argument, 0, 'o' },
                                          { "steps", required_argument, 0, 'n' },
                                          { "warmup", required_argument, 0, 'w' },
                                          { "feasibility", no_argument, 0, 'f' },
                                          { "device", required_argument, 0, 'd' },
                                          { "gemm", required_argument, 0, 'g' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': models = optarg; break;
        case 'b': batch_text = optarg; break;
        case 'o': mode_text = optarg; break;
        case 'n': steps = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'f': feas = 1; break;
        case 'd': device = optarg; break;
        case 'g': gemm = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    int batches[16], nmodes = 0;
    erase_early_backward_t modes[4];
    int nb = bench_parse_list(batch_text, batches, 16);
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
    if (strcmp(models, "all") && strcmp(models, "ctr") && strcmp(models, "ctr-nocuts") && strcmp(models, "mlp")) {
        fprintf(stderr, "erase-bench schedules: --model %s: expected ctr, ctr-nocuts, mlp or all\n", models);
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
    dopt.cores = erase_world_cores_per_rank(&world); /* ranks on one host share its cores */
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
        int rc = feasibility(dev, dp, steps, warmup, root);
        erase_device_close(dev);
        erase_world_finalize();
        return rc;
    }
    if (root)
        printf("%-10s %6s %-9s %12s %12s %8s %8s %8s %8s %8s %8s %8s\n", "model", "batch", "mode", "qps_p50",
               "qps_p90", "x_off", "x_off90", "min_ms", "step_ms", "max_ms", "overlap", "threads");
    static const char *const names[] = { "ctr", "ctr-nocuts", "mlp" };
    for (int m = 0; m < 3; m++) {
        if (strcmp(models, "all") && strcmp(models, names[m]))
            continue;
        erase_model_config_t cfg = erase_model_config_default(m == 2 ? ERASE_MODEL_MLP : ERASE_MODEL_CTR);
        if (m == 1)
            cfg.cut_mask = 0;
        for (int bi = 0; bi < nb; bi++) {
            point_t p[4], traced[4];
            ERASE_MUST(run_points(dev, &cfg, batches[bi], modes, nmodes, steps, warmup, 0, dp, p));
            ERASE_MUST(run_points(dev, &cfg, batches[bi], modes, nmodes, steps / 3 + 1, 2, 1, dp, traced));
            for (int k = 0; k < nmodes && root; k++) {
                printf("%-10s %6d %-9s %12.0f %12.0f %7.2fx %7.2fx %8.2f %8.2f %8.2f %7.0f%% %8d\n", names[m],
                       batches[bi], erase_early_backward_name(modes[k]), p[k].p50, p[k].p90, p[k].p50 / p[0].p50,
                       p[k].p90 / p[0].p90, p[k].ms.min, p[k].step_ms, p[k].ms.max, 100 * traced[k].overlap,
                       p[k].threads);
                char what[64];
                snprintf(what, sizeof what, "%s batch %d, %s", names[m], batches[bi],
                         erase_early_backward_name(modes[k]));
                bench_spread_check(p[k].ms, what, "ms");
            }
            fflush(stdout);
        }
    }
    erase_device_close(dev);
    erase_world_finalize();
    return 0;
}

/*
 * erase-bench schedules: QPS of the early-backward modes against `off`
 * (the baseline, given its best BLAS setting: one stream with all cores)
 * measured in the same run, for ctr (six cuts, and no cuts) and mlp over
 * batch sizes; per mode: QPS p50 and p90 after warm-up (samples per second
 * of one step across all ranks; p90 is the fast end, as in the ERASE
 * paper), the ratio to off, the overlap fraction (share of backward time
 * that ran while a forward ran, from a traced run) and the BLAS threads per
 * stream. Each step is timed from issue to completion. Run it under
 * `mpirun -np N` for data parallelism (global batch = N x batch).
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
    int threads;
} point_t;

static erase_status_t run_point(erase_device_t *dev, const erase_model_config_t *cfg, int batch,
                                erase_early_backward_t mode, int steps, int warmup, int trace,
                                erase_comm_t *dp, point_t *out)
{
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sc;
    erase_batch_t data;
    erase_optim_config_t ocfg = erase_optim_config_default();
    erase_sched_options_t o = erase_sched_options_default();
    o.mode = mode;
    o.dp = dp;
    o.trace = trace;
    int rank = dp ? erase_comm_rank(dp) : 0, ranks = dp ? erase_comm_size(dp) : 1;
    ERASE_CHECK(erase_network_create(dev, cfg, batch, &net));
    ERASE_CHECK(erase_optimizer_create(net, &ocfg, &opt));
    ERASE_CHECK(erase_sched_create(net, opt, &o, &sc));
    ERASE_CHECK(erase_batch_random(net, batch, 11 + (uint64_t)rank, &data));
    double *qps = malloc(sizeof(double) * (size_t)steps), *ms = malloc(sizeof(double) * (size_t)steps);
    size_t cap = (size_t)1 << 18;
    erase_trace_record_t *rec = trace ? malloc(cap * sizeof *rec) : NULL;
    for (int i = 0; i < warmup + steps; i++) {
        if (i == warmup && trace) /* forget the warm-up's records */
            erase_sched_trace_collect(sc, rec, cap);
        double t0 = erase_now_s();
        ERASE_CHECK(erase_sched_step(sc, &data));
        ERASE_CHECK(erase_sched_synchronize(sc));
        double dt = erase_now_s() - t0;
        if (i >= warmup) {
            qps[i - warmup] = (double)batch * ranks / dt;
            ms[i - warmup] = dt * 1e3;
        }
    }
    memset(out, 0, sizeof *out);
    out->p50 = erase_quantile(qps, (size_t)steps, 0.5);
    out->p90 = erase_quantile(qps, (size_t)steps, 0.9);
    out->step_ms = erase_quantile(ms, (size_t)steps, 0.5);
    out->threads = erase_device_blas_threads(dev);
    if (trace) {
        size_t n = erase_sched_trace_collect(sc, rec, cap);
        erase_trace_overlap_t ov = erase_trace_overlap(rec, n);
        out->overlap = ov.overlap_fraction;
        out->backward_ms = ov.backward_ms / steps;
        free(rec);
    }
    free(qps);
    free(ms);
    erase_batch_free_random(net, &data);
    erase_sched_destroy(sc);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    return ERASE_OK;
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
        printf("%6s %-9s %12s %14s %10s\n", "batch", "mode", "step_ms", "backward_ms", "overlap");
    }
    static const int batches[] = { 64, 256, 1024 };
    for (int i = 0; i < 3; i++)
        for (int m = 0; m < 2; m++) {
            point_t p;
            erase_early_backward_t mode = m == 0 ? ERASE_EB_OFF : ERASE_EB_ASYNC;
            ERASE_MUST(run_point(dev, &cfg, batches[i], mode, steps, warmup, 1, dp, &p));
            if (is_root)
                printf("%6d %-9s %12.3f %14.3f %9.0f%%\n", batches[i], erase_early_backward_name(mode),
                       p.step_ms, p.backward_ms, 100 * p.overlap);
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
        printf("%-10s %6s %-9s %12s %12s %8s %8s %8s %8s\n", "model", "batch", "mode", "qps_p50",
               "qps_p90", "x_off", "x_off90", "overlap", "threads");
    static const char *const names[] = { "ctr", "ctr-nocuts", "mlp" };
    for (int m = 0; m < 3; m++) {
        if (strcmp(models, "all") && strcmp(models, names[m]))
            continue;
        erase_model_config_t cfg = erase_model_config_default(m == 2 ? ERASE_MODEL_MLP : ERASE_MODEL_CTR);
        if (m == 1)
            cfg.cut_mask = 0;
        for (int bi = 0; bi < nb; bi++) {
            point_t base = { 0 };
            for (int k = 0; k < nmodes; k++) {
                point_t p, traced;
                ERASE_MUST(run_point(dev, &cfg, batches[bi], modes[k], steps, warmup, 0, dp, &p));
                ERASE_MUST(run_point(dev, &cfg, batches[bi], modes[k], steps / 3 + 1, 2, 1, dp, &traced));
                if (k == 0)
                    base = p;
                if (root)
                    printf("%-10s %6d %-9s %12.0f %12.0f %7.2fx %7.2fx %7.0f%% %8d\n", names[m],
                           batches[bi], erase_early_backward_name(modes[k]), p.p50, p.p90,
                           p.p50 / base.p50, p.p90 / base.p90, 100 * traced.overlap, p.threads);
                fflush(stdout);
            }
        }
    }
    erase_device_close(dev);
    erase_world_finalize();
    return 0;
}

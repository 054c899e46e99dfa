/*
 * erase-bench model: training throughput of the built-in models (--device
 * cpu, or cuda) with the reference single-stream step (lib/nn/train_step.h,
 * the `off` schedule):
 * samples/s (p50 and p90 over timed steps; p90 is the fast end), the
 * step time (min, median, max; a warning when they spread too far), the GEMM
 * FLOP/s achieved inside the step, and its share of this machine's SGEMM
 * speed measured in the same run (1024^3 on as many threads). With
 * --torch, the same model trained by PyTorch (bench/torch_ctr.py) in the
 * same run (on the same device: PyTorch eager on the GPU with --device
 * cuda), and the ratio erase / PyTorch of the p50s.
 */
#include "apps/bench/bench.h"

#include "config.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/train_step.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GEMM floating-point operations of one training step (forward, input and
 * weight gradients as the network computes them). */
static double step_gemm_flop(const erase_model_config_t *c, int batch)
{
    double f = 0, B = batch;
    if (c->kind == ERASE_MODEL_CTR) {
        int in = ERASE_CTR_DENSE;
        for (int i = 0; i < c->ctr.bottom_layers; i++) {
            f += 2 * B * in * c->ctr.bottom_mlp[i] * (i == 0 ? 2 : 3);
            in = c->ctr.bottom_mlp[i];
        }
        int inter = c->ctr.embedding_dim + 27 * 26 / 2, w = c->ctr.subarch_width;
        f += 2 * B * inter * 1 * 3; /* input head */
        in = inter;
        for (int k = 1; k <= c->ctr.subarchs; k++) {
            int cut = (c->cut_mask >> k) & 1;
            f += 2 * B * in * w * (cut ? 2 : 3) + 2 * B * w * w * 3 + 2 * B * w * 1 * 3;
            in = w;
        }
    } else {
        int in = c->mlp.inputs;
        for (int k = 0; k < c->mlp.hidden_layers; k++) {
            int cut = k == 0 || ((c->cut_mask >> k) & 1);
            int h = c->mlp.hidden[k];
            f += 2 * B * in * h * (cut ? 2 : 3) + 2 * B * h * c->mlp.classes * 3;
            in = h;
        }
    }
    return f;
}

typedef struct {
    erase_stream_t *s;
    float *a, *b, *c;
} peak_job_t;

static void peak_gemm(void *p)
{
    peak_job_t *j = p;
    ERASE_MUST(erase_sgemm(j->s, ERASE_NO_TRANS, ERASE_NO_TRANS, 1024, 1024, 1024, 1.0f, j->a, 1024,
                           j->b, 1024, 0.0f, j->c, 1024));
    ERASE_MUST(erase_stream_synchronize(j->s));
}

/* SGEMM GFLOP/s of 1024^3 on the device's current thread count: the
 * spread of 5 samples of 3 products each. */
static bench_spread_t sgemm_peak(erase_device_t *dev, erase_stream_t *s)
{
    peak_job_t j = { .s = s };
    size_t n = 1024 * 1024;
    float *host = malloc(n * sizeof(float));
    if (!host)
        erase_fatal(__FILE__, __LINE__, "allocate the SGEMM inputs", ERASE_ERR_NOMEM);
    for (size_t i = 0; i < n; i++)
        host[i] = (float)(i % 17) * 0.01f;
    j.a = bench_device_floats(dev, host, n);
    j.b = bench_device_floats(dev, host, n);
    free(host);
    ERASE_MUST(erase_malloc(dev, n * sizeof(float), (void **)&j.c));
    double gf[5];
    peak_gemm(&j); /* warm-up */
    for (int k = 0; k < 5; k++)
        gf[k] = 2.0 * 1024 * 1024 * 1024 / (bench_seconds(peak_gemm, &j, 3) / 3) / 1e9;
    erase_free(dev, j.a);
    erase_free(dev, j.b);
    erase_free(dev, j.c);
    return bench_spread(gf, 5);
}

/* Run PyTorch's bench for one point; returns samples/s p50 or 0. */
static double torch_point(const char *python, const char *script, const char *model, int batch,
                          int threads, int steps, erase_device_kind_t kind)
{
    char cmd[1024], line[1024];
    /* on a GPU: PyTorch's own BLAS setup (the OpenBLAS kernel does not matter) */
    snprintf(cmd, sizeof cmd, "%s %s --model %s --batch %d --threads %d --steps %d%s 2>/dev/null",
             python, script, model, batch, threads, steps,
             kind == ERASE_DEVICE_CUDA ? " --device cuda --blas-core env" : "");
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    double qps = 0;
    while (fgets(line, sizeof line, p)) {
        const char *k = strstr(line, "\"samples_per_s_p50\":");
        if (k)
            qps = atof(k + strlen("\"samples_per_s_p50\":"));
    }
    pclose(p);
    return qps;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench model [--model ctr|mlp|both] [--batch LIST] [--threads LIST]\n"
               "                         [--steps N] [--warmup N] [--cuts all|none] [--torch]\n"
               "                         [--device cpu|cuda]\n"
               "  defaults: both models, --batch 256,1024,4096,8192 --threads 1,2 --steps 20 --warmup 3\n"
               "            --device cpu\n"
               "  --torch     also time bench/torch_ctr.py (PyTorch) on the same points\n"
               "              (ERASE_TORCH_PYTHON, default /usr/bin/python3)\n");
}

int bench_model(int argc, char **argv)
{
    const char *models = "both", *batch_text = "256,1024,4096,8192", *thread_text = "1,2", *cuts = "all";
    const char *device = "cpu";
    int steps = 20, warmup = 3, torch = 0;
    static const struct option opts[] = { { "model", required_argument, 0, 'm' },
                                          { "batch", required_argument, 0, 'b' },
                                          { "threads", required_argument, 0, 't' },
                                          { "steps", required_argument, 0, 'n' },
                                          { "warmup", required_argument, 0, 'w' },
                                          { "cuts", required_argument, 0, 'c' },
                                          { "torch", no_argument, 0, 'T' },
                                          { "device", required_argument, 0, 'd' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': models = optarg; break;
        case 'b': batch_text = optarg; break;
        case 't': thread_text = optarg; break;
        case 'n': steps = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'c': cuts = optarg; break;
        case 'T': torch = 1; break;
        case 'd': device = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    int batches[16], threads[8];
    int nb = bench_parse_list(batch_text, batches, 16), nt = bench_parse_list(thread_text, threads, 8);
    erase_device_kind_t kind;
    if (bench_parse_device(device, &kind) != 0) {
        fprintf(stderr, "erase-bench model: --device %s: expected cpu or cuda\n", device);
        return 2;
    }
    if (nb <= 0 || nt <= 0 || steps < 1 || warmup < 0 ||
        (strcmp(cuts, "all") && strcmp(cuts, "none")) ||
        (strcmp(models, "ctr") && strcmp(models, "mlp") && strcmp(models, "both"))) {
        usage(stderr);
        return 2;
    }
    const char *python = getenv("ERASE_TORCH_PYTHON") ? getenv("ERASE_TORCH_PYTHON") : "/usr/bin/python3";
    const char *script = ERASE_SRCDIR "/bench/torch_ctr.py";

    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = kind;
    dopt.blas_threads = 1;
    erase_device_t *dev = bench_open_device("model", &dopt, 1);
    if (!dev)
        return 1;
    erase_stream_t *s;
    ERASE_MUST(erase_stream_create(dev, &s));
    double peak[8];
    for (int t = 0; t < nt; t++) {
        ERASE_MUST(erase_device_set_blas_threads(dev, threads[t]));
        bench_spread_t gf = sgemm_peak(dev, s);
        peak[t] = gf.median;
        printf("# SGEMM 1024^3 on %d thread%s: %.1f GFLOP/s (median; min %.1f, max %.1f)\n", threads[t],
               threads[t] > 1 ? "s" : "", gf.median, gf.min, gf.max);
        char what[64];
        snprintf(what, sizeof what, "SGEMM 1024^3 on %d thread%s", threads[t], threads[t] > 1 ? "s" : "");
        bench_spread_check(gf, what, "GFLOP/s");
    }
    printf("%-5s %6s %7s %12s %12s %9s %9s %9s %10s %7s %12s %8s\n", "model", "batch", "threads",
           "samples/s", "p90", "min_ms", "step_ms", "max_ms", "GEMM_GF/s", "%sgemm", "torch_s/s", "x_torch");
    for (int m = 0; m < 2; m++) {
        if (strcmp(models, "both") && strcmp(models, m == 0 ? "ctr" : "mlp"))
            continue;
        erase_model_config_t cfg = erase_model_config_default(m == 0 ? ERASE_MODEL_CTR : ERASE_MODEL_MLP);
        if (!strcmp(cuts, "none"))
            cfg.cut_mask = 0;
        erase_optim_config_t ocfg = erase_optim_config_default();
        for (int bi = 0; bi < nb; bi++) {
            erase_network_t *net;
            erase_optimizer_t *opt;
            erase_batch_t batch;
            ERASE_MUST(erase_network_create(dev, &cfg, batches[bi], &net));
            ERASE_MUST(erase_optimizer_create(net, &ocfg, &opt));
            ERASE_MUST(erase_batch_random(net, batches[bi], 7, &batch));
            for (int t = 0; t < nt; t++) {
                ERASE_MUST(erase_device_set_blas_threads(dev, threads[t]));
                double *qps = malloc(sizeof(double) * (size_t)steps), *ms = malloc(sizeof(double) * (size_t)steps);
                for (int i = 0; i < warmup + steps; i++) {
                    double t0 = erase_now_s();
                    ERASE_MUST(erase_train_step_serial(net, opt, s, &batch));
                    ERASE_MUST(erase_stream_synchronize(s));
                    double dt = erase_now_s() - t0;
                    if (i >= warmup) {
                        qps[i - warmup] = batches[bi] / dt;
                        ms[i - warmup] = dt * 1e3;
                    }
                }
                double p50 = erase_quantile(qps, (size_t)steps, 0.5), p90 = erase_quantile(qps, (size_t)steps, 0.9);
                bench_spread_t sp = bench_spread(ms, (size_t)steps);
                double step_ms = sp.median;
                double gf = step_gemm_flop(&cfg, batches[bi]) / (step_ms * 1e-3) / 1e9;
                double tq = torch ? torch_point(python, script, m == 0 ? "ctr" : "mlp", batches[bi], threads[t], steps, kind) : 0;
                char tcol[32] = "-", rcol[32] = "-";
                if (tq > 0) {
                    snprintf(tcol, sizeof tcol, "%.0f", tq);
                    snprintf(rcol, sizeof rcol, "%.2fx", p50 / tq);
                }
                printf("%-5s %6d %7d %12.0f %12.0f %9.2f %9.2f %9.2f %10.1f %6.0f%% %12s %8s\n",
                       m == 0 ? "ctr" : "mlp", batches[bi], threads[t], p50, p90, sp.min, step_ms, sp.max, gf,
                       100.0 * gf / peak[t], tcol, rcol);
                char what[64];
                snprintf(what, sizeof what, "%s batch %d on %d thread%s", m == 0 ? "ctr" : "mlp", batches[bi],
                         threads[t], threads[t] > 1 ? "s" : "");
                bench_spread_check(sp, what, "ms");
                fflush(stdout);
                free(qps);
                free(ms);
            }
            erase_batch_free_random(net, &batch);
            erase_optimizer_destroy(opt);
            erase_network_destroy(net);
        }
    }
    erase_stream_destroy(s);
    erase_device_close(dev);
    return 0;
}

/*
 * erase-bench subnormal: does training slow down once the model fits its
 * data? The ctr (or mlp) model trains with the reference single-stream step
 * (lib/nn/train_step.h) on one fixed random batch, again and again, so it
 * memorizes it: its losses go to 0 and its gradients reach subnormal floats
 * (below 1.2e-38), on which SSE/AVX operations take a slow microcode path
 * unless flush-to-zero is on (lib/core/fpmode.h; ERASE_FTZ=0 turns it off).
 * Reported: samples/s of each step (min / median / max) over an early window
 * (after warm-up, before the fit) and over the last window, the ratio
 * late / early of the medians, and along the way the main loss and the share
 * of gradient elements that are subnormal or zero. The same per CPU second
 * of the process (samples / CPU time of the step, all threads): on a machine
 * that other work shares, wall-clock speed moves with the load, CPU time
 * much less; --min-ratio judges that ratio.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "lib/core/fpmode.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/train_step.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Shares of the gradient elements of every block that are subnormal and
 * zero, from their bits (this thread may read subnormals as zero). */
static void grad_shares(erase_device_t *dev, erase_network_t *net, double *subnormal, double *zero)
{
    size_t total = 0, sub = 0, zeros = 0;
    for (int b = 0; b < erase_network_blocks(net); b++) {
        size_t n = 0;
        const float *g = erase_network_block_grads(net, b, &n);
        if (!g || n == 0)
            continue;
        uint32_t *bits = malloc(n * sizeof *bits);
        if (!bits)
            erase_fatal(__FILE__, __LINE__, "allocate a copy of the gradients", ERASE_ERR_NOMEM);
        ERASE_MUST(erase_memcpy_sync(dev, bits, g, n * sizeof *bits));
        for (size_t i = 0; i < n; i++) {
            uint32_t m = bits[i] & 0x7fffffffu;
            zeros += m == 0;
            sub += m != 0 && m < 0x00800000u; /* exponent 0, fraction not 0 */
        }
        total += n;
        free(bits);
    }
    *subnormal = total ? (double)sub / total : 0;
    *zero = total ? (double)zeros / total : 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench subnormal [--model ctr|mlp] [--batch N] [--steps N] [--window N]\n"
               "                             [--threads N] [--min-ratio R]\n"
               "  defaults: --model ctr --batch 256 --steps 3000 --window 200 --threads 1\n"
               "  trains on one fixed random batch until the model memorizes it, and compares\n"
               "  samples/s of an early window (steps 10 .. 10+window) with the last window\n"
               "  --min-ratio R  exit 1 if late/early (medians, samples per CPU second) is below R\n"
               "  ERASE_FTZ=0 in the environment keeps subnormal floats (no flush-to-zero)\n");
}

/* "early" or "late" window: min / median / max of qps (samples per `unit`);
 * returns the median. */
static double report_window(const char *name, const char *unit, int first, double *qps, int n)
{
    double lo = qps[0], hi = qps[0];
    for (int i = 1; i < n; i++) {
        lo = qps[i] < lo ? qps[i] : lo;
        hi = qps[i] > hi ? qps[i] : hi;
    }
    double med = erase_quantile(qps, (size_t)n, 0.5);
    printf("%-5s steps %6d..%-6d samples/%-7s min %9.0f  median %9.0f  max %9.0f\n", name, first,
           first + n - 1, unit, lo, med, hi);
    return med;
}

int bench_subnormal(int argc, char **argv)
{
    const char *model = "ctr";
    int batch = 256, steps = 3000, window = 200, threads = 1;
    double min_ratio = 0;
    static const struct option opts[] = { { "model", required_argument, 0, 'm' },
                                          { "batch", required_argument, 0, 'b' },
                                          { "steps", required_argument, 0, 'n' },
                                          { "window", required_argument, 0, 'w' },
                                          { "threads", required_argument, 0, 't' },
                                          { "min-ratio", required_argument, 0, 'r' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'b': batch = atoi(optarg); break;
        case 'n': steps = atoi(optarg); break;
        case 'w': window = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'r': min_ratio = atof(optarg); break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench subnormal", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench subnormal", argv[optind]);
    enum { WARMUP = 10 };
    if (optind < argc || (strcmp(model, "ctr") && strcmp(model, "mlp")) || batch < 1 ||
        batch > 1 << 20 || window < 1 || threads < 1 || min_ratio < 0 || window > steps / 4 ||
        steps > 100000000 - WARMUP) {
        fprintf(stderr, "erase-bench subnormal: bad options (need --window <= --steps / 4)\n");
        usage(stderr);
        return 2;
    }
    erase_device_options_t dopt = erase_device_options_default();
    dopt.blas_threads = threads;
    erase_device_t *dev = bench_open_device("subnormal", &dopt, 1);
    if (!dev)
        return 1;
    erase_model_config_t cfg = erase_model_config_default(!strcmp(model, "ctr") ? ERASE_MODEL_CTR
                                                                                : ERASE_MODEL_MLP);
    erase_optim_config_t ocfg = erase_optim_config_default();
    erase_stream_t *s;
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_batch_t data;
    ERASE_MUST(erase_stream_create(dev, &s));
    ERASE_MUST(erase_network_create(dev, &cfg, batch, &net));
    ERASE_MUST(erase_optimizer_create(net, &ocfg, &opt));
    ERASE_MUST(erase_batch_random(net, batch, 7, &data));
    int blocks = erase_network_blocks(net);
    float *losses = malloc(sizeof(float) * (size_t)blocks);
    double *qps = malloc(sizeof(double) * (size_t)(WARMUP + steps));
    double *cpu = malloc(sizeof(double) * (size_t)(WARMUP + steps));
    if (!losses || !qps || !cpu)
        erase_fatal(__FILE__, __LINE__, "allocate the measurements", ERASE_ERR_NOMEM);
    printf("# %s, batch %d, one fixed random batch for %d steps, %d BLAS thread%s\n", model, batch,
           WARMUP + steps, erase_device_blas_threads(dev), erase_device_blas_threads(dev) > 1 ? "s" : "");
    printf("%8s %12s %14s %12s %9s\n", "step", "main_loss", "samples/s_p50", "grad_subnorm", "grad_zero");
    int report = (WARMUP + steps) / 10;
    for (int i = 0; i < WARMUP + steps; i++) {
        double t0 = erase_now_s(), c0 = erase_cpu_s();
        ERASE_MUST(erase_train_step_serial(net, opt, s, &data));
        ERASE_MUST(erase_stream_synchronize(s));
        qps[i] = batch / (erase_now_s() - t0);
        cpu[i] = batch / (erase_cpu_s() - c0);
        if ((i + 1) % report == 0) {
            double sub, zero;
            ERASE_MUST(erase_network_read_losses(net, losses));
            grad_shares(dev, net, &sub, &zero);
            double tmp[4096];
            int n = report < 4096 ? report : 4096;
            memcpy(tmp, qps + i + 1 - n, sizeof(double) * (size_t)n);
            printf("%8d %12.4g %14.0f %11.3f%% %8.2f%%\n", i + 1, (double)losses[blocks - 1],
                   erase_quantile(tmp, (size_t)n, 0.5), 100 * sub, 100 * zero);
            fflush(stdout);
        }
    }
    int last = WARMUP + steps - window;
    double early = report_window("early", "s", WARMUP, qps + WARMUP, window);
    double late = report_window("late", "s", last, qps + last, window);
    double early_cpu = report_window("early", "cpu_s", WARMUP, cpu + WARMUP, window);
    double late_cpu = report_window("late", "cpu_s", last, cpu + last, window);
    double ratio = late_cpu / early_cpu;
    printf("ratio late/early %.2f (samples/s), %.2f (samples/cpu_s) (%s)\n", late / early, ratio,
           erase_fp_flush_describe());
    free(cpu);
    free(qps);
    free(losses);
    erase_batch_free_random(net, &data);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    erase_stream_destroy(s);
    erase_device_close(dev);
    if (ratio < min_ratio) {
        fprintf(stderr, "erase-bench subnormal: late/early %.2f (samples per CPU second) is below --min-ratio %.2f\n",
                ratio, min_ratio);
        return 1;
    }
    return 0;
}

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
 *
 * --model gpt: training tokens/s of the gpt model without cuts (issue 15's
 * sizes S and M, or any), min, median and max over the timed steps, its
 * MFU (FLOPs per token 6N + 12LCT over `threads` times the 1-thread SGEMM
 * peak, measured before each repeat), and with --torch bench/gpt_torch.py's
 * figures of the same model, interleaved with erase's repeat by repeat.
 *
 * --model nanochat (issue 34): the same for nanochat's model (no cuts;
 * --size DEPTH gives nanochat's sizes of that depth, context 256, vocab
 * 256, batch 8), FLOPs per token 6N + 12LCT with N without the token
 * embedding, and with --torch bench/nanochat_torch.py (the reference model
 * of tests/reference/make_nanochat_reference.py, AdamW, eager).
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "config.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/train_step.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SGEMM GFLOP/s of 1024^3 on the device's current thread count: the
 * spread of 5 samples of 3 products each (erase_device_sgemm_peak). */
static bench_spread_t sgemm_peak(erase_device_t *dev, erase_stream_t *s)
{
    double gf[5];
    ERASE_MUST(erase_device_sgemm_peak(dev, s, 5, gf));
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

/* --torch: that `python` imports torch, found before erase's half of the
 * benchmark runs (minutes), not after it; 0, or -1 having said why. */
static int torch_importable(const char *python)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", python);
    int rc = system(cmd);
    if (rc == 0)
        return 0;
    fprintf(stderr, "erase-bench model: --torch: %s cannot import torch (PyTorch 2.x from PyPI in a venv: activate "
                    "it, or set ERASE_TORCH_PYTHON to its python; or drop --torch)\n", python);
    return -1;
}

/* A size of the gpt model (issue 15's S and M, or any) or of nanochat's
 * (a depth, or any). */
typedef struct {
    char name[8];
    int layers, width, heads, context, batch, vocab;
} gpt_size_t;

static const gpt_size_t gpt_sizes[] = { { "S", 4, 128, 4, 64, 16, 256 }, { "M", 6, 384, 6, 256, 8, 256 } };

/* --size S, M or LAYERS,WIDTH,HEADS,CONTEXT,VOCAB (batch: the size's, or
 * 16); 0, or -1 for anything else (widths not a multiple of heads too). */
static int gpt_size_parse(const char *text, gpt_size_t *z)
{
    for (size_t i = 0; i < sizeof gpt_sizes / sizeof gpt_sizes[0]; i++)
        if (!strcmp(text, gpt_sizes[i].name)) {
            *z = gpt_sizes[i];
            return 0;
        }
    int v[5];
    if (bench_parse_list(text, v, 5) != 5 || v[1] % v[2])
        return -1;
    *z = (gpt_size_t){ "custom", v[0], v[1], v[2], v[3], 16, v[4] };
    return 0;
}

/* nanochat's --size: DEPTH (1..32; width, heads as
 * erase_model_config_nanochat_depth, context 256, vocab 256, batch 8, name
 * "dDEPTH") or LAYERS,WIDTH,HEADS,CONTEXT,VOCAB (batch 16); 0, or -1. */
static int nanochat_size_parse(const char *text, gpt_size_t *z)
{
    char *end;
    long depth = strtol(text, &end, 10);
    if (*end == 0 && depth >= 1 && depth <= 32) {
        erase_model_config_t c = erase_model_config_default(ERASE_MODEL_NANOCHAT);
        erase_model_config_nanochat_depth(&c, (int)depth);
        *z = (gpt_size_t){ "", c.nanochat.layers, c.nanochat.width, c.nanochat.heads, 256, 8, 256 };
        snprintf(z->name, sizeof z->name, "d%ld", depth);
        return 0;
    }
    return *end == 0 ? -1 : gpt_size_parse(text, z);
}

/* The number after `"key": ` in the JSON line, or -1 if absent. */
static double json_number(const char *line, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(line, k);
    return p ? atof(p + strlen(k)) : -1;
}

/* One run of bench/gpt_torch.py: tokens/s median, min, max in tok[0..3)
 * and its torch version in `version`; 0, or -1 when it printed no figures. */
static int torch_gpt_point(const char *python, const char *script, const gpt_size_t *z, int threads, int steps,
                           int warmup, erase_device_kind_t kind, double tok[3], char *version, size_t vsize)
{
    char cmd[4096], line[2048];
    /* on a GPU: PyTorch eager on the same GPU, its own BLAS setup */
    int n = snprintf(cmd, sizeof cmd, "%s %s --layers %d --width %d --heads %d --context %d --vocab %d --batch %d "
             "--threads %d --steps %d --warmup %d%s 2>/dev/null", python, script, z->layers, z->width, z->heads,
             z->context, z->vocab, z->batch, threads, steps, warmup,
             kind == ERASE_DEVICE_CUDA ? " --device cuda --blas-core env" : "");
    FILE *p = n > 0 && (size_t)n < sizeof cmd ? popen(cmd, "r") : NULL;
    if (!p)
        return -1;
    tok[0] = -1;
    while (fgets(line, sizeof line, p)) {
        if (!strstr(line, "\"tokens_per_s_median\": "))
            continue;
        tok[0] = json_number(line, "tokens_per_s_median");
        tok[1] = json_number(line, "tokens_per_s_min");
        tok[2] = json_number(line, "tokens_per_s_max");
        const char *v = strstr(line, "\"torch\": \"");
        if (v)
            snprintf(version, vsize, "%.*s", (int)strcspn(v + 10, "\""), v + 10);
    }
    pclose(p);
    return tok[0] > 0 ? 0 : -1;
}

/* The python of --torch: $ERASE_TORCH_PYTHON, else an activated venv's
 * ($VIRTUAL_ENV/bin/python, where PyTorch 2.x from PyPI lives), else
 * Debian's /usr/bin/python3. */
static const char *torch_python(char *buf, size_t size)
{
    if (getenv("ERASE_TORCH_PYTHON"))
        return getenv("ERASE_TORCH_PYTHON");
    if (getenv("VIRTUAL_ENV")) {
        snprintf(buf, size, "%s/bin/python", getenv("VIRTUAL_ENV"));
        return buf;
    }
    return "/usr/bin/python3";
}

/* The language model of size z, no cuts: gpt, or nanochat (kv_heads =
 * heads, softcap 15). */
static erase_model_config_t lm_config(erase_model_kind_t model, const gpt_size_t *z)
{
    erase_model_config_t cfg = erase_model_config_default(model);
    cfg.cut_mask = 0;
    if (model == ERASE_MODEL_NANOCHAT) {
        cfg.nanochat.layers = z->layers;
        cfg.nanochat.width = z->width;
        cfg.nanochat.heads = cfg.nanochat.kv_heads = z->heads;
        cfg.nanochat.context = z->context;
        cfg.nanochat.vocab = z->vocab;
    } else {
        cfg.gpt.layers = z->layers;
        cfg.gpt.width = z->width;
        cfg.gpt.heads = z->heads;
        cfg.gpt.context = z->context;
        cfg.gpt.vocab = z->vocab;
    }
    return cfg;
}

/*
 * erase-bench model --model gpt or nanochat: for each of `repeats`
 * repeats, for each thread count, `warmup` + `steps` training steps of
 * erase's model (no cuts, the serial step: mode off; AdamW lr 1e-3, no
 * weight decay) on one random batch, then (with --torch) bench/gpt_torch.py
 * or bench/nanochat_torch.py on the same point. Prints a row per thread
 * count: erase's tokens/s min and max over every timed step, the median of
 * the repeats' medians, MFU; PyTorch's min, max and median of medians, its
 * MFU and the ratio of the medians.
 */
static int bench_gpt(erase_device_t *dev, erase_stream_t *s, erase_model_kind_t model, const gpt_size_t *z,
                     const int *threads, int nt, int steps, int warmup, int repeats, int torch,
                     erase_device_kind_t kind)
{
    char pybuf[1024], version[64] = "?";
    const char *python = torch_python(pybuf, sizeof pybuf);
    if (torch && torch_importable(python) != 0)
        return 1;
    int nano = model == ERASE_MODEL_NANOCHAT;
    const char *name = nano ? "nanochat" : "gpt";
    const char *script = nano ? ERASE_SRCDIR "/bench/nanochat_torch.py" : ERASE_SRCDIR "/bench/gpt_torch.py";
    printf("# %s %s: %d layers, width %d, %d heads, context %d, vocab %d, batch %d, no cuts, mode off\n", name,
           z->name, z->layers, z->width, z->heads, z->context, z->vocab, z->batch);

    erase_model_config_t cfg = lm_config(model, z);
    erase_optim_config_t ocfg = erase_optim_config_default();
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_batch_t batch;
    erase_status_t st = erase_network_create(dev, &cfg, z->batch, &net);
    if (st != ERASE_OK) {
        fprintf(stderr, "erase-bench model: %s %s: %s\n", name, z->name, erase_error_message());
        return 1;
    }
    /* as nanoGPT and PaLM count them (erase_network_flops_per_sample) */
    double fpt = erase_network_flops_per_sample(net) / z->context;
    printf("# FLOPs per token 6N + 12LCT = %.0f (N = %.0f parameters without the %s embedding)\n", fpt,
           (fpt - 12.0 * z->layers * z->width * z->context) / 6, nano ? "token" : "position");
    ERASE_MUST(erase_optimizer_create(net, &ocfg, &opt));
    ERASE_MUST(erase_batch_random(net, z->batch, 7, &batch));
    size_t per = (size_t)steps * (size_t)repeats;
    double *tok = calloc(per * (size_t)nt, sizeof(double)), *med = calloc((size_t)(repeats * nt), sizeof(double));
    double *tmed = calloc((size_t)(repeats * nt), sizeof(double)), *tmin = calloc((size_t)nt, sizeof(double));
    double *tmax = calloc((size_t)nt, sizeof(double));
    double *peaks = calloc((size_t)repeats, sizeof(double));
    if (!tok || !med || !tmed || !tmin || !tmax || !peaks)
        erase_fatal(__FILE__, __LINE__, "allocate the samples", ERASE_ERR_NOMEM);
    int torch_ok = torch;
    double tokens = (double)z->batch * z->context;
    for (int r = 0; r < repeats; r++) {
        /* the peak, a sample before each repeat: a busy spell lowers it and the steps alike */
        ERASE_MUST(erase_device_set_blas_threads(dev, 1));
        peaks[r] = sgemm_peak(dev, s).median;
        for (int t = 0; t < nt; t++) {
            ERASE_MUST(erase_device_set_blas_threads(dev, threads[t]));
            double *x = tok + (size_t)t * per + (size_t)r * (size_t)steps;
            for (int i = 0; i < warmup + steps; i++) {
                double t0 = erase_now_s();
                ERASE_MUST(erase_train_step_serial(net, opt, s, &batch));
                ERASE_MUST(erase_stream_synchronize(s));
                if (i >= warmup)
                    x[i - warmup] = tokens / (erase_now_s() - t0);
            }
            double copy[steps];
            memcpy(copy, x, sizeof copy);
            med[t * repeats + r] = erase_quantile(copy, (size_t)steps, 0.5);
            double tq[3];
            if (torch_ok && torch_gpt_point(python, script, z, threads[t], steps, warmup, kind, tq,
                                            version, sizeof version) != 0) {
                fprintf(stderr, "erase-bench model: --torch: %s %s printed no tokens/s (is PyTorch installed "
                        "for it? ERASE_TORCH_PYTHON names another python)\n", python, script);
                torch_ok = 0;
            }
            if (torch_ok) {
                tmed[t * repeats + r] = tq[0];
                tmin[t] = r == 0 || tq[1] < tmin[t] ? tq[1] : tmin[t];
                tmax[t] = r == 0 || tq[2] > tmax[t] ? tq[2] : tmax[t];
            }
        }
    }
    bench_spread_t gf = bench_spread(peaks, (size_t)repeats);
    double peak = gf.median;
    printf("# peak: SGEMM 1024^3 on 1 thread %.1f GFLOP/s (median of a sample before each repeat; min %.1f, "
           "max %.1f); MFU over threads x peak\n", gf.median, gf.min, gf.max);
    bench_spread_check(gf, "SGEMM 1024^3 on 1 thread", "GFLOP/s");
    if (torch_ok)
        printf("# torch: %s %s, PyTorch %s (interleaved with erase, repeat by repeat)\n", python, script, version);
    printf("%-8s %6s %6s %7s %9s %9s %9s %9s %6s %9s %9s %9s %9s %8s\n", "model", "size", "batch", "threads",
           "tok/s_min", "tok/s", "tok/s_max", "step_ms", "MFU", "torch_min", "torch", "torch_max", "torch_MFU",
           "x_torch");
    for (int t = 0; t < nt; t++) {
        bench_spread_t sp = bench_spread(tok + (size_t)t * per, per);
        double m = erase_quantile(med + t * repeats, (size_t)repeats, 0.5);
        double mfu = 100.0 * fpt * m / (threads[t] * peak * 1e9);
        char tc[4][32] = { "-", "-", "-", "-" }, rc[32] = "-";
        if (torch_ok) {
            double tm = erase_quantile(tmed + t * repeats, (size_t)repeats, 0.5);
            snprintf(tc[0], sizeof tc[0], "%.0f", tmin[t]);
            snprintf(tc[1], sizeof tc[1], "%.0f", tm);
            snprintf(tc[2], sizeof tc[2], "%.0f", tmax[t]);
            snprintf(tc[3], sizeof tc[3], "%.1f%%", 100.0 * fpt * tm / (threads[t] * peak * 1e9));
            snprintf(rc, sizeof rc, "%.2fx", m / tm);
        }
        printf("%-8s %6s %6d %7d %9.0f %9.0f %9.0f %9.2f %5.1f%% %9s %9s %9s %9s %8s\n", name, z->name, z->batch,
               threads[t], sp.min, m, sp.max, tokens / m * 1e3, mfu, tc[0], tc[1], tc[2], tc[3], rc);
        char what[64];
        snprintf(what, sizeof what, "%s %s on %d thread%s", name, z->name, threads[t], threads[t] > 1 ? "s" : "");
        bench_spread_check(sp, what, "tokens/s");
    }
    free(tok);
    free(med);
    free(tmed);
    free(tmin);
    free(tmax);
    free(peaks);
    erase_batch_free_random(net, &batch);
    erase_optimizer_destroy(opt);
    erase_network_destroy(net);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench model [--model ctr|mlp|both|gpt|nanochat] [--batch LIST] [--threads LIST]\n"
               "                         [--steps N] [--warmup N] [--cuts all|none] [--torch]\n"
               "                         [--device cpu|cuda] [--size S|M|DEPTH|L,C,H,T,V] [--repeats R]\n"
               "                         [--hotness 1|mlperf]\n"
               "  defaults: both models, --batch 256,1024,4096,8192 --threads 1,2 --steps 20 --warmup 3\n"
               "            --device cpu\n"
               "  --torch     also time bench/torch_ctr.py (PyTorch) on the same points (the python:\n"
               "              ERASE_TORCH_PYTHON, else $VIRTUAL_ENV/bin/python, else /usr/bin/python3)\n"
               "  --model gpt training tokens/s of the gpt model, no cuts, mode off: min, median, max;\n"
               "              MFU (FLOPs per token 6N + 12LCT over threads x the 1-thread SGEMM peak);\n"
               "              --size S (4 layers, width 128, 4 heads, context 64, batch 16, vocab 256),\n"
               "              M (6, 384, 6, 256, batch 8, vocab 256) or layers,width,heads,context,vocab\n"
               "              (--batch: one batch size); --repeats R (default 3) interleaved repeats;\n"
               "              defaults --steps 10; --torch runs bench/gpt_torch.py between erase's\n"
               "              repeats\n"
               "  --model nanochat  the same for nanochat's model: --size DEPTH (default 4: width 64 x DEPTH,\n"
               "              heads ceil(width / 128), context 256, vocab 256, batch 8) or l,w,h,t,v;\n"
               "              --torch runs bench/nanochat_torch.py\n"
               "  --hotness mlperf  ctr with MLPerf's multi-hot sizes (docs/models.md; sum pooling, random\n"
               "              lengths 1 .. hotness, 120 ids per sample on average); not with --torch\n");
}

int bench_model(int argc, char **argv)
{
    const char *models = "both", *batch_text = "256,1024,4096,8192", *thread_text = "1,2", *cuts = "all";
    const char *device = "cpu", *size = NULL, *hotness = "1";
    int steps = -1, warmup = 3, torch = 0, repeats = 3, batch_given = 0;
    static const struct option opts[] = { { "model", required_argument, 0, 'm' },
                                          { "batch", required_argument, 0, 'b' },
                                          { "threads", required_argument, 0, 't' },
                                          { "steps", required_argument, 0, 'n' },
                                          { "warmup", required_argument, 0, 'w' },
                                          { "cuts", required_argument, 0, 'c' },
                                          { "torch", no_argument, 0, 'T' },
                                          { "device", required_argument, 0, 'd' },
                                          { "size", required_argument, 0, 'z' },
                                          { "repeats", required_argument, 0, 'r' },
                                          { "hotness", required_argument, 0, 'H' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': models = optarg; break;
        case 'b': batch_text = optarg; batch_given = 1; break;
        case 't': thread_text = optarg; break;
        case 'n': steps = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'c': cuts = optarg; break;
        case 'T': torch = 1; break;
        case 'd': device = optarg; break;
        case 'z': size = optarg; break;
        case 'r': repeats = atoi(optarg); break;
        case 'H': hotness = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench model", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench model", argv[optind]);
    int batches[16], threads[8];
    int nb = bench_parse_list(batch_text, batches, 16), nt = bench_parse_list(thread_text, threads, 8);
    erase_device_kind_t kind;
    if (bench_parse_device(device, &kind) != 0) {
        fprintf(stderr, "erase-bench model: --device %s: expected cpu or cuda\n", device);
        return 2;
    }
    int nano = !strcmp(models, "nanochat"), gpt = nano || !strcmp(models, "gpt");
    gpt_size_t z;
    if (steps == -1)
        steps = gpt ? 10 : 20;
    if (!size)
        size = nano ? "4" : "S";
    if (gpt && (nano ? nanochat_size_parse(size, &z) : gpt_size_parse(size, &z)) != 0) {
        fprintf(stderr, "erase-bench model: --size %s: expected %s or layers,width,heads,context,vocab "
                "(positive, width a multiple of heads)\n", size, nano ? "a depth 1..32" : "S, M");
        return 2;
    }
    if (gpt && batch_given && nb != 1) {
        fprintf(stderr, "erase-bench model: --batch %s: --model %s takes one batch size\n", batch_text, models);
        return 2;
    }
    if (nb <= 0 || nt <= 0 || steps < 1 || warmup < 0 || repeats < 1 ||
        (strcmp(cuts, "all") && strcmp(cuts, "none")) || (strcmp(hotness, "1") && strcmp(hotness, "mlperf")) ||
        (!strcmp(hotness, "mlperf") && torch) ||
        (strcmp(models, "ctr") && strcmp(models, "mlp") && strcmp(models, "both") && !gpt)) {
        usage(stderr);
        return 2;
    }
    if (gpt && batch_given)
        z.batch = batches[0];
    char pybuf[1024];
    const char *python = torch_python(pybuf, sizeof pybuf);
    const char *script = ERASE_SRCDIR "/bench/torch_ctr.py";
    if (torch && !gpt && torch_importable(python) != 0)
        return 1;

    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = kind;
    dopt.blas_threads = 1;
    erase_device_t *dev = bench_open_device("model", &dopt, 1);
    if (!dev)
        return 1;
    erase_stream_t *s;
    ERASE_MUST(erase_stream_create(dev, &s));
    if (gpt) {
        int rc = bench_gpt(dev, s, nano ? ERASE_MODEL_NANOCHAT : ERASE_MODEL_GPT, &z, threads, nt, steps, warmup,
                           repeats, torch, kind);
        erase_stream_destroy(s);
        erase_device_close(dev);
        return rc;
    }
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
        if (m == 0 && !strcmp(hotness, "mlperf")) /* multi-hot (issue 35) */
            memcpy(cfg.ctr.hotness, (const uint32_t[ERASE_CTR_FIELDS])ERASE_CTR_HOTNESS_MLPERF, sizeof cfg.ctr.hotness);
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
                double gf = bench_step_gemm_flop(&cfg, batches[bi]) / (step_ms * 1e-3) / 1e9;
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

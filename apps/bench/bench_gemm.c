/*
 * erase-bench gemm: SGEMM throughput of the device layer (one stream) for a
 * list of shapes, on 1 and 2 BLAS threads: the time of each sample (min,
 * median, max), GFLOP/s of the median, and its share of the FMA peak of as
 * many cores, measured between the GEMM samples (so a busy machine slows
 * both alike: the share stays a share), with a warning when the samples
 * spread too far.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    erase_stream_t *s;
    int m, n, k;
    float *a, *b, *c;
} gemm_job_t;

static void run_gemm(void *p)
{
    gemm_job_t *j = p;
    ERASE_MUST(erase_sgemm(j->s, ERASE_NO_TRANS, ERASE_NO_TRANS, j->m, j->n, j->k, 1.0f, j->a, j->k,
                           j->b, j->n, 0.0f, j->c, j->n));
    ERASE_MUST(erase_stream_synchronize(j->s));
}

/* "512x256x256" or "1024" (square). */
static int parse_shape(const char *t, int *m, int *n, int *k)
{
    if (sscanf(t, "%dx%dx%d", m, n, k) == 3 && *m > 0 && *n > 0 && *k > 0)
        return 0;
    char *end;
    long v = strtol(t, &end, 10);
    if (*end || v <= 0 || v > 1 << 15)
        return -1;
    *m = *n = *k = (int)v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench gemm [--shapes LIST] [--threads LIST] [--samples N]\n"
               "  --shapes LIST   comma-separated MxNxK or N (square); default 256,512,1024,512x256x256\n"
               "  --threads LIST  BLAS threads to measure; default 1,2\n"
               "  --samples N     timed samples per point (min, median, max), each followed by\n"
               "                  a sample of the FMA peak on as many threads; default 7\n");
}

int bench_gemm(int argc, char **argv)
{
    const char *shapes = "256,512,1024,512x256x256", *threads_text = "1,2";
    int samples = 7;
    static const struct option opts[] = { { "shapes", required_argument, 0, 's' },
                                          { "threads", required_argument, 0, 't' },
                                          { "samples", required_argument, 0, 'n' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
        switch (c) {
        case 's': shapes = optarg; break;
        case 't': threads_text = optarg; break;
        case 'n': samples = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench gemm", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench gemm", argv[optind]);
    int threads[8];
    int nthreads = bench_parse_list(threads_text, threads, 8);
    if (nthreads <= 0 || samples < 1) {
        fprintf(stderr, "erase-bench gemm: bad --threads '%s' or --samples %d\n", threads_text, samples);
        return 2;
    }
    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = ERASE_DEVICE_CPU;
    dopt.blas_threads = 1;
    erase_device_t *dev = bench_open_device("gemm", &dopt, 1);
    if (!dev)
        return 1;
    erase_stream_t *s;
    ERASE_MUST(erase_stream_create(dev, &s));
    const char *isa;
    bench_fma_peak_gflops(1, &isa);
    printf("# peak: %s loop on as many threads as the GEMM, a sample after each GEMM sample (median)\n", isa);
    printf("%-16s %8s %10s %10s %10s %10s %10s %7s\n", "shape(MxNxK)", "threads", "min_ms", "median_ms",
           "max_ms", "GFLOP/s", "peak_GF/s", "%peak");
    double *sm = malloc(sizeof(double) * (size_t)samples), *pk = malloc(sizeof(double) * (size_t)samples);
    if (!sm || !pk)
        erase_fatal(__FILE__, __LINE__, "allocate the samples", ERASE_ERR_NOMEM);

    char *list = strdup(shapes);
    int status = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        gemm_job_t j = { .s = s };
        if (parse_shape(tok, &j.m, &j.n, &j.k) != 0) {
            fprintf(stderr, "erase-bench gemm: bad shape '%s' (expected MxNxK or N)\n", tok);
            status = 2;
            break;
        }
        size_t na = (size_t)j.m * j.k, nb = (size_t)j.k * j.n;
        float *host = malloc(sizeof(float) * (na > nb ? na : nb));
        if (!host)
            erase_fatal(__FILE__, __LINE__, "allocate the GEMM inputs", ERASE_ERR_NOMEM);
        for (size_t i = 0; i < na; i++)
            host[i] = (float)(i % 13) * 0.01f;
        j.a = bench_device_floats(dev, host, na);
        for (size_t i = 0; i < nb; i++)
            host[i] = (float)(i % 7) * 0.01f;
        j.b = bench_device_floats(dev, host, nb);
        free(host);
        ERASE_MUST(erase_malloc(dev, sizeof(float) * (size_t)j.m * j.n, (void **)&j.c));
        double flop = 2.0 * j.m * j.n * j.k;
        for (int t = 0; t < nthreads; t++) {
            ERASE_MUST(erase_device_set_blas_threads(dev, threads[t]));
            int used = erase_device_blas_threads(dev);
            /* about 20 ms a sample: the repeat count from a timed warm-up
             * call (a tiny GEMM is bound by the stream's launch and
             * synchronisation, not by its FLOPs: counting from FLOPs alone
             * gave 16x8x4 two million calls, minutes a sample) */
            double once = bench_seconds(run_gemm, &j, 1);
            int reps = once > 0 ? (int)(0.020 / once) : 1;
            if (reps < 1)
                reps = 1;
            for (int k = 0; k < samples; k++) { /* interleaved: GEMM, peak, GEMM, peak, ... */
                sm[k] = bench_seconds(run_gemm, &j, reps) / reps * 1e3;
                pk[k] = bench_fma_peak_gflops(used, &isa);
            }
            bench_spread_t ms = bench_spread(sm, (size_t)samples), peak = bench_spread(pk, (size_t)samples);
            double gflops = flop / (ms.median * 1e-3) / 1e9;
            char shape[48], what[96];
            snprintf(shape, sizeof shape, "%dx%dx%d", j.m, j.n, j.k);
            printf("%-16s %8d %10.3f %10.3f %10.3f %10.1f %10.1f %6.0f%%\n", shape, used, ms.min, ms.median,
                   ms.max, gflops, peak.median, peak.median > 0 ? 100.0 * gflops / peak.median : 0.0);
            snprintf(what, sizeof what, "%s on %d thread%s", shape, used, used == 1 ? "" : "s");
            bench_spread_check(ms, what, "ms");
            snprintf(what, sizeof what, "peak on %d thread%s", used, used == 1 ? "" : "s");
            bench_spread_check(peak, what, "GFLOP/s");
            fflush(stdout);
        }
        erase_free(dev, j.a);
        erase_free(dev, j.b);
        erase_free(dev, j.c);
    }
    free(list);
    free(sm);
    free(pk);
    erase_stream_destroy(s);
    erase_device_close(dev);
    return status;
}

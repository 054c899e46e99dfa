/*
 * erase-bench gemm: SGEMM throughput of the device layer (one stream) for a
 * list of shapes, on 1 and 2 BLAS threads, as GFLOP/s (median of samples)
 * and as a share of the measured FMA peak of the cores used.
 */
#include "apps/bench/bench.h"

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
               "  --samples N     timed samples per point, the median is reported; default 7\n");
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
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 's': shapes = optarg; break;
        case 't': threads_text = optarg; break;
        case 'n': samples = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
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
    double peak = bench_fma_peak_gflops(&isa);
    printf("# measured single-core peak: %.1f GFLOP/s (%s)\n", peak, isa);
    printf("%-16s %8s %12s %10s %10s\n", "shape(MxNxK)", "threads", "median_ms", "GFLOP/s", "%peak");

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
        int reps = (int)(2e9 / flop); /* about 20 ms a sample at 100 GFLOP/s */
        if (reps < 1)
            reps = 1;
        for (int t = 0; t < nthreads; t++) {
            ERASE_MUST(erase_device_set_blas_threads(dev, threads[t]));
            int used = erase_device_blas_threads(dev);
            double sec = bench_median_seconds(run_gemm, &j, reps, samples) / reps;
            double gflops = flop / sec / 1e9;
            char shape[48];
            snprintf(shape, sizeof shape, "%dx%dx%d", j.m, j.n, j.k);
            printf("%-16s %8d %12.3f %10.1f %9.0f%%\n", shape, used, sec * 1e3, gflops,
                   peak > 0 ? 100.0 * gflops / (peak * used) : 0.0);
            fflush(stdout);
        }
        erase_free(dev, j.a);
        erase_free(dev, j.b);
        erase_free(dev, j.c);
    }
    free(list);
    erase_stream_destroy(s);
    erase_device_close(dev);
    return status;
}

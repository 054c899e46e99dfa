/*
 * erase-bench streams: can two streams compute at once on this machine?
 * The same GEMM work (J independent MxNxK products) runs
 *   (a) on one stream with 1 BLAS thread,
 *   (b) split over two streams with 1 BLAS thread each,
 *   (c) on one stream with 2 BLAS threads (the single-stream baseline's best),
 * interleaved (a sample of each in turn, so a busy spell slows all three),
 * and the ratios (b)/(a) and (c)/(a) of throughput are reported (medians),
 * with each configuration's min, median and max time and a warning when
 * they spread too far.
 * (b)/(a) near 2 means the streams overlap fully; near 1, not at all.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    erase_stream_t *s[2];
    int nstreams, jobs, m, n, k;
    float *a[2], *b[2], *c[2];
} streams_job_t;

static void run_split(void *p)
{
    streams_job_t *w = p;
    for (int j = 0; j < w->jobs; j++) {
        int i = j % w->nstreams;
        ERASE_MUST(erase_sgemm(w->s[i], ERASE_NO_TRANS, ERASE_NO_TRANS, w->m, w->n, w->k, 1.0f,
                               w->a[i], w->k, w->b[i], w->n, 0.0f, w->c[i], w->n));
    }
    for (int i = 0; i < w->nstreams; i++)
        ERASE_MUST(erase_stream_synchronize(w->s[i]));
}

int bench_streams(int argc, char **argv)
{
    int m = 512, n = 256, k = 256, jobs = 64, samples = 7;
    static const struct option opts[] = { { "shape", required_argument, 0, 's' },
                                          { "jobs", required_argument, 0, 'j' },
                                          { "samples", required_argument, 0, 'n' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
        switch (c) {
        case 's':
            if (sscanf(optarg, "%dx%dx%d", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) {
                fprintf(stderr, "erase-bench streams: bad --shape '%s' (expected MxNxK)\n", optarg);
                return 2;
            }
            break;
        case 'j': jobs = atoi(optarg); break;
        case 'n': samples = atoi(optarg); break;
        case 'h':
            printf("usage: erase-bench streams [--shape MxNxK] [--jobs J] [--samples N]\n"
                   "  defaults: --shape 512x256x256 --jobs 64 --samples 7 (of each configuration, in turn)\n");
            return 0;
        default: return cli_option_error("erase-bench streams", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench streams", argv[optind]);
    if (jobs < 2 || samples < 1) {
        fprintf(stderr, "erase-bench streams: need --jobs >= 2 and --samples >= 1\n");
        return 2;
    }
    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = ERASE_DEVICE_CPU;
    dopt.blas_threads = 1;
    erase_device_t *dev = bench_open_device("streams", &dopt, 1);
    if (!dev)
        return 1;
    streams_job_t w = { .jobs = jobs, .m = m, .n = n, .k = k };
    for (int i = 0; i < 2; i++) {
        ERASE_MUST(erase_stream_create(dev, &w.s[i]));
        size_t na = (size_t)m * k, nb = (size_t)k * n;
        float *host = malloc(sizeof(float) * (na > nb ? na : nb));
        if (!host)
            erase_fatal(__FILE__, __LINE__, "allocate the GEMM inputs", ERASE_ERR_NOMEM);
        for (size_t e = 0; e < na; e++)
            host[e] = (float)(e % 11) * 0.01f;
        w.a[i] = bench_device_floats(dev, host, na);
        for (size_t e = 0; e < nb; e++)
            host[e] = (float)(e % 5) * 0.01f;
        w.b[i] = bench_device_floats(dev, host, nb);
        free(host);
        ERASE_MUST(erase_malloc(dev, sizeof(float) * (size_t)m * n, (void **)&w.c[i]));
    }
    double flop = 2.0 * m * n * k * jobs;
    printf("# work: %d SGEMMs of %dx%dx%d (%.2f GFLOP) per sample, %d samples of each configuration "
           "in turn; GFLOP/s of the median\n", jobs, m, n, k, flop / 1e9, samples);
    printf("%-34s %10s %10s %10s %10s %8s\n", "configuration", "min_ms", "median_ms", "max_ms", "GFLOP/s", "ratio");

    static const struct { const char *name; int streams, threads; } cfg[] = {
        { "1 stream, 1 BLAS thread", 1, 1 },
        { "2 streams, 1 BLAS thread each", 2, 1 },
        { "1 stream, 2 BLAS threads", 1, 2 },
    };
    double *t = malloc(sizeof(double) * 3 * (size_t)samples);
    if (!t)
        erase_fatal(__FILE__, __LINE__, "allocate the samples", ERASE_ERR_NOMEM);
    for (int r = -1; r < samples; r++) /* r = -1: warm-up */
        for (int c = 0; c < 3; c++) {
            ERASE_MUST(erase_device_set_blas_threads(dev, cfg[c].threads));
            w.nstreams = cfg[c].streams;
            double sec = bench_seconds(run_split, &w, 1);
            if (r >= 0)
                t[c * samples + r] = sec * 1e3;
        }
    double base = 0;
    for (int c = 0; c < 3; c++) {
        bench_spread_t ms = bench_spread(t + c * samples, (size_t)samples);
        double gflops = flop / (ms.median * 1e-3) / 1e9;
        if (c == 0)
            base = gflops;
        printf("%-34s %10.2f %10.2f %10.2f %10.1f %7.2fx\n", cfg[c].name, ms.min, ms.median, ms.max, gflops,
               gflops / base);
        bench_spread_check(ms, cfg[c].name, "ms");
    }
    free(t);
    for (int i = 0; i < 2; i++) {
        erase_free(dev, w.a[i]);
        erase_free(dev, w.b[i]);
        erase_free(dev, w.c[i]);
        erase_stream_destroy(w.s[i]);
    }
    erase_device_close(dev);
    return 0;
}

/*
 * erase-bench allreduce: the all-reduce of the MPI communicator (a ring
 * reduce-scatter + all-gather run by a CPU stream's worker) on the ranks of
 * mpirun, reported as nccl-tests reports it:
 *   time   median over samples of the mean time of `iters` back-to-back
 *          all-reduces (one stream, synchronized at the end), slowest rank;
 *          beside it the min and max samples (slowest rank's), and a
 *          warning when they spread too far
 *   algbw  size / time
 *   busbw  algbw * 2(n-1)/n: the bandwidth each rank's links must carry
 *          for an all-reduce of n ranks, comparable across n
 *   #wrong elements differing from the exact sum (small integer inputs),
 *          summed over the ranks
 * Run as `mpirun -np 2 erase-bench allreduce`; it initialises and finalizes
 * the MPI world itself.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "lib/comm/comm.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "4", "64K", "64M", "1G" -> bytes; 0 on error. */
static size_t parse_bytes(const char *t)
{
    char *end;
    unsigned long long v = strtoull(t, &end, 10);
    switch (*end) {
    case 'K': case 'k': v <<= 10; end++; break;
    case 'M': case 'm': v <<= 20; end++; break;
    case 'G': case 'g': v <<= 30; end++; break;
    default: break;
    }
    return *end ? 0 : (size_t)v;
}

/* Input of rank r, element i: small integers, so every sum is exact. */
static float input(int r, size_t i)
{
    return (float)((r * 3 + (int)(i % 7919)) % 9) - 4.0f;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N erase-bench allreduce [--minbytes B] [--maxbytes B] "
               "[--samples N] [--inplace]\n"
               "  --minbytes B  smallest message (K, M, G suffixes); default 4\n"
               "  --maxbytes B  largest message, sizes step x4; default 64M\n"
               "  --samples N   timed samples per size (min, median, max); default 9\n"
               "  --inplace     send == recv (default: out of place)\n"
               "  f32 sum; the world is MPI_COMM_WORLD of mpirun\n");
}

int bench_allreduce(int argc, char **argv)
{
    size_t min_bytes = 4, max_bytes = (size_t)64 << 20;
    int samples = 9, in_place = 0;
    static const struct option opts[] = { { "minbytes", required_argument, 0, 'a' },
                                          { "maxbytes", required_argument, 0, 'b' },
                                          { "samples", required_argument, 0, 'n' },
                                          { "inplace", no_argument, 0, 'i' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    for (int c; (c = getopt_long(argc, argv, ":", opts, NULL)) != -1;) {
        switch (c) {
        case 'a': min_bytes = parse_bytes(optarg); break;
        case 'b': max_bytes = parse_bytes(optarg); break;
        case 'n': samples = atoi(optarg); break;
        case 'i': in_place = 1; break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench allreduce", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench allreduce", argv[optind]);
    if (min_bytes < sizeof(float) || max_bytes < min_bytes || samples < 1) {
        usage(stderr);
        return 2;
    }

    erase_world_t w;
    ERASE_MUST(erase_world_init(&argc, &argv, NULL, &w));
    erase_comm_t *world = erase_world_comm();
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    erase_device_t *dev;
    erase_stream_t *s;
    ERASE_MUST(erase_device_open(&o, &dev));
    ERASE_MUST(erase_stream_create(dev, &s));
    size_t max_count = max_bytes / sizeof(float);
    float *send, *recv;
    ERASE_MUST(erase_malloc(dev, max_count * sizeof(float), (void **)&send));
    ERASE_MUST(erase_malloc(dev, max_count * sizeof(float), (void **)&recv));
    double *t = malloc((size_t)samples * sizeof *t);
    float *host_in = malloc(max_count * sizeof(float)), *host_out = malloc(max_count * sizeof(float));
    if (!t || !host_in || !host_out)
        erase_fatal(__FILE__, __LINE__, "allocate the timings", ERASE_ERR_NOMEM);

    int n = w.size;
    double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
    if (w.rank == 0) {
        char text[512];
        erase_device_describe(dev, text, sizeof text);
        printf("# erase-bench allreduce: %d ranks, %s over MPI on a CPU stream, f32 sum, %s\n", n,
               erase_allreduce_algorithm(erase_world_comm()), in_place ? "in place" : "out of place");
        printf("# device: %s\n", text);
        printf("# time: median of %d samples of the mean of back-to-back all-reduces, slowest "
               "rank; busbw = algbw * 2(n-1)/n\n", samples);
        if (n == 1)
            printf("# one rank: run under mpirun -np N for a real all-reduce\n");
        printf("%12s %12s %6s %6s %11s %11s %11s %12s %12s %8s\n", "size(B)", "count", "type", "redop",
               "min(us)", "time(us)", "max(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    }
    int64_t total_wrong = 0;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
        size_t count = bytes / sizeof(float);
        float *out = in_place ? send : recv;
        /* about 20 ms of work per sample, at least one all-reduce */
        long iters = (long)((size_t)32 << 20) / (long)bytes;
        if (iters > 1000)
            iters = 1000;
        if (iters < 1)
            iters = 1;
        for (size_t i = 0; i < count; i++) /* the inputs, built on the host */
            host_in[i] = input(w.rank, i);
        for (int k = -1; k < samples; k++) { /* k = -1: warm-up */
            if (in_place || k == -1)
                ERASE_MUST(erase_memcpy_sync(dev, send, host_in, count * sizeof(float)));
            ERASE_MUST(erase_barrier(world, s));
            ERASE_MUST(erase_stream_synchronize(s));
            double t0 = erase_now_s();
            for (long it = 0; it < iters; it++) /* in place, the sums grow: timing only */
                ERASE_MUST(erase_allreduce(world, s, send, out, count, ERASE_DTYPE_F32,
                                           ERASE_REDUCE_SUM));
            ERASE_MUST(erase_stream_synchronize(s));
            if (k >= 0)
                t[k] = (erase_now_s() - t0) / (double)iters;
        }
        bench_spread_t mine = bench_spread(t, (size_t)samples), slow;
        double sp[3] = { mine.min, mine.median, mine.max }, slowest_sp[3];
        ERASE_MUST(erase_allreduce(world, s, sp, slowest_sp, 3, ERASE_DTYPE_F64, ERASE_REDUCE_MAX));
        ERASE_MUST(erase_stream_synchronize(s));
        slow = (bench_spread_t){ slowest_sp[0] * 1e6, slowest_sp[1] * 1e6, slowest_sp[2] * 1e6 };
        double slowest = slowest_sp[1];

        /* correctness: one more all-reduce of fresh inputs, checked exactly */
        ERASE_MUST(erase_memcpy_sync(dev, send, host_in, count * sizeof(float)));
        ERASE_MUST(erase_allreduce(world, s, send, out, count, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
        ERASE_MUST(erase_stream_synchronize(s));
        ERASE_MUST(erase_memcpy_sync(dev, host_out, out, count * sizeof(float)));
        int64_t wrong = 0, wrong_all = 0;
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < n; r++)
                want += input(r, i);
            wrong += host_out[i] != want;
        }
        ERASE_MUST(erase_allreduce(world, s, &wrong, &wrong_all, 1, ERASE_DTYPE_I64,
                                   ERASE_REDUCE_SUM));
        ERASE_MUST(erase_stream_synchronize(s));
        total_wrong += wrong_all;
        double algbw = (double)bytes / slowest / 1e9;
        if (w.rank == 0) {
            printf("%12zu %12zu %6s %6s %11.1f %11.1f %11.1f %12.3f %12.3f %8lld\n", bytes, count, "float", "sum",
                   slow.min, slow.median, slow.max, algbw, algbw * bus_factor, (long long)wrong_all);
            char what[64];
            snprintf(what, sizeof what, "%zu bytes", bytes);
            bench_spread_check(slow, what, "us");
        }
        fflush(stdout);
    }
    if (w.rank == 0)
        printf("# #wrong total: %lld\n", (long long)total_wrong);
    free(t);
    free(host_in);
    free(host_out);
    erase_free(dev, send);
    erase_free(dev, recv);
    erase_stream_destroy(s);
    erase_device_close(dev);
    erase_world_finalize();
    return total_wrong ? 1 : 0;
}

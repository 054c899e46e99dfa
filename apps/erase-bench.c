/*
 * erase-bench: measurements of erase on this machine. Each subcommand
 * prints a table; ratios are measured within one run.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "config.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *what;
} commands[] = {
    { "gemm", bench_gemm, "SGEMM GFLOP/s on 1 and 2 BLAS threads, share of the measured peak" },
    { "streams", bench_streams, "the same GEMM work on one stream vs two streams: overlap ratio" },
    { "schedules", bench_schedules, "early-backward modes vs off: QPS p50/p90, ratio, overlap (mpirun for ranks)" },
    { "model", bench_model, "training samples/s of ctr and mlp, GEMM share; gpt tokens/s and MFU; ratio to PyTorch (--torch)" },
    { "allreduce", bench_allreduce, "all-reduce time, algbw, busbw, #wrong for 4 B .. 64 MiB (under mpirun)" },
    { "data", bench_data, "converter lines/s and CTR reader samples/s on one core (compressed and not)" },
    { "pipeline", bench_pipeline, "--simulate: gpipe, 1f1b, paci replayed from stage times: throughput, bubble, drift; P <= 64" },
    { "scale", bench_scale, "cost model: step time, early-backward gain, efficiency on N nodes x G ranks (alpha-beta links)" },
    { "tokenizer", bench_tokenizer, "BPE training time and encoding MB/s (1, 2 threads); vs rustbpe and tiktoken (--reference)" },
    { "subnormal", bench_subnormal, "samples/s early vs late as a model memorizes a batch (ERASE_FTZ=0: no flush-to-zero)" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench COMMAND [OPTIONS]   (COMMAND --help for its options)\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].what);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        return cli_version("erase-bench");
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "erase-bench: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

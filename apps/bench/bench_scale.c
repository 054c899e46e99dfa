/*
 * erase-bench scale: the cost model of lib/sched/scale.h for the ctr or gpt
 * model (its own cuts) on N nodes x G ranks: per node count, one rank's
 * compute, its reductions, the step time of the early-backward plan
 * (graph mode) and of off, the gain off / early, the communication the
 * early plan leaves exposed, and the data-parallel efficiency (weak
 * scaling: the per-rank batch fixed; one rank's step over N x G's).
 *
 * Inputs, each printed:
 *   compute  measured here (default; bench_measure_blocks: each block's
 *            forward, backward and update on one batch, one BLAS thread,
 *            the median of --repeats), or given per block
 *            (--forward-ms, --backward-ms, --update-ms: one value for
 *            every block or one per block), or from the blocks' GEMM
 *            FLOPs at an achieved rate (--tflops T: forward 1/3 of a
 *            block's FLOPs, backward 2/3; ctr only);
 *   bytes    from the model: each block's dense gradients and, for its
 *            embedding tables, the all-gathered sparse rows of a batch
 *            (erase_sched_reduce_bytes);
 *            (--dense-only: without the embedding rows);
 *   links    --alpha-us / --gbps between nodes (per rank), --intra-alpha-us
 *            / --intra-gbps within a node (G > 1), --algo ring|tree
 *            across nodes; --compute shared|concurrent (scale.h).
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "lib/nn/network.h"
#include "lib/sched/scale.h"
#include "lib/sched/sched.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 16

static void usage(FILE *f)
{
    fprintf(f,
            "usage: erase-bench scale --model ctr|gpt [--batch N] [--nodes LIST] [--gpus G]\n"
            "         [--measure [--repeats R] | --forward-ms F --backward-ms B [--update-ms U] | --tflops T]\n"
            "         --alpha-us A --gbps W [--intra-alpha-us A --intra-gbps W] [--algo ring|tree]\n"
            "         [--compute shared|concurrent] [--dense-only]\n"
            "  predicts one step of N nodes x G ranks (per-rank batch N fixed) from per-block compute\n"
            "  times, the model's per-block gradient bytes and an alpha-beta link model:\n"
            "  --model M        ctr or gpt, reference sizes and cuts\n"
            "  --batch N        samples per rank (default: ctr 256, gpt 4)\n"
            "  --nodes LIST     node counts (default 1,2,4,8,16,32,64)\n"
            "  --gpus G         ranks per node (default 1)\n"
            "  --measure        time each block here, one BLAS thread (default), median of --repeats (5)\n"
            "  --forward-ms, --backward-ms, --update-ms  given per block: one value or one per block\n"
            "  --tflops T       compute from the blocks' GEMM FLOPs at T TFLOP/s (ctr)\n"
            "  --alpha-us A     latency between nodes, microseconds\n"
            "  --gbps W         bandwidth per rank between nodes, Gbit/s\n"
            "  --intra-alpha-us, --intra-gbps   the same within a node (needed with --gpus > 1)\n"
            "  --algo ring|tree the all-reduce across nodes (default ring; within a node: ring)\n"
            "  --compute shared|concurrent  forwards and backwards share the compute (default) or\n"
            "                   run at once (lib/sched/scale.h)\n"
            "  --dense-only     leave out the all-gathers of embedding rows (replicated tables' sparse\n"
            "                   gradients): a lower bound; sharded tables' all-to-all is not modeled\n");
}

int bench_scale(int argc, char **argv)
{
    const char *model = NULL, *nodes_text = "1,2,4,8,16,32,64", *algo = "ring", *compute = "shared";
    const char *ms_text[3] = { NULL, NULL, NULL };
    static const char *const ms_name[3] = { "forward-ms", "backward-ms", "update-ms" };
    double batch_v = 0, gpus_v = 1, repeats_v = 5, tflops = 0, alpha = -1, gbps = 0, ialpha = -1, igbps = 0;
    int measure_flag = 0, dense_only = 0;
    static const struct option opts[] = { { "model", required_argument, 0, 0 },
                                          { "batch", required_argument, 0, 0 },
                                          { "nodes", required_argument, 0, 0 },
                                          { "gpus", required_argument, 0, 0 },
                                          { "measure", no_argument, 0, 0 },
                                          { "repeats", required_argument, 0, 0 },
                                          { "forward-ms", required_argument, 0, 0 },
                                          { "backward-ms", required_argument, 0, 0 },
                                          { "update-ms", required_argument, 0, 0 },
                                          { "tflops", required_argument, 0, 0 },
                                          { "alpha-us", required_argument, 0, 0 },
                                          { "gbps", required_argument, 0, 0 },
                                          { "intra-alpha-us", required_argument, 0, 0 },
                                          { "intra-gbps", required_argument, 0, 0 },
                                          { "algo", required_argument, 0, 0 },
                                          { "compute", required_argument, 0, 0 },
                                          { "help", no_argument, 0, 0 },
                                          { "dense-only", no_argument, 0, 0 },
                                          { 0, 0, 0, 0 } };
    /* the numbers, by option index: where, > 0 or >= 0, a whole number up to `most` */
    bench_number_t num[] = { [1] = { &batch_v, 1, 1 << 20, "a whole number of samples 1 .. 1048576" },
                [3] = { &gpus_v, 1, 1024, "a whole number of ranks per node 1 .. 1024" },
                [5] = { &repeats_v, 1, 1000, "a whole number of repeats 1 .. 1000" },
                [9] = { &tflops, 1, 0, "TFLOP/s > 0" },
                [10] = { &alpha, 0, 0, "microseconds >= 0" },
                [11] = { &gbps, 1, 0, "Gbit/s > 0" },
                [12] = { &ialpha, 0, 0, "microseconds >= 0" },
                [13] = { &igbps, 1, 0, "Gbit/s > 0" } };
    int index;
    for (int c; (c = getopt_long(argc, argv, ":", opts, &index)) != -1;) {
        if (c != 0)
            return cli_option_error("erase-bench scale", c, argv, opts);
        const char *name = opts[index].name;
        if (!strcmp(name, "help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(name, "model"))
            model = optarg;
        else if (!strcmp(name, "nodes"))
            nodes_text = optarg;
        else if (!strcmp(name, "measure"))
            measure_flag = 1;
        else if (!strcmp(name, "dense-only"))
            dense_only = 1;
        else if (!strcmp(name, "algo"))
            algo = optarg;
        else if (!strcmp(name, "compute"))
            compute = optarg;
        else if (index >= 6 && index <= 8)
            ms_text[index - 6] = optarg;
        else if (bench_parse_option_number(&num[index], optarg) != 0)
            return bench_bad_option("scale", name, optarg, num[index].what);
    }
    if (optind < argc)
        return cli_unexpected("erase-bench scale", argv[optind]);
    if (!model) {
        fprintf(stderr, "erase-bench scale: --model ctr|gpt is required\n");
        return 2;
    }
    if (strcmp(model, "ctr") && strcmp(model, "gpt"))
        return bench_bad_option("scale", "model", model, "ctr or gpt");
    int nodes[MAX_NODES], nn = bench_parse_list(nodes_text, nodes, MAX_NODES);
    if (nn <= 0)
        return bench_bad_option("scale", "nodes", nodes_text, "a list of up to 16 node counts >= 1");
    erase_scale_algo_t alg = !strcmp(algo, "ring") ? ERASE_SCALE_RING : ERASE_SCALE_TREE;
    if (strcmp(algo, "ring") && strcmp(algo, "tree"))
        return bench_bad_option("scale", "algo", algo, "ring or tree");
    if (strcmp(compute, "shared") && strcmp(compute, "concurrent"))
        return bench_bad_option("scale", "compute", compute, "shared or concurrent");
    if (alpha < 0 || gbps <= 0) {
        fprintf(stderr, "erase-bench scale: --alpha-us and --gbps are required (the link between nodes)\n");
        return 2;
    }
    int gpus = (int)gpus_v;
    if (gpus > 1 && (ialpha < 0 || igbps <= 0)) {
        fprintf(stderr, "erase-bench scale: --gpus %d: --intra-alpha-us and --intra-gbps are required (the link "
                "within a node)\n", gpus);
        return 2;
    }
    int given = ms_text[0] || ms_text[1] || ms_text[2];
    if (measure_flag + given + (tflops > 0) > 1) {
        fprintf(stderr, "erase-bench scale: give one of --measure, --forward-ms/--backward-ms, --tflops\n");
        return 2;
    }
    if (given && (!ms_text[0] || !ms_text[1])) {
        fprintf(stderr, "erase-bench scale: --forward-ms and --backward-ms go together\n");
        return 2;
    }

    erase_model_config_t cfg = erase_model_config_default(!strcmp(model, "gpt") ? ERASE_MODEL_GPT : ERASE_MODEL_CTR);
    int batch = batch_v > 0 ? (int)batch_v : cfg.kind == ERASE_MODEL_GPT ? 4 : 256;
    int B = erase_model_config_blocks(&cfg);
    if (tflops > 0 && cfg.kind != ERASE_MODEL_CTR) {
        fprintf(stderr, "erase-bench scale: --tflops: the FLOPs of %s's blocks are not counted (ctr only)\n", model);
        return 2;
    }
    double ms[3][64] = { { 0 } };
    for (int k = 0; k < 3; k++) {
        if (!ms_text[k])
            continue;
        int n = bench_parse_ms_list(ms_text[k], k < 2, ms[k]);
        if (n < 0)
            return bench_bad_option("scale", ms_name[k], ms_text[k],
                              k < 2 ? "milliseconds > 0, or one per block" : "milliseconds >= 0, or one per block");
        if (n != 1 && n != B) {
            fprintf(stderr, "erase-bench scale: --%s %s: %d values (expected one, or one per block: %s has %d)\n",
                    ms_name[k], ms_text[k], n, model, B);
            return 2;
        }
        for (int b = n; b < B; b++)
            ms[k][b] = ms[k][0];
    }

    /* the bytes of each block's reduction, from the model */
    erase_device_options_t dopt = erase_device_options_default();
    dopt.blas_threads = 1;
    erase_device_t *dev = bench_open_device("scale", &dopt, 0);
    if (!dev)
        return 1;
    erase_network_t *net;
    ERASE_MUST(erase_network_create(dev, &cfg, batch, &net));
    erase_scale_block_t bl[64];
    char names[64][32];
    int cut[64];
    for (int b = 0; b < B; b++) {
        bl[b] = (erase_scale_block_t){ 0 };
        ERASE_MUST(erase_sched_reduce_bytes(net, b, batch, &bl[b].grad_bytes, &bl[b].gather_bytes, &bl[b].gathers));
        if (dense_only)
            bl[b].gather_bytes = bl[b].gathers = 0;
        snprintf(names[b], sizeof names[b], "%s", erase_network_block_name(net, b));
        cut[b] = (int)((cfg.cut_mask >> b) & 1);
    }
    erase_network_destroy(net);
    erase_device_close(dev);

    printf("# erase-bench scale: %s, %d blocks (cuts 0x%x), batch %d per rank, %s compute%s\n", model, B,
           (unsigned)cfg.cut_mask, batch, compute,
           dense_only ? "; dense gradients only (no all-gather of embedding rows)" : "");
    if (given) {
        printf("# compute: given (--forward-ms, --backward-ms, --update-ms)\n");
        for (int b = 0; b < B; b++)
            bl[b].forward_s = ms[0][b], bl[b].backward_s = ms[1][b], bl[b].update_s = ms[2][b];
    } else if (tflops > 0) {
        printf("# compute: the blocks' GEMM FLOPs at %g TFLOP/s (forward 1/3, backward 2/3), updates %g ms\n",
               tflops, ms[2][0] * 1e3);
        for (int b = 0; b < B; b++) {
            double t = bench_block_gemm_flop(&cfg, batch, b) / (tflops * 1e12);
            bl[b].forward_s = t / 3, bl[b].backward_s = 2 * t / 3;
        }
    } else {
        bench_block_times_t bt = { 0 };
        snprintf(bt.model, sizeof bt.model, "%s", model);
        if (bench_measure_blocks("scale", &cfg, &cfg.cut_mask, 1, batch, (int)repeats_v, &bt) != 0)
            return 1;
        printf("# compute: measured here, one BLAS thread, median of %d repeats\n", (int)repeats_v);
        for (int b = 0; b < B; b++)
            bl[b].forward_s = bt.forward[b], bl[b].backward_s = bt.backward[b], bl[b].update_s = bt.update[b];
        bench_block_times_free(&bt);
    }
    printf("# %-10s %12s %12s %12s %14s %14s\n", "block", "forward(ms)", "backward(ms)", "update(ms)",
           "dense(B)", "gathered(B)");
    for (int b = 0; b < B; b++)
        printf("# %-10s %12.4f %12.4f %12.4f %14.0f %14.0f\n", names[b], bl[b].forward_s * 1e3,
               bl[b].backward_s * 1e3, bl[b].update_s * 1e3, bl[b].grad_bytes, bl[b].gather_bytes);
    erase_scale_cluster_t c = { .gpus = gpus,
                                .intra = { ialpha > 0 ? ialpha * 1e-6 : 0, igbps > 0 ? 8 / (igbps * 1e9) : 0 },
                                .inter = { alpha * 1e-6, 8 / (gbps * 1e9) },
                                .algo = alg };
    printf("# link: between nodes %s, alpha %g us, %g Gbit/s per rank", algo, alpha, gbps);
    if (gpus > 1)
        printf("; within a node ring, alpha %g us, %g Gbit/s", ialpha, igbps);
    printf("\n%6s %5s %6s %11s %11s %11s %11s %7s %12s %10s\n", "nodes", "gpus", "ranks", "compute(ms)", "comm(ms)",
           "early(ms)", "off(ms)", "gain", "exposed(ms)", "efficiency");
    for (int i = 0; i < nn; i++) {
        c.nodes = nodes[i];
        erase_scale_step_t s;
        if (erase_scale_step(bl, B, cut, &c, !strcmp(compute, "concurrent"), &s) != ERASE_OK) {
            fprintf(stderr, "erase-bench scale: %s\n", erase_error_reason());
            return 1;
        }
        printf("%6d %5d %6d %11.3f %11.3f %11.3f %11.3f %7.3f %12.3f %10.3f\n", nodes[i], gpus, nodes[i] * gpus,
               s.compute_s * 1e3, s.comm_s * 1e3, s.early_s * 1e3, s.off_s * 1e3, s.gain, s.exposed_s * 1e3,
               s.efficiency);
    }
    return 0;
}

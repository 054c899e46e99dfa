/*
 * erase-bench pipeline --simulate: the pipeline schedules gpipe, 1f1b,
 * paci (a = M) and local replayed as a discrete-event simulation
 * (pipe_replay of lib/sched/pipe_schedule.h: the same action lists
 * erase-train runs; local with its drain steps) for each P of --pp (up to
 * 64) and M of --micro-batches over --steps steps: throughput
 * (micro-batches/s, samples/s), bubble per stage (max, mean; the analytic
 * (P-1)/(M+P-1) of gpipe and 1f1b beside it) and paci's drift per stage.
 * Local sends activations only (no gradient message: half of 1f1b's
 * messages). Then the PACI paper's claim (up to 1.69x
 * time-to-accuracy over the best flush configuration at P = 8) against
 * the bubble model: at P = 8, for M in 1, 2, 4, 8, 16, 32, paci's
 * throughput over 1f1b's, simulated, beside (m+7)/m.
 *
 * Times: given (--forward-ms, --backward-ms, --update-ms: every stage's,
 * or with one --pp P a list of P, one per stage, per micro-batch; the
 * output is then exact and deterministic), or
 * measured here with --model ctr|gpt or --model-file F: each block's
 * forward, backward and optimizer update on one micro-batch of --batch
 * samples, one BLAS thread (a stage is one rank on one core), the median
 * of --repeats; a stage's time is the sum of its blocks' for an even
 * split of the blocks (stage s: blocks s*B/P .. (s+1)*B/P - 1). The model
 * is timed without cuts for gpipe, 1f1b and paci (every stage boundary is
 * attached, as they train it), and for local once more per P with a cut
 * at each boundary of that split and nowhere else (local's stages end at
 * cuts: their blocks' local heads and losses are timed; a stage's first
 * block gets a detached input), the repeats of all these networks
 * interleaved.
 *
 * The link (latency + bytes / bandwidth per message, FIFO per direction):
 * given (--latency-us, --bandwidth-gbps, --activation-bytes), else with
 * measured times an MPI-free estimate of Open MPI's shared-memory path
 * between ranks of one machine: two copies of the activation (into and
 * out of the shared segment), so bandwidth = memcpy bandwidth / 2
 * measured here on the largest boundary's activation, latency 1 us
 * (assumed), activation = the largest boundary's [batch, width] floats;
 * with given times a free link unless given. --host-ms: the host's time
 * between two steps of a stage (pipe_stage_time_t's host_s; erase-train's
 * wait, bookkeeping and next batch), every stage's or one per stage;
 * default 0.
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/model_config.h"
#include "lib/nn/train_step.h"
#include "lib/sched/pipe_schedule.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 16
#define ASSUMED_LATENCY_US 1.0

/* The claim table's points: P = 8 (the paper's), these M. */
#define CLAIM_P 8
static const int claim_m[] = { 1, 2, 4, 8, 16, 32 };


static void usage(FILE *f)
{
    fprintf(f,
            "usage: erase-bench pipeline --simulate [--pp LIST] [--micro-batches LIST] [--steps N]\n"
            "         (--forward-ms F --backward-ms B [--update-ms U] [--batch N]\n"
            "          | --model ctr|gpt | --model-file FILE  [--batch N] [--repeats R])\n"
            "         [--latency-us L] [--bandwidth-gbps G] [--activation-bytes A] [--host-ms H]\n"
            "  replays gpipe, 1f1b, paci (a = M, one update per M backwards) and local (activations\n"
            "  only, no gradient message) as a discrete-event simulation of every stage's action list;\n"
            "  prints per P and M: makespan, micro-batches/s, samples/s, bubble (max and mean over\n"
            "  stages; the analytic (P-1)/(M+P-1) beside gpipe's and 1f1b's), paci's drift per stage;\n"
            "  then paci / 1f1b at P = 8, M = 1 .. 32\n"
            "  beside the bubble model (m+7)/m (the PACI paper's claim: up to 1.69x)\n"
            "  defaults: --pp 2,4,8 (measured: those <= the blocks) --micro-batches 1,2,4,8,16,32\n"
            "            --steps 100 (P <= 64)\n"
            "  --forward-ms, --backward-ms, --update-ms  every stage's times per micro-batch (update\n"
            "              default 0), or with one --pp P a list of P, one per stage (e.g. 2.4,2.9);\n"
            "              --batch samples per micro-batch (default 1)\n"
            "  --model ctr|gpt, --model-file FILE  measure instead: each block's forward, backward\n"
            "              and update on one micro-batch (--batch, default ctr 256, gpt 4; one BLAS\n"
            "              thread; median of --repeats, default 5), the model without cuts (local:\n"
            "              a cut at each stage boundary, timed per P); stage s of P sums blocks\n"
            "              s*B/P .. (s+1)*B/P-1 (P <= blocks)\n"
            "  --latency-us, --bandwidth-gbps (Gbit/s), --activation-bytes  the link per message;\n"
            "              measured times: default an MPI-free estimate of a shared-memory link\n"
            "              (memcpy bandwidth / 2, latency 1 us, the largest boundary's activation);\n"
            "              given times: default a free link\n"
            "  --host-ms H  the host's time between two steps of a stage (erase-train's wait for the\n"
            "              step, bookkeeping and next batch): a step's first action starts H after\n"
            "              the previous step's last; every stage's or one per stage (default 0)\n");
}

/* Bytes per second of memcpy of `bytes` (at least 4 KiB), the median of
 * 5 samples of enough copies to take ~10 ms. */
static double memcpy_bandwidth(double bytes)
{
    size_t n = bytes < 4096 ? 4096 : (size_t)bytes;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b)
        erase_fatal(__FILE__, __LINE__, "allocate the memcpy buffers", ERASE_ERR_NOMEM);
    memset(a, 1, n);
    memset(b, 2, n);
    double t0 = erase_now_s();
    memcpy(b, a, n);
    double once = erase_now_s() - t0;
    long reps = once > 0 ? (long)(0.01 / once) + 1 : 1000;
    double rate[5];
    for (int i = 0; i < 5; i++) {
        t0 = erase_now_s();
        for (long r = 0; r < reps; r++) {
            memcpy(i % 2 ? a : b, i % 2 ? b : a, n);
            __asm__ volatile("" ::: "memory");
        }
        rate[i] = (double)n * reps / (erase_now_s() - t0);
    }
    free(a);
    free(b);
    return bench_spread(rate, 5).median;
}

/* The first block of stage s of P over `blocks` blocks split evenly. */
static int stage_first(int blocks, int P, int s) { return (int)((long)s * blocks / P); }

/* The cut mask of local's P stages over `blocks` blocks split evenly: a
 * cut at each stage boundary, none elsewhere. */
static uint32_t local_cuts(int blocks, int P)
{
    uint32_t mask = 0;
    for (int s = 1; s < P; s++)
        mask |= 1u << stage_first(blocks, P, s);
    return mask;
}

/* Stage times of P stages: the sums over an even split of the blocks. */
static void stage_times(const bench_block_times_t *bt, int P, pipe_stage_time_t *t, double *bytes)
{
    *bytes = 0;
    for (int s = 0; s < P; s++) {
        int lo = stage_first(bt->blocks, P, s), hi = stage_first(bt->blocks, P, s + 1);
        t[s] = (pipe_stage_time_t){ 0, 0, 0, 0 };
        for (int k = lo; k < hi; k++) {
            t[s].forward_s += bt->forward[k];
            t[s].backward_s += bt->backward[k];
            t[s].update_s += bt->update[k];
        }
        if (s > 0 && bt->boundary_bytes[lo] > *bytes)
            *bytes = bt->boundary_bytes[lo];
    }
}

/* Replay `kind` (paci: a = M) on P stages; exits 1 with the message on a
 * failure or a deadlock (neither happens for the builders' lists). */
static void simulate(pipe_kind_t kind, int P, int M, long steps, const pipe_stage_time_t *t,
                     const pipe_link_t *link, pipe_replay_t *r)
{
    pipe_schedule_t l[64] = { { 0 } };
    erase_status_t st = ERASE_OK;
    int built = 0;
    for (; built < P && st == ERASE_OK; built++) {
        pipe_schedule_options_t o = { kind, P, built, M, M, steps };
        st = pipe_schedule_build(&o, &l[built]);
    }
    if (st == ERASE_OK)
        st = pipe_replay(l, P, t, link, r);
    for (int s = 0; s < built; s++)
        pipe_schedule_free(&l[s]);
    if (st != ERASE_OK || r->deadlock) {
        fprintf(stderr, "erase-bench pipeline: %s P %d M %d: %s\n", pipe_kind_name(kind), P, M,
                st != ERASE_OK ? erase_error_message() : "deadlock");
        exit(1);
    }
}

static void print_ms_list(const char *what, const pipe_stage_time_t *t, int P, int field)
{
    printf(" %s", what);
    for (int s = 0; s < P; s++) {
        double v = field == 0 ? t[s].forward_s : field == 1 ? t[s].backward_s : field == 2 ? t[s].update_s
                                                                                         : t[s].host_s;
        printf("%s%.3f", s ? "," : *what ? " " : "", v * 1e3);
    }
}

typedef struct {
    const int *pp, *mb;
    int npp, nmb;
    long steps;
    int batch;
    int given;                   /* times given */
    double given_ms[4][64];      /* forward, backward, update, host (seconds): [0] every stage's, or one per stage */
    int ngiven[4];               /* values in each (0: none) */
    double latency_s, bandwidth_Bps, bytes; /* < 0: not given */
    const bench_block_times_t *bt;     /* measured: without cuts */
    const bench_block_times_t *local;  /* measured: [npp], local's of P = pp[i] (cuts at its boundaries) */
    double memcpy_Bps;
} sim_t;

/* The stage times and link of P stages; `bt` the measured block times to
 * sum (NULL with given times). */
static void setup(const sim_t *o, int P, const bench_block_times_t *bt, pipe_stage_time_t *t, pipe_link_t *link)
{
    double bytes = 0;
    if (!o->given)
        stage_times(bt, P, t, &bytes);
    for (int s = 0; s < P; s++) {
        double v[4];
        for (int k = 0; k < 4; k++)
            v[k] = o->ngiven[k] ? o->given_ms[k][o->ngiven[k] > 1 ? s : 0] : 0;
        if (o->given)
            t[s] = (pipe_stage_time_t){ v[0], v[1], v[2], 0 };
        t[s].host_s = v[3];
    }
    link->latency_s = o->latency_s >= 0 ? o->latency_s : o->given ? 0 : ASSUMED_LATENCY_US * 1e-6;
    link->bandwidth_Bps = o->bandwidth_Bps >= 0 ? o->bandwidth_Bps : o->given ? INFINITY : o->memcpy_Bps / 2;
    link->activation_bytes = o->bytes >= 0 ? o->bytes : bytes;
}

static void print_rows(const sim_t *o)
{
    printf("%-8s %3s %4s %4s %12s %10s %12s %10s %11s %8s %s\n", "schedule", "P", "M", "a", "makespan_ms", "mb/s",
           "samples/s", "bubble_max", "bubble_mean", "analytic", "drift_per_stage");
    for (int i = 0; i < o->npp; i++) {
        int P = o->pp[i];
        pipe_stage_time_t t[64], tl[64];
        pipe_link_t link, link_local;
        setup(o, P, o->given ? NULL : o->bt, t, &link);
        setup(o, P, o->given ? NULL : &o->local[i], tl, &link_local);
        for (int j = 0; j < o->nmb; j++) {
            int M = o->mb[j];
            for (int kind = PIPE_GPIPE; kind <= PIPE_LOCAL; kind++) {
                pipe_replay_t r;
                if (kind == PIPE_LOCAL)
                    simulate(kind, P, M, o->steps, tl, &link_local, &r);
                else
                    simulate(kind, P, M, o->steps, t, &link, &r);
                double bmax = 0, bsum = 0;
                for (int s = 0; s < P; s++) {
                    bmax = fmax(bmax, r.bubble[s]);
                    bsum += r.bubble[s];
                }
                char a[16] = "-", analytic[16] = "-", drift[64 * 12] = "-";
                if (kind == PIPE_PACI) {
                    snprintf(a, sizeof a, "%d", M);
                    for (int s = 0, n = 0; s < P; s++)
                        n += snprintf(drift + n, sizeof drift - (size_t)n, "%s%d", s ? "," : "", r.max_drift[s]);
                } else if (kind != PIPE_LOCAL)
                    snprintf(analytic, sizeof analytic, "%.4f", pipe_bubble_analytic(P, M));
                printf("%-8s %3d %4d %4s %12.3f %10.2f %12.1f %10.4f %11.4f %8s %s\n", pipe_kind_name(kind), P, M, a,
                       r.makespan_s * 1e3, r.throughput_mbps, r.throughput_mbps * o->batch, bmax, bsum / P, analytic,
                       drift);
            }
        }
    }
}

/* The claim table: P = 8, paci / 1f1b at each M beside (m+7)/m, and the
 * best of each over M. */
static void print_claim(const sim_t *o)
{
    printf("\n# PACI's claim: up to 1.69x time-to-accuracy over the best flush configuration at P = %d;\n"
           "# the bubble model: removing 1f1b's bubble (P-1)/(M+P-1) gains (M+P-1)/M = (m+7)/m.\n"
           "# simulated: paci (a = M) over 1f1b in micro-batches/s over %ld steps (throughput only: the\n"
           "# accuracy cost of paci's drift is not modelled)\n", CLAIM_P, o->steps);
    for (int k = 0; k < 4; k++)
        if (o->ngiven[k] > 1 && o->ngiven[k] != CLAIM_P) {
            printf("# (not simulated: the times are given per stage of P = %d)\n", o->ngiven[k]);
            return;
        }
    if (!o->given && o->bt->blocks < CLAIM_P) {
        printf("# (not simulated: the %s model has %d blocks, P = %d needs at least %d)\n", o->bt->model,
               o->bt->blocks, CLAIM_P, CLAIM_P);
        return;
    }
    pipe_stage_time_t t[CLAIM_P];
    pipe_link_t link;
    setup(o, CLAIM_P, o->given ? NULL : o->bt, t, &link);
    printf("%4s %10s %10s %9s %12s\n", "M", "1f1b_mb/s", "paci_mb/s", "simulated", "bubble_model");
    double best_flush = 0, best_paci = 0;
    int best_m = 0;
    for (size_t i = 0; i < sizeof claim_m / sizeof claim_m[0]; i++) {
        int M = claim_m[i];
        pipe_replay_t f, p;
        simulate(PIPE_1F1B, CLAIM_P, M, o->steps, t, &link, &f);
        simulate(PIPE_PACI, CLAIM_P, M, o->steps, t, &link, &p);
        printf("%4d %10.2f %10.2f %8.4fx %11.4fx\n", M, f.throughput_mbps, p.throughput_mbps,
               p.throughput_mbps / f.throughput_mbps, (M + CLAIM_P - 1.0) / M);
        if (f.throughput_mbps > best_flush) {
            best_flush = f.throughput_mbps;
            best_m = M;
        }
        best_paci = fmax(best_paci, p.throughput_mbps);
    }
    printf("# best flush configuration: 1f1b at M = %d, %.2f mb/s; best paci %.2f mb/s: %.4fx (the paper: up to "
           "1.69x; the bubble model reaches 1.69x for m <= 10)\n", best_m, best_flush, best_paci,
           best_paci / best_flush);
}

/* Print "--NAME TEXT: expected WHAT" (a usage error); 2. */
int bench_pipeline(int argc, char **argv)
{
    const char *pp_text = "2,4,8", *mb_text = "1,2,4,8,16,32", *model = NULL, *model_file = NULL;
    int simulate_flag = 0, batch = 0, repeats = 5, pp_given = 0;
    const char *times_text[4] = { NULL, NULL, NULL, NULL }; /* --forward-ms, --backward-ms, --update-ms, --host-ms */
    static const char *const times_name[4] = { "forward-ms", "backward-ms", "update-ms", "host-ms" };
    double steps = 100, lat = -1, gbps = -1, bytes = -1, batch_v = 0, repeats_v = 5;
    static const struct option opts[] = { { "simulate", no_argument, 0, 0 },
                                          { "pp", required_argument, 0, 0 },
                                          { "micro-batches", required_argument, 0, 0 },
                                          { "steps", required_argument, 0, 0 },
                                          { "forward-ms", required_argument, 0, 0 },
                                          { "backward-ms", required_argument, 0, 0 },
                                          { "update-ms", required_argument, 0, 0 },
                                          { "latency-us", required_argument, 0, 0 },
                                          { "bandwidth-gbps", required_argument, 0, 0 },
                                          { "activation-bytes", required_argument, 0, 0 },
                                          { "model", required_argument, 0, 0 },
                                          { "model-file", required_argument, 0, 0 },
                                          { "batch", required_argument, 0, 0 },
                                          { "repeats", required_argument, 0, 0 },
                                          { "help", no_argument, 0, 0 },
                                          { "host-ms", required_argument, 0, 0 },
                                          { 0, 0, 0, 0 } };
    /* the numbers, by option index: where, > 0 or >= 0, a whole number up to `most` */
    bench_number_t num[] = { [3] = { &steps, 1, 1e9, "a whole number of steps >= 1" },
                [7] = { &lat, 0, 0, "microseconds >= 0" },
                [8] = { &gbps, 1, 0, "Gbit/s > 0" },
                [9] = { &bytes, 0, 0, "bytes >= 0" },
                [12] = { &batch_v, 1, 1 << 20, "a whole number of samples >= 1" },
                [13] = { &repeats_v, 1, 1000, "a whole number of repeats 1 .. 1000" } };
    int index;
    for (int c; (c = getopt_long(argc, argv, ":", opts, &index)) != -1;) {
        if (c != 0)
            return cli_option_error("erase-bench pipeline", c, argv, opts);
        const char *name = opts[index].name;
        if (!strcmp(name, "help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(name, "simulate"))
            simulate_flag = 1;
        else if (!strcmp(name, "pp")) {
            pp_text = optarg;
            pp_given = 1;
        }
        else if (!strcmp(name, "micro-batches"))
            mb_text = optarg;
        else if (!strcmp(name, "model"))
            model = optarg;
        else if (!strcmp(name, "model-file"))
            model_file = optarg;
        else if (!strcmp(name, "forward-ms") || !strcmp(name, "backward-ms") || !strcmp(name, "update-ms") ||
                 !strcmp(name, "host-ms")) {
            for (int k = 0; k < 4; k++)
                if (!strcmp(name, times_name[k]))
                    times_text[k] = optarg;
        } else if (bench_parse_option_number(&num[index], optarg) != 0)
            return bench_bad_option("pipeline", name, optarg, num[index].what);
    }
    if (optind < argc)
        return cli_unexpected("erase-bench pipeline", argv[optind]);
    if (!simulate_flag) {
        fprintf(stderr, "erase-bench pipeline: --simulate is required (the measured pipelines: erase-train --pp)\n");
        return 2;
    }
    int pp[MAX_LIST], mb[MAX_LIST];
    int npp = bench_parse_list(pp_text, pp, MAX_LIST), nmb = bench_parse_list(mb_text, mb, MAX_LIST);
    if (npp <= 0)
        return bench_bad_option("pipeline", "pp", pp_text, "a list of up to 16 stage counts 1 .. 64");
    for (int i = 0; i < npp; i++)
        if (pp[i] > 64)
            return bench_bad_option("pipeline", "pp", pp_text, "a list of up to 16 stage counts 1 .. 64");
    if (nmb <= 0)
        return bench_bad_option("pipeline", "micro-batches", mb_text, "a list of up to 16 counts >= 1");
    sim_t o = { .pp = pp, .mb = mb, .npp = npp, .nmb = nmb };
    for (int k = 0; k < 4; k++) {
        if (!times_text[k])
            continue;
        o.ngiven[k] = bench_parse_ms_list(times_text[k], k == 0, o.given_ms[k]);
        if (o.ngiven[k] < 0)
            return bench_bad_option("pipeline", times_name[k], times_text[k], k == 0 ? "milliseconds > 0, or a list of them, one per "
                              "stage" : "milliseconds >= 0, or a list of them, one per stage");
        if (o.ngiven[k] > 1 && (npp != 1 || o.ngiven[k] != pp[0])) {
            fprintf(stderr, "erase-bench pipeline: --%s %s: %d values (expected one, or one per stage of a single "
                    "--pp)\n", times_name[k], times_text[k], o.ngiven[k]);
            return 2;
        }
    }
    int measured = model || model_file, given = o.ngiven[0] || o.ngiven[1] || o.ngiven[2];
    if (measured && given) {
        fprintf(stderr, "erase-bench pipeline: --model and --model-file measure the times: leave out --forward-ms, "
                "--backward-ms and --update-ms\n");
        return 2;
    }
    if (!measured && (!o.ngiven[0] || !o.ngiven[1])) {
        fprintf(stderr, "erase-bench pipeline: give --forward-ms and --backward-ms, or --model ctr|gpt "
                "(or --model-file) to measure them\n");
        return 2;
    }
    if (model && strcmp(model, "ctr") && strcmp(model, "gpt"))
        return bench_bad_option("pipeline", "model", model, "ctr or gpt");
    batch = (int)batch_v;
    repeats = (int)repeats_v;
    o.steps = (long)steps;
    o.given = !measured;
    o.latency_s = lat >= 0 ? lat * 1e-6 : -1;
    o.bandwidth_Bps = gbps > 0 ? gbps * 1e9 / 8 : -1;
    o.bytes = bytes;
    bench_block_times_t bt = { 0 }, local[MAX_LIST] = { { 0 } };
    if (measured) {
        erase_model_config_t cfg;
        if (model_file) {
            if (erase_model_config_load(model_file, &cfg) != ERASE_OK) {
                fprintf(stderr, "erase-bench pipeline: --model-file %s: %s\n", model_file, erase_error_reason());
                return 2;
            }
            snprintf(bt.model, sizeof bt.model, "%s", erase_model_config_name(&cfg));
        } else {
            cfg = erase_model_config_default(!strcmp(model, "gpt") ? ERASE_MODEL_GPT : ERASE_MODEL_CTR);
            snprintf(bt.model, sizeof bt.model, "%s", model);
        }
        if (!batch)
            batch = cfg.kind == ERASE_MODEL_GPT ? 4 : 256;
        int blocks = erase_model_config_blocks(&cfg);
        int fit = 0;
        for (int i = 0; i < npp; i++)
            if (pp[i] <= blocks)
                pp[fit++] = pp[i];
            else if (pp_given) {
                fprintf(stderr, "erase-bench pipeline: --pp %d: the %s model has %d blocks (expected P <= blocks)\n",
                        pp[i], bt.model, blocks);
                return 2;
            }
        if (fit < npp) /* the default list: those that fit */
            printf("# --pp %s: the %s model has %d blocks: P > %d left out\n", pp_text, bt.model, blocks, blocks);
        o.npp = npp = fit;
        /* all[0] without cuts, all[1 + i] local's of P = pp[i], timed together */
        bench_block_times_t all[MAX_LIST + 1] = { { 0 } };
        uint32_t masks[MAX_LIST + 1] = { 0 };
        for (int i = 0; i <= npp; i++) {
            snprintf(all[i].model, sizeof all[i].model, "%s", bt.model);
            if (i > 0)
                masks[i] = local_cuts(blocks, pp[i - 1]);
        }
        if (bench_measure_blocks("pipeline", &cfg, masks, npp + 1, batch, repeats, all) != 0)
            return 1;
        bt = all[0];
        for (int i = 0; i < npp; i++)
            local[i] = all[1 + i];
        o.local = local;
        double largest = 0;
        for (int k = 1; k < bt.blocks; k++)
            largest = fmax(largest, bt.boundary_bytes[k]);
        o.memcpy_Bps = memcpy_bandwidth(largest);
        o.bt = &bt;
        printf("# measured: %s, %d blocks, micro-batch %d samples, one BLAS thread, median of %d repeats; "
               "stage s of P: blocks s*B/P .. (s+1)*B/P-1; without cuts (local: a cut at each stage boundary, "
               "timed per P; the repeats of all interleaved)\n", bt.model, bt.blocks, batch, repeats);
        printf("# block times (ms):");
        pipe_stage_time_t blk[64];
        for (int k = 0; k < bt.blocks && k < 64; k++)
            blk[k] = (pipe_stage_time_t){ bt.forward[k], bt.backward[k], bt.update[k], 0 };
        print_ms_list("forward", blk, bt.blocks < 64 ? bt.blocks : 64, 0);
        print_ms_list("backward", blk, bt.blocks < 64 ? bt.blocks : 64, 1);
        print_ms_list("update", blk, bt.blocks < 64 ? bt.blocks : 64, 2);
        printf("\n# link: memcpy %.2f GB/s on %.0f bytes; MPI-free estimate of a shared-memory link: two copies "
               "(bandwidth / 2), latency %g us (assumed)\n", o.memcpy_Bps / 1e9, largest < 4096 ? 4096 : largest,
               ASSUMED_LATENCY_US);
    } else {
        if (!batch)
            batch = 1;
        if (o.ngiven[0] == 1 && o.ngiven[1] == 1 && o.ngiven[2] <= 1)
            printf("# given: every stage's forward %g ms, backward %g ms, update %g ms per micro-batch of %d "
                   "sample%s\n", o.given_ms[0][0] * 1e3, o.given_ms[1][0] * 1e3,
                   o.ngiven[2] ? o.given_ms[2][0] * 1e3 : 0, batch, batch > 1 ? "s" : "");
        else
            printf("# given: per stage (ms, per micro-batch of %d sample%s; see the P line)\n", batch,
                   batch > 1 ? "s" : "");
    }
    o.batch = batch;
    for (int i = 0; i < npp; i++) {
        pipe_stage_time_t t[64];
        pipe_link_t link;
        setup(&o, pp[i], measured ? &bt : NULL, t, &link);
        printf("# P %d: link latency %g us, bandwidth %g Gbit/s, activation %.0f bytes", pp[i], link.latency_s * 1e6,
               link.bandwidth_Bps * 8 / 1e9, link.activation_bytes);
        if (measured || o.ngiven[0] > 1 || o.ngiven[1] > 1 || o.ngiven[2] > 1) {
            printf("; stage times (ms):");
            print_ms_list("forward", t, pp[i], 0);
            print_ms_list("backward", t, pp[i], 1);
            print_ms_list("update", t, pp[i], 2);
        }
        if (measured) {
            setup(&o, pp[i], &local[i], t, &link);
            printf("; local's (ms):");
            print_ms_list("forward", t, pp[i], 0);
            print_ms_list("backward", t, pp[i], 1);
            print_ms_list("update", t, pp[i], 2);
        }
        if (o.ngiven[3]) {
            printf("; host between steps (ms):");
            print_ms_list("", t, pp[i], 3);
        }
        printf("\n");
    }
    printf("# %ld steps of M micro-batches each; paci: a = M (an update every M backwards), no flush; local: "
           "activations only, stage s trains batch t in step t+s, its drain steps after the segment\n", o.steps);
    print_rows(&o);
    print_claim(&o);
    bench_block_times_free(&bt);
    for (int i = 0; i < MAX_LIST; i++) {
        free(local[i].forward);
        free(local[i].backward);
        free(local[i].update);
        free(local[i].boundary_bytes);
    }
    return 0;
}

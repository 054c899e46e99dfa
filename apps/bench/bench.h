/* erase-bench subcommands and what they share. */
#ifndef ERASE_APPS_BENCH_H
#define ERASE_APPS_BENCH_H

#include "lib/device/device.h"
#include "lib/nn/model_config.h"

#include <stdint.h>

/* Each subcommand: parse its own options, run, print a table; exit status. */
int bench_gemm(int argc, char **argv);
int bench_streams(int argc, char **argv);
int bench_model(int argc, char **argv);
int bench_allreduce(int argc, char **argv);
int bench_data(int argc, char **argv);
/* erase-bench data --open: the reader opened on existing CTR data (apps/bench/bench_data_open.c). */
int bench_data_open(const char *const *inputs, int n, int64_t batch, int64_t pool, int64_t batches);
int bench_schedules(int argc, char **argv);
int bench_subnormal(int argc, char **argv);
int bench_pipeline(int argc, char **argv);
int bench_scale(int argc, char **argv);
int bench_tokenizer(int argc, char **argv);

/* "cpu" / "cuda" (a --device value) -> *kind; -1 for anything else. */
int bench_parse_device(const char *text, erase_device_kind_t *kind);

/* Open the device `o` describes and, if `describe`, print "# device: ..."
 * on stdout; NULL after printing why on stderr, prefixed by `command` and
 * its --device (and --gemm, if not fp32) option, when it cannot be opened. */
erase_device_t *bench_open_device(const char *command, const erase_device_options_t *o, int describe);

/* A new device array of n floats set to host values[0..n) (one blocking
 * copy; what benchmarks fill their inputs with). ERASE_MUST on failure. */
float *bench_device_floats(erase_device_t *dev, const float *values, size_t n);

/*
 * Measured peak in GFLOP/s of `threads` cores at once: each of `threads`
 * threads runs a loop of independent vector FMAs (AVX-512 where the CPU
 * has it, else AVX2+FMA, else none: 0 and *isa says so), at the clocks the
 * cores run now; the FLOPs of all threads over the wall time from the
 * first start to the last end. The denominator of every "% of peak"
 * erase-bench prints: measure it between the samples it divides.
 */
double bench_fma_peak_gflops(int threads, const char **isa);

/* Seconds of `reps` back-to-back calls of fn(arg) (one timing sample). */
double bench_seconds(void (*fn)(void *), void *arg, int reps);

/* The spread of a benchmark's samples, in their unit. */
typedef struct {
    double min, median, max;
} bench_spread_t;

/* min, median and max of x[0..n) (sorts x in place; n == 0: all 0). */
bench_spread_t bench_spread(double *x, size_t n);

/* The (max - min) / median above which samples say the machine was busy. */
#define BENCH_SPREAD_LIMIT 0.25

/*
 * When the spread of `s` exceeds BENCH_SPREAD_LIMIT, write to buf[0..size)
 * "warning: WHAT: samples spread 45% (1.2 .. 1.74 UNIT): the machine was
 * busy; figures are not reliable" and return 1; else buf = "" and 0.
 */
int bench_spread_warning(bench_spread_t s, const char *what, const char *unit, char *buf, size_t size);

/* The same warning printed on stdout as a "# " comment line under the
 * table row it is about (nothing when the spread is small). */
void bench_spread_check(bench_spread_t s, const char *what, const char *unit);

/* Parse "a,b,c" into at most `max` positive ints; returns the count or -1. */
int bench_parse_list(const char *text, int *out, int max);

/* A number >= 0 (> 0 with `positive`) into *out; -1 for anything else. */
int bench_parse_number(const char *text, int positive, double *out);

/* A numeric option: where it goes, > 0 (positive) or >= 0, a whole number
 * up to `most` (0: any real), and what is expected (for the message). */
typedef struct {
    double *v;
    int positive;
    double most;
    const char *what;
} bench_number_t;

/* text into *n->v as n says; 0, or -1 (nothing stored) for anything else. */
int bench_parse_option_number(const bench_number_t *n, const char *text);

/* Print "erase-bench COMMAND: --NAME TEXT: expected WHAT" on stderr; 2
 * (the usage error's exit status). */
int bench_bad_option(const char *command, const char *name, const char *text, const char *what);

/* A list of milliseconds >= 0 (> 0 with `positive`): one value or up to
 * 64, comma-separated, into out[] in seconds; the count, or -1. */
int bench_parse_ms_list(const char *text, int positive, double *out);

/* Per-block times of one batch (seconds) and boundary activations. */
typedef struct {
    int blocks, batch;
    double *forward, *backward, *update; /* [blocks] */
    double *boundary_bytes;              /* [blocks]: boundary b's activation (b >= 1) */
    char model[32];
} bench_block_times_t;

/* Most networks bench_measure_blocks times together. */
#define BENCH_MAX_NETS 17

/*
 * Time every block of `cfg` under each of the n (<= BENCH_MAX_NETS) cut
 * masks (bit c: boundary c, as erase_model_config_t's; the model's own
 * cuts replaced), into bt[i] (its `model` set by the caller), on a batch
 * of `batch` samples, one BLAS thread, one stream: each block's forward
 * (with its head and loss), backward and optimizer update, synchronized
 * one by one; one network per mask, the repeats interleaved (repeat r of
 * every network, then repeat r + 1) so that a change of the machine's
 * load falls on all of them alike; the median of `repeats`. 0, or 1
 * after printing why, prefixed "erase-bench COMMAND: ".
 */
int bench_measure_blocks(const char *command, const erase_model_config_t *cfg, const uint32_t *cut_masks, int n,
                         int batch, int repeats, bench_block_times_t *bt);
void bench_block_times_free(bench_block_times_t *bt);

/* GEMM floating-point operations of block b's training step on `batch`
 * samples (forward, input and weight gradients as the network computes
 * them: no input gradient at a cut or at the first layer); ctr and mlp,
 * -1 for another model. */
double bench_block_gemm_flop(const erase_model_config_t *c, int batch, int b);

/* GEMM floating-point operations of a whole training step on `batch`
 * samples: the sum of bench_block_gemm_flop for ctr and mlp; for dcn
 * without cuts its dense arch (no input gradient for the dense features),
 * the cross layers' projections (low rank: V [r, W] then W [W, r]; full
 * rank: [W, W], W = 27 D) and the over arch, 2 x multiply-adds of the
 * forward, weight and input gradients (docs/models.md, dcn). -1 for
 * another model or dcn with cuts (its local heads are not counted). */
double bench_step_gemm_flop(const erase_model_config_t *c, int batch);

#endif

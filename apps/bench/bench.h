/* erase-bench subcommands and what they share. */
#ifndef ERASE_APPS_BENCH_H
#define ERASE_APPS_BENCH_H

#include "lib/device/device.h"

/* Each subcommand: parse its own options, run, print a table; exit status. */
int bench_gemm(int argc, char **argv);
int bench_streams(int argc, char **argv);
int bench_model(int argc, char **argv);
int bench_allreduce(int argc, char **argv);
int bench_data(int argc, char **argv);
int bench_schedules(int argc, char **argv);
int bench_subnormal(int argc, char **argv);
int bench_pipeline(int argc, char **argv);

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

#endif

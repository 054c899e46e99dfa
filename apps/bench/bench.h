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
 * Measured single-core peak in GFLOP/s: a loop of independent vector FMAs
 * (AVX-512 where the CPU has it, else AVX2+FMA, else scalar) at the clock
 * the core runs now. The denominator of every "% of peak" erase-bench prints.
 */
double bench_fma_peak_gflops(const char **isa);

/* Time (s) of `reps` back-to-back calls of fn(arg) after one warm-up call;
 * returns the median of `samples` such timings. */
double bench_median_seconds(void (*fn)(void *), void *arg, int reps, int samples);

/* Parse "a,b,c" into at most `max` positive ints; returns the count or -1. */
int bench_parse_list(const char *text, int *out, int max);

#endif

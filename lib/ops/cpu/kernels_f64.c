/* The CPU kernels in double precision: the reference for gradient checks. */
#include "lib/ops/cpu/kernels.h"
#include "lib/device/cpu/cpu.h"

#define REAL double
#define SUF(name) name##_f64
#define GEMM erase_cpu_gemm_f64
#include "lib/ops/cpu/kernels_impl.h"

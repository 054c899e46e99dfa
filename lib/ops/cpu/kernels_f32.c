/* The CPU kernels in single precision: what the CPU backend runs. */
#include "lib/ops/cpu/kernels.h"
#include "lib/device/cpu/cpu.h"

#define REAL float
#define SUF(name) name##_f32
#define GEMM erase_cpu_gemm_f32
#include "lib/ops/cpu/kernels_impl.h"

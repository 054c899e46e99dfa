/*
 * ERASE_SIMD_CLONES: compile a hot loop once per vector ISA (AVX-512,
 * AVX2+FMA, baseline x86-64) and pick the version for the CPU at load time
 * (GCC function multi-versioning through an ifunc), so one binary runs the
 * wide loops on new CPUs and still starts on old ones. Elementwise loops
 * only: a vectorized version computes each element as the scalar one does
 * (reductions keep their order; no -ffast-math), except that FMA
 * contraction may round a*b+c once instead of twice.
 */
#ifndef ERASE_CORE_SIMD_H
#define ERASE_CORE_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define ERASE_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ERASE_SIMD_CLONES
#endif

#endif

/*
 * ERASE_HD marks a small inline function of a shared header (Philox, the
 * learning-rate schedule) as callable from both host and CUDA device code:
 * __host__ __device__ under nvcc, nothing for the C compiler, so the CPU
 * build compiles exactly the same code as before.
 */
#ifndef ERASE_CORE_HD_H
#define ERASE_CORE_HD_H

#ifdef __CUDACC__
#define ERASE_HD __host__ __device__
#else
#define ERASE_HD
#endif

#endif

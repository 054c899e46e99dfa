/*
 * One strided-batched SGEMM case of the device tests (tests/device/
 * test-gemm.c against a double reference, test-cuda.c against the CPU
 * backend): shapes, transposes, leading dimensions, batch strides.
 */
#ifndef ERASE_TESTS_DEVICE_GEMM_CASE_H
#define ERASE_TESTS_DEVICE_GEMM_CASE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc, batch;
    float alpha, beta;
    int64_t sa, sb, sc;
} gemm_case_t;

/* Element (i, j) of op(X) for a row-major X with row stride ld. */
static inline float elem(const float *x, int ld, int trans, int i, int j)
{
    return trans ? x[(size_t)j * ld + i] : x[(size_t)i * ld + j];
}

/* Floats the case's A, B and C span (every batch entry, plus one). */
static inline void gemm_case_sizes(const gemm_case_t *g, size_t *asize, size_t *bsize, size_t *csize)
{
    int arows = g->ta ? g->k : g->m, brows = g->tb ? g->n : g->k;
    *asize = (size_t)(g->batch - 1) * (size_t)g->sa + (size_t)arows * g->lda + 1;
    *bsize = (size_t)(g->batch - 1) * (size_t)g->sb + (size_t)brows * g->ldb + 1;
    *csize = (size_t)(g->batch - 1) * (size_t)g->sc + (size_t)g->m * g->ldc + 1;
}

#endif

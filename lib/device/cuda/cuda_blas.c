/*
 * Row-major SGEMM on cuBLAS (column-major), by the transpose identity: a
 * row-major m x n matrix with row stride ld is the column-major n x m
 * matrix (its transpose) with leading dimension ld, and
 *     C^T = (alpha op(A) op(B) + beta C)^T = alpha op(B)^T op(A)^T + beta C^T,
 * so cuBLAS computes the column-major C^T (n x m) with the operands
 * swapped (B first, A second), m and n swapped, and each operand's
 * transpose flag kept: a row-major B (k x n, not transposed) is the
 * column-major n x k matrix B^T, which is exactly op(B)^T, so CUBLAS_OP_N.
 * device.c's checks on lda/ldb/ldc are then cuBLAS's (e.g. ldb >= n for
 * the first operand when not transposed).
 *
 * k == 0 (C = beta C) is done without relying on cuBLAS's handling of an
 * empty inner dimension: beta == 0 clears each C (cudaMemset2DAsync, so
 * NaN in C does not survive as 0 * NaN), beta == 1 leaves C alone, any
 * other beta scales each C in place with cublasSgeam.
 *
 * Precision (erase_device_options_t.gemm): FP32 calls cublasSgemm(Strided
 * Batched) with CUBLAS_DEFAULT_MATH (no tensor cores, strict fp32); TF32 and
 * BF16 call cublasGemm(StridedBatched)Ex on the same fp32 matrices with the
 * compute type CUBLAS_COMPUTE_32F_FAST_TF32 / _FAST_16BF (tensor cores;
 * operands rounded to TF32 / bfloat16, fp32 accumulation: ~1e-3 / ~1e-2
 * relative; cuBLAS documentation, "cublasComputeType_t").
 */
#include "config.h"

#include "lib/device/cuda/cuda_internal.h"

static cublasOperation_t op(erase_trans_t t) { return t == ERASE_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N; }

static erase_status_t cublas_fail(int line, cublasStatus_t rc, const char *what, int m, int n,
                                  int k, int batch)
{
    return erase_error_set(ERASE_ERR_BACKEND, __FILE__, line,
                           "%s (m=%d n=%d k=%d batch=%d): %s", what, m, n, k, batch,
                           cublasGetStatusString(rc));
}

/* C = beta C for each of `batch` row-major m x n matrices (k == 0). */
static erase_status_t scale_c(cuda_stream_t *s, int m, int n, float beta, float *c, int ldc,
                              int64_t stride_c, int batch)
{
    if (beta == 1.0f)
        return ERASE_OK;
    for (int i = 0; i < batch; i++) {
        float *ci = c + (int64_t)i * stride_c;
        if (beta == 0.0f) {
            CUDA_TRY(cudaMemset2DAsync(ci, (size_t)ldc * sizeof(float), 0,
                                       (size_t)n * sizeof(float), (size_t)m, s->s));
        } else {
            /* column-major n x m view; in place: A and C are the same with
             * lda == ldc and no transpose, as cublasSgeam allows */
            const float zero = 0.0f;
            cublasStatus_t rc = cublasSgeam(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, &beta, ci, ldc,
                                            &zero, ci, ldc, ci, ldc);
            if (rc != CUBLAS_STATUS_SUCCESS)
                return cublas_fail(__LINE__, rc, "cublasSgeam (C = beta C for k = 0)", m, n, 0,
                                   batch);
        }
    }
    return ERASE_OK;
}

erase_status_t cuda_sgemm_strided_batched(erase_stream_t *stream, erase_trans_t ta,
                                          erase_trans_t tb, int m, int n, int k, float alpha,
                                          const float *a, int lda, int64_t stride_a,
                                          const float *b, int ldb, int64_t stride_b, float beta,
                                          float *c, int ldc, int64_t stride_c, int batch)
{
    cuda_stream_t *s = cuda_stream_of(stream);
    ERASE_CHECK(cuda_use(s->dev));
    if (k == 0) {
        ERASE_CHECK(scale_c(s, m, n, beta, c, ldc, stride_c, batch));
        cuda_count(s);
        return ERASE_OK;
    }
    cublasStatus_t rc;
    const char *what;
    if (s->dev->gemm == ERASE_GEMM_FP32) {
        what = batch == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched";
        if (batch == 1)
            rc = cublasSgemm(s->blas, op(tb), op(ta), n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc);
        else
            rc = cublasSgemmStridedBatched(s->blas, op(tb), op(ta), n, m, k, &alpha, b, ldb,
                                           (long long)stride_b, a, lda, (long long)stride_a, &beta,
                                           c, ldc, (long long)stride_c, batch);
    } else {
        cublasComputeType_t ct = s->dev->gemm == ERASE_GEMM_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                 : CUBLAS_COMPUTE_32F_FAST_16BF;
        what = batch == 1 ? "cublasGemmEx" : "cublasGemmStridedBatchedEx";
        if (batch == 1)
            rc = cublasGemmEx(s->blas, op(tb), op(ta), n, m, k, &alpha, b, CUDA_R_32F, ldb, a,
                              CUDA_R_32F, lda, &beta, c, CUDA_R_32F, ldc, ct, CUBLAS_GEMM_DEFAULT);
        else
            rc = cublasGemmStridedBatchedEx(s->blas, op(tb), op(ta), n, m, k, &alpha, b, CUDA_R_32F,
                                            ldb, (long long)stride_b, a, CUDA_R_32F, lda,
                                            (long long)stride_a, &beta, c, CUDA_R_32F, ldc,
                                            (long long)stride_c, batch, ct, CUBLAS_GEMM_DEFAULT);
    }
    if (rc != CUBLAS_STATUS_SUCCESS)
        return cublas_fail(__LINE__, rc, what, m, n, k, batch);
    cuda_count(s);
    return ERASE_OK;
}

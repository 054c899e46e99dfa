/*
 * Token plus position embedding (GPT-2's wte and wpe) on CUDA, and its
 * deterministic backward. The backward sorts the (token, position) pairs
 * with the stable radix sort of sortreduce.cuh (positions stay ascending
 * among equal tokens), then one warp per (token, 32 columns) finds the
 * token's run by binary search and adds its dout rows one by one in
 * ascending position order, onto 0 or (accumulate) onto what dwte holds:
 * the CPU kernel's order, bit for bit (one sum in order, not chunked: a
 * token repeated thousands of times is a long run for one thread per
 * column). dwpe sums over the
 * sequences in ascending order. A token outside [0, vocab) raises
 * ERASE_CUDA_FAULT_TOKEN (the forward writes NaN in its row, the backward
 * leaves its position out).
 */
#include "lib/ops/cuda/sortreduce.cuh"

#include <limits.h>

// ---------------------------------------------------------------------------
// CUDA kernels

/* out[p, d] = wte[tokens[p], d] + wpe[p % T, d] over positions * dim items. */
__global__ void token_embedding_forward_kernel(size_t items, int T, int dim, int vocab,
                                               const int32_t *tokens, const float *wte,
                                               const float *wpe, float *out, int *fault)
{
    ERASE_CUDA_GRID_LOOP(e, items)
    {
        size_t p = e / dim;
        int d = (int)(e % dim), t = (int)(p % T);
        int32_t tok = tokens[p];
        if (tok < 0 || tok >= vocab) {
            if (d == 0)
                erase_cuda_raise(fault, ERASE_CUDA_FAULT_TOKEN);
            out[e] = NAN;
            continue;
        }
        out[e] = wte[(size_t)tok * dim + d] + wpe[(size_t)t * dim + d];
    }
}

/* Sort entries: key = token (invalid ones last, with a fault), value = position. */
__global__ void token_embedding_keys_kernel(size_t positions, int vocab, const int32_t *tokens,
                                            uint64_t *keys, int *vals, int *fault)
{
    ERASE_CUDA_GRID_LOOP(p, positions)
    {
        int32_t tok = tokens[p];
        if (tok < 0 || tok >= vocab) {
            erase_cuda_raise(fault, ERASE_CUDA_FAULT_TOKEN);
            keys[p] = ERASE_SORT_INVALID(0);
        } else {
            keys[p] = ERASE_SORT_KEY(0, (uint32_t)tok);
        }
        vals[p] = (int)p;
    }
}

/*
 * dwte[v, d] = (accumulate ? dwte[v, d] : 0) + dout[p, d] + ... over the
 * sorted positions p of token v, added one by one in order. Warps
 * grid-stride over vocab * ceil(dim / 32) (token, column group) pairs;
 * every lane of a warp searches the same run (broadcast loads), lane l
 * takes column 32 g + l.
 */
__global__ void token_embedding_dwte_kernel(int positions, int dim, int vocab,
                                            const uint64_t *keys, const int *vals,
                                            const float *dout, float *dwte, int accumulate)
{
    int lane = threadIdx.x & 31;
    size_t groups = ((size_t)dim + 31) / 32;
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    size_t warps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t w = warp; w < (size_t)vocab * groups; w += warps) {
        uint64_t v = (uint64_t)(w / groups);
        int d = (int)(w % groups) * 32 + lane;
        int lo = 0, hi = positions; /* first sorted entry with key >= v */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (keys[mid] < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (d >= dim)
            continue;
        float *row = dwte + (size_t)v * dim;
        float acc = accumulate ? row[d] : 0.0f;
        for (int j = lo; j < positions && keys[j] == v; j++)
            acc += dout[(size_t)vals[j] * dim + d];
        row[d] = acc;
    }
}

/* dwpe[t, d] = the sum from 0 of dout[b, t, d] over b ascending. */
__global__ void token_embedding_dwpe_kernel(size_t items, int batch, int T, int dim,
                                            const float *dout, float *dwpe)
{
    ERASE_CUDA_GRID_LOOP(e, items)
    {
        float acc = 0.0f;
        for (int b = 0; b < batch; b++)
            acc += dout[(size_t)b * T * dim + e];
        dwpe[e] = acc;
    }
}

// ---------------------------------------------------------------------------
// kernel launchers

extern "C" erase_status_t erase_cuda_op_token_embedding_forward(erase_stream_t *s, int batch,
                                                                int T, int dim, int vocab,
                                                                const int32_t *tokens,
                                                                const float *wte,
                                                                const float *wpe, float *out)
{
    ERASE_CHECK(erase_cuda_launch_n(s, "token embedding forward", token_embedding_forward_kernel,
                                    (size_t)batch * T * dim, T, dim, vocab, tokens, wte, wpe, out,
                                    erase_cuda_fault_word(s)));
    return ERASE_OK;
}

extern "C" erase_status_t erase_cuda_op_token_embedding_backward(erase_stream_t *s, int batch,
                                                                 int T, int dim, int vocab,
                                                                 const int32_t *tokens,
                                                                 const float *dout, float *dwte,
                                                                 float *dwpe, int accumulate)
{
    cudaStream_t st = erase_cuda_stream(s);
    size_t positions = (size_t)batch * T;
    if (positions > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "cuda token embedding backward: batch %d x T %d = %zu positions (at "
                           "most %d)",
                           batch, T, positions, INT_MAX);
    if (dwpe)
        ERASE_CHECK(erase_cuda_launch_n(s, "token embedding backward: dwpe",
                                        token_embedding_dwpe_kernel, (size_t)T * dim, batch, T,
                                        dim, dout, dwpe));
    if (!dwte || (accumulate && positions == 0))
        return ERASE_OK;
    erase_sortreduce_buffers_t b;
    memset(&b, 0, sizeof b);
    if (positions > 0) {
        ERASE_CHECK(erase_sortreduce_buffers(s, 1, (int)positions, 0, &b));
        ERASE_CHECK(erase_cuda_launch_n(s, "token embedding backward: keys",
                                        token_embedding_keys_kernel, positions, vocab, tokens,
                                        b.keys, b.vals, erase_cuda_fault_word(s)));
        ERASE_CHECK(erase_sortreduce_sort(s, &b, 1, (int)positions));
    }
    size_t lanes = (size_t)vocab * (((size_t)dim + 31) / 32) * 32;
    token_embedding_dwte_kernel<<<erase_cuda_blocks(lanes, ERASE_CUDA_THREADS), ERASE_CUDA_THREADS,
                                  0, st>>>((int)positions, dim, vocab, b.keys_sorted,
                                           b.vals_sorted, dout, dwte, accumulate);
    ERASE_CUDA_CHECK_LAUNCH("token embedding backward: dwte");
    return ERASE_OK;
}

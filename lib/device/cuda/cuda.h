/*
 * CUDA backend entry points used by the CUDA implementations of ops
 * (lib/ops/cuda) and by the NCCL communicators (lib/comm): the CUDA stream
 * behind an erase stream, the device's ordinal, the check macros that turn
 * a failed CUDA call into an erase status, and the device's fault word,
 * through which a kernel reports a failure that the CPU backend would
 * return from the op (e.g. a sparse pack over its capacity).
 *
 * C and CUDA C++ both include this header (.c files of the backend, .cu
 * kernels); it needs only the CUDA runtime API.
 */
#ifndef ERASE_DEVICE_CUDA_CUDA_H
#define ERASE_DEVICE_CUDA_CUDA_H

#include <cuda_runtime_api.h>

#include "lib/device/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cudaStream_t of a stream of a CUDA device (NULL for a CPU stream). */
cudaStream_t erase_cuda_stream(const erase_stream_t *stream);

/* The CUDA device number (cudaSetDevice) an open CUDA device computes on. */
int erase_cuda_ordinal(const erase_device_t *dev);

/* Make `dev` the calling thread's current CUDA device (cudaSetDevice);
 * threads other than the one that opened the device call this before their
 * first CUDA call. Errors: ERASE_ERR_BACKEND. */
erase_status_t erase_cuda_make_current(const erase_device_t *dev);

/* Turn a CUDA runtime error into ERASE_ERR_BACKEND with "what: <CUDA
 * error name>: <CUDA error string>" (recorded at file:line). */
erase_status_t erase_cuda_error(const char *file, int line, cudaError_t err, const char *what);

#define ERASE_CUDA_CHECK(call)                                               \
    do {                                                                     \
        cudaError_t erase_cuda_rc_ = (call);                                 \
        if (erase_cuda_rc_ != cudaSuccess)                                   \
            return erase_cuda_error(__FILE__, __LINE__, erase_cuda_rc_, #call); \
    } while (0)

/* After a kernel launch (<<<...>>>): a bad launch configuration or a
 * kernel that cannot run on this GPU fails here, naming `what`. */
#define ERASE_CUDA_CHECK_LAUNCH(what)                                        \
    do {                                                                     \
        cudaError_t erase_cuda_rc_ = cudaGetLastError();                     \
        if (erase_cuda_rc_ != cudaSuccess)                                   \
            return erase_cuda_error(__FILE__, __LINE__, erase_cuda_rc_, (what)); \
    } while (0)

/*
 * Faults a kernel can report. A kernel that finds one stores its code into
 * the device's fault word with atomicCAS(fault, 0, code) (the first fault
 * is kept); the next erase_stream_synchronize of any stream of the device
 * (or erase_cuda_take_fault) reads and clears the word and returns
 * ERASE_ERR_INVALID with erase_cuda_fault_text(code) — as the CPU backend
 * returns the op's error from the stream.
 */
typedef enum {
    ERASE_CUDA_FAULT_NONE = 0,
    ERASE_CUDA_FAULT_SPARSE_PACK_CAPACITY = 1, /* erase_sparse_pack: a count above capacity */
    ERASE_CUDA_FAULT_SPARSE_MERGE_COUNT = 2,   /* erase_sparse_merge: a pack count outside [0, capacity] */
    ERASE_CUDA_FAULT_CLASS_LABEL = 3,          /* erase_softmax_xent: a label outside [0, classes) */
    ERASE_CUDA_FAULT_TOKEN = 4,                /* erase_token_embedding_*: a token outside [0, vocab) */
    ERASE_CUDA_FAULT_SHARD_ROUTE = 5,          /* erase_shard_route: a row with no slot or outside the bounds */
    ERASE_CUDA_FAULT_GATHER_ROW = 6,           /* erase_gather_rows: an index at or above src_rows */
    ERASE_CUDA_FAULT_SPARSE_SPLIT = 7,         /* erase_sparse_split: a row with no slot, outside the bounds, or over capacity */
    ERASE_CUDA_FAULT_BAG_LENGTH = 8,           /* embedding bag ops: a length outside [1, hotness] */
    ERASE_CUDA_FAULT_COUNT                     /* number of codes */
} erase_cuda_fault_t;

/* Text of a fault code ("sparse pack: a table's row count is above the
 * pack capacity"). */
const char *erase_cuda_fault_text(int code);

/* Device address of the fault word of the device that owns `stream` (one
 * int in device memory, 0 when no fault is pending). */
int *erase_cuda_fault_word(const erase_stream_t *stream);

/* Read and clear the device's fault word (blocking; the caller has
 * synchronized the streams that may set it). ERASE_OK if it was 0, else
 * ERASE_ERR_INVALID with the fault's text. */
erase_status_t erase_cuda_take_fault(erase_device_t *dev);

#ifdef __cplusplus
}
#endif

#endif

/*
 * Per-stream scratch memory of the CUDA ops (see erase_cuda_op_scratch in
 * lib/ops/cuda/ops_cuda.h): a list, newest first, of the buffers allocated
 * for each (device, stream); a stream uses its newest. Buffers are never
 * freed: a graph captured with an older, smaller buffer of its stream keeps
 * a valid pointer, and growth doubles, so a stream holds less than twice
 * its largest request.
 */
#include "lib/ops/cuda/ops_cuda.h"

#include "lib/device/cuda/cuda.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct scratch_entry {
    struct scratch_entry *next;
    const erase_stream_t *stream;
    const erase_device_t *dev;
    int ordinal; /* CUDA device the buffer lives on */
    void *ptr;
    size_t bytes;
} scratch_entry_t;

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static scratch_entry_t *scratch_list;

/* Smallest buffer allocated (bytes): most ops' needs fit in the first one. */
#define SCRATCH_MIN_BYTES ((size_t)1 << 20)

erase_status_t erase_cuda_op_scratch(erase_stream_t *s, size_t bytes, void **ptr)
{
    erase_device_t *dev = erase_stream_device(s);
    int ordinal = erase_cuda_ordinal(dev);
    erase_status_t st = ERASE_OK;
    pthread_mutex_lock(&scratch_lock);
    /* Entries outlive their streams and devices (never freed): a stream or
     * device opened later may get the same address, so the ordinal is part
     * of the key (a buffer of another GPU would be an illegal address). */
    scratch_entry_t *e = scratch_list;
    while (e && !(e->stream == s && e->dev == dev && e->ordinal == ordinal))
        e = e->next;
    if (e && e->bytes >= bytes) {
        *ptr = e->ptr;
        goto out;
    }
    if (erase_stream_is_capturing(s)) {
        st = ERASE_ERROR(ERASE_ERR_STATE,
                         "cuda ops: %zu bytes of scratch needed while capturing, the stream has %zu "
                         "(run the step once before capturing it)",
                         bytes, e ? e->bytes : (size_t)0);
        goto out;
    }
    size_t size = SCRATCH_MIN_BYTES;
    if (e && size < 2 * e->bytes)
        size = 2 * e->bytes;
    if (size < bytes)
        size = bytes;
    scratch_entry_t *n = malloc(sizeof *n);
    if (!n) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "cuda ops: no memory for a scratch entry");
        goto out;
    }
    st = erase_malloc(dev, size, &n->ptr);
    if (st != ERASE_OK) {
        free(n);
        erase_error_trail(__FILE__, __LINE__);
        goto out;
    }
    n->stream = s;
    n->dev = dev;
    n->ordinal = ordinal;
    n->bytes = size;
    n->next = scratch_list;
    scratch_list = n;
    *ptr = n->ptr;
out:
    pthread_mutex_unlock(&scratch_lock);
    return st;
}

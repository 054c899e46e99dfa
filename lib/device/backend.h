/*
 * The table of functions a device backend implements (internal to
 * lib/device). Public entry points in device.c validate arguments once and
 * dispatch through the table of the object's device. Every backend object
 * (device, stream, event, graph) begins with the matching header below.
 */
#ifndef ERASE_DEVICE_BACKEND_H
#define ERASE_DEVICE_BACKEND_H

#include <pthread.h>

#include "lib/device/device.h"

typedef struct erase_backend erase_backend_t;

struct erase_device {
    const erase_backend_t *backend;
    erase_device_kind_t kind;
    int streams_created;
    /* trace log (device.c): a ring of records, written by markers */
    pthread_mutex_t trace_lock;
    erase_trace_record_t *trace;
    size_t trace_cap, trace_head, trace_len, trace_dropped;
};

/* Append a record to the device's trace log (markers call this when they
 * run; any thread). */
void erase_device_trace_append(erase_device_t *dev, const erase_trace_record_t *rec);

struct erase_stream {
    erase_device_t *dev;
    int number;             /* creation order on the device */
};

struct erase_event {
    erase_device_t *dev;
};

struct erase_graph {
    erase_device_t *dev;
};

struct erase_backend {
    const char *name;
    void (*close)(erase_device_t *dev);
    void (*describe)(const erase_device_t *dev, char *text, size_t size);
    int (*cores)(const erase_device_t *dev);
    int (*blas_threads)(const erase_device_t *dev);
    erase_status_t (*set_blas_threads)(erase_device_t *dev, int n);

    erase_status_t (*malloc)(erase_device_t *dev, size_t bytes, void **ptr);
    void (*free)(erase_device_t *dev, void *ptr);
    erase_status_t (*memcpy_async)(erase_stream_t *s, void *dst, const void *src, size_t bytes);
    erase_status_t (*memset_async)(erase_stream_t *s, void *dst, int value, size_t bytes);
    /* width, rows > 0; pitches >= width (checked by device.c) */
    erase_status_t (*memcpy2d_async)(erase_stream_t *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                                     size_t width, size_t rows);
    int host_accessible;
    erase_status_t (*memcpy_sync)(erase_device_t *dev, void *dst, const void *src, size_t bytes);
    erase_status_t (*memset_sync)(erase_device_t *dev, void *dst, int value, size_t bytes);
    erase_status_t (*host_alloc)(erase_device_t *dev, size_t bytes, void **ptr);
    void (*host_free)(erase_device_t *dev, void *ptr);

    erase_status_t (*stream_create)(erase_device_t *dev, erase_stream_t **out);
    void (*stream_destroy)(erase_stream_t *s);
    erase_status_t (*stream_synchronize)(erase_stream_t *s);
    uint64_t (*stream_enqueued)(const erase_stream_t *s);
    erase_status_t (*stream_error)(erase_stream_t *s);

    erase_status_t (*event_create)(erase_device_t *dev, erase_event_t **out);
    void (*event_destroy)(erase_event_t *e);
    erase_status_t (*event_record)(erase_event_t *e, erase_stream_t *s);
    erase_status_t (*stream_wait_event)(erase_stream_t *s, erase_event_t *e);
    erase_status_t (*event_synchronize)(erase_event_t *e);
    erase_status_t (*event_query)(erase_event_t *e);
    erase_status_t (*event_elapsed_ms)(erase_event_t *start, erase_event_t *end, double *ms);

    erase_status_t (*begin_capture)(erase_stream_t *s);
    erase_status_t (*end_capture)(erase_stream_t *s, erase_graph_t **graph);
    int (*is_capturing)(const erase_stream_t *s);
    erase_status_t (*graph_launch)(erase_graph_t *g, erase_stream_t *s);
    size_t (*graph_node_count)(const erase_graph_t *g);
    void (*graph_destroy)(erase_graph_t *g);

    erase_status_t (*mark)(erase_stream_t *s, const char *label, int begin);
    /* Optional (NULL on the CPU, whose markers append when they run):
     * move the markers that have run since the last call into the trace
     * log; called by erase_device_trace_drain before it reads the log. */
    void (*trace_flush)(erase_device_t *dev);
    erase_status_t (*sgemm_strided_batched)(erase_stream_t *s, erase_trans_t ta, erase_trans_t tb,
                                            int m, int n, int k, float alpha,
                                            const float *a, int lda, int64_t stride_a,
                                            const float *b, int ldb, int64_t stride_b,
                                            float beta, float *c, int ldc, int64_t stride_c,
                                            int batch);
};

/* Backend constructors (cpu/cpu_device.c; cuda/cuda_device.c when built). */
erase_status_t erase_cpu_device_open(const erase_device_options_t *options, erase_device_t **out);
erase_status_t erase_cuda_device_open(const erase_device_options_t *options, erase_device_t **out);

#endif

/*
 * Step traces: the device's marker records turned into Chrome trace-event
 * JSON (opens in Perfetto and chrome://tracing: one track per stream per
 * rank, each range named "<block>/forward", "<block>/backward",
 * "<block>/allreduce", "<block>/optimizer", "step"), and the overlap
 * fraction of early backward: the share of backward time that ran while
 * a forward was running on another stream.
 */
#ifndef ERASE_SCHED_TRACE_H
#define ERASE_SCHED_TRACE_H

#include <stdio.h>

#include "lib/device/device.h"

typedef struct {
    double backward_ms;      /* total time inside backward ranges */
    double overlapped_ms;    /* ... of it while some forward range was open */
    double overlap_fraction; /* overlapped / backward, 0 without backward */
} erase_trace_overlap_t;

/* Overlap of backward with forward ranges in `n` records (any order). */
erase_trace_overlap_t erase_trace_overlap(const erase_trace_record_t *rec, size_t n);

/*
 * Move up to `max` of `dev`'s logged marker records (oldest first,
 * erase_device_trace_drain) into `out`, keeping those of the n `streams`
 * (NULL entries skipped) with each record's stream renumbered to its index
 * in `streams` (a scheduler's or a pipeline stage's own numbering).
 * Returns how many were kept.
 */
size_t erase_trace_collect(erase_device_t *dev, erase_stream_t *const *streams, int n, erase_trace_record_t *out,
                           size_t max);

/*
 * Write the records as trace-event objects (complete events "ph":"X",
 * times in microseconds from t0_ns) for process `rank`, with thread names
 * stream_names[stream] (the stream's number on the device; NULL: "stream
 * N"). `first` says whether this is the first object of the JSON array
 * (no leading comma). Unpaired begins are dropped, and so are ranges that
 * began before t0_ns: the window opens at t0_ns, and a stream that does
 * not take part in the synchronization that opens it (a pipeline's sends,
 * erase_pipe_synchronize) may log the end of an earlier operation after
 * it. Returns the number of ranges written.
 */
size_t erase_trace_write_events(FILE *out, const erase_trace_record_t *rec, size_t n, int rank,
                                const char *const *stream_names, int nstreams, int64_t t0_ns,
                                int first);

#endif

#include "lib/sched/trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t t0, t1;
} span_t;

static int cmp_span(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Pair begin/end records of one stream in order: ranges never nest on one
 * stream in erase's plans. Returns the spans of labels ending in `suffix`. */
static size_t spans_of(const erase_trace_record_t *rec, size_t n, const char *suffix, span_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rec[i].begin || !ends_with(rec[i].label, suffix))
            continue;
        for (size_t j = i + 1; j < n; j++)
            if (!rec[j].begin && rec[j].stream == rec[i].stream && rec[j].label == rec[i].label) {
                out[k++] = (span_t){ rec[i].time_ns, rec[j].time_ns };
                break;
            }
    }
    return k;
}

static int cmp_record(const void *a, const void *b)
{
    const erase_trace_record_t *x = a, *y = b;
    return (x->time_ns > y->time_ns) - (x->time_ns < y->time_ns);
}

erase_trace_overlap_t erase_trace_overlap(const erase_trace_record_t *rec_in, size_t n)
{
    erase_trace_overlap_t o = { 0 };
    erase_trace_record_t *rec = malloc((n ? n : 1) * sizeof *rec);
    span_t *fwd = malloc((n ? n : 1) * sizeof *fwd), *bwd = malloc((n ? n : 1) * sizeof *bwd);
    if (!rec || !fwd || !bwd)
        goto out;
    memcpy(rec, rec_in, n * sizeof *rec);
    qsort(rec, n, sizeof *rec, cmp_record);
    size_t nf = spans_of(rec, n, "/forward", fwd), nb = spans_of(rec, n, "/backward", bwd);
    /* union of forward spans, as disjoint sorted spans */
    qsort(fwd, nf, sizeof *fwd, cmp_span);
    size_t nu = 0;
    for (size_t i = 0; i < nf; i++) {
        if (nu > 0 && fwd[i].t0 <= fwd[nu - 1].t1) {
            if (fwd[i].t1 > fwd[nu - 1].t1)
                fwd[nu - 1].t1 = fwd[i].t1;
        } else {
            fwd[nu++] = fwd[i];
        }
    }
    int64_t total = 0, over = 0;
    for (size_t i = 0; i < nb; i++) {
        total += bwd[i].t1 - bwd[i].t0;
        for (size_t j = 0; j < nu; j++) {
            int64_t lo = bwd[i].t0 > fwd[j].t0 ? bwd[i].t0 : fwd[j].t0;
            int64_t hi = bwd[i].t1 < fwd[j].t1 ? bwd[i].t1 : fwd[j].t1;
            if (hi > lo)
                over += hi - lo;
        }
    }
    o.backward_ms = (double)total / 1e6;
    o.overlapped_ms = (double)over / 1e6;
    o.overlap_fraction = total > 0 ? (double)over / (double)total : 0.0;
out:
    free(rec);
    free(fwd);
    free(bwd);
    return o;
}

size_t erase_trace_write_events(FILE *out, const erase_trace_record_t *rec, size_t n, int rank,
                                const char *const *stream_names, int nstreams, int64_t t0_ns,
                                int first)
{
    size_t written = 0;
    for (int k = 0; k < nstreams; k++) {
        fprintf(out, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                     "\"args\":{\"name\":\"%s\"}}",
                first ? "" : ",\n", rank, k, stream_names && stream_names[k] ? stream_names[k] : "stream");
        first = 0;
    }
    fprintf(out, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}", rank, rank);
    for (size_t i = 0; i < n; i++) {
        if (!rec[i].begin || rec[i].time_ns < t0_ns) /* begun before the window: a warm-up's send that ended late */
            continue;
        for (size_t j = i + 1; j < n; j++)
            if (!rec[j].begin && rec[j].stream == rec[i].stream && rec[j].label == rec[i].label) {
                fprintf(out, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                        rec[i].label, rank, rec[i].stream, (double)(rec[i].time_ns - t0_ns) / 1e3,
                        (double)(rec[j].time_ns - rec[i].time_ns) / 1e3);
                written++;
                break;
            }
    }
    return written;
}

size_t erase_trace_collect(erase_device_t *dev, erase_stream_t *const *streams, int n, erase_trace_record_t *out,
                           size_t max)
{
    size_t got = erase_device_trace_drain(dev, out, max, NULL), kept = 0;
    for (size_t i = 0; i < got; i++)
        for (int k = 0; k < n; k++)
            if (streams[k] && erase_stream_number(streams[k]) == out[i].stream) {
                out[kept] = out[i];
                out[kept++].stream = k;
                break;
            }
    return kept;
}

#include "io/cls_stats.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void erase_cls_stats_init(erase_cls_stats_t *s, int64_t features, int classes)
{
    memset(s, 0, sizeof *s);
    s->features = features;
    s->classes = classes;
    s->min = INFINITY;
    s->max = -INFINITY;
}

void erase_cls_stats_add(erase_cls_stats_t *s, int64_t n, const float *features, const uint8_t *label)
{
    float lo = s->min, hi = s->max;
    double sum = 0;
    for (int64_t k = 0; k < n * s->features; k++) {
        float x = features[k];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
    }
    s->min = lo;
    s->max = hi;
    s->sum += sum;
    for (int64_t i = 0; i < n; i++)
        if (label[i] < s->classes)
            s->counts[label[i]]++;
    s->rows += n;
}

void erase_cls_stats_merge(erase_cls_stats_t *dst, const erase_cls_stats_t *src)
{
    dst->rows += src->rows;
    dst->sum += src->sum;
    dst->min = src->min < dst->min ? src->min : dst->min;
    dst->max = src->max > dst->max ? src->max : dst->max;
    for (int c = 0; c < dst->classes; c++)
        dst->counts[c] += src->counts[c];
}

void erase_cls_stats_print(const erase_cls_stats_t *s, FILE *out, const char *prefix)
{
    double values = (double)s->rows * (double)s->features;
    fprintf(out, "%srows %" PRId64 ", features %" PRId64 ", classes %d\n", prefix, s->rows, s->features, s->classes);
    if (s->rows)
        fprintf(out, "%sfeature values in [%g, %g], mean %.6f\n", prefix, (double)s->min, (double)s->max,
                s->sum / values);
    fprintf(out, "%s%-6s %10s %8s\n", prefix, "class", "rows", "share");
    for (int c = 0; c < s->classes; c++)
        fprintf(out, "%s%-6d %10" PRId64 " %7.2f%%\n", prefix, c, s->counts[c],
                s->rows ? 100.0 * (double)s->counts[c] / (double)s->rows : 0.0);
}

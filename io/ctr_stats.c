#include "io/ctr_stats.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void erase_ctr_stats_init(erase_ctr_stats_t *s)
{
    memset(s, 0, sizeof *s);
    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        s->dense_min[j] = INFINITY;
        s->dense_max[j] = -INFINITY;
    }
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        s->sparse_min[k] = ERASE_CTR_SPARSE_MISSING;
}

void erase_ctr_stats_add(erase_ctr_stats_t *s, int64_t n, const uint8_t *label, const float *dense,
                         const uint32_t *sparse)
{
    s->rows += n;
    for (int64_t i = 0; i < n; i++) {
        s->clicks += label[i] != 0;
        const float *d = dense + i * ERASE_CTR_SHARD_DENSE;
        for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
            float x = d[j];
            if (isnan(x)) {
                s->dense_missing[j]++;
                continue;
            }
            s->dense_min[j] = x < s->dense_min[j] ? x : s->dense_min[j];
            s->dense_max[j] = x > s->dense_max[j] ? x : s->dense_max[j];
        }
        const uint32_t *c = sparse + i * ERASE_CTR_SHARD_FIELDS;
        for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
            uint32_t id = c[k];
            if (id == ERASE_CTR_SPARSE_MISSING) {
                s->sparse_missing[k]++;
                continue;
            }
            s->sparse_min[k] = id < s->sparse_min[k] ? id : s->sparse_min[k];
            s->sparse_max[k] = id > s->sparse_max[k] ? id : s->sparse_max[k];
        }
    }
}

void erase_ctr_stats_merge(erase_ctr_stats_t *dst, const erase_ctr_stats_t *src)
{
    dst->rows += src->rows;
    dst->clicks += src->clicks;
    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        dst->dense_missing[j] += src->dense_missing[j];
        dst->dense_min[j] = fminf(dst->dense_min[j], src->dense_min[j]);
        dst->dense_max[j] = fmaxf(dst->dense_max[j], src->dense_max[j]);
    }
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        dst->sparse_missing[k] += src->sparse_missing[k];
        dst->sparse_min[k] = src->sparse_min[k] < dst->sparse_min[k] ? src->sparse_min[k] : dst->sparse_min[k];
        dst->sparse_max[k] = src->sparse_max[k] > dst->sparse_max[k] ? src->sparse_max[k] : dst->sparse_max[k];
    }
}

double erase_ctr_stats_base_rate(const erase_ctr_stats_t *s)
{
    return s->rows ? (double)s->clicks / (double)s->rows : 0.0;
}

void erase_ctr_stats_print(const erase_ctr_stats_t *s, FILE *out, const char *prefix)
{
    double rows = s->rows ? (double)s->rows : 1.0;
    fprintf(out, "%srows %" PRId64 ", clicks %" PRId64 ", base rate %.6f\n", prefix, s->rows, s->clicks,
            erase_ctr_stats_base_rate(s));
    fprintf(out, "%s%-8s %9s  %s\n", prefix, "feature", "missing", "range of present values");
    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        char name[16];
        snprintf(name, sizeof name, "I%d", j + 1);
        if (s->dense_missing[j] == s->rows)
            fprintf(out, "%s%-8s %8.3f%%  (none)\n", prefix, name, 100.0 * (double)s->dense_missing[j] / rows);
        else
            fprintf(out, "%s%-8s %8.3f%%  %.0f .. %.0f\n", prefix, name,
                    100.0 * (double)s->dense_missing[j] / rows, s->dense_min[j], s->dense_max[j]);
    }
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", k + 1);
        if (s->sparse_missing[k] == s->rows)
            fprintf(out, "%s%-8s %8.3f%%  (none)\n", prefix, name, 100.0 * (double)s->sparse_missing[k] / rows);
        else
            fprintf(out, "%s%-8s %8.3f%%  %08" PRIx32 " .. %08" PRIx32 "\n", prefix, name,
                    100.0 * (double)s->sparse_missing[k] / rows, s->sparse_min[k], s->sparse_max[k]);
    }
}

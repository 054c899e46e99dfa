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
    erase_ctr_stats_print_distinct(s, NULL, out, prefix);
}

void erase_ctr_stats_print_distinct(const erase_ctr_stats_t *s, const erase_ctr_distinct_t *d, FILE *out,
                                    const char *prefix)
{
    double rows = s->rows ? (double)s->rows : 1.0;
    int estimates = 0;
    char col[32] = "";
    fprintf(out, "%srows %" PRId64 ", clicks %" PRId64 ", base rate %.6f\n", prefix, s->rows, s->clicks,
            erase_ctr_stats_base_rate(s));
    if (d)
        snprintf(col, sizeof col, " %10s", "distinct");
    fprintf(out, "%s%-8s %9s%s  %s\n", prefix, "feature", "missing", col, "range of present values");
    if (d)
        snprintf(col, sizeof col, " %10s", "");
    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        char name[16];
        snprintf(name, sizeof name, "I%d", j + 1);
        if (s->dense_missing[j] == s->rows)
            fprintf(out, "%s%-8s %8.3f%%%s  (none)\n", prefix, name, 100.0 * (double)s->dense_missing[j] / rows, col);
        else
            fprintf(out, "%s%-8s %8.3f%%%s  %.0f .. %.0f\n", prefix, name,
                    100.0 * (double)s->dense_missing[j] / rows, col, s->dense_min[j], s->dense_max[j]);
    }
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", k + 1);
        if (d) {
            int est;
            int64_t n = erase_distinct_count(d->field[k], &est);
            char num[24];
            snprintf(num, sizeof num, "%s%" PRId64, est ? "~" : "", n);
            snprintf(col, sizeof col, " %10s", num);
            estimates += est;
        }
        if (s->sparse_missing[k] == s->rows)
            fprintf(out, "%s%-8s %8.3f%%%s  (none)\n", prefix, name, 100.0 * (double)s->sparse_missing[k] / rows,
                    col);
        else
            fprintf(out, "%s%-8s %8.3f%%%s  %08" PRIx32 " .. %08" PRIx32 "\n", prefix, name,
                    100.0 * (double)s->sparse_missing[k] / rows, col, s->sparse_min[k], s->sparse_max[k]);
    }
    if (estimates)
        fprintf(out, "%s~N: a HyperLogLog estimate (more than %d distinct ids; relative standard error 0.8%%)\n",
                prefix, ERASE_DISTINCT_EXACT_MAX);
}

erase_status_t erase_ctr_distinct_init(erase_ctr_distinct_t *d)
{
    memset(d, 0, sizeof *d);
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        if (erase_distinct_create(&d->field[k]) != ERASE_OK) {
            erase_ctr_distinct_free(d);
            return ERASE_ERR_NOMEM;
        }
    return ERASE_OK;
}

void erase_ctr_distinct_free(erase_ctr_distinct_t *d)
{
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        erase_distinct_destroy(d->field[k]);
        d->field[k] = NULL;
    }
}

erase_status_t erase_ctr_distinct_add(erase_ctr_distinct_t *d, int64_t n, const uint32_t *sparse)
{
    uint32_t ids[256];
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        for (int64_t b = 0; b < n; b += 256) { /* one feature's present ids, 256 rows at a time */
            int m = 0;
            for (int64_t i = b; i < n && i < b + 256; i++) {
                uint32_t id = sparse[i * ERASE_CTR_SHARD_FIELDS + k];
                if (id != ERASE_CTR_SPARSE_MISSING)
                    ids[m++] = id;
            }
            ERASE_CHECK(erase_distinct_add(d->field[k], ids, m));
        }
    return ERASE_OK;
}

erase_status_t erase_ctr_distinct_merge(erase_ctr_distinct_t *dst, const erase_ctr_distinct_t *src)
{
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        ERASE_CHECK(erase_distinct_merge(dst->field[k], src->field[k]));
    return ERASE_OK;
}

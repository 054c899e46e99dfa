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

/* One id a feature ([n, 26] ids, lengths NULL): the loop below without the
 * per-id length loop and its branches (branch-free min, max and counts, the
 * same results). The conversion's hot path: one-hot Criteo. */
static void add_one_hot_ids(erase_ctr_stats_t *s, int64_t n, const uint32_t *ids)
{
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        s->sparse_ids[k] += n;
        s->hot_max[k] = n > 0 && s->hot_max[k] < 1 ? 1 : s->hot_max[k];
    }
    for (int64_t i = 0; i < n; i++) {
        const uint32_t *c = ids + i * ERASE_CTR_SHARD_FIELDS;
        for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
            uint32_t id = c[k], absent = id == ERASE_CTR_SPARSE_MISSING;
            s->sparse_missing[k] += absent;
            s->missing_rows[k] += absent;
            /* the missing id is the largest: it never lowers the minimum */
            s->sparse_min[k] = id < s->sparse_min[k] ? id : s->sparse_min[k];
            uint32_t present = absent ? 0 : id;
            s->sparse_max[k] = present > s->sparse_max[k] ? present : s->sparse_max[k];
        }
    }
}

void erase_ctr_stats_add_ids(erase_ctr_stats_t *s, int64_t n, const uint8_t *label, const float *dense,
                             const uint32_t *lengths, const uint32_t *ids)
{
    s->rows += n;
    for (int64_t i = 0; i < n; i++) {
        s->clicks += label[i] != 0;
        const float *d = dense + i * ERASE_CTR_SHARD_DENSE;
        for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
            float x = d[j]; /* NaN (missing) compares false: min and max keep theirs */
            s->dense_missing[j] += isnan(x) != 0;
            s->dense_min[j] = x < s->dense_min[j] ? x : s->dense_min[j];
            s->dense_max[j] = x > s->dense_max[j] ? x : s->dense_max[j];
        }
    }
    if (!lengths) {
        add_one_hot_ids(s, n, ids);
        return;
    }
    const uint32_t *c = ids;
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
            uint32_t m = lengths[i * ERASE_CTR_SHARD_FIELDS + k];
            s->sparse_ids[k] += m;
            s->hot_max[k] = m > s->hot_max[k] ? m : s->hot_max[k];
            uint32_t absent = 0;
            for (uint32_t t = 0; t < m; t++) {
                uint32_t id = *c++;
                if (id == ERASE_CTR_SPARSE_MISSING) {
                    s->sparse_missing[k]++;
                    absent++;
                    continue;
                }
                s->sparse_min[k] = id < s->sparse_min[k] ? id : s->sparse_min[k];
                s->sparse_max[k] = id > s->sparse_max[k] ? id : s->sparse_max[k];
            }
            s->missing_rows[k] += absent == m;
        }
    }
}

void erase_ctr_stats_add(erase_ctr_stats_t *s, int64_t n, const uint8_t *label, const float *dense,
                         const uint32_t *sparse)
{
    erase_ctr_stats_add_ids(s, n, label, dense, NULL, sparse);
}

int erase_ctr_stats_multi_hot(const erase_ctr_stats_t *s)
{
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        if (s->hot_max[k] > 1)
            return 1;
    return 0;
}

void erase_ctr_stats_merge(erase_ctr_stats_t *dst, const erase_ctr_stats_t *src)
{
    dst->rare_row |= src->rare_row;
    dst->rows += src->rows;
    dst->clicks += src->clicks;
    for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++) {
        dst->dense_missing[j] += src->dense_missing[j];
        dst->dense_min[j] = fminf(dst->dense_min[j], src->dense_min[j]);
        dst->dense_max[j] = fmaxf(dst->dense_max[j], src->dense_max[j]);
    }
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        dst->sparse_missing[k] += src->sparse_missing[k];
        dst->missing_rows[k] += src->missing_rows[k];
        dst->sparse_min[k] = src->sparse_min[k] < dst->sparse_min[k] ? src->sparse_min[k] : dst->sparse_min[k];
        dst->sparse_max[k] = src->sparse_max[k] > dst->sparse_max[k] ? src->sparse_max[k] : dst->sparse_max[k];
        dst->sparse_ids[k] += src->sparse_ids[k];
        dst->hot_max[k] = src->hot_max[k] > dst->hot_max[k] ? src->hot_max[k] : dst->hot_max[k];
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
        if (s->missing_rows[k] == s->rows)
            fprintf(out, "%s%-8s %8.3f%%%s  (none)\n", prefix, name, 100.0 * (double)s->missing_rows[k] / rows,
                    col);
        else
            fprintf(out, "%s%-8s %8.3f%%%s  %08" PRIx32 " .. %08" PRIx32 "\n", prefix, name,
                    100.0 * (double)s->missing_rows[k] / rows, col, s->sparse_min[k], s->sparse_max[k]);
    }
    if (s->rare_row)
        fprintf(out, "%sC1-C26 went through a vocabulary: their \"missing\" counts the rows whose ids all map to its "
                     "rare row (missing, or not frequent)\n", prefix);
    if (estimates)
        fprintf(out, "%s~N: a HyperLogLog estimate (more than %d distinct ids; relative standard error 0.8%%)\n",
                prefix, ERASE_DISTINCT_EXACT_MAX);
    if (!erase_ctr_stats_multi_hot(s))
        return;
    fprintf(out, "%smulti-hot: ids per sample (a missing feature counts as one id)\n", prefix);
    fprintf(out, "%s%-8s %8s %8s\n", prefix, "feature", "max", "mean");
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", k + 1);
        fprintf(out, "%s%-8s %8" PRIu32 " %8.3f\n", prefix, name, s->hot_max[k], (double)s->sparse_ids[k] / rows);
    }
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

erase_status_t erase_ctr_distinct_add_ids(erase_ctr_distinct_t *d, int64_t n, const uint32_t *lengths,
                                          const uint32_t *ids)
{
    enum { BATCH = 256 };
    uint32_t pending[ERASE_CTR_SHARD_FIELDS][BATCH]; /* each feature's present ids, BATCH at a time */
    int m[ERASE_CTR_SHARD_FIELDS] = { 0 };
    const uint32_t *c = ids;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
            for (uint32_t t = lengths ? lengths[i * ERASE_CTR_SHARD_FIELDS + k] : 1; t > 0; t--) {
                uint32_t id = *c++;
                if (id == ERASE_CTR_SPARSE_MISSING)
                    continue;
                pending[k][m[k]++] = id;
                if (m[k] == BATCH) {
                    ERASE_CHECK(erase_distinct_add(d->field[k], pending[k], m[k]));
                    m[k] = 0;
                }
            }
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        ERASE_CHECK(erase_distinct_add(d->field[k], pending[k], m[k]));
    return ERASE_OK;
}

erase_status_t erase_ctr_distinct_add(erase_ctr_distinct_t *d, int64_t n, const uint32_t *sparse)
{
    return erase_ctr_distinct_add_ids(d, n, NULL, sparse);
}

erase_status_t erase_ctr_distinct_merge(erase_ctr_distinct_t *dst, const erase_ctr_distinct_t *src)
{
    for (int k = 0; k < ERASE_CTR_SHARD_FIELDS; k++)
        ERASE_CHECK(erase_distinct_merge(dst->field[k], src->field[k]));
    return ERASE_OK;
}

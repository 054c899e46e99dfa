/*
 * Placement of embedding tables over ranks (lib/nn/sharding.h).
 */
#include "lib/nn/sharding.h"

#include <math.h>
#include <string.h>

#define SHARD_TABLES_MAX 64 /* ERASE_FIELDS_MAX: the most tables a model holds */

static const char *const kind_names[] = { "replicated", "table", "row", "auto" };

const char *erase_shard_kind_name(erase_shard_kind_t kind)
{
    return (unsigned)kind < sizeof kind_names / sizeof kind_names[0] ? kind_names[kind] : NULL;
}

erase_status_t erase_shard_kind_parse(const char *what, const char *name, erase_shard_kind_t *out)
{
    for (int k = 0; k < (int)(sizeof kind_names / sizeof kind_names[0]); k++)
        if (name && strcmp(name, kind_names[k]) == 0) {
            *out = (erase_shard_kind_t)k;
            return ERASE_OK;
        }
    return ERASE_ERROR(ERASE_ERR_INVALID, "%s '%s': expected replicated, table, row or auto", what,
                       name ? name : "");
}

/* Table-wise placement of the tables marked in `pick`, by weight w[t]. */
static void place_tables(int tables, const int *pick, const double *w, int ranks, erase_shard_t *out)
{
    double load[SHARD_TABLES_MAX]; /* the load of the ranks that got a table so far; more ranks than tables: 0 */
    int used = ranks < SHARD_TABLES_MAX ? ranks : SHARD_TABLES_MAX;
    for (int r = 0; r < used; r++)
        load[r] = 0;
    int done[SHARD_TABLES_MAX] = { 0 };
    for (;;) {
        int t = -1; /* the heaviest left, the lower on ties */
        for (int i = 0; i < tables; i++)
            if (pick[i] && !done[i] && (t < 0 || w[i] > w[t]))
                t = i;
        if (t < 0)
            return;
        int r = 0; /* the least loaded, the lower on ties (at most `tables` ranks are ever loaded) */
        for (int i = 1; i < used; i++)
            if (load[i] < load[r])
                r = i;
        load[r] += w[t];
        out[t].kind = ERASE_SHARD_TABLE;
        out[t].owner = r;
        done[t] = 1;
    }
}

erase_status_t erase_shard_plan(erase_shard_kind_t kind, int tables, const int64_t *rows, const double *lookups,
                                int64_t row_bytes, int ranks, int64_t threshold, erase_shard_t *out)
{
    if (!erase_shard_kind_name(kind))
        return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: kind %d (replicated, table, row or auto)",
                           (int)kind);
    if (tables < 0 || tables > SHARD_TABLES_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: %d tables (expected 0 to %d)", tables,
                           SHARD_TABLES_MAX);
    if (ranks < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: %d ranks (expected >= 1)", ranks);
    if (row_bytes < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: rows of %lld bytes (expected >= 1)",
                           (long long)row_bytes);
    double w[SHARD_TABLES_MAX];
    int64_t bytes[SHARD_TABLES_MAX], total = 0;
    for (int t = 0; t < tables; t++) {
        double l = lookups ? lookups[t] : 1.0;
        if (rows[t] < 1)
            return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: table %d has %lld rows (expected >= 1)", t,
                               (long long)rows[t]);
        if (!(l >= 0) || !isfinite(l))
            return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: table %d: %g lookups per sample (expected "
                               "a finite number >= 0)", t, l);
        if (rows[t] > INT64_MAX / row_bytes || total > INT64_MAX - rows[t] * row_bytes)
            return ERASE_ERROR(ERASE_ERR_INVALID, "embedding placement: table %d: %lld rows of %lld bytes overflow",
                               t, (long long)rows[t], (long long)row_bytes);
        bytes[t] = rows[t] * row_bytes;
        total += bytes[t];
        w[t] = (double)bytes[t] * l;
        out[t] = (erase_shard_t){ .kind = ERASE_SHARD_REPLICATED, .owner = -1, .rows = rows[t], .ranks = ranks };
    }
    int pick[SHARD_TABLES_MAX];
    if (threshold <= 0)
        threshold = total / ranks;
    for (int t = 0; t < tables; t++) {
        if (kind == ERASE_SHARD_ROW || (kind == ERASE_SHARD_AUTO && bytes[t] > threshold))
            out[t].kind = ERASE_SHARD_ROW;
        pick[t] = kind == ERASE_SHARD_TABLE || (kind == ERASE_SHARD_AUTO && bytes[t] <= threshold);
    }
    place_tables(tables, pick, w, ranks, out);
    return ERASE_OK;
}

int64_t erase_shard_first_row(const erase_shard_t *s, int r)
{
    return s->kind == ERASE_SHARD_ROW ? (int64_t)r * s->rows / s->ranks : 0;
}

int64_t erase_shard_rows_on(const erase_shard_t *s, int r)
{
    switch (s->kind) {
    case ERASE_SHARD_TABLE:
        return r == s->owner ? s->rows : 0;
    case ERASE_SHARD_ROW:
        return erase_shard_first_row(s, r + 1) - erase_shard_first_row(s, r);
    default:
        return s->rows;
    }
}

int erase_shard_owner(const erase_shard_t *s, int64_t row, int64_t *local)
{
    int r = -1;
    if (s->kind == ERASE_SHARD_TABLE)
        r = s->owner;
    else if (s->kind == ERASE_SHARD_ROW) /* the last r with floor(r R / D) <= row */
        r = (int)(((row + 1) * s->ranks - 1) / s->rows);
    if (local)
        *local = r >= 0 ? row - erase_shard_first_row(s, r) : row;
    return r;
}

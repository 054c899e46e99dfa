#include "io/convert_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* 1 if the file starts with gzip's magic bytes 1f 8b, 0 if not; -1 with
 * errno if it cannot be read. */
static int is_gzip(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char m[2] = { 0, 0 };
    size_t k = fread(m, 1, 2, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        errno = err;
        return -1;
    }
    return k == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

/* Plan one input: append its units. */
static erase_status_t plan_file(const char *path, int file, int64_t split_bytes, erase_convert_plan_t *plan, int *cap)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return ERASE_ERROR(ERASE_ERR_IO, "%s: not a regular file", path);
    int gz = is_gzip(path);
    if (gz < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int64_t size = (int64_t)sb.st_size;
    plan->total_bytes += size;
    int64_t pieces = gz || size <= split_bytes ? 1 : (size - 1) / split_bytes + 1;
    if (pieces > 1000000 || plan->count + pieces > 1000000)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: more than 1000000 ranges of %lld bytes; raise --split-bytes", path,
                           (long long)split_bytes);
    for (int64_t k = 0; k < pieces; k++) {
        if (plan->count == *cap) {
            int grown = *cap ? 2 * *cap : 64;
            erase_convert_unit_t *u = realloc(plan->units, sizeof *u * (size_t)grown);
            if (!u)
                return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the plan");
            plan->units = u;
            *cap = grown;
        }
        erase_convert_unit_t *u = &plan->units[plan->count++];
        memset(u, 0, sizeof *u);
        u->file = file;
        u->gzip = gz;
        u->split = pieces > 1;
        u->start = pieces > 1 ? k * split_bytes : 0;
        u->end = pieces > 1 && k + 1 < pieces ? (k + 1) * split_bytes : size;
    }
    return ERASE_OK;
}

erase_status_t erase_convert_plan_make(const char *const *inputs, int n, int64_t split_bytes,
                                       erase_convert_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    if (split_bytes < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "bytes per range must be >= 1, got %lld", (long long)split_bytes);
    int cap = 0;
    for (int i = 0; i < n; i++) {
        erase_status_t st = plan_file(inputs[i], i, split_bytes, plan, &cap);
        if (st != ERASE_OK) {
            erase_convert_plan_free(plan);
            return st;
        }
    }
    return ERASE_OK;
}

static const erase_convert_unit_t *sort_base;

/* Larger units first; ties: the lower unit first. */
static int by_size_desc(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    int64_t si = sort_base[i].end - sort_base[i].start, sj = sort_base[j].end - sort_base[j].start;
    return si != sj ? (si < sj ? 1 : -1) : (i > j) - (i < j);
}

void erase_convert_plan_deal(erase_convert_plan_t *plan, int ranks)
{
    if (ranks < 1)
        ranks = 1;
    int *order = malloc(sizeof *order * (size_t)(plan->count ? plan->count : 1));
    int64_t *load = calloc((size_t)ranks, sizeof *load);
    if (!order || !load) { /* fall back to round robin: still deterministic */
        for (int u = 0; u < plan->count; u++)
            plan->units[u].rank = u % ranks;
        free(order);
        free(load);
        return;
    }
    for (int u = 0; u < plan->count; u++)
        order[u] = u;
    sort_base = plan->units;
    qsort(order, (size_t)plan->count, sizeof *order, by_size_desc);
    for (int k = 0; k < plan->count; k++) {
        erase_convert_unit_t *u = &plan->units[order[k]];
        int best = 0;
        for (int r = 1; r < ranks; r++)
            if (load[r] < load[best])
                best = r;
        u->rank = best;
        load[best] += u->end - u->start;
    }
    free(order);
    free(load);
}

void erase_convert_plan_free(erase_convert_plan_t *plan)
{
    free(plan->units);
    memset(plan, 0, sizeof *plan);
}

/* Sparse-gradient pack and merge of lib/ops/ops.h on the CPU backend;
 * arguments validated by lib/ops/ops.c. */
#include "lib/ops/cpu/ops_cpu.h"


#include <stdlib.h>
#include <string.h>

typedef struct {
    int ranks, tables, capacity, dim;
    float scale;
    const int *count[ERASE_FIELDS_MAX];
    const uint32_t *rows[ERASE_FIELDS_MAX];
    const float *values[ERASE_FIELDS_MAX];
    int *out_count[ERASE_FIELDS_MAX];
    uint32_t *out_rows[ERASE_FIELDS_MAX];
    float *out_values[ERASE_FIELDS_MAX];
    int *packed_counts;
    uint32_t *packed_rows;
    float *packed_values;
    const int *all_counts;
    const uint32_t *all_rows;
    const float *all_values;
} sparse_args_t;

static erase_status_t pack_k(const void *p)
{
    const sparse_args_t *a = p;
    for (int t = 0; t < a->tables; t++) {
        int n = *a->count[t];
        if (n < 0 || n > a->capacity)
            return ERASE_ERROR(ERASE_ERR_INVALID, "sparse pack: table %d has %d rows, capacity %d", t, n, a->capacity);
        a->packed_counts[t] = n;
        size_t slot = (size_t)t * a->capacity;
        memcpy(a->packed_rows + slot, a->rows[t], sizeof(uint32_t) * (size_t)n);
        memcpy(a->packed_values + slot * a->dim, a->values[t], sizeof(float) * (size_t)n * a->dim);
    }
    return ERASE_OK;
}

/* The highest bit in which pack indices a and b differ (a != b): the level
 * of the pairwise tree (lib/ops/ops.h) where their sums meet. */
static int meet_level(int a, int b) { return 31 - __builtin_clz((unsigned)(a ^ b)); }

/* A stack of a row's partial sums in the pairwise tree over pack indices:
 * `at[k]` a pack index inside node k's subtree, `sum` [depth][dim]. */
typedef struct {
    int depth, dim;
    int at[33];
    float *sum;
} tree_stack_t;

/* Add node top into the one below it (left + right) and pop it. */
static void tree_merge_top(tree_stack_t *st)
{
    float *left = st->sum + (size_t)(st->depth - 2) * st->dim, *right = left + st->dim;
    for (int d = 0; d < st->dim; d++)
        left[d] += right[d];
    st->depth--;
}

/* Push pack q's vector g (packs come in ascending order): first merge the
 * top two nodes while they meet below the level where q meets the top. */
static void tree_push(tree_stack_t *st, int q, const float *g)
{
    while (st->depth >= 2 &&
           meet_level(st->at[st->depth - 2], st->at[st->depth - 1]) < meet_level(st->at[st->depth - 1], q))
        tree_merge_top(st);
    memcpy(st->sum + (size_t)st->depth * st->dim, g, sizeof(float) * (size_t)st->dim);
    st->at[st->depth++] = q;
}

/* k-way merge of the ranks' ascending row lists of each table; a row's
 * vectors are summed as the pairwise tree over the pack index (`stack`:
 * room for 33 x dim floats) */
static erase_status_t merge_tables(const sparse_args_t *a, float *stack)
{
    int pos[1024];
    if (a->ranks > 1024)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sparse merge: %d ranks (at most 1024)", a->ranks);
    tree_stack_t st = { .dim = a->dim, .sum = stack };
    for (int t = 0; t < a->tables; t++) {
        for (int r = 0; r < a->ranks; r++) {
            int n = a->all_counts[r * a->tables + t];
            if (n < 0 || n > a->capacity)
                return ERASE_ERROR(ERASE_ERR_INVALID, "sparse merge: rank %d table %d has %d rows, capacity %d",
                                   r, t, n, a->capacity);
            pos[r] = 0;
        }
        int out = 0;
        for (;;) {
            uint32_t next = UINT32_MAX;
            int any = 0;
            for (int r = 0; r < a->ranks; r++) {
                int n = a->all_counts[r * a->tables + t];
                size_t base = ((size_t)r * a->tables + t) * a->capacity;
                if (pos[r] < n && (!any || a->all_rows[base + pos[r]] < next)) {
                    next = a->all_rows[base + pos[r]];
                    any = 1;
                }
            }
            if (!any)
                break;
            st.depth = 0;
            for (int r = 0; r < a->ranks; r++) { /* ascending pack index: deterministic */
                int n = a->all_counts[r * a->tables + t];
                size_t base = ((size_t)r * a->tables + t) * a->capacity;
                if (pos[r] < n && a->all_rows[base + pos[r]] == next) {
                    tree_push(&st, r, a->all_values + (base + (size_t)pos[r]) * a->dim);
                    pos[r]++;
                }
            }
            while (st.depth >= 2)
                tree_merge_top(&st);
            float *v = a->out_values[t] + (size_t)out * a->dim;
            for (int d = 0; d < a->dim; d++)
                v[d] = stack[d] * a->scale;
            a->out_rows[t][out++] = next;
        }
        *a->out_count[t] = out;
    }
    return ERASE_OK;
}

/* The merge kernel: merge_tables with a stack of 33 x dim floats (depth at
 * most 1 + the bits of a pack index). */
static erase_status_t merge_k(const void *p)
{
    const sparse_args_t *a = p;
    float *stack = malloc(sizeof(float) * 33 * (size_t)(a->dim > 0 ? a->dim : 1));
    if (!stack)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "sparse merge: no memory for 33 x %d floats", a->dim);
    erase_status_t st = merge_tables(a, stack);
    free(stack);
    return st;
}

erase_status_t erase_cpu_sparse_pack(erase_stream_t *s, int tables, int capacity, int dim,
                                 const int *const *count, const uint32_t *const *rows,
                                 const float *const *values, int *out_counts, uint32_t *out_rows,
                                 float *out_values)
{
    sparse_args_t a = { .tables = tables, .capacity = capacity, .dim = dim,
                        .packed_counts = out_counts, .packed_rows = out_rows, .packed_values = out_values };
    for (int t = 0; t < tables; t++) {
        a.count[t] = count[t];
        a.rows[t] = rows[t];
        a.values[t] = values[t];
    }
    LAUNCH(s, pack_k, a);
}

erase_status_t erase_cpu_sparse_merge(erase_stream_t *s, int ranks, int tables, int capacity, int dim,
                                  float scale, const int *all_counts, const uint32_t *all_rows,
                                  const float *all_values, int *const *count, uint32_t *const *rows,
                                  float *const *values)
{
    sparse_args_t a = { .ranks = ranks, .tables = tables, .capacity = capacity, .dim = dim,
                        .scale = scale, .all_counts = all_counts, .all_rows = all_rows,
                        .all_values = all_values };
    for (int t = 0; t < tables; t++) {
        a.out_count[t] = count[t];
        a.out_rows[t] = rows[t];
        a.out_values[t] = values[t];
    }
    LAUNCH(s, merge_k, a);
}

#include "io/reader.h"

#include "io/ctr_index.h"
#include "lib/core/checked.h"
#include "lib/core/fpmode.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PREFETCH 64
#define OPEN_SHARDS 8 /* shard files kept open by the reading thread (LRU) */
#define MESSAGE_MAX 2048

typedef struct {
    int shard;
    int64_t begin, count; /* rows [begin, begin + count) of the shard */
} block_t;

/* A pool read whole (shuffled reading): the rows of its blocks in the
 * order of the epoch's places, their row ids, and their permutation. */
typedef struct {
    int64_t pool;   /* pool index in the epoch, -1: empty */
    int64_t epoch;  /* epoch of the pool */
    int64_t rows;   /* rows held */
    void *raw[ERASE_READER_MAX_FIELDS]; /* [capacity, width] each, as stored */
    int64_t *row_id; /* [capacity]: row id of each row held */
    uint32_t *perm;  /* [capacity]: the pool's row at each of its positions */
} pool_cache_t;

typedef struct {
    void *field[ERASE_READER_MAX_FIELDS]; /* [max_local, width] each */
    int64_t *row_id;
    erase_reader_batch_t meta;
    int64_t global_start; /* position of the global batch's first sample */
    erase_status_t status;
    char error[MESSAGE_MAX];
} slot_t;

typedef struct {
    int shard; /* index, -1: empty */
    void *h;
    uint64_t used;
} open_shard_t;

struct erase_reader {
    const erase_row_format_t *fmt;
    erase_reader_options_t o;
    erase_row_layout_t layout; /* of the first shard */
    size_t row_bytes[ERASE_READER_MAX_FIELDS]; /* bytes of one row of each field */
    size_t raw_bytes[ERASE_READER_MAX_FIELDS]; /* bytes of one row of each raw array */
    int64_t chunk_rows;        /* of the first shard */
    int nshards;
    char **paths;  /* [nshards] */
    int64_t *rows; /* [nshards] */
    int64_t *base; /* [nshards]: row id of each shard's first row */
    int64_t total_rows, samples, steps, max_local;
    block_t *blocks;
    int64_t nblocks;
    size_t index_bytes;  /* what the per-shard and per-block arrays above and below hold (erase_reader_info) */
    size_t buffer_bytes; /* what the pool, scratch and batch slots hold */

    /* producer state: only the producer touches it while the thread runs */
    open_shard_t open[OPEN_SHARDS]; /* a dataset may have more shards than file descriptors */
    int64_t prod_epoch, prod_pos;
    int64_t order_epoch; /* epoch of order/prefix, -1: none */
    int64_t *order;      /* [nblocks]: block visited at each place of the epoch */
    int64_t *prefix;     /* [nblocks + 1]: epoch position where each place starts */
    int64_t pool_blocks;   /* K: blocks per pool, at most nblocks */
    pool_cache_t pool;
    uint64_t stamp; /* LRU clock of the open shards */
    void *scratch[ERASE_READER_MAX_FIELDS]; /* [max_local] raw rows of a batch part: read in file order
                                             * (no shuffle) or gathered from the pool */

    /* the ring of batches between the producer and the caller */
    slot_t *slots;
    int nslots;
    pthread_t thread;
    int thread_running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t produced, released, delivered; /* items (batches or ends of epoch) */
    int holding, stop, prod_failed;

    /* the caller's side */
    erase_reader_cursor_t cursor;
    double wait_total;
    erase_status_t failed;
    char failed_msg[MESSAGE_MAX];
};

erase_reader_options_t erase_reader_options_default(void)
{
    erase_reader_options_t o = { 0 };
    o.global_batch = 1024;
    o.dp_rank = 0;
    o.dp_size = 1;
    o.shuffle = 1;
    o.block_rows = 1024;
    o.pool_blocks = ERASE_READER_POOL_BLOCKS;
    o.prefetch = 2;
    o.drop_last = 1;
    o.part = ERASE_READER_PART_ALL;
    return o;
}

static const char *part_name(erase_reader_part_t p)
{
    return p == ERASE_READER_PART_TRAIN ? "train" : p == ERASE_READER_PART_EVAL ? "eval" : "selected";
}

static erase_status_t check_options(const erase_reader_options_t *o)
{
    if (o->global_batch < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "global_batch must be >= 1, got %" PRId64, o->global_batch);
    if (o->dp_size < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "dp_size must be >= 1, got %d", o->dp_size);
    if (o->dp_rank < 0 || o->dp_rank >= o->dp_size)
        return ERASE_ERROR(ERASE_ERR_INVALID, "dp_rank %d outside [0, dp_size = %d)", o->dp_rank, o->dp_size);
    if (!o->batch_alloc != !o->batch_free)
        return ERASE_ERROR(ERASE_ERR_INVALID, "batch_alloc and batch_free: give both or neither");
    if (o->prefetch < 0 || o->prefetch > MAX_PREFETCH)
        return ERASE_ERROR(ERASE_ERR_INVALID, "prefetch must be in 0..%d, got %d", MAX_PREFETCH, o->prefetch);
    if (o->block_rows < 1 || o->block_rows > (1 << 30))
        return ERASE_ERROR(ERASE_ERR_INVALID, "block_rows must be in 1..2^30, got %" PRId64, o->block_rows);
    if (o->pool_blocks < 1 || o->pool_blocks > (INT64_C(1) << 31) / o->block_rows)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "pool_blocks must be in 1..%" PRId64 " (at most 2^31 rows in a pool of %" PRId64
                           "-row blocks), got %" PRId64,
                           (INT64_C(1) << 31) / o->block_rows, o->block_rows, o->pool_blocks);
    if (o->part != ERASE_READER_PART_ALL && o->part != ERASE_READER_PART_TRAIN && o->part != ERASE_READER_PART_EVAL)
        return ERASE_ERROR(ERASE_ERR_INVALID, "part must be all, train or eval, got %d", (int)o->part);
    if (o->eval_shards < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "eval_shards must be >= 0, got %d", o->eval_shards);
    if (o->part != ERASE_READER_PART_ALL && o->eval_shards == 0 && !(o->eval_fraction > 0 && o->eval_fraction < 1))
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "part %s needs a split: eval_fraction in (0, 1) or eval_shards >= 1, got %g and %d",
                           part_name(o->part), o->eval_fraction, o->eval_shards);
    return ERASE_OK;
}

/* Shard `path` agrees with the first shard `first`: the same fields and
 * parameters. */
static erase_status_t check_layout(const erase_reader_t *r, const char *path, const erase_row_layout_t *l,
                                   const char *first)
{
    const erase_row_layout_t *f = &r->layout;
    for (int p = 0; p < f->nparams; p++)
        if (l->param[p].value != f->param[p].value)
            return ERASE_ERROR(ERASE_ERR_FORMAT,
                               "%s: %" PRId64 " %s, the first shard %s has %" PRId64 ": every shard must have the same",
                               path, l->param[p].value, f->param[p].name, first, f->param[p].value);
    int same = l->nfields == f->nfields && l->nraw == f->nraw && l->nparams == f->nparams;
    for (int k = 0; same && k < f->nfields; k++)
        same = l->field[k].elem_bytes == f->field[k].elem_bytes && l->field[k].width == f->field[k].width;
    for (int k = 0; same && k < f->nraw; k++)
        same = l->raw[k].elem_bytes == f->raw[k].elem_bytes && l->raw[k].width == f->raw[k].width;
    if (!same)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: its rows differ from those of the first shard %s (%s format)", path,
                           first, r->fmt->name);
    return ERASE_OK;
}

/* Open and validate every shard of the inputs (then close it: reading
 * reopens shards as it needs them, see shard_handle). */
static erase_status_t open_shards(erase_reader_t *r, const char *const *inputs, int n)
{
    const erase_row_format_t *fmt = r->fmt;
    erase_ctr_list_t list;
    ERASE_CHECK(erase_ctr_list_resolve(inputs, n, &list));
    erase_status_t st = ERASE_OK;
    r->paths = calloc((size_t)list.count, sizeof *r->paths);
    r->rows = calloc((size_t)list.count, sizeof *r->rows);
    r->base = calloc((size_t)list.count, sizeof *r->base);
    if (!r->paths || !r->rows || !r->base)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %d shards", list.count);
    r->index_bytes += (size_t)list.count * (sizeof *r->paths + sizeof *r->rows + sizeof *r->base);
    for (int i = 0; st == ERASE_OK && i < list.count; i++) {
        void *h;
        st = fmt->open(fmt->ctx, list.paths[i], &h);
        if (st != ERASE_OK) {
            erase_error_trail(__FILE__, __LINE__);
            break;
        }
        int64_t rows = fmt->rows(h);
        int64_t indexed = fmt->index_rows ? fmt->index_rows(h) : rows;
        erase_row_layout_t layout = { 0 };
        fmt->layout(h, &layout);
        if (i == 0) {
            r->layout = layout;
            r->chunk_rows = fmt->chunk_rows(h);
        }
        fmt->close(h);
        if (layout.nfields < 1 || layout.nfields > ERASE_READER_MAX_FIELDS || layout.nraw < 1 ||
            layout.nraw > ERASE_READER_MAX_FIELDS || layout.nparams < 0 || layout.nparams > ERASE_READER_MAX_PARAMS) {
            st = ERASE_ERROR(ERASE_ERR_INVALID,
                             "row format %s: %d fields, %d raw arrays and %d parameters (1..%d, 1..%d, 0..%d)",
                             fmt->name, layout.nfields, layout.nraw, layout.nparams, ERASE_READER_MAX_FIELDS,
                             ERASE_READER_MAX_FIELDS, ERASE_READER_MAX_PARAMS);
            break;
        }
        if (i > 0 && (st = check_layout(r, list.paths[i], &layout, list.paths[0])) != ERASE_OK)
            break;
        if (!(r->paths[i] = strdup(list.paths[i]))) {
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %d shards", list.count);
            break;
        }
        r->index_bytes += strlen(list.paths[i]) + 1;
        r->nshards = i + 1;
        if (list.rows[i] >= 0 && list.rows[i] != indexed) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%s", list.paths[i]);
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = '\0';
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s/%s: %s has %" PRId64 " rows, the index says %" PRId64, dir,
                             ERASE_CTR_INDEX_NAME, list.paths[i], indexed, list.rows[i]);
            break;
        }
        r->rows[i] = rows;
        r->base[i] = r->total_rows;
        r->total_rows += rows;
    }
    erase_ctr_list_free(&list);
    const erase_row_layout_t *l = &r->layout;
    for (int k = 0; st == ERASE_OK && k < l->nfields; k++)
        if (l->field[k].width < 1 || !erase_bytes(l->field[k].elem_bytes, l->field[k].width, 1, &r->row_bytes[k]))
            st = ERASE_ERROR(ERASE_ERR_INVALID, "%s rows: field %s of %" PRId64 " elements is too large or empty",
                             fmt->name, l->field[k].name, l->field[k].width);
    for (int k = 0; st == ERASE_OK && k < l->nraw; k++)
        if (l->raw[k].width < 1 || !erase_bytes(l->raw[k].elem_bytes, l->raw[k].width, 1, &r->raw_bytes[k]))
            st = ERASE_ERROR(ERASE_ERR_INVALID, "%s rows: raw array %d of %" PRId64 " elements is too large or empty",
                             fmt->name, k, l->raw[k].width);
    return st;
}

/* An open handle of shard i (reopened and revalidated if it was closed). */
static erase_status_t shard_handle(erase_reader_t *r, int i, void **out)
{
    open_shard_t *slot = &r->open[0];
    for (int k = 0; k < OPEN_SHARDS; k++) {
        if (r->open[k].shard == i) {
            r->open[k].used = ++r->stamp;
            *out = r->open[k].h;
            return ERASE_OK;
        }
        if (r->open[k].used < slot->used)
            slot = &r->open[k];
    }
    r->fmt->close(slot->h);
    slot->h = NULL;
    slot->shard = -1;
    void *h;
    ERASE_CHECK(r->fmt->open(r->fmt->ctx, r->paths[i], &h));
    if (r->fmt->rows(h) != r->rows[i]) {
        int64_t rows = r->fmt->rows(h);
        r->fmt->close(h);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: has %" PRId64 " rows now, %" PRId64 " when the reader opened it",
                           r->paths[i], rows, r->rows[i]);
    }
    slot->h = h;
    slot->shard = i;
    slot->used = ++r->stamp;
    *out = h;
    return ERASE_OK;
}

/* Cut the selected rows into blocks. */
static erase_status_t make_blocks(erase_reader_t *r)
{
    const erase_reader_options_t *o = &r->o;
    /* selected rows in file order: [sel_begin, sel_end) of the concatenation */
    int64_t sel_begin = 0, sel_end = r->total_rows;
    if (o->part != ERASE_READER_PART_ALL) {
        int64_t eval_begin;
        if (o->eval_shards > 0) {
            if (o->eval_shards > r->nshards)
                return ERASE_ERROR(ERASE_ERR_INVALID, "eval_shards %d: the dataset has only %d shard%s",
                                   o->eval_shards, r->nshards, r->nshards == 1 ? "" : "s");
            eval_begin = r->base[r->nshards - o->eval_shards];
        } else {
            eval_begin = r->total_rows - llround(o->eval_fraction * (double)r->total_rows);
        }
        if (o->part == ERASE_READER_PART_TRAIN)
            sel_end = eval_begin;
        else
            sel_begin = eval_begin;
    }
    r->samples = sel_end - sel_begin;
    if (r->samples <= 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the %s part has no rows (%" PRId64 " rows in %d shards)",
                           part_name(o->part), r->total_rows, r->nshards);
    int64_t B = o->block_rows, count = 0;
    for (int pass = 0; pass < 2; pass++) {
        count = 0;
        for (int i = 0; i < r->nshards; i++) {
            int64_t rows = r->rows[i];
            int64_t lo = sel_begin - r->base[i], hi = sel_end - r->base[i];
            lo = lo < 0 ? 0 : lo;
            hi = hi > rows ? rows : hi;
            for (int64_t b = lo; b < hi;) {
                int64_t e = (b / B + 1) * B;
                e = e > hi ? hi : e;
                if (pass == 1)
                    r->blocks[count] = (block_t){ i, b, e - b };
                count++;
                b = e;
            }
        }
        if (pass == 0) {
            r->blocks = malloc(sizeof *r->blocks * (size_t)count);
            r->order = malloc(sizeof *r->order * (size_t)count);
            r->prefix = malloc(sizeof *r->prefix * (size_t)(count + 1));
            if (!r->blocks || !r->order || !r->prefix)
                return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %" PRId64 " blocks", count);
            r->index_bytes += (size_t)count * (sizeof *r->blocks + sizeof *r->order + sizeof *r->prefix) +
                              sizeof *r->prefix;
        }
    }
    r->nblocks = count;
    return ERASE_OK;
}

/* Memory of a delivered batch array: the caller's allocator, or malloc. */
static void *batch_alloc(erase_reader_t *r, size_t bytes)
{
    return r->o.batch_alloc ? r->o.batch_alloc(r->o.batch_ctx, bytes) : malloc(bytes);
}

/* Free what batch_alloc returned (NULL is allowed). */
static void batch_free(erase_reader_t *r, void *ptr)
{
    if (!ptr)
        return;
    if (r->o.batch_free)
        r->o.batch_free(r->o.batch_ctx, ptr);
    else
        free(ptr);
}

/* malloc of `rows` rows of row_bytes bytes, the bytes added to *total;
 * NULL when out of memory or too large. */
static void *counted_malloc(size_t row_bytes, int64_t rows, size_t *total)
{
    size_t bytes;
    void *p = erase_bytes(row_bytes, rows, 1, &bytes) ? malloc(bytes) : NULL;
    *total += p ? bytes : 0;
    return p;
}

/* `rows` rows of each of `n` arrays of row_bytes[k] bytes into p[k]
 * (counted_malloc); 0 when out of memory or too large. */
static int alloc_rows(void **p, const size_t *row_bytes, int n, int64_t rows, size_t *total)
{
    for (int k = 0; k < n; k++)
        if (!(p[k] = counted_malloc(row_bytes[k], rows, total)))
            return 0;
    return 1;
}

/* The shuffle pool or scratch rows, and the prefetch + 1 batch slots:
 * sizes set by the options and the row layout, never by the data's rows. */
static erase_status_t alloc_buffers(erase_reader_t *r)
{
    int64_t L = r->max_local > 0 ? r->max_local : 1;
    const int nf = r->layout.nfields, nraw = r->layout.nraw;
    pool_cache_t *p = &r->pool;
    p->pool = -1;
    r->pool_blocks = r->o.pool_blocks < r->nblocks ? r->o.pool_blocks : r->nblocks > 0 ? r->nblocks : 1;
    if (r->o.shuffle) {
        /* a pool holds at most K blocks of at most block_rows rows, and at most the part */
        int64_t cap = r->pool_blocks * r->o.block_rows < r->samples ? r->pool_blocks * r->o.block_rows : r->samples;
        if (!(p->perm = counted_malloc(sizeof *p->perm, cap, &r->buffer_bytes)) ||
            !(p->row_id = counted_malloc(sizeof *p->row_id, cap, &r->buffer_bytes)) ||
            !alloc_rows(p->raw, r->raw_bytes, nraw, cap, &r->buffer_bytes))
            return ERASE_ERROR(ERASE_ERR_NOMEM,
                               "out of memory for a shuffle pool of %" PRId64 " rows (%" PRId64
                               " blocks of %" PRId64 " rows)",
                               cap, r->pool_blocks, r->o.block_rows);
    }
    if (!alloc_rows(r->scratch, r->raw_bytes, nraw, L, &r->buffer_bytes))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for batches of %" PRId64 " rows", L);
    r->nslots = r->o.prefetch + 1;
    r->slots = calloc((size_t)r->nslots, sizeof *r->slots);
    if (!r->slots)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
    r->buffer_bytes += (size_t)r->nslots * sizeof *r->slots;
    for (int s = 0; s < r->nslots; s++) {
        slot_t *b = &r->slots[s];
        int ok = (b->row_id = counted_malloc(sizeof *b->row_id, L, &r->buffer_bytes)) != NULL;
        for (int f = 0; f < nf; f++) {
            size_t bytes;
            ok = ok && erase_bytes(r->row_bytes[f], L, 1, &bytes) && (b->field[f] = batch_alloc(r, bytes)) != NULL;
            r->buffer_bytes += ok ? bytes : 0;
        }
        if (!ok)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for batches of %" PRId64 " rows", L);
    }
    return ERASE_OK;
}

/* ---- the sample order ---------------------------------------------------- */

/* A SplitMix64 state for (seed, a, b): distinct streams for distinct keys. */
static uint64_t stream_state(uint64_t seed, uint64_t a, uint64_t b)
{
    return erase_rng_stream(0x6a09e667f3bcc909ULL, seed, a, b);
}

/* Uniform in [0, n) for n up to 2^63 (bias below 2^-32 for n < 2^32). */
static uint64_t below(uint64_t *state, uint64_t n)
{
    return erase_rng_next(state) % n;
}

/* The block order and its positions for `epoch`. */
static void ensure_order(erase_reader_t *r, int64_t epoch)
{
    if (r->order_epoch == epoch)
        return;
    for (int64_t i = 0; i < r->nblocks; i++)
        r->order[i] = i;
    if (r->o.shuffle) {
        uint64_t st = stream_state(r->o.seed, (uint64_t)epoch, UINT64_MAX);
        for (int64_t i = r->nblocks - 1; i > 0; i--) {
            int64_t j = (int64_t)below(&st, (uint64_t)i + 1);
            int64_t t = r->order[i];
            r->order[i] = r->order[j];
            r->order[j] = t;
        }
    }
    r->prefix[0] = 0;
    for (int64_t i = 0; i < r->nblocks; i++)
        r->prefix[i + 1] = r->prefix[i] + r->blocks[r->order[i]].count;
    r->order_epoch = epoch;
}

/* Place (index into order) of the block holding epoch position `pos`. */
static int64_t place_of(const erase_reader_t *r, int64_t pos)
{
    int64_t lo = 0, hi = r->nblocks - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (r->prefix[mid] <= pos)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Pool `pool` of `epoch` (the blocks at places [pool*K, pool*K + K) of
 * the epoch's order, K = pool_blocks) read whole, with its row
 * permutation: a Fisher-Yates shuffle of its rows drawn from (seed, epoch,
 * the pool's first block), so that with K = 1 each block's rows are
 * permuted as a block's were before pools. */
static erase_status_t pool_rows(erase_reader_t *r, int64_t pool, int64_t epoch, pool_cache_t **out)
{
    pool_cache_t *p = &r->pool;
    if (p->pool != pool || p->epoch != epoch) {
        p->pool = -1;
        int64_t first = pool * r->pool_blocks;
        int64_t last = first + r->pool_blocks < r->nblocks ? first + r->pool_blocks : r->nblocks;
        int64_t at = 0;
        for (int64_t place = first; place < last; place++) {
            const block_t *b = &r->blocks[r->order[place]];
            void *h, *to[ERASE_READER_MAX_FIELDS] = { 0 };
            for (int a = 0; a < r->layout.nraw; a++)
                to[a] = (char *)p->raw[a] + (size_t)at * r->raw_bytes[a];
            ERASE_CHECK(shard_handle(r, b->shard, &h));
            ERASE_CHECK(r->fmt->read(h, b->begin, b->count, to));
            for (int64_t i = 0; i < b->count; i++)
                p->row_id[at + i] = r->base[b->shard] + b->begin + i;
            at += b->count;
        }
        for (int64_t i = 0; i < at; i++)
            p->perm[i] = (uint32_t)i;
        uint64_t st = stream_state(r->o.seed, (uint64_t)epoch, (uint64_t)r->order[first]);
        for (int64_t i = at - 1; i > 0; i--) {
            int64_t j = (int64_t)below(&st, (uint64_t)i + 1);
            uint32_t t = p->perm[i];
            p->perm[i] = p->perm[j];
            p->perm[j] = t;
        }
        p->rows = at;
        p->pool = pool;
        p->epoch = epoch;
    }
    *out = p;
    return ERASE_OK;
}

/* Copy the raw rows index[0..count) of pool `p` into r->scratch (count <=
 * max_local), prefetching rows ahead: the rows of a large pool are spread
 * over more memory than the caches hold, and independent copies let the
 * misses overlap, where decoding them in place waited for each in turn. */
static void gather_rows(erase_reader_t *r, const pool_cache_t *p, const uint32_t *index, int64_t count)
{
    enum { AHEAD = 16 };
    for (int a = 0; a < r->layout.nraw; a++) {
        const size_t rb = r->raw_bytes[a];
        const char *from = p->raw[a];
        char *to = r->scratch[a];
        for (int64_t t = 0; t < count; t++) {
            if (t + AHEAD < count)
                __builtin_prefetch(from + (size_t)index[t + AHEAD] * rb);
            memcpy(to + (size_t)t * rb, from + (size_t)index[t] * rb, rb);
        }
    }
}

/* Fill `s` with epoch positions [lo, hi) of epoch `epoch`. */
static erase_status_t fill_rows(erase_reader_t *r, slot_t *s, int64_t epoch, int64_t lo, int64_t hi)
{
    ensure_order(r, epoch);
    const int nf = r->layout.nfields;
    int64_t i = 0, pos = lo;
    while (pos < hi) {
        int64_t place = place_of(r, pos), take, off;
        void *to[ERASE_READER_MAX_FIELDS] = { 0 };
        for (int f = 0; f < nf; f++)
            to[f] = (char *)s->field[f] + (size_t)i * r->row_bytes[f];
        if (r->o.shuffle) {
            int64_t pool = place / r->pool_blocks;
            pool_cache_t *p;
            ERASE_CHECK(pool_rows(r, pool, epoch, &p));
            off = pos - r->prefix[pool * r->pool_blocks];
            take = p->rows - off < hi - pos ? p->rows - off : hi - pos;
            gather_rows(r, p, p->perm + off, take);
            r->fmt->decode(&r->layout, (const void *const *)r->scratch, NULL, take, to);
            for (int64_t t = 0; t < take; t++)
                s->row_id[i + t] = p->row_id[p->perm[off + t]];
        } else {
            const block_t *b = &r->blocks[r->order[place]];
            off = pos - r->prefix[place];
            take = b->count - off < hi - pos ? b->count - off : hi - pos;
            void *h;
            ERASE_CHECK(shard_handle(r, b->shard, &h));
            ERASE_CHECK(r->fmt->read(h, b->begin + off, take, r->scratch));
            r->fmt->decode(&r->layout, (const void *const *)r->scratch, NULL, take, to);
            for (int64_t t = 0; t < take; t++)
                s->row_id[i + t] = r->base[b->shard] + b->begin + off + t;
        }
        i += take;
        pos += take;
    }
    return ERASE_OK;
}

/* Produce the next item (a batch of this rank, or an end of epoch) at the
 * producer's position into `s`, and advance the position. */
static void produce(erase_reader_t *r, slot_t *s)
{
    const int64_t G = r->o.global_batch, S = r->samples, D = r->o.dp_size, rank = r->o.dp_rank;
    int64_t pos = r->prod_pos;
    memset(&s->meta, 0, sizeof s->meta);
    s->status = ERASE_OK;
    s->error[0] = '\0';
    s->meta.epoch = r->prod_epoch;
    for (int f = 0; f < r->layout.nfields; f++)
        s->meta.field[f] = s->field[f];
    s->meta.row_id = s->row_id;
    int end = r->o.drop_last ? G > S - pos : pos >= S; /* 0 <= pos <= S; pos + G may overflow */
    if (end) {
        s->meta.end_of_epoch = 1;
        s->meta.step = r->steps;
        s->global_start = pos;
        r->prod_epoch++;
        r->prod_pos = 0;
        return;
    }
    int64_t m = S - pos < G ? S - pos : G;
    int64_t lo = pos + rank * m / D, hi = pos + (rank + 1) * m / D;
    s->meta.step = pos / G;
    s->meta.first_sample = lo;
    s->meta.global_size = m;
    s->meta.size = hi - lo;
    s->global_start = pos;
    erase_status_t st = fill_rows(r, s, r->prod_epoch, lo, hi);
    if (st != ERASE_OK) {
        s->status = st;
        snprintf(s->error, sizeof s->error, "%s", erase_error_reason());
        return;
    }
    r->prod_pos = pos + m;
}

static void *producer_main(void *arg)
{
    erase_reader_t *r = arg;
    erase_fp_thread_init(); /* decodes (log1p) as the compute threads do */
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        if (r->prod_failed || r->produced >= r->released + r->nslots) {
            pthread_cond_wait(&r->cv, &r->mu);
            continue;
        }
        slot_t *s = &r->slots[r->produced % r->nslots];
        pthread_mutex_unlock(&r->mu);
        produce(r, s);
        pthread_mutex_lock(&r->mu);
        r->prod_failed = s->status != ERASE_OK;
        r->produced++;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static erase_status_t start_thread(erase_reader_t *r)
{
    r->produced = r->released = r->delivered = 0;
    r->holding = r->stop = r->prod_failed = 0;
    if (r->o.prefetch == 0)
        return ERASE_OK;
    if (pthread_create(&r->thread, NULL, producer_main, r) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "cannot start the prefetch thread");
    r->thread_running = 1;
    return ERASE_OK;
}

static void stop_thread(erase_reader_t *r)
{
    if (!r->thread_running)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    r->thread_running = 0;
}

/* ---- public ---------------------------------------------------------------- */

erase_status_t erase_reader_open(const erase_row_format_t *format, const char *const *inputs, int n,
                                 const erase_reader_options_t *options, erase_reader_t **out)
{
    *out = NULL;
    if (!format || !format->open || !format->close || !format->rows || !format->chunk_rows || !format->layout ||
        !format->read || !format->decode)
        return ERASE_ERROR(ERASE_ERR_INVALID, "no row format, or one without its functions");
    erase_reader_options_t o = options ? *options : erase_reader_options_default();
    ERASE_CHECK(check_options(&o));
    erase_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
    r->fmt = format;
    r->o = o;
    r->order_epoch = -1;
    for (int k = 0; k < OPEN_SHARDS; k++)
        r->open[k].shard = -1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    erase_status_t st = open_shards(r, inputs, n);
    if (st == ERASE_OK)
        st = make_blocks(r);
    if (st == ERASE_OK) {
        int64_t G = o.global_batch, S = r->samples;
        r->steps = S / G + (!o.drop_last && S % G != 0); /* no S + G - 1: G may be near INT64_MAX */
        int64_t most = G < S ? G : S; /* a batch never holds more than the part */
        r->max_local = most / o.dp_size + (most % o.dp_size != 0);
        if (r->steps == 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID,
                             "global batch %" PRId64 " is larger than the %" PRId64 " samples of the %s part: no step",
                             G, S, part_name(o.part));
    }
    if (st == ERASE_OK)
        st = alloc_buffers(r);
    if (st == ERASE_OK)
        st = start_thread(r);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_reader_close(r);
        return st;
    }
    *out = r;
    return ERASE_OK;
}

void erase_reader_close(erase_reader_t *r)
{
    if (!r)
        return;
    stop_thread(r);
    for (int k = 0; k < OPEN_SHARDS; k++)
        r->fmt->close(r->open[k].h);
    for (int i = 0; i < r->nshards; i++)
        free(r->paths[i]);
    free(r->paths);
    free(r->rows);
    free(r->base);
    free(r->blocks);
    free(r->order);
    free(r->prefix);
    for (int f = 0; f < ERASE_READER_MAX_FIELDS; f++)
        free(r->pool.raw[f]);
    free(r->pool.perm);
    free(r->pool.row_id);
    for (int f = 0; f < ERASE_READER_MAX_FIELDS; f++)
        free(r->scratch[f]);
    for (int s = 0; r->slots && s < r->nslots; s++) {
        for (int f = 0; f < ERASE_READER_MAX_FIELDS; f++)
            batch_free(r, r->slots[s].field[f]);
        free(r->slots[s].row_id);
    }
    free(r->slots);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

erase_reader_info_t erase_reader_info(const erase_reader_t *r)
{
    erase_reader_info_t i = { .shards = r->nshards,
                              .total_rows = r->total_rows,
                              .samples = r->samples,
                              .steps_per_epoch = r->steps,
                              .blocks = r->nblocks,
                              .max_local = r->max_local,
                              .chunk_rows = r->chunk_rows,
                              .index_bytes = r->index_bytes,
                              .buffer_bytes = r->buffer_bytes,
                              .layout = r->layout };
    return i;
}

erase_status_t erase_reader_next(erase_reader_t *r, erase_reader_batch_t *out)
{
    memset(out, 0, sizeof *out);
    if (r->failed != ERASE_OK)
        return ERASE_ERROR(r->failed, "%s", r->failed_msg);
    slot_t *s;
    double wait = 0;
    if (r->o.prefetch == 0) {
        s = &r->slots[0];
        produce(r, s);
    } else {
        pthread_mutex_lock(&r->mu);
        if (r->holding) {
            r->released++;
            r->holding = 0;
            pthread_cond_broadcast(&r->cv);
        }
        if (r->produced <= r->delivered) {
            double t0 = erase_now_s();
            while (r->produced <= r->delivered)
                pthread_cond_wait(&r->cv, &r->mu);
            wait = erase_now_s() - t0;
        }
        s = &r->slots[r->delivered % r->nslots];
        r->delivered++;
        r->holding = 1;
        pthread_mutex_unlock(&r->mu);
    }
    r->wait_total += wait;
    if (s->status != ERASE_OK) {
        r->failed = s->status;
        snprintf(r->failed_msg, sizeof r->failed_msg, "%s", s->error);
        return ERASE_ERROR(r->failed, "%s", r->failed_msg);
    }
    *out = s->meta;
    out->wait_s = wait;
    if (s->meta.end_of_epoch)
        r->cursor = (erase_reader_cursor_t){ s->meta.epoch + 1, 0 };
    else
        r->cursor = (erase_reader_cursor_t){ s->meta.epoch, s->global_start + s->meta.global_size };
    return ERASE_OK;
}

erase_reader_cursor_t erase_reader_cursor(const erase_reader_t *r)
{
    return r->cursor;
}

erase_status_t erase_reader_seek(erase_reader_t *r, erase_reader_cursor_t c)
{
    if (c.epoch < 0 || c.samples < 0 || c.samples > r->samples)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "cursor (epoch %" PRId64 ", samples %" PRId64 ") outside this data: epoch >= 0 and "
                           "samples in [0, %" PRId64 "] expected",
                           c.epoch, c.samples, r->samples);
    stop_thread(r);
    r->prod_epoch = c.epoch;
    r->prod_pos = c.samples;
    r->cursor = c;
    r->failed = ERASE_OK;
    r->failed_msg[0] = '\0';
    ERASE_CHECK(start_thread(r));
    return ERASE_OK;
}

const erase_row_format_t *erase_reader_format(const erase_reader_t *r)
{
    return r->fmt;
}

double erase_reader_wait_seconds(const erase_reader_t *r)
{
    return r->wait_total;
}

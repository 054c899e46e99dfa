/*
 * The data reader: batches of a dataset of shards (a list of shard files
 * or directories with an index.txt, io/ctr_index.h) for data-parallel
 * training and evaluation, read and decoded for the model by a background
 * thread. One implementation of the sample order, the rank split, the
 * splits, epochs, the cursor and prefetching for every kind of shard; what
 * differs between kinds is a row format (erase_row_format_t below): how to
 * open and validate a shard, its rows, and how to read and decode rows
 * [a, b) into the arrays a batch delivers. Formats: io/ctr_reader.h (CTR:
 * dense, sparse, label), io/cls_reader.h (classification: features,
 * classes), io/tok_reader.h (token windows: tokens). Typed views of a batch live beside each format.
 *
 * Sample order. The rows selected (all, or the train or eval part, see
 * below) are cut into blocks: each shard is cut at multiples of
 * `block_rows` from its first row (so blocks match the shard's chunks),
 * intersected with the selected rows. Without shuffling, the epoch's order
 * is the rows in file order (shards concatenated in index order). With
 * shuffling, epoch e visits the blocks in a permutation drawn from (seed,
 * e); the visited blocks are grouped into pools of K = pool_blocks
 * consecutive places (the last pool may have fewer), and the rows of each
 * pool, all its blocks' rows together, come in a permutation drawn from
 * (seed, e, the pool's first block); both are Fisher-Yates shuffles driven
 * by SplitMix64. So a batch's rows are a uniform draw from K blocks spread
 * over every shard and region of the data, and with K >= the number of
 * blocks the epoch is a uniform shuffle of all rows (the default K, 64
 * blocks of 1,024 rows, covers 65,536 rows: every dataset up to that size;
 * 64 rather than more because a pool larger than the caches slows the
 * gather, bench/RESULTS.md 2026-12-05).
 * K = 1 is the order before pools (blocks permuted, rows permuted inside
 * each block): each batch from one or two 1,024-row passages, which
 * trained a language model much worse (bench/RESULTS.md, 2026-12-05).
 * The order depends only on the files, seed, epoch, block_rows,
 * pool_blocks and the split: never on dp_size, dp_rank, prefetch or timing.
 *
 * Steps. Step k of an epoch covers the positions [k*G, k*G + m) of the
 * epoch's order (G = global_batch, m = G, or less for the last batch).
 * Data-parallel rank r of D takes positions [k*G + floor(r*m/D),
 * k*G + floor((r+1)*m/D)): its contiguous part, all parts differing by at
 * most one row. Concatenating the parts of ranks 0..D-1 gives the same
 * global batch for every D.
 *
 * Last partial batch (S samples in the epoch, S mod G != 0):
 *   drop_last = 1 (training): dropped. Every epoch has floor(S/G) steps,
 *                 all of G samples.
 *   drop_last = 0 (evaluation): delivered, m = S mod G samples split as
 *                 above; with m < D some ranks get 0 rows and still take
 *                 the step (erase_reader_next returns a batch of size
 *                 0), so every rank runs ceil(S/G) steps and joins every
 *                 collective.
 * The number of steps per epoch depends only on S and G, so it is the same
 * on every rank.
 *
 * Train/eval split, reproducible and independent of the shuffle:
 *   by fraction: the last round(eval_fraction * T) rows in file order (T
 *                rows in all shards) are the eval part, the rest train;
 *   by shard:    the last eval_shards shards are the eval part.
 *
 * Epochs and the cursor. erase_reader_next() delivers the steps of an
 * epoch, then one end-of-epoch result (no data), then continues with the
 * next epoch. The cursor (epoch, samples delivered in that epoch) is the
 * same on every rank; restoring it with erase_reader_seek() continues
 * with exactly the samples that would have come next (DESIGN.md: the data
 * cursor is part of every checkpoint).
 *
 * Prefetch. With prefetch = P >= 1, a background thread reads and decodes
 * up to P batches ahead of the one the caller holds (P = 1: double
 * buffering); with P = 0 everything happens inside erase_reader_next.
 * The batches are the same either way, except that the thread decodes with
 * flush-to-zero and denormals-are-zero (lib/core/fpmode.h; ERASE_FTZ=0: not),
 * so a subnormal stored value reaches the model as 0 from it. The time the
 * caller spent waiting for a batch is reported per batch and in total.
 *
 * Files. Every shard is opened and validated at open (the format's open),
 * and every shard must agree with the first on the format's parameters
 * (e.g. the feature count). Open reads no rows: only each shard's
 * metadata (attributes, the datasets' types, shapes and chunking) and the
 * directories' index.txt; a chunk's checksum and its values are checked
 * when a batch first reads it, and the error names the shard, dataset and
 * rows. So opening costs a few HDF5 metadata reads per shard, whatever
 * the rows (bench/reader-scale.sh; bench/RESULTS.md, 2026-12-05). Reading uses HDF5's default (non-MPI) file
 * access, so every rank of an MPI job opens the files read-only by itself;
 * no MPI call is made. The reading thread keeps at most 8 shard files open
 * (least recently used closed first), so a dataset may have more shards
 * than the process has file descriptors; a shard reopened is validated
 * again.
 *
 * Cost of shuffling: the reading thread reads (and decompresses) a pool
 * whole, once, when a batch part first touches it, and holds it: one pool,
 * K * block_rows raw rows (10 MB of CTR rows with the defaults). For a
 * batch part it gathers the part's rows from the pool, prefetching ahead
 * (the misses of a pool larger than the caches overlap), and decodes only
 * those. Every rank reads every row once per epoch: a rank's part of a
 * mixed batch has rows in every block of the pool, so D ranks each read
 * all the data (before pools, with blocks of at most G/D rows, each read
 * about 1/D of it). Measured with erase-bench data --pool and
 * bench/reader-pools.sh (bench/RESULTS.md, 2026-12-05).
 *
 * A row format reads rows as stored (a pool read whole for shuffling is
 * held as stored) and decodes only the rows a batch delivers.
 *
 * Windows (the lm task: io/tok_reader.h). A token shard (erase-tok-1:
 * /tokens uint16 [N]) plugs in as a row format whose "row" is a window
 * start: rows() returns the number of windows, floor((N - 1) / T) for
 * windows of T+1 tokens starting every T tokens, the layout has one raw
 * array (uint16, width T + 1) and one field "tokens" (int32, width T + 1),
 * read(begin, count) copies, for each window w in [begin, begin + count),
 * tokens [w*T, w*T + T + 1) into raw row w - begin (the windows overlap by
 * one token), and decode widens the chosen rows to int32; index_rows()
 * says that index.txt counts tokens. T comes from the format's context:
 * erase_tok_rows_init fills a format table with ctx pointing at T (the
 * lm task's rows_for, apps/train/task.h). Blocks of block_rows windows,
 * the shuffle, the rank split, the splits and the cursor then apply to
 * windows unchanged.
 */
#ifndef ERASE_IO_READER_H
#define ERASE_IO_READER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_READER_MAX_FIELDS 4 /* arrays a batch delivers */
#define ERASE_READER_MAX_PARAMS 4 /* per-shard parameters every shard must agree on */
#define ERASE_READER_POOL_BLOCKS 64 /* default blocks of a shuffle pool (65,536 rows of 1024-row blocks) */

typedef struct erase_reader erase_reader_t;

/* The arrays of a row and the parameters of a shard, as a row format
 * describes them (erase_row_format_t.layout). Field f of a batch of n rows
 * is an array [n, width] of elements of elem_bytes bytes, row-major; raw
 * array a of n rows likewise: the rows as read from the shard, before
 * decoding. */
typedef struct {
    int nfields;
    struct {
        const char *name;  /* e.g. "dense", "features" */
        size_t elem_bytes; /* 1, 2, 4 or 8 */
        int64_t width;     /* elements per row (>= 1) */
    } field[ERASE_READER_MAX_FIELDS];
    int nraw;
    struct {
        size_t elem_bytes;
        int64_t width;
    } raw[ERASE_READER_MAX_FIELDS];
    int nparams;
    struct {
        const char *name;  /* e.g. "features", "classes": every shard must agree */
        int64_t value;
    } param[ERASE_READER_MAX_PARAMS];
} erase_row_layout_t;

/*
 * A kind of shard, for the reader. Every function returns ERASE_OK or an
 * error recorded with ERASE_ERROR naming the file (the reader passes it
 * on). A shard handle is used by one thread at a time.
 *
 * Rows are read in two steps: read() copies rows [a, b) of a shard as
 * stored into the raw arrays, decode() turns chosen raw rows into the
 * fields a batch delivers. The reader reads whole shuffle pools but
 * decodes only the rows of its own part of a batch, so with D ranks each
 * rank decodes 1/D of what it reads (CTR: log1p per delivered row).
 */
typedef struct {
    const char *name; /* "ctr", "classify": in messages */
    void *ctx;        /* passed to open (e.g. the window length of a token format) */
    /* Open and validate the shard at `path` (read-only, non-MPI access). */
    erase_status_t (*open)(void *ctx, const char *path, void **shard);
    void (*close)(void *shard); /* NULL is allowed */
    int64_t (*rows)(const void *shard);       /* rows (samples) of the shard */
    int64_t (*chunk_rows)(const void *shard); /* chunk length along the rows (0: not chunked) */
    /* What a directory's index.txt records for the shard, checked at open
     * (NULL: its rows; token windows: its tokens). */
    int64_t (*index_rows)(const void *shard);
    /* The fields, raw arrays and parameters of the shard (the same fields
     * and raw arrays for every shard of a dataset; the parameters are
     * compared across shards). */
    void (*layout)(const void *shard, erase_row_layout_t *layout);
    /* Read rows [begin, begin + count) of the shard as stored into raw[a]
     * (the raw arrays of the layout, `count` rows each), checking them;
     * on an error the arrays may hold part of the rows. */
    erase_status_t (*read)(void *shard, int64_t begin, int64_t count, void *const *raw);
    /* Decode raw rows index[0..count) (index NULL: rows 0..count) into
     * rows 0..count of field[f]; `layout` is the dataset's (widths). Cannot
     * fail: read() checked the rows. */
    void (*decode)(const erase_row_layout_t *layout, const void *const *raw, const uint32_t *index, int64_t count,
                   void *const *field);
} erase_row_format_t;

typedef enum {
    ERASE_READER_PART_ALL = 0, /* every row */
    ERASE_READER_PART_TRAIN,   /* the rows not held out for evaluation */
    ERASE_READER_PART_EVAL     /* the held-out rows */
} erase_reader_part_t;

typedef struct {
    int64_t global_batch; /* G: samples per step over all data-parallel ranks (>= 1) */
    int dp_rank;          /* this rank, 0 <= dp_rank < dp_size */
    int dp_size;          /* D: data-parallel ranks (>= 1) */
    uint64_t seed;        /* shuffle seed */
    int shuffle;          /* 1: shuffle blocks, then the rows of each pool of blocks, every epoch; 0: file order */
    int64_t block_rows;   /* rows of a block, the unit of reading (default 1024, the writer's chunk) */
    int64_t pool_blocks;  /* K: blocks whose rows are shuffled together (default ERASE_READER_POOL_BLOCKS);
                           * K * block_rows rows are held in memory; K * block_rows <= 2^31 */
    int prefetch;         /* batches decoded ahead by the background thread (0..64; default 2) */
    int drop_last;        /* 1: drop the last partial global batch (training); 0: keep it */
    erase_reader_part_t part;
    double eval_fraction; /* split by fraction (0 < f < 1), used when eval_shards == 0 */
    int eval_shards;      /* split by shard: the last eval_shards shards are the eval part */
    /* Memory of the delivered batches' field arrays (NULL: malloc / free):
     * erase-train gives page-locked staging memory (erase_host_alloc),
     * from which the copies to the device overlap compute. batch_alloc
     * returns NULL when out of memory. */
    void *(*batch_alloc)(void *ctx, size_t bytes);
    void (*batch_free)(void *ctx, void *ptr);
    void *batch_ctx;
} erase_reader_options_t;

/* One rank's part of a global batch, in host memory, ready for the model
 * (lib/nn/batch.h). Pointers stay valid until the next call of
 * erase_reader_next, erase_reader_seek or erase_reader_close. */
typedef struct {
    int64_t size;                                /* n: this rank's rows (0 <= n <= ceil(G/D)) */
    const void *field[ERASE_READER_MAX_FIELDS];  /* [n, width] each, decoded by the row format */
    const int64_t *row_id;  /* [n]: each row's index in all shards concatenated, file order */
    int64_t epoch;          /* epoch of this batch */
    int64_t step;           /* step within the epoch, 0-based */
    int64_t first_sample;   /* position of this rank's first row in the epoch's global order */
    int64_t global_size;    /* m: rows of the whole global batch (all ranks) */
    int end_of_epoch;       /* 1: no data; epoch `epoch` is complete */
    double wait_s;          /* seconds this call waited for the batch */
} erase_reader_batch_t;

/* Position in the global sample sequence; the same on every rank. */
typedef struct {
    int64_t epoch;   /* current epoch (0-based) */
    int64_t samples; /* samples of this epoch already delivered, over all ranks */
} erase_reader_cursor_t;

/* Facts of an open reader. */
typedef struct {
    int shards;             /* shard files */
    int64_t total_rows;     /* rows in all shards */
    int64_t samples;        /* S: rows of the selected part (samples per epoch before dropping) */
    int64_t steps_per_epoch;/* floor(S/G) (drop_last) or ceil(S/G) */
    int64_t blocks;         /* shuffle blocks of the selected part */
    int64_t max_local;      /* ceil(min(G, samples)/D): the most rows a batch of this rank can have */
    int64_t chunk_rows;     /* the first shard's chunk length (0: not chunked) */
    /* The reader's memory, counted where it allocates (bytes; the HDF5
     * library's own caches of the <= 8 open shards not included):
     * index_bytes: per shard its path, rows and first row id (24 bytes +
     *   the path), per block of the selected part its shard and rows, its
     *   place in the epoch's order and its position (40 bytes): 3.9 MB at
     *   10^8 rows in 1,024-row blocks, linear in the data's rows / block_rows;
     * buffer_bytes: the shuffle pool, the scratch rows and the batch slots,
     *   set by the options (G, D, pool_blocks, block_rows, prefetch) and
     *   the row layout, the same for any number of rows beyond one pool. */
    size_t index_bytes, buffer_bytes;
    erase_row_layout_t layout; /* the fields of a batch; the parameters all shards share */
} erase_reader_info_t;

/* Defaults: G = 1024 on 1 rank, seed 0, shuffled, 1024-row blocks in pools of 64,
 * prefetch 2, drop_last, every row. */
erase_reader_options_t erase_reader_options_default(void);

/*
 * Open `n` inputs (shard files or directories with an index.txt, see
 * io/ctr_index.h) of the row format `format` (which must outlive the
 * reader), validate every shard (the format's open: its errors name the
 * file and dataset), that every shard agrees with the first on the
 * format's parameters ("F: 783 features, the first shard P has 784: every
 * shard must have the same"), and that the rows in each directory's index
 * match the shards ("D/index.txt: D/part-00001.h5 has 100 rows, the index
 * says 200"), and start the prefetch thread at epoch 0. Errors also:
 *   ERASE_ERR_INVALID  bad options (the message names the option and its
 *                      value), an empty part ("the eval part has no rows"),
 *                      G > S with drop_last ("global batch 4096 is larger
 *                      than the 1000 samples of the train part: no step")
 *   ERASE_ERR_NOMEM, ERASE_ERR_IO (the thread cannot start)
 */
erase_status_t erase_reader_open(const erase_row_format_t *format, const char *const *inputs, int n,
                                 const erase_reader_options_t *options, erase_reader_t **out);

/* Stop the prefetch thread and close the files (NULL is allowed). */
void erase_reader_close(erase_reader_t *r);

/* The row format the reader was opened with. */
const erase_row_format_t *erase_reader_format(const erase_reader_t *r);

/* Facts of the reader (shards, rows, samples per epoch, steps per epoch,
 * the fields and parameters). */
erase_reader_info_t erase_reader_info(const erase_reader_t *r);

/*
 * The next batch of this rank, or the end of the epoch (out->end_of_epoch
 * = 1, out->size = 0; the following call starts the next epoch). The
 * previous batch's memory is reused. Errors: a read failure of the
 * background thread (ERASE_ERR_IO naming the file, dataset and rows, e.g.
 * "F: dataset /dense: reading rows [0, 100) failed: inflate() failed"), a
 * bad value in the rows read (ERASE_ERR_FORMAT naming the file, dataset,
 * row and value, e.g. "F: dataset /label: row 17 is 7, expected 0 or 1
 * (damaged shard?)"), a shard that changed since open (ERASE_ERR_FORMAT,
 * "F: has 499 rows now, 500 when the reader opened it", or any error of
 * the format's open); after a failure every further call fails the same
 * way until a seek.
 */
erase_status_t erase_reader_next(erase_reader_t *r, erase_reader_batch_t *out);

/* The cursor after the last batch or end of epoch delivered (after an
 * end of epoch: {epoch + 1, 0}). */
erase_reader_cursor_t erase_reader_cursor(const erase_reader_t *r);

/*
 * Continue from `cursor`: the next call of erase_reader_next delivers
 * the batch starting at sample `cursor.samples` of epoch `cursor.epoch`
 * (or that epoch's end, if no full batch is left with drop_last). Prefetched
 * batches are discarded. Errors: ERASE_ERR_INVALID (epoch < 0, samples
 * outside [0, S]), ERASE_ERR_IO (the thread cannot start).
 */
erase_status_t erase_reader_seek(erase_reader_t *r, erase_reader_cursor_t cursor);

/* Total seconds erase_reader_next waited for data since open. */
double erase_reader_wait_seconds(const erase_reader_t *r);

#endif

/*
 * Checkpoints (DESIGN.md, Data and files): one HDF5 file per checkpoint,
 * format "erase-ckpt-1", written by the caller that holds the whole state
 * (rank 0 of erase-train) but for sharded tables, whose rows their owners
 * write into the same file (see Sharded tensors), and published
 * atomically.
 *
 * Layout (every dataset carries `shape`, `meaning` and `fnv1a64`
 * attributes, a sharded tensor's `sharding` and `row_fnv1a64` in place of
 * `fnv1a64`, so `h5dump -A FILE` shows what is there):
 *
 *   /                      format = "erase-ckpt-1" (written last), description
 *   /meta                  attributes: step, samples_seen, epoch, global_batch,
 *                          world_size, dp_size, pp_size, pp_layout, schedule,
 *                          dense_optimizer, embedding_optimizer, seed, model
 *                          (the model file text), options (the run options
 *                          text), version (library), created (UTC), and
 *                          embeddings (the tables' placement kind: table,
 *                          row or auto) when tables were written sharded,
 *                          and tokenizer (the BPE tokenizer file text of
 *                          the lm data, docs/tokenizer.md) when it had one
 *   /params/<block>/<path> float32 [rows, cols] or [rows]: the parameters
 *                          (docs/models.md names), written once; always
 *                          the whole tensor, also of a sharded table
 *   /optim                 attributes step, lr: the optimizer clock (updates
 *                          applied; the learning rate of the last one)
 *   /optim/<block>/<path>/<slot>  float32: optimizer state of that parameter
 *   /rng/<rank>            uint64 [2]: that rank's random-number state words
 *   /data/cursor           int64 [2]: {epoch, samples of that epoch delivered}
 *   /data/rank_cursors     int64 [ranks, 2]: the cursor every rank reported
 *   /row_fnv1a64/<params|optim>/<name>  uint64 [rows]: FNV-1a 64 of each
 *                          row of a sharded tensor (below)
 *   /index                 string: one line per dataset above (but
 *                          /row_fnv1a64),
 *                          "<path> <type> <shape> <fnv1a64 hex>", or for a
 *                          sharded tensor "<path> float32 <shape> rows"
 *   / index_fnv1a64        the checksum of the /index text
 *   / meta_fnv1a64         the checksum of the attributes of /meta and
 *                          /optim (erase_ckpt_meta_fnv1a64)
 *
 * Integrity. fnv1a64 is FNV-1a (64 bit) over the dataset's bytes in
 * little-endian order; the file is created with the HDF5 1.8+ format, whose
 * metadata (superblock, object headers) HDF5 checksums itself. A file
 * whose `format` is missing, whose /index names a dataset that is missing
 * or has another shape, or whose data fails its checksum is damaged:
 * erase_ckpt_open() fails with ERASE_ERR_FORMAT naming the file and the
 * dataset; a file HDF5 cannot open (truncated, not HDF5) is ERASE_ERR_FORMAT
 * too, with HDF5's reason. The attributes of /meta and /optim are
 * range-checked (erase_ckpt_meta_check), then checked against
 * meta_fnv1a64; a file without meta_fnv1a64 (written by an erase before
 * this attribute, whose /meta and /optim were not covered) is loaded with
 * its attributes range-checked only, which erase_ckpt_attributes_summed
 * tells (so that yesterday's checkpoint of a daily retraining still loads
 * after an upgrade; the callers say so).
 *
 * Sharded tensors (erase-train --embeddings table|row|auto: tables held
 * in parts by the data-parallel ranks, erase_ckpt_tensor_t `sharding`).
 * The file holds each such tensor whole ([rows, dim], h5dump shows it
 * whole), every row written once, by the rank that holds it, never
 * gathered on one rank: part 0's writer creates its dataset (space
 * allocated, no data) with the attributes shape, meaning, sharding (where
 * the rows were: "table-wise on rank 3 of 4", "row-wise over 4 ranks: [0,
 * 250) on rank 0, ...") and row_fnv1a64 (its checksum dataset), and its
 * /index line ends "rows"; then, in the gate, before part 0 is published,
 * every rank writes its rows and their checksums with parallel HDF5
 * (erase_ckpt_write_rows, collective MPI-IO). A checksum per row lets a
 * reader verify just the rows it reads: erase_ckpt_open_flags with
 * ERASE_CKPT_OPEN_LAZY_ROWS validates such a tensor by its shapes only
 * (no rank reads a whole sharded table to validate), and erase_ckpt_load
 * reads the rows each rank holds in the run that loads it (any placement,
 * any number of ranks: a resume reshards) and verifies each: a damaged row
 * is ERASE_ERR_FORMAT "D/ckpt-40.h5: dataset /params/input/emb/3: row 50:
 * checksum ... does not match the stored ... (damaged data)". A tensor
 * written whole loads into a sharded run the same way (its rows kept,
 * the whole dataset streamed through its checksum; opened with
 * ERASE_CKPT_OPEN_STREAM_WHOLE, it is not held whole at open either).
 * Every read that does not load a tensor whole goes through one buffer
 * of 1 MiB of rows (io/checkpoint_stream.c). erase_ckpt_open
 * (erase-score, merges) loads sharded tensors whole, every row verified;
 * erase-inspect ckpt opens lazily and reads them 1 MiB of rows at a time
 * (erase_ckpt_sum_squares), so it inspects tables larger than memory.
 *
 * Publication (erase_ckpt_write). The file is written as
 * DIR/.ckpt-<step>.h5.tmp, flushed, closed, fsynced, renamed to
 * DIR/ckpt-<step>.h5, the directory fsynced; then DIR/latest (one line: the
 * file name; a hint, erase_ckpt_candidates does not read it) is replaced
 * the same way; then old checkpoints are removed.
 * A crash at any instant leaves every earlier published checkpoint intact,
 * and no file named ckpt-*.h5 is ever partly written.
 *
 * Pipeline checkpoints (pp_size P > 1, erase_ckpt_write_part). One file
 * per stage, each a complete erase-ckpt-1 file written by that stage's
 * data-parallel rank 0 with the stage's blocks' parameters and optimizer
 * slots and its own optimizer clock (/optim step, lr; the /meta of every
 * part is otherwise the same): stage 0's is DIR/ckpt-<step>.h5 (the
 * checkpoint's name: rotation, DIR/latest and resume see only it), stage
 * s >= 1's is DIR/ckpt-<step>.h5.stage<s> (erase_ckpt_stage_path). Every
 * part goes through .<name>.tmp, flush, fsync and rename, and stage 0's is
 * renamed last, after its writer's gate (erase-train: every stage reported
 * success), so a checkpoint a crash interrupted is never named
 * ckpt-<step>.h5. Pruning removes the stage files of every checkpoint it
 * removes, and any stage file of a step <= the new one whose ckpt-<step>.h5
 * is gone. erase_ckpt_open of ckpt-<step>.h5 opens (validates completely)
 * every stage file too, so a missing or damaged stage file makes the
 * checkpoint damaged (--resume auto passes over it). erase-inspect merge
 * writes one as a single file of pp_size 1 (erase_ckpt_write_file).
 */
#ifndef ERASE_IO_CHECKPOINT_H
#define ERASE_IO_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "lib/core/status.h"

#define ERASE_CKPT_FORMAT "erase-ckpt-1"
#define ERASE_CKPT_NAME_MAX 160  /* tensor names, below /params or /optim */
#define ERASE_CKPT_PATH_MAX 4096

/* The two groups of tensors. */
typedef enum { ERASE_CKPT_PARAMS = 0, ERASE_CKPT_OPTIM = 1 } erase_ckpt_group_t;

/*
 * One float32 tensor: `name` is its path below the group ("sub1/fc0/weight"
 * in /params, "sub1/fc0/weight/exp_avg" in /optim; components separated by
 * '/', no empty component). dims[0..ndim) (ndim 1 or 2) in elements. `data`
 * is host memory of dims[0] * dims[1 if ndim 2] floats: the source when
 * writing, the loaded values (owned by the checkpoint) when reading.
 * `meaning` is a one-line description stored as an attribute (may be NULL);
 * read back, the file's (owned by the checkpoint; "" if it has none), so
 * that a checkpoint written from another's tensors (erase-inspect merge)
 * keeps it.
 */
typedef struct {
    char name[ERASE_CKPT_NAME_MAX];
    int ndim;
    int64_t dims[2];
    float *data;
    const char *meaning;
    /* A tensor held in parts by the ranks (erase-train --embeddings
     * table|row|auto: a sharded table and its row-wise optimizer state):
     * `sharding` is its placement ("table-wise on rank 3 of 4", stored as
     * the dataset's attribute `sharding`), dims the WHOLE tensor's and
     * `data` only its rows [row0, row0 + held) (held may be 0; a row of a
     * 1-d tensor is one element). NULL: the whole tensor (row0 and held
     * unused). Read back, `sharding` is the file's (owned by the
     * checkpoint) and data is NULL until loaded (ERASE_CKPT_OPEN_LAZY_*). */
    const char *sharding;
    int64_t row0, held;
} erase_ckpt_tensor_t;

/* Elements of a tensor (no overflow for the tensors erase_ckpt_write
 * accepts and erase_ckpt_open returns: their floats fit a size_t). */
int64_t erase_ckpt_tensor_numel(const erase_ckpt_tensor_t *t);

/* The state of one rank that is not replicated: its random-number state
 * and its data cursor. */
typedef struct {
    uint64_t rng[2];         /* random-number state words (erase-train: {seed, 0}) */
    int64_t epoch, samples;  /* data cursor: epoch, samples of it delivered (all ranks) */
} erase_ckpt_rank_t;

/*
 * What a checkpoint says about the run. When writing, text fields are
 * copied from the pointers; when reading, the checkpoint owns them (valid
 * until erase_ckpt_close).
 */
typedef struct {
    int64_t step;               /* training steps done (optimizer updates) */
    int64_t samples_seen;       /* training samples consumed, over all ranks */
    int64_t epoch;              /* current epoch (0-based) */
    int64_t epoch_samples;      /* samples of `epoch` delivered (the data cursor) */
    int64_t global_batch;       /* samples per step over all ranks when written */
    int world_size, dp_size, pp_size;
    const char *pp_layout;      /* which blocks each pipeline stage holds, e.g. "stage 0: blocks 0-6" */
    const char *schedule;       /* early-backward mode and its settings */
    const char *dense_optimizer, *embedding_optimizer;
    uint64_t seed;
    int64_t clock_step;         /* optimizer clock: updates applied */
    float clock_lr;             /* optimizer clock: learning rate of the last update */
    const char *model;          /* model file text (erase_model_config_format) */
    const char *options;        /* run options text */
    const char *embeddings;     /* the tables' placement kind (erase-train --embeddings: table, row, auto);
                                 * NULL or "" when written by a run without sharded tables (replicated) */
    const char *tokenizer;      /* the lm data's tokenizer file text (io/tok_data_tokenizer.h); NULL or "" when
                                 * its data had none (byte-level text, imported tokens, other tasks) */
    const char *version;        /* library that wrote it ("erase 0.1.0"); ignored when writing */
    const char *created;        /* UTC time of writing; ignored when writing */
} erase_ckpt_meta_t;

/* The largest step (and optimizer clock step) a checkpoint may hold: 2^40,
 * more steps than a run takes (35 years at 1 ms a step), so that step
 * counts, step-indexed arrays and step sums stay far from int64 overflow. */
#define ERASE_CKPT_STEP_MAX ((int64_t)1 << 40)
/* The largest world size a checkpoint may hold (also the /rng/<rank> bound). */
#define ERASE_CKPT_RANKS_MAX 1000000
/* The largest global batch a checkpoint may hold: 2^31 samples a step. */
#define ERASE_CKPT_BATCH_MAX ((int64_t)1 << 31)
/* The largest samples_seen (and a rank's data cursor) a checkpoint may
 * hold: 2^62, so that a run resumed from it adds a global batch a step
 * for 2^31 steps of the largest batch before int64 would overflow. An
 * epoch takes at least one step: epochs are bounded by ERASE_CKPT_STEP_MAX. */
#define ERASE_CKPT_SAMPLES_MAX ((int64_t)1 << 62)

/*
 * Range checks of a checkpoint's meta data (erase_ckpt_open runs them on
 * every file it loads, so erase-train --resume / --init-from and
 * erase-inspect ckpt refuse the same files; erase_ckpt_write on what it is
 * given), with or without meta_fnv1a64: step and clock_step in [0,
 * ERASE_CKPT_STEP_MAX]; samples_seen in [step, ERASE_CKPT_SAMPLES_MAX] (a
 * step takes at least one sample), 0 at step 0; epoch in [0,
 * ERASE_CKPT_STEP_MAX]; epoch_samples in [0, samples_seen]; global_batch
 * in [1, ERASE_CKPT_BATCH_MAX]; world_size,
 * dp_size and pp_size in [1, ERASE_CKPT_RANKS_MAX] with world_size =
 * dp_size x pp_size; clock_lr finite and >= 0 (a cosine schedule ends at 0).
 * `path` names the file in the message. Errors: ERASE_ERR_FORMAT naming
 * the file, the attribute, its value and what was expected, e.g.
 * "D/ckpt-30.h5: attribute /meta step = -5: expected an integer >= 0".
 */
erase_status_t erase_ckpt_meta_check(const char *path, const erase_ckpt_meta_t *m);

/*
 * The checksum stored as the root attribute meta_fnv1a64: FNV-1a 64 of a
 * canonical text of every attribute of /meta and /optim the loader reads
 * (all of erase_ckpt_meta_t but epoch_samples, which /data/cursor holds),
 * one "<group>.<name>=<value>\n" each in a fixed order: integers in decimal,
 * strings as "<bytes>:<text>" (NULL as empty), clock_lr as the 8 hex digits
 * of its IEEE bits.
 */
uint64_t erase_ckpt_meta_fnv1a64(const erase_ckpt_meta_t *m);

/* What erase_ckpt_write did. */
typedef struct {
    char path[ERASE_CKPT_PATH_MAX]; /* the published file */
    int64_t bytes;                  /* size of the file */
    double seconds;                 /* from creating the temporary file to the pruning */
    double mb_per_s;                /* bytes / seconds / 1e6 */
    int removed;                    /* older checkpoints removed (keep) */
} erase_ckpt_report_t;

/* FNV-1a 64 of `bytes` bytes (offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3): the checksum stored with every dataset. */
uint64_t erase_ckpt_fnv1a64(const void *data, size_t bytes);

/*
 * Write a checkpoint of meta->step into directory `dir` (created if
 * missing, one level) and publish it as described above; then keep the
 * `keep` newest checkpoints of steps <= meta->step (keep >= 1; newer ones,
 * left by an earlier run, are not touched) and remove stale temporary
 * files. params[np] and optim[no] are written under /params and /optim;
 * ranks[nranks] under /rng/<r> and /data/rank_cursors; the data cursor is
 * meta's (epoch, epoch_samples). `sums`, if not NULL, holds the
 * precomputed fnv1a64 of params then optim (np + no values; the caller's
 * cross-rank check computed them), else they are computed here.
 * Environment (tests): ERASE_DEBUG_CKPT_SLEEP_MS=N sleeps N ms after the
 * parameters are written, before the optimizer state, the `format`
 * attribute and the rename (a window to kill the writer in).
 * Errors: ERASE_ERR_INVALID (bad names, shapes or keep), ERASE_ERR_FORMAT
 * (meta fails erase_ckpt_meta_check, naming dir/ckpt-<step>.h5), ERASE_ERR_IO
 * (naming the file or dataset and the reason; no checkpoint is published
 * and the temporary file is removed; a full disk or quota, found before
 * HDF5 writes by allocating the file's size, about: "DIR: no space for
 * checkpoint ckpt-<step>.h5: it needs about B bytes, F bytes are free
 * there (No space left on device)"), ERASE_ERR_NOMEM.
 */
erase_status_t erase_ckpt_write(const char *dir, const erase_ckpt_meta_t *meta,
                                const erase_ckpt_tensor_t *params, int np,
                                const erase_ckpt_tensor_t *optim, int no,
                                const erase_ckpt_rank_t *ranks, int nranks,
                                const uint64_t *sums, int keep, erase_ckpt_report_t *report);

/* Called once by erase_ckpt_write_part with its status so far (ERASE_OK:
 * the part is written, and for s >= 1 published); returns the verdict
 * (ERASE_OK: publish part 0). Called on every path, failures included, so
 * it may be a collective. */
typedef erase_status_t (*erase_ckpt_gate_fn)(void *ctx, erase_status_t st);

/*
 * Write part `part` (a pipeline stage, 0 <= part < meta->pp_size) of a
 * checkpoint, as erase_ckpt_write writes a whole one (which is part 0
 * without a gate): part 0 is DIR/ckpt-<step>.h5, written to its temporary
 * name, then `gate` (may be NULL) decides, then it is renamed, DIR/latest
 * replaced and old checkpoints pruned (with their stage files); a part s
 * >= 1 is DIR/ckpt-<step>.h5.stage<s>, published at once, then `gate` is
 * told (nothing is pruned). The tensors are that stage's. Errors: those of
 * erase_ckpt_write, ERASE_ERR_INVALID (part out of range), and the gate's
 * (nothing of part 0 is published; the temporary file is removed).
 */
erase_status_t erase_ckpt_write_part(const char *dir, const erase_ckpt_meta_t *meta, int part,
                                     const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no,
                                     const erase_ckpt_rank_t *ranks, int nranks,
                                     const uint64_t *sums, int keep, erase_ckpt_gate_fn gate, void *ctx,
                                     erase_ckpt_report_t *report);

/*
 * Write one checkpoint file at `path` (any name; no directory of
 * checkpoints: nothing is pruned, no `latest`), the tensors and meta as
 * erase_ckpt_write takes them: written as <dir>/.<name>.tmp, flushed,
 * closed, fsynced, then published as `path` and the directory fsynced, so
 * `path` is never a partly written file. Without `overwrite` an existing
 * `path` is kept (published with link(2), which refuses atomically).
 * What erase-inspect merge writes. Errors: those of erase_ckpt_write (the
 * temporary file is removed), ERASE_ERR_INVALID "<path>: exists (not
 * overwritten)" and "<path>: not a file name, or too long".
 */
erase_status_t erase_ckpt_write_file(const char *path, const erase_ckpt_meta_t *meta,
                                     const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no,
                                     const erase_ckpt_rank_t *ranks, int nranks, int overwrite);

/* The temporary name of part 0 of the checkpoint of `step` in `dir`
 * (DIR/.ckpt-<step>.h5.tmp, what erase_ckpt_write_part writes before its
 * gate) into out[size]: 0, or -1 when it does not fit. */
int erase_ckpt_temp_path(const char *dir, int64_t step, char *out, size_t size);

/*
 * Write this rank's rows of the sharded tensors (those with `sharding`,
 * in the order of params then optim: the same list on every rank of
 * `comm`, each rank's own rows) into the temporary checkpoint file `temp`
 * that part 0's writer has written and closed (its datasets of these
 * tensors created, whole-shaped, with no data): collective over `comm`
 * (parallel HDF5, the MPI-IO driver, collective transfers). Each rank
 * writes its rows [row0, row0 + held) and their per-row FNV-1a 64 into
 * /row_fnv1a64/<group>/<name> (a rank holding none takes part with an
 * empty selection); then the file is flushed and closed on every rank and
 * fsynced by comm's rank 0. Call it from erase_ckpt_write_part's gate,
 * before part 0 is published. The ranks first agree (an all-reduce) that
 * every rank has its rows ready; when one has not, no rank writes: that
 * rank returns its error, the others ERASE_OK, so the caller must agree on
 * the status (erase-train's gate all-reduces it) and fail the checkpoint
 * everywhere. Environment (tests): ERASE_DEBUG_CKPT_ROWS_FAIL=R makes
 * comm's rank R fail so ("ERASE_DEBUG_CKPT_ROWS_FAIL: rank R does not write
 * its rows"). Errors: ERASE_ERR_INVALID (a sharded tensor's rows outside
 * its shape), ERASE_ERR_IO (naming the file or dataset and HDF5's reason),
 * ERASE_ERR_NOMEM.
 */
erase_status_t erase_ckpt_write_rows(const char *temp, MPI_Comm comm, const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no);

/* The file of stage `stage` of the checkpoint `path` into out[size]: path
 * itself for stage 0, "<path>.stage<s>" else. 0, or -1 when it does not
 * fit (or stage < 0). */
int erase_ckpt_stage_path(const char *path, int stage, char *out, size_t size);

/* Rename the checkpoint `from` to `to` (erase-train's *.damaged and
 * *.superseded) with its pipeline stage files: from.stage<s> becomes
 * to.stage<s> for s = 1, 2, ... while one exists (a pipeline's stage files
 * are numbered without gaps), the stage files first, so a checkpoint set
 * aside can still be opened, and a run that writes the same step again
 * does not overwrite the old stage files. *stages: the stage files renamed
 * (also on error). Errors: ERASE_ERR_IO naming the file that could not be
 * renamed and why (the files renamed before it stay renamed),
 * ERASE_ERR_INVALID when a name does not fit ERASE_CKPT_PATH_MAX. */
erase_status_t erase_ckpt_rename(const char *from, const char *to, int *stages);

/* ---- reading --------------------------------------------------------------- */

typedef struct erase_ckpt erase_ckpt_t;

/*
 * Open a checkpoint file, validate it completely (format, every dataset of
 * /index present with its shape and checksum, /meta complete) and load
 * every tensor into host memory. Errors: ERASE_ERR_IO (cannot read the
 * file), ERASE_ERR_FORMAT (not a checkpoint or damaged: the message names
 * the file and what is wrong, e.g. "D/ckpt-40.h5: dataset
 * /params/emb/3: checksum 0x... does not match the stored 0x..."),
 * ERASE_ERR_NOMEM; a path that is not a regular file (a FIFO, a device)
 * is refused before HDF5 opens it: ERASE_ERR_IO "D/ckpt-4.h5 is a
 * FIFO, expected a regular file" (erase_ckpt_open_newest skips it as
 * damaged). A pipeline checkpoint (meta pp_size > 1) also needs
 * every stage file (see above): one missing, damaged or of another step is
 * ERASE_ERR_FORMAT "D/ckpt-40.h5: stage 1 of 2: <why, naming the file>";
 * the tensors loaded are stage 0's. A stage file named as such
 * (<checkpoint>.stage<s>, s >= 1: ckpt-<step>.h5.stage<s>, or one set
 * aside with erase_ckpt_rename) opens alone.
 */
erase_status_t erase_ckpt_open(const char *path, erase_ckpt_t **out);

/*
 * Open as erase_ckpt_open does, but without loading tensors' data: with
 * ERASE_CKPT_OPEN_LAZY_ROWS the row-checksummed (sharded) tensors are only
 * checked (the dataset and its /row_fnv1a64 dataset present with their
 * shapes): no rank reads a whole sharded table to validate; with
 * ERASE_CKPT_OPEN_LAZY_ALL no /params or /optim tensor is read (the file
 * is assumed validated by another rank: format, /index, /meta are still
 * checked). Those tensors' data stay NULL; erase_ckpt_load reads from the
 * file the rows each caller asks for and verifies them then. flags 0:
 * erase_ckpt_open. Errors: those of erase_ckpt_open.
 */
#define ERASE_CKPT_OPEN_LAZY_ROWS 1
#define ERASE_CKPT_OPEN_LAZY_ALL 2
/* With ERASE_CKPT_OPEN_STREAM_WHOLE the tensors checksummed whole are
 * verified at open as completely as without it, but by streaming each
 * through its checksum 1 MiB of rows at a time, and not kept (data NULL):
 * erase_ckpt_load reads again, verified again, only what each caller asks
 * for. With ERASE_CKPT_OPEN_LAZY_ROWS it validates like LAZY_ROWS alone
 * (the same checkpoints accepted, the same errors) while holding no
 * tensor: what erase-train opens, so that a rank of a run with sharded
 * tables never holds a whole table, even one written replicated. */
#define ERASE_CKPT_OPEN_STREAM_WHOLE 4
erase_status_t erase_ckpt_open_flags(const char *path, int flags, erase_ckpt_t **out);

/* Open stage `stage`'s file of the pipeline checkpoint `path` (ckpt-<step>.h5)
 * alone, validated completely, without the other stages' (what each stage's
 * writer loads on resume). Errors: those of erase_ckpt_open, naming the
 * stage file. */
erase_status_t erase_ckpt_open_stage(const char *path, int stage, erase_ckpt_t **out);

/* ERASE_OK when ck is a data-parallel checkpoint (meta pp_size 1), which
 * every reader of a whole model takes (erase-train --eval-only,
 * erase-score, erase-sample); else ERASE_ERR_INVALID "PATH: a pipeline
 * checkpoint (LAYOUT): ..." pointing to erase-train --resume with the
 * same --pp and --stages, and to erase-inspect merge PATH OUT, which makes
 * one file of it. */
erase_status_t erase_ckpt_need_whole(const erase_ckpt_t *ck);
void erase_ckpt_close(erase_ckpt_t *ck);

/* The file's path and its meta data. */
const char *erase_ckpt_path(const erase_ckpt_t *ck);
const erase_ckpt_meta_t *erase_ckpt_meta(const erase_ckpt_t *ck);

/* Tensors of a group, in the order written (/index order); data loaded. */
int erase_ckpt_count(const erase_ckpt_t *ck, erase_ckpt_group_t g);
const erase_ckpt_tensor_t *erase_ckpt_tensor(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i);
/* The tensor of a group with this name, or NULL. */
const erase_ckpt_tensor_t *erase_ckpt_find(const erase_ckpt_t *ck, erase_ckpt_group_t g, const char *name);

/* 1: the attributes of /meta and /optim matched their checksum
 * (meta_fnv1a64); 0: the file has none (an older erase's checkpoint): they
 * were range-checked only. */
int erase_ckpt_attributes_summed(const erase_ckpt_t *ck);

/* Per-rank state: the number of ranks written and rank r's (r < count). */
int erase_ckpt_ranks(const erase_ckpt_t *ck);
const erase_ckpt_rank_t *erase_ckpt_rank(const erase_ckpt_t *ck, int r);

/*
 * Copy group g's tensors into `want` (their data pointers: host memory of
 * their shapes) by name. Every tensor of `want` must exist in the
 * checkpoint with the same shape and the checkpoint must have no other
 * tensor in g; otherwise nothing is copied and the result is
 * ERASE_ERR_INVALID with a message listing the differences (the first 10,
 * then how many more), e.g.
 *   "D/ckpt-40.h5: the model differs from the checkpoint's in 2 tensors
 *    (checkpoint -> this run): params/input/emb/0 [101, 4] -> [103, 4];
 *    params/sub3/fc0/weight missing -> [256, 256]"
 * `what` names the group in that message ("the model", "the optimizer state").
 * A `want` tensor with `sharding` receives only its rows [row0, row0 +
 * held) (data: held rows); without, the whole tensor. Tensors not loaded
 * at open (ERASE_CKPT_OPEN_LAZY_*) are read from the file now and
 * verified (see Sharded tensors above); a failure then
 * (ERASE_ERR_FORMAT naming the file, dataset and row; ERASE_ERR_NOMEM)
 * may leave the tensors before it copied. ERASE_ERR_INVALID also for rows
 * outside the tensor.
 */
erase_status_t erase_ckpt_load(const erase_ckpt_t *ck, erase_ckpt_group_t g, erase_ckpt_tensor_t *want,
                               int n, const char *what);

/*
 * erase_ckpt_load of a part of the model: the checkpoint may hold other
 * tensors in g (a pipeline stage's blocks taken from a whole, data-parallel
 * checkpoint); every tensor of `want` must still exist with the same
 * shape. Errors: those of erase_ckpt_load.
 */
erase_status_t erase_ckpt_load_part(const erase_ckpt_t *ck, erase_ckpt_group_t g, erase_ckpt_tensor_t *want,
                                    int n, const char *what);

/*
 * The check erase_ckpt_load makes first, alone (erase-inspect ckpt runs
 * it as the loaders do): group g of the checkpoint holds exactly the
 * tensors of `want` (names, ndim, dims; data unused), else
 * ERASE_ERR_INVALID with the message above. Nothing is read.
 */
erase_status_t erase_ckpt_check_tensors(const erase_ckpt_t *ck, erase_ckpt_group_t g,
                                        const erase_ckpt_tensor_t *want, int n, const char *what);

/*
 * The sum of squares (in double, element by element in order) of tensor i
 * of group g into *out: from memory when loaded, else (a sharded tensor
 * opened with ERASE_CKPT_OPEN_LAZY_ROWS) read from the file 1 MiB of rows
 * at a time, each row verified, so a table larger than memory can be
 * measured (erase-inspect ckpt's L2 column). Errors: those of
 * erase_ckpt_load's reads (ERASE_ERR_FORMAT naming the file, dataset and
 * row; ERASE_ERR_NOMEM).
 */
erase_status_t erase_ckpt_sum_squares(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i, double *out);

/* Told the rows [row0, row0 + n) of a tensor being streamed (rows: n rows
 * of the tensor's row width, valid during the call); a status other than
 * ERASE_OK stops the stream with it. */
typedef erase_status_t (*erase_ckpt_rows_fn)(void *ctx, int64_t row0, int64_t n, const float *rows);

/*
 * Every row of tensor i of group g, in order, to fn, a block of at most
 * 1 MiB of rows at a time (one call for a tensor loaded at open), without
 * holding the tensor in memory (erase-export writes tables larger than
 * memory so). Verified as erase_ckpt_load verifies: a row-checksummed
 * (sharded) tensor's rows before fn sees them; a whole-checksummed one
 * after its last block, so a damaged tensor fails after fn saw its rows:
 * the caller must not publish what it made of them then. fn is called
 * with the process-wide HDF5 lock held (io/h5_util.h): it must not call
 * HDF5. Errors: those of erase_ckpt_load's reads, fn's.
 */
erase_status_t erase_ckpt_stream(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i, erase_ckpt_rows_fn fn,
                                 void *ctx);

/* ---- a checkpoint directory ---------------------------------------------------- */

/*
 * The checkpoints of `dir` to try, best first: every DIR/ckpt-<step>.h5 by
 * step, newest first. DIR/latest is not read: it is only a hint for people
 * and scripts (a writer killed between publishing ckpt-<step>.h5 and
 * updating latest leaves latest naming the one before). Newer
 * checkpoints that an abandoned run left (a run restarted from an older
 * checkpoint in the same directory) would come first too: erase-train
 * renames them *.superseded when it restarts. *paths is an array of *n malloc'ed paths (free with
 * erase_ckpt_candidates_free); *n = 0 when there is none. A missing
 * directory gives none. Errors: ERASE_ERR_IO (cannot list the directory),
 * ERASE_ERR_NOMEM.
 */
erase_status_t erase_ckpt_candidates(const char *dir, char ***paths, int *n);
void erase_ckpt_candidates_free(char **paths, int n);

/*
 * Remove from `dir` the temporary files of checkpoints being written
 * (".ckpt-<step>.h5.tmp", a stage file's ".ckpt-<step>.h5.stage<s>.tmp"):
 * left by a writer that was killed (a SIGKILL, a launcher's grace period
 * run out). Only while no one writes there: the checkpoint directory's
 * lock held, or just after publishing a checkpoint. Returns how many were
 * removed (0 for a missing directory).
 */
int erase_ckpt_remove_temps(const char *dir);

/* Told about a candidate that cannot be opened: its path and why (the
 * reason of erase_ckpt_open, without the leading "<path>: "; "<path> is a
 * FIFO, ..." reads "it is a FIFO, ..."). */
typedef void (*erase_ckpt_skip_fn)(void *ctx, const char *path, const char *why);

/*
 * Open the checkpoint of `dir` that a resume takes (what erase-train
 * --resume DIR and --init-from DIR load): the first of
 * erase_ckpt_candidates that erase_ckpt_open accepts; each one before it
 * that fails to open (damaged or unreadable) is passed to `skipped` (may be
 * NULL) and passed over. *out is NULL, with ERASE_OK, when `dir` holds no
 * checkpoint (or does not exist); close it with erase_ckpt_close. Errors:
 * ERASE_ERR_FORMAT "none of the 2 checkpoints in D is usable (all damaged,
 * see above)" (", see above" only with a `skipped`), ERASE_ERR_NOMEM, and
 * those of erase_ckpt_candidates.
 */
erase_status_t erase_ckpt_open_newest(const char *dir, erase_ckpt_skip_fn skipped, void *ctx, erase_ckpt_t **out);
/* erase_ckpt_open_newest with erase_ckpt_open_flags' flags for each
 * candidate. */
erase_status_t erase_ckpt_open_newest_flags(const char *dir, int flags, erase_ckpt_skip_fn skipped, void *ctx,
                                            erase_ckpt_t **out);

/*
 * Open what a user names as "the checkpoint" (erase-score and erase-sample
 * CKPT, erase-train --eval-only --init-from): a checkpoint file
 * (erase_ckpt_open), or a directory: its newest usable checkpoint
 * (erase_ckpt_open_newest, damaged ones passed to `skipped`, which may be
 * NULL). Errors: those of the two; a directory without a checkpoint is
 * ERASE_ERR_FORMAT "DIR: no checkpoint (ckpt-<step>.h5) in this directory".
 */
erase_status_t erase_ckpt_open_path(const char *path, erase_ckpt_skip_fn skipped, void *ctx, erase_ckpt_t **out);
/* erase_ckpt_open_path with erase_ckpt_open_flags' flags (for the file,
 * or for each candidate of the directory). */
erase_status_t erase_ckpt_open_path_flags(const char *path, int flags, erase_ckpt_skip_fn skipped, void *ctx,
                                          erase_ckpt_t **out);

/* Step of a checkpoint file name "ckpt-<step>.h5" (the last path
 * component), or -1 if the name is not of that form. */
int64_t erase_ckpt_name_step(const char *path);

#endif

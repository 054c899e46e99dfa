/*
 * erase-train's checkpoints (io/checkpoint.h has the file format):
 * writing every --checkpoint-every steps, at the end and on SIGTERM or
 * SIGUSR1; --resume auto|PATH; --init-from CKPT [--init-from-optimizer].
 *
 * Who does what. Every data-parallel replica holds the same parameters and
 * optimizer state; before writing, every rank hashes its tensors and the
 * hashes are compared across the dp group (a replica that drifted is an
 * error, not a silent checkpoint). Per-rank state (random-number state
 * words, data cursor) is gathered to every rank; rank 0 alone writes the
 * file and tells the others whether it succeeded. On resume rank 0 alone
 * reads and validates the checkpoint and broadcasts what it loaded, so all
 * ranks agree on the file, the step and every value, and only rank 0 needs
 * to see the checkpoint directory.
 *
 * Sharded tables (--embeddings table; any placement of erase_param_t
 * row0/held). At the first checkpoint or resume the dp ranks gather which
 * rows each holds: a tensor not held whole by every rank is written with
 * its placement (io/checkpoint.h, Sharded tensors): rank 0's file holds
 * its dataset without data, and in the gate of erase_ckpt_write_part
 * every dp rank writes its rows into the temporary file collectively
 * (erase_ckpt_write_rows on the dp group's MPI communicator) before it is
 * published; the replicas' checksum comparison skips those tensors. On
 * resume rank 0 picks and validates the checkpoint without reading the
 * sharded tables whole (ERASE_CKPT_OPEN_LAZY_ROWS), nor keeping a table
 * written whole (ERASE_CKPT_OPEN_STREAM_WHOLE: streamed through its
 * checksum), and loads its own
 * tensors; every other rank then opens the same file and loads its own
 * tensors, of the sharded ones only its rows for this run's placement
 * (each row verified), instead of receiving rank 0's broadcast: a run
 * with sharded tables needs the checkpoint directory on every rank.
 *
 * Pipelines (--pp P > 1; docs/pipelines.md, Checkpoints). One file per
 * stage (io/checkpoint.h, erase_ckpt_write_part): each stage's dp rank 0
 * writes its blocks' parameters, optimizer slots and optimizer clock
 * (paci stages step their own) after the dp comparison within its stage;
 * stage 0's file, ckpt-<step>.h5, is published last, once every stage
 * reported success. paci is drained first (erase_pipe_drain: nothing in
 * flight, a new segment of the steps left), so a resumed run continues
 * bitwise from the drained state. On resume rank 0 picks the checkpoint
 * (opening it validates every stage file) and checks the layout (/meta
 * pp_layout: which blocks each stage holds; another --pp or --stages is
 * refused naming both); then each stage's dp rank 0 loads its own file
 * and broadcasts it over its dp group: no stage's parameters pass through
 * rank 0. --init-from a pipeline checkpoint needs the same layout too (a
 * data-parallel run cannot load one: erase-inspect merge makes it whole);
 * a whole (data-parallel) checkpoint loads into any --pp and --stages,
 * --resume or --init-from: each stage's dp rank 0 reads its blocks of it
 * (erase_ckpt_load_part).
 *
 * Signals. With --checkpoint-dir, SIGTERM, SIGINT and SIGUSR1 only set a
 * flag (sigaction, from the start of main); after every step the ranks
 * all-reduce (max) the flag on the host stream, so all stop after the same
 * step, write a checkpoint and leave the loop (erase-train then exits 0).
 * Slurm signals every task itself (srun, `--signal`); Open MPI's mpirun
 * forwards SIGUSR1 as is, but on SIGTERM or SIGINT (Ctrl-C) it sends the
 * ranks SIGCONT, SIGTERM T seconds later and SIGKILL T seconds after that
 * (T = --mca odls_base_sigkill_timeout, 1 by default), and exits non-zero
 * itself: under mpirun, send SIGUSR1, or give the ranks time. A terminal's
 * Ctrl-C to a run without mpirun, or to ranks in its process group, is
 * SIGINT to the ranks themselves.
 * Since the launcher may kill the ranks before the checkpoint is written,
 * rank 0 says at once, when the first SIGTERM or SIGINT comes (from the
 * handler, on stderr), what --resume auto takes until erase-train says
 * "stopped by":
 * "erase-train: SIGTERM: writing a checkpoint after this step, then
 * stopping; until erase-train says "stopped by", none is written and
 * --resume auto takes D/ckpt-40.h5 (mpirun kills the ranks 1 s after its
 * SIGTERM, Slurm after KillWait: ...)". (A larger odls_base_sigkill_timeout delays mpirun's
 * SIGTERM as much, and chatty ranks were seen to stall meanwhile: SIGUSR1
 * is the way to stop a run under mpirun.) A temporary file a killed
 * writer left is removed at the next start (io/checkpoint.h,
 * erase_ckpt_remove_temps), under the directory's lock.
 *
 * The directory's lock (apps/train/checkpoint_lock.h): rank 0 holds
 * DIR/.lock from set-up to the end of the run, and checks it before
 * every checkpoint: a run whose lock was taken over or removed writes
 * nothing more and stops (status 1); ERASE_CKPT_LOCK_STALE_S (heartbeat
 * age after which another host's lock is stale, default 300) and
 * ERASE_CKPT_LOCK_WAIT_S (how long a requeued Slurm job waits for its
 * previous allocation, default 120) tune it.
 *
 * Test hooks (environment): ERASE_DEBUG_RAISE_AT_START=1 makes every rank
 * send itself SIGUSR1 right after MPI start-up (erase-train.c);
 * ERASE_DEBUG_KILL_AT_STEP=N[:R[:usr1]] makes world rank
 * R (default: the last rank) SIGKILL itself right after step N (with
 * ":usr1", send itself SIGUSR1 there instead: a stop at a chosen step;
 * with ":stop", SIGSTOP: paused there until the test sends SIGCONT);
 * ERASE_DEBUG_SAMPLE_LOG=PREFIX makes every rank append "epoch position
 * row_id" for every training sample it takes to PREFIX.<rank>;
 * ERASE_DEBUG_CKPT_SLEEP_MS (io/checkpoint.h) pauses inside the write;
 * ERASE_DEBUG_CKPT_ROWS_FAIL=R (io/checkpoint.h) makes dp rank R fail to
 * write its rows of the sharded tables; ERASE_DEBUG_CKPT_AFTER_RESUME=1
 * makes a resumed run write the state it loaded, before its first step,
 * as the checkpoint of its step (train_ckpt_rewrite: what was loaded,
 * compared with what was read);
 * ERASE_DEBUG_CKPT_FAILED_STOP=1
 * makes rank 0 stop itself (SIGSTOP) after the warning of a checkpoint
 * not written (--checkpoint-failure continue), until a test that frees
 * the space sends SIGCONT.
 *
 * A checkpoint that cannot be written (a full disk or quota: one line
 * naming the directory, the bytes needed and free, io/checkpoint.h) ends
 * the run with --checkpoint-failure stop (every rank returns the failure:
 * status 1, no abort; the last good checkpoint stays), or with continue is
 * a warning from rank 0 naming what --resume auto takes, and the run goes
 * on to try again at the next checkpoint.
 */
#ifndef ERASE_APPS_TRAIN_CHECKPOINT_H
#define ERASE_APPS_TRAIN_CHECKPOINT_H

#include <stdio.h>

#include "apps/train/options.h"
#include "io/reader.h"
#include "lib/comm/comm.h"
#include "lib/nn/optim.h"
#include "lib/sched/pipe.h"

/* What the checkpoints of a run work with (all outlive the train_ckpt_t). */
typedef struct {
    const train_options_t *o;
    const erase_world_t *w;
    erase_stream_t *host;             /* host-side collectives */
    const erase_model_config_t *cfg;  /* the model as trained (cuts and seed applied) */
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_reader_t *train;            /* the training data (cursor) */
    int64_t global_batch;             /* samples per step over all ranks */
    const char *tokenizer;            /* lm: the data's tokenizer file text, kept in every checkpoint; NULL: none */
    const char *data_vocab;           /* ctr, dcn: the data's vocabulary digest or "none", kept in every
                                       * checkpoint (io/checkpoint.h meta data_vocab); NULL or "": unknown */
    int tty;                          /* rank 0 redraws a progress line: clear it before printing */
    /* a pipeline (NULL without): stage s holds blocks [stage_first[s],
     * stage_first[s + 1]) (pp_size + 1 entries); the stage executor,
     * drained before every checkpoint into a new segment of the steps left
     * to *total_steps */
    const int *stage_first;
    erase_pipe_t *pipe;
    const int64_t *total_steps;
} train_ckpt_env_t;

/* Where training stands. */
typedef struct {
    int64_t step;          /* steps done */
    int64_t epoch;         /* current epoch */
    int64_t samples_seen;  /* training samples consumed over all ranks */
} train_ckpt_pos_t;

typedef struct train_ckpt train_ckpt_t;

/*
 * Prepare checkpoints for a run: check the options (--keep-checkpoints >=
 * 1, --resume and --init-from not both, --resume auto needs
 * --checkpoint-dir, --init-from-optimizer needs --init-from), name the
 * tensors (parameters and optimizer slots) and, with --checkpoint-dir,
 * install the SIGTERM/SIGINT/SIGUSR1 handlers. Local (no collective).
 * Errors: ERASE_ERR_INVALID naming the option, ERASE_ERR_NOMEM.
 */
erase_status_t train_ckpt_create(const train_ckpt_env_t *env, train_ckpt_t **out);

/* The program named in the line that says a damaged checkpoint is passed
 * over ("erase-train" unless set; train_score sets "erase-score"). */
void train_ckpt_program(const char *name);

/* Restore the signal handlers train_ckpt_create replaced and free. NULL
 * is allowed. */
void train_ckpt_destroy(train_ckpt_t *ck);

/*
 * With --checkpoint-dir, at the start of main (before MPI start-up): catch
 * SIGTERM, SIGINT and SIGUSR1 from now on, so that a signal during
 * start-up (a job pre-empted as it starts, a Ctrl-C) stops the run after
 * its first step with a checkpoint instead of killing the rank. rank0: this
 * process is rank 0 of the job (the launcher's rank, or none): it says at
 * once, on stderr, when the first signal comes, what --resume auto takes
 * should the run be killed before its checkpoint is written (here: the
 * newest checkpoint file in checkpoint_dir). Errors: ERASE_ERR_IO.
 */
erase_status_t train_ckpt_catch_signals(const char *checkpoint_dir, int rank0);

/*
 * Set-up, collective over the world (call on every rank, after the
 * network, optimizer and reader exist and before the first step): rank 0
 * creates --checkpoint-dir (one level), checks that it can write there and
 * takes its lock (apps/train/checkpoint_lock.h; held until
 * train_ckpt_destroy: another run's directory is refused, ERASE_ERR_STATE
 * and train_ckpt_failed_alike 2) before it renames or writes anything;
 * then --resume / --init-from: rank 0 picks the checkpoint (auto: the newest
 * ckpt-*.h5, whatever DIR/latest names; a damaged one is skipped with a message naming it), checks
 * that the model (tensor names and shapes), the optimizer state and the
 * pipeline layout match, and broadcasts the values. Resume sets *pos, the
 * optimizer clock and the reader's cursor; --init-from loads parameters
 * (and optimizer state) only and leaves *pos at step 0. *resumed is 1 when
 * the run continues a checkpoint. Rank 0 prints what it did.
 * Errors (the same on every rank): ERASE_ERR_INVALID (a different model or
 * layout: the message lists the differences), ERASE_ERR_FORMAT (a damaged
 * checkpoint named explicitly, or no usable one in the directory),
 * ERASE_ERR_IO, ERASE_ERR_COMM.
 */
erase_status_t train_ckpt_restore(train_ckpt_t *ck, train_ckpt_pos_t *pos, int *resumed);

/* 1 when a failure that ck's collective functions returned was shared by
 * every rank (rank R's status and message given to all: "--resume (rank
 * R): ..."), so every rank returns it and the job can end without an
 * abort; 2 for such a failure that is a usage error (--checkpoint-dir in
 * use by another run); 0 otherwise (a failure of one rank alone, or of the
 * collectives themselves). The value is the exit status erase-train
 * gives. */
int train_ckpt_failed_alike(const train_ckpt_t *ck);

/*
 * After a step (collective over the world, every rank, every step): with
 * --checkpoint-dir, agree on whether any rank got SIGTERM/SIGINT/SIGUSR1 (or
 * take train_ckpt_poll's agreement, when it preceded) and write a
 * checkpoint when one did or when the step is a multiple of
 * --checkpoint-every. *stop is the signal number when the run must stop
 * (the checkpoint is written, or with --checkpoint-failure continue was
 * tried), else 0. Without --checkpoint-dir: nothing.
 * Errors: a failed write (on every rank; with --checkpoint-failure
 * continue a failed write of the file is a warning instead), ERASE_ERR_COMM
 * (replicas differ), ERASE_ERR_STATE (every rank: this run's lock was taken
 * over or removed; nothing written).
 */
erase_status_t train_ckpt_after_step(train_ckpt_t *ck, const train_ckpt_pos_t *pos, int *stop);

/* Whether train_ckpt_after_step writes a periodic checkpoint after `step`
 * (--checkpoint-dir and --checkpoint-every dividing it). NULL ck: 0. */
int train_ckpt_due(const train_ckpt_t *ck, int64_t step);

/*
 * Before the host enqueues a step while step `step` (numbered from 1, as
 * after_step's) is still in flight (collective over the world, like
 * after_step, and called by every rank at the same steps): agree now on
 * whether any rank got SIGTERM/SIGINT/SIGUSR1; after_step(step) then takes this
 * agreement instead of making its own (one agreement per step). *stop:
 * 1 when one did (the caller then enqueues nothing more, and after_step
 * writes the checkpoint and stops), else 0. Runs the test hook
 * ERASE_DEBUG_KILL_AT_STEP for `step` here, before the agreement, so a
 * hooked SIGUSR1 still stops after that step. Without --checkpoint-dir:
 * the hook only. Errors: ERASE_ERR_COMM.
 */
erase_status_t train_ckpt_poll(train_ckpt_t *ck, int64_t step, int *stop);

/* At the end of training (collective): write the final checkpoint unless
 * the last one is of this very position. No-op without --checkpoint-dir. */
erase_status_t train_ckpt_final(train_ckpt_t *ck, const train_ckpt_pos_t *pos);

/* Write the checkpoint of `pos` even when the last one is of this very
 * position (collective, as train_ckpt_final): the test hook
 * ERASE_DEBUG_CKPT_AFTER_RESUME. No-op without --checkpoint-dir. */
erase_status_t train_ckpt_rewrite(train_ckpt_t *ck, const train_ckpt_pos_t *pos);

/* ERASE_DEBUG_SAMPLE_LOG: record the samples of a training batch. */
void train_ckpt_log_samples(train_ckpt_t *ck, const erase_reader_batch_t *b);

/* Checkpoint lines also go to this metrics file (rank 0; NULL: none). */
void train_ckpt_set_metrics(train_ckpt_t *ck, FILE *metrics);

/* Checkpoints written by this run, their total seconds (as training saw
 * them: hashing, gathering, writing) and bytes; the last one's path ("" if
 * none). */
void train_ckpt_stats(const train_ckpt_t *ck, int *count, double *seconds, double *bytes);
const char *train_ckpt_last_path(const train_ckpt_t *ck);

/* The step of the last checkpoint this run wrote or resumed from (-1:
 * none; NULL ck: -1). */
int64_t train_ckpt_last_step(const train_ckpt_t *ck);

/* Checkpoints of this run that failed (--checkpoint-failure continue), 0
 * for NULL ck; whether the one of `step` (the run's end) is among them:
 * then the end state is not saved. */
int train_ckpt_failures(const train_ckpt_t *ck);
int train_ckpt_unsaved(const train_ckpt_t *ck, int64_t step);

/* Name of a signal number ("SIGTERM", "SIGINT", "SIGUSR1"). */
const char *train_ckpt_signal_name(int sig);

/* The SIGTERM, SIGINT or SIGUSR1 caught (train_ckpt_catch_signals) and
 * not yet acted on, else 0: what ends a wait before the first step. */
int train_ckpt_pending_signal(void);

/* quiet 1: a signal from now says nothing on its own (the wait for the
 * checkpoint directory's lock says why it stops); 0: it says it again. */
void train_ckpt_quiet_signals(int quiet);

#endif

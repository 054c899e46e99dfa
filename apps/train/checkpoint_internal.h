/*
 * What apps/train/checkpoint.c (the tensors, agreeing, writing) and
 * checkpoint_resume.c (picking and loading a checkpoint) share: the
 * checkpointer's state and the helpers both halves call. Not for other
 * files: apps/train/checkpoint.h is the interface.
 */
#ifndef ERASE_APPS_TRAIN_CHECKPOINT_INTERNAL_H
#define ERASE_APPS_TRAIN_CHECKPOINT_INTERNAL_H

#include "apps/train/checkpoint.h"
#include "apps/train/checkpoint_lock.h"

#include "io/checkpoint.h"

#include <signal.h>
#include <stdio.h>

#define MESSAGE_MAX 2048 /* an error message passed between ranks, bytes */

struct train_ckpt {
    train_ckpt_env_t e;
    int enabled;                      /* --checkpoint-dir given */
    int failed_alike;                 /* share_status returned a failure: every rank has it (2: a usage
                                       * error, the directory in use by another run) */
    train_ckpt_lock_t *lock;          /* rank 0: --checkpoint-dir's lock, held from restore to destroy */
    erase_ckpt_tensor_t *t[2];        /* params, optimizer slots: host data */
    float **dev[2];                   /* their device memory when it is not host memory, else NULL */
    int *block[2];                    /* their blocks */
    int n[2];
    erase_ckpt_tensor_t *mine[2];     /* copies of those of this rank's stage (all without a pipeline) */
    int *mine_at[2];                  /* their indices in t */
    int nmine[2];
    char schedule[512], layout[2048];
    /* signals */
    int handlers;
    struct sigaction old_handlers[3]; /* SIGTERM, SIGINT, SIGUSR1's before train_ckpt_create */
    /* the last checkpoint written */
    int64_t last_step, last_epoch, last_samples;
    char last_path[ERASE_CKPT_PATH_MAX];
    int count;
    double seconds, bytes;
    int64_t last_bytes;               /* the last checkpoint's bytes (0: none yet) */
    int failures;                     /* checkpoints not written (--checkpoint-failure continue) */
    int64_t failed_step;              /* the step of the last of them */
    FILE *metrics;
    /* test hooks */
    int64_t kill_step;
    int kill_rank, kill_sig;
    /* train_ckpt_poll's agreement on a signal, for the after_step it precedes */
    int polled, signalled;
    erase_status_t agreed;            /* the last parts' agreement (parts_written) */
    int sharded;                      /* tensors of this rank's stage held in parts by the dp ranks
                                       * (their t and mine entries have `sharding`, owned by t) */
    char temp[ERASE_CKPT_PATH_MAX];   /* the checkpoint being written: its temporary file */
    FILE *sample_log;
};

/* Rank 0: --init-from FILE.safetensors (apps/train/checkpoint_import.c):
 * this run's parameters (mine[0]) from the file, in its format's names and
 * layouts (apps/export_names.h; the file's metadata `erase_format`, else
 * --init-format). Data-parallel runs with replicated tables only.
 * Errors: ERASE_ERR_INVALID (one line naming the file and the tensor: a
 * name missing or not of this model, a dtype other than F32, another
 * shape), those of erase_st_open (a damaged or truncated file). */
erase_status_t train_ckpt_import(train_ckpt_t *ck, const char *path);

/* on_signal (checkpoint_signals.c) for SIGTERM, SIGINT and SIGUSR1; the
 * handlers replaced into old[3] when not NULL. Errors: ERASE_ERR_IO. */
erase_status_t train_ckpt_signals_install(struct sigaction *old);

/* Put back the handlers train_ckpt_signals_install replaced. */
void train_ckpt_signals_restore(const struct sigaction old[3]);

/* Rank 0 (nothing on the others): what the handler says at once when a
 * signal comes names what --resume auto takes now: the last checkpoint
 * this run wrote or resumed from, else the newest in --checkpoint-dir;
 * with `writing` >= 0, the checkpoint of that step first, if its write
 * (under way) ends. */
void train_ckpt_set_notice(const train_ckpt_t *ck, int64_t writing);

/* Copy group g's tensors (0: parameters, 1: optimizer slots) of this
 * rank's stage from device memory to their host copies (to_host) or back,
 * blocking; nothing where the device memory is host memory. The caller has
 * synchronized the streams of the step: none uses the tensors. Errors:
 * those of erase_memcpy_sync. */
erase_status_t train_ckpt_stage(train_ckpt_t *ck, int g, int to_host);

/* ", with its stage file(s)" after a checkpoint erase_ckpt_rename moved
 * with `stages` stage files; "" for none. */
const char *train_ckpt_stage_files(int stages);

/* Collective over the world: the status of the lowest rank that failed
 * (with its message) becomes every rank's, "<what> (rank R): <message>"
 * on the others, and ck->failed_alike is set; ERASE_OK when none failed.
 * Errors of the collectives themselves are returned as they are. */
erase_status_t train_ckpt_share_status(train_ckpt_t *ck, erase_status_t st, const char *what);

/* Collective over the dp group: which of this rank's stage's tensors are
 * held in parts (sharded tables, erase_param_t row0/held: any placement),
 * their `sharding` text, and ck->sharded. Errors: ERASE_ERR_INVALID naming
 * the tensor when the ranks' rows do not cover its rows exactly once,
 * ERASE_ERR_NOMEM, and the all-gather's. */
erase_status_t train_ckpt_find_sharding(train_ckpt_t *ck);

#endif

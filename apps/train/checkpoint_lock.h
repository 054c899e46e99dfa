/*
 * The lock of a checkpoint directory: a run owns its --checkpoint-dir for
 * its whole life, so that a second run started in the same directory is
 * refused at once instead of renaming, replacing and deleting the first
 * one's checkpoints.
 *
 * The lock is the file DIR/.lock, created whole and atomically: the owner's
 * record is written to a file of its own (DIR/.lock.<host>.<pid>) and then
 * hard-linked to DIR/.lock; link(2) fails with EEXIST when the lock exists.
 * Why this primitive: link(2) (like open(O_CREAT | O_EXCL)) is atomic on
 * local file systems, on NFS v3 and later and on Lustre, where checkpoints
 * are kept; fcntl/flock locks need lockd (NFS v3) or a mount option
 * (Lustre `-o flock`) that sites set differently, and are silently local
 * or refused where they are missing. A hard link also means nobody ever
 * reads a half-written record; and an NFS link whose reply was lost is
 * recognised by the record's link count (2). The record, one "key value"
 * a line:
 *     erase-train checkpoint directory lock
 *     host <hostname>
 *     pid <pid>
 *     pid_start <its start time: field 22 of /proc/<pid>/stat, clock ticks>
 *     slurm_job_id <SLURM_JOB_ID, or ->
 *     slurm_step_id <SLURM_STEP_ID, or ->
 *     started <UTC time, YYYY-MM-DDTHH:MM:SSZ>
 * While the run lives, a thread refreshes the lock's mtime every 10 s (the
 * heartbeat), so that another host can judge whether the owner is gone.
 *
 * A lock that exists is
 *   - stale, and taken over with a note, when its owner ran on this host and
 *     its pid is not running (a stopped process runs; a pid whose start
 *     time is not pid_start is another process: the pid was reused), or,
 *     for an owner on another host, its heartbeat is older than
 *     ERASE_CKPT_LOCK_STALE_S seconds (default 300: generous, for clocks of
 *     hosts that differ); an empty record or one that is not a record is
 *     judged by its mtime alone;
 *   - this Slurm job's own, left by the allocation before a requeue (same
 *     SLURM_JOB_ID, another process): waited for, at most
 *     ERASE_CKPT_LOCK_WAIT_S seconds (default 120), until its owner ends
 *     (pid gone on this host, the lock removed, or, from another host, its
 *     heartbeat still for 30 s), then taken over; still held after that,
 *     refused;
 *   - else another live run's: refused, naming the owner.
 * Taking over renames the stale lock aside, checks that what it moved is
 * the record it judged (else puts it back and starts again), and links its
 * own.
 */
#ifndef ERASE_APPS_TRAIN_CHECKPOINT_LOCK_H
#define ERASE_APPS_TRAIN_CHECKPOINT_LOCK_H

#include "lib/core/status.h"

typedef struct train_ckpt_lock train_ckpt_lock_t;

/*
 * Take DIR/.lock for this process (one rank of the run: rank 0), waiting
 * as above for a requeued Slurm job's previous allocation, and start the
 * heartbeat thread. Prints a "note   ..." line on stdout when it takes a
 * stale lock over or waits. interrupted (may be NULL): polled while it
 * waits, the signal number that ends the wait (ERASE_ERR_IO, "... SIGTERM
 * while waiting ...: stopped without taking the lock"), else 0. Errors: ERASE_ERR_STATE when another run holds
 * the directory ("--checkpoint-dir DIR: in use by another run (erase-train
 * pid P on host H, ...)"), ERASE_ERR_IO (the directory cannot be written,
 * the thread cannot start), ERASE_ERR_NOMEM.
 */
erase_status_t train_ckpt_lock_take(const char *dir, int (*interrupted)(void), train_ckpt_lock_t **out);

/*
 * Whether DIR/.lock still names this process: ERASE_OK, else
 * ERASE_ERR_STATE ("--checkpoint-dir DIR: this run's lock was taken over
 * by erase-train pid P on host H, ...: stopping without writing; ..." or
 * "... this run's lock DIR/.lock was removed: ..."). The run calls it
 * before it writes, renames or removes anything in DIR, and stops when
 * it fails.
 */
erase_status_t train_ckpt_lock_check(const train_ckpt_lock_t *lock, const char *dir);

/* Stop the heartbeat and remove DIR/.lock if it still names this process;
 * free. NULL is allowed. */
void train_ckpt_lock_release(train_ckpt_lock_t *lock);

#endif

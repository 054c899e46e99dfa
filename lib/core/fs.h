/*
 * Small file-system helpers shared by the writers that must leave nothing
 * half-written looking valid (shards, checkpoints, NCCL id files) and by
 * the programs that clean up scratch folders.
 */
#ifndef ERASE_CORE_FS_H
#define ERASE_CORE_FS_H

#include <sys/types.h>

#include "lib/core/status.h"

/*
 * Create directory `dir` (one level, mode 0777 less the umask) unless it
 * exists; *made = 1 when this call created it (so that a writer that fails
 * can remove it again). Errors, ERASE_ERR_IO naming it (the messages of
 * every erase-convert output, a dataset's directory or a file's):
 * "DIR: cannot create the directory: <reason>", "DIR: not a directory".
 */
erase_status_t erase_dir_make(const char *dir, int *made);

/* fsync a file (directory = 0) or a directory (1) by path. Returns 0, or
 * -1 with errno set. */
int erase_fsync_path(const char *path, int directory);

/* fsync the directory holding `path` (so that a rename into it is
 * durable). Returns 0, or -1 with errno set. */
int erase_fsync_parent(const char *path);

/* Remove `dir` and everything below it (symbolic links are removed, not
 * followed); best effort: what cannot be removed stays. */
void erase_remove_tree(const char *dir);

/* What a file of `mode` (struct stat's st_mode) is when it is not a
 * regular file: "a directory", "a FIFO", "a character device", "a block
 * device", "a socket" or "not a regular file"; NULL for a regular file. */
const char *erase_mode_not_regular(mode_t mode);

/* The same of the file at `path`; NULL also when stat() fails. */
const char *erase_path_not_regular(const char *path);

/*
 * The one check before a file is opened to be read (HDF5 shards and
 * checkpoints, IDX, token and model files): `path`, if it exists, must be
 * a regular file. Opening a FIFO with no writer blocks in open() (and
 * SIGTERM does not end the wait), a device reads forever or nothing, a
 * directory is no file. Returns ERASE_OK for a regular file, and when
 * stat() fails (the open that follows names that error: a missing file is
 * its caller's message); else ERASE_ERR_IO, one line naming the path
 * and what it is: "D/ckpt-4.h5 is a FIFO, expected a regular file".
 */
erase_status_t erase_file_check_regular(const char *path);

/*
 * The whole file at `path` (a regular file: erase_file_check_regular
 * first) into *data (malloc'ed, n bytes plus a NUL after them, so a text
 * file is a C string; the caller frees it) and *n. Errors, naming the path:
 * ERASE_ERR_IO "PATH: cannot open: <reason>", "PATH: read error" or that
 * check's line; ERASE_ERR_NOMEM "PATH: out of memory" (also for a file
 * larger than memory can address). On an error *data is untouched.
 */
erase_status_t erase_file_read_all(const char *path, char **data, size_t *n);

#endif

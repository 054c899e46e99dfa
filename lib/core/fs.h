/*
 * Small file-system helpers shared by the writers that must leave nothing
 * half-written looking valid (shards, checkpoints, NCCL id files) and by
 * the programs that clean up scratch folders.
 */
#ifndef ERASE_CORE_FS_H
#define ERASE_CORE_FS_H

/* fsync a file (directory = 0) or a directory (1) by path. Returns 0, or
 * -1 with errno set. */
int erase_fsync_path(const char *path, int directory);

/* fsync the directory holding `path` (so that a rename into it is
 * durable). Returns 0, or -1 with errno set. */
int erase_fsync_parent(const char *path);

/* Remove `dir` and everything below it (symbolic links are removed, not
 * followed); best effort: what cannot be removed stays. */
void erase_remove_tree(const char *dir);

#endif

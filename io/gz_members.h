/*
 * Naming the damage in a gzip file: a file may hold several gzip members
 * one after the other (RFC 1952 section 2.2; `cat a.gz b.gz`, pigz, the
 * Criteo Terabyte days as published). zlib's gzread() reads through all
 * of them and reports only what went wrong, not where; this inflates the
 * members again from the start to find which one.
 */
#ifndef ERASE_IO_GZ_MEMBERS_H
#define ERASE_IO_GZ_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Inflate `path`'s members in order until the first that fails. Returns 1
 * with *member (0 for the first), *offset (the byte of the file where that
 * member starts) and `why` (zlib's reason, or "unexpected end of file" for
 * a member cut short); 0 if every member inflates whole (or the file is
 * not gzip); -1 if the file cannot be read (errno).
 */
int erase_gz_locate_damage(const char *path, int64_t *member, int64_t *offset, char *why, size_t why_size);

#endif

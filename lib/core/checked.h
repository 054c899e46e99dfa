/*
 * Overflow-checked integer arithmetic for sizes, counts and positions
 * (element counts, byte counts, sample indices). Each returns 1 and sets
 * *out when the exact result fits the type, 0 otherwise (*out then holds
 * the wrapped value: do not use it). Callers turn 0 into an error that
 * says what is too large.
 */
#ifndef ERASE_CORE_CHECKED_H
#define ERASE_CORE_CHECKED_H

#include <stddef.h>
#include <stdint.h>

/* a * b as int64. */
static inline int erase_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* a + b as int64. */
static inline int erase_add_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* a + b as int (widths and other counts the code holds as int). */
static inline int erase_add_int(int a, int b, int *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* elem * a * b bytes as size_t (a, b >= 0: counts of elements; use b = 1
 * for a vector). */
static inline int erase_bytes(size_t elem, int64_t a, int64_t b, size_t *out)
{
    int64_t n;
    return a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, &n) &&
           !__builtin_mul_overflow((size_t)n, elem, out);
}

#endif

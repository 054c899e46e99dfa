/*
 * For tests (include after <cmocka.h>): open the CPU device in a cmocka
 * group setup. Kernels called directly need it too: the first CPU device
 * loads the BLAS.
 */
#ifndef ERASE_TESTS_CPU_DEVICE_H
#define ERASE_TESTS_CPU_DEVICE_H

#include <stdio.h>
#include <string.h>

#include "lib/device/device.h"

/* Open the CPU device into *dev with `blas_threads` BLAS threads and print
 * its description when `describe`; 0, or -1 with the reason on stderr. */
static inline int erase_test_cpu_open(int blas_threads, int describe, erase_device_t **dev)
{
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = blas_threads;
    if (erase_device_open(&o, dev) != ERASE_OK) {
        fprintf(stderr, "cannot open the CPU device: %s\n", erase_error_message());
        return -1;
    }
    if (describe) {
        char text[512];
        erase_device_describe(*dev, text, sizeof text);
        print_message("device: %s\n", text);
    }
    return 0;
}

/* CPU device memory of the cases of a test, freed together after each. */
#define ERASE_TEST_ARENA_MAX 256
typedef struct {
    erase_device_t *dev;
    void *blocks[ERASE_TEST_ARENA_MAX];
    int n;
} erase_test_arena_t;

/* `bytes` of a's device filled with byte `fill` (so that an unwritten
 * output shows: CPU memory, written by the host); fails the case when the
 * arena is full or the allocation fails. */
static inline void *erase_test_arena_alloc(erase_test_arena_t *a, size_t bytes, int fill)
{
    assert_true(a->n < ERASE_TEST_ARENA_MAX);
    void *p;
    assert_int_equal(erase_malloc(a->dev, bytes, &p), ERASE_OK);
    memset(p, fill, bytes);
    a->blocks[a->n++] = p;
    return p;
}

/* Free every block of the arena. */
static inline void erase_test_arena_free(erase_test_arena_t *a)
{
    while (a->n > 0)
        erase_free(a->dev, a->blocks[--a->n]);
}

/* erase_test_cpu_open, then a stream into *stream; the arena (may be NULL)
 * allocates on the device. 0, or -1 with the reason on stderr. */
static inline int erase_test_cpu_open_stream(int blas_threads, int describe, erase_device_t **dev,
                                             erase_stream_t **stream, erase_test_arena_t *arena)
{
    if (erase_test_cpu_open(blas_threads, describe, dev) != 0)
        return -1;
    if (arena)
        arena->dev = *dev;
    if (erase_stream_create(*dev, stream) != ERASE_OK) {
        fprintf(stderr, "cannot create a stream: %s\n", erase_error_message());
        return -1;
    }
    return 0;
}

/* Undo erase_test_cpu_open_stream (the arena's blocks freed first). */
static inline void erase_test_cpu_close_stream(erase_device_t *dev, erase_stream_t *stream,
                                               erase_test_arena_t *arena)
{
    if (arena)
        erase_test_arena_free(arena);
    erase_stream_destroy(stream);
    erase_device_close(dev);
}

/* A cmocka group's fixture on the CPU device of one BLAS thread: the
 * group's setup and teardown (erase_test_cpu_open_stream and
 * _close_stream of the file's `dev`, `stream` and `arena`), and
 * free_test, a case's teardown freeing the arena's blocks. */
#define ERASE_TEST_CPU_STREAM_FIXTURE(dev, stream, arena)                                       \
    static int setup(void **state)                                                                \
    {                                                                                             \
        (void)state;                                                                              \
        return erase_test_cpu_open_stream(1, 0, &(dev), &(stream), &(arena));                     \
    }                                                                                             \
    static int teardown(void **state)                                                             \
    {                                                                                             \
        (void)state;                                                                              \
        erase_test_cpu_close_stream((dev), (stream), &(arena));                                   \
        return 0;                                                                                 \
    }                                                                                             \
    static int free_test(void **state)                                                            \
    {                                                                                             \
        (void)state;                                                                              \
        erase_test_arena_free(&(arena));                                                          \
        return 0;                                                                                 \
    }

#endif

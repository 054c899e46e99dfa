/*
 * Transparent huge pages for the CPU backend's large buffers
 * (lib/device/cpu/cpu_hugepages.c): the reading of /proc/self/maps, the
 * advice given to mappings that appeared between two reads (and to those
 * only), OpenBLAS's packing buffers advised after the GEMM that maps them,
 * and erase_malloc's large allocations. Read back from /proc/self/smaps:
 * "hg" in VmFlags is MADV_HUGEPAGE. Cases that need the kernel's THP mode
 * "madvise" (the only mode in which erase advises) skip in other modes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cmocka.h>

#include "lib/device/cpu/cpu_internal.h"
#include "lib/device/device.h"
#include "tests/cpu_device.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)
#define MIB ((size_t)1 << 20)
enum { MAPS = 4096 };

/* The smaps entry holding `addr`: its range, "hg" in its VmFlags, its
 * AnonHugePages (kB). 0 when found. */
static int smaps_of(uintptr_t addr, uintptr_t *start, uintptr_t *end, int *hg, long *huge_kb)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            if (in)
                break;
            in = s <= addr && addr < e;
            if (in) {
                *start = s;
                *end = e;
                *hg = 0;
                *huge_kb = 0;
                found = 0;
            }
        } else if (in && !strncmp(line, "AnonHugePages:", 14)) {
            *huge_kb = atol(line + 14);
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            *hg = strstr(line, " hg") != NULL;
        }
    }
    fclose(f);
    return found;
}

static int listed(const erase_cpu_map_t *m, int n, uintptr_t a, uintptr_t b)
{
    for (int i = 0; i < n; i++)
        if (m[i].start <= a && b <= m[i].end)
            return 1;
    return 0;
}

/* Two rw mappings, 1 MiB and 8 MiB, kept apart by PROT_NONE (so the
 * kernel cannot merge them): both listed after, neither before; only the
 * 8 MiB one advised; gone from the list once unmapped. */
static void test_new_mappings_advised(void **state)
{
    (void)state;
    if (erase_cpu_thp_mode() == ERASE_THP_UNKNOWN)
        skip(); /* no /sys/kernel/mm/transparent_hugepage: a kernel without THP */
    static erase_cpu_map_t before[MAPS], after[MAPS], gone[MAPS];
    int nb = erase_cpu_anon_maps(before, MAPS);
    assert_true(nb > 0 && nb <= MAPS);
    char *area = mmap(NULL, 12 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(area != MAP_FAILED);
    char *small = area, *big = area + 3 * MIB;
    assert_int_equal(mprotect(small, MIB, PROT_READ | PROT_WRITE), 0);
    assert_int_equal(mprotect(big, 8 * MIB, PROT_READ | PROT_WRITE), 0);
    memset(small, 1, MIB);
    memset(big, 1, 8 * MIB);
    int na = erase_cpu_anon_maps(after, MAPS);
    assert_true(na > 0 && na <= MAPS);
    assert_true(listed(after, na, (uintptr_t)small, (uintptr_t)small + MIB));
    assert_true(listed(after, na, (uintptr_t)big, (uintptr_t)big + 8 * MIB));
    assert_false(listed(before, nb, (uintptr_t)big, (uintptr_t)big + 8 * MIB));
    assert_false(listed(after, na, (uintptr_t)area + MIB, (uintptr_t)area + 2 * MIB)); /* PROT_NONE */
    /* at least the 8 MiB (a sanitizer's runtime may map shadow memory of
     * its own meanwhile, which is new too) */
    assert_true(erase_cpu_thp_advise_new(before, nb, after, na) >= 8 * MIB);
    uintptr_t s, e;
    int hg;
    long kb;
    assert_int_equal(smaps_of((uintptr_t)big, &s, &e, &hg, &kb), 0);
    assert_int_equal(s, (uintptr_t)big);
    assert_int_equal(e, (uintptr_t)big + 8 * MIB);
    assert_true(hg);
    print_message("an 8 MiB mapping written in 4 KiB pages, then advised: %ld kB in huge pages\n", kb);
    assert_int_equal(smaps_of((uintptr_t)small, &s, &e, &hg, &kb), 0);
    assert_false(hg); /* under 2 MiB */
    /* advising again finds nothing new */
    assert_int_equal(erase_cpu_thp_advise_new(after, na, after, na), 0);
    assert_int_equal(munmap(area, 12 * MIB), 0);
    int ng = erase_cpu_anon_maps(gone, MAPS);
    assert_false(listed(gone, ng, (uintptr_t)big, (uintptr_t)big + 8 * MIB));
}

/* More mappings than the array holds: the count is still right. */
static void test_maps_count_beyond_max(void **state)
{
    (void)state;
    static erase_cpu_map_t all[MAPS];
    int n = erase_cpu_anon_maps(all, MAPS);
    assert_true(n > 1);
    erase_cpu_map_t one[1];
    assert_int_equal(erase_cpu_anon_maps(one, 1), n);
    assert_int_equal(erase_cpu_anon_maps(NULL, 0), n);
}

/* OpenBLAS keeps one pool of packing buffers for the process: a level-3
 * call takes a free one and maps a new one only when none is free. The
 * device's open (its self-check GEMM) and OpenBLAS's own threads have
 * mapped some already, and which of them are free when this case runs
 * depends on timing (a ThreadSanitizer build found both free once in 15
 * runs, and two threads whose GEMMs did not overlap mapped nothing). So
 * GEMM_THREADS threads, more than the buffers there can be, run GEMMs
 * until a new mapping shows advised or each has run the WATCH_GEMMS that
 * erase watches (cpu_blas.c); with 4 threads on 2 cores some are preempted
 * inside a GEMM, holding their buffers, while the others need new ones. */
enum { GEMM_THREADS = 4, WATCH_GEMMS = 64, GEMM_N = 256 };
static pthread_barrier_t all_gemm_threads;
static atomic_int gemm_threads_done, gemms_stop;

static void *gemm_thread(void *arg)
{
    (void)arg;
    int n = GEMM_N;
    float *a = calloc((size_t)n * n, sizeof(float)), *b = calloc((size_t)n * n, sizeof(float)),
          *c = calloc((size_t)n * n, sizeof(float));
    pthread_barrier_wait(&all_gemm_threads); /* every stack mapped before any GEMM runs */
    for (int i = 0; a && b && c && i < WATCH_GEMMS && !atomic_load(&gemms_stop); i++)
        erase_cpu_gemm_f32(0, 1, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    free(a);
    free(b);
    free(c);
    atomic_fetch_add(&gemm_threads_done, 1);
    return NULL;
}

/* The mappings of `after` (na) of 2 MiB or more that `before` (nb) did not
 * hold and that carry the advice: their count, and their huge pages in
 * *huge_kb. */
static int advised_since(const erase_cpu_map_t *before, int nb, const erase_cpu_map_t *after, int na, long *huge_kb)
{
    int advised = 0;
    *huge_kb = 0;
    for (int i = 0; i < na; i++) {
        uintptr_t s, e;
        int hg;
        long kb;
        if (after[i].end - after[i].start < ERASE_HUGE_PAGE || listed(before, nb, after[i].start, after[i].end) ||
            smaps_of(after[i].start, &s, &e, &hg, &kb) != 0)
            continue;
        advised += hg;
        *huge_kb += hg ? kb : 0;
    }
    return advised;
}

/* OpenBLAS's packing buffers, mapped by the GEMMs of threads that run at
 * once, carry the advice. */
static void test_gemm_buffers_advised(void **state)
{
    (void)state;
    if (!erase_cpu_thp_advise())
        skip(); /* the kernel's mode is not madvise, or ERASE_HUGEPAGES=0 */
    static erase_cpu_map_t before[MAPS], after[MAPS];
    int nb = erase_cpu_anon_maps(before, MAPS);
    assert_true(nb > 0 && nb <= MAPS);
    pthread_t t[GEMM_THREADS];
    atomic_store(&gemm_threads_done, 0);
    atomic_store(&gemms_stop, 0);
    assert_int_equal(pthread_barrier_init(&all_gemm_threads, NULL, GEMM_THREADS), 0);
    for (int i = 0; i < GEMM_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, gemm_thread, NULL), 0);
    int advised = 0, na = 0;
    long huge_kb = 0;
    while (!advised && atomic_load(&gemm_threads_done) < GEMM_THREADS) {
        nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
        na = erase_cpu_anon_maps(after, MAPS);
        assert_true(na > 0 && na <= MAPS);
        advised = advised_since(before, nb, after, na, &huge_kb);
    }
    atomic_store(&gemms_stop, 1);
    for (int i = 0; i < GEMM_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&all_gemm_threads);
    na = erase_cpu_anon_maps(after, MAPS);
    assert_true(na > 0 && na <= MAPS);
    advised = advised_since(before, nb, after, na, &huge_kb);
    print_message("OpenBLAS buffers advised: %d mapping%s, %ld kB in huge pages\n", advised, advised == 1 ? "" : "s",
                  huge_kb);
    assert_true(advised >= 1);
}

/* erase_malloc of 4 MiB or more: 2 MiB aligned and advised; smaller ones
 * 64-byte aligned. */
static void test_large_allocations_advised(void **state)
{
    erase_device_t *dev = *state;
    if (!erase_cpu_thp_advise())
        skip();
    void *big = NULL, *small = NULL;
    MUST(erase_malloc(dev, 8 * MIB + 100, &big));
    MUST(erase_malloc(dev, MIB, &small));
    assert_int_equal((uintptr_t)big % ERASE_HUGE_PAGE, 0);
    assert_int_equal((uintptr_t)small % 64, 0);
    memset(big, 1, 8 * MIB + 100);
    uintptr_t s, e;
    int hg;
    long kb;
    assert_int_equal(smaps_of((uintptr_t)big + MIB, &s, &e, &hg, &kb), 0);
    assert_true(hg);
    print_message("an 8 MiB erase_malloc: %ld kB in huge pages\n", kb);
    erase_free(dev, big);
    erase_free(dev, small);
}

static int setup(void **state)
{
    erase_device_t *dev = NULL;
    if (erase_test_cpu_open(1, 1, &dev) != 0)
        return -1;
    *state = dev;
    return 0;
}

static int teardown(void **state)
{
    erase_device_close(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_mappings_advised),
        cmocka_unit_test(test_maps_count_beyond_max),
        cmocka_unit_test(test_gemm_buffers_advised),
        cmocka_unit_test(test_large_allocations_advised),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * Transparent huge pages for the CPU backend's large buffers.
 *
 * Why: with 4 KiB pages a GEMM's working set spans hundreds of pages, and
 * under a hypervisor every TLB miss is a two-dimensional page walk. On a
 * 2-core KVM guest (AMD EPYC, Zen 1) whose kernel has THP in "madvise"
 * mode, a pipeline stage ran OpenBLAS's SGEMM at 9 GFLOP/s against 24-36
 * on the other rank, in runs chosen by chance; advising OpenBLAS's packing
 * buffers MADV_HUGEPAGE made every run 2.4x faster (bench/RESULTS.md,
 * "Huge pages for BLAS buffers"). Kernels in "always" mode give every
 * large anonymous mapping huge pages anyway; in "madvise" mode (Ubuntu's
 * and this VM's default) only advised ones get them, and OpenBLAS does
 * not advise its own.
 *
 * What is advised:
 *   - OpenBLAS's buffers: OpenBLAS maps a packing buffer (tens to
 *     hundreds of MiB) into its process-wide pool when a level-3 call
 *     needs one and none is free, with mmap and no advice. erase cannot
 *     see the address, so a thread's GEMMs run between two reads of
 *     /proc/self/maps until one maps a buffer (at most 64), and the
 *     private anonymous writable mappings of 2 MiB or more that appeared
 *     meanwhile are advised and, since that GEMM has written them in
 *     small pages, collapsed into huge pages (MADV_COLLAPSE,
 *     Linux >= 6.1) (cpu_blas.c);
 *   - the device's own allocations of 4 MiB or more (erase_malloc on the
 *     CPU: weights, activations, optimizer state): 2 MiB aligned and
 *     advised (cpu_device.c), as PyTorch's CPU allocator does under
 *     THP_MEM_ALLOC_ENABLE.
 * Only the kernel's mode "madvise" needs it; ERASE_HUGEPAGES=0 turns it
 * off (then nothing is advised).
 */
#define _GNU_SOURCE
#include "lib/device/cpu/cpu_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef MADV_COLLAPSE
#define MADV_COLLAPSE_ MADV_COLLAPSE
#else
#define MADV_COLLAPSE_ 25 /* Linux's value (uapi/asm-generic/mman-common.h) */
#endif

static struct {
    pthread_once_t once;
    int advise; /* 1: the kernel's THP mode is madvise and ERASE_HUGEPAGES is not 0 */
    erase_thp_mode_t mode;
} thp = { .once = PTHREAD_ONCE_INIT };

static void read_mode(void)
{
    thp.mode = ERASE_THP_UNKNOWN;
    /* "always [madvise] never": the bracketed word is the mode */
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = "";
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = 0;
        fclose(f);
    }
    if (strstr(line, "[always]"))
        thp.mode = ERASE_THP_ALWAYS;
    else if (strstr(line, "[madvise]"))
        thp.mode = ERASE_THP_MADVISE;
    else if (strstr(line, "[never]"))
        thp.mode = ERASE_THP_NEVER;
    const char *env = getenv("ERASE_HUGEPAGES");
    int off = env && !strcmp(env, "0");
    thp.advise = thp.mode == ERASE_THP_MADVISE && !off;
}

erase_thp_mode_t erase_cpu_thp_mode(void)
{
    pthread_once(&thp.once, read_mode);
    return thp.mode;
}

int erase_cpu_thp_advise(void)
{
    pthread_once(&thp.once, read_mode);
    return thp.advise;
}

const char *erase_cpu_thp_describe(void)
{
    pthread_once(&thp.once, read_mode);
    switch (thp.mode) {
    case ERASE_THP_ALWAYS:
        return "huge pages: always (the kernel's)";
    case ERASE_THP_MADVISE:
        return thp.advise ? "huge pages: advised for BLAS buffers and allocations >= 4 MiB"
                          : "huge pages: off (ERASE_HUGEPAGES=0)";
    case ERASE_THP_NEVER:
        return "huge pages: never (the kernel's)";
    default:
        return "huge pages: unknown";
    }
}

void erase_cpu_thp_advise_range(void *ptr, size_t bytes)
{
    if (!erase_cpu_thp_advise() || bytes < ERASE_HUGE_PAGE)
        return;
    /* the whole 4 KiB pages inside [ptr, ptr + bytes); only the 2 MiB
     * extents fully inside get huge pages */
    uintptr_t a = ((uintptr_t)ptr + 4095) & ~(uintptr_t)4095, e = ((uintptr_t)ptr + bytes) & ~(uintptr_t)4095;
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* advice only: an error changes nothing */
}

int erase_cpu_anon_maps(erase_cpu_map_t *maps, int max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end, off;
        char perms[8];
        unsigned dev_major, dev_minor;
        unsigned long inode;
        int name_at = 0;
        /* "start-end perms offset dev inode [name]": anonymous has inode 0
         * and no name (named ones: [heap], [stack], [vvar], files) */
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end, perms, &off, &dev_major, &dev_minor, &inode,
                   &name_at) < 7)
            continue;
        int named = name_at > 0 && line[name_at] && line[name_at] != '\n';
        if (inode != 0 || named || perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
            continue;
        if (n < max) {
            maps[n].start = (uintptr_t)start;
            maps[n].end = (uintptr_t)end;
        }
        n++;
    }
    fclose(f);
    return n;
}

size_t erase_cpu_thp_advise_new(const erase_cpu_map_t *before, int nbefore, const erase_cpu_map_t *after, int nafter)
{
    size_t advised = 0;
    for (int i = 0; i < nafter; i++) {
        uintptr_t s = after[i].start, e = after[i].end;
        if (e - s < ERASE_HUGE_PAGE)
            continue;
        int old = 0;
        for (int j = 0; j < nbefore && !old; j++)
            old = before[j].start <= s && e <= before[j].end;
        if (old)
            continue;
        /* the GEMM that mapped it has written it in 4 KiB pages already:
         * collapse them (Linux >= 6.1; earlier kernels' khugepaged does it
         * in the background, slowly) */
        if (madvise((void *)s, e - s, MADV_HUGEPAGE) == 0) {
            advised += e - s;
            (void)madvise((void *)s, e - s, MADV_COLLAPSE_);
        }
    }
    return advised;
}

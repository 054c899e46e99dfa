/*
 * Failure modes of a job, run by the drivers tests/comm/test-{kill,watchdog,
 * fatal,mismatch}.sh, which judge from mpirun's exit status, its duration
 * and what the ranks printed. Every mode is a job that must NOT end well:
 * a rank that gets to the end writes $ERASE_TEST_DIR/rank<r>.done and
 * exits 0, which the drivers count as a failure.
 *
 *   loop      all-reduces for up to 60 s; after 5 of them each rank writes
 *             $ERASE_TEST_DIR/rank<r>.pid (the driver kill -9's one rank)
 *   stall     rank 1 sleeps 60 s instead of issuing all-reduce #4: rank 0's
 *             watchdog must end the job
 *   p2p-stall rank 0 receives 1024 x f32 (tag 5) from rank 1, which sleeps
 *             60 s instead of sending: rank 0's watchdog must see the
 *             receive (a polling wait, lib/comm/mpi_comm.c) and end the job
 *   fatal     rank 1 cannot open its input before the first collective and
 *             takes the fatal path; the others are already waiting in it
 *   mismatch  rank 1 issues broadcast(4 x f32, root 0) where rank 0 issues
 *             allreduce(4 x f32, sum) as collective #4; the sequence check
 *             (ERASE_CHECK_COLLECTIVES=1) must report it on every rank, which
 *             then takes the fatal path with that message
 *   pp3       erase_world_init with pp_size 3 on a world that is not a
 *             multiple of 3: the error names both, and the fatal path ends
 *             the job
 *
 * Usage: mpirun -np N test-failures MODE
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/comm/comm.h"
#include "lib/core/timer.h"

#define COUNT 1024

static erase_world_t world;

/* Write text to $ERASE_TEST_DIR/rank<r>.<what> (atomically: rename). */
static void mark(const char *what, const char *text)
{
    const char *dir = getenv("ERASE_TEST_DIR");
    if (!dir)
        return;
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.rank%d.%s", dir, world.rank, what);
    snprintf(path, sizeof path, "%s/rank%d.%s", dir, world.rank, what);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    rename(tmp, path);
}

static void allreduce(erase_stream_t *s, float *x, size_t n)
{
    ERASE_MUST(erase_allreduce(erase_world_comm(), s, x, x, n, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    ERASE_MUST(erase_stream_synchronize(s));
}

/* The rank's input, read before it takes part in any collective. */
static erase_status_t open_input(const char *path, FILE **f)
{
    *f = fopen(path, "rb");
    if (!*f)
        return ERASE_ERROR(ERASE_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    return ERASE_OK;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    erase_world_options_t options = { .pp_size = !strcmp(mode, "pp3") ? 3 : 1 };
    ERASE_MUST(erase_world_init(&argc, &argv, &options, &world));
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    erase_device_t *dev;
    erase_stream_t *s;
    ERASE_MUST(erase_device_open(&o, &dev));
    ERASE_MUST(erase_stream_create(dev, &s));
    static float x[1 << 16];

    if (!strcmp(mode, "loop")) {
        double t0 = erase_now_s();
        for (long it = 0; erase_now_s() - t0 < 60; it++) {
            for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
                x[i] = 1.0f;
            allreduce(s, x, sizeof x / sizeof x[0]);
            if (x[0] != (float)world.size)
                erase_fatal(__FILE__, __LINE__, "all-reduce result", ERASE_ERR_COMM);
            if (it == 5) {
                char pid[32];
                snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
                mark("pid", pid);
            }
        }
    } else if (!strcmp(mode, "stall")) {
        for (int it = 1; it <= 4; it++) {
            if (it == 4 && world.rank == 1) {
                fprintf(stderr, "[rank 1] test: not issuing all-reduce #4 for 60 s\n");
                sleep(60);
            }
            allreduce(s, x, COUNT);
        }
    } else if (!strcmp(mode, "p2p-stall")) {
        allreduce(s, x, COUNT);
        if (world.rank == 1) {
            fprintf(stderr, "[rank 1] test: not sending to rank 0 for 60 s\n");
            sleep(60);
        } else if (world.rank == 0) {
            ERASE_MUST(erase_recv(erase_world_comm(), s, x, COUNT, ERASE_DTYPE_F32, 1, 5));
            ERASE_MUST(erase_stream_synchronize(s));
        }
    } else if (!strcmp(mode, "fatal")) {
        if (world.rank == 1) {
            FILE *f;
            ERASE_MUST(open_input("/nonexistent/erase-test/input.h5", &f));
            fclose(f);
        }
        allreduce(s, x, COUNT);
    } else if (!strcmp(mode, "mismatch")) {
        for (int it = 1; it <= 3; it++)
            allreduce(s, x, COUNT);
        /* #4 differs; run, both would wait forever for each other */
        if (world.rank == 1)
            ERASE_MUST(erase_broadcast(erase_world_comm(), s, x, 4, ERASE_DTYPE_F32, 0));
        else
            ERASE_MUST(erase_allreduce(erase_world_comm(), s, x, x, 4, ERASE_DTYPE_F32,
                                       ERASE_REDUCE_SUM));
        ERASE_MUST(erase_comm_check_sequence(erase_world_comm()));
    } else {
        fprintf(stderr, "usage: test-failures loop|stall|p2p-stall|fatal|mismatch|pp3\n");
        return 2;
    }
    erase_stream_destroy(s);
    erase_device_close(dev);
    mark("done", "ok\n");
    erase_world_finalize();
    return 0;
}

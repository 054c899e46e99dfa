/*
 * Point-to-point sends and receives of the MPI communicator on 2 ranks,
 * and the waits of small collectives (tests/comm/test-p2p-np2.sh; rank 0
 * prints TAP):
 *
 *  - 16 MiB each way at once, the send and the receive of a rank on two
 *    streams, issued in opposite orders on the two ranks (rank 0: send,
 *    then receive; rank 1: receive, then send): both complete with the
 *    peer's data (no deadlock: the driver's timeout and the watchdog bound
 *    the run);
 *  - a wait that costs little CPU: one rank waits in a receive (then in a
 *    16 MiB send, a 4-byte all-reduce, a barrier) while its peer sleeps
 *    SLEEP_MS before the matching send (receive, all-reduce, barrier):
 *    what the rank that reaches a collective first does while the others
 *    still compute (the metrics' all-reduce, the agreement on signals).
 *    The stream worker that waits must use under 30% of the
 *    wall time of the wait in CPU time: kernels on the same stream read
 *    its CLOCK_THREAD_CPUTIME_ID just before and after the operation. A
 *    busy-polling wait (Open MPI's blocking MPI_Recv, MPI_Send and
 *    MPI_Waitall, erase's before comm_wait) uses ~100% there. This is a ratio, not a time limit:
 *    a slow or loaded machine lengthens both. The whole process's CPU time
 *    (getrusage) is printed beside it, not judged: in the first second or
 *    so after MPI_Init other threads of the process (Open MPI's) use CPU of
 *    their own.
 *
 * Usage: mpirun -np 2 test-p2p
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "lib/comm/comm.h"
#include "lib/core/timer.h"
#include "lib/device/cpu/cpu.h"
#include "tests/comm/mpi_tap.h"

#define BIG ((size_t)16 << 20) /* bytes each way */
#define SLEEP_MS 400           /* the peer's delay before the matching call */
#define CPU_SHARE 0.30         /* most CPU time per second of wall time in the wait */

static erase_world_t world;
static erase_device_t *dev;
static erase_stream_t *s1, *s2;

/* Byte i of the message that rank r sends. */
static uint8_t pattern(int r, size_t i)
{
    return (uint8_t)((i * 7 + (i >> 12) + (size_t)r * 101) & 255);
}

/* Process CPU time (user + system, all threads), seconds. */
static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

/* A kernel: *at = the CPU time of the stream worker that runs it, seconds. */
typedef struct {
    double *at;
} thread_cpu_args_t;

static erase_status_t thread_cpu_kernel(const void *args)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    *((const thread_cpu_args_t *)args)->at = (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
    return ERASE_OK;
}

static void read_thread_cpu(erase_stream_t *s, double *at)
{
    thread_cpu_args_t a = { at };
    ERASE_MUST(erase_cpu_launch(s, thread_cpu_kernel, &a, sizeof a));
}

static void barrier(void)
{
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)
        erase_fatal(__FILE__, __LINE__, "MPI_Barrier", ERASE_ERR_COMM);
}

static void test_exchange(uint8_t *out, uint8_t *in)
{
    erase_comm_t *w = erase_world_comm();
    int peer = 1 - world.rank;
    for (size_t i = 0; i < BIG; i++)
        out[i] = pattern(world.rank, i);
    memset(in, 0, BIG);
    barrier();
    if (world.rank == 0) {
        ERASE_MUST(erase_send(w, s1, out, BIG, ERASE_DTYPE_U8, peer, 11));
        ERASE_MUST(erase_recv(w, s2, in, BIG, ERASE_DTYPE_U8, peer, 12));
    } else {
        ERASE_MUST(erase_recv(w, s1, in, BIG, ERASE_DTYPE_U8, peer, 11));
        ERASE_MUST(erase_send(w, s2, out, BIG, ERASE_DTYPE_U8, peer, 12));
    }
    ERASE_MUST(erase_stream_synchronize(s1));
    ERASE_MUST(erase_stream_synchronize(s2));
    long wrong = 0;
    for (size_t i = 0; i < BIG; i++)
        wrong += in[i] != pattern(peer, i);
    tap(wrong, "16 MiB each way, send and receive on two streams in opposite orders on the two ranks: "
               "every byte is the peer's");
}

/* What rank 0 waits in while rank 1 sleeps SLEEP_MS before its part. */
typedef enum { WAIT_RECV, WAIT_SEND_BIG, WAIT_ALLREDUCE, WAIT_BARRIER } wait_kind_t;

static const char *const wait_names[] = { "receive", "16 MiB send", "4-byte all-reduce", "barrier" };

/* Rank 0's part (rank 1's, after its sleep, is the same call or the
 * matching send / receive) of `kind` on stream s1. */
static void wait_op(wait_kind_t kind, uint8_t *buf)
{
    erase_comm_t *w = erase_world_comm();
    int peer = 1 - world.rank, recv = (kind == WAIT_RECV) == (world.rank == 0);
    size_t bytes = kind == WAIT_SEND_BIG ? BIG : 4096;
    if (kind == WAIT_ALLREDUCE)
        ERASE_MUST(erase_allreduce(w, s1, buf, buf, 1, ERASE_DTYPE_I32, ERASE_REDUCE_MAX));
    else if (kind == WAIT_BARRIER)
        ERASE_MUST(erase_barrier(w, s1));
    else if (recv)
        ERASE_MUST(erase_recv(w, s1, buf, bytes, ERASE_DTYPE_U8, peer, 21));
    else
        ERASE_MUST(erase_send(w, s1, buf, bytes, ERASE_DTYPE_U8, peer, 21));
}

/* Rank 0 waits in `kind` that rank 1 matches after SLEEP_MS; rank 0's CPU
 * time over the wait's wall time. */
static void test_idle_wait(wait_kind_t kind, uint8_t *buf)
{
    long bad = 0;
    barrier();
    if (world.rank == 0) {
        double t0 = erase_now_s(), c0 = cpu_s(), w0 = 0, w1 = 0;
        read_thread_cpu(s1, &w0);
        wait_op(kind, buf);
        read_thread_cpu(s1, &w1);
        ERASE_MUST(erase_stream_synchronize(s1));
        double wall = erase_now_s() - t0, cpu = cpu_s() - c0, worker = w1 - w0;
        printf("# rank 0 waited %.0f ms in a %s: its stream worker used %.1f ms of CPU (%.1f%%; limit %.0f%%), "
               "the process %.1f ms\n", wall * 1e3, wait_names[kind], worker * 1e3, 100 * worker / wall,
               100 * CPU_SHARE, cpu * 1e3);
        /* the wait lasted about SLEEP_MS, or the peer did not delay it */
        bad += wall < 0.5 * SLEEP_MS * 1e-3;
        bad += !(worker > 0 && worker < CPU_SHARE * wall);
    } else {
        usleep(SLEEP_MS * 1000);
        wait_op(kind, buf);
        ERASE_MUST(erase_stream_synchronize(s1));
    }
    char what[160];
    snprintf(what, sizeof what, "a %s waiting %d ms for its peer uses under %.0f%% of a core", wait_names[kind],
             SLEEP_MS, 100 * CPU_SHARE);
    tap(bad, what);
}

int main(int argc, char **argv)
{
    erase_world_options_t o = { .pp_size = 1 };
    ERASE_MUST(erase_world_init(&argc, &argv, &o, &world));
    mpi_tap_rank = world.rank;
    if (world.size != 2) {
        if (world.rank == 0)
            printf("1..0 # SKIP needs 2 ranks, not %d\n", world.size);
        erase_world_finalize();
        return 0;
    }
    erase_device_options_t d = erase_device_options_default();
    d.blas_threads = 1;
    ERASE_MUST(erase_device_open(&d, &dev));
    ERASE_MUST(erase_stream_create(dev, &s1));
    ERASE_MUST(erase_stream_create(dev, &s2));
    uint8_t *out, *in;
    ERASE_MUST(erase_malloc(dev, BIG, (void **)&out));
    ERASE_MUST(erase_malloc(dev, BIG, (void **)&in));
    if (world.rank == 0)
        printf("1..5\n");
    test_idle_wait(WAIT_RECV, in);
    test_idle_wait(WAIT_SEND_BIG, out);
    test_idle_wait(WAIT_ALLREDUCE, in);
    test_idle_wait(WAIT_BARRIER, in);
    test_exchange(out, in);
    erase_free(dev, out);
    erase_free(dev, in);
    erase_stream_destroy(s2);
    erase_stream_destroy(s1);
    erase_device_close(dev);
    erase_world_finalize();
    return 0;
}

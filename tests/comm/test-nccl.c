/*
 * NCCL collectives on CUDA streams (tests/comm/test-nccl-np{1,2}.sh), and
 * erase_world_attach_device's CPU and no-NCCL paths on any machine.
 *
 *   - attaching a CPU device is a no-op (ERASE_OK; collectives on CPU
 *     streams still work);
 *   - the CUDA device of ordinal = local rank is opened; where that is
 *     impossible on any rank (no CUDA backend, no GPU, fewer GPUs than local
 *     ranks) the GPU part is skipped with the reason;
 *   - builds without NCCL: attaching the CUDA device is ERASE_ERR_UNSUPPORTED
 *     with its message, and nothing else is run;
 *   - with NCCL: all-reduce (sum, mean, max; f32 and i32), broadcast,
 *     all-gather(v), all-to-all(v), send/recv and barrier on device buffers
 *     for 0, 1, 7, 4099 and 1<<20 elements, inputs whose exact results are
 *     known (small integers in floats); mean of f32 compared within 1e-6
 *     relative (ncclAvg scales before summing), everything else exactly;
 *     then 1,000 replays of a captured CUDA graph (memset + all-reduce),
 *     changing the input every 100 replays and checking the result.
 * Wrong elements are counted per rank and summed over the world; rank 0
 * prints TAP. Usage: mpirun -np N test-nccl
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "lib/comm/comm.h"
#include "tests/comm/mpi_tap.h"

#define MUST(call) ERASE_MUST(call)

static erase_world_t world;
static erase_device_t *gpu;
static erase_stream_t *stream;

static const size_t sizes[] = { 0, 1, 7, 4099, (size_t)1 << 20 };
#define NSIZES (sizeof sizes / sizeof sizes[0])



static void tap_skip(const char *what, const char *why)
{
    if (world.rank == 0)
        printf("ok %d - %s # SKIP %s\n", ++mpi_tap_n, what, why);
}

/* Value of rank r's element i: small integers, exact in any sum order. */
static float input(int r, size_t i)
{
    return (float)((r * 7 + (int)(i % 1000003) * 3) % 17) - 8.0f;
}

/* A device buffer holding host data (n floats), and back. */
static float *to_device(const float *host, size_t n)
{
    void *d = NULL;
    MUST(erase_malloc(gpu, (n ? n : 1) * sizeof(float), &d));
    if (n)
        MUST(erase_memcpy_sync(gpu, d, host, n * sizeof(float)));
    return d;
}

static float *from_device(const void *d, size_t n)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    if (!h)
        erase_fatal(__FILE__, __LINE__, "malloc", ERASE_ERR_NOMEM);
    if (n)
        MUST(erase_memcpy_sync(gpu, h, d, n * sizeof(float)));
    return h;
}

static float *host_floats(size_t n)
{
    float *h = calloc(n ? n : 1, sizeof *h);
    if (!h)
        erase_fatal(__FILE__, __LINE__, "calloc", ERASE_ERR_NOMEM);
    return h;
}

static long test_allreduce(erase_comm_t *w, size_t n, int op)
{
    int size = world.size;
    float *h = host_floats(n);
    for (size_t i = 0; i < n; i++)
        h[i] = input(world.rank, i);
    float *d = to_device(h, n);
    MUST(erase_allreduce(w, stream, d, d, n, ERASE_DTYPE_F32, (erase_reduce_t)op));
    MUST(erase_stream_synchronize(stream));
    float *got = from_device(d, n);
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        double sum = 0, max = input(0, i);
        for (int r = 0; r < size; r++) {
            sum += input(r, i);
            if (input(r, i) > max)
                max = input(r, i);
        }
        double want = op == ERASE_REDUCE_SUM ? sum : op == ERASE_REDUCE_MAX ? max : sum / size;
        double tol = op == ERASE_REDUCE_MEAN ? 1e-6 * (fabs(want) > 1 ? fabs(want) : 1) : 0;
        wrong += fabs((double)got[i] - want) > tol;
    }
    erase_free(gpu, d);
    free(h);
    free(got);
    return wrong;
}

/* i32 mean: the wrapping sum divided by size, truncated. */
static long test_allreduce_i32_mean(erase_comm_t *w, size_t n)
{
    int32_t *h = malloc((n ? n : 1) * sizeof *h), *got = malloc((n ? n : 1) * sizeof *got);
    void *d = NULL;
    if (!h || !got)
        erase_fatal(__FILE__, __LINE__, "malloc", ERASE_ERR_NOMEM);
    for (size_t i = 0; i < n; i++)
        h[i] = (int32_t)input(world.rank, i) * 5 + 1;
    MUST(erase_malloc(gpu, (n ? n : 1) * 4, &d));
    if (n)
        MUST(erase_memcpy_sync(gpu, d, h, n * 4));
    MUST(erase_allreduce(w, stream, d, d, n, ERASE_DTYPE_I32, ERASE_REDUCE_MEAN));
    MUST(erase_stream_synchronize(stream));
    if (n)
        MUST(erase_memcpy_sync(gpu, got, d, n * 4));
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t sum = 0;
        for (int r = 0; r < world.size; r++)
            sum += (int32_t)input(r, i) * 5 + 1;
        wrong += got[i] != sum / world.size;
    }
    erase_free(gpu, d);
    free(h);
    free(got);
    return wrong;
}

static long test_broadcast(erase_comm_t *w, size_t n)
{
    int root = world.size - 1;
    float *h = host_floats(n);
    for (size_t i = 0; i < n; i++)
        h[i] = world.rank == root ? input(root, i) + 100.0f : -1.0f;
    float *d = to_device(h, n);
    MUST(erase_broadcast(w, stream, d, n, ERASE_DTYPE_F32, root));
    MUST(erase_stream_synchronize(stream));
    float *got = from_device(d, n);
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += got[i] != input(root, i) + 100.0f;
    erase_free(gpu, d);
    free(h);
    free(got);
    return wrong;
}

/* All-gather (v = 0) or all-gatherv (rank r contributes (r+1)*n/size
 * elements, blocks in reverse rank order with a gap of 3). */
static long test_allgather(erase_comm_t *w, size_t n, int v)
{
    int size = world.size;
    size_t counts[256], displs[256], total = 0;
    for (int r = 0; r < size; r++)
        counts[r] = v ? (size_t)(r + 1) * n / (size_t)size : n;
    for (int r = size - 1; r >= 0; r--) {
        displs[r] = total;
        total += counts[r] + (v ? 3 : 0);
    }
    if (!v)
        for (int r = 0; r < size; r++)
            displs[r] = (size_t)r * n;
    size_t mine = counts[world.rank];
    float *h = host_floats(mine), *init = host_floats(total);
    for (size_t i = 0; i < mine; i++)
        h[i] = input(world.rank, i) + 1000.0f * (float)world.rank;
    for (size_t i = 0; i < total; i++)
        init[i] = -7.0f;
    float *ds = to_device(h, mine), *dr = to_device(init, total);
    if (v)
        MUST(erase_allgatherv(w, stream, ds, dr, counts, displs, ERASE_DTYPE_F32));
    else
        MUST(erase_allgather(w, stream, ds, dr, n, ERASE_DTYPE_F32));
    MUST(erase_stream_synchronize(stream));
    float *got = from_device(dr, total);
    long wrong = 0;
    for (int r = 0; r < size; r++) {
        for (size_t i = 0; i < counts[r]; i++)
            wrong += got[displs[r] + i] != input(r, i) + 1000.0f * (float)r;
        if (v) /* the gap after each block is untouched */
            for (size_t i = counts[r]; i < counts[r] + 3; i++)
                wrong += got[displs[r] + i] != -7.0f;
    }
    erase_free(gpu, ds);
    erase_free(gpu, dr);
    free(h);
    free(init);
    free(got);
    return wrong;
}

/* Element i of the block rank `from` sends to rank `to`. */
static float a2a_value(int from, int to, size_t i)
{
    return (float)(from * 100 + to) + (float)(i % 509);
}

/* All-to-all (v = 0: n per pair) or all-to-allv (n * (from + to + 1) / size). */
static long test_alltoall(erase_comm_t *w, size_t n, int v)
{
    int size = world.size, me = world.rank;
    size_t sc[128], sd[128], rc[128], rd[128], stot = 0, rtot = 0;
    for (int r = 0; r < size; r++) {
        sc[r] = v ? n * (size_t)(me + r + 1) / (size_t)(2 * size) : n;
        rc[r] = v ? n * (size_t)(r + me + 1) / (size_t)(2 * size) : n;
        sd[r] = stot;
        rd[r] = rtot;
        stot += sc[r];
        rtot += rc[r];
    }
    float *h = host_floats(stot), *init = host_floats(rtot);
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < sc[r]; i++)
            h[sd[r] + i] = a2a_value(me, r, i);
    float *ds = to_device(h, stot), *dr = to_device(init, rtot);
    if (v)
        MUST(erase_alltoallv(w, stream, ds, sc, sd, dr, rc, rd, ERASE_DTYPE_F32));
    else
        MUST(erase_alltoall(w, stream, ds, dr, n, ERASE_DTYPE_F32));
    MUST(erase_stream_synchronize(stream));
    float *got = from_device(dr, rtot);
    long wrong = 0;
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < rc[r]; i++)
            wrong += got[rd[r] + i] != a2a_value(r, me, i);
    erase_free(gpu, ds);
    erase_free(gpu, dr);
    free(h);
    free(init);
    free(got);
    return wrong;
}

/* Pairs (2k, 2k+1): the even rank sends then receives, the odd one
 * receives then sends (NCCL matches in issue order); a last odd rank out
 * sits this one out. */
static long test_sendrecv(erase_comm_t *w, size_t n)
{
    int me = world.rank, peer = me ^ 1;
    if (peer >= world.size)
        return 0;
    float *h = host_floats(n), *init = host_floats(n);
    for (size_t i = 0; i < n; i++)
        h[i] = a2a_value(me, peer, i);
    float *ds = to_device(h, n), *dr = to_device(init, n);
    if (me % 2 == 0) {
        MUST(erase_send(w, stream, ds, n, ERASE_DTYPE_F32, peer, 5));
        MUST(erase_recv(w, stream, dr, n, ERASE_DTYPE_F32, peer, 5));
    } else {
        MUST(erase_recv(w, stream, dr, n, ERASE_DTYPE_F32, peer, 5));
        MUST(erase_send(w, stream, ds, n, ERASE_DTYPE_F32, peer, 5));
    }
    MUST(erase_stream_synchronize(stream));
    float *got = from_device(dr, n);
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += got[i] != a2a_value(peer, me, i);
    erase_free(gpu, ds);
    erase_free(gpu, dr);
    free(h);
    free(init);
    free(got);
    return wrong;
}

/* 1,000 replays of a captured graph (memset of the result, all-reduce sum);
 * the input changes every 100 replays and the result is checked then. */
static long test_graph(erase_comm_t *w)
{
    const size_t n = 4099;
    float *h = host_floats(n), *zero = host_floats(n);
    float *ds = to_device(zero, n), *dr = to_device(zero, n);
    erase_graph_t *graph = NULL;
    MUST(erase_stream_begin_capture(stream));
    MUST(erase_memset_async(stream, dr, 0, n * sizeof(float)));
    MUST(erase_allreduce(w, stream, ds, dr, n, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    MUST(erase_stream_end_capture(stream, &graph));
    long wrong = 0;
    for (int batch = 0; batch < 10; batch++) {
        for (size_t i = 0; i < n; i++)
            h[i] = input(world.rank, i + (size_t)batch);
        MUST(erase_memcpy_sync(gpu, ds, h, n * sizeof(float)));
        for (int k = 0; k < 100; k++)
            MUST(erase_graph_launch(graph, stream));
        MUST(erase_stream_synchronize(stream));
        float *got = from_device(dr, n);
        for (size_t i = 0; i < n; i++) {
            float want = 0;
            for (int r = 0; r < world.size; r++)
                want += input(r, i + (size_t)batch);
            wrong += got[i] != want;
        }
        free(got);
    }
    erase_graph_destroy(graph);
    erase_free(gpu, ds);
    erase_free(gpu, dr);
    free(h);
    free(zero);
    return wrong;
}

/* The end of every path through main: the stream, the world (its NCCL
 * communicators before the device goes), the device, then the TAP plan. */
static int finish(void)
{
    if (stream)
        erase_stream_destroy(stream);
    erase_world_finalize();
    if (gpu)
        erase_device_close(gpu);
    if (mpi_tap_rank == 0)
        printf("1..%d\n", mpi_tap_n);
    return 0;
}

int main(int argc, char **argv)
{
    MUST(erase_world_init(&argc, &argv, NULL, &world));
    mpi_tap_rank = world.rank;
    erase_comm_t *w = erase_world_comm();

    /* a CPU device: attaching is a no-op, CPU collectives still work */
    erase_device_t *cpu = NULL;
    erase_stream_t *cs = NULL;
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    MUST(erase_device_open(&o, &cpu));
    MUST(erase_stream_create(cpu, &cs));
    long bad = erase_world_attach_device(cpu) != ERASE_OK;
    int64_t one = 1, total = 0;
    MUST(erase_allreduce(w, cs, &one, &total, 1, ERASE_DTYPE_I64, ERASE_REDUCE_SUM));
    MUST(erase_stream_synchronize(cs));
    bad += total != world.size;
    tap(bad, "erase_world_attach_device(CPU device) is a no-op; CPU collectives still work");
    erase_stream_destroy(cs);
    erase_device_close(cpu);

    /* the GPU of this rank, on every rank or none */
    o = erase_device_options_default();
    o.kind = ERASE_DEVICE_CUDA;
    o.ordinal = world.local_rank;
    erase_status_t st = erase_device_open(&o, &gpu);
    char why[600];
    snprintf(why, sizeof why, "rank %d: CUDA device %d: %s", world.rank, o.ordinal,
             st == ERASE_OK ? "opened" : erase_error_message());
    long opened = world_sum(st == ERASE_OK);
    if (opened < world.size) {
        int first = st != ERASE_OK ? world.rank : world.size, who = 0;
        MPI_Allreduce(&first, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (world.rank == who)
            printf("# SKIP reason from %s\n", why);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
        /* "fewer GPUs than ranks" is the machine's size, not a failure:
         * tests/gpu/device-check.sh accepts that SKIP on a GPU machine */
        tap_skip("NCCL collectives on CUDA streams",
                 opened ? "fewer GPUs than ranks (each rank needs its own)" : "no CUDA device visible");
        return finish();
    }
    erase_world_log_device(gpu);
    MUST(erase_stream_create(gpu, &stream));
    st = erase_world_attach_device(gpu);
    if (st == ERASE_ERR_UNSUPPORTED) { /* a build without NCCL */
        const char *msg = erase_error_message();
        const char *want = "erase_world_attach_device: this build of erase has no NCCL "
                           "(configure --with-nccl): collectives on CUDA streams are not "
                           "available";
        size_t lm = strlen(msg), lw = strlen(want);
        tap(!(lm >= lw && !strcmp(msg + lm - lw, want)),
            "without NCCL, attaching a CUDA device is ERASE_ERR_UNSUPPORTED");
        float *d = NULL;
        MUST(erase_malloc(gpu, 16, (void **)&d));
        tap(erase_allreduce(w, stream, d, d, 4, ERASE_DTYPE_F32, ERASE_REDUCE_SUM) !=
                ERASE_ERR_UNSUPPORTED,
            "and a collective on a CUDA stream is ERASE_ERR_UNSUPPORTED");
        erase_free(gpu, d);
        return finish();
    }
    MUST(st);
    tap(0, "erase_world_attach_device(CUDA device): NCCL communicators world, dp, pp, emb");

    char what[160];
    static const char *ops[] = { "sum", "mean", "max" };
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        for (int op = 0; op < 3; op++) {
            snprintf(what, sizeof what, "allreduce %zu x f32 %s", n, ops[op]);
            tap(test_allreduce(w, n, op), what);
        }
        snprintf(what, sizeof what, "allreduce %zu x i32 mean (truncated)", n);
        tap(test_allreduce_i32_mean(w, n), what);
        snprintf(what, sizeof what, "broadcast %zu x f32 from the last rank", n);
        tap(test_broadcast(w, n), what);
        snprintf(what, sizeof what, "allgather %zu x f32", n);
        tap(test_allgather(w, n, 0), what);
        snprintf(what, sizeof what, "allgatherv up to %zu x f32 per rank", n);
        tap(test_allgather(w, n, 1), what);
        snprintf(what, sizeof what, "alltoall %zu x f32", n);
        tap(test_alltoall(w, n, 0), what);
        snprintf(what, sizeof what, "alltoallv up to %zu x f32 per pair", n);
        tap(test_alltoall(w, n, 1), what);
        snprintf(what, sizeof what, "send/recv %zu x f32 between pairs of ranks", n);
        tap(test_sendrecv(w, n), what);
    }
    MUST(erase_barrier(w, stream));
    MUST(erase_barrier(erase_dp_comm(), stream));
    MUST(erase_barrier(erase_pp_comm(), stream));
    MUST(erase_stream_synchronize(stream));
    tap(0, "barrier on world, dp and pp");
    tap(test_graph(w), "1,000 replays of a captured all-reduce graph, checked every 100");

    MUST(erase_stream_synchronize(stream));
    return finish();
}

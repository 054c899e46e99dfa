/*
 * The MPI communicator under mpirun (tests/comm/test-collectives-np*.sh):
 * every collective for 0, 1, 7, 4099 and 1<<20 elements, with inputs whose
 * exact result is known in any summation order (small integers); wrong
 * elements are counted on each rank and summed over the ranks (nccl-tests'
 * #wrong), and every assertion is on such a sum, so that all ranks take
 * the same branch and none is left waiting in a collective. All-reduce of
 * random floats is compared bitwise with the documented ring order, across
 * runs and across ranks. Plus barrier, concurrent communicators on two
 * streams, the dp/pp groups, and the collective-sequence check (exact
 * message, on mismatched collectives that never run).
 *
 * Rank 0 prints TAP; the other ranks' stdout goes to /dev/null. A call that
 * fails ends the whole job through erase_fatal (MPI_Abort).
 * Usage: mpirun -np N test-collectives [--pp P]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <mpi.h>

#include "lib/comm/comm.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"
#include "tests/device/kernels.h"

#define MUST(call) ERASE_MUST(call)

static erase_world_t world;
static erase_device_t *dev;
static erase_stream_t *stream, *stream2;

static const size_t sizes[] = { 0, 1, 7, 4099, (size_t)1 << 20 };
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define GUARD 16 /* elements after each buffer that must stay untouched */

static const char *dtype_name[] = { "f32", "f64", "i32", "i64", "u8" };
static const char *op_name[] = { "sum", "mean", "max" };

/* Sum of a per-rank count over the world (MPI itself: the oracle). */
static int64_t world_sum(int64_t local)
{
    int64_t total = 0;
    if (MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        erase_fatal(__FILE__, __LINE__, "MPI_Allreduce", ERASE_ERR_COMM);
    return total;
}

static void set_elem(void *buf, int dtype, size_t i, double v)
{
    switch (dtype) {
    case ERASE_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case ERASE_DTYPE_F64: ((double *)buf)[i] = v; break;
    case ERASE_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case ERASE_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case ERASE_DTYPE_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    }
}

static double get_elem(const void *buf, int dtype, size_t i)
{
    switch (dtype) {
    case ERASE_DTYPE_F32: return ((const float *)buf)[i];
    case ERASE_DTYPE_F64: return ((const double *)buf)[i];
    case ERASE_DTYPE_I32: return ((const int32_t *)buf)[i];
    case ERASE_DTYPE_I64: return (double)((const int64_t *)buf)[i];
    case ERASE_DTYPE_U8: return ((const uint8_t *)buf)[i];
    }
    return 0;
}

/* All-reduce input of rank r: small integers, exact in every order. */
static double reduce_input(int r, size_t i)
{
    return (double)((r * 7 + (int)(i % 1000003) * 3) % 17) - 8.0;
}

/* Data of block `b` (a rank, or a (sender, receiver) pair), element i. */
static double pattern(int dtype, int b, size_t i)
{
    if (dtype == ERASE_DTYPE_U8)
        return (double)((b * 31 + (int)(i % 256) * 7) & 255);
    return (double)((b * 1009 + (int)(i % 65536)) % 65536) - 32768.0;
}

static void *alloc_elems(size_t n, int dtype)
{
    void *p;
    MUST(erase_malloc(dev, (n + GUARD) * erase_dtype_size(dtype), &p));
    return p;
}

/* Fill elements [from, to) with a sentinel; count those that changed. */
static void fill_guard(void *buf, int dtype, size_t from, size_t to)
{
    memset((char *)buf + from * erase_dtype_size(dtype), 0x5a,
           (to - from) * erase_dtype_size(dtype));
}

static int64_t count_guard(const void *buf, int dtype, size_t from, size_t to)
{
    int64_t bad = 0;
    const unsigned char *p = buf;
    for (size_t b = from * erase_dtype_size(dtype); b < to * erase_dtype_size(dtype); b++)
        bad += p[b] != 0x5a;
    return bad;
}

/* ---- all-reduce ------------------------------------------------------------- */

static double reduce_expected(int dtype, int op, size_t i)
{
    int n = world.size;
    if (op == ERASE_REDUCE_MAX) {
        double m = reduce_input(0, i);
        for (int r = 1; r < n; r++)
            if (reduce_input(r, i) > m)
                m = reduce_input(r, i);
        return m;
    }
    int64_t sum = 0;
    for (int r = 0; r < n; r++)
        sum += (int64_t)reduce_input(r, i);
    if (op == ERASE_REDUCE_SUM)
        return (double)sum;
    if (dtype == ERASE_DTYPE_I32 || dtype == ERASE_DTYPE_I64)
        return (double)(sum / n);
    if (dtype == ERASE_DTYPE_F32)
        return (double)((float)sum * (1.0f / (float)n));
    return (double)sum * (1.0 / (double)n);
}

static void test_allreduce_exact(void **state)
{
    int64_t total_wrong = 0;
    for (int dtype = ERASE_DTYPE_F32; dtype <= ERASE_DTYPE_I64; dtype++)
        for (int op = ERASE_REDUCE_SUM; op <= ERASE_REDUCE_MAX; op++) {
            int64_t wrong = 0;
            for (size_t k = 0; k < NSIZES; k++)
                for (int in_place = 0; in_place < 2; in_place++) {
                    size_t n = sizes[k];
                    void *send = alloc_elems(n, dtype);
                    void *recv = in_place ? send : alloc_elems(n, dtype);
                    for (size_t i = 0; i < n; i++)
                        set_elem(send, dtype, i, reduce_input(world.rank, i));
                    fill_guard(recv, dtype, n, n + GUARD);
                    if (!in_place)
                        fill_guard(recv, dtype, 0, n);
                    MUST(erase_allreduce(erase_world_comm(), stream, send, recv, n, dtype, op));
                    MUST(erase_stream_synchronize(stream));
                    for (size_t i = 0; i < n; i++)
                        wrong += get_elem(recv, dtype, i) != reduce_expected(dtype, op, i);
                    wrong += count_guard(recv, dtype, n, n + GUARD);
                    if (!in_place) /* the input is left as it was */
                        for (size_t i = 0; i < n; i++)
                            wrong += get_elem(send, dtype, i) != reduce_input(world.rank, i);
                    if (!in_place)
                        erase_free(dev, recv);
                    erase_free(dev, send);
                }
            wrong = world_sum(wrong);
            print_message("allreduce %s %-4s: %zu sizes (0 .. %zu), out of place and in place, "
                          "%d ranks: #wrong %lld\n", dtype_name[dtype], op_name[op], NSIZES,
                          sizes[NSIZES - 1], world.size, (long long)wrong);
            total_wrong += wrong;
        }
    assert_int_equal(total_wrong, 0);
}

/* The result the documented ring gives: chunk c of n is summed starting at
 * rank c, ((x_c + x_{c+1}) + x_{c+2}) + ..., then scaled for the mean. */
/* Element i of the all-reduce in the order comm.h promises: on a
 * power-of-two number of ranks the pairwise tree ((x0 + x1) + (x2 + x3))
 * + ... over the ranks; on others the ring's ((x_c + x_{c+1}) + ...) from
 * the rank c whose chunk holds i. The mean then scales by 1/n. */
static float promised_order_sum(float *const *x, size_t count, size_t i, int op)
{
    size_t n = (size_t)world.size, base = count / n, rem = count % n;
    float acc, level[64] = { 0 };
    assert_true(n <= sizeof level / sizeof level[0]); /* the tree's leaves: at most 64 ranks */
    const char *algo = getenv("ERASE_ALLREDUCE");
    if (!(n & (n - 1)) && !(algo && !strcmp(algo, "ring"))) {
        for (size_t r = 0; r < n; r++)
            level[r] = x[r][i];
        for (size_t w = n; w > 1; w /= 2)
            for (size_t r = 0; r < w / 2; r++)
                level[r] = level[2 * r] + level[2 * r + 1];
        acc = level[0];
    } else {
        size_t c = i < rem * (base + 1) ? i / (base + 1) : rem + (i - rem * (base + 1)) / base;
        acc = x[c][i];
        for (size_t k = 1; k < n; k++)
            acc = x[(c + k) % n][i] + acc;
    }
    if (op == ERASE_REDUCE_MEAN && n > 1)
        acc = acc * (1.0f / (float)n);
    return acc;
}

static uint64_t fnv(const void *p, size_t bytes)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
    return h;
}

static void test_allreduce_bitwise(void **state)
{
    static const size_t counts[] = { 7, 4099, ((size_t)1 << 20) + 3 };
    int n = world.size;
    int64_t bad_order = 0, bad_repeat = 0, bad_ranks = 0, naive_differs = 0;
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        for (int op = ERASE_REDUCE_SUM; op <= ERASE_REDUCE_MEAN; op++) {
            size_t count = counts[k];
            float **x = malloc((size_t)n * sizeof *x);
            assert_non_null(x);
            for (int r = 0; r < n; r++) { /* every rank knows every rank's input */
                x[r] = malloc(count * sizeof(float));
                assert_non_null(x[r]);
                uint64_t rng = 0x5eed0000u + (uint64_t)r * 7919u + k;
                for (size_t i = 0; i < count; i++)
                    x[r][i] = erase_rng_uniform(&rng, -1.0f, 1.0f);
            }
            float *a = alloc_elems(count, ERASE_DTYPE_F32), *b = alloc_elems(count, ERASE_DTYPE_F32);
            memcpy(a, x[world.rank], count * sizeof(float));
            memcpy(b, x[world.rank], count * sizeof(float));
            MUST(erase_allreduce(erase_world_comm(), stream, a, a, count, ERASE_DTYPE_F32, op));
            MUST(erase_allreduce(erase_world_comm(), stream, b, b, count, ERASE_DTYPE_F32, op));
            MUST(erase_stream_synchronize(stream));
            bad_repeat += memcmp(a, b, count * sizeof(float)) != 0;
            for (size_t i = 0; i < count; i++) {
                float want = promised_order_sum(x, count, i, op);
                bad_order += memcmp(&a[i], &want, sizeof want) != 0;
                float naive = 0;
                for (int r = 0; r < n; r++)
                    naive += x[r][i];
                naive_differs += op == ERASE_REDUCE_SUM && naive != a[i];
            }
            uint64_t h = fnv(a, count * sizeof(float)), *all = malloc((size_t)n * sizeof *all);
            assert_non_null(all);
            MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
            for (int r = 0; r < n; r++)
                bad_ranks += all[r] != all[0];
            free(all);
            for (int r = 0; r < n; r++)
                free(x[r]);
            free(x);
            erase_free(dev, a);
            erase_free(dev, b);
        }
    bad_order = world_sum(bad_order);
    bad_repeat = world_sum(bad_repeat);
    bad_ranks = world_sum(bad_ranks);
    naive_differs = world_sum(naive_differs);
    print_message("allreduce f32 sum/mean of random floats, %d ranks: %lld elements differ "
                  "bitwise from the promised order (%s), %lld repeats differ, %lld rank results differ "
                  "from rank 0's (for scale: %lld sums differ from the rank-0-first order)\n", n,
                  (long long)bad_order, n & (n - 1) || getenv("ERASE_ALLREDUCE") ? "ring" : "pairwise tree", (long long)bad_repeat, (long long)bad_ranks,
                  (long long)naive_differs);
    assert_int_equal(bad_order, 0);
    assert_int_equal(bad_repeat, 0);
    assert_int_equal(bad_ranks, 0);
}

/* ---- gathers, all-to-all, broadcast, send/recv ------------------------------ */

static void test_allgather(void **state)
{
    int n = world.size, r = world.rank;
    int64_t wrong = 0;
    static const int dtypes[] = { ERASE_DTYPE_F32, ERASE_DTYPE_U8 };
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < NSIZES; k++)
            for (int in_place = 0; in_place < 2; in_place++) {
                int dt = dtypes[d];
                size_t count = sizes[k], total = count * (size_t)n;
                void *recv = alloc_elems(total, dt);
                fill_guard(recv, dt, 0, total + GUARD);
                char *own = (char *)recv + (size_t)r * count * erase_dtype_size(dt);
                void *send = in_place ? (void *)own : alloc_elems(count, dt);
                for (size_t i = 0; i < count; i++)
                    set_elem(send, dt, i, pattern(dt, r, i));
                MUST(erase_allgather(erase_world_comm(), stream, send, recv, count, dt));
                MUST(erase_stream_synchronize(stream));
                for (int s = 0; s < n; s++)
                    for (size_t i = 0; i < count; i++)
                        wrong += get_elem(recv, dt, (size_t)s * count + i) != pattern(dt, s, i);
                wrong += count_guard(recv, dt, total, total + GUARD);
                if (!in_place)
                    erase_free(dev, send);
                erase_free(dev, recv);
            }
    wrong = world_sum(wrong);
    print_message("allgather f32/u8, %zu sizes, out of place and in place, %d ranks: #wrong %lld\n",
                  NSIZES, n, (long long)wrong);
    assert_int_equal(wrong, 0);
}

static void test_allgatherv(void **state)
{
    int n = world.size, r = world.rank;
    int64_t wrong = 0;
    size_t *counts = malloc((size_t)n * sizeof *counts), *displs = malloc((size_t)n * sizeof *displs);
    assert_non_null(counts);
    assert_non_null(displs);
    for (size_t k = 0; k < NSIZES; k++) {
        int dt = ERASE_DTYPE_F32;
        size_t total = 0;
        for (int s = 0; s < n; s++)
            counts[s] = s % 2 ? sizes[k] : sizes[k] / 3;
        /* blocks in reverse rank order with a one-element gap after each */
        for (int s = n - 1; s >= 0; s--) {
            displs[s] = total;
            total += counts[s] + 1;
        }
        void *recv = alloc_elems(total, dt);
        void *send = alloc_elems(counts[r], dt);
        fill_guard(recv, dt, 0, total + GUARD);
        for (size_t i = 0; i < counts[r]; i++)
            set_elem(send, dt, i, pattern(dt, r, i));
        MUST(erase_allgatherv(erase_world_comm(), stream, send, recv, counts, displs, dt));
        MUST(erase_stream_synchronize(stream));
        for (int s = 0; s < n; s++) {
            for (size_t i = 0; i < counts[s]; i++)
                wrong += get_elem(recv, dt, displs[s] + i) != pattern(dt, s, i);
            wrong += count_guard(recv, dt, displs[s] + counts[s], displs[s] + counts[s] + 1);
        }
        wrong += count_guard(recv, dt, total, total + GUARD);
        erase_free(dev, send);
        erase_free(dev, recv);
    }
    free(counts);
    free(displs);
    wrong = world_sum(wrong);
    print_message("allgatherv f32, %zu sizes (odd ranks n, even ranks n/3, reversed with gaps), "
                  "%d ranks: #wrong %lld\n", NSIZES, n, (long long)wrong);
    assert_int_equal(wrong, 0);
}

static void test_alltoall(void **state)
{
    int n = world.size, r = world.rank;
    int64_t wrong = 0;
    static const int dtypes[] = { ERASE_DTYPE_F32, ERASE_DTYPE_U8 };
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < NSIZES; k++) {
            int dt = dtypes[d];
            size_t count = sizes[k], total = count * (size_t)n;
            void *send = alloc_elems(total, dt), *recv = alloc_elems(total, dt);
            for (int to = 0; to < n; to++)
                for (size_t i = 0; i < count; i++)
                    set_elem(send, dt, (size_t)to * count + i, pattern(dt, r * n + to, i));
            fill_guard(recv, dt, 0, total + GUARD);
            MUST(erase_alltoall(erase_world_comm(), stream, send, recv, count, dt));
            MUST(erase_stream_synchronize(stream));
            for (int from = 0; from < n; from++)
                for (size_t i = 0; i < count; i++)
                    wrong += get_elem(recv, dt, (size_t)from * count + i) !=
                             pattern(dt, from * n + r, i);
            wrong += count_guard(recv, dt, total, total + GUARD);
            erase_free(dev, send);
            erase_free(dev, recv);
        }
    wrong = world_sum(wrong);
    print_message("alltoall f32/u8, %zu sizes, %d ranks: #wrong %lld\n", NSIZES, n,
                  (long long)wrong);
    assert_int_equal(wrong, 0);
}

/* Elements rank `from` sends to rank `to` in the all-to-all-v test. */
static size_t a2av_count(size_t base, int from, int to)
{
    return base * (size_t)(1 + (from + 2 * to) % 3) / 3;
}

static void test_alltoallv(void **state)
{
    int n = world.size, r = world.rank;
    int64_t wrong = 0;
    size_t *sc = calloc((size_t)n, sizeof *sc), *sd = calloc((size_t)n, sizeof *sd);
    size_t *rc = calloc((size_t)n, sizeof *rc), *rd = calloc((size_t)n, sizeof *rd);
    assert_true(sc && sd && rc && rd);
    for (size_t k = 0; k < NSIZES; k++) {
        int dt = ERASE_DTYPE_F32;
        size_t stotal = 0, rtotal = 0;
        for (int p = 0; p < n; p++) {
            sc[p] = a2av_count(sizes[k], r, p);
            sd[p] = stotal;
            stotal += sc[p];
        }
        for (int p = n - 1; p >= 0; p--) { /* reversed, with a gap */
            rc[p] = a2av_count(sizes[k], p, r);
            rd[p] = rtotal;
            rtotal += rc[p] + 1;
        }
        void *send = alloc_elems(stotal, dt), *recv = alloc_elems(rtotal, dt);
        for (int to = 0; to < n; to++)
            for (size_t i = 0; i < sc[to]; i++)
                set_elem(send, dt, sd[to] + i, pattern(dt, r * n + to, i));
        fill_guard(recv, dt, 0, rtotal + GUARD);
        MUST(erase_alltoallv(erase_world_comm(), stream, send, sc, sd, recv, rc, rd, dt));
        MUST(erase_stream_synchronize(stream));
        for (int from = 0; from < n; from++) {
            for (size_t i = 0; i < rc[from]; i++)
                wrong += get_elem(recv, dt, rd[from] + i) != pattern(dt, from * n + r, i);
            wrong += count_guard(recv, dt, rd[from] + rc[from], rd[from] + rc[from] + 1);
        }
        wrong += count_guard(recv, dt, rtotal, rtotal + GUARD);
        erase_free(dev, send);
        erase_free(dev, recv);
    }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    wrong = world_sum(wrong);
    print_message("alltoallv f32, %zu sizes (n/3 .. n per pair, reversed with gaps), %d ranks: "
                  "#wrong %lld\n", NSIZES, n, (long long)wrong);
    assert_int_equal(wrong, 0);
}

static void test_broadcast(void **state)
{
    int n = world.size, r = world.rank;
    int64_t wrong = 0;
    int roots[2] = { 0, n - 1 };
    for (int j = 0; j < 2; j++)
        for (size_t k = 0; k < NSIZES; k++) {
            int dt = k % 2 ? ERASE_DTYPE_U8 : ERASE_DTYPE_F64, root = roots[j];
            size_t count = sizes[k];
            void *buf = alloc_elems(count, dt);
            fill_guard(buf, dt, 0, count + GUARD);
            if (r == root)
                for (size_t i = 0; i < count; i++)
                    set_elem(buf, dt, i, pattern(dt, root, i));
            MUST(erase_broadcast(erase_world_comm(), stream, buf, count, dt, root));
            MUST(erase_stream_synchronize(stream));
            for (size_t i = 0; i < count; i++)
                wrong += get_elem(buf, dt, i) != pattern(dt, root, i);
            wrong += count_guard(buf, dt, count, count + GUARD);
            erase_free(dev, buf);
        }
    wrong = world_sum(wrong);
    print_message("broadcast f64/u8 from rank 0 and rank %d, %zu sizes, %d ranks: #wrong %lld\n",
                  n - 1, NSIZES, n, (long long)wrong);
    assert_int_equal(wrong, 0);
}

/* Each rank sends to its right neighbour (stream) and receives from its left
 * (stream2): a send waits for its receive, so they need two streams. */
static void test_send_recv(void **state)
{
    int n = world.size, r = world.rank, right = (r + 1) % n, left = (r + n - 1) % n;
    int64_t wrong = 0;
    for (size_t k = 0; k < NSIZES; k++) {
        int dt = ERASE_DTYPE_I32;
        size_t count = sizes[k];
        void *out = alloc_elems(count, dt), *in = alloc_elems(count, dt);
        for (size_t i = 0; i < count; i++)
            set_elem(out, dt, i, pattern(dt, r, i));
        fill_guard(in, dt, 0, count + GUARD);
        MUST(erase_recv(erase_world_comm(), stream2, in, count, dt, left, (int)k + 7));
        MUST(erase_send(erase_world_comm(), stream, out, count, dt, right, (int)k + 7));
        MUST(erase_stream_synchronize(stream));
        MUST(erase_stream_synchronize(stream2));
        for (size_t i = 0; i < count; i++)
            wrong += get_elem(in, dt, i) != pattern(dt, left, i);
        wrong += count_guard(in, dt, count, count + GUARD);
        erase_free(dev, out);
        erase_free(dev, in);
    }
    wrong = world_sum(wrong);
    print_message("send/recv i32 around the ring, %zu sizes, %d ranks: #wrong %lld\n", NSIZES, n,
                  (long long)wrong);
    assert_int_equal(wrong, 0);
}

/* ---- barrier, groups, concurrency -------------------------------------------- */

static void test_barrier(void **state)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = erase_now_s();
    if (world.rank == 0)
        usleep(300 * 1000);
    MUST(erase_barrier(erase_world_comm(), stream));
    MUST(erase_stream_synchronize(stream));
    double waited = world.rank == 0 ? 1e9 : erase_now_s() - t0, least = 0;
    MPI_Allreduce(&waited, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    int64_t early = world_sum(waited < 0.15);
    print_message("barrier: rank 0 arrives 300 ms late; the others waited at least %.0f ms; "
                  "%lld left before 150 ms\n", least * 1e3, (long long)early);
    assert_int_equal(early, 0);
}

static void test_groups(void **state)
{
    erase_world_t *w = &world;
    int64_t bad = 0;
    bad += w->rank != w->dp_rank * w->pp_size + w->pp_rank;
    bad += w->size != w->dp_size * w->pp_size;
    bad += w->local_rank < 0 || w->local_rank >= w->local_size || w->local_size > w->size;
    bad += w->thread_level != MPI_THREAD_MULTIPLE;
    bad += erase_comm_size(erase_world_comm()) != w->size;
    bad += erase_comm_rank(erase_world_comm()) != w->rank;
    bad += erase_comm_size(erase_dp_comm()) != w->dp_size;
    bad += erase_comm_rank(erase_dp_comm()) != w->dp_rank;
    bad += erase_comm_size(erase_pp_comm()) != w->pp_size;
    bad += erase_comm_rank(erase_pp_comm()) != w->pp_rank;
    /* the dp group holds the ranks of this stage, the pp group this replica */
    int64_t mine = w->rank, dp_sum = 0, pp_sum = 0;
    MUST(erase_allreduce(erase_dp_comm(), stream, &mine, &dp_sum, 1, ERASE_DTYPE_I64,
                         ERASE_REDUCE_SUM));
    MUST(erase_allreduce(erase_pp_comm(), stream, &mine, &pp_sum, 1, ERASE_DTYPE_I64,
                         ERASE_REDUCE_SUM));
    MUST(erase_stream_synchronize(stream));
    int64_t P = w->pp_size, D = w->dp_size;
    bad += dp_sum != P * D * (D - 1) / 2 + D * w->pp_rank;
    bad += pp_sum != w->dp_rank * P * P + P * (P - 1) / 2;
    bad = world_sum(bad);
    print_message("groups: rank %d = dp %d/%d x pp %d/%d, local %d/%d, %s; %lld inconsistencies\n",
                  w->rank, w->dp_rank, w->dp_size, w->pp_rank, w->pp_size, w->local_rank,
                  w->local_size, w->host, (long long)bad);
    assert_int_equal(bad, 0);
}

/* The world and dp communicators at the same time on two streams. */
static void test_concurrent_comms(void **state)
{
    enum { ROUNDS = 50, COUNT = 4099 };
    int64_t wrong = 0;
    float *a = alloc_elems(COUNT, ERASE_DTYPE_F32), *b = alloc_elems(COUNT, ERASE_DTYPE_F32);
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < COUNT; i++) {
            a[i] = (float)reduce_input(world.rank, i + (size_t)round);
            b[i] = (float)reduce_input(world.dp_rank, i + (size_t)round);
        }
        MUST(erase_allreduce(erase_world_comm(), stream, a, a, COUNT, ERASE_DTYPE_F32,
                             ERASE_REDUCE_SUM));
        MUST(erase_allreduce(erase_dp_comm(), stream2, b, b, COUNT, ERASE_DTYPE_F32,
                             ERASE_REDUCE_MAX));
        MUST(erase_stream_synchronize(stream));
        MUST(erase_stream_synchronize(stream2));
        for (size_t i = 0; i < COUNT; i++) {
            double sum = 0, max = reduce_input(0, i + (size_t)round);
            for (int r = 0; r < world.size; r++)
                sum += reduce_input(r, i + (size_t)round);
            for (int r = 1; r < world.dp_size; r++)
                if (reduce_input(r, i + (size_t)round) > max)
                    max = reduce_input(r, i + (size_t)round);
            wrong += a[i] != sum;
            wrong += b[i] != max;
        }
    }
    erase_free(dev, a);
    erase_free(dev, b);
    wrong = world_sum(wrong);
    print_message("world sum on one stream and dp max on another, %d rounds: #wrong %lld\n",
                  ROUNDS, (long long)wrong);
    assert_int_equal(wrong, 0);
}

/* A collective captured into a graph runs (and is numbered) at every launch. */
static void test_graph_replay(void **state)
{
    enum { COUNT = 4099, LAUNCHES = 3 };
    erase_comm_t *w = erase_world_comm();
    float *x = alloc_elems(COUNT, ERASE_DTYPE_F32);
    erase_graph_t *g;
    MUST(erase_comm_check_sequence(w));
    MUST(erase_stream_begin_capture(stream));
    MUST(erase_allreduce(w, stream, x, x, COUNT, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    MUST(erase_stream_end_capture(stream, &g));
    uint64_t before = erase_comm_issued(w);
    int64_t wrong = 0;
    for (int l = 0; l < LAUNCHES; l++) {
        for (size_t i = 0; i < COUNT; i++)
            x[i] = (float)reduce_input(world.rank, i + (size_t)l);
        MUST(erase_graph_launch(g, stream));
        MUST(erase_stream_synchronize(stream));
        for (size_t i = 0; i < COUNT; i++)
            wrong += x[i] != reduce_expected(ERASE_DTYPE_F32, ERASE_REDUCE_SUM, i + (size_t)l);
    }
    uint64_t issued = erase_comm_issued(w) - before;
    erase_status_t check = erase_comm_check_sequence(w); /* every rank logged the replays */
    erase_graph_destroy(g);
    erase_free(dev, x);
    wrong = world_sum(wrong);
    int64_t bad = world_sum(issued != LAUNCHES || check != ERASE_OK);
    print_message("all-reduce captured once, graph launched %d times: #wrong %lld, %llu "
                  "collectives numbered on rank %d, sequence check %s\n", LAUNCHES,
                  (long long)wrong, (unsigned long long)issued, world.rank,
                  erase_status_name(check));
    assert_int_equal(wrong, 0);
    assert_int_equal(bad, 0);
}

/* ---- the collective-sequence check ------------------------------------------- */

static void test_sequence_match(void **state)
{
    erase_comm_t *w = erase_world_comm();
    float x[4] = { 1, 2, 3, 4 };
    MUST(erase_comm_check_sequence(w));
    MUST(erase_allreduce(w, stream, x, x, 4, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    MUST(erase_broadcast(w, stream, x, 4, ERASE_DTYPE_F32, 0));
    MUST(erase_barrier(w, stream));
    MUST(erase_stream_synchronize(stream));
    erase_status_t st1 = erase_comm_check_sequence(w);
    erase_status_t st2 = erase_comm_check_sequence(w); /* nothing issued since */
    int64_t bad = world_sum(st1 != ERASE_OK || st2 != ERASE_OK);
    print_message("sequence check of identical sequences: %s, then (empty) %s; %lld ranks "
                  "failed\n", erase_status_name(st1), erase_status_name(st2), (long long)bad);
    assert_int_equal(bad, 0);
}

/*
 * The last rank issues a different collective. The collectives wait behind
 * a gate and a failing kernel on their stream, so they never run (run, they
 * would wait for each other forever): the check sees what was issued.
 */
static void run_mismatch(int last_issues_broadcast, const char *what_last, const char *what_0,
                         int64_t *bad)
{
    erase_comm_t *w = erase_world_comm();
    int last = world.size - 1;
    erase_stream_t *s;
    atomic_int gate = 0;
    float x[4] = { 0 };
    MUST(erase_stream_create(dev, &s));
    MUST(k_gate(s, &gate));
    MUST(k_fail(s, "the test cancels the mismatched collectives"));
    uint64_t before = erase_comm_issued(w);
    MUST(erase_allreduce(w, s, x, x, 4, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    if (world.rank != last)
        MUST(erase_allreduce(w, s, x, x, 4, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    else if (last_issues_broadcast)
        MUST(erase_broadcast(w, s, x, 4, ERASE_DTYPE_F32, 0));
    if (world.rank != last || last_issues_broadcast)
        MUST(erase_allreduce(w, s, x, x, 4, ERASE_DTYPE_F32, ERASE_REDUCE_MAX));
    erase_status_t st = erase_comm_check_sequence(w);
    char expected[512];
    snprintf(expected, sizeof expected, "rank %d issued %s as collective #%llu where rank 0 "
             "issued %s (communicator world)", last, what_last,
             (unsigned long long)before + 2, what_0);
    const char *msg = erase_error_message();
    size_t lm = strlen(msg), le = strlen(expected);
    int ok = st == ERASE_ERR_COMM && lm >= le && !strcmp(msg + lm - le, expected);
    if (world.rank == 0 || !ok)
        print_message("rank %d: check -> %s: %s\n  expected the message to end in: %s\n",
                      world.rank, erase_status_name(st), msg, expected);
    *bad += !ok;
    atomic_store(&gate, 1);
    erase_status_t sync = erase_stream_synchronize(s); /* the failing kernel's error */
    *bad += sync != ERASE_ERR_BACKEND;
    erase_stream_destroy(s);
    /* the log was consumed: the next check passes */
    *bad += erase_comm_check_sequence(w) != ERASE_OK;
}

static void test_sequence_mismatch(void **state)
{
    int64_t bad = 0;
    run_mismatch(1, "broadcast(4 x f32, root 0)", "allreduce(4 x f32, sum)", &bad);
    run_mismatch(0, "nothing", "allreduce(4 x f32, sum)", &bad);
    bad = world_sum(bad);
    assert_int_equal(bad, 0);
    /* the communicator still works: the skipped collectives ran nowhere */
    int64_t one = 1, n = 0;
    MUST(erase_allreduce(erase_world_comm(), stream, &one, &n, 1, ERASE_DTYPE_I64,
                         ERASE_REDUCE_SUM));
    MUST(erase_stream_synchronize(stream));
    assert_int_equal(world_sum(n != world.size), 0);
}

static void test_bad_arguments(void **state)
{
    erase_comm_t *w = erase_world_comm();
    float x[2] = { 0 };
    int64_t bad = 0;
    bad += erase_allreduce(NULL, stream, x, x, 2, ERASE_DTYPE_F32, ERASE_REDUCE_SUM) !=
           ERASE_ERR_INVALID;
    bad += erase_allreduce(w, stream, x, x, 2, ERASE_DTYPE_U8, ERASE_REDUCE_SUM) !=
           ERASE_ERR_INVALID;
    bad += erase_allreduce(w, stream, NULL, x, 2, ERASE_DTYPE_F32, ERASE_REDUCE_SUM) !=
           ERASE_ERR_INVALID;
    bad += erase_broadcast(w, stream, x, 2, ERASE_DTYPE_F32, world.size) != ERASE_ERR_INVALID;
    bad += erase_send(w, stream, x, 2, ERASE_DTYPE_F32, -1, 0) != ERASE_ERR_INVALID;
    bad += erase_recv(w, stream, x, 2, ERASE_DTYPE_F32, 0, -5) != ERASE_ERR_INVALID;
    bad += erase_alltoall(w, stream, x, x, 1, ERASE_DTYPE_F32) != ERASE_ERR_INVALID;
    erase_world_t again;
    bad += erase_world_init(NULL, NULL, NULL, &again) != ERASE_ERR_STATE;
    bad += erase_dtype_size(ERASE_DTYPE_F64) != 8 || erase_dtype_size(ERASE_DTYPE_U8) != 1;
    print_message("bad arguments: %s (last message: %s)\n", bad ? "some accepted" : "all refused",
                  erase_error_message());
    assert_int_equal(world_sum(bad), 0);
}

static int setup(void **state)
{
    erase_device_options_t o = erase_device_options_default();
    o.blas_threads = 1;
    MUST(erase_device_open(&o, &dev));
    MUST(erase_stream_create(dev, &stream));
    MUST(erase_stream_create(dev, &stream2));
    erase_world_log_device(dev);
    print_message("world: %d ranks, dp %d x pp %d\n", world.size, world.dp_size, world.pp_size);
    return 0;
}

static int teardown(void **state)
{
    erase_stream_destroy(stream2);
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

int main(int argc, char **argv)
{
    erase_world_options_t o = { .pp_size = 1, .check_sequence = 1 };
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--pp"))
            o.pp_size = atoi(argv[i + 1]);
    ERASE_MUST(erase_world_init(&argc, &argv, &o, &world));
    if (world.rank != 0 && !freopen("/dev/null", "w", stdout))
        erase_fatal(__FILE__, __LINE__, "silence stdout", ERASE_ERR_IO);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_allreduce_exact),
        cmocka_unit_test(test_allreduce_bitwise),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_allgatherv),
        cmocka_unit_test(test_alltoall),
        cmocka_unit_test(test_alltoallv),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_send_recv),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_concurrent_comms),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_sequence_match),
        cmocka_unit_test(test_sequence_mismatch),
        cmocka_unit_test(test_bad_arguments),
    };
    char name[64];
    snprintf(name, sizeof name, "comm (%d ranks, dp %d x pp %d)", world.size, world.dp_size,
             world.pp_size);
    int failed = cmocka_run_group_tests_name(name, tests, setup, teardown);
    erase_world_finalize();
    return failed;
}

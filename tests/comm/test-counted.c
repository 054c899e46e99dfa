/*
 * The counted all-to-all (erase_alltoall_slots) and the traffic counters
 * (erase_comm_stats) of the MPI communicator under mpirun
 * (tests/comm/test-counted-np*.sh): the exact bytes and operation counts
 * of known collectives; a counted all-to-all moves exactly the counted
 * prefixes (the rest of every receive slot untouched), its counts differ
 * between ranks and the sequence check still matches; a count mismatch and
 * a count out of range fail with their exact text (and no rank hangs); a
 * captured graph replayed with other counts moves the new counts.
 *
 * Rank 0 prints TAP (tests/comm/mpi_tap.h); the other ranks' stdout goes
 * to /dev/null. Usage: mpirun -np N test-counted
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/comm/comm.h"
#include "tests/comm/mpi_tap.h"

#define MUST(call) ERASE_MUST(call)

static erase_world_t world;
static erase_device_t *dev;
static erase_stream_t *stream;

/* The counted case: 3 slots of 12 floats, counted in units of 3 (0 to 4). */
#define SLOTS 3
#define SLOT_ELEMS 12
#define UNIT 3
#define MAXU (SLOT_ELEMS / UNIT)

/* Element i of send slot (dst, k) on rank `src`: names all four. */
static float value(int src, int dst, int k, int i)
{
    return (float)(src * 10000 + dst * 1000 + k * 100 + i);
}

/* Units rank `src` sends rank `dst` in slot k at replay l: 0 to 4, unequal
 * across the pairs and slots (0 and 4 among them). */
static int units(int src, int dst, int k, int l)
{
    return (src + 2 * dst + k + l) % (MAXU + 1);
}

typedef struct {
    float *send, *recv;
    int *scnt, *rcnt;
} counted_t;

static counted_t counted_new(void)
{
    int n = world.size;
    counted_t b;
    MUST(erase_malloc(dev, sizeof(float) * (size_t)n * SLOTS * SLOT_ELEMS, (void **)&b.send));
    MUST(erase_malloc(dev, sizeof(float) * (size_t)n * SLOTS * SLOT_ELEMS, (void **)&b.recv));
    MUST(erase_malloc(dev, sizeof(int) * (size_t)n * SLOTS, (void **)&b.scnt));
    MUST(erase_malloc(dev, sizeof(int) * (size_t)n * SLOTS, (void **)&b.rcnt));
    return b;
}

static void counted_free(counted_t *b)
{
    erase_free(dev, b->send), erase_free(dev, b->recv), erase_free(dev, b->scnt), erase_free(dev, b->rcnt);
}

/* Inputs of replay l; recv set to -1 (untouched entries must stay so). */
static void counted_fill(counted_t *b, int l)
{
    int n = world.size, me = world.rank;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < SLOTS; k++) {
            b->scnt[r * SLOTS + k] = units(me, r, k, l);
            b->rcnt[r * SLOTS + k] = units(r, me, k, l);
            for (int i = 0; i < SLOT_ELEMS; i++) {
                b->send[(r * SLOTS + k) * SLOT_ELEMS + i] = value(me, r, k, i);
                b->recv[(r * SLOTS + k) * SLOT_ELEMS + i] = -1.0f;
            }
        }
}

/* Wrong entries of recv after replay l; *sent: the bytes this rank should
 * have sent to others (the counts and the counted prefixes). */
static long counted_wrong(const counted_t *b, int l, uint64_t *sent)
{
    int n = world.size, me = world.rank;
    long wrong = 0;
    *sent = 0;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < SLOTS; k++) {
            int got = units(r, me, k, l) * UNIT;
            for (int i = 0; i < SLOT_ELEMS; i++)
                wrong += b->recv[(r * SLOTS + k) * SLOT_ELEMS + i] != (i < got ? value(r, me, k, i) : -1.0f);
            if (r != me)
                *sent += sizeof(int) + sizeof(float) * (uint64_t)units(me, r, k, l) * UNIT;
        }
    return wrong;
}

static void test_known_bytes(void)
{
    erase_comm_t *w = erase_world_comm();
    uint64_t n = (uint64_t)world.size;
    enum { AR = 1024, AG = 100, A2A = 50, P2P = 10 };
    float *ar;
    int32_t *ag_send, *ag_recv;
    double *a_send, *a_recv;
    float p2p[P2P] = { 0 };
    MUST(erase_malloc(dev, sizeof(float) * AR, (void **)&ar));
    MUST(erase_malloc(dev, sizeof(int32_t) * AG, (void **)&ag_send));
    MUST(erase_malloc(dev, sizeof(int32_t) * AG * n, (void **)&ag_recv));
    MUST(erase_malloc(dev, sizeof(double) * A2A * n, (void **)&a_send));
    MUST(erase_malloc(dev, sizeof(double) * A2A * n, (void **)&a_recv));
    memset(ar, 0, sizeof(float) * AR);
    memset(ag_send, 0, sizeof(int32_t) * AG);
    memset(a_send, 0, sizeof(double) * A2A * n);
    MUST(erase_stream_synchronize(stream));
    erase_comm_stats_reset(w);
    MUST(erase_allreduce(w, stream, ar, ar, AR, ERASE_DTYPE_F32, ERASE_REDUCE_SUM));
    MUST(erase_allreduce(w, stream, ar, ar, AR, ERASE_DTYPE_F32, ERASE_REDUCE_MEAN));
    MUST(erase_allgather(w, stream, ag_send, ag_recv, AG, ERASE_DTYPE_I32));
    MUST(erase_alltoall(w, stream, a_send, a_recv, A2A, ERASE_DTYPE_F64));
    MUST(erase_barrier(w, stream));
    int peer = world.rank ^ 1; /* pairs (0, 1), (2, 3) */
    if (world.rank % 2 == 0)
        MUST(erase_send(w, stream, p2p, P2P, ERASE_DTYPE_F32, peer, 5));
    else
        MUST(erase_recv(w, stream, p2p, P2P, ERASE_DTYPE_F32, peer, 5));
    MUST(erase_stream_synchronize(stream));
    erase_comm_stats_t st;
    MUST(erase_comm_stats(w, &st));
    uint64_t rounds = 0;
    for (uint64_t k = 1; k < n; k <<= 1)
        rounds++;
    /* the ring all-reduce sends and receives n - 1 chunks of AR / n twice */
    const struct { int kind; uint64_t ops, sent, received; } want[] = {
        { ERASE_COMM_ALLREDUCE, 2, 2 * 2 * (n - 1) * (AR / n) * 4, 2 * 2 * (n - 1) * (AR / n) * 4 },
        { ERASE_COMM_BROADCAST, 0, 0, 0 },
        { ERASE_COMM_ALLGATHER, 1, (n - 1) * AG * 4, (n - 1) * AG * 4 },
        { ERASE_COMM_ALLTOALL, 1, (n - 1) * A2A * 8, (n - 1) * A2A * 8 },
        { ERASE_COMM_BARRIER, 1, rounds, rounds },
        { ERASE_COMM_P2P, 1, world.rank % 2 ? 0 : P2P * 4, world.rank % 2 ? P2P * 4 : 0 },
    };
    long bad = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const erase_comm_counter_t *e = &st.kind[want[i].kind];
        if (e->ops != want[i].ops || e->bytes_sent != want[i].sent || e->bytes_received != want[i].received ||
            (e->ops && e->seconds <= 0) || (!e->ops && e->seconds != 0)) {
            fprintf(stderr, "rank %d kind %d: %llu ops, %llu bytes sent, %llu received, %g s; expected %llu, %llu, "
                    "%llu\n", world.rank, want[i].kind, (unsigned long long)e->ops,
                    (unsigned long long)e->bytes_sent, (unsigned long long)e->bytes_received, e->seconds,
                    (unsigned long long)want[i].ops, (unsigned long long)want[i].sent,
                    (unsigned long long)want[i].received);
            bad++;
        }
    }
    erase_comm_stats_reset(w);
    MUST(erase_comm_stats(w, &st));
    for (int k = 0; k < ERASE_COMM_KINDS; k++)
        bad += st.kind[k].ops != 0 || st.kind[k].bytes_sent != 0 || st.kind[k].seconds != 0;
    tap(bad, "counters: exact operations and bytes of all-reduce, all-gather, all-to-all, barrier, send/recv; reset");
    erase_free(dev, ar), erase_free(dev, ag_send), erase_free(dev, ag_recv);
    erase_free(dev, a_send), erase_free(dev, a_recv);
}

static void test_counted(void)
{
    erase_comm_t *w = erase_world_comm();
    counted_t b = counted_new();
    counted_fill(&b, 0);
    MUST(erase_comm_check_sequence(w));
    erase_comm_stats_reset(w);
    MUST(erase_alltoall_slots(w, stream, b.send, b.recv, SLOTS, SLOT_ELEMS, b.scnt, b.rcnt, UNIT,
                              ERASE_DTYPE_F32));
    MUST(erase_stream_synchronize(stream));
    uint64_t sent;
    long wrong = counted_wrong(&b, 0, &sent);
    erase_comm_stats_t st;
    MUST(erase_comm_stats(w, &st));
    const erase_comm_counter_t *e = &st.kind[ERASE_COMM_ALLTOALL];
    if (e->ops != 1 || e->bytes_sent != sent)
        fprintf(stderr, "rank %d: %llu all-to-alls, %llu bytes sent, expected 1, %llu\n", world.rank,
                (unsigned long long)e->ops, (unsigned long long)e->bytes_sent, (unsigned long long)sent);
    tap(wrong, "counted all-to-all moves exactly the counted prefixes, the rest of the slots untouched");
    tap(e->ops != 1 || e->bytes_sent != sent, "counted all-to-all: bytes sent = the counts + the counted prefixes");
    /* the ranks' counts differ, their sequences do not */
    tap(erase_comm_check_sequence(w) != ERASE_OK, "sequence check: counted all-to-alls of other counts match");
    counted_free(&b);
}

/* Run one counted all-to-all on a stream of its own, with rank 1's recv
 * count (from rank 0, slot 1) or rank 0's send count (to rank 1, slot 2)
 * changed; the failing rank's message must hold the operation, its number
 * and rank, and `why` (the message carries file:line trails between). */
static long run_faulty(int bad_recv, const char *why, int failing)
{
    erase_comm_t *w = erase_world_comm();
    counted_t b = counted_new();
    counted_fill(&b, 0);
    if (bad_recv && world.rank == 1)
        b.rcnt[0 * SLOTS + 1] += 1; /* units(0, 1, 1, 0) = 3: expects 4 */
    if (!bad_recv && world.rank == 0)
        b.scnt[1 * SLOTS + 2] = MAXU + 1;
    erase_stream_t *s;
    MUST(erase_stream_create(dev, &s));
    MUST(erase_alltoall_slots(w, s, b.send, b.recv, SLOTS, SLOT_ELEMS, b.scnt, b.rcnt, UNIT, ERASE_DTYPE_F32));
    unsigned long long number = (unsigned long long)erase_comm_issued(w);
    erase_status_t st = erase_stream_synchronize(s);
    long bad = 0;
    if (world.rank == failing) {
        char want[256];
        snprintf(want, sizeof want, "alltoall_slots(3 slots x 12 x f32, unit 3) #%llu on world (rank %d of %d): ",
                 number, world.rank, world.size);
        const char *msg = erase_error_message();
        if (st != ERASE_ERR_COMM || !strstr(msg, want) || !strstr(msg, why)) {
            fprintf(stderr, "rank %d: %s \"%s\"\n  expected ERASE_ERR_COMM \"%s\" and \"%s\"\n", world.rank,
                    erase_status_name(st), msg, want, why);
            bad++;
        }
    } else if (world.rank != 1 && st != ERASE_OK) { /* rank 1 of the range case: a mismatch too */
        fprintf(stderr, "rank %d: %s %s\n", world.rank, erase_status_name(st), erase_error_message());
        bad++;
    }
    erase_stream_destroy(s);
    counted_free(&b);
    return bad;
}

static void test_counted_faults(void)
{
    tap(run_faulty(1, "counted all-to-all: rank 0 sends 3 x 3 elements in slot 1 where this rank expects 4", 1),
        "counted all-to-all: a receive count that differs from the sender's: exact error");
    tap(run_faulty(0, "counted all-to-all: send count 5 of rank 1 slot 2 is outside [0, 4]", 0),
        "counted all-to-all: a send count out of range: exact error, no rank hangs");
}

static void test_counted_graph(void)
{
    enum { LAUNCHES = 3 };
    erase_comm_t *w = erase_world_comm();
    counted_t b = counted_new();
    erase_graph_t *g;
    MUST(erase_stream_begin_capture(stream));
    MUST(erase_alltoall_slots(w, stream, b.send, b.recv, SLOTS, SLOT_ELEMS, b.scnt, b.rcnt, UNIT,
                              ERASE_DTYPE_F32));
    MUST(erase_stream_end_capture(stream, &g));
    long wrong = 0, bytes_bad = 0;
    for (int l = 0; l < LAUNCHES; l++) {
        counted_fill(&b, l); /* other counts at every replay */
        erase_comm_stats_reset(w);
        MUST(erase_graph_launch(g, stream));
        MUST(erase_stream_synchronize(stream));
        uint64_t sent;
        wrong += counted_wrong(&b, l, &sent);
        erase_comm_stats_t st;
        MUST(erase_comm_stats(w, &st));
        bytes_bad += st.kind[ERASE_COMM_ALLTOALL].ops != 1 || st.kind[ERASE_COMM_ALLTOALL].bytes_sent != sent;
    }
    erase_graph_destroy(g);
    tap(wrong, "counted all-to-all captured once, replayed with other counts: moves the new counts");
    tap(bytes_bad, "counted all-to-all replays: each counts its own bytes");
    counted_free(&b);
}

int main(int argc, char **argv)
{
    erase_world_options_t o = { .pp_size = 1, .check_sequence = 1 };
    ERASE_MUST(erase_world_init(&argc, &argv, &o, &world));
    mpi_tap_rank = world.rank;
    if (world.rank != 0 && !freopen("/dev/null", "w", stdout))
        erase_fatal(__FILE__, __LINE__, "silence stdout", ERASE_ERR_IO);
    erase_device_options_t d = erase_device_options_default();
    d.blas_threads = 1;
    MUST(erase_device_open(&d, &dev));
    MUST(erase_stream_create(dev, &stream));
    if (world.size < 2) {
        printf("1..0 # SKIP needs 2 ranks, not %d\n", world.size);
    } else {
        printf("1..8\n");
        fflush(stdout);
        test_known_bytes();
        test_counted();
        test_counted_faults();
        test_counted_graph();
    }
    erase_stream_destroy(stream);
    erase_device_close(dev);
    erase_world_finalize();
    return 0;
}

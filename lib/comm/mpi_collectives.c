/*
 * The collectives of the MPI communicator (lib/comm/mpi_comm.c issues
 * them on a CPU stream; its worker thread runs them here, c->exec held).
 *
 * All collectives are built from point-to-point messages on the comm's
 * `coll` duplicate, with the tag (sequence number << 4 | kind): the
 * sequence number counts the collectives this rank has run on the comm, so
 * two ranks that disagree on what the n-th collective is never match each
 * other's messages (they wait, and the watchdog or the sequence check
 * reports it) instead of silently combining the wrong buffers.
 *
 *   all-reduce  n a power of two: recursive halving reduce-scatter +
 *               recursive doubling all-gather (log2 n steps each): every
 *               element is the pairwise tree ((x0 + x1) + (x2 + x3)) + ...
 *               (halving_allreduce). Other n: ring reduce-scatter + ring
 *               all-gather (n-1 steps each); the buffer is cut into n
 *               chunks (chunk i: count/n elements, one more for i < count %
 *               n), chunk c is reduced along the ring starting at rank c:
 *               ((x_c + x_{c+1}) + x_{c+2}) + ... (indices mod n). Either
 *               way each element is reduced by one rank and then copied to
 *               every rank: the result is bitwise identical on all ranks
 *               and in every run, for a fixed number of ranks.
 *               ERASE_ALLREDUCE=ring takes the ring on every size (to
 *               compare the two: erase-bench allreduce).
 *   all-gather(v)  ring, n-1 steps.
 *   all-to-all(v)  pairwise: at step k rank r sends to r+k, receives from r-k.
 *   counted all-to-all  pairwise as well; each step exchanges the slots'
 *               counts, then the counted prefixes packed in c->stage.
 *   broadcast   binomial tree from the root.
 *   barrier     dissemination (ceil(log2 n) rounds of one-byte messages).
 *
 * Messages larger than 1 GiB are sent in 1 GiB pieces (MPI counts are int).
 * Zero-byte chunks are not sent (both sides know the sizes).
 *
 * The collectives' steps of more than COMM_SMALL_BYTES wait with
 * MPI_Waitall: with comm_wait's sleeps between the handshakes of a large
 * message's protocol an all-reduce of 64 KiB to 1 MiB on 2 ranks took
 * 4-30x longer (erase-bench allreduce, 2026-12). Smaller ones, sent
 * eagerly (the metrics, the agreement on signals, a barrier), wait with
 * comm_wait after a 100 us spin: a rank that reaches the collective first
 * would otherwise spin on its core until the last arrives, and a pipeline
 * stage's compute stream runs on that core meanwhile.
 */
#include "config.h"

#include "lib/comm/comm_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages --------------------------------------------------------------- */

static erase_status_t wait_error(int rc, const MPI_Status *stat, int n, int dst, int src)
{
    int code = rc;
    if (rc == MPI_ERR_IN_STATUS)
        for (int i = 0; i < n; i++)
            if (stat[i].MPI_ERROR != MPI_SUCCESS) {
                code = stat[i].MPI_ERROR;
                break;
            }
    char what[96];
    snprintf(what, sizeof what, "MPI_Waitall (send to rank %d, receive from rank %d)", dst, src);
    return comm_mpi_error(__FILE__, __LINE__, code, what);
}

/*
 * Send sbytes of sbuf to `dst` and receive rbytes into rbuf from `src` at
 * once on c's `coll` (either may be 0 bytes: nothing is sent or received).
 * The receive must get exactly rbytes. Adds the bytes to c->run_sent /
 * run_received (exec held).
 */
static erase_status_t exchange(erase_comm_t *c, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                               size_t rbytes, int src, int tag)
{
    MPI_Comm comm = c->coll;
    c->run_sent += sbytes;
    c->run_received += rbytes;
    size_t ns = (sbytes + COMM_PIECE - 1) / COMM_PIECE;
    size_t nr = (rbytes + COMM_PIECE - 1) / COMM_PIECE;
    size_t steps = ns > nr ? ns : nr;
    for (size_t k = 0; k < steps; k++) {
        MPI_Request req[2];
        MPI_Status stat[2];
        int n = 0, rlen = 0;
        if (k < nr) {
            size_t off = k * COMM_PIECE;
            rlen = (int)(rbytes - off < COMM_PIECE ? rbytes - off : COMM_PIECE);
            COMM_MPI_CHECK(MPI_Irecv((char *)rbuf + off, rlen, MPI_BYTE, src, tag, comm, &req[n++]),
                           "MPI_Irecv");
        }
        if (k < ns) {
            size_t off = k * COMM_PIECE;
            int slen = (int)(sbytes - off < COMM_PIECE ? sbytes - off : COMM_PIECE);
            COMM_MPI_CHECK(MPI_Isend((const char *)sbuf + off, slen, MPI_BYTE, dst, tag, comm,
                                     &req[n++]),
                           "MPI_Isend");
        }
        int rc = sbytes <= COMM_SMALL_BYTES && rbytes <= COMM_SMALL_BYTES
                     ? comm_wait(n, req, stat, COMM_WAIT_SPIN_SMALL_NS)
                     : MPI_Waitall(n, req, stat);
        if (rc != MPI_SUCCESS)
            return wait_error(rc, stat, n, dst, src);
        if (k < nr) {
            int got = -1;
            MPI_Get_count(&stat[0], MPI_BYTE, &got);
            if (got != rlen)
                return ERASE_ERROR(ERASE_ERR_COMM,
                                   "received %d bytes from rank %d where %d were expected "
                                   "(ranks disagree on the size)", got, src, rlen);
        }
    }
    return ERASE_OK;
}

/* ---- reductions --------------------------------------------------------------- */

/*
 * acc[i] = in[i] (op) acc[i]; the mean's last step also scales by 1/size.
 * Floating point (T): max propagates NaN, the mean multiplies by the
 * rounded 1/size. Integers (T, with U its unsigned twin): sums wrap modulo
 * 2^bits (computed in U), the mean truncates.
 */
#define REDUCE_FLOAT(name, T)                                                    \
    static void name(T *acc, const T *in, size_t n, int op, int scale, int size) \
    {                                                                            \
        if (op == ERASE_REDUCE_MAX) {                                            \
            for (size_t i = 0; i < n; i++)                                       \
                if (in[i] > acc[i] || isnan(in[i]))                              \
                    acc[i] = in[i];                                              \
            return;                                                              \
        }                                                                        \
        for (size_t i = 0; i < n; i++)                                           \
            acc[i] = in[i] + acc[i];                                             \
        if (scale) {                                                             \
            T s = (T)1 / (T)size;                                                \
            for (size_t i = 0; i < n; i++)                                       \
                acc[i] = acc[i] * s;                                             \
        }                                                                        \
    }

#define REDUCE_INT(name, T, U)                                                   \
    static void name(T *acc, const T *in, size_t n, int op, int scale, int size) \
    {                                                                            \
        if (op == ERASE_REDUCE_MAX) {                                            \
            for (size_t i = 0; i < n; i++)                                       \
                if (in[i] > acc[i])                                              \
                    acc[i] = in[i];                                              \
            return;                                                              \
        }                                                                        \
        for (size_t i = 0; i < n; i++)                                           \
            acc[i] = (T)((U)in[i] + (U)acc[i]);                                  \
        if (scale)                                                               \
            for (size_t i = 0; i < n; i++)                                       \
                acc[i] = acc[i] / size;                                          \
    }

REDUCE_FLOAT(reduce_f32, float)
REDUCE_FLOAT(reduce_f64, double)
REDUCE_INT(reduce_i32, int32_t, uint32_t)
REDUCE_INT(reduce_i64, int64_t, uint64_t)

static void reduce(int dtype, int op, void *acc, const void *in, size_t n, int last, int size)
{
    int scale = last && op == ERASE_REDUCE_MEAN;
    switch (dtype) {
    case ERASE_DTYPE_F32: reduce_f32(acc, in, n, op, scale, size); break;
    case ERASE_DTYPE_F64: reduce_f64(acc, in, n, op, scale, size); break;
    case ERASE_DTYPE_I32: reduce_i32(acc, in, n, op, scale, size); break;
    case ERASE_DTYPE_I64: reduce_i64(acc, in, n, op, scale, size); break;
    default: break; /* rejected when issued */
    }
}

/* ---- algorithms (run on the stream worker, with c->exec held) ---------------- */

/* Grow the communicator's buffer *buf (*have bytes) to `bytes` (exec
 * held; kept for the next operations). Errors: ERASE_ERR_NOMEM naming what. */
static erase_status_t buffer_reserve(void **buf, size_t *have, size_t bytes, const char *what)
{
    if (*have >= bytes)
        return ERASE_OK;
    void *p = realloc(*buf, bytes);
    if (!p)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for %zu bytes", what, bytes);
    *buf = p;
    *have = bytes;
    return ERASE_OK;
}

/* Chunk i of `count` elements cut into n: offset and length in elements. */
static size_t chunk_off(size_t count, size_t n, size_t i)
{
    size_t base = count / n, rem = count % n;
    return i * base + (i < rem ? i : rem);
}

static size_t chunk_len(size_t count, size_t n, size_t i)
{
    return count / n + (i < count % n ? 1 : 0);
}

/* comm_internal.h (else halving_allreduce) */
int comm_mpi_uses_ring(const erase_comm_t *c)
{
    return c->ring || (c->size & (c->size - 1)) != 0;
}

/* The all-reduce's algorithms below start from recv holding this rank's
 * values, with at least 2 ranks and 1 element (allreduce does the rest). */
static erase_status_t ring_allreduce(erase_comm_t *c, const comm_args_t *a, int tag)
{
    size_t count = a->op.count, n = (size_t)c->size, r = (size_t)c->rank;
    size_t es = erase_dtype_size(a->op.dtype);
    char *buf = a->recv;
    ERASE_CHECK(buffer_reserve(&c->scratch, &c->scratch_bytes, chunk_len(count, n, 0) * es,
                               "all-reduce: a chunk"));
    int right = (int)((r + 1) % n), left = (int)((r + n - 1) % n);
    /* reduce-scatter: at step s send chunk r-s, receive chunk r-s-1 and add
     * it; after n-1 steps this rank holds chunk r+1 reduced over all ranks */
    for (size_t s = 0; s + 1 < n; s++) {
        size_t sc = (r + n - s) % n, rc = (r + 2 * n - s - 1) % n;
        ERASE_CHECK(exchange(c, buf + chunk_off(count, n, sc) * es,
                             chunk_len(count, n, sc) * es, right, c->scratch,
                             chunk_len(count, n, rc) * es, left, tag));
        reduce(a->op.dtype, a->op.reduce, buf + chunk_off(count, n, rc) * es, c->scratch,
               chunk_len(count, n, rc), s + 2 == n, c->size);
    }
    /* all-gather: at step s pass on chunk r+1-s, receive chunk r-s */
    for (size_t s = 0; s + 1 < n; s++) {
        size_t sc = (r + 1 + n - s) % n, rc = (r + n - s) % n;
        ERASE_CHECK(exchange(c, buf + chunk_off(count, n, sc) * es,
                             chunk_len(count, n, sc) * es, right,
                             buf + chunk_off(count, n, rc) * es, chunk_len(count, n, rc) * es,
                             left, tag));
    }
    return ERASE_OK;
}

/*
 * Power-of-two sizes: recursive halving reduce-scatter + recursive
 * doubling all-gather (Rabenseifner; R. Thakur, R. Rabenseifner and W.
 * Gropp, "Optimization of collective communication operations in MPICH",
 * IJHPCA 19(1), 2005), partners at distance 1 first. The buffer is cut
 * into n chunks (as the ring does); at step k (distance 2^k) rank r keeps
 * the half of its segment named by bit k of r, receives the partner's
 * copy of that half and adds it. After step k a kept element holds the
 * sum of the aligned group of 2^(k+1) ranks around r, formed as the sum
 * of its two aligned halves, so every element of the result is the same
 * pairwise tree over the ranks: ((x0 + x1) + (x2 + x3)) + ... . The local
 * gradient accumulation sums a rank's micro-batches in the same pairwise
 * tree (lib/sched/grad_accum.c), so the data-parallel gradient of n ranks
 * of A micro-batches each is the one tree over the n x A micro-batches,
 * whatever n (the rank-count invariance docs/accumulate.md states). The
 * same bytes on the wire as the ring, in log2(n) steps each way.
 */
static erase_status_t halving_allreduce(erase_comm_t *c, const comm_args_t *a, int tag)
{
    size_t count = a->op.count, n = (size_t)c->size, r = (size_t)c->rank;
    size_t es = erase_dtype_size(a->op.dtype);
    char *buf = a->recv;
    /* the largest half received is the first step's lower one */
    ERASE_CHECK(buffer_reserve(&c->scratch, &c->scratch_bytes, chunk_off(count, n, n / 2) * es,
                               "all-reduce: a half"));
    size_t lo = 0, hi = n; /* this rank's segment, in chunks */
    for (size_t mask = 1; mask < n; mask <<= 1) {
        size_t mid = lo + (hi - lo) / 2, klo = r & mask ? mid : lo, khi = r & mask ? hi : mid;
        size_t slo = r & mask ? lo : mid, shi = r & mask ? mid : hi;
        size_t keep = chunk_off(count, n, khi) - chunk_off(count, n, klo);
        ERASE_CHECK(exchange(c, buf + chunk_off(count, n, slo) * es,
                             (chunk_off(count, n, shi) - chunk_off(count, n, slo)) * es, (int)(r ^ mask),
                             c->scratch, keep * es, (int)(r ^ mask), tag));
        reduce(a->op.dtype, a->op.reduce, buf + chunk_off(count, n, klo) * es, c->scratch, keep, mask * 2 == n,
               c->size);
        lo = klo;
        hi = khi;
    }
    /* all-gather: the same pairs in reverse, each sending its segment and
     * receiving the sibling the partner reduced */
    for (size_t mask = n / 2; mask > 0; mask >>= 1) {
        size_t w = hi - lo, blo = r & mask ? lo - w : hi, bhi = blo + w;
        ERASE_CHECK(exchange(c, buf + chunk_off(count, n, lo) * es,
                             (chunk_off(count, n, hi) - chunk_off(count, n, lo)) * es, (int)(r ^ mask),
                             buf + chunk_off(count, n, blo) * es,
                             (chunk_off(count, n, bhi) - chunk_off(count, n, blo)) * es, (int)(r ^ mask), tag));
        lo = r & mask ? blo : lo;
        hi = r & mask ? hi : bhi;
    }
    return ERASE_OK;
}

/* recv = send; one rank's mean is its value; then the algorithm */
static erase_status_t allreduce(erase_comm_t *c, const comm_args_t *a, int tag)
{
    size_t count = a->op.count;
    if (count && a->send != a->recv)
        memmove(a->recv, a->send, count * erase_dtype_size(a->op.dtype));
    if (c->size == 1 || count == 0)
        return ERASE_OK;
    return comm_mpi_uses_ring(c) ? ring_allreduce(c, a, tag) : halving_allreduce(c, a, tag);
}

static erase_status_t tree_broadcast(erase_comm_t *c, const comm_args_t *a, int tag)
{
    size_t bytes = a->op.count * erase_dtype_size(a->op.dtype);
    int n = c->size, root = a->op.peer;
    int vr = (c->rank - root + n) % n; /* rank relative to the root */
    if (bytes == 0 || n == 1)
        return ERASE_OK;
    int mask = 1;
    while (mask < n) {
        if (vr & mask) {
            int src = (vr - mask + root) % n;
            ERASE_CHECK(exchange(c, NULL, 0, MPI_PROC_NULL, a->recv, bytes, src, tag));
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < n) {
            int dst = (vr + mask + root) % n;
            ERASE_CHECK(exchange(c, a->recv, bytes, dst, NULL, 0, MPI_PROC_NULL, tag));
        }
    return ERASE_OK;
}

/* Block i of an all-gather(v): elements and displacement. */
static size_t gather_count(const comm_args_t *a, int n, int i)
{
    return a->op.kind == COMM_OP_ALLGATHERV ? (size_t)a->vec[i] : (size_t)a->op.count;
}

static size_t gather_displ(const comm_args_t *a, int n, int i)
{
    return a->op.kind == COMM_OP_ALLGATHERV ? (size_t)a->vec[n + i]
                                            : (size_t)i * (size_t)a->op.count;
}

static erase_status_t ring_allgather(erase_comm_t *c, const comm_args_t *a, int tag)
{
    int n = c->size, r = c->rank;
    size_t es = erase_dtype_size(a->op.dtype);
    char *buf = a->recv;
    char *own = buf + gather_displ(a, n, r) * es;
    size_t own_bytes = gather_count(a, n, r) * es;
    if (own_bytes && (const void *)own != a->send)
        memmove(own, a->send, own_bytes);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    for (int s = 0; s + 1 < n; s++) {
        int sb = (r - s + n) % n, rb = (r - s - 1 + 2 * n) % n;
        ERASE_CHECK(exchange(c, buf + gather_displ(a, n, sb) * es,
                             gather_count(a, n, sb) * es, right,
                             buf + gather_displ(a, n, rb) * es, gather_count(a, n, rb) * es,
                             left, tag));
    }
    return ERASE_OK;
}

/* Block i of an all-to-all(v): which = 0 send counts, 1 send displs, 2 recv counts, 3 recv displs. */
static size_t a2a_get(const comm_args_t *a, int n, int which, int i)
{
    if (a->op.kind == COMM_OP_ALLTOALLV)
        return (size_t)a->vec[which * n + i];
    return (which & 1) ? (size_t)i * (size_t)a->op.count : (size_t)a->op.count;
}

static erase_status_t pairwise_alltoall(erase_comm_t *c, const comm_args_t *a, int tag)
{
    int n = c->size, r = c->rank;
    size_t es = erase_dtype_size(a->op.dtype);
    const char *sbuf = a->send;
    char *rbuf = a->recv;
    size_t own = a2a_get(a, n, 0, r) * es;
    if (own)
        memmove(rbuf + a2a_get(a, n, 3, r) * es, sbuf + a2a_get(a, n, 1, r) * es, own);
    for (int k = 1; k < n; k++) {
        int dst = (r + k) % n, src = (r - k + n) % n;
        ERASE_CHECK(exchange(c, sbuf + a2a_get(a, n, 1, dst) * es,
                             a2a_get(a, n, 0, dst) * es, dst, rbuf + a2a_get(a, n, 3, src) * es,
                             a2a_get(a, n, 2, src) * es, src, tag));
    }
    return ERASE_OK;
}

/* A count in [0, max] moves that many units; any other moves none. */
static size_t slot_units(int count, int max)
{
    return count >= 0 && count <= max ? (size_t)count : 0;
}

/* The first failure of a counted all-to-all is kept in *bad; the exchange
 * goes on so that no peer waits for messages that never come. */
static void slots_range(erase_status_t *bad, const char *dir, int count, int r, int k, int max)
{
    if (*bad == ERASE_OK && (count < 0 || count > max))
        *bad = ERASE_ERROR(ERASE_ERR_COMM, "counted all-to-all: %s count %d of rank %d slot %d is "
                           "outside [0, %d]", dir, count, r, k, max);
}

/* Likewise a peer's count that is not the one this rank expects. */
static void slots_match(erase_status_t *bad, int peer, int sent, int want, int k, size_t unit)
{
    if (sent != want && *bad == ERASE_OK)
        *bad = ERASE_ERROR(ERASE_ERR_COMM, "counted all-to-all: rank %d sends %d x %d elements in slot %d where "
                           "this rank expects %d", peer, sent, (int)unit, k, want);
}

/* erase_alltoall_slots (comm.h): pairwise; every step sends this rank's
 * counts for dst and receives src's for this rank, then the counted
 * prefixes packed by the sender's counts (out of range: none), which the
 * receiver checks against its recv_counts before unpacking. */
static erase_status_t slots_alltoall(erase_comm_t *c, const comm_args_t *a, int tag)
{
    int n = c->size, r = c->rank, slots = a->op.tag;
    if (slots == 0 || a->op.count == 0)
        return ERASE_OK;
    size_t es = erase_dtype_size(a->op.dtype), unit = (size_t)a->op.unit * es;
    size_t slot_bytes = (size_t)a->op.count / (size_t)slots * es;
    int max = (int)(slot_bytes / unit);
    const int *scnt = (const int *)(uintptr_t)a->vec[0], *rcnt = (const int *)(uintptr_t)a->vec[1];
    const char *sbuf = a->send;
    char *rbuf = a->recv;
    erase_status_t bad = ERASE_OK;
    for (int k = 0; k < slots; k++) { /* this rank's own block */
        int sc = scnt[(size_t)r * slots + k], rc = rcnt[(size_t)r * slots + k];
        size_t at = ((size_t)r * slots + k) * slot_bytes;
        slots_range(&bad, "send", sc, r, k, max);
        slots_range(&bad, "receive", rc, r, k, max);
        slots_match(&bad, r, sc, rc, k, a->op.unit);
        if (sc == rc && slot_units(sc, max))
            memmove(rbuf + at, sbuf + at, slot_units(sc, max) * unit);
    }
    if (n == 1)
        return bad;
    size_t hdr = sizeof(int) * (size_t)slots;
    ERASE_CHECK(buffer_reserve(&c->stage, &c->stage_bytes, hdr + 2 * (size_t)slots * slot_bytes,
                               "counted all-to-all: the staging buffer"));
    int *peer_cnt = c->stage;
    char *pack = (char *)c->stage + hdr, *unpack = pack + (size_t)slots * slot_bytes;
    for (int step = 1; step < n; step++) {
        int dst = (r + step) % n, src = (r - step + n) % n;
        const int *to = scnt + (size_t)dst * slots, *want = rcnt + (size_t)src * slots;
        ERASE_CHECK(exchange(c, to, hdr, dst, peer_cnt, hdr, src, tag));
        size_t sbytes = 0, rbytes = 0;
        for (int k = 0; k < slots; k++) {
            slots_range(&bad, "send", to[k], dst, k, max);
            size_t len = slot_units(to[k], max) * unit;
            memcpy(pack + sbytes, sbuf + ((size_t)dst * slots + k) * slot_bytes, len);
            sbytes += len;
            rbytes += slot_units(peer_cnt[k], max) * unit;
        }
        ERASE_CHECK(exchange(c, pack, sbytes, dst, unpack, rbytes, src, tag));
        size_t off = 0;
        for (int k = 0; k < slots; k++) {
            size_t len = slot_units(peer_cnt[k], max) * unit;
            slots_range(&bad, "receive", want[k], src, k, max);
            slots_match(&bad, src, peer_cnt[k], want[k], k, a->op.unit);
            if (peer_cnt[k] == want[k] && len)
                memcpy(rbuf + ((size_t)src * slots + k) * slot_bytes, unpack + off, len);
            off += len;
        }
    }
    return bad;
}

static erase_status_t dissemination_barrier(erase_comm_t *c, int tag)
{
    int n = c->size, r = c->rank;
    unsigned char token = 1, got = 0;
    for (int k = 1; k < n; k <<= 1)
        ERASE_CHECK(exchange(c, &token, 1, (r + k) % n, &got, 1, (r - k + n) % n, tag));
    return ERASE_OK;
}

erase_status_t comm_mpi_collective(erase_comm_t *c, const comm_args_t *a, int tag)
{
    switch ((comm_op_kind_t)a->op.kind) {
    case COMM_OP_ALLREDUCE: return allreduce(c, a, tag);
    case COMM_OP_BROADCAST: return tree_broadcast(c, a, tag);
    case COMM_OP_ALLGATHER:
    case COMM_OP_ALLGATHERV: return ring_allgather(c, a, tag);
    case COMM_OP_ALLTOALL:
    case COMM_OP_ALLTOALLV: return pairwise_alltoall(c, a, tag);
    case COMM_OP_ALLTOALL_SLOTS: return slots_alltoall(c, a, tag);
    case COMM_OP_BARRIER: return dissemination_barrier(c, tag);
    default: return ERASE_ERROR(ERASE_ERR_INVALID, "not a collective: %d", a->op.kind);
    }
}

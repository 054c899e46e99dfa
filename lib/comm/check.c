/*
 * The collective-sequence check (debug option): every rank hashes the
 * collectives it issued on a communicator since the last check; the ranks
 * all-gather (hash, count); on a difference they all-gather the whole logs
 * and every rank derives the same message naming the first mismatching rank
 * and operation. It runs on the host thread over the comm's `check`
 * duplicate, so it works while stream workers wait inside mismatched
 * collectives (the case it is for: ranks that would otherwise hang).
 */
#include "lib/comm/comm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two collectives are the same if every rank must issue them alike: the
 * count of an all-to-all-v is this rank's own and may differ. */
static int same_op(const comm_op_t *a, const comm_op_t *b)
{
    if (!a || !b)
        return a == b;
    return a->kind == b->kind && a->dtype == b->dtype && a->reduce == b->reduce &&
           a->peer == b->peer && (a->kind == COMM_OP_ALLTOALLV || a->count == b->count);
}

static uint64_t fnv1a(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t hash_log(const comm_op_t *log, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        const comm_op_t *o = &log[i];
        h = fnv1a(h, (uint64_t)o->kind | (uint64_t)o->dtype << 8 | (uint64_t)o->reduce << 16 |
                         (uint64_t)(uint32_t)o->peer << 32);
        h = fnv1a(h, o->kind == COMM_OP_ALLTOALLV ? 0 : o->count);
    }
    return h;
}

typedef struct {
    uint64_t hash, len, failed;
} check_summary_t;

/* Find the first entry where a rank differs from rank 0 and say so. */
static erase_status_t report_mismatch(erase_comm_t *c, const comm_op_t *all, const int *len,
                                      const int *displ)
{
    int n = c->size, maxlen = 0;
    for (int r = 0; r < n; r++)
        if (len[r] > maxlen)
            maxlen = len[r];
    for (int i = 0; i < maxlen; i++) {
        const comm_op_t *ref = i < len[0] ? &all[displ[0] + i] : NULL;
        for (int r = 1; r < n; r++) {
            const comm_op_t *cur = i < len[r] ? &all[displ[r] + i] : NULL;
            if (same_op(ref, cur))
                continue;
            char mine[160] = "nothing", theirs[160] = "nothing";
            if (cur)
                comm_op_describe(cur, mine, sizeof mine);
            if (ref)
                comm_op_describe(ref, theirs, sizeof theirs);
            unsigned long long seq = (unsigned long long)(ref ? ref->seq : cur->seq);
            return ERASE_ERROR(ERASE_ERR_COMM,
                               "rank %d issued %s as collective #%llu where rank 0 issued %s "
                               "(communicator %s)", r, mine, seq, theirs, c->name);
        }
    }
    return ERASE_OK; /* same entries: the hashes cannot have differed */
}

static erase_status_t check_run(erase_comm_t *c, comm_op_t *log, size_t len, int failed)
{
    int n = c->size;
    check_summary_t mine = { hash_log(log, len), len, (uint64_t)failed };
    check_summary_t *sum = malloc((size_t)n * sizeof *sum);
    int *counts = malloc((size_t)n * sizeof *counts);
    int *displ = malloc((size_t)n * sizeof *displ);
    comm_op_t *all = NULL;
    erase_status_t st = ERASE_OK;
    /* without these few bytes this rank cannot take part; the others wait
     * in the all-gather until the watchdog (or this rank's fatal) ends it */
    if (!sum || !counts || !displ) {
        free(sum);
        free(counts);
        free(displ);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "sequence check: no memory for %d ranks", n);
    }
    int rc = MPI_Allgather(&mine, 3, MPI_UINT64_T, sum, 3, MPI_UINT64_T, c->check);
    if (rc != MPI_SUCCESS) {
        st = comm_mpi_error(__FILE__, __LINE__, rc, "sequence check: MPI_Allgather");
        goto done;
    }
    int differ = 0;
    for (int r = 0; r < n; r++) {
        if (sum[r].failed) {
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "sequence check on %s: rank %d ran out of memory "
                             "recording its collectives", c->name, r);
            goto done;
        }
        differ |= sum[r].hash != sum[0].hash || sum[r].len != sum[0].len;
    }
    if (!differ)
        goto done;
    size_t total = 0;
    for (int r = 0; r < n; r++) {
        if (sum[r].len > (uint64_t)(INT32_MAX / (int)sizeof(comm_op_t))) {
            st = ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "sequence check on %s: rank %d issued %llu "
                             "collectives since the last check; too many to compare", c->name, r,
                             (unsigned long long)sum[r].len);
            goto done;
        }
        counts[r] = (int)(sum[r].len * sizeof(comm_op_t));
        displ[r] = (int)total;
        total += sum[r].len * sizeof(comm_op_t);
    }
    if (total > INT32_MAX) {
        st = ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "sequence check on %s: logs too large (%zu bytes)",
                         c->name, total);
        goto done;
    }
    /* a failed allocation here would leave the other ranks waiting: the
     * total is at most 2 GiB, and the process is going down anyway */
    all = malloc(total ? total : 1);
    if (!all) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "sequence check: no memory for %zu bytes", total);
        goto done;
    }
    rc = MPI_Allgatherv(log, (int)(len * sizeof(comm_op_t)), MPI_BYTE, all, counts, displ,
                        MPI_BYTE, c->check);
    if (rc != MPI_SUCCESS) {
        st = comm_mpi_error(__FILE__, __LINE__, rc, "sequence check: MPI_Allgatherv");
        goto done;
    }
    for (int r = 0; r < n; r++) { /* entries and displacements in comm_op_t units */
        counts[r] /= (int)sizeof(comm_op_t);
        displ[r] /= (int)sizeof(comm_op_t);
    }
    st = report_mismatch(c, all, counts, displ);
done:
    free(all);
    free(sum);
    free(counts);
    free(displ);
    return st;
}

erase_status_t erase_comm_check_sequence(erase_comm_t *c)
{
    if (!c)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_comm_check_sequence: no communicator");
    if (!comm_check_enabled)
        return ERASE_OK;
    /* take the log: collectives issued from now on belong to the next check */
    pthread_mutex_lock(&c->lock);
    comm_op_t *log = c->log;
    size_t len = c->log_len;
    int failed = c->log_failed;
    c->log = NULL;
    c->log_len = c->log_cap = 0;
    c->log_failed = 0;
    pthread_mutex_unlock(&c->lock);

    comm_op_t op = { .kind = COMM_OP_CHECK };
    int slot = comm_log_begin(c, &op); /* the watchdog covers a rank that never comes */
    erase_status_t st = check_run(c, log, len, failed);
    comm_log_end(c, slot, &op, st == ERASE_OK, NULL);
    free(log);
    return st;
}

#include "io/convert_ranks.h"

#include "lib/core/timer.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_PROGRESS 35
#define TAG_CONTROL 36 /* one int: STOP or FINAL */
#define STOP 1
#define FINAL 2
#define REASON_MAX 1024 /* bytes of a relayed error message */

erase_status_t erase_convert_ranks_init(erase_convert_ranks_t *r)
{
    memset(r, 0, sizeof *r);
    r->size = 1;
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (inited && !finalized) {
        r->mpi = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &r->size);
    }
    r->bytes = calloc((size_t)r->size, sizeof *r->bytes);
    r->lines = calloc((size_t)r->size, sizeof *r->lines);
    r->done = calloc((size_t)r->size, sizeof *r->done);
    if (!r->bytes || !r->lines || !r->done) {
        erase_convert_ranks_free(r);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %d ranks", r->size);
    }
    return ERASE_OK;
}

void erase_convert_ranks_free(erase_convert_ranks_t *r)
{
    free(r->bytes);
    free(r->lines);
    free(r->done);
    r->bytes = r->lines = NULL;
    r->done = NULL;
}

static void totals(const erase_convert_ranks_t *r, int64_t *all_bytes, int64_t *all_lines)
{
    *all_bytes = *all_lines = 0;
    for (int i = 0; i < r->size; i++) {
        *all_bytes += r->bytes[i];
        *all_lines += r->lines[i];
    }
}

/* Rank 0, a rank failed: every rank still at work stops. */
static void send_stop(erase_convert_ranks_t *r)
{
    r->stop = 1;
    if (r->stop_sent)
        return;
    r->stop_sent = 1;
    int m = STOP;
    for (int i = 1; i < r->size; i++)
        if (!r->done[i])
            MPI_Send(&m, 1, MPI_INT, i, TAG_CONTROL, MPI_COMM_WORLD);
}

/* Wait for a message from `source` with `tag` without spinning: MPI
 * libraries poll in a blocking receive, and a rank done early would take
 * a core from the ranks still converting (2 ranks on 2 cores: rank 0
 * waiting for rank 1 made the job slower than 1 rank). */
static void wait_message(int source, int tag)
{
    for (;;) {
        int flag = 0;
        MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag)
            return;
        struct timespec ts = { 0, 1000000 }; /* 1 ms: reports come at most once a second */
        nanosleep(&ts, NULL);
    }
}

/* Rank 0: record the reports that arrived (blocking: wait for one). */
static void receive(erase_convert_ranks_t *r, int blocking)
{
    for (;;) {
        int flag = 1;
        MPI_Status ms;
        if (blocking)
            wait_message(MPI_ANY_SOURCE, TAG_PROGRESS);
        else
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_PROGRESS, MPI_COMM_WORLD, &flag, &ms);
        if (!flag)
            return;
        int64_t m[3];
        MPI_Recv(m, 3, MPI_INT64_T, MPI_ANY_SOURCE, TAG_PROGRESS, MPI_COMM_WORLD, &ms);
        int from = ms.MPI_SOURCE;
        r->bytes[from] = m[0];
        r->lines[from] = m[1];
        r->done[from] = (int)m[2];
        if (m[2] == 2)
            send_stop(r);
        if (blocking)
            return;
    }
}

int erase_convert_ranks_report(erase_convert_ranks_t *r, int64_t bytes, int64_t lines, int done, int64_t *all_bytes,
                               int64_t *all_lines)
{
    if (r->rank != 0) {
        double now = erase_now_s();
        if (!done && now - r->last_sent < 1.0)
            return 0;
        r->last_sent = now;
        int64_t m[3] = { bytes, lines, done };
        MPI_Send(m, 3, MPI_INT64_T, 0, TAG_PROGRESS, MPI_COMM_WORLD);
        return 0;
    }
    r->bytes[0] = bytes;
    r->lines[0] = lines;
    r->done[0] = done;
    if (r->mpi && r->size > 1) {
        if (done == 2)
            send_stop(r);
        receive(r, 0);
    }
    totals(r, all_bytes, all_lines);
    return 1;
}

int erase_convert_ranks_wait(erase_convert_ranks_t *r, int64_t *all_bytes, int64_t *all_lines)
{
    if (r->rank != 0)
        return 0;
    int waiting = 0;
    for (int i = 1; i < r->size; i++)
        waiting += !r->done[i];
    if (!waiting)
        return 0;
    receive(r, 1);
    totals(r, all_bytes, all_lines);
    return 1;
}

int erase_convert_ranks_stopped(erase_convert_ranks_t *r)
{
    if (!r->mpi || r->size == 1 || r->stop)
        return r->stop;
    if (r->rank == 0) {
        receive(r, 0);
        return r->stop;
    }
    int flag = 0;
    MPI_Status ms;
    MPI_Iprobe(0, TAG_CONTROL, MPI_COMM_WORLD, &flag, &ms);
    if (flag) {
        int m;
        MPI_Recv(&m, 1, MPI_INT, 0, TAG_CONTROL, MPI_COMM_WORLD, &ms);
        r->stop = r->stop || m == STOP; /* FINAL comes only after erase_convert_ranks_finish begins */
    }
    return r->stop;
}

void erase_convert_ranks_finish(erase_convert_ranks_t *r)
{
    if (!r->mpi || r->size == 1)
        return;
    int m = FINAL;
    if (r->rank == 0) {
        for (int i = 1; i < r->size; i++)
            MPI_Send(&m, 1, MPI_INT, i, TAG_CONTROL, MPI_COMM_WORLD);
        return;
    }
    do {
        wait_message(0, TAG_CONTROL);
        MPI_Recv(&m, 1, MPI_INT, 0, TAG_CONTROL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } while (m != FINAL);
}

erase_status_t erase_convert_ranks_agree(erase_convert_ranks_t *r, erase_status_t st, int64_t where)
{
    if (!r->mpi || r->size == 1)
        return st;
    /* the failure of the lowest unit, ties the lower rank: key = where * size + rank */
    int64_t key = st == ERASE_OK ? INT64_MAX : (where < 0 ? 0 : where) * r->size + r->rank;
    int64_t first = erase_convert_ranks_min(r, key);
    if (first == INT64_MAX)
        return ERASE_OK;
    int root = (int)(first % r->size);
    struct {
        int32_t status;
        char reason[REASON_MAX];
    } m;
    memset(&m, 0, sizeof m);
    if (r->rank == root) {
        m.status = (int32_t)st;
        snprintf(m.reason, sizeof m.reason, "%s", erase_error_reason());
    }
    MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, root, MPI_COMM_WORLD);
    if (r->rank == root)
        return st;
    erase_error_clear();
    return ERASE_ERROR((erase_status_t)m.status, "%s", m.reason);
}

void erase_convert_ranks_sum(erase_convert_ranks_t *r, int64_t *v, int n)
{
    if (r->mpi && r->size > 1)
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

int64_t erase_convert_ranks_min(erase_convert_ranks_t *r, int64_t v)
{
    if (r->mpi && r->size > 1)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    return v;
}

void erase_convert_ranks_bcast(erase_convert_ranks_t *r, void *buf, int n, int root)
{
    if (r->mpi && r->size > 1)
        MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}

void erase_convert_ranks_allgather(erase_convert_ranks_t *r, const void *mine, void *all, int n)
{
    if (r->mpi && r->size > 1)
        MPI_Allgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, MPI_COMM_WORLD);
    else
        memcpy(all, mine, (size_t)n);
}

void erase_convert_ranks_barrier(erase_convert_ranks_t *r)
{
    if (r->mpi && r->size > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

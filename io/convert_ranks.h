/*
 * The ranks of a parallel conversion (`mpirun -np N erase-convert
 * criteo`): agreement on success or failure, sums of counts, and the
 * progress that rank 0 prints. Plain MPI on MPI_COMM_WORLD when the
 * program initialised MPI (erase-convert does when a launcher started
 * it); otherwise one rank and no MPI call, so the same code serves both.
 *
 * Progress: every rank but 0 sends rank 0 its bytes read and lines at
 * most once a second (point to point, tag 35, three int64: bytes, lines,
 * done) and a last message when its units are done; rank 0 receives them
 * while it converts and, once its own units are done, until every rank is
 * done. No collective runs before that, so ranks of unequal work never
 * wait for each other in the middle. A rank that fails reports it (done =
 * 2); rank 0 then tells every rank still at work to stop (tag 36, STOP),
 * so that a failure does not wait for the other ranks' whole work; once
 * all are done it sends each rank a last message (FINAL), which ends the
 * exchange with no message left in flight.
 */
#ifndef ERASE_IO_CONVERT_RANKS_H
#define ERASE_IO_CONVERT_RANKS_H

#include <stdint.h>

#include "lib/core/status.h"

typedef struct {
    int rank, size;
    int mpi;                /* MPI is initialised: collectives on MPI_COMM_WORLD */
    int64_t *bytes, *lines; /* rank 0: the last report of each rank [size] */
    int *done;              /* rank 0: ranks done [size] */
    double last_sent;       /* when this rank last sent a report */
    int stop;               /* a rank failed: stop converting */
    int stop_sent;          /* rank 0: STOP sent */
} erase_convert_ranks_t;

/* This process's rank and the number of ranks. Errors: ERASE_ERR_NOMEM. */
erase_status_t erase_convert_ranks_init(erase_convert_ranks_t *r);
void erase_convert_ranks_free(erase_convert_ranks_t *r);

/*
 * Progress of this rank (`bytes` of input consumed, `lines` read; `done`:
 * 0 at work, 1 its units converted, 2 failed). Other
 * ranks: send it to rank 0 if a second has passed since the last report
 * (always when `done`). Rank 0: record it and take the reports that have
 * arrived. Returns 1 on rank 0 (the totals in *all_bytes, *all_lines),
 * else 0.
 */
int erase_convert_ranks_report(erase_convert_ranks_t *r, int64_t bytes, int64_t lines, int done, int64_t *all_bytes,
                               int64_t *all_lines);

/* Take the messages that arrived (rank 0: reports; others: STOP); 1 if
 * a rank failed and this one should stop, else 0. Cheap (MPI_Iprobe). */
int erase_convert_ranks_stopped(erase_convert_ranks_t *r);

/* After the last report (and, on rank 0, erase_convert_ranks_wait until
 * 0): rank 0 sends FINAL to every rank, the others receive until FINAL. */
void erase_convert_ranks_finish(erase_convert_ranks_t *r);

/* Rank 0, its own units done: wait for the next report; 0 when every rank
 * is done (nothing waited for), else 1 with the totals. Other ranks: 0. */
int erase_convert_ranks_wait(erase_convert_ranks_t *r, int64_t *all_bytes, int64_t *all_lines);

/*
 * Agree on an outcome: every rank passes its status `st` (its message the
 * current error) and `where`, the unit it failed in (for ordering). If any
 * rank failed, every rank returns the status and message of the failure
 * in the lowest unit (ties: the lower rank), relayed by MPI; else ERASE_OK.
 */
erase_status_t erase_convert_ranks_agree(erase_convert_ranks_t *r, erase_status_t st, int64_t where);

/* Sum `n` int64 over the ranks, in place. */
void erase_convert_ranks_sum(erase_convert_ranks_t *r, int64_t *v, int n);

/* Minimum of `v` over the ranks. */
int64_t erase_convert_ranks_min(erase_convert_ranks_t *r, int64_t v);

/* Broadcast `n` bytes from rank `root`. */
void erase_convert_ranks_bcast(erase_convert_ranks_t *r, void *buf, int n, int root);

/* Gather `n` bytes of every rank into all [size * n] on every rank. */
void erase_convert_ranks_allgather(erase_convert_ranks_t *r, const void *mine, void *all, int n);

/* Wait until every rank gets here. */
void erase_convert_ranks_barrier(erase_convert_ranks_t *r);

#endif

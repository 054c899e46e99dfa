/*
 * The pipeline stage executor's state, shared by its files (internal to
 * lib/sched): pipe.c (set-up, actions, steps, drain), pipe_timing.c (the
 * compute and side streams' busy spans: bubble and time per action) and
 * pipe_local.c (--schedule local's batch ring, send buffers and weight
 * versions). Not part of the API (lib/sched/pipe.h).
 */
#ifndef ERASE_SCHED_PIPE_INTERNAL_H
#define ERASE_SCHED_PIPE_INTERNAL_H

#include "lib/sched/pipe.h"
#include "lib/sched/grad_accum.h"
#include "lib/sched/reduce.h"

enum { TAG_ACTIVATION = 1, TAG_GRADIENT = 2, TAG_PREDICT = 3, TAG_VERSION = 4 };

/* An activation slot: a replica and the micro-batch it holds. */
typedef struct {
    erase_network_t *net;
    erase_batch_t batch;            /* its micro-batch's inputs */
    int64_t micro;                  /* occupant (segment numbering), -1: none yet */
    int size;                       /* the occupant's samples (0: an empty micro-batch) */
    int64_t updates_at_forward;     /* the stage's UPDATEs issued before its forward */
    int pending;                    /* forwarded, not yet backwarded */
    int forwarded, backwarded, sent_act, sent_grad; /* events recorded at least once */
    erase_event_t *recv_done, *fwd_done, *act_sent, *grad_recvd, *bwd_done, *grad_sent;
    erase_event_t *early_done;      /* its early backwards (side stream) are done */
    int early;                      /* early_done recorded for the occupant */
} slot_t;

/* A step the host enqueued (erase_pipe_step) and has not yet waited for
 * (erase_pipe_wait): at most two, so that the host can enqueue step t+1
 * before it waits for step t; step i uses entry i mod 2. */
typedef struct {
    erase_event_t *origin;          /* its start on compute, before any wait */
    erase_event_t *done;            /* after its last action and the clock's copy */
    float *losses;                  /* device [blocks]: its mean losses */
    erase_optim_clock_t *clock;     /* the optimizer's clock at its end (copied on compute into pinned
                                       host memory: a pageable target would block the host on CUDA) */
    int samples;                    /* the samples this stage trained in it */
    int spans;                      /* its timing pairs: the first of tev after the older step's */
} pipe_step_t;

struct erase_pipe {
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_pipe_options_t o;
    erase_device_t *dev;
    int P, s, K, blocks;
    int accumulate;                 /* a: backwards per UPDATE (gpipe, 1f1b, local: M), the micro-batches
                                     * of an update's window: its embedding packs hold as many */
    int local;                      /* the local schedule: no gradient crosses a stage boundary */
    /* local: stage s runs in segment step t the batch of step t - s, kept
     * in a ring of s + 1 device copies (ring[i mod R] holds batch i) */
    int R;
    erase_batch_t *ring;            /* each one's size: the samples erase_network_batch_copy put there */
    int64_t cur;                    /* the batch the micro-batch offsets are of (-1: none) */
    const erase_batch_t *cur_batch;
    int step_samples;               /* samples this stage trained in the last step (0: a fill step) */
    /* local, s < P-1: a batch's activations leave in the next step (when
     * s+1 trains it), so they are copied out of the slots into one of two
     * send buffers [M x micro_size, width], each with the version of the
     * weights that computed them; a buffer is reused two batches later,
     * after its sends (send_free), which s+1 received a step before */
    float *send_buf[2];
    int64_t *send_version[2];
    erase_event_t *send_free[2], *send_ready;
    int send_used[2];
    int64_t *version_in;            /* local, device: the version s-1 sent with the step's batch */
    int64_t version_own;            /* this stage's updates when it received it */
    int version_pending;            /* version_in awaits its accounting */
    int64_t version_base;           /* the optimizer clock's step minus `updates` */
    /* the segment */
    pipe_schedule_t sc;
    int64_t seg_steps, seg_step, next;
    /* streams: compute; activations in / out; gradients in / out */
    erase_stream_t *compute, *act_in, *act_out, *grad_in, *grad_out;
    /* early backward inside the stage (gpipe, 1f1b): the segments before
     * its last cut, [first, tail), run their backward on `side` right
     * after their forward; BACKWARD runs [tail, last) */
    erase_stream_t *side;
    int tail;
    erase_event_t *side_done;       /* after the side stream's latest work */
    int side_used;
    slot_t *slots;
    sched_reduce_t *reduce;
    float *losses;                  /* device [blocks]: the mean losses of the step being enqueued */
    pipe_step_t steps[2];           /* steps in flight: issued - waited of them (<= 2) */
    int64_t issued, waited;         /* steps enqueued and waited for, since erase_pipe_create */
    const pipe_step_t *last;        /* the last step waited for (its losses, samples) */
    sched_accum_t *accum;           /* the micro-batches' gradients (grad_accum.h) */
    int window;                     /* micro-batches accumulated since the last UPDATE */
    int64_t updates;
    erase_batch_t eval_batch;       /* erase_pipe_predict's piece */
    /* the step's micro-batches: offsets [M + 1] into the rank's batch */
    int *offset;
    int step_size;
    /* timing: begin/end event pairs of the compute and side streams' actions */
    erase_event_t **tev;
    unsigned char *tkind;           /* [ntev / 2]: pipe_action_kind_t of each pair */
    int ntev, tev_used;
    int open_compute, open_side;    /* the open span's pair on each stream (-1: none) */
    double (*spans)[2];             /* scratch: the pairs as [begin, end] ms */
    int nspans;
    erase_event_t *origin;          /* a drain's start on compute */
    erase_optim_clock_t clock;
    erase_pipe_stats_t stats;
};

static inline int is_first(const erase_pipe_t *p) { return p->s == 0; }
static inline int is_last(const erase_pipe_t *p) { return p->s == p->P - 1; }

/* ---- pipe_timing.c ---- */

/* Record the begin (*open < 0: a new pair, its index into *open) or the
 * end (the pair *open, then closed) of a timing span of an action of
 * `kind` on stream s (each stream has at most one span open). Errors:
 * ERASE_ERR_NOMEM, the device's. */
erase_status_t pipe_mark_time_on(erase_pipe_t *p, erase_stream_t *s, pipe_action_kind_t kind, int *open);
/* The same on the compute stream. */
erase_status_t pipe_mark_time(erase_pipe_t *p, pipe_action_kind_t kind);
/* After the spans' work is done: the first n pairs (a step's, or a
 * drain's) against `origin` into p->stats (busy_ms, wall_ms, bubble,
 * action_ms); the younger pairs move to the front of tev. */
erase_status_t pipe_account_time(erase_pipe_t *p, erase_event_t *origin, int n);

/* ---- pipe_local.c (p->local) ---- */

/* The ring of s + 1 step batches, the version word and, s < P-1, the two
 * send buffers [M x micro_size, width] of the stage's output. Errors:
 * ERASE_ERR_NOMEM, ERASE_ERR_INVALID (a step of more than INT_MAX samples,
 * sizes that overflow). pipe_local_destroy frees what exists. */
erase_status_t pipe_local_create(erase_pipe_t *p);
void pipe_local_destroy(erase_pipe_t *p);
/* At the first forward of batch p->cur: the versions exchanged ahead of
 * its activations (see pipe_local.c). */
erase_status_t pipe_local_exchange_version(erase_pipe_t *p);
/* After the receive streams are synchronized: the lag of the batch whose
 * version arrived into p->stats. */
erase_status_t pipe_local_account_version(erase_pipe_t *p);

#endif

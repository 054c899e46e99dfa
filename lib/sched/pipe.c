/*
 * The pipeline stage executor (lib/sched/pipe.h): issues this stage's
 * action list, step by step, as ops on its compute stream and its four
 * point-to-point streams, with events for the slots' buffers. Its state
 * and the parts in pipe_timing.c and pipe_local.c: pipe_internal.h.
 */
#include "lib/sched/pipe_internal.h"

#include "lib/core/checked.h"
#include "lib/core/timer.h"
#include "lib/sched/trace.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x) ERASE_CHECK(x)

/* ---- set-up ---------------------------------------------------------------- */

static erase_status_t check_options(const erase_network_t *net, const erase_pipe_options_t *o)
{
    int blocks = erase_network_blocks(net);
    int P = erase_comm_size(o->pp);
    if (P < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: no pipeline group");
    if (!pipe_kind_name(o->kind))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: schedule %d (gpipe, 1f1b, paci or local)", (int)o->kind);
    if (o->micro_batches < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: %d micro-batches (expected >= 1)", o->micro_batches);
    if (o->micro_size < 1 || o->micro_size > erase_network_max_batch(net))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: micro-batches of %d samples (1 to the network's %d)",
                           o->micro_size, erase_network_max_batch(net));
    if (o->accumulate < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: accumulate %d (expected >= 1, or 0 for M)", o->accumulate);
    if (o->first < 0 || o->first >= o->last || o->last > blocks)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: stage blocks [%d, %d) of %d", o->first, o->last, blocks);
    int s = erase_comm_rank(o->pp);
    if ((s == 0) != (o->first == 0) || (s == P - 1) != (o->last == blocks))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: stage %d of %d holds blocks [%d, %d) of %d (stage 0 "
                           "starts at block 0, the last stage ends at the last block)", s, P, o->first, o->last,
                           blocks);
    int ends[2] = { o->first, o->last }; /* the stage's boundaries with other stages */
    for (int i = 0; i < 2; i++) {
        if (ends[i] == 0 || ends[i] == blocks)
            continue;
        int cut = erase_network_is_cut(net, ends[i]);
        if (cut && o->kind != PIPE_LOCAL)
            return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: boundary %d (before block %s) is a cut: a stage "
                               "boundary of gpipe, 1f1b or paci carries the gradient back (stages that begin "
                               "at cuts are --schedule local)", ends[i], erase_network_block_name(net, ends[i]));
        if (!cut && o->kind == PIPE_LOCAL)
            return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: boundary %d (before block %s) is attached: a stage "
                               "boundary of --schedule local must be a cut (only activations cross stages)",
                               ends[i], erase_network_block_name(net, ends[i]));
    }
    return ERASE_OK;
}

static erase_status_t slot_create(erase_pipe_t *p, slot_t *sl)
{
    sl->micro = -1;
    TRY(erase_network_create_replica(p->net, p->o.micro_size, &sl->net));
    TRY(erase_network_batch_alloc(sl->net, p->o.micro_size, &sl->batch));
    erase_event_t **ev[] = { &sl->recv_done, &sl->fwd_done, &sl->act_sent,
                             &sl->grad_recvd, &sl->bwd_done, &sl->grad_sent, &sl->early_done };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        TRY(erase_event_create(p->dev, ev[i]));
    return ERASE_OK;
}

static void slot_destroy(erase_pipe_t *p, slot_t *sl)
{
    erase_event_t *ev[] = { sl->recv_done, sl->fwd_done, sl->act_sent, sl->grad_recvd, sl->bwd_done, sl->grad_sent,
                            sl->early_done };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        erase_event_destroy(ev[i]);
    if (sl->net) {
        erase_network_batch_free(sl->net, &sl->batch);
        erase_network_destroy(sl->net);
    }
}

/* This stage's list for a segment of `steps` steps, into p->sc. */
static erase_status_t build_list(erase_pipe_t *p, int64_t steps)
{
    pipe_schedule_options_t so = { .kind = p->o.kind, .stages = p->P, .stage = p->s,
                                   .micro_batches = p->o.micro_batches, .accumulate = p->accumulate,
                                   .steps = steps };
    return pipe_schedule_build(&so, &p->sc);
}

/* The segment's start: its first step, no slot in use. */
static void start_segment(erase_pipe_t *p, int64_t steps)
{
    p->seg_steps = steps;
    p->seg_step = 0;
    p->next = 0;
    p->window = 0;
    p->cur = -1;
    p->version_base = p->clock.step - p->updates; /* the clock as read last (a resumed run's) */
    for (int k = 0; k < p->K; k++)
        p->slots[k].micro = -1;
}

static erase_status_t new_segment(erase_pipe_t *p, int64_t steps)
{
    pipe_schedule_free(&p->sc);
    memset(&p->sc, 0, sizeof p->sc);
    TRY(build_list(p, steps));
    if (p->sc.max_in_flight > p->K)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: the schedule keeps %d micro-batches in flight, the stage "
                           "has %d slots", p->sc.max_in_flight, p->K);
    start_segment(p, steps);
    return ERASE_OK;
}

erase_status_t erase_pipe_create(erase_network_t *net, erase_optimizer_t *opt, const erase_pipe_options_t *o,
                                 int64_t steps, erase_pipe_t **out)
{
    TRY(check_options(net, o));
    if (steps < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: a segment of %lld steps", (long long)steps);
    erase_pipe_t *p = calloc(1, sizeof *p);
    if (!p)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory");
    p->net = net;
    p->opt = opt;
    p->o = *o;
    p->dev = erase_network_device(net);
    p->P = erase_comm_size(o->pp);
    p->s = erase_comm_rank(o->pp);
    p->blocks = erase_network_blocks(net);
    p->accumulate = o->kind == PIPE_PACI ? (o->accumulate > 0 ? o->accumulate : o->micro_batches) : o->micro_batches;
    p->local = o->kind == PIPE_LOCAL;
    p->open_compute = p->open_side = -1;
    /* slots: the most micro-batches the first segment keeps in flight
     * (later ones are no longer: new_segment checks) */
    erase_status_t st = build_list(p, steps);
    if (st == ERASE_OK) {
        p->K = p->sc.max_in_flight > 0 ? p->sc.max_in_flight : 1;
        if (p->local) /* two: a micro-batch's receive and send overlap its neighbours' compute */
            p->K = 2;
        p->slots = calloc((size_t)p->K, sizeof *p->slots);
        p->offset = calloc((size_t)o->micro_batches + 1, sizeof *p->offset);
        if (!p->slots || !p->offset)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory for %d slots", p->K);
    }
    erase_stream_t **streams[] = { &p->compute, &p->act_in, &p->act_out, &p->grad_in, &p->grad_out };
    for (size_t i = 0; st == ERASE_OK && i < sizeof streams / sizeof streams[0]; i++)
        st = erase_stream_create(p->dev, streams[i]);
    p->tail = o->first;
    for (int b = o->first + 1; b < o->last; b++)
        if (erase_network_is_cut(net, b))
            p->tail = b;
    if (!o->early_backward || o->kind == PIPE_PACI)
        p->tail = o->first; /* paci: an early gradient would join the accumulation of an earlier update */
    if (st == ERASE_OK && p->tail > o->first)
        st = erase_stream_create(p->dev, &p->side);
    if (st == ERASE_OK && p->tail > o->first)
        st = erase_event_create(p->dev, &p->side_done);
    for (int k = 0; st == ERASE_OK && k < p->K; k++)
        st = slot_create(p, &p->slots[k]);
    if (st == ERASE_OK)
        st = erase_event_create(p->dev, &p->origin);
    if (st == ERASE_OK && p->local)
        st = pipe_local_create(p);
    if (st == ERASE_OK)
        st = erase_optimizer_read_clock(opt, &p->clock);
    if (st == ERASE_OK && o->trace)
        st = erase_device_trace_enable(p->dev, (size_t)1 << 18);
    if (st == ERASE_OK)
        st = erase_network_batch_alloc(net, erase_network_max_batch(net), &p->eval_batch);
    for (int i = 0; st == ERASE_OK && i < 2; i++) {
        pipe_step_t *ps = &p->steps[i];
        st = erase_event_create(p->dev, &ps->origin);
        if (st == ERASE_OK)
            st = erase_event_create(p->dev, &ps->done);
        if (st == ERASE_OK)
            st = erase_malloc(p->dev, sizeof(float) * (size_t)p->blocks, (void **)&ps->losses);
        if (st == ERASE_OK)
            st = erase_memset_sync(p->dev, ps->losses, 0, sizeof(float) * (size_t)p->blocks);
        if (st == ERASE_OK)
            st = erase_host_alloc(p->dev, sizeof *ps->clock, (void **)&ps->clock);
        if (st == ERASE_OK)
            *ps->clock = p->clock;
    }
    p->losses = p->steps[0].losses;
    p->last = &p->steps[0];
    /* the network's gradients accumulate the micro-batches': zero, and room
     * for the embedding rows of W micro-batches */
    int64_t rows64 = (int64_t)p->accumulate * o->micro_size;
    if (st == ERASE_OK)
        st = sched_accum_create(net, o->first, o->last, p->accumulate, o->micro_size, 0, &p->accum);
    if (st == ERASE_OK && erase_comm_size(o->dp) > 1)
        st = sched_reduce_create(net, o->dp, (int)rows64, &p->reduce);
    if (st == ERASE_OK)
        start_segment(p, steps);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        erase_pipe_destroy(p);
        return st;
    }
    p->stats.stage = p->s;
    p->stats.stages = p->P;
    p->stats.slots = p->K;
    p->stats.drift_bound = pipe_drift_bound(o->kind, p->P, p->s, p->accumulate);
    *out = p;
    return ERASE_OK;
}

void erase_pipe_destroy(erase_pipe_t *p)
{
    if (!p)
        return;
    erase_stream_t *streams[] = { p->compute, p->act_in, p->act_out, p->grad_in, p->grad_out, p->side };
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        if (streams[i])
            (void)erase_stream_synchronize(streams[i]);
    erase_event_destroy(p->side_done);
    erase_event_destroy(p->origin);
    for (int k = 0; p->slots && k < p->K; k++)
        slot_destroy(p, &p->slots[k]);
    free(p->slots);
    pipe_local_destroy(p);
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
        erase_stream_destroy(streams[i]);
    if (p->eval_batch.size)
        erase_network_batch_free(p->net, &p->eval_batch);
    sched_accum_destroy(p->accum);
    for (int i = 0; i < p->ntev; i++)
        erase_event_destroy(p->tev[i]);
    free(p->tev);
    free(p->tkind);
    free(p->spans);
    sched_reduce_destroy(p->reduce);
    for (int i = 0; i < 2; i++) {
        erase_event_destroy(p->steps[i].origin);
        erase_event_destroy(p->steps[i].done);
        erase_free(p->dev, p->steps[i].losses);
        if (p->steps[i].clock)
            erase_host_free(p->dev, p->steps[i].clock);
    }
    pipe_schedule_free(&p->sc);
    free(p->offset);
    free(p);
}

erase_stream_t *erase_pipe_stream(erase_pipe_t *p) { return p->compute; }

/* ---- actions ------------------------------------------------------------------- */

/* With --trace: the begin or end of an action's range on stream s. */
static erase_status_t mark(erase_pipe_t *p, erase_stream_t *s, const char *label, int begin)
{
    return p->o.trace ? erase_stream_mark(s, label, begin) : ERASE_OK;
}


/*
 * The ERASE method inside a stage: the backward of segment [b0, b1) of
 * slot sl's micro-batch (its last boundary b1 a cut inside the stage) on
 * the side stream, right after its forward, overlapping the next blocks'
 * forward; its gradients accumulated there. The segment holding the
 * stage's first block sends the input gradient to stage s-1 from here.
 */
static erase_status_t early_backward(erase_pipe_t *p, slot_t *sl, int64_t micro, int b0, int b1)
{
    erase_network_t *r = sl->net;
    TRY(erase_event_record(sl->early_done, p->compute)); /* the segment's forward */
    TRY(erase_stream_wait_event(p->side, sl->early_done));
    if (b0 == p->o.first && sl->sent_grad) /* the previous occupant's input gradient has left */
        TRY(erase_stream_wait_event(p->side, sl->grad_sent));
    TRY(pipe_mark_time_on(p, p->side, PIPE_BACKWARD, &p->open_side));
    TRY(mark(p, p->side, "backward (early)", 1));
    for (int b = b1 - 1; b >= b0; b--)
        TRY(erase_network_backward_block(r, b, p->side, &sl->batch));
    TRY(sched_accum_add(p->accum, sl->net, (int)(micro % p->accumulate), b0, b1, p->side));
    TRY(mark(p, p->side, "backward (early)", 0));
    TRY(pipe_mark_time_on(p, p->side, PIPE_BACKWARD, &p->open_side));
    TRY(erase_event_record(sl->early_done, p->side));
    TRY(erase_event_record(p->side_done, p->side));
    sl->early = 1;
    p->side_used = 1;
    if (b0 == p->o.first && !is_first(p) && !p->local) {
        int w;
        const float *g = erase_network_input_grad(r, p->o.first, &w);
        TRY(erase_stream_wait_event(p->grad_out, sl->early_done));
        TRY(mark(p, p->grad_out, "send gradient", 1));
        TRY(erase_send(p->o.pp, p->grad_out, g, (size_t)sl->size * (size_t)w, ERASE_DTYPE_F32, p->s - 1,
                       TAG_GRADIENT));
        TRY(mark(p, p->grad_out, "send gradient", 0));
        TRY(erase_event_record(sl->grad_sent, p->grad_out));
        sl->sent_grad = 1;
        p->stats.bytes_sent += (int64_t)sl->size * w * (int64_t)sizeof(float);
        p->stats.gradient_bytes += (int64_t)sl->size * w * (int64_t)sizeof(float);
    }
    return ERASE_OK;
}

/* Make batch i (segment numbering) the one whose micro-batches are cut:
 * the step's own (`batch`), or under local the ring's copy of step i's.
 * Micro-batch j of it takes samples [floor(j n / M), floor((j+1) n / M)). */
static erase_status_t use_batch(erase_pipe_t *p, int64_t i, const erase_batch_t *batch)
{
    if (i == p->cur)
        return ERASE_OK;
    if (p->local) {
        if (i < 0 || i > p->seg_step || i + p->R <= p->seg_step)
            return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: stage %d needs batch %lld in step %lld (it keeps %d)",
                               p->s, (long long)i, (long long)p->seg_step, p->R);
        batch = &p->ring[i % p->R];
    } else if (i != p->seg_step || !batch) {
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: stage %d's list forwards batch %lld in step %lld", p->s,
                           (long long)i, (long long)p->seg_step);
    }
    p->step_size = batch->size;
    int M = p->o.micro_batches;
    for (int j = 0; j <= M; j++)
        p->offset[j] = (int)((int64_t)j * p->step_size / M);
    p->cur = i;
    p->cur_batch = batch;
    return ERASE_OK;
}

static erase_status_t forward(erase_pipe_t *p, int64_t micro, const erase_batch_t *batch, float *outputs)
{
    TRY(use_batch(p, micro / p->o.micro_batches, batch));
    batch = p->cur_batch;
    int64_t j = micro % p->o.micro_batches;
    slot_t *sl = &p->slots[micro % p->K];
    if (sl->micro >= 0 && sl->micro + p->K != micro)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: slot %lld holds micro-batch %lld, needed for %lld",
                           (long long)(micro % p->K), (long long)sl->micro, (long long)micro);
    int first = p->offset[j], n = p->offset[j + 1] - p->offset[j];
    sl->micro = micro;
    sl->pending = 1;
    sl->size = n;
    sl->updates_at_forward = p->updates;
    if (p->local && j == 0)
        TRY(pipe_local_exchange_version(p));
    p->step_samples += n;
    if (n == 0)
        return ERASE_OK; /* every stage skips an empty micro-batch alike */
    erase_network_t *r = sl->net;
    int w;
    if (!is_first(p)) {
        float *in = erase_network_block_input(r, p->o.first, &w);
        if (sl->backwarded) /* the previous occupant's backward read the input */
            TRY(erase_stream_wait_event(p->act_in, sl->bwd_done));
        TRY(mark(p, p->act_in, "recv activation", 1));
        TRY(erase_recv(p->o.pp, p->act_in, in, (size_t)n * (size_t)w, ERASE_DTYPE_F32, p->s - 1, TAG_ACTIVATION));
        TRY(mark(p, p->act_in, "recv activation", 0));
        TRY(erase_event_record(sl->recv_done, p->act_in));
        TRY(erase_stream_wait_event(p->compute, sl->recv_done));
        p->stats.bytes_received += (int64_t)n * w * (int64_t)sizeof(float);
        p->stats.activation_bytes += (int64_t)n * w * (int64_t)sizeof(float);
    }
    if (sl->sent_act) /* the previous occupant's activation has left */
        TRY(erase_stream_wait_event(p->compute, sl->act_sent));
    TRY(pipe_mark_time(p, PIPE_FORWARD));
    TRY(mark(p, p->compute, "forward", 1));
    TRY(erase_network_batch_copy(r, p->compute, batch, first, n, &sl->batch));
    /* the micro-batch's share of the mean: n / N (paci: n / N x M / a, 1 / a for equal sizes) */
    float scale = (float)((double)n / (double)p->step_size * (double)p->o.micro_batches / (double)p->accumulate);
    erase_network_set_loss_scale(r, scale);
    sl->early = 0;
    for (int b = p->o.first, seg = p->o.first; b < p->o.last; b++) {
        TRY(erase_network_forward_block(r, b, p->compute, &sl->batch));
        if (b + 1 <= p->tail && erase_network_is_cut(r, b + 1)) { /* segment [seg, b] is complete */
            TRY(early_backward(p, sl, micro, seg, b + 1));
            seg = b + 1;
        }
    }
    TRY(erase_axpy(p->compute, (size_t)p->blocks, (float)((double)n / (double)p->step_size),
                   erase_network_losses(r), p->losses));
    if (is_last(p) && outputs) {
        const float *z = erase_network_head_output(r, p->blocks - 1, &w);
        TRY(erase_memcpy_async(p->compute, outputs + (size_t)first * (size_t)w, z,
                               sizeof(float) * (size_t)n * (size_t)w));
    }
    const float *y = is_last(p) ? NULL : erase_network_block_input(r, p->o.last, &w);
    if (y && p->local) { /* into the batch's send buffer: it leaves in the next step */
        float *to = p->send_buf[p->cur % 2] + (size_t)p->offset[j] * (size_t)w;
        TRY(erase_memcpy_async(p->compute, to, y, sizeof(float) * (size_t)n * (size_t)w));
        y = to;
    }
    TRY(mark(p, p->compute, "forward", 0));
    TRY(pipe_mark_time(p, PIPE_FORWARD));
    TRY(erase_event_record(sl->fwd_done, p->compute));
    sl->forwarded = 1;
    if (y) {
        TRY(erase_stream_wait_event(p->act_out, sl->fwd_done));
        TRY(mark(p, p->act_out, "send activation", 1));
        TRY(erase_send(p->o.pp, p->act_out, y, (size_t)n * (size_t)w, ERASE_DTYPE_F32, p->s + 1, TAG_ACTIVATION));
        TRY(mark(p, p->act_out, "send activation", 0));
        if (!p->local) { /* local: the send buffer's event (update) */
            TRY(erase_event_record(sl->act_sent, p->act_out));
            sl->sent_act = 1;
        }
        p->stats.bytes_sent += (int64_t)n * w * (int64_t)sizeof(float);
        p->stats.activation_bytes += (int64_t)n * w * (int64_t)sizeof(float);
    }
    return ERASE_OK;
}

static erase_status_t backward(erase_pipe_t *p, int64_t micro)
{
    slot_t *sl = &p->slots[micro % p->K];
    if (sl->micro != micro || !sl->pending)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: stage %d's list backwards micro-batch %lld, its slot holds "
                           "%lld", p->s, (long long)micro, (long long)sl->micro);
    int64_t drift = p->updates - sl->updates_at_forward;
    p->stats.drift[drift < ERASE_PIPE_MAX_DRIFT ? drift : ERASE_PIPE_MAX_DRIFT - 1]++;
    if (drift > p->stats.max_drift)
        p->stats.max_drift = (int)drift;
    p->stats.micro_batches++;
    sl->pending = 0;
    p->window++; /* empty micro-batches too: the list counts every backward */
    int region = (int)(micro % p->accumulate);
    int n = sl->size;
    if (n == 0)
        return ERASE_OK;
    erase_network_t *r = sl->net;
    int w;
    if (!is_last(p) && !p->local) {
        float *g = erase_network_input_grad(r, p->o.last, &w);
        if (sl->backwarded) /* the previous occupant's backward read it */
            TRY(erase_stream_wait_event(p->grad_in, sl->bwd_done));
        TRY(mark(p, p->grad_in, "recv gradient", 1));
        TRY(erase_recv(p->o.pp, p->grad_in, g, (size_t)n * (size_t)w, ERASE_DTYPE_F32, p->s + 1, TAG_GRADIENT));
        TRY(mark(p, p->grad_in, "recv gradient", 0));
        TRY(erase_event_record(sl->grad_recvd, p->grad_in));
        TRY(erase_stream_wait_event(p->compute, sl->grad_recvd));
        p->stats.bytes_received += (int64_t)n * w * (int64_t)sizeof(float);
        p->stats.gradient_bytes += (int64_t)n * w * (int64_t)sizeof(float);
        p->stats.gradient_receives++;
    }
    if (sl->sent_grad) /* the previous occupant's input gradient has left */
        TRY(erase_stream_wait_event(p->compute, sl->grad_sent));
    if (sl->sent_act) /* and this one's activation (the backward may reuse its buffer) */
        TRY(erase_stream_wait_event(p->compute, sl->act_sent));
    TRY(pipe_mark_time(p, PIPE_BACKWARD));
    TRY(mark(p, p->compute, "backward", 1));
    for (int b = p->o.last - 1; b >= p->tail; b--)
        TRY(erase_network_backward_block(r, b, p->compute, &sl->batch));
    TRY(sched_accum_add(p->accum, sl->net, region, p->tail, p->o.last, p->compute));
    TRY(mark(p, p->compute, "backward", 0));
    TRY(pipe_mark_time(p, PIPE_BACKWARD));
    if (sl->early) /* the slot is free once its early backwards are done too */
        TRY(erase_stream_wait_event(p->compute, sl->early_done));
    TRY(erase_event_record(sl->bwd_done, p->compute));
    sl->backwarded = 1;
    if (!is_first(p) && p->tail == p->o.first && !p->local) { /* else sent by the early backward */
        const float *g = erase_network_input_grad(r, p->o.first, &w);
        TRY(erase_stream_wait_event(p->grad_out, sl->bwd_done));
        TRY(mark(p, p->grad_out, "send gradient", 1));
        TRY(erase_send(p->o.pp, p->grad_out, g, (size_t)n * (size_t)w, ERASE_DTYPE_F32, p->s - 1, TAG_GRADIENT));
        TRY(mark(p, p->grad_out, "send gradient", 0));
        TRY(erase_event_record(sl->grad_sent, p->grad_out));
        sl->sent_grad = 1;
        p->stats.bytes_sent += (int64_t)n * w * (int64_t)sizeof(float);
        p->stats.gradient_bytes += (int64_t)n * w * (int64_t)sizeof(float);
    }
    return ERASE_OK;
}

/* The stage's optimizer step on its accumulated gradients, then zero them. */
static erase_status_t update(erase_pipe_t *p)
{
    if (p->side_used) /* the early backwards' accumulations */
        TRY(erase_stream_wait_event(p->compute, p->side_done));
    if (p->local && !is_last(p)) /* the batch's sends are all enqueued */
        TRY(erase_event_record(p->send_free[p->cur % 2], p->act_out));
    TRY(pipe_mark_time(p, PIPE_UPDATE));
    TRY(mark(p, p->compute, "update", 1));
    for (int b = p->o.first; b < p->o.last; b++)
        TRY(sched_accum_merge(p->accum, b, p->compute));
    TRY(erase_optimizer_begin_step(p->opt, p->compute));
    for (int b = p->o.first; b < p->o.last; b++)
        TRY(sched_reduce_and_check(p->reduce, p->net, p->opt, b, p->compute));
    for (int b = p->o.first; b < p->o.last; b++)
        TRY(erase_optimizer_update_block(p->opt, b, p->compute));
    for (int b = p->o.first; b < p->o.last; b++)
        TRY(sched_accum_zero(p->accum, b, p->compute));
    TRY(mark(p, p->compute, "update", 0));
    TRY(pipe_mark_time(p, PIPE_UPDATE));
    p->updates++;
    p->window = 0;
    return ERASE_OK;
}

static erase_status_t run_action(erase_pipe_t *p, const pipe_action_t *a, const erase_batch_t *batch, float *outputs)
{
    switch (a->kind) {
    case PIPE_FORWARD:
        return forward(p, a->micro, batch, outputs);
    case PIPE_BACKWARD:
        return backward(p, a->micro);
    case PIPE_UPDATE:
        return update(p);
    }
    return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: action %d", (int)a->kind);
}

/* ---- steps ---------------------------------------------------------------------- */

erase_status_t erase_pipe_step(erase_pipe_t *p, const erase_batch_t *batch, float *outputs)
{
    if (p->seg_step >= p->seg_steps)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: the segment's %lld steps are done (drain first)",
                           (long long)p->seg_steps);
    if (batch->size < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: a step of %d samples", batch->size);
    int M = p->o.micro_batches;
    if (((int64_t)batch->size + M - 1) / M > p->o.micro_size)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: a step of %d samples in %d micro-batches: more than "
                           "%d samples in one", batch->size, M, p->o.micro_size);
    int64_t in_flight = p->issued - p->waited;
    if (in_flight >= 2 || (in_flight == 1 && p->local))
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: %lld step%s in flight (at most %s: wait for the oldest "
                           "first)", (long long)in_flight, in_flight == 1 ? "" : "s",
                           p->local ? "one under local" : "two");
    pipe_step_t *ps = &p->steps[p->issued % 2];
    int spans0 = p->tev_used / 2;
    p->losses = ps->losses;
    TRY(erase_event_record(ps->origin, p->compute));
    TRY(erase_memset_async(p->compute, p->losses, 0, sizeof(float) * (size_t)p->blocks));
    p->step_samples = 0;
    if (p->local) { /* the step's batch waits in the ring for its turn (this step's on stage 0) */
        int k = (int)(p->seg_step % p->R);
        TRY(erase_network_batch_copy(p->net, p->compute, batch, 0, batch->size, &p->ring[k]));
    }
    while (p->next < p->sc.count && p->sc.actions[p->next].step == p->seg_step)
        TRY(run_action(p, &p->sc.actions[p->next++], batch, outputs));
    /* the clock as this step leaves it, before a step enqueued ahead
     * advances it */
    TRY(erase_memcpy_async(p->compute, ps->clock, erase_optimizer_clock(p->opt), sizeof *ps->clock));
    TRY(erase_event_record(ps->done, p->compute));
    ps->samples = p->step_samples;
    ps->spans = p->tev_used / 2 - spans0;
    p->seg_step++;
    p->issued++;
    return ERASE_OK;
}

/* Wait for the compute and receive streams, and with `sends` the send
 * streams too; the first sticky error. */
static erase_status_t wait_streams(erase_pipe_t *p, int sends)
{
    erase_stream_t *streams[] = { p->compute, p->act_in, p->grad_in, p->side, p->act_out, p->grad_out };
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < (sends ? 6 : 4); i++) {
        if (!streams[i])
            continue;
        erase_status_t si = erase_stream_synchronize(streams[i]);
        if (st == ERASE_OK)
            st = si;
    }
    return st;
}

static erase_status_t no_step_in_flight(const erase_pipe_t *p, const char *what)
{
    if (p->issued > p->waited)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: %s with %lld step%s in flight (wait for %s first)", what,
                           (long long)(p->issued - p->waited), p->issued - p->waited == 1 ? "" : "s",
                           p->issued - p->waited == 1 ? "it" : "them");
    return ERASE_OK;
}

int erase_pipe_in_flight(const erase_pipe_t *p) { return (int)(p->issued - p->waited); }

erase_status_t erase_pipe_wait(erase_pipe_t *p)
{
    if (p->issued == p->waited)
        return ERASE_ERROR(ERASE_ERR_STATE, "pipeline: no step in flight to wait for");
    pipe_step_t *ps = &p->steps[p->waited % 2];
    TRY(erase_event_synchronize(ps->done));
    if (p->issued == p->waited + 1) {
        /* nothing younger enqueued: every stream but the sends, as before
         * (a gradient sent in this step may be received in the next one
         * under paci; local's version word arrives on act_in) */
        TRY(wait_streams(p, 0));
        TRY(pipe_local_account_version(p));
    } else {
        /* the younger step runs on: only what failed so far (a receive
         * that failed still reaches its event, which compute waited for) */
        erase_stream_t *streams[] = { p->compute, p->act_in, p->grad_in, p->side, p->act_out, p->grad_out };
        for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
            if (streams[i])
                TRY(erase_stream_error(streams[i]));
    }
    TRY(pipe_account_time(p, ps->origin, ps->spans));
    p->clock = *ps->clock;
    p->last = ps;
    p->waited++;
    p->stats.steps++;
    return ERASE_OK;
}

erase_status_t erase_pipe_synchronize(erase_pipe_t *p)
{
    while (p->issued > p->waited)
        TRY(erase_pipe_wait(p));
    /* not the sends: a gradient sent in this step may be received in the
     * next one (paci), and the host's next collective must not wait for it */
    TRY(wait_streams(p, 0));
    TRY(pipe_local_account_version(p));
    TRY(pipe_account_time(p, p->origin, p->tev_used / 2)); /* a drain's actions */
    TRY(erase_optimizer_read_clock(p->opt, &p->clock));
    return ERASE_OK;
}

erase_status_t erase_pipe_read_losses(erase_pipe_t *p, float *out)
{
    TRY(erase_memcpy_sync(p->dev, out, p->last->losses, sizeof(float) * (size_t)p->blocks));
    return ERASE_OK;
}

/* Local: the batches this stage has not trained yet (its last s, those
 * of steps seg_step-s .. seg_step-1), one after another as its list has
 * them; their losses are not reported (a step's are). */
static erase_status_t drain_local(erase_pipe_t *p, int *in_flight)
{
    while (p->next < p->sc.count && p->sc.actions[p->next].micro / p->o.micro_batches < p->seg_step) {
        const pipe_action_t *a = &p->sc.actions[p->next++];
        TRY(run_action(p, a, NULL, NULL));
        if (a->kind == PIPE_UPDATE) {
            (*in_flight)++;
            TRY(wait_streams(p, 0));
            TRY(pipe_local_account_version(p));
        }
    }
    return ERASE_OK;
}

erase_status_t erase_pipe_drain(erase_pipe_t *p, int64_t steps)
{
    TRY(no_step_in_flight(p, "a drain"));
    double t0 = erase_now_s();
    int in_flight = 0;
    TRY(erase_event_record(p->origin, p->compute));
    if (p->local)
        TRY(drain_local(p, &in_flight));
    /* the micro-batches forwarded and not backwarded, oldest first (the
     * cool-down of every stage, so the messages match) */
    for (;;) {
        int64_t oldest = -1;
        for (int k = 0; k < p->K; k++) {
            slot_t *sl = &p->slots[k];
            if (sl->pending && (oldest < 0 || sl->micro < oldest))
                oldest = sl->micro;
        }
        if (oldest < 0)
            break;
        in_flight++;
        TRY(backward(p, oldest));
        if (p->window == p->accumulate)
            TRY(update(p));
    }
    if (p->window > 0)
        TRY(update(p));
    TRY(erase_pipe_synchronize(p));
    TRY(wait_streams(p, 1)); /* nothing left in flight */
    if (in_flight) {
        p->stats.drains++;
        p->stats.drain_ms += (erase_now_s() - t0) * 1e3;
    }
    return new_segment(p, steps);
}

erase_status_t erase_pipe_predict(erase_pipe_t *p, const erase_batch_t *batch, float *outputs)
{
    /* the network itself computes (its activations are not a slot's; its
     * gradients, the accumulators, are not touched by forwards), piece by
     * piece on the compute stream: receive, forward the stage, send */
    TRY(no_step_in_flight(p, "a prediction"));
    erase_network_t *r = p->net;
    erase_network_set_loss_scale(r, 1.0f);
    int piece = erase_network_max_batch(r);
    for (int first = 0; first < batch->size; first += piece) {
        int n = batch->size - first < piece ? batch->size - first : piece, w;
        float *in = is_first(p) ? NULL : erase_network_block_input(r, p->o.first, &w);
        if (in)
            TRY(erase_recv(p->o.pp, p->compute, in, (size_t)n * (size_t)w, ERASE_DTYPE_F32, p->s - 1, TAG_PREDICT));
        TRY(erase_network_batch_copy(r, p->compute, batch, first, n, &p->eval_batch));
        for (int b = p->o.first; b < p->o.last; b++)
            TRY(erase_network_forward_block(r, b, p->compute, &p->eval_batch));
        const float *y = is_last(p) ? NULL : erase_network_block_input(r, p->o.last, &w);
        if (y)
            TRY(erase_send(p->o.pp, p->compute, y, (size_t)n * (size_t)w, ERASE_DTYPE_F32, p->s + 1, TAG_PREDICT));
        else if (outputs) {
            const float *z = erase_network_head_output(r, p->blocks - 1, &w);
            TRY(erase_memcpy_async(p->compute, outputs + (size_t)first * (size_t)w, z,
                                   sizeof(float) * (size_t)n * (size_t)w));
        }
    }
    TRY(erase_stream_synchronize(p->compute));
    return ERASE_OK;
}

int erase_pipe_step_samples(const erase_pipe_t *p) { return p->issued > 0 ? p->last->samples : 0; }

void erase_pipe_stats(const erase_pipe_t *p, erase_pipe_stats_t *out)
{
    *out = p->stats;
    size_t bytes = 0;
    for (int k = 0; k < p->K; k++)
        bytes += erase_network_device_bytes(p->slots[k].net);
    out->slot_bytes = bytes;
}

void erase_pipe_reset_stats(erase_pipe_t *p)
{
    erase_pipe_stats_t keep = { .stage = p->stats.stage, .stages = p->stats.stages, .slots = p->stats.slots,
                                .drift_bound = p->stats.drift_bound };
    p->stats = keep;
}

erase_optim_clock_t erase_pipe_clock(const erase_pipe_t *p) { return p->clock; }

int erase_pipe_nonfinite_block(erase_pipe_t *p)
{
    return p->clock.nonfinite - 1;
}

static const char *const stream_names[] = { "compute", "act_in", "act_out", "grad_in", "grad_out", "side" };

size_t erase_pipe_trace_collect(erase_pipe_t *p, erase_trace_record_t *out, size_t max)
{
    erase_stream_t *streams[] = { p->compute, p->act_in, p->act_out, p->grad_in, p->grad_out, p->side };
    return erase_trace_collect(p->dev, streams, ERASE_PIPE_STREAMS, out, max);
}

const char *erase_pipe_stream_name(int k)
{
    return k >= 0 && k < ERASE_PIPE_STREAMS ? stream_names[k] : NULL;
}

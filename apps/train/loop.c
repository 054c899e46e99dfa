/*
 * erase-train's training loop (apps/train/run_state.h): each step is
 * enqueued (issue_step), may be followed by the next before it is
 * finished (may_look_ahead), and is finished (finish_step): its time,
 * scores, losses, progress line, evaluation and checkpoint.
 */
#include "apps/train/run_state.h"

#include "io/checkpoint.h"
#include "lib/core/checked.h"
#include "lib/core/timer.h"

#include <stdio.h>
#include <string.h>

/* The last step's per-block mean losses [blocks] on this rank: the
 * network's, or in a pipeline its stage's blocks' (others 0; the log
 * window's sums are added over the pipeline group in run_log_progress, not
 * every step: a per-step collective would hold every stage at every
 * step's end until the slowest is done, its idle time out of the
 * stream's wall). */
static erase_status_t read_losses(run_t *r, float *losses)
{
    return r->pipe ? erase_pipe_read_losses(r->pipe, losses) : erase_sched_read_losses(r->sched, losses);
}

/* A step whose gradients were not finite updated nothing (lib/sched);
 * every rank found it alike, so every rank stops or goes on alike. */
static erase_status_t check_nonfinite(run_t *r)
{
    int b = r->pipe ? erase_pipe_nonfinite_block(r->pipe) : erase_sched_nonfinite_block(r->sched);
    if (r->pipe && b >= 0)
        /* a stage checks its own blocks only (paci and local pass no
         * gradient that would carry the NaN to the other stages): they
         * cannot know, and this stage's messages in flight will not
         * complete, so it ends the job now (MPI_Abort) rather than wait
         * for a step collective every step to tell them */
        erase_fatal(__FILE__, __LINE__, "erase-train",
                    ERASE_ERROR(ERASE_ERR_INVALID, "step %lld: non-finite gradient in block %s (stage %d); stopping "
                                "the pipeline before any further update", (long long)r->step,
                                erase_network_block_name(r->net, b), r->w->pp_rank));
    if (b < 0)
        return ERASE_OK;
    float losses[ERASE_MAX_BLOCKS]; /* this rank's (a pipeline's other stages may have found none) */
    TRY(read_losses(r, losses));
    if (!strcmp(r->o->nonfinite, "skip")) {
        r->skipped++;
        r->window_skipped++;
        if (r->root)
            printf("%sstep %lld skipped: non-finite gradient in block %s (its loss %g)\n", r->tty ? "\r\033[K" : "",
                   (long long)r->step, erase_network_block_name(r->net, b), (double)losses[b]);
        return ERASE_OK;
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "step %lld: non-finite gradient in block %s (its loss on rank %d: %g); "
                       "stopping before any further update (--nonfinite skip would skip such steps)",
                       (long long)r->step, erase_network_block_name(r->net, b), r->w->rank, (double)losses[b]);
}

/* The head outputs of step i: each step in flight has its own buffer. */
static float *outputs_of(const run_t *r, int64_t i)
{
    return i % 2 && r->outputs_ahead ? r->outputs_ahead : r->outputs;
}

/* Start --trace's window: forget the warm-up's records and take one
 * origin for every rank. Nothing in flight (may_look_ahead). */
static erase_status_t trace_start(run_t *r)
{
    TRY(run_synchronize(r));
    erase_trace_record_t scratch[64];
    while (run_trace_collect(r, scratch, 64) == 64)
        ; /* forget the warm-up's records */
    /* one timeline for every rank: rank 0's time now on the wall clock is
     * the origin (stages reach a step at different times; each rank's own
     * origin put them milliseconds apart) */
    int64_t offset = erase_wall_offset_ns(), origin = erase_now_ns() + offset;
    TRY(erase_broadcast(erase_world_comm(), r->host, &origin, 1, ERASE_DTYPE_I64, 0));
    TRY(erase_stream_synchronize(r->host));
    r->trace_t0 = origin - offset;
    return ERASE_OK;
}

/*
 * Read the next batch and enqueue its step (step r->issued); *ended: the
 * reader's epoch ended instead (r->epoch_end, nothing enqueued). With a
 * step enqueued ahead the batch's host copy is kept (r->held) for the
 * scoring of its outputs, since the reader reuses its memory at its next
 * call, and that call first waits for the copy into the device buffers.
 */
static erase_status_t issue_step(run_t *r, int *ended)
{
    *ended = 0;
    if (r->ahead) /* the last load has read the reader's and the task's host memory */
        TRY(erase_event_synchronize(r->loaded));
    erase_reader_batch_t b;
    TRY(erase_reader_next(r->train, &b));
    if (b.end_of_epoch) {
        r->epoch_end = b.epoch + 1;
        *ended = 1;
        return ERASE_OK;
    }
    if (r->o->trace[0] && r->issued == r->trace_from)
        TRY(trace_start(r));
    train_ckpt_log_samples(r->ckpt, &b);
    in_flight_t *f = &r->in_flight[r->issued % 2];
    f->traffic = r->shard && r->issued >= r->warmup; /* like QPS, after the warm-up */
    if (f->traffic) /* the last step and evaluation have ended: what follows is this step's */
        TRY(erase_embed_shard_traffic(r->shard, &f->bytes0, &f->emb_s0));
    f->issued_s = erase_now_s();
    TRY(run_load_batch(r, &b));
    if (r->ahead)
        TRY(erase_event_record(r->loaded, run_main_stream(r)));
    if (r->pipe)
        TRY(erase_pipe_step(r->pipe, &r->batch, run_has_outputs(r) ? outputs_of(r, r->issued) : NULL));
    else
        TRY(erase_sched_step(r->sched, &r->batch));
    if (r->held) {
        TRY(train_batch_ring_push(r->held, &b));
        b = *train_batch_ring_get(r->held, 0);
    }
    f->b = b;
    r->issued++;
    return ERASE_OK;
}

/*
 * May the host enqueue step r->issued before it finishes step r->step
 * (pipelines but local, r->ahead)? Not when what follows step r->step
 * needs the pipeline quiet: the end, an evaluation, a periodic checkpoint,
 * --trace's window, the end of an epoch; and not when a rank got a
 * signal (train_ckpt_poll: collective, so every rank decides alike).
 */
static erase_status_t may_look_ahead(run_t *r, int *ok)
{
    const train_options_t *o = r->o;
    int64_t done = r->step + 1; /* steps finished once the one in flight is */
    *ok = 0;
    if (!r->ahead || r->issued != done || r->issued >= r->total_steps || r->epoch_end)
        return ERASE_OK;
    if ((o->eval_every > 0 && done % o->eval_every == 0) || train_ckpt_due(r->ckpt, done) ||
        (o->trace[0] && (r->issued == r->trace_from || done == r->trace_to)))
        return ERASE_OK;
    int stop;
    TRY(train_ckpt_poll(r->ckpt, done, &stop));
    *ok = !stop;
    return ERASE_OK;
}

/* Wait for step r->step (the oldest in flight) and do what follows it:
 * its time, scores, losses, progress, evaluation and checkpoint. */
static erase_status_t finish_step(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t t = r->step;
    in_flight_t *f = &r->in_flight[t % 2];
    const erase_reader_batch_t *b = &f->b;
    if (r->pipe)
        TRY(erase_pipe_wait(r->pipe));
    else
        TRY(run_synchronize(r));
    /* with a step enqueued ahead, a step's time begins when the one before ended */
    double now = erase_now_s();
    r->step_s[t] = now - (f->issued_s > r->done_s ? f->issued_s : r->done_s);
    r->done_s = now;
    if (f->traffic) {
        int64_t bytes1 = 0;
        double emb_s1 = 0;
        TRY(erase_embed_shard_traffic(r->shard, &bytes1, &emb_s1));
        r->emb_traffic.steps++;
        r->emb_traffic.bytes += bytes1 - f->bytes0;
        r->emb_traffic.seconds += emb_s1 - f->emb_s0;
        r->emb_traffic.step_seconds += r->step_s[t];
    }
    r->step++;
    if (r->pipe && r->step == r->warmup) /* its bubble, like QPS, after the warm-up */
        erase_pipe_stats(r->pipe, &r->pipe_warm);
    r->samples_seen += b->global_size;
    r->window_global += b->global_size;
    TRY(check_nonfinite(r));
    if (!r->pipe)
        TRY(run_read_outputs(r, (int)b->size, 1));
    const erase_reader_batch_t *scored = b; /* the batch the outputs are of */
    if (r->behind) {
        TRY(train_batch_ring_push(r->behind, b));
        scored = erase_pipe_step_samples(r->pipe) ? train_batch_ring_get(r->behind, r->w->pp_size - 1) : NULL;
    }
    if (run_has_outputs(r) && scored)
        r->task->add(r->ts, TRAIN_TASK_WINDOW, outputs_of(r, t), r->width, scored);
    float losses[ERASE_MAX_BLOCKS];
    TRY(read_losses(r, losses)); /* a pipeline stage's own blocks' (summed over the stages at the log) */
    int blocks = erase_network_blocks(r->net);
    int from = r->pipe ? r->pipe_o.first : 0, to = r->pipe ? r->pipe_o.last : blocks;
    int trained = !r->pipe || erase_pipe_step_samples(r->pipe) > 0; /* local: not a fill step */
    for (int k = 0; k < blocks; k++)
        r->block.loss[k] += losses[k];
    for (int k = from; k < to; k++)
        r->block.steps[k] += trained;
    r->window_steps++;
    if (o->trace[0] && r->step == r->trace_to)
        TRY(run_write_trace(r, r->trace_t0));
    TRY(run_log_progress(r, 0));
    if (o->eval_every > 0 && r->step % o->eval_every == 0)
        TRY(run_evaluate(r));
    /* every N steps and on SIGTERM/SIGINT/SIGUSR1 (all ranks agree): a checkpoint */
    TRY(train_ckpt_after_step(r->ckpt, &(train_ckpt_pos_t){ r->step, r->epoch, r->samples_seen }, &r->stopped));
    if (r->root)
        run_metrics_written(r, 0); /* a checkpoint's record counts as whole too */
    return ERASE_OK;
}

erase_status_t run_train_loop(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t left = r->total_steps - r->first_step, more, end;
    /* the samples seen at the end still fit a checkpoint (a resumed run
     * starts from its checkpoint's count): refused before the first step,
     * not at the first checkpoint */
    if (left > 0 && (!erase_mul_i64(left, r->global_batch, &more) || !erase_add_i64(r->samples_seen, more, &end) ||
                     end > ERASE_CKPT_SAMPLES_MAX))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%lld step%s of global batch %lld after %lld samples seen would count "
                           "more than %lld samples, the most a checkpoint holds", (long long)left, left == 1 ? "" : "s",
                           (long long)r->global_batch, (long long)r->samples_seen, (long long)ERASE_CKPT_SAMPLES_MAX);
    r->warmup = r->first_step + (left >= 20 ? 5 : left / 4);
    /* a run shorter than the warm-up and --trace-steps traces what it has */
    r->trace_from = r->warmup;
    r->trace_to = o->trace_steps > r->total_steps - r->warmup ? r->total_steps : r->warmup + o->trace_steps;
    r->issued = r->step;
    r->t_start = erase_now_s();
    while (r->step < r->total_steps) {
        int ended;
        if (r->issued == r->step && r->epoch_end) {
            r->epoch = r->epoch_end;
            r->epoch_end = 0;
            if (o->eval_every == 0)
                TRY(run_evaluate(r));
            if (o->steps == 0 && r->epoch >= o->epochs)
                break;
            continue;
        }
        if (r->issued == r->step) {
            TRY(issue_step(r, &ended));
            if (ended)
                continue;
        }
        int ahead;
        TRY(may_look_ahead(r, &ahead));
        if (ahead)
            TRY(issue_step(r, &ended)); /* an epoch's end waits until this step is finished */
        TRY(finish_step(r));
        if (r->stopped)
            return run_log_progress(r, 1);
    }
    if (r->pipe) /* paci: what the epochs' end left in flight */
        TRY(erase_pipe_drain(r->pipe, 1));
    TRY(train_ckpt_final(r->ckpt, &(train_ckpt_pos_t){ r->step, r->epoch, r->samples_seen }));
    if (r->root)
        run_metrics_written(r, 0);
    TRY(run_log_progress(r, 1));
    if (r->evals == 0 || r->eval_step != r->step) /* the trained model is always evaluated */
        TRY(run_evaluate(r));
    return ERASE_OK;
}

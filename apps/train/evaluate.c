/*
 * erase-train's batches and outputs (a batch into the task's device
 * buffers, the head output back to the host), the metrics' sums over the
 * ranks, and the evaluation pass (apps/train/run_state.h).
 */
#include "apps/train/run_state.h"

#include "apps/train/json.h"
#include "lib/core/timer.h"

#include <stdio.h>

erase_status_t run_load_batch(run_t *r, const erase_reader_batch_t *b)
{
    return r->task->load(r->ts, run_main_stream(r), b, &r->batch);
}

erase_status_t run_read_outputs(run_t *r, int n, int step)
{
    int width;
    const float *z = step ? erase_sched_head_output(r->sched, &width)
                          : erase_network_head_output(r->net, erase_network_blocks(r->net) - 1, &width);
    erase_stream_t *s = run_main_stream(r);
    TRY(erase_memcpy_async(s, r->outputs, z, (size_t)n * (size_t)width * sizeof(float)));
    TRY(erase_stream_synchronize(s));
    return ERASE_OK;
}

erase_status_t run_reduce_metrics(run_t *r, train_task_part_t part)
{
    size_t words;
    int64_t *m = r->task->sums(r->ts, part, &words);
    TRY(erase_allreduce(run_metrics_comm(r), r->host, m, m, words, ERASE_DTYPE_I64, ERASE_REDUCE_SUM));
    TRY(erase_stream_synchronize(r->host));
    r->task->summarize(r->ts, part);
    return ERASE_OK;
}

erase_status_t run_evaluate(run_t *r)
{
    /* local: stage s is s batches behind stage 0; drained, the stages
     * hold the weights the model trained on one rank would */
    if (r->pipe && r->pipe_o.kind == PIPE_LOCAL)
        TRY(erase_pipe_drain(r->pipe, r->total_steps - r->step > 0 ? r->total_steps - r->step : 1));
    double t0 = erase_now_s();
    r->task->clear(r->ts, TRAIN_TASK_EVAL);
    erase_status_t st = erase_reader_seek(r->eval, (erase_reader_cursor_t){ 0, 0 });
    erase_stream_t *s = run_main_stream(r);
    TRY(run_synchronize(r));
    while (st == ERASE_OK) {
        erase_reader_batch_t b;
        st = erase_reader_next(r->eval, &b);
        if (st != ERASE_OK || b.end_of_epoch)
            break;
        if (b.size > 0) /* else this rank's share of the last batch is empty */
            st = run_load_batch(r, &b);
        if (b.size > 0 && st == ERASE_OK && r->pipe)
            st = erase_pipe_predict(r->pipe, &r->batch, run_has_outputs(r) ? r->outputs : NULL);
        else if (b.size > 0 && st == ERASE_OK)
            st = erase_network_forward_predict(r->net, s, &r->batch);
        else if (st == ERASE_OK && r->shard) { /* sharded tables: every rank takes part in every all-to-all */
            erase_batch_t none = r->batch;
            none.size = 0;
            st = erase_network_forward_predict(r->net, s, &none);
        }
        if (b.size > 0 && st == ERASE_OK && !r->pipe)
            st = run_read_outputs(r, (int)b.size, 0);
        if (b.size > 0 && st == ERASE_OK && run_has_outputs(r))
            r->task->add(r->ts, TRAIN_TASK_EVAL, r->outputs, r->width, &b);
        if (r->score && st == ERASE_OK) /* collective: every global batch, an empty share too */
            st = r->score->batch(r->score->ctx, r->outputs, &b);
    }
    if (st == ERASE_OK)
        st = run_reduce_metrics(r, TRAIN_TASK_EVAL);
    if (st == ERASE_OK) {
        r->evals++;
        r->eval_step = r->step;
        double sec = erase_now_s() - t0;
        r->eval_s += sec;
        if (r->root) {
            printf("%seval   step %lld: ", r->tty ? "\r\033[K" : "", (long long)r->step);
            r->task->eval_print(r->ts, stdout);
            printf(" in %.3f s\n", sec);
            fflush(stdout);
            if (r->metrics) {
                json_line_start(r->metrics, "eval", r->step, r->samples_seen);
                if (!r->o->eval_only) /* the training's epoch: none to tell */
                    fprintf(r->metrics, ",\"epoch\":%lld", (long long)r->epoch);
                r->task->eval_json(r->ts, r->metrics);
                fprintf(r->metrics, ",\"seconds\":%.6f}\n", sec);
                run_metrics_written(r, 0);
            }
        }
    }
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    return st;
}

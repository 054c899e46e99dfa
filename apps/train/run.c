/*
 * erase-train's run, the same for every model: train_run and train_score
 * (apps/train/run.h), which set the run up (setup.c), train (loop.c) or
 * evaluate only (evaluate.c), report (report.c) and free it; and the step's
 * executor, the scheduler or the pipeline stage. What is specific to a
 * kind of data and model (row format, device batch, metrics and their
 * lines) is the model's task (apps/train/task.h). Rank 0 prints; every
 * rank trains its share of each global batch (the reader splits it) and
 * joins every collective. The run's state: apps/train/run_state.h.
 */
#include "apps/train/run_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

erase_stream_t *run_main_stream(const run_t *r)
{
    return r->pipe ? erase_pipe_stream(r->pipe) : erase_sched_main_stream(r->sched);
}

erase_status_t run_synchronize(run_t *r)
{
    return r->pipe ? erase_pipe_synchronize(r->pipe) : erase_sched_synchronize(r->sched);
}

size_t run_trace_collect(run_t *r, erase_trace_record_t *out, size_t max)
{
    return r->pipe ? erase_pipe_trace_collect(r->pipe, out, max) : erase_sched_trace_collect(r->sched, out, max);
}

int run_has_outputs(const run_t *r)
{
    return !r->pipe || r->w->pp_rank == r->w->pp_size - 1;
}

erase_comm_t *run_metrics_comm(const run_t *r)
{
    return r->pipe ? erase_world_comm() : erase_dp_comm();
}

/* The first of the launchers' variables `vars` that is set, as a number;
 * -1 when none is. */
static int launcher_value(const char *const *vars, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return -1;
}

int train_launcher_rank(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID" };
    return launcher_value(vars, sizeof vars / sizeof vars[0]);
}

int train_launcher_size(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS" };
    return launcher_value(vars, sizeof vars / sizeof vars[0]);
}

/* Evaluation only: one evaluation pass (with erase-score's hooks around
 * it), reported at the checkpoint's step. */
static erase_status_t eval_only(run_t *r)
{
    r->step = r->ckpt_step;
    if (r->score) {
        train_score_env_t env = { .w = r->w, .host = r->host, .task = r->task, .width = r->width,
                                  .samples = erase_reader_info(r->eval).samples,
                                  .ckpt_path = r->ckpt_path, .ckpt_step = r->ckpt_step };
        TRY(r->score->begin(r->score->ctx, &env));
    }
    TRY(run_evaluate(r));
    run_summary_eval_only(r, r->eval_s);
    if (r->score)
        TRY(r->score->end(r->score->ctx));
    return ERASE_OK;
}

erase_status_t train_run(const train_options_t *o, const erase_world_t *w, int *alike)
{
    return train_score(o, NULL, w, alike);
}

erase_status_t train_score(const train_options_t *given, const train_score_hooks_t *hooks, const erase_world_t *w,
                           int *alike)
{
    *alike = 0;
    int usage = 0;
    /* evaluation only takes the parameters alone (--resume loads as
     * --init-from does) and writes no checkpoint: the directory is left
     * as it is */
    train_options_t eo;
    const train_options_t *o = given;
    if (given->eval_only) {
        eo = *given;
        if (given->resume[0])
            snprintf(eo.init_from, sizeof eo.init_from, "%s",
                     strcmp(given->resume, "auto") ? given->resume : given->checkpoint_dir);
        eo.resume[0] = 0;
        eo.checkpoint_dir[0] = 0;
        o = &eo;
    }
    /* --resume and --init-from: the checkpoint's model, and the options
     * of its run not given (every rank alike) */
    train_options_t ro;
    train_ckpt_origin_t origin;
    memset(&origin, 0, sizeof origin);
    erase_status_t st = ERASE_OK;
    if (!o->eval_only && (o->resume[0] || o->init_from[0])) {
        ro = *o;
        o = &ro;
        st = train_ckpt_origin_read(&ro, w->rank == 0, &origin);
        usage = st != ERASE_OK;
        erase_status_t agreed = train_ckpt_origin_agree(given, &ro, &origin);
        if (st == ERASE_OK && agreed != ERASE_OK) {
            st = agreed;
            usage = 1;
        }
    }
    run_t r = { .o = o, .w = w, .root = w->rank == 0, .score = hooks, .eval_fraction = o->eval_fraction,
                .origin = &origin };
    /* a progress line redrawn in place only on a real terminal: launchers
     * (mpirun, srun) hand ranks a pseudo-terminal even when their own
     * output goes to a file or pipe */
    r.tty = r.root && isatty(STDOUT_FILENO) && train_launcher_rank() < 0 && !o->quiet;
    if (st == ERASE_OK)
        st = run_setup_model(&r, &usage);
    if (st == ERASE_OK && hooks && !r.task->score) { /* before any data or parameter is loaded */
        st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: the %s task (the %s model) has no per-sample prediction; "
                         "erase-train --eval-only evaluates it", o->init_from, r.task->name,
                         erase_model_config_name(&r.cfg));
        usage = 1;
    }
    if (st == ERASE_OK && (st = run_batch_sizes(&r)) != ERASE_OK)
        usage = 1; /* the batch against the number of ranks: alike on every rank */
    st = run_agree_on_model(&r, st, usage, alike);
    /* the user's settings that every rank finds alike (a --device or --gemm
     * this machine lacks, --train data missing or of another task, a batch
     * larger than the data, an unwritable --metrics or --trace), agreed on
     * before the first collective that follows: one line from rank 0, status 2 */
    char what[sizeof o->device + sizeof o->train + sizeof o->eval + 64];
    if (st == ERASE_OK) {
        st = run_open_device(&r);
        snprintf(what, sizeof what, "open the device (--device %s)", o->device);
        st = run_agree_setup(&r, st, st == ERASE_ERR_INVALID || st == ERASE_ERR_UNSUPPORTED, what, alike);
    }
    if (st == ERASE_OK)
        st = run_open_host_stream(&r);
    if (st == ERASE_OK) {
        st = run_open_readers(&r);
        if (st == ERASE_OK)
            st = run_check_outputs(&r);
        snprintf(what, sizeof what, "open the data (%s %s) or the output files", run_data_option(&r, !o->train[0]),
                 o->train[0] ? o->train : o->eval);
        st = run_agree_setup(&r, st, st != ERASE_ERR_NOMEM, what, alike);
    }
    if (st == ERASE_OK)
        st = run_setup_training(&r);
    if (st == ERASE_OK) /* ERASE_VERBOSE >= 1: one line per rank, with the scheduler's BLAS threads per stream */
        erase_world_log_device(r.dev);
    if (st == ERASE_OK && r.root)
        run_print_start(&r);
    /* checkpoints: --resume / --init-from load here, before the first step */
    train_ckpt_env_t ce = { .o = o, .w = w, .host = r.host, .cfg = &r.cfg, .net = r.net, .opt = r.opt,
                            .train = r.train, .global_batch = r.global_batch, .tty = r.tty,
                            .tokenizer = r.tokenizer.file, .data_vocab = r.data_vocab,
                            .stage_first = r.pipe ? r.stages.first : NULL, .pipe = r.pipe,
                            .total_steps = &r.total_steps };
    train_ckpt_pos_t pos;
    int resumed = 0;
    if (st == ERASE_OK)
        st = train_ckpt_create(&ce, &r.ckpt);
    if (st == ERASE_OK && (st = train_ckpt_restore(r.ckpt, &pos, &resumed)) != ERASE_OK &&
        train_ckpt_failed_alike(r.ckpt))
        *alike = train_ckpt_failed_alike(r.ckpt); /* every rank has it (a checkpoint that does not fit, damaged,
                                                   * missing; the directory another run's): no abort */
    if (st == ERASE_OK && resumed) {
        r.step = r.first_step = pos.step;
        r.epoch = pos.epoch;
        r.samples_seen = pos.samples_seen;
        if (o->steps == 0)
            st = run_resume_total_steps(&r);
        /* the pipeline's segment: the steps left (nothing is in flight yet),
         * as after the drain of the checkpoint's run */
        if (st == ERASE_OK && r.pipe)
            st = erase_pipe_drain(r.pipe, r.total_steps - r.step > 0 ? r.total_steps - r.step : 1);
        if (st == ERASE_OK && getenv("ERASE_DEBUG_CKPT_AFTER_RESUME")) /* apps/train/checkpoint.h */
            st = train_ckpt_rewrite(r.ckpt, &pos);
    }
    /* a resumed run continues its metrics file */
    if (st == ERASE_OK && r.root && o->metrics[0] && !(r.metrics = fopen(o->metrics, resumed ? "a" : "w")))
        st = ERASE_ERROR(ERASE_ERR_IO, "--metrics %s: cannot write: %s", o->metrics, strerror(errno));
    if (r.metrics) {
        fseek(r.metrics, 0, SEEK_END); /* appended: the records of the run before are whole */
        r.metrics_whole = ftell(r.metrics);
    }
    if (st == ERASE_OK && r.root && o->trace[0] && !(r.trace = fopen(o->trace, "w")))
        st = ERASE_ERROR(ERASE_ERR_IO, "--trace %s: cannot write: %s", o->trace, strerror(errno));
    if (st == ERASE_OK)
        train_ckpt_set_metrics(r.ckpt, r.metrics);
    /* resumed where the run ends: no step, no summary of none */
    int done = st == ERASE_OK && resumed && r.step >= r.total_steps;
    if (done && r.root) {
        printf("resume nothing to do: %s is at step %lld and this run asks for %lld steps (--%s %lld): give more "
               "--%s to train further\n", train_ckpt_last_path(r.ckpt), (long long)r.step, (long long)r.total_steps,
               o->steps ? "steps" : "epochs", (long long)(o->steps ? o->steps : o->epochs),
               o->steps ? "steps" : "epochs");
        fflush(stdout);
    }
    if (st == ERASE_OK && o->eval_only)
        st = eval_only(&r);
    else if (st == ERASE_OK && !done)
        st = run_train_loop(&r);
    if (st == ERASE_OK && !r.stopped && !o->eval_only && !done)
        run_summary(&r);
    if (st == ERASE_OK && r.stopped && r.root) {
        if (!train_ckpt_unsaved(r.ckpt, r.step))
            printf("%serase-train: stopped by %s after step %lld; checkpoint %s (continue with --resume auto)\n",
                   r.tty ? "\r\033[K" : "", train_ckpt_signal_name(r.stopped), (long long)r.step,
                   train_ckpt_last_path(r.ckpt));
        fflush(stdout);
    }
    /* --checkpoint-failure continue, and the end's checkpoint failed: said, status 1 */
    if (st == ERASE_OK && !o->eval_only && !done && train_ckpt_unsaved(r.ckpt, r.step)) {
        char stopped[64] = "";
        if (r.stopped)
            snprintf(stopped, sizeof stopped, ", stopped by %s", train_ckpt_signal_name(r.stopped));
        st = ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: the end state (step %lld%s) is not saved: its checkpoint "
                         "failed (--checkpoint-failure continue); --resume auto takes %s", o->checkpoint_dir,
                         (long long)r.step, stopped,
                         train_ckpt_last_path(r.ckpt)[0] ? train_ckpt_last_path(r.ckpt) : "none (step 0)");
        *alike = 1; /* every rank knows it */
    }
    if (st != ERASE_OK && !*alike) /* a checkpoint that every rank failed to write (--checkpoint-failure stop) */
        *alike = train_ckpt_failed_alike(r.ckpt);
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    else if (r.sched || r.pipe)
        st = run_synchronize(&r);
    run_metrics_written(&r, 1);
    if (r.trace) { /* stopped before the trace was written: no empty file left */
        fclose(r.trace);
        remove(o->trace);
    }
    train_ckpt_destroy(r.ckpt);
    erase_sched_destroy(r.sched);
    erase_embed_shard_destroy(r.shard);
    erase_pipe_destroy(r.pipe);
    train_batch_ring_destroy(r.behind);
    train_batch_ring_destroy(r.held);
    erase_event_destroy(r.loaded);
    erase_optimizer_destroy(r.opt);
    if (r.task && r.task->destroy)
        r.task->destroy(r.ts);
    erase_network_destroy(r.net);
    erase_tok_data_tokenizer_free(&r.tokenizer);
    free(r.ckpt_tokenizer);
    erase_reader_close(r.train);
    erase_reader_close(r.eval);
    free(r.outputs);
    free(r.outputs_ahead);
    free(r.step_s);
    erase_stream_destroy(r.host);
    erase_device_close(r.host_dev);
    erase_device_close(r.dev);
    train_ckpt_origin_free(&origin);
    return st;
}

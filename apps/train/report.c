/*
 * erase-train's reports (apps/train/run_state.h): the progress line and
 * the metrics file's train lines, the Chrome trace gathered from every
 * rank, and the summaries of a training run and of an evaluation-only run.
 */
#include "apps/train/run_state.h"

#include "apps/train/json.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The data start-up line's name of a list: "a,b (2 inputs)", or "a". */
static void inputs_text(const char *list, char *buf, size_t size)
{
    int n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    if (n > 1)
        snprintf(buf, size, "%s (%d inputs)", list, n);
    else
        snprintf(buf, size, "%s", list);
}

/* A note when --blas-threads asked for more BLAS threads than the device
 * uses: the effective number and why (the rank's share of the host's
 * cores, the BLAS library; the CUDA backend has none). */
static void print_blas_note(const run_t *r)
{
    int64_t asked = r->o->blas_threads;
    if (asked == 0)
        return;
    if (erase_device_kind(r->dev) != ERASE_DEVICE_CPU) {
        printf("note   --blas-threads %lld: unused on --device %s (BLAS threads are the CPU backend's)\n",
               (long long)asked, r->o->device);
        return;
    }
    int used = erase_device_blas_threads(r->dev), cores = erase_device_cores(r->dev);
    if (used >= asked)
        return;
    if (asked > cores)
        printf("note   --blas-threads %lld: %d BLAS thread%s per stream, the most this rank can use: its share of "
               "this host's cores is %d (%ld online, %d rank%s on this host)\n", (long long)asked, used,
               used == 1 ? "" : "s", cores, sysconf(_SC_NPROCESSORS_ONLN), r->w->local_size,
               r->w->local_size == 1 ? "" : "s");
    else
        printf("note   --blas-threads %lld: %d BLAS thread%s per stream, the most this build's BLAS library "
               "runs\n", (long long)asked, used, used == 1 ? "" : "s");
}

/* The options named in `names` that the command line gave, as "--a, --b"
 * (a run file's are shared with training runs: not listed). */
static void given_list(const train_options_t *o, const char *const *names, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t n = 0; names[n]; n++)
        if (train_options_given_on_command_line(o, names[n])) {
            size_t at = strlen(buf);
            snprintf(buf + at, size - at, "%s--%s", at ? ", " : "", names[n]);
        }
}

/* Notes for options given that this run does not use (issue 32): each
 * names the option and the setting that makes it unused. */
static void print_unused_notes(const run_t *r)
{
    const train_options_t *o = r->o;
    char list[1024];
    static const char *const training[] = {
        "optimizer", "lr", "momentum", "beta1", "beta2", "eps", "weight-decay", "grad-clip", "embedding-optimizer",
        "embedding-lr", "warmup-steps", "lr-decay", "min-lr", "warmdown-fraction", "final-lr-fraction",
        "muon-momentum", "muon-momentum-warmup", "embedding-matrix-lr", "unembedding-lr", "vector-lr", "epochs",
        "checkpoint-every", "keep-checkpoints", "checkpoint-failure", "trace", "trace-steps", "eval-every", "seed",
        "shuffle", "shuffle-pool", "early-backward", "side-streams", "nonfinite", NULL
    };
    static const char *const checkpointing[] = { "checkpoint-every", "keep-checkpoints", "checkpoint-failure", NULL };
    static const char *const tables[] = { "embedding-lr", "embedding-optimizer", NULL };
    if (o->eval_only && (given_list(o, training, list, sizeof list), list[0]))
        printf("note   %s: unused with --eval-only (nothing is trained, shuffled, checkpointed or traced)\n", list);
    if (!o->eval_only && !o->checkpoint_dir[0] && (given_list(o, checkpointing, list, sizeof list), list[0]))
        printf("note   %s: unused without --checkpoint-dir\n", list);
    if (o->eval[0] && train_options_given_on_command_line(o, "eval-fraction"))
        printf("note   --eval-fraction %g: unused with --eval (the evaluation data is --eval's, not a part of "
               "--train)\n", o->eval_fraction);
    if (o->train[0] && !strcmp(o->train, o->eval))
        printf("note   --eval %s: the --train data: the evaluation measures the data trained on, not held-out "
               "data\n", o->eval);
    if (r->emb.tables && erase_comm_size(erase_emb_comm()) == 1)
        printf("note   --embeddings %s: one rank holds every table whole, as replicated (sharding spreads "
               "tables over ranks)\n", o->embeddings);
    if (!erase_model_config_has_tables(&r->cfg) && (given_list(o, tables, list, sizeof list), list[0]))
        printf("note   %s: unused: the %s model has no embedding tables (they are ctr's and dcn's%s)\n", list,
               erase_model_config_name(&r->cfg),
               strcmp(o->optimizer, "muon") ? "" : "; its embedding matrices' rate is --embedding-matrix-lr");
    if (train_options_given(o, "momentum") && strcmp(o->optimizer, "sgd"))
        printf("note   --momentum %g: unused with --optimizer %s (momentum is sgd's%s)\n", o->momentum, o->optimizer,
               strcmp(o->optimizer, "muon") ? "" : "; muon's is --muon-momentum");
    if (o->side_streams != 1 && !strcmp(o->early_backward, "off"))
        printf("note   --side-streams %lld: unused with --early-backward off (side streams run early block "
               "backwards)\n", (long long)o->side_streams);
    if (o->yielded[0])
        printf("note   run file %s: unused, the command line chose otherwise: %s\n", o->config, o->yielded);
    long long cross_width = (long long)(ERASE_CTR_FIELDS + 1) * r->cfg.ctr.embedding_dim;
    if (r->cfg.kind == ERASE_MODEL_DCN && r->cfg.dcn.cross_rank >= cross_width)
        printf("note   dcn.cross_rank %d: not below the cross layers' width %lld (27 x embedding_dim %d): a "
               "factorization that wide costs more than full rank (cross_rank = 0)\n", r->cfg.dcn.cross_rank,
               cross_width, r->cfg.ctr.embedding_dim);
    if (train_options_given(o, "trace-steps") && !o->trace[0])
        printf("note   --trace-steps %lld: unused without --trace FILE\n", (long long)o->trace_steps);
}

void run_print_start(const run_t *r)
{
    const train_options_t *o = r->o;
    const erase_world_t *w = r->w;
    char dev[512];
    erase_device_describe(r->dev, dev, sizeof dev);
    erase_reader_info_t ti = erase_reader_info(r->train), ei = erase_reader_info(r->eval);
    char data[sizeof o->train + 32];
    inputs_text(o->train[0] ? o->train : o->eval, data, sizeof data);
    char where[sizeof w->host + 48];
    if (w->hosts > 1) /* the host of rank 0 alone read as a one-host run */
        snprintf(where, sizeof where, "%d hosts (rank 0 on %s)", w->hosts, w->host);
    else
        snprintf(where, sizeof where, "%s", w->host);
    printf("erase-%s: %d rank%s on %s\n  device %s\n", r->score ? "score" : "train", w->size, w->size == 1 ? "" : "s",
           where, dev);
    print_blas_note(r);
    print_unused_notes(r);
    if (o->eval_only)
        printf("  data   %s: %lld eval samples%s\n", o->eval[0] ? o->eval : data, (long long)ei.samples,
               o->eval[0] ? "" : " (held out of --train)");
    else
        printf("  data   %s: %lld train samples (%lld steps/epoch), %lld eval samples\n", data,
               (long long)ti.samples, (long long)ti.steps_per_epoch, (long long)ei.samples);
    if (r->shard)
        train_embeddings_print(&r->emb, r->shard, erase_comm_size(erase_emb_comm()));
    if (r->pipe) {
        char stages[256];
        train_pipeline_stages_text(&r->stages, stages, sizeof stages);
        printf("  stages %s, %d stage%s x %d dp: blocks %s", pipe_kind_name(r->pipe_o.kind), r->stages.P,
               r->stages.P == 1 ? "" : "s", w->dp_size, stages);
        if (r->stages.measured == 2)
            printf(" (auto: the resumed checkpoint's)");
        else if (r->stages.measured) {
            printf(" (auto, forward + backward ms per micro-batch of each block:");
            for (int b = 0; b < erase_network_blocks(r->net); b++)
                printf(" %.3g", r->stages.block_ms[b]);
            printf(")");
        }
        printf("\n");
    }
    if (r->peak_gflops > 0)
        printf("  peak   %.1f GFLOP/s per rank (SGEMM 1024^3 on the main stream, median of 5): the basis of MFU\n",
               r->peak_gflops);
    fflush(stdout);
}

/* Model FLOPs utilization of `qps` samples/s over all ranks: the FLOPs
 * done over the ranks' SGEMM peaks (as rank 0 measured its own); 0 when
 * not counted. */
static double mfu(const run_t *r, double qps)
{
    return r->flops > 0 && r->peak_gflops > 0 ? qps * r->flops / (r->w->size * r->peak_gflops * 1e9) : 0;
}

/* A rate as the lines print it: whole from 100 up, else 3 significant
 * digits ("19.8", "0.417": a large model's samples/s is not "0"). */
static const char *rate_text(double v, char buf[32])
{
    snprintf(buf, 32, v >= 100 || v == 0 ? "%.0f" : "%.3g", v);
    return buf;
}

/* A progress line's throughput of `qps` samples/s: "40125 samples/s", or
 * in the task's units first, "5080 tokens/s (19.8 samples/s, MFU 79.9%)". */
static void throughput_text(const run_t *r, double qps, char *buf, size_t size)
{
    char a[32], b[32];
    if (r->units <= 0) {
        snprintf(buf, size, "%s samples/s", rate_text(qps, a));
        return;
    }
    int n = snprintf(buf, size, "%s %s/s (%s samples/s", rate_text(qps * (double)r->units, a), r->task->unit,
                     rate_text(qps, b));
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, r->flops > 0 && r->peak_gflops > 0 ? ", MFU %.1f%%)" : ")",
                 100 * mfu(r, qps));
}

/* Seconds after the first step began by which the first progress line is
 * printed whatever --log-every is: 10, or ERASE_DEBUG_FIRST_LOG_SECONDS
 * (a number >= 0; tests: 0 prints it after the first step). */
static double first_line_seconds(void)
{
    const char *v = getenv("ERASE_DEBUG_FIRST_LOG_SECONDS");
    char *end;
    double s = v ? strtod(v, &end) : NAN;
    return v && *v && !*end && s >= 0 ? s : 10.0;
}

/* Whether the time-based first progress line is due after this step: no
 * line yet in this run, lines shown (not --quiet), and first_line_seconds
 * past since the loop began on rank 0's clock (agreed by every rank: the
 * line's sums are collective). */
static erase_status_t first_line_due(const run_t *r, int *due)
{
    *due = 0;
    if (r->o->quiet || r->progress_lines > 0)
        return ERASE_OK;
    int all;
    TRY(erase_world_agree(r->root && erase_now_s() - r->t_start >= first_line_seconds(), &all, due));
    return ERASE_OK;
}

erase_status_t run_log_progress(run_t *r, int force)
{
    if (r->window_steps == 0)
        return ERASE_OK;
    if (!force && r->step % r->o->log_every != 0) {
        int due;
        TRY(first_line_due(r, &due));
        if (!due)
            return ERASE_OK;
    }
    r->progress_lines++;
    TRY(run_reduce_metrics(r, TRAIN_TASK_WINDOW));
    if (r->pipe) { /* each stage summed its own blocks' losses (read_losses) and steps */
        _Static_assert(sizeof r->block == 2 * ERASE_MAX_BLOCKS * sizeof(double), "block: two arrays of doubles");
        TRY(erase_allreduce(erase_pp_comm(), r->host, &r->block, &r->block, sizeof r->block / sizeof(double),
                            ERASE_DTYPE_F64, ERASE_REDUCE_SUM));
        TRY(erase_stream_synchronize(r->host));
    }
    train_task_counts_t counts = r->task->window_counts(r->ts);
    /* samples/s: a pipeline's of its first stage (local's last stage
     * scores nothing while it fills after a drain) */
    double n = r->pipe ? (double)r->window_global : (double)counts.samples;
    int all_skipped = r->window_skipped == r->window_steps;
    int64_t from = r->step - r->window_steps;
    double sec = 0;
    for (int64_t i = from; i < r->step; i++)
        sec += r->step_s[i];
    double qps = sec > 0 ? n / sec : 0;
    double elapsed = erase_now_s() - r->t_start;
    int64_t done = r->step - r->first_step;
    double eta = done > 0 ? elapsed / (double)done * (double)(r->total_steps - r->step) : 0;
    erase_optim_clock_t clock;
    if (r->pipe) /* as the step left it: the next may be running (run_train_loop) */
        clock = erase_pipe_clock(r->pipe);
    else
        TRY(erase_optimizer_read_clock(r->opt, &clock)); /* the step is synchronized */
    float lr = clock.lr;
    if (r->root && !r->o->quiet) {
        /* the task's metrics of the window, e.g. "loss 0.5123, NE 0.9876" */
        char stats[224];
        if (all_skipped)
            snprintf(stats, sizeof stats, "all %lld steps of this window skipped (non-finite gradients)",
                     (long long)r->window_steps);
        else if (r->pipe && counts.samples == 0) /* local's last stage, filling after each drain */
            snprintf(stats, sizeof stats, "no batch scored: the last stage trains the batch of step t-%d and "
                     "filled again after each drain (checkpoint, evaluation)", r->w->pp_size - 1);
        else
            r->task->window_text(r->ts, r->tty ? " " : ",", stats, sizeof stats);
        char rate[96];
        throughput_text(r, qps, rate, sizeof rate);
        if (r->tty)
            printf("\r\033[Kstep %lld/%lld  %s  %s  lr %.3g  ETA %.0f s", (long long)r->step,
                   (long long)r->total_steps, rate, stats, lr, eta);
        else
            printf("train  step %lld/%lld epoch %lld: %s, %s, lr %.3g, ETA %.0f s\n", (long long)r->step,
                   (long long)r->total_steps, (long long)r->epoch, rate, stats, lr, eta);
        fflush(stdout);
    }
    if (r->root && r->metrics) {
        char v[48];
        json_line_start(r->metrics, "train", r->step, r->samples_seen);
        fprintf(r->metrics, ",\"epoch\":%lld,\"window_samples\":%lld,\"nonfinite\":%lld,\"skipped\":%lld,"
                            "\"qps\":%.1f", (long long)r->epoch, (long long)counts.samples,
                (long long)counts.nonfinite, (long long)r->window_skipped, qps);
        if (r->units > 0)
            fprintf(r->metrics, ",\"%s_per_s\":%.1f", r->task->unit, qps * (double)r->units);
        if (r->flops > 0 && r->peak_gflops > 0)
            fprintf(r->metrics, ",\"mfu\":%.4f", mfu(r, qps));
        r->task->window_json(r->ts, r->metrics, all_skipped);
        fprintf(r->metrics, ",\"lr\":%s,\"block_losses\":[", json_number(v, "%.6g", lr));
        for (int b = 0; b < erase_network_blocks(r->net); b++) /* null: not trained in the window */
            fprintf(r->metrics, "%s%s", b ? "," : "",
                    r->block.steps[b] > 0 ? json_number(v, "%.6f", r->block.loss[b] / r->block.steps[b]) : "null");
        /* the window's mean step time (TensorBoard's step time, issue 37) */
        fprintf(r->metrics, "],\"seconds_per_step\":%.6f}\n", sec / (double)r->window_steps);
        run_metrics_written(r, 0);
    }
    r->task->clear(r->ts, TRAIN_TASK_WINDOW);
    r->window_steps = 0;
    r->window_skipped = 0;
    memset(&r->block, 0, sizeof r->block);
    r->window_global = 0;
    return ERASE_OK;
}

erase_status_t run_write_trace(run_t *r, int64_t t0_ns)
{
    size_t cap = (size_t)1 << 18;
    erase_trace_record_t *rec = malloc(cap * sizeof *rec);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!rec || !mem)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "trace: no memory");
    size_t n = run_trace_collect(r, rec, cap);
    const char *names[32];
    int streams = r->pipe ? ERASE_PIPE_STREAMS : erase_sched_streams(r->sched);
    for (int k = 0; k < streams; k++)
        names[k] = r->pipe ? erase_pipe_stream_name(k) : erase_sched_stream_name(r->sched, k);
    erase_trace_write_events(mem, rec, n, r->w->rank, names, streams, t0_ns, r->w->rank == 0);
    if (r->pipe) { /* the rank's stage, as Chrome's process label and order (jobs/trace-svg's lane groups) */
        erase_pipe_stats_t ps;
        erase_pipe_stats(r->pipe, &ps);
        fprintf(mem, ",\n{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"labels\":\"stage %d\"}}"
                     ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                r->w->rank, ps.stage, r->w->rank, ps.stage);
    }
    fclose(mem);
    erase_trace_overlap_t ov = erase_trace_overlap(rec, n);
    free(rec);
    int ranks = r->w->size;
    int64_t mine = (int64_t)len, *lens = calloc((size_t)ranks, sizeof *lens);
    size_t *counts = calloc((size_t)ranks, sizeof *counts), *displs = calloc((size_t)ranks, sizeof *displs);
    erase_status_t st = erase_allgather(erase_world_comm(), r->host, &mine, lens, 1, ERASE_DTYPE_I64);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(r->host);
    size_t total = 0;
    for (int i = 0; st == ERASE_OK && i < ranks; i++) {
        counts[i] = (size_t)lens[i];
        displs[i] = total;
        total += counts[i];
    }
    char *all = malloc(total + 1);
    if (st == ERASE_OK)
        st = erase_allgatherv(erase_world_comm(), r->host, text, all, counts, displs, ERASE_DTYPE_U8);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(r->host);
    if (st == ERASE_OK && r->root) {
        FILE *f = r->trace;
        r->trace = NULL;
        int bad = fputs("[\n", f) < 0 || fwrite(all, 1, total, f) != total || fputs("\n]\n", f) < 0;
        int e = errno;
        if (fclose(f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        if (bad) { /* a full disk: no half trace left; the trace is a by-product, training goes on */
            remove(r->o->trace);
            printf("%swarn   --trace %s: cannot write the trace: %s; the file is removed, training goes on\n",
                   r->tty ? "\r\033[K" : "", r->o->trace, strerror(e));
            fflush(stdout);
        } else {
            if (r->pipe)
                printf("%strace  %s: %d rank%s, each stage's compute, side and point-to-point streams; the "
                       "bubble is the gap on compute (jobs/trace-svg draws it)\n", r->tty ? "\r\033[K" : "",
                       r->o->trace, ranks, ranks == 1 ? "" : "s");
            else
                printf("%strace  %s: %d rank%s, %.0f%% of backward time overlapped a forward on rank 0 "
                       "(jobs/trace-svg draws it)\n", r->tty ? "\r\033[K" : "", r->o->trace, ranks,
                       ranks == 1 ? "" : "s", 100 * ov.overlap_fraction);
        }
    }
    free(all);
    free(text);
    free(lens);
    free(counts);
    free(displs);
    return st;
}

void run_summary(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t done = r->step - r->first_step; /* steps of this run (after a resume: since it) */
    int64_t warmup = done >= 20 ? 5 : done / 4, n = done - warmup;
    double *qps = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double global = (double)r->global_batch, total_s = 0;
    for (int64_t i = r->first_step; i < r->step; i++)
        total_s += r->step_s[i];
    for (int64_t i = 0; i < n; i++)
        qps[i] = global / r->step_s[r->first_step + warmup + i];
    double p50 = erase_quantile(qps, (size_t)n, 0.5), p90 = erase_quantile(qps, (size_t)n, 0.9);
    free(qps);
    /* sharded tables: per step after the warm-up, the all-to-alls' bytes, seconds and share of the
     * step's time, each the largest over the ranks (collective) */
    double emb[3] = { 0, 0, 0 };
    if (r->shard && r->emb_traffic.steps > 0) {
        emb[0] = (double)r->emb_traffic.bytes / (double)r->emb_traffic.steps;
        emb[1] = r->emb_traffic.seconds / (double)r->emb_traffic.steps;
        emb[2] = r->emb_traffic.step_seconds > 0 ? r->emb_traffic.seconds / r->emb_traffic.step_seconds : 0;
    }
    if (r->shard && (erase_allreduce(run_metrics_comm(r), r->host, emb, emb, 3, ERASE_DTYPE_F64, ERASE_REDUCE_MAX) != ERASE_OK ||
                     erase_stream_synchronize(r->host) != ERASE_OK))
        emb[0] = -1;
    double *stages = NULL; /* a pipeline's figures of every rank (collective) */
    if (r->pipe && train_pipeline_gather(r->pipe, &r->pipe_warm, r->w, r->host, &stages) != ERASE_OK && r->root)
        fprintf(stderr, "erase-train: the pipeline's figures: %s\n", erase_error_reason());
    if (!r->root) {
        free(stages);
        return;
    }
    int blocks = erase_network_blocks(r->net), cuts = 0;
    for (int b = 1; b < blocks; b++)
        cuts += erase_network_is_cut(r->net, b);
    double wait = erase_reader_wait_seconds(r->train);
    printf("%s\nerase-train summary\n", r->tty ? "\r\033[K" : "");
    int64_t micro_steps = train_options_micro_steps(o);
    printf("  model      %s, %d blocks, %d cut%s; %d rank%s (%s), global batch %.0f", erase_model_config_name(&r->cfg),
           blocks, cuts, cuts == 1 ? "" : "s", r->w->size, r->w->size == 1 ? "" : "s",
           r->pipe ? "pipeline" : "data parallel", global);
    if (micro_steps > 1) /* --accumulate: the optimizer step's micro-steps on each rank */
        printf(" in %lld micro-steps per rank", (long long)micro_steps);
    printf("\n");
    if (r->pipe) {
        if (stages)
            train_pipeline_print(stages, &r->pipe_o, &r->stages, r->w, r->metrics, r->step, r->samples_seen);
        if (r->root)
            run_metrics_written(r, 0);
        free(stages);
    } else if (!strcmp(o->early_backward, "off"))
        printf("  schedule   early backward off (one stream, backward at step end), %d BLAS thread%s\n",
               erase_device_blas_threads(r->dev), erase_device_blas_threads(r->dev) == 1 ? "" : "s");
    else
        printf("  schedule   early backward %s (reduce %s, update %s, %lld side stream%s), %d BLAS thread%s per stream\n",
               o->early_backward, o->reduce, o->update, (long long)o->side_streams, o->side_streams == 1 ? "" : "s",
               erase_device_blas_threads(r->dev), erase_device_blas_threads(r->dev) == 1 ? "" : "s");
    /* the dense rule and its learning rate (muon: the hidden matrices'; the
     * AdamW groups' rates are options of their own, docs/muon.md) */
    printf("  optimizer  %s, lr %g, %s decay%s\n", o->optimizer, o->lr, o->lr_decay,
           !strcmp(o->optimizer, "muon") ? "; AdamW for embedding matrices, heads and 1-d parameters" : "");
    /* in samples: after a resume with another global batch, steps differ in size */
    double epochs = (double)r->samples_seen /
                    (double)(erase_reader_info(r->train).steps_per_epoch * global);
    printf("  steps      %lld (%.2f epochs), %.1f s of steps\n", (long long)r->step, epochs, total_s);
    char a[32], b[32];
    if (r->units > 0) { /* the task's units first: a large model's samples/s is a fraction */
        printf("  %-10s p50 %s  p90 %s %s/s (all ranks, after %lld warm-up step%s)\n", r->task->unit,
               rate_text(p50 * (double)r->units, a), rate_text(p90 * (double)r->units, b), r->task->unit,
               (long long)warmup, warmup == 1 ? "" : "s");
        printf("  QPS        p50 %s  p90 %s samples/s (a sample: %lld %s)\n", rate_text(p50, a), rate_text(p90, b),
               (long long)r->units, r->task->unit);
    } else {
        printf("  QPS        p50 %s  p90 %s samples/s (all ranks, after %lld warm-up step%s)\n", rate_text(p50, a),
               rate_text(p90, b), (long long)warmup, warmup == 1 ? "" : "s");
    }
    if (r->flops > 0 && r->peak_gflops > 0)
        printf("  MFU        p50 %.1f%%  p90 %.1f%% (%.3g GFLOP per sample over %d x %.1f GFLOP/s, the SGEMM peak "
               "rank 0 measured at start%s)\n", 100 * mfu(r, p50), 100 * mfu(r, p90), r->flops / 1e9, r->w->size,
               r->peak_gflops, mfu(r, p90) > 1 ? "; over 100%: that peak read low, e.g. with more ranks than cores or "
                                                 "on a busy machine, so these figures are not reliable" : "");
    printf("  eval       ");
    r->task->eval_print(r->ts, stdout);
    printf("\n  eval time  %.2f s in %lld evaluation%s (not in the steps' time)\n", r->eval_s, (long long)r->evals,
           r->evals == 1 ? "" : "s");
    printf("  data wait  %.2f s (%.1f%% of training time)\n", wait, total_s > 0 ? 100 * wait / total_s : 0);
    char emb_kind[64] = "replicated";
    if (r->shard) {
        train_embeddings_kind_text(&r->emb, emb_kind, sizeof emb_kind);
        if (emb[0] >= 0 && r->emb_traffic.steps > 0)
            printf("  embed      %s: all-to-all %.3g MB sent per step per rank (at most %.3g MB), %.2f ms per step in "
                   "all-to-alls, %.1f%% of the step (after %lld warm-up step%s; each the largest over the ranks)\n",
                   emb_kind, emb[0] / 1e6, (double)erase_embed_shard_bytes(r->shard) / 1e6, 1e3 * emb[1],
                   100 * emb[2], (long long)warmup, warmup == 1 ? "" : "s");
        else if (emb[0] >= 0)
            printf("  embed      %s: no training step after the warm-up to measure the all-to-alls on\n", emb_kind);
        else
            printf("  embed      %s: the all-to-alls' traffic: %s\n", emb_kind, erase_error_reason());
    }
    if (r->skipped)
        printf("  skipped    %lld step%s with non-finite gradients\n", (long long)r->skipped, r->skipped == 1 ? "" : "s");
    int ckpts;
    double ckpt_s, ckpt_bytes;
    train_ckpt_stats(r->ckpt, &ckpts, &ckpt_s, &ckpt_bytes);
    if (r->first_step > 0)
        printf("  resumed    at step %lld\n", (long long)r->first_step);
    int failed = train_ckpt_failures(r->ckpt);
    char failed_text[80] = "";
    if (failed)
        snprintf(failed_text, sizeof failed_text, ", %d failed (--checkpoint-failure continue)", failed);
    if (ckpts)
        printf("  checkpoint %d written%s, %.3f s each (%.0f MB/s), %.1f%% of training time; last %s\n", ckpts,
               failed_text, ckpt_s / ckpts, ckpt_s > 0 ? ckpt_bytes / ckpt_s / 1e6 : 0,
               total_s > 0 ? 100 * ckpt_s / total_s : 0, train_ckpt_last_path(r->ckpt));
    else if (failed)
        printf("  checkpoint 0 written%s\n", failed_text);
    if (r->metrics) {
        json_line_start(r->metrics, "summary", r->step, r->samples_seen);
        fprintf(r->metrics, ",\"qps_p50\":%.1f,\"qps_p90\":%.1f", p50, p90);
        if (r->units > 0)
            fprintf(r->metrics, ",\"%s_per_s_p50\":%.1f,\"%s_per_s_p90\":%.1f", r->task->unit,
                    p50 * (double)r->units, r->task->unit, p90 * (double)r->units);
        if (r->flops > 0 && r->peak_gflops > 0)
            fprintf(r->metrics, ",\"mfu_p50\":%.4f,\"mfu_p90\":%.4f,\"peak_gflops\":%.1f", mfu(r, p50),
                    mfu(r, p90), r->peak_gflops);
        r->task->eval_json(r->ts, r->metrics);
        fprintf(r->metrics, ",\"embeddings\":\"%s\"", o->embeddings);
        if (r->shard && emb[0] >= 0 && r->emb_traffic.steps > 0)
            fprintf(r->metrics, ",\"alltoall_bytes_per_step\":%.0f,\"alltoall_bytes_per_step_max\":%lld,"
                                "\"alltoall_ms_per_step\":%.4f,\"alltoall_step_fraction\":%.4f", emb[0],
                    (long long)erase_embed_shard_bytes(r->shard), 1e3 * emb[1], emb[2]);
        fprintf(r->metrics, ",\"step_seconds\":%.6f,\"eval_seconds\":%.6f,\"checkpoint_seconds\":%.6f,"
                            "\"skipped\":%lld,\"ranks\":%d,\"mode\":\"%s\"}\n",
                total_s, r->eval_s, ckpt_s, (long long)r->skipped, r->w->size, o->early_backward);
        run_metrics_written(r, 0);
    }
}

void run_metrics_written(run_t *r, int closing)
{
    if (!r->metrics)
        return;
    int failed = fflush(r->metrics) != 0 || ferror(r->metrics);
    int e = errno;
    if (!failed && !closing) {
        r->metrics_whole = ftell(r->metrics);
        return;
    }
    if (failed && r->metrics_whole >= 0) /* no half record left for a reader to trip on */
        (void)!ftruncate(fileno(r->metrics), r->metrics_whole);
    if (fclose(r->metrics) != 0 && !failed) {
        failed = 1;
        e = errno;
    }
    r->metrics = NULL;
    train_ckpt_set_metrics(r->ckpt, NULL);
    if (failed) {
        printf("%swarn   --metrics %s: cannot write: %s; the file ends at its last whole record (step %lld or "
               "before), no more records are written; training goes on\n", r->tty ? "\r\033[K" : "",
               r->o->metrics, strerror(e), (long long)r->step);
        fflush(stdout);
    }
}

void run_summary_eval_only(const run_t *r, double seconds)
{
    if (!r->root)
        return;
    /* what evaluation has: no training figures (steps, QPS, the global batch of a step) */
    int64_t n = erase_reader_info(r->eval).samples;
    int blocks = erase_network_blocks(r->net), cuts = 0;
    for (int b = 1; b < blocks; b++)
        cuts += erase_network_is_cut(r->net, b);
    printf("erase-%s summary (evaluation only: no training steps)\n", r->score ? "score" : "train");
    printf("  model      %s, %d blocks, %d cut%s (the checkpoint's); %d rank%s\n", erase_model_config_name(&r->cfg),
           blocks, cuts, cuts == 1 ? "" : "s", r->w->size, r->w->size == 1 ? "" : "s");
    printf("  checkpoint %s (step %lld)\n", r->ckpt_path, (long long)r->ckpt_step);
    printf("  eval       ");
    r->task->eval_print(r->ts, stdout);
    double qps = seconds > 0 ? (double)n / seconds : 0;
    char a[32], b[32];
    if (r->units > 0)
        printf("\n  eval time  %.2f s (%s %s/s, %s samples/s, all ranks)\n", seconds,
               rate_text(qps * (double)r->units, a), r->task->unit, rate_text(qps, b));
    else
        printf("\n  eval time  %.2f s (%s samples/s, all ranks)\n", seconds, rate_text(qps, a));
    fflush(stdout);
}

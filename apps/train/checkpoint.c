/*
 * erase-train's checkpoints: the network's tensors as io/checkpoint.h
 * tensors, the collectives that make every rank agree, writing (signals:
 * checkpoint_signals.c; resuming: checkpoint_resume.c).
 */
#include "apps/train/checkpoint_internal.h"

#include "apps/train/json.h"
#include "io/checkpoint.h"
#include "lib/comm/comm_mpi.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* ---- the tensors ---------------------------------------------------------------- */

/* Bytes of the rows of t this rank holds (all of them but for a sharded
 * table and its state). */
static size_t held_bytes(const erase_ckpt_tensor_t *t)
{
    return sizeof(float) * (size_t)t->held * (size_t)(t->ndim == 2 ? t->dims[1] : 1);
}

/* A tensor of the whole shape [rows, cols] of which this rank holds rows
 * [row0, row0 + held) at data. */
static erase_status_t add(train_ckpt_t *ck, int g, int *cap, int block, const char *name, int ndim, int64_t rows,
                          int64_t cols, int64_t row0, int64_t held, float *data, const char *meaning)
{
    if (ck->n[g] == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        erase_ckpt_tensor_t *t = realloc(ck->t[g], (size_t)*cap * sizeof *t);
        float **d = realloc(ck->dev[g], (size_t)*cap * sizeof *d);
        int *b = realloc(ck->block[g], (size_t)*cap * sizeof *b);
        if (t)
            ck->t[g] = t;
        if (d)
            ck->dev[g] = d;
        if (b)
            ck->block[g] = b;
        if (!t || !d || !b)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
    }
    ck->block[g][ck->n[g]] = block;
    erase_ckpt_tensor_t *t = &ck->t[g][ck->n[g]];
    memset(t, 0, sizeof *t);
    if ((size_t)snprintf(t->name, sizeof t->name, "%s", name) >= sizeof t->name)
        return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: tensor name too long: %s", name);
    t->ndim = ndim;
    t->dims[0] = rows;
    t->dims[1] = ndim == 2 ? cols : 1;
    t->meaning = meaning;
    t->data = data;
    t->row0 = row0;
    t->held = held;
    ck->dev[g][ck->n[g]] = data;
    ck->n[g]++;
    return ERASE_OK;
}

/* Every parameter and optimizer slot, named as in the file. */
static erase_status_t name_tensors(train_ckpt_t *ck)
{
    const train_options_t *o = ck->e.o;
    int n, cap[2] = { 0, 0 };
    erase_param_t *p = erase_network_params(ck->e.net, &n);
    int adamw = !strcmp(o->optimizer, "adamw"), muon = !strcmp(o->optimizer, "muon");
    int adagrad = !strcmp(o->embedding_optimizer, "rowwise_adagrad");
    for (int i = 0; i < n; i++) {
        int emb = p[i].kind == ERASE_PARAM_EMBEDDING;
        ERASE_CHECK(add(ck, 0, &cap[0], p[i].block, p[i].name, p[i].ndim, p[i].rows, p[i].cols, p[i].row0,
                        p[i].held, p[i].value,
                        emb ? "embedding table [rows, dim]: row of id h is h mod (rows - 1), the last row is "
                              "the missing id (docs/models.md)"
                            : p[i].ndim == 2 ? "weight [out, in] (y = x W^T + b)" : "bias [out]"));
    }
    for (int i = 0; i < n; i++) {
        int emb = p[i].kind == ERASE_PARAM_EMBEDDING;
        for (int k = 0; k < 2; k++) {
            if (!p[i].state[k])
                continue;
            const char *slot, *meaning;
            int ndim = p[i].ndim;
            int64_t rows = p[i].rows, cols = p[i].cols;
            if (emb && adagrad) {
                slot = "adagrad_sum";
                meaning = "row-wise Adagrad accumulator [rows]: sum over updates of the mean squared gradient "
                          "of the row";
                ndim = 1;
                cols = 1;
            } else if (emb) {
                return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s has optimizer state the checkpoint does "
                                   "not know (embedding optimizer %s)", p[i].name, o->embedding_optimizer);
            } else if (muon && erase_optim_muon_updates(&p[i])) {
                slot = "muon_momentum_buffer";
                meaning = "Muon momentum buffer (before the Nesterov step), shape of the parameter";
            } else if (adamw || muon) {
                slot = k == 0 ? "exp_avg" : "exp_avg_sq";
                meaning = k == 0 ? "AdamW first moment (beta1-average of gradients), shape of the parameter"
                                 : "AdamW second moment (beta2-average of squared gradients), shape of the "
                                   "parameter";
            } else {
                slot = "momentum_buffer";
                meaning = "SGD momentum buffer, shape of the parameter";
            }
            char name[ERASE_CKPT_NAME_MAX];
            snprintf(name, sizeof name, "%s/%s", p[i].name, slot);
            ERASE_CHECK(add(ck, 1, &cap[1], p[i].block, name, ndim, rows, cols, p[i].row0, p[i].held, p[i].state[k],
                            meaning));
        }
    }
    /* device memory that the host cannot touch goes through host copies;
     * host-accessible device memory (CPU) is hashed, written and loaded in place */
    erase_device_t *dev = erase_network_device(ck->e.net);
    int staged = !erase_device_host_accessible(dev);
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < ck->n[g]; i++) {
            if (!staged) {
                ck->dev[g][i] = NULL;
                continue;
            }
            size_t bytes = held_bytes(&ck->t[g][i]);
            if (!(ck->t[g][i].data = malloc(bytes ? bytes : 1)))
                return ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory for a host copy of %s", ck->t[g][i].name);
        }
    /* this rank's stage's tensors: those of its blocks */
    const int *first = ck->e.stage_first;
    int lo = first ? first[ck->e.w->pp_rank] : 0, hi = first ? first[ck->e.w->pp_rank + 1] : ERASE_MAX_BLOCKS;
    for (int g = 0; g < 2; g++) {
        ck->mine[g] = malloc(sizeof *ck->mine[g] * (size_t)(ck->n[g] ? ck->n[g] : 1));
        ck->mine_at[g] = malloc(sizeof *ck->mine_at[g] * (size_t)(ck->n[g] ? ck->n[g] : 1));
        if (!ck->mine[g] || !ck->mine_at[g])
            return ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
        for (int i = 0; i < ck->n[g]; i++)
            if (ck->block[g][i] >= lo && ck->block[g][i] < hi) {
                ck->mine_at[g][ck->nmine[g]] = i;
                ck->mine[g][ck->nmine[g]++] = ck->t[g][i];
            }
    }
    return ERASE_OK;
}

/* checkpoint_internal.h */
erase_status_t train_ckpt_stage(train_ckpt_t *ck, int g, int to_host)
{
    erase_device_t *dev = erase_network_device(ck->e.net);
    for (int k = 0; k < ck->nmine[g]; k++) { /* this rank's stage's */
        int i = ck->mine_at[g][k];
        if (!ck->dev[g][i])
            continue;
        size_t bytes = held_bytes(&ck->t[g][i]);
        if (to_host)
            ERASE_CHECK(erase_memcpy_sync(dev, ck->t[g][i].data, ck->dev[g][i], bytes));
        else
            ERASE_CHECK(erase_memcpy_sync(dev, ck->dev[g][i], ck->t[g][i].data, bytes));
    }
    return ERASE_OK;
}

erase_status_t train_ckpt_create(const train_ckpt_env_t *env, train_ckpt_t **out)
{
    *out = NULL;
    const train_options_t *o = env->o;
    train_ckpt_t *ck = calloc(1, sizeof *ck);
    if (!ck)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
    ck->e = *env;
    ck->enabled = o->checkpoint_dir[0] != 0;
    ck->last_step = -1;
    ck->kill_step = -1;
    erase_status_t st = name_tensors(ck);
    int blocks = erase_network_blocks(env->net);
    snprintf(ck->schedule, sizeof ck->schedule, "early_backward %s, reduce %s, update %s, side_streams %lld, "
             "global batch %lld over %d ranks", o->early_backward, o->reduce, o->update, (long long)o->side_streams,
             (long long)env->global_batch, env->w->dp_size);
    if (train_options_micro_steps(o) > 1) /* data parallel --accumulate */
        snprintf(ck->schedule + strlen(ck->schedule), sizeof ck->schedule - strlen(ck->schedule),
                 " in %lld micro-steps per rank", (long long)train_options_micro_steps(o));
    if (env->stage_first) /* the pipeline: schedule, M, a, as run (auto and 0 resolved) */
        snprintf(ck->schedule + strlen(ck->schedule), sizeof ck->schedule - strlen(ck->schedule),
                 "; pipeline %s, %lld micro-batches, accumulate %lld", train_options_schedule(o),
                 (long long)train_options_micro_batches(o), (long long)train_options_accumulate(o));
    snprintf(ck->layout, sizeof ck->layout, "%d stage%s: ", env->w->pp_size, env->w->pp_size == 1 ? "" : "s");
    for (int s = 0; s < env->w->pp_size; s++) {
        int a = env->stage_first ? env->stage_first[s] : 0, b = env->stage_first ? env->stage_first[s + 1] : blocks;
        size_t len = strlen(ck->layout);
        snprintf(ck->layout + len, sizeof ck->layout - len, "%sstage %d holds blocks %d-%d", s ? ", " : "", s, a,
                 b - 1);
    }
    const char *kill = getenv("ERASE_DEBUG_KILL_AT_STEP");
    if (kill && *kill) {
        char *end;
        ck->kill_step = strtoll(kill, &end, 10);
        ck->kill_rank = *end == ':' ? (int)strtol(end + 1, &end, 10) : env->w->size - 1;
        ck->kill_sig = !strcmp(end, ":usr1") ? SIGUSR1 : !strcmp(end, ":stop") ? SIGSTOP : SIGKILL;
    }
    const char *log = getenv("ERASE_DEBUG_SAMPLE_LOG");
    if (st == ERASE_OK && log && *log) {
        char path[ERASE_CKPT_PATH_MAX];
        snprintf(path, sizeof path, "%s.%d", log, env->w->rank);
        if (!(ck->sample_log = fopen(path, "a")))
            st = ERASE_ERROR(ERASE_ERR_IO, "ERASE_DEBUG_SAMPLE_LOG: cannot write %s", path);
    }
    if (st == ERASE_OK && ck->enabled) {
        /* again after MPI start-up, which may have set its own; a signal
         * that came since train_ckpt_catch_signals stays pending */
        st = train_ckpt_signals_install(ck->old_handlers);
        ck->handlers = st == ERASE_OK;
    }
    if (st != ERASE_OK) {
        train_ckpt_destroy(ck);
        return st;
    }
    *out = ck;
    return ERASE_OK;
}

void train_ckpt_destroy(train_ckpt_t *ck)
{
    if (!ck)
        return;
    if (ck->handlers)
        train_ckpt_signals_restore(ck->old_handlers);
    for (int g = 0; g < 2; g++) {
        for (int i = 0; ck->dev[g] && i < ck->n[g]; i++)
            if (ck->dev[g][i])
                free(ck->t[g][i].data);
        for (int i = 0; ck->t[g] && i < ck->n[g]; i++)
            free((char *)ck->t[g][i].sharding);
        free(ck->t[g]);
        free(ck->dev[g]);
        free(ck->block[g]);
        free(ck->mine[g]);
        free(ck->mine_at[g]);
    }
    if (ck->sample_log)
        fclose(ck->sample_log);
    train_ckpt_lock_release(ck->lock);
    free(ck);
}

void train_ckpt_set_metrics(train_ckpt_t *ck, FILE *metrics)
{
    ck->metrics = metrics;
}

void train_ckpt_stats(const train_ckpt_t *ck, int *count, double *seconds, double *bytes)
{
    *count = ck ? ck->count : 0;
    *seconds = ck ? ck->seconds : 0;
    *bytes = ck ? ck->bytes : 0;
}

const char *train_ckpt_last_path(const train_ckpt_t *ck)
{
    return ck ? ck->last_path : "";
}

int64_t train_ckpt_last_step(const train_ckpt_t *ck)
{
    return ck ? ck->last_step : -1;
}

/* checkpoint_internal.h */
int train_ckpt_failures(const train_ckpt_t *ck)
{
    return ck ? ck->failures : 0;
}

int train_ckpt_unsaved(const train_ckpt_t *ck, int64_t step)
{
    return ck && ck->failures && ck->failed_step == step && ck->last_step != step;
}

void train_ckpt_log_samples(train_ckpt_t *ck, const erase_reader_batch_t *b)
{
    if (!ck || !ck->sample_log)
        return;
    for (int64_t i = 0; i < b->size; i++)
        fprintf(ck->sample_log, "%" PRId64 " %" PRId64 " %" PRId64 "\n", b->epoch, b->first_sample + i, b->row_id[i]);
    fflush(ck->sample_log);
}

/* ---- agreeing ------------------------------------------------------------------ */

/* checkpoint_internal.h */
const char *train_ckpt_stage_files(int stages)
{
    return stages == 0 ? "" : stages == 1 ? ", with its stage file" : ", with its stage files";
}

/* checkpoint_internal.h */
erase_status_t train_ckpt_share_status(train_ckpt_t *ck, erase_status_t st, const char *what)
{
    const erase_world_t *w = ck->e.w;
    int32_t mine = st != ERASE_OK ? w->size - w->rank : 0, most = 0; /* the max: the lowest failed rank */
    erase_comm_t *c = erase_world_comm();
    ERASE_CHECK(erase_allreduce(c, ck->e.host, &mine, &most, 1, ERASE_DTYPE_I32, ERASE_REDUCE_MAX));
    ERASE_CHECK(erase_stream_synchronize(ck->e.host));
    if (most == 0)
        return ERASE_OK;
    int first = w->size - most;
    int64_t code = st;
    char msg[MESSAGE_MAX];
    memset(msg, 0, sizeof msg);
    if (w->rank == first)
        snprintf(msg, sizeof msg, "%s", erase_error_reason());
    ERASE_CHECK(erase_broadcast(c, ck->e.host, &code, 1, ERASE_DTYPE_I64, first));
    ERASE_CHECK(erase_broadcast(c, ck->e.host, msg, sizeof msg, ERASE_DTYPE_U8, first));
    ERASE_CHECK(erase_stream_synchronize(ck->e.host));
    ck->failed_alike = 1;
    if (w->rank == first)
        return st;
    msg[sizeof msg - 1] = '\0';
    return ERASE_ERROR((erase_status_t)code, "%s (rank %d): %s", what, first, msg);
}

int train_ckpt_failed_alike(const train_ckpt_t *ck)
{
    return ck ? ck->failed_alike : 0;
}

/* The placement text of a tensor of `rows` rows of which dp rank r holds
 * rows [held[2r], held[2r] + held[2r + 1]) (ranks ranks) into *out
 * (malloc'ed; NULL: every rank holds it whole). Errors: ERASE_ERR_INVALID
 * when the ranks' rows do not cover the rows exactly once,
 * ERASE_ERR_NOMEM. */
static erase_status_t placement_text(const char *name, int64_t rows, const int64_t *held, int ranks, char **out)
{
    *out = NULL;
    int whole = 0, holders = 0, owner = -1;
    for (int r = 0; r < ranks; r++) {
        whole += held[2 * r] == 0 && held[2 * r + 1] == rows;
        if (held[2 * r + 1] > 0)
            holders++, owner = r;
    }
    if (whole == ranks)
        return ERASE_OK;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
    if (holders == 1 && held[2 * owner] == 0 && held[2 * owner + 1] == rows)
        fprintf(f, "table-wise on rank %d of %d", owner, ranks);
    else
        fprintf(f, "row-wise over %d ranks:", ranks);
    /* the ranks' parts in row order tile [0, rows): each row once */
    int64_t next = 0;
    erase_status_t st = ERASE_OK;
    for (int k = 0; k < holders && st == ERASE_OK; k++) {
        int at = -1;
        for (int r = 0; r < ranks; r++)
            if (held[2 * r + 1] > 0 && held[2 * r] == next && at < 0)
                at = r;
        if (at < 0) {
            st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s: the data-parallel ranks' rows do not cover its "
                             "%lld rows once (no rank's part starts at row %lld)", name, (long long)rows,
                             (long long)next);
            break;
        }
        if (holders > 1)
            fprintf(f, "%s [%lld, %lld) on rank %d", k ? "," : "", (long long)next,
                    (long long)(next + held[2 * at + 1]), at);
        next += held[2 * at + 1];
    }
    if (st == ERASE_OK && next != rows)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s: the data-parallel ranks hold %lld of its %lld rows",
                         name, (long long)next, (long long)rows);
    fclose(f);
    if (st != ERASE_OK) {
        free(text);
        return st;
    }
    *out = text;
    return ERASE_OK;
}

/* checkpoint_internal.h */
erase_status_t train_ckpt_find_sharding(train_ckpt_t *ck)
{
    int nt = ck->nmine[0] + ck->nmine[1], ranks = ck->e.w->dp_size;
    int64_t *mine = malloc(sizeof(int64_t) * 2 * (size_t)(nt ? nt : 1));
    int64_t *all = malloc(sizeof(int64_t) * 2 * (size_t)(nt ? nt : 1) * (size_t)ranks);
    int64_t *one = malloc(sizeof(int64_t) * 2 * (size_t)ranks);
    erase_status_t st = mine && all && one ? ERASE_OK : ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
    for (int i = 0; st == ERASE_OK && i < nt; i++) {
        const erase_ckpt_tensor_t *t = i < ck->nmine[0] ? &ck->mine[0][i] : &ck->mine[1][i - ck->nmine[0]];
        mine[2 * i] = t->row0;
        mine[2 * i + 1] = t->held;
    }
    if (st == ERASE_OK)
        st = erase_allgather(erase_dp_comm(), ck->e.host, mine, all, 2 * (size_t)nt, ERASE_DTYPE_I64);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(ck->e.host);
    for (int i = 0; st == ERASE_OK && i < nt; i++) {
        int g = i >= ck->nmine[0], k = g ? i - ck->nmine[0] : i;
        erase_ckpt_tensor_t *t = &ck->mine[g][k];
        for (int r = 0; r < ranks; r++) {
            one[2 * r] = all[(size_t)r * 2 * (size_t)nt + 2 * (size_t)i];
            one[2 * r + 1] = all[(size_t)r * 2 * (size_t)nt + 2 * (size_t)i + 1];
        }
        char *text;
        st = placement_text(t->name, t->dims[0], one, ranks, &text);
        if (st == ERASE_OK && text) {
            t->sharding = ck->t[g][ck->mine_at[g][k]].sharding = text;
            ck->sharded++;
        }
    }
    free(mine);
    free(all);
    free(one);
    return st;
}

/* erase_ckpt_gate_fn: every rank's verdict on the parts (ctx: train_ckpt_t);
 * with sharded tensors, once the file is written, every dp rank writes its
 * rows into it (erase_ckpt_write_rows, collective) and the ranks agree
 * again. */
static erase_status_t parts_written(void *ctx, erase_status_t st)
{
    train_ckpt_t *ck = ctx;
    st = train_ckpt_share_status(ck, st, "writing the checkpoint");
    if (st == ERASE_OK && ck->sharded)
        st = train_ckpt_share_status(ck,
                                     erase_ckpt_write_rows(ck->temp, erase_comm_mpi(erase_dp_comm()),
                                                           ck->mine[0], ck->nmine[0], ck->mine[1],
                                                           ck->nmine[1]),
                                     "writing the checkpoint's sharded rows");
    ck->agreed = st;
    return ck->agreed;
}

/* ---- writing ----------------------------------------------------------------- */

/* Write the checkpoint of position pos (collective). Errors: a failed
 * write (shared by every rank: ck->failed_alike), ERASE_ERR_COMM. */
static erase_status_t write_checkpoint(train_ckpt_t *ck, const train_ckpt_pos_t *pos)
{
    const train_options_t *o = ck->e.o;
    const erase_world_t *w = ck->e.w;
    double t0 = erase_now_s();
    /* paci: nothing in flight, and a new segment of the steps left */
    if (ck->e.pipe) {
        int64_t left = *ck->e.total_steps - pos->step;
        ERASE_CHECK(erase_pipe_drain(ck->e.pipe, left > 0 ? left : 1));
    }
    int np = ck->nmine[0], no = ck->nmine[1], nt = np + no;
    ERASE_CHECK(train_ckpt_stage(ck, 0, 1));
    ERASE_CHECK(train_ckpt_stage(ck, 1, 1));
    /* every replica must hold the same tensors: compare their checksums */
    int dp = w->dp_size;
    uint64_t *sums = malloc(sizeof(uint64_t) * (size_t)(nt ? nt : 1));
    uint64_t *all = malloc(sizeof(uint64_t) * (size_t)(nt ? nt : 1) * (size_t)dp);
    int64_t mine[4], *ranks = malloc(sizeof(int64_t) * 4 * (size_t)w->size);
    erase_ckpt_rank_t *rs = calloc((size_t)w->size, sizeof *rs);
    erase_status_t st = sums && all && ranks && rs ? ERASE_OK : ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
    for (int i = 0; st == ERASE_OK && i < nt; i++) {
        const erase_ckpt_tensor_t *t = i < np ? &ck->mine[0][i] : &ck->mine[1][i - np];
        /* a sharded tensor's rows differ between the ranks: each writes its own */
        sums[i] = t->sharding ? 0 : erase_ckpt_fnv1a64(t->data, held_bytes(t));
    }
    if (erase_ckpt_temp_path(o->checkpoint_dir, pos->step, ck->temp, sizeof ck->temp) != 0)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "--checkpoint-dir %s: path too long", o->checkpoint_dir);
    erase_reader_cursor_t cur = erase_reader_cursor(ck->e.train);
    mine[0] = o->seed;
    mine[1] = 0;
    mine[2] = cur.epoch;
    mine[3] = cur.samples;
    if (st == ERASE_OK)
        st = erase_allgather(erase_dp_comm(), ck->e.host, sums, all, (size_t)nt, ERASE_DTYPE_I64);
    if (st == ERASE_OK)
        st = erase_allgather(erase_world_comm(), ck->e.host, mine, ranks, 4, ERASE_DTYPE_I64);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(ck->e.host);
    for (int r = 1; st == ERASE_OK && r < dp; r++)
        for (int i = 0; st == ERASE_OK && i < nt; i++)
            if (all[(size_t)r * (size_t)nt + (size_t)i] != all[i])
                st = ERASE_ERROR(ERASE_ERR_COMM, "checkpoint at step %lld: data-parallel rank %d's %s/%s differs "
                                 "from rank 0's (checksums %016" PRIx64 " and %016" PRIx64 "): the replicas "
                                 "diverged", (long long)pos->step, r, i < np ? "params" : "optim",
                                 i < np ? ck->mine[0][i].name : ck->mine[1][i - np].name,
                                 all[(size_t)r * (size_t)nt + (size_t)i], all[i]);
    for (int r = 0; st == ERASE_OK && r < w->size; r++) {
        rs[r].rng[0] = (uint64_t)ranks[4 * r];
        rs[r].rng[1] = (uint64_t)ranks[4 * r + 1];
        rs[r].epoch = ranks[4 * r + 2];
        rs[r].samples = ranks[4 * r + 3];
        if (rs[r].epoch != cur.epoch || rs[r].samples != cur.samples)
            st = ERASE_ERROR(ERASE_ERR_COMM, "checkpoint at step %lld: rank %d's data cursor (epoch %lld, "
                             "sample %lld) is not this rank's (%lld, %lld)", (long long)pos->step, r,
                             (long long)rs[r].epoch, (long long)rs[r].samples, (long long)cur.epoch,
                             (long long)cur.samples);
    }
    erase_ckpt_report_t rep;
    memset(&rep, 0, sizeof rep);
    char *model = NULL, *options = NULL;
    size_t options_len = 0;
    int writer = w->dp_rank == 0; /* of this rank's stage's file */
    if (st == ERASE_OK && writer) {
        const int cap = 1 << 16;
        FILE *f = open_memstream(&options, &options_len);
        if (!(model = malloc((size_t)cap)) || !f)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "checkpoint: no memory");
        else if (erase_model_config_format(ck->e.cfg, model, cap) < 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: the model configuration cannot be written as text");
        else
            train_options_print(o, f);
        if (f)
            fclose(f);
    }
    int gated = 0; /* the writer told parts_written */
    if (st == ERASE_OK && writer) {
        erase_optim_clock_t c;
        st = erase_optimizer_read_clock(ck->e.opt, &c);
        erase_ckpt_meta_t m = { .step = pos->step,
                                .samples_seen = pos->samples_seen,
                                .epoch = cur.epoch,
                                .epoch_samples = cur.samples,
                                .global_batch = ck->e.global_batch,
                                .world_size = w->size,
                                .dp_size = w->dp_size,
                                .pp_size = w->pp_size,
                                .pp_layout = ck->layout,
                                .schedule = ck->schedule,
                                .dense_optimizer = o->optimizer,
                                .embedding_optimizer = o->embedding_optimizer,
                                .seed = (uint64_t)o->seed,
                                .clock_step = c.step,
                                .clock_lr = c.lr,
                                .model = model,
                                .options = options,
                                .embeddings = ck->sharded ? o->embeddings : NULL,
                                .tokenizer = ck->e.tokenizer,
                                .data_vocab = ck->e.data_vocab };
        if (st == ERASE_OK) {
            st = erase_ckpt_write_part(o->checkpoint_dir, &m, w->pp_rank, ck->mine[0], np, ck->mine[1], no, rs,
                                       w->size, sums, (int)o->keep_checkpoints, parts_written, ck, &rep);
            gated = 1;
        }
    }
    if (!gated) /* every rank takes part in the parts' agreement once */
        st = parts_written(ck, st);
    free(model);
    free(options);
    free(sums);
    free(all);
    free(ranks);
    free(rs);
    /* every rank learns whether rank 0 published it (a failure the parts'
     * agreement shared is known); the bytes of every part */
    if (ck->agreed == ERASE_OK)
        st = train_ckpt_share_status(ck, st, "writing the checkpoint");
    int64_t bytes = rep.bytes, total = 0;
    if (st == ERASE_OK && w->pp_size > 1)
        st = erase_allreduce(erase_world_comm(), ck->e.host, &bytes, &total, 1, ERASE_DTYPE_I64, ERASE_REDUCE_SUM);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(ck->e.host);
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        return st;
    }
    if (w->pp_size > 1)
        rep.bytes = total;
    double sec = erase_now_s() - t0;
    ck->count++;
    ck->seconds += sec;
    ck->bytes += (double)rep.bytes;
    ck->last_bytes = rep.bytes;
    ck->last_step = pos->step;
    ck->last_epoch = cur.epoch;
    ck->last_samples = cur.samples;
    if (w->rank == 0) {
        snprintf(ck->last_path, sizeof ck->last_path, "%s", rep.path);
        train_ckpt_set_notice(ck, -1);
        char parts[64] = "";
        if (w->pp_size > 1)
            snprintf(parts, sizeof parts, " and %d stage file%s (.stage<s>)", w->pp_size - 1,
                     w->pp_size == 2 ? "" : "s");
        printf("%sckpt   step %lld: %s%s, %.1f MB in %.3f s (%.0f MB/s written; %.3f s in all)%s\n",
               ck->e.tty ? "\r\033[K" : "", (long long)pos->step, rep.path, parts, (double)rep.bytes / 1e6, rep.seconds,
               rep.mb_per_s, sec, rep.removed ? ", older ones removed" : "");
        fflush(stdout);
        if (ck->metrics) {
            char v[48];
            json_line_start(ck->metrics, "checkpoint", pos->step, pos->samples_seen);
            fputs(",\"path\":", ck->metrics);
            json_string(ck->metrics, rep.path);
            fprintf(ck->metrics, ",\"bytes\":%lld,\"write_seconds\":%.6f,\"seconds\":%.6f,\"mb_per_s\":%s}\n",
                    (long long)rep.bytes, rep.seconds, sec, json_number(v, "%.1f", rep.mb_per_s));
            fflush(ck->metrics);
        }
    }
    return ERASE_OK;
}

/* Bytes a checkpoint of this run takes, about: the last one's, or before
 * the first every tensor's data. */
static int64_t checkpoint_bytes(const train_ckpt_t *ck)
{
    if (ck->last_bytes > 0)
        return ck->last_bytes;
    int64_t bytes = 0;
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < ck->n[g]; i++)
            bytes += (int64_t)sizeof(float) * erase_ckpt_tensor_numel(&ck->t[g][i]);
    return bytes;
}

/* Whether an error message tells of a full disk or quota (the system's
 * text, as HDF5 and the checks quote it). */
static int no_space(const char *why)
{
    return strstr(why, strerror(ENOSPC)) || strstr(why, strerror(EDQUOT));
}

/* A failed checkpoint of step `step`, every rank has it (failed_alike):
 * a full disk or quota that HDF5 met (io/ found none before writing) is
 * said as io/ says it, in one line naming the directory, the bytes needed
 * and free (rank 0's view); then
 * --checkpoint-failure stop returns the failure, continue warns (rank 0:
 * which checkpoint --resume auto takes now) and returns ERASE_OK. The
 * partial file is gone already (erase_ckpt_write_part removes it). */
static erase_status_t checkpoint_failed(train_ckpt_t *ck, int64_t step, erase_status_t st)
{
    const train_options_t *o = ck->e.o;
    char why[MESSAGE_MAX];
    snprintf(why, sizeof why, "%s", erase_error_reason());
    if (no_space(why) && !strstr(why, " bytes are free there (")) { /* HDF5's own (io/checkpoint.h) */
        struct statvfs fs;
        char free_text[64] = "unknown";
        unsigned long long avail = 0;
        int known = statvfs(o->checkpoint_dir, &fs) == 0;
        if (known) {
            avail = (unsigned long long)fs.f_bavail * fs.f_frsize;
            snprintf(free_text, sizeof free_text, "%llu", avail);
        }
        long long need = (long long)checkpoint_bytes(ck);
        int quota = strstr(why, strerror(EDQUOT)) != NULL;
        const char *errtext = strerror(quota ? EDQUOT : ENOSPC);
        /* the space went while it was written: say when (a quota is not in statvfs's free space) */
        if (known && avail >= (unsigned long long)need && !quota)
            st = ERASE_ERROR(st, "%s: no space for checkpoint ckpt-%lld.h5: the disk filled while it was written "
                             "(it needs about %lld bytes; %s bytes are free now, its partial file removed) (%s)",
                             o->checkpoint_dir, (long long)step, need, free_text, errtext);
        else
            st = ERASE_ERROR(st, "%s: no space for checkpoint ckpt-%lld.h5: it needs about %lld bytes, %s bytes "
                             "are free there (%s)", o->checkpoint_dir, (long long)step, need, free_text, errtext);
        snprintf(why, sizeof why, "%s", erase_error_reason());
    }
    if (strcmp(o->checkpoint_failure, "continue") || st != ERASE_ERR_IO)
        return st;
    ck->failed_alike = 0;
    ck->failures++;
    ck->failed_step = step;
    if (ck->e.w->rank == 0) {
        printf("%swarn   %s (--checkpoint-failure continue: no checkpoint of step %lld, the partial file removed; "
               "trying again at the next checkpoint; --resume auto takes %s)\n", ck->e.tty ? "\r\033[K" : "", why,
               (long long)step, ck->last_path[0] ? ck->last_path : "none: no checkpoint yet");
        fflush(stdout);
        if (getenv("ERASE_DEBUG_CKPT_FAILED_STOP")) /* a test frees space, then sends SIGCONT */
            raise(SIGSTOP);
    }
    return ERASE_OK;
}

static erase_status_t save(train_ckpt_t *ck, const train_ckpt_pos_t *pos)
{
    /* a run whose lock was taken over or removed writes nothing more (every rank stops) */
    erase_status_t st = ck->lock ? train_ckpt_lock_check(ck->lock, ck->e.o->checkpoint_dir) : ERASE_OK;
    ERASE_CHECK(train_ckpt_share_status(ck, st, "--checkpoint-dir"));
    train_ckpt_set_notice(ck, pos->step);
    st = write_checkpoint(ck, pos);
    if (st != ERASE_OK)
        train_ckpt_set_notice(ck, -1);
    return st == ERASE_OK || !ck->failed_alike ? st : checkpoint_failed(ck, pos->step, st);
}

/* ERASE_DEBUG_KILL_AT_STEP: a test's sudden death, its SIGUSR1 or its
 * SIGSTOP, after `step` (once). */
static void kill_hook(train_ckpt_t *ck, int64_t step)
{
    if (ck->kill_step >= 0 && step == ck->kill_step && ck->e.w->rank == ck->kill_rank) {
        ck->kill_step = -1;
        fflush(stdout);
        raise(ck->kill_sig);
    }
}

/* Collective: whether any rank got SIGTERM/SIGINT/SIGUSR1. */
static erase_status_t agree_on_signal(train_ckpt_t *ck, int32_t *any)
{
    int32_t flag = train_ckpt_pending_signal();
    *any = 0;
    ERASE_CHECK(erase_allreduce(erase_world_comm(), ck->e.host, &flag, any, 1, ERASE_DTYPE_I32, ERASE_REDUCE_MAX));
    ERASE_CHECK(erase_stream_synchronize(ck->e.host));
    return ERASE_OK;
}

int train_ckpt_due(const train_ckpt_t *ck, int64_t step)
{
    int64_t every = ck && ck->enabled ? ck->e.o->checkpoint_every : 0;
    return every > 0 && step % every == 0;
}

erase_status_t train_ckpt_poll(train_ckpt_t *ck, int64_t step, int *stop)
{
    *stop = 0;
    if (!ck)
        return ERASE_OK;
    kill_hook(ck, step);
    if (!ck->enabled)
        return ERASE_OK;
    int32_t any;
    ERASE_CHECK(agree_on_signal(ck, &any));
    ck->polled = 1;
    ck->signalled = any;
    *stop = any;
    return ERASE_OK;
}

erase_status_t train_ckpt_after_step(train_ckpt_t *ck, const train_ckpt_pos_t *pos, int *stop)
{
    *stop = 0;
    if (!ck)
        return ERASE_OK;
    kill_hook(ck, pos->step);
    if (!ck->enabled)
        return ERASE_OK;
    int32_t any = ck->signalled;
    if (!ck->polled)
        ERASE_CHECK(agree_on_signal(ck, &any));
    ck->polled = 0;
    int64_t every = ck->e.o->checkpoint_every;
    if (any || (every > 0 && pos->step % every == 0))
        ERASE_CHECK(save(ck, pos));
    *stop = any;
    return ERASE_OK;
}

erase_status_t train_ckpt_final(train_ckpt_t *ck, const train_ckpt_pos_t *pos)
{
    if (!ck || !ck->enabled)
        return ERASE_OK;
    erase_reader_cursor_t cur = erase_reader_cursor(ck->e.train);
    if (ck->last_step == pos->step && ck->last_epoch == cur.epoch && ck->last_samples == cur.samples)
        return ERASE_OK;
    if (ck->failures && ck->failed_step == pos->step) /* not written just now (continue): warned already */
        return ERASE_OK;
    ERASE_CHECK(save(ck, pos));
    return ERASE_OK;
}

erase_status_t train_ckpt_rewrite(train_ckpt_t *ck, const train_ckpt_pos_t *pos)
{
    if (!ck || !ck->enabled)
        return ERASE_OK;
    ck->last_step = -1;
    return train_ckpt_final(ck, pos);
}

#include "apps/train/pipeline.h"

#include "apps/train/json.h"
#include "io/checkpoint.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/nn/train_step.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* ---- where the stages begin --------------------------------------------------- */

static erase_status_t parse_list(const char *spec, int P, int blocks, train_stages_t *out)
{
    const char *p = spec;
    for (int s = 0; s < P; s++) {
        char *end;
        long b = strtol(p, &end, 10);
        int prev = s ? out->first[s - 1] : -1;
        if (end == p || (s == 0 && b != 0) || b <= prev || b >= blocks || (*end && *end != ',') ||
            (s + 1 < P && *end != ',') || (s + 1 == P && *end))
            return ERASE_ERROR(ERASE_ERR_INVALID, "--stages %s: expected even, auto or the first block of each "
                               "of the %d stages, increasing from 0 below %d blocks (e.g. %s)", spec, P, blocks,
                               P == 2 ? "0,3" : "0,2,4");
        out->first[s] = (int)b;
        p = end + (*end == ',');
    }
    return ERASE_OK;
}

/* Each block's forward + backward time (ms) on a random micro-batch: the
 * median of 3 rounds after one warm-up round. */
static erase_status_t time_blocks(const erase_model_config_t *cfg, erase_device_t *dev, int micro, double *ms,
                                  int *blocks)
{
    erase_network_t *net = NULL;
    erase_stream_t *s = NULL;
    erase_batch_t batch = { 0 };
    ERASE_CHECK(erase_network_create(dev, cfg, micro, &net));
    int B = erase_network_blocks(net);
    *blocks = B;
    double t[ERASE_MAX_BLOCKS][3];
    erase_status_t st = erase_stream_create(dev, &s);
    int have_batch = 0;
    if (st == ERASE_OK && (st = erase_batch_random(net, micro, 1, &batch)) == ERASE_OK)
        have_batch = 1;
    for (int round = -1; st == ERASE_OK && round < 3; round++) {
        double f[ERASE_MAX_BLOCKS];
        for (int b = 0; st == ERASE_OK && b < B; b++) {
            double t0 = erase_now_s();
            st = erase_network_forward_block(net, b, s, &batch);
            if (st == ERASE_OK)
                st = erase_stream_synchronize(s);
            f[b] = erase_now_s() - t0;
        }
        for (int b = B - 1; st == ERASE_OK && b >= 0; b--) {
            double t0 = erase_now_s();
            st = erase_network_backward_block(net, b, s, &batch);
            if (st == ERASE_OK)
                st = erase_stream_synchronize(s);
            if (round >= 0)
                t[b][round] = 1e3 * (f[b] + erase_now_s() - t0);
        }
    }
    for (int b = 0; st == ERASE_OK && b < B; b++)
        ms[b] = erase_quantile(t[b], 3, 0.5);
    if (have_batch)
        erase_batch_free_random(net, &batch);
    erase_stream_destroy(s);
    erase_network_destroy(net);
    return st;
}

/* The contiguous split of B blocks into P stages whose slowest stage is
 * fastest: best[s][b] = the least maximum over splits of blocks [0, b)
 * into s stages. */
static void balance(const double *ms, int B, int P, uint32_t cuts, int local, int *first)
{
    double pre[ERASE_MAX_BLOCKS + 1] = { 0 };
    for (int b = 0; b < B; b++)
        pre[b + 1] = pre[b] + ms[b];
    static double best[ERASE_MAX_BLOCKS + 2][ERASE_MAX_BLOCKS + 1];
    static int from[ERASE_MAX_BLOCKS + 2][ERASE_MAX_BLOCKS + 1];
    for (int s = 0; s <= P; s++)
        for (int b = 0; b <= B; b++)
            best[s][b] = DBL_MAX;
    best[0][0] = 0;
    for (int s = 1; s <= P; s++)
        for (int b = s; b <= B; b++)
            for (int a = s - 1; a < b; a++) {
                if (best[s - 1][a] == DBL_MAX || (a > 0 && (int)(cuts >> a & 1u) != local))
                    continue; /* a stage begins at a cut under local, else at an attached boundary */
                double stage = pre[b] - pre[a], worst = stage > best[s - 1][a] ? stage : best[s - 1][a];
                if (worst < best[s][b]) {
                    best[s][b] = worst;
                    from[s][b] = a;
                }
            }
    int b = B;
    if (best[P][B] == DBL_MAX) /* not enough boundaries of the kind: the caller checked */
        return;
    for (int s = P; s >= 1; s--) {
        first[s - 1] = from[s][b];
        b = from[s][b];
    }
}

/* A stage boundary of gpipe, 1f1b and paci must be attached (the
 * gradient crosses it); of local, a cut (only activations cross it). */
static erase_status_t check_boundaries(const erase_model_config_t *cfg, const train_stages_t *st)
{
    for (int s = 1; s < st->P; s++) {
        int cut = cfg->cut_mask >> st->first[s] & 1u;
        if (cut && !st->local)
            return ERASE_ERROR(ERASE_ERR_INVALID, "--stages: stage %d begins at block %d, after a cut: a stage "
                               "boundary of gpipe, 1f1b and paci carries the gradient back (stages that begin "
                               "at cuts are --schedule local); choose other stages or --cuts", s, st->first[s]);
        if (!cut && st->local)
            return ERASE_ERROR(ERASE_ERR_INVALID, "--stages: stage %d begins at block %d, not at a cut: a stage "
                               "boundary of --schedule local must be a cut (only activations cross it); choose "
                               "other stages (--stages auto picks cuts) or --cuts", s, st->first[s]);
    }
    return ERASE_OK;
}

int train_pipeline_max_stages(const erase_model_config_t *cfg, int local)
{
    int B = erase_model_config_blocks(cfg), most = 1;
    for (int b = 1; b < B; b++)
        most += local ? (int)(cfg->cut_mask >> b & 1u) : !(cfg->cut_mask >> b & 1u);
    return most;
}

erase_status_t train_pipeline_stages(const char *spec, const erase_model_config_t *cfg, int P, int local,
                                     train_stages_t *out)
{
    memset(out, 0, sizeof *out);
    int B = erase_model_config_blocks(cfg), attached = train_pipeline_max_stages(cfg, 0),
        cuts = train_pipeline_max_stages(cfg, 1);
    out->P = P;
    out->local = local;
    if (P > B)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d: the %s model has %d blocks, at most one stage per block",
                           P, erase_model_config_name(cfg), B);
    if (P > attached && !local)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d: the model has %d attached boundaries (stage boundaries "
                           "carry the gradient: they cannot be cuts); use fewer stages or fewer --cuts, or --schedule local (its "
                           "stage boundaries are cuts)", P,
                           attached - 1);
    if (P > cuts && local)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d --schedule local: the model has %d cut%s (stage boundaries "
                           "of local parallelism are cuts); use fewer stages or more --cuts", P, cuts - 1,
                           cuts == 2 ? "" : "s");
    out->first[P] = B;
    if (!strcmp(spec, "auto")) {
        out->measured = 1; /* erase-train measures: train_pipeline_balance */
        return ERASE_OK;
    }
    if (!strcmp(spec, "even"))
        for (int s = 0; s < P; s++)
            out->first[s] = (int)((int64_t)s * B / P);
    else
        ERASE_CHECK(parse_list(spec, P, B, out));
    return check_boundaries(cfg, out);
}

erase_status_t train_pipeline_balance(const erase_model_config_t *cfg, erase_device_t *dev, int micro,
                                      erase_stream_t *host, train_stages_t *st)
{
    int B;
    ERASE_CHECK(time_blocks(cfg, dev, micro, st->block_ms, &B));
    /* every rank measured: the mean, so every rank splits alike */
    ERASE_CHECK(erase_allreduce(erase_world_comm(), host, st->block_ms, st->block_ms, (size_t)B, ERASE_DTYPE_F64,
                                ERASE_REDUCE_MEAN));
    ERASE_CHECK(erase_stream_synchronize(host));
    balance(st->block_ms, B, st->P, cfg->cut_mask, st->local, st->first);
    return check_boundaries(cfg, st);
}

erase_status_t train_pipeline_stages_resumed(const char *path, const erase_model_config_t *cfg,
                                             erase_stream_t *host, train_stages_t *st)
{
    erase_ckpt_t *ck = NULL;
    train_stages_t got = *st;
    int found = 0;
    /* validated as the restore validates it, no tensor held (only /meta is read) */
    if (erase_ckpt_open_path_flags(path, ERASE_CKPT_OPEN_LAZY_ROWS | ERASE_CKPT_OPEN_STREAM_WHOLE, NULL, NULL, &ck) ==
        ERASE_OK) {
        /* "2 stages: stage 0 holds blocks 0-2, stage 1 holds blocks 3-6" */
        const char *p = erase_ckpt_meta(ck)->pp_layout;
        int s = 0, a, b, n;
        while (p && (p = strstr(p, "stage ")) && sscanf(p, "stage %d holds blocks %d-%d%n", &s, &a, &b, &n) == 3) {
            if (s == found && s < got.P)
                got.first[found++] = a;
            p += n;
        }
        erase_ckpt_close(ck);
    }
    erase_error_clear();
    found = found == st->P && got.first[0] == 0 && check_boundaries(cfg, &got) == ERASE_OK;
    for (int s = 1; found && s < st->P; s++)
        found = got.first[s] > got.first[s - 1] && got.first[s] < got.first[st->P];
    /* every rank takes the same way (they read the same file) */
    int all;
    ERASE_CHECK(erase_allreduce(erase_world_comm(), host, &found, &all, 1, ERASE_DTYPE_I32, ERASE_REDUCE_SUM));
    ERASE_CHECK(erase_stream_synchronize(host));
    int any = all > 0;
    if (any && all != erase_comm_size(erase_world_comm()))
        return ERASE_ERROR(ERASE_ERR_STATE, "--stages auto --resume %s: not every rank could read the "
                           "checkpoint's stages", path);
    if (any) {
        got.measured = 2;
        *st = got;
    }
    return ERASE_OK;
}

void train_pipeline_stages_text(const train_stages_t *st, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (int s = 0; s < st->P && n < size; s++) {
        int a = st->first[s], b = st->first[s + 1] - 1;
        int k = a == b ? snprintf(buf + n, size - n, "%s%d", s ? " | " : "", a)
                       : snprintf(buf + n, size - n, "%s%d-%d", s ? " | " : "", a, b);
        if (k < 0)
            break;
        n += (size_t)k;
    }
}

/* ---- accounting ------------------------------------------------------------------ */

/* What each rank contributes to the summary (doubles, gathered). */
enum { F_BUBBLE, F_BUSY, F_WALL, F_STEPS, F_MICRO, F_MAXDRIFT, F_BOUND, F_SENT, F_RECV, F_SLOTS, F_SLOT_BYTES,
       F_DRAINS, F_DRAIN_MS, F_FORWARD, F_BACKWARD, F_UPDATE, F_TIMED, F_ACT_BYTES, F_GRAD_BYTES, F_GRAD_RECVS,
       F_MAXLAG, F_LAGGED, F_LAG0, F_DRIFT0, NFIELDS = F_DRIFT0 + ERASE_PIPE_MAX_DRIFT };

erase_status_t train_pipeline_gather(erase_pipe_t *pipe, const erase_pipe_stats_t *since, const erase_world_t *w,
                                     erase_stream_t *host, double **out)
{
    *out = NULL;
    erase_pipe_stats_t ps;
    erase_pipe_stats(pipe, &ps);
    double mine[NFIELDS] = { 0 };
    mine[F_BUSY] = ps.busy_ms - since->busy_ms;
    mine[F_WALL] = ps.wall_ms - since->wall_ms;
    mine[F_BUBBLE] = mine[F_WALL] > 0 ? 1 - mine[F_BUSY] / mine[F_WALL] : 0;
    mine[F_TIMED] = (double)(ps.steps - since->steps);
    mine[F_STEPS] = (double)ps.steps;
    mine[F_MICRO] = (double)ps.micro_batches;
    mine[F_MAXDRIFT] = ps.max_drift;
    mine[F_BOUND] = ps.drift_bound;
    mine[F_SENT] = (double)ps.bytes_sent;
    mine[F_RECV] = (double)ps.bytes_received;
    mine[F_SLOTS] = ps.slots;
    mine[F_SLOT_BYTES] = (double)ps.slot_bytes;
    mine[F_DRAINS] = (double)ps.drains;
    mine[F_DRAIN_MS] = ps.drain_ms;
    mine[F_FORWARD] = ps.action_ms[PIPE_FORWARD] - since->action_ms[PIPE_FORWARD];
    mine[F_BACKWARD] = ps.action_ms[PIPE_BACKWARD] - since->action_ms[PIPE_BACKWARD];
    mine[F_UPDATE] = ps.action_ms[PIPE_UPDATE] - since->action_ms[PIPE_UPDATE];
    mine[F_ACT_BYTES] = (double)ps.activation_bytes;
    mine[F_GRAD_BYTES] = (double)ps.gradient_bytes;
    mine[F_GRAD_RECVS] = (double)ps.gradient_receives;
    mine[F_MAXLAG] = ps.max_lag;
    mine[F_LAGGED] = (double)ps.lag_batches;
    mine[F_LAG0] = (double)ps.lag[0];
    for (int d = 0; d < ERASE_PIPE_MAX_DRIFT; d++)
        mine[F_DRIFT0 + d] = (double)ps.drift[d];
    double *all = malloc(sizeof(double) * NFIELDS * (size_t)w->size);
    if (!all)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory for the summary");
    erase_status_t err = erase_allgather(erase_world_comm(), host, mine, all, NFIELDS, ERASE_DTYPE_F64);
    if (err == ERASE_OK)
        err = erase_stream_synchronize(host);
    if (err != ERASE_OK) {
        free(all);
        return err;
    }
    *out = all;
    return ERASE_OK;
}

void train_pipeline_print(const double *all, const erase_pipe_options_t *po, const train_stages_t *st,
                          const erase_world_t *w, FILE *metrics, int64_t step, int64_t samples_seen)
{
    int P = st->P, M = po->micro_batches;
    char stages[256];
    train_pipeline_stages_text(st, stages, sizeof stages);
    int local = po->kind == PIPE_LOCAL;
    /* gpipe, 1f1b: the flush's (P-1)/(M+P-1); local has no flush (its
     * fill is once a segment, in the warm-up); paci none printed */
    double analytic = local ? 0.0 : pipe_bubble_analytic(P, M);
    printf("  pipeline   %s, %d stage%s x %d dp, %d micro-batch%s of up to %d sample%s", pipe_kind_name(po->kind), P,
           P == 1 ? "" : "s", w->dp_size, M, M == 1 ? "" : "es", po->micro_size, po->micro_size == 1 ? "" : "s");
    if (po->kind == PIPE_PACI)
        printf(", update every %d backward%s per stage", po->accumulate, po->accumulate == 1 ? "" : "s");
    printf("; stages %s%s; early backward inside stages %s\n", stages,
           st->measured == 2 ? " (auto: the resumed checkpoint's)"
           : st->measured ? " (auto: balanced by measured block times)" : "",
           po->kind == PIPE_PACI ? "off (paci)"
           : !po->early_backward ? "off"
           : st->inner_cuts ? "on (side stream)"
                            : "off (no cut inside a stage)");
    if (local)
        printf("  local      stage s trains in step t the batch of step t - s (the fill: its first s steps of a "
               "segment); only activations cross stages; drained at checkpoints, evaluations and the end\n");
    if (metrics) {
        json_line_start(metrics, "pipeline", step, samples_seen);
        fprintf(metrics, ",\"schedule\":\"%s\",\"stages\":%d,\"dp\":%d,\"micro_batches\":%d,\"accumulate\":%d,"
                         "\"analytic_bubble\":%.6f,\"per_stage\":[", pipe_kind_name(po->kind), P, w->dp_size, M,
                po->accumulate, po->kind == PIPE_PACI ? 0.0 : analytic);
    }
    /* imbalance: the busiest stage's busy time per timed step minus this
     * stage's, over this stage's wall time, at most its bubble: the part of
     * its bubble that comes from the stages' unequal work in this run (the
     * analytic bubble assumes equal stages); bubble - imbalance is the rest
     * (fill, drain, message latency). The cap: a stage whose wall per step
     * is shorter than the busiest stage's busy time (its step starts late,
     * e.g. local's stage 0, which waits for no input, after the host's work
     * between steps) waits for the busiest partly between its steps, where
     * neither its wall nor its bubble counts */
    double busiest = 0;
    for (int s = 0; s < P; s++) {
        const double *f = all + (size_t)s * NFIELDS;
        double b = f[F_BUSY] / (f[F_TIMED] > 0 ? f[F_TIMED] : 1);
        busiest = b > busiest ? b : busiest;
    }
    for (int s = 0; s < P; s++) {
        const double *f = all + (size_t)s * NFIELDS; /* dp replica 0: world rank s */
        double steps = f[F_STEPS] > 0 ? f[F_STEPS] : 1, timed = f[F_TIMED] > 0 ? f[F_TIMED] : 1;
        int a = st->first[s], b = st->first[s + 1] - 1;
        char hist[512];
        size_t n = 0;
        hist[0] = 0;
        for (int d = 0; d < ERASE_PIPE_MAX_DRIFT && n < sizeof hist; d++)
            if (f[F_DRIFT0 + d] > 0) {
                int k = snprintf(hist + n, sizeof hist - n, "%s%d:%.0f", n ? " " : "", d, f[F_DRIFT0 + d]);
                n += k > 0 ? (size_t)k : 0;
            }
        if (a == b)
            printf("  stage %-4d block %d: bubble %.1f%%", s, a, 100 * f[F_BUBBLE]);
        else
            printf("  stage %-4d blocks %d-%d: bubble %.1f%%", s, a, b, 100 * f[F_BUBBLE]);
        double imbalance = f[F_WALL] > 0 ? (busiest - f[F_BUSY] / timed) / (f[F_WALL] / timed) : 0;
        if (imbalance > f[F_BUBBLE])
            imbalance = f[F_BUBBLE];
        if (po->kind != PIPE_PACI)
            printf(" (analytic %.1f%%; imbalance %.1f%%)", 100 * analytic, 100 * imbalance);
        else
            printf(" (imbalance %.1f%%)", 100 * imbalance);
        printf(" of %.1f ms per step (busy: forward %.1f, backward %.1f, update %.1f)", f[F_WALL] / timed,
               f[F_FORWARD] / timed, f[F_BACKWARD] / timed, f[F_UPDATE] / timed);
        if (local && s == 0)
            printf(", version lag none (no input from a stage)");
        else if (local)
            printf(", version lag max %.0f (%.0f of %.0f batches at lag 0)", f[F_MAXLAG], f[F_LAG0], f[F_LAGGED]);
        if (local)
            printf(", %.0f gradients received, %.2f MB sent and %.2f MB received per step (1f1b: %.2f MB, each "
                   "activation's gradient back: %.0f%%)", f[F_GRAD_RECVS], f[F_SENT] / steps / 1e6,
                   f[F_RECV] / steps / 1e6, 2 * f[F_ACT_BYTES] / steps / 1e6,
                   f[F_ACT_BYTES] > 0 ? 100 * (f[F_SENT] + f[F_RECV]) / (2 * f[F_ACT_BYTES]) : 0.0);
        else
            printf(", drift max %.0f (bound %.0f; micro-batches by drift %s), %.2f MB sent and %.2f MB received per "
                   "step", f[F_MAXDRIFT], f[F_BOUND], hist, f[F_SENT] / steps / 1e6, f[F_RECV] / steps / 1e6);
        /* 1f1b keeps min(M, P-s) micro-batches in flight: as many replicas */
        int k1f1b = M < P - s ? M : P - s;
        printf(", %.0f activation slot%s (%.1f MB", f[F_SLOTS], f[F_SLOTS] == 1 ? "" : "s", f[F_SLOT_BYTES] / 1e6);
        if (local && f[F_SLOTS] > 0)
            printf("; 1f1b: %d, %.1f MB", k1f1b, f[F_SLOT_BYTES] / f[F_SLOTS] * k1f1b / 1e6);
        printf(")");
        if (f[F_DRAINS] > 0)
            printf(", %.0f drain%s (%.1f ms each)", f[F_DRAINS], f[F_DRAINS] == 1 ? "" : "s",
                   f[F_DRAIN_MS] / f[F_DRAINS]);
        printf("\n");
        if (metrics) {
            fprintf(metrics, "%s{\"stage\":%d,\"first_block\":%d,\"last_block\":%d,\"bubble\":%.6f,\"imbalance\":%.6f,"
                             "\"busy_ms\":%.3f,\"wall_ms\":%.3f,\"forward_ms\":%.3f,\"backward_ms\":%.3f,\"update_ms\":%.3f,"
                             "\"timed_steps\":%.0f,\"max_drift\":%.0f,\"drift_bound\":%.0f,\"drift\":[", s ? "," : "", s, a, b, f[F_BUBBLE],
                    imbalance, f[F_BUSY], f[F_WALL], f[F_FORWARD], f[F_BACKWARD], f[F_UPDATE], f[F_TIMED], f[F_MAXDRIFT], f[F_BOUND]);
            int last = 0;
            for (int d = 0; d < ERASE_PIPE_MAX_DRIFT; d++)
                if (f[F_DRIFT0 + d] > 0)
                    last = d;
            for (int d = 0; d <= last; d++)
                fprintf(metrics, "%s%.0f", d ? "," : "", f[F_DRIFT0 + d]);
            fprintf(metrics, "],\"bytes_sent_per_step\":%.0f,\"bytes_received_per_step\":%.0f,"
                             "\"activation_bytes_per_step\":%.0f,\"gradient_bytes_per_step\":%.0f,"
                             "\"gradients_received\":%.0f,\"max_lag\":%.0f,\"lag_batches\":%.0f,\"lag0_batches\":%.0f,"
                             "\"slots\":%.0f,\"slot_bytes\":%.0f,\"drains\":%.0f,\"drain_ms\":%.3f}",
                    f[F_SENT] / steps, f[F_RECV] / steps, f[F_ACT_BYTES] / steps, f[F_GRAD_BYTES] / steps,
                    f[F_GRAD_RECVS], f[F_MAXLAG], f[F_LAGGED], f[F_LAG0], f[F_SLOTS], f[F_SLOT_BYTES], f[F_DRAINS],
                    f[F_DRAIN_MS]);
        }
    }
    if (metrics) {
        fprintf(metrics, "]}\n");
        fflush(metrics);
    }
}

/*
 * erase-train's resume (--resume auto|PATH, --init-from): rank 0 picks
 * the checkpoint (the newest that validates, setting aside the damaged and
 * those newer than where the run starts) and loads it; the other ranks get
 * its values by broadcast, or load their own rows (sharded tables) and
 * stage files (pipelines); the options that changed since the
 * checkpoint's run are printed.
 * apps/train/checkpoint.h describes who does what.
 */
#include "apps/train/checkpoint_internal.h"
#include "apps/train/checkpoint_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Print the options that differ between the checkpoint's run and this one
 * (all but --resume and --init-from*; --batch and --global-batch only when
 * the global batch they make differs: same_batch 0). */
static void note_option_changes(const char *old_text, const train_options_t *o, int same_batch)
{
    char *now = NULL, *changes = NULL;
    size_t len = 0, clen = 0;
    FILE *f = open_memstream(&now, &len);
    if (!f)
        return;
    train_options_print(o, f);
    fclose(f);
    FILE *c = open_memstream(&changes, &clen);
    int count = 0;
    for (const char *line = now; c && line && *line;) {
        const char *end = strchr(line, '\n');
        char name[64], was[1100], is[1100];
        const char *eq = strstr(line, " = ");
        if (eq && (size_t)(eq - line) < sizeof name) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - line), line);
            int batch = !strcmp(name, "batch") || !strcmp(name, "global_batch");
            if (strcmp(name, "resume") && strncmp(name, "init_from", 9) && !(batch && same_batch) &&
                train_options_value(now, name, is, sizeof is) == 0) {
                if (train_options_value(old_text, name, was, sizeof was) != 0)
                    snprintf(was, sizeof was, "(not set)");
                if (strcmp(was, is))
                    fprintf(c, "%s%s %s -> %s", count++ ? "; " : "", name, was, is);
            }
        }
        line = end ? end + 1 : NULL;
    }
    if (c)
        fclose(c);
    if (count)
        printf("note   options that differ from the checkpoint's run: %s\n", changes);
    free(changes);
    free(now);
}

/* Load group g of checkpoint f into this rank's host copies: all of
 * them, or from a whole (data-parallel) checkpoint into a pipeline stage
 * the stage's blocks. */
static erase_status_t load_group(train_ckpt_t *ck, const erase_ckpt_t *f, erase_ckpt_group_t g)
{
    int i = g == ERASE_CKPT_PARAMS ? 0 : 1;
    const char *what = i == 0 ? "the model" : "the optimizer state";
    if (erase_ckpt_meta(f)->pp_size == 1 && ck->e.w->pp_size > 1)
        return erase_ckpt_load_part(f, g, ck->mine[i], ck->nmine[i], what);
    return erase_ckpt_load(f, g, ck->mine[i], ck->nmine[i], what);
}

/* Rank 0: check that the checkpoint fits this run and load its tensors
 * into the host data. */
static erase_status_t check_and_load(train_ckpt_t *ck, const erase_ckpt_t *f, int resume, int optim)
{
    const erase_ckpt_meta_t *m = erase_ckpt_meta(f);
    const erase_world_t *w = ck->e.w;
    if (ck->e.o->eval_only)
        ERASE_CHECK(erase_ckpt_need_whole(f));
    /* a pipeline checkpoint's stages each load their own file: the stages
     * must be the same; a whole checkpoint loads into any stages (each
     * reads its blocks) */
    if (m->pp_size > 1 && (m->pp_size != w->pp_size || strcmp(m->pp_layout, ck->layout)))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the pipeline layout differs: the checkpoint has %d stage%s "
                           "(%s), this run %d (%s): a pipeline checkpoint is loaded by the same --pp and --stages",
                           erase_ckpt_path(f), m->pp_size, m->pp_size == 1 ? "" : "s", m->pp_layout, w->pp_size,
                           ck->layout);
    ERASE_CHECK(load_group(ck, f, ERASE_CKPT_PARAMS));
    int tables = erase_model_config_has_tables(ck->e.cfg); /* the tables' optimizer: ctr's and dcn's only */
    const char *instead = resume ? "--init-from for the parameters only"
                                 : "drop --init-from-optimizer to load the parameters only";
    if (optim && tables && (strcmp(m->dense_optimizer, ck->e.o->optimizer) ||
                            strcmp(m->embedding_optimizer, ck->e.o->embedding_optimizer)))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the optimizer differs: the checkpoint's is %s (dense) + %s "
                           "(tables), this run's %s + %s (use the same ones, or %s)",
                           erase_ckpt_path(f), m->dense_optimizer, m->embedding_optimizer, ck->e.o->optimizer,
                           ck->e.o->embedding_optimizer, instead);
    if (optim && !tables && strcmp(m->dense_optimizer, ck->e.o->optimizer))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the optimizer differs: the checkpoint's is %s, this run's %s "
                           "(use the same one, or %s)", erase_ckpt_path(f), m->dense_optimizer, ck->e.o->optimizer,
                           instead);
    if (optim)
        ERASE_CHECK(load_group(ck, f, ERASE_CKPT_OPTIM));
    return ERASE_OK;
}

/* The newest checkpoint of path's directory older than path ("" if none):
 * offered when path itself cannot be used. */
static void previous_checkpoint(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    int64_t step = erase_ckpt_name_step(path);
    if (step < 0)
        return;
    char dir[ERASE_CKPT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    char **paths;
    int n;
    if (erase_ckpt_candidates(dir, &paths, &n) != ERASE_OK) {
        erase_error_clear();
        return;
    }
    int64_t best = -1;
    for (int i = 0; i < n; i++) {
        int64_t s = erase_ckpt_name_step(paths[i]);
        if (s < step && s > best) {
            best = s;
            snprintf(out, size, "%s", paths[i]);
        }
    }
    erase_ckpt_candidates_free(paths, n);
}

/* The damaged checkpoints passed over in a checkpoint directory. */
typedef struct {
    char **paths;
    int n;
} skipped_t;

static void skipped_free(skipped_t *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->paths[i]);
    free(s->paths);
    s->paths = NULL;
    s->n = 0;
}

static const char *program = "erase-train";

void train_ckpt_program(const char *name)
{
    program = name;
}

/* erase_ckpt_skip_fn: say so, and remember the path (ctx: skipped_t). */
static void skipped_checkpoint(void *ctx, const char *path, const char *why)
{
    fprintf(stderr, "%s: checkpoint %s is damaged, skipping it: %s\n", program, path, why);
    fflush(stderr);
    skipped_t *s = ctx;
    char **grown = realloc(s->paths, (size_t)(s->n + 1) * sizeof *grown);
    if (!grown)
        return; /* it is only not renamed */
    s->paths = grown;
    if ((s->paths[s->n] = strdup(path)))
        s->n++;
}

/* Rank 0: pick and load (stage 0's tensors). *action: 0 nothing, 1
 * resume, 2 init; path: the checkpoint taken. */
static erase_status_t pick(train_ckpt_t *ck, int *action, int64_t hdr[8], char path[ERASE_CKPT_PATH_MAX])
{
    const train_options_t *o = ck->e.o;
    int resume = o->resume[0] != 0;
    const char *want = resume ? o->resume : o->init_from;
    const char *dir = NULL;
    *action = 0;
    if (resume && !strcmp(want, "auto"))
        dir = o->checkpoint_dir;
    else {
        struct stat sb;
        if (stat(want, &sb) == 0 && S_ISDIR(sb.st_mode))
            dir = want; /* a checkpoint directory: its newest usable checkpoint */
    }
    if (!resume && train_ckpt_is_safetensors(want)) { /* weights made by erase-export or elsewhere */
        erase_status_t st = train_ckpt_import(ck, want);
        if (st == ERASE_OK) {
            *action = 2;
            hdr[0] = 1;
            snprintf(path, ERASE_CKPT_PATH_MAX, "%s", want);
        }
        return st;
    }
    erase_ckpt_t *f = NULL;
    erase_status_t st = ERASE_OK;
    skipped_t skipped = { NULL, 0 }; /* damaged ones passed over in dir */
    /* sharded tables: validated alike, but no tensor held at open, so that
     * a table written whole is not held whole here (io/checkpoint.h) */
    int flags = ERASE_CKPT_OPEN_LAZY_ROWS | (ck->sharded ? ERASE_CKPT_OPEN_STREAM_WHOLE : 0);
    if (dir) {
        st = erase_ckpt_open_newest_flags(dir, flags, skipped_checkpoint, &skipped, &f);
        if (st == ERASE_OK && !f)
            skipped_free(&skipped);
        if (st != ERASE_OK) {
            char why[MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", erase_error_reason());
            st = ERASE_ERROR(st, "--%s %s: %s", resume ? "resume" : "init-from", want, why);
        } else if (!f && resume && !strcmp(want, "auto")) {
            printf("resume no checkpoint in %s yet: starting at step 0\n", dir);
            return ERASE_OK;
        } else if (!f) {
            return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: no checkpoint (ckpt-<step>.h5) in this directory",
                               resume ? "resume" : "init-from", want);
        }
    } else {
        st = erase_ckpt_open_flags(want, flags, &f); /* a file named: its error is the answer */
        if (st != ERASE_OK) {
            char why[MESSAGE_MAX], other[ERASE_CKPT_PATH_MAX];
            snprintf(why, sizeof why, "%s", erase_error_reason());
            previous_checkpoint(want, other, sizeof other);
            st = ERASE_ERROR(st, "--%s %s: %s%s%s", resume ? "resume" : "init-from", want, why,
                             other[0] ? "; the previous checkpoint there is " : "", other);
        }
    }
    int load_optim = resume || o->init_from_optimizer;
    if (st == ERASE_OK)
        st = check_and_load(ck, f, resume, load_optim);
    /* Resumed in the run's own directory from an older checkpoint: the
     * damaged newer ones are renamed ckpt-<step>.h5.damaged (a pipeline's
     * stage files with them: erase_ckpt_rename), so that keeping
     * the newest --keep-checkpoints does not count them (and delete the good
     * older one instead) and the next resume does not try them again. When
     * none is usable, or the run is refused, they stay. */
    for (int i = 0; st == ERASE_OK && resume && !strcmp(want, "auto") && i < skipped.n; i++) {
        char aside[ERASE_CKPT_PATH_MAX + 16];
        snprintf(aside, sizeof aside, "%s.damaged", skipped.paths[i]);
        int stages;
        if (erase_ckpt_rename(skipped.paths[i], aside, &stages) == ERASE_OK)
            printf("resume damaged %s renamed %s%s (not counted by --keep-checkpoints)\n", skipped.paths[i], aside,
                   train_ckpt_stage_files(stages));
        else { /* it stays where it is, passed over again by the next resume */
            fprintf(stderr, "erase-train: damaged checkpoint %s not set aside: %s\n", skipped.paths[i],
                    erase_error_reason());
            erase_error_clear();
        }
    }
    skipped_free(&skipped);
    if (st == ERASE_OK) {
        const erase_ckpt_meta_t *m = erase_ckpt_meta(f);
        const erase_world_t *w = ck->e.w;
        *action = resume ? 1 : 2;
        snprintf(path, ERASE_CKPT_PATH_MAX, "%s", erase_ckpt_path(f));
        hdr[0] = m->pp_size;
        hdr[2] = m->step;
        hdr[3] = m->epoch;
        hdr[4] = m->epoch_samples;
        hdr[5] = m->samples_seen;
        hdr[6] = m->clock_step;
        memcpy(&hdr[7], &m->clock_lr, sizeof m->clock_lr);
        if (resume) {
            printf("resume from %s: step %lld, epoch %lld at sample %lld of the epoch, %lld samples seen, the last "
                   "update's lr %.6g (written by %s with %d rank%s)\n",
                   erase_ckpt_path(f), (long long)m->step, (long long)m->epoch, (long long)m->epoch_samples,
                   (long long)m->samples_seen, m->clock_lr, m->version, m->world_size, m->world_size == 1 ? "" : "s");
            if (m->dp_size != w->dp_size)
                printf("note   the checkpoint was written by %d data-parallel rank%s, this run has %d: the data "
                       "continue from global sample %lld of epoch %lld (the same sample sequence); the results are "
                       "bitwise those of a run that kept %d only with the same micro-batches, power-of-two rank "
                       "counts and no embedding tables (docs/accumulate.md), else they differ in rounding\n",
                       m->dp_size, m->dp_size == 1 ? "" : "s", w->dp_size, (long long)m->epoch_samples,
                       (long long)m->epoch, m->dp_size);
            if (m->global_batch != ck->e.global_batch)
                printf("note   global batch %lld, the checkpoint's run had %lld: steps now take %lld samples\n",
                       (long long)ck->e.global_batch, (long long)m->global_batch, (long long)ck->e.global_batch);
            note_option_changes(m->options, o, m->global_batch == ck->e.global_batch);
        }
        if (!erase_ckpt_attributes_summed(f))
            printf("note   %s has no checksum of its /meta and /optim attributes (written by %s, before "
                   "they had one): they were range-checked only\n", erase_ckpt_path(f), m->version);
        if (!resume && o->eval_only) {
            printf("init   from %s (step %lld): parameters loaded for evaluation only\n", erase_ckpt_path(f),
                   (long long)m->step);
        } else if (!resume) {
            printf("init   from %s (step %lld of an earlier run): parameters%s loaded; this run starts at step 0 "
                   "on its own data%s\n",
                   erase_ckpt_path(f), (long long)m->step, load_optim ? " and optimizer state" : "",
                   load_optim ? " (the optimizer clock restarts: warm-up and AdamW bias correction from step 1)" : "");
        }
        fflush(stdout);
    }
    erase_ckpt_close(f);
    return st;
}

/* A pipeline stage's dp rank 0 (stage s >= 1): load the stage's file of
 * checkpoint `path` (rank 0 checked the layout and that the file opens),
 * or its blocks of a whole checkpoint (hdr[0]: the checkpoint's stages,
 * 1), into this rank's host copies, with the optimizer state when
 * `optim`; its optimizer clock into hdr[6..7]. */
static erase_status_t load_stage(train_ckpt_t *ck, const char *path, int64_t hdr[8], int optim)
{
    erase_ckpt_t *f;
    int whole = hdr[0] == 1;
    ERASE_CHECK(whole ? erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ALL, &f)
                      : erase_ckpt_open_stage(path, ck->e.w->pp_rank, &f));
    const erase_ckpt_meta_t *m = erase_ckpt_meta(f);
    erase_status_t st = ERASE_OK;
    if (m->step != hdr[2] || (!whole && strcmp(m->pp_layout, ck->layout)))
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: step %lld, layout %s: expected step %lld, layout %s (the stage "
                         "file is not of %s)", erase_ckpt_path(f), (long long)m->step, m->pp_layout,
                         (long long)hdr[2], ck->layout, path);
    if (st == ERASE_OK)
        st = load_group(ck, f, ERASE_CKPT_PARAMS);
    if (st == ERASE_OK && optim)
        st = load_group(ck, f, ERASE_CKPT_OPTIM);
    hdr[6] = m->clock_step;
    memcpy(&hdr[7], &m->clock_lr, sizeof m->clock_lr);
    erase_ckpt_close(f);
    return st;
}

/* A rank of a run with sharded tables (not rank 0, which picked and
 * validated the checkpoint `path`): load this rank's tensors of it, of the
 * sharded ones only this rank's rows (each verified as read), with the
 * optimizer state when `optim`. */
static erase_status_t load_rows(train_ckpt_t *ck, const char *path, int optim)
{
    erase_ckpt_t *f;
    ERASE_CHECK(erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ALL, &f));
    erase_status_t st = erase_ckpt_load(f, ERASE_CKPT_PARAMS, ck->mine[0], ck->nmine[0], "the model");
    if (st == ERASE_OK && optim)
        st = erase_ckpt_load(f, ERASE_CKPT_OPTIM, ck->mine[1], ck->nmine[1], "the optimizer state");
    erase_ckpt_close(f);
    return st;
}

/*
 * The checkpoints of --checkpoint-dir newer than `start`, the step this run
 * starts at, belong to a run abandoned there (this one restarted from an
 * older checkpoint, or from scratch): each is renamed
 * ckpt-<step>.h5.superseded, a pipeline's stage files with it
 * (erase_ckpt_rename; kept, never deleted), so that a later --resume
 * auto continues this run and not the abandoned one (it takes the newest
 * checkpoint by step, io/checkpoint.h). Rank 0 only. Errors: ERASE_ERR_IO
 * (cannot list or rename), ERASE_ERR_NOMEM.
 */
static erase_status_t supersede_newer(const char *dir, int64_t start)
{
    char **paths;
    int n;
    ERASE_CHECK(erase_ckpt_candidates(dir, &paths, &n));
    erase_status_t st = ERASE_OK;
    for (int i = 0; st == ERASE_OK && i < n; i++) {
        const char *base = strrchr(paths[i], '/');
        long long step;
        if (sscanf(base ? base + 1 : paths[i], "ckpt-%lld.h5", &step) != 1 || step <= start)
            continue;
        char aside[ERASE_CKPT_PATH_MAX + 16];
        snprintf(aside, sizeof aside, "%s.superseded", paths[i]);
        int stages;
        st = erase_ckpt_rename(paths[i], aside, &stages);
        if (st != ERASE_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
            st = ERASE_ERROR(st, "--checkpoint-dir %s: setting aside %s (newer than step %lld, where this run "
                             "starts): %s", dir, paths[i], (long long)start, why);
        } else
            printf("note   %s is newer than step %lld, where this run starts: renamed %s%s (--resume auto "
                   "continues this run)\n", paths[i], (long long)start, aside,
                   train_ckpt_stage_files(stages));
    }
    erase_ckpt_candidates_free(paths, n);
    fflush(stdout);
    return st;
}

erase_status_t train_ckpt_restore(train_ckpt_t *ck, train_ckpt_pos_t *pos, int *resumed)
{
    memset(pos, 0, sizeof *pos);
    *resumed = 0;
    const train_options_t *o = ck->e.o;
    erase_status_t st = ERASE_OK;
    if (ck->enabled && ck->e.w->rank == 0) { /* fail now, not at the first checkpoint */
        const char *dir = o->checkpoint_dir;
        struct stat sb;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--checkpoint-dir %s: cannot create it: %s", dir, strerror(errno));
        else if (stat(dir, &sb) != 0 && errno == ENOENT && lstat(dir, &sb) == 0 && S_ISLNK(sb.st_mode))
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--checkpoint-dir %s: a symbolic link to what does not exist: %s",
                             dir, strerror(ENOENT));
        else if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--checkpoint-dir %s: not a directory", dir);
        else if (access(dir, W_OK | X_OK) != 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--checkpoint-dir %s: cannot write there: %s", dir, strerror(errno));
        else {
            train_ckpt_quiet_signals(1); /* a signal while it waits: the wait says why it stops */
            st = train_ckpt_lock_take(dir, train_ckpt_pending_signal, &ck->lock);
            train_ckpt_quiet_signals(0);
        }
        if (st == ERASE_OK) {
            int temps = erase_ckpt_remove_temps(dir); /* the lock is held: no one writes them */
            if (temps)
                printf("note   --checkpoint-dir %s: removed %d temporary file%s of a checkpoint that an interrupted "
                       "run did not finish (.ckpt-*.tmp)\n", dir, temps, temps == 1 ? "" : "s");
            if (!o->resume[0] && !o->init_from[0])
                st = supersede_newer(dir, 0);
        }
    }
    if (ck->enabled && (st = train_ckpt_share_status(ck, st, "--checkpoint-dir")) != ERASE_OK) {
        /* the directory another run's (STATE), or one this run cannot use (INVALID): a usage error */
        if ((st == ERASE_ERR_STATE || st == ERASE_ERR_INVALID) && ck->failed_alike)
            ck->failed_alike = 2;
        return st;
    }
    if (ck->enabled)
        train_ckpt_set_notice(ck, -1); /* what a signal's notice names from now: the directory's, as set aside */
    if (!ck->enabled && !o->resume[0] && !o->init_from[0])
        return ERASE_OK;
    ERASE_CHECK(train_ckpt_find_sharding(ck));
    if (!o->resume[0] && !o->init_from[0])
        return ERASE_OK;
    int64_t hdr[8];
    memset(hdr, 0, sizeof hdr);
    int action = 0;
    char path[ERASE_CKPT_PATH_MAX];
    memset(path, 0, sizeof path);
    if (ck->e.w->rank == 0) {
        st = pick(ck, &action, hdr, path);
        hdr[1] = action;
        if (st == ERASE_OK && ck->enabled && action != 0 && ck->lock) /* still this run's: rename nothing else */
            st = train_ckpt_lock_check(ck->lock, o->checkpoint_dir);
        if (st == ERASE_OK && ck->enabled && action != 0)
            st = supersede_newer(o->checkpoint_dir, action == 1 ? hdr[2] : 0);
    }
    ERASE_CHECK(train_ckpt_share_status(ck, st, o->resume[0] ? "--resume" : "--init-from"));
    erase_comm_t *c = erase_world_comm();
    ERASE_CHECK(erase_broadcast(c, ck->e.host, hdr, 8, ERASE_DTYPE_I64, 0));
    ERASE_CHECK(erase_stream_synchronize(ck->e.host));
    action = (int)hdr[1];
    if (action == 0)
        return ERASE_OK;
    int groups = action == 1 || o->init_from_optimizer ? 2 : 1;
    const erase_world_t *w = ck->e.w;
    if (ck->sharded) { /* every rank reads its own rows (and the rest) of the file rank 0 validated */
        ERASE_CHECK(erase_broadcast(c, ck->e.host, path, sizeof path, ERASE_DTYPE_U8, 0));
        ERASE_CHECK(erase_stream_synchronize(ck->e.host));
        path[sizeof path - 1] = '\0';
        if (w->rank != 0)
            st = load_rows(ck, path, groups == 2);
        ERASE_CHECK(train_ckpt_share_status(ck, st, o->resume[0] ? "--resume" : "--init-from"));
    }
    if (w->pp_size > 1) { /* every stage's dp rank 0 loads its own file */
        ERASE_CHECK(erase_broadcast(c, ck->e.host, path, sizeof path, ERASE_DTYPE_U8, 0));
        ERASE_CHECK(erase_stream_synchronize(ck->e.host));
        path[sizeof path - 1] = '\0';
        if (w->pp_rank > 0 && w->dp_rank == 0)
            st = load_stage(ck, path, hdr, groups == 2);
        ERASE_CHECK(train_ckpt_share_status(ck, st, o->resume[0] ? "--resume" : "--init-from"));
    }
    /* over each stage's dp group, from its dp rank 0 (rank 0 without a pipeline) */
    erase_comm_t *dpc = erase_dp_comm();
    ERASE_CHECK(erase_broadcast(dpc, ck->e.host, &hdr[6], 2, ERASE_DTYPE_I64, 0)); /* the stage's clock */
    for (int g = 0; g < groups && !ck->sharded; g++)
        for (int i = 0; i < ck->nmine[g]; i++)
            ERASE_CHECK(erase_broadcast(dpc, ck->e.host, ck->mine[g][i].data,
                                        (size_t)erase_ckpt_tensor_numel(&ck->mine[g][i]), ERASE_DTYPE_F32, 0));
    ERASE_CHECK(erase_stream_synchronize(ck->e.host));
    for (int g = 0; g < groups; g++)
        ERASE_CHECK(train_ckpt_stage(ck, g, 0));
    if (action != 1)
        return ERASE_OK;
    erase_optim_clock_t clock = { .step = hdr[6] };
    memcpy(&clock.lr, &hdr[7], sizeof clock.lr);
    ERASE_CHECK(erase_optimizer_write_clock(ck->e.opt, &clock));
    if (erase_reader_seek(ck->e.train, (erase_reader_cursor_t){ hdr[3], hdr[4] }) != ERASE_OK)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--resume: the checkpoint's data cursor (epoch %lld, sample %lld of "
                           "the epoch) is not in --train %s (%lld training samples): resume on the same data, or "
                           "start a new run from its parameters with --init-from",
                           (long long)hdr[3], (long long)hdr[4], o->train,
                           (long long)erase_reader_info(ck->e.train).samples);
    pos->step = hdr[2];
    pos->epoch = hdr[3];
    pos->samples_seen = hdr[5];
    *resumed = 1;
    ck->last_step = pos->step; /* a final checkpoint of the same position is not rewritten */
    snprintf(ck->last_path, sizeof ck->last_path, "%s", path); /* rank 0's: what --resume auto takes now */
    train_ckpt_set_notice(ck, -1);
    ck->last_epoch = hdr[3];
    ck->last_samples = hdr[4];
    return ERASE_OK;
}

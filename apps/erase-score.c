/*
 * erase-score CKPT DATA -o FILE [--format h5|tsv] [--batch N] [--force]
 *             [--device cpu|cuda] [--quiet]
 *
 * One prediction per sample of DATA (shard directories or files, comma-
 * separated) by the model of checkpoint CKPT (a file, or a checkpoint
 * directory: its newest), in the data's order, into one file. The model is
 * rebuilt from the checkpoint's model text (no --model); the pass is
 * erase-train --eval-only's (apps/train/run.h: train_score): the task's
 * reader of DATA in file order (no shuffle, every sample once), the
 * network's forward only, on every rank of an MPI job, each rank scoring
 * its share of each global batch (--batch per rank). Rank 0 prints the
 * task's eval line of DATA (the same as erase-train's evaluation of it)
 * and a summary.
 *
 * Output. The rows of each global batch are gathered to rank 0
 * (erase_allgatherv over the ranks' shares, which are contiguous in data
 * order: lib/comm has no gatherv, so every rank receives them, one global
 * batch at a time; at most 252 ranks), which writes them: scores are small beside the data (ctr: 12
 * bytes a sample), so one writer keeps the file's order and its atomic
 * rename simple, and the shards' reading, not the writing, bounds the
 * speed; parallel HDF5 collective writes were not needed. Per task
 * (apps/train/task.h: score):
 *   ctr       /row_id int64 [N], /label float32 [N], /p float32 [N]
 *   classify  /row_id, /label (the true class), /class int32 [N] (argmax,
 *             ties to the lower class; -1 where an output is not finite),
 *             /prob float32 [N, C]
 * row_id is the sample's index in DATA's shards concatenated (0..N-1,
 * ascending). Attributes of /: format "erase-score-1", task, checkpoint
 * (its path), step, data (DATA as given). --format tsv: a header line, then
 * "row_id label p" or "row_id label class prob_0 .. prob_C-1",
 * tab-separated, floats with 9 significant digits. The file is written
 * under a temporary name beside FILE, synced and renamed to FILE at the
 * end: FILE is whole or absent. An existing FILE needs --force.
 * Progress lines (rows, samples/s, ETA) on rank 0 to stderr, at most one
 * a second (not with --quiet).
 *
 * Exit status: 0 done, 1 failed (the message names the file), 2 usage.
 */
#include "apps/cli_args.h"
#include "apps/train/options.h"
#include "apps/train/checkpoint.h"
#include "apps/train/run.h"
#include "io/h5_util.h"
#include "lib/core/timer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *out, *data;
    int tsv, quiet;
    train_score_env_t env;
    int pw;                     /* prediction columns per sample */
    char tmp[1100];             /* the temporary file (rank 0) */
    FILE *text;                 /* tsv */
    hid_t file, ds_row, ds_label, ds_pred, ds_class;
    int64_t written;            /* rows written (rank 0: all ranks') */
    double t0, last_progress;
    /* this rank's rows, then (rank 0) every rank's */
    float *pred, *label, *all_pred, *all_label;
    int64_t *all_row;
    int32_t *cls;
    size_t cap, all_cap;
    size_t *counts, *displs;    /* of allgatherv, per rank */
    int64_t *sizes;             /* each rank's share of the batch */
} score_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-score CKPT DATA -o FILE [--format h5|tsv] [--batch N] [--force] [--device cpu|cuda] "
               "[--quiet]\n"
               "  one prediction per sample of DATA (ctr: click probability; classify: class and probabilities)\n"
               "  by the model of checkpoint CKPT (a file or a checkpoint directory), in the data's order,\n"
               "  into one HDF5 file (or TSV); under mpirun each rank scores its share of each batch.\n"
               "  -o, --output FILE   where the predictions go (written under a temporary name, then renamed)\n"
               "  --format h5|tsv     HDF5 (default) or tab-separated text\n"
               "  --batch N           samples per rank per batch (default 1024)\n"
               "  --force             replace an existing FILE\n"
               "  --device cpu|cuda   where the model runs (default cpu)\n"
               "  -q, --quiet         no progress lines\n");
}

static erase_status_t h5_dataset(score_t *s, const char *name, hid_t type, int rank, hsize_t cols, hid_t *out)
{
    hsize_t dims[2] = { (hsize_t)s->env.samples, cols };
    hid_t space = H5Screate_simple(rank, dims, NULL);
    *out = space < 0 ? -1 : H5Dcreate2(s->file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (space >= 0)
        H5Sclose(space);
    if (*out < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the dataset %s", s->tmp, name);
    return ERASE_OK;
}

static erase_status_t h5_attr_text(score_t *s, const char *name, const char *value)
{
    hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR);
    H5Tset_size(type, strlen(value) + 1);
    hid_t a = H5Acreate2(s->file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Awrite(a, type, value);
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    return e < 0 ? ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write the attribute %s", s->tmp, name) : ERASE_OK;
}

/* Rank 0: the temporary files OUT.tmp-HOST-PID of runs on this host killed
 * before they renamed theirs (PID not running) are removed, with a note;
 * another host's are left alone (its PIDs cannot be checked here). */
static void remove_killed_temps(const score_t *s, const char *host)
{
    char copy[sizeof s->tmp], base[sizeof s->tmp];
    snprintf(copy, sizeof copy, "%s", s->out);
    snprintf(base, sizeof base, "%s", s->out);
    const char *dir = dirname(copy), *name = basename(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    char prefix[sizeof s->tmp];
    int len = snprintf(prefix, sizeof prefix, "%s.tmp-%s-", name, host);
    struct dirent *e;
    while (len > 0 && (size_t)len < sizeof prefix && (e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, prefix, (size_t)len) != 0)
            continue;
        long pid = strtol(e->d_name + len, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[2 * sizeof s->tmp];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0)
            printf("note   removed %s, left by an erase-score that was stopped (pid %ld is not running on %s)\n",
                   path, pid, host);
    }
    closedir(d);
}

/* Rank 0: the temporary file with its header (tsv) or datasets (h5). */
static erase_status_t open_output(score_t *s)
{
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++) /* a file name's part */
        if (*c == '/')
            *c = '_';
    remove_killed_temps(s, host);
    snprintf(s->tmp, sizeof s->tmp, "%s.tmp-%s-%ld", s->out, host, (long)getpid());
    const train_task_t *t = s->env.task;
    if (s->tsv) {
        if (!(s->text = fopen(s->tmp, "w")))
            return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write: %s", s->tmp, strerror(errno));
        fputs(t->score_classes ? "row_id\tlabel\tclass" : "row_id\tlabel\tp", s->text);
        for (int c = 0; t->score_classes && c < s->pw; c++)
            fprintf(s->text, "\tprob_%d", c);
        fputc('\n', s->text);
        return ERASE_OK;
    }
    if ((s->file = H5Fcreate(s->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the HDF5 file", s->tmp);
    ERASE_CHECK(h5_attr_text(s, "format", "erase-score-1"));
    ERASE_CHECK(h5_attr_text(s, "task", t->name));
    ERASE_CHECK(h5_attr_text(s, "checkpoint", s->env.ckpt_path));
    ERASE_CHECK(h5_attr_text(s, "data", s->data));
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(s->file, "step", H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT64, &s->env.ckpt_step);
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(space);
    if (e < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write the attribute step", s->tmp);
    ERASE_CHECK(h5_dataset(s, "row_id", H5T_NATIVE_INT64, 1, 1, &s->ds_row));
    ERASE_CHECK(h5_dataset(s, "label", H5T_NATIVE_FLOAT, 1, 1, &s->ds_label));
    if (t->score_classes) {
        ERASE_CHECK(h5_dataset(s, "class", H5T_NATIVE_INT32, 1, 1, &s->ds_class));
        ERASE_CHECK(h5_dataset(s, "prob", H5T_NATIVE_FLOAT, 2, (hsize_t)s->pw, &s->ds_pred));
    } else {
        ERASE_CHECK(h5_dataset(s, "p", H5T_NATIVE_FLOAT, 1, 1, &s->ds_pred));
    }
    return ERASE_OK;
}

static erase_status_t score_begin(void *ctx, const train_score_env_t *env)
{
    score_t *s = ctx;
    s->env = *env;
    s->pw = env->task->score_width(env->width);
    int ranks = env->w->size;
    if (!(s->counts = calloc((size_t)ranks, sizeof *s->counts)) ||
        !(s->displs = calloc((size_t)ranks, sizeof *s->displs)) ||
        !(s->sizes = calloc((size_t)ranks, sizeof *s->sizes)))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-score: no memory");
    s->t0 = s->last_progress = erase_now_s();
    if (env->w->rank != 0)
        return ERASE_OK;
    erase_h5_enter(); /* the HDF5 library is not thread-safe: the reader's thread reads shards */
    erase_status_t st = open_output(s);
    erase_h5_leave();
    return st;
}

/* *buf holds at least n elements of `size` bytes (grown as needed). */
static erase_status_t reserve(void **buf, size_t size, size_t n)
{
    void *p = realloc(*buf, size * (n ? n : 1));
    if (!p)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-score: no memory for %zu rows", n);
    *buf = p;
    return ERASE_OK;
}

/* Rank 0: write rows [written, written + n) gathered in s->all_*. */
static erase_status_t write_rows(score_t *s, size_t n)
{
    const train_task_t *t = s->env.task;
    int pw = s->pw;
    for (size_t i = 0; i < n; i++)
        if (s->all_row[i] != s->written + (int64_t)i)
            return ERASE_ERROR(ERASE_ERR_STATE, "%s: row %lld came as the %lld-th: the ranks' shares are out of "
                               "order", s->out, (long long)s->all_row[i], (long long)(s->written + (int64_t)i));
    if (t->score_classes) { /* argmax, ties to the lower class */
        ERASE_CHECK(reserve((void **)&s->cls, sizeof *s->cls, n));
        for (size_t i = 0; i < n; i++) {
            const float *p = s->all_pred + i * (size_t)pw;
            int best = 0, finite = 1;
            for (int c = 0; c < pw; c++)
                finite &= isfinite(p[c]) != 0;
            for (int c = 1; c < pw; c++)
                best = p[c] > p[best] ? c : best;
            s->cls[i] = finite ? best : -1; /* no class for a non-finite output */
        }
    }
    if (s->tsv) {
        for (size_t i = 0; i < n; i++) {
            fprintf(s->text, "%lld\t%.9g", (long long)s->all_row[i], (double)s->all_label[i]);
            if (t->score_classes)
                fprintf(s->text, "\t%d", (int)s->cls[i]);
            for (int c = 0; c < pw; c++) {
                float v = s->all_pred[i * (size_t)pw + (size_t)c];
                if (isnan(v))
                    fputs("\tnan", s->text); /* not printf's -nan */
                else
                    fprintf(s->text, "\t%.9g", (double)v);
            }
            fputc('\n', s->text);
        }
        if (ferror(s->text))
            return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write: %s", s->tmp, strerror(errno));
    } else if (n > 0) {
        struct { hid_t ds, type; const void *buf; int cols; } w[] = {
            { s->ds_row, H5T_NATIVE_INT64, s->all_row, 1 },
            { s->ds_label, H5T_NATIVE_FLOAT, s->all_label, 1 },
            { s->ds_pred, H5T_NATIVE_FLOAT, s->all_pred, t->score_classes ? pw : 1 },
            { s->ds_class, H5T_NATIVE_INT32, s->cls, 1 },
        };
        herr_t e = 0;
        erase_h5_enter(); /* the HDF5 library is not thread-safe: the reader's thread reads shards */
        for (int k = 0; e >= 0 && k < (t->score_classes ? 4 : 3); k++) {
            hsize_t start[2] = { (hsize_t)s->written, 0 }, count[2] = { n, (hsize_t)w[k].cols };
            int rank = k == 2 && t->score_classes ? 2 : 1;
            hid_t file_space = H5Dget_space(w[k].ds), mem = H5Screate_simple(rank, count, NULL);
            e = H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, NULL, count, NULL);
            if (e >= 0)
                e = H5Dwrite(w[k].ds, w[k].type, mem, file_space, H5P_DEFAULT, w[k].buf);
            H5Sclose(mem);
            H5Sclose(file_space);
        }
        erase_h5_leave();
        if (e < 0)
            return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write rows %lld..%lld", s->tmp, (long long)s->written,
                               (long long)(s->written + (int64_t)n - 1));
    }
    s->written += (int64_t)n;
    return ERASE_OK;
}

static erase_status_t score_batch(void *ctx, const float *z, const erase_reader_batch_t *b)
{
    score_t *s = ctx;
    const erase_world_t *w = s->env.w;
    size_t n = (size_t)b->size, pw = (size_t)s->pw;
    if (n > s->cap) {
        ERASE_CHECK(reserve((void **)&s->pred, sizeof(float) * pw, n));
        ERASE_CHECK(reserve((void **)&s->label, sizeof(float), n));
        s->cap = n;
    }
    if (n > 0)
        s->env.task->score(z, s->env.width, b, s->pred, s->label);
    /* every rank's share size, then the rows gathered in rank order = data order */
    int64_t mine = (int64_t)n;
    ERASE_CHECK(erase_allgather(erase_world_comm(), s->env.host, &mine, s->sizes, 1, ERASE_DTYPE_I64));
    ERASE_CHECK(erase_stream_synchronize(s->env.host));
    size_t total = 0;
    for (int r = 0; r < w->size; r++) {
        s->counts[r] = (size_t)s->sizes[r];
        total += s->counts[r];
    }
    for (int r = 0, at = 0; r < w->size; at += (int)s->counts[r], r++)
        s->displs[r] = (size_t)at;
    if (total > s->all_cap) {
        ERASE_CHECK(reserve((void **)&s->all_row, sizeof(int64_t), total));
        ERASE_CHECK(reserve((void **)&s->all_label, sizeof(float), total));
        ERASE_CHECK(reserve((void **)&s->all_pred, sizeof(float) * pw, total));
        s->all_cap = total;
    }
    erase_comm_t *c = erase_world_comm();
    ERASE_CHECK(erase_allgatherv(c, s->env.host, b->row_id, s->all_row, s->counts, s->displs, ERASE_DTYPE_I64));
    ERASE_CHECK(erase_allgatherv(c, s->env.host, s->label, s->all_label, s->counts, s->displs, ERASE_DTYPE_F32));
    for (int r = 0; r < w->size; r++) {
        s->counts[r] *= pw;
        s->displs[r] *= pw;
    }
    ERASE_CHECK(erase_allgatherv(c, s->env.host, s->pred, s->all_pred, s->counts, s->displs, ERASE_DTYPE_F32));
    ERASE_CHECK(erase_stream_synchronize(s->env.host));
    if (w->rank != 0)
        return ERASE_OK;
    ERASE_CHECK(write_rows(s, total));
    double now = erase_now_s();
    if (!s->quiet && now - s->last_progress >= 1) {
        double rate = (double)s->written / (now - s->t0);
        fprintf(stderr, "score  %lld/%lld rows, %.0f samples/s, ETA %.0f s\n", (long long)s->written,
                (long long)s->env.samples, rate, rate > 0 ? (double)(s->env.samples - s->written) / rate : 0);
        s->last_progress = now;
    }
    return ERASE_OK;
}

/* Close the HDF5 datasets and file that are open; nonzero when the file's
 * close (its last writes) failed. */
static int close_h5(score_t *s)
{
    hid_t *ds[] = { &s->ds_row, &s->ds_label, &s->ds_pred, &s->ds_class };
    erase_h5_enter();
    for (int k = 0; k < 4; k++)
        if (*ds[k] >= 0) {
            H5Dclose(*ds[k]);
            *ds[k] = -1;
        }
    int bad = s->file >= 0 && H5Fclose(s->file) < 0;
    s->file = -1;
    erase_h5_leave();
    return bad;
}

/* Rank 0: close, sync and rename the temporary file to FILE. */
static erase_status_t score_end(void *ctx)
{
    score_t *s = ctx;
    if (s->env.w->rank != 0)
        return ERASE_OK;
    if (s->written != s->env.samples)
        return ERASE_ERROR(ERASE_ERR_STATE, "%s: %lld rows scored of %lld", s->out, (long long)s->written,
                           (long long)s->env.samples);
    int bad = 0;
    if (s->text) {
        bad = fflush(s->text) != 0 || fsync(fileno(s->text)) != 0;
        bad |= fclose(s->text) != 0;
        s->text = NULL;
    } else {
        bad = close_h5(s);
        int fd = open(s->tmp, O_RDONLY);
        bad |= fd < 0 || fsync(fd) != 0;
        if (fd >= 0)
            close(fd);
    }
    if (bad || rename(s->tmp, s->out) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write (%s): %s", s->out, s->tmp, strerror(errno));
    s->tmp[0] = 0;
    double sec = erase_now_s() - s->t0;
    printf("erase-score: %lld rows to %s (%s) in %.2f s, %.0f samples/s\n", (long long)s->written, s->out,
           s->tsv ? "tsv" : "h5", sec, sec > 0 ? (double)s->written / sec : 0);
    fflush(stdout);
    return ERASE_OK;
}

/* Whatever remains on failure: the temporary file removed. */
static void score_free(score_t *s)
{
    if (s->text)
        fclose(s->text);
    close_h5(s);
    if (s->tmp[0])
        remove(s->tmp);
    free(s->pred);
    free(s->label);
    free(s->all_pred);
    free(s->all_label);
    free(s->all_row);
    free(s->cls);
    free(s->counts);
    free(s->displs);
    free(s->sizes);
}

/* One usage or set-up error line from the launcher's rank 0 (or a lone
 * process); returns `status`. */
static int error_once(int status)
{
    if (train_launcher_rank() <= 0)
        fprintf(stderr, "erase-score: %s\n", erase_error_reason());
    return status;
}

int main(int argc, char **argv)
{
    const char *pos[2] = { NULL, NULL }, *out = NULL, *format = "h5";
    int npos = 0, force = 0;
    train_options_t o;
    train_options_default(&o);
    o.eval_only = 1;
    o.batch = 1024;
    o.quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            return cli_version("erase-score");
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o.quiet = 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
            out = argv[++i];
        } else if (!strcmp(a, "--format") && v) {
            format = argv[++i];
        } else if (!strcmp(a, "--device") && v) {
            snprintf(o.device, sizeof o.device, "%s", argv[++i]);
        } else if (!strcmp(a, "--batch") && v) {
            char *end;
            o.batch = strtoll(argv[++i], &end, 10);
            if (*end || o.batch < 1 || o.batch > 1 << 24) {
                fprintf(stderr, "erase-score: --batch %s: expected samples per rank in 1..%d\n", argv[i], 1 << 24);
                return 2;
            }
        } else if (a[0] == '-' || npos == 2) {
            static const char *const valued[] = { "-o", "--output", "--format", "--device", "--batch", NULL };
            return train_launcher_rank() <= 0 ? cli_leftover_error("erase-score", a, !v, valued) : 2;
        } else {
            pos[npos++] = a;
        }
    }
    if (npos != 2) {
        ERASE_ERROR(ERASE_ERR_INVALID, "expected a checkpoint and the data to score, got %s: erase-score CKPT DATA "
                    "-o FILE (--help lists the options)", npos ? "one argument" : "none");
        return error_once(2);
    }
    if (!out) {
        ERASE_ERROR(ERASE_ERR_INVALID, "no output file: give -o FILE (the scores are written there; --help lists "
                    "the options)");
        return error_once(2);
    }
    if (strcmp(format, "h5") && strcmp(format, "tsv")) {
        ERASE_ERROR(ERASE_ERR_INVALID, "--format %s: expected h5 or tsv", format);
        return error_once(2);
    }
    if (strlen(out) > 800) { /* OUT.tmp-HOST-PID must fit its buffer (score_t.tmp) */
        ERASE_ERROR(ERASE_ERR_INVALID, "-o: a name longer than 800 characters");
        return error_once(2);
    }
    struct stat sb;
    if (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        ERASE_ERROR(ERASE_ERR_INVALID, "-o %s: not a file (a directory or a device): name the output file", out);
        return error_once(2);
    }
    if (!force && stat(out, &sb) == 0) {
        ERASE_ERROR(ERASE_ERR_INVALID, "-o %s: the file exists (--force replaces it)", out);
        return error_once(2);
    }
    if (strlen(pos[0]) >= sizeof o.init_from || strlen(pos[1]) >= sizeof o.eval) {
        ERASE_ERROR(ERASE_ERR_INVALID, "CKPT or DATA: a name longer than %zu characters", sizeof o.eval - 1);
        return error_once(2);
    }
    snprintf(o.init_from, sizeof o.init_from, "%s", pos[0]);
    snprintf(o.eval, sizeof o.eval, "%s", pos[1]);

    erase_world_t world;
    erase_world_options_t wo = { .pp_size = 1, .watchdog_seconds = o.watchdog };
    erase_status_t st = erase_world_init(&argc, &argv, &wo, &world);
    if (st != ERASE_OK)
        erase_fatal(__FILE__, __LINE__, "erase-score: MPI start-up", st);
    score_t s = { .out = out, .data = pos[1], .tsv = !strcmp(format, "tsv"), .quiet = o.quiet,
                  .file = -1, .ds_row = -1, .ds_label = -1, .ds_pred = -1, .ds_class = -1 };
    train_score_hooks_t hooks = { .ctx = &s, .begin = score_begin, .batch = score_batch, .end = score_end };
    int alike;
    train_ckpt_program("erase-score"); /* in the line that passes over a damaged checkpoint */
    st = train_score(&o, &hooks, &world, &alike);
    score_free(&s);
    if (st != ERASE_OK && alike) { /* every rank found it (a bad checkpoint): no abort */
        int code = world.rank == 0 ? (fprintf(stderr, "erase-score: %s\n", erase_error_reason()), alike) : alike;
        erase_world_finalize();
        return code;
    }
    if (st != ERASE_OK)
        erase_fatal_rank(__FILE__, __LINE__, "erase-score", st);
    erase_world_finalize();
    return 0;
}

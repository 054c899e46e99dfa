/*
 * Writing checkpoints (io/checkpoint.h): a temporary file renamed into
 * place once complete (no half-written file looks valid), whole tensors
 * from one rank or a sharded tensor's rows from their owners (parallel
 * HDF5), the /index of checksums, and each pipeline stage's part.
 */
#define _GNU_SOURCE /* fallocate(2): reserve_space */
#include "io/checkpoint_internal.h"

#include "config.h"
#include "io/ctr_shard_write.h"
#include "io/h5_util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "lib/core/checked.h"
#include "lib/core/fs.h"
#include "lib/core/timer.h"

static const char description[] =
    "erase checkpoint (format erase-ckpt-1; io/checkpoint.h). /meta: attributes of the run (step, "
    "samples_seen, epoch, sizes, schedule, optimizers, seed, the model file text `model`, the run "
    "options `options`, version). /params/<block>/<path>: float32 parameters (docs/models.md). "
    "/optim: the optimizer clock (attributes step, lr) and /optim/<block>/<path>/<slot>: float32 "
    "optimizer state. /rng/<rank>: uint64 random-number state words of each rank. /data/cursor: "
    "int64 {epoch, samples of the epoch delivered}; /data/rank_cursors: the cursor of every rank. "
    "/index: every dataset with its type, shape and FNV-1a 64 checksum (also each dataset's "
    "`fnv1a64` attribute), verified on load; a tensor sharded over ranks (attribute `sharding`: "
    "where its rows were; its /index line ends \"rows\") has an FNV-1a 64 per row in "
    "/row_fnv1a64/<params|optim>/<path>, its rows written by their owners.";

/* A tensor name: components of [A-Za-z0-9_.-], separated by single '/'. */
static int valid_name(const char *name)
{
    if (!name[0] || name[0] == '/' || strlen(name) >= ERASE_CKPT_NAME_MAX - 32)
        return 0;
    const char *prev = "/";
    for (const char *p = name; *p; prev = p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '-' || c == '.' || c == '/';
        if (!ok || (c == '/' && *prev == '/'))
            return 0;
    }
    return *prev != '/';
}

void ckpt_shape_text(int ndim, const int64_t *dims, char *text, size_t size)
{
    if (ndim == 2)
        snprintf(text, size, "[%" PRId64 ", %" PRId64 "]", dims[0], dims[1]);
    else
        snprintf(text, size, "[%" PRId64 "]", dims[0]);
}

static int attr_write_scalar(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = s >= 0 ? H5Acreate2(loc, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = a >= 0 && H5Awrite(a, mem_type, value) >= 0 ? 0 : -1;
    if (rc)
        erase_h5_remember();
    if (a >= 0)
        H5Aclose(a);
    if (s >= 0)
        H5Sclose(s);
    return rc;
}

typedef struct {
    hid_t file;
    const char *temp;    /* for messages */
    FILE *index;         /* the /index text */
    hid_t lcpl;          /* creates intermediate groups */
    uint64_t meta_sum;   /* erase_ckpt_meta_fnv1a64 of what write_body wrote */
} writer_t;

/* Write one dataset with its shape, meaning and checksum attributes and
 * its /index line; the lock is held. */
static erase_status_t write_dataset(writer_t *w, const char *path, hid_t file_type, hid_t mem_type,
                                    int ndim, const int64_t *dims, const void *data, size_t elem,
                                    const char *meaning, const uint64_t *sum)
{
    hsize_t hd[2] = { (hsize_t)dims[0], ndim == 2 ? (hsize_t)dims[1] : 1 };
    size_t bytes = elem * (size_t)hd[0] * (size_t)hd[1];
    uint64_t h = sum ? *sum : erase_ckpt_fnv1a64(data, bytes);
    char shape[64], type[32];
    ckpt_shape_text(ndim, dims, shape, sizeof shape);
    hid_t sp = H5Screate_simple(ndim, hd, NULL);
    hid_t d = sp >= 0 ? H5Dcreate2(w->file, path, file_type, sp, w->lcpl, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int ok = d >= 0 && (bytes == 0 || H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    if (!ok)
        erase_h5_remember();
    ok = ok && erase_h5_attr_write_string(d, "shape", shape) == 0 &&
         erase_h5_attr_write_string(d, "meaning", meaning ? meaning : "") == 0 &&
         attr_write_scalar(d, "fnv1a64", H5T_STD_U64LE, H5T_NATIVE_UINT64, &h) == 0;
    if (ok)
        erase_h5_type_name(file_type, type, sizeof type);
    if (d >= 0)
        H5Dclose(d);
    if (sp >= 0)
        H5Sclose(sp);
    if (!ok) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot write: %s", w->temp, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    fprintf(w->index, "%s %s %s %016" PRIx64 "\n", path, type, shape, h);
    return ERASE_OK;
}

#define ROWSUM_GROUP "/row_fnv1a64"
void ckpt_rowsum_path(const char *path, char *out, size_t size)
{
    snprintf(out, size, ROWSUM_GROUP "%s", path);
}

/* A dataset of `type` [dims] created with its space allocated in the file
 * now and never filled (its writers fill it: erase_ckpt_write_rows, whose
 * MPI-IO writes need the space allocated); the lock is held. -1 on
 * failure (remembered). */
static hid_t create_unwritten(writer_t *w, const char *path, hid_t type, int ndim, const int64_t *dims)
{
    hsize_t hd[2] = { (hsize_t)dims[0], ndim == 2 ? (hsize_t)dims[1] : 1 };
    hid_t sp = H5Screate_simple(ndim, hd, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = sp >= 0 && dcpl >= 0 && H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
                      H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0
                  ? H5Dcreate2(w->file, path, type, sp, w->lcpl, dcpl, H5P_DEFAULT)
                  : -1;
    if (d < 0)
        erase_h5_remember();
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (sp >= 0)
        H5Sclose(sp);
    return d;
}

/* A sharded tensor's dataset (whole shape, no data: its owners write the
 * rows) with its shape, meaning and sharding attributes, its per-row
 * checksum dataset, and its /index line "<path> float32 <shape> rows";
 * the lock is held. */
static erase_status_t write_sharded(writer_t *w, const char *path, const erase_ckpt_tensor_t *t)
{
    char sums[ERASE_CKPT_NAME_MAX + 32], shape[64];
    ckpt_rowsum_path(path, sums, sizeof sums);
    ckpt_shape_text(t->ndim, t->dims, shape, sizeof shape);
    hid_t d = create_unwritten(w, path, H5T_IEEE_F32LE, t->ndim, t->dims);
    int ok = d >= 0 && erase_h5_attr_write_string(d, "shape", shape) == 0 &&
             erase_h5_attr_write_string(d, "meaning", t->meaning ? t->meaning : "") == 0 &&
             erase_h5_attr_write_string(d, "sharding", t->sharding) == 0 &&
             erase_h5_attr_write_string(d, "row_fnv1a64", sums) == 0;
    if (d >= 0)
        H5Dclose(d);
    hid_t c = ok ? create_unwritten(w, sums, H5T_STD_U64LE, 1, t->dims) : -1;
    ok = c >= 0 && erase_h5_attr_write_string(c, "meaning", "FNV-1a 64 of each row's bytes (little-endian) of "
                                                            "the dataset of the same path below /, written by "
                                                            "the row's owner") == 0;
    if (c >= 0)
        H5Dclose(c);
    if (!ok) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot create: %s", w->temp, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    fprintf(w->index, "%s float32 %s rows\n", path, shape);
    return ERASE_OK;
}

static erase_status_t write_tensors(writer_t *w, const char *group, const erase_ckpt_tensor_t *t, int n,
                                    const uint64_t *sums)
{
    for (int i = 0; i < n; i++) {
        char path[ERASE_CKPT_NAME_MAX + 16];
        snprintf(path, sizeof path, "/%s/%s", group, t[i].name);
        if (t[i].sharding) {
            ERASE_CHECK(write_sharded(w, path, &t[i]));
            continue;
        }
        ERASE_CHECK(write_dataset(w, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, t[i].ndim, t[i].dims, t[i].data,
                                  sizeof(float), t[i].meaning, sums ? &sums[i] : NULL));
    }
    return ERASE_OK;
}

/* /meta and its attributes (m->version and m->created too); the lock is
 * held. Returns the failing name or NULL. */
static const char *write_meta(hid_t file, const erase_ckpt_meta_t *m)
{
    hid_t g = H5Gcreate2(file, "/meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) {
        erase_h5_remember();
        return "/meta";
    }
    const char *bad = NULL;
    if (erase_h5_attr_write_int64(g, "step", m->step)) bad = "step";
    else if (erase_h5_attr_write_int64(g, "samples_seen", m->samples_seen)) bad = "samples_seen";
    else if (erase_h5_attr_write_int64(g, "epoch", m->epoch)) bad = "epoch";
    else if (erase_h5_attr_write_int64(g, "global_batch", m->global_batch)) bad = "global_batch";
    else if (erase_h5_attr_write_int64(g, "world_size", m->world_size)) bad = "world_size";
    else if (erase_h5_attr_write_int64(g, "dp_size", m->dp_size)) bad = "dp_size";
    else if (erase_h5_attr_write_int64(g, "pp_size", m->pp_size)) bad = "pp_size";
    else if (erase_h5_attr_write_string(g, "pp_layout", ckpt_nz(m->pp_layout))) bad = "pp_layout";
    else if (erase_h5_attr_write_string(g, "schedule", ckpt_nz(m->schedule))) bad = "schedule";
    else if (erase_h5_attr_write_string(g, "dense_optimizer", ckpt_nz(m->dense_optimizer))) bad = "dense_optimizer";
    else if (erase_h5_attr_write_string(g, "embedding_optimizer", ckpt_nz(m->embedding_optimizer))) bad = "embedding_optimizer";
    else if (attr_write_scalar(g, "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64, &m->seed)) bad = "seed";
    else if (erase_h5_attr_write_string(g, "model", ckpt_nz(m->model))) bad = "model";
    else if (erase_h5_attr_write_string(g, "options", ckpt_nz(m->options))) bad = "options";
    else if (erase_h5_attr_write_string(g, "version", ckpt_nz(m->version))) bad = "version";
    else if (erase_h5_attr_write_string(g, "created", ckpt_nz(m->created))) bad = "created";
    else if (m->embeddings && *m->embeddings && erase_h5_attr_write_string(g, "embeddings", m->embeddings))
        bad = "embeddings";
    else if (m->tokenizer && *m->tokenizer && erase_h5_attr_write_string(g, "tokenizer", m->tokenizer))
        bad = "tokenizer";
    else if (m->data_vocab && *m->data_vocab && erase_h5_attr_write_string(g, "data_vocab", m->data_vocab))
        bad = "data_vocab";
    H5Gclose(g);
    return bad;
}

/* Everything but the `format` attribute; the lock is held. */
static erase_status_t write_body(writer_t *w, const erase_ckpt_meta_t *given, const erase_ckpt_tensor_t *params,
                                 int np, const erase_ckpt_tensor_t *optim, int no,
                                 const erase_ckpt_rank_t *ranks, int nranks, const uint64_t *sums,
                                 int sleep_ms)
{
    char detail[256], created[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    erase_ckpt_meta_t full = *given, *m = &full;
    full.version = PACKAGE_NAME " " PACKAGE_VERSION;
    full.created = created;
    w->meta_sum = erase_ckpt_meta_fnv1a64(m);
    if (erase_h5_attr_write_string(w->file, "description", description))
        return ERASE_ERROR(ERASE_ERR_IO, "%s: attribute description: cannot write: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    const char *bad = write_meta(w->file, m);
    if (bad)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: /meta attribute %s: cannot write: %s", w->temp, bad,
                           erase_h5_detail(detail, sizeof detail));
    ERASE_CHECK(write_tensors(w, "params", params, np, sums));
    if (sleep_ms > 0) {
        erase_h5_leave(); /* let other HDF5 users (the data reader) run meanwhile */
        usleep((useconds_t)sleep_ms * 1000);
        erase_h5_enter();
    }
    hid_t g = H5Gcreate2(w->file, "/optim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int ok = g >= 0 && erase_h5_attr_write_int64(g, "step", m->clock_step) == 0 &&
             attr_write_scalar(g, "lr", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &m->clock_lr) == 0 &&
             erase_h5_attr_write_string(g, "meaning", "optimizer clock: step = updates applied, lr = learning "
                                                      "rate of the last update; below: state slots per parameter") == 0;
    if (!ok)
        erase_h5_remember();
    if (g >= 0)
        H5Gclose(g);
    if (!ok)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: group /optim: cannot write the clock: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    ERASE_CHECK(write_tensors(w, "optim", optim, no, sums ? sums + np : NULL));
    for (int r = 0; r < nranks; r++) {
        char path[64];
        snprintf(path, sizeof path, "/rng/%d", r);
        int64_t dims[1] = { 2 };
        ERASE_CHECK(write_dataset(w, path, H5T_STD_U64LE, H5T_NATIVE_UINT64, 1, dims, ranks[r].rng, 8,
                                  "random-number state words of this rank: {seed, draws}; erase draws "
                                  "random numbers only as pure functions of (seed, epoch, block), so draws is 0",
                                  NULL));
    }
    int64_t cursor[2] = { m->epoch, m->epoch_samples }, cdims[1] = { 2 };
    ERASE_CHECK(write_dataset(w, "/data/cursor", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, cdims, cursor, 8,
                              "data cursor {epoch, samples of that epoch delivered over all ranks}: the "
                              "next step starts at that position of the epoch's global sample order",
                              NULL));
    int64_t *rc = malloc(sizeof(int64_t) * 2 * (size_t)(nranks > 0 ? nranks : 1));
    if (!rc)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", w->temp);
    for (int r = 0; r < nranks; r++) {
        rc[2 * r] = ranks[r].epoch;
        rc[2 * r + 1] = ranks[r].samples;
    }
    int64_t rdims[2] = { nranks, 2 };
    erase_status_t st = write_dataset(w, "/data/rank_cursors", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, rdims, rc, 8,
                                      "row r: the data cursor {epoch, samples} rank r reported", NULL);
    free(rc);
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Write the /index text as a scalar string dataset, and its checksum and
 * the attributes' (w->meta_sum) as root attributes; the lock is held. */
static erase_status_t write_index(writer_t *w, const char *text, size_t len)
{
    uint64_t h = erase_ckpt_fnv1a64(text, len);
    hid_t t = H5Tcopy(H5T_C_S1);
    int ok = t >= 0 && H5Tset_size(t, len + 1) >= 0 && H5Tset_strpad(t, H5T_STR_NULLTERM) >= 0;
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t d = ok && s >= 0 ? H5Dcreate2(w->file, "/index", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    ok = d >= 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0 &&
         erase_h5_attr_write_string(d, "meaning", "every dataset of this file: path, type, shape, FNV-1a 64 "
                                                  "of its bytes (little-endian), hex") == 0 &&
         attr_write_scalar(w->file, "index_fnv1a64", H5T_STD_U64LE, H5T_NATIVE_UINT64, &h) == 0 &&
         attr_write_scalar(w->file, "meta_fnv1a64", H5T_STD_U64LE, H5T_NATIVE_UINT64, &w->meta_sum) == 0;
    if (!ok)
        erase_h5_remember();
    if (d >= 0)
        H5Dclose(d);
    if (s >= 0)
        H5Sclose(s);
    if (t >= 0)
        H5Tclose(t);
    if (!ok) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset /index: cannot write: %s", w->temp,
                           erase_h5_detail(detail, sizeof detail));
    }
    return ERASE_OK;
}

static erase_status_t check_tensors(const char *what, const erase_ckpt_tensor_t *t, int n)
{
    for (int i = 0; i < n; i++) {
        if (!valid_name(t[i].name))
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s tensor %d: bad name '%s' (components of "
                               "[A-Za-z0-9_.-] separated by '/')", what, i, t[i].name);
        size_t bytes;
        if ((t[i].ndim != 1 && t[i].ndim != 2) ||
            !erase_bytes(sizeof(float), t[i].dims[0], t[i].ndim == 2 ? t[i].dims[1] : 1, &bytes))
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: bad shape", what, t[i].name);
        if (t[i].sharding && (t[i].row0 < 0 || t[i].held < 0 || t[i].row0 > t[i].dims[0] - t[i].held))
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: rows [%" PRId64 ", %" PRId64 " + %" PRId64
                               ") of a sharded tensor of %" PRId64 " rows", what, t[i].name, t[i].row0, t[i].row0,
                               t[i].held, t[i].dims[0]);
        if (!t[i].data && (t[i].sharding ? t[i].held * (t[i].ndim == 2 ? t[i].dims[1] : 1)
                                         : erase_ckpt_tensor_numel(&t[i])) > 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: no data", what, t[i].name);
        for (int j = 0; j < i; j++)
            if (!strcmp(t[i].name, t[j].name))
                return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: %s/%s: written twice", what, t[i].name);
    }
    return ERASE_OK;
}

/* The counts and tensors of a write. */
static erase_status_t check_contents(const erase_ckpt_tensor_t *params, int np, const erase_ckpt_tensor_t *optim,
                                     int no, int nranks)
{
    if (np < 0 || no < 0 || nranks < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: negative count");
    ERASE_CHECK(check_tensors("params", params, np));
    return check_tensors("optim", optim, no);
}

static int debug_sleep_ms(void)
{
    const char *e = getenv("ERASE_DEBUG_CKPT_SLEEP_MS");
    return e ? atoi(e) : 0;
}

erase_status_t erase_ckpt_write(const char *dir, const erase_ckpt_meta_t *meta,
                                const erase_ckpt_tensor_t *params, int np,
                                const erase_ckpt_tensor_t *optim, int no,
                                const erase_ckpt_rank_t *ranks, int nranks,
                                const uint64_t *sums, int keep, erase_ckpt_report_t *report)
{
    return erase_ckpt_write_part(dir, meta, 0, params, np, optim, no, ranks, nranks, sums, keep, NULL, NULL,
                                 report);
}

/* Bytes the file of these tensors takes, about and rather more than less:
 * their data (whole shapes: a sharded tensor's rows are written into it
 * too), row checksums, the texts of meta, and 1 KiB for each tensor's
 * datasets and attributes (HDF5 takes about 0.6 KiB) plus 16 KiB. */
static uint64_t file_bytes(const erase_ckpt_meta_t *meta, const erase_ckpt_tensor_t *params, int np,
                           const erase_ckpt_tensor_t *optim, int no)
{
    uint64_t bytes = 16384;
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < (g ? no : np); i++) {
            const erase_ckpt_tensor_t *t = g ? &optim[i] : &params[i];
            bytes += 1024 + sizeof(float) * (uint64_t)erase_ckpt_tensor_numel(t) +
                     (t->sharding ? sizeof(uint64_t) * (uint64_t)t->dims[0] : 0);
        }
    const char *texts[] = { meta->model, meta->options, meta->pp_layout, meta->schedule, meta->embeddings };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        bytes += texts[i] ? strlen(texts[i]) : 0;
    return bytes;
}

/* Before HDF5 writes `temp`: that `bytes` fit in its directory (a full
 * disk or a quota), found by allocating them to `temp` (fallocate; where
 * the file system cannot, the free space statvfs reports). HDF5 must not
 * meet ENOSPC itself: a file whose flush failed cannot be closed
 * ("slist already enabled?"), and its handle then crashes HDF5's clean-up
 * at exit. `temp` is left, emptied by HDF5's create (truncate). Errors:
 * ERASE_ERR_IO "DIR: no space for checkpoint NAME: it needs about B bytes,
 * F bytes are free there (No space left on device | Disk quota exceeded)"
 * (`temp` removed), or the file cannot be created. */
static erase_status_t reserve_space(const char *temp, uint64_t bytes)
{
    char dir[ERASE_CKPT_PATH_MAX];
    const char *slash = strrchr(temp, '/'), *base = slash ? slash + 1 : temp;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - temp) : 1, slash ? temp : ".");
    int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, strerror(errno));
    int e = fallocate(fd, 0, 0, (off_t)bytes) == 0 ? 0 : errno;
    close(fd);
    struct statvfs fs;
    int have_fs = statvfs(dir, &fs) == 0;
    uint64_t avail = have_fs ? (uint64_t)fs.f_bavail * fs.f_frsize : 0;
    if ((e == EOPNOTSUPP || e == ENOSYS) && have_fs && avail < bytes)
        e = ENOSPC;
    if (e != ENOSPC && e != EDQUOT)
        return ERASE_OK; /* reserved, or cannot tell: HDF5 writes */
    unlink(temp);
    if (have_fs && statvfs(dir, &fs) == 0) /* without the part of `bytes` that was allocated */
        avail = (uint64_t)fs.f_bavail * fs.f_frsize;
    size_t len = strlen(base);
    return ERASE_ERROR(ERASE_ERR_IO, "%s: no space for checkpoint %.*s: it needs about %llu bytes, %llu bytes are "
                       "free there (%s)", dir, (int)(len > 5 ? len - 5 : len), base + (len > 5), /* ".NAME.tmp" */
                       (unsigned long long)bytes, (unsigned long long)avail, strerror(e));
}

/* Write the whole file `temp` (created or truncated), flush, close and
 * fsync it; the arguments are checked. On failure `temp` may remain (the
 * caller removes it). */
static erase_status_t write_temp(const char *temp, const erase_ckpt_meta_t *meta,
                                 const erase_ckpt_tensor_t *params, int np, const erase_ckpt_tensor_t *optim,
                                 int no, const erase_ckpt_rank_t *ranks, int nranks, const uint64_t *sums)
{
    erase_status_t st = ERASE_OK;
    char *index = NULL;
    size_t index_len = 0;
    writer_t w = { .file = -1, .temp = temp, .index = open_memstream(&index, &index_len), .lcpl = -1 };
    if (!w.index)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", temp);
    if ((st = reserve_space(temp, file_bytes(meta, params, np, optim, no))) != ERASE_OK) {
        fclose(w.index);
        free(index);
        return st;
    }
    char detail[256];
    erase_h5_enter();
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* the 1.8 format: checksummed superblock and object headers; any size of attribute */
    if (fapl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 ||
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot set up HDF5 file access: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK && (w.lcpl = H5Pcreate(H5P_LINK_CREATE)) >= 0)
        H5Pset_create_intermediate_group(w.lcpl, 1);
    if (st == ERASE_OK && (w.file = H5Fcreate(temp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK)
        st = write_body(&w, meta, params, np, optim, no, ranks, nranks, sums, debug_sleep_ms());
    if (st == ERASE_OK) {
        fflush(w.index);
        st = write_index(&w, index, index_len);
    }
    if (st == ERASE_OK && erase_h5_attr_write_string(w.file, "format", ERASE_CKPT_FORMAT))
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: attribute format: cannot write: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK && H5Fflush(w.file, H5F_SCOPE_GLOBAL) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: flush failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (w.file >= 0 && H5Fclose(w.file) < 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (w.lcpl >= 0)
        H5Pclose(w.lcpl);
    if (fapl >= 0)
        H5Pclose(fapl);
    erase_h5_leave();
    fclose(w.index);
    free(index);
    if (st == ERASE_OK && erase_fsync_path(temp, 0) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    return st;
}

/* The temporary name of a checkpoint file's name. */
#define TEMP_NAME ".%s.tmp"

int erase_ckpt_temp_path(const char *dir, int64_t step, char *out, size_t size)
{
    char name[64];
    snprintf(name, sizeof name, "ckpt-%" PRId64 ".h5", step);
    int n = snprintf(out, size, "%s/" TEMP_NAME, dir, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int64_t ckpt_row_elems(const erase_ckpt_tensor_t *t)
{
    return t->ndim == 2 ? t->dims[1] : 1;
}

/* The per-row checksums of this rank's rows of every sharded tensor of
 * t[n], appended at sums[*at...] (held values each). */
/* The FNV-1a of each of the rows a sharded tensor holds, into sums[held]. */
static void row_sums(const erase_ckpt_tensor_t *t, uint64_t *sums)
{
    size_t row = sizeof(float) * (size_t)ckpt_row_elems(t);
    for (int64_t r = 0; r < t->held; r++)
        sums[r] = erase_ckpt_fnv1a64((const char *)t->data + (size_t)r * row, row);
}

/* Write rows [row0, row0 + held) (cols elements of mem_type each) from
 * `data` into dataset `path` of the open file, collectively (a rank with
 * no rows selects none); the lock is held. 0 or -1 (remembered). */
static int write_part_rows(hid_t file, hid_t dxpl, const char *path, hid_t mem_type, int ndim, int64_t row0,
                           int64_t held, int64_t cols, const void *data)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t start[2] = { (hsize_t)row0, 0 }, count[2] = { (hsize_t)held, (hsize_t)cols };
    hsize_t one = 1;
    hid_t ms = held > 0 ? H5Screate_simple(ndim, count, NULL) : H5Screate_simple(1, &one, NULL);
    int ok = fs >= 0 && ms >= 0;
    if (ok && held > 0)
        ok = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0;
    else if (ok)
        ok = H5Sselect_none(fs) >= 0 && H5Sselect_none(ms) >= 0;
    static const uint64_t none = 0;
    ok = ok && H5Dwrite(d, mem_type, ms, fs, dxpl, held > 0 ? data : (const void *)&none) >= 0;
    if (!ok)
        erase_h5_remember();
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    return ok ? 0 : -1;
}

erase_status_t erase_ckpt_write_rows(const char *temp, MPI_Comm comm, const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    /* everything that may fail on one rank alone, before any collective */
    erase_status_t st = check_contents(params, np, optim, no, 0);
    size_t rows = 0; /* the most rows of one tensor: its checksums are made just before it is written */
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < (g ? no : np); i++) {
            const erase_ckpt_tensor_t *t = g ? &optim[i] : &params[i];
            if (t->sharding && st == ERASE_OK && (size_t)t->held > rows)
                rows = (size_t)t->held;
        }
    uint64_t *sums = st == ERASE_OK ? malloc(sizeof *sums * (rows ? rows : 1)) : NULL;
    if (st == ERASE_OK && !sums)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for %zu row checksums", temp, rows);
    /* a rank that cannot open the file (another file system, a directory it
     * cannot see) fails here, with the others: a collective MPI-IO open that
     * fails on some ranks only may never return (Open MPI's OMPIO) */
    int fd = st == ERASE_OK ? open(temp, O_RDWR) : -1;
    if (st == ERASE_OK && fd < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: rank %d cannot open the checkpoint being written: %s (every rank of a "
                         "run with sharded tables writes its rows into it: the checkpoint directory must be the same "
                         "on every rank)", temp, rank, strerror(errno));
    if (fd >= 0)
        close(fd);
    const char *fail = getenv("ERASE_DEBUG_CKPT_ROWS_FAIL");
    if (st == ERASE_OK && fail && *fail && atoi(fail) == rank)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: ERASE_DEBUG_CKPT_ROWS_FAIL: rank %d does not write its rows", temp, rank);
    int mine = st == ERASE_OK, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: the ranks' agreement before writing the rows failed (MPI)", temp);
    if (st != ERASE_OK || !all) { /* a rank failed: its status is the answer, no rank writes */
        free(sums);
        return st;
    }
    char detail[256];
    erase_h5_enter();
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER), file = -1;
    if (fapl < 0 || dxpl < 0 || H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0 ||
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 ||
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot set up parallel HDF5 access: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    if (st == ERASE_OK && (file = H5Fopen(temp, H5F_ACC_RDWR, fapl)) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open with MPI-IO to write the sharded rows: %s", temp,
                         erase_h5_detail(detail, sizeof detail));
    /* every rank goes through the same tensors in the same order (collective) */
    for (int g = 0; st == ERASE_OK && g < 2; g++)
        for (int i = 0; st == ERASE_OK && i < (g ? no : np); i++) {
            const erase_ckpt_tensor_t *t = g ? &optim[i] : &params[i];
            if (!t->sharding)
                continue;
            char path[ERASE_CKPT_NAME_MAX + 16], sums_path[ERASE_CKPT_NAME_MAX + 32];
            snprintf(path, sizeof path, "/%s/%s", g ? "optim" : "params", t->name);
            ckpt_rowsum_path(path, sums_path, sizeof sums_path);
            row_sums(t, sums);
            if (write_part_rows(file, dxpl, path, H5T_NATIVE_FLOAT, t->ndim, t->row0, t->held, ckpt_row_elems(t),
                                t->data) != 0)
                st = ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot write rows [%" PRId64 ", %" PRId64 "): %s",
                                 temp, path, t->row0, t->row0 + t->held, erase_h5_detail(detail, sizeof detail));
            else if (write_part_rows(file, dxpl, sums_path, H5T_NATIVE_UINT64, 1, t->row0, t->held, 1,
                                     sums) != 0)
                st = ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: cannot write rows [%" PRId64 ", %" PRId64 "): %s",
                                 temp, sums_path, t->row0, t->row0 + t->held, erase_h5_detail(detail, sizeof detail));
        }
    if (file >= 0 && st == ERASE_OK && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: flush failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (file >= 0 && H5Fclose(file) < 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    if (dxpl >= 0)
        H5Pclose(dxpl);
    if (fapl >= 0)
        H5Pclose(fapl);
    erase_h5_leave();
    free(sums);
    if (st == ERASE_OK && rank == 0 && erase_fsync_path(temp, 0) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    return st;
}

/* The gate's verdict on st (st itself without a gate). */
static erase_status_t pass_gate(erase_ckpt_gate_fn gate, void *ctx, erase_status_t st)
{
    return gate ? gate(ctx, st) : st;
}

erase_status_t erase_ckpt_write_part(const char *dir, const erase_ckpt_meta_t *meta, int part,
                                     const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no,
                                     const erase_ckpt_rank_t *ranks, int nranks,
                                     const uint64_t *sums, int keep, erase_ckpt_gate_fn gate, void *ctx,
                                     erase_ckpt_report_t *report)
{
    double t0 = erase_now_s();
    if (report)
        memset(report, 0, sizeof *report);
    erase_status_t st = ERASE_OK;
    if (keep < 1)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: keep %d: must be >= 1", keep);
    else if (part < 0 || part >= meta->pp_size)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint: part %d: expected a stage of the %d (0 to %d)", part,
                         meta->pp_size, meta->pp_size - 1);
    if (st == ERASE_OK)
        st = check_contents(params, np, optim, no, nranks);
    if (st == ERASE_OK && mkdir(dir, 0777) != 0 && errno != EEXIST)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the checkpoint directory: %s", dir, strerror(errno));
    char name[96], temp_name[112], path[ERASE_CKPT_PATH_MAX], temp[ERASE_CKPT_PATH_MAX], latest[ERASE_CKPT_PATH_MAX];
    char main_name[64];
    snprintf(main_name, sizeof main_name, "ckpt-%" PRId64 ".h5", meta->step);
    erase_ckpt_stage_path(main_name, part, name, sizeof name);
    snprintf(temp_name, sizeof temp_name, TEMP_NAME, name);
    if (st == ERASE_OK && (ckpt_join(path, dir, name) || ckpt_join(temp, dir, temp_name) || ckpt_join(latest, dir, "latest")))
        st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: checkpoint directory path too long", dir);
    if (st == ERASE_OK)
        st = erase_ckpt_meta_check(path, meta);
    if (st != ERASE_OK)
        return pass_gate(gate, ctx, st);

    st = write_temp(temp, meta, params, np, optim, no, ranks, nranks, sums);
    /* a stage file is published before the gate, the checkpoint's own file
     * (part 0) after it: last, once every part is in place */
    if (st == ERASE_OK && part > 0 && rename(temp, path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    if (st == ERASE_OK && part > 0 && erase_fsync_path(dir, 1) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the checkpoint directory failed: %s", dir, strerror(errno));
    st = pass_gate(gate, ctx, st);
    if (st == ERASE_OK && part == 0 && rename(temp, path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    if (st != ERASE_OK) {
        unlink(temp);
        erase_error_trail(__FILE__, __LINE__);
        return st;
    }
    int removed = 0;
    if (part == 0) {
        if (erase_fsync_path(dir, 1) != 0)
            return ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the checkpoint directory failed: %s", dir,
                               strerror(errno));
        char line[128];
        snprintf(line, sizeof line, "%s\n", name);
        ERASE_CHECK(erase_write_file_atomic(latest, line, strlen(line)));
        removed = ckpt_prune(dir, meta->step, keep);
    }
    if (report) {
        struct stat sb;
        snprintf(report->path, sizeof report->path, "%s", path);
        report->bytes = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
        report->seconds = erase_now_s() - t0;
        report->mb_per_s = report->seconds > 0 ? (double)report->bytes / report->seconds / 1e6 : 0;
        report->removed = removed;
    }
    return ERASE_OK;
}

erase_status_t erase_ckpt_write_file(const char *path, const erase_ckpt_meta_t *meta,
                                     const erase_ckpt_tensor_t *params, int np,
                                     const erase_ckpt_tensor_t *optim, int no,
                                     const erase_ckpt_rank_t *ranks, int nranks, int overwrite)
{
    char dir[ERASE_CKPT_PATH_MAX], temp[ERASE_CKPT_PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    int len = slash ? (int)(slash - path) : 0;
    if (slash && len)
        snprintf(dir, sizeof dir, "%.*s", len, path);
    else
        snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
    int n = snprintf(temp, sizeof temp, "%.*s%s.%s.tmp", len, path, slash ? "/" : "", base);
    if (!*base || n < 0 || n >= (int)sizeof temp)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: not a file name, or too long", path);
    ERASE_CHECK(check_contents(params, np, optim, no, nranks));
    ERASE_CHECK(erase_ckpt_meta_check(path, meta));
    if (!overwrite && access(path, F_OK) == 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: exists (not overwritten)", path);
    erase_status_t st = write_temp(temp, meta, params, np, optim, no, ranks, nranks, NULL);
    /* without overwrite, link() publishes only where nothing is (atomically) */
    if (st == ERASE_OK && (overwrite ? rename(temp, path) : link(temp, path)) != 0)
        st = errno == EEXIST ? ERASE_ERROR(ERASE_ERR_INVALID, "%s: exists (not overwritten)", path)
                             : ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    unlink(temp); /* the temporary file on failure; without overwrite, its second name */
    if (st == ERASE_OK && erase_fsync_path(dir, 1) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync of the directory failed: %s", dir, strerror(errno));
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    return st;
}

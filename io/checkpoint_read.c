/*
 * Reading checkpoints (io/checkpoint.h): opening a file (and a
 * pipeline's stage files), checking every dataset against the /index
 * checksums, and loading whole tensors or a rank's rows.
 */
#include "io/checkpoint_stream.h"

#include "config.h"
#include "io/h5_rows.h"
#include "io/h5_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/checked.h"
#include "lib/core/fs.h"


const char *erase_ckpt_path(const erase_ckpt_t *ck) { return ck->path; }
const erase_ckpt_meta_t *erase_ckpt_meta(const erase_ckpt_t *ck) { return &ck->meta; }
int erase_ckpt_count(const erase_ckpt_t *ck, erase_ckpt_group_t g) { return ck->n[g]; }
int erase_ckpt_ranks(const erase_ckpt_t *ck) { return ck->nranks; }
int erase_ckpt_attributes_summed(const erase_ckpt_t *ck) { return ck->attributes_summed; }

const erase_ckpt_tensor_t *erase_ckpt_tensor(const erase_ckpt_t *ck, erase_ckpt_group_t g, int i)
{
    return i >= 0 && i < ck->n[g] ? &ck->t[g][i] : NULL;
}

const erase_ckpt_tensor_t *erase_ckpt_find(const erase_ckpt_t *ck, erase_ckpt_group_t g, const char *name)
{
    for (int i = 0; i < ck->n[g]; i++)
        if (!strcmp(ck->t[g][i].name, name))
            return &ck->t[g][i];
    return NULL;
}

const erase_ckpt_rank_t *erase_ckpt_rank(const erase_ckpt_t *ck, int r)
{
    return r >= 0 && r < ck->nranks ? &ck->ranks[r] : NULL;
}

void erase_ckpt_close(erase_ckpt_t *ck)
{
    if (!ck)
        return;
    for (int g = 0; g < 2; g++) {
        for (int i = 0; i < ck->n[g]; i++) {
            free(ck->t[g][i].data);
            free(ck->info[g][i].sharding);
            free(ck->info[g][i].meaning);
        }
        free(ck->t[g]);
        free(ck->info[g]);
    }
    for (size_t i = 0; i < sizeof ck->text / sizeof ck->text[0]; i++)
        free(ck->text[i]);
    free(ck->ranks);
    free(ck->path);
    free(ck);
}

/* A string attribute of any length (malloc'ed), or NULL when missing or not
 * a scalar string; the lock is held. */
static char *read_string_attr(hid_t loc, const char *name)
{
    int rc;
    return erase_h5_attr_read_string_alloc(loc, name, &rc);
}

/* A scalar numeric attribute converted to mem_type; 0 or -1. */
static int read_scalar_attr(hid_t loc, const char *name, hid_t mem_type, void *value)
{
    if (H5Aexists(loc, name) <= 0)
        return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    hid_t sp = H5Aget_space(a), t = H5Aget_type(a);
    H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    int rc = sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 && (c == H5T_INTEGER || c == H5T_FLOAT) &&
                     H5Aread(a, mem_type, value) >= 0
                 ? 0
                 : -1;
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    H5Aclose(a);
    return rc;
}

/* The /index text (malloc'ed) or NULL; the lock is held. */
static char *read_index(hid_t file)
{
    if (erase_h5_exists(file, "/index") <= 0)
        return NULL; /* a damaged file: HDF5's reason kept */
    hid_t d = H5Dopen2(file, "/index", H5P_DEFAULT);
    if (d < 0)
        return NULL;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    char *out = NULL;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
        H5Sget_simple_extent_type(sp) == H5S_SCALAR) {
        size_t n = H5Tget_size(t);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, n + 1);
        H5Tset_strpad(mt, H5T_STR_NULLTERM);
        out = calloc(n + 2, 1);
        if (out && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
            erase_h5_remember();
            free(out);
            out = NULL;
        }
        H5Tclose(mt);
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Dclose(d);
    return out;
}

/* Append a tensor (data may be NULL: not loaded); `info`'s sharding and
 * meaning become the checkpoint's (freed with it) even on failure. */
static erase_status_t add_tensor(erase_ckpt_t *ck, int g, const char *name, int ndim, const int64_t *dims,
                                 float *data, tensor_info_t info)
{
    if (ck->n[g] == ck->cap[g]) {
        int cap = ck->cap[g] ? 2 * ck->cap[g] : 64;
        erase_ckpt_tensor_t *grown = realloc(ck->t[g], (size_t)cap * sizeof *grown);
        if (grown)
            ck->t[g] = grown;
        tensor_info_t *more = realloc(ck->info[g], (size_t)cap * sizeof *more);
        if (more)
            ck->info[g] = more;
        if (!grown || !more) {
            free(info.sharding);
            free(info.meaning);
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
        }
        ck->cap[g] = cap;
    }
    ck->info[g][ck->n[g]] = info;
    erase_ckpt_tensor_t *t = &ck->t[g][ck->n[g]++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->dims[0] = dims[0];
    t->dims[1] = ndim == 2 ? dims[1] : 1;
    t->data = data;
    t->sharding = info.sharding;
    t->meaning = info.meaning;
    return ERASE_OK;
}

/* Parse "[a]" or "[a, b]". */
static int parse_shape(const char *s, int *ndim, int64_t *dims)
{
    long long a, b;
    char end;
    if (sscanf(s, "[%lld, %lld%c", &a, &b, &end) == 3 && end == ']' && a >= 0 && b >= 0) {
        *ndim = 2;
        dims[0] = a;
        dims[1] = b;
        return 0;
    }
    if (sscanf(s, "[%lld%c", &a, &end) == 2 && end == ']' && a >= 0) {
        *ndim = 1;
        dims[0] = a;
        dims[1] = 1;
        return 0;
    }
    return -1;
}

/* io/checkpoint_stream.h */
erase_status_t ckpt_open_checked(const erase_ckpt_t *ck, hid_t file, const char *path, const char *type, int ndim,
                                 const int64_t *dims, hid_t *d, hid_t *mem_type, size_t *elem)
{
    *d = -1;
    hid_t want_class;
    if (!strcmp(type, "float32")) {
        *mem_type = H5T_NATIVE_FLOAT, want_class = H5T_FLOAT, *elem = 4;
    } else if (!strcmp(type, "int64")) {
        *mem_type = H5T_NATIVE_INT64, want_class = H5T_INTEGER, *elem = 8;
    } else if (!strcmp(type, "uint64")) {
        *mem_type = H5T_NATIVE_UINT64, want_class = H5T_INTEGER, *elem = 8;
    } else {
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: dataset %s has type %s (float32, int64 or uint64 "
                           "expected)", ck->path, path, type);
    }
    int exists = erase_h5_exists(file, path);
    if (exists < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: the file is damaged (HDF5 cannot look the name up: "
                           "%s)", ck->path, path, erase_h5_detail(detail, sizeof detail));
    }
    if (exists == 0) {
        H5Eclear2(H5E_DEFAULT);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s is missing (listed in /index)", ck->path, path);
    }
    hid_t id = H5Dopen2(file, path, H5P_DEFAULT);
    if (id < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot open: %s", ck->path, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    hid_t t = H5Dget_type(id), sp = H5Dget_space(id);
    hsize_t hd[2] = { 0, 0 };
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (rank == ndim)
        H5Sget_simple_extent_dims(sp, hd, NULL);
    char got[32] = "?";
    if (t >= 0)
        erase_h5_type_name(t, got, sizeof got);
    erase_status_t st = ERASE_OK;
    if (t < 0 || H5Tget_class(t) != want_class || H5Tget_size(t) != *elem || strcmp(got, type))
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: type %s, /index says %s", ck->path, path, got, type);
    else if (rank != ndim || (int64_t)hd[0] != dims[0] || (ndim == 2 && (int64_t)hd[1] != dims[1])) {
        char want[64], have[64];
        ckpt_shape_text(ndim, dims, want, sizeof want);
        int64_t hv[2] = { (int64_t)hd[0], (int64_t)hd[1] };
        if (rank == 1 || rank == 2)
            ckpt_shape_text(rank, hv, have, sizeof have);
        else
            snprintf(have, sizeof have, "rank %d", rank);
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: shape %s, /index says %s", ck->path, path, have, want);
    }
    size_t bytes = 0;
    if (st == ERASE_OK && !erase_bytes(*elem, dims[0], ndim == 2 ? dims[1] : 1, &bytes)) {
        char want[64];
        ckpt_shape_text(ndim, dims, want, sizeof want);
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: shape %s of %zu-byte elements is more than "
                         "memory can address", ck->path, path, want, *elem);
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    if (st != ERASE_OK) {
        H5Dclose(id);
        return st;
    }
    *d = id;
    return ERASE_OK;
}

/* The open dataset d (`path`) carries the attribute fnv1a64 = sum, its
 * checksum in /index; the lock is held. */
static erase_status_t check_sum_attr(const erase_ckpt_t *ck, hid_t d, const char *path, uint64_t sum)
{
    uint64_t attr = 0;
    if (read_scalar_attr(d, "fnv1a64", H5T_NATIVE_UINT64, &attr) != 0 || attr != sum)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: attribute fnv1a64 missing or not the checksum in "
                           "/index", ck->path, path);
    return ERASE_OK;
}

/* Verify tensor i of group g, checksummed whole (`path`, its /index
 * checksum `sum`), by streaming it through its checksum, nothing kept
 * (ERASE_CKPT_OPEN_STREAM_WHOLE); the lock is held. */
static erase_status_t verify_streamed(const erase_ckpt_t *ck, hid_t file, int g, int i, const char *path,
                                      uint64_t sum)
{
    ERASE_CHECK(ckpt_stream_rows(ck, file, g, i, 0, 0, NULL, NULL));
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT); /* opened by ckpt_stream_rows just now */
    if (d < 0) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot open: %s", ck->path, path,
                           erase_h5_detail(detail, sizeof detail));
    }
    erase_status_t st = check_sum_attr(ck, d, path, sum);
    H5Dclose(d);
    return st;
}

/* Read and verify one dataset listed in /index; the lock is held. *data is
 * malloc'ed (elem-byte elements). */
static erase_status_t read_dataset(erase_ckpt_t *ck, hid_t file, const char *path, const char *type,
                                   int ndim, const int64_t *dims, uint64_t sum, void **data)
{
    *data = NULL;
    hid_t d, mem_type;
    size_t elem;
    ERASE_CHECK(ckpt_open_checked(ck, file, path, type, ndim, dims, &d, &mem_type, &elem));
    size_t bytes = elem * (size_t)dims[0] * (size_t)(ndim == 2 ? dims[1] : 1); /* checked */
    erase_status_t st = ERASE_OK;
    void *buf = malloc(bytes + 1);
    if (!buf)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory (%zu bytes)", ck->path, path, bytes);
    if (st == ERASE_OK && bytes > 0 && H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: cannot read: %s", ck->path, path,
                         erase_h5_detail(detail, sizeof detail));
    }
    if (st == ERASE_OK) {
        uint64_t h = erase_ckpt_fnv1a64(buf, bytes);
        if (h != sum)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: checksum %016" PRIx64 " does not match the "
                             "stored %016" PRIx64 " (damaged data)", ck->path, path, h, sum);
        else
            st = check_sum_attr(ck, d, path, sum);
    }
    H5Dclose(d);
    if (st != ERASE_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    return ERASE_OK;
}

/* A dataset's string attribute `name` (a row-checksummed dataset's
 * `sharding`, a tensor's `meaning`; malloc'ed; "" when missing), or NULL
 * when out of memory; the lock is held. */
static char *read_dataset_text(hid_t file, const char *path, const char *name)
{
    char *text = NULL;
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d >= 0 && H5Aexists(d, name) > 0)
        text = read_string_attr(d, name);
    if (d >= 0)
        H5Dclose(d);
    return text ? text : strdup("");
}

/* One /index line: path type shape sum. */
static erase_status_t load_line(erase_ckpt_t *ck, hid_t file, char *line, int64_t *cursor, int *have_cursor,
                                int64_t **rank_cursors, int64_t *rank_cursor_rows)
{
    char path[ERASE_CKPT_NAME_MAX + 16], type[32], shape[64];
    unsigned long long sum;
    char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    char *sp3 = sp2 ? strrchr(sp2 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || !sp3 || (size_t)(sp1 - line) >= sizeof path || (size_t)(sp2 - sp1 - 1) >= sizeof type ||
        (size_t)(sp3 - sp2 - 1) >= sizeof shape)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: bad line '%s'", ck->path, line);
    snprintf(path, sizeof path, "%.*s", (int)(sp1 - line), line);
    snprintf(type, sizeof type, "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
    snprintf(shape, sizeof shape, "%.*s", (int)(sp3 - sp2 - 1), sp2 + 1);
    char *end;
    errno = 0;
    int rows = !strcmp(sp3 + 1, "rows"); /* written sharded: a checksum per row */
    sum = rows ? 0 : strtoull(sp3 + 1, &end, 16);
    int ndim;
    int64_t dims[2];
    if ((!rows && (errno || *end || end == sp3 + 1)) || parse_shape(shape, &ndim, dims) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: bad line '%s'", ck->path, line);
    int tensor = !strncmp(path, "/params/", 8) || !strncmp(path, "/optim/", 7);
    if (tensor && strcmp(type, "float32"))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: type %s, float32 expected", ck->path, path, type);
    if (rows && !tensor)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /index: dataset %s: only /params and /optim tensors have "
                           "checksums per row", ck->path, path);
    if (tensor) {
        int g = path[1] == 'p' ? ERASE_CKPT_PARAMS : ERASE_CKPT_OPTIM;
        tensor_info_t info = { .sum = (uint64_t)sum, .rows = rows };
        if ((rows && !(info.sharding = read_dataset_text(file, path, "sharding"))) ||
            !(info.meaning = read_dataset_text(file, path, "meaning"))) {
            free(info.sharding);
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
        }
        erase_status_t st = add_tensor(ck, g, path + (g == ERASE_CKPT_PARAMS ? 8 : 7), ndim, dims, NULL, info);
        int i = ck->n[g] - 1;
        hid_t d, mem_type, c;
        size_t elem, bytes = sizeof(float) * (size_t)dims[0] * (size_t)(ndim == 2 ? dims[1] : 1);
        int64_t one[1] = { dims[0] };
        char sums_path[ERASE_CKPT_NAME_MAX + 32];
        ckpt_rowsum_path(path, sums_path, sizeof sums_path);
        if (st != ERASE_OK || (ck->flags & ERASE_CKPT_OPEN_LAZY_ALL))
            return st; /* checked when read (erase_ckpt_load) */
        if (rows && (ck->flags & ERASE_CKPT_OPEN_LAZY_ROWS)) { /* present, with their shapes */
            ERASE_CHECK(ckpt_open_checked(ck, file, path, type, ndim, dims, &d, &mem_type, &elem));
            H5Dclose(d);
            ERASE_CHECK(ckpt_open_checked(ck, file, sums_path, "uint64", 1, one, &c, &mem_type, &elem));
            H5Dclose(c);
            return ERASE_OK;
        }
        if (!rows && (ck->flags & ERASE_CKPT_OPEN_STREAM_WHOLE))
            return verify_streamed(ck, file, g, i, path, (uint64_t)sum);
        if (!rows)
            return read_dataset(ck, file, path, type, ndim, dims, (uint64_t)sum, (void **)&ck->t[g][i].data);
        ERASE_CHECK(ckpt_open_checked(ck, file, path, type, ndim, dims, &d, &mem_type, &elem)); /* size checked */
        H5Dclose(d);
        float *data = malloc(bytes + 1);
        if (!data)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory (%zu bytes)", ck->path, path, bytes);
        st = ckpt_read_rows(ck, file, g, i, 0, dims[0], data);
        if (st != ERASE_OK)
            free(data);
        else
            ck->t[g][i].data = data;
        return st;
    }
    void *data;
    ERASE_CHECK(read_dataset(ck, file, path, type, ndim, dims, (uint64_t)sum, &data));
    erase_status_t st = ERASE_OK;
    if (!strncmp(path, "/rng/", 5)) {
        char *e;
        long r = strtol(path + 5, &e, 10);
        if (*e || e == path + 5 || r < 0 || r >= ERASE_CKPT_RANKS_MAX || strcmp(type, "uint64") || ndim != 1 || dims[0] != 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected /rng/<rank> uint64 [2]", ck->path, path);
        if (st == ERASE_OK && r >= ck->nranks) {
            erase_ckpt_rank_t *grown = realloc(ck->ranks, (size_t)(r + 1) * sizeof *grown);
            if (!grown)
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
            else {
                memset(grown + ck->nranks, 0, (size_t)(r + 1 - ck->nranks) * sizeof *grown);
                ck->ranks = grown;
                ck->nranks = (int)r + 1;
            }
        }
        if (st == ERASE_OK)
            memcpy(ck->ranks[r].rng, data, 2 * sizeof(uint64_t));
    } else if (!strcmp(path, "/data/cursor")) {
        if (strcmp(type, "int64") || ndim != 1 || dims[0] != 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected int64 [2]", ck->path, path);
        else {
            memcpy(cursor, data, 2 * sizeof(int64_t));
            *have_cursor = 1;
        }
    } else if (!strcmp(path, "/data/rank_cursors")) {
        if (strcmp(type, "int64") || ndim != 2 || dims[1] != 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected int64 [ranks, 2]", ck->path, path);
        else {
            free(*rank_cursors);
            *rank_cursors = data;
            *rank_cursor_rows = dims[0];
            return ERASE_OK;
        }
    } /* other datasets (later versions) are verified and ignored */
    free(data);
    return st;
}

/* Group `name` is there: "missing", or the file damaged when HDF5 cannot
 * look it up; the lock is held. */
static erase_status_t need_group(const erase_ckpt_t *ck, hid_t file, const char *name)
{
    int exists = erase_h5_exists(file, name);
    char detail[256];
    if (exists < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: group %s: the file is damaged (HDF5 cannot look the name up: %s)",
                           ck->path, name, erase_h5_detail(detail, sizeof detail));
    if (exists == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: group %s is missing", ck->path, name);
    return ERASE_OK;
}

/* /meta's attributes into ck->meta; the lock is held. */
static erase_status_t read_meta(erase_ckpt_t *ck, hid_t file)
{
    ERASE_CHECK(need_group(ck, file, "/meta"));
    hid_t g = H5Gopen2(file, "/meta", H5P_DEFAULT);
    if (g < 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: group /meta: cannot open", ck->path);
    static const char *const ints[] = { "step", "samples_seen", "epoch", "global_batch", "world_size", "dp_size",
                                        "pp_size" };
    int64_t v[7];
    static const char *const strs[] = { "pp_layout", "schedule", "dense_optimizer", "embedding_optimizer",
                                        "model", "options", "version", "created" };
    erase_status_t st = ERASE_OK;
    for (int i = 0; st == ERASE_OK && i < 7; i++)
        if (read_scalar_attr(g, ints[i], H5T_NATIVE_INT64, &v[i]) != 0)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute %s is missing or not an integer", ck->path, ints[i]);
    for (int i = 0; st == ERASE_OK && i < 8; i++)
        if (!(ck->text[i] = read_string_attr(g, strs[i])))
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute %s is missing or not a string", ck->path, strs[i]);
    if (st == ERASE_OK && read_scalar_attr(g, "seed", H5T_NATIVE_UINT64, &ck->meta.seed) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute seed is missing", ck->path);
    /* optional: only a run with sharded tables writes it */
    if (st == ERASE_OK && H5Aexists(g, "embeddings") > 0 && !(ck->text[8] = read_string_attr(g, "embeddings")))
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute embeddings is not a string", ck->path);
    /* optional: only an lm run on BPE data writes it */
    if (st == ERASE_OK && H5Aexists(g, "tokenizer") > 0 && !(ck->text[9] = read_string_attr(g, "tokenizer")))
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /meta attribute tokenizer is not a string", ck->path);
    H5Gclose(g);
    for (int i = 4; st == ERASE_OK && i < 7; i++) { /* before they become ints */
        char attr[32];
        snprintf(attr, sizeof attr, "/meta %s", ints[i]);
        st = ckpt_int_in_range(ck->path, attr, v[i], 1, ERASE_CKPT_RANKS_MAX);
    }
    if (st != ERASE_OK)
        return st;
    erase_ckpt_meta_t *m = &ck->meta;
    m->step = v[0], m->samples_seen = v[1], m->epoch = v[2], m->global_batch = v[3];
    m->world_size = (int)v[4], m->dp_size = (int)v[5], m->pp_size = (int)v[6];
    m->pp_layout = ck->text[0], m->schedule = ck->text[1], m->dense_optimizer = ck->text[2];
    m->embedding_optimizer = ck->text[3], m->model = ck->text[4], m->options = ck->text[5];
    m->version = ck->text[6], m->created = ck->text[7], m->embeddings = ck->text[8];
    m->tokenizer = ck->text[9];
    ERASE_CHECK(need_group(ck, file, "/optim"));
    hid_t o = H5Gopen2(file, "/optim", H5P_DEFAULT);
    if (o < 0 || read_scalar_attr(o, "step", H5T_NATIVE_INT64, &m->clock_step) != 0 ||
        read_scalar_attr(o, "lr", H5T_NATIVE_FLOAT, &m->clock_lr) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /optim: the clock attributes step and lr are missing", ck->path);
    if (o >= 0)
        H5Gclose(o);
    return st;
}

/* Everything of an open file; the lock is held. */
static erase_status_t load_file(erase_ckpt_t *ck, hid_t file)
{
    char format[64];
    int rc = erase_h5_attr_read_string(file, "format", format, sizeof format);
    if (rc == 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no format attribute: not an erase checkpoint, or not "
                           "completely written", ck->path);
    if (rc != 0 || strcmp(format, ERASE_CKPT_FORMAT))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: format '%s', expected '%s'", ck->path, format, ERASE_CKPT_FORMAT);
    char *index = read_index(file);
    if (!index) {
        char detail[256];
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /index is missing or unreadable%s%s", ck->path,
                           erase_h5_detail(detail, sizeof detail)[0] ? ": " : "", detail);
    }
    uint64_t want = 0;
    erase_status_t st = ERASE_OK;
    if (read_scalar_attr(file, "index_fnv1a64", H5T_NATIVE_UINT64, &want) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute index_fnv1a64 is missing", ck->path);
    else if (erase_ckpt_fnv1a64(index, strlen(index)) != want)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /index: checksum does not match (damaged)", ck->path);
    int64_t cursor[2] = { 0, 0 }, *rank_cursors = NULL, rows = 0;
    int have_cursor = 0;
    for (char *line = index, *next; st == ERASE_OK && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (*line)
            st = load_line(ck, file, line, cursor, &have_cursor, &rank_cursors, &rows);
    }
    free(index);
    if (st == ERASE_OK)
        st = read_meta(ck, file);
    if (st == ERASE_OK && !have_cursor)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /data/cursor is missing", ck->path);
    if (st == ERASE_OK && rank_cursors && rows != ck->nranks)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /data/rank_cursors has %" PRId64 " rows, /rng %d ranks", ck->path,
                         rows, ck->nranks);
    if (st == ERASE_OK && !ck->n[ERASE_CKPT_PARAMS])
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no parameters under /params", ck->path);
    for (int r = 0; st == ERASE_OK && rank_cursors && r < ck->nranks; r++) {
        ck->ranks[r].epoch = rank_cursors[2 * r];
        ck->ranks[r].samples = rank_cursors[2 * r + 1];
        if (ck->ranks[r].epoch < 0 || ck->ranks[r].epoch > ERASE_CKPT_STEP_MAX || ck->ranks[r].samples < 0 ||
            ck->ranks[r].samples > ERASE_CKPT_SAMPLES_MAX) /* the bounds of /meta epoch and samples_seen */
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /data/rank_cursors: rank %d's cursor (epoch %" PRId64
                             ", sample %" PRId64 "): expected an epoch in [0, %" PRId64 "] and a sample in [0, %"
                             PRId64 "]", ck->path, r, ck->ranks[r].epoch, ck->ranks[r].samples, ERASE_CKPT_STEP_MAX,
                             ERASE_CKPT_SAMPLES_MAX);
    }
    free(rank_cursors);
    /* the ranges first, so that a value out of range is named; then whether
     * the attributes are the ones written */
    ck->meta.epoch_samples = cursor[1];
    if (st == ERASE_OK)
        st = erase_ckpt_meta_check(ck->path, &ck->meta);
    if (st == ERASE_OK && cursor[0] != ck->meta.epoch)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /data/cursor epoch %" PRId64 ", /meta epoch %" PRId64, ck->path,
                         cursor[0], ck->meta.epoch);
    if (st == ERASE_OK && ck->nranks != ck->meta.world_size)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: /rng holds %d ranks, attribute /meta world_size = %d", ck->path,
                         ck->nranks, ck->meta.world_size);
    uint64_t meta_sum = 0;
    /* without meta_fnv1a64 (an erase before it): range-checked only, and
     * said so (erase_ckpt_attributes_summed) */
    ck->attributes_summed = st == ERASE_OK && H5Aexists(file, "meta_fnv1a64") > 0;
    if (st == ERASE_OK && ck->attributes_summed &&
        read_scalar_attr(file, "meta_fnv1a64", H5T_NATIVE_UINT64, &meta_sum) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute meta_fnv1a64 cannot be read (damaged)", ck->path);
    if (st == ERASE_OK && ck->attributes_summed && erase_ckpt_meta_fnv1a64(&ck->meta) != meta_sum)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the attributes of /meta and /optim: checksum %016" PRIx64 " does not "
                         "match the stored meta_fnv1a64 %016" PRIx64 " (damaged)", ck->path,
                         erase_ckpt_meta_fnv1a64(&ck->meta), meta_sum);
    return st;
}

erase_status_t erase_ckpt_open_path(const char *path, erase_ckpt_skip_fn skipped, void *ctx, erase_ckpt_t **out)
{
    return erase_ckpt_open_path_flags(path, 0, skipped, ctx, out);
}

erase_status_t erase_ckpt_open_path_flags(const char *path, int flags, erase_ckpt_skip_fn skipped, void *ctx,
                                          erase_ckpt_t **out)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ERASE_CHECK(erase_ckpt_open_flags(path, flags, out));
        return ERASE_OK;
    }
    ERASE_CHECK(erase_ckpt_open_newest_flags(path, flags, skipped, ctx, out));
    if (!*out)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no checkpoint (ckpt-<step>.h5) in this directory", path);
    return ERASE_OK;
}

/* Open one file: the checkpoint's own or a stage file. */
static erase_status_t open_file(const char *path, int flags, erase_ckpt_t **out);

/* A pipeline checkpoint (pp_size > 1): every stage file <path>.stage<s>
 * opens (validated completely) and is of the same step and layout. */
static erase_status_t check_stage_files(const erase_ckpt_t *ck)
{
    const erase_ckpt_meta_t *m = &ck->meta;
    for (int s = 1; s < m->pp_size; s++) {
        char path[ERASE_CKPT_PATH_MAX];
        if (erase_ckpt_stage_path(ck->path, s, path, sizeof path) != 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: path too long for its stage files", ck->path);
        erase_ckpt_t *part;
        if (open_file(path, 0, &part) != ERASE_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", erase_error_reason());
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: stage %d of %d: %s", ck->path, s, m->pp_size, why);
        }
        const erase_ckpt_meta_t *q = &part->meta;
        erase_status_t st = ERASE_OK;
        if (q->step != m->step || q->pp_size != m->pp_size || strcmp(ckpt_nz(q->pp_layout), ckpt_nz(m->pp_layout)))
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: stage %d of %d: %s is of step %lld, %d stages (%s), expected "
                             "step %lld, %d stages (%s)", ck->path, s, m->pp_size, path, (long long)q->step,
                             q->pp_size, ckpt_nz(q->pp_layout), (long long)m->step, m->pp_size, ckpt_nz(m->pp_layout));
        erase_ckpt_close(part);
        ERASE_CHECK(st);
    }
    return ERASE_OK;
}

erase_status_t erase_ckpt_open(const char *path, erase_ckpt_t **out)
{
    return erase_ckpt_open_flags(path, 0, out);
}

erase_status_t erase_ckpt_open_flags(const char *path, int flags, erase_ckpt_t **out)
{
    ERASE_CHECK(open_file(path, flags, out));
    int stage_file = ckpt_named_as_stage_file(path); /* opened alone */
    erase_status_t st = (*out)->meta.pp_size > 1 && !stage_file ? check_stage_files(*out) : ERASE_OK;
    if (st != ERASE_OK) {
        erase_ckpt_close(*out);
        *out = NULL;
    }
    return st;
}

erase_status_t erase_ckpt_need_whole(const erase_ckpt_t *ck)
{
    if (ck->meta.pp_size <= 1)
        return ERASE_OK;
    return ERASE_ERROR(ERASE_ERR_INVALID, "%s: a pipeline checkpoint (%s): erase-train --resume or --init-from with "
                       "the same --pp and --stages continues from it; --eval-only, erase-score and erase-sample take "
                       "data-parallel checkpoints only: erase-inspect merge %s OUT makes one", ck->path,
                       ckpt_nz(ck->meta.pp_layout), ck->path);
}

erase_status_t erase_ckpt_open_stage(const char *path, int stage, erase_ckpt_t **out)
{
    *out = NULL;
    char part[ERASE_CKPT_PATH_MAX];
    if (stage < 0 || erase_ckpt_stage_path(path, stage, part, sizeof part) != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: stage %d: not a stage, or the path is too long", path, stage);
    return open_file(part, 0, out);
}

static erase_status_t open_file(const char *path, int flags, erase_ckpt_t **out)
{
    *out = NULL;
    ERASE_CHECK(erase_file_check_regular(path)); /* H5Fopen would wait on a FIFO */
    if (access(path, R_OK) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    erase_ckpt_t *ck = calloc(1, sizeof *ck);
    if (!ck || !(ck->path = strdup(path))) {
        free(ck);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    ck->flags = flags;
    erase_status_t st;
    erase_h5_enter();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        char detail[256];
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: cannot open as HDF5 (truncated or not a checkpoint): %s", path,
                         erase_h5_detail(detail, sizeof detail));
    } else {
        st = load_file(ck, file);
        H5Fclose(file);
    }
    erase_h5_leave();
    if (st != ERASE_OK) {
        erase_ckpt_close(ck);
        return st;
    }
    *out = ck;
    return ERASE_OK;
}

/* The tensors of group g against `want` (names and shapes): with `whole`,
 * the group holds no other tensor either. ERASE_ERR_INVALID listing the
 * first differences. Nothing is read. */
static erase_status_t check_tensors(const erase_ckpt_t *ck, erase_ckpt_group_t g, const erase_ckpt_tensor_t *want,
                                    int n, const char *what, int whole)
{
    enum { LISTED = 10 };
    const char *group = g == ERASE_CKPT_PARAMS ? "params" : "optim";
    char *msg = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&msg, &len);
    if (!m)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", ck->path);
    int diffs = 0;
    for (int i = 0; i < n; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, g, want[i].name);
        char a[64] = "missing", b[64];
        ckpt_shape_text(want[i].ndim, want[i].dims, b, sizeof b);
        if (t)
            ckpt_shape_text(t->ndim, t->dims, a, sizeof a);
        if ((!t || strcmp(a, b)) && diffs++ < LISTED)
            fprintf(m, "%s%s/%s %s -> %s", diffs > 1 ? "; " : "", group, want[i].name, a, b);
    }
    for (int i = 0; whole && i < ck->n[g]; i++) {
        int found = 0;
        for (int j = 0; !found && j < n; j++)
            found = !strcmp(ck->t[g][i].name, want[j].name);
        char a[64];
        ckpt_shape_text(ck->t[g][i].ndim, ck->t[g][i].dims, a, sizeof a);
        if (!found && diffs++ < LISTED)
            fprintf(m, "%s%s/%s %s -> missing", diffs > 1 ? "; " : "", group, ck->t[g][i].name, a);
    }
    if (diffs > LISTED)
        fprintf(m, "; and %d more", diffs - LISTED);
    fclose(m);
    if (diffs) {
        erase_status_t st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: %s differs from the checkpoint's in %d tensor%s "
                                        "(checkpoint -> this run): %s", ck->path, what, diffs,
                                        diffs == 1 ? "" : "s", msg);
        free(msg);
        return st;
    }
    free(msg);
    return ERASE_OK;
}

erase_status_t erase_ckpt_check_tensors(const erase_ckpt_t *ck, erase_ckpt_group_t g,
                                        const erase_ckpt_tensor_t *want, int n, const char *what)
{
    return check_tensors(ck, g, want, n, what, 1);
}

/* erase_ckpt_load (whole: the checkpoint holds no other tensor of g) and
 * erase_ckpt_load_part. */
static erase_status_t load_tensors(const erase_ckpt_t *ck, erase_ckpt_group_t g, erase_ckpt_tensor_t *want,
                                   int n, const char *what, int whole)
{
    ERASE_CHECK(check_tensors(ck, g, want, n, what, whole));
    const char *group = g == ERASE_CKPT_PARAMS ? "params" : "optim";
    for (int i = 0; i < n; i++) { /* the rows asked for: all, or a sharded tensor's */
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, g, want[i].name);
        int64_t row0 = want[i].sharding ? want[i].row0 : 0, rows = want[i].sharding ? want[i].held : t->dims[0];
        if (row0 < 0 || rows < 0 || row0 > t->dims[0] - rows)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: %s/%s: rows [%" PRId64 ", %" PRId64 " + %" PRId64 ") asked "
                               "of %" PRId64, ck->path, group, want[i].name, row0, row0, rows, t->dims[0]);
    }
    hid_t file = -1; /* opened for the first tensor not loaded */
    erase_status_t st = ERASE_OK;
    for (int i = 0; st == ERASE_OK && i < n; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_find(ck, g, want[i].name);
        int64_t row0 = want[i].sharding ? want[i].row0 : 0, rows = want[i].sharding ? want[i].held : t->dims[0];
        int64_t cols = ckpt_row_elems(t);
        if (t->data) {
            memcpy(want[i].data, t->data + row0 * cols, sizeof(float) * (size_t)(rows * cols));
            continue;
        }
        if (file < 0) {
            erase_h5_enter();
            if ((file = H5Fopen(ck->path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
                char detail[256];
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: cannot open as HDF5 to read %s/%s: %s", ck->path, group,
                                 t->name, erase_h5_detail(detail, sizeof detail));
                erase_h5_leave();
                break;
            }
        }
        st = ckpt_read_rows(ck, file, g, (int)(t - ck->t[g]), row0, rows, want[i].data);
    }
    if (file >= 0) {
        H5Fclose(file);
        erase_h5_leave();
    }
    return st;
}

erase_status_t erase_ckpt_load(const erase_ckpt_t *ck, erase_ckpt_group_t g, erase_ckpt_tensor_t *want,
                               int n, const char *what)
{
    return load_tensors(ck, g, want, n, what, 1);
}

erase_status_t erase_ckpt_load_part(const erase_ckpt_t *ck, erase_ckpt_group_t g, erase_ckpt_tensor_t *want,
                                    int n, const char *what)
{
    return load_tensors(ck, g, want, n, what, 0);
}

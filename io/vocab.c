#include "io/vocab.h"

#include "io/h5_rows.h"
#include "io/h5_util.h"
#include "io/tokenizer_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char description[] = "erase vocabulary (format erase-vocab-1): per categorical feature C1..C26, "
                                  "the ids counted at least "
                                  "`threshold` times over `source_files`. /C<f>/ids uint32 [V]: the frequent "
                                  "ids, ascending; /C<f>/rows "
                                  "uint32 [V]: the embedding row of each (descending count, ties by "
                                  "ascending id); /C<f>/counts uint64 [V]. "
                                  "Every other id maps to 0xFFFFFFFF, the table's last row (the rare row): a "
                                  "table needs V + 1 rows.";

int64_t erase_vocab_table_rows(int64_t frequent)
{
    return frequent + 1 < 2 ? 2 : frequent + 1;
}

/* ---- numbering --------------------------------------------------------------
 */

typedef struct {
    uint64_t count;
    uint32_t id;
    uint32_t index; /* in the ascending arrays */
} ranked_t;

static int by_count_then_id(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

erase_status_t erase_vocab_number(int64_t n, const uint32_t *ids, const uint64_t *counts, uint32_t *rows)
{
    if (n == 0)
        return ERASE_OK;
    ranked_t *r = malloc((size_t)n * sizeof *r);
    if (!r)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory numbering %" PRId64 " frequent ids", n);
    for (int64_t k = 0; k < n; k++)
        r[k] = (ranked_t){counts[k], ids[k], (uint32_t)k};
    qsort(r, (size_t)n, sizeof *r, by_count_then_id);
    for (int64_t k = 0; k < n; k++)
        rows[r[k].index] = (uint32_t)k;
    free(r);
    return ERASE_OK;
}

static uint64_t content_digest(const erase_vocab_t *v)
{
    uint64_t h = erase_fnv1a64_more(ERASE_FNV_START, &v->threshold, sizeof v->threshold);
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        size_t n = (size_t)v->frequent[f];
        h = erase_fnv1a64_more(h, &v->frequent[f], sizeof v->frequent[f]);
        if (n) {
            h = erase_fnv1a64_more(h, v->ids[f], n * sizeof(uint32_t));
            h = erase_fnv1a64_more(h, v->rows[f], n * sizeof(uint32_t));
            h = erase_fnv1a64_more(h, v->counts[f], n * sizeof(uint64_t));
        }
    }
    return h;
}

void erase_vocab_set_digest(erase_vocab_t *v)
{
    snprintf(v->digest, sizeof v->digest, "%016" PRIx64, content_digest(v));
}

void erase_vocab_free(erase_vocab_t *v)
{
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        free(v->ids[f]);
        free(v->rows[f]);
        free(v->counts[f]);
        free(v->index[f]);
    }
    free(v->sources);
    memset(v, 0, sizeof *v);
}

/* ---- the file
 * ---------------------------------------------------------------- */

/* Everything but the format attribute; the lock is held. The failing
 * object's name into `what`, or 0. */
static int write_content(hid_t file, const erase_vocab_t *v, char *what, size_t size)
{
    int64_t rows[ERASE_VOCAB_FIELDS];
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++)
        rows[f] = erase_vocab_table_rows(v->frequent[f]);
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", f + 1);
        snprintf(what, size, "/%s", name);
        hid_t g = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0)
            return -1;
        size_t n = (size_t)v->frequent[f];
        int rc = 0;
        if ((rc = erase_h5_write_vector(g, "ids", H5T_STD_U32LE, H5T_NATIVE_UINT32, v->ids[f], n)) != 0)
            snprintf(what, size, "/%s/ids", name);
        else if ((rc = erase_h5_write_vector(g, "rows", H5T_STD_U32LE, H5T_NATIVE_UINT32, v->rows[f], n)) != 0)
            snprintf(what, size, "/%s/rows", name);
        else if ((rc = erase_h5_write_vector(g, "counts", H5T_STD_U64LE, H5T_NATIVE_UINT64, v->counts[f], n)) != 0)
            snprintf(what, size, "/%s/counts", name);
        H5Gclose(g);
        if (rc)
            return -1;
    }
    snprintf(what, size, "the attributes");
    if (erase_h5_attr_write_int64(file, "threshold", v->threshold) ||
        erase_h5_attr_write_int64(file, "features", ERASE_VOCAB_FIELDS) ||
        erase_h5_attr_write_string(file, "digest", v->digest) ||
        erase_h5_attr_write_string(file, "source_files", v->sources ? v->sources : "") ||
        erase_h5_attr_write_array(file, "frequent", H5T_NATIVE_INT64, v->frequent, ERASE_VOCAB_FIELDS) ||
        erase_h5_attr_write_array(file, "table_rows", H5T_NATIVE_INT64, rows, ERASE_VOCAB_FIELDS) ||
        erase_h5_attr_write_array(file, "tokens", H5T_NATIVE_INT64, v->tokens, ERASE_VOCAB_FIELDS) ||
        erase_h5_attr_write_array(file, "distinct", H5T_NATIVE_INT64, v->distinct, ERASE_VOCAB_FIELDS) ||
        erase_h5_attr_write_string(file, "description", description))
        return -1;
    snprintf(what, size, "attribute format");
    return erase_h5_attr_write_string(file, "format", ERASE_VOCAB_FORMAT);
}

erase_status_t erase_vocab_write(const erase_vocab_t *v, const char *path)
{
    char temp[4200], what[64] = "", detail[256];
    if ((size_t)snprintf(temp, sizeof temp, "%s.tmp", path) >= sizeof temp)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: path longer than %zu bytes", path, sizeof temp - 5);
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    hid_t file = H5Fcreate(temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) {
        erase_h5_detail(detail, sizeof detail);
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, detail);
    } else {
        int rc = write_content(file, v, what, sizeof what);
        if (rc == 0 && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) {
            rc = -1;
            snprintf(what, sizeof what, "the file (flush)");
        }
        if (rc)
            erase_h5_detail(detail, sizeof detail);
        if (H5Fclose(file) < 0 && rc == 0) {
            rc = -1;
            snprintf(what, sizeof what, "the file (close)");
            erase_h5_detail(detail, sizeof detail);
        }
        if (rc)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write %s: %s", temp, what, detail);
    }
    erase_h5_leave();
    if (st == ERASE_OK) {
        int renamed = 0;
        st = erase_h5_rows_publish(temp, path, &renamed);
    }
    if (st != ERASE_OK)
        unlink(temp);
    return st;
}

/* A 1-D int64 root attribute of exactly n elements; the lock is held. 0 or -1.
 */
static int read_int64_array(hid_t loc, const char *name, int64_t *values, size_t n)
{
    if (H5Aexists(loc, name) <= 0)
        return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    hid_t s = H5Aget_space(a), t = H5Aget_type(a);
    hsize_t dims[1] = {0};
    int ok = s >= 0 && t >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_ndims(s) == 1 &&
             H5Sget_simple_extent_dims(s, dims, NULL) == 1 && dims[0] == n && H5Aread(a, H5T_NATIVE_INT64, values) >= 0;
    if (t >= 0)
        H5Tclose(t);
    if (s >= 0)
        H5Sclose(s);
    H5Aclose(a);
    return ok ? 0 : -1;
}

/* Dataset `name` of `group`: 1-D of n elements of an integer type of
 * `bytes` bytes, unsigned, read as mem_type into `out`; the lock is held. */
static erase_status_t read_array(const char *path, hid_t file, const char *name, size_t bytes, hid_t mem_type,
                                 int64_t n, int f, void **out)
{
    *out = malloc(n ? (size_t)n * bytes : 1);
    if (!*out)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for %s", path, name);
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t s = d >= 0 ? H5Dget_space(d) : -1, t = d >= 0 ? H5Dget_type(d) : -1;
    hsize_t dims[1] = {0};
    int ok = d >= 0 && s >= 0 && t >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_NONE &&
             H5Tget_size(t) == bytes && H5Sget_simple_extent_ndims(s) == 1 &&
             H5Sget_simple_extent_dims(s, dims, NULL) == 1 && dims[0] == (hsize_t)n &&
             (n == 0 || H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) >= 0);
    if (t >= 0)
        H5Tclose(t);
    if (s >= 0)
        H5Sclose(s);
    if (d >= 0)
        H5Dclose(d);
    if (!ok) {
        char detail[16];
        erase_h5_detail(detail, sizeof detail);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset %s: expected uint%d [V] with V = frequent[%d] = %" PRId64,
                           path, name, (int)bytes * 8, f, n);
    }
    return ERASE_OK;
}

/* what a failed check of a written file means */
#define DAMAGED " (the vocabulary file is damaged or was changed after erase-convert vocab wrote it)"

/* Validate the arrays of feature f: ids ascending, rows a permutation
 * numbered by count then id, counts >= threshold. */
static erase_status_t check_feature(const char *path, const erase_vocab_t *v, int f)
{
    int64_t n = v->frequent[f];
    for (int64_t k = 1; k < n; k++)
        if (v->ids[f][k] <= v->ids[f][k - 1])
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: dataset /C%d/ids: not ascending at index %" PRId64 "%s", path,
                               f + 1, k, DAMAGED);
    for (int64_t k = 0; k < n; k++)
        if (v->counts[f][k] < (uint64_t)v->threshold)
            return ERASE_ERROR(ERASE_ERR_FORMAT,
                               "%s: dataset /C%d/counts: index %" PRId64 " is %" PRIu64
                               ", below the threshold %" PRId64 "%s",
                               path, f + 1, k, v->counts[f][k], v->threshold, DAMAGED);
    uint32_t *want = malloc(n ? (size_t)n * sizeof *want : 1);
    if (!want)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    erase_status_t st = erase_vocab_number(n, v->ids[f], v->counts[f], want);
    if (st == ERASE_OK && n && memcmp(want, v->rows[f], (size_t)n * sizeof *want) != 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT,
                         "%s: dataset /C%d/rows: expected rows 0 .. %" PRId64
                         " by descending count, ties by ascending id%s",
                         path, f + 1, n - 1, DAMAGED);
    free(want);
    return st;
}

/* The hash lookup table of feature f (erase_vocab_map). 0 or -1. */
static int build_index(erase_vocab_t *v, int f)
{
    size_t cap = 16;
    while (cap < (size_t)v->frequent[f] * 2)
        cap *= 2;
    if (!(v->index[f] = calloc(cap, sizeof(uint64_t))))
        return -1;
    v->index_mask[f] = cap - 1;
    for (int64_t k = 0; k < v->frequent[f]; k++) {
        uint64_t i = erase_mix64(v->ids[f][k]) & v->index_mask[f];
        while (v->index[f][i])
            i = (i + 1) & v->index_mask[f];
        v->index[f][i] = (uint64_t)v->ids[f][k] << 32 | ((uint64_t)v->rows[f][k] + 1);
    }
    return 0;
}

/* The attributes and arrays; the lock is held. */
static erase_status_t read_content(const char *path, hid_t file, erase_vocab_t *v)
{
    char format[64] = "";
    int rc = erase_h5_attr_read_string(file, "format", format, sizeof format);
    if (rc == 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: not a vocabulary: no attribute 'format', expected \"%s\"", path,
                           ERASE_VOCAB_FORMAT);
    if (rc != 0 || strcmp(format, ERASE_VOCAB_FORMAT) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute format: expected \"%s\", got \"%s\"", path,
                           ERASE_VOCAB_FORMAT, format);
    int64_t features = 0;
    if (erase_h5_attr_read_int64(file, "features", &features) != 0 || features != ERASE_VOCAB_FIELDS)
        return ERASE_ERROR(ERASE_ERR_FORMAT,
                           "%s: attribute features: expected %d categorical "
                           "features, got %" PRId64,
                           path, ERASE_VOCAB_FIELDS, features);
    if (erase_h5_attr_read_int64(file, "threshold", &v->threshold) != 0 || v->threshold < 1)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute threshold: expected an integer >= 1", path);
    static const char *const arrays[] = {"frequent", "tokens", "distinct"};
    int64_t *dst[] = {v->frequent, v->tokens, v->distinct};
    for (int k = 0; k < 3; k++)
        if (read_int64_array(file, arrays[k], dst[k], ERASE_VOCAB_FIELDS) != 0)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute %s: expected %d integers", path, arrays[k],
                               ERASE_VOCAB_FIELDS);
    char digest[64] = "";
    if (erase_h5_attr_read_string(file, "digest", digest, sizeof digest) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute digest: missing", path);
    int got = 0;
    v->sources = erase_h5_attr_read_string_alloc(file, "source_files", &got);
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        int64_t n = v->frequent[f];
        if (n < 0 || n > (int64_t)UINT32_MAX)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute frequent: feature C%d has %" PRId64 " ids", path, f + 1,
                               n);
        char name[32];
        snprintf(name, sizeof name, "/C%d/ids", f + 1);
        ERASE_CHECK(read_array(path, file, name, 4, H5T_NATIVE_UINT32, n, f, (void **)&v->ids[f]));
        snprintf(name, sizeof name, "/C%d/rows", f + 1);
        ERASE_CHECK(read_array(path, file, name, 4, H5T_NATIVE_UINT32, n, f, (void **)&v->rows[f]));
        snprintf(name, sizeof name, "/C%d/counts", f + 1);
        ERASE_CHECK(read_array(path, file, name, 8, H5T_NATIVE_UINT64, n, f, (void **)&v->counts[f]));
        ERASE_CHECK(check_feature(path, v, f));
    }
    erase_vocab_set_digest(v);
    if (strcmp(digest, v->digest) != 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute digest: expected %s (the content's), got %s", path,
                           v->digest, digest);
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++)
        if (build_index(v, f) != 0)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the lookup table of C%d (%" PRId64 " ids)", path,
                               f + 1, v->frequent[f]);
    return ERASE_OK;
}

erase_status_t erase_vocab_read(const char *path, erase_vocab_t *v)
{
    memset(v, 0, sizeof *v);
    if (access(path, R_OK) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    erase_status_t st;
    erase_h5_enter();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        char detail[16];
        erase_h5_detail(detail, sizeof detail);
        st = ERASE_ERROR(ERASE_ERR_FORMAT,
                         "%s: not an HDF5 file or damaged (truncated?): expected "
                         "an %s vocabulary",
                         path, ERASE_VOCAB_FORMAT);
    } else {
        st = read_content(path, file, v);
        H5Fclose(file);
    }
    erase_h5_leave();
    if (st != ERASE_OK)
        erase_vocab_free(v);
    return st;
}

/* ---- mapping
 * ----------------------------------------------------------------- */

uint32_t erase_vocab_map(const erase_vocab_t *v, int f, uint32_t id)
{
    const uint64_t *slot = v->index[f];
    for (uint64_t i = erase_mix64(id) & v->index_mask[f];; i = (i + 1) & v->index_mask[f]) {
        if (!slot[i])
            return ERASE_VOCAB_RARE;
        if ((uint32_t)(slot[i] >> 32) == id)
            return (uint32_t)(slot[i] & 0xFFFFFFFFu) - 1;
    }
}

int64_t erase_vocab_map_ids(const erase_vocab_t *v, const uint32_t *lengths, uint32_t *ids)
{
    int64_t frequent = 0;
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++)
        for (uint32_t k = 0; k < lengths[f]; k++, ids++) {
            *ids = erase_vocab_map(v, f, *ids);
            frequent += *ids != ERASE_VOCAB_RARE;
        }
    return frequent;
}

double erase_vocab_coverage(const erase_vocab_t *v)
{
    uint64_t covered = 0, tokens = 0;
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        for (int64_t k = 0; k < v->frequent[f]; k++)
            covered += v->counts[f][k];
        tokens += (uint64_t)v->tokens[f];
    }
    return tokens ? (double)covered / (double)tokens : 0.0;
}

void erase_vocab_print(const erase_vocab_t *v, const char *path, FILE *out)
{
    fprintf(out, "vocabulary %s: format %s, digest %s, threshold %" PRId64 "\n", path, ERASE_VOCAB_FORMAT, v->digest,
            v->threshold);
    if (v->sources && v->sources[0]) {
        fprintf(out, "counted from:\n");
        for (const char *p = v->sources; *p;) {
            const char *e = strchr(p, '\n');
            int n = e ? (int)(e - p) : (int)strlen(p);
            fprintf(out, "  %.*s\n", n, p);
            p += n + (e != NULL);
        }
    }
    fprintf(out, "%-8s %14s %12s %12s %12s %9s\n", "feature", "tokens", "distinct", "frequent", "table rows",
            "coverage");
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++) {
        uint64_t covered = 0;
        for (int64_t k = 0; k < v->frequent[f]; k++)
            covered += v->counts[f][k];
        char name[8];
        snprintf(name, sizeof name, "C%d", f + 1);
        fprintf(out, "%-8s %14" PRId64 " %12" PRId64 " %12" PRId64 " %12" PRId64 " %8.2f%%\n", name, v->tokens[f],
                v->distinct[f], v->frequent[f], erase_vocab_table_rows(v->frequent[f]),
                v->tokens[f] ? 100.0 * (double)covered / (double)v->tokens[f] : 0.0);
    }
}

/* ---- shards' tags
 * ------------------------------------------------------------ */

erase_status_t erase_vocab_tag_read(const char *path, erase_vocab_tag_t *tag)
{
    memset(tag, 0, sizeof *tag);
    erase_ctr_shard_t *sh;
    ERASE_CHECK(erase_ctr_shard_open(path, &sh));
    erase_ctr_shard_attr_text(sh, "vocab_digest", tag->digest, sizeof tag->digest);
    erase_ctr_shard_close(sh);
    if (!tag->digest[0])
        return ERASE_OK;
    tag->present = 1;
    erase_status_t st = ERASE_OK;
    erase_h5_enter();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int ok = file >= 0 && erase_h5_attr_read_int64(file, "vocab_threshold", &tag->threshold) == 0 &&
             tag->threshold >= 1 &&
             read_int64_array(file, "vocab_table_rows", tag->table_rows, ERASE_VOCAB_FIELDS) == 0;
    for (int f = 0; ok && f < ERASE_VOCAB_FIELDS; f++)
        ok = tag->table_rows[f] >= 2 && tag->table_rows[f] <= (int64_t)UINT32_MAX;
    if (file >= 0)
        H5Fclose(file);
    if (!ok) {
        char detail[16];
        erase_h5_detail(detail, sizeof detail);
        st = ERASE_ERROR(ERASE_ERR_FORMAT,
                         "%s: attributes vocab_threshold, vocab_table_rows: "
                         "expected an integer >= 1 and %d "
                         "integers >= 2 (the shard names vocabulary %s)",
                         path, ERASE_VOCAB_FIELDS, tag->digest);
    }
    erase_h5_leave();
    return st;
}

/* "vocabulary D (threshold T)" or "no vocabulary". */
static const char *tag_text(const erase_vocab_tag_t *t, char *text, size_t size)
{
    if (t->present)
        snprintf(text, size, "vocabulary %s (threshold %" PRId64 ")", t->digest, t->threshold);
    else
        snprintf(text, size, "no vocabulary");
    return text;
}

erase_status_t erase_vocab_tag_same(const char *path, const erase_vocab_tag_t *t, const char *first,
                                    const erase_vocab_tag_t *f)
{
    if (t->present == f->present && (!t->present || strcmp(t->digest, f->digest) == 0))
        return ERASE_OK;
    char a[96], b[96];
    return ERASE_ERROR(ERASE_ERR_FORMAT,
                       "%s: converted with %s, the first shard %s with %s: every shard of a dataset must use the "
                       "same vocabulary",
                       path, tag_text(t, a, sizeof a), first, tag_text(f, b, sizeof b));
}

erase_status_t erase_vocab_tag_dataset(const char *const *paths, int n, erase_vocab_tag_t *tag)
{
    memset(tag, 0, sizeof *tag);
    for (int i = 0; i < n; i++) {
        erase_vocab_tag_t t;
        ERASE_CHECK(erase_vocab_tag_read(paths[i], &t));
        if (i == 0)
            *tag = t;
        else
            ERASE_CHECK(erase_vocab_tag_same(paths[i], &t, paths[0], tag));
    }
    return ERASE_OK;
}

/*
 * safetensors files: the writer and the validating reader (safetensors.h;
 * the format: https://github.com/huggingface/safetensors, README "Format").
 * The JSON header is parsed by a small strict parser of RFC 8259 made for
 * this header only: an object of objects and of one string map.
 */
#include "io/safetensors.h"

#include "lib/core/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    size_t size;
} DTYPES[ERASE_ST_DTYPES] = {
    [ERASE_ST_BOOL] = { "BOOL", 1 },       [ERASE_ST_U8] = { "U8", 1 },   [ERASE_ST_I8] = { "I8", 1 },
    [ERASE_ST_F8_E5M2] = { "F8_E5M2", 1 }, [ERASE_ST_F8_E4M3] = { "F8_E4M3", 1 },
    [ERASE_ST_I16] = { "I16", 2 },         [ERASE_ST_U16] = { "U16", 2 }, [ERASE_ST_F16] = { "F16", 2 },
    [ERASE_ST_BF16] = { "BF16", 2 },       [ERASE_ST_I32] = { "I32", 4 }, [ERASE_ST_U32] = { "U32", 4 },
    [ERASE_ST_F32] = { "F32", 4 },         [ERASE_ST_F64] = { "F64", 8 }, [ERASE_ST_I64] = { "I64", 8 },
    [ERASE_ST_U64] = { "U64", 8 },
};

const char *erase_st_dtype_name(erase_st_dtype_t t) { return t < ERASE_ST_DTYPES ? DTYPES[t].name : "?"; }
size_t erase_st_dtype_size(erase_st_dtype_t t) { return t < ERASE_ST_DTYPES ? DTYPES[t].size : 0; }

int64_t erase_st_numel(const erase_st_tensor_t *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->dims[d];
    return n;
}

/* The bytes of a shape of dtype `dtype` into *bytes: 0, or -1 when a
 * dimension is negative or the size does not fit 64 bits. */
static int shape_bytes(const erase_st_tensor_t *t, uint64_t *bytes)
{
    uint64_t b = erase_st_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d] < 0)
            return -1;
        if (t->dims[d] && b > UINT64_MAX / (uint64_t)t->dims[d])
            return -1;
        b *= (uint64_t)t->dims[d];
    }
    if (b > (uint64_t)INT64_MAX)
        return -1;
    *bytes = b;
    return 0;
}

/* "[2, 3]" */
static void shape_text(const erase_st_tensor_t *t, char *out, size_t size)
{
    size_t at = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < t->ndim && at < size; d++)
        at += (size_t)snprintf(out + at, size - at, "%s%" PRId64, d ? ", " : "", t->dims[d]);
    if (at < size)
        snprintf(out + at, size - at, "]");
}

/* ---- writing ----------------------------------------------------------------- */

struct erase_st_writer {
    char path[4096], temp[4096];
    int fd;
    erase_st_tensor_t *t;
    int n, at;           /* tensors; the one being written */
    uint64_t done;       /* bytes of tensor `at` written */
};

/* s as a JSON string into m. */
static void json_put_string(FILE *m, const char *s)
{
    fputc('"', m);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(m, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", m);
        else if (c == '\t')
            fputs("\\t", m);
        else if (c < 0x20)
            fprintf(m, "\\u%04x", c);
        else
            fputc(c, m);
    }
    fputc('"', m);
}

/* The header text of tensors[n] and meta[nmeta], padded with spaces to a
 * multiple of 8 bytes, into *text (malloc) and *len. */
static erase_status_t header_text(const char *path, const erase_st_tensor_t *t, int n, const erase_st_meta_t *meta,
                                  int nmeta, char **text, size_t *len)
{
    FILE *m = open_memstream(text, len);
    if (!m)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    fputc('{', m);
    if (nmeta > 0) {
        fputs("\"__metadata__\":{", m);
        for (int i = 0; i < nmeta; i++) {
            if (i)
                fputc(',', m);
            json_put_string(m, meta[i].key);
            fputc(':', m);
            json_put_string(m, meta[i].value);
        }
        fputc('}', m);
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes = 0;
        shape_bytes(&t[i], &bytes); /* checked by the caller */
        fputs(nmeta > 0 || i ? "," : "", m);
        json_put_string(m, t[i].name);
        fprintf(m, ":{\"dtype\":\"%s\",\"shape\":[", erase_st_dtype_name(t[i].dtype));
        for (int d = 0; d < t[i].ndim; d++)
            fprintf(m, "%s%" PRId64, d ? "," : "", t[i].dims[d]);
        fprintf(m, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offset, offset + bytes);
        offset += bytes;
    }
    fputc('}', m);
    if (fflush(m) != 0) {
        fclose(m);
        free(*text);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    for (size_t pad = (8 - *len % 8) % 8; pad > 0; pad--) /* *len is up to date after the fflush */
        fputc(' ', m);
    if (fclose(m) != 0) {
        free(*text);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    return ERASE_OK;
}

/* The names, shapes and sizes of tensors[n] and the keys of meta[nmeta]
 * (above); *total: the data's bytes. */
static erase_status_t check_layout(const char *path, const erase_st_tensor_t *t, int n, const erase_st_meta_t *meta,
                                   int nmeta)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes;
        if (!t[i].name[0] || !strcmp(t[i].name, "__metadata__"))
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: tensor %d: the name \"%s\" is not allowed", path, i,
                               t[i].name);
        if (t[i].ndim < 0 || t[i].ndim > ERASE_ST_NDIM_MAX || t[i].dtype >= ERASE_ST_DTYPES ||
            shape_bytes(&t[i], &bytes) || total > (uint64_t)INT64_MAX - bytes)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: tensor %s: bad dtype or shape, or more than 2^63 bytes",
                               path, t[i].name);
        total += bytes;
        for (int j = 0; j < i; j++)
            if (!strcmp(t[i].name, t[j].name))
                return ERASE_ERROR(ERASE_ERR_INVALID, "%s: tensor %s: named twice", path, t[i].name);
    }
    for (int i = 0; i < nmeta; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(meta[i].key, meta[j].key))
                return ERASE_ERROR(ERASE_ERR_INVALID, "%s: metadata key %s: given twice", path, meta[i].key);
    return ERASE_OK;
}

/* Write all of buf[n] to fd. 0, or -1 with errno. */
static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

erase_status_t erase_st_writer_open(const char *path, const erase_st_tensor_t *tensors, int n,
                                    const erase_st_meta_t *meta, int nmeta, erase_st_writer_t **out)
{
    *out = NULL;
    ERASE_CHECK(check_layout(path, tensors, n, meta, nmeta));
    erase_st_writer_t *w = calloc(1, sizeof *w);
    if (!w || (n > 0 && !(w->t = malloc(sizeof *w->t * (size_t)n)))) {
        free(w);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    if (n > 0)
        memcpy(w->t, tensors, sizeof *w->t * (size_t)n);
    w->n = n;
    w->fd = -1;
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(w->path, sizeof w->path, "%s", path) >= (int)sizeof w->path ||
        snprintf(w->temp, sizeof w->temp, "%.*s.%s.tmp", dir, path, path + dir) >= (int)sizeof w->temp) {
        erase_st_writer_abort(w);
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the name is too long", path);
    }
    char *text = NULL;
    size_t len = 0;
    erase_status_t st = header_text(path, tensors, n, meta, nmeta, &text, &len);
    if (st != ERASE_OK) {
        erase_st_writer_abort(w);
        return st;
    }
    w->fd = open(w->temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        int e = errno;
        free(text);
        erase_st_writer_abort(w);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    unsigned char size[8];
    for (int b = 0; b < 8; b++)
        size[b] = (unsigned char)((uint64_t)len >> (8 * b));
    if (write_all(w->fd, size, 8) || write_all(w->fd, text, len)) {
        int e = errno;
        free(text);
        erase_st_writer_abort(w);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    free(text);
    *out = w;
    return ERASE_OK;
}

/* Pass over the tensors that are complete (or empty) after `at`. */
static void skip_complete(erase_st_writer_t *w)
{
    while (w->at < w->n) {
        uint64_t bytes;
        shape_bytes(&w->t[w->at], &bytes);
        if (w->done < bytes)
            return;
        w->at++;
        w->done = 0;
    }
}

erase_status_t erase_st_writer_put(erase_st_writer_t *w, const void *data, size_t bytes)
{
    const char *p = data;
    while (bytes > 0) {
        skip_complete(w);
        if (w->at >= w->n)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: %zu bytes more than the header announced", w->path, bytes);
        uint64_t need;
        shape_bytes(&w->t[w->at], &need);
        size_t k = need - w->done < bytes ? (size_t)(need - w->done) : bytes;
        if (write_all(w->fd, p, k))
            return ERASE_ERROR(ERASE_ERR_IO, "%s: tensor %s: cannot write: %s", w->path, w->t[w->at].name,
                               strerror(errno));
        w->done += k;
        p += k;
        bytes -= k;
    }
    return ERASE_OK;
}

erase_status_t erase_st_writer_commit(erase_st_writer_t *w)
{
    skip_complete(w);
    if (w->at < w->n) {
        uint64_t need;
        shape_bytes(&w->t[w->at], &need);
        erase_status_t st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: tensor %s: %" PRIu64 " of its %" PRIu64 " bytes "
                                        "written", w->path, w->t[w->at].name, w->done, need);
        erase_st_writer_abort(w);
        return st;
    }
    /* the error is made before the abort, which frees w */
    if (fsync(w->fd) != 0 || close(w->fd) != 0) {
        int e = errno;
        w->fd = -1;
        erase_status_t st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write: %s", w->path, strerror(e));
        erase_st_writer_abort(w);
        return st;
    }
    w->fd = -1;
    if (rename(w->temp, w->path) != 0) {
        int e = errno;
        erase_status_t st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot rename %s to it: %s", w->path, w->temp,
                                        strerror(e));
        erase_st_writer_abort(w);
        return st;
    }
    erase_fsync_parent(w->path);
    free(w->t);
    free(w);
    return ERASE_OK;
}

void erase_st_writer_abort(erase_st_writer_t *w)
{
    if (!w)
        return;
    if (w->fd >= 0) {
        close(w->fd);
        unlink(w->temp);
    } else if (w->temp[0]) {
        unlink(w->temp);
    }
    free(w->t);
    free(w);
}

/* ---- reading: the JSON header ------------------------------------------------------- */

struct erase_st_file {
    char path[4096];
    int fd;
    uint64_t data_start; /* 8 + header size */
    erase_st_tensor_t *t;
    int n, cap;
    char **keys, **values;
    int nmeta;
};

typedef struct {
    const char *path, *s;
    size_t n, at;
} json_t;

static erase_status_t json_error(const json_t *j, const char *expected)
{
    if (j->at >= j->n)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: ends at byte %zu, expected %s", j->path, j->at, expected);
    return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: byte %zu: expected %s", j->path, j->at, expected);
}

static void json_space(json_t *j)
{
    while (j->at < j->n && (j->s[j->at] == ' ' || j->s[j->at] == '\t' || j->s[j->at] == '\n' || j->s[j->at] == '\r'))
        j->at++;
}

/* The character c (after white space), consumed. */
static erase_status_t json_expect(json_t *j, char c, const char *what)
{
    json_space(j);
    if (j->at >= j->n || j->s[j->at] != c)
        return json_error(j, what);
    j->at++;
    return ERASE_OK;
}

/* Consume c when it comes next (after white space): 1, else 0. */
static int json_accept(json_t *j, char c)
{
    json_space(j);
    if (j->at < j->n && j->s[j->at] == c) {
        j->at++;
        return 1;
    }
    return 0;
}

static int hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

static void put_utf8(FILE *m, unsigned cp)
{
    if (cp < 0x80) {
        fputc((int)cp, m);
    } else if (cp < 0x800) {
        fputc((int)(0xC0 | (cp >> 6)), m);
        fputc((int)(0x80 | (cp & 0x3F)), m);
    } else if (cp < 0x10000) {
        fputc((int)(0xE0 | (cp >> 12)), m);
        fputc((int)(0x80 | ((cp >> 6) & 0x3F)), m);
        fputc((int)(0x80 | (cp & 0x3F)), m);
    } else {
        fputc((int)(0xF0 | (cp >> 18)), m);
        fputc((int)(0x80 | ((cp >> 12) & 0x3F)), m);
        fputc((int)(0x80 | ((cp >> 6) & 0x3F)), m);
        fputc((int)(0x80 | (cp & 0x3F)), m);
    }
}

/* A JSON string (after white space) into *out (malloc, NUL-terminated; a
 * string holding \u0000 is refused). */
static erase_status_t json_string(json_t *j, char **out)
{
    *out = NULL;
    json_space(j);
    if (j->at >= j->n || j->s[j->at] != '"')
        return json_error(j, "a string");
    j->at++;
    size_t len = 0;
    FILE *m = open_memstream(out, &len);
    if (!m)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", j->path);
    erase_status_t st = ERASE_OK;
    for (;;) {
        if (j->at >= j->n) {
            st = json_error(j, "'\"' (the end of a string)");
            break;
        }
        unsigned char c = (unsigned char)j->s[j->at];
        if (c == '"') {
            j->at++;
            break;
        }
        if (c < 0x20) {
            st = json_error(j, "no control character in a string");
            break;
        }
        if (c != '\\') {
            fputc(c, m);
            j->at++;
            continue;
        }
        if (j->at + 1 >= j->n) {
            j->at++;
            st = json_error(j, "an escape");
            break;
        }
        char e = j->s[j->at + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            fputc(to[simple - "\"\\/bfnrt"], m);
            j->at += 2;
            continue;
        }
        unsigned cp, lo;
        if (e != 'u' || j->at + 6 > j->n || hex4(j->s + j->at + 2, &cp) || cp == 0) {
            j->at++;
            st = json_error(j, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and 4 hex digits, not 0000)");
            break;
        }
        j->at += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            st = json_error(j, "a high surrogate before a low one");
            break;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (j->at + 6 > j->n || j->s[j->at] != '\\' || j->s[j->at + 1] != 'u' || hex4(j->s + j->at + 2, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF) {
                st = json_error(j, "a low surrogate (\\uDC00-\\uDFFF)");
                break;
            }
            j->at += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        put_utf8(m, cp);
    }
    if (fclose(m) != 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", j->path);
    if (st != ERASE_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* A non-negative JSON integer (no sign, fraction or exponent; no leading
 * zero) that fits int64 into *v. */
static erase_status_t json_uint(json_t *j, int64_t *v, const char *what)
{
    json_space(j);
    size_t start = j->at;
    int64_t x = 0;
    while (j->at < j->n && j->s[j->at] >= '0' && j->s[j->at] <= '9') {
        int d = j->s[j->at] - '0';
        if (x > (INT64_MAX - d) / 10)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: byte %zu: %s does not fit 63 bits", j->path, start,
                               what);
        x = x * 10 + d;
        j->at++;
    }
    if (j->at == start || (j->at - start > 1 && j->s[start] == '0') ||
        (j->at < j->n && strchr(".eE-+", j->s[j->at]) && j->s[j->at])) {
        j->at = start;
        return json_error(j, what);
    }
    *v = x;
    return ERASE_OK;
}

static erase_status_t add_meta(erase_st_file_t *f, char *key, char *value)
{
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->keys[i], key)) {
            erase_status_t st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: __metadata__ key \"%s\" given twice",
                                            f->path, key);
            free(key);
            free(value);
            return st;
        }
    char **k = realloc(f->keys, sizeof *k * (size_t)(f->nmeta + 1));
    if (k)
        f->keys = k;
    char **v = k ? realloc(f->values, sizeof *v * (size_t)(f->nmeta + 1)) : NULL;
    if (v)
        f->values = v;
    if (!k || !v) {
        free(key);
        free(value);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", f->path);
    }
    f->keys[f->nmeta] = key;
    f->values[f->nmeta++] = value;
    return ERASE_OK;
}

/* "__metadata__": {"key": "value", ...} */
static erase_status_t parse_metadata(json_t *j, erase_st_file_t *f)
{
    if (f->keys)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: __metadata__ given twice", f->path);
    json_space(j);
    if (j->at < j->n && j->s[j->at] != '{')
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: byte %zu: __metadata__: expected an object of strings",
                           f->path, j->at);
    ERASE_CHECK(json_expect(j, '{', "'{'"));
    if (!(f->keys = calloc(1, sizeof *f->keys)) || !(f->values = calloc(1, sizeof *f->values)))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", f->path);
    if (json_accept(j, '}'))
        return ERASE_OK;
    do {
        char *key, *value;
        ERASE_CHECK(json_string(j, &key));
        erase_status_t st = json_expect(j, ':', "':'");
        json_space(j);
        if (st == ERASE_OK && j->at < j->n && j->s[j->at] != '"')
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: __metadata__ \"%s\": the value is not a string",
                             f->path, key);
        if (st == ERASE_OK)
            st = json_string(j, &value);
        if (st != ERASE_OK) {
            free(key);
            return st;
        }
        ERASE_CHECK(add_meta(f, key, value));
    } while (json_accept(j, ','));
    return json_expect(j, '}', "',' or '}'");
}

/* The value of tensor `name`: {"dtype": ..., "shape": [...], "data_offsets": [b, e]} */
static erase_status_t parse_tensor(json_t *j, erase_st_file_t *f, const char *name)
{
    if (strlen(name) >= ERASE_ST_NAME_MAX)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %.40s...: name longer than %d bytes", f->path, name,
                           ERASE_ST_NAME_MAX - 1);
    if (erase_st_find(f, name))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: named twice in the header", f->path, name);
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 16;
        erase_st_tensor_t *t = realloc(f->t, sizeof *t * (size_t)cap);
        if (!t)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", f->path);
        f->t = t;
        f->cap = cap;
    }
    erase_st_tensor_t *t = &f->t[f->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    int64_t offsets[2] = { 0, 0 };
    json_space(j);
    if (j->at < j->n && j->s[j->at] != '{')
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: byte %zu: expected an object {dtype, shape, "
                           "data_offsets}", f->path, name, j->at);
    ERASE_CHECK(json_expect(j, '{', "'{'"));
    if (!json_accept(j, '}'))
        do {
            char *key;
            ERASE_CHECK(json_string(j, &key));
            erase_status_t st = json_expect(j, ':', "':'");
            int *seen = !strcmp(key, "dtype") ? &have_dtype : !strcmp(key, "shape") ? &have_shape
                      : !strcmp(key, "data_offsets") ? &have_offsets : NULL;
            if (st == ERASE_OK && !seen)
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: unknown key \"%s\" (expected dtype, shape, "
                                 "data_offsets)", f->path, name, key);
            else if (st == ERASE_OK && *seen)
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: key \"%s\" given twice", f->path, name, key);
            if (st == ERASE_OK && seen == &have_dtype) {
                char *dtype = NULL;
                st = json_string(j, &dtype);
                int k = 0;
                while (st == ERASE_OK && k < ERASE_ST_DTYPES && strcmp(dtype, DTYPES[k].name))
                    k++;
                if (st == ERASE_OK && k == ERASE_ST_DTYPES)
                    st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: dtype \"%s\" is not a safetensors dtype",
                                     f->path, name, dtype);
                t->dtype = (erase_st_dtype_t)k;
                free(dtype);
            } else if (st == ERASE_OK && seen == &have_shape) {
                st = json_expect(j, '[', "'[' (a shape)");
                if (st == ERASE_OK && !json_accept(j, ']')) {
                    do {
                        if (t->ndim == ERASE_ST_NDIM_MAX) {
                            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: more than %d dimensions", f->path,
                                             name, ERASE_ST_NDIM_MAX);
                            break;
                        }
                        st = json_uint(j, &t->dims[t->ndim++], "a dimension (an integer >= 0)");
                    } while (st == ERASE_OK && json_accept(j, ','));
                    if (st == ERASE_OK)
                        st = json_expect(j, ']', "',' or ']'");
                }
            } else if (st == ERASE_OK) {
                st = json_expect(j, '[', "'[' (data_offsets)");
                if (st == ERASE_OK)
                    st = json_uint(j, &offsets[0], "an offset (an integer >= 0)");
                if (st == ERASE_OK)
                    st = json_expect(j, ',', "',' (data_offsets has 2 numbers)");
                if (st == ERASE_OK)
                    st = json_uint(j, &offsets[1], "an offset (an integer >= 0)");
                if (st == ERASE_OK)
                    st = json_expect(j, ']', "']' (data_offsets has 2 numbers)");
            }
            if (st == ERASE_OK)
                *seen = 1;
            free(key);
            ERASE_CHECK(st);
        } while (json_accept(j, ','));
    ERASE_CHECK(json_expect(j, '}', "',' or '}'"));
    if (!have_dtype || !have_shape || !have_offsets)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: no %s", f->path, name,
                           !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    uint64_t need;
    char shape[160];
    shape_text(t, shape, sizeof shape);
    if (shape_bytes(t, &need))
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: shape %s of %s: more than 2^63 bytes", f->path, name,
                           shape, erase_st_dtype_name(t->dtype));
    if (offsets[1] < offsets[0])
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: data_offsets [%" PRId64 ", %" PRId64 "] end before "
                           "they begin", f->path, name, offsets[0], offsets[1]);
    if ((uint64_t)(offsets[1] - offsets[0]) != need)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: data_offsets [%" PRId64 ", %" PRId64 "] hold %" PRId64
                           " bytes, its shape %s of %s needs %" PRIu64, f->path, name, offsets[0], offsets[1],
                           offsets[1] - offsets[0], shape, erase_st_dtype_name(t->dtype), need);
    t->begin = (uint64_t)offsets[0];
    t->bytes = need;
    f->n++;
    return ERASE_OK;
}

static int by_begin(const void *a, const void *b)
{
    const erase_st_tensor_t *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* The whole header, then the data's layout against data_bytes. */
static erase_status_t parse_header(erase_st_file_t *f, const char *s, size_t n, uint64_t data_bytes)
{
    json_t j = { .path = f->path, .s = s, .n = n, .at = 0 };
    ERASE_CHECK(json_expect(&j, '{', "'{' (the header is a JSON object)"));
    if (!json_accept(&j, '}'))
        do {
            char *key;
            ERASE_CHECK(json_string(&j, &key));
            erase_status_t st = json_expect(&j, ':', "':'");
            if (st == ERASE_OK)
                st = !strcmp(key, "__metadata__") ? parse_metadata(&j, f) : parse_tensor(&j, f, key);
            free(key);
            ERASE_CHECK(st);
        } while (json_accept(&j, ','));
    ERASE_CHECK(json_expect(&j, '}', "',' or '}'"));
    json_space(&j);
    if (j.at < j.n)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header: byte %zu: text after the JSON object", f->path, j.at);
    if (f->n > 1)
        qsort(f->t, (size_t)f->n, sizeof *f->t, by_begin);
    uint64_t end = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->t[i].begin != end)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: data starts at byte %" PRIu64 ", expected %" PRIu64
                               " (where the tensor before it ends)", f->path, f->t[i].name, f->t[i].begin, end);
        end += f->t[i].bytes;
        if (end > data_bytes)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: tensor %s: data [%" PRIu64 ", %" PRIu64 ") past the end of "
                               "the file's %" PRIu64 " bytes of data (truncated)", f->path, f->t[i].name,
                               f->t[i].begin, end, data_bytes);
    }
    if (end != data_bytes)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the data ends at byte %" PRIu64 " but the file has %" PRIu64
                           " bytes of data (bytes no tensor holds)", f->path, end, data_bytes);
    return ERASE_OK;
}

static erase_st_file_t *file_new(const char *path)
{
    erase_st_file_t *f = calloc(1, sizeof *f);
    if (f) {
        f->fd = -1;
        snprintf(f->path, sizeof f->path, "%s", path);
    }
    return f;
}

erase_status_t erase_st_parse_header(const char *path, const char *header, size_t n, uint64_t data_bytes,
                                     erase_st_file_t **out)
{
    *out = NULL;
    erase_st_file_t *f = file_new(path);
    if (!f)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    erase_status_t st = parse_header(f, header, n, data_bytes);
    if (st != ERASE_OK) {
        erase_st_close(f);
        return st;
    }
    *out = f;
    return ERASE_OK;
}

/* Read all of buf[n] at offset `at` of fd: 0; 1 at the end of the file; -1 with errno. */
static int read_at(int fd, void *buf, size_t n, uint64_t at)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = pread(fd, p, n, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            return 1;
        p += k;
        n -= (size_t)k;
        at += (uint64_t)k;
    }
    return 0;
}

erase_status_t erase_st_open(const char *path, erase_st_file_t **out)
{
    *out = NULL;
    ERASE_CHECK(erase_file_check_regular(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    unsigned char size[8];
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    uint64_t file_bytes = (uint64_t)sb.st_size, n = 0;
    if (file_bytes < 8) {
        close(fd);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: %" PRIu64 " bytes: too short for a safetensors file (8 bytes of "
                           "header size, then the header)", path, file_bytes);
    }
    int r = read_at(fd, size, 8, 0);
    if (r != 0) {
        int e = errno;
        close(fd);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot read: %s", path, r > 0 ? "the file ends early" : strerror(e));
    }
    for (int b = 7; b >= 0; b--)
        n = n << 8 | size[b];
    if (n < 2 || n > ERASE_ST_HEADER_MAX || n > file_bytes - 8) {
        close(fd);
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: header size %" PRIu64 " bytes: %s", path, n,
                           n < 2 ? "expected at least 2 ({})" : n > file_bytes - 8 ? "more than the file holds after its "
                           "8-byte size (truncated, or not a safetensors file)" : "more than the 100,000,000 allowed");
    }
    char *header = malloc((size_t)n);
    if (!header) {
        close(fd);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for its %" PRIu64 "-byte header", path, n);
    }
    if ((r = read_at(fd, header, (size_t)n, 8)) != 0) {
        int e = errno;
        free(header);
        close(fd);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot read: %s", path, r > 0 ? "the file ends early" : strerror(e));
    }
    erase_st_file_t *f;
    erase_status_t st = erase_st_parse_header(path, header, (size_t)n, file_bytes - 8 - n, &f);
    free(header);
    if (st != ERASE_OK) {
        close(fd);
        return st;
    }
    f->fd = fd;
    f->data_start = 8 + n;
    *out = f;
    return ERASE_OK;
}

void erase_st_close(erase_st_file_t *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    for (int i = 0; i < f->nmeta; i++) {
        free(f->keys[i]);
        free(f->values[i]);
    }
    free(f->keys);
    free(f->values);
    free(f->t);
    free(f);
}

int erase_st_count(const erase_st_file_t *f) { return f->n; }
const erase_st_tensor_t *erase_st_tensor(const erase_st_file_t *f, int i) { return &f->t[i]; }
const char *erase_st_path(const erase_st_file_t *f) { return f->path; }
int erase_st_meta_count(const erase_st_file_t *f) { return f->nmeta; }

const erase_st_tensor_t *erase_st_find(const erase_st_file_t *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name))
            return &f->t[i];
    return NULL;
}

const char *erase_st_meta_get(const erase_st_file_t *f, const char *key)
{
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->keys[i], key))
            return f->values[i];
    return NULL;
}

erase_status_t erase_st_read(const erase_st_file_t *f, const erase_st_tensor_t *t, uint64_t offset, void *out,
                             size_t bytes)
{
    if (offset > t->bytes || bytes > t->bytes - offset)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: tensor %s: bytes [%" PRIu64 ", +%zu) asked of %" PRIu64, f->path,
                           t->name, offset, bytes, t->bytes);
    int r = read_at(f->fd, out, bytes, f->data_start + t->begin + offset);
    if (r != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: tensor %s: cannot read: %s", f->path, t->name,
                           r > 0 ? "the file ends early" : strerror(errno));
    return ERASE_OK;
}

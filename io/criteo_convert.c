#include "io/criteo_convert.h"

#include "io/ctr_dataset_write.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define LINE_MAX_BYTES (4 << 20) /* longest line accepted (a Criteo line is ~250 bytes) */
#define FLUSH_ROWS 65536         /* rows parsed before they go to the shard writer */

typedef struct {
    const erase_criteo_convert_options_t *o;
    erase_criteo_convert_summary_t *s;
    erase_ctr_dataset_writer_t *out;
    uint8_t *label;
    float *dense;
    uint32_t *lengths;  /* [FLUSH_ROWS, 26]: ids of each (row, feature) */
    uint32_t *ids;      /* the ids of the rows buffered, row by row (ids_cap of room) */
    size_t nids, ids_cap;
    uint32_t *line_ids; /* one line's ids (ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES) of room) */
    int64_t n;          /* rows buffered */
    /* the current input */
    const char *path;
    erase_criteo_format_t format;
    char sep;
    int64_t lineno;
    double t0, last_progress;
    int64_t file_size;
    gzFile gz;
} convert_t;

erase_criteo_convert_options_t erase_criteo_convert_options_default(void)
{
    erase_criteo_convert_options_t o = { 0 };
    o.shard_rows = 1 << 20;
    o.write = erase_ctr_write_options_default();
    o.format = ERASE_CRITEO_AUTO;
    return o;
}

static erase_status_t flush_rows(convert_t *c)
{
    if (c->n == 0)
        return ERASE_OK;
    erase_ctr_stats_add_ids(&c->s->stats, c->n, c->label, c->dense, c->lengths, c->ids);
    ERASE_CHECK(
        erase_ctr_dataset_writer_append_ids(c->out, c->n, c->label, c->dense, c->lengths, c->ids, c->path));
    c->s->rows += c->n;
    c->n = 0;
    c->nids = 0;
    return ERASE_OK;
}

static void progress(convert_t *c)
{
    double now = erase_now_s();
    if (!c->o->progress || now - c->last_progress < 1.0)
        return;
    c->last_progress = now;
    double pct = c->file_size > 0 ? 100.0 * (double)gzoffset(c->gz) / (double)c->file_size : 0.0;
    fprintf(c->o->progress, "erase-convert: %s: %.0f%% of %.1f MB read, %" PRId64 " lines so far, %.0f lines/s\n",
            c->path, pct > 100 ? 100 : pct, (double)c->file_size / 1e6, c->s->lines,
            (double)c->s->lines / (now - c->t0));
    fflush(c->o->progress);
}

/* Append n ids of a parsed line to the rows buffered. */
static erase_status_t buffer_ids(convert_t *c, const uint32_t *ids, size_t n)
{
    if (c->nids + n > c->ids_cap) {
        size_t cap = c->ids_cap ? c->ids_cap : (size_t)FLUSH_ROWS * ERASE_CTR_SHARD_FIELDS;
        while (cap < c->nids + n)
            cap *= 2;
        uint32_t *p = realloc(c->ids, sizeof *p * cap);
        if (!p)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s:%" PRId64 ": out of memory for %zu ids", c->path, c->lineno, cap);
        c->ids = p;
        c->ids_cap = cap;
    }
    memcpy(c->ids + c->nids, ids, sizeof *ids * n);
    c->nids += n;
    return ERASE_OK;
}

/* One line of the current input (`len` bytes, without '\n'). */
static erase_status_t handle_line(convert_t *c, const char *line, size_t len)
{
    c->lineno++;
    char why[ERASE_CRITEO_MESSAGE_MAX - 64];
    if (c->lineno == 1) {
        erase_criteo_format_t f = c->o->format;
        if (f == ERASE_CRITEO_AUTO)
            f = len >= 5 && memcmp(line, "label", 5) == 0 ? ERASE_CRITEO_CSV : ERASE_CRITEO_TSV;
        c->format = f;
        c->sep = f == ERASE_CRITEO_CSV ? ',' : '\t';
        if (f == ERASE_CRITEO_CSV) {
            if (erase_criteo_check_header(line, len, why, sizeof why) != 0)
                return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:1: %s", c->path, why);
            return ERASE_OK;
        }
    }
    c->s->lines++;
    if ((c->s->lines & 4095) == 0) {
        if (c->o->cancel && *c->o->cancel)
            return ERASE_ERROR(ERASE_ERR_STATE, "%s:%" PRId64 ": interrupted", c->path, c->lineno);
        if ((c->s->lines & 65535) == 0)
            progress(c);
    }
    erase_criteo_row_t row;
    erase_criteo_bad_t bad = erase_criteo_parse_line_ids(line, len, c->sep, &row, c->line_ids,
                                                         ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES), why, sizeof why);
    if (bad != ERASE_CRITEO_OK) {
        if (!c->o->skip_bad)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%" PRId64 ": %s", c->path, c->lineno, why);
        c->s->skipped++;
        if (c->s->bad[bad]++ == 0)
            snprintf(c->s->first_bad[bad], sizeof c->s->first_bad[bad], "%s:%" PRId64 ": %s", c->path,
                     c->lineno, why);
        return ERASE_OK;
    }
    c->s->remapped += row.remapped;
    c->label[c->n] = row.label;
    memcpy(c->dense + c->n * ERASE_CTR_SHARD_DENSE, row.dense, sizeof row.dense);
    memcpy(c->lengths + c->n * ERASE_CTR_SHARD_FIELDS, row.lengths, sizeof row.lengths);
    ERASE_CHECK(buffer_ids(c, c->line_ids, row.nids));
    if (++c->n == FLUSH_ROWS)
        ERASE_CHECK(flush_rows(c));
    return ERASE_OK;
}

/* zlib's message without the "path: " it puts in front. */
static const char *gz_reason(const char *path, const char *msg)
{
    size_t n = strlen(path);
    return strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

/* Read one input, plain or gzip, line by line. */
static erase_status_t convert_file(convert_t *c, const char *path, char *buf)
{
    c->path = path;
    c->lineno = 0;
    struct stat sb;
    c->file_size = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
    errno = 0;
    c->gz = gzopen(path, "rb");
    if (!c->gz)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
    gzbuffer(c->gz, 1 << 18);
    erase_status_t st = ERASE_OK;
    size_t have = 0;
    for (;;) {
        int k = gzread(c->gz, buf + have, (unsigned)(LINE_MAX_BYTES - have));
        if (k < 0) {
            int code;
            const char *msg = gzerror(c->gz, &code);
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: gzip: %s", path,
                             code == Z_ERRNO ? strerror(errno) : gz_reason(path, msg));
            break;
        }
        c->s->input_bytes += k;
        have += (size_t)k;
        char *p = buf, *end = buf + have;
        if (k == 0) { /* end of input: a last line without '\n' */
            int code;
            const char *msg = gzerror(c->gz, &code);
            if (code != Z_OK) { /* Z_BUF_ERROR: a truncated gzip stream */
                st = ERASE_ERROR(ERASE_ERR_IO, "%s: gzip: %s (the file is truncated?)", path, gz_reason(path, msg));
                break;
            }
            if (have)
                st = handle_line(c, p, have);
            break;
        }
        char *q;
        while (st == ERASE_OK && (q = memchr(p, '\n', (size_t)(end - p)))) {
            st = handle_line(c, p, (size_t)(q - p));
            p = q + 1;
        }
        if (st != ERASE_OK)
            break;
        have = (size_t)(end - p);
        if (have == LINE_MAX_BYTES) {
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%" PRId64 ": line longer than %d bytes", path, c->lineno + 1,
                             LINE_MAX_BYTES);
            break;
        }
        memmove(buf, p, have);
    }
    gzclose(c->gz);
    c->gz = NULL;
    if (st == ERASE_OK)
        st = flush_rows(c); /* so that every shard names exactly its sources */
    return st;
}

erase_status_t erase_criteo_convert(const char *const *inputs, int n,
                                    const erase_criteo_convert_options_t *options,
                                    erase_criteo_convert_summary_t *summary)
{
    erase_criteo_convert_summary_t local;
    erase_criteo_convert_summary_t *s = summary ? summary : &local;
    memset(s, 0, sizeof *s);
    erase_ctr_stats_init(&s->stats);
    if (n < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "no input files given");
    convert_t c = { .o = options, .s = s };
    c.t0 = c.last_progress = erase_now_s();
    ERASE_CHECK(erase_ctr_dataset_writer_open(options->out_dir, options->shard_rows, &options->write,
                                              options->force, &c.out));
    erase_status_t st = ERASE_OK;
    char *buf = malloc(LINE_MAX_BYTES);
    c.label = malloc(FLUSH_ROWS);
    c.dense = malloc(sizeof(float) * FLUSH_ROWS * ERASE_CTR_SHARD_DENSE);
    c.lengths = malloc(sizeof(uint32_t) * FLUSH_ROWS * ERASE_CTR_SHARD_FIELDS);
    c.line_ids = malloc(sizeof(uint32_t) * ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES));
    if (!buf || !c.label || !c.dense || !c.lengths || !c.line_ids)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the conversion buffers");
    for (int i = 0; i < n && st == ERASE_OK; i++)
        st = convert_file(&c, inputs[i], buf);
    if (st == ERASE_OK && s->rows == 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "no rows to write: every line was bad or the input is empty");
    if (st == ERASE_OK)
        st = erase_ctr_dataset_writer_commit(c.out);
    if (st == ERASE_OK)
        s->shards = erase_ctr_dataset_writer_shards(c.out);
    else
        erase_error_trail(__FILE__, __LINE__);
    erase_ctr_dataset_writer_free(c.out);
    free(buf);
    free(c.label);
    free(c.dense);
    free(c.lengths);
    free(c.ids);
    free(c.line_ids);
    s->seconds = erase_now_s() - c.t0;
    return st;
}

void erase_criteo_convert_print(const erase_criteo_convert_summary_t *s, FILE *out)
{
    fprintf(out, "converted %" PRId64 " lines (%.1f MB of text) in %.2f s: %.0f lines/s\n", s->lines,
            (double)s->input_bytes / 1e6, s->seconds, s->seconds > 0 ? (double)s->lines / s->seconds : 0.0);
    fprintf(out, "rows written %" PRId64 " in %d shard%s; skipped %" PRId64 " bad line%s\n", s->rows, s->shards,
            s->shards == 1 ? "" : "s", s->skipped, s->skipped == 1 ? "" : "s");
    for (int k = 1; k < ERASE_CRITEO_BAD_KINDS; k++)
        if (s->bad[k])
            fprintf(out, "  skipped, %-18s %" PRId64 " (first: %s)\n", erase_criteo_bad_name((erase_criteo_bad_t)k),
                    s->bad[k], s->first_bad[k]);
    if (s->remapped)
        fprintf(out, "categorical tokens ffffffff stored as fffffffe (0xFFFFFFFF means missing): %" PRId64 "\n",
                s->remapped);
    erase_ctr_stats_print(&s->stats, out, "");
}

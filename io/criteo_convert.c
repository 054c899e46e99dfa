#include "io/criteo_convert.h"

#include "io/convert_plan.h"
#include "io/convert_ranks.h"
#include "io/ctr_dataset_write.h"
#include "io/gz_members.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#define LINE_MAX_BYTES (4 << 20) /* longest line accepted (a Criteo line is ~250 bytes) */
#define FLUSH_ROWS 65536         /* rows parsed before they go to the shard writer */

typedef struct {
    const erase_criteo_convert_options_t *o;
    erase_criteo_convert_summary_t *s;
    erase_ctr_dataset_writer_t *out;
    erase_convert_ranks_t *ranks;
    uint8_t *label;
    float *dense;
    uint32_t *lengths;  /* [FLUSH_ROWS, 26]: ids of each (row, feature) */
    int multi;          /* a buffered row holds a list (else every length is 1) */
    uint32_t *ids;      /* the ids of the rows buffered, row by row (ids_cap of room) */
    size_t nids, ids_cap;
    uint32_t *line_ids; /* one line's ids (ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES) of room) */
    int64_t n;          /* rows buffered */
    int64_t *first_bad_unit; /* [ERASE_CRITEO_BAD_KINDS]: the unit of first_bad (INT64_MAX: none) */
    /* the current unit */
    int unit;
    const erase_convert_unit_t *u;
    const char *path;
    erase_criteo_format_t format;
    char sep;
    int64_t lineno;     /* lines of the unit so far */
    int64_t line_at;    /* byte of the file where the current line starts (plain files) */
    int64_t lines_before; /* lines of the file before the unit (-2: not counted yet, -1: unknown) */
    double t0, last_progress;
    int64_t total_bytes, done_bytes; /* input bytes of all units; of this rank's finished units */
    gzFile gz;
    int stopped;        /* stopped because another rank failed */
    int64_t final_bytes, final_lines; /* rank 0: the input read and lines of all ranks, once done */
} convert_t;

erase_criteo_convert_options_t erase_criteo_convert_options_default(void)
{
    erase_criteo_convert_options_t o = { 0 };
    o.shard_rows = 1 << 20;
    o.split_bytes = ERASE_CONVERT_SPLIT_BYTES_DEFAULT;
    o.write = erase_ctr_write_options_default();
    o.format = ERASE_CRITEO_AUTO;
    o.min_vocab_coverage = 0.5;
    return o;
}

static erase_status_t flush_rows(convert_t *c)
{
    if (c->n == 0)
        return ERASE_OK;
    /* one-hot rows go without lengths: the stats' and writer's [n, 26] path */
    const uint32_t *lengths = c->multi ? c->lengths : NULL;
    erase_ctr_stats_add_ids(&c->s->stats, c->n, c->label, c->dense, lengths, c->ids);
    ERASE_CHECK(erase_ctr_dataset_writer_append_ids(c->out, c->n, c->label, c->dense, lengths, c->ids, c->path));
    c->s->rows += c->n;
    c->n = 0;
    c->multi = 0;
    c->nids = 0;
    return ERASE_OK;
}

/* Bytes of this rank's input consumed: its finished units and the part of
 * the current one read (compressed bytes for gzip). */
static int64_t bytes_consumed(const convert_t *c)
{
    int64_t in_unit = 0;
    if (c->gz && c->u) {
        int64_t at = c->u->gzip ? (int64_t)gzoffset(c->gz) : c->line_at;
        in_unit = at - c->u->start;
        int64_t size = c->u->end - c->u->start;
        in_unit = in_unit < 0 ? 0 : in_unit > size ? size : in_unit;
    }
    return c->done_bytes + in_unit;
}

/* "erase-convert: 45% of 1234.5 MB read (2 ranks), 123456 lines, 456789 lines/s, 12.3 MB/s, ETA 83 s" */
static void print_progress(convert_t *c, int64_t bytes, int64_t lines, double now)
{
    double secs = now - c->t0 > 1e-9 ? now - c->t0 : 1e-9;
    double frac = c->total_bytes > 0 ? (double)bytes / (double)c->total_bytes : 0.0;
    frac = frac > 1 ? 1 : frac;
    char eta[32] = "ETA unknown";
    if (frac > 0)
        snprintf(eta, sizeof eta, "ETA %.0f s", secs * (1 - frac) / frac);
    char ranks[32] = "";
    if (c->ranks->size > 1)
        snprintf(ranks, sizeof ranks, " (%d ranks)", c->ranks->size);
    fprintf(c->o->progress, "erase-convert: %.0f%% of %.1f MB read%s, %" PRId64 " lines, %.0f lines/s, %.1f MB/s, %s\n",
            100 * frac, (double)c->total_bytes / 1e6, ranks, lines, (double)lines / secs,
            (double)bytes / 1e6 / secs, eta);
    fflush(c->o->progress);
}

/* Report this rank's progress; on rank 0 print the total at most once a second. */
static void progress(convert_t *c, int done)
{
    int64_t bytes, lines;
    if (!erase_convert_ranks_report(c->ranks, bytes_consumed(c), c->s->lines, done, &bytes, &lines))
        return;
    double now = erase_now_s();
    if (!c->o->progress || now - c->last_progress < 1.0)
        return;
    c->last_progress = now;
    print_progress(c, bytes, lines, now);
}

/* Lines of `path` before byte `end` (the line numbers of a range that
 * does not start the file: counted on demand, for messages only); -1 if
 * the file cannot be read. */
static int64_t count_lines(const char *path, int64_t end)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *buf = malloc(1 << 20);
    int64_t lines = 0, at = 0;
    while (buf && at < end) {
        size_t want = end - at < (1 << 20) ? (size_t)(end - at) : (1 << 20);
        size_t k = fread(buf, 1, want, f);
        if (k == 0)
            break;
        for (const char *p = buf, *e = buf + k; (p = memchr(p, '\n', (size_t)(e - p))); p++)
            lines++;
        at += (int64_t)k;
    }
    int ok = buf && at == end;
    free(buf);
    fclose(f);
    return ok ? lines : -1;
}

/* "FILE:LINE" of the current line; for a range of a split file
 * "FILE:LINE (byte OFFSET)", or "FILE: byte OFFSET" if the lines before
 * the range cannot be counted. Returns `out`. */
static const char *where(convert_t *c, char *out, size_t size)
{
    if (!c->u->split) {
        snprintf(out, size, "%s:%" PRId64, c->path, c->lineno);
        return out;
    }
    if (c->lines_before == -2) {
        c->lines_before = c->u->start == 0 ? 0 : count_lines(c->path, c->u->start - 1);
        if (c->lines_before >= 0 && c->u->start > 0)
            c->lines_before++; /* the '\n' at or after start - 1 ending the line the range before owns */
    }
    if (c->lines_before < 0)
        snprintf(out, size, "%s: byte %" PRId64, c->path, c->line_at);
    else
        snprintf(out, size, "%s:%" PRId64 " (byte %" PRId64 ")", c->path, c->lines_before + c->lineno, c->line_at);
    return out;
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

/* One line of the current unit (`len` bytes, without '\n'). */
static erase_status_t handle_line(convert_t *c, const char *line, size_t len)
{
    c->lineno++;
    char why[ERASE_CRITEO_MESSAGE_MAX / 2 - 64], at[ERASE_CRITEO_MESSAGE_MAX / 2];
    if (c->lineno == 1 && c->u->start == 0) {
        erase_criteo_format_t f = c->o->format;
        if (f == ERASE_CRITEO_AUTO)
            f = len >= 5 && strncasecmp(line, "label", 5) == 0 ? ERASE_CRITEO_CSV : ERASE_CRITEO_TSV;
        c->format = f;
        c->sep = f == ERASE_CRITEO_CSV ? ',' : '\t';
        if (f == ERASE_CRITEO_CSV) {
            if (erase_criteo_check_header(line, len, why, sizeof why) != 0)
                return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: %s", where(c, at, sizeof at), why);
            return ERASE_OK;
        }
    }
    c->s->lines++;
    if ((c->s->lines & 4095) == 0) {
        if (c->o->cancel && *c->o->cancel)
            return ERASE_ERROR(ERASE_ERR_STATE, "%s: interrupted", where(c, at, sizeof at));
        if (erase_convert_ranks_stopped(c->ranks)) {
            c->stopped = 1;
            return ERASE_ERROR(ERASE_ERR_STATE, "%s: stopped: another rank failed", where(c, at, sizeof at));
        }
        if ((c->s->lines & 65535) == 0)
            progress(c, 0);
    }
    erase_criteo_row_t row;
    erase_criteo_bad_t bad = erase_criteo_parse_line_ids(line, len, c->sep, &row, c->line_ids,
                                                         ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES), why, sizeof why);
    if (bad != ERASE_CRITEO_OK) {
        where(c, at, sizeof at);
        if (!c->o->skip_bad)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: %s", at, why);
        c->s->skipped++;
        if (c->s->bad[bad]++ == 0) {
            snprintf(c->s->first_bad[bad], sizeof c->s->first_bad[bad], "%s: %s", at, why);
            c->first_bad_unit[bad] = c->unit;
        }
        return ERASE_OK;
    }
    c->s->remapped += row.remapped;
    if (c->o->vocab) {
        c->s->vocab_frequent += erase_vocab_map_ids(c->o->vocab, row.lengths, c->line_ids);
        c->s->vocab_ids += (int64_t)row.nids;
    }
    c->label[c->n] = row.label;
    memcpy(c->dense + c->n * ERASE_CTR_SHARD_DENSE, row.dense, sizeof row.dense);
    memcpy(c->lengths + c->n * ERASE_CTR_SHARD_FIELDS, row.lengths, sizeof row.lengths);
    c->multi |= row.multi;
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

/* A gzip input failed with zlib's `reason`: name the member at fault
 * and its byte (io/gz_members.h). No line: zlib drops the lines of the
 * block it failed in, so the lines read tell little. */
static erase_status_t gzip_error(convert_t *c, const char *reason)
{
    int64_t member, offset;
    char why[256];
    if (c->u->gzip && erase_gz_locate_damage(c->path, &member, &offset, why, sizeof why) == 1)
        return ERASE_ERROR(ERASE_ERR_IO,
                           "%s: gzip member %" PRId64 " (at byte %" PRId64 ") is damaged or truncated: %s", c->path,
                           member + 1, offset, why);
    return ERASE_ERROR(ERASE_ERR_IO, "%s: gzip: %s (the file is truncated?)", c->path, reason);
}

/* The layout of a plain file from its first bytes ("label", any case: CSV), for a
 * range that does not start the file. */
static erase_criteo_format_t file_format(const convert_t *c)
{
    if (c->o->format != ERASE_CRITEO_AUTO)
        return c->o->format;
    char head[5] = { 0 };
    FILE *f = fopen(c->path, "rb");
    size_t k = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    return k == 5 && strncasecmp(head, "label", 5) == 0 ? ERASE_CRITEO_CSV : ERASE_CRITEO_TSV;
}

/* Read unit c->u (a whole file, plain or gzip, or a byte range of a plain
 * file: the lines that start in it) line by line. */
static erase_status_t convert_unit(convert_t *c, char *buf)
{
    const erase_convert_unit_t *u = c->u;
    c->lineno = 0;
    c->lines_before = -2;
    c->line_at = u->start;
    errno = 0;
    c->gz = gzopen(c->path, "rb");
    if (!c->gz)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", c->path, errno ? strerror(errno) : "out of memory");
    gzbuffer(c->gz, 1 << 18);
    erase_status_t st = ERASE_OK;
    int skip_partial = 0; /* a range after the first: its first bytes end a line of the range before */
    if (u->start > 0) {
        c->format = file_format(c);
        c->sep = c->format == ERASE_CRITEO_CSV ? ',' : '\t';
        if (gzseek(c->gz, u->start - 1, SEEK_SET) != u->start - 1)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot seek to byte %" PRId64, c->path, u->start - 1);
        c->line_at = u->start - 1;
        skip_partial = 1; /* the byte before the range, up to its first '\n' */
    }
    size_t have = 0;
    int stop = 0;
    while (st == ERASE_OK && !stop) {
        int k = gzread(c->gz, buf + have, (unsigned)(LINE_MAX_BYTES - have));
        if (k < 0) {
            int code;
            const char *msg = gzerror(c->gz, &code);
            st = code == Z_ERRNO ? ERASE_ERROR(ERASE_ERR_IO, "%s: gzip: %s", c->path, strerror(errno))
                                 : gzip_error(c, gz_reason(c->path, msg));
            break;
        }
        have += (size_t)k;
        char *p = buf, *end = buf + have;
        if (k == 0) { /* end of input: a last line without '\n' */
            int code;
            const char *msg = gzerror(c->gz, &code);
            if (code != Z_OK) { /* Z_BUF_ERROR: a truncated gzip stream */
                st = gzip_error(c, gz_reason(c->path, msg));
                break;
            }
            if (have && !skip_partial && !(u->split && c->line_at >= u->end)) {
                c->s->input_bytes += (int64_t)have;
                st = handle_line(c, p, have);
            }
            break;
        }
        char *q;
        while (st == ERASE_OK && (q = memchr(p, '\n', (size_t)(end - p)))) {
            if (skip_partial)
                skip_partial = 0;
            else if (u->split && c->line_at >= u->end) { /* the next range's line */
                stop = 1;
                break;
            } else {
                c->s->input_bytes += q + 1 - p;
                st = handle_line(c, p, (size_t)(q - p));
            }
            c->line_at += q + 1 - p;
            p = q + 1;
        }
        if (st != ERASE_OK || stop)
            break;
        have = (size_t)(end - p);
        if (have == LINE_MAX_BYTES) {
            c->lineno++;
            char at[ERASE_CRITEO_MESSAGE_MAX / 2];
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: line longer than %d bytes", where(c, at, sizeof at), LINE_MAX_BYTES);
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

/* This rank's units, in unit order; *failed_unit: where it stopped. */
static erase_status_t convert_units(convert_t *c, const char *const *inputs, const erase_convert_plan_t *plan,
                                    char *buf, int64_t *failed_unit)
{
    for (int i = 0; i < plan->count; i++) {
        const erase_convert_unit_t *u = &plan->units[i];
        if (u->rank != c->ranks->rank)
            continue;
        *failed_unit = i;
        c->unit = i;
        c->u = u;
        c->path = inputs[u->file];
        ERASE_CHECK(erase_ctr_dataset_writer_begin_unit(c->out, i));
        ERASE_CHECK(convert_unit(c, buf));
        c->done_bytes += u->end - u->start;
        c->u = NULL;
    }
    return ERASE_OK;
}

/* Every rank reports its last progress; rank 0 prints the totals until all
 * are done and keeps the last ones (the caller prints them on success). */
static void progress_done(convert_t *c, int failed)
{
    progress(c, failed ? 2 : 1);
    int64_t bytes, lines;
    while (erase_convert_ranks_wait(c->ranks, &bytes, &lines)) {
        double now = erase_now_s();
        if (c->o->progress && now - c->last_progress >= 1.0) {
            c->last_progress = now;
            print_progress(c, bytes, lines, now);
        }
    }
    if (erase_convert_ranks_report(c->ranks, bytes_consumed(c), c->s->lines, failed ? 2 : 1, &bytes, &lines)) {
        c->final_bytes = bytes; /* rank 0: every rank done; printed if all succeeded */
        c->final_lines = lines;
    }
    erase_convert_ranks_finish(c->ranks);
}

/* The summary of all ranks on every rank (sums; the first bad line of
 * each kind in unit order, from the rank that read it; merged statistics). */
static erase_status_t merge_summary(convert_t *c, const erase_convert_plan_t *plan)
{
    erase_criteo_convert_summary_t *s = c->s;
    erase_convert_ranks_t *r = c->ranks;
    enum { N = 7 };
    int64_t v[N + ERASE_CRITEO_BAD_KINDS] = { s->lines,       s->rows,      s->skipped,       s->remapped,
                                              s->input_bytes, s->vocab_ids, s->vocab_frequent };
    memcpy(v + N, s->bad, sizeof s->bad);
    erase_convert_ranks_sum(r, v, N + ERASE_CRITEO_BAD_KINDS);
    s->lines = v[0], s->rows = v[1], s->skipped = v[2], s->remapped = v[3], s->input_bytes = v[4];
    s->vocab_ids = v[5], s->vocab_frequent = v[6];
    memcpy(s->bad, v + N, sizeof s->bad);
    for (int k = 1; k < ERASE_CRITEO_BAD_KINDS; k++) {
        int64_t unit = erase_convert_ranks_min(r, c->first_bad_unit[k]);
        if (unit != INT64_MAX)
            erase_convert_ranks_bcast(r, s->first_bad[k], (int)sizeof s->first_bad[k], plan->units[unit].rank);
    }
    erase_ctr_stats_t *all = malloc(sizeof *all * (size_t)r->size);
    if (!all)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the statistics of %d ranks", r->size);
    erase_convert_ranks_allgather(r, &s->stats, all, (int)sizeof *all);
    erase_ctr_stats_init(&s->stats);
    for (int i = 0; i < r->size; i++)
        erase_ctr_stats_merge(&s->stats, &all[i]);
    free(all);
    return ERASE_OK;
}

/* The vocabulary's coverage of the inputs against its own days' (the same
 * sums on every rank, after merge_summary): ERASE_ERR_FORMAT below
 * min_vocab_coverage of it. */
static erase_status_t check_vocab_coverage(const erase_criteo_convert_options_t *o,
                                           const erase_criteo_convert_summary_t *s)
{
    if (!o->vocab || o->min_vocab_coverage <= 0 || s->vocab_ids == 0)
        return ERASE_OK;
    double here = (double)s->vocab_frequent / (double)s->vocab_ids, own = erase_vocab_coverage(o->vocab);
    if (here >= o->min_vocab_coverage * own)
        return ERASE_OK;
    return ERASE_ERROR(ERASE_ERR_FORMAT,
                       "%s: knows %.1f%% of these inputs' ids as frequent, %.1f%% of its own days' (below %g of it): "
                       "a vocabulary of another dataset? (--min-vocab-coverage 0 converts anyway)",
                       o->vocab_path ? o->vocab_path : "the vocabulary", 100.0 * here, 100.0 * own,
                       o->min_vocab_coverage);
}

/* Rows per unit on every rank. */
static erase_status_t unit_rows(convert_t *c, const erase_convert_plan_t *plan, int64_t **rows)
{
    *rows = calloc((size_t)plan->count, sizeof **rows);
    if (!*rows)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %d units", plan->count);
    ERASE_CHECK(erase_ctr_dataset_writer_unit_rows(c->out, *rows, plan->count));
    erase_convert_ranks_sum(c->ranks, *rows, plan->count);
    return ERASE_OK;
}

/* Publish: every rank agreed that its units are whole. Rank 0 deletes an
 * old dataset (force); then every rank renames its shards; then rank 0
 * writes the index, last. Each step ends with an agreement. */
static erase_status_t publish(convert_t *c, const erase_convert_plan_t *plan, const int64_t *rows)
{
    erase_convert_ranks_t *r = c->ranks;
    erase_status_t st = ERASE_OK;
    if (r->rank == 0 && c->o->force)
        st = erase_dataset_remove(c->o->out_dir);
    ERASE_CHECK(erase_convert_ranks_agree(r, st, 0));
    st = erase_ctr_dataset_writer_publish_units(c->out, rows, plan->count);
    ERASE_CHECK(erase_convert_ranks_agree(r, st, 0));
    if (r->rank == 0)
        st = erase_ctr_dataset_index_units(c->o->out_dir, c->o->shard_rows, rows, plan->count);
    ERASE_CHECK(erase_convert_ranks_agree(r, st, 0));
    erase_ctr_dataset_writer_keep(c->out);
    return ERASE_OK;
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
    erase_convert_ranks_t ranks;
    ERASE_CHECK(erase_convert_ranks_init(&ranks));
    convert_t c = { .o = options, .s = s, .ranks = &ranks };
    c.t0 = c.last_progress = erase_now_s();
    int64_t first_bad_unit[ERASE_CRITEO_BAD_KINDS];
    for (int k = 0; k < ERASE_CRITEO_BAD_KINDS; k++)
        first_bad_unit[k] = INT64_MAX;
    c.first_bad_unit = first_bad_unit;
    erase_convert_plan_t plan;
    erase_status_t st = erase_convert_plan_make(inputs, n, options->split_bytes, &plan);
    /* rank 0 prepares the directory (checks an old dataset) before the others open it */
    if (st == ERASE_OK && ranks.rank == 0)
        st = erase_ctr_dataset_writer_open(options->out_dir, options->shard_rows, &options->write, options->force,
                                           &c.out);
    st = erase_convert_ranks_agree(&ranks, st, -1);
    if (st == ERASE_OK && ranks.rank != 0)
        st = erase_ctr_dataset_writer_open(options->out_dir, options->shard_rows, &options->write, 1, &c.out);
    st = erase_convert_ranks_agree(&ranks, st, -1);
    char *buf = NULL;
    int64_t failed_unit = -1, *rows = NULL;
    if (st == ERASE_OK) {
        erase_convert_plan_deal(&plan, ranks.size);
        c.total_bytes = plan.total_bytes;
        buf = malloc(LINE_MAX_BYTES);
        c.label = malloc(FLUSH_ROWS);
        c.dense = malloc(sizeof(float) * FLUSH_ROWS * ERASE_CTR_SHARD_DENSE);
        c.lengths = malloc(sizeof(uint32_t) * FLUSH_ROWS * ERASE_CTR_SHARD_FIELDS);
        c.line_ids = malloc(sizeof(uint32_t) * ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES));
        if (!buf || !c.label || !c.dense || !c.lengths || !c.line_ids)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the conversion buffers");
        if (st == ERASE_OK)
            st = convert_units(&c, inputs, &plan, buf, &failed_unit);
        if (st == ERASE_OK)
            st = erase_ctr_dataset_writer_finish(c.out);
        progress_done(&c, st != ERASE_OK);
        if (c.stopped) /* any real failure comes first */
            failed_unit += plan.count;
        st = erase_convert_ranks_agree(&ranks, st, failed_unit);
        if (st != ERASE_OK) /* the lines read by all ranks, for the message */
            erase_convert_ranks_sum(&ranks, &s->lines, 1);
        else if (ranks.rank == 0 && options->progress) /* the last progress line: all read */
            print_progress(&c, c.final_bytes, c.final_lines, erase_now_s());
    }
    if (st == ERASE_OK)
        st = erase_convert_ranks_agree(&ranks, merge_summary(&c, &plan), 0);
    if (st == ERASE_OK)
        st = erase_convert_ranks_agree(&ranks, unit_rows(&c, &plan, &rows), 0);
    if (st == ERASE_OK && s->rows == 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s%s: no rows to write: every line was bad or the input is empty",
                         inputs[0], n > 1 ? " and the other inputs" : "");
    if (st == ERASE_OK)
        st = check_vocab_coverage(options, s);
    if (st == ERASE_OK)
        st = publish(&c, &plan, rows);
    if (st == ERASE_OK) {
        for (int u = 0; u < plan.count; u++)
            s->shards += (int)erase_ctr_unit_shards(rows[u], options->shard_rows);
    } else
        erase_error_trail(__FILE__, __LINE__);
    /* rank 0 made the directory: it removes it once the others deleted their files */
    if (ranks.rank != 0)
        erase_ctr_dataset_writer_free(c.out);
    erase_convert_ranks_barrier(&ranks);
    if (ranks.rank == 0)
        erase_ctr_dataset_writer_free(c.out);
    erase_convert_plan_free(&plan);
    erase_convert_ranks_free(&ranks);
    free(rows);
    free(buf);
    free(c.label);
    free(c.dense);
    free(c.lengths);
    free(c.ids);
    free(c.line_ids);
    s->seconds = erase_now_s() - c.t0;
    s->stats.rare_row = options->vocab != NULL;
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

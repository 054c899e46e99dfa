#include "io/vocab_count.h"

#include "io/criteo_parse.h"
#include "io/tokenizer_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define LINE_MAX_BYTES (4 << 20) /* as erase-convert criteo */

/* Open addressing, linear probing; a slot with count 0 is empty. */
typedef struct {
    uint32_t *ids;
    uint64_t *counts;
    size_t cap, n; /* cap a power of 2; n <= cap / 2 */
} table_t;

struct erase_vocab_counter {
    table_t t[ERASE_VOCAB_FIELDS];
    int64_t tokens[ERASE_VOCAB_FIELDS];
    int64_t lines;
};

static int table_init(table_t *t, size_t cap)
{
    t->ids = calloc(cap, sizeof *t->ids);
    t->counts = calloc(cap, sizeof *t->counts);
    t->cap = cap;
    t->n = 0;
    return t->ids && t->counts ? 0 : -1;
}

static void table_free(table_t *t)
{
    free(t->ids);
    free(t->counts);
    memset(t, 0, sizeof *t);
}

static void table_put(table_t *t, uint32_t id, uint64_t count)
{
    size_t mask = t->cap - 1, i = (size_t)erase_mix64(id) & mask;
    while (t->counts[i] && t->ids[i] != id)
        i = (i + 1) & mask;
    if (!t->counts[i]) {
        t->ids[i] = id;
        t->n++;
    }
    t->counts[i] += count;
}

static int table_add(table_t *t, uint32_t id, uint64_t count)
{
    if ((t->n + 1) * 2 > t->cap) {
        table_t bigger;
        if (t->cap > SIZE_MAX / 4 || table_init(&bigger, t->cap * 2) != 0) {
            table_free(&bigger);
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++)
            if (t->counts[i])
                table_put(&bigger, t->ids[i], t->counts[i]);
        table_free(t);
        *t = bigger;
    }
    table_put(t, id, count);
    return 0;
}

erase_status_t erase_vocab_counter_new(erase_vocab_counter_t **out)
{
    erase_vocab_counter_t *c = calloc(1, sizeof *c);
    int ok = c != NULL;
    for (int f = 0; ok && f < ERASE_VOCAB_FIELDS; f++)
        ok = table_init(&c->t[f], 1024) == 0;
    if (!ok) {
        erase_vocab_counter_free(c);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the vocabulary counts");
    }
    *out = c;
    return ERASE_OK;
}

void erase_vocab_counter_free(erase_vocab_counter_t *c)
{
    if (!c)
        return;
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++)
        table_free(&c->t[f]);
    free(c);
}

erase_status_t erase_vocab_counter_add(erase_vocab_counter_t *c, int f, uint32_t id, uint64_t count)
{
    if (table_add(&c->t[f], id, count) != 0)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory counting the ids of C%d (%zu distinct so far)", f + 1,
                           c->t[f].n);
    c->tokens[f] += (int64_t)count;
    return ERASE_OK;
}

int64_t erase_vocab_counter_lines(const erase_vocab_counter_t *c)
{
    return c->lines;
}

/* ---- reading
 * ------------------------------------------------------------------ */

/* One line (`len` bytes without '\n'), parsed as erase-convert criteo
 * parses it (its messages); its ids counted. `ids` holds
 * ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES) ids. */
static erase_status_t count_line(erase_vocab_counter_t *c, const char *path, int64_t lineno, const char *line,
                                 size_t len, uint32_t *ids)
{
    erase_criteo_row_t row;
    char why[400];
    if (erase_criteo_parse_line_ids(line, len, '\t', &row, ids, ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES), why,
                                    sizeof why) != ERASE_CRITEO_OK)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%" PRId64 ": %s", path, lineno, why);
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++)
        for (uint32_t k = 0; k < row.lengths[f]; k++)
            ERASE_CHECK(erase_vocab_counter_add(c, f, *ids++, 1));
    c->lines++;
    return ERASE_OK;
}

erase_status_t erase_vocab_count_file(erase_vocab_counter_t *c, const char *path)
{
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
    gzbuffer(gz, 1 << 18);
    char *buf = malloc(LINE_MAX_BYTES + 2);
    uint32_t *ids = malloc(sizeof *ids * ERASE_CRITEO_IDS_MAX(LINE_MAX_BYTES));
    if (!buf || !ids) {
        gzclose(gz);
        free(buf);
        free(ids);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    erase_status_t st = ERASE_OK;
    int64_t lineno = 0;
    while (st == ERASE_OK && gzgets(gz, buf, LINE_MAX_BYTES + 2)) {
        size_t n = strlen(buf);
        lineno++;
        if (n && buf[n - 1] == '\n')
            n--;
        else if (n > LINE_MAX_BYTES)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%" PRId64 ": line longer than %d bytes", path, lineno,
                             LINE_MAX_BYTES);
        if (st == ERASE_OK && n && buf[n - 1] == '\r')
            n--;
        if (st == ERASE_OK)
            st = count_line(c, path, lineno, buf, n, ids);
    }
    int code = Z_OK;
    const char *msg = gzerror(gz, &code);
    if (st == ERASE_OK && code != Z_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: gzip: %s (after line %" PRId64 "; the file is truncated?)", path,
                         code == Z_ERRNO ? strerror(errno) : msg, lineno);
    gzclose(gz);
    free(buf);
    free(ids);
    return st;
}

/* ---- merging
 * ------------------------------------------------------------------ */

/* The rank that sums an id's counts: other bits of the hash than a table's
 * slot. */
static int owner_of(uint32_t id, int ranks)
{
    return (int)((erase_mix64(id) >> 40) % (uint64_t)ranks);
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

#define MPI_TRY(call, what)                                                                                            \
    do {                                                                                                               \
        if ((call) != MPI_SUCCESS) {                                                                                   \
            st = ERASE_ERROR(ERASE_ERR_IO, "vocabulary merge: %s failed (feature C%d)", what, f + 1);                  \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

/* Displacements (in uint64s, pairs of them per entry) of `counts` entries;
 * -1 when they do not fit in an int (MPI's counts). */
static int64_t displacements(const int *counts, int ranks, int *elems, int *displs)
{
    int64_t total = 0;
    for (int r = 0; r < ranks; r++) {
        if (total * 2 > INT_MAX || (int64_t)counts[r] * 2 > INT_MAX - total * 2)
            return -1;
        displs[r] = (int)(total * 2);
        elems[r] = counts[r] * 2;
        total += counts[r];
    }
    return total;
}

/* Feature f: exchange by owner, sum, keep the frequent ones, gather on rank 0.
 */
static erase_status_t merge_feature(erase_vocab_counter_t *c, MPI_Comm comm, int rank, int ranks, int f,
                                    erase_vocab_t *out, int *sc, int *rc, int *se, int *sd, int *re, int *rd)
{
    erase_status_t st = ERASE_OK;
    table_t *t = &c->t[f], mine = {0};
    uint64_t *send = NULL, *recv = NULL, *keep = NULL, *all = NULL;
    memset(sc, 0, sizeof(int) * (size_t)ranks);
    for (size_t i = 0; i < t->cap; i++)
        if (t->counts[i])
            sc[owner_of(t->ids[i], ranks)]++;
    MPI_TRY(MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, comm), "MPI_Alltoall");
    int64_t nsend = displacements(sc, ranks, se, sd), nrecv = displacements(rc, ranks, re, rd);
    if (nsend < 0 || nrecv < 0) {
        st = ERASE_ERROR(ERASE_ERR_INVALID,
                         "vocabulary merge: C%d has too many distinct ids for one MPI message "
                         "(more than %d): count on more ranks",
                         f + 1, INT_MAX / 2);
        goto done;
    }
    send = malloc((size_t)(nsend ? nsend : 1) * 2 * sizeof *send);
    recv = malloc((size_t)(nrecv ? nrecv : 1) * 2 * sizeof *recv);
    if (!send || !recv)
        goto nomem;
    for (int r = 0; r < ranks; r++)
        sc[r] = sd[r]; /* fill positions */
    for (size_t i = 0; i < t->cap; i++)
        if (t->counts[i]) {
            int r = owner_of(t->ids[i], ranks);
            send[sc[r]++] = t->ids[i];
            send[sc[r]++] = t->counts[i];
        }
    MPI_TRY(MPI_Alltoallv(send, se, sd, MPI_UINT64_T, recv, re, rd, MPI_UINT64_T, comm), "MPI_Alltoallv");
    free(send);
    send = NULL;
    size_t cap = 1024;
    while (cap < (size_t)nrecv * 2 + 2)
        cap *= 2;
    if (table_init(&mine, cap) != 0)
        goto nomem;
    for (int64_t k = 0; k < nrecv; k++)
        table_put(&mine, (uint32_t)recv[2 * k], recv[2 * k + 1]);
    free(recv);
    recv = NULL;
    int nkeep = 0;
    for (size_t i = 0; i < mine.cap; i++)
        nkeep += mine.counts[i] >= (uint64_t)out->threshold;
    keep = malloc((size_t)(nkeep ? nkeep : 1) * 2 * sizeof *keep);
    if (!keep)
        goto nomem;
    for (size_t i = 0, k = 0; i < mine.cap; i++)
        if (mine.counts[i] >= (uint64_t)out->threshold) {
            keep[k++] = mine.ids[i];
            keep[k++] = mine.counts[i];
        }
    int64_t sums[2] = {c->tokens[f], (int64_t)mine.n}, totals[2] = {0, 0};
    table_free(&mine);
    MPI_TRY(MPI_Reduce(sums, totals, 2, MPI_INT64_T, MPI_SUM, 0, comm), "MPI_Reduce");
    MPI_TRY(MPI_Gather(&nkeep, 1, MPI_INT, rc, 1, MPI_INT, 0, comm), "MPI_Gather");
    int64_t nall = rank == 0 ? displacements(rc, ranks, re, rd) : 0;
    if (nall < 0) {
        st = ERASE_ERROR(ERASE_ERR_INVALID, "vocabulary merge: C%d has more than %d frequent ids", f + 1, INT_MAX / 2);
        goto done; /* the other ranks' Gatherv would wait: the caller aborts the job
                    */
    }
    if (rank == 0 && !(all = malloc((size_t)(nall ? nall : 1) * 2 * sizeof *all)))
        goto nomem;
    MPI_TRY(MPI_Gatherv(keep, nkeep * 2, MPI_UINT64_T, all, re, rd, MPI_UINT64_T, 0, comm), "MPI_Gatherv");
    if (rank == 0) {
        qsort(all, (size_t)nall, 2 * sizeof *all, by_id);
        out->tokens[f] = totals[0];
        out->distinct[f] = totals[1];
        out->frequent[f] = nall;
        size_t n = (size_t)(nall ? nall : 1);
        out->ids[f] = malloc(n * sizeof(uint32_t));
        out->rows[f] = malloc(n * sizeof(uint32_t));
        out->counts[f] = malloc(n * sizeof(uint64_t));
        if (!out->ids[f] || !out->rows[f] || !out->counts[f])
            goto nomem;
        for (int64_t k = 0; k < nall; k++) {
            out->ids[f][k] = (uint32_t)all[2 * k];
            out->counts[f][k] = all[2 * k + 1];
        }
        st = erase_vocab_number(nall, out->ids[f], out->counts[f], out->rows[f]);
    }
    goto done;
nomem:
    st = ERASE_ERROR(ERASE_ERR_NOMEM, "vocabulary merge: out of memory for the ids of C%d", f + 1);
done:
    table_free(&mine);
    free(send);
    free(recv);
    free(keep);
    free(all);
    return st;
}

erase_status_t erase_vocab_count_merge(erase_vocab_counter_t *c, MPI_Comm comm, int64_t threshold, erase_vocab_t *out)
{
    memset(out, 0, sizeof *out);
    out->threshold = threshold;
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    int *buf = malloc(6 * sizeof(int) * (size_t)ranks);
    if (!buf)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "vocabulary merge: out of memory");
    int *b[6];
    for (int k = 0; k < 6; k++)
        b[k] = buf + (size_t)k * (size_t)ranks;
    erase_status_t st = ERASE_OK;
    for (int f = 0; f < ERASE_VOCAB_FIELDS && st == ERASE_OK; f++)
        st = merge_feature(c, comm, rank, ranks, f, out, b[0], b[1], b[2], b[3], b[4], b[5]);
    free(buf);
    if (st == ERASE_OK && rank == 0)
        erase_vocab_set_digest(out);
    if (st != ERASE_OK || rank != 0) {
        erase_vocab_free(out);
        out->threshold = threshold;
    }
    return st;
}

#define _GNU_SOURCE /* copy_file_range */
#include "io/synth_days.h"

#include "config.h"
#include "io/synth_common.h"
#include "lib/core/checked.h"
#include "lib/core/fs.h"
#include "lib/core/philox.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define DENSE ERASE_CTR_SHARD_DENSE
#define FIELDS ERASE_CTR_SHARD_FIELDS
#define PILOT_ROWS 50000          /* rows drawn to calibrate the bias */
#define PILOT_DAY 0xFFFFFFFFu     /* the pilot's day in the counter: no file's */
#define MAX_DAY 1000000           /* first_day + days, at most */
#define MAX_PIECES 10000000       /* pieces of all days, at most */
#define FLUSH_BYTES (1 << 20)     /* text buffered before a write */
#define DENSE_MAX_LOG 16.6        /* log1p of the largest count: below 2^24, exact in float32 */

/*
 * Row counts of the 26 embedding tables of MLPerf DLRM-DCNv2 on Criteo
 * 1TB, C1..C26: the distinct ids of each feature over the 24 days, capped
 * at 40,000,000 (torchrec_dlrm's --num_embeddings_per_feature; the same
 * list in pytorch/torchrec, torchrec/datasets/scripts/nvt/utils/
 * criteo_constant.py, NUM_EMBEDDINGS_PER_FEATURE, and in the MLPerf
 * training reference recommendation_v2/torchrec_dlrm). Uncapped, C1, C10,
 * C20, C21 and C22 have 227,605,432, 130,229,467, 292,775,614, 40,790,948
 * and 187,188,510 ids.
 */
static const int64_t criteo_1tb_rows[FIELDS] = {
    40000000, 39060, 17295, 7424, 20265, 3,     7122, 1543,     63,       40000000, 3067956, 405282, 10,
    2209,     11938, 155,   4,    976,   14,    40000000, 40000000, 40000000, 590152, 12973, 108,    36,
};

/* MLPerf DLRM-DCNv2's multi-hot sizes of C1..C26 (--multi_hot_sizes of
 * the MLPerf training reference's materialize_synthetic_multihot_dataset.py,
 * recommendation_v2/torchrec_dlrm; its ids per feature are a fixed count). */
const int erase_synth_days_mlperf_hotness[FIELDS] = {
    3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1,
};

/*
 * The default Zipf exponent, fitted to Criteo 1TB. NVIDIA's DLRM
 * (DeepLearningExamples, PyTorch/Recommendation/DLRM, the synthetic feature
 * specs criteo_t0_synthetic and criteo_t3_synthetic) lists each table's
 * size with every id (t0) and with the ids seen at least 3 times over the
 * 24 days (t3, DLRM's frequency threshold 3). For the five features with
 * more than 40 M ids:
 *     C1   227,605,432 -> 45,833,188  kept 0.201  s = 1.44
 *     C10  130,229,467 -> 29,275,261  kept 0.225  s = 1.51
 *     C20  292,775,614 -> 48,937,457  kept 0.167  s = 1.36
 *     C21   40,790,948 -> 11,316,796  kept 0.277  s = 1.66
 *     C22  187,188,510 -> 40,094,537  kept 0.214  s = 1.48
 *     all  878,589,971 -> 175,457,239 kept 0.1997 s = 1.44
 * Fit: under Zipf's law with exponent s (vocabulary far from exhausted, as
 * there), the ids with an expected count above m number about m^(-1/s);
 * with Poisson counts, the ids seen at least c times number
 * A * Gamma(c - a) / Gamma(c), a = 1/s (integrate P(Poisson(m) >= c)
 * against the density of m, proportional to m^(-1-a)). So
 * D(>= 3) / D(>= 1) = (1 - a)(2 - a) / 2; 0.1997 gives a = 0.694,
 * s = 1.44 (NVIDIA's own synthetic Criteo uses 1.45).
 */
#define ZIPF_S_CRITEO_1TB 1.44

/* The default click rate: Criteo 1TB's as commonly quoted (about 3.4% of
 * rows clicked). Criteo publishes no rate (both classes were subsampled,
 * at undisclosed rates: ailab.criteo.com's description of the set), and no
 * citable count was found: an assumption, which --base-rate replaces. */
#define BASE_RATE_CRITEO_1TB 0.034

erase_synth_days_options_t erase_synth_days_options_default(void)
{
    erase_synth_days_options_t o = { 0 };
    o.shape = "criteo-1tb";
    o.seed = 1;
    for (int f = 0; f < FIELDS; f++)
        o.hotness[f] = 1;
    o.gzip_level = 1;
    o.base_rate = BASE_RATE_CRITEO_1TB;
    o.signal = 0.3;
    o.dense_signal = 0.2;
    o.zipf_s = ZIPF_S_CRITEO_1TB;
    o.piece_rows = 1 << 20;
    return o;
}

/* ---- random numbers of one row: Philox4x32-10 at counter (row, day, block) ---- */

typedef struct {
    uint64_t key;
    uint32_t ctr[4], out[4];
    int used;
} row_rng_t;

static void row_rng_init(row_rng_t *r, uint64_t key, uint32_t day, uint64_t row)
{
    r->key = key;
    r->ctr[0] = (uint32_t)row;
    r->ctr[1] = (uint32_t)(row >> 32);
    r->ctr[2] = day;
    r->ctr[3] = 0;
    r->used = 4;
}

static inline uint32_t row_rng_u32(row_rng_t *r)
{
    if (r->used == 4) {
        erase_philox4x32(r->key, r->ctr, r->out);
        r->ctr[3]++;
        r->used = 0;
    }
    return r->out[r->used++];
}

static inline double row_rng_uniform(row_rng_t *r) /* [0, 1), 53 bits */
{
    uint64_t hi = row_rng_u32(r) >> 5, lo = row_rng_u32(r) >> 6;
    return ((double)hi * 67108864.0 + (double)lo) * 0x1p-53;
}

static inline double row_rng_normal(row_rng_t *r) /* Box-Muller, the cosine half */
{
    double u1 = 1.0 - row_rng_uniform(r), u2 = row_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- Zipf's law by rejection-inversion ----
 * W. Hörmann and G. Derflinger, "Rejection-inversion to generate variates
 * from monotone discrete distributions", ACM TOMACS 6(3), 1996, as Apache
 * Commons RNG's RejectionInversionZipfSampler writes it: ranks 1..n with
 * probability k^-s / H(n, s), s > 0; about one uniform per draw, O(1). */

typedef struct {
    int64_t n;
    double s, h_x1, h_n, threshold;
} zipf_t;

static double helper1(double x) /* log1p(x) / x */
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

static double helper2(double x) /* expm1(x) / x */
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x));
}

static double zipf_h(const zipf_t *z, double x)
{
    return exp(-z->s * log(x));
}

static double zipf_h_integral(const zipf_t *z, double x)
{
    double lx = log(x);
    return helper2((1.0 - z->s) * lx) * lx;
}

static double zipf_h_integral_inverse(const zipf_t *z, double x)
{
    double t = x * (1.0 - z->s);
    if (t < -1.0)
        t = -1.0;
    return exp(helper1(t) * x);
}

static void zipf_init(zipf_t *z, int64_t n, double s)
{
    z->n = n;
    z->s = s;
    z->h_x1 = zipf_h_integral(z, 1.5) - 1.0;
    z->h_n = zipf_h_integral(z, (double)n + 0.5);
    z->threshold = 2.0 - zipf_h_integral_inverse(z, zipf_h_integral(z, 2.5) - zipf_h(z, 2.0));
}

static int64_t zipf_draw(const zipf_t *z, row_rng_t *r)
{
    for (;;) {
        double u = z->h_n + row_rng_uniform(r) * (z->h_x1 - z->h_n);
        double x = zipf_h_integral_inverse(z, u);
        int64_t k = (int64_t)(x + 0.5);
        k = k < 1 ? 1 : k > z->n ? z->n : k;
        if ((double)k - x <= z->threshold || u >= zipf_h_integral(z, (double)k + 0.5) - zipf_h(z, (double)k))
            return k;
    }
}

/* ---- the planted model ---- */

typedef struct {
    const erase_synth_days_options_t *o;
    int64_t vocab[FIELDS];
    zipf_t zipf[FIELDS];
    uint32_t id_salt[FIELDS];
    uint64_t weight_salt[FIELDS];
    double dense_weight[DENSE];
    double bias;
    uint64_t key; /* Philox key of the rows */
    size_t max_line; /* bytes of the longest line, '\n' included */
} model_t;

static uint64_t seed_stream(uint64_t seed, uint64_t what, uint64_t index)
{
    return erase_rng_stream(0x3c6ef372fe94f82bULL, seed, what, index);
}

/* The id of rank k (1..V) of feature f: P(k - 1), P(x) = fmix32(x ^ salt)
 * a bijection of 32-bit words; cycle-walked once off 0xFFFFFFFF (the
 * missing marker of shards), so distinct ranks give distinct ids. */
static inline uint32_t rank_id(const model_t *m, int f, int64_t k)
{
    uint32_t y = erase_synth_fmix32((uint32_t)(k - 1) ^ m->id_salt[f]);
    return y == 0xFFFFFFFFu ? erase_synth_fmix32(y ^ m->id_salt[f]) : y;
}

/* w_f(rank k): uniform with standard deviation `signal`, from a hash. */
static inline double rank_weight(const model_t *m, int f, int64_t k)
{
    uint64_t h = m->weight_salt[f] ^ (uint64_t)k;
    double u = (double)(erase_rng_next(&h) >> 11) * 0x1p-53;
    return m->o->signal * 1.7320508075688772 * (2.0 * u - 1.0);
}

static char *put_uint(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static inline char *put_hex8(char *p, uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 7; i >= 0; i--, v >>= 4)
        p[i] = digits[v & 15];
    return p + 8;
}

/*
 * Row `row` of day `day`: its TSV line ('\n' included) at p, which has
 * room for m->max_line bytes; returns the line's end. *logit gets the
 * planted model's logit, *label the drawn click.
 */
static char *write_row(const model_t *m, uint32_t day, uint64_t row, char *p, double *logit, int *label)
{
    row_rng_t r;
    row_rng_init(&r, m->key, day, row);
    char *label_at = p++;
    double z = m->bias;
    for (int k = 0; k < DENSE; k++) {
        *p++ = '\t';
        if (row_rng_uniform(&r) < erase_synth_dense_missing[k])
            continue;
        double t = erase_synth_dense_mu[k] + erase_synth_dense_sd[k] * row_rng_normal(&r);
        t = t < 0 ? 0 : t > DENSE_MAX_LOG ? DENSE_MAX_LOG : t;
        double x = floor(expm1(t));
        p = put_uint(p, (uint64_t)x);
        z += m->dense_weight[k] * log1p(x);
    }
    for (int f = 0; f < FIELDS; f++) {
        *p++ = '\t';
        if (row_rng_uniform(&r) < erase_synth_sparse_missing[f])
            continue;
        int h = m->o->hotness[f];
        if (m->o->hotness_uniform && h > 1)
            h = 1 + (int)(row_rng_uniform(&r) * h);
        double w = 0;
        for (int i = 0; i < h; i++) {
            int64_t k = zipf_draw(&m->zipf[f], &r);
            if (i)
                *p++ = ',';
            p = put_hex8(p, rank_id(m, f, k));
            w += rank_weight(m, f, k);
        }
        z += w / h;
    }
    *p++ = '\n';
    int y = row_rng_uniform(&r) < erase_synth_sigmoid(z);
    *label_at = (char)('0' + y);
    *logit = z;
    *label = y;
    return p;
}

static erase_status_t model_make(const erase_synth_days_options_t *o, model_t *m)
{
    memset(m, 0, sizeof *m);
    m->o = o;
    m->key = seed_stream(o->seed, 1, 0);
    size_t line = 1 + (size_t)DENSE * 9 + 1; /* label, 13 tabs and counts of at most 8 digits, '\n' */
    for (int f = 0; f < FIELDS; f++) {
        int64_t v = llround(o->scale * (double)criteo_1tb_rows[f]);
        m->vocab[f] = v < 2 ? 2 : v;
        zipf_init(&m->zipf[f], m->vocab[f], o->zipf_s);
        m->id_salt[f] = (uint32_t)seed_stream(o->seed, 2, (uint64_t)f);
        m->weight_salt[f] = seed_stream(o->seed, 3, (uint64_t)f);
        line += 1 + (size_t)o->hotness[f] * 9; /* a tab, ids of 8 digits and commas */
    }
    m->max_line = line;
    uint64_t s = seed_stream(o->seed, 4, 0);
    for (int k = 0; k < DENSE; k++)
        m->dense_weight[k] = o->dense_signal * erase_rng_normal(&s);
    double *z = malloc(sizeof(double) * PILOT_ROWS);
    char *text = malloc(m->max_line);
    if (!z || !text) {
        free(z);
        free(text);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the pilot rows");
    }
    for (int i = 0; i < PILOT_ROWS; i++) {
        int y;
        write_row(m, PILOT_DAY, (uint64_t)i, text, &z[i], &y);
    }
    m->bias = erase_synth_bias_for_rate(z, PILOT_ROWS, o->base_rate);
    free(z);
    free(text);
    return ERASE_OK;
}

/* ---- output: a plain or gzip file written by blocks ---- */

typedef struct {
    int fd;
    const char *path;
    int gzip;
    z_stream z;
    int z_open;
    unsigned char *zbuf;
    int64_t bytes; /* written to the file */
} sink_t;

enum { ZBUF = 1 << 18 };

static erase_status_t write_all(sink_t *k, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(k->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return ERASE_ERROR(ERASE_ERR_IO, "%s: write failed: %s", k->path, strerror(errno));
        p += w;
        n -= (size_t)w;
        k->bytes += w;
    }
    return ERASE_OK;
}

static erase_status_t sink_open(sink_t *k, const char *path, int gzip, int level)
{
    memset(k, 0, sizeof *k);
    k->path = path;
    k->gzip = gzip;
    k->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (k->fd < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    if (!gzip)
        return ERASE_OK;
    k->zbuf = malloc(ZBUF);
    /* windowBits 15 + 16: a gzip member, header with no name and time 0 */
    if (!k->zbuf || deflateInit2(&k->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the gzip stream", path);
    k->z_open = 1;
    return ERASE_OK;
}

static erase_status_t sink_deflate(sink_t *k, const char *data, size_t n, int flush)
{
    k->z.next_in = (unsigned char *)(uintptr_t)data;
    k->z.avail_in = (uInt)n;
    int rc;
    do {
        k->z.next_out = k->zbuf;
        k->z.avail_out = ZBUF;
        rc = deflate(&k->z, flush);
        if (rc == Z_STREAM_ERROR)
            return ERASE_ERROR(ERASE_ERR_IO, "%s: deflate failed", k->path);
        ERASE_CHECK(write_all(k, k->zbuf, ZBUF - k->z.avail_out));
    } while (k->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    return ERASE_OK;
}

/* n bytes (n < 2^31 with gzip) */
static erase_status_t sink_write(sink_t *k, const char *data, size_t n)
{
    return k->gzip ? sink_deflate(k, data, n, Z_NO_FLUSH) : write_all(k, data, n);
}

/* Finish (when st is ERASE_OK) and close; returns st or the first error. */
static erase_status_t sink_close(sink_t *k, erase_status_t st)
{
    if (st == ERASE_OK && k->z_open)
        st = sink_deflate(k, NULL, 0, Z_FINISH);
    if (k->z_open)
        deflateEnd(&k->z);
    free(k->zbuf);
    if (k->fd >= 0 && close(k->fd) != 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", k->path, strerror(errno));
    k->fd = -1;
    return st;
}

/* ---- the work: pieces of days ---- */

typedef struct {
    int64_t per_day;   /* pieces of one day */
    int64_t total;     /* of all days */
    int64_t *rows, *clicks, *bytes; /* [total], filled by the piece's rank, then summed over ranks */
    double *loss;      /* [total] sum of the planted model's log loss */
} plan_t;

static void piece_path(char *out, size_t cap, const erase_synth_days_options_t *o, int64_t day, int64_t part)
{
    snprintf(out, cap, "%s/.day_%" PRId64 ".tsv%s.part-%06" PRId64, o->out_dir, day, o->gzip ? ".gz" : "", part);
}

static void day_path(char *out, size_t cap, const erase_synth_days_options_t *o, int64_t day, int temp)
{
    snprintf(out, cap, "%s/%sday_%" PRId64 ".tsv%s%s", o->out_dir, temp ? "." : "", day, o->gzip ? ".gz" : "",
             temp ? ".tmp" : "");
}

typedef struct {
    double t0, last;      /* start, last progress line */
    int64_t done, todo;   /* rows of this rank */
    int ranks;
} progress_t;

static void progress_line(const erase_synth_days_options_t *o, progress_t *pr, int64_t day)
{
    double now = erase_now_s();
    if (!o->progress || now - pr->last < 1.0)
        return;
    pr->last = now;
    double rate = (double)pr->done / (now - pr->t0);
    double eta = rate > 0 ? (double)(pr->todo - pr->done) / rate : 0;
    fprintf(o->progress,
            "erase-convert synth: day_%" PRId64 ": rank 0 of %d: %" PRId64 " of %" PRId64 " rows (%.0f%%), "
            "%.0f rows/s, ETA %.0f s\n",
            day, pr->ranks, pr->done, pr->todo, 100.0 * (double)pr->done / (double)pr->todo, rate, eta);
    fflush(o->progress);
}

static erase_status_t write_piece(const model_t *m, plan_t *plan, int64_t p, char *text, progress_t *pr, int rank)
{
    const erase_synth_days_options_t *o = m->o;
    int64_t d = p / plan->per_day, part = p % plan->per_day;
    int64_t first = part * o->piece_rows;
    int64_t n = o->rows - first < o->piece_rows ? o->rows - first : o->piece_rows;
    char path[4200];
    piece_path(path, sizeof path, o, o->first_day + d, part);
    sink_t k;
    erase_status_t st = sink_open(&k, path, o->gzip, o->gzip_level);
    char *end = text;
    int64_t clicks = 0;
    double loss = 0;
    for (int64_t i = 0; st == ERASE_OK && i < n; i++) {
        double logit;
        int y;
        end = write_row(m, (uint32_t)(o->first_day + d), (uint64_t)(first + i), end, &logit, &y);
        clicks += y;
        loss += erase_synth_softplus(y ? -logit : logit);
        if (end - text >= FLUSH_BYTES || i == n - 1) {
            st = sink_write(&k, text, (size_t)(end - text));
            end = text;
        }
        if ((i & 4095) == 4095 || i == n - 1) {
            pr->done += (i & 4095) + 1;
            if (o->cancel && *o->cancel)
                st = ERASE_ERROR(ERASE_ERR_STATE, "interrupted in %s after %" PRId64 " rows", path, i + 1);
            if (rank == 0)
                progress_line(o, pr, o->first_day + d);
        }
    }
    st = sink_close(&k, st);
    plan->rows[p] = n;
    plan->clicks[p] = clicks;
    plan->loss[p] = loss;
    plan->bytes[p] = k.bytes;
    return st;
}

/* Append the file at `from` to the open file `to_fd` (`to` its name). */
static erase_status_t append_file(int to_fd, const char *to, const char *from)
{
    int fd = open(from, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", from, strerror(errno));
    erase_status_t st = ERASE_OK;
    for (;;) {
        ssize_t n = copy_file_range(fd, NULL, to_fd, NULL, 1 << 30, 0);
        if (n == 0)
            break;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: appending %s failed: %s", to, from, strerror(errno));
            break;
        }
        /* no copy_file_range here: copy by reads and writes */
        static char buf[1 << 16];
        sink_t k = { .fd = to_fd, .path = to };
        ssize_t r;
        while (st == ERASE_OK && (r = read(fd, buf, sizeof buf)) != 0) {
            if (r < 0 && errno == EINTR)
                continue;
            st = r < 0 ? ERASE_ERROR(ERASE_ERR_IO, "%s: read failed: %s", from, strerror(errno))
                       : write_all(&k, buf, (size_t)r);
        }
        break;
    }
    close(fd);
    return st;
}

/* Day d's pieces, in order, into its temporary file, fsynced; the pieces removed. */
static erase_status_t assemble_day(const erase_synth_days_options_t *o, const plan_t *plan, int64_t d)
{
    char temp[4200], part[4200];
    day_path(temp, sizeof temp, o, o->first_day + d, 1);
    int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, strerror(errno));
    erase_status_t st = ERASE_OK;
    for (int64_t i = 0; st == ERASE_OK && i < plan->per_day; i++) {
        piece_path(part, sizeof part, o, o->first_day + d, i);
        st = append_file(fd, temp, part);
        if (st == ERASE_OK)
            unlink(part);
    }
    if (st == ERASE_OK && fsync(fd) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", temp, strerror(errno));
    if (close(fd) != 0 && st == ERASE_OK)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, strerror(errno));
    return st;
}

static erase_status_t check_options(const erase_synth_days_options_t *o)
{
    if (!o->out_dir)
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory");
    if (!o->shape || strcmp(o->shape, "criteo-1tb"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--shape: expected criteo-1tb, got '%s'", o->shape ? o->shape : "");
    if (!(o->scale > 0 && o->scale <= 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--scale: expected a value in (0, 1], got %g", o->scale);
    int64_t end;
    if (o->days < 1 || o->first_day < 0 || !erase_add_i64(o->first_day, o->days, &end) || end > MAX_DAY)
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "--days and --first-day: expected days >= 1, first day >= 0 and first day + days <= %d, "
                           "got %" PRId64 " and %" PRId64,
                           MAX_DAY, o->days, o->first_day);
    if (o->rows < 1 || o->piece_rows < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--rows: expected >= 1, got %" PRId64, o->rows);
    if (o->rows / o->piece_rows + 1 > MAX_PIECES / o->days)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--rows %" PRId64 " x --days %" PRId64 ": more than %d pieces of %" PRId64
                           " rows", o->rows, o->days, MAX_PIECES, o->piece_rows);
    for (int f = 0; f < FIELDS; f++)
        if (o->hotness[f] < 1 || o->hotness[f] > ERASE_SYNTH_DAYS_MAX_HOTNESS)
            return ERASE_ERROR(ERASE_ERR_INVALID, "--hotness: C%d: expected 1..%d ids, got %d", f + 1,
                               ERASE_SYNTH_DAYS_MAX_HOTNESS, o->hotness[f]);
    if (o->gzip && (o->gzip_level < 1 || o->gzip_level > 9))
        return ERASE_ERROR(ERASE_ERR_INVALID, "gzip level: expected 1..9, got %d", o->gzip_level);
    if (!(o->base_rate > 0 && o->base_rate < 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--base-rate: expected a value in (0, 1), got %g", o->base_rate);
    if (!(o->signal >= 0 && o->signal <= 10) || !(o->dense_signal >= 0 && o->dense_signal <= 10))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--signal and --dense-signal: expected values in [0, 10], got %g and %g",
                           o->signal, o->dense_signal);
    if (!(o->zipf_s > 0 && o->zipf_s <= 10))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--zipf: expected a value in (0, 10], got %g", o->zipf_s);
    return ERASE_OK;
}

/* Every day file must be absent (or force). */
static erase_status_t check_absent(const erase_synth_days_options_t *o)
{
    for (int64_t d = 0; d < o->days && !o->force; d++) {
        char path[4200];
        day_path(path, sizeof path, o, o->first_day + d, 0);
        if (access(path, F_OK) == 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s exists (--force replaces it)", path);
    }
    return ERASE_OK;
}

/* All ranks agree: ERASE_OK when every rank's st is; else this rank's
 * error, or ERASE_ERR_COMM "another rank failed". */
static erase_status_t agree(MPI_Comm comm, erase_status_t st, const char *stage)
{
    int ok = st == ERASE_OK, all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return ERASE_ERROR(ERASE_ERR_COMM, "MPI_Allreduce failed %s", stage);
    if (st != ERASE_OK || all)
        return st;
    return ERASE_ERROR(ERASE_ERR_COMM, "another rank failed %s (its message names the file)", stage);
}

static erase_status_t plan_make(const erase_synth_days_options_t *o, plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->per_day = (o->rows + o->piece_rows - 1) / o->piece_rows;
    plan->total = plan->per_day * o->days; /* bounded by check_options */
    plan->rows = calloc((size_t)plan->total, sizeof(int64_t));
    plan->clicks = calloc((size_t)plan->total, sizeof(int64_t));
    plan->bytes = calloc((size_t)plan->total, sizeof(int64_t));
    plan->loss = calloc((size_t)plan->total, sizeof(double));
    if (!plan->rows || !plan->clicks || !plan->bytes || !plan->loss)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for %" PRId64 " pieces", plan->total);
    return ERASE_OK;
}

static void plan_free(plan_t *plan)
{
    free(plan->rows);
    free(plan->clicks);
    free(plan->bytes);
    free(plan->loss);
}

/* Sum every piece's figures over the ranks (one rank wrote each: exact),
 * then over the pieces in order, into the summary. */
static erase_status_t plan_total(plan_t *plan, MPI_Comm comm, erase_synth_days_summary_t *s)
{
    int n = (int)plan->total;
    if (MPI_Allreduce(MPI_IN_PLACE, plan->rows, n, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, plan->clicks, n, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, plan->bytes, n, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, plan->loss, n, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
        return ERASE_ERROR(ERASE_ERR_COMM, "MPI_Allreduce of the pieces' figures failed");
    double loss = 0;
    for (int64_t p = 0; p < plan->total; p++) {
        s->rows += plan->rows[p];
        s->clicks += plan->clicks[p];
        s->bytes += plan->bytes[p];
        loss += plan->loss[p];
    }
    double q = (double)s->clicks / (double)s->rows;
    double entropy = q > 0 && q < 1 ? -(q * log(q) + (1 - q) * log(1 - q)) : 0;
    s->base_rate = q;
    s->log_loss = loss / (double)s->rows;
    s->ne = entropy > 0 ? s->log_loss / entropy : INFINITY;
    return ERASE_OK;
}

/* Remove this rank's temporary files (pieces it wrote, days it assembled). */
static void remove_temporaries(const erase_synth_days_options_t *o, const plan_t *plan, int rank, int ranks)
{
    char path[4200];
    for (int64_t p = rank; p < plan->total; p += ranks) {
        piece_path(path, sizeof path, o, o->first_day + p / plan->per_day, p % plan->per_day);
        unlink(path);
    }
    for (int64_t d = rank; d < o->days; d += ranks) {
        day_path(path, sizeof path, o, o->first_day + d, 1);
        unlink(path);
    }
}

/* Rename the days this rank assembled; fsync the directory. */
static erase_status_t publish(const erase_synth_days_options_t *o, int rank, int ranks)
{
    char temp[4200], path[4200];
    for (int64_t d = rank; d < o->days; d += ranks) {
        day_path(temp, sizeof temp, o, o->first_day + d, 1);
        day_path(path, sizeof path, o, o->first_day + d, 0);
        if (rename(temp, path) != 0)
            return ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    }
    if (rank < o->days && erase_fsync_path(o->out_dir, 1) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: fsync failed: %s", o->out_dir, strerror(errno));
    return ERASE_OK;
}

erase_status_t erase_synth_days_write(const erase_synth_days_options_t *o, MPI_Comm comm,
                                      erase_synth_days_summary_t *summary)
{
    erase_synth_days_summary_t local;
    erase_synth_days_summary_t *s = summary ? summary : &local;
    memset(s, 0, sizeof *s);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    s->ranks = ranks;
    double t0 = erase_now_s();
    ERASE_CHECK(check_options(o));
    erase_status_t st = ERASE_OK;
    if (rank == 0 && mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the directory: %s", o->out_dir, strerror(errno));
    if (st == ERASE_OK && rank == 0)
        st = check_absent(o);
    ERASE_CHECK(agree(comm, st, "before writing"));

    model_t *m = malloc(sizeof *m);
    plan_t plan;
    st = m ? model_make(o, m) : ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
    erase_status_t plan_st = plan_make(o, &plan);
    st = st != ERASE_OK ? st : plan_st;
    char *text = NULL;
    if (st == ERASE_OK) {
        text = malloc(FLUSH_BYTES + m->max_line);
        if (!text)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the text buffer");
    }
    double t_rows = erase_now_s(); /* after the pilot: progress rates count rows only */
    progress_t pr = { .t0 = t_rows, .last = t_rows, .ranks = ranks };
    for (int64_t p = rank; p < plan.total; p += ranks)
        pr.todo += o->piece_rows < o->rows - (p % plan.per_day) * o->piece_rows
                       ? o->piece_rows
                       : o->rows - (p % plan.per_day) * o->piece_rows;
    for (int64_t p = rank; st == ERASE_OK && p < plan.total; p += ranks)
        st = write_piece(m, &plan, p, text, &pr, rank);
    st = agree(comm, st, "while writing the pieces");
    for (int64_t d = rank; st == ERASE_OK && d < o->days; d += ranks)
        st = assemble_day(o, &plan, d);
    st = agree(comm, st, "while assembling the days");
    if (st == ERASE_OK)
        st = plan_total(&plan, comm, s);
    st = agree(comm, st, "while summing");
    if (st == ERASE_OK)
        st = publish(o, rank, ranks);
    if (st != ERASE_OK) {
        remove_temporaries(o, &plan, rank, ranks);
        erase_error_trail(__FILE__, __LINE__);
    } else {
        s->days = o->days;
        s->bias = m->bias;
        memcpy(s->vocab, m->vocab, sizeof s->vocab);
    }
    free(text);
    free(m);
    plan_free(&plan);
    s->seconds = erase_now_s() - t0;
    return st;
}

void erase_synth_days_print(const erase_synth_days_summary_t *s, const erase_synth_days_options_t *o, FILE *out)
{
    fprintf(out,
            "wrote %" PRId64 " day%s (day_%" PRId64 " .. day_%" PRId64 ".tsv%s), %" PRId64 " rows, %.1f MB, "
            "in %.2f s on %d rank%s: %.0f rows/s, %.1f MB/s\n",
            s->days, s->days == 1 ? "" : "s", o->first_day, o->first_day + s->days - 1, o->gzip ? ".gz" : "",
            s->rows, (double)s->bytes / 1e6, s->seconds, s->ranks, s->ranks == 1 ? "" : "s",
            s->seconds > 0 ? (double)s->rows / s->seconds : 0.0,
            s->seconds > 0 ? (double)s->bytes / 1e6 / s->seconds : 0.0);
    fprintf(out, "vocabulary (scale %g of Criteo 1TB's):", o->scale);
    for (int f = 0; f < FIELDS; f++)
        fprintf(out, " %" PRId64, s->vocab[f]);
    fprintf(out, "\nhotness:");
    for (int f = 0; f < FIELDS; f++)
        fprintf(out, " %d", o->hotness[f]);
    fprintf(out, o->hotness_uniform ? " (counts uniform in 1..h)" : " (fixed counts)");
    fprintf(out,
            "\nplanted model: bias %.6f, Zipf exponent %g; on these rows: base rate %.6f, log loss %.6f, NE %.6f\n",
            s->bias, o->zipf_s, s->base_rate, s->log_loss, s->ne);
}

#include "io/synth.h"

#include "config.h"
#include "io/ctr_dataset_write.h"
#include "io/h5_util.h"
#include "io/synth_common.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DENSE ERASE_CTR_SHARD_DENSE
#define FIELDS ERASE_CTR_SHARD_FIELDS
#define BATCH 65536        /* rows generated per append */
#define PILOT_ROWS 20000   /* rows drawn to calibrate the bias */

/* Criteo Kaggle (train.txt) cardinalities of C1..C26. */
static const int64_t criteo_vocab[FIELDS] = {
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
    27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
};
typedef struct {
    int64_t vocab[FIELDS];
    double *cdf[FIELDS];     /* [V_f] cumulative popularity, last = 1 */
    uint32_t *id[FIELDS];    /* [V_f] id of each rank */
    double *weight[FIELDS];  /* [V_f] */
    double dense_weight[DENSE];
    double bias;
} planted_t;

erase_synth_options_t erase_synth_options_default(void)
{
    erase_synth_options_t o = { 0 };
    o.shard_rows = 1 << 20;
    o.write = erase_ctr_write_options_default();
    o.seed = 1;
    o.base_rate = 0.25;
    o.signal = 0.3;
    o.dense_signal = 0.2;
    o.zipf_s = 1.1;
    o.max_vocab = 100000;
    return o;
}

/* Independent SplitMix64 stream `what`/`index` of the seed. */
static uint64_t stream(uint64_t seed, uint64_t what, uint64_t index)
{
    return erase_rng_stream(0xbb67ae8584caa73bULL, seed, what, index);
}

static inline double uniform(uint64_t *s) /* [0, 1) with 53 bits */
{
    return (double)(erase_rng_next(s) >> 11) * 0x1p-53;
}

static inline double gauss(uint64_t *s) /* Box-Muller */
{
    double u = uniform(s), v = uniform(s);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

static void planted_free(planted_t *p)
{
    for (int f = 0; f < FIELDS; f++) {
        free(p->cdf[f]);
        free(p->id[f]);
        free(p->weight[f]);
    }
}

static erase_status_t planted_make(const erase_synth_options_t *o, planted_t *p)
{
    memset(p, 0, sizeof *p);
    uint32_t salt = (uint32_t)stream(o->seed, 5, 0);
    for (int f = 0; f < FIELDS; f++) {
        int64_t V = criteo_vocab[f] < o->max_vocab ? criteo_vocab[f] : o->max_vocab;
        p->vocab[f] = V;
        p->cdf[f] = malloc(sizeof(double) * (size_t)V);
        p->id[f] = malloc(sizeof(uint32_t) * (size_t)V);
        p->weight[f] = malloc(sizeof(double) * (size_t)V);
        if (!p->cdf[f] || !p->id[f] || !p->weight[f])
            return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the planted model (%" PRId64 " tokens)", V);
        uint64_t s = stream(o->seed, 1, (uint64_t)f);
        double total = 0;
        for (int64_t j = 0; j < V; j++) {
            total += pow((double)(j + 1), -o->zipf_s);
            p->cdf[f][j] = total;
            uint32_t id = erase_synth_fmix32(((uint32_t)(f + 1) << 24 | (uint32_t)j) ^ salt);
            p->id[f][j] = id == ERASE_CTR_SPARSE_MISSING ? ERASE_CTR_SPARSE_FFFFFFFF : id;
            p->weight[f][j] = o->signal * gauss(&s);
        }
        for (int64_t j = 0; j < V; j++)
            p->cdf[f][j] /= total;
        p->cdf[f][V - 1] = 1.0;
    }
    uint64_t s = stream(o->seed, 2, 0);
    for (int k = 0; k < DENSE; k++)
        p->dense_weight[k] = o->dense_signal * gauss(&s);
    return ERASE_OK;
}

/* Rank drawn from field f's Zipf law. */
static inline int64_t zipf_rank(const planted_t *p, int f, double u)
{
    const double *c = p->cdf[f];
    int64_t lo = 0, hi = p->vocab[f] - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (c[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* One row's features (raw layout) and its logit without the bias. */
static double draw_row(const planted_t *p, uint64_t *s, float *dense, uint32_t *sparse)
{
    double z = 0;
    for (int k = 0; k < DENSE; k++) {
        if (uniform(s) < erase_synth_dense_missing[k]) {
            dense[k] = NAN;
            continue;
        }
        double t = erase_synth_dense_mu[k] + erase_synth_dense_sd[k] * gauss(s);
        t = t < 0 ? 0 : t > 16.6 ? 16.6 : t; /* counts below 2^24: exact in float32 */
        float x = (float)floor(expm1(t));
        dense[k] = x;
        z += p->dense_weight[k] * log1p((double)x);
    }
    for (int f = 0; f < FIELDS; f++) {
        if (uniform(s) < erase_synth_sparse_missing[f]) {
            sparse[f] = ERASE_CTR_SPARSE_MISSING;
            continue;
        }
        int64_t j = zipf_rank(p, f, uniform(s));
        sparse[f] = p->id[f][j];
        z += p->weight[f][j];
    }
    return z;
}

/* The bias giving a mean click probability of base_rate on a pilot sample. */
static double calibrate(const planted_t *p, const erase_synth_options_t *o)
{
    double *z = malloc(sizeof(double) * PILOT_ROWS);
    if (!z)
        return log(o->base_rate / (1 - o->base_rate));
    uint64_t s = stream(o->seed, 3, 0);
    float dense[DENSE];
    uint32_t sparse[FIELDS];
    for (int i = 0; i < PILOT_ROWS; i++)
        z[i] = draw_row(p, &s, dense, sparse);
    double bias = erase_synth_bias_for_rate(z, PILOT_ROWS, o->base_rate);
    free(z);
    return bias;
}

/* A float64 or uint32 or int64 1-D dataset; the lock is held. */
static int write_vector(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *data, size_t n)
{
    return erase_h5_write_vector(loc, name, file_type, mem_type, data, n);
}

/* The planted model's file; the lock is held. Returns 0 or -1. */
static int write_planted_file(hid_t f, const planted_t *p, const erase_synth_options_t *o,
                              const erase_synth_summary_t *s)
{
    double attrs[] = { p->bias, o->signal, o->dense_signal, o->zipf_s, o->base_rate, s->ne, s->log_loss };
    const char *names[] = { "bias", "signal", "dense_signal", "zipf_s", "base_rate", "ne", "log_loss" };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (erase_h5_attr_write_array(f, names[i], H5T_NATIVE_DOUBLE, &attrs[i], 1))
            return -1;
    if (erase_h5_attr_write_int64(f, "seed", (int64_t)o->seed) || erase_h5_attr_write_int64(f, "rows", s->rows) ||
        erase_h5_attr_write_string(f, "description",
                                   "planted logistic model of erase-convert synth (io/synth.h): "
                                   "logit = bias + sum_k dense/weight[k] * log1p(I_k) (0 if missing) + "
                                   "sum_f sparse/C<f>/weight[rank of the token] (0 if missing)") ||
        erase_h5_attr_write_string(f, "converter", "erase-convert synth " PACKAGE_VERSION))
        return -1;
    hid_t g = H5Gcreate2(f, "dense", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        return -1;
    int rc = write_vector(g, "weight", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, p->dense_weight, DENSE) ||
             write_vector(g, "mu", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, erase_synth_dense_mu, DENSE) ||
             write_vector(g, "sd", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, erase_synth_dense_sd, DENSE) ||
             write_vector(g, "missing", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, erase_synth_dense_missing, DENSE);
    H5Gclose(g);
    if (rc)
        return -1;
    g = H5Gcreate2(f, "sparse", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        return -1;
    rc = write_vector(g, "vocab", H5T_STD_I64LE, H5T_NATIVE_INT64, p->vocab, FIELDS) ||
         write_vector(g, "missing", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, erase_synth_sparse_missing, FIELDS);
    for (int k = 0; k < FIELDS && !rc; k++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", k + 1);
        hid_t c = H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        rc = c < 0 ||
             write_vector(c, "id", H5T_STD_U32LE, H5T_NATIVE_UINT32, p->id[k], (size_t)p->vocab[k]) ||
             write_vector(c, "weight", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, p->weight[k], (size_t)p->vocab[k]);
        if (c >= 0)
            H5Gclose(c);
    }
    H5Gclose(g);
    if (rc)
        return -1;
    return erase_h5_attr_write_string(f, "format", ERASE_SYNTH_FORMAT);
}

/* Write OUT/planted.h5 under a temporary name, then rename. */
static erase_status_t write_planted(const erase_synth_options_t *o, const planted_t *p, const erase_synth_summary_t *s)
{
    char path[4096], temp[4200];
    snprintf(path, sizeof path, "%s/%s", o->out_dir, ERASE_SYNTH_PLANTED_NAME);
    snprintf(temp, sizeof temp, "%s.tmp", path);
    erase_status_t st = ERASE_OK;
    char detail[256];
    erase_h5_enter();
    hid_t f = H5Fcreate(temp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create: %s", temp, erase_h5_detail(detail, sizeof detail));
    } else {
        if (write_planted_file(f, p, o, s) != 0)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: writing the planted model failed: %s", temp,
                             erase_h5_detail(detail, sizeof detail));
        if (H5Fclose(f) < 0 && st == ERASE_OK)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: close failed: %s", temp, erase_h5_detail(detail, sizeof detail));
    }
    erase_h5_leave();
    if (st == ERASE_OK && rename(temp, path) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
    if (st != ERASE_OK)
        unlink(temp);
    return st;
}

static erase_status_t check_options(const erase_synth_options_t *o)
{
    if (o->rows < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "rows must be >= 1, got %" PRId64, o->rows);
    if (!(o->base_rate > 0 && o->base_rate < 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "base rate must be in (0, 1), got %g", o->base_rate);
    if (!(o->signal >= 0 && o->signal <= 10) || !(o->dense_signal >= 0 && o->dense_signal <= 10))
        return ERASE_ERROR(ERASE_ERR_INVALID, "signal and dense signal must be in [0, 10], got %g and %g",
                           o->signal, o->dense_signal);
    if (!(o->zipf_s > 0 && o->zipf_s <= 10))
        return ERASE_ERROR(ERASE_ERR_INVALID, "Zipf exponent must be in (0, 10], got %g", o->zipf_s);
    if (o->max_vocab < 1 || o->max_vocab > (1 << 24))
        return ERASE_ERROR(ERASE_ERR_INVALID, "max vocabulary must be in 1..16777216, got %" PRId64, o->max_vocab);
    return ERASE_OK;
}

erase_status_t erase_synth_write(const erase_synth_options_t *o, erase_synth_summary_t *summary)
{
    erase_synth_summary_t local;
    erase_synth_summary_t *sm = summary ? summary : &local;
    memset(sm, 0, sizeof *sm);
    erase_ctr_stats_init(&sm->stats);
    ERASE_CHECK(check_options(o));
    double t0 = erase_now_s(), last = t0;
    planted_t p;
    erase_status_t st = planted_make(o, &p);
    erase_ctr_dataset_writer_t *w = NULL;
    if (st == ERASE_OK) {
        p.bias = calibrate(&p, o);
        st = erase_ctr_dataset_writer_open(o->out_dir, o->shard_rows, &o->write, o->force, &w);
    }
    uint8_t *label = malloc(BATCH);
    float *dense = malloc(sizeof(float) * BATCH * DENSE);
    uint32_t *sparse = malloc(sizeof(uint32_t) * BATCH * FIELDS);
    if (st == ERASE_OK && (!label || !dense || !sparse))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the row buffers");
    char source[128];
    snprintf(source, sizeof source, "synthetic: planted logistic model, seed %" PRIu64 " (%s)", o->seed,
             ERASE_SYNTH_PLANTED_NAME);
    uint64_t s = stream(o->seed, 4, 0);
    double loss = 0;
    for (int64_t done = 0; st == ERASE_OK && done < o->rows;) {
        int64_t n = o->rows - done < BATCH ? o->rows - done : BATCH;
        for (int64_t i = 0; i < n; i++) {
            double logit = p.bias + draw_row(&p, &s, dense + i * DENSE, sparse + i * FIELDS);
            int y = uniform(&s) < erase_synth_sigmoid(logit);
            label[i] = (uint8_t)y;
            loss += erase_synth_softplus(y ? -logit : logit);
        }
        erase_ctr_stats_add(&sm->stats, n, label, dense, sparse);
        st = erase_ctr_dataset_writer_append(w, n, label, dense, sparse, source);
        done += n;
        if (o->cancel && *o->cancel)
            st = ERASE_ERROR(ERASE_ERR_STATE, "interrupted after %" PRId64 " rows", done);
        double now = erase_now_s();
        if (o->progress && now - last >= 1.0) {
            last = now;
            fprintf(o->progress, "erase-convert synth: %" PRId64 " of %" PRId64 " rows (%.0f%%), %.0f rows/s\n", done,
                    o->rows, 100.0 * (double)done / (double)o->rows, (double)done / (now - t0));
            fflush(o->progress);
        }
    }
    if (st == ERASE_OK) {
        sm->rows = sm->stats.rows;
        sm->clicks = sm->stats.clicks;
        sm->bias = p.bias;
        double q = erase_ctr_stats_base_rate(&sm->stats);
        sm->base_rate = q;
        sm->log_loss = loss / (double)sm->rows;
        sm->entropy = q > 0 && q < 1 ? -(q * log(q) + (1 - q) * log(1 - q)) : 0;
        sm->ne = sm->entropy > 0 ? sm->log_loss / sm->entropy : INFINITY;
        st = write_planted(o, &p, sm);
    }
    if (st == ERASE_OK) {
        st = erase_ctr_dataset_writer_commit(w);
        if (st != ERASE_OK) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", o->out_dir, ERASE_SYNTH_PLANTED_NAME);
            unlink(path);
        }
    }
    if (st == ERASE_OK)
        sm->shards = erase_ctr_dataset_writer_shards(w);
    else
        erase_error_trail(__FILE__, __LINE__);
    erase_ctr_dataset_writer_free(w);
    planted_free(&p);
    free(label);
    free(dense);
    free(sparse);
    sm->seconds = erase_now_s() - t0;
    return st;
}

void erase_synth_print(const erase_synth_summary_t *s, FILE *out)
{
    fprintf(out, "wrote %" PRId64 " rows in %d shard%s in %.2f s: %.0f rows/s\n", s->rows, s->shards,
            s->shards == 1 ? "" : "s", s->seconds, s->seconds > 0 ? (double)s->rows / s->seconds : 0.0);
    fprintf(out, "planted model: bias %.6f; on these rows: base rate %.6f, log loss %.6f, "
                 "base-rate entropy %.6f, NE %.6f\n",
            s->bias, s->base_rate, s->log_loss, s->entropy, s->ne);
    erase_ctr_stats_print(&s->stats, out, "");
}

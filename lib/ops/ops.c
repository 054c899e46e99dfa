/*
 * The ops of lib/ops/ops.h: each validates its arguments here, once for
 * every backend (impossible shapes are ERASE_ERR_INVALID at enqueue and
 * enqueue nothing), then calls the implementation of the stream's device
 * kind from the tables of lib/ops/ops_impl.h (erase_ops_cpu, erase_ops_cuda).
 */
#include "lib/ops/ops_impl.h"

#include <limits.h>
#include <string.h>

#ifdef HAVE_CUDA
#include "lib/device/cuda/cuda.h"
#endif

#define REQUIRE(cond, ...)                                     \
    do {                                                       \
        if (!(cond))                                           \
            return ERASE_ERROR(ERASE_ERR_INVALID, __VA_ARGS__); \
    } while (0)

/*
 * The table of implementations for the device of stream `s` into *impl.
 * Errors: ERASE_ERR_INVALID (NULL stream), ERASE_ERR_UNSUPPORTED (a device
 * kind this build has no ops for).
 */
static erase_status_t ops_impl(const erase_stream_t *s, const char *op, const erase_ops_impl_t **impl)
{
    if (!s)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: NULL stream", op);
    erase_device_kind_t kind = erase_device_kind(erase_stream_device(s));
    switch (kind) {
    case ERASE_DEVICE_CPU:
        *impl = &erase_ops_cpu;
        return ERASE_OK;
#ifdef HAVE_CUDA
    case ERASE_DEVICE_CUDA:
        /* the launchers call <<<>>> on the stream directly: the stream's
         * device must be current on this thread (the scheduler thread,
         * the data reader's thread), or a rank on GPU 1 launches into a
         * stream of another device (cudaErrorInvalidResourceHandle) */
        ERASE_CHECK(erase_cuda_make_current(erase_stream_device(s)));
        *impl = &erase_ops_cuda;
        return ERASE_OK;
#endif
    default:
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: this build has no ops for device kind %d", op,
                           (int)kind);
    }
}

/* Run member `op` of the stream's implementation table with the op's
 * arguments; a failure gets this file's breadcrumb. */
#define DISPATCH(s, op, ...)                                      \
    do {                                                          \
        const erase_ops_impl_t *impl_;                            \
        ERASE_CHECK(ops_impl((s), #op, &impl_));                  \
        if (!impl_->op)                                           \
            return ERASE_ERROR(ERASE_ERR_UNSUPPORTED,             \
                               "%s: not implemented on this device", #op); \
        ERASE_CHECK(impl_->op((s), __VA_ARGS__));                 \
        return ERASE_OK;                                          \
    } while (0)

/* ---- linear ------------------------------------------------------------- */

erase_status_t erase_linear_forward(erase_stream_t *s, int batch, int in, int out, const float *x,
                                    const float *w, const float *b, float *y)
{
    REQUIRE(batch >= 0 && in >= 0 && out > 0, "linear forward: bad shape batch=%d in=%d out=%d", batch, in, out);
    if (batch == 0)
        return ERASE_OK;
    DISPATCH(s, linear_forward, batch, in, out, x, w, b, y);
}

erase_status_t erase_linear_backward(erase_stream_t *s, int batch, int in, int out,
                                     const float *x, const float *w, const float *dy, float *dx,
                                     float *dw, float *db)
{
    REQUIRE(batch >= 0 && in > 0 && out > 0, "linear backward: bad shape batch=%d in=%d out=%d", batch, in, out);
    DISPATCH(s, linear_backward, batch, in, out, x, w, dy, dx, dw, db);
}

/* ---- elementwise -------------------------------------------------------- */

erase_status_t erase_relu_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    DISPATCH(s, relu_forward, n, x, y);
}

erase_status_t erase_relu_backward(erase_stream_t *s, size_t n, const float *y, const float *dy,
                                   float *dx)
{
    DISPATCH(s, relu_backward, n, y, dy, dx);
}

erase_status_t erase_gelu_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    DISPATCH(s, gelu_forward, n, x, y);
}

erase_status_t erase_gelu_backward(erase_stream_t *s, size_t n, const float *x, const float *dy,
                                   float *dx)
{
    DISPATCH(s, gelu_backward, n, x, dy, dx);
}

erase_status_t erase_dropout(erase_stream_t *s, size_t n, float p, uint64_t seed, uint64_t offset,
                             const float *x, float *y)
{
    REQUIRE(p >= 0.0f && p < 1.0f, "dropout: probability %g outside [0, 1)", (double)p);
    DISPATCH(s, dropout, n, p, seed, offset, x, y);
}

erase_status_t erase_axpy(erase_stream_t *s, size_t n, float alpha, const float *x, float *y)
{
    DISPATCH(s, axpy, n, alpha, x, y);
}

/* ---- concat ------------------------------------------------------------- */

/* Shared by both directions: 1 to ERASE_CONCAT_MAX inputs of positive width. */
static erase_status_t concat_check(int n, const int *widths)
{
    REQUIRE(n >= 1 && n <= ERASE_CONCAT_MAX, "concat: %d inputs (1 to %d)", n, ERASE_CONCAT_MAX);
    for (int i = 0; i < n; i++)
        REQUIRE(widths[i] > 0, "concat: input %d has width %d", i, widths[i]);
    return ERASE_OK;
}

erase_status_t erase_concat_forward(erase_stream_t *s, int batch, int n, const int *widths,
                                    const float *const *xs, float *y)
{
    ERASE_CHECK(concat_check(n, widths));
    REQUIRE(batch >= 0, "concat forward: batch %d", batch);
    DISPATCH(s, concat_forward, batch, n, widths, xs, y);
}

erase_status_t erase_concat_backward(erase_stream_t *s, int batch, int n, const int *widths,
                                     const float *dy, float *const *dxs)
{
    ERASE_CHECK(concat_check(n, widths));
    REQUIRE(batch >= 0, "concat backward: batch %d", batch);
    DISPATCH(s, concat_backward, batch, n, widths, dy, dxs);
}

/* ---- embeddings ---------------------------------------------------------- */

/* Shared by both directions: field count, shape, and tables of >= 2 rows
 * (`rows` is a host array). */
static erase_status_t embedding_check(int batch, int fields, int dim, const uint32_t *rows)
{
    REQUIRE(fields >= 1 && fields <= ERASE_FIELDS_MAX, "embedding: %d fields (1 to %d)", fields,
            ERASE_FIELDS_MAX);
    REQUIRE(batch >= 0 && dim > 0, "embedding: bad shape batch=%d dim=%d", batch, dim);
    for (int f = 0; f < fields; f++)
        REQUIRE(rows[f] >= 2, "embedding: table %d has %u rows (at least 2: one for missing ids)",
                f, rows[f]);
    return ERASE_OK;
}

/* The one-hot layout of `fields` fields: a column each, no lengths. */
static erase_bag_t one_hot(int fields)
{
    erase_bag_t bag;
    memset(&bag, 0, sizeof bag);
    for (int f = 0; f < fields && f < ERASE_FIELDS_MAX; f++)
        bag.hotness[f] = 1;
    return bag;
}

int erase_bag_columns(const erase_bag_t *bag, int fields)
{
    int h = 0;
    for (int f = 0; f < fields; f++)
        h += bag ? bag->hotness[f] : 1;
    return h;
}

/* A bag layout's hotness (each >= 1, H * batch an int). */
static erase_status_t bag_check(const char *op, int batch, int fields, const erase_bag_t *bag)
{
    int64_t h = 0;
    for (int f = 0; f < fields; f++) {
        REQUIRE(bag->hotness[f] >= 1, "%s: field %d has hotness %d (at least 1)", op, f, bag->hotness[f]);
        h += bag->hotness[f];
    }
    REQUIRE(h * (batch > 1 ? batch : 1) <= INT_MAX, "%s: %d samples x %lld ids are more than %d", op, batch,
            (long long)h, INT_MAX);
    return ERASE_OK;
}

erase_status_t erase_embedding_bag_forward(erase_stream_t *s, int batch, int fields, int dim,
                                           const uint32_t *rows, const erase_bag_t *bag,
                                           const uint32_t *ids, const float *const *tables, float *out)
{
    ERASE_CHECK(embedding_check(batch, fields, dim, rows));
    erase_bag_t one = one_hot(fields);
    bag = bag ? bag : &one;
    ERASE_CHECK(bag_check("embedding bag", batch, fields, bag));
    DISPATCH(s, embedding_forward, batch, fields, dim, rows, bag, ids, tables, out);
}

erase_status_t erase_embedding_bag_backward(erase_stream_t *s, int batch, int fields, int dim,
                                            const uint32_t *rows, const erase_bag_t *bag,
                                            const uint32_t *ids, const float *dout,
                                            uint32_t *const *grad_rows, float *const *grad_values,
                                            int *count)
{
    ERASE_CHECK(embedding_check(batch, fields, dim, rows));
    erase_bag_t one = one_hot(fields);
    bag = bag ? bag : &one;
    ERASE_CHECK(bag_check("embedding bag backward", batch, fields, bag));
    DISPATCH(s, embedding_backward, batch, fields, dim, rows, bag, ids, dout, grad_rows, grad_values, count);
}

erase_status_t erase_embedding_pool(erase_stream_t *s, int batch, int fields, int dim, const erase_bag_t *bag,
                                    const float *vecs, float *out)
{
    REQUIRE(fields >= 1 && fields <= ERASE_FIELDS_MAX && batch >= 0 && dim > 0 && bag,
            "embedding pool: bad shape batch=%d fields=%d dim=%d or NULL layout", batch, fields, dim);
    ERASE_CHECK(bag_check("embedding pool", batch, fields, bag));
    DISPATCH(s, embedding_pool, batch, fields, dim, bag, vecs, out);
}

erase_status_t erase_embedding_forward(erase_stream_t *s, int batch, int fields, int dim,
                                       const uint32_t *rows, const uint32_t *ids,
                                       const float *const *tables, float *out)
{
    return erase_embedding_bag_forward(s, batch, fields, dim, rows, NULL, ids, tables, out);
}

erase_status_t erase_embedding_backward(erase_stream_t *s, int batch, int fields, int dim,
                                        const uint32_t *rows, const uint32_t *ids,
                                        const float *dout, uint32_t *const *grad_rows,
                                        float *const *grad_values, int *count)
{
    return erase_embedding_bag_backward(s, batch, fields, dim, rows, NULL, ids, dout, grad_rows, grad_values,
                                        count);
}

/* ---- interaction --------------------------------------------------------- */

erase_status_t erase_interaction_forward(erase_stream_t *s, int batch, int nvec, int dim,
                                         const float *dense, const float *emb, float *out)
{
    REQUIRE(nvec >= 2 && dim > 0 && batch >= 0, "interaction: bad shape batch=%d nvec=%d dim=%d", batch, nvec, dim);
    DISPATCH(s, interaction_forward, batch, nvec, dim, dense, emb, out);
}

erase_status_t erase_interaction_backward(erase_stream_t *s, int batch, int nvec, int dim,
                                          const float *dense, const float *emb, const float *dout,
                                          float *ddense, float *demb)
{
    REQUIRE(nvec >= 2 && dim > 0 && batch >= 0, "interaction: bad shape batch=%d nvec=%d dim=%d", batch, nvec, dim);
    DISPATCH(s, interaction_backward, batch, nvec, dim, dense, emb, dout, ddense, demb);
}

/* ---- losses ------------------------------------------------------------- */

erase_status_t erase_bce_with_logits(erase_stream_t *s, int batch, const float *z, const float *y,
                                     float weight, float *loss, float *dz)
{
    REQUIRE(batch >= 0 && loss, "bce: bad batch %d or NULL loss", batch);
    DISPATCH(s, bce_with_logits, batch, z, y, weight, loss, dz);
}

erase_status_t erase_softmax_xent(erase_stream_t *s, int batch, int classes, const float *z,
                                  const int32_t *labels, float weight, float *loss, float *dz)
{
    REQUIRE(batch >= 0 && classes >= 2 && loss, "softmax cross-entropy: bad batch %d, classes %d or NULL loss", batch, classes);
    DISPATCH(s, softmax_xent, batch, classes, z, labels, weight, loss, dz);
}

/* ---- layer norm ---------------------------------------------------------- */

erase_status_t erase_layernorm_forward(erase_stream_t *s, int batch, int dim, float eps,
                                       const float *x, const float *gamma, const float *beta,
                                       float *y, float *mean, float *rstd)
{
    REQUIRE(batch >= 0 && dim > 0 && eps > 0, "layer norm: bad batch=%d dim=%d eps=%g", batch, dim, (double)eps);
    DISPATCH(s, layernorm_forward, batch, dim, eps, x, gamma, beta, y, mean, rstd);
}

erase_status_t erase_layernorm_backward(erase_stream_t *s, int batch, int dim, const float *x,
                                        const float *gamma, const float *mean, const float *rstd,
                                        const float *dy, float *dx, float *dgamma, float *dbeta)
{
    REQUIRE(batch >= 0 && dim > 0, "layer norm backward: bad batch=%d dim=%d", batch, dim);
    DISPATCH(s, layernorm_backward, batch, dim, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

/* ---- transformer ----------------------------------------------------------- */

erase_status_t erase_gelu_tanh_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    REQUIRE(n == 0 || (x && y), "gelu tanh: NULL x or y");
    DISPATCH(s, gelu_tanh_forward, n, x, y);
}

erase_status_t erase_gelu_tanh_backward(erase_stream_t *s, size_t n, const float *x,
                                        const float *dy, float *dx)
{
    REQUIRE(n == 0 || (x && dy && dx), "gelu tanh backward: NULL x, dy or dx");
    DISPATCH(s, gelu_tanh_backward, n, x, dy, dx);
}

erase_status_t erase_token_embedding_forward(erase_stream_t *s, int batch, int T, int dim, int vocab,
                                             const int32_t *tokens, const float *wte,
                                             const float *wpe, float *out)
{
    REQUIRE(batch >= 0 && T > 0 && dim > 0 && vocab > 0,
            "token embedding: bad batch=%d T=%d dim=%d vocab=%d", batch, T, dim, vocab);
    REQUIRE(tokens && wte && wpe && out, "token embedding: NULL tokens, wte, wpe or out");
    DISPATCH(s, token_embedding_forward, batch, T, dim, vocab, tokens, wte, wpe, out);
}

erase_status_t erase_token_embedding_backward(erase_stream_t *s, int batch, int T, int dim, int vocab,
                                              const int32_t *tokens, const float *dout,
                                              float *dwte, float *dwpe, int accumulate)
{
    REQUIRE(batch >= 0 && T > 0 && dim > 0 && vocab > 0,
            "token embedding backward: bad batch=%d T=%d dim=%d vocab=%d", batch, T, dim, vocab);
    REQUIRE(tokens && dout, "token embedding backward: NULL tokens or dout");
    DISPATCH(s, token_embedding_backward, batch, T, dim, vocab, tokens, dout, dwte, dwpe, accumulate);
}

/* Shapes every attention op shares: dim a multiple of heads; 3*dim (the
 * row width of qkv, a GEMM leading dimension) an int. */
static int attention_shape_ok(int batch, int T, int heads, int dim)
{
    return batch >= 0 && T > 0 && heads > 0 && dim > 0 && dim % heads == 0 && dim <= INT_MAX / 3;
}

erase_status_t erase_attention_forward(erase_stream_t *s, int batch, int T, int heads, int dim,
                                       const float *qkv, float *att, float *out)
{
    REQUIRE(attention_shape_ok(batch, T, heads, dim),
            "attention: bad batch=%d T=%d heads=%d dim=%d (dim a multiple of heads, at most INT_MAX/3)", batch, T, heads, dim);
    REQUIRE(qkv && att && out, "attention: NULL qkv, att or out");
    DISPATCH(s, attention_forward, batch, T, heads, dim, qkv, att, out);
}

erase_status_t erase_attention_backward(erase_stream_t *s, int batch, int T, int heads, int dim,
                                        const float *qkv, const float *att, const float *dout,
                                        float *scratch, float *dqkv)
{
    REQUIRE(attention_shape_ok(batch, T, heads, dim),
            "attention backward: bad batch=%d T=%d heads=%d dim=%d (dim a multiple of heads, at most INT_MAX/3)", batch, T,
            heads, dim);
    REQUIRE(qkv && att && dout && scratch && dqkv, "attention backward: NULL qkv, att, dout, scratch or dqkv");
    DISPATCH(s, attention_backward, batch, T, heads, dim, qkv, att, dout, scratch, dqkv);
}

erase_status_t erase_attention_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads,
                                      int dim, const float *qkv, float *kcache, float *vcache,
                                      float *scratch, float *out)
{
    REQUIRE(attention_shape_ok(batch, cache_len, heads, dim) && t >= 0 && t < cache_len,
            "attention decode: bad batch=%d t=%d cache_len=%d heads=%d dim=%d (dim a multiple of heads, at most INT_MAX/3; 0 <= t < cache_len)", batch, t, cache_len, heads, dim);
    REQUIRE(qkv && kcache && vcache && scratch && out, "attention decode: NULL qkv, cache, scratch or out");
    DISPATCH(s, attention_decode, batch, t, cache_len, heads, dim, qkv, kcache, vcache, scratch, out);
}

/* ---- the nanochat model's ops ----------------------------------------------- */

erase_status_t erase_rmsnorm_forward(erase_stream_t *s, int rows, int dim, float eps, const float *x, float *y,
                                     float *rstd)
{
    REQUIRE(rows >= 0 && dim > 0 && eps >= 0, "rmsnorm: bad rows=%d dim=%d eps=%g", rows, dim, (double)eps);
    REQUIRE(rows == 0 || (x && y && rstd), "rmsnorm: NULL x, y or rstd");
    DISPATCH(s, rmsnorm_forward, rows, dim, eps, x, y, rstd);
}

erase_status_t erase_rmsnorm_backward(erase_stream_t *s, int rows, int dim, const float *x, const float *rstd,
                                      const float *dy, float *dx)
{
    REQUIRE(rows >= 0 && dim > 0, "rmsnorm backward: bad rows=%d dim=%d", rows, dim);
    REQUIRE(rows == 0 || (x && rstd && dy && dx), "rmsnorm backward: NULL x, rstd, dy or dx");
    DISPATCH(s, rmsnorm_backward, rows, dim, x, rstd, dy, dx);
}

erase_status_t erase_rotary(erase_stream_t *s, int batch, int T, int t0, int heads, int hd, float base,
                            int inverse, const float *x, float *y)
{
    REQUIRE(batch >= 0 && T > 0 && t0 >= 0 && heads > 0 && hd > 0 && hd % 2 == 0 && base > 0,
            "rotary: bad batch=%d T=%d t0=%d heads=%d hd=%d base=%g (hd even, base > 0)", batch, T, t0, heads, hd,
            (double)base);
    REQUIRE(batch == 0 || (x && y), "rotary: NULL x or y");
    DISPATCH(s, rotary, batch, T, t0, heads, hd, base, inverse, x, y);
}

erase_status_t erase_cross_forward(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *xl,
                                   float *y)
{
    REQUIRE(n == 0 || (x0 && u && xl && y), "cross forward: NULL x0, u, xl or y");
    DISPATCH(s, cross_forward, n, x0, u, xl, y);
}

erase_status_t erase_cross_backward(erase_stream_t *s, size_t n, const float *x0, const float *u, const float *dy,
                                    float *du, float *dx0)
{
    REQUIRE(n == 0 || (x0 && u && dy && du), "cross backward: NULL x0, u, dy or du");
    DISPATCH(s, cross_backward, n, x0, u, dy, du, dx0);
}

erase_status_t erase_relu2_forward(erase_stream_t *s, size_t n, const float *x, float *y)
{
    REQUIRE(n == 0 || (x && y), "relu2: NULL x or y");
    DISPATCH(s, relu2_forward, n, x, y);
}

erase_status_t erase_relu2_backward(erase_stream_t *s, size_t n, const float *x, const float *dy, float *dx)
{
    REQUIRE(n == 0 || (x && dy && dx), "relu2 backward: NULL x, dy or dx");
    DISPATCH(s, relu2_backward, n, x, dy, dx);
}

erase_status_t erase_softcap_forward(erase_stream_t *s, size_t n, float cap, const float *x, float *y)
{
    REQUIRE(cap > 0, "softcap: cap %g is not > 0", (double)cap);
    REQUIRE(n == 0 || (x && y), "softcap: NULL x or y");
    DISPATCH(s, softcap_forward, n, cap, x, y);
}

erase_status_t erase_softcap_backward(erase_stream_t *s, size_t n, float cap, const float *y, const float *dy,
                                      float *dx)
{
    REQUIRE(cap > 0, "softcap backward: cap %g is not > 0", (double)cap);
    REQUIRE(n == 0 || (y && dy && dx), "softcap backward: NULL y, dy or dx");
    DISPATCH(s, softcap_backward, n, cap, y, dy, dx);
}

/* GQA shapes: heads a multiple of kv_heads, the widths ints. */
static int gqa_shape_ok(int batch, int T, int heads, int kv_heads, int hd)
{
    return batch >= 0 && T > 0 && kv_heads > 0 && heads > 0 && heads % kv_heads == 0 && hd > 0 &&
           heads <= INT_MAX / hd;
}

erase_status_t erase_gqa_attention_forward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd,
                                           const float *q, const float *k, const float *v, float *att, float *out)
{
    REQUIRE(gqa_shape_ok(batch, T, heads, kv_heads, hd),
            "gqa attention: bad batch=%d T=%d heads=%d kv_heads=%d hd=%d (heads a multiple of kv_heads)", batch, T,
            heads, kv_heads, hd);
    REQUIRE(q && k && v && att && out, "gqa attention: NULL q, k, v, att or out");
    DISPATCH(s, gqa_attention_forward, batch, T, heads, kv_heads, hd, q, k, v, att, out);
}

erase_status_t erase_gqa_attention_backward(erase_stream_t *s, int batch, int T, int heads, int kv_heads, int hd,
                                            const float *q, const float *k, const float *v, const float *att,
                                            const float *dout, float *scratch, float *dq, float *dk, float *dv)
{
    REQUIRE(gqa_shape_ok(batch, T, heads, kv_heads, hd),
            "gqa attention backward: bad batch=%d T=%d heads=%d kv_heads=%d hd=%d (heads a multiple of kv_heads)",
            batch, T, heads, kv_heads, hd);
    REQUIRE(q && k && v && att && dout && scratch && dq && dk && dv,
            "gqa attention backward: NULL q, k, v, att, dout, scratch, dq, dk or dv");
    DISPATCH(s, gqa_attention_backward, batch, T, heads, kv_heads, hd, q, k, v, att, dout, scratch, dq, dk, dv);
}

erase_status_t erase_gqa_attention_decode(erase_stream_t *s, int batch, int t, int cache_len, int heads, int kv_heads,
                                          int hd, const float *q, const float *k, const float *v, float *kcache,
                                          float *vcache, float *scratch, float *out)
{
    REQUIRE(gqa_shape_ok(batch, cache_len, heads, kv_heads, hd) && t >= 0 && t < cache_len,
            "gqa attention decode: bad batch=%d t=%d cache_len=%d heads=%d kv_heads=%d hd=%d (heads a multiple of "
            "kv_heads; 0 <= t < cache_len)", batch, t, cache_len, heads, kv_heads, hd);
    REQUIRE(q && k && v && kcache && vcache && scratch && out, "gqa attention decode: NULL q, k, v, cache, scratch or out");
    DISPATCH(s, gqa_attention_decode, batch, t, cache_len, heads, kv_heads, hd, q, k, v, kcache, vcache, scratch, out);
}

/* ---- gradient-norm clipping ---------------------------------------------------- */

erase_status_t erase_sum_squares(erase_stream_t *s, size_t n, const float *x, float *acc)
{
    REQUIRE(acc && (n == 0 || x), "sum of squares: NULL x or acc");
    DISPATCH(s, sum_squares, n, x, acc);
}

erase_status_t erase_clip_by_norm(erase_stream_t *s, size_t n, float *x, const float *sumsq,
                                  float max_norm)
{
    REQUIRE(sumsq && (n == 0 || x), "clip by norm: NULL x or sumsq");
    REQUIRE(max_norm > 0, "clip by norm: max_norm %g is not > 0", (double)max_norm);
    DISPATCH(s, clip_by_norm, n, x, sumsq, max_norm);
}

/* ---- sparse gradients across ranks ---------------------------------------- */

erase_status_t erase_sparse_pack(erase_stream_t *s, int tables, int capacity, int dim,
                                 const int *const *count, const uint32_t *const *rows,
                                 const float *const *values, int *out_counts, uint32_t *out_rows,
                                 float *out_values)
{
    if (tables < 1 || tables > ERASE_FIELDS_MAX || capacity < 1 || dim < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sparse pack: %d tables (1 to %d), capacity %d, dim %d",
                           tables, ERASE_FIELDS_MAX, capacity, dim);
    DISPATCH(s, sparse_pack, tables, capacity, dim, count, rows, values, out_counts, out_rows,
             out_values);
}

erase_status_t erase_sparse_merge(erase_stream_t *s, int ranks, int tables, int capacity, int dim,
                                  float scale, const int *all_counts, const uint32_t *all_rows,
                                  const float *all_values, int *const *count, uint32_t *const *rows,
                                  float *const *values)
{
    if (ranks < 1 || tables < 1 || tables > ERASE_FIELDS_MAX || capacity < 1 || dim < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sparse merge: %d ranks, %d tables, capacity %d, dim %d",
                           ranks, tables, capacity, dim);
    DISPATCH(s, sparse_merge, ranks, tables, capacity, dim, scale, all_counts, all_rows, all_values,
             count, rows, values);
}

/* ---- the sharded tables' exchange ------------------------------------------ */

erase_status_t erase_shard_route_bag(erase_stream_t *s, int n, int tables, const erase_bag_t *bag,
                                     const uint32_t *ids, const uint32_t *table_rows, int ranks,
                                     const int64_t *bounds, const int32_t *slot, int tmax, int capacity,
                                     uint32_t *send_rows, int *send_counts, uint32_t *pos)
{
    REQUIRE(tables >= 1 && ranks >= 1 && tmax >= 1 && capacity >= 1,
            "shard route: %d tables, %d ranks, tmax %d, capacity %d (each at least 1)", tables,
            ranks, tmax, capacity);
    REQUIRE(tables <= ERASE_FIELDS_MAX, "shard route: %d tables (at most %d)", tables, ERASE_FIELDS_MAX);
    erase_bag_t one = one_hot(tables);
    bag = bag ? bag : &one;
    ERASE_CHECK(bag_check("shard route", n, tables, bag));
    int hmax = 1;
    for (int t = 0; t < tables; t++)
        hmax = bag->hotness[t] > hmax ? bag->hotness[t] : hmax;
    REQUIRE(n >= 0 && n <= capacity, "shard route: %d samples, expected 0 to capacity %d", n, capacity);
    REQUIRE((int64_t)n * hmax <= capacity, "shard route: %d samples of up to %d ids are %lld entries, expected 0 "
            "to capacity %d", n, hmax, (long long)n * hmax, capacity);
    /* every index of send_rows must fit a uint32 of pos below the pad value */
    REQUIRE((uint64_t)ranks * (uint64_t)tmax * (uint64_t)capacity < ERASE_SHARD_PAD,
            "shard route: %d ranks x tmax %d x capacity %d entries (expected below %u)", ranks, tmax,
            capacity, ERASE_SHARD_PAD);
    REQUIRE(table_rows && bounds && slot && send_rows && send_counts && (n == 0 || (ids && pos)),
            "shard route: NULL ids, table_rows, bounds, slot, send_rows, send_counts or pos");
    DISPATCH(s, shard_route, n, tables, bag, ids, table_rows, ranks, bounds, slot, tmax, capacity,
             send_rows, send_counts, pos);
}

erase_status_t erase_shard_route(erase_stream_t *s, int n, int tables, const uint32_t *ids,
                                 const uint32_t *table_rows, int ranks, const int64_t *bounds,
                                 const int32_t *slot, int tmax, int capacity, uint32_t *send_rows,
                                 int *send_counts, uint32_t *pos)
{
    return erase_shard_route_bag(s, n, tables, NULL, ids, table_rows, ranks, bounds, slot, tmax, capacity,
                                 send_rows, send_counts, pos);
}

erase_status_t erase_gather_rows(erase_stream_t *s, int n, int dim, const uint32_t *index,
                                 size_t index_stride, const float *src, int64_t src_rows,
                                 float *out, size_t out_stride)
{
    REQUIRE(n >= 0 && dim >= 1 && src_rows >= 0 && index_stride >= 1 && out_stride >= (size_t)dim,
            "gather rows: n %d, dim %d, src_rows %lld, index_stride %zu (at least 1), out_stride "
            "%zu (at least dim)",
            n, dim, (long long)src_rows, index_stride, out_stride);
    if (n == 0)
        return ERASE_OK;
    REQUIRE(index && out && (src || src_rows == 0), "gather rows: NULL index, src or out");
    DISPATCH(s, gather_rows, n, dim, index, index_stride, src, src_rows, out, out_stride);
}

erase_status_t erase_sparse_split(erase_stream_t *s, int capacity, int dim, const int *count,
                                  const uint32_t *rows, const float *values, int ranks,
                                  const int64_t *bounds, const int32_t *slot_index,
                                  int *out_counts, uint32_t *out_rows, float *out_values)
{
    REQUIRE(ranks >= 1 && capacity >= 1 && dim >= 1,
            "sparse split: %d ranks, capacity %d, dim %d (each at least 1)", ranks, capacity, dim);
    REQUIRE(count && rows && values && bounds && slot_index && out_counts && out_rows && out_values,
            "sparse split: a NULL array");
    DISPATCH(s, sparse_split, capacity, dim, count, rows, values, ranks, bounds, slot_index,
             out_counts, out_rows, out_values);
}

/* ---- optimizers ---------------------------------------------------------- */

erase_status_t erase_optim_clock_advance(erase_stream_t *s, erase_optim_clock_t *clock,
                                         const erase_lr_schedule_t *schedule)
{
    DISPATCH(s, optim_clock_advance, clock, schedule);
}

erase_status_t erase_check_finite(erase_stream_t *s, const float *x, size_t n, const int *rows,
                                  int code, erase_optim_clock_t *clock)
{
    if (code < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "check finite: code %d must be > 0", code);
    DISPATCH(s, check_finite, x, n, rows, code, clock);
}

erase_status_t erase_sgd_update(erase_stream_t *s, size_t n, float *w, const float *g, float *buf,
                                const erase_optim_clock_t *clock, float lr_mult, float momentum,
                                float weight_decay)
{
    if (momentum != 0.0f && !buf)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sgd: momentum %g needs a buffer", (double)momentum);
    DISPATCH(s, sgd_update, n, w, g, buf, clock, lr_mult, momentum, weight_decay);
}

erase_status_t erase_adamw_update(erase_stream_t *s, size_t n, float *w, const float *g, float *m,
                                  float *v, const erase_optim_clock_t *clock, float lr_mult,
                                  float beta1, float beta2, float eps, float weight_decay)
{
    if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps > 0))
        return ERASE_ERROR(ERASE_ERR_INVALID, "adamw: betas (%g, %g) must be in [0, 1), eps %g > 0",
                           (double)beta1, (double)beta2, (double)eps);
    DISPATCH(s, adamw_update, n, w, g, m, v, clock, lr_mult, beta1, beta2, eps, weight_decay);
}

size_t erase_muon_work_floats(int64_t rows, int64_t cols)
{
    size_t k = (size_t)(rows < cols ? rows : cols), n = (size_t)(rows < cols ? cols : rows);
    return 2 * k * n + 2 * k * k + 1;
}

erase_status_t erase_muon_update(erase_stream_t *s, int64_t rows, int64_t cols, float *w, const float *g,
                                 float *buf, float *work, const erase_optim_clock_t *clock, float lr_mult,
                                 float momentum, int64_t momentum_warmup)
{
    if (rows < 1 || cols < 1 || rows > INT_MAX / cols)
        return ERASE_ERROR(ERASE_ERR_INVALID, "muon: a [%lld, %lld] matrix (each side >= 1, at most %d elements)",
                           (long long)rows, (long long)cols, INT_MAX);
    if (!(momentum >= 0 && momentum < 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "muon: momentum %g must be in [0, 1)", (double)momentum);
    if (momentum_warmup < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "muon: momentum warm-up of %lld steps", (long long)momentum_warmup);
    if (!buf || !work)
        return ERASE_ERROR(ERASE_ERR_INVALID, "muon: needs a momentum buffer and scratch");
    DISPATCH(s, muon_update, rows, cols, w, g, buf, work, clock, lr_mult, momentum, momentum_warmup);
}

erase_status_t erase_rowwise_adagrad_update(erase_stream_t *s, int dim, float *table, float *acc,
                                            const uint32_t *grad_rows, const float *grad_values,
                                            const int *count, const erase_optim_clock_t *clock,
                                            float lr_mult, float eps)
{
    if (dim < 1 || !(eps > 0))
        return ERASE_ERROR(ERASE_ERR_INVALID, "row-wise adagrad: dim %d, eps %g", dim, (double)eps);
    DISPATCH(s, rowwise_adagrad_update, dim, table, acc, grad_rows, grad_values, count, clock,
             lr_mult, eps);
}

erase_status_t erase_sparse_sgd_update(erase_stream_t *s, int dim, float *table,
                                       const uint32_t *grad_rows, const float *grad_values,
                                       const int *count, const erase_optim_clock_t *clock,
                                       float lr_mult)
{
    if (dim < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sparse sgd: dim %d", dim);
    DISPATCH(s, sparse_sgd_update, dim, table, grad_rows, grad_values, count, clock, lr_mult);
}

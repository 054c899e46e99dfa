/*
 * The gpt model's ops of lib/ops/ops.h on the CPU backend (token and
 * position embedding, causal attention and its decode step): the
 * single-precision kernels of lib/ops/cpu/kernels_impl.h and
 * attention_impl.h launched on the stream with a copy of their arguments.
 * Shapes were validated by lib/ops/ops.c; token ids are data, checked
 * when the op runs.
 */
#include "lib/ops/cpu/ops_cpu.h"

#include "lib/ops/cpu/kernels.h"

/* ---- token and position embedding ----------------------------------------- */

typedef struct {
    int batch, T, dim, vocab, accumulate;
    const int32_t *tokens;
    const float *wte, *wpe, *dout;
    float *out, *dwte, *dwpe;
    const char *op;
} token_embedding_args_t;

/* ERASE_ERR_INVALID naming the first token outside [0, vocab), if any. */
static erase_status_t check_tokens(const token_embedding_args_t *a)
{
    for (size_t i = 0; i < (size_t)a->batch * a->T; i++)
        if (a->tokens[i] < 0 || a->tokens[i] >= a->vocab)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: token %d at position %zu of sequence %zu outside [0, %d)",
                               a->op, a->tokens[i], i % (size_t)a->T, i / (size_t)a->T, a->vocab);
    return ERASE_OK;
}

static erase_status_t token_embedding_fwd_k(const void *p)
{
    const token_embedding_args_t *a = p;
    ERASE_CHECK(check_tokens(a));
    erase_k_token_embedding_forward_f32(a->batch, a->T, a->dim, a->tokens, a->wte, a->wpe, a->out);
    return ERASE_OK;
}

static erase_status_t token_embedding_bwd_k(const void *p)
{
    const token_embedding_args_t *a = p;
    ERASE_CHECK(check_tokens(a));
    erase_k_token_embedding_backward_f32(a->batch, a->T, a->dim, a->vocab, a->tokens, a->dout,
                                         a->dwte, a->dwpe, a->accumulate);
    return ERASE_OK;
}

erase_status_t erase_cpu_token_embedding_forward(erase_stream_t *s, int batch, int T, int dim,
                                                 int vocab, const int32_t *tokens, const float *wte,
                                                 const float *wpe, float *out)
{
    token_embedding_args_t a = { .batch = batch, .T = T, .dim = dim, .vocab = vocab,
                                 .tokens = tokens, .wte = wte, .wpe = wpe, .out = out,
                                 .op = "token embedding" };
    LAUNCH(s, token_embedding_fwd_k, a);
}

erase_status_t erase_cpu_token_embedding_backward(erase_stream_t *s, int batch, int T, int dim,
                                                  int vocab, const int32_t *tokens,
                                                  const float *dout, float *dwte, float *dwpe,
                                                  int accumulate)
{
    token_embedding_args_t a = { .batch = batch, .T = T, .dim = dim, .vocab = vocab,
                                 .accumulate = accumulate, .tokens = tokens, .dout = dout,
                                 .dwte = dwte, .dwpe = dwpe, .op = "token embedding backward" };
    LAUNCH(s, token_embedding_bwd_k, a);
}

/* ---- attention -------------------------------------------------------------- */

typedef struct {
    int batch, T, heads, dim, t;
    const float *qkv, *catt, *dout;
    float *att, *out, *scratch, *dqkv, *kcache, *vcache;
} attention_args_t;

static erase_status_t attention_fwd_k(const void *p)
{
    const attention_args_t *a = p;
    erase_k_attention_forward_f32(a->batch, a->T, a->heads, a->dim, a->qkv, a->att, a->out);
    return ERASE_OK;
}

static erase_status_t attention_bwd_k(const void *p)
{
    const attention_args_t *a = p;
    erase_k_attention_backward_f32(a->batch, a->T, a->heads, a->dim, a->qkv, a->catt, a->dout,
                                   a->scratch, a->dqkv);
    return ERASE_OK;
}

static erase_status_t attention_decode_k(const void *p)
{
    const attention_args_t *a = p;
    erase_k_attention_decode_f32(a->batch, a->t, a->T, a->heads, a->dim, a->qkv, a->kcache,
                                 a->vcache, a->scratch, a->out);
    return ERASE_OK;
}

erase_status_t erase_cpu_attention_forward(erase_stream_t *s, int batch, int T, int heads, int dim,
                                           const float *qkv, float *att, float *out)
{
    attention_args_t a = { .batch = batch, .T = T, .heads = heads, .dim = dim, .qkv = qkv,
                           .att = att, .out = out };
    LAUNCH(s, attention_fwd_k, a);
}

erase_status_t erase_cpu_attention_backward(erase_stream_t *s, int batch, int T, int heads,
                                            int dim, const float *qkv, const float *att,
                                            const float *dout, float *scratch, float *dqkv)
{
    attention_args_t a = { .batch = batch, .T = T, .heads = heads, .dim = dim, .qkv = qkv,
                           .catt = att, .dout = dout, .scratch = scratch, .dqkv = dqkv };
    LAUNCH(s, attention_bwd_k, a);
}

/* T holds cache_len. */
erase_status_t erase_cpu_attention_decode(erase_stream_t *s, int batch, int t, int cache_len,
                                          int heads, int dim, const float *qkv, float *kcache,
                                          float *vcache, float *scratch, float *out)
{
    attention_args_t a = { .batch = batch, .T = cache_len, .heads = heads, .dim = dim, .t = t,
                           .qkv = qkv, .kcache = kcache, .vcache = vcache, .scratch = scratch,
                           .out = out };
    LAUNCH(s, attention_decode_k, a);
}

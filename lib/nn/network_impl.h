/*
 * Inside lib/nn: the network core (network.c) and the models behind it.
 *
 * The core owns what every model has: the chain of blocks and their cuts,
 * the parameters (values, the contiguous per-block dense-gradient buffer,
 * sparse-gradient buffers of embedding tables), the gradient d_in of an
 * attached block input, the per-block losses, the queries and the public
 * API of lib/nn/network.h. A model is a table of functions
 * (erase_model_impl_t) and its own state behind net->model: one file per
 * model (network_chain.c: ctr and mlp, whose blocks are chains of layers;
 * gpt.c: the transformer). The core calls:
 *
 *   build          set net->nblocks, each block's name and in_width, and
 *                  add the parameters (erase_network_add_param), block by
 *                  block in order; may set a block's `headless`;
 *   allocate       after the core allocated every parameter's value and
 *                  gradient, d_in and the losses: the model's activations
 *                  and the parameters' initial values
 *                  (erase_network_init_param);
 *   forward_block, backward_block, forward_predict
 *                  the contract of lib/nn/network.h (the core checked the
 *                  block index and the batch size);
 *   body_output, head_output
 *                  the buffers of network.h's queries;
 *   flops_per_sample
 *                  erase_network_flops_per_sample's count (NULL: not
 *                  counted, 0);
 *   destroy        free the model's state (the core frees the rest);
 *   decoder_create, decode_step, decoder_destroy
 *                  generation one position at a time (network.h's
 *                  erase_network_decoder_*; NULL for a model without it).
 */
#ifndef ERASE_NN_NETWORK_IMPL_H
#define ERASE_NN_NETWORK_IMPL_H

#include "lib/nn/network.h"

typedef struct {
    char name[16];
    int in_width;           /* floats per sample of the block input (block b-1's body output) */
    int headless;           /* 1: no head and no loss (its loss stays 0) */
    float weight;           /* the gradient's scale of the block's loss: lambda_b (1 for the
                             * last block, the main loss) x the loss scale */
    float lambda;           /* lambda_b alone */
    float *d_in;            /* [max_batch, in_width]: the gradient of the input, when
                             * boundary b (b > 0) is attached; else NULL */
    int first_param, nparams;
    float *grads;           /* every dense gradient of the block, contiguous */
    size_t grad_count;
} erase_block_t;

typedef struct {
    erase_status_t (*build)(erase_network_t *net);
    erase_status_t (*allocate)(erase_network_t *net);
    erase_status_t (*forward_block)(erase_network_t *net, int b, erase_stream_t *s,
                                    const erase_batch_t *batch);
    erase_status_t (*backward_block)(erase_network_t *net, int b, erase_stream_t *s,
                                     const erase_batch_t *batch);
    erase_status_t (*forward_predict)(erase_network_t *net, erase_stream_t *s, const erase_batch_t *batch);
    const float *(*body_output)(const erase_network_t *net, int b, int *width);
    const float *(*head_output)(const erase_network_t *net, int b, int *width);
    double (*flops_per_sample)(const erase_network_t *net);
    void (*destroy)(erase_network_t *net);
    /* generation with key/value caches (erase_network_decoder_create;
     * NULL: the model has none): the decoder's state is the model's */
    erase_status_t (*decoder_create)(erase_network_t *net, int batch, void **state);
    erase_status_t (*decode_step)(void *state, erase_stream_t *s, int t, const int32_t *tokens,
                                  const float **logits);
    void (*decoder_destroy)(void *state);
} erase_model_impl_t;

struct erase_network {
    erase_device_t *dev;
    erase_model_config_t cfg;
    const erase_model_impl_t *impl;
    void *model;            /* the model's state (its file's own struct) */
    int max_batch;
    int nblocks;
    erase_block_t blocks[ERASE_MAX_BLOCKS];
    erase_param_t *params;
    int nparams, params_cap;
    float *losses;          /* device [nblocks] */
    int sparse_rows;        /* rows each sparse-gradient buffer holds */
    size_t device_bytes;    /* allocated by erase_network_alloc (erase_network_device_bytes) */
    const erase_network_t *shares; /* a replica: the network whose parameter values it uses
                                    * (erase_network_create_replica); else NULL */
    /* block emb_block's embedding lookup, when a provider serves it
     * (erase_network_set_embedding_provider); emb_block -1: none */
    erase_embedding_provider_t emb_provider;
    void *emb_ctx;
    int emb_block;
};

/* The models: ctr and mlp (network_chain.c), gpt (gpt.c), nanochat (nanochat.c), dcn (dcn.c). */
extern const erase_model_impl_t erase_model_chain;
extern const erase_model_impl_t erase_model_dcn;
extern const erase_model_impl_t erase_model_gpt;
extern const erase_model_impl_t erase_model_nanochat;

/*
 * Add parameter "<block name>/<path>" of block `block` (blocks add theirs
 * in block order): [rows, cols] floats (a 1-d parameter: cols 1, ndim 1).
 * `role`: what it is to the model (lib/nn/param.h: hidden matrix, embedding,
 * head, vector), which optimizers with parameter groups (Muon) read; every
 * model declares it (issue 34 added the argument for all models).
 * *index: its index in net->params (the array may move: keep indices, not
 * pointers, until build is done). Errors: ERASE_ERR_NOMEM.
 */
erase_status_t erase_network_add_param(erase_network_t *net, int block, const char *path,
                                       erase_param_kind_t kind, erase_param_role_t role, int64_t rows,
                                       int64_t cols, int ndim, int *index);

/* How erase_network_init_param fills a parameter. */
typedef enum {
    ERASE_INIT_UNIFORM,     /* uniform in [-a, a) */
    ERASE_INIT_NORMAL,      /* normal(0, a^2): erase_rng_normal times a */
    ERASE_INIT_CONSTANT     /* every element a (no random numbers) */
} erase_init_t;

/*
 * Initialise parameter p from its own random stream (seeded from the
 * model seed and p's name: adding a parameter never changes another's
 * values), drawn in element order into host memory and copied to the
 * device in one blocking copy. Errors: ERASE_ERR_NOMEM, a failed copy.
 */
erase_status_t erase_network_init_param(erase_network_t *net, erase_param_t *p, erase_init_t how, double a);

/*
 * The embedding lookup of the 26 categorical fields, ctr's and dcn's
 * (network_chain.c): the tables are parameters table0 .. table0 + 25
 * (net->cfg.ctr.table_rows rows of `dim` floats each).
 *   add       add them to block `block` as "<block>/emb/<f>" (*table0: the
 *             first one's index; erase_network_add_param's errors);
 *   init      zero the per-table counts of sparse-gradient rows (device
 *             [26] ints, each table's grad_count) and initialise the rows
 *             uniform in +-sqrt(1/rows) (TorchRec's EmbeddingBagCollection);
 *   forward   emb [n, 26, dim] from batch->sparse, through the embedding
 *             provider when one serves the network (sharded tables);
 *   backward  the tables' sparse gradients from demb [n, 26, dim].
 * Errors: those of the embedding ops and the provider.
 */
erase_status_t erase_network_embedding_add(erase_network_t *net, int block, int dim, int *table0);
erase_status_t erase_network_embedding_init(erase_network_t *net, int table0, int *counts);
erase_status_t erase_network_embedding_forward(erase_network_t *net, erase_stream_t *s, int n, int table0, int dim,
                                               const erase_batch_t *batch, float *emb);
erase_status_t erase_network_embedding_backward(erase_network_t *net, erase_stream_t *s, int n, int table0, int dim,
                                                const erase_batch_t *batch, const float *demb, int *counts);

/* A transformer's training FLOPs per sample, T x (6N + 12 L C T) with N
 * every parameter but the one of index `skip` (gpt: wpe; nanochat: wte)
 * and L the blocks (nanoGPT's and nanochat's estimate, PaLM's appendix B). */
double erase_network_transformer_flops(const erase_network_t *net, int skip, int T, int C);

/* A language model's batch (the lm task's): ERASE_ERR_INVALID "MODEL: the
 * batch has no tokens|targets (...)" when batch->tokens, or with
 * `need_targets` batch->targets, is NULL; else ERASE_OK. */
erase_status_t erase_network_check_tokens(const char *model, const erase_batch_t *batch, int need_targets);

/* Device memory for a x b elements of `elem` bytes; a size that does not
 * fit a size_t is ERASE_ERR_INVALID saying so. Errors: those of
 * erase_malloc. */
erase_status_t erase_network_alloc(erase_network_t *net, void **ptr, size_t elem, int64_t a, int64_t b);

#define ERASE_NET_ALLOC(net, ptr, elem, a, b) \
    ERASE_CHECK(erase_network_alloc((net), (void **)&(ptr), (elem), (a), (b)))

#endif

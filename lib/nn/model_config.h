/*
 * Model files: which built-in model (docs/models.md) and its sizes, read
 * with libconfig (https://hyperrealm.github.io/libconfig/): `key = value;`
 * settings, groups in braces, lists in brackets, `#` and `//` comments.
 *
 *   model = "ctr";                 # "ctr", "mlp", "gpt", "nanochat" or "dcn"
 *   seed = 1;                      # initialisation seed (>= 0)
 *   ctr: {
 *     embedding_dim = 16;
 *     pooling = "sum";             # a multi-hot feature's rows: "sum" or "mean"
 *     table_rows = 10007;          # every table, or a list of 26 (each >= 2), or "data":
 *                                  # the sizes of the data's vocabulary (io/vocab.h),
 *                                  # resolved by erase-train from the shards (issue 35)
 *     bottom_mlp = [64, 16];       # widths; the last must equal embedding_dim
 *     subarch_width = 256;
 *     subarchs = 6;
 *     cuts = "all";                # "all", "none", or a list of boundaries [1, 3]
 *     local_loss_weight = 1.0;     # lambda of every local loss (>= 0)
 *     hotness = "mlperf";          # most ids per sample of each feature: a list of 26
 *                                  # (each 1..ERASE_CTR_HOTNESS_MAX) or "mlperf"; default all 1
 *   };
 *   mlp: {
 *     inputs = 784;
 *     hidden = [1024, 1024, 1024]; # one block per hidden layer
 *     classes = 10;
 *     cuts = "all";
 *     local_loss_weight = 1.0;
 *   };
 *   gpt: {                         # defaults: nanoGPT's shakespeare-char size
 *     layers = 6;                  # one block per transformer layer (1..32)
 *     heads = 6;                   # width must be a multiple of heads
 *     width = 384;
 *     context = 256;               # T: positions per sample
 *     vocab = 256;                 # 2..65536 (token shards hold uint16 ids)
 *     cuts = "none";               # the default for gpt; "all" or a list as above
 *     local_loss_weight = 1.0;
 *     tie_head = false;            # the last LM head shares h0/wte (true | false;
 *                                  # default: true exactly when there are no cuts)
 *   };
 *   dcn: {                         # MLPerf DLRM-DCNv2 (issue 36); defaults: its sizes
 *     embedding_dim = 128;         # the embedding keys are ctr's (cfg->ctr)
 *     table_rows = 10007;
 *     bottom_mlp = [512, 256, 128];
 *     cross_layers = 3;            # a block each (1..16)
 *     cross_rank = 512;            # low rank r; 0: full-rank cross layers
 *     top_mlp = [1024, 1024, 512, 256, 1]; # a block per layer but the last (the logit)
 *     cuts = "none";               # the default for dcn; "all" or a list as above
 *     local_loss_weight = 1.0;
 *   };
 *   nanochat: {                    # nanochat's model (issue 34); defaults from layers:
 *     layers = 4;                  # depth (1..32)
 *     width = 256;                 # default 64 x layers
 *     heads = 2;                   # default max(1, ceil(width / 128)); head dim even
 *     kv_heads = 2;                # default heads; a divisor of heads
 *     context = 256;
 *     vocab = 256;                 # 2..65536
 *     softcap = 15.0;              # > 0
 *     cuts = "none";
 *     local_loss_weight = 1.0;
 *   };
 *
 * Only the group of the chosen model may appear. Omitted keys take the
 * reference defaults (erase_model_config_default). An unknown key, a wrong
 * type or an impossible size is ERASE_ERR_FORMAT with a message naming the
 * file, the line and the key, e.g.
 *   "model.cfg:4: ctr.embedding_dim: expected an integer >= 1, got 0"
 *   "model.cfg:6: unknown key 'ctr.embeding_dim'"
 * Integers beyond 32 bits need libconfig's L suffix (4294967297L); a plain
 * one, which libconfig 1.5 wraps, is refused (lib/core/config_text.h).
 */
#ifndef ERASE_NN_MODEL_CONFIG_H
#define ERASE_NN_MODEL_CONFIG_H

#include <stdint.h>

#include "lib/core/status.h"

#define ERASE_CTR_DENSE 13        /* dense features of the Criteo layout */
#define ERASE_CTR_FIELDS 26       /* categorical features */
#define ERASE_CTR_HOTNESS_MAX 65536 /* most ids per sample of one feature a model takes */
/* MLPerf DLRM-DCNv2's multi-hot Criteo 1TB: ids per sample of C1..C26
 * (sum 214), the --multi_hot_sizes of TorchRec's torchrec_dlrm
 * scripts/materialize_synthetic_multihot_dataset.py and of MLPerf training's
 * recommendation_v2 reference. */
#define ERASE_CTR_HOTNESS_MLPERF \
    { 3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1 }
#define ERASE_MAX_LAYERS 16       /* bottom MLP layers, MLP hidden layers */
#define ERASE_MAX_BLOCKS 32
/* gpt layers: a layer is a block, so the blocks' bound; the parser and the
 * writer (erase_model_config_format) both take it from here */
#define ERASE_MAX_GPT_LAYERS ERASE_MAX_BLOCKS

typedef enum {
    ERASE_MODEL_CTR = 0,
    ERASE_MODEL_MLP = 1,
    ERASE_MODEL_GPT = 2,
    ERASE_MODEL_NANOCHAT = 3, /* issue 34 */
    ERASE_MODEL_DCN = 4       /* issue 36: MLPerf's DLRM-DCNv2 */
} erase_model_kind_t;

/* gpt's tie_head: AUTO (0, the key absent) ties the last block's LM head to
 * h0/wte exactly when the model has no cuts; TRUE (only without cuts) and
 * FALSE say it. */
typedef enum { ERASE_TIE_HEAD_AUTO = 0, ERASE_TIE_HEAD_TRUE = 1, ERASE_TIE_HEAD_FALSE = 2 } erase_tie_head_t;

/* How the rows of a multi-hot feature's ids are pooled (lib/ops/ops.h). */
typedef enum { ERASE_POOLING_SUM = 0, ERASE_POOLING_MEAN = 1 } erase_pooling_t;

typedef struct {
    erase_model_kind_t kind;
    uint64_t seed;
    int seed_given; /* 1: the model file set `seed` (erase-train's --seed, when given, overrides it) */
    /* Bit c (1 <= c < blocks) set: boundary c, between blocks c-1 and c, is
     * a cut. */
    uint32_t cut_mask;
    float local_loss_weight;
    struct {
        int embedding_dim;
        erase_pooling_t pooling;  /* of each feature's rows (one-hot: either, the same) */
        uint32_t table_rows[ERASE_CTR_FIELDS]; /* 0 while table_rows_from_data */
        int table_rows_from_data; /* table_rows = "data": the caller fills table_rows, then clears it */
        int bottom_mlp[ERASE_MAX_LAYERS];
        int bottom_layers;
        int subarch_width;
        int subarchs;            /* blocks = 1 + subarchs */
        /* the most ids of a sample per feature (multi-hot; all 1: one-hot):
         * the batch's sparse is [size, sum of hotness] (lib/nn/batch.h) */
        uint32_t hotness[ERASE_CTR_FIELDS];
    } ctr;                       /* dcn shares embedding_dim, table_rows and bottom_mlp */
    struct {
        int cross_layers;        /* DCNv2 cross layers, a block each */
        int cross_rank;          /* r of the low-rank layers; 0: full rank */
        int top_mlp[ERASE_MAX_LAYERS]; /* the over arch's widths, the last 1 (the logit) */
        int top_layers;          /* blocks = 1 + cross_layers + top_layers - 1 */
    } dcn;
    struct {
        int inputs;
        int hidden[ERASE_MAX_LAYERS];
        int hidden_layers;       /* blocks = hidden_layers */
        int classes;
    } mlp;
    struct {
        int layers;              /* transformer layers; blocks = layers */
        int heads;               /* attention heads (width % heads == 0) */
        int width;               /* embedding width C */
        int context;             /* T: positions per sample (window of T+1 tokens) */
        int vocab;               /* token ids 0 .. vocab-1 */
        erase_tie_head_t tie_head; /* erase_model_config_tied_head resolves it */
    } gpt;
    struct {
        int layers;              /* transformer layers (nanochat's depth); blocks = layers */
        int heads;               /* query heads (width % heads == 0, head dim even) */
        int kv_heads;            /* key/value heads (heads % kv_heads == 0) */
        int width;               /* embedding width C */
        int context;             /* T: positions per sample */
        int vocab;               /* token ids 0 .. vocab-1 */
        float softcap;           /* logits = softcap * tanh(z / softcap), > 0 */
    } nanochat;
} erase_model_config_t;

/* The reference sizes of docs/models.md for `kind`, lambda 1, seed 1: ctr
 * and mlp with all boundaries cut, gpt (6 layers, 6 heads, width 384,
 * context 256, vocab 256) with none, nanochat of depth 4 (width 256, 2
 * heads, 2 kv_heads, context 256, vocab 256, softcap 15) with none. */
erase_model_config_t erase_model_config_default(erase_model_kind_t kind);

/* nanochat's sizes derived from its depth as nanochat's base_train.py does
 * (docs/models.md): layers, width = 64 x layers, heads = max(1,
 * ceil(width / 128)), kv_heads = heads. The other fields stay. */
void erase_model_config_nanochat_depth(erase_model_config_t *cfg, int layers);

/* H of a ctr model's batches (lib/nn/batch.h): the sum of ctr.hotness,
 * a hotness of 0 (a configuration made without the defaults) counting as
 * 1; 26 for one-hot. */
int64_t erase_model_config_hot_width(const erase_model_config_t *cfg);

/* The model kind's name, "ctr", "mlp", "gpt", "nanochat" or "dcn". */
const char *erase_model_config_name(const erase_model_config_t *cfg);

/* 1 and *kind set when `name` is a model kind's name ("ctr", "mlp",
 * "gpt"), else 0. */
int erase_model_config_kind(const char *name, erase_model_kind_t *kind);

/* The erase-train task the model kind serves (apps/train/task.h): "ctr"
 * for ctr, "classify" for mlp, "lm" for gpt. */
const char *erase_model_config_task(const erase_model_config_t *cfg);

/* A language model's (gpt, nanochat) context T, as a pointer into cfg
 * (the token reader's row format keeps it), and its vocabulary; NULL and
 * 0 for ctr and mlp. */
const int *erase_model_config_context(const erase_model_config_t *cfg);
int erase_model_config_vocab(const erase_model_config_t *cfg);

/* 1 for the models with the 26 per-field embedding tables and the CTR
 * batch (dense, sparse, label) whose sizes are cfg->ctr's: ctr and dcn;
 * else 0. */
int erase_model_config_has_tables(const erase_model_config_t *cfg);

/* The largest of cfg->ctr.hotness (1: one-hot) for ctr and dcn, 0 for the
 * other models: a sample brings at most that many ids to one table. */
int erase_model_config_max_hotness(const erase_model_config_t *cfg);

/* Number of blocks of the configured model. */
int erase_model_config_blocks(const erase_model_config_t *cfg);

/*
 * Whether the last block's LM head is tied to h0/wte (GPT-2's weight tying,
 * docs/models.md): *tied = 1 for a gpt model with tie_head TRUE, or AUTO and
 * no cuts; else 0 (always 0 for ctr and mlp). Errors: ERASE_ERR_INVALID for
 * tie_head TRUE with cuts (the tie would carry the last block's head
 * gradient into block 0 across them): "gpt.tie_head = true with cuts at
 * boundaries 2, 4: the tie would carry the last block's gradient across the
 * cuts into h0/wte (set tie_head = false or remove the cuts)".
 */
erase_status_t erase_model_config_tied_head(const erase_model_config_t *cfg, int *tied);

/*
 * Parse model-file text. `name` is used in messages (a path or "<string>").
 * Errors: ERASE_ERR_FORMAT (syntax, unknown key, wrong type, impossible
 * size, a plain integer beyond 32 bits, @include of a directory:
 * lib/core/config_text.h; the message names name:line and the key),
 * ERASE_ERR_IO (an @include file that cannot be read).
 */
erase_status_t erase_model_config_parse(const char *text, const char *name,
                                        erase_model_config_t *cfg);

/*
 * Parse model text stored inside a file (a checkpoint's /meta model;
 * `name`: that file's path): as erase_model_config_parse, but the text
 * reads no other file: @include anywhere in it is ERASE_ERR_FORMAT
 * "D/ckpt-4.h5:3: @include: includes are not allowed in embedded text (it
 * would read a file of its own choosing)" (lib/core/config_text.h).
 */
erase_status_t erase_model_config_parse_embedded(const char *text, const char *name, erase_model_config_t *cfg);

/* Read and parse a model file. Errors: ERASE_ERR_IO (cannot read: the
 * message names the path and the reason), ERASE_ERR_FORMAT as above and
 * for a NUL byte (path:line). */
erase_status_t erase_model_config_load(const char *path, erase_model_config_t *cfg);

/* Write the configuration as model-file text (parses back to the same
 * configuration; gpt's tie_head is written as what it resolves to,
 * erase_model_config_tied_head, so the text states it). Returns the
 * length written, or -1 if `size` is too small. */
int erase_model_config_format(const erase_model_config_t *cfg, char *text, int size);

#endif

/*
 * Parameters: a named tensor of the network, its gradient, and its
 * optimizer state. Dense parameters have a dense gradient of their shape;
 * embedding tables have a sparse gradient (the rows a batch touched and
 * their summed gradients), never a dense table-sized one.
 */
#ifndef ERASE_NN_PARAM_H
#define ERASE_NN_PARAM_H

#include <stdint.h>

#include "lib/device/device.h"

#define ERASE_PARAM_NAME_MAX 64

typedef enum { ERASE_PARAM_DENSE = 0, ERASE_PARAM_EMBEDDING = 1 } erase_param_kind_t;

/*
 * What a parameter is to the model, declared by the model when it adds the
 * parameter (erase_network_add_param: every model sets it; an interface
 * change of issue 34 for all models). Optimizers that treat groups apart
 * read it (Muon, lib/nn/optim.h: hidden matrices take Muon, the other
 * roles AdamW, as nanochat's setup_optimizers groups them), never the name.
 */
typedef enum {
    ERASE_ROLE_HIDDEN = 0,    /* 2-D weight of a hidden layer ([out, in], PyTorch's convention) */
    ERASE_ROLE_EMBEDDING = 1, /* embedding matrix (gpt's wte, wpe) or table */
    ERASE_ROLE_HEAD = 2,      /* output projection to the logits or classes (a head's weight; gpt's wte
                               * when the head is tied to it) */
    ERASE_ROLE_VECTOR = 3     /* 1-D parameter: bias, norm gain */
} erase_param_role_t;

typedef struct {
    char name[ERASE_PARAM_NAME_MAX]; /* "<block>/<path>", docs/models.md */
    erase_param_kind_t kind;
    erase_param_role_t role;         /* set by the model (see above) */
    int block;                       /* index of the owning block */
    int ndim;                        /* 1 (bias) or 2 ([rows, cols]) */
    int64_t rows, cols;              /* the whole parameter's shape; a 1-d parameter has cols == 1 */
    int64_t row0, held;              /* the rows this rank holds: [row0, row0 + held) of rows. All of
                                      * them (0, rows) except for an embedding table sharded over the
                                      * ranks (lib/nn/sharding.h, erase_network_create_placed) */
    float *value;                    /* [held, cols]: rows row0 .. row0 + held - 1 */
    float *grad;                     /* dense: [rows, cols]; embedding: NULL */
    uint32_t *grad_rows;             /* embedding: [max_batch] rows touched */
    float *grad_values;              /* embedding: [max_batch, cols] their gradients */
    int *grad_count;                 /* embedding: how many rows (one int) */
    float *state[2];                 /* optimizer slots (NULL until an optimizer made them) */
} erase_param_t;

/* Elements of a parameter that this rank holds (value's length): held x
 * cols; rows x cols but for a sharded embedding table. */
static inline int64_t erase_param_numel(const erase_param_t *p)
{
    return p->held * p->cols;
}

#endif

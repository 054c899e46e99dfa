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

typedef struct {
    char name[ERASE_PARAM_NAME_MAX]; /* "<block>/<path>", docs/models.md */
    erase_param_kind_t kind;
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

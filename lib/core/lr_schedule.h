/*
 * Learning-rate schedule: linear warm-up, then constant or cosine decay.
 * Its whole state is the step number, so a resumed run recomputes it.
 */
#ifndef ERASE_CORE_LR_SCHEDULE_H
#define ERASE_CORE_LR_SCHEDULE_H

#include <math.h>
#include <stdint.h>

#include "lib/core/hd.h"

typedef enum { ERASE_LR_CONSTANT = 0, ERASE_LR_COSINE = 1 } erase_lr_decay_t;

typedef struct {
    double base;            /* learning rate after warm-up */
    int64_t warmup_steps;   /* 0: none */
    erase_lr_decay_t decay;
    int64_t total_steps;    /* cosine: reaches `min` at this step */
    double min;             /* cosine floor */
} erase_lr_schedule_t;

/*
 * Learning rate of update number `step` (1-based): base * step / warmup
 * during warm-up; then base (constant), or for cosine
 * min + (base - min) * (1 + cos(pi * t)) / 2 with t = (step - warmup) /
 * (total - warmup) clamped to [0, 1] (Loshchilov and Hutter, SGDR, 2017).
 */
ERASE_HD static inline double erase_lr_at(const erase_lr_schedule_t *s, int64_t step)
{
    if (s->warmup_steps > 0 && step <= s->warmup_steps)
        return s->base * (double)step / (double)s->warmup_steps;
    if (s->decay == ERASE_LR_CONSTANT || s->total_steps <= s->warmup_steps)
        return s->base;
    double t = (double)(step - s->warmup_steps) / (double)(s->total_steps - s->warmup_steps);
    if (t > 1)
        t = 1;
    return s->min + (s->base - s->min) * 0.5 * (1.0 + cos(3.14159265358979323846 * t));
}

#endif

/*
 * Learning-rate schedule: linear warm-up, then constant, cosine decay, or
 * warm-up-stable-decay (constant, then a linear warm-down at the end).
 * Its whole state is the step number, so a resumed run recomputes it.
 */
#ifndef ERASE_CORE_LR_SCHEDULE_H
#define ERASE_CORE_LR_SCHEDULE_H

#include <math.h>
#include <stdint.h>

#include "lib/core/hd.h"

typedef enum { ERASE_LR_CONSTANT = 0, ERASE_LR_COSINE = 1, ERASE_LR_WSD = 2 } erase_lr_decay_t;

typedef struct {
    double base;            /* learning rate after warm-up */
    int64_t warmup_steps;   /* 0: none */
    erase_lr_decay_t decay;
    int64_t total_steps;    /* cosine: reaches `min` after this step; wsd: ends the warm-down */
    double min;             /* cosine: floor; wsd: the rate the warm-down heads for */
    double warmdown_fraction; /* wsd: share of total_steps in the warm-down */
    int64_t warmdown_steps; /* wsd: the last steps, linear from base towards min (set by
                             * erase_lr_schedule_set_total) */
} erase_lr_schedule_t;

/*
 * Set the schedule's total steps (>= 0) and, for wsd, its warm-down steps:
 * warmdown_fraction * total rounded half to even (nanochat's
 * round(warmdown_ratio * num_iterations)), the current rounding mode being
 * the default.
 */
static inline void erase_lr_schedule_set_total(erase_lr_schedule_t *s, int64_t total_steps)
{
    s->total_steps = total_steps;
    s->warmdown_steps = (int64_t)nearbyint(s->warmdown_fraction * (double)total_steps);
}

/*
 * Learning rate of update number `step` (1-based): base * step / warmup
 * during warm-up; then base (constant), or for cosine
 * min + (base - min) * (1 + cos(pi * t)) / 2 with t = (step - 1 - warmup)
 * / (total - warmup) clamped to [0, 1] (Loshchilov and Hutter, SGDR,
 * 2017; counted from 0 after warm-up as PyTorch's CosineAnnealingLR with
 * T_max = total - warmup and transformers' cosine schedule: the first
 * update after warm-up is at base and `min` is reached after the last
 * step, so every step trains, --steps 1 too), or for wsd base until step
 * total - warmdown, then p * base + (1 - p) * min with p = (total - step +
 * 1) / warmdown (nanochat's get_lr_multiplier in scripts/base_train.py,
 * its 0-based iteration being step - 1: the last step's rate is base /
 * warmdown above min, not min).
 */
ERASE_HD static inline double erase_lr_at(const erase_lr_schedule_t *s, int64_t step)
{
    if (s->warmup_steps > 0 && step <= s->warmup_steps)
        return s->base * (double)step / (double)s->warmup_steps;
    if (s->decay == ERASE_LR_WSD) {
        if (s->warmdown_steps <= 0 || step - 1 <= s->total_steps - s->warmdown_steps)
            return s->base;
        double p = (double)(s->total_steps - step + 1) / (double)s->warmdown_steps;
        if (p < 0)
            p = 0;
        return p * s->base + (1 - p) * s->min;
    }
    if (s->decay == ERASE_LR_CONSTANT || s->total_steps <= s->warmup_steps)
        return s->base;
    double t = (double)(step - 1 - s->warmup_steps) / (double)(s->total_steps - s->warmup_steps);
    if (t < 0) /* a step 0 that no clock passes */
        t = 0;
    if (t > 1)
        t = 1;
    return s->min + (s->base - s->min) * 0.5 * (1.0 + cos(3.14159265358979323846 * t));
}

#endif

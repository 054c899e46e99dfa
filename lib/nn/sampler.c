/*
 * Temperature and top-k sampling of the next token (lib/nn/sampler.h).
 */
#include "lib/nn/sampler.h"

#include "lib/core/rng.h"

#include <math.h>
#include <stdlib.h>

#define SAMPLER_SALT 0x73616d706c657231ULL /* "sampler1": this user of a seed */

typedef struct {
    float z;
    int32_t id;
} ranked_t;

erase_status_t erase_sampler_init(erase_sampler_t *s, int vocab, float temperature, int top_k, uint64_t seed)
{
    s->order = NULL;
    if (vocab < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sampler: a vocabulary of %d tokens (expected >= 1)", vocab);
    if (!(temperature >= 0) || !isfinite(temperature))
        return ERASE_ERROR(ERASE_ERR_INVALID, "sampler: temperature %g: expected a finite number >= 0",
                           (double)temperature);
    if (top_k < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "sampler: top-k %d: expected >= 0 (0: the whole vocabulary)", top_k);
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_k = top_k == 0 || top_k > vocab ? vocab : top_k;
    s->rng = erase_rng_stream(SAMPLER_SALT, seed, 0, 0);
    if (!(s->order = malloc(sizeof(ranked_t) * (size_t)vocab)))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "sampler: no memory for %d tokens", vocab);
    return ERASE_OK;
}

void erase_sampler_free(erase_sampler_t *s)
{
    free(s->order);
    s->order = NULL;
}

/* Decreasing logit, then ascending id: a total order (qsort is not stable). */
static int by_rank(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->z != y->z)
        return x->z > y->z ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

erase_status_t erase_sampler_next(erase_sampler_t *s, const float *logits, int32_t *token)
{
    ranked_t *r = s->order;
    int best = 0;
    for (int i = 0; i < s->vocab; i++) {
        if (!isfinite(logits[i]))
            return ERASE_ERROR(ERASE_ERR_INVALID, "sampler: the logit of token %d is %g (expected a finite number)",
                               i, (double)logits[i]);
        best = logits[i] > logits[best] ? i : best;
    }
    if (s->temperature == 0 || s->top_k == 1) {
        *token = best;
        return ERASE_OK;
    }
    for (int i = 0; i < s->vocab; i++)
        r[i] = (ranked_t){ logits[i], i };
    qsort(r, (size_t)s->vocab, sizeof *r, by_rank);
    double total = 0, zmax = r[0].z, t = s->temperature;
    for (int i = 0; i < s->top_k; i++)
        total += exp(((double)r[i].z - zmax) / t);
    double u = (double)(erase_rng_next(&s->rng) >> 11) * (1.0 / 9007199254740992.0) * total, sum = 0;
    for (int i = 0; i < s->top_k; i++) {
        sum += exp(((double)r[i].z - zmax) / t);
        if (sum > u) {
            *token = r[i].id;
            return ERASE_OK;
        }
    }
    *token = r[s->top_k - 1].id; /* u * total rounded up to the total */
    return ERASE_OK;
}

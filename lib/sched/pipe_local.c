/*
 * --schedule local in the stage executor (lib/sched/pipe_internal.h):
 * stage s trains in step t the batch of step t - s, kept in a ring of s + 1
 * copies; its outputs leave in the next step from one of two send buffers;
 * ahead of each batch's activations s-1 sends the version of the weights
 * that computed them, and s accounts the lag. No gradient crosses stages.
 */
#include "lib/sched/pipe_internal.h"

#include "lib/core/checked.h"

#include <limits.h>
#include <stdlib.h>

/* The two send buffers of the stage's output activations. */
static erase_status_t send_buffers(erase_pipe_t *p)
{
    int w;
    (void)erase_network_block_input(p->net, p->o.last, &w);
    size_t bytes;
    if (!erase_bytes(sizeof(float) * (size_t)p->o.micro_batches, p->o.micro_size, w, &bytes))
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: %d micro-batches of %d x %d activations overflow",
                           p->o.micro_batches, p->o.micro_size, w);
    for (int i = 0; i < 2; i++) {
        ERASE_CHECK(erase_malloc(p->dev, bytes, (void **)&p->send_buf[i]));
        ERASE_CHECK(erase_malloc(p->dev, sizeof(int64_t), (void **)&p->send_version[i]));
        ERASE_CHECK(erase_event_create(p->dev, &p->send_free[i]));
    }
    ERASE_CHECK(erase_event_create(p->dev, &p->send_ready));
    return ERASE_OK;
}

erase_status_t pipe_local_create(erase_pipe_t *p)
{
    /* a ring batch holds a whole step: erase_pipe_step takes up to M x
     * micro_size samples (the network's max_batch may be a micro-batch) */
    int64_t step_max = (int64_t)p->o.micro_batches * p->o.micro_size;
    if (step_max > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "pipeline: %d micro-batches of %d samples: a step of more than %d "
                           "samples", p->o.micro_batches, p->o.micro_size, INT_MAX);
    p->R = p->s + 1;
    p->ring = calloc((size_t)p->R, sizeof *p->ring);
    if (!p->ring)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "pipeline: no memory for %d batches", p->R);
    for (int i = 0; i < p->R; i++)
        ERASE_CHECK(erase_network_batch_alloc(p->net, (int)step_max, &p->ring[i]));
    ERASE_CHECK(erase_malloc(p->dev, sizeof(int64_t), (void **)&p->version_in));
    return is_last(p) ? ERASE_OK : send_buffers(p);
}

void pipe_local_destroy(erase_pipe_t *p)
{
    for (int i = 0; p->ring && i < p->R; i++)
        erase_network_batch_free(p->net, &p->ring[i]);
    free(p->ring);
    erase_free(p->dev, p->version_in);
    for (int i = 0; i < 2; i++) {
        erase_free(p->dev, p->send_buf[i]);
        erase_free(p->dev, p->send_version[i]);
        erase_event_destroy(p->send_free[i]);
    }
    erase_event_destroy(p->send_ready);
}

/* The version of this stage's weights that forwards the occupant
 * of sl (the batch's first micro-batch) to s+1, and from s-1 the version
 * of the weights that computed its input, ahead of the activations on
 * the same link; the lag is accounted once the receive is done
 * (pipe_local_account_version). */
erase_status_t pipe_local_exchange_version(erase_pipe_t *p)
{
    if (!is_first(p)) {
        ERASE_CHECK(erase_recv(p->o.pp, p->act_in, p->version_in, 1, ERASE_DTYPE_I64, p->s - 1, TAG_VERSION));
        p->version_own = p->version_base + p->updates;
        p->version_pending = 1;
        p->stats.bytes_received += (int64_t)sizeof(int64_t);
    }
    if (!is_last(p)) {
        int k = (int)(p->cur % 2);
        if (p->send_used[k]) /* the batch two before has left */
            ERASE_CHECK(erase_stream_wait_event(p->compute, p->send_free[k]));
        p->send_used[k] = 1;
        ERASE_CHECK(erase_memcpy_async(p->compute, p->send_version[k], &erase_optimizer_clock(p->opt)->step,
                               sizeof(int64_t)));
        ERASE_CHECK(erase_event_record(p->send_ready, p->compute));
        ERASE_CHECK(erase_stream_wait_event(p->act_out, p->send_ready));
        ERASE_CHECK(erase_send(p->o.pp, p->act_out, p->send_version[k], 1, ERASE_DTYPE_I64, p->s + 1, TAG_VERSION));
        p->stats.bytes_sent += (int64_t)sizeof(int64_t);
    }
    return ERASE_OK;
}

/* After the receive streams are synchronized: the lag of the batch whose
 * version arrived (this stage's updates minus those of s-1's weights that
 * computed its input; 0: the arithmetic of one rank). */
erase_status_t pipe_local_account_version(erase_pipe_t *p)
{
    if (!p->version_pending)
        return ERASE_OK;
    int64_t v;
    ERASE_CHECK(erase_memcpy_sync(p->dev, &v, p->version_in, sizeof v));
    int64_t lag = p->version_own - v;
    int64_t bin = lag < 0 ? -lag : lag;
    p->stats.lag[bin < ERASE_PIPE_MAX_DRIFT ? bin : ERASE_PIPE_MAX_DRIFT - 1]++;
    if (bin > p->stats.max_lag)
        p->stats.max_lag = (int)bin;
    p->stats.lag_batches++;
    p->version_pending = 0;
    return ERASE_OK;
}

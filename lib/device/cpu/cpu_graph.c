/*
 * CPU graphs by stream capture, with CUDA's rules: while a stream captures,
 * what the host issues to it is recorded, not run; a stream that waits on an
 * event recorded inside the capture joins it (a new lane); at the end every
 * lane must be joined back into the origin. Launching replays the recorded
 * nodes in their captured order, each to its lane's stream (lane 0 to the
 * launch stream), with graph-owned events in place of the captured ones, so
 * every stream sees the same operations and the same cross-stream edges as
 * when they were issued eagerly.
 */
#include "lib/device/cpu/cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cpu_op_kind_t kind;
    int lane;
    int slot;                    /* RECORD / WAIT: graph event slot */
    erase_cpu_kernel_fn fn;
    size_t args_size;
    _Alignas(16) unsigned char args[];
} gnode_t;

struct cpu_graph {
    erase_graph_t base;
    uint64_t id;
    pthread_mutex_t lock;        /* appends may come from several host threads */
    cpu_stream_t **lanes;        /* lanes[0] is the origin */
    int nlanes, lanes_cap;
    gnode_t **nodes;
    size_t nnodes, nodes_cap;
    int nslots;
    erase_status_t broken;       /* first error during capture */
    char broken_text[512];
    /* replay resources, made at end_capture */
    cpu_event_t **slot_events;
    cpu_event_t *fork;
    cpu_event_t **joins;         /* one per lane */
};

/* Captures in progress, so a stream outside a capture can find the one
 * whose event it waits on. */
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_graph_t *active[64];
static uint64_t next_capture_id = 1;

static cpu_graph_t *active_find(uint64_t id)
{
    cpu_graph_t *g = NULL;
    pthread_mutex_lock(&active_lock);
    for (size_t i = 0; i < sizeof active / sizeof active[0]; i++)
        if (active[i] && active[i]->id == id)
            g = active[i];
    pthread_mutex_unlock(&active_lock);
    return g;
}

static void active_remove(cpu_graph_t *g)
{
    pthread_mutex_lock(&active_lock);
    for (size_t i = 0; i < sizeof active / sizeof active[0]; i++)
        if (active[i] == g)
            active[i] = NULL;
    pthread_mutex_unlock(&active_lock);
}

/* Lane of stream s in g, or -1. Graph lock held. */
static int lane_of(cpu_graph_t *g, cpu_stream_t *s)
{
    for (int i = 0; i < g->nlanes; i++)
        if (g->lanes[i] == s)
            return i;
    return -1;
}

static erase_status_t add_lane(cpu_graph_t *g, cpu_stream_t *s, int *lane)
{
    if (g->nlanes == g->lanes_cap) {
        int cap = g->lanes_cap ? 2 * g->lanes_cap : 4;
        cpu_stream_t **p = realloc(g->lanes, (size_t)cap * sizeof *p);
        if (!p)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "graph capture: no memory for a stream");
        g->lanes = p;
        g->lanes_cap = cap;
    }
    *lane = g->nlanes;
    g->lanes[g->nlanes++] = s;
    return ERASE_OK;
}

/* Append a node on lane; graph lock held. */
static erase_status_t append(cpu_graph_t *g, cpu_op_kind_t kind, int lane, int slot,
                             erase_cpu_kernel_fn fn, const void *args, size_t args_size)
{
    if (g->nnodes == g->nodes_cap) {
        size_t cap = g->nodes_cap ? 2 * g->nodes_cap : 64;
        gnode_t **p = realloc(g->nodes, cap * sizeof *p);
        if (!p)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "graph capture: no memory for a node");
        g->nodes = p;
        g->nodes_cap = cap;
    }
    gnode_t *n = malloc(sizeof *n + args_size);
    if (!n)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "graph capture: no memory for a node");
    n->kind = kind;
    n->lane = lane;
    n->slot = slot;
    n->fn = fn;
    n->args_size = args_size;
    if (args_size)
        memcpy(n->args, args, args_size);
    g->nodes[g->nnodes++] = n;
    return ERASE_OK;
}

/* Mark the capture invalid: end_capture will report this first error. */
static erase_status_t capture_fail(cpu_graph_t *g, erase_status_t st)
{
    if (g->broken == ERASE_OK) {
        g->broken = st;
        snprintf(g->broken_text, sizeof g->broken_text, "%s", erase_error_message());
    }
    return st;
}

erase_status_t cpu_graph_add_kernel(cpu_graph_t *g, cpu_stream_t *s, erase_cpu_kernel_fn fn,
                                    const void *args, size_t args_size)
{
    pthread_mutex_lock(&g->lock);
    int lane = lane_of(g, s);
    erase_status_t st = append(g, CPU_OP_KERNEL, lane, -1, fn, args, args_size);
    if (st != ERASE_OK)
        capture_fail(g, st);
    pthread_mutex_unlock(&g->lock);
    return st;
}

erase_status_t cpu_graph_add_record(cpu_graph_t *g, cpu_stream_t *s, cpu_event_t *e)
{
    pthread_mutex_lock(&g->lock);
    int lane = lane_of(g, s);
    int slot = g->nslots++;
    erase_status_t st = append(g, CPU_OP_RECORD, lane, slot, NULL, NULL, 0);
    if (st == ERASE_OK) {
        pthread_mutex_lock(&e->lock);
        e->capture_id = g->id;
        e->capture_slot = slot;
        pthread_mutex_unlock(&e->lock);
    } else {
        capture_fail(g, st);
    }
    pthread_mutex_unlock(&g->lock);
    return st;
}

erase_status_t cpu_graph_add_wait(cpu_graph_t *g, cpu_stream_t *s, cpu_event_t *e)
{
    pthread_mutex_lock(&e->lock);
    uint64_t id = e->capture_id;
    int slot = e->capture_slot;
    pthread_mutex_unlock(&e->lock);

    if (!g) { /* s is not capturing: waiting on a captured event joins s */
        g = active_find(id);
        if (!g)
            return ERASE_ERROR(ERASE_ERR_STATE,
                               "stream wait: the event was recorded inside a stream capture that has ended; record it again");
        pthread_mutex_lock(&g->lock);
        int lane;
        erase_status_t st = add_lane(g, s, &lane);
        if (st == ERASE_OK)
            st = append(g, CPU_OP_WAIT, lane, slot, NULL, NULL, 0);
        if (st != ERASE_OK) {
            capture_fail(g, st);
            pthread_mutex_unlock(&g->lock);
            return st;
        }
        pthread_mutex_lock(&s->lock);
        s->capture = g;
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_unlock(&g->lock);
        return ERASE_OK;
    }

    pthread_mutex_lock(&g->lock);
    erase_status_t st;
    if (id != g->id) {
        st = capture_fail(g, ERASE_ERROR(ERASE_ERR_STATE,
                                         "stream wait during capture on an event recorded outside this capture "
                                         "(CUDA forbids this too: record it inside the capture)"));
    } else {
        st = append(g, CPU_OP_WAIT, lane_of(g, s), slot, NULL, NULL, 0);
        if (st != ERASE_OK)
            capture_fail(g, st);
    }
    pthread_mutex_unlock(&g->lock);
    return st;
}

erase_status_t cpu_begin_capture(erase_stream_t *stream)
{
    cpu_stream_t *s = cpu_stream(stream);
    pthread_mutex_lock(&s->lock);
    int busy = s->capture != NULL;
    pthread_mutex_unlock(&s->lock);
    if (busy)
        return ERASE_ERROR(ERASE_ERR_STATE, "begin_capture: the stream is already capturing");

    cpu_graph_t *g = calloc(1, sizeof *g);
    if (!g)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "begin_capture: no memory");
    g->base.dev = stream->dev;
    pthread_mutex_init(&g->lock, NULL);
    int lane;
    if (add_lane(g, s, &lane) != ERASE_OK) {
        pthread_mutex_destroy(&g->lock);
        free(g);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "begin_capture: no memory");
    }
    int placed = 0;
    pthread_mutex_lock(&active_lock);
    g->id = next_capture_id++;
    for (size_t i = 0; i < sizeof active / sizeof active[0] && !placed; i++)
        if (!active[i]) {
            active[i] = g;
            placed = 1;
        }
    pthread_mutex_unlock(&active_lock);
    if (!placed) {
        free(g->lanes);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return ERASE_ERROR(ERASE_ERR_STATE, "begin_capture: too many captures in progress (at most 64)");
    }
    pthread_mutex_lock(&s->lock);
    s->capture = g;
    pthread_mutex_unlock(&s->lock);
    return ERASE_OK;
}

int cpu_is_capturing(const erase_stream_t *stream)
{
    cpu_stream_t *s = (cpu_stream_t *)stream;
    pthread_mutex_lock(&s->lock);
    int c = s->capture != NULL;
    pthread_mutex_unlock(&s->lock);
    return c;
}

/*
 * Every lane must reach the origin: lane j is joined when its last node is
 * a record whose slot some already-joined lane waits on later. Fixed point
 * from the origin (lane 0); returns the first unjoined lane or -1.
 */
static int first_unjoined_lane(const cpu_graph_t *g)
{
    int *joined = calloc((size_t)g->nlanes, sizeof *joined);
    size_t *last = calloc((size_t)g->nlanes, sizeof *last);
    int *has = calloc((size_t)g->nlanes, sizeof *has);
    int bad = -1;
    if (!joined || !last || !has) {
        bad = 1;
        goto out;
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        last[g->nodes[i]->lane] = i;
        has[g->nodes[i]->lane] = 1;
    }
    joined[0] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int j = 1; j < g->nlanes; j++) {
            if (joined[j] || !has[j])
                continue;
            const gnode_t *tail = g->nodes[last[j]];
            if (tail->kind != CPU_OP_RECORD)
                continue;
            for (size_t i = last[j] + 1; i < g->nnodes; i++) {
                const gnode_t *n = g->nodes[i];
                if (n->kind == CPU_OP_WAIT && n->slot == tail->slot && joined[n->lane]) {
                    joined[j] = 1;
                    changed = 1;
                    break;
                }
            }
        }
    }
    for (int j = 1; j < g->nlanes && bad < 0; j++)
        if (!joined[j])
            bad = j;
out:
    free(joined);
    free(last);
    free(has);
    return bad;
}

erase_status_t cpu_end_capture(erase_stream_t *stream, erase_graph_t **out)
{
    cpu_stream_t *s = cpu_stream(stream);
    pthread_mutex_lock(&s->lock);
    cpu_graph_t *g = s->capture;
    pthread_mutex_unlock(&s->lock);
    if (!g)
        return ERASE_ERROR(ERASE_ERR_STATE, "end_capture: the stream is not capturing");
    pthread_mutex_lock(&g->lock);
    int origin = g->lanes[0] == s;
    pthread_mutex_unlock(&g->lock);
    if (!origin)
        return ERASE_ERROR(ERASE_ERR_STATE,
                           "end_capture must be called on the stream that began the capture");

    active_remove(g);
    for (int i = 0; i < g->nlanes; i++) {
        pthread_mutex_lock(&g->lanes[i]->lock);
        g->lanes[i]->capture = NULL;
        pthread_mutex_unlock(&g->lanes[i]->lock);
    }
    erase_status_t st = ERASE_OK;
    int lane;
    if (g->broken != ERASE_OK) {
        st = ERASE_ERROR(g->broken, "end_capture: the capture was invalidated: %s", g->broken_text);
    } else if ((lane = first_unjoined_lane(g)) >= 0) {
        st = ERASE_ERROR(ERASE_ERR_STATE,
                         "end_capture: captured stream %d of %d was not joined back into the origin "
                         "(record an event after its last operation and make the origin wait on it)",
                         lane, g->nlanes);
    }
    if (st == ERASE_OK) {
        g->slot_events = calloc((size_t)g->nslots + 1, sizeof *g->slot_events);
        g->joins = calloc((size_t)g->nlanes, sizeof *g->joins);
        if (!g->slot_events || !g->joins)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "end_capture: no memory");
        for (int i = 0; st == ERASE_OK && i < g->nslots; i++)
            st = cpu_event_create(stream->dev, (erase_event_t **)&g->slot_events[i]);
        if (st == ERASE_OK)
            st = cpu_event_create(stream->dev, (erase_event_t **)&g->fork);
        for (int i = 1; st == ERASE_OK && i < g->nlanes; i++)
            st = cpu_event_create(stream->dev, (erase_event_t **)&g->joins[i]);
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        cpu_graph_destroy(&g->base);
        return st;
    }
    *out = &g->base;
    return ERASE_OK;
}

erase_status_t cpu_graph_launch(erase_graph_t *graph, erase_stream_t *stream)
{
    cpu_graph_t *g = cpu_graph(graph);
    cpu_stream_t *origin = cpu_stream(stream);
    if (cpu_is_capturing(stream))
        return ERASE_ERROR(ERASE_ERR_STATE, "graph launch into a capturing stream is not supported");
#define LANE_STREAM(l) ((l) == 0 ? origin : g->lanes[(l)])
    /* fork: every other lane starts after what precedes the launch */
    if (g->nlanes > 1)
        ERASE_CHECK(cpu_stream_push_record(origin, g->fork));
    for (int l = 1; l < g->nlanes; l++)
        if (g->lanes[l] != origin)
            ERASE_CHECK(cpu_stream_push_wait(g->lanes[l], g->fork));
    for (size_t i = 0; i < g->nnodes; i++) {
        const gnode_t *n = g->nodes[i];
        cpu_stream_t *s = LANE_STREAM(n->lane);
        switch (n->kind) {
        case CPU_OP_KERNEL:
            ERASE_CHECK(cpu_stream_push_kernel(s, n->fn, n->args, n->args_size));
            break;
        case CPU_OP_RECORD:
            ERASE_CHECK(cpu_stream_push_record(s, g->slot_events[n->slot]));
            break;
        case CPU_OP_WAIT:
            ERASE_CHECK(cpu_stream_push_wait(s, g->slot_events[n->slot]));
            break;
        }
    }
    /* join: the launch stream waits for every lane */
    for (int l = 1; l < g->nlanes; l++) {
        if (g->lanes[l] == origin)
            continue;
        ERASE_CHECK(cpu_stream_push_record(g->lanes[l], g->joins[l]));
        ERASE_CHECK(cpu_stream_push_wait(origin, g->joins[l]));
    }
#undef LANE_STREAM
    return ERASE_OK;
}

size_t cpu_graph_node_count(const erase_graph_t *graph)
{
    return ((const cpu_graph_t *)graph)->nnodes;
}

void cpu_graph_destroy(erase_graph_t *graph)
{
    cpu_graph_t *g = cpu_graph(graph);
    if (g->slot_events)
        for (int i = 0; i < g->nslots; i++)
            if (g->slot_events[i])
                cpu_event_destroy(&g->slot_events[i]->base);
    if (g->fork)
        cpu_event_destroy(&g->fork->base);
    if (g->joins)
        for (int i = 1; i < g->nlanes; i++)
            if (g->joins[i])
                cpu_event_destroy(&g->joins[i]->base);
    for (size_t i = 0; i < g->nnodes; i++)
        free(g->nodes[i]);
    free(g->nodes);
    free(g->slot_events);
    free(g->joins);
    free(g->lanes);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

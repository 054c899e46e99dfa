/* Encoding as tiktoken encodes (io/tokenizer.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/pretokenize.h"
#include "io/tokenizer.h"
#include "io/tokenizer_internal.h"

static erase_status_t reserve(erase_token_ids_t *out, size_t more)
{
    if (out->count + more <= out->capacity)
        return ERASE_OK;
    size_t cap = out->capacity ? out->capacity : 1024;
    while (cap < out->count + more)
        cap *= 2;
    uint32_t *ids = realloc(out->ids, cap * sizeof *ids);
    if (!ids)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "encode: out of memory (%zu tokens)", cap);
    out->ids = ids, out->capacity = cap;
    return ERASE_OK;
}

static uint32_t pair_rank(const erase_tokenizer_t *tok, uint32_t left, uint32_t right)
{
    return erase_u64_map_get(&tok->by_pair, (uint64_t)left << 32 | right);
}

/* Pieces longer than this merge through a heap (n log n) instead of
 * scanning for the lowest rank at every merge (n^2). */
#define LONG_PIECE 128

typedef struct {
    uint32_t id, rank;    /* its token; the rank of it and the next part merged */
    int64_t prev, next;   /* -1: none */
    uint32_t version;     /* bumped whenever rank changes; UINT32_MAX: merged away */
} part_t;

typedef struct {
    uint32_t rank, version;
    uint64_t at; /* the part's index: its first byte, so the leftmost sorts first */
} merge_t;

static int merge_before(const merge_t *a, const merge_t *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->at < b->at;
}

static void merge_push(merge_t *heap, size_t *count, merge_t m)
{
    size_t i = (*count)++;
    while (i > 0 && merge_before(&m, &heap[(i - 1) / 2])) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = m;
}

static merge_t merge_pop(merge_t *heap, size_t *count)
{
    merge_t top = heap[0], last = heap[--*count];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *count)
            break;
        if (c + 1 < *count && merge_before(&heap[c + 1], &heap[c]))
            c++;
        if (!merge_before(&heap[c], &last))
            break;
        heap[i] = heap[c];
        i = c;
    }
    if (*count)
        heap[i] = last;
    return top;
}

/* Set part i's rank with its next part and queue it. */
static void requeue(const erase_tokenizer_t *tok, part_t *parts, int64_t i, merge_t *heap, size_t *count)
{
    part_t *a = &parts[i];
    a->rank = a->next < 0 ? ERASE_NO_RANK : pair_rank(tok, a->id, parts[a->next].id);
    a->version++;
    if (a->rank != ERASE_NO_RANK)
        merge_push(heap, count, (merge_t){a->rank, a->version, (uint64_t)i});
}

/* encode_piece's merging for a long piece: the same order (the lowest
 * rank, then the leftmost), the candidates in a heap. */
static erase_status_t merge_long(const erase_tokenizer_t *tok, const uint8_t *p, size_t n, erase_token_ids_t *out)
{
    part_t *parts = malloc(n * sizeof *parts);
    merge_t *heap = malloc(3 * n * sizeof *heap); /* n at first, 2 more per merge, n - 1 merges at most */
    if (!parts || !heap) {
        free(parts), free(heap);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "encode: out of memory (a piece of %zu bytes)", n);
    }
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        parts[i] = (part_t){p[i], ERASE_NO_RANK, (int64_t)i - 1, i + 1 < n ? (int64_t)i + 1 : -1, 0};
    for (size_t i = 0; i + 1 < n; i++)
        requeue(tok, parts, (int64_t)i, heap, &count);
    while (count) {
        merge_t m = merge_pop(heap, &count);
        part_t *a = &parts[m.at];
        if (a->version != m.version)
            continue; /* stale: merged away or its rank changed since */
        int64_t gone = a->next;
        a->id = a->rank;
        a->next = parts[gone].next;
        if (a->next >= 0)
            parts[a->next].prev = (int64_t)m.at;
        parts[gone].version = UINT32_MAX;
        requeue(tok, parts, (int64_t)m.at, heap, &count);
        if (a->prev >= 0)
            requeue(tok, parts, a->prev, heap, &count);
    }
    for (int64_t i = 0; i >= 0; i = parts[i].next)
        out->ids[out->count++] = parts[i].id;
    free(parts), free(heap);
    return ERASE_OK;
}

/* One piece (n >= 1 bytes) into out->ids (room for n ids reserved):
 * the lowest-ranked adjacent pair merged first, the leftmost on ties. */
static erase_status_t encode_piece(const erase_tokenizer_t *tok, const uint8_t *p, size_t n, erase_token_ids_t *out)
{
    uint32_t whole = n == 1 ? p[0] : erase_tokenizer_rank_of_bytes(tok, p, n);
    if (whole != ERASE_NO_RANK) {
        out->ids[out->count++] = whole;
        return ERASE_OK;
    }
    if (n > LONG_PIECE)
        return merge_long(tok, p, n, out);
    uint32_t stack[2 * LONG_PIECE], *parts = stack;
    uint32_t *ranks = parts + n; /* ranks[i]: the rank of parts[i] + parts[i+1] */
    size_t m = n;
    for (size_t i = 0; i < n; i++)
        parts[i] = p[i];
    for (size_t i = 0; i + 1 < m; i++)
        ranks[i] = pair_rank(tok, parts[i], parts[i + 1]);
    while (m > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < m; i++)
            if (ranks[i] < ranks[best])
                best = i;
        if (ranks[best] == ERASE_NO_RANK)
            break;
        parts[best] = ranks[best];
        size_t tail = m - best - 2; /* parts after the pair */
        memmove(parts + best + 1, parts + best + 2, tail * sizeof *parts);
        if (tail > 0)
            memmove(ranks + best + 1, ranks + best + 2, (tail - 1) * sizeof *ranks);
        m--;
        if (best + 1 < m)
            ranks[best] = pair_rank(tok, parts[best], parts[best + 1]);
        if (best > 0)
            ranks[best - 1] = pair_rank(tok, parts[best - 1], parts[best]);
    }
    memcpy(out->ids + out->count, parts, m * sizeof *parts);
    out->count += m;
    return ERASE_OK;
}

static erase_status_t encode_ordinary(const erase_tokenizer_t *tok, const uint8_t *t, size_t n, erase_token_ids_t *out)
{
    ERASE_CHECK(reserve(out, n));
    for (size_t pos = 0; pos < n;) {
        size_t end = erase_pretokenize_next(t, n, pos, tok->digits);
        ERASE_CHECK(encode_piece(tok, t + pos, end - pos, out));
        pos = end;
    }
    return ERASE_OK;
}

/* The first special token name in t[0..n): its index s and offset *at; -1 if none. */
static int find_special(const uint8_t *t, size_t n, size_t *at)
{
    for (const uint8_t *p = t; (p = memchr(p, '<', n - (size_t)(p - t))) != NULL; p++) {
        size_t left = n - (size_t)(p - t);
        if (left < 2 || p[1] != '|')
            continue;
        for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++) {
            size_t len = strlen(erase_tokenizer_special_names[s]);
            if (len <= left && memcmp(p, erase_tokenizer_special_names[s], len) == 0) {
                *at = (size_t)(p - t);
                return s;
            }
        }
    }
    return -1;
}

static erase_status_t encode_one_thread(const erase_tokenizer_t *tok, const uint8_t *t, size_t n, int flags,
                                        erase_token_ids_t *out)
{
    if (!(flags & ERASE_ENCODE_SPECIALS))
        return encode_ordinary(tok, t, n, out);
    size_t pos = 0, at;
    int s;
    while ((s = find_special(t + pos, n - pos, &at)) >= 0) {
        ERASE_CHECK(encode_ordinary(tok, t + pos, at, out));
        ERASE_CHECK(reserve(out, 1));
        out->ids[out->count++] = (uint32_t)tok->special[s];
        pos += at + strlen(erase_tokenizer_special_names[s]);
    }
    return encode_ordinary(tok, t + pos, n - pos, out);
}

typedef struct {
    const erase_tokenizer_t *tok;
    const uint8_t *text;
    size_t n;
    int flags;
    erase_token_ids_t ids;
    erase_status_t status;
    char message[256];
} encode_part_t;

static void *encode_part(void *arg)
{
    encode_part_t *part = arg;
    part->status = encode_one_thread(part->tok, part->text, part->n, part->flags, &part->ids);
    if (part->status != ERASE_OK)
        snprintf(part->message, sizeof part->message, "%s", erase_error_reason());
    return NULL;
}

erase_status_t erase_tokenizer_encode(const erase_tokenizer_t *tok, const uint8_t *text, size_t n, int flags,
                                      int threads, erase_token_ids_t *out)
{
    if (threads < 2 || n < ((size_t)1 << 16))
        return encode_one_thread(tok, text, n, flags, out);
    if (threads > 64)
        threads = 64;
    encode_part_t parts[64];
    pthread_t ids[64];
    int started[64] = {0};
    size_t from = 0;
    for (int i = 0; i < threads; i++) {
        size_t to = i + 1 == threads ? n : erase_pretokenize_safe_cut(text, n, n / (size_t)threads * (size_t)(i + 1));
        if (to < from)
            to = from;
        parts[i] = (encode_part_t){tok, text + from, to - from, flags, {0}, ERASE_OK, ""};
        from = to;
    }
    for (int i = 1; i < threads; i++)
        started[i] = pthread_create(&ids[i], NULL, encode_part, &parts[i]) == 0;
    encode_part(&parts[0]);
    for (int i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(ids[i], NULL);
        else
            encode_part(&parts[i]);
    }
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < threads; i++) {
        if (st == ERASE_OK && parts[i].status != ERASE_OK)
            st = ERASE_ERROR(parts[i].status, "%s", parts[i].message);
        if (st == ERASE_OK)
            st = reserve(out, parts[i].ids.count);
        if (st == ERASE_OK) {
            memcpy(out->ids + out->count, parts[i].ids.ids, parts[i].ids.count * sizeof *out->ids);
            out->count += parts[i].ids.count;
        }
        erase_token_ids_free(&parts[i].ids);
    }
    return st;
}

size_t erase_tokenizer_chunk_end(const uint8_t *text, size_t n, size_t from)
{
    return erase_pretokenize_safe_cut(text, n, from);
}

erase_status_t erase_tokenizer_encode16(const erase_tokenizer_t *tok, const uint8_t *text, size_t n, int flags,
                                        int threads, uint16_t **out, size_t *count)
{
    erase_token_ids_t ids = {0};
    ERASE_CHECK(erase_tokenizer_encode(tok, text, n, flags, threads, &ids));
    uint16_t *narrow = malloc((ids.count ? ids.count : 1) * sizeof *narrow);
    if (!narrow) {
        erase_token_ids_free(&ids);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "encode: out of memory (%zu tokens)", ids.count);
    }
    for (size_t i = 0; i < ids.count; i++)
        narrow[i] = (uint16_t)ids.ids[i];
    *out = narrow, *count = ids.count;
    erase_token_ids_free(&ids);
    return ERASE_OK;
}

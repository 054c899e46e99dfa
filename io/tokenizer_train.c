/* BPE training in rustbpe's merge order (io/tokenizer.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/pretokenize.h"
#include "io/tokenizer.h"
#include "io/tokenizer_internal.h"
#include "lib/core/fs.h"

erase_tokenizer_train_options_t erase_tokenizer_train_options_default(void)
{
    return (erase_tokenizer_train_options_t){.vocab = 4096, .pattern = ERASE_SPLIT_PATTERN_NANOCHAT};
}

/* ---- the distinct pieces of the text and how often each occurs ---- */

typedef struct {
    uint8_t *arena;      /* the pieces' bytes */
    size_t arena_bytes, arena_capacity;
    uint64_t *start;     /* [count]: piece i is arena[start[i] .. start[i] + length[i]) */
    uint32_t *length;
    uint64_t *hash;
    int64_t *times;      /* occurrences */
    size_t count, capacity;
    uint32_t *slots;     /* open addressing: piece index + 1, 0 empty */
    size_t slot_count;   /* a power of two */
} piece_table_t;

static void pieces_free(piece_table_t *t)
{
    free(t->arena), free(t->start), free(t->length), free(t->hash), free(t->times), free(t->slots);
    memset(t, 0, sizeof *t);
}

static int pieces_grow_slots(piece_table_t *t)
{
    size_t n = t->slot_count ? 2 * t->slot_count : 1 << 12;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->count; i++) {
        size_t s = (size_t)t->hash[i] & (n - 1);
        while (slots[s])
            s = (s + 1) & (n - 1);
        slots[s] = (uint32_t)(i + 1);
    }
    free(t->slots);
    t->slots = slots, t->slot_count = n;
    return 0;
}

/* Count `times` more occurrences of the piece p[0..n). 0, or -1 when out of memory. */
static int pieces_add(piece_table_t *t, const uint8_t *p, size_t n, uint64_t h, int64_t times)
{
    if (2 * (t->count + 1) > t->slot_count && pieces_grow_slots(t))
        return -1;
    size_t s = (size_t)h & (t->slot_count - 1);
    for (; t->slots[s]; s = (s + 1) & (t->slot_count - 1)) {
        size_t i = t->slots[s] - 1;
        if (t->hash[i] == h && t->length[i] == n && memcmp(t->arena + t->start[i], p, n) == 0) {
            t->times[i] += times;
            return 0;
        }
    }
    if (t->count == t->capacity) {
        size_t cap = t->capacity ? 2 * t->capacity : 1024;
        uint64_t *start = realloc(t->start, cap * sizeof *start);
        if (start)
            t->start = start;
        uint32_t *length = realloc(t->length, cap * sizeof *length);
        if (length)
            t->length = length;
        uint64_t *hash = realloc(t->hash, cap * sizeof *hash);
        if (hash)
            t->hash = hash;
        int64_t *tm = realloc(t->times, cap * sizeof *tm);
        if (tm)
            t->times = tm;
        if (!start || !length || !hash || !tm)
            return -1;
        t->capacity = cap;
    }
    if (t->arena_bytes + n > t->arena_capacity) {
        size_t cap = t->arena_capacity ? 2 * t->arena_capacity : 1 << 16;
        while (cap < t->arena_bytes + n)
            cap *= 2;
        uint8_t *arena = realloc(t->arena, cap);
        if (!arena)
            return -1;
        t->arena = arena, t->arena_capacity = cap;
    }
    memcpy(t->arena + t->arena_bytes, p, n);
    size_t i = t->count++;
    t->start[i] = t->arena_bytes, t->length[i] = (uint32_t)n, t->hash[i] = h, t->times[i] = times;
    t->arena_bytes += n;
    t->slots[s] = (uint32_t)(i + 1);
    return 0;
}

typedef struct {
    const uint8_t *text;
    size_t n;
    int digits;
    piece_table_t table;
    int failed;
} count_part_t;

static void *count_part(void *arg)
{
    count_part_t *c = arg;
    for (size_t pos = 0; pos < c->n && !c->failed;) {
        size_t end = erase_pretokenize_next(c->text, c->n, pos, c->digits);
        const uint8_t *p = c->text + pos;
        c->failed = pieces_add(&c->table, p, end - pos, erase_mix64(erase_fnv1a64_more(ERASE_FNV_START, p, end - pos)), 1);
        pos = end;
    }
    return NULL;
}

/* Add the pieces of text[0..n) to `all`, counting on `threads` threads. */
static erase_status_t count_pieces(const uint8_t *text, size_t n, int digits, int threads, piece_table_t *all)
{
    count_part_t parts[64];
    pthread_t ids[64];
    int started[64] = {0};
    if (threads > 64)
        threads = 64;
    if (n < ((size_t)1 << 16))
        threads = 1;
    size_t from = 0;
    for (int i = 0; i < threads; i++) {
        size_t to = i + 1 == threads ? n : erase_pretokenize_safe_cut(text, n, n / (size_t)threads * (size_t)(i + 1));
        if (to < from)
            to = from;
        parts[i] = (count_part_t){text + from, to - from, digits, {0}, 0};
        from = to;
    }
    for (int i = 1; i < threads; i++)
        started[i] = pthread_create(&ids[i], NULL, count_part, &parts[i]) == 0;
    count_part(&parts[0]);
    int failed = 0;
    for (int i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(ids[i], NULL);
        else
            count_part(&parts[i]);
    }
    for (int i = 0; i < threads; i++) {
        piece_table_t *t = &parts[i].table;
        failed |= parts[i].failed;
        for (size_t k = 0; k < t->count && !failed; k++)
            failed = pieces_add(all, t->arena + t->start[k], t->length[k], t->hash[k], t->times[k]);
        pieces_free(t);
    }
    return failed ? ERASE_ERROR(ERASE_ERR_NOMEM, "tokenizer training: out of memory counting pieces") : ERASE_OK;
}

/* ---- the merge loop ---- */

typedef struct {
    uint64_t key;        /* left << 32 | right */
    int64_t count;       /* occurrences weighted by the pieces' counts */
    uint32_t *words;     /* the words where the pair was made (some may have lost it since) */
    uint32_t word_count, word_capacity;
    int64_t pushed_at;   /* the merge step that last queued it */
} pair_t;

typedef struct {
    int64_t count;
    uint64_t key;
} heap_item_t;

typedef struct {
    uint32_t **ids;      /* [words]: each word's tokens */
    uint32_t *length;
    int64_t *times;
    size_t words;
    erase_u64_map_t index; /* pair key -> index in pairs */
    pair_t *pairs;
    size_t pair_count, pair_capacity;
    heap_item_t *heap;
    size_t heap_count, heap_capacity;
    uint32_t *touched;   /* pairs made in this step */
    size_t touched_count, touched_capacity;
    int64_t step;
    int failed;
} bpe_t;

/* a before b in the queue: more occurrences, then the smaller pair. */
static int heap_before(const heap_item_t *a, const heap_item_t *b)
{
    return a->count != b->count ? a->count > b->count : a->key < b->key;
}

static void heap_push(bpe_t *s, int64_t count, uint64_t key)
{
    if (s->heap_count == s->heap_capacity) {
        size_t cap = s->heap_capacity ? 2 * s->heap_capacity : 1024;
        heap_item_t *h = realloc(s->heap, cap * sizeof *h);
        if (!h) {
            s->failed = 1;
            return;
        }
        s->heap = h, s->heap_capacity = cap;
    }
    size_t i = s->heap_count++;
    heap_item_t item = {count, key};
    while (i > 0 && heap_before(&item, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = item;
}

static heap_item_t heap_pop(bpe_t *s)
{
    heap_item_t top = s->heap[0], last = s->heap[--s->heap_count];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->heap_count)
            break;
        if (c + 1 < s->heap_count && heap_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!heap_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->heap_count)
        s->heap[i] = last;
    return top;
}

static pair_t *pair_of(bpe_t *s, uint64_t key)
{
    uint32_t at = erase_u64_map_get(&s->index, key);
    if (at != ERASE_NO_RANK)
        return &s->pairs[at];
    if (s->pair_count == s->pair_capacity) {
        size_t cap = s->pair_capacity ? 2 * s->pair_capacity : 4096;
        pair_t *p = realloc(s->pairs, cap * sizeof *p);
        if (!p)
            return NULL;
        s->pairs = p, s->pair_capacity = cap;
    }
    if (erase_u64_map_put(&s->index, key, (uint32_t)s->pair_count) != ERASE_OK)
        return NULL;
    pair_t *p = &s->pairs[s->pair_count++];
    *p = (pair_t){.key = key, .pushed_at = -1};
    return p;
}

/* Change a pair's count by delta (occurrences times the word's count);
 * a pair made (delta > 0) remembers the word and is queued after the step. */
static void pair_add(bpe_t *s, uint32_t left, uint32_t right, int64_t delta, uint32_t word)
{
    pair_t *p = pair_of(s, (uint64_t)left << 32 | right);
    if (!p) {
        s->failed = 1;
        return;
    }
    p->count += delta;
    if (delta <= 0)
        return;
    if (p->word_count == 0 || p->words[p->word_count - 1] != word) {
        if (p->word_count == p->word_capacity) {
            uint32_t cap = p->word_capacity ? 2 * p->word_capacity : 4;
            uint32_t *w = realloc(p->words, cap * sizeof *w);
            if (!w) {
                s->failed = 1;
                return;
            }
            p->words = w, p->word_capacity = cap;
        }
        p->words[p->word_count++] = word;
    }
    if (p->pushed_at != s->step) {
        p->pushed_at = s->step;
        if (s->touched_count == s->touched_capacity) {
            size_t cap = s->touched_capacity ? 2 * s->touched_capacity : 256;
            uint32_t *t = realloc(s->touched, cap * sizeof *t);
            if (!t) {
                s->failed = 1;
                return;
            }
            s->touched = t, s->touched_capacity = cap;
        }
        s->touched[s->touched_count++] = (uint32_t)(p - s->pairs);
    }
}

/* Merge every non-overlapping (a, b) of word w, left to right, into id,
 * updating the pair counts as rustbpe does. */
static void merge_word(bpe_t *s, uint32_t w, uint32_t a, uint32_t b, uint32_t id)
{
    uint32_t *ids = s->ids[w], n = s->length[w], out = 0, i = 0;
    int64_t c = s->times[w];
    while (i < n) {
        if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
            if (out > 0) {
                pair_add(s, ids[out - 1], a, -c, w);
                pair_add(s, ids[out - 1], id, c, w);
            }
            pair_add(s, a, b, -c, w);
            if (i + 2 < n) {
                pair_add(s, b, ids[i + 2], -c, w);
                pair_add(s, id, ids[i + 2], c, w);
            }
            ids[out++] = id;
            i += 2;
        } else {
            ids[out++] = ids[i++];
        }
    }
    s->length[w] = out;
}

static void bpe_free(bpe_t *s)
{
    for (size_t w = 0; w < s->words; w++)
        free(s->ids ? s->ids[w] : NULL);
    free(s->ids), free(s->length), free(s->times);
    for (size_t p = 0; p < s->pair_count; p++)
        free(s->pairs[p].words);
    free(s->pairs), free(s->heap), free(s->touched);
    erase_u64_map_free(&s->index);
}

/* Learn up to `merges` merges from the counted pieces into merged[2 * k]. */
static erase_status_t learn_merges(const piece_table_t *pieces, int64_t merges, FILE *progress, uint32_t *merged,
                                   int64_t *done)
{
    bpe_t s = {0};
    erase_status_t st = ERASE_OK;
    *done = 0;
    s.words = pieces->count;
    s.ids = calloc(s.words ? s.words : 1, sizeof *s.ids);
    s.length = malloc((s.words ? s.words : 1) * sizeof *s.length);
    s.times = malloc((s.words ? s.words : 1) * sizeof *s.times);
    if (!s.ids || !s.length || !s.times || erase_u64_map_init(&s.index, 1 << 16) != ERASE_OK) {
        s.failed = 1;
        goto out;
    }
    s.step = -1;
    for (size_t w = 0; w < s.words && !s.failed; w++) {
        uint32_t n = pieces->length[w];
        s.length[w] = n, s.times[w] = pieces->times[w];
        if (!(s.ids[w] = malloc((n ? n : 1) * sizeof **s.ids))) {
            s.failed = 1;
            break;
        }
        for (uint32_t i = 0; i < n; i++)
            s.ids[w][i] = pieces->arena[pieces->start[w] + i];
        for (uint32_t i = 0; i + 1 < n; i++)
            pair_add(&s, s.ids[w][i], s.ids[w][i + 1], s.times[w], (uint32_t)w);
    }
    for (size_t p = 0; p < s.pair_count && !s.failed; p++)
        if (s.pairs[p].count > 0)
            heap_push(&s, s.pairs[p].count, s.pairs[p].key);
    if (progress)
        fprintf(progress, "tokenizer: %zu distinct pieces, %zu pairs; learning %" PRId64 " merges\n", s.words,
                s.pair_count, merges);
    int64_t next_report = merges / 10;
    while (*done < merges && s.heap_count && !s.failed) {
        heap_item_t top = heap_pop(&s);
        pair_t *p = &s.pairs[erase_u64_map_get(&s.index, top.key)];
        if (p->count <= 0)
            continue;
        if (p->count != top.count) {
            heap_push(&s, p->count, top.key);
            continue;
        }
        uint32_t a = (uint32_t)(top.key >> 32), b = (uint32_t)top.key, id = (uint32_t)(256 + *done);
        merged[2 * *done] = a, merged[2 * *done + 1] = b;
        s.step = *done;
        s.touched_count = 0;
        uint32_t *words = p->words, word_count = p->word_count;
        p->words = NULL, p->word_count = p->word_capacity = 0;
        for (uint32_t k = 0; k < word_count; k++)
            merge_word(&s, words[k], a, b, id);
        free(words);
        for (size_t k = 0; k < s.touched_count; k++) {
            pair_t *q = &s.pairs[s.touched[k]];
            if (q->count > 0)
                heap_push(&s, q->count, q->key);
        }
        ++*done;
        if (progress && next_report > 0 && *done >= next_report && *done < merges) {
            fprintf(progress, "tokenizer: %" PRId64 "/%" PRId64 " merges (%d%%)\n", *done, merges,
                    (int)((100 * *done + merges / 2) / merges));
            next_report += merges / 10;
        }
    }
out:
    if (s.failed)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "tokenizer training: out of memory");
    bpe_free(&s);
    return st;
}

/* ---- training ---- */

static erase_status_t check_options(const erase_tokenizer_train_options_t *o, int *digits)
{
    if (o->vocab > ERASE_TOKENIZER_MAX_VOCAB)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--vocab %" PRId64 ": at most %d (tokens are stored as uint16 in token shards)",
                           o->vocab, ERASE_TOKENIZER_MAX_VOCAB);
    if (o->vocab < ERASE_TOKENIZER_MIN_VOCAB)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--vocab %" PRId64 ": at least %d (256 bytes and %d special tokens)",
                           o->vocab, ERASE_TOKENIZER_MIN_VOCAB, ERASE_TOKENIZER_SPECIALS);
    *digits = erase_split_pattern_digits(o->pattern ? o->pattern : ERASE_SPLIT_PATTERN_NANOCHAT);
    if (*digits < 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "split pattern not supported (GPT-4's or nanochat's: docs/tokenizer.md)");
    return ERASE_OK;
}

static int thread_count(const erase_tokenizer_train_options_t *o)
{
    if (o->threads > 0)
        return o->threads;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus >= 2 ? 2 : 1;
}

/* The tokenizer of the counted pieces. */
static erase_status_t train_from_pieces(const piece_table_t *pieces, const erase_tokenizer_train_options_t *o,
                                        erase_tokenizer_t **out)
{
    int64_t merges = o->vocab - ERASE_TOKENIZER_MIN_VOCAB, done = 0;
    uint32_t *merged = malloc((size_t)(merges ? merges : 1) * 2 * sizeof *merged);
    uint32_t *offset = malloc((size_t)(256 + merges + 1) * sizeof *offset);
    uint8_t *bytes = NULL;
    erase_status_t st = ERASE_OK;
    if (!merged || !offset) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "tokenizer training: out of memory");
        goto fail;
    }
    ERASE_CHECK_GOTO(learn_merges(pieces, merges, o->progress, merged, &done), st, fail);
    /* token r's bytes: a byte, or its merge's two tokens' bytes */
    offset[0] = 0;
    for (int64_t r = 0; r < 256 + done; r++)
        offset[r + 1] = offset[r] + (r < 256 ? 1
                                             : (offset[merged[2 * (r - 256)] + 1] - offset[merged[2 * (r - 256)]]) +
                                                   (offset[merged[2 * (r - 256) + 1] + 1] - offset[merged[2 * (r - 256) + 1]]));
    if (!(bytes = malloc(offset[256 + done] + 1))) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "tokenizer training: out of memory");
        goto fail;
    }
    for (int64_t r = 0; r < 256 + done; r++) {
        if (r < 256) {
            bytes[offset[r]] = (uint8_t)r;
            continue;
        }
        uint32_t a = merged[2 * (r - 256)], b = merged[2 * (r - 256) + 1], la = offset[a + 1] - offset[a];
        memcpy(bytes + offset[r], bytes + offset[a], la);
        memcpy(bytes + offset[r] + la, bytes + offset[b], offset[b + 1] - offset[b]);
    }
    free(merged);
    if (o->progress)
        fprintf(o->progress, "tokenizer: %" PRId64 " merges learned\n", done);
    return erase_tokenizer_build(o->pattern ? o->pattern : ERASE_SPLIT_PATTERN_NANOCHAT, 256 + done, offset, bytes,
                                 NULL, 0, out);
fail:
    free(merged), free(offset), free(bytes);
    return st;
}

erase_status_t erase_tokenizer_train_buffer(const uint8_t *text, size_t bytes,
                                            const erase_tokenizer_train_options_t *options, erase_tokenizer_t **out)
{
    int digits;
    *out = NULL;
    ERASE_CHECK(check_options(options, &digits));
    piece_table_t pieces = {0};
    erase_status_t st = count_pieces(text, bytes, digits, thread_count(options), &pieces);
    if (st == ERASE_OK)
        st = train_from_pieces(&pieces, options, out);
    pieces_free(&pieces);
    return st;
}

erase_status_t erase_tokenizer_train(const char *const *files, int n, const erase_tokenizer_train_options_t *options,
                                     erase_tokenizer_t **out)
{
    int digits;
    *out = NULL;
    ERASE_CHECK(check_options(options, &digits));
    piece_table_t pieces = {0};
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < n && st == ERASE_OK; i++) {
        char *text = NULL;
        size_t bytes = 0;
        st = erase_file_read_all(files[i], &text, &bytes);
        if (st != ERASE_OK)
            break;
        if (options->progress)
            fprintf(options->progress, "tokenizer: counting the pieces of %s (%zu bytes)\n", files[i], bytes);
        st = count_pieces((const uint8_t *)text, bytes, digits, thread_count(options), &pieces);
        free(text);
    }
    if (st == ERASE_OK)
        st = train_from_pieces(&pieces, options, out);
    pieces_free(&pieces);
    return st;
}

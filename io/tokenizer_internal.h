/*
 * The inside of io/tokenizer.h, shared by tokenizer.c (the file, lookups,
 * decoding), tokenizer_train.c and tokenizer_encode.c.
 */
#ifndef ERASE_IO_TOKENIZER_INTERNAL_H
#define ERASE_IO_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "io/tokenizer.h"

#define ERASE_NO_RANK UINT32_MAX

/* An open-addressing map from a 64-bit key to a uint32 value (keys are
 * never removed). */
typedef struct {
    uint64_t *keys;
    uint32_t *values;
    uint8_t *used;
    size_t capacity, count; /* capacity: a power of two */
} erase_u64_map_t;

erase_status_t erase_u64_map_init(erase_u64_map_t *m, size_t expected);
void erase_u64_map_free(erase_u64_map_t *m);
/* The slot of key (found: used[slot] set) or where it would go. */
size_t erase_u64_map_slot(const erase_u64_map_t *m, uint64_t key);
/* value of key, or ERASE_NO_RANK. */
uint32_t erase_u64_map_get(const erase_u64_map_t *m, uint64_t key);
/* Insert or replace; grows at half full. */
erase_status_t erase_u64_map_put(erase_u64_map_t *m, uint64_t key, uint32_t value);

static inline uint64_t erase_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* FNV-1a 64 of n bytes, continuing from h (start: ERASE_FNV_START). */
#define ERASE_FNV_START 0xcbf29ce484222325ULL
uint64_t erase_fnv1a64_more(uint64_t h, const void *data, size_t n);

struct erase_tokenizer {
    char *pattern;
    int digits;              /* K of the pattern */
    int64_t ranks;           /* 256 + merges: the ordinary tokens */
    int64_t vocab;           /* ranks + specials */
    uint32_t *offset;        /* [vocab + 1]: token t's bytes are bytes[offset[t] .. offset[t+1]) */
    uint8_t *bytes;
    int32_t special[ERASE_TOKENIZER_SPECIALS]; /* ids, in erase_tokenizer_special_names' order */
    /* token bytes -> rank, keyed by a 64-bit hash of the bytes (collisions
     * resolved by comparing the bytes: see tokenizer.c's rank_of_bytes) */
    erase_u64_map_t by_bytes;
    /* (left rank << 32 | right rank) -> rank of their concatenation, for
     * every pair whose concatenation is a token: tiktoken's merge rule */
    erase_u64_map_t by_pair;
    uint64_t identity;
};

/* The rank of the token with these bytes, or ERASE_NO_RANK. */
uint32_t erase_tokenizer_rank_of_bytes(const erase_tokenizer_t *tok, const uint8_t *b, size_t n);

/*
 * Build a tokenizer from the ordinary tokens' bytes (ranks tokens;
 * token r's bytes are bytes[offset[r]..offset[r+1]); the arrays are taken
 * over, also on failure) and the pattern: adds the special tokens, the
 * maps and the identity. path: for messages ("PATH: ..."); NULL when
 * trained. Checks every token r >= 256 is two earlier tokens' concatenation
 * and that no bytes repeat (ERASE_ERR_FORMAT, naming the line as the file
 * has it: line = r + first_line).
 */
erase_status_t erase_tokenizer_build(const char *pattern, int64_t ranks, uint32_t *offset, uint8_t *bytes,
                                     const char *path, int first_line, erase_tokenizer_t **out);

#endif

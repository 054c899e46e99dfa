/* The tokenizer file, lookups and decoding (io/tokenizer.h). */
#include "io/tokenizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/pretokenize.h"
#include "io/tokenizer_internal.h"
#include "lib/core/fs.h"

const char ERASE_SPLIT_PATTERN_GPT4[] = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}| "
                                        "?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
const char ERASE_SPLIT_PATTERN_NANOCHAT[] = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,2}| "
                                            "?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
const char *const erase_tokenizer_special_names[ERASE_TOKENIZER_SPECIALS] = {
    "<|bos|>",        "<|user_start|>", "<|user_end|>",     "<|assistant_start|>", "<|assistant_end|>",
    "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>"};

/* ---- the map ---- */

erase_status_t erase_u64_map_init(erase_u64_map_t *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    size_t cap = 64;
    while (cap < 2 * expected)
        cap *= 2;
    m->keys = malloc(cap * sizeof *m->keys);
    m->values = malloc(cap * sizeof *m->values);
    m->used = calloc(cap, 1);
    if (!m->keys || !m->values || !m->used) {
        erase_u64_map_free(m);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "tokenizer: out of memory (a map of %zu entries)", cap);
    }
    m->capacity = cap;
    return ERASE_OK;
}

void erase_u64_map_free(erase_u64_map_t *m)
{
    free(m->keys);
    free(m->values);
    free(m->used);
    memset(m, 0, sizeof *m);
}

size_t erase_u64_map_slot(const erase_u64_map_t *m, uint64_t key)
{
    size_t mask = m->capacity - 1, i = (size_t)erase_mix64(key) & mask;
    while (m->used[i] && m->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

uint32_t erase_u64_map_get(const erase_u64_map_t *m, uint64_t key)
{
    size_t i = erase_u64_map_slot(m, key);
    return m->used[i] ? m->values[i] : ERASE_NO_RANK;
}

erase_status_t erase_u64_map_put(erase_u64_map_t *m, uint64_t key, uint32_t value)
{
    if (2 * (m->count + 1) > m->capacity) {
        erase_u64_map_t bigger;
        ERASE_CHECK(erase_u64_map_init(&bigger, m->capacity));
        for (size_t i = 0; i < m->capacity; i++)
            if (m->used[i]) {
                size_t j = erase_u64_map_slot(&bigger, m->keys[i]);
                bigger.used[j] = 1, bigger.keys[j] = m->keys[i], bigger.values[j] = m->values[i];
            }
        bigger.count = m->count;
        erase_u64_map_free(m);
        *m = bigger;
    }
    size_t i = erase_u64_map_slot(m, key);
    if (!m->used[i])
        m->used[i] = 1, m->keys[i] = key, m->count++;
    m->values[i] = value;
    return ERASE_OK;
}

uint64_t erase_fnv1a64_more(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t bytes_key(const uint8_t *b, size_t n)
{
    return erase_fnv1a64_more(ERASE_FNV_START, b, n);
}

uint32_t erase_tokenizer_rank_of_bytes(const erase_tokenizer_t *tok, const uint8_t *b, size_t n)
{
    uint32_t r = erase_u64_map_get(&tok->by_bytes, bytes_key(b, n));
    if (r == ERASE_NO_RANK || tok->offset[r + 1] - tok->offset[r] != n || memcmp(tok->bytes + tok->offset[r], b, n))
        return ERASE_NO_RANK;
    return r;
}

/* ---- the canonical text: the file, and what the identity hashes ---- */

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = b64_chars[v >> 18 & 63];
        out[o++] = b64_chars[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    return o;
}

/* Decode base64 text[0..n) into out (room for 3n/4): the length, or -1. */
static long b64_decode(const char *text, size_t n, uint8_t *out)
{
    if (n == 0 || n % 4)
        return -1;
    long o = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            const char *p = text[i + k] && text[i + k] != '=' ? strchr(b64_chars, text[i + k]) : NULL;
            if (text[i + k] == '=' && i + 4 == n && k >= 2)
                pad++;
            else if (!p || pad)
                return -1;
            v = v << 6 | (p ? (uint32_t)(p - b64_chars) : 0);
        }
        out[o++] = (uint8_t)(v >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(v >> 8);
        if (pad < 1)
            out[o++] = (uint8_t)v;
    }
    return o;
}

/* The file's text, malloc'ed; *n its length. NULL when out of memory. */
static char *canonical_text(const erase_tokenizer_t *tok, size_t *n)
{
    size_t cap = 256 + strlen(tok->pattern) + 64 * ERASE_TOKENIZER_SPECIALS +
                 (size_t)tok->offset[tok->ranks] * 4 / 3 + 24 * (size_t)tok->ranks;
    char *text = malloc(cap), *p = text;
    if (!text)
        return NULL;
    p += sprintf(p, "#erase-tokenizer 1\n#vocab %" PRId64 "\n#pattern %s\n", tok->vocab, tok->pattern);
    for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++)
        p += sprintf(p, "#special %s %d\n", erase_tokenizer_special_names[s], (int)tok->special[s]);
    for (int64_t r = 0; r < tok->ranks; r++) {
        p += b64_encode(tok->bytes + tok->offset[r], tok->offset[r + 1] - tok->offset[r], p);
        p += sprintf(p, " %" PRId64 "\n", r);
    }
    *n = (size_t)(p - text);
    return text;
}

/* ---- building ---- */

void erase_tokenizer_free(erase_tokenizer_t *tok)
{
    if (!tok)
        return;
    free(tok->pattern);
    free(tok->offset);
    free(tok->bytes);
    erase_u64_map_free(&tok->by_bytes);
    erase_u64_map_free(&tok->by_pair);
    free(tok);
}

static const char *where(const char *path)
{
    return path ? path : "tokenizer";
}

/* Printable text of a token's bytes for messages ('the', or hex). */
static void show_bytes(const uint8_t *b, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size; i++)
        o += (size_t)(b[i] >= 0x20 && b[i] < 0x7F && b[i] != '\'' ? snprintf(out + o, size - o, "%c", b[i])
                                                                   : snprintf(out + o, size - o, "\\x%02x", b[i]));
    out[o] = '\0';
}

erase_status_t erase_tokenizer_build(const char *pattern, int64_t ranks, uint32_t *offset, uint8_t *bytes,
                                     const char *path, int first_line, erase_tokenizer_t **out)
{
    erase_status_t st = ERASE_OK;
    *out = NULL;
    erase_tokenizer_t *tok = calloc(1, sizeof *tok);
    size_t names = 0;
    for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++)
        names += strlen(erase_tokenizer_special_names[s]);
    uint32_t *off = tok ? realloc(offset, (size_t)(ranks + ERASE_TOKENIZER_SPECIALS + 1) * sizeof *off) : NULL;
    if (off)
        offset = off;
    uint8_t *b = off ? realloc(bytes, offset[ranks] + names + 1) : NULL;
    if (b)
        bytes = b;
    if (!tok || !off || !b || !(tok->pattern = strdup(pattern))) {
        free(offset), free(bytes), free(tok ? tok->pattern : NULL), free(tok);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", where(path));
    }
    tok->offset = offset, tok->bytes = bytes, tok->ranks = ranks;
    tok->vocab = ranks + ERASE_TOKENIZER_SPECIALS;
    tok->digits = erase_split_pattern_digits(pattern);
    for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++) {
        size_t len = strlen(erase_tokenizer_special_names[s]), at = offset[ranks + s];
        memcpy(bytes + at, erase_tokenizer_special_names[s], len);
        offset[ranks + s + 1] = (uint32_t)(at + len);
        tok->special[s] = (int32_t)(ranks + s);
    }
    ERASE_CHECK_GOTO(erase_u64_map_init(&tok->by_bytes, (size_t)ranks), st, fail);
    ERASE_CHECK_GOTO(erase_u64_map_init(&tok->by_pair, 4 * (size_t)ranks), st, fail);
    for (int64_t r = 0; r < ranks; r++) {
        const uint8_t *t = bytes + offset[r];
        size_t n = offset[r + 1] - offset[r];
        char shown[64];
        uint32_t earlier = erase_tokenizer_rank_of_bytes(tok, t, n);
        if (earlier != ERASE_NO_RANK) {
            show_bytes(t, n, shown, sizeof shown);
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: line %" PRId64 ": token %" PRId64 " duplicates token %u ('%s')",
                             where(path), r + first_line, r, earlier, shown);
            goto fail;
        }
        int merged = r < 256;
        for (size_t k = 1; k < n && !merged; k++)
            merged = erase_tokenizer_rank_of_bytes(tok, t, k) != ERASE_NO_RANK &&
                     erase_tokenizer_rank_of_bytes(tok, t + k, n - k) != ERASE_NO_RANK;
        if (!merged) {
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: line %" PRId64 ": token %" PRId64 " is not a merge of two earlier tokens",
                             where(path), r + first_line, r);
            goto fail;
        }
        ERASE_CHECK_GOTO(erase_u64_map_put(&tok->by_bytes, bytes_key(t, n), (uint32_t)r), st, fail);
    }
    for (int64_t r = 256; r < ranks; r++) {
        const uint8_t *t = bytes + offset[r];
        size_t n = offset[r + 1] - offset[r];
        for (size_t k = 1; k < n; k++) {
            uint32_t left = erase_tokenizer_rank_of_bytes(tok, t, k), right;
            if (left != ERASE_NO_RANK && (right = erase_tokenizer_rank_of_bytes(tok, t + k, n - k)) != ERASE_NO_RANK)
                ERASE_CHECK_GOTO(erase_u64_map_put(&tok->by_pair, (uint64_t)left << 32 | right, (uint32_t)r), st, fail);
        }
    }
    size_t len;
    char *text = canonical_text(tok, &len);
    if (!text) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", where(path));
        goto fail;
    }
    tok->identity = erase_fnv1a64_more(ERASE_FNV_START, text, len);
    free(text);
    *out = tok;
    return ERASE_OK;
fail:
    erase_tokenizer_free(tok);
    return st;
}

/* ---- the file ---- */

/* The next line of text at *pos (without its '\n'), NUL-terminated in
 * place; NULL at the end. *complete: 0 when it had no newline. */
static char *next_line(char *text, size_t n, size_t *pos, int *complete)
{
    if (*pos >= n)
        return NULL;
    char *line = text + *pos, *nl = memchr(line, '\n', n - *pos);
    *complete = nl != NULL;
    if (nl) {
        *nl = '\0';
        *pos = (size_t)(nl - text) + 1;
    } else {
        *pos = n;
    }
    return line;
}

#define BAD(...) (st = ERASE_ERROR(ERASE_ERR_FORMAT, __VA_ARGS__))

/* Parse the file text text[n] (malloc'ed, NUL-terminated; freed here) read
 * from `path` (the name in the errors). */
static erase_status_t parse_text(const char *path, char *text, size_t n, erase_tokenizer_t **out)
{
    size_t pos = 0;
    erase_status_t st = ERASE_OK;
    uint32_t *offset = NULL;
    uint8_t *bytes = NULL;
    char *line, *pattern = NULL;
    int complete = 1, line_no = 0;
    long long vocab = 0;
    char tail;
    if (!(line = next_line(text, n, &pos, &complete)) || strcmp(line, "#erase-tokenizer 1") != 0) {
        BAD("%s: not an erase tokenizer file (first line '#erase-tokenizer 1' expected)", path);
        goto done;
    }
    line_no = 2;
    if (!(line = next_line(text, n, &pos, &complete)) || sscanf(line, "#vocab %lld%c", &vocab, &tail) != 1) {
        BAD("%s: line 2: '#vocab V' expected", path);
        goto done;
    }
    if (vocab > ERASE_TOKENIZER_MAX_VOCAB) {
        BAD("%s: vocab %lld is more than token shards hold (%d: tokens are stored as uint16)", path, vocab,
            ERASE_TOKENIZER_MAX_VOCAB);
        goto done;
    }
    if (vocab < ERASE_TOKENIZER_MIN_VOCAB) {
        BAD("%s: vocab %lld: at least %d expected (256 bytes and %d special tokens)", path, vocab,
            ERASE_TOKENIZER_MIN_VOCAB, ERASE_TOKENIZER_SPECIALS);
        goto done;
    }
    line_no = 3;
    if (!(line = next_line(text, n, &pos, &complete)) || strncmp(line, "#pattern ", 9) != 0) {
        BAD("%s: line 3: '#pattern PATTERN' expected", path);
        goto done;
    }
    pattern = line + 9;
    if (erase_split_pattern_digits(pattern) < 0) {
        BAD("%s: line 3: split pattern not supported (GPT-4's or nanochat's: docs/tokenizer.md)", path);
        goto done;
    }
    int64_t ranks = vocab - ERASE_TOKENIZER_SPECIALS;
    for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++) {
        line_no = 4 + s;
        char name[64];
        long long id = -1;
        if (!(line = next_line(text, n, &pos, &complete)) || sscanf(line, "#special %63s %lld%c", name, &id, &tail) != 2 ||
            strcmp(name, erase_tokenizer_special_names[s]) != 0 || id != ranks + s) {
            BAD("%s: line %d: '#special %s %lld' expected", path, line_no, erase_tokenizer_special_names[s],
                (long long)(ranks + s));
            goto done;
        }
    }
    int first_line = 4 + ERASE_TOKENIZER_SPECIALS;
    offset = malloc((size_t)(ranks + 1) * sizeof *offset);
    bytes = malloc(n + 1);
    if (!offset || !bytes) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    offset[0] = 0;
    int64_t r = 0;
    while ((line = next_line(text, n, &pos, &complete))) {
        line_no = first_line + (int)r;
        if (!complete)
            break; /* a last line cut short: truncated */
        if (r >= ranks) {
            BAD("%s: line %d: more tokens than the header's vocab %lld holds", path, line_no, vocab);
            goto done;
        }
        char *space = strchr(line, ' '), *end;
        if (!space) {
            BAD("%s: line %d: 'BASE64 RANK' expected", path, line_no);
            goto done;
        }
        errno = 0;
        long long rank = strtoll(space + 1, &end, 10);
        if (errno || end == space + 1 || *end) {
            BAD("%s: line %d: 'BASE64 RANK' expected", path, line_no);
            goto done;
        }
        if (rank != r) {
            BAD("%s: line %d: rank %lld, expected %" PRId64 " (ranks count up from 0)", path, line_no, rank, r);
            goto done;
        }
        long len = b64_decode(line, (size_t)(space - line), bytes + offset[r]);
        if (len < 0) {
            BAD("%s: line %d: bad base64", path, line_no);
            goto done;
        }
        if (r < 256 && (len != 1 || bytes[offset[r]] != r)) {
            BAD("%s: line %d: token %" PRId64 " must be the byte 0x%02x", path, line_no, r, (unsigned)r);
            goto done;
        }
        offset[r + 1] = offset[r] + (uint32_t)len;
        r++;
    }
    if (r < ranks || !complete) {
        BAD("%s: truncated: %" PRId64 " tokens, the header says %" PRId64 "%s", path, r, ranks,
            complete ? "" : " (the last line has no newline)");
        goto done;
    }
    st = erase_tokenizer_build(pattern, ranks, offset, bytes, path, first_line, out);
    offset = NULL, bytes = NULL;
done:
    free(offset);
    free(bytes);
    free(text);
    return st;
}

erase_status_t erase_tokenizer_load(const char *path, erase_tokenizer_t **out)
{
    *out = NULL;
    char *text = NULL;
    size_t n = 0;
    ERASE_CHECK(erase_file_read_all(path, &text, &n));
    return parse_text(path, text, n, out);
}

erase_status_t erase_tokenizer_load_text(const char *name, const char *text, size_t n, erase_tokenizer_t **out)
{
    *out = NULL;
    char *copy = malloc(n + 1);
    if (!copy)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", name);
    memcpy(copy, text, n);
    copy[n] = '\0';
    return parse_text(name, copy, n, out);
}

char *erase_tokenizer_text(const erase_tokenizer_t *tok, size_t *n)
{
    return canonical_text(tok, n);
}

erase_status_t erase_tokenizer_save(const erase_tokenizer_t *tok, const char *path)
{
    size_t n;
    char *text = canonical_text(tok, &n);
    if (!text)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) {
        free(text);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(tmp, plen + 32, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    erase_status_t st = ERASE_OK;
    if (!f) {
        st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    } else {
        int bad = fwrite(text, 1, n, f) != n;
        bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
        bad |= fclose(f) != 0;
        if (bad || rename(tmp, path) != 0) {
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
            unlink(tmp);
        }
    }
    free(tmp);
    free(text);
    return st;
}

/* ---- lookups and decoding ---- */

int64_t erase_tokenizer_vocab(const erase_tokenizer_t *tok)
{
    return tok->vocab;
}

int64_t erase_tokenizer_merges(const erase_tokenizer_t *tok)
{
    return tok->ranks - 256;
}

const char *erase_tokenizer_pattern(const erase_tokenizer_t *tok)
{
    return tok->pattern;
}

uint64_t erase_tokenizer_identity(const erase_tokenizer_t *tok)
{
    return tok->identity;
}

void erase_tokenizer_identity_hex(const erase_tokenizer_t *tok, char hex[17])
{
    snprintf(hex, 17, "%016" PRIx64, tok->identity);
}

int32_t erase_tokenizer_special(const erase_tokenizer_t *tok, const char *name)
{
    for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++)
        if (strcmp(name, erase_tokenizer_special_names[s]) == 0)
            return tok->special[s];
    return -1;
}

int64_t erase_tokenizer_token_bytes(const erase_tokenizer_t *tok, uint32_t id, const uint8_t **bytes)
{
    if (id >= tok->vocab)
        return -1;
    *bytes = tok->bytes + tok->offset[id];
    return tok->offset[id + 1] - tok->offset[id];
}

int64_t erase_tokenizer_count_bytes(const erase_tokenizer_t *tok, const uint32_t *ids, size_t n)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= tok->vocab)
            return -1;
        if (ids[i] < tok->ranks)
            total += tok->offset[ids[i] + 1] - tok->offset[ids[i]];
    }
    return total;
}

erase_status_t erase_tokenizer_decode(const erase_tokenizer_t *tok, const uint32_t *ids, size_t n, uint8_t **out,
                                      size_t *bytes)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= tok->vocab)
            return ERASE_ERROR(ERASE_ERR_INVALID, "token %zu is %u, expected < %" PRId64 " (the vocab)", i, ids[i],
                               tok->vocab);
        total += tok->offset[ids[i] + 1] - tok->offset[ids[i]];
    }
    uint8_t *text = malloc(total + 1);
    if (!text)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "decode: out of memory (%zu bytes)", total);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = tok->offset[ids[i] + 1] - tok->offset[ids[i]];
        memcpy(text + o, tok->bytes + tok->offset[ids[i]], len);
        o += len;
    }
    text[o] = '\0';
    *out = text, *bytes = o;
    return ERASE_OK;
}

void erase_token_ids_free(erase_token_ids_t *ids)
{
    free(ids->ids);
    memset(ids, 0, sizeof *ids);
}

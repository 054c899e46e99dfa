/*
 * The BPE tokenizer (io/tokenizer.h) and its pre-tokenizer (issue 33).
 *
 * A tokenizer of vocab 512 trained on tinyshakespeare. Checked:
 * decode(encode(x)) == x for 3,000 seeded random byte strings (ASCII,
 * UTF-8 of every length, bytes that are not UTF-8, special token names),
 * with and without special tokens, and the pre-tokenizer's pieces cover
 * each string exactly; bytes that are not UTF-8 stay their byte tokens; 2
 * threads and chunks cut at erase_tokenizer_chunk_end give the ids of 1
 * thread on the whole text, and training on 1
 * and 3 threads the same tokenizer; the file saved and
 * loaded has the same identity and the same ids; special tokens only when
 * asked; the byte count of ids; the vocab limits refused with exact text.
 * (The equality with rustbpe and tiktoken: test-tokenizer-compat.sh.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/pretokenize.h"
#include "io/tokenizer.h"
#include "tests/expect_error.h"
#include "tests/io/io_util.h"

static uint8_t *text;
static size_t text_bytes;
static erase_tokenizer_t *tok;

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint32_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Append code point cp as UTF-8. */
static size_t put_utf8(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80)
        return o[0] = (uint8_t)cp, 1;
    if (cp < 0x800)
        return o[0] = (uint8_t)(0xC0 | cp >> 6), o[1] = (uint8_t)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return o[0] = (uint8_t)(0xE0 | cp >> 12), o[1] = (uint8_t)(0x80 | (cp >> 6 & 63)),
               o[2] = (uint8_t)(0x80 | (cp & 63)), 3;
    return o[0] = (uint8_t)(0xF0 | cp >> 18), o[1] = (uint8_t)(0x80 | (cp >> 12 & 63)),
           o[2] = (uint8_t)(0x80 | (cp >> 6 & 63)), o[3] = (uint8_t)(0x80 | (cp & 63)), 4;
}

/* A random string of up to `max` bytes (room for max + 32). */
static size_t random_string(uint8_t *o, size_t max)
{
    static const char *const bits[] = {"'s", "'LL", " the", "\r\n", "\n\n", "   ", "\t", "<|bos|>", "<|user_end|>",
                                       "<|", "123456", " 42", "!!", "\xc5\xbf"};
    size_t n = 0, want = next_random() % max;
    while (n < want) {
        uint32_t kind = next_random() % 8;
        if (kind < 3)
            o[n++] = (uint8_t)(0x20 + next_random() % 95);
        else if (kind == 3)
            o[n++] = (uint8_t)(next_random() & 0xFF); /* any byte: often not UTF-8 */
        else if (kind == 4) {
            const char *b = bits[next_random() % (sizeof bits / sizeof bits[0])];
            memcpy(o + n, b, strlen(b));
            n += strlen(b);
        } else {
            uint32_t cp = next_random() % 0x30000;
            if (cp >= 0xD800 && cp < 0xE000)
                cp = 0xE9;
            n += put_utf8(o + n, cp);
        }
    }
    return n;
}

static int setup(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/text/tinyshakespeare.txt", ERASE_DATA_DIR);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    text = malloc(2 << 20);
    text_bytes = fread(text, 1, 2 << 20, f);
    fclose(f);
    erase_tokenizer_train_options_t o = erase_tokenizer_train_options_default();
    o.vocab = 512;
    return erase_tokenizer_train_buffer(text, text_bytes, &o, &tok) == ERASE_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    erase_tokenizer_free(tok);
    free(text);
    return 0;
}

static void round_trip(const uint8_t *s, size_t n, int flags)
{
    erase_token_ids_t ids = {0};
    uint8_t *back;
    size_t back_bytes;
    MUST(erase_tokenizer_encode(tok, s, n, flags, 1, &ids));
    MUST(erase_tokenizer_decode(tok, ids.ids, ids.count, &back, &back_bytes));
    assert_int_equal(back_bytes, n);
    assert_memory_equal(back, s, n);
    if (!(flags & ERASE_ENCODE_SPECIALS))
        assert_int_equal(erase_tokenizer_count_bytes(tok, ids.ids, ids.count), (int64_t)n);
    free(back);
    erase_token_ids_free(&ids);
}

static void test_fuzz_round_trip(void **state)
{
    (void)state;
    uint8_t s[600];
    for (int i = 0; i < 3000; i++) {
        size_t n = random_string(s, 560);
        size_t pos = 0, pieces = 0;
        while (pos < n) {
            size_t end = erase_pretokenize_next(s, n, pos, 2);
            assert_true(end > pos && end <= n);
            pos = end, pieces++;
        }
        round_trip(s, n, 0);
        round_trip(s, n, ERASE_ENCODE_SPECIALS);
    }
}

static void test_not_utf8(void **state)
{
    (void)state;
    static const uint8_t bad[] = "caf\xe9 \xff\xfe\xc3 \xed\xa0\x80 \xc0\xaf end\xe2\x82";
    size_t n = sizeof bad - 1;
    round_trip(bad, n, 0);
    erase_token_ids_t ids = {0};
    MUST(erase_tokenizer_encode(tok, bad, n, 0, 1, &ids));
    int saw_ff = 0;
    for (size_t i = 0; i < ids.count; i++)
        saw_ff |= ids.ids[i] == 0xFF;
    assert_true(saw_ff); /* a lone 0xff is its byte token */
    erase_token_ids_free(&ids);
}

static void test_threads(void **state)
{
    (void)state;
    erase_token_ids_t one = {0}, two = {0};
    MUST(erase_tokenizer_encode(tok, text, text_bytes, 0, 1, &one));
    MUST(erase_tokenizer_encode(tok, text, text_bytes, 0, 2, &two));
    assert_true(one.count > 0 && one.count < text_bytes);
    assert_int_equal(one.count, two.count);
    assert_memory_equal(one.ids, two.ids, one.count * sizeof *one.ids);
    /* chunks cut by erase_tokenizer_chunk_end encode to the same ids */
    erase_token_ids_t chunked = {0};
    size_t cuts = 0;
    for (size_t from = 0; from < text_bytes; cuts++) {
        size_t end = erase_tokenizer_chunk_end(text, text_bytes, from + 1000 < text_bytes ? from + 1000 : text_bytes);
        MUST(erase_tokenizer_encode(tok, text + from, end - from, 0, 1, &chunked));
        from = end;
    }
    assert_true(cuts > 100);
    assert_int_equal(chunked.count, one.count);
    assert_memory_equal(chunked.ids, one.ids, one.count * sizeof *one.ids);
    erase_token_ids_free(&chunked);
    uint16_t *narrow;
    size_t count;
    MUST(erase_tokenizer_encode16(tok, text, text_bytes, 0, 2, &narrow, &count));
    assert_int_equal(count, one.count);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(narrow[i], one.ids[i]);
    free(narrow);
    erase_token_ids_free(&one);
    erase_token_ids_free(&two);
    /* training: 1 and 3 threads counting the pieces make the same tokenizer */
    erase_tokenizer_train_options_t o = erase_tokenizer_train_options_default();
    erase_tokenizer_t *a, *b;
    o.vocab = 512, o.threads = 1;
    MUST(erase_tokenizer_train_buffer(text, text_bytes, &o, &a));
    o.threads = 3;
    MUST(erase_tokenizer_train_buffer(text, text_bytes, &o, &b));
    assert_true(erase_tokenizer_identity(a) == erase_tokenizer_identity(tok));
    assert_true(erase_tokenizer_identity(b) == erase_tokenizer_identity(tok));
    erase_tokenizer_free(a);
    erase_tokenizer_free(b);
}

static void test_save_load(void **state)
{
    (void)state;
    char *dir = io_scratch_make("tokenizer");
    char path[4096];
    snprintf(path, sizeof path, "%s/t.tok", dir);
    MUST(erase_tokenizer_save(tok, path));
    erase_tokenizer_t *back;
    MUST(erase_tokenizer_load(path, &back));
    assert_true(erase_tokenizer_identity(back) == erase_tokenizer_identity(tok));
    assert_int_equal(erase_tokenizer_vocab(back), 512);
    assert_int_equal(erase_tokenizer_merges(back), 512 - 265);
    assert_string_equal(erase_tokenizer_pattern(back), ERASE_SPLIT_PATTERN_NANOCHAT);
    erase_token_ids_t a = {0}, b = {0};
    MUST(erase_tokenizer_encode(tok, text, 100000, 0, 1, &a));
    MUST(erase_tokenizer_encode(back, text, 100000, 0, 1, &b));
    assert_int_equal(a.count, b.count);
    assert_memory_equal(a.ids, b.ids, a.count * sizeof *a.ids);
    erase_token_ids_free(&a);
    erase_token_ids_free(&b);
    erase_tokenizer_free(back);
    io_scratch_remove(dir);
}

static void test_specials(void **state)
{
    (void)state;
    static const uint8_t s[] = "<|bos|>First Citizen:<|assistant_end|>";
    erase_token_ids_t ids = {0}, plain = {0};
    assert_int_equal(erase_tokenizer_special(tok, "<|bos|>"), 503);
    assert_int_equal(erase_tokenizer_special(tok, "<|output_end|>"), 511);
    assert_int_equal(erase_tokenizer_special(tok, "<|eot|>"), -1);
    MUST(erase_tokenizer_encode(tok, s, sizeof s - 1, ERASE_ENCODE_SPECIALS, 1, &ids));
    assert_int_equal(ids.ids[0], 503);
    assert_int_equal(ids.ids[ids.count - 1], 507);
    assert_int_equal(erase_tokenizer_count_bytes(tok, ids.ids, ids.count), (int64_t)strlen("First Citizen:"));
    MUST(erase_tokenizer_encode(tok, s, sizeof s - 1, 0, 1, &plain));
    for (size_t i = 0; i < plain.count; i++)
        assert_true(plain.ids[i] < 503);
    uint32_t bad = 512;
    uint8_t *out;
    size_t n;
    erase_test_expect_error(erase_tokenizer_decode(tok, &bad, 1, &out, &n), ERASE_ERR_INVALID,
                            "token 0 is 512, expected < 512 (the vocab)");
    erase_token_ids_free(&ids);
    erase_token_ids_free(&plain);
}

static void test_vocab_limits(void **state)
{
    (void)state;
    erase_tokenizer_train_options_t o = erase_tokenizer_train_options_default();
    erase_tokenizer_t *t;
    o.vocab = 70000;
    erase_test_expect_error(erase_tokenizer_train_buffer(text, 1000, &o, &t), ERASE_ERR_INVALID,
                            "--vocab 70000: at most 65536 (tokens are stored as uint16 in token shards)");
    o.vocab = 264;
    erase_test_expect_error(erase_tokenizer_train_buffer(text, 1000, &o, &t), ERASE_ERR_INVALID,
                            "--vocab 264: at least 265 (256 bytes and 9 special tokens)");
    o.vocab = 265;
    MUST(erase_tokenizer_train_buffer(text, 1000, &o, &t));
    assert_int_equal(erase_tokenizer_merges(t), 0);
    erase_tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_round_trip), cmocka_unit_test(test_not_utf8), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_save_load),       cmocka_unit_test(test_specials), cmocka_unit_test(test_vocab_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

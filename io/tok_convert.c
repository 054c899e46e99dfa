#include "io/tok_convert.h"

#include "io/ctr_dataset_write.h"
#include "lib/core/fs.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK_TOKENS (1 << 20) /* tokens converted between checks of the cancel flag */

erase_tok_convert_options_t erase_tok_convert_options_default(void)
{
    erase_tok_convert_options_t o = { .out_dir = NULL,
                                      .shard_tokens = 1 << 24,
                                      .eval_fraction = 0.1,
                                      .vocab = ERASE_GPT2_VOCAB,
                                      .write = erase_tok_write_options_default(),
                                      .force = 0,
                                      .raw = 0,
                                      .cancel = NULL,
                                      .tokenizer = NULL,
                                      .threads = 2,
                                      .text_block = (int64_t)16 << 20 };
    return o;
}

/* Open `path` for reading and give its size in bytes. */
static erase_status_t open_sized(const char *path, FILE **f, int64_t *bytes)
{
    /* a FIFO or a device is refused before fopen, which would block on a
     * FIFO with no writer (and not return on SIGTERM) */
    struct stat sb;
    *f = NULL;
    if (stat(path, &sb) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    ERASE_CHECK(erase_file_check_regular(path));
    *f = fopen(path, "rb");
    if (!*f)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(*f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(*f);
        *f = NULL;
        return ERASE_ERROR(ERASE_ERR_IO, "%s: not a regular file", path);
    }
    *bytes = (int64_t)sb.st_size;
    return ERASE_OK;
}

static erase_status_t read_exact(FILE *f, const char *path, void *buf, size_t bytes)
{
    if (fread(buf, 1, bytes, f) != bytes)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: read failed: %s", path, ferror(f) ? strerror(errno) : "the file shrank");
    return ERASE_OK;
}

static erase_status_t interrupted(const erase_tok_convert_options_t *o)
{
    return o->cancel && *o->cancel ? ERASE_ERROR(ERASE_ERR_STATE, "interrupted") : ERASE_OK;
}

/* Publish the eval part first, then the train part (its index last); a
 * train part that fails removes the committed eval part again. */
static erase_status_t commit_both(erase_tok_dataset_writer_t *we, erase_tok_dataset_writer_t *wt,
                                  const char *eval_dir)
{
    struct stat sb;
    int eval_existed = eval_dir && stat(eval_dir, &sb) == 0;
    if (we)
        ERASE_CHECK(erase_tok_dataset_writer_commit(we));
    erase_status_t st = erase_tok_dataset_writer_commit(wt);
    if (st != ERASE_OK && we) {
        erase_status_t gone = erase_dataset_remove(eval_dir);
        (void)gone;
        if (!eval_existed)
            rmdir(eval_dir);
    }
    return st;
}

static void fill_summary(erase_tok_convert_summary_t *s, erase_tok_dataset_writer_t *wt,
                         erase_tok_dataset_writer_t *we)
{
    if (wt) {
        s->train_tokens = erase_tok_dataset_writer_tokens(wt);
        s->train_shards = erase_tok_dataset_writer_shards(wt);
    }
    if (we) {
        s->eval_tokens = erase_tok_dataset_writer_tokens(we);
        s->eval_shards = erase_tok_dataset_writer_shards(we);
    }
}

/* The summary to fill (the caller's or `local`), zeroed; the start time;
 * the output directory checked. */
static erase_status_t start(const erase_tok_convert_options_t *o, erase_tok_convert_summary_t *summary,
                            erase_tok_convert_summary_t *local, erase_tok_convert_summary_t **s, double *t0)
{
    *s = summary ? summary : local;
    memset(*s, 0, sizeof **s);
    *t0 = erase_now_s();
    if (!o->out_dir || !o->out_dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory given");
    return ERASE_OK;
}

/* Append ids[k] to *all (grown). */
static erase_status_t append_ids(const char *path, const uint16_t *ids, size_t k, uint16_t **all, size_t *count,
                                 size_t *cap)
{
    if (*count + k > *cap) {
        size_t want = 2 * (*count + k);
        uint16_t *p = realloc(*all, sizeof *p * want);
        if (!p)
            return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for %zu tokens", path, *count + k);
        *all = p, *cap = want;
    }
    memcpy(*all + *count, ids, sizeof *ids * k);
    *count += k;
    return ERASE_OK;
}

/*
 * Append to *all (grown) the <|bos|> token and then the ids of one file, a
 * document, read in blocks of o->text_block bytes: each block is cut where
 * erase_tokenizer_chunk_end says a piece always ends (the ids of the parts
 * are the ids of the whole), encoded on o->threads, the rest carried into
 * the next block (a block with no such place grows).
 */
static erase_status_t encode_document(const char *path, const erase_tok_convert_options_t *o, uint16_t **all,
                                      size_t *count, size_t *cap)
{
    FILE *f;
    int64_t left;
    ERASE_CHECK(open_sized(path, &f, &left));
    const uint16_t bos = (uint16_t)erase_tokenizer_special(o->tokenizer, "<|bos|>");
    erase_status_t st = append_ids(path, &bos, 1, all, count, cap);
    size_t size = o->text_block >= 1 ? (size_t)o->text_block : 1, have = 0;
    uint8_t *buf = malloc(size);
    if (!buf)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for a block of %zu bytes", path, size);
    while (st == ERASE_OK && (left > 0 || have > 0) && (st = interrupted(o)) == ERASE_OK) {
        if (have == size) { /* no place to cut in the whole block: a bigger one */
            uint8_t *p = realloc(buf, 2 * size);
            if (!p) {
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for a block of %zu bytes", path, 2 * size);
                break;
            }
            buf = p, size *= 2;
        }
        size_t k = (uint64_t)left < size - have ? (size_t)left : size - have;
        if ((st = read_exact(f, path, buf + have, k)) != ERASE_OK)
            break;
        have += k, left -= (int64_t)k;
        size_t end = left == 0 ? have : erase_tokenizer_chunk_end(buf, have, have - have / 8);
        if (end == have && left > 0)
            continue; /* read more */
        uint16_t *ids = NULL;
        size_t n = 0;
        st = erase_tokenizer_encode16(o->tokenizer, buf, end, 0, o->threads, &ids, &n);
        if (st == ERASE_OK)
            st = append_ids(path, ids, n, all, count, cap);
        free(ids);
        memmove(buf, buf + end, have - end);
        have -= end;
    }
    free(buf);
    fclose(f);
    return st;
}

/* Text through a BPE tokenizer: every file encoded (a document: <|bos|>
 * first), the last round(f * tokens) tokens to OUT/eval. */
static erase_status_t convert_text_bpe(const char *const *files, int n, const erase_tok_convert_options_t *o,
                                       erase_tok_convert_summary_t *s)
{
    uint16_t *all = NULL;
    size_t count = 0, cap = 0;
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < n && st == ERASE_OK && (st = interrupted(o)) == ERASE_OK; i++) {
        st = encode_document(files[i], o, &all, &count, &cap);
        s->files += st == ERASE_OK;
    }
    int64_t eval = (int64_t)llround(o->eval_fraction * (double)count), train = (int64_t)count - eval;
    if (st == ERASE_OK && train < 1)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "the inputs' %zu tokens leave no training tokens with "
                         "--val-fraction %g (%lld for evaluation)", count, o->eval_fraction, (long long)eval);
    char train_dir[4096], eval_dir[4096];
    snprintf(train_dir, sizeof train_dir, "%s/train", o->out_dir);
    snprintf(eval_dir, sizeof eval_dir, "%s/eval", o->out_dir);
    int made_out = 0;
    if (st == ERASE_OK) {
        made_out = mkdir(o->out_dir, 0777) == 0;
        if (!made_out && errno != EEXIST)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the directory: %s", o->out_dir, strerror(errno));
    }
    erase_tok_write_options_t wo = o->write;
    wo.byte_level = 0;
    wo.tokenizer = o->tokenizer;
    int64_t vocab = erase_tokenizer_vocab(o->tokenizer);
    erase_tok_dataset_writer_t *wt = NULL, *we = NULL;
    if (st == ERASE_OK)
        st = erase_tok_dataset_writer_open(train_dir, vocab, o->shard_tokens, &wo, o->force, &wt);
    if (st == ERASE_OK && eval > 0)
        st = erase_tok_dataset_writer_open(eval_dir, vocab, o->shard_tokens, &wo, o->force, &we);
    /* the source of each token: the file it came from (the tokens of file i follow those of file i-1) */
    size_t at = 0;
    for (int i = 0; i < n && st == ERASE_OK && at < count; i++) {
        size_t end = at + 1; /* its <|bos|> */
        while (end < count && all[end] != (uint16_t)erase_tokenizer_special(o->tokenizer, "<|bos|>"))
            end++;
        for (size_t from = at; st == ERASE_OK && from < end;) {
            size_t to = from < (size_t)train && end > (size_t)train ? (size_t)train : end;
            st = erase_tok_dataset_writer_append(from < (size_t)train ? wt : we, (int64_t)(to - from), all + from,
                                                 files[i]);
            from = to;
        }
        at = end;
    }
    s->tokens = (int64_t)count;
    if (st == ERASE_OK)
        st = interrupted(o);
    if (st == ERASE_OK)
        st = commit_both(we, wt, eval_dir);
    fill_summary(s, wt, we);
    erase_tok_dataset_writer_free(we);
    erase_tok_dataset_writer_free(wt);
    if (st != ERASE_OK && made_out)
        rmdir(o->out_dir);
    free(all);
    return st;
}

erase_status_t erase_tok_convert_text(const char *const *files, int n, const erase_tok_convert_options_t *o,
                                      erase_tok_convert_summary_t *summary)
{
    erase_tok_convert_summary_t local, *s;
    double t0;
    ERASE_CHECK(start(o, summary, &local, &s, &t0));
    if (!(o->eval_fraction >= 0 && o->eval_fraction < 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "eval fraction %g: expected 0 <= f < 1", o->eval_fraction);
    if (o->tokenizer) {
        erase_status_t st = convert_text_bpe(files, n, o, s);
        if (st != ERASE_OK)
            erase_error_trail(__FILE__, __LINE__);
        s->seconds = erase_now_s() - t0;
        return st;
    }
    /* the sizes first: the split is at a byte of the concatenation */
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        FILE *f;
        int64_t bytes;
        ERASE_CHECK(open_sized(files[i], &f, &bytes));
        fclose(f);
        if (bytes > INT64_MAX - total)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the inputs' sizes overflow a 64-bit count", files[i]);
        total += bytes;
    }
    int64_t eval = (int64_t)llround(o->eval_fraction * (double)total), train = total - eval;
    if (train < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "the inputs' %lld bytes leave no training tokens with "
                           "--val-fraction %g (%lld for evaluation)", (long long)total, o->eval_fraction,
                           (long long)eval);
    char train_dir[4096], eval_dir[4096];
    snprintf(train_dir, sizeof train_dir, "%s/train", o->out_dir);
    snprintf(eval_dir, sizeof eval_dir, "%s/eval", o->out_dir);
    erase_status_t st = ERASE_OK;
    int made_out = mkdir(o->out_dir, 0777) == 0;
    if (!made_out && errno != EEXIST)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the directory: %s", o->out_dir, strerror(errno));
    erase_tok_write_options_t wo = o->write;
    wo.byte_level = 1;
    erase_tok_dataset_writer_t *wt = NULL, *we = NULL;
    uint8_t *bytes = malloc(BLOCK_TOKENS);
    uint16_t *tokens = malloc(sizeof *tokens * BLOCK_TOKENS);
    if (!bytes || !tokens)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the conversion buffer");
    if (st == ERASE_OK)
        st = erase_tok_dataset_writer_open(train_dir, 256, o->shard_tokens, &wo, o->force, &wt);
    if (st == ERASE_OK && eval > 0)
        st = erase_tok_dataset_writer_open(eval_dir, 256, o->shard_tokens, &wo, o->force, &we);
    int64_t done = 0; /* bytes of the concatenation converted */
    for (int i = 0; i < n && st == ERASE_OK; i++) {
        FILE *f;
        int64_t left;
        st = open_sized(files[i], &f, &left);
        while (st == ERASE_OK && left > 0 && (st = interrupted(o)) == ERASE_OK) {
            /* no block straddles the split */
            int64_t k = left < BLOCK_TOKENS ? left : BLOCK_TOKENS;
            if (done < train && k > train - done)
                k = train - done;
            st = read_exact(f, files[i], bytes, (size_t)k);
            for (int64_t j = 0; j < k; j++)
                tokens[j] = bytes[j];
            if (st == ERASE_OK)
                st = erase_tok_dataset_writer_append(done < train ? wt : we, k, tokens, files[i]);
            done += k;
            left -= k;
        }
        if (f)
            fclose(f);
        s->files += st == ERASE_OK;
    }
    s->tokens = done;
    if (st == ERASE_OK)
        st = interrupted(o);
    if (st == ERASE_OK)
        st = commit_both(we, wt, eval_dir);
    fill_summary(s, wt, we);
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    erase_tok_dataset_writer_free(we);
    erase_tok_dataset_writer_free(wt);
    if (st != ERASE_OK && made_out)
        rmdir(o->out_dir);
    free(bytes);
    free(tokens);
    s->seconds = erase_now_s() - t0;
    return st;
}

/*
 * A file without llm.c's magic (`bytes` long; its first 4 bytes in
 * header[0] when bytes >= 4), imported without --raw: always an error,
 * saying which of three it looks like. A near miss of the magic (3 of its
 * 4 bytes, or a header whose version and token count fit the file) is a
 * damaged llm.c header; bytes of text (no NUL, no control byte but tab,
 * newline, carriage return and form feed, in the first 4 KiB) are text,
 * for erase-convert text; anything else needs --raw (nanoGPT's headerless
 * uint16 files). Reads up to 4 KiB from the start of f.
 */
static erase_status_t refuse_headerless(FILE *f, const char *path, int64_t bytes, const int32_t *header)
{
    uint8_t head[4096];
    size_t n = bytes < (int64_t)sizeof head ? (size_t)bytes : sizeof head;
    if (fseek(f, 0, SEEK_SET) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
    ERASE_CHECK(read_exact(f, path, head, n));
    if (n >= 4) {
        const uint32_t magic = ERASE_LLMC_MAGIC;
        int same = 0;
        for (int b = 0; b < 4; b++)
            same += head[b] == (uint8_t)(magic >> (8 * b)); /* little-endian, as the file */
        int32_t version, count;
        int fits = 0;
        if (n >= 12 && bytes >= 1024) {
            memcpy(&version, head + 4, 4);
            memcpy(&count, head + 8, 4);
            fits = version == ERASE_LLMC_VERSION && count >= 0 && 2 * (int64_t)count == bytes - 1024;
        }
        if (same == 3 || fits)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: llm.c magic %d expected, got %" PRId32 ": damaged llm.c header?",
                               path, ERASE_LLMC_MAGIC, header[0]);
    }
    int text = n > 0;
    for (size_t i = 0; i < n && text; i++)
        text = head[i] >= 0x20 || head[i] == '\t' || head[i] == '\n' || head[i] == '\r' || head[i] == '\f';
    if (text)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no llm.c header (magic %d) and the bytes look like text: "
                           "erase-convert text converts text (--raw imports it as uint16 tokens anyway)", path,
                           ERASE_LLMC_MAGIC);
    return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no llm.c header (magic %d): a headerless file of uint16 tokens "
                       "(nanoGPT's .bin) needs --raw", path, ERASE_LLMC_MAGIC);
}

/* The tokens of one file: its format told by the header, sizes checked;
 * then every token, checked against the vocab, appended to `w`. */
static erase_status_t import_file(const char *path, const erase_tok_convert_options_t *o,
                                  erase_tok_dataset_writer_t *w, uint16_t *buf, erase_tok_convert_summary_t *s)
{
    FILE *f;
    int64_t bytes, count;
    ERASE_CHECK(open_sized(path, &f, &bytes));
    int32_t header[256];
    erase_status_t st = ERASE_OK;
    int llmc = 0;
    if (bytes >= 4) {
        st = read_exact(f, path, header, 4);
        llmc = st == ERASE_OK && header[0] == ERASE_LLMC_MAGIC; /* little-endian files on little-endian hosts */
    }
    if (st == ERASE_OK && !llmc && !o->raw)
        st = refuse_headerless(f, path, bytes, header);
    if (st == ERASE_OK && llmc) {
        if (bytes < (int64_t)sizeof header)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: %" PRId64 " bytes: shorter than llm.c's header of %zu bytes",
                             path, bytes, sizeof header);
        else
            st = read_exact(f, path, header + 1, sizeof header - 4);
        if (st == ERASE_OK && header[1] != ERASE_LLMC_VERSION)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: llm.c header version %" PRId32 ", expected %d", path, header[1],
                             ERASE_LLMC_VERSION);
        if (st == ERASE_OK && header[2] < 0)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the header says %" PRId32 " tokens, expected >= 0", path, header[2]);
        int64_t data = bytes - (int64_t)sizeof header;
        if (st == ERASE_OK && data != 2 * (int64_t)header[2]) {
            if (data % 2)
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the header says %" PRId32 " tokens, the file holds %" PRId64
                                 " and a half (%" PRId64 " bytes after the header)", path, header[2], data / 2, data);
            else
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the header says %" PRId32 " tokens, the file holds %" PRId64,
                                 path, header[2], data / 2);
        }
        count = header[2];
        s->llmc_files += st == ERASE_OK;
    } else if (st == ERASE_OK) {
        if (bytes % 2)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: %" PRId64 " bytes: a raw token file (no llm.c header) holds "
                             "uint16 tokens, an even number of bytes", path, bytes);
        else if (fseek(f, 0, SEEK_SET) != 0)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
        count = bytes / 2;
        s->raw_files += st == ERASE_OK;
    }
    for (int64_t at = 0; st == ERASE_OK && at < count && (st = interrupted(o)) == ERASE_OK;) {
        int64_t k = count - at < BLOCK_TOKENS ? count - at : BLOCK_TOKENS;
        st = read_exact(f, path, buf, sizeof *buf * (size_t)k);
        for (int64_t j = 0; st == ERASE_OK && j < k; j++)
            if (buf[j] >= o->vocab)
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: token %" PRId64 " is %u, expected < %" PRId64
                                 " (the vocab; --vocab V)", path, at + j, (unsigned)buf[j], o->vocab);
        if (st == ERASE_OK)
            st = erase_tok_dataset_writer_append(w, k, buf, path);
        at += k;
        s->tokens += st == ERASE_OK ? k : 0;
    }
    fclose(f);
    return st;
}

erase_status_t erase_tok_convert_tokens(const char *const *files, int n, const erase_tok_convert_options_t *o,
                                        erase_tok_convert_summary_t *summary)
{
    erase_tok_convert_summary_t local, *s;
    double t0;
    ERASE_CHECK(start(o, summary, &local, &s, &t0));
    erase_tok_write_options_t wo = o->write;
    wo.byte_level = 0;
    erase_tok_dataset_writer_t *w = NULL;
    erase_status_t st = erase_tok_dataset_writer_open(o->out_dir, o->vocab, o->shard_tokens, &wo, o->force, &w);
    uint16_t *buf = st == ERASE_OK ? malloc(sizeof *buf * BLOCK_TOKENS) : NULL;
    if (st == ERASE_OK && !buf)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the conversion buffer");
    for (int i = 0; i < n && st == ERASE_OK; i++) {
        st = import_file(files[i], o, w, buf, s);
        s->files += st == ERASE_OK;
    }
    if (st == ERASE_OK)
        st = interrupted(o);
    if (st == ERASE_OK)
        st = commit_both(NULL, w, NULL);
    fill_summary(s, w, NULL);
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    erase_tok_dataset_writer_free(w);
    free(buf);
    s->seconds = erase_now_s() - t0;
    return st;
}

void erase_tok_convert_print(const erase_tok_convert_summary_t *s, const erase_tok_convert_options_t *o, FILE *out)
{
    fprintf(out, "  files          %d", s->files);
    if (s->llmc_files || s->raw_files)
        fprintf(out, " (%d with llm.c's header, %d raw uint16)", s->llmc_files, s->raw_files);
    fprintf(out, "\n  tokens         %" PRId64 " in %.2f s (%.0f tokens/s)\n", s->tokens, s->seconds,
            s->seconds > 0 ? (double)s->tokens / s->seconds : 0.0);
    if (s->eval_shards) {
        fprintf(out, "  %s/train  %" PRId64 " tokens, %d shard%s\n", o->out_dir, s->train_tokens, s->train_shards,
                s->train_shards == 1 ? "" : "s");
        fprintf(out, "  %s/eval   %" PRId64 " tokens, %d shard%s\n", o->out_dir, s->eval_tokens, s->eval_shards,
                s->eval_shards == 1 ? "" : "s");
    } else {
        fprintf(out, "  %s  %" PRId64 " tokens, %d shard%s\n", o->out_dir, s->train_tokens, s->train_shards,
                s->train_shards == 1 ? "" : "s");
    }
}

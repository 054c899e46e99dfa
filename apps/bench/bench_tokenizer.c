/*
 * erase-bench tokenizer: the BPE tokenizer's speed (io/tokenizer.h; issue
 * 33 item 5). Each round: training of vocab V on the text (in memory, the
 * counting pass on --threads threads), encoding of the text --repeat times
 * on 1 thread and on 2; with --reference PYTHON (a Python with rustbpe and
 * tiktoken), the same round of rustbpe's training (RAYON_NUM_THREADS =
 * --threads) and tiktoken's encoding (1 thread; 2: the text's halves,
 * encode_ordinary_batch) by bench/tokenizer_ref.py, interleaved with
 * erase's. Printed: min / median / max of each and erase / reference of
 * the medians and per round (training: time; encoding: MB/s, 1 MB = 1e6
 * bytes of text).
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "io/tokenizer.h"
#include "lib/core/timer.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ROUNDS 64

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench tokenizer [--text FILE] [--vocab V] [--threads N] [--rounds R]\n"
               "                             [--repeat K] [--reference PYTHON]\n"
               "  defaults: the shipped tinyshakespeare, --vocab 4096 --threads 2 --rounds 5 --repeat 5\n"
               "  training time of vocab V and encoding MB/s on 1 and 2 threads (the text K times)\n"
               "  --reference PYTHON  a Python with rustbpe and tiktoken (pip install rustbpe tiktoken):\n"
               "                      rustbpe's training and tiktoken's encoding, rounds interleaved\n");
}

typedef struct {
    double train_s, encode1, encode2; /* seconds; MB/s; MB/s */
    long tokens;
} round_t;

static int read_text(const char *path, uint8_t **text, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "erase-bench tokenizer: %s: cannot open\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *text = malloc((size_t)len + 1);
    *n = *text ? fread(*text, 1, (size_t)len, f) : 0;
    fclose(f);
    return *text && *n == (size_t)len ? 0 : -1;
}

static double encode_mbs(const erase_tokenizer_t *tok, const uint8_t *text, size_t n, int threads, int repeat,
                         long *tokens)
{
    double t0 = erase_now_s();
    for (int r = 0; r < repeat; r++) {
        erase_token_ids_t ids = {0};
        ERASE_MUST(erase_tokenizer_encode(tok, text, n, 0, threads, &ids));
        *tokens = (long)ids.count;
        erase_token_ids_free(&ids);
    }
    return (double)n * repeat / (erase_now_s() - t0) / 1e6;
}

static void row(const char *what, const char *unit, double *a, double *b, int rounds, int reference, int lower_better)
{
    double ratio[MAX_ROUNDS], sa[MAX_ROUNDS], sb[MAX_ROUNDS];
    char per[512] = "";
    size_t o = 0;
    for (int r = 0; r < rounds; r++) {
        ratio[r] = reference ? (lower_better ? b[r] / a[r] : a[r] / b[r]) : 0;
        if (reference)
            o += (size_t)snprintf(per + o, sizeof per - o, "%s%.2f", r ? " · " : "", ratio[r]);
        sa[r] = a[r], sb[r] = b[r];
    }
    bench_spread_t ea = bench_spread(sa, (size_t)rounds), eb = bench_spread(sb, (size_t)rounds);
    if (!reference) {
        printf("| %s (%s) | %.3g / %.3g / %.3g | | |\n", what, unit, ea.min, ea.median, ea.max);
        return;
    }
    printf("| %s (%s) | %.3g / %.3g / %.3g | %.3g / %.3g / %.3g | **%.2fx** (%s) |\n", what, unit, ea.min, ea.median,
           ea.max, eb.min, eb.median, eb.max, lower_better ? eb.median / ea.median : ea.median / eb.median, per);
}

int bench_tokenizer(int argc, char **argv)
{
    static const struct option opts[] = {{"text", required_argument, 0, 'x'},   {"vocab", required_argument, 0, 'v'},
                                         {"threads", required_argument, 0, 't'}, {"rounds", required_argument, 0, 'r'},
                                         {"repeat", required_argument, 0, 'k'},  {"reference", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *text_path = ERASE_SRCDIR "/data/text/tinyshakespeare.txt", *python = NULL;
    int threads = 2, rounds = 5, repeat = 5, c;
    long vocab = 4096;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'x': text_path = optarg; break;
        case 'v': vocab = atol(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'k': repeat = atoi(optarg); break;
        case 'p': python = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench tokenizer", c, argv, opts);
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-bench tokenizer", argv[optind]);
    if (rounds < 1 || rounds > MAX_ROUNDS || repeat < 1 || threads < 1) {
        fprintf(stderr, "erase-bench tokenizer: --rounds 1..%d, --repeat and --threads at least 1\n", MAX_ROUNDS);
        return 2;
    }
    uint8_t *text;
    size_t n;
    if (read_text(text_path, &text, &n))
        return 1;
    erase_tokenizer_train_options_t o = erase_tokenizer_train_options_default();
    o.vocab = vocab;
    o.threads = threads;
    char tok_path[] = "/tmp/erase-bench-tokenizer-XXXXXX";
    int fd = mkstemp(tok_path);
    if (fd >= 0)
        close(fd);
    round_t e[MAX_ROUNDS], p[MAX_ROUNDS];
    int reference = python != NULL;
    for (int r = 0; r < rounds; r++) {
        erase_tokenizer_t *tok;
        double t0 = erase_now_s();
        erase_status_t st = erase_tokenizer_train_buffer(text, n, &o, &tok);
        e[r].train_s = erase_now_s() - t0;
        if (st != ERASE_OK) {
            fprintf(stderr, "erase-bench tokenizer: %s\n", erase_error_reason());
            return st == ERASE_ERR_INVALID ? 2 : 1;
        }
        if (r == 0)
            ERASE_MUST(erase_tokenizer_save(tok, tok_path));
        e[r].encode1 = encode_mbs(tok, text, n, 1, repeat, &e[r].tokens);
        e[r].encode2 = encode_mbs(tok, text, n, 2, repeat, &e[r].tokens);
        erase_tokenizer_free(tok);
        if (!reference)
            continue;
        char cmd[8192], line[512] = "";
        snprintf(cmd, sizeof cmd, "RAYON_NUM_THREADS=%d '%s' '%s/bench/tokenizer_ref.py' '%s' %ld '%s' %d", threads,
                 python, ERASE_SRCDIR, text_path, vocab, tok_path, repeat);
        FILE *f = popen(cmd, "r");
        int ok = f && fgets(line, sizeof line, f) &&
                 sscanf(line, "train_s %lf encode1_mbs %lf encode2_mbs %lf tokens %ld", &p[r].train_s, &p[r].encode1,
                        &p[r].encode2, &p[r].tokens) == 4;
        if (f)
            pclose(f);
        if (!ok) {
            fprintf(stderr, "erase-bench tokenizer: the reference (%s) did not report: %s\n", cmd, line);
            unlink(tok_path);
            return 1;
        }
        if (p[r].tokens != e[r].tokens)
            fprintf(stderr, "erase-bench tokenizer: warning: tiktoken made %ld tokens, erase %ld\n", p[r].tokens,
                    e[r].tokens);
    }
    unlink(tok_path);
    printf("# erase-bench tokenizer: %s (%zu bytes, %ld tokens), vocab %ld, training on %d thread%s, "
           "encoding the text %d times, %d rounds%s%s\n",
           text_path, n, e[0].tokens, vocab, threads, threads > 1 ? "s" : "", repeat, rounds,
           reference ? ", interleaved with rustbpe and tiktoken of " : "", reference ? python : "");
    printf("| measure | erase min / median / max | %s min / median / max | erase vs reference (medians; per round) |\n",
           reference ? "rustbpe, tiktoken" : "reference");
    printf("| --- | --- | --- | --- |\n");
    double a[MAX_ROUNDS], b[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        a[r] = e[r].train_s, b[r] = reference ? p[r].train_s : 0;
    char what[64];
    snprintf(what, sizeof what, "training, vocab %ld", vocab);
    row(what, "s; ratio: reference time / erase's", a, b, rounds, reference, 1);
    for (int r = 0; r < rounds; r++)
        a[r] = e[r].encode1, b[r] = reference ? p[r].encode1 : 0;
    row("encoding, 1 thread", "MB/s", a, b, rounds, reference, 0);
    for (int r = 0; r < rounds; r++)
        a[r] = e[r].encode2, b[r] = reference ? p[r].encode2 : 0;
    row("encoding, 2 threads", "MB/s", a, b, rounds, reference, 0);
    free(text);
    return 0;
}

/*
 * erase-tokenizer: byte-level BPE tokenizers compatible with nanochat's
 * (io/tokenizer.h; the file format: docs/tokenizer.md) (issue 33).
 *
 *   erase-tokenizer train TEXT... --vocab V -o TOKENIZER   learn merges as rustbpe does
 *   erase-tokenizer encode --tokenizer T [FILE]   text (stdin: -) -> ids, one line, spaces between
 *   erase-tokenizer decode --tokenizer T [FILE]   ids (whitespace-separated) -> the bytes
 *   erase-tokenizer info TOKENIZER                vocab, merges, pattern, identity, special tokens
 *
 * Exit status: 0, 1 failed (a file at fault: one line naming it), 2 usage.
 */
#include "config.h"
#include "apps/cli_args.h"
#include "io/pretokenize.h"
#include "io/tokenizer.h"
#include "lib/core/fs.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failed(const char *cmd)
{
    fprintf(stderr, "erase-tokenizer %s: error: %s\n", cmd, erase_error_reason());
    return 1;
}

static int usage_error(const char *cmd, const char *what)
{
    fprintf(stderr, "erase-tokenizer %s: %s\n", cmd, what);
    return 2;
}

/* The whole of FILE ("-": stdin) into *text; -1 (and a message) if unreadable. */
static int slurp(const char *cmd, const char *path, uint8_t **text, size_t *n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "erase-tokenizer %s: error: %s: cannot open: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap + 1);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        uint8_t *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger)
            free(buf);
        buf = bigger, cap *= 2;
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "erase-tokenizer %s: error: %s: %s\n", cmd, path, bad ? "read error" : "out of memory");
        free(buf);
        return -1;
    }
    buf[len] = '\0';
    *text = buf, *n = len;
    return 0;
}

static void usage_train(FILE *f)
{
    fprintf(f, "usage: erase-tokenizer train TEXT... --vocab V -o TOKENIZER [options]\n"
               "  Learn a byte-level BPE tokenizer from text files as nanochat's rustbpe does\n"
               "  (the same merges): V tokens in all, 256 bytes, V - 265 merges and nanochat's\n"
               "  9 special tokens (<|bos|> and its chat tokens) after them.\n"
               "  --vocab V             265..65536 (tokens are stored as uint16 in token shards)\n"
               "  -o, --output FILE     the tokenizer file (docs/tokenizer.md; written whole or not at all)\n"
               "  --force               replace FILE if it exists\n"
               "  --pattern NAME        split pattern: nanochat (numbers in runs of 1-2, default) or gpt4 (1-3)\n"
               "  --threads N           threads counting pieces (default: 2 or the CPUs, the fewer)\n"
               "  -q, --quiet           no progress lines\n");
}

static int cmd_train(int argc, char **argv)
{
    static const struct option opts[] = {{"vocab", required_argument, 0, 'v'},   {"output", required_argument, 0, 'o'},
                                         {"pattern", required_argument, 0, 'p'}, {"threads", required_argument, 0, 't'},
                                         {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
                                         {"force", no_argument, 0, 'f'},         {0, 0, 0, 0}};
    erase_tokenizer_train_options_t o = erase_tokenizer_train_options_default();
    const char *out = NULL;
    int quiet = 0, c, have_vocab = 0, force = 0;
    char *end;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'v':
            errno = 0;
            o.vocab = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end) {
                fprintf(stderr, "erase-tokenizer train: --vocab %s: a whole number expected\n", optarg);
                return 2;
            }
            have_vocab = 1;
            break;
        case 'o':
            out = optarg;
            break;
        case 'p':
            if (!strcmp(optarg, "nanochat"))
                o.pattern = ERASE_SPLIT_PATTERN_NANOCHAT;
            else if (!strcmp(optarg, "gpt4"))
                o.pattern = ERASE_SPLIT_PATTERN_GPT4;
            else {
                fprintf(stderr, "erase-tokenizer train: --pattern %s: nanochat or gpt4 expected\n", optarg);
                return 2;
            }
            break;
        case 't':
            o.threads = atoi(optarg);
            if (o.threads < 1) {
                fprintf(stderr, "erase-tokenizer train: --threads %s: at least 1 expected\n", optarg);
                return 2;
            }
            break;
        case 'q':
            quiet = 1;
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            usage_train(stdout);
            return 0;
        default:
            return cli_option_error("erase-tokenizer train", c, argv, opts);
        }
    }
    if (optind >= argc)
        return usage_error("train", "no text files (erase-tokenizer train --help)");
    if (!have_vocab)
        return usage_error("train", "--vocab V is required (265..65536)");
    if (!out)
        return usage_error("train", "-o TOKENIZER is required");
    /* before the training, which may take minutes: where it goes */
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", out);
    const char *dir = dirname(copy);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "erase-tokenizer train: -o %s: its directory %s does not exist\n", out, dir);
        return 2;
    }
    int exists = stat(out, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) { /* --force renames over it: never over a device or a FIFO */
        fprintf(stderr, "erase-tokenizer train: -o %s: is %s, expected a file name\n", out,
                erase_mode_not_regular(sb.st_mode));
        return 2;
    }
    if (exists && !force) {
        fprintf(stderr, "erase-tokenizer train: %s: already exists; remove it or replace it (--force)\n", out);
        return 1;
    }
    o.progress = quiet ? NULL : stderr;
    erase_tokenizer_t *tok;
    double t0 = erase_now_s();
    erase_status_t st = erase_tokenizer_train((const char *const *)argv + optind, argc - optind, &o, &tok);
    if (st == ERASE_ERR_INVALID)
        return usage_error("train", erase_error_reason());
    if (st != ERASE_OK)
        return failed("train");
    if (erase_tokenizer_save(tok, out) != ERASE_OK) {
        erase_tokenizer_free(tok);
        return failed("train");
    }
    char hex[17];
    erase_tokenizer_identity_hex(tok, hex);
    if (!quiet)
        printf("%s: vocab %" PRId64 " (256 bytes, %" PRId64 " merges, %d special tokens), identity %s, %.2f s\n", out,
               erase_tokenizer_vocab(tok), erase_tokenizer_merges(tok), ERASE_TOKENIZER_SPECIALS, hex,
               erase_now_s() - t0);
    if (erase_tokenizer_vocab(tok) < o.vocab)
        fprintf(stderr, "erase-tokenizer train: note: the text gave %" PRId64 " merges of the %" PRId64
                        " asked (no pair left to merge): vocab %" PRId64 "\n",
                erase_tokenizer_merges(tok), o.vocab - ERASE_TOKENIZER_MIN_VOCAB, erase_tokenizer_vocab(tok));
    erase_tokenizer_free(tok);
    return 0;
}

/* The options of encode and decode: --tokenizer T, [--specials], [--threads N], [FILE]. */
static int parse_coding(const char *cmd, int argc, char **argv, const char **path, const char **input, int *flags,
                        int *threads)
{
    static const struct option opts[] = {{"tokenizer", required_argument, 0, 'T'}, {"specials", no_argument, 0, 's'},
                                         {"threads", required_argument, 0, 't'},   {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    char tool[64];
    int c;
    snprintf(tool, sizeof tool, "erase-tokenizer %s", cmd);
    *path = NULL, *input = "-", *flags = 0, *threads = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'T':
            *path = optarg;
            break;
        case 's':
            *flags |= ERASE_ENCODE_SPECIALS;
            break;
        case 't':
            *threads = atoi(optarg);
            break;
        case 'h':
            if (!strcmp(cmd, "encode"))
                printf("usage: %s --tokenizer TOKENIZER [--specials] [--threads N] [FILE...]\n"
                       "  The ids of the text of each FILE (none or -: stdin), a line for each, a space\n"
                       "  between ids.\n"
                       "  --tokenizer FILE      the tokenizer (erase-tokenizer train)\n"
                       "  --specials            the special tokens' names in the text become their ids\n"
                       "  --threads N           encode on N threads (default 1)\n",
                       tool);
            else
                printf("usage: %s --tokenizer TOKENIZER [FILE]\n"
                       "  The bytes of the whitespace-separated ids in FILE (none or -: stdin).\n"
                       "  --tokenizer FILE      the tokenizer (erase-tokenizer train)\n",
                       tool);
            return -1;
        default:
            return cli_option_error(tool, c, argv, opts);
        }
    }
    if (!*path)
        return usage_error(cmd, "--tokenizer TOKENIZER is required");
    if (strcmp(cmd, "encode") && (*flags || *threads != 1))
        return usage_error(cmd, "--specials and --threads are options of encode (decode does nothing with them)");
    if (optind < argc)
        *input = argv[optind];
    if (optind + 1 < argc && strcmp(cmd, "encode"))
        return cli_unexpected(tool, argv[optind + 1]);
    return 0;
}

static int cmd_encode(int argc, char **argv)
{
    const char *path, *input;
    int flags, threads, rc = parse_coding("encode", argc, argv, &path, &input, &flags, &threads);
    if (rc)
        return rc < 0 ? 0 : rc;
    erase_tokenizer_t *tok;
    if (erase_tokenizer_load(path, &tok) != ERASE_OK)
        return failed("encode");
    /* FILE... (optind: the first; none: stdin): one line of ids per file */
    int first = optind, files = optind < argc ? argc - optind : 1;
    for (int f = 0; rc == 0 && f < files; f++) {
        const char *name = first < argc ? argv[first + f] : input;
        uint8_t *text;
        size_t n;
        erase_token_ids_t ids = {0};
        if (slurp("encode", name, &text, &n)) {
            rc = 1;
            break;
        }
        rc = erase_tokenizer_encode(tok, text, n, flags, threads, &ids) == ERASE_OK ? 0 : failed("encode");
        for (size_t i = 0; rc == 0 && i < ids.count; i++)
            printf(i ? " %u" : "%u", ids.ids[i]);
        if (rc == 0)
            printf("\n");
        erase_token_ids_free(&ids);
        free(text);
    }
    erase_tokenizer_free(tok);
    return rc;
}

static int cmd_decode(int argc, char **argv)
{
    const char *path, *input;
    int flags, threads, rc = parse_coding("decode", argc, argv, &path, &input, &flags, &threads);
    if (rc)
        return rc < 0 ? 0 : rc;
    erase_tokenizer_t *tok;
    if (erase_tokenizer_load(path, &tok) != ERASE_OK)
        return failed("decode");
    uint8_t *text, *bytes = NULL;
    size_t n, count = 0, length;
    if (slurp("decode", input, &text, &n)) {
        erase_tokenizer_free(tok);
        return 1;
    }
    uint32_t *ids = malloc((n / 2 + 1) * sizeof *ids);
    char *p = (char *)text, *end;
    while (ids && rc == 0) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
            p++;
        if (!*p)
            break;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || end == p || v > UINT32_MAX) {
            size_t word = strcspn(p, " \n\t\r");
            int len = word < 24 ? (int)word : 24;
            fprintf(stderr, "erase-tokenizer decode: error: %s: token %zu is '%.*s', expected a number (the ids "
                            "counted from 0)\n", input, count, len, p);
            rc = 1;
        }
        ids[count++] = (uint32_t)v;
        p = end;
    }
    if (rc == 0 && !ids) {
        fprintf(stderr, "erase-tokenizer decode: error: %s: no memory for its ids\n", input);
        rc = 1;
    }
    if (rc == 0 && erase_tokenizer_decode(tok, ids, count, &bytes, &length) != ERASE_OK) {
        fprintf(stderr, "erase-tokenizer decode: error: %s: %s\n", input, erase_error_reason());
        rc = 1;
    }
    if (rc == 0)
        fwrite(bytes, 1, length, stdout);
    free(bytes), free(ids), free(text);
    erase_tokenizer_free(tok);
    return rc;
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            printf("usage: erase-tokenizer info TOKENIZER\n"
                   "  What the tokenizer file holds (vocabulary size, merges, identity, pattern and\n"
                   "  special tokens), once it is checked as every tool checks it.\n");
            return 0;
        }
        return argc < 2 ? usage_error("info", "no tokenizer file") : cli_unexpected("erase-tokenizer info", argv[argc - 1]);
    }
    erase_tokenizer_t *tok;
    if (erase_tokenizer_load(argv[1], &tok) != ERASE_OK)
        return failed("info");
    char hex[17];
    erase_tokenizer_identity_hex(tok, hex);
    printf("%s: vocab %" PRId64 ", %" PRId64 " merges, identity %s\npattern %s (numbers in runs of 1-%d)\n", argv[1],
           erase_tokenizer_vocab(tok), erase_tokenizer_merges(tok), hex, erase_tokenizer_pattern(tok),
           erase_split_pattern_digits(erase_tokenizer_pattern(tok)));
    for (int s = 0; s < ERASE_TOKENIZER_SPECIALS; s++)
        printf("special %s %d\n", erase_tokenizer_special_names[s],
               (int)erase_tokenizer_special(tok, erase_tokenizer_special_names[s]));
    erase_tokenizer_free(tok);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-tokenizer COMMAND [ARGS]   (COMMAND --help for more)\n\n"
               "  train    learn a BPE tokenizer from text files (nanochat's: rustbpe's merges)\n"
               "  encode   text -> token ids (as tiktoken encodes)\n"
               "  decode   token ids -> text\n"
               "  info     what a tokenizer file holds (checked as every tool checks it)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        return cli_version("erase-tokenizer");
    }
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "encode"))
        return cmd_encode(argc - 1, argv + 1);
    if (!strcmp(argv[1], "decode"))
        return cmd_decode(argc - 1, argv + 1);
    if (!strcmp(argv[1], "info"))
        return cmd_info(argc - 1, argv + 1);
    fprintf(stderr, "erase-tokenizer: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

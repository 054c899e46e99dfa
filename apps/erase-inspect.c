/*
 * erase-inspect: what is inside erase's files.
 *
 *   erase-inspect data DIR|FILE...   CTR shards: per shard rows, clicks,
 *                                    layout and provenance; for the whole
 *                                    dataset rows, base rate, missing rate
 *                                    and value range of every feature
 *                                    (categorical id ranges in hex).
 *                                    Classification shards (the first
 *                                    shard's format says which): rows,
 *                                    features, classes, layout, provenance;
 *                                    the class histogram, the value range
 *                                    and mean of the features.
 *                                    Token shards: tokens, vocab, bytes,
 *                                    layout, provenance; the ids used and
 *                                    the bytes per token
 *
 *                                    Shards converted with a vocabulary:
 *                                    its table rows and coverage per feature
 *
 *   erase-inspect vocab VOCAB.h5     a vocabulary (io/vocab.h; also
 *                                    erase-inspect data VOCAB.h5)
 *
 *   erase-inspect ckpt FILE|DIR      a checkpoint (io/checkpoint.h): step,
 *                                    samples, epoch and cursor, sizes,
 *                                    schedule, optimizer clock, the model
 *                                    file and run options, the tables'
 *                                    placement, every tensor with its
 *                                    shape and L2 norm (a sharded one's:
 *                                    which ranks wrote its rows); of a
 *                                    checkpoint directory the one that
 *                                    erase-train --resume DIR takes
 *
 *   erase-inspect merge [--force] CKPT OUT   a pipeline checkpoint (its
 *                                    stage files) as one checkpoint file
 *                                    of pp 1 (every stage's tensors)
 *
 * Every shard is validated as the reader validates it and read completely;
 * a checkpoint is validated as a resume validates it (every checksum, and
 * its model file against each stage's tensors, as the loaders check).
 * Exit status: 0, 1 failed (or damaged), 2 usage.
 */
#include "config.h"
#include "apps/cli_args.h"
#include "apps/inspect_vocab.h"
#include "io/checkpoint.h"
#include "io/cls_stats.h"
#include "io/ctr_index.h"
#include "io/ctr_shard.h"
#include "io/ctr_stats.h"
#include "io/h5_rows.h"
#include "io/h5_util.h"
#include "io/synth.h"
#include "io/tok_data_tokenizer.h"
#include "io/tok_shard.h"
#include "io/vocab.h"
#include "lib/core/fs.h"
#include "lib/device/device.h"
#include "lib/nn/model_config.h"
#include "lib/nn/network.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_ROWS 65536

static int failed(const char *cmd)
{
    fprintf(stderr, "erase-inspect %s: error: %s\n", cmd, erase_error_reason());
    return 1;
}

/* Statistics of one shard, read completely; its ids counted into
 * `distinct`. lengths: room for [READ_ROWS, 26]. */
static erase_status_t scan_shard(erase_ctr_shard_t *sh, erase_ctr_stats_t *st, erase_ctr_distinct_t *distinct,
                                 uint8_t *label, float *dense, uint32_t *lengths)
{
    int64_t rows = erase_ctr_shard_rows(sh);
    for (int64_t b = 0; b < rows; b += READ_ROWS) {
        int64_t n = rows - b < READ_ROWS ? rows - b : READ_ROWS;
        const uint32_t *ids;
        int64_t nids;
        ERASE_CHECK(erase_ctr_shard_read(sh, b, n, label, dense, NULL));
        ERASE_CHECK(erase_ctr_shard_read_ids(sh, b, n, lengths, &ids, &nids));
        erase_ctr_stats_add_ids(st, n, label, dense, lengths, ids);
        ERASE_CHECK(erase_ctr_distinct_add_ids(distinct, n, lengths, ids));
    }
    return ERASE_OK;
}

/* If DIR/planted.h5 exists (erase-convert synth), print the planted model's NE. */
static void print_planted(const char *input)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", input, ERASE_SYNTH_PLANTED_NAME);
    if (access(path, R_OK) != 0 || erase_file_check_regular(path) != ERASE_OK) {
        erase_error_clear();
        return;
    }
    erase_h5_enter();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    double ne = NAN, bias = NAN;
    if (f >= 0) {
        hid_t a;
        if (H5Aexists(f, "ne") > 0 && (a = H5Aopen(f, "ne", H5P_DEFAULT)) >= 0) {
            H5Aread(a, H5T_NATIVE_DOUBLE, &ne);
            H5Aclose(a);
        }
        if (H5Aexists(f, "bias") > 0 && (a = H5Aopen(f, "bias", H5P_DEFAULT)) >= 0) {
            H5Aread(a, H5T_NATIVE_DOUBLE, &bias);
            H5Aclose(a);
        }
        H5Fclose(f);
    }
    erase_h5_leave();
    printf("planted model: %s (bias %.6f; NE of the planted model on these rows %.6f)\n", path, bias, ne);
}

static void usage_data(FILE *f)
{
    fprintf(f, "usage: erase-inspect data DIR|FILE...\n"
               "  DIR: a dataset written by erase-convert (with index.txt); FILE: one shard.\n"
               "  Prints every shard (rows, clicks, chunking, filters: compression and checksums, converter, sources)\n"
               "  and for all rows: base rate, missing rate and range of every feature, and the distinct ids\n"
               "  of C1..C26: exact up to %d, above that a HyperLogLog estimate shown as ~N; for multi-hot\n"
               "  data (erase-ctr-2) the hotness of C1..C26: most and mean ids per sample.\n"
               "  Classification shards (erase-convert mnist): rows, features, classes per shard; for all\n"
               "  rows the feature value range and mean and the rows of every class.\n"
               "  Token shards (erase-convert text, tokens): tokens, vocab, bytes of source text per shard; for\n"
               "  all tokens the ids used, the largest id and the bytes per token.\n",
            ERASE_DISTINCT_EXACT_MAX);
}

/* Filters of a shard's main dataset, for the table. */
static const char *filters_text(int compressed, int checksummed)
{
    return compressed ? (checksummed ? "deflate,fletcher32" : "deflate") : (checksummed ? "fletcher32" : "none");
}

/* Provenance of a shard: "converter; source1,source2" (sources' newlines as commas). */
static void provenance(char *text, size_t size, const char *converter, char *sources)
{
    for (char *p = sources; *p; p++)
        if (*p == '\n')
            *p = ',';
    snprintf(text, size, "%s; %s", converter, sources);
}

/* erase-inspect data of classification shards (io/cls_shard.h). */
static int data_cls(const erase_ctr_list_t *list)
{
    erase_cls_stats_t all;
    float *features = NULL;
    uint8_t *label = malloc(READ_ROWS);
    int rc = label ? 0 : 1;
    printf("%-40s %10s %8s %7s %7s %-18s %s\n", "shard", "rows", "features", "classes", "chunk", "filters",
           "converter; sources");
    for (int i = 0; rc == 0 && i < list->count; i++) {
        erase_cls_shard_t *sh;
        if (erase_cls_shard_open(list->paths[i], &sh) != ERASE_OK)
            return free(label), free(features), failed("data");
        int64_t rows = erase_cls_shard_rows(sh), f = erase_cls_shard_features(sh);
        int classes = erase_cls_shard_classes(sh);
        if (i == 0) {
            erase_cls_stats_init(&all, f, classes);
            features = malloc(sizeof *features * (size_t)(READ_ROWS * f));
            rc = features ? 0 : 1;
        }
        if (rc == 0 && (f != all.features || classes != all.classes)) {
            fprintf(stderr, "erase-inspect data: error: %s has %" PRId64 " features and %d classes, %s has %"
                    PRId64 " and %d\n", list->paths[i], f, classes, list->paths[0], all.features, all.classes);
            rc = 1;
        }
        if (rc == 0 && list->rows[i] >= 0 && list->rows[i] != rows) {
            fprintf(stderr, "erase-inspect data: error: %s has %" PRId64 " rows, its index says %" PRId64 "\n",
                    list->paths[i], rows, list->rows[i]);
            rc = 1;
        }
        erase_cls_stats_t st;
        erase_cls_stats_init(&st, f, classes);
        for (int64_t b = 0; rc == 0 && b < rows; b += READ_ROWS) {
            int64_t n = rows - b < READ_ROWS ? rows - b : READ_ROWS;
            if (erase_cls_shard_read(sh, b, n, features, label) != ERASE_OK)
                rc = failed("data");
            else
                erase_cls_stats_add(&st, n, features, label);
        }
        if (rc == 0) {
            char converter[128], sources[512], prov[700];
            erase_cls_shard_attr_text(sh, "converter", converter, sizeof converter);
            erase_cls_shard_attr_text(sh, "source_files", sources, sizeof sources);
            provenance(prov, sizeof prov, converter, sources);
            printf("%-40s %10" PRId64 " %8" PRId64 " %7d %7" PRId64 " %-18s %s\n", list->paths[i], rows, f, classes,
                   erase_cls_shard_chunk_rows(sh),
                   filters_text(erase_cls_shard_compressed(sh), erase_cls_shard_checksummed(sh)), prov);
            erase_cls_stats_merge(&all, &st);
        }
        erase_cls_shard_close(sh);
    }
    if (rc == 0) {
        printf("\n%d shard%s, format %s\n", list->count, list->count == 1 ? "" : "s", ERASE_CLS_FORMAT);
        erase_cls_stats_print(&all, stdout, "");
    }
    free(label);
    free(features);
    return rc;
}

/* Token shards: per shard tokens, vocab, bytes, layout, provenance; for all
 * tokens the ids used, the largest, the bytes per token and the BPE
 * tokenizer's identity (when the shards have one). Every token is
 * read (checksums and the vocab checked). */
static int data_tok(const erase_ctr_list_t *list)
{
    uint16_t *buf = malloc(sizeof *buf * READ_ROWS);
    uint8_t *used = calloc(ERASE_TOK_MAX_VOCAB, 1);
    int rc = buf && used ? 0 : 1;
    int64_t tokens = 0, bytes = 0, vocab = 0, distinct = 0;
    int unknown_bytes = 0, max_id = -1, mixed = 0;
    char tokenizer[17] = "";
    printf("%-40s %10s %6s %10s %7s %-18s %s\n", "shard", "tokens", "vocab", "bytes", "chunk", "filters",
           "converter; sources");
    for (int i = 0; rc == 0 && i < list->count; i++) {
        erase_tok_shard_t *sh;
        if (erase_tok_shard_open(list->paths[i], &sh) != ERASE_OK) {
            rc = failed("data");
            break;
        }
        int64_t n = erase_tok_shard_count(sh), b = erase_tok_shard_bytes(sh);
        if (i == 0) {
            vocab = erase_tok_shard_vocab(sh);
            snprintf(tokenizer, sizeof tokenizer, "%s", erase_tok_shard_tokenizer(sh));
        }
        mixed |= strcmp(erase_tok_shard_tokenizer(sh), tokenizer) != 0;
        if (erase_tok_shard_vocab(sh) != vocab) {
            fprintf(stderr, "erase-inspect data: error: %s has vocab %" PRId64 ", %s has %" PRId64 "\n",
                    list->paths[i], erase_tok_shard_vocab(sh), list->paths[0], vocab);
            rc = 1;
        }
        if (rc == 0 && list->rows[i] >= 0 && list->rows[i] != n) {
            fprintf(stderr, "erase-inspect data: error: %s has %" PRId64 " tokens, its index says %" PRId64 "\n",
                    list->paths[i], n, list->rows[i]);
            rc = 1;
        }
        for (int64_t at = 0; rc == 0 && at < n; at += READ_ROWS) {
            int64_t k = n - at < READ_ROWS ? n - at : READ_ROWS;
            if (erase_tok_shard_read(sh, at, k, buf) != ERASE_OK)
                rc = failed("data");
            for (int64_t j = 0; rc == 0 && j < k; j++) {
                distinct += !used[buf[j]];
                used[buf[j]] = 1;
                max_id = buf[j] > max_id ? buf[j] : max_id;
            }
        }
        if (rc == 0) {
            char converter[128], sources[512], prov[700], btext[24] = "-";
            erase_tok_shard_attr_text(sh, "converter", converter, sizeof converter);
            erase_tok_shard_attr_text(sh, "source", sources, sizeof sources);
            provenance(prov, sizeof prov, converter, sources);
            if (b >= 0)
                snprintf(btext, sizeof btext, "%" PRId64, b);
            printf("%-40s %10" PRId64 " %6" PRId64 " %10s %7" PRId64 " %-18s %s\n", list->paths[i], n, vocab, btext,
                   erase_tok_shard_chunk_tokens(sh),
                   filters_text(erase_tok_shard_compressed(sh), erase_tok_shard_checksummed(sh)), prov);
            tokens += n;
            bytes += b >= 0 ? b : 0;
            unknown_bytes |= b < 0;
        }
        erase_tok_shard_close(sh);
    }
    if (rc == 0) {
        printf("\n%d shard%s, format %s\n", list->count, list->count == 1 ? "" : "s", ERASE_TOK_FORMAT);
        printf("  tokens %" PRId64 ", vocab %" PRId64 ", ids used %" PRId64 " (largest %d)\n", tokens, vocab, distinct,
               max_id);
        if (unknown_bytes)
            printf("  bytes: unknown (imported tokens): no bits per byte\n");
        else
            printf("  bytes %" PRId64 " (%.4f per token)\n", bytes, tokens ? (double)bytes / (double)tokens : 0.0);
        if (mixed)
            printf("  tokenizer: mixed (erase-train refuses these shards together)\n");
        else if (tokenizer[0])
            printf("  tokenizer %s (BPE; its file in every shard)\n", tokenizer);
    }
    free(buf);
    free(used);
    return rc;
}

/* The leftover arguments of a command that takes no options but --help and
 * `flag` (may be NULL; *flag_given set) and up to `most` operands, from
 * argv[1]: the operands go to ops[] (*n of them). Returns 0, or 2 after the
 * one line that names an unknown option or an unexpected argument. */
static int operands(const char *cmd, int argc, char **argv, const char *flag, int *flag_given, int most,
                    const char **ops, int *n)
{
    char tool[32];
    snprintf(tool, sizeof tool, "erase-inspect %s", cmd);
    *n = 0;
    for (int i = 1; i < argc; i++) {
        if (flag && !strcmp(argv[i], flag))
            *flag_given = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_leftover_error(tool, argv[i], 0, NULL);
        else if (*n == most)
            return cli_unexpected(tool, argv[i]);
        else
            ops[(*n)++] = argv[i];
    }
    return 0;
}

static int cmd_data(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage_data(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1])
            return cli_leftover_error("erase-inspect data", argv[i], 0, NULL);
    if (argc == 2 && erase_h5_rows_probe(argv[1], ERASE_VOCAB_FORMAT))
        return inspect_vocab_file("data", argv[1]);
    erase_ctr_list_t list;
    if (erase_ctr_list_resolve((const char *const *)argv + 1, argc - 1, &list) != ERASE_OK)
        return failed("data");
    if (erase_cls_shard_probe(list.paths[0]) || erase_tok_shard_probe(list.paths[0])) {
        int rc = erase_cls_shard_probe(list.paths[0]) ? data_cls(&list) : data_tok(&list);
        erase_ctr_list_free(&list);
        return rc;
    }
    uint8_t *label = malloc(READ_ROWS);
    float *dense = malloc(sizeof(float) * READ_ROWS * ERASE_CTR_SHARD_DENSE);
    uint32_t *lengths = malloc(sizeof(uint32_t) * READ_ROWS * ERASE_CTR_SHARD_FIELDS);
    int rc = 0, versions = 0; /* bit v - 1: a shard of format version v */
    if (!label || !dense || !lengths) {
        fprintf(stderr, "erase-inspect data: out of memory\n");
        rc = 1;
    }
    erase_ctr_stats_t all;
    erase_ctr_stats_init(&all);
    erase_ctr_distinct_t distinct = { { NULL } };
    if (rc == 0 && erase_ctr_distinct_init(&distinct) != ERASE_OK)
        rc = failed("data");
    printf("%-40s %10s %9s %9s %7s %-18s %s\n", "shard", "rows", "clicks", "base rate", "chunk", "filters",
           "converter; sources");
    for (int i = 0; rc == 0 && i < list.count; i++) {
        erase_ctr_shard_t *sh;
        if (erase_ctr_shard_open(list.paths[i], &sh) != ERASE_OK) {
            rc = failed("data");
            break;
        }
        if (list.rows[i] >= 0 && list.rows[i] != erase_ctr_shard_rows(sh)) {
            fprintf(stderr, "erase-inspect data: error: %s has %" PRId64 " rows, its index says %" PRId64 "\n",
                    list.paths[i], erase_ctr_shard_rows(sh), list.rows[i]);
            rc = 1;
        }
        erase_ctr_stats_t st;
        erase_ctr_stats_init(&st);
        versions |= 1 << (erase_ctr_shard_version(sh) - 1);
        if (rc == 0 && scan_shard(sh, &st, &distinct, label, dense, lengths) != ERASE_OK)
            rc = failed("data");
        if (rc == 0) {
            char converter[128], sources[512], prov[700];
            erase_ctr_shard_attr_text(sh, "converter", converter, sizeof converter);
            erase_ctr_shard_attr_text(sh, "source_files", sources, sizeof sources);
            provenance(prov, sizeof prov, converter, sources);
            printf("%-40s %10" PRId64 " %9" PRId64 " %9.6f %7" PRId64 " %-18s %s\n", list.paths[i], st.rows,
                   st.clicks, erase_ctr_stats_base_rate(&st), erase_ctr_shard_chunk_rows(sh),
                   filters_text(erase_ctr_shard_compressed(sh), erase_ctr_shard_checksummed(sh)), prov);
            erase_ctr_stats_merge(&all, &st);
        }
        erase_ctr_shard_close(sh);
    }
    if (rc == 0) {
        printf("\n%d shard%s, format %s\n", list.count, list.count == 1 ? "" : "s",
               versions == 3   ? ERASE_CTR_FORMAT " and " ERASE_CTR_FORMAT_MULTI
               : versions == 2 ? ERASE_CTR_FORMAT_MULTI
                               : ERASE_CTR_FORMAT);
        erase_vocab_tag_t tag;
        if (erase_vocab_tag_dataset((const char *const *)list.paths, list.count, &tag) == ERASE_OK)
            all.rare_row = tag.present; /* else inspect_vocab_dataset below reports it */
        else
            erase_error_clear();
        erase_ctr_stats_print_distinct(&all, &distinct, stdout, "");
        for (int i = 1; i < argc; i++)
            print_planted(argv[i]);
        rc = inspect_vocab_dataset(&list, &all);
    }
    erase_ctr_distinct_free(&distinct);
    free(label);
    free(dense);
    free(lengths);
    erase_ctr_list_free(&list);
    return rc;
}

/* ---- ckpt ------------------------------------------------------------------------ */

static void usage_ckpt(FILE *f)
{
    fprintf(f, "usage: erase-inspect ckpt FILE|DIR\n"
               "  FILE: a checkpoint written by erase-train (DIR/ckpt-<step>.h5); DIR: a\n"
               "  checkpoint directory, whose newest usable checkpoint by step is shown (the\n"
               "  one erase-train --resume DIR takes, whatever DIR/latest names; damaged ones\n"
               "  are named and skipped). Validates it (format, every dataset and the /meta\n"
               "  and /optim attributes with their FNV-1a 64 checksums, the attributes'\n"
               "  ranges, as erase-train does; the model file against the tensors of each\n"
               "  stage, as erase-train, erase-score and erase-sample load them) and prints\n"
               "  step, samples, epoch and data cursor, world/dp/pp sizes, schedule,\n"
               "  optimizer clock, the model file, the run options, the tables' placement\n"
               "  (--embeddings), and every tensor with its shape and L2 norm (a sharded\n"
               "  table's or its state's: also which ranks wrote its rows, e.g. \"table-wise\n"
               "  on rank 3 of 4\").\n");
}

static void print_indented(const char *text)
{
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("    %.*s\n", n, p);
        p = nl ? nl + 1 : NULL;
    }
}

/* Group g's tensors with shape and L2 norm (a sharded one's read row by
 * row, verified); -1 when a read failed (erase_error_reason says why). */
static int print_tensors(const erase_ckpt_t *ck, erase_ckpt_group_t g, const char *group)
{
    int n = erase_ckpt_count(ck, g), width = 0;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int w = (int)strlen(erase_ckpt_tensor(ck, g, i)->name);
        width = w > width ? w : width;
        total += erase_ckpt_tensor_numel(erase_ckpt_tensor(ck, g, i));
    }
    printf("/%s: %d tensors, %" PRId64 " floats (%.1f MB)\n", group, n, total, (double)total * 4 / 1e6);
    for (int i = 0; i < n; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_tensor(ck, g, i);
        char shape[64];
        if (t->ndim == 2)
            snprintf(shape, sizeof shape, "[%" PRId64 ", %" PRId64 "]", t->dims[0], t->dims[1]);
        else
            snprintf(shape, sizeof shape, "[%" PRId64 "]", t->dims[0]);
        double ss = 0;
        if (erase_ckpt_sum_squares(ck, g, i, &ss) != ERASE_OK)
            return -1;
        if (t->sharding) /* written by its owners: where its rows were */
            printf("  %-*s  %-14s L2 %.6g  %s\n", width, t->name, shape, sqrt(ss), t->sharding);
        else
            printf("  %-*s  %-14s L2 %.6g\n", width, t->name, shape, sqrt(ss));
    }
    return 0;
}

/* Blocks [*first, *last] of stage s in a pipeline layout ("2 stages: stage
 * 0 holds blocks 0-1, stage 1 holds blocks 2-2"); -1 when it names none. */
static int layout_stage_blocks(const char *layout, int s, int *first, int *last)
{
    int at, a, b;
    for (const char *p = layout; p && (p = strstr(p, "stage ")); p += 6)
        if (sscanf(p, "stage %d holds blocks %d-%d", &at, &a, &b) == 3 && at == s) {
            *first = a;
            *last = b;
            return 0;
        }
    return -1;
}

/* The stage s of a stage file's name ("D/ckpt-8.h5.stage2": 2), else 0. */
static int stage_of_name(const char *path)
{
    const char *dot = strrchr(path, '.');
    char *end;
    long s = dot && !strncmp(dot, ".stage", 6) ? strtol(dot + 6, &end, 10) : 0;
    return s > 0 && s < INT_MAX && *end == '\0' ? (int)s : 0;
}

/* The parameters of blocks [first, last] of `net` into want (names and
 * shapes: what a stage's loader asks of its file); their count. */
static int stage_params(erase_network_t *net, int first, int last, erase_ckpt_tensor_t *want)
{
    int n, k = 0;
    erase_param_t *p = erase_network_params(net, &n);
    for (int i = 0; i < n; i++) {
        if (p[i].block < first || p[i].block > last)
            continue;
        memset(&want[k], 0, sizeof want[k]);
        snprintf(want[k].name, sizeof want[k].name, "%s", p[i].name);
        want[k].ndim = p[i].ndim;
        want[k].dims[0] = p[i].rows;
        want[k].dims[1] = p[i].ndim == 2 ? p[i].cols : 1;
        k++;
    }
    return k;
}

/*
 * The loaders' own checks of a checkpoint that opened (erase-train
 * --resume/--init-from, erase-score, erase-sample): its model text parses
 * as embedded text and builds a network (CPU, batch 1) whose parameters of
 * each stage's blocks (pp_layout) are that stage's file's /params, names
 * and shapes (erase_ckpt_check_tensors: the loaders' message). A stage
 * file copied from another stage and model text that does not match the
 * tensors fail here as they fail there; a stage file opened alone
 * ("D/ckpt-8.h5.stage1") is checked as its stage's. Returns ERASE_OK or
 * the error.
 */
static erase_status_t check_as_loaders(erase_ckpt_t *ck)
{
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    const char *path = erase_ckpt_path(ck);
    if (!m->model)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: holds no model text", path);
    erase_model_config_t cfg;
    ERASE_CHECK(erase_model_config_parse_embedded(m->model, path, &cfg));
    erase_device_options_t dopt = erase_device_options_default();
    dopt.kind = ERASE_DEVICE_CPU;
    dopt.blas_threads = 1;
    erase_device_t *dev = NULL;
    erase_network_t *net = NULL;
    erase_ckpt_tensor_t *want = NULL;
    erase_status_t st = erase_device_open(&dopt, &dev);
    if (st == ERASE_OK)
        st = erase_network_create(dev, &cfg, 1, &net);
    int n = 0;
    if (st == ERASE_OK) {
        erase_network_params(net, &n);
        if (!(want = calloc((size_t)n + 1, sizeof *want)))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for %d tensors", path, n);
    }
    int alone = stage_of_name(path);
    for (int s = alone; st == ERASE_OK && s < (alone ? alone + 1 : m->pp_size); s++) {
        int first = 0, last = erase_model_config_blocks(&cfg) - 1;
        if (m->pp_size > 1 && layout_stage_blocks(m->pp_layout, s, &first, &last) != 0) {
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: attribute /meta pp_layout '%s' names no blocks of stage %d", path,
                             m->pp_layout, s);
            break;
        }
        erase_ckpt_t *part = ck;
        if (s > 0 && !alone && (st = erase_ckpt_open_stage(path, s, &part)) != ERASE_OK)
            break;
        st = erase_ckpt_check_tensors(part, ERASE_CKPT_PARAMS, want, stage_params(net, first, last, want), "the model");
        if (part != ck)
            erase_ckpt_close(part);
    }
    free(want);
    erase_network_destroy(net);
    erase_device_close(dev);
    return st;
}

/* A damaged checkpoint passed over in a checkpoint directory. */
static void skipped_checkpoint(void *ctx, const char *path, const char *why)
{
    (void)ctx;
    fprintf(stderr, "erase-inspect ckpt: checkpoint %s is damaged, skipping it: %s\n", path, why);
}

static int cmd_ckpt(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage_ckpt(stdout);
        return 0;
    }
    const char *path;
    int n;
    if (operands("ckpt", argc, argv, NULL, NULL, 1, &path, &n))
        return 2;
    if (n == 0)
        return cli_missing("erase-inspect ckpt", "a checkpoint file or directory", n, "erase-inspect ckpt FILE|DIR");
    erase_ckpt_t *ck;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (erase_ckpt_open_newest_flags(path, ERASE_CKPT_OPEN_LAZY_ROWS, skipped_checkpoint, NULL, &ck) != ERASE_OK)
            return failed("ckpt");
        if (!ck) {
            fprintf(stderr, "erase-inspect ckpt: error: %s: no checkpoint (ckpt-<step>.h5) in this directory\n",
                    path);
            return 1;
        }
        printf("%s: newest usable checkpoint %s (what erase-train --resume %s takes)\n", path,
               erase_ckpt_path(ck), path);
        path = erase_ckpt_path(ck);
    } else if (erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ROWS, &ck) != ERASE_OK) {
        return failed("ckpt"); /* sharded tables: read and verified row by row below, never whole */
    }
    if (check_as_loaders(ck) != ERASE_OK) {
        erase_ckpt_close(ck);
        return failed("ckpt");
    }
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    printf("checkpoint %s: format %s, written by %s at %s; %s\n", path, ERASE_CKPT_FORMAT, m->version, m->created,
           erase_ckpt_attributes_summed(ck) ? "every dataset and attribute verified (FNV-1a 64, ranges; a sharded "
                                              "table's rows as they are read below)"
                                            : "every dataset verified (FNV-1a 64; a sharded table's rows as they are "
                                              "read below); the attributes range-checked only (no checksum of "
                                              "them: an older erase's checkpoint)");
    printf("  step        %" PRId64 " (optimizer clock: step %" PRId64 ", lr %.9g)\n", m->step, m->clock_step,
           (double)m->clock_lr);
    printf("  samples     %" PRId64 " seen; epoch %" PRId64 ", data cursor at sample %" PRId64 " of the epoch; "
           "global batch %" PRId64 "\n", m->samples_seen, m->epoch, m->epoch_samples, m->global_batch);
    printf("  sizes       world %d = dp %d x pp %d (%s)\n", m->world_size, m->dp_size, m->pp_size, m->pp_layout);
    printf("  schedule    %s\n", m->schedule);
    printf("  optimizer   %s (dense), %s (embedding tables)\n", m->dense_optimizer, m->embedding_optimizer);
    printf("  seed        %" PRIu64 "\n", m->seed);
    if (m->embeddings)
        printf("  embeddings  %s: sharded tables, each row written once by the rank that held it (where: below)\n",
               m->embeddings);
    else
        printf("  embeddings  replicated\n");
    if (m->data_vocab && *m->data_vocab) /* ctr and dcn checkpoints of this erase or later */
        printf("  data vocab  %s\n", strcmp(m->data_vocab, ERASE_CKPT_DATA_VOCAB_NONE)
                                           ? m->data_vocab
                                           : "none (hashed ids: erase-convert criteo without --vocab)");
    if (m->tokenizer && *m->tokenizer) {
        char id[17];
        erase_tok_tokenizer_identity_of(m->tokenizer, id);
        printf("  tokenizer   %s (BPE, its file kept: erase-sample decodes with it)\n", id);
    }
    for (int r = 0; r < erase_ckpt_ranks(ck); r++) {
        const erase_ckpt_rank_t *s = erase_ckpt_rank(ck, r);
        printf("  rank %-6d rng {%" PRIu64 ", %" PRIu64 "}, cursor (epoch %" PRId64 ", sample %" PRId64 ")\n", r,
               s->rng[0], s->rng[1], s->epoch, s->samples);
    }
    printf("model file:\n");
    print_indented(m->model);
    printf("run options:\n");
    print_indented(m->options);
    int rc = print_tensors(ck, ERASE_CKPT_PARAMS, "params") || print_tensors(ck, ERASE_CKPT_OPTIM, "optim");
    erase_ckpt_close(ck);
    return rc ? failed("ckpt") : 0;
}

/* ---- merge ----------------------------------------------------------------------- */

static void usage_merge(FILE *f)
{
    fprintf(f, "usage: erase-inspect merge [--force] CKPT OUT\n"
               "  CKPT: a pipeline checkpoint of erase-train --pp P (DIR/ckpt-<step>.h5 and its\n"
               "  stage files DIR/ckpt-<step>.h5.stage<s>, s = 1..P-1). Validates every file as a\n"
               "  resume does, checks they are one checkpoint (step, layout, model file, optimizer\n"
               "  clock) and writes OUT: one checkpoint file with every stage's parameters and\n"
               "  optimizer state, the clock, the data cursor and pp 1: what erase-score, erase-sample\n"
               "  and erase-train's --eval-only, --init-from and --resume (without --pp) take. OUT is\n"
               "  written as .OUT.tmp, fsynced and renamed.\n"
               "  --force   replace an existing OUT (without it, an existing OUT is an error)\n");
}

static int cmd_merge(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage_merge(stdout);
        return 0;
    }
    const char *ops[2];
    int force = 0, n, bad = operands("merge", argc, argv, "--force", &force, 2, ops, &n);
    if (bad)
        return 2;
    if (n < 2)
        return cli_missing("erase-inspect merge", "a pipeline checkpoint and the output file", n,
                           "erase-inspect merge [--force] CKPT OUT");
    const char *path = ops[0], *out = ops[1];
    erase_ckpt_t *ck[256] = { NULL };
    if (erase_ckpt_open(path, &ck[0]) != ERASE_OK)
        return failed("merge");
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck[0]);
    int P = m->pp_size, rc = 0, np = 0, no = 0;
    if (P == 1) {
        fprintf(stderr, "erase-inspect merge: error: %s: not a pipeline checkpoint (pp 1): it is one "
                "data-parallel checkpoint already\n", path);
        erase_ckpt_close(ck[0]);
        return 1;
    }
    if (P > 256) {
        fprintf(stderr, "erase-inspect merge: error: %s: %d stages: at most 256\n", path, P);
        erase_ckpt_close(ck[0]);
        return 1;
    }
    for (int s = 1; rc == 0 && s < P; s++) {
        if (erase_ckpt_open_stage(path, s, &ck[s]) != ERASE_OK) {
            rc = failed("merge");
            break;
        }
        const erase_ckpt_meta_t *q = erase_ckpt_meta(ck[s]);
        if (!q->model || !m->model || strcmp(q->model, m->model)) {
            fprintf(stderr, "erase-inspect merge: error: %s: its model file differs from stage 0's (%s)\n",
                    erase_ckpt_path(ck[s]), erase_ckpt_path(ck[0]));
            rc = 1;
        } else if (q->clock_step != m->clock_step || q->clock_lr != m->clock_lr) {
            fprintf(stderr, "erase-inspect merge: error: %s: optimizer clock step %" PRId64 ", lr %.9g: expected "
                    "stage 0's step %" PRId64 ", lr %.9g (%s)\n", erase_ckpt_path(ck[s]), q->clock_step,
                    (double)q->clock_lr, m->clock_step, (double)m->clock_lr, erase_ckpt_path(ck[0]));
            rc = 1;
        }
    }
    for (int s = 0; rc == 0 && s < P; s++) {
        np += erase_ckpt_count(ck[s], ERASE_CKPT_PARAMS);
        no += erase_ckpt_count(ck[s], ERASE_CKPT_OPTIM);
    }
    erase_ckpt_tensor_t *params = rc ? NULL : malloc(sizeof *params * ((size_t)np + (size_t)no + 1));
    erase_ckpt_rank_t *ranks = rc ? NULL : malloc(sizeof *ranks * (size_t)m->dp_size);
    int first, last; /* where the blocks end: the last stage's last block */
    if (layout_stage_blocks(m->pp_layout, P - 1, &first, &last) != 0)
        last = -1;
    if (rc == 0 && (!params || !ranks)) {
        fprintf(stderr, "erase-inspect merge: error: out of memory\n");
        rc = 1;
    } else if (rc == 0 && (last < 0 || erase_ckpt_ranks(ck[0]) != m->world_size)) {
        fprintf(stderr, "erase-inspect merge: error: %s: layout '%s' and %d rank states: expected \"stage <s> "
                "holds blocks <a>-<b>\" and %d\n", path, m->pp_layout, erase_ckpt_ranks(ck[0]), m->world_size);
        rc = 1;
    }
    if (rc == 0) {
        erase_ckpt_tensor_t *optim = params + np;
        int ip = 0, io = 0;
        for (int s = 0; s < P; s++) {
            for (int i = 0; i < erase_ckpt_count(ck[s], ERASE_CKPT_PARAMS); i++)
                params[ip++] = *erase_ckpt_tensor(ck[s], ERASE_CKPT_PARAMS, i);
            for (int i = 0; i < erase_ckpt_count(ck[s], ERASE_CKPT_OPTIM); i++)
                optim[io++] = *erase_ckpt_tensor(ck[s], ERASE_CKPT_OPTIM, i);
        }
        for (int d = 0; d < m->dp_size; d++) /* world rank d x P + s is stage s's replica d */
            ranks[d] = *erase_ckpt_rank(ck[0], d * P);
        char layout[64], schedule[1024];
        snprintf(layout, sizeof layout, "1 stage: stage 0 holds blocks 0-%d", last);
        snprintf(schedule, sizeof schedule, "%s", m->schedule); /* less "; pipeline ..." */
        char *pipe = strstr(schedule, "; pipeline ");
        if (pipe)
            *pipe = '\0';
        erase_ckpt_meta_t one = *m;
        one.pp_size = 1;
        one.world_size = m->dp_size;
        one.pp_layout = layout;
        one.schedule = schedule;
        if (erase_ckpt_write_file(out, &one, params, np, optim, no, ranks, m->dp_size, force) != ERASE_OK)
            rc = failed("merge");
        else
            printf("merged %s and its %d stage file%s into %s: step %" PRId64 ", %d parameter and %d optimizer "
                   "tensors, blocks 0-%d, world %d = dp %d x pp 1\n", path, P - 1, P == 2 ? "" : "s", out, m->step,
                   np, no, last, m->dp_size, m->dp_size);
    }
    free(params);
    free(ranks);
    for (int s = 0; s < P; s++)
        erase_ckpt_close(ck[s]);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-inspect COMMAND [ARGS]   (COMMAND --help for more)\n\n"
               "  data     CTR shards (a directory from erase-convert or shard files): rows,\n"
               "           base rate, missing rate per feature, categorical id ranges;\n"
               "           classification shards: rows, features, the class histogram\n"
               "  vocab    a vocabulary of erase-convert vocab: threshold, digest, per feature the\n"
               "           ids counted, frequent ids, table rows and coverage\n"
               "  ckpt     a checkpoint of erase-train (or a checkpoint directory's newest): step,\n"
               "           samples, sizes, schedule, model file, every tensor with shape and L2\n"
               "           norm (validated first; a sharded table row by row as it is read, never whole)\n"
               "  merge    a pipeline checkpoint (--pp: a file per stage) into one checkpoint file\n"
               "           that evaluation, scoring, sampling and data-parallel runs take\n");
}

int main(int argc, char **argv)
{
    /* a line at a time: a table's lines come before an error met under them,
     * also when stdout and stderr go to one file or pipe */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        return cli_version("erase-inspect");
    }
    if (!strcmp(argv[1], "data"))
        return cmd_data(argc - 1, argv + 1);
    if (!strcmp(argv[1], "ckpt"))
        return cmd_ckpt(argc - 1, argv + 1);
    if (!strcmp(argv[1], "vocab"))
        return inspect_vocab_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "merge"))
        return cmd_merge(argc - 1, argv + 1);
    fprintf(stderr, "erase-inspect: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

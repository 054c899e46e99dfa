/*
 * Model files (lib/nn/model_config.h): the reference defaults, full ctr and
 * mlp files with comments, format -> parse round trips (defaults and
 * non-default values, including 64-bit seeds and table sizes; gpt's
 * tie_head written as what it resolves to), gpt's tie_head, and every
 * kind of error with its exact message "<name>:<line>: <what>" (plain
 * integers beyond 32 bits, which libconfig wraps, NUL bytes and @include of
 * a directory included). A failed parse leaves the caller's configuration
 * untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/nn/model_config.h"

#define MUST(call) assert_int_equal((call), ERASE_OK)

/* The message from "<name>:" on: erase_error_message() starts with the
 * source location of the library (and any breadcrumbs). */
static const char *message_from(const char *name)
{
    const char *m = erase_error_message();
    char key[256];
    snprintf(key, sizeof key, "%s:", name);
    const char *p = strstr(m, key);
    return p ? p : m;
}

static void assert_config_equal(const erase_model_config_t *a, const erase_model_config_t *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->seed, b->seed);
    assert_int_equal(a->cut_mask, b->cut_mask);
    assert_memory_equal(&a->local_loss_weight, &b->local_loss_weight, sizeof(float));
    if (a->kind == ERASE_MODEL_CTR) {
        assert_int_equal(a->ctr.embedding_dim, b->ctr.embedding_dim);
        assert_int_equal(a->ctr.pooling, b->ctr.pooling);
        assert_memory_equal(a->ctr.table_rows, b->ctr.table_rows, sizeof a->ctr.table_rows);
        assert_int_equal(a->ctr.bottom_layers, b->ctr.bottom_layers);
        assert_memory_equal(a->ctr.bottom_mlp, b->ctr.bottom_mlp,
                            (size_t)a->ctr.bottom_layers * sizeof(int));
        assert_int_equal(a->ctr.subarch_width, b->ctr.subarch_width);
        assert_int_equal(a->ctr.subarchs, b->ctr.subarchs);
        assert_memory_equal(a->ctr.hotness, b->ctr.hotness, sizeof a->ctr.hotness);
    } else if (a->kind == ERASE_MODEL_GPT) {
        assert_int_equal(a->gpt.layers, b->gpt.layers);
        assert_int_equal(a->gpt.heads, b->gpt.heads);
        assert_int_equal(a->gpt.width, b->gpt.width);
        assert_int_equal(a->gpt.context, b->gpt.context);
        assert_int_equal(a->gpt.vocab, b->gpt.vocab);
        /* AUTO formats as what it resolves to: the tie, not the field */
        int ta, tb;
        MUST(erase_model_config_tied_head(a, &ta));
        MUST(erase_model_config_tied_head(b, &tb));
        assert_int_equal(ta, tb);
    } else if (a->kind == ERASE_MODEL_NANOCHAT) {
        assert_memory_equal(&a->nanochat, &b->nanochat, sizeof a->nanochat);
    } else if (a->kind == ERASE_MODEL_DCN) {
        assert_int_equal(a->ctr.embedding_dim, b->ctr.embedding_dim);
        assert_memory_equal(a->ctr.table_rows, b->ctr.table_rows, sizeof a->ctr.table_rows);
        assert_int_equal(a->ctr.bottom_layers, b->ctr.bottom_layers);
        assert_memory_equal(a->ctr.bottom_mlp, b->ctr.bottom_mlp, (size_t)a->ctr.bottom_layers * sizeof(int));
        assert_int_equal(a->dcn.cross_layers, b->dcn.cross_layers);
        assert_int_equal(a->dcn.cross_rank, b->dcn.cross_rank);
        assert_int_equal(a->dcn.top_layers, b->dcn.top_layers);
        assert_memory_equal(a->dcn.top_mlp, b->dcn.top_mlp, (size_t)a->dcn.top_layers * sizeof(int));
        assert_memory_equal(a->ctr.hotness, b->ctr.hotness, sizeof a->ctr.hotness);
    } else {
        assert_int_equal(a->mlp.inputs, b->mlp.inputs);
        assert_int_equal(a->mlp.hidden_layers, b->mlp.hidden_layers);
        assert_memory_equal(a->mlp.hidden, b->mlp.hidden, (size_t)a->mlp.hidden_layers * sizeof(int));
        assert_int_equal(a->mlp.classes, b->mlp.classes);
    }
}

/* Parse `text` as "bad.cfg": it must fail with ERASE_ERR_FORMAT, the message
 * must read `want` from "bad.cfg:" on, and `cfg` must stay as it was. */
static void expect_error(const char *text, const char *want)
{
    erase_model_config_t cfg = erase_model_config_default(ERASE_MODEL_MLP), before = cfg;
    erase_error_clear();
    erase_status_t s = erase_model_config_parse(text, "bad.cfg", &cfg);
    print_message("  %-44s -> %s\n", want, erase_error_message());
    assert_int_equal(s, ERASE_ERR_FORMAT);
    assert_string_equal(message_from("bad.cfg"), want);
    assert_memory_equal(&cfg, &before, sizeof cfg);
}

/* `model = "ctr"; ctr: { <body> };` on lines 1..3 (the body is line 3). */
static void expect_ctr_error(const char *body, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "model = \"ctr\";\nctr: {\n%s\n};\n", body);
    expect_error(text, want);
}

static void expect_mlp_error(const char *body, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "model = \"mlp\";\nmlp: {\n%s\n};\n", body);
    expect_error(text, want);
}

static void test_defaults(void **state)
{
    print_message("ctr defaults: D=16, 26 x 10007 rows, bottom 64-16, 6 x 256, all 6 cuts, lambda 1, seed 1\n");
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    assert_int_equal(c.kind, ERASE_MODEL_CTR);
    assert_int_equal(c.ctr.embedding_dim, 16);
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        assert_int_equal(c.ctr.table_rows[f], 10007);
    assert_int_equal(c.ctr.bottom_layers, 2);
    assert_int_equal(c.ctr.bottom_mlp[0], 64);
    assert_int_equal(c.ctr.bottom_mlp[1], 16);
    assert_int_equal(c.ctr.subarch_width, 256);
    assert_int_equal(c.ctr.subarchs, 6);
    assert_int_equal(erase_model_config_blocks(&c), 7);
    assert_int_equal(c.cut_mask, 0x7e); /* boundaries 1..6 */
    assert_true(c.local_loss_weight == 1.0f);
    assert_int_equal(c.seed, 1);
    assert_int_equal(c.seed_given, 0);

    print_message("mlp defaults: 784-1024-1024-1024, 10 classes, both cuts, lambda 1, seed 1\n");
    erase_model_config_t m = erase_model_config_default(ERASE_MODEL_MLP);
    assert_int_equal(m.kind, ERASE_MODEL_MLP);
    assert_int_equal(m.mlp.inputs, 784);
    assert_int_equal(m.mlp.hidden_layers, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(m.mlp.hidden[i], 1024);
    assert_int_equal(m.mlp.classes, 10);
    assert_int_equal(erase_model_config_blocks(&m), 3);
    assert_int_equal(m.cut_mask, 0x6); /* boundaries 1, 2 */
    assert_true(m.local_loss_weight == 1.0f);
    assert_int_equal(m.seed, 1);

    print_message("a file with only the model key gives the defaults\n");
    erase_model_config_t p;
    MUST(erase_model_config_parse("model = \"ctr\";", "min.cfg", &p));
    assert_config_equal(&p, &c);
    MUST(erase_model_config_parse("model = \"mlp\"; mlp: {};", "min.cfg", &p));
    assert_config_equal(&p, &m);

    print_message("gpt defaults: nanoGPT's shakespeare-char size (6 layers, 6 heads, width 384, "
                  "context 256, vocab 256), no cuts, lambda 1, seed 1, task lm\n");
    erase_model_config_t g = erase_model_config_default(ERASE_MODEL_GPT);
    assert_int_equal(g.kind, ERASE_MODEL_GPT);
    assert_int_equal(g.gpt.layers, 6);
    assert_int_equal(g.gpt.heads, 6);
    assert_int_equal(g.gpt.width, 384);
    assert_int_equal(g.gpt.context, 256);
    assert_int_equal(g.gpt.vocab, 256);
    assert_int_equal(erase_model_config_blocks(&g), 6);
    assert_int_equal(g.cut_mask, 0);
    assert_true(g.local_loss_weight == 1.0f);
    assert_int_equal(g.seed, 1);
    assert_string_equal(erase_model_config_name(&g), "gpt");
    assert_string_equal(erase_model_config_task(&g), "lm");
    MUST(erase_model_config_parse("model = \"gpt\";", "min.cfg", &p));
    assert_config_equal(&p, &g);

    print_message("model kinds by name (erase-train --model ctr|mlp|gpt)\n");
    erase_model_kind_t kind = ERASE_MODEL_CTR;
    assert_int_equal(erase_model_config_kind("gpt", &kind), 1);
    assert_int_equal(kind, ERASE_MODEL_GPT);
    assert_int_equal(erase_model_config_kind("mlp", &kind), 1);
    assert_int_equal(kind, ERASE_MODEL_MLP);
    assert_int_equal(erase_model_config_kind("ctr", &kind), 1);
    assert_int_equal(kind, ERASE_MODEL_CTR);
    assert_int_equal(erase_model_config_kind("gpt2", &kind), 0);
    assert_int_equal(erase_model_config_kind(NULL, &kind), 0);
}

static void expect_gpt_error(const char *body, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "model = \"gpt\";\ngpt: {\n%s\n};\n", body);
    expect_error(text, want);
}

static void test_parse_gpt(void **state)
{
    print_message("full gpt file: the ERASE NanoChat setting (cuts at 2 and 4 of 6 layers)\n");
    erase_model_config_t c;
    MUST(erase_model_config_parse("model = \"gpt\";\nseed = 7;\ngpt: {\n  layers = 6; heads = 4;\n"
                                  "  width = 64; context = 32; vocab = 50257;\n  cuts = [2, 4];\n"
                                  "  local_loss_weight = 0.5;\n};\n", "gpt.cfg", &c));
    assert_int_equal(c.kind, ERASE_MODEL_GPT);
    assert_int_equal(c.seed, 7);
    assert_int_equal(c.seed_given, 1);
    assert_int_equal(c.gpt.layers, 6);
    assert_int_equal(c.gpt.heads, 4);
    assert_int_equal(c.gpt.width, 64);
    assert_int_equal(c.gpt.context, 32);
    assert_int_equal(c.gpt.vocab, 50257);
    assert_int_equal(c.cut_mask, (1u << 2) | (1u << 4));
    assert_true(c.local_loss_weight == 0.5f);
    MUST(erase_model_config_parse("model = \"gpt\"; gpt: { layers = 3; cuts = \"all\"; };", "gpt.cfg", &c));
    assert_int_equal(c.cut_mask, 0x6);

    print_message("gpt errors: width not a multiple of heads, sizes, cuts, the other groups\n");
    expect_gpt_error("  heads = 5;", "bad.cfg:3: gpt.width: 384 is not a multiple of heads (5)");
    expect_gpt_error("  width = 100;\n  heads = 6;", "bad.cfg:3: gpt.width: 100 is not a multiple of heads (6)");
    expect_gpt_error("  layers = 33;", "bad.cfg:3: gpt.layers: expected an integer in 1..32, got 33");
    expect_gpt_error("  heads = 0;", "bad.cfg:3: gpt.heads: expected an integer >= 1, got 0");
    expect_gpt_error("  context = 2.5;", "bad.cfg:3: gpt.context: expected an integer >= 1, got 2.5");
    expect_gpt_error("  vocab = 65537;", "bad.cfg:3: gpt.vocab: expected an integer in 2..65536, got 65537");
    expect_gpt_error("  layers = 3;\n  cuts = [3];", "bad.cfg:4: gpt.cuts: boundary 3 outside 1..2");
    expect_gpt_error("  hidden = [3];", "bad.cfg:3: unknown key 'gpt.hidden'");
    expect_error("model = \"gpt\";\nmlp: {};\n", "bad.cfg:2: group 'mlp' does not apply to model \"gpt\"");
    expect_error("model = \"ctr\";\ngpt: {};\n", "bad.cfg:2: group 'gpt' does not apply to model \"ctr\"");

    print_message("tie_head: absent ties exactly without cuts; false unties; true only without cuts\n");
    static const struct {
        const char *body;
        erase_tie_head_t field;
        uint32_t cuts;
        int tied;
    } ties[] = {
        { "layers = 3;", ERASE_TIE_HEAD_AUTO, 0, 1 },
        { "layers = 3; cuts = [2];", ERASE_TIE_HEAD_AUTO, 1u << 2, 0 },
        { "layers = 3; tie_head = false;", ERASE_TIE_HEAD_FALSE, 0, 0 },
        { "layers = 3; tie_head = true;", ERASE_TIE_HEAD_TRUE, 0, 1 },
        { "tie_head = false; layers = 3; cuts = \"all\";", ERASE_TIE_HEAD_FALSE, 0x6, 0 },
        { "tie_head = true; cuts = \"none\";", ERASE_TIE_HEAD_TRUE, 0, 1 },
    };
    for (size_t i = 0; i < sizeof ties / sizeof ties[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "model = \"gpt\"; gpt: { %s };", ties[i].body);
        MUST(erase_model_config_parse(text, "gpt.cfg", &c));
        assert_int_equal(c.gpt.tie_head, ties[i].field);
        assert_int_equal(c.cut_mask, ties[i].cuts);
        int tied = -1;
        MUST(erase_model_config_tied_head(&c, &tied));
        assert_int_equal(tied, ties[i].tied);
    }
    expect_gpt_error("  tie_head = 1;", "bad.cfg:3: gpt.tie_head: expected true or false, got 1");
    expect_gpt_error("  tie_head = \"false\";", "bad.cfg:3: gpt.tie_head: expected true or false, got \"false\"");
    /* the key's line, whichever order cuts and tie_head come in */
    expect_gpt_error("  tie_head = true;\n  cuts = [2, 4];",
                     "bad.cfg:3: gpt.tie_head: true with cuts at boundaries 2, 4: the tie would carry the last "
                     "block's gradient across the cuts into h0/wte (set tie_head = false, or remove the cuts)");
    expect_gpt_error("  layers = 2;\n  cuts = \"all\";\n  tie_head = true;",
                     "bad.cfg:5: gpt.tie_head: true with cuts at boundaries 1: the tie would carry the last "
                     "block's gradient across the cuts into h0/wte (set tie_head = false, or remove the cuts)");

    print_message("tie_head = true set in code with cuts: ERASE_ERR_INVALID, not formattable\n");
    c = erase_model_config_default(ERASE_MODEL_GPT);
    c.gpt.tie_head = ERASE_TIE_HEAD_TRUE;
    c.cut_mask = 1u << 3;
    int tied = -1;
    erase_error_clear();
    assert_int_equal(erase_model_config_tied_head(&c, &tied), ERASE_ERR_INVALID);
    assert_int_equal(tied, 0);
    assert_non_null(strstr(erase_error_message(), "gpt.tie_head: true with cuts at boundaries 3: the tie would "
                                                  "carry the last block's gradient across the cuts into h0/wte "
                                                  "(set tie_head = false, or remove the cuts)"));
    char text[1024];
    assert_int_equal(erase_model_config_format(&c, text, sizeof text), -1);
    c = erase_model_config_default(ERASE_MODEL_CTR);
    MUST(erase_model_config_tied_head(&c, &tied));
    assert_int_equal(tied, 0);

    print_message("the shipped gpt model files: shakespeare-char (no cuts), NanoChat (cuts at 2 and 4)\n");
    erase_model_config_t want = erase_model_config_default(ERASE_MODEL_GPT);
    MUST(erase_model_config_load(ERASE_SRCDIR "/jobs/gpt-shakespeare.cfg", &c));
    assert_config_equal(&c, &want);
    want.cut_mask = (1u << 2) | (1u << 4);
    MUST(erase_model_config_load(ERASE_SRCDIR "/jobs/gpt-nanochat.cfg", &c));
    assert_config_equal(&c, &want);
}

static void test_parse_ctr(void **state)
{
    print_message("full ctr file with # and // comments, per-table sizes, a cut list\n");
    char rows[512] = "";
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        snprintf(rows + strlen(rows), sizeof rows - strlen(rows), "%s%d", f ? ", " : "", 100 + f);
    char text[2048];
    snprintf(text, sizeof text,
             "# a small CTR model\n"
             "model = \"ctr\";   // the reference CTR layout\n"
             "seed = 42;\n"
             "ctr: {\n"
             "  embedding_dim = 8;          # D\n"
             "  table_rows = [%s];\n"
             "  bottom_mlp = [32, 16, 8];   // 13-32-16-8\n"
             "  subarch_width = 64;\n"
             "  subarchs = 3;\n"
             "  cuts = [1, 3];\n"
             "  local_loss_weight = 0.25;\n"
             "};\n", rows);
    erase_model_config_t c;
    MUST(erase_model_config_parse(text, "ctr.cfg", &c));
    assert_int_equal(c.kind, ERASE_MODEL_CTR);
    assert_int_equal(c.seed, 42);
    assert_int_equal(c.ctr.embedding_dim, 8);
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        assert_int_equal(c.ctr.table_rows[f], 100 + f);
    assert_int_equal(c.ctr.bottom_layers, 3);
    assert_int_equal(c.ctr.bottom_mlp[0], 32);
    assert_int_equal(c.ctr.bottom_mlp[1], 16);
    assert_int_equal(c.ctr.bottom_mlp[2], 8);
    assert_int_equal(c.ctr.subarch_width, 64);
    assert_int_equal(c.ctr.subarchs, 3);
    assert_int_equal(erase_model_config_blocks(&c), 4);
    assert_int_equal(c.cut_mask, (1u << 1) | (1u << 3));
    assert_true(c.local_loss_weight == 0.25f);

    print_message("one table size for all 26; cuts \"none\"; an integer weight; omitted bottom_mlp is 64-D\n");
    MUST(erase_model_config_parse("model = \"ctr\";\n"
                                  "ctr: { embedding_dim = 32; table_rows = 3000000000L;\n"
                                  "       cuts = \"none\"; local_loss_weight = 2; subarchs = 31; };\n",
                                  "ctr.cfg", &c));
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        assert_int_equal(c.ctr.table_rows[f], 3000000000u);
    assert_int_equal(c.cut_mask, 0);
    assert_true(c.local_loss_weight == 2.0f);
    assert_int_equal(c.ctr.bottom_layers, 2);
    assert_int_equal(c.ctr.bottom_mlp[0], 64);
    assert_int_equal(c.ctr.bottom_mlp[1], 32);
    assert_int_equal(erase_model_config_blocks(&c), 32);

    print_message("cuts = \"all\" with 31 sub-architectures: boundaries 1..31\n");
    MUST(erase_model_config_parse("model = \"ctr\"; ctr: { subarchs = 31; cuts = \"all\"; };", "ctr.cfg", &c));
    assert_int_equal(c.cut_mask, 0xfffffffeu);
}

/* ctr.hotness (issue 35): default all 1, "mlperf" = MLPerf DLRM-DCNv2's
 * sizes, a list of 26; written back only when not all 1; bad values named. */
static void test_parse_hotness(void **state)
{
    (void)state;
    static const uint32_t mlperf[ERASE_CTR_FIELDS] = { 3, 2, 1, 2, 6, 1, 1, 1, 1, 7,   3,  8,  1,
                                                       6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1 };
    erase_model_config_t d = erase_model_config_default(ERASE_MODEL_CTR), cfg = d, back = d;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        assert_int_equal(d.ctr.hotness[f], 1);
    char text[4096];
    assert_true(erase_model_config_format(&d, text, sizeof text) > 0);
    assert_null(strstr(text, "hotness"));
    MUST(erase_model_config_parse("model = \"ctr\";\nctr: { hotness = \"mlperf\"; };\n", "m.cfg", &cfg));
    assert_memory_equal(cfg.ctr.hotness, mlperf, sizeof mlperf);
    assert_true(erase_model_config_format(&cfg, text, sizeof text) > 0);
    assert_non_null(strstr(text, "  hotness = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, "
                                 "10, 3, 1, 1];\n"));
    MUST(erase_model_config_parse(text, "formatted.cfg", &back));
    assert_config_equal(&cfg, &back);
    expect_error("model = \"ctr\";\nctr: { hotness = [1, 2]; };\n",
                 "bad.cfg:2: ctr.hotness: expected 26 capacities, got 2");
    expect_error("model = \"ctr\";\nctr: { hotness = \"dcn\"; };\n",
                 "bad.cfg:2: ctr.hotness: expected \"mlperf\" or a list of 26 integers >= 1, got \"dcn\"");
    expect_error("model = \"ctr\";\nctr: { hotness = [1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
                 "1, 1, 1, 1, 1, 1]; };\n",
                 "bad.cfg:2: ctr.hotness[4]: expected an integer in 1..65536, got 0");
}

static void test_parse_mlp(void **state)
{
    print_message("full mlp file with comments, keys in any order, a (libconfig list) of widths\n");
    const char *text =
        "// the feasibility experiment, smaller\n"
        "mlp: {\n"
        "  cuts = [2];            # only between layer1 and layer2\n"
        "  hidden = (512, 256, 128);\n"
        "  inputs = 100;\n"
        "  classes = 2;\n"
        "  local_loss_weight = 0.5;\n"
        "};\n"
        "seed = 3000000000L;      # beyond 32 bits\n"
        "model = \"mlp\";\n";
    erase_model_config_t c;
    MUST(erase_model_config_parse(text, "mlp.cfg", &c));
    assert_int_equal(c.kind, ERASE_MODEL_MLP);
    assert_int_equal(c.seed, 3000000000u);
    assert_int_equal(c.mlp.inputs, 100);
    assert_int_equal(c.mlp.hidden_layers, 3);
    assert_int_equal(c.mlp.hidden[0], 512);
    assert_int_equal(c.mlp.hidden[1], 256);
    assert_int_equal(c.mlp.hidden[2], 128);
    assert_int_equal(c.mlp.classes, 2);
    assert_int_equal(erase_model_config_blocks(&c), 3);
    assert_int_equal(c.cut_mask, 1u << 2);
    assert_true(c.local_loss_weight == 0.5f);

    print_message("one hidden layer: one block, no boundaries, \"all\" is no cut\n");
    MUST(erase_model_config_parse("model = \"mlp\"; mlp: { hidden = [10]; cuts = \"all\"; };", "mlp.cfg", &c));
    assert_int_equal(erase_model_config_blocks(&c), 1);
    assert_int_equal(c.cut_mask, 0);
}

/* format -> parse gives back `cfg`; returns the text length. */
static int round_trip(const erase_model_config_t *cfg, const char *what)
{
    char text[4096];
    int n = erase_model_config_format(cfg, text, sizeof text);
    assert_true(n > 0);
    assert_int_equal(n, (int)strlen(text));
    erase_model_config_t back;
    erase_status_t s = erase_model_config_parse(text, "formatted", &back);
    if (s != ERASE_OK)
        print_message("%s\n%s\n", text, erase_error_message());
    assert_int_equal(s, ERASE_OK);
    assert_config_equal(&back, cfg);
    print_message("round trip %-40s: %d characters\n", what, n);
    return n;
}

static void expect_nanochat_error(const char *body, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "model = \"nanochat\";\nnanochat: {\n%s\n};\n", body);
    expect_error(text, want);
}

/* `nanochat: { layers = L; }` alone: nanochat's depth-derived sizes. */
static erase_model_config_t nanochat_of_depth(int layers)
{
    char text[128];
    snprintf(text, sizeof text, "model = \"nanochat\"; nanochat: { layers = %d; };", layers);
    erase_model_config_t c;
    MUST(erase_model_config_parse(text, "depth.cfg", &c));
    return c;
}

static void test_parse_nanochat(void **state)
{
    print_message("nanochat defaults from depth (issue 34): width 64 x depth, heads ceil(width/128), kv = heads\n");
    erase_model_config_t d = erase_model_config_default(ERASE_MODEL_NANOCHAT);
    assert_int_equal(d.nanochat.layers, 4);
    assert_int_equal(d.nanochat.width, 256);
    assert_int_equal(d.nanochat.heads, 2);
    assert_int_equal(d.nanochat.kv_heads, 2);
    assert_int_equal(d.nanochat.context, 256);
    assert_int_equal(d.nanochat.vocab, 256);
    assert_true(d.nanochat.softcap == 15.0f);
    assert_int_equal(d.cut_mask, 0);
    assert_string_equal(erase_model_config_task(&d), "lm");
    const int depth[] = { 1, 3, 4, 12, 20 }, width[] = { 64, 192, 256, 768, 1280 }, heads[] = { 1, 2, 2, 6, 10 };
    for (int i = 0; i < 5; i++) {
        erase_model_config_t c = nanochat_of_depth(depth[i]);
        assert_int_equal(c.nanochat.width, width[i]);
        assert_int_equal(c.nanochat.heads, heads[i]);
        assert_int_equal(c.nanochat.kv_heads, heads[i]);
        assert_int_equal(erase_model_config_blocks(&c), depth[i]);
    }
    erase_model_config_t c;
    MUST(erase_model_config_parse("model = \"nanochat\";\nnanochat: {\n  layers = 6; width = 96; kv_heads = 1;\n"
                                  "  context = 16; vocab = 300; softcap = 10; cuts = [2, 4];\n"
                                  "  local_loss_weight = 0.5;\n};\n", "nanochat.cfg", &c));
    assert_int_equal(c.kind, ERASE_MODEL_NANOCHAT);
    assert_int_equal(c.nanochat.layers, 6);
    assert_int_equal(c.nanochat.width, 96);
    assert_int_equal(c.nanochat.heads, 1); /* ceil(96 / 128) */
    assert_int_equal(c.nanochat.kv_heads, 1);
    assert_int_equal(c.nanochat.context, 16);
    assert_int_equal(c.nanochat.vocab, 300);
    assert_true(c.nanochat.softcap == 10.0f);
    assert_int_equal(c.cut_mask, (1u << 2) | (1u << 4));
    assert_true(c.local_loss_weight == 0.5f);
    round_trip(&c, "nanochat, cuts, 1 kv head");
    round_trip(&d, "nanochat defaults");

    print_message("nanochat errors (issue 34 item 9): file:line: key and what was expected\n");
    expect_nanochat_error("  width = 100;\n  heads = 3;", "bad.cfg:4: nanochat.heads: 3 does not divide width 100");
    expect_nanochat_error("  width = 96;\n  heads = 32;",
                          "bad.cfg:4: nanochat.heads: head dim width/heads = 96/32 = 3 is odd (rotary needs pairs)");
    expect_nanochat_error("  width = 130;",
                          "bad.cfg:3: nanochat.heads: head dim width/heads = 130/2 = 65 is odd (rotary needs pairs)");
    expect_nanochat_error("  kv_heads = 3;", "bad.cfg:3: nanochat.kv_heads: 3 does not divide heads 2");
    expect_nanochat_error("  softcap = 0;", "bad.cfg:3: nanochat.softcap: expected a number > 0, got 0");
    expect_nanochat_error("  softcap = -1.5;", "bad.cfg:3: nanochat.softcap: expected a number > 0, got -1.5");
    expect_nanochat_error("  layers = 3;\n  cuts = [3];", "bad.cfg:4: nanochat.cuts: boundary 3 outside 1..2");
    expect_nanochat_error("  tie_head = true;", "bad.cfg:3: unknown key 'nanochat.tie_head'");
}

static void expect_dcn_error(const char *body, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "model = \"dcn\";\ndcn: {\n%s\n};\n", body);
    expect_error(text, want);
}

/* dcn (issue 36): MLPerf DLRM-DCNv2's sizes by default, ctr's embedding
 * keys, blocks 1 + cross_layers + over-arch hidden layers. */
static void test_parse_dcn(void **state)
{
    static const int bottom[] = { 512, 256, 128 }, top[] = { 1024, 1024, 512, 256, 1 };
    erase_model_config_t d = erase_model_config_default(ERASE_MODEL_DCN);
    assert_int_equal(d.ctr.embedding_dim, 128);
    assert_int_equal(d.ctr.bottom_layers, 3);
    assert_memory_equal(d.ctr.bottom_mlp, bottom, sizeof bottom);
    assert_int_equal(d.ctr.table_rows[25], 10007);
    assert_int_equal(d.dcn.cross_layers, 3);
    assert_int_equal(d.dcn.cross_rank, 512);
    assert_int_equal(d.dcn.top_layers, 5);
    assert_memory_equal(d.dcn.top_mlp, top, sizeof top);
    assert_int_equal(d.cut_mask, 0);
    assert_int_equal(erase_model_config_blocks(&d), 8);
    assert_string_equal(erase_model_config_task(&d), "ctr");
    assert_true(erase_model_config_has_tables(&d));
    erase_model_config_t c;
    MUST(erase_model_config_parse("model = \"dcn\";\ndcn: {\n  embedding_dim = 8; table_rows = 100;\n"
                                  "  cross_layers = 2; cross_rank = 0; top_mlp = [64, 32, 1];\n"
                                  "  cuts = \"all\"; local_loss_weight = 0.25;\n};\n", "dcn.cfg", &c));
    assert_int_equal(c.kind, ERASE_MODEL_DCN);
    assert_int_equal(c.ctr.bottom_layers, 3); /* omitted: 512-256-D */
    assert_int_equal(c.ctr.bottom_mlp[2], 8);
    assert_int_equal(c.dcn.cross_rank, 0);
    assert_int_equal(erase_model_config_blocks(&c), 1 + 2 + 2);
    assert_int_equal(c.cut_mask, 0x1e);
    round_trip(&c, "dcn, full rank, all cuts");
    /* the embedding keys are ctr's, multi-hot capacities included */
    MUST(erase_model_config_parse("model = \"dcn\";\ndcn: { hotness = \"mlperf\"; };\n", "dcn.cfg", &c));
    assert_int_equal(c.ctr.hotness[20], 100);
    assert_int_equal(erase_model_config_hot_width(&c), 214);
    assert_int_equal(erase_model_config_hot_width(&d), 26);
    round_trip(&c, "dcn, MLPerf hotness");
    round_trip(&d, "dcn defaults");
    print_message("dcn errors: file:line: key and what was expected\n");
    expect_dcn_error("  top_mlp = [64, 2];", "bad.cfg:3: dcn.top_mlp: the last width (2) must be 1 (the logit)");
    expect_dcn_error("  top_mlp = [1];", "bad.cfg:3: dcn.top_mlp: expected 2..16 widths, got 1");
    expect_dcn_error("  cross_layers = 0;", "bad.cfg:3: dcn.cross_layers: expected an integer in 1..16, got 0");
    expect_dcn_error("  cross_rank = -1;", "bad.cfg:3: dcn.cross_rank: expected an integer >= 0, got -1");
    expect_dcn_error("  embedding_dim = 8;\n  bottom_mlp = [16];",
                     "bad.cfg:4: dcn.bottom_mlp: the last width (16) must equal embedding_dim (8)");
    expect_dcn_error("  table_rows = [3];", "bad.cfg:3: dcn.table_rows: expected 26 table sizes, got 1");
    expect_dcn_error("  cuts = [8];", "bad.cfg:3: dcn.cuts: boundary 8 outside 1..7");
    expect_dcn_error("  subarchs = 2;", "bad.cfg:3: unknown key 'dcn.subarchs'");
    expect_dcn_error("  hotness = [1];", "bad.cfg:3: dcn.hotness: expected 26 capacities, got 1");
}

static void test_round_trip(void **state)
{
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    round_trip(&c, "ctr defaults");
    char text[4096];
    int n = erase_model_config_format(&c, text, sizeof text);
    print_message("ctr defaults format as:\n%s", text);
    assert_string_equal(text,
                        "model = \"ctr\";\n"
                        "seed = 1;\n"
                        "ctr: {\n"
                        "  embedding_dim = 16;\n"
                        "  table_rows = 10007;\n"
                        "  bottom_mlp = [64, 16];\n"
                        "  subarch_width = 256;\n"
                        "  subarchs = 6;\n"
                        "  cuts = \"all\";\n"
                        "  local_loss_weight = 1.0;\n"
                        "};\n");
    assert_int_equal(n, (int)strlen(text));

    c.seed = (uint64_t)INT64_MAX;
    c.ctr.embedding_dim = 5;
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        c.ctr.table_rows[f] = f == 7 ? 4294967295u : 2u + 1000u * (uint32_t)f;
    c.ctr.bottom_layers = ERASE_MAX_LAYERS;
    for (int i = 0; i < ERASE_MAX_LAYERS; i++)
        c.ctr.bottom_mlp[i] = i == ERASE_MAX_LAYERS - 1 ? 5 : 100 + i;
    c.ctr.subarch_width = 1;
    c.ctr.subarchs = 31;
    c.cut_mask = (1u << 1) | (1u << 17) | (1u << 31);
    c.local_loss_weight = 0.1f;
    round_trip(&c, "ctr, non-default everything");
    c.cut_mask = 0;
    c.local_loss_weight = 1e-7f;
    round_trip(&c, "ctr, no cuts, tiny weight");
    c.local_loss_weight = 0.0f;
    c.cut_mask = 0xfffffffeu;
    round_trip(&c, "ctr, all 31 cuts, weight 0");

    erase_model_config_t m = erase_model_config_default(ERASE_MODEL_MLP);
    round_trip(&m, "mlp defaults");
    m.seed = 0;
    m.mlp.inputs = 3;
    m.mlp.hidden_layers = 5;
    for (int i = 0; i < 5; i++)
        m.mlp.hidden[i] = 7 * (i + 1);
    m.mlp.classes = 2;
    m.cut_mask = 1u << 3;
    m.local_loss_weight = 3.14159274f;
    round_trip(&m, "mlp, non-default everything");
    m.mlp.hidden_layers = 1;
    m.cut_mask = 0;
    m.local_loss_weight = 123456792.0f;
    round_trip(&m, "mlp, one block, large weight");

    erase_model_config_t g = erase_model_config_default(ERASE_MODEL_GPT);
    round_trip(&g, "gpt defaults");
    erase_model_config_format(&g, text, sizeof text);
    assert_string_equal(text,
                        "model = \"gpt\";\n"
                        "seed = 1;\n"
                        "gpt: {\n"
                        "  layers = 6;\n"
                        "  heads = 6;\n"
                        "  width = 384;\n"
                        "  context = 256;\n"
                        "  vocab = 256;\n"
                        "  cuts = \"none\";\n"
                        "  local_loss_weight = 1.0;\n"
                        "  tie_head = true;\n"
                        "};\n");
    g.gpt.layers = 3;
    g.gpt.heads = 4;
    g.gpt.width = 32;
    g.gpt.context = 8;
    g.gpt.vocab = 50;
    g.cut_mask = 0x6;
    g.local_loss_weight = 0.25f;
    round_trip(&g, "gpt, two cuts (all)");
    assert_non_null(strstr(text, "  tie_head = true;\n"));
    erase_model_config_format(&g, text, sizeof text);
    assert_non_null(strstr(text, "  tie_head = false;\n"));
    g.cut_mask = 0;
    g.gpt.tie_head = ERASE_TIE_HEAD_FALSE;
    round_trip(&g, "gpt, no cuts, untied head");
    erase_model_config_format(&g, text, sizeof text);
    assert_non_null(strstr(text, "  cuts = \"none\";\n  local_loss_weight = 0.25;\n  tie_head = false;\n"));

    /* issue 32: every layer count the parser takes is written too (17-32
     * layers stopped a run at its first checkpoint: the writer's bound was
     * 16), with all cuts and none */
    for (int layers = 1; layers <= ERASE_MAX_GPT_LAYERS; layers++) {
        char body[128];
        snprintf(body, sizeof body, "model = \"gpt\"; gpt: { layers = %d; heads = 2; width = 8; };", layers);
        erase_model_config_t p;
        MUST(erase_model_config_parse(body, "gpt.cfg", &p));
        round_trip(&p, "gpt, every layer count");
        p.cut_mask = (uint32_t)((((uint64_t)1 << layers) - 1) & ~(uint64_t)1); /* boundaries 1..layers-1 */
        round_trip(&p, "gpt, every layer count, all cuts");
    }
}

static void test_format_limits(void **state)
{
    print_message("format: -1 when the buffer is too small by one, exact fit accepted\n");
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_MLP);
    char text[1024];
    int n = erase_model_config_format(&c, text, sizeof text);
    assert_true(n > 0);
    char *exact = malloc((size_t)n + 1);
    assert_non_null(exact);
    assert_int_equal(erase_model_config_format(&c, exact, n + 1), n);
    assert_string_equal(exact, text);
    assert_int_equal(erase_model_config_format(&c, exact, n), -1);
    assert_int_equal(erase_model_config_format(&c, exact, 1), -1);
    free(exact);

    print_message("format: -1 for a configuration the file format cannot express\n");
    erase_model_config_t bad = c;
    bad.kind = (erase_model_kind_t)7;
    assert_int_equal(erase_model_config_format(&bad, text, sizeof text), -1);
    bad = c;
    bad.mlp.hidden_layers = ERASE_MAX_LAYERS + 1;
    assert_int_equal(erase_model_config_format(&bad, text, sizeof text), -1);
    bad = c;
    bad.cut_mask = 1u << 3; /* 3 blocks: boundaries 1, 2 only */
    assert_int_equal(erase_model_config_format(&bad, text, sizeof text), -1);
}

static void test_error_syntax(void **state)
{
    print_message("syntax errors name the line and libconfig's text\n");
    expect_error("model = \"ctr\";\nseed = ;\n", "bad.cfg:2: syntax error");
    expect_error("model = \"ctr\";\nseed = 1;\n\nseed = 2;\n", "bad.cfg:4: duplicate setting name");
    expect_error("model = \"ctr\";\nctr: { table_rows = [1, \"x\"]; };\n",
                 "bad.cfg:2: mismatched element type in array");
}

static void test_error_model(void **state)
{
    print_message("the model key: required, \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\"\n");
    expect_error("seed = 1;\n", "bad.cfg: missing key 'model' (\"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\")");
    expect_error("", "bad.cfg: missing key 'model' (\"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\")");
    expect_error("model = \"foo\";\n", "bad.cfg:1: model: expected \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\", got \"foo\"");
    expect_error("\nmodel = 1;\n", "bad.cfg:2: model: expected \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\", got 1");
    expect_error("model = [\"ctr\"];\n", "bad.cfg:1: model: expected \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\", got a list");
}

static void test_error_unknown_key(void **state)
{
    print_message("unknown keys, at the top and inside the model group; the nearest known key when it is "
                  "at most 2 edits away (a swap of neighbours is 1)\n");
    expect_error("model = \"ctr\";\nsede = 1;\n", "bad.cfg:2: unknown key 'sede' (did you mean 'seed'?)");
    expect_ctr_error("  embedding_dim = 16;\n  embeding_dim = 16;",
                     "bad.cfg:4: unknown key 'ctr.embeding_dim' (did you mean 'embedding_dim'?)");
    expect_gpt_error("  haeds = 2;", "bad.cfg:3: unknown key 'gpt.haeds' (did you mean 'heads'?)");
    expect_mlp_error("  seed = 3;", "bad.cfg:3: unknown key 'mlp.seed'");
    expect_mlp_error("  subarchs = 3;", "bad.cfg:3: unknown key 'mlp.subarchs'");
    /* a run file given as a model file: its model key names a file */
    expect_error("model = \"jobs/nanochat-d4.cfg\";\n",
                 "bad.cfg:1: model: expected \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\", got "
                 "\"jobs/nanochat-d4.cfg\": a file name, as a run file names its model file; a run file is "
                 "erase-train's --config");
}

static void test_error_other_group(void **state)
{
    print_message("the group of the other model\n");
    expect_error("model = \"ctr\";\nctr: {};\nmlp: { inputs = 3; };\n",
                 "bad.cfg:3: group 'mlp' does not apply to model \"ctr\"");
    expect_error("mlp: {};\nctr: {};\nmodel = \"mlp\";\n",
                 "bad.cfg:2: group 'ctr' does not apply to model \"mlp\"");
    print_message("the model's own group must be a group\n");
    expect_error("model = \"ctr\";\nctr = 5;\n", "bad.cfg:2: ctr: expected a group, got 5");
}

static void test_error_integer_type(void **state)
{
    print_message("integer keys take only integers\n");
    expect_ctr_error("  embedding_dim = 2.5;", "bad.cfg:3: ctr.embedding_dim: expected an integer >= 1, got 2.5");
    expect_ctr_error("  embedding_dim = 16.0;", "bad.cfg:3: ctr.embedding_dim: expected an integer >= 1, got 16.0");
    expect_ctr_error("  embedding_dim = \"16\";", "bad.cfg:3: ctr.embedding_dim: expected an integer >= 1, got \"16\"");
    expect_ctr_error("  subarch_width = true;", "bad.cfg:3: ctr.subarch_width: expected an integer >= 1, got true");
    expect_mlp_error("  inputs = [784];", "bad.cfg:3: mlp.inputs: expected an integer >= 1, got a list");
    expect_error("model = \"mlp\";\nseed = 1.5;\n", "bad.cfg:2: seed: expected an integer >= 0, got 1.5");
}

static void test_error_integer_range(void **state)
{
    print_message("integer keys out of range\n");
    expect_ctr_error("  embedding_dim = 0;", "bad.cfg:3: ctr.embedding_dim: expected an integer >= 1, got 0");
    expect_ctr_error("  subarch_width = -4;", "bad.cfg:3: ctr.subarch_width: expected an integer >= 1, got -4");
    expect_ctr_error("  subarchs = 0;", "bad.cfg:3: ctr.subarchs: expected an integer in 1..31, got 0");
    expect_ctr_error("  subarchs = 32;", "bad.cfg:3: ctr.subarchs: expected an integer in 1..31, got 32");
    expect_ctr_error("  embedding_dim = 3000000000L;",
                     "bad.cfg:3: ctr.embedding_dim: expected an integer in 1..2147483647, got 3000000000");
    expect_mlp_error("  classes = 1;", "bad.cfg:3: mlp.classes: expected an integer >= 2, got 1");
    expect_mlp_error("  inputs = 0;", "bad.cfg:3: mlp.inputs: expected an integer >= 1, got 0");
    expect_error("model = \"ctr\";\nseed = -1;\n", "bad.cfg:2: seed: expected an integer >= 0, got -1");
}

/* table_rows = "data" (issue 35): the flag, no sizes yet, and the text the
 * formatter writes back parses the same. */
static void test_table_rows_data(void **state)
{
    (void)state;
    erase_model_config_t c, back;
    MUST(erase_model_config_parse("model = \"ctr\";\nctr: { table_rows = \"data\"; };\n", "ctr.cfg", &c));
    assert_int_equal(c.ctr.table_rows_from_data, 1);
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        assert_int_equal(c.ctr.table_rows[f], 0);
    char text[4096];
    assert_true(erase_model_config_format(&c, text, sizeof text) > 0);
    assert_non_null(strstr(text, "  table_rows = \"data\";\n"));
    MUST(erase_model_config_parse(text, "back.cfg", &back));
    assert_int_equal(back.ctr.table_rows_from_data, 1);
    c.ctr.table_rows_from_data = 0; /* resolved by erase-train: the numbers are written */
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        c.ctr.table_rows[f] = 2u + (uint32_t)f;
    assert_true(erase_model_config_format(&c, text, sizeof text) > 0);
    assert_null(strstr(text, "\"data\""));
}

static void test_error_table_rows(void **state)
{
    print_message("table_rows: one integer >= 2 or a list of exactly 26\n");
    expect_ctr_error("  table_rows = [10, 20, 30];", "bad.cfg:3: ctr.table_rows: expected 26 table sizes, got 3");
    expect_ctr_error("  table_rows = [];", "bad.cfg:3: ctr.table_rows: expected 26 table sizes, got 0");
    expect_ctr_error("  table_rows = 1;", "bad.cfg:3: ctr.table_rows: expected an integer >= 2, got 1");
    expect_ctr_error("  table_rows = 5000000000L;",
                     "bad.cfg:3: ctr.table_rows: expected an integer in 2..4294967295, got 5000000000");
    expect_ctr_error("  table_rows = \"big\";",
                     "bad.cfg:3: ctr.table_rows: expected an integer >= 2, a list of 26 table sizes or \"data\", "
                     "got \"big\"");
    char body[512] = "  table_rows = [";
    for (int f = 0; f < ERASE_CTR_FIELDS; f++)
        snprintf(body + strlen(body), sizeof body - strlen(body), "%s%s", f ? ",\n" : "",
                 f == 5 ? "1" : "100");
    strcat(body, "];");
    expect_ctr_error(body, "bad.cfg:8: ctr.table_rows[5]: expected an integer >= 2, got 1");
}

/*
 * ctr.pooling (issue 35): "sum" by default and not written, "mean" read,
 * written and parsed back with MLPerf's hotness (214 ids, the largest
 * 100); jobs/ctr-multihot.cfg is the reference model with MLPerf's
 * hotness; the refusals name the key and what was expected.
 */
static void test_parse_pooling(void **state)
{
    static const uint32_t mlperf[ERASE_CTR_FIELDS] = ERASE_CTR_HOTNESS_MLPERF;
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    assert_int_equal(c.ctr.pooling, ERASE_POOLING_SUM);
    assert_int_equal(erase_model_config_max_hotness(&c), 1);
    char text[4096];
    assert_true(erase_model_config_format(&c, text, sizeof text) > 0);
    assert_null(strstr(text, "pooling"));
    MUST(erase_model_config_parse("model = \"ctr\";\nctr: {\n  hotness = \"mlperf\";\n  pooling = \"mean\";\n};\n",
                                  "m.cfg", &c));
    assert_int_equal(c.ctr.pooling, ERASE_POOLING_MEAN);
    assert_int_equal(erase_model_config_hot_width(&c), 214);
    assert_int_equal(erase_model_config_max_hotness(&c), 100);
    round_trip(&c, "ctr multi-hot, mean pooling");
    assert_true(erase_model_config_format(&c, text, sizeof text) > 0);
    assert_non_null(strstr(text, "  pooling = \"mean\";\n"));
    erase_model_config_t job;
    MUST(erase_model_config_load(ERASE_SRCDIR "/jobs/ctr-multihot.cfg", &job));
    assert_memory_equal(job.ctr.hotness, mlperf, sizeof mlperf);
    assert_int_equal(job.ctr.pooling, ERASE_POOLING_SUM);
    expect_ctr_error("  pooling = \"max\";", "bad.cfg:3: ctr.pooling: expected \"sum\" or \"mean\", got \"max\"");
    expect_ctr_error("  pooling = 1;", "bad.cfg:3: ctr.pooling: expected \"sum\" or \"mean\", got 1");
}

static void test_error_bottom_mlp(void **state)
{
    print_message("bottom_mlp: 1..16 widths >= 1, the last equal to embedding_dim\n");
    expect_ctr_error("  bottom_mlp = [64, 8];", "bad.cfg:3: ctr.bottom_mlp: the last width (8) must equal embedding_dim (16)");
    expect_ctr_error("  bottom_mlp = [64, 16];\n  embedding_dim = 4;",
                     "bad.cfg:3: ctr.bottom_mlp: the last width (16) must equal embedding_dim (4)");
    expect_ctr_error("  bottom_mlp = [];", "bad.cfg:3: ctr.bottom_mlp: expected 1..16 widths, got 0");
    expect_ctr_error("  bottom_mlp = [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,16];",
                     "bad.cfg:3: ctr.bottom_mlp: expected 1..16 widths, got 17");
    expect_ctr_error("  bottom_mlp = [64, 0, 16];", "bad.cfg:3: ctr.bottom_mlp[1]: expected an integer >= 1, got 0");
    expect_ctr_error("  bottom_mlp = 16;", "bad.cfg:3: ctr.bottom_mlp: expected a list of 1..16 widths, got 16");
}

static void test_error_hidden(void **state)
{
    print_message("hidden: 1..16 widths >= 1\n");
    expect_mlp_error("  hidden = [];", "bad.cfg:3: mlp.hidden: expected 1..16 widths, got 0");
    expect_mlp_error("  hidden = [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1];", "bad.cfg:3: mlp.hidden: expected 1..16 widths, got 17");
    expect_mlp_error("  hidden = (\n    10,\n    2.5);", "bad.cfg:5: mlp.hidden[1]: expected an integer >= 1, got 2.5");
    expect_mlp_error("  hidden = \"1024\";", "bad.cfg:3: mlp.hidden: expected a list of 1..16 widths, got \"1024\"");
}

static void test_error_cuts(void **state)
{
    print_message("cuts: \"all\", \"none\" or distinct boundaries in 1..blocks-1\n");
    expect_ctr_error("  cuts = [1, 9];", "bad.cfg:3: ctr.cuts: boundary 9 outside 1..6");
    expect_ctr_error("  cuts = [0];", "bad.cfg:3: ctr.cuts: boundary 0 outside 1..6");
    expect_ctr_error("  subarchs = 2;\n  cuts = [1, 3];", "bad.cfg:4: ctr.cuts: boundary 3 outside 1..2");
    expect_ctr_error("  cuts = [2,\n          2];", "bad.cfg:4: ctr.cuts: boundary 2 listed twice");
    expect_ctr_error("  cuts = \"some\";", "bad.cfg:3: ctr.cuts: expected \"all\", \"none\" or a list of boundaries, got \"some\"");
    expect_ctr_error("  cuts = 3;", "bad.cfg:3: ctr.cuts: expected \"all\", \"none\" or a list of boundaries, got 3");
    expect_ctr_error("  cuts = [1.5];", "bad.cfg:3: ctr.cuts[0]: expected a boundary number, got 1.5");
    expect_mlp_error("  cuts = [3];", "bad.cfg:3: mlp.cuts: boundary 3 outside 1..2");
}

static void test_error_weight(void **state)
{
    print_message("local_loss_weight: an int or a float >= 0\n");
    expect_ctr_error("  local_loss_weight = -0.5;", "bad.cfg:3: ctr.local_loss_weight: expected a number >= 0, got -0.5");
    expect_mlp_error("  local_loss_weight = -1;", "bad.cfg:3: mlp.local_loss_weight: expected a number >= 0, got -1");
    expect_mlp_error("  local_loss_weight = \"1\";", "bad.cfg:3: mlp.local_loss_weight: expected a number >= 0, got \"1\"");
    expect_mlp_error("  local_loss_weight = 1e300;",
                     "bad.cfg:3: mlp.local_loss_weight: expected a number <= 3.40282e+38, got 1e+300");
}

static void test_load(void **state)
{
    print_message("load: a missing file is ERASE_ERR_IO naming the path and the reason\n");
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    const char *missing = "/nonexistent-erase-dir/model.cfg";
    assert_int_equal(erase_model_config_load(missing, &c), ERASE_ERR_IO);
    print_message("  %s\n", erase_error_message());
    assert_string_equal(strstr(erase_error_message(), "cannot read"),
                        "cannot read model file /nonexistent-erase-dir/model.cfg: No such file or directory");

    print_message("load: a directory is ERASE_ERR_IO too\n");
    assert_int_equal(erase_model_config_load("/", &c), ERASE_ERR_IO);
    print_message("  %s\n", erase_error_message());
    assert_non_null(strstr(erase_error_message(), "cannot read model file /: it is a directory, expected a regular file"));

    print_message("load: a file reads like parse, and messages name the path\n");
    char path[] = "/tmp/test-model-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    /* longer than the first read buffer, to grow it */
    for (int i = 0; i < 300; i++)
        fprintf(f, "# padding comment line %d ............\n", i);
    fputs("model = \"mlp\";\nmlp: { hidden = [64, 32]; classes = 3; };\n", f);
    fclose(f);
    MUST(erase_model_config_load(path, &c));
    assert_int_equal(c.kind, ERASE_MODEL_MLP);
    assert_int_equal(c.mlp.hidden_layers, 2);
    assert_int_equal(c.mlp.hidden[1], 32);
    assert_int_equal(c.mlp.classes, 3);

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("model = \"mlp\";\nmlp: {\n  classes = 0;\n};\n", f);
    fclose(f);
    assert_int_equal(erase_model_config_load(path, &c), ERASE_ERR_FORMAT);
    print_message("  %s\n", erase_error_message());
    char want[256];
    snprintf(want, sizeof want, "%s:3: mlp.classes: expected an integer >= 2, got 0", path);
    assert_string_equal(message_from(path), want);
    unlink(path);
}

static void test_error_wide_integer(void **state)
{
    print_message("plain integers beyond 32 bits (libconfig wraps them) and L integers beyond 64\n");
    /* 4294967303 read as 7, 4294977303 in a list as 10007, seed 4294967297 as 1 */
    expect_ctr_error("  table_rows = 4294967303;",
                     "bad.cfg:3: ctr.table_rows: 4294967303 does not fit 32 bits (libconfig would wrap it); "
                     "write 4294967303L for a 64-bit integer");
    expect_ctr_error("  table_rows = [10007, # a comment 4294967303\n 4294977303];",
                     "bad.cfg:4: ctr.table_rows: 4294977303 does not fit 32 bits (libconfig would wrap it); "
                     "write 4294977303L for a 64-bit integer (and every integer of this array with L: an "
                     "array holds one type)");
    expect_error("model = \"ctr\";\nseed = 4294967297;\n",
                 "bad.cfg:2: seed: 4294967297 does not fit 32 bits (libconfig would wrap it); write "
                 "4294967297L for a 64-bit integer");
    expect_ctr_error("  embedding_dim = -2147483649;",
                     "bad.cfg:3: ctr.embedding_dim: -2147483649 does not fit 32 bits (libconfig would wrap it); "
                     "write -2147483649L for a 64-bit integer");
    expect_ctr_error("  subarchs = 0x100000007;",
                     "bad.cfg:3: ctr.subarchs: 0x100000007 does not fit 32 bits (libconfig would wrap it); "
                     "write 0x100000007L for a 64-bit integer");
    expect_error("model = \"ctr\";\nseed = 99999999999999999999L;\n",
                 "bad.cfg:2: seed: 99999999999999999999L does not fit 64 bits");
    /* what fits is read: the edges, L values, floats and strings are left alone */
    erase_model_config_t c;
    MUST(erase_model_config_parse("model = \"ctr\"; # 99999999999\n seed = 4294967297L;\n"
                                  "ctr: { embedding_dim = 2147483647; bottom_mlp = [64, 2147483647];\n"
                                  " local_loss_weight = 4294967303.5; table_rows = 0x7FFFFFFF; };\n"
                                  "/* 4294967303 */\n",
                                  "good.cfg", &c));
    assert_int_equal(c.seed, 4294967297ULL);
    assert_int_equal(c.ctr.embedding_dim, 2147483647);
    assert_int_equal(c.ctr.table_rows[25], 2147483647);
    assert_true(c.local_loss_weight > 4.29e9f);
    /* in a string: the model's own check */
    assert_int_equal(erase_model_config_parse("model = \"ctr\"; ctr: { cuts = \"4294967303\"; };", "s.cfg", &c),
                     ERASE_ERR_FORMAT);
    assert_string_equal(message_from("s.cfg"), "s.cfg:1: ctr.cuts: expected \"all\", \"none\" or a list of "
                                               "boundaries, got \"4294967303\"");
}

/* Write `len` bytes of `text` to a new temporary file: its path in `path`. */
static void write_temp(char *path, const char *text, size_t len)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static void test_error_nul_and_include(void **state)
{
    print_message("a NUL byte (libconfig read up to it) and @include of a directory\n");
    static const char nul[] = "model = \"ctr\";\n\0 ctr: { embedding_dim = 8; };\n";
    char path[] = "/tmp/test-model-config-XXXXXX", want[512];
    write_temp(path, nul, sizeof nul - 1);
    erase_model_config_t c = erase_model_config_default(ERASE_MODEL_CTR);
    assert_int_equal(erase_model_config_load(path, &c), ERASE_ERR_FORMAT);
    print_message("  %s\n", erase_error_message());
    snprintf(want, sizeof want, "%s:2: a NUL byte: the file is not text (libconfig would ignore the rest)", path);
    assert_string_equal(message_from(path), want);
    unlink(path);

    expect_error("model = \"ctr\";\n@include \"/\"\n", "bad.cfg:2: @include \"/\": is a directory");

    /* an included file is checked under its own name */
    char inc[] = "/tmp/test-model-config-inc-XXXXXX";
    static const char body[] = "ctr: {\n  table_rows = 4294967303;\n};\n";
    write_temp(inc, body, sizeof body - 1);
    char text[256];
    snprintf(text, sizeof text, "model = \"ctr\";\n  @include \"%s\"\n", inc);
    erase_error_clear();
    assert_int_equal(erase_model_config_parse(text, "top.cfg", &c), ERASE_ERR_FORMAT);
    print_message("  %s\n", erase_error_message());
    snprintf(want, sizeof want, "%s:2: ctr.table_rows: 4294967303 does not fit 32 bits (libconfig would "
             "wrap it); write 4294967303L for a 64-bit integer", inc);
    assert_string_equal(message_from(inc), want);
    unlink(inc);
    snprintf(text, sizeof text, "model = \"ctr\";\n@include \"%s\"\n", inc);
    assert_int_equal(erase_model_config_parse(text, "top.cfg", &c), ERASE_ERR_IO);
    snprintf(want, sizeof want, "top.cfg:2: @include \"%s\": No such file or directory", inc);
    assert_string_equal(message_from("top.cfg"), want);
}

/* issue 32: model text stored in a checkpoint includes nothing: a crafted
 * checkpoint made erase-sample and --eval-only read /etc/passwd */
static void test_embedded_includes_nothing(void **state)
{
    print_message("embedded text: @include refused wherever it is, before any file is read\n");
    static const char *const texts[][2] = {
        { "model = \"gpt\";\n@include \"/etc/passwd\"\n", "ckpt-4.h5:2: " },
        { "model = \"gpt\";\ngpt: {\n  layers = 2;\n  @include \"/nonexistent/x\"\n};\n", "ckpt-4.h5:4: " },
        { "model = \"gpt\"; # @include \"/etc/passwd\"\n", "ckpt-4.h5:1: " },
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        erase_model_config_t c = erase_model_config_default(ERASE_MODEL_GPT), before = c;
        erase_error_clear();
        assert_int_equal(erase_model_config_parse_embedded(texts[i][0], "ckpt-4.h5", &c), ERASE_ERR_FORMAT);
        char want[256];
        snprintf(want, sizeof want, "%s@include: includes are not allowed in embedded text (it would read a file "
                 "of its own choosing)", texts[i][1]);
        print_message("  %s\n", erase_error_message());
        assert_string_equal(message_from("ckpt-4.h5"), want);
        assert_memory_equal(&c, &before, sizeof c);
    }
    erase_model_config_t c;
    MUST(erase_model_config_parse_embedded("model = \"gpt\";\ngpt: { layers = 2; };\n", "ckpt-4.h5", &c));
    assert_int_equal(c.gpt.layers, 2);
}

static void test_null_arguments(void **state)
{
    print_message("NULL text, configuration or path: ERASE_ERR_INVALID; a NULL name reads \"<string>\"\n");
    erase_model_config_t c;
    assert_int_equal(erase_model_config_parse(NULL, "x", &c), ERASE_ERR_INVALID);
    assert_int_equal(erase_model_config_parse("model = \"ctr\";", "x", NULL), ERASE_ERR_INVALID);
    assert_int_equal(erase_model_config_load(NULL, &c), ERASE_ERR_INVALID);
    assert_int_equal(erase_model_config_format(NULL, (char[8]){ 0 }, 8), -1);
    assert_int_equal(erase_model_config_parse("model = \"x\";", NULL, &c), ERASE_ERR_FORMAT);
    assert_string_equal(message_from("<string>"), "<string>:1: model: expected \"ctr\", \"mlp\", \"gpt\", \"nanochat\" or \"dcn\", got \"x\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_parse_ctr),
        cmocka_unit_test(test_parse_hotness),
        cmocka_unit_test(test_parse_mlp),
        cmocka_unit_test(test_parse_gpt),
        cmocka_unit_test(test_parse_nanochat),
        cmocka_unit_test(test_parse_dcn),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_format_limits),
        cmocka_unit_test(test_error_syntax),
        cmocka_unit_test(test_error_model),
        cmocka_unit_test(test_error_unknown_key),
        cmocka_unit_test(test_error_other_group),
        cmocka_unit_test(test_error_integer_type),
        cmocka_unit_test(test_error_integer_range),
        cmocka_unit_test(test_error_table_rows),
        cmocka_unit_test(test_table_rows_data), /* issue 35 */
        cmocka_unit_test(test_error_wide_integer),
        cmocka_unit_test(test_error_nul_and_include),
        cmocka_unit_test(test_parse_pooling),
        cmocka_unit_test(test_error_bottom_mlp),
        cmocka_unit_test(test_error_hidden),
        cmocka_unit_test(test_error_cuts),
        cmocka_unit_test(test_error_weight),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_embedded_includes_nothing),
        cmocka_unit_test(test_null_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

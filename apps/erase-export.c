/*
 * erase-export CKPT -o FILE.safetensors [--format erase|hf-gpt2|torch|nanochat]
 *              [--force] [--quiet]
 *
 * The parameters of checkpoint CKPT (a file written by erase-train, or a
 * checkpoint directory: its newest usable one) as a safetensors file
 * (io/safetensors.h) in the names and layouts of the target
 * (apps/export_names.h, docs/export.md), with metadata: format "pt" (the
 * safetensors library's PyTorch convention, which transformers'
 * from_pretrained asks for), erase_format (--format), model
 * (the model file text), step, tokenizer (the identity of the BPE
 * tokenizer of its data, when it had one), erase_version (the erase that
 * exports) and checkpoint_version (the erase that wrote CKPT): nothing of
 * where or when, so that equal states export to equal bytes. The optimizer
 * state is not exported.
 *
 * A pipeline checkpoint (ckpt-N.h5 and its stage files ckpt-N.h5.stage<s>)
 * and one with sharded tables are read as they are, no merge first: every
 * file is opened lazily (io/checkpoint.h ERASE_CKPT_OPEN_LAZY_ALL: format,
 * index and meta checked), then the tensors are read one at a time as they
 * are written, 1 MiB of rows at a time (erase_ckpt_stream), each verified
 * against its checksum (a sharded table's rows each against their own
 * before they are written; a whole tensor's after its last block, a
 * failure then leaving nothing published). Only a weight matrix that is
 * transposed (hf-gpt2's Conv1D) is held whole, one at a time.
 *
 * Written to a temporary name beside FILE, fsynced and renamed: FILE is
 * never partly written, and a failure leaves nothing there. An existing
 * FILE is refused without --force.
 *
 * Exit status: 0 done, 1 failed (one line naming the file or tensor), 2 usage.
 */
#include "config.h"
#include "apps/cli_args.h"
#include "apps/export_names.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io/tok_data_tokenizer.h"
#include "lib/core/fs.h"
#include "lib/nn/model_config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: erase-export CKPT -o FILE.safetensors [--format erase|hf-gpt2|torch|nanochat] [--force]\n"
            "                    [--quiet]\n"
            "  the parameters of checkpoint CKPT (a file, or a checkpoint directory: its newest; pipeline and\n"
            "  sharded checkpoints as they are) as a safetensors file, in the target's names and layouts.\n"
            "  -o, --output FILE  the safetensors file to write (written to a temporary name, then renamed)\n"
            "  --format F         erase: erase's own names (<block>/<path>), any model (default)\n"
            "                     hf-gpt2: Hugging Face GPT2LMHeadModel's names (Conv1D weights transposed;\n"
            "                     a gpt's local heads dropped), gpt only\n"
            "                     torch: PyTorch state-dict names of erase's blocks ('.' for '/'), ctr and mlp\n"
            "                     nanochat: nanochat's GPT state dict (nanochat/gpt.py; a nanochat's local heads\n"
            "                     dropped), nanochat only\n"
            "  --force            replace an existing FILE\n"
            "  --quiet            no summary line on stderr\n"
            "  --version          print the version and exit\n"
            "  metadata: format (pt), erase_format, model, step, tokenizer, erase_version, checkpoint_version\n"
            "  exit status 0 done, 1 failed, 2 usage\n");
}

/* A usage error: one line, status 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("erase-export: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* The failure recorded by the library: one line, status 1. */
static int failed(void)
{
    fprintf(stderr, "erase-export: %s\n", erase_error_reason());
    return 1;
}

static void skipped_checkpoint(void *ctx, const char *path, const char *why)
{
    (void)ctx;
    fprintf(stderr, "erase-export: checkpoint %s is damaged, skipping it: %s\n", path, why);
}

/* One tensor to write: where it comes from and what becomes of it. */
typedef struct {
    int part, index;          /* the stage file and the tensor's index in its /params */
    export_action_t action;
} source_t;

typedef struct {
    erase_ckpt_t **parts;     /* the checkpoint's files: stage 0 (the checkpoint), stage 1, ... */
    int nparts;
    erase_st_tensor_t *out;   /* the tensors written, in order */
    source_t *src;
    int n, dropped;
    char dropped_names[512];
} export_plan_t;

static void plan_free(export_plan_t *p)
{
    for (int s = 0; s < p->nparts; s++)
        erase_ckpt_close(p->parts[s]);
    free(p->parts);
    free(p->out);
    free(p->src);
}

/* Open the checkpoint `path` (a file or a directory) and its stage files
 * lazily, and list the tensors to write in format f. */
static erase_status_t plan_open(const char *path, export_format_t f, erase_model_config_t *cfg, export_plan_t *p)
{
    memset(p, 0, sizeof *p);
    erase_ckpt_t *ck;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        ERASE_CHECK(erase_ckpt_open_newest_flags(path, ERASE_CKPT_OPEN_LAZY_ALL, skipped_checkpoint, NULL, &ck));
        if (!ck)
            return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no checkpoint (ckpt-<step>.h5) in this directory", path);
    } else {
        ERASE_CHECK(erase_ckpt_open_flags(path, ERASE_CKPT_OPEN_LAZY_ALL, &ck));
    }
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    erase_status_t st = ERASE_OK;
    if (!m->model || !m->model[0])
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: holds no model text", erase_ckpt_path(ck));
    if (st == ERASE_OK)
        st = erase_model_config_parse_embedded(m->model, erase_ckpt_path(ck), cfg);
    if (st == ERASE_OK && export_format_fits(f, cfg, "--format") != ERASE_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", erase_error_reason());
        st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: %s", erase_ckpt_path(ck), why);
    }
    p->nparts = m->pp_size;
    if (st == ERASE_OK && !(p->parts = calloc((size_t)p->nparts, sizeof *p->parts)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
    if (st != ERASE_OK) {
        erase_ckpt_close(ck);
        p->nparts = 0;
        return st;
    }
    p->parts[0] = ck;
    for (int s = 1; s < p->nparts && st == ERASE_OK; s++) {
        char stage[ERASE_CKPT_PATH_MAX];
        if (erase_ckpt_stage_path(erase_ckpt_path(ck), s, stage, sizeof stage) != 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: path too long for its stage files", erase_ckpt_path(ck));
        else
            st = erase_ckpt_open_flags(stage, ERASE_CKPT_OPEN_LAZY_ALL, &p->parts[s]);
    }
    int total = 0;
    for (int s = 0; s < p->nparts && st == ERASE_OK; s++)
        total += erase_ckpt_count(p->parts[s], ERASE_CKPT_PARAMS);
    if (st == ERASE_OK && (!(p->out = calloc((size_t)total + 1, sizeof *p->out)) ||
                           !(p->src = calloc((size_t)total + 1, sizeof *p->src))))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
    for (int s = 0; s < p->nparts && st == ERASE_OK; s++)
        for (int i = 0; i < erase_ckpt_count(p->parts[s], ERASE_CKPT_PARAMS) && st == ERASE_OK; i++) {
            const erase_ckpt_tensor_t *t = erase_ckpt_tensor(p->parts[s], ERASE_CKPT_PARAMS, i);
            erase_st_tensor_t *o = &p->out[p->n];
            export_action_t action;
            if ((st = export_name(f, cfg, t->name, o->name, sizeof o->name, &action)) != ERASE_OK)
                break;
            if (action == EXPORT_DROP) {
                size_t at = strlen(p->dropped_names);
                if (at + strlen(t->name) + 8 < sizeof p->dropped_names)
                    snprintf(p->dropped_names + at, sizeof p->dropped_names - at, "%s%s", at ? ", " : "", t->name);
                p->dropped++;
                continue;
            }
            o->dtype = ERASE_ST_F32;
            o->ndim = t->ndim;
            o->dims[0] = t->dims[0];
            o->dims[1] = t->ndim == 2 ? t->dims[1] : 0;
            if (action == EXPORT_TRANSPOSE && t->ndim == 2) {
                o->dims[0] = t->dims[1];
                o->dims[1] = t->dims[0];
            }
            p->src[p->n++] = (source_t){ .part = s, .index = i, .action = action };
        }
    return st;
}

/* erase_ckpt_stream's ctx: where the rows go (put_rows: the file being
 * written; gather_rows: a whole tensor), and the tensor's row width. */
typedef struct {
    erase_st_writer_t *w;
    float *data;
    int64_t cols;
} rows_to_t;

static erase_status_t put_rows(void *ctx, int64_t row0, int64_t n, const float *rows)
{
    (void)row0;
    rows_to_t *to = ctx;
    return erase_st_writer_put(to->w, rows, sizeof(float) * (size_t)(n * to->cols));
}

static erase_status_t gather_rows(void *ctx, int64_t row0, int64_t n, const float *rows)
{
    rows_to_t *to = ctx;
    memcpy(to->data + row0 * to->cols, rows, sizeof(float) * (size_t)(n * to->cols));
    return ERASE_OK;
}

/* Write the data of tensor k of the plan, read (verified) as it is
 * appended; a transposed one (a weight matrix, not a table) whole. */
static erase_status_t write_tensor(const export_plan_t *p, int k, erase_st_writer_t *w)
{
    const erase_ckpt_t *ck = p->parts[p->src[k].part];
    int i = p->src[k].index;
    const erase_ckpt_tensor_t *t = erase_ckpt_tensor(ck, ERASE_CKPT_PARAMS, i);
    int64_t rows = t->dims[0], cols = t->ndim == 2 ? t->dims[1] : 1;
    rows_to_t to = { .w = w, .cols = cols };
    if (p->src[k].action != EXPORT_TRANSPOSE)
        return erase_ckpt_stream(ck, ERASE_CKPT_PARAMS, i, put_rows, &to);
    size_t bytes = sizeof(float) * (size_t)(rows * cols);
    rows_to_t whole = { .data = malloc(bytes + 1), .cols = cols };
    float *turned = malloc(bytes + 1);
    erase_status_t st = ERASE_OK;
    if (!whole.data || !turned)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: params/%s: out of memory", erase_ckpt_path(ck), t->name);
    if (st == ERASE_OK)
        st = erase_ckpt_stream(ck, ERASE_CKPT_PARAMS, i, gather_rows, &whole);
    if (st == ERASE_OK) { /* [rows, cols] -> [cols, rows] */
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                turned[c * rows + r] = whole.data[r * cols + c];
        st = erase_st_writer_put(w, turned, bytes);
    }
    free(whole.data);
    free(turned);
    return st;
}

/* The whole export; the status and message of the first failure. */
static erase_status_t export_checkpoint(const char *ckpt, const char *out, export_format_t f, int force, int quiet)
{
    if (!force && access(out, F_OK) == 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: exists (not overwritten; --force replaces it)", out);
    export_plan_t p;
    erase_model_config_t cfg;
    erase_status_t st = plan_open(ckpt, f, &cfg, &p);
    if (st != ERASE_OK) {
        plan_free(&p);
        return st;
    }
    const erase_ckpt_meta_t *m = erase_ckpt_meta(p.parts[0]);
    char step[32], tok[40] = "";
    snprintf(step, sizeof step, "%" PRId64, m->step);
    if (m->tokenizer && m->tokenizer[0])
        erase_tok_tokenizer_identity_of(m->tokenizer, tok);
    erase_st_meta_t meta[7] = {
        { "format", "pt" }, /* the safetensors library's torch convention: transformers' from_pretrained needs it */
        { "erase_format", export_format_name(f) },
        { "model", m->model },
        { "step", step },
        { "erase_version", PACKAGE_NAME " " PACKAGE_VERSION },
        { "checkpoint_version", m->version ? m->version : "" },
        { "tokenizer", tok },
    };
    erase_st_writer_t *w;
    st = erase_st_writer_open(out, p.out, p.n, meta, tok[0] ? 7 : 6, &w);
    for (int k = 0; k < p.n && st == ERASE_OK; k++)
        st = write_tensor(&p, k, w);
    if (st == ERASE_OK) {
        st = erase_st_writer_commit(w);
    } else if (w) {
        erase_st_writer_abort(w);
    }
    if (st == ERASE_OK && p.dropped)
        fprintf(stderr, "erase-export: note: %d tensor%s of local heads dropped (%s has no place for them; "
                        "--format erase keeps them): %s\n", p.dropped, p.dropped == 1 ? "" : "s",
                export_format_name(f), p.dropped_names);
    if (st == ERASE_OK && !quiet)
        fprintf(stderr, "erase-export: %s: %d tensors of %s (%s, step %" PRId64 ", %d stage file%s) as %s\n", out,
                p.n, erase_ckpt_path(p.parts[0]), erase_model_config_name(&cfg), m->step, p.nparts,
                p.nparts == 1 ? "" : "s", export_format_name(f));
    plan_free(&p);
    return st;
}

int main(int argc, char **argv)
{
    const char *ckpt = NULL, *out = NULL, *format = "erase";
    int force = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            return cli_version("erase-export");
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
            out = argv[++i];
        } else if (!strcmp(a, "--format") && v) {
            format = argv[++i];
        } else if (a[0] == '-' || ckpt) {
            static const char *const valued[] = { "-o", "--output", "--format", NULL };
            return cli_leftover_error("erase-export", a, !v, valued);
        } else {
            ckpt = a;
        }
    }
    if (!ckpt)
        return cli_missing("erase-export", "a checkpoint", 0, "erase-export CKPT -o FILE.safetensors [--format F]");
    if (!out)
        return usage_error("no output given: -o FILE.safetensors");
    const char *what = erase_path_not_regular(out); /* before the checkpoint is read, not after */
    if (what)
        return usage_error("-o %s: is %s, expected a file (FILE.safetensors)", out, what);
    export_format_t f;
    if (export_format_parse(format, &f) != 0)
        return usage_error("--format %s: expected erase, hf-gpt2, torch or nanochat", format);
    if (export_checkpoint(ckpt, out, f, force, quiet) != ERASE_OK)
        return failed();
    return 0;
}

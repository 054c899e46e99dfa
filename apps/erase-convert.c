/*
 * erase-convert: make the HDF5 CTR shards erase trains on.
 *
 *   erase-convert criteo -o DIR [options] FILE...   Criteo click logs -> shards
 *   erase-convert synth  -o DIR --rows N [options]  planted-model data -> shards
 *   erase-convert synth  --shape criteo-1tb --scale S --days D --rows N -o DIR  synthetic TSV days
 *   erase-convert mnist  IMAGES LABELS -o DIR [options]  IDX files -> classification shards
 *   erase-convert text   FILE... -o DIR [options]   text -> byte-level (or --tokenizer: BPE) token shards (DIR/train, DIR/eval)
 *   erase-convert tokens FILE.bin... -o DIR [options]  llm.c / nanoGPT (--raw) token files -> token shards
 *
 * criteo and synth write DIR/part-NNNNN.h5 (schema in io/ctr_shard.h) and
 * DIR/index.txt, mnist DIR/train and DIR/eval, each such a directory of
 * classification shards (io/cls_shard.h); all atomically (nothing that
 * looks valid is left by a failed or interrupted run; --force replaces an
 * old dataset only once the new one is written), then print a summary. Exit status: 0 done, 1 failed, 2 usage,
 * 128 + the signal number when SIGINT (130), SIGTERM (143) or SIGHUP (129)
 * stopped it (after the same cleanup as a failure). ERASE_DEBUG_TEXT_BLOCK=N
 * (tests): text --tokenizer reads and encodes blocks of N bytes, not 16 MiB.
 */
#include "config.h"
#include "apps/cli_args.h"
#include "apps/convert_vocab.h"
#include "io/criteo_convert.h"
#include "io/mnist_convert.h"
#include "io/synth.h"
#include "io/synth_days.h"
#include "io/tok_convert.h"
#include "io/tokenizer.h"

#include <errno.h>
#include <getopt.h>
#include <hdf5.h>
#include <mpi.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t cancelled; /* the signal that stopped the conversion, 0: none */

static void on_signal(int sig)
{
    cancelled = sig;
}

/* SIGINT/SIGTERM/SIGHUP (a closed terminal) stop the conversion cleanly
 * (temporary files deleted), unless the caller ignores them. */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* reads go on; the converter checks the flag every 4096 lines */
    sigemptyset(&sa.sa_mask);
    /* a signal the caller ignores stays ignored (nohup; `&` in a script) */
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

/* "1000", "10k", "5M", "2G" (powers of 1000) -> *out; 0 or -1. */
static int parse_count(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || v < 0)
        return -1;
    int64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1000, end++;
    else if (*end == 'M')
        mul = 1000000, end++;
    else if (*end == 'G')
        mul = 1000000000, end++;
    if (*end || v > INT64_MAX / mul)
        return -1;
    *out = (int64_t)v * mul;
    return 0;
}

static int parse_double(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return errno || end == text || *end ? -1 : 0;
}

#define TEXT_OF(x) #x
#define TEXT_OF_VALUE(x) TEXT_OF(x)
#define HOTNESS_MAX_TEXT TEXT_OF_VALUE(ERASE_SYNTH_DAYS_MAX_HOTNESS) /* "1000" */

/* A bad option value: "erase-convert CMD: OPT: bad value 'V' (expected WHAT)"; 2. */
static int bad_value(const char *cmd, const char *opt, const char *value, const char *expected)
{
    fprintf(stderr, "erase-convert %s: %s: bad value '%s' (expected %s)\n", cmd, opt, value, expected);
    return 2;
}

/* Print why the conversion failed; the exit status: 1, or 128 + the signal
 * when a signal stopped it (st is then ERASE_ERR_STATE, "interrupted"). */
static int failed(const char *cmd, erase_status_t st)
{
    int sig = st == ERASE_ERR_STATE ? (int)cancelled : 0;
    fprintf(stderr, "erase-convert %s: error: %s%s%s\n", cmd, erase_error_reason(), sig ? " by " : "",
            sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "");
    return sig ? 128 + sig : 1;
}

/* After a failure: "erase-convert CMD: no dataset written to DIR<detail>",
 * and with --force, when DIR (or DIR/train) holds a dataset, that it is
 * kept (an old dataset is replaced only by a conversion that succeeds). */
static void not_written(const char *cmd, const char *dir, int force, const char *detail)
{
    char index[4200], train_index[4200];
    snprintf(index, sizeof index, "%s/index.txt", dir);
    snprintf(train_index, sizeof train_index, "%s/train/index.txt", dir);
    int kept = force && (access(index, F_OK) == 0 || access(train_index, F_OK) == 0);
    fprintf(stderr, "erase-convert %s: no dataset written to %s%s%s\n", cmd, dir, detail,
            kept ? "; the dataset already there is kept" : "");
}

/* Started by an MPI launcher (Open MPI's mpirun, Hydra, PMIx: srun):
 * initialise MPI, so that the conversion shares its work over the ranks
 * (io/convert_ranks.h); started alone, no MPI at all. Returns the rank. */
static int mpi_start(int *argc, char ***argv)
{
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK"))
        return 0;
    /* HDF5 started before MPI: it then hooks no shutdown to MPI_Finalize.
     * After a write that failed on a full disk, HDF5 1.10 keeps a
     * half-closed file whose shutdown crashed (SIGSEGV in H5F__close_cb,
     * tests/apps/test-convert-parallel.sh); every file is closed by the
     * converter, so the process ends without HDF5's shutdown (cmd_criteo). */
    H5open();
    int rank = 0;
    if (MPI_Init(argc, argv) == MPI_SUCCESS)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* MPI_Finalize if mpi_start initialised MPI; returns `rc`. */
static int mpi_end(int rc)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (inited && !finalized)
        MPI_Finalize();
    return rc;
}

static void usage_criteo(FILE *f)
{
    fprintf(f,
            "usage: erase-convert criteo -o DIR [options] FILE...\n"
            "  Criteo click logs -> HDF5 shards (erase-ctr-1). FILE: raw tab-separated\n"
            "  (label, I1..I13, C1..C26; no header) or comma-separated with the header\n"
            "  label,I1,...,C26; plain or gzip. Empty fields are missing values. In TSV a\n"
            "  categorical field may hold several ids separated by ',' (multi-hot): then the\n"
            "  shards are erase-ctr-2 (docs/data.md, Multi-hot features).\n"
            "  Under mpirun the ranks share the work: whole gzip files and byte ranges of\n"
            "  plain files (--split-bytes); the dataset does not depend on the ranks.\n"
            "  -o, --out DIR         output directory (created if missing)\n"
            "  --shard-rows N        rows per shard (default 1048576; k, M, G suffixes)\n"
            "  --split-bytes N       cut plain files into ranges of N bytes (default 256M)\n"
            "  --chunk-rows N        HDF5 chunk length along rows (default 1024)\n"
            "  --no-compress         store uncompressed (default: shuffle + deflate 1)\n"
            "  --format F            auto (default: CSV if a file starts with 'label', any case), tsv, csv\n"
            "  --skip-bad            skip bad lines, count them by reason (default: stop at the first)\n"
            "  --vocab VOCAB.h5      map ids through a vocabulary (erase-convert vocab): frequent ids\n"
            "                        to their rows, every other id to the rare row (0xFFFFFFFF)\n"
            "  --min-vocab-coverage R  refuse the inputs when the vocabulary knows fewer than R x the\n"
            "                        share of ids it knows on its own days (default 0.5; 0: never)\n"
            "  --force               replace a dataset already in DIR (once the new one is written)\n"
            "  -q, --quiet           no progress lines\n");
}

static int cmd_criteo(int argc, char **argv)
{
    H5dont_atexit(); /* no HDF5 shutdown at exit: see mpi_start */
    erase_criteo_convert_options_t o = erase_criteo_convert_options_default();
    o.write.converter = "erase-convert criteo " PACKAGE_VERSION;
    o.progress = stderr;
    static const struct option opts[] = {
        { "out", required_argument, 0, 'o' },        { "shard-rows", required_argument, 0, 's' },
        { "chunk-rows", required_argument, 0, 'c' }, { "no-compress", no_argument, 0, 'n' },
        { "format", required_argument, 0, 'f' },     { "skip-bad", no_argument, 0, 'b' },
        { "force", no_argument, 0, 'F' },            { "quiet", no_argument, 0, 'q' },
        { "help", no_argument, 0, 'h' },             { "split-bytes", required_argument, 0, 'B' },
        { "vocab", required_argument, 0, 'V' },      { "min-vocab-coverage", required_argument, 0, 'M' },
        { 0, 0, 0, 0 },
    };
    const char *vocab_path = NULL;
    int c, coverage_given = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_dir = optarg; break;
        case 'V': vocab_path = optarg; break;
        case 'M':
            coverage_given = 1;
            if (parse_double(optarg, &o.min_vocab_coverage) || !(o.min_vocab_coverage >= 0 && o.min_vocab_coverage <= 1))
                return bad_value("criteo", "--min-vocab-coverage", optarg, "a number in [0, 1]");
            break;
        case 's':
            if (parse_count(optarg, &o.shard_rows) || o.shard_rows < 1)
                return bad_value("criteo", "--shard-rows", optarg, "an integer >= 1");
            break;
        case 'B':
            if (parse_count(optarg, &o.split_bytes) || o.split_bytes < 1)
                return bad_value("criteo", "--split-bytes", optarg, "an integer >= 1");
            break;
        case 'c':
            if (parse_count(optarg, &o.write.chunk_rows) || o.write.chunk_rows < 1)
                return bad_value("criteo", "--chunk-rows", optarg, "an integer >= 1");
            break;
        case 'n': o.write.compress = 0; break;
        case 'f':
            if (!strcmp(optarg, "auto"))
                o.format = ERASE_CRITEO_AUTO;
            else if (!strcmp(optarg, "tsv"))
                o.format = ERASE_CRITEO_TSV;
            else if (!strcmp(optarg, "csv"))
                o.format = ERASE_CRITEO_CSV;
            else
                return bad_value("criteo", "--format", optarg, "auto, tsv or csv");
            break;
        case 'b': o.skip_bad = 1; break;
        case 'F': o.force = 1; break;
        case 'q': o.progress = NULL; break;
        case 'h': usage_criteo(stdout); return 0;
        default: return cli_option_error("erase-convert criteo", c, argv, opts);
        }
    }
    if (coverage_given && !vocab_path) {
        fprintf(stderr, "erase-convert criteo: --min-vocab-coverage: only with --vocab VOCAB.h5\n");
        return 2;
    }
    if (!o.out_dir || optind >= argc) {
        fprintf(stderr, "erase-convert criteo: %s\n", !o.out_dir ? "no output directory (-o DIR)" : "no input files");
        usage_criteo(stderr);
        return 2;
    }
    o.cancel = &cancelled;
    catch_signals();
    int rank = mpi_start(&argc, &argv);
    if (rank != 0)
        o.progress = NULL;
    erase_criteo_convert_summary_t *s = malloc(sizeof *s);
    if (!s) {
        fprintf(stderr, "erase-convert criteo: out of memory\n");
        return mpi_end(1);
    }
    memset(s, 0, sizeof *s);
    erase_vocab_t vocab = { 0 };
    int64_t vocab_rows[ERASE_VOCAB_FIELDS];
    erase_status_t st = vocab_path ? convert_vocab_use(vocab_path, &vocab, vocab_rows, &o) : ERASE_OK;
    if (st == ERASE_OK)
        st = erase_criteo_convert((const char *const *)argv + optind, argc - optind, &o, s);
    erase_vocab_free(&vocab);
    int rc = 0;
    if (st != ERASE_OK && rank != 0) /* rank 0 prints the error the ranks agreed on */
        rc = st == ERASE_ERR_STATE && cancelled ? 128 + (int)cancelled : 1;
    else if (st != ERASE_OK) {
        rc = failed("criteo", st);
        char lines[64];
        snprintf(lines, sizeof lines, " (%" PRId64 " lines read)", s->lines);
        not_written("criteo", o.out_dir, o.force, lines);
    } else if (rank == 0) {
        printf("erase-convert criteo: %s\n", o.out_dir);
        erase_criteo_convert_print(s, stdout);
    }
    free(s);
    return mpi_end(rc);
}

/* The planted model's options of synth and synth --shape (getopt codes
 * S, p, x, d, z): --seed, --base-rate, --signal, --dense-signal, --zipf. */
typedef struct {
    uint64_t *seed;
    double *base_rate, *signal, *dense_signal, *zipf_s;
} planted_flags_t;

/* Option `c` with value `arg`, one the command's switch did not take: 0
 * when it is one of the planted model's and parsed; else 2 (the usage
 * status) after the message: a bad value, or cli_option_error's for an
 * unknown option or a missing value (`argv`, `opts`: the command's). */
static int planted_option(int c, const char *arg, const planted_flags_t *f, char *const *argv,
                          const struct option *opts)
{
    int64_t seed;
    switch (c) {
    case 'S':
        if (parse_count(arg, &seed))
            return bad_value("synth", "--seed", arg, "an integer >= 0");
        *f->seed = (uint64_t)seed;
        return 0;
    case 'p': return parse_double(arg, f->base_rate) ? bad_value("synth", "--base-rate", arg, "a number") : 0;
    case 'x': return parse_double(arg, f->signal) ? bad_value("synth", "--signal", arg, "a number") : 0;
    case 'd': return parse_double(arg, f->dense_signal) ? bad_value("synth", "--dense-signal", arg, "a number") : 0;
    case 'z': return parse_double(arg, f->zipf_s) ? bad_value("synth", "--zipf", arg, "a number") : 0;
    default: return cli_option_error("erase-convert synth", c, argv, opts);
    }
}

static void usage_synth_days(FILE *f)
{
    erase_synth_days_options_t d = erase_synth_days_options_default();
    fprintf(f,
            "usage: erase-convert synth --shape criteo-1tb --scale S --days D --rows N -o DIR [options]\n"
            "  Criteo-format TSV days (label, I1..I13, C1..C26) shaped like Criteo Terabyte's:\n"
            "  DIR/day_K.tsv[.gz], K = first day .. first day + D - 1 (io/synth_days.h). The same\n"
            "  seed gives the same bytes on any number of ranks (mpirun -np N splits the work).\n"
            "  --shape criteo-1tb    Criteo 1TB's 26 table sizes (MLPerf DLRM-DCNv2's), Zipf ids\n"
            "  --scale S             vocabulary sizes = S x Criteo 1TB's (0 < S <= 1; at least 2)\n"
            "  --days D              day files to write\n"
            "  --rows N              rows per day (k, M, G suffixes: 10M)\n"
            "  -o, --out DIR         output directory (created if missing)\n"
            "  --first-day K         number of the first day file (default 0)\n"
            "  --seed X              seed (default %" PRIu64 ")\n"
            "  --hotness H           ids per categorical feature: mlperf (MLPerf DLRM-DCNv2's:\n"
            "                        3,2,1,2,6,...) or 26 counts h1,...,h26 (default all 1)\n"
            "  --hotness-counts C    fixed (default: a present field holds exactly h ids, as MLPerf's\n"
            "                        synthetic multi-hot) or uniform (a count uniform in 1..h per row)\n"
            "  --gzip                write day_K.tsv.gz (gzip level 1, one member per piece)\n"
            "  --base-rate P         mean click probability (default %g)\n"
            "  --signal X            std of the categorical weights (default %g)\n"
            "  --dense-signal X      std of the dense weights (default %g)\n"
            "  --zipf S              Zipf exponent of id popularity (default %g)\n"
            "  --piece-rows N        rows per piece of work (default %" PRId64 "; the bytes depend on it)\n"
            "  --force               replace day files already in DIR\n"
            "  -q, --quiet           no progress lines\n",
            d.seed, d.base_rate, d.signal, d.dense_signal, d.zipf_s, d.piece_rows);
}

/* "mlperf" or 26 comma-separated counts >= 1 -> hotness; 0 or -1. */
static int parse_hotness(const char *text, int *hotness)
{
    if (!strcmp(text, "mlperf")) {
        memcpy(hotness, erase_synth_days_mlperf_hotness, sizeof(int) * ERASE_CTR_SHARD_FIELDS);
        return 0;
    }
    const char *p = text;
    for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 1 || v > ERASE_SYNTH_DAYS_MAX_HOTNESS ||
            *end != (f == ERASE_CTR_SHARD_FIELDS - 1 ? '\0' : ','))
            return -1;
        hotness[f] = (int)v;
        p = end + 1;
    }
    return 0;
}

/* erase-convert synth --shape ...: the days of io/synth_days.h, on the
 * ranks of MPI_COMM_WORLD (MPI started here unless it is already). */
static int cmd_synth_days(int argc, char **argv)
{
    erase_synth_days_options_t o = erase_synth_days_options_default();
    o.progress = stderr;
    static const struct option opts[] = {
        { "shape", required_argument, 0, 'H' },      { "scale", required_argument, 0, 'a' },
        { "days", required_argument, 0, 'D' },       { "rows", required_argument, 0, 'r' },
        { "first-day", required_argument, 0, 'K' },  { "seed", required_argument, 0, 'S' },
        { "hotness", required_argument, 0, 'm' },    { "gzip", no_argument, 0, 'g' },
        { "base-rate", required_argument, 0, 'p' },  { "signal", required_argument, 0, 'x' },
        { "dense-signal", required_argument, 0, 'd' }, { "zipf", required_argument, 0, 'z' },
        { "piece-rows", required_argument, 0, 'P' }, { "out", required_argument, 0, 'o' },
        { "force", no_argument, 0, 'F' },            { "quiet", no_argument, 0, 'q' },
        { "hotness-counts", required_argument, 0, 'u' }, { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    planted_flags_t planted = { &o.seed, &o.base_rate, &o.signal, &o.dense_signal, &o.zipf_s };
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'H': o.shape = optarg; break;
        case 'a':
            if (parse_double(optarg, &o.scale) || !(o.scale > 0 && o.scale <= 1))
                return bad_value("synth", "--scale", optarg, "a number in (0, 1]");
            break;
        case 'D':
            if (parse_count(optarg, &o.days) || o.days < 1)
                return bad_value("synth", "--days", optarg, "an integer >= 1");
            break;
        case 'r':
            if (parse_count(optarg, &o.rows) || o.rows < 1)
                return bad_value("synth", "--rows", optarg, "an integer >= 1");
            break;
        case 'K':
            if (parse_count(optarg, &o.first_day))
                return bad_value("synth", "--first-day", optarg, "an integer >= 0");
            break;
        case 'm':
            if (parse_hotness(optarg, o.hotness))
                return bad_value("synth", "--hotness", optarg, "mlperf or 26 comma-separated counts in [1, " HOTNESS_MAX_TEXT "]");
            break;
        case 'g': o.gzip = 1; break;
        case 'u':
            if (strcmp(optarg, "fixed") && strcmp(optarg, "uniform"))
                return bad_value("synth", "--hotness-counts", optarg, "fixed or uniform");
            o.hotness_uniform = !strcmp(optarg, "uniform");
            break;
        case 'P':
            if (parse_count(optarg, &o.piece_rows) || o.piece_rows < 1)
                return bad_value("synth", "--piece-rows", optarg, "an integer >= 1");
            break;
        case 'o': o.out_dir = optarg; break;
        case 'F': o.force = 1; break;
        case 'q': o.progress = NULL; break;
        case 'h': usage_synth_days(stdout); return 0;
        default:
            if (planted_option(c, optarg, &planted, argv, opts))
                return 2;
            break;
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-convert synth", argv[optind]);
    const char *why = strcmp(o.shape, "criteo-1tb") ? "--shape: expected criteo-1tb"
                      : !o.out_dir               ? "no output directory (-o DIR)"
                      : o.scale <= 0             ? "no --scale S"
                      : o.days < 1               ? "no --days D"
                      : o.rows < 1               ? "no --rows N"
                                                 : NULL;
    if (why) {
        fprintf(stderr, "erase-convert synth: %s\n", why);
        usage_synth_days(stderr);
        return 2;
    }
    int inited = 0, rank = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "erase-convert synth: MPI_Init failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0)
        o.progress = NULL;
    o.cancel = &cancelled;
    catch_signals();
    erase_synth_days_summary_t s;
    erase_status_t st = erase_synth_days_write(&o, MPI_COMM_WORLD, &s);
    int rc = 0;
    if (st != ERASE_OK) {
        /* options and existing files: every rank found the same; rank 0 says it */
        if (rank == 0 || (st != ERASE_ERR_INVALID && st != ERASE_ERR_COMM))
            rc = failed("synth", st);
        else
            rc = 1;
        if (rank == 0)
            fprintf(stderr, "erase-convert synth: no day file written to %s\n", o.out_dir);
    } else if (rank == 0) {
        printf("erase-convert synth: %s\n", o.out_dir);
        erase_synth_days_print(&s, &o, stdout);
    }
    if (!inited)
        MPI_Finalize();
    return rc;
}

static void usage_synth(FILE *f)
{
    erase_synth_options_t d = erase_synth_options_default();
    fprintf(f,
            "usage: erase-convert synth -o DIR --rows N [options]\n"
            "  Synthetic CTR shards from a planted logistic model over hashed features\n"
            "  (io/synth.h); its parameters go to DIR/planted.h5 and the NE it achieves on\n"
            "  the generated rows is printed.\n"
            "  -o, --out DIR         output directory (created if missing)\n"
            "  --rows N              rows to write (k, M, G suffixes: 10M)\n"
            "  --seed S              seed (default %" PRIu64 ")\n"
            "  --base-rate P         mean click probability (default %g)\n"
            "  --signal X            std of the categorical weights (default %g)\n"
            "  --dense-signal X      std of the dense weights (default %g)\n"
            "  --zipf S              Zipf exponent of token popularity (default %g)\n"
            "  --max-vocab N         cap on a field's vocabulary (default %" PRId64 ")\n"
            "  --shard-rows N        rows per shard (default 1048576)\n"
            "  --chunk-rows N        HDF5 chunk length along rows (default 1024)\n"
            "  --no-compress         store uncompressed (default: shuffle + deflate 1)\n"
            "  --force               replace a dataset already in DIR (once the new one is written)\n"
            "  -q, --quiet           no progress lines\n"
            "  --shape criteo-1tb    Criteo-format TSV days shaped like Criteo Terabyte's instead, with\n"
            "                        --scale, --days, --first-day, --hotness, --hotness-counts,\n"
            "                        --gzip, --piece-rows\n"
            "                        (erase-convert synth --shape criteo-1tb --help)\n",
            d.seed, d.base_rate, d.signal, d.dense_signal, d.zipf_s, d.max_vocab);
}

static int cmd_synth(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* --shape: days of TSV, not shards (issue 35) */
        if (!strcmp(argv[i], "--shape") || !strncmp(argv[i], "--shape=", 8))
            return cmd_synth_days(argc, argv);
    erase_synth_options_t o = erase_synth_options_default();
    o.write.converter = "erase-convert synth " PACKAGE_VERSION;
    o.progress = stderr;
    static const struct option opts[] = {
        { "out", required_argument, 0, 'o' },          { "rows", required_argument, 0, 'r' },
        { "seed", required_argument, 0, 'S' },         { "base-rate", required_argument, 0, 'p' },
        { "signal", required_argument, 0, 'x' },       { "dense-signal", required_argument, 0, 'd' },
        { "zipf", required_argument, 0, 'z' },         { "max-vocab", required_argument, 0, 'v' },
        { "shard-rows", required_argument, 0, 's' },   { "chunk-rows", required_argument, 0, 'c' },
        { "no-compress", no_argument, 0, 'n' },        { "force", no_argument, 0, 'F' },
        { "quiet", no_argument, 0, 'q' },              { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    planted_flags_t planted = { &o.seed, &o.base_rate, &o.signal, &o.dense_signal, &o.zipf_s };
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_dir = optarg; break;
        case 'r':
            if (parse_count(optarg, &o.rows) || o.rows < 1)
                return bad_value("synth", "--rows", optarg, "an integer >= 1");
            break;
        case 'v':
            if (parse_count(optarg, &o.max_vocab))
                return bad_value("synth", "--max-vocab", optarg, "an integer >= 0");
            break;
        case 's':
            if (parse_count(optarg, &o.shard_rows) || o.shard_rows < 1)
                return bad_value("synth", "--shard-rows", optarg, "an integer >= 1");
            break;
        case 'c':
            if (parse_count(optarg, &o.write.chunk_rows) || o.write.chunk_rows < 1)
                return bad_value("synth", "--chunk-rows", optarg, "an integer >= 1");
            break;
        case 'n': o.write.compress = 0; break;
        case 'F': o.force = 1; break;
        case 'q': o.progress = NULL; break;
        case 'h': usage_synth(stdout); return 0;
        default:
            if (planted_option(c, optarg, &planted, argv, opts))
                return 2;
            break;
        }
    }
    if (optind < argc)
        return cli_unexpected("erase-convert synth", argv[optind]);
    if (!o.out_dir || o.rows < 1) {
        fprintf(stderr, "erase-convert synth: %s\n", !o.out_dir ? "no output directory (-o DIR)" : "no --rows N");
        usage_synth(stderr);
        return 2;
    }
    o.cancel = &cancelled;
    catch_signals();
    erase_synth_summary_t s;
    erase_status_t st = erase_synth_write(&o, &s);
    if (st != ERASE_OK) {
        int rc = failed("synth", st);
        if (o.force)
            not_written("synth", o.out_dir, o.force, "");
        return rc;
    }
    printf("erase-convert synth: %s\n", o.out_dir);
    erase_synth_print(&s, stdout);
    return 0;
}

static void usage_mnist(FILE *f)
{
    fprintf(f,
            "usage: erase-convert mnist IMAGES LABELS -o DIR [options]\n"
            "  MNIST-style IDX files (images: magic 0x00000803, labels: 0x00000801; plain or\n"
            "  gzip) -> classification shards (erase-cls-1): /features float32 = pixel / 255,\n"
            "  /label uint8. Split by position: the first images go to DIR/train, the last\n"
            "  2000 (--eval-rows) to DIR/eval; train with --train DIR/train --eval DIR/eval.\n"
            "  -o, --out DIR         output directory (created if missing)\n"
            "  --eval-rows N         the last N images go to DIR/eval (default 2000; 0: no eval part)\n"
            "  --split A,B           the first A images to DIR/train, the next B to DIR/eval\n"
            "  --shard-rows N        rows per shard (default 1048576; k, M, G suffixes)\n"
            "  --chunk-rows N        HDF5 chunk length along rows (default 1024)\n"
            "  --no-compress         store uncompressed (default: shuffle + deflate 1)\n"
            "  --force               replace datasets already in DIR/train, DIR/eval (once written)\n"
            "  -q, --quiet           no progress lines\n");
}

/* "A,B" -> two counts; 0 or -1. */
static int parse_split(const char *text, int64_t *a, int64_t *b)
{
    const char *comma = strchr(text, ',');
    char first[64];
    if (!comma || (size_t)(comma - text) >= sizeof first)
        return -1;
    memcpy(first, text, (size_t)(comma - text));
    first[comma - text] = '\0';
    return parse_count(first, a) || parse_count(comma + 1, b) ? -1 : 0;
}

static int cmd_mnist(int argc, char **argv)
{
    erase_mnist_convert_options_t o = erase_mnist_convert_options_default();
    o.write.converter = "erase-convert mnist " PACKAGE_VERSION;
    o.progress = stderr;
    static const struct option opts[] = {
        { "out", required_argument, 0, 'o' },        { "eval-rows", required_argument, 0, 'e' },
        { "split", required_argument, 0, 'S' },      { "shard-rows", required_argument, 0, 's' },
        { "chunk-rows", required_argument, 0, 'c' }, { "no-compress", no_argument, 0, 'n' },
        { "force", no_argument, 0, 'F' },            { "quiet", no_argument, 0, 'q' },
        { "help", no_argument, 0, 'h' },             { 0, 0, 0, 0 },
    };
    int c, eval_given = 0, split_given = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_dir = optarg; break;
        case 'e':
            if (parse_count(optarg, &o.eval_rows))
                return bad_value("mnist", "--eval-rows", optarg, "an integer >= 0");
            eval_given = 1;
            break;
        case 'S':
            if (parse_split(optarg, &o.train_rows, &o.eval_rows) || o.train_rows < 1)
                return bad_value("mnist", "--split", optarg, "TRAIN,EVAL: two row counts, TRAIN >= 1");
            split_given = 1;
            break;
        case 's':
            if (parse_count(optarg, &o.shard_rows) || o.shard_rows < 1)
                return bad_value("mnist", "--shard-rows", optarg, "an integer >= 1");
            break;
        case 'c':
            if (parse_count(optarg, &o.write.chunk_rows) || o.write.chunk_rows < 1)
                return bad_value("mnist", "--chunk-rows", optarg, "an integer >= 1");
            break;
        case 'n': o.write.compress = 0; break;
        case 'F': o.force = 1; break;
        case 'q': o.progress = NULL; break;
        case 'h': usage_mnist(stdout); return 0;
        default: return cli_option_error("erase-convert mnist", c, argv, opts);
        }
    }
    const char *why = !o.out_dir                  ? "no output directory (-o DIR)"
                      : eval_given && split_given ? "--eval-rows and --split exclude each other"
                      : argc - optind != 2        ? "expected two files, IMAGES and LABELS"
                                                  : NULL;
    if (why) {
        fprintf(stderr, "erase-convert mnist: %s\n", why);
        usage_mnist(stderr);
        return 2;
    }
    o.cancel = &cancelled;
    catch_signals();
    erase_mnist_convert_summary_t s;
    erase_status_t st = erase_mnist_convert(argv[optind], argv[optind + 1], &o, &s);
    if (st != ERASE_OK) {
        int rc = failed("mnist", st);
        not_written("mnist", o.out_dir, o.force, "");
        return rc;
    }
    printf("erase-convert mnist: %s/train%s\n", o.out_dir, s.eval_rows ? " and eval" : "");
    erase_mnist_convert_print(&s, stdout);
    return 0;
}

static void usage_text(FILE *f)
{
    fprintf(f,
            "usage: erase-convert text FILE... -o DIR [options]\n"
            "  Text files (any bytes) -> token shards (erase-tok-1) of byte-level tokens:\n"
            "  vocab 256, a token is a byte's value. The files are concatenated in the order\n"
            "  given; the last 10%% of the bytes (--val-fraction) go to DIR/eval, the rest to\n"
            "  DIR/train; train with --train DIR/train --eval DIR/eval.\n"
            "  -o, --out DIR         output directory (created if missing)\n"
            "  --val-fraction F      the share of the bytes held out in DIR/eval (default 0.1; 0: none)\n"
            "  --shard-tokens N      tokens per shard (default 16777216; k, M, G suffixes)\n"
            "  --chunk-tokens N      HDF5 chunk length (default 65536)\n"
            "  --no-compress         store uncompressed (default: shuffle + deflate 1)\n"
            "  --force               replace datasets already in DIR/train, DIR/eval (once written)\n"
            "  --tokenizer FILE      BPE tokens of this tokenizer (erase-tokenizer train): each\n"
            "                        FILE is a document, <|bos|> first; the last 10%% of the tokens\n"
            "                        go to DIR/eval; the shards carry the tokenizer (docs/tokenizer.md)\n"
            "  -q, --quiet           no progress lines (as the other commands; text prints none)\n");
}

static void usage_tokens(FILE *f)
{
    fprintf(f,
            "usage: erase-convert tokens FILE.bin... -o DIR [options]\n"
            "  Pre-tokenized files -> one dataset of token shards (erase-tok-1) in DIR, in\n"
            "  llm.c's format (a header of 256 int32: magic 20240520, version 1, token count;\n"
            "  then uint16 tokens) or, with --raw, nanoGPT's (raw uint16, no header: a file\n"
            "  that does not start with the magic). The count in a header must match the\n"
            "  file's size; without --raw a file with no magic is refused.\n"
            "  -o, --out DIR         output directory (created if missing)\n"
            "  --vocab V             every token must be < V (default 50257, GPT-2's; at most 65536)\n"
            "  --raw                 a file without llm.c's header is raw uint16 tokens (nanoGPT's .bin)\n"
            "  --shard-tokens N      tokens per shard (default 16777216; k, M, G suffixes)\n"
            "  --chunk-tokens N      HDF5 chunk length (default 65536)\n"
            "  --no-compress         store uncompressed (default: shuffle + deflate 1)\n"
            "  --force               replace a dataset already in DIR (once the new one is written)\n"
            "  -q, --quiet           no progress lines (as the other commands; tokens prints none)\n");
}

/* erase-convert text and erase-convert tokens (`cmd`): one set of options. */
static int cmd_tok(const char *cmd, int argc, char **argv)
{
    const int text = !strcmp(cmd, "text");
    void (*usage_cmd)(FILE *) = text ? usage_text : usage_tokens;
    char tool[32];
    snprintf(tool, sizeof tool, "erase-convert %s", cmd);
    erase_tok_convert_options_t o = erase_tok_convert_options_default();
    o.write.converter = text ? "erase-convert text " PACKAGE_VERSION : "erase-convert tokens " PACKAGE_VERSION;
    static const struct option opts[] = {
        { "out", required_argument, 0, 'o' },          { "val-fraction", required_argument, 0, 'v' },
        { "vocab", required_argument, 0, 'V' },        { "shard-tokens", required_argument, 0, 's' },
        { "chunk-tokens", required_argument, 0, 'c' }, { "no-compress", no_argument, 0, 'n' },
        { "force", no_argument, 0, 'F' },              { "help", no_argument, 0, 'h' },
        { "quiet", no_argument, 0, 'q' },              { "raw", no_argument, 0, 'R' },
        { "tokenizer", required_argument, 0, 'T' },    { 0, 0, 0, 0 },
    };
    const char *tokenizer_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.out_dir = optarg; break;
        case 'q': break; /* the conversion prints no progress lines */
        case 'v':
            if (!text)
                return cli_leftover_error(tool, "--val-fraction", 0, NULL); /* text's only */
            if (parse_double(optarg, &o.eval_fraction) || !(o.eval_fraction >= 0 && o.eval_fraction < 1))
                return bad_value(cmd, "--val-fraction", optarg, "a number in [0, 1)");
            break;
        case 'V':
            if (text)
                return cli_leftover_error(tool, "--vocab", 0, NULL); /* tokens' only */
            if (parse_count(optarg, &o.vocab) || o.vocab < 1 || o.vocab > ERASE_TOK_MAX_VOCAB)
                return bad_value(cmd, "--vocab", optarg, "an integer in [1, 65536]");
            break;
        case 's':
            if (parse_count(optarg, &o.shard_tokens) || o.shard_tokens < 2)
                return bad_value(cmd, "--shard-tokens", optarg, "an integer >= 2");
            break;
        case 'c':
            if (parse_count(optarg, &o.write.chunk_tokens) || o.write.chunk_tokens < 1)
                return bad_value(cmd, "--chunk-tokens", optarg, "an integer >= 1");
            break;
        case 'n': o.write.compress = 0; break;
        case 'F': o.force = 1; break;
        case 'R':
            if (text)
                return cli_leftover_error(tool, "--raw", 0, NULL); /* tokens' only */
            o.raw = 1;
            break;
        case 'T':
            if (!text)
                return cli_leftover_error(tool, "--tokenizer", 0, NULL); /* text's only */
            tokenizer_path = optarg;
            break;
        case 'h': usage_cmd(stdout); return 0;
        default: return cli_option_error(tool, c, argv, opts);
        }
    }
    const char *why = !o.out_dir ? "no output directory (-o DIR)" : optind == argc ? "no input files" : NULL;
    if (why) {
        fprintf(stderr, "erase-convert %s: %s\n", cmd, why);
        usage_cmd(stderr);
        return 2;
    }
    erase_tokenizer_t *tokenizer = NULL;
    if (tokenizer_path) {
        erase_status_t st = erase_tokenizer_load(tokenizer_path, &tokenizer);
        if (st != ERASE_OK) {
            int rc = failed(cmd, st);
            not_written(cmd, o.out_dir, o.force, "");
            return rc;
        }
        o.tokenizer = tokenizer;
    }
    const char *block = getenv("ERASE_DEBUG_TEXT_BLOCK"); /* tests: blocks of this many bytes */
    if (block && atoll(block) >= 1)
        o.text_block = atoll(block);
    o.cancel = &cancelled;
    catch_signals();
    erase_tok_convert_summary_t s;
    const char *const *files = (const char *const *)argv + optind;
    erase_status_t st = text ? erase_tok_convert_text(files, argc - optind, &o, &s)
                             : erase_tok_convert_tokens(files, argc - optind, &o, &s);
    erase_tokenizer_free(tokenizer);
    o.tokenizer = NULL;
    if (st != ERASE_OK) {
        int rc = failed(cmd, st);
        not_written(cmd, o.out_dir, o.force, "");
        return rc;
    }
    printf("erase-convert %s: %s%s\n", cmd, o.out_dir, !text ? "" : s.eval_shards ? "/train and eval" : "/train");
    erase_tok_convert_print(&s, &o, stdout);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-convert COMMAND [OPTIONS]   (COMMAND --help for its options)\n\n"
               "  criteo   Criteo click logs (TSV or CSV with header, plain or gzip) -> HDF5 shards\n"
               "  vocab    count categorical ids of Criteo TSV files -> a frequency-thresholded vocabulary\n"
               "  synth    synthetic CTR data from a planted logistic model -> HDF5 shards\n"
               "  mnist    MNIST IDX images and labels (plain or gzip) -> classification shards\n"
               "  text     text files -> byte-level token shards (DIR/train, DIR/eval)\n"
               "  tokens   pre-tokenized files (llm.c's .bin, or raw uint16 with --raw) -> token shards\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        return cli_version("erase-convert");
    }
    if (!strcmp(argv[1], "criteo"))
        return cmd_criteo(argc - 1, argv + 1);
    if (!strcmp(argv[1], "vocab"))
        return convert_vocab_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "synth"))
        return cmd_synth(argc - 1, argv + 1);
    if (!strcmp(argv[1], "mnist"))
        return cmd_mnist(argc - 1, argv + 1);
    if (!strcmp(argv[1], "text") || !strcmp(argv[1], "tokens"))
        return cmd_tok(argv[1], argc - 1, argv + 1);
    fprintf(stderr, "erase-convert: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

/*
 * erase-bench data: speed of the data path on one core.
 *   converter: lines/s of erase-convert criteo (parse + write shards) from
 *              plain and gzip text into uncompressed and compressed shards;
 *   reader:    samples/s delivered by the CTR reader (shuffled, global
 *              batch G), with the decoding on the calling thread
 *              (prefetch 0) and on the prefetch thread (prefetch 2), for
 *              1 rank and for rank 0 of 4 (a rank decompresses every block
 *              its part touches: see --chunk);
 *   synth:     rows/s of erase-convert synth;
 *   --multi-hot: reader samples/s of MLPerf's multi-hot rows (214 ids, read
 *              as [n, 214] + sparse_len) against one-hot rows on as many
 *              rows, interleaved rounds, min/median/max (issue 35).
 * Input: data/criteo/kaggle-train-first9999.tsv repeated to --lines lines,
 * written to a temporary directory (removed at the end unless --keep).
 * Goals (issue 5): converter >= 300,000 lines/s on one core; reader >= 10x
 * the samples/s a training step consumes (--step-qps, default 40,000: what
 * `erase-bench model` measures for ctr on one core here).
 */
#include "apps/bench/bench.h"
#include "apps/cli_args.h"

#include "io/criteo_convert.h"
#include "io/ctr_reader.h"
#include "io/ctr_dataset_write.h"
#include "io/synth.h"
#include "lib/core/fs.h"
#include "lib/core/timer.h"
#include "lib/nn/model_config.h"

#include <dirent.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifndef ERASE_SRCDIR
#error "ERASE_SRCDIR must be defined"
#endif

/* Total size in bytes of the files in a directory. */
static int64_t dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    int64_t total = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            total += sb.st_size;
    }
    if (d)
        closedir(d);
    return total;
}


/* Write `lines` lines of the Kaggle sample, repeated, as plain text and gzip. */
static int make_input(const char *tsv, const char *gz, int64_t lines)
{
    char src[4096];
    snprintf(src, sizeof src, "%s/data/criteo/kaggle-train-first9999.tsv", ERASE_SRCDIR);
    FILE *in = fopen(src, "rb");
    if (!in) {
        fprintf(stderr, "erase-bench data: cannot open %s\n", src);
        return -1;
    }
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *text = malloc((size_t)size);
    if (!text || fread(text, 1, (size_t)size, in) != (size_t)size) {
        fclose(in);
        free(text);
        return -1;
    }
    fclose(in);
    FILE *out = fopen(tsv, "wb");
    gzFile z = gzopen(gz, "wb6");
    int64_t written = 0;
    while (out && z && written < lines) {
        const char *p = text, *end = text + size;
        while (p < end && written < lines) {
            const char *q = memchr(p, '\n', (size_t)(end - p));
            size_t n = (size_t)(q ? q + 1 - p : end - p);
            fwrite(p, 1, n, out);
            gzwrite(z, p, (unsigned)n);
            written++;
            p += n;
        }
    }
    int rc = out && z ? 0 : -1;
    if (out)
        fclose(out);
    if (z)
        gzclose(z);
    free(text);
    return rc;
}

typedef struct {
    double samples_per_s, samples_per_cpu_s, wait_fraction;
} read_result_t;

/* One epoch of the reader; samples/s, samples per CPU second of the
 * process (both threads with prefetch; the figure a shared machine
 * disturbs least) and the share of the time it waited. */
static read_result_t read_epoch_as(const erase_row_format_t *fmt, const char *dir, int64_t batch, int64_t block,
                                   int64_t pool, int prefetch, int dp_size)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = batch;
    o.block_rows = block;
    o.pool_blocks = pool;
    o.prefetch = prefetch;
    o.dp_size = dp_size;
    o.dp_rank = 0;
    o.seed = 7;
    const char *in[1] = { dir };
    erase_reader_t *r;
    ERASE_MUST(erase_reader_open(fmt, in, 1, &o, &r));
    erase_reader_batch_t b;
    double t0 = erase_now_s(), c0 = erase_cpu_s();
    int64_t samples = 0;
    for (;;) {
        ERASE_MUST(erase_reader_next(r, &b));
        if (b.end_of_epoch)
            break;
        samples += b.size;
    }
    double t = erase_now_s() - t0, c = erase_cpu_s() - c0;
    read_result_t res = { (double)samples / t, (double)samples / c, erase_reader_wait_seconds(r) / t };
    erase_reader_close(r);
    return res;
}

static read_result_t read_epoch(const char *dir, int64_t batch, int64_t block, int64_t pool, int prefetch,
                                int dp_size)
{
    return read_epoch_as(&erase_ctr_rows, dir, batch, block, pool, prefetch, dp_size);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/*
 * `rows` synthetic rows into `dir`: random labels, counts and ids, with
 * hotness[f] ids in feature f of every row (MLPerf's multi-hot Criteo
 * gives every sample exactly its feature's hotness), or one id each
 * (hotness NULL: erase-ctr-1). Compressed or not, chunks of `chunk` rows.
 */
static void write_rows(const char *dir, int64_t rows, int64_t chunk, int compress, const uint32_t *hotness)
{
    enum { BLOCK = 8192 };
    int64_t per_row = 0;
    for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++)
        per_row += hotness ? hotness[f] : 1;
    uint8_t *label = malloc(BLOCK);
    float *dense = malloc(sizeof *dense * BLOCK * ERASE_CTR_SHARD_DENSE);
    uint32_t *lengths = malloc(sizeof *lengths * BLOCK * ERASE_CTR_SHARD_FIELDS);
    uint32_t *ids = malloc(sizeof *ids * BLOCK * (size_t)per_row);
    if (!label || !dense || !lengths || !ids)
        ERASE_MUST(ERASE_ERROR(ERASE_ERR_NOMEM, "erase-bench data: out of memory"));
    erase_ctr_write_options_t o = erase_ctr_write_options_default();
    o.chunk_rows = chunk;
    o.compress = compress;
    erase_ctr_dataset_writer_t *w;
    ERASE_MUST(erase_ctr_dataset_writer_open(dir, 1 << 20, &o, 1, &w));
    uint64_t seed = 35;
    for (int64_t b = 0; b < rows; b += BLOCK) {
        int64_t n = rows - b < BLOCK ? rows - b : BLOCK;
        for (int64_t i = 0; i < n; i++) {
            label[i] = splitmix(&seed) % 4 == 0;
            for (int j = 0; j < ERASE_CTR_SHARD_DENSE; j++)
                dense[i * ERASE_CTR_SHARD_DENSE + j] = (float)(splitmix(&seed) % 1000);
            for (int f = 0; f < ERASE_CTR_SHARD_FIELDS; f++)
                lengths[i * ERASE_CTR_SHARD_FIELDS + f] = hotness ? hotness[f] : 1;
        }
        /* ids skewed as Criteo's: most from a few thousand frequent ones */
        for (int64_t k = 0; k < n * per_row; k++) {
            uint64_t x = splitmix(&seed);
            ids[k] = (uint32_t)(x >> 40) % (x & 1 ? 4096u : 0xFFFFFFFEu);
        }
        ERASE_MUST(erase_ctr_dataset_writer_append_ids(w, n, label, dense, hotness ? lengths : NULL, ids, "bench"));
    }
    ERASE_MUST(erase_ctr_dataset_writer_commit(w));
    erase_ctr_dataset_writer_free(w);
    free(label);
    free(dense);
    free(lengths);
    free(ids);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * --multi-hot: reader samples/s of one rank on the same number of rows,
 * one-hot (erase-ctr-1, read as [n, 26]) against MLPerf's multi-hot
 * (erase-ctr-2, 214 ids per row, read as [n, 214] + sparse_len), the
 * configurations interleaved in each of `repeats` rounds; min, median and
 * max of the rounds.
 */
static int bench_multi_hot(const char *dir, int64_t rows, int64_t batch, int64_t chunk, int64_t pool, int repeats,
                           int compress)
{
    static const uint32_t mlperf[ERASE_CTR_FIELDS] = ERASE_CTR_HOTNESS_MLPERF;
    char one[4200], multi[4200];
    snprintf(one, sizeof one, "%s/one-hot", dir);
    snprintf(multi, sizeof multi, "%s/multi-hot", dir);
    double t0 = erase_now_s();
    write_rows(one, rows, chunk, compress, NULL);
    double t1 = erase_now_s();
    write_rows(multi, rows, chunk, compress, mlperf);
    double t2 = erase_now_s();
    printf("# wrote %" PRId64 " rows one-hot in %.1f s (%.1f MB), multi-hot (MLPerf hotness, 214 ids a row) in "
           "%.1f s (%.1f MB), %s\n",
           rows, t1 - t0, (double)dir_bytes(one) / 1e6, t2 - t1, (double)dir_bytes(multi) / 1e6,
           compress ? "deflate" : "uncompressed");
    erase_row_format_t multi_rows;
    erase_ctr_rows_init(&multi_rows, mlperf);
    struct {
        const char *name, *dir;
        const erase_row_format_t *fmt;
        int prefetch;
    } cases[4] = {
        { "one-hot", one, &erase_ctr_rows, 0 },
        { "multi-hot", multi, &multi_rows, 0 },
        { "one-hot", one, &erase_ctr_rows, 2 },
        { "multi-hot", multi, &multi_rows, 2 },
    };
    double *rate = malloc(sizeof *rate * 4 * (size_t)repeats);
    if (!rate)
        return 1;
    for (int k = 0; k < repeats; k++)
        for (int i = 0; i < 4; i++)
            rate[i * repeats + k] =
                read_epoch_as(cases[i].fmt, cases[i].dir, batch, chunk, pool, cases[i].prefetch, 1).samples_per_s;
    printf("\n# reader, one rank, shuffled (blocks of %" PRId64 ", pools of %" PRId64 "), global batch %" PRId64
           ", %d interleaved rounds\n",
           chunk, pool, batch, repeats);
    printf("%-10s %9s %12s %12s %12s %10s\n", "data", "prefetch", "min/s", "median/s", "max/s", "ids/s");
    for (int i = 0; i < 4; i++) {
        double *r = rate + i * repeats;
        qsort(r, (size_t)repeats, sizeof *r, compare_doubles);
        double median = repeats % 2 ? r[repeats / 2] : 0.5 * (r[repeats / 2 - 1] + r[repeats / 2]);
        printf("%-10s %9d %12.0f %12.0f %12.0f %10.3g\n", cases[i].name, cases[i].prefetch, r[0], median,
               r[repeats - 1], median * (cases[i].fmt == &multi_rows ? 214 : 26));
    }
    free(rate);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: erase-bench data [--lines N] [--batch G] [--chunk R] [--pool K] [--step-qps Q] [--keep]\n"
               "       erase-bench data --open [--batch G] [--pool K] [--batches N] INPUT...\n"
               "       erase-bench data --multi-hot [--lines N] [--repeats R] [--no-compress] [--batch G] [--chunk R]\n"
               "                        [--pool K]\n"
               "  --multi-hot  reader samples/s, one-hot against MLPerf's multi-hot (214 ids a row) on N\n"
               "               synthetic rows (default 200000), R interleaved rounds (default 5): min/median/max;\n"
               "               --no-compress: both written uncompressed\n"
               "  defaults: --lines 1000000 --batch 4096 --chunk 1024 --pool %d --step-qps 40000\n"
               "  --open     no conversion: open the CTR reader on INPUTs (shard directories or files),\n"
               "             print the open time, its memory, the first batch's time and samples/s of\n"
               "             --batches N more (default 20), and the peak resident memory\n"
               "  --chunk R  HDF5 chunk rows of the shards and shuffle block rows of the reader\n"
               "  --pool K   blocks of the reader's shuffle pools (1: the order before pools)\n"
               "  --keep     keep the temporary directory (its path is printed)\n",
            ERASE_READER_POOL_BLOCKS);
}

int bench_data(int argc, char **argv)
{
    int64_t lines = 1000000, batch = 4096, chunk = erase_ctr_write_options_default().chunk_rows;
    int64_t pool = ERASE_READER_POOL_BLOCKS;
    double step_qps = 40000;
    int lines_given = 0;
    int keep = 0, multi_hot = 0, repeats = 5, compress = 1, open_only = 0;
    int64_t batches = 20;
    static const struct option opts[] = { { "lines", required_argument, 0, 'l' },
                                          { "open", no_argument, 0, 'o' },
                                          { "batches", required_argument, 0, 'B' },
                                          { "multi-hot", no_argument, 0, 'm' },
                                          { "repeats", required_argument, 0, 'r' },
                                          { "no-compress", no_argument, 0, 'n' },
                                          { "batch", required_argument, 0, 'b' },
                                          { "chunk", required_argument, 0, 'c' },
                                          { "pool", required_argument, 0, 'p' },
                                          { "step-qps", required_argument, 0, 'q' },
                                          { "keep", no_argument, 0, 'k' },
                                          { "help", no_argument, 0, 'h' },
                                          { 0, 0, 0, 0 } };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': lines = atoll(optarg), lines_given = 1; break;
        case 'b': batch = atoll(optarg); break;
        case 'c': chunk = atoll(optarg); break;
        case 'p': pool = atoll(optarg); break;
        case 'q': step_qps = atof(optarg); break;
        case 'k': keep = 1; break;
        case 'o': open_only = 1; break;
        case 'B': batches = atoll(optarg); break;
        case 'm': multi_hot = 1; break;
        case 'r': repeats = atoi(optarg); break;
        case 'n': compress = 0; break;
        case 'h': usage(stdout); return 0;
        default: return cli_option_error("erase-bench data", c, argv, opts);
        }
    }
    if (open_only) {
        if (optind >= argc || batch < 1 || pool < 1 || batches < 0) {
            fprintf(stderr, "erase-bench data --open: need INPUT..., --batch >= 1, --pool >= 1, --batches >= 0\n");
            return 2;
        }
        return bench_data_open((const char *const *)argv + optind, argc - optind, batch, pool, batches);
    }
    if (optind < argc)
        return cli_unexpected("erase-bench data", argv[optind]);
    if (multi_hot && !lines_given)
        lines = 200000;
    if (lines < 10000 || batch < 1 || chunk < 1 || pool < 1 || !(step_qps > 0) || repeats < 1) {
        fprintf(stderr, "erase-bench data: need --lines >= 10000, --batch >= 1, --chunk >= 1, --pool >= 1, "
                        "--step-qps > 0, --repeats >= 1\n");
        return 2;
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/erase-bench-data-XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "erase-bench data: cannot create a directory in %s\n", tmp);
        return 1;
    }
    if (multi_hot) {
        int rc = bench_multi_hot(dir, lines, batch, chunk, pool, repeats, compress);
        if (keep)
            printf("# kept %s\n", dir);
        else
            erase_remove_tree(dir);
        return rc;
    }
    char tsv[4200], gz[4200], out_plain[4200], out_z[4200], out_gz[4200], out_synth[4200];
    snprintf(tsv, sizeof tsv, "%s/input.tsv", dir);
    snprintf(gz, sizeof gz, "%s/input.tsv.gz", dir);
    snprintf(out_plain, sizeof out_plain, "%s/shards-none", dir);
    snprintf(out_z, sizeof out_z, "%s/shards-deflate", dir);
    snprintf(out_gz, sizeof out_gz, "%s/shards-from-gz", dir);
    snprintf(out_synth, sizeof out_synth, "%s/synth", dir);
    printf("# erase-bench data: %" PRId64 " Criteo lines (the Kaggle sample repeated) in %s; chunks of %" PRId64
           " rows\n", lines, dir, chunk);
    if (make_input(tsv, gz, lines) != 0) {
        fprintf(stderr, "erase-bench data: cannot write the input files\n");
        erase_remove_tree(dir);
        return 1;
    }
    struct stat sb_tsv, sb_gz;
    stat(tsv, &sb_tsv);
    stat(gz, &sb_gz);

    printf("\n# converter (erase-convert criteo), one core; goal >= 300000 lines/s\n");
    printf("%-12s %-12s %12s %10s %12s %10s\n", "input", "shards", "lines/s", "MB/s in", "bytes/row", "goal");
    struct {
        const char *in, *out, *in_name, *out_name;
        int compress;
        int64_t in_bytes;
    } conv[3] = {
        { tsv, out_plain, "tsv", "none", 0, sb_tsv.st_size },
        { tsv, out_z, "tsv", "deflate", 1, sb_tsv.st_size },
        { gz, out_gz, "tsv.gz", "deflate", 1, sb_gz.st_size },
    };
    for (int i = 0; i < 3; i++) {
        erase_criteo_convert_options_t o = erase_criteo_convert_options_default();
        o.out_dir = conv[i].out;
        o.write.compress = conv[i].compress;
        o.write.chunk_rows = chunk;
        erase_criteo_convert_summary_t *s = malloc(sizeof *s);
        const char *in[1] = { conv[i].in };
        ERASE_MUST(erase_criteo_convert(in, 1, &o, s));
        double lps = (double)s->lines / s->seconds;
        printf("%-12s %-12s %12.0f %10.1f %12.1f %10s\n", conv[i].in_name, conv[i].out_name, lps,
               (double)conv[i].in_bytes / 1e6 / s->seconds, (double)dir_bytes(conv[i].out) / (double)s->rows,
               lps >= 300000 ? "met" : "MISSED");
        free(s);
    }

    printf("\n# reader (shuffled in blocks of %" PRId64 " rows, pools of %" PRId64 " blocks, global batch %" PRId64
           "), samples/s of one rank; goal >= 10 x %.0f = %.0f\n",
           chunk, pool, batch, step_qps, 10 * step_qps);
    printf("%-10s %9s %4s %12s %10s %10s %8s %12s\n", "shards", "prefetch", "dp", "samples/s", "x step", "waited",
           "goal", "per CPU s");
    const char *outs[2] = { out_plain, out_z }, *names[2] = { "none", "deflate" };
    int prefetches[2] = { 0, 2 }, dps[2] = { 1, 4 };
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < 2; p++)
            for (int d = 0; d < 2; d++) {
                read_result_t r = read_epoch(outs[i], batch, chunk, pool, prefetches[p], dps[d]);
                printf("%-10s %9d %4d %12.0f %10.1f %9.1f%% %8s %12.0f\n", names[i], prefetches[p], dps[d],
                       r.samples_per_s, r.samples_per_s / step_qps, 100 * r.wait_fraction,
                       r.samples_per_s >= 10 * step_qps ? "met" : "MISSED", r.samples_per_cpu_s);
            }
    printf("  (prefetch 0: decoding on the calling thread, one core; prefetch 2: on the\n"
           "   prefetch thread, 'waited' = share of the time the caller waited for it;\n"
           "   dp 4: rank 0 of 4 decompresses every pool its quarter of a batch touches: all of them\n"
           "   with pools of more than one block; per CPU s: samples per CPU second of the process)\n");

    erase_synth_options_t so = erase_synth_options_default();
    so.out_dir = out_synth;
    so.rows = lines;
    so.write.chunk_rows = chunk;
    erase_synth_summary_t ss;
    ERASE_MUST(erase_synth_write(&so, &ss));
    printf("\n# synth (erase-convert synth, deflate): %.0f rows/s; planted model NE %.4f at base rate %.4f\n",
           (double)ss.rows / ss.seconds, ss.ne, ss.base_rate);

    if (keep)
        printf("# kept %s\n", dir);
    else
        erase_remove_tree(dir);
    return 0;
}

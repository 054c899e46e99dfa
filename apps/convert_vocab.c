#include "apps/convert_vocab.h"

#include "apps/cli_args.h"
#include "config.h"
#include "io/vocab_count.h"
#include "lib/core/fs.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOOL "erase-convert vocab"

static void usage_vocab(FILE *f)
{
    fprintf(f, "usage: erase-convert vocab --threshold T -o VOCAB.h5 [options] FILE...\n"
               "  Count every categorical id of Criteo TSV files (plain or gzip; "
               "multi-hot\n"
               "  fields 'a,b,c' count each id; an empty field counts the missing id) "
               "and write\n"
               "  the ids seen at least T times per feature (erase-vocab-1), numbered "
               "by\n"
               "  descending count, ties by ascending id. Under mpirun -np N the files "
               "are\n"
               "  split over the ranks and the counts merged exactly. Use it with\n"
               "  erase-convert criteo --vocab VOCAB.h5.\n"
               "  --threshold T         least count of a frequent id (an integer >= 1)\n"
               "  -o, --out FILE        the vocabulary file (written atomically)\n"
               "  --force               replace FILE if it exists\n"
               "  -q, --quiet           no summary\n");
}

erase_status_t convert_vocab_use(const char *path, erase_vocab_t *v, int64_t *rows, erase_criteo_convert_options_t *o)
{
    ERASE_CHECK(erase_vocab_read(path, v));
    for (int f = 0; f < ERASE_VOCAB_FIELDS; f++)
        rows[f] = erase_vocab_table_rows(v->frequent[f]);
    o->vocab = v;
    o->vocab_path = path;
    o->write.vocab_digest = v->digest;
    o->write.vocab_threshold = v->threshold;
    o->write.vocab_table_rows = rows;
    return ERASE_OK;
}

/* The input paths, one per line (malloc'ed), or NULL. */
static char *join_lines(char *const *paths, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(paths[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s%s", paths[i], i + 1 < n ? "\n" : "");
    *p = '\0';
    return s;
}

/* Rank 0: the directory of the output file `out` (created, one level, as
 * criteo and synth create theirs: erase_dir_make) in dir[size] ("" for the
 * working directory), *made when created. Returns the exit status agreed
 * by every rank, the error printed. */
static int make_out_dir(const char *out, int rank, char *dir, size_t size, int *made)
{
    *made = 0;
    const char *slash = strrchr(out, '/');
    snprintf(dir, size, "%.*s", slash ? (int)(slash - out) : 0, out);
    int rc = 0;
    if (rank == 0 && dir[0] && erase_dir_make(dir, made) != ERASE_OK) {
        fprintf(stderr, TOOL ": error: %s\n", erase_error_reason());
        rc = 1;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

/* Count this rank's files, agree on failures, merge, write on rank 0.
 * Returns the exit status (the same on every rank). */
static int run(char **files, int n, const char *out, int64_t threshold, int quiet)
{
    int rank = 0, ranks = 1, made = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    char dir[4096];
    if (make_out_dir(out, rank, dir, sizeof dir, &made)) {
        if (rank == 0)
            fprintf(stderr, TOOL ": no vocabulary written to %s\n", out);
        return 1;
    }
    double t0 = erase_now_s();
    erase_vocab_counter_t *c = NULL;
    erase_status_t st = erase_vocab_counter_new(&c);
    for (int i = rank; st == ERASE_OK && i < n; i += ranks)
        st = erase_vocab_count_file(c, files[i]);
    if (st != ERASE_OK)
        fprintf(stderr, TOOL ": error: %s\n", erase_error_reason());
    int failed = st != ERASE_OK, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    erase_vocab_t v = {0};
    int64_t lines = 0, mine = c ? erase_vocab_counter_lines(c) : 0;
    if (!any) {
        MPI_Reduce(&mine, &lines, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        st = erase_vocab_count_merge(c, MPI_COMM_WORLD, threshold, &v);
        if (st != ERASE_OK) {
            fprintf(stderr, TOOL ": error: %s\n", erase_error_reason());
            MPI_Abort(MPI_COMM_WORLD, 1); /* the other ranks may wait in the merge */
        }
    }
    erase_vocab_counter_free(c);
    double count_s = erase_now_s() - t0;
    int rc = any ? 1 : 0;
    if (!any && rank == 0) {
        v.sources = join_lines(files, n);
        st = v.sources ? erase_vocab_write(&v, out)
                       : ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the list of input files");
        if (st != ERASE_OK) {
            fprintf(stderr, TOOL ": error: %s\n", erase_error_reason());
            rc = 1;
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0 && rc)
        fprintf(stderr, TOOL ": no vocabulary written to %s\n", out);
    if (rank == 0 && rc && made)
        rmdir(dir); /* the directory this run made, left empty */
    if (rank == 0 && !rc && !quiet) {
        printf(TOOL ": %s: %" PRId64 " lines of %d file%s counted on %d rank%s in %.2f s\n", out, lines, n,
               n == 1 ? "" : "s", ranks, ranks == 1 ? "" : "s", count_s);
        erase_vocab_print(&v, out, stdout);
    }
    erase_vocab_free(&v);
    return rc;
}

int convert_vocab_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"threshold", required_argument, 0, 't'}, {"out", required_argument, 0, 'o'}, {"force", no_argument, 0, 'F'},
        {"quiet", no_argument, 0, 'q'},           {"help", no_argument, 0, 'h'},      {0, 0, 0, 0},
    };
    const char *out = NULL;
    int64_t threshold = 0;
    int force = 0, quiet = 0, c;
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 't': {
            char *end;
            errno = 0;
            long long t = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end || t < 1) {
                fprintf(stderr, TOOL ": --threshold: bad value '%s' (expected an integer >= 1)\n", optarg);
                return 2;
            }
            threshold = t;
            break;
        }
        case 'o': out = optarg; break;
        case 'F': force = 1; break;
        case 'q': quiet = 1; break;
        case 'h': usage_vocab(stdout); return 0;
        default: return cli_option_error(TOOL, c, argv, opts);
        }
    }
    if (!threshold || !out || optind >= argc) {
        fprintf(stderr, TOOL ": %s\n",
                !threshold ? "no threshold (--threshold T)"
                : !out     ? "no output file (-o FILE)"
                           : "no input files");
        usage_vocab(stderr);
        return 2;
    }
    const char *what = erase_path_not_regular(out); /* --force renames over it: never over a device or a FIFO */
    if (what) {
        fprintf(stderr, TOOL ": -o %s: is %s, expected a file name\n", out, what);
        return 2;
    }
    if (!force && access(out, F_OK) == 0) {
        fprintf(stderr, TOOL ": %s: already exists; remove it or replace it (--force)\n", out);
        return 1;
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, TOOL ": error: MPI_Init failed\n");
        return 1;
    }
    int rc = run(argv + optind, argc - optind, out, threshold, quiet);
    if (!initialized)
        MPI_Finalize();
    return rc;
}

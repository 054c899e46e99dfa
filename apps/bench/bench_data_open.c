/*
 * erase-bench data --open INPUT...: the CTR reader's start-up on data that
 * exists (shard directories or files, e.g. one directory per day, as
 * erase-train --train takes them), without converting anything: seconds
 * to open (every shard's metadata and index.txt, io/reader.h), the
 * reader's own memory (erase_reader_info: index_bytes, linear in the
 * blocks; buffer_bytes, set by the options), seconds to the first batch
 * (its first pool read whole), samples/s over the next batches, and the
 * process's peak resident memory (getrusage). One line of figures, for
 * bench/reader-scale.sh to repeat and summarize.
 */
#include "apps/bench/bench.h"

#include "io/ctr_reader.h"
#include "lib/core/timer.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>

int bench_data_open(const char *const *inputs, int n, int64_t batch, int64_t pool, int64_t batches)
{
    erase_reader_options_t o = erase_reader_options_default();
    o.global_batch = batch;
    o.pool_blocks = pool;
    o.seed = 7;
    erase_reader_t *r;
    double t0 = erase_now_s();
    if (erase_ctr_reader_open(inputs, n, &o, &r) != ERASE_OK) {
        fprintf(stderr, "erase-bench data: %s\n", erase_error_reason());
        return 1;
    }
    double opened = erase_now_s() - t0;
    erase_reader_info_t info = erase_reader_info(r);
    erase_ctr_batch_t b;
    t0 = erase_now_s();
    erase_status_t st = erase_ctr_reader_next(r, &b);
    double first = erase_now_s() - t0;
    int64_t samples = 0, read = 0;
    t0 = erase_now_s();
    while (st == ERASE_OK && read < batches && (st = erase_ctr_reader_next(r, &b)) == ERASE_OK) {
        samples += b.size;
        read++;
    }
    double rest = erase_now_s() - t0;
    erase_reader_close(r);
    if (st != ERASE_OK) {
        fprintf(stderr, "erase-bench data: %s\n", erase_error_reason());
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%-8s %6s %12s %10s %12s %12s %10s %12s %10s\n", "shards", "inputs", "rows", "blocks", "open s",
           "index B", "buffer MB", "1st batch s", "samples/s");
    printf("%-8d %6d %12" PRId64 " %10" PRId64 " %12.4f %12zu %10.1f %12.3f %10.0f\n", info.shards, n,
           info.total_rows, info.blocks, opened, info.index_bytes, (double)info.buffer_bytes / 1e6, first,
           rest > 0 ? (double)samples / rest : 0.0);
    printf("# peak RSS %.1f MB (getrusage), global batch %" PRId64 ", pools of %" PRId64 " blocks\n",
           (double)ru.ru_maxrss / 1024.0, batch, pool);
    return 0;
}

#include "io/mnist_convert.h"

#include "io/ctr_dataset_write.h"
#include "io/idx.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK_ROWS 1024 /* rows converted between checks of the cancel flag */

erase_mnist_convert_options_t erase_mnist_convert_options_default(void)
{
    erase_mnist_convert_options_t o = { 0 };
    o.shard_rows = 1 << 20;
    o.train_rows = -1;
    o.eval_rows = 2000;
    o.classes = 10;
    o.write = erase_cls_write_options_default();
    return o;
}

/* Write images [first, first + n) of `img` with their labels. */
static erase_status_t write_part(erase_cls_dataset_writer_t *w, const erase_idx_t *img, const erase_idx_t *lab,
                                 int64_t first, int64_t n, float *buf, const erase_mnist_convert_options_t *o)
{
    int64_t f = img->rows * img->cols;
    for (int64_t done = 0; done < n; done += BLOCK_ROWS) {
        if (o->cancel && *o->cancel)
            return ERASE_ERROR(ERASE_ERR_STATE, "interrupted");
        int64_t k = n - done < BLOCK_ROWS ? n - done : BLOCK_ROWS;
        const uint8_t *px = img->data + (first + done) * f;
        for (int64_t i = 0; i < k * f; i++)
            buf[i] = (float)px[i] / 255.0f;
        ERASE_CHECK(erase_cls_dataset_writer_append(w, k, buf, lab->data + first + done));
    }
    return ERASE_OK;
}

/* Bytes of the files a dataset directory lists. */
static int64_t dataset_bytes(const char *dir, int shards)
{
    int64_t total = 0;
    for (int i = 0; i < shards; i++) {
        char path[4200];
        struct stat sb;
        snprintf(path, sizeof path, "%s/part-%05d.h5", dir, i);
        if (stat(path, &sb) == 0)
            total += (int64_t)sb.st_size;
    }
    return total;
}

erase_status_t erase_mnist_convert(const char *images_path, const char *labels_path,
                                   const erase_mnist_convert_options_t *o, erase_mnist_convert_summary_t *summary)
{
    erase_mnist_convert_summary_t local;
    erase_mnist_convert_summary_t *s = summary ? summary : &local;
    memset(s, 0, sizeof *s);
    double t0 = erase_now_s();
    if (!o->out_dir || !o->out_dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "no output directory given");
    if (o->eval_rows < 0 || o->train_rows < -1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%" PRId64 " train and %" PRId64 " eval rows: expected >= 0",
                           o->train_rows, o->eval_rows);
    erase_idx_t img, lab;
    ERASE_CHECK(erase_idx_read_pair(images_path, labels_path, o->classes, &img, &lab));
    s->images = img.count;
    s->rows = img.rows;
    s->cols = img.cols;
    s->classes = o->classes;
    int64_t eval = o->eval_rows, train = o->train_rows < 0 ? img.count - eval : o->train_rows;
    erase_status_t st = ERASE_OK;
    if (train < 0 || train > img.count - eval)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "%" PRId64 " train + %" PRId64 " eval rows: the files have %" PRId64
                         " images", train < 0 ? 0 : train, eval, img.count);
    if (st == ERASE_OK && o->progress) {
        fprintf(o->progress, "erase-convert: %s: %" PRId64 " images of %" PRId64 " x %" PRId64 " read; writing %"
                PRId64 " to %s/train, %" PRId64 " to %s/eval\n", images_path, img.count, img.rows, img.cols, train,
                o->out_dir, eval, o->out_dir);
        fflush(o->progress);
    }
    char train_dir[4096], eval_dir[4096], sources[8192];
    snprintf(train_dir, sizeof train_dir, "%s/train", o->out_dir);
    snprintf(eval_dir, sizeof eval_dir, "%s/eval", o->out_dir);
    snprintf(sources, sizeof sources, "%s\n%s", images_path, labels_path);
    int made_out = 0;
    if (st == ERASE_OK) {
        made_out = mkdir(o->out_dir, 0777) == 0;
        if (!made_out && errno != EEXIST)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the directory: %s", o->out_dir, strerror(errno));
    }
    erase_cls_dataset_writer_t *wt = NULL, *we = NULL;
    int64_t f = img.rows * img.cols;
    float *buf = st == ERASE_OK ? malloc(sizeof *buf * (size_t)(BLOCK_ROWS * f)) : NULL;
    if (st == ERASE_OK && !buf)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for the conversion buffer");
    if (st == ERASE_OK)
        st = erase_cls_dataset_writer_open(train_dir, f, o->classes, o->shard_rows, &o->write, sources, o->force, &wt);
    if (st == ERASE_OK && eval > 0)
        st = erase_cls_dataset_writer_open(eval_dir, f, o->classes, o->shard_rows, &o->write, sources, o->force, &we);
    if (st == ERASE_OK)
        st = write_part(wt, &img, &lab, 0, train, buf, o);
    if (st == ERASE_OK && we)
        st = write_part(we, &img, &lab, train, eval, buf, o);
    if (st == ERASE_OK && o->cancel && *o->cancel)
        st = ERASE_ERROR(ERASE_ERR_STATE, "interrupted");
    if (st == ERASE_OK && train == 0)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: no rows to write", train_dir);
    struct stat sb;
    int eval_existed = stat(eval_dir, &sb) == 0, eval_committed = 0;
    if (st == ERASE_OK && we) { /* the eval part first: OUT/train's index is the last file written */
        st = erase_cls_dataset_writer_commit(we);
        eval_committed = st == ERASE_OK;
    }
    if (st == ERASE_OK)
        st = erase_cls_dataset_writer_commit(wt);
    if (wt) {
        s->train_rows = erase_cls_dataset_writer_rows(wt);
        s->train_shards = erase_cls_dataset_writer_shards(wt);
    }
    if (we) {
        s->eval_rows = erase_cls_dataset_writer_rows(we);
        s->eval_shards = erase_cls_dataset_writer_shards(we);
    }
    for (int c = 0; c < o->classes; c++) {
        s->train_counts[c] = wt ? erase_cls_dataset_writer_class_rows(wt, c) : 0;
        s->eval_counts[c] = we ? erase_cls_dataset_writer_class_rows(we, c) : 0;
    }
    if (st != ERASE_OK) {
        erase_error_trail(__FILE__, __LINE__);
        if (eval_committed) { /* the train part failed after it: the eval part goes too */
            erase_status_t gone = erase_dataset_remove(eval_dir);
            (void)gone;
            if (!eval_existed)
                rmdir(eval_dir);
        }
    }
    erase_cls_dataset_writer_free(we);
    erase_cls_dataset_writer_free(wt);
    if (st == ERASE_OK)
        s->bytes = dataset_bytes(train_dir, s->train_shards) + dataset_bytes(eval_dir, s->eval_shards);
    else if (made_out)
        rmdir(o->out_dir);
    free(buf);
    erase_idx_free(&img);
    erase_idx_free(&lab);
    s->seconds = erase_now_s() - t0;
    return st;
}

static void print_counts(FILE *out, const char *what, int64_t rows, const int64_t *counts, int classes)
{
    fprintf(out, "  %-5s %7" PRId64 " rows, per class:", what, rows);
    for (int c = 0; c < classes; c++)
        fprintf(out, " %d:%" PRId64, c, counts[c]);
    fprintf(out, "\n");
}

void erase_mnist_convert_print(const erase_mnist_convert_summary_t *s, FILE *out)
{
    int64_t rows = s->train_rows + s->eval_rows;
    fprintf(out, "converted %" PRId64 " of %" PRId64 " images of %" PRId64 " x %" PRId64 " in %.2f s: %.0f rows/s\n",
            rows, s->images, s->rows, s->cols, s->seconds, s->seconds > 0 ? (double)rows / s->seconds : 0.0);
    print_counts(out, "train", s->train_rows, s->train_counts, s->classes);
    if (s->eval_rows)
        print_counts(out, "eval", s->eval_rows, s->eval_counts, s->classes);
    fprintf(out, "shards: %d train, %d eval; %.1f MB (%.0f bytes/row)\n", s->train_shards, s->eval_shards,
            (double)s->bytes / 1e6, rows ? (double)s->bytes / (double)rows : 0.0);
}

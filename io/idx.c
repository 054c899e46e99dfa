#include "io/idx.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/core/fs.h"

/* zlib's message without the "path: " it puts in front. */
static const char *gz_reason(const char *path, const char *msg)
{
    size_t n = strlen(path);
    return strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

/* Read up to `n` bytes; returns the bytes read, or -1 with the error set. */
static int64_t read_all(gzFile gz, const char *path, uint8_t *buf, int64_t n)
{
    int64_t got = 0;
    while (got < n) {
        int64_t want = n - got > (1 << 30) ? (1 << 30) : n - got;
        int k = gzread(gz, buf + got, (unsigned)want);
        if (k < 0) {
            int code;
            const char *msg = gzerror(gz, &code);
            ERASE_ERROR(ERASE_ERR_IO, "%s: gzip: %s", path, code == Z_ERRNO ? strerror(errno) : gz_reason(path, msg));
            return -1;
        }
        if (k == 0)
            break;
        got += k;
    }
    return got;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

erase_status_t erase_idx_read(const char *path, uint32_t want_magic, erase_idx_t *out)
{
    memset(out, 0, sizeof *out);
    int images = want_magic == ERASE_IDX_IMAGES_MAGIC;
    if (!images && want_magic != ERASE_IDX_LABELS_MAGIC)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: IDX magic 0x%08" PRIx32 " is not one erase reads", path,
                           want_magic);
    const char *what = images ? "images" : "labels";
    int64_t header = images ? 16 : 8;
    ERASE_CHECK(erase_file_check_regular(path)); /* gzopen would wait on a FIFO */
    errno = 0;
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
    gzbuffer(gz, 1 << 18);
    erase_status_t st = ERASE_OK;
    uint8_t h[16];
    int64_t got = read_all(gz, path, h, 4);
    if (got >= 0 && got < 4) {
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: short file: %" PRId64 " bytes, expected a %" PRId64 "-byte header",
                         path, got, header);
        goto done;
    }
    if (got < 0) {
        st = ERASE_ERR_IO;
        goto done;
    }
    uint32_t magic = be32(h);
    if (magic != want_magic) {
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: not an IDX %s file: magic 0x%08" PRIx32 ", expected 0x%08" PRIx32 " (%s)",
                         path, images ? "image" : "label", magic, want_magic,
                         images ? "uint8, 3 dimensions" : "uint8, 1 dimension");
        goto done;
    }
    int64_t more = read_all(gz, path, h + 4, header - 4);
    if (more < 0) {
        st = ERASE_ERR_IO;
        goto done;
    }
    if (more < header - 4) {
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: short file: %" PRId64 " bytes, expected a %" PRId64 "-byte header",
                         path, 4 + more, header);
        goto done;
    }
    out->count = be32(h + 4);
    out->rows = images ? be32(h + 8) : 1;
    out->cols = images ? be32(h + 12) : 1;
    if (out->rows < 1 || out->cols < 1) {
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: images of %" PRId64 " x %" PRId64 " pixels: expected at least 1 x 1",
                         path, out->rows, out->cols);
        goto done;
    }
    int64_t item, bytes;
    if (__builtin_mul_overflow(out->rows, out->cols, &item) || __builtin_mul_overflow(item, out->count, &bytes) ||
        (uint64_t)bytes > SIZE_MAX / 2) {
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: the header announces %" PRId64 " %s of %" PRId64 " x %" PRId64
                         " bytes: too large", path, out->count, what, out->rows, out->cols);
        goto done;
    }
    /* the buffer grows with what arrives, so that a header promising more
     * than the file holds gives "short file", not a huge allocation */
    got = 0;
    for (int64_t cap = 0; got == cap && cap < bytes;) {
        int64_t step = cap > (1 << 24) ? cap : (1 << 24); /* 16 MiB, then doubling */
        int64_t next = bytes - cap < step ? bytes : cap + step;
        uint8_t *p = realloc(out->data, (size_t)next);
        if (!p) {
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for %" PRId64 " bytes of %s", path, next, what);
            goto done;
        }
        out->data = p;
        int64_t k = read_all(gz, path, out->data + cap, next - cap);
        if (k < 0) {
            st = ERASE_ERR_IO;
            goto done;
        }
        got = cap + k;
        cap = next;
    }
    if (!out->data && !(out->data = malloc(1))) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (got < bytes) {
        int code;
        const char *msg = gzerror(gz, &code);
        char note[256] = "";
        if (code != Z_OK) /* Z_BUF_ERROR: a truncated gzip stream */
            snprintf(note, sizeof note, "; gzip: %s", gz_reason(path, msg));
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: short file: %" PRId64 " of %" PRId64 " %s (%" PRId64 " of %" PRId64
                         " bytes after the %" PRId64 "-byte header)%s",
                         path, got / item, out->count, what, got, bytes, header, note);
        goto done;
    }
    uint8_t extra[64];
    got = read_all(gz, path, extra, sizeof extra);
    if (got < 0) {
        st = ERASE_ERR_IO;
        goto done;
    }
    int code;
    const char *msg = gzerror(gz, &code);
    if (got == 0 && code != Z_OK) { /* Z_BUF_ERROR: the stream ends without its trailer */
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: gzip: %s (the file is truncated?)", path, gz_reason(path, msg));
        goto done;
    }
    if (got > 0) {
        int64_t total = got;
        while ((got = read_all(gz, path, extra, sizeof extra)) > 0)
            total += got;
        if (got < 0) {
            st = ERASE_ERR_IO;
            goto done;
        }
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: %" PRId64 " bytes after the %" PRId64 " %s the header announces",
                         path, total, out->count, what);
    }
done:
    gzclose(gz);
    if (st != ERASE_OK) {
        erase_idx_free(out);
        erase_error_trail(__FILE__, __LINE__);
    }
    return st;
}

void erase_idx_free(erase_idx_t *idx)
{
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

erase_status_t erase_idx_read_pair(const char *images_path, const char *labels_path, int classes,
                                   erase_idx_t *images, erase_idx_t *labels)
{
    memset(images, 0, sizeof *images);
    memset(labels, 0, sizeof *labels);
    if (classes < 1 || classes > 256)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: %d classes: expected 1..256", labels_path, classes);
    ERASE_CHECK(erase_idx_read(images_path, ERASE_IDX_IMAGES_MAGIC, images));
    erase_status_t st = erase_idx_read(labels_path, ERASE_IDX_LABELS_MAGIC, labels);
    if (st == ERASE_OK && images->count != labels->count)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s has %" PRId64 " images but %s has %" PRId64 " labels", images_path,
                         images->count, labels_path, labels->count);
    for (int64_t i = 0; st == ERASE_OK && i < labels->count; i++)
        if (labels->data[i] >= classes)
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s: label %" PRId64 " (0-based) is %u, expected 0..%d", labels_path, i,
                             (unsigned)labels->data[i], classes - 1);
    if (st != ERASE_OK) {
        erase_idx_free(images);
        erase_idx_free(labels);
        erase_error_trail(__FILE__, __LINE__);
    }
    return st;
}

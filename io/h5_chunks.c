#include "io/h5_chunks.h"

#include "config.h"
#include "io/h5_util.h"
#include "lib/core/checked.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#if defined(HAVE_LIBDEFLATE) && H5_VERSION_GE(1, 10, 2)
#define ERASE_H5_CHUNKS 1
#else
#define ERASE_H5_CHUNKS 0
#endif

struct erase_h5_chunks {
    hid_t d;
    const char *path;
    const erase_h5_rows_spec_t *spec;
    int shuffle;
    size_t row_bytes, chunk_bytes;
    int64_t chunk_rows, rows;   /* rows appended; rows % chunk_rows of them are buffered */
    uint8_t *chunk, *shuffled;  /* [chunk_bytes] each (shuffled: NULL without shuffle) */
    uint8_t *out;               /* [out_bytes]: the compressed chunk and its checksum */
    size_t out_bytes;
#if ERASE_H5_CHUNKS
    struct libdeflate_compressor *compressor;
#endif
};

int erase_h5_chunks_available(void)
{
    uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return ERASE_H5_CHUNKS && first == 1;
}

uint32_t erase_h5_fletcher32(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t sum1 = 0, sum2 = 0;
    for (size_t words = len / 2; words > 0;) {
        size_t block = words > 360 ? 360 : words; /* no overflow of the 32-bit sums */
        words -= block;
        for (size_t k = 0; k < block; k++, p += 2) {
            sum1 += (uint32_t)p[0] << 8 | p[1];
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if (len % 2) {
        sum1 += (uint32_t)p[0] << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    return sum2 << 16 | sum1;
}

void erase_h5_shuffle(void *dst, const void *src, size_t elements, size_t size)
{
    uint8_t *out = dst;
    const uint8_t *in = src;
    for (size_t j = 0; j < size; j++)
        for (size_t i = 0; i < elements; i++)
            out[j * elements + i] = in[i * size + j];
}

int64_t erase_h5_chunks_rows(const erase_h5_chunks_t *c) { return c->rows; }

void erase_h5_chunks_free(erase_h5_chunks_t *c)
{
    if (!c)
        return;
#if ERASE_H5_CHUNKS
    libdeflate_free_compressor(c->compressor);
#endif
    free(c->chunk);
    free(c->shuffled);
    free(c->out);
    free(c);
}

erase_status_t erase_h5_chunks_open(hid_t d, const char *path, const erase_h5_rows_spec_t *spec,
                                    const erase_h5_rows_layout_t *layout, int level, erase_h5_chunks_t **out)
{
    *out = NULL;
    if (!erase_h5_chunks_available() || !layout->deflate)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: dataset %s: direct chunk writes need libdeflate, HDF5 >= "
                           "1.10.2, a little-endian host and a deflated dataset", path, spec->name);
    erase_h5_chunks_t *c = calloc(1, sizeof *c);
    size_t row_bytes = 0, chunk_bytes = 0;
    if (!c || !erase_bytes(spec->bytes, spec->cols, 1, &row_bytes) ||
        !erase_bytes(row_bytes, layout->chunk_rows, 1, &chunk_bytes)) {
        free(c);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory for a chunk of %" PRId64 " rows", path,
                           spec->name, layout->chunk_rows);
    }
    c->d = d;
    c->path = path;
    c->spec = spec;
    c->shuffle = layout->shuffle && spec->bytes > 1;
    c->row_bytes = row_bytes;
    c->chunk_bytes = chunk_bytes;
    c->chunk_rows = layout->chunk_rows;
    c->chunk = calloc(1, chunk_bytes);
    c->shuffled = c->shuffle ? malloc(chunk_bytes) : NULL;
    int ok = c->chunk && (!c->shuffle || c->shuffled);
#if ERASE_H5_CHUNKS
    c->compressor = libdeflate_alloc_compressor(level);
    ok = ok && c->compressor;
    if (ok)
        c->out_bytes = libdeflate_zlib_compress_bound(c->compressor, chunk_bytes) + 4; /* + Fletcher-32 */
    ok = ok && c->out_bytes > chunk_bytes && (c->out = malloc(c->out_bytes));
#else
    (void)level;
#endif
    if (!ok) {
        erase_h5_chunks_free(c);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: dataset %s: out of memory for a chunk of %zu bytes", path,
                           spec->name, chunk_bytes);
    }
    *out = c;
    return ERASE_OK;
}

/* Grow the dataset's extent to `rows`. */
static erase_status_t extend(erase_h5_chunks_t *c, int64_t rows, int64_t first)
{
    hsize_t size[2] = { (hsize_t)rows, (hsize_t)c->spec->cols };
    if (H5Dset_extent(c->d, size) >= 0)
        return ERASE_OK;
    char detail[512];
    return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: writing rows [%" PRId64 ", %" PRId64 ") failed: %s", c->path,
                       c->spec->name, first, rows, erase_h5_detail(detail, sizeof detail));
}

/* Filter the buffered chunk (its unused rows zero) and write it as the
 * chunk that starts at row `first`. */
static erase_status_t write_chunk(erase_h5_chunks_t *c, int64_t first)
{
#if ERASE_H5_CHUNKS
    const uint8_t *src = c->chunk;
    if (c->shuffle) {
        erase_h5_shuffle(c->shuffled, c->chunk, c->chunk_bytes / c->spec->bytes, c->spec->bytes);
        src = c->shuffled;
    }
    size_t n = libdeflate_zlib_compress(c->compressor, src, c->chunk_bytes, c->out, c->out_bytes - 4);
    uint32_t sum = n ? erase_h5_fletcher32(c->out, n) : 0;
    for (int k = 0; k < 4; k++) /* little-endian, as UINT32ENCODE */
        c->out[n + (size_t)k] = (uint8_t)(sum >> (8 * k));
    hsize_t offset[2] = { (hsize_t)first, 0 };
    if (n && H5Dwrite_chunk(c->d, H5P_DEFAULT, 0, offset, n + 4, c->out) >= 0)
        return ERASE_OK;
    char detail[512];
    erase_h5_detail(detail, sizeof detail);
    return ERASE_ERROR(ERASE_ERR_IO, "%s: dataset %s: writing rows [%" PRId64 ", %" PRId64 ") failed: %s", c->path,
                       c->spec->name, first, first + c->chunk_rows,
                       n ? detail : "libdeflate cannot compress the chunk");
#else
    (void)first;
    return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s: dataset %s: no direct chunk writes in this build", c->path,
                       c->spec->name);
#endif
}

erase_status_t erase_h5_chunks_append(erase_h5_chunks_t *c, int64_t n, const void *data)
{
    if (n <= 0)
        return ERASE_OK;
    ERASE_CHECK(extend(c, c->rows + n, c->rows));
    const uint8_t *in = data;
    while (n > 0) {
        int64_t at = c->rows % c->chunk_rows, k = c->chunk_rows - at < n ? c->chunk_rows - at : n;
        memcpy(c->chunk + (size_t)at * c->row_bytes, in, (size_t)k * c->row_bytes);
        in += (size_t)k * c->row_bytes;
        c->rows += k;
        n -= k;
        if (at + k == c->chunk_rows)
            ERASE_CHECK(write_chunk(c, c->rows - c->chunk_rows));
    }
    return ERASE_OK;
}

erase_status_t erase_h5_chunks_flush(erase_h5_chunks_t *c)
{
    int64_t at = c->rows % c->chunk_rows;
    if (at == 0)
        return ERASE_OK;
    memset(c->chunk + (size_t)at * c->row_bytes, 0, c->chunk_bytes - (size_t)at * c->row_bytes);
    return write_chunk(c, c->rows - at);
}

/*
 * A program built against an installed erase (tests/apps/test-install.sh):
 * compiled with `pkg-config --cflags --libs erase` only, it opens the CPU
 * device of the installed liberase.a, multiplies two matrices on a stream
 * (erase_sgemm: A 2x3 times B 3x2, row-major) and prints C's four values,
 * which the test compares with the product worked by hand: 58 64 139 154.
 * Exit status: 0, or 1 with the library's message on stderr.
 */
#include "lib/core/status.h"
#include "lib/device/device.h"

#include <stdio.h>
#include <string.h>

static int failed(const char *what, erase_status_t st)
{
    fprintf(stderr, "install-check: %s: %s (%s)\n", what, erase_status_name(st), erase_error_message());
    return 1;
}

int main(void)
{
    static const float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 7, 8, 9, 10, 11, 12 };
    erase_device_options_t options = erase_device_options_default();
    erase_device_t *dev;
    erase_stream_t *stream;
    float *da, *db, *dc, c[4];
    erase_status_t st = erase_device_open(&options, &dev);
    if (st != ERASE_OK)
        return failed("erase_device_open", st);
    if ((st = erase_stream_create(dev, &stream)) != ERASE_OK)
        return failed("erase_stream_create", st);
    if ((st = erase_malloc(dev, sizeof a, (void **)&da)) != ERASE_OK ||
        (st = erase_malloc(dev, sizeof b, (void **)&db)) != ERASE_OK ||
        (st = erase_malloc(dev, sizeof c, (void **)&dc)) != ERASE_OK)
        return failed("erase_malloc", st);
    if ((st = erase_memcpy_sync(dev, da, a, sizeof a)) != ERASE_OK ||
        (st = erase_memcpy_sync(dev, db, b, sizeof b)) != ERASE_OK)
        return failed("erase_memcpy_sync", st);
    if ((st = erase_sgemm(stream, ERASE_NO_TRANS, ERASE_NO_TRANS, 2, 2, 3, 1.0f, da, 3, db, 2, 0.0f, dc, 2)) !=
            ERASE_OK ||
        (st = erase_stream_synchronize(stream)) != ERASE_OK)
        return failed("erase_sgemm", st);
    if ((st = erase_memcpy_sync(dev, c, dc, sizeof c)) != ERASE_OK)
        return failed("erase_memcpy_sync", st);
    printf("%g %g %g %g\n", c[0], c[1], c[2], c[3]);
    erase_free(dev, da);
    erase_free(dev, db);
    erase_free(dev, dc);
    erase_stream_destroy(stream);
    erase_device_close(dev);
    return 0;
}

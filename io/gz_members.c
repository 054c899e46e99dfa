#include "io/gz_members.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IN_BYTES (1 << 18)
#define OUT_BYTES (1 << 18)

int erase_gz_locate_damage(const char *path, int64_t *member, int64_t *offset, char *why, size_t why_size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char *in = malloc(IN_BYTES), *out = malloc(OUT_BYTES);
    z_stream z;
    memset(&z, 0, sizeof z);
    int result = -1;
    if (!in || !out || inflateInit2(&z, 15 + 16) != Z_OK) /* 16: gzip wrapper */
        goto done;
    int64_t fed = 0;      /* bytes of the file given to zlib */
    int64_t start = 0;    /* where the current member starts */
    int64_t index = 0;    /* its number */
    int in_member = 0;    /* bytes of it consumed */
    for (;;) {
        if (z.avail_in == 0) {
            size_t k = fread(in, 1, IN_BYTES, f);
            if (k == 0) {
                result = ferror(f) ? -1 : in_member ? 1 : 0;
                if (result == 1)
                    snprintf(why, why_size, "unexpected end of file");
                break;
            }
            z.next_in = in;
            z.avail_in = (uInt)k;
            fed += (int64_t)k;
        }
        z.next_out = out;
        z.avail_out = OUT_BYTES;
        int rc = inflate(&z, Z_NO_FLUSH);
        in_member = 1;
        if (rc == Z_STREAM_END) {
            start = fed - (int64_t)z.avail_in;
            index++;
            in_member = 0;
            inflateReset(&z);
            continue;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(why, why_size, "%s", z.msg ? z.msg : "inflate failed");
            result = 1;
            break;
        }
    }
    if (result == 1) {
        *member = index;
        *offset = start;
    }
    inflateEnd(&z);
done:
    free(in);
    free(out);
    fclose(f);
    return result;
}

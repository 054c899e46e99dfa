/*
 * ckpt-tool: what the checkpoint tests need beyond erase-train.
 *
 *   ckpt-tool compare A B        byte-exact comparison of two checkpoints:
 *                                every /params and /optim tensor (names,
 *                                shapes, bytes), the optimizer clock, step,
 *                                samples seen and the data cursor. Prints
 *                                what it compares and every difference.
 *   ckpt-tool compare A B1 B2 ...  A against the union of B1 .. Bn (a
 *                                one-rank checkpoint against a pipeline
 *                                checkpoint's stage files): every tensor
 *                                of A in exactly one Bi, bitwise equal,
 *                                none other; each Bi's step, cursor and
 *                                clock equal to A's.
 *   ckpt-tool compare --within REL A B  the same, but each /params and
 *                                /optim tensor need only be within REL of
 *                                B's relative to its largest magnitude:
 *                                max |a - b| <= REL x max(|a|, |b|) over
 *                                the tensor (runs whose summation order
 *                                differs); prints each tensor's worst
 *                                relative difference that is not 0
 *   ckpt-tool flip FILE DATASET  flip one bit in the middle of DATASET's
 *                                bytes in the file (a damaged checkpoint);
 *                                of a chunked one (a shard), in the middle
 *                                of its middle chunk;
 *                                of a GROUP: a bit of its object header
 *                                (HDF5 cannot look names up in it)
 *   ckpt-tool unlink FILE DATASET  remove DATASET (a dataset gone missing)
 *   ckpt-tool set FILE [--fix-sum] OBJECT/ATTR=VALUE...  overwrite
 *                                attributes of /meta or /optim (e.g.
 *                                /meta/pp_size=2: another layout;
 *                                /optim/lr=nan); --fix-sum also rewrites
 *                                meta_fnv1a64 to match (the file must be
 *                                valid before); OBJECT/ATTR@TEXTFILE sets
 *                                a string attribute to the file's text
 *                                (/meta/model@forged.cfg); OBJECT/ATTR=
 *                                (no value) deletes an optional attribute
 *                                (/meta/data_vocab=: an older erase's file)
 *   ckpt-tool rows-equal A B TENSOR  print how many rows of TENSOR
 *                                ("params/input/emb/0") are bitwise equal in A and B
 *
 * Exit status: 0 equal / done, 1 different, 2 error (message on stderr).
 */
#include "io/checkpoint.h"
#include "io/h5_util.h"
#include "tests/ckpt/ckpt_util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tensor named like x in exactly one of the n checkpoints b (*where: its
 * index), or NULL (*where: -1 none, -2 more than one). */
static const erase_ckpt_tensor_t *find_in(erase_ckpt_t *const *b, int n, erase_ckpt_group_t g, const char *name,
                                          int *where)
{
    const erase_ckpt_tensor_t *y = NULL;
    *where = -1;
    for (int i = 0; i < n; i++) {
        const erase_ckpt_tensor_t *t = erase_ckpt_find(b[i], g, name);
        if (t && y) {
            *where = -2;
            return NULL;
        }
        if (t) {
            y = t;
            *where = i;
        }
    }
    return y;
}

/* The largest |x - y| of k elements relative to the largest |x| or |y|
 * (0 when both are all zeros). */
static double relative_difference(const float *x, const float *y, size_t k)
{
    double diff = 0, scale = 0;
    for (size_t e = 0; e < k; e++) {
        double d = fabs((double)x[e] - (double)y[e]), m = fmax(fabs((double)x[e]), fabs((double)y[e]));
        diff = d > diff || d != d ? d : diff;
        scale = m > scale ? m : scale;
    }
    return diff == 0 ? 0 : diff / scale;
}

/* Group g of a against the union of the n checkpoints b: every tensor of
 * a in exactly one of them with its shape and bytes (within > 0: within
 * that relative difference), and no other. */
static int compare_group(const erase_ckpt_t *a, erase_ckpt_t *const *b, int n, erase_ckpt_group_t g,
                         const char *name, double within)
{
    int diffs = 0, same = 0, where;
    int64_t bytes = 0;
    for (int i = 0; i < erase_ckpt_count(a, g); i++) {
        const erase_ckpt_tensor_t *x = erase_ckpt_tensor(a, g, i), *y = find_in(b, n, g, x->name, &where);
        if (!y) {
            printf("  %s/%s: %s\n", name, x->name, where == -2 ? "in more than one of the others" : "only in the first");
            diffs++;
            continue;
        }
        if (x->ndim != y->ndim || x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1]) {
            printf("  %s/%s: shapes differ\n", name, x->name);
            diffs++;
            continue;
        }
        size_t k = (size_t)erase_ckpt_tensor_numel(x);
        double rel = within > 0 ? relative_difference(x->data, y->data, k) : 0;
        if (within > 0 && rel > 0)
            printf("  %s/%s: relative difference %.3g%s\n", name, x->name, rel, rel <= within ? "" : ", too large");
        if (within > 0 ? !(rel <= within) : memcmp(x->data, y->data, k * sizeof(float)) != 0) {
            size_t e = 0;
            while (e < k && !memcmp(&x->data[e], &y->data[e], sizeof(float)))
                e++;
            printf("  %s/%s: differs first at element %zu: %.9g vs %.9g\n", name, x->name, e, (double)x->data[e],
                   (double)y->data[e]);
            diffs++;
            continue;
        }
        same++;
        bytes += (int64_t)(k * sizeof(float));
    }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < erase_ckpt_count(b[j], g); i++)
            if (!erase_ckpt_find(a, g, erase_ckpt_tensor(b[j], g, i)->name)) {
                printf("  %s/%s: only in the %s\n", name, erase_ckpt_tensor(b[j], g, i)->name,
                       n == 1 ? "second" : "others");
                diffs++;
            }
    if (within > 0)
        printf("  /%s: %d tensors within %g (%" PRId64 " bytes), %d different\n", name, same, within, bytes, diffs);
    else
        printf("  /%s: %d tensors bitwise equal (%" PRId64 " bytes), %d different\n", name, same, bytes, diffs);
    return diffs;
}

/* compare A B1 .. Bn: A's tensors against the union of the B's (n = 1:
 * two checkpoints; n > 1: a one-rank checkpoint against a pipeline's
 * stage files), and A's step, cursor and clock against each B's. */
static int compare(const char *pa, char **pb, int n, double within)
{
    erase_ckpt_t *a = NULL, *b[64] = { NULL };
    int rc = 0;
    if (n > 64) {
        fprintf(stderr, "ckpt-tool compare: %d checkpoints after the first: at most 64\n", n);
        return 2;
    }
    if (erase_ckpt_open(pa, &a) != ERASE_OK)
        rc = 2;
    for (int i = 0; i < n && !rc; i++)
        if (erase_ckpt_open(pb[i], &b[i]) != ERASE_OK)
            rc = 2;
    if (rc) {
        fprintf(stderr, "ckpt-tool compare: %s\n", erase_error_message());
    } else {
        printf("compare %s and", pa);
        for (int i = 0; i < n; i++)
            printf(" %s", pb[i]);
        printf("\n");
        int diffs = compare_group(a, b, n, ERASE_CKPT_PARAMS, "params", within) +
                    compare_group(a, b, n, ERASE_CKPT_OPTIM, "optim", within);
        const erase_ckpt_meta_t *x = erase_ckpt_meta(a);
        for (int i = 0; i < n; i++) {
            const erase_ckpt_meta_t *y = erase_ckpt_meta(b[i]);
            if (n > 1)
                printf("  %s:\n", pb[i]);
#define FIELD(f, fmt, cast)                                                                          \
    do {                                                                                             \
        int eq = x->f == y->f;                                                                       \
        printf("  %-14s " fmt " %s " fmt "\n", #f, (cast)x->f, eq ? "==" : "!=", (cast)y->f);        \
        diffs += !eq;                                                                                \
    } while (0)
            FIELD(step, "%lld", long long);
            FIELD(samples_seen, "%lld", long long);
            FIELD(epoch, "%lld", long long);
            FIELD(epoch_samples, "%lld", long long);
            FIELD(clock_step, "%lld", long long);
#undef FIELD
            int eq = !memcmp(&x->clock_lr, &y->clock_lr, sizeof x->clock_lr);
            printf("  %-14s %.9g %s %.9g\n", "clock_lr", (double)x->clock_lr, eq ? "==" : "!=", (double)y->clock_lr);
            diffs += !eq;
        }
        printf("%s\n", diffs ? "DIFFERENT" : "IDENTICAL");
        rc = diffs ? 1 : 0;
    }
    erase_ckpt_close(a);
    for (int i = 0; i < n; i++)
        erase_ckpt_close(b[i]);
    return rc;
}

static int damage(const char *path, const char *dataset, int flip)
{
    erase_h5_enter();
    hid_t f = H5Fopen(path, flip ? H5F_ACC_RDONLY : H5F_ACC_RDWR, H5P_DEFAULT);
    haddr_t off = HADDR_UNDEF;
    hsize_t size = 0;
    int ok = f >= 0;
    H5O_info_t info;
    if (ok && flip && H5Oget_info_by_name2(f, dataset, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
        info.type == H5O_TYPE_GROUP) { /* a byte of the group's object header (checksummed) */
        off = info.addr;
        size = 32;
    } else if (ok && flip) {
        hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
        if (d >= 0) {
            off = H5Dget_offset(d);
            size = H5Dget_storage_size(d);
            hid_t space = H5Dget_space(d);
            hsize_t chunks = 0;
            if (off == HADDR_UNDEF && space >= 0 && H5Dget_num_chunks(d, space, &chunks) >= 0 && chunks > 0) {
                /* chunked (a shard): the middle chunk's stored bytes */
                unsigned mask;
                hsize_t where[H5S_MAX_RANK];
                if (H5Dget_chunk_info(d, space, chunks / 2, where, &mask, &off, &size) < 0)
                    off = HADDR_UNDEF;
            }
            if (space >= 0)
                H5Sclose(space);
            H5Dclose(d);
        }
        ok = off != HADDR_UNDEF && size > 0;
    } else if (ok) {
        ok = H5Ldelete(f, dataset, H5P_DEFAULT) >= 0;
    }
    if (f >= 0)
        H5Fclose(f);
    erase_h5_leave();
    if (!ok) {
        fprintf(stderr, "ckpt-tool: %s: cannot %s %s\n", path, flip ? "locate" : "remove", dataset);
        return 2;
    }
    if (flip) {
        int fd = open(path, O_RDWR);
        unsigned char c;
        off_t at = (off_t)(off + size / 2);
        if (fd < 0 || pread(fd, &c, 1, at) != 1) {
            fprintf(stderr, "ckpt-tool: %s: cannot read byte %lld\n", path, (long long)at);
            return 2;
        }
        c ^= 0x10;
        int rc = pwrite(fd, &c, 1, at) == 1 ? 0 : 2;
        close(fd);
        printf("flipped a bit of %s at byte %lld of %s\n", dataset, (long long)at, path);
        return rc;
    }
    printf("removed %s from %s\n", dataset, path);
    return 0;
}

/* set FILE [--fix-sum] OBJECT/ATTR=VALUE... (argv from FILE on) */
static int set_attrs(int argc, char **argv)
{
    const char *path = argv[0];
    int fix = argc > 1 && !strcmp(argv[1], "--fix-sum"), n = 0;
    ckpt_attr_t attrs[16] = { { 0 } };
    char objects[16][16], texts[16][4096];
    for (int i = 1 + fix; i < argc; i++, n++) {
        char *slash = strrchr(argv[i], '/'), *eq = strchr(argv[i], '='), *end = NULL;
        char *at = strchr(argv[i], '@');
        if (at && (!eq || eq > at)) { /* OBJECT/ATTR@FILE: the last '/' before '@' */
            *at = '\0';
            slash = strrchr(argv[i], '/');
            *at = '@';
        } else {
            at = NULL;
        }
        if (at && slash && n < 16 && slash != argv[i] && (size_t)(slash - argv[i]) < 16) { /* a string from a file */
            FILE *f = fopen(at + 1, "r");
            size_t len = f ? fread(texts[n], 1, sizeof texts[n] - 1, f) : 0;
            if (f)
                fclose(f);
            if (!f || len == 0) {
                fprintf(stderr, "ckpt-tool set: %s: cannot read '%s'\n", argv[i], at + 1);
                return 2;
            }
            texts[n][len] = '\0';
            snprintf(objects[n], sizeof objects[n], "%.*s", (int)(slash - argv[i]), argv[i]);
            *at = '\0';
            attrs[n] = (ckpt_attr_t){ .object = objects[n], .attr = slash + 1, .text = texts[n] };
            continue;
        }
        if (n == 16 || !slash || !eq || eq < slash || slash == argv[i] || (size_t)(slash - argv[i]) >= 16) {
            fprintf(stderr, "ckpt-tool set: '%s': expected /meta/ATTR=VALUE, /optim/ATTR=VALUE or /meta/ATTR@TEXTFILE (at most 16)\n",
                    argv[i]);
            return 2;
        }
        snprintf(objects[n], sizeof objects[n], "%.*s", (int)(slash - argv[i]), argv[i]);
        *eq = '\0';
        attrs[n] = (ckpt_attr_t){ .object = objects[n], .attr = slash + 1 };
        if (!eq[1]) {
            attrs[n].remove = 1;
            continue;
        }
        if (!strcmp(attrs[n].attr, "lr"))
            attrs[n].lr = strtof(eq + 1, &end);
        else
            attrs[n].v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || *end) {
            fprintf(stderr, "ckpt-tool set: %s: bad value '%s'\n", argv[i], eq + 1);
            return 2;
        }
    }
    char why[4096];
    if (ckpt_set_attrs(path, attrs, n, fix, why, sizeof why) != 0) {
        fprintf(stderr, "ckpt-tool set: %s\n", why);
        return 2;
    }
    for (int i = 0; i < n; i++)
        printf("set %s %s in %s%s\n", attrs[i].object, attrs[i].attr, path, fix ? " (meta_fnv1a64 fixed up)" : "");
    return 0;
}

static int rows_equal(const char *pa, const char *pb, const char *tensor)
{
    erase_ckpt_t *a = NULL, *b = NULL;
    if (erase_ckpt_open(pa, &a) != ERASE_OK || erase_ckpt_open(pb, &b) != ERASE_OK) {
        fprintf(stderr, "ckpt-tool rows-equal: %s\n", erase_error_message());
        erase_ckpt_close(a);
        return 2;
    }
    erase_ckpt_group_t g = !strncmp(tensor, "optim/", 6) ? ERASE_CKPT_OPTIM : ERASE_CKPT_PARAMS;
    const char *name = strchr(tensor, '/') ? strchr(tensor, '/') + 1 : tensor;
    const erase_ckpt_tensor_t *x = erase_ckpt_find(a, g, name), *y = erase_ckpt_find(b, g, name);
    int rc = 2;
    if (x && y && x->dims[0] == y->dims[0] && x->dims[1] == y->dims[1]) {
        int64_t same = 0, cols = x->ndim == 2 ? x->dims[1] : 1;
        for (int64_t r = 0; r < x->dims[0]; r++)
            same += !memcmp(x->data + r * cols, y->data + r * cols, sizeof(float) * (size_t)cols);
        printf("%lld of %lld rows\n", (long long)same, (long long)x->dims[0]);
        rc = 0;
    } else {
        fprintf(stderr, "ckpt-tool rows-equal: %s is not in both with one shape\n", tensor);
    }
    erase_ckpt_close(a);
    erase_ckpt_close(b);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "set"))
        return set_attrs(argc - 2, argv + 2);
    if (argc == 5 && !strcmp(argv[1], "rows-equal"))
        return rows_equal(argv[2], argv[3], argv[4]);
    if (argc == 6 && !strcmp(argv[1], "compare") && !strcmp(argv[2], "--within")) {
        char *end;
        double within = strtod(argv[3], &end);
        if (*end || !(within > 0)) {
            fprintf(stderr, "ckpt-tool compare --within %s: expected a relative difference > 0\n", argv[3]);
            return 2;
        }
        return compare(argv[4], argv + 5, 1, within);
    }
    if (argc >= 4 && !strcmp(argv[1], "compare"))
        return compare(argv[2], argv + 3, argc - 3, 0);
    if (argc == 4 && (!strcmp(argv[1], "flip") || !strcmp(argv[1], "unlink")))
        return damage(argv[2], argv[3], !strcmp(argv[1], "flip"));
    fprintf(stderr, "usage: ckpt-tool compare [--within REL] A B... | flip FILE DATASET | unlink FILE DATASET |\n"
                    "       set FILE [--fix-sum] OBJECT/ATTR=VALUE... | rows-equal A B TENSOR\n");
    return 2;
}

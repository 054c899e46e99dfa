#include "tests/io/io_util.h"

#include "io/ctr_index.h"
#include "io/ctr_shard.h"
#include "lib/core/fs.h"

#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *io_sample(const char *name)
{
    static char path[8][4096];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 4096, "%s/criteo/%s", ERASE_DATA_DIR, name);
    return p;
}

char *io_scratch_make(const char *tag)
{
    char *dir = malloc(256);
    if (!dir)
        return NULL;
    snprintf(dir, 256, "tmp-%s-XXXXXX", tag);
    if (!mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}


void io_scratch_remove(char *dir)
{
    if (!dir)
        return;
    erase_remove_tree(dir);
    free(dir);
}

const char *io_path(const char *dir, const char *name)
{
    static char path[8][4096];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

int io_count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    size_t k = strlen(suffix);
    while (d && (e = readdir(d))) {
        size_t m = strlen(e->d_name);
        if (m >= k && strcmp(e->d_name + m - k, suffix) == 0 && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

erase_status_t io_rows_load(const char *input, io_rows_t *rows)
{
    memset(rows, 0, sizeof *rows);
    erase_ctr_list_t list;
    const char *in[1] = { input };
    ERASE_CHECK(erase_ctr_list_resolve(in, 1, &list));
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < list.count && st == ERASE_OK; i++) {
        erase_ctr_shard_t *sh;
        st = erase_ctr_shard_open(list.paths[i], &sh);
        if (st != ERASE_OK)
            break;
        int64_t n = erase_ctr_shard_rows(sh), at = rows->n;
        rows->label = realloc(rows->label, (size_t)(at + n) + 1);
        rows->dense = realloc(rows->dense, sizeof(float) * (size_t)(at + n) * 13 + 4);
        rows->sparse = realloc(rows->sparse, sizeof(uint32_t) * (size_t)(at + n) * 26 + 4);
        if (!rows->label || !rows->dense || !rows->sparse)
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory");
        else
            st = erase_ctr_shard_read(sh, 0, n, rows->label + at, rows->dense + at * 13, rows->sparse + at * 26);
        rows->n += n;
        erase_ctr_shard_close(sh);
    }
    erase_ctr_list_free(&list);
    return st;
}

void io_rows_free(io_rows_t *rows)
{
    free(rows->label);
    free(rows->dense);
    free(rows->sparse);
    memset(rows, 0, sizeof *rows);
}

int io_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

int io_first_chunk(const char *path, const char *dataset, uint64_t *addr, uint64_t *size)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f >= 0 ? H5Dopen2(f, dataset, H5P_DEFAULT) : -1;
    hsize_t offset[2] = { 0, 0 }, bytes = 0;
    haddr_t at = 0;
    unsigned mask;
    int rc = d >= 0 && H5Dget_chunk_info_by_coord(d, offset, &mask, &at, &bytes) >= 0 ? 0 : -1;
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    *addr = (uint64_t)at;
    *size = (uint64_t)bytes;
    return rc;
}

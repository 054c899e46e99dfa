#include "io/ctr_index.h"

#include "io/ctr_shard_write.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/core/fs.h"

erase_status_t erase_ctr_index_write(const char *dir, const char *const *names, const int64_t *rows,
                                     int count)
{
    size_t cap = 128, len = 0;
    for (int i = 0; i < count; i++)
        cap += strlen(names[i]) + 24;
    char *text = malloc(cap);
    if (!text)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the index", dir);
    len += (size_t)snprintf(text + len, cap - len,
                            "# erase index: shards in global order, \"FILE ROWS\", "
                            "FILE relative to this directory\n");
    for (int i = 0; i < count; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s %" PRId64 "\n", names[i], rows[i]);
    size_t n = strlen(dir) + sizeof ERASE_CTR_INDEX_NAME + 1;
    char *path = malloc(n);
    erase_status_t st = ERASE_OK;
    if (!path) {
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory for the index", dir);
    } else {
        snprintf(path, n, "%s/%s", dir, ERASE_CTR_INDEX_NAME);
        st = erase_write_file_atomic(path, text, len);
    }
    free(path);
    free(text);
    ERASE_CHECK(st);
    return ERASE_OK;
}

/* Append one entry to the list. */
static erase_status_t list_add(erase_ctr_list_t *l, const char *path, int64_t rows)
{
    char **p = realloc(l->paths, sizeof *p * (size_t)(l->count + 1));
    if (p)
        l->paths = p;
    int64_t *r = realloc(l->rows, sizeof *r * (size_t)(l->count + 1));
    if (r)
        l->rows = r;
    char *copy = strdup(path);
    if (!p || !r || !copy) {
        free(copy);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    }
    l->paths[l->count] = copy;
    l->rows[l->count] = rows;
    l->count++;
    return ERASE_OK;
}

/* Show a line of the index in a message: at most 60 bytes, printable. */
static void show(char *out, size_t size, const char *line)
{
    size_t n = 0;
    for (; line[n] && n < 60 && n + 1 < size; n++)
        out[n] = isprint((unsigned char)line[n]) ? line[n] : '?';
    out[n] = '\0';
}

static erase_status_t read_index(const char *dir, erase_ctr_list_t *l)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, ERASE_CTR_INDEX_NAME);
    ERASE_CHECK(erase_file_check_regular(path));
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return ERASE_ERROR(ERASE_ERR_FORMAT,
                               "%s: no %s: not a dataset written by erase-convert (or not complete)", dir,
                               ERASE_CTR_INDEX_NAME);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    char line[4096 + 64];
    int lineno = 0, listed = 0, first = l->count; /* this index's entries: from `first` on */
    erase_status_t st = ERASE_OK;
    while (st == ERASE_OK && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char name[4096], extra[2];
        long long rows;
        if (sscanf(line, "%4095s %lld %1s", name, &rows, extra) != 2 || rows < 0 || strchr(name, '/')) {
            char shown[64];
            show(shown, sizeof shown, line);
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: expected 'FILE ROWS', got '%s'", path, lineno, shown);
            break;
        }
        char shard[8192];
        snprintf(shard, sizeof shard, "%s/%s", dir, name);
        /* a missing shard is named when it is opened */
        struct stat sb;
        const char *kind = stat(shard, &sb) == 0 ? erase_mode_not_regular(sb.st_mode) : NULL;
        if (kind) {
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: %s is %s, expected a regular file", path, lineno, name, kind);
            break;
        }
        for (int i = first; i < l->count; i++)
            if (!strcmp(l->paths[i], shard)) { /* it would be read twice an epoch */
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: %s is listed a second time (a shard is listed once)", path,
                                 lineno, name);
                break;
            }
        if (st != ERASE_OK)
            break;
        st = list_add(l, shard, (int64_t)rows);
        listed++;
    }
    fclose(f);
    ERASE_CHECK(st);
    if (listed == 0)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%s: lists no shards", path);
    return ERASE_OK;
}

/* Where entry j of the list was listed, for messages: the file as given,
 * or "D/NAME (D/index.txt)"; `from`: the first entry of each input. */
static void place(const erase_ctr_list_t *l, int j, const char *const *inputs, const int *from, int n, char *out,
                  size_t size)
{
    int k = n - 1;
    while (k > 0 && from[k] > j)
        k--;
    if (l->rows[j] < 0)
        snprintf(out, size, "%s", l->paths[j]);
    else
        snprintf(out, size, "%s (%s/%s)", l->paths[j], inputs[k], ERASE_CTR_INDEX_NAME);
}

/* A shard file listed twice (it would be read twice an epoch), whatever
 * the spelling: another path to it, a symbolic link, a directory given
 * twice; compared by device and inode (a missing file is named when it is
 * opened). */
static erase_status_t check_listed_once(const erase_ctr_list_t *l, const char *const *inputs, const int *from, int n)
{
    struct stat *ids = calloc((size_t)l->count, sizeof *ids);
    char *found = calloc((size_t)l->count, 1);
    if (!ids || !found) {
        free(ids);
        free(found);
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for a list of %d shards", l->count);
    }
    erase_status_t st = ERASE_OK;
    for (int j = 0; j < l->count && st == ERASE_OK; j++) {
        found[j] = stat(l->paths[j], &ids[j]) == 0;
        for (int i = 0; found[j] && i < j; i++)
            if (found[i] && ids[i].st_dev == ids[j].st_dev && ids[i].st_ino == ids[j].st_ino) {
                char first[8300], second[8300];
                place(l, i, inputs, from, n, first, sizeof first);
                place(l, j, inputs, from, n, second, sizeof second);
                st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s and %s are the same shard file: a shard is listed once "
                                 "(it would be read twice an epoch)", first, second);
                break;
            }
    }
    free(ids);
    free(found);
    return st;
}

erase_status_t erase_ctr_list_resolve(const char *const *inputs, int n, erase_ctr_list_t *list)
{
    memset(list, 0, sizeof *list);
    if (n < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "no data files or directories given");
    int *from = calloc((size_t)n, sizeof *from); /* the first entry of each input */
    if (!from)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "out of memory for a list of %d inputs", n);
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < n && st == ERASE_OK; i++) {
        from[i] = list->count;
        struct stat sb;
        if (stat(inputs[i], &sb) != 0)
            st = ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", inputs[i], strerror(errno));
        else if (S_ISDIR(sb.st_mode))
            st = read_index(inputs[i], list);
        else if (!S_ISREG(sb.st_mode))
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s is %s, expected a shard file or a dataset directory", inputs[i],
                             erase_mode_not_regular(sb.st_mode));
        else
            st = list_add(list, inputs[i], -1);
    }
    if (st == ERASE_OK)
        st = check_listed_once(list, inputs, from, n);
    free(from);
    if (st != ERASE_OK) {
        erase_ctr_list_free(list);
        erase_error_trail(__FILE__, __LINE__);
        return st;
    }
    return ERASE_OK;
}

void erase_ctr_list_free(erase_ctr_list_t *list)
{
    for (int i = 0; i < list->count; i++)
        free(list->paths[i]);
    free(list->paths);
    free(list->rows);
    memset(list, 0, sizeof *list);
}

/*
 * Checkpoint directories (io/checkpoint.h): file and stage-file names,
 * the newest-first listing, pruning old checkpoints and stale temporary
 * files, and opening the newest checkpoint that loads.
 */
#include "io/checkpoint_internal.h"

#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ckpt_join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, ERASE_CKPT_PATH_MAX, "%s/%s", dir, name);
    return n < 0 || n >= ERASE_CKPT_PATH_MAX ? -1 : 0;
}

int64_t erase_ckpt_name_step(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "ckpt-", 5) != 0)
        return -1;
    const char *p = base + 5;
    if (*p < '0' || *p > '9')
        return -1;
    int64_t step = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (step > (INT64_MAX - 9) / 10)
            return -1;
        step = step * 10 + (*p - '0');
    }
    return strcmp(p, ".h5") == 0 ? step : -1;
}

int erase_ckpt_stage_path(const char *path, int stage, char *out, size_t size)
{
    int n = stage == 0 ? snprintf(out, size, "%s", path) : snprintf(out, size, "%s.stage%d", path, stage);
    return n < 0 || (size_t)n >= size || stage < 0 ? -1 : 0;
}

erase_status_t erase_ckpt_rename(const char *from, const char *to, int *stages)
{
    *stages = 0;
    for (int s = 1;; s++) {
        char a[ERASE_CKPT_PATH_MAX], b[ERASE_CKPT_PATH_MAX];
        if (erase_ckpt_stage_path(from, s, a, sizeof a) != 0 || erase_ckpt_stage_path(to, s, b, sizeof b) != 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "checkpoint %s: the name of stage %d's file (as %s) is too long",
                               from, s, to);
        if (access(a, F_OK) != 0)
            break;
        if (rename(a, b) != 0)
            return ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", a, b, strerror(errno));
        ++*stages;
    }
    if (rename(from, to) != 0)
        return ERASE_ERROR(ERASE_ERR_IO, "cannot rename %s to %s: %s", from, to, strerror(errno));
    return ERASE_OK;
}

int ckpt_named_as_stage_file(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strncmp(dot, ".stage", 6) != 0 || dot[6] < '1' || dot[6] > '9')
        return 0;
    for (const char *p = dot + 7; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* Step of a stage file name "ckpt-<step>.h5.stage<s>" (s >= 1), or -1. */
static int64_t stage_name_step(const char *name)
{
    if (!ckpt_named_as_stage_file(name))
        return -1;
    char head[ERASE_CKPT_PATH_MAX];
    snprintf(head, sizeof head, "%.*s", (int)(strrchr(name, '.') - name), name);
    return erase_ckpt_name_step(head);
}

/* A temporary file of ours: ".ckpt-<step>.h5.tmp". */
static int is_temp_name(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, ".ckpt-", 6) && n > 4 && !strcmp(name + n - 4, ".tmp");
}

typedef struct {
    int64_t step;
    char *name;
} entry_t;

static int entry_newest_first(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : strcmp(x->name, y->name);
}

/* The checkpoint files of dir, newest first. A missing directory: none. */
static erase_status_t list_dir(const char *dir, entry_t **out, int *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return ERASE_OK;
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot list the checkpoint directory: %s", dir, strerror(errno));
    }
    entry_t *list = NULL;
    int count = 0, cap = 0;
    erase_status_t st = ERASE_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int64_t step = erase_ckpt_name_step(e->d_name);
        if (step < 0)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            entry_t *grown = realloc(list, (size_t)cap * sizeof *grown);
            if (!grown) {
                st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory listing checkpoints", dir);
                break;
            }
            list = grown;
        }
        if (!(list[count].name = strdup(e->d_name))) {
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory listing checkpoints", dir);
            break;
        }
        list[count++].step = step;
    }
    closedir(d);
    if (st != ERASE_OK) {
        for (int i = 0; i < count; i++)
            free(list[i].name);
        free(list);
        return st;
    }
    if (count > 1)
        qsort(list, (size_t)count, sizeof *list, entry_newest_first);
    *out = list;
    *n = count;
    return ERASE_OK;
}

static void free_list(entry_t *list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i].name);
    free(list);
}

int erase_ckpt_remove_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[ERASE_CKPT_PATH_MAX];
        if (is_temp_name(e->d_name) && ckpt_join(path, dir, e->d_name) == 0 && unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int ckpt_prune(const char *dir, int64_t step, int keep)
{
    entry_t *list;
    int n, removed = 0;
    if (list_dir(dir, &list, &n) != ERASE_OK) {
        erase_error_clear(); /* pruning is best effort: the checkpoint is published */
        return 0;
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (list[i].step > step)
            continue;
        if (kept < keep) {
            kept++;
            continue;
        }
        char path[ERASE_CKPT_PATH_MAX];
        if (ckpt_join(path, dir, list[i].name) == 0 && unlink(path) == 0)
            removed++;
    }
    free_list(list, n);
    erase_ckpt_remove_temps(dir);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char path[ERASE_CKPT_PATH_MAX], main_path[ERASE_CKPT_PATH_MAX];
            int64_t s = stage_name_step(e->d_name);
            /* a pipeline checkpoint's stage file whose ckpt-<step>.h5 is gone
             * (removed above, renamed damaged/superseded, or never published) */
            if (s >= 0 && s <= step && ckpt_join(path, dir, e->d_name) == 0 &&
                     snprintf(main_path, sizeof main_path, "%.*s", (int)(strstr(path, ".h5.stage") - path + 3),
                              path) > 0 &&
                     access(main_path, F_OK) != 0)
                unlink(path);
        }
        closedir(d);
    }
    return removed;
}

erase_status_t erase_ckpt_candidates(const char *dir, char ***paths, int *n)
{
    *paths = NULL;
    *n = 0;
    entry_t *list;
    int count;
    ERASE_CHECK(list_dir(dir, &list, &count));
    char **out = calloc((size_t)count + 1, sizeof *out);
    erase_status_t st = out ? ERASE_OK : ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
    int k = 0;
    for (int i = 0; st == ERASE_OK && i < count; i++) {
        char path[ERASE_CKPT_PATH_MAX];
        if (ckpt_join(path, dir, list[i].name) != 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "%s/%s: path too long", dir, list[i].name);
        else if (!(out[k] = strdup(path)))
            st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", dir);
        else
            k++;
    }
    free_list(list, count);
    if (st != ERASE_OK) {
        erase_ckpt_candidates_free(out, k);
        return st;
    }
    *paths = out;
    *n = k;
    return ERASE_OK;
}

void erase_ckpt_candidates_free(char **paths, int n)
{
    if (!paths)
        return;
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

erase_status_t erase_ckpt_open_newest(const char *dir, erase_ckpt_skip_fn skipped, void *ctx, erase_ckpt_t **out)
{
    return erase_ckpt_open_newest_flags(dir, 0, skipped, ctx, out);
}

erase_status_t erase_ckpt_open_newest_flags(const char *dir, int flags, erase_ckpt_skip_fn skipped, void *ctx,
                                            erase_ckpt_t **out)
{
    *out = NULL;
    char **paths;
    int n;
    ERASE_CHECK(erase_ckpt_candidates(dir, &paths, &n));
    erase_status_t st = ERASE_OK;
    for (int i = 0; i < n; i++) {
        st = erase_ckpt_open_flags(paths[i], flags, out);
        if (st == ERASE_OK || st == ERASE_ERR_NOMEM)
            break; /* opened, or a failure that is not this file's */
        const char *why = erase_error_reason();
        size_t len = strlen(paths[i]);
        char it[1024];
        if (!strncmp(why, paths[i], len) && !strncmp(why + len, ": ", 2))
            why += len + 2; /* the message names the file already */
        else if (!strncmp(why, paths[i], len) && !strncmp(why + len, " is ", 4)) {
            snprintf(it, sizeof it, "it%s", why + len); /* "it is a FIFO, expected a regular file" */
            why = it;
        }
        if (skipped)
            skipped(ctx, paths[i], why);
    }
    if (st != ERASE_OK && st != ERASE_ERR_NOMEM)
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "none of the %d checkpoint%s in %s is usable (all damaged%s)", n,
                         n == 1 ? "" : "s", dir, skipped ? ", see above" : "");
    erase_ckpt_candidates_free(paths, n);
    ERASE_CHECK(st);
    return ERASE_OK;
}

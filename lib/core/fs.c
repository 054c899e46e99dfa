#include "lib/core/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

erase_status_t erase_dir_make(const char *dir, int *made)
{
    *made = mkdir(dir, 0777) == 0;
    if (!*made && errno != EEXIST)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ERASE_ERROR(ERASE_ERR_IO, "%s: not a directory", dir);
    return ERASE_OK;
}

int erase_fsync_path(const char *path, int directory)
{
    int fd = open(path, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int erase_fsync_parent(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return -1;
    int rc = erase_fsync_path(dirname(copy), 1);
    int e = errno;
    free(copy);
    errno = e;
    return rc;
}

void erase_remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            erase_remove_tree(path);
        else
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

const char *erase_mode_not_regular(mode_t mode)
{
    return S_ISREG(mode) ? NULL : S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
           : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

const char *erase_path_not_regular(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? erase_mode_not_regular(sb.st_mode) : NULL;
}

erase_status_t erase_file_check_regular(const char *path)
{
    const char *kind = erase_path_not_regular(path);
    if (kind)
        return ERASE_ERROR(ERASE_ERR_IO, "%s is %s, expected a regular file", path, kind);
    return ERASE_OK;
}

erase_status_t erase_file_read_all(const char *path, char **data, size_t *n)
{
    ERASE_CHECK(erase_file_check_regular(path));
    FILE *f = fopen(path, "rb");
    if (!f)
        return ERASE_ERROR(ERASE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = (size_t)1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        char *bigger = cap <= (SIZE_MAX - 1) / 2 ? realloc(buf, 2 * cap + 1) : NULL;
        if (!bigger)
            free(buf);
        buf = bigger, cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return ERASE_ERROR(ERASE_ERR_IO, "%s: read error", path);
    }
    buf[len] = '\0';
    *data = buf, *n = len;
    return ERASE_OK;
}

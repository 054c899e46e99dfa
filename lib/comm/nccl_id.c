/*
 * The file-system bootstrap of NCCL communicators (ERASE_NCCL_ID_DIR), for
 * sites where the id cannot travel over MPI: rank 0 of a group writes the
 * 128-byte unique id to DIR/erase-nccl-<group>-<job>.id atomically (a
 * temporary file, fsync, rename), the other ranks poll for it. Nothing here
 * knows NCCL or MPI (bytes in, bytes out), so it is tested on any machine
 * (tests/comm/test-id-exchange.c under mpirun).
 *
 * Shared file systems: the readers open() the path on every poll (NFS
 * revalidates on open, close-to-open consistency); a client that caches
 * negative lookups (NFS lookupcache=all) may see the file late, which only
 * costs time up to the timeout.
 */
#include "lib/comm/comm_internal.h"

#include "lib/core/fs.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Copy src into dst (size bytes), replacing unsafe file-name characters. */
static void sanitize(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < size; i++) {
        char ch = src[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        dst[i] = ok ? ch : '_';
    }
    dst[i] = '\0';
}

erase_status_t comm_job_id(char *text, size_t size)
{
    const char *erase = getenv("ERASE_JOB_ID");
    const char *slurm = getenv("SLURM_JOB_ID");
    const char *step = getenv("SLURM_STEP_ID");
    const char *ompi = getenv("OMPI_MCA_ess_base_jobid");
    char raw[256];
    if (erase && *erase)
        snprintf(raw, sizeof raw, "%s", erase);
    else if (slurm && *slurm)
        snprintf(raw, sizeof raw, "%s%s%s", slurm, step && *step ? "." : "", step ? step : "");
    else if (ompi && *ompi)
        snprintf(raw, sizeof raw, "%s", ompi);
    else
        return ERASE_ERROR(ERASE_ERR_INVALID,
                           "ERASE_NCCL_ID_DIR is set but no job id names the id files: set "
                           "ERASE_JOB_ID to a value unique to this job (Slurm's SLURM_JOB_ID and "
                           "Open MPI's OMPI_MCA_ess_base_jobid are used when present)");
    sanitize(text, size, raw);
    return ERASE_OK;
}

erase_status_t comm_id_file_path(const char *dir, const char *group, char *path, size_t size)
{
    char job[128], name[64];
    ERASE_CHECK(comm_job_id(job, sizeof job));
    sanitize(name, sizeof name, group);
    int n = snprintf(path, size, "%s/erase-nccl-%s-%s.id", dir, name, job);
    if (n < 0 || (size_t)n >= size)
        return ERASE_ERROR(ERASE_ERR_INVALID, "NCCL id exchange: path %s/erase-nccl-%s-%s.id is "
                           "longer than %zu bytes", dir, name, job, size - 1);
    return ERASE_OK;
}

erase_status_t comm_id_file_write(const char *path, const void *id, size_t bytes)
{
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return ERASE_ERROR(ERASE_ERR_INVALID, "NCCL id exchange: path %s is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot create %s: %s", tmp,
                           strerror(errno));
    const char *p = id;
    size_t done = 0;
    while (done < bytes) {
        ssize_t w = write(fd, p + done, bytes - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot write %s: %s", tmp,
                               strerror(e));
        }
        done += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot flush %s: %s", tmp,
                           strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot rename %s to %s: %s", tmp,
                           path, strerror(e));
    }
    /* make the rename itself durable (a crash must not leave readers
     * waiting on a name that was never stored); best effort */
    (void)erase_fsync_parent(path);
    return ERASE_OK;
}

/* Sleep for ms milliseconds (interrupted sleeps resume). */
static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

erase_status_t comm_id_file_read(const char *path, const char *group, void *id, size_t bytes,
                                 double timeout_s)
{
    int64_t start = erase_now_ns();
    long pause = 10;
    for (;;) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) != 0) {
                int e = errno;
                close(fd);
                return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot stat %s: %s", path,
                                   strerror(e));
            }
            if ((size_t)st.st_size != bytes) {
                close(fd);
                return ERASE_ERROR(ERASE_ERR_FORMAT,
                                   "NCCL id exchange: %s has %lld bytes where %zu were expected "
                                   "(not written by this job's rank 0 of group %s?)",
                                   path, (long long)st.st_size, bytes, group);
            }
            char *p = id;
            size_t done = 0;
            while (done < bytes) {
                ssize_t r = read(fd, p + done, bytes - done);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0) {
                    int e = r < 0 ? errno : EIO;
                    close(fd);
                    return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot read %s: %s",
                                       path, r < 0 ? strerror(e) : "file ended early");
                }
                done += (size_t)r;
            }
            close(fd);
            return ERASE_OK;
        }
        if (errno != ENOENT)
            return ERASE_ERROR(ERASE_ERR_IO, "NCCL id exchange: cannot open %s: %s", path,
                               strerror(errno));
        double waited = (double)(erase_now_ns() - start) * 1e-9;
        if (waited >= timeout_s)
            return ERASE_ERROR(ERASE_ERR_COMM,
                               "NCCL id exchange: no id file %s after %g s (rank 0 of group %s "
                               "writes it; ERASE_NCCL_ID_DIR must be a directory shared by every "
                               "rank)", path, timeout_s, group);
        long left_ms = (long)((timeout_s - waited) * 1000.0) + 1;
        sleep_ms(pause < left_ms ? pause : left_ms);
        if (pause < 100)
            pause *= 2;
    }
}

erase_status_t comm_id_exchange_fs(const char *dir, const char *group, int writer, void *id,
                                   size_t bytes, double timeout_s)
{
    if (!dir || !*dir || !group || !id)
        return ERASE_ERROR(ERASE_ERR_INVALID, "NCCL id exchange: no directory, group or id");
    if (timeout_s <= 0) {
        timeout_s = COMM_ID_TIMEOUT_DEFAULT;
        double v;
        int set;
        /* at most the watchdog's longest: its milliseconds must fit a long */
        ERASE_CHECK(comm_env_number("ERASE_NCCL_ID_TIMEOUT", 1e-9, ERASE_WATCHDOG_MAX_SECONDS, &v, &set));
        if (set)
            timeout_s = v;
    }
    char path[4096];
    ERASE_CHECK(comm_id_file_path(dir, group, path, sizeof path));
    if (writer)
        ERASE_CHECK(comm_id_file_write(path, id, bytes));
    else
        ERASE_CHECK(comm_id_file_read(path, group, id, bytes, timeout_s));
    return ERASE_OK;
}

void comm_id_file_remove(const char *dir, const char *group)
{
    char path[4096];
    if (comm_id_file_path(dir, group, path, sizeof path) != ERASE_OK) {
        erase_error_clear();
        return;
    }
    unlink(path); /* ENOENT (already gone) is fine */
}

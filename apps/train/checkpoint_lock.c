/*
 * The lock of a checkpoint directory (apps/train/checkpoint_lock.h has the
 * protocol and why it is a hard link).
 */
#include "apps/train/checkpoint_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_PATH_MAX 4096
#define RECORD_MAX 1024
#define RECORD_HEADER "erase-train checkpoint directory lock" /* a record's first line */
#define HEARTBEAT_S 10          /* the owner refreshes the lock's mtime this often */
#define HEARTBEAT_STILL_S 30    /* a requeue's old owner on another host: gone when its heartbeat is this still */
#define STALE_S_DEFAULT 300     /* ERASE_CKPT_LOCK_STALE_S */
#define WAIT_S_DEFAULT 120      /* ERASE_CKPT_LOCK_WAIT_S */

struct train_ckpt_lock {
    char path[LOCK_PATH_MAX];   /* DIR/.lock */
    char own[LOCK_PATH_MAX];    /* DIR/.lock.<host>.<pid>: this process's record, linked to path */
    char record[RECORD_MAX];
    pthread_t thread;
    int running;                /* the heartbeat thread was started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

/* A positive number of seconds from the environment variable `name`, else
 * `fallback`. */
static long env_seconds(const char *name, long fallback)
{
    const char *v = getenv(name);
    char *end;
    long s = v && *v ? strtol(v, &end, 10) : 0;
    return v && *v && !*end && s > 0 ? s : fallback;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The value of line "key value" of a record into out ("?" when absent). */
static void record_field(const char *record, const char *key, char *out, size_t size)
{
    size_t klen = strlen(key);
    for (const char *line = record; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > klen && !strncmp(line, key, klen) && line[klen] == ' ') {
            snprintf(out, size, "%.*s", (int)(len - klen - 1), line + klen + 1);
            return;
        }
        line = end ? end + 1 : NULL;
    }
    snprintf(out, size, "?");
}

/* Whether text is a lock record (its first line RECORD_HEADER). */
static int is_record(const char *text)
{
    return !strncmp(text, RECORD_HEADER "\n", strlen(RECORD_HEADER) + 1);
}

/* The owner a record names, for messages: "erase-train pid P on host H,
 * Slurm job J step S, started T" (the Slurm part only when it has one). */
static void owner_text(const char *path, const char *record, char *out, size_t size)
{
    if (!is_record(record)) {
        snprintf(out, size, "%s: %s", path, record[0] ? "not a lock record (a file of another program?)"
                 : "an empty lock record (a run that died while taking it?)");
        return;
    }
    char host[256], pid[32], job[64], step[64], started[64];
    record_field(record, "host", host, sizeof host);
    record_field(record, "pid", pid, sizeof pid);
    record_field(record, "slurm_job_id", job, sizeof job);
    record_field(record, "slurm_step_id", step, sizeof step);
    record_field(record, "started", started, sizeof started);
    char slurm[160] = "";
    if (strcmp(job, "-") && strcmp(job, "?"))
        snprintf(slurm, sizeof slurm, ", Slurm job %s step %s", job, step);
    snprintf(out, size, "erase-train pid %s on host %s%s, started %s", pid, host, slurm, started);
}

/* Read the record at path into out (NUL-terminated) and its stat into *sb:
 * 0, or -1 with errno (ENOENT: no lock). */
static int read_record(const char *path, char *out, size_t size, struct stat *sb)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = fstat(fd, sb) == 0 && S_ISREG(sb->st_mode) ? read(fd, out, size - 1) : -1;
    int saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved ? saved : EINVAL;
        return -1;
    }
    out[n] = '\0';
    return 0;
}

/* The start time of process pid on this host (field 22 of /proc/PID/stat,
 * clock ticks since boot) into out, "?" when it cannot be read; its state
 * letter into *state ('?' then). */
static void proc_start(long pid, char *out, size_t size, char *state)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f)
        fclose(f);
    stat[n] = '\0';
    snprintf(out, size, "?");
    *state = '?';
    const char *p = strrchr(stat, ')'); /* "pid (comm) state ppid ...": comm may hold spaces */
    if (!p || p[1] != ' ')
        return;
    *state = p[2];
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        p = p ? p + 1 : NULL;
    }
    if (p)
        snprintf(out, size, "%.*s", (int)strcspn(p, " \n"), p);
}

/* Whether the owner pid (started at `start`: its /proc start time, "?" in
 * a record that has none) runs on this host: EPERM means it does, as
 * another user; a stopped process does; a zombie, ended but not yet
 * reaped, does not, nor a pid reused by a process started at another
 * time. why: the reason when it does not. */
static int owner_running(const char *pid, const char *start, char *why, size_t size)
{
    char *end;
    long p = strtol(pid, &end, 10);
    char now[32], state;
    if (*end || p <= 0 || (kill((pid_t)p, 0) != 0 && errno != EPERM)) {
        snprintf(why, size, "pid %s is not running on this host", pid);
        return 0;
    }
    proc_start(p, now, sizeof now, &state);
    if (state == 'Z') {
        snprintf(why, size, "pid %s is not running on this host", pid);
        return 0;
    }
    if (strcmp(start, "?") && strcmp(now, "?") && strcmp(start, now)) {
        snprintf(why, size, "pid %s is now another process (started at tick %s, the owner at %s)", pid, now, start);
        return 0;
    }
    return 1;
}

/* This process's record (checkpoint_lock.h). */
static void make_record(char *out, size_t size, const char *host)
{
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    time_t t = time(NULL);
    struct tm tm;
    char started[64], start[32], state;
    gmtime_r(&t, &tm);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    proc_start((long)getpid(), start, sizeof start, &state);
    snprintf(out, size, RECORD_HEADER "\nhost %s\npid %ld\npid_start %s\nslurm_job_id %s\n"
             "slurm_step_id %s\nstarted %s\n", host, (long)getpid(), start, job && *job ? job : "-",
             step && *step ? step : "-", started);
}

typedef enum { OWNER_LIVE, OWNER_GONE, OWNER_SAME_JOB } owner_state_t;

/* What the owner of `record` (mtime `age` seconds ago; its heartbeat seen
 * still for `still` seconds while waiting, else 0) is to this process;
 * why: the reason when it is gone. */
static owner_state_t judge(const char *record, double age, double still, const char *host, char *why, size_t size)
{
    char ohost[256], pid[32], start[32], job[64];
    record_field(record, "host", ohost, sizeof ohost);
    record_field(record, "pid", pid, sizeof pid);
    record_field(record, "pid_start", start, sizeof start);
    record_field(record, "slurm_job_id", job, sizeof job);
    long stale_s = env_seconds("ERASE_CKPT_LOCK_STALE_S", STALE_S_DEFAULT);
    /* on this host the pid decides (a stopped run lives): the heartbeat only for another host's */
    if (!strcmp(ohost, host) && !owner_running(pid, start, why, size))
        return OWNER_GONE;
    if (strcmp(ohost, host) && age > (double)stale_s) {
        snprintf(why, size, "its heartbeat stopped %.0f s ago, more than ERASE_CKPT_LOCK_STALE_S=%ld", age, stale_s);
        return OWNER_GONE;
    }
    if (strcmp(ohost, host) && still >= HEARTBEAT_STILL_S) {
        snprintf(why, size, "its heartbeat has been still for %.0f s", still);
        return OWNER_GONE;
    }
    const char *mine = getenv("SLURM_JOB_ID");
    if (mine && *mine && !strcmp(job, mine))
        return OWNER_SAME_JOB;
    return OWNER_LIVE;
}

/* Move the stale lock aside if it is still `record` (else put back what
 * was moved): 0 when it was removed, 1 when the lock changed meanwhile
 * (look again), -1 with errno. */
static int remove_stale(const train_ckpt_lock_t *l, const char *record)
{
    char aside[LOCK_PATH_MAX + 16], moved[RECORD_MAX];
    struct stat sb;
    snprintf(aside, sizeof aside, "%s.stale", l->own);
    if (rename(l->path, aside) != 0)
        return errno == ENOENT ? 1 : -1;
    int same = read_record(aside, moved, sizeof moved, &sb) == 0 && !strcmp(moved, record);
    if (!same && link(aside, l->path) != 0 && errno != EEXIST) {
        int saved = errno;
        unlink(aside);
        errno = saved;
        return -1;
    }
    unlink(aside);
    if (same) { /* the gone owner's own name of its record (DIR/.lock.<host>.<pid>) */
        char host[256], pid[32], gone[LOCK_PATH_MAX + 300];
        record_field(record, "host", host, sizeof host);
        record_field(record, "pid", pid, sizeof pid);
        snprintf(gone, sizeof gone, "%.*s.%s.%s", (int)strlen(l->path), l->path, host, pid);
        if (read_record(gone, moved, sizeof moved, &sb) == 0 && !strcmp(moved, record))
            unlink(gone);
    }
    return same ? 0 : 1;
}

/* The heartbeat: the lock's mtime every HEARTBEAT_S while it names this
 * process; a warning, once, when it no longer does. */
static void *heartbeat(void *arg)
{
    train_ckpt_lock_t *l = arg;
    int warned = 0;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += HEARTBEAT_S;
        while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT) {
        }
        if (l->stop)
            break;
        char now[RECORD_MAX];
        struct stat sb;
        if (read_record(l->path, now, sizeof now, &sb) == 0 && !strcmp(now, l->record))
            utimensat(AT_FDCWD, l->path, NULL, 0);
        else if (!warned) {
            warned = 1;
            fprintf(stderr, "erase-train: warning: %s no longer names this run: another run took the checkpoint "
                    "directory over; this run writes nothing there from now and stops at its next checkpoint\n",
                    l->path);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Link this process's record to the lock: 0 taken, -1 with errno (EEXIST:
 * held). A link whose reply NFS lost is recognised by the link count. */
static int try_link(const train_ckpt_lock_t *l)
{
    if (link(l->own, l->path) == 0)
        return 0;
    int saved = errno;
    struct stat sb;
    if (stat(l->own, &sb) == 0 && sb.st_nlink == 2)
        return 0;
    errno = saved;
    return -1;
}

/* The loop of train_ckpt_lock_take once this process's record exists. */
static erase_status_t acquire(train_ckpt_lock_t *l, const char *dir, const char *host, int (*interrupted)(void))
{
    long wait_s = env_seconds("ERASE_CKPT_LOCK_WAIT_S", WAIT_S_DEFAULT);
    double waiting_since = 0, still_since = 0;
    struct timespec last_mtime = { 0, 0 };
    for (;;) {
        if (try_link(l) == 0)
            return ERASE_OK;
        if (errno != EEXIST)
            return ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: cannot create %s: %s", dir, l->path,
                               strerror(errno));
        char record[RECORD_MAX], owner[512], why[256];
        struct stat sb;
        if (read_record(l->path, record, sizeof record, &sb) != 0) {
            if (errno == ENOENT)
                continue; /* released meanwhile */
            return ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: cannot read the lock %s: %s", dir, l->path,
                               strerror(errno));
        }
        owner_text(l->path, record, owner, sizeof owner);
        double t = now_s(), age = t - ((double)sb.st_mtim.tv_sec + 1e-9 * (double)sb.st_mtim.tv_nsec);
        if (sb.st_mtim.tv_sec != last_mtime.tv_sec || sb.st_mtim.tv_nsec != last_mtime.tv_nsec) {
            last_mtime = sb.st_mtim;
            still_since = t;
        }
        owner_state_t s = judge(record, age, waiting_since > 0 ? t - still_since : 0, host, why, sizeof why);
        if (s == OWNER_GONE) {
            int r = remove_stale(l, record);
            if (r < 0)
                return ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: cannot remove the stale lock %s: %s", dir,
                                   l->path, strerror(errno));
            if (r == 0) {
                printf("note   --checkpoint-dir %s: took over the lock of a run that is gone (%s: %s)\n", dir, owner,
                       why);
                fflush(stdout);
            }
            continue;
        }
        if (s == OWNER_LIVE && !is_record(record))
            return ERASE_ERROR(ERASE_ERR_STATE, "--checkpoint-dir %s: %s, written %.0f s ago: taken over once older "
                               "than ERASE_CKPT_LOCK_STALE_S=%ld s; remove it if no run uses the directory", dir,
                               owner, age, env_seconds("ERASE_CKPT_LOCK_STALE_S", STALE_S_DEFAULT));
        if (s == OWNER_LIVE)
            return ERASE_ERROR(ERASE_ERR_STATE, "--checkpoint-dir %s: in use by another run (%s; lock %s): give "
                               "each run its own directory, or remove the lock if that run is gone", dir, owner,
                               l->path);
        /* this Slurm job's previous allocation (a requeue): wait for its ranks */
        if (waiting_since == 0) {
            waiting_since = t;
            printf("note   --checkpoint-dir %s: held by this Slurm job's previous allocation (%s): waiting up to "
                   "%ld s for its ranks to end\n", dir, owner, wait_s);
            fflush(stdout);
        } else if (t - waiting_since > (double)wait_s)
            return ERASE_ERROR(ERASE_ERR_STATE, "--checkpoint-dir %s: still in use after %ld s by this Slurm job's "
                               "previous allocation (%s; lock %s): end its ranks, or raise ERASE_CKPT_LOCK_WAIT_S",
                               dir, wait_s, owner, l->path);
        int sig = interrupted ? interrupted() : 0;
        if (sig)
            return ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: %s while waiting for this Slurm job's previous "
                               "allocation (%s): stopped without taking the lock; nothing written", dir,
                               sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM", owner);
        struct timespec pause = { 0, 250 * 1000 * 1000 };
        nanosleep(&pause, NULL); /* a signal ends it early (EINTR) */
    }
}

erase_status_t train_ckpt_lock_take(const char *dir, int (*interrupted)(void), train_ckpt_lock_t **out)
{
    *out = NULL;
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    train_ckpt_lock_t *l = calloc(1, sizeof *l);
    if (!l)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "--checkpoint-dir %s: no memory for its lock", dir);
    if ((size_t)snprintf(l->path, sizeof l->path, "%s/.lock", dir) >= sizeof l->path ||
        (size_t)snprintf(l->own, sizeof l->own, "%s/.lock.%s.%ld", dir, host, (long)getpid()) >= sizeof l->own) {
        free(l);
        return ERASE_ERROR(ERASE_ERR_INVALID, "--checkpoint-dir %s: path too long", dir);
    }
    make_record(l->record, sizeof l->record, host);
    erase_status_t st = ERASE_OK;
    int fd = open(l->own, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(l->record);
    if (fd < 0 || write(fd, l->record, len) != (ssize_t)len || fsync(fd) != 0)
        st = ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: cannot write its lock %s: %s", dir, l->own,
                         strerror(errno));
    if (fd >= 0)
        close(fd);
    if (st == ERASE_OK)
        st = acquire(l, dir, host, interrupted);
    if (st != ERASE_OK) {
        unlink(l->own);
        free(l);
        return st;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    /* the heartbeat takes no signal: SIGTERM/SIGUSR1/SIGINT go to the other threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&l->thread, NULL, heartbeat, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    l->running = e == 0;
    *out = l;
    if (e != 0) {
        train_ckpt_lock_release(l);
        *out = NULL;
        return ERASE_ERROR(ERASE_ERR_IO, "--checkpoint-dir %s: cannot start the lock's heartbeat: %s", dir,
                           strerror(e));
    }
    return ERASE_OK;
}

erase_status_t train_ckpt_lock_check(const train_ckpt_lock_t *l, const char *dir)
{
    char now[RECORD_MAX], owner[512];
    struct stat sb;
    if (read_record(l->path, now, sizeof now, &sb) == 0 && !strcmp(now, l->record))
        return ERASE_OK;
    if (errno == ENOENT)
        return ERASE_ERROR(ERASE_ERR_STATE, "--checkpoint-dir %s: this run's lock %s was removed: stopping without "
                           "writing; the directory may be another run's now (give each run its own directory)", dir,
                           l->path);
    owner_text(l->path, now, owner, sizeof owner);
    return ERASE_ERROR(ERASE_ERR_STATE, "--checkpoint-dir %s: this run's lock was taken over by %s: stopping without "
                       "writing; the directory is that run's now (give each run its own directory)", dir, owner);
}

void train_ckpt_lock_release(train_ckpt_lock_t *l)
{
    if (!l)
        return;
    if (l->running) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    char now[RECORD_MAX];
    struct stat sb;
    if (read_record(l->path, now, sizeof now, &sb) == 0 && !strcmp(now, l->record))
        unlink(l->path);
    unlink(l->own);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

/*
 * erase-train's checkpoint signals: SIGTERM, SIGINT and SIGUSR1 set a flag
 * that the step boundary reads (every rank then checkpoints and stops), and
 * rank 0's one-line notice of what --resume auto takes until then
 * (apps/train/checkpoint.h).
 */
#include "apps/train/checkpoint_internal.h"

#include "io/checkpoint.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Set by the handler, read by the main thread at the step boundary. The
 * signal may be delivered to any thread of the process (stream workers,
 * BLAS and MPI threads), so a volatile sig_atomic_t is not enough: a
 * lock-free C11 atomic is both async-signal-safe (C11 7.14.1.1) and
 * ordered across threads. */
static atomic_int pending_signal;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal flag needs a lock-free atomic int");

/* What rank 0 says at once when the first SIGTERM or SIGINT comes (the
 * launcher may kill the ranks before the checkpoint is written: mpirun 1 s
 * after its SIGTERM, apps/train/checkpoint.h): the rest of "erase-train:
 * SIGTERM: ..." with what --resume auto takes until then, one write(2)
 * so that mpirun's merge of the ranks' output cannot split it. The main
 * thread writes the slot not published and publishes it (notice_at); -1:
 * say nothing (not rank 0). */
#define NOTICE_MAX (2 * ERASE_CKPT_PATH_MAX + 1024)
static char notice_text[2][2][NOTICE_MAX]; /* [slot][0: SIGTERM, 1: SIGINT], each one whole line */
static atomic_int notice_at = -1;
static atomic_int noticed;

/* write(2) all of text to fd (async-signal-safe). */
static void say(int fd, const char *text)
{
    size_t n = 0;
    while (text[n])
        n++;
    while (n > 0) {
        ssize_t w = write(fd, text, n);
        if (w <= 0)
            return;
        text += w;
        n -= (size_t)w;
    }
}

static void on_signal(int sig)
{
    int saved = errno;
    atomic_store(&pending_signal, sig);
    int at = atomic_load(&notice_at);
    /* SIGUSR1 is the launchers' own request (Slurm's --signal, mpirun forwards it): no kill follows */
    if (at >= 0 && sig != SIGUSR1 && !atomic_exchange(&noticed, 1)) {
        say(STDERR_FILENO, notice_text[at][sig == SIGINT]);
    }
    errno = saved;
}

/* Rank 0: the notice names `takes` as what --resume auto takes now. */
static void set_notice(const char *takes)
{
    if (atomic_load(&noticed))
        return; /* said already: the handler may be reading it */
    int next = atomic_load(&notice_at) == 0 ? 1 : 0;
    for (int i = 0; i < 2; i++)
        snprintf(notice_text[next][i], sizeof notice_text[next][i], "erase-train: %s: writing a checkpoint after "
                 "this step, then stopping; until erase-train says \"stopped by\", none is written and --resume "
                 "auto takes %s (mpirun kills the ranks 1 s after its SIGTERM, Slurm after KillWait: to give them "
                 "the time they need, stop a run with SIGUSR1)\n", i ? "SIGINT" : "SIGTERM", takes);
    atomic_store(&notice_at, next);
}

/* What --resume auto takes in dir as far as rank 0 knows: `last` (the
 * last checkpoint written or resumed from) when not "", else the newest
 * checkpoint file there (unverified), or none. */
static void resume_takes(const char *dir, const char *last, char *out, size_t size)
{
    char **paths;
    int n;
    snprintf(out, size, "%s", last[0] ? last : "none (the run starts at step 0)");
    if (last[0])
        return;
    if (erase_ckpt_candidates(dir, &paths, &n) == ERASE_OK) {
        if (n > 0)
            snprintf(out, size, "%s", paths[0]);
        erase_ckpt_candidates_free(paths, n);
    } else
        erase_error_clear();
}

erase_status_t train_ckpt_signals_install(struct sigaction *old)
{
    static const int sigs[3] = { SIGTERM, SIGINT, SIGUSR1 };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < 3; i++)
        if (sigaction(sigs[i], &sa, old ? &old[i] : NULL) != 0)
            return ERASE_ERROR(ERASE_ERR_IO, "checkpoint: cannot install the SIGTERM/SIGINT/SIGUSR1 handlers: %s",
                               strerror(errno));
    return ERASE_OK;
}

void train_ckpt_signals_restore(const struct sigaction old[3])
{
    sigaction(SIGTERM, &old[0], NULL);
    sigaction(SIGINT, &old[1], NULL);
    sigaction(SIGUSR1, &old[2], NULL);
}

erase_status_t train_ckpt_catch_signals(const char *checkpoint_dir, int rank0)
{
    if (rank0) {
        char takes[ERASE_CKPT_PATH_MAX + 64];
        resume_takes(checkpoint_dir, "", takes, sizeof takes);
        set_notice(takes);
    }
    return train_ckpt_signals_install(NULL);
}

int train_ckpt_pending_signal(void)
{
    return atomic_load(&pending_signal);
}

void train_ckpt_quiet_signals(int quiet)
{
    atomic_store(&noticed, quiet);
}

const char *train_ckpt_signal_name(int sig)
{
    static char other[32];
    if (sig == SIGTERM)
        return "SIGTERM";
    if (sig == SIGINT)
        return "SIGINT";
    if (sig == SIGUSR1)
        return "SIGUSR1";
    snprintf(other, sizeof other, "signal %d", sig);
    return other;
}

void train_ckpt_set_notice(const train_ckpt_t *ck, int64_t writing)
{
    if (ck->e.w->rank != 0)
        return;
    char takes[ERASE_CKPT_PATH_MAX + 64], text[2 * ERASE_CKPT_PATH_MAX + 256];
    resume_takes(ck->e.o->checkpoint_dir, ck->last_path, takes, sizeof takes);
    if (writing < 0)
        snprintf(text, sizeof text, "%s", takes);
    else
        snprintf(text, sizeof text, "%s/ckpt-%lld.h5 if its write, under way, ends, else %s", ck->e.o->checkpoint_dir,
                 (long long)writing, takes);
    set_notice(text);
}

/*
 * erase core: status codes, the error trail, and the one fatal path.
 *
 * Library code (lib/, io/) never exits: every fallible function returns an
 * erase_status_t. On failure it records a message with erase_error_set() and
 * each caller that passes the failure up adds a "file:line" breadcrumb with
 * ERASE_CHECK, so the final message reads
 *   "lib/device/cpu/cpu_stream.c:120: stream worker -> out of memory"
 * Applications and tests turn a failed status into erase_fatal(), which
 * prints "[rank r host] file:line: what -> why" and brings the whole job
 * down through the abort hook (MPI_Abort once the communicator layer has
 * installed one; abort() before that).
 */
#ifndef ERASE_CORE_STATUS_H
#define ERASE_CORE_STATUS_H

#include <stddef.h>

typedef enum {
    ERASE_OK = 0,
    ERASE_ERR_INVALID,     /* bad argument or configuration */
    ERASE_ERR_NOMEM,       /* allocation failed */
    ERASE_ERR_IO,          /* file system or operating system call failed */
    ERASE_ERR_FORMAT,      /* a file or input does not have the expected form */
    ERASE_ERR_NOT_READY,   /* query: the work is not complete yet (not a failure) */
    ERASE_ERR_STATE,       /* call not allowed in the current state (e.g. capture) */
    ERASE_ERR_BACKEND,     /* BLAS, CUDA, cuBLAS or NCCL reported a failure */
    ERASE_ERR_COMM,        /* communication failure or mismatch between ranks */
    ERASE_ERR_UNSUPPORTED  /* valid request this build or machine cannot serve */
} erase_status_t;

/* Short name of a status code ("invalid argument", ...); never NULL. */
const char *erase_status_name(erase_status_t status);

/*
 * Record a failure of the calling thread: status and a printf-style message,
 * prefixed with file:line. Replaces any earlier message of this thread.
 * Returns status, so that `return erase_error_set(...)` reads naturally.
 */
erase_status_t erase_error_set(erase_status_t status, const char *file, int line,
                               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Add a "file:line" breadcrumb in front of this thread's message. */
void erase_error_trail(const char *file, int line);

/* This thread's last error message ("" when none); valid until the next call. */
const char *erase_error_message(void);

/* The same message as a user reads it: without the breadcrumbs and the
 * "file:line: " where it was set (the text given to erase_error_set);
 * "" when none. Valid until the next erase_error_* call of this thread. */
const char *erase_error_reason(void);

/* Forget this thread's last error. */
void erase_error_clear(void);

#define ERASE_ERROR(status, ...) erase_error_set((status), __FILE__, __LINE__, __VA_ARGS__)

/* Return from the enclosing function on failure, leaving a breadcrumb. */
#define ERASE_CHECK(call)                                         \
    do {                                                          \
        erase_status_t erase_check_s_ = (call);                   \
        if (erase_check_s_ != ERASE_OK) {                         \
            erase_error_trail(__FILE__, __LINE__);                \
            return erase_check_s_;                                \
        }                                                         \
    } while (0)

/* Jump to a cleanup label on failure, keeping the status in `var`. */
#define ERASE_CHECK_GOTO(call, var, label)                        \
    do {                                                          \
        (var) = (call);                                           \
        if ((var) != ERASE_OK) {                                  \
            erase_error_trail(__FILE__, __LINE__);                \
            goto label;                                           \
        }                                                         \
    } while (0)

/*
 * The one fatal path. Prints "[rank r host] file:line: what -> why" to
 * stderr (why = this thread's error trail, or the status name) and calls the
 * abort hook, which never returns. For applications and tests only.
 */
void erase_fatal(const char *file, int line, const char *what, erase_status_t status)
    __attribute__((noreturn));

/*
 * An application's failure that this rank found alone (a damaged shard
 * read mid-run: its peers cannot know, so the job must be taken down):
 * one line "prog: rank r (host): why" to stderr, why being the error as a
 * user reads it (erase_error_reason), then the abort hook, which never
 * returns. With ERASE_VERBOSE >= 1 it is erase_fatal: the call chain.
 */
void erase_fatal_rank(const char *file, int line, const char *prog, erase_status_t status)
    __attribute__((noreturn));

/* Fatal unless the call succeeds: for apps and tests. */
#define ERASE_MUST(call)                                                   \
    do {                                                                   \
        erase_status_t erase_must_s_ = (call);                             \
        if (erase_must_s_ != ERASE_OK)                                     \
            erase_fatal(__FILE__, __LINE__, #call, erase_must_s_);         \
    } while (0)

/*
 * Install how erase_fatal brings the job down (e.g. MPI_Abort on the world
 * communicator) and the rank printed in its messages. The hook must not
 * return; if it does, abort() follows.
 */
void erase_fatal_set_hook(void (*hook)(int exit_code), int rank);

#endif

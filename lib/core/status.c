#include "lib/core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* room for a message that names two paths of PATH_MAX (4096) bytes and its reason */
#define ERASE_ERROR_MAX 16384

static _Thread_local char error_text[ERASE_ERROR_MAX];
static _Thread_local size_t reason_length; /* the message after erase_error_set's "file:line: " */

static void (*fatal_hook)(int exit_code);
static int fatal_rank = -1;

const char *erase_status_name(erase_status_t status)
{
    switch (status) {
    case ERASE_OK: return "success";
    case ERASE_ERR_INVALID: return "invalid argument";
    case ERASE_ERR_NOMEM: return "out of memory";
    case ERASE_ERR_IO: return "input/output error";
    case ERASE_ERR_FORMAT: return "bad format";
    case ERASE_ERR_NOT_READY: return "not ready";
    case ERASE_ERR_STATE: return "not allowed in this state";
    case ERASE_ERR_BACKEND: return "backend failure";
    case ERASE_ERR_COMM: return "communication failure";
    case ERASE_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

/* "../lib/x.c" (out-of-tree builds) -> "lib/x.c" */
static const char *source_name(const char *file)
{
    while (file[0] == '.' && (file[1] == '/' || (file[1] == '.' && file[2] == '/')))
        file += file[1] == '/' ? 2 : 3;
    return file;
}

erase_status_t erase_error_set(erase_status_t status, const char *file, int line,
                               const char *fmt, ...)
{
    file = source_name(file);
    int n = snprintf(error_text, sizeof error_text, "%s:%d: ", file, line);
    if (n < 0 || n >= (int)sizeof error_text)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_text + n, sizeof error_text - (size_t)n, fmt, ap);
    va_end(ap);
    reason_length = strlen(error_text + n);
    return status;
}

void erase_error_trail(const char *file, int line)
{
    char crumb[256];
    file = source_name(file);
    int n = snprintf(crumb, sizeof crumb, "%s:%d -> ", file, line);
    if (n <= 0 || n >= (int)sizeof crumb)
        return;
    size_t old = strlen(error_text);
    if (old + (size_t)n + 1 > sizeof error_text)
        return; /* keep the root cause rather than the breadcrumbs */
    memmove(error_text + n, error_text, old + 1);
    memcpy(error_text, crumb, (size_t)n);
}

const char *erase_error_message(void)
{
    return error_text;
}

const char *erase_error_reason(void)
{
    size_t len = strlen(error_text);
    return error_text + len - (reason_length < len ? reason_length : len);
}

void erase_error_clear(void)
{
    error_text[0] = '\0';
    reason_length = 0;
}

/* After a fatal line: the abort hook (it never returns), else abort(). */
static void bring_down(void) __attribute__((noreturn));
static void bring_down(void)
{
    fflush(stderr);
    if (fatal_hook)
        fatal_hook(1);
    abort();
}

void erase_fatal_rank(const char *file, int line, const char *prog, erase_status_t status)
{
    const char *verbose = getenv("ERASE_VERBOSE");
    if (verbose && atof(verbose) >= 1)
        erase_fatal(file, line, prog, status);
    const char *why = erase_error_reason();
    if (!why[0])
        why = erase_status_name(status);
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    if (fatal_rank >= 0)
        fprintf(stderr, "%s: rank %d (%s): %s\n", prog, fatal_rank, host, why);
    else
        fprintf(stderr, "%s: %s\n", prog, why);
    bring_down();
}

void erase_fatal_set_hook(void (*hook)(int exit_code), int rank)
{
    fatal_hook = hook;
    fatal_rank = rank;
}

void erase_fatal(const char *file, int line, const char *what, erase_status_t status)
{
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    const char *why = error_text[0] ? error_text : erase_status_name(status);
    file = source_name(file);
    if (fatal_rank >= 0)
        fprintf(stderr, "[rank %d %s] %s:%d: %s -> %s\n", fatal_rank, host, file, line, what, why);
    else
        fprintf(stderr, "[%s] %s:%d: %s -> %s\n", host, file, line, what, why);
    bring_down();
}

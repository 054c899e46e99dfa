/*
 * peak-rss PREFIX COMMAND [ARG...]: run COMMAND, then write its peak
 * resident set size in KiB (getrusage's ru_maxrss of the child, from
 * wait4(2)) as one line to PREFIX.<rank>, the rank of the MPI process
 * that runs it (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK; 0 alone),
 * and exit with COMMAND's status (128 + N for a signal N). What the
 * checkpoint-loading memory test measures each rank of erase-train with
 * (tests/ckpt/test-ckpt-load-memory.sh).
 * peak-rss --sanitized: exit 0 when built with a sanitizer (its shadow
 * memory and quarantine count in the peak), 1 when not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* The MPI rank of this process, from the launcher's environment ("0"). */
static const char *rank_of_process(void)
{
    static const char *const names[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return v;
    }
    return "0";
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--sanitized"))
        return SANITIZED ? 0 : 1;
    if (argc < 3) {
        fprintf(stderr, "usage: peak-rss PREFIX COMMAND [ARG...] | peak-rss --sanitized\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "peak-rss: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "peak-rss: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "peak-rss: wait4: %s\n", strerror(errno));
            return 2;
        }
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", argv[1], rank_of_process());
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f) != 0) {
        fprintf(stderr, "peak-rss: %s: %s\n", path, strerror(errno));
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * thread-kill SIGNAL PID: send SIGNAL (a number) to one thread of process
 * PID that is not its main thread and does not block the signal, with
 * tgkill(2), and print that thread's id and name. A signal sent to a
 * process goes to whichever thread the kernel picks; this makes the test
 * of erase-train's SIGTERM/SIGUSR1 handling take the path where the handler
 * runs on a worker thread (a stream worker, BLAS or MPI thread) while the
 * main thread reads the flag.
 *
 * Exit status: 0 sent, 1 no such thread, 2 error (message on stderr).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 1 if thread TID of PID blocks signal SIG (its SigBlk mask in
 * /proc/PID/task/TID/status), 0 if not, -1 if it cannot be read. */
static int blocks(long pid, long tid, int sig, char *name, size_t name_size)
{
    char path[128], line[256];
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/status", pid, tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Name:", 5)) {
            snprintf(name, name_size, "%s", line + 5 + strspn(line + 5, " \t"));
            name[strcspn(name, "\n")] = '\0';
        }
        uint64_t mask;
        if (sscanf(line, "SigBlk: %" SCNx64, &mask) == 1)
            found = (mask >> (sig - 1)) & 1;
    }
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: thread-kill SIGNAL PID\n");
        return 2;
    }
    int sig = atoi(argv[1]);
    long pid = atol(argv[2]);
    if (sig < 1 || sig > 64 || pid < 1) {
        fprintf(stderr, "thread-kill: expected a signal number 1..64 and a pid, got %s %s\n", argv[1], argv[2]);
        return 2;
    }
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "thread-kill: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    long chosen = 0;
    char name[64] = "", chosen_name[64] = "";
    for (struct dirent *e; (e = readdir(d));) {
        long tid = atol(e->d_name);
        if (tid > 0 && tid != pid && blocks(pid, tid, sig, name, sizeof name) == 0) {
            chosen = tid; /* any will do: the last one listed */
            snprintf(chosen_name, sizeof chosen_name, "%s", name);
        }
    }
    closedir(d);
    if (!chosen) {
        fprintf(stderr, "thread-kill: process %ld has no thread but the main one that takes signal %d\n", pid, sig);
        return 1;
    }
    if (syscall(SYS_tgkill, (pid_t)pid, (pid_t)chosen, sig) != 0) {
        fprintf(stderr, "thread-kill: tgkill(%ld, %ld, %d): %s\n", pid, chosen, sig, strerror(errno));
        return 2;
    }
    printf("thread %ld (%s)\n", chosen, chosen_name);
    return 0;
}

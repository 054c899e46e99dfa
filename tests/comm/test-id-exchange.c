/*
 * The file-system exchange of NCCL unique ids (lib/comm/nccl_id.c) under
 * real mpirun, with fake 128-byte ids (no NCCL, no GPU): driven by
 * tests/comm/test-id-exchange-np{2,4}.sh, which give a scratch directory in
 * ERASE_TEST_DIR and a job id in ERASE_JOB_ID.
 *
 *   1  every rank of world, dp<i> and pp<j> reads the bytes its group's rank
 *      0 wrote (compared with the same bytes sent by MPI_Bcast: the oracle)
 *   2  the writers removed their files after a barrier
 *   3  a group whose writer never comes: every rank fails after the timeout
 *      (0.3 s) with ERASE_ERR_COMM and the exact message naming the path
 *   4  a file of the wrong size: ERASE_ERR_FORMAT, exact message
 *   5  a writer in a directory that does not exist: ERASE_ERR_IO, exact message
 *   6  no job id in the environment: ERASE_ERR_INVALID; job ids are made
 *      safe for file names
 *
 * With --unshared (ranks on several hosts: tests/cluster/test-hosts-fail.sh)
 * each host uses a folder of its own, ERASE_TEST_DIR/<host name>, as when
 * ERASE_NCCL_ID_DIR is not shared, and only check 1 runs: the ranks on
 * their group's rank 0's host read its id, every other rank fails after
 * 1 s with ERASE_ERR_COMM and the documented message (the folder must be
 * shared); at least one rank must be on another host.
 *
 * Every check is counted on each rank and summed over the world, so that
 * all ranks agree; rank 0 prints TAP.
 * Usage: mpirun -np N test-id-exchange [--pp P] [--unshared]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/comm/comm_internal.h"
#include "tests/comm/mpi_tap.h"
#include "lib/core/timer.h"

#define ID_BYTES 128

static erase_world_t world;



/* 0 if msg ends with expected, else 1 (printed with the rank). */
static int ends_with(erase_status_t got, erase_status_t want, const char *msg,
                     const char *expected)
{
    size_t lm = strlen(msg), le = strlen(expected);
    int ok = got == want && lm >= le && !strcmp(msg + lm - le, expected);
    if (!ok)
        printf("# rank %d: got %s: %s\n#   expected %s ending in: %s\n", world.rank,
               erase_status_name(got), msg, erase_status_name(want), expected);
    return !ok;
}

/* Exchange a fake id over one group, check it against MPI_Bcast. With
 * --unshared (dir is this host's own folder), a rank on another host than
 * the group's rank 0 must instead fail after 1 s naming the path; *away
 * counts those ranks. */
static long exchange_group(const char *dir, erase_comm_t *c, const char *group, int unshared,
                           long *away)
{
    unsigned char id[ID_BYTES], oracle[ID_BYTES];
    memset(id, 0, sizeof id);
    if (c->rank == 0) /* different in every run and every group */
        for (int i = 0; i < ID_BYTES; i++)
            id[i] = (unsigned char)((erase_now_ns() >> (i % 7)) + 31 * i + getpid() +
                                    (unsigned char)group[strlen(group) - 1]);
    memcpy(oracle, id, sizeof id);
    char host[sizeof comm_host];
    snprintf(host, sizeof host, "%s", comm_host);
    if (MPI_Bcast(oracle, ID_BYTES, MPI_BYTE, 0, c->check) != MPI_SUCCESS ||
        MPI_Bcast(host, sizeof host, MPI_CHAR, 0, c->check) != MPI_SUCCESS)
        erase_fatal(__FILE__, __LINE__, "MPI_Bcast", ERASE_ERR_COMM);
    if (unshared && strcmp(host, comm_host)) {
        char path[4096], expected[5000];
        ERASE_MUST(comm_id_file_path(dir, group, path, sizeof path));
        snprintf(expected, sizeof expected, "NCCL id exchange: no id file %s after 1 s (rank 0 of "
                 "group %s writes it; ERASE_NCCL_ID_DIR must be a directory shared by every "
                 "rank)", path, group);
        erase_status_t st = comm_id_exchange_fs(dir, group, 0, id, sizeof id, 1.0);
        if (*away == 0)
            printf("# rank %d on %s, group %s (rank 0 on %s): %s\n", world.rank, comm_host, group,
                   host, erase_error_message());
        ++*away;
        return ends_with(st, ERASE_ERR_COMM, erase_error_message(), expected);
    }
    erase_status_t st = comm_id_exchange_fs(dir, group, c->rank == 0, id, sizeof id, 30.0);
    if (st != ERASE_OK) {
        printf("# rank %d: group %s: %s\n", world.rank, group, erase_error_message());
        return 1;
    }
    long wrong = 0;
    for (int i = 0; i < ID_BYTES; i++)
        wrong += id[i] != oracle[i];
    if (wrong)
        printf("# rank %d: group %s: %ld of %d bytes differ\n", world.rank, group, wrong,
               ID_BYTES);
    return wrong;
}

int main(int argc, char **argv)
{
    erase_world_options_t o = { 0 };
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--pp"))
            o.pp_size = atoi(argv[i + 1]);
    int unshared = 0;
    for (int i = 1; i < argc; i++)
        unshared |= !strcmp(argv[i], "--unshared");
    ERASE_MUST(erase_world_init(&argc, &argv, &o, &world));
    mpi_tap_rank = world.rank;
    const char *dir = getenv("ERASE_TEST_DIR");
    const char *job = getenv("ERASE_JOB_ID");
    if (!dir || !job) {
        if (world.rank == 0)
            printf("1..0 # SKIP ERASE_TEST_DIR and ERASE_JOB_ID are not set (run the driver)\n");
        erase_world_finalize();
        return 0;
    }
    erase_comm_t *comms[3] = { erase_world_comm(), erase_dp_comm(), erase_pp_comm() };
    char groups[3][24];
    snprintf(groups[0], sizeof groups[0], "world");
    snprintf(groups[1], sizeof groups[1], "dp%d", world.pp_rank);
    snprintf(groups[2], sizeof groups[2], "pp%d", world.dp_rank);

    if (unshared) {
        char own[4096];
        snprintf(own, sizeof own, "%s/%s", dir, comm_host);
        if (mkdir(own, 0700) != 0 && errno != EEXIST)
            erase_fatal(__FILE__, __LINE__, "mkdir of this host's folder", ERASE_ERR_IO);
        long bad = 0, away = 0;
        for (int g = 0; g < 3; g++)
            bad += exchange_group(own, comms[g], groups[g], 1, &away);
        long aways = world_sum(away);
        char what[200];
        snprintf(what, sizeof what, "a folder per host: the ranks on their group's rank 0's host "
                 "read its id; %ld exchanges on other hosts failed after 1 s naming the path",
                 aways);
        tap(bad, what);
        tap(world.rank == 0 && aways == 0, "some exchanges had their writer on another host");
        MPI_Barrier(MPI_COMM_WORLD);
        for (int g = 0; g < 3; g++)
            if (comms[g]->rank == 0)
                comm_id_file_remove(own, groups[g]);
        if (world.rank == 0)
            printf("1..%d\n", mpi_tap_n);
        erase_world_finalize();
        return 0;
    }

    /* 1: ids match */
    long bad = 0, away = 0;
    for (int g = 0; g < 3; g++)
        bad += exchange_group(dir, comms[g], groups[g], 0, &away);
    char what[160];
    snprintf(what, sizeof what, "ids match on every rank of world, dp%d.. and pp%d.. (%d ranks, "
             "dp %d x pp %d)", 0, 0, world.size, world.dp_size, world.pp_size);
    tap(bad, what);

    /* 2: the writers remove their files once everyone has read */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int g = 0; g < 3; g++)
        if (comms[g]->rank == 0)
            comm_id_file_remove(dir, groups[g]);
    MPI_Barrier(MPI_COMM_WORLD);
    bad = 0;
    for (int g = 0; g < 3; g++) {
        char path[4096];
        ERASE_MUST(comm_id_file_path(dir, groups[g], path, sizeof path));
        if (access(path, F_OK) == 0) {
            printf("# rank %d: %s is still there\n", world.rank, path);
            bad++;
        }
    }
    tap(bad, "the writers removed the id files");

    /* 3: nobody writes group "missing" */
    char path[4096], expected[5000];
    unsigned char id[ID_BYTES];
    ERASE_MUST(comm_id_file_path(dir, "missing", path, sizeof path));
    snprintf(expected, sizeof expected, "NCCL id exchange: no id file %s after 0.3 s (rank 0 of "
             "group missing writes it; ERASE_NCCL_ID_DIR must be a directory shared by every "
             "rank)", path);
    int64_t t0 = erase_now_ns();
    erase_status_t st = comm_id_exchange_fs(dir, "missing", 0, id, sizeof id, 0.3);
    double waited = (double)(erase_now_ns() - t0) * 1e-9;
    bad = ends_with(st, ERASE_ERR_COMM, erase_error_message(), expected);
    if (waited < 0.3 || waited > 5.0) {
        printf("# rank %d: gave up after %.3f s (expected 0.3 s .. 5 s)\n", world.rank, waited);
        bad++;
    }
    if (world.rank == 0)
        printf("# %s\n", erase_error_message());
    tap(bad, "a missing writer: ERASE_ERR_COMM after the timeout, naming the path");

    /* 4: a file of the wrong size (not this job's writer) */
    ERASE_MUST(comm_id_file_path(dir, "short", path, sizeof path));
    if (world.rank == 0) {
        FILE *f = fopen(path, "w");
        if (!f || fputs("12345", f) == EOF || fclose(f) != 0)
            erase_fatal(__FILE__, __LINE__, "writing the short id file", ERASE_ERR_IO);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(expected, sizeof expected, "NCCL id exchange: %s has 5 bytes where 128 were "
             "expected (not written by this job's rank 0 of group short?)", path);
    st = comm_id_exchange_fs(dir, "short", 0, id, sizeof id, 5.0);
    bad = ends_with(st, ERASE_ERR_FORMAT, erase_error_message(), expected);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world.rank == 0)
        unlink(path);
    tap(bad, "a file of the wrong size: ERASE_ERR_FORMAT");

    /* 5: the writer's directory does not exist */
    char absent[4096];
    snprintf(absent, sizeof absent, "%s/absent", dir);
    ERASE_MUST(comm_id_file_path(absent, "w", path, sizeof path));
    snprintf(expected, sizeof expected, "NCCL id exchange: cannot create %s.tmp.%ld: No such "
             "file or directory", path, (long)getpid());
    memset(id, 7, sizeof id);
    st = comm_id_exchange_fs(absent, "w", 1, id, sizeof id, 1.0);
    bad = ends_with(st, ERASE_ERR_IO, erase_error_message(), expected);
    tap(bad, "a writer without its directory: ERASE_ERR_IO");

    /* 6: job ids */
    const char *names[3] = { "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "ERASE_JOB_ID" };
    char *keep[3];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        keep[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
    char text[128];
    st = comm_job_id(text, sizeof text);
    bad = ends_with(st, ERASE_ERR_INVALID, erase_error_message(),
                    "ERASE_NCCL_ID_DIR is set but no job id names the id files: set "
                    "ERASE_JOB_ID to a value unique to this job (Slurm's SLURM_JOB_ID and Open "
                    "MPI's OMPI_MCA_ess_base_jobid are used when present)");
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    st = comm_job_id(text, sizeof text);
    if (st != ERASE_OK || strcmp(text, "77.3")) {
        printf("# rank %d: Slurm job id -> '%s' (expected 77.3)\n", world.rank, text);
        bad++;
    }
    unsetenv("SLURM_STEP_ID");
    setenv("ERASE_JOB_ID", "a/b c", 1);
    st = comm_job_id(text, sizeof text);
    if (st != ERASE_OK || strcmp(text, "a_b_c")) {
        printf("# rank %d: ERASE_JOB_ID 'a/b c' -> '%s' (expected a_b_c)\n", world.rank, text);
        bad++;
    }
    for (int i = 0; i < 3; i++) {
        if (keep[i])
            setenv(names[i], keep[i], 1);
        else
            unsetenv(names[i]);
        free(keep[i]);
    }
    tap(bad, "job ids: none is ERASE_ERR_INVALID, Slurm's is job.step, unsafe characters become _");

    if (world.rank == 0)
        printf("1..%d\n", mpi_tap_n);
    erase_world_finalize();
    return 0;
}

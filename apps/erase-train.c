/*
 * erase-train: train a model of detached blocks (ctr on CTR shards, mlp on
 * classification shards: apps/train/task.h), on every rank of an MPI job
 * (mpirun -np N, srun, sbatch), data parallel, with the early-backward
 * schedules; evaluate; print QPS and the task's metrics.
 * Exit status: 0 done, 1 failed (the whole job is brought down), 2 usage.
 */
#include "apps/cli_args.h"
#include "apps/train/checkpoint.h"
#include "apps/train/checkpoint_model.h"
#include "apps/train/options.h"
#include "apps/train/run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

/* An error every rank found alike (a usage error: status 2; a bad model
 * file: 1): one line "erase-train: what", printed once (by rank 0 of the
 * job, or of the launcher before MPI start-up); with ERASE_VERBOSE >= 1
 * the line is the error's call chain ("file:line -> ... -> what");
 * returns `status`. */
static int error_once(int rank, int status)
{
    const char *verbose = getenv("ERASE_VERBOSE");
    if (rank <= 0)
        fprintf(stderr, "erase-train: %s\n", verbose && atof(verbose) >= 1 ? erase_error_message()
                                                                         : erase_error_reason());
    return status;
}

int main(int argc, char **argv)
{
    train_options_t o;
    int help;
    /* ERASE_CHECK_OPTIONS=RANKS (the workstation jobs, jobs/job.sh, before
     * mpirun): the options are checked as for a job of RANKS ranks and
     * nothing is started: exit 0, or 2 with the usage error's one line,
     * which mpirun would have wrapped in its own banners */
    const char *check = getenv("ERASE_CHECK_OPTIONS");
    /* stdout a line at a time, also into mpirun's pipe: mpirun merges the
     * ranks' stdout and stderr as the writes come, and a fully buffered
     * stdout's 4 KiB writes would end mid-line, with other output inside */
    setvbuf(stdout, NULL, _IOLBF, 0);
    erase_status_t st = train_options_parse(argc, argv, &o, &help);
    if (help) {
        if (check)
            return 0;
        if (help == 2)
            return cli_version("erase-train");
        train_options_usage(stdout);
        return 0;
    }
    if (st != ERASE_OK)
        return error_once(train_launcher_rank(), 2);
    /* --resume of a pipeline checkpoint: its layout, unless given */
    char layout_from[ERASE_CKPT_PATH_MAX];
    if (train_ckpt_layout_adopt(&o, !check && train_launcher_rank() <= 0, layout_from, sizeof layout_from) !=
        ERASE_OK)
        return error_once(train_launcher_rank(), 2);
    /* --pp that does not divide the ranks: a usage error, before MPI */
    int ranks = check ? atoi(check) : train_launcher_size();
    if (ranks < 1)
        ranks = 1;
    if (ranks % o.pp) {
        ERASE_ERROR(ERASE_ERR_INVALID, "--pp %lld%s%s%s: this job has %d rank%s, not a multiple of the %lld stages "
                    "(ranks = data-parallel replicas x --pp)", (long long)o.pp,
                    layout_from[0] ? " (taken from the checkpoint " : "", layout_from, layout_from[0] ? ")" : "",
                    ranks, ranks == 1 ? "" : "s", (long long)o.pp);
        return error_once(train_launcher_rank(), 2);
    }
    if (check)
        return 0;
    /* --eval-only writes no checkpoint: SIGTERM/SIGINT/SIGUSR1 keep their default
     * action (stop at once), as without --checkpoint-dir */
    if (o.checkpoint_dir[0] && !o.eval_only &&
        train_ckpt_catch_signals(o.checkpoint_dir, train_launcher_rank() <= 0) != ERASE_OK) {
        fprintf(stderr, "erase-train: %s\n", erase_error_reason());
        return 1;
    }
    erase_world_t world;
    erase_world_options_t wo = { .pp_size = (int)o.pp, .watchdog_seconds = o.watchdog,
                                 .check_sequence = o.check_collectives };
    st = erase_world_init(&argc, &argv, &wo, &world);
    if (st != ERASE_OK)
        erase_fatal(__FILE__, __LINE__, "erase-train: MPI start-up", st);
    if (getenv("ERASE_DEBUG_RAISE_AT_START"))
        raise(SIGUSR1); /* a test's signal during start-up (apps/train/checkpoint.h) */
    int alike;
    st = train_run(&o, &world, &alike);
    if (st != ERASE_OK && alike) { /* every rank found it: no abort, no call chain */
        int code = error_once(world.rank, alike);
        erase_world_finalize();
        return code;
    }
    if (st != ERASE_OK) /* this rank alone: one line, and the job taken down */
        erase_fatal_rank(__FILE__, __LINE__, "erase-train", st);
    erase_world_finalize();
    return 0;
}

/*
 * erase-train: train a model of detached blocks on CTR shards, on every
 * rank of an MPI job (mpirun -np N, srun, sbatch), data parallel, with the
 * early-backward schedules; evaluate; print QPS, NE and AUC.
 * Exit status: 0 done, 1 failed (the whole job is brought down), 2 usage.
 */
#include "apps/train/checkpoint.h"
#include "apps/train/options.h"
#include "apps/train/run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

/* A usage error: one line "erase-train: what", printed once (by rank 0 of
 * the job, or of the launcher before MPI start-up); the exit status 2. */
static int usage_error(int rank)
{
    if (rank <= 0)
        fprintf(stderr, "erase-train: %s\n", erase_error_reason());
    return 2;
}

int main(int argc, char **argv)
{
    train_options_t o;
    int help;
    erase_status_t st = train_options_parse(argc, argv, &o, &help);
    if (help) {
        train_options_usage(stdout);
        return 0;
    }
    if (st != ERASE_OK)
        return usage_error(train_launcher_rank());
    if (o.checkpoint_dir[0] && train_ckpt_catch_signals() != ERASE_OK) {
        fprintf(stderr, "erase-train: %s\n", erase_error_reason());
        return 1;
    }
    erase_world_t world;
    erase_world_options_t wo = { .pp_size = 1, .watchdog_seconds = o.watchdog,
                                 .check_sequence = o.check_collectives };
    st = erase_world_init(&argc, &argv, &wo, &world);
    if (st != ERASE_OK)
        erase_fatal(__FILE__, __LINE__, "erase-train: MPI start-up", st);
    if (getenv("ERASE_DEBUG_RAISE_AT_START"))
        raise(SIGUSR1); /* a test's signal during start-up (apps/train/checkpoint.h) */
    int usage;
    st = train_run(&o, &world, &usage);
    if (st != ERASE_OK && usage) { /* every rank found it: no abort, no call chain */
        int code = usage_error(world.rank);
        erase_world_finalize();
        return code;
    }
    if (st != ERASE_OK)
        erase_fatal(__FILE__, __LINE__, "erase-train", st);
    erase_world_finalize();
    return 0;
}

/* erase-train's run: set-up from the options, the training loop,
 * evaluation, progress, metrics file, trace and summary. */
#ifndef ERASE_APPS_TRAIN_RUN_H
#define ERASE_APPS_TRAIN_RUN_H

#include "apps/train/options.h"
#include "lib/comm/comm.h"

/* Train as the options say on this rank of `world`; ERASE_OK or the first
 * failure. *alike is set when the failure was found alike on every rank
 * after start-up (erase_world_agree): 2 for a usage error (an option the
 * model cannot take, e.g. --cuts 7 for a 7-block model), 1 for a bad model
 * file; every rank can then end with that status and finalize MPI instead
 * of aborting the job; else 0. */
erase_status_t train_run(const train_options_t *o, const erase_world_t *world, int *alike);

/* The rank a launcher gave this process in its environment (Open MPI's
 * OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, Slurm's SLURM_PROCID), or -1
 * when no launcher started it. Usable before MPI start-up. */
int train_launcher_rank(void);

#endif

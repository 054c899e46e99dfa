/* erase-train's run: set-up from the options, the training loop,
 * evaluation, progress, metrics file, trace and summary. */
#ifndef ERASE_APPS_TRAIN_RUN_H
#define ERASE_APPS_TRAIN_RUN_H

#include "apps/train/options.h"
#include "lib/comm/comm.h"

/* Train as the options say on this rank of `world`; ERASE_OK or the first
 * failure (every rank fails the same way for bad options or data). *usage
 * is set to 1 when the failure is a usage error found after start-up (an
 * option the model cannot take, e.g. --cuts 7 for a 7-block model): found
 * alike on every rank before any collective, so every rank can end with
 * status 2 and finalize MPI instead of aborting the job; else 0. */
erase_status_t train_run(const train_options_t *o, const erase_world_t *world, int *usage);

/* The rank a launcher gave this process in its environment (Open MPI's
 * OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, Slurm's SLURM_PROCID), or -1
 * when no launcher started it. Usable before MPI start-up. */
int train_launcher_rank(void);

#endif

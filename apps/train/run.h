/* erase-train's run: set-up from the options, the training loop,
 * evaluation, progress, metrics file, trace and summary. */
#ifndef ERASE_APPS_TRAIN_RUN_H
#define ERASE_APPS_TRAIN_RUN_H

#include "apps/train/options.h"
#include "lib/comm/comm.h"

/* Train as the options say on this rank of `world`; ERASE_OK or the first
 * failure (every rank fails the same way for bad options or data). */
erase_status_t train_run(const train_options_t *o, const erase_world_t *world);

#endif

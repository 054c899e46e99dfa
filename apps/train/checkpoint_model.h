/*
 * What erase-train takes from the checkpoint it starts from, before
 * anything is built (issue 32): --resume and --init-from take its model
 * (the model file text in its /meta) and its run's options (the training
 * options, not the data, the layout or the device) that the command line
 * and the run file do not give; a given --model or --cuts that changes
 * the model (kind, sizes, cuts) is refused naming both models. --eval-only reads its checkpoint's
 * model in setup.c and is checked the same way. Every rank reads the
 * checkpoint's /meta (as --eval-only does), so every rank builds the same
 * model; rank 0 alone loads the tensors (apps/train/checkpoint_resume.c).
 */
#ifndef ERASE_APPS_TRAIN_CHECKPOINT_MODEL_H
#define ERASE_APPS_TRAIN_CHECKPOINT_MODEL_H

#include "apps/train/options.h"
#include "io/checkpoint.h"
#include "lib/nn/model_config.h"

/* The checkpoint a run starts from, as read before the run is built. */
typedef struct {
    char path[ERASE_CKPT_PATH_MAX]; /* the checkpoint read; "" when none */
    char *model;                    /* its model text (malloc), NULL when none */
    char *tokenizer;                /* its lm data's tokenizer file text (malloc), NULL when none */
    char data_vocab[ERASE_CKPT_DATA_VOCAB_SIZE]; /* its meta data_vocab (io/checkpoint.h); "": unknown */
    /* --resume: the run file's --model and --cuts, set aside for the
     * checkpoint's model ("" when the run file gave none, or the command
     * line gave --model or --cuts) */
    char file_model[sizeof(((train_options_t *)0)->model)];
    char file_cuts[sizeof(((train_options_t *)0)->cuts)];
} train_ckpt_origin_t;

/*
 * Open the checkpoint that --resume or --init-from names as the restore
 * will pick it (a file; a directory, or --resume auto's --checkpoint-dir:
 * the newest whose /meta is valid), its tensors unread, and keep its model
 * text in *origin; set in *o the options of its run that were not given
 * (train_options_adopt: --model's name, the optimizer and its learning
 * rates and schedule, the steps and epochs, the seed, shuffling,
 * --eval-fraction, the evaluation and checkpoint intervals) and, when
 * neither --batch nor --global-batch is given, its global batch. With
 * --resume, a --model or --cuts that only the run file gives (none on the
 * command line) yields to the checkpoint's model: kept in
 * origin->file_model and file_cuts and taken out of *o (the setup notes
 * when it differs: train_ckpt_model_yield). `root`
 * prints a note of the options taken that change. No checkpoint yet
 * (--resume auto), or one that does not open, leaves *origin empty and *o
 * as it is: the restore names the cause. The caller checks that every
 * rank read the same (train_ckpt_origin_agree). --init-from FILE.safetensors
 * takes the model text of the file's metadata (erase-export writes it; none:
 * --model builds the run) and no options. Errors: those of
 * train_options_adopt (usage errors naming the option), ERASE_ERR_NOMEM;
 * those of erase_st_open for a safetensors file that does not open.
 */
erase_status_t train_ckpt_origin_read(train_options_t *o, int root, train_ckpt_origin_t *origin);

/*
 * Collective over the world: every rank read the checkpoint's model, or
 * none did (e.g. the checkpoint on a file system only rank 0 sees). When
 * only some did, every rank forgets it and takes back the options
 * `given` into *o (nothing taken from the checkpoint); then with --model
 * given the run is built from --model (rank 0's restore checks the
 * tensors), without it every rank returns ERASE_ERR_INVALID "--resume
 * PATH: the checkpoint is not readable on every rank: give --model (and
 * the run's options), or put the checkpoint where every rank reads it".
 */
erase_status_t train_ckpt_origin_agree(const train_options_t *given, train_options_t *o,
                                       train_ckpt_origin_t *origin);

/*
 * Before MPI start-up (the world's --pp is fixed there): with --resume
 * (not --eval-only), when the checkpoint that the restore will pick is a
 * pipeline checkpoint, set in *o its run's --pp, --schedule, --stages,
 * --micro-batches and --accumulate that the command line does not give (a
 * run file's yield), and `root` prints "note   the pipeline layout taken
 * from PATH (not given here): pp 2; schedule local". `from` (size bytes)
 * gets the checkpoint's path when anything changed, else "". No checkpoint
 * (yet), one that does not open, or a whole (data-parallel) one leaves *o
 * as it is; only a checkpoint with stage files (ckpt-N.h5.stage1) is
 * opened, so that a data-parallel resume touches no HDF5 before MPI_Init.
 * Errors: ERASE_ERR_INVALID (train_options_adopt: the settings cannot be
 * used together), naming --resume.
 */
erase_status_t train_ckpt_layout_adopt(train_options_t *o, int root, char *from, size_t size);

void train_ckpt_origin_free(train_ckpt_origin_t *origin);

/* 1 when `path` names a safetensors file (ends in ".safetensors"), which
 * --init-from imports (apps/train/checkpoint_import.c) instead of opening
 * a checkpoint. */
int train_ckpt_is_safetensors(const char *path);

/* The model text a safetensors file's metadata holds (erase-export writes
 * it) into *model (malloc), NULL when it has none. Errors: those of
 * erase_st_open, ERASE_ERR_NOMEM. */
erase_status_t train_ckpt_import_model(const char *path, char **model);

/*
 * The model `asked` (of the given --model and --cuts, described by
 * `given`, e.g. "--model gpt") against `had`, the model of the checkpoint
 * `path`: ERASE_OK when they are the same model (the seed aside); else
 * ERASE_ERR_INVALID "--model gpt: the checkpoint is ctr, 3 blocks, 2 cuts;
 * this run asks for gpt (PATH; without --model and --cuts the run takes the
 * checkpoint's model)": the kind alone when the kinds differ, else blocks
 * and cuts, else the first model-file setting that differs.
 */
erase_status_t train_ckpt_model_same(const erase_model_config_t *had, const erase_model_config_t *asked,
                                     const char *given, const char *path);

/*
 * The model `asked` of a run file (described by `given`, e.g. "model
 * jobs/gpt-shakespeare.cfg") that yields to `had`, the model of checkpoint
 * `path` (--resume or --eval-only without --model and --cuts on the
 * command line): when they differ, `root` prints "note   the run file's
 * model X differs from the checkpoint's (PATH is gpt, 2 blocks, 0 cuts;
 * the run file's gpt, 6 blocks, 0 cuts): resuming the checkpoint's"
 * (`doing`: "resuming", "evaluating"). Errors: ERASE_ERR_NOMEM.
 */
erase_status_t train_ckpt_model_yield(const erase_model_config_t *had, const erase_model_config_t *asked,
                                      const char *given, const char *path, int root, const char *doing);

#endif

# tests/ckpt: checkpoints (io/checkpoint.h) and erase-train's kill and
# resume, damaged checkpoints, signals, changed rank counts and warm start
# under real mpirun (make check). tests/ckpt/soak.sh: a longer kill-and-
# resume soak, run by hand (not in make check).
check_PROGRAMS += tests/ckpt/ckpt-tool
tests_ckpt_ckpt_tool_SOURCES = tests/ckpt/ckpt-tool.c tests/ckpt/ckpt_util.c tests/ckpt/ckpt_util.h
tests_ckpt_ckpt_tool_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
tests_ckpt_ckpt_tool_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)
check_PROGRAMS += tests/ckpt/thread-kill
# sharded tensors at the io level: rows by their owners, read for other placements (issue 19)
check_PROGRAMS += tests/ckpt/shard-rows
tests_ckpt_shard_rows_SOURCES = tests/ckpt/shard-rows.c
tests_ckpt_shard_rows_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
tests_ckpt_shard_rows_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)
tests_ckpt_thread_kill_SOURCES = tests/ckpt/thread-kill.c
# each rank's peak resident memory, for the checkpoint-loading memory test (issue 35)
check_PROGRAMS += tests/ckpt/peak-rss
tests_ckpt_peak_rss_SOURCES = tests/ckpt/peak-rss.c

CKPT_TEST_DRIVERS = tests/ckpt/test-kill-resume.sh tests/ckpt/test-resume.sh
# several --train inputs and --global-batch across rank counts (issue 14)
CKPT_TEST_DRIVERS += tests/ckpt/test-data-inputs.sh
# the classify task (mlp on MNIST): modes, kill and resume, rank counts (issue 14)
CKPT_TEST_DRIVERS += tests/ckpt/test-train-classify.sh
CKPT_TEST_DRIVERS += tests/ckpt/test-train-lm.sh
# --blas-threads: equal BLAS threads make off and graph bitwise equal on any CPU
CKPT_TEST_DRIVERS += tests/ckpt/test-train-blas-threads.sh
CKPT_TEST_DRIVERS += tests/ckpt/test-eval-only.sh
# every load of a checkpoint by a run with sharded tables holds its rows only, not whole tables (issue 35)
CKPT_TEST_DRIVERS += tests/ckpt/test-ckpt-load-memory.sh
CKPT_TEST_DRIVERS += tests/ckpt/test-score.sh
# checkpoints of pipeline stages: bitwise resume, layouts, damaged stage files, SIGUSR1 (issue 16)
CKPT_TEST_DRIVERS += tests/ckpt/test-pipeline.sh
# --schedule local: bitwise the one-rank cut model, resume, lag and bytes (issue 17)
CKPT_TEST_DRIVERS += tests/ckpt/test-pipeline-local.sh
# erase-inspect merge: a pipeline checkpoint as one data-parallel checkpoint (issue 17)
CKPT_TEST_DRIVERS += tests/ckpt/test-ckpt-merge.sh
# the dcn model under erase-train: row-wise tables as replicated, resume bitwise (issue 36)
CKPT_TEST_DRIVERS += tests/ckpt/test-dcn-train.sh
# a checkpoint records its data's vocabulary; loads onto data numbered otherwise are refused (issue 36)
CKPT_TEST_DRIVERS += tests/ckpt/test-data-vocab.sh
# sharded tables: rows written by their owners (parallel HDF5), resume reshards (issue 19)
CKPT_TEST_DRIVERS += tests/ckpt/test-shard-ckpt.sh tests/ckpt/test-shard-rows.sh
# a checkpoint's model and run options taken on resume, other models refused in one line, a
# data-parallel checkpoint into pipeline stages, a finished run resumed (issue 32)
CKPT_TEST_DRIVERS += tests/ckpt/test-resume-model.sh
# a run owns its --checkpoint-dir: a second run refused, kill -9 take-over, a requeue waits (issue 32)
CKPT_TEST_DRIVERS += tests/ckpt/test-ckpt-lock.sh
# --lr-decay wsd as nanochat, cosine to --min-lr, AdamW --beta1 --beta2 --eps taken on resume (issue 34)
CKPT_TEST_DRIVERS += tests/ckpt/test-lr-schedule.sh
# --optimizer muon: modes bitwise equal, replicas equal on 1/2/4 ranks, resume bitwise, --pp 2 (issue 34)
CKPT_TEST_DRIVERS += tests/ckpt/test-muon.sh
# --accumulate for data parallelism: the large batch within 1e-6, every mode and a resume bitwise (issue 34)
CKPT_TEST_DRIVERS += tests/ckpt/test-accumulate.sh
CKPT_TEST_DRIVERS += tests/ckpt/test-rank-invariance.sh
# a checkpoint that does not fit (a small tmpfs): one line; --checkpoint-failure stop|continue (issue 32)
CKPT_TEST_DRIVERS += tests/ckpt/test-ckpt-disk-full.sh
# Ctrl-C and SIGTERM under mpirun: a checkpoint within the grace period, or a notice of what --resume auto takes (issue 32)
CKPT_TEST_DRIVERS += tests/ckpt/test-ckpt-interrupt.sh
# forged and odd files: gpt layer bound, FIFOs, attribute bounds, @include in checkpoints (issue 32)
CKPT_TEST_DRIVERS += tests/ckpt/test-forged.sh
TESTS += $(CKPT_TEST_DRIVERS)
EXTRA_DIST += $(CKPT_TEST_DRIVERS) tests/ckpt/ckpt.sh tests/ckpt/soak.sh

if HAVE_CMOCKA
check_PROGRAMS += tests/ckpt/test-checkpoint
TESTS += tests/ckpt/test-checkpoint
tests_ckpt_test_checkpoint_SOURCES = tests/ckpt/test-checkpoint.c tests/ckpt/ckpt_util.c tests/ckpt/ckpt_util.h \
	tests/io/io_util.c tests/io/io_util.h
tests_ckpt_test_checkpoint_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS) \
	-DERASE_DATA_DIR='"$(abs_top_srcdir)/data"'
tests_ckpt_test_checkpoint_CFLAGS = $(TEST_CFLAGS)
tests_ckpt_test_checkpoint_LDADD = $(ERASE_IO_LIBS) $(TEST_LIBS)
endif
# erase-export: every format read back by the safetensors library, pipeline and sharded checkpoints as they are, bad input (issue 37)
TESTS += tests/ckpt/test-export.sh
EXTRA_DIST += tests/ckpt/test-export.sh tests/ckpt/export_check.py
# erase-train --init-from FILE.safetensors: erase-export's and Hugging Face-named files, wrong files (issue 37)
TESTS += tests/ckpt/test-import.sh
EXTRA_DIST += tests/ckpt/test-import.sh tests/ckpt/import_make.py
# a gpt checkpoint's logits on a prompt, for bench/compat-export.py (issue 37)
check_PROGRAMS += tests/ckpt/gpt-logits
tests_ckpt_gpt_logits_SOURCES = tests/ckpt/gpt-logits.c
tests_ckpt_gpt_logits_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
tests_ckpt_gpt_logits_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)

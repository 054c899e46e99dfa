# tests/apps: command-line behaviour of erase-train and erase-bench that no
# other folder's drivers cover (make check): --device, errors for bad settings,
# erase-convert, erase-inspect and erase-bench on bad input, the metrics file.
APPS_TEST_DRIVERS = tests/apps/test-device.sh tests/apps/test-train-errors.sh tests/apps/test-tool-errors.sh \
	tests/apps/test-metrics.sh tests/apps/test-bench-output.sh
# erase-inspect data's distinct ids against the Criteo sample's TSV (issue 14)
APPS_TEST_DRIVERS += tests/apps/test-inspect-distinct.sh
# erase-bench schedules --feasibility --data: the ERASE MLP table on MNIST shards (issue 14)
APPS_TEST_DRIVERS += tests/apps/test-bench-feasibility.sh
# erase-convert text / tokens and erase-inspect data of token shards (issue 15)
APPS_TEST_DRIVERS += tests/apps/test-convert-text.sh
# jobs/trace-svg: axis in ms, lanes by rank and stage, step boundaries, legend, labels that fit (issues 15, 37)
APPS_TEST_DRIVERS += tests/apps/test-trace-svg.sh
# erase-bench pipeline --simulate: exact tables from given times (issue 16)
APPS_TEST_DRIVERS += tests/apps/test-bench-pipeline.sh
# erase-bench scale: the cost model's exact table from given times, its errors (issue 18)
APPS_TEST_DRIVERS += tests/apps/test-bench-scale.sh
# erase-train --pp: the measured bubble and busy times per stage (issue 16)
APPS_TEST_DRIVERS += tests/apps/test-pipeline-bubble.sh
# erase-convert --force replaces the old dataset only after success (issue 32)
APPS_TEST_DRIVERS += tests/apps/test-convert-force.sh
# mpirun -np N erase-convert criteo: the same dataset on 1, 2, 4 ranks, bad input and a full disk publish nothing (issue 35)
APPS_TEST_DRIVERS += tests/apps/test-convert-parallel.sh
# jobs/shakespeare: --resume auto continues, --checkpoint-dir reaches sampling, nothing deleted (issue 32)
APPS_TEST_DRIVERS += tests/apps/test-job-shakespeare.sh
# jobs/plot: every task's metrics against samples or tokens seen (issue 32)
APPS_TEST_DRIVERS += tests/apps/test-plot.sh
# jobs/daily: a day published, stopped and resumed bitwise, a no-op, rejected; bad input, one line each (issue 36)
APPS_TEST_DRIVERS += tests/apps/test-daily.sh
# jobs/daily --vocab, --vocab-threshold: a chain of 3 days, bitwise resume, coverage refusal (issue 36)
APPS_TEST_DRIVERS += tests/apps/test-daily-vocab.sh
EXTRA_DIST += tests/apps/daily-days.sh
# erase-train's lm figures in tokens/s, the first progress line, --eval-only's summary (issue 32)
APPS_TEST_DRIVERS += tests/apps/test-train-figures.sh
# erase-train on the nanochat model: loss falls with AdamW and Muon, cuts, 2 ranks, a config error (issue 34)
APPS_TEST_DRIVERS += tests/apps/test-train-nanochat.sh
# erase-tokenizer: bad tokenizer files refused by one line each, nothing written; non-UTF-8 round trip (issue 33)
APPS_TEST_DRIVERS += tests/apps/test-tokenizer-errors.sh
# erase-bench tokenizer: the table's rows and spreads, with the rustbpe/tiktoken reference when its venv is there (issue 33)
APPS_TEST_DRIVERS += tests/apps/test-bench-tokenizer.sh
# erase-convert text --tokenizer: BPE shards with <|bos|> per document, their tokenizer attributes (issue 33)
APPS_TEST_DRIVERS += tests/apps/test-convert-bpe.sh
# erase-train/erase-sample on BPE shards, 2 ranks: tokenizer refusals, bits per byte, decoding (issue 33)
APPS_TEST_DRIVERS += tests/apps/test-train-bpe.sh
# jobs/shakespeare --tokenizer bpe:300: tokenizer, conversion, training and a decoded sample in one line (issue 33)
APPS_TEST_DRIVERS += tests/apps/test-job-shakespeare-bpe.sh
# jobs/nanochat: tokenizer, conversion, muon/wsd pretraining on 2 ranks, bits per byte, a sample, --resume auto (issue 34)
APPS_TEST_DRIVERS += tests/apps/test-job-nanochat.sh
# erase-train --shuffle-pool: its range, all blocks = the default, resumed from a pool-1 checkpoint (issue 33)
APPS_TEST_DRIVERS += tests/apps/test-train-shuffle-pool.sh
# the manual pages: every program's, the same options as its --help, lint-clean (issue 37)
APPS_TEST_DRIVERS += tests/apps/test-man.sh
# make install: the installed programs, jobs, man pages and erase.pc work without the source tree (issue 37)
APPS_TEST_DRIVERS += tests/apps/test-install.sh
# erase-convert synth --shape criteo-1tb: same bytes on 1, 2, 4 ranks, formats, Zipf law, rates, multi-hot, errors (issue 35)
APPS_TEST_DRIVERS += tests/apps/test-convert-synth-days.sh
# multi-hot Criteo TSV: erase-convert lists, erase-inspect hotness against a count, a bad list named (issue 35)
APPS_TEST_DRIVERS += tests/apps/test-convert-multihot.sh
# erase-convert vocab, criteo --vocab, table_rows = "data": against a python count, 1/2/4 ranks, refusals (issue 35)
APPS_TEST_DRIVERS += tests/apps/test-convert-vocab.sh
EXTRA_DIST += tests/apps/install-check.c
TESTS += $(APPS_TEST_DRIVERS)
EXTRA_DIST += $(APPS_TEST_DRIVERS)
# erase-bench subnormal's samples/s early vs late on one stream: arithmetic
# (flush-to-zero), no threads of its own; the ThreadSanitizer build, where
# it took 78 s of CI's 40 minutes, skips it
APPS_NOT_UNDER_TSAN = tests/apps/test-bench-subnormal.sh
if !ERASE_TSAN
TESTS += $(APPS_NOT_UNDER_TSAN)
endif
EXTRA_DIST += $(APPS_NOT_UNDER_TSAN)

# erase-bench's spread of samples and busy-machine warning (bench_common.c)
if HAVE_CMOCKA
check_PROGRAMS += tests/apps/test-bench-spread
TESTS += tests/apps/test-bench-spread
tests_apps_test_bench_spread_SOURCES = tests/apps/test-bench-spread.c apps/bench/bench_common.c
tests_apps_test_bench_spread_CFLAGS = $(TEST_CFLAGS)
tests_apps_test_bench_spread_LDADD = $(TEST_LIBS)
endif

# The lm task's batches and metrics through the task table (issue 15)
if HAVE_CMOCKA
check_PROGRAMS += tests/apps/test-task-lm
TESTS += tests/apps/test-task-lm
TASK_TABLE_SOURCES = apps/train/tasks.c apps/train/task_ctr.c apps/train/task_classify.c apps/train/task_lm.c
tests_apps_test_task_lm_SOURCES = tests/apps/test-task-lm.c $(TASK_TABLE_SOURCES)
tests_apps_test_task_lm_CPPFLAGS = $(IO_TEST_CPPFLAGS)
tests_apps_test_task_lm_CFLAGS = $(TEST_CFLAGS)
tests_apps_test_task_lm_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS) $(TEST_LIBS)
# The ctr task's device batch for multi-hot data: sparse [n, H], sparse_len (issue 35)
check_PROGRAMS += tests/apps/test-task-ctr
TESTS += tests/apps/test-task-ctr
tests_apps_test_task_ctr_SOURCES = tests/apps/test-task-ctr.c $(TASK_TABLE_SOURCES)
tests_apps_test_task_ctr_CPPFLAGS = $(tests_apps_test_task_lm_CPPFLAGS)
tests_apps_test_task_ctr_CFLAGS = $(tests_apps_test_task_lm_CFLAGS)
tests_apps_test_task_ctr_LDADD = $(tests_apps_test_task_lm_LDADD)
endif

# erase-sample: generation from gpt checkpoints (sample-tool writes them and
# the greedy text of the training forward), its options and errors
check_PROGRAMS += tests/apps/sample-tool
tests_apps_sample_tool_SOURCES = tests/apps/sample-tool.c
tests_apps_sample_tool_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
tests_apps_sample_tool_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)
TESTS += tests/apps/test-sample.sh
EXTRA_DIST += tests/apps/test-sample.sh

# jobs/tensorboard: every task's metrics read back by TensorBoard's EventAccumulator, after a run and live (issue 37)
TESTS += tests/apps/test-tensorboard.sh
EXTRA_DIST += tests/apps/test-tensorboard.sh
EXTRA_DIST += tests/apps/metrics-runs.sh

# erase-bench schedules --model dcn: its GEMM FLOP count, --threads, 2 ranks, errors; TorchRec's DLRM_DCN sizes with $TORCHREC_PYTHON (issue 36)
TESTS += tests/apps/test-bench-dcn.sh
EXTRA_DIST += tests/apps/test-bench-dcn.sh

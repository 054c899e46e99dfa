# apps/: the programs users run.
bin_PROGRAMS += apps/erase-bench
apps_erase_bench_SOURCES = apps/erase-bench.c apps/bench/bench.h \
	apps/bench/bench_common.c apps/bench/bench_gemm.c apps/bench/bench_streams.c apps/bench/bench_model.c apps/bench/bench_schedules.c \
	apps/bench/bench_subnormal.c
apps_erase_bench_LDADD = $(ERASE_LIBS)
apps_erase_bench_CPPFLAGS = $(AM_CPPFLAGS) -DERASE_SRCDIR='"$(abs_top_srcdir)"'

# erase-convert (Criteo logs and synthetic data -> HDF5 shards) and
# erase-inspect (what is in erase's files): programs of io/.
bin_PROGRAMS += apps/erase-convert apps/erase-inspect
apps_erase_convert_SOURCES = apps/erase-convert.c
apps_erase_convert_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
apps_erase_convert_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)
apps_erase_inspect_SOURCES = apps/erase-inspect.c
apps_erase_inspect_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
apps_erase_inspect_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)
# erase-bench data: converter and reader speed.
apps_erase_bench_SOURCES += apps/bench/bench_data.c
apps_erase_bench_LDADD += $(ERASE_IO_LIBS) $(ERASE_LIBS)
apps_erase_bench_SOURCES += apps/bench/bench_allreduce.c

# erase-train: the main job; erase-score: predictions of a checkpoint, by
# erase-train's evaluation-only pass (apps/train/run.h: train_score).
TRAIN_SOURCES = apps/train/options.c apps/train/options.h apps/train/json.h \
	apps/train/run.c apps/train/run.h apps/train/checkpoint.c apps/train/checkpoint.h \
	apps/train/task.h apps/train/tasks.c apps/train/task_ctr.c apps/train/task_classify.c apps/train/task_lm.c
bin_PROGRAMS += apps/erase-train apps/erase-score
apps_erase_train_SOURCES = apps/erase-train.c $(TRAIN_SOURCES)
apps_erase_train_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
apps_erase_train_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)
apps_erase_score_SOURCES = apps/erase-score.c $(TRAIN_SOURCES)
apps_erase_score_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS)
apps_erase_score_LDADD = $(ERASE_IO_LIBS) $(ERASE_LIBS)

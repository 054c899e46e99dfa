# apps/: the programs users run.
bin_PROGRAMS += apps/erase-bench
apps_erase_bench_SOURCES = apps/erase-bench.c apps/bench/bench.h \
	apps/bench/bench_common.c apps/bench/bench_gemm.c apps/bench/bench_streams.c apps/bench/bench_model.c
apps_erase_bench_LDADD = $(ERASE_LIBS)
apps_erase_bench_CPPFLAGS = $(AM_CPPFLAGS) -DERASE_SRCDIR='"$(abs_top_srcdir)"'

# lib/: core (status, timing, rng, statistics) and the device layer.
# make install: liberase.a, the headers of its public layers in
# $(includedir)/erase (included as "lib/core/status.h", as in the tree) and
# erase.pc (pkg-config --cflags --libs erase; issue 37, docs/install.md).
lib_LIBRARIES = lib/liberase.a
eraseincludedir = $(includedir)/erase
nobase_eraseinclude_HEADERS = lib/core/status.h lib/core/timer.h lib/core/rng.h lib/core/stats.h \
	lib/core/hd.h lib/core/lr_schedule.h lib/device/device.h lib/ops/ops.h lib/comm/comm.h \
	lib/nn/network.h lib/nn/model_config.h lib/nn/batch.h lib/nn/param.h lib/nn/optim.h lib/nn/train_step.h \
	lib/nn/metrics.h lib/nn/gpt.h lib/nn/sharding.h lib/sched/sched.h
# erase.pc is written by make install from the prefix of that make install
# (make install prefix=DIR after a build configured for another prefix),
# its folders as ${prefix}/... where they are below it (pkg-config
# --define-variable=prefix=D then finds a DESTDIR install).
pkgconfigdir = $(libdir)/pkgconfig
EXTRA_DIST += lib/erase.pc.in
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(pkgconfigdir)'
	D='$$'; p='$(prefix)'; e='$(exec_prefix)'; \
	rel() { echo "$$1" | $(SED) -e "s|^$$2/|$${D}{$$3}/|"; }; \
	$(SED) -e "s|%prefix%|$$p|" -e "s|%exec_prefix%|`[ "$$e" = "$$p" ] && echo "$${D}{prefix}" || echo "$$e"`|" \
		-e "s|%libdir%|`rel '$(libdir)' "$$e" exec_prefix`|" -e "s|%includedir%|`rel '$(includedir)' "$$p" prefix`|" \
		-e 's|%PACKAGE_VERSION%|$(PACKAGE_VERSION)|' -e 's|%ERASE_PC_LIBS%|$(ERASE_PC_LIBS)|' \
		$(srcdir)/lib/erase.pc.in >'$(DESTDIR)$(pkgconfigdir)/erase.pc'
uninstall-local:
	rm -f '$(DESTDIR)$(pkgconfigdir)/erase.pc'
lib_liberase_a_SOURCES = \
	lib/core/status.c lib/core/status.h \
	lib/core/timer.c lib/core/timer.h \
	lib/core/rng.h \
	lib/core/stats.c lib/core/stats.h \
	lib/core/fs.c lib/core/fs.h \
	lib/core/config_text.c lib/core/config_text.h \
	lib/core/fpmode.c lib/core/fpmode.h \
	lib/device/device.c lib/device/device.h lib/device/backend.h lib/device/peak.c \
	lib/device/cpu/cpu.h lib/device/cpu/cpu_internal.h \
	lib/device/cpu/cpu_blas.c \
	lib/device/cpu/cpu_device.c \
	lib/device/cpu/cpu_graph.c \
	lib/device/cpu/cpu_hugepages.c \
	lib/device/cpu/cpu_stream.c \
	lib/device/cpu/cpu_team.c

# What every program linking liberase needs (the BLAS is loaded at run time).
ERASE_LIBS = lib/liberase.a $(LIBCONFIG_LIBS) $(LIBS)

# lib/ops: the model arithmetic (CPU kernels from one typed source).
lib_liberase_a_SOURCES += \
	lib/core/philox.h lib/core/hd.h \
	lib/ops/ops.h lib/ops/ops.c lib/ops/ops_impl.h \
	lib/ops/cpu/ops_cpu.h \
	lib/ops/cpu/kernels.h lib/ops/cpu/kernels_impl.h \
	lib/ops/cpu/kernels_f32.c lib/ops/cpu/kernels_f64.c \
	lib/ops/cpu/ops_cpu.c

# lib/ops: the gpt model's CPU ops (token embedding, attention).
lib_liberase_a_SOURCES += \
	lib/ops/cpu/attention_impl.h lib/ops/cpu/transformer_cpu.c

# lib/ops: the nanochat model's CPU ops (issue 34).
lib_liberase_a_SOURCES += lib/ops/cpu/nanochat_cpu.c

# lib/ops and lib/nn: the dcn model (DLRM-DCNv2) and its cross layer's op (issue 36).
lib_liberase_a_SOURCES += lib/ops/cpu/cross_cpu.c lib/nn/dcn.c

# lib/nn: model files (libconfig).
lib_liberase_a_SOURCES += \
	lib/nn/model_config.c lib/nn/model_config.h lib/nn/model_config_format.c lib/nn/model_config_internal.h

# lib/nn and optimizer ops: networks of blocks, models, optimizers.
lib_liberase_a_SOURCES += \
	lib/core/lr_schedule.h lib/core/simd.h lib/core/checked.h \
	lib/ops/cpu/optim_cpu.c \
	lib/nn/batch.h lib/nn/param.h \
	lib/nn/network.c lib/nn/network.h lib/nn/network_impl.h \
	lib/nn/network_chain.c lib/nn/gpt.c lib/nn/gpt.h \
	lib/nn/nanochat.c \
	lib/nn/optim.c lib/nn/optim.h \
	lib/nn/train_step.c lib/nn/train_step.h \
	lib/nn/metrics.c lib/nn/metrics.h lib/nn/metrics_cls.c lib/nn/metrics_cls.h

# lib/nn: next-token sampling (erase-sample).
lib_liberase_a_SOURCES += lib/nn/sampler.c lib/nn/sampler.h
# sharded embeddings (issue 19): the placement of tables over ranks
lib_liberase_a_SOURCES += lib/nn/sharding.c lib/nn/sharding.h
lib_liberase_a_SOURCES += lib/nn/batch.c

# lib/sched: step plans and the per-rank scheduler (early backward).
lib_liberase_a_SOURCES += \
	lib/ops/cpu/sparse_cpu.c lib/ops/cpu/shard_cpu.c \
	lib/sched/sched.c lib/sched/sched.h \
	lib/sched/plan.c lib/sched/plan.h lib/sched/grad_accum.c lib/sched/grad_accum.h \
	lib/sched/reduce.c lib/sched/reduce.h lib/sched/embed_shard.c lib/sched/embed_shard.h \
	lib/sched/trace.c lib/sched/trace.h \
	lib/sched/scale.c lib/sched/scale.h
# pipelines (issue 16): the stages' action lists and their replay; the stage executor
lib_liberase_a_SOURCES += lib/sched/pipe_schedule.c lib/sched/pipe_schedule.h \
	lib/sched/pipe.c lib/sched/pipe.h lib/sched/pipe_internal.h lib/sched/pipe_timing.c lib/sched/pipe_local.c

# lib/comm: communicators (MPI on host buffers, NCCL on device buffers when
# configure found NCCL), watchdog, sequence check, file-system id exchange.
lib_liberase_a_SOURCES += \
	lib/comm/comm.h lib/comm/comm_internal.h lib/comm/comm_mpi.h \
	lib/comm/comm_log.c \
	lib/comm/check.c \
	lib/comm/mpi_collectives.c \
	lib/comm/mpi_comm.c \
	lib/comm/mpi_wait.c \
	lib/comm/nccl_id.c \
	lib/comm/watchdog.c \
	lib/comm/world.c
ERASE_LIBS += $(MPI_LDFLAGS) $(MPI_LIBS)
if HAVE_NCCL
lib_liberase_a_SOURCES += lib/comm/nccl_comm.c
AM_CPPFLAGS += $(NCCL_CPPFLAGS)
ERASE_LIBS += $(NCCL_LDFLAGS) $(NCCL_LIBS)
else
lib_liberase_a_SOURCES += lib/comm/nccl_none.c
endif

# The CUDA backend (configure found nvcc and cuBLAS): C sources against the
# CUDA runtime API, kernels in .cu files compiled by nvcc for the
# architectures of --with-cuda-arch (machine code plus PTX for newer GPUs).
if HAVE_CUDA
SUFFIXES = .cu
NVCC_FLAGS = $(NVCC_ARCH_FLAGS) -std=c++17 -O3 --expt-relaxed-constexpr \
	-Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings \
	-I$(top_srcdir) -I$(top_builddir) $(CUDA_CPPFLAGS)
.cu.o:
	$(AM_V_GEN)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<
lib_liberase_a_SOURCES += \
	lib/device/cuda/cuda.h lib/device/cuda/cuda_internal.h \
	lib/device/cuda/cuda_device.c \
	lib/device/cuda/cuda_stream.c \
	lib/device/cuda/cuda_graph.c \
	lib/device/cuda/cuda_blas.c \
	lib/device/cuda/cuda_trace.c

# CUDA ops: kernels by family, their launchers, the table erase_ops_cuda.
lib_liberase_a_SOURCES += \
	lib/ops/cuda/ops_cuda.h lib/ops/cuda/ops_cuda.c \
	lib/ops/cuda/scratch.c lib/ops/cuda/common.cuh \
	lib/ops/cuda/eltwise.cu lib/ops/cuda/linear.cu \
	lib/ops/cuda/sortreduce.cuh lib/ops/cuda/sortreduce.cu \
	lib/ops/cuda/embedding.cu lib/ops/cuda/interaction.cu \
	lib/ops/cuda/losses.cu lib/ops/cuda/layernorm.cu \
	lib/ops/cuda/sparse.cu lib/ops/cuda/shard.cu lib/ops/cuda/optimizers.cu \
	lib/ops/cuda/token_embedding.cu lib/ops/cuda/attention.cu \
	lib/ops/cuda/nanochat.cu lib/ops/cuda/cross.cu
AM_CPPFLAGS += $(CUDA_CPPFLAGS)
ERASE_LIBS += $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++
endif

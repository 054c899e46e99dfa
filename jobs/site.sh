# Site settings for erase's Slurm jobs: the ONE file to edit for a cluster.
# jobs/*.sbatch source it on the batch node before they launch erase-train,
# and everything exported here reaches the ranks (srun and mpirun pass the
# environment on). Each setting keeps a value the submitter already exported
# (`NAME=value sbatch jobs/train-1node.sbatch`), so this file holds defaults.
# Shell: bash, sourced under `set -euo pipefail`.
# shellcheck shell=bash

# ---- software environment ---------------------------------------------------
# Environment modules (Lmod / Tcl modules), e.g.
#   ERASE_MODULES="gcc/12 openmpi/4.1 hdf5/1.14-openmpi openblas cuda/12.4 nccl"
# Empty: use what is on PATH (Debian packages, as jobs/setup installs them).
: "${ERASE_MODULES:=}"
if [ -n "$ERASE_MODULES" ]; then
    if ! command -v module >/dev/null 2>&1 && [ -f /etc/profile.d/modules.sh ]; then
        # shellcheck disable=SC1091
        . /etc/profile.d/modules.sh
    fi
    # module may read unset variables and return non-zero on warnings
    set +u
    # shellcheck disable=SC2086 # a list of module names
    module load $ERASE_MODULES
    set -u
fi

# Where erase is built (erase-train, erase-convert). The jobs find the source
# tree from ERASE_TOP or the directory sbatch was run in (SLURM_SUBMIT_DIR);
# the build defaults to its _build (jobs/setup). On a cluster: a shared
# filesystem path every node sees. An installed erase (make install):
# ERASE_TOP=PREFIX/share/erase, and the programs are those of PREFIX/bin
# (jobs/paths.sh); ERASE_BUILD is not used then.
: "${ERASE_BUILD:=$ERASE_TOP/_build}"
export ERASE_BUILD

# ---- launcher -----------------------------------------------------------------
# srun (default) starts the ranks as a job step through Slurm's PMIx plugin
# (--mpi=pmix: Open MPI 4 wires up through it; --mpi=pmi2 does not work with
# Debian's Open MPI). mpirun (Open MPI's, inside the allocation) is the
# alternative where srun has no PMIx plugin: it reads the allocation itself.
: "${ERASE_LAUNCHER:=srun}"
: "${ERASE_SRUN_FLAGS:=--mpi=pmix --kill-on-bad-exit=1}"
# --bind-to none: a rank's stream workers and BLAS threads use the cores
# Slurm gave its task; Open MPI's default binding would put them on one core.
: "${ERASE_MPIRUN_FLAGS:=--bind-to none}"
export ERASE_LAUNCHER ERASE_SRUN_FLAGS ERASE_MPIRUN_FLAGS
# Open MPI refuses to run as root unless told (containers, CI).
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# ---- threads --------------------------------------------------------------------
# erase-train sets its BLAS threads per compute stream itself from the cores
# a rank has (cores of the node / ranks on the node); OpenMP in other
# libraries should not add threads on top. Raise --cpus-per-task in the
# sbatch file (or on the sbatch command line) to give each rank more cores.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# More ranks than cores (CPU runs squeezed onto few cores): Open MPI busy-polls
# while it waits unless told to yield; under mpirun --oversubscribe it yields
# by itself, under srun or in an allocation it does not know. 1: yield.
# export OMPI_MCA_mpi_yield_when_idle=1
# OpenBLAS kernel: erase picks one for the CPU it runs on; pin it with
# ERASE_BLAS_CORE (e.g. Haswell) on clusters whose nodes differ, so every
# node computes bitwise the same.
# export ERASE_BLAS_CORE=SkylakeX

# Open MPI between nodes (several nodes; CPU runs, and MPI's own messages):
# where nodes have several networks, the one to use (a subnet or interface
# names), as NCCL_SOCKET_IFNAME below is for NCCL. Unset: all but loopback.
# export OMPI_MCA_btl_tcp_if_include=10.0.0.0/24

# ---- NCCL (GPU runs; ignored on CPU) ------------------------------------------
# The network interface NCCL's bootstrap and socket transport use: name the
# cluster's data network (e.g. ib0, eth1, hsn0); "^lo,docker" excludes.
# Unset: NCCL chooses (IB interfaces first).
# export NCCL_SOCKET_IFNAME=ib0
# InfiniBand HCAs and ports for NCCL's IB transport (e.g. mlx5_0:1,mlx5_1:1);
# unset: all of them.
# export NCCL_IB_HCA=mlx5
# GPUDirect RDMA: how close a NIC must be to a GPU to use it (PHB, SYS, ...).
# export NCCL_NET_GDR_LEVEL=PHB
# Clusters without InfiniBand: NCCL_IB_DISABLE=1 (sockets only).
# export NCCL_IB_DISABLE=1
# Warnings only; INFO shows the chosen rings, transports and interfaces.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"

# ---- scratch --------------------------------------------------------------------
# Node-local scratch for temporary files (Slurm sites often set TMPDIR per
# job); checkpoints go to ERASE_CHECKPOINT_DIR, which must be shared by all
# nodes (see jobs/README.md).
export TMPDIR="${TMPDIR:-/tmp}"

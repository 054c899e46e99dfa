#!/usr/bin/env bash
# erase on a GPU machine: build, run the GPU tests, run the schedule
# benchmark, and write a short table plus logs to a results folder.
#
#   tests/gpu/device-check.sh            (from the top of the tree)
#
# Made for a machine with an NVIDIA GPU, the CUDA toolkit (nvcc, cuBLAS;
# NCCL from the toolkit or from Python's nvidia-nccl package) and NO
# network: it may lack Open MPI, HDF5, libconfig, cmocka, OpenBLAS and the
# autotools. What it needs comes from _gpu/, made beforehand on a Debian 12
# machine by tests/gpu/prepare.sh: Debian packages (unpacked here into a
# private prefix, never into /) and a `make dist` tarball of this tree.
#
# Environment:
#   OUT                results folder (default: _gpu/results)
#   ERASE_GPU_WORK     scratch folder for the prefix, sources and build
#                      (default: /tmp/erase-gpu; emptied first)
#   CUDA_HOME          CUDA toolkit (default: the folder above nvcc's bin/)
#   ERASE_GPU_STEPS    benchmark steps per mode (default 50)
#   ERASE_GPU_OVERLAY  1: build against a folder of links to the toolkit
#                      and Python's nvidia-* wheels even if the toolkit
#                      has cuBLAS and NCCL (see below)
# Exit status: 0 when the build and every GPU test passed, 1 otherwise.
# Budget: about 2 minutes to build on 16 cores, a minute of tests, two of
# benchmarks (the schedules; the ERASE feasibility table on MNIST batches;
# erase's off step against PyTorch eager on the same GPU, when python3 has
# torch with CUDA); the full test suite runs
# last, bounded by what is left of 8 minutes.
set -uo pipefail
start=$(date +%s)
top=$(cd "$(dirname "$0")/../.." && pwd)
kit=$top/_gpu
out=${OUT:-$kit/results}
case $out in /*) ;; *) out=$PWD/$out ;; esac # the build runs in another folder
work=${ERASE_GPU_WORK:-/tmp/erase-gpu}
steps=${ERASE_GPU_STEPS:-50}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
status=0

# limited SECONDS CMD...: CMD under timeout(1), stopped with this script.
# timeout runs CMD in a process group of its own, out of reach of a signal
# to this script's, and bash runs a trap only after a foreground child
# ends: so CMD runs in the background, the script waits for it, and a TERM
# or INT here is passed on to timeout, which passes it on to CMD.
child=
limited() {
    timeout "$@" &
    child=$!
    wait "$child"
    local rc=$?
    child=
    return $rc
}
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 143' TERM INT

say() { echo "[device-check +$(( $(date +%s) - start ))s] $*" | tee -a "$summary"; }
fail() { say "FAILED: $*"; status=1; }
die() { say "FAILED: $*"; say "logs in $out"; exit 1; }

# ---- the machine ---------------------------------------------------------
{
    date -u '+%Y-%m-%d %H:%M UTC'
    uname -srm
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
    command -v nvcc && nvcc --version | tail -2
    nproc
} >"$out/machine.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
say "GPU: ${gpu:-none visible}; $(nproc) cores"
[ -d "$kit/debs" ] && ls "$kit"/erase-*.tar.gz >/dev/null 2>&1 ||
    die "no kit in $kit: run tests/gpu/prepare.sh on a Debian 12 machine first"

# ---- private prefix of Debian packages ------------------------------------
rm -rf "$work"
deps=$work/deps
mkdir -p "$deps"
for deb in "$kit"/debs/*.deb; do
    # a .deb is an ar archive; its files are in data.tar.{xz,zst,gz}
    member=$(ar t "$deb" | grep '^data\.tar')
    case $member in
    *.xz) ar p "$deb" "$member" | tar -xJ -C "$deps" ;;
    *.zst) ar p "$deb" "$member" | tar --zstd -x -C "$deps" ;;
    *) ar p "$deb" "$member" | tar -xz -C "$deps" ;;
    esac || die "cannot unpack $deb"
done
multiarch=x86_64-linux-gnu
lib=$deps/usr/lib/$multiarch
# Debian makes these names with update-alternatives, which unpacking skips.
ln -sf mpirun.openmpi "$deps/usr/bin/mpirun"
ln -sf mpicc.openmpi "$deps/usr/bin/mpicc"
[ -e "$deps/usr/bin/pkg-config" ] || ln -sf pkgconf "$deps/usr/bin/pkg-config"
[ -e "$lib/libopenblas.so.0" ] || ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
export PATH=$deps/usr/bin:$PATH
export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/hdf5/openmpi:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$deps/usr                 # relocates Open MPI
export PMIX_INSTALL_PREFIX=$deps/usr         # and its PMIx
export PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix
export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$deps          # .pc files say /usr
# No ssh on such machines; every rank is local.
export OMPI_MCA_plm_rsh_agent=
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
say "prefix: $(ls "$kit"/debs/*.deb | wc -l) Debian packages unpacked in $deps"

# ---- CUDA, cuBLAS and NCCL --------------------------------------------------
# configure wants DIR/bin/nvcc, DIR/include and DIR/lib64. Where the toolkit
# lacks cuBLAS or NCCL, the nvidia-* Python wheels that PyTorch installs
# have them (headers, and libraries without the unversioned .so names the
# linker wants): a folder of links joins the two (ERASE_GPU_OVERLAY=1
# forces it, to try the kit on a machine with a complete toolkit).
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")}
nccl_opt=
if [ "${ERASE_GPU_OVERLAY:-0}" = 1 ] || [ ! -e "$cuda/lib64/libcublas.so" ] || [ ! -f "$cuda/include/nccl.h" ]; then
    pynv=$(env -u LD_LIBRARY_PATH python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null || true)
    overlay=$work/cuda
    mkdir -p "$overlay/include" "$overlay/lib64"
    for f in "$cuda"/*; do # bin, nvvm, targets...: nvcc finds them beside its bin/
        case ${f##*/} in include | lib | lib64) ;; *) ln -s "$f" "$overlay/" ;; esac
    done
    ln -s lib64 "$overlay/lib"
    for d in "$cuda/include" ${pynv:+"$pynv"/*/include}; do
        for f in "$d"/*; do
            [ -e "$f" ] && [ ! -e "$overlay/include/${f##*/}" ] && ln -s "$f" "$overlay/include/"
        done
    done
    for d in "$cuda/lib64" ${pynv:+"$pynv"/*/lib}; do
        for f in "$d"/lib*.so*; do
            [ -e "$f" ] && [ ! -e "$overlay/lib64/${f##*/}" ] && ln -s "$f" "$overlay/lib64/"
        done
    done
    for f in "$overlay"/lib64/lib*.so.*; do
        [ -e "$f" ] || continue
        base=${f%%.so.*}.so
        [ -e "$base" ] || ln -s "${f##*/}" "$base"
    done
    say "CUDA overlay in $overlay: toolkit $cuda${pynv:+ + Python wheels in $pynv}"
    cuda=$overlay
    [ -f "$cuda/include/nccl.h" ] && nccl_opt=--with-nccl=$cuda
fi
say "CUDA: $cuda; NCCL: ${nccl_opt:-from the toolkit}"

# ---- build -----------------------------------------------------------------
mkdir -p "$work/src" "$work/build"
tar -xzf "$(ls "$kit"/erase-*.tar.gz | head -1)" -C "$work/src" --strip-components=1 ||
    die "cannot unpack the source tarball"
cd "$work/build" || die "no build folder"
# MPI, HDF5, libconfig and cmocka through pkg-config in the prefix
"$work/src/configure" --with-cuda="$cuda" $nccl_opt \
    --with-blas="$lib/openblas-pthread/libopenblas.so.0" \
    >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; die "configure (log: configure.log)"; }
grep -A14 'erase .* configuration' "$out/configure.log" | tee -a "$summary"
grep -q 'CUDA toolkit *: yes' "$out/configure.log" || die "configure did not find CUDA"
make -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; die "build (log: build.log)"; }
say "built"

# ---- GPU tests ---------------------------------------------------------------
gpu_tests=$(make -s print-gpu-tests)
[ -n "$gpu_tests" ] || die "the build lists no GPU tests (make print-gpu-tests)"
say "GPU tests: $gpu_tests"
make -j"$(nproc)" check TESTS="$gpu_tests" >"$out/gpu-tests.log" 2>&1
gpu_rc=$?
for t in $gpu_tests; do
    cp "$t.log" "$out/$(echo "$t" | tr / -).log" 2>/dev/null
done
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):|^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$out/gpu-tests.log" | tee -a "$summary"
[ $gpu_rc -eq 0 ] || fail "GPU tests (logs: tests-*.log)"
# a SKIP on a GPU machine is a failure, except a test for more GPUs than it has
grep '^SKIP' "$out/gpu-tests.log" | grep -q -v 'fewer GPUs than ranks' &&
    fail "a GPU test skipped on a GPU machine (see its log)"

# ---- schedule benchmark --------------------------------------------------------
say "benchmark: erase-bench schedules --device cuda, ctr and mlp, every mode vs off"
for model in ctr mlp; do
    limited 150 ./apps/erase-bench schedules --device cuda --model $model \
        --batch 256,1024,4096,16384 --steps "$steps" --warmup 10 \
        >"$out/bench-$model.txt" 2>&1 || fail "erase-bench schedules --model $model (bench-$model.txt)"
    grep -E '^(model|ctr|mlp|# warning)' "$out/bench-$model.txt" | tee -a "$summary"
done
say "benchmark: the same for ctr with --gemm tf32 (tensor cores)"
limited 100 ./apps/erase-bench schedules --device cuda --gemm tf32 --model ctr --batch 1024,16384 \
    --steps "$steps" --warmup 10 >"$out/bench-ctr-tf32.txt" 2>&1 ||
    fail "erase-bench schedules --gemm tf32 (bench-ctr-tf32.txt)"
grep -E '^(model|ctr|# warning)' "$out/bench-ctr-tf32.txt" | tee -a "$summary"
say "benchmark: the ERASE feasibility table (MLP, every mode vs off) on MNIST batches"
./apps/erase-convert mnist -q "$work/src/data/mnist/t10k-images-idx3-ubyte.gz" \
    "$work/src/data/mnist/t10k-labels-idx1-ubyte.gz" -o "$work/mnist" >"$out/convert-mnist.txt" 2>&1 &&
    limited 100 ./apps/erase-bench schedules --device cuda --feasibility --data "$work/mnist/train" \
        --batch 64,256,1024,4096 --steps "$steps" --warmup 10 >"$out/bench-feasibility.txt" 2>&1 ||
    fail "erase-bench schedules --feasibility --data (convert-mnist.txt, bench-feasibility.txt)"
grep -E '^( *batch| *[0-9]+ |# paper|# warning)' "$out/bench-feasibility.txt" | tee -a "$summary"

# ---- erase's off step against PyTorch eager on the same GPU ------------------------
if command -v python3 >/dev/null && env -u LD_LIBRARY_PATH python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    say "benchmark: erase-bench model --device cuda --torch (the off step vs PyTorch eager)"
    ERASE_TORCH_PYTHON="env -u LD_LIBRARY_PATH python3" limited 150 ./apps/erase-bench model \
        --device cuda --torch --model both --batch 256,1024,4096,16384 --threads 1 --steps 30 \
        >"$out/bench-model.txt" 2>&1 || fail "erase-bench model --torch (bench-model.txt)"
    grep -E '^(model|ctr|mlp|# warning)' "$out/bench-model.txt" | tee -a "$summary"
else
    say "no PyTorch with CUDA here: erase-bench model --torch skipped"
fi

# ---- the whole suite, in what is left of 8 minutes -------------------------------
left=$(( 480 - ($(date +%s) - start) - 20 ))
if [ $left -gt 60 ]; then
    say "full make check (at most ${left}s)"
    limited $left make -j"$(nproc)" check >"$out/check.log" 2>&1
    rc=$?
    grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$out/check.log" | tee -a "$summary"
    [ $rc -eq 124 ] && say "full make check stopped at the time limit"
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && fail "full make check (check.log)"
fi
say "done in $(( $(date +%s) - start ))s, status $status; logs in $out"
exit $status

# ERASE_CHECK_CUDA: --with-cuda[=DIR] and --with-nccl[=DIR] (optional;
# default "guess": missing is a warning, missing when asked for is an error),
# --with-cuda-arch=LIST (default 90: sm_90 code plus compute_90 PTX).
# Sets NVCC, CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS, NCCL_CPPFLAGS,
# NCCL_LDFLAGS, NCCL_LIBS, NVCC_ARCH_FLAGS, HAVE_CUDA and HAVE_NCCL.
AC_DEFUN([ERASE_CHECK_CUDA], [
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit (nvcc, cudart, cuBLAS) (default: guess)])],
  [], [with_cuda=guess])
AC_ARG_WITH([nccl],
  [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [NCCL (default: guess; needs CUDA)])],
  [], [with_nccl=guess])
AC_ARG_WITH([cuda-arch],
  [AS_HELP_STRING([--with-cuda-arch=LIST], [comma-separated compute capabilities to build for (default: 90)])],
  [], [with_cuda_arch=90])
have_cuda=no have_nccl=no
erase_cuda_summary="no (not requested)" erase_nccl_summary="no (not requested)"
AS_IF([test "x$with_cuda" != xno], [
  AS_CASE([$with_cuda],
    [guess|yes], [AC_PATH_PROG([NVCC], [nvcc], [], [$PATH:/usr/local/cuda/bin])
                  AS_IF([test -n "$NVCC"], [erase_cuda_dir=`dirname "$NVCC"`; erase_cuda_dir=`dirname "$erase_cuda_dir"`])],
    [AC_PATH_PROG([NVCC], [nvcc], [], [$with_cuda/bin])
     erase_cuda_dir=$with_cuda])
  AS_IF([test -n "$NVCC"], [
    CUDA_CPPFLAGS="-I$erase_cuda_dir/include"
    CUDA_LDFLAGS="-L$erase_cuda_dir/lib64 -Wl,-rpath,$erase_cuda_dir/lib64"
    save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
    AC_CHECK_HEADERS([cuda_runtime_api.h cublas_v2.h], [], [NVCC=])
    AC_CHECK_LIB([cudart], [cudaStreamBeginCapture], [], [NVCC=])
    AC_CHECK_LIB([cublas], [cublasSgemm_v2], [], [NVCC=])
    CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS; LIBS=$save_LIBS])
  AS_IF([test -n "$NVCC"], [
    have_cuda=yes
    CUDA_LIBS="-lcublas -lcudart"
    erase_cuda_version=`$NVCC --version | $SED -n 's/.*release \(@<:@0-9.@:>@*\).*/\1/p'`
    erase_cuda_summary="yes (CUDA $erase_cuda_version in $erase_cuda_dir, arch $with_cuda_arch)"],
    [AS_IF([test "x$with_cuda" = xguess],
      [AC_MSG_WARN([no usable CUDA toolkit found: the CUDA backend will not be built]); erase_cuda_summary="no (not found)"],
      [AC_MSG_ERROR([--with-cuda was given but no usable CUDA toolkit (nvcc, cudart, cuBLAS) was found])])])
])
AS_IF([test "x$have_cuda" = xyes && test "x$with_nccl" != xno], [
  AS_CASE([$with_nccl],
    [guess|yes], [NCCL_CPPFLAGS=$CUDA_CPPFLAGS; NCCL_LDFLAGS=$CUDA_LDFLAGS],
    [NCCL_CPPFLAGS="-I$with_nccl/include"; NCCL_LDFLAGS="-L$with_nccl/lib -Wl,-rpath,$with_nccl/lib"])
  save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS; save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $NCCL_CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $NCCL_LDFLAGS $CUDA_LDFLAGS"
  AC_CHECK_HEADER([nccl.h], [AC_CHECK_LIB([nccl], [ncclCommInitRank], [have_nccl=yes], [], [-lcudart])])
  CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS; LIBS=$save_LIBS
  AS_IF([test "x$have_nccl" = xyes], [NCCL_LIBS="-lnccl"; erase_nccl_summary="yes"],
    [AS_IF([test "x$with_nccl" = xguess],
      [AC_MSG_WARN([NCCL not found: GPU collectives will not be built]); erase_nccl_summary="no (not found)"],
      [AC_MSG_ERROR([--with-nccl was given but NCCL (nccl.h, libnccl) was not found])])])],
  [AS_IF([test "x$with_nccl" != xno && test "x$with_nccl" != xguess],
    [AC_MSG_ERROR([--with-nccl needs the CUDA toolkit, which was not found])])
   AS_IF([test "x$have_cuda" = xno], [erase_nccl_summary="no (needs CUDA)"])])
NVCC_ARCH_FLAGS=
for erase_arch in `echo "$with_cuda_arch" | tr ',' ' '`; do
  NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$erase_arch,code=sm_$erase_arch"
done
NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$erase_arch,code=compute_$erase_arch"
AS_IF([test "x$have_cuda" = xyes], [AC_DEFINE([HAVE_CUDA], [1], [the CUDA backend is built])])
AS_IF([test "x$have_nccl" = xyes], [AC_DEFINE([HAVE_NCCL], [1], [NCCL communicators are built])])
AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
AM_CONDITIONAL([HAVE_NCCL], [test "x$have_nccl" = xyes])
AC_SUBST([CUDA_CPPFLAGS]) AC_SUBST([CUDA_LDFLAGS]) AC_SUBST([CUDA_LIBS])
AC_SUBST([NCCL_CPPFLAGS]) AC_SUBST([NCCL_LDFLAGS]) AC_SUBST([NCCL_LIBS])
AC_SUBST([NVCC_ARCH_FLAGS])
AS_IF([test "x$have_cuda" = xyes], [erase_build_extra=", CUDA backend (cuBLAS, CUDA graphs, NVTX)"])
AS_IF([test "x$have_nccl" = xyes], [erase_build_extra="$erase_build_extra, NCCL communicators"])
])

# ERASE_CHECK_CMOCKA: the unit-test framework used by make check.
AC_DEFUN([ERASE_CHECK_CMOCKA], [
PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1], [have_cmocka=yes], [have_cmocka=no])
AM_CONDITIONAL([HAVE_CMOCKA], [test "x$have_cmocka" = xyes])
AS_IF([test "x$have_cmocka" = xyes],
  [erase_cmocka_summary="cmocka `$PKG_CONFIG --modversion cmocka`"; erase_check_summary="yes (TAP through the automake harness)"],
  [AC_MSG_WARN([cmocka not found: make check will fail; install libcmocka-dev])
   erase_cmocka_summary="no"; erase_check_summary="no: install libcmocka-dev"])
])

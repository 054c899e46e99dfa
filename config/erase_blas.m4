# ERASE_CHECK_BLAS: --with-blas[=LIB] (required). LIB is a library name
# (openblas) or a path to a shared library with the CBLAS interface.
# erase loads that library with dlopen() at device start-up, after choosing
# the OpenBLAS kernel for the CPU (see lib/device/cpu/cpu_blas.c), so the
# library is checked here and its soname recorded as ERASE_BLAS_LIBRARY.
AC_DEFUN([ERASE_CHECK_BLAS], [
AC_ARG_WITH([blas],
  [AS_HELP_STRING([--with-blas@<:@=LIB@:>@], [BLAS with a CBLAS interface (required; default: guess openblas)])],
  [], [with_blas=guess])
AS_IF([test "x$with_blas" = xno], [AC_MSG_ERROR([erase requires a BLAS; --without-blas is not possible])])
AC_CHECK_TOOL([READELF], [readelf])
AS_CASE([$with_blas],
  [guess|yes|openblas], [erase_blas_file=`$CC -print-file-name=libopenblas.so`],
  [/*], [erase_blas_file=$with_blas],
  [erase_blas_file=`$CC -print-file-name=lib$with_blas.so`])
erase_blas_file=`readlink -f "$erase_blas_file" 2>/dev/null || echo "$erase_blas_file"`
AC_MSG_CHECKING([for a CBLAS library to load])
AS_IF([test -f "$erase_blas_file"], [AC_MSG_RESULT([$erase_blas_file])],
  [AC_MSG_RESULT([no])
   AC_MSG_ERROR([erase requires a BLAS with a CBLAS interface: install libopenblas-dev or give --with-blas=/path/to/libX.so])])
save_LIBS=$LIBS; LIBS="$erase_blas_file $LIBS"
AC_MSG_CHECKING([whether it provides cblas_sgemm])
AC_LINK_IFELSE([AC_LANG_CALL([], [cblas_sgemm])], [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no]); AC_MSG_ERROR([$erase_blas_file has no cblas_sgemm])])
AC_MSG_CHECKING([whether it is OpenBLAS])
AC_LINK_IFELSE([AC_LANG_CALL([], [openblas_get_corename])],
  [AC_MSG_RESULT([yes]); erase_blas_kind=OpenBLAS], [AC_MSG_RESULT([no]); erase_blas_kind=CBLAS])
LIBS=$save_LIBS
erase_blas_soname=
AS_IF([test -n "$READELF"],
  [erase_blas_soname=`$READELF -d "$erase_blas_file" 2>/dev/null | $SED -n 's/.*(SONAME).*\@<:@\(.*\)\@:>@.*/\1/p'`])
AS_IF([test -z "$erase_blas_soname"], [erase_blas_soname=$erase_blas_file])
AC_DEFINE_UNQUOTED([ERASE_BLAS_LIBRARY], ["$erase_blas_soname"], [BLAS library loaded with dlopen])
erase_blas_summary="$erase_blas_kind, loaded at run time as $erase_blas_soname ($erase_blas_file)"
])

# ERASE_CHECK_MPI: --with-mpi[=DIR] (required). Default "guess": pkg-config
# ompi-c, then the mpicc wrapper. Sets MPI_CPPFLAGS, MPI_LDFLAGS, MPI_LIBS,
# MPIRUN and HAVE_MPI.
AC_DEFUN([ERASE_CHECK_MPI], [
AC_ARG_WITH([mpi],
  [AS_HELP_STRING([--with-mpi@<:@=DIR@:>@], [MPI installation (required; default: guess)])],
  [], [with_mpi=guess])
AS_IF([test "x$with_mpi" = xno], [AC_MSG_ERROR([erase requires MPI (Open MPI); --without-mpi is not possible])])
MPI_CPPFLAGS= MPI_LDFLAGS= MPI_LIBS=
AS_CASE([$with_mpi],
  [guess|yes], [
    PKG_CHECK_MODULES([OMPI], [ompi-c], [MPI_CPPFLAGS=$OMPI_CFLAGS; MPI_LIBS=$OMPI_LIBS], [
      AC_PATH_PROG([MPICC_WRAPPER], [mpicc])
      AS_IF([test -n "$MPICC_WRAPPER"], [
        MPI_CPPFLAGS=`$MPICC_WRAPPER --showme:compile 2>/dev/null`
        MPI_LIBS=`$MPICC_WRAPPER --showme:link 2>/dev/null`])])],
  [MPI_CPPFLAGS="-I$with_mpi/include"; MPI_LDFLAGS="-L$with_mpi/lib -Wl,-rpath,$with_mpi/lib"; MPI_LIBS="-lmpi"])
save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS; save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS"; LDFLAGS="$LDFLAGS $MPI_LDFLAGS"; LIBS="$MPI_LIBS $LIBS"
AC_MSG_CHECKING([for a working MPI (mpi.h, MPI_Init_thread)])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
  [[int p; MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &p); MPI_Finalize();]])],
  [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no])
   AC_MSG_ERROR([erase requires MPI: install Open MPI (Debian: libopenmpi-dev openmpi-bin) or give --with-mpi=DIR])])
AC_COMPUTE_INT([erase_ompi_major], [OMPI_MAJOR_VERSION], [[#include <mpi.h>]], [erase_ompi_major=none])
CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS; LIBS=$save_LIBS
AS_IF([test "x$with_mpi" = xguess || test "x$with_mpi" = xyes],
  [AC_PATH_PROG([MPIRUN], [mpirun])],
  [AC_PATH_PROG([MPIRUN], [mpirun], [], [$with_mpi/bin])])
AS_IF([test -z "$MPIRUN"], [AC_MSG_ERROR([MPI was found but no mpirun: install openmpi-bin])])
AM_CONDITIONAL([HAVE_MPI], [true])
AC_DEFINE([HAVE_MPI], [1], [MPI is available])
AC_SUBST([MPI_CPPFLAGS]) AC_SUBST([MPI_LDFLAGS]) AC_SUBST([MPI_LIBS]) AC_SUBST([MPIRUN])
erase_mpi_summary="yes (Open MPI $erase_ompi_major.x, $MPIRUN)"
])

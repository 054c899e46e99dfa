# ERASE_CHECK_HDF5: --with-hdf5[=DIR] (required, the parallel build).
# Default "guess": pkg-config hdf5-openmpi. Sets HDF5_CPPFLAGS, HDF5_LDFLAGS,
# HDF5_LIBS and HAVE_HDF5.
AC_DEFUN([ERASE_CHECK_HDF5], [
AC_REQUIRE([ERASE_CHECK_MPI])
AC_ARG_WITH([hdf5],
  [AS_HELP_STRING([--with-hdf5@<:@=DIR@:>@], [parallel HDF5 installation (required; default: guess)])],
  [], [with_hdf5=guess])
AS_IF([test "x$with_hdf5" = xno], [AC_MSG_ERROR([erase requires HDF5; --without-hdf5 is not possible])])
HDF5_CPPFLAGS= HDF5_LDFLAGS= HDF5_LIBS=
AS_CASE([$with_hdf5],
  [guess|yes], [PKG_CHECK_MODULES([PHDF5], [hdf5-openmpi],
      [HDF5_CPPFLAGS=$PHDF5_CFLAGS; HDF5_LIBS=$PHDF5_LIBS],
      [HDF5_LIBS="-lhdf5"])],
  [HDF5_CPPFLAGS="-I$with_hdf5/include"; HDF5_LDFLAGS="-L$with_hdf5/lib -Wl,-rpath,$with_hdf5/lib"; HDF5_LIBS="-lhdf5"])
save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS; save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $HDF5_CPPFLAGS $MPI_CPPFLAGS"; LDFLAGS="$LDFLAGS $HDF5_LDFLAGS $MPI_LDFLAGS"; LIBS="$HDF5_LIBS $MPI_LIBS $LIBS"
AC_MSG_CHECKING([for a parallel HDF5 (hdf5.h with H5_HAVE_PARALLEL, H5Fopen)])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>
#ifndef H5_HAVE_PARALLEL
#error not the parallel HDF5 build
#endif]], [[return H5Fopen("x", H5F_ACC_RDONLY, H5P_DEFAULT) < 0;]])],
  [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no])
   AC_MSG_ERROR([erase requires the parallel HDF5 build: install libhdf5-openmpi-dev or give --with-hdf5=DIR])])
AC_COMPUTE_INT([erase_h5_major], [H5_VERS_MAJOR], [[#include <hdf5.h>]], [erase_h5_major=?])
AC_COMPUTE_INT([erase_h5_minor], [H5_VERS_MINOR], [[#include <hdf5.h>]], [erase_h5_minor=?])
AC_COMPUTE_INT([erase_h5_release], [H5_VERS_RELEASE], [[#include <hdf5.h>]], [erase_h5_release=?])
CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS; LIBS=$save_LIBS
AM_CONDITIONAL([HAVE_HDF5], [true])
AC_DEFINE([HAVE_HDF5], [1], [parallel HDF5 is available])
AC_SUBST([HDF5_CPPFLAGS]) AC_SUBST([HDF5_LDFLAGS]) AC_SUBST([HDF5_LIBS])
erase_hdf5_summary="yes ($erase_h5_major.$erase_h5_minor.$erase_h5_release, parallel)"
])

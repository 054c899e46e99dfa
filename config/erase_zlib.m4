# ERASE_CHECK_ZLIB: zlib (required: erase-convert reads gzip-compressed
# Criteo logs). pkg-config zlib, else -lz. Sets ZLIB_CPPFLAGS, ZLIB_LIBS and
# HAVE_ZLIB.
AC_DEFUN([ERASE_CHECK_ZLIB], [
ZLIB_CPPFLAGS= ZLIB_LIBS=
PKG_CHECK_MODULES([ZLIBPC], [zlib], [ZLIB_CPPFLAGS=$ZLIBPC_CFLAGS; ZLIB_LIBS=$ZLIBPC_LIBS], [ZLIB_LIBS="-lz"])
save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $ZLIB_CPPFLAGS"; LIBS="$ZLIB_LIBS $LIBS"
AC_MSG_CHECKING([for zlib (zlib.h, gzopen)])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <zlib.h>]], [[gzFile f = gzopen("x", "rb"); return f == 0;]])],
  [AC_MSG_RESULT([yes])],
  [AC_MSG_RESULT([no])
   AC_MSG_ERROR([erase requires zlib to read gzip input: install zlib1g-dev])])
CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
AC_DEFINE([HAVE_ZLIB], [1], [zlib is available])
AC_SUBST([ZLIB_CPPFLAGS]) AC_SUBST([ZLIB_LIBS])
])

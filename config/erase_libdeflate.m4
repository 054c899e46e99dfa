# ERASE_CHECK_LIBDEFLATE: libdeflate (optional: erase-convert compresses the
# shards' chunks itself with it and writes them with HDF5's direct chunk
# write, about 3x faster than HDF5's deflate filter through zlib; without it
# the HDF5 filter pipeline compresses, as before). pkg-config libdeflate,
# else -ldeflate. Sets LIBDEFLATE_CPPFLAGS, LIBDEFLATE_LIBS, HAVE_LIBDEFLATE
# and erase_libdeflate_summary.
AC_DEFUN([ERASE_CHECK_LIBDEFLATE], [
LIBDEFLATE_CPPFLAGS= LIBDEFLATE_LIBS=
PKG_CHECK_MODULES([LIBDEFLATEPC], [libdeflate], [LIBDEFLATE_CPPFLAGS=$LIBDEFLATEPC_CFLAGS; LIBDEFLATE_LIBS=$LIBDEFLATEPC_LIBS],
  [LIBDEFLATE_LIBS="-ldeflate"])
save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
CPPFLAGS="$CPPFLAGS $LIBDEFLATE_CPPFLAGS"; LIBS="$LIBDEFLATE_LIBS $LIBS"
AC_MSG_CHECKING([for libdeflate (libdeflate.h, libdeflate_zlib_compress)])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <libdeflate.h>]],
  [[struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);
    return libdeflate_zlib_compress(c, "", 0, 0, 0) != 0;]])],
  [AC_MSG_RESULT([yes]); have_libdeflate=yes],
  [AC_MSG_RESULT([no: shards are compressed by HDF5's deflate filter (slower); install libdeflate-dev])
   have_libdeflate=no LIBDEFLATE_CPPFLAGS= LIBDEFLATE_LIBS=])
CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
AS_IF([test "x$have_libdeflate" = xyes],
  [AC_DEFINE([HAVE_LIBDEFLATE], [1], [libdeflate is available (direct chunk writes of compressed shards)])
   erase_libdeflate_summary="yes (shard chunks compressed by libdeflate)"],
  [erase_libdeflate_summary="no (HDF5's deflate filter)"])
AC_SUBST([LIBDEFLATE_CPPFLAGS]) AC_SUBST([LIBDEFLATE_LIBS])
])

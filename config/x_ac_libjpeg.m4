# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_LIBJPEG: libjpeg-turbo through its libjpeg API (jpeglib.h), which has
# the partial-decode calls (jpeg_crop_scanline, jpeg_skip_scanlines) that the
# TurboJPEG API of 2.1 lacks.
AC_DEFUN([X_AC_LIBJPEG], [
	PKG_CHECK_MODULES([LIBJPEG], [libjpeg >= 1.5], [], [
		AC_CHECK_HEADER([jpeglib.h], [LIBJPEG_LIBS=-ljpeg],
			[AC_MSG_ERROR([libjpeg-turbo not found: install libjpeg62-turbo-dev])])])
	save_LIBS=$LIBS
	LIBS="$LIBS $LIBJPEG_LIBS"
	AC_CHECK_FUNCS([jpeg_crop_scanline jpeg_skip_scanlines], [],
		[AC_MSG_ERROR([libjpeg lacks partial decode: libjpeg-turbo >= 1.5 is required])])
	LIBS=$save_LIBS
])

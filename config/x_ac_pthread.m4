# SPDX-License-Identifier: GPL-2.0-or-later
# AX_PTHREAD_SIMPLE: pthreads through -pthread, which gcc and clang accept.
AC_DEFUN([AX_PTHREAD_SIMPLE], [
	PTHREAD_CFLAGS=-pthread
	PTHREAD_LIBS=-pthread
	AC_SUBST([PTHREAD_CFLAGS])
	AC_SUBST([PTHREAD_LIBS])
])

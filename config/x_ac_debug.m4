# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_DEBUG: --enable-debug turns on internal consistency checks (SYN_DEBUG).
AC_DEFUN([X_AC_DEBUG], [
	AC_ARG_ENABLE([debug],
		[AS_HELP_STRING([--enable-debug], [internal consistency checks, -O0 -g])],
		[], [enable_debug=no])
	AS_IF([test "x$enable_debug" = xyes], [
		AC_DEFINE([SYN_DEBUG], [1], [internal consistency checks])
		CFLAGS="$CFLAGS -O0 -g"])
])

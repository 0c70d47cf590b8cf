# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_CUDA: optional CUDA runtime for pinned batch buffers and async copies.
# --enable-cuda=yes fails without CUDA; auto (default) uses it when found;
# no disables it. --with-cuda=DIR names the toolkit (default: nvcc's prefix).
AC_DEFUN([X_AC_CUDA], [
	AC_ARG_ENABLE([cuda],
		[AS_HELP_STRING([--enable-cuda@<:@=yes|no|auto@:>@], [CUDA runtime support (default auto)])],
		[], [enable_cuda=auto])
	AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit prefix])],
		[cuda_dir=$withval], [cuda_dir=])
	have_cuda=no
	AS_IF([test "x$enable_cuda" != xno], [
		AS_IF([test -z "$cuda_dir"], [
			AC_PATH_PROG([NVCC], [nvcc], [], [$PATH$PATH_SEPARATOR/usr/local/cuda/bin])
			AS_IF([test -n "$NVCC"], [cuda_dir=`dirname "$NVCC"`; cuda_dir=`dirname "$cuda_dir"`])])
		AS_IF([test -n "$cuda_dir"], [
			for d in "$cuda_dir/targets/x86_64-linux" "$cuda_dir"; do
				AS_IF([test -f "$d/include/cuda_runtime_api.h"], [
					CUDA_CPPFLAGS="-I$d/include"
					CUDA_LIBS="-L$d/lib -L$d/lib64 -Wl,-rpath,$d/lib -Wl,-rpath,$d/lib64 -lcudart"
					break])
			done])
		AS_IF([test -n "$CUDA_CPPFLAGS"], [
			save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
			CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LIBS="$LIBS $CUDA_LIBS"
			AC_MSG_CHECKING([for the CUDA runtime])
			AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
				[[int n; return cudaGetDeviceCount(&n);]])],
				[have_cuda=yes], [have_cuda=no])
			AC_MSG_RESULT([$have_cuda])
			CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS])
		AS_IF([test "x$enable_cuda" = xyes && test "x$have_cuda" = xno],
			[AC_MSG_ERROR([--enable-cuda given but the CUDA runtime was not found (use --with-cuda=DIR)])])])
	AS_IF([test "x$have_cuda" = xyes], [AC_DEFINE([HAVE_CUDA], [1], [CUDA runtime available])],
		[CUDA_CPPFLAGS=; CUDA_LIBS=])
	AC_SUBST([CUDA_CPPFLAGS])
	AC_SUBST([CUDA_LIBS])
	AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
])

# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_PEERS: the transports of libcoordl's partitioned cache (loader/peer.h).
# --with-ucx=yes fails without UCX (libucx-dev); auto (default) uses it when
# pkg-config finds it; no builds a loader whose multi-node jobs read their
# misses from storage. --with-pmix likewise for PMIx (libpmix-dev), which
# wires up ranks that `srun --mpi=pmix` launched; it needs UCX.
AC_DEFUN([X_AC_PEERS], [
	AC_ARG_WITH([ucx],
		[AS_HELP_STRING([--with-ucx@<:@=yes|no|auto@:>@], [UCX for the multi-node partitioned cache (default auto)])],
		[], [with_ucx=auto])
	AC_ARG_WITH([pmix],
		[AS_HELP_STRING([--with-pmix@<:@=yes|no|auto@:>@], [PMIx wire-up of the partitioned cache (default auto)])],
		[], [with_pmix=auto])
	have_ucx=no
	have_pmix=no
	AS_IF([test "x$with_ucx" != xno], [
		PKG_CHECK_MODULES([UCX], [ucx >= 1.10], [have_ucx=yes], [have_ucx=no])
		AS_IF([test "x$with_ucx" = xyes && test $have_ucx = no],
			[AC_MSG_ERROR([--with-ucx given but UCX >= 1.10 was not found: install libucx-dev])])])
	AS_IF([test $have_ucx = yes && test "x$with_pmix" != xno], [
		PKG_CHECK_MODULES([PMIX], [pmix >= 4.0], [have_pmix=yes], [have_pmix=no])])
	AS_IF([test "x$with_pmix" = xyes && test $have_pmix = no],
		[AC_MSG_ERROR([--with-pmix given but PMIx >= 4 (and UCX) were not found: install libpmix-dev libucx-dev])])
	AS_IF([test $have_ucx = yes], [AC_DEFINE([HAVE_UCX], [1], [UCX for the partitioned cache])],
		[UCX_CFLAGS=; UCX_LIBS=])
	AS_IF([test $have_pmix = yes], [AC_DEFINE([HAVE_PMIX], [1], [PMIx wire-up of the partitioned cache])],
		[PMIX_CFLAGS=; PMIX_LIBS=])
	AC_SUBST([UCX_CFLAGS])
	AC_SUBST([UCX_LIBS])
	AC_SUBST([PMIX_CFLAGS])
	AC_SUBST([PMIX_LIBS])
	AM_CONDITIONAL([HAVE_UCX], [test $have_ucx = yes])
	AM_CONDITIONAL([HAVE_PMIX], [test $have_pmix = yes])
])

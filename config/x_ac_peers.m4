# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_PEERS: libcoordl's partitioned cache (loader/peer.h) and its tests.
# The peer tier runs over its own TCP connections, authenticated with
# HMAC-SHA256 under the step's key: it needs OpenSSL's libcrypto
# (libssl-dev). --with-libcrypto=yes fails without it; auto (default) builds
# the peer tier when pkg-config finds it; no builds a loader whose
# multi-node jobs read their misses from storage. --with-pmix likewise for
# PMIx (libpmix-dev), which wires up ranks that `srun --mpi=pmix` launched;
# it needs the peer tier. --with-ucx: UCX (libucx-dev) for the tests only
# (loader/test/peer.t plays a hostile UCX process against the loader);
# libcoordl never links it.
AC_DEFUN([X_AC_PEERS], [
	AC_ARG_WITH([libcrypto],
		[AS_HELP_STRING([--with-libcrypto@<:@=yes|no|auto@:>@], [OpenSSL libcrypto for the multi-node partitioned cache (default auto)])],
		[], [with_libcrypto=auto])
	AC_ARG_WITH([pmix],
		[AS_HELP_STRING([--with-pmix@<:@=yes|no|auto@:>@], [PMIx wire-up of the partitioned cache (default auto)])],
		[], [with_pmix=auto])
	AC_ARG_WITH([ucx],
		[AS_HELP_STRING([--with-ucx@<:@=yes|no|auto@:>@], [UCX for the partitioned cache's hostile-peer tests (default auto)])],
		[], [with_ucx=auto])
	have_peers=no
	have_pmix=no
	have_ucx=no
	AS_IF([test "x$with_libcrypto" != xno], [
		PKG_CHECK_MODULES([LIBCRYPTO], [libcrypto >= 1.1.1], [have_peers=yes], [have_peers=no])
		AS_IF([test "x$with_libcrypto" = xyes && test $have_peers = no],
			[AC_MSG_ERROR([--with-libcrypto given but libcrypto >= 1.1.1 was not found: install libssl-dev])])])
	AS_IF([test $have_peers = yes && test "x$with_pmix" != xno], [
		PKG_CHECK_MODULES([PMIX], [pmix >= 4.0], [have_pmix=yes], [have_pmix=no])])
	AS_IF([test "x$with_pmix" = xyes && test $have_pmix = no],
		[AC_MSG_ERROR([--with-pmix given but PMIx >= 4 (and libcrypto) were not found: install libpmix-dev libssl-dev])])
	AS_IF([test "x$with_ucx" != xno], [
		PKG_CHECK_MODULES([UCX], [ucx >= 1.10], [have_ucx=yes], [have_ucx=no])
		AS_IF([test "x$with_ucx" = xyes && test $have_ucx = no],
			[AC_MSG_ERROR([--with-ucx given but UCX >= 1.10 was not found: install libucx-dev])])])
	AS_IF([test $have_peers = yes], [AC_DEFINE([HAVE_PEERS], [1], [the partitioned cache's peer tier (libcrypto)])],
		[LIBCRYPTO_CFLAGS=; LIBCRYPTO_LIBS=])
	AS_IF([test $have_pmix = yes], [AC_DEFINE([HAVE_PMIX], [1], [PMIx wire-up of the partitioned cache])],
		[PMIX_CFLAGS=; PMIX_LIBS=])
	AS_IF([test $have_ucx = yes], [AC_DEFINE([HAVE_UCX], [1], [UCX for the peer tier's hostile-peer tests])],
		[UCX_CFLAGS=; UCX_LIBS=])
	AC_SUBST([LIBCRYPTO_CFLAGS])
	AC_SUBST([LIBCRYPTO_LIBS])
	AC_SUBST([PMIX_CFLAGS])
	AC_SUBST([PMIX_LIBS])
	AC_SUBST([UCX_CFLAGS])
	AC_SUBST([UCX_LIBS])
	AM_CONDITIONAL([HAVE_PEERS], [test $have_peers = yes])
	AM_CONDITIONAL([HAVE_PMIX], [test $have_pmix = yes])
	AM_CONDITIONAL([HAVE_UCX], [test $have_ucx = yes])
])

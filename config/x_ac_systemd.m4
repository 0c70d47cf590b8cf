# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SYSTEMD: where `make install` puts the synergyd unit. Default: the
# systemdsystemunitdir of pkg-config's systemd (where this machine's systemd
# looks), else $prefix/lib/systemd/system. --with-systemdsystemunitdir=DIR
# overrides; =no installs no unit. Substitutes systemdsystemunitdir and sets
# the conditional HAVE_SYSTEMD_UNITDIR.
AC_DEFUN([X_AC_SYSTEMD], [
	AC_ARG_WITH([systemdsystemunitdir],
		[AS_HELP_STRING([--with-systemdsystemunitdir=DIR],
			[directory for the synergyd systemd unit (default: pkg-config
			 systemd's systemdsystemunitdir, else PREFIX/lib/systemd/system;
			 no: install no unit)])],
		[], [with_systemdsystemunitdir=auto])
	AS_CASE([$with_systemdsystemunitdir],
		[auto|yes], [
			PKG_CHECK_VAR([systemdsystemunitdir], [systemd], [systemdsystemunitdir])
			AS_IF([test -z "$systemdsystemunitdir"],
				[systemdsystemunitdir='${prefix}/lib/systemd/system'])],
		[no|""], [systemdsystemunitdir=],
		[systemdsystemunitdir=$with_systemdsystemunitdir])
	AC_SUBST([systemdsystemunitdir])
	AM_CONDITIONAL([HAVE_SYSTEMD_UNITDIR], [test -n "$systemdsystemunitdir"])
])

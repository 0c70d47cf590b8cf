# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SLURM: the Slurm headers and libslurm (Debian's libslurm-dev ships no
# pkg-config file). --with-slurm=DIR looks in DIR/include and in the first
# of DIR/lib64, DIR/lib and DIR/lib/<triplet> that holds libslurm.so.
# Slurm's headers are included with -isystem: warnings of a newer compiler
# in headers we do not write must not fail a -Werror build (headers in the
# compiler's own search path, /usr/include, are system headers already,
# and -isystem /usr/include would break #include_next, so nothing is added
# for them).
# Substitutes SLURM_CPPFLAGS, SLURM_LDFLAGS, SLURM_LIBS and SLURM_VERSION
# (the headers' SLURM_VERSION_NUMBER as 22.05.8: a job_submit plugin only
# loads in a slurmctld of exactly this version, see SLURM-NOTES.md), and
# defines SYNERGY_SLURM_VERSION, the same string, in config.h (for
# messages: code that depends on the version tests SLURM_VERSION_NUMBER in
# plugin/slurm/slurm_compat.h, the only place that does).
AC_DEFUN([X_AC_SLURM], [
	AC_ARG_WITH([slurm],
		[AS_HELP_STRING([--with-slurm=DIR], [Slurm installation prefix])],
		[AS_CASE([$withval],
			[yes|no|""], [AC_MSG_ERROR([--with-slurm needs a directory])])
		 SLURM_CPPFLAGS="-isystem $withval/include"
		 SLURM_LDFLAGS="-L$withval/lib"
		 for d in "$withval/lib64" "$withval/lib" "$withval"/lib/*-linux-gnu*; do
			AS_IF([test -e "$d/libslurm.so"], [SLURM_LDFLAGS="-L$d"; break])
		 done], [])
	save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS
	CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"; LDFLAGS="$LDFLAGS $SLURM_LDFLAGS"
	AC_CHECK_HEADERS([slurm/spank.h slurm/slurm.h], [],
		[AC_MSG_ERROR([Slurm headers not found: install libslurm-dev])])
	AC_CHECK_LIB([slurm], [slurm_load_jobs], [SLURM_LIBS=-lslurm],
		[AC_MSG_ERROR([libslurm not found: install libslurm-dev])])
	dnl The version as Slurm and its packages spell it (22.05.8), from
	dnl SLURM_VERSION_NUMBER (slurm_version.h has no string form).
	AC_COMPUTE_INT([x_ac_slurm_major], [SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER)],
		[#include <slurm/slurm_version.h>],
		[AC_MSG_ERROR([no SLURM_VERSION_NUMBER in slurm/slurm_version.h])])
	AC_COMPUTE_INT([x_ac_slurm_minor], [SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER)],
		[#include <slurm/slurm_version.h>])
	AC_COMPUTE_INT([x_ac_slurm_micro], [SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER)],
		[#include <slurm/slurm_version.h>])
	SLURM_VERSION=`printf '%d.%02d.%d' "$x_ac_slurm_major" "$x_ac_slurm_minor" "$x_ac_slurm_micro"`
	AC_MSG_CHECKING([for the Slurm version of the headers])
	AC_MSG_RESULT([$SLURM_VERSION])
	AC_DEFINE_UNQUOTED([SYNERGY_SLURM_VERSION], ["$SLURM_VERSION"],
		[The Slurm version the plugins are built against, as 22.05.8])
	CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS
	AC_SUBST([SLURM_CPPFLAGS])
	AC_SUBST([SLURM_LDFLAGS])
	AC_SUBST([SLURM_LIBS])
	AC_SUBST([SLURM_VERSION])
])

# X_AC_SLURM_PLUGINDIR: where `make install` puts the plugins. Default: the
# plugin directory of the Slurm we build against, found from where libslurm
# lives (Debian: /usr/lib/<triplet>/slurm-wlm; RPM-based and SchedMD's own
# builds: <libdir>/slurm, e.g. /usr/lib64/slurm), preferring a candidate that
# already holds Slurm's own plugins. --with-slurm-plugindir=DIR overrides.
# Substitutes slurmplugindir; sets x_ac_slurm_plugindir_how for the summary.
AC_DEFUN([X_AC_SLURM_PLUGINDIR], [
	AC_REQUIRE([X_AC_SLURM])
	AC_ARG_WITH([slurm-plugindir],
		[AS_HELP_STRING([--with-slurm-plugindir=DIR],
			[where Slurm loads plugins from (default: found from the installed
			 Slurm: the slurm-wlm or slurm directory beside libslurm)])],
		[], [with_slurm_plugindir=auto])
	AS_CASE([$with_slurm_plugindir],
		[yes|no|""], [AC_MSG_ERROR([--with-slurm-plugindir needs a directory])],
		[auto], [_X_AC_SLURM_FIND_PLUGINDIR],
		[slurmplugindir=$with_slurm_plugindir
		 x_ac_slurm_plugindir_how="--with-slurm-plugindir"])
	AC_SUBST([slurmplugindir])
])

# _X_AC_SLURM_FIND_PLUGINDIR: the search behind the default.
AC_DEFUN([_X_AC_SLURM_FIND_PLUGINDIR], [
	AC_MSG_CHECKING([for the directory holding libslurm])
	x_ac_slurm_libdir=
	dnl --with-slurm=DIR: that installation's library directories first.
	AS_CASE([$with_slurm], [/*],
		[for d in "$with_slurm/lib64" "$with_slurm/lib" "$with_slurm"/lib/*-linux-gnu*; do
			AS_IF([test -e "$d/libslurm.so"], [x_ac_slurm_libdir=$d; break])
		done])
	dnl Else where the compiler's link search finds it (multiarch aware:
	dnl gcc and clang print the full path when the file is on their path).
	AS_IF([test -z "$x_ac_slurm_libdir"], [
		x_ac_f=`$CC $CFLAGS $LDFLAGS -print-file-name=libslurm.so 2>/dev/null`
		AS_CASE([$x_ac_f], [/*], [x_ac_slurm_libdir=`dirname "$x_ac_f"`])])
	AS_IF([test -n "$x_ac_slurm_libdir" && test -d "$x_ac_slurm_libdir"],
		[x_ac_slurm_libdir=`cd "$x_ac_slurm_libdir" && pwd -P`
		 AC_MSG_RESULT([$x_ac_slurm_libdir])],
		[x_ac_slurm_libdir=
		 AC_MSG_RESULT([not found])])

	AC_MSG_CHECKING([for Slurm's plugin directory])
	slurmplugindir=
	x_ac_slurm_warn=
	AS_IF([test -n "$x_ac_slurm_libdir"], [
		dnl The candidate that already holds Slurm's own plugins wins.
		for d in "$x_ac_slurm_libdir/slurm-wlm" "$x_ac_slurm_libdir/slurm"; do
			for p in "$d"/job_submit_*.so "$d"/proctrack_*.so "$d"/select_*.so "$d"/task_*.so; do
				AS_IF([test -f "$p"], [slurmplugindir=$d; break])
			done
			test -n "$slurmplugindir" && break
		done
		AS_IF([test -n "$slurmplugindir"],
			[x_ac_slurm_plugindir_how="holds Slurm's plugins"],
			[dnl No plugins (Slurm's daemons not installed here): follow the
			 dnl distribution's naming of an existing directory, else Debian's
			 dnl for a multiarch libdir and everyone else's otherwise.
			 AS_IF([test -d "$x_ac_slurm_libdir/slurm-wlm"],
				[slurmplugindir=$x_ac_slurm_libdir/slurm-wlm],
			 [test -d "$x_ac_slurm_libdir/slurm"],
				[slurmplugindir=$x_ac_slurm_libdir/slurm],
			 [AS_CASE([$x_ac_slurm_libdir],
				[*-linux-gnu*], [slurmplugindir=$x_ac_slurm_libdir/slurm-wlm],
				[slurmplugindir=$x_ac_slurm_libdir/slurm])])
			 x_ac_slurm_plugindir_how="beside libslurm; holds no Slurm plugins yet"
			 x_ac_slurm_warn="no Slurm plugins found beside $x_ac_slurm_libdir; check PluginDir in slurm.conf or use --with-slurm-plugindir"])
	], [
		slurmplugindir='${libdir}/slurm'
		x_ac_slurm_plugindir_how="libslurm not located; a guess"
		x_ac_slurm_warn="cannot locate libslurm.so; installing plugins into \${libdir}/slurm (use --with-slurm-plugindir)"
	])
	AC_MSG_RESULT([$slurmplugindir])
	AS_IF([test -n "$x_ac_slurm_warn"], [AC_MSG_WARN([$x_ac_slurm_warn])])
])

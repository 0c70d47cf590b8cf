# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_PYTHON: the interpreter the tests use and where `make install` puts
# the Python binding (a pure-Python package over libcoordl).
#
# PYTHON3 is /usr/bin/python3 first (Debian's interpreter, which sees
# python3-numpy and python3-torch), then the first python3 on PATH.
# coordlpythondir: --with-python-sitedir=DIR, else the pure-library
# directory of that interpreter's distribution layout under $prefix:
# Debian's PREFIX/lib/python3/dist-packages where the interpreter has the
# deb_system scheme, else PREFIX/lib/pythonX.Y/site-packages. It does not
# depend on libdir (a multiarch libdir is not on sys.path).
AC_DEFUN([X_AC_PYTHON], [
	AC_PATH_PROGS([PYTHON3], [python3], [/usr/bin/python3],
		[/usr/bin$PATH_SEPARATOR$PATH])
	AC_ARG_WITH([python-sitedir],
		[AS_HELP_STRING([--with-python-sitedir=DIR],
			[where to install the coordl Python package's directory
			 (default: PREFIX/lib/python3/dist-packages on Debian,
			 else PREFIX/lib/pythonX.Y/site-packages)])],
		[], [with_python_sitedir=auto])
	AC_MSG_CHECKING([where to install the Python binding])
	AS_CASE([$with_python_sitedir],
		[yes|no|""], [AC_MSG_ERROR([--with-python-sitedir needs a directory])],
		[auto], [
			x_ac_py_code='import sysconfig
s = "deb_system" if "deb_system" in sysconfig.get_scheme_names() else "posix_prefix"
print(sysconfig.get_path("purelib", s, vars={"base": "@P@", "platbase": "@P@"}))'
			python_sitedir=`$PYTHON3 -c "$x_ac_py_code" 2>/dev/null`
			AS_CASE([$python_sitedir],
				[@P@/*], [python_sitedir=`echo "$python_sitedir" | sed 's|^@P@|${prefix}|'`],
				[python_sitedir='${prefix}/lib/python3/dist-packages'])],
		[python_sitedir=$with_python_sitedir])
	AC_MSG_RESULT([$python_sitedir])
	AC_SUBST([python_sitedir])
])

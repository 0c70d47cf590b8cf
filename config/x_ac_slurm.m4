# X_AC_SLURM: the Slurm headers and libslurm (Debian's libslurm-dev ships no
# pkg-config file). --with-slurm=DIR looks in DIR/include and DIR/lib.
AC_DEFUN([X_AC_SLURM], [
	AC_ARG_WITH([slurm],
		[AS_HELP_STRING([--with-slurm=DIR], [Slurm installation prefix])],
		[SLURM_CPPFLAGS="-I$withval/include"; SLURM_LDFLAGS="-L$withval/lib"], [])
	save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS
	CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"; LDFLAGS="$LDFLAGS $SLURM_LDFLAGS"
	AC_CHECK_HEADERS([slurm/spank.h slurm/slurm.h], [],
		[AC_MSG_ERROR([Slurm headers not found: install libslurm-dev])])
	AC_CHECK_LIB([slurm], [slurm_load_jobs], [SLURM_LIBS=-lslurm],
		[AC_MSG_ERROR([libslurm not found: install libslurm-dev])])
	CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS
	AC_SUBST([SLURM_CPPFLAGS])
	AC_SUBST([SLURM_LDFLAGS])
	AC_SUBST([SLURM_LIBS])
])

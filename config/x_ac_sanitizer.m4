# SPDX-License-Identifier: GPL-2.0-or-later
# X_AC_SANITIZER: --enable-sanitizer=address|thread adds the sanitizer to every
# compile and link. "address" also enables UndefinedBehaviorSanitizer.
AC_DEFUN([X_AC_SANITIZER], [
	AC_ARG_ENABLE([sanitizer],
		[AS_HELP_STRING([--enable-sanitizer=address|thread],
			[build with ASan+UBSan or TSan])],
		[], [enable_sanitizer=no])
	AS_CASE([$enable_sanitizer],
		[no], [],
		[address|asan], [
			enable_sanitizer=address
			CFLAGS="$CFLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
			LDFLAGS="$LDFLAGS -fsanitize=address,undefined"],
		[thread|tsan], [
			enable_sanitizer=thread
			CFLAGS="$CFLAGS -fsanitize=thread -fno-omit-frame-pointer"
			LDFLAGS="$LDFLAGS -fsanitize=thread"],
		[AC_MSG_ERROR([--enable-sanitizer: expected address or thread, got '$enable_sanitizer'])])
	AM_CONDITIONAL([SANITIZER], [test "x$enable_sanitizer" != xno])
	AM_CONDITIONAL([SANITIZER_THREAD], [test "x$enable_sanitizer" = xthread])
])

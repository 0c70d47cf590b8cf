/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * die.h: the fatal-error exit shared by the loader's command-line tools.
 *
 * A program defines `static const char *prog = "name";` before including
 * this header; die() prints "name: message" to stderr and exits 1 (usage
 * errors exit 2 from the program itself).
 */
#ifndef COORDL_TOOLS_DIE_H
#define COORDL_TOOLS_DIE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#endif

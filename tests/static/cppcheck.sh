#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# cppcheck.sh: static analysis of the project's C sources with cppcheck.
# Checks warning, style, performance and portability (errors are always
# on), prints each finding as file:line: severity: id: message, and exits
# 1 when any finding is not in tests/static/cppcheck.supp (each suppression
# there carries its justification), 2 when cppcheck is missing or fails,
# 0 when clean. Not part of `make check`; run from anywhere:
#
#   tests/static/cppcheck.sh [-b BUILDDIR] [FILE...]
#
# -b names a configured build directory so that config.h is seen (default:
# the first of build-fuzz, build, build-main that has one; without it the
# HAVE_ macros are unknown and cppcheck checks the configurations it can
# guess). FILEs default to every tracked *.c file.
set -u

builddir=
while getopts b:h opt; do
	case $opt in
	b) builddir=$OPTARG ;;
	h) sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "cppcheck.sh: see -h for usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
cd "$srcdir" || exit 2
if ! command -v cppcheck >/dev/null 2>&1; then
	echo "cppcheck.sh: cppcheck not found (apt-get install cppcheck)" >&2
	exit 2
fi
if [ -z "$builddir" ]; then
	for d in build-fuzz build build-main; do
		if [ -f "$d/config.h" ]; then
			builddir=$d
			break
		fi
	done
fi
inc=
if [ -n "$builddir" ]; then
	[ -f "$builddir/config.h" ] || { echo "cppcheck.sh: no config.h in $builddir" >&2; exit 2; }
	inc="-I$builddir"
fi
if [ $# -eq 0 ]; then
	# The tree's C file names have no spaces: splitting the list is safe.
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		# shellcheck disable=SC2046
		set -- $(git ls-files '*.c')
	else
		# shellcheck disable=SC2046
		set -- $(find . -name '*.c' ! -path './build*' | sed 's|^\./||' | sort)
	fi
fi

out=$(mktemp "${TMPDIR:-/tmp}/cppcheck.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT
# -D_GNU_SOURCE as the build defines it; --inline-suppr is off on purpose:
# every suppression lives, justified, in cppcheck.supp.
# shellcheck disable=SC2086 # $inc is one word or none
cppcheck -q --std=c11 --enable=warning,style,performance,portability \
	-D_GNU_SOURCE $inc -Iinclude -I. \
	--suppressions-list=tests/static/cppcheck.supp \
	--template='{file}:{line}: {severity}: {id}: {message}' \
	-j 2 "$@" 2>"$out"
rc=$?
if [ $rc -ne 0 ]; then
	cat "$out" >&2
	echo "cppcheck.sh: cppcheck failed (exit $rc)" >&2
	exit 2
fi
n=$(grep -c ': \(error\|warning\|style\|performance\|portability\): ' "$out")
cat "$out"
echo "cppcheck.sh: $# files, $n unsuppressed finding(s)"
[ "$n" -eq 0 ]

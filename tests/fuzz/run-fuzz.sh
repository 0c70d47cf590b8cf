#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# run-fuzz.sh: build every libFuzzer target of the project with clang
# (-fsanitize=fuzzer,address,undefined) straight from the sources, run each
# for a fixed time from its checked-in seed corpus, and print a table
# target | runs | crashes | seconds. Standalone: not part of `make check`.
#
# Usage: tests/fuzz/run-fuzz.sh [-t SECONDS] [-b BUILDDIR] [-o WORKDIR] [TARGET...]
#   -t SECONDS  fuzzing time per target (default 30)
#   -b BUILDDIR a configured build directory, for its config.h (default:
#               configure a private one under WORKDIR)
#   -o WORKDIR  where binaries, grown corpora and crash artifacts go
#               (default: a new directory under ${TMPDIR:-/tmp})
#   TARGET      any of: prep profile conf trace env spank source node cache remote ckpt
#               (default: all)
#
# The checked-in seeds under tests/fuzz/corpus/<target>/ are only read; new
# inputs the fuzzer finds go to WORKDIR/corpus/<target>/. A crash, leak or
# timeout leaves its input in WORKDIR/artifacts/ (libFuzzer stops a target
# at its first crash). Exit status: 0 when no target crashed, 1 when one
# did, 2 when a target failed to build or the tools are missing.
set -u

secs=30
builddir=
work=
while getopts t:b:o:h opt; do
	case $opt in
	t) secs=$OPTARG ;;
	b) builddir=$OPTARG ;;
	o) work=$OPTARG ;;
	h) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-fuzz.sh: see -h for usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $secs in
''|*[!0-9]*) echo "run-fuzz.sh: -t '$secs': expected whole seconds" >&2; exit 2 ;;
esac

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
all="prep profile conf trace env spank source node cache remote ckpt"
targets=${*:-$all}
for t in $targets; do
	case " $all " in
	*" $t "*) ;;
	*) echo "run-fuzz.sh: unknown target '$t' (known: $all)" >&2; exit 2 ;;
	esac
done

CC=${CC:-clang}
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "run-fuzz.sh: $CC not found (clang with libFuzzer is needed)" >&2
	exit 2
fi
if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/synergy-fuzz.XXXXXX") || exit 2
fi
mkdir -p "$work/bin" "$work/artifacts" "$work/log" || exit 2
work=$(cd "$work" && pwd)

# config.h: from the given build directory, else from a private configure
# run (the targets need only its HAVE_ macros, not a build).
if [ -z "$builddir" ]; then
	builddir=$work/config
	if [ ! -f "$builddir/config.h" ]; then
		[ -x "$srcdir/configure" ] || { echo "run-fuzz.sh: run autoreconf -fi in $srcdir first" >&2; exit 2; }
		mkdir -p "$builddir" || exit 2
		if ! (cd "$builddir" && "$srcdir/configure" -q >configure.log 2>&1); then
			echo "run-fuzz.sh: configure failed, see $builddir/configure.log" >&2
			exit 2
		fi
	fi
fi
if [ ! -f "$builddir/config.h" ]; then
	echo "run-fuzz.sh: no config.h in $builddir" >&2
	exit 2
fi

# Sources and libraries of each target, relative to the source tree: the
# target, the code it parses, and the parts of common/ under that code
# (libsyncommon, and libsynstore above it).
COMMON="common/error.c common/parse.c common/cpus.c common/file.c common/kv.c"
STORE="$COMMON common/conf.c common/profile.c common/profile_json.c common/store.c"
sources() {
	case $1 in
	prep) echo "loader/test/fuzz_prep.c loader/prep.c $COMMON" ;;
	profile) echo "common/test/fuzz_profile.c $STORE" ;;
	conf) echo "tests/fuzz/fuzz_conf.c $STORE" ;;
	trace) echo "tests/fuzz/fuzz_trace.c sim/trace.c policy/builtin.c $STORE" ;;
	env) echo "tests/fuzz/fuzz_env.c loader/env.c loader/util.c $COMMON" ;;
	spank) echo "tests/fuzz/fuzz_spank.c plugin/shared/util.c plugin/node/cgroup.c" \
		"plugin/node/cgroup_v1.c plugin/node/cgroup_v2.c plugin/shared/jobrec.c $STORE" ;;
	node) echo "tests/fuzz/fuzz_node.c plugin/shared/jobrec.c plugin/shared/claim.c" \
		"plugin/ctl/shapes.c plugin/shared/slurmtext.c plugin/shared/util.c $STORE" ;;
	source) echo "loader/test/fuzz_source.c loader/source.c loader/remote.c loader/s3.c" \
		"loader/env.c loader/util.c $COMMON" ;;
	cache) echo "tests/fuzz/fuzz_cache.c loader/cache.c loader/util.c $COMMON" ;;
	ckpt) echo "tests/fuzz/fuzz_ckpt.c loader/ckpt_file.c loader/util.c $COMMON" ;;
	remote) echo "loader/test/fuzz_remote.c loader/remote.c loader/s3.c loader/source.c" \
		"loader/env.c loader/util.c $COMMON" ;;
	esac
}
libs() {
	case $1 in
	prep) echo "-ljpeg -lm" ;;
	profile|trace|conf) echo "-ljansson -lm" ;;
	spank|node) echo "-lcgroup -ljansson -lm" ;;
	cache|ckpt) echo "-lpthread -lm" ;;
	source|remote) echo "-lcurl -lm" ;;
	*) echo "-lm" ;;
	esac
}
# Inputs longer than this teach the fuzzer nothing new about these parsers
# and only slow it down; JPEGs need room for real images.
maxlen() {
	case $1 in
	prep) echo 200000 ;;
	profile) echo 20000 ;;
	ckpt) echo 16384 ;; # a header alone is 4096 bytes
	*) echo 4096 ;;
	esac
}

status=0
rows=
for t in $targets; do
	bin=$work/bin/fuzz_$t
	srcs=
	for f in $(sources "$t"); do
		srcs="$srcs $srcdir/$f"
	done
	# shellcheck disable=SC2046,SC2086 # word splitting of the lists is intended
	if ! $CC -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -D_GNU_SOURCE -I"$builddir" -I"$srcdir/include" \
		-I"$srcdir" $srcs $(libs "$t") -o "$bin" >"$work/log/$t.build" 2>&1; then
		echo "run-fuzz.sh: $t: build failed, see $work/log/$t.build" >&2
		rows="$rows$t|build failed|-|-
"
		status=2
		continue
	fi
	mkdir -p "$work/corpus/$t"
	seeds=$srcdir/tests/fuzz/corpus/$t
	start=$(date +%s)
	# Leaks count as crashes: every parser here frees what it refused.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
	"$bin" -max_total_time="$secs" -max_len="$(maxlen "$t")" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" \
		"$work/corpus/$t" "$seeds" >"$work/log/$t.log" 2>&1
	rc=$?
	end=$(date +%s)
	runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$work/log/$t.log" | tail -n 1)
	if [ -z "$runs" ]; then
		runs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$work/log/$t.log" | tail -n 1)
	fi
	crashes=$(find "$work/artifacts" -name "$t-*" -type f | wc -l)
	if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1 # died without an artifact (e.g. a sanitizer report at startup)
	fi
	[ "$crashes" -gt 0 ] && status=1
	rows="$rows$t|${runs:-0}|$crashes|$((end - start))
"
done

printf '%-8s | %10s | %7s | %7s\n' target runs crashes seconds
printf '%s\n' '---------|------------|---------|--------'
printf '%s' "$rows" | while IFS='|' read -r t r c s; do
	printf '%-8s | %10s | %7s | %7s\n' "$t" "$r" "$c" "$s"
done
echo "work directory: $work (logs in log/, crash inputs in artifacts/)"
exit $status

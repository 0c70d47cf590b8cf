#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# coordl-scaling.sh: loader throughput per thread count, interleaved.
#
# Usage: bench/coordl-scaling.sh DATASET [REPS] [THREADS...]
#   (default REPS 5, THREADS "1 2")
#
# Runs coordl-bench for 2 epochs per run with a MinIO cache larger than the
# dataset, so epoch 1 reads nothing from storage and measures the full
# training pipeline (fetch from cache, decode, crop, flip, normalize) alone.
# Thread counts are interleaved within each repetition so that background
# noise hits all of them alike. Prints min/median/max of epoch 1's images/s
# and images per CPU-second, and the speedup of the median over 1 thread.
set -eu
bd=${top_builddir:-$(dirname "$0")/..}
bench=${COORDL_BENCH:-$bd/bench/coordl-bench}
[ $# -ge 1 ] || { sed -n 3,13p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ds=$1; reps=${2:-5}; shift; [ $# -ge 1 ] && shift
threads=${*:-1 2}
[ -x "$bench" ] || { echo "coordl-scaling: $bench not built" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Cache: the whole dataset plus room for the index.
size=$(du -sb "$ds" | cut -f1); cache=$((size + size / 8 + 16777216))
r=1
while [ "$r" -le "$reps" ]; do
	for t in $threads; do
		"$bench" -e 2 -t "$t" -c "$cache" "$ds" | awk -v t="$t" \
			'$1 == "1" { print t, $4, $6 }' >>"$tmp/runs"
	done
	r=$((r + 1))
done
echo "# $(uname -n) $(nproc) cpus, dataset $ds ($((size / 1000000)) MB), $reps runs per thread count"
printf '%7s %10s %10s %10s %12s %12s %12s %8s\n' threads img/s_min img/s_med img/s_max \
	cpu-s_min cpu-s_med cpu-s_max speedup
# min, median and max of a column of numbers.
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
base=""
for t in $threads; do
	ips=$(awk -v t="$t" '$1 == t { print $2 }' "$tmp/runs" | stats)
	cps=$(awk -v t="$t" '$1 == t { print $3 }' "$tmp/runs" | stats)
	set -- $ips $cps
	[ -n "$base" ] || base=$2
	printf '%7s %10s %10s %10s %12s %12s %12s %8.2f\n' "$t" "$1" "$2" "$3" "$4" "$5" "$6" \
		"$(awk -v a="$2" -v b="$base" 'BEGIN { print a / b }')"
done

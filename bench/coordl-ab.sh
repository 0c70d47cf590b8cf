#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# coordl-ab.sh: compare two coordl-bench binaries (e.g. before and after a
# change), interleaved so that background load hits both alike.
#
# Usage: bench/coordl-ab.sh BENCH_A BENCH_B DATASET [REPS] [THREADS]
#   (default REPS 5, THREADS 2)
#
# Each repetition runs A then B for 2 epochs with a MinIO cache larger than
# the dataset, once with a private cache and once with a shared one (a
# named cache in /dev/shm, unique per binary), so epoch 0 measures fetch +
# decode + filling the cache and epoch 1 the full pipeline from the cache.
# Prints, per binary, cache kind and epoch, min/median/max of images/s and
# of images per CPU-second (steadier than wall-clock on a busy machine),
# and the 1-minute load average before and after.
set -eu
[ $# -ge 3 ] || { sed -n 3,14p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
a=$1; b=$2; ds=$3; reps=${4:-5}; threads=${5:-2}
for x in "$a" "$b"; do
	[ -x "$x" ] || { echo "coordl-ab: $x is not executable" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
size=$(du -sb "$ds" | cut -f1); cache=$((size + size / 8 + 16777216))
load0=$(cut -d' ' -f1 /proc/loadavg)
r=1
while [ "$r" -le "$reps" ]; do
	for kind in private shared; do
		for which in A B; do
			bin=$a; [ "$which" = B ] && bin=$b
			if [ "$kind" = shared ]; then
				"$bin" -e 2 -t "$threads" -c "$cache" --cache-name="coordl-ab-$$-$which" "$ds"
			else
				"$bin" -e 2 -t "$threads" -c "$cache" "$ds"
			fi | awk -v w="$which" -v k="$kind" '$1 ~ /^[01]$/ { print w, k, $1, $4, $6 }' >>"$tmp/runs"
		done
	done
	r=$((r + 1))
done
echo "# A = $a"
echo "# B = $b"
echo "# dataset $ds ($((size / 1000000)) MB), $threads threads, $reps runs each, load $load0 -> $(cut -d' ' -f1 /proc/loadavg)"
printf '%-2s %-8s %5s %10s %10s %10s %10s %10s %10s\n' "" cache epoch img/s_min img/s_med img/s_max \
	cpu-s_min cpu-s_med cpu-s_max
# min, median and max of a column of numbers.
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
for kind in private shared; do
	for e in 0 1; do
		for which in A B; do
			ips=$(awk -v w="$which" -v k="$kind" -v e="$e" '$1 == w && $2 == k && $3 == e { print $4 }' "$tmp/runs" | stats)
			cps=$(awk -v w="$which" -v k="$kind" -v e="$e" '$1 == w && $2 == k && $3 == e { print $5 }' "$tmp/runs" | stats)
			# shellcheck disable=SC2086 # split the three numbers
			set -- $ips $cps
			printf '%-2s %-8s %5s %10s %10s %10s %10s %10s %10s\n' "$which" "$kind" "$e" "$1" "$2" "$3" "$4" "$5" "$6"
		done
	done
done

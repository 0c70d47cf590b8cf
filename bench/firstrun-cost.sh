#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# firstrun-cost.sh: what profiling on the job's first run costs the job.
#
# Usage: bench/firstrun-cost.sh DATASET [REPS] [GPU_RATE] [EPOCHS]
#   (default REPS 3, GPU_RATE 400 images/s, EPOCHS 3)
#
# Runs coordl-bench (an emulated GPU consuming GPU_RATE images/s) over
# EPOCHS epochs twice per repetition, interleaved: plainly, and with the
# loader in profiling mode as the plugin starts a key's first job
# (SYNERGY_PROFILE_MODE=1, SYNERGY_PROFILE_OUT; SYNERGY_THREADS = the CPUs
# of this process). Prints min/median/max of the search's own wall time
# (the report's "elapsed") and of each run's wall time, and the median
# time the job lost to profiling (profiled minus plain). Outside Slurm:
# the node lends no cores here, so the search starts at this process's CPUs.
set -eu
bd=${top_builddir:-$(dirname "$0")/..}
bench=${COORDL_BENCH:-$bd/bench/coordl-bench}
[ $# -ge 1 ] || { sed -n 3,16p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ds=$1; reps=${2:-3}; rate=${3:-400}; epochs=${4:-3}
[ -x "$bench" ] || { echo "firstrun-cost: $bench not built" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cpus=$(nproc)
now() { date +%s.%N; }
r=1
while [ "$r" -le "$reps" ]; do
	t0=$(now)
	SYNERGY_THREADS=$cpus "$bench" -e "$epochs" -g "$rate" -b 32 -s 224 "$ds" >/dev/null
	t1=$(now)
	SYNERGY_THREADS=$cpus SYNERGY_PROFILE_MODE=1 SYNERGY_PROFILE_OUT=$tmp/report.json \
		"$bench" -e "$epochs" -g "$rate" -b 32 -s 224 "$ds" >/dev/null
	t2=$(now)
	el=$(sed -n 's/.*"elapsed": *\([0-9.eE+-]*\).*/\1/p' "$tmp/report.json" | head -1)
	ok=$(grep -c '"complete": *true' "$tmp/report.json" || true)
	n=$(grep -o '"threads":' "$tmp/report.json" | wc -l)
	echo "$t0 $t1 $t2 ${el:-nan} $ok $n" | awk '{ printf "%.3f %.3f %s %s %s\n", $2 - $1, $3 - $2, $4, $5, $6 }' >>"$tmp/runs"
	rm -f "$tmp/report.json"
	r=$((r + 1))
done
echo "# $reps interleaved runs, $epochs epochs, emulated GPU $rate images/s, $cpus CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
function stats(col,   i, j, t, n, v) {
	n = 0
	for (i = 1; i <= NR; i++) v[++n] = row[i, col]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return sprintf("%8.2f %8.2f %8.2f", v[1], v[int((n + 1) / 2)], v[n])
}
{ row[NR, 1] = $1; row[NR, 2] = $2; row[NR, 3] = $3; row[NR, 4] = $2 - $1; comp += $4; pts = $5 }
END {
	printf "%-28s %8s %8s %8s\n", "seconds", "min", "median", "max"
	printf "%-28s %s\n", "plain run", stats(1)
	printf "%-28s %s\n", "profiled run", stats(2)
	printf "%-28s %s\n", "search (report elapsed)", stats(3)
	printf "%-28s %s\n", "lost to profiling", stats(4)
	printf "complete searches: %d of %d; points in the last report: %d\n", comp, NR, pts
}' "$tmp/runs"

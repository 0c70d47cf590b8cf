#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# sim-search.sh: hyperparameter searches in the simulator (issue 15): mean
# JCT and makespan with coordinated prep (--coord on) and without (off), on
# the same traces, PROP and TUNE, rounds and live Slurm, as a table.
#
# Usage: bench/sim-search.sh            (top_builddir locates sim/synergy-sim;
#                                        default: the directory above this one)
# Knobs (environment): JOBS (3000), WINDOW (1000-2000), JPH (9: jobs per
# hour, trials counted; the arrival rate is JPH / (1 + FRAC x (K - 1))),
# SEEDS ("1 2 3"), SEARCHES ("4:0.2 4:0.5 8:0.2 8:0.5"), SPLIT (33/33/33),
# CLUSTER (16x8:24:500). 1-GPU jobs. The simulator is deterministic: the
# numbers do not depend on the machine's load.
#
# Per search mix, engine and allocator: mean JCT over the window (hours),
# median over the seeds, off and on; the off/on ratio of mean JCT,
# min/median/max over the seeds; the median makespan (hours) and the median
# CPU utilisation (cores allotted, grants included, over the cluster's,
# during the makespan) off and on.
# Zero violations are required: synergy-sim exits 1 on any, and this stops.
set -eu
bd=${top_builddir:-$(dirname "$0")/..}
sim="$bd/sim/synergy-sim"
JOBS=${JOBS:-3000} WINDOW=${WINDOW:-1000-2000} JPH=${JPH:-9} SEEDS=${SEEDS:-"1 2 3"}
SEARCHES=${SEARCHES:-"4:0.2 4:0.5 8:0.2 8:0.5"} SPLIT=${SPLIT:-33/33/33}
CLUSTER=${CLUSTER:-16x8:24:500}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| search K:FRAC | arrivals/h | engine | alloc | mean JCT off | mean JCT on | off/on min / med / max | makespan off | makespan on | cpu util off / on |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
for sp in $SEARCHES; do
	k=${sp%:*} f=${sp#*:}
	rate=$(awk -v j="$JPH" -v k="$k" -v f="$f" 'BEGIN { printf "%.4g", j / (1 + f * (k - 1)) }')
	: >"$tmp/rows"
	for s in $SEEDS; do
		for co in off on; do
			"$sim" -n "$JOBS" -w "$WINDOW" -r "$rate" -s "$s" --split "$SPLIT" -c "$CLUSTER" \
				--search "$sp" -a prop,tune --live=both --coord "$co" >"$tmp/out"
			awk -v s="$s" -v co="$co" '/^(prop|tune|live-prop|live-tune) / {
				print s, co, $1, $4, $7, $9 }' "$tmp/out" >>"$tmp/rows"
		done
	done
	for a in prop tune live-prop live-tune; do
		awk -v a="$a" -v sp="$sp" -v rate="$rate" '
			function med(v, n,   i, j, t) {
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
					if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
				return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
			$3 == a { j[$2, $1] = $4; m[$2, $1] = $5; u[$2, $1] = $6; seen[$1] = 1 }
			END {
				n = 0
				for (s in seen) { n++; jo[n] = j["on", s]; jf[n] = j["off", s]
					mo[n] = m["on", s]; mf[n] = m["off", s]; r[n] = j["off", s] / j["on", s]
					uo[n] = u["on", s]; uf[n] = u["off", s] }
				lo = hi = r[1]
				for (i = 2; i <= n; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] }
				eng = a ~ /^live/ ? "live" : "rounds"; al = a; sub(/^live-/, "", al)
				printf "| %s | %s | %s | %s | %.2f | %.2f | %.2f / %.2f / %.2f | %.1f | %.1f | %.3f / %.3f |\n",
					sp, rate, eng, al, med(jf, n), med(jo, n), lo, med(r, n), hi, med(mf, n), med(mo, n),
					med(uf, n), med(uo, n)
			}' "$tmp/rows"
	done
done

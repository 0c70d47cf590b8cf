#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# sim-bench.sh: the simulator and policy benchmarks of issue 3, as tables.
#
# Usage: bench/sim-bench.sh [OUTDIR]      (QUICK=1 for a short run)
#   top_builddir (default: the directory above this script) locates
#   sim/synergy-sim and sim/synergy-policy-bench.
#
#  1. JCT vs load: 128 GPUs (16 x 8 GPUs, 24 cores, 500 GB), 1-GPU jobs,
#     split 20/70/10, FIFO and SRTF, PROP vs TUNE, steady-state window;
#     mean JCT per rate and the PROP/TUNE ratio; plot OUTDIR/jct-vs-load.png.
#     Arrivals go on well past the window (jobs 4000-5000 of 12,000): a
#     window job still queued when arrivals stop finishes in the drain with
#     no competition, which hides the starvation SRTF causes under
#     overload; synergy-sim prints how many window jobs did (a '#' line).
#  2. Scale: 10,000 jobs on 512 GPUs (64 x 8), TUNE/FIFO, 3 runs: CPU
#     seconds min/median/max (the target is < 30 s).
#  3. One TUNE round for 1,000 pending jobs on 128 servers: CPU ms
#     min/median/max over 21 rounds (target < 100 ms).
#  4. TUNE vs OPT total normalised throughput on 64-GPU instances, summary
#     and per instance (OPT after packing, and its phase-1 bound).
#  5. Live Slurm beside rounds (issue 13): the workload of 1 at 8, 9, 10, 12
#     jobs/h, seeds 1-5, FIFO and SRTF, synergy-sim --live=both: PROP/TUNE
#     of mean JCT in rounds and in the live-Slurm model (jobs never above
#     their share in accounting, grants from node-level TUNE at job start
#     and end, no preemption), min/median/max over the seeds, and the
#     median mean JCTs. SECTIONS=5 runs only this one, SECTIONS=1234 the others.
# Zero guarantee violations are required throughout: synergy-sim exits 1
# on any, and this script stops.
set -eu
bd=${top_builddir:-$(dirname "$0")/..}
sim=$bd/sim/synergy-sim
pb=$bd/sim/synergy-policy-bench
out=${1:-sim-bench-out}
[ -x "$sim" ] && [ -x "$pb" ] || { echo "sim-bench: build sim/synergy-sim and sim/synergy-policy-bench first ($bd)" >&2; exit 1; }
mkdir -p "$out"

if [ "${QUICK:-0}" = 1 ]; then
	n=2000 win=1000-1999 rates=6,9,12 big=2000 reps=1 inst=2 live_rates="9 12" seeds="1 2"
else
	n=12000 win=4000-5000 rates=4,6,7,7.5,8,8.5,9,10,12 big=10000 reps=3 inst=10
	live_rates="8 9 10 12" seeds="1 2 3 4 5"
fi
sections=${SECTIONS:-12345}
case "$sections" in *1*) ;; *) skip1=1 ;; esac

if [ -z "${skip1:-}" ]; then
echo "== 1. mean JCT vs load: 128 GPUs, 1-GPU jobs, 20/70/10, window ids $win of $n"
"$sim" -n "$n" -w "$win" --sweep "$rates" -a prop,tune -o fifo,srtf \
	--plot "$out/jct-vs-load.png" >"$out/sweep.txt"
cat "$out/sweep.txt"
echo
echo "# PROP/TUNE ratio of mean JCT (higher is better for TUNE)"
awk '/^# mean JCT/ { on = 1; next }
     on && /^rate_jph/ { print "rate_jph  fifo_ratio  srtf_ratio"; next }
     on && NF == 5 { printf "%-9s %10.2f %11.2f\n", $1, $2 / $4, $3 / $5 }' "$out/sweep.txt"
echo "plot: $out/jct-vs-load.png"

echo
echo "== 2. scale: $big jobs on 512 GPUs (64 x 8:24:500), 36 jobs/h, TUNE/FIFO"
i=0
: >"$out/scale.txt"
while [ $i -lt $reps ]; do
	"$sim" -n "$big" -r 36 -c 64x8:24:500 -a tune -o fifo | awk '$1 == "tune" { print $13, $7, $11 }' >>"$out/scale.txt"
	i=$((i + 1))
done
sort -n "$out/scale.txt" | awk '{ t[NR] = $1; mk = $2; v += $3 }
	END { printf "runs %d  cpu_s min %.2f median %.2f max %.2f  makespan_h %s  violations %d\n",
	      NR, t[1], t[int((NR + 1) / 2)], t[NR], mk, v }'

echo
echo "== 3. one round, 1000 pending jobs, 128 servers"
"$pb" round -n 1000 -S 128 -R 21

echo
echo "== 4. TUNE vs OPT, 64 GPUs"
"$pb" opt -I "$inst"
fi

case "$sections" in *5*) ;; *) exit 0 ;; esac
echo
echo "== 5. live Slurm beside rounds: 128 GPUs, 1-GPU jobs, 20/70/10, window ids $win of $n, seeds $seeds"
: >"$out/live.txt"
for r in $live_rates; do
	for sd in $seeds; do
		"$sim" -n "$n" -w "$win" -r "$r" -s "$sd" -a prop,tune -o fifo,srtf --live=both >"$out/live-$r-$sd.txt"
		awk -v r="$r" -v s="$sd" '/^(live-)?(prop|tune) / { print r, s, $2, $1, $4 }' \
			"$out/live-$r-$sd.txt" >>"$out/live.txt"
	done
done
# Per rate and ordering: PROP/TUNE of mean JCT in rounds and in live Slurm
# (min/median/max over the seeds), and the median mean JCT of each.
awk '
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j-1]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
function mmm(a, n,   i, lo, hi) {
	lo = hi = a[1]
	for (i = 2; i <= n; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
	return sprintf("%.2f/%.2f/%.2f", lo, med(a, n), hi)
}
{ j[$1 " " $3 " " $2 " " $4] = $5; if (!(($1 " " $3) in seen)) { seen[$1 " " $3] = 1; key[++nk] = $1 " " $3 }
  if (!(($1 " " $3 " " $2) in sd)) { sd[$1 " " $3 " " $2] = 1; ns[$1 " " $3]++; seedof[$1 " " $3, ns[$1 " " $3]] = $2 } }
END {
	printf "%-5s %-5s %18s %18s %10s %10s %10s %10s\n", "rate", "order", "rounds_prop/tune", "live_prop/tune",
	       "prop_h", "tune_h", "lprop_h", "ltune_h"
	for (k = 1; k <= nk; k++) {
		n = ns[key[k]]
		for (i = 1; i <= n; i++) {
			s = seedof[key[k], i]; split(key[k], kk, " "); b = kk[1] " " kk[2] " " s
			rr[i] = j[b " prop"] / j[b " tune"]; lr[i] = j[b " live-prop"] / j[b " live-tune"]
			p[i] = j[b " prop"]; t[i] = j[b " tune"]; lp[i] = j[b " live-prop"]; lt[i] = j[b " live-tune"]
		}
		split(key[k], kk, " ")
		printf "%-5s %-5s %18s %18s %10.2f %10.2f %10.2f %10.2f\n", kk[1], kk[2], mmm(rr, n), mmm(lr, n),
		       med(p, n), med(t, n), med(lp, n), med(lt, n)
	}
}' "$out/live.txt"
# Window jobs that finished in the drain (after the last arrival): a
# measure is steady-state only when these are few. Most over the seeds.
grep -H '^#.*window jobs finished after the last arrival' "$out"/live-*.txt 2>/dev/null |
	sed 's|^.*/live-\([^-]*\)-[^.]*\.txt:# \([^:]*\): \([0-9]*\) of \([0-9]*\).*|\1 \2 \3 \4|' |
	awk '{ k = $1 " " $2; if ($3 > m[k]) m[k] = $3; w = $4; if (!(k in o)) o[k] = ++n; ks[n] = k }
	     END { if (n) printf "# window jobs in the drain (most over the seeds, of %d):", w
		   for (i = 1; i <= n; i++) printf "%s %s=%d", (i > 1 ? "," : ""), ks[i], m[ks[i]]
		   if (n) printf "\n" }'

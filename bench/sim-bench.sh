#!/bin/sh
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
	n=2000 win=1000-1999 rates=6,9,12 big=2000 reps=1 inst=2
else
	n=12000 win=4000-5000 rates=4,6,7,7.5,8,8.5,9,10,12 big=10000 reps=3 inst=10
fi

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

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# profiler-accuracy.sh: the profiler's targets, measured on datasets the
# model was never developed on.
#
# For each dataset:
#   1. `synergy-profile run` (emulated GPU, storage made cold): its wall
#      time (target <= 60 s) and the rates it measured;
#   2. its predictions (`what-if`, exactly what the scheduler evaluates)
#      against direct measurements (`measure`: a fresh loader at that many
#      threads and that cache size, cache filled as a first epoch would,
#      storage made cold before each whole measured epoch, the emulated GPU
#      in front) at every point of THREADS x FRACS (cache as a fraction of
#      the dataset). Target: every point within 5%, median within 2%.
# With OLD=/path/to/an/other/synergy-profile, that binary profiles the same
# dataset right after this one and its predictions are shown beside (the
# measurements do not depend on the model: both are compared with the same).
#
# Storage is made cold with drop_caches when run as root (COLD=drop), else
# by evicting the dataset's files (fadvise). Machine load: before every
# timed step the script waits (at most MAX_WAIT s) until the other
# processes use less than QUIET% of the machine over 2 s, and every row
# reports the share of the machine the other processes used while it ran
# ("others%": all CPU time the kernel counted minus this measurement's own).
#
# Usage: bench/profiler-accuracy.sh [BUILD_DIR]   (default: build)
# Environment:
#   SETS      which of the built-in datasets, default "a b c d" (generated
#             under DATA, default /var/tmp/synergy-prof-accuracy, when missing):
#               a  8000 images, 270-400 px, quality 87, seed 52711  (~44 KB)
#               b  5000 images, 400-580 px, quality 92, seed 90417  (~112 KB)
#               c  2000 images, 500-800 px, quality 95, seed 31337  (~238 KB)
#               d  3000 images, 640-960 px, quality 75, seed 6011   (~172 KB)
#   DATASETS  other dataset directories instead (space-separated)
#   THREADS   default "1 2"; FRACS default "0 0.25 0.5 0.75 1"
#   GPU_RATE  emulated GPU, samples/s (default 3000: every point CPU-bound here)
#   EPOCHS    measured epochs per point (default 2); BATCH (32); RUNS (1)
#   COLD      drop | fadvise (default: drop as root, else fadvise)
#   QUIET     (15) MAX_WAIT (900)
# Prints tables; run it on a quiet machine for the numbers in BENCHMARKS.md.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
sp=$build/profiler/synergy-profile
gen=$build/tools/coordl-datagen
old=${OLD:-}
data=${DATA:-/var/tmp/synergy-prof-accuracy}
sets=${SETS:-a b c d}
threads=${THREADS:-1 2}
fracs=${FRACS:-0 0.25 0.5 0.75 1}
rate=${GPU_RATE:-3000}
epochs=${EPOCHS:-2}
batch=${BATCH:-32}
runs=${RUNS:-1}
quiet=${QUIET:-15}
max_wait=${MAX_WAIT:-900}
if [ -z "${COLD:-}" ]; then
	if [ "$(id -u)" = 0 ]; then cold=drop; else cold=fadvise; fi
else
	cold=$COLD
fi
for x in "$sp" "$gen" ${old:+"$old"}; do
	[ -x "$x" ] || { echo "profiler-accuracy: $x not built (make in $build)" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/syn-prof-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# busy and total jiffies of the whole machine
jiffies() { awk '/^cpu / {b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6; exit}' /proc/stat; }
hz=$(getconf CLK_TCK)
ncpu=$(nproc)

# Wait until the other processes leave the machine alone (busy < QUIET% over
# 2 s); print how long it waited.
wait_quiet() {
	waited=0
	while :; do
		set -- $(jiffies)
		b0=$1 t0=$2
		sleep 2
		set -- $(jiffies)
		busy=$(awk -v b="$(($1 - b0))" -v t="$(($2 - t0))" 'BEGIN {printf "%d", t ? 100 * b / t : 0}')
		[ "$busy" -ge "$quiet" ] && [ "$waited" -lt "$max_wait" ] || break
		sleep 8
		waited=$((waited + 10))
	done
	echo "$waited"
}

# own_cpu: CPU seconds of this shell's finished children (POSIX `times`,
# second line) into $cpu. Called as a plain command: in a command
# substitution `times` would run in a subshell, whose children are none of
# the measurements, and every step's own CPU would be counted as the others'
# (it was: the others% of earlier runs was the measurement itself).
own_cpu() {
	times > "$tmp/times"
	cpu=$(awk 'NR == 2 {
		n = split($0, f, /[ \t]+/); s = 0
		for (i = 1; i <= n; i++) if (f[i] != "") { split(f[i], p, "m"); s += p[1] * 60 + p[2] }
		printf "%.3f", s }' "$tmp/times")
}

# others% while a step ran: machine busy time minus the step's own CPU
# time (seconds), as a share of the machine over its wall time.
others() { # B0 T0 B1 T1 OWN_CPU_S
	awk -v b="$(($3 - $1))" -v t="$(($4 - $2))" -v own="$5" -v hz="$hz" 'BEGIN {
		o = (b / hz - own) / (t / hz); if (o < 0) o = 0; printf "%.0f", 100 * o }'
}

gen_set() { # NAME -> directory
	case $1 in
	a) args="--classes 40 --images 8000 --seed 52711 --width-range 270-400 --quality 87" ;;
	b) args="--classes 100 --images 5000 --seed 90417 --width-range 400-580 --quality 92" ;;
	c) args="--classes 20 --images 2000 --seed 31337 --width-range 500-800 --quality 95" ;;
	d) args="--classes 50 --images 3000 --seed 6011 --width-range 640-960 --quality 75" ;;
	*) echo "profiler-accuracy: unknown set '$1' (a, b, c or d)" >&2; exit 2 ;;
	esac
	dir=$data/$1
	if [ ! -f "$dir/.complete" ]; then
		echo "generating set $1 in $dir ($args) ..." >&2
		rm -rf "$dir"
		mkdir -p "$data"
		# shellcheck disable=SC2086
		"$gen" --out "$dir" $args > /dev/null
		echo "$args" > "$dir/.complete"
	fi
	echo "$dir"
}

if [ -n "${DATASETS:-}" ]; then
	list=$DATASETS
else
	list=
	for s in $sets; do list="$list $(gen_set "$s")"; done
fi

echo "machine: $ncpu cores, load $(cut -d' ' -f1-3 /proc/loadavg); gpu rate $rate samples/s;"
echo "storage made cold with: $cold; $epochs measured epochs per point; batch $batch;"
echo "each step waits for the others to use < $quiet% of the machine (at most $max_wait s)"
echo "model: $sp${old:+; before: $old}"
all=$tmp/all.err
: > "$all"
for ds in $list; do
	n=$(find "$ds" -type f -name '*.jpg' | wc -l)
	bytes=$(find "$ds" -type f -name '*.jpg' -printf '%s\n' | awk '{s += $1} END {printf "%d", s}')
	mean=$(awk -v b="$bytes" -v n="$n" 'BEGIN {printf "%.1f", b / n / 1000}')
	# Grid columns at exactly these fractions of the dataset, so that the
	# checked points need no interpolation between columns.
	grid_mem=$(for f in $fracs; do awk -v b="$bytes" -v f="$f" 'BEGIN {printf "%.9f\n", b * f / 1073741824}'; done | paste -sd, -)
	half=$(awk -v b="$bytes" 'BEGIN {printf "%.9f", b / 2 / 1073741824}')
	echo
	echo "=== $ds: $n images, $bytes bytes (mean $mean KB)"
	for run in $(seq 1 "$runs"); do
		for which in new ${old:+old}; do
			bin=$sp
			[ "$which" = new ] || bin=$old
			w=$(wait_quiet)
			set -- $(jiffies)
			b0=$1 t0=$2
			own_cpu
			c0=$cpu
			"$bin" run -q --out "$tmp/$which.json" --key bench --gpu-rate "$rate" --batch-size "$batch" \
				--cold "$cold" --grid-cpus 1,2,3,4 --grid-mem "$grid_mem" --prop-cpus 1 \
				--prop-mem "$half" "$ds" > "$tmp/$which.out"
			set -- $(jiffies)
			own_cpu
			oth=$(others "$b0" "$t0" "$1" "$2" "$(awk -v a="$c0" -v b="$cpu" 'BEGIN {print b - a}')")
			wall=$(awk '/^measured in/ {print $3}' "$tmp/$which.out")
			echo "-- run $run, profile ($which model): $wall s wall, others used $oth% of the machine (waited $w s)"
			sed -n '/^storage:/,/^memory check/p' "$tmp/$which.out"
		done
		echo
		printf '%-7s %-10s %6s %9s %9s %9s %9s %7s %7s %8s %8s %7s %7s\n' threads cache hit predicted \
			measured min max err% ${old:+old_err%} prep_ms fetch_ms cpu_ms others%
		for t in $threads; do
			for f in $fracs; do
				cache=$(awk -v b="$bytes" -v f="$f" 'BEGIN {printf "%d", b * f}')
				pred=$("$sp" what-if "$tmp/new.json" --cpus "$t" --cache "$cache" | awk '/^throughput/ {print $2}')
				pold=
				[ -z "$old" ] || pold=$("$sp" what-if "$tmp/old.json" --cpus "$t" --cache "$cache" | awk '/^throughput/ {print $2}')
				w=$(wait_quiet)
				set -- $(jiffies)
				b0=$1 t0=$2
				own_cpu
				c0=$cpu
				meas=$("$sp" measure -q --threads "$t" --cache "$cache" --gpu-rate "$rate" \
					--batch-size "$batch" --cold "$cold" --epochs "$epochs" "$ds")
				set -- $(jiffies)
				b1=$1 t1=$2
				own_cpu
				oth=$(others "$b0" "$t0" "$b1" "$t1" "$(awk -v a="$c0" -v b="$cpu" 'BEGIN {print b - a}')")
				set -- $meas # threads T cache C hit_rate H samples_per_s X min Y max Z prep_ms P fetch_ms F cpu_ms U
				awk -v t="$t" -v f="$f" -v h="$6" -v x="$8" -v lo="${10}" -v hi="${12}" -v p="$pred" \
					-v po="$pold" -v pm="${14}" -v fm="${16}" -v cm="${18}" -v oth="$oth" -v w="$w" \
					-v all="$all" 'BEGIN {
					e = 100 * (p - x) / x
					printf "%-7s %-10s %6.3f %9.1f %9.1f %9.1f %9.1f %+7.1f", t, f, h, p, x, lo, hi, e
					if (po != "") printf " %+7.1f", 100 * (po - x) / x
					printf " %8.4f %8.4f %7.4f %7s", pm, fm, cm, oth
					if (w > 0) printf "  (waited %d s)", w
					printf "\n"
					printf "%.4f%s\n", e, po != "" ? sprintf(" %.4f", 100 * (po - x) / x) : "" >> all }'
			done
		done
	done
done

echo
awk '
function abs(v) { return v < 0 ? -v : v }
{ n++; e[n] = abs($1); if (e[n] <= 5) ok++; if (e[n] > mx) mx = e[n]
  if (NF > 1) { no++; o[n] = abs($2); if (o[n] <= 5) ook++; if (o[n] > omx) omx = o[n] } }
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
END {
	if (!n) exit 1
	printf "all points: %d of %d within 5%%, median |error| %.1f%%, max %.1f%% (target: all within 5%%, median within 2%%)\n", ok, n, median(e, n), mx
	if (no) printf "before:     %d of %d within 5%%, median |error| %.1f%%, max %.1f%%\n", ook, n, median(o, n), omx
}' "$all"

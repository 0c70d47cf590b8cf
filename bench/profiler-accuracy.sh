#!/bin/sh
# profiler-accuracy.sh: the profiler's two targets, measured.
#
#   1. time of a full profile (`synergy-profile run`) of a 5,000-image
#      ImageNet-like dataset (target: <= 60 s), with the rates it measured
#      (cold runs and fitted fetch/prep overlap included);
#   2. the profile's predictions (`what-if`, exactly what the scheduler
#      evaluates) against direct measurements (`measure`: a fresh loader at
#      that many threads and that cache size, cache pre-filled, storage made
#      cold, the emulated GPU in front) at 6 grid points measured
#      independently (target: within 5% at >= 4 points).
#
# Usage: bench/profiler-accuracy.sh [BUILD_DIR]   (default: build)
# Environment: DATASET (default /tmp/synergy-bench-ds5k, generated when
# missing), IMAGES (5000), GPU_RATE (samples/s, default 1500), EPOCHS per
# direct measurement (2), BATCH (32), RUNS of the timed profile (3).
# Prints tables; run it on a quiet machine for the numbers in BENCHMARKS.md.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
sp=$build/profiler/synergy-profile
gen=$build/tools/coordl-datagen
ds=${DATASET:-/tmp/synergy-bench-ds5k}
images=${IMAGES:-5000}
rate=${GPU_RATE:-1500}
epochs=${EPOCHS:-2}
batch=${BATCH:-32}
runs=${RUNS:-3}
for x in "$sp" "$gen"; do
	[ -x "$x" ] || { echo "profiler-accuracy: $x not built (make in $build)" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/syn-prof-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [ ! -d "$ds" ]; then
	echo "generating $images images in $ds ..."
	"$gen" --out "$ds" --classes 100 --images "$images" --seed 1 > /dev/null
fi
bytes=$(find "$ds" -type f -name '*.jpg' -printf '%s\n' | awk '{s += $1} END {printf "%d", s}')
# Grid columns at exactly 0, half and all of the dataset, so that the
# checked points need no interpolation between columns.
half=$((bytes / 2))
gib_half=$(awk -v b="$half" 'BEGIN {printf "%.9f", b / 1073741824}')
gib_full=$(awk -v b="$bytes" 'BEGIN {printf "%.9f", b / 1073741824}')
grid_mem="0,$gib_half,$gib_full"
echo "dataset: $ds, $(find "$ds" -type f -name '*.jpg' | wc -l) images, $bytes bytes; gpu rate $rate samples/s"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

echo "== 1. full profile time (synergy-profile run), $runs runs"
printf '%-5s %10s %10s %10s %10s %10s %10s\n' run wall_s gpu_s fetch_s fill_s sweep_s check_s
for i in $(seq 1 "$runs"); do
	"$sp" run -q --out "$tmp/p$i.json" --key bench --gpu-rate "$rate" --batch-size "$batch" \
		--grid-cpus 1,2,3,4 --grid-mem "$grid_mem" --prop-cpus 1 --prop-mem "$gib_half" \
		"$ds" > "$tmp/run$i.out"
	sed -n 's/^measured in \([0-9.]*\) s (gpu \([0-9.]*\), fetch \([0-9.]*\), warm-up \([0-9.]*\), cpu sweep \([0-9.]*\), memory check \([0-9.]*\))/\1 \2 \3 \4 \5 \6/p' \
		"$tmp/run$i.out" | awk -v r="$i" '{printf "%-5s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", r, $1, $2, $3, $4, $5, $6}'
done
awk '/^measured in/ {print $3}' "$tmp"/run*.out | sort -n |
	awk '{v[NR] = $1} END {printf "wall min/median/max: %.1f / %.1f / %.1f s (target <= 60 s)\n", v[1], v[int((NR + 1) / 2)], v[NR]}'
echo
echo "profile used for the predictions (run 1):"
sed -n '/^storage:/,/^memory check/p' "$tmp/run1.out"
echo

echo "== 2. predicted vs measured, $epochs epochs per point, storage cold"
printf '%-8s %-12s %10s %10s %10s %10s %8s %8s\n' threads cache hit_rate predicted measured min max err_%
pass=0
n=0
for pt in "1 0" "2 0" "1 $half" "2 $half" "1 $bytes" "2 $bytes"; do
	set -- $pt
	pred=$("$sp" what-if "$tmp/p1.json" --cpus "$1" --cache "$2" | awk '/^throughput/ {print $2}')
	meas=$("$sp" measure -q --threads "$1" --cache "$2" --gpu-rate "$rate" --batch-size "$batch" \
		--epochs "$epochs" "$ds")
	set -- $meas # threads T cache C hit_rate H samples_per_s X min Y max Z
	line=$(awk -v t="$2" -v c="$4" -v h="$6" -v x="$8" -v lo="${10}" -v hi="${12}" -v p="$pred" 'BEGIN {
		e = 100 * (p - x) / x
		cl = c == 0 ? "0" : sprintf("%.0fMiB", c / 1048576)
		printf "%-8s %-12s %10.3f %10.1f %10.1f %10.1f %10.1f %+8.1f", t, cl, h, p, x, lo, hi, e
		exit (e < -5 || e > 5) }') && pass=$((pass + 1)) || true
	n=$((n + 1))
	echo "$line"
done
echo "points within 5%: $pass of $n (target >= 4)"
echo "note: the profile fits its fetch/prep overlap on cold, uncached runs at 1 and at the most"
echo "threads (the cache-0 rows' conditions) and measures prep with everything cached (the"
echo "full-cache rows'); the half-cache rows are the independent test of the model."

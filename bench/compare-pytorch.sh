#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# compare-pytorch.sh: coordl versus the PyTorch DataLoader, images/s on the
# same ImageFolder data, the same cores and the same consumer loop.
#
# Runs bench/pytorch_baseline.py with --loader coordl and --loader torch,
# interleaved (the order alternates every repetition, so drift in machine
# load hits both alike), and prints min/median/max images/s of each, and
# images per CPU-second (less disturbed by other load), and the ratios
# coordl/torch (of the medians, and min/median/max over the paired
# repetitions). Target (issue 2): coordl >= 4x torch in images/s.
#
# Usage: bench/compare-pytorch.sh [--data DIR] [--images N] [--classes C]
#            [--reps R] [--cores N] [--epochs E] [--batch-size B]
#            [--builddir DIR]
#   --data DIR     an existing ImageFolder tree; without it, N images in C
#                  classes are generated with tools/coordl-datagen into a
#                  temporary directory (default 2000 images, 10 classes)
#   --reps R       repetitions of each loader (default 5)
#   --cores N      cores for both (default: all in the affinity mask); with
#                  taskset, both are pinned to the first N of them
#   --builddir DIR the build tree holding loader/.libs/libcoordl.so and
#                  tools/coordl-datagen (default: $top_builddir, else .)
set -u
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${top_builddir:-.}
data='' images=2000 classes=10 reps=5 cores='' epochs=1 batch=64
PY=${PYTHON3:-/usr/bin/python3}

usage() { sed -n '3,26s/^# \{0,1\}//p' "$0"; }
die() { echo "compare-pytorch: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--data) data=$2; shift ;;
	--images) images=$2; shift ;;
	--classes) classes=$2; shift ;;
	--reps) reps=$2; shift ;;
	--cores) cores=$2; shift ;;
	--epochs) epochs=$2; shift ;;
	--batch-size) batch=$2; shift ;;
	--builddir) builddir=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift || die "option needs a value"
done
builddir=$(cd "$builddir" && pwd) || die "no build directory '$builddir'"
lib=${COORDL_LIBRARY:-$builddir/loader/.libs/libcoordl.so}
[ -f "$lib" ] || die "libcoordl not built: $lib (use --builddir)"
export COORDL_LIBRARY="$lib"
"$PY" -c 'import torch, torchvision' 2>/dev/null ||
	die "$PY cannot import torch and torchvision"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare-pytorch.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
if [ -z "$data" ]; then
	gen=$builddir/tools/coordl-datagen
	[ -x "$gen" ] || die "no --data and $gen is not built"
	data=$tmp/data
	echo "generating $images images in $classes classes under $data" >&2
	"$gen" --out "$data" --classes "$classes" --images "$images" \
		--seed 1 >/dev/null || die "coordl-datagen failed"
fi
[ -d "$data" ] || die "--data $data: not a directory"

# Both loaders get the same cores: pinned to the first N allowed CPUs.
allowed=$("$PY" -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')
ncores=${cores:-$(echo "$allowed" | tr ',' '\n' | wc -l)}
pin=
if command -v taskset >/dev/null 2>&1; then
	pin="taskset -c $(echo "$allowed" | cut -d, -f1-"$ncores")"
fi

echo "data: $data ($(du -sh "$data" | cut -f1), $(find "$data" -type f | wc -l) files)" >&2
echo "cores: $ncores ${pin:+(pinned: $pin)}; batch $batch; $reps reps x $epochs timed epoch(s)" >&2
results=$tmp/results
: >"$results"
i=1
while [ "$i" -le "$reps" ]; do
	if [ $((i % 2)) -eq 1 ]; then order="coordl torch"; else order="torch coordl"; fi
	for l in $order; do
		line=$($pin "$PY" "$srcdir/bench/pytorch_baseline.py" --loader "$l" \
			--cores "$ncores" --batch-size "$batch" --epochs "$epochs" \
			"$data") || die "$l run $i failed"
		echo "rep $i: $line" >&2
		echo "$i $line" >>"$results"
	done
	i=$((i + 1))
done

"$PY" - "$results" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    rep, *kv = line.split()
    d = dict(x.split("=", 1) for x in kv)
    r = runs.setdefault(d["loader"], {})
    r[int(rep)] = (float(d["images_per_s"]), float(d["images_per_cpu_s"]))
print("%-8s %-14s %5s %9s %9s %9s" % ("loader", "metric", "runs", "min",
                                        "median", "max"))
for name in ("coordl", "torch"):
    for m, metric in enumerate(("images/s", "images/CPU-s")):
        v = sorted(x[m] for x in runs[name].values())
        print("%-8s %-14s %5d %9.1f %9.1f %9.1f"
              % (name, metric, len(v), v[0], statistics.median(v), v[-1]))
c, t = runs["coordl"], runs["torch"]
for m, metric in enumerate(("images/s", "images/CPU-s")):
    pairs = sorted(c[k][m] / t[k][m] for k in c if k in t and t[k][m] > 0)
    med = (statistics.median(x[m] for x in c.values())
           / statistics.median(x[m] for x in t.values()))
    print("ratio coordl/torch, %s: %.2fx (medians); paired min %.2fx, "
          "median %.2fx, max %.2fx" % (metric, med, pairs[0],
                                       statistics.median(pairs), pairs[-1]))
    if m == 0:
        print("target >= 4x images/s: %s" % ("met" if med >= 4 else "NOT met"))
EOF

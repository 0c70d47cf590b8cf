#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# remote-bench.sh: coordl reading an ImageFolder over HTTP with 0, 20 and
# 50 ms per request, against coordl on local disk, coordl with one request
# per worker at a time (io_window=-1, no read-ahead), and the PyTorch
# DataLoader with a Dataset that reads over HTTP (2 workers). Same data,
# same cores, same consumer loop (bench/pytorch_baseline.py: training
# augmentation to 224x224 float tensors, batch 64, an infinitely fast GPU).
#
# The server is a private nginx (tests/lib/nginx.sh) on this machine: one
# worker process, access log off, latency from
# `access_by_lua_block { ngx.sleep(S) }`; it shares the cores with the
# loaders, as a real remote store would not. Runs are interleaved (the
# order rotates every repetition) and each prints images/s of its timed
# epoch; the table gives min/median/max per configuration and the ratios
# of the medians. Targets (issue 16), at 50 ms: coordl >= 0.8x its local
# rate and >= 10x the one-request-per-worker rate.
#
# --profile runs, instead, the profiler on the dataset at the highest
# latency: `synergy-profile run` on the URL (the fetch step records the
# request latency and the requests in flight), then its what-if
# predictions against direct measurements (`synergy-profile measure`: a
# fresh loader at that many threads and cache size, the emulated GPU in
# front) at a few points.
#
# Usage: bench/remote-bench.sh [--data DIR] [--images N] [--classes C]
#            [--reps R] [--latencies "0 20 50"] [--slow-batches B]
#            [--cores N] [--builddir DIR] [--profile [--gpu-rate R]]
#   --data DIR        an ImageFolder (its manifest is written if missing);
#                     default: N images in C classes from coordl-datagen
#                     (2000, 10) in a temporary directory
#   --reps R          repetitions (default 3)
#   --slow-batches B  batches per epoch for the slow configurations
#                     (io_window=-1 and torch over HTTP; default 6)
#   --cores N         loader threads / torch workers (default 2)
#   --builddir DIR    build tree with loader/.libs/libcoordl.so,
#                     tools/coordl-datagen and tools/coordl-pack
set -u
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${top_builddir:-.}
data='' images=2000 classes=10 reps=3 lats="0 20 50" slow=6 cores=2 profile=0 gpu=1500
PY=${PYTHON3:-/usr/bin/python3}

usage() { sed -n '3,38s/^# \{0,1\}//p' "$0"; }
die() { echo "remote-bench: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--data) data=$2; shift ;;
	--images) images=$2; shift ;;
	--classes) classes=$2; shift ;;
	--reps) reps=$2; shift ;;
	--latencies) lats=$2; shift ;;
	--slow-batches) slow=$2; shift ;;
	--cores) cores=$2; shift ;;
	--builddir) builddir=$2; shift ;;
	--profile) profile=1; shift; continue ;;
	--gpu-rate) gpu=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift || die "option needs a value"
done
builddir=$(cd "$builddir" && pwd) || die "no build directory '$builddir'"
export COORDL_LIBRARY=${COORDL_LIBRARY:-$builddir/loader/.libs/libcoordl.so}
[ -f "$COORDL_LIBRARY" ] || die "libcoordl not built: $COORDL_LIBRARY (use --builddir)"
"$PY" -c 'import torch, torchvision, PIL' 2>/dev/null || die "$PY cannot import torch and torchvision"
. "$srcdir/tests/lib/nginx.sh"
nginx_have || die "nginx-light and libnginx-mod-http-lua are not installed (tools/install-deps)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/remote-bench.XXXXXX") || exit 2
chmod 755 "$tmp"
trap 'nginx_stop; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
if [ -z "$data" ]; then
	data=$tmp/data
	echo "generating $images images in $classes classes under $data" >&2
	"$builddir/tools/coordl-datagen" --out "$data" --classes "$classes" --images "$images" \
		--seed 1 >/dev/null || die "coordl-datagen failed"
fi
data=$(cd "$data" && pwd) || die "--data: no such directory"
[ -f "$data/coordl.manifest" ] || "$builddir/tools/coordl-pack" --manifest -q "$data" ||
	die "coordl-pack --manifest failed"

port=$(nginx_port) || die "no free port"
locs=
for l in $lats; do
	if [ "$l" = 0 ]; then
		locs="$locs
		location /l0/ { alias $data/; }"
	else
		locs="$locs
$(nginx_latency_loc "l$l" "$data" "$(awk -v l="$l" 'BEGIN { printf "%.3f", l / 1000 }')")"
	fi
done
nginx_write_conf "$tmp/ng" "$port" "
	server {
		listen 127.0.0.1:@PORT@;
$locs
	}"
nginx_start "$tmp/ng" || { cat "$tmp/ng/error.log" >&2; die "nginx did not start"; }

echo "data: $data ($(du -sh "$data" | cut -f1), $(find "$data" -name '*.jpg' | wc -l) images)" >&2
if [ "$profile" = 1 ]; then
	sp=$builddir/profiler/synergy-profile
	[ -x "$sp" ] || die "$sp not built"
	lat=$(echo "$lats" | tr ' ' '\n' | sort -n | tail -1)
	url=http://127.0.0.1:$port/l$lat/
	bytes=$(find "$data" -name '*.jpg' -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }')
	half=$((bytes / 2))
	gh=$(awk -v b="$half" 'BEGIN { printf "%.9f", b / 1073741824 }')
	gf=$(awk -v b="$bytes" 'BEGIN { printf "%.9f", b / 1073741824 }')
	echo "profiling $url at $lat ms; gpu $gpu samples/s; load $(cut -d' ' -f1-3 /proc/loadavg)"
	"$sp" run -q --out "$tmp/p.json" --key remote --gpu-rate "$gpu" --batch-size 32 \
		--max-threads "$cores" --grid-cpus "$(seq -s, 1 "$cores")" --grid-mem "0,$gh,$gf" \
		--prop-cpus 1 --prop-mem "$gh" "$url" >"$tmp/run.out" || die "synergy-profile run failed"
	sed -n '/^measured in/,/^$/p' "$tmp/run.out"
	printf '%-8s %-10s %10s %10s %10s %10s %8s\n' threads cache predicted measured min max err_%
	for pt in "1 0" "$cores 0" "1 $half" "$cores $half" "$cores $bytes"; do
		set -- $pt
		pred=$("$sp" what-if "$tmp/p.json" --cpus "$1" --cache "$2" | awk '/^throughput/ { print $2 }')
		meas=$("$sp" measure -q --threads "$1" --cache "$2" --gpu-rate "$gpu" --batch-size 32 \
			--epochs 2 "$url") || die "synergy-profile measure failed"
		set -- $meas # threads T cache C hit_rate H samples_per_s X min Y max Z
		awk -v t="$2" -v c="$4" -v x="$8" -v lo="${10}" -v hi="${12}" -v p="$pred" 'BEGIN {
			printf "%-8s %-10s %10.1f %10.1f %10.1f %10.1f %+8.1f\n", t,
				c == 0 ? "0" : sprintf("%.0fMiB", c / 1048576), p, x, lo, hi, 100 * (p - x) / x }'
	done
	"$sp" what-if "$tmp/p.json" --cpus 1 --cache 0 | grep '^remote fetch'
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	exit 0
fi
echo "cores: $cores; latencies: $lats ms; $reps reps; slow configurations: $slow batches/epoch" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results=$tmp/results
: >"$results"

# run REP LAT KIND: one measurement, appended to the results.
run() {
	rep=$1 lat=$2 kind=$3
	url=http://127.0.0.1:$port/l$lat/
	case $kind in
	local) args="--loader coordl $data" ;;
	coordl) args="--loader coordl $url" ;;
	sync) args="--loader coordl --io-window -1 --max-batches $slow $url" ;;
	torch) args="--loader torch --max-batches $slow $url" ;;
	esac
	# shellcheck disable=SC2086 # args is a word list
	line=$("$PY" "$srcdir/bench/pytorch_baseline.py" --cores "$cores" --epochs 1 $args) ||
		die "$kind at $lat ms, rep $rep failed"
	echo "rep $rep, $lat ms, $kind: $line" >&2
	echo "$rep $lat $kind $line" >>"$results"
}

i=1
while [ "$i" -le "$reps" ]; do
	run "$i" 0 local
	for l in $lats; do
		kinds="coordl sync torch"
		case $(( (i + l) % 3 )) in
		1) kinds="sync torch coordl" ;;
		2) kinds="torch coordl sync" ;;
		esac
		for k in $kinds; do
			run "$i" "$l" "$k"
		done
	done
	i=$((i + 1))
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PY" - "$results" "$lats" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    rep, lat, kind, *kv = line.split()
    d = dict(x.split("=", 1) for x in kv)
    runs.setdefault((int(lat), kind), {})[int(rep)] = (
        float(d["images_per_s"]), float(d["images_per_cpu_s"]))
lats = [int(x) for x in sys.argv[2].split()]
names = {"local": "coordl, local disk", "coordl": "coordl over HTTP",
         "sync": "coordl, 1 request/worker", "torch": "torch DataLoader, HTTP"}
def med(k, m=0):
    return statistics.median(v[m] for v in runs[k].values())
print("%-8s %-26s %5s %9s %9s %9s %12s" % ("latency", "loader", "runs", "min",
      "median", "max", "img/CPU-s"))
for lat in lats:
    for kind in ("coordl", "sync", "torch"):
        v = sorted(x[0] for x in runs[(lat, kind)].values())
        print("%-8s %-26s %5d %9.1f %9.1f %9.1f %12.1f" % (
            "%d ms" % lat, names[kind], len(v), v[0], statistics.median(v),
            v[-1], med((lat, kind), 1)))
v = sorted(x[0] for x in runs[(0, "local")].values())
print("%-8s %-26s %5d %9.1f %9.1f %9.1f %12.1f" % ("-", names["local"], len(v),
      v[0], statistics.median(v), v[-1], med((0, "local"), 1)))
print()
print("%-8s %14s %14s %14s" % ("latency", "vs local", "vs 1 req/wkr",
                               "vs torch HTTP"))
for lat in lats:
    c = med((lat, "coordl"))
    print("%-8s %13.2fx %13.1fx %13.1fx" % ("%d ms" % lat, c / med((0, "local")),
          c / med((lat, "sync")), c / med((lat, "torch"))))
if 50 in lats:
    c = med((50, "coordl"))
    print("targets at 50 ms: >= 0.8x local: %s; >= 10x one request per worker: %s"
          % ("met" if c >= 0.8 * med((0, "local")) else "NOT met",
             "met" if c >= 10 * med((50, "sync")) else "NOT met"))
EOF

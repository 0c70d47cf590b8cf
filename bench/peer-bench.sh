#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# peer-bench.sh: the partitioned cache of a multi-node job (issues 14, 24) on
# one machine. NODES coordl-bench processes on 127.0.0.1 act as the nodes of
# one job (rank k of NODES on node k, each its own cache directory, one
# SYNERGY_PEER_KEY per run), peer reads over loopback TCP. Each node's cache
# bound is CACHE_FRAC of the dataset, so the dataset does not fit one node's
# cache but fits the union. Three configurations, interleaved per repetition:
#   partitioned  SYNERGY_PEERS set: each node caches its part, misses from peers
#   per-node     SYNERGY_PEER_WIREUP=off: independent MinIO caches
#   no cache     SYNERGY_CACHE_BYTES=0: storage (and its page cache) only
#   other        (with OTHER=BINARY, another build's coordl-bench, e.g. before
#                a change to loader/peer.c) partitioned, that build's peer
#                tier (UCX_TLS=tcp for a build whose peers ran over UCX)
# Prints one row per configuration, repetition, node and epoch, then, for the
# epochs after the first, min/median/max over repetitions and nodes of
# storage MB, images/s and peer MB/s (bytes read from peers over the
# epoch's wall time: what the peer tier delivered, not what it could).
#
# Usage: bench/peer-bench.sh BUILD_DIR [NODES] [IMAGES] [EPOCHS] [REPS]
# (defaults 2 nodes, 2000 images, 4 epochs, 3 repetitions). Env: CACHE_FRAC
# (default 0.6), THREADS per node (default 1), OUT_SIZE (default 64), OTHER,
# STORAGE_MBPS: put the dataset on slow storage instead, as the demo does
# (root, cgroup v1 blkio): an ext4 image on a loop device (direct I/O),
# reads limited to that many MB/s for the whole machine, remounted before
# every configuration so that each starts with a cold page cache; each
# node then runs in a memory cgroup of its own (v1), limited to its cache
# plus MEM_EXTRA_MB (default 96), as a job's memory limit bounds its page
# cache, and caches live in /dev/shm as the plugin's CacheDir does. Nodes
# do not share a page cache: node k reads its own copy of the dataset on
# the one throttled disk (the bandwidth is shared, as a cluster file
# system's is).
set -eu
b=${1:?usage: peer-bench.sh BUILD_DIR [NODES] [IMAGES] [EPOCHS] [REPS]}
nodes=${2:-2}
images=${3:-2000}
epochs=${4:-4}
reps=${5:-3}
frac=${CACHE_FRAC:-0.6}
threads=${THREADS:-1}
size=${OUT_SIZE:-64}
bench=$b/bench/coordl-bench
gen=$b/tools/coordl-datagen
[ -x "$bench" ] && [ -x "$gen" ] || { echo "peer-bench: build $b first" >&2; exit 2; }
other=${OTHER:-}
[ -z "$other" ] || [ -x "$other" ] || { echo "peer-bench: OTHER='$other' is not an executable" >&2; exit 2; }
configs="partitioned per-node no-cache${other:+ other}"
mbps=${STORAGE_MBPS:-}
case "$mbps" in '' | [1-9] | [1-9][0-9] | [1-9][0-9][0-9] | [1-9][0-9][0-9][0-9]) ;;
*) echo "peer-bench: STORAGE_MBPS='$mbps': expected MB/s 1..9999" >&2; exit 2 ;; esac
if [ -n "$mbps" ]; then
	[ "$(id -u)" = 0 ] || { echo "peer-bench: STORAGE_MBPS needs root (loop device, blkio)" >&2; exit 2; }
	[ -w /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ] && [ -d /sys/fs/cgroup/memory ] ||
		{ echo "peer-bench: STORAGE_MBPS needs the cgroup v1 blkio and memory controllers" >&2; exit 2; }
fi
extra=${MEM_EXTRA_MB:-96}
case "$extra" in '' | *[!0-9]*) echo "peer-bench: MEM_EXTRA_MB='$extra': expected MB" >&2; exit 2 ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/peer-bench.XXXXXX")
pids=
loopdev=
throttle=
memcg=/sys/fs/cgroup/memory/peer-bench.$$
shm=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || :; done
	[ -z "$throttle" ] || echo "$throttle 0" >/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device
	if [ -n "$loopdev" ]; then
		umount "$tmp/disk" 2>/dev/null || umount -l "$tmp/disk" 2>/dev/null || :
		losetup -d "$loopdev" 2>/dev/null || :
	fi
	for k in $(seq 0 $((nodes - 1))); do
		[ ! -d "$memcg.$k" ] || rmdir "$memcg.$k" 2>/dev/null || :
	done
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
ds=$tmp/ds
cdir=$tmp
if [ -n "$mbps" ]; then
	shm=$(mktemp -d /dev/shm/peer-bench.XXXXXX)
	cdir=$shm
	truncate -s $((images * 130 * nodes / 1000 + 64))M "$tmp/disk.img"
	mkfs.ext4 -q -F "$tmp/disk.img"
	loopdev=$(losetup --find --show --direct-io=on "$tmp/disk.img")
	mkdir -p "$tmp/disk"
	mount -o noatime "$loopdev" "$tmp/disk"
	ds=$tmp/disk/ds.0
fi
"$gen" --out "$ds" --classes 10 --images "$images" --seed 14 --width-range 300-500 -j 2 >/dev/null
if [ -n "$mbps" ]; then
	for k in $(seq 1 $((nodes - 1))); do cp -a "$ds" "$tmp/disk/ds.$k"; done
	sync
	throttle=$(lsblk -dno MAJ:MIN "$loopdev" | tr -d ' ')
	echo "$throttle $((mbps * 1000000))" >/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device
fi
# cold: before a configuration, empty the dataset's page cache (remount).
cold() {
	[ -n "$loopdev" ] || return 0
	umount "$tmp/disk" && mount -o noatime "$loopdev" "$tmp/disk"
}
dsbytes=$(find "$ds" -type f -name '*.jpg' -printf '%s\n' | awk '{s += $1} END {print s}')
cache=$(awk -v d="$dsbytes" -v f="$frac" 'BEGIN {printf "%d", d * f}')
port0=$((30000 + $$ % 20000))
echo "# peer-bench: $nodes nodes on 127.0.0.1, dataset $images images $dsbytes bytes," \
	"cache $cache bytes per node ($frac), $threads thread(s)/node, out $size, $(nproc) cpus"
if [ -n "$mbps" ]; then
	echo "# storage: $loopdev (ext4, direct I/O), reads limited to $mbps MB/s (blkio), cold before each configuration;" \
		"each node in a memory cgroup of cache + $extra MB, caches in /dev/shm"
else
	echo "# storage: a local directory (its files stay in the page cache)"
fi
echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$other" ] || echo "# other: $other"
printf '%-12s %3s %4s %5s %10s %9s %8s %8s %9s\n' config rep node epoch storageMB img/s peerMB fallback peerMB/s
run_config() { # config rep
	cfg=$1
	rep=$2
	port=$((port0 + rep * 16))
	# The run's key: every node of it the same, as every task of a step.
	key=$(head -c32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	peers=
	k=0
	while [ $k -lt "$nodes" ]; do
		peers="$peers${peers:+,}127.0.0.1:$((port + k))"
		k=$((k + 1))
	done
	pids=
	k=0
	while [ $k -lt "$nodes" ]; do
		rm -rf "$cdir/c$k"
		mkdir -p "$cdir/c$k"
		if [ -n "$mbps" ]; then
			[ -d "$memcg.$k" ] || mkdir "$memcg.$k"
			echo $((cache + extra * 1048576)) >"$memcg.$k/memory.limit_in_bytes"
		fi
		(
			export SYNERGY_CACHE_NAME=peerbench SYNERGY_CACHE_DIR="$cdir/c$k"
			export SYNERGY_CACHE_BYTES="$cache"
			bin=$bench
			case $cfg in
			partitioned | other)
				export SYNERGY_PEERS="$peers" SYNERGY_NODE_INDEX=$k SYNERGY_PEER_TAG=$port
				export SYNERGY_PEER_KEY="$key"
				[ "$cfg" = partitioned ] || { bin=$other; export UCX_TLS=tcp; } ;;
			per-node) export SYNERGY_PEER_WIREUP=off ;;
			no-cache) export SYNERGY_CACHE_BYTES=0 ;;
			esac
			tasks=/dev/null
			[ -z "$mbps" ] || tasks=$memcg.$k/tasks
			# The node's process joins its memory cgroup, then becomes the bench.
			exec sh -c 'echo $$ >"$0" && exec "$@"' "$tasks" "$bin" -e "$epochs" \
				-t "$threads" -s "$size" -b 32 --rank=$k --world-size="$nodes" "${ds%.0}${mbps:+.$k}" \
				>"$tmp/out.$k" 2>"$tmp/err.$k"
		) &
		pids="$pids $!"
		k=$((k + 1))
	done
	for p in $pids; do wait "$p" || { echo "peer-bench: a node failed:" >&2; cat "$tmp"/err.* >&2; exit 1; }; done
	pids=
	k=0
	while [ $k -lt "$nodes" ]; do
		# epoch images wall img/s img/s/thr img/cpu-s stall% hit% storageMB diskMB corrupt rssMB
		# [peer% peerMB fallback stalls up]
		awk -v c="$cfg" -v r="$rep" -v k=$k '$1 ~ /^[0-9]+$/ {
			printf "%-12s %3d %4d %5d %10.2f %9.1f %8.2f %8s %9.1f\n", c, r, k, $1, $9, $4,
				(NF >= 17 ? $14 : 0), (NF >= 17 ? $15 : "-"),
				(NF >= 17 && $3 > 0 ? $14 / $3 : 0) }' "$tmp/out.$k"
		k=$((k + 1))
	done
}
r=1
while [ "$r" -le "$reps" ]; do
	for cfg in $configs; do
		cold
		run_config "$cfg" "$r" | tee -a "$tmp/rows"
	done
	r=$((r + 1))
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# epochs 1..$((epochs - 1)), over repetitions and nodes: min/median/max"
printf '%-12s %26s %26s %26s\n' config "storageMB/node/epoch" "img/s/node" "peerMB/s/node"
for cfg in $configs; do
	awk -v c="$cfg" '$1 == c && $4 >= 1 {print $5, $6, $9}' "$tmp/rows" >"$tmp/sel"
	s=$(cut -d' ' -f1 "$tmp/sel" | sort -g | awk '{a[NR] = $1} END {printf "%.2f/%.2f/%.2f", a[1], a[int((NR + 1) / 2)], a[NR]}')
	i=$(cut -d' ' -f2 "$tmp/sel" | sort -g | awk '{a[NR] = $1} END {printf "%.0f/%.0f/%.0f", a[1], a[int((NR + 1) / 2)], a[NR]}')
	m=$(cut -d' ' -f3 "$tmp/sel" | sort -g | awk '{a[NR] = $1} END {printf "%.1f/%.1f/%.1f", a[1], a[int((NR + 1) / 2)], a[NR]}')
	printf '%-12s %26s %26s %26s\n' "$cfg" "$s" "$i" "$m"
done

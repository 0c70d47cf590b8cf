#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# minio-vs-pagecache.sh: storage reads per epoch under one memory limit,
# with coordl's MinIO cache versus the kernel page cache.
#
# Usage: bench/minio-vs-pagecache.sh DATASET MEMORY [EPOCHS]
#   MEMORY: the memory limit of the loader's cgroup, e.g. 512M (K/M/G suffixes)
#
# Needs root: it creates a memory cgroup (v1 or v2) with that limit and drops
# the page cache before each run. "minio" runs coordl with a MinIO cache of
# MEMORY minus a margin for the process itself; "pagecache" runs it with no
# cache of its own, so only the page cache (bounded by the same cgroup) can
# help. Both run RAW mode (fetch only) with 2 threads. The dataset must be on
# a block device: diskMB (what the kernel read from the device) is the
# number to compare; MinIO reads dataset - cache per epoch after the first.
set -eu
bd=${top_builddir:-$(dirname "$0")/..}
bench=${COORDL_BENCH:-$bd/bench/coordl-bench}
[ $# -ge 2 ] || { sed -n 3,15p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ds=$1; mem=$2; epochs=${3:-4}
[ "$(id -u)" = 0 ] || { echo "minio-vs-pagecache: needs root (memory cgroup, drop_caches)" >&2; exit 1; }
[ -x "$bench" ] || { echo "minio-vs-pagecache: $bench not built" >&2; exit 1; }
bytes=$(echo "$mem" | awk '/^[0-9]+[KkMmGg]?$/ {
	n = $0 + 0; u = substr($0, length($0)); m = 1
	if (u ~ /[Kk]/) m = 1024; if (u ~ /[Mm]/) m = 1048576; if (u ~ /[Gg]/) m = 1073741824
	printf "%d", n * m }')
[ -n "$bytes" ] || { echo "minio-vs-pagecache: MEMORY '$mem': expected bytes with K/M/G" >&2; exit 2; }
margin=$((48 * 1048576))
[ "$bytes" -gt $((2 * margin)) ] || { echo "minio-vs-pagecache: MEMORY must exceed 96M" >&2; exit 2; }

name=coordl-bench.$$
if [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/$name; limit_file=memory.limit_in_bytes
else
	cg=/sys/fs/cgroup/$name; limit_file=memory.max
fi
mkdir "$cg"
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
echo "$bytes" >"$cg/$limit_file"

size=$(du -sb "$ds" | cut -f1)
echo "# $(uname -n): dataset $ds ($((size / 1000000)) MB), memory limit $mem ($cg)"
for policy in minio pagecache; do
	if [ $policy = minio ]; then cache=$((bytes - margin)); else cache=0; fi
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo "## $policy: coordl cache $((cache / 1048576)) MiB"
	sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
		"$bench" -m raw -t 2 -e "$epochs" -c "$cache" "$ds" | grep -v '^#'
done

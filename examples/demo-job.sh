#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# demo-job.sh: one training job of the synergy-demo job mix, as a Slurm batch
# script (it also runs outside Slurm).
#
# Usage: demo-job.sh c|py DATASET EPOCHS GPU_RATE
#   c   the C training loop: coordl-bench with an emulated GPU (-g)
#   py  the Python training loop: examples/train_resnet_emulated.py over the
#       coordl binding (numpy batches; the GPU step is emulated the same way)
#
# THE GPU IS EMULATED: each batch is "trained on" by waiting batch/GPU_RATE
# seconds, the time a GPU training at GPU_RATE samples/s would take, without
# using a core. Everything else (reading the dataset, JPEG decode, crop,
# resize, the MinIO cache) is real and runs inside the job's cgroups.
#
# Threads and cache come from the Synergy environment (SYNERGY_THREADS,
# SYNERGY_CACHE_BYTES) when the plugin sized the job. Without it (a
# GPU-proportional job) the loader uses the cores of its cpuset and, as
# cache, the job's memory limit minus DEMO_PROCESS_MB (default 96): the same
# rule the plugin applies, so both runs use the loader the same way and only
# the allocation differs.
#
# Environment: DEMO_SRCDIR (the source tree; default: .. of this script),
# DEMO_BUILDDIR (the build tree; default: DEMO_SRCDIR/build), DEMO_PROCESS_MB. The last line printed is
#   RESULT images=N wall=S rate=R stall=P cores_start=A cores_max=B cache_mb=C
# which synergy-demo collects.
set -u
kind=${1:?usage: demo-job.sh c|py DATASET EPOCHS GPU_RATE}
data=${2:?missing DATASET}
epochs=${3:?missing EPOCHS}
rate=${4:?missing GPU_RATE}
# Slurm runs a copy of this script from its spool directory: the source
# and build trees come from the environment there.
here=$(cd "$(dirname "$0")" && pwd)
src=${DEMO_SRCDIR:-$here/..}
b=${DEMO_BUILDDIR:-$src/build}
proc_mb=${DEMO_PROCESS_MB:-96}
case "$kind" in c | py) ;; *) echo "demo-job: kind must be c or py, not '$kind'" >&2; exit 2 ;; esac
case "$epochs" in '' | *[!0-9]*) echo "demo-job: EPOCHS must be an integer, not '$epochs'" >&2; exit 2 ;; esac
case "$proc_mb" in '' | *[!0-9]*) echo "demo-job: DEMO_PROCESS_MB must be an integer, not '$proc_mb'" >&2; exit 2 ;; esac

# The memory limit of this job: the smallest limit on the way from its
# memory cgroup up to the root (Slurm limits the job and the step, not the
# task cgroup a process sits in). cgroup v1, else v2. Empty if none.
mem_limit() {
	local p f v l min=
	p=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
	if [ -n "$p" ]; then
		f=/sys/fs/cgroup/memory; v=memory.limit_in_bytes
	else
		p=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
		f=/sys/fs/cgroup; v=memory.max
	fi
	while [ -n "$p" ] && [ "$p" != / ]; do
		if [ -r "$f$p/$v" ]; then
			l=$(cat "$f$p/$v")
			case "$l" in '' | max | *[!0-9]*) ;; *)
				if [ "${#l}" -le 15 ] && { [ -z "$min" ] || [ "$l" -lt "$min" ]; }; then min=$l; fi ;;
			esac
		fi
		p=${p%/*}
	done
	echo "$min"
}

ncpus() { # CPUs in a list such as 0-3,6
	local n=0 r a z
	for r in ${1//,/ }; do
		a=${r%-*} z=${r#*-}
		n=$((n + z - a + 1))
	done
	echo "$n"
}

if [ -n "${SYNERGY_CACHE_BYTES:-}" ]; then
	cache_arg=
	cache_mb=$(numfmt --from=iec "${SYNERGY_CACHE_BYTES}" 2>/dev/null | awk '{ printf "%d", $1 / 1048576 }')
	how="Synergy grant"
else
	lim=$(mem_limit)
	total=$(awk '$1 == "MemTotal:" { printf "%.0f", $2 * 1024 }' /proc/meminfo)
	case "$lim" in
	'' | max | *[!0-9]*) cache_mb=0 ;; # no limit: no cache (nothing was granted)
	*) if [ "${#lim}" -gt 15 ] || [ "$lim" -ge "$total" ]; then cache_mb=0
	   else cache_mb=$((lim / 1048576 - proc_mb)); fi ;;
	esac
	[ "$cache_mb" -gt 0 ] || cache_mb=0
	cache_arg=${cache_mb}M
	how="memory limit - ${proc_mb} MB"
fi
cpus0=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "# job ${SLURM_JOB_ID:-(no slurm)} on ${SLURMD_NODENAME:-$(hostname)}: $kind loop, $data, $epochs epochs, EMULATED GPU at $rate samples/s"
echo "# cores $cpus0 ($(ncpus "$cpus0")), cache ${cache_mb} MB ($how), synergy=${SYNERGY_ACTIVE:-0}"

out=$(mktemp "${TMPDIR:-/tmp}/demo-job.XXXXXX") || exit 1
trap 'rm -f "$out" "$out.cpus"' EXIT
case "$kind" in
c)
	"$b/bench/coordl-bench" -e "$epochs" -g "$rate" ${cache_arg:+-c "$cache_arg"} "$data" >"$out" 2>&1 &
	;;
py)
	PYTHONPATH=$src/python COORDL_LIBRARY=$b/loader/.libs/libcoordl.so \
		/usr/bin/python3 "$src/examples/train_resnet_emulated.py" "$data" \
		--epochs "$epochs" --batch-size 32 --gpu-rate "$rate" --output numpy \
		${cache_arg:+--cache-bytes $((cache_mb * 1048576))} >"$out" 2>&1 &
	;;
esac
pid=$!
# Follow the job's CPU set while it runs: idle-core lending widens it.
max=$(ncpus "$cpus0")
while kill -0 "$pid" 2>/dev/null; do
	c=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)
	if [ -n "$c" ]; then
		n=$(ncpus "$c")
		[ "$n" -gt "$max" ] && max=$n && echo "# $(date +%T) cores now $c" >>"$out.cpus"
	fi
	sleep 0.25
done
wait "$pid"
rc=$?
cat "$out"
[ -f "$out.cpus" ] && cat "$out.cpus"
[ "$rc" = 0 ] || { echo "demo-job: training loop failed with status $rc" >&2; exit "$rc"; }
# Totals over all epochs, columns found by their header names.
awk -v c0="$(ncpus "$cpus0")" -v cm="$max" -v cache="$cache_mb" '
	$1 == "epoch" { for (i = 1; i <= NF; i++) col[$i] = i; next }
	/^ *[0-9]/ && ("wall_s" in col) {
		n += $col["images"]; w += $col["wall_s"]; s += $col["stall%"] * $col["wall_s"] / 100
	}
	END {
		if (w <= 0) { print "demo-job: no epoch rows in the output" > "/dev/stderr"; exit 1 }
		printf "RESULT images=%d wall=%.2f rate=%.1f stall=%.1f cores_start=%d cores_max=%d cache_mb=%d\n",
		       n, w, n / w, 100 * s / w, c0, cm, cache
	}' "$out"

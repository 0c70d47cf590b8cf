#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# coordprep.sh: k jobs on one node over one dataset, with and without
# coordinated prep (issue 15), interleaved.
#
# Usage: bench/coordprep.sh DATASET [REPS] [GPU_RATE] [KS...]
#   (default REPS 5, GPU_RATE 1000 images/s per job, KS "1 2 4")
#
# Each run starts k coordl-bench processes at once (the jobs of a search),
# each training 2 epochs over DATASET with an emulated GPU of GPU_RATE
# images/s, no cache (every epoch fetches and decodes every item), batch 16,
# seed 0, and 2/k worker threads each (at least 1: the node's 2 cores shared
# by the group). "indep": each job prepares its own batches, as without
# Synergy's groups; "coord": the jobs share SYNERGY_GROUP, so each batch is
# prepared once for all of them. Epoch 1 (after start-up) is measured:
# group cpu-s = the sum over the k processes of their CPU seconds in it,
# img/s = the mean over the k jobs of their images/s; min/median/max over
# REPS runs. Ratios compare medians with k=1 indep (one job given all the
# cores). passes = batches the group's workers prepared / batches each job
# consumed (k for indep by construction; 1 when every batch was prepared
# once). Configurations are interleaved within each repetition so that
# background load hits all of them alike. The group's staging segment is
# made in a fresh directory under GROUP_DIR_PARENT (default /dev/shm, a
# tmpfs, as Synergy's GroupDir); COORDL_BENCH names another coordl-bench.
set -eu
bd=${top_builddir:-$(dirname "$0")/..}
bench=${COORDL_BENCH:-$bd/bench/coordl-bench}
[ $# -ge 1 ] || { sed -n 3,24p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ds=$1; reps=${2:-5}; rate=${3:-1000}; shift; [ $# -ge 1 ] && shift; [ $# -ge 1 ] && shift
ks=${*:-1 2 4}
[ -x "$bench" ] || { echo "coordprep: $bench not built" >&2; exit 1; }
# The group's staging segment lives where Synergy puts it (GroupDir, by
# default under /dev/shm): a segment on a disk file system pays for
# page-cache writeback of every staged batch, which no job does.
gdir=${GROUP_DIR_PARENT:-/dev/shm}
tmp=$(mktemp -d); grp=$(mktemp -d -p "$gdir" coordprep.XXXXXX)
trap 'rm -rf "$tmp" "$grp"' EXIT; trap 'exit 130' INT TERM
chmod 0700 "$grp"
unset SYNERGY_THREADS SYNERGY_CACHE_BYTES SYNERGY_CACHE_NAME SYNERGY_CACHE_GRANT \
	SYNERGY_GROUP SYNERGY_GROUP_BYTES SYNERGY_GROUP_WINDOW 2>/dev/null || true
export SYNERGY_GROUP_DIR="$grp"
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# run K MODE REP: one run; appends "K MODE cpu img/s passes" to runs.
run() {
	k=$1 mode=$2 t=$((2 / $1)); [ "$t" -ge 1 ] || t=1
	rm -f "$tmp"/out.*
	i=0
	while [ "$i" -lt "$k" ]; do
		if [ "$mode" = coord ]; then
			SYNERGY_GROUP="bench-$3-$k" "$bench" -e 2 -t "$t" -b 16 -c 0 --seed 0 \
				-g "$rate" "$ds" >"$tmp/out.$i" 2>&1 &
		else
			"$bench" -e 2 -t "$t" -b 16 -c 0 --seed 0 -g "$rate" "$ds" \
				>"$tmp/out.$i" 2>&1 &
		fi
		i=$((i + 1))
	done
	wait
	i=0
	while [ "$i" -lt "$k" ]; do
		grep -q '^    1 ' "$tmp/out.$i" || { cat "$tmp/out.$i" >&2; exit 1; }
		i=$((i + 1))
	done
	# Epoch 1 rows: images, img/s, img/cpu-s; the group lines: prepared.
	cat "$tmp"/out.* | awk -v k="$k" -v mode="$mode" '
		$1 == "1" && NF >= 6 { n++; cpu += $2 / $6; ips += $4; imgs = $2 }
		/^# group: batches prepared/ { prep += $5 }
		/^# group: [^b]/ { note = 1 }
		END {
			per = 2 * imgs / 16
			passes = mode == "coord" ? sprintf("%.2f", prep / per) : k
			if (note) passes = "alone"
			printf "%d %s %.3f %.1f %s\n", k, mode, cpu, ips / n, passes
		}' >>"$tmp/runs"
	[ -z "$(ls -A "$grp")" ] || { echo "coordprep: left in the group dir:" \
		"$(ls "$grp")" >&2; exit 1; }
}

r=1
while [ "$r" -le "$reps" ]; do
	for k in $ks; do
		# Alternate which mode goes first.
		if [ $((r % 2)) -eq 1 ]; then run "$k" indep "$r"; run "$k" coord "$r"
		else run "$k" coord "$r"; run "$k" indep "$r"; fi
	done
	r=$((r + 1))
done

size=$(du -sb "$ds" | cut -f1)
items=$(find "$ds" -type f | wc -l)
echo "# $(uname -n), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# dataset $ds: $items items, $((size / 1000000)) MB; $reps runs per row; emulated GPU $rate img/s per job"
echo "# load average before: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%2s %6s %4s %22s %8s %22s %8s %7s\n' k mode thr "group cpu-s min/med/max" "x1job" \
	"img/s/job min/med/max" "x1job" passes
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%s %s %s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
set -- $(awk '$1 == 1 && $2 == "indep" { print $3 }' "$tmp/runs" | stats)
base_cpu=${2:-0}
set -- $(awk '$1 == 1 && $2 == "indep" { print $4 }' "$tmp/runs" | stats)
base_ips=${2:-0}
for k in $ks; do
	for mode in indep coord; do
		t=$((2 / k)); [ "$t" -ge 1 ] || t=1
		cpu=$(awk -v k="$k" -v m="$mode" '$1 == k && $2 == m { print $3 }' "$tmp/runs" | stats)
		ips=$(awk -v k="$k" -v m="$mode" '$1 == k && $2 == m { print $4 }' "$tmp/runs" | stats)
		# passes: the median over runs ("alone" if any run did not form a group).
		passes=$(awk -v k="$k" -v m="$mode" '$1 == k && $2 == m { print $5 }' "$tmp/runs" |
			sort -n | awk '/alone/ { a = 1 } { v[NR] = $1 }
				END { print a ? "alone" : v[int((NR + 1) / 2)] }')
		set -- $cpu $ips
		printf '%2s %6s %4s %22s %8s %22s %8s %7s\n' "$k" "$mode" "$t" "$1/$2/$3" \
			"$(awk -v a="$2" -v b="$base_cpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
			"$4/$5/$6" \
			"$(awk -v a="$5" -v b="$base_ips" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
			"$passes"
	done
done

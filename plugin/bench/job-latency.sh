#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# job-latency.sh: what the Synergy plugins add to a job's life on a real
# (throwaway) cluster. Submits N GPU-proportional and N Synergy-sized
# one-GPU jobs, interleaved so that machine noise hits both alike, and
# prints submit->COMPLETED wall time (polled every 50 ms) and the time from
# the job's start to its first command, which includes the SPANK plugin's
# cgroup and cache-directory work, as min/median/max.
#
# Usage (root, from a build dir): top_srcdir=.. top_builddir=. \
#   bash ../plugin/bench/job-latency.sh [N]
n=${1:-10}
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_start 1
cluster_put_profile lang flat

run() { # run KIND: print "submit_to_done_ms start_to_script_ms"
	local t0 id st t1 start script
	t0=$(date +%s%N)
	if [ "$1" = synergy ]; then
		id=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap 'date +%s%N')
	else
		id=$(cluster_sbatch --gres=gpu:1 --wrap 'date +%s%N')
	fi
	while :; do
		st=$(squeue -h -j "$id" -o %T 2>/dev/null)
		[ -z "$st" ] || [ "$st" = COMPLETED ] && break
		sleep 0.05
	done
	t1=$(date +%s%N)
	start=$(date -d "$(cluster_job_field "$id" StartTime)" +%s)
	script=$(head -n1 "$(cluster_out "$id")")
	echo "$(((t1 - t0) / 1000000)) $(((script / 1000000) - start * 1000))"
}

for i in $(seq 1 "$n"); do
	echo "plain $(run plain)"
	echo "synergy $(run synergy)"
done >"$C/samples"

stats() { # stats KIND COLUMN
	awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$C/samples" | sort -n |
		awk '{ v[NR] = $1 } END { printf "%8d %8d %8d", v[1], v[int((NR + 1) / 2)], v[NR] }'
}
printf '%-10s %-28s %8s %8s %8s\n' kind metric min median max
for k in plain synergy; do
	printf '%-10s %-28s %s\n' "$k" "submit->done (ms)" "$(stats "$k" 2)"
	printf '%-10s %-28s %s\n' "$k" "start->script (ms, 1s res.)" "$(stats "$k" 3)"
done
echo "# $n jobs of each kind, interleaved; $(nproc) cores; $(date -u +%FT%TZ)"

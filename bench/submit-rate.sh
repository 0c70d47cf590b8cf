#!/bin/bash
# submit-rate.sh: job submission throughput of slurmctld with and without
# the Synergy plugins (issue 26: since Slurm 23.02 slurmctld runs job_submit
# plugins concurrently, under a shared read lock). On one throwaway cluster
# per mode (tests/lib/cluster.sh, one node, one fake GPU), CLIENTS
# concurrent clients each submit JOBS held jobs (sbatch -H --gres=gpu:1
# --wrap true, one sbatch process per job), and the wall time from the
# first submission to the last answer gives jobs/s. Modes:
#   plain    Slurm alone (no plugstack, no job_submit plugin)
#   synergy  spank_synergy.so and job_submit_synergy.so of the build tree;
#            half of each client's jobs name a profiled key
#            (--synergy-profile=img, which the store holds), half a key
#            the store does not have (a new one per job: a profiling
#            request each)
# Each run's jobs are cancelled before the next. Prints, per mode, jobs/s
# min/median/max over RUNS, and the ratio of the medians; every job must
# be accepted (a refused or failed sbatch stops the script).
#
# Usage: bench/submit-rate.sh [-c CLIENTS] [-j JOBS] [-r RUNS] [-m MODES]
#   -c CLIENTS  concurrent clients (default 8)
#   -j JOBS     jobs per client per run (default 25)
#   -r RUNS     runs per mode (default 5)
#   -m MODES    "plain synergy" (default), or one of them
# Run as root from a build directory (top_srcdir, top_builddir default to
# the directory above this script and the current directory). Slurm is the
# one installed (Debian 12: 22.05); for 24.11 and 26.05 run it in the guest
# on their root file system, from the build tree made there, e.g.
#   cd build-slurm-26.05 && ../tests/vm/vm-run --root /var/cache/synergy/rootfs-sid \
#       -e CLUSTER_CGROUP=v2 -- bash ../bench/submit-rate.sh -c 4 -j 10 -r 3
set -u
clients=8 jobs=25 runs=5 modes="plain synergy"
while getopts c:j:r:m:h o; do
	case $o in
	c) clients=$OPTARG ;;
	j) jobs=$OPTARG ;;
	r) runs=$OPTARG ;;
	m) modes=$OPTARG ;;
	h) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
for v in "$clients" "$jobs" "$runs"; do
	[[ "$v" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "submit-rate: '$v': expected a count (1-9999)" >&2; exit 2; }
done
for m in $modes; do
	case "$m" in plain | synergy) ;; *) echo "submit-rate: mode '$m': expected plain or synergy" >&2; exit 2 ;; esac
done
export top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
export top_builddir=${top_builddir:-$PWD}
[ "$(id -u)" = 0 ] || { echo "submit-rate: must run as root (a throwaway cluster)" >&2; exit 1; }

# run_mode MODE: one cluster, RUNS runs; prints "MODE rate rate ..." on
# its last line. In a subshell: cluster.sh's traps tear the cluster down.
run_mode() (
	CLUSTER_GPUS=1
	CLUSTER_SYNERGY=0
	[ "$1" = synergy ] && CLUSTER_SYNERGY=1
	# shellcheck source=../tests/lib/cluster.sh
	. "$top_srcdir/tests/lib/cluster.sh"
	# A cluster that cannot start is an error here, not a skip.
	skip_all() { echo "submit-rate: cannot run: $*" >&2; exit 1; }
	cluster_start 1 >&2
	[ "$1" = synergy ] && cluster_put_profile img image
	echo "# $1: Slurm $CLUSTER_SLURM_VERSION, cgroup $CLUSTER_CGROUP, $clients clients x $jobs jobs" >&2
	rates=
	for r in $(seq 1 "$runs"); do
		rm -f "$C"/client.*
		t0=$(date +%s.%N)
		pids=
		for c in $(seq 1 "$clients"); do
			(
				cd "$C" || exit 1
				for j in $(seq 1 "$jobs"); do
					opt=()
					if [ "$1" = synergy ]; then
						if [ $((j % 2)) = 0 ]; then opt=(--synergy-profile=img)
						else opt=(--synergy-profile="unknown-$r-$c-$j"); fi
					fi
					sbatch -H --parsable --gres=gpu:1 "${opt[@]}" -o /dev/null \
						--wrap true >>"$C/client.$c" 2>&1 || echo "FAILED" >>"$C/client.$c"
				done
			) &
			pids="$pids $!"
		done
		# the clients only: the cluster's daemons are children too
		# shellcheck disable=SC2086
		wait $pids
		t1=$(date +%s.%N)
		bad=$(cat "$C"/client.* | grep -cv '^[0-9][0-9]*$')
		n=$(squeue -h -t PD | wc -l)
		if [ "$bad" != 0 ] || [ "$n" != $((clients * jobs)) ]; then
			echo "submit-rate: run $r of $1: $bad sbatch failures, $n of $((clients * jobs)) jobs pending:" >&2
			cat "$C"/client.* | grep -v '^[0-9][0-9]*$' | sort | uniq -c | head >&2
			exit 1
		fi
		rate=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
		echo "# $1 run $r: $n jobs in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s: $rate jobs/s" >&2
		rates="$rates $rate"
		scancel --quiet -u root
		cluster__wait 60 cluster__no_jobs_pending || { echo "submit-rate: jobs not cancelled" >&2; exit 1; }
	done
	echo "$1$rates"
)
cluster__no_jobs_pending() { [ -z "$(squeue -h -t PD -o %i 2>/dev/null)" ]; }

# stats RATE...: min median max
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.1f %.1f %.1f", v[1], m, v[NR] }'; }

declare -A med
printf '%-8s %8s %6s %5s %9s %9s %9s\n' mode clients jobs runs "min j/s" "median" "max"
for m in $modes; do
	line=$(run_mode "$m" | tail -n 1)
	case "$line" in "$m "*) ;; *) echo "submit-rate: mode $m failed" >&2; exit 1 ;; esac
	# shellcheck disable=SC2086 # the rates
	read -r lo mid hi <<<"$(stats ${line#"$m" })"
	med[$m]=$mid
	printf '%-8s %8s %6s %5s %9s %9s %9s\n' "$m" "$clients" "$((clients * jobs))" "$runs" "$lo" "$mid" "$hi"
done
if [ -n "${med[plain]:-}" ] && [ -n "${med[synergy]:-}" ]; then
	awk -v p="${med[plain]}" -v s="${med[synergy]}" \
		'BEGIN { printf "synergy/plain (medians): %.2f\n", s / p }'
fi

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# submit-rate.sh: job submission throughput of slurmctld with and without
# the Synergy plugins (issue 26: since Slurm 23.02 slurmctld runs job_submit
# plugins concurrently, under a shared read lock). One throwaway cluster per
# mode (tests/lib/cluster.sh, one node, one fake GPU), all up at once; the
# runs go round the modes in turn (the first mode of each round alternates),
# so that the load of a shared machine falls on every mode alike. In a run
# CLIENTS concurrent clients each submit JOBS held jobs (sbatch -H
# --gres=gpu:1 --wrap true, one sbatch process per job), and the wall time
# from the first submission to the last answer gives jobs/s. Modes:
#   plain    Slurm alone (no plugstack, no job_submit plugin)
#   synergy  spank_synergy.so and job_submit_synergy.so of the build tree;
#            half of each client's jobs name a profiled key
#            (--synergy-profile=img, which the store holds), half a key
#            the store does not have (a new one per job: the first ones
#            profile in place, the rest are refused by the cap)
#   before   as synergy, with the plugins of another build (-b DIR: its
#            plugin/.libs), to compare two versions in one invocation
# Each run's jobs are cancelled before the next. Prints, per mode, jobs/s
# min/median/max over RUNS, and each mode's median over plain's; every job
# must be accepted (a refused or failed sbatch stops the script). Then the
# CPU time each job costs, per mode (median over the runs): slurmctld's,
# munged's and the clients' (sbatch and its shell), which a loaded machine
# changes far less than the rates.
#
# Usage: bench/submit-rate.sh [-c CLIENTS] [-j JOBS] [-r RUNS] [-m MODES] [-b DIR]
#   -c CLIENTS  concurrent clients (default 8)
#   -j JOBS     jobs per client per run (default 25)
#   -r RUNS     runs per mode (default 5)
#   -m MODES    "plain synergy" (default), any of plain, synergy, before
#   -b DIR      the plugins of mode before (a build's plugin/.libs)
# Run as root from a build directory (top_srcdir, top_builddir default to
# the directory above this script and the current directory). Slurm is the
# one installed (Debian 12: 22.05); for 24.11 and 26.05 run it in the guest
# on their root file system, from the build tree made there, e.g.
#   cd build-slurm-26.05 && ../tests/vm/vm-run --root /var/cache/synergy/rootfs-sid \
#       -e CLUSTER_CGROUP=v2 -- bash ../bench/submit-rate.sh -c 4 -j 10 -r 3
set -u
clients=8 jobs=25 runs=5 modes="plain synergy" before=
while getopts c:j:r:m:b:h o; do
	case $o in
	c) clients=$OPTARG ;;
	j) jobs=$OPTARG ;;
	r) runs=$OPTARG ;;
	m) modes=$OPTARG ;;
	b) before=$OPTARG ;;
	h) sed -n '3,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
for v in "$clients" "$jobs" "$runs"; do
	[[ "$v" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "submit-rate: '$v': expected a count (1-9999)" >&2; exit 2; }
done
for m in $modes; do
	case "$m" in
	plain | synergy) ;;
	before)
		[ -f "$before/spank_synergy.so" ] && [ -f "$before/job_submit_synergy.so" ] || {
			echo "submit-rate: mode before: -b '$before' holds no spank_synergy.so and job_submit_synergy.so" >&2
			exit 2
		} ;;
	*) echo "submit-rate: mode '$m': expected plain, synergy or before" >&2; exit 2 ;;
	esac
done
export top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
export top_builddir=${top_builddir:-$PWD}
[ "$(id -u)" = 0 ] || { echo "submit-rate: must run as root (a throwaway cluster)" >&2; exit 1; }
T=$(mktemp -d /tmp/submit-rate.XXXXXX) || exit 1
# The pipes go however the script ends (the clusters' own traps tear them
# down in their subshells).
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# serve MODE: one cluster; then for each "run R" line on fd 4 one run,
# answering its rate (or "failed") on fd 3, until "quit" or EOF. In a
# subshell: cluster.sh's traps tear the cluster down.
serve() (
	mode=$1
	CLUSTER_GPUS=1
	CLUSTER_SYNERGY=0
	case $mode in
	synergy) CLUSTER_SYNERGY=1 ;;
	before) CLUSTER_SYNERGY=1 CLUSTER_PLUGIN_DIR=$before ;;
	esac
	# shellcheck source=../tests/lib/cluster.sh
	. "$top_srcdir/tests/lib/cluster.sh"
	tick=$(getconf CLK_TCK)
	# A cluster that cannot start is an error here, not a skip.
	skip_all() { echo "submit-rate: cannot run: $*" >&2; exit 1; }
	cluster_start 1 >&2
	[ "$mode" = plain ] || cluster_put_profile img image
	echo "# $mode: Slurm $CLUSTER_SLURM_VERSION, cgroup $CLUSTER_CGROUP, $clients clients x $jobs jobs" >&2
	echo ready >&3
	while read -r cmd r <&4 && [ "$cmd" = run ]; do
		rm -f "$C"/client.* "$C"/times.*
		ctld0=$(cluster_proc_ticks "$cluster_ctld_pid") munge0=$(cluster_proc_ticks "$(cat "$C/run/munged.pid")")
		t0=$(date +%s.%N)
		pids=
		for c in $(seq 1 "$clients"); do
			(
				cd "$C" || exit 1
				for j in $(seq 1 "$jobs"); do
					opt=()
					if [ "$mode" != plain ]; then
						if [ $((j % 2)) = 0 ]; then opt=(--synergy-profile=img)
						else opt=(--synergy-profile="unknown-$r-$c-$j"); fi
					fi
					sbatch -H --parsable --gres=gpu:1 "${opt[@]}" -o /dev/null \
						--wrap true >>"$C/client.$c" 2>&1 || echo "FAILED" >>"$C/client.$c"
				done
				# the children's user and system time (sbatch and seq)
				times >"$C/times.$c"
			) &
			pids="$pids $!"
		done
		# the clients only: the cluster's daemons are children too
		# shellcheck disable=SC2086
		wait $pids
		t1=$(date +%s.%N)
		ctld1=$(cluster_proc_ticks "$cluster_ctld_pid") munge1=$(cluster_proc_ticks "$(cat "$C/run/munged.pid")")
		bad=$(cat "$C"/client.* | grep -cv '^[0-9][0-9]*$')
		n=$(squeue -h -t PD | wc -l)
		if [ "$bad" != 0 ] || [ "$n" != $((clients * jobs)) ]; then
			echo "submit-rate: run $r of $mode: $bad sbatch failures, $n of $((clients * jobs)) jobs pending:" >&2
			cat "$C"/client.* | grep -v '^[0-9][0-9]*$' | sort | uniq -c | head >&2
			echo failed >&3
			exit 1
		fi
		rate=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
		echo "# $mode run $r: $n jobs in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s: $rate jobs/s" >&2
		# CPU ms per job: slurmctld, munged, the clients
		cpu=$(awk -v n="$n" -v t="$tick" -v c=$((${ctld1:-0} - ${ctld0:-0})) -v m=$((${munge1:-0} - ${munge0:-0})) '
			function s(x,  a) { a = x; sub(/s$/, "", a); split(a, p, "m"); return p[1] * 60 + p[2] }
			FNR == 2 { cl += s($1) + s($2) }
			END { printf "%.2f/%.2f/%.2f", 1000 * c / t / n, 1000 * m / t / n, 1000 * cl / n }' "$C"/times.*)
		scancel --quiet -u root
		cluster__wait 60 cluster__no_jobs_pending || { echo "submit-rate: jobs not cancelled" >&2; echo failed >&3; exit 1; }
		echo "$rate $cpu" >&3
	done
)
cluster__no_jobs_pending() { [ -z "$(squeue -h -t PD -o %i 2>/dev/null)" ]; }

# stats RATE...: min median max
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.1f %.1f %.1f", v[1], m, v[NR] }'; }

# Every mode's cluster up, each behind a pair of pipes.
declare -A to from rates cpus med spid
for m in $modes; do
	mkfifo "$T/$m.in" "$T/$m.out" || exit 1
	serve "$m" 4<"$T/$m.in" 3>"$T/$m.out" &
	spid[$m]=$!
	exec {fd}>"$T/$m.in"
	to[$m]=$fd
	exec {fd}<"$T/$m.out"
	from[$m]=$fd
done
fail() {
	echo "submit-rate: $*" >&2
	# A mode that failed has gone: writing to it is a SIGPIPE, in a subshell.
	for m in $modes; do (echo quit >&"${to[$m]}") 2>/dev/null; done
	wait
	rm -rf "$T"
	exit 1
}
for m in $modes; do
	read -r line <&"${from[$m]}" && [ "$line" = ready ] || fail "mode $m: the cluster did not start"
done
read -r -a order <<<"$modes"
for r in $(seq 1 "$runs"); do
	# Round r starts at mode (r-1) mod N, so each leads as often.
	n=${#order[@]}
	for k in $(seq 0 $((n - 1))); do
		m=${order[$(((r - 1 + k) % n))]}
		echo "run $r" >&"${to[$m]}"
		read -r line cpu <&"${from[$m]}" || line=failed
		[ "$line" != failed ] || fail "mode $m failed in run $r"
		rates[$m]="${rates[$m]:-} $line"
		cpus[$m]="${cpus[$m]:-} $cpu"
	done
done
for m in $modes; do
	echo quit >&"${to[$m]}"
	eval "exec ${to[$m]}>&-"
	wait "${spid[$m]}"
done
rm -rf "$T"

printf '%-8s %8s %6s %5s %9s %9s %9s\n' mode clients jobs runs "min j/s" "median" "max"
for m in $modes; do
	# shellcheck disable=SC2086 # the rates
	read -r lo mid hi <<<"$(stats ${rates[$m]})"
	med[$m]=$mid
	printf '%-8s %8s %6s %5s %9s %9s %9s\n' "$m" "$clients" "$((clients * jobs))" "$runs" "$lo" "$mid" "$hi"
done
if [ -n "${med[plain]:-}" ]; then
	for m in $modes; do
		[ "$m" = plain ] || awk -v p="${med[plain]}" -v s="${med[$m]}" -v m="$m" \
			'BEGIN { printf "%s/plain (medians): %.2f\n", m, s / p }'
	done
fi
printf '\nCPU time a job, ms (median over the runs)\n'
printf '%-8s %12s %12s %12s %12s\n' mode slurmctld munged clients total
for m in $modes; do
	# shellcheck disable=SC2086 # the runs' "ctld/munge/clients" words
	read -r a b c <<<"$(for x in ${cpus[$m]}; do echo "$x"; done | tr '/' ' ' | awk '
		{ a[NR] = $1; b[NR] = $2; c[NR] = $3 }
		function med(v, n,  i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
		END { printf "%.2f %.2f %.2f", med(a, NR), med(b, NR), med(c, NR) }')"
	printf '%-8s %12s %12s %12s %12s\n' "$m" "$a" "$b" "$c" "$(awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "%.2f", a + b + c }')"
done

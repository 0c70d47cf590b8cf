#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-lending.sh: idle-core lending (LendIdleCores=yes) on a real node.
# Job A (profile "image", 1 CPU allotted) starts alone and is lent the idle
# CPUs, and a job step it starts meanwhile runs; job B starts and, before its script runs, A gives back the CPU
# Slurm allotted to B (B checks that itself from inside); B ends and A is
# lent the CPU again; with lending turned off, A's next step still runs. A
# job run with --synergy=off never borrows. At the
# end no cgroup, cache file or lending record is left.
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ "$(nproc)" -ge 2 ] || skip_all "needs at least 2 CPUs to lend one"
cluster_start 1
# slurmstepd reads synergy.conf at every step, so this takes effect now.
cat >>"$C/etc/synergy.conf" <<EOF
LendIdleCores=yes
LendStateDir=$C/lend
EOF
cluster_put_profile img image
node=${CLUSTER_TAG}n1
cs=$(cluster_node_cgroup "$node")
log=$C/log/slurmd.$node.log
ncpu=$(nproc)

# cpus_of LIST: the CPUs of a cpuset list, one per line.
cpus_of() {
	local item
	for item in ${1//,/ }; do
		case "$item" in
		*-*) seq "${item%-*}" "${item#*-}" ;;
		*) echo "$item" ;;
		esac
	done
}
# disjoint LIST1 LIST2: no CPU in both.
disjoint() { [ -z "$(comm -12 <(cpus_of "$1" | sort) <(cpus_of "$2" | sort))" ]; }
# within LIST1 LIST2: every CPU of LIST1 is in LIST2.
within() { [ -z "$(comm -23 <(cpus_of "$1" | sort) <(cpus_of "$2" | sort))" ]; }
# cpus DIR: cgroup DIR's CPUs (v2: its effective ones when it sets none).
cpus() {
	local v
	v=$(cat "$1/cpuset.cpus" 2>/dev/null)
	[ -n "$v" ] || [ "$CLUSTER_CGROUP" != v2 ] || v=$(cat "$1/cpuset.cpus.effective" 2>/dev/null)
	echo "$v"
}
# cpus_eq DIR LIST: cgroup DIR holds exactly LIST (never true for an empty LIST).
cpus_eq() { [ -n "$2" ] && test "$(cpus "$1")" = "$2"; }
# The job script's own job cgroup, as the job itself finds it: on v2 the
# directory above its step's (job_<id>, or the SLUID on Slurm 26.05).
self_job='"$(if [ '"$CLUSTER_CGROUP"' = v2 ]; then echo /sys/fs/cgroup$(sed -n "s/^0::\(.*\)\/step_[^/]*\/.*/\1/p" /proc/self/cgroup); else echo /sys/fs/cgroup/cpuset$(sed -n "s/^[0-9]*:cpuset:\(.*\/job_[0-9]*\).*/\1/p" /proc/self/cgroup); fi)"'

logged() { grep -q -- "$1" "$log"; }
count_logged() { grep -c -- "$1" "$log"; }

# A runs a job step while it borrows (Slurm resets the job's cpuset for a
# new step, which must not fail), then prints its affinity every 0.2 s
# until told to stop.
idA=$(cluster_sbatch --gres=gpu:1 -c 1 --synergy-profile=img --wrap '
	srun -n1 true; echo "step-rc=$?"
	while [ ! -e "'"$C"'/stopA" ]; do
		if [ -e "'"$C"'/step2" ] && [ -z "$step2" ]; then
			srun -n1 true; echo "step2-rc=$?"; step2=1
		fi
		grep Cpus_allowed_list /proc/self/status; sleep 0.2
	done')
test_ok "job A submitted" test -n "$idA"
test_ok "job A runs" cluster_wait_state "$idA" RUNNING 20
test_ok "job A was allotted 1 CPU" test "$(cluster_job_field "$idA" NumCPUs)" = 1
jobA=$(cluster_job_cgroup "$idA")
limA=$(cluster_limit_cgroup "$idA")
cluster__wait 10 test -d "$limA"
# Slurm creates the node's cgroup with its first job: all its CPUs.
all=$(cpus "$cs")
# A's first step returns the lent CPUs while it starts and borrows them
# again: look once it is over.
cluster__wait 20 grep -q "^step-rc=" "$(cluster_out "$idA")"
cluster__wait 10 cpus_eq "$limA" "$all"
test_ok "A alone: its limit cgroup holds every CPU ($all)" cpus_eq "$limA" "$all"
test_ok "A alone: its job cgroup too" cpus_eq "$jobA" "$all"
test_ok "lending logged" logged "synergy: lend job=$idA borrows cpus="
cluster__wait 10 grep -q "Cpus_allowed_list:.$all\$" "$(cluster_out "$idA")"
test_ok "A's task runs on the lent CPUs (affinity $all)" \
	grep -q "Cpus_allowed_list:.$all\$" "$(cluster_out "$idA")"
test_ok "A's job step ran while A borrowed" grep -qx step-rc=0 "$(cluster_out "$idA")"
nrec=$(ls "$C/lend" | grep -c "^$node\.job_$idA\$")
test_ok "A has a root-only lending record" test "$nrec" = 1 -a "$(stat -c %a "$C/lend")" = 700
status=$("$top_builddir/plugin/synergy-lend" --status -c "$C/etc/synergy.conf" 2>&1 |
	sed -n "/^node $node:/,/^node /p")
test_ok "synergy-lend --status shows A holding every CPU, some lent" \
	grep -Eq "^ +$idA +[0-9,-]+ +$all +$all +[0-9,-]+ +[0-9]+M +[-0-9.]+ +- +img\$" <<<"$status"
diag "synergy-lend --status: $(tr '\n' '|' <<<"$status")"
diag "A's record: $(tr '\n' ' ' <"$C/lend/$node.job_$idA" 2>/dev/null)"

# B (no profile) records, from inside, its own CPUs and A's at its start.
idB=$(cluster_sbatch --gres=gpu:1 -c 1 --wrap '
	job='"$self_job"'
	echo "B=$(cat $job/cpuset.cpus)"
	echo "A=$(cat '"$limA"'/cpuset.cpus)"
	echo "AJOB=$(cat '"$jobA"'/cpuset.cpus)"
	echo started
	while [ ! -e "'"$C"'/stopB" ]; do sleep 0.1; done')
test_ok "job B runs beside A" cluster_wait_state "$idB" RUNNING 20
cluster__wait 10 grep -q started "$(cluster_out "$idB")"
outB=$(cat "$(cluster_out "$idB")" 2>/dev/null)
b=$(sed -n 's/^B=//p' <<<"$outB")
a=$(sed -n 's/^A=//p' <<<"$outB")
ajob=$(sed -n 's/^AJOB=//p' <<<"$outB")
diag "when B's script started: B holds '$b', A's synergy cgroup '$a', A's job cgroup '$ajob'"
test_ok "B's script saw its CPUs" test -n "$b"
test_ok "B's CPUs were not in A's limit cgroup when B's script started" \
	bash -c "[ -n '$a' ] && $(declare -f cpus_of disjoint); disjoint '$b' '$a'"
test_ok "nor in A's job cgroup" bash -c "[ -n '$ajob' ] && $(declare -f cpus_of disjoint); disjoint '$b' '$ajob'"
if [ "$ncpu" = 2 ]; then
	test_ok "A was back to its 1 CPU" test "$(cpus_of "$a" | wc -l)" = 1
else
	test_ok "A kept at least its own CPU" test "$(cpus_of "$a" | wc -l)" -ge 1
fi
test_ok "taking back logged" logged "synergy: lend job=$idA returns cpus=$b "
jobB=$(cluster_job_cgroup "$idB")
test_ok "B's cgroup is untouched (no synergy child, its own CPU)" \
	bash -c "[ -n '$b' ] && ! test -d $jobB/synergy && test \"\$(cat $jobB/cpuset.cpus)\" = '$b'"
cluster__wait 10 bash -c "tail -n 1 '$(cluster_out "$idA")' | grep -q 'Cpus_allowed_list:.$a\$'"
test_ok "A's task affinity followed its narrowed cpuset" \
	bash -c "tail -n 1 '$(cluster_out "$idA")' | grep -q 'Cpus_allowed_list:.$a\$'"

borrows=$(count_logged "synergy: lend job=$idA borrows")
touch "$C/stopB"
test_ok "job B completed" test "$(cluster_wait_job "$idB" 30)" = COMPLETED
cluster__wait 10 cpus_eq "$limA" "$all"
test_ok "B ended: A holds every CPU again" cpus_eq "$limA" "$all"
test_ok "lent again, logged" test "$(count_logged "synergy: lend job=$idA borrows")" -gt "$borrows"
cluster__wait 10 bash -c "tail -n 1 '$(cluster_out "$idA")' | grep -q 'Cpus_allowed_list:.$all\$'"
test_ok "A's task runs on every CPU again" \
	grep -q "Cpus_allowed_list:.$all\$" <(tail -n 1 "$(cluster_out "$idA")")

# Lending turned off while A borrows: A's next step must still run (its
# lent CPUs go back first), and its record goes at its end all the same.
allotA=$(sed -n 's/^allotted=//p' "$C/lend/$node.job_$idA")
sed -i 's/^LendIdleCores=yes$/LendIdleCores=no/' "$C/etc/synergy.conf"
touch "$C/step2"
cluster__wait 20 grep -q "^step2-rc=" "$(cluster_out "$idA")"
test_ok "lending off: A's next step still runs" grep -qx step2-rc=0 "$(cluster_out "$idA")"
test_ok "lending off: A is back to its allotment ($allotA)" cpus_eq "$jobA" "$allotA"
touch "$C/stopA"
test_ok "job A completed" test "$(cluster_wait_job "$idA" 30)" = COMPLETED

sed -i 's/^LendIdleCores=no$/LendIdleCores=yes/' "$C/etc/synergy.conf"

# --synergy=off: alone on the node, it still borrows nothing.
idC=$(cluster_sbatch --gres=gpu:1 -c 1 --synergy-profile=img --synergy=off --wrap '
	job='"$self_job"'
	echo "C=$(cat $job/cpuset.cpus)"')
test_ok "job C (--synergy=off) completed" test "$(cluster_wait_job "$idC" 30)" = COMPLETED
c=$(sed -n 's/^C=//p' "$(cluster_out "$idC")")
test_ok "C kept its 1 CPU (got '$c')" test -n "$c" -a "$(cpus_of "$c" | wc -l)" = 1
test_ok "C never borrowed" bash -c "! grep -q 'synergy: lend job=$idC borrows' '$log'"
cluster_lend_done "$log" "$C/lend"
done_testing

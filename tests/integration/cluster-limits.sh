#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster-limits.sh: a job's cgroup limits really apply, on whichever cgroup
# version the cluster runs (CLUSTER_CGROUP; cgroup-v2.sh runs this file in a
# cgroup v2 guest). Plain Slurm, one node with the real CPUs:
#  - a one-CPU job with --mem=200: its task is in the job's cgroup where
#    Slurm's layout puts it (cluster_job_cgroup), that cgroup's effective
#    cpuset is one CPU and is the task's affinity, the task cannot move
#    itself onto a CPU outside it, and the job's memory limit is 200 MiB;
#  - a job that touches more memory than its --mem is killed and Slurm
#    says OUT_OF_MEMORY.
# The job's cgroup subtree (cpuset.cpus, cpuset.cpus.effective, memory.max
# or their v1 names) and the task's /proc/PID/cgroup are printed as
# diagnostics. On v2 the job's directory is job_<id>, or its SLUID from
# Slurm 26.05 (cluster_job_dir).
CLUSTER_SYNERGY=${CLUSTER_SYNERGY:-0}
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs (a job must get fewer than all)"
cluster_start 1

if [ "$CLUSTER_CGROUP" = v2 ]; then
	f_cpus=cpuset.cpus f_eff=cpuset.cpus.effective f_mem=memory.max mem_ctl=
else
	f_cpus=cpuset.cpus f_eff=cpuset.effective_cpus f_mem=memory.limit_in_bytes mem_ctl=memory
fi

# The job reports its PID, affinity and cgroups, tries to leave its CPUs,
# then waits for $C/release so that we can look at it from outside.
script='echo "pid=$$"
echo "affinity=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"
sed "s/^/cgroup=/" /proc/self/cgroup
escaped=
for cpu in $(seq 0 $(($(getconf _NPROCESSORS_ONLN) - 1))); do
	taskset -c "$cpu" true 2>/dev/null && escaped="$escaped $cpu"
done
echo "ran-on=$escaped"
while [ ! -e '"$C/release"' ]; do sleep 0.1; done'
id=$(cluster_sbatch -n1 -c1 --mem=200 --wrap "$script")
test_ok "sbatch accepted the one-CPU job" test -n "$id"
# Beside it (the node has a CPU left), a job that touches every page of
# 256 MiB with a 64 MiB limit (no swap here).
oom=$(cluster_sbatch -n1 -c1 --mem=64 --wrap '/usr/bin/python3 -c "
b = bytearray(256 << 20)
b[::4096] = b\"x\" * (len(b) // 4096)
print(\"survived\")"')
cluster_wait_state "$id" RUNNING 60
out=$(cluster_out "$id")
cluster__wait 30 grep -q '^ran-on=' "$out"
pid=$(sed -n 's/^pid=//p' "$out")
test_ok "the job runs and reports its PID" test -n "$pid"

job=$(cluster_job_cgroup "$id")
jmem=$(cluster_job_cgroup "$id" memory)
task=$(cluster_cgroup_of "$pid")
diag "job $id: job cgroup $job; the task ($pid) is in $task"
diag "/proc/$pid/cgroup:"
sed 's/^/#   /' "/proc/$pid/cgroup"
diag "the job's cgroup subtree ($f_cpus, $f_eff, $f_mem):"
find "$job" ${mem_ctl:+"$jmem"} -type d 2>/dev/null | while read -r d; do
	v=
	for f in $f_cpus $f_eff $f_mem; do
		[ -f "$d/$f" ] && v="$v $f=$(cat "$d/$f")"
	done
	diag "  $d:$v"
done
test_ok "the job's cgroup is where Slurm's $CLUSTER_CGROUP layout puts it" test -d "$job"
test_ok "the task is inside it" test -n "$job" -a -n "$task" -a "${task#"$job"/}" != "$task"
if [ "$CLUSTER_CGROUP" = v2 ]; then
	test_ok "v2: the task's cgroup is ${job##*/}/step_batch/user/task_0" \
		test "$task" = "$job/step_batch/user/task_0"
	test_ok "v2: the step's slurmstepd is in ${job##*/}/step_batch/slurm" \
		grep -q . "$job/step_batch/slurm/cgroup.procs"
fi

eff=$(cat "$task/$f_eff" 2>/dev/null)
aff=$(sed -n 's/^affinity=//p' "$out")
test_ok "the task's effective cpuset is one CPU ($eff)" grep -qx '[0-9][0-9]*' <<<"$eff"
test_ok "the task's affinity is that CPU ($aff)" test -n "$aff" -a "$aff" = "$eff"
test_ok "the task could not move itself onto another CPU" \
	test "$(sed -n 's/^ran-on=//p' "$out" | tr -d ' ')" = "$eff"
lim=$(cat "$jmem/$f_mem" 2>/dev/null)
test_ok "the job's $f_mem is 200 MiB ($lim)" test "$lim" = $((200 << 20))
touch "$C/release"
st=$(cluster_wait_job "$id" 60)
test_ok "the job completes once released ($st)" test "$st" = COMPLETED

st=$(cluster_wait_job "$oom" 60)
test_ok "a job past its --mem=64 is killed" test "$st" != COMPLETED -a -n "$oom"
grep -q survived "$(cluster_out "$oom")" 2>/dev/null && diag "it survived: $(cat "$(cluster_out "$oom")")"
test_ok "and Slurm says OUT_OF_MEMORY ($st)" test "$st" = OUT_OF_MEMORY

cluster_stop
test_ok "no daemon or node cgroup left after stop" cluster_gone
done_testing

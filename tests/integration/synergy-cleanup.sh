#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-cleanup.sh: however a Synergy job ends (normally with an srun
# step inside, cancelled while running, crashed, killed for exceeding its
# memory grant, leaving a background process behind), no synergy cgroup, no
# job cgroup and no cache file is left afterwards. Also checks that steps
# inside the job join the job's synergy cgroup and that the memory limit
# is enforced.
# A small process reserve keeps the memory-limit case quick: a job that
# overruns a limit thrashes until the kernel kills it.
CLUSTER_PROCESS_MEM=128
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_start 1
cluster_put_profile img image
cluster_put_profile lang flat
node=${CLUSTER_TAG}n1

j_step=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap '
	echo data >"$SYNERGY_CACHE_DIR/f"
	srun -n1 bash -c "cat /proc/self/cgroup; echo step-active=\$SYNERGY_ACTIVE"')
j_cancel=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap '
	echo data >"$SYNERGY_CACHE_DIR/f"; sleep 300')
j_crash=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap '
	echo data >"$SYNERGY_CACHE_DIR/f"; kill -SEGV $$')
j_bg=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap '
	(sleep 300 &) ; echo started')

test_ok "job to cancel starts" cluster_wait_state "$j_cancel" RUNNING 30
cluster__wait 5 test -e "$C/cache/job_$j_cancel/f"
test_ok "its cache file exists while it runs" test -e "$C/cache/job_$j_cancel/f"
scancel "$j_cancel"
for id in $j_step $j_cancel $j_crash $j_bg; do
	cluster_wait_job "$id" 40 >/dev/null
done
test_ok "job with a step completed" test "$(cluster_job_state "$j_step")" = COMPLETED
# v1: the step's tasks join the job's synergy cgroup; v2: they stay in
# the step's task cgroup, below its limit cgroup step_0/user.
if [ "$CLUSTER_CGROUP" = v2 ]; then
	lim_step=$(cluster_job_cgroup "$j_step")/step_0/user
else
	lim_step=$(cluster_limit_cgroup "$j_step")
fi
test_ok "the step ran in the job's limit cgroup ($lim_step)" \
	cluster_task_in "$(cat "$(cluster_out "$j_step")")" "$lim_step"
test_ok "the step saw SYNERGY_ACTIVE=1" grep -qx step-active=1 "$(cluster_out "$j_step")"
test_ok "cancelled job is CANCELLED" test "$(cluster_job_state "$j_cancel")" = CANCELLED
test_ok "crashed job is FAILED" test "$(cluster_job_state "$j_crash")" = FAILED
test_ok "job leaving a background process completed" test "$(cluster_job_state "$j_bg")" = COMPLETED

# The flat profile grants 128 MiB (no cache): touching 512 MiB must hit the limit.
j_oom=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap '
	/usr/bin/python3 -c "b = b\"x\" * (512 << 20); print(\"survived\")"')
st=$(cluster_wait_job "$j_oom" 60)
test_ok "job over its memory grant is killed ($st)" \
	bash -c "[ '$st' = OUT_OF_MEMORY ] || [ '$st' = FAILED ]"
test_ok "it did not survive" bash -c "! grep -q survived '$(cluster_out "$j_oom")'"

cluster__wait 10 cluster_leftovers
test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
test_ok "no process of ours left in the nodes' cgroups" test -z "$(cluster__cgroup_pids)"
done_testing

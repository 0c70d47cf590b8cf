#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-checkfreq.sh: a training job that checkpoints with CheckFreq
# (python/test/ckptjob.py: a numpy model on a real coordl loader, through
# the Python binding and libcoordl's engine) is preempted by a job of a
# higher-priority partition (PreemptMode=REQUEUE) and later requeued with
# `scontrol requeue`; each time it resumes from its checkpoint directory,
# which the SPANK plugin made under CheckpointDir and kept across the
# requeues, and at the end it is bit-identical to the same job run without
# interruption, every iteration having seen the same batch.
# Checked on the way: SIGTERM gave it a last checkpoint (the job's log says
# so), the work lost per interruption is at most one interval plus the
# iteration in flight, the job's log says where it resumed, slurmd's log
# says what the job found in its directory, the directory is the user's
# (0700) and goes when the job ends COMPLETED, an array task gets its own
# directory (<array job id>_<task>), and the sweep removes a directory
# unused for CheckpointRetention.
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ -x /usr/bin/python3 ] || skip_all "needs /usr/bin/python3"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip_all "needs python3-numpy"
lib=$top_builddir/loader/.libs/libcoordl.so
gen=$top_builddir/tools/coordl-datagen
[ -f "$lib" ] && [ -x "$gen" ] || bail "build libcoordl and tools/coordl-datagen first"

CLUSTER_GPUS=2
CLUSTER_PARTITION_EXTRA="PriorityTier=1"
# The preemptor's partition; KillWait (2 s in cluster.sh) is the grace a
# preempted job has between SIGTERM and SIGKILL.
CLUSTER_SLURM_CONF_EXTRA="PreemptType=preempt/partition_prio
PreemptMode=REQUEUE"
cluster_start 1
ckroot=$C/ckpt
# The partition is added once the node exists (cluster.sh wrote slurm.conf).
echo "PartitionName=high Nodes=ALL PriorityTier=2 MaxTime=INFINITE State=UP DefCpuPerGPU=1 DefMemPerGPU=512" \
	>>"$C/etc/slurm.conf"
printf 'CheckpointDir=%s\nCheckpointRetention=60\n' "$ckroot" >>"$C/etc/synergy.conf"
scontrol reconfigure || bail "scontrol reconfigure failed"
cluster__wait 20 cluster__all_idle || bail "the node did not come back after reconfigure"

"$gen" --out "$C/data" --classes 3 --images 30 --seed 7 >/dev/null || bail "coordl-datagen failed"
job=$top_srcdir/python/test/ckptjob.py
iters=240
env_py="export PYTHONPATH=$top_srcdir/python COORDL_LIBRARY=$lib OPENBLAS_NUM_THREADS=1"

# The reference: the same job straight through, outside Slurm.
(eval "$env_py" && cd "$C" && /usr/bin/python3 "$job" --data "$C/data" --ckpt "$C/ref-ck" \
	--iters $iters --hidden 256 --log "$C/ref.log" --out "$C/ref.out" --bound 0.035) ||
	bail "the reference run failed"

id=$(cluster_sbatch --gres=gpu:1 --requeue --open-mode=append --wrap "
$env_py
echo ckpt_dir=\$SYNERGY_CKPT_DIR restarts=\${SLURM_RESTART_COUNT:-0}
exec /usr/bin/python3 $job --data $C/data --iters $iters --hidden 256 --log $C/job.log \
	--out $C/job.out --bound 0.035 --sleep 0.05 --starts $C/starts --verbose")
test_ok "the training job is submitted (--requeue)" test -n "$id"
out=$(cluster_out "$id")
# A requeued job is held back for a while (its BeginTime); start it now.
requeued_now() {
	cluster__wait 30 cluster__in_state "$id" PENDING
	# Not before its last run's end is cleaned up on the node.
	cluster__wait 30 cluster__all_idle
	# Nor in the second slurmd revoked the killed run's credentials in
	# (before the node went idle): a launch whose credential is of that
	# same second is refused ("Job N already killed, do not launch batch
	# job") and the job ends FAILED. Slurm's own requeue delay (BeginTime)
	# avoids that; starting it now must wait for the next second (seen in
	# CI under load).
	local s
	s=$(date +%s)
	while [ "$(date +%s)" -le "$s" ]; do sleep 0.1; done
	diag "requeued: $(scontrol -o show job "$id" | tr ' ' '\n' |
		grep -E '^(JobState|Reason|Restarts|EligibleTime|StartTime)=' | tr '\n' ' ')"
	scontrol update JobId="$id" StartTime=now 2>&1 | sed 's/^/# /'
}
# logged N: the job has logged iteration N.
logged() { [ "$(tail -n 1 "$C/job.log" 2>/dev/null | cut -d' ' -f1)" -ge "$1" ] 2>/dev/null; }
last_logged() { tail -n 1 "$C/job.log" | cut -d' ' -f1; }
cluster__wait 60 logged 70 || diag "the job did not reach iteration 70: $(tail -n 3 "$out")"
dir=$(sed -n 's/^ckpt_dir=\([^ ]*\) .*/\1/p' "$out" | head -n 1)
test_ok "the job got its checkpoint directory CheckpointDir/<uid>/<job id> ($dir)" \
	test "$dir" = "$ckroot/$(id -u)/$id"
test_ok "it is the user's, mode 0700" \
	test "$(stat -c '%u %a' "$dir" 2>/dev/null)" = "$(id -u) 700"

# 1. Preemption: a job of the high partition needs both GPUs.
hi=$(cluster_sbatch -p high --gres=gpu:2 --wrap "sleep 3")
cluster__wait 30 cluster__in_state "$hi" RUNNING
l1=$(last_logged)
test_ok "a higher-priority job preempts it (the preemptor runs)" \
	test "$(cluster_job_state "$hi")" = RUNNING
test_ok "the preempted job is requeued, not ended" \
	bash -c "st=\$(scontrol -o show job $id | tr ' ' '\n' | sed -n 's/^JobState=//p'); \
		[ \"\$st\" = PENDING ] || [ \"\$st\" = REQUEUED ] || [ \"\$st\" = RUNNING ]"
cluster_wait_job "$hi" 60 >/dev/null
cluster__wait 30 cluster__in_state "$id" PENDING
requeued_now
cluster__wait 120 bash -c "[ \"\$(grep -c '^ckpt_dir=' '$out')\" -ge 2 ]" ||
	diag "not restarted: $(scontrol -o show job "$id")"
cluster__wait 60 logged $((l1 + 40)) || diag "the job did not go on after the preemption"

# 2. scontrol requeue while it runs.
l2=$(last_logged)
scontrol requeue "$id" || diag "scontrol requeue $id failed"
cluster__wait 30 cluster__in_state "$id" PENDING
requeued_now
cluster__wait 120 bash -c "[ \"\$(grep -c '^ckpt_dir=' '$out')\" -ge 3 ]" ||
	diag "not restarted after scontrol requeue: $(scontrol -o show job "$id")"
st=$(cluster_wait_job "$id" 240)
sed 's/^/#   /' "$out"
[ "$st" = COMPLETED ] || grep -iE "error|fail" "$C/log/slurmd."*.log "$C/log/slurmctld.log" |
	tail -n 30 | sed 's/^/# log: /'
test_ok "the job ends COMPLETED after two interruptions" test "$st" = COMPLETED
test_ok "Slurm counted two restarts" test "$(cluster_job_field "$id" Restarts)" = 2
test_ok "SIGTERM gave it a last checkpoint each time (its log says so)" \
	test "$(grep -c 'checkfreq: SIGTERM: checkpoint of iteration [0-9]* written' "$out")" = 2
test_ok "it resumed twice from a checkpoint (its log says where)" \
	test "$(grep -c 'checkfreq: resumed from iteration [0-9]* (' "$out")" = 2
k=$(sed -n 's/^checkfreq: interval \([0-9]*\) iterations.*/\1/p' "$out" | tail -n 1)
diag "interval chosen: ${k:-none}; interrupted after iterations $l1 and $l2 (about)"
# lost: per start, the last iteration logged before it less the one it
# resumed from (ckptjob.py --starts).
sed 's/^/# start: resumed, last logged: /' "$C/starts"
lost=$(awk 'NR > 1 { printf "%d ", $2 - $1 }' "$C/starts")
test_ok "two resumes, losing $lost iterations: at most one interval (${k:-?}) plus the iteration in flight" \
	bash -c "[ -n '$k' ] && [ \$(echo $lost | wc -w) = 2 ] && for l in $lost; do [ \$l -ge 0 ] && [ \$l -le \$(($k + 1)) ] || exit 1; done"
test_ok "the final state is bit-identical to the uninterrupted run" cmp -s "$C/ref.out" "$C/job.out"
test_ok "every iteration ran and saw the same batch as in the uninterrupted run" \
	/usr/bin/python3 -c "
import sys
ref = {int(l.split()[0]): l for l in open('$C/ref.log')}
seen = {}
for l in open('$C/job.log'):
    seen.setdefault(int(l.split()[0]), set()).add(l)
sys.exit(0 if sorted(seen) == sorted(ref) and all(seen[i] == {ref[i]} for i in ref) else 1)"
slog=$C/log/slurmd.${CLUSTER_NODES%% *}.log
grep "job $id: checkpoint directory" "$slog" | sed 's/^/# slurmd: /'
test_ok "slurmd's log says what the requeued job found in its directory" \
	grep -q "job $id: checkpoint directory $dir, restart [12]: [1-9][0-9]* checkpoint file" "$slog"
test_ok "the directory went when the job completed" test ! -e "$dir"
test_ok "slurmd's log says so" grep -q "removed its checkpoint directory $dir" "$slog"

# An array's tasks get one directory each; a task that fails keeps it.
aid=$(cluster_sbatch --gres=gpu:1 --array=0-1 --wrap 'echo dir=$SYNERGY_CKPT_DIR; exit 3')
for t in 0 1; do cluster_wait_job "${aid}_$t" 60 >/dev/null; done
test_ok "array tasks: <array job id>_<task> each, kept after a failure" \
	test -d "$ckroot/$(id -u)/${aid}_0" -a -d "$ckroot/$(id -u)/${aid}_1"

# The sweep (CheckpointRetention=60): an old directory goes at a job's end.
mkdir -p "$ckroot/$(id -u)/4242"
touch -d '-1 hour' "$ckroot/$(id -u)/4242"
rm -f "$ckroot/.synergy-sweep"
sid=$(cluster_sbatch --gres=gpu:1 --wrap true)
cluster_wait_job "$sid" 60 >/dev/null
cluster__wait 20 test ! -e "$ckroot/$(id -u)/4242"
test_ok "a directory unused for longer than CheckpointRetention is swept" \
	test ! -e "$ckroot/$(id -u)/4242"
test_ok "fresh ones stay" test -d "$ckroot/$(id -u)/${aid}_0"

cluster__wait 20 cluster_leftovers >/dev/null
test_ok "no synergy or job cgroup, no cache file left" cluster_leftovers
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cluster-basic.sh: the throwaway-cluster harness itself. Brings up two
# nodes, runs `srun hostname` and a batch job asking for one fake GPU,
# checks that the job saw CUDA_VISIBLE_DEVICES, and that after the cluster
# is stopped no daemon and no cgroup of its nodes is left.
CLUSTER_SYNERGY=${CLUSTER_SYNERGY:-0}
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_start 2

test_ok "two nodes idle" cluster__all_idle
out=$(srun -N1 -n1 hostname 2>&1)
test_ok "srun hostname runs on this host" test "$out" = "$(hostname)"
[ "$out" = "$(hostname)" ] || diag "srun said: $out"

id=$(cluster_sbatch --gres=gpu:1 --wrap 'echo "CVD=$CUDA_VISIBLE_DEVICES"; echo "GPUS=$SLURM_JOB_GPUS"')
test_ok "sbatch accepted the job" test -n "$id"
st=$(cluster_wait_job "$id" 30)
test_ok "batch job completed" test "$st" = COMPLETED
test_ok "job saw one GPU in CUDA_VISIBLE_DEVICES" grep -qx 'CVD=[0-9]' "$(cluster_out "$id")"
grep -q CVD "$(cluster_out "$id")" 2>/dev/null || diag "job output: $(cat "$(cluster_out "$id")" 2>/dev/null)"

cluster_stop
test_ok "no daemon or node cgroup left after stop" cluster_gone
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-shapes.sh: a cluster with two node shapes, each in its own
# partition (issue 11): synergyd exports the shapes from slurmctld, and
# job_submit sizes each job for its own partition; a job that may run in
# both is sized for what fits both; without a fresh table (synergyd not
# running) jobs stay GPU-proportional and AdminComment says why.
# Scheduling only (the big node's CPUs are faked), so the jobs are held.
CLUSTER_NODE_SHAPES="2:2:4096 4:16:65536"
. "${top_srcdir:?}/tests/lib/cluster.sh"
synergyd=$top_builddir/plugin/synergyd
[ -x "$synergyd" ] || bail "plugin/synergyd not built"
cluster_start 2
cluster_put_profile img image

comment() { scontrol show job "$1" | sed -n 's/.*AdminComment=//p'; }
cpus() { cluster_job_field "$1" NumCPUs; }
held() { cluster_sbatch --hold "$@" --synergy-profile=img --wrap true; }

id0=$(held -p shape1 --gres=gpu:1)
test_ok "without the table: GPU-proportional" \
	grep -q 'node shape unknown: GPU-proportional' <<<"$(comment "$id0")"
test_ok "AdminComment names the missing table" grep -q "node_shapes" <<<"$(comment "$id0")"

"$synergyd" --once --conf="$C/etc/synergy.conf" 2>"$C/log/tuner.log"
test_ok "synergyd exported the shapes" \
	grep -q '^partition=shape2 default=0 gpus=4 cpus=16 mem_mb=65536 nodes=1$' "$C/node_shapes"
test_ok "both partitions and the default one (two shapes)" \
	test "$(grep -c '^partition=' "$C/node_shapes")" = 4
id1=$(held -p shape1 --gres=gpu:1)
id2=$(held -p shape2 --gres=gpu:1)
id3=$(held -p shape1,shape2 --gres=gpu:1)
diag "shape1: $(comment "$id1")"
diag "shape2: $(comment "$id2")"
diag "both:   $(comment "$id3")"
test_ok "shape1 job sized for shape1 (1 core per GPU there)" \
	bash -c "[ '$(cpus "$id1")' = 1 ] && grep -q 'partition shape1' <<<'$(comment "$id1")'"
test_ok "shape2 job sized for shape2 (its best case, 2 cores)" \
	bash -c "[ '$(cpus "$id2")' = 2 ] && grep -q 'partition shape2' <<<'$(comment "$id2")'"
test_ok "a job for both is sized for what fits both" \
	bash -c "[ '$(cpus "$id3")' = 1 ] && grep -q '2 shapes in shape1,shape2: smallest share' <<<'$(comment "$id3")'"
id4=$(held -p shape2 --gres=gpu:3)
test_ok "3 GPUs on shape2's 4-GPU node: sized" grep -q "partition shape2" <<<"$(comment "$id4")"

# A table that is no longer refreshed is not trusted.
sed -i "s/^written=.*/written=$(($(date +%s) - 3600))/" "$C/node_shapes"
id5=$(held -p shape2 --gres=gpu:1)
test_ok "stale table: GPU-proportional" grep -q "s old" <<<"$(comment "$id5")"
scancel $id0 $id1 $id2 $id3 $id4 $id5 2>/dev/null
done_testing

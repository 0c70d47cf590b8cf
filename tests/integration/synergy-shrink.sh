#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-shrink.sh: lent cache memory comes back from a job that ignores
# its grant (issue 24, finding 4). A Synergy job alone on the node is lent
# cache memory above its share; instead of a loader that follows the
# grant, it fills its cache directory (tmpfs) with a file of its own up to
# its raised limit and never lets go. A GPU-proportional job arrives: before
# its task runs, the node has punched holes into the first job's cache file
# and lowered its memory limit to its allotment, so the memory Slurm
# counts as free for the newcomer is free. The first job is not killed.
#
# Node: 2 CPUs, 2 GPUs, 1024 MB, ProcessMemMB 448: a GPU's share is 1 core
# and 512 MB, 64 MB of it cache; the profile lets the node lend up to 128 MB.
CLUSTER_GPUS=2
CLUSTER_MEM=1024
CLUSTER_PROCESS_MEM=448
CLUSTER_DEF_MEM_PER_GPU=512
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
tag=$(printf '%04x' $((RANDOM % 65536)))
CLUSTER_CACHE_DIR=/dev/shm/synergy-shrink-$tag
CLUSTER_EXIT_HOOK='rm -rf "$CLUSTER_CACHE_DIR"'
cluster_start 1
echo "LendIdleCores=yes" >>"$C/etc/synergy.conf"
node=${CLUSTER_TAG}n1
log=$C/log/slurmd.$node.log
cluster_put_profile big smallcache

# A: waits for its grant to grow to 128 MB, then writes as much as its raised
# limit (576 MB) leaves into its cache directory, and holds it.
idA=$(cluster_sbatch --gres=gpu:1 --synergy-profile=big --wrap "
	while [ \"\$(cat \$SYNERGY_CACHE_GRANT 2>/dev/null)\" != $((128 << 20)) ]; do sleep 0.1; done
	dd if=/dev/zero of=\$SYNERGY_CACHE_DIR/hog bs=1M count=540 status=none && echo wrote
	while [ ! -e $C/stopA ]; do sleep 0.2; done
	echo alive")
outA=$(cluster_out "$idA")
test_ok "A runs" cluster_wait_state "$idA" RUNNING 30
mem=$(cluster_job_cgroup "$idA" memory)
mfile=memory.limit_in_bytes
[ "$CLUSTER_CGROUP" = v1 ] || mfile=memory.max
limit_mb() { echo $(($(cat "$mem/$mfile" 2>/dev/null || echo 0) >> 20)); }
hog=$CLUSTER_CACHE_DIR/job_$idA/hog
cluster__wait 30 grep -q "lend job=$idA borrows cache=64MB now=128MB" "$log"
test_ok "alone, A is lent 64 MB of cache above its share" \
	grep -q "lend job=$idA borrows cache=64MB now=128MB" "$log"
test_ok "its memory limit covers the grant (576 MB)" test "$(limit_mb)" = 576
cluster__wait 30 grep -q '^wrote' "$outA"
test_ok "A filled its cache directory to 540 MB (tmpfs, charged to A)" \
	bash -c "[ \$(du -sm '$hog' | cut -f1) -ge 540 ]"

# B: GPU-proportional; first thing, it records what A holds.
probe='echo "A_limit=$(( $(cat '"$mem/$mfile"') >> 20 ))"
	echo "A_hog=$(du -sm '"$hog"' | cut -f1)"'
idB=$(cluster_sbatch --gres=gpu:1 --synergy=off --wrap "$probe; sleep 2")
test_ok "B starts" cluster_wait_state "$idB" RUNNING 30
cluster__wait 15 grep -q '^A_hog=' "$(cluster_out "$idB")"
outB=$(cat "$(cluster_out "$idB")")
diag "when B's task started: $(tr '\n' ' ' <<<"$outB")"
test_ok "before B's task ran, A's memory limit was back to its allotment (512 MB)" \
	test "$(sed -n 's/^A_limit=//p' <<<"$outB")" = 512
test_ok "and what A holds in its cache directory fits it" \
	bash -c "[ '$(sed -n 's/^A_hog=//p' <<<"$outB")' -lt 512 ]"
test_ok "the node said it punched A's cache files" \
	grep -q "lend job=$idA: holds .* MB that reclaim cannot free .* punched [1-9][0-9]* MB of its cache files" "$log"
test_ok "and that A returned its lent cache" grep -q "lend job=$idA returns cache=64MB now=64MB" "$log"
test_ok "no failed limit lowering" bash -c "! grep -q 'lend job=$idA: cannot lower its memory limit' '$log'"
test_ok "B completed" test "$(cluster_wait_job "$idB" 40)" = COMPLETED
touch "$C/stopA"
test_ok "A was not killed: it completed" test "$(cluster_wait_job "$idA" 40)" = COMPLETED
test_ok "and ran to its end" grep -q '^alive' "$outA"
cluster_stop
test_ok "A's cache directory is gone" test ! -e "$CLUSTER_CACHE_DIR/job_$idA"
done_testing

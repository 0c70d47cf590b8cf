#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-live.sh: Synergy's guarantee on live Slurm (issue 13). A Synergy
# job is sized within its GPU share; alone on the node, the node agent
# grants it an idle core and cache memory above the share, and its loader
# (the real coordl, over a dataset larger than the share's cache) follows
# the grant. A GPU-proportional job arrives: it starts at once with its
# full share, and before its first task runs the first job's grant has
# shrunk (memory limit and cache files within its allotment, its lent CPU
# returned). When it ends, the first job grows again; then a second
# Synergy job arrives and the same holds. The first job's loader never
# fails, never reads a torn item, and its cache and hit rate follow the
# grant. At the end nothing is left.
#
# Node: 2 CPUs, 2 GPUs, 1024 MB, ProcessMemMB 448: a GPU's share is 1 core
# and 512 MB, 64 MB of it cache. The profile "big" gains from a second core
# and up to 128 MB of cache per GPU; the dataset holds about 100 MB.
CLUSTER_GPUS=2
CLUSTER_MEM=1024
CLUSTER_PROCESS_MEM=448
CLUSTER_DEF_MEM_PER_GPU=512
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 CPUs"
[ -x /usr/bin/python3 ] || skip_all "needs /usr/bin/python3"
lib=$top_builddir/loader/.libs/libcoordl.so
gen=$top_builddir/tools/coordl-datagen
[ -f "$lib" ] && [ -x "$gen" ] || bail "build libcoordl and tools/coordl-datagen first"
tag=$(printf '%04x' $((RANDOM % 65536)))
CLUSTER_CACHE_DIR=/dev/shm/synergy-live-$tag
CLUSTER_EXIT_HOOK='rm -rf "$CLUSTER_CACHE_DIR"'
cluster_start 1
echo "LendIdleCores=yes" >>"$C/etc/synergy.conf"
node=${CLUSTER_TAG}n1
log=$C/log/slurmd.$node.log
cluster_put_profile big smallcache
"$gen" --out "$C/data" --classes 4 --images 1100 --seed 11 --width-range 400-520 -j 2 \
	>/dev/null || bail "coordl-datagen failed"
dsmb=$(du -sm "$C/data" | cut -f1)
diag "dataset: $dsmb MB"

# A: the coordl loader, one row per epoch, until told to stop.
cat >"$C/loop.py" <<'EOF'
import os, sys, time
import coordl
stop = sys.argv[2]
ld = coordl.Loader(sys.argv[1], batch_size=16, out_size=64, seed=1, output="numpy")
print("note", ld.cache_note() or "-", flush=True)
epoch = 0
while not os.path.exists(stop) and epoch < 400:
    ld.set_epoch(epoch)
    for images, labels in ld:
        time.sleep(images.shape[0] / 4000.0)
    st = ld.stats()
    print("epoch", epoch, "hits", st["cache_hits"], "misses", st["cache_misses"],
          "used", st["cache_bytes_used"], "limit", st["cache_bytes_limit"],
          "corrupt", st["corrupt"], "threads", st["threads"], "t", "%.2f" % time.time(),
          flush=True)
    epoch += 1
ld.close()
print("done", epoch, flush=True)
EOF
idA=$(cluster_sbatch --gres=gpu:1 --synergy-profile=big --wrap "
	export PYTHONPATH=$top_srcdir/python COORDL_LIBRARY=$lib
	echo grant=\$SYNERGY_CACHE_GRANT bytes=\$SYNERGY_CACHE_BYTES
	exec /usr/bin/python3 $C/loop.py $C/data $C/stopA")
outA=$(cluster_out "$idA")
test_ok "A runs" cluster_wait_state "$idA" RUNNING 30
test_ok "A was sized within its share: 1 core, 512 MB" \
	bash -c "scontrol -o show job $idA | grep -q 'TRES=cpu=1,mem=512M,'"
diag "A: $(scontrol show job "$idA" | sed -n 's/.*AdminComment=//p')"
cs=$(cluster_job_cgroup "$idA")
mem=$(cluster_job_cgroup "$idA" memory)
mfile=memory.limit_in_bytes
[ "$CLUSTER_CGROUP" = v1 ] || mfile=memory.max
grant=$CLUSTER_CACHE_DIR/job_$idA.grant
limit_mb() { echo $(($(cat "$mem/$mfile" 2>/dev/null || echo 0) >> 20)); }
cache_mb() { du -sm --apparent-size=no "$CLUSTER_CACHE_DIR/job_$idA" 2>/dev/null | cut -f1; }
grows() { grep -c "lend job=$idA borrows cache" "$log"; }
cluster__wait 30 grep -q "lend job=$idA borrows cache=64MB now=128MB" "$log"
test_ok "alone, A is granted 64 MB of cache above its share (128 MB)" \
	grep -q "lend job=$idA borrows cache=64MB now=128MB" "$log"
test_ok "and the idle core" grep -q "lend job=$idA borrows cpus=" "$log"
test_ok "its memory limit covers the grant (576 MB)" test "$(limit_mb)" = 576
test_ok "its grant file says 128 MB" test "$(cat "$grant" 2>/dev/null)" = $((128 << 20))
cluster__wait 60 bash -c "[ \$(grep -c '^epoch' '$outA') -ge 3 ]"
before=$(grep '^epoch' "$outA" | tail -1)
diag "A before: $before"
test_ok "A's cache filled beyond its share's 64 MB" \
	bash -c "[ $(awk '{print $8}' <<<"$before") -gt $((64 << 20)) ]"

# B: GPU-proportional; it records, first thing, what A holds.
probe='echo "A_limit=$(( $(cat '"$mem/$mfile"') >> 20 ))"
	echo "A_cpus=$(cat '"$cs"'/cpuset.cpus)"
	echo "A_cache=$(du -sm '"$CLUSTER_CACHE_DIR"'/job_'"$idA"' | cut -f1)"
	echo "mine=$(grep -E "^[0-9]+:cpuset:" /proc/self/cgroup)"'
# B runs until A's loader has ended an epoch under the shrunk grant (at
# least 4 s): an epoch is long under qemu's TCG, and a grant that moved
# back within one would never show in A's epoch rows.
idB=$(cluster_sbatch --gres=gpu:1 --synergy=off --wrap "$probe; sleep 4
	while [ ! -e $C/releaseB ]; do sleep 0.2; done")
test_ok "B starts at once" cluster_wait_state "$idB" RUNNING 20
test_ok "B has its full share (1 core, 512 MB)" \
	bash -c "scontrol -o show job $idB | grep -q 'TRES=cpu=1,mem=512M,'"
cluster__wait 10 grep -q '^A_cache=' "$(cluster_out "$idB")"
outB=$(cat "$(cluster_out "$idB")")
diag "when B's task started: $(tr '\n' ' ' <<<"$outB")"
test_ok "before B's task ran, A's memory limit was back to its allotment" \
	test "$(sed -n 's/^A_limit=//p' <<<"$outB")" = 512
test_ok "and A's cache within 64 MB" \
	bash -c "[ '$(sed -n 's/^A_cache=//p' <<<"$outB")' -le 65 ]"
test_ok "and A's lent core returned (one CPU)" \
	bash -c "[ \$(sed -n 's/^A_cpus=//p' <<<'$outB' | tr ',' '\n' | grep -c .) = 1 ] &&
		! grep -q - <<<'$(sed -n 's/^A_cpus=//p' <<<"$outB")'"
test_ok "the shrink was logged before B ran" grep -q "lend job=$idA returns cache=64MB now=64MB" "$log"
g0=$(grows)
shrunk_epoch() { awk '$1 == "epoch" && $10 <= 64 * 1048576' "$outA" | grep -q .; }
cluster__wait 300 shrunk_epoch
touch "$C/releaseB"
test_ok "B completed" test "$(cluster_wait_job "$idB" 40)" = COMPLETED
cluster__wait 20 bash -c "[ \$(grep -c 'lend job=$idA borrows cache' '$log') -gt $g0 ]"
test_ok "B ended: A is granted its cache again" test "$(grows)" -gt "$g0"
test_ok "and its memory limit raised again" test "$(limit_mb)" = 576

# C: a second Synergy job of the same profile.
idC=$(cluster_sbatch --gres=gpu:1 --synergy-profile=big --wrap "$probe; sleep 3")
test_ok "C starts at once" cluster_wait_state "$idC" RUNNING 20
test_ok "C has its share" bash -c "scontrol -o show job $idC | grep -q 'TRES=cpu=1,mem=512M,'"
cluster__wait 10 grep -q '^A_cache=' "$(cluster_out "$idC")"
outC=$(cat "$(cluster_out "$idC")")
test_ok "before C's task ran, A was back to its allotment" \
	bash -c "[ '$(sed -n 's/^A_limit=//p' <<<"$outC")' = 512 ] && [ '$(sed -n 's/^A_cache=//p' <<<"$outC")' -le 65 ]"
test_ok "C completed" test "$(cluster_wait_job "$idC" 40)" = COMPLETED

touch "$C/stopA"
test_ok "A completed" test "$(cluster_wait_job "$idA" 60)" = COMPLETED
rows=$(grep '^epoch' "$outA")
diag "A's epochs: $(awk '{printf "%s:%dMB/%dMB ", $2, $8/1048576, $10/1048576}' <<<"$rows")"
test_ok "A's loader ran to its end" grep -q '^done ' "$outA"
test_ok "no torn or corrupt item in any epoch" bash -c "! awk '\$12 != 0' <<<'$rows' | grep -q ."
test_ok "its cache never held more than its grant" \
	bash -c "! awk '\$8 > \$10' <<<'$rows' | grep -q ."
test_ok "its bound followed the grant down to 64 MB" \
	bash -c "awk '\$10 <= 64 * 1048576' <<<'$rows' | grep -q ."
test_ok "and up to 128 MB again" bash -c "awk '\$10 >= 127 * 1048576' <<<'$rows' | tail -1 | grep -q ."
[ "$tap_failed" = 0 ] || diag "$(grep 'synergy: lend' "$log" | tail -20)"
cluster__wait 10 cluster_leftovers
test_ok "no synergy cgroup, job cgroup, cache file or grant left" cluster_leftovers
done_testing

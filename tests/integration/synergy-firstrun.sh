#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-firstrun.sh: profile on the job's first run (issue 17). The first
# job of a key with no profile runs as submitted, at its GPU share, with its
# loader (the real coordl) in profiling mode: it takes the key's claim, the
# node lends it the idle core for its CPU search, its loader writes the
# report into the job's cache directory, and the node files the profile as
# the user's own while the job trains on (no restart). A second first job
# of the key submitted meanwhile is not profiled; the next job of the key
# is sized from the profile the first one measured. A job that ends before
# its loader finished the search files nothing and releases the claim, so
# the key's next first job profiles. At the end nothing is left.
#
# Node: 2 CPUs, 2 GPUs, ProcessMemMB 448, DefMemPerGPU 512: a GPU's share
# is 1 core and 512 MB, so the search runs on 2 threads (the share's core
# and the lent one) down to 1. The consumer emulates a GPU step per batch
# with a sleep; whatever the job's profile turns out to be, the next job is
# sized from it.
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
cluster_start 1
echo "LendIdleCores=yes" >>"$C/etc/synergy.conf"
node=${CLUSTER_TAG}n1
log=$C/log/slurmd.$node.log
"$gen" --out "$C/data" --classes 4 --images 240 --seed 23 --width-range 96-160 -j 2 \
	>/dev/null || bail "coordl-datagen failed"

# The training job: one row per epoch until told to stop.
cat >"$C/train.py" <<'EOF'
import os, sys, time
import coordl
stop = sys.argv[2]
print("env", " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                      if k.startswith("SYNERGY_")), flush=True)
ld = coordl.Loader(sys.argv[1], batch_size=16, out_size=64, seed=1, output="numpy")
epoch = 0
while not os.path.exists(stop) and epoch < 2000:
    ld.set_epoch(epoch)
    for images, labels in ld:
        time.sleep(images.shape[0] / 2000.0)
    st = ld.stats()
    print("epoch", epoch, "threads", st["threads"], "corrupt", st["corrupt"],
          "t", "%.2f" % time.time(), flush=True)
    epoch += 1
ld.close()
print("done", epoch, flush=True)
EOF
run="export PYTHONPATH=$top_srcdir/python COORDL_LIBRARY=$lib
	exec /usr/bin/python3 $C/train.py $C/data"
comment() { scontrol show job "$1" | sed -n 's/.*AdminComment=//p'; }

# A: the key's first job.
idA=$(cluster_sbatch --gres=gpu:1 --synergy-profile=fresh --wrap "$run $C/stopA")
outA=$(cluster_out "$idA")
test_ok "A, the key's first job, profiles in place" \
	bash -c "scontrol show job $idA | grep -q 'AdminComment=synergy: key=fresh no profile: GPU-proportional, profiling in place (claim [0-9a-f]\{16\})'"
test_ok "A runs" cluster_wait_state "$idA" RUNNING 30
test_ok "at its GPU share: 1 core, 512 MB" \
	bash -c "scontrol -o show job $idA | grep -q 'TRES=cpu=1,mem=512M,'"
test_ok "its claim is in the store" test -f "$C/store/claims/0.fresh"
# B: a second first job of the key, submitted while A profiles (held, so
# that it does not take back A's lent core).
idB=$(cluster_sbatch --hold --gres=gpu:1 --synergy-profile=fresh --wrap true)
test_ok "a second first job of the key is not profiled: $(comment "$idB")" \
	bash -c "scontrol show job $idB | grep -q 'AdminComment=synergy: key=fresh no profile: GPU-proportional, not profiled: another job of uid 0 profiles it in place'"
scancel "$idB"
cluster__wait 20 grep -q '^env ' "$outA"
envA=$(grep '^env ' "$outA")
diag "A's loader environment: $envA"
test_ok "A's loader is in profiling mode" grep -q ' SYNERGY_PROFILE_MODE=1' <<<"$envA"
test_ok "its report goes into the job's cache directory" \
	grep -q " SYNERGY_PROFILE_OUT=$C/cache/job_$idA/profile-report.json" <<<"$envA"
test_ok "the node lent A the idle core for its search" \
	grep -q "lend job=$idA borrows cpus=" "$log"
cluster__wait 90 grep -q "synergy: job $idA: profiled in place" "$log"
filed=$(grep "synergy: job $idA: profiled in place" "$log")
diag "${filed#*synergy: }"
test_ok "the node filed A's profile while A ran" grep -q 'filed profile fresh for uid 0' <<<"$filed"
test_ok "A was still running then" test "$(cluster_job_state "$idA")" = RUNNING
prof=$C/store/user/0/fresh.json
test_ok "as the user's own profile (user/0/fresh.json), recording its owner" \
	grep -q '"owner": *0' "$prof"
test_ok "measured by A itself, on 2 threads down to 1" \
	grep -q "measured in place by job $idA on $node (2 down to 1 threads)" "$prof"
test_ok "the shared profile of the key is untouched (none)" test ! -e "$C/store/fresh.json"
test_ok "the claim is released" test ! -e "$C/store/claims/0.fresh"
test_ok "and the report removed" test ! -e "$C/cache/job_$idA/profile-report.json"
e0=$(grep -c '^epoch' "$outA")
cluster__wait 30 bash -c "[ \$(grep -c '^epoch' '$outA') -gt $((e0 + 1)) ]"
test_ok "A trains on after its search (epochs $e0 -> $(grep -c '^epoch' "$outA"))" \
	test "$(grep -c '^epoch' "$outA")" -gt $((e0 + 1))
touch "$C/stopA"
test_ok "A completed" test "$(cluster_wait_job "$idA" 60)" = COMPLETED
test_ok "its loader ran to its end, in one process (no restart)" \
	bash -c "[ \$(grep -c '^done ' '$outA') = 1 ] && [ \$(grep -c '^env ' '$outA') = 1 ]"
test_ok "no corrupt item" bash -c "! grep '^epoch' '$outA' | awk '\$6 != 0' | grep -q ."
[ "$tap_failed" = 0 ] || diag "$(grep -E 'synergy: (job|lend job)=? ?'"$idA" "$log" | tail -20)"

# C: the next job of the key is sized from A's profile.
idC=$(cluster_sbatch --gres=gpu:1 --synergy-profile=fresh --wrap 'env | grep ^SYNERGY_')
test_ok "the next job of the key is sized from the measured profile: $(comment "$idC")" \
	bash -c "scontrol show job $idC | grep -q 'AdminComment=synergy: key=fresh cpus=[0-9]* mem='"
test_ok "C completed" test "$(cluster_wait_job "$idC" 30)" = COMPLETED
test_ok "C's loader is not in profiling mode" \
	bash -c "grep -qx SYNERGY_ACTIVE=1 '$(cluster_out "$idC")' && ! grep -q SYNERGY_PROFILE_MODE '$(cluster_out "$idC")'"

# D: a first job too short to profile; E: the key's next first job.
idD=$(cluster_sbatch --gres=gpu:1 --synergy-profile=short --wrap true)
test_ok "D, too short to profile, completed" test "$(cluster_wait_job "$idD" 30)" = COMPLETED
cluster__wait 10 grep -q "synergy: job $idD: profiling in place:" "$log"
test_ok "the node says nothing was filed" \
	grep -q "synergy: job $idD: profiling in place: the job ended before its loader finished" "$log"
test_ok "no profile, and its claim is released" \
	test ! -e "$C/store/user/0/short.json" -a ! -e "$C/store/claims/0.short"
[ "$tap_failed" = 0 ] || diag "$(grep -E "job[ =_]$idD" "$C"/log/*.log | tail -20)"
idE=$(cluster_sbatch --hold --gres=gpu:1 --synergy-profile=short --wrap true)
test_ok "the key's next first job profiles: $(comment "$idE")" \
	bash -c "scontrol show job $idE | grep -q 'profiling in place (claim '"
scancel "$idE"

cluster__wait 10 cluster_leftovers
test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
cluster_stop
test_ok "no daemon or node cgroup left after stop" cluster_gone
done_testing

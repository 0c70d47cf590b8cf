#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-profiling.sh: the offline profiling path with the real profiler.
# A job whose key has no profile runs GPU-proportional and queues a
# request; synergyd turns it into a profiling job that runs the built
# synergy-profile inside Slurm on a small generated dataset; the measured
# profile lands in the store (synergy-profile show reads it back), the
# request is retired, and the next job with that key is sized from the
# measured profile. A key whose profiling run fails is set aside as
# <key>.failed instead. Profiling jobs run as ProfileUser (nobody), write
# into a work directory of their own, and synergyd checks and files the
# profile; requests are capped per user. Relies on tools/coordl-datagen and
# profiler/synergy-profile from the build tree. ProfileInPlace=no, as a
# site that prefers offline runs sets it (synergy-firstrun.sh tests the
# default: the key's first job profiles itself).
#
# The emulated GPU ingests 100 samples/s: one core decodes these small
# images two orders of magnitude faster than that, so the measured profile
# is flat (one core, no cache reach the GPU's rate) and the sized job asks
# for 1 core and ProcessMemMB, which neither GPU-proportional (512M) nor
# any other profile in this test gives.
. "${top_srcdir:?}/tests/lib/cluster.sh"
synergyd=$top_builddir/plugin/synergyd
sp=$top_builddir/profiler/synergy-profile
gen=$top_builddir/tools/coordl-datagen
[ -x "$synergyd" ] || bail "plugin/synergyd not built"
[ -x "$sp" ] || bail "profiler/synergy-profile not built"
[ -x "$gen" ] || bail "tools/coordl-datagen not built"
cluster_start 1

# Each key's dataset sits in $C/data/<key>, which ProfileCommand names with
# %k, as a site would point it at /data/<key>. "nodata" has none, so its
# profiling run fails. The grid and the proportional share (1 core, 0.5
# GiB per GPU) follow this cluster's DefCpuPerGPU and DefMemPerGPU; short
# windows keep the run to about a second.
"$gen" --out "$C/data/newkey" --classes 4 --images 48 --seed 7 --width-range 64-128 -j 1 \
	>/dev/null || bail "coordl-datagen failed"
echo "ProfileCommand=$sp run --key %k --store %s --gpu-rate 100 --batch-size 8 --size 64" \
	"--max-threads 1 --grid-cpus 1,2 --prop-cpus 1 --prop-mem 0.5 --windows 2" \
	"--window-batches 3 --model synergyd-test $C/data/%k" >>"$C/etc/synergy.conf"
echo "MaxProfileRequestsPerUser=2" >>"$C/etc/synergy.conf"
echo "ProfileInPlace=no" >>"$C/etc/synergy.conf"

tuner_round() {
	"$synergyd" --once --conf="$C/etc/synergy.conf" --status="$C/status" 2>>"$C/log/tuner.log"
}

p=$(cluster_sbatch --gres=gpu:1 --synergy-profile=newkey --wrap true)
f=$(cluster_sbatch --gres=gpu:1 --synergy-profile=nodata --wrap true)
test_ok "AdminComment says a profile was requested" \
	bash -c "scontrol show job $p | grep -q 'AdminComment=synergy: key=newkey no profile: GPU-proportional, profiling requested'"
st=$(cluster_wait_job "$p" 30)
test_ok "the job without a profile ran ($st)" test "$st" = COMPLETED
# Slurm resolves the per-GPU defaults at allocation: the allocated TRES.
test_ok "on the GPU-proportional share" \
	bash -c "scontrol -o show job $p | grep -q 'TRES=cpu=1,mem=512M,'"
cluster_wait_job "$f" 30 >/dev/null
test_ok "requests are queued for both keys" \
	test -e "$C/requests/newkey.req" -a -e "$C/requests/nodata.req"
x=$(cluster_sbatch --gres=gpu:1 --synergy-profile=third --wrap true)
test_ok "a third request of the same user is refused (MaxProfileRequestsPerUser=2)" \
	bash -c "scontrol show job $x | grep -q 'profiling refused: 2 requests of uid 0 queued'"
test_ok "and not queued" test ! -e "$C/requests/third.req"

tuner_round
pj=$(cat "$C/requests/newkey.job" 2>/dev/null)
fj=$(cat "$C/requests/nodata.job" 2>/dev/null)
test_ok "the tuner submitted one profiling job per key" test -n "$pj" -a -n "$fj" -a "$pj" != "$fj"
test_ok "the profiling job is named after its key" \
	bash -c "scontrol -o show job ${pj:-0} | grep -q 'JobName=synergy-profile:newkey '"
test_ok "it runs as ProfileUser (nobody), not root" \
	bash -c "scontrol -o show job ${pj:-0} | grep -q 'UserId=nobody('"
st=$(cluster_wait_job "${pj:-0}" 30)
test_ok "the profiling job ran ($st)" test "$st" = COMPLETED
fst=$(cluster_wait_job "${fj:-0}" 30)
test_ok "the one without a dataset failed ($fst)" test "$fst" = FAILED
test_ok "the job's profile is not in the store before synergyd checked it" \
	test ! -e "$C/store/newkey.json"
# ProfileUser owns the work directories: what it leaves where synergyd looks
# for a profile is hostile (issue 24, finding 6). A FIFO there blocked
# synergyd's import for ever.
runuser -u nobody -- mkfifo "$C/requests/work/nodata/nodata.json" ||
	bail "cannot plant a FIFO as nobody"
tuner_timed() { timeout 60 "$synergyd" --once --conf="$C/etc/synergy.conf" \
	--status="$C/status" 2>>"$C/log/tuner.log"; }
test_ok "a FIFO planted as the profile does not block synergyd" tuner_timed
test_ok "and is refused as no regular file" \
	grep -q "left no usable profile: .*nodata.json is not a regular file of nobody" "$C/log/tuner.log"
# Its output file is written by slurmstepd and kept by synergyd: the
# profiler's report there shows it measured inside the job, on the one core
# it was given, into its own work directory.
out=$C/requests/newkey.out
test_ok "the job's output holds the profiler's report" \
	grep -q '^prep   1 thread ' "$out"
test_ok "and says the profile was stored in its work directory" \
	grep -q "stored 'newkey' in $C/requests/work/newkey" "$out"
test_ok "synergyd filed it into the store" grep -q "profiling job $pj filed profile newkey" \
	"$C/log/tuner.log"
[ "$tap_failed" = 0 ] || diag "$(cat "$out" 2>/dev/null)"
test_ok "synergy-profile show reads the profile back from the store" \
	bash -c "'$sp' show --store '$C/store' newkey >'$C/show.txt' &&
		grep -q '^profile   newkey$' '$C/show.txt' &&
		grep -q '^model     synergyd-test$' '$C/show.txt' &&
		grep -q '^dataset   48 items' '$C/show.txt'"
test_ok "with the share and grid ProfileCommand asked for" \
	bash -c "grep -q '^share     1 cpus, 0.5 GiB per GPU' '$C/show.txt' &&
		awk '/^ +cpus/ {f=1; next} f && !NF {exit} f {print \$1}' '$C/show.txt' | tr '\\n' ' ' | grep -qx '1 2 '"
test_ok "no profile was filed for the failed key" test ! -e "$C/store/nodata.json"
test_ok "the work directories are gone" test ! -e "$C/requests/work/newkey" -a ! -e "$C/requests/work/nodata"
test_ok "the request is retired" test ! -e "$C/requests/newkey.req" -a ! -e "$C/requests/newkey.job"
test_ok "status counts the filed profile" grep -qx profiles_filed_total=1 "$C/status"
test_ok "the failed request is set aside for the admin" \
	test -e "$C/requests/nodata.failed" -a ! -e "$C/requests/nodata.req" -a ! -e "$C/requests/nodata.job"
test_ok "status counts the failed run" grep -qx profiling_failed_total=1 "$C/status"
test_ok "the failed run's output names the missing dataset" \
	grep -q "$C/data/nodata" "$C/requests/nodata.out"
[ "$tap_failed" = 0 ] || diag "$(cat "$C/log/tuner.log")"

q=$(cluster_sbatch --gres=gpu:1 --synergy-profile=newkey --wrap true)
test_ok "the next job with that key is sized from the measured profile" \
	bash -c "scontrol show job $q | grep -q 'AdminComment=synergy: key=newkey cpus=1 mem=1024M cache=0M tput=1.00x (best-case; configured shape)'"
test_ok "its request is 1 core and ProcessMemMB" \
	bash -c "scontrol -o show job $q | grep -q 'TRES=cpu=1,mem=1G,'"
st=$(cluster_wait_job "$q" 30)
test_ok "and runs ($st)" test "$st" = COMPLETED
test_ok "no new request is queued for it" test ! -e "$C/requests/newkey.req"
[ "$tap_failed" = 0 ] || diag "$(scontrol show job "$q")"

cluster__wait 5 cluster_leftovers
test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
cluster_stop
test_ok "no daemon or node cgroup left after stop" cluster_gone
done_testing

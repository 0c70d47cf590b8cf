#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-tuner.sh: synergyd moves a Synergy job that waits for memory while
# its GPU is free back to the GPU-proportional share, and the job then
# runs; it reports in its status file and metrics; with slurmctld gone it
# fails the round without touching anything, and a running daemon carries
# on once slurmctld is back. Its profiling requests, with the real
# profiler, are tested in synergy-profiling.sh.
. "${top_srcdir:?}/tests/lib/cluster.sh"
synergyd=$top_builddir/plugin/synergyd
[ -x "$synergyd" ] || bail "plugin/synergyd not built"
cluster_start 1
cluster_put_profile img image

# A job with an explicit memory request takes 3000 of the node's 4096 MB
# and 1 of its 2 GPUs; the image job then wants 1 core (the other is left
# for the other GPU) and 2 GB, and waits although a GPU is free.
a=$(cluster_sbatch --gres=gpu:1 --mem=3000 --wrap 'sleep 300')
test_ok "job with explicit memory runs" cluster_wait_state "$a" RUNNING 20
b=$(cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap 'env | grep ^SYNERGY_')
reason() { [ "$(cluster_job_field "$b" Reason)" = Resources ]; }
test_ok "sized job waits for resources" cluster__wait 20 reason
test_ok "it asked for 1 core and 2 GB" bash -c "scontrol -o show job $b | grep -q 'TRES=cpu=1,mem=2G,'"

"$synergyd" --once --dry-run --conf="$C/etc/synergy.conf" 2>"$C/log/dry.log"
test_ok "dry run names the job" grep -q "job $b: key=img downgraded" "$C/log/dry.log"
test_ok "dry run changes nothing" bash -c "scontrol -o show job $b | grep -q 'TRES=cpu=1,mem=2G,'"

"$synergyd" --once --conf="$C/etc/synergy.conf" --status="$C/status" \
	--metrics="$C/synergy.prom" 2>"$C/log/tuner.log"
test_ok "a round succeeds" test $? = 0
test_ok "the job was moved to the GPU-proportional share" \
	bash -c "scontrol -o show job $b | grep -q 'TRES=cpu=1,mem=512M,'"
test_ok "AdminComment says synergyd downgraded it" \
	bash -c "scontrol show job $b | grep -q 'AdminComment=synergy: key=img downgraded to GPU-proportional by synergyd'"
st=$(cluster_wait_job "$b" 30)
test_ok "the job then ran ($st)" test "$st" = COMPLETED
test_ok "status file counts it" grep -qx downgraded_total=1 "$C/status"
test_ok "metrics count it" grep -qx "synergy_downgraded_jobs_total 1" "$C/synergy.prom"
test_ok "metrics report slurmctld up" grep -qx "synergy_tuner_slurmctld_up 1" "$C/synergy.prom"
[ "$tap_failed" = 0 ] || diag "$(cat "$C/log/tuner.log")"

scancel "$a"

# A running daemon survives a slurmctld restart.
"$synergyd" --interval=1 --conf="$C/etc/synergy.conf" --status="$C/status2" \
	2>"$C/log/tuner2.log" &
tuner=$!
cluster_atexit "$tuner"
cluster__wait 10 grep -qx slurmctld=ok "$C/status2"
cluster_stop_ctld
test_ok "with slurmctld gone the daemon reports it unreachable" \
	cluster__wait 15 grep -qx slurmctld=unreachable "$C/status2"
test_ok "and keeps running" kill -0 "$tuner"
cluster_start_ctld
test_ok "it reaches slurmctld again after the restart" \
	cluster__wait 30 grep -qx slurmctld=ok "$C/status2"
kill -TERM "$tuner"
wait "$tuner"
test_ok "it stops cleanly on SIGTERM" test $? = 0
done_testing

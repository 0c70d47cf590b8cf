#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-soak.sh: the fault soak (bench/soak.sh) in a short form: 40 mixed
# jobs of two steps on 2 nodes with LendIdleCores=yes and idle cycles
# harvested (the agent looking every second), 12 injected faults
# (scancel, kill -9 of tasks and slurmstepds, a slurmd restart). No job's
# allotted CPUs may run another job's tasks (but at idle priority: a job
# harvesting its idle cycles), no job may be stuck (but one
# whose slurmstepd was killed: Slurm never learns that step's end, so such
# a job is reported and cancelled, see bench/soak.sh), and
# nothing of Synergy's may be left (synergy cgroups, job records, cache
# files, segments). Slurm's own leftover job cgroups (after a killed
# slurmstepd) are reported, not failed: the plugins-off control run of
# bench/soak.sh --control leaves the same (BENCHMARKS.md).
. "${top_srcdir:?}/tests/lib/tap.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root (cgroups, munged, slurmd)"
[ -d /sys/fs/cgroup/cpuset ] || skip_all "the soak's sampler reads cgroup v1 cpuset trees"
out=$(bash "$top_srcdir/bench/soak.sh" -n 40 -f 12 -N 2 --seed "${SOAK_SEED:-$$}" 2>/dev/null)
rc=$?
case "$out" in *"1..0 # SKIP"*) echo "$out" | grep '1..0 # SKIP'; exit 0 ;; esac
echo "$out" | sed 's/^/# /'
field() { sed -n "s#^$1 *\([0-9?]*\).*#\1#p" <<<"$out"; }
test_ok "at least 40 jobs submitted" test "$(field 'jobs submitted')" -ge 40
test_ok "at least 12 faults injected" test "$(field 'faults injected')" -ge 12
test_ok "the sampler ran" test "$(field 'overlap samples')" -gt 0
test_ok "no job's allotted CPUs ran another job's tasks (but idle ones)" test "$(field 'overlaps seen')" = 0
test_ok "no job stuck (but those whose slurmstepd was killed: Slurm's)" \
	test "$(field 'jobs stuck after 120s')" = 0
test_ok "no synergy cgroup left" test "$(field 'left: synergy cgroups')" = 0
test_ok "no job record left" test "$(field 'left: job records (StateDir)')" = 0
test_ok "no file left in CacheDir" test "$(field 'left: files in CacheDir')" = 0
test_ok "no coordl segment left in /dev/shm" test "$(field 'left: coordl segments in /dev/shm')" = 0
test_ok "soak.sh exit status says the same" test "$rc" = 0
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# demo.sh: the README's main job, ./synergy-demo --quick, runs end to end on
# the already built tree: both runs of the job mix complete, the table and
# the plot are written, and the cluster, the slow disk (mount, loop device,
# blkio rule) and every cgroup are gone afterwards. Timing is not checked
# here (that is BENCHMARKS.md's job): only that everything ran and was
# reported and cleaned up.
. "${top_srcdir:?}/tests/lib/tap.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root (Slurm daemons, cgroups, loop device)"
for p in munged slurmctld slurmd sbatch losetup mkfs.ext4 gnuplot; do
	PATH=$PATH:/usr/sbin:/sbin command -v "$p" >/dev/null 2>&1 || skip_all "$p not installed"
done
[ -d /sys/fs/cgroup/cpuset ] && [ -d /sys/fs/cgroup/memory ] ||
	skip_all "needs cgroup v1 cpuset and memory controllers"
losetup -f >/dev/null 2>&1 || skip_all "no free loop device"

w=$(mktemp -d /tmp/syndemo.XXXXXX)
trap 'rm -rf "$w"' EXIT
loops_before=$(losetup -a | wc -l)
rule_before=$(cat /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device 2>/dev/null)
"$top_srcdir/synergy-demo" --quick --builddir "$top_builddir" --workdir "$w/work" >"$w/out" 2>&1
rc=$?
test_ok "synergy-demo --quick exits 0" test "$rc" = 0
[ "$rc" = 0 ] || diag "$(tail -n 30 "$w/out")"
r=$w/work/results.csv
test_ok "results: 4 jobs x 2 modes" test "$(tail -n +2 "$r" | wc -l)" = 8
test_ok "every job completed" test "$(awk -F, 'NR > 1 && $19 == "COMPLETED"' "$r" | wc -l)" = 8
test_ok "every job reported its throughput" test "$(awk -F, 'NR > 1 && $11 > 0' "$r" | wc -l)" = 8
test_ok "Synergy jobs were sized from their profiles" \
	test "$(awk -F, 'NR > 1 && $2 == "synergy" && $9 != ""' "$r" | wc -l)" = 4
test_ok "the table has both modes and totals" grep -q "^total | makespan" "$w/out"
test_ok "the summary reports makespan and mean JCT ratios" grep -q "mean JCT x" "$w/out"
test_ok "the output says the GPUs are emulated" grep -qi "emulated" "$w/out"
test_ok "a PNG plot was written" bash -c "head -c 8 '$w/work/synergy-demo.png' | grep -q PNG"
test_ok "it says it left nothing behind" grep -q "no daemon, cgroup, mount or loop device left" "$w/out"
test_ok "no loop device left" test "$(losetup -a | wc -l)" = "$loops_before"
test_ok "no mount left" bash -c "! grep -q ' $w/work/mnt ' /proc/mounts"
test_ok "blkio rules as before" test "$(cat /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device 2>/dev/null)" = "$rule_before"
test_ok "disk image removed (no --keep)" test ! -e "$w/work/datasets.img"
done_testing

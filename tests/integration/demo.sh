#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# demo.sh: the README's main job, ./synergy-demo --quick, runs end to end on
# the already built tree: both runs of the job mix complete, the table and
# the plot are written, and the cluster, the slow disk (mount, loop device,
# blkio rule) and every cgroup are gone afterwards. Timing is not checked
# here (that is BENCHMARKS.md's job): only that everything ran and was
# reported and cleaned up. A --slurm release that is not here is refused
# before anything starts. SYNERGY_DEMO_SLURM=26.05 (or 24.11) also runs
# ./synergy-demo --quick --slurm 26.05 (chrooted in the root file system of
# tools/build-slurm-rootfs, built there in build-slurm-26.05/; several
# minutes more) and checks it the same way.
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

# --slurm: refused before anything is made, naming the value and the
# releases here; a build tree of another Slurm than the one asked for too.
out=$("$top_srcdir/synergy-demo" --slurm 99.99 --builddir "$top_builddir" --workdir "$w/refused" 2>&1)
rc=$?
test_ok "--slurm 99.99 is refused (status 2)" test "$rc" = 2
test_ok "... naming the value and the releases here" \
	grep -q -- "--slurm 99.99: not available; here: [0-9]*\.[0-9]* (installed)" <<<"$out"
[ "$rc" = 2 ] || diag "$out"
out=$("$top_srcdir/synergy-demo" --slurm latest --builddir "$top_builddir" --workdir "$w/refused" 2>&1)
test_ok "--slurm latest is refused: not a release" \
	grep -q -- "--slurm 'latest': expected a Slurm release such as 26.05" <<<"$out"
out=$("$top_srcdir/synergy-demo" --slurm 26.05 --builddir "$top_builddir" --workdir "$w/refused" 2>&1)
rc=$?
if "$top_srcdir/tools/build-slurm-rootfs" --check --suite sid >/dev/null 2>&1; then
	test_ok "--slurm 26.05 with a build tree of $(slurmd -V | cut -d' ' -f2) is refused, naming both" \
		bash -c '[ "$1" = 2 ] && grep -q "is built against Slurm [0-9.]*, not 26.05" <<<"$2"' _ "$rc" "$out"
else
	test_ok "--slurm 26.05 without the root file system is refused, saying how to make it" \
		bash -c '[ "$1" = 2 ] && grep -q "tools/build-slurm-rootfs --suite sid" <<<"$2"' _ "$rc" "$out"
fi
test_ok "nothing was made for a refused --slurm" test ! -e "$w/refused"

# check_demo WHAT RC OUT WORKDIR: what a finished synergy-demo --quick
# (status RC, output file OUT) must have done and left.
rule_before=$(cat /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device 2>/dev/null)
check_demo() {
	local what=$1 rc=$2 out=$3 r=$4/results.csv
	test_ok "$what exits 0" test "$rc" = 0
	[ "$rc" = 0 ] || diag "$(tail -n 30 "$out")"
	test_ok "$what: results: 4 jobs x 2 modes" test "$(tail -n +2 "$r" | wc -l)" = 8
	test_ok "$what: every job completed" test "$(awk -F, 'NR > 1 && $19 == "COMPLETED"' "$r" | wc -l)" = 8
	test_ok "$what: every job reported its throughput" test "$(awk -F, 'NR > 1 && $11 > 0' "$r" | wc -l)" = 8
	test_ok "$what: Synergy jobs were sized from their profiles" \
		test "$(awk -F, 'NR > 1 && $2 == "synergy" && $9 != ""' "$r" | wc -l)" = 4
	test_ok "$what: the table has both modes and totals" grep -q "^total | makespan" "$out"
	test_ok "$what: the summary reports makespan and mean JCT ratios" grep -q "mean JCT x" "$out"
	test_ok "$what: the output says the GPUs are emulated" grep -qi "emulated" "$out"
	test_ok "$what: a PNG plot was written" bash -c "head -c 8 '$4/synergy-demo.png' | grep -q PNG"
	test_ok "$what: it says it left nothing behind" grep -q "no daemon, cgroup, mount or loop device left" "$out"
	# its own loop device, by its backing file: other tests (a guest, a
	# package build) may hold loop devices of their own meanwhile
	test_ok "$what: no loop device left" bash -c '! losetup -a | grep -qF -- "$1/"' _ "$4"
	test_ok "$what: no mount left" bash -c "! grep -q ' $4/mnt ' /proc/mounts"
	test_ok "$what: blkio rules as before" \
		test "$(cat /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device 2>/dev/null)" = "$rule_before"
	test_ok "$what: disk image removed (no --keep)" test ! -e "$4/datasets.img"
}

"$top_srcdir/synergy-demo" --quick --builddir "$top_builddir" --workdir "$w/work" >"$w/out" 2>&1
check_demo "synergy-demo --quick" $? "$w/out" "$w/work"

if [ -n "${SYNERGY_DEMO_SLURM:-}" ]; then
	"$top_srcdir/synergy-demo" --quick --slurm "$SYNERGY_DEMO_SLURM" --workdir "$w/other" >"$w/out2" 2>&1
	rc=$?
	check_demo "synergy-demo --quick --slurm $SYNERGY_DEMO_SLURM" "$rc" "$w/out2" "$w/other"
	test_ok "--slurm $SYNERGY_DEMO_SLURM: its Slurm ran" \
		grep -q "^    Slurm $SYNERGY_DEMO_SLURM\.[0-9]*, cgroup v1, chrooted in" "$w/out2"
fi
done_testing

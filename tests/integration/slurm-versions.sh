#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# slurm-versions.sh: this project on the Slurm of newer Debian releases, on
# cgroup v2: trixie (Debian 13, Slurm 24.11) and sid (unstable, 26.05). For
# each release whose root file system tools/build-slurm-rootfs has made
# (tests/run-all makes them; without one that release's part is one skipped
# test, with the reason):
#  1. the SPANK and job_submit plugins build inside that root (its gcc,
#     libc and libslurm-dev) in the source tree's build-slurm-<x.y>/
#     (tools/rootfs-run --build);
#  2. the whole project builds there, synergyd and the tools included,
#     without a warning (-Werror; plugin/slurm/slurm_compat.h holds what
#     differs between releases);
#  3. the suites of the release's list run in the cgroup v2 guest booted
#     on that root (tests/integration/cgroup-v2.sh with SYNERGY_VM_ROOT):
#     plain Slurm's, and job_submit/synergy under concurrent clients
#     (synergy-concurrent.sh: from 23.02 slurmctld really runs job_submit
#     concurrently, 22.05 serializes it),
#     their TAP lines renumbered as this file's, named
#     "slurm-<x.y>/cgroup-v2: <suite>: ..."; when the plugins did not
#     build (1. failed), the Synergy suites are skipped with that reason
#     and only those of plain Slurm (CLUSTER_SYNERGY=0) run.
# The lists, one release a line: SUITE "FILE [VAR=VALUE]...;..." (the
# suites as in cgroup-v2.sh, ';' between them). SYNERGY_VERSIONS replaces
# them (e.g. SYNERGY_VERSIONS='sid cluster-limits.sh CLUSTER_SYNERGY=0'),
# SYNERGY_VERSIONS=off skips this file, SYNERGY_VERSIONS=full runs the
# longer lists below. Other knobs: cgroup-v2.sh's.
#
# What runs where (issue 26; the guest's time per suite is in
# doc/slurm-versions.md): 26.05, the current release, with the layout that
# differs most (job directories named by SLUID), runs every Synergy suite
# that touches the node: sizing (with CgroupSlice, 25.11+, and PID 1 in a
# container's cgroup, the prefix of 23.02+), lending, live grants,
# harvesting, cleanup, fallback, groups, two nodes, first-run profiling,
# trust, and job_submit under 8 concurrent clients (8 jobs each: the
# per-user cap raced for); about 18 minutes of guest time unloaded.
# 24.11 (Debian 13) sizing with a container's PID 1. That is what CI's
# hour holds beside everything else. SYNERGY_VERSIONS=full runs the same
# suites on 24.11 too, on 26.05 also lending with CgroupSlice and a
# container's PID 1 and sizing with CgroupJobIdPaths=yes (26.05.2+), and
# plain Slurm's suites. 22.05 runs them all on the host and its own
# layout's in cgroup-v2.sh.
versions='
trixie synergy-sized.sh CLUSTER_INIT_CGROUP=pod.slice/init.scope
sid synergy-sized.sh CLUSTER_CGROUP_CONF_EXTRA=CgroupSlice=synergy.slice CLUSTER_INIT_CGROUP=pod.slice/init.scope;synergy-lending.sh;synergy-live.sh;synergy-harvest.sh;synergy-cleanup.sh;synergy-fallback.sh;synergy-group.sh;synergy-multinode.sh;synergy-firstrun.sh;synergy-trust.sh;synergy-concurrent.sh SYNERGY_CONC_JOBS=8
'
# SYNERGY_VERSIONS=full: every Synergy suite that touches the node on
# both releases (about three times the default's guest time; the default
# is what CI's hour allows beside everything else).
versions_full='
trixie cluster-basic.sh CLUSTER_SYNERGY=0;synergy-concurrent.sh SYNERGY_CONC_JOBS=8;synergy-sized.sh CLUSTER_INIT_CGROUP=pod.slice/init.scope;synergy-lending.sh;synergy-live.sh;synergy-harvest.sh;synergy-cleanup.sh;synergy-fallback.sh;synergy-group.sh;synergy-multinode.sh;synergy-firstrun.sh;synergy-trust.sh
sid cluster-basic.sh CLUSTER_SYNERGY=0;cluster-limits.sh CLUSTER_SYNERGY=0;synergy-concurrent.sh SYNERGY_CONC_JOBS=8;synergy-sized.sh;synergy-lending.sh;synergy-live.sh;synergy-harvest.sh;synergy-cleanup.sh;synergy-fallback.sh;synergy-group.sh;synergy-multinode.sh;synergy-firstrun.sh;synergy-trust.sh;synergy-lending.sh CLUSTER_CGROUP_CONF_EXTRA=CgroupSlice=synergy.slice CLUSTER_INIT_CGROUP=pod.slice/init.scope;synergy-sized.sh CLUSTER_CGROUP_CONF_EXTRA=CgroupJobIdPaths=yes
'

. "${top_srcdir:?}/tests/lib/tap.sh"
. "$top_srcdir/tests/lib/suites.sh"
: "${top_builddir:?}"

[ "${SYNERGY_VERSIONS:-}" = off ] && skip_all "SYNERGY_VERSIONS=off"
[ "${SYNERGY_VM:-}" = off ] && skip_all "SYNERGY_VM=off (the releases run in the guest)"
[ "$(id -u)" = 0 ] || skip_all "needs root (chroot, qemu)"
command -v qemu-system-x86_64 >/dev/null ||
	skip_all "qemu-system-x86_64 not installed (tools/install-deps installs it)"
[ -x "$top_srcdir/configure" ] || skip_all "$top_srcdir has no configure"
list=${SYNERGY_VERSIONS:-$versions}
if [ "$list" = full ]; then
	list=$versions_full
	# a release's guest runs a dozen suites: longer than cgroup-v2.sh's default
	export SYNERGY_VM_TIMEOUT=${SYNERGY_VM_TIMEOUT:-5400}
fi

while read -r suite vm_suites; do
	case "$suite" in '' | '#'*) continue ;; esac
	if ! rootfs=$("$top_srcdir/tools/build-slurm-rootfs" --check --suite "$suite" 2>&1); then
		test_skip "$suite: no root file system (tools/build-slurm-rootfs --suite $suite, as root)"
		continue
	fi
	root=${rootfs%% *}
	ver=${rootfs#* }
	name=slurm-$(echo "$ver" | cut -d. -f1,2)
	bdir=$top_srcdir/build-slurm-$(echo "$ver" | cut -d. -f1,2)
	diag "$suite: Slurm $ver in $root, build directory $bdir"

	t0=$SECONDS
	out=$("$top_srcdir/tools/rootfs-run" --root "$root" --builddir "$bdir" --build \
		plugin/spank_synergy.la plugin/spank_synergy_node.la plugin/job_submit_synergy.la 2>&1)
	rc=$?
	test_ok "$name: the SPANK and job_submit plugins build against Slurm $ver ($suite's gcc)" \
		test "$rc" = 0 -a -f "$bdir/plugin/.libs/spank_synergy.so" \
		-a -f "$bdir/plugin/.libs/spank_synergy_node.so" -a -f "$bdir/plugin/.libs/job_submit_synergy.so"
	[ "$rc" = 0 ] || sed 's/^/#   /' <<<"$out"
	out=$("$top_srcdir/tools/rootfs-run" --root "$root" --builddir "$bdir" --build 2>&1)
	rc=$?
	test_ok "$name: the whole project (synergyd, tools) builds against Slurm $ver" \
		test "$rc" = 0 -a -x "$bdir/plugin/synergyd"
	[ "$rc" = 0 ] || sed 's/^/#   /' <<<"$out"
	diag "$name: builds: $((SECONDS - t0)) s"

	# The suites in the guest on that root, with this release's build;
	# without the plugins, only those of plain Slurm.
	if [ ! -f "$bdir/plugin/.libs/spank_synergy.so" ] ||
		[ ! -f "$bdir/plugin/.libs/job_submit_synergy.so" ]; then
		plain=
		while read -r f vars; do
			[ -n "$f" ] || continue
			case " $vars " in
			*" CLUSTER_SYNERGY=0 "*) plain="$plain${plain:+;}$f $vars" ;;
			*) test_skip "$name/$f: the plugins did not build against Slurm $ver" ;;
			esac
		done <<<"${vm_suites//;/$'\n'}"
		vm_suites=$plain
	fi
	[ -z "$vm_suites" ] && continue
	SYNERGY_VM_ROOT=$root SYNERGY_VM_SUITES=$vm_suites top_builddir=$bdir \
		SUITES_PREFIX=$name/ suites_run "cgroup-v2.sh"
done <<<"$list"
done_testing

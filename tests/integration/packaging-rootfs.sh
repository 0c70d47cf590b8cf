#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging-rootfs.sh: the packages as sites of newer releases build and
# install them (issue 26), in the root file systems of
# tools/build-slurm-rootfs (a release without one is one skipped test, with
# the reason):
#  1. trixie (Debian 13, Slurm 24.11): tools/rootfs-packages --deb builds
#     the Debian packages there (its gcc and libslurm-dev; debhelper and
#     the other build tools installed by apt into a throwaway overlay, the
#     cached root unchanged); the plugins package accepts exactly that
#     root's Slurm; then packaging.sh runs in the cgroup v2 guest booted on
#     that root with SYNERGY_PKG_DEBS: dpkg installs the packages into
#     Debian 13 (the guest's RAM overlay), a throwaway 24.11 cluster loads
#     the INSTALLED plugins (slurmctld job_submit_synergy.so, slurmd and
#     slurmstepd spank_synergy.so and spank_synergy_node.so, srun
#     spank_synergy.so alone) and sizes a job, and the purge leaves nothing.
#  2. sid (Slurm 26.05): tools/rootfs-packages --rpm builds the RPMs of
#     synergy-slurm.spec against that root's Slurm (Debian's rpmbuild);
#     the packages hold both SPANK modules, job_submit, synergyd and the
#     rest, and the plugins package requires exactly Slurm 26.05.x.
# Root only; it needs the network to the Debian archive (apt in the
# overlays) and, for the guest, qemu. SYNERGY_PKG_ROOTFS=off skips it;
# the install in the guest (the longest part, 5-8 minutes) runs only with
# SYNERGY_PKG_ROOTFS=full, so that CI's hour holds the version suites too:
# by default the packages are built and inspected, not installed.
# Time on the 2-CPU build machine: see doc/slurm-versions.md ("Packages").
. "${top_srcdir:?}/tests/lib/tap.sh"
. "$top_srcdir/tests/lib/suites.sh"
: "${top_builddir:?}"

[ "${SYNERGY_PKG_ROOTFS:-}" = off ] && skip_all "SYNERGY_PKG_ROOTFS=off"
[ "$(id -u)" = 0 ] || skip_all "needs root (chroot, overlay mounts, qemu)"

W=$(mktemp -d /var/tmp/synpkg-rootfs.XXXXXX) || bail "mktemp failed"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# pkg_build SUITE KIND WHAT: the packages of KIND (deb or rpm) built by
# rootfs-packages in SUITE's root into $W/KIND, one test; sets root, ver
# (the root's Slurm), next (its next micro version) and rc. Without that
# root: a skipped test, and status 1.
pkg_build() {
	local line out t0=$SECONDS
	if ! line=$("$top_srcdir/tools/build-slurm-rootfs" --check --suite "$1" 2>/dev/null); then
		test_skip "$1: no root file system (tools/build-slurm-rootfs --suite $1, as root)"
		return 1
	fi
	root=${line%% *}
	ver=$(chroot "$root" dpkg-query -W -f='${source:Upstream-Version}' slurmctld)
	next=${ver%.*}.$((${ver##*.} + 1))
	out=$("$top_srcdir/tools/rootfs-packages" --root "$root" --"$2" --out "$W/$2" 2>&1)
	rc=$?
	test_ok "$1: the $3 build against Slurm $ver (rootfs-packages --$2)" test "$rc" = 0
	[ "$rc" = 0 ] || sed 's/^/#   /' <<<"$out"
	diag "$1: $2 build $((SECONDS - t0)) s"
}

# 1. Debian 13.
if pkg_build trixie deb "Debian packages"; then
	f=$(ls "$W"/deb/synergy-slurm-plugins_*.deb 2>/dev/null)
	dep=$([ -n "$f" ] && dpkg-deb -f "$f" Depends)
	test_ok "trixie: the plugins package accepts exactly Slurm $ver" \
		grep -qF "slurm-wlm-basic-plugins (>= $ver~), slurm-wlm-basic-plugins (<< $next~)" <<<"$dep"
	[ "$tap_failed" = 0 ] || diag "Depends: $dep"
	t=$(ls "$W"/deb/synergy-slurm-tools_*.deb 2>/dev/null)
	unit=$([ -n "$t" ] && dpkg-deb -c "$t" | awk '$NF ~ /synergyd\.service$/ {print $NF}')
	test_ok "trixie: synergyd.service in Debian 13's unit directory (${unit:-not packaged})" \
		test "$unit" = ./usr/lib/systemd/system/synergyd.service
	if [ "$rc" != 0 ]; then
		test_skip "trixie/packaging: the packages did not build"
	elif [ "${SYNERGY_PKG_ROOTFS:-}" != full ]; then
		test_skip "trixie/packaging: installing them in Debian 13's Slurm runs with SYNERGY_PKG_ROOTFS=full"
	elif [ "${SYNERGY_VM:-}" = off ]; then
		test_skip "trixie/packaging: SYNERGY_VM=off (the packages are installed in the guest)"
	elif ! command -v qemu-system-x86_64 >/dev/null; then
		test_skip "trixie/packaging: qemu-system-x86_64 not installed (tools/install-deps installs it)"
	else
		t0=$SECONDS
		SYNERGY_VM_ROOT=$root SYNERGY_VM_BIND=$W/deb SYNERGY_VM_TIMEOUT=900 \
			SYNERGY_VM_SUITES="packaging.sh SYNERGY_PKG_DEBS=$W/deb" \
			SUITES_PREFIX=slurm-${ver%.*}/ suites_run cgroup-v2.sh
		diag "trixie: guest $((SECONDS - t0)) s"
	fi
fi

# 2. The RPMs against 26.05.
if pkg_build sid rpm RPMs; then
	# rpm_has NAME PATTERN...: the listing (rpm -qlp, made by
	# rootfs-packages next to each package) of NAME-<version>.<arch>.rpm
	# has a line matching each extended regular expression.
	rpm_has() {
		local l p
		for l in "$W"/rpm/"$1"-[0-9]*.rpm.files; do break; done
		[ -f "$l" ] || { echo "# no listing of an RPM $1"; return 1; }
		shift
		for p in "$@"; do
			grep -qE "$p" "$l" || { echo "# no $p in $l"; return 1; }
		done
	}
	pd='/usr/lib(64)?/slurm'
	test_ok "sid: synergy-slurm-plugins: both SPANK modules, job_submit, synergy.conf" \
		rpm_has synergy-slurm-plugins "^$pd/spank_synergy\.so$" "^$pd/spank_synergy_node\.so$" \
		"^$pd/job_submit_synergy\.so$" '^/etc/slurm/synergy\.conf$' 'man8/spank-synergy\.8'
	test_ok "sid: synergy-slurm-tools: synergyd, its unit, synergy-lend, profiler, simulator" \
		rpm_has synergy-slurm-tools '^/usr/sbin/synergyd$' '/systemd/system/synergyd\.service$' \
		'^/usr/sbin/synergy-lend$' '^/usr/bin/synergy-profile$' '^/usr/bin/synergy-sim$' \
		'^/usr/bin/coordl-pack$'
	rpm_libs() {
		rpm_has coordl '/libcoordl\.so\.0' &&
			rpm_has coordl-devel '^/usr/include/coordl\.h$' '/pkgconfig/coordl\.pc$' &&
			rpm_has python3-coordl '^/usr/lib/python3[.0-9]*/site-packages/coordl/loader\.py$'
	}
	test_ok "sid: coordl, coordl-devel, python3-coordl (in /usr, not /usr/local)" rpm_libs
	req=$(cat "$W"/rpm/synergy-slurm-plugins-[0-9]*.rpm.requires 2>/dev/null)
	test_ok "sid: the plugins RPM requires exactly Slurm $ver" \
		bash -c "grep -qx 'slurm(x86-64) >= $ver' <<<'$req' &&
			grep -qx 'slurm(x86-64) < $next' <<<'$req'"
	[ "$tap_failed" = 0 ] || diag "Requires: $(tr '\n' ' ' <<<"$req")"
fi
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging.sh: the Debian packages, built as an admin builds them and
# installed as an admin installs them, put everything where Slurm, systemd
# and the linker look, and load in Slurm.
#
# From a clean copy of the checkout (git archive of HEAD when the source is
# a git checkout, so uncommitted changes are not packaged; else a copy of
# the source tree without build directories) it runs
# `dpkg-buildpackage -b -uc -us` (DEB_BUILD_OPTIONS=nocheck), lints the
# result when lintian is there, installs the packages with dpkg, checks the
# plugins are in the installed Slurm's plugin directory, the unit in
# systemd's directory (not enabled), the examples under the doc directory,
# synergy.conf as a conffile, the library through pkg-config and the Python
# binding; then a throwaway cluster that loads the INSTALLED plugins
# (CLUSTER_PLUGIN_DIR) sizes one profiled job. Last, it purges the packages
# and checks that none of their files is left: the machine is as it was.
#
# With SYNERGY_PKG_DEBS=DIR it builds nothing: it installs the packages in
# DIR, built for the Slurm of the machine it runs on (tools/rootfs-packages
# --deb, for another Debian release: packaging-rootfs.sh runs this file so
# in the guest booted on that release's root), and checks them from the
# dependency on that Slurm on.
#
# Root only. It refuses to run (SKIP) where one of its packages is installed
# already, since it would remove it; two runs on one machine take turns.
# Most of its time is the package build: 2 minutes on a quiet 2-core machine
# (8 minutes of a whole run of 11 at load 13).
#
# Environment: JOBS (the build's parallelism, default 2).
. "${top_srcdir:?}/tests/lib/cluster.sh"

PACKAGES="synergy-slurm-plugins synergy-slurm-tools libcoordl0 libcoordl-dev python3-coordl"

cluster_require_system
prebuilt=${SYNERGY_PKG_DEBS:-}
if [ -n "$prebuilt" ]; then
	[ -d "$prebuilt" ] || bail "SYNERGY_PKG_DEBS=$prebuilt: not a directory"
	for p in dpkg pkg-config cc; do
		command -v "$p" >/dev/null 2>&1 || skip_all "$p not installed"
	done
else
	for p in dpkg-buildpackage dpkg-checkbuilddeps dh dh_python3 fakeroot pkg-config cc; do
		command -v "$p" >/dev/null 2>&1 ||
			skip_all "$p not installed (tools/install-deps installs the packaging tools)"
	done
fi

# Take turns with another run of this test (the same packages, one dpkg);
# then packages of ours that are installed are someone else's.
lockdir=/run/lock
[ -d "$lockdir" ] || lockdir=/tmp
exec 9>"$lockdir/synergy-packaging-test.lock"
flock -w 900 9 || bail "another packaging test held the lock for 15 minutes"
for p in $PACKAGES; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok'; then
		skip_all "$p is installed on this machine; the test would remove it"
	fi
done

W=$(mktemp -d /tmp/synpkg.XXXXXX) || bail "mktemp failed"
installed=
# pkg_cleanup: purge what this test installed, remove its directory.
pkg_cleanup() {
	if [ -n "$installed" ]; then
		pkg_dpkg --purge $PACKAGES >>"$W/purge.log" 2>&1 ||
			echo "# cleanup: dpkg --purge failed: $(tail -n 3 "$W/purge.log")"
		installed=
	fi
	cd /
	rm -rf "$W"
}
CLUSTER_EXIT_HOOK=pkg_cleanup
trap pkg_cleanup EXIT
trap 'pkg_cleanup; exit 130' INT
trap 'pkg_cleanup; exit 143' TERM

# pkg_dpkg ARGS...: dpkg, waiting up to 2 minutes while another dpkg or apt
# on this machine holds its lock.
pkg_dpkg() {
	local i out rc
	for i in $(seq 1 120); do
		out=$(dpkg "$@" 2>&1)
		rc=$?
		if [ "$rc" != 0 ] &&
			grep -qE 'frontend lock|database is locked|locked by another process' <<<"$out"; then
			sleep 1
			continue
		fi
		printf '%s\n' "$out"
		return $rc
	done
	printf '%s\n' "$out"
	return 1
}

arch=$(dpkg --print-architecture)
# pkg_find DIR: the .deb files of PACKAGES in DIR, in order, into debs.
pkg_find() {
	local p f
	debs=
	for p in $PACKAGES; do
		f=$(ls "$1"/"${p}"_*_"$arch".deb "$1"/"${p}"_*_all.deb 2>/dev/null | head -n 1)
		test_ok "package $p was built" test -n "$f"
		debs="$debs $f"
	done
	[ "$tap_failed" = 0 ] || bail "packages missing"
}

t0=$(date +%s)
if [ -n "$prebuilt" ]; then
	diag "installing the packages built in $prebuilt"
	pkg_find "$prebuilt"
else
	# 1. A clean copy of the source.
	mkdir "$W/src"
	if git -C "$top_srcdir" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		[ "$(git -C "$top_srcdir" rev-parse --show-toplevel)" -ef "$top_srcdir" ]; then
		git -C "$top_srcdir" archive --format=tar HEAD | tar -xf - -C "$W/src"
		diag "packaging HEAD $(git -C "$top_srcdir" rev-parse --short HEAD) of $top_srcdir"
		git -C "$top_srcdir" diff --quiet HEAD 2>/dev/null ||
			diag "(uncommitted changes in $top_srcdir are not in the packages)"
	else
		tar -C "$top_srcdir" --exclude=./.git --exclude='./build*' --exclude='./_build*' \
			--exclude=./autom4te.cache -cf - . | tar -xf - -C "$W/src"
		diag "packaging a copy of $top_srcdir (not a git checkout)"
	fi
	test_ok "the source has a debian/ directory" test -x "$W/src/debian/rules"
	deps=$(cd "$W/src" && dpkg-checkbuilddeps 2>&1)
	[ -z "$deps" ] || skip_all "build dependencies missing: $deps"

	# 2. Build, as an admin would; MAKEFLAGS of an outer `make check` must not
	# leak into the package build.
	(cd "$W/src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u top_srcdir -u top_builddir \
		DEB_BUILD_OPTIONS="nocheck parallel=${JOBS:-2}" \
		dpkg-buildpackage -b -uc -us) >"$W/build.log" 2>&1
	rc=$?
	test_ok "dpkg-buildpackage -b -uc -us succeeds" test "$rc" = 0
	[ "$rc" = 0 ] || { tail -n 30 "$W/build.log" | sed 's/^/#   /'; bail "package build failed"; }
	diag "package build: $(($(date +%s) - t0)) s"
	pkg_find "$W"

	if command -v lintian >/dev/null 2>&1; then
		lintian --fail-on error,warning "$W"/*.changes >"$W/lintian.log" 2>&1
		rc=$?
		test_ok "lintian finds no error or warning" test "$rc" = 0
		grep -v '^running with root' "$W/lintian.log" | sed 's/^/#   lintian: /'
	else
		test_skip "lintian not installed"
	fi
fi

# The job_submit plugin loads only in a slurmctld of the version it was
# built for: the plugins package must say so.
slurm_v=$(dpkg-query -W -f='${source:Upstream-Version}' slurmctld 2>/dev/null)
f=$(ls "${prebuilt:-$W}"/synergy-slurm-plugins_*.deb)
test_ok "plugins depend on exactly Slurm $slurm_v" \
	grep -qF "slurm-wlm-basic-plugins (>= $slurm_v~)" <<<"$(dpkg-deb -f "$f" Depends)"
test_ok "plugins break any other slurmctld" \
	grep -qF "slurmctld (<< $slurm_v~)" <<<"$(dpkg-deb -f "$f" Breaks)"

# 3. Install. Snapshot what the packages may touch, to compare after purge.
pd=$(dirname "$(dpkg -L slurm-wlm-basic-plugins 2>/dev/null | grep '/select_cons_tres\.so$' | head -n 1)")
[ -d "$pd" ] || pd=/usr/lib/x86_64-linux-gnu/slurm-wlm
# The release's unit directory: systemd's pkg-config file says; without it
# (Debian 13 moved it to systemd-dev), /usr/lib's from Debian 13 on. The
# build (debian/rules) tells the release by its debhelper instead, which
# an installed system need not have: the two agree on Debian 12 and 13.
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null)
if [ -z "$unitdir" ]; then
	case $(cat /etc/debian_version 2>/dev/null) in
	[0-9].* | 1[0-2].*) unitdir=/lib/systemd/system ;;
	*) unitdir=/usr/lib/systemd/system ;;
	esac
fi
snapshot() {
	ls -A "$pd" /etc/slurm /etc/slurm/plugstack.conf.d /etc/systemd/system \
		/var/lib/systemd/deb-systemd-helper-enabled 2>&1
}
snapshot >"$W/before"
installed=1
# shellcheck disable=SC2086
# A root of tools/build-slurm-rootfs keeps documentation and manual pages
# out of every package (path-exclude in /etc/dpkg/dpkg.cfg.d); ours are
# checked below, so they are let in (the command line's filters come
# after the configuration's, and the last match wins).
pkg_dpkg -i --path-include='/usr/share/doc/*' --path-include='/usr/share/man/*' \
	$debs >"$W/install.log" 2>&1
rc=$?
test_ok "dpkg -i installs the packages" test "$rc" = 0
[ "$rc" = 0 ] || { tail -n 20 "$W/install.log" | sed 's/^/#   /'; bail "install failed"; }
# shellcheck disable=SC2086
dpkg -L $PACKAGES | sort -u >"$W/files"

test_ok "spank_synergy.so is in Slurm's plugin directory $pd" test -f "$pd/spank_synergy.so"
test_ok "spank_synergy_node.so (its node side) beside it" test -f "$pd/spank_synergy_node.so"
test_ok "job_submit_synergy.so is in Slurm's plugin directory" test -f "$pd/job_submit_synergy.so"
test_ok "no libtool archives next to them" bash -c "! ls '$pd'/*synergy*.la 2>/dev/null | grep -q ."
test_ok "synergy.conf is a conffile in /etc/slurm" \
	grep -q '^ /etc/slurm/synergy.conf ' <<<"$(dpkg-query -W -f='${Conffiles}' synergy-slurm-plugins)"
ex=/usr/share/doc/synergy-slurm-plugins/examples
test_ok "examples: synergy.conf, plugstack snippet, slurm.conf lines" \
	test -f "$ex/synergy.conf" -a -f "$ex/plugstack.conf.d/synergy.conf" -a -f "$ex/slurm.conf.synergy"
test_ok "the plugstack snippet names the installed plugin" \
	grep -q "^optional $pd/spank_synergy.so " "$ex/plugstack.conf.d/synergy.conf"
unit=$(grep '/systemd/system/synergyd\.service$' "$W/files" | head -n 1)
test_ok "synergyd.service is in the release's unit directory $unitdir (${unit:-not packaged})" \
	test "$unit" = "$unitdir/synergyd.service" -a -f "$unit"
test_ok "the unit runs the installed synergyd" \
	bash -c "grep -q '^ExecStart=/usr/sbin/synergyd ' '$unit' && test -x /usr/sbin/synergyd"
test_ok "it runs as slurm, its status file in its RuntimeDirectory" \
	bash -c "grep -qx 'User=slurm' '$unit' && grep -qx 'RuntimeDirectory=synergyd' '$unit' && grep -q -- '--status=/run/synergyd/' '$unit'"
test_ok "the unit is installed, not enabled" \
	test ! -e /etc/systemd/system/multi-user.target.wants/synergyd.service
if command -v systemd-analyze >/dev/null 2>&1; then
	# Without man (a root of tools/build-slurm-rootfs) the unit's
	# Documentation= cannot be looked up: only the rest is verified.
	man=yes
	command -v man >/dev/null 2>&1 || man=no
	out=$(systemd-analyze verify --man="$man" "$unit" 2>&1)
	test_ok "systemd-analyze verify accepts the unit" test -z "$out"
	[ -z "$out" ] || sed 's/^/#   /' <<<"$out"
else
	test_skip "systemd-analyze not installed"
fi
test_ok "man pages: synergyd(8), spank-synergy(8), synergy.conf(5), coordl(3)" \
	test -f /usr/share/man/man8/synergyd.8.gz -a -f /usr/share/man/man8/spank-synergy.8.gz \
	-a -f /usr/share/man/man5/synergy.conf.5.gz -a -f /usr/share/man/man3/coordl.3.gz
for t in /usr/sbin/synergyd /usr/sbin/synergy-lend /usr/bin/synergy-profile \
	/usr/bin/synergy-sim /usr/bin/coordl-pack /usr/bin/coordl-datagen; do
	test_ok "$t --help" bash -c "'$t' --help >/dev/null 2>&1"
done

# The library: a program built through pkg-config, and the Python binding,
# read a small generated dataset (8 images).
coordl-datagen --out "$W/data" --classes 2 --images 8 --seed 1 --jobs 1 >/dev/null 2>&1
cat >"$W/count.c" <<'EOF'
#include <coordl.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	coordl_config_t cfg;
	coordl_error_t err;
	coordl_loader_t *ld;
	coordl_batch_t *b;
	int n = 0;

	coordl_config_init(&cfg);
	cfg.path = argv[argc - 1];
	cfg.batch_size = 4;
	cfg.out_size = 32;
	cfg.threads = 1;
	cfg.cache_bytes = 0;
	if (!(ld = coordl_create(&cfg, &err))) {
		fprintf(stderr, "%s\n", err.text);
		return 1;
	}
	while (coordl_next(ld, &b, &err) == 1) {
		n += b->n;
		coordl_release(ld, b);
	}
	coordl_destroy(ld);
	printf("%d\n", n);
	return 0;
}
EOF
# shellcheck disable=SC2046
cc -o "$W/count" "$W/count.c" $(pkg-config --cflags --libs coordl) 2>"$W/cc.log"
test_ok "a program builds against coordl.pc and coordl.h" test -x "$W/count"
test_ok "it reads the 8 images through the installed libcoordl" \
	test "$("$W/count" "$W/data" 2>&1)" = 8
pyout=$(cd / && env -u top_builddir -u top_srcdir -u COORDL_LIBRARY -u PYTHONPATH \
	/usr/bin/python3 -B -c '
import sys, coordl
with coordl.Loader(sys.argv[1], output="numpy", batch_size=4, out_size=32,
                   threads=1, cache_bytes=0) as ld:
    print(sum(len(labels) for _, labels in ld))
print([l.split()[-1] for l in open("/proc/self/maps") if "libcoordl" in l][0])
print(coordl.__file__)' "$W/data" 2>&1)
test_ok "the Python binding reads the 8 images" test "$(sed -n 1p <<<"$pyout")" = 8
test_ok "through the installed libcoordl.so.0" grep -q "^/usr/lib/.*/libcoordl\.so\.0" <<<"$(sed -n 2p <<<"$pyout")"
test_ok "from the installed package" grep -q '^/usr/lib/python3/dist-packages/coordl/' <<<"$(sed -n 3p <<<"$pyout")"
[ "$tap_failed" = 0 ] || diag "python: $pyout"

# 4. A throwaway cluster that loads the installed plugins sizes a job.
CLUSTER_PLUGIN_DIR=$pd
CLUSTER_GPUS=1
cluster_start 1
cluster_put_profile img image
id=$(cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap '
	env | grep -E "^SYNERGY_"
	while [ ! -e "'"$C"'/go" ]; do sleep 0.1; done')
test_ok "sbatch --synergy-profile=img accepted" test -n "$id"
test_ok "job starts" cluster_wait_state "$id" RUNNING 20
test_ok "job was sized to 2 CPUs" test "$(cluster_job_field "$id" NumCPUs)" = 2
test_ok "job was sized to 2G memory" test "$(cluster_job_min_mem "$id")" = 2G
comment=$(scontrol show job "$id" | sed -n 's/.*AdminComment=//p')
test_ok "AdminComment records the decision" grep -q "key=img cpus=2 mem=2048M cache=1024M" <<<"$comment"
test_ok "slurmctld loaded the installed job_submit_synergy.so" \
	grep -q " $pd/job_submit_synergy.so\$" "/proc/$cluster_ctld_pid/maps"
# Only this test's cluster loads the installed SPANK plugin by that path.
stepd_maps() { grep -l " $pd/spank_synergy.so\$" /proc/[0-9]*/maps 2>/dev/null | grep -q .; }
test_ok "slurmstepd loaded the installed spank_synergy.so" stepd_maps
stepd_node_maps() { grep -l " $pd/spank_synergy_node.so\$" /proc/[0-9]*/maps 2>/dev/null | grep -q .; }
test_ok "and the installed spank_synergy_node.so" stepd_node_maps
# slurmd runs the node side from its start.
slurmd_maps() {
	local p
	for p in $cluster_pids; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmd ] &&
			grep -q " $pd/$1\$" "/proc/$p/maps" && return 0
	done
	return 1
}
test_ok "slurmd loaded the installed spank_synergy.so" slurmd_maps spank_synergy.so
test_ok "and the installed spank_synergy_node.so" slurmd_maps spank_synergy_node.so
touch "$C/go"
st=$(cluster_wait_job "$id" 30)
test_ok "job completed" test "$st" = COMPLETED
test_ok "the job ran Synergy-active" grep -qx SYNERGY_ACTIVE=1 "$(cluster_out "$id")"
# srun (the client side) loads the installed spank_synergy.so, and not
# the node module.
srun -N1 -n1 sleep 4 >"$W/srun.out" 2>&1 &
spid=$!
srun_maps() { grep -q " $pd/spank_synergy.so\$" "/proc/$spid/maps" 2>/dev/null; }
cluster__wait 20 srun_maps && cp "/proc/$spid/maps" "$W/srun.maps"
test_ok "srun loaded the installed spank_synergy.so" grep -q " $pd/spank_synergy.so\$" "$W/srun.maps"
test_ok "but not the node module" bash -c "[ -s '$W/srun.maps' ] && ! grep -q spank_synergy_node '$W/srun.maps'"
wait "$spid"
rc=$?
test_ok "the srun step ran (status $rc)" test "$rc" = 0
[ "$rc" = 0 ] || sed 's/^/#   srun: /' "$W/srun.out"
cluster__wait 5 cluster_leftovers
test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
cluster_stop
test_ok "cluster torn down" cluster_gone

# 5. Purge: nothing of the packages is left.
# shellcheck disable=SC2086
pkg_dpkg --purge $PACKAGES >"$W/purge.log" 2>&1
rc=$?
installed=
test_ok "dpkg --purge removes the packages" test "$rc" = 0
[ "$rc" = 0 ] || tail -n 20 "$W/purge.log" | sed 's/^/#   /'
left=$(while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done <"$W/files")
test_ok "no file of theirs is left" test -z "$left"
[ -z "$left" ] || sed 's/^/#   left: /' <<<"$left"
test_ok "no directory of theirs is left" \
	test ! -e /usr/lib/python3/dist-packages/coordl -a ! -e "$ex" -a ! -e /run/synergyd
snapshot >"$W/after"
test_ok "plugin dir, /etc/slurm and systemd's links are as before" cmp -s "$W/before" "$W/after"
[ "$tap_failed" = 0 ] || diff "$W/before" "$W/after" | sed 's/^/#   /'
diag "whole test: $(($(date +%s) - t0)) s after the copy"
done_testing

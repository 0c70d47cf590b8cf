#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# cgroup-v2.sh: the cluster suites on cgroup v2, in a real kernel. This
# machine's kernel binds every controller to v1, so the suites run in a
# throwaway guest (tests/vm/vm-run: Debian's kernel under qemu TCG, the
# host's root shared read-only, cgroup2 at /sys/fs/cgroup) with
# CLUSTER_CGROUP=v2. Their TAP lines come back renumbered as this file's
# (tests/lib/suites.sh). The last test says the guest ran every suite to
# its end within the time limit.
#
# The suites, in order, one per line: FILE [VAR=VALUE]... (a file in
# tests/integration, then its environment). SYNERGY_VM_SUITES replaces the
# list (same format; ';' also separates suites), e.g. to try one:
#   SYNERGY_VM_SUITES='synergy-sized.sh' make check TESTS=tests/integration/cgroup-v2.sh
# Other knobs: SYNERGY_VM_TIMEOUT (seconds for the whole guest run, default
# 2400), SYNERGY_VM=off (skip this file), SYNERGY_VM_ROOT=DIR (the guest's
# root is DIR, a root file system of tools/build-slurm-rootfs, with its own
# Slurm: vm-run --root; tests/integration/slurm-versions.sh sets it),
# SYNERGY_VM_BIND='DIR...' (with SYNERGY_VM_ROOT: these directories of this
# machine are seen in the guest too, vm-run --bind; e.g. packages to
# install) and vm-run's (tests/vm/README).
# The default list is sized for CI's hour: 22.05's own layout (job_<id>
# under system.slice) for sizing and lending, and the live cache shrink.
# Harvest, cleanup, fallback, first-run profiling, trust and plain Slurm's
# own suites run on v2 with Slurm 26.05 in slurm-versions.sh (the release
# sites move to), and all of them on this machine's v1; add them here with
# SYNERGY_VM_SUITES=full.
vm_suites='
synergy-sized.sh
synergy-lending.sh
synergy-shrink.sh
'
vm_suites_full='
cluster-basic.sh CLUSTER_SYNERGY=0
cluster-limits.sh CLUSTER_SYNERGY=0
synergy-sized.sh
synergy-lending.sh
synergy-harvest.sh
synergy-cleanup.sh
synergy-fallback.sh
synergy-shrink.sh
synergy-trust.sh
'

. "${top_srcdir:?}/tests/lib/tap.sh"
. "$top_srcdir/tests/lib/suites.sh"
: "${top_builddir:?}"
suites=${SYNERGY_VM_SUITES:-$vm_suites}
[ "$suites" = full ] && suites=$vm_suites_full
suites=${suites//;/$'\n'}

# --in-guest: run the suites (we are the guest's command) and print one
# TAP stream without a plan; the host side adds the plan.
if [ "${1:-}" = --in-guest ]; then
	export CLUSTER_CGROUP=v2
	# Everything takes longer under TCG (a process start costs 50-300 ms):
	# give the cluster longer to come up, and poll Slurm less often so
	# that the polls leave the daemons some of the two CPUs.
	export CLUSTER_TIMEOUT=${CLUSTER_TIMEOUT:-120}
	export CLUSTER_POLL_MS=${CLUSTER_POLL_MS:-500}
	# The suites see the environment they would see on the host: none of
	# vm-run's or our own knobs (jobs inherit it; some suites grep it).
	for v in $(compgen -e | grep '^SYNERGY_VM'); do unset "$v"; done
	diag "guest: $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME"), $(slurmd -V 2>&1), uptime $(cut -d' ' -f1 /proc/uptime) s, cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
	suites_run "$suites"
	echo "#vm-done $tap_n $tap_failed"
	[ "$tap_failed" = 0 ]
	exit
fi

[ "${SYNERGY_VM:-}" = off ] && skip_all "SYNERGY_VM=off"
[ "$(id -u)" = 0 ] || skip_all "needs root (qemu exports / to the guest)"
command -v qemu-system-x86_64 >/dev/null ||
	skip_all "qemu-system-x86_64 not installed (tools/install-deps installs it)"
timeout=${SYNERGY_VM_TIMEOUT:-2400}
root=()
if [ -n "${SYNERGY_VM_ROOT:-}" ]; then
	[ -x "$SYNERGY_VM_ROOT/usr/sbin/slurmd" ] ||
		skip_all "SYNERGY_VM_ROOT=$SYNERGY_VM_ROOT: no root file system with Slurm there"
	root=(--root "$SYNERGY_VM_ROOT")
	for d in ${SYNERGY_VM_BIND:-}; do
		root+=(--bind "$d")
	done
fi

t0=$SECONDS
done_line=
while IFS= read -r line; do
	case "$line" in
	"ok "[0-9]* | "not ok "[0-9]*)
		tap_n=$((tap_n + 1))
		case "$line" in "not ok "*) tap_failed=$((tap_failed + 1)) ;; esac
		echo "$line" ;;
	"#vm-done "*) done_line=${line#\#vm-done } ;;
	"#vm-rc "*) rc=${line#\#vm-rc } ;;
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done < <(
	SYNERGY_VM_SUITES=$suites "$top_srcdir/tests/vm/vm-run" -t "$timeout" "${root[@]}" -- \
		bash "$top_srcdir/tests/integration/cgroup-v2.sh" --in-guest 2>&1
	echo "#vm-rc $?"
)
diag "guest boot, suites and teardown: $((SECONDS - t0)) s"
test_ok "the guest ran every suite to its end (vm-run status ${rc:-none})" \
	test -n "$done_line" -a "${rc:-}" != 124 -a "${rc:-}" != 125
done_testing

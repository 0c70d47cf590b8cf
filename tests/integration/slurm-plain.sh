#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# slurm-plain.sh: the cluster suites on Slurm's default cgroup layout. Debian's
# slurmd is built with multiple-slurmd, whose node cgroups are
# /slurm_<NodeName>; a slurmd built without it (SchedMD's packages, most
# sites) uses /slurm, and in Slurm 22.05 nothing in cgroup.conf changes that.
# This file runs suites on such a Slurm: the installed version, built from
# Debian's source without multiple-slurmd by tools/build-slurm-plain
# (tests/run-all builds it first, as root). Their TAP lines come back
# renumbered as this file's (tests/lib/suites.sh), named "slurm-plain/...".
#
# The suites, one per line: FILE [VAR=VALUE]... (all single-node: such a
# slurmd is alone on its host). SYNERGY_PLAIN_SUITES replaces the list
# (';' also separates suites). SYNERGY_PLAIN_SLURM names the build's prefix
# (default: tools/build-slurm-plain's), or "off" to skip this file.
plain_suites='
cluster-limits.sh CLUSTER_SYNERGY=0
synergy-sized.sh
synergy-lending.sh
synergy-live.sh
synergy-harvest.sh
synergy-cleanup.sh
synergy-fallback.sh
synergy-group.sh
'

. "${top_srcdir:?}/tests/lib/tap.sh"
. "$top_srcdir/tests/lib/suites.sh"
: "${top_builddir:?}"
suites=${SYNERGY_PLAIN_SUITES:-$plain_suites}
suites=${suites//;/$'\n'}

[ "${SYNERGY_PLAIN_SLURM:-}" = off ] && skip_all "SYNERGY_PLAIN_SLURM=off"
[ "$(id -u)" = 0 ] || skip_all "needs root (Slurm daemons, cgroups)"
if [ -n "${SYNERGY_PLAIN_SLURM:-}" ]; then
	prefix=$SYNERGY_PLAIN_SLURM
	[ -x "$prefix/sbin/slurmd" ] || skip_all "SYNERGY_PLAIN_SLURM=$prefix: no sbin/slurmd there"
else
	prefix=$("$top_srcdir/tools/build-slurm-plain" --check) ||
		skip_all "no Slurm built without multiple-slurmd (run tools/build-slurm-plain as root)"
fi
[ -d /sys/fs/cgroup/cpuset ] && [ -d /sys/fs/cgroup/memory ] ||
	skip_all "needs cgroup v1 cpuset and memory controllers (the v2 layouts run in cgroup-v2.sh)"
export CLUSTER_SLURM=$prefix CLUSTER_CGROUP=v1
# The suites see the environment they would see on their own (jobs inherit
# it; some suites grep it): none of this file's knobs.
for v in $(compgen -e | grep '^SYNERGY_PLAIN'); do unset "$v"; done
diag "Slurm without multiple-slurmd: $prefix ($("$prefix/sbin/slurmd" -V 2>&1))"

SUITES_PREFIX=slurm-plain/ suites_run "$suites"
# Nothing of the layout is left: the node cgroups are removed with the
# last cluster (each suite's teardown).
left=
for d in /sys/fs/cgroup/*/slurm; do
	[ ! -d "$d" ] || left="$left $d"
done
test_ok "no /slurm node cgroup left after the suites${left:+:$left}" test -z "$left"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lend-bench.sh: the cost of one idle-core lending event on a live node.
# Starts a throwaway cluster with LendIdleCores=yes, runs one Synergy job
# that borrows the idle CPUs, and runs plugin/lend-bench against that node:
# first rebalances that change nothing (the fixed cost every job start and
# end pays), then rebalances that lend a CPU taken back just before (cgroup
# writes and re-pinning included). Prints a table of min/median/max.
#
# Usage (root, from a build dir): top_srcdir=.. top_builddir=$PWD \
#   bash ../plugin/bench/lend-bench.sh [N]
n=${1:-200}
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ "$(nproc)" -ge 2 ] || { echo "needs at least 2 CPUs"; exit 0; }
[ -x "$top_builddir/plugin/lend-bench" ] || { echo "build plugin/lend-bench first"; exit 1; }
cluster_start 1
printf 'LendIdleCores=yes\nLendStateDir=%s/lend\n' "$C" >>"$C/etc/synergy.conf"
cluster_put_profile img image
node=${CLUSTER_TAG}n1
id=$(cluster_sbatch --gres=gpu:1 -c 1 --synergy-profile=img --wrap \
	'while [ ! -e "'"$C"'/stop" ]; do sleep 0.2; done')
cluster_wait_state "$id" RUNNING 20 || { echo "job did not start"; exit 1; }
cluster__wait 10 grep -q "synergy: lend job=$id borrows" "$C/log/slurmd.$node.log"
sleep 1
"$top_builddir/plugin/lend-bench" "$C/etc/synergy.conf" "$node" "$n"
"$top_builddir/plugin/lend-bench" "$C/etc/synergy.conf" "$node" "$n" "$id"
touch "$C/stop"
cluster_wait_job "$id" 30 >/dev/null

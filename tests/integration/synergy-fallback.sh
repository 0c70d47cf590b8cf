#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-fallback.sh: jobs that Synergy must leave GPU-proportional, and
# options it must refuse. A key without a profile runs at the partition's
# DefCpuPerGPU/DefMemPerGPU and queues a profiling request; --synergy=off
# and jobs without a key are untouched; a corrupt profile never fails a
# job; malformed options (flag or environment twin) are refused with a
# message that says what is wrong. ProfileInPlace=no: the key's first job
# does not profile itself here (synergy-firstrun.sh tests that path).
CLUSTER_SYNERGY_CONF_EXTRA="ProfileInPlace=no"
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_start 1
cluster_put_profile img image
printf '{ "schema": 1, "key": "broken", "cpus": [' >"$C/store/broken.json"

# prop ID: the job ran GPU-proportional (1 CPU, 512M per GPU here).
prop() {
	cluster_job_tres "$1" | grep -q '^cpu=1,mem=512M,' && return 0
	diag "job $1: TRES=$(cluster_job_tres "$1")"
	return 1
}
active0() { grep -qx SYNERGY_ACTIVE=0 "$(cluster_out "$1")"; }
script='env | grep -E "^SYNERGY_"; grep -E ":cpuset:|^0::" /proc/self/cgroup'

# Submit everything first, so that the jobs run side by side.
j_new=$(cluster_sbatch --gres=gpu:1 --synergy-profile=newmodel --wrap "$script")
j_off=$(cluster_sbatch --gres=gpu:1 --synergy-profile=img --synergy=off --wrap "$script")
j_offenv=$(SYNERGY=off cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap "$script")
j_twin=$(SYNERGY_PROFILE=img cluster_sbatch --gres=gpu:1 --wrap "$script")
j_nokey=$(cluster_sbatch --gres=gpu:1 --wrap "$script")
j_broken=$(cluster_sbatch --gres=gpu:1 --synergy-profile=broken --wrap "$script")
for id in $j_new $j_off $j_offenv $j_twin $j_nokey $j_broken; do
	cluster_wait_job "$id" 40 >/dev/null
done

id=$j_new
test_ok "no profile: job completed" test "$(cluster_job_state "$id")" = COMPLETED
test_ok "no profile: GPU-proportional" prop "$id"
test_ok "no profile: loader told SYNERGY_ACTIVE=0" active0 "$id"
test_ok "no profile: not moved into a synergy cgroup" \
	bash -c "! grep -E ':cpuset:|^0::' '$(cluster_out "$id")' | grep -q synergy"
test_ok "no profile: a profiling request was queued" grep -qx key=newmodel "$C/requests/newmodel.req"
test_ok "no profile: AdminComment says so" \
	bash -c "scontrol show job $id | grep -q 'AdminComment=synergy: key=newmodel no profile'"

id=$j_off
test_ok "--synergy=off: job completed" test "$(cluster_job_state "$id")" = COMPLETED
test_ok "--synergy=off: untouched (GPU-proportional)" prop "$id"
test_ok "--synergy=off: SYNERGY_ACTIVE=0" active0 "$id"
test_ok "SYNERGY=off twin: untouched" prop "$j_offenv"
test_ok "SYNERGY_PROFILE twin: job sized like the flag" \
	bash -c "scontrol -o show job $j_twin | grep -q 'TRES=cpu=1,mem=2G,'"

id=$j_nokey
test_ok "no key: untouched" prop "$id"
test_ok "no key: no synergy AdminComment" \
	bash -c "! scontrol show job $id | grep -q AdminComment=synergy"

id=$j_broken
test_ok "corrupt profile: job completed" test "$(cluster_job_state "$id")" = COMPLETED
test_ok "corrupt profile: GPU-proportional" prop "$id"
test_ok "corrupt profile: logged by slurmctld" grep -q "synergy: profile broken" "$C/log/slurmctld.log"

# A profile store that cannot be read at all never fails a job either.
mv "$C/store" "$C/store.away"
j_nostore=$(cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap "$script")
st=$(cluster_wait_job "$j_nostore" 40)
mv "$C/store.away" "$C/store"
test_ok "store unreadable: job completed ($st)" test "$st" = COMPLETED
test_ok "store unreadable: GPU-proportional" prop "$j_nostore"

# rejected WANT ARGS...: sbatch refuses and says why; no job is created.
rejected() { cluster_refused "$@"; }
test_ok "--synergy-profile with a path is refused" \
	rejected "'a/b' is not a valid profile key" --synergy-profile=a/b
test_ok "--synergy=maybe is refused" rejected "'maybe' is not on or off" --synergy=maybe
test_ok "SYNERGY_PROFILE twin is checked too" \
	env SYNERGY_PROFILE='x y' bash -c "$(declare -f rejected cluster_refused diag); C='$C'; rejected \"'x y' is not a valid profile key\""
test_ok "--synergy-profile= (empty) is refused" rejected "not a valid profile key" --synergy-profile=

# A node whose cgroups the plugin cannot use (here: told Slurm runs the
# cgroup version this host does not mount) logs one clear line and runs
# Synergy jobs GPU-proportional; synergy-lend --check says why.
node=${CLUSTER_TAG}n1
lend=$top_builddir/plugin/synergy-lend
test_ok "synergy-lend --check passes on the node" \
	bash -c "'$lend' --check -c '$C/etc/synergy.conf' -N $node >'$C/check.ok' 2>&1"
if [ "$CLUSTER_CGROUP" = v2 ]; then
	have=v2 other=v1 cause="cgroup v1: no cpuset hierarchy at /sys/fs/cgroup/cpuset"
else
	have=v1 other=v2 cause="cgroup v2: cannot read /sys/fs/cgroup/cgroup.controllers"
fi
test_ok "it names the cgroup version ($have) and the verdict" \
	bash -c "grep -q 'cgroup $have at /sys/fs/cgroup' '$C/check.ok' && grep -q 'would be sized and placed' '$C/check.ok'"
test_ok "it says grants are sealed with munge by SlurmUser" \
	grep -q "^ok    grants       sealed with munge at $C/run/munge.socket by SlurmUser" "$C/check.ok"
# Issue 26: the layout it found, and a slice the node does not use.
if [ "$CLUSTER_CGROUP" = v2 ]; then
	scope=$(cluster_node_cgroup "$node")
	test_ok "v2: it names the node's scope and where slurmd runs" \
		bash -c "grep -q '^ok    node cgroup  ${scope#/sys/fs/cgroup}\$' '$C/check.ok' &&
			grep -q '^info  slurmd       pid [0-9]* in ${scope#/sys/fs/cgroup}/slurmd: its scope' '$C/check.ok'"
	{ cat "$C/etc/cgroup.conf"; echo CgroupSlice=nowhere.slice; } >"$C/etc/cgroup-slice.conf"
	{ cat "$C/etc/synergy.conf"; echo LendIdleCores=yes; echo "CgroupConf=$C/etc/cgroup-slice.conf"; } \
		>"$C/etc/synergy-slice.conf"
	test_ok "v2: a CgroupSlice the node does not use fails the check (lending)" \
		bash -c "! '$lend' --check -c '$C/etc/synergy-slice.conf' -N $node >'$C/check.slice' 2>&1 &&
			grep -q '^info  slice        nowhere.slice (cgroup.conf' '$C/check.slice' &&
			grep -q '^FAIL  node cgroup  slurmd runs, but none of /nowhere.slice/${node}_slurmstepd.scope.*slurmd.s: ${scope#/sys/fs/cgroup})' '$C/check.slice'"
	[ "$tap_failed" = 0 ] || diag "$(cat "$C/check.ok" "$C/check.slice" 2>/dev/null)"
fi
# A slurm.conf whose munged is not there: no grant can be sealed or opened.
sed "s|socket=[^,]*|socket=$C/run/nowhere.socket|" "$SLURM_CONF" >"$C/etc/slurm-nomunge.conf"
test_ok "without munged, synergy-lend --check fails on grants" \
	bash -c "! SLURM_CONF='$C/etc/slurm-nomunge.conf' '$lend' --check -c '$C/etc/synergy.conf' \
		-N $node >'$C/check.nomunge' 2>&1 &&
		grep -q '^FAIL  grants .*nowhere.socket' '$C/check.nomunge'"
printf 'CgroupPlugin=cgroup/%s\n' "$other" >"$C/etc/cgroup-other.conf"
echo "CgroupConf=$C/etc/cgroup-other.conf" >>"$C/etc/synergy.conf"
j_nocg=$(cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap "$script")
st=$(cluster_wait_job "$j_nocg" 40)
test_ok "unusable cgroups: job completed ($st)" test "$st" = COMPLETED
test_ok "unusable cgroups: loader told SYNERGY_ACTIVE=0" active0 "$j_nocg"
test_ok "unusable cgroups: one clear log line names the cause" \
	grep -q "synergy: $cause.*run GPU-proportional" \
	"$C/log/slurmd.$node.log"
test_ok "synergy-lend --check fails and says why" \
	bash -c "! '$lend' --check -c '$C/etc/synergy.conf' -N $node >'$C/check.bad' 2>&1 &&
		grep -q '^FAIL  cgroups ' '$C/check.bad' && grep -q 'would run GPU-proportional' '$C/check.bad'"
[ "$tap_failed" = 0 ] || diag "$(cat "$C/check.ok" "$C/check.bad" 2>/dev/null)"
sed -i '/^CgroupConf=/d' "$C/etc/synergy.conf"

cluster__wait 5 cluster_leftovers
test_ok "no synergy cgroup or cache file left" cluster_leftovers
done_testing

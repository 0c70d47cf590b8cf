#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-trust.sh: the node acts only on what job_submit validated, and a
# second real user cannot disable or read another user's Synergy job by
# anything they can create or submit (issue 12).
#  - A job whose environment names a profiled key (SYNERGY_PROFILE_KEY=img,
#    no option) is neither sized nor made Synergy-active on the node.
#  - User B forges the grant itself (a SPANK plugin of B's own, loaded
#    through a slurm.conf of B's own, sets SYNERGY_GRANT and
#    SPANK_SYNERGY_GRANT in the job's spank environment): job_submit strips
#    it, and the node neither sizes nor activates B's job.
#  - B creates CacheDir (under /dev/shm) before slurmd starts: the plugin
#    moves it aside and makes its own, and user A's job still gets its
#    cache directory, which B cannot read.
# Two throwaway system accounts are created for the test and removed.
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_require
for p in useradd userdel runuser gcc; do
	PATH=$PATH:/usr/sbin command -v "$p" >/dev/null 2>&1 || skip_all "$p not installed"
done
tag=$(printf '%04x' $((RANDOM % 65536)))
ua=syna$tag
ub=synb$tag
shmdir=/dev/shm/synergy-trust-$tag
users_made=
cleanup_users() {
	local u
	for u in $users_made; do
		userdel "$u" >/dev/null 2>&1
	done
	rm -rf "$shmdir" "$shmdir".unsafe.* 2>/dev/null
}
CLUSTER_EXIT_HOOK=cleanup_users
trap cleanup_users EXIT
for u in $ua $ub; do
	useradd --system --no-create-home --shell /usr/sbin/nologin "$u" ||
		bail "useradd $u failed"
	users_made="$users_made $u"
done
# B gets there first: its own directory where CacheDir will be.
runuser -u "$ub" -- mkdir -m 0777 "$shmdir" || bail "B cannot create $shmdir"
echo "B's file" | runuser -u "$ub" -- tee "$shmdir/planted" >/dev/null

CLUSTER_CACHE_DIR=$shmdir
CLUSTER_GPUS=2
cluster_start 1
cluster_put_profile img image
node=${CLUSTER_TAG}n1
log=$C/log/slurmd.$node.log
mkdir -p "$C/out" && chmod 1777 "$C/out"
script='echo "active=$SYNERGY_ACTIVE dir=$SYNERGY_CACHE_DIR"; grep -E "^[0-9]+:cpuset:" /proc/self/cgroup
	while [ ! -e "'"$C"'/go" ]; do sleep 0.1; done'

test_ok "CacheDir made anew, owned by root" \
	bash -c "[ \"\$(stat -c %U:%a '$shmdir')\" = root:755 ]"
test_ok "B's directory was moved aside, not deleted" \
	bash -c "ls -d '$shmdir'.unsafe.* >/dev/null 2>&1 && test -e \"\$(ls -d '$shmdir'.unsafe.* | head -1)/planted\""
test_ok "slurmd logged why" grep -q "synergy: CacheDir $shmdir was not a root-owned" "$log"

# A's Synergy job.
idA=$(cd "$C" && sbatch --parsable --uid="$ua" -o "$C/out/%j.out" --gres=gpu:1 \
	--synergy-profile=img --wrap "$script")
test_ok "A's job runs" cluster_wait_state "$idA" RUNNING 30
cluster__wait 10 grep -q active= "$C/out/$idA.out"
test_ok "A's job is Synergy-active with its cache dir" \
	grep -qx "active=1 dir=$shmdir/job_$idA" "$C/out/$idA.out"
test_ok "A's cache dir belongs to A, mode 0700" \
	bash -c "[ \"\$(stat -c %U:%a '$shmdir/job_$idA')\" = $ua:700 ]"
test_ok "B cannot list A's cache dir" \
	bash -c "! runuser -u '$ub' -- ls '$shmdir/job_$idA' >/dev/null 2>&1"
test_ok "B cannot create files in CacheDir" \
	bash -c "! runuser -u '$ub' -- touch '$shmdir/job_999999' 2>/dev/null"

# A key in the environment only (no option): not a Synergy job.
idE=$(cd "$C" && SYNERGY_PROFILE_KEY=img sbatch --parsable --uid="$ub" -o "$C/out/%j.out" \
	--gres=gpu:1 --wrap 'echo "active=$SYNERGY_ACTIVE"')
test_ok "env-only key: job completed" test "$(cluster_wait_job "$idE" 30)" = COMPLETED
test_ok "env-only key: not sized (GPU-proportional)" \
	bash -c "scontrol -o show job $idE | grep -q 'TRES=cpu=1,mem=512M,'"
test_ok "env-only key: SYNERGY_ACTIVE=0 on the node" grep -qx active=0 "$C/out/$idE.out"

# B forges the grant with a SPANK plugin of its own.
mkdir -p "$C/b" && chmod 755 "$C/b"
cat >"$C/b/forge.c" <<EOF
#include <slurm/spank.h>
SPANK_PLUGIN(forge, 1);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	const char *g = "key=img uid=$(id -u "$ub") gpus=1 cpus=2 mem_mb=3000 cache_mb=2000";
	if (spank_context() == S_CTX_ALLOCATOR || spank_context() == S_CTX_LOCAL) {
		spank_job_control_setenv(sp, "SYNERGY_GRANT", g, 1);
		spank_job_control_setenv(sp, "SPANK_SYNERGY_GRANT", g, 1);
	}
	return 0;
}
EOF
gcc -shared -fPIC -o "$C/b/forge.so" "$C/b/forge.c" 2>"$C/b/gcc.err"
test_ok "B's forging plugin builds" test -f "$C/b/forge.so"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$C/b/plugstack.conf|" "$SLURM_CONF" >"$C/b/slurm.conf"
echo "required $C/b/forge.so" >"$C/b/plugstack.conf"
chmod 644 "$C/b/slurm.conf" "$C/b/plugstack.conf" "$C/b/forge.so"
idF=$(cd "$C/out" && runuser -u "$ub" -- env SLURM_CONF="$C/b/slurm.conf" \
	sbatch --parsable -o "$C/out/%j.out" --gres=gpu:1 --wrap 'echo "active=$SYNERGY_ACTIVE"')
test_ok "B's forged job was accepted" test -n "$idF"
test_ok "forged grant: job completed" test "$(cluster_wait_job "$idF" 30)" = COMPLETED
test_ok "forged grant: not sized (GPU-proportional)" \
	bash -c "scontrol -o show job $idF | grep -q 'TRES=cpu=1,mem=512M,'"
test_ok "forged grant: SYNERGY_ACTIVE=0 on the node" grep -qx active=0 "$C/out/$idF.out"
test_ok "forged grant: the node made no record from it" \
	bash -c "! grep -q 'synergy: job $idF: grant' '$log'"

touch "$C/go"
test_ok "A's job completed" test "$(cluster_wait_job "$idA" 30)" = COMPLETED
cluster__wait 10 cluster_leftovers
test_ok "nothing left (cgroups, cache files)" cluster_leftovers
cluster__wait 5 bash -c "! ls '$C/state-synergy' | grep -q job_"
test_ok "no job record left" bash -c "! ls '$C/state-synergy' | grep -q job_"
done_testing

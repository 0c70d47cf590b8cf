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
#  - B creates CacheDir (under /dev/shm) before slurmd starts, and keeps
#    recreating it while slurmd starts: the plugin replaces it atomically
#    with its own, and user A's job still gets its cache directory, which B
#    cannot read.
#  - B hands a forged grant to its job's first srun (salloc + srun, with
#    SLURM_SPANK_SYNERGY_GRANT and with a SPANK plugin of its own in srun,
#    which puts it into the step launch's SPANK environment): without a
#    grant job_submit sealed (grantauth.h) the node refuses it, and the step
#    runs on exactly what Slurm allotted (issue 24).
#  - B holds a lock on every file and directory of Synergy's it can open
#    (ProfileStore, RequestDir, CacheDir, GroupDir) while A's first job of
#    a new key starts, whose prolog renews its claim: it still starts and
#    profiles in place (issue 24: B could flock the claims directory).
# TRUST_PROLOG_ALLOC=1 runs it all with PrologFlags=Alloc (the prolog at
# allocation, its SPANK environment the job's record at slurmctld).
# Two throwaway system accounts are created for the test and removed.
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_require
for p in useradd userdel runuser gcc; do
	PATH=$PATH:/usr/sbin command -v "$p" >/dev/null 2>&1 || skip_all "$p not installed"
done
[ "${TRUST_PROLOG_ALLOC:-0}" = 1 ] && CLUSTER_SLURM_CONF_EXTRA="PrologFlags=Alloc"
tag=$(printf '%04x' $((RANDOM % 65536)))
ua=syna$tag
ub=synb$tag
shmdir=/dev/shm/synergy-trust-$tag
users_made=
b_pids=
cleanup_users() {
	local u p
	for p in $b_pids; do
		kill -KILL "$p" 2>/dev/null
	done
	b_pids=
	pkill -KILL -u "$ub" 2>/dev/null
	for u in $users_made; do
		userdel "$u" >/dev/null 2>&1
	done
	rm -rf "$shmdir" "$shmdir".unsafe.* "${racestop:-}" 2>/dev/null
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
# And keeps making it again, in case root moves it aside, until told to stop.
racestop=/tmp/synergy-trust-$tag.stop
runuser -u "$ub" -- bash -c "while [ ! -e $racestop ]; do mkdir -m 0777 $shmdir 2>/dev/null; done" &
b_pids="$b_pids $!"
disown "$!"

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

# B hands a forged grant to its job's first srun, as the prolog's SPANK
# environment may be the step launch's (no PrologFlags=Alloc). The grant
# claims two CPUs, 3000 MB and the node's own record fields.
forged="key=img uid=$(id -u "$ub") gpus=1 cpus=2 mem_mb=3000 cache_mb=2000 allotted=0-1 alloc_mem_mb=3000"
stepprobe='echo "job=$SLURM_JOB_ID active=$SYNERGY_ACTIVE"
	echo "cpus=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
forged_step() { # NAME: check the output of a forged step in $out
	local job cpus
	job=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' <<<"$out")
	cpus=$(sed -n 's/^cpus=//p' <<<"$out")
	diag "$1: $(tr '\n' ' ' <<<"$out")"
	test_ok "$1: the step ran" test -n "$job"
	test_ok "$1: SYNERGY_ACTIVE=0" grep -q "active=0" <<<"$out"
	test_ok "$1: on the one CPU Slurm allotted ($cpus)" \
		bash -c "[ -n '$cpus' ] && ! grep -q '[-,]' <<<'$cpus'"
	test_ok "$1: the node made no record from it" \
		bash -c "! grep -q 'synergy: job ${job:-0}: grant key=' '$log'"
	if grep -q "synergy: job ${job:-0}: grant refused" "$log"; then
		diag "$1: it reached the prolog and was refused: $(grep "synergy: job ${job:-0}: grant refused" "$log" | head -1)"
	else
		diag "$1: it did not reach the prolog"
	fi
}
out=$(cd "$C/out" && timeout 90 runuser -u "$ub" -- env SLURM_SPANK_SYNERGY_GRANT="$forged" \
	salloc -Q --gres=gpu:1 srun bash -c "$stepprobe" 2>&1)
forged_step "SLURM_SPANK_SYNERGY_GRANT=... salloc + srun"
out=$(cd "$C/out" && timeout 90 runuser -u "$ub" -- env SLURM_CONF="$C/b/slurm.conf" \
	salloc -Q --gres=gpu:1 srun bash -c "$stepprobe" 2>&1)
forged_step "salloc + srun with B's forging SPANK plugin"
out=$(cd "$C/out" && timeout 90 runuser -u "$ub" -- env SLURM_SPANK_SYNERGY_GRANT="$forged" \
	srun --gres=gpu:1 bash -c "$stepprobe" 2>&1)
forged_step "SLURM_SPANK_SYNERGY_GRANT=... srun"

# B holds every lock it can take on Synergy's files and directories, the
# claims directory included once a first job made it.
idW=$(cd "$C" && sbatch --parsable --uid="$ua" -o "$C/out/%j.out" --gres=gpu:1 \
	--synergy-profile=warm --wrap true)
cluster_wait_job "$idW" 60 >/dev/null
test_ok "a first job made the claims directory" test -d "$C/store/claims"
locked=0
while IFS= read -r f; do
	runuser -u "$ub" -- flock -n "$f" sleep 600 >/dev/null 2>&1 &
	b_pids="$b_pids $!"
	disown "$!"
	locked=$((locked + 1))
done < <(find "$C/store" "$C/requests" "$shmdir" "$C/groups" -maxdepth 3 2>/dev/null)
sleep 1
diag "B tried to lock $locked paths; holds $(pgrep -u "$ub" -c -x flock 2>/dev/null || echo 0)"
test_ok "B cannot open the claims directory" \
	bash -c "! runuser -u '$ub' -- ls '$C/store/claims' >/dev/null 2>&1"
idP=$(cd "$C" && sbatch --parsable --uid="$ua" -o "$C/out/%j.out" --gres=gpu:1 \
	--synergy-profile=fresh --wrap 'echo "active=$SYNERGY_ACTIVE mode=$SYNERGY_PROFILE_MODE"')
test_ok "with B's locks held, A's first job of a new key starts and completes" \
	test "$(cluster_wait_job "$idP" 60)" = COMPLETED
test_ok "its prolog renewed its claim: it profiled in place" \
	grep -q "synergy: job $idP: grant key=fresh .* profiling in place" "$log"

touch "$racestop"
touch "$C/go"
test_ok "A's job completed" test "$(cluster_wait_job "$idA" 30)" = COMPLETED
cluster__wait 10 cluster_leftovers
test_ok "nothing left (cgroups, cache files)" cluster_leftovers
cluster__wait 5 bash -c "! ls '$C/state-synergy' | grep -q job_"
test_ok "no job record left" bash -c "! ls '$C/state-synergy' | grep -q job_"
done_testing

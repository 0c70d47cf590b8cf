#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-group.sh: coordinated prep from Slurm (issue 15). The tasks of a
# job array of 4 with a Synergy profile, on one node at once:
#  - every task gets the same SYNERGY_GROUP (u<uid>-a<array job id>) and a
#    SYNERGY_GROUP_DIR that exists, belongs to the user and has mode 0700;
#  - their loaders (bench/coordl-bench, one per task) really form one group:
#    each survivor's stats show batches it received from the others, and
#    together they prepared each batch about once;
#  - scancel of one task mid-run leaves the others running to the end;
#  - AdminComment says "group=array", the node logs each task joining;
#  - afterwards nothing is left: the group directory, /dev/shm segments,
#    cgroups, cache files, job records.
# An array whose key has no profile: the task that profiles it in place
# stays out, the others form the group without a profile.
# Two users naming the same --synergy-group get two groups, each in its own
# directory the other cannot enter; hostile --synergy-group values are
# refused at submit with a message saying why, and no job is created.
# The node has 2 real cores and 4 fake GPUs: the partition lets up to 4
# jobs share a core (OverSubscribe=FORCE:4) and each task asks for 1 core
# and 400 MB itself (Synergy keeps an explicit request; the task is still
# a Synergy job on the node). synergy.conf sets GroupStagingMB=64 and
# GroupWindow=32, which every member gets.
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_require
for p in useradd userdel runuser; do
	PATH=$PATH:/usr/sbin command -v "$p" >/dev/null 2>&1 || skip_all "$p not installed"
done
bench=$top_builddir/bench/coordl-bench
gen=$top_builddir/tools/coordl-datagen
[ -x "$bench" ] && [ -x "$gen" ] || bail "build bench/coordl-bench and tools/coordl-datagen first"

tag=$(printf '%04x' $((RANDOM % 65536)))
ua=synga$tag
ub=syngb$tag
users_made=
cleanup_users() {
	local u
	for u in $users_made; do
		userdel "$u" >/dev/null 2>&1
	done
}
CLUSTER_EXIT_HOOK=cleanup_users
trap cleanup_users EXIT
for u in $ua $ub; do
	useradd --system --no-create-home --shell /usr/sbin/nologin "$u" ||
		bail "useradd $u failed"
	users_made="$users_made $u"
done

CLUSTER_GPUS=4
CLUSTER_PARTITION_EXTRA="OverSubscribe=FORCE:4"
CLUSTER_SYNERGY_CONF_EXTRA="GroupStagingMB=64
GroupWindow=32"
cluster_start 1
cluster_put_profile img image
node=${CLUSTER_TAG}n1
log=$C/log/slurmd.$node.log
gdir=$(sed -n 's/^GroupDir=//p' "$C/etc/synergy.conf")
[ -n "$gdir" ] || bail "synergy.conf names no GroupDir"
"$gen" --out "$C/data" --classes 4 --images 320 --seed 5 --width-range 96-160 >/dev/null ||
	bail "coordl-datagen failed"
mkdir -p "$C/out" && chmod 1777 "$C/out"

# The array: each task reports what the plugin told it, then trains 3
# epochs of 20 batches (batch 16) behind an emulated GPU of 160 images/s.
id=$(cd "$C" && sbatch --parsable -o "$C/out/%A_%a.out" --array=0-3 --gres=gpu:1 \
	--cpus-per-task=1 --mem=400M --synergy-profile=img --wrap "
	echo \"active=\$SYNERGY_ACTIVE group=\$SYNERGY_GROUP dir=\$SYNERGY_GROUP_DIR\"
	echo \"bounds=\$SYNERGY_GROUP_BYTES/\$SYNERGY_GROUP_WINDOW\"
	stat -c 'dirstat=%U:%a' \"\$SYNERGY_GROUP_DIR\"
	exec $bench -e 3 -b 16 -s 64 -c 0 -g 160 --seed 0 $C/data 2>&1")
id=${id%%;*}
test_ok "sbatch --array=0-3 --synergy-profile=img accepted" test -n "$id"
all_running() {
	local t
	for t in 0 1 2 3; do
		[ "$(cluster_job_state "${id}_$t")" = RUNNING ] || return 1
	done
}
test_ok "all 4 tasks run at once on one node" cluster__wait 60 all_running
comment=$(scontrol show job "${id}_0" | sed -n 's/.*AdminComment=//p')
diag "AdminComment: $comment"
test_ok "AdminComment says the tasks join their array's group" grep -q "group=array" <<<"$comment"

out() { echo "$C/out/${id}_$1.out"; }
# Cancel task 1 once its first epoch is done (the group has formed).
cluster__wait 60 grep -qE '^ +0 ' "$(out 1)"
test_ok "task 1 trained its first epoch" grep -qE '^ +0 ' "$(out 1)"
scancel "${id}_1"
for t in 0 2 3; do
	st=$(cluster_wait_job "${id}_$t" 120)
	test_ok "task $t ran to the end after task 1 was cancelled ($st)" test "$st" = COMPLETED
done
st=$(cluster_wait_job "${id}_1" 30)
test_ok "task 1 was cancelled ($st)" test "$st" = CANCELLED
for t in 0 1 2 3; do
	sed "s/^/#   task $t: /" "$(out "$t")" 2>/dev/null
done

group=u0-a$id
for t in 0 1 2 3; do
	test_ok "task $t: Synergy-active in group $group, in its directory" \
		grep -qx "active=1 group=$group dir=$gdir/$node.group_$group" "$(out "$t")"
	test_ok "task $t: the directory existed, the user's (root), mode 0700" \
		grep -qx "dirstat=root:700" "$(out "$t")"
	test_ok "task $t: GroupStagingMB and GroupWindow of synergy.conf" \
		grep -qx "bounds=64M/32" "$(out "$t")"
done
# The members' loaders formed one group: each survivor took batches from
# the staging area, some of them prepared by the others.
received() { awk '/^# group: batches prepared/ { print $7 + 0 }' "$(out "$1")"; }
for t in 0 2 3; do
	r=$(received "$t")
	test_ok "task $t received batches the group prepared (${r:-none})" \
		awk -v r="${r:-0}" 'BEGIN { exit !(r > 0) }'
	test_ok "task $t trained 3 epochs" test "$(grep -cE '^ +[0-2] ' "$(out "$t")")" = 3
done
# 3 epochs of 20 batches: prepared once for the group, the survivors did
# at most those 60 (3 x 60 had each prepared its own), give or take a
# batch redone after task 1 left mid-batch.
prep=$(for t in 0 2 3; do awk '/^# group: batches prepared/ { print $5 + 0 }' "$(out "$t")"; done |
	awk '{ s += $1 } END { printf "%.2f", s }')
test_ok "the survivors prepared each batch once for the group ($prep of 60 batches)" \
	awk -v p="$prep" 'BEGIN { exit !(p > 0 && p <= 63) }'
test_ok "the node logged each task joining the group" \
	test "$(grep -c "joined group $group on node $node" "$log")" = 4

test_ok "the group's directory is gone after its last task" \
	cluster__wait 20 test ! -e "$gdir/$node.group_$group"
test_ok "no staging segment left in /dev/shm" \
	bash -c "! ls /dev/shm | grep -q 'coordl-0-grp-$group-'"
test_ok "no staging file left in GroupDir" bash -c "[ -z \"\$(ls -A '$gdir')\" ]"
cluster__wait 20 cluster_leftovers >/dev/null
test_ok "no synergy or job cgroup, no cache file left" cluster_leftovers
test_ok "no job record left" bash -c "! ls '$C/state-synergy' | grep -q job_"

# An array whose key has no profile yet: one task takes the claim on
# profiling the key in place and stays out of the group (batches others
# prepared would count as its own throughput); the others run without a
# profile at their allotment and still form the group.
idF=$(cd "$C" && sbatch --parsable -o "$C/out/%A_%a.out" --array=0-2 --gres=gpu:1 \
	--synergy-profile=fresh --wrap "
	echo \"active=\$SYNERGY_ACTIVE group=\$SYNERGY_GROUP profiling=\${SYNERGY_PROFILE_MODE:-0}\"
	exec $bench -e 3 -b 16 -s 64 -c 0 -g 160 --seed 0 $C/data 2>&1")
idF=${idF%%;*}
test_ok "sbatch --array=0-2 of a key without a profile accepted" test -n "$idF"
comment=$(scontrol show job "${idF}_0" | sed -n 's/.*AdminComment=//p')
diag "AdminComment: $comment"
test_ok "AdminComment: no profile, profiling in place, group=array" \
	grep -q "no profile.*profiling in place.*group=array" <<<"$comment"
for t in 0 1 2; do
	st=$(cluster_wait_job "${idF}_$t" 180)
	test_ok "task $t of the unprofiled array completed ($st)" test "$st" = COMPLETED
done
for t in 0 1 2; do
	sed "s/^/#   task $t: /" "$C/out/${idF}_$t.out" 2>/dev/null
done
groupF=u0-a$idF
test_ok "one task profiled in place, outside the group" \
	test "$(cat "$C"/out/"${idF}"_*.out | grep -cx "active=1 group= profiling=1")" = 1
test_ok "the other two ran in group $groupF without profiling" \
	test "$(cat "$C"/out/"${idF}"_*.out | grep -cx "active=1 group=$groupF profiling=0")" = 2
test_ok "the node logged two runs without a profile" \
	test "$(grep -E -c "job ($idF|[0-9]+): another job holds the claim on profiling fresh" "$log")" -ge 2
rF=$(for t in 0 1 2; do
	if grep -qx "active=1 group=$groupF profiling=0" "$C/out/${idF}_$t.out"; then
		awk '/^# group: batches prepared/ { print $7 + 0 }' "$C/out/${idF}_$t.out"
	fi
done | awk '{ s += $1 } END { printf "%.2f", s }')
test_ok "the two unprofiled members shared batches (received $rF)" \
	awk -v r="$rF" 'BEGIN { exit !(r > 0) }'
test_ok "the node logged two tasks joining $groupF" \
	test "$(grep -c "joined group $groupF on node $node" "$log")" = 2
cluster__wait 20 test ! -e "$gdir/$node.group_$groupF"
test_ok "its group directory is gone" test ! -e "$gdir/$node.group_$groupF"
cluster__wait 20 cluster_leftovers >/dev/null
test_ok "nothing left after the unprofiled array" cluster_leftovers

# A Synergy job of its own (no array, no --synergy-group) is in no group,
# and one that exported SYNERGY_GROUP keeps it (the plugin sets none).
idS=$(cd "$C" && SYNERGY_GROUP=mine sbatch --parsable -o "$C/out/%j.out" --gres=gpu:1 \
	--cpus-per-task=1 --mem=300M --synergy-profile=img \
	--wrap 'echo "active=$SYNERGY_ACTIVE group=$SYNERGY_GROUP dir=$SYNERGY_GROUP_DIR"
	srun -n1 sh -c "echo step-group=\$SYNERGY_GROUP"')
test_ok "a job outside any group completed" test "$(cluster_wait_job "$idS" 30)" = COMPLETED
test_ok "it is Synergy-active, its own SYNERGY_GROUP kept, no directory" \
	grep -qx "active=1 group=mine dir=" "$C/out/$idS.out"
test_ok "its step too" grep -qx "step-group=mine" "$C/out/$idS.out"
test_ok "the node made no group for it" bash -c "! grep -q 'job $idS: joined group' '$log'"

# Two users, one group name: two groups.
script='echo "active=$SYNERGY_ACTIVE group=$SYNERGY_GROUP dir=$SYNERGY_GROUP_DIR"
	while [ ! -e "'"$C"'/go" ]; do sleep 0.1; done'
idA=$(cd "$C/out" && sbatch --parsable --uid="$ua" -o "$C/out/%j.out" --gres=gpu:1 \
	--cpus-per-task=1 --mem=300M --synergy-profile=img --synergy-group=shared --wrap "$script")
idB=$(cd "$C/out" && sbatch --parsable --uid="$ub" -o "$C/out/%j.out" --gres=gpu:1 \
	--cpus-per-task=1 --mem=300M --synergy-profile=img --synergy-group=shared --wrap "$script")
test_ok "A's job with --synergy-group=shared runs" cluster_wait_state "$idA" RUNNING 30
test_ok "B's job with --synergy-group=shared runs" cluster_wait_state "$idB" RUNNING 30
cluster__wait 10 grep -q active= "$C/out/$idA.out"
cluster__wait 10 grep -q active= "$C/out/$idB.out"
uida=$(id -u "$ua")
uidb=$(id -u "$ub")
ga=u$uida-g-shared
gb=u$uidb-g-shared
test_ok "A's job is in A's group $ga" \
	grep -qx "active=1 group=$ga dir=$gdir/$node.group_$ga" "$C/out/$idA.out"
test_ok "B's job is in B's group $gb" \
	grep -qx "active=1 group=$gb dir=$gdir/$node.group_$gb" "$C/out/$idB.out"
test_ok "A's group directory is A's, mode 0700" \
	bash -c "[ \"\$(stat -c %U:%a '$gdir/$node.group_$ga')\" = $ua:700 ]"
test_ok "B's group directory is B's, mode 0700" \
	bash -c "[ \"\$(stat -c %U:%a '$gdir/$node.group_$gb')\" = $ub:700 ]"
test_ok "B cannot enter A's group directory" \
	bash -c "! runuser -u '$ub' -- ls '$gdir/$node.group_$ga' >/dev/null 2>&1"
test_ok "B cannot create a group directory" \
	bash -c "! runuser -u '$ub' -- mkdir '$gdir/$node.group_$ga.x' 2>/dev/null"
status=$("$top_builddir/plugin/synergy-lend" --status -c "$C/etc/synergy.conf" 2>&1)
test_ok "synergy-lend --status shows each job's group" \
	bash -c "grep -Eq '^ +$idA .* $ga +img\$' <<<\"\$1\" && grep -Eq '^ +$idB .* $gb +img\$' <<<\"\$1\"" _ "$status"
diag "synergy-lend --status: $(tr '\n' '|' <<<"$status")"
comment=$(scontrol show job "$idA" | sed -n 's/.*AdminComment=//p')
test_ok "A's AdminComment names A's group ($comment)" grep -q "group=$ga" <<<"$comment"
touch "$C/go"
test_ok "A's job completed" test "$(cluster_wait_job "$idA" 30)" = COMPLETED
test_ok "B's job completed" test "$(cluster_wait_job "$idB" 30)" = COMPLETED
test_ok "both group directories are gone" \
	cluster__wait 20 bash -c "[ -z \"\$(ls -A '$gdir')\" ]"

# Hostile names are refused before anything is submitted.
test_ok "--synergy-group=../x refused" cluster_refused "not a valid group name" \
	--synergy-profile=img --synergy-group=../x
test_ok "a 33-character --synergy-group refused" cluster_refused "not a valid group name" \
	--synergy-profile=img --synergy-group=abcdefghijabcdefghijabcdefghijabc
test_ok "an empty --synergy-group refused" cluster_refused "not a valid group name" \
	--synergy-profile=img --synergy-group=
SYNERGY_GROUP_NAME=-x
export SYNERGY_GROUP_NAME
test_ok "SYNERGY_GROUP_NAME=-x (the option's twin) refused" cluster_refused \
	"SYNERGY_GROUP_NAME: '-x' is not a valid group name" --synergy-profile=img
unset SYNERGY_GROUP_NAME
cluster__wait 20 cluster_leftovers >/dev/null
test_ok "nothing left at the end" cluster_leftovers
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-sized.sh: a job with a known profile gets the cores and memory
# the policy demands, and its synergy cgroup, affinity and environment show
# it; a job with an insensitive profile gets less than its GPU share; when
# the jobs are over, no synergy cgroup and no cache file is left.
. "${top_srcdir:?}/tests/lib/cluster.sh"
# One GPU per node: a job may then take every core (with two GPUs it would
# have to leave a core for the other GPU, see plugin/submit.c).
CLUSTER_GPUS=1
cluster_start 1
cluster_put_profile img image
cluster_put_profile lang flat
node=${CLUSTER_TAG}n1

# The job records what it sees, then waits for the test to look at its
# cgroup from outside.
id=$(cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap '
	env | grep -E "^SYNERGY_"
	cat /proc/self/cgroup
	grep Cpus_allowed_list /proc/self/status
	ls -ld "$SYNERGY_CACHE_DIR" && echo cache-dir-ok
	touch "$SYNERGY_CACHE_DIR/shard0" && echo cache-write-ok
	while [ ! -e "'"$C"'/go" ]; do sleep 0.1; done')
test_ok "sbatch --synergy-profile=img accepted" test -n "$id"
test_ok "job starts" cluster_wait_state "$id" RUNNING 20
test_ok "job was sized to 2 CPUs" test "$(cluster_job_field "$id" NumCPUs)" = 2
test_ok "job was sized to 2G memory" test "$(cluster_job_min_mem "$id")" = 2G
test_ok "its TRES say cpu=2,mem=2G" bash -c "scontrol -o show job $id | grep -q 'TRES=cpu=2,mem=2G,'"
comment=$(scontrol show job "$id" | sed -n 's/.*AdminComment=//p')
test_ok "AdminComment records the decision" grep -q "key=img cpus=2 mem=2048M cache=1024M" <<<"$comment"
diag "AdminComment: $comment"

lim=$(cluster_limit_cgroup "$id")
limmem=$(cluster_limit_cgroup "$id" memory)
job=$(cluster_job_cgroup "$id")
cluster__wait 5 test -d "$lim"
test_ok "the job's limit cgroup exists ($CLUSTER_CGROUP: ${lim#"$job"/})" test -d "$lim"
test_ok "its cpuset holds the job's 2 cores" \
	test "$(cat "$lim/cpuset.cpus" 2>/dev/null)" = "$(cat "$job/cpuset.cpus" 2>/dev/null)"
test_ok "its memory limit covers process + cache (2 GiB)" \
	test "$(cluster_mem_limit "$limmem" 2>/dev/null)" = 2147483648
touch "$C/go"
st=$(cluster_wait_job "$id" 30)
test_ok "job completed" test "$st" = COMPLETED
out=$(cat "$(cluster_out "$id")" 2>/dev/null)
has() { grep -qx -- "$1" <<<"$out"; }
test_ok "SYNERGY_ACTIVE=1" has SYNERGY_ACTIVE=1
test_ok "SYNERGY_THREADS=2" has SYNERGY_THREADS=2
test_ok "SYNERGY_CPUS=0-1" has SYNERGY_CPUS=0-1
test_ok "SYNERGY_CACHE_BYTES=1024M" has SYNERGY_CACHE_BYTES=1024M
test_ok "SYNERGY_PROFILE_KEY=img" has SYNERGY_PROFILE_KEY=img
test_ok "SYNERGY_CACHE_DIR is the per-job dir" has "SYNERGY_CACHE_DIR=$C/cache/job_$id"
test_ok "SYNERGY_CACHE_NAME=job_$id" has "SYNERGY_CACHE_NAME=job_$id"
test_ok "task ran under the job's limit cgroup" cluster_task_in "$out" "$lim"
if [ "$CLUSTER_CGROUP" = v1 ]; then
	test_ok "and in its synergy memory cgroup" \
		grep -q ":memory:${limmem#/sys/fs/cgroup/memory}\$" <<<"$out"
fi
test_ok "task affinity is the granted cores" grep -q "Cpus_allowed_list:.0-1\$" <<<"$out"
test_ok "the job could write its cache dir" has cache-write-ok
[ "$tap_failed" = 0 ] || diag "job output: $out"

# An insensitive profile asks for one core and no cache.
id2=$(cluster_sbatch --gres=gpu:1 --synergy-profile=lang --wrap 'env | grep -E "^SYNERGY_"')
st=$(cluster_wait_job "$id2" 30)
test_ok "insensitive job completed" test "$st" = COMPLETED
test_ok "insensitive job got 1 CPU and 1G" \
	test "$(cluster_job_field "$id2" NumCPUs)/$(cluster_job_min_mem "$id2")" = 1/1G
test_ok "its loader sees 1 thread and no cache" \
	grep -qx SYNERGY_CACHE_BYTES=0M "$(cluster_out "$id2")"

cluster__wait 5 cluster_leftovers
test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
done_testing

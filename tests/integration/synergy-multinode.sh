#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-multinode.sh: a Synergy job on two nodes gets the partitioned
# cache's peers from the SPANK plugin (synergy_env.h), and its loaders
# serve each other's misses over TCP, once they proved to each other that
# they hold the step's key (issues 14 and 24):
#  - each node's task of a 2-node step has a distinct SYNERGY_NODE_INDEX
#    (its SLURM_NODEID), the same SYNERGY_PEERS (one 127.0.0.1:port per
#    node, ports distinct, inside PeerPortMin..PeerPortMax), the same
#    SYNERGY_PEER_TAG and the same SYNERGY_PEER_KEY (64 hex digits);
#  - coordl-bench on both nodes (rank = node), each node's cache 3/4 of
#    the dataset: after the first epoch
#    peers serve misses (peer hits > 0) and storage is read for at most 1%
#    of the dataset per node (the union of the caches holds it all: dataset
#    - union = 0), while the first epoch read the dataset once in total;
#  - with two tasks per node (torchrun- or srun-style, one process per
#    GPU) both tasks of a node get the same values, share the node's cache
#    (one listens, the other only reads, and logs no bind error for it)
#    and the same exactness holds;
#  - a step launched with srun --mpi=pmix wires up through PMIx instead
#    (the loaders say "wire-up pmix") with the same exactness (skipped,
#    with the reason, without PMIx in libcoordl or mpi/pmix in Slurm);
#  - a node's task killed -9 in the middle of an epoch: the other node
#    finishes that epoch and the next ones in bounded time, reading the
#    dead node's part from storage (fallbacks counted), and the step ends;
#  - the next step of the job gets other ports, another tag and another
#    key; a step whose job set SYNERGY_PEER_WIREUP=off, the batch script
#    (one node) and a one-node Synergy job get none of the peer variables;
#  - nothing is left afterwards.
# Skipped when libcoordl was built without its peer tier (libcrypto).
. "${top_srcdir:?}/tests/lib/cluster.sh"
bench=$top_builddir/bench/coordl-bench
gen=$top_builddir/tools/coordl-datagen
[ -x "$bench" ] && [ -x "$gen" ] || bail "build bench/coordl-bench and tools/coordl-datagen first"
grep -q '^#define HAVE_PEERS 1' "$top_builddir/config.h" 2>/dev/null ||
	skip_all "libcoordl built without its peer tier (libssl-dev; configure --with-libcrypto)"
# A private range of 16 ports for the peers' listeners: every cluster's
# job ids start at 1, and another test may run beside this one.
pmin=$(ports_pick "") || bail "no free port"
[ "$pmin" -le 65520 ] || pmin=$((pmin - 16))
pmax=$((pmin + 15))
# One GPU per node, so a job may take both cores; each node's cache is
# capped at MaxCacheMB, 3/4 of the dataset below.
CLUSTER_GPUS=1
# Every node's prolog at allocation: only that prolog carries the job's
# grant to a node that runs no batch script (spank-synergy(8)).
CLUSTER_SLURM_CONF_EXTRA=PrologFlags=Alloc
CLUSTER_SYNERGY_CONF_EXTRA="PeerPortMin=$pmin
PeerPortMax=$pmax
MaxCacheMB=12"
cluster_start 2
cluster_put_profile img image

# peer_task FILE OUT ARGS [LINE...]: a task script that sends its output to
# OUT (expanded in the task: escape Slurm's variables), runs each LINE,
# then coordl-bench in train mode over $C/ds with ARGS (epochs, GPU rate,
# rank and world size), a 2 s peer deadline. The nodes of
# this throwaway cluster share one machine and so one CacheDir: each task
# names its own cache in it, as its own node's would be on a real cluster.
peer_task() {
	local f=$1 out=$2 args=$3 l
	shift 3
	{
		echo '#!/bin/bash'
		echo "exec >\"$out\" 2>&1"
		for l in "$@"; do echo "$l"; done
		echo 'export SYNERGY_CACHE_NAME=${SYNERGY_CACHE_NAME}_n$SLURM_NODEID'
		echo 'export SYNERGY_PEER_TIMEOUT_MS=2000'
		echo "exec $bench --mode train --batch-size 16 --out-size 64 $args $C/ds"
	} >"$f"
	chmod 0755 "$f"
}
# 224 images of 300-500 px: about 16 MB, more than one node's 12 MB cache,
# less than the union's 24 MB.
"$gen" --out "$C/ds" --classes 4 --images 224 --seed 14 --width-range 300-500 >/dev/null ||
	bail "coordl-datagen failed"
dsmb=$(find "$C/ds" -type f -name '*.jpg' -printf '%s\n' | awk '{s += $1} END {printf "%.1f", s / 1e6}')
diag "dataset $dsmb MB, cache 12 MiB per node, ports $pmin..$pmax"
awk -v d="$dsmb" 'BEGIN { exit !(d > 12 * 1.048576 && d < 24 * 1.048576 * 0.95) }' ||
	bail "dataset of $dsmb MB does not lie between one node's cache and the union"

# The 2-node job. Step 0: each node's task records its environment, then
# runs coordl-bench as rank NODEID of 2 (3 epochs, an emulated GPU so that
# an epoch lasts about a second and the nodes' epochs line up). Step 1 is
# the same without the bench; step 2 sets SYNERGY_PEER_WIREUP=off.
peer_task "$C/task.sh" "$C/step\$SLURM_STEP_ID.node\$SLURM_NODEID.out" \
	'--epochs 3 --gpu-rate 80 --rank $SLURM_NODEID --world-size 2' \
	'echo SLURM_NODEID=$SLURM_NODEID' "env | grep -E '^SYNERGY_' | sort" \
	'[ "$1" = bench ] || exit 0'
id=$(cluster_sbatch -N2 --gres=gpu:1 --synergy-profile=img --wrap "
	echo batch: \$(env | grep -cE '^SYNERGY_(PEERS|NODE_INDEX|PEER_TAG|PEER_KEY)=')
	srun -N2 --ntasks-per-node=1 $C/task.sh bench
	srun -N2 --ntasks-per-node=1 $C/task.sh
	SYNERGY_PEER_WIREUP=off srun -N2 --ntasks-per-node=1 $C/task.sh")
test_ok "sbatch -N2 --synergy-profile=img accepted" test -n "$id"
st=$(cluster_wait_job "$id" 90)
test_ok "the 2-node job completed" test "$st" = COMPLETED
for f in "$(cluster_out "$id")" "$C"/step*.out; do
	[ -f "$f" ] && sed "s|^|#   ${f##*/}: |" "$f"
done
o0=$C/step0.node0.out o1=$C/step0.node1.out
val() { sed -n "s/^$2=//p" "$1" 2>/dev/null; }
test_ok "both nodes' tasks ran under Synergy" \
	test "$(val "$o0" SYNERGY_ACTIVE)/$(val "$o1" SYNERGY_ACTIVE)" = 1/1
test_ok "each node's SYNERGY_NODE_INDEX is its SLURM_NODEID (0 and 1)" \
	test "$(val "$o0" SYNERGY_NODE_INDEX)/$(val "$o1" SYNERGY_NODE_INDEX)" = 0/1
peers=$(val "$o0" SYNERGY_PEERS)
tag=$(val "$o0" SYNERGY_PEER_TAG)
test_ok "both nodes have the same SYNERGY_PEERS ($peers)" \
	test -n "$peers" -a "$peers" = "$(val "$o1" SYNERGY_PEERS)"
test_ok "and the same SYNERGY_PEER_TAG ($tag)" test -n "$tag" -a "$tag" = "$(val "$o1" SYNERGY_PEER_TAG)"
key=$(val "$o0" SYNERGY_PEER_KEY)
test_ok "and the same SYNERGY_PEER_KEY, 64 lowercase hex digits" \
	bash -c "grep -qxE '[0-9a-f]{64}' <<<'$key' && [ '$key' = '$(val "$o1" SYNERGY_PEER_KEY)' ]"
# two entries, 127.0.0.1 (NodeAddr), distinct ports inside the range
ports_ok() {
	local IFS=, e p seen=" " n=0
	for e in $1; do
		[ "${e%:*}" = 127.0.0.1 ] || return 1
		p=${e##*:}
		[ "$p" -ge "$pmin" ] && [ "$p" -le "$pmax" ] || return 1
		case "$seen" in *" $p "*) return 1 ;; esac
		seen="$seen$p "
		n=$((n + 1))
	done
	[ "$n" = 2 ]
}
test_ok "one NodeAddr:port per node, ports distinct and in PeerPortMin..PeerPortMax" ports_ok "$peers"

# The bench's table: epoch rows; column 9 storageMB, 13 peer%, 15
# fallbacks, 16 stalls.
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 17' "$1"; }
# clean_from FILE...: sets from to the first epoch whose storage reads must
# be idle: 1, or 2 when a loader of FILEs reached a peer late (its peer was not
# listening yet when it started; the other node's task started seconds
# later under qemu's TCG): it read the peer's part of its first epoch from
# storage, which the owner then does not hold, and its second epoch reads
# those items once more.
clean_from() {
	local line
	line=$(grep -h -m1 "its part is read from storage until it is back" "$@" | head -n 1)
	from=1
	[ -z "$line" ] && return
	from=2
	diag "reached a peer late: $line: storage checked from epoch 2"
}
test_ok "node 0's loader joined the partitioned cache (by the plugin's node list)" \
	grep -q "partitioned cache: node 0 of 2, wire-up sockaddr" "$o0"
test_ok "node 1's loader joined the partitioned cache (by the plugin's node list)" \
	grep -q "partitioned cache: node 1 of 2, wire-up sockaddr" "$o1"
test_ok "both ran 3 epochs" test "$(rows "$o0" | wc -l)/$(rows "$o1" | wc -l)" = 3/3
test_ok "first epoch: the nodes read the dataset once between them (+-1%)" \
	awk -v d="$dsmb" '$1 == 0 { s += $9 } END { exit !(s >= d * 0.99 && s <= d * 1.01) }' \
		<(rows "$o0") <(rows "$o1")
for n in 0 1; do
	o=$C/step0.node$n.out
	test_ok "node $n: after the first epoch, peers served its misses (peer hits > 0)" \
		awk '$1 >= 1 && $13 + 0 <= 0 { bad = 1 } END { exit bad }' <(rows "$o")
	clean_from "$o"
	test_ok "node $n: from epoch $from, storage read <= 1% of the dataset" \
		awk -v d="$dsmb" -v f="$from" '$1 >= f && $9 > d * 0.01 { bad = 1 } END { exit bad }' <(rows "$o")
done
test_ok "no peer failed or stalled (fallback and stall columns 0)" \
	awk '$1 >= 1 && ($15 != 0 || $16 != 0) { bad = 1 } END { exit bad }' <(rows "$o0") <(rows "$o1")

test_ok "the next step has the same node indices" \
	test "$(val "$C/step1.node0.out" SYNERGY_NODE_INDEX)/$(val "$C/step1.node1.out" SYNERGY_NODE_INDEX)" = 0/1
peers1=$(val "$C/step1.node0.out" SYNERGY_PEERS)
tag1=$(val "$C/step1.node0.out" SYNERGY_PEER_TAG)
key1=$(val "$C/step1.node0.out" SYNERGY_PEER_KEY)
test_ok "the next step gets another tag, another key and other ports ($peers1)" \
	test -n "$peers1" -a "$peers1" != "$peers" -a -n "$tag1" -a "$tag1" != "$tag" -a \
	-n "$key1" -a "$key1" != "$key"
test_ok "with SYNERGY_PEER_WIREUP=off set by the job, no peer variable is exported" \
	bash -c "! grep -qE '^SYNERGY_(PEERS|NODE_INDEX|PEER_TAG|PEER_KEY)=' $C/step2.node0.out $C/step2.node1.out"
test_ok "... though the step still runs under Synergy" \
	test "$(val "$C/step2.node0.out" SYNERGY_ACTIVE)" = 1
test_ok "the batch script (one node) gets no peer variable" grep -qx "batch: 0" "$(cluster_out "$id")"

[ "$tap_failed" = 0 ] || for f in "$C"/log/slurmd.*.log; do
	grep -i 'synergy' "$f" | sed "s|^|#   ${f##*/}: |"
done

# Two tasks per node (as torchrun or srun with one process per GPU): both
# tasks of a node get the node's values, share its cache, and the first to
# bind the node's entry listens while the other only reads; ranks 0-3,
# numbered node by node.
peer_task "$C/task2.sh" "$C/multi.node\$SLURM_NODEID.rank\$SLURM_PROCID.out" \
	'--epochs 3 --gpu-rate 40 --threads 1 --rank $SLURM_PROCID --world-size $SLURM_NTASKS' \
	"env | grep -E '^SYNERGY_(PEERS|NODE_INDEX|PEER_TAG)=' | sort"
id3=$(cluster_sbatch -N2 --ntasks-per-node=2 --gres=gpu:1 --synergy-profile=img \
	--wrap "srun $C/task2.sh")
st=$(cluster_wait_job "$id3" 90)
test_ok "a 2-node job with 2 tasks per node completed" test "$st" = COMPLETED
for f in "$C"/multi.*.out; do
	[ -f "$f" ] && sed "s|^|#   ${f##*/}: |" "$f"
done
m() { echo "$C/multi.node$1.rank$2.out"; }
same_env() { [ -s "$1" ] && diff -q <(grep ^SYNERGY_ "$1") <(grep ^SYNERGY_ "$2") >/dev/null; }
test_ok "both tasks of node 0 got the same peer variables" same_env "$(m 0 0)" "$(m 0 1)"
test_ok "both tasks of node 1 got the same peer variables" same_env "$(m 1 2)" "$(m 1 3)"
test_ok "node indices 0 and 1, one list and tag for the job" \
	test "$(val "$(m 0 0)" SYNERGY_NODE_INDEX)/$(val "$(m 1 2)" SYNERGY_NODE_INDEX)" = 0/1 -a \
	"$(grep -E '^SYNERGY_PEER(S|_TAG)=' "$(m 0 0)")" = "$(grep -E '^SYNERGY_PEER(S|_TAG)=' "$(m 1 3)")"
test_ok "all four loaders joined the partitioned cache as their node" \
	test "$(cat "$(m 0 0)" "$(m 0 1)" | grep -c 'partitioned cache: node 0 of 2')/$(cat "$(m 1 2)" "$(m 1 3)" | grep -c 'partitioned cache: node 1 of 2')" = 2/2
test_ok "first epoch: the four ranks read the dataset once between them (+-1%)" \
	awk -v d="$dsmb" '$1 == 0 { s += $9 } END { exit !(s >= d * 0.99 && s <= d * 1.01) }' \
		<(rows "$(m 0 0)") <(rows "$(m 0 1)") <(rows "$(m 1 2)") <(rows "$(m 1 3)")
test_ok "after it, every rank's misses came from the other node (peer hits > 0)" \
	awk '$1 >= 1 && $13 + 0 <= 0 { bad = 1 } END { exit bad || NR != 12 }' \
		<(rows "$(m 0 0)") <(rows "$(m 0 1)") <(rows "$(m 1 2)") <(rows "$(m 1 3)")
# coordl-bench has no barrier between nodes (a DDP job's all-reduce is
# one): a rank that starts its second epoch before the other node stored
# the last items of its part reads those few from storage (one 70 KB item
# seen, 0.4% of the dataset), within the issue's 1%.
# node_storage_ok A B: after the first epoch, the node's two ranks (files
# A and B) read at most 1% of the dataset from storage per epoch together
# (from the third epoch when a rank reached a peer late: clean_from).
node_storage_ok() {
	local from
	clean_from "$1" "$2"
	awk -v d="$dsmb" -v f="$from" '$1 >= f { s[$1] += $9 } END { for (e in s) if (s[e] > d * 0.01) exit 1 }' \
		<(rows "$1") <(rows "$2")
}
test_ok "node 0: after the first epoch, storage <= 1% of the dataset per epoch" \
	node_storage_ok "$(m 0 0)" "$(m 0 1)"
test_ok "node 1: after the first epoch, storage <= 1% of the dataset per epoch" \
	node_storage_ok "$(m 1 2)" "$(m 1 3)"
# The node's second process finds the node's address taken by the first
# one's listener and does not try to listen while it is taken (with UCX it
# logged "bind(...) failed: Address already in use" every 2 s).
test_ok "no task's output has a bind error (the second process of a node does not retry the listener while the first listens)" \
	bash -c "! grep -l 'Address already in use' $C/multi.*.out"

# PMIx wire-up: the same 2-node job with its step launched by
# `srun --mpi=pmix` (Debian's mpi/pmix_v4; each node its own TmpFS, see
# cluster.sh). Each task is a PMIx rank of its node's slurmstepd, so the
# loader (SYNERGY_PEER_WIREUP unset: auto) wires up through PMIx (worker
# ports and addresses put into PMIx, one fence) instead of the
# plugin's node list, and the same exactness holds.
pmix_checks=7
if ! grep -q '^#define HAVE_PMIX 1' "$top_builddir/config.h" 2>/dev/null; then
	for i in $(seq "$pmix_checks"); do
		test_skip "PMIx wire-up: libcoordl built without PMIx (libpmix-dev; configure --with-pmix)"
	done
elif ! srun --mpi=list 2>&1 | grep -qw pmix; then
	for i in $(seq "$pmix_checks"); do
		test_skip "PMIx wire-up: this Slurm has no mpi/pmix plugin (srun --mpi=list)"
	done
else
	peer_task "$C/taskp.sh" "$C/pmix.node\$SLURM_NODEID.out" \
		'--epochs 3 --gpu-rate 80 --rank $SLURM_PROCID --world-size 2' \
		'echo SLURM_NODEID=$SLURM_NODEID SLURM_PROCID=$SLURM_PROCID' \
		"env | grep -E '^(PMIX_RANK|SYNERGY_)' | sort"
	id4=$(cluster_sbatch -N2 --gres=gpu:1 --synergy-profile=img \
		--wrap "srun --mpi=pmix -N2 --ntasks-per-node=1 $C/taskp.sh")
	st=$(cluster_wait_job "$id4" 90)
	test_ok "a 2-node job whose step srun --mpi=pmix launched completed" test "$st" = COMPLETED
	for f in "$(cluster_out "$id4")" "$C"/pmix.node*.out; do
		[ -f "$f" ] && sed "s|^|#   ${f##*/}: |" "$f"
	done
	p0=$C/pmix.node0.out p1=$C/pmix.node1.out
	test_ok "each task is a PMIx rank (PMIX_RANK = SLURM_PROCID: 0 and 1)" \
		test "$(val "$p0" PMIX_RANK)/$(val "$p1" PMIX_RANK)" = 0/1
	test_ok "both loaders wired up by PMIx, as their node (PMIx's node id = SLURM_NODEID)" \
		test "$(grep -c 'partitioned cache: node 0 of 2, wire-up pmix' "$p0")/$(grep -c 'partitioned cache: node 1 of 2, wire-up pmix' "$p1")" = 1/1
	test_ok "PMIx: both ran 3 epochs" test "$(rows "$p0" | wc -l)/$(rows "$p1" | wc -l)" = 3/3
	test_ok "PMIx: first epoch: the nodes read the dataset once between them (+-1%)" \
		awk -v d="$dsmb" '$1 == 0 { s += $9 } END { exit !(s >= d * 0.99 && s <= d * 1.01) }' \
			<(rows "$p0") <(rows "$p1")
	test_ok "PMIx: after the first epoch, each node's misses came from the other (peer hits > 0)" \
		awk '$1 >= 1 && $13 + 0 <= 0 { bad = 1 } END { exit bad || NR != 6 }' <(rows "$p0") <(rows "$p1")
	clean_from "$p0" "$p1"
	test_ok "PMIx: from epoch $from (2 when a node reached its peer late), storage <= 1% of the dataset per node, no fallback or stall" \
		awk -v d="$dsmb" -v f="$from" '$1 >= 1 && (($1 >= f && $9 > d * 0.01) || $15 != 0 || $16 != 0) { bad = 1 } END { exit bad }' \
			<(rows "$p0") <(rows "$p1")
fi

# A node dies mid-epoch (issue 14): node 1's task of a 2-node step is
# killed -9 in the middle of its third epoch. Node 0 finishes that epoch
# and the rest within the peer deadline: from the epoch after the death on
# it reads the dead node's part from storage (fallbacks counted), its own
# part still from its cache, and no peer serves it; the step ends instead
# of hanging. (At this scale node 0's peer tier has read the whole epoch's
# share of node 1's items ahead, up to 1024 items or 64 MB, before node 1
# dies; a peer that stops answering with reads pending is peer.t's
# stalled node.)
peer_task "$C/taskk.sh" "$C/kill.node\$SLURM_NODEID.out" \
	'--epochs 5 --gpu-rate 80 --rank $SLURM_NODEID --world-size 2' \
	"echo \$\$ >\"$C/kill.node\$SLURM_NODEID.pid\""
id5=$(cluster_sbatch -N2 --gres=gpu:1 --synergy-profile=img \
	--wrap "srun -N2 --ntasks-per-node=1 $C/taskk.sh")
k0=$C/kill.node0.out k1=$C/kill.node1.out
# epoch_done FILE E: the loader in FILE has finished epoch E.
epoch_done() { rows "$1" | awk -v e="$2" '$1 == e { f = 1 } END { exit !f }'; }
killed=
if cluster__wait 60 epoch_done "$k1" 1; then
	# About half an epoch (112 items per node at 80/s: 1.4 s) into epoch 2.
	sleep 0.7
	if ! epoch_done "$k1" 2 && [ -s "$C/kill.node1.pid" ] &&
		kill -9 "$(cat "$C/kill.node1.pid")" 2>/dev/null; then
		killed=1
	fi
fi
test_ok "node 1's task was killed -9 in the middle of its third epoch" test -n "$killed"
st=$(cluster_wait_job "$id5" 60)
test_ok "the step ended (no hang) once node 1 was dead ($st)" test "$st" = FAILED -o "$st" = COMPLETED
for f in "$(cluster_out "$id5")" "$k0" "$k1"; do
	[ -f "$f" ] && sed "s|^|#   ${f##*/}: |" "$f"
done
test_ok "node 1 left no row for the epoch it was killed in" test "$(rows "$k1" | wc -l)" = 2
test_ok "node 0 finished all 5 epochs" test "$(rows "$k0" | wc -l)" = 5
test_ok "node 0: no epoch took longer than the 2 s peer deadline allows (< 8 s)" \
	awk '$3 >= 8 { bad = 1 } END { exit bad || NR != 5 }' <(rows "$k0")
test_ok "node 0: in the epoch after node 1 died, reads of its items fell back to storage (fallbacks > 0)" \
	awk '$1 == 3 && $15 > 0 { ok = 1 } END { exit !ok }' <(rows "$k0")
test_ok "node 0: in its last epoch no peer serves it, and it reads the dead node's part from storage" \
	awk '$1 == 4 && $13 + 0 == 0 && $9 > 0 { ok = 1 } END { exit !ok }' <(rows "$k0")
test_ok "node 0: ... while its own part still comes from its cache (hit% > 0)" \
	awk '$1 == 4 && $8 + 0 > 0 { ok = 1 } END { exit !ok }' <(rows "$k0")

# A one-node Synergy job: no peers.
id2=$(cluster_sbatch -N1 --gres=gpu:1 --synergy-profile=img --wrap 'srun -N1 env | grep -E "^SYNERGY_"')
st=$(cluster_wait_job "$id2" 30)
out2=$(cluster_out "$id2")
test_ok "a one-node Synergy job completed" test "$st" = COMPLETED
test_ok "and ran under Synergy" grep -qx SYNERGY_ACTIVE=1 "$out2"
test_ok "but got no peer variable" bash -c "! grep -qE '^SYNERGY_(PEERS|NODE_INDEX|PEER_TAG|PEER_KEY)=' '$out2'"

cluster__wait 20 cluster_leftovers >/dev/null
test_ok "no synergy or job cgroup, no cache file left" cluster_leftovers
done_testing

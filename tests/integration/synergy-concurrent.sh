#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-concurrent.sh: job_submit/synergy under many concurrent sbatch
# clients (issue 26). Slurm 22.05 calls job_submit plugins one at a time;
# from 23.02 slurmctld calls them concurrently, one per RPC thread (run
# this suite in the guest on the 24.11 and 26.05 roots, slurm-versions.sh,
# for that). CLIENTS clients (SYNERGY_CONC_CLIENTS, default 8) each submit
# JOBS held jobs (SYNERGY_CONC_JOBS, default 40, at least 4) at once, in
# this order per client:
#   1   the first job of a new key every client submits (shared-new, 1 GPU:
#       profiles in place)
#   2   the first job of a new key every client submits on 2 GPUs
#       (shared-req: an offline profiling request)
#   3.. by turns: the profiled key img; img in a group; a new key of its
#       own (in place, or refused by the cap); a job without Synergy
# Checked: every job accepted; every img job sized exactly as a lone one
# (AdminComment, CPUs, TRES), the group's with its group; exactly one
# claim for shared-new, whose nonce its one profiling job names and every
# other shared-new job names as held; one request for shared-req, every
# one of its jobs told so; MaxProfileRequestsPerUser holds exactly (claims
# and requests of the user, and the jobs told so); every claim and request
# file whole, no temporary file left; jobs without Synergy untouched;
# slurmctld alive and the plugin's log free of errors.
. "${top_srcdir:?}/tests/lib/cluster.sh"
clients=${SYNERGY_CONC_CLIENTS:-8}
jobs=${SYNERGY_CONC_JOBS:-40}
cap=6
[[ "$clients" =~ ^[1-9][0-9]?$ ]] && [[ "$jobs" =~ ^[1-9][0-9]{0,2}$ ]] && [ "$jobs" -ge 4 ] ||
	bail "SYNERGY_CONC_CLIENTS=$clients, SYNERGY_CONC_JOBS=$jobs: expected 1-99 and 4-999"
CLUSTER_GPUS=2
# Room for the 2 shared keys and 4 of the clients' own: the own keys race
# for the last places.
CLUSTER_SYNERGY_CONF_EXTRA="MaxProfileRequestsPerUser=$cap
MaxProfileRequests=1000"
cluster_start 1
cluster_put_profile img image

# One line per job of `scontrol show job`: "ID<TAB>CPUS<TAB>TRES<TAB>AdminComment",
# CPUS its NumCPUs, CPUs/Task and memory request (MinMemoryNode, or from
# 24.11 MinMemoryTRES when the job has a memory per GPU), TRES its TRES
# (22.05 shows a pending job's, 24.11 none).
jobs_table() {
	scontrol show job 2>/dev/null | awk '
		function flush() { if (id != "") printf "%s\t%s\t%s\t%s\n", id, cpus, tres, ac
				   id = cpus = tres = ac = "" }
		/^JobId=/ { flush(); id = $1; sub(/^JobId=/, "", id) }
		{ for (i = 1; i <= NF; i++) {
			if ($i ~ /^(NumCPUs|CPUs\/Task|MinMemory[A-Za-z]*)=/) cpus = cpus " " $i
			if ($i ~ /^TRES=/) { tres = $i; sub(/^TRES=/, "", tres) } } }
		/^ *AdminComment=/ { ac = $0; sub(/^ *AdminComment=/, "", ac); sub(/ +$/, "", ac) }
		END { flush() }'
}

# The decision for a lone job of img, with and without a group.
ref=$(cluster_sbatch -H --gres=gpu:1 --synergy-profile=img --wrap true)
refg=$(cluster_sbatch -H --gres=gpu:1 --synergy-profile=img --synergy-group=grp --wrap true)
table=$(jobs_table)
row() { awk -F'\t' -v id="$1" '$1 == id { print $2 "\t" $3 "\t" $4 }' <<<"$table"; }
want=$(row "$ref")
wantg=$(row "$refg")
test_ok "a lone job of the profiled key is sized ($want)" grep -q "synergy: key=img cpus=" <<<"$want"
test_ok "and one in a group joins it" grep -q " group=u0-g-grp\$" <<<"$wantg"

# The storm: every client's jobs in a row, all clients at once.
mkdir -p "$C/clients"
t0=$SECONDS
pids=
for c in $(seq 1 "$clients"); do
	(
		cd "$C" || exit 1
		for j in $(seq 1 "$jobs"); do
			case $j:$((j % 4)) in
			1:*) opt=(--gres=gpu:1 --synergy-profile=shared-new) kind=shared-new ;;
			2:*) opt=(--gres=gpu:2 --synergy-profile=shared-req) kind=shared-req ;;
			*:3) opt=(--gres=gpu:1 --synergy-profile=img) kind=img ;;
			*:0) opt=(--gres=gpu:1 --synergy-profile=img --synergy-group=grp) kind=img-group ;;
			*:1) opt=(--gres=gpu:1 --synergy-profile="own-$c-$j") kind=own ;;
			*:2) opt=(--gres=gpu:1) kind=plain ;;
			esac
			if id=$(sbatch -H --parsable -o /dev/null "${opt[@]}" --wrap true 2>&1); then
				echo "$kind ${id%%;*}"
			else
				echo "failed $kind: $id"
			fi
		done >"$C/clients/$c"
	) &
	pids="$pids $!"
done
# The clients only: the cluster's daemons are this shell's children too.
# shellcheck disable=SC2086
wait $pids
diag "$((clients * jobs)) submissions from $clients clients in $((SECONDS - t0)) s"
cat "$C"/clients/* >"$C/submitted"
failed=$(grep -c '^failed' "$C/submitted")
test_ok "all $((clients * jobs)) jobs accepted ($failed refused)" \
	test "$failed" = 0 -a "$(wc -l <"$C/submitted")" = $((clients * jobs))
[ "$failed" = 0 ] || grep '^failed' "$C/submitted" | sort | uniq -c | head -5 | sed 's/^/# /'
test_ok "slurmctld is alive" kill -0 "$cluster_ctld_pid"

table=$(jobs_table)
# kind: the jobs of one kind, "ID<TAB>NumCPUs<TAB>TRES<TAB>AdminComment" each.
kind() { awk -v k="$1" '$1 == k { print $2 }' "$C/submitted" | while read -r id; do
	awk -F'\t' -v id="$id" '$1 == id' <<<"$table"; done; }
count() { grep -c -- "$1" <<<"$2"; }

img=$(kind img)
n=$(wc -l <<<"$img")
bad=$(cut -f2- <<<"$img" | grep -cvxF -- "$want")
test_ok "$n jobs of the profiled key: each sized as a lone one" test "$bad" = 0 -a "$n" -gt 0
[ "$bad" = 0 ] || cut -f2- <<<"$img" | grep -vxF -- "$want" | sort | uniq -c | head -3 | sed 's/^/# /'
img=$(kind img-group)
bad=$(cut -f2- <<<"$img" | grep -cvxF -- "$wantg")
test_ok "$(wc -l <<<"$img") in the group: each sized so, in its group" test "$bad" = 0
plain=$(kind plain)
test_ok "$(wc -l <<<"$plain") jobs without Synergy: no AdminComment" \
	test -z "$(cut -f4 <<<"$plain" | grep -v '^$')"

# shared-new: one claim, one job profiling in place, the others naming it.
sn=$(kind shared-new)
claims=$C/store/claims
nonce=$(sed -n 's/^nonce=//p' "$claims/0.shared-new" 2>/dev/null)
test_ok "one claim on shared-new, whole ($nonce)" grep -qE '^[0-9a-f]{16}$' <<<"$nonce"
test_ok "exactly one of its $clients jobs profiles in place, with that claim" \
	test "$(count "profiling in place (claim $nonce)" "$sn")" = 1
test_ok "every other one names it as held" \
	test "$(count "another job of uid 0 profiles it in place (claim ${nonce:0:8}" "$sn")" = \
	$((clients - 1))

# shared-req: one request, every job told so.
sr=$(kind shared-req)
test_ok "one request file for shared-req" test -f "$C/requests/shared-req.req"
test_ok "each of its $clients jobs says profiling requested" \
	test "$(count "key=shared-req no profile: GPU-proportional, profiling requested" "$sr")" = "$clients"

# The cap: exactly $cap claims and requests of uid 0, and as many jobs
# holding them; every other own key refused, saying so.
own=$(kind own)
nclaims=$(find "$claims" -maxdepth 1 -type f ! -name '.*' | wc -l)
nreq=$(find "$C/requests" -maxdepth 1 -type f -name '*.req' | wc -l)
# With few jobs a client (SYNERGY_CONC_JOBS 4) there may be fewer own keys
# than places: then every key gets one.
nown=$(grep -c . <<<"$own")
wantcap=$((2 + nown))
[ "$wantcap" -gt "$cap" ] && wantcap=$cap
test_ok "MaxProfileRequestsPerUser=$cap: $nclaims claims + $nreq requests (of $wantcap)" \
	test $((nclaims + nreq)) = "$wantcap"
if [ "$nown" -ge $((cap - 2)) ]; then
	test_ok "as many first jobs of the clients' own keys profile in place ($((cap - 2)))" \
		test "$(count "profiling in place (claim " "$own")" = $((cap - 2))
	test_ok "every other one is refused by the cap, saying so" \
		test "$(count "profiling refused" "$own")" = $((nown - cap + 2))
else
	test_skip "fewer own keys ($nown) than places; raise SYNERGY_CONC_JOBS"
	test_skip "fewer own keys than places"
fi
torn=0
for f in "$claims"/* "$C"/requests/*.req; do
	grep -q '^key=' "$f" && grep -q '^uid=0$' "$f" && grep -q '^time=[0-9]*$' "$f" ||
		{ diag "not whole: $f: $(tr '\n' ' ' <"$f")"; torn=$((torn + 1)); }
done
test_ok "every claim and request file whole" test "$torn" = 0
left=$(find "$claims" "$C/requests" -maxdepth 1 -name '.*' ! -name . ! -name .. | wc -l)
test_ok "no temporary file left ($left)" test "$left" = 0
errs=$(grep -c 'synergy.*error\|error.*synergy' "$C/log/slurmctld.log")
test_ok "no error of the plugin in slurmctld's log ($errs)" test "$errs" = 0
[ "$errs" = 0 ] || grep 'synergy.*error\|error.*synergy' "$C/log/slurmctld.log" | head -3 | sed 's/^/# /'
scancel --quiet -u root
done_testing

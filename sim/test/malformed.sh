#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# malformed.sh: synergy-sim rejects bad traces, profiles and options with a
# message that names the file, the line and the field, and exits non-zero
# without running anything.
. "$top_srcdir/tests/lib/tap.sh"
sim="$top_builddir/sim/synergy-sim"
[ -x "$sim" ] || skip_all "synergy-sim not built"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
H="id,arrival_s,gpus,duration_s,model"

# reject NAME EXPECTED-SUBSTRING CONTENT: the trace must fail with a message
# containing EXPECTED (which names the line).
reject() {
	name=$1 want=$2
	printf '%s\n' "$3" >"$tmp/t.csv"
	if "$sim" -t "$tmp/t.csv" -c 1x4:12:250 -q >"$tmp/out" 2>"$tmp/err"; then
		test_ok "$name: rejected" false
		return
	fi
	if grep -qF -- "$want" "$tmp/err"; then
		test_ok "$name: rejected, message names it" true
	else
		diag "expected '$want' in: $(cat "$tmp/err")"
		test_ok "$name: rejected, message names it" false
	fi
}

reject "missing header" "t.csv:1: expected the header" "1,0,1,100,gnmt"
reject "wrong header" "t.csv:2: expected the header" "# comment
id,arrival,gpus,duration_s,model"
reject "too few fields" "t.csv:3: expected 5 comma-separated fields" "$H
1,0,1,100,gnmt
2,0,1,100"
reject "too many fields" "t.csv:2: expected 5 comma-separated fields" "$H
1,0,1,100,gnmt,extra"
reject "bad id" "t.csv:2: id:" "$H
x1,0,1,100,gnmt"
reject "negative arrival" "t.csv:2: arrival_s:" "$H
1,-5,1,100,gnmt"
reject "non-numeric arrival" "t.csv:2: arrival_s:" "$H
1,soon,1,100,gnmt"
reject "zero gpus" "t.csv:2: gpus:" "$H
1,0,0,100,gnmt"
reject "fractional gpus" "t.csv:2: gpus:" "$H
1,0,1.5,100,gnmt"
reject "zero duration" "t.csv:2: duration_s:" "$H
1,0,1,0,gnmt"
reject "infinite duration" "t.csv:2: duration_s:" "$H
1,0,1,inf,gnmt"
reject "unknown model" "t.csv:3: model: unknown model 'bert'" "$H
1,0,1,100,gnmt
2,0,1,100,bert"
reject "invalid model key" "t.csv:2: model:" "$H
1,0,1,100,../etc"
reject "duplicate id" "t.csv:4: id: 1 already used on line 2" "$H
1,0,1,100,gnmt
2,0,1,100,gnmt
1,5,1,100,gnmt"
reject "empty file" "expected the header" ""
# A header and no jobs once sorted a NULL job array (UBSan, tests/fuzz).
reject "header only" "the trace has no jobs" "$H"
reject "job larger than the cluster" "job 1 needs 8 GPUs" "$H
1,0,8,100,gnmt"
long=$(printf '%02000d' 0)
reject "overlong line" "t.csv:2: line longer than" "$H
1,0,1,100,$long"

# The optional 6th column, group (a hyperparameter search).
G="$H,group"
reject "negative group" "t.csv:3: group:" "$G
1,0,1,100,gnmt,1
2,0,1,100,gnmt,-1"
reject "non-numeric group" "t.csv:2: group:" "$G
1,0,1,100,gnmt,a"
reject "fractional group" "t.csv:2: group:" "$G
1,0,1,100,gnmt,1.5"
reject "group past 2^64" "t.csv:2: group:" "$G
1,0,1,100,gnmt,18446744073709551616"
reject "search members differ in GPUs" "t.csv:4: group: 7 is a search of 1-GPU gnmt trials (line 2)" "$G
1,0,1,100,gnmt,7
2,0,1,100,gnmt,8
3,0,2,100,gnmt,7"
reject "search members differ in model" "t.csv:3: group: 7 is a search of 1-GPU gnmt trials (line 2), not 1-GPU lstm" "$G
1,0,1,100,gnmt,7
2,0,1,100,lstm,7"
reject "7 fields" "t.csv:2: expected 5 or 6 comma-separated fields" "$G
1,0,1,100,gnmt,1,2"
reject "a group without the group header" "a trace with searches has the header" "$H
1,0,1,100,gnmt,1"

test_ok "missing trace file named" sh -c "'$sim' -t '$tmp/nope.csv' 2>&1 | grep -q 'nope.csv: No such file'"
test_ok "missing trace file fails" sh -c "! '$sim' -t '$tmp/nope.csv' 2>/dev/null"

# Options.
opt_reject() {
	name=$1 want=$2; shift 2
	"$sim" "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/err"; then
		test_ok "$name" true
	else
		diag "rc $rc, stderr: $(cat "$tmp/err")"
		test_ok "$name" false
	fi
}
opt_reject "bad cluster" "--cluster" -c 16x8
# Groups that add up past the node bound once overflowed the GPU count.
opt_reject "cluster too large in all" "more than 1000000 nodes" \
	-c 100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1024:1:1,100000x1:1:1
opt_reject "bad allocator" "--alloc 'best'" -a best
opt_reject "bad ordering" "--order" -o lifo
opt_reject "bad split" "--split" --split 20/70
opt_reject "bad window" "--window" -w 9-3
opt_reject "bad rate" "--rate" -r 0
opt_reject "sweep with trace" "--sweep" -t x.csv --sweep 1,2
opt_reject "search of one trial" "--search '1:0.5'" --search 1:0.5
opt_reject "search fraction above 1" "--search" --search 4:1.5
opt_reject "search without a fraction" "--search" --search 4
opt_reject "search with trailing text" "--search" --search 4:0.5x
opt_reject "bad --coord" "--coord 'yes'" --coord yes
"$sim" --help >"$tmp/help"
test_ok "--help prints usage" grep -q "Usage: synergy-sim" "$tmp/help"

# Profiles from a store: a measured profile replaces the built-in with its
# key; a corrupt one is rejected naming the file.
mkdir "$tmp/store"
cat >"$tmp/store/gnmt.json" <<'JSON'
{
  "schema": 1,
  "key": "gnmt",
  "model": "test: gnmt made CPU-sensitive",
  "cpus": [1, 3, 6],
  "mem_gb": [0, 62.5],
  "tput": [[0.5, 0.5], [1.0, 1.0], [2.0, 2.0]],
  "prop_cpus": 3, "prop_mem_gb": 62.5,
  "base_tput": 0
}
JSON
printf '%s\n1,0,1,3000,gnmt\n' "$H" >"$tmp/one.csv"
"$sim" -t "$tmp/one.csv" -c 1x4:12:250 -a tune -P "$tmp/store" -j "$tmp/o.csv" -q 2>"$tmp/err"
test_ok "measured profile used (2x at 6 cores)" grep -q ',2.000,' "$tmp/o.csv"
printf '{ "schema": 1, "key": "lstm", "cpus": [1, \n' >"$tmp/store/lstm.json"
printf '%s\n1,0,1,3000,lstm\n' "$H" >"$tmp/two.csv"
"$sim" -t "$tmp/two.csv" -c 1x4:12:250 -P "$tmp/store" -q 2>"$tmp/err"
rc=$?
test_ok "corrupt profile rejected" test $rc -eq 1
test_ok "message names the trace line and the profile file" sh -c "grep -q 'two.csv:2: model:' '$tmp/err' && grep -q 'lstm.json' '$tmp/err'"
diag "$(cat "$tmp/err")"
"$sim" -t "$tmp/one.csv" -P "$tmp/nodir" -q 2>"$tmp/err"
test_ok "missing profile store named" grep -q "nodir" "$tmp/err"
done_testing

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# golden.sh: synergy-sim on small traces whose schedules were worked out by
# hand; the per-job results must match the checked-in expectation exactly.
#
# golden1.csv on one node of 4 GPUs, 12 cores, 250 GB (share 3 cores,
# 62.5 GB per GPU), rounds of 300 s:
#   prop/fifo: J1-J3 take all 4 GPUs at t=0; J2, J3 finish at 600; J4
#     (arrived 200) starts at 600, ends 1500; J1 runs at 1.0, ends 2400.
#   tune/fifo: J1 (resnet18) gets 9 cores (2.4x), J2, J3 (gnmt) 1 core per
#     GPU; J1 has 2400-1440 = 960 s of work left at 600, when J4 (m5) wants
#     6 cores and 187.5 GB but only 3 cores are free: placed at the share
#     (1.0x); step 5 then moves 3 of J1's cores to J4: J1 at 6 cores runs
#     1.85x (-0.55), J4 at 6 cores and 187.5 GB 2.5x (+1.5). J4 ends at
#     600+900/2.5 = 960; J1 has 960-360*1.85 = 294 s of work left then and
#     keeps its allocation until the next round: ends 960+294/1.85 = 1118.9
#     (1 change, at 600).
#   greedy/fifo: J1 keeps 9 cores (GREEDY has no step 5), so J4 waits for
#     its best case until J1 ends at 900+240/2.4 = 1000, i.e. the round at
#     1200: ends 1200+900/2.5 = 1560.
#   prop/srtf: at 300 J4 (900 s left) outranks J1 (2100 s left), which is
#     preempted for one round: J4 ends 1200, J1 ends 2700.
. "$top_srcdir/tests/lib/tap.sh"
sim="$top_builddir/sim/synergy-sim"
dir="$top_srcdir/sim/test"
[ -x "$sim" ] || skip_all "synergy-sim not built"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

{
	echo "# Expected per-job results of golden1.csv on 1x4:12:250, round 300 s, worked by hand (see golden.sh)."
	for c in prop:fifo tune:fifo greedy:fifo prop:srtf; do
		"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a "${c%:*}" -o "${c#*:}" -j - -q | sed 1d
	done
} >"$tmp/got" 2>"$tmp/err"
test_ok "golden1 runs" test ! -s "$tmp/err"
test_ok "golden1 per-job results match" diff -u "$dir/golden1.expected" "$tmp/got"

# The summary: TUNE's mean JCT beats PROP's on this trace, no violations.
"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a prop,tune,greedy,opt -o fifo,srtf,las,ftf >"$tmp/table"
test_ok "comparison table has 16 rows" test "$(grep -c -E '^(prop|tune|greedy|opt) ' "$tmp/table")" -eq 16
test_ok "no guarantee violations" awk '/^(prop|tune|greedy|opt) / && $11 != 0 { exit 1 }' "$tmp/table"
test_ok "tune/fifo mean JCT < prop/fifo" awk '$1=="prop"&&$2=="fifo"{p=$4} $1=="tune"&&$2=="fifo"{t=$4} END{exit !(t < p)}' "$tmp/table"

# Generated traces are reproducible from the seed.
"$sim" -n 50 -r 30 -s 7 --gpu-mix philly --split 33/33/33 --write-trace "$tmp/a.csv"
"$sim" -n 50 -r 30 -s 7 --gpu-mix philly --split 33/33/33 --write-trace "$tmp/b.csv"
test_ok "generator is deterministic" cmp -s "$tmp/a.csv" "$tmp/b.csv"
test_ok "generated trace has 50 jobs" test "$(grep -c '^[0-9]' "$tmp/a.csv")" -eq 50
# A written trace reads back and gives the same results as the generator.
"$sim" -n 50 -r 30 -s 7 --gpu-mix philly --split 33/33/33 -c 4x8:24:500 -j "$tmp/gen.out" -q
"$sim" -t "$tmp/a.csv" -c 4x8:24:500 -j "$tmp/read.out" -q
test_ok "trace round-trips through CSV" cmp -s "$tmp/gen.out" "$tmp/read.out"
test_ok "50/0/50 split has no language model" sh -c "! '$sim' -n 200 -s 3 --split 50/0/50 --write-trace - | grep -q -E 'gnmt|transformer|lstm'"

# Window jobs that finish after the last arrival (in the drain) are counted:
# none for an early window of a long stream, all of them at the very end.
"$sim" -n 2000 -r 10 -s 5 -c 4x8:24:500 -a tune -w 10-30 >"$tmp/early"
test_ok "early window: no drain line" sh -c "! grep -q 'after the last arrival' '$tmp/early'"
"$sim" -n 200 -r 30 -s 5 -c 4x8:24:500 -a tune -w 198-199 >"$tmp/late"
test_ok "last jobs' window: drain reported" grep -q "^# tune/fifo: 2 of 2 window jobs finished after the last arrival" "$tmp/late"

# The plot is a PNG.
if command -v gnuplot >/dev/null 2>&1; then
	"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a prop,tune --plot "$tmp/cdf.png" -q
	test_ok "JCT CDF plot written as PNG" sh -c "head -c 8 '$tmp/cdf.png' | grep -q PNG"
	"$sim" -n 60 -s 2 -c 2x8:24:500 --sweep 20,40 -a prop,tune --plot "$tmp/load.png" >"$tmp/sweep"
	test_ok "JCT vs load plot written as PNG" sh -c "head -c 8 '$tmp/load.png' | grep -q PNG"
	test_ok "sweep table has a row per rate" test "$(grep -c -E '^(20|40) ' "$tmp/sweep")" -eq 2
else
	test_skip "gnuplot not installed"
	test_skip "gnuplot not installed"
	test_skip "gnuplot not installed"
fi
done_testing

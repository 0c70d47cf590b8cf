#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# golden-live.sh: synergy-sim --live (the live-Slurm model) on small traces
# whose schedules were worked out by hand; the per-job results must match
# the checked-in expectation exactly. Sizing (syn_size_job): a job asks for
# at most its GPU share; resnet18 and m5 need all of it (3 cores, 62.5 GB),
# gnmt 1 core and 20.8 GB per GPU (21300 MB; 42599 MB for 2 GPUs).
#
# golden1.csv on 1x4:12:250 (share 3 cores, 64000 MB per GPU):
#   live-prop: as the rounds (J4 waits for a GPU until 600): J1 2400, J2
#     and J3 600, J4 1500.
#   live-tune: at 0 J1 (3, 64000), J2 (1, 21300), J3 (2, 42599) are
#     allotted; 6 cores are free and the node agent grants them to J1:
#     9 cores, 2.4x. At 600 J2 and J3 end and J4 (m5) starts with its
#     allotment (3, 64000); the plan over 6 free cores and 125 GB: J1 6
#     cores (1.85x), J4 6 cores and 187.5 GB (2.5x); J1 had
#     2400 - 600 x 2.4 = 960 s of work left. J4 ends at 600 + 900/2.5 =
#     960, J1 has 960 - 360 x 1.85 = 294 s left and takes its 9 cores
#     back: ends 960 + 294/2.4 = 1082.5 (2 changes; 2400/1082.5 = 2.217x).
#   live-tune --tune-steps 3 (sizing only, no node agent): every job at
#     its allotment runs at 1.0x: the live-prop times.
# golden2.csv on 1x2:6:125: J1 (resnet18) alone gets the 3 free cores: 6
#   cores, 1.85x. J2 (m5) arrives at 100 and starts at once (events, not
#   rounds): J1's grant is taken back, both at their allotment, nothing
#   free. J1 has 1000 - 185 = 815 s left: ends 915. Then J2 gets the free
#   3 cores and 62.5 GB: 6 cores and 125 GB, 2.0x; it has 900 - 815 = 85 s
#   left: ends 957.5 (900/857.5 = 1.050x). Each changed once.
# golden3.csv on 2x2:6:125: J1 (resnet18) goes to node 0 (the nodes tie),
#   J2 (gnmt, 3 GPUs) spans node 1 (2 GPUs: 2 cores) and node 0 (1 GPU:
#   1 core, 21300 MB). Node 0 has 2 cores free: J1 at 5 cores, 1.6x. At 600
#   J2 ends, J1 (2000 - 960 = 1040 s left) gets the third core: 6 cores,
#   1.85x: ends 600 + 1040/1.85 = 1162.2. A spanning job gets no grant.
. "$top_srcdir/tests/lib/tap.sh"
sim="$top_builddir/sim/synergy-sim"
dir="$top_srcdir/sim/test"
[ -x "$sim" ] || skip_all "synergy-sim not built"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

{
	echo "# Expected per-job results of the live-Slurm golden traces, worked by hand (see golden-live.sh)."
	"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a prop,tune --live -j - -q | sed 1d
	"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a tune --tune-steps 3 --live -j - -q | sed 1d
	"$sim" -t "$dir/golden2.csv" -c 1x2:6:125 -a prop,tune --live -j - -q | sed 1d
	"$sim" -t "$dir/golden3.csv" -c 2x2:6:125 -a prop,tune --live -j - -q | sed 1d
} >"$tmp/got" 2>"$tmp/err"
test_ok "live golden traces run" test ! -s "$tmp/err"
test_ok "live per-job results match" diff -u "$dir/golden-live.expected" "$tmp/got"

# --live=both: the rounds and live rows side by side, on the same trace.
"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a prop,tune --live=both >"$tmp/table"
test_ok "--live=both has 4 rows" test "$(grep -c -E '^(live-)?(prop|tune) ' "$tmp/table")" -eq 4
test_ok "no violations" awk '/^(live-)?(prop|tune) / && $11 != 0 { exit 1 }' "$tmp/table"
test_ok "live-tune mean JCT < live-prop" \
	awk '$1=="live-prop"{p=$4} $1=="live-tune"{t=$4} END{exit !(t < p)}' "$tmp/table"

# A generated workload with multi-GPU jobs: every plan checked, no
# violation (synergy-sim exits 1 on any), reproducible.
"$sim" -n 300 -r 20 -s 4 --gpu-mix philly --split 33/33/33 -c 4x8:24:500 -a prop,tune -o fifo,srtf \
	--live -j "$tmp/a.out" -q
test_ok "philly mix, live: runs without a violation" test $? -eq 0
"$sim" -n 300 -r 20 -s 4 --gpu-mix philly --split 33/33/33 -c 4x8:24:500 -a prop,tune -o fifo,srtf \
	--live -j "$tmp/b.out" -q
test_ok "live runs are deterministic" cmp -s "$tmp/a.out" "$tmp/b.out"
test_ok "every job finished" test "$(awk -F, 'NR > 1 && $8 < 0' "$tmp/a.out" | wc -l)" -eq 0

# Usage: only prop and tune have a live form; --live takes only 'both'.
"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a greedy --live >/dev/null 2>"$tmp/err"
test_ok "--live -a greedy is a usage error" test $? -eq 2
test_ok "... that names the allocator" grep -q "allocator 'greedy' has no live form" "$tmp/err"
"$sim" --live=sometimes >/dev/null 2>&1
test_ok "--live=sometimes is a usage error" test $? -eq 2
"$sim" --help >"$tmp/help"
test_ok "--help documents --live" grep -q -- "--live\[=both\]" "$tmp/help"
test_ok "--help prints one percent sign (70/10/15/5%)" sh -c "grep -q '70/10/15/5% of' '$tmp/help' && ! grep -q '%%' '$tmp/help'"
done_testing

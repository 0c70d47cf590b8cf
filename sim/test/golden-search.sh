#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# golden-search.sh: hyperparameter searches in synergy-sim (CoorDL's
# coordinated prep, issue 15): a golden trace worked out by hand, traces
# without searches unchanged, and properties over generated workloads.
#
# golden4.csv on one node of 4 GPUs, 12 cores, 250 GB (share 3 cores,
# 62.5 GB per GPU), rounds of 300 s: J1, J2 are the two 1-GPU resnet18
# trials of search 1, J3 a 2-GPU gnmt (flat: 1.0 everywhere). resnet18's
# throughput is min(cpu factor, memory factor): 1.0 at 3 cores, 1.6 at 5,
# 1.85 at 6, 2.4 at 9 and above, at 62.5 GB (memory factor 2.4 there).
# With coordination J1 and J2 prepare each batch once for both: planned as
# one 2-GPU job whose profile is resnet18's with its cores axis halved
# (syn_profile_group), so C cores in all run each of them as resnet18 at C.
#   prop (rounds): the composite at its share, 6 cores: each trial at
#     resnet18's 6-core 1.85x (alone, each would run at 1.0x, so the
#     composite is kept); J3 ends at 600; the trials at 1800/1.85 = 973.0.
#   tune (rounds): the composite's best case is 4.5 cores per GPU (9 in
#     all: 2.4x each) and 62.5 GB; J3's 1 core and 20.8 GB per GPU; 11 of
#     12 cores, the 12th gains nothing. Trials end at 1800/2.4 = 750.
#   live-prop: each trial allotted its share (3 cores, 64000 MB), J3 its
#     share; the node is planned without grants: the group's 6 cores give
#     each trial 1.85x, as in the rounds: 973.0.
#   live-tune: trials sized at their share (3, 64000), J3 at 2 cores,
#     42599 MB; 4 cores are free: the group is granted 3 of them (2 + 1:
#     9 cores in all, 2.4x; the 4th gains nothing): 750.
# Without coordination (--coord off):
#   prop, live-prop: every job at 1.0x: trials end at 1800.
#   tune: J1 takes its best case (9 cores), J2 its share (3); J3 finds no
#     core, J1 is pushed back to 3 and J3 placed at its share (6); step 5
#     moves J3's cores above its 1 core per GPU to J1 and J2: 5 each,
#     1.6x. At 600 J3 ends: 6 cores each, 1.85x. 1800 - 600 x 1.6 = 840 s
#     of work left: ends 600 + 840/1.85 = 1054.1 (1 change each; speedup
#     the mean over 4 rounds: (1.6 + 1.6 + 1.85 + 1.85)/4 = 1.725).
#   live-tune: allotted 3 cores each, J3 2; the 4 free cores are granted
#     2 + 2: 5 cores, 1.6x; at 600 J3's 2 are freed: 6 each, 1.85x: ends
#     1054.1 (time-weighted (1.6 x 600 + 1.85 x 454.05)/1054.05 = 1.708).
. "$top_srcdir/tests/lib/tap.sh"
sim="$top_builddir/sim/synergy-sim"
dir="$top_srcdir/sim/test"
[ -x "$sim" ] || skip_all "synergy-sim not built"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

{
	echo "# Expected per-job results of golden4.csv on 1x4:12:250, worked by hand (see golden-search.sh)."
	for co in on off; do
		echo "# --coord $co"
		"$sim" -t "$dir/golden4.csv" -c 1x4:12:250 -a prop,tune --coord "$co" -j - -q | sed 1d
		"$sim" -t "$dir/golden4.csv" -c 1x4:12:250 -a prop,tune --coord "$co" --live -j - -q | sed 1d
	done
} >"$tmp/got" 2>"$tmp/err"
test_ok "golden4 runs" test ! -s "$tmp/err"
test_ok "golden4 per-job results match" diff -u "$dir/golden4.expected" "$tmp/got"

# Composites of at most what one node holds (rounds), worked by hand on
# 1x4:12:250: a search of three 2-GPU resnet18 trials, 1300 s each. Under
# prop J1 and J2 form a composite of 4 GPUs (a third would not fit a node);
# at its share, 6 cores per trial: 1.85x, ends 1300/1.85 = 702.7; J3 waits
# for GPUs, starts alone at the round at 900 and ends 900 + 1300 = 2200.
# Without coordination J1 and J2 end at 1300, J3 runs 1500-2800.
printf '%s\n' "id,arrival_s,gpus,duration_s,model,group" "1,0,2,1300,resnet18,5" \
	"2,0,2,1300,resnet18,5" "3,0,2,1300,resnet18,5" >"$tmp/three.csv"
"$sim" -t "$tmp/three.csv" -c 1x4:12:250 -a prop -j - -q | cut -d, -f3,7,8 >"$tmp/got3"
printf '%s\n' "id,start_s,finish_s" "1,0.0,702.7" "2,0.0,702.7" "3,900.0,2200.0" >"$tmp/want3"
test_ok "a search larger than a node: a composite of what fits, the rest waits" diff -u "$tmp/want3" "$tmp/got3"
"$sim" -t "$tmp/three.csv" -c 1x4:12:250 -a prop --coord off -j - -q | cut -d, -f3,7,8 >"$tmp/got3"
printf '%s\n' "id,start_s,finish_s" "1,0.0,1300.0" "2,0.0,1300.0" "3,1500.0,2800.0" >"$tmp/want3"
test_ok "... and without coordination" diff -u "$tmp/want3" "$tmp/got3"
# m5's best case is 187.5 GB per GPU: one node of 250 GB holds that for
# one trial only, so under tune two m5 trials never form a composite (each
# would give up cache it gets apart) and run as with --coord off; under
# prop (every job at its cache share anyway) they do: 6 cores for each at
# 62.5 GB: m5 min(2.5, 1.3) = 1.3x.
printf '%s\n' "id,arrival_s,gpus,duration_s,model,group" "1,0,1,1300,m5,2" "2,0,1,1300,m5,2" >"$tmp/m5.csv"
"$sim" -t "$tmp/m5.csv" -c 1x4:12:250 -a tune >"$tmp/m5.tab"
"$sim" -t "$tmp/m5.csv" -c 1x4:12:250 -a tune -j "$tmp/a" -q
"$sim" -t "$tmp/m5.csv" -c 1x4:12:250 -a tune --coord off -j "$tmp/b" -q
test_ok "tune: m5 trials whose cache does not fit one node together never share" \
	sh -c "grep -q 'tune/fifo: 2 search trials: 0 trial-rounds sharing prep' '$tmp/m5.tab' && cmp -s '$tmp/a' '$tmp/b'"
"$sim" -t "$tmp/m5.csv" -c 1x4:12:250 -a prop -j - -q | cut -d, -f3,8,11 >"$tmp/got3"
printf '%s\n' "id,finish_s,speedup" "1,1000.0,1.300" "2,1000.0,1.300" >"$tmp/want3"
test_ok "prop: the m5 trials share, 1.3x" diff -u "$tmp/want3" "$tmp/got3"

# Without the group column, or with coordination off, a search is just jobs.
sed -e 's/,model,group$/,model/' -e 's/^\([0-9][^#]*\),[0-9]*$/\1/' "$dir/golden4.csv" >"$tmp/nogroup.csv"
test_ok "golden4 without its group column is a 5-column trace" \
	grep -qx 'id,arrival_s,gpus,duration_s,model' "$tmp/nogroup.csv"
for m in "" --live; do
	"$sim" -t "$tmp/nogroup.csv" -c 1x4:12:250 -a prop,tune $m -j "$tmp/a" -q
	"$sim" -t "$dir/golden4.csv" -c 1x4:12:250 -a prop,tune --coord off $m -j "$tmp/b" -q
	test_ok "--coord off${m:+ $m}: the search's trials run as jobs of their own" cmp -s "$tmp/a" "$tmp/b"
done

# 5-column traces are unchanged: golden1 with an empty or 0 group column
# gives golden1's results, with coordination on.
for g in "" 0; do
	awk -v g="$g" '/^id,/ { print $0 ",group"; next } /^[0-9]/ { print $0 "," g; next } { print }' \
		"$dir/golden1.csv" >"$tmp/g1.csv"
	for m in "" --live; do
		"$sim" -t "$dir/golden1.csv" -c 1x4:12:250 -a prop,tune $m -j "$tmp/a" -q
		"$sim" -t "$tmp/g1.csv" -c 1x4:12:250 -a prop,tune $m -j "$tmp/b" -q
		test_ok "golden1 with group '$g'${m:+ $m}: the same results" cmp -s "$tmp/a" "$tmp/b"
	done
done

# The generator: no searches unless asked (--search K:0 is none), and a
# search is K trials of one model, GPUs, arrival and duration.
"$sim" -n 200 -s 9 --gpu-mix philly --write-trace "$tmp/plain.csv"
"$sim" -n 200 -s 9 --gpu-mix philly --search 4:0 --write-trace "$tmp/zero.csv"
test_ok "--search K:0 generates the workload without searches" cmp -s "$tmp/plain.csv" "$tmp/zero.csv"
test_ok "a trace without searches is written with 5 columns" \
	grep -qx 'id,arrival_s,gpus,duration_s,model' "$tmp/plain.csv"
"$sim" -n 200 -s 9 --gpu-mix philly --search 4:0.5 --write-trace "$tmp/s.csv"
test_ok "searches: the group column is written" grep -qx 'id,arrival_s,gpus,duration_s,model,group' "$tmp/s.csv"
test_ok "searches of 4 trials sharing arrival, GPUs, duration and model" awk -F, '
	/^[0-9]/ && $6 != 0 { n[$6]++; k = $2 "," $3 "," $4 "," $5; if ($6 in key && key[$6] != k) bad++; key[$6] = k }
	END { for (g in n) { groups++; if (n[g] != 4 && g != last) short++ } exit !(groups > 10 && !bad && short <= 1) }' "$tmp/s.csv"
"$sim" -n 200 -s 9 --gpu-mix philly --search 4:0.5 -c 4x8:24:500 -a prop,tune -j "$tmp/gen.out" -q
"$sim" -t "$tmp/s.csv" -c 4x8:24:500 -a prop,tune -j "$tmp/read.out" -q
test_ok "a trace with searches round-trips through CSV" cmp -s "$tmp/gen.out" "$tmp/read.out"

# Properties over generated workloads with searches, rounds and live:
# the policy's checks hold with coordination on and off (exit 0, no
# violations), no trial runs slower sharing prep than alone at the same
# cores and cache per GPU, and under prop (where every job runs at 1.0x
# without coordination) no trial runs slower with it than without.
for spec in "4:0.3 1" "8:0.2 2" "4:0.5 3"; do
	set -- $spec
	gen="-n 150 -r 20 -s $2 --gpu-mix philly --search $1"
	"$sim" $gen --write-trace "$tmp/trace.csv"
	for m in "" --live; do
		tag="search $1 seed $2${m:+ $m}"
		"$sim" -t "$tmp/trace.csv" -c 4x8:24:500 $m -a prop,tune -j "$tmp/on" >"$tmp/on.tab" 2>"$tmp/on.err"
		rc_on=$?
		"$sim" -t "$tmp/trace.csv" -c 4x8:24:500 $m -a prop,tune --coord off -j "$tmp/off" \
			>"$tmp/off.tab" 2>"$tmp/off.err"
		rc_off=$?
		test_ok "$tag: coordination on and off run with no violations" \
			test "$rc_on" -eq 0 -a "$rc_off" -eq 0 -a ! -s "$tmp/on.err" -a ! -s "$tmp/off.err"
		test_ok "$tag: trials shared their prep, none slower than alone" awk '
			/search trials:/ { n++; if ($(NF-5) != 0) bad++; if ($6 + 0 == 0) none++ }
			END { exit !(n == 2 && !bad && !none) }' "$tmp/on.tab"
		test_ok "$tag: under prop no trial runs slower with coordination, some faster" awk -F, '
			FNR == 1 { f++ }
			f == 1 && $1 ~ /prop$/ { on[$3] = $11 }
			f == 2 && $1 ~ /prop$/ { off[$3] = $11 }
			f == 3 && /^[0-9]/ && $6 != 0 { m[$1] = 1 }
			END { for (i in m) { n++; if (!(i in on) || on[i] < off[i]) bad++; if (on[i] > off[i]) faster++ }
			      exit !(n > 0 && !bad && faster > 0) }' "$tmp/on" "$tmp/off" "$tmp/trace.csv"
	done
done
# Every ordering: composites stand where their trials would (LAS by a
# trial's service x GPUs), so trials share prep under each of them.
"$sim" -n 150 -r 8 -s 4 --gpu-mix philly --search 8:0.4 -c 4x8:24:500 -a prop,tune,greedy \
	-o fifo,srtf,las,ftf >"$tmp/ord.tab" 2>"$tmp/ord.err"
rc=$?
"$sim" -n 150 -r 8 -s 4 --gpu-mix philly --search 8:0.4 -c 4x8:24:500 -a prop,tune \
	-o fifo,srtf,las,ftf --live >>"$tmp/ord.tab" 2>>"$tmp/ord.err"
test_ok "every allocator and ordering, rounds and live: no violations" test $rc -eq 0 -a $? -eq 0 -a ! -s "$tmp/ord.err"
test_ok "... trials share prep under every one of them, none slower than alone" awk '
	/search trials:/ { n++; if ($(NF-5) != 0) bad++; if ($6 + 0 < 100) few++ }
	END { exit !(n == 20 && !bad && !few) }' "$tmp/ord.tab"
done_testing

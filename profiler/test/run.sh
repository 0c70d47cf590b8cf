#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# run.sh: a profiling run end to end on a small generated dataset: run
# stores a valid profile (the store reader accepts it), show and what-if
# read it back, and the measured CPU points and memory check are reported.
# With --ckpt-bytes it also measures CheckFreq checkpoints, records their
# costs and show reports the interval for a bound.
# Skips when the dataset generator is not built. Asserts structure, never
# speed.
. "$top_srcdir/tests/lib/tap.sh"
sp="$top_builddir/profiler/synergy-profile"
gen="$top_builddir/tools/coordl-datagen"
[ -x "$sp" ] || skip_all "synergy-profile not built"
[ -x "$gen" ] || skip_all "tools/coordl-datagen not built"
tmp=$(mktemp -d /tmp/syn-run-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$gen" --out "$tmp/ds" --classes 4 --images 96 --seed 7 --width-range 160-240 -j 1 > /dev/null ||
	skip_all "coordl-datagen failed"
"$sp" run -q --store "$tmp/store" --key e2e --gpu-rate 400 --batch-size 8 --size 64 \
	--max-threads 2 --windows 2 --window-batches 3 --grid-cpus 1,2,4 --prop-cpus 2 --prop-mem 1 \
	"$tmp/ds" > "$tmp/run.out" 2> "$tmp/run.err"
rc=$?
test_ok "run exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || diag "$(cat "$tmp/run.err")"
test_ok "the profile is in the store" test -f "$tmp/store/e2e.json"
test_ok "no temporary file left in the store" \
	sh -c "! ls -A '$tmp/store' | grep -q '^\\.'"
test_ok "run reports the CPU search starting at the most threads" grep -q '^prep   2 threads' "$tmp/run.out"
test_ok "run reports the measured memory point" grep -q '^memory check .*(hit rate' "$tmp/run.out"
test_ok "show reads it back from the store" \
	sh -c "'$sp' show --store '$tmp/store' e2e | grep -q '^dataset   96 items'"
test_ok "the grid has the requested rows" \
	sh -c "'$sp' show --store '$tmp/store' e2e | awk '/^ +cpus/ {f=1; next} f && !NF {exit} f {print \$1}' | tr '\\n' ' ' | grep -qx '1 2 4 '"
test_ok "the proportional share evaluates to 1.0" \
	sh -c "'$sp' what-if --store '$tmp/store' e2e --cpus 2 --cache 1G | grep -q '^normalised   1.0000'"
test_ok "a what-if prediction is positive" \
	sh -c "'$sp' what-if --store '$tmp/store' e2e --cpus 1 --cache 0 | awk '/^throughput/ {exit !(\$2 > 0)}'"
test_ok "run --out writes a file instead" \
	"$sp" run -q --out "$tmp/p.json" --key e2e2 --batch-size 8 --size 64 --max-threads 1 \
	--windows 1 --window-batches 2 --check-frac 0 --cold none "$tmp/ds"
test_ok "that file is a valid profile" sh -c "'$sp' show '$tmp/p.json' | grep -q '^profile   e2e2'"
# Checkpoints: measured with the real engine, recorded, reported.
mkdir "$tmp/ck"
"$sp" run -q --out "$tmp/ck.json" --key ck --gpu-rate 400 --batch-size 8 --size 64 --max-threads 1 \
	--windows 1 --window-batches 2 --check-frac 0 --cold none --ckpt-bytes 4M --ckpt-reps 2 \
	--ckpt-dir "$tmp/ck" "$tmp/ds" > "$tmp/ck.out" 2> "$tmp/ck.err"
rc=$?
test_ok "run --ckpt-bytes 4M exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || diag "$(cat "$tmp/ck.err")"
sed -n '/^checkpoint/,/adds/s/^/# /p' "$tmp/ck.out"
test_ok "it reports the snapshot, the write and what they add" \
	sh -c "grep -q '^checkpoint  *4.0 MiB' '$tmp/ck.out' && grep -q '^  snapshot ' '$tmp/ck.out' && grep -q '^  write ' '$tmp/ck.out' && grep -q '^  adds ' '$tmp/ck.out'"
test_ok "the profile records the checkpoint" grep -q '"state_bytes": 4194304' "$tmp/ck.json"
test_ok "nothing is left in the checkpoint directory" test -z "$(ls -A "$tmp/ck")"
show=$("$sp" show "$tmp/ck.json")
test_ok "show gives its costs and memory (2 buffers of 4 MiB + 1 MiB, in 2 MiB: 12 MB)" \
	sh -c "echo '$show' | grep -q '^ckpt      4.0 MiB of state: .*memory 12 MB (2 buffers)'"
test_ok "and the interval CheckFreq would choose at 3.5%" \
	sh -c "echo '$show' | grep -q 'CheckFreq at 3.5%: every [0-9]* iterations of 8 samples'"
# Worked by hand: 12 samples at 400/s are 0.03 s iterations; 0.1 s per
# checkpoint within 3.5% needs 0.1 / (0.035 x 0.03) = 95.2 -> 96
# iterations, within 1% 333.3 -> 334; 1 GiB of state takes 2 x 513 x 2 MB.
cat >"$tmp/ckhand.json" <<EOP
{ "schema": 1, "key": "ckhand", "cpus": [1], "mem_gb": [0], "tput": [[1]], "prop_cpus": 1,
  "prop_mem_gb": 0, "base_tput": 400,
  "checkpoint": { "state_bytes": 1073741824, "batch": 12, "snapshot_s": 0.2, "persist_s": 1.5,
                  "overhead_s": 0.1 } }
EOP
show=$("$sp" show "$tmp/ckhand.json")
test_ok "by hand: every 96 iterations at 3.5%" \
	sh -c "echo '$show' | grep -q 'CheckFreq at 3.5%: every 96 iterations of 12 samples (0.030 s each'"
test_ok "by hand: 2052 MB of snapshot memory" sh -c "echo '$show' | grep -q 'memory 2052 MB'"
test_ok "by hand: every 334 iterations at --ckpt-bound 0.01" \
	sh -c "'$sp' show --ckpt-bound 0.01 '$tmp/ckhand.json' | grep -q 'CheckFreq at 1.0%: every 334 iterations'"
env -u SYNERGY_CKPT_DIR "$sp" run -q --out "$tmp/x.json" --ckpt-bytes 4M "$tmp/ds" > /dev/null 2> "$tmp/bad.err"
rc=$?
test_ok "--ckpt-bytes without a directory is a usage error (exit $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'ckpt-dir' '$tmp/bad.err'"
"$sp" run -q --out "$tmp/x.json" --ckpt-bytes 0 "$tmp/ds" > /dev/null 2> "$tmp/bad.err"
rc=$?
test_ok "--ckpt-bytes 0 is a usage error (exit $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'ckpt-bytes' '$tmp/bad.err'"
# what-if --members on a profile where more cores help (written here: a
# measured one may come out bound by its reads on a busy machine, where
# a second core changes nothing and the check would say nothing).
norm() { awk '/^normalised/ { print $2 }'; }
cat >"$tmp/prep.json" <<EOP
{ "schema": 1, "key": "prep", "model": "run.sh", "cpus": [1, 2, 4],
  "mem_gb": [0], "tput": [[0.5], [1.0], [1.6]], "prop_cpus": 1, "prop_mem_gb": 0,
  "base_tput": 0 }
EOP
n1=$("$sp" what-if "$tmp/prep.json" --cpus 2 --cache 0 | norm)
n2=$("$sp" what-if "$tmp/prep.json" --cpus 1 --cache 0 --members 2 | norm)
n0=$("$sp" what-if "$tmp/prep.json" --cpus 1 --cache 0 | norm)
test_ok "what-if --members 2 at 1 cpu: each member as one job at 2 cpus ($n2 = $n1; alone $n0)" \
	sh -c "[ -n '$n2' ] && [ '$n2' = '$n1' ] && [ '$n0' != '$n1' ]"
test_ok "what-if --members says so" \
	sh -c "'$sp' what-if '$tmp/p.json' --cpus 1 --cache 0 --members 2 | grep -q '^group        2 members'"
test_ok "what-if --json --members names the members" \
	sh -c "'$sp' what-if --json '$tmp/p.json' --cpus 1 --cache 0 --members 2 | grep -q '\"members\": 2'"
# measure --members: a coordinated-prep group measured directly (issue 15).
"$sp" measure --members 2 --threads 2 --cache 0 --epochs 2 --batch-size 8 --size 64 --cold none \
	"$tmp/ds" > "$tmp/grp.out" 2> "$tmp/grp.err"
rc=$?
test_ok "measure --members 2 exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || diag "$(cat "$tmp/grp.err")"
sed 's/^/# /' "$tmp/grp.out"
test_ok "one line per member, each with one worker, in a group of 2" \
	test "$(grep -Ec '^member [01] threads 1 .* members 2$' "$tmp/grp.out")" = 2
test_ok "each member received batches the other prepared" \
	sh -c "awk '/^member/ { for (i = 1; i < NF; i++) if (\$i == \"received\") r = \$(i + 1); if (!(r > 0)) bad = 1 } END { exit bad }' '$tmp/grp.out'"
test_ok "the group prepared each batch about once (passes <= 1.2)" \
	awk '/^group/ { for (i = 1; i < NF; i++) if ($i == "passes") p = $(i + 1) } END { exit !(p >= 0.8 && p <= 1.2) }' "$tmp/grp.out"
test_ok "the group's CPU time is reported" \
	awk '/^group/ { for (i = 1; i < NF; i++) if ($i == "cpu_s") c = $(i + 1) } END { exit !(c > 0) }' "$tmp/grp.out"
test_ok "nothing of the group is left in /dev/shm" \
	sh -c "! ls /dev/shm | grep -q '^synprof-grp-'"
for bad in "--members 0" "--members 17" "--members 3 --threads 2" "--members x"; do
	# shellcheck disable=SC2086
	"$sp" measure $bad --threads 2 --cache 0 "$tmp/ds" > /dev/null 2> "$tmp/bad.err"
	rc=$?
	test_ok "measure $bad is refused with a usage error (exit $rc): $(head -1 "$tmp/bad.err")" \
		sh -c "[ $rc -eq 2 ] && grep -q members '$tmp/bad.err'"
done
# A profiler run inside a job of a group never joins it.
# A member's segment exists while it runs (the last one out removes it), so
# the directory is watched during the run: 96 samples at 100/s take ~1 s.
mkdir -m 0700 "$tmp/g"
gname=synprof-test-$$
SYNERGY_GROUP=$gname SYNERGY_GROUP_DIR="$tmp/g" "$sp" measure --threads 1 --cache 0 --epochs 1 \
	--gpu-rate 100 --batch-size 8 --size 64 --cold none "$tmp/ds" > /dev/null 2>&1 &
mpid=$!
seen=
while kill -0 "$mpid" 2>/dev/null; do
	# Its directory, or the default place of a segment without one.
	[ -n "$(ls -A "$tmp/g")" ] && seen=yes
	ls /dev/shm | grep -q -- "-grp-$gname-" && seen=yes
	sleep 0.05
done
wait "$mpid"
test_ok "a profiler in a job's group runs outside it (nothing made in its directory)" \
	test -z "$seen"
done_testing

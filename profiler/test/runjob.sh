#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# runjob.sh: `synergy-profile run -- CMD` end to end. A real command
# (coordl-bench with an emulated GPU) on a small generated dataset: its own
# loader enters profiling mode through the environment (SYNERGY_PROFILE_MODE,
# SYNERGY_PROFILE_OUT), runs the CPU search live and writes its report; the
# CLI turns the report into a stored profile. A failing command's exit
# status is forwarded, and a command that never made a report is an error
# that says so. Asserts structure, never speed.
. "$top_srcdir/tests/lib/tap.sh"
sp="$top_builddir/profiler/synergy-profile"
gen="$top_builddir/tools/coordl-datagen"
bench="$top_builddir/bench/coordl-bench"
[ -x "$sp" ] || skip_all "synergy-profile not built"
[ -x "$gen" ] || skip_all "tools/coordl-datagen not built"
[ -x "$bench" ] || skip_all "bench/coordl-bench not built"
tmp=$(mktemp -d /tmp/syn-runjob-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset SYNERGY_THREADS SYNERGY_PROFILE_MODE SYNERGY_PROFILE_OUT

"$gen" --out "$tmp/ds" --classes 4 --images 96 --seed 5 --width-range 160-240 -j 1 > /dev/null ||
	skip_all "coordl-datagen failed"
ncpu=$(nproc)
# 96 images in batches of 4: 24 batches per epoch; 8 epochs leave room for
# the search's points (about 30 batches each) on up to 4 cores.
job="$bench -e 8 -g 2000 -b 4 -s 32 $tmp/ds"

# The loader alone, in profiling mode.
SYNERGY_PROFILE_MODE=1 SYNERGY_PROFILE_OUT="$tmp/rep.json" $job > /dev/null 2> "$tmp/bench.err"
test_ok "a job in profiling mode runs" test $? -eq 0
test_ok "its loader wrote the report" test -f "$tmp/rep.json"
test_ok "the report is complete (the search ended)" grep -q '"complete": true' "$tmp/rep.json"
first=$(sed -n 's/.*{ "threads": \([0-9]*\),.*/\1/p' "$tmp/rep.json" | head -1)
if [ "$ncpu" -ge 1 ] && [ "$ncpu" -le 4 ]; then
	test_ok "the search starts at the most threads ($ncpu)" test "$first" = "$ncpu"
else
	test_skip "more than 4 cores: the job may end before the search"
fi
test_ok "no temporary report file left" sh -c "! ls '$tmp' | grep -q 'rep.json.tmp'"
mkdir "$tmp/noout"
(cd "$tmp/noout" && SYNERGY_PROFILE_MODE=1 $job > /dev/null 2> "$tmp/noout.err")
test_ok "profiling mode without SYNERGY_PROFILE_OUT: the job trains normally" test $? -eq 0
test_ok "  and writes nothing" test -z "$(ls -A "$tmp/noout")"

# Through the CLI.
"$sp" run -q --store "$tmp/store" --key job1 --grid-cpus 1,2,4 --prop-cpus 1 --prop-mem 1 \
	-- $job > "$tmp/run.out" 2> "$tmp/run.err"
rc=$?
test_ok "run -- CMD exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || diag "$(cat "$tmp/run.err")"
test_ok "the profile is in the store" test -f "$tmp/store/job1.json"
test_ok "the job's points are reported" grep -Eq "^job +$ncpu threads? " "$tmp/run.out"
test_ok "show reads it back" sh -c "'$sp' show --store '$tmp/store' job1 | grep -q '^dataset   96 items'"
test_ok "the GPU rate was measured from the consumer" \
	sh -c "'$sp' show --store '$tmp/store' job1 | awk '/^rates/ {exit !(\$3 > 0)}'"
test_ok "the proportional share evaluates to 1.0" \
	sh -c "'$sp' what-if --store '$tmp/store' job1 --cpus 1 --cache 1G | grep -q '^normalised   1.0000'"

"$sp" run -q --out "$tmp/x.json" -- sh -c 'exit 3' 2> "$tmp/fail.err"
test_ok "a failing command's exit status is forwarded" test $? -eq 3
test_ok "  with a message" grep -q "exited with status 3" "$tmp/fail.err"
"$sp" run -q --out "$tmp/x.json" -- true 2> "$tmp/none.err"
test_ok "a command that made no report: exit 1" test $? -eq 1
test_ok "  saying so" grep -q "produced no profiling report" "$tmp/none.err"
test_ok "  and no profile written" test ! -e "$tmp/x.json"
"$sp" run -q --out "$tmp/x.json" -- 2> /dev/null
test_ok "run -- without a command: usage error" test $? -eq 2
done_testing

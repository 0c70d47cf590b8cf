#!/bin/sh
# run.sh: a profiling run end to end on a small generated dataset: run
# stores a valid profile (the store reader accepts it), show and what-if
# read it back, and the measured CPU points and memory check are reported.
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
done_testing

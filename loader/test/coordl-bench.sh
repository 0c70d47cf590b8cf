#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# coordl-bench.sh: the benchmark tool end to end on a small generated
# dataset with corrupt files: one row per epoch, the MinIO cache makes later
# epochs read nothing, corrupt items are counted, the environment contract
# is honoured and checked, and bad arguments are refused.
. "${top_srcdir:-.}/tests/lib/tap.sh"
bench="${top_builddir:-.}/bench/coordl-bench"
gen="${top_builddir:-.}/tools/coordl-datagen"
[ -x "$bench" ] || skip_all "bench/coordl-bench not built"
[ -x "$gen" ] || skip_all "tools/coordl-datagen not built"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coordl-bench-t.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset SYNERGY_THREADS SYNERGY_CACHE_BYTES SYNERGY_CACHE_NAME SYNERGY_CACHE_DIR

"$gen" --out "$tmp/ds" --classes 3 --images 45 --seed 3 --corrupt 3 \
	--width-range 64-96 --jobs 1 >/dev/null 2>&1 || skip_all "coordl-datagen failed"

test_ok "--help prints usage" sh -c "'$bench' --help | grep -q Usage"
usage_error() { "$bench" --no-such-option "$tmp/ds" >/dev/null 2>&1; [ $? -eq 2 ]; }
test_ok "an unknown option is a usage error (exit 2)" usage_error
bad_cache() { "$bench" --cache 12X "$tmp/ds" 2>"$tmp/err" >/dev/null; [ $? -eq 1 ] && grep -q -- '--cache' "$tmp/err"; }
test_ok "a bad --cache value is refused naming the option" bad_cache

"$bench" -e 3 -t 2 -s 32 -b 8 -c 64M "$tmp/ds" >"$tmp/out" 2>"$tmp/err"
test_ok "three epochs run" test "$(grep -c '^ *[0-9]' "$tmp/out")" -eq 3
col() { awk -v e="$1" -v c="$2" '$1 == e && $1 ~ /^[0-9]+$/ { print $c }' "$tmp/out"; }
test_ok "epoch 0 reads from storage" test "$(col 0 9)" != "0.0"
test_ok "epochs 1 and 2 are served by the cache" test "$(col 1 9)" = "0.0" -a "$(col 2 9)" = "0.0"
# Every item but the empty corrupt file (nothing to cache) is a hit.
hits_ok() { awk -v h="$(col 1 8)" 'BEGIN { exit !(h >= 95 && h < 100) }'; }
test_ok "epoch 1 hits all but the empty file" hits_ok
# A replacement drawn at random may itself be corrupt and count again.
test_ok "the 3 corrupt files are counted every epoch" test "$(col 0 11)" -ge 3 -a "$(col 2 11)" -ge 3
test_ok "the last corrupt item is named" grep -q '^# last corrupt item: .*corrupt' "$tmp/out"
diag "$(cat "$tmp/out")"

gpu() { "$bench" -e 1 -t 1 -s 16 -b 16 -m synthetic -g 100000 "$tmp/ds" | grep -q 'emulated GPU: 100000'; }
test_ok "an emulated GPU run completes" gpu
env_threads() { SYNERGY_THREADS=1 "$bench" -e 1 -m raw "$tmp/ds" | grep -q 'threads 1,'; }
test_ok "SYNERGY_THREADS sets the thread count" env_threads
api_wins() { SYNERGY_THREADS=1 "$bench" -e 1 -t 2 -m raw "$tmp/ds" | grep -q 'threads 2,'; }
test_ok "--threads wins over SYNERGY_THREADS" api_wins
env_bad() { SYNERGY_THREADS=lots "$bench" -e 1 -m raw "$tmp/ds" 2>"$tmp/err" >/dev/null; [ $? -eq 1 ] && grep -q SYNERGY_THREADS "$tmp/err"; }
test_ok "a malformed SYNERGY_THREADS is an error naming it" env_bad
done_testing

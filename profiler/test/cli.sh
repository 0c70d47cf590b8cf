#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# cli.sh: golden-output tests of synergy-profile show / what-if on the
# checked-in profile, list over a store holding good and corrupt files, the
# store lookup through synergy.conf, the stall report (text and --json),
# what-if on several nodes (the partitioned cache, issue 14) and the CLI's
# error paths.
. "$top_srcdir/tests/lib/tap.sh"
sp="$top_builddir/profiler/synergy-profile"
data="$top_srcdir/profiler/test/data"
[ -x "$sp" ] || skip_all "synergy-profile not built"
tmp=$(mktemp -d /tmp/syn-cli-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Golden files hold the output for the profile in the data directory; the
# file operand is printed nowhere, so they do not depend on the path.
test_ok "show matches the golden table" \
	sh -c "'$sp' show '$data/resnet18.json' | diff -u '$data/show-resnet18.out' -"
whatif() {
	"$sp" what-if "$data/resnet18.json" --cpus 3 --cache 62.5G &&
	"$sp" what-if "$data/resnet18.json" --cpus 4 --cache 100G &&
	"$sp" what-if "$data/resnet18.json" --cpus 24 --cache 1T &&
	"$sp" what-if "$data/resnet18.json" --cpus 7.5 --cache 20.8G
}
whatif > "$tmp/whatif.out" 2>&1
test_ok "what-if matches the golden predictions (share, inside, clamped, between rows)" \
	diff -u "$data/whatif-resnet18.out" "$tmp/whatif.out"
# A profile of a remote dataset: latency and concurrency are shown, and
# what-if adds the storage rate Q/L and the fetch ceiling at its cache size.
test_ok "show of a remote profile matches the golden table" \
	sh -c "'$sp' show '$data/remote.json' | diff -u '$data/show-remote.out' -"
whatif_remote() {
	"$sp" what-if "$data/remote.json" --cpus 12 --cache 0 &&
	"$sp" what-if "$data/remote.json" --cpus 3 --cache 62.5G
}
whatif_remote > "$tmp/whatif-remote.out" 2>&1
test_ok "what-if of a remote profile predicts the storage rate and the fetch ceiling" \
	diff -u "$data/whatif-remote.out" "$tmp/whatif-remote.out"
# The stall report (DS-Analyzer's answers) as JSON: at the share for show,
# at the grant for what-if. Hand-checked for resnet18 at the share: G =
# 2040 / 812.5 = 2.511, cached (clamped at 125 GiB) 1.02: GPU 39.8%, prep
# stall 1/1.02 - 1/2.511 = 58.2%, fetch stall 2.0%; 9 cpus give 2.5 >=
# 0.99 G; 62.5 + 62.5 * 0.0098 / 0.02 = 93.125 GiB reach 0.99 * 1.02.
test_ok "show --json: the stall report at the share (golden)" \
	sh -c "'$sp' show --json '$data/resnet18.json' | diff -u '$data/report-resnet18.json' -"
test_ok "what-if --json: the stall report at the grant (golden)" \
	sh -c "'$sp' what-if --json '$data/resnet18.json' --cpus 7.5 --cache 20.8G |
		diff -u '$data/report-whatif-resnet18.json' -"
test_ok "show names what bounds the job at the share" \
	sh -c "'$sp' show '$data/resnet18.json' | grep -q '^  bound      prep\$'"
# A profile that predicts nothing at its share has no report: exit 1, named.
sed 's/\[0.98, 1, 1.02\]/[0, 0, 0]/' "$data/resnet18.json" > "$tmp/zero.json"

# A store with one good profile, one corrupt and one of a future schema.
store="$tmp/store"
mkdir "$store"
sed 's/"key": "resnet18"/"key": "r18"/' "$data/resnet18.json" > "$store/r18.json"
head -c 200 "$data/resnet18.json" > "$store/torn.json"
sed 's/"schema": 1/"schema": 7/; s/"key": "resnet18"/"key": "future"/' "$data/resnet18.json" > "$store/future.json"
echo "ProfileStore = $store" > "$tmp/synergy.conf"

"$sp" list --store "$store" > "$tmp/list.out" 2> "$tmp/list.err"
rc=$?
test_ok "list exits 1 when it skipped bad files" test "$rc" -eq 1
test_ok "list shows the good profile" grep -q '^r18 ' "$tmp/list.out"
test_ok "list names the torn file" grep -q 'torn.json' "$tmp/list.err"
test_ok "list names the unknown schema version" grep -q 'future.json: schema version 7' "$tmp/list.err"
test_ok "show by key through synergy.conf" \
	sh -c "SYNERGY_CONF='$tmp/synergy.conf' '$sp' show r18 | grep -q '^profile   r18'"
test_ok "show by key with --conf" \
	sh -c "'$sp' show --conf '$tmp/synergy.conf' r18 | grep -q '^profile   r18'"

# Errors: exit status and a message naming the input.
expect_fail() { # STATUS PATTERN CMD...: CMD exits STATUS and stderr matches PATTERN
	st=$1 pat=$2; shift 2
	"$@" > /dev/null 2> "$tmp/err"
	rc=$?
	[ "$rc" -eq "$st" ] && grep -q -- "$pat" "$tmp/err" ||
		{ diag "exit $rc, stderr: $(cat "$tmp/err")"; return 1; }
}
test_ok "missing key: exit 1 naming it" expect_fail 1 "no profile 'nosuch'" "$sp" show --store "$store" nosuch
test_ok "torn file: exit 1 naming file and problem" expect_fail 1 "torn.json: line" "$sp" show "$store/torn.json"
echo "Enabled=yes" > "$tmp/nostore.conf"
test_ok "no ProfileStore= line: the default store" \
	expect_fail 1 "/var/lib/synergy/profiles" env SYNERGY_CONF="$tmp/nostore.conf" "$sp" show nosuchkey-$$
echo "this is not a setting" > "$tmp/broken.conf"
test_ok "a broken synergy.conf: exit 1 naming file:line" \
	expect_fail 1 "broken.conf:1" env SYNERGY_CONF="$tmp/broken.conf" "$sp" show r18
test_ok "a missing --conf file: exit 1 naming it" \
	expect_fail 1 "none.conf" "$sp" show --conf "$tmp/none.conf" r18
test_ok "show of a profile with no throughput at its share: exit 1 naming it" \
	expect_fail 1 "predicts no throughput at 3 cpus, 62.5 GiB" "$sp" show "$tmp/zero.json"
test_ok "what-if there: exit 1 as well" \
	expect_fail 1 "no throughput" "$sp" what-if --json "$tmp/zero.json" --cpus 3 --cache 62.5G
test_ok "what-if without --cache: usage error" expect_fail 2 "cache" "$sp" what-if "$data/resnet18.json" --cpus 2
test_ok "bad --cache value: usage error naming it" expect_fail 2 "--cache '12X'" "$sp" what-if r18 --cpus 2 --cache 12X
# Issue 14: on N nodes the partitioned cache makes the union of the
# nodes' caches the job's cache: 2 nodes of 50G predict what one cache of
# 100G does.
norm() { "$sp" what-if "$data/resnet18.json" --cpus 4 "$@" | sed -n 's/^normalised *\([0-9.]*\).*/\1/p'; }
test_ok "what-if --nodes 2 --cache 50G predicts what --cache 100G does" \
	test "$(norm --cache 50G --nodes 2)" = "$(norm --cache 100G)" -a "$(norm --cache 50G)" != "$(norm --cache 100G)"
test_ok "what-if --nodes names the union and a node's part of the dataset" \
	sh -c "'$sp' what-if '$data/resnet18.json' --cpus 4 --cache 50G --nodes 2 |
		grep -q '^nodes *2, partitioned cache: the job.s cache is their union, 100.0 GiB per GPU'"
test_ok "what-if --json --nodes 2 says nodes: 2" \
	sh -c "'$sp' what-if --json '$data/resnet18.json' --cpus 4 --cache 50G --nodes 2 | grep -q '\"nodes\": 2'"
test_ok "bad --nodes: usage error naming it" expect_fail 2 "--nodes '0'" "$sp" what-if r18 --cpus 2 --cache 1G --nodes 0
test_ok "bad --key: usage error" expect_fail 2 "--key '../x'" "$sp" run --key ../x /nonexistent
test_ok "unknown command: usage error" expect_fail 2 "unknown command 'frobnicate'" "$sp" frobnicate
test_ok "run -- without a command: usage error" expect_fail 2 "expected a command" "$sp" run --key x --
test_ok "run on a missing dataset: exit 1 naming it" \
	expect_fail 1 "/nonexistent" "$sp" run --store "$store" --key x -q /nonexistent
test_ok "--help prints usage" sh -c "'$sp' --help | grep -q '^Usage: synergy-profile'"

if command -v gnuplot > /dev/null; then
	test_ok "plot writes a PNG" sh -c "'$sp' plot '$data/resnet18.json' --out '$tmp/p.png' &&
		head -c 8 '$tmp/p.png' | od -An -c | grep -q 'P   N   G'"
else
	test_skip "gnuplot not installed"
fi
done_testing

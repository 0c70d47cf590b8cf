#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# decide-bench.sh: plugin/decide-bench stays runnable and honest (no root,
# no Slurm): a short run makes every kind of decision it times and checks
# each one is the kind it claims (it exits 1 on any other); hostile
# arguments are refused naming the value, before anything is made; nothing
# of its own is left in /tmp.
. "${top_srcdir:?}/tests/lib/tap.sh"
: "${top_builddir:?}"
b=$top_builddir/plugin/decide-bench
[ -x "$b" ] || skip_all "$b not built"
ours() { ls -d /tmp/syndecide* 2>/dev/null | sort; }
before=$(ours)

out=$("$b" 5 3 2>&1)
rc=$?
test_ok "a short run decides every kind as it claims (exit $rc)" test "$rc" = 0
for k in profiled new-claim new-cap same-key offline; do
	test_ok "its table has a row for $k" grep -q "^$k " <<<"$out"
done
# ARGS|WHAT the message must name
while IFS='|' read -r args want; do
	# shellcheck disable=SC2086 # the words are the arguments
	err=$("$b" $args 2>&1 >/dev/null)
	rc=$?
	test_ok "decide-bench $args: refused (exit 2), naming $want ($err)" \
		bash -c '[ "$1" = 2 ] && grep -qF -- "$2" <<<"$3"' _ "$rc" "$want" "$err"
done <<'LIST'
0|'0'
12x|'12x'
-1|'-1'
99999999999999999999|'99999999999999999999'
10000001|'10000001'
5 -1|'-1'
5 10001|'10001'
5 3x|'3x'
1 2 3|usage
LIST
test_ok "nothing of its own left in /tmp" test "$(ours)" = "$before"
done_testing

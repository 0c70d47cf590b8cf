# SPDX-License-Identifier: GPL-2.0-or-later
# tap.sh: TAP helpers for the shell tests (sourced).
# test_ok NAME CMD...: run CMD, print ok/not ok. skip_all WHY: skip the file.
tap_n=0
tap_failed=0
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
test_ok() {
	local name=$1; shift
	tap_n=$((tap_n + 1))
	if "$@"; then echo "ok $tap_n - $name"
	else echo "not ok $tap_n - $name"; tap_failed=$((tap_failed + 1)); fi
}
test_skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $*"; }
diag() { echo "# $*"; }
done_testing() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }

# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# suites.sh: run other integration suites as parts of one TAP stream
# (sourced after tap.sh).
#
# suites_run LIST: LIST holds one suite a line, "FILE [VAR=VALUE]...": a
# file in tests/integration and the environment to run it with ('#' lines
# and blank ones are skipped). Each suite runs in turn; its TAP lines are
# re-emitted through tap_n/tap_failed, renumbered and named after it
# ("ok 7 - cluster-basic: two nodes idle", NAME taken from SUITES_PREFIX
# when set, e.g. "slurm-prefix/"); other output becomes diagnostics. A suite
# that skips is one skipped test; one that bails out, dies, exits non-zero
# or prints no plan (or not its planned number of tests) adds a failure.
# Returns 0 when nothing failed.
suites_run() {
	local file vars name t0 plan ran status skipped line res rest f0 failed0=$tap_failed
	while read -r file vars; do
		case "$file" in '' | '#'*) continue ;; esac
		name=${SUITES_PREFIX:-}${file%.sh}
		if [ ! -f "${top_srcdir:?}/tests/integration/$file" ]; then
			suites__emit not-ok "$name: no such suite tests/integration/$file"
			continue
		fi
		t0=$SECONDS f0=$tap_failed
		plan='' ran=0 status='' skipped=0
		while IFS= read -r line; do
			case "$line" in
			"ok "[0-9]* | "not ok "[0-9]*)
				ran=$((ran + 1))
				res=ok
				case "$line" in "not ok "*) res=not-ok; line=${line#not } ;; esac
				rest=${line#ok }
				rest=${rest#"${rest%%[!0-9]*}"}
				rest=${rest# }
				rest=${rest#- }
				suites__emit "$res" "$name: $rest" ;;
			"1..0"*"# SKIP"* | "1..0"*"# skip"*)
				plan=0 skipped=1
				tap_n=$((tap_n + 1))
				echo "ok $tap_n - $name # SKIP ${line#*# [Ss][Kk][Ii][Pp]}" ;;
			1..[0-9]*)
				plan=${line#1..} plan=${plan%%[!0-9]*} ;;
			"Bail out!"*)
				suites__emit not-ok "$name: bailed out:${line#Bail out!}" ;;
			"#suite-status "*)
				# The suite is over; a process it left behind may
				# still hold the pipe: do not wait for its end.
				status=${line#\#suite-status }
				break ;;
			"#"*) echo "$line" ;;
			*) echo "# $line" ;;
			esac
		done < <(
			# shellcheck disable=SC2086 # VAR=VALUE words
			env $vars bash "$top_srcdir/tests/integration/$file" 2>&1 </dev/null
			echo "#suite-status $?"
		)
		diag "$name: $((SECONDS - t0)) s, exit status $status"
		[ "$skipped" = 1 ] && continue
		if [ -z "$plan" ]; then
			suites__emit not-ok "$name: printed a plan"
		elif [ "$plan" != "$ran" ]; then
			suites__emit not-ok "$name: ran its $plan planned tests (ran $ran)"
		fi
		[ "$status" = 0 ] || [ "$tap_failed" -gt "$f0" ] ||
			suites__emit not-ok "$name: exited with status 0 (status ${status:-none})"
	done <<<"$1"
	[ "$tap_failed" = "$failed0" ]
}

# suites__emit ok|not-ok DESCRIPTION
suites__emit() {
	tap_n=$((tap_n + 1))
	if [ "$1" = ok ]; then echo "ok $tap_n - $2"
	else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}

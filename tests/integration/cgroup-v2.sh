#!/bin/bash
# cgroup-v2.sh: the cluster suites on cgroup v2, in a real kernel. This
# machine's kernel binds every controller to v1, so the suites run in a
# throwaway guest (tests/vm/vm-run: Debian's kernel under qemu TCG, the
# host's root shared read-only, cgroup2 at /sys/fs/cgroup) with
# CLUSTER_CGROUP=v2. Their TAP lines come back renumbered as this file's,
# each named after its suite ("ok 7 - cluster-basic: two nodes idle"); a
# suite that skips is one skipped test, one that bails out, dies or prints
# no plan is a failure. The last test says the guest ran every suite to its
# end within the time limit.
#
# The suites, in order, one per line: FILE [VAR=VALUE]... (a file in
# tests/integration, then its environment). SYNERGY_VM_SUITES replaces the
# list (same format; ';' also separates suites), e.g. to try one:
#   SYNERGY_VM_SUITES='synergy-sized.sh' make check TESTS=tests/integration/cgroup-v2.sh
# Other knobs: SYNERGY_VM_TIMEOUT (seconds for the whole guest run, default
# 900), SYNERGY_VM=off (skip this file), and vm-run's (tests/vm/README).
vm_suites='
cluster-basic.sh CLUSTER_SYNERGY=0
cluster-limits.sh CLUSTER_SYNERGY=0
'

. "${top_srcdir:?}/tests/lib/tap.sh"
: "${top_builddir:?}"
suites=${SYNERGY_VM_SUITES:-$vm_suites}
suites=${suites//;/$'\n'}

# --in-guest: run the suites (we are the guest's command) and print one
# TAP stream without a plan; the host side adds the plan.
if [ "${1:-}" = --in-guest ]; then
	export CLUSTER_CGROUP=v2
	# Everything takes longer under TCG (a process start costs 50-300 ms):
	# give the cluster longer to come up, and poll Slurm less often so
	# that the polls leave the daemons some of the two CPUs.
	export CLUSTER_TIMEOUT=${CLUSTER_TIMEOUT:-120}
	export CLUSTER_POLL_MS=${CLUSTER_POLL_MS:-500}
	n=0
	failed=0
	emit() { # emit ok|not-ok DESCRIPTION
		n=$((n + 1))
		if [ "$1" = ok ]; then echo "ok $n - $2"
		else echo "not ok $n - $2"; failed=$((failed + 1)); fi
	}
	# The suites see the environment they would see on the host: none of
	# vm-run's or our own knobs (jobs inherit it; some suites grep it).
	for v in $(compgen -e | grep '^SYNERGY_VM'); do unset "$v"; done
	diag "guest: $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s, cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
	while read -r file vars; do
		case "$file" in '' | '#'*) continue ;; esac
		name=${file%.sh}
		if [ ! -f "$top_srcdir/tests/integration/$file" ]; then
			emit not-ok "$name: no such suite tests/integration/$file"
			continue
		fi
		t0=$SECONDS
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
				emit "$res" "$name: $rest" ;;
			"1..0"*"# SKIP"* | "1..0"*"# skip"*)
				plan=0 skipped=1
				n=$((n + 1))
				echo "ok $n - $name # SKIP ${line#*# [Ss][Kk][Ii][Pp]}" ;;
			1..[0-9]*)
				plan=${line#1..} plan=${plan%%[!0-9]*} ;;
			"Bail out!"*)
				emit not-ok "$name: bailed out:${line#Bail out!}" ;;
			"#vm-status "*)
				# The suite is over; a process it left behind may
				# still hold the pipe: do not wait for its end.
				status=${line#\#vm-status }
				break ;;
			"#"*) echo "$line" ;;
			*) echo "# $line" ;;
			esac
		done < <(
			# shellcheck disable=SC2086
			env $vars bash "$top_srcdir/tests/integration/$file" 2>&1 </dev/null
			echo "#vm-status $?"
		)
		diag "$name: $((SECONDS - t0)) s, exit status $status"
		[ "$skipped" = 1 ] && continue
		if [ -z "$plan" ]; then
			emit not-ok "$name: printed a plan"
		elif [ "$plan" != "$ran" ]; then
			emit not-ok "$name: ran its $plan planned tests (ran $ran)"
		fi
		[ "$status" = 0 ] || [ "$failed" -gt 0 ] ||
			emit not-ok "$name: exited with status 0 (status ${status:-none})"
	done <<<"$suites"
	echo "#vm-done $n $failed"
	[ "$failed" = 0 ]
	exit
fi

[ "${SYNERGY_VM:-}" = off ] && skip_all "SYNERGY_VM=off"
[ "$(id -u)" = 0 ] || skip_all "needs root (qemu exports / to the guest)"
command -v qemu-system-x86_64 >/dev/null ||
	skip_all "qemu-system-x86_64 not installed (tools/install-deps installs it)"
timeout=${SYNERGY_VM_TIMEOUT:-900}

t0=$SECONDS
done_line=
while IFS= read -r line; do
	case "$line" in
	"ok "[0-9]* | "not ok "[0-9]*)
		tap_n=$((tap_n + 1))
		case "$line" in "not ok "*) tap_failed=$((tap_failed + 1)) ;; esac
		echo "$line" ;;
	"#vm-done "*) done_line=${line#\#vm-done } ;;
	"#vm-rc "*) rc=${line#\#vm-rc } ;;
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done < <(
	SYNERGY_VM_SUITES=$suites "$top_srcdir/tests/vm/vm-run" -t "$timeout" -- \
		bash "$top_srcdir/tests/integration/cgroup-v2.sh" --in-guest 2>&1
	echo "#vm-rc $?"
)
diag "guest boot, suites and teardown: $((SECONDS - t0)) s"
test_ok "the guest ran every suite to its end (vm-run status ${rc:-none})" \
	test -n "$done_line" -a "${rc:-}" != 124 -a "${rc:-}" != 125
done_testing

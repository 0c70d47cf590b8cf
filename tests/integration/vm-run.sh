#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# vm-run.sh: the cgroup v2 guest harness itself (tests/vm/vm-run). One
# guest runs a command that prints a file of every byte value (CR, tabs,
# NULs, a last line without newline), its working directory and a forwarded
# variable, writes into the --out directory and exits 7: the output must
# arrive byte for byte, with status 7, and the file must come back; the
# guest must be cgroup2 with the controllers Slurm needs. Then the
# teardown: a guest past its --timeout ends with status 124 and its qemu is
# gone; killing vm-run (SIGKILL) takes its qemu down too; a bad option is
# refused with status 125 before anything starts. With a root file system
# of tools/build-slurm-rootfs (else that test is skipped), --root runs the
# command in that release with this machine's current directory and --bind
# directories at their paths, writes staying in the guest.
. "${top_srcdir:?}/tests/lib/tap.sh"
[ "${SYNERGY_VM:-}" = off ] && skip_all "SYNERGY_VM=off"
[ "$(id -u)" = 0 ] || skip_all "needs root (qemu exports / to the guest)"
command -v qemu-system-x86_64 >/dev/null ||
	skip_all "qemu-system-x86_64 not installed (tools/install-deps installs it)"
vm=$top_srcdir/tests/vm/vm-run

w=$(mktemp -d /tmp/vm-run-test.XXXXXX) || exit 1
trap 'rm -rf "$w"' EXIT
mkdir "$w/out" "$w/cwd dir"
# every byte value, twice, then text with CR, tabs and no final newline
{
	for _ in 1 2; do
		for b in $(seq 0 255); do printf "\\$(printf '%03o' "$b")"; done
	done
	printf 'line\r\nta\tb\r\n\nlast line'
} >"$w/bytes"
# shellcheck disable=SC2016 # expanded in the guest
cmd='cat "$1"; printf "|%s|%s|%s|" "$PWD" "$VMT_VAR" "$(stat -fc %T /sys/fs/cgroup)"
cat /sys/fs/cgroup/cgroup.subtree_control >"$SYNERGY_VM_OUT/controllers"
exit 7'
(cd "$w/cwd dir" && "$vm" -t 600 -o "$w/out" -e "VMT_VAR=a b'c\"d" -- \
	sh -c "$cmd" sh "$w/bytes" >"$w/got" 2>"$w/err")
rc=$?
test_ok "the command's status comes back (7)" test "$rc" = 7
[ "$rc" = 7 ] || sed 's/^/#   /' "$w/err"
{ cat "$w/bytes"; printf '|%s|%s|cgroup2fs|' "$w/cwd dir" "a b'c\"d"; } >"$w/want"
test_ok "its output arrives byte for byte, with its directory and variable" \
	cmp "$w/want" "$w/got"
test_ok "the guest enables cpuset cpu io memory pids for its cgroups" \
	grep -qx 'cpuset cpu io memory pids' "$w/out/controllers"

"$vm" -t 3 -- sleep 1000 >/dev/null 2>"$w/err"
rc=$?
qpid=$(sed -n 's/.*qemu PID \([0-9]*\).*/\1/p' "$w/err")
test_ok "a guest past its --timeout ends with status 124 ($rc)" test "$rc" = 124
test_ok "and its qemu is gone" test -n "$qpid" -a ! -d "/proc/${qpid:-none}"

"$vm" -t 600 -- sleep 1000 >/dev/null 2>&1 &
vpid=$!
qpid=
for _ in $(seq 1 100); do
	qpid=$(pgrep -P "$vpid" qemu-system 2>/dev/null | head -n 1)
	[ -n "$qpid" ] && break
	sleep 0.1
done
wdir=$(tr '\0' '\n' <"/proc/$qpid/cmdline" 2>/dev/null | sed -n 's|^file:\(/tmp/synergy-vm\.[^/]*\)/console.log$|\1|p')
kill -KILL "$vpid"
wait "$vpid" 2>/dev/null
gone=1
for _ in $(seq 1 100); do
	[ -d "/proc/$qpid" ] || { gone=0; break; }
	sleep 0.1
done
test_ok "killing vm-run (SIGKILL) takes its qemu down" test -n "$qpid" -a "$gone" = 0
[ "$gone" = 0 ] || kill -KILL "$qpid" 2>/dev/null
# vm-run had no chance to remove its work directory
[ -n "$wdir" ] && rm -rf "$wdir"

out=$("$vm" --mem lots -- true 2>&1)
rc=$?
test_ok "a bad option is refused with status 125 and named" \
	test "$rc" = 125 -a -n "$(grep -F "'lots'" <<<"$out")"
out=$("$vm" --bind "$w" -- true 2>&1)
rc=$?
test_ok "--bind without --root is refused with status 125" \
	test "$rc" = 125 -a -n "$(grep -F -- '--bind needs --root' <<<"$out")"

# --root: the first root file system that is there.
rootfs=
for suite in trixie sid; do
	rootfs=$("$top_srcdir/tools/build-slurm-rootfs" --check --suite "$suite") && break
done
if [ -z "$rootfs" ]; then
	for _ in 1 2 3; do test_skip "--root: no root file system (tools/build-slurm-rootfs --suite trixie)"; done
else
	root=${rootfs%% *}
	codename=$(sed -n 's/^VERSION_CODENAME=//p' "$root/etc/os-release")
	mkdir "$w/bound"
	echo here >"$w/bound/marker"
	# shellcheck disable=SC2016 # expanded in the guest
	cmd='. /etc/os-release; printf "%s|%s|%s|" "${VERSION_CODENAME:-}" "$PWD" "$(cat "$1/marker")"
	dpkg-query -W -f="\${Version}|" slurmd; echo x >"$1/written"; echo y >written'
	(cd "$w/cwd dir" && "$vm" -t 600 --root "$root" --bind "$w/bound" -- \
		sh -c "$cmd" sh "$w/bound" >"$w/got" 2>"$w/err")
	rc=$?
	diag "--root $rootfs: $(cat "$w/got")"
	test_ok "--root runs the command in that root ($codename, Slurm ${rootfs#* })" \
		test "$rc" = 0 -a "$(cat "$w/got")" = "$codename|$w/cwd dir|here|${rootfs#* }|"
	[ "$rc" = 0 ] || sed 's/^/#   /' "$w/err"
	test_ok "its writes to bound directories stay in the guest" \
		test ! -e "$w/bound/written" -a ! -e "$w/cwd dir/written"
	test_ok "the root file system is left as it was" test ! -e "$root$w"
fi
done_testing

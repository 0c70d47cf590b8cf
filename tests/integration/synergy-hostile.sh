#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-hostile.sh: hostile values cannot make the root-run plugins touch
# anything outside the job. Option values that are paths, huge, or full of
# shell metacharacters are refused before a job exists; a job that sets a
# hostile key in its own environment for an srun step is ignored on the
# node (the node acts only on what job_submit validated); links and deep
# trees a (non-root) job plants in its cache directory are removed without
# following them.
. "${top_srcdir:?}/tests/lib/cluster.sh"
cluster_start 1
cluster_put_profile lang flat
victim=$C/victim
mkdir -p "$victim/dir" "$C/out"
echo precious >"$victim/file"
echo precious >"$victim/dir/file"
chmod 1777 "$C/out"
: >"$C/store/evil.json"

# refused ARGS...: sbatch refuses the option with a synergy: message; no
# job, nothing created.
refused() { cluster_refused "synergy:" "$@"; }
long=$(printf 'k%.0s' $(seq 1 1000))
test_ok "key ../../etc/passwd refused" refused --synergy-profile=../../etc/passwd
test_ok "key with \$(...) refused" refused "--synergy-profile=\$(touch $C/pwned)"
test_ok "key with ; and spaces refused" refused "--synergy-profile=x; touch $C/pwned"
test_ok "key with a newline refused" refused "--synergy-profile=$(printf 'a\nb')"
test_ok "1000-character key refused" refused "--synergy-profile=$long"
test_ok "huge --synergy value refused" refused --synergy=99999999999999999999999
test_ok "absolute path as key refused" refused --synergy-profile=/etc/shadow
test_ok "no file was created by a metacharacter" test ! -e "$C/pwned"

# A job of an unprivileged user sets a hostile key for its srun step and
# plants links to files outside in its cache directory.
id=$(cd "$C" && sbatch --parsable --uid=nobody -o "$C/out/%j.out" --gres=gpu:1 \
	--synergy-profile=lang --wrap '
	echo "active=$SYNERGY_ACTIVE"
	ln -s '"$victim/file"' "$SYNERGY_CACHE_DIR/link"
	ln -s '"$victim"'/dir "$SYNERGY_CACHE_DIR/dirlink"
	mkdir -p "$SYNERGY_CACHE_DIR/a/b/c" && echo x >"$SYNERGY_CACHE_DIR/a/b/c/f"
	ln -s '"$victim"' "$SYNERGY_CACHE_DIR/a/b/up"
	# Drop the option the step would inherit from the job, then lie.
	for v in $(env | grep -o "^[A-Za-z_]*SPANK_OPTION_synergy[A-Za-z_]*"); do unset "$v"; done
	SYNERGY_PROFILE_KEY="../../../evil" srun -n1 bash -c \
		"echo step-active=\$SYNERGY_ACTIVE step-key=\$SYNERGY_PROFILE_KEY"')
st=$(cluster_wait_job "$id" 40)
out=$(cat "$C/out/$id.out" 2>/dev/null)
test_ok "unprivileged synergy job completed ($st)" test "$st" = COMPLETED
test_ok "it was sized and saw SYNERGY_ACTIVE=1" grep -qx active=1 <<<"$out"
test_ok "its step ignored the hostile key: the job's validated key rules" \
	grep -qx "step-active=1 step-key=lang" <<<"$out"
test_ok "files outside the job are intact" \
	bash -c "[ \"\$(cat '$victim/file' '$victim/dir/file')\" = \"\$(printf 'precious\nprecious')\" ]"
test_ok "the hostile cache tree is gone" test ! -e "$C/cache/job_$id"
test_ok "nothing was created from the hostile key" \
	bash -c "! find / /tmp '$C' -maxdepth 2 -name 'evil*' -newer '$C/store/evil.json' 2>/dev/null | grep -q ."
[ "$tap_failed" = 0 ] || diag "job output: $out"

cluster__wait 5 cluster_leftovers
test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
done_testing

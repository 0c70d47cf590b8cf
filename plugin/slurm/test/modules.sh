#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# modules.sh: what each Slurm module of the build links and exports
# (readelf, nm). sbatch, salloc and srun load spank_synergy.so for every
# job of every user, so it must stay small: libc (and libm) only, the node
# side in spank_synergy_node.so, which it loads on the nodes alone
# (plugin/slurm/spank_int.h). job_submit_synergy.so carries no node code.
. "${top_srcdir:?}/tests/lib/tap.sh"
: "${top_builddir:?}"
libs=$top_builddir/plugin/.libs
command -v readelf >/dev/null && command -v nm >/dev/null || skip_all "readelf and nm (binutils) needed"
for m in spank_synergy spank_synergy_node job_submit_synergy; do
	[ -f "$libs/$m.so" ] || skip_all "$libs/$m.so not built"
done

needed() { readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' '; }
exports() { nm -D --defined-only "$1" | awk '{ print $3 }' | sort | tr '\n' ' '; }

# The sanitizer builds add their runtimes.
other=$(needed "$libs/spank_synergy.so" | tr ' ' '\n' |
	grep -Ev '^(libc|libm|libdl|libpthread|libasan|libubsan|libtsan)\.so' | tr '\n' ' ')
test_ok "spank_synergy.so links libc and libm only (got: $(needed "$libs/spank_synergy.so"))" \
	test -z "$other"
want="plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt slurm_spank_job_epilog slurm_spank_job_prolog slurm_spank_task_exit slurm_spank_task_init slurm_spank_task_post_fork spank_plugin_version "
got=$(exports "$libs/spank_synergy.so" | tr ' ' '\n' | grep -Ev '^__(asan|ubsan|tsan|sanitizer)' | tr '\n' ' ')
test_ok "spank_synergy.so exports the SPANK symbols only" test "$got" = "$want"
[ "$got" = "$want" ] || diag "got: $got"
got=$(exports "$libs/spank_synergy_node.so")
test_ok "spank_synergy_node.so exports its table only (got: $got)" test "$got" = "syn__spank_node "
for l in libhwloc libcgroup; do
	test_ok "spank_synergy_node.so links $l (the node side is there)" \
		grep -q "$l" <<<"$(needed "$libs/spank_synergy_node.so")"
	test_ok "job_submit_synergy.so does not link $l" \
		eval "! grep -q $l <<<'$(needed "$libs/job_submit_synergy.so")'"
done
done_testing

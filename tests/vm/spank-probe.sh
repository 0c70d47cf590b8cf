#!/bin/bash
# spank-probe.sh: what a Slurm release shows a SPANK plugin, and the cgroup
# v2 tree it makes for a running job. Not a test: a probe whose output is
# the evidence in doc/slurm-versions.md. Runs where its Slurm runs: in the
# guest, on a root of tools/build-slurm-rootfs, e.g. from a build directory
#   ../tests/vm/vm-run --root /var/cache/synergy/rootfs-sid -- \
#       bash ../tests/vm/spank-probe.sh
# (without --root: Debian 12's 22.05 on cgroup v2; on this machine: v1).
# Builds tests/vm/spank-probe.c with the root's gcc and <slurm/spank.h>,
# starts a one-node plain cluster (tests/lib/cluster.sh) with it in
# plugstack.conf and a Prolog and Epilog that record their environment,
# runs a batch job with one srun step, and prints: the Slurm version and
# its prolog settings; while the job runs, slurmd's and the step's
# processes' cgroups and every cgroup directory of the node's slice; the
# probe's line of each hook call; the prolog's and epilog's SLURM_*/SPANK_*
# environment; the task's SLURM_JOB_ID/SLURM_JOB_SLUID. Extra cgroup.conf
# lines: CLUSTER_CGROUP_CONF_EXTRA (e.g. CgroupSlice=probe.slice).
CLUSTER_SYNERGY=0
. "${top_srcdir:?}/tests/lib/cluster.sh"
w=$(mktemp -d /tmp/spank-probe.XXXXXX) || exit 1
chmod 0755 "$w"
gcc -std=gnu11 -Wall -Werror -shared -fPIC -o "$w/spank_probe.so" "$top_srcdir/tests/vm/spank-probe.c" ||
	bail "cannot build the probe"
mkdir -m 0777 "$w/log"
for s in prolog epilog; do
	printf '#!/bin/sh\nenv | grep -E "^(SLURM_|SPANK_)" | sort >%s/%s.$SLURM_JOB_ID.env\nexit 0\n' \
		"$w/log" "$s" >"$w/$s.sh"
	chmod 0755 "$w/$s.sh"
done
CLUSTER_PLUGSTACK_EXTRA="optional $w/spank_probe.so dir=$w/log" \
	CLUSTER_SLURM_CONF_EXTRA="Prolog=$w/prolog.sh
Epilog=$w/epilog.sh${CLUSTER_SLURM_CONF_EXTRA:+
$CLUSTER_SLURM_CONF_EXTRA}" cluster_start 1

echo "== Slurm $CLUSTER_SLURM_VERSION ($(. /etc/os-release; echo "$PRETTY_NAME")), cgroup $CLUSTER_CGROUP"
scontrol show config | grep -Ei '^(Prolog|Epilog|PrologFlags|PlugStackConfig|JobSubmitPlugins) '
sed 's/^/cgroup.conf: /' "$C/etc/cgroup.conf"
id=$(cluster_sbatch -n1 -c1 --mem=100 --wrap "
srun -n1 sh -c 'echo task: SLURM_JOB_ID=\$SLURM_JOB_ID SLURM_JOB_SLUID=\${SLURM_JOB_SLUID:--} SPANK_PROBE_FROM_CLIENT=\${SPANK_PROBE_FROM_CLIENT:--} PROBE_FROM_CLIENT=\${PROBE_FROM_CLIENT:--}; echo task cgroup: \$(cat /proc/self/cgroup); while [ ! -e $w/release ]; do sleep 0.2; done'
echo batch: SLURM_JOB_ID=\$SLURM_JOB_ID SLURM_JOB_SLUID=\${SLURM_JOB_SLUID:--}")
cluster_wait_state "$id" RUNNING 60
cluster__wait 60 grep -q 'task cgroup' "$(cluster_out "$id")"
echo "== job $id running; scontrol -d: $(scontrol -d -o show job "$id" | tr ' ' '\n' | grep -E '^(JobId|SLUID)=' | tr '\n' ' ')"
echo "== cgroups of the processes (slurmd, slurmstepd, job)"
for pid in $(pgrep -x slurmd) $(pgrep -f '^slurmstepd') $(pgrep -x sleep); do
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-22)
	cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)
	[ -z "$cmd" ] || printf '%-28s %s\n' "$pid $cmd" "$cg"
done
echo "== cgroup directories (find $cluster__cgmnt -type d)"
if [ "$CLUSTER_CGROUP" = v2 ]; then
	find "$cluster__cgmnt" -mindepth 1 -type d | sed "s|^$cluster__cgmnt||" | sort
else
	find "$cluster__cgmnt/cpuset" "$cluster__cgmnt/memory" -type d -path '*slurm*' | sort
fi
touch "$w/release"
st=$(cluster_wait_job "$id" 60)
echo "== job $id: $st; its output:"
cat "$(cluster_out "$id")"
cluster_stop
echo "== probe: one line per hook call"
column -t -s $'\t' "$w/log/probe.log" 2>/dev/null || cat "$w/log/probe.log"
for f in "$w"/log/*.env; do
	echo "== ${f##*/}"
	cat "$f"
done
rm -rf "$w"

# SPDX-License-Identifier: GPL-2.0-or-later
# cluster.sh: a throwaway Slurm cluster for integration tests (sourced).
#
# cluster_start N starts, in a private directory under /tmp, its own munged
# (own socket and key), one slurmctld and N slurmd (multiple-slurmd, all on
# 127.0.0.1) on free ports, with fake GPUs (character devices listed in
# gres.conf), cgroup enforcement (v1, or v2: see CLUSTER_CGROUP), and the
# Synergy plugins from the build tree (or CLUSTER_PLUGIN_DIR). Node names
# carry a random tag so that the cgroup paths of two clusters, or of a
# leftover earlier run, never collide. Everything is torn down on
# EXIT/INT/TERM, whatever happened: daemons are stopped by their recorded
# PIDs, processes left in our nodes' cgroups are killed and those cgroups
# removed, and the directory is deleted.
#
# The nodes' cgroups (cluster__node_cgroups):
#   v1: /sys/fs/cgroup/<controller>/slurm_<NodeName> (Slurm's multiple-slurmd
#       prefix; /slurm with CLUSTER_SLURM), jobs below as
#       uid_U/job_J/step_S[/task_T];
#   v2: /sys/fs/cgroup/system.slice/<NodeName>_slurmstepd.scope, Slurm
#       22.05's cgroup/v2 layout without systemd (IgnoreSystemd=yes): slurmd
#       moves itself into <scope>/slurmd, new slurmstepds wait in
#       <scope>/system, jobs are <scope>/job_J/step_S/{slurm,user/task_T}
#       (slurm/ holds the step's slurmstepd, user/task_T its tasks).
#       Slurm 24.11 and 25.11 make the same; 26.05 names each job's
#       directory by its SLUID (<scope>/sXXXXXXXXXXXXX/step_S/...; scontrol's
#       SLUID=) unless cgroup.conf says CgroupJobIdPaths=yes (26.05.2+).
#       From 25.11 CgroupSlice=NAME (CLUSTER_CGROUP_CONF_EXTRA) replaces
#       system.slice. The slice is made if missing (never removed: it is
#       shared) and the controllers Slurm needs are enabled in the root's
#       and its cgroup.subtree_control.
#
# Without root, munged/slurmctld/slurmd, or the cgroup controllers, the test
# file is skipped (TAP "1..0 # SKIP"), never passed.
#
# Knobs (set before cluster_start):
#   CLUSTER_GPUS      fake GPUs per node (default 2)
#   CLUSTER_CPUS      cores per node (default: the real count; enforcement
#                     needs the real one, see SLURM-NOTES.md)
#   CLUSTER_MEM       RealMemory per node in MB (default 4096)
#   CLUSTER_SYNERGY   1: load our SPANK and job_submit plugins (required),
#                     0: plain Slurm (default 1)
#   CLUSTER_PROCESS_MEM     synergy.conf ProcessMemMB (default 1024)
#   CLUSTER_PLUGSTACK_ARGS  extra key=value arguments for the SPANK plugin
#   CLUSTER_PLUGSTACK_EXTRA extra lines for plugstack.conf (other SPANK plugins)
#   CLUSTER_PARTITION_EXTRA extra PartitionName= settings
#   CLUSTER_DEF_MEM_PER_GPU the partition's DefMemPerGPU in MB (default 512)
#   CLUSTER_DEF_CPU_PER_GPU the partition's DefCpuPerGPU (default 1)
#   CLUSTER_SYNERGY_CONF_EXTRA  extra lines for synergy.conf
#   CLUSTER_SLURM_CONF_EXTRA    extra lines for slurm.conf (e.g. PrologFlags=Alloc)
#   CLUSTER_MIN_JOB_AGE     slurm.conf MinJobAge: seconds a finished job stays
#                           visible to scontrol (default 300)
#   CLUSTER_CGROUP_CONF_EXTRA   extra lines for cgroup.conf (e.g. CgroupSlice=x.slice,
#                               CgroupJobIdPaths=yes: Slurm 25.11+, 26.05.2+)
#   CLUSTER_INIT_CGROUP     v2, in the test guest only: a cgroup (e.g.
#                           pod.slice/init.scope) PID 1 is moved into for the
#                           cluster's life, as the init of a container without
#                           a cgroup namespace sits: Slurm 23.02+ then puts its
#                           tree under that cgroup's parent (pod.slice/<slice>/
#                           <node>_slurmstepd.scope). PID 1 goes back to the
#                           root cgroup at the end. Skipped unless PID 1 is in
#                           the root cgroup (a host's init never is)
#   CLUSTER_NODE_SHAPES     "GPUS:CPUS:MEM ..." one per node: nodes of different
#                           shapes (scheduling only: CPUs past the real ones are
#                           faked), each also in its own partition "shape<i>";
#                           synergy.conf then names no node shape (synergyd
#                           exports them, see shapes.h)
#   CLUSTER_GROUP_DIR       synergy.conf GroupDir (default $C/groups)
#   CLUSTER_CACHE_DIR       synergy.conf CacheDir (default $C/cache; a tmpfs
#                           such as /dev/shm/NAME keeps loader caches in RAM)
#   CLUSTER_PLUGIN_DIR      where spank_synergy.so and job_submit_synergy.so
#                           are loaded from (default: the build tree's
#                           plugin/.libs; packaging.sh: the installed ones).
#                           PluginDir lists it before Slurm's own directory,
#                           so that it wins over installed copies there, and
#                           plugstack.conf names its spank_synergy.so
#   CLUSTER_EXIT_HOOK       a command the EXIT/INT/TERM traps run after the
#                           teardown, also when the test called cluster_stop
#                           itself (for tests that change the machine outside
#                           $C and must undo it whatever happens)
#   CLUSTER_CGROUP    v1, v2 or auto (default): auto is v2 when
#                     /sys/fs/cgroup is a cgroup2 mount, else v1; cluster_require
#                     replaces auto by the version found
#   CLUSTER_TIMEOUT   seconds the cluster may take to come up (default 30)
#   CLUSTER_SLURM     prefix of a Slurm built WITHOUT multiple-slurmd
#                     (tools/build-slurm-plain) to run instead of Debian's:
#                     its daemons, clients and plugins; one node only (such
#                     a slurmd is alone on its host), cgroup v1, and the
#                     node's cgroups are Slurm's default /slurm (the file is
#                     skipped if another slurmd already made them). Default:
#                     Debian's Slurm (multiple-slurmd, /slurm_<NodeName>)
#   CLUSTER_POLL_MS   pause between two polls of a state (scontrol, sinfo)
#                     in ms (default 100); timeouts count polls of this
#                     length. A slow machine (the TCG guest) polls less often.
# The Slurm that runs is the one on PATH and in /usr/sbin: Debian 12's
# 22.05 here, or the release of a tools/build-slurm-rootfs root that the
# guest runs (tests/vm/vm-run --root: 24.11, 26.05; same paths).
# After cluster_start: C (the directory), CLUSTER_NODES (names),
# CLUSTER_TAG, SLURM_CONF exported, SYNERGY_TEST_STORE, SYNERGY_TEST_SPOOL,
# CLUSTER_SLURM_VERSION (slurmd -V's, e.g. 24.11.5).

# shellcheck source=tap.sh
. "${top_srcdir:?}/tests/lib/tap.sh"
# shellcheck source=tests/lib/ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

: "${top_builddir:?}"
CLUSTER_GPUS=${CLUSTER_GPUS:-2}
CLUSTER_CPUS=${CLUSTER_CPUS:-$(nproc)}
CLUSTER_MEM=${CLUSTER_MEM:-4096}
CLUSTER_SYNERGY=${CLUSTER_SYNERGY:-1}
CLUSTER_PROCESS_MEM=${CLUSTER_PROCESS_MEM:-1024}
CLUSTER_PLUGSTACK_ARGS=${CLUSTER_PLUGSTACK_ARGS:-}
CLUSTER_PLUGSTACK_EXTRA=${CLUSTER_PLUGSTACK_EXTRA:-}
CLUSTER_PARTITION_EXTRA=${CLUSTER_PARTITION_EXTRA:-}
CLUSTER_DEF_MEM_PER_GPU=${CLUSTER_DEF_MEM_PER_GPU:-512}
CLUSTER_DEF_CPU_PER_GPU=${CLUSTER_DEF_CPU_PER_GPU:-1}
CLUSTER_SYNERGY_CONF_EXTRA=${CLUSTER_SYNERGY_CONF_EXTRA:-}
CLUSTER_SLURM_CONF_EXTRA=${CLUSTER_SLURM_CONF_EXTRA:-}
CLUSTER_MIN_JOB_AGE=${CLUSTER_MIN_JOB_AGE:-300}
[[ "$CLUSTER_MIN_JOB_AGE" =~ ^[1-9][0-9]{0,5}$ ]] ||
	{ echo "Bail out! CLUSTER_MIN_JOB_AGE='$CLUSTER_MIN_JOB_AGE': expected seconds"; exit 1; }
CLUSTER_CGROUP_CONF_EXTRA=${CLUSTER_CGROUP_CONF_EXTRA:-}
CLUSTER_CACHE_DIR=${CLUSTER_CACHE_DIR:-}
CLUSTER_GROUP_DIR=${CLUSTER_GROUP_DIR:-}
CLUSTER_TIMEOUT=${CLUSTER_TIMEOUT:-30}
CLUSTER_PLUGIN_DIR=${CLUSTER_PLUGIN_DIR:-$top_builddir/plugin/.libs}
CLUSTER_EXIT_HOOK=${CLUSTER_EXIT_HOOK:-}
# Where Debian's Slurm keeps its own plugins (select, proctrack, task...)
# and its daemons; a CLUSTER_SLURM build has its own.
CLUSTER_SLURM=${CLUSTER_SLURM:-}
cluster__slurm_plugindir=/usr/lib/x86_64-linux-gnu/slurm-wlm
cluster__sbin=/usr/sbin
# Debian's slurmd is built with multiple-slurmd: node cgroups /slurm_<node>.
cluster__multi=1
if [ -n "$CLUSTER_SLURM" ]; then
	cluster__slurm_plugindir=$CLUSTER_SLURM/lib/slurm
	cluster__sbin=$CLUSTER_SLURM/sbin
	cluster__multi=0
	export PATH=$CLUSTER_SLURM/bin:$PATH
fi
CLUSTER_CGROUP=${CLUSTER_CGROUP:-auto}
CLUSTER_POLL_MS=${CLUSTER_POLL_MS:-100}
[[ "$CLUSTER_POLL_MS" =~ ^[1-9][0-9]{0,4}$ ]] ||
	{ echo "Bail out! CLUSTER_POLL_MS='$CLUSTER_POLL_MS': expected milliseconds"; exit 1; }
cluster__poll=$((CLUSTER_POLL_MS / 1000)).$(printf '%03d' $((CLUSTER_POLL_MS % 1000)))
cluster__cgmnt=/sys/fs/cgroup
# cgroup v2: the slice of the nodes' scopes (cgroup.conf CgroupSlice, 25.11+).
cluster__slice=$(printf '%s\n' "$CLUSTER_CGROUP_CONF_EXTRA" | sed -n 's/^[[:space:]]*CgroupSlice=\([^[:space:]]*\).*/\1/p' | tail -n 1)
cluster__slice=${cluster__slice:-system.slice}
# cgroup v2: PID 1's cgroup when CLUSTER_INIT_CGROUP moves it, and the
# prefix Slurm 23.02+ takes from it (its parent; "" for the mount's root).
CLUSTER_INIT_CGROUP=${CLUSTER_INIT_CGROUP:-}
cluster__prefix=
cluster__init_moved=
CLUSTER_SLURM_VERSION=
C=
CLUSTER_NODES=
CLUSTER_TAG=
cluster_pids=

# cluster_require: skip the whole file when a prerequisite is missing, and
# bail out when the plugins to load are not there.
cluster_require() {
	cluster_require_system
	if [ "$CLUSTER_SYNERGY" = 1 ]; then
		[ -f "$CLUSTER_PLUGIN_DIR/spank_synergy.so" ] ||
			bail "$CLUSTER_PLUGIN_DIR/spank_synergy.so not there (not built?)"
		[ -f "$CLUSTER_PLUGIN_DIR/job_submit_synergy.so" ] ||
			bail "$CLUSTER_PLUGIN_DIR/job_submit_synergy.so not there (not built?)"
	fi
}

# cluster_require_system: skip the whole file unless this machine can run a
# throwaway cluster (root, Slurm's daemons and clients, cgroup v1); a test
# that prepares long before cluster_start calls it first.
cluster_require_system() {
	[ "$(id -u)" = 0 ] || skip_all "needs root (cgroups, munged, slurmd)"
	local p
	for p in munged slurmctld slurmd sbatch srun scontrol squeue scancel; do
		PATH=$PATH:/usr/sbin command -v "$p" >/dev/null 2>&1 ||
			skip_all "$p not installed"
	done
	# "slurm-wlm 24.11.5" (Debian), "slurm 22.05.8" (a source build)
	CLUSTER_SLURM_VERSION=$("$cluster__sbin"/slurmd -V 2>/dev/null | awk '{ print $2 }')
	[[ "$CLUSTER_SLURM_VERSION" =~ ^[0-9]+\.[0-9]+ ]] ||
		skip_all "cannot tell the version of $cluster__sbin/slurmd ('$CLUSTER_SLURM_VERSION')"
	if [ -n "$CLUSTER_SLURM" ]; then
		for p in sbin/slurmctld sbin/slurmd sbin/slurmstepd bin/sbatch bin/srun bin/scontrol \
			 lib/slurm/select_cons_tres.so lib/slurm/cgroup_v1.so; do
			[ -e "$CLUSTER_SLURM/$p" ] || skip_all "CLUSTER_SLURM=$CLUSTER_SLURM has no $p"
		done
	fi
	case "$CLUSTER_CGROUP" in
	auto)
		if [ "$(stat -fc %T "$cluster__cgmnt" 2>/dev/null)" = cgroup2fs ]; then
			CLUSTER_CGROUP=v2
		else
			CLUSTER_CGROUP=v1
		fi ;;
	v1 | v2) ;;
	*) bail "CLUSTER_CGROUP='$CLUSTER_CGROUP': expected v1, v2 or auto" ;;
	esac
	if [ "$CLUSTER_CGROUP" = v1 ]; then
		[ -d /sys/fs/cgroup/cpuset ] && [ -d /sys/fs/cgroup/memory ] ||
			skip_all "needs cgroup v1 cpuset and memory controllers"
		if [ "$cluster__multi" = 0 ]; then
			# One /slurm per host: never take over another slurmd's.
			for p in "$cluster__cgmnt"/*/slurm; do
				[ ! -d "$p" ] || skip_all "$p exists: another slurmd built without multiple-slurmd runs here"
			done
		fi
	elif [ -n "$CLUSTER_SLURM" ]; then
		skip_all "CLUSTER_SLURM: cgroup v1 only (this harness's v2 layout is multiple-slurmd's)"
	else
		[ "$(stat -fc %T "$cluster__cgmnt" 2>/dev/null)" = cgroup2fs ] ||
			skip_all "needs cgroup v2 mounted at $cluster__cgmnt (CLUSTER_CGROUP=v2)"
		local c
		for c in cpuset cpu memory pids; do
			grep -qw "$c" "$cluster__cgmnt/cgroup.controllers" ||
				skip_all "needs the cgroup v2 $c controller"
		done
		[ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/cgroup_v2.so ] ||
			skip_all "Slurm's cgroup_v2.so not installed"
	fi
	if [ -n "$CLUSTER_INIT_CGROUP" ]; then
		[ "$CLUSTER_CGROUP" = v2 ] || skip_all "CLUSTER_INIT_CGROUP needs cgroup v2"
		[[ "$CLUSTER_INIT_CGROUP" =~ ^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$ ]] &&
			[[ "/$CLUSTER_INIT_CGROUP/" != */../* ]] && [[ "/$CLUSTER_INIT_CGROUP/" != */./* ]] ||
			bail "CLUSTER_INIT_CGROUP='$CLUSTER_INIT_CGROUP': expected a relative cgroup path of two components or more"
		[ "$(sed -n 's/^0:://p' /proc/1/cgroup 2>/dev/null)" = / ] ||
			skip_all "CLUSTER_INIT_CGROUP: PID 1 is not in the root cgroup (only the test guest's init is moved)"
		# (Slurm 23.02.1's _get_init_cg_path: none of our releases is 23.02.0)
		! cluster__slurm_at_least 23.02 || cluster__prefix=${CLUSTER_INIT_CGROUP%/*}
	fi
}

bail() { echo "Bail out! $*"; exit 1; }

# cluster__port: a free TCP port (tests/lib/ports.sh) not yet used by this
# cluster, so that clusters started side by side do not collide.
cluster__used_ports=
cluster__port() {
	local p
	p=$(ports_pick "$cluster__used_ports") || return 1
	cluster__used_ports="$cluster__used_ports $p"
	echo "$p"
}

# cluster__wait TIMEOUT CMD...: poll CMD every CLUSTER_POLL_MS (100 ms)
# until it succeeds, at most TIMEOUT seconds' worth of polls.
cluster__wait() {
	local limit=$(($1 * 1000 / CLUSTER_POLL_MS)) i=0
	shift
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -ge "$limit" ] && return 1
		sleep "$cluster__poll"
	done
	return 0
}

# cluster__exited PID: succeeds once process PID is gone.
cluster__exited() { ! kill -0 "$1" 2>/dev/null; }

cluster__all_idle() {
	local n pid
	for pid in $cluster_pids; do
		kill -0 "$pid" 2>/dev/null || return 2
	done
	n=$(sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | awk '$2 == "idle"' | wc -l)
	[ "$n" -eq "$cluster_n" ]
}

cluster__write_conf() {
	local host ctld_port n i port nodelist last
	host=$(hostname)
	ctld_port=$(cluster__port) || return 1
	n=$1
	last=$((CLUSTER_GPUS - 1))
	if [ -n "${CLUSTER_NODE_SHAPES:-}" ]; then
		local shape
		for shape in $CLUSTER_NODE_SHAPES; do
			[ "${shape%%:*}" -gt "$((last + 1))" ] && last=$((${shape%%:*} - 1))
		done
	fi
	mkdir -p "$C/etc" "$C/log" "$C/run" "$C/state" "$C/spool" "$C/dev" \
		"$C/cache" "$C/store" "$C/requests" "$C/munge-key"
	chmod 0755 "$C/run"
	chmod 0700 "$C/munge-key"
	for i in $(seq 0 "$last"); do
		mknod "$C/dev/nvidia$i" c 1 3
	done
	cat >"$C/etc/slurm.conf" <<EOF
ClusterName=$CLUSTER_TAG
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C/run/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool/%n
# Every node its own TmpFS, as every real node has its own /tmp: Slurm's
# mpi/pmix makes the step's client directory (spmix_appdir_<uid>_<job>.<step>)
# there, and two nodes of one step on this host would collide in one /tmp.
TmpFS=$C/tmp/%n
SlurmctldPidFile=$C/run/slurmctld.pid
SlurmdPidFile=$C/run/slurmd.%n.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$C/jobcomp.txt
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=$CLUSTER_MIN_JOB_AGE
# Backfill every second, so that a job resized while pending (synergyd)
# starts within a test's patience rather than at the next minute.
SchedulerParameters=bf_interval=1
PlugStackConfig=$C/etc/plugstack.conf
EOF
	[ -z "$CLUSTER_SLURM_CONF_EXTRA" ] ||
		printf '%s\n' "$CLUSTER_SLURM_CONF_EXTRA" >>"$C/etc/slurm.conf"
	if [ "$CLUSTER_SYNERGY" = 1 ]; then
		if [ "$CLUSTER_PLUGIN_DIR" -ef "$cluster__slurm_plugindir" ]; then
			echo "PluginDir=$cluster__slurm_plugindir" >>"$C/etc/slurm.conf"
		else
			echo "PluginDir=$CLUSTER_PLUGIN_DIR:$cluster__slurm_plugindir" >>"$C/etc/slurm.conf"
		fi
		echo "JobSubmitPlugins=synergy" >>"$C/etc/slurm.conf"
	fi
	nodelist=
	[ -z "${CLUSTER_NODE_SHAPES:-}" ] || echo "SlurmdParameters=config_overrides" >>"$C/etc/slurm.conf"
	for i in $(seq 1 "$n"); do
		local g=$CLUSTER_GPUS cpus=$CLUSTER_CPUS mem=$CLUSTER_MEM
		if [ -n "${CLUSTER_NODE_SHAPES:-}" ]; then
			set -- $CLUSTER_NODE_SHAPES
			shift $((i - 1))
			IFS=: read -r g cpus mem <<<"$1"
		fi
		port=$(cluster__port) || return 1
		echo "NodeName=${CLUSTER_TAG}n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem Gres=gpu:$g State=UNKNOWN" \
			>>"$C/etc/slurm.conf"
		nodelist="$nodelist${nodelist:+ }${CLUSTER_TAG}n$i"
		echo "NodeName=${CLUSTER_TAG}n$i Name=gpu File=$C/dev/nvidia[0-$((g - 1))]" >>"$C/etc/gres.conf"
		[ -z "${CLUSTER_NODE_SHAPES:-}" ] ||
			echo "PartitionName=shape$i Nodes=${CLUSTER_TAG}n$i MaxTime=INFINITE State=UP DefCpuPerGPU=$CLUSTER_DEF_CPU_PER_GPU DefMemPerGPU=$CLUSTER_DEF_MEM_PER_GPU" \
				>>"$C/etc/slurm.conf.parts"
	done
	[ ! -f "$C/etc/slurm.conf.parts" ] || { cat "$C/etc/slurm.conf.parts" >>"$C/etc/slurm.conf"; rm -f "$C/etc/slurm.conf.parts"; }
	CLUSTER_NODES=$nodelist
	# GPU-proportional defaults: each GPU brings its share of cores and memory.
	echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP DefCpuPerGPU=$CLUSTER_DEF_CPU_PER_GPU DefMemPerGPU=$CLUSTER_DEF_MEM_PER_GPU $CLUSTER_PARTITION_EXTRA" \
		>>"$C/etc/slurm.conf"
	sed -i '1i AutoDetect=off' "$C/etc/gres.conf"
	if [ "$CLUSTER_CGROUP" = v2 ]; then
		# No systemd to ask for a scope: slurmd makes its own
		# (IgnoreSystemd); cluster__v2_prepare enabled the controllers.
		cat >"$C/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
CgroupAutomount=no
CgroupMountpoint=$cluster__cgmnt
IgnoreSystemd=yes
ConstrainCores=yes
ConstrainRAMSpace=yes
EOF
	else
		cat >"$C/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
CgroupMountpoint=$cluster__cgmnt
ConstrainCores=yes
ConstrainRAMSpace=yes
EOF
	fi
	[ -z "$CLUSTER_CGROUP_CONF_EXTRA" ] ||
		printf '%s\n' "$CLUSTER_CGROUP_CONF_EXTRA" >>"$C/etc/cgroup.conf"
	cat >"$C/etc/synergy.conf" <<EOF
ProfileStore=$C/store
RequestDir=$C/requests
CacheDir=${CLUSTER_CACHE_DIR:-$C/cache}
GroupDir=${CLUSTER_GROUP_DIR:-$C/groups}
ProcessMemMB=$CLUSTER_PROCESS_MEM
StateDir=$C/state-synergy
NodeShapesFile=$C/node_shapes
EOF
	[ -n "${CLUSTER_NODE_SHAPES:-}" ] ||
		printf 'NodeGPUs=%s\nNodeCPUs=%s\nNodeMemMB=%s\n' "$CLUSTER_GPUS" "$CLUSTER_CPUS" \
			"$CLUSTER_MEM" >>"$C/etc/synergy.conf"
	[ -z "$CLUSTER_SYNERGY_CONF_EXTRA" ] ||
		printf '%s\n' "$CLUSTER_SYNERGY_CONF_EXTRA" >>"$C/etc/synergy.conf"
	if [ "$CLUSTER_SYNERGY" = 1 ]; then
		echo "required $CLUSTER_PLUGIN_DIR/spank_synergy.so conf=$C/etc/synergy.conf $CLUSTER_PLUGSTACK_ARGS" \
			>"$C/etc/plugstack.conf"
	else
		: >"$C/etc/plugstack.conf"
	fi
	[ -z "$CLUSTER_PLUGSTACK_EXTRA" ] ||
		printf '%s\n' "$CLUSTER_PLUGSTACK_EXTRA" >>"$C/etc/plugstack.conf"
	SYNERGY_TEST_STORE=$C/store
	SYNERGY_TEST_SPOOL=$C/requests
}

# cluster_start N: bring up munged, slurmctld and N slurmd; wait until all
# nodes are idle. Fails the test file (Bail out) if the cluster cannot start.
cluster_start() {
	cluster_n=${1:-1}
	cluster_require
	[ "$cluster__multi" = 1 ] || [ "$cluster_n" = 1 ] ||
		skip_all "$cluster_n nodes: a Slurm without multiple-slurmd runs one slurmd per host"
	C=$(mktemp -d /tmp/syncl.XXXXXX) || bail "mktemp failed"
	chmod 0755 "$C"
	CLUSTER_TAG=c$(printf '%04x' $((RANDOM % 65536)))
	trap 'cluster_stop; cluster__exit_hook' EXIT
	trap 'cluster_stop; cluster__exit_hook; exit 130' INT
	trap 'cluster_stop; cluster__exit_hook; exit 143' TERM
	cluster__write_conf "$cluster_n" || bail "no free ports"
	export SLURM_CONF=$C/etc/slurm.conf
	# Jobs must not inherit the outer test environment's Slurm state.
	unset SLURM_JOB_ID SLURM_JOBID SYNERGY SYNERGY_PROFILE

	dd if=/dev/urandom of="$C/munge-key/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$C/munge-key/munge.key"
	/usr/sbin/munged --socket="$C/run/munge.socket" \
		--key-file="$C/munge-key/munge.key" \
		--log-file="$C/log/munged.log" --pid-file="$C/run/munged.pid" \
		--seed-file="$C/run/munge.seed" --force ||
		bail "munged failed: $(tail -n 3 "$C/log/munged.log" 2>/dev/null)"
	cluster__wait 5 test -s "$C/run/munged.pid" || bail "munged wrote no pid file"
	cluster_pids="$(cat "$C/run/munged.pid")"

	cluster_start_ctld
	[ "$CLUSTER_CGROUP" = v2 ] && cluster__v2_prepare
	local node
	for node in $CLUSTER_NODES; do
		mkdir -p "$C/spool/$node" "$C/tmp/$node"
		chmod 1777 "$C/tmp/$node"
		if [ "$CLUSTER_CGROUP" = v2 ]; then
			# Started by hand, as here, slurmd moves itself into its
			# scope; unless it believes systemd started it.
			(
				unset INVOCATION_ID
				[ -z "$cluster__launch_cg" ] ||
					echo "$BASHPID" >"$cluster__launch_cg/cgroup.procs"
				exec setsid "$cluster__sbin"/slurmd -D -N "$node" -f "$SLURM_CONF"
			) >"$C/log/slurmd.$node.out" 2>&1 </dev/null &
		else
			setsid "$cluster__sbin"/slurmd -D -N "$node" -f "$SLURM_CONF" \
				>"$C/log/slurmd.$node.out" 2>&1 </dev/null &
		fi
		cluster_pids="$cluster_pids $!"
	done
	local i=0 rv
	while :; do
		cluster__all_idle
		rv=$?
		[ "$rv" = 0 ] && break
		i=$((i + 1))
		if [ "$rv" = 2 ] || [ "$i" -ge $((CLUSTER_TIMEOUT * 1000 / CLUSTER_POLL_MS)) ]; then
			diag "cluster did not come up (a daemon died or timeout); logs:"
			tail -n 5 "$C"/log/*.out "$C/log/slurmctld.log" 2>/dev/null | sed 's/^/#   /'
			bail "cluster did not come up"
		fi
		sleep "$cluster__poll"
	done
}

# cluster_start_ctld: start slurmctld (again, after cluster_stop_ctld);
# it keeps its state in $C/state, so jobs survive a restart.
cluster_start_ctld() {
	setsid "$cluster__sbin"/slurmctld -D -f "$SLURM_CONF" $([ -s "$C/state/node_state" ] || echo -c) \
		>>"$C/log/slurmctld.out" 2>&1 </dev/null &
	cluster_ctld_pid=$!
	cluster_pids="$cluster_pids $cluster_ctld_pid"
}

# cluster_stop_ctld: stop slurmctld (by its PID) and wait until it is gone.
cluster_stop_ctld() {
	kill -TERM "$cluster_ctld_pid" 2>/dev/null
	cluster__wait 10 cluster__exited "$cluster_ctld_pid"
}

# cluster__v2_prepare: what systemd would have done for Slurm's cgroup/v2:
# system.slice exists and the root and system.slice delegate the
# controllers Slurm uses to their children. Slurm refuses to start slurmd
# from the root cgroup ("0::/"): from there we start it in a cgroup of
# our own, $cluster__launch_cg (it leaves it at once; removed at the end).
cluster__launch_cg=
cluster__v2_prepare() {
	local f c d base=$cluster__cgmnt/${cluster__prefix:+$cluster__prefix/}$cluster__slice
	local dirs=$cluster__cgmnt
	if [ -n "$CLUSTER_INIT_CGROUP" ]; then
		# Every cgroup from the root to PID 1's parent passes the
		# controllers on; PID 1 itself sits in a leaf.
		d=$cluster__cgmnt
		for c in $(tr / ' ' <<<"${CLUSTER_INIT_CGROUP%/*}"); do
			d=$d/$c
			dirs="$dirs $d"
		done
		mkdir -p "$cluster__cgmnt/$CLUSTER_INIT_CGROUP" ||
			bail "cannot create $cluster__cgmnt/$CLUSTER_INIT_CGROUP"
	fi
	mkdir -p "$base" || bail "cannot create $base"
	for d in $dirs "$base"; do
		f=$d/cgroup.subtree_control
		for c in cpuset cpu memory pids; do
			grep -qw "$c" "$f" || echo "+$c" >"$f" ||
				bail "cannot enable the $c controller in $f"
		done
	done
	if [ -n "$CLUSTER_INIT_CGROUP" ]; then
		echo 1 >"$cluster__cgmnt/$CLUSTER_INIT_CGROUP/cgroup.procs" ||
			bail "cannot move PID 1 into $cluster__cgmnt/$CLUSTER_INIT_CGROUP"
		cluster__init_moved=1
	fi
	if [ "$(cat /proc/self/cgroup)" = "0::/" ]; then
		cluster__launch_cg=$cluster__cgmnt/$cluster__slice/${CLUSTER_TAG}_launch
		mkdir -p "$cluster__launch_cg" || bail "cannot create $cluster__launch_cg"
	fi
}

# cluster_node_cgroup NODE [CONTROLLER]: node NODE's cgroup directory: v1
# <mnt>/CONTROLLER/slurm_NODE (CONTROLLER default cpuset; Debian's slurmd
# is built with multiple-slurmd, whose prefix /slurm_%n is fixed at build
# time in Slurm 22.05: cgroup.conf has no CgroupPrepend), or
# <mnt>/CONTROLLER/slurm for a CLUSTER_SLURM built without it; v2 its
# slurmstepd scope. Whether or not it exists.
cluster_node_cgroup() {
	if [ "$CLUSTER_CGROUP" = v2 ]; then
		echo "$cluster__cgmnt/${cluster__prefix:+$cluster__prefix/}$cluster__slice/${1}_slurmstepd.scope"
	elif [ "$cluster__multi" = 1 ]; then
		echo "$cluster__cgmnt/${2:-cpuset}/slurm_$1"
	else
		echo "$cluster__cgmnt/${2:-cpuset}/slurm"
	fi
}

# cluster__node_cgroups: the cgroup directories Slurm made for our nodes
# (v1: one per controller; v2: each node's slurmstepd scope), and ours.
cluster__node_cgroups() {
	local node
	for node in $CLUSTER_NODES; do
		if [ "$CLUSTER_CGROUP" = v2 ]; then
			ls -d "$(cluster_node_cgroup "$node")" 2>/dev/null
		else
			# shellcheck disable=SC2046 # the glob is the point
			ls -d $(cluster_node_cgroup "$node" '*') 2>/dev/null
		fi
	done
	[ -z "$cluster__launch_cg" ] || ls -d "$cluster__launch_cg" 2>/dev/null
}

# cluster__cgroup_pids: every PID still inside our nodes' cgroups, but our
# running daemons (on v2 slurmd itself lives in <scope>/slurmd).
cluster__cgroup_pids() {
	local d
	for d in $(cluster__node_cgroups); do
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
	done | sort -u | awk -v daemons=" $cluster_pids " 'index(daemons, " " $0 " ") == 0'
}

# cluster_atexit PID: a process the test started (e.g. synergyd) that the
# teardown stops first, whatever ends the test.
cluster_extra_pids=
cluster_atexit() { cluster_extra_pids="$cluster_extra_pids $1"; }

# cluster__exit_hook: run CLUSTER_EXIT_HOOK once.
cluster__exit_hook_done=
cluster__exit_hook() {
	[ -n "$CLUSTER_EXIT_HOOK" ] && [ -z "$cluster__exit_hook_done" ] || return 0
	cluster__exit_hook_done=1
	eval "$CLUSTER_EXIT_HOOK"
}

# cluster_stop: tear everything down (idempotent; installed as EXIT trap).
# Afterwards only CLUSTER_EXIT_HOOK, if any, is left to run at exit.
cluster_stop() {
	local pid i d
	[ -n "$C" ] || return 0
	if [ -n "$CLUSTER_EXIT_HOOK" ]; then
		trap cluster__exit_hook EXIT
		trap 'cluster__exit_hook; exit 130' INT
		trap 'cluster__exit_hook; exit 143' TERM
	else
		trap - EXIT INT TERM
	fi
	if [ -n "$cluster_extra_pids" ]; then
		# shellcheck disable=SC2086
		kill -TERM $cluster_extra_pids 2>/dev/null
		for pid in $cluster_extra_pids; do
			cluster__wait 5 cluster__exited "$pid" ||
				kill -KILL "$pid" 2>/dev/null
		done
		cluster_extra_pids=
	fi
	if [ -n "$cluster_pids" ]; then
		# Let slurmctld cancel running jobs first so that the SPANK plugin's
		# own cleanup runs; then stop the daemons by their recorded PIDs.
		scancel --quiet -u "$(id -un)" >/dev/null 2>&1
		cluster__wait 5 cluster__no_jobs
		# shellcheck disable=SC2086
		kill -TERM $cluster_pids 2>/dev/null
		for i in $(seq 1 50); do
			# shellcheck disable=SC2086
			kill -0 $cluster_pids 2>/dev/null || break
			sleep 0.1
		done
		# shellcheck disable=SC2086
		kill -KILL $cluster_pids 2>/dev/null
	fi
	# slurmstepd and job processes are not our children: find them in our
	# nodes' cgroups (only ours: node names carry this cluster's tag).
	for i in $(seq 1 50); do
		pid=$(cluster__cgroup_pids)
		[ -z "$pid" ] && break
		# shellcheck disable=SC2086
		kill -KILL $pid 2>/dev/null
		sleep 0.1
	done
	for d in $(cluster__node_cgroups); do
		# one rmdir, children before their parents (-depth)
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	if [ -n "$cluster__init_moved" ]; then
		# PID 1 back home; what we made for it goes (a slice under the
		# prefix only if empty: it was ours, not shared).
		echo 1 >"$cluster__cgmnt/cgroup.procs"
		rmdir "$cluster__cgmnt/$CLUSTER_INIT_CGROUP" 2>/dev/null
		[ -z "$cluster__prefix" ] ||
			rmdir "$cluster__cgmnt/$cluster__prefix/$cluster__slice" 2>/dev/null
		d=${CLUSTER_INIT_CGROUP%/*}
		while [ -n "$d" ] && rmdir "$cluster__cgmnt/$d" 2>/dev/null; do
			[ "$d" = "${d%/*}" ] && break
			d=${d%/*}
		done
		cluster__init_moved=
	fi
	cd /
	rm -rf "$C"
	C=
	cluster_stopped_pids=$cluster_pids
	cluster_pids=
}

cluster__no_jobs() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }

# cluster_gone: after cluster_stop, succeed only if none of the cluster's
# daemons runs any more and no cgroup of its nodes is left.
cluster_gone() {
	local pid d rv=0
	for pid in $cluster_stopped_pids; do
		if kill -0 "$pid" 2>/dev/null; then
			diag "daemon $pid still running"
			rv=1
		fi
	done
	for d in $(cluster__node_cgroups); do
		diag "cgroup left: $d"
		rv=1
	done
	return $rv
}

# cluster_job_state ID: the job's state word (PENDING, RUNNING, COMPLETED...).
cluster_job_state() { cluster_job_field "$1" JobState; }

# cluster_job_field ID FIELD: one field of `scontrol -o show job`.
cluster_job_field() {
	scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# cluster_job_min_mem ID: the memory per node the job asks for, as scontrol
# prints it: MinMemoryNode, or, from Slurm 23.11 for a job with a memory
# per GPU (mem_per_tres, as job_submit sizes it), the same figure named
# MinMemoryTRES.
cluster_job_min_mem() {
	local v
	v=$(cluster_job_field "$1" MinMemoryNode)
	[ -n "$v" ] || v=$(cluster_job_field "$1" MinMemoryTRES)
	echo "$v"
}

# cluster_job_tres ID: the TRES the job was allotted, as scontrol prints
# them: TRES= (22.05), AllocTRES= from 23.02 (where TRES= is gone; ReqTRES=
# is the request).
cluster_job_tres() {
	local v
	v=$(cluster_job_field "$1" TRES)
	[ -n "$v" ] || v=$(cluster_job_field "$1" AllocTRES)
	echo "$v"
}

# cluster_wait_job ID [TIMEOUT]: poll every CLUSTER_POLL_MS until the job
# has ended; prints the final state. Returns 1 on timeout.
cluster_wait_job() {
	local id=$1 limit=$((${2:-30} * 1000 / CLUSTER_POLL_MS)) i=0 st
	while :; do
		st=$(cluster_job_state "$id")
		case "$st" in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
			echo "$st"
			return 0 ;;
		esac
		i=$((i + 1))
		[ "$i" -ge "$limit" ] && { echo "${st:-UNKNOWN}"; return 1; }
		sleep "$cluster__poll"
	done
}

# cluster_wait_state ID STATE [TIMEOUT]: poll until the job is in STATE.
cluster_wait_state() { cluster__wait "${3:-30}" cluster__in_state "$1" "$2"; }
cluster__in_state() { [ "$(cluster_job_state "$1")" = "$2" ]; }

# cluster_sbatch ARGS...: submit a batch job from $C, print its id.
cluster_sbatch() {
	(cd "$C" && sbatch --parsable -o "$C/slurm-%j.out" "$@") | cut -d';' -f1
}

# cluster_out ID: the batch job's output file.
cluster_out() { echo "$C/slurm-$1.out"; }

# cluster_proc_ticks PID: user plus system CPU time of process PID, in
# clock ticks (getconf CLK_TCK a second); nothing when it is gone. The
# command name may hold spaces and ')': the fields after its last ')'.
cluster_proc_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }

# cluster_refused PATTERN ARGS...: sbatch --gres=gpu:1 ARGS refuses the job
# with a message matching PATTERN, and no job is created.
cluster_refused() {
	local want=$1 out rc n0 n1
	shift
	n0=$(squeue -h -t all | wc -l)
	out=$(cd "$C" && sbatch --gres=gpu:1 "$@" --wrap true 2>&1)
	rc=$?
	n1=$(squeue -h -t all | wc -l)
	[ "$rc" != 0 ] && [ "$n0" = "$n1" ] && grep -q -- "$want" <<<"$out" && return 0
	diag "sbatch $*: rc=$rc: $out"
	return 1
}

# cluster_cgroup_of PID [CONTROLLER]: the cgroup directory process PID is
# in: v2 the one hierarchy's, v1 CONTROLLER's (default cpuset).
cluster_cgroup_of() {
	local ctl=${2:-cpuset} rel
	if [ "$CLUSTER_CGROUP" = v2 ]; then
		rel=$(sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null)
		[ -n "$rel" ] && echo "$cluster__cgmnt${rel%/}"
	else
		rel=$(awk -F: -v c="$ctl" '{ n = split($2, a, ",");
			for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$1/cgroup" 2>/dev/null)
		[ -n "$rel" ] && echo "$cluster__cgmnt/$ctl${rel%/}"
	fi
}

# cluster_job_cgroup ID [CONTROLLER]: where Slurm keeps job ID's cgroup on
# its first node: v1 <mnt>/CONTROLLER/slurm_<node>/uid_<uid>/job_<id>
# (CONTROLLER default cpuset), v2 <mnt>/[<prefix>/]<slice>/<node>_slurmstepd.scope/
# job_<id> (26.05: .../<SLUID>, see cluster_job_dir). Prints the path
# whether or not it exists (yet, or still).
cluster_job_cgroup() {
	local node uid dir
	node=$(scontrol show hostnames "$(cluster_job_field "$1" NodeList)" 2>/dev/null | head -n 1)
	[ -n "$node" ] || return 1
	if [ "$CLUSTER_CGROUP" = v2 ]; then
		dir=$(cluster_job_dir "$1") || return 1
		echo "$(cluster_node_cgroup "$node")/$dir"
	else
		uid=$(cluster_job_field "$1" UserId | sed -n 's/.*(\([0-9]*\)).*/\1/p')
		[ -n "$uid" ] || return 1
		echo "$(cluster_node_cgroup "$node" "${2:-cpuset}")/uid_$uid/job_$1"
	fi
}

# cluster_job_dir ID: the name of job ID's own cgroup v2 directory under
# its node's scope: job_<ID>, or from Slurm 26.05 the job's SLUID (as
# scontrol -d shows it) unless cgroup.conf has CgroupJobIdPaths=yes.
cluster_job_dir() {
	local sluid
	if cluster__slurm_at_least 26.05 &&
		! grep -qix 'CgroupJobIdPaths=yes' "$C/etc/cgroup.conf" 2>/dev/null; then
		# (scontrol shows it with -d only)
		sluid=$(scontrol -d -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^SLUID=//p')
		[ -n "$sluid" ] || return 1
		echo "$sluid"
	else
		echo "job_$1"
	fi
}

# cluster__slurm_at_least X.Y: the running Slurm is release X.Y or later.
cluster__slurm_at_least() {
	local want have
	want=$(printf '%d%02d' "${1%%.*}" "$((10#${1#*.}))")
	have=$(awk -F. '{ printf "%d%02d", $1, $2 }' <<<"$CLUSTER_SLURM_VERSION")
	[ "$have" -ge "$want" ]
}

# cluster_limit_cgroup ID [CONTROLLER]: where the Synergy plugin bounds job
# ID's tasks (plugin/cgroup.h): on v1 the job's synergy child in
# CONTROLLER's hierarchy (default cpuset), on v2 its batch step's user
# cgroup (Slurm's; the plugin creates none there).
cluster_limit_cgroup() {
	local job
	job=$(cluster_job_cgroup "$1" "${2:-cpuset}") || return 1
	if [ "$CLUSTER_CGROUP" = v2 ]; then echo "$job/step_batch/user"; else echo "$job/synergy"; fi
}

# cluster_mem_limit DIR: the memory limit of cgroup DIR in bytes (v1
# memory.limit_in_bytes, v2 memory.max; "max" when none).
cluster_mem_limit() {
	if [ "$CLUSTER_CGROUP" = v2 ]; then cat "$1/memory.max"; else cat "$1/memory.limit_in_bytes"; fi
}

# cluster_task_in CGROUP_TEXT DIR: a task whose /proc/PID/cgroup is
# CGROUP_TEXT runs in DIR (v1: its cpuset cgroup is DIR) or below it (v2).
cluster_task_in() {
	local rel=${2#"$cluster__cgmnt"}
	if [ "$CLUSTER_CGROUP" = v2 ]; then
		grep -Eq "^0::$rel(/|\$)" <<<"$1"
	else
		rel=${rel#/cpuset}
		grep -Eq "^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:$rel\$" <<<"$1"
	fi
}

# cluster_leftovers: print synergy cgroups, our nodes' job cgroups, and
# what is left in CacheDir and in GroupDir (our nodes' group directories);
# succeeds only if none is.
cluster_leftovers() {
	local dirs files groups d
	dirs=$(for d in $(cluster__node_cgroups); do
		find "$d" -mindepth 1 -type d \( -name '*synergy*' -o -name 'job_*' \)
		# 26.05's job directories are named by SLUID: s and 13 characters
		! cluster__slurm_at_least 26.05 ||
			find "$d" -mindepth 1 -maxdepth 1 -type d -name 's?????????????'
	done
	# A harvesting job's idle cpu cgroup (v1, beside the job's processes).
	[ "$CLUSTER_CGROUP" = v2 ] || [ ! -d "$cluster__cgmnt/cpu" ] ||
		find "$cluster__cgmnt/cpu/" -maxdepth 4 -type d -name "synergy_${CLUSTER_TAG}*")
	files=$(ls -A "${CLUSTER_CACHE_DIR:-$C/cache}" 2>/dev/null)
	groups=$(ls -A "${CLUSTER_GROUP_DIR:-$C/groups}" 2>/dev/null | grep "^$CLUSTER_TAG")
	if [ -n "$dirs" ]; then
		sed 's/^/# left: /' <<<"$dirs"
		# why: what slurmd and its steps logged about cgroups and Synergy's
		# cleanup (a directory Slurm failed to remove says so there)
		grep -h -iE 'cgroup|rmdir|synergy: job [0-9]+: (task exit|epilog)' \
			"$C"/log/slurmd.*.log 2>/dev/null | grep -iE 'error|fail|busy|cannot|unable' |
			tail -n 20 | sed 's/^/# slurmd: /'
	fi
	[ -z "$files" ] || sed 's/^/# left in cache dir: /' <<<"$files"
	[ -z "$groups" ] || sed 's/^/# left in group dir: /' <<<"$groups"
	[ -z "$dirs$files$groups" ]
}

# cluster_lend_done LOG DIR: the closing checks of a lending suite: no
# lending error in slurmd's LOG (its lending lines shown as comments),
# nothing left behind (cluster_leftovers), no record left in the lending
# StateDir DIR.
cluster_lend_done() {
	test_ok "no lending error logged" bash -c "! grep 'synergy: lend' '$1' | grep -qi 'error\|cannot'"
	grep "synergy: lend" "$1" | sed 's/^/# /' | head -20
	cluster__wait 10 cluster_leftovers
	test_ok "no synergy cgroup, job cgroup or cache file left" cluster_leftovers
	cluster__wait 5 bash -c "! ls '$2' | grep -q job_"
	test_ok "no lending record left" bash -c "! ls '$2' | grep -q job_"
}

# cluster_put_profile KEY image|flat|smallcache: write a small test profile
# into the cluster's store. "image": 2 cores and 1 GB of cache per GPU double
# the throughput; "flat": insensitive (1 core, no cache is best);
# "smallcache": gains from a second core and up to 128 MB of cache per GPU,
# its share 1 core and 64 MB (for nodes of 1024 MB, ProcessMemMB 448).
cluster_put_profile() {
	local tput mem='[0, 0.5, 1]' pmem=1
	case "$2" in
	image) tput='[[0.6, 0.8, 1.0], [1.2, 1.6, 2.0]]' ;;
	flat) tput='[[1, 1, 1], [1, 1, 1]]' ;;
	smallcache) tput='[[1, 1.5, 2], [1.2, 1.8, 2.4]]' mem='[0, 0.0625, 0.125]' pmem=0.0625 ;;
	*) bail "cluster_put_profile: unknown kind '$2'" ;;
	esac
	cat >"$C/store/$1.json" <<EOP
{ "schema": 1, "key": "$1", "model": "integration test", "cpus": [1, 2],
  "mem_gb": $mem, "tput": $tput, "prop_cpus": 1, "prop_mem_gb": $pmem,
  "base_tput": 0 }
EOP
}

# cluster_synergy_cgroups: synergy cgroups under our nodes (one per line).
cluster_synergy_cgroups() {
	local d
	for d in $(cluster__node_cgroups); do
		find "$d" -mindepth 1 -type d -name '*synergy*'
	done
}

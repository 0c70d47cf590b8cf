# SPDX-License-Identifier: GPL-2.0-or-later
# plugin/node: what runs as root on a node (libsynnode): the cgroup layer
# (v1, v2, Slurm's layouts), the node agent (lending, harvest, cache grants,
# taking memory back: lend, cachedir), filing a profile a job measured in
# place (inplace, with profiler/libsynjob), the peers of a multi-node step,
# hwloc cores, jobs' CheckFreq checkpoint directories (ckptdir); and
# synergy-lend, which shows and checks it all.
noinst_LTLIBRARIES += plugin/libsynnode.la
plugin_libsynnode_la_SOURCES = \
	plugin/node/cgroup.c plugin/node/cgroup.h plugin/node/cgroup_int.h \
	plugin/node/cgroup_v1.c plugin/node/cgroup_v2.c \
	plugin/node/lend.c plugin/node/lend.h \
	plugin/node/cachedir.c plugin/node/cachedir.h \
	plugin/node/inplace.c plugin/node/inplace.h \
	plugin/node/peers.c plugin/node/peers.h \
	plugin/node/cores.c plugin/node/cores.h \
	plugin/node/ckptdir.c plugin/node/ckptdir.h
plugin_libsynnode_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS) $(LIBCGROUP_CFLAGS)
plugin_libsynnode_la_LIBADD = plugin/libsynshared.la $(HWLOC_LIBS) $(LIBCGROUP_LIBS)

# Unit tests: no root, no Slurm (cachedir.t and ckptdir.t skip without root).
NODE_TESTS = plugin/node/test/cgroup.t plugin/node/test/cores.t plugin/node/test/peers.t \
	plugin/node/test/cachedir.t plugin/node/test/inplace.t plugin/node/test/lend.t \
	plugin/node/test/lendstate.t plugin/node/test/ckptdir.t
check_PROGRAMS += $(NODE_TESTS)
UNIT_TESTS += $(NODE_TESTS)
plugin_node_test_cgroup_t_SOURCES = plugin/node/test/cgroup.c plugin/node/test/fake_tree.h
plugin_node_test_cgroup_t_LDADD = plugin/libsynnode.la
plugin_node_test_cores_t_SOURCES = plugin/node/test/cores.c
plugin_node_test_cores_t_LDADD = plugin/libsynnode.la
plugin_node_test_peers_t_SOURCES = plugin/node/test/peers.c
plugin_node_test_peers_t_LDADD = plugin/libsynnode.la
plugin_node_test_cachedir_t_SOURCES = plugin/node/test/cachedir.c
plugin_node_test_cachedir_t_LDADD = plugin/libsynnode.la
plugin_node_test_inplace_t_SOURCES = plugin/node/test/inplace.c
plugin_node_test_inplace_t_LDADD = plugin/libsynnode.la
plugin_node_test_lend_t_SOURCES = plugin/node/test/lend.c
plugin_node_test_lend_t_LDADD = plugin/libsynnode.la
plugin_node_test_lendstate_t_SOURCES = plugin/node/test/lendstate.c plugin/node/test/fake_tree.h
plugin_node_test_lendstate_t_LDADD = plugin/libsynnode.la
plugin_node_test_ckptdir_t_SOURCES = plugin/node/test/ckptdir.c
plugin_node_test_ckptdir_t_LDADD = plugin/libsynnode.la

# synergy-lend: read-only view of idle-core lending on this machine (root).
sbin_PROGRAMS += plugin/synergy-lend
plugin_synergy_lend_SOURCES = plugin/node/synergy-lend.c
plugin_synergy_lend_LDADD = plugin/libsynnode.la
dist_man_MANS += doc/synergy-lend.8

# Benchmark (root, real daemons; prints a table): the cost of one lending event.
noinst_PROGRAMS += plugin/lend-bench
plugin_lend_bench_SOURCES = plugin/bench/lend-bench.c plugin/bench/bench_time.h
plugin_lend_bench_LDADD = plugin/libsynnode.la
dist_noinst_SCRIPTS += plugin/bench/lend-bench.sh

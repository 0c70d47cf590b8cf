# plugin: build rules (included from the top Makefile.am)
#
# The Slurm adapters: spank_synergy.so (SPANK: options, cgroups, loader
# environment) and job_submit_synergy.so (sizes jobs from their profile).
# Both are loadable modules built against the installed Slurm headers and
# export only the symbols Slurm looks up (version scripts).

# Parsers, configuration and the cgroup/hwloc helpers shared by the plugins.
# Users also link profiler/libsynstore.la (the synergy.conf parser).
noinst_LTLIBRARIES += plugin/libsynplugin.la
plugin_libsynplugin_la_SOURCES = \
	plugin/util.c plugin/util.h \
	plugin/cgroup.h plugin/cgroup_int.h plugin/cgroup.c \
	plugin/cgroup_v1.c plugin/cgroup_v2.c \
	plugin/jobrec.c plugin/jobrec.h \
	plugin/shapes.c plugin/shapes.h \
	plugin/cpulist.c plugin/cpulist.h \
	plugin/nodeconf.c plugin/nodeconf.h \
	plugin/peers.c plugin/peers.h \
	plugin/tuner.c plugin/tuner.h \
	plugin/cores.c plugin/cores.h \
	plugin/claim.c plugin/claim.h \
	plugin/ckptdir.c plugin/ckptdir.h
plugin_libsynplugin_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS) $(LIBCGROUP_CFLAGS)
plugin_libsynplugin_la_LIBADD = $(HWLOC_LIBS) $(LIBCGROUP_LIBS)

slurmplugin_LTLIBRARIES += plugin/spank_synergy.la
plugin_spank_synergy_la_SOURCES = plugin/spank_synergy.c plugin/spank_int.h \
	plugin/spank_client.c plugin/spank_remote.c plugin/spank_jobscript.c \
	plugin/lend.c plugin/lend.h plugin/inplace.c plugin/inplace.h plugin/spank_ckpt.c
plugin_spank_synergy_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) -I$(top_srcdir)/profiler
plugin_spank_synergy_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
plugin_spank_synergy_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/spank_synergy.lds
plugin_spank_synergy_la_LIBADD = plugin/libsynplugin.la profiler/libsynjob.la \
	profiler/libsynmodel.la profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) \
	$(GLPK_LIBS) $(PTHREAD_LIBS) $(LIBM)
EXTRA_DIST += plugin/spank_synergy.lds

# Unit tests: no root, no Slurm.
check_PROGRAMS += plugin/test/util.t plugin/test/cores.t plugin/test/cgroup.t \
	plugin/test/jobrec.t plugin/test/nodeconf.t plugin/test/peers.t plugin/test/ckptdir.t
UNIT_TESTS += plugin/test/util.t plugin/test/cores.t plugin/test/cgroup.t \
	plugin/test/jobrec.t plugin/test/nodeconf.t plugin/test/peers.t plugin/test/ckptdir.t
plugin_test_ckptdir_t_SOURCES = plugin/test/ckptdir.c
plugin_test_ckptdir_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_ckptdir_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)
plugin_test_peers_t_SOURCES = plugin/test/peers.c
plugin_test_peers_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_peers_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)
plugin_test_nodeconf_t_SOURCES = plugin/test/nodeconf.c
plugin_test_nodeconf_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_nodeconf_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)
plugin_test_cgroup_t_SOURCES = plugin/test/cgroup.c plugin/test/fake_tree.h
plugin_test_cgroup_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_cgroup_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)
plugin_test_jobrec_t_SOURCES = plugin/test/jobrec.c plugin/submit.c
plugin_test_jobrec_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_jobrec_t_LDADD = plugin/libsynplugin.la \
	profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)
plugin_test_util_t_SOURCES = plugin/test/util.c
plugin_test_util_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_util_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)
plugin_test_cores_t_SOURCES = plugin/test/cores.c
plugin_test_cores_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_cores_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)

# Profile on first run: claims on profiling a key in place, and filing the
# profile a job's own loader measured (its report is untrusted input).
check_PROGRAMS += plugin/test/claim.t plugin/test/inplace.t
UNIT_TESTS += plugin/test/claim.t plugin/test/inplace.t
plugin_test_claim_t_SOURCES = plugin/test/claim.c
plugin_test_claim_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_claim_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)
plugin_test_inplace_t_SOURCES = plugin/test/inplace.c plugin/inplace.c plugin/inplace.h
plugin_test_inplace_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin \
	-I$(top_srcdir)/profiler
plugin_test_inplace_t_LDADD = plugin/libsynplugin.la profiler/libsynjob.la \
	profiler/libsynmodel.la profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) \
	$(GLPK_LIBS) $(LIBM)

# Idle-core lending: the decision (a pure function) and its node state.
check_PROGRAMS += plugin/test/lend.t plugin/test/lendstate.t
UNIT_TESTS += plugin/test/lend.t plugin/test/lendstate.t
plugin_test_lendstate_t_SOURCES = plugin/test/lendstate.c plugin/test/fake_tree.h \
	plugin/lend.c plugin/lend.h
plugin_test_lendstate_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_lendstate_t_LDADD = plugin/libsynplugin.la \
	profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)
plugin_test_lend_t_SOURCES = plugin/test/lend.c plugin/lend.c plugin/lend.h
plugin_test_lend_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_lend_t_LDADD = plugin/libsynplugin.la \
	profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)

slurmplugin_LTLIBRARIES += plugin/job_submit_synergy.la
plugin_job_submit_synergy_la_SOURCES = plugin/job_submit_synergy.c \
	plugin/submit.c plugin/submit.h
plugin_job_submit_synergy_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
plugin_job_submit_synergy_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/job_submit_synergy.lds
plugin_job_submit_synergy_la_LIBADD = plugin/libsynplugin.la \
	profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)
EXTRA_DIST += plugin/job_submit_synergy.lds

# Slurm dlopens <PluginDir>/<type>_<name>.so and has no use for libtool's
# .la files, which would only clutter its plugin directory: drop them after
# install. Without them `libtool --mode=uninstall` cannot name the .so, so
# uninstall removes those itself.
SLURM_PLUGIN_NAMES = spank_synergy job_submit_synergy
install-data-hook: install-data-hook-slurmplugins
install-data-hook-slurmplugins:
	for p in $(SLURM_PLUGIN_NAMES); do rm -f "$(DESTDIR)$(slurmplugindir)/$$p.la"; done
uninstall-hook: uninstall-hook-slurmplugins
uninstall-hook-slurmplugins:
	for p in $(SLURM_PLUGIN_NAMES); do rm -f "$(DESTDIR)$(slurmplugindir)/$$p.so"; done
.PHONY: install-data-hook-slurmplugins uninstall-hook-slurmplugins

check_PROGRAMS += plugin/test/submit.t
UNIT_TESTS += plugin/test/submit.t
plugin_test_submit_t_SOURCES = plugin/test/submit.c plugin/submit.c
plugin_test_submit_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_submit_t_LDADD = plugin/libsynplugin.la \
	profiler/libsynstore.la policy/libsynpolicy.la $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)

# synergyd: the tuner daemon on the controller host (libslurm).
sbin_PROGRAMS += plugin/synergyd
plugin_synergyd_SOURCES = plugin/synergyd.c plugin/submit.c plugin/submit.h
plugin_synergyd_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
plugin_synergyd_LDFLAGS = $(SLURM_LDFLAGS)
plugin_synergyd_LDADD = plugin/libsynplugin.la profiler/libsynstore.la \
	policy/libsynpolicy.la $(SLURM_LIBS) $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)

check_PROGRAMS += plugin/test/tuner.t
UNIT_TESTS += plugin/test/tuner.t
plugin_test_tuner_t_SOURCES = plugin/test/tuner.c
plugin_test_tuner_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -I$(top_srcdir)/plugin
plugin_test_tuner_t_LDADD = plugin/libsynplugin.la profiler/libsynstore.la $(JANSSON_LIBS)

# Benchmark (root, real daemons; prints a table): what the plugins add to a job.
dist_noinst_SCRIPTS += plugin/bench/job-latency.sh

# synergy-lend: read-only view of idle-core lending on this machine (root).
sbin_PROGRAMS += plugin/synergy-lend
plugin_synergy_lend_SOURCES = plugin/synergy-lend.c plugin/lend.c plugin/lend.h
plugin_synergy_lend_LDADD = plugin/libsynplugin.la profiler/libsynstore.la \
	policy/libsynpolicy.la $(JANSSON_LIBS) $(GLPK_LIBS) $(LIBM)
dist_man_MANS += doc/synergy-lend.8

# Benchmark (root, real daemons; prints a table): the cost of one lending event.
noinst_PROGRAMS += plugin/lend-bench
plugin_lend_bench_SOURCES = plugin/bench/lend-bench.c plugin/lend.c plugin/lend.h
plugin_lend_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/plugin
plugin_lend_bench_LDADD = $(plugin_synergy_lend_LDADD)
dist_noinst_SCRIPTS += plugin/bench/lend-bench.sh

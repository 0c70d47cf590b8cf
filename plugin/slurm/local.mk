# SPDX-License-Identifier: GPL-2.0-or-later
# plugin/slurm: the Slurm adapters, the only files built against Slurm's
# headers: spank_synergy.so (SPANK, by context: the client side in sbatch,
# salloc and srun; the node side in slurmd's prolog and epilog and in
# slurmstepd), job_submit_synergy.so (slurmctld) and synergyd (libslurm, on
# the controller host). They translate between Slurm and the libraries of
# shared/, ctl/ and node/. The two plugins are loadable modules that export
# only the symbols Slurm looks up (version scripts); job_submit_synergy.so
# links nothing of the node's (no hwloc, no libcgroup).
# spank_synergy.so is what plugstack.conf names, and what sbatch, salloc
# and srun load for every job: the options and the client side, over
# libsyncommon alone. On the nodes it loads spank_synergy_node.so from its
# own directory (spank_int.h): the node side and its libraries.
slurmplugin_LTLIBRARIES += plugin/spank_synergy.la
plugin_spank_synergy_la_SOURCES = plugin/slurm/spank_synergy.c plugin/slurm/spank_int.h \
	plugin/slurm/spank_client.c
plugin_spank_synergy_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
plugin_spank_synergy_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/slurm/spank_synergy.lds
plugin_spank_synergy_la_LIBADD = common/libsyncommon.la $(DLOPEN_LIBS)
EXTRA_DIST += plugin/slurm/spank_synergy.lds

slurmplugin_LTLIBRARIES += plugin/spank_synergy_node.la
plugin_spank_synergy_node_la_SOURCES = plugin/slurm/spank_node.c plugin/slurm/spank_int.h \
	plugin/slurm/spank_remote.c plugin/slurm/spank_jobscript.c plugin/slurm/spank_ckpt.c
plugin_spank_synergy_node_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
plugin_spank_synergy_node_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
plugin_spank_synergy_node_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/slurm/spank_synergy_node.lds
plugin_spank_synergy_node_la_LIBADD = plugin/libsynnode.la $(PTHREAD_LIBS)
EXTRA_DIST += plugin/slurm/spank_synergy_node.lds

slurmplugin_LTLIBRARIES += plugin/job_submit_synergy.la
plugin_job_submit_synergy_la_SOURCES = plugin/slurm/job_submit_synergy.c plugin/slurm/slurm_compat.h
plugin_job_submit_synergy_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
plugin_job_submit_synergy_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/slurm/job_submit_synergy.lds
plugin_job_submit_synergy_la_LIBADD = plugin/libsynctl.la
EXTRA_DIST += plugin/slurm/job_submit_synergy.lds

# Slurm dlopens <PluginDir>/<type>_<name>.so and has no use for libtool's
# .la files, which would only clutter its plugin directory: drop them after
# install. Without them `libtool --mode=uninstall` cannot name the .so, so
# uninstall removes those itself.
SLURM_PLUGIN_NAMES = spank_synergy spank_synergy_node job_submit_synergy
install-data-hook: install-data-hook-slurmplugins
install-data-hook-slurmplugins:
	for p in $(SLURM_PLUGIN_NAMES); do rm -f "$(DESTDIR)$(slurmplugindir)/$$p.la"; done
uninstall-hook: uninstall-hook-slurmplugins
uninstall-hook-slurmplugins:
	for p in $(SLURM_PLUGIN_NAMES); do rm -f "$(DESTDIR)$(slurmplugindir)/$$p.so"; done
.PHONY: install-data-hook-slurmplugins uninstall-hook-slurmplugins

# synergyd: the tuner daemon on the controller host (libslurm).
sbin_PROGRAMS += plugin/synergyd
plugin_synergyd_SOURCES = plugin/slurm/synergyd.c plugin/slurm/slurm_compat.h
plugin_synergyd_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
plugin_synergyd_LDFLAGS = $(SLURM_LDFLAGS)
plugin_synergyd_LDADD = plugin/libsynctl.la $(SLURM_LIBS)

# Benchmark (root, real daemons; prints a table): what the plugins add to a job.
dist_noinst_SCRIPTS += plugin/bench/job-latency.sh

# Unit test (no Slurm, no root): what each module links and exports.
SLURM_MODULE_TESTS = plugin/slurm/test/modules.sh
UNIT_TESTS += $(SLURM_MODULE_TESTS)
dist_noinst_SCRIPTS += $(SLURM_MODULE_TESTS)

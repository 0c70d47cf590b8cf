# SPDX-License-Identifier: GPL-2.0-or-later
# plugin/shared: what the controller and the nodes both use (libsynshared):
# the grant job_submit seals and the node opens (jobrec, grantauth), claims
# on profiling a key in place, slurm.conf's node lines and host lists
# (nodeconf) and Slurm's other text fields (slurmtext), and the plugins'
# configuration glue (util). No hwloc, no libcgroup, no Slurm headers.
noinst_LTLIBRARIES += plugin/libsynshared.la
plugin_libsynshared_la_SOURCES = \
	plugin/shared/util.c plugin/shared/util.h \
	plugin/shared/jobrec.c plugin/shared/jobrec.h \
	plugin/shared/grantauth.c plugin/shared/grantauth.h \
	plugin/shared/claim.c plugin/shared/claim.h \
	plugin/shared/nodeconf.c plugin/shared/nodeconf.h \
	plugin/shared/slurmtext.c plugin/shared/slurmtext.h
plugin_libsynshared_la_CPPFLAGS = $(AM_CPPFLAGS) $(MUNGE_CFLAGS) $(LIBCRYPTO_CFLAGS)
# Convenience libraries that share objects cannot both be added to one
# module (duplicate symbols), so the internal libraries form one chain:
# common -> store -> policy -> model -> job -> shared -> {ctl, node}.
plugin_libsynshared_la_LIBADD = profiler/libsynjob.la $(MUNGE_LIBS) $(LIBCRYPTO_LIBS)

# Unit tests: no root, no Slurm (grantauth.t starts a private munged when
# there is one).
SHARED_TESTS = plugin/shared/test/jobrec.t plugin/shared/test/grantauth.t \
	plugin/shared/test/claim.t plugin/shared/test/nodeconf.t plugin/shared/test/slurmtext.t
check_PROGRAMS += $(SHARED_TESTS)
UNIT_TESTS += $(SHARED_TESTS)
plugin_shared_test_jobrec_t_SOURCES = plugin/shared/test/jobrec.c
plugin_shared_test_jobrec_t_LDADD = plugin/libsynctl.la
plugin_shared_test_grantauth_t_SOURCES = plugin/shared/test/grantauth.c
plugin_shared_test_grantauth_t_CPPFLAGS = $(AM_CPPFLAGS) $(MUNGE_CFLAGS)
plugin_shared_test_grantauth_t_LDADD = plugin/libsynshared.la $(MUNGE_LIBS)
plugin_shared_test_claim_t_SOURCES = plugin/shared/test/claim.c
plugin_shared_test_claim_t_LDADD = plugin/libsynshared.la
plugin_shared_test_nodeconf_t_SOURCES = plugin/shared/test/nodeconf.c
plugin_shared_test_nodeconf_t_LDADD = plugin/libsynshared.la
plugin_shared_test_slurmtext_t_SOURCES = plugin/shared/test/slurmtext.c
plugin_shared_test_slurmtext_t_LDADD = plugin/libsynshared.la

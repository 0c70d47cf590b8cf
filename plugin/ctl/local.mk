# SPDX-License-Identifier: GPL-2.0-or-later
# plugin/ctl: the controller side (libsynctl): sizing a job from its profile
# and the policy (submit), and the node shapes synergyd exports (shapes).
# job_submit_synergy.so and synergyd link it; nothing of the node's.
noinst_LTLIBRARIES += plugin/libsynctl.la
plugin_libsynctl_la_SOURCES = \
	plugin/ctl/submit.c plugin/ctl/submit.h \
	plugin/ctl/shapes.c plugin/ctl/shapes.h
plugin_libsynctl_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
plugin_libsynctl_la_LIBADD = plugin/libsynshared.la $(PTHREAD_LIBS)

# The profile the tests and decide-bench put into their stores.
CTL_PROFILE_FIXTURE = plugin/ctl/test/profile_fixture.c plugin/ctl/test/profile_fixture.h

check_PROGRAMS += plugin/ctl/test/submit.t
UNIT_TESTS += plugin/ctl/test/submit.t
plugin_ctl_test_submit_t_SOURCES = plugin/ctl/test/submit.c $(CTL_PROFILE_FIXTURE)
plugin_ctl_test_submit_t_LDADD = plugin/libsynctl.la

# The decision under concurrent calls (slurmctld 23.02+), also under TSan.
check_PROGRAMS += plugin/ctl/test/submit_threads.t
UNIT_TESTS += plugin/ctl/test/submit_threads.t
THREAD_TESTS += plugin/ctl/test/submit_threads.t
plugin_ctl_test_submit_threads_t_SOURCES = plugin/ctl/test/submit_threads.c $(CTL_PROFILE_FIXTURE)
plugin_ctl_test_submit_threads_t_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
plugin_ctl_test_submit_threads_t_LDADD = plugin/libsynctl.la $(PTHREAD_LIBS)

# Benchmark (no root; prints a table): what one decision costs a job, per
# kind of job (plugin/bench/decide-bench.c).
noinst_PROGRAMS += plugin/decide-bench
plugin_decide_bench_SOURCES = plugin/bench/decide-bench.c plugin/bench/bench_time.h $(CTL_PROFILE_FIXTURE)
plugin_decide_bench_LDADD = plugin/libsynctl.la
# ... kept runnable: a short run checks each decision, hostile arguments refused.
UNIT_TESTS += plugin/bench/test/decide-bench.sh
dist_noinst_SCRIPTS += plugin/bench/test/decide-bench.sh

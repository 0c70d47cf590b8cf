# SPDX-License-Identifier: GPL-2.0-or-later
# profiler: the DS-Analyzer model and measurement, a profile from a job's
# own report, and the synergy-profile CLI. The profile, its JSON form, the
# store and synergy.conf are common/libsynstore's.

# The what-if model and the stall report (pure arithmetic; the report
# reads profiles through the policy).
noinst_LTLIBRARIES += profiler/libsynmodel.la
profiler_libsynmodel_la_SOURCES = profiler/model.c profiler/model.h \
	profiler/report.c profiler/report.h
profiler_libsynmodel_la_LIBADD = policy/libsynpolicy.la $(LIBM)

# A profile from the report a job's own loader wrote (profiling mode):
# parsed and checked as untrusted input; linked by synergy-profile and by
# the SPANK plugin, which files profiles measured on a job's first run.
noinst_LTLIBRARIES += profiler/libsynjob.la
profiler_libsynjob_la_SOURCES = profiler/jobprofile.c profiler/jobprofile.h
profiler_libsynjob_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
profiler_libsynjob_la_LIBADD = profiler/libsynmodel.la $(JANSSON_LIBS) $(LIBM)

PROFILER_TEST_LIBS = profiler/libsynjob.la
PROFILER_TEST_CPPFLAGS = $(AM_CPPFLAGS) \
	-DPROFILER_TEST_DATA='"$(abs_top_srcdir)/profiler/test/data"'

check_PROGRAMS += profiler/test/model.t profiler/test/report.t profiler/test/jobprofile.t
UNIT_TESTS += profiler/test/model.t profiler/test/report.t profiler/test/jobprofile.t
profiler_test_jobprofile_t_SOURCES = profiler/test/jobprofile.c tests/tap.h
profiler_test_jobprofile_t_CPPFLAGS = $(PROFILER_TEST_CPPFLAGS)
profiler_test_jobprofile_t_LDADD = $(PROFILER_TEST_LIBS)
profiler_test_model_t_SOURCES = profiler/test/model.c tests/tap.h
profiler_test_model_t_CPPFLAGS = $(PROFILER_TEST_CPPFLAGS)
profiler_test_model_t_LDADD = $(PROFILER_TEST_LIBS)
profiler_test_report_t_SOURCES = profiler/test/report.c tests/tap.h
profiler_test_report_t_CPPFLAGS = $(PROFILER_TEST_CPPFLAGS)
profiler_test_report_t_LDADD = $(PROFILER_TEST_LIBS)
EXTRA_DIST += profiler/test/data

# The measurement protocol on the embedded loader, and the CLI.
bin_PROGRAMS += profiler/synergy-profile
profiler_synergy_profile_SOURCES = profiler/synergy-profile.c \
	profiler/measure.c profiler/measure.h
profiler_synergy_profile_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
profiler_synergy_profile_LDADD = profiler/libsynjob.la loader/libcoordl.la

# CLI golden output and end-to-end profiling on generated data.
UNIT_TESTS += profiler/test/cli.sh profiler/test/run.sh profiler/test/runjob.sh
EXTRA_DIST += profiler/test/cli.sh profiler/test/run.sh profiler/test/runjob.sh
profiler/test/runjob.log: bench/coordl-bench$(EXEEXT) tools/coordl-datagen$(EXEEXT)

# SPDX-License-Identifier: GPL-2.0-or-later
# common: the bottom of the build graph (included from the top Makefile.am).
#
# libsyncommon: the error type and helper, the parsers (numbers, sizes,
# booleans, CPU lists, keys, paths), bounded reads, safe opens, atomic
# writes and the Key=Value reader. It depends on nothing but libc, so that
# every library and program links it, libcoordl included (which exports
# only coordl_* names: these stay internal to it, as munge's libcommon).
noinst_LTLIBRARIES += common/libsyncommon.la
common_libsyncommon_la_SOURCES = \
	common/error.c common/error.h \
	common/parse.c common/parse.h \
	common/cpus.c common/cpus.h \
	common/file.c common/file.h \
	common/kv.c common/kv.h
common_libsyncommon_la_LIBADD = $(LIBM)

# libsynstore: the files Synergy's programs share: synergy.conf (its
# schema and its one loader), the profile (checks, evaluation, JSON) and
# the profile store. Linked by the policy and everything above it.
noinst_LTLIBRARIES += common/libsynstore.la
common_libsynstore_la_SOURCES = \
	common/conf.c common/conf.h \
	common/profile.c common/profile.h \
	common/profile_json.c common/store.c common/store.h
common_libsynstore_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
common_libsynstore_la_LIBADD = common/libsyncommon.la $(JANSSON_LIBS) $(LIBM)

# Unit tests: every grammar of common/parse.h is tested here, once.
COMMON_TESTS = common/test/parse.t common/test/file.t common/test/kv.t common/test/conf.t \
	common/test/profile.t common/test/store.t
check_PROGRAMS += $(COMMON_TESTS)
UNIT_TESTS += $(COMMON_TESTS)
COMMON_TEST_CPPFLAGS = $(AM_CPPFLAGS) -DTOP_SRCDIR='"$(abs_top_srcdir)"' \
	-DPROFILER_TEST_DATA='"$(abs_top_srcdir)/profiler/test/data"'
common_test_parse_t_SOURCES = common/test/parse.c
common_test_parse_t_CPPFLAGS = $(COMMON_TEST_CPPFLAGS)
common_test_parse_t_LDADD = common/libsyncommon.la
common_test_file_t_SOURCES = common/test/file.c
common_test_file_t_CPPFLAGS = $(COMMON_TEST_CPPFLAGS)
common_test_file_t_LDADD = common/libsyncommon.la
common_test_kv_t_SOURCES = common/test/kv.c
common_test_kv_t_CPPFLAGS = $(COMMON_TEST_CPPFLAGS)
common_test_kv_t_LDADD = common/libsyncommon.la
common_test_conf_t_SOURCES = common/test/conf.c
common_test_conf_t_CPPFLAGS = $(COMMON_TEST_CPPFLAGS)
common_test_conf_t_LDADD = common/libsynstore.la
common_test_profile_t_SOURCES = common/test/profile.c
common_test_profile_t_CPPFLAGS = $(COMMON_TEST_CPPFLAGS)
common_test_profile_t_LDADD = common/libsynstore.la
common_test_store_t_SOURCES = common/test/store.c
common_test_store_t_CPPFLAGS = $(COMMON_TEST_CPPFLAGS)
common_test_store_t_LDADD = common/libsynstore.la

# SPDX-License-Identifier: GPL-2.0-or-later
# policy: build rules (included from the top Makefile.am)
# libsynpolicy: the allocation core, free of Slurm, built PIC through libtool
# so that the Slurm plugins can link it. Depends on the profiles of
# common/libsynstore, GLPK (OPT) and libm.
noinst_LTLIBRARIES += policy/libsynpolicy.la
policy_libsynpolicy_la_SOURCES = \
	policy/builtin.c \
	policy/demand.c \
	policy/order.c \
	policy/alloc.c \
	policy/opt.c \
	policy/round.c \
	policy/size.c \
	policy/node.c \
	policy/policy_int.h
policy_libsynpolicy_la_LIBADD = common/libsynstore.la $(GLPK_LIBS) $(LIBM)
noinst_HEADERS += include/synergy_policy.h

# Unit tests.
POLICY_TESTS = policy/test/builtin.t policy/test/alloc.t policy/test/guarantee.t policy/test/opt.t \
	policy/test/live.t
check_PROGRAMS += $(POLICY_TESTS)
UNIT_TESTS += $(POLICY_TESTS)
POLICY_TEST_LDADD = policy/libsynpolicy.la
POLICY_TEST_CPPFLAGS = $(AM_CPPFLAGS)
policy_test_builtin_t_SOURCES = policy/test/builtin.c
policy_test_builtin_t_CPPFLAGS = $(POLICY_TEST_CPPFLAGS)
policy_test_builtin_t_LDADD = $(POLICY_TEST_LDADD)
policy_test_alloc_t_SOURCES = policy/test/alloc.c
policy_test_alloc_t_CPPFLAGS = $(POLICY_TEST_CPPFLAGS)
policy_test_alloc_t_LDADD = $(POLICY_TEST_LDADD)
policy_test_guarantee_t_SOURCES = policy/test/guarantee.c
policy_test_guarantee_t_CPPFLAGS = $(POLICY_TEST_CPPFLAGS)
policy_test_guarantee_t_LDADD = $(POLICY_TEST_LDADD)
policy_test_opt_t_SOURCES = policy/test/opt.c
policy_test_opt_t_CPPFLAGS = $(POLICY_TEST_CPPFLAGS)
policy_test_opt_t_LDADD = $(POLICY_TEST_LDADD)
policy_test_live_t_SOURCES = policy/test/live.c
policy_test_live_t_CPPFLAGS = $(POLICY_TEST_CPPFLAGS)
policy_test_live_t_LDADD = $(POLICY_TEST_LDADD)

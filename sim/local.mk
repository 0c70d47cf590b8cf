# SPDX-License-Identifier: GPL-2.0-or-later
# sim: build rules (included from the top Makefile.am)
# synergy-sim: the trace-driven simulator over the policy library. Measured
# profiles come from the profile store (common/libsynstore.la, under the
# policy).
bin_PROGRAMS += sim/synergy-sim
sim_synergy_sim_SOURCES = sim/main.c sim/engine.c sim/live.c sim/trace.c sim/sim.h
sim_synergy_sim_LDADD = policy/libsynpolicy.la

# Tests: golden traces worked by hand (rounds and live Slurm, and searches
# with coordinated prep), and malformed input.
UNIT_TESTS += sim/test/golden.sh sim/test/golden-live.sh sim/test/golden-search.sh \
	sim/test/malformed.sh
EXTRA_DIST += sim/test/golden.sh sim/test/golden-live.sh sim/test/golden-search.sh \
	sim/test/malformed.sh sim/test/golden1.csv sim/test/golden1.expected \
	sim/test/golden2.csv sim/test/golden3.csv sim/test/golden-live.expected \
	sim/test/golden4.csv sim/test/golden4.expected

# Benchmark of the policy core (run by bench/sim-bench.sh).
noinst_PROGRAMS += sim/synergy-policy-bench
sim_synergy_policy_bench_SOURCES = sim/policy-bench.c
sim_synergy_policy_bench_LDADD = policy/libsynpolicy.la

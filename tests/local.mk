# SPDX-License-Identifier: GPL-2.0-or-later
# tests: build rules (included from the top Makefile.am)
# Integration tests: each starts its own throwaway Slurm cluster through
# tests/lib/cluster.sh (root only; skipped otherwise). The profiling test
# runs the real profiler (needs tools/ and profiler/); demo.sh runs the
# README's main job, quick mode, on the built tree (minutes); packaging.sh
# builds the Debian packages from a clean copy of the source, installs them,
# runs a job on the installed plugins and purges them (minutes).
# cgroup-v2.sh runs cluster suites on cgroup v2 inside a qemu guest
# (tests/vm/vm-run, tests/vm/README); vm-run.sh tests that harness.
# slurm-plain.sh runs cluster suites on a Slurm built without
# multiple-slurmd (tools/build-slurm-plain; skipped when there is none).
# slurm-versions.sh builds the project inside the root file systems of
# newer Debian releases (tools/build-slurm-rootfs, tools/rootfs-run: Slurm
# 24.11, 26.05) and runs cluster suites in the guest booted on them.
# packaging-rootfs.sh builds the Debian packages in Debian 13's root and
# installs them in the guest booted on it (packaging.sh there), and the
# RPMs against 26.05 in sid's (tools/rootfs-packages; minutes).
SYNERGY_INTEGRATION_TESTS = tests/integration/cluster-basic.sh \
	tests/integration/cluster-limits.sh tests/integration/vm-run.sh \
	tests/integration/cgroup-v2.sh tests/integration/slurm-plain.sh \
	tests/integration/slurm-versions.sh \
	tests/integration/synergy-sized.sh tests/integration/synergy-fallback.sh \
	tests/integration/synergy-cleanup.sh tests/integration/synergy-hostile.sh \
	tests/integration/synergy-tuner.sh tests/integration/synergy-profiling.sh \
	tests/integration/synergy-lending.sh tests/integration/synergy-trust.sh \
	tests/integration/synergy-trust-alloc.sh \
	tests/integration/synergy-shapes.sh tests/integration/synergy-soak.sh \
	tests/integration/synergy-live.sh tests/integration/synergy-trainval.sh \
	tests/integration/synergy-firstrun.sh tests/integration/synergy-group.sh \
	tests/integration/synergy-multinode.sh tests/integration/synergy-harvest.sh \
	tests/integration/synergy-shrink.sh tests/integration/synergy-concurrent.sh \
	tests/integration/synergy-checkfreq.sh \
	tests/integration/demo.sh \
	tests/integration/packaging.sh tests/integration/packaging-rootfs.sh
EXTRA_DIST += tests/lib/cluster.sh tests/lib/nginx.sh tests/lib/ports.sh tests/lib/suites.sh tests/vm/README tests/vm/init \
	tests/vm/spank-probe.c
dist_noinst_SCRIPTS += tests/vm/vm-run tools/build-slurm-plain tools/build-slurm-rootfs tools/rootfs-run \
	tools/rootfs-packages \
	tests/vm/spank-probe.sh
INTEGRATION_TESTS += $(SYNERGY_INTEGRATION_TESTS)
dist_noinst_SCRIPTS += $(SYNERGY_INTEGRATION_TESTS) synergy-demo examples/demo-job.sh tools/demo-report

# The fuzz targets' seed corpora (tests/fuzz/corpus/TARGET), replayed as
# unit tests by tests/fuzz/replay.c linked with each target and the code it
# parses: a regression seed that finds its bug again fails make check (and
# the sanitizer build). tests/fuzz/run-fuzz.sh (clang, libFuzzer) fuzzes.
FUZZ_REPLAY = tests/fuzz/replay-prep.t tests/fuzz/replay-profile.t \
	tests/fuzz/replay-conf.t tests/fuzz/replay-trace.t tests/fuzz/replay-env.t \
	tests/fuzz/replay-spank.t tests/fuzz/replay-source.t tests/fuzz/replay-node.t \
	tests/fuzz/replay-cache.t tests/fuzz/replay-remote.t tests/fuzz/replay-ckpt.t
check_PROGRAMS += $(FUZZ_REPLAY)
UNIT_TESTS += $(FUZZ_REPLAY)
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) $(LIBJPEG_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS)
tests_fuzz_replay_prep_t_SOURCES = tests/fuzz/replay.c loader/test/fuzz_prep.c
tests_fuzz_replay_prep_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/prep"'
tests_fuzz_replay_prep_t_LDADD = loader/libcoordl-core.la
tests_fuzz_replay_profile_t_SOURCES = tests/fuzz/replay.c common/test/fuzz_profile.c
tests_fuzz_replay_profile_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/profile"'
tests_fuzz_replay_profile_t_LDADD = common/libsynstore.la
tests_fuzz_replay_conf_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_conf.c
tests_fuzz_replay_conf_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/conf"'
tests_fuzz_replay_conf_t_LDADD = common/libsynstore.la
tests_fuzz_replay_trace_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_trace.c sim/trace.c
tests_fuzz_replay_trace_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/trace"'
tests_fuzz_replay_trace_t_LDADD = policy/libsynpolicy.la
tests_fuzz_replay_env_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_env.c
tests_fuzz_replay_env_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/env"'
tests_fuzz_replay_env_t_LDADD = loader/libcoordl-core.la
tests_fuzz_replay_spank_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_spank.c
tests_fuzz_replay_spank_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/spank"'
tests_fuzz_replay_spank_t_LDADD = plugin/libsynnode.la
tests_fuzz_replay_node_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_node.c
tests_fuzz_replay_node_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/node"'
tests_fuzz_replay_node_t_LDADD = plugin/libsynctl.la
tests_fuzz_replay_source_t_SOURCES = tests/fuzz/replay.c loader/test/fuzz_source.c
tests_fuzz_replay_source_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/source"'
tests_fuzz_replay_source_t_LDADD = loader/libcoordl-core.la
tests_fuzz_replay_cache_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_cache.c
tests_fuzz_replay_cache_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/cache"'
tests_fuzz_replay_cache_t_LDADD = loader/libcoordl-core.la
tests_fuzz_replay_ckpt_t_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_ckpt.c
tests_fuzz_replay_ckpt_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/ckpt"'
tests_fuzz_replay_ckpt_t_LDADD = loader/libcoordl-core.la
tests_fuzz_replay_remote_t_SOURCES = tests/fuzz/replay.c loader/test/fuzz_remote.c
tests_fuzz_replay_remote_t_CPPFLAGS = $(FUZZ_CPPFLAGS) -DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/remote"'
tests_fuzz_replay_remote_t_LDADD = loader/libcoordl-core.la
EXTRA_DIST += tests/fuzz/README tests/fuzz/run-fuzz.sh tests/fuzz/fuzz_util.h \
	tests/fuzz/fuzz_conf.c tests/fuzz/fuzz_env.c tests/fuzz/fuzz_spank.c tests/fuzz/fuzz_cache.c \
	tests/fuzz/fuzz_ckpt.c \
	tests/fuzz/fuzz_trace.c tests/fuzz/corpus tests/fuzz/crashes \
	tests/static/cppcheck.sh tests/static/cppcheck.supp

# tests: build rules (included from the top Makefile.am)
# Integration tests: each starts its own throwaway Slurm cluster through
# tests/lib/cluster.sh (root only; skipped otherwise). The profiling test
# runs the real profiler (needs tools/ and profiler/); demo.sh runs the
# README's main job, quick mode, on the built tree (minutes).
SYNERGY_INTEGRATION_TESTS = tests/integration/cluster-basic.sh \
	tests/integration/synergy-sized.sh tests/integration/synergy-fallback.sh \
	tests/integration/synergy-cleanup.sh tests/integration/synergy-hostile.sh \
	tests/integration/synergy-tuner.sh tests/integration/synergy-profiling.sh \
	tests/integration/synergy-lending.sh tests/integration/demo.sh
EXTRA_DIST += tests/lib/cluster.sh
INTEGRATION_TESTS += $(SYNERGY_INTEGRATION_TESTS)
dist_noinst_SCRIPTS += $(SYNERGY_INTEGRATION_TESTS) synergy-demo examples/demo-job.sh tools/demo-report

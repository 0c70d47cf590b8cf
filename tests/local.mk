# tests: build rules (included from the top Makefile.am)
# Integration tests: each starts its own throwaway Slurm cluster through
# tests/lib/cluster.sh (root only; skipped otherwise).
EXTRA_DIST += tests/lib/cluster.sh
INTEGRATION_TESTS += tests/integration/cluster-basic.sh
dist_noinst_SCRIPTS += tests/integration/cluster-basic.sh
INTEGRATION_TESTS += tests/integration/synergy-sized.sh tests/integration/synergy-fallback.sh \
	tests/integration/synergy-cleanup.sh tests/integration/synergy-hostile.sh \
	tests/integration/synergy-tuner.sh
dist_noinst_SCRIPTS += tests/integration/synergy-sized.sh tests/integration/synergy-fallback.sh \
	tests/integration/synergy-cleanup.sh tests/integration/synergy-hostile.sh \
	tests/integration/synergy-tuner.sh
# The profiling path with the real profiler (needs tools/ and profiler/).
INTEGRATION_TESTS += tests/integration/synergy-profiling.sh
dist_noinst_SCRIPTS += tests/integration/synergy-profiling.sh
INTEGRATION_TESTS += tests/integration/synergy-lending.sh
# The README's main job, quick mode, on the built tree (minutes).
INTEGRATION_TESTS += tests/integration/demo.sh
dist_noinst_SCRIPTS += tests/integration/demo.sh synergy-demo examples/demo-job.sh tools/demo-report

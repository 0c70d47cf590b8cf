# SPDX-License-Identifier: GPL-2.0-or-later
# doc: build rules (included from the top Makefile.am)

# synergy-profile (profiler helper)
dist_man_MANS += doc/synergy-profile.1

# Slurm plugins and their configuration
dist_man_MANS += doc/spank-synergy.8 doc/job_submit_synergy.8 doc/synergy.conf.5 \
	doc/synergyd.8

# synergy-sim (policy helper)
dist_man_MANS += doc/synergy-sim.1

# Threat model and review (issue 24)
EXTRA_DIST += doc/SECURITY.md

# What differs in Slurm 24.11 and 26.05 for the plugins (issue 26)
EXTRA_DIST += doc/slurm-versions.md

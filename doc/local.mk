# SPDX-License-Identifier: GPL-2.0-or-later
# doc: build rules (included from the top Makefile.am)

# synergy-profile (profiler helper)
dist_man_MANS += doc/synergy-profile.1

# Slurm plugins and their configuration
dist_man_MANS += doc/spank-synergy.8 doc/job_submit_synergy.8 doc/synergy.conf.5 \
	doc/synergyd.8

# synergy-sim (policy helper)
dist_man_MANS += doc/synergy-sim.1

# SPDX-License-Identifier: GPL-2.0-or-later
# plugin: build rules (included from the top Makefile.am).
#
# plugin/ holds Synergy's code for Slurm, one folder per host and role
# (HACKING.md has the map):
#   shared/  what the controller and the nodes both use: the grant (job
#            records, sealed with munge), claims, slurm.conf and Slurm's
#            text fields, the plugins' configuration glue (libsynshared)
#   ctl/     the controller side: sizing a job from its profile, node
#            shapes (libsynctl)
#   node/    the node agent: cgroups, lending and harvest, cache grants and
#            taking memory back, in-place profiling, peers, hwloc cores
#            (libsynnode), and synergy-lend
#   slurm/   the Slurm adapters, the only files with Slurm's headers: the
#            SPANK plugin, the job_submit plugin, synergyd
# The products keep their place: plugin/spank_synergy.so,
# plugin/job_submit_synergy.so, plugin/synergyd, plugin/synergy-lend.
include $(srcdir)/plugin/shared/local.mk
include $(srcdir)/plugin/ctl/local.mk
include $(srcdir)/plugin/node/local.mk
include $(srcdir)/plugin/slurm/local.mk

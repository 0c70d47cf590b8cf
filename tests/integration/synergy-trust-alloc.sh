#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-trust-alloc.sh: synergy-trust.sh with PrologFlags=Alloc, where
# slurmd runs the prolog when Slurm allocates the job and hands it the
# job's SPANK environment from slurmctld's record (issue 24).
TRUST_PROLOG_ALLOC=1
. "${top_srcdir:?}/tests/integration/synergy-trust.sh"

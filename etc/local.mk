# SPDX-License-Identifier: GPL-2.0-or-later
# etc: example configuration and the synergyd unit (included from the top
# Makefile.am).
#
# The examples (synergy.conf, plugstack.conf and its snippet, the lines
# slurm.conf needs) install under $(docdir)/examples: the admin merges them
# into Slurm's configuration. The snippet names the plugin where this build
# installs it, and the unit the synergyd this build installs, so both are
# made from templates at build time (they hold make's $(sbindir) and
# $(slurmplugindir), which configure leaves unexpanded).
synergyexamplesdir = $(docdir)/examples
dist_synergyexamples_DATA = etc/synergy.conf etc/plugstack.conf etc/slurm.conf.synergy
synergyplugstackdir = $(docdir)/examples/plugstack.conf.d
nodist_synergyplugstack_DATA = etc/plugstack.conf.d/synergy.conf
if HAVE_SYSTEMD_UNITDIR
nodist_systemdsystemunit_DATA = etc/synergyd.service
endif
EXTRA_DIST += etc/synergyd.service.in etc/plugstack.conf.d/synergy.conf.in
CLEANFILES += etc/synergyd.service etc/plugstack.conf.d/synergy.conf
# Built by `make all` even without a unit directory (the tests read them).
noinst_DATA = etc/synergyd.service etc/plugstack.conf.d/synergy.conf

etc_subst = $(SED) -e 's|@sbindir[@]|$(sbindir)|g' \
	-e 's|@slurmplugindir[@]|$(slurmplugindir)|g'
etc/synergyd.service: $(srcdir)/etc/synergyd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) etc && $(etc_subst) $(srcdir)/etc/synergyd.service.in >$@.tmp && mv $@.tmp $@
etc/plugstack.conf.d/synergy.conf: $(srcdir)/etc/plugstack.conf.d/synergy.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) etc/plugstack.conf.d && \
	$(etc_subst) $(srcdir)/etc/plugstack.conf.d/synergy.conf.in >$@.tmp && mv $@.tmp $@

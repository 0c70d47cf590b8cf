/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergy_conf.h: transitional. synergy.conf's reader moved to
 * common/conf.h (issue 25); this name stays only for the plugin files that
 * still include it. They switch and this goes.
 */
#ifndef SYNERGY_CONF_H
#define SYNERGY_CONF_H

#include "common/conf.h"

#endif

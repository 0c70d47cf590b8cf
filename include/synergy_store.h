/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * synergy_store.h: transitional. The profile store moved to common/store.h
 * (issue 25); this name stays only for the plugin files that still include
 * it, with the old name of its error type. They switch and this goes.
 */
#ifndef SYNERGY_STORE_H
#define SYNERGY_STORE_H

#include "common/store.h"

typedef syn_error_t syn_store_error_t;

#endif

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * lastgood.h - the last good settings, kept across restarts (lastgood.c).
 */
#pragma once

#include <stdbool.h>

#include "daemon/base/settings.h"

struct server;

/*
 * The last good settings (lastgood.c).  lastgood_memfd: s as a sealed memfd (close-on-exec as
 * asked), or a negative errno.  lastgood_keep: makes file the settings in force
 * (srv->file_settings) and, when srv->lastgood_stored, replaces the copy in the descriptor
 * store (the entry FDSTORE_SETTINGS_NAME); 0 or a negative errno (the caller logs it; the
 * settings apply anyway).
 */
int lastgood_memfd(const struct settings *s, bool cloexec);
int lastgood_keep(struct server *srv, const struct settings *file);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * escape.h - client-chosen bytes as printable text, for socknotifyctl's tables and its monitor.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Bytes as printable text, like systemd's cescape(): C0 controls and DEL as \a \b \t \n \v \f
 * \r \e or \xNN, the backslash as \\ (and the characters of also, each after a backslash), C1
 * controls (U+0080 to U+009F) and the invisible format characters of sn_unicode_invisible() as
 * the \xNN of their bytes, and every byte that is not part of valid UTF-8 as \xNN; other valid
 * UTF-8 is kept.  The result thus holds no control character and names the bytes exactly.
 * malloc'd; NULL when out of memory. */
char *ctl_escape(const uint8_t *b, size_t n, const char *also);

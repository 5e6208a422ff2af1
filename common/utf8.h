/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * utf8.h - one UTF-8 decoder for the places that show text clients chose: the daemon's log
 * (common/log.c) and socknotifyctl's tables.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length of the valid UTF-8 sequence at b (n bytes left), its code point in *ret_cp; 0 when
 * b does not start one (overlong forms, surrogates and values above U+10FFFF are invalid). */
static inline size_t sn_utf8_char(const uint8_t *b, size_t n, uint32_t *ret_cp)
{
        uint32_t cp;
        size_t len;

        if (b[0] < 0x80) {
                *ret_cp = b[0];
                return 1;
        }
        if (b[0] >= 0xc2 && b[0] <= 0xdf) {
                len = 2;
                cp = b[0] & 0x1f;
        } else if (b[0] >= 0xe0 && b[0] <= 0xef) {
                len = 3;
                cp = b[0] & 0x0f;
        } else if (b[0] >= 0xf0 && b[0] <= 0xf4) {
                len = 4;
                cp = b[0] & 0x07;
        } else {
                return 0;
        }
        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((b[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (b[i] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return len;
}

/* Invisible characters that change how the rest of a line is shown: the bidirectional
 * controls (a port name with U+202E RIGHT-TO-LEFT OVERRIDE would reverse the columns after it in
 * root's terminal), line and paragraph separators, zero-width characters and the BOM. */
static inline bool sn_unicode_invisible(uint32_t cp)
{
        return cp == 0x061c || cp == 0x180e || (cp >= 0x200b && cp <= 0x200f) ||
               (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) ||
               cp == 0xfeff;
}

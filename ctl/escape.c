/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * escape.c - client-chosen bytes as printable text (escape.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "ctl/escape.h"

char *ctl_escape(const uint8_t *b, size_t n, const char *also)
{
        static const char named[] = { ['\a'] = 'a', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n',
                                      ['\v'] = 'v', ['\f'] = 'f', ['\r'] = 'r', [0x1b] = 'e' };
        /* \xNN is the longest form of one byte: 4 characters. */
        char *out = malloc(4 * n + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t len = sn_utf8_char(b + i, n - i, &cp);

                if (len == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
                    sn_unicode_invisible(cp)) {
                        len = len ? len : 1;
                        for (size_t k = 0; k < len; k++) {
                                if (b[i + k] < sizeof(named) && named[b[i + k]])
                                        o += sprintf(o, "\\%c", named[b[i + k]]);
                                else
                                        o += sprintf(o, "\\x%02x", b[i + k]);
                        }
                } else if (cp == '\\' || (also && cp < 0x80 && strchr(also, (int)cp))) {
                        *o++ = '\\';
                        *o++ = (char)cp;
                } else {
                        memcpy(o, b + i, len);
                        o += len;
                }
                i += len;
        }
        *o = 0;
        return out;
}

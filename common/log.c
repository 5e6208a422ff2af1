/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * log.c - stderr logging with journal priority prefixes.
 *
 * A line may carry text a client chose (a process's command name, a port's name, a socket's
 * path): every control character (C0, DEL, C1) and every byte that is not part of valid UTF-8
 * is written as \xNN, so that no client can start a forged line (a newline and "<0>" in the
 * journal's stream) or send escape sequences to an administrator's terminal.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"

static int log_max = LOG_INFO;
static bool log_journal;

void sn_log_init(int max_level)
{
        const char *js = getenv("JOURNAL_STREAM");
        struct stat st;
        unsigned long long dev, ino;

        log_max = max_level;
        log_journal = false;
        if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
            (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
                log_journal = true;
}

void sn_log_set_level(int max_level)
{
        log_max = max_level;
}

bool sn_log_enabled(int level)
{
        return level <= log_max;
}

/* The length of the valid UTF-8 sequence at p (at most n bytes), 0 if there is none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
        size_t len;
        unsigned cp;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                len = 2, cp = p[0] & 0x1f;
        else if (p[0] >= 0xe0 && p[0] <= 0xef)
                len = 3, cp = p[0] & 0x0f;
        else if (p[0] >= 0xf0 && p[0] <= 0xf4)
                len = 4, cp = p[0] & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (p[i] & 0x3f);
        }
        /* Overlong forms, surrogates and what lies past U+10FFFF are not UTF-8. */
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

void sn_log_escape(const char *in, char *out, size_t outsz)
{
        const unsigned char *p = (const unsigned char *)in;
        size_t n = strlen(in), o = 0;

        if (!outsz)
                return;
        for (size_t i = 0; i < n;) {
                size_t len = utf8_len(p + i, n - i);
                bool control = len == 1 ? p[i] < 0x20 || p[i] == 0x7f
                                        : len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0;
                size_t need = len && !control ? len : 4 * (len ? len : 1);

                if (o + need >= outsz)
                        break;
                if (len && !control) {
                        memcpy(out + o, p + i, len);
                        o += len;
                } else {
                        for (size_t k = 0; k < (len ? len : 1); k++)
                                o += (size_t)snprintf(out + o, outsz - o, "\\x%02x",
                                                      p[i + k]);
                }
                i += len ? len : 1;
        }
        out[o] = 0;
}

void sn_log(int level, const char *fmt, ...)
{
        static const char *const words[] = { "emerg", "alert", "crit", "error",
                                             "warning", "notice", "info", "debug" };
        char line[2048], shown[4 * sizeof(line)];
        va_list ap;

        if (level > log_max)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        sn_log_escape(line, shown, sizeof(shown));
        if (log_journal)
                fprintf(stderr, "<%d>%s\n", level, shown);
        else
                fprintf(stderr, "socknotifyd: %s: %s\n", words[level & 7], shown);
}

bool sn_ratelimit_ok(struct sn_ratelimit *rl, unsigned long long *ret_suppressed)
{
        struct timespec ts;
        long long now;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        *ret_suppressed = 0;
        if (now - rl->window_start_ms >= (long long)rl->interval_ms) {
                rl->window_start_ms = now;
                rl->in_window = 0;
        }
        if (rl->in_window >= rl->burst) {
                rl->suppressed++;
                return false;
        }
        rl->in_window++;
        *ret_suppressed = rl->suppressed;
        rl->suppressed = 0;
        return true;
}

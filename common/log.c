/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * log.c - stderr logging with journal priority prefixes.
 *
 * A line may carry text a client chose (a process's command name, a port's name, a socket's
 * path): every control character (C0, DEL, C1), every invisible format character (the
 * bidirectional controls among them) and every byte that is not part of valid UTF-8 is written
 * as \xNN, so that no client can start a forged line (a newline and "<0>" in the
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
#include "common/utf8.h"

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

void sn_log_escape(const char *in, char *out, size_t outsz)
{
        const unsigned char *p = (const unsigned char *)in;
        size_t n = strlen(in), o = 0;

        if (!outsz)
                return;
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t len = sn_utf8_char(p + i, n - i, &cp);
                bool control = len && (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
                                       sn_unicode_invisible(cp));
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

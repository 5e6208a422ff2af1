/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * log.c - stderr logging with journal priority prefixes.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

void sn_log(int level, const char *fmt, ...)
{
        static const char *const words[] = { "emerg", "alert", "crit", "error",
                                             "warning", "notice", "info", "debug" };
        char line[2048];
        va_list ap;

        if (level > log_max)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (log_journal)
                fprintf(stderr, "<%d>%s\n", level, line);
        else
                fprintf(stderr, "socknotifyd: %s: %s\n", words[level & 7], line);
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

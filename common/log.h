/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * log.h - the daemon's only way to print.
 *
 * Lines go to stderr.  When stderr is connected to the journal (JOURNAL_STREAM names it), each
 * line starts with a syslog "<N>" priority prefix so journald records the level; otherwise plain
 * text with a level word.  The client library never uses this module.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

/* max_level: LOG_INFO by default, LOG_DEBUG with -v. */
void sn_log_init(int max_level);
/* Changes the level only (reload). */
void sn_log_set_level(int max_level);
bool sn_log_enabled(int level);
void sn_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies in to out (outsz bytes, always terminated, cut between characters) with every control
 * character (C0, DEL, C1) and every byte outside valid UTF-8 written as \xNN: what sn_log()
 * does to each line. */
void sn_log_escape(const char *in, char *out, size_t outsz);

/*
 * A rate limit for log lines that clients can provoke: at most burst lines per interval_ms;
 * the lines dropped are counted and reported with the next line let through.
 */
struct sn_ratelimit {
        unsigned interval_ms, burst;
        long long window_start_ms;
        unsigned in_window;
        unsigned long long suppressed;
};
#define SN_RATELIMIT_INIT(ms, n) { .interval_ms = (ms), .burst = (n) }
/* True when a line may be logged now; *ret_suppressed gets how many were dropped before it. */
bool sn_ratelimit_ok(struct sn_ratelimit *rl, unsigned long long *ret_suppressed);

#define log_error(...) sn_log(LOG_ERR, __VA_ARGS__)
#define log_warning(...) sn_log(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) sn_log(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) sn_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
        do {                                                                                       \
                if (sn_log_enabled(LOG_DEBUG))                                                     \
                        sn_log(LOG_DEBUG, __VA_ARGS__);                                            \
        } while (0)

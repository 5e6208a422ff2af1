/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-log.c - the daemon's log lines carry text that clients chose (command names, port names,
 * socket paths): no control character and no byte outside UTF-8 may reach the journal's stream
 * or a terminal as it is.  A newline followed by "<0>" would otherwise forge a line of
 * emergency priority in the journal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "common/log.h"
#include "tests/helpers/daemon.h"

static void escaped(const char *in, const char *want)
{
        char out[256];

        sn_log_escape(in, out, sizeof(out));
        ck_assert_str_eq(out, want);
}

START_TEST(test_escape)
{
        escaped("plain text, café, 日本", "plain text, café, 日本");
        escaped("a\nb", "a\\x0ab");
        escaped("\x1b]0;pwn\x07", "\\x1b]0;pwn\\x07");
        escaped("del\x7f", "del\\x7f");
        escaped("csi\xc2\x9b" "31m", "csi\\xc2\\x9b31m");       /* U+009B, a C1 control */
        escaped("nbsp\xc2\xa0", "nbsp\xc2\xa0");                 /* U+00A0 is printable */
        escaped("rlo\xe2\x80\xae!", "rlo\\xe2\\x80\\xae!");        /* U+202E reverses a line */
        escaped("bad\xff\x80", "bad\\xff\\x80");
        escaped("overlong\xc0\xaf", "overlong\\xc0\\xaf");
        escaped("surrogate\xed\xa0\x80", "surrogate\\xed\\xa0\\x80");
        escaped("cut\xe6\x97", "cut\\xe6\\x97");
        /* Cut between characters, never inside an escape. */
        {
                char out[8];

                sn_log_escape("ab\ncd", out, sizeof(out));
                ck_assert_str_eq(out, "ab\\x0ac");
                sn_log_escape("abcde\n", out, sizeof(out));
                ck_assert_str_eq(out, "abcde");
        }
}
END_TEST

/* What sn_log() writes to stderr, one line, as the journal reads it. */
START_TEST(test_line_is_one_line)
{
        char buf[512];
        int p[2];
        ssize_t n;

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(dup2(p[1], 2), 2);
        setenv("JOURNAL_STREAM", "0:0", 1); /* not the journal: the plain form */
        sn_log_init(LOG_INFO);
        log_notice("client %s connected", "x\n<0>socknotifyd: forged emergency\x1b[2J");
        fflush(stderr);
        close(2);
        close(p[1]);
        n = read(p[0], buf, sizeof(buf) - 1);
        ck_assert_int_gt(n, 0);
        buf[n] = 0;
        ck_assert_str_eq(buf, "socknotifyd: notice: client x\\x0a<0>socknotifyd: forged "
                              "emergency\\x1b[2J connected\n");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("log");
        TCase *tc = tcase_create("log");

        tcase_add_test(tc, test_escape);
        tcase_add_test(tc, test_line_is_one_line);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

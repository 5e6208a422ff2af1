/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-examples.c - the reference's three scenarios (examples/) against a real daemon.  Each
 * example checks its own outcome (all data received, registrations removed before the port
 * closed, contexts freed, threads exited) and exits 0 only then; this test also checks that the
 * daemon's descriptor count is back to its baseline and that the daemon stops cleanly.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "tests/helpers/daemon.h"

static struct test_daemon D;
static int baseline;

static void setup(void)
{
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}

static void teardown(void)
{
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

static void run_example(const char *name)
{
        char bin[512], timeout[16];
        pid_t pid;
        int st;

        snprintf(bin, sizeof(bin), "%s/examples/%s", getenv("SN_BUILDDIR"), name);
        snprintf(timeout, sizeof(timeout), "%d", test_timeout_ms(10000));
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                setenv("SOCKNOTIFY_SOCKET", D.path, 1);
                /* The reference's one-second bound of a server's wait is not a verdict on a busy
                 * machine: a client thread may not run for that long. */
                setenv("SOCKNOTIFY_EXAMPLE_TIMEOUT_MS", timeout, 1);
                /* Quiet: only the example's verdict line reaches the log. */
                if (!freopen("/dev/null", "w", stdout))
                        _exit(126);
                execl(bin, bin, (char *)NULL);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (status %d)", name, st);
}

START_TEST(test_poll_replacement)
{
        run_example("poll-replacement");
}
END_TEST

START_TEST(test_libevent_poll)
{
        run_example("libevent-poll");
}
END_TEST

START_TEST(test_udp_edge)
{
        run_example("udp-edge");
}
END_TEST

START_TEST(test_mt_server)
{
        /* Several runs: thread interleavings differ each time. */
        for (int i = 0; i < 5; i++)
                run_example("mt-server");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("examples");
        TCase *tc = tcase_create("reference-scenarios");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_poll_replacement);
        tcase_add_test(tc, test_libevent_poll);
        tcase_add_test(tc, test_udp_edge);
        tcase_add_test(tc, test_mt_server);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

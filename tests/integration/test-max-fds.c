/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-max-fds.c - socknotifyd --max-fds=N, the test hook for a client's split paths: the
 * daemon announces N in HELLO_REPLY and refuses a message with more descriptors
 * (ERROR/ETOOMANYREFS, the connection served on, nothing it carried kept), and the library
 * sends a PROCESS of more new registrations than N as several parts, applied whole, and takes
 * a port's sockets over in PORT_TAKE batches of at most N.  With N = 1 and 2 every call of
 * five sockets needs parts: it succeeds only if the library split it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

#define NSOCK 5

static struct test_daemon D;

static void start(unsigned max_fds)
{
        char arg[32];
        const char *args[] = { arg, NULL };

        snprintf(arg, sizeof(arg), "--max-fds=%u", max_fds);
        test_daemon_start(&D, args);
}

static void teardown(void)
{
        test_daemon_stop_if_running(&D);
}

/* Five new registrations in one sn_port_process() call, then their five entries; then the
 * five taken over by a second connection from the lingering named port. */
static void split_calls(unsigned max_fds)
{
        sn_registration_t regs[NSOCK];
        sn_entry_t e[NSOCK];
        int pairs[NSOCK][2], baseline, got = 0;
        unsigned seen = 0;
        sn_limits_t l;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pb;
        sn_taken_socket_t taken[NSOCK];
        sn_take_info_t tr;
        char name[32];

        start(max_fds);
        baseline = test_daemon_fds(&D);
        snprintf(name, sizeof(name), "split-%u", max_fds);
        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_conn_limits(a, &l), 0);
        ck_assert_uint_eq(l.max_fds, max_fds);
        ck_assert_int_eq(sn_port_create_named(a, name, 0, &pa), 0);
        ck_assert_int_eq(sn_port_set_linger(pa, 30000), 0);
        for (int i = 0; i < NSOCK; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]), 0);
                ck_assert_int_eq(write(pairs[i][1], "x", 1), 1);
                regs[i] = (sn_registration_t){ .fd = pairs[i][0], .filter = SN_REGISTER_EVENT_IN,
                                               .op = SN_OP_ENABLE,
                                               .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT,
                                               .key = 100 + (uint64_t)i };
        }
        /* More descriptors than one message may carry: the call goes out in parts. */
        ck_assert_int_eq(sn_port_process(pa, regs, NSOCK, NULL, 0, 0), 0);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_int_eq(regs[i].result, 0);
        while (got < NSOCK) {
                int n = sn_port_dequeue(pa, e, NSOCK, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++) {
                        ck_assert_uint_ge(e[i].key, 100);
                        ck_assert_uint_lt(e[i].key, 100 + NSOCK);
                        ck_assert(!(seen & (1u << (e[i].key - 100))));
                        seen |= 1u << (e[i].key - 100);
                }
                got += n;
        }
        /* The port lingers with the five, without an owner: taken in batches of max_fds. */
        ck_assert_int_eq(sn_port_close(pa), 0);
        sn_conn_close(a);
        ck_assert_int_eq(sn_conn_open(D.path, &b), 0);
        ck_assert_int_eq(sn_port_open(b, name, &pb), 0);
        ck_assert_int_eq(sn_port_take_sockets(pb, taken, NSOCK, &tr), NSOCK);
        ck_assert_uint_eq(tr.remaining, 0);
        seen = 0;
        for (int i = 0; i < NSOCK; i++) {
                ck_assert_int_ge(taken[i].fd, 0);
                seen |= 1u << (taken[i].key - 100);
                ck_assert_int_eq(sn_socket_close(b, taken[i].fd), 0);
        }
        ck_assert_uint_eq(seen, (1u << NSOCK) - 1);
        /* Without a linger time the port closes with this last handle. */
        ck_assert_int_eq(sn_port_set_linger(pb, 0), 0);
        ck_assert_int_eq(sn_port_close(pb), 0);
        sn_conn_close(b);
        for (int i = 0; i < NSOCK; i++) {
                close(pairs[i][0]);
                close(pairs[i][1]);
        }
        test_daemon_finish(&D, baseline);
}

START_TEST(test_split_max_fds_1)
{
        split_calls(1);
}
END_TEST

START_TEST(test_split_max_fds_2)
{
        split_calls(2);
}
END_TEST

/* A message with one descriptor more than --max-fds: ERROR/ETOOMANYREFS with the request's id,
 * the descriptors closed by the daemon, the connection served on; max-fds descriptors pass. */
START_TEST(test_too_many_fds_refused)
{
        int socks[3][2], fds[3], baseline, fd;
        uint32_t port;

        start(2);
        baseline = test_daemon_fds(&D);
        fd = raw_hello(D.path);
        port = raw_port_create(fd, 2, NULL);
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks[i]), 0);
                fds[i] = socks[i][0];
        }
        raw_send_enables(fd, 3, port, fds, 3);
        expect_reply(fd, SN_MSG_ERROR, 3, ETOOMANYREFS);
        /* Nothing of the refused message is held: the connection, its port's epoll. */
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + 2, 2000), baseline + 2);
        status_works(fd, 4);
        raw_send_enables(fd, 5, port, fds, 2);
        expect_reply(fd, SN_MSG_PROCESS_REPLY, 5, 0);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + 4, 2000), baseline + 4);
        close(fd);
        for (int i = 0; i < 3; i++) {
                close(socks[i][0]);
                close(socks[i][1]);
        }
        test_daemon_finish(&D, baseline);
}
END_TEST

/* Outside 1..253 the option is refused at start (exit 2, as any invalid option). */
START_TEST(test_max_fds_range)
{
        char cmd[256], out[512];
        const char *b = getenv("SN_BUILDDIR");
        FILE *f;

        for (int i = 0; i < 2; i++) {
                snprintf(cmd, sizeof(cmd), "%s/daemon/socknotifyd --max-fds=%s 2>&1; echo rc=$?",
                         b ? b : SN_BUILDDIR, i ? "254" : "0");
                f = popen(cmd, "r");
                ck_assert_ptr_nonnull(f);
                out[fread(out, 1, sizeof(out) - 1, f)] = 0;
                pclose(f);
                ck_assert_msg(strstr(out, "rc=2") && strstr(out, "max-fds"), "%s", out);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("max-fds");
        TCase *tc = tcase_create("max-fds");

        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_split_max_fds_1);
        tcase_add_test(tc, test_split_max_fds_2);
        tcase_add_test(tc, test_too_many_fds_refused);
        tcase_add_test(tc, test_max_fds_range);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

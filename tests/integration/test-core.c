/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-core.c - the native API against a real socknotifyd, over real TCP, UDP and Unix sockets,
 * with real threads and processes.  Each test starts its own daemon on a private socket and
 * ends by checking that the daemon's descriptor count is back to its baseline and that it
 * exits 0 on SIGTERM (under the sanitizers, that includes "no leak").
 *
 * Row and rule numbers refer to docs/semantics.md.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;
static sn_conn_t *C;
static sn_port_t *P;
static int baseline;

static void start_with(const char *const *args)
{
        test_daemon_start(&D, args);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &P), 0);
}

static void setup(void)
{
        start_with(NULL);
}

static void teardown(void)
{
        if (P)
                sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 2000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

/* Applies one registration and returns its per-entry result; the call itself must succeed. */
static int reg(sn_port_t *p, int fd, uint64_t key, uint16_t filter, uint8_t op, uint8_t trig)
{
        sn_registration_t r = { .fd = fd, .key = key, .filter = filter, .op = op, .trigger = trig };

        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        return r.result;
}

static int deq(sn_port_t *p, sn_entry_t *e, uint32_t max, uint32_t timeout)
{
        return sn_port_dequeue(p, e, max, timeout);
}

/* Expects exactly one socket entry within 1 s, with key and events; returns its events. */
static uint32_t expect_one(sn_port_t *p, uint64_t key)
{
        sn_entry_t e[4];
        int n = deq(p, e, 4, 1000);

        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].kind, SN_ENTRY_SOCKET);
        ck_assert_uint_eq(e[0].key, key);
        return e[0].events;
}

static void expect_none(sn_port_t *p, uint32_t timeout)
{
        sn_entry_t e[4];
        int n = deq(p, e, 4, timeout);

        ck_assert_msg(n == -ETIMEDOUT, "expected nothing, got %d (first events %#x)", n,
                      n > 0 ? e[0].events : 0);
}

/* Removes a registration and drains until its REMOVE packet. */
static void remove_and_wait(sn_port_t *p, int fd, uint64_t key)
{
        sn_entry_t e;

        ck_assert_int_eq(reg(p, fd, 0, 0, SN_OP_REMOVE, 0), 0);
        for (int i = 0; i < 100; i++) {
                ck_assert_int_eq(deq(p, &e, 1, 1000), 1);
                if (e.key == key && e.events & SN_EVENT_REMOVE)
                        return;
        }
        ck_abort_msg("no REMOVE packet");
}

/* ---- connection and call shape ----------------------------------------------------------- */

START_TEST(test_connect_errors)
{
        sn_conn_t *c = NULL;
        sn_limits_t l;

        ck_assert_int_eq(sn_conn_open("/nonexistent/socknotify.sock", &c), -ENOENT);
        ck_assert_ptr_null(c);
        ck_assert_int_eq(sn_conn_limits(C, &l), 0);
        ck_assert_uint_eq(l.max_fds, 253);
        ck_assert_uint_gt(l.max_message, 4096);
        /* $SOCKNOTIFY_SOCKET is honoured when no path is given. */
        setenv("SOCKNOTIFY_SOCKET", D.path, 1);
        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        sn_conn_close(c);
        ck_assert_str_ne(sn_strerror(-EBADFD), "unknown error");
}
END_TEST

START_TEST(test_limits_announced)
{
        sn_limits_t l;

        ck_assert_int_eq(sn_conn_limits(C, &l), 0);
        ck_assert_uint_eq(l.max_posted, 3);
        ck_assert_uint_eq(l.max_ports, 2);
        /* L4: the posted-packet bound. */
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(sn_port_post(P, i, 0, 0), 0);
        ck_assert_int_eq(sn_port_post(P, 9, 0, 0), -EDQUOT);
        sn_entry_t e;
        ck_assert_int_eq(deq(P, &e, 1, 0), 1);
        ck_assert_int_eq(sn_port_post(P, 9, 0, 0), 0);
        /* Ports per connection. */
        sn_port_t *p2, *p3;
        ck_assert_int_eq(sn_port_create(C, 0, &p2), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &p3), -EDQUOT);
        /* Sockets held for this user, over all its connections and ports: 3. */
        ck_assert_uint_eq(l.max_sockets, 3);
        int sp[4][2];
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
        ck_assert_int_eq(reg(P, sp[0][0], 1, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(reg(p2, sp[1][0], 2, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        sn_conn_t *c2;
        sn_port_t *p4;
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_create(c2, 0, &p4), 0);
        ck_assert_int_eq(reg(p4, sp[2][0], 3, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(reg(P, sp[3][0], 4, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL),
                         -EDQUOT);
        /* A connection that goes gives its share back. */
        sn_port_close(p4);
        sn_conn_close(c2);
        ck_assert_int_eq(reg(P, sp[3][0], 4, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        sn_port_close(p2);
        ck_assert_int_eq(sn_socket_close(C, sp[0][0]), 0);
        ck_assert_int_eq(sn_socket_close(C, sp[3][0]), 0);
        for (int i = 0; i < 4; i++) {
                if (i == 1 || i == 2)
                        close(sp[i][0]);
                close(sp[i][1]);
        }
}
END_TEST

START_TEST(test_registration_only_call)
{
        int cl, sv;
        sn_entry_t e;

        tcp_pair(&cl, &sv);
        /* Row 1: registrations only, nothing dequeued, success even with data ready. */
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        usleep(10000);
        ck_assert_int_eq(reg(P, sv, 7, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* Row 2: a timeout without dequeue is a call failure; row 3 shapes too. */
        sn_registration_t r = { .fd = sv, .op = SN_OP_REMOVE };
        ck_assert_int_eq(sn_port_process(P, &r, 1, NULL, 0, 10), -EINVAL);
        ck_assert_int_eq(sn_port_process(P, NULL, 1, NULL, 0, 0), -EINVAL);
        ck_assert_int_eq(sn_port_process(P, NULL, 0, NULL, 1, 0), -EINVAL);
        /* ...and the failed REMOVE changed nothing: the registration still reports. */
        ck_assert_uint_eq(expect_one(P, 7), SN_EVENT_IN);
        /* Row 11: registrations first, then the dequeue, in one call. */
        r = (sn_registration_t){ .fd = sv, .op = SN_OP_REMOVE };
        for (int i = 0; i < 10; i++) {
                int n = sn_port_process(P, &r, r.op ? 1 : 0, &e, 1, 1000);
                ck_assert_int_eq(n, 1);
                if (r.op)
                        ck_assert_int_eq(r.result, 0);
                r.op = SN_OP_NONE;
                if (e.events & SN_EVENT_REMOVE)
                        break;
        }
        ck_assert_uint_eq(e.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
        close(cl);
        close(sv);
}
END_TEST

START_TEST(test_per_entry_results)
{
        int cl, sv, file = open("/dev/null", O_RDONLY | O_CLOEXEC);
        sn_registration_t r[6] = {
                { .fd = file, .op = SN_OP_ENABLE, .filter = 1, .trigger = SN_TRIGGER_LEVEL },
                { .fd = -1, .op = SN_OP_ENABLE, .filter = 1, .trigger = SN_TRIGGER_LEVEL },
                { .fd = 0, .op = SN_OP_ENABLE, .filter = 1, .trigger = SN_TRIGGER_LEVEL },
                { .fd = 0, .op = SN_OP_ENABLE | SN_OP_REMOVE, .filter = 1, .trigger = 4 },
                { .fd = 0, .op = SN_OP_ENABLE, .filter = 1, .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_EDGE },
                { .fd = 0, .op = SN_OP_DISABLE },
        };

        tcp_pair(&cl, &sv);
        r[2].fd = r[3].fd = r[4].fd = r[5].fd = sv;
        /* Rows 8, 9, 13, 34, rule 8: entries fail independently; the good one applies. */
        ck_assert_int_eq(sn_port_process(P, r, 6, NULL, 0, 0), 0);
        ck_assert_int_eq(r[0].result, -ENOTSOCK);
        ck_assert_int_eq(r[1].result, -ENOTSOCK);
        ck_assert_int_eq(r[2].result, 0);
        ck_assert_int_eq(r[3].result, -EINVAL);
        ck_assert_int_eq(r[4].result, -EINVAL);
        ck_assert_int_eq(r[5].result, 0); /* DISABLE of the registration made by r[2] */
        /* Rows 35, 46: ONESHOT|PERSISTENT and filter bits outside 0x07. */
        ck_assert_int_eq(reg(P, sv, 1, 1, SN_OP_ENABLE, SN_TRIGGER_LEVEL | 3), -EINVAL);
        ck_assert_int_eq(reg(P, sv, 1, 0x08, SN_OP_ENABLE, SN_TRIGGER_LEVEL), -EINVAL);
        /* Row 14: OP_NONE changes nothing and succeeds. */
        ck_assert_int_eq(reg(P, sv, 1, 0, SN_OP_NONE, 0), 0);
        remove_and_wait(P, sv, 0);
        /* Row 30: DISABLE/REMOVE of an unregistered socket. */
        ck_assert_int_eq(reg(P, sv, 0, 0, SN_OP_REMOVE, 0), -ENOENT);
        ck_assert_int_eq(reg(P, sv, 0, 0, SN_OP_DISABLE, 0), -ENOENT);
        close(file);
        close(cl);
        close(sv);
}
END_TEST

/* ---- triggers ----------------------------------------------------------------------------- */

START_TEST(test_level_persistent)
{
        int cl, sv;
        char buf[8];

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(reg(P, sv, 11, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        expect_none(P, 0);
        ck_assert_int_eq(send(cl, "ab", 2, 0), 2);
        /* Row 37: repeated while the condition holds, none once it stops. */
        for (int i = 0; i < 3; i++)
                ck_assert_uint_eq(expect_one(P, 11), SN_EVENT_IN);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 2);
        expect_none(P, 50);
        remove_and_wait(P, sv, 11);
        close(cl);
        close(sv);
}
END_TEST

START_TEST(test_level_oneshot)
{
        int cl, sv;
        char buf[8];

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(reg(P, sv, 12, SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT, SN_OP_ENABLE,
                             SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT),
                         0);
        /* Row 38: one packet (OUT), then the whole registration is disarmed: IN is not reported. */
        ck_assert_uint_eq(expect_one(P, 12), SN_EVENT_OUT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        expect_none(P, 100);
        /* Rows 27, 29: re-enable re-arms; both conditions hold, one packet carries both. */
        ck_assert_int_eq(reg(P, sv, 12, SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT, SN_OP_ENABLE,
                             SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT),
                         0);
        ck_assert_uint_eq(expect_one(P, 12), SN_EVENT_IN | SN_EVENT_OUT);
        expect_none(P, 0);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 1);
        remove_and_wait(P, sv, 12);
        close(cl);
        close(sv);
}
END_TEST

START_TEST(test_edge)
{
        int a, b;
        char buf[64];

        udp_pair(&a, &b);
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        usleep(10000);
        /* Row 39 / rule 15: a condition holding at ENABLE is not reported. */
        ck_assert_int_eq(reg(P, a, 13, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_EDGE), 0);
        expect_none(P, 50);
        /* Drain to EWOULDBLOCK, then a new datagram is an edge. */
        while (recv(a, buf, sizeof(buf), 0) > 0)
                ;
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 13), SN_EVENT_IN);
        /* Still readable, not drained: no level-style repeat. */
        expect_none(P, 50);
        while (recv(a, buf, sizeof(buf), 0) > 0)
                ;
        ck_assert_int_eq(send(b, "3", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 13), SN_EVENT_IN);
        remove_and_wait(P, a, 13);
        close(a);
        close(b);
}
END_TEST

START_TEST(test_edge_oneshot)
{
        int a, b;
        char buf[64];

        udp_pair(&a, &b);
        ck_assert_int_eq(reg(P, a, 14, SN_REGISTER_EVENT_IN, SN_OP_ENABLE,
                             SN_TRIGGER_EDGE | SN_TRIGGER_ONESHOT),
                         0);
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 14), SN_EVENT_IN);
        while (recv(a, buf, sizeof(buf), 0) > 0)
                ;
        /* Row 41: disarmed after one packet. */
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        expect_none(P, 100);
        /* Re-enabled while readable: that condition already held, so nothing (rule 15). */
        ck_assert_int_eq(reg(P, a, 14, SN_REGISTER_EVENT_IN, SN_OP_ENABLE,
                             SN_TRIGGER_EDGE | SN_TRIGGER_ONESHOT),
                         0);
        expect_none(P, 50);
        while (recv(a, buf, sizeof(buf), 0) > 0)
                ;
        ck_assert_int_eq(send(b, "3", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 14), SN_EVENT_IN);
        remove_and_wait(P, a, 14);
        close(a);
        close(b);
}
END_TEST

START_TEST(test_disable_enable_overwrite)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(reg(P, sv, 15, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* Row 28: disabled, nothing is queued; the registration is kept. */
        ck_assert_int_eq(reg(P, sv, 0, 0, SN_OP_DISABLE, 0), 0);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        expect_none(P, 50);
        /* Rows 25, 26, rule 4: ENABLE overwrites the filter and keeps the original key. */
        ck_assert_int_eq(reg(P, sv, 999, SN_REGISTER_EVENT_OUT, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_uint_eq(expect_one(P, 15), SN_EVENT_OUT);
        /* Rule 5: filter NONE is legal and reports nothing here. */
        ck_assert_int_eq(reg(P, sv, 15, SN_REGISTER_EVENT_NONE, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        expect_none(P, 50);
        remove_and_wait(P, sv, 15);
        close(cl);
        close(sv);
}
END_TEST

/* ---- REMOVE ------------------------------------------------------------------------------- */

START_TEST(test_remove_guarantees)
{
        int cl, sv;
        sn_entry_t e[8];

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        ck_assert_int_eq(reg(P, sv, 16, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* Rule 8: REMOVE twice before delivery: both succeed, one packet. */
        ck_assert_int_eq(reg(P, sv, 0, 0, SN_OP_REMOVE, 0), 0);
        ck_assert_int_eq(reg(P, sv, 0, 0, SN_OP_REMOVE, 0), 0);
        /* While the REMOVE is pending the socket cannot be registered again (rule 10). */
        ck_assert_int_eq(reg(P, sv, 17, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL),
                         -EEXIST);
        int n = deq(P, e, 8, 1000);
        ck_assert_int_eq(n, 1);
        /* Rows 31, 57: one packet with REMOVE, carrying the registration's key. */
        ck_assert_uint_eq(e[0].key, 16);
        ck_assert(e[0].events & SN_EVENT_REMOVE);
        /* Row 61: nothing more for the key. */
        expect_none(P, 50);
        /* Row 30: a second REMOVE once delivered fails; row 33: ENABLE creates afresh. */
        ck_assert_int_eq(reg(P, sv, 0, 0, SN_OP_REMOVE, 0), -ENOENT);
        ck_assert_int_eq(reg(P, sv, 18, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_uint_eq(expect_one(P, 18), SN_EVENT_IN);
        remove_and_wait(P, sv, 18);
        close(cl);
        close(sv);
}
END_TEST

START_TEST(test_one_port_per_socket)
{
        sn_port_t *b;
        int cl, sv;

        ck_assert_int_eq(sn_port_create(C, 0, &b), 0);
        tcp_pair(&cl, &sv);
        ck_assert_int_eq(reg(P, sv, 20, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* Row 64: ENABLE on another port fails and leaves the first registration alone. */
        ck_assert_int_eq(reg(b, sv, 21, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL),
                         -EEXIST);
        /* Rule 13: DISABLE/REMOVE through the other port fail. */
        ck_assert_int_eq(reg(b, sv, 0, 0, SN_OP_REMOVE, 0), -ENOENT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 20), SN_EVENT_IN);
        /* Row 65: after the REMOVE packet the socket may go to the other port. */
        remove_and_wait(P, sv, 20);
        ck_assert_int_eq(reg(b, sv, 21, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_uint_eq(expect_one(b, 21), SN_EVENT_IN);
        remove_and_wait(b, sv, 21);
        sn_port_close(b);
        close(cl);
        close(sv);
}
END_TEST

/* ---- event meaning -------------------------------------------------------------------------- */

START_TEST(test_hangup_stream_and_udp)
{
        int cl, sv, a, b;
        char buf[8];

        tcp_pair(&cl, &sv);
        udp_pair(&a, &b);
        ck_assert_int_eq(reg(P, sv, 30, SN_REGISTER_EVENTS_ALL, SN_OP_ENABLE,
                             SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT),
                         0);
        ck_assert_uint_eq(expect_one(P, 30), SN_EVENT_OUT);
        /* Rule 6: peer sends then closes: IN and HANGUP, data still readable. */
        ck_assert_int_eq(send(cl, "bye", 3, 0), 3);
        close(cl);
        usleep(20000);
        ck_assert_int_eq(reg(P, sv, 30, SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP,
                             SN_OP_ENABLE, SN_TRIGGER_LEVEL),
                         0);
        ck_assert_uint_eq(expect_one(P, 30), SN_EVENT_IN | SN_EVENT_HANGUP);
        /* Rule 7: level-triggered HANGUP repeats. */
        ck_assert_uint_eq(expect_one(P, 30), SN_EVENT_IN | SN_EVENT_HANGUP);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 3);
        remove_and_wait(P, sv, 30);
        /* Row 51: a UDP socket never reports HANGUP, even shut down. */
        ck_assert_int_eq(reg(P, a, 31, SN_REGISTER_EVENTS_ALL, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_uint_eq(expect_one(P, 31), SN_EVENT_OUT);
        shutdown(a, SHUT_RDWR);
        uint32_t ev = expect_one(P, 31);
        ck_assert_uint_eq(ev & SN_EVENT_HANGUP, 0);
        remove_and_wait(P, a, 31);
        close(sv);
        close(a);
        close(b);
}
END_TEST

START_TEST(test_connect_listen_reset)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port), s, acc, refused;
        char buf[8];

        /* Row 47: a listening socket reports IN for a pending connection. */
        ck_assert_int_eq(reg(P, l, 40, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        expect_none(P, 0);
        /* Rule 14: a fresh stream socket reports neither OUT nor HANGUP. */
        s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(reg(P, s, 41, SN_REGISTER_EVENTS_ALL, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        expect_none(P, 50);
        /* Row 48: a non-blocking connect that succeeds reports OUT. */
        sa.sin_port = port;
        ck_assert(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS);
        sn_entry_t e[4];
        uint32_t seen40 = 0, seen41 = 0;
        for (long long end = now_ms() + test_timeout_ms(2000);
             (!seen40 || !(seen41 & SN_EVENT_OUT)) && now_ms() < end;) {
                int n = deq(P, e, 4, 200);
                for (int i = 0; i < n; i++) {
                        if (e[i].key == 40)
                                seen40 |= e[i].events;
                        if (e[i].key == 41)
                                seen41 |= e[i].events;
                }
        }
        ck_assert_uint_eq(seen40, SN_EVENT_IN);
        ck_assert_uint_eq(seen41 & (SN_EVENT_OUT | SN_EVENT_HANGUP | SN_EVENT_ERR), SN_EVENT_OUT);
        acc = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        ck_assert_int_ge(acc, 0);
        remove_and_wait(P, l, 40);
        /* Row 52: a reset gives ERR, and the error is read with a non-blocking recv. */
        ck_assert_int_eq(reg(P, s, 41, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(acc, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(acc);
        uint32_t ev = 0;
        for (long long end = now_ms() + test_timeout_ms(2000);
             !(ev & SN_EVENT_ERR) && now_ms() < end;) {
                int n = deq(P, e, 4, 200);
                for (int i = 0; i < n; i++)
                        if (e[i].key == 41)
                                ev |= e[i].events;
        }
        ck_assert(ev & SN_EVENT_ERR);
        ck_assert_int_eq(recv(s, buf, sizeof(buf), MSG_DONTWAIT), -1);
        ck_assert_int_eq(errno, ECONNRESET);
        remove_and_wait(P, s, 41);
        close(s);
        /* Row 49: a refused connect reports ERR without OUT.  The port is one a bound socket
         * holds without listening: the closed listener's port could still accept for a moment,
         * since the daemon's copy of it is closed on the closer thread after its REMOVE. */
        close(l);
        struct sockaddr_in hole_sa = { .sin_family = AF_INET,
                                       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t hole_len = sizeof(hole_sa);
        int hole = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_eq(bind(hole, (struct sockaddr *)&hole_sa, sizeof(hole_sa)), 0);
        ck_assert_int_eq(getsockname(hole, (struct sockaddr *)&hole_sa, &hole_len), 0);
        refused = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(reg(P, refused, 42, SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT,
                             SN_OP_ENABLE, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT),
                         0);
        connect(refused, (struct sockaddr *)&hole_sa, sizeof(hole_sa));
        ev = expect_one(P, 42);
        close(hole);
        ck_assert(ev & SN_EVENT_ERR);
        ck_assert_uint_eq(ev & SN_EVENT_OUT, 0);
        remove_and_wait(P, refused, 42);
        close(refused);
}
END_TEST

START_TEST(test_unix_and_send_buffer)
{
        int sv[2];
        char big[65536] = { 0 };
        uint32_t ev;

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_int_eq(reg(P, sv[0], 50, SN_REGISTER_EVENT_OUT, SN_OP_ENABLE, SN_TRIGGER_LEVEL),
                         0);
        ck_assert_uint_eq(expect_one(P, 50), SN_EVENT_OUT);
        /* The send buffer fills: OUT stops; it drains: OUT comes back (row 37). */
        while (send(sv[0], big, sizeof(big), MSG_DONTWAIT) > 0)
                ;
        expect_none(P, 50);
        while (recv(sv[1], big, sizeof(big), MSG_DONTWAIT) > 0)
                ;
        ev = expect_one(P, 50);
        ck_assert_uint_eq(ev, SN_EVENT_OUT);
        remove_and_wait(P, sv[0], 50);
        /* A Unix datagram socket works too. */
        int dg[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, dg), 0);
        ck_assert_int_eq(reg(P, dg[0], 51, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(send(dg[1], "x", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 51), SN_EVENT_IN);
        remove_and_wait(P, dg[0], 51);
        close(sv[0]);
        close(sv[1]);
        close(dg[0]);
        close(dg[1]);
}
END_TEST

/* ---- coalescing, stale readiness, posted packets ------------------------------------------ */

START_TEST(test_posted_and_mixed)
{
        int cl, sv;
        sn_entry_t e[8];
        int n;

        tcp_pair(&cl, &sv);
        /* Row 68: posted values come back exactly, mixed with notifications. */
        ck_assert_int_eq(sn_port_post(P, UINT64_MAX, 0x80, 0xdeadbeefcafef00dull), 0);
        ck_assert_int_eq(reg(P, sv, 60, SN_REGISTER_EVENT_OUT, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        n = deq(P, e, 8, 1000);
        ck_assert_int_eq(n, 2);
        ck_assert_uint_eq(e[0].kind, SN_ENTRY_POSTED);
        ck_assert_uint_eq(e[0].key, UINT64_MAX);
        ck_assert_uint_eq(e[0].events, 0x80);
        ck_assert_uint_eq(e[0].overlapped, 0xdeadbeefcafef00dull);
        ck_assert_uint_eq(e[1].kind, SN_ENTRY_SOCKET);
        ck_assert_uint_eq(e[1].key, 60);
        /* Row 21: returns at once with what is there, not waiting to fill the array. */
        ck_assert_int_eq(sn_port_post(P, 1, 2, 3), 0);
        long long t0 = now_ms();
        n = deq(P, e, 8, 5000);
        ck_assert_int_ge(n, 1);
        ck_assert_int_lt(now_ms() - t0, 1000);
        remove_and_wait(P, sv, 60);
        close(cl);
        close(sv);
}
END_TEST

START_TEST(test_stale_level_not_delivered)
{
        int cl, sv, a, b;
        char buf[8];

        tcp_pair(&cl, &sv);
        udp_pair(&a, &b);
        ck_assert_int_eq(reg(P, sv, 70, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(send(b, "y", 1, 0), 1);
        usleep(20000);
        /* An EDGE enable harvests what is ready now, which queues sv's IN early... */
        ck_assert_int_eq(reg(P, a, 71, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_EDGE), 0);
        /* ...then the data is consumed before anyone dequeues: nothing stale may come out. */
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 1);
        expect_none(P, 0);
        remove_and_wait(P, sv, 70);
        remove_and_wait(P, a, 71);
        close(cl);
        close(sv);
        close(a);
        close(b);
}
END_TEST

/* ---- timeouts and threads ------------------------------------------------------------------ */

START_TEST(test_timeouts)
{
        sn_entry_t e;
        long long t0 = now_ms();

        /* Rows 17, 18: 0 polls and returns at once, a finite timeout waits about that long. */
        ck_assert_int_eq(deq(P, &e, 1, 0), -ETIMEDOUT);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(100));
        t0 = now_ms();
        ck_assert_int_eq(deq(P, &e, 1, 200), -ETIMEDOUT);
        ck_assert_int_ge(now_ms() - t0, 190);
        ck_assert_int_lt(now_ms() - t0, 1000);
}
END_TEST

struct waiter {
        sn_port_t *port;
        int result;
        sn_entry_t e;
        uint32_t timeout;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;

        w->result = deq(w->port, &w->e, 1, w->timeout);
        return NULL;
}

static int daemon_waiters(void)
{
        char *s = NULL;
        json_t *doc;
        int n;

        ck_assert_int_eq(sn_conn_status(C, &s), 0);
        doc = json_loads(s, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        n = (int)json_integer_value(json_object_get(doc, "waiters"));
        json_decref(doc);
        free(s);
        return n;
}

static void wait_for_waiters(int n)
{
        long long end = now_ms() + test_timeout_ms(3000);

        while (daemon_waiters() != n)
                ck_assert_msg(now_ms() < end, "daemon never had %d waiters", n);
}

START_TEST(test_threads_lifo_and_exactly_once)
{
        struct waiter w[3];
        pthread_t t[3];

        /* Rows 67, 73: three threads wait; one post wakes the most recent only. */
        for (int i = 0; i < 3; i++) {
                w[i] = (struct waiter){ .port = P, .timeout = SN_INFINITE };
                ck_assert_int_eq(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
                wait_for_waiters(i + 1);
        }
        ck_assert_int_eq(sn_port_post(P, 100, 0, 0), 0);
        ck_assert_int_eq(pthread_join(t[2], NULL), 0);
        ck_assert_int_eq(w[2].result, 1);
        ck_assert_uint_eq(w[2].e.key, 100);
        wait_for_waiters(2);
        ck_assert_int_eq(sn_port_post(P, 101, 0, 0), 0);
        ck_assert_int_eq(pthread_join(t[1], NULL), 0);
        ck_assert_uint_eq(w[1].e.key, 101);
        ck_assert_int_eq(sn_port_post(P, 102, 0, 0), 0);
        ck_assert_int_eq(pthread_join(t[0], NULL), 0);
        ck_assert_uint_eq(w[0].e.key, 102);
}
END_TEST

START_TEST(test_port_close_wakes_waiters)
{
        struct waiter w = { .port = P, .timeout = SN_INFINITE };
        pthread_t t;
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(reg(P, sv, 80, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* The connection, the port's epoll instance and the socket copy. */
        ck_assert_int_eq(test_daemon_fds(&D), baseline + test_conn_fds() + 2);
        ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
        wait_for_waiters(1);
        /* Rule 9: waiters get ECANCELED, registrations go without REMOVE, copies are closed. */
        ck_assert_int_eq(sn_port_close(P), 0);
        P = NULL;
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(w.result, -ECANCELED);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + test_conn_fds(), 2000), baseline + test_conn_fds());
        /* ...so the socket can be registered on another port at once. */
        ck_assert_int_eq(sn_port_create(C, 0, &P), 0);
        ck_assert_int_eq(reg(P, sv, 81, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        remove_and_wait(P, sv, 81);
        close(cl);
        close(sv);
}
END_TEST

/* ---- ownership (L1, L2, L3) ---------------------------------------------------------------- */

START_TEST(test_close_socket_drops_copy)
{
        int cl, sv, cl2, sv2;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(reg(P, sv, 90, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* L1: plain close() leaves the daemon's copy: the peer sees no EOF. */
        tcp_pair(&cl2, &sv2);
        ck_assert_int_eq(reg(P, sv2, 91, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        close(sv2);
        ck_assert(!peer_closed(cl2, 100));
        /* sn_socket_close() drops the copy, with no REMOVE packet (row 59). */
        ck_assert_int_eq(sn_socket_close(C, sv), 0);
        ck_assert(peer_closed(cl, 2000));
        expect_none(P, 50);
        ck_assert_int_eq(sn_socket_close(C, sv), -EBADF);
        /* Closing the port releases the other copy; its peer then sees EOF. */
        ck_assert_int_eq(sn_port_close(P), 0);
        P = NULL;
        ck_assert(peer_closed(cl2, 2000));
        close(cl);
        close(cl2);
}
END_TEST

START_TEST(test_identity_is_the_socket)
{
        int cl, sv, dup1, other_cl, other_sv;
        sn_port_t *b;

        tcp_pair(&cl, &sv);
        dup1 = dup(sv);
        ck_assert_int_eq(reg(P, sv, 100, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        /* L2: a dup is the same registration: re-enable through it keeps the key. */
        ck_assert_int_eq(reg(P, dup1, 555, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &b), 0);
        ck_assert_int_eq(reg(b, dup1, 556, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL),
                         -EEXIST);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 100), SN_EVENT_IN);
        /* Row 62: closing a handle other than the registering one keeps the registration. */
        ck_assert_int_eq(sn_socket_close(C, dup1), 0);
        ck_assert_uint_eq(expect_one(P, 100), SN_EVENT_IN);
        /* L2: a new socket reusing the fd number of a closed one is a new registration. */
        int num = sv;
        tcp_pair(&other_cl, &other_sv);
        ck_assert_int_eq(sn_socket_close(C, sv), 0);
        ck_assert_int_eq(dup2(other_sv, num), num);
        close(other_sv);
        other_sv = num;
        ck_assert_int_eq(reg(P, other_sv, 101, SN_REGISTER_EVENT_IN, SN_OP_ENABLE,
                             SN_TRIGGER_LEVEL),
                         0);
        ck_assert_int_eq(send(other_cl, "b", 1, 0), 1);
        ck_assert_uint_eq(expect_one(P, 101), SN_EVENT_IN);
        remove_and_wait(P, other_sv, 101);
        sn_port_close(b);
        close(cl);
        close(other_cl);
        close(other_sv);
}
END_TEST

START_TEST(test_client_killed_mid_wait)
{
        int cl, sv, pipefd[2];
        pid_t pid;
        char c;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(pipe(pipefd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *c2;
                sn_port_t *p2;
                sn_entry_t e;

                if (sn_conn_open(D.path, &c2) < 0 || sn_port_create(c2, 0, &p2) < 0 ||
                    reg(p2, sv, 1, SN_REGISTER_EVENT_IN, SN_OP_ENABLE, SN_TRIGGER_LEVEL) != 0)
                        _exit(1);
                close(sv); /* the daemon now holds the only copy besides the parent's */
                write(pipefd[1], "r", 1);
                deq(p2, &e, 1, SN_INFINITE);
                _exit(2);
        }
        close(sv); /* the parent's copy too: only the child's registration keeps it */
        ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
        wait_for_waiters(1);
        ck_assert(!peer_closed(cl, 50));
        /* L3: SIGKILL mid-wait; the daemon drops everything and the peer sees EOF. */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        ck_assert(peer_closed(cl, 2000));
        wait_for_waiters(0);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + test_conn_fds() + 1, 2000), baseline + test_conn_fds() + 1);
        close(cl);
        close(pipefd[0]);
        close(pipefd[1]);
}
END_TEST

START_TEST(test_fork_child_gets_error)
{
        pid_t pid = fork();
        int st;

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_entry_t e;
                _exit(deq(P, &e, 1, 0) == -EBADFD && sn_port_post(P, 1, 1, 1) == -EBADFD ? 0 : 1);
        }
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* The parent's connection is untouched. */
        ck_assert_int_eq(sn_port_post(P, 1, 1, 1), 0);
        sn_entry_t e;
        ck_assert_int_eq(deq(P, &e, 1, 0), 1);
}
END_TEST

/* ---- batches larger than one message ------------------------------------------------------- */

START_TEST(test_big_batch)
{
        enum { N = 600 };
        static int pairs[N][2];
        static sn_registration_t r[N];
        static sn_entry_t e[N];
        int removed = 0;

        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]), 0);
                r[i] = (sn_registration_t){ .fd = pairs[i][0], .key = 1000 + i, .op = SN_OP_ENABLE,
                                            .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
                ck_assert_int_eq(send(pairs[i][1], "x", 1, 0), 1);
        }
        /* More than 253 fds: sent in parts, applied as one call; all entries dequeued. */
        int n = sn_port_process(P, r, N, e, N, 1000);
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(r[i].result, 0);
        ck_assert_int_eq(test_daemon_fds(&D), baseline + test_conn_fds() + 1 + N);
        ck_assert_int_gt(n, 0);
        for (int i = 0; i < n; i++)
                ck_assert_uint_eq(e[i].events, SN_EVENT_IN);
        for (int i = 0; i < N; i++)
                r[i].op = SN_OP_REMOVE;
        ck_assert_int_eq(sn_port_process(P, r, N, NULL, 0, 0), 0);
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(r[i].result, 0);
        while (removed < N) {
                n = deq(P, e, N, 1000);
                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++)
                        removed += !!(e[i].events & SN_EVENT_REMOVE);
        }
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + test_conn_fds() + 1, 2000), baseline + test_conn_fds() + 1);
        for (int i = 0; i < N; i++) {
                close(pairs[i][0]);
                close(pairs[i][1]);
        }
}
END_TEST

/* ---- daemon lifetime ----------------------------------------------------------------------- */

START_TEST(test_shutdown_answers_waiters)
{
        struct waiter w;
        pthread_t t;
        struct stat st;
        long long t0;

        /* Without a resume (SOCKNOTIFY_RECONNECT_MS=0, read by sn_conn_open): the waiter is
         * answered at once instead of after the resume window. */
        sn_port_close(P);
        sn_conn_close(C);
        setenv("SOCKNOTIFY_RECONNECT_MS", "0", 1);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        unsetenv("SOCKNOTIFY_RECONNECT_MS");
        ck_assert_int_eq(sn_port_create(C, 0, &P), 0);
        w = (struct waiter){ .port = P, .timeout = SN_INFINITE };
        ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
        wait_for_waiters(1);
        t0 = now_ms();
        kill(D.pid, SIGTERM);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_msg(now_ms() - t0 < test_timeout_ms(1000), "answered after %lld ms",
                      now_ms() - t0);
        ck_assert(w.result == -ESHUTDOWN || w.result == -ECONNRESET);
        ck_assert_int_eq(test_daemon_reap(&D), 0);
        /* The socket file is gone. */
        ck_assert_int_eq(stat(D.path, &st), -1);
        sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
}
END_TEST

START_TEST(test_refuses_live_replaces_stale)
{
        char bin[512];
        int st;
        pid_t pid;

        snprintf(bin, sizeof(bin), "%s/daemon/socknotifyd", getenv("SN_BUILDDIR"));
        pid = fork();
        if (pid == 0) {
                execl(bin, bin, "--socket", D.path, (char *)NULL);
                _exit(127);
        }
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        /* The running daemon still serves. */
        ck_assert_int_eq(sn_port_post(P, 1, 1, 1), 0);
        sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
        /* A killed daemon leaves a stale socket file, which the next one replaces. */
        kill(D.pid, SIGKILL);
        waitpid(D.pid, NULL, 0);
        ck_assert_int_eq(access(D.path, F_OK), 0);
        D.pid = 0;
        struct test_daemon d2 = D;
        pid = fork();
        if (pid == 0) {
                execl(bin, bin, "--socket", D.path, (char *)NULL);
                _exit(127);
        }
        d2.pid = pid;
        long long end = now_ms() + test_timeout_ms(5000);
        while (sn_conn_open(D.path, &C) < 0)
                ck_assert(now_ms() < end);
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_stop(&d2), 0);
}
END_TEST

static void limits_setup(void)
{
        static const char *const args[] = { "--max-posted=3", "--max-ports=2",
                                            "--max-sockets-per-user=3", NULL };

        start_with(args);
}

static Suite *suite(void)
{
        Suite *s = suite_create("core");
        TCase *tc = tcase_create("native-api");
        TCase *lim = tcase_create("limits");
        TCase *life = tcase_create("lifetime");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_connect_errors);
        tcase_add_test(tc, test_registration_only_call);
        tcase_add_test(tc, test_per_entry_results);
        tcase_add_test(tc, test_level_persistent);
        tcase_add_test(tc, test_level_oneshot);
        tcase_add_test(tc, test_edge);
        tcase_add_test(tc, test_edge_oneshot);
        tcase_add_test(tc, test_disable_enable_overwrite);
        tcase_add_test(tc, test_remove_guarantees);
        tcase_add_test(tc, test_one_port_per_socket);
        tcase_add_test(tc, test_hangup_stream_and_udp);
        tcase_add_test(tc, test_connect_listen_reset);
        tcase_add_test(tc, test_unix_and_send_buffer);
        tcase_add_test(tc, test_posted_and_mixed);
        tcase_add_test(tc, test_stale_level_not_delivered);
        tcase_add_test(tc, test_timeouts);
        tcase_add_test(tc, test_threads_lifo_and_exactly_once);
        tcase_add_test(tc, test_port_close_wakes_waiters);
        tcase_add_test(tc, test_close_socket_drops_copy);
        tcase_add_test(tc, test_identity_is_the_socket);
        tcase_add_test(tc, test_client_killed_mid_wait);
        tcase_add_test(tc, test_fork_child_gets_error);
        tcase_add_test(tc, test_big_batch);
        suite_add_tcase(s, tc);

        tcase_add_checked_fixture(lim, limits_setup, teardown);
        tcase_add_test(lim, test_limits_announced);
        suite_add_tcase(s, lim);

        tcase_add_checked_fixture(life, setup, NULL);
        tcase_set_timeout(life, 30);
        tcase_add_test(life, test_shutdown_answers_waiters);
        tcase_add_test(life, test_refuses_live_replaces_stale);
        suite_add_tcase(s, life);
        return s;
}

int main(void)
{
        return test_run_suite(suite());
}

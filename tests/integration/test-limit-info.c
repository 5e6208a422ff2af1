/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-limit-info.c - a call refused by a limit (-EDQUOT) learns which limit and its value
 * (LIMIT_INFO, sn_conn_refusal(), sn_conn_error_detail()), against a real socknotifyd started
 * with small limits: waits per user, registrations per port, ports per connection, posted
 * packets per port, sockets per user; per item for a PROCESS call.  And, from a fake peer, a
 * LIMIT_INFO_REPLY with more records than a daemon keeps and a limit no daemon has.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

static struct test_daemon D;
static sn_conn_t *C;
static sn_port_t *P;

static void start_with(const char *const *args)
{
        test_daemon_start(&D, args);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &P), 0);
}

static void teardown(void)
{
        sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

/* The refusal of this thread's last call on C (item: SN_REFUSAL_CALL or a regs index) names
 * limit with value in scope, and its text says so. */
static void check_refusal(uint32_t item, const char *limit, uint64_t value, uint32_t scope)
{
        sn_refusal_t rf;
        char want[64];

        ck_assert_int_eq(sn_conn_refusal(C, item, &rf), 0);
        ck_assert_str_eq(rf.limit, limit);
        ck_assert_uint_eq(rf.value, value);
        ck_assert_uint_eq(rf.scope, scope);
        ck_assert_uint_eq(rf.item, item);
        snprintf(want, sizeof(want), "%s (%llu) reached", limit, (unsigned long long)value);
        ck_assert_msg(strstr(rf.text, want), "\"%s\" lacks \"%s\"", rf.text, want);
}

static void check_detail(const char *limit, uint64_t value)
{
        const char *d = sn_conn_error_detail(C);
        char want[64];

        ck_assert_ptr_nonnull(d);
        snprintf(want, sizeof(want), "%s (%llu) reached", limit, (unsigned long long)value);
        ck_assert_msg(strstr(d, want), "\"%s\" lacks \"%s\"", d, want);
}

static int enable(sn_registration_t *g, int fd, uint64_t key)
{
        *g = (sn_registration_t){ .fd = fd, .filter = SN_REGISTER_EVENT_IN, .op = SN_OP_ENABLE,
                                  .trigger = SN_TRIGGER_LEVEL, .key = key };
        return 0;
}

START_TEST(test_waits_per_user)
{
        static const char *const args[] = { "--max-waits-per-user=2", NULL };
        sn_call_t *w[2];
        sn_entry_t e;

        start_with(args);
        /* Two waits parked without a limit, then a third call that would wait. */
        for (int i = 0; i < 2; i++)
                ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, UINT32_MAX, SN_WAITER_MIN + i,
                                                NULL, &w[i]),
                                 0);
        ck_assert_int_eq(sn_port_dequeue(P, &e, 1, (uint32_t)test_timeout_ms(10000)), -EDQUOT);
        check_refusal(SN_REFUSAL_CALL, "max-waits-per-user", 2, SN_LIMIT_SCOPE_USER);
        check_detail("max-waits-per-user", 2);
        /* The call was refused, not an item of it. */
        ck_assert_int_eq(sn_conn_refusal(C, 0, &(sn_refusal_t){ 0 }), -ENOENT);
        for (int i = 0; i < 2; i++)
                sn_call_free(w[i]);
}
END_TEST

START_TEST(test_registrations_per_port)
{
        static const char *const args[] = { "--max-registrations=2", NULL };
        sn_registration_t g[5];
        int sp[5][2];

        start_with(args);
        for (int i = 0; i < 5; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
                enable(&g[i], sp[i][0], 100 + (uint64_t)i);
        }
        /* Item 1 fails by itself (not a socket): refused items are matched to their index,
         * not counted. */
        g[1].fd = -1;
        ck_assert_int_eq(sn_port_process(P, g, 5, NULL, 0, 0), 0);
        ck_assert_int_eq(g[0].result, 0);
        ck_assert_int_ne(g[1].result, 0);
        ck_assert_int_ne(g[1].result, -EDQUOT);
        ck_assert_int_eq(g[2].result, 0);
        ck_assert_int_eq(g[3].result, -EDQUOT);
        ck_assert_int_eq(g[4].result, -EDQUOT);
        check_refusal(3, "max-registrations", 2, SN_LIMIT_SCOPE_PORT);
        check_refusal(4, "max-registrations", 2, SN_LIMIT_SCOPE_PORT);
        /* Items that were not refused by a limit, and the call itself, have none. */
        ck_assert_int_eq(sn_conn_refusal(C, 0, &(sn_refusal_t){ 0 }), -ENOENT);
        ck_assert_int_eq(sn_conn_refusal(C, 1, &(sn_refusal_t){ 0 }), -ENOENT);
        ck_assert_int_eq(sn_conn_refusal(C, SN_REFUSAL_CALL, &(sn_refusal_t){ 0 }), -ENOENT);
        check_detail("max-registrations", 2);
        for (int i = 0; i < 5; i++) {
                close(sp[i][0]);
                close(sp[i][1]);
        }
}
END_TEST

/* What LIMIT_INFO says, read with the protocol itself: a record covers only items refused one
 * after another.  Items 1 and 3 of one PROCESS are refused by max-registrations (1); item 2
 * between them fails without a limit (a DISABLE of a socket never registered): two records,
 * 1..1 and 3..3, not one run 1..3 that would claim item 2.  (The libraries ask only about
 * items whose result was EDQUOT, so only the wire shows it.) */
START_TEST(test_refusal_runs_are_contiguous)
{
        static const char *const args[] = { "--max-registrations=1", NULL };
        static const uint32_t want[4] = { 0, EDQUOT, ENOENT, EDQUOT };
        uint8_t buf[1024], *p;
        struct snw_process body = { 0 };
        struct snw_refusal rec[2];
        const struct sn_msg_desc *d;
        struct snw_header h;
        struct stat st;
        int fd, sp[3][2], fds[3];
        ssize_t n;

        start_with(args);
        fd = raw_hello2(D.path);
        body.port = raw_port_create(fd, 2, NULL);
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
                fds[i] = sp[i][0];
        }
        ck_assert_int_eq(fstat(sp[2][0], &st), 0);
        /* ENABLE 0, ENABLE 1 (refused), DISABLE of 2 by identity (ENOENT), ENABLE 2 (refused). */
        p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 3, 4, 0), &body);
        for (uint32_t i = 0; i < 4; i++) {
                struct snw_registration r = { .key = 7 + i, .op = SN_OP_ENABLE,
                                              .filter = SN_REGISTER_EVENT_IN,
                                              .trigger = SN_TRIGGER_LEVEL,
                                              .fd_index = i < 2 ? i : 2 };

                if (i == 2) {
                        r.op = SN_OP_DISABLE;
                        r.dev = (uint64_t)st.st_dev;
                        r.ino = (uint64_t)st.st_ino;
                        r.fd_index = SN_PROTO_NO_FD;
                }
                p = snw_registration_encode(p, &r);
        }
        raw_send(fd, buf, (size_t)(p - buf), fds, 3);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_ge(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_uint_eq(h.count, 4);
        for (int i = 0; i < 4; i++)
                ck_assert_uint_eq(sn_get_u32(sn_msg_array(buf, d, 0) + 4 * i), want[i]);

        sn_msg_begin(buf, SN_MSG_LIMIT_INFO, 4, 0, 0, 0, 0);
        raw_send(fd, buf, sn_msg_size(SN_MSG_LIMIT_INFO, 0, 0), NULL, 0);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_ge(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_LIMIT_INFO_REPLY);
        ck_assert_uint_eq(h.count, 2);
        for (int i = 0; i < 2; i++)
                snw_refusal_decode(sn_msg_array(buf, d, 0) + (size_t)i * SN_WIRE_SIZE_refusal,
                                   &rec[i]);
        ck_assert_uint_eq(rec[0].request, 3);
        ck_assert_msg(rec[0].first == 1 && rec[0].last == 1, "first record: items %u..%u",
                      rec[0].first, rec[0].last);
        ck_assert_uint_eq(rec[1].request, 3);
        ck_assert_msg(rec[1].first == 3 && rec[1].last == 3, "second record: items %u..%u",
                      rec[1].first, rec[1].last);

        close(fd);
        for (int i = 0; i < 3; i++) {
                close(sp[i][0]);
                close(sp[i][1]);
        }
}
END_TEST

START_TEST(test_ports_and_posted)
{
        static const char *const args[] = { "--max-ports=2", "--max-posted=3", NULL };
        sn_port_t *p2, *p3 = NULL;

        start_with(args);
        ck_assert_int_eq(sn_port_create(C, 0, &p2), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &p3), -EDQUOT);
        check_refusal(SN_REFUSAL_CALL, "max-ports", 2, SN_LIMIT_SCOPE_CONNECTION);
        check_detail("max-ports", 2);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(sn_port_post(p2, (uint64_t)i, 0, 0), 0);
        ck_assert_int_eq(sn_port_post(p2, 9, 0, 0), -EDQUOT);
        check_refusal(SN_REFUSAL_CALL, "max-posted", 3, SN_LIMIT_SCOPE_PORT);
        check_detail("max-posted", 3);
        sn_port_close(p2);
}
END_TEST

START_TEST(test_sockets_per_user)
{
        static const char *const args[] = { "--max-sockets-per-user=2", NULL };
        sn_registration_t g[3];
        sn_conn_t *c2;
        sn_port_t *p2;
        int sp[3][2];

        start_with(args);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
        /* One socket held through another connection of the same user. */
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_create(c2, 0, &p2), 0);
        enable(&g[0], sp[0][0], 1);
        ck_assert_int_eq(sn_port_process(p2, g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g[0].result, 0);
        enable(&g[0], sp[1][0], 2);
        enable(&g[1], sp[2][0], 3);
        ck_assert_int_eq(sn_port_process(P, g, 2, NULL, 0, 0), 0);
        ck_assert_int_eq(g[0].result, 0);
        ck_assert_int_eq(g[1].result, -EDQUOT);
        check_refusal(1, "max-sockets-per-user", 2, SN_LIMIT_SCOPE_USER);
        check_detail("max-sockets-per-user", 2);
        /* The other connection's refusals are its own: it has none. */
        ck_assert_int_eq(sn_conn_refusal(c2, SN_REFUSAL_CALL, &(sn_refusal_t){ 0 }), -ENOENT);
        sn_port_close(p2);
        sn_conn_close(c2);
        for (int i = 0; i < 3; i++) {
                close(sp[i][0]);
                close(sp[i][1]);
        }
}
END_TEST

START_TEST(test_nothing_refused)
{
        start_with(NULL);
        /* A thread that made no refused call gets the connection's newest: there is none. */
        ck_assert_int_eq(sn_conn_refusal(C, SN_REFUSAL_CALL, &(sn_refusal_t){ 0 }), -ENOENT);
        ck_assert_ptr_null(sn_conn_error_detail(C));
        ck_assert_int_eq(sn_conn_refusal(C, SN_REFUSAL_CALL, NULL), -EINVAL);
}
END_TEST

/* A fake daemon (the child of a fork: an exit status, no assertions) that refuses a POST with
 * EDQUOT and answers LIMIT_INFO with 20 records, more than any daemon keeps, the newest naming
 * a limit number and scope no daemon has: the library reads them as the hostile input they
 * may be.  Only here, since a real daemon cannot be made to send them. */
static int fake_daemon(int lfd)
{
        uint8_t in[4096], out[4096], *p;
        const struct sn_msg_desc *d;
        struct snw_header h;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        ssize_t n;

        if (c < 0)
                return 10;
        n = recv(c, in, sizeof(in), 0);
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_HELLO)
                return 11;
        struct snw_hello_reply hr = { .version = 2, .max_message = 65536, .max_fds = 253,
                                      .max_ports = 64, .max_registrations = 1000,
                                      .max_posted = 1000, .max_waits = 64, .max_sockets = 1000,
                                      .daemon_pid = (uint32_t)getpid() };
        snw_hello_reply_encode(sn_msg_begin(out, SN_MSG_HELLO_REPLY, h.id, 0, 0, 0, 0), &hr);
        if (send(c, out, sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0), 0) < 0)
                return 12;
        n = recv(c, in, sizeof(in), 0);
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_PORT_CREATE)
                return 13;
        struct snw_port_create_reply pr = { .port = 7, .concurrency = 1 };
        snw_port_create_reply_encode(sn_msg_begin(out, SN_MSG_PORT_CREATE_REPLY, h.id, 0, 0, 0,
                                                  0),
                                     &pr);
        if (send(c, out, sn_msg_size(SN_MSG_PORT_CREATE_REPLY, 0, 0), 0) < 0)
                return 14;
        n = recv(c, in, sizeof(in), 0);
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_POST)
                return 15;
        uint32_t post_id = h.id;
        struct snw_post_reply po = { .queued = 0 };
        snw_post_reply_encode(sn_msg_begin(out, SN_MSG_POST_REPLY, h.id, EDQUOT, 0, 0, 0), &po);
        if (send(c, out, sn_msg_size(SN_MSG_POST_REPLY, 0, 0), 0) < 0)
                return 16;
        n = recv(c, in, sizeof(in), 0);
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_LIMIT_INFO)
                return 17;
        struct snw_limit_info_reply lr = { .refused = 20 };
        p = snw_limit_info_reply_encode(
                sn_msg_begin(out, SN_MSG_LIMIT_INFO_REPLY, h.id, 0, 0, 20, 0), &lr);
        for (uint32_t i = 0; i < 20; i++) {
                struct snw_refusal r = { .request = i < 19 ? post_id + 1000 + i : post_id,
                                         .first = i == 19 ? 0xffffffffu : i, .last = 0,
                                         .limit = i == 19 ? 999 : 1, .scope = 77,
                                         .value = UINT64_MAX };
                p = snw_refusal_encode(p, &r);
        }
        if (send(c, out, sn_msg_size(SN_MSG_LIMIT_INFO_REPLY, 20, 0), 0) < 0)
                return 18;
        n = recv(c, in, sizeof(in), 0);
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_PORT_CLOSE)
                return 19;
        sn_msg_begin(out, SN_MSG_PORT_CLOSE_REPLY, h.id, 0, 0, 0, 0);
        if (send(c, out, sn_msg_size(SN_MSG_PORT_CLOSE_REPLY, 0, 0), 0) < 0)
                return 20;
        n = recv(c, in, sizeof(in), 0); /* end of file: the client closed */
        close(c);
        return n == 0 ? 0 : 21;
}

START_TEST(test_hostile_limit_info)
{
        char dir[] = "/tmp/sn-limit-XXXXXX";
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        sn_refusal_t rf;
        int lfd, status;
        pid_t pid;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/fake.sock", dir);
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(lfd, 0);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(lfd, 1), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(fake_daemon(lfd));
        setenv("SOCKNOTIFY_NO_SHM", "1", 1);
        ck_assert_int_eq(sn_conn_open(sa.sun_path, &C), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &P), 0);
        ck_assert_int_eq(sn_port_post(P, 1, 0, 0), -EDQUOT);
        ck_assert_int_eq(sn_conn_refusal(C, SN_REFUSAL_CALL, &rf), 0);
        ck_assert_str_eq(rf.limit, "limit 999");
        ck_assert_uint_eq(rf.value, UINT64_MAX);
        ck_assert_uint_eq(rf.scope, 77);
        ck_assert_ptr_nonnull(strstr(rf.text, "limit 999 (18446744073709551615) reached"));
        sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fake daemon: %d", status);
        close(lfd);
        unlink(sa.sun_path);
        rmdir(dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("limit-info");
        TCase *tc = tcase_create("limit-info");
        TCase *fake = tcase_create("hostile");

        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_waits_per_user);
        tcase_add_test(tc, test_registrations_per_port);
        tcase_add_test(tc, test_refusal_runs_are_contiguous);
        tcase_add_test(tc, test_ports_and_posted);
        tcase_add_test(tc, test_sockets_per_user);
        tcase_add_test(tc, test_nothing_refused);
        suite_add_tcase(s, tc);
        tcase_set_timeout(fake, 30);
        tcase_add_test(fake, test_hostile_limit_info);
        suite_add_tcase(s, fake);
        return test_run_suite(s);
}

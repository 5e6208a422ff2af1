/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-linger.c - handoff against a real daemon: a named port with a linger time outlives the
 * process that made it (killed with SIGKILL), keeps its sockets open and watched, queues what
 * happens meanwhile, and a successor of the same user opens it, takes the sockets over (in
 * batches past one message's 253 descriptors) and gets every notification owed.  Also: linger
 * expiry closes everything, linger 0 keeps rule L3, the limits (--max-linger, per-user
 * quotas), a version-1 connection, a re-exec and a crash while a port lingers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"
#include "tests/helpers/handoff.h"
#include "tests/helpers/manager.h"
#include "tests/helpers/raw.h"

static struct test_daemon D;


/* SIGUSR2, then waits until the daemon answers from its new image. */
static void reexec(sn_conn_t *c)
{
        long long before = test_status_number(c, "reexecs"), t0 = now_ms();

        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        while (test_status_number(c, "reexecs") == before) {
                ck_assert(now_ms() - t0 < test_timeout_ms(5000));
                usleep(5000);
        }
}

static void setup(void)
{
        test_daemon_start(&D, (const char *const[]){ "--max-linger=60000", NULL });
}

static void teardown(void)
{
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

static void expect_entry(sn_port_t *p, uint64_t key, uint32_t events)
{
        sn_entry_t e;
        int n = sn_port_dequeue(p, &e, 1, 2000);

        ck_assert_msg(n == 1, "expected key %llu, got %d", (unsigned long long)key, n);
        ck_assert_uint_eq(e.key, key);
        ck_assert_uint_eq(e.events, events);
}

static void expect_nothing(sn_port_t *p, int ms)
{
        sn_entry_t e;
        int n = sn_port_dequeue(p, &e, 1, (uint32_t)ms);

        ck_assert_msg(n == -ETIMEDOUT, "expected nothing, got %d (key %llu)", n,
                      n > 0 ? (unsigned long long)e.key : 0ull);
}

/* A predecessor (tests/helpers/handoff.h) registering IN and HANGUP. */
static void predecessor(const char *name, uint32_t linger_ms, const int *fds, int n,
                        uint64_t base, uint8_t trigger, bool post)
{
        handoff_predecessor(D.path, name, linger_ms, fds, n, base,
                            SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP, trigger, post);
}

/* Opens name and takes everything, waiting until no other holder is left. */
static int take_all(sn_conn_t *c, const char *name, sn_port_t **ret_port, sn_taken_socket_t *t,
                    uint32_t max)
{
        sn_take_info_t info;
        int n;

        ck_assert_int_eq(sn_port_open(c, name, ret_port), 0);
        n = sn_port_take_sockets(*ret_port, t, max, &info);
        ck_assert_int_ge(n, 0);
        ck_assert_uint_eq(info.remaining, 0);
        ck_assert_uint_eq(info.holders, 0);
        return n;
}

START_TEST(test_lingering_port_is_taken_over)
{
        int cl, sv, baseline = test_daemon_fds(&D);
        sn_taken_socket_t t[4];
        sn_conn_t *c;
        sn_port_t *p;
        char buf[16];
        struct stat a, b;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(fstat(sv, &a), 0);
        predecessor("svc", 5000, &sv, 1, 42, SN_TRIGGER_LEVEL, true);
        close(sv); /* only the daemon holds the server side now */
        ck_assert(!peer_closed(cl, 100));
        /* Meanwhile a client sends: it is queued, not lost. */
        ck_assert_int_eq(send(cl, "hello", 5, 0), 5);

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        /* The operator's view: the port lingers, with one ownerless registration. */
        {
                char *text = NULL;
                json_t *doc, *it;

                ck_assert_int_eq(sn_conn_control(c, "{\"verb\":\"ports\"}", &text), 0);
                doc = json_loads(text, 0, NULL);
                ck_assert_ptr_nonnull(doc);
                it = json_array_get(json_object_get(doc, "items"), 0);
                ck_assert_str_eq(json_string_value(json_object_get(it, "name")), "svc");
                ck_assert_int_eq(json_integer_value(json_object_get(it, "handles")), 0);
                ck_assert_int_eq(json_integer_value(json_object_get(it, "linger_ms")), 5000);
                ck_assert_int_gt(json_integer_value(json_object_get(it, "linger_left_ms")), 0);
                ck_assert_int_le(json_integer_value(json_object_get(it, "linger_left_ms")), 5000);
                ck_assert_int_eq(json_integer_value(json_object_get(it, "ownerless")), 1);
                json_decref(doc);
                free(text);
        }
        ck_assert_int_eq(take_all(c, "svc", &p, t, 4), 1);
        ck_assert_int_ge(t[0].fd, 0);
        ck_assert_int_eq(t[0].previous_fd, sv);
        ck_assert_uint_eq(t[0].key, 42);
        ck_assert_uint_eq(t[0].filter, SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP);
        ck_assert_uint_eq(t[0].trigger, SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT);
        ck_assert_uint_eq(t[0].enabled, 1);
        ck_assert_uint_eq(t[0].armed, 1);
        ck_assert(fcntl(t[0].fd, F_GETFD) & FD_CLOEXEC);
        ck_assert_int_eq(fstat(t[0].fd, &b), 0);
        ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        /* The posted packet and the data's notification, both owed, in order. */
        expect_entry(p, 7, 70);
        expect_entry(p, 42, SN_EVENT_IN);
        ck_assert_int_eq(recv(t[0].fd, buf, sizeof(buf), 0), 5);
        ck_assert_int_eq(memcmp(buf, "hello", 5), 0);
        ck_assert_int_eq(send(t[0].fd, "world", 5, 0), 5);
        ck_assert_int_eq(recv(cl, buf, sizeof(buf), 0), 5);
        /* A second take finds nothing left. */
        ck_assert_int_eq(sn_port_take_sockets(p, t, 4, NULL), 0);
        /* L1 for the new owner: closing its descriptor with the library drops the daemon's
         * copy too, so the peer sees the end. */
        ck_assert_int_eq(sn_socket_close(c, t[0].fd), 0);
        ck_assert(peer_closed(cl, 2000));
        close(cl);
        /* Closed with its linger time it would stay (its epoll instance held): not now. */
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
}
END_TEST

START_TEST(test_linger_expires)
{
        int cl, sv, baseline = test_daemon_fds(&D);
        sn_conn_t *c;
        sn_port_t *p;
        long long t0;

        tcp_pair(&cl, &sv);
        predecessor("short", 300, &sv, 1, 1, SN_TRIGGER_LEVEL, true);
        close(sv);
        t0 = now_ms();
        ck_assert(peer_closed(cl, 3000));
        /* Not before its time (the predecessor died ~50 ms before t0). */
        ck_assert_int_ge(now_ms() - t0, 200);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "short", &p), -ENOENT);
        sn_conn_close(c);
        close(cl);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
}
END_TEST

START_TEST(test_no_linger_keeps_rule_l3)
{
        int cl, sv;
        sn_conn_t *c;
        sn_port_t *p;

        tcp_pair(&cl, &sv);
        predecessor("plain", 0, &sv, 1, 1, SN_TRIGGER_LEVEL, false);
        close(sv);
        ck_assert(peer_closed(cl, 2000));
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "plain", &p), -ENOENT);
        sn_conn_close(c);
        close(cl);
}
END_TEST

START_TEST(test_reopened_in_time_stops_the_timer)
{
        int cl, sv;
        sn_taken_socket_t t;
        sn_conn_t *c;
        sn_port_t *p;

        tcp_pair(&cl, &sv);
        predecessor("again", 400, &sv, 1, 5, SN_TRIGGER_LEVEL, false);
        close(sv);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "again", &p), 0);
        usleep(700 * 1000); /* past the linger time: held, so still there */
        ck_assert(!peer_closed(cl, 50));
        ck_assert_int_eq(sn_port_take_sockets(p, &t, 1, NULL), 1);
        /* Our own close with linger 400 lingers again; the registration is ownerless again. */
        sn_port_close(p);
        usleep(100 * 1000);
        close(t.fd);
        ck_assert(!peer_closed(cl, 50));
        ck_assert(peer_closed(cl, 3000));
        close(cl);
        sn_conn_close(c);
}
END_TEST

START_TEST(test_take_while_creator_alive_takes_nothing)
{
        int cl, sv;
        sn_port_options_t o = { .linger_ms = 2000 };
        sn_taken_socket_t t;
        sn_take_info_t info;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pb;
        sn_registration_t r;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &b), 0);
        ck_assert_int_eq(sn_port_create_named_ex(a, "live", &o, &pa), 0);
        r = (sn_registration_t){ .fd = sv, .key = 9, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(pa, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(sn_port_open(b, "live", &pb), 0);
        ck_assert_int_eq(sn_port_take_sockets(pb, &t, 1, &info), 0);
        ck_assert_uint_eq(info.holders, 1);
        ck_assert_uint_eq(info.remaining, 0);
        /* The creator lets go of the port (its connection lives on; the port is still held
         * by b): the registration is kept without an owner, and b takes it. */
        sn_port_close(pa);
        ck_assert_int_eq(sn_port_take_sockets(pb, &t, 1, &info), 1);
        ck_assert_uint_eq(info.holders, 0);
        ck_assert_uint_eq(t.key, 9);
        ck_assert(!peer_closed(cl, 50));
        close(sv);
        close(t.fd);
        sn_port_close(pb); /* lingers 2 s more; the daemon stops before */
        sn_conn_close(b);
        sn_conn_close(a);
        close(cl);
}
END_TEST

START_TEST(test_oneshot_taken_must_be_rearmed)
{
        int cl, sv;
        sn_taken_socket_t t;
        sn_conn_t *c;
        sn_port_t *p;
        sn_registration_t r;
        sn_entry_t e;
        int pipefd[2], st;
        pid_t pid;
        char ch;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(pipe(pipefd), 0);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_port_options_t o = { .linger_ms = 5000 };
                sn_conn_t *conn;
                sn_port_t *pp;
                sn_registration_t rr = { .fd = sv, .key = 3, .op = SN_OP_ENABLE,
                                         .filter = SN_REGISTER_EVENT_IN,
                                         .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };
                sn_entry_t ee;

                /* Takes the one-shot entry and dies before handling it. */
                if (sn_conn_open(D.path, &conn) < 0 ||
                    sn_port_create_named_ex(conn, "oneshot", &o, &pp) < 0 ||
                    sn_port_process(pp, &rr, 1, &ee, 1, 2000) != 1 || ee.key != 3 ||
                    write(pipefd[1], "k", 1) != 1)
                        _exit(2);
                pause();
                _exit(0);
        }
        close(pipefd[1]);
        ck_assert_int_eq(read(pipefd[0], &ch, 1), 1);
        close(pipefd[0]);
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        usleep(50 * 1000);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        reexec(c); /* what was dequeued is remembered across it */
        ck_assert_int_eq(take_all(c, "oneshot", &p, &t, 1), 1);
        ck_assert_uint_eq(t.trigger, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT);
        /* Disarmed: its entry went to the dead predecessor, and the take says so. */
        ck_assert_uint_eq(t.enabled, 1);
        ck_assert_uint_eq(t.armed, 0);
        expect_nothing(p, 150);
        /* Re-enabled through the new descriptor: the data still waiting is reported. */
        r = (sn_registration_t){ .fd = t.fd, .key = 999, .op = SN_OP_ENABLE,
                                 .filter = t.filter, .trigger = t.trigger };
        ck_assert_int_eq(sn_port_process(p, &r, 1, &e, 1, 2000), 1);
        ck_assert_int_eq(r.result, 0);
        ck_assert_uint_eq(e.key, 3); /* rule 4: the key stays */
        ck_assert_uint_eq(e.events, SN_EVENT_IN);
        close(sv);
        sn_socket_close(c, t.fd);
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
}
END_TEST

/* More sockets than one message carries: batches of at most 253, every one accounted for. */
START_TEST(test_take_in_batches)
{
        enum { N = 600 };
        static int cl[N], sv[N];
        static sn_taken_socket_t t[N + 1];
        static bool seen[N];
        int baseline = test_daemon_fds(&D);
        sn_conn_t *c;
        sn_port_t *p;

        for (int i = 0; i < N; i++) {
                int pair[2];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
                cl[i] = pair[0];
                sv[i] = pair[1];
        }
        predecessor("many", 5000, sv, N, 1000, SN_TRIGGER_LEVEL, false);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(take_all(c, "many", &p, t, N + 1), N);
        for (int i = 0; i < N; i++) {
                uint64_t k = t[i].key - 1000;
                char b;

                ck_assert(t[i].fd >= 0 && k < N && !seen[k]);
                seen[k] = true;
                /* The descriptor is the socket the key names: its peer hears it. */
                ck_assert_int_eq(send(t[i].fd, "z", 1, 0), 1);
                ck_assert_int_eq(recv(cl[k], &b, 1, 0), 1);
        }
        sn_port_close(p); /* linger 5000 ms: kept without an owner; remove it at once */
        ck_assert_int_eq(sn_port_open(c, "many", &p), 0);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        for (int i = 0; i < N; i++) {
                close(t[i].fd);
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
}
END_TEST

START_TEST(test_limits_and_bad_requests)
{
        sn_port_options_t o = { .linger_ms = 60001 };
        sn_conn_t *c;
        sn_port_t *p, *q;
        int fd;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        /* Over --max-linger: refused, nothing created, the name stays free. */
        ck_assert_int_eq(sn_port_create_named_ex(c, "lim", &o, &p), -EDQUOT);
        o.linger_ms = 60000;
        ck_assert_int_eq(sn_port_create_named_ex(c, "lim", &o, &p), 0);
        ck_assert_int_eq(sn_port_set_linger(p, 60001), -EDQUOT);
        ck_assert_int_eq(sn_port_set_linger(p, 10), 0);
        /* A private port cannot linger: nobody could open it again. */
        ck_assert_int_eq(sn_port_create(c, 0, &q), 0);
        ck_assert_int_eq(sn_port_set_linger(q, 10), -EINVAL);
        ck_assert_int_eq(sn_port_take_sockets(q, NULL, 0, NULL), 0);
        ck_assert_int_eq(sn_port_create_named_ex(c, "", &o, &q), -EINVAL);
        ck_assert_int_eq(sn_port_take_sockets(NULL, NULL, 0, NULL), -EINVAL);
        ck_assert_int_eq(sn_port_take_sockets(p, NULL, 1, NULL), -EINVAL);
        sn_port_close(q);
        sn_port_close(p);
        sn_conn_close(c);

        /* Raw: flags must be 0, an unknown port is EBADF, and a version-1 connection does not
         * know these messages. */
        fd = raw_hello(D.path);
        {
                uint8_t buf[64];
                struct snw_port_take tk = { .port = 12345, .max = 1 };

                snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, 5, 0, 0, 0, 0), &tk);
                raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
                expect_reply(fd, SN_MSG_ERROR, 5, EOPNOTSUPP);
        }
        close(fd);
}
END_TEST

START_TEST(test_version2_raw_requests)
{
        uint8_t buf[256];
        struct snw_port_take tk = { .max = 1, .flags = 1 };
        struct snw_port_linger lg = { .linger_ms = 5 };
        int fd = raw_hello2(D.path); /* a client offering 1..2 gets 2 */
        uint32_t port;

        port = raw_port_create(fd, 2, "raw2");
        tk.port = port;
        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, 3, 0, 0, 0, 0), &tk);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
        expect_reply(fd, SN_MSG_PORT_TAKE_REPLY, 3, EINVAL);
        tk.port = port + 1;
        tk.flags = 0;
        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, 4, 0, 0, 0, 0), &tk);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
        expect_reply(fd, SN_MSG_PORT_TAKE_REPLY, 4, EBADF);
        lg.port = port;
        snw_port_linger_encode(sn_msg_begin(buf, SN_MSG_PORT_LINGER, 6, 0, 0, 0, 0), &lg);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_LINGER, 0, 0), NULL, 0);
        expect_reply(fd, SN_MSG_PORT_LINGER_REPLY, 6, 0);
        /* A take with nothing to take: an empty reply without descriptors. */
        tk.port = port;
        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, 7, 0, 0, 0, 0), &tk);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
        expect_reply(fd, SN_MSG_PORT_TAKE_REPLY, 7, 0);
        status_works(fd, 8);
        close(fd);
}
END_TEST

/* Lingering ports count against the user's quotas: a dead client's ports are not free. */
START_TEST(test_lingering_ports_count_against_quota)
{
        struct test_daemon d;
        sn_conn_t *c;
        sn_port_t *p;
        char name[16];

        test_daemon_stop(&D);
        test_daemon_start(&d, (const char *const[]){ "--max-ports-per-user=3", NULL });
        D = d;
        for (int i = 0; i < 3; i++) {
                snprintf(name, sizeof(name), "q%d", i);
                predecessor(name, 5000, NULL, 0, 0, 0, false);
        }
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), -EDQUOT);
        /* Opening one of them again is no new port. */
        ck_assert_int_eq(sn_port_open(c, "q1", &p), 0);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p); /* now it really closes */
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sn_port_close(p);
        sn_conn_close(c);
}
END_TEST

START_TEST(test_reexec_keeps_lingering_port)
{
        int cl, sv;
        sn_taken_socket_t t;
        sn_conn_t *c;
        sn_port_t *p;
        char b;

        tcp_pair(&cl, &sv);
        predecessor("upgrade", 3000, &sv, 1, 11, SN_TRIGGER_LEVEL, true);
        close(sv);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        reexec(c);
        ck_assert_int_eq(send(cl, "q", 1, 0), 1);
        ck_assert_int_eq(take_all(c, "upgrade", &p, &t, 1), 1);
        ck_assert_uint_eq(t.key, 11);
        expect_entry(p, 7, 70);
        expect_entry(p, 11, SN_EVENT_IN);
        ck_assert_int_eq(recv(t.fd, &b, 1, 0), 1);
        sn_socket_close(c, t.fd);
        ck_assert(peer_closed(cl, 2000));
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
}
END_TEST

/* A crash of the daemon while a port lingers: the live store brings it back, ownerless
 * registration, linger time and all. */
START_TEST(test_crash_keeps_lingering_port)
{
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        struct manager m;
        sn_taken_socket_t t;
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv, st;
        char b;

        test_daemon_stop(&D);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&D, NULL);
        tcp_pair(&cl, &sv);
        predecessor("crash", 5000, &sv, 1, 21, SN_TRIGGER_LEVEL, true);
        close(sv);
        manager_sync(&m); /* the journal and box are stored (the last call was answered) */
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        manager_start_daemon(&m, &D, NULL);
        ck_assert(!peer_closed(cl, 100));
        ck_assert_int_eq(send(cl, "c", 1, 0), 1);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(take_all(c, "crash", &p, &t, 1), 1);
        ck_assert_uint_eq(t.key, 21);
        expect_entry(p, 7, 70);
        expect_entry(p, 21, SN_EVENT_IN);
        ck_assert_int_eq(recv(t.fd, &b, 1, 0), 1);
        sn_socket_close(c, t.fd);
        ck_assert(peer_closed(cl, 2000));
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        manager_stop(&m); /* and its environment */
        test_daemon_start(&D, NULL); /* for the fixture */
}
END_TEST

int main(void)
{
        Suite *s = suite_create("linger");
        TCase *tc = tcase_create("handoff");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_lingering_port_is_taken_over);
        tcase_add_test(tc, test_linger_expires);
        tcase_add_test(tc, test_no_linger_keeps_rule_l3);
        tcase_add_test(tc, test_reopened_in_time_stops_the_timer);
        tcase_add_test(tc, test_take_while_creator_alive_takes_nothing);
        tcase_add_test(tc, test_oneshot_taken_must_be_rearmed);
        tcase_add_test(tc, test_take_in_batches);
        tcase_add_test(tc, test_limits_and_bad_requests);
        tcase_add_test(tc, test_version2_raw_requests);
        tcase_add_test(tc, test_lingering_ports_count_against_quota);
        tcase_add_test(tc, test_reexec_keeps_lingering_port);
        tcase_add_test(tc, test_crash_keeps_lingering_port);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

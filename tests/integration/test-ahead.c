/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-ahead.c - PROCESS with AHEAD (flags bit 1), spoken raw on the socket of a real daemon:
 * a dequeue posted ahead is answered with the entries nobody who really waits may take, it
 * takes nothing from a waiting thread below the port's concurrency, it ends with its thread's
 * next dequeue, THREAD_EXIT or PORT_CLOSE (ECANCELED), a second one is refused (EBUSY), a
 * malformed one is refused (EINVAL) without being parked, it takes only its share while other
 * threads run, and a re-exec keeps it.  Posted packets are the entries: they make every
 * outcome deterministic.  Each case ends with the daemon back to its baseline of descriptors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"
#include "tests/helpers/status.h"

#define T1 1001 /* thread ids: any number names a waiter on the wire */
#define T2 1002
#define T3 1003

static struct test_daemon D;
static int baseline;

static void start(void)
{
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}

/* A handshake offering versions 1 to version_max without the rings: the socket transport. */
static int hello(unsigned version_max)
{
        struct snw_hello h = { .magic = SN_PROTO_MAGIC, .version_min = 1,
                               .version_max = (uint16_t)version_max };
        struct snw_hello_reply rep;
        uint8_t buf[256];
        int fd = raw_connect(D.path);

        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &h);
        raw_send(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
        ck_assert_int_eq(raw_recv(fd, buf, sizeof(buf)), sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0));
        snw_hello_reply_decode(sn_msg_body(buf), &rep);
        ck_assert_uint_eq(rep.version, version_max);
        ck_assert_uint_eq(rep.transport, SN_PROTO_TRANSPORT_SOCKET);
        return fd;
}

/* A PROCESS with nitems NONE items (items make an AHEAD call malformed). */
static void process_items(int fd, uint32_t id, uint32_t port, uint32_t timeout_ms,
                          uint32_t max_entries, uint32_t flags, uint32_t thread, uint32_t nitems)
{
        struct snw_process body = { .port = port, .timeout_ms = timeout_ms,
                                    .max_entries = max_entries, .flags = flags,
                                    .thread = thread };
        struct snw_registration it = { .key = 7, .op = SN_OP_NONE, .fd_index = SN_PROTO_NO_FD };
        uint8_t buf[256];
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, nitems, 0),
                                        &body);

        for (uint32_t i = 0; i < nitems; i++)
                p = snw_registration_encode(p, &it);
        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
}

static void process(int fd, uint32_t id, uint32_t port, uint32_t timeout_ms, uint32_t max_entries,
                    uint32_t flags, uint32_t thread)
{
        process_items(fd, id, port, timeout_ms, max_entries, flags, thread, 0);
}

static void post(int fd, uint32_t id, uint32_t port, const uint64_t *keys, uint32_t n)
{
        struct snw_post body = { .port = port };
        uint8_t buf[512];
        uint8_t *p = snw_post_encode(sn_msg_begin(buf, SN_MSG_POST, id, 0, 0, n, 0), &body);

        for (uint32_t i = 0; i < n; i++) {
                struct snw_packet pk = { .key = keys[i], .overlapped = 100 + keys[i] };

                p = snw_packet_encode(p, &pk);
        }
        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
}

static void port_close(int fd, uint32_t id, uint32_t port)
{
        struct snw_port body = { .port = port };
        uint8_t buf[64];

        snw_port_encode(sn_msg_begin(buf, SN_MSG_PORT_CLOSE, id, 0, 0, 0, 0), &body);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_CLOSE, 0, 0), NULL, 0);
}

static void thread_exit(int fd, uint32_t id, uint32_t thread)
{
        struct snw_thread body = { .thread = thread };
        uint8_t buf[64];

        snw_thread_encode(sn_msg_begin(buf, SN_MSG_THREAD_EXIT, id, 0, 0, 0, 0), &body);
        raw_send(fd, buf, sn_msg_size(SN_MSG_THREAD_EXIT, 0, 0), NULL, 0);
}

/* One reply as received: its header, and for a PROCESS_REPLY the keys of its entries. */
struct reply {
        struct snw_header h;
        uint64_t keys[16];
        uint32_t n;
};

static void receive(int fd, struct reply *r)
{
        uint8_t buf[4096];
        const struct sn_msg_desc *d;
        ssize_t len = raw_recv(fd, buf, sizeof(buf));

        ck_assert_int_gt(len, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)len, &r->h, &d), 0);
        r->n = 0;
        if (r->h.type != SN_MSG_PROCESS_REPLY)
                return;
        /* The daemon's reply is input too: no more entries than asked for here. */
        ck_assert_uint_le(r->h.count2, SN_ARRAY_SIZE(r->keys));
        const uint8_t *p = sn_msg_array(buf, d, 2);
        for (uint32_t i = 0; i < r->h.count2; i++) {
                struct snw_entry e;

                p = snw_entry_decode(p, &e);
                ck_assert_uint_eq(e.kind, SN_PROTO_KIND_POSTED);
                ck_assert_uint_eq(e.overlapped, 100 + e.key);
                r->keys[r->n++] = e.key;
        }
}

static void check_process(const struct reply *r, uint32_t id, uint32_t status,
                          const uint64_t *keys, uint32_t n)
{
        ck_assert_uint_eq(r->h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_msg(r->h.id == id, "PROCESS_REPLY for call %u, expected call %u", r->h.id, id);
        ck_assert_msg(r->h.status == status, "call %u: status %u, expected %u", id, r->h.status,
                      status);
        ck_assert_msg(r->n == n, "call %u: %u entries, expected %u", id, r->n, n);
        for (uint32_t i = 0; i < n; i++)
                ck_assert_msg(r->keys[i] == keys[i], "call %u: entry %u is key %llu, expected %llu",
                              id, i, (unsigned long long)r->keys[i],
                              (unsigned long long)keys[i]);
}

/* The next message is the PROCESS_REPLY of call id, with this status and these keys in order. */
static void expect_process(int fd, uint32_t id, uint32_t status, const uint64_t *keys, uint32_t n)
{
        struct reply r;

        receive(fd, &r);
        check_process(&r, id, status, keys, n);
}

/* The next two messages are the reply to a request (type, id: status 0) and the PROCESS_REPLY
 * of call pid, in either order: the daemon does not promise which one leaves first. */
static void expect_pair(int fd, uint16_t type, uint32_t id, uint32_t pid, uint32_t status,
                        const uint64_t *keys, uint32_t n)
{
        bool got_req = false, got_process = false;

        for (int i = 0; i < 2; i++) {
                struct reply r;

                receive(fd, &r);
                if (r.h.type == type && r.h.id == id && !got_req) {
                        ck_assert_uint_eq(r.h.status, 0);
                        got_req = true;
                } else {
                        ck_assert_msg(!got_process, "a second PROCESS_REPLY (call %u)", r.h.id);
                        check_process(&r, pid, status, keys, n);
                        got_process = true;
                }
        }
}

/* Nothing was answered meanwhile: requests are served in order, so a STATUS answered as the
 * next message proves no reply to an earlier request is on its way. */
static void expect_quiet(int fd, uint32_t id)
{
        status_works(fd, id);
}

/* Thread t of fd's connection dequeues key (posted now) and so runs on port. */
static void run_thread(int fd, uint32_t *id, uint32_t port, uint32_t t, uint64_t key)
{
        uint32_t post_id = (*id)++, call = (*id)++;

        post(fd, post_id, port, &key, 1);
        expect_reply(fd, SN_MSG_POST_REPLY, post_id, 0);
        process(fd, call, port, 0, 4, 0, t);
        expect_process(fd, call, 0, &key, 1);
}

static void finish(int *fds, int n)
{
        for (int i = 0; i < n; i++)
                close(fds[i]);
        test_daemon_finish(&D, baseline);
}

/* 1. One thread alone: its call posted ahead waits (nobody else could take the entries, but
 * there are none), then gets the packets of a POST, in order. */
START_TEST(test_ahead_one_thread)
{
        const uint64_t k23[] = { 2, 3 };
        uint32_t id = 10, port;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 1);
        run_thread(fd, &id, port, T1, 1);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_quiet(fd, 21); /* parked, not answered: timeout_ms 0 means nothing to it */
        post(fd, 22, port, k23, 2);
        expect_pair(fd, SN_MSG_POST_REPLY, 22, 20, 0, k23, 2);
        expect_quiet(fd, 23);
        finish(&fd, 1);
}
END_TEST

/* 2. Concurrency 1, reached by thread 1: a waiting thread 2 may not run, so the entry goes to
 * the call thread 1 posted ahead, and thread 2's wait ends with nothing. */
START_TEST(test_ahead_concurrency_reached)
{
        const uint64_t k11 = 11;
        uint32_t id = 10, port;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 1);
        run_thread(fd, &id, port, T1, 10);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        process(fd, 21, port, 300, 4, 0, T2);
        post(fd, 22, port, &k11, 1);
        expect_pair(fd, SN_MSG_POST_REPLY, 22, 20, 0, &k11, 1);
        expect_process(fd, 21, ETIMEDOUT, NULL, 0);
        expect_quiet(fd, 23);
        finish(&fd, 1);
}
END_TEST

/* 3. Concurrency 2, one thread running: thread 2 really waits and may run, so it gets the
 * entry, not the call posted ahead; thread 1's next dequeue then ends that call first. */
START_TEST(test_ahead_waiter_first)
{
        const uint64_t k21 = 21;
        uint32_t id = 10, port;
        struct reply r;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 2);
        run_thread(fd, &id, port, T1, 20);
        /* Thread 2 waits first, so the call posted ahead is the most recent waiter: it still
         * comes after every thread that really waits. */
        process(fd, 21, port, (uint32_t)test_timeout_ms(5000), 4, 0, T2);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_quiet(fd, 22);
        post(fd, 23, port, &k21, 1);
        expect_pair(fd, SN_MSG_POST_REPLY, 23, 21, 0, &k21, 1);
        expect_quiet(fd, 24); /* the call posted ahead still waits */
        process(fd, 25, port, 0, 4, 0, T1);
        receive(fd, &r);
        check_process(&r, 20, ECANCELED, NULL, 0);
        expect_process(fd, 25, ETIMEDOUT, NULL, 0);
        expect_quiet(fd, 26);
        finish(&fd, 1);
}
END_TEST

/* A packet posted now is dequeued by a fresh thread's call, answered as the next message: no
 * call posted ahead is parked on port to take it (it would be answered instead, or first). */
static void expect_none_parked(int fd, uint32_t *id, uint32_t port, uint32_t thread, uint64_t key)
{
        uint32_t post_id = (*id)++, call = (*id)++;

        post(fd, post_id, port, &key, 1);
        expect_reply(fd, SN_MSG_POST_REPLY, post_id, 0);
        process(fd, call, port, 0, 4, 0, thread);
        expect_process(fd, call, 0, &key, 1);
}

/* 4. Refusals: a second call posted ahead (EBUSY, the first stays parked), and malformed ones
 * (EINVAL), none of which is parked. */
START_TEST(test_ahead_refused)
{
        const uint64_t k31 = 31;
        uint32_t id = 100, port, port2;
        int fd, fd2;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 1);
        run_thread(fd, &id, port, T1, 30);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        process(fd, 21, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_process(fd, 21, EBUSY, NULL, 0);
        expect_quiet(fd, 22);
        /* The first is still parked and gets the next packet. */
        post(fd, 23, port, &k31, 1);
        expect_pair(fd, SN_MSG_POST_REPLY, 23, 20, 0, &k31, 1);

        /* Thread 1 still runs (posting ahead kept its place); each malformed call is refused. */
        process_items(fd, 30, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1, 1);
        expect_process(fd, 30, EINVAL, NULL, 0);
        process(fd, 31, port, 0, 4, SN_PROTO_PROCESS_AHEAD | SN_PROTO_PROCESS_PART, T1);
        expect_process(fd, 31, EINVAL, NULL, 0);
        /* The rest of that call (its last part) is read and dropped, never answered. */
        process(fd, 31, port, 0, 4, 0, T1);
        process(fd, 32, port, 0, 0, SN_PROTO_PROCESS_AHEAD, T1);
        expect_process(fd, 32, EINVAL, NULL, 0);
        expect_quiet(fd, 33);
        /* Thread 1's own dequeue of the next packet: had any been parked, it would be answered
         * first (with the packet, or ECANCELED). */
        expect_none_parked(fd, &id, port, T1, 32);

        /* On a connection that chose version 2. */
        fd2 = hello(2);
        port2 = raw_port_create_ex(fd2, 2, NULL, 1);
        run_thread(fd2, &id, port2, T1, 33);
        process(fd2, 40, port2, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_process(fd2, 40, EINVAL, NULL, 0);
        expect_quiet(fd2, 41);
        expect_none_parked(fd2, &id, port2, T1, 34);
        finish((int[]){ fd, fd2 }, 2);
}
END_TEST

/* 5. THREAD_EXIT of the thread ends its call posted ahead. */
START_TEST(test_ahead_thread_exit)
{
        uint32_t id = 10, port;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 1);
        run_thread(fd, &id, port, T1, 50);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_quiet(fd, 21);
        thread_exit(fd, 22, T1);
        expect_pair(fd, SN_MSG_THREAD_EXIT_REPLY, 22, 20, ECANCELED, NULL, 0);
        expect_quiet(fd, 23);
        expect_none_parked(fd, &id, port, T2, 51);
        finish(&fd, 1);
}
END_TEST

/* 6. Closing the port answers its call posted ahead, as it answers every wait on it. */
START_TEST(test_ahead_port_close)
{
        uint32_t id = 10, port;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 1);
        run_thread(fd, &id, port, T1, 60);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_quiet(fd, 21);
        port_close(fd, 22, port);
        expect_pair(fd, SN_MSG_PORT_CLOSE_REPLY, 22, 20, ECANCELED, NULL, 0);
        expect_quiet(fd, 23);
        finish(&fd, 1);
}
END_TEST

/* While two threads run, a call posted ahead takes its share only: max_entries divided by the
 * running threads; the rest stays queued for whichever thread is free first.  Once answered, it
 * is not answered again by its thread's next dequeue. */
START_TEST(test_ahead_share)
{
        const uint64_t keys[] = { 72, 73, 74, 75 };
        uint32_t id = 10, port;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 2);
        run_thread(fd, &id, port, T1, 70);
        run_thread(fd, &id, port, T2, 71);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_quiet(fd, 21);
        post(fd, 22, port, keys, 4);
        expect_pair(fd, SN_MSG_POST_REPLY, 22, 20, 0, keys, 2);
        expect_quiet(fd, 23);
        process(fd, 24, port, 0, 4, 0, T2);
        expect_process(fd, 24, 0, keys + 2, 2);
        process(fd, 25, port, 0, 4, 0, T1);
        expect_process(fd, 25, ETIMEDOUT, NULL, 0);
        expect_quiet(fd, 26);
        finish(&fd, 1);
}
END_TEST

/* SIGUSR2, then waits until the daemon (same PID) answers from its new image. */
static void reexec(void)
{
        long long before, t0 = now_ms();
        sn_conn_t *c;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        before = test_status_number(c, "reexecs");
        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        while (test_status_number(c, "reexecs") == before) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "no re-exec within 5 s");
                usleep(5000);
        }
        sn_conn_close(c);
}

/* 7. A re-exec keeps a call posted ahead, and its thread's running place. */
START_TEST(test_ahead_reexec)
{
        const uint64_t k40 = 40;
        uint32_t id = 10, port;
        int fd;

        start();
        fd = hello(3);
        port = raw_port_create_ex(fd, 2, NULL, 1);
        run_thread(fd, &id, port, T1, 39);
        process(fd, 20, port, 0, 4, SN_PROTO_PROCESS_AHEAD, T1);
        expect_quiet(fd, 21);
        reexec();
        expect_quiet(fd, 22);
        /* Thread 2 waits: concurrency 1 is still reached by thread 1, so the packet goes to the
         * call thread 1 posted ahead, not to thread 2. */
        process(fd, 23, port, 200, 4, 0, T2);
        post(fd, 24, port, &k40, 1);
        expect_pair(fd, SN_MSG_POST_REPLY, 24, 20, 0, &k40, 1);
        expect_process(fd, 23, ETIMEDOUT, NULL, 0);
        expect_quiet(fd, 25);
        finish(&fd, 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("ahead");
        TCase *tc = tcase_create("ahead");

        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_ahead_one_thread);
        tcase_add_test(tc, test_ahead_concurrency_reached);
        tcase_add_test(tc, test_ahead_waiter_first);
        tcase_add_test(tc, test_ahead_refused);
        tcase_add_test(tc, test_ahead_thread_exit);
        tcase_add_test(tc, test_ahead_port_close);
        tcase_add_test(tc, test_ahead_reexec);
        tcase_add_test(tc, test_ahead_share);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

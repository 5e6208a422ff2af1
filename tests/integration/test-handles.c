/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-handles.c - registration handles (protocol version 3) against a real daemon: every
 * socket entry carries the handle of its registration, and an operation that names the
 * handle reaches that registration without the descriptor (no fstat in the client, even with
 * the client's descriptor closed).  A handle names one registration of one port and nothing
 * else: after its registration ended, on another port, from another client, after its slot was
 * reused, or forged on the wire, it reaches nothing and says so.  Handles survive a re-exec;
 * after a resume on a daemon that lost the state the library falls back on the descriptor.
 * The public sn_entry_t keeps overlapped 0 for socket entries, and clients of versions 1 and 2
 * never see a handle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/manager.h"
#include "tests/helpers/raw.h"
#include "tests/helpers/status.h"

static struct test_daemon D;

static void setup(void)
{
        test_daemon_start_resumable(&D);
}

static void teardown(void)
{
        test_daemon_stop_if_running(&D);
}

static const uint8_t ONESHOT = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT;

/* A connection (path NULL: $SOCKNOTIFY_SOCKET, for a resume) with one port. */
static sn_port_t *open_port(const char *path, sn_conn_t **ret_conn)
{
        sn_port_t *p;

        ck_assert_int_eq(sn_conn_open(path, ret_conn), 0);
        ck_assert_int_eq(sn_port_create(*ret_conn, 0, &p), 0);
        return p;
}

/* Closes the n socket pairs, the port and its connection. */
static void finish(sn_conn_t *c, sn_port_t *p, int *cl, int *sv, int n)
{
        for (int i = 0; i < n; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        sn_port_close(p);
        sn_conn_close(c);
}

static sn_registration_ex_t by_handle(uint64_t handle, int fd, uint8_t op)
{
        return (sn_registration_ex_t){
                .reg = { .fd = fd, .op = op, .filter = SN_REGISTER_EVENT_IN, .trigger = ONESHOT },
                .handle = handle,
        };
}

static void enable(sn_port_t *p, int fd, uint64_t key, uint8_t trigger)
{
        sn_registration_t r = { .fd = fd, .key = key, .op = SN_OP_ENABLE,
                                .filter = SN_REGISTER_EVENT_IN, .trigger = trigger };

        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
}

/* One entry, which must be key's, with its handle. */
static uint64_t take(sn_port_t *p, uint64_t key)
{
        sn_entry_ex_t e;

        ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &e, 1, (uint32_t)test_timeout_ms(2000)),
                         1);
        ck_assert_uint_eq(e.entry.key, key);
        ck_assert_uint_eq(e.entry.overlapped, 0);
        return e.handle;
}

/* Makes n socket pairs; registers the first nfire ONESHOT with keys 0.. and fires each once,
 * taking its entry, so that h[i] is its handle and it is disarmed. */
static void pairs_fired(sn_port_t *p, int *cl, int *sv, int n, int nfire, uint64_t *h)
{
        for (int i = 0; i < n; i++)
                tcp_pair(&cl[i], &sv[i]);
        for (int i = 0; i < nfire; i++) {
                enable(p, sv[i], (uint64_t)i, ONESHOT);
                ck_assert_int_eq(send(cl[i], "a", 1, 0), 1);
                h[i] = take(p, (uint64_t)i);
        }
}

/* Whether the peer of fd closed: end of file, or a reset (it closed with data unread). */
static bool connection_ended(int fd)
{
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        char c;
        ssize_t n;

        if (poll(&pf, 1, test_timeout_ms(2000)) <= 0)
                return false;
        n = recv(fd, &c, 1, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void expect_nothing(sn_port_t *p, int ms)
{
        sn_entry_ex_t e;
        int n = sn_port_process_ex(p, NULL, 0, &e, 1, (uint32_t)ms);

        ck_assert_msg(n == -ETIMEDOUT, "expected nothing, got %d (key %llu)", n,
                      n > 0 ? (unsigned long long)e.entry.key : 0ull);
}

/* One registration operation by handle; returns its result. */
static int32_t apply(sn_port_t *p, uint64_t handle, int fd, uint8_t op)
{
        sn_registration_ex_t r = by_handle(handle, fd, op);

        ck_assert_int_eq(sn_port_process_ex(p, &r, 1, NULL, 0, 0), 0);
        return r.reg.result;
}

START_TEST(test_entries_carry_handles)
{
        int cl[2], sv[2];
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_ex_t e[4];
        sn_entry_t plain[4];
        uint64_t h[2] = { 0, 0 };

        p = open_port(D.path, &c);
        for (int i = 0; i < 2; i++) {
                tcp_pair(&cl[i], &sv[i]);
                enable(p, sv[i], 10 + (uint64_t)i, SN_TRIGGER_LEVEL);
                ck_assert_int_eq(send(cl[i], "x", 1, 0), 1);
        }
        ck_assert_int_eq(sn_port_post(p, 99, 7, 0x1234), 0);
        ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, e, 4, 1000), 3);
        for (int i = 0; i < 3; i++) {
                if (e[i].entry.kind == SN_ENTRY_POSTED) {
                        /* A posted packet: its own overlapped, no handle. */
                        ck_assert_uint_eq(e[i].entry.key, 99);
                        ck_assert_uint_eq(e[i].entry.overlapped, 0x1234);
                        ck_assert_uint_eq(e[i].handle, 0);
                        continue;
                }
                ck_assert_uint_eq(e[i].entry.overlapped, 0);
                ck_assert_uint_ne(e[i].handle, 0);
                h[e[i].entry.key - 10] = e[i].handle;
        }
        ck_assert_uint_ne(h[0], 0);
        ck_assert_uint_ne(h[1], 0);
        ck_assert_uint_ne(h[0], h[1]);
        /* A registration keeps its handle from one entry to the next (level: again). */
        ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, e, 4, 1000), 2);
        for (int i = 0; i < 2; i++)
                ck_assert_uint_eq(e[i].handle, h[e[i].entry.key - 10]);
        /* sn_port_process() hands out what it always did: overlapped 0. */
        ck_assert_int_eq(sn_port_dequeue(p, plain, 4, 1000), 2);
        for (int i = 0; i < 2; i++) {
                ck_assert_uint_eq(plain[i].kind, SN_ENTRY_SOCKET);
                ck_assert_uint_eq(plain[i].overlapped, 0);
        }
        finish(c, p, cl, sv, 2);
}
END_TEST

/* The re-arm by handle works where the descriptor no longer does: the client closed its copy
 * with close() (rule L1: the daemon's copy keeps the connection and the registration). */
START_TEST(test_rearm_needs_no_descriptor)
{
        int cl, sv, fds = test_daemon_fds(&D);
        sn_conn_t *c;
        sn_port_t *p;
        sn_registration_t byfd;
        uint64_t h;
        sn_entry_ex_t e;

        p = open_port(D.path, &c);
        tcp_pair(&cl, &sv);
        enable(p, sv, 5, ONESHOT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        h = take(p, 5);
        expect_nothing(p, 50); /* fired: disarmed */
        ck_assert_int_eq(close(sv), 0);
        byfd = (sn_registration_t){ .fd = sv, .key = 5, .op = SN_OP_ENABLE,
                                    .filter = SN_REGISTER_EVENT_IN, .trigger = ONESHOT };
        ck_assert_int_eq(sn_port_process(p, &byfd, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(byfd.result, -ENOTSOCK);
        for (int round = 0; round < 3; round++) {
                ck_assert_int_eq(apply(p, h, -1, SN_OP_ENABLE), 0);
                ck_assert_uint_eq(take(p, 5), h);
                expect_nothing(p, 20);
        }
        /* Re-armed together with the next dequeue, as a one-shot server does. */
        {
                sn_registration_ex_t r = by_handle(h, -1, SN_OP_ENABLE);

                ck_assert_int_eq(sn_port_process_ex(p, &r, 1, &e, 1, 1000), 1);
                ck_assert_int_eq(r.reg.result, 0);
                ck_assert_uint_eq(e.entry.key, 5);
        }
        /* REMOVE by handle: the last entry, without a handle; the daemon's copy is closed, so
         * the peer sees the connection end (a reset: "a" was never read). */
        ck_assert_int_eq(apply(p, h, -1, SN_OP_REMOVE), 0);
        ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.entry.key, 5);
        ck_assert_uint_eq(e.entry.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
        ck_assert_uint_eq(e.handle, 0);
        ck_assert(connection_ended(cl));
        close(cl);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_wait_fds(&D, fds, 3000), fds);
}
END_TEST

START_TEST(test_stale_handles_reach_nothing)
{
        int cl[3], sv[3];
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_ex_t e;
        uint64_t h1, h2;

        p = open_port(D.path, &c);
        for (int i = 0; i < 3; i++)
                tcp_pair(&cl[i], &sv[i]);
        enable(p, sv[0], 1, ONESHOT);
        ck_assert_int_eq(send(cl[0], "a", 1, 0), 1);
        h1 = take(p, 1);
        ck_assert_int_eq(apply(p, h1, sv[0], SN_OP_REMOVE), 0);
        ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.entry.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
        /* Gone: without a descriptor to fall back on, each operation says so. */
        ck_assert_int_eq(apply(p, h1, -1, SN_OP_ENABLE), -ESTALE);
        ck_assert_int_eq(apply(p, h1, -1, SN_OP_DISABLE), -ENOENT);
        ck_assert_int_eq(apply(p, h1, -1, SN_OP_REMOVE), -ENOENT);
        /* New registrations take the freed slot: the old handle reaches none of them. */
        enable(p, sv[1], 2, ONESHOT);
        enable(p, sv[2], 3, ONESHOT);
        ck_assert_int_eq(apply(p, h1, -1, SN_OP_DISABLE), -ENOENT);
        ck_assert_int_eq(apply(p, h1, -1, SN_OP_ENABLE), -ESTALE);
        ck_assert_int_eq(send(cl[1], "b", 1, 0), 1);
        ck_assert_int_eq(send(cl[2], "c", 1, 0), 1);
        h2 = 0;
        for (int k = 0; k < 2; k++) {
                ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &e, 1, 1000), 1);
                ck_assert(e.entry.key == 2 || e.entry.key == 3);
                ck_assert_uint_ne(e.handle, h1);
                if (e.entry.key == 2)
                        h2 = e.handle;
        }
        ck_assert_uint_ne(h2, 0);
        /* An ENABLE with a stale handle and the descriptor registers the socket again, as
         * sn_port_process() would, with the key it gives. */
        {
                sn_registration_ex_t r = by_handle(h1, sv[0], SN_OP_ENABLE);

                r.reg.key = 11;
                ck_assert_int_eq(sn_port_process_ex(p, &r, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(r.reg.result, 0);
        }
        ck_assert_uint_ne(take(p, 11), h1); /* "a" is still unread: it fires at once */
        finish(c, p, cl, sv, 3);
}
END_TEST

/* A handle belongs to its port: another port of the same client, or another client, reaches
 * nothing with it, and cannot tell it from a handle that never existed. */
START_TEST(test_handles_are_the_ports_own)
{
        int cl, sv;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pa2, *pb;
        uint64_t h;

        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &b), 0);
        ck_assert_int_eq(sn_port_create(a, 0, &pa), 0);
        ck_assert_int_eq(sn_port_create(a, 0, &pa2), 0);
        ck_assert_int_eq(sn_port_create(b, 0, &pb), 0);
        tcp_pair(&cl, &sv);
        enable(pa, sv, 8, ONESHOT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        h = take(pa, 8);
        for (int k = 0; k < 2; k++) {
                sn_port_t *other = k ? pb : pa2;

                ck_assert_int_eq(apply(other, h, -1, SN_OP_ENABLE), -ESTALE);
                ck_assert_int_eq(apply(other, h, -1, SN_OP_DISABLE), -ENOENT);
                ck_assert_int_eq(apply(other, h, -1, SN_OP_REMOVE), -ENOENT);
                ck_assert_int_eq(apply(other, h ^ 1, -1, SN_OP_ENABLE), -ESTALE);
                expect_nothing(other, 20);
        }
        /* Untouched: still disarmed after its entry, and re-armed by its own port. */
        expect_nothing(pa, 50);
        ck_assert_int_eq(apply(pa, h, -1, SN_OP_ENABLE), 0);
        ck_assert_uint_eq(take(pa, 8), h);
        close(cl);
        close(sv);
        sn_port_close(pb);
        sn_port_close(pa2);
        sn_port_close(pa);
        sn_conn_close(b);
        sn_conn_close(a);
}
END_TEST

/* Collects call k of c, waiting for it (the descriptor of sn_conn_fd() polls readable). */
static sn_call_t *collect(sn_conn_t *c)
{
        struct pollfd pf = { .fd = sn_conn_fd(c), .events = POLLIN };
        sn_call_t *k = NULL;
        long long t0 = now_ms();

        for (;;) {
                int r = sn_conn_collect(c, &k);

                ck_assert_int_ge(r, 0);
                if (r == 1)
                        return k;
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(3000), "no call completed");
                poll(&pf, 1, 100);
        }
}

/* The re-enable without waiting, by handle: no descriptor needed either; the entries of a
 * submitted dequeue come with their handles. */
START_TEST(test_submit_by_handle)
{
        int cl, sv;
        sn_conn_t *c;
        sn_port_t *p;
        sn_call_t *k;
        const sn_registration_t *regs;
        const sn_entry_t *ents;
        const uint64_t *hs;
        sn_registration_ex_t r;
        uint64_t h;

        p = open_port(D.path, &c);
        tcp_pair(&cl, &sv);
        enable(p, sv, 40, ONESHOT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        ck_assert_int_eq(sn_port_submit_ex(p, NULL, 0, 1, 1000, 0, NULL, &k), 0);
        k = collect(c);
        ck_assert_int_eq(sn_call_result(k, &ents, NULL), 1);
        ck_assert_uint_eq(ents[0].key, 40);
        ck_assert_uint_eq(ents[0].overlapped, 0);
        ck_assert_int_eq(sn_call_handles(k, &hs), 1);
        h = hs[0];
        ck_assert_uint_ne(h, 0);
        sn_call_free(k);
        ck_assert_int_eq(close(sv), 0);
        for (int round = 0; round < 3; round++) {
                r = by_handle(h, -1, SN_OP_ENABLE);
                ck_assert_int_eq(sn_port_submit_ex(p, &r, 1, 0, 0, 0, NULL, &k), 0);
                k = collect(c);
                ck_assert_int_eq(sn_call_result(k, NULL, &regs), 0);
                ck_assert_int_eq(regs[0].result, 0);
                ck_assert_int_eq(sn_call_handles(k, &hs), 0);
                sn_call_free(k);
                ck_assert_uint_eq(take(p, 40), h);
        }
        /* A stale handle is reported, not retried. */
        ck_assert_int_eq(apply(p, h, -1, SN_OP_REMOVE), 0);
        ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &(sn_entry_ex_t){ 0 }, 1, 1000), 1);
        r = by_handle(h, -1, SN_OP_ENABLE);
        ck_assert_int_eq(sn_port_submit_ex(p, &r, 1, 0, 0, 0, NULL, &k), 0);
        k = collect(c);
        ck_assert_int_eq(sn_call_result(k, NULL, &regs), 0);
        ck_assert_int_eq(regs[0].result, -ESTALE);
        sn_call_free(k);
        /* sn_port_submit() calls have no handles. */
        ck_assert_int_eq(sn_port_submit(p, NULL, 0, 1, 0, 0, NULL, &k), 0);
        k = collect(c);
        ck_assert_int_eq(sn_call_handles(k, &hs), 0);
        sn_call_free(k);
        close(cl);
        sn_port_close(p);
        sn_conn_close(c);
}
END_TEST

/* ---- the wire ------------------------------------------------------------------------------ */

/* Sends PROCESS (id) on port with n items and the fds, asking for max_entries without waiting;
 * reads its reply into results[] (n) and entries[] (at most 8); returns the entry count. */
static uint32_t raw_process(int fd, uint32_t id, uint32_t port, const struct snw_registration *it,
                            uint32_t n, const int *fds, unsigned nfds, uint32_t max_entries,
                            uint32_t *results, struct snw_entry *entries)
{
        static uint8_t buf[65536];
        struct snw_process body = { .port = port, .max_entries = max_entries };
        const struct sn_msg_desc *d;
        struct snw_header h;
        const uint8_t *q;
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, (uint16_t)nfds,
                                                     n, 0),
                                        &body);
        ssize_t len;

        for (uint32_t i = 0; i < n; i++)
                p = snw_registration_encode(p, &it[i]);
        raw_send(fd, buf, (size_t)(p - buf), fds, nfds);
        len = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_gt(len, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)len, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_uint_eq(h.id, id);
        ck_assert(h.status == 0 || h.status == ETIMEDOUT);
        ck_assert_uint_eq(h.count, n);
        ck_assert_uint_le(h.count2, 8);
        q = sn_msg_array(buf, d, 1);
        for (uint32_t i = 0; i < n; i++)
                results[i] = sn_get_u32(q + 4 * i);
        q = sn_msg_array(buf, d, 2);
        for (uint32_t i = 0; i < h.count2; i++)
                q = snw_entry_decode(q, &entries[i]);
        return h.count2;
}

/* Version 3 on the wire: the handle in overlapped, items by handle (fd_index 0xfffffffe, the
 * handle in dev, ino 0); forged handles by the thousand reach nothing and harm nothing.  A
 * version 2 client sees overlapped 0 and may not name handles. */
START_TEST(test_wire_handles_and_forgeries)
{
        int fds = test_daemon_fds(&D), cl, sv, raw = raw_hello_version(D.path, 3), old = raw_hello2(D.path);
        uint32_t port = raw_port_create(raw, 2, NULL), oport = raw_port_create(old, 2, NULL);
        struct snw_registration it = { .key = 4, .op = SN_OP_ENABLE, .fd_index = 0,
                                       .filter = SN_REGISTER_EVENT_IN, .trigger = ONESHOT,
                                       .client_fd = 3 };
        static struct snw_registration forged[1024];
        uint32_t res[1024];
        struct snw_entry e[8];
        uint64_t h;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        ck_assert_uint_eq(raw_process(raw, 3, port, &it, 1, &sv, 1, 1, res, e), 1);
        ck_assert_uint_eq(res[0], 0);
        ck_assert_uint_eq(e[0].key, 4);
        ck_assert_uint_eq(e[0].kind, SN_PROTO_KIND_SOCKET);
        h = e[0].overlapped;
        ck_assert_uint_ne(h, 0);
        ck_assert_uint_eq(h & ~SN_PROTO_HANDLE_MASK, 0);
        /* Forgeries: random handles, handles with the top byte, a slot's neighbours, ino set. */
        for (int round = 0; round < 8; round++) {
                for (uint32_t i = 0; i < 1024; i++) {
                        uint64_t v;

                        ck_assert_int_eq(getrandom(&v, sizeof(v), 0), (ssize_t)sizeof(v));
                        switch (i % 4) {
                        case 0: break;
                        case 1: v = h | (v & ~SN_PROTO_HANDLE_MASK) | 1ull << 56; break;
                        case 2: v = h + ((uint64_t)(i % 7) + 1) * (1ull << 32); break;
                        default: v = (h & 0xffffffffull) ^ (v & 0xffffull); break;
                        }
                        forged[i] = (struct snw_registration){
                                .dev = v, .op = (uint8_t)(1u << (i % 3)),
                                .filter = SN_REGISTER_EVENT_IN, .trigger = ONESHOT,
                                .fd_index = SN_PROTO_BY_HANDLE,
                        };
                }
                forged[0] = (struct snw_registration){ .dev = h, .ino = 1, .op = SN_OP_ENABLE,
                                                       .filter = SN_REGISTER_EVENT_IN,
                                                       .trigger = ONESHOT,
                                                       .fd_index = SN_PROTO_BY_HANDLE };
                ck_assert_uint_eq(raw_process(raw, 10 + (uint32_t)round, port, forged, 1024, NULL,
                                              0, 0, res, e),
                                  0);
                ck_assert_uint_eq(res[0], EINVAL);
                for (uint32_t i = 1; i < 1024; i++)
                        ck_assert_msg(res[i] == ESTALE || res[i] == ENOENT,
                                      "forged handle %#llx (op %u) gave %u",
                                      (unsigned long long)forged[i].dev, forged[i].op, res[i]);
        }
        /* Still disarmed (no forgery re-armed it), and the real handle does. */
        it = (struct snw_registration){ .dev = h, .op = SN_OP_ENABLE, .fd_index = SN_PROTO_BY_HANDLE,
                                        .filter = SN_REGISTER_EVENT_IN, .trigger = ONESHOT };
        ck_assert_uint_eq(raw_process(raw, 30, port, NULL, 0, NULL, 0, 1, res, e), 0);
        ck_assert_uint_eq(raw_process(raw, 31, port, &it, 1, NULL, 0, 1, res, e), 1);
        ck_assert_uint_eq(res[0], 0);
        ck_assert_uint_eq(e[0].overlapped, h);
        /* Version 2: no handle in the entry, and no item by handle. */
        {
                int cl2, sv2;
                struct snw_registration it2 = { .key = 6, .op = SN_OP_ENABLE, .fd_index = 0,
                                                .filter = SN_REGISTER_EVENT_IN,
                                                .trigger = SN_TRIGGER_LEVEL, .client_fd = 3 };

                tcp_pair(&cl2, &sv2);
                ck_assert_int_eq(send(cl2, "b", 1, 0), 1);
                ck_assert_uint_eq(raw_process(old, 3, oport, &it2, 1, &sv2, 1, 1, res, e), 1);
                ck_assert_uint_eq(res[0], 0);
                ck_assert_uint_eq(e[0].key, 6);
                ck_assert_uint_eq(e[0].overlapped, 0);
                it2 = (struct snw_registration){ .dev = h, .op = SN_OP_DISABLE,
                                                 .fd_index = SN_PROTO_BY_HANDLE };
                ck_assert_uint_eq(raw_process(old, 4, oport, &it2, 1, NULL, 0, 0, res, e), 0);
                ck_assert_uint_eq(res[0], EINVAL);
                close(cl2);
                close(sv2);
        }
        status_works(raw, 40);
        status_works(old, 40);
        close(raw);
        close(old);
        close(cl);
        close(sv);
        ck_assert_int_eq(test_daemon_wait_fds(&D, fds, 3000), fds);
}
END_TEST

/* ---- restarts ------------------------------------------------------------------------------ */

/* SIGUSR2, then waits until the daemon (same PID) answers from its new image. */
static void reexec(sn_conn_t *c)
{
        long long before = test_status_number(c, "reexecs");
        long long t0 = now_ms();

        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        while (test_status_number(c, "reexecs") == before) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "no re-exec within 5 s");
                usleep(5000);
        }
}

/* Registrations made on a thread of their own, so that a daemon that never answers fails the
 * test in bounded time instead of hanging it. */
struct enabler {
        sn_port_t *port;
        sn_registration_t *regs;
        uint32_t n;
        int r;
};

static void *enable_thread(void *arg)
{
        struct enabler *en = arg;

        en->r = sn_port_process(en->port, en->regs, en->n, NULL, 0, 0);
        return NULL;
}

static void enable_within(sn_port_t *p, sn_registration_t *regs, uint32_t n, int ms)
{
        struct enabler en = { .port = p, .regs = regs, .n = n, .r = 1 };
        struct timespec until;
        pthread_t th;

        ck_assert_int_eq(pthread_create(&th, NULL, enable_thread, &en), 0);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += test_timeout_ms(ms) / 1000 + 1;
        ck_assert_msg(pthread_timedjoin_np(th, NULL, &until) == 0,
                      "the daemon did not answer %u registrations", n);
        ck_assert_int_eq(en.r, 0);
        for (uint32_t i = 0; i < n; i++)
                ck_assert_int_eq(regs[i].result, 0);
}

/*
 * A restore gives each registration its old slot (its handle), and those slots stay on the
 * daemon's chain of free slots.  Freeing such a slot put it on the chain a second time: the
 * chain became a loop through taken slots, and the next registrations after a re-exec and a
 * REMOVE made the daemon spin forever looking for a free slot.  Now: registrations come and go
 * after a re-exec as before it, each with a handle of its own.
 */
START_TEST(test_restored_slots_are_recycled)
{
        enum { OLD = 4, NEW = 16 };
        int cl[OLD + NEW], sv[OLD + NEW];
        sn_registration_t r[NEW];
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_ex_t e;
        uint64_t h[OLD + NEW];

        p = open_port(D.path, &c);
        pairs_fired(p, cl, sv, OLD + NEW, OLD, h);
        reexec(c);
        /* Every other one goes: their slots, claimed by the restore, are freed. */
        for (int i = 1; i < OLD; i += 2) {
                ck_assert_int_eq(apply(p, h[i], -1, SN_OP_REMOVE), 0);
                ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &e, 1, 1000), 1);
                ck_assert_uint_eq(e.entry.key, (uint64_t)i);
                ck_assert_uint_eq(e.entry.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
        }
        for (int i = 0; i < NEW; i++)
                r[i] = (sn_registration_t){ .fd = sv[OLD + i], .key = (uint64_t)(OLD + i),
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = ONESHOT };
        enable_within(p, r, NEW, 3000);
        /* Each new one fires with a handle no other live registration has. */
        for (int i = OLD; i < OLD + NEW; i++) {
                ck_assert_int_eq(send(cl[i], "b", 1, 0), 1);
                h[i] = take(p, (uint64_t)i);
                for (int k = 0; k < i; k++)
                        if (k >= OLD || !(k & 1))
                                ck_assert_uint_ne(h[i], h[k]);
        }
        /* The kept ones still answer to their handles, without descriptors. */
        for (int i = 0; i < OLD; i += 2) {
                ck_assert_int_eq(apply(p, h[i], -1, SN_OP_ENABLE), 0);
                ck_assert_uint_eq(take(p, (uint64_t)i), h[i]);
        }
        for (int i = 0; i < OLD + NEW; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        sn_port_close(p);
        sn_conn_close(c);
}
END_TEST

START_TEST(test_handles_survive_reexec)
{
        int cl[2], sv[2];
        sn_conn_t *c;
        sn_port_t *p;
        uint64_t h[2];

        p = open_port(D.path, &c);
        for (int i = 0; i < 2; i++) {
                tcp_pair(&cl[i], &sv[i]);
                enable(p, sv[i], 20 + (uint64_t)i, ONESHOT);
                ck_assert_int_eq(send(cl[i], "a", 1, 0), 1);
                h[i] = take(p, 20 + (uint64_t)i);
        }
        reexec(c);
        expect_nothing(p, 50);
        /* Without descriptors to fall back on: the handles themselves still work. */
        for (int i = 0; i < 2; i++) {
                ck_assert_int_eq(apply(p, h[i], -1, SN_OP_ENABLE), 0);
                ck_assert_uint_eq(take(p, 20 + (uint64_t)i), h[i]);
        }
        finish(c, p, cl, sv, 2);
}
END_TEST

/* A new daemon without the state (SIGKILL, no store): the library resumes, and a handle of the
 * lost daemon is never sent to the new one; the descriptor is used instead. */
START_TEST(test_resume_falls_back_on_the_descriptor)
{
        int cl, sv, st;
        sn_conn_t *c;
        sn_port_t *p;
        uint64_t h;

        p = open_port(NULL, &c);
        tcp_pair(&cl, &sv);
        enable(p, sv, 30, ONESHOT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        h = take(p, 30);
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);
        /* The first call notices the end, resumes, and is answered by the new daemon. */
        for (int tries = 0;; tries++) {
                int r = sn_port_post(p, 9, 1, 0);

                if (r == 0)
                        break;
                ck_assert_int_eq(r, -EIO);
                ck_assert_int_lt(tries, 3);
        }
        ck_assert_uint_eq(take(p, 9), 0);
        /* The resume made the one-shot again disarmed (it fired); the handle is the lost
         * daemon's: without a descriptor it cannot be used, with one it is. */
        ck_assert_int_eq(apply(p, h, -1, SN_OP_ENABLE), -ESTALE);
        ck_assert_int_eq(apply(p, h, sv, SN_OP_ENABLE), 0);
        h = take(p, 30);
        ck_assert_uint_ne(h, 0);
        ck_assert_int_eq(apply(p, h, -1, SN_OP_ENABLE), 0); /* the new daemon's own */
        ck_assert_uint_eq(take(p, 30), h);
        finish(c, p, &cl, &sv, 1);
}
END_TEST


/* ---- hostile and unusual callers --------------------------------------------------------- */

/* Applies one operation by handle in a process of its own (a second holder of the named port
 * name) and returns its result, or a value far from any errno on a failure on the way. */
static int32_t apply_in_child(const char *name, uint64_t handle, uint8_t op)
{
        int pfd[2], st;
        int32_t res = 1000;
        pid_t pid;

        ck_assert_int_eq(pipe(pfd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *c;
                sn_port_t *p;
                sn_registration_ex_t r = by_handle(handle, -1, op);

                close(pfd[0]);
                if (sn_conn_open(D.path, &c) < 0 || sn_port_open(c, name, &p) < 0)
                        _exit(2);
                res = sn_port_process_ex(p, &r, 1, NULL, 0, 0) < 0 ? 2000 : r.reg.result;
                if (write(pfd[1], &res, sizeof(res)) != (ssize_t)sizeof(res))
                        _exit(3);
                sn_port_close(p);
                sn_conn_close(c);
                _exit(0);
        }
        close(pfd[1]);
        ck_assert_int_eq(read(pfd[0], &res, sizeof(res)), (ssize_t)sizeof(res));
        close(pfd[0]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        return res;
}

/*
 * A handle names a registration of a port, whoever holds the port: another process that opened
 * the named port reaches it as the creator does (as it would by the socket's identity), and
 * after a handoff (the creator gone, sn_port_take_sockets() by a new process) the handle the
 * old owner was given still names the same registration for the new owner, and its entries
 * carry it unchanged.  A private port of the same processes reaches nothing with it.
 */
START_TEST(test_handles_on_shared_and_handed_over_ports)
{
        const sn_port_options_t opt = { .linger_ms = 60000 };
        int cl, sv;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pb, *priv;
        sn_taken_socket_t taken[2];
        sn_take_info_t info;
        uint64_t h;

        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_port_create_named_ex(a, "hshared", &opt, &pa), 0);
        tcp_pair(&cl, &sv);
        enable(pa, sv, 40, ONESHOT);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        h = take(pa, 40);
        /* Another process holding the port re-arms it by the handle alone. */
        ck_assert_int_eq(apply_in_child("hshared", h, SN_OP_ENABLE), 0);
        ck_assert_uint_eq(take(pa, 40), h);
        ck_assert_int_eq(apply_in_child("hshared", h ^ (1ull << 32), SN_OP_ENABLE), -ESTALE);
        ck_assert_int_eq(apply_in_child("hshared", h ^ (1ull << 32), SN_OP_DISABLE), -ENOENT);
        expect_nothing(pa, 50);
        /* The creator goes; a new owner takes the socket over. */
        sn_port_close(pa);
        sn_conn_close(a);
        close(sv);
        ck_assert_int_eq(sn_conn_open(D.path, &b), 0);
        ck_assert_int_eq(sn_port_open(b, "hshared", &pb), 0);
        ck_assert_int_eq(sn_port_create(b, 0, &priv), 0);
        ck_assert_int_eq(sn_port_take_sockets(pb, taken, 2, &info), 1);
        ck_assert_int_eq(info.remaining, 0);
        ck_assert_uint_eq(taken[0].key, 40);
        ck_assert_int_eq(taken[0].armed, 0);
        ck_assert_int_ge(taken[0].fd, 0);
        ck_assert_int_eq(apply(priv, h, -1, SN_OP_ENABLE), -ESTALE);
        ck_assert_int_eq(apply(priv, h, -1, SN_OP_REMOVE), -ENOENT);
        ck_assert_int_eq(apply(pb, h, -1, SN_OP_ENABLE), 0);
        ck_assert_uint_eq(take(pb, 40), h);
        /* The new owner's descriptor and the handle agree: REMOVE by handle ends it. */
        ck_assert_int_eq(apply(pb, h, taken[0].fd, SN_OP_REMOVE), 0);
        {
                sn_entry_ex_t e;

                ck_assert_int_eq(sn_port_process_ex(pb, NULL, 0, &e, 1, 1000), 1);
                ck_assert_uint_eq(e.entry.key, 40);
                ck_assert_uint_eq(e.entry.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
        }
        ck_assert_int_eq(apply(pb, h, -1, SN_OP_ENABLE), -ESTALE);
        close(taken[0].fd);
        close(cl);
        sn_port_close(priv);
        sn_port_close(pb);
        sn_conn_close(b);
}
END_TEST

/*
 * One call with more new sockets than one message may carry (it goes in parts, the daemon
 * applies it at its last part) and, between them, items by handle and forged handles: each
 * item's result is its own, the handles re-arm their registrations, the new sockets are
 * registered, and no descriptor is left over in the daemon.
 */
START_TEST(test_multipart_call_with_handles)
{
        enum { OLD = 8, NEW = 300, N = NEW + 2 * OLD };
        int fds0 = test_daemon_fds(&D);
        static int cl[OLD + NEW], sv[OLD + NEW];
        static sn_registration_ex_t r[N];
        static int32_t want[N];
        sn_conn_t *c;
        sn_port_t *p;
        uint64_t h[OLD];
        bool seen[OLD + NEW] = { false };
        sn_entry_ex_t e[64];
        int got = 0;

        p = open_port(D.path, &c);
        pairs_fired(p, cl, sv, OLD + NEW, OLD, h);
        /* Handles spread among the new sockets, each after a forgery of its neighbour's
         * generation; the last one goes in the last part. */
        for (int i = 0, k = 0, n = 0; n < N; n++) {
                if (n % 19 == 0 && k < 2 * OLD) {
                        uint64_t hk = h[k / 2];

                        r[n] = by_handle(k & 1 ? hk : hk + (1ull << 32), -1, SN_OP_ENABLE);
                        want[n] = k & 1 ? 0 : -ESTALE;
                        k++;
                        continue;
                }
                r[n] = (sn_registration_ex_t){
                        .reg = { .fd = sv[OLD + i], .key = (uint64_t)(OLD + i),
                                 .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                 .trigger = ONESHOT },
                };
                i++;
        }
        ck_assert_int_eq(sn_port_process_ex(p, r, N, NULL, 0, 0), 0);
        for (int n = 0; n < N; n++)
                ck_assert_msg(r[n].reg.result == want[n], "item %d: %d, not %d", n,
                              r[n].reg.result, want[n]);
        /* The old ones fire at once (their "a" is unread), the new ones as data comes. */
        for (int i = OLD; i < OLD + NEW; i++)
                ck_assert_int_eq(send(cl[i], "b", 1, 0), 1);
        while (got < OLD + NEW) {
                int n = sn_port_process_ex(p, NULL, 0, e, 64, (uint32_t)test_timeout_ms(2000));

                ck_assert_int_gt(n, 0);
                for (int k = 0; k < n; k++) {
                        uint64_t key = e[k].entry.key;

                        ck_assert_uint_lt(key, OLD + NEW);
                        ck_assert(!seen[key]);
                        seen[key] = true;
                        if (key < OLD)
                                ck_assert_uint_eq(e[k].handle, h[key]);
                        got++;
                }
        }
        expect_nothing(p, 50);
        sn_port_close(p);
        sn_conn_close(c);
        for (int i = 0; i < OLD + NEW; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        ck_assert_int_eq(test_daemon_wait_fds(&D, fds0, 5000), fds0);
}
END_TEST

/* A client floods its own port with forged handles through the library's default transport
 * (the rings where the daemon offers them): the handles of its own registrations but for the
 * generation, of another client's registration exactly, and random ones.  Every forgery is
 * answered as unknown, its own registrations stay disarmed, and another client re-arming by
 * handle meanwhile loses nothing. */
struct rearmer {
        sn_port_t *port;
        int cl, rounds;
        uint64_t h;
        int failed;
};

static void *rearm_thread(void *arg)
{
        struct rearmer *w = arg;

        for (int i = 0; i < w->rounds; i++) {
                sn_registration_ex_t r = by_handle(w->h, -1, SN_OP_ENABLE);
                sn_entry_ex_t e;

                if (send(w->cl, "r", 1, 0) != 1 ||
                    sn_port_process_ex(w->port, &r, 1, &e, 1,
                                       (uint32_t)test_timeout_ms(2000)) != 1 ||
                    r.reg.result != 0 || e.handle != w->h) {
                        w->failed = i + 1;
                        return NULL;
                }
        }
        return NULL;
}

START_TEST(test_forged_handle_flood)
{
        enum { BATCH = 512, ROUNDS = 40 };
        int cl[2], sv[2];
        sn_conn_t *attacker, *victim;
        sn_port_t *pa, *pv;
        static sn_registration_ex_t r[BATCH];
        struct rearmer w;
        pthread_t th;
        uint64_t mine, theirs;
        char b;

        ck_assert_int_eq(sn_conn_open(D.path, &attacker), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &victim), 0);
        ck_assert_int_eq(sn_port_create(attacker, 0, &pa), 0);
        ck_assert_int_eq(sn_port_create(victim, 0, &pv), 0);
        for (int i = 0; i < 2; i++)
                tcp_pair(&cl[i], &sv[i]);
        enable(pa, sv[0], 1, ONESHOT);
        enable(pv, sv[1], 2, ONESHOT);
        ck_assert_int_eq(send(cl[0], "a", 1, 0), 1);
        ck_assert_int_eq(send(cl[1], "v", 1, 0), 1);
        mine = take(pa, 1);
        theirs = take(pv, 2);
        ck_assert_int_eq(recv(sv[1], &b, 1, 0), 1);
        w = (struct rearmer){ .port = pv, .cl = cl[1], .rounds = ROUNDS, .h = theirs };
        ck_assert_int_eq(pthread_create(&th, NULL, rearm_thread, &w), 0);
        for (int round = 0; round < ROUNDS; round++) {
                for (uint32_t i = 0; i < BATCH; i++) {
                        uint64_t v;

                        ck_assert_int_eq(getrandom(&v, sizeof(v), 0), (ssize_t)sizeof(v));
                        switch (i % 4) {
                        case 0: v &= SN_PROTO_HANDLE_MASK; break;
                        case 1: v = mine + ((v % 0xfffffe) + 1) * (1ull << 32); break;
                        case 2: v = theirs; break;
                        default: v = (mine & 0xffffffffull) | (v & 0xffffff00000000ull); break;
                        }
                        v &= SN_PROTO_HANDLE_MASK;
                        if (v == mine)
                                v ^= 1ull << 40;
                        r[i] = by_handle(v, -1, (uint8_t)(1u << (i % 3)));
                }
                ck_assert_int_eq(sn_port_process_ex(pa, r, BATCH, NULL, 0, 0), 0);
                for (uint32_t i = 0; i < BATCH; i++)
                        ck_assert_msg(r[i].reg.result ==
                                              (r[i].reg.op == SN_OP_ENABLE ? -ESTALE : -ENOENT),
                                      "forged handle %#llx (op %u) gave %d",
                                      (unsigned long long)r[i].handle, r[i].reg.op,
                                      r[i].reg.result);
        }
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_msg(w.failed == 0, "the victim's re-arm %d failed", w.failed);
        /* Nothing re-armed the attacker's own one-shot; its handle still does. */
        expect_nothing(pa, 50);
        ck_assert_int_eq(apply(pa, mine, -1, SN_OP_ENABLE), 0);
        ck_assert_uint_eq(take(pa, 1), mine);
        for (int i = 0; i < 2; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        sn_port_close(pv);
        sn_port_close(pa);
        sn_conn_close(victim);
        sn_conn_close(attacker);
}
END_TEST

/*
 * A crash (SIGKILL) under a service manager's descriptor store: the new daemon restores the
 * state from the store, and the connections are the same, so the handles clients hold still
 * name their registrations: re-armed by handle without a descriptor, they fire with the same
 * handle; the slots they kept are recycled like any other afterwards.
 */
START_TEST(test_crash_restore_keeps_handles)
{
        enum { NSOCK = 6 };
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        int cl[NSOCK + 4], sv[NSOCK + 4], st = 0;
        uint64_t h[NSOCK];
        sn_registration_t r[4];
        sn_entry_ex_t e;
        char mdir[] = "/tmp/sn-manager-XXXXXX";

        test_daemon_stop(&D); /* this test's daemon runs under the store */
        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, NULL);
        p = open_port(d.path, &c);
        pairs_fired(p, cl, sv, NSOCK + 4, NSOCK, h);
        manager_sync(&m);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
        manager_start_daemon(&m, &d, NULL);
        expect_nothing(p, 50);
        for (int i = 0; i < NSOCK; i++) {
                ck_assert_int_eq(apply(p, h[i], -1, SN_OP_ENABLE), 0);
                ck_assert_uint_eq(take(p, (uint64_t)i), h[i]);
        }
        /* Half of them go, new ones come: the kept slots are recycled (the daemon answers). */
        for (int i = 0; i < NSOCK; i += 2) {
                ck_assert_int_eq(apply(p, h[i], -1, SN_OP_REMOVE), 0);
                ck_assert_int_eq(sn_port_process_ex(p, NULL, 0, &e, 1, 1000), 1);
                ck_assert_uint_eq(e.entry.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
        }
        for (int i = 0; i < 4; i++)
                r[i] = (sn_registration_t){ .fd = sv[NSOCK + i], .key = 100 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = ONESHOT };
        enable_within(p, r, 4, 3000);
        for (int i = 0; i < 4; i++) {
                uint64_t hn;

                ck_assert_int_eq(send(cl[NSOCK + i], "b", 1, 0), 1);
                hn = take(p, 100 + (uint64_t)i);
                for (int k = 1; k < NSOCK; k += 2)
                        ck_assert_uint_ne(hn, h[k]);
        }
        for (int i = 1; i < NSOCK; i += 2) {
                ck_assert_int_eq(apply(p, h[i], -1, SN_OP_ENABLE), 0);
                ck_assert_uint_eq(take(p, (uint64_t)i), h[i]);
        }
        for (int i = 0; i < NSOCK + 4; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        sn_port_close(p);
        sn_conn_close(c);
        test_daemon_stop(&d);
        manager_stop(&m);
        unsetenv("FDSTORE");
        rmdir(mdir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("handles");
        TCase *tc = tcase_create("handles");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_entries_carry_handles);
        tcase_add_test(tc, test_rearm_needs_no_descriptor);
        tcase_add_test(tc, test_stale_handles_reach_nothing);
        tcase_add_test(tc, test_handles_are_the_ports_own);
        tcase_add_test(tc, test_submit_by_handle);
        tcase_add_test(tc, test_wire_handles_and_forgeries);
        tcase_add_test(tc, test_handles_survive_reexec);
        tcase_add_test(tc, test_resume_falls_back_on_the_descriptor);
        tcase_add_test(tc, test_restored_slots_are_recycled);
        tcase_add_test(tc, test_handles_on_shared_and_handed_over_ports);
        tcase_add_test(tc, test_multipart_call_with_handles);
        tcase_add_test(tc, test_forged_handle_flood);
        tcase_add_test(tc, test_crash_restore_keeps_handles);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

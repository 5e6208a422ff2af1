/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-async.c - submitted calls and the pollable descriptor (sn_port_submit, sn_conn_fd,
 * sn_conn_collect, sn_call_*, sn_conn_waiter_exit) against a real socknotifyd: readiness of the
 * descriptor, results identical to the synchronous call, caller-chosen waiter identities under
 * the concurrency limit, a blocking thread reading an event loop's replies, many calls in
 * flight, abandoned calls, the daemon going away, and closing the connection with calls in
 * every state.  Each test starts its own daemon and ends by checking its descriptor count and
 * clean exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;
static sn_conn_t *C;
static sn_port_t *P;
static int baseline;
/* Ports of a connection that a test closes with them open: closing a port first would complete
 * the calls that wait on it, and no call on a port may follow sn_conn_close(), which does not
 * free port objects.  Kept reachable here for the leak checkers (volatile: never read, the
 * stores would otherwise be optimized away); enough for every test of one run with CK_FORK=no. */
static sn_port_t *volatile kept[8];
static unsigned nkept;

static void setup(void)
{
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        ck_assert_int_eq(sn_port_create(C, 1, &P), 0);
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

static bool readable(int fd, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* Waits (poll on the connection's descriptor) for the next completed call. */
static sn_call_t *next_call(int timeout_ms)
{
        long long end = now_ms() + test_timeout_ms(timeout_ms);
        int fd = sn_conn_fd(C);
        sn_call_t *k = NULL;

        ck_assert_int_ge(fd, 0);
        for (;;) {
                int r = sn_conn_collect(C, &k);

                ck_assert_int_ge(r, 0);
                if (r == 1)
                        return k;
                if (now_ms() >= end)
                        return NULL;
                readable(fd, (int)(end - now_ms()));
        }
}

START_TEST(test_timeout_and_post)
{
        int fd = sn_conn_fd(C);
        const sn_entry_t *e;
        sn_call_t *k, *got;
        int marker;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(sn_conn_fd(C), fd); /* the same descriptor every time */
        ck_assert(!readable(fd, 0));
        ck_assert_int_eq(sn_conn_collect(C, &got), 0);

        /* A poll that finds nothing: the descriptor becomes readable with -ETIMEDOUT. */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 4, 0, 0, &marker, &k), 0);
        got = next_call(5000);
        ck_assert_ptr_eq(got, k);
        ck_assert_ptr_eq(sn_call_user(got), &marker);
        ck_assert_int_eq(sn_call_result(got, &e, NULL), -ETIMEDOUT);
        sn_call_free(got);
        ck_assert_int_eq(sn_conn_collect(C, &got), 0);
        ck_assert(!readable(fd, 0));

        /* A wait without limit: not readable until a packet is posted. */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 4, SN_INFINITE, SN_WAITER_MIN, NULL, &k), 0);
        ck_assert_int_eq(sn_call_result(k, &e, NULL), -EINVAL); /* not collected yet */
        ck_assert_ptr_null(next_call(200));
        ck_assert_int_eq(sn_port_post(P, 0x1234567890ull, 77, 0xfeedull), 0);
        got = next_call(5000);
        ck_assert_ptr_eq(got, k);
        ck_assert_int_eq(sn_call_result(got, &e, NULL), 1);
        ck_assert_uint_eq(e[0].key, 0x1234567890ull);
        ck_assert_uint_eq(e[0].events, 77);
        ck_assert_uint_eq(e[0].overlapped, 0xfeedull);
        ck_assert_uint_eq(e[0].kind, SN_ENTRY_POSTED);
        sn_call_free(got);
        ck_assert_int_eq(sn_conn_waiter_exit(C, SN_WAITER_MIN), 0);
}
END_TEST

START_TEST(test_invalid)
{
        sn_call_t *k = NULL;

        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 0, 10, 0, NULL, &k), -EINVAL);
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, 0, 5, NULL, &k), -EINVAL);
        ck_assert_int_eq(sn_port_submit(P, NULL, 1, 1, 0, 0, NULL, &k), -EINVAL);
        ck_assert_int_eq(sn_port_submit(NULL, NULL, 0, 1, 0, 0, NULL, &k), -EINVAL);
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, 0, 0, NULL, NULL), -EINVAL);
        {
                sn_limits_t lim;
                uint32_t n;
                sn_registration_t *many;
                int a, b;

                /* More registrations than one daemon call takes: refused before sending. */
                ck_assert_int_eq(sn_conn_limits(C, &lim), 0);
                n = (lim.max_message - 52) / 4 + 1;
                tcp_pair(&a, &b);
                many = calloc(n, sizeof(*many));
                ck_assert_ptr_nonnull(many);
                for (uint32_t i = 0; i < n; i++)
                        many[i] = (sn_registration_t){ .fd = a, .op = SN_OP_DISABLE };
                ck_assert_int_eq(sn_port_submit(P, many, n, 0, 0, 0, NULL, &k), -E2BIG);
                free(many);
                close(a);
                close(b);
        }
        ck_assert_ptr_null(k);
        ck_assert_int_eq(sn_conn_collect(C, NULL), -EINVAL);
        ck_assert_int_eq(sn_conn_waiter_exit(C, 7), -EINVAL);
        ck_assert_int_eq(sn_conn_fd(NULL), -EINVAL);
        ck_assert_int_eq(sn_call_result(NULL, NULL, NULL), -EINVAL);
        ck_assert_ptr_null(sn_call_user(NULL));
        ck_assert_ptr_null(sn_call_free(NULL));
}
END_TEST

START_TEST(test_registrations)
{
        sn_registration_t regs[3];
        const sn_registration_t *res;
        const sn_entry_t *e;
        int cli, srv, pipefd[2];
        sn_call_t *k;
        char c = 'x';

        tcp_pair(&cli, &srv);
        ck_assert_int_eq(pipe(pipefd), 0);
        ck_assert_int_eq(send(cli, &c, 1, 0), 1);
        regs[0] = (sn_registration_t){ .fd = srv, .key = 42, .filter = SN_REGISTER_EVENT_IN,
                                        .op = SN_OP_ENABLE, .trigger = SN_TRIGGER_LEVEL };
        regs[1] = (sn_registration_t){ .fd = pipefd[0], .key = 43, .filter = SN_REGISTER_EVENT_IN,
                                        .op = SN_OP_ENABLE, .trigger = SN_TRIGGER_LEVEL };
        regs[2] = (sn_registration_t){ .fd = cli, .op = SN_OP_REMOVE };
        /* Registration and dequeue in one call, as ProcessSocketNotifications. */
        ck_assert_int_eq(sn_port_submit(P, regs, 3, 8, 5000, 0, NULL, &k), 0);
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, &e, &res), 1);
        ck_assert_int_eq(res[0].result, 0);
        ck_assert_int_eq(res[1].result, -ENOTSOCK);
        ck_assert_int_eq(res[2].result, -ENOENT);
        ck_assert_int_eq(regs[0].result, 0); /* the caller's array is not written */
        ck_assert_uint_eq(e[0].key, 42);
        ck_assert_uint_eq(e[0].events, SN_EVENT_IN);
        sn_call_free(k);
        ck_assert_int_eq(recv(srv, &c, 1, 0), 1); /* unread data would make the close a reset */
        /* The library learned the registration: sn_socket_close drops the daemon's copy, so
         * the peer sees the close. */
        ck_assert_int_eq(sn_socket_close(C, srv), 0);
        ck_assert(peer_closed(cli, 5000));
        close(cli);
        close(pipefd[0]);
        close(pipefd[1]);
}
END_TEST

/* One submitted call of regs (no dequeue), collected: returns the result of its first item. */
static int submit_one(sn_port_t *port, sn_registration_t reg)
{
        const sn_registration_t *res;
        sn_call_t *k;
        int r;

        ck_assert_int_eq(sn_port_submit(port, &reg, 1, 0, 0, 0, NULL, &k), 0);
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, NULL, &res), 0);
        r = res[0].result;
        sn_call_free(k);
        return r;
}

/*
 * A submitted re-enable of a socket the daemon holds for this connection names it by identity,
 * without its descriptor (a store into the submission ring, not a descriptor transfer).  Shown
 * by the one case where that matters: another connection removed the registration, so the
 * daemon no longer knows the socket and answers -ESTALE; the library then forgets it, and the
 * ENABLE submitted again passes the descriptor and registers the socket anew.  (A call that
 * passed its descriptor every time would have succeeded at once.)
 */
START_TEST(test_reenable_by_identity)
{
        sn_registration_t reg;
        sn_conn_t *c2;
        sn_port_t *p1, *p2;
        sn_entry_t e;
        int cli, srv;
        char c = 'x';

        tcp_pair(&cli, &srv);
        ck_assert_int_eq(sn_port_create_named(C, "reenable", 4, &p1), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_open(c2, "reenable", &p2), 0);
        reg = (sn_registration_t){ .fd = srv, .key = 7, .filter = SN_REGISTER_EVENT_IN,
                                   .op = SN_OP_ENABLE,
                                   .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };
        ck_assert_int_eq(submit_one(p1, reg), 0);
        ck_assert_int_eq(send(cli, &c, 1, 0), 1);
        ck_assert_int_eq(sn_port_dequeue(p1, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, 7);
        /* Re-armed without waiting, by identity: delivered again. */
        ck_assert_int_eq(submit_one(p1, reg), 0);
        ck_assert_int_eq(sn_port_dequeue(p1, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, 7);
        /* The other connection removes it, and takes its REMOVE entry: the registration is
         * gone from the daemon. */
        ck_assert_int_eq(sn_port_process(p2, &(sn_registration_t){ .fd = srv,
                                                                   .op = SN_OP_REMOVE },
                                         1, NULL, 0, 0),
                         0);
        ck_assert_int_eq(sn_port_dequeue(p2, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.events, SN_EVENT_REMOVE);
        ck_assert_int_eq(submit_one(p1, reg), -ESTALE);
        ck_assert_int_eq(submit_one(p1, reg), 0);
        ck_assert_int_eq(sn_port_dequeue(p1, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, 7);
        ck_assert_uint_eq(e.events, SN_EVENT_IN);
        ck_assert_int_eq(recv(srv, &c, 1, 0), 1);
        ck_assert_int_eq(sn_socket_close(C, srv), 0);
        ck_assert(peer_closed(cli, 5000));
        close(cli);
        sn_port_close(p2);
        sn_port_close(p1);
        sn_conn_close(c2);
}
END_TEST

/* The descriptor asked for after a call was submitted still becomes readable when that call's
 * reply comes, through whichever transport (the library arms it then). */
START_TEST(test_fd_after_submit)
{
        sn_port_t *p1, *p2;
        const sn_entry_t *e;
        sn_conn_t *c2;
        sn_call_t *k;
        int fd;

        ck_assert_int_eq(sn_port_create_named(C, "late", 4, &p1), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_open(c2, "late", &p2), 0);
        ck_assert_int_eq(sn_port_submit(p1, NULL, 0, 1, SN_INFINITE, SN_WAITER_MIN, NULL, &k), 0);
        fd = sn_conn_fd(C);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(sn_port_post(p2, 5, 0, 0), 0);
        ck_assert(readable(fd, test_timeout_ms(5000)));
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, &e, NULL), 1);
        ck_assert_uint_eq(e[0].key, 5);
        sn_call_free(k);
        sn_port_close(p2);
        sn_conn_close(c2);
        sn_port_close(p1);
}
END_TEST

START_TEST(test_waiter_identities)
{
        const uint32_t A = SN_WAITER_MIN + 1, B = SN_WAITER_MIN + 2;
        const sn_entry_t *e;
        sn_call_t *k;

        /* Two waiters of one OS thread count as two under concurrency 1. */
        ck_assert_int_eq(sn_port_post(P, 1, 0, 0), 0);
        ck_assert_int_eq(sn_port_post(P, 2, 0, 0), 0);
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, 0, A, NULL, &k), 0);
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, &e, NULL), 1);
        ck_assert_uint_eq(e[0].key, 1);
        sn_call_free(k);
        /* A runs: B gets nothing although a packet is queued. */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, 0, B, NULL, &k), 0);
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, NULL, NULL), -ETIMEDOUT);
        sn_call_free(k);
        /* B parks; A's end lets it run. */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE, B, NULL, &k), 0);
        ck_assert_ptr_null(next_call(200));
        ck_assert_int_eq(sn_conn_waiter_exit(C, A), 0);
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, &e, NULL), 1);
        ck_assert_uint_eq(e[0].key, 2);
        sn_call_free(k);
        ck_assert_int_eq(sn_conn_waiter_exit(C, B), 0);
}
END_TEST

struct blocker {
        sn_port_t *port;
        int r;
        sn_entry_t e;
};

static void *blocking_dequeue(void *arg)
{
        struct blocker *b = arg;

        b->r = sn_port_dequeue(b->port, &b->e, 1, 10000);
        return NULL;
}

START_TEST(test_blocking_thread_reads_for_the_loop)
{
        struct blocker b = { 0 };
        sn_port_t *P2;
        pthread_t t;
        sn_call_t *k;
        const sn_entry_t *e;

        ck_assert_int_eq(sn_port_create(C, 1, &P2), 0);
        b.port = P2;
        ck_assert_int_eq(pthread_create(&t, NULL, blocking_dequeue, &b), 0);
        usleep(100000); /* the thread now reads the connection, blocked */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, 10000, SN_WAITER_MIN, NULL, &k), 0);
        usleep(50000);
        ck_assert_int_eq(sn_port_post(P, 9, 0, 0), 0);
        ck_assert_ptr_eq(next_call(5000), k);
        ck_assert_int_eq(sn_call_result(k, &e, NULL), 1);
        ck_assert_uint_eq(e[0].key, 9);
        sn_call_free(k);
        ck_assert_int_eq(sn_port_post(P2, 10, 0, 0), 0);
        pthread_join(t, NULL);
        ck_assert_int_eq(b.r, 1);
        ck_assert_uint_eq(b.e.key, 10);
        sn_port_close(P2);
}
END_TEST

START_TEST(test_many_in_flight)
{
        enum { N = 200 };
        sn_call_t *k[N];
        bool seen[N] = { false };
        sn_port_t *Pn;

        ck_assert_int_eq(sn_port_create(C, N, &Pn), 0);
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(sn_port_submit(Pn, NULL, 0, 1, 20000, SN_WAITER_MIN + (uint32_t)i,
                                                (void *)(intptr_t)i, &k[i]),
                                 0);
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(sn_port_post(Pn, (uint64_t)i, 0, 0), 0);
        for (int n = 0; n < N; n++) {
                sn_call_t *got = next_call(10000);
                const sn_entry_t *e;
                int idx;

                ck_assert_ptr_nonnull(got);
                idx = (int)(intptr_t)sn_call_user(got);
                ck_assert_ptr_eq(got, k[idx]);
                ck_assert(!seen[idx]);
                seen[idx] = true;
                ck_assert_int_eq(sn_call_result(got, &e, NULL), 1);
                ck_assert_uint_lt(e[0].key, N);
                sn_call_free(got);
        }
        ck_assert_ptr_null(next_call(100));
        sn_port_close(Pn);
}
END_TEST

START_TEST(test_abandoned_and_closed)
{
        sn_call_t *k, *k2, *k3;

        /* Freed before its reply: freed when the reply comes, never handed out. */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE, SN_WAITER_MIN, NULL, &k), 0);
        ck_assert_ptr_null(sn_call_free(k));
        ck_assert_int_eq(sn_port_post(P, 1, 0, 0), 0);
        ck_assert_ptr_null(next_call(300));
        /* Port closed under a waiting call: -ECANCELED. */
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE, SN_WAITER_MIN + 1, NULL, &k2),
                         0);
        usleep(50000);
        ck_assert_int_eq(sn_port_close(P), 0);
        P = NULL;
        ck_assert_ptr_eq(next_call(5000), k2);
        ck_assert_int_eq(sn_call_result(k2, NULL, NULL), -ECANCELED);
        sn_call_free(k2);
        /* Calls still outstanding at sn_conn_close() are freed by it (ASan/valgrind check). */
        ck_assert_int_eq(sn_port_create(C, 1, &P), 0);
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE, SN_WAITER_MIN + 2, NULL, &k3),
                         0);
        (void)k3;
}
END_TEST

/* Closes C with its ports still open (see kept), so that calls waiting in the daemon are
 * outstanding at sn_conn_close(). */
static void close_with_ports_open(sn_port_t *other)
{
        ck_assert_uint_le(nkept + (other ? 2 : 1), sizeof(kept) / sizeof(kept[0]));
        kept[nkept++] = P;
        if (other)
                kept[nkept++] = other;
        P = NULL;
        C = sn_conn_close(C);
}

/* sn_conn_close() with submitted calls in every state: completed and not collected, collected
 * and not freed, freed before their reply (abandoned), and waiting in the daemon.  It frees each
 * once: before, a call still waiting was freed and then its request, on the connection's
 * pending list, walked and freed again (ASan: heap-use-after-free; valgrind: invalid read). */
START_TEST(test_close_with_calls_in_every_state)
{
        enum { N = 6 };
        sn_call_t *done[N], *waiting[N], *first;
        sn_port_t *P2;
        int fd = sn_conn_fd(C);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(sn_port_create(C, N, &P2), 0);
        /* Polls that complete at once, each with the packet posted before it. */
        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(sn_port_post(P2, (uint64_t)i, 0, 0), 0);
                ck_assert_int_eq(sn_port_submit(P2, NULL, 0, 1, 0, SN_WAITER_MIN + (uint32_t)i,
                                                NULL, &done[i]),
                                 0);
        }
        first = next_call(5000);
        ck_assert_ptr_nonnull(first); /* collected, never freed */
        /* A synchronous call reads the replies that came before its own: the other polls are
         * now completed and wait on the done list. */
        ck_assert_int_eq(sn_port_post(P2, 99, 0, 0), 0);
        ck_assert(readable(fd, 0));
        /* Waits without limit: their replies never come before the close. */
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE,
                                                SN_WAITER_MIN + 100 + (uint32_t)i, NULL,
                                                &waiting[i]),
                                 0);
        /* Freed by the application first: one completed, two still waiting. */
        for (int i = 0; i < N; i++) {
                if (done[i] != first) {
                        ck_assert_ptr_null(sn_call_free(done[i]));
                        break;
                }
        }
        ck_assert_ptr_null(sn_call_free(waiting[0]));
        ck_assert_ptr_null(sn_call_free(waiting[N - 1]));
        close_with_ports_open(P2);
}
END_TEST

struct poller {
        int pollfd;   /* the connection's descriptor */
        int wake;     /* read end of a pipe: what ends the poll */
        pid_t tid;
        int r;
};

static void *poll_conn(void *arg)
{
        struct poller *w = arg;
        struct pollfd p[2] = { { .fd = w->pollfd, .events = POLLIN },
                               { .fd = w->wake, .events = POLLIN } };

        __atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
        w->r = poll(p, 2, test_timeout_ms(20000));
        return NULL;
}

static bool in_poll(long nr)
{
#ifdef SYS_poll
        if (nr == SYS_poll)
                return true;
#endif
        return nr == SYS_ppoll;
}

/* The connection closes while a submitted call waits in the daemon and another thread is
 * blocked polling the connection's descriptor (the application's event loop): the call is freed
 * once.  The close need not wake the poller: its own pipe does. */
START_TEST(test_close_while_polled)
{
        struct poller w = { .pollfd = sn_conn_fd(C) };
        long long end = now_ms() + test_timeout_ms(5000);
        int wake[2];
        pthread_t t;
        sn_call_t *k;

        ck_assert_int_ge(w.pollfd, 0);
        ck_assert_int_eq(pipe(wake), 0);
        w.wake = wake[0];
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE, SN_WAITER_MIN, NULL, &k), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, poll_conn, &w), 0);
        while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE) ||
               !in_poll(test_thread_syscall(w.tid))) {
                ck_assert_msg(now_ms() < end, "the poller never blocked in poll()");
                sched_yield();
        }
        close_with_ports_open(NULL);
        ck_assert_int_eq(write(wake[1], "x", 1), 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_ge(w.r, 1);
        close(wake[0]);
        close(wake[1]);
}
END_TEST

/* After the daemon was killed and the session resumed on a new one: calls that failed with -EIO
 * (one collected, the others not, one of them freed) and calls waiting in the new daemon (one
 * freed before its reply) are all freed once by sn_conn_close(). */
START_TEST(test_close_after_resume)
{
        enum { N = 4 };
        sn_call_t *old[N], *fresh[2], *got;
        int st;

        sn_port_close(P);
        C = sn_conn_close(C);
        setenv("SOCKNOTIFY_RECONNECT_MS", "60000", 1); /* a slow machine starts a daemon late */
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        unsetenv("SOCKNOTIFY_RECONNECT_MS");
        ck_assert_int_eq(sn_port_create(C, 1, &P), 0);
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE,
                                                SN_WAITER_MIN + (uint32_t)i, NULL, &old[i]),
                                 0);
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);
        /* Collecting notices the end and resumes: every call submitted before fails with -EIO. */
        got = next_call(10000);
        ck_assert_ptr_nonnull(got);
        ck_assert_int_eq(sn_call_result(got, NULL, NULL), -EIO);
        ck_assert(readable(sn_conn_fd(C), 0)); /* the others wait to be collected */
        for (int i = 0; i < N; i++) {
                if (old[i] != got) {
                        ck_assert_ptr_null(sn_call_free(old[i]));
                        break;
                }
        }
        for (int i = 0; i < 2; i++)
                ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE,
                                                SN_WAITER_MIN + 10 + (uint32_t)i, NULL, &fresh[i]),
                                 0);
        ck_assert_ptr_null(sn_call_free(fresh[0]));
        close_with_ports_open(NULL);
        /* teardown counts the descriptors of a daemon that never had a client: a fresh one. */
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}
END_TEST

START_TEST(test_daemon_goes_away)
{
        sn_call_t *k, *got;
        long long t0;
        int r;

        /* Without a resume (SOCKNOTIFY_RECONNECT_MS=0, read by sn_conn_open): the call
         * completes at once instead of after the resume window. */
        sn_port_close(P);
        sn_conn_close(C);
        setenv("SOCKNOTIFY_RECONNECT_MS", "0", 1);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        unsetenv("SOCKNOTIFY_RECONNECT_MS");
        ck_assert_int_eq(sn_port_create(C, 1, &P), 0);
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, SN_INFINITE, SN_WAITER_MIN, NULL, &k), 0);
        usleep(50000);
        t0 = now_ms();
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        ck_assert(readable(sn_conn_fd(C) >= 0 ? sn_conn_fd(C) : -1, 5000));
        got = next_call(5000);
        ck_assert_ptr_eq(got, k);
        ck_assert_msg(now_ms() - t0 < test_timeout_ms(1000), "completed after %lld ms",
                      now_ms() - t0);
        r = sn_call_result(got, NULL, NULL);
        ck_assert_msg(r == -ESHUTDOWN || r == -ECONNRESET, "result %d", r);
        sn_call_free(got);
        /* Once lost, later calls fail at once. */
        ck_assert_int_eq(sn_conn_collect(C, &got), -ECONNRESET);
        ck_assert_int_eq(sn_port_submit(P, NULL, 0, 1, 0, 0, NULL, &k), -ECONNRESET);
        /* teardown checks nothing more of this daemon. */
        sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}
END_TEST

/* ---- calls submitted while the daemon goes away ---------------------------------------------- */

enum { SUBMITTERS = 2, PER_ROUND = 3000, ROUNDS = 3, MAXCALLS = PER_ROUND * (ROUNDS + 1) };

struct churn {
        pthread_mutex_t lock;
        bool stop;
        unsigned budget;               /* calls the submitters may make so far */
        unsigned next;                 /* user values handed out */
        unsigned submitted, collected;
        unsigned char state[MAXCALLS]; /* 1 submitted, 2 collected; more: collected twice */
        int error;                     /* the first unexpected return or result, as text below */
        unsigned error_call;
        const char *error_what;
};

static struct churn churn;

static void *submitter(void *arg)
{
        uint32_t waiter = SN_WAITER_MIN + (uint32_t)(uintptr_t)arg;

        for (;;) {
                sn_call_t *k;
                unsigned idx;
                int r;

                pthread_mutex_lock(&churn.lock);
                if (churn.stop) {
                        pthread_mutex_unlock(&churn.lock);
                        return NULL;
                }
                if (churn.next == churn.budget) {
                        pthread_mutex_unlock(&churn.lock);
                        poll(NULL, 0, 1);
                        continue;
                }
                idx = churn.next++;
                pthread_mutex_unlock(&churn.lock);
                /* A dequeue that ends at once (timeout 0): its reply comes right after it. */
                r = sn_port_submit(P, NULL, 0, 1, 0, waiter, (void *)(uintptr_t)idx, &k);
                pthread_mutex_lock(&churn.lock);
                if (r == 0) {
                        churn.state[idx]++;
                        churn.submitted++;
                } else if (!churn.error_what) {
                        churn.error = r;
                        churn.error_call = idx;
                        churn.error_what = "sn_port_submit() returned";
                }
                pthread_mutex_unlock(&churn.lock);
        }
}

static void *collector(void *arg)
{
        int fd = sn_conn_fd(C);

        (void)arg;
        for (;;) {
                sn_call_t *k = NULL;
                int r = sn_conn_collect(C, &k);

                if (r < 0) {
                        pthread_mutex_lock(&churn.lock);
                        if (!churn.error_what) {
                                churn.error = r;
                                churn.error_what = "sn_conn_collect() returned";
                        }
                        pthread_mutex_unlock(&churn.lock);
                        return NULL;
                }
                if (r == 1) {
                        unsigned idx = (unsigned)(uintptr_t)sn_call_user(k);
                        int res = sn_call_result(k, NULL, NULL);

                        sn_call_free(k);
                        pthread_mutex_lock(&churn.lock);
                        if (idx < MAXCALLS)
                                churn.state[idx]++;
                        churn.collected++;
                        if (res != -ETIMEDOUT && res != -EIO && !churn.error_what) {
                                churn.error = res;
                                churn.error_call = idx;
                                churn.error_what = "a call's result was";
                        }
                        pthread_mutex_unlock(&churn.lock);
                        continue;
                }
                pthread_mutex_lock(&churn.lock);
                r = (churn.stop && churn.collected >= churn.submitted) || churn.error_what;
                pthread_mutex_unlock(&churn.lock);
                if (r)
                        return NULL;
                readable(fd, 20);
        }
}

/* The calls submitted so far; fails the test at the first error a thread met. */
static unsigned churn_submitted(void)
{
        unsigned n;

        pthread_mutex_lock(&churn.lock);
        n = churn.submitted;
        ck_assert_msg(!churn.error_what, "call %u: %s %d", churn.error_call, churn.error_what,
                      churn.error);
        pthread_mutex_unlock(&churn.lock);
        return n;
}

/*
 * Two threads submit calls without pause and a third collects them while the daemon is killed
 * and started again three times: every call submitted (sn_port_submit() returned 0) is
 * collected exactly once, as -ETIMEDOUT (answered) or -EIO (the daemon that had it ended),
 * and none is left waiting.  A call being sent when the resume looks at the pending calls is
 * its sender's to finish; one failed by the resume and then sent again by its sender would be
 * collected twice (or its memory used after its free).
 */
START_TEST(test_submit_across_resumes)
{
        pthread_t sub[SUBMITTERS], col;
        long long end;
        int st;

        sn_port_close(P);
        C = sn_conn_close(C);
        setenv("SOCKNOTIFY_RECONNECT_MS", "60000", 1);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        unsetenv("SOCKNOTIFY_RECONNECT_MS");
        ck_assert_int_eq(sn_port_create(C, 1, &P), 0);
        memset(&churn, 0, sizeof(churn));
        pthread_mutex_init(&churn.lock, NULL);
        ck_assert_int_eq(pthread_create(&col, NULL, collector, NULL), 0);
        for (uintptr_t i = 0; i < SUBMITTERS; i++)
                ck_assert_int_eq(pthread_create(&sub[i], NULL, submitter, (void *)i), 0);
        /* Each round lets PER_ROUND calls be made and kills the daemon halfway through. */
        for (unsigned round = 0; round <= ROUNDS; round++) {
                unsigned base = round * PER_ROUND;

                pthread_mutex_lock(&churn.lock);
                churn.budget = base + PER_ROUND;
                pthread_mutex_unlock(&churn.lock);
                end = now_ms() + test_timeout_ms(20000);
                while (churn_submitted() < base + (round < ROUNDS ? PER_ROUND / 2 : PER_ROUND)) {
                        ck_assert_msg(now_ms() < end, "round %u: %u calls submitted", round,
                                      churn_submitted());
                        poll(NULL, 0, 1);
                }
                if (round == ROUNDS)
                        break; /* the last daemon answers its calls to the end */
                ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
                ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
                D.pid = 0;
                test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);
                end = now_ms() + test_timeout_ms(20000);
                while (churn_submitted() < base + PER_ROUND) {
                        ck_assert_msg(now_ms() < end, "round %u after the restart: %u calls "
                                      "submitted", round, churn_submitted());
                        poll(NULL, 0, 1);
                }
        }
        pthread_mutex_lock(&churn.lock);
        churn.stop = true;
        pthread_mutex_unlock(&churn.lock);
        for (int i = 0; i < SUBMITTERS; i++)
                pthread_join(sub[i], NULL);
        end = now_ms() + test_timeout_ms(20000);
        while (1) {
                pthread_mutex_lock(&churn.lock);
                st = churn.collected >= churn.submitted;
                pthread_mutex_unlock(&churn.lock);
                (void)churn_submitted(); /* its errors */
                if (st)
                        break;
                ck_assert_msg(now_ms() < end, "%u calls submitted, %u collected",
                              churn.submitted, churn.collected);
                poll(NULL, 0, 5);
        }
        pthread_join(col, NULL);
        ck_assert_uint_eq(churn.collected, churn.submitted);
        for (unsigned i = 0; i < churn.next; i++)
                ck_assert_msg(churn.state[i] == 0 || churn.state[i] == 2,
                              "call %u: state %u (1: never collected, 3: collected twice)", i,
                              churn.state[i]);
        ck_assert_uint_eq(churn.submitted, MAXCALLS);
        fprintf(stderr, "test_submit_across_resumes: %u calls over %d daemons\n",
                churn.submitted, ROUNDS + 1);
        pthread_mutex_destroy(&churn.lock);
        /* teardown counts the descriptors of a daemon that never had a client: a fresh one. */
        sn_port_close(P);
        P = NULL;
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("async");
        TCase *tc = tcase_create("submitted-calls");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_timeout_and_post);
        tcase_add_test(tc, test_invalid);
        tcase_add_test(tc, test_registrations);
        tcase_add_test(tc, test_reenable_by_identity);
        tcase_add_test(tc, test_fd_after_submit);
        tcase_add_test(tc, test_waiter_identities);
        tcase_add_test(tc, test_blocking_thread_reads_for_the_loop);
        tcase_add_test(tc, test_many_in_flight);
        tcase_add_test(tc, test_abandoned_and_closed);
        tcase_add_test(tc, test_daemon_goes_away);
        tcase_add_test(tc, test_close_with_calls_in_every_state);
        tcase_add_test(tc, test_close_while_polled);
        tcase_add_test(tc, test_close_after_resume);
        tcase_add_test(tc, test_submit_across_resumes);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-cancel.c - pthread_cancel() of a thread blocked in sn_port_dequeue(), against a real
 * socknotifyd.  The waits of the library are cancellation points that clean up: the cancelled
 * thread can be joined at once, the connection is not left locked (the next call on it does not
 * hang), and what the daemon gives the abandoned wait afterwards is handed to the next call on
 * the port instead of being lost.  Each test ends with the daemon's descriptor count back to its
 * baseline and a clean exit on SIGTERM (under the sanitizers, that includes "no leak").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"

static struct test_daemon D;
static sn_conn_t *C;
static sn_port_t *P;
static int baseline;

static void setup(void)
{
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        /* Concurrency 1: a cancelled thread still counted as running would starve the port. */
        ck_assert_int_eq(sn_port_create(C, 1, &P), 0);
}

static void teardown(void)
{
        if (P)
                ck_assert_int_eq(sn_port_close(P), 0);
        P = NULL;
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 2000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

/* The daemon's count of parked waits (STATUS), asked on conn. */
static int daemon_waiters(sn_conn_t *conn)
{
        return (int)test_status_number(conn, "waiters");
}

/* Waits up to 5 s until want waits are parked. */
static void wait_parked(sn_conn_t *conn, int want)
{
        test_status_wait_at_least(conn, "waiters", want, 5000, "waits never parked");
}

struct waiter {
        sn_port_t *port;
        volatile int started;
        int result;
};

static void *long_dequeue(void *arg)
{
        struct waiter *w = arg;
        sn_entry_t e[4];

        w->started = 1;
        w->result = sn_port_dequeue(w->port, e, 4, 60000);
        return NULL; /* reached only if the cancellation did not act */
}

/* Cancels t, which must be blocked, and joins it within 2 s. */
static void cancel_and_join(pthread_t t)
{
        long long t0 = now_ms();
        void *ret = NULL;

        ck_assert_int_eq(pthread_cancel(t), 0);
        ck_assert_int_eq(pthread_join(t, &ret), 0);
        ck_assert_ptr_eq(ret, PTHREAD_CANCELED);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(2000));
}

/* Posts one packet and dequeues it on the same port, each within a second. */
static void post_then_dequeue(sn_port_t *port, uint64_t key)
{
        sn_entry_t e[4];
        long long t0 = now_ms();

        ck_assert_int_eq(sn_port_post(port, key, 42, key + 1), 0);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(1000));
        ck_assert_int_eq(sn_port_dequeue(port, e, 4, 1000), 1);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(1000));
        ck_assert_uint_eq(e[0].kind, SN_ENTRY_POSTED);
        ck_assert_uint_eq(e[0].key, key);
        ck_assert_uint_eq(e[0].events, 42);
        ck_assert_uint_eq(e[0].overlapped, key + 1);
        /* Exactly once. */
        ck_assert_int_eq(sn_port_dequeue(port, e, 4, 0), -ETIMEDOUT);
}

/* One thread, alone: it is the connection's reader, blocked waiting for its reply. */
START_TEST(test_cancel_lone_waiter)
{
        struct waiter w = { .port = P };
        pthread_t t;
        int sp[2];
        sn_entry_t e[4];
        sn_registration_t r;

        ck_assert_int_eq(pthread_create(&t, NULL, long_dequeue, &w), 0);
        wait_parked(C, 1);
        cancel_and_join(t);

        /* The abandoned wait is still parked on the daemon and takes this packet: the library
         * hands it to the next caller. */
        post_then_dequeue(P, 7);
        /* The next ones go the ordinary way (the cancelled thread no longer counts as running
         * on the concurrency-1 port). */
        post_then_dequeue(P, 8);
        post_then_dequeue(P, 9);

        /* Socket notifications too, and the connection's other calls. */
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        r = (sn_registration_t){ .fd = sp[0], .key = 5, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(P, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        ck_assert_int_eq(test_daemon_fds(&D), baseline + test_conn_fds() + 2); /* conn, port, socket copy */
        ck_assert_int_eq(send(sp[1], "x", 1, 0), 1);
        ck_assert_int_eq(sn_port_dequeue(P, e, 4, 1000), 1);
        ck_assert_uint_eq(e[0].key, 5);
        ck_assert_uint_eq(e[0].events & SN_EVENT_IN, SN_EVENT_IN);
        ck_assert_int_eq(sn_socket_close(C, sp[0]), 0);
        close(sp[1]);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + test_conn_fds() + 1, 2000), baseline + test_conn_fds() + 1);
}
END_TEST

/* Two threads: one reads for both, the other sleeps on its condition variable.  Cancel the
 * sleeper, then the reader; a third thread's call must still complete. */
START_TEST(test_cancel_reader_and_sleeper)
{
        struct waiter a = { .port = P }, b = { .port = P };
        pthread_t ta, tb;

        ck_assert_int_eq(pthread_create(&ta, NULL, long_dequeue, &a), 0);
        wait_parked(C, 1);
        ck_assert_int_eq(pthread_create(&tb, NULL, long_dequeue, &b), 0);
        wait_parked(C, 2);
        /* ta became the reader (first to wait); tb sleeps on its condition variable. */
        cancel_and_join(tb);
        cancel_and_join(ta);
        /* Two abandoned waits: the most recent takes the first packet, the other the second;
         * both come back through the next calls, each exactly once. */
        post_then_dequeue(P, 100);
        post_then_dequeue(P, 200);
        post_then_dequeue(P, 300);
        ck_assert_int_eq(test_daemon_fds(&D), baseline + test_conn_fds() + 1);
}
END_TEST

/* A cancelled waiter, then a blocked one on the same connection: the blocked one is woken by
 * the next post (no lock or reader role left behind), and closing the port answers the rest. */
START_TEST(test_cancel_then_other_thread_waits)
{
        struct waiter a = { .port = P }, b = { .port = P };
        pthread_t ta, tb;

        ck_assert_int_eq(pthread_create(&ta, NULL, long_dequeue, &a), 0);
        wait_parked(C, 1);
        cancel_and_join(ta);

        b.result = 1;
        ck_assert_int_eq(pthread_create(&tb, NULL, long_dequeue, &b), 0);
        wait_parked(C, 2); /* the abandoned wait and b's */
        /* Most recent first: b's wait takes it. */
        ck_assert_int_eq(sn_port_post(P, 1, 1, 1), 0);
        ck_assert_int_eq(pthread_join(tb, NULL), 0);
        ck_assert_int_eq(b.result, 1);

        /* Closing the port answers the abandoned wait (ECANCELED): nothing is left. */
        ck_assert_int_eq(sn_port_close(P), 0);
        P = NULL;
        ck_assert_int_eq(daemon_waiters(C), 0);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("cancel");
        TCase *tc = tcase_create("cancel");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_cancel_lone_waiter);
        tcase_add_test(tc, test_cancel_reader_and_sleeper);
        tcase_add_test(tc, test_cancel_then_other_thread_waits);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return test_run_suite(suite());
}

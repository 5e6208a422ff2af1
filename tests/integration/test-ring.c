/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-ring.c - which transport a connection uses (protocol version 3), seen from the
 * client process itself: with the rings the library holds a mapping of the daemon's ring file
 * (a memfd) and two doorbells beside its socket; with SOCKNOTIFY_NO_SHM=1 it holds neither and
 * the socket carries everything.  Each test also does real work through the transport it checks,
 * including the messages that travel on the socket beside the rings (descriptors, a request
 * larger than a submission record, a reply larger than a completion record), and checks that
 * closing, a resume on a new daemon and fork() leave no mapping or descriptor behind.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;

static void setup(void)
{
        test_daemon_start_resumable(&D);
}

static void teardown(void)
{
        test_daemon_stop_if_running(&D);
}

/* Mappings of this process that are memory files (memfd). */
static int memfd_maps(void)
{
        FILE *f = fopen("/proc/self/maps", "r");
        char line[512];
        int n = 0;

        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, "/memfd:"))
                        n++;
        fclose(f);
        return n;
}

static int open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;

        ck_assert_ptr_nonnull(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

static sn_conn_t *conn_open(bool rings)
{
        sn_conn_t *c = NULL;

        if (rings)
                unsetenv("SOCKNOTIFY_NO_SHM");
        else
                setenv("SOCKNOTIFY_NO_SHM", "1", 1);
        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        return c;
}

/* Real work through the connection: a registration (its descriptor travels on the socket),
 * a notification, posted packets dequeued in one reply larger than a completion record, and a
 * control request larger than a submission record. */
static void work(sn_conn_t *c)
{
        enum { NPOST = 2000 }; /* 2000 entries of 24 bytes: more than half of a 64 KiB ring */
        static sn_entry_t e[NPOST];
        sn_port_t *p;
        sn_registration_t g;
        char *json = NULL, *big;
        int a, b, n, got = 0;

        ck_assert_int_eq(sn_port_create(c, 1, &p), 0);
        udp_pair(&a, &b);
        g = (sn_registration_t){ .fd = a, .key = 7, .filter = SN_REGISTER_EVENT_IN,
                                 .op = SN_OP_ENABLE, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(p, &g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g.result, 0);
        ck_assert_int_eq(send(b, "x", 1, 0), 1);
        n = sn_port_dequeue(p, e, 1, (uint32_t)test_timeout_ms(10000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 7);

        g.op = SN_OP_REMOVE;
        ck_assert_int_eq(sn_port_process(p, &g, 1, NULL, 0, 0), 0);
        for (int i = 0; i < NPOST; i++)
                ck_assert_int_eq(sn_port_post(p, 100 + (uint64_t)i, (uint32_t)i, 0), 0);
        while (got < NPOST) {
                n = sn_port_dequeue(p, e, NPOST, (uint32_t)test_timeout_ms(10000));
                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++) {
                        /* The level-triggered socket may have queued again before its removal. */
                        if (e[i].kind != SN_ENTRY_POSTED)
                                continue;
                        ck_assert_uint_eq(e[i].key, 100 + (uint64_t)got);
                        got++;
                }
        }

        /* 20 000 bytes: the daemon answers it (an error: no such request), in order. */
        big = malloc(20001);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', 20000);
        big[0] = '{';
        big[19999] = '}';
        big[20000] = 0;
        sn_conn_control(c, big, &json);
        free(json);
        free(big);
        ck_assert_int_eq(sn_conn_status(c, &json), 0);
        ck_assert_ptr_nonnull(strstr(json, "{"));
        free(json);

        ck_assert_int_eq(sn_port_close(p), 0);
        close(a);
        close(b);
}

START_TEST(test_rings_by_default)
{
        int maps = memfd_maps(), fds = open_fds();
        sn_conn_t *c = conn_open(true);

        /* The socket and the two doorbells (the ring file is mapped, not kept open). */
        ck_assert_int_eq(open_fds(), fds + 3);
        ck_assert_int_eq(memfd_maps(), maps + 1);
        work(c);
        ck_assert_int_eq(open_fds(), fds + 3);
        ck_assert_int_eq(memfd_maps(), maps + 1);
        sn_conn_close(c);
        ck_assert_int_eq(memfd_maps(), maps);
        ck_assert_int_eq(open_fds(), fds);
}
END_TEST

START_TEST(test_no_shm_keeps_the_socket)
{
        int maps = memfd_maps(), fds = open_fds();
        sn_conn_t *c = conn_open(false);

        ck_assert_int_eq(open_fds(), fds + 1);
        ck_assert_int_eq(memfd_maps(), maps);
        work(c);
        ck_assert_int_eq(open_fds(), fds + 1);
        ck_assert_int_eq(memfd_maps(), maps);
        sn_conn_close(c);
        ck_assert_int_eq(open_fds(), fds);
}
END_TEST

/* The submitted-call form: the application polls sn_conn_fd(), and a reply that arrives in
 * the completion ring must make it readable. */
START_TEST(test_pollfd_wakes_for_ring_replies)
{
        sn_conn_t *c = conn_open(true);
        sn_port_t *p;
        sn_call_t *k = NULL;
        int pfd;

        ck_assert_int_eq(memfd_maps(), 1);
        ck_assert_int_eq(sn_port_create(c, 1, &p), 0);
        pfd = sn_conn_fd(c);
        ck_assert_int_ge(pfd, 0);
        for (int round = 0; round < 50; round++) {
                sn_entry_t *e;
                const sn_entry_t *got;
                int r;

                ck_assert_int_eq(sn_port_submit(p, NULL, 0, 1, SN_INFINITE, 0, NULL, &k), 0);
                /* Answered only once this packet is posted, by a call that reads its own reply
                 * and leaves the submitted one's for the application. */
                ck_assert_int_eq(sn_port_post(p, 5, (uint32_t)round, 0), 0);
                for (;;) {
                        struct pollfd q = { .fd = pfd, .events = POLLIN };
                        sn_call_t *done = NULL;

                        ck_assert_int_eq(poll(&q, 1, test_timeout_ms(10000)), 1);
                        r = sn_conn_collect(c, &done);
                        ck_assert_int_ge(r, 0);
                        if (r == 1) {
                                ck_assert_ptr_eq(done, k);
                                break;
                        }
                }
                ck_assert_int_eq(sn_call_result(k, &got, NULL), 1);
                e = (sn_entry_t *)got;
                ck_assert_uint_eq(e->key, 5);
                ck_assert_uint_eq(e->events, (uint32_t)round);
                sn_call_free(k);
        }
        ck_assert_int_eq(sn_port_close(p), 0);
        sn_conn_close(c);
}
END_TEST

/* A resume on a new daemon negotiates new rings: the old ones are gone, not kept beside. */
START_TEST(test_resume_takes_new_rings)
{
        int maps = memfd_maps(), fds = open_fds();
        sn_conn_t *c = conn_open(true);
        sn_port_t *p;
        sn_entry_t e;
        int st;

        ck_assert_int_eq(sn_port_create(c, 1, &p), 0);
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
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, (uint32_t)test_timeout_ms(10000)), 1);
        ck_assert_uint_eq(e.key, 9);
        ck_assert_int_eq(open_fds(), fds + 3);
        ck_assert_int_eq(memfd_maps(), maps + 1);
        ck_assert_int_eq(sn_port_close(p), 0);
        sn_conn_close(c);
        ck_assert_int_eq(open_fds(), fds);
        ck_assert_int_eq(memfd_maps(), maps);
}
END_TEST

/* A forked child has no mapping of the parent's rings and cannot use the connection; the
 * parent goes on. */
START_TEST(test_fork_child_has_no_rings)
{
        sn_conn_t *c = conn_open(true);
        char *json = NULL;
        pid_t pid;
        int st;

        ck_assert_int_eq(memfd_maps(), 1);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int ok = memfd_maps() == 0 && sn_conn_status(c, &json) == -EBADFD;

                sn_conn_close(c);
                _exit(ok ? 0 : 1);
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        ck_assert_int_eq(sn_conn_status(c, &json), 0);
        free(json);
        sn_conn_close(c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("ring");
        TCase *tc = tcase_create("transport");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_rings_by_default);
        tcase_add_test(tc, test_no_shm_keeps_the_socket);
        tcase_add_test(tc, test_pollfd_wakes_for_ring_replies);
        tcase_add_test(tc, test_resume_takes_new_rings);
        tcase_add_test(tc, test_fork_child_has_no_rings);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-scale.c - many threads and many processes on one completion port: exactly-once delivery
 * across processes sharing a named port, the concurrency limit, waiters that die with entries,
 * and a port refused to another user.  (The reference's multi-threaded server, with its
 * "never two threads on one socket" check, runs in test-examples; LIFO order in conformance
 * row-73.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;
static int baseline;

static void setup(void)
{
        test_daemon_start(&D, (const char *const[]){ "--socket-mode=0666", NULL });
        baseline = test_daemon_fds(&D);
}

static void teardown(void)
{
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

static int reg(sn_port_t *p, int fd, uint64_t key, uint8_t op, uint8_t trig)
{
        sn_registration_t r = { .fd = fd, .key = key, .op = op, .filter = SN_REGISTER_EVENT_IN,
                                .trigger = trig };

        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        return r.result;
}

START_TEST(test_four_processes_exactly_once)
{
        enum { N = 1000, PROCS = 4 };
        static int sp[N][2];
        static sn_registration_t r[N];
        _Atomic int *count = mmap(NULL, sizeof(int) * (N + PROCS), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        _Atomic int *per_proc = count + N;
        sn_conn_t *c;
        sn_port_t *p;
        pid_t pids[PROCS];
        int pipefd[2];

        ck_assert_ptr_ne(count, MAP_FAILED);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "scale-test", 0, &p), 0);
        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
                r[i] = (sn_registration_t){ .fd = sp[i][0], .key = (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };
        }
        ck_assert_int_eq(sn_port_process(p, r, N, NULL, 0, 0), 0);
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(r[i].result, 0);
        ck_assert_int_eq(pipe(pipefd), 0);
        for (int k = 0; k < PROCS; k++) {
                pids[k] = fork();
                ck_assert_int_ge(pids[k], 0);
                if (pids[k] == 0) {
                        sn_conn_t *cc;
                        sn_port_t *pp;
                        sn_entry_t e[16];
                        int n;

                        if (sn_conn_open(D.path, &cc) < 0 || sn_port_open(cc, "scale-test", &pp) < 0)
                                _exit(1);
                        if (write(pipefd[1], "r", 1) != 1)
                                _exit(1);
                        /* Take entries until the port stays idle for a second. */
                        while ((n = sn_port_dequeue(pp, e, 16, 1000)) > 0) {
                                for (int i = 0; i < n; i++)
                                        if (e[i].key < N)
                                                atomic_fetch_add(&count[e[i].key], 1);
                                atomic_fetch_add(&per_proc[k], n);
                        }
                        _exit(n == -ETIMEDOUT ? 0 : 2);
                }
        }
        for (int k = 0; k < PROCS; k++) {
                char ch;
                ck_assert_int_eq(read(pipefd[0], &ch, 1), 1);
        }
        /* Every socket becomes readable once; one-shot: exactly one packet each. */
        for (int i = 0; i < N; i++)
                ck_assert_int_eq(send(sp[i][1], "x", 1, 0), 1);
        for (int k = 0; k < PROCS; k++) {
                int st;
                waitpid(pids[k], &st, 0);
                ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: %d", k, st);
        }
        for (int i = 0; i < N; i++)
                ck_assert_msg(count[i] == 1, "socket %d delivered %d times", i, count[i]);
        int served = 0;
        for (int k = 0; k < PROCS; k++)
                served += per_proc[k] > 0;
        ck_assert_int_ge(served, 2); /* spread over processes, not all to one */
        /* The children are gone; the port lives on with the creator. */
        ck_assert_int_eq(sn_port_post(p, 7, 0, 0), 0);
        sn_entry_t e;
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.key, 7);
        sn_port_close(p);
        sn_conn_close(c);
        for (int i = 0; i < N; i++) {
                close(sp[i][0]);
                close(sp[i][1]);
        }
        close(pipefd[0]);
        close(pipefd[1]);
}
END_TEST

struct worker {
        sn_port_t *port;
        _Atomic int *active;
        _Atomic int *max_active;
        _Atomic int *taken;
};

static void *worker(void *arg)
{
        struct worker *w = arg;
        sn_entry_t e;

        while (sn_port_dequeue(w->port, &e, 1, 500) == 1) {
                int now = atomic_fetch_add(w->active, 1) + 1;
                int seen = atomic_load(w->max_active);

                while (now > seen && !atomic_compare_exchange_weak(w->max_active, &seen, now))
                        ;
                /* "Processing" the entry, running: a thread that sleeps instead frees its slot
                 * (row 72), and more than two would hold entries, as on Windows. */
                for (long long end = now_ms() + 30; now_ms() < end;)
                        ;
                atomic_fetch_sub(w->active, 1);
                atomic_fetch_add(w->taken, 1);
        }
        return NULL;
}

START_TEST(test_concurrency_limit)
{
        enum { THREADS = 6, POSTS = 30 };
        _Atomic int active = 0, max_active = 0, taken = 0;
        struct worker w = { .active = &active, .max_active = &max_active, .taken = &taken };
        pthread_t t[THREADS];
        sn_conn_t *c;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 2, &w.port), 0);
        for (int i = 0; i < THREADS; i++)
                pthread_create(&t[i], NULL, worker, &w);
        for (int i = 0; i < POSTS; i++)
                ck_assert_int_eq(sn_port_post(w.port, (uint64_t)i, 0, 0), 0);
        for (int i = 0; i < THREADS; i++)
                pthread_join(t[i], NULL);
        /* Six threads wait, but never more than two hold entries at once; and two do. */
        ck_assert_int_eq(taken, POSTS);
        ck_assert_int_eq(max_active, 2);
        sn_port_close(w.port);
        sn_conn_close(c);
}
END_TEST

START_TEST(test_waiter_dies_with_entries)
{
        sn_conn_t *c;
        sn_port_t *p;
        int sp[2], pipefd[2], st;
        pid_t pid;
        sn_entry_t e;
        char ch;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "dying", 1, &p), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        ck_assert_int_eq(reg(p, sp[0], 5, SN_OP_ENABLE, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT), 0);
        ck_assert_int_eq(pipe(pipefd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *cc;
                sn_port_t *pp;

                if (sn_conn_open(D.path, &cc) < 0 || sn_port_open(cc, "dying", &pp) < 0 ||
                    sn_port_dequeue(pp, &e, 1, 5000) != 1 || e.key != 5)
                        _exit(1);
                if (write(pipefd[1], "r", 1) != 1)
                        _exit(1);
                pause(); /* dies holding the entry, running on the port */
                _exit(0);
        }
        ck_assert_int_eq(send(sp[1], "x", 1, 0), 1);
        ck_assert_int_eq(read(pipefd[0], &ch, 1), 1);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        /* The entry it held is lost; the one-shot registration stays disarmed... */
        ck_assert_int_eq(send(sp[1], "y", 1, 0), 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 200), -ETIMEDOUT);
        /* ...until re-enabled, and the port (concurrency 1) serves this process: the dead
         * waiter no longer counts as running. */
        ck_assert_int_eq(reg(p, sp[0], 5, SN_OP_ENABLE, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.key, 5);
        sn_port_close(p);
        sn_conn_close(c);
        close(sp[0]);
        close(sp[1]);
        close(pipefd[0]);
        close(pipefd[1]);
}
END_TEST

START_TEST(test_other_user_refused)
{
        sn_conn_t *c;
        sn_port_t *p;
        pid_t pid;
        int st;

        if (geteuid() != 0) {
                printf("SKIP: test_other_user_refused needs root to run a child as another user\n");
                return;
        }
        ck_assert_int_eq(chmod(D.dir, 0711), 0); /* mkdtemp made it 0700 */
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "mine", 0, &p), 0);
        ck_assert_int_eq(sn_port_post(p, 1, 0, 0), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *cc;
                sn_port_t *pp;

                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(3);
                if (sn_conn_open(D.path, &cc) < 0)
                        _exit(4);
                /* SO_PEERCRED says nobody: root's port does not exist for it (the same answer
                 * as for a name nobody uses), and the name is free in nobody's own namespace;
                 * what nobody posts there never reaches root's port. */
                _exit(sn_port_open(cc, "mine", &pp) == -ENOENT &&
                                      sn_port_open(cc, "unused", &pp) == -ENOENT &&
                                      sn_port_create_named(cc, "mine", 0, &pp) == 0 &&
                                      sn_port_post(pp, 2, 0, 0) == 0
                              ? 0
                              : 5);
        }
        waitpid(pid, &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
        sn_entry_t e;
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1); /* untouched */
        ck_assert_uint_eq(e.key, 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 0), -ETIMEDOUT); /* not nobody's post */
        /* The same user may open it. */
        sn_conn_t *c2;
        sn_port_t *p2;
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_open(c2, "mine", &p2), 0);
        ck_assert_int_eq(sn_port_close(p2), 0);
        ck_assert_int_eq(sn_port_open(c2, "none-such", &p2), -ENOENT);
        sn_conn_close(c2);
        sn_port_close(p);
        sn_conn_close(c);
}
END_TEST

static void quota_setup(void)
{
        test_daemon_start(&D, (const char *const[]){ "--socket-mode=0666", "--max-sockets-per-user=4",
                                                    NULL });
        baseline = test_daemon_fds(&D);
}

START_TEST(test_user_quota_isolates)
{
        int sp[8][2];
        sn_conn_t *c;
        sn_port_t *p;
        pid_t pid;
        int st, pipefd[2], done[2];
        char ch;

        if (geteuid() != 0) {
                printf("SKIP: test_user_quota_isolates needs root to run a child as another user\n");
                return;
        }
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        for (int i = 0; i < 8; i++)
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
        ck_assert_int_eq(pipe(pipefd), 0);
        ck_assert_int_eq(pipe(done), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *cc;
                sn_port_t *pp;
                int ok = 1;

                if (setgid(65534) < 0 || setuid(65534) < 0 || sn_conn_open(D.path, &cc) < 0 ||
                    sn_port_create(cc, 0, &pp) < 0)
                        _exit(3);
                /* nobody takes its whole share, and no more. */
                for (int i = 0; i < 4; i++)
                        ok &= reg(pp, sp[i][0], (uint64_t)i, SN_OP_ENABLE, SN_TRIGGER_LEVEL) == 0;
                ok &= reg(pp, sp[4][0], 4, SN_OP_ENABLE, SN_TRIGGER_LEVEL) == -EDQUOT;
                if (write(pipefd[1], ok ? "y" : "n", 1) != 1 || read(done[0], &ch, 1) != 1)
                        _exit(4);
                _exit(0);
        }
        ck_assert_int_eq(read(pipefd[0], &ch, 1), 1);
        ck_assert_int_eq(ch, 'y');
        /* root's share is untouched by nobody's. */
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (int i = 4; i < 8; i++)
                ck_assert_int_eq(reg(p, sp[i][0], (uint64_t)i, SN_OP_ENABLE, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(write(done[1], "d", 1), 1);
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        sn_port_close(p);
        sn_conn_close(c);
        for (int i = 0; i < 8; i++) {
                close(sp[i][0]);
                close(sp[i][1]);
        }
        close(pipefd[0]);
        close(pipefd[1]);
        close(done[0]);
        close(done[1]);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("scale");
        TCase *tc = tcase_create("scale-out");
        TCase *quota = tcase_create("quota");

        tcase_add_checked_fixture(quota, quota_setup, teardown);
        tcase_set_timeout(quota, 30);
        tcase_add_test(quota, test_user_quota_isolates);
        suite_add_tcase(s, quota);

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_four_processes_exactly_once);
        tcase_add_test(tc, test_concurrency_limit);
        tcase_add_test(tc, test_waiter_dies_with_entries);
        tcase_add_test(tc, test_other_user_refused);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-listen-fds.c - sn_listen_fds_park() and sn_listen_fds_take() against a real socknotifyd:
 * argument checks, LISTEN_PID / LISTEN_FDS checks, parking real TCP listeners and taking them
 * back in key order in another process, max smaller than what is parked, all-or-nothing
 * parking when one socket is refused, a linger over the daemon's --max-linger.  Each test
 * starts its own daemon and ends by checking the daemon's descriptor count and clean exit.
 *
 * Parking reads descriptors 3, 4, ... of the calling process, which in a Check test hold the
 * test runner's own files: it is done in a child process (park_in_child) that puts the
 * sockets there, as a service manager would, and reports the result in its exit status.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;
static sn_conn_t *C;
static int baseline;

static void start(const char *const *args)
{
        test_daemon_start(&D, args);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
}

static void setup(void)
{
        start(NULL);
}

static void teardown(void)
{
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 5000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

/* How a child is started for a park. */
struct park_args {
        const char *name;
        uint32_t linger_ms;
        const int *socks; /* put at 3, 4, ... */
        int n;
        const char *listen_fds; /* NULL: n */
        int pid_delta;          /* LISTEN_PID = getpid() + pid_delta */
};

/* Runs sn_listen_fds_park() in a child with a.socks at descriptors 3.. and LISTEN_FDS /
 * LISTEN_PID set; returns its result.  The child also checks that its descriptors are still
 * open afterwards (the call must not consume them): 99 if one is not. */
static int park_in_child(const struct park_args *a)
{
        pid_t pid = fork();
        int st;

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char buf[32];
                sn_conn_t *c;
                int r;

                for (int i = 0; i < a->n; i++) {
                        int hi = fcntl(a->socks[i], F_DUPFD, 200);

                        if (hi < 0 || dup2(hi, 300 + i) < 0)
                                _exit(98);
                }
                for (int i = 0; i < a->n; i++)
                        if (dup2(300 + i, 3 + i) < 0)
                                _exit(98);
                close_range(3 + (unsigned)a->n, ~0u, 0);
                if (a->listen_fds)
                        setenv("LISTEN_FDS", a->listen_fds, 1);
                else {
                        snprintf(buf, sizeof(buf), "%d", a->n);
                        setenv("LISTEN_FDS", buf, 1);
                }
                snprintf(buf, sizeof(buf), "%ld", (long)getpid() + a->pid_delta);
                setenv("LISTEN_PID", buf, 1);
                /* The connection's socket goes above the numbers just after the range, which
                 * stay closed (a LISTEN_FDS larger than what was passed must find them so). */
                r = open("/dev/null", O_RDONLY | O_CLOEXEC);
                for (int i = 0; i < 16; i++)
                        if (r < 0 || dup2(r, 3 + a->n + i) < 0)
                                _exit(98);
                if (sn_conn_open(D.path, &c) < 0)
                        _exit(97);
                close_range(3 + (unsigned)a->n, 3 + (unsigned)a->n + 15, 0);
                if (r >= 3 + a->n + 16)
                        close(r);
                r = sn_listen_fds_park(c, a->name, a->linger_ms, NULL);
                for (int i = 0; i < a->n; i++)
                        if (fcntl(3 + i, F_GETFD) < 0)
                                _exit(99);
                sn_conn_close(c);
                _exit(r < 0 ? 100 - r : r);
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_ne(WEXITSTATUS(st), 99);
        ck_assert_int_ne(WEXITSTATUS(st), 98);
        ck_assert_int_ne(WEXITSTATUS(st), 97);
        return WEXITSTATUS(st) >= 100 ? -(WEXITSTATUS(st) - 100) : WEXITSTATUS(st);
}

static unsigned short local_port(int fd)
{
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);

        ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
        return sa.sin_port;
}

/* A client connects to port (network order) and fd, a listener, must accept it. */
static void accepts(int fd, unsigned short port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = port,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s;

        ck_assert_int_ge(cl, 0);
        ck_assert_int_eq(connect(cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
        s = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        ck_assert_int_ge(s, 0);
        close(s);
        close(cl);
}

/* Closes a lingering port for good: linger 0, then its last handle. */
static void drop_port(const char *name)
{
        sn_port_t *p;

        ck_assert_int_eq(sn_port_open(C, name, &p), 0);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        ck_assert_int_eq(sn_port_close(p), 0);
}

START_TEST(test_invalid_arguments)
{
        char longname[300];
        int fds[4];
        sn_port_t *p = NULL;

        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        ck_assert_int_eq(sn_listen_fds_park(NULL, "x", 1000, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_park(C, NULL, 1000, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_park(C, "", 1000, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_park(C, longname, 1000, NULL), -EINVAL);
        /* linger 0 without keeping the port would park nothing at all */
        ck_assert_int_eq(sn_listen_fds_park(C, "x", 0, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_take(NULL, "x", fds, 4, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_take(C, NULL, fds, 4, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_take(C, "", fds, 4, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_take(C, longname, fds, 4, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_take(C, "x", NULL, 4, NULL), -EINVAL);
        ck_assert_int_eq(sn_listen_fds_take(C, "x", fds, 0, &p), -EINVAL);
        ck_assert_ptr_null(p);
        /* No port of that name: nothing to take. */
        ck_assert_int_eq(sn_listen_fds_take(C, "nosuch", fds, 4, &p), -ENOENT);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_environment_checks)
{
        unsigned short pa, pb;
        int socks[2] = { tcp_listener(&pa), tcp_listener(&pb) };
        int pipefd[2];
        int notsock[2];
        struct park_args a = { .name = "env", .linger_ms = 5000, .socks = socks, .n = 2 };
        int fds[4];

        /* In this process: nothing passed at all. */
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        ck_assert_int_eq(sn_listen_fds_park(C, "env", 5000, NULL), -ENOENT);
        /* LISTEN_PID of another process: not ours (sd_listen_fds(3) ignores them too). */
        a.pid_delta = 1;
        ck_assert_int_eq(park_in_child(&a), -ENOENT);
        a.pid_delta = 0;
        a.listen_fds = "0";
        ck_assert_int_eq(park_in_child(&a), -ENOENT);
        a.listen_fds = "abc";
        ck_assert_int_eq(park_in_child(&a), -EINVAL);
        a.listen_fds = "2x";
        ck_assert_int_eq(park_in_child(&a), -EINVAL);
        a.listen_fds = "-1";
        ck_assert_int_eq(park_in_child(&a), -EINVAL);
        a.listen_fds = "99999999999999999999";
        ck_assert_int_eq(park_in_child(&a), -EINVAL);
        /* More than were passed: descriptor 5 is not open. */
        a.listen_fds = "3";
        ck_assert_int_eq(park_in_child(&a), -EBADF);
        /* One of them is not a socket. */
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        notsock[0] = socks[0];
        notsock[1] = pipefd[0];
        a.socks = notsock;
        a.listen_fds = NULL;
        ck_assert_int_eq(park_in_child(&a), -ENOTSOCK);
        /* None of these created the port. */
        ck_assert_int_eq(sn_listen_fds_take(C, "env", fds, 4, NULL), -ENOENT);
        close(pipefd[0]);
        close(pipefd[1]);
        close(socks[0]);
        close(socks[1]);
}
END_TEST

START_TEST(test_park_then_take_in_key_order)
{
        unsigned short port[3];
        int socks[3], fds[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
        struct park_args a = { .name = "svc", .linger_ms = 30000, .socks = socks, .n = 3 };
        sn_port_t *p = NULL;

        for (int i = 0; i < 3; i++)
                socks[i] = tcp_listener(&port[i]);
        ck_assert_int_eq(park_in_child(&a), 3);
        /* The parker is gone: the daemon's copies are the sockets' only other references. */
        for (int i = 0; i < 3; i++)
                close(socks[i]);
        /* Parking under the same name while the port lingers: the name is taken. */
        a.n = 1;
        {
                unsigned short other;
                int s = tcp_listener(&other);

                a.socks = &s;
                ck_assert_int_eq(park_in_child(&a), -EEXIST);
                close(s);
        }

        ck_assert_int_eq(sn_listen_fds_take(C, "svc", fds, 8, &p), 3);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(fds[3], -1);
        for (int i = 0; i < 3; i++) {
                ck_assert_int_ge(fds[i], 0);
                /* Key order is the order of LISTEN_FDS: the same listeners, in place. */
                ck_assert_uint_eq(local_port(fds[i]), port[i]);
                ck_assert_int_eq(fcntl(fds[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
                accepts(fds[i], port[i]);
        }
        /* Nothing left to take on the port. */
        {
                sn_taken_socket_t t[4];
                sn_take_info_t info;

                ck_assert_int_eq(sn_port_take_sockets(p, t, 4, &info), 0);
                ck_assert_uint_eq(info.remaining, 0);
        }
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(sn_socket_close(C, fds[i]), 0);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        ck_assert_int_eq(sn_port_close(p), 0);
        ck_assert_int_eq(sn_listen_fds_take(C, "svc", fds, 8, NULL), -ENOENT);
}
END_TEST

START_TEST(test_take_fewer_than_parked)
{
        unsigned short port[3];
        int socks[3], fds[3] = { -1, -1, -1 };
        struct park_args a = { .name = "few", .linger_ms = 30000, .socks = socks, .n = 3 };
        sn_conn_t *c2;
        int before;

        for (int i = 0; i < 3; i++)
                socks[i] = tcp_listener(&port[i]);
        ck_assert_int_eq(park_in_child(&a), 3);
        for (int i = 0; i < 3; i++)
                close(socks[i]);

        /* max 1: the first by key; the others stay on the port. */
        before = test_daemon_wait_fds(&D, -1, 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_listen_fds_take(c2, "few", fds, 1, NULL), 1);
        ck_assert_uint_eq(local_port(fds[0]), port[0]);
        ck_assert_int_eq(fds[1], -1);
        close(fds[0]);
        /* c2 ends: what it took is ownerless again on the lingering port. */
        sn_conn_close(c2);
        ck_assert_int_eq(test_daemon_wait_fds(&D, before, 5000), before);

        ck_assert_int_eq(sn_listen_fds_take(C, "few", fds, 3, NULL), 3);
        for (int i = 0; i < 3; i++) {
                ck_assert_uint_eq(local_port(fds[i]), port[i]);
                close(fds[i]);
        }
        drop_port("few");
}
END_TEST

/* Lowest descriptor number not open. */
static int lowest_free(void)
{
        int fd = fcntl(0, F_DUPFD, 0);

        if (fd >= 0)
                close(fd);
        return fd;
}

START_TEST(test_take_out_of_descriptors)
{
        unsigned short port[3];
        int socks[3], fds[3];
        struct park_args a = { .name = "emfile", .linger_ms = 30000, .socks = socks, .n = 3 };
        pid_t pid;
        int st;

        for (int i = 0; i < 3; i++)
                socks[i] = tcp_listener(&port[i]);
        ck_assert_int_eq(park_in_child(&a), 3);
        for (int i = 0; i < 3; i++)
                close(socks[i]);

        /* A process with room for one more descriptor: the take fails with EMFILE, leaves it
         * no descriptor, and loses nothing. */
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *c;
                struct rlimit rl;
                int r, before;

                if (sn_conn_open(D.path, &c) < 0)
                        _exit(97);
                before = lowest_free();
                close_range((unsigned)before + 1, ~0u, 0);
                getrlimit(RLIMIT_NOFILE, &rl);
                rl.rlim_cur = (rlim_t)before + 1;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(96);
                /* Under valgrind the limit is only emulated for the calls that make
                 * descriptors, not for the ones SCM_RIGHTS installs: nothing to check there. */
                {
                        const char *pre = getenv("LD_PRELOAD");

                        if (pre && strstr(pre, "vgpreload"))
                                _exit(94);
                }
                r = sn_listen_fds_take(c, "emfile", fds, 3, NULL);
                if (lowest_free() != before)
                        _exit(95);
                sn_conn_close(c);
                _exit(r < 0 ? 100 - r : r);
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st));
        if (WEXITSTATUS(st) == 94)
                fprintf(stderr, "test_take_out_of_descriptors: under valgrind RLIMIT_NOFILE "
                                "does not apply to SCM_RIGHTS: the EMFILE part is not checked\n");
        else
                ck_assert_int_eq(WEXITSTATUS(st), 100 + EMFILE);

        ck_assert_int_eq(sn_listen_fds_take(C, "emfile", fds, 3, NULL), 3);
        for (int i = 0; i < 3; i++) {
                ck_assert_uint_eq(local_port(fds[i]), port[i]);
                close(fds[i]);
        }
        drop_port("emfile");
}
END_TEST

START_TEST(test_port_without_sockets)
{
        sn_conn_t *c2;
        sn_port_t *held;
        int fds[2];

        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_create_named(c2, "empty", 0, &held), 0);
        ck_assert_int_eq(sn_listen_fds_take(C, "empty", fds, 2, NULL), 0);
        sn_port_close(held);
        sn_conn_close(c2);
}
END_TEST

START_TEST(test_park_is_all_or_nothing)
{
        unsigned short pa, pb;
        int socks[2] = { tcp_listener(&pa), tcp_listener(&pb) };
        struct park_args a = { .name = "half", .linger_ms = 30000, .socks = socks, .n = 2 };
        sn_registration_t reg = { .fd = socks[1], .filter = SN_REGISTER_EVENT_IN,
                                  .op = SN_OP_ENABLE, .trigger = SN_TRIGGER_LEVEL, .key = 7 };
        sn_port_t *q;
        int fds[2], before;

        /* The second socket is registered on another port already: its ENABLE fails. */
        ck_assert_int_eq(sn_port_create(C, 0, &q), 0);
        ck_assert_int_eq(sn_port_process(q, &reg, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(reg.result, 0);
        before = test_daemon_wait_fds(&D, -1, 0);
        ck_assert_int_eq(park_in_child(&a), -EEXIST);
        /* Neither the port nor the first socket was kept. */
        ck_assert_int_eq(sn_listen_fds_take(C, "half", fds, 2, NULL), -ENOENT);
        ck_assert_int_eq(test_daemon_wait_fds(&D, before, 5000), before);
        sn_port_close(q);
        close(socks[0]);
        close(socks[1]);
}
END_TEST

START_TEST(test_linger_over_the_daemon_limit)
{
        static const char *const args[] = { "--max-linger", "1000", NULL };
        unsigned short pa;
        int s;
        struct park_args a = { .name = "long", .linger_ms = 5000, .socks = &s, .n = 1 };
        int fds[1];

        /* This test's own daemon, with a low --max-linger. */
        C = sn_conn_close(C);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        start(args);
        s = tcp_listener(&pa);
        ck_assert_int_eq(park_in_child(&a), -EDQUOT);
        ck_assert_int_eq(sn_listen_fds_take(C, "long", fds, 1, NULL), -ENOENT);
        /* Within the limit it parks, and the port goes when its linger has passed. */
        a.linger_ms = 300;
        ck_assert_int_eq(park_in_child(&a), 1);
        close(s);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + test_conn_fds(), 10000), baseline + test_conn_fds());
        ck_assert_int_eq(sn_listen_fds_take(C, "long", fds, 1, NULL), -ENOENT);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("listen-fds");
        TCase *tc = tcase_create("park-take");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_invalid_arguments);
        tcase_add_test(tc, test_environment_checks);
        tcase_add_test(tc, test_park_then_take_in_key_order);
        tcase_add_test(tc, test_take_fewer_than_parked);
        tcase_add_test(tc, test_take_out_of_descriptors);
        tcase_add_test(tc, test_port_without_sockets);
        tcase_add_test(tc, test_park_is_all_or_nothing);
        tcase_add_test(tc, test_linger_over_the_daemon_limit);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

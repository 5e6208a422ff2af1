/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-default-socket.c - where sn_conn_open(NULL) looks for the daemon, with real daemons.
 *
 * A user other than root tries $XDG_RUNTIME_DIR/socknotify.sock, then the system socket
 * /run/socknotify/socknotify.sock; $SOCKNOTIFY_SOCKET alone when set; root the system socket
 * alone.  A failure says, through sn_conn_open_error(), which paths were tried and that
 * SOCKNOTIFY_SOCKET chooses.
 *
 * The system path is fixed, so each test (its own process, Check fork mode) enters a private
 * mount namespace, mounts a tmpfs on /run there and bind-mounts a test daemon's directory on
 * /run/socknotify: the host's /run is never touched.  The client runs in a child process that
 * has dropped to the user nobody.  The two daemons are told apart by their --max-ports.
 * Needs root (CI runs as root); skipped otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "tests/helpers/daemon.h"

#include "socknotify.h"

#define NOBODY 65534
#define USER_PORTS "11"
#define SYSTEM_PORTS "22"
#define SYSTEM_SOCKET "/run/socknotify/socknotify.sock"

/* Private mount namespace with an empty /run and /run/socknotify in it; false when the
 * process may not do that (not root, or no CAP_SYS_ADMIN in a container). */
static bool private_run(void)
{
        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0) {
                fprintf(stderr, "SKIP: needs root and a private mount namespace\n");
                return false;
        }
        ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        ck_assert_int_eq(mount("sn-test-run", "/run", "tmpfs", 0, "mode=0755"), 0);
        ck_assert_int_eq(mkdir("/run/socknotify", 0755), 0);
        return true;
}

/* Starts a daemon the user nobody may connect to.  With system set, its directory is
 * bind-mounted on /run/socknotify, where clients find the system daemon. */
static void start(struct test_daemon *d, const char *ports, bool system)
{
        const char *args[] = { "--socket-mode=0666", "--max-ports", ports, NULL };

        test_daemon_start(d, args);
        ck_assert_int_eq(chmod(d->dir, 0755), 0);
        if (system)
                ck_assert_int_eq(mount(d->dir, "/run/socknotify", NULL, MS_BIND, NULL), 0);
}

struct outcome {
        int r;
        uint32_t max_ports; /* of the daemon connected to */
        char error[640];    /* sn_conn_open_error() */
};

/* Runs sn_conn_open(NULL) in a child process as uid (0 stays root) with the environment given
 * (NULL unsets the variable), and returns what it saw. */
static struct outcome open_as(uid_t uid, const char *xdg, const char *env)
{
        struct outcome o = { 0 };
        int p[2], st;
        pid_t pid;

        ck_assert_int_eq(pipe(p), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *c = NULL;
                sn_limits_t l = { 0 };

                close(p[0]);
                if (uid && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                            setresuid(uid, uid, uid) < 0))
                        _exit(3);
                xdg ? setenv("XDG_RUNTIME_DIR", xdg, 1) : unsetenv("XDG_RUNTIME_DIR");
                env ? setenv("SOCKNOTIFY_SOCKET", env, 1) : unsetenv("SOCKNOTIFY_SOCKET");
                o.r = sn_conn_open(NULL, &c);
                if (o.r == 0 && sn_conn_limits(c, &l) == 0)
                        o.max_ports = l.max_ports;
                snprintf(o.error, sizeof(o.error), "%s", sn_conn_open_error());
                sn_conn_close(c);
                _exit(write(p[1], &o, sizeof(o)) == (ssize_t)sizeof(o) ? 0 : 4);
        }
        close(p[1]);
        ck_assert_int_eq(read(p[0], &o, sizeof(o)), (int)sizeof(o));
        close(p[0]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client child failed (%d)", st);
        return o;
}

START_TEST(test_user_daemon_first)
{
        struct test_daemon user, sys;
        struct outcome o;

        if (!private_run())
                return;
        start(&sys, SYSTEM_PORTS, true);
        start(&user, USER_PORTS, false);
        o = open_as(NOBODY, user.dir, NULL);
        ck_assert_int_eq(o.r, 0);
        ck_assert_uint_eq(o.max_ports, 11);
        ck_assert_str_eq(o.error, "");
        test_daemon_stop(&user);
        umount("/run/socknotify");
        test_daemon_stop(&sys);
}
END_TEST

START_TEST(test_falls_back_to_system_daemon)
{
        struct test_daemon user, sys;
        struct outcome o;

        if (!private_run())
                return;
        start(&sys, SYSTEM_PORTS, true);
        start(&user, USER_PORTS, false);
        /* No per-user daemon in the runtime directory: the system one answers. */
        test_daemon_stop(&user);
        ck_assert_int_eq(mkdir(user.dir, 0755), 0);
        o = open_as(NOBODY, user.dir, NULL);
        ck_assert_int_eq(o.r, 0);
        ck_assert_uint_eq(o.max_ports, 22);
        rmdir(user.dir);
        umount("/run/socknotify");
        test_daemon_stop(&sys);
}
END_TEST

START_TEST(test_no_daemon_names_paths_and_fix)
{
        char xdg[] = "/tmp/sn-test-xdg-XXXXXX", user_sock[64];
        struct outcome o;

        if (!private_run())
                return;
        ck_assert_ptr_nonnull(mkdtemp(xdg));
        ck_assert_int_eq(chmod(xdg, 0755), 0);
        snprintf(user_sock, sizeof(user_sock), "%s/socknotify.sock", xdg);
        o = open_as(NOBODY, xdg, NULL);
        ck_assert_int_eq(o.r, -ENOENT);
        ck_assert_msg(strstr(o.error, user_sock), "per-user path missing: %s", o.error);
        ck_assert_msg(strstr(o.error, SYSTEM_SOCKET), "system path missing: %s", o.error);
        ck_assert_msg(strstr(o.error, "SOCKNOTIFY_SOCKET"), "no hint: %s", o.error);
        /* The per-user path comes first: it is the one tried first. */
        ck_assert(strstr(o.error, user_sock) < strstr(o.error, SYSTEM_SOCKET));
        /* The connect's own text is sn_conn_open_error()'s: sn_strerror() knows only the
         * number, and -ENOENT's text is the registrations' (it no longer mixes the two). */
        ck_assert_ptr_null(strstr(sn_strerror(o.r), "sn_conn_open"));
        rmdir(xdg);
}
END_TEST

START_TEST(test_environment_is_the_only_path)
{
        struct test_daemon sys;
        struct outcome o;

        if (!private_run())
                return;
        start(&sys, SYSTEM_PORTS, true);
        /* A system daemon runs, but SOCKNOTIFY_SOCKET chose another socket: no fallback. */
        o = open_as(NOBODY, "/tmp", "/tmp/sn-test-none/socknotify.sock");
        ck_assert_int_eq(o.r, -ENOENT);
        ck_assert_ptr_nonnull(strstr(o.error, "/tmp/sn-test-none/socknotify.sock"));
        ck_assert_ptr_nonnull(strstr(o.error, "$SOCKNOTIFY_SOCKET"));
        ck_assert_ptr_null(strstr(o.error, SYSTEM_SOCKET));
        /* And it wins over the runtime directory when it names a running daemon. */
        o = open_as(NOBODY, "/tmp", SYSTEM_SOCKET);
        ck_assert_int_eq(o.r, 0);
        ck_assert_uint_eq(o.max_ports, 22);
        umount("/run/socknotify");
        test_daemon_stop(&sys);
}
END_TEST

START_TEST(test_root_uses_system_daemon_only)
{
        struct test_daemon user, sys;
        struct outcome o;

        if (!private_run())
                return;
        start(&sys, SYSTEM_PORTS, true);
        start(&user, USER_PORTS, false);
        o = open_as(0, user.dir, NULL);
        ck_assert_int_eq(o.r, 0);
        ck_assert_uint_eq(o.max_ports, 22);
        test_daemon_stop(&user);
        umount("/run/socknotify");
        test_daemon_stop(&sys);
}
END_TEST

START_TEST(test_refused_system_socket_says_why)
{
        struct test_daemon sys;
        const char *args[] = { "--socket-mode=0600", NULL };
        struct outcome o;

        if (!private_run())
                return;
        /* Only root may connect to this system socket; nobody has no per-user daemon. */
        test_daemon_start(&sys, args);
        ck_assert_int_eq(chmod(sys.dir, 0755), 0);
        ck_assert_int_eq(mount(sys.dir, "/run/socknotify", NULL, MS_BIND, NULL), 0);
        o = open_as(NOBODY, "/tmp/sn-test-none", NULL);
        ck_assert_int_eq(o.r, -EACCES);
        ck_assert_ptr_nonnull(strstr(o.error, SYSTEM_SOCKET));
        ck_assert_ptr_nonnull(strstr(o.error, "group socknotify"));
        umount("/run/socknotify");
        test_daemon_stop(&sys);
}
END_TEST

/* True when this process may make a private mount namespace (tried in a child). */
static bool can_unshare(void)
{
        pid_t pid = fork();
        int st;

        if (pid == 0)
                _exit(geteuid() == 0 && unshare(CLONE_NEWNS) == 0 ? 0 : 1);
        return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
        Suite *s;
        TCase *tc;

        if (!can_unshare()) {
                printf("SKIP: needs root and a private mount namespace\n");
                return 77;
        }
        s = suite_create("default-socket");
        tc = tcase_create("paths");

        tcase_add_test(tc, test_user_daemon_first);
        tcase_add_test(tc, test_falls_back_to_system_daemon);
        tcase_add_test(tc, test_no_daemon_names_paths_and_fix);
        tcase_add_test(tc, test_environment_is_the_only_path);
        tcase_add_test(tc, test_root_uses_system_daemon_only);
        tcase_add_test(tc, test_refused_system_socket_says_why);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

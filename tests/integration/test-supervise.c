/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-supervise.c - socknotify-supervise(1) keeps socknotifyd's descriptor store without
 * systemd: a client's connection, named port, registration of a real TCP socket and its queued
 * notifications survive a kill -9 of the daemon and a restart asked with SIGUSR1, with no
 * resume by the library (SOCKNOTIFY_RECONNECT_MS=0: a lost connection would fail the calls),
 * so the new daemon got the old one's state through LISTEN_FDS/LISTEN_FDNAMES/LISTEN_PID.
 * SIGTERM stops both, exit 0, and the connection then ends.
 *
 * $SN_TEST_DAEMON_WRAPPER (valgrind) goes in front of the daemon, inside the supervisor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static char dir[64], path[128];

static const char *builddir(void)
{
        const char *b = getenv("SN_BUILDDIR");

        return b ? b : SN_BUILDDIR;
}

/* Starts socknotify-supervise -- [wrapper] socknotifyd --socket PATH; returns its pid once the
 * daemon accepts a connection. */
static pid_t start_supervised(void)
{
        const char *wrapper = getenv("SN_TEST_DAEMON_WRAPPER");
        char sup[256], dmn[256], *words = wrapper ? strdup(wrapper) : NULL, *save = NULL;
        const char *argv[32];
        int argc = 0;
        long long end;
        sn_conn_t *c;
        pid_t pid;

        snprintf(dir, sizeof(dir), "/tmp/sn-supervise-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/socknotify.sock", dir);
        snprintf(sup, sizeof(sup), "%s/ctl/socknotify-supervise", builddir());
        snprintf(dmn, sizeof(dmn), "%s/daemon/socknotifyd", builddir());
        argv[argc++] = sup;
        argv[argc++] = "--restart-delay=20";
        argv[argc++] = "--";
        for (char *w = words ? strtok_r(words, " ", &save) : NULL; w && argc < 24;
             w = strtok_r(NULL, " ", &save))
                argv[argc++] = w;
        argv[argc++] = dmn;
        argv[argc++] = "--socket";
        argv[argc++] = path;
        argv[argc] = NULL;
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGTERM);
                execv(sup, (char *const *)argv);
                _exit(127);
        }
        free(words);
        end = now_ms() + test_timeout_ms(20000);
        while (sn_conn_open(path, &c) < 0) {
                ck_assert_msg(now_ms() < end, "the supervised daemon did not start");
                ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0);
                usleep(10000);
        }
        sn_conn_close(c);
        return pid;
}

/* The pid of the daemon that answers on c (its status document). */
static long daemon_pid(sn_conn_t *c)
{
        char *text;
        json_t *doc;
        long pid;

        ck_assert_int_eq(sn_conn_status(c, &text), 0);
        doc = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        pid = (long)json_integer_value(json_object_get(doc, "pid"));
        json_decref(doc);
        free(text);
        ck_assert_int_gt(pid, 0);
        return pid;
}

/* Waits until another daemon than old answers on c; returns its pid.  The connection itself
 * is the one kept in the store: each status call waits in its socket for the next daemon. */
static long wait_new_daemon(sn_conn_t *c, long old)
{
        long long end = now_ms() + test_timeout_ms(30000);
        long pid;

        while ((pid = daemon_pid(c)) == old) {
                ck_assert_msg(now_ms() < end, "no new daemon");
                usleep(10000);
        }
        return pid;
}

/* Dequeues want entries (any order) and checks them: key 7 with IN, key 9 posted. */
static void expect_both(sn_port_t *p)
{
        bool seen7 = false, seen9 = false;

        while (!seen7 || !seen9) {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(p, &e, 1, (uint32_t)test_timeout_ms(10000)), 1);
                if (e.key == 7) {
                        ck_assert(!seen7);
                        ck_assert_uint_eq(e.kind, SN_ENTRY_SOCKET);
                        ck_assert(e.events & SN_EVENT_IN);
                        seen7 = true;
                } else {
                        ck_assert_uint_eq(e.key, 9);
                        ck_assert(!seen9);
                        ck_assert_uint_eq(e.kind, SN_ENTRY_POSTED);
                        ck_assert_uint_eq(e.events, 33);
                        ck_assert_uint_eq(e.overlapped, 0xab);
                        seen9 = true;
                }
        }
}

START_TEST(test_kill9_and_restart_keep_the_session)
{
        sn_registration_t r;
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv, st;
        long pid1, pid2, pid3;
        char buf[8];
        pid_t sup;

        setenv("SOCKNOTIFY_RECONNECT_MS", "0", 1); /* no resume: the store must keep it */
        sup = start_supervised();
        ck_assert_int_eq(sn_conn_open(path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "kept", 0, &p), 0);
        tcp_pair(&cl, &sv);
        r = (sn_registration_t){ .fd = sv, .key = 7, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN,
                                 .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        pid1 = daemon_pid(c);

        /* Queued at the kill: a posted packet and the socket's IN. */
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(sn_port_post(p, 9, 33, 0xab), 0);
        ck_assert_int_eq(kill((pid_t)pid1, SIGKILL), 0);
        pid2 = wait_new_daemon(c, pid1);
        expect_both(p);

        /* SIGUSR1: an orderly restart, now.  The one-shot is re-armed and fires again. */
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        ck_assert_int_eq(sn_port_post(p, 9, 33, 0xab), 0);
        ck_assert_int_eq(kill(sup, SIGUSR1), 0);
        pid3 = wait_new_daemon(c, pid2);
        ck_assert_int_ne(pid3, pid1);
        expect_both(p);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 1);

        /* SIGTERM: the daemon stops, then the supervisor, which closes the store. */
        ck_assert_int_eq(kill(sup, SIGTERM), 0);
        ck_assert_int_eq(waitpid(sup, &st, 0), sup);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 0);
        ck_assert(kill((pid_t)pid3, 0) < 0 && errno == ESRCH);
        ck_assert_int_lt(sn_port_dequeue(p, &(sn_entry_t){ 0 }, 1, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
        close(sv);
        rmdir(dir);
}
END_TEST

/* A child that never becomes ready is started five times, then given up: exit 1. */
START_TEST(test_gives_up_on_a_failing_child)
{
        char sup[256], cmd[512], out[4096];
        size_t n;
        FILE *f;
        int st;

        snprintf(sup, sizeof(sup), "%s/ctl/socknotify-supervise", builddir());
        snprintf(cmd, sizeof(cmd), "%s --restart-delay=1 -- /bin/false 2>&1", sup);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = 0;
        st = pclose(f);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 1);
        ck_assert_msg(strstr(out, "ended 5 times before it was ready"), "%s", out);
        /* Bad usage: 2. */
        snprintf(cmd, sizeof(cmd), "%s --fdstore-max=0 -- /bin/true 2>/dev/null", sup);
        st = system(cmd);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 2);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("supervise");
        TCase *tc = tcase_create("supervise");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_kill9_and_restart_keep_the_session);
        tcase_add_test(tc, test_gives_up_on_a_failing_child);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

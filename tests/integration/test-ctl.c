/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-ctl.c - socknotifyctl against a real daemon: every verb, the JSON it prints, the table
 * layout, exit statuses and messages, what another user may see and do, and the live view under
 * a pseudo-terminal (script(1)).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;

/* Runs socknotifyctl with args (a shell word list); returns its exit status, output in out. */
static int ctl(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ctl(char *out, size_t size, const char *fmt, ...)
{
        char args[512], cmd[1024];
        va_list ap;
        size_t n = 0;
        FILE *f;
        int st;

        va_start(ap, fmt);
        vsnprintf(args, sizeof(args), fmt, ap);
        va_end(ap);
        snprintf(cmd, sizeof(cmd), "SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl %s 2>&1", D.path,
                 SN_BUILDDIR, args);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        while (n + 1 < size && !feof(f))
                n += fread(out + n, 1, size - 1 - n, f);
        out[n] = 0;
        st = pclose(f);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_t *ctl_json(const char *args)
{
        static char out[1 << 20];
        json_error_t je;
        json_t *doc;

        ck_assert_int_eq(ctl(out, sizeof(out), "--json %s", args), 0);
        doc = json_loads(out, 0, &je);
        ck_assert_msg(doc != NULL, "not JSON (%s): %s", je.text, out);
        return doc;
}

static json_t *find(json_t *items, const char *key, json_int_t value)
{
        size_t i;
        json_t *it;

        json_array_foreach(items, i, it)
                if (json_integer_value(json_object_get(it, key)) == value)
                        return it;
        return NULL;
}

/* Parked until the test posts (the verbs in between take seconds on a busy machine). */
static void *waiter(void *arg)
{
        sn_entry_t e;

        return (void *)(long)sn_port_dequeue(arg, &e, 1, test_timeout_ms(50000));
}

/* Waits until the daemon reports one call parked. */
static void wait_parked(sn_conn_t *c)
{
        long long deadline = now_ms() + test_timeout_ms(5000);

        for (;;) {
                char *text = NULL;
                json_t *doc;
                json_int_t n;

                ck_assert_int_eq(sn_conn_status(c, &text), 0);
                doc = json_loads(text, 0, NULL);
                free(text);
                ck_assert_ptr_nonnull(doc);
                n = json_integer_value(json_object_get(doc, "waiters"));
                json_decref(doc);
                if (n == 1)
                        return;
                ck_assert_msg(now_ms() < deadline, "the waiter's call never parked");
                usleep(2000);
        }
}

/* The column of word in line, or -1. */
static int column_of(const char *line, const char *word)
{
        const char *at = strstr(line, word);

        return at ? (int)(at - line) : -1;
}

START_TEST(test_verbs)
{
        sn_conn_t *c;
        sn_port_t *p;
        int lst, cl, sv, u1, u2, us[2];
        unsigned short lport;
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);
        char out[65536], comm[32] = "", expect[64];
        pthread_t th;
        json_t *doc, *it;
        FILE *f;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "web", 3, &p), 0);
        lst = tcp_listener(&lport);
        tcp_pair(&cl, &sv);
        udp_pair(&u1, &u2);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, us), 0);
        sn_registration_t r[4] = {
                { .fd = lst, .key = 1, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
                { .fd = sv, .key = 2, .op = SN_OP_ENABLE,
                  .filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP,
                  .trigger = SN_TRIGGER_EDGE | SN_TRIGGER_ONESHOT },
                { .fd = u1, .key = 3, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
                { .fd = us[1], .key = 4, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
        };
        ck_assert_int_eq(sn_port_process(p, r, 4, NULL, 0, 0), 0);
        r[3].op = SN_OP_DISABLE;
        ck_assert_int_eq(sn_port_process(p, &r[3], 1, NULL, 0, 0), 0);
        ck_assert_int_eq(pthread_create(&th, NULL, waiter, p), 0);
        wait_parked(c);

        /* clients: our connection, with what the kernel says of us. */
        f = fopen("/proc/self/comm", "r");
        ck_assert_ptr_nonnull(fgets(comm, sizeof(comm), f));
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;
        doc = ctl_json("clients");
        it = find(json_object_get(doc, "items"), "pid", getpid());
        ck_assert_ptr_nonnull(it);
        ck_assert_str_eq(json_string_value(json_object_get(it, "command")), comm);
        ck_assert_int_eq(json_integer_value(json_object_get(it, "uid")), getuid());
        ck_assert_int_eq(json_integer_value(json_object_get(it, "ports")), 1);
        ck_assert_int_eq(json_integer_value(json_object_get(it, "registrations")), 4);
        ck_assert_int_eq(json_integer_value(json_object_get(it, "waits")), 1);
        json_decref(doc);

        /* ports */
        doc = ctl_json("ports");
        ck_assert_int_eq(json_array_size(json_object_get(doc, "items")), 1);
        it = json_array_get(json_object_get(doc, "items"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(it, "name")), "web");
        ck_assert_int_eq(json_integer_value(json_object_get(it, "concurrency")), 3);
        ck_assert_int_eq(json_integer_value(json_object_get(it, "registrations")), 4);
        ck_assert_int_eq(json_integer_value(json_object_get(it, "waiters")), 1);
        json_int_t port_id = json_integer_value(json_object_get(it, "id"));
        json_decref(doc);

        /* registrations: kinds, addresses, filter, trigger, state. */
        char args[64];
        snprintf(args, sizeof(args), "registrations --port=%lld", (long long)port_id);
        doc = ctl_json(args);
        json_t *items = json_object_get(doc, "items");
        ck_assert_int_eq(json_array_size(items), 4);
        it = find(items, "key", 1);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "kind")), "tcp");
        ck_assert(json_is_true(json_object_get(json_object_get(it, "socket"), "listening")));
        snprintf(expect, sizeof(expect), "127.0.0.1:%u", ntohs(lport));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "local")), expect);
        it = find(items, "key", 2);
        ck_assert_int_eq(getsockname(cl, (struct sockaddr *)&sa, &len), 0);
        snprintf(expect, sizeof(expect), "127.0.0.1:%u", ntohs(sa.sin_port));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "peer")), expect);
        ck_assert_str_eq(json_string_value(json_object_get(it, "trigger")), "edge,oneshot");
        ck_assert_int_eq(json_array_size(json_object_get(it, "filter")), 2);
        it = find(items, "key", 3);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "kind")), "udp");
        it = find(items, "key", 4);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "kind")), "unix-stream");
        ck_assert_str_eq(json_string_value(json_object_get(it, "state")), "disabled");
        ck_assert_int_eq(json_integer_value(json_object_get(it, "pid")), getpid());
        json_decref(doc);
        snprintf(args, sizeof(args), "registrations --client=%d", (int)getpid() + 100000);
        doc = ctl_json(args);
        ck_assert_int_eq(json_array_size(json_object_get(doc, "items")), 0);
        json_decref(doc);

        /* Tables: a header, then one aligned row per item. */
        ck_assert_int_eq(ctl(out, sizeof(out), "--color=never ports"), 0);
        char *row = strchr(out, '\n');
        ck_assert_ptr_nonnull(row);
        *row++ = 0;
        /* ID is right-aligned over its numbers, NAME left-aligned over the names. */
        ck_assert_int_eq(column_of(out, "ID"), (int)strspn(out, " "));
        ck_assert_int_eq((int)strspn(row, " 0123456789"), column_of(out, "NAME"));
        ck_assert_int_eq(column_of(row, "web"), column_of(out, "NAME"));
        ck_assert_int_eq(ctl(out, sizeof(out), "registrations"), 0);
        ck_assert_ptr_nonnull(strstr(out, "tcp (listening)"));
        ck_assert_ptr_nonnull(strstr(out, "edge,oneshot"));
        ck_assert_ptr_null(strstr(out, "\033[")); /* no colour when not a terminal */
        ck_assert_int_eq(ctl(out, sizeof(out), "status"), 0);
        ck_assert_ptr_nonnull(strstr(out, "max_sockets_per_user"));
        ck_assert_ptr_nonnull(strstr(out, "1 port(s), 4 registration(s), 1 waiting call(s)"));

        /* Steering. */
        ck_assert_int_eq(ctl(out, sizeof(out), "log-level debug"), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "log-level loud"), 1);
        ck_assert_ptr_nonnull(strstr(out, "level:"));
        ck_assert_int_eq(ctl(out, sizeof(out), "reload"), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "reexec"), 0);
        ck_assert_ptr_nonnull(strstr(out, "re-executed"));
        doc = ctl_json("status");
        ck_assert_int_eq(json_integer_value(json_object_get(doc, "reexecs")), 1);
        ck_assert_int_eq(json_integer_value(json_object_get(doc, "registrations")), 4);
        json_decref(doc);
        /* The waiter still waits through it, and is served. */
        ck_assert_int_eq(sn_port_post(p, 9, 0, 0), 0);
        void *got;
        pthread_join(th, &got);
        ck_assert_int_eq((long)got, 1);

        /* Usage errors and a missing daemon. */
        ck_assert_int_eq(ctl(out, sizeof(out), "frobnicate"), 2);
        ck_assert_int_eq(ctl(out, sizeof(out), "-s /nonexistent/x.sock status"), 3);
        ck_assert_ptr_nonnull(strstr(out, "/nonexistent/x.sock"));
        ck_assert_ptr_nonnull(strstr(out, "SOCKNOTIFY_SOCKET"));

        /* The live view, on a pseudo-terminal: redrawn in place, one line per port. */
        char cmd[512];
        snprintf(cmd, sizeof(cmd),
                 "script -qfec 'SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl watch --interval=200 "
                 "--count=2' /dev/null",
                 D.path, SN_BUILDDIR);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = 0;
        ck_assert_int_eq(pclose(f), 0);
        char *first = strstr(out, "\033[H\033[2J");
        ck_assert_ptr_nonnull(first);
        ck_assert_ptr_nonnull(strstr(first + 1, "\033[H\033[2J")); /* two frames */
        ck_assert_ptr_nonnull(strstr(out, "socknotifyd pid"));
        ck_assert_ptr_nonnull(strstr(out, "web"));
        ck_assert_ptr_nonnull(strstr(out, "\033[1m")); /* a terminal gets colour */

        sn_socket_close(c, lst);
        sn_socket_close(c, sv);
        sn_socket_close(c, u1);
        sn_socket_close(c, us[1]);
        close(cl);
        close(u2);
        close(us[0]);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* Another user sees only its own, and may not steer; root sees both. */
START_TEST(test_other_user)
{
        sn_conn_t *c;
        sn_port_t *p;
        int go[2], back[2], st;
        pid_t pid;
        char out[65536], b;
        json_t *doc;

        if (geteuid() != 0) {
                printf("SKIP: test_other_user needs root to run a client as another user\n");
                return;
        }
        test_daemon_start(&D, (const char *const[]){ "--socket-mode=0666", NULL });
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "roots", 0, &p), 0);
        ck_assert_int_eq(pipe(go), 0);
        ck_assert_int_eq(pipe(back), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *cc;
                sn_port_t *pp;
                char cmd[512];
                FILE *f;
                size_t n;
                int ok = 1;

                if (setgid(65534) < 0 || setuid(65534) < 0 || sn_conn_open(D.path, &cc) < 0 ||
                    sn_port_create_named(cc, "theirs", 0, &pp)) {
                        (void)!write(back[1], "x", 1);
                        _exit(3);
                }
                snprintf(cmd, sizeof(cmd), "SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl --json ports",
                         D.path, SN_BUILDDIR);
                f = popen(cmd, "r");
                n = fread(out, 1, sizeof(out) - 1, f);
                out[n] = 0;
                ok &= pclose(f) == 0 && strstr(out, "theirs") && !strstr(out, "roots");
                snprintf(cmd, sizeof(cmd),
                         "SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl log-level debug 2>&1",
                         D.path, SN_BUILDDIR);
                f = popen(cmd, "r");
                n = fread(out, 1, sizeof(out) - 1, f);
                out[n] = 0;
                ok &= WEXITSTATUS(pclose(f)) == 1 && strstr(out, "only root") != NULL;
                if (write(back[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
                        _exit(5);
                _exit(ok ? 0 : 6);
        }
        ck_assert_int_eq(read(back[0], &b, 1), 1);
        ck_assert_int_eq(b, 'r');
        /* While the other user's port exists, root sees both. */
        doc = ctl_json("ports");
        ck_assert_int_eq(json_array_size(json_object_get(doc, "items")), 2);
        json_decref(doc);
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        waitpid(pid, &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
        (void)out;
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("socknotifyctl");
        TCase *tc = tcase_create("socknotifyctl");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_verbs);
        tcase_add_test(tc, test_other_user);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

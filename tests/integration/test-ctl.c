/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-ctl.c - socknotifyctl against a real daemon: every verb, the JSON it prints, the table
 * layout, exit statuses and messages, what another user may see and do, the live view under
 * a pseudo-terminal (script(1)), and names chosen by clients (command names, port names, Unix
 * socket paths with control characters and bytes that are not UTF-8): every client and port
 * listed, tables escaped, JSON exact.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"

static struct test_daemon D;

/* A completion key above 2^63 and beyond the 53 bits a double keeps: printed signed it was
 * negative, and jq rounded it. */
#define BIG_KEY UINT64_C(0xfeedfacecafebeef)
static size_t ctl_len; /* bytes of the last ctl() output */

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
        /* A UTF-8 locale, whatever the caller's: libsmartcols encodes what the locale cannot
         * print, and the tests check the names as a UTF-8 terminal shows them. */
        snprintf(cmd, sizeof(cmd), "LC_ALL=C.UTF-8 SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl %s 2>&1",
                 D.path, SN_BUILDDIR, args);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        while (n + 1 < size && !feof(f))
                n += fread(out + n, 1, size - 1 - n, f);
        out[n] = 0;
        ctl_len = n;
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

/* The registration whose key (a string, "0x" and hex digits) is key, or NULL. */
static json_t *find_key(json_t *items, uint64_t key)
{
        char want[24];
        size_t i;
        json_t *it;

        snprintf(want, sizeof(want), "0x%" PRIx64, key);
        json_array_foreach(items, i, it)
                if (json_is_string(json_object_get(it, "key")) &&
                    !strcmp(json_string_value(json_object_get(it, "key")), want))
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
        char out[65536], comm[32] = "", expect[96], *first;
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
                { .fd = sv, .key = BIG_KEY, .op = SN_OP_ENABLE,
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
        it = find_key(items, 1);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "kind")), "tcp");
        ck_assert(json_is_true(json_object_get(json_object_get(it, "socket"), "listening")));
        snprintf(expect, sizeof(expect), "127.0.0.1:%u", ntohs(lport));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "local")), expect);
        it = find_key(items, BIG_KEY);
        ck_assert_msg(it != NULL, "key 0xfeedfacecafebeef not listed exactly");
        ck_assert_int_eq(getsockname(cl, (struct sockaddr *)&sa, &len), 0);
        snprintf(expect, sizeof(expect), "127.0.0.1:%u", ntohs(sa.sin_port));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "peer")), expect);
        /* Filter and trigger alike: arrays of names. */
        ck_assert_int_eq(json_array_size(json_object_get(it, "trigger")), 2);
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(it, "trigger"), 0)),
                         "edge");
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(it, "trigger"), 1)),
                         "oneshot");
        ck_assert_int_eq(json_array_size(json_object_get(it, "filter")), 2);
        it = find_key(items, 3);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(it, "socket"),
                                                           "kind")), "udp");
        it = find_key(items, 4);
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
        /* Keys unsigned, in hex. */
        ck_assert_msg(strstr(out, " 0xfeedfacecafebeef "), "registrations: %s", out);
        ck_assert_ptr_null(strstr(out, "-77129852519530769"));

        /* -o chooses the columns and their order; --raw one space apart, --noheadings. */
        snprintf(args, sizeof(args), "--raw -o key,PID registrations --port=%lld",
                 (long long)port_id);
        ck_assert_int_eq(ctl(out, sizeof(out), "%s", args), 0);
        ck_assert_msg(!strncmp(out, "KEY PID\n", 8), "raw: %s", out);
        snprintf(expect, sizeof(expect), "\n0xfeedfacecafebeef %d\n", (int)getpid());
        ck_assert_msg(strstr(out, expect), "raw: %s", out);
        snprintf(args, sizeof(args), "registrations --port=%lld -o KEY --noheadings",
                 (long long)port_id);
        ck_assert_int_eq(ctl(out, sizeof(out), "%s", args), 0);
        ck_assert_msg(!strstr(out, "KEY") && strstr(out, "0xfeedfacecafebeef\n") &&
                              strstr(out, "0x1\n"),
                      "noheadings: %s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "--no-legend -r ports -o ID,+USER"), 2);
        ck_assert_msg(strstr(out, "unknown column '+USER'") && strstr(out, "LINGER"), "%s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "--no-legend -r ports -o +BLOCKED"), 0);
        snprintf(expect, sizeof(expect), "%lld web 0 root 1 3 0 4 0 0 1 - 0\n",
                 (long long)port_id);
        if (getuid() == 0) /* user names beside uids: root is root everywhere */
                ck_assert_str_eq(out, expect);
        ck_assert_int_eq(ctl(out, sizeof(out), "status -o ID"), 2);
        ck_assert_ptr_nonnull(strstr(out, "-o applies to"));
        ck_assert_int_eq(ctl(out, sizeof(out), "status"), 0);
        ck_assert_ptr_nonnull(strstr(out, "max_sockets_per_user"));
        ck_assert_ptr_nonnull(strstr(out, "1 port(s), 4 registration(s), 1 waiting call(s)"));

        /* Steering. */
        ck_assert_int_eq(ctl(out, sizeof(out), "log-level debug"), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "log-level loud"), 2); /* bad usage */
        ck_assert_ptr_nonnull(strstr(out, "level:"));
        ck_assert_int_eq(ctl(out, sizeof(out), "reload"), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "reexec"), 0);
        ck_assert_ptr_nonnull(strstr(out, "re-executed"));
        doc = ctl_json("status");
        ck_assert_int_eq(json_integer_value(json_object_get(doc, "reexecs")), 1);
        ck_assert_int_eq(json_integer_value(json_object_get(doc, "restores")), 0);
        ck_assert_int_eq(json_integer_value(json_object_get(doc, "registrations")), 4);
        json_decref(doc);
        /* Which is which: the image's uptime, and the re-exec apart from restores. */
        ck_assert_int_eq(ctl(out, sizeof(out), "status"), 0);
        ck_assert_msg(strstr(out, "this image up ") &&
                              strstr(out, "through 1 re-exec(s) and 0 restore(s)"),
                      "%s", out);
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

        /* The live view into a pipe: plain frames one after the other, no screen codes. */
        ck_assert_int_eq(ctl(out, sizeof(out), "watch --interval=100 --count=2"), 0);
        ck_assert_msg(!memchr(out, '\033', ctl_len), "watch wrote ESC into a pipe: %s", out);
        first = strstr(out, "socknotifyd pid");
        ck_assert_msg(first && strstr(first + 1, "\n\nsocknotifyd pid"), "two frames: %s", out);
        ck_assert_ptr_nonnull(strstr(out, "web"));

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
        first = strstr(out, "\033[H\033[2J");
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

/* Another user sees only its own, and may not steer; root sees both.  The other user has no
 * entry in the user database: the tables show its number where a name would be. */
START_TEST(test_other_user)
{
        sn_conn_t *c;
        sn_port_t *p;
        int go[2], back[2], st;
        pid_t pid;
        char out[65536], b, expect[64];
        json_t *doc;
        uid_t other = 40000;

        if (geteuid() != 0) {
                printf("SKIP: test_other_user needs root to run a client as another user\n");
                return;
        }
        while (getpwuid(other))
                other++;
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

                if (setgid(65534) < 0 || setuid(other) < 0 || sn_conn_open(D.path, &cc) < 0 ||
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
                /* check-config reads the daemon's file: an administrator's verb. */
                snprintf(cmd, sizeof(cmd),
                         "SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl check-config 2>&1",
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
        /* User names beside uids; a uid without a name as its number. */
        ck_assert_int_eq(ctl(out, sizeof(out), "ports -r -n -o NAME,UID,USER"), 0);
        ck_assert_msg(strstr(out, "roots 0 root\n"), "ports: %s", out);
        snprintf(expect, sizeof(expect), "theirs %u %u\n", (unsigned)other, (unsigned)other);
        ck_assert_msg(strstr(out, expect), "ports: %s", out);
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        waitpid(pid, &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
        (void)out;
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* NULL when text (n bytes) is valid UTF-8 holding no control character but newlines: no C0
 * byte other than \n, no DEL, no C1 character (U+0080 to U+009F); else where it goes wrong. */
static const char *terminal_unsafe(const char *text, size_t n)
{
        const unsigned char *b = (const unsigned char *)text;

        for (size_t i = 0; i < n;) {
                unsigned len = b[i] < 0x80 ? 1 : b[i] >= 0xc2 && b[i] <= 0xdf ? 2
                                         : b[i] >= 0xe0 && b[i] <= 0xef ? 3
                                         : b[i] >= 0xf0 && b[i] <= 0xf4 ? 4 : 0;

                if (len == 0 || i + len > n)
                        return text + i;
                for (unsigned k = 1; k < len; k++)
                        if ((b[i + k] & 0xc0) != 0x80)
                                return text + i;
                if ((b[i] < 0x20 && b[i] != '\n') || b[i] == 0x7f ||
                    (b[i] == 0xc2 && b[i + 1] <= 0x9f))
                        return text + i;
                i += len;
        }
        return NULL;
}

/* The bytes a JSON value names: a string's own, or an array of byte values (the form the
 * daemon uses for text that is not UTF-8, see socknotifyctl(1)).  Returns their number. */
static size_t json_bytes(json_t *v, char *out, size_t size)
{
        size_t i, n;
        json_t *x;

        if (json_is_string(v)) {
                n = json_string_length(v);
                ck_assert_uint_le(n, size);
                memcpy(out, json_string_value(v), n);
                return n;
        }
        ck_assert_msg(json_is_array(v), "neither a string nor an array of bytes");
        ck_assert_uint_le(json_array_size(v), size);
        json_array_foreach(v, i, x) {
                ck_assert(json_is_integer(x));
                ck_assert_int_ge(json_integer_value(x), 0);
                ck_assert_int_le(json_integer_value(x), 255);
                out[i] = (char)json_integer_value(x);
        }
        return json_array_size(v);
}

/* v names exactly the n bytes of want, as a string when they are UTF-8, else as bytes. */
static void assert_json_bytes(json_t *v, const char *want, size_t n, bool utf8)
{
        char got[256];

        ck_assert_msg(utf8 ? json_is_string(v) : json_is_array(v), "wrong JSON form");
        ck_assert_uint_eq(json_bytes(v, got, sizeof(got)), n);
        ck_assert(memcmp(got, want, n) == 0);
}

/* The item whose key names exactly the n bytes of want, or NULL. */
static json_t *find_bytes(json_t *items, const char *key, const char *want, size_t n)
{
        char got[256];
        size_t i;
        json_t *it;

        json_array_foreach(items, i, it) {
                json_t *v = json_object_get(it, key);

                if ((json_is_string(v) || json_is_array(v)) &&
                    json_bytes(v, got, sizeof(got)) == n && memcmp(got, want, n) == 0)
                        return it;
        }
        return NULL;
}

/* A listening Unix stream socket bound to path (path_len bytes: a leading NUL makes it
 * abstract, and NULs may follow). */
static int unix_listener(const char *path, size_t path_len)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        ck_assert_uint_le(path_len, sizeof(sa.sun_path));
        memcpy(sa.sun_path, path, path_len);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len)), 0);
        ck_assert_int_eq(listen(fd, 1), 0);
        return fd;
}

/* Names clients choose: a command name with ESC, BEL and a byte that is not UTF-8 (set with
 * PR_SET_NAME), port names with a C1 control (CSI, U+009B) and bad bytes, or valid UTF-8 with
 * a C1 control (NEL, U+0085), Unix sockets bound to paths and an abstract name with control
 * characters.  Each client
 * and port is listed (table and JSON), no control character reaches the table output, the JSON
 * output is ASCII and names the exact bytes, and the counts agree with status. */
START_TEST(test_hostile_names)
{
        static const char comm[] = "\x1b]0;pwn\x07\xff";
        static const char bad_port[] = "\xc2\x9b" "31m\xff\x80web";
        static const char utf8_port[] = "caf\xc3\xa9\xc2\x85";
        static const char abstract[] = "\0ab\x1b\0c\xff";
        char path_bad[128], path_utf8[128], out[65536], got[256], args[64];
        sn_port_t *pb, *pu;
        sn_conn_t *c;
        int lb, lu, la;
        json_t *doc, *items, *it, *status;
        json_int_t port_id;
        size_t i, n;

        test_daemon_start(&D, NULL);
        snprintf(path_bad, sizeof(path_bad), "%s/s\x1b[2J\x07\xc2\x9b\xff", D.dir);
        snprintf(path_utf8, sizeof(path_utf8), "%s/v\x1b[31m\xc3\xa9", D.dir);
        ck_assert_int_eq(prctl(PR_SET_NAME, comm), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, bad_port, 1, &pb), 0);
        ck_assert_int_eq(sn_port_create_named(c, utf8_port, 1, &pu), 0);
        lb = unix_listener(path_bad, strlen(path_bad));
        lu = unix_listener(path_utf8, strlen(path_utf8));
        la = unix_listener(abstract, sizeof(abstract) - 1);
        sn_registration_t r[3] = {
                { .fd = lb, .key = 1, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
                { .fd = lu, .key = 2, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
                { .fd = la, .key = 3, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
        };
        ck_assert_int_eq(sn_port_process(pb, r, 3, NULL, 0, 0), 0);
        for (i = 0; i < 3; i++)
                ck_assert_int_eq(r[i].result, 0);

        /* JSON: every client and port is there, with its exact bytes; the text is ASCII. */
        status = ctl_json("status");
        doc = ctl_json("clients");
        items = json_object_get(doc, "items");
        ck_assert_int_eq(json_array_size(items),
                         json_integer_value(json_object_get(status, "connections")));
        it = find(items, "pid", getpid());
        ck_assert_msg(it != NULL, "the client with a hostile command name is not listed");
        assert_json_bytes(json_object_get(it, "command"), comm, strlen(comm), false);
        json_decref(doc);
        doc = ctl_json("ports");
        items = json_object_get(doc, "items");
        ck_assert_int_eq(json_array_size(items), 2);
        ck_assert_int_eq(json_array_size(items),
                         json_integer_value(json_object_get(status, "ports")));
        it = find_bytes(items, "name", bad_port, strlen(bad_port));
        ck_assert_msg(it != NULL, "the port with a name that is not UTF-8 is not listed");
        assert_json_bytes(json_object_get(it, "name"), bad_port, strlen(bad_port), false);
        port_id = json_integer_value(json_object_get(it, "id"));
        it = find_bytes(items, "name", utf8_port, strlen(utf8_port));
        ck_assert_ptr_nonnull(it);
        assert_json_bytes(json_object_get(it, "name"), utf8_port, strlen(utf8_port), true);
        json_decref(doc);
        snprintf(args, sizeof(args), "registrations --port=%lld", (long long)port_id);
        doc = ctl_json(args);
        items = json_object_get(doc, "items");
        ck_assert_int_eq(json_array_size(items), 3);
        ck_assert_int_eq(json_array_size(items),
                         json_integer_value(json_object_get(status, "registrations")));
        assert_json_bytes(json_object_get(json_object_get(find_key(items, 1), "socket"),
                                          "local"),
                          path_bad, strlen(path_bad), false);
        assert_json_bytes(json_object_get(json_object_get(find_key(items, 2), "socket"),
                                          "local"),
                          path_utf8, strlen(path_utf8), true);
        n = json_bytes(json_object_get(json_object_get(find_key(items, 3), "socket"), "local"),
                       got, sizeof(got));
        ck_assert_uint_eq(n, sizeof(abstract) - 1);
        ck_assert_int_eq(got[0], '@');
        ck_assert(memcmp(got + 1, abstract + 1, n - 1) == 0);
        json_decref(doc);
        json_decref(status);
        ck_assert_int_eq(ctl(out, sizeof(out), "--json registrations"), 0);
        for (i = 0; i < ctl_len; i++)
                ck_assert_msg((unsigned char)out[i] < 0x80, "--json output is not ASCII");

        /* Tables: everything listed, escaped, nothing a terminal would act on. */
        ck_assert_int_eq(ctl(out, sizeof(out), "--color=never clients"), 0);
        ck_assert_msg(!terminal_unsafe(out, ctl_len), "clients: raw control bytes: %s", out);
        ck_assert_msg(strstr(out, "\\e]0;pwn\\a\\xff"), "clients: %s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "--color=never ports"), 0);
        ck_assert_msg(!terminal_unsafe(out, ctl_len), "ports: raw control bytes: %s", out);
        ck_assert_msg(strstr(out, "\\xc2\\x9b" "31m\\xff\\x80web"), "ports: %s", out);
        ck_assert_msg(strstr(out, "caf\xc3\xa9\\xc2\\x85"), "ports: %s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "--color=never registrations"), 0);
        ck_assert_msg(!terminal_unsafe(out, ctl_len), "registrations: raw control bytes: %s",
                      out);
        ck_assert_msg(strstr(out, "/s\\e[2J\\a\\xc2\\x9b\\xff"), "registrations: %s", out);
        ck_assert_msg(strstr(out, "/v\\e[31m\xc3\xa9"), "registrations: %s", out);
        ck_assert_msg(strstr(out, "@ab\\e\\x00c\\xff"), "registrations: %s", out);
        /* The live view, into a pipe: no screen control of its own, and none of the names'. */
        ck_assert_int_eq(ctl(out, sizeof(out), "watch --count=1"), 0);
        ck_assert_msg(!terminal_unsafe(out, ctl_len), "watch: raw control bytes: %s", out);
        ck_assert_msg(strstr(out, "\\xc2\\x9b" "31m\\xff\\x80web"), "watch: %s", out);

        sn_socket_close(c, lb);
        sn_socket_close(c, lu);
        sn_socket_close(c, la);
        sn_port_close(pb);
        sn_port_close(pu);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* Bidirectional controls in a port name (valid UTF-8, no control character) are escaped too:
 * raw, U+202E RIGHT-TO-LEFT OVERRIDE reversed the rest of the row in root's terminal, so that
 * "evil<RLO>exe.txt" showed as "eviltxt.exe" and the columns after it ran backwards. */
START_TEST(test_bidi_names)
{
        static const char name[] = "evil\xe2\x80\xae" "exe.txt\xe2\x81\xa6x\xe2\x80\x8b";
        char out[65536];
        sn_port_t *p;
        sn_conn_t *c;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, name, 1, &p), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "--color=never ports"), 0);
        ck_assert_msg(!strstr(out, "\xe2\x80\xae") && !strstr(out, "\xe2\x81\xa6") &&
                              !strstr(out, "\xe2\x80\x8b"),
                      "ports: a raw bidirectional or zero-width character: %s", out);
        ck_assert_msg(strstr(out, "evil\\xe2\\x80\\xae" "exe.txt\\xe2\\x81\\xa6x\\xe2\\x80\\x8b"),
                      "ports: %s", out);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* The state of one registration (by key) in the registrations listing. */
static const char *reg_state(uint64_t key)
{
        static char state[32];
        json_t *doc = ctl_json("registrations"), *it;

        it = find_key(json_object_get(doc, "items"), key);
        ck_assert_ptr_nonnull(it);
        snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(it, "state")));
        json_decref(doc);
        return state;
}

/* A one-shot is "armed" until its entry is dequeued, then "disarmed" until its next ENABLE;
 * a persistent registration is "enabled", a disabled one "disabled" (issue 28: a fired
 * one-shot showed as "enabled"). */
START_TEST(test_oneshot_states)
{
        int a[2], b[2];
        sn_entry_t e;
        sn_port_t *p;
        sn_conn_t *c;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 1, &p), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
        sn_registration_t r[2] = {
                { .fd = a[0], .filter = SN_REGISTER_EVENT_IN, .op = SN_OP_ENABLE,
                  .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, .key = 1 },
                { .fd = b[0], .filter = SN_REGISTER_EVENT_IN, .op = SN_OP_ENABLE,
                  .trigger = SN_TRIGGER_LEVEL, .key = 2 },
        };
        ck_assert_int_eq(sn_port_process(p, r, 2, NULL, 0, 0), 0);
        ck_assert_str_eq(reg_state(1), "armed");
        ck_assert_str_eq(reg_state(2), "enabled");
        ck_assert_int_eq(write(a[1], "x", 1), 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, 1);
        ck_assert_str_eq(reg_state(1), "disarmed");
        /* Its next ENABLE arms it again (the data still there: it fires again at once). */
        ck_assert_int_eq(sn_port_process(p, r, 1, NULL, 0, 0), 0);
        ck_assert_str_eq(reg_state(1), "armed");
        r[0].op = SN_OP_DISABLE;
        ck_assert_int_eq(sn_port_process(p, r, 1, NULL, 0, 0), 0);
        ck_assert_str_eq(reg_state(1), "disabled");
        sn_port_close(p);
        sn_conn_close(c);
        close(a[0]);
        close(a[1]);
        close(b[0]);
        close(b[1]);
}
END_TEST

/* Without a daemon the message is the library's account: the path tried and its error, no C
 * function names, no registration error.  On a socket the user may not open, the socknotify
 * group is named, not a daemon that might not be running. */
START_TEST(test_open_errors)
{
        char out[8192], path[96];
        int fds[2], st;
        ssize_t n;
        pid_t pid;

        snprintf(path, sizeof(path), "/nonexistent-%d/x.sock", (int)getpid());
        ck_assert_int_eq(ctl(out, sizeof(out), "-s %s status", path), 3);
        ck_assert_msg(strstr(out, path) && strstr(out, "No such file or directory"), "%s", out);
        ck_assert_msg(!strstr(out, "sn_") && !strstr(out, "()") && !strstr(out, "registration"),
                      "no daemon: %s", out);
        ck_assert_msg(strstr(out, "-s PATH"), "no daemon: %s", out);

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(pipe(fds), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int rc;

                /* Root passes any mode: as another user, the daemon's directory (0700, root's)
                 * is closed; as that user, the socket itself. */
                if (geteuid() == 0 ? setgid(65534) < 0 || setuid(65534) < 0
                                   : chmod(D.path, 0) < 0)
                        _exit(3);
                rc = ctl(out, sizeof(out), "ports");
                (void)!write(fds[1], &rc, sizeof(rc));
                (void)!write(fds[1], out, ctl_len);
                _exit(0);
        }
        close(fds[1]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
        int rc = -1;
        ck_assert_int_eq(read(fds[0], &rc, sizeof(rc)), sizeof(rc));
        n = read(fds[0], out, sizeof(out) - 1);
        ck_assert_int_ge(n, 0);
        out[n] = 0;
        close(fds[0]);
        ck_assert_int_eq(rc, 3);
        ck_assert_msg(strstr(out, D.path) && strstr(out, "Permission denied"), "%s", out);
        ck_assert_msg(strstr(out, "group socknotify"), "no group hint: %s", out);
        /* The daemon runs: starting one is the wrong advice. */
        ck_assert_msg(!strstr(out, "Start socknotifyd"), "permission denied: %s", out);
        ck_assert_msg(!strstr(out, "Is the daemon running") && !strstr(out, "-s PATH") &&
                              !strstr(out, "sn_") && !strstr(out, "registration"),
                      "permission denied: %s", out);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* What the schema in socknotifyctl(1) says of one key: its JSON type, or null for an absent
 * value ('i' integer, 'I' integer or null, 'r' real, 'b' boolean, 's' string, 'S' string or
 * null, 'B' bytes (a string or an array of byte values) or null, 'k' a completion key (the
 * string "0x" and lowercase hex digits), 'n' an array of names, 'o' an object). */
struct field {
        const char *key;
        char type;
};

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

static void check_fields(json_t *o, const struct field *f, size_t n, const char *what)
{
        const char *key;
        json_t *v;

        ck_assert_msg(json_is_object(o), "%s: not an object", what);
        ck_assert_msg(json_object_size(o) == n, "%s: %zu keys, the schema has %zu", what,
                      json_object_size(o), n);
        for (size_t i = 0; i < n; i++) {
                bool ok;

                v = json_object_get(o, f[i].key);
                ck_assert_msg(v != NULL, "%s: no %s", what, f[i].key);
                switch (f[i].type) {
                case 'i': ok = json_is_integer(v); break;
                case 'I': ok = json_is_integer(v) || json_is_null(v); break;
                case 'r': ok = json_is_real(v); break;
                case 'b': ok = json_is_boolean(v); break;
                case 's': ok = json_is_string(v) && json_string_length(v) > 0; break;
                case 'S': ok = json_is_null(v) || (json_is_string(v) && json_string_length(v));
                          break;
                case 'B': ok = json_is_null(v) || json_is_array(v) ||
                               (json_is_string(v) && json_string_length(v) > 0);
                          break;
                case 'k': {
                        const char *t = json_string_value(v);

                        ok = t && !strncmp(t, "0x", 2) && t[2] &&
                             strspn(t + 2, "0123456789abcdef") == strlen(t + 2) &&
                             strlen(t + 2) <= 16;
                        break;
                }
                case 'n': {
                        size_t k;
                        json_t *x;

                        ok = json_is_array(v);
                        json_array_foreach(v, k, x)
                                ok &= json_is_string(x) && json_string_length(x) > 0;
                        break;
                }
                default: ok = json_is_object(v); break;
                }
                ck_assert_msg(ok, "%s: %s is not of type '%c'", what, f[i].key, f[i].type);
        }
        json_object_foreach(o, key, v) {
                size_t i = 0;

                while (i < n && strcmp(f[i].key, key))
                        i++;
                ck_assert_msg(i < n, "%s: %s is not in the schema", what, key);
        }
}

/* The JSON of clients, ports and registrations, key by key, as socknotifyctl(1) documents it:
 * absent values null (a private port's name, a listening socket's peer, an unnamed Unix
 * socket's address), never "" or "(unnamed)"; filter and trigger both arrays of names; keys
 * as exact strings. */
START_TEST(test_json_schema)
{
        static const struct field client[] = {
                { "id", 'i' },    { "pid", 'i' },        { "uid", 'i' },
                { "gid", 'i' },   { "command", 'B' },    { "handshake", 'b' },
                { "transport", 's' }, { "self_scheduled", 'b' },
                { "max_message", 'i' }, { "max_fds", 'i' },
                { "doorbell_mutes", 'i' }, { "ports", 'i' },
                { "registrations", 'i' }, { "waits", 'i' }, { "queued_bytes", 'i' },
                { "age_seconds", 'r' },
        };
        static const struct field port[] = {
                { "id", 'i' },          { "name", 'B' },     { "uid", 'i' },
                { "handles", 'i' },     { "concurrency", 'i' }, { "running", 'i' },
                { "blocked", 'i' },     { "registrations", 'i' }, { "queued", 'i' },
                { "posted", 'i' },      { "waiters", 'i' },  { "linger_ms", 'i' },
                { "linger_left_ms", 'i' }, { "ownerless", 'i' },
        };
        static const struct field reg[] = {
                { "port", 'i' },   { "key", 'k' },     { "pid", 'I' },   { "socket", 'o' },
                { "filter", 'n' }, { "trigger", 'n' }, { "state", 's' }, { "queued", 'b' },
        };
        static const struct field sock[] = {
                { "kind", 's' }, { "listening", 'b' }, { "local", 'B' }, { "peer", 'B' },
        };
        sn_port_t *named, *private;
        sn_conn_t *c;
        int lst, us[2];
        unsigned short lport;
        json_t *doc, *it;
        size_t i;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "schema", 1, &named), 0);
        ck_assert_int_eq(sn_port_create(c, 1, &private), 0);
        lst = tcp_listener(&lport);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, us), 0);
        sn_registration_t r[2] = {
                { .fd = lst, .key = BIG_KEY, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
                { .fd = us[0], .key = 0, .op = SN_OP_ENABLE, .filter = 0,
                  .trigger = SN_TRIGGER_EDGE },
        };
        ck_assert_int_eq(sn_port_process(named, r, 2, NULL, 0, 0), 0);
        ck_assert_int_eq(r[0].result, 0);
        ck_assert_int_eq(r[1].result, 0);

        doc = ctl_json("clients");
        json_array_foreach(json_object_get(doc, "items"), i, it)
                check_fields(it, client, ELEMENTS(client), "clients");
        json_decref(doc);
        doc = ctl_json("ports");
        ck_assert_int_eq(json_array_size(json_object_get(doc, "items")), 2);
        json_array_foreach(json_object_get(doc, "items"), i, it)
                check_fields(it, port, ELEMENTS(port), "ports");
        /* The private port has no name: null. */
        ck_assert(json_is_null(json_object_get(json_array_get(json_object_get(doc, "items"), 0),
                                               "name")) !=
                  json_is_null(json_object_get(json_array_get(json_object_get(doc, "items"), 1),
                                               "name")));
        json_decref(doc);
        doc = ctl_json("registrations");
        ck_assert_int_eq(json_array_size(json_object_get(doc, "items")), 2);
        json_array_foreach(json_object_get(doc, "items"), i, it) {
                check_fields(it, reg, ELEMENTS(reg), "registrations");
                check_fields(json_object_get(it, "socket"), sock, ELEMENTS(sock),
                             "registrations.socket");
                ck_assert_int_eq(json_array_size(json_object_get(it, "trigger")), 2);
        }
        it = find_key(json_object_get(doc, "items"), BIG_KEY);
        ck_assert_ptr_nonnull(it);
        ck_assert(json_is_null(json_object_get(json_object_get(it, "socket"), "peer")));
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(it, "trigger"), 0)),
                         "level");
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(it, "trigger"), 1)),
                         "persistent");
        it = find_key(json_object_get(doc, "items"), 0);
        ck_assert_ptr_nonnull(it);
        ck_assert(json_is_null(json_object_get(json_object_get(it, "socket"), "local")));
        ck_assert(json_is_null(json_object_get(json_object_get(it, "socket"), "peer")));
        ck_assert_int_eq(json_array_size(json_object_get(it, "filter")), 0);
        json_decref(doc);

        sn_socket_close(c, lst);
        sn_socket_close(c, us[0]);
        close(us[1]);
        sn_port_close(named);
        sn_port_close(private);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* ---- the metrics text, read by a strict parser of its own --------------------------------- */

/*
 * Checks text (socknotifyctl metrics) against the exposition format: OpenMetrics 1.0 when om,
 * else Prometheus' text format 0.0.4.  Strict where the two are: every line ends in a newline
 * and none is empty; metadata (# TYPE, # HELP) of a family comes once, before its samples, and
 * a family's lines are together; names and label names are of the formats' alphabets, label
 * values escape only \\, \" and \n, no label is given twice in a sample and no sample twice; a
 * value is a number; a counter's samples end in "_total" (its family is named without it in
 * OpenMetrics, with it in 0.0.4) and are not negative; OpenMetrics ends with "# EOF" and 0.0.4
 * has no EOF line nor the type "info".  Returns NULL, or what is wrong and on which line
 * (static).  Each sample goes to the list samples ("name{labels} value" lines, for
 * metric_value()).
 */
#define OM_MAX 4096
struct om_family {
        char name[128], type[16];
        bool help, samples;
};
static struct om_family om_fam[OM_MAX];
static char om_sample[OM_MAX][1024];
static double om_value[OM_MAX];
static int om_nfam, om_nsample;

static bool om_name(const char *s, size_t n, bool colon)
{
        if (!n || !(s[0] == '_' || ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z') ||
                    (colon && s[0] == ':')))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(s[i] == '_' || ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z') ||
                      (s[i] >= '0' && s[i] <= '9') || (colon && s[i] == ':')))
                        return false;
        return true;
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);

        return n > k && !strcmp(s + n - k, suffix);
}

static const char *om_check(const char *text, bool om)
{
        static char why[2048];
        const char *line = text;
        int lineno = 0, cur = -1;
        bool eof = false;

        om_nfam = om_nsample = 0;
        while (*line) {
                const char *nl = strchr(line, '\n');
                char buf[1024];
                size_t len;

                lineno++;
                if (!nl) {
                        snprintf(why, sizeof(why), "line %d: no newline at its end", lineno);
                        return why;
                }
                len = (size_t)(nl - line);
                if (len >= sizeof(buf) || len == 0) {
                        snprintf(why, sizeof(why), "line %d: %s", lineno,
                                 len ? "too long" : "empty");
                        return why;
                }
                memcpy(buf, line, len);
                buf[len] = 0;
                line = nl + 1;
                if (eof) {
                        snprintf(why, sizeof(why), "line %d: after # EOF", lineno);
                        return why;
                }
                if (buf[len - 1] == ' ' || buf[len - 1] == '\t') {
                        snprintf(why, sizeof(why), "line %d: trailing white space", lineno);
                        return why;
                }
                if (!strcmp(buf, "# EOF")) {
                        if (!om) {
                                snprintf(why, sizeof(why), "line %d: # EOF in 0.0.4", lineno);
                                return why;
                        }
                        eof = true;
                        continue;
                }
                if (buf[0] == '#') {
                        char kind[8], name[128];
                        int used = 0, f;

                        if (sscanf(buf, "# %7s %127s %n", kind, name, &used) != 2 || !used ||
                            (strcmp(kind, "TYPE") && strcmp(kind, "HELP")) ||
                            !om_name(name, strlen(name), true)) {
                                snprintf(why, sizeof(why), "line %d: not metadata: %s", lineno,
                                         buf);
                                return why;
                        }
                        for (f = 0; f < om_nfam && strcmp(om_fam[f].name, name); f++)
                                ;
                        if (f == om_nfam) {
                                ck_assert_int_lt(om_nfam, OM_MAX);
                                memset(&om_fam[f], 0, sizeof(om_fam[f]));
                                snprintf(om_fam[f].name, sizeof(om_fam[f].name), "%s", name);
                                om_nfam++;
                        } else if (f != cur || om_fam[f].samples) {
                                snprintf(why, sizeof(why), "line %d: %s's metadata is not "
                                         "together, before its samples", lineno, name);
                                return why;
                        }
                        cur = f;
                        if (!strcmp(kind, "TYPE")) {
                                const char *t = buf + used;

                                if (om_fam[f].type[0] ||
                                    (strcmp(t, "counter") && strcmp(t, "gauge") &&
                                     !(om && !strcmp(t, "info")))) {
                                        snprintf(why, sizeof(why), "line %d: bad or second "
                                                 "TYPE: %s", lineno, buf);
                                        return why;
                                }
                                if (!strcmp(t, "counter") && ends_with(name, "_total") == om) {
                                        snprintf(why, sizeof(why), "line %d: counter family "
                                                 "%s %s _total", lineno, name,
                                                 om ? "ends in" : "does not end in");
                                        return why;
                                }
                                snprintf(om_fam[f].type, sizeof(om_fam[f].type), "%s", t);
                        } else {
                                if (om_fam[f].help || !buf[used]) {
                                        snprintf(why, sizeof(why), "line %d: bad or second "
                                                 "HELP", lineno);
                                        return why;
                                }
                                om_fam[f].help = true;
                        }
                        continue;
                }
                /* A sample: name, labels, one space, the value. */
                {
                        size_t n = strcspn(buf, "{ ");
                        char name[128], labels[8][64], *p = buf + n, *end;
                        int nlabels = 0, f;
                        double v;
                        const char *fam_name;

                        if (n >= sizeof(name) || !om_name(buf, n, true)) {
                                snprintf(why, sizeof(why), "line %d: bad name: %s", lineno, buf);
                                return why;
                        }
                        memcpy(name, buf, n);
                        name[n] = 0;
                        if (*p == '{') {
                                p++;
                                while (*p != '}') {
                                        size_t k = strcspn(p, "=");

                                        if (!om_name(p, k, false) || p[k] != '=' ||
                                            p[k + 1] != '"' || nlabels == 8 || k >= 64) {
                                                snprintf(why, sizeof(why), "line %d: bad label: "
                                                         "%s", lineno, buf);
                                                return why;
                                        }
                                        memcpy(labels[nlabels], p, k);
                                        labels[nlabels][k] = 0;
                                        for (int i = 0; i < nlabels; i++)
                                                if (!strcmp(labels[i], labels[nlabels])) {
                                                        snprintf(why, sizeof(why), "line %d: "
                                                                 "label twice", lineno);
                                                        return why;
                                                }
                                        nlabels++;
                                        p += k + 2;
                                        while (*p != '"') {
                                                if (!*p) {
                                                        snprintf(why, sizeof(why), "line %d: "
                                                                 "unterminated value", lineno);
                                                        return why;
                                                }
                                                if (*p == '\\' && !strchr("\\\"n", p[1])) {
                                                        snprintf(why, sizeof(why), "line %d: "
                                                                 "bad escape", lineno);
                                                        return why;
                                                }
                                                p += *p == '\\' ? 2 : 1;
                                        }
                                        p++;
                                        if (*p == ',')
                                                p++;
                                        else if (*p != '}') {
                                                snprintf(why, sizeof(why), "line %d: bad label "
                                                         "list", lineno);
                                                return why;
                                        }
                                }
                                p++;
                        }
                        if (*p != ' ' || !p[1] || p[1] == ' ') {
                                snprintf(why, sizeof(why), "line %d: no value: %s", lineno, buf);
                                return why;
                        }
                        errno = 0;
                        v = strtod(p + 1, &end);
                        if (*end || errno) {
                                snprintf(why, sizeof(why), "line %d: bad value (or a "
                                         "timestamp): %s", lineno, buf);
                                return why;
                        }
                        /* The family the sample belongs to: the current one, by the rules of
                         * its type. */
                        if (cur < 0 || !om_fam[cur].type[0]) {
                                snprintf(why, sizeof(why), "line %d: a sample without TYPE",
                                         lineno);
                                return why;
                        }
                        f = cur;
                        fam_name = om_fam[f].name;
                        {
                                char want[160];
                                bool counter = !strcmp(om_fam[f].type, "counter");

                                snprintf(want, sizeof(want), "%s%s", fam_name,
                                         counter && om ? "_total"
                                         : !strcmp(om_fam[f].type, "info") ? "_info"
                                                                           : "");
                                if (strcmp(name, want)) {
                                        snprintf(why, sizeof(why), "line %d: sample %s in "
                                                 "family %s (%s)", lineno, name, fam_name,
                                                 om_fam[f].type);
                                        return why;
                                }
                                if (counter && v < 0) {
                                        snprintf(why, sizeof(why), "line %d: negative counter",
                                                 lineno);
                                        return why;
                                }
                        }
                        om_fam[f].samples = true;
                        *p = 0;
                        for (int i = 0; i < om_nsample; i++)
                                if (!strcmp(om_sample[i], buf)) {
                                        snprintf(why, sizeof(why), "line %d: sample twice: %s",
                                                 lineno, buf);
                                        return why;
                                }
                        ck_assert_int_lt(om_nsample, OM_MAX);
                        snprintf(om_sample[om_nsample], sizeof(om_sample[0]), "%s", buf);
                        om_value[om_nsample++] = v;
                }
        }
        if (om && !eof)
                return "no # EOF at the end";
        for (int f = 0; f < om_nfam; f++)
                if (!om_fam[f].samples) {
                        snprintf(why, sizeof(why), "family %s has no sample", om_fam[f].name);
                        return why;
                }
        return NULL;
}

/* The value of the sample written exactly as sample ("name" or "name{labels}") in the text
 * om_check() read last; NAN when there is none. */
static double metric_value(const char *sample)
{
        for (int i = 0; i < om_nsample; i++)
                if (!strcmp(om_sample[i], sample))
                        return om_value[i];
        return NAN;
}
/* The text of the JSON number that follows "key": in text, or "" (static). */
static const char *number_text(const char *text, const char *key)
{
        static char num[64];
        char pat[80];
        const char *p;

        snprintf(pat, sizeof(pat), "\"%s\": ", key);
        p = strstr(text, pat);
        num[0] = 0;
        if (p) {
                p += strlen(pat);
                snprintf(num, sizeof(num), "%.*s", (int)strspn(p, "0123456789.eE+-"), p);
        }
        return num;
}

/* The JSON document that starts at the first '{' of out (stdout and stderr are one text). */
static json_t *json_in(const char *out)
{
        const char *p = strchr(out, '{');
        json_error_t je;
        json_t *doc = p ? json_loads(p, JSON_DISABLE_EOF_CHECK, &je) : NULL;

        ck_assert_msg(doc != NULL, "no JSON in: %s", out);
        return doc;
}

/* Issue 41 item 4: the edges of the command line.  A bad value is named, an unknown option
 * gets the one line systemd's and util-linux's tools print, a bad level is bad usage (2), an
 * unknown port an error (1) and not an empty list, --json is JSON for watch (one frame a line)
 * and for a refusal, and reals have the digits they mean, not 17. */
START_TEST(test_usage_edges)
{
        char out[65536], *line2;
        sn_conn_t *c;
        sn_port_t *p;
        json_t *doc, *f;

        ck_assert_int_eq(ctl(out, sizeof(out), "--bogus"), 2);
        ck_assert_str_eq(out, "socknotifyctl: unrecognized option '--bogus'\n"
                              "Try 'socknotifyctl --help' for more information.\n");
        ck_assert_int_eq(ctl(out, sizeof(out), "%s", ""), 2);
        ck_assert_msg(!strstr(out, "Usage:") && strstr(out, "Try 'socknotifyctl --help'"), "%s",
                      out);
        ck_assert_int_eq(ctl(out, sizeof(out), "registrations --port=abc"), 2);
        ck_assert_msg(strstr(out, "--port: 'abc' is not a port id") && !strstr(out, "Usage:"),
                      "%s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "watch --port=1"), 2);
        ck_assert_msg(strstr(out, "--port applies to registrations"), "%s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "log-level loud"), 2);
        ck_assert_msg(strstr(out, "'loud' is not a level"), "%s", out);

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "edges", 0, &p), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "registrations --port=424242"), 1);
        ck_assert_msg(strstr(out, "no port 424242"), "%s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "--json registrations --port=424242"), 1);
        doc = json_in(out);
        ck_assert_msg(strstr(json_string_value(json_object_get(doc, "error")), "no port 424242"),
                      "%s", out);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "errno")), "ENOENT");
        json_decref(doc);

        /* watch --json: a frame a line, each a document with the status and the ports. */
        ck_assert_int_eq(ctl(out, sizeof(out), "--json watch --interval=50 --count=2"), 0);
        line2 = strchr(out, '\n');
        ck_assert_msg(line2 && line2[1] && strchr(line2 + 1, '\n') &&
                              !strchr(line2 + 1, '\n')[1],
                      "two lines: %s", out);
        for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                f = json_loadb(l, strcspn(l, "\n"), 0, NULL);
                ck_assert_msg(f != NULL, "watch --json, not JSON: %s", out);
                ck_assert(json_is_integer(json_object_get(json_object_get(f, "status"), "pid")));
                ck_assert_str_eq(json_string_value(json_object_get(
                                         json_array_get(json_object_get(f, "items"), 0), "name")),
                                 "edges");
                json_decref(f);
        }

        /* Times to the millisecond: at most three decimals, never 17 digits. */
        ck_assert_int_eq(ctl(out, sizeof(out), "--json status"), 0);
        const char *up = number_text(out, "uptime_seconds"), *dot = strchr(up, '.');
        ck_assert_msg(*up && (!dot || strlen(dot + 1) <= 3), "uptime_seconds %s", up);
        ck_assert_int_eq(ctl(out, sizeof(out), "--json clients"), 0);
        up = number_text(out, "age_seconds");
        dot = strchr(up, '.');
        ck_assert_msg(*up && (!dot || strlen(dot + 1) <= 3), "age_seconds %s", up);

        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* A re-exec the new binary refuses is reported in the daemon's words (exit 1), not as the
 * library's reading of EPROTO, "not a socknotifyd"; with --json as a document. */
START_TEST(test_reexec_refused)
{
        char dir[] = "/tmp/sn-ctl-reexec-XXXXXX", bin[128], cmd[1024], out[8192];
        struct test_daemon saved = D;
        sn_conn_t *c;
        pid_t pid;
        json_t *doc;
        FILE *f;
        int st;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(bin, sizeof(bin), "%s/socknotifyd", dir);
        snprintf(D.path, sizeof(D.path), "%s/s.sock", dir);
        snprintf(cmd, sizeof(cmd), "cp %s/daemon/socknotifyd %s", SN_BUILDDIR, bin);
        ck_assert_int_eq(system(cmd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(bin, bin, "--socket", D.path, (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 1000 && sn_conn_open(D.path, &c) < 0; i++)
                usleep(10000);
        /* "Upgrade" to a binary that takes no state. */
        ck_assert_int_eq(unlink(bin), 0);
        f = fopen(bin, "w");
        ck_assert_ptr_nonnull(f);
        fputs("#!/bin/sh\nexit 3\n", f);
        fclose(f);
        ck_assert_int_eq(chmod(bin, 0755), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "reexec"), 1);
        ck_assert_msg(strstr(out, "reexec: the daemon could not re-execute itself") &&
                              !strstr(out, "not a socknotifyd") && !strstr(out, "protocol error"),
                      "%s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "--json reexec"), 1);
        doc = json_in(out);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "errno")), "EPROTO");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "error")),
                                     "could not re-execute"));
        json_decref(doc);
        ck_assert_int_eq(test_status_number(c, "reexecs"), 0);
        sn_conn_close(c);
        kill(pid, SIGTERM);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
        D = saved;
}
END_TEST

static void write_file(const char *path, const char *text, size_t n)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(text, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
}

#define WRITE(path, lit) write_file(path, lit, sizeof(lit) - 1)

/* Issue 41 item 2: which configuration the daemon runs on (STATUS's configuration: the path,
 * where the settings came from, when read, the last reload), and check-config, the running
 * daemon's own parser on its own file, applying nothing.  Item 4: errors in our words, never
 * the raw byte-order mark nor the parser's "near '...'"; reload's refusal as JSON. */
START_TEST(test_config_status)
{
        char dir[] = "/tmp/sn-ctl-conf-XXXXXX", conf[96], arg[128], out[65536];
        time_t t0 = time(NULL);
        json_t *doc, *cf;
        sn_conn_t *c;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        snprintf(arg, sizeof(arg), "--config=%s", conf);
        WRITE(conf, "{\"max-waits\": 100}\n");
        test_daemon_start(&D, (const char *const[]){ arg, NULL });
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);

        doc = ctl_json("status");
        cf = json_object_get(doc, "configuration");
        ck_assert_msg(json_is_object(cf), "no configuration in status");
        ck_assert_str_eq(json_string_value(json_object_get(cf, "path")), conf);
        ck_assert_str_eq(json_string_value(json_object_get(cf, "state")), "file");
        ck_assert(json_integer_value(json_object_get(cf, "read_at")) >= t0 - 1 &&
                  json_integer_value(json_object_get(cf, "read_at")) <= time(NULL) + 1);
        ck_assert(json_is_null(json_object_get(cf, "last_reload")));
        json_decref(doc);
        ck_assert_int_eq(ctl(out, sizeof(out), "status"), 0);
        ck_assert_msg(strstr(out, "configuration ") && strstr(out, ": read from the file, read "),
                      "%s", out);
        ck_assert_int_eq(ctl(out, sizeof(out), "check-config"), 0);
        ck_assert_msg(strstr(out, conf) && strstr(out, ": good (nothing applied"), "%s", out);

        /* A byte-order mark: named, its bytes never printed raw; nothing applied. */
        WRITE(conf, "\xef\xbb\xbf{\"max-waits\": 200}\n");
        ck_assert_int_eq(ctl(out, sizeof(out), "check-config"), 1);
        ck_assert_msg(strstr(out, "socknotifyd.json:1: the file begins with a byte-order mark") &&
                              !strstr(out, "\xef\xbb\xbf") && !strstr(out, "\\xef"),
                      "%s", out);
        doc = ctl_json("status");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "limits"),
                                                            "max_waits")), 100);
        ck_assert(json_is_null(json_object_get(json_object_get(doc, "configuration"),
                                               "last_reload")));
        json_decref(doc);

        /* Bad JSON: our words and the column, not jansson's. */
        WRITE(conf, "{\"max-waits\": 200,\n}\n");
        ck_assert_int_eq(ctl(out, sizeof(out), "check-config"), 1);
        ck_assert_msg(strstr(out, "socknotifyd.json:2: not valid JSON here") &&
                              strstr(out, "(column ") && !strstr(out, "near") &&
                              !strstr(out, "expected"),
                      "%s", out);
        WRITE(conf, "{\"max-waits\": 200");
        ck_assert_int_eq(ctl(out, sizeof(out), "check-config"), 1);
        ck_assert_msg(strstr(out, "the text ends inside the JSON object"), "%s", out);

        /* A failed reload: JSON on stdout with --json, and the status says so. */
        ck_assert_int_eq(ctl(out, sizeof(out), "--json reload"), 1);
        doc = json_in(out);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "errno")), "EINVAL");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "error")),
                                     "the text ends inside"));
        json_decref(doc);
        doc = ctl_json("status");
        cf = json_object_get(json_object_get(doc, "configuration"), "last_reload");
        ck_assert_str_eq(json_string_value(json_object_get(cf, "result")), "failed");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(cf, "error")), conf));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "configuration"),
                                                           "state")), "file");
        json_decref(doc);
        ck_assert_int_eq(ctl(out, sizeof(out), "status"), 0);
        ck_assert_msg(strstr(out, ": failed, running settings kept: "), "%s", out);

        /* Good again: applied by the reload, which the status shows. */
        WRITE(conf, "{\"max-waits\": 300}\n");
        ck_assert_int_eq(ctl(out, sizeof(out), "reload"), 0);
        doc = ctl_json("status");
        cf = json_object_get(json_object_get(doc, "configuration"), "last_reload");
        ck_assert_str_eq(json_string_value(json_object_get(cf, "result")), "ok");
        ck_assert(json_is_null(json_object_get(cf, "error")));
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "limits"),
                                                            "max_waits")), 300);
        json_decref(doc);

        /* The file gone: named with --config, it must exist; still nothing applied. */
        ck_assert_int_eq(unlink(conf), 0);
        ck_assert_int_eq(ctl(out, sizeof(out), "check-config"), 1);
        ck_assert_msg(strstr(out, "socknotifyd.json: No such file or directory"), "%s", out);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        rmdir(dir);
}
END_TEST

/* Issue 41 item 3: socknotifyctl metrics, read by a strict parser of each format (om_check()),
 * with figures that agree with what the test made: a port, a registration, a refusal by
 * max-ports, the build's labels, no re-exec.  The parser is shown to refuse each format's text
 * for the other. */
START_TEST(test_metrics)
{
        static char om[1 << 18], prom[1 << 18];
        char want[256], *version;
        json_int_t protocol;
        sn_conn_t *c;
        sn_port_t *p, *q;
        int cl, sv;
        const char *why;
        json_t *doc;

        test_daemon_start(&D, (const char *const[]){ "--max-ports=1", NULL });
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "metrics", 0, &p), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &q), -EDQUOT);
        tcp_pair(&cl, &sv);
        sn_registration_t r = { .fd = sv, .key = 5, .op = SN_OP_ENABLE,
                                .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        doc = ctl_json("status");
        version = strdup(json_string_value(json_object_get(doc, "version")));
        protocol = json_integer_value(json_object_get(doc, "protocol"));
        json_decref(doc);

        ck_assert_int_eq(ctl(om, sizeof(om), "metrics"), 0);
        why = om_check(om, true);
        if (why)
                fprintf(stderr, "%s", om);
        ck_assert_msg(why == NULL, "OpenMetrics: %s", why);
        ck_assert(metric_value("socknotify_ports") == 1);
        ck_assert(metric_value("socknotify_registrations") == 1);
        ck_assert(metric_value("socknotify_connections") >= 1);
        ck_assert(metric_value("socknotify_reexecs_total") == 0);
        ck_assert(metric_value("socknotify_restores_total") == 0);
        ck_assert(metric_value("socknotify_refusals_total{limit=\"max-ports\"}") == 1);
        ck_assert(metric_value("socknotify_limit{name=\"max_ports\"}") == 1);
        snprintf(want, sizeof(want), "socknotify_user_ports{uid=\"%u\"}", (unsigned)getuid());
        ck_assert_msg(metric_value(want) == 1, "%s: %g", want, metric_value(want));
        snprintf(want, sizeof(want), "socknotify_user_refusals_total{uid=\"%u\"}",
                 (unsigned)getuid());
        ck_assert(metric_value(want) >= 0);
        snprintf(want, sizeof(want),
                 "socknotify_build_info{version=\"%s\",protocol=\"%lld\",scope=\"daemon\"}",
                 version, (long long)protocol);
        ck_assert_msg(metric_value(want) == 1, "%s: %g", want, metric_value(want));
        ck_assert(metric_value("socknotify_configuration_info{state=\"file\"}") == 1 ||
                  metric_value("socknotify_configuration_info{state=\"absent\"}") == 1);

        ck_assert_int_eq(ctl(prom, sizeof(prom), "metrics --format=prometheus"), 0);
        why = om_check(prom, false);
        if (why)
                fprintf(stderr, "%s", prom);
        ck_assert_msg(why == NULL, "text format 0.0.4: %s", why);
        ck_assert(metric_value("socknotify_ports") == 1);
        ck_assert(metric_value("socknotify_refusals_total{limit=\"max-ports\"}") == 1);
        /* Each format is wrong for the other's parser: the checks can fail. */
        ck_assert_ptr_nonnull(om_check(prom, true));
        ck_assert_ptr_nonnull(om_check(om, false));

        ck_assert_int_eq(ctl(om, sizeof(om), "metrics --format=xml"), 2);
        ck_assert_int_eq(ctl(om, sizeof(om), "--json metrics"), 2);
        free(version);
        sn_socket_close(c, sv);
        close(cl);
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
        tcase_add_test(tc, test_hostile_names);
        tcase_add_test(tc, test_bidi_names);
        tcase_add_test(tc, test_oneshot_states);
        tcase_add_test(tc, test_open_errors);
        tcase_add_test(tc, test_json_schema);
        tcase_add_test(tc, test_usage_edges);
        tcase_add_test(tc, test_reexec_refused);
        tcase_add_test(tc, test_config_status);
        tcase_add_test(tc, test_metrics);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

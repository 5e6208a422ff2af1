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
#include <unistd.h>

#include <check.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"

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
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

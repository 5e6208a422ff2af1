/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-monitor.c - socknotifyctl monitor and the daemon's monitor frames (CONTROL monitor).
 *
 * Against the real daemon: who sees what (a user sees its own connections only, root every
 * one; a second user is had by switching the effective uid around connect(), which is what
 * SO_PEERCRED records), the --client and --port filters, calls over the rings, a monitor that
 * never reads while a client makes 100000 calls (the calls take about as long as without it,
 * and every message is shown or counted as lost, exactly once), a monitor that goes away with
 * frames queued, the limit on monitors, and the tool itself (--json, 64-bit keys as exact hex
 * strings, Ctrl-C).  Every case fails on a daemon without monitors (the verb is unknown).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

#define USER_A 65534
#define USER_B 65533

static struct test_daemon D;

static void setup(void)
{
        test_daemon_start(&D, (const char *const[]){ "--socket-mode=0666", NULL });
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
}

static void teardown(void)
{
        test_daemon_stop_if_running(&D);
}

/* Connects (and says HELLO) with the effective uid uid: the daemon sees that user. */
static int hello_as(uid_t uid)
{
        int fd;

        ck_assert_int_eq(seteuid(uid), 0);
        fd = raw_connect(D.path);
        ck_assert_int_eq(seteuid(0), 0);
        {
                uint8_t buf[64];
                struct snw_hello hello = { .magic = SN_PROTO_MAGIC, .version_min = 1,
                                           .version_max = 3 };

                snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &hello);
                raw_send(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
                expect_reply(fd, SN_MSG_HELLO_REPLY, 1, 0);
        }
        return fd;
}

/* Sends CONTROL monitor with the filters (0: none); returns the reply's status. */
static uint32_t monitor_ask(int fd, uint32_t pid, uint32_t port)
{
        uint8_t buf[4096];
        char text[128];
        size_t len;
        ssize_t n;

        len = (size_t)snprintf(text, sizeof(text), "{\"verb\":\"monitor\",\"client\":%u,\"port\":%u}",
                               pid, port);
        memcpy(sn_msg_begin(buf, SN_MSG_CONTROL, 7, 0, 0, (uint32_t)len, 0), text, len);
        raw_send(fd, buf, sn_msg_size(SN_MSG_CONTROL, (uint32_t)len, 0), NULL, 0);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_ge(n, SN_HEADER_SIZE);
        ck_assert_uint_eq(sn_get_u16(buf + 4), SN_MSG_CONTROL_REPLY);
        return sn_get_u32(buf + 12);
}

static int monitor_as(uid_t uid, uint32_t pid, uint32_t port)
{
        int fd = hello_as(uid);

        ck_assert_uint_eq(monitor_ask(fd, pid, port), 0);
        return fd;
}

struct frame {
        struct snw_monitor f;
        struct snw_header h; /* of the message inside */
        uint8_t msg[256];
};

/* The next frame within a scaled bound; fails the test on anything but a well-formed frame. */
static void next_frame(int fd, struct frame *fr)
{
        static uint8_t buf[1 << 20]; /* more than any max_message */
        const struct sn_msg_desc *d;
        struct snw_header h;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        ck_assert_int_eq(poll(&p, 1, test_timeout_ms(10000)), 1);
        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_MONITOR_FRAME);
        ck_assert_uint_eq(h.nfds, 0);
        snw_monitor_decode(sn_msg_body(buf), &fr->f);
        memset(&fr->h, 0, sizeof(fr->h));
        if (fr->f.flags & SN_PROTO_MONITOR_LOST) {
                ck_assert_uint_eq(h.count, 0);
                return;
        }
        ck_assert_uint_ge(h.count, SN_HEADER_SIZE);
        memcpy(fr->msg, sn_msg_array(buf, d, 1), SN_MIN(h.count, sizeof(fr->msg)));
        snw_header_decode(fr->msg, &fr->h);
}

/* Reads what frames remain until the daemon closes the monitor's connection. */
static void monitor_ends(int fd)
{
        static uint8_t buf[1 << 20];
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        do {
                ck_assert_int_eq(poll(&p, 1, test_timeout_ms(10000)), 1);
                n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                ck_assert_int_ge(n, 0);
        } while (n > 0);
}

/* Reads frames until the one of message type with id; counts the others' uids in seen[]
 * (index 0: USER_A, 1: USER_B, 2: root). */
static void frames_until(int fd, uint16_t type, uint32_t id, unsigned seen[3])
{
        struct frame fr;

        for (;;) {
                next_frame(fd, &fr);
                ck_assert_uint_eq(fr.f.lost, 0);
                if (seen)
                        seen[fr.f.uid == USER_A ? 0 : fr.f.uid == USER_B ? 1 : 2]++;
                if (fr.h.type == type && fr.h.id == id)
                        return;
        }
}

static void status_call(int fd, uint32_t id)
{
        status_works(fd, id);
}

/* A PROCESS without items that dequeues nothing: the cheapest call there is. */
static void poll_call(int fd, uint32_t port, uint32_t id)
{
        uint8_t buf[128];
        struct snw_process in = { .port = port };
        ssize_t n;

        snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0), &in);
        if (send(fd, buf, sn_msg_size(SN_MSG_PROCESS, 0, 0), MSG_NOSIGNAL) !=
            (ssize_t)sn_msg_size(SN_MSG_PROCESS, 0, 0))
                ck_abort_msg("send: %s", strerror(errno));
        n = recv(fd, buf, sizeof(buf), 0);
        ck_assert_int_eq(n, (ssize_t)sn_msg_size(SN_MSG_PROCESS_REPLY, 0, 0));
        ck_assert_uint_eq(sn_get_u32(buf + 8), id);
        ck_assert_uint_eq(sn_get_u32(buf + 12), 0);
}

static void post_call(int fd, uint32_t port, uint32_t id, uint64_t key)
{
        uint8_t buf[128];
        struct snw_post in = { .port = port };
        struct snw_packet pk = { .key = key, .overlapped = 7, .bytes = 3 };
        uint8_t *p = sn_msg_begin(buf, SN_MSG_POST, id, 0, 0, 1, 0);

        p = snw_post_encode(p, &in);
        snw_packet_encode(p, &pk);
        raw_send(fd, buf, sn_msg_size(SN_MSG_POST, 1, 0), NULL, 0);
        expect_reply(fd, SN_MSG_POST_REPLY, id, 0);
}

/* A user's monitor shows that user's connections only; root's shows every one. */
START_TEST(test_who_sees_what)
{
        int root_mon, a_mon, a, b;
        unsigned seen_a[3] = { 0 }, seen_root[3] = { 0 };

        root_mon = monitor_as(0, 0, 0);
        a_mon = monitor_as(USER_A, 0, 0);
        a = hello_as(USER_A);
        b = hello_as(USER_B);
        status_call(a, 0xa1);
        status_call(b, 0xb1);
        status_call(a, 0xaf); /* after B's call: A's monitor has had its chance to show it */
        frames_until(a_mon, SN_MSG_STATUS_REPLY, 0xaf, seen_a);
        ck_assert_uint_eq(seen_a[1], 0);
        ck_assert_uint_eq(seen_a[2], 0);
        /* A's HELLO, its reply, and two calls of A, each a request and a reply. */
        ck_assert_uint_eq(seen_a[0], 6);
        frames_until(root_mon, SN_MSG_STATUS_REPLY, 0xaf, seen_root);
        /* Root's: A's monitor's start (CONTROL and its reply; the monitor's own messages are
         * never shown, but it was not a monitor yet), A's and B's connections. */
        ck_assert_uint_eq(seen_root[0], 4 + 6);
        ck_assert_uint_eq(seen_root[1], 4);
        close(a);
        close(b);
        close(a_mon);
        close(root_mon);
}
END_TEST

/* --client shows one process's connections; --port the requests that name the port, their
 * replies, and nothing else. */
START_TEST(test_filters)
{
        int c = hello_as(0), by_pid, by_port, go[2], done[2];
        uint32_t p1 = raw_port_create(c, 2, NULL), p2 = raw_port_create(c, 3, NULL);
        struct frame fr;
        pid_t child;
        char ch;

        ck_assert_int_eq(pipe(go), 0);
        ck_assert_int_eq(pipe(done), 0);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                int k;

                if (read(go[0], &ch, 1) != 1)
                        _exit(2);
                k = hello_as(0);
                status_works(k, 0xc1);
                close(k);
                (void)!write(done[1], "d", 1);
                _exit(0);
        }
        by_pid = monitor_as(0, (uint32_t)child, 0);
        by_port = monitor_as(0, 0, p1);
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(read(done[0], &ch, 1), 1);
        post_call(c, p2, 20, 1);
        post_call(c, p1, 21, 2);
        status_call(c, 22);
        poll_call(c, p2, 23);
        post_call(c, p1, 24, 3);
        /* The child's: HELLO, its reply, STATUS, its reply; none of ours. */
        next_frame(by_pid, &fr);
        ck_assert_uint_eq(fr.h.type, SN_MSG_HELLO);
        ck_assert_uint_eq(fr.f.pid, (uint32_t)child);
        next_frame(by_pid, &fr);
        ck_assert_uint_eq(fr.h.type, SN_MSG_HELLO_REPLY);
        ck_assert(fr.f.flags & SN_PROTO_MONITOR_REPLY);
        next_frame(by_pid, &fr);
        ck_assert_uint_eq(fr.h.type, SN_MSG_STATUS);
        ck_assert_uint_eq(fr.h.id, 0xc1);
        next_frame(by_pid, &fr);
        ck_assert_uint_eq(fr.h.type, SN_MSG_STATUS_REPLY);
        ck_assert_uint_eq(fr.f.pid, (uint32_t)child);
        /* Port p1's: POST 21, its reply, POST 24, its reply. */
        for (uint32_t i = 0; i < 4; i++) {
                next_frame(by_port, &fr);
                ck_assert_uint_eq(fr.h.type, i % 2 ? SN_MSG_POST_REPLY : SN_MSG_POST);
                ck_assert_uint_eq(fr.h.id, i < 2 ? 21 : 24);
                ck_assert_uint_eq(fr.f.pid, (uint32_t)getpid());
        }
        /* Nothing more: a marker on p1 is the next frame. */
        post_call(c, p1, 25, 4);
        next_frame(by_port, &fr);
        ck_assert_uint_eq(fr.h.id, 25);
        ck_assert_int_eq(waitpid(child, NULL, 0), child);
        close(by_pid);
        close(by_port);
        close(c);
}
END_TEST

/* Calls over the shared-memory rings never touch the socket: they are shown all the same, as
 * the daemon handles them. */
START_TEST(test_rings)
{
        int mon = monitor_as(0, 0, 0);
        struct frame fr;
        sn_conn_t *c;
        sn_port_t *p;
        bool rings = false;

        unsetenv("SOCKNOTIFY_NO_SHM");
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (;;) {
                next_frame(mon, &fr);
                if (fr.h.type == SN_MSG_HELLO_REPLY)
                        rings = sn_get_u16(fr.msg + SN_HEADER_SIZE + 2) == SN_PROTO_TRANSPORT_RING;
                if (fr.h.type == SN_MSG_PORT_CREATE_REPLY)
                        break;
        }
        if (!rings) {
                printf("SKIP: test_rings: the daemon gave no rings (%s)\n", "no shared memory?");
        } else {
                ck_assert(fr.f.flags & SN_PROTO_MONITOR_RING);
        }
        sn_port_close(p);
        sn_conn_close(c);
        close(mon);
}
END_TEST

/* A monitor that never reads: a client's 100000 calls take about as long as without it, and
 * once it reads, every message of them is shown or counted as lost. */
START_TEST(test_slow_monitor)
{
        const uint32_t calls = 100000;
        long long t0, plain, watched;
        uint64_t shown = 0, lost = 0, want = 2 + 2 * (uint64_t)calls + 2;
        struct frame fr;
        int c, mon;
        uint32_t port;

        c = hello_as(0);
        port = raw_port_create(c, 2, NULL);
        t0 = now_ms();
        for (uint32_t i = 0; i < calls; i++)
                poll_call(c, port, 100 + i);
        plain = now_ms() - t0;
        close(c);

        mon = monitor_as(0, 0, 0);
        c = hello_as(0);
        port = raw_port_create(c, 2, NULL);
        t0 = now_ms();
        for (uint32_t i = 0; i < calls; i++)
                poll_call(c, port, 100 + i);
        watched = now_ms() - t0;
        printf("test_slow_monitor: %u calls in %lld ms without a monitor, %lld ms with one that "
               "does not read\n",
               calls, plain, watched);
        ck_assert_msg(watched < 3 * plain * (test_timeout_ms(1000) / 1000) + test_timeout_ms(200),
                      "%lld ms with a stalled monitor against %lld ms without", watched, plain);
        /* HELLO, PORT_CREATE, the calls: each a request and a reply. */
        while (shown + lost < want) {
                next_frame(mon, &fr);
                lost += fr.f.lost;
                if (!(fr.f.flags & SN_PROTO_MONITOR_LOST))
                        shown++;
        }
        printf("test_slow_monitor: %llu frames shown, %llu lost\n", (unsigned long long)shown,
               (unsigned long long)lost);
        ck_assert_uint_gt(lost, 0);
        ck_assert_uint_eq(shown + lost, want);
        /* Nothing counted twice: the next frame is the next message. */
        status_call(c, 0xe0);
        next_frame(mon, &fr);
        ck_assert_uint_eq(fr.f.lost, 0);
        ck_assert_uint_eq(fr.h.type, SN_MSG_STATUS);
        ck_assert_uint_eq(fr.h.id, 0xe0);
        close(c);
        close(mon);
}
END_TEST

/* A monitor that goes away with frames queued, or that sends a request, is dropped; the daemon
 * and its clients go on, and its memory and descriptor are freed. */
START_TEST(test_monitor_goes_away)
{
        int base = test_daemon_fds(&D), c = hello_as(0), mon = monitor_as(0, 0, 0), mon2;
        uint32_t port = raw_port_create(c, 2, NULL);

        for (uint32_t i = 0; i < 20000; i++)
                poll_call(c, port, 10 + i);
        close(mon);
        for (uint32_t i = 0; i < 1000; i++)
                poll_call(c, port, 30000 + i);
        /* A monitor only reads: a message from it ends it. */
        mon2 = monitor_as(0, 0, 0);
        {
                uint8_t buf[SN_HEADER_SIZE];

                sn_msg_begin(buf, SN_MSG_STATUS, 5, 0, 0, 0, 0);
                raw_send(mon2, buf, sizeof(buf), NULL, 0);
        }
        monitor_ends(mon2);
        close(mon2);
        status_call(c, 3);
        close(c);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base, 5000), base);
}
END_TEST

/* A re-exec does not carry monitors: their connection ends, nothing of them stays in the new
 * image, and a new monitor works there. */
START_TEST(test_reexec_ends_monitor)
{
        int base, c = hello_as(0), mon = monitor_as(0, 0, 0);
        struct frame fr;

        status_call(c, 1);
        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        monitor_ends(mon);
        close(mon);
        status_call(c, 2); /* served by the new image */
        /* Counted in the new image (a wrapper such as valgrind may not follow the exec). */
        base = test_daemon_fds(&D);
        mon = monitor_as(0, 0, 0);
        status_call(c, 3);
        next_frame(mon, &fr);
        ck_assert_uint_eq(fr.h.type, SN_MSG_STATUS);
        ck_assert_uint_eq(fr.h.id, 3);
        close(mon);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base, 5000), base);
        close(c);
}
END_TEST

/* At most 16 monitors, 4 of them for a user other than root and the daemon's. */
START_TEST(test_monitor_limit)
{
        int user[4], all[12], extra, c;
        struct frame fr;

        for (int i = 0; i < 4; i++)
                user[i] = monitor_as(USER_A, 0, 0);
        extra = hello_as(USER_A);
        ck_assert_uint_eq(monitor_ask(extra, 0, 0), EDQUOT);
        close(extra);
        for (int i = 0; i < 12; i++)
                all[i] = monitor_as(0, 0, 0);
        extra = hello_as(0);
        ck_assert_uint_eq(monitor_ask(extra, 0, 0), EDQUOT);
        /* A connection that holds a port cannot become a monitor. */
        c = hello_as(0);
        raw_port_create(c, 2, NULL);
        close(user[0]);
        ck_assert_uint_eq(monitor_ask(c, 0, 0), EBUSY);
        /* One gone: one more may come (once the daemon has seen it go). */
        for (int tries = 0;; tries++) {
                uint32_t st = monitor_ask(extra, 0, 0);

                if (st == 0)
                        break;
                ck_assert_uint_eq(st, EDQUOT);
                ck_assert_int_lt(tries, 1000);
                status_call(c, 9); /* a turn of the daemon's loop */
        }
        /* Every monitor sees a call. */
        status_call(c, 0x51);
        for (int i = 0; i < 12; i++)
                frames_until(all[i], SN_MSG_STATUS_REPLY, 0x51, NULL);
        next_frame(extra, &fr);
        ck_assert_uint_eq(fr.h.type, SN_MSG_STATUS);
        for (int i = 1; i < 4; i++)
                close(user[i]);
        for (int i = 0; i < 12; i++)
                close(all[i]);
        close(extra);
        close(c);
}
END_TEST

/* Users other than root and the daemon's cannot take every monitor: four such users with
 * four monitors each used to fill all 16, and root, who needs one most, got EDQUOT. */
START_TEST(test_monitor_reserve)
{
        static const uid_t users[4] = { USER_A, USER_B, 65532, 65531 };
        int mon[16], nmon = 0, fd;
        uint32_t st;

        for (int u = 0; u < 4; u++) {
                for (int i = 0; i < 4; i++) {
                        fd = hello_as(users[u]);
                        st = monitor_ask(fd, 0, 0);
                        if (st) {
                                ck_assert_uint_eq(st, EDQUOT);
                                close(fd);
                                continue;
                        }
                        mon[nmon++] = fd;
                }
        }
        ck_assert_int_lt(nmon, 16);
        /* What is left is root's (and the daemon user's), up to the daemon's 16. */
        while (nmon < 16)
                mon[nmon++] = monitor_as(0, 0, 0);
        fd = hello_as(0);
        ck_assert_uint_eq(monitor_ask(fd, 0, 0), EDQUOT);
        close(fd);
        for (int i = 0; i < nmon; i++)
                close(mon[i]);
}
END_TEST

static char tool_text[1 << 16];
static size_t tool_len;

/* Runs the tool as uid with args into a pipe; returns its pid, *ret_out the read end. */
static pid_t tool_start(uid_t uid, const char *args, int *ret_out)
{
        int out[2];
        pid_t pid;

        ck_assert_int_eq(pipe(out), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char cmd[512];

                dup2(out[1], STDOUT_FILENO);
                close(out[0]);
                close(out[1]);
                if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
                        _exit(120);
                snprintf(cmd, sizeof(cmd), "exec %s/ctl/socknotifyctl -s %s %s", SN_BUILDDIR,
                         D.path, args);
                execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
                _exit(121);
        }
        close(out[1]);
        *ret_out = out[0];
        tool_len = 0;
        tool_text[0] = 0;
        return pid;
}

/* Reads the tool's output until it holds needle; returns all of it since tool_start(). */
static const char *tool_until(int fd, const char *needle)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        while (!strstr(tool_text, needle)) {
                ssize_t n;

                ck_assert_msg(poll(&p, 1, test_timeout_ms(10000)) == 1, "no \"%s\" in: %s",
                              needle, tool_text);
                n = read(fd, tool_text + tool_len, sizeof(tool_text) - 1 - tool_len);
                ck_assert_int_gt(n, 0);
                tool_len += (size_t)n;
                tool_text[tool_len] = 0;
        }
        return tool_text;
}

/* The tool run by user A: A's calls decoded (the key exact, in hex), none of B's; Ctrl-C ends
 * it with status 0. */
START_TEST(test_tool)
{
        int root_mon = monitor_as(0, 0, 0), out, a, b, status;
        unsigned seen[3] = { 0 };
        const char *text;
        uint32_t pa, pb;
        pid_t tool;

        tool = tool_start(USER_A, "--json monitor", &out);
        /* Attached once root's monitor shows its CONTROL_REPLY. */
        frames_until(root_mon, SN_MSG_CONTROL_REPLY, 2, seen);
        a = hello_as(USER_A);
        b = hello_as(USER_B);
        pa = raw_port_create(a, 0x41, NULL);
        pb = raw_port_create(b, 0x42, NULL);
        post_call(b, pb, 0xb1, 0x1111);
        post_call(a, pa, 0xa1, 0xfeedfacecafebeefull);
        text = tool_until(out, "\"type\":\"POST_REPLY\"");
        ck_assert_ptr_nonnull(strstr(text, "\"key\":\"0xfeedfacecafebeef\""));
        ck_assert_ptr_nonnull(strstr(text, "\"uid\":65534"));
        ck_assert_ptr_null(strstr(text, "\"uid\":65533"));
        ck_assert_ptr_null(strstr(text, "0x1111"));
        ck_assert_int_eq(kill(tool, SIGINT), 0);
        ck_assert_int_eq(waitpid(tool, &status, 0), tool);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        close(out);
        /* The text form: direction, name, id, the key in hex. */
        tool = tool_start(0, "monitor", &out);
        frames_until(root_mon, SN_MSG_CONTROL_REPLY, 2, NULL);
        post_call(a, pa, 0xa2, 0xfeedfacecafebeefull);
        text = tool_until(out, "<- POST_REPLY id=162");
        ck_assert_ptr_nonnull(strstr(text, "-> POST id=162 port="));
        ck_assert_ptr_nonnull(strstr(text, "key=0xfeedfacecafebeef"));
        kill(tool, SIGINT);
        ck_assert_int_eq(waitpid(tool, &status, 0), tool);
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        close(out);
        close(a);
        close(b);
        close(root_mon);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("monitor");
        TCase *tc = tcase_create("monitor");

        tcase_add_checked_fixture(tc, setup, teardown);
        /* test_slow_monitor makes 200000 calls: about 30 s, minutes on a loaded machine. */
        tcase_set_timeout(tc, 600);
        if (geteuid() != 0) {
                printf("SKIP: test-monitor needs root to connect as other users\n");
                return s;
        }
        tcase_add_test(tc, test_who_sees_what);
        tcase_add_test(tc, test_filters);
        tcase_add_test(tc, test_rings);
        tcase_add_test(tc, test_slow_monitor);
        tcase_add_test(tc, test_monitor_goes_away);
        tcase_add_test(tc, test_monitor_limit);
        tcase_add_test(tc, test_monitor_reserve);
        tcase_add_test(tc, test_reexec_ends_monitor);
        tcase_add_test(tc, test_tool);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return test_run_suite(suite());
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-attack.c - an adversarial review of the hardened socknotifyd: each test is one attack by
 * a hostile local client that the daemon of issue 11 did not withstand.  Like test-hardening,
 * every test runs a real daemon, attacks it with the raw protocol client, and ends by checking
 * that the daemon still serves, holds no descriptor more than before, and exits 0 (under the
 * sanitizer build that also means no leak and no use after free).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <check.h>

#include "common/fdmsg.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

static struct test_daemon D;
static int baseline;

static void start(const char *const *args)
{
        test_daemon_start(&D, args);
        baseline = test_daemon_fds(&D);
}

/* The daemon serves a fresh client, is back to its baseline and stops cleanly. */
static void finish(void)
{
        test_daemon_finish(&D, baseline);
}

/* Sends a PROCESS call without items for thread. */
static void send_wait(int fd, uint32_t id, uint32_t port, uint32_t thread, uint32_t max_entries,
                      uint32_t timeout_ms)
{
        uint8_t buf[128];
        struct snw_process body = { .port = port, .timeout_ms = timeout_ms,
                                    .max_entries = max_entries, .thread = thread };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0), &body);

        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
}

/* Sends PROCESS with one ENABLE item for socket sock (passed with the message). */
static void send_enable(int fd, uint32_t id, uint32_t port, int sock, uint16_t filter)
{
        uint8_t buf[256];
        struct snw_process body = { .port = port };
        struct snw_registration r = { .key = 77, .op = SN_OP_ENABLE, .filter = filter,
                                      .trigger = SN_TRIGGER_LEVEL, .fd_index = 0 };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 1, 1, 0), &body);

        p = snw_registration_encode(p, &r);
        raw_send(fd, buf, (size_t)(p - buf), &sock, 1);
}

/* Receives a PROCESS_REPLY with id; returns its status and stores the first result. */
static uint32_t recv_process(int fd, uint32_t id, uint32_t *result0, uint32_t *nentries)
{
        uint8_t *buf = malloc(1u << 18);
        const struct sn_msg_desc *d;
        struct snw_header h;
        ssize_t n;

        ck_assert_ptr_nonnull(buf);
        n = raw_recv(fd, buf, 1u << 18);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_uint_eq(h.id, id);
        if (result0)
                *result0 = h.count ? sn_get_u32(sn_msg_array(buf, d, 1)) : 0xffffffffu;
        if (nentries)
                *nentries = h.count2;
        free(buf);
        return h.status;
}

static void raw_port_close(int fd, uint32_t id, uint32_t port)
{
        uint8_t buf[64];
        struct snw_port body = { .port = port };
        uint8_t *p = snw_port_encode(sn_msg_begin(buf, SN_MSG_PORT_CLOSE, id, 0, 0, 0, 0), &body);

        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
}

/* Creates a port with the concurrency asked; returns its id. */
static uint32_t raw_port_create_conc(int fd, uint32_t id, uint32_t concurrency)
{
        uint8_t buf[128];
        struct snw_port_create body = { .concurrency = concurrency };
        struct snw_port_create_reply rep;
        const struct sn_msg_desc *d;
        struct snw_header h;
        uint8_t *p = snw_port_create_encode(
                sn_msg_begin(buf, SN_MSG_PORT_CREATE, id, 0, 0, 0, 0), &body);
        ssize_t n;

        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.status, 0);
        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
        return rep.port;
}

/* Posts n packets (one message) and checks the reply. */
static void raw_post(int fd, uint32_t id, uint32_t port, uint32_t n)
{
        size_t len = sn_msg_size(SN_MSG_POST, n, 0);
        uint8_t *buf = calloc(1, len), *p;
        struct snw_post body = { .port = port };

        ck_assert_ptr_nonnull(buf);
        p = snw_post_encode(sn_msg_begin(buf, SN_MSG_POST, id, 0, 0, n, 0), &body);
        for (uint32_t i = 0; i < n; i++) {
                struct snw_packet k = { .key = i };
                p = snw_packet_encode(p, &k);
        }
        raw_send(fd, buf, len, NULL, 0);
        free(buf);
        expect_reply(fd, SN_MSG_POST_REPLY, id, 0);
}

/* A fresh client completes its handshake and gets STATUS answered within 2 s. */
static void daemon_answers(void)
{
        int fd = raw_hello(D.path);

        status_works(fd, 2);
        close(fd);
}

/*
 * Use after free in port_close_handle(): a connection with two waits on a port that another
 * connection also holds closes its handle after shutting down its receiving side.  The first
 * cancellation's send fails and kills the connection, which detaches the second wait from the
 * port while the loop over the port's waiters holds it as its next element; the second wait is
 * then freed and the loop steps from freed memory.  The same loop runs when a live connection
 * is freed at SIGTERM.
 */
START_TEST(test_close_handle_after_shutdown)
{
        int a, b;
        uint32_t pa;

        start(NULL);
        a = raw_hello(D.path);
        pa = raw_port_create(a, 2, "shared");
        b = raw_hello(D.path);
        raw_port_open(b, 2, "shared");
        send_wait(a, 3, pa, 1, 1, SN_PROTO_INFINITE);
        send_wait(a, 4, pa, 2, 1, SN_PROTO_INFINITE);
        status_works(a, 5); /* both are parked, next to each other on the port */
        ck_assert_int_eq(shutdown(a, SHUT_RD), 0);
        raw_port_close(a, 6, pa);
        usleep(200 * 1000);
        daemon_answers();
        close(a);
        close(b);
        finish();
}
END_TEST

/* The same loop at shutdown: a live connection is freed while its answers cannot be sent. */
START_TEST(test_shutdown_with_unreadable_waiter)
{
        int a, b;
        uint32_t pa;

        start(NULL);
        a = raw_hello(D.path);
        pa = raw_port_create(a, 2, "shared");
        b = raw_hello(D.path);
        raw_port_open(b, 2, "shared");
        send_wait(a, 3, pa, 1, 1, SN_PROTO_INFINITE);
        send_wait(a, 4, pa, 2, 1, SN_PROTO_INFINITE);
        status_works(a, 5);
        ck_assert_int_eq(shutdown(a, SHUT_RD), 0);
        /* The connections stay open: SIGTERM frees them as live connections. */
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        close(a);
        close(b);
}
END_TEST

/* A connected TCP pair whose client side has a full send queue behind a zero window (the server
 * side never reads) and lingers for a minute: the last close of it waits for the peer. */
static void lingering_pair(int *cl, int *sv)
{
        struct linger lg = { .l_onoff = 1, .l_linger = 60 };
        int small = 4096;
        char chunk[4096];

        memset(chunk, 'x', sizeof(chunk));
        tcp_pair(cl, sv);
        ck_assert_int_eq(setsockopt(*sv, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
        ck_assert_int_eq(fcntl(*cl, F_SETFL, O_NONBLOCK), 0);
        for (int i = 0; i < 100000; i++) {
                ssize_t n = send(*cl, chunk, sizeof(chunk), MSG_NOSIGNAL);

                if (n < 0) {
                        ck_assert_int_eq(errno, EAGAIN);
                        break;
                }
        }
        ck_assert_int_eq(setsockopt(*cl, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
}

/* Reads what the peer of a lingering socket sends, as it arrives, until the end of its stream or
 * until nothing more comes for 200 ms (scaled); close(sv) then resets the rest, so that the
 * daemon's lingering close completes.  (The stream never ends by itself here: behind a 4 KiB
 * receive buffer the sender stalls on its zero-window probes after about 340 KB.  Waiting 10 s
 * for an end that does not come made each of the two tests that drain take 10 s.) */
static void drain(int sv)
{
        long long end = now_ms() + test_timeout_ms(10000);
        char buf[65536];

        while (now_ms() < end) {
                struct pollfd p = { .fd = sv, .events = POLLIN };
                ssize_t n;

                if (poll(&p, 1, test_timeout_ms(200)) == 0)
                        break;
                n = recv(sv, buf, sizeof(buf), MSG_DONTWAIT);
                if (n == 0)
                        break;
        }
}

/*
 * The event loop blocks in close(): a client registers a TCP socket with SO_LINGER set and
 * unsent data stuck behind the peer's zero window, closes its own copy and disconnects.  The
 * daemon's close() of the last reference waits up to the linger time (here 60 s, up to
 * forever), and no other client is served meanwhile.
 */
START_TEST(test_lingering_socket_blocks_loop)
{
        int a, cl, sv;
        uint32_t pa, r0;

        start(NULL);
        lingering_pair(&cl, &sv);
        a = raw_hello(D.path);
        pa = raw_port_create(a, 2, NULL);
        send_enable(a, 3, pa, cl, SN_REGISTER_EVENT_IN);
        ck_assert_uint_eq(recv_process(a, 3, &r0, NULL), 0);
        ck_assert_uint_eq(r0, 0);
        close(cl); /* the daemon now holds the last reference */
        close(a);  /* ... and closes it when it frees the connection */
        usleep(100 * 1000);
        daemon_answers();
        drain(sv);
        close(sv);
        finish();
}
END_TEST

/* The same through a descriptor the daemon only closes: a staged part whose call then fails. */
START_TEST(test_lingering_staged_fd_blocks_loop)
{
        int a, cl, sv;
        uint32_t pa;
        uint8_t buf[256];
        struct snw_process body;
        struct snw_registration r = { .key = 1, .op = SN_OP_ENABLE, .filter = 1,
                                      .trigger = SN_TRIGGER_LEVEL, .fd_index = 0 };
        uint8_t *p;

        start(NULL);
        lingering_pair(&cl, &sv);
        a = raw_hello(D.path);
        pa = raw_port_create(a, 2, NULL);
        body = (struct snw_process){ .port = pa, .flags = SN_PROTO_PROCESS_PART };
        p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 1, 1, 0), &body);
        p = snw_registration_encode(p, &r);
        raw_send(a, buf, (size_t)(p - buf), &cl, 1);
        status_works(a, 4); /* the part is staged: the daemon holds the socket */
        close(cl);
        /* The last part names another port: the call fails and its staged socket is closed. */
        body = (struct snw_process){ .port = pa + 1000 };
        p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 0, 0, 0), &body);
        raw_send(a, buf, (size_t)(p - buf), NULL, 0);
        usleep(100 * 1000);
        daemon_answers();
        ck_assert_uint_eq(recv_process(a, 3, NULL, NULL), EINVAL);
        drain(sv);
        close(sv);
        close(a);
        finish();
}
END_TEST

/*
 * Defect 4b again, through a socket's receive queue: the client sends its own connection to the
 * daemon over a Unix socket pair, registers the receiving end, and exits.  The daemon's copy of
 * that end holds the connection's client end in flight, so the daemon never sees EOF: the
 * connection, its port and its registration stay forever.
 */
START_TEST(test_own_connection_in_flight)
{
        int a, sp[2];
        uint32_t pa, r0;
        pid_t pid;
        int st;

        start(NULL);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                a = raw_hello(D.path);
                pa = raw_port_create(a, 2, NULL);
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), 0);
                ck_assert_int_eq(sn__fdmsg_send(sp[0], "x", 1, &a, 1, 0), 0);
                send_enable(a, 3, pa, sp[1], SN_REGISTER_EVENT_IN);
                ck_assert_uint_eq(recv_process(a, 3, &r0, NULL), 0);
                _exit(0); /* every descriptor of the client goes */
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        finish();
}
END_TEST

/* Sends a call of total identity-only NONE items in parts of at most 4000 items. */
static void send_none_call(int fd, uint32_t id, uint32_t port, uint32_t total)
{
        while (total) {
                uint32_t n = total > 4000 ? 4000 : total;
                size_t len = sn_msg_size(SN_MSG_PROCESS, n, 0);
                uint8_t *buf = calloc(1, len), *p;
                struct snw_process body = { .port = port,
                                            .flags = total > n ? SN_PROTO_PROCESS_PART : 0 };

                ck_assert_ptr_nonnull(buf);
                p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, n, 0), &body);
                for (uint32_t i = 0; i < n; i++) {
                        struct snw_registration r = { .op = SN_OP_NONE,
                                                      .fd_index = SN_PROTO_NO_FD };
                        p = snw_registration_encode(p, &r);
                }
                raw_send(fd, buf, len, NULL, 0);
                free(buf);
                total -= n;
        }
}

/*
 * --max-message accepts up to 1 MiB, but a SOCK_SEQPACKET message larger than the sender's
 * SO_SNDBUF (net.core.wmem_default, 212,992 bytes on most systems) fails with EMSGSIZE, and the
 * daemon never sizes its sockets' buffers: a reply above that size kills the connection
 * ("sending failed"), so a call the daemon announced it takes ends in a lost connection.
 */
START_TEST(test_reply_larger_than_socket_buffer)
{
        const uint32_t items = 60000; /* a 240 KB reply, within max_call_items of 1 MiB */
        int a;
        uint32_t pa, r0;

        start((const char *const[]){ "--max-message=1048576", NULL });
        a = raw_hello(D.path);
        pa = raw_port_create(a, 2, NULL);
        send_none_call(a, 3, pa, items);
        /* Either the whole reply, or a refusal with a status: never a lost connection. */
        uint32_t st = recv_process(a, 3, &r0, NULL);
        ck_assert(st == 0 || st == E2BIG);
        status_works(a, 4);
        close(a);
        finish();
}
END_TEST

/*
 * Descriptors leaked outside any quota: a PROCESS sent before HELLO, with descriptors, passes
 * the message checks and is refused as a request before HELLO without its descriptors being
 * closed.  Every connection leaks up to 253, and connecting again is free: the daemon runs out.
 */
START_TEST(test_fds_before_hello)
{
        for (int round = 0; round < 4; round++) {
                int fd, sp[2];

                if (round == 0)
                        start(NULL);
                fd = raw_connect(D.path);
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
                send_enable(fd, 3, 1, sp[0], SN_REGISTER_EVENT_IN);
                expect_reply(fd, SN_MSG_ERROR, 3, EPROTO);
                ck_assert(peer_closed(fd, 2000));
                close(fd);
                close(sp[0]);
                close(sp[1]);
        }
        finish();
}
END_TEST

/*
 * What one user learns of another's: port ids come from one daemon-wide counter, so the gap
 * between two of a user's port ids counts the ports every other user created in between (how
 * busy root's services are, when a service starts or restarts its ports).
 */
START_TEST(test_port_ids_tell_others_activity)
{
        int a, st;
        uint32_t first, second;
        pid_t pid;

        if (geteuid() != 0) {
                printf("SKIP: test_port_ids_tell_others_activity needs root\n");
                return;
        }
        start((const char *const[]){ "--socket-mode=0666", NULL });
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        a = raw_hello(D.path);
        first = raw_port_create(a, 2, NULL);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int b;

                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(3);
                b = raw_hello(D.path);
                for (uint32_t i = 0; i < 5; i++)
                        raw_port_create(b, 10 + i, NULL);
                close(b);
                _exit(0);
        }
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        second = raw_port_create(a, 3, NULL);
        ck_assert_uint_ne(second - first, 6);
        close(a);
        finish();
}
END_TEST

static long daemon_rss_kib(void)
{
        char path[64], line[256];
        long kib = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)D.pid);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld", &kib) == 1)
                        break;
        fclose(f);
        return kib;
}

/*
 * Runners are bounded by nothing: a port's concurrency is the client's number (up to 2^32-1),
 * and every call that takes an entry with a new thread id leaves a runner record on the port and
 * on the connection, scanned linearly by every later call of the connection.  One client makes
 * the daemon's memory grow without any limit and its CPU cost per call grow with the number of
 * thread ids it has used.
 */
/* Daemon CPU ticks for rounds x per one-entry calls on a port of unlimited concurrency, each
 * call by a new thread id (distinct) or all by one thread. */
static long one_entry_calls(int a, uint32_t pa, uint32_t *id, uint32_t rounds, uint32_t per,
                            bool distinct)
{
        long t0 = test_daemon_cpu_ticks(&D);

        for (uint32_t r = 0; r < rounds; r++) {
                raw_post(a, (*id)++, pa, per);
                /* Pipelined, 64 calls at a time. */
                for (uint32_t i = 0; i < per; i++) {
                        send_wait(a, *id + i, pa, distinct ? 1000 + r * per + i : 7, 1, 0);
                        if (i % 64 == 63 || i == per - 1) {
                                for (uint32_t k = i - (i % 64); k <= i; k++)
                                        ck_assert_uint_eq(recv_process(a, *id + k, NULL, NULL),
                                                          0);
                        }
                }
                *id += per;
        }
        return test_daemon_cpu_ticks(&D) - t0;
}

/*
 * Runners are bounded by nothing: a port's concurrency is the client's number (up to 2^32-1),
 * and every call that takes an entry with a new thread id leaves a runner record on the port and
 * on the connection, scanned linearly by every later call of the connection.  One client makes
 * the daemon's memory grow without any limit and its CPU cost per call grow with the number of
 * thread ids it has used (quadratic in all).
 */
START_TEST(test_runner_threads_unbounded)
{
        const uint32_t rounds = 20, per = 4000;
        long control, attack, rss0;
        int a, b;
        uint32_t pa, pb, id = 10;

        start(NULL);
        /* The same calls by one thread id: what they cost when nothing accumulates. */
        b = raw_hello(D.path);
        pb = raw_port_create_conc(b, 2, 0xffffffffu);
        control = one_entry_calls(b, pb, &id, rounds, per, false);
        close(b);
        a = raw_hello(D.path);
        pa = raw_port_create_conc(a, 2, 0xffffffffu);
        rss0 = daemon_rss_kib();
        attack = one_entry_calls(a, pa, &id, rounds, per, true);
        printf("runner attack: %u calls: daemon CPU %.2f s (one thread id: %.2f s), RSS +%ld KiB\n",
               rounds * per, (double)attack / (double)sysconf(_SC_CLK_TCK),
               (double)control / (double)sysconf(_SC_CLK_TCK), daemon_rss_kib() - rss0);
        /* Measured under ASan: 0.4 s both ways when bounded, 20 times that when not. */
        ck_assert_int_le(attack, 3 * control + sysconf(_SC_CLK_TCK) / 2);
        close(a);
        finish();
}
END_TEST



/* CONTROL (0x0a, JSON text) is built by hand: this file also builds against a codec without
 * it.  Returns the reply's status, or -1 when the daemon does not know CONTROL. */
static long control_call(int fd, uint32_t id, const char *json)
{
        uint8_t buf[65536];
        size_t len = strlen(json);
        struct snw_header h = { .size = (uint32_t)(SN_HEADER_SIZE + len), .type = 0x0a, .id = id,
                                .count = (uint32_t)len };
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        int fds[SN_PROTO_MAX_FDS];
        unsigned nfds;
        ssize_t n;

        snw_header_encode(buf, &h);
        memcpy(buf + SN_HEADER_SIZE, json, len);
        raw_send(fd, buf, SN_HEADER_SIZE + len, NULL, 0);
        ck_assert_int_eq(poll(&pf, 1, 10000), 1);
        n = sn__fdmsg_recv(fd, buf, sizeof(buf), fds, 0, &nfds, 0);
        ck_assert_int_ge(n, SN_HEADER_SIZE);
        snw_header_decode(buf, &h);
        ck_assert_uint_eq(h.id, id);
        if (h.type == SN_MSG_ERROR && h.status == EOPNOTSUPP)
                return -1;
        ck_assert_uint_eq(h.type, 0x8a);
        return h.status;
}

/*
 * CPU amplification in CONTROL listings (socknotifyctl): every request walks every object the
 * caller may see and builds its JSON, with several syscalls each (the socket's addresses, the
 * client's /proc comm), also for the items before "offset" and after the page is full.  Any
 * user asks for the last page of its own registrations with a 60-byte request and the daemon
 * describes all of them; paging through n items costs O(n^2).
 */
START_TEST(test_control_listing_amplification)
{
        int a, sp[2];
        uint32_t pa, id = 10, r0;
        long t0, skip, page;
        char req[128];

        start(NULL);
        a = raw_hello(D.path);
        if (control_call(a, 3, "{\"verb\":\"ports\"}") < 0) {
                printf("SKIP: this daemon has no CONTROL request\n");
                close(a);
                finish();
                return;
        }
        pa = raw_port_create(a, 4, NULL);
        for (int i = 0; i < 3000; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), 0);
                send_enable(a, id, pa, sp[1], SN_REGISTER_EVENT_IN);
                ck_assert_uint_eq(recv_process(a, id++, &r0, NULL), 0);
                ck_assert_uint_eq(r0, 0);
                close(sp[0]);
                close(sp[1]);
        }
        /* What walking them costs: a port filter that matches none of them. */
        snprintf(req, sizeof(req), "{\"verb\":\"registrations\",\"port\":%u}", pa + 12345);
        t0 = test_daemon_cpu_ticks(&D);
        for (int i = 0; i < 100; i++)
                ck_assert_int_eq(control_call(a, id++, req), 0);
        skip = test_daemon_cpu_ticks(&D) - t0;
        /* The last ten of them. */
        snprintf(req, sizeof(req), "{\"verb\":\"registrations\",\"offset\":2990}");
        t0 = test_daemon_cpu_ticks(&D);
        for (int i = 0; i < 100; i++)
                ck_assert_int_eq(control_call(a, id++, req), 0);
        page = test_daemon_cpu_ticks(&D) - t0;
        printf("CONTROL: 100 pages of 10 registrations at offset 2990: %ld ticks (walk: %ld)\n",
               page, skip);
        ck_assert_int_le(page, 4 * skip + sysconf(_SC_CLK_TCK) / 5);
        close(a);
        finish();
}
END_TEST

int main(void)
{
        Suite *s = suite_create("attack");
        TCase *tc = tcase_create("hostile-clients");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_close_handle_after_shutdown);
        tcase_add_test(tc, test_shutdown_with_unreadable_waiter);
        tcase_add_test(tc, test_lingering_socket_blocks_loop);
        tcase_add_test(tc, test_lingering_staged_fd_blocks_loop);
        tcase_add_test(tc, test_own_connection_in_flight);
        tcase_add_test(tc, test_runner_threads_unbounded);
        tcase_add_test(tc, test_reply_larger_than_socket_buffer);
        tcase_add_test(tc, test_fds_before_hello);
        tcase_add_test(tc, test_port_ids_tell_others_activity);
        tcase_add_test(tc, test_control_listing_amplification);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-hardening.c - what a hostile local client tried against socknotifyd, one test each
 * (issue 11): reply overflows, waits used after their connection died, descriptors leaked
 * outside any quota, one user exhausting what others need, and what one user could learn of
 * another's.  Every test runs a real daemon with the limits it needs, attacks it with the raw
 * protocol client, and ends by checking that the daemon still serves, holds no descriptor more
 * than before, and exits 0 (under the sanitizer build that also means no leak).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* Set by a test whose connection the daemon may rightly drop while it still sends: a send
 * that finds it dropped (EPIPE, ECONNRESET) is then not a failure, and the rest is skipped. */
static bool may_be_dropped, dropped;

/* Sends one PROCESS message with n identity-only items of operation op. */
static void send_process(int fd, uint32_t id, uint32_t port, uint32_t flags, uint32_t max_entries,
                         uint32_t timeout_ms, uint32_t n, uint8_t op)
{
        size_t len = sn_msg_size(SN_MSG_PROCESS, n, 0);
        uint8_t *buf = malloc(len), *p;
        struct snw_process body = { .port = port, .timeout_ms = timeout_ms,
                                    .max_entries = max_entries, .flags = flags, .thread = 1 };

        ck_assert_ptr_nonnull(buf);
        p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, n, 0), &body);
        for (uint32_t i = 0; i < n; i++) {
                struct snw_registration r = { .key = i, .dev = 1, .ino = 1000000 + i, .op = op,
                                              .fd_index = SN_PROTO_NO_FD };
                p = snw_registration_encode(p, &r);
        }
        if (!may_be_dropped) {
                raw_send(fd, buf, len, NULL, 0);
        } else if (!dropped) {
                int r = sn__fdmsg_send(fd, buf, len, NULL, 0, 0);

                ck_assert_msg(r == 0 || r == -EPIPE || r == -ECONNRESET, "send: %s",
                              strerror(-r));
                dropped = r < 0;
        }
        free(buf);
}

/* Sends a call of total identity-only items in as many parts as one message holds. */
static void send_call(int fd, uint32_t id, uint32_t port, uint32_t total, uint32_t max_entries,
                      uint32_t timeout_ms)
{
        uint32_t per = (131072 - SN_HEADER_SIZE - SN_WIRE_SIZE_process) / SN_WIRE_SIZE_registration;

        while (total > per) {
                send_process(fd, id, port, SN_PROTO_PROCESS_PART, max_entries, timeout_ms, per,
                             SN_OP_NONE);
                total -= per;
        }
        send_process(fd, id, port, 0, max_entries, timeout_ms, total, SN_OP_NONE);
}

/* Receives the reply to a PROCESS call: its status, result count and entry count. */
static void expect_process_reply(int fd, uint32_t id, uint32_t status, uint32_t nresults,
                                 uint32_t min_entries)
{
        uint8_t *buf = malloc(1u << 20);
        const struct sn_msg_desc *d;
        struct snw_header h;
        ssize_t n;

        ck_assert_ptr_nonnull(buf);
        n = raw_recv(fd, buf, 1u << 20);
        ck_assert_int_gt(n, 0);
        ck_assert_int_le(n, 131072);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_uint_eq(h.id, id);
        ck_assert_uint_eq(h.status, status);
        ck_assert_uint_eq(h.count, nresults);
        ck_assert_uint_ge(h.count2, min_entries);
        free(buf);
}

static void raw_post(int fd, uint32_t id, uint32_t port, uint32_t n, uint32_t status)
{
        size_t len = sn_msg_size(SN_MSG_POST, n, 0);
        uint8_t *buf = calloc(1, len), *p;
        struct snw_post body = { .port = port };

        p = snw_post_encode(sn_msg_begin(buf, SN_MSG_POST, id, 0, 0, n, 0), &body);
        for (uint32_t i = 0; i < n; i++) {
                struct snw_packet k = { .key = 0x5000 + i, .overlapped = 0xdead, .bytes = i };
                p = snw_packet_encode(p, &k);
        }
        raw_send(fd, buf, len, NULL, 0);
        free(buf);
        expect_reply(fd, SN_MSG_POST_REPLY, id, status);
}

/* Defect 1: a call whose reply (4 bytes a result) would not fit max_message. */
START_TEST(test_reply_overflow)
{
        uint32_t call_max = (131072 - 52) / 4;
        int fd;
        uint32_t port;

        start(NULL);
        fd = raw_hello(D.path);
        port = raw_port_create(fd, 2, NULL);
        /* Packets the attacker chose, which the old daemon wrote past its entry buffer. */
        raw_post(fd, 3, port, 2000, 0);
        send_call(fd, 10, port, 40000, 0, 0);
        expect_process_reply(fd, 10, E2BIG, 0, 0);
        send_call(fd, 11, port, 65536, 1000, 0);
        expect_process_reply(fd, 11, E2BIG, 0, 0);
        /* The largest call that fits gets every result and still room for an entry. */
        send_call(fd, 12, port, call_max, 1000, 0);
        expect_process_reply(fd, 12, 0, call_max, 1);
        send_call(fd, 13, port, call_max + 1, 0, 0);
        expect_process_reply(fd, 13, E2BIG, 0, 0);
        status_works(fd, 14);
        close(fd);
        finish();
}
END_TEST

/* The native API splits a call larger than the daemon takes, and every item gets its result.
 * Every item reaches the daemon: an ENABLE, then DISABLEs by identity, then an ENABLE with
 * another key (two descriptors passed in all); the parts must be applied in order, so the
 * last ENABLE finds the registration, re-enables it and keeps its first key (row 26). */
START_TEST(test_large_call_is_split)
{
        uint32_t n = 70000;
        sn_registration_t *r = calloc(n, sizeof(*r));
        sn_entry_t e[4];
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv;

        start(NULL);
        tcp_pair(&cl, &sv);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        r[0] = (sn_registration_t){ .fd = sv, .key = 5, .op = SN_OP_ENABLE,
                                    .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL,
                                    .result = -1 };
        for (uint32_t i = 1; i < n - 1; i++)
                r[i] = (sn_registration_t){ .fd = sv, .op = SN_OP_DISABLE, .result = -1 };
        r[n - 1] = r[0];
        r[n - 1].key = 6;
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(sn_port_process(p, r, n, e, 4, test_timeout_ms(5000)), 1);
        for (uint32_t i = 0; i < n; i++)
                ck_assert_int_eq(r[i].result, 0);
        ck_assert_uint_eq(e[0].key, 5);
        ck_assert_uint_eq(e[0].events & SN_EVENT_IN, SN_EVENT_IN);
        free(r);
        sn_socket_close(c, sv);
        close(cl);
        sn_port_close(p);
        sn_conn_close(c);
        finish();
}
END_TEST

/* Defect 2a: a client parks waits with a timeout and shuts its receiving side: the answers
 * fail to send and kill the connection from inside the timer's wait_cancel. */
START_TEST(test_wait_timeout_after_shutdown)
{
        int fd;
        uint32_t port;

        start(NULL);
        fd = raw_hello(D.path);
        port = raw_port_create(fd, 2, NULL);
        send_process(fd, 3, port, 0, 1, 100, 0, SN_OP_NONE);
        send_process(fd, 4, port, 0, 1, 100, 0, SN_OP_NONE);
        status_works(fd, 5); /* both are parked */
        ck_assert_int_eq(shutdown(fd, SHUT_RD), 0);
        usleep(400 * 1000);
        close(fd);
        finish();
}
END_TEST

/* Defect 2b: a slow client parks many waits with large results and never reads: an answer
 * crosses the output bound and kills the connection from inside wait_cancel. */
START_TEST(test_wait_answers_past_output_bound)
{
        int fd;
        uint32_t port;

        start((const char *const[]){ "--max-output=262144", NULL });
        fd = raw_hello(D.path);
        port = raw_port_create(fd, 2, NULL);
        /* On a slow machine (sanitizers) the first timers fire while later calls are still
         * being sent: the answers cross the bound then, and the daemon drops the connection
         * under the sender, which is the behaviour under test, not a failure. */
        may_be_dropped = true;
        for (uint32_t i = 0; i < 40 && !dropped; i++)
                send_call(fd, 100 + i, port, 20000, 1, 200);
        may_be_dropped = false;
        usleep(600 * 1000); /* every timer fires; about 3 MiB of answers for a 256 KiB bound */
        close(fd);
        finish();
}
END_TEST

/* Defect 2c: a process dies with waits parked on a shared named port while another process
 * of the same user posts to it: the answer's send fails and kills the dead connection. */
START_TEST(test_waiter_killed_while_others_post)
{
        sn_conn_t *c;
        sn_port_t *p;

        start(NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "shared", 0, &p), 0);
        for (int round = 0; round < 20; round++) {
                int go[2];
                pid_t pid;
                char b;

                ck_assert_int_eq(pipe(go), 0);
                pid = fork();
                ck_assert_int_ge(pid, 0);
                if (pid == 0) {
                        int fd = raw_hello(D.path);
                        uint8_t buf[512];
                        const char *name = "shared";
                        uint8_t *q = sn_msg_begin(buf, SN_MSG_PORT_OPEN, 2, 0, 0, 6, 0);
                        struct snw_port_create_reply rep;

                        memcpy(q, name, 6);
                        raw_send(fd, buf, SN_HEADER_SIZE + 6, NULL, 0);
                        ck_assert_int_gt(raw_recv(fd, buf, sizeof(buf)), 0);
                        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
                        for (uint32_t i = 0; i < 8; i++)
                                send_process(fd, 10 + i, rep.port, 0, 1, SN_PROTO_INFINITE, 0,
                                             SN_OP_NONE);
                        status_works(fd, 30);
                        ck_assert_int_eq(write(go[1], "g", 1), 1);
                        pause();
                        _exit(0);
                }
                close(go[1]);
                ck_assert_int_eq(read(go[0], &b, 1), 1);
                close(go[0]);
                kill(pid, SIGKILL);
                for (int i = 0; i < 16; i++)
                        ck_assert_int_eq(sn_port_post(p, 100 + (uint64_t)i, 0, 0), 0);
                waitpid(pid, NULL, 0);
                /* Whatever the dead waiters did not take is still queued for us. */
                sn_entry_t e[32];
                int n;
                while ((n = sn_port_dequeue(p, e, 32, 200)) > 0)
                        ;
                ck_assert_int_eq(n, -ETIMEDOUT);
        }
        sn_port_close(p);
        sn_conn_close(c);
        finish();
}
END_TEST

/* Defect 2d: a client that stops reading (as a SIGSTOPped one) with waits parked on a shared
 * port while another connection posts: the dispatch's answer crosses the output bound and kills
 * the waiter's connection in the middle of port_dispatch. */
START_TEST(test_stopped_waiter_on_shared_port)
{
        sn_conn_t *c;
        sn_port_t *p;
        uint8_t buf[512], *big;
        struct snw_port_create_reply rep;
        sn_entry_t e[64];
        int fd, n, got = 0;
        ssize_t len;

        start((const char *const[]){ "--max-output=262144", NULL });
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "shared", 0, &p), 0);
        fd = raw_hello(D.path);
        memcpy(sn_msg_begin(buf, SN_MSG_PORT_OPEN, 2, 0, 0, 6, 0), "shared", 6);
        raw_send(fd, buf, SN_HEADER_SIZE + 6, NULL, 0);
        ck_assert_int_gt(raw_recv(fd, buf, sizeof(buf)), 0);
        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
        for (uint32_t i = 0; i < 40; i++)
                send_call(fd, 100 + i, rep.port, 20000, 1, SN_PROTO_INFINITE);
        status_works(fd, 99); /* all 40 are parked; from now on nothing is read */
        for (int i = 0; i < 40; i++)
                ck_assert_int_eq(sn_port_post(p, (uint64_t)i, 0, 0), 0);
        /* The reader is dropped once past its bound (its stream ends after what was queued);
         * what it was not handed is still ours. */
        big = malloc(1u << 20);
        while ((len = raw_recv(fd, big, 1u << 20)) > 0)
                ;
        ck_assert_int_eq(len, 0);
        free(big);
        while ((n = sn_port_dequeue(p, e, 64, 300)) > 0)
                got += n;
        ck_assert_int_eq(n, -ETIMEDOUT);
        ck_assert_int_lt(got, 40);
        close(fd);
        sn_port_close(p);
        sn_conn_close(c);
        finish();
}
END_TEST

/* Defect 3 (UBSan): a multi-part call whose first part carries items but no descriptor. */
START_TEST(test_first_part_without_fds)
{
        int fd, sp[2];
        uint32_t port;
        uint8_t buf[512];

        start(NULL);
        fd = raw_hello(D.path);
        port = raw_port_create(fd, 2, NULL);
        send_process(fd, 3, port, SN_PROTO_PROCESS_PART, 0, 0, 2, SN_OP_NONE);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        struct snw_process body = { .port = port };
        struct snw_registration r = { .key = 7, .op = SN_OP_ENABLE, .filter = 1, .trigger = 4,
                                      .fd_index = 0 };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 1, 1, 0), &body);
        p = snw_registration_encode(p, &r);
        raw_send(fd, buf, (size_t)(p - buf), sp, 1);
        expect_process_reply(fd, 3, 0, 3, 0);
        close(sp[0]);
        close(sp[1]);
        close(fd);
        finish();
}
END_TEST

/* Defect 4a: a zero-length datagram carrying descriptors is not the end of the stream. */
START_TEST(test_empty_message_with_fds)
{
        int fd, sp[2], nul;

        start(NULL);
        fd = raw_hello(D.path);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        raw_send(fd, (const uint8_t *)"", 0, (int[]){ sp[0], sp[1], nul }, 3);
        expect_reply(fd, SN_MSG_ERROR, 0, EBADMSG);
        /* The descriptors were closed (not kept), and the connection goes on. */
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline + 1, 2000), baseline + 1);
        status_works(fd, 2);
        close(sp[0]);
        close(sp[1]);
        close(nul);
        close(fd);
        finish();
}
END_TEST

/* Defect 4b: a client registers its own connection to the daemon, or two connections register
 * each other; the daemon must never hold a client's end of a connection to itself. */
START_TEST(test_register_own_connection)
{
        sn_conn_t *c;
        sn_port_t *p;
        int a, b;

        start(NULL);
        a = raw_hello(D.path);
        b = raw_hello(D.path);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sn_registration_t r[2] = {
                { .fd = a, .key = 1, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
                { .fd = b, .key = 2, .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                  .trigger = SN_TRIGGER_LEVEL },
        };
        ck_assert_int_eq(sn_port_process(p, r, 2, NULL, 0, 0), 0);
        ck_assert_int_eq(r[0].result, -EINVAL);
        ck_assert_int_eq(r[1].result, -EINVAL);
        /* Closing their ends ends those connections: no copy keeps them open. */
        close(a);
        close(b);
        sn_port_close(p);
        sn_conn_close(c);
        finish();
}
END_TEST

/* Defect 5: ports and connections per user. */
START_TEST(test_ports_and_connections_per_user)
{
        sn_conn_t *c[4];
        sn_port_t *p[4];

        start((const char *const[]){ "--max-ports-per-user=3", "--max-connections-per-user=3",
                                     NULL });
        ck_assert_int_eq(sn_conn_open(D.path, &c[0]), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c[1]), 0);
        ck_assert_int_eq(sn_port_create(c[0], 0, &p[0]), 0);
        ck_assert_int_eq(sn_port_create(c[0], 0, &p[1]), 0);
        ck_assert_int_eq(sn_port_create(c[1], 0, &p[2]), 0);
        /* The fourth port of the user, on either connection. */
        ck_assert_int_eq(sn_port_create(c[1], 0, &p[3]), -EDQUOT);
        ck_assert_int_eq(sn_port_create(c[0], 0, &p[3]), -EDQUOT);
        sn_port_close(p[2]);
        ck_assert_int_eq(sn_port_create(c[1], 0, &p[2]), 0);
        /* The fourth connection of the user hears why it is refused. */
        ck_assert_int_eq(sn_conn_open(D.path, &c[2]), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c[3]), -EDQUOT);
        sn_conn_close(c[2]);
        for (int i = 0; i < 3; i++)
                sn_port_close(p[i]);
        sn_conn_close(c[0]);
        sn_conn_close(c[1]);
        finish();
}
END_TEST

/* The daemon-wide connection limit answers EUSERS instead of a silent close. */
START_TEST(test_connection_limit_says_why)
{
        sn_conn_t *c[3];

        start((const char *const[]){ "--max-connections=2", NULL });
        ck_assert_int_eq(sn_conn_open(D.path, &c[0]), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c[1]), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c[2]), -EUSERS);
        sn_conn_close(c[1]);
        sn_conn_close(c[0]);
        finish();
}
END_TEST

/* Defect 6: connections that never send HELLO do not hold their slot forever. */
START_TEST(test_handshake_timeout)
{
        long long t0;
        int fd;

        start((const char *const[]){ "--handshake-timeout=200", NULL });
        fd = raw_connect(D.path);
        t0 = now_ms();
        expect_reply(fd, SN_MSG_ERROR, 0, ETIMEDOUT);
        ck_assert(peer_closed(fd, 2000));
        ck_assert_int_ge(now_ms() - t0, 150);
        close(fd);
        finish();
}
END_TEST

/* Defect 6: out of descriptors, the daemon refuses with EMFILE and does not spin. */
START_TEST(test_out_of_descriptors_no_spin)
{
        struct rlimit rl = { 48, 48 };
        sn_conn_t *c[64];
        int n = 0, r = 0, knock;
        long t0;

        start(NULL);
        /* Lowered after start, so the defaults do not follow it and the test keeps its own. */
        ck_assert_int_eq(prlimit(D.pid, RLIMIT_NOFILE, &rl, NULL), 0);
        while (n < 64 && (r = sn_conn_open(D.path, &c[n])) == 0)
                n++;
        ck_assert_int_eq(r, -EMFILE);
        /* Each connection costs the daemon test_conn_fds() descriptors (its rings too). */
        ck_assert_int_gt(n * test_conn_fds(), 20);
        /* More clients keep knocking while the daemon is full: each hears why. */
        for (int i = 0; i < 3; i++) {
                sn_conn_t *x;
                ck_assert_int_eq(sn_conn_open(D.path, &x), -EMFILE);
        }
        /* One waits in the listen queue: the old daemon spun on it at 100% CPU. */
        knock = raw_connect(D.path);
        t0 = test_daemon_cpu_ticks(&D);
        usleep(1000 * 1000);
        ck_assert_int_le(test_daemon_cpu_ticks(&D) - t0, sysconf(_SC_CLK_TCK) / 10);
        expect_reply(knock, SN_MSG_ERROR, 0, EMFILE);
        close(knock);
        while (n > 0)
                sn_conn_close(c[--n]);
        usleep(200 * 1000); /* accepting resumes within 100 ms */
        finish();
}
END_TEST

/* Defect 6: stray signals do not kill the daemon (nor leave its socket file behind).  SIGHUP
 * reloads (no configuration file here); SIGUSR2, a re-exec, has its own tests (test-reexec). */
START_TEST(test_stray_signals)
{
        start(NULL);
        kill(D.pid, SIGHUP);
        kill(D.pid, SIGUSR1);
        kill(D.pid, SIGALRM);
        usleep(100 * 1000);
        finish();
}
END_TEST

/* Limits per user on posted packets, waits and staged items: each refusal is EDQUOT. */
START_TEST(test_per_user_limits)
{
        int a, b;
        uint32_t pa, pb;

        start((const char *const[]){ "--max-posted-per-user=100", "--max-waits-per-user=2",
                                     "--max-staged-per-user=5000", NULL });
        a = raw_hello(D.path);
        b = raw_hello(D.path);
        pa = raw_port_create(a, 2, NULL);
        pb = raw_port_create(b, 2, NULL);
        raw_post(a, 3, pa, 60, 0);
        raw_post(b, 3, pb, 41, EDQUOT); /* all or none */
        raw_post(b, 4, pb, 40, 0);
        /* Two waits of the user; a third, on another connection, is refused. */
        int w = raw_hello(D.path);
        uint32_t pw = raw_port_create(w, 2, NULL);
        send_process(w, 6, pw, 0, 1, 5000, 0, SN_OP_NONE);
        send_process(w, 7, pw, 0, 1, 5000, 0, SN_OP_NONE);
        status_works(w, 8);
        int w2 = raw_hello(D.path);
        uint32_t pw2 = raw_port_create(w2, 2, NULL);
        send_process(w2, 9, pw2, 0, 1, 5000, 0, SN_OP_NONE);
        expect_process_reply(w2, 9, EDQUOT, 0, 0);
        /* Staged items of unfinished calls, summed over the user's connections. */
        send_process(a, 10, pa, SN_PROTO_PROCESS_PART, 0, 0, 3000, SN_OP_NONE);
        send_process(b, 11, pb, SN_PROTO_PROCESS_PART, 0, 0, 3000, SN_OP_NONE);
        send_process(b, 11, pb, 0, 0, 0, 1, SN_OP_NONE);
        expect_process_reply(b, 11, EDQUOT, 0, 0);
        send_process(a, 10, pa, 0, 0, 0, 1, SN_OP_NONE);
        expect_process_reply(a, 10, 0, 3001, 0);
        close(w2);
        close(w);
        close(b);
        close(a);
        finish();
}
END_TEST

/* Defect 7 and rule 10: by identity, another port's socket answers as an absent one. */
START_TEST(test_identity_of_others_is_unknown)
{
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv, fd;
        uint32_t port;
        struct stat st;
        uint8_t buf[256];

        start(NULL);
        tcp_pair(&cl, &sv);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sn_registration_t r = { .fd = sv, .key = 1, .op = SN_OP_ENABLE,
                                .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        ck_assert_int_eq(fstat(sv, &st), 0);
        fd = raw_hello(D.path);
        port = raw_port_create(fd, 2, NULL);
        for (int known = 0; known < 2; known++) {
                const struct sn_msg_desc *d;
                struct snw_header h;
                struct snw_process body = { .port = port };
                struct snw_registration it = { .key = 2, .dev = st.st_dev,
                                               .ino = known ? st.st_ino : st.st_ino + 999999,
                                               .op = SN_OP_ENABLE, .filter = 1, .trigger = 4,
                                               .fd_index = SN_PROTO_NO_FD };
                uint8_t *q = snw_process_encode(
                        sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 0, 1, 0), &body);
                q = snw_registration_encode(q, &it);
                raw_send(fd, buf, (size_t)(q - buf), NULL, 0);
                ck_assert_int_gt(raw_recv(fd, buf, sizeof(buf)), 0);
                ck_assert_int_eq(sn_msg_check(buf, sn_get_u32(buf), &h, &d), 0);
                ck_assert_uint_eq(h.status, 0);
                ck_assert_uint_eq(sn_get_u32(sn_msg_array(buf, d, 1)), ESTALE);
        }
        close(fd);
        sn_socket_close(c, sv);
        close(cl);
        sn_port_close(p);
        sn_conn_close(c);
        finish();
}
END_TEST

/* Defect 7: STATUS shows another user only its own figures (root sees every user). */
START_TEST(test_status_is_per_user)
{
        sn_conn_t *c;
        sn_port_t *p;
        pid_t pid;
        int st;

        if (geteuid() != 0) {
                printf("SKIP: test_status_is_per_user needs root to run a child as another "
                       "user\n");
                return;
        }
        start((const char *const[]){ "--socket-mode=0666", NULL });
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(sn_port_post(p, 1, 0, 0), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_conn_t *cc;
                char *text = NULL;
                json_t *doc;

                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(3);
                if (sn_conn_open(D.path, &cc) < 0 || sn_conn_status(cc, &text) < 0)
                        _exit(4);
                doc = json_loads(text, 0, NULL);
                /* Its own single connection, no ports, and nothing of root's. */
                _exit(doc && json_integer_value(json_object_get(doc, "connections")) == 1 &&
                                      json_integer_value(json_object_get(doc, "ports")) == 0 &&
                                      !json_object_get(doc, "users") &&
                                      !json_object_get(doc, "counters")
                              ? 0
                              : 5);
        }
        waitpid(pid, &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
        char *text;
        ck_assert_int_eq(sn_conn_status(c, &text), 0);
        json_t *doc = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(json_object_get(doc, "users"));
        ck_assert_int_eq(json_integer_value(json_object_get(doc, "ports")), 1);
        json_decref(doc);
        free(text);
        sn_port_close(p);
        sn_conn_close(c);
        finish();
}
END_TEST

int main(void)
{
        Suite *s = suite_create("hardening");
        TCase *tc = tcase_create("hostile-clients");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_reply_overflow);
        tcase_add_test(tc, test_large_call_is_split);
        tcase_add_test(tc, test_wait_timeout_after_shutdown);
        tcase_add_test(tc, test_wait_answers_past_output_bound);
        tcase_add_test(tc, test_waiter_killed_while_others_post);
        tcase_add_test(tc, test_stopped_waiter_on_shared_port);
        tcase_add_test(tc, test_first_part_without_fds);
        tcase_add_test(tc, test_empty_message_with_fds);
        tcase_add_test(tc, test_register_own_connection);
        tcase_add_test(tc, test_ports_and_connections_per_user);
        tcase_add_test(tc, test_connection_limit_says_why);
        tcase_add_test(tc, test_handshake_timeout);
        tcase_add_test(tc, test_out_of_descriptors_no_spin);
        tcase_add_test(tc, test_stray_signals);
        tcase_add_test(tc, test_per_user_limits);
        tcase_add_test(tc, test_identity_of_others_is_unknown);
        tcase_add_test(tc, test_status_is_per_user);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

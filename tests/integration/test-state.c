/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-state.c - one state, one reader: what a re-exec, an orderly stop and a crash leave is
 * the same journal, read the same way.  This test plays the service manager (its descriptor
 * store, tests/helpers/manager.h) and checks what the seams between the old three ways lost:
 *
 *   a re-exec after a crash restore keeps every session (connections restored out of the order
 *   they were made in);
 *   replies queued for a client that does not read, and the posted packets they carry, survive
 *   a crash: 2,000 requests, 2,000 replies, each packet once;
 *   a multi-part call half received goes on across a crash and across an orderly stop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/manager.h"
#include "tests/helpers/raw.h"
#include "tests/helpers/status.h"

struct store_test {
        struct test_daemon d;
        struct manager m;
        char mdir[32];
};

static void store_start(struct store_test *t)
{
        snprintf(t->mdir, sizeof(t->mdir), "/tmp/sn-manager-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(t->mdir));
        setenv("FDSTORE", "64", 1);
        manager_start(&t->m, t->mdir, 64);
        test_daemon_start(&t->d, NULL);
}

/* Until the manager has read every message the daemon sent it. */
static void store_drain(struct store_test *t)
{
        long long t0 = now_ms();

        for (;;) {
                int queued = 0;

                ck_assert_int_eq(ioctl(t->m.sock, FIONREAD, &queued), 0);
                if (!queued)
                        break;
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "the store is not read");
                usleep(1000);
        }
        /* The message being handled by the manager's thread: it holds the lock meanwhile. */
        pthread_mutex_lock(&t->m.lock);
        pthread_mutex_unlock(&t->m.lock);
}

/* Ends the daemon with sig (SIGKILL: a crash; SIGTERM: an orderly stop) and starts the next one
 * with what the store holds, on the same path. */
static void store_restart(struct store_test *t, int sig)
{
        int st;

        store_drain(t);
        ck_assert_int_eq(kill(t->d.pid, sig), 0);
        ck_assert_int_eq(waitpid(t->d.pid, &st, 0), t->d.pid);
        ck_assert(sig == SIGKILL ? WIFSIGNALED(st) : WIFEXITED(st) && WEXITSTATUS(st) == 0);
        store_drain(t);
        manager_start_daemon(&t->m, &t->d, NULL);
}

static void store_stop(struct store_test *t)
{
        ck_assert_int_eq(test_daemon_stop(&t->d), 0);
        manager_stop(&t->m);
        rmdir(t->mdir);
        unsetenv("FDSTORE");
}

/* A port of c with one level-triggered IN registration of a new TCP socket (key); *cl is the
 * peer that makes it readable. */
static sn_port_t *port_with_socket(sn_conn_t *c, uint64_t key, int *cl, int *sv)
{
        sn_port_t *p;
        sn_registration_t r;

        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        tcp_pair(cl, sv);
        r = (sn_registration_t){ .fd = *sv, .key = key, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        return p;
}

static void expect_entry(sn_port_t *p, uint64_t key, uint32_t events)
{
        sn_entry_t e;

        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, key);
        ck_assert_uint_eq(e.events, events);
}

/* ---- a re-exec after a crash restore --------------------------------------------------- */

START_TEST(test_reexec_after_crash_restore)
{
        struct store_test t;
        sn_conn_t *a, *b, *c;
        sn_port_t *pb, *pc;
        int bcl, bsv, ccl, csv;
        pid_t pid;
        long long before, t0;

        store_start(&t);
        /* Made in the order A, B, C; A goes: after the restore B and C are not in the order
         * of their serials among the records. */
        ck_assert_int_eq(sn_conn_open(t.d.path, &a), 0);
        ck_assert_int_eq(sn_conn_open(t.d.path, &b), 0);
        pb = port_with_socket(b, 2, &bcl, &bsv);
        sn_conn_close(a);
        ck_assert_int_eq(sn_conn_open(t.d.path, &c), 0);
        pc = port_with_socket(c, 3, &ccl, &csv);

        store_restart(&t, SIGKILL);
        ck_assert_int_eq(sn_port_post(pb, 20, 0, 0), 0);
        expect_entry(pb, 20, 0);
        pid = t.d.pid;

        /* The re-exec reads the journal the restore wrote: every session goes on. */
        before = test_status_number(c, "reexecs");
        t0 = now_ms();
        ck_assert_int_eq(kill(pid, SIGUSR2), 0);
        while (test_status_number(c, "reexecs") == before) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "no re-exec within 5 s");
                usleep(5000);
        }
        ck_assert_int_eq(kill(pid, 0), 0);
        ck_assert_int_eq(send(bcl, "b", 1, 0), 1);
        ck_assert_int_eq(send(ccl, "c", 1, 0), 1);
        expect_entry(pb, 2, SN_EVENT_IN);
        expect_entry(pc, 3, SN_EVENT_IN);
        /* And once more, now that the re-exec's journal is the one in the store. */
        store_restart(&t, SIGKILL);
        ck_assert_int_eq(sn_port_post(pc, 30, 0, 0), 0);
        expect_entry(pc, 30, 0);

        sn_port_close(pb);
        sn_port_close(pc);
        sn_conn_close(b);
        sn_conn_close(c);
        store_stop(&t);
        close(bcl);
        close(bsv);
        close(ccl);
        close(csv);
}
END_TEST

/* ---- replies owed to a client that does not read --------------------------------------- */

static void send_dequeue(int fd, uint32_t id, uint32_t port)
{
        uint8_t buf[128];
        struct snw_process body = { .port = port, .max_entries = 1, .thread = 1 };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0), &body);

        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
}

/* Receives one PROCESS_REPLY: its id, status and first entry (key 0 and *ret_n 0 if none). */
static void recv_reply(int fd, uint32_t *ret_id, uint32_t *ret_status, uint32_t *ret_n,
                       uint64_t *ret_key)
{
        static uint8_t buf[1 << 16];
        const struct sn_msg_desc *d;
        struct snw_header h;
        ssize_t n = raw_recv(fd, buf, sizeof(buf));

        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        *ret_id = h.id;
        *ret_status = h.status;
        *ret_n = h.count2;
        *ret_key = 0;
        if (h.count2) {
                struct snw_entry e;

                snw_entry_decode(sn_msg_array(buf, d, 2), &e);
                *ret_key = e.key;
        }
}

START_TEST(test_crash_keeps_unread_replies)
{
        enum { N = 2000 };
        struct store_test t;
        sn_conn_t *w;
        sn_port_t *q;
        uint32_t port;
        long long t0;
        int fd;

        store_start(&t);
        ck_assert_int_eq(sn_conn_open(t.d.path, &w), 0);
        ck_assert_int_eq(sn_port_create_named(w, "owed", 0, &q), 0);
        for (uint64_t k = 0; k < N; k++)
                ck_assert_int_eq(sn_port_post(q, k, (uint32_t)k, k), 0);
        /* A client that asks for one packet at a time, 2,000 times, and reads nothing: most
         * replies wait in the daemon, its socket to the client being full. */
        fd = raw_hello(t.d.path);
        port = raw_port_open(fd, 2, "owed");
        for (uint32_t i = 0; i < N; i++)
                send_dequeue(fd, 100 + i, port);
        t0 = now_ms();
        while (test_status_number(w, "queued") != 0) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(10000), "the requests were not "
                              "all handled");
                usleep(2000);
        }

        store_restart(&t, SIGKILL);

        /* Every reply, in order, each with its packet, once. */
        for (uint32_t i = 0; i < N; i++) {
                uint32_t id, status, n;
                uint64_t key;

                recv_reply(fd, &id, &status, &n, &key);
                ck_assert_uint_eq(id, 100 + i);
                ck_assert_uint_eq(status, 0);
                ck_assert_uint_eq(n, 1);
                ck_assert_uint_eq(key, i);
        }
        ck_assert_int_eq(test_status_number(w, "queued"), 0);
        close(fd);
        sn_port_close(q);
        sn_conn_close(w);
        store_stop(&t);
}
END_TEST

/* ---- a multi-part call across a crash and an orderly stop -------------------------------- */

/* PROCESS on port with one ENABLE item per socket (keys key0, key0 + 1, ...), as a part. */
static void send_part(int fd, uint32_t id, uint32_t port, const int *socks, unsigned n,
                      uint64_t key0, bool more)
{
        uint8_t buf[512];
        struct snw_process body = { .port = port, .flags = more ? SN_PROTO_PROCESS_PART : 0 };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, (uint16_t)n, n, 0),
                                        &body);

        for (unsigned i = 0; i < n; i++) {
                struct snw_registration r = { .key = key0 + i, .op = SN_OP_ENABLE,
                                              .filter = SN_REGISTER_EVENT_IN,
                                              .trigger = SN_TRIGGER_LEVEL, .fd_index = i,
                                              .client_fd = (uint32_t)socks[i] };

                p = snw_registration_encode(p, &r);
        }
        raw_send(fd, buf, (size_t)(p - buf), socks, n);
}

static void staged_call_survives(int sig)
{
        struct store_test t;
        int cl[3], sv[3], fd;
        uint32_t port, id, status, n;
        uint64_t key;
        bool seen[3] = { false };

        store_start(&t);
        for (int i = 0; i < 3; i++)
                tcp_pair(&cl[i], &sv[i]);
        fd = raw_hello(t.d.path);
        port = raw_port_create(fd, 2, NULL);
        send_part(fd, 10, port, sv, 2, 50, true);
        status_works(fd, 11); /* the first part was handled */

        store_restart(&t, sig);

        send_part(fd, 10, port, &sv[2], 1, 52, false);
        {
                static uint8_t buf[1 << 12];
                const struct sn_msg_desc *d;
                struct snw_header h;
                ssize_t len = raw_recv(fd, buf, sizeof(buf));

                ck_assert_int_gt(len, 0);
                ck_assert_int_eq(sn_msg_check(buf, (size_t)len, &h, &d), 0);
                if (sig == SIGKILL && h.type == SN_MSG_ERROR && h.id == 11) {
                        /* The crash came before the daemon marked the STATUS answered, whose
                         * reply had left: the next one answers it again, EIO (PROTOCOL.md). */
                        ck_assert_uint_eq(h.status, EIO);
                        len = raw_recv(fd, buf, sizeof(buf));
                        ck_assert_int_gt(len, 0);
                        ck_assert_int_eq(sn_msg_check(buf, (size_t)len, &h, &d), 0);
                }
                ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
                ck_assert_uint_eq(h.id, 10);
                ck_assert_uint_eq(h.status, 0);
                ck_assert_uint_eq(h.count, 3); /* one result per item of every part */
                for (uint32_t i = 0; i < 3; i++)
                        ck_assert_uint_eq(sn_get_u32(sn_msg_array(buf, d, 1) + i * 4), 0);
        }
        /* All three registrations report. */
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(send(cl[i], "x", 1, 0), 1);
        for (uint32_t call = 20; !(seen[0] && seen[1] && seen[2]); call++) {
                send_dequeue(fd, call, port);
                recv_reply(fd, &id, &status, &n, &key);
                ck_assert_uint_eq(id, call);
                ck_assert_uint_eq(status, 0);
                if (!n) {
                        ck_assert_msg(call < 2000, "not all three reported");
                        continue;
                }
                ck_assert(key >= 50 && key < 53);
                seen[key - 50] = true;
        }
        close(fd);
        for (int i = 0; i < 3; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        store_stop(&t);
}

START_TEST(test_staged_call_survives_crash)
{
        staged_call_survives(SIGKILL);
}
END_TEST

START_TEST(test_staged_call_survives_stop)
{
        staged_call_survives(SIGTERM);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("state");
        TCase *tc = tcase_create("one state");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_reexec_after_crash_restore);
        tcase_add_test(tc, test_crash_keeps_unread_replies);
        tcase_add_test(tc, test_staged_call_survives_crash);
        tcase_add_test(tc, test_staged_call_survives_stop);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-fdstore.c - a restart through the service manager's descriptor store, without root and
 * without systemd: this test plays the service manager.  It gives the daemon a NOTIFY_SOCKET of
 * its own and FDSTORE, keeps what the daemon stores on SIGTERM (FDSTORE=1 with FDNAME=, and it
 * answers BARRIER=1 as systemd does), and starts the next daemon with those descriptors in
 * LISTEN_FDS/LISTEN_FDNAMES.  The live test under a real systemd is tests/systemd/test-units.sh;
 * this one also runs under valgrind and the sanitizers.
 *
 * Checked: clients keep their connection, ports and registrations with no error; a queued
 * notification, posted packets and a dequeue parked across the restart all arrive exactly once;
 * 300 registrations spread over two boxes (253 descriptors each at most) all report;
 * the new daemon holds as many descriptors as the old one and empties the store.  Entries left
 * without a state are discarded and removed, and the daemon serves afresh.  A connection kept
 * keeps the max-message and max-fds it was told, whatever the next daemon's options.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "daemon/state/journal.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/manager.h"
#include "tests/helpers/raw.h"
#include "tests/helpers/status.h"

/* ---- the clients' side --------------------------------------------------------------------- */

struct waiter {
        sn_port_t *port;
        sn_entry_t e;
        int n;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;

        w->n = sn_port_dequeue(w->port, &w->e, 1, 30000);
        return NULL;
}

static void expect_entry(sn_port_t *p, uint64_t key, uint32_t events)
{
        sn_entry_t e;

        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
        ck_assert_uint_eq(e.key, key);
        ck_assert_uint_eq(e.events, events);
}

enum { NMANY = 300 };

START_TEST(test_restart_keeps_everything)
{
        static int mcl[NMANY], msv[NMANY];
        static sn_registration_t many[NMANY];
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c, *wc;
        sn_port_t *p, *wp;
        int cl, sv, wcl, wsv, fds_before, st = 0;
        struct waiter w;
        pthread_t th;
        char names[MAXSTORED * 16], b;
        bool seen[NMANY] = { false };

        setenv("FDSTORE", "64", 1);
        char mdir[] = "/tmp/sn-manager-XXXXXX";

        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, NULL);

        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "kept", 0, &p), 0);
        tcp_pair(&cl, &sv);
        sn_registration_t r = { .fd = sv, .key = 7, .op = SN_OP_ENABLE,
                                .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        for (int i = 0; i < NMANY; i++) {
                int pr[2];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pr), 0);
                mcl[i] = pr[0];
                msv[i] = pr[1];
                many[i] = (sn_registration_t){ .fd = msv[i], .key = 1000 + (uint64_t)i,
                                               .op = SN_OP_ENABLE,
                                               .filter = SN_REGISTER_EVENT_IN,
                                               .trigger = SN_TRIGGER_EDGE };
        }
        ck_assert_int_eq(sn_port_process(p, many, NMANY, NULL, 0, 0), 0);
        for (int i = 0; i < NMANY; i++)
                ck_assert_int_eq(many[i].result, 0);
        /* Queued at the stop: an IN, then two posted packets. */
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(sn_port_post(p, 1, 10, 0xaa), 0);
        ck_assert_int_eq(sn_port_post(p, 2, 20, 0xbb), 0);
        /* Another client waits, parked in the daemon, across the restart. */
        ck_assert_int_eq(sn_conn_open(d.path, &wc), 0);
        ck_assert_int_eq(sn_port_create(wc, 0, &wp), 0);
        tcp_pair(&wcl, &wsv);
        sn_registration_t wr = { .fd = wsv, .key = 77, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(wp, &wr, 1, NULL, 0, 0), 0);
        w = (struct waiter){ .port = wp };
        ck_assert_int_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
        usleep(100 * 1000);
        fds_before = test_daemon_fds(&d);
        long long since = test_status_number(c, "serving_since");

        ck_assert_int_gt(since, 0);
        ck_assert_int_eq(test_status_number(c, "restores"), 0);

        /* The stop: everything goes to the store, the daemon exits 0 without closing. */
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        pthread_mutex_lock(&m.lock);
        /* What the store held all along, the state of every moment: the journal and the
         * boxes (300+ descriptors, 253 per box), nothing written at the stop.  And the last
         * good settings (lastgood.c), "snlive.settings". */
        ck_assert_uint_eq(manager_count_locked(&m, "snstate") + manager_count_locked(&m, "snmap") +
                                  manager_count_locked(&m, "snbox."), 0);
        ck_assert_uint_eq(manager_count_locked(&m, "snjournal."), 1);
        ck_assert_uint_ge(manager_count_locked(&m, "snlive."), 3);
        ck_assert_uint_eq(manager_count_locked(&m, "snlive.settings"), 1);
        ck_assert_uint_eq(m.n, manager_count_locked(&m, "snjournal.") +
                                       manager_count_locked(&m, "snlive."));
        ck_assert_uint_eq(m.bad, 0);
        manager_names_locked(&m, names, sizeof(names));
        pthread_mutex_unlock(&m.lock);
        /* Meanwhile the parked call is still waiting: nothing was answered. */
        ck_assert_int_eq(pthread_tryjoin_np(th, NULL), EBUSY);

        /* The next daemon, with the same store (it keeps its own journal and boxes). */
        manager_start_daemon(&m, &d, NULL);
        ck_assert_int_eq(test_daemon_wait_fds(&d, fds_before, 5000), fds_before);
        /* A restore, counted apart from re-executions; the clients' service goes on since the
         * first start (issue 41 item 4). */
        ck_assert_int_eq(test_status_number(c, "restores"), 1);
        ck_assert_int_eq(test_status_number(c, "reexecs"), 0);
        ck_assert_int_eq(test_status_number(c, "serving_since"), since);

        /* Exactly what was owed, once: the posted packets in their order, and the IN. */
        {
                uint64_t next_posted = 1;
                int in = 0;

                for (int i = 0; i < 3; i++) {
                        sn_entry_t e;

                        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
                        if (e.key == 7) {
                                ck_assert_uint_eq(e.events, SN_EVENT_IN);
                                in++;
                        } else {
                                ck_assert_uint_eq(e.key, next_posted);
                                ck_assert_uint_eq(e.events, next_posted * 10);
                                ck_assert_uint_eq(e.overlapped, next_posted == 1 ? 0xaa : 0xbb);
                                next_posted++;
                        }
                }
                ck_assert_int_eq(in, 1);
                ck_assert_uint_eq(next_posted, 3);
                ck_assert_int_eq(recv(sv, &b, 1, 0), 1); /* level-triggered: drained now */
        }
        /* The parked call gets what arrives after the restart. */
        ck_assert_int_eq(send(wcl, "w", 1, 0), 1);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_int_eq(w.n, 1);
        ck_assert_uint_eq(w.e.key, 77);
        /* All 300 registrations report, each once. */
        for (int i = 0; i < NMANY; i++)
                ck_assert_int_eq(send(mcl[i], "m", 1, 0), 1);
        for (int got = 0; got < NMANY;) {
                sn_entry_t e[64];
                int n = sn_port_dequeue(p, e, 64, 5000);

                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++) {
                        ck_assert(e[i].key >= 1000 && e[i].key < 1000 + NMANY);
                        ck_assert(!seen[e[i].key - 1000]);
                        seen[e[i].key - 1000] = true;
                        got++;
                }
        }
        /* The store holds only the new daemon's journal and boxes now. */
        for (int i = 0; i < 100; i++) {
                pthread_mutex_lock(&m.lock);
                bool done = !manager_count_locked(&m, "snbox.") && !manager_count_locked(&m, "snstate") &&
                            !manager_count_locked(&m, "snmap") && manager_count_locked(&m, "snjournal.") == 1;
                pthread_mutex_unlock(&m.lock);
                if (done)
                        break;
                usleep(20000);
        }
        pthread_mutex_lock(&m.lock);
        ck_assert_uint_eq(manager_count_locked(&m, "snbox.") + manager_count_locked(&m, "snstate") +
                                  manager_count_locked(&m, "snmap"), 0);
        ck_assert_uint_eq(manager_count_locked(&m, "snjournal."), 1);
        pthread_mutex_unlock(&m.lock);

        sn_port_close(wp);
        sn_port_close(p);
        sn_conn_close(wc);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        close(cl);
        close(sv);
        close(wcl);
        close(wsv);
        for (int i = 0; i < NMANY; i++) {
                close(mcl[i]);
                close(msv[i]);
        }
        unsetenv("FDSTORE");
}
END_TEST

/* An orderly stop harvests what holds into the queue, and the next daemon trims only that from
 * its first reports: an EDGE condition that begins while no daemon runs is a new edge and is
 * reported once; one delivered before the stop, or queued at it, is not reported again.  (The
 * next daemon used to trim whatever held when it started: the edge that began in between was
 * lost.) */
START_TEST(test_edge_in_the_gap)
{
        enum { GAP, DELIVERED, QUEUED, QUIET, NE };
        struct test_daemon d;
        struct manager m;
        sn_registration_t r[NE];
        int cl[NE], sv[NE], seen[NE] = { 0 }, st = 0;
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_t e[8];

        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "gap", 0, &p), 0);
        for (int i = 0; i < NE; i++) {
                tcp_pair(&cl[i], &sv[i]);
                r[i] = (sn_registration_t){ .fd = sv[i], .key = 100 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_EDGE };
        }
        ck_assert_int_eq(sn_port_process(p, r, NE, NULL, 0, 0), 0);
        for (int i = 0; i < NE; i++)
                ck_assert_int_eq(r[i].result, 0);
        /* Delivered before the stop, its data left unread: the condition still holds. */
        ck_assert_int_eq(send(cl[DELIVERED], "d", 1, 0), 1);
        expect_entry(p, 100 + DELIVERED, SN_EVENT_IN);
        /* Owed at the stop (queued then, or harvested by the stop itself). */
        ck_assert_int_eq(send(cl[QUEUED], "q", 1, 0), 1);

        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* No daemon runs: a new edge. */
        ck_assert_int_eq(send(cl[GAP], "g", 1, 0), 1);
        manager_start_daemon(&m, &d, NULL);

        while (!seen[GAP] || !seen[QUEUED]) {
                int n = sn_port_dequeue(p, e, 8, (uint32_t)test_timeout_ms(5000));

                ck_assert_msg(n > 0, "GAP %d, QUEUED %d reported; dequeue: %d", seen[GAP],
                              seen[QUEUED], n);
                for (int i = 0; i < n; i++) {
                        ck_assert(e[i].key >= 100 && e[i].key < 100 + NE);
                        ck_assert_uint_eq(e[i].events, SN_EVENT_IN);
                        seen[e[i].key - 100]++;
                }
        }
        /* Nothing more: the delivered edge and the quiet socket stay silent, the others are not
         * repeated.  (Their reports would be queued by the restore itself, so they would be
         * there already; the wait only gives a wrong one time to show.) */
        ck_assert_int_eq(sn_port_dequeue(p, e, 8, 200), -ETIMEDOUT);
        ck_assert_int_eq(seen[GAP], 1);
        ck_assert_int_eq(seen[QUEUED], 1);
        ck_assert_int_eq(seen[DELIVERED], 0);
        ck_assert_int_eq(seen[QUIET], 0);
        /* And each reports its next edge (after being drained). */
        for (int i = 0; i < NE; i++) {
                char b[4];

                while (recv(sv[i], b, sizeof(b), MSG_DONTWAIT) > 0)
                        ;
        }
        ck_assert_int_eq(send(cl[QUIET], "z", 1, 0), 1);
        expect_entry(p, 100 + QUIET, SN_EVENT_IN);

        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        for (int i = 0; i < NE; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        unsetenv("FDSTORE");
}
END_TEST

/* Waits until the store holds exactly what the daemon's live store should (no rebuild under
 * way): one journal, and boxes. */
static void settle(struct manager *m)
{
        usleep(200 * 1000);
        pthread_mutex_lock(&m->lock);
        ck_assert_uint_eq(manager_count_locked(m, "snjournal."), 1);
        pthread_mutex_unlock(&m->lock);
}

START_TEST(test_crash_loses_nothing)
{
        enum { LEVEL, ONESHOT, EDGE, DISABLED, REMOVED, NSOCK };
        static const uint8_t triggers[NSOCK] = {
                SN_TRIGGER_LEVEL, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, SN_TRIGGER_EDGE,
                SN_TRIGGER_LEVEL, SN_TRIGGER_LEVEL,
        };
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c, *wc;
        sn_port_t *p, *wp;
        int cl[NSOCK], sv[NSOCK], wcl, wsv, st = 0, fds_before;
        sn_registration_t r[NSOCK];
        struct waiter w;
        pthread_t th;
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        bool seen[NSOCK] = { false };
        int posted = 0, removed = 0, again = 0;

        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "crash", 0, &p), 0);
        for (int i = 0; i < NSOCK; i++) {
                tcp_pair(&cl[i], &sv[i]);
                r[i] = (sn_registration_t){ .fd = sv[i], .key = 100 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = triggers[i] };
        }
        ck_assert_int_eq(sn_port_process(p, r, NSOCK, NULL, 0, 0), 0);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_int_eq(r[i].result, 0);
        /* Before the crash: the one-shot fires and is taken (its data stays unread). */
        ck_assert_int_eq(send(cl[ONESHOT], "o", 1, 0), 1);
        expect_entry(p, 100 + ONESHOT, SN_EVENT_IN);
        r[DISABLED].op = SN_OP_DISABLE;
        r[REMOVED].op = SN_OP_REMOVE;
        ck_assert_int_eq(sn_port_process(p, &r[DISABLED], 2, NULL, 0, 0), 0);
        ck_assert_int_eq(send(cl[DISABLED], "d", 1, 0), 1);
        /* Owed at the crash: data on LEVEL and EDGE, the REMOVE, two posted packets. */
        ck_assert_int_eq(send(cl[LEVEL], "l", 1, 0), 1);
        ck_assert_int_eq(send(cl[EDGE], "e", 1, 0), 1);
        ck_assert_int_eq(sn_port_post(p, 1, 10, 0xaa), 0);
        ck_assert_int_eq(sn_port_post(p, 2, 20, 0xbb), 0);
        /* Another client is parked across the crash. */
        ck_assert_int_eq(sn_conn_open(d.path, &wc), 0);
        ck_assert_int_eq(sn_port_create(wc, 0, &wp), 0);
        tcp_pair(&wcl, &wsv);
        sn_registration_t wr = { .fd = wsv, .key = 77, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(wp, &wr, 1, NULL, 0, 0), 0);
        w = (struct waiter){ .port = wp };
        ck_assert_int_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
        usleep(100 * 1000);
        settle(&m);
        fds_before = test_daemon_fds(&d);

        /* The crash: nothing is handed over. */
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
        ck_assert(WIFSIGNALED(st));
        usleep(100 * 1000);
        ck_assert_int_eq(pthread_tryjoin_np(th, NULL), EBUSY); /* still waiting, no error */
        ck_assert_uint_eq(manager_count(&m, "snstate"), 0);
        manager_start_daemon(&m, &d, NULL);
        ck_assert_int_eq(test_daemon_wait_fds(&d, fds_before, 5000), fds_before);

        /* Owed: LEVEL's IN, EDGE's IN (its data is unread), the REMOVE, the posted packets in
         * order; nothing else: the one-shot that fired stays disarmed (its data is unread). */
        for (;;) {
                sn_entry_t e;
                int n = sn_port_dequeue(p, &e, 1, 300);

                if (n == -ETIMEDOUT)
                        break;
                ck_assert_int_eq(n, 1);
                if (e.key == 1 || e.key == 2) {
                        ck_assert_uint_eq(e.key, (uint64_t)posted + 1);
                        ck_assert_uint_eq(e.events, e.key * 10);
                        posted++;
                        continue;
                }
                ck_assert(e.key >= 100 && e.key < 100 + NSOCK);
                if (e.key == 100 + REMOVED) {
                        ck_assert_uint_eq(e.events & SN_EVENT_REMOVE, SN_EVENT_REMOVE);
                        removed++;
                        continue;
                }
                ck_assert_msg(e.key != 100 + DISABLED, "a disabled registration reported");
                ck_assert_uint_eq(e.events, SN_EVENT_IN);
                if (seen[e.key - 100])
                        ck_assert_uint_eq(e.key, 100 + LEVEL); /* level: while it holds */
                if (e.key == 100 + ONESHOT)
                        again++;
                seen[e.key - 100] = true;
                if (e.key == 100 + LEVEL) {
                        char b;

                        ck_assert_int_eq(recv(sv[LEVEL], &b, 1, 0), 1);
                }
        }
        ck_assert_int_eq(posted, 2);
        ck_assert_int_eq(removed, 1);
        ck_assert(seen[LEVEL] && seen[EDGE]);
        ck_assert_int_eq(again, 0);
        /* The parked call is answered by what arrives now, on its unchanged connection. */
        ck_assert_int_eq(send(wcl, "w", 1, 0), 1);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_int_eq(w.n, 1);
        ck_assert_uint_eq(w.e.key, 77);
        /* The one-shot is re-armed as usual and works. */
        r[ONESHOT].op = SN_OP_ENABLE;
        ck_assert_int_eq(sn_port_process(p, &r[ONESHOT], 1, NULL, 0, 0), 0);
        expect_entry(p, 100 + ONESHOT, SN_EVENT_IN);
        /* New registrations after the restore are kept too: one journal of the new daemon. */
        pthread_mutex_lock(&m.lock);
        ck_assert_uint_eq(manager_count_locked(&m, "snjournal."), 1);
        pthread_mutex_unlock(&m.lock);
        unsetenv("FDSTORE");
        sn_port_close(wp);
        sn_port_close(p);
        sn_conn_close(wc);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        for (int i = 0; i < NSOCK; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        close(wcl);
        close(wsv);
        printf("crash: %d posted, %d remove, one-shot reported again %d time(s)\n", posted,
               removed, again);
}
END_TEST

/* Rule L1 with a live store: the store's copy of a dropped socket is closed too, so the peer
 * sees the close at once (the box holding it is rebuilt without it). */
START_TEST(test_dropped_socket_closes_with_store)
{
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        int cl[3], sv[3];
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        long long t0;

        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (int i = 0; i < 3; i++) {
                sn_registration_t r = { .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                        .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL };

                tcp_pair(&cl[i], &sv[i]);
                r.fd = sv[i];
                ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(r.result, 0);
        }
        settle(&m);
        /* The middle one is closed through the library (the daemon's copy dropped, then ours). */
        t0 = now_ms();
        ck_assert_int_eq(sn_socket_close(c, sv[1]), 0);
        ck_assert_msg(peer_closed(cl[1], 2000), "the peer did not see the close: a copy stays");
        printf("dropped socket: peer saw the close after %lld ms\n", now_ms() - t0);
        /* The others stay open and registered. */
        ck_assert(!peer_closed(cl[0], 50) && !peer_closed(cl[2], 50));
        ck_assert_int_eq(send(cl[2], "x", 1, 0), 1);
        expect_entry(p, 2, SN_EVENT_IN);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        unsetenv("FDSTORE");
        for (int i = 0; i < 3; i++) {
                close(cl[i]);
                if (i != 1)
                        close(sv[i]);
        }
}
END_TEST

START_TEST(test_leftovers_without_state_are_discarded)
{
        struct test_daemon d;
        struct manager m;
        int sp[2], box[2];
        sn_conn_t *c;
        sn_port_t *p;

        snprintf(d.dir, sizeof(d.dir), "/tmp/sn-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d.dir));
        snprintf(d.path, sizeof(d.path), "%s/socknotify.sock", d.dir);
        manager_start(&m, d.dir, 64);
        /* A box with a socket in it, as a stop that was killed before its state went out. */
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, box), 0);
        {
                char byte = 0, cbuf[CMSG_SPACE(sizeof(int))];
                struct iovec iov = { &byte, 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &sp[1], sizeof(int));
                ck_assert_int_eq(sendmsg(box[0], &mh, 0), 1);
        }
        close(box[0]);
        close(sp[1]);
        test_daemon_start_with_fds(&d, NULL, &box[1], 1, "snbox.0");
        close(box[1]);
        /* The daemon closed the box: the socket in it is closed too (the peer sees EOF). */
        ck_assert(peer_closed(sp[0], 5000));
        for (int i = 0; i < 100 && !m.removed; i++)
                usleep(20000);
        ck_assert_uint_ge(m.removed, 1);
        /* And it serves afresh. */
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(sn_port_post(p, 5, 1, 0), 0);
        expect_entry(p, 5, 1);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        close(sp[0]);
}
END_TEST

/* A named port that lingers with six registrations whose creator is gone (keys 100 to 105, the
 * other end of each socket in pairs[i][1]), opened by raw (version 2): its id, once a PORT_TAKE
 * of none sees the six. */
static uint32_t orphan_port(const char *path, int raw, int pairs[6][2])
{
        int fds[SN_PROTO_MAX_FDS];
        uint64_t keys[SN_PROTO_MAX_FDS];
        uint32_t port, remaining = 0;
        long long t0 = now_ms();
        sn_registration_t r[6];
        sn_conn_t *a;
        sn_port_t *pa;

        ck_assert_int_eq(sn_conn_open(path, &a), 0);
        ck_assert_int_eq(sn_port_create_named(a, "orphans", 0, &pa), 0);
        ck_assert_int_eq(sn_port_set_linger(pa, 60000), 0);
        for (int i = 0; i < 6; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]), 0);
                r[i] = (sn_registration_t){ .fd = pairs[i][0], .key = 100 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        }
        ck_assert_int_eq(sn_port_process(pa, r, 6, NULL, 0, 0), 0);
        port = raw_port_open(raw, 2, "orphans");
        ck_assert_int_eq(sn_port_close(pa), 0);
        sn_conn_close(a);
        while (raw_port_take(raw, 3, port, 0, fds, keys, &remaining), remaining != 6) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "no orphans within 5 s");
                usleep(2000);
        }
        return port;
}

/* A PORT_TAKE of up to six of orphan_port()'s registrations by raw, told max_fds 2: at most
 * two come, each the socket it names and not taken before (seen, by key). */
static void take_checked(int raw, uint32_t id, uint32_t port, int pairs[6][2], uint32_t *seen,
                         uint32_t *ret_remaining)
{
        int fds[SN_PROTO_MAX_FDS];
        uint64_t keys[SN_PROTO_MAX_FDS];
        uint32_t n = raw_port_take(raw, id, port, 6, fds, keys, ret_remaining);

        ck_assert_msg(n <= 2, "a PORT_TAKE_REPLY carried %u descriptors to a connection told "
                              "max_fds 2", n);
        ck_assert_uint_gt(n, 0);
        for (uint32_t i = 0; i < n; i++) {
                char b = 0;

                ck_assert(keys[i] >= 100 && keys[i] < 106);
                ck_assert(!(*seen & 1u << (keys[i] - 100)));
                *seen |= 1u << (keys[i] - 100);
                ck_assert_int_eq(send(fds[i], "k", 1, MSG_NOSIGNAL), 1);
                ck_assert_int_eq(recv(pairs[keys[i] - 100][1], &b, 1, 0), 1);
                close(fds[i]);
        }
}

/* An orderly stop (SIGTERM, exit status 0): the daemon leaves its state in the store. */
static void orderly_stop(struct test_daemon *d)
{
        int st = 0;

        ck_assert_int_eq(kill(d->pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d->pid, &st, 0), d->pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* An orderly stop, and the next daemon started with args and the store. */
static void restart(struct manager *m, struct test_daemon *d, const char *const *args)
{
        orderly_stop(d);
        manager_start_daemon(m, d, args);
}

/* Posts keys 1 to n on p, restarts with args when asked, then one dequeue of n gets them all,
 * in their order. */
static void post_and_dequeue(sn_port_t *p, uint32_t n, bool restart_between, struct manager *m,
                             struct test_daemon *d, const char *const *args)
{
        sn_entry_t *e = calloc(n, sizeof(*e));
        int got;

        ck_assert_ptr_nonnull(e);
        for (uint32_t k = 1; k <= n; k++)
                ck_assert_int_eq(sn_port_post(p, k, k, 0), 0);
        if (restart_between)
                restart(m, d, args);
        got = sn_port_dequeue(p, e, n, (uint32_t)test_timeout_ms(5000));
        ck_assert_msg(got == (int)n, "one dequeue of %u queued entries returned %d", n, got);
        for (uint32_t i = 0; i < n; i++)
                ck_assert_uint_eq(e[i].key, i + 1);
        free(e);
}

/* An orderly stop and a start with the store, as in a re-exec (test-reexec.c): each connection
 * kept keeps the max_message and max_fds its handshake announced, whatever the next daemon's
 * options; only new connections are told the new ones.  First 2 and 4096 to the defaults (253,
 * 131072): a PORT_TAKE asking for six gets two, and one dequeue of 400 entries gets them all.
 * Then, for a connection made with the defaults, to 1 and 4096: its PROCESS with six sockets in
 * one message and its dequeue of 400 entries (a reply counted as full by 131072 bytes) succeed;
 * the first connections, kept through both restarts, still get at most two descriptors per
 * reply (the other four) and all 400 entries of one dequeue. */
START_TEST(test_restart_keeps_handshake_limits)
{
        static const char *const small[] = { "--max-fds=2", "--max-message=4096", NULL };
        static const char *const smaller[] = { "--max-fds=1", "--max-message=4096", NULL };
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        struct test_daemon d;
        struct manager m;
        int raw, orph[6][2], sp[6][2];
        uint32_t rport, remaining = 6, id = 10, seen = 0, took = 0;
        sn_registration_t r[6];
        sn_entry_t e[6];
        sn_conn_t *c, *c2, *fresh;
        sn_port_t *p, *p2;
        sn_limits_t l;

        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, small);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        ck_assert_uint_eq(l.max_fds, 2);
        ck_assert_uint_eq(l.max_message, 4096);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        raw = raw_hello2(d.path);
        rport = orphan_port(d.path, raw, orph);
        /* Larger: the defaults. */
        post_and_dequeue(p, 400, true, &m, &d, NULL);
        /* Two of the six, as raw was told; the others after the second restart. */
        take_checked(raw, id++, rport, orph, &took, &remaining);
        ck_assert_uint_eq(remaining, 4);
        ck_assert_int_eq(sn_conn_open(d.path, &c2), 0);
        ck_assert_int_eq(sn_conn_limits(c2, &l), 0);
        ck_assert_uint_eq(l.max_fds, 253);
        ck_assert_uint_eq(l.max_message, 131072);
        ck_assert_int_eq(sn_port_create(c2, 0, &p2), 0);

        /* Smaller, for c2: 1 and 4096. */
        post_and_dequeue(p2, 400, true, &m, &d, smaller);
        for (int i = 0; i < 6; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
                r[i] = (sn_registration_t){ .fd = sp[i][0], .key = 300 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        }
        ck_assert_int_eq(sn_port_process(p2, r, 6, NULL, 0, 0), 0);
        for (int i = 0; i < 6; i++) {
                ck_assert_int_eq(r[i].result, 0);
                ck_assert_int_eq(send(sp[i][1], "x", 1, 0), 1);
        }
        for (seen = 0; seen != 0x3f;) {
                int n = sn_port_dequeue(p2, e, 6, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++) {
                        ck_assert(e[i].key >= 300 && e[i].key < 306);
                        seen |= 1u << (e[i].key - 300);
                }
        }
        /* c and raw, kept through both restarts, still get what they were told first (their
         * own records; the journal's header says 253 and 131072, what the second daemon ran
         * with). */
        post_and_dequeue(p, 400, false, NULL, NULL, NULL);
        while (remaining)
                take_checked(raw, id++, rport, orph, &took, &remaining);
        ck_assert_uint_eq(took, 0x3f);
        ck_assert_int_eq(sn_conn_open(d.path, &fresh), 0);
        ck_assert_int_eq(sn_conn_limits(fresh, &l), 0);
        ck_assert_uint_eq(l.max_fds, 1);
        ck_assert_uint_eq(l.max_message, 4096);

        sn_conn_close(fresh);
        for (int i = 0; i < 6; i++)
                ck_assert_int_eq(sn_socket_close(c2, sp[i][0]), 0);
        sn_port_close(p2);
        sn_conn_close(c2);
        sn_port_close(p);
        sn_conn_close(c);
        close(raw);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        for (int i = 0; i < 6; i++) {
                close(orph[i][0]);
                close(orph[i][1]);
                close(sp[i][1]);
        }
        unsetenv("FDSTORE");
}
END_TEST

/* Makes the stored journal look as a daemon before the limits were journaled left it: no
 * connection record holds them, nor, unless keep_header, the header. */
static void forget_journaled_limits(struct manager *m, bool keep_header)
{
        unsigned found = 0;

        manager_sync(m); /* the stopped daemon's last FDSTORE= messages are handled */
        pthread_mutex_lock(&m->lock);
        for (unsigned i = 0; i < m->n; i++) {
                struct jr_header *h;
                struct stat st;
                uint8_t *map;

                if (strncmp(m->names[i], "snjournal.", 10))
                        continue;
                ck_assert_int_eq(fstat(m->fds[i], &st), 0);
                map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                           m->fds[i], 0);
                ck_assert_ptr_ne(map, MAP_FAILED);
                h = (struct jr_header *)map;
                for (uint32_t k = 1; k < h->capacity && (k + 1) * JR_RECORD <= st.st_size; k++) {
                        struct jr_record *r = (struct jr_record *)(map + k * JR_RECORD);

                        if (r->type == JR_CONN)
                                memset(r->data + JR_CONN_LIMITS, 0, 8);
                }
                if (!keep_header) {
                        /* As a daemon before version 3 wrote it. */
                        h->max_message = h->max_fds = 0;
                        h->version = 2;
                }
                munmap(map, (size_t)st.st_size);
                found++;
        }
        pthread_mutex_unlock(&m->lock);
        ck_assert_uint_eq(found, 1);
}

/* Restarts d under m from a journal whose connection limits are forgotten (keep_header: not
 * those of its header), then asks for six sockets of rport on raw: want come, left remain. */
static void restart_and_take(struct manager *m, struct test_daemon *d, bool keep_header, int raw,
                             uint32_t id, uint32_t rport, uint32_t want, uint32_t left)
{
        int fds[SN_PROTO_MAX_FDS];
        uint64_t keys[SN_PROTO_MAX_FDS];
        uint32_t remaining, n;

        orderly_stop(d);
        forget_journaled_limits(m, keep_header);
        manager_start_daemon(m, d, NULL);
        n = raw_port_take(raw, id, rport, 6, fds, keys, &remaining);
        ck_assert_uint_eq(n, want);
        ck_assert_uint_eq(remaining, left);
        for (uint32_t i = 0; i < n; i++)
                close(fds[i]);
}

/* A journal without the connections' limits (left by an older daemon): a connection gets the
 * limits its header says the old daemon ran with, and without those too the new daemon's, as
 * before they were journaled.  --max-fds=2, then the default: a PORT_TAKE asking for six gets
 * two; after a journal with neither, the remaining four at once. */
START_TEST(test_restart_old_journal_limits)
{
        static const char *const small[] = { "--max-fds=2", NULL };
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        struct test_daemon d;
        struct manager m;
        int raw, orph[6][2];
        uint32_t rport;

        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, small);
        raw = raw_hello2(d.path);
        rport = orphan_port(d.path, raw, orph);

        restart_and_take(&m, &d, true, raw, 10, rport, 2, 4);
        restart_and_take(&m, &d, false, raw, 11, rport, 4, 0);

        close(raw);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        for (int i = 0; i < 6; i++) {
                close(orph[i][0]);
                close(orph[i][1]);
        }
        unsetenv("FDSTORE");
}
END_TEST

/* A dequeue of up to 600 entries, in a thread of its own. */
struct bigwait {
        sn_port_t *port;
        sn_entry_t e[600];
        int n;
};

static void *bigwait_thread(void *arg)
{
        struct bigwait *w = arg;

        w->n = sn_port_dequeue(w->port, w->e, 600, (uint32_t)test_timeout_ms(30000));
        return NULL;
}

/* A wait for 600 entries parked across a restart whose journal kept no connection limits,
 * into --max-message=4096: 500 sockets that became readable while no daemon ran are harvested
 * at once, and the new image answers the wait with no more entries than one 4096-byte message
 * holds.  It takes them into a buffer of that size: before, all 500 were (12,000 bytes). */
START_TEST(test_restored_wait_fits_smaller_messages)
{
        enum { NSOCK = 500 };
        static const char *const small[] = { "--max-message=4096", NULL };
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        uint32_t most = (uint32_t)((4096 - sn_msg_size(SN_MSG_PROCESS_REPLY, 0, 0)) /
                                   SN_WIRE_SIZE_entry);
        static sn_registration_t r[NSOCK];
        static int pairs[NSOCK][2];
        static struct bigwait w;
        long long end = now_ms() + test_timeout_ms(10000);
        struct test_daemon d;
        struct manager m;
        uint32_t got = 0;
        sn_conn_t *c;
        pthread_t th;

        setenv("FDSTORE", "64", 1);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        w = (struct bigwait){ 0 };
        ck_assert_int_eq(sn_port_create(c, 0, &w.port), 0);
        for (int i = 0; i < NSOCK; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]), 0);
                r[i] = (sn_registration_t){ .fd = pairs[i][0], .key = (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        }
        ck_assert_int_eq(sn_port_process(w.port, r, NSOCK, NULL, 0, 0), 0);
        ck_assert_int_eq(pthread_create(&th, NULL, bigwait_thread, &w), 0);
        while (test_status_number(c, "waiters") < 1) {
                ck_assert_msg(now_ms() < end, "the wait never parked");
                poll(NULL, 0, 5);
        }

        orderly_stop(&d);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_int_eq(send(pairs[i][1], "x", 1, MSG_NOSIGNAL), 1);
        forget_journaled_limits(&m, false);
        manager_start_daemon(&m, &d, small);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_msg(w.n > 0 && (uint32_t)w.n <= most,
                      "a restored wait answered %d entries; one 4096-byte reply holds %u", w.n,
                      most);
        /* The rest are still owed, level-triggered, in later dequeues of the same size. */
        got = (uint32_t)w.n;
        while (got < NSOCK) {
                int n = sn_port_dequeue(w.port, w.e, 600, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                ck_assert_uint_le((uint32_t)n, most);
                got += (uint32_t)n;
        }

        sn_port_close(w.port);
        sn_conn_close(c);
        for (int i = 0; i < NSOCK; i++) {
                close(pairs[i][0]);
                close(pairs[i][1]);
        }
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        unsetenv("FDSTORE");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("fdstore");
        TCase *tc = tcase_create("restart");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_restart_keeps_everything);
        tcase_add_test(tc, test_edge_in_the_gap);
        tcase_add_test(tc, test_crash_loses_nothing);
        tcase_add_test(tc, test_dropped_socket_closes_with_store);
        tcase_add_test(tc, test_leftovers_without_state_are_discarded);
        tcase_add_test(tc, test_restart_keeps_handshake_limits);
        tcase_add_test(tc, test_restart_old_journal_limits);
        tcase_add_test(tc, test_restored_wait_fits_smaller_messages);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-fdstore-attack.c - the crash recovery of the live descriptor store (daemon/state/live.c)
 * against hostile clients and unlucky crashes.  Like test-fdstore.c this test plays the service
 * manager (NOTIFY_SOCKET, FDSTORE=1/FDSTOREREMOVE=1, LISTEN_FDS on the next start), but its
 * manager also behaves as systemd does when the store is full: an entry beyond FDSTORE= (the
 * unit's FileDescriptorStoreMax=) is refused and closed.  It counts what the daemon sends it.
 *
 * Checked: a client that registers and drops sockets cannot fill the store with nearly empty
 * boxes, so another client's session survives a crash; a journal grown past its first mapping
 * restores every registration; churn (register/drop, connections, ports closed with
 * registrations, connections dying with parked calls) leaks no descriptor in the daemon or the
 * store, before and after a crash; and details of a crash restore: a filter changed just before
 * it, EDGE with IN|OUT, a 255-byte name shared by two connections, a finite wait's remaining
 * time, a connection that dies while no daemon runs.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/manager.h"

static unsigned stored(struct manager *m)
{
        unsigned n;

        pthread_mutex_lock(&m->lock);
        n = m->n;
        pthread_mutex_unlock(&m->lock);
        return n;
}

/* Waits until the store stops changing (rebuilds are done): its entry count. */
static unsigned settle(struct manager *m)
{
        unsigned last = ~0u, n = 0;

        for (int stable = 0, i = 0; i < 200 && stable < 5; i++) {
                usleep(20 * 1000);
                pthread_mutex_lock(&m->lock);
                n = m->n + m->stores * 7919 + m->removed * 104729;
                pthread_mutex_unlock(&m->lock);
                stable = n == last ? stable + 1 : 0;
                last = n;
        }
        return stored(m);
}

/* kill -9, then the next daemon with what the store holds. */
static void crash_and_restart(struct test_daemon *d, struct manager *m)
{
        int st = 0;

        settle(m);
        ck_assert_int_eq(kill(d->pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d->pid, &st, 0), d->pid);
        ck_assert(WIFSIGNALED(st));
        settle(m);
        manager_start_daemon(m, d, NULL);
}

static void sock_pair(int *a, int *b)
{
        int p[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
        *a = p[0];
        *b = p[1];
}

static int enable(sn_port_t *p, int fd, uint64_t key, uint16_t filter, uint8_t trigger)
{
        sn_registration_t r = { .fd = fd, .key = key, .op = SN_OP_ENABLE, .filter = filter,
                                .trigger = trigger };
        int n = sn_port_process(p, &r, 1, NULL, 0, 0);

        return n < 0 ? n : r.result;
}

static char *mdir_new(char *buf)
{
        strcpy(buf, "/tmp/sn-attack-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(buf));
        return buf;
}

/* ---- a client fills the store with nearly empty boxes --------------------------------------- */

/*
 * A client registers 254 sockets at a time and drops all of them but the first, in rounds.
 * Each round leaves one box holding one socket: with no compaction the store's entries grow
 * with the number of rounds, not with the sockets held, until FileDescriptorStoreMax= refuses
 * the boxes of everybody else.  Another client's registration made after that is lost at the
 * next crash.
 */
enum { ROUND = 254, ROUNDS = 14, CAP = 12 };

START_TEST(test_fragmented_boxes_fill_the_store)
{
        static int keep_cl[ROUNDS], keep_sv[ROUNDS];
        struct test_daemon d;
        struct manager m;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pb;
        int bcl, bsv;
        char mdir[32];
        unsigned live_max = 0, refused;

        manager_start(&m, mdir_new(mdir), CAP);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &a), 0);
        ck_assert_int_eq(sn_port_create(a, 0, &pa), 0);
        for (int round = 0; round < ROUNDS; round++) {
                static int cl[ROUND], sv[ROUND];
                static sn_registration_t r[ROUND];

                for (int i = 0; i < ROUND; i++) {
                        sock_pair(&cl[i], &sv[i]);
                        r[i] = (sn_registration_t){ .fd = sv[i], .key = (uint64_t)i,
                                                    .op = SN_OP_ENABLE,
                                                    .filter = SN_REGISTER_EVENT_IN,
                                                    .trigger = SN_TRIGGER_LEVEL };
                }
                ck_assert_int_eq(sn_port_process(pa, r, ROUND, NULL, 0, 0), 0);
                for (int i = 0; i < ROUND; i++)
                        ck_assert_int_eq(r[i].result, 0);
                settle(&m);
                for (int i = 1; i < ROUND; i++) {
                        ck_assert_int_eq(sn_socket_close(a, sv[i]), 0);
                        close(cl[i]);
                }
                keep_cl[round] = cl[0];
                keep_sv[round] = sv[0];
                settle(&m);
                live_max = SN_MAX(live_max, manager_count(&m, "snlive."));
        }
        pthread_mutex_lock(&m.lock);
        refused = m.refused;
        pthread_mutex_unlock(&m.lock);
        printf("fragmentation: %d sockets held after %d rounds of %d: %u box(es) at most, "
               "%u now, %u store entries refused\n", ROUNDS, ROUNDS, ROUND, live_max,
               manager_count(&m, "snlive."), refused);

        /* Another client, after that: its session must survive a crash. */
        ck_assert_int_eq(sn_conn_open(d.path, &b), 0);
        ck_assert_int_eq(sn_port_create(b, 0, &pb), 0);
        sock_pair(&bcl, &bsv);
        ck_assert_int_eq(enable(pb, bsv, 42, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        crash_and_restart(&d, &m);
        ck_assert_int_eq(send(bcl, "b", 1, 0), 1);
        {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(pb, &e, 1, 5000), 1);
                ck_assert_uint_eq(e.key, 42);
        }
        /* 14 sockets and two connections fit in one box (a second one while rebuilding). */
        ck_assert_uint_le(live_max, 2);
        ck_assert_uint_eq(refused, 0);
        /* And the hostile client's survivors too. */
        for (int round = 0; round < ROUNDS; round++)
                ck_assert_int_eq(send(keep_cl[round], "a", 1, 0), 1);
        for (int got = 0; got < ROUNDS;) {
                sn_entry_t e[16];
                int n = sn_port_dequeue(pa, e, 16, 5000);

                ck_assert_int_gt(n, 0);
                got += n;
                for (int i = 0; i < n; i++)
                        ck_assert_uint_eq(e[i].key, 0);
        }
        sn_port_close(pa);
        sn_port_close(pb);
        sn_conn_close(a);
        sn_conn_close(b);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        close(bcl);
        close(bsv);
        for (int round = 0; round < ROUNDS; round++) {
                close(keep_cl[round]);
                close(keep_sv[round]);
        }
}
END_TEST

/* ---- the journal grows past its first 1024 records ----------------------------------------- */

enum { NGROW = 1500 };

START_TEST(test_journal_grows_then_crash)
{
        static int cl[NGROW], sv[NGROW];
        static sn_registration_t r[NGROW];
        static bool seen[NGROW];
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        char mdir[32];
        int fds_before, fds_after;

        manager_start(&m, mdir_new(mdir), 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (int i = 0; i < NGROW; i++) {
                sock_pair(&cl[i], &sv[i]);
                r[i] = (sn_registration_t){ .fd = sv[i], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                            .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = i % 2 ? SN_TRIGGER_EDGE
                                                             : SN_TRIGGER_LEVEL };
        }
        for (int i = 0; i < NGROW; i += 250) {
                ck_assert_int_eq(sn_port_process(p, r + i, SN_MIN(250, NGROW - i), NULL, 0, 0),
                                 0);
                /* A few posted packets between, so that records of every kind interleave. */
                ck_assert_int_eq(sn_port_post(p, 100000 + (uint64_t)i, 1, 0), 0);
        }
        for (int i = 0; i < NGROW; i++)
                ck_assert_int_eq(r[i].result, 0);
        fds_before = test_daemon_fds(&d);
        crash_and_restart(&d, &m);
        fds_after = test_daemon_wait_fds(&d, fds_before, 10000);
        printf("journal growth: %d registrations, daemon fds %d before the crash, %d after\n",
               NGROW, fds_before, fds_after);
        ck_assert_int_eq(fds_after, fds_before);
        /* The posted packets in their order. */
        for (int i = 0; i < NGROW; i += 250) {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
                ck_assert_uint_eq(e.key, 100000 + (uint64_t)i);
        }
        for (int i = 0; i < NGROW; i++)
                ck_assert_int_eq(send(cl[i], "g", 1, 0), 1);
        for (int got = 0; got < NGROW;) {
                sn_entry_t e[128];
                int n = sn_port_dequeue(p, e, 128, 5000);

                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++) {
                        ck_assert_uint_lt(e[i].key, NGROW);
                        if (seen[e[i].key]) /* level: until drained */
                                continue;
                        seen[e[i].key] = true;
                        got++;
                        if (e[i].key % 2 == 0) {
                                char b;

                                ck_assert_int_eq(recv(sv[e[i].key], &b, 1, 0), 1);
                        }
                }
        }
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        for (int i = 0; i < NGROW; i++) {
                close(cl[i]);
                close(sv[i]);
        }
}
END_TEST

/* ---- churn leaks nothing ------------------------------------------------------------------- */

struct waiter {
        sn_port_t *port;
        sn_entry_t e;
        int n;
        uint32_t timeout;
        long long ms;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;
        long long t0 = now_ms();

        w->n = sn_port_dequeue(w->port, &w->e, 1, w->timeout);
        w->ms = now_ms() - t0;
        return NULL;
}

/* Register/drop cycles, connections that come and go with ports, registrations and parked
 * calls, ports closed with registrations: the daemon's descriptors and the store's entries
 * come back to where they were, and so after a crash. */
static void churn(const char *path, int rounds)
{
        for (int k = 0; k < rounds; k++) {
                sn_conn_t *c;
                sn_port_t *p, *p2;
                int cl[8], sv[8];

                ck_assert_int_eq(sn_conn_open(path, &c), 0);
                ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
                ck_assert_int_eq(sn_port_create(c, 0, &p2), 0);
                for (int i = 0; i < 8; i++) {
                        sock_pair(&cl[i], &sv[i]);
                        ck_assert_int_eq(enable(i < 4 ? p : p2, sv[i], (uint64_t)i,
                                                SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT,
                                                i % 2 ? SN_TRIGGER_EDGE : SN_TRIGGER_LEVEL),
                                         0);
                }
                /* Dropped one by one, removed, port closed with its registrations. */
                ck_assert_int_eq(sn_socket_close(c, sv[0]), 0);
                {
                        sn_registration_t r = { .fd = sv[1], .op = SN_OP_REMOVE };

                        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
                        ck_assert_int_eq(r.result, 0);
                }
                ck_assert_int_eq(sn_port_close(p2), 0);
                sn_port_post(p, 1, 1, 0);
                sn_port_close(p);
                /* sv[5] was registered on p2, now closed: a child registers it again. */
                sn_conn_close(c);
                /* A connection that dies (its process killed) with a parked call. */
                {
                        int pipefd[2], st = 0;
                        char ok;
                        pid_t pid;

                        ck_assert_int_eq(pipe(pipefd), 0);
                        pid = fork();
                        ck_assert_int_ge(pid, 0);
                        if (pid == 0) {
                                sn_conn_t *cc;
                                sn_port_t *pp;
                                sn_entry_t e;

                                if (sn_conn_open(path, &cc) || sn_port_create(cc, 0, &pp) ||
                                    enable(pp, sv[5], 9, SN_REGISTER_EVENT_IN,
                                           SN_TRIGGER_LEVEL))
                                        _exit(1);
                                if (write(pipefd[1], "k", 1) != 1)
                                        _exit(1);
                                sn_port_dequeue(pp, &e, 1, 30000);
                                _exit(0);
                        }
                        close(pipefd[1]);
                        ck_assert_int_eq(read(pipefd[0], &ok, 1), 1);
                        close(pipefd[0]);
                        usleep(20 * 1000);
                        kill(pid, SIGKILL);
                        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
                }
                for (int i = 0; i < 8; i++) {
                        close(cl[i]);
                        if (i)
                                close(sv[i]);
                }
        }
}

START_TEST(test_churn_leaks_nothing)
{
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        char mdir[32];
        int cl, sv, fds0, fds1, fds2;
        unsigned st0, st1, st2, stores0, stores1;

        manager_start(&m, mdir_new(mdir), 64);
        test_daemon_start(&d, NULL);
        /* One session that stays, so the boxes are never empty. */
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sock_pair(&cl, &sv);
        ck_assert_int_eq(enable(p, sv, 5, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        st0 = settle(&m);
        fds0 = test_daemon_wait_fds(&d, -1, 0);
        pthread_mutex_lock(&m.lock);
        stores0 = m.stores;
        pthread_mutex_unlock(&m.lock);
        churn(d.path, 40);
        st1 = settle(&m);
        fds1 = test_daemon_wait_fds(&d, fds0, 3000);
        pthread_mutex_lock(&m.lock);
        stores1 = m.stores;
        pthread_mutex_unlock(&m.lock);
        printf("churn: daemon fds %d -> %d, store entries %u -> %u, %u store message(s) for "
               "40 rounds\n", fds0, fds1, st0, st1, stores1 - stores0);
        ck_assert_int_eq(fds1, fds0);
        ck_assert_uint_eq(st1, st0);

        crash_and_restart(&d, &m);
        fds2 = test_daemon_wait_fds(&d, fds0, 5000);
        st2 = settle(&m);
        printf("churn: after a crash, daemon fds %d, store entries %u\n", fds2, st2);
        ck_assert_int_eq(fds2, fds0);
        ck_assert_uint_eq(st2, st0);
        churn(d.path, 10);
        ck_assert_int_eq(test_daemon_wait_fds(&d, fds0, 3000), fds0);
        ck_assert_uint_eq(settle(&m), st0);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
                ck_assert_uint_eq(e.key, 5);
        }
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        close(cl);
        close(sv);
}
END_TEST

/* ---- details of a crash restore ------------------------------------------------------------ */

START_TEST(test_crash_details)
{
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c, *c2;
        sn_port_t *p, *shared, *p2, *wp;
        pid_t gone;
        char mdir[32], name[256];
        int mcl, msv, ecl, esv, gcl, gsv, fds0;
        struct waiter w;
        pthread_t th;
        sn_entry_t e;

        memset(name, 'n', 255);
        name[255] = 0;
        name[0] = 'A';
        name[254] = 'Z';
        manager_start(&m, mdir_new(mdir), 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_conn_open(d.path, &c2), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        /* A 255-byte name shared by two connections. */
        ck_assert_int_eq(sn_port_create_named(c, name, 0, &shared), 0);
        ck_assert_int_eq(sn_port_open(c2, name, &p2), 0);
        /* A filter changed just before the crash: IN, then OUT only. */
        sock_pair(&mcl, &msv);
        ck_assert_int_eq(enable(p, msv, 1, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(enable(p, msv, 1, SN_REGISTER_EVENT_OUT, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 2000), 1);
        ck_assert_uint_eq(e.events, SN_EVENT_OUT);
        /* EDGE with IN and OUT: OUT reported once already. */
        sock_pair(&ecl, &esv);
        ck_assert_int_eq(enable(shared, esv, 2, SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT,
                                SN_TRIGGER_EDGE), 0);
        while (sn_port_dequeue(p2, &e, 1, 300) == 1)
                ck_assert_uint_eq(e.key, 2);
        /* A connection that will die while no daemon runs, with a registration. */
        sock_pair(&gcl, &gsv);
        {
                int pfd[2];
                char ok;

                ck_assert_int_eq(pipe(pfd), 0);
                gone = fork();
                ck_assert_int_ge(gone, 0);
                if (gone == 0) {
                        sn_conn_t *gc;
                        sn_port_t *gp;

                        if (sn_conn_open(d.path, &gc) || sn_port_create(gc, 0, &gp) ||
                            enable(gp, gsv, 3, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL) ||
                            write(pfd[1], "k", 1) != 1)
                                _exit(1);
                        pause();
                        _exit(0);
                }
                close(pfd[1]);
                ck_assert_int_eq(read(pfd[0], &ok, 1), 1);
                close(pfd[0]);
        }
        /* A finite wait, 4 s, parked across the crash. */
        ck_assert_int_eq(sn_port_create(c2, 0, &wp), 0);
        w = (struct waiter){ .port = wp, .timeout = 4000 };
        ck_assert_int_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
        usleep(200 * 1000);
        fds0 = test_daemon_fds(&d);

        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        kill(gone, SIGKILL); /* its process dies while no daemon runs */
        ck_assert_int_eq(waitpid(gone, NULL, 0), gone);
        close(gsv);
        d.pid = 0;
        settle(&m); /* crash_and_restart without its kill */
        manager_start_daemon(&m, &d, NULL);
        /* The finite wait ends with its own time, not lost and not restarted from zero. */
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        printf("details: the 4 s wait parked across the crash ended after %lld ms (%d, key %llu)\n",
               w.ms, w.n, (unsigned long long)w.e.key);
        ck_assert_int_eq(w.n, -ETIMEDOUT);
        ck_assert_int_ge(w.ms, 3900);
        ck_assert_int_lt(w.ms, 15000);
        /* The dead connection's registration went: its socket's peer sees the close. */
        ck_assert_msg(peer_closed(gcl, 5000), "a dead connection's socket stays held");
        /* The changed filter: OUT (level) again, never IN. */
        ck_assert_int_eq(send(mcl, "m", 1, 0), 1);
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 2000), 1);
                ck_assert_uint_eq(e.key, 1);
                ck_assert_uint_eq(e.events, SN_EVENT_OUT);
        }
        /* EDGE IN|OUT: IN when data comes (through either connection's handle). */
        while (sn_port_dequeue(p2, &e, 1, 300) == 1)
                ck_assert_uint_eq(e.key, 2); /* at most a repeated OUT */
        ck_assert_int_eq(send(ecl, "e", 1, 0), 1);
        ck_assert_int_eq(sn_port_dequeue(shared, &e, 1, 2000), 1);
        ck_assert_uint_eq(e.key, 2);
        ck_assert_uint_eq(e.events & SN_EVENT_IN, SN_EVENT_IN);
        /* The long name still names the same port. */
        {
                sn_port_t *p3;
                sn_conn_t *c3;

                ck_assert_int_eq(sn_conn_open(d.path, &c3), 0);
                ck_assert_int_eq(sn_port_open(c3, name, &p3), 0);
                ck_assert_int_eq(sn_port_post(p3, 9, 9, 9), 0);
                ck_assert_int_eq(sn_port_dequeue(shared, &e, 1, 2000), 1);
                ck_assert_uint_eq(e.key, 9);
                sn_port_close(p3);
                sn_conn_close(c3);
        }
        printf("details: daemon fds %d before the crash, %d after\n", fds0,
               test_daemon_fds(&d));
        sn_port_close(wp);
        sn_port_close(p2);
        sn_port_close(shared);
        sn_port_close(p);
        sn_conn_close(c2);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        close(mcl);
        close(msv);
        close(ecl);
        close(esv);
        close(gcl);
}
END_TEST

/* ---- a crash while the next daemon takes over ---------------------------------------------- */

/* Copies of the entries whose names start with prefix (a store's content at some moment). */
static unsigned snapshot(struct manager *m, const char *prefix, int *fds, char *names,
                         size_t namesz)
{
        unsigned k = 0;
        size_t off = 0;

        pthread_mutex_lock(&m->lock);
        names[0] = 0;
        for (unsigned i = 0; i < m->n; i++)
                if (!strncmp(m->names[i], prefix, strlen(prefix))) {
                        fds[k] = fcntl(m->fds[i], F_DUPFD_CLOEXEC, 3);
                        ck_assert_int_ge(fds[k], 0);
                        off += (size_t)snprintf(names + off, namesz - off, "%s%s", k ? ":" : "",
                                                m->names[i]);
                        k++;
                }
        pthread_mutex_unlock(&m->lock);
        return k;
}

/* ".G": what the names of the store's (only) generation G hold. */
static void generation(struct manager *m, char *out, size_t outsz)
{
        out[0] = 0;
        pthread_mutex_lock(&m->lock);
        for (unsigned i = 0; i < m->n; i++)
                if (!strncmp(m->names[i], "snjournal.", 10))
                        snprintf(out, outsz, ".%s", m->names[i] + 10);
        pthread_mutex_unlock(&m->lock);
        ck_assert(out[0]);
}

static void start_with(struct test_daemon *d, int *fds, unsigned n, const char *names)
{
        test_daemon_start_with_fds(d, NULL, fds, n, names);
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
}

/*
 * The daemon after a crash dies too before its own journal and boxes are in the store (a crash
 * in the restore, an OOM kill at start): what the store holds then is the first daemon's
 * journal and boxes, and a third daemon must be able to restore from them.  Taking the
 * descriptors out of the boxes must not empty them.
 */
START_TEST(test_second_crash_before_storing)
{
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv, fds[64];
        unsigned n;
        char mdir[32], names[64 * 24], prefix[32];
        sn_entry_t e;

        manager_start(&m, mdir_new(mdir), 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sock_pair(&cl, &sv);
        ck_assert_int_eq(enable(p, sv, 11, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        settle(&m);
        pthread_mutex_lock(&m.lock);
        ck_assert_uint_eq(m.n, 3);
        /* "snjournal.G", "snlive.G.0" and "snlive.settings" (the last good settings,
         * lastgood.c): the first generation's prefix is "snlive.G." */
        for (unsigned i = 0; i < m.n; i++)
                if (!strncmp(m.names[i], "snjournal.", 10))
                        snprintf(prefix, sizeof(prefix), "%s", m.names[i] + 10);
        pthread_mutex_unlock(&m.lock);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        settle(&m);
        /* The second daemon: what it would have stored, and its removals, never get there. */
        n = snapshot(&m, "sn", fds, names, sizeof(names));
        ck_assert_uint_eq(n, 3);
        pthread_mutex_lock(&m.lock);
        snprintf(m.keep, sizeof(m.keep), ".%.30s", prefix);
        pthread_mutex_unlock(&m.lock);
        test_daemon_start_with_fds(&d, NULL, m.fds, m.n, names);
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
        ck_assert_int_eq(sn_port_post(p, 1, 1, 0), 0); /* it serves the session */
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
        n = snapshot(&m, "snjournal.", fds, names, sizeof(names));
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
        {
                /* Only the first generation's entries. */
                char live[48], jr[48];
                unsigned k;

                snprintf(live, sizeof(live), "snlive.%s.", prefix);
                snprintf(jr, sizeof(jr), "snjournal.%s", prefix);
                k = snapshot(&m, jr, fds, names, sizeof(names));
                ck_assert_uint_eq(k, 1);
                k += snapshot(&m, live, fds + 1, names + strlen(names) + 1,
                              sizeof(names) - strlen(names) - 1);
                names[strlen(names)] = ':';
                ck_assert_uint_eq(k, 2);
                ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
                ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
                /* The second daemon's entries never were: gone with the store. */
                manager_stop(&m);
                manager_start(&m, mdir, 64);
                start_with(&d, fds, k, names);
        }
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
        ck_assert_uint_eq(e.key, 11);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        close(cl);
        close(sv);
}
END_TEST

/*
 * The daemon after a crash stores its own journal and boxes, then dies before it removed the
 * first daemon's: the store holds two generations.  The next daemon must restore the newer one
 * (a registration made after the first crash is kept), from that generation's boxes.
 */
START_TEST(test_two_generations_newest_wins)
{
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv, cl2, sv2;
        char mdir[32];
        sn_entry_t e;
        bool got1 = false, got2 = false;

        manager_start(&m, mdir_new(mdir), 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sock_pair(&cl, &sv);
        ck_assert_int_eq(enable(p, sv, 1, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        settle(&m);
        /* The first daemon's entries stay: the removals of the second do not get there. */
        generation(&m, m.keep, sizeof(m.keep));
        crash_and_restart(&d, &m);
        ck_assert_int_eq(sn_port_post(p, 1, 1, 0), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
        settle(&m); /* its removals were ignored; the next daemon's are not */
        pthread_mutex_lock(&m.lock);
        m.keep[0] = 0;
        pthread_mutex_unlock(&m.lock);
        /* After the first crash: a second registration, and the first one removed. */
        sock_pair(&cl2, &sv2);
        ck_assert_int_eq(enable(p, sv2, 2, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        ck_assert_int_eq(sn_socket_close(c, sv), 0);
        settle(&m);
        ck_assert_uint_ge(manager_count(&m, "snjournal."), 2);
        crash_and_restart(&d, &m);
        ck_assert_int_eq(send(cl2, "y", 1, 0), 1);
        ck_assert(peer_closed(cl, 5000)); /* the dropped one stays dropped */
        for (;;) {
                int n = sn_port_dequeue(p, &e, 1, 1000);

                if (n == -ETIMEDOUT)
                        break;
                ck_assert_int_eq(n, 1);
                got1 |= e.key == 1;
                got2 |= e.key == 2;
                if (e.key == 2) {
                        char b;

                        ck_assert_int_eq(recv(sv2, &b, 1, 0), 1);
                }
        }
        ck_assert_msg(got2, "a registration made after the first crash was lost");
        ck_assert_msg(!got1, "a dropped registration came back");
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        close(cl);
        close(cl2);
        close(sv2);
}
END_TEST

/* ---- what drops cost the service manager, and a crash in the middle of rebuilds ------------ */

enum { NDROP = 600 };

/*
 * A client drops 600 registered sockets as fast as it can, one call each: every drop must close
 * (the peer sees it), and the messages the service manager gets stay bounded by the rebuilds
 * (drops gathered for 2 ms), never many per drop.  Then, with the removals of the rebuilt boxes
 * lost (the daemon is killed between storing a box and removing the old one), a crash: the
 * survivors report, and what was dropped is not held again.
 */
START_TEST(test_drop_storm_then_crash_mid_rebuild)
{
        static int cl[NDROP], sv[NDROP];
        static sn_registration_t r[NDROP];
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        char mdir[32];
        unsigned stores0, removed0, stores1, removed1;
        long long t0, ms;
        int fds0;

        manager_start(&m, mdir_new(mdir), 64);
        test_daemon_start(&d, NULL);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (int i = 0; i < NDROP; i++) {
                sock_pair(&cl[i], &sv[i]);
                r[i] = (sn_registration_t){ .fd = sv[i], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                            .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        }
        ck_assert_int_eq(sn_port_process(p, r, NDROP, NULL, 0, 0), 0);
        settle(&m);
        fds0 = test_daemon_fds(&d);
        pthread_mutex_lock(&m.lock);
        stores0 = m.stores;
        removed0 = m.removed;
        pthread_mutex_unlock(&m.lock);
        /* Every other one dropped. */
        t0 = now_ms();
        for (int i = 0; i < NDROP; i += 2)
                ck_assert_int_eq(sn_socket_close(c, sv[i]), 0);
        ms = now_ms() - t0;
        for (int i = 0; i < NDROP; i += 2)
                ck_assert_msg(peer_closed(cl[i], 5000), "dropped socket %d still held", i);
        settle(&m);
        pthread_mutex_lock(&m.lock);
        stores1 = m.stores - stores0;
        removed1 = m.removed - removed0;
        pthread_mutex_unlock(&m.lock);
        printf("drop storm: %d drops in %lld ms cost %u store and %u remove message(s); daemon "
               "fds %d -> %d; %u store entries\n", NDROP / 2, ms, stores1, removed1, fds0,
               test_daemon_fds(&d), stored(&m));
        ck_assert_uint_le(stores1, NDROP / 2);
        ck_assert_uint_le(removed1, NDROP / 2);
        ck_assert_int_eq(test_daemon_wait_fds(&d, fds0 - NDROP / 2, 3000), fds0 - NDROP / 2);

        /* The removals of rebuilt boxes get lost from here on, then a crash after drops. */
        pthread_mutex_lock(&m.lock);
        snprintf(m.keep, sizeof(m.keep), "snlive.");
        pthread_mutex_unlock(&m.lock);
        for (int i = 1; i < NDROP; i += 4)
                ck_assert_int_eq(sn_socket_close(c, sv[i]), 0);
        settle(&m);
        pthread_mutex_lock(&m.lock);
        m.keep[0] = 0; /* the next daemon's removals get there */
        pthread_mutex_unlock(&m.lock);
        crash_and_restart(&d, &m);
        ck_assert_int_eq(test_daemon_wait_fds(&d, fds0 - NDROP / 2 - NDROP / 4, 5000),
                         fds0 - NDROP / 2 - NDROP / 4);
        for (int i = 1; i < NDROP; i += 4)
                ck_assert_msg(peer_closed(cl[i], 5000), "dropped socket %d back after a crash",
                              i);
        for (int i = 3; i < NDROP; i += 4)
                ck_assert_int_eq(send(cl[i], "s", 1, 0), 1);
        {
                static bool seen[NDROP];

                for (int got = 0; got < NDROP / 4;) {
                        sn_entry_t e[64];
                        int n = sn_port_dequeue(p, e, 64, 5000);

                        ck_assert_int_gt(n, 0);
                        for (int i = 0; i < n; i++) {
                                char b;

                                ck_assert_uint_eq(e[i].key % 4, 3);
                                if (seen[e[i].key]) /* level: until drained */
                                        continue;
                                seen[e[i].key] = true;
                                ck_assert_int_eq(recv(sv[e[i].key], &b, 1, 0), 1);
                                got++;
                        }
                }
        }
        printf("drop storm: after the crash %u store entries\n", settle(&m));
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        rmdir(mdir);
        for (int i = 0; i < NDROP; i++) {
                close(cl[i]);
                if (i % 4 == 3)
                        close(sv[i]);
        }
}
END_TEST

/* ---- a re-exec whose execv() fails, then a crash ------------------------------------------ */

/*
 * A re-exec ends the live store (the new image keeps its own); when execv() fails the daemon
 * goes on serving and starts a new one, which must hold every session again.  Here the binary
 * is a copy that, once it has passed the state check, is gone (as when an upgrade removes it
 * at the wrong moment): execv() fails with ENOENT.  Then a crash: every session comes back.
 */
START_TEST(test_failed_reexec_then_crash)
{
        struct test_daemon d;
        struct manager m;
        sn_conn_t *c;
        sn_port_t *p;
        char mdir[32], bindir[64], bin[128], cmd[512], *old_builddir;
        const char *builddir = getenv("SN_BUILDDIR");
        int cl, sv;
        sn_entry_t e;
        FILE *f;

        old_builddir = strdup(builddir ? builddir : SN_BUILDDIR);
        manager_start(&m, mdir_new(mdir), 64);
        snprintf(bindir, sizeof(bindir), "%s/b", mdir);
        snprintf(bin, sizeof(bin), "%s/daemon/socknotifyd", bindir);
        snprintf(cmd, sizeof(cmd), "mkdir -p %s/daemon && cp %s/daemon/socknotifyd %s", bindir,
                 old_builddir, bin);
        ck_assert_int_eq(system(cmd), 0);
        setenv("SN_BUILDDIR", bindir, 1);
        test_daemon_start(&d, NULL);
        setenv("SN_BUILDDIR", old_builddir, 1);
        ck_assert_int_eq(sn_conn_open(d.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        sock_pair(&cl, &sv);
        ck_assert_int_eq(enable(p, sv, 21, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL), 0);
        /* The binary becomes one that passes the check and removes itself. */
        ck_assert_int_eq(unlink(bin), 0);
        f = fopen(bin, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "#!/bin/sh\ncase \"$1\" in --check-state=*) rm -f \"$0\"; exit 0;; esac\n"
                   "exit 1\n");
        fclose(f);
        ck_assert_int_eq(chmod(bin, 0755), 0);
        settle(&m);
        ck_assert_int_eq(kill(d.pid, SIGUSR2), 0);
        for (int i = 0; i < 500 && access(bin, F_OK) == 0; i++)
                usleep(10 * 1000);
        ck_assert_int_ne(access(bin, F_OK), 0);
        /* Still serving, with the same session. */
        ck_assert_int_eq(sn_port_post(p, 1, 1, 0), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
        ck_assert_uint_eq(manager_count(&m, "snjournal."), 1);
        ck_assert_uint_ge(manager_count(&m, "snlive."), 1);
        crash_and_restart(&d, &m);
        ck_assert_int_eq(send(cl, "r", 1, 0), 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 5000), 1);
        ck_assert_uint_eq(e.key, 21);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&d), 0);
        manager_stop(&m);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", bindir);
        ck_assert_int_eq(system(cmd), 0);
        rmdir(mdir);
        close(cl);
        close(sv);
        free(old_builddir);
}
END_TEST

/* ---- known loss: a notification queued before DISABLE --------------------------------------- */

int main(void)
{
        Suite *s = suite_create("fdstore-attack");

        setvbuf(stdout, NULL, _IOLBF, 0);
        TCase *tc = tcase_create("attack");

        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_fragmented_boxes_fill_the_store);
        tcase_add_test(tc, test_journal_grows_then_crash);
        tcase_add_test(tc, test_churn_leaks_nothing);
        tcase_add_test(tc, test_crash_details);
        tcase_add_test(tc, test_second_crash_before_storing);
        tcase_add_test(tc, test_two_generations_newest_wins);
        tcase_add_test(tc, test_drop_storm_then_crash_mid_rebuild);
        tcase_add_test(tc, test_failed_reexec_then_crash);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

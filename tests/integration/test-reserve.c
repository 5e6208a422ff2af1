/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-reserve.c - issue 24, item 1: two ordinary users at the default limits must not lock
 * root out.
 *
 * A real daemon runs with a small descriptor capacity (RLIMIT_NOFILE 512, soft and hard) and
 * the default limits.  Two processes running as two unprivileged users, one after the other,
 * each take every descriptor the daemon gives them: connections, then ports, then registered
 * sockets, each until refused.  Then root still connects, creates a port, registers a socket,
 * gets its notification, and `socknotifyctl status` answers with the reserve; after a re-exec
 * the pool counts the same again.  Every refusal
 * the two users met is a limit's (EDQUOT), never the daemon running out of descriptors, and
 * once they are gone the daemon is back to its baseline.  Before the reserve, the per-user
 * defaults were fractions of the raw capacity: the two users took it all and root's connection
 * was refused with EMFILE.
 *
 * Posted packets and parked calls are pooled the same way (--max-posted-unprivileged,
 * --max-waits-unprivileged): two users each take what they can, the second is refused at the
 * pool, root is not, a re-exec counts the same again, and the pool is empty once they are gone.
 * Of PORT_TAKE's budget of descriptors in unread replies, a quarter stays for root.
 *
 * The arithmetic of the defaults (settings_resolve) is checked too, without a daemon.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "daemon/base/settings.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

#define CAPACITY 512
#define USER_A 65534
#define USER_B 65533

static struct test_daemon D;

static int scaled(int ms)
{
        const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
        double f = m ? atof(m) : 1;

        return f > 1 ? (int)(ms * f) : ms;
}

/* What one user got from the daemon, and the errno of the refusal that ended each kind. */
struct haul {
        int conns, ports, sockets;
        int conn_err, port_err, sock_err;
};

/* A hog's haul so far, and where it reports it and waits to go. */
static struct haul h;
static int hog_report, hog_go;

/* Reports the haul and holds everything until told to go. */
static void hog_done(void)
{
        char ch;

        if (write(hog_report, &h, sizeof(h)) != (ssize_t)sizeof(h) || read(hog_go, &ch, 1) != 1)
                _exit(4);
        _exit(0);
}

/* A call that was never answered (a daemon out of descriptors drops what it cannot take):
 * the haul ends there, with ETIMEDOUT for the kind being taken. */
static void hog_alarm(int sig)
{
        (void)sig;
        *(!h.conn_err ? &h.conn_err : !h.port_err ? &h.port_err : &h.sock_err) = ETIMEDOUT;
        hog_done();
}

/*
 * In a child: becomes uid, takes every connection, then every port, then every registered
 * socket the daemon gives, reports the haul on report, and holds it all until go is readable.
 * The local copy of a registered socket is closed at once: the daemon holds its own.
 */
static void hog(uid_t uid, int report, int go)
{
        enum { MAX = 4096 };
        static sn_conn_t *conns[MAX];
        static sn_port_t *ports[MAX];
        int r;

        hog_report = report;
        hog_go = go;
        /* USER_A's connections have rings (3 descriptors each, counted with its sockets),
         * USER_B's keep to their sockets: both kinds end at their limits, and the pool holds
         * both users' shares. */
        if (uid == USER_B)
                setenv("SOCKNOTIFY_NO_SHM", "1", 1);
        signal(SIGALRM, hog_alarm);
        alarm((unsigned)scaled(10000) / 1000);
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
            setresuid(uid, uid, uid) < 0)
                _exit(3);
        while (h.conns < MAX) {
                r = sn_conn_open(D.path, &conns[h.conns]);
                if (r < 0) {
                        h.conn_err = -r;
                        break;
                }
                h.conns++;
        }
        while (h.conns && h.ports < MAX) {
                r = sn_port_create(conns[h.ports % h.conns], 0, &ports[h.ports]);
                if (r < 0) {
                        h.port_err = -r;
                        break;
                }
                h.ports++;
        }
        while (h.ports && h.sockets < 1 << 20) {
                int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                sn_registration_t reg = { .fd = s, .key = (uint64_t)h.sockets, .op = SN_OP_ENABLE,
                                          .filter = SN_REGISTER_EVENT_IN,
                                          .trigger = SN_TRIGGER_LEVEL };

                if (s < 0) {
                        h.sock_err = errno;
                        break;
                }
                r = sn_port_process(ports[h.sockets % h.ports], &reg, 1, NULL, 0, 0);
                close(s);
                if (r < 0 || reg.result < 0) {
                        h.sock_err = r < 0 ? -r : -reg.result;
                        break;
                }
                h.sockets++;
        }
        alarm(0);
        hog_done();
}

/* Forks child(uid, report, go) and waits for the size bytes it reports into ret. */
static pid_t start_child(void (*child)(uid_t, int, int), uid_t uid, int go, void *ret,
                         size_t size)
{
        int report[2];
        pid_t pid;

        ck_assert_int_eq(pipe(report), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(report[0]);
                child(uid, report[1], go);
        }
        close(report[1]);
        ck_assert_int_eq(read(report[0], ret, size), (ssize_t)size);
        close(report[0]);
        return pid;
}

/* Starts a hog as uid and waits for its haul. */
static pid_t start_hog(uid_t uid, int go, struct haul *ret)
{
        pid_t pid = start_child(hog, uid, go, ret, sizeof(*ret));

        printf("uid %u: %d connection(s) (then %s), %d port(s) (then %s), %d socket(s) (then "
               "%s)\n",
               (unsigned)uid, ret->conns, strerrorname_np(ret->conn_err),
               ret->ports, strerrorname_np(ret->port_err), ret->sockets,
               strerrorname_np(ret->sock_err));
        fflush(stdout); /* shown also when the test fails */
        return pid;
}

/* Runs socknotifyctl ARGS against the daemon; returns its exit status, its output in out. */
static int ctl(const char *args, char *out, size_t size)
{
        char cmd[512];
        size_t n;
        FILE *f;

        snprintf(cmd, sizeof(cmd), "SOCKNOTIFY_SOCKET=%s %s/ctl/socknotifyctl %s", D.path,
                 getenv("SN_BUILDDIR") ? getenv("SN_BUILDDIR") : SN_BUILDDIR, args);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        n = fread(out, 1, size - 1, f);
        out[n] = 0;
        return WEXITSTATUS(pclose(f));
}

static json_int_t get(json_t *doc, const char *a, const char *b, const char *c)
{
        json_t *v = json_object_get(json_object_get(doc, a), b);

        if (c)
                v = json_object_get(v, c);
        ck_assert_msg(json_is_integer(v), "status has no %s.%s%s%s", a, b, c ? "." : "",
                      c ? c : "");
        return json_integer_value(v);
}

/* The descriptors a user's connections hold beside their sockets: 3 for each connection with
 * shared-memory rings (the ring file and two doorbells), from the status document. */
static json_int_t ring_fds(json_t *doc, uid_t uid)
{
        json_t *users = json_object_get(doc, "users"), *u;
        size_t i;

        json_array_foreach(users, i, u)
                if (json_integer_value(json_object_get(u, "uid")) == (json_int_t)uid)
                        return 3 * json_integer_value(json_object_get(u, "rings"));
        return 0;
}

START_TEST(test_two_users_leave_roots_reserve)
{
        struct haul a, b;
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_t e;
        static char out[1 << 16];
        json_t *doc;
        pid_t pa, pb;
        int go[2], sp[2], st, baseline;
        json_int_t pool;

        if (geteuid() != 0) {
                printf("SKIP: test_two_users_leave_roots_reserve needs root to run clients as "
                       "other users\n");
                return;
        }
        test_daemon_start_nofile(&D, (const char *const[]){ "--socket-mode=0666", NULL }, CAPACITY);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(pipe(go), 0);

        pa = start_hog(USER_A, go[0], &a);
        pb = start_hog(USER_B, go[0], &b);
        printf("daemon: %d descriptor(s) open of %d, %d at the start\n", test_daemon_fds(&D),
               CAPACITY, baseline);
        fflush(stdout);

        /* Root is served with both users at their maximum. */
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        {
                sn_registration_t r = { .fd = sp[0], .key = 42, .op = SN_OP_ENABLE,
                                        .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL };

                ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(r.result, 0);
        }
        ck_assert_int_eq(write(sp[1], "x", 1), 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, (uint32_t)scaled(5000)), 1);
        ck_assert_uint_eq(e.key, 42);
        ck_assert(e.events & SN_EVENT_IN);

        ck_assert_int_eq(ctl("status", out, sizeof(out)), 0);
        printf("%s", out);
        ck_assert_ptr_nonnull(strstr(out, "reserve: "));
        ck_assert_ptr_nonnull(strstr(out, "other users together hold "));
        ck_assert_int_eq(ctl("--json status", out, sizeof(out)), 0);
        doc = json_loads(out, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        pool = get(doc, "reserve", "pool", "fds");
        ck_assert_int_eq(pool, CAPACITY - get(doc, "limits", "reserve_fds", NULL));
        /* The two users together hold the whole pool (each took until refused), not more. */
        ck_assert_int_eq(get(doc, "reserve", "unprivileged", "fds"),
                         a.conns + a.ports + a.sockets + b.conns + b.ports + b.sockets +
                                 ring_fds(doc, USER_A) + ring_fds(doc, USER_B));
        ck_assert_int_le(get(doc, "reserve", "unprivileged", "fds"), pool);
        ck_assert_int_eq(get(doc, "reserve", "unprivileged", "connections"), a.conns + b.conns);
        json_decref(doc);

        /* A re-exec rebuilds the pool from what it restores, through the same charges. */
        ck_assert_int_eq(ctl("reexec", out, sizeof(out)), 0);
        ck_assert_int_eq(ctl("--json status", out, sizeof(out)), 0);
        doc = json_loads(out, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        ck_assert_int_eq(get(doc, "reserve", "unprivileged", "fds"),
                         a.conns + a.ports + a.sockets + b.conns + b.ports + b.sockets +
                                 ring_fds(doc, USER_A) + ring_fds(doc, USER_B));
        ck_assert_int_eq(get(doc, "reserve", "unprivileged", "connections"), a.conns + b.conns);
        ck_assert_int_lt(get(doc, "reserve", "own_fds", NULL), 32);
        json_decref(doc);
        ck_assert_int_eq(write(sp[1], "y", 1), 1);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, (uint32_t)scaled(5000)), 1);
        ck_assert_uint_eq(e.key, 42);

        /* Each kind ended at a limit, never at the daemon being out of descriptors. */
        ck_assert_int_gt(a.conns, 0);
        ck_assert_int_gt(a.ports, 0);
        ck_assert_int_gt(a.sockets, 0);
        ck_assert_int_gt(b.conns, 0);
        ck_assert_int_eq(a.conn_err, EDQUOT);
        ck_assert_int_eq(a.port_err, EDQUOT);
        ck_assert_int_eq(a.sock_err, EDQUOT);
        ck_assert_int_eq(b.conn_err, EDQUOT);
        ck_assert_int_eq(b.port_err, EDQUOT);
        ck_assert_int_eq(b.sock_err, EDQUOT);

        /* The users go: everything they held is given back. */
        ck_assert_int_eq(write(go[1], "gg", 2), 2);
        ck_assert_int_eq(waitpid(pa, &st, 0), pa);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        ck_assert_int_eq(waitpid(pb, &st, 0), pb);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        sn_port_close(p);
        sn_conn_close(c);
        close(sp[0]);
        close(sp[1]);
        close(go[0]);
        close(go[1]);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, scaled(5000)), baseline);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * Descriptors waiting in the closer thread are still in the daemon's table.  One unprivileged
 * user registers a TCP socket whose last close() blocks (SO_LINGER, unsent data, a peer that
 * never reads) and then sockets up to its limit, and closes the port: the blocked close() holds
 * every one of them in the closer's queue, their charge already released.  The user then fills
 * the pool again with what the daemon makes itself: EDGE duplicates of new registrations,
 * connections, ports.  Before, only descriptors received counted the closer's backlog
 * (user_fd_room()): the daemon's table reached its capacity and root's connection sat unanswered
 * in the listening socket's backlog.  Now the pool counts them everywhere.
 */
struct clog_haul {
        int step; /* 0: all done, else the step that failed */
        int closing_regs, edge_regs, conns, ports;
        int edge_rc, edge_result;
};

static int tcp_lingering(int *ret_listener)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t alen = sizeof(a);
        struct linger lg = { .l_onoff = 1, .l_linger = 600 };
        int small = 4096, l, c;
        char buf[65536] = { 0 };

        l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l < 0 || setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) < 0 ||
            bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
            getsockname(l, (struct sockaddr *)&a, &alen) < 0)
                return -1;
        c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
                return -1;
        /* Never accepted, never read: the peer's window closes with our data unsent. */
        for (int round = 0; round < 3; round++) {
                while (send(c, buf, sizeof(buf), MSG_DONTWAIT) > 0)
                        ;
                usleep(50000);
        }
        if (setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
                return -1;
        *ret_listener = l;
        return c;
}

static void clogger(uid_t uid, int report, int go)
{
        static sn_conn_t *conns[512];
        struct clog_haul ch = { 0 };
        sn_registration_t r = { .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                .trigger = SN_TRIGGER_LEVEL };
        sn_entry_t e[64];
        sn_conn_t *c;
        sn_port_t *p;
        int l, sp[2];
        char x;

        alarm((unsigned)scaled(20000) / 1000);
        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
            setresuid(uid, uid, uid) < 0)
                _exit(3);
        ch.step = 1;
        r.fd = tcp_lingering(&l);
        if (r.fd < 0 || sn_conn_open(D.path, &c) < 0 || sn_port_create(c, 0, &p) < 0 ||
            sn_port_process(p, &r, 1, NULL, 0, 0) < 0 || r.result != 0)
                goto out;
        close(r.fd);
        ch.step = 2;
        for (;;) {
                if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0)
                        goto out;
                r.fd = sp[0];
                r.key = (uint64_t)ch.closing_regs + 1;
                if (sn_port_process(p, &r, 1, NULL, 0, 0) < 0 || r.result != 0)
                        break;
                close(sp[0]);
                close(sp[1]);
                ch.closing_regs++;
        }
        close(sp[0]);
        close(sp[1]);
        /* The lingering socket's close() comes first and blocks the rest behind it. */
        sn_port_close(p);
        ch.step = 3;
        if (sn_port_create(c, 0, &p) < 0)
                goto out;
        r.filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT;
        r.trigger = SN_TRIGGER_EDGE;
        for (;;) {
                int rc;

                if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0)
                        goto out;
                r.fd = sp[0];
                r.key = 100000 + (uint64_t)ch.edge_regs;
                /* Entries asked for, so that the registration is harvested and splits. */
                rc = sn_port_process(p, &r, 1, e, 64, 0);
                close(sp[0]);
                if ((rc < 0 && rc != -ETIMEDOUT) || r.result != 0) {
                        ch.edge_rc = rc;
                        ch.edge_result = r.result;
                        close(sp[1]);
                        break;
                }
                ch.edge_regs++; /* sp[1] kept: a peer, so that the socket stays writable */
        }
        while (ch.conns < 512 && sn_conn_open(D.path, &conns[ch.conns]) == 0)
                ch.conns++;
        while (ch.conns && ch.ports < 512 && sn_port_create(conns[ch.ports % ch.conns], 0, &p) == 0)
                ch.ports++;
        ch.step = 0;
out:
        if (write(report, &ch, sizeof(ch)) != (ssize_t)sizeof(ch) || read(go, &x, 1) != 1)
                _exit(4);
        _exit(0);
}

START_TEST(test_closer_backlog_leaves_roots_reserve)
{
        /* The default reserve at a capacity of 512: 64 (a sixteenth, at least 64). */
        const int pool = CAPACITY - 64;
        int rep[2], go[2], st, baseline, now;
        struct clog_haul ch;
        sn_registration_t r = { .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                .trigger = SN_TRIGGER_LEVEL, .key = 7 };
        sn_conn_t *c;
        sn_port_t *p;
        int sp[2];
        pid_t pid;

        if (geteuid() != 0) {
                printf("SKIP: test_closer_backlog_leaves_roots_reserve needs root to run a "
                       "client as another user\n");
                return;
        }
        test_daemon_start_nofile(&D, (const char *const[]){ "--socket-mode=0666", NULL },
                                 CAPACITY);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(pipe(rep), 0);
        ck_assert_int_eq(pipe(go), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(rep[0]);
                close(go[1]);
                clogger(USER_A, rep[1], go[0]);
        }
        close(rep[1]);
        close(go[0]);
        ck_assert_int_eq(read(rep[0], &ch, sizeof(ch)), (ssize_t)sizeof(ch));
        printf("closer backlog: %d registration(s) closing, then %d EDGE registration(s), "
               "%d connection(s), %d port(s) (EDGE refused: %d/%d)\n", ch.closing_regs,
               ch.edge_regs, ch.conns, ch.ports, ch.edge_rc, ch.edge_result);
        ck_assert_msg(ch.step == 0, "the unprivileged client failed at step %d", ch.step);
        ck_assert_int_gt(ch.closing_regs, 64);
        /* What the user made the daemon hold, the closer's backlog included, is in the pool. */
        now = test_daemon_fds(&D);
        ck_assert_msg(now <= baseline + pool,
                      "the daemon holds %d descriptors (baseline %d, pool %d): the closer's "
                      "backlog took root's reserve", now, baseline, pool);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), 0);
        r.fd = sp[0];
        ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        sn_port_close(p);
        sn_conn_close(c);
        close(sp[0]);
        close(sp[1]);
        /* Its end: the listener goes, the lingering close() returns, the backlog drains. */
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(rep[0]);
        close(go[1]);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, scaled(10000)), baseline);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* Of 8 connections, 4 are kept for root (--reserve-connections by default: 8/16, at least 4,
 * at most half): another user gets 4, then EUSERS, and root still gets its 4. */
START_TEST(test_connections_are_reserved_too)
{
        sn_conn_t *c[4];
        struct haul a;
        int go[2], st, baseline;
        pid_t pa;

        if (geteuid() != 0) {
                printf("SKIP: test_connections_are_reserved_too needs root\n");
                return;
        }
        test_daemon_start(&D, (const char *const[]){ "--socket-mode=0666", "--max-connections=8",
                                                    "--max-sockets-per-user=16", NULL });
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(pipe(go), 0);
        pa = start_hog(USER_A, go[0], &a);
        ck_assert_int_eq(a.conns, 4);
        ck_assert_int_eq(a.conn_err, EUSERS);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(sn_conn_open(D.path, &c[i]), 0);
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(waitpid(pa, &st, 0), pa);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        for (int i = 0; i < 4; i++)
                sn_conn_close(c[i]);
        close(go[0]);
        close(go[1]);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, scaled(5000)), baseline);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* Root itself fills the daemon's descriptor table (its per-user limit lifted): the request whose
 * descriptors the kernel could not install (MSG_CTRUNC) is answered with EMFILE, never left
 * without a reply, and the daemon serves again once descriptors are free.  Before, it answered
 * an ERROR with request id 0 that no call waited for, and the call hung. */
START_TEST(test_full_table_answers_emfile)
{
        enum { BATCH = 16, MAX = 512 };
        int fds[MAX][2], n = 0, r = 0, baseline;
        sn_conn_t *conn;
        sn_port_t *port;

        test_daemon_start_nofile(&D, (const char *const[]){ "--max-sockets-per-user=100000",
                                                           "--reserve-fds=16", NULL }, 128);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &conn), 0);
        ck_assert_int_eq(sn_port_create(conn, 0, &port), 0);
        /* A call that is never answered ends the test by SIGALRM. */
        alarm((unsigned)scaled(30000) / 1000);
        while (n + BATCH <= MAX) {
                sn_registration_t reg[BATCH];

                for (int i = 0; i < BATCH; i++) {
                        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                                                    fds[n + i]), 0);
                        reg[i] = (sn_registration_t){ .fd = fds[n + i][0], .key = (uint64_t)(n + i),
                                                      .op = SN_OP_ENABLE,
                                                      .filter = SN_REGISTER_EVENT_IN,
                                                      .trigger = SN_TRIGGER_LEVEL };
                }
                r = sn_port_process(port, reg, BATCH, NULL, 0, 0);
                if (r < 0) {
                        for (int i = 0; i < BATCH; i++) {
                                close(fds[n + i][0]);
                                close(fds[n + i][1]);
                        }
                        break;
                }
                for (int i = 0; i < BATCH; i++)
                        ck_assert_int_eq(reg[i].result, 0);
                n += BATCH;
        }
        alarm(0);
        ck_assert_msg(r == -EMFILE, "after %d registrations: %d (%s), want EMFILE", n, r,
                      sn_strerror(r));
        ck_assert_int_gt(n, 0);
        /* Descriptors free again: the same connection registers once more. */
        for (int i = 0; i < BATCH; i++)
                ck_assert_int_eq(sn_socket_close(conn, fds[n - 1 - i][0]), 0);
        /* The daemon closes its copies in its closer thread: wait until they are gone (and the
         * refused batch's, which the kernel had partly installed). */
        {
                long long deadline = now_ms() + test_timeout_ms(10000);

                while (test_daemon_fds(&D) > 128 - BATCH) {
                        ck_assert_msg(now_ms() < deadline, "the daemon still holds %d descriptors",
                                      test_daemon_fds(&D));
                        usleep(5000);
                }
        }
        {
                int sp[2];
                sn_registration_t reg = { .key = 9999, .op = SN_OP_ENABLE,
                                          .filter = SN_REGISTER_EVENT_IN,
                                          .trigger = SN_TRIGGER_LEVEL };
                sn_entry_t e;

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
                reg.fd = sp[0];
                ck_assert_int_eq(sn_port_process(port, &reg, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(reg.result, 0);
                ck_assert_int_eq(write(sp[1], "x", 1), 1);
                ck_assert_int_eq(sn_port_dequeue(port, &e, 1, scaled(5000)), 1);
                ck_assert_uint_eq(e.key, 9999);
                ck_assert_int_eq(sn_socket_close(conn, sp[0]), 0);
                close(sp[1]);
        }
        for (int i = 0; i < n - BATCH; i++)
                ck_assert_int_eq(sn_socket_close(conn, fds[i][0]), 0);
        for (int i = 0; i < n; i++)
                close(fds[i][1]);
        sn_port_close(port);
        sn_conn_close(conn);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, scaled(5000)), baseline);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * Parks calls (PROCESS dequeuing one entry, no timeout) on port of the raw connection fd until
 * one is refused or max are parked; returns how many were parked and the refusal's status in
 * *ret_err (0: none).  A STATUS after each call tells a parked one (no reply before STATUS's)
 * from a refused one (its reply comes first).
 */
static int park_until_refused(int fd, uint32_t port, int max, uint32_t *ret_err)
{
        static uint8_t buf[1 << 18];
        int n = 0;

        *ret_err = 0;
        while (n < max) {
                uint32_t id = 1000 + 2 * (uint32_t)n;
                struct snw_process body = { .port = port, .timeout_ms = SN_PROTO_INFINITE,
                                            .max_entries = 1, .thread = (uint32_t)n + 1 };
                uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0),
                                                &body);
                const struct sn_msg_desc *d;
                struct snw_header hd;
                ssize_t len;

                raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
                sn_msg_begin(buf, SN_MSG_STATUS, id + 1, 0, 0, 0, 0);
                raw_send(fd, buf, SN_HEADER_SIZE, NULL, 0);
                len = raw_recv(fd, buf, sizeof(buf));
                if (len <= 0 || sn_msg_check(buf, (size_t)len, &hd, &d) < 0)
                        _exit(5);
                if (hd.type == SN_MSG_PROCESS_REPLY && hd.id == id) {
                        *ret_err = hd.status;
                        len = raw_recv(fd, buf, sizeof(buf)); /* STATUS's reply */
                        if (len <= 0 || sn_msg_check(buf, (size_t)len, &hd, &d) < 0)
                                _exit(5);
                        break;
                }
                if (hd.type != SN_MSG_STATUS_REPLY || hd.id != id + 1)
                        _exit(6);
                n++;
        }
        return n;
}

/* What one user queued: posted packets and parked calls, each until refused (errno). */
struct load {
        int posted, waits;
        int post_err;
        uint32_t wait_err;
};

/* In a child: becomes uid, posts packets to a port of its own until refused, parks calls on
 * another port until refused, reports on report and holds it all until go is readable. */
static void loader(uid_t uid, int report, int go)
{
        struct load l = { 0 };
        sn_conn_t *c;
        sn_port_t *p;
        int fd, r;
        char ch;

        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
            setresuid(uid, uid, uid) < 0)
                _exit(3);
        if (sn_conn_open(D.path, &c) < 0 || sn_port_create(c, 0, &p) < 0)
                _exit(4);
        while (l.posted < 1000) {
                r = sn_port_post(p, (uint64_t)l.posted, 0, 0);
                if (r < 0) {
                        l.post_err = -r;
                        break;
                }
                l.posted++;
        }
        fd = raw_hello(D.path);
        l.waits = park_until_refused(fd, raw_port_create(fd, 2, NULL), 1000, &l.wait_err);
        if (write(report, &l, sizeof(l)) != (ssize_t)sizeof(l) || read(go, &ch, 1) != 1)
                _exit(4);
        _exit(0);
}

/* Starts a loader as uid and waits for its report. */
static pid_t start_loader(uid_t uid, int go, struct load *ret)
{
        pid_t pid = start_child(loader, uid, go, ret, sizeof(*ret));

        printf("uid %u: %d posted packet(s) (then %s), %d parked call(s) (then %s)\n",
               (unsigned)uid, ret->posted, strerrorname_np(ret->post_err), ret->waits,
               strerrorname_np((int)ret->wait_err));
        fflush(stdout);
        return pid;
}

/* The pool's counts of posted packets and parked calls in `socknotifyctl --json status`. */
static void pool_counts(json_int_t *ret_posted, json_int_t *ret_waits, json_int_t *ret_staged)
{
        static char out[1 << 16];
        json_t *doc;

        ck_assert_int_eq(ctl("--json status", out, sizeof(out)), 0);
        doc = json_loads(out, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        ck_assert_int_eq(get(doc, "reserve", "pool", "posted"), 100);
        ck_assert_int_eq(get(doc, "reserve", "pool", "waits"), 6);
        *ret_posted = get(doc, "reserve", "unprivileged", "posted");
        *ret_waits = get(doc, "reserve", "unprivileged", "waits");
        *ret_staged = get(doc, "reserve", "unprivileged", "staged");
        json_decref(doc);
}

/*
 * Two users post packets and park calls until refused: the first stops at its own limits (80
 * packets, 4 calls), the second at what the pool has left (20, 2), with the same EDQUOT.  Root
 * still posts and parks.  A re-exec counts the same again; once the users are gone the pool is
 * empty.  Before the pool, the second user got 80 packets and 4 calls as well.
 */
START_TEST(test_posted_and_waits_are_pooled)
{
        static char out[1 << 16];
        struct load a, b;
        json_int_t posted, waits, staged;
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_t e;
        pid_t pa, pb;
        uint32_t err;
        int go[2], st, baseline, fd;

        if (geteuid() != 0) {
                printf("SKIP: test_posted_and_waits_are_pooled needs root\n");
                return;
        }
        test_daemon_start(&D, (const char *const[]){ "--socket-mode=0666",
                                                    "--max-posted-per-user=80",
                                                    "--max-posted-unprivileged=100",
                                                    "--max-waits-per-user=4",
                                                    "--max-waits-unprivileged=6", NULL });
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(pipe(go), 0);
        pa = start_loader(USER_A, go[0], &a);
        pb = start_loader(USER_B, go[0], &b);
        ck_assert_int_eq(a.posted, 80);
        ck_assert_int_eq(a.post_err, EDQUOT);
        ck_assert_int_eq(a.waits, 4);
        ck_assert_uint_eq(a.wait_err, EDQUOT);
        ck_assert_int_eq(b.posted, 20);
        ck_assert_int_eq(b.post_err, EDQUOT);
        ck_assert_int_eq(b.waits, 2);
        ck_assert_uint_eq(b.wait_err, EDQUOT);

        /* Root is not counted in the pool: it posts and parks as its own limits allow. */
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (int i = 0; i < 10; i++)
                ck_assert_int_eq(sn_port_post(p, 7, 0, 0), 0);
        fd = raw_hello(D.path);
        ck_assert_int_eq(park_until_refused(fd, raw_port_create(fd, 2, NULL), 3, &err), 3);
        ck_assert_uint_eq(err, 0);

        ck_assert_int_eq(ctl("status", out, sizeof(out)), 0);
        printf("%s", out);
        ck_assert_ptr_nonnull(strstr(out, "100 of 100 posted packet(s)"));
        ck_assert_ptr_nonnull(strstr(out, "6 of 6 waiting call(s)"));
        pool_counts(&posted, &waits, &staged);
        ck_assert_int_eq(posted, 100);
        ck_assert_int_eq(waits, 6);
        ck_assert_int_eq(staged, 0);

        /* A re-exec rebuilds the pool from what it restores, through the same charges. */
        ck_assert_int_eq(ctl("reexec", out, sizeof(out)), 0);
        pool_counts(&posted, &waits, &staged);
        ck_assert_int_eq(posted, 100);
        ck_assert_int_eq(waits, 6);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, (uint32_t)scaled(5000)), 1);
        ck_assert_uint_eq(e.key, 7);

        /* The users go: the pool is empty again. */
        ck_assert_int_eq(write(go[1], "gg", 2), 2);
        ck_assert_int_eq(waitpid(pa, &st, 0), pa);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        ck_assert_int_eq(waitpid(pb, &st, 0), pb);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(fd);
        sn_port_close(p);
        sn_conn_close(c);
        close(go[0]);
        close(go[1]);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, scaled(5000)), baseline);
        pool_counts(&posted, &waits, &staged);
        ck_assert_int_eq(posted, 0);
        ck_assert_int_eq(waits, 0);
        ck_assert_int_eq(staged, 0);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* Registers n socket pairs' ends on port p (the local copies closed: the daemon holds its own). */
static int register_n(sn_port_t *p, int n)
{
        for (int i = 0; i < n; i++) {
                int sp[2];
                sn_registration_t r = { .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                        .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL };

                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                        return -errno;
                r.fd = sp[0];
                if (sn_port_process(p, &r, 1, NULL, 0, 0) < 0 || r.result < 0)
                        return -EIO;
                close(sp[0]);
                close(sp[1]);
        }
        return 0;
}

/* Sends PORT_TAKE for up to max registrations of port on the raw connection fd. */
static void send_take(int fd, uint32_t id, uint32_t port, uint32_t max)
{
        uint8_t buf[64];
        struct snw_port_take tk = { .port = port, .max = max };

        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, id, 0, 0, 0, 0), &tk);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
}

/* Sends PORT_TAKE for every registration it may of the port named "take" on a new raw
 * connection, never to read the reply, and waits until the daemon handled it: then the port
 * named mark, asked for after it on the same connection, exists for m.  Returns the connection. */
static int take_unread(sn_conn_t *m, const char *mark)
{
        static uint8_t buf[512];
        struct snw_port_create body = { 0 };
        long long deadline = now_ms() + test_timeout_ms(5000);
        size_t len = strlen(mark);
        int fd = raw_hello2(D.path);
        sn_port_t *p;
        uint8_t *q;

        send_take(fd, 3, raw_port_open(fd, 2, "take"), SN_PROTO_MAX_FDS);
        q = snw_port_create_encode(sn_msg_begin(buf, SN_MSG_PORT_CREATE, 4, 0, 0, (uint32_t)len,
                                                0), &body);
        memcpy(q, mark, len);
        raw_send(fd, buf, (size_t)(q - buf) + len, NULL, 0);
        while (sn_port_open(m, mark, &p) < 0) {
                if (now_ms() > deadline)
                        _exit(5);
                usleep(5 * 1000);
        }
        sn_port_close(p);
        return fd;
}

/*
 * In a child: becomes uid, leaves TAKE_REGS registrations ownerless on a lingering port, takes
 * them on two connections that never read the replies, reports on report, holds everything
 * until go is readable, and lets the port go.
 */
enum { TAKE_REGS = 300 };
static void taker(uid_t uid, int report, int go)
{
        sn_port_options_t o = { .linger_ms = 60000 };
        sn_conn_t *c, *m;
        sn_port_t *p;
        int fd1, fd2;
        char ch;

        if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
            setresuid(uid, uid, uid) < 0)
                _exit(3);
        if (sn_conn_open(D.path, &c) < 0 || sn_port_create_named_ex(c, "take", &o, &p) < 0 ||
            register_n(p, TAKE_REGS) < 0)
                _exit(4);
        sn_port_close(p);
        sn_conn_close(c); /* ownerless now */
        if (sn_conn_open(D.path, &m) < 0)
                _exit(4);
        fd1 = take_unread(m, "mark1");
        fd2 = take_unread(m, "mark2");
        if (write(report, "r", 1) != 1 || read(go, &ch, 1) != 1)
                _exit(4);
        if (sn_port_open(m, "take", &p) < 0 || sn_port_set_linger(p, 0) < 0)
                _exit(7);
        close(fd1);
        close(fd2);
        sn_port_close(p);
        sn_conn_close(m);
        _exit(0);
}

/*
 * The daemon lets a quarter of its descriptor capacity wait in PORT_TAKE replies not yet read
 * (here 1024 / 4 = 256): another user's unread replies carry at most three quarters of it (192,
 * then none), and root still takes the registrations of its own lingering port.  Before, the
 * other user's replies took the whole budget (253, then 3) and root got EAGAIN until that user
 * read them.
 */
START_TEST(test_take_budget_keeps_roots_part)
{
        enum { ROOT_REGS = 10 };
        sn_port_options_t o = { .linger_ms = 60000 };
        sn_taken_socket_t t[ROOT_REGS];
        static char out[1 << 16];
        int go[2], report[2], st, baseline;
        sn_conn_t *c;
        sn_port_t *p;
        json_t *doc;
        pid_t pid;
        char ch;

        if (geteuid() != 0) {
                printf("SKIP: test_take_budget_keeps_roots_part needs root\n");
                return;
        }
        test_daemon_start_nofile(&D, (const char *const[]){ "--socket-mode=0666", NULL }, 1024);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(chmod(D.dir, 0711), 0);
        ck_assert_int_eq(pipe(go), 0);
        ck_assert_int_eq(pipe(report), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(report[0]);
                taker(USER_A, report[1], go[0]);
        }
        close(report[1]);
        ck_assert_int_eq(read(report[0], &ch, 1), 1);
        close(report[0]);
        ck_assert_int_eq(ctl("--json status", out, sizeof(out)), 0);
        doc = json_loads(out, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        printf("uid %u: %lld descriptor(s) in unread PORT_TAKE replies\n", (unsigned)USER_A,
               (long long)get(doc, "reserve", "unprivileged", "take_fds"));
        fflush(stdout);
        ck_assert_int_eq(get(doc, "reserve", "unprivileged", "take_fds"), 192);
        json_decref(doc);

        /* Root's own lingering port, left ownerless and taken over. */
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named_ex(c, "root-take", &o, &p), 0);
        ck_assert_int_eq(register_n(p, ROOT_REGS), 0);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "root-take", &p), 0);
        ck_assert_int_eq(sn_port_take_sockets(p, t, ROOT_REGS, NULL), ROOT_REGS);
        for (int i = 0; i < ROOT_REGS; i++)
                close(t[i].fd);

        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(go[0]);
        close(go[1]);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, scaled(5000)), baseline);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* Capacity C, reserve R = max(64, C/16), pool P = C - R; per user: sockets P/2, connections and
 * ports P/8 (at most 1024). */
START_TEST(test_defaults_are_fractions_of_the_pool)
{
        static const struct {
                uint64_t capacity;
                uint32_t reserve, sockets, conns;
        } want[] = {
                { 512, 64, 224, 56 },
                { 4096, 256, 1920, 480 },
                { 65536, 4096, 30720, 1024 },
        };
        struct settings none;
        struct limits l;
        int level;
        size_t i;

        settings_init(&none);
        for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                settings_resolve(&none, &none, want[i].capacity, &l, &level);
                ck_assert_uint_eq(l.reserve_fds, want[i].reserve);
                ck_assert_uint_eq(limits_fd_pool(&l, want[i].capacity),
                                  want[i].capacity - want[i].reserve);
                ck_assert_uint_eq(l.max_sockets_per_user, want[i].sockets);
                ck_assert_uint_eq(l.max_connections_per_user, want[i].conns);
                ck_assert_uint_eq(l.max_ports_per_user, want[i].conns);
                /* One user at every default stays within the pool. */
                ck_assert_uint_le((uint64_t)l.max_sockets_per_user + l.max_connections_per_user +
                                          l.max_ports_per_user,
                                  limits_fd_pool(&l, want[i].capacity));
        }
        /* 4096 connections keep 256 for the privileged. */
        ck_assert_uint_eq(l.reserve_connections, 256);
        ck_assert_uint_eq(limits_conn_pool(&l), 4096 - 256);
        /* A reserve set by hand sizes the pool and the defaults. */
        for (i = 0; strcmp(settings_limit_options[i].name, "reserve-fds"); i++)
                ck_assert_uint_lt(i + 1, settings_nlimit_options);
        ck_assert_int_eq(settings_set_limit(&none, i, 1000), 0);
        settings_resolve(&none, &none, 5000, &l, &level);
        ck_assert_uint_eq(limits_fd_pool(&l, 5000), 4000);
        ck_assert_uint_eq(l.max_sockets_per_user, 2000);
        ck_assert_uint_eq(l.max_connections_per_user, 500);
        /* A reserve at or above the capacity leaves other users nothing. */
        settings_resolve(&none, &none, 900, &l, &level);
        ck_assert_uint_eq(limits_fd_pool(&l, 900), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("reserve");
        TCase *tc = tcase_create("reserve");
        TCase *unit = tcase_create("arithmetic");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_two_users_leave_roots_reserve);
        tcase_add_test(tc, test_connections_are_reserved_too);
        tcase_add_test(tc, test_posted_and_waits_are_pooled);
        tcase_add_test(tc, test_take_budget_keeps_roots_part);
        tcase_add_test(tc, test_full_table_answers_emfile);
        tcase_add_test(tc, test_closer_backlog_leaves_roots_reserve);
        tcase_add_test(unit, test_defaults_are_fractions_of_the_pool);
        suite_add_tcase(s, unit);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-reconnect.c - a session survives the end of a hand-started daemon (no service manager):
 * the library connects again to the same path and replays its ports, registrations and parked
 * waits (docs/reconnect.md).  Real daemons are killed (-9) or stopped (SIGTERM) and started
 * again on the same path; the client talks only through the library.
 *
 * Prints a TIME: line: from kill -9 to the first notification delivered on the new daemon (the
 * new daemon's start-up included).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
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
#include "socknotify/winsock.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"

#define NSOCK 50
#define SN_MAX_LL(a, b) ((a) > (b) ? (a) : (b))

static struct test_daemon D;

static void setup(void)
{
        /* The expiry test sets its own resume window. */
        test_daemon_start_resumable(&D);
}

static void teardown(void)
{
        test_daemon_stop_if_running(&D);
}

/* Ends the daemon with sig and starts a new one on the same path.  Returns when the new one
 * accepts connections (ms); *ret_killed is when the old one was signalled. */
static long long restart(int sig, long long *ret_killed)
{
        int st;

        if (ret_killed)
                *ret_killed = now_ms();
        ck_assert_int_eq(kill(D.pid, sig), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        if (sig == SIGTERM)
                ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
        D.pid = 0;
        /* The same directory and path: the new daemon replaces a stale socket file. */
        test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);
        return now_ms();
}

/* A number of the daemon's status document, through a connection of its own. */
static long long status(const char *key)
{
        sn_conn_t *c;
        long long v;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        v = test_status_number(c, key);
        sn_conn_close(c);
        return v;
}

/* Waits until the daemon's status says key == want. */
static void wait_status(const char *key, long long want)
{
        long long deadline = now_ms() + test_timeout_ms(10000);

        while (status(key) != want) {
                ck_assert_msg(now_ms() < deadline, "%s never became %lld", key, want);
                usleep(2000);
        }
}

/* ---- Win32: 50 registrations and a parked GetQueuedCompletionStatusEx ----------------------- */

struct parked {
        HANDLE port;
        OVERLAPPED_ENTRY e[NSOCK];
        ULONG n;
        BOOL ok;
        DWORD err;
        long long returned;
};

static void *park(void *arg)
{
        struct parked *pk = arg;

        pk->ok = GetQueuedCompletionStatusEx(pk->port, pk->e, NSOCK, &pk->n, INFINITE, FALSE);
        pk->err = pk->ok ? 0 : GetLastError();
        pk->returned = now_ms();
        return NULL;
}

static void win32_restart(int sig, const char *what)
{
        SOCK_NOTIFY_REGISTRATION r[NSOCK];
        int cl[NSOCK], sv[NSOCK];
        bool seen[NSOCK + 1] = { false };
        struct parked pk = { 0 };
        unsigned got = 0;
        long long killed, ready;
        pthread_t t;
        WSADATA wsa;
        HANDLE port;

        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &wsa), 0);
        port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_nonnull(port);
        for (int i = 0; i < NSOCK; i++) {
                tcp_pair(&cl[i], &sv[i]);
                r[i] = (SOCK_NOTIFY_REGISTRATION){
                        .socket = (SOCKET)cl[i],
                        .completionKey = (void *)(uintptr_t)(i + 1),
                        .eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN,
                        .operation = SOCK_NOTIFY_OP_ENABLE,
                        .triggerFlags = SOCK_NOTIFY_TRIGGER_LEVEL | SOCK_NOTIFY_TRIGGER_PERSISTENT,
                };
        }
        ck_assert_uint_eq(ProcessSocketNotifications(port, NSOCK, r, 0, 0, NULL, NULL),
                          ERROR_SUCCESS);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_uint_eq(r[i].registrationResult, ERROR_SUCCESS);

        pk.port = port;
        ck_assert_int_eq(pthread_create(&t, NULL, park, &pk), 0);
        wait_status("waiters", 1); /* parked on the daemon, not merely started */
        ready = restart(sig, &killed);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_int_eq(send(sv[i], "x", 1, 0), 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_msg(pk.ok, "the parked wait failed: error %lu", (unsigned long)pk.err);
        ck_assert_uint_gt(pk.n, 0);
        printf("TIME: %s -> client served again: %lld ms (new daemon accepting after %lld ms, "
               "then %lld ms to resume, replay %d registrations and deliver)\n",
               what, pk.returned - killed, ready - killed, pk.returned - ready, NSOCK);
        fflush(stdout);
        for (ULONG i = 0; i < pk.n; i++) {
                uintptr_t k = pk.e[i].lpCompletionKey;

                ck_assert(k >= 1 && k <= NSOCK);
                got += !seen[k];
                seen[k] = true;
        }
        /* The rest with the same handle, from this thread. */
        while (got < NSOCK) {
                OVERLAPPED_ENTRY e[NSOCK];
                ULONG n = 0;

                ck_assert_msg(GetQueuedCompletionStatusEx(port, e, NSOCK, &n,
                                                          (DWORD)test_timeout_ms(5000), FALSE),
                              "only %u of %d keys arrived (error %lu)", got, NSOCK,
                              (unsigned long)GetLastError());
                for (ULONG i = 0; i < n; i++) {
                        uintptr_t k = e[i].lpCompletionKey;

                        ck_assert(k >= 1 && k <= NSOCK);
                        got += !seen[k];
                        seen[k] = true;
                }
        }
        ck_assert_int_eq(status("registrations"), NSOCK);
        ck_assert(CloseHandle(port));
        for (int i = 0; i < NSOCK; i++) {
                close(cl[i]);
                close(sv[i]);
        }
        ck_assert_int_eq(WSACleanup(), 0);
}

START_TEST(test_win32_kill9)
{
        win32_restart(SIGKILL, "kill -9");
}
END_TEST

START_TEST(test_win32_sigterm)
{
        win32_restart(SIGTERM, "SIGTERM");
}
END_TEST

/* ---- no daemon comes back: the documented error within the bound -------------------------- */

struct native_wait {
        sn_port_t *port;
        int r;
};

static void *dequeue_forever(void *arg)
{
        struct native_wait *w = arg;
        sn_entry_t e;

        w->r = sn_port_dequeue(w->port, &e, 1, SN_INFINITE);
        return NULL;
}

START_TEST(test_expiry)
{
        struct native_wait w = { 0 };
        long long t0, bound = test_timeout_ms(300 + 3000);
        sn_conn_t *c;
        sn_entry_t e;
        pthread_t t;
        int st;

        setenv("SOCKNOTIFY_RECONNECT_MS", "300", 1);
        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &w.port), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, dequeue_forever, &w), 0);
        wait_status("waiters", 1);
        t0 = now_ms();
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(w.r, -ECONNRESET);
        ck_assert_msg(now_ms() - t0 < bound, "%lld ms", now_ms() - t0);
        /* Lost for good: later calls fail at once. */
        t0 = now_ms();
        ck_assert_int_eq(sn_port_dequeue(w.port, &e, 1, 0), -ECONNRESET);
        ck_assert_int_eq(sn_port_post(w.port, 1, 0, 0), -ECONNRESET);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(1000));
        sn_port_close(w.port);
        sn_conn_close(c);
        unlink(D.path);
        rmdir(D.dir);
}
END_TEST

/* The same through the Win32 layer, with no wait in progress: the next call notices.  While
 * the resume goes on behind them, 10 ms waits return WAIT_TIMEOUT by their timeout; once the
 * window passed, the port's calls fail with ERROR_INVALID_HANDLE. */
START_TEST(test_expiry_win32)
{
        long long t0, t;
        OVERLAPPED_ENTRY e;
        ULONG n;
        WSADATA wsa;
        HANDLE port;
        int st;
        BOOL ok;

        setenv("SOCKNOTIFY_RECONNECT_MS", "300", 1);
        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &wsa), 0);
        port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_nonnull(port);
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        t0 = now_ms();
        for (;;) {
                t = now_ms();
                ok = GetQueuedCompletionStatusEx(port, &e, 1, &n, 10, FALSE);
                ck_assert(!ok);
                ck_assert_int_lt(now_ms() - t, 10 + test_timeout_ms(500));
                if (GetLastError() != WAIT_TIMEOUT)
                        break;
        }
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(300 + 3000));
        ck_assert(!PostQueuedCompletionStatus(port, 0, 1, NULL));
        CloseHandle(port);
        WSACleanup();
        unlink(D.path);
        rmdir(D.dir);
}
END_TEST


/* ---- a listener that accepts and never answers: the resume gives up at its deadline -------- */

struct timed_wait {
        sn_port_t *port;
        uint32_t timeout;
        int r;
        sem_t done;
};

static void *dequeue_once(void *arg)
{
        struct timed_wait *w = arg;
        sn_entry_t e;

        w->r = sn_port_dequeue(w->port, &e, 1, w->timeout);
        sem_post(&w->done);
        return NULL;
}

/* Whether w's thread returned within ms. */
static bool returned_within(struct timed_wait *w, long long ms)
{
        struct timespec at;

        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_sec += ms / 1000;
        at.tv_nsec += (ms % 1000) * 1000000;
        if (at.tv_nsec >= 1000000000) {
                at.tv_sec++;
                at.tv_nsec -= 1000000000;
        }
        while (sem_timedwait(&w->done, &at) < 0)
                if (errno != EINTR)
                        return false;
        return true;
}

/* The path now has a listener that never accepts (as the shipped socket unit while its
 * service is down): the kernel completes connect() from its backlog, and the HELLO is never
 * answered.  With SOCKNOTIFY_RECONNECT_MS=500 a wait without end fails with ECONNRESET soon after
 * 500 ms (before: it stayed blocked in the handshake's recvmsg()). */
START_TEST(test_silent_listener)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timed_wait w = { .timeout = SN_INFINITE };
        long long t0, bound = test_timeout_ms(500 + 3000);
        sn_conn_t *c;
        pthread_t t;
        int l, st;

        setenv("SOCKNOTIFY_RECONNECT_MS", "500", 1);
        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &w.port), 0);
        ck_assert_int_eq(sem_init(&w.done, 0, 0), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, dequeue_once, &w), 0);
        wait_status("waiters", 1);
        l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(l, 0);
        t0 = now_ms();
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        ck_assert_int_eq(unlink(D.path), 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", D.path);
        ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(l, 16), 0);
        ck_assert_msg(returned_within(&w, bound),
                      "the resume still waited for the silent listener after %lld ms",
                      now_ms() - t0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(w.r, -ECONNRESET);
        printf("TIME: silent listener, SOCKNOTIFY_RECONNECT_MS=500: lost after %lld ms\n",
               now_ms() - t0);
        sn_port_close(w.port);
        sn_conn_close(c);
        close(l);
        unlink(D.path);
        rmdir(D.dir);
}
END_TEST

/* ---- while the daemon is away, waits return by their timeouts ------------------------------ */

/* A daemon killed and started again AWAY ms later, no service manager.  A loop of 100 ms
 * GetQueuedCompletionStatusEx calls returns WAIT_TIMEOUT by each timeout all along (before:
 * the first call noticed the end and made the resume itself, for the whole time the daemon was
 * away), and the next one after the resume gets the entry of a readable socket registered
 * before.  A wait without end on another port keeps waiting and gets its entry from the new
 * daemon. */
struct forever {
        HANDLE port;
        OVERLAPPED_ENTRY e;
        ULONG n;
        BOOL ok;
};

static void *gqcs_forever(void *arg)
{
        struct forever *f = arg;

        f->ok = GetQueuedCompletionStatusEx(f->port, &f->e, 1, &f->n, INFINITE, FALSE);
        return NULL;
}

/* Starts the daemon again after away ms (the time it is away is what the test is about), in a
 * thread of its own, so that a wait that does not return cannot keep it away.  The daemon dies
 * with the thread that started it (PR_SET_PDEATHSIG), so the thread stops it itself when told
 * (done). */
struct starter {
        long long away;
        int starting;   /* the daemon is being started: it may serve before start-up returns */
        long long back; /* when its start-up returned (read with __atomic) */
        sem_t done;
        int status;
};

static void *start_later(void *arg)
{
        struct starter *sr = arg;

        usleep((useconds_t)sr->away * 1000);
        __atomic_store_n(&sr->starting, 1, __ATOMIC_RELEASE);
        test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);
        __atomic_store_n(&sr->back, now_ms(), __ATOMIC_RELEASE);
        while (sem_wait(&sr->done) < 0)
                ;
        sr->status = test_daemon_stop(&D);
        return NULL;
}

START_TEST(test_waits_keep_timeouts_while_away)
{
        const long long slack = test_timeout_ms(400), away = 2500 + 2 * slack;
        SOCK_NOTIFY_REGISTRATION r[2];
        struct forever f = { 0 };
        struct starter sr = { .away = away };
        long long killed, back, worst = 0, t, gap;
        unsigned timeouts = 0;
        int cl[2], sv[2], st;
        OVERLAPPED_ENTRY e;
        HANDLE port[2];
        WSADATA wsa;
        pthread_t th, ts;
        ULONG n;

        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &wsa), 0);
        for (int i = 0; i < 2; i++) {
                port[i] = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
                ck_assert_ptr_nonnull(port[i]);
                tcp_pair(&cl[i], &sv[i]);
                r[i] = (SOCK_NOTIFY_REGISTRATION){
                        .socket = (SOCKET)cl[i],
                        .completionKey = (void *)(uintptr_t)(i + 1),
                        .eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN,
                        .operation = SOCK_NOTIFY_OP_ENABLE,
                        .triggerFlags = SOCK_NOTIFY_TRIGGER_LEVEL | SOCK_NOTIFY_TRIGGER_PERSISTENT,
                };
                ck_assert_uint_eq(ProcessSocketNotifications(port[i], 1, &r[i], 0, 0, NULL, NULL),
                                  ERROR_SUCCESS);
                ck_assert_uint_eq(r[i].registrationResult, ERROR_SUCCESS);
        }
        f.port = port[1];
        ck_assert_int_eq(pthread_create(&th, NULL, gqcs_forever, &f), 0);
        wait_status("waiters", 1);
        /* Readable, reported only by a daemon: the new one, after the resume. */
        ck_assert_int_eq(write(sv[0], "x", 1), 1);
        killed = now_ms();
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        ck_assert_int_eq(sem_init(&sr.done, 0, 0), 0);
        ck_assert_int_eq(pthread_create(&ts, NULL, start_later, &sr), 0);
        for (;;) {
                t = now_ms();
                BOOL ok = GetQueuedCompletionStatusEx(port[0], &e, 1, &n, 100, FALSE);

                gap = now_ms() - t;
                back = __atomic_load_n(&sr.back, __ATOMIC_ACQUIRE);
                if (ok) {
                        /* The resume may reach the new daemon before the helper's start-up
                         * checks return (they count its descriptors): started is enough. */
                        ck_assert_msg(__atomic_load_n(&sr.starting, __ATOMIC_ACQUIRE),
                                      "an entry while no daemon ran");
                        ck_assert_uint_eq(n, 1);
                        ck_assert_uint_eq((uintptr_t)e.lpCompletionKey, 1);
                        break;
                }
                ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
                timeouts++;
                worst = SN_MAX_LL(worst, gap);
                ck_assert_msg(gap < 100 + slack,
                              "a 100 ms wait returned after %lld ms (%u returned by their "
                              "timeout before it; daemon %s)",
                              gap, timeouts - 1, back ? "back" : "away");
                ck_assert_msg(!back || now_ms() - back < test_timeout_ms(10000),
                              "no entry %lld ms after the daemon came back",
                              now_ms() - back);
        }
        while (!(back = __atomic_load_n(&sr.back, __ATOMIC_ACQUIRE)))
                usleep(1000); /* the start-up's checks end (the test's own timeout bounds it) */
        ck_assert_int_eq(write(sv[1], "y", 1), 1);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert(f.ok);
        ck_assert_uint_eq((uintptr_t)f.e.lpCompletionKey, 2);
        printf("TIME: daemon away %lld ms: %u waits of 100 ms returned WAIT_TIMEOUT, worst %lld "
               "ms; the new daemon's start-up returned %lld ms before this line\n",
               back - killed, timeouts, worst, now_ms() - back);
        for (int i = 0; i < 2; i++) {
                CloseHandle(port[i]);
                close(cl[i]);
                close(sv[i]);
        }
        WSACleanup();
        sem_post(&sr.done);
        ck_assert_int_eq(pthread_join(ts, NULL), 0);
        ck_assert_int_eq(sr.status, 0);
}
END_TEST

/* ---- another user's daemon on the path ----------------------------------------------------- */

START_TEST(test_other_user_refused)
{
        char why[256], dir[] = "/tmp/sn-link-XXXXXX", link_path[128], tmp[160];
        struct test_daemon other;
        sn_registration_t g;
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e;
        int cl, sv, st, base, r;
        long long t0;
        uid_t uid;

        if (!test_private_uid(&uid, why, sizeof(why))) {
                printf("SKIP: %s\n", why);
                return;
        }
        /* The client knows the path through a link, which the test turns to the other
         * user's daemon: "another user took the path over while no daemon ran". */
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(link_path, sizeof(link_path), "%s/sock", dir);
        ck_assert_int_eq(symlink(D.path, link_path), 0);
        ck_assert_int_eq(sn_conn_open(link_path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        tcp_pair(&cl, &sv);
        g = (sn_registration_t){ .fd = cl, .filter = SN_EVENT_IN, .op = SN_OP_ENABLE,
                                 .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT, .key = 7 };
        ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g.result, 0);

        test_daemon_start_as(&other, NULL, uid);
        base = test_daemon_fds(&other);
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        snprintf(tmp, sizeof(tmp), "%s/sock.new", dir);
        ck_assert_int_eq(symlink(other.path, tmp), 0);
        ck_assert_int_eq(rename(tmp, link_path), 0);

        /* A wait of 0 ms returns at once while the resume looks behind it (-ETIMEDOUT); then
         * the session is lost. */
        t0 = now_ms();
        while ((r = sn_port_dequeue(port, &e, 1, 0)) == -ETIMEDOUT)
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "never refused");
        ck_assert_int_eq(r, -EACCES);
        ck_assert_int_eq(sn_port_post(port, 1, 0, 0), -EACCES);
        /* It received nothing, and the probe connection is gone. */
        ck_assert_int_eq(test_daemon_wait_fds(&other, base, 2000), base);
        sn_port_close(port);
        sn_conn_close(c);
        close(cl);
        close(sv);
        ck_assert_int_eq(test_daemon_stop(&other), 0);
        unlink(link_path);
        rmdir(dir);
        unlink(D.path);
        rmdir(D.dir);
}
END_TEST

/* ---- a registration whose socket the application closed is not replayed; a disabled one is
 * replayed disabled ---------------------------------------------------------------------------- */

START_TEST(test_closed_not_replayed)
{
        int a_cl, a_sv, b_cl, b_sv, c_cl, c_sv, n_cl, n_sv, d_cl, d_sv;
        sn_registration_t g[4];
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e[4];
        int n;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        tcp_pair(&a_cl, &a_sv);
        tcp_pair(&b_cl, &b_sv);
        tcp_pair(&c_cl, &c_sv);
        tcp_pair(&d_cl, &d_sv);
        for (int i = 0; i < 4; i++)
                g[i] = (sn_registration_t){ .fd = i == 0 ? a_cl : i == 1 ? b_cl : i == 2 ? c_cl : d_cl,
                                            .filter = SN_EVENT_IN, .op = SN_OP_ENABLE,
                                            .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT,
                                            .key = 100 + (uint64_t)i };
        ck_assert_int_eq(sn_port_process(port, g, 4, NULL, 0, 0), 0);
        g[3].op = SN_OP_DISABLE;
        ck_assert_int_eq(sn_port_process(port, &g[3], 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g[3].result, 0);
        ck_assert_int_eq(status("registrations"), 4);

        /* B: closed with plain close().  C's number: another socket now. */
        close(b_cl);
        tcp_pair(&n_cl, &n_sv);
        ck_assert_int_eq(dup2(n_cl, c_cl), c_cl);
        close(n_cl);
        restart(SIGKILL, NULL);

        ck_assert_int_eq(send(a_sv, "x", 1, 0), 1);
        ck_assert_int_eq(send(c_sv, "x", 1, 0), 1);
        ck_assert_int_eq(send(n_sv, "x", 1, 0), 1);
        ck_assert_int_eq(send(d_sv, "x", 1, 0), 1);
        n = sn_port_dequeue(port, e, 4, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 100);
        /* A and D were made again, D disabled: the daemon holds two registrations of ours. */
        ck_assert_int_eq(status("registrations"), 2);
        /* Enabled again, D reports the byte that waited. */
        g[3].op = SN_OP_ENABLE;
        do {
                n = sn_port_process(port, &g[3], 1, e, 4, (uint32_t)test_timeout_ms(5000));
                ck_assert_int_gt(n, 0);
                g[3].op = SN_OP_NONE;
        } while (e[0].key == 100 && n == 1);
        for (int i = 0; i < n; i++)
                ck_assert(e[i].key == 100 || e[i].key == 103);
        sn_port_close(port);
        sn_conn_close(c);
        close(a_cl);
        close(a_sv);
        close(b_sv);
        close(c_cl);
        close(c_sv);
        close(n_sv);
        close(d_cl);
        close(d_sv);
}
END_TEST

/* ---- the table of registrations: one socket through two descriptors, removals ------------- */

/* The table keeps a registration per socket (as the daemon does), whatever descriptor named it
 * last; removals in the middle of it keep the others reachable.  Socket 0 is registered
 * through a_cl (key 1000), then through its duplicate (key 1001, ignored: rule 4 keeps the
 * first key): one registration, replayed with key 1000 through the duplicate after a_cl was
 * closed.  Of NREG others every third is removed. */
#define NREG 40

START_TEST(test_table_identity)
{
        int a_cl, a_sv, dup_fd, cl[NREG], sv[NREG];
        sn_registration_t g;
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e[NREG + 2];
        bool seen[NREG + 2] = { false };
        int kept = 0, got = 0;
        long long deadline;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        tcp_pair(&a_cl, &a_sv);
        g = (sn_registration_t){ .fd = a_cl, .filter = SN_EVENT_IN, .op = SN_OP_ENABLE,
                                 .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT,
                                 .key = 1000 };
        ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g.result, 0);
        dup_fd = dup(a_cl);
        ck_assert_int_ge(dup_fd, 0);
        g.fd = dup_fd;
        g.key = 1001;
        ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g.result, 0);
        for (int i = 0; i < NREG; i++) {
                tcp_pair(&cl[i], &sv[i]);
                g = (sn_registration_t){ .fd = cl[i], .filter = SN_EVENT_IN, .op = SN_OP_ENABLE,
                                         .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT,
                                         .key = (uint64_t)i };
                ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(g.result, 0);
        }
        for (int i = 0; i < NREG; i++) {
                if (i % 3) {
                        kept++;
                        continue;
                }
                g = (sn_registration_t){ .fd = cl[i], .op = SN_OP_REMOVE };
                ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(g.result, 0);
        }
        /* (The daemon counts a removed registration until its REMOVE entry is dequeued: the
         * count is checked on the new daemon only.) */
        close(a_cl);
        restart(SIGKILL, NULL);

        ck_assert_int_eq(send(a_sv, "x", 1, 0), 1);
        for (int i = 0; i < NREG; i++)
                ck_assert_int_eq(send(sv[i], "x", 1, 0), 1);
        /* Level and persistent: each kept socket is reported again until read; count each
         * key once. */
        deadline = now_ms() + test_timeout_ms(10000);
        while (got < kept + 1) {
                int n = sn_port_dequeue(port, e, NREG + 2, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                for (int k = 0; k < n; k++) {
                        ck_assert_msg(e[k].key == 1000 || (e[k].key < NREG && e[k].key % 3),
                                      "key %llu was not kept", (unsigned long long)e[k].key);
                        if (e[k].key == 1000 && !seen[NREG]) {
                                seen[NREG] = true;
                                got++;
                        } else if (e[k].key < NREG && !seen[e[k].key]) {
                                seen[e[k].key] = true;
                                got++;
                        }
                }
                ck_assert(now_ms() < deadline);
        }
        ck_assert_int_eq(status("registrations"), kept + 1);
        sn_port_close(port);
        sn_conn_close(c);
        close(dup_fd);
        close(a_sv);
        for (int i = 0; i < NREG; i++) {
                close(cl[i]);
                close(sv[i]);
        }
}
END_TEST

/* ---- a fired ONESHOT registration stays disarmed (rule L7) ------------------------------- */

/* Keys: 1, ONESHOT, fired before the daemon ended (its entry dequeued, its byte left unread);
 * 2, ONESHOT, armed (nothing yet); 3, LEVEL, the marker.  After the resume 1 reports nothing
 * until enabled again (no other thread may be handed the socket the first still handles),
 * while 2 reports what arrives. */
START_TEST(test_fired_oneshot_stays_disarmed)
{
        int cl[3], sv[3];
        sn_registration_t g[3];
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e[4];
        bool seen2 = false, seen3 = false;
        long long deadline;
        int n;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        for (int i = 0; i < 3; i++) {
                tcp_pair(&cl[i], &sv[i]);
                g[i] = (sn_registration_t){ .fd = cl[i], .filter = SN_EVENT_IN,
                                            .op = SN_OP_ENABLE, .key = 1 + (uint64_t)i,
                                            .trigger = i < 2 ? SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT
                                                             : SN_TRIGGER_LEVEL };
        }
        ck_assert_int_eq(sn_port_process(port, g, 3, NULL, 0, 0), 0);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(g[i].result, 0);
        ck_assert_int_eq(send(sv[0], "x", 1, 0), 1);
        n = sn_port_dequeue(port, e, 4, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 1);
        restart(SIGKILL, NULL);

        ck_assert_int_eq(send(sv[1], "x", 1, 0), 1);
        ck_assert_int_eq(send(sv[2], "x", 1, 0), 1);
        deadline = now_ms() + test_timeout_ms(10000);
        while (!seen2 || !seen3) {
                n = sn_port_dequeue(port, e, 4, (uint32_t)test_timeout_ms(5000));
                ck_assert_int_gt(n, 0);
                for (int k = 0; k < n; k++) {
                        ck_assert_msg(e[k].key != 1, "the fired ONESHOT registration was armed again");
                        seen2 |= e[k].key == 2;
                        seen3 |= e[k].key == 3;
                }
                ck_assert(now_ms() < deadline);
        }
        /* The marker is level-triggered and unread: it comes again, 1 still does not. */
        n = sn_port_dequeue(port, e, 4, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_gt(n, 0);
        for (int k = 0; k < n; k++)
                ck_assert_uint_ne(e[k].key, 1);
        /* All three are still registered; enabled again, 1 reports its unread byte. */
        ck_assert_int_eq(status("registrations"), 3);
        ck_assert_int_eq(recv(cl[2], &(char){ 0 }, 1, 0), 1); /* the marker stops */
        g[0].op = SN_OP_ENABLE;
        ck_assert_int_eq(sn_port_process(port, &g[0], 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g[0].result, 0);
        deadline = now_ms() + test_timeout_ms(10000);
        for (bool seen1 = false; !seen1;) {
                n = sn_port_dequeue(port, e, 4, (uint32_t)test_timeout_ms(5000));
                ck_assert_int_gt(n, 0);
                for (int k = 0; k < n; k++)
                        seen1 |= e[k].key == 1;
                ck_assert(now_ms() < deadline);
        }
        sn_port_close(port);
        sn_conn_close(c);
        for (int i = 0; i < 3; i++) {
                close(cl[i]);
                close(sv[i]);
        }
}
END_TEST

/* Many ONESHOT registrations, some removed (the library's records move), some fired, some of
 * those re-armed by registration handle (sn_port_process_ex(): the library follows it without
 * fstat): after the resume exactly the armed ones report, whatever the order of the records. */
START_TEST(test_fired_oneshots_many)
{
        enum { N = 300 };
        static int cl[N], sv[N];
        static bool expect[N], seen[N];
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_ex_t e[64];
        int want = 0, got = 0;
        long long deadline;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        for (int i = 0; i < N; i++) {
                sn_registration_t g = { .filter = SN_EVENT_IN, .op = SN_OP_ENABLE,
                                        .key = 5000 + (uint64_t)i,
                                        .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };

                tcp_pair(&cl[i], &sv[i]);
                g.fd = cl[i];
                ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(g.result, 0);
        }
        for (int i = 0; i < N; i += 5) {
                sn_registration_t g = { .fd = cl[i], .op = SN_OP_REMOVE };

                ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(g.result, 0);
        }
        /* Fire every even one still there; re-arm those divisible by 4 by handle, once their
         * byte is read (so that they do not fire again at once). */
        for (int i = 0; i < N; i += 2)
                if (i % 5)
                        ck_assert_int_eq(send(sv[i], "x", 1, 0), 1);
        for (int fired = 0, removes = 0; fired < (N / 2) - (N / 10) || removes < N / 5;) {
                int n = sn_port_process_ex(port, NULL, 0, e, 64, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                for (int k = 0; k < n; k++) {
                        int i = (int)(e[k].entry.key - 5000);

                        ck_assert(i >= 0 && i < N);
                        if (e[k].entry.events & SN_EVENT_REMOVE) {
                                removes++;
                                continue;
                        }
                        ck_assert_int_eq(i % 2, 0);
                        fired++;
                        if (i % 4)
                                continue;
                        ck_assert_int_eq(recv(cl[i], &(char){ 0 }, 1, 0), 1);
                        sn_registration_ex_t r = {
                                .reg = { .fd = cl[i], .op = SN_OP_ENABLE, .filter = SN_EVENT_IN,
                                         .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT },
                                .handle = e[k].handle,
                        };
                        ck_assert_int_eq(sn_port_process_ex(port, &r, 1, NULL, 0, 0), 0);
                        ck_assert_int_eq(r.reg.result, 0);
                }
        }
        for (int i = 0; i < N; i++) {
                expect[i] = i % 5 && (i % 2 || i % 4 == 0);
                want += expect[i];
        }
        restart(SIGKILL, NULL);

        for (int i = 0; i < N; i++)
                if (i % 5)
                        ck_assert_int_eq(send(sv[i], "y", 1, 0), 1);
        deadline = now_ms() + test_timeout_ms(10000);
        while (got < want) {
                int n = sn_port_process_ex(port, NULL, 0, e, 64, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                for (int k = 0; k < n; k++) {
                        int i = (int)(e[k].entry.key - 5000);

                        ck_assert(i >= 0 && i < N);
                        ck_assert_msg(expect[i], "key %d reported: it was removed or fired", i);
                        ck_assert_msg(!seen[i], "key %d reported twice", i);
                        seen[i] = true;
                        got++;
                }
                ck_assert(now_ms() < deadline);
        }
        ck_assert_int_eq(sn_port_process_ex(port, NULL, 0, e, 64, 100), -ETIMEDOUT);
        sn_port_close(port);
        sn_conn_close(c);
        for (int i = 0; i < N; i++) {
                close(cl[i]);
                close(sv[i]);
        }
}
END_TEST

/* ---- an EDGE condition that holds is reported after a resume ----------------------------- */

/* Data arrives on an EDGE registration's socket while no daemon runs: the new daemon skips what
 * holds at ENABLE (rule 15), so the library reads it and the next dequeue reports IN. */
START_TEST(test_edge_holding_reported)
{
        int cl, sv, st;
        sn_registration_t g;
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e[2];
        int n;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        tcp_pair(&cl, &sv);
        g = (sn_registration_t){ .fd = cl, .filter = SN_EVENT_IN, .op = SN_OP_ENABLE,
                                 .trigger = SN_TRIGGER_EDGE | SN_TRIGGER_PERSISTENT, .key = 5 };
        ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g.result, 0);
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        ck_assert_int_eq(send(sv, "x", 1, 0), 1);
        test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);

        n = sn_port_dequeue(port, e, 2, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 5);
        ck_assert_uint_eq(e[0].kind, SN_ENTRY_SOCKET);
        ck_assert_uint_eq(e[0].events & SN_EVENT_IN, SN_EVENT_IN);
        /* Still registered on the new daemon: the next byte is a new edge. */
        ck_assert_int_eq(recv(cl, &(char){ 0 }, 1, 0), 1);
        ck_assert_int_eq(send(sv, "y", 1, 0), 1);
        n = sn_port_dequeue(port, e, 2, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 5);
        sn_port_close(port);
        sn_conn_close(c);
        close(cl);
        close(sv);
}
END_TEST

/* The socket is shut down locally for reading while no daemon runs: what the library owes the
 * next dequeue is IN (a receive returns at once) without HANGUP, as the daemon would report it
 * (row 50); the peer's close afterwards reports HANGUP. */
START_TEST(test_edge_local_shutdown_not_hangup)
{
        int cl, sv, st;
        sn_registration_t g;
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e[2];
        int n;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &port), 0);
        tcp_pair(&cl, &sv);
        g = (sn_registration_t){ .fd = cl, .filter = SN_EVENT_IN | SN_EVENT_HANGUP,
                                 .op = SN_OP_ENABLE,
                                 .trigger = SN_TRIGGER_EDGE | SN_TRIGGER_PERSISTENT, .key = 6 };
        ck_assert_int_eq(sn_port_process(port, &g, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(g.result, 0);
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        D.pid = 0;
        ck_assert_int_eq(shutdown(cl, SHUT_RD), 0);
        test_daemon_start_with_fds(&D, NULL, NULL, 0, NULL);

        n = sn_port_dequeue(port, e, 2, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 6);
        ck_assert_uint_eq(e[0].events, SN_EVENT_IN);
        close(sv);
        n = sn_port_dequeue(port, e, 2, (uint32_t)test_timeout_ms(5000));
        ck_assert_int_eq(n, 1);
        ck_assert_uint_eq(e[0].key, 6);
        ck_assert_uint_eq(e[0].events & SN_EVENT_HANGUP, SN_EVENT_HANGUP);
        sn_port_close(port);
        sn_conn_close(c);
        close(cl);
}
END_TEST

/* ---- a named port shared by two processes ---------------------------------------------------- */

/* The other process: opens the named port, says so, waits for "go" (the daemon was replaced),
 * then posts key 77 to the port. */
static int sharer(int ready, int go)
{
        sn_port_t *port;
        sn_conn_t *c;
        char b;

        if (sn_conn_open(NULL, &c) < 0 || sn_port_open(c, "shared", &port) < 0)
                return 1;
        if (write(ready, "r", 1) != 1 || read(go, &b, 1) != 1)
                return 2;
        if (sn_port_post(port, 77, 5, 0) < 0)
                return 3;
        if (write(ready, "p", 1) != 1 || read(go, &b, 1) != 1)
                return 4;
        sn_port_close(port);
        sn_conn_close(c);
        return 0;
}

START_TEST(test_named_shared)
{
        int ready[2], go[2], st;
        sn_port_t *port;
        sn_conn_t *c;
        sn_entry_t e;
        pid_t pid;
        char b;

        ck_assert_int_eq(sn_conn_open(NULL, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "shared", 1, &port), 0);
        ck_assert_int_eq(pipe(ready), 0);
        ck_assert_int_eq(pipe(go), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(sharer(ready[1], go[0]));
        ck_assert_int_eq(read(ready[0], &b, 1), 1);
        ck_assert_int_eq(status("ports"), 1);

        restart(SIGKILL, NULL);
        /* The other process resumes first (its post), then this one (its dequeue). */
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(read(ready[0], &b, 1), 1);
        ck_assert_int_eq(b, 'p');
        ck_assert_int_eq(sn_port_dequeue(port, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, 77);
        ck_assert_uint_eq(e.events, 5);
        ck_assert_int_eq(status("ports"), 1);
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sharer status %d", st);
        sn_port_close(port);
        sn_conn_close(c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("reconnect");
        TCase *tc = tcase_create("reconnect");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_win32_kill9);
        tcase_add_test(tc, test_win32_sigterm);
        tcase_add_test(tc, test_expiry);
        tcase_add_test(tc, test_expiry_win32);
        tcase_add_test(tc, test_silent_listener);
        tcase_add_test(tc, test_waits_keep_timeouts_while_away);
        tcase_add_test(tc, test_other_user_refused);
        tcase_add_test(tc, test_closed_not_replayed);
        tcase_add_test(tc, test_named_shared);
        tcase_add_test(tc, test_table_identity);
        tcase_add_test(tc, test_fired_oneshot_stays_disarmed);
        tcase_add_test(tc, test_fired_oneshots_many);
        tcase_add_test(tc, test_edge_holding_reported);
        tcase_add_test(tc, test_edge_local_shutdown_not_hangup);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

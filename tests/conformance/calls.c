/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * calls.c - sections A and B of the spec: call shape, parameter validation, return values,
 * timeouts and counts (rows 1-23).
 */
#include <sys/resource.h>

#include "tests/conformance/conformance.h"

static SOCK_NOTIFY_REGISTRATION enable_of(SOCKET s, uintptr_t key)
{
        return (SOCK_NOTIFY_REGISTRATION){ .socket = s, .completionKey = (PVOID)key,
                                           .eventFilter = F_IN, .operation = OP_ENABLE,
                                           .triggerFlags = LEVEL };
}

/* A TCP pair with one byte waiting on the server side. */
static void readable_pair(int *cl, int *sv)
{
        tcp_pair(cl, sv);
        ck_assert_int_eq(send(*cl, "x", 1, 0), 1);
        usleep(10000);
}

void conf_row_01(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e;

        readable_pair(&cl, &sv);
        /* Registrations only: success (never WAIT_TIMEOUT) though the socket is readable... */
        ck_assert_uint_eq(reg(P, sv, 1, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        /* ...and the packet is still there for the next dequeue. */
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.lpCompletionKey, 1);
        close(cl);
        closesocket(sv);
}

void conf_row_02(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;

        readable_pair(&cl, &sv);
        r = enable_of(sv, 2);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 10, 0, NULL, NULL),
                          WSAEINVAL);
        none(P, 50); /* not registered */
        close(cl);
        closesocket(sv);
}

void conf_row_03(int _i)
{
        SOCK_NOTIFY_REGISTRATION r = { 0 };
        OVERLAPPED_ENTRY e;
        UINT32 n;

        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, NULL, 0, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 0, 0, &e, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 0, 0, NULL, &n),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 0, 0, NULL, NULL), ERROR_SUCCESS);
}

void conf_row_04(int _i)
{
        OVERLAPPED_ENTRY e;
        UINT32 n;
        pid_t pid;
        int st;

        /* The entry array is required; the count pointer is not (case_psn_null_count). */
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 0, 1, NULL, &n), WSAEINVAL);
        /* Divergence: an unwritable (non-NULL) count pointer cannot be probed in user space;
         * writing through it faults, as in any library. */
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                /* A child has no handles of its parent (row 66): it makes its own port. */
                void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                HANDLE own = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);

                signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn it into abort */
                if (!own || !PostQueuedCompletionStatus(own, 0, 1, NULL))
                        _exit(2);
                ProcessSocketNotifications(own, 0, NULL, 0, 1, &e, (UINT32 *)page);
                _exit(0);
        }
        waitpid(pid, &st, 0);
        ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
}

void conf_row_05(int _i)
{
        union {
                SOCK_NOTIFY_REGISTRATION r[2];
                OVERLAPPED_ENTRY e[2];
        } u;
        UINT32 n;

        memset(&u, 0, sizeof(u));
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, u.r, 0, 1, u.e, &n),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 2, u.r, 0, 1, &u.e[1], &n),
                          WSAEINVAL);
}

void conf_row_06(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;
        HANDLE closed = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);

        ck_assert(CloseHandle(closed));
        readable_pair(&cl, &sv);
        r = enable_of(sv, 6);
        ck_assert_uint_eq(ProcessSocketNotifications(closed, 1, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications((HANDLE)&r, 1, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(NULL, 1, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        /* Nothing applied: the socket is free for this port. */
        ck_assert_uint_eq(reg(P, sv, 6, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 6), E_IN);
        close(cl);
        closesocket(sv);
}

void conf_row_07(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r[2];
        UINT32 n;

        readable_pair(&cl, &sv);
        r[0] = enable_of(sv, 7);
        r[1] = enable_of(sv, 8);
        /* Two kinds of call failure; neither applies anything. */
        ck_assert_uint_eq(ProcessSocketNotifications(P, 2, r, 5, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 2, r, 0, 1, NULL, &n),
                          WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        close(cl);
        closesocket(sv);
}

void conf_row_08(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r[3];

        readable_pair(&cl, &sv);
        r[0] = enable_of(sv, 9);
        r[1] = enable_of(INVALID_SOCKET, 10);
        r[2] = enable_of(sv, 11);
        r[2].operation = OP_DISABLE;
        for (int i = 0; i < 3; i++)
                r[i].registrationResult = 0xbad;
        ck_assert_uint_eq(ProcessSocketNotifications(P, 3, r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        ck_assert_uint_eq(r[0].registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(r[1].registrationResult, WSAENOTSOCK);
        ck_assert_uint_eq(r[2].registrationResult, ERROR_SUCCESS); /* the failure in between
                                                                    * did not stop it */
        none(P, 50);                                                /* disabled */
        close(cl);
        closesocket(sv);
}

void conf_row_09(int _i)
{
        int cl, sv, file = open("/dev/null", O_RDONLY | O_CLOEXEC), gone = dup(file);
        SOCK_NOTIFY_REGISTRATION r[4];

        close(gone);
        readable_pair(&cl, &sv);
        r[0] = enable_of(INVALID_SOCKET, 1);
        r[1] = enable_of((SOCKET)gone, 2);
        r[2] = enable_of((SOCKET)file, 3);
        r[3] = enable_of(sv, 4);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 4, r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        for (int i = 0; i < 3; i++)
                ck_assert_uint_eq(r[i].registrationResult, WSAENOTSOCK);
        ck_assert_uint_eq(r[3].registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 4), E_IN);
        close(file);
        close(cl);
        closesocket(sv);
}

void conf_row_10(int _i)
{
        int sp[2];

        /* Windows refuses sockets of non-Microsoft providers; Linux has no providers, and a
         * socket of any family registers (here AF_UNIX). */
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        ck_assert_uint_eq(reg(P, sp[0], 10, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 10), E_OUT);
        remove_wait(P, sp[0], 10);
        closesocket(sp[0]);
        close(sp[1]);
}

void conf_row_11(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e[4];
        UINT32 n;

        readable_pair(&cl, &sv);
        /* A LEVEL registration on a readable socket: its IN comes back from the same call. */
        r = enable_of(sv, 11);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 4, e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(e[0].lpCompletionKey, 11);
        /* A REMOVE: its packet comes back from the same call. */
        r.operation = OP_REMOVE;
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 4, e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[0]) & E_REMOVE, E_REMOVE);
        close(cl);
        closesocket(sv);
}

void conf_row_12(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e;
        UINT32 n;

        tcp_pair(&cl, &sv);
        r = enable_of(sv, 12);
        r.registrationResult = 0xbad;
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 50, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_uint_eq(r.registrationResult, ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 12), E_IN); /* it did take effect */
        close(cl);
        closesocket(sv);
}

void conf_row_13(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 13, F_IN, OP_ENABLE | OP_REMOVE, LEVEL), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 13, F_IN, OP_ENABLE | OP_DISABLE, LEVEL), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 13, F_IN, 8, LEVEL), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND); /* nothing applied */
        close(cl);
        closesocket(sv);
}

void conf_row_14(int _i)
{
        int cl, sv;

        readable_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 14, F_IN, SOCK_NOTIFY_OP_NONE, LEVEL), ERROR_SUCCESS);
        none(P, 50);
        ck_assert_uint_eq(reg(P, sv, 14, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 99, F_OUT, SOCK_NOTIFY_OP_NONE, EDGE), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 14), E_IN); /* unchanged by the OP_NONE */
        close(cl);
        closesocket(sv);
}

void conf_row_15(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r[3];

        readable_pair(&cl, &sv);
        r[0] = enable_of(sv, 15);
        r[1] = r[0];
        r[1].operation = OP_DISABLE;
        r[2] = r[0];
        r[2].eventFilter = F_OUT;
        ck_assert_uint_eq(ProcessSocketNotifications(P, 3, r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        /* Enabled, disabled, enabled again for OUT: the last decides. */
        ck_assert_uint_eq(one(P, 15), E_OUT);
        close(cl);
        closesocket(sv);
}

void conf_row_16(int _i)
{
        struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */
        pthread_t self = pthread_self();
        OVERLAPPED_ENTRY e;
        UINT32 n;
        pthread_t t;
        long long t0;

        sigaction(SIGUSR1, &sa, NULL);
        pthread_create(&t, NULL, kick, &self);
        t0 = now_ms();
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 300, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_int_ge(now_ms() - t0, 290);
        pthread_join(t, NULL);
}

void conf_row_17(int _i)
{
        OVERLAPPED_ENTRY e;
        UINT32 n = 77;

        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 30, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_uint_eq(n, 0);
}

void conf_row_18(int _i)
{
        OVERLAPPED_ENTRY e;
        UINT32 n;
        long long t0 = now_ms();

        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 0, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(50));
}

struct poster {
        HANDLE port;
        int delay_ms;
};

static void *post_later(void *arg)
{
        struct poster *p = arg;

        usleep((useconds_t)p->delay_ms * 1000);
        PostQueuedCompletionStatus(p->port, 1, 19, NULL);
        return NULL;
}

void conf_row_19(int _i)
{
        struct poster p = { P, 200 };
        OVERLAPPED_ENTRY e;
        UINT32 n;
        pthread_t t;
        long long t0 = now_ms();

        pthread_create(&t, NULL, post_later, &p);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, INFINITE, 1, &e, &n),
                          ERROR_SUCCESS);
        ck_assert_int_ge(now_ms() - t0, 190);
        ck_assert_uint_eq(e.lpCompletionKey, 19);
        pthread_join(t, NULL);
}

static long long now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Keeps the daemon's loop busy while row 20 measures: posts to a port of its own connection and
 * dequeues, so the loop runs many callbacks per iteration, as beside a loaded server. */
struct busy {
        const char *path;
        volatile bool stop;
};

static void *busy_thread(void *arg)
{
        struct busy *b = arg;
        sn_entry_t e[16];
        sn_conn_t *c;
        sn_port_t *p;

        if (sn_conn_open(b->path, &c) < 0)
                return NULL;
        if (sn_port_create(c, 0, &p) == 0) {
                while (!b->stop) {
                        for (int i = 0; i < 16; i++)
                                sn_port_post(p, 20, 0, 0);
                        sn_port_dequeue(p, e, 16, 0);
                }
                sn_port_close(p);
        }
        sn_conn_close(c);
        return NULL;
}

/* One timed wait of ms on an empty port, by call kind k, timed by the caller around the call;
 * returns how long it took in nanoseconds. */
static long long timed_wait(HANDLE p, sn_port_t *np, int k, DWORD ms)
{
        OVERLAPPED_ENTRY e;
        OVERLAPPED *ov = NULL;
        ULONG_PTR key;
        DWORD bytes;
        ULONG got;
        UINT32 n;
        sn_entry_t se;
        long long t0 = now_ns();

        switch (k) {
        case 0:
                ck_assert_uint_eq(ProcessSocketNotifications(p, 0, NULL, ms, 1, &e, &n),
                                  WAIT_TIMEOUT);
                break;
        case 1:
                ck_assert(!GetQueuedCompletionStatus(p, &bytes, &key, &ov, ms));
                ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
                break;
        case 2:
                ck_assert(!GetQueuedCompletionStatusEx(p, &e, 1, &got, ms, FALSE));
                ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
                break;
        default:
                ck_assert_int_eq(sn_port_dequeue(np, &se, 1, ms), -ETIMEDOUT);
                break;
        }
        return now_ns() - t0;
}

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;

        return (x > y) - (x < y);
}

/* A wait of ms on P in a thread of its own, timed by that thread. */
struct reexec_wait {
        DWORD ms;
        long long took;
};

static void *reexec_wait_thread(void *arg)
{
        struct reexec_wait *rw = arg;

        rw->took = timed_wait(P, NULL, 0, rw->ms);
        return NULL;
}

/* Waits that a re-exec of the daemon carries over still last their whole timeout: the new
 * image times what is left of each (not under a wrapper such as valgrind, which the new image
 * would run without). */
static void waits_across_reexec(void)
{
        if (getenv("SN_TEST_DAEMON_WRAPPER") && *getenv("SN_TEST_DAEMON_WRAPPER"))
                return;
        for (int i = 0; i < 3; i++) {
                struct reexec_wait rw = { .ms = 300 };
                long before = daemon_count("reexecs");
                long long end = now_ms() + test_timeout_ms(5000);
                pthread_t t;

                pthread_create(&t, NULL, reexec_wait_thread, &rw);
                wait_waiters(1);
                ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
                while (daemon_count("reexecs") == before)
                        ck_assert_msg(now_ms() < end, "the daemon did not re-exec");
                pthread_join(t, NULL);
                ck_assert_msg(rw.took >= (long long)rw.ms * 1000000,
                              "a wait of %u ms across a re-exec took %.3f ms", (unsigned)rw.ms,
                              (double)rw.took / 1e6);
        }
}

/*
 * Our rule: a finite wait ends at or after its timeout, never before, as the caller measures it
 * with CLOCK_MONOTONIC around the call.  Many short waits (1-7 ms) make a deadline computed from
 * a stale or coarse clock show: 200 through the Win32 calls and the native API over the rings,
 * 200 over the socket transport, while another connection keeps the daemon's loop busy; then
 * longer ones, and waits the daemon carries over a re-exec of itself.
 */
void conf_row_20(int _i)
{
        enum { WAITS = 200 };
        struct busy b = { .path = D.path };
        long long late[2 * WAITS];
        sn_conn_t *conn[2];
        sn_port_t *np[2];
        int early = 0, nlate = 0;
        long long worst = 0;
        pthread_t t;

        /* The transport is chosen when a connection opens: the rings, then the socket. */
        for (int tr = 0; tr < 2; tr++) {
                if (tr)
                        setenv("SOCKNOTIFY_NO_SHM", "1", 1);
                ck_assert_int_eq(sn_conn_open(D.path, &conn[tr]), 0);
                ck_assert_int_eq(sn_port_create(conn[tr], 0, &np[tr]), 0);
        }
        unsetenv("SOCKNOTIFY_NO_SHM");
        pthread_create(&t, NULL, busy_thread, &b);
        for (int tr = 0; tr < 2; tr++) {
                for (int i = 0; i < WAITS; i++) {
                        DWORD ms = 1 + (DWORD)(i % 7);
                        /* Over the rings every call kind in turn; the Win32 port's connection
                         * is the process's own, on the rings. */
                        int k = tr ? 3 : i % 4;
                        long long d = timed_wait(P, np[tr], k, ms) - (long long)ms * 1000000;

                        if (d < 0) {
                                early++;
                                worst = SN_MIN(worst, d);
                        }
                        late[nlate++] = d;
                }
        }
        b.stop = true;
        pthread_join(t, NULL);
        for (int tr = 0; tr < 2; tr++) {
                sn_port_close(np[tr]);
                sn_conn_close(conn[tr]);
        }
        qsort(late, (size_t)nlate, sizeof(late[0]), cmp_ll);
        if (getenv("SN_ROW20_STATS"))
                fprintf(stderr, "row-20: %d waits, %d early (worst %.3f ms), late median %.3f ms, "
                        "p99 %.3f ms, max %.3f ms\n", nlate, early, (double)worst / 1e6,
                        (double)late[nlate / 2] / 1e6, (double)late[nlate * 99 / 100] / 1e6,
                        (double)late[nlate - 1] / 1e6);
        ck_assert_msg(early == 0, "%d of %d waits ended before their timeout, one by %.3f ms", early,
                      nlate, (double)-worst / 1e6);
        /* And not much more: the median wait ends within a few milliseconds of its timeout. */
        ck_assert_int_lt(late[nlate / 2], (long long)test_timeout_ms(20) * 1000000);
        for (int ms = 20; ms <= 160; ms *= 2) {
                long long d = timed_wait(P, NULL, 0, (DWORD)ms);

                ck_assert_int_ge(d, (long long)ms * 1000000);
                ck_assert_int_lt(d, ((long long)ms + test_timeout_ms(200)) * 1000000);
        }
        waits_across_reexec();
}

void conf_row_21(int _i)
{
        OVERLAPPED_ENTRY e[8];
        UINT32 n;
        long long t0;

        for (int i = 0; i < 3; i++)
                ck_assert(PostQueuedCompletionStatus(P, 0, 21, NULL));
        t0 = now_ms();
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 5000, 8, e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 3);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(1000));
        for (int i = 0; i < 3; i++)
                ck_assert(PostQueuedCompletionStatus(P, 0, 21, NULL));
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 5000, 2, e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 2);
}

void conf_row_22(int _i)
{
        OVERLAPPED_ENTRY e[4];
        UINT32 n;

        memset(e, 0xab, sizeof(e));
        ck_assert(PostQueuedCompletionStatus(P, 5, 22, NULL));
        ck_assert(PostQueuedCompletionStatus(P, 6, 22, NULL));
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 1000, 4, e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 2);
        ck_assert_uint_eq(e[0].dwNumberOfBytesTransferred, 5);
        ck_assert_uint_eq(e[1].dwNumberOfBytesTransferred, 6);
        ck_assert_uint_eq(e[2].lpCompletionKey, (ULONG_PTR)0xabababababababab);
}

void conf_row_23(int _i)
{
        OVERLAPPED_ENTRY e;
        UINT32 n;

        SetLastError(1234);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 0, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_uint_eq(GetLastError(), 1234);
        ck_assert_uint_eq(ProcessSocketNotifications(NULL, 0, NULL, 0, 1, &e, &n), WSAEINVAL);
        ck_assert_uint_eq(GetLastError(), 1234);
}

/*
 * Call-level failures of PSN.  Its reference page allows ERROR_SUCCESS, WAIT_TIMEOUT or a WSAE*
 * code; one test per kind of failure, each asserting the WSAE* value and that the call left the
 * last error alone (row 23).
 */

void conf_case_psn_bad_arguments(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e[2];
        UINT32 n = 77;

        readable_pair(&cl, &sv);
        r = enable_of(sv, 31);
        SetLastError(1234);
        /* Rows 2 to 5, each with the registration that must not be applied. */
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 10, 0, NULL, NULL), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, NULL, 0, 0, NULL, NULL), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 0, e, NULL), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 0, NULL, &n), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 1, NULL, &n), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 1, (OVERLAPPED_ENTRY *)&r, &n),
                          WSAEINVAL);
        ck_assert_uint_eq(GetLastError(), 1234);
        ck_assert_uint_eq(n, 77);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        close(cl);
        closesocket(sv);
}

void conf_case_psn_bad_port(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e;
        UINT32 n = 77;
        HANDLE closed = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);

        ck_assert_ptr_nonnull(closed);
        ck_assert(CloseHandle(closed));
        readable_pair(&cl, &sv);
        r = enable_of(sv, 32);
        SetLastError(1234);
        /* WSAEINVAL, not WSAENOTSOCK: that one is a registration's answer for its socket. */
        ck_assert_uint_eq(ProcessSocketNotifications(closed, 1, &r, 0, 1, &e, &n), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(NULL, 1, &r, 0, 0, NULL, NULL), WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(INVALID_HANDLE_VALUE, 1, &r, 0, 0, NULL,
                                                     NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications((HANDLE)(uintptr_t)sv, 1, &r, 0, 0, NULL,
                                                     NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(GetLastError(), 1234);
        ck_assert_uint_eq(n, 77);
        ck_assert_uint_eq(r.registrationResult, 0);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        close(cl);
        closesocket(sv);
}

struct psn_wait {
        HANDLE port;
        SOCK_NOTIFY_REGISTRATION r;
        DWORD ret;
        DWORD last_error;
};

static void *psn_wait_thread(void *arg)
{
        struct psn_wait *w = arg;
        OVERLAPPED_ENTRY e;
        UINT32 n;

        SetLastError(1234);
        w->ret = ProcessSocketNotifications(w->port, 1, &w->r, (UINT32)test_timeout_ms(5000), 1,
                                            &e, &n);
        w->last_error = GetLastError();
        return NULL;
}

void conf_case_psn_closed_while_waiting(int _i)
{
        int cl, sv;
        struct psn_wait w = { .port = P };
        pthread_t t;
        long long t0;

        /* A finite wait with a registration in the same call: what a server loop does. */
        tcp_pair(&cl, &sv);
        w.r = enable_of(sv, 33);
        pthread_create(&t, NULL, psn_wait_thread, &w);
        wait_waiters(1);
        t0 = now_ms();
        ck_assert(CloseHandle(P));
        P = NULL;
        pthread_join(t, NULL);
        /* WSAEINTR: a Winsock call blocked on an object another thread closes. */
        ck_assert_uint_eq(w.ret, WSAEINTR);
        ck_assert_uint_eq(w.last_error, 1234);
        ck_assert_int_lt(now_ms() - t0, test_timeout_ms(2000));
        close(cl);
        closesocket(sv);
}

/* Runs fn in a child (a fresh connection and no handles, row 66) and returns what it
 * returned: 0 passes, anything else names the check that failed. */
static int in_child(int (*fn)(void))
{
        pid_t pid = fork();
        int st;

        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(fn());
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st), "child ended by signal %d", WTERMSIG(st));
        return WEXITSTATUS(st);
}

static int no_memory_child(void)
{
        static OVERLAPPED_ENTRY e[4];
        HANDLE port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        unsigned long vm_kb = 0;
        char line[256];
        FILE *f;
        UINT32 n = 77;
        DWORD ret;

        if (!port)
                return 2;
        f = fopen("/proc/self/status", "re");
        if (!f)
                return 3;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmSize: %lu kB", &vm_kb) == 1)
                        break;
        fclose(f);
        if (!vm_kb)
                return 4;
        /* 64 MiB more address space than now: the call's array of 2^24 native entries (512 MiB)
         * cannot be allocated, whatever the machine's overcommit policy. */
        if (setrlimit(RLIMIT_AS, &(struct rlimit){ .rlim_cur = (vm_kb + 65536) * 1024,
                                                    .rlim_max = RLIM_INFINITY }) < 0)
                return 5;
        SetLastError(1234);
        ret = ProcessSocketNotifications(port, 0, NULL, 0, 1u << 24, e, &n);
        if (ret != WSAENOBUFS) {
                fprintf(stderr, "no memory: %u\n", (unsigned)ret);
                return 6;
        }
        if (GetLastError() != 1234 || n != 77)
                return 7;
        setrlimit(RLIMIT_AS, &(struct rlimit){ RLIM_INFINITY, RLIM_INFINITY });
        return CloseHandle(port) ? 0 : 8;
}

void conf_case_psn_no_memory(int _i)
{
#if defined(__SANITIZE_ADDRESS__)
        /* AddressSanitizer reserves terabytes of address space and aborts on an allocation it
         * cannot make: the limit this test sets has no meaning under it. */
        return;
#endif
        ck_assert_int_eq(in_child(no_memory_child), 0);
}

static int daemon_gone_child(void)
{
        struct test_daemon d2;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e;
        UINT32 n = 77;
        int cl, sv, fail = 0;
        DWORD ret;
        HANDLE port;

        /* A daemon of the child's own, and no session to resume once it is gone. */
        setenv("SOCKNOTIFY_RECONNECT_MS", "0", 1);
        test_daemon_start(&d2, NULL);
        setenv("SOCKNOTIFY_SOCKET", d2.path, 1);
        port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        if (!port)
                return 2;
        tcp_pair(&cl, &sv);
        r = enable_of(sv, 34);
        if (ProcessSocketNotifications(port, 1, &r, 0, 0, NULL, NULL) != ERROR_SUCCESS)
                return 3;
        kill(d2.pid, SIGKILL);
        SetLastError(1234);
        ret = ProcessSocketNotifications(port, 0, NULL, (UINT32)test_timeout_ms(5000), 1, &e, &n);
        if (ret != WSAENETDOWN) {
                fprintf(stderr, "daemon gone, dequeue: %u\n", (unsigned)ret);
                fail = 4;
        }
        r = enable_of(sv, 34);
        ret = ProcessSocketNotifications(port, 1, &r, 0, 0, NULL, NULL);
        if (!fail && ret != WSAENETDOWN) {
                fprintf(stderr, "daemon gone, registration: %u\n", (unsigned)ret);
                fail = 5;
        }
        if (!fail && (GetLastError() != 1234 || n != 77))
                fail = 6;
        test_daemon_stop(&d2);
        return fail;
}

void conf_case_psn_daemon_gone(int _i)
{
        ck_assert_int_eq(in_child(daemon_gone_child), 0);
}

void conf_case_psn_null_count(int _i)
{
        int cl, sv, cl2, sv2;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e[4];

        /* Registrations with room for entries but no count pointer: applied; nothing arrived,
         * so WAIT_TIMEOUT and the array untouched. */
        tcp_pair(&cl, &sv);
        r = enable_of(sv, 35);
        memset(e, 0xab, sizeof(e));
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 4, e, NULL), WAIT_TIMEOUT);
        ck_assert_uint_eq(r.registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(e[0].lpCompletionKey, (ULONG_PTR)0xabababababababab);
        /* A dequeue: the entries are written, those beyond left as they were, which is how a
         * caller without a count finds the end (row 22). */
        ck_assert(PostQueuedCompletionStatus(P, 5, 36, NULL));
        ck_assert(PostQueuedCompletionStatus(P, 6, 36, NULL));
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 1000, 4, e, NULL), ERROR_SUCCESS);
        ck_assert_uint_eq(e[0].lpCompletionKey, 36);
        ck_assert_uint_eq(e[0].dwNumberOfBytesTransferred, 5);
        ck_assert_uint_eq(e[1].lpCompletionKey, 36);
        ck_assert_uint_eq(e[1].dwNumberOfBytesTransferred, 6);
        ck_assert_uint_eq(e[2].lpCompletionKey, (ULONG_PTR)0xabababababababab);
        /* Both in one call: the registration comes first and the same call returns its entry
         * (row 11). */
        readable_pair(&cl2, &sv2);
        r = enable_of(sv2, 37);
        memset(e, 0xab, sizeof(e));
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 1000, 4, e, NULL), ERROR_SUCCESS);
        ck_assert_uint_eq(r.registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(e[0].lpCompletionKey, 37);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[0]), E_IN);
        ck_assert_uint_eq(e[1].lpCompletionKey, (ULONG_PTR)0xabababababababab);
        close(cl);
        closesocket(sv);
        close(cl2);
        closesocket(sv2);
}

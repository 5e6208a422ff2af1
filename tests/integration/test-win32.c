/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-win32.c - the Win32-compatible API of <socknotify/winsock.h> against a real daemon:
 * return values, BOOL results and last-error codes of rows 1-23 and 71-80 of the spec and of
 * its section 3, and the errno <-> Win32 mapping.  Each test runs in its own process (Check
 * fork mode), so the library's process-wide state (WSAStartup, handles) starts fresh.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

#include "socknotify/winsock.h"
#include "tests/helpers/daemon.h"

static struct test_daemon D;
static int baseline;
static HANDLE port;

static void setup(void)
{
        WSADATA wsa;

        test_daemon_start(&D, (const char *const[]){ "--max-posted=4", NULL });
        baseline = test_daemon_fds(&D);
        setenv("SOCKNOTIFY_SOCKET", D.path, 1);
        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &wsa), 0);
        ck_assert_uint_eq(wsa.wVersion, 0x0202);
        port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_nonnull(port);
}

static void teardown(void)
{
        if (port)
                CloseHandle(port);
        ck_assert_int_eq(WSACleanup(), 0);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 2000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

static SOCK_NOTIFY_REGISTRATION enable(SOCKET s, void *key, UINT16 filter, UINT8 trig)
{
        SOCK_NOTIFY_REGISTRATION r = { .socket = s, .completionKey = key, .eventFilter = filter,
                                       .operation = SOCK_NOTIFY_OP_ENABLE, .triggerFlags = trig };
        return r;
}

static DWORD apply(SOCK_NOTIFY_REGISTRATION *r)
{
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        return r->registrationResult;
}

static void remove_and_wait(SOCKET s)
{
        SOCK_NOTIFY_REGISTRATION r = { .socket = s, .operation = SOCK_NOTIFY_OP_REMOVE };
        OVERLAPPED_ENTRY e;
        UINT32 n;

        for (int i = 0; i < 20; i++) {
                ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 1000, 1, &e, &n),
                                  ERROR_SUCCESS);
                ck_assert_uint_eq(r.registrationResult, ERROR_SUCCESS);
                if (SocketNotificationRetrieveEvents(&e) & SOCK_NOTIFY_EVENT_REMOVE)
                        return;
        }
        ck_abort_msg("no REMOVE");
}

START_TEST(test_call_shape)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r, two[2];
        OVERLAPPED_ENTRY e[4];
        UINT32 n = 77;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        usleep(10000);
        r = enable(sv, (void *)1, SOCK_NOTIFY_REGISTER_EVENT_IN, SOCK_NOTIFY_TRIGGER_LEVEL);
        /* Row 2: timeout without dequeue: call failure, nothing applied (row 7). */
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 5, 0, NULL, NULL),
                          WSAEINVAL);
        /* Row 3. */
        ck_assert_uint_eq(ProcessSocketNotifications(port, 0, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 0, 0, e, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 0, 0, NULL, &n),
                          WSAEINVAL);
        /* Row 4. */
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 0, 1, NULL, &n),
                          WSAEINVAL);
        /* Row 5: overlapping arrays. */
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 0, 1, (OVERLAPPED_ENTRY *)&r, &n),
                          WSAEINVAL);
        /* Row 6: not a port (WSAEINVAL: the port is one of the arguments). */
        ck_assert_uint_eq(ProcessSocketNotifications((HANDLE)0x1234, 1, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        ck_assert_uint_eq(ProcessSocketNotifications(INVALID_HANDLE_VALUE, 1, &r, 0, 0, NULL, NULL),
                          WSAEINVAL);
        /* None of those applied anything: REMOVE finds no registration. */
        two[0] = (SOCK_NOTIFY_REGISTRATION){ .socket = sv, .operation = SOCK_NOTIFY_OP_REMOVE };
        ck_assert_uint_eq(apply(&two[0]), ERROR_NOT_FOUND);
        /* Row 1: registrations only: ERROR_SUCCESS though the socket is readable. */
        ck_assert_uint_eq(apply(&r), ERROR_SUCCESS);
        /* Rows 21, 22, 70: the packet, through PSN's dequeue. */
        n = 99;
        ck_assert_uint_eq(ProcessSocketNotifications(port, 0, NULL, 0, 4, e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(e[0].lpCompletionKey, 1);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[0]), SOCK_NOTIFY_EVENT_IN);
        ck_assert_ptr_null(e[0].lpOverlapped);
        /* Row 15: two entries for one socket apply in order; the later one decides. */
        two[0] = enable(sv, (void *)1, SOCK_NOTIFY_REGISTER_EVENT_IN, SOCK_NOTIFY_TRIGGER_LEVEL);
        two[1] = (SOCK_NOTIFY_REGISTRATION){ .socket = sv, .operation = SOCK_NOTIFY_OP_REMOVE };
        ck_assert_uint_eq(ProcessSocketNotifications(port, 2, two, 0, 0, NULL, NULL),
                          ERROR_SUCCESS);
        ck_assert_uint_eq(two[0].registrationResult, 0);
        ck_assert_uint_eq(two[1].registrationResult, 0);
        bool removed = false;
        for (int i = 0; i < 4 && !removed; i++) {
                ck_assert_uint_eq(ProcessSocketNotifications(port, 0, NULL, 1000, 4, e, &n),
                                  ERROR_SUCCESS);
                for (UINT32 k = 0; k < n; k++)
                        removed |= (SocketNotificationRetrieveEvents(&e[k]) &
                                    SOCK_NOTIFY_EVENT_REMOVE) != 0;
        }
        ck_assert(removed);
        close(cl);
        closesocket(sv);
}
END_TEST

START_TEST(test_entry_results)
{
        int cl, sv, file = open("/dev/null", O_RDONLY | O_CLOEXEC), closed = dup(0);
        SOCK_NOTIFY_REGISTRATION r[7];

        close(closed);
        tcp_pair(&cl, &sv);
        for (int i = 0; i < 7; i++)
                r[i] = enable(sv, (void *)2, SOCK_NOTIFY_REGISTER_EVENT_IN, SOCK_NOTIFY_TRIGGER_LEVEL);
        r[0].socket = INVALID_SOCKET;
        r[1].socket = (SOCKET)closed;
        r[2].socket = (SOCKET)file;
        r[4].operation = SOCK_NOTIFY_OP_ENABLE | SOCK_NOTIFY_OP_REMOVE; /* row 13 */
        r[5].operation = SOCK_NOTIFY_OP_NONE;                             /* row 14 */
        r[6].triggerFlags = SOCK_NOTIFY_TRIGGER_LEVEL | SOCK_NOTIFY_TRIGGER_EDGE;
        for (int i = 0; i < 7; i++)
                r[i].registrationResult = 0xdead;
        /* Rows 8, 9: every result written; entries fail alone; r[3] is applied. */
        ck_assert_uint_eq(ProcessSocketNotifications(port, 7, r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        ck_assert_uint_eq(r[0].registrationResult, WSAENOTSOCK);
        ck_assert_uint_eq(r[1].registrationResult, WSAENOTSOCK);
        ck_assert_uint_eq(r[2].registrationResult, WSAENOTSOCK);
        ck_assert_uint_eq(r[3].registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(r[4].registrationResult, WSAEINVAL);
        ck_assert_uint_eq(r[5].registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(r[6].registrationResult, WSAEINVAL);
        /* Rule 10: ERROR_ALREADY_EXISTS on another port; rule 8/13: ERROR_NOT_FOUND there. */
        HANDLE other = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
        SOCK_NOTIFY_REGISTRATION x = enable(sv, (void *)3, 1, SOCK_NOTIFY_TRIGGER_LEVEL);
        ck_assert_uint_eq(ProcessSocketNotifications(other, 1, &x, 0, 0, NULL, NULL), ERROR_SUCCESS);
        ck_assert_uint_eq(x.registrationResult, ERROR_ALREADY_EXISTS);
        x.operation = SOCK_NOTIFY_OP_DISABLE;
        ck_assert_uint_eq(ProcessSocketNotifications(other, 1, &x, 0, 0, NULL, NULL), ERROR_SUCCESS);
        ck_assert_uint_eq(x.registrationResult, ERROR_NOT_FOUND);
        ck_assert(CloseHandle(other));
        remove_and_wait(sv);
        close(file);
        close(cl);
        closesocket(sv);
}
END_TEST

START_TEST(test_timeouts_and_last_error)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r;
        OVERLAPPED_ENTRY e;
        UINT32 n = 5;
        ULONG removed = 5;
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov = (LPOVERLAPPED)1;

        tcp_pair(&cl, &sv);
        /* Rows 12, 17, 18, 23: WAIT_TIMEOUT, the registration applied, last error untouched. */
        SetLastError(4242);
        r = enable(sv, (void *)4, SOCK_NOTIFY_REGISTER_EVENT_IN, SOCK_NOTIFY_TRIGGER_LEVEL);
        long long t0 = now_ms();
        ck_assert_uint_eq(ProcessSocketNotifications(port, 1, &r, 100, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_int_ge(now_ms() - t0, 95);
        ck_assert_uint_eq(n, 0);
        ck_assert_uint_eq(r.registrationResult, ERROR_SUCCESS);
        ck_assert_uint_eq(GetLastError(), 4242);
        ck_assert_uint_eq(ProcessSocketNotifications(port, 0, NULL, 0, 1, &e, &n), WAIT_TIMEOUT);
        /* Row 75: GQCS timeout: FALSE, *lpOverlapped NULL, WAIT_TIMEOUT. */
        ck_assert(!GetQueuedCompletionStatus(port, &bytes, &key, &ov, 0));
        ck_assert_ptr_null(ov);
        ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
        /* Row 76: GQCSEx timeout: FALSE, nothing removed, WAIT_TIMEOUT. */
        ck_assert(!GetQueuedCompletionStatusEx(port, &e, 1, &removed, 10, TRUE));
        ck_assert_uint_eq(removed, 0);
        ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
        /* The registration took effect: data now gives a packet, read with GQCS (row 70). */
        ck_assert_int_eq(send(cl, "y", 1, 0), 1);
        ck_assert(GetQueuedCompletionStatus(port, &bytes, &key, &ov, 1000));
        ck_assert_uint_eq(bytes, SOCK_NOTIFY_EVENT_IN);
        ck_assert_uint_eq(key, 4);
        /* A failed socket call: GetLastError reads errno through the table. */
        char buf[4];
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 1);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), -1);
        ck_assert_uint_eq(GetLastError(), WSAEWOULDBLOCK);
        ck_assert_int_eq(WSAGetLastError(), WSAEWOULDBLOCK);
        WSASetLastError(WSAECONNRESET);
        ck_assert_uint_eq(GetLastError(), WSAECONNRESET);
        ck_assert_uint_eq(sn_w32_from_errno(ECONNREFUSED), WSAECONNREFUSED);
        ck_assert_uint_eq(sn_w32_from_errno(EINPROGRESS), WSAEWOULDBLOCK);
        remove_and_wait(sv);
        close(cl);
        closesocket(sv);
}
END_TEST

struct gqcs {
        HANDLE port;
        BOOL ok;
        DWORD error;
        DWORD ret;
        LPOVERLAPPED ov;
        ULONG_PTR key;
        bool psn;
};

static void *gqcs_thread(void *arg)
{
        struct gqcs *g = arg;
        DWORD bytes;

        if (g->psn) {
                OVERLAPPED_ENTRY e;
                UINT32 n;

                g->ret = ProcessSocketNotifications(g->port, 0, NULL, INFINITE, 1, &e, &n);
                return NULL;
        }
        g->ov = (LPOVERLAPPED)1;
        g->ok = GetQueuedCompletionStatus(g->port, &bytes, &g->key, &g->ov, INFINITE);
        g->error = GetLastError();
        return NULL;
}

static int waiters(void)
{
        sn_conn_t *c;
        char *s, *p;
        int n = -1;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_status(c, &s), 0);
        p = strstr(s, "\"waiters\":");
        if (p)
                n = atoi(p + 10);
        free(s);
        sn_conn_close(c);
        return n;
}

START_TEST(test_post_and_close)
{
        struct gqcs g = { .port = port };
        pthread_t t;

        /* Rows 19, 73, 75, 79: a posted packet with lpOverlapped NULL wakes an INFINITE wait,
         * which returns TRUE. */
        ck_assert_int_eq(pthread_create(&t, NULL, gqcs_thread, &g), 0);
        while (waiters() != 1)
                usleep(1000);
        ck_assert(PostQueuedCompletionStatus(port, 7, 99, NULL));
        pthread_join(t, NULL);
        ck_assert(g.ok);
        ck_assert_uint_eq(g.key, 99);
        ck_assert_ptr_null(g.ov);
        /* L4: the posted-packet bound (4 here) gives ERROR_NOT_ENOUGH_QUOTA. */
        for (int i = 0; i < 4; i++)
                ck_assert(PostQueuedCompletionStatus(port, 0, i, NULL));
        ck_assert(!PostQueuedCompletionStatus(port, 0, 5, NULL));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_ENOUGH_QUOTA);
        /* Rows 77, 80, rule 9: CloseHandle wakes a GQCS waiter with ERROR_ABANDONED_WAIT_0
         * and a PSN waiter with WSAEINTR; later calls get ERROR_INVALID_HANDLE. */
        HANDLE p2 = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        struct gqcs a = { .port = p2 }, b = { .port = p2, .psn = true };
        pthread_t ta, tb;
        int cl, sv;
        tcp_pair(&cl, &sv);
        SOCK_NOTIFY_REGISTRATION r = enable(sv, (void *)8, 1, SOCK_NOTIFY_TRIGGER_LEVEL);
        ck_assert_uint_eq(ProcessSocketNotifications(p2, 1, &r, 0, 0, NULL, NULL), ERROR_SUCCESS);
        ck_assert_int_eq(pthread_create(&ta, NULL, gqcs_thread, &a), 0);
        ck_assert_int_eq(pthread_create(&tb, NULL, gqcs_thread, &b), 0);
        while (waiters() != 2)
                usleep(1000);
        ck_assert(CloseHandle(p2));
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        ck_assert(!a.ok);
        ck_assert_ptr_null(a.ov);
        ck_assert_uint_eq(a.error, ERROR_ABANDONED_WAIT_0);
        ck_assert_uint_eq(b.ret, WSAEINTR);
        ck_assert(!CloseHandle(p2));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        ck_assert(!PostQueuedCompletionStatus(p2, 0, 0, NULL));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov = (LPOVERLAPPED)1;
        ck_assert(!GetQueuedCompletionStatus(p2, &bytes, &key, &ov, 0));
        ck_assert_ptr_null(ov);
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        /* The socket was released without a REMOVE and can go to another port at once. */
        r = enable(sv, (void *)9, 1, SOCK_NOTIFY_TRIGGER_LEVEL);
        ck_assert_uint_eq(apply(&r), ERROR_SUCCESS);
        remove_and_wait(sv);
        close(cl);
        closesocket(sv);
}
END_TEST

START_TEST(test_create_and_startup_rules)
{
        int cl, sv;

        /* Row 71: with FileHandle INVALID_HANDLE_VALUE, ExistingCompletionPort must be NULL. */
        ck_assert_ptr_null(CreateIoCompletionPort(INVALID_HANDLE_VALUE, port, 0, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_PARAMETER);
        tcp_pair(&cl, &sv);
        ck_assert_ptr_null(CreateIoCompletionPort((HANDLE)(uintptr_t)sv, port, 1, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_SUPPORTED);
        /* ioctlsocket(FIONBIO). */
        unsigned long on = 0;
        ck_assert_int_eq(ioctlsocket(cl, FIONBIO, &on), 0);
        ck_assert_int_eq(fcntl(cl, F_GETFL) & O_NONBLOCK, 0);
        on = 1;
        ck_assert_int_eq(ioctlsocket(cl, FIONBIO, &on), 0);
        ck_assert_int_ne(fcntl(cl, F_GETFL) & O_NONBLOCK, 0);
        /* closesocket (L1): the daemon's copy goes with it: the peer sees EOF, no REMOVE. */
        SOCK_NOTIFY_REGISTRATION r = enable(sv, (void *)5, 1, SOCK_NOTIFY_TRIGGER_LEVEL);
        ck_assert_uint_eq(apply(&r), ERROR_SUCCESS);
        ck_assert_int_eq(closesocket(sv), 0);
        ck_assert(peer_closed(cl, 2000));
        OVERLAPPED_ENTRY e;
        UINT32 n;
        ck_assert_uint_eq(ProcessSocketNotifications(port, 0, NULL, 50, 1, &e, &n), WAIT_TIMEOUT);
        ck_assert_int_eq(closesocket(sv), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAENOTSOCK);
        close(cl);
        /* Winsock functions need WSAStartup; the count balances. */
        ck_assert_int_eq(WSACleanup(), 0);
        ck_assert_uint_eq(ProcessSocketNotifications(port, 0, NULL, 0, 1, &e, &n),
                          WSANOTINITIALISED);
        ck_assert_int_eq(closesocket(0), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSANOTINITIALISED);
        ck_assert_int_eq(WSACleanup(), SOCKET_ERROR);
        WSADATA wsa;
        /* Versions below 1.0 are not served; 1.1 is (Winsock 2.2 serves 1.0 to 2.2). */
        ck_assert_int_eq(WSAStartup(MAKEWORD(0, 1), &wsa), WSAVERNOTSUPPORTED);
        ck_assert_int_eq(WSAStartup(MAKEWORD(1, 1), &wsa), 0);
        ck_assert_uint_eq(wsa.wVersion, MAKEWORD(1, 1));
        ck_assert_int_eq(WSACleanup(), 0);
        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &wsa), 0);
}
END_TEST

START_TEST(test_named_ports)
{
        HANDLE a = SnCreateNamedIoCompletionPort("shared", 0), b;
        pid_t pid;
        int st;

        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_null(SnCreateNamedIoCompletionPort("shared", 0));
        ck_assert_uint_eq(GetLastError(), ERROR_ALREADY_EXISTS);
        ck_assert_ptr_null(SnOpenIoCompletionPort("absent"));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_FOUND);
        ck_assert_ptr_null(SnOpenIoCompletionPort(""));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_PARAMETER);
        /* Another process opens it and takes what this one posts. */
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                DWORD bytes;
                ULONG_PTR key;
                LPOVERLAPPED ov;

                b = SnOpenIoCompletionPort("shared");
                _exit(b && GetQueuedCompletionStatus(b, &bytes, &key, &ov, 5000) && key == 42 &&
                                      bytes == 7
                              ? 0
                              : 1);
        }
        ck_assert(PostQueuedCompletionStatus(a, 7, 42, NULL));
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        ck_assert(CloseHandle(a));
}
END_TEST

START_TEST(test_no_daemon)
{
        HANDLE h;

        /* The first call connects: no daemon, no port, and a clear reason. */
        setenv("SOCKNOTIFY_SOCKET", "/nonexistent/socknotify.sock", 1);
        h = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_null(h);
        ck_assert_uint_eq(GetLastError(), WSASYSNOTREADY);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("win32");
        TCase *tc = tcase_create("win32");
        TCase *bare = tcase_create("no-daemon");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_call_shape);
        tcase_add_test(tc, test_entry_results);
        tcase_add_test(tc, test_timeouts_and_last_error);
        tcase_add_test(tc, test_post_and_close);
        tcase_add_test(tc, test_create_and_startup_rules);
        tcase_add_test(tc, test_named_ports);
        suite_add_tcase(s, tc);
        tcase_add_test(bare, test_no_daemon);
        suite_add_tcase(s, bare);
        return test_run_suite(s);
}

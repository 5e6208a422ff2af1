/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * win32.c - conformance tests for the Win32 layer around the notifications: EDGE transitions,
 * the first dequeue after a connect, the socket calls of <socknotify/winsock.h> (closesocket,
 * send, recv, getsockopt), WSAStartup/WSACleanup, dequeues larger than one reply message,
 * registration arrays larger than one daemon call, and the limits and behaviours
 * docs/compatibility.md lists.  One behaviour per test.
 */
#include "tests/conformance/conformance.h"

#include <netinet/in.h>

/* A TCP socket registered with (filter, trigger) before it connects to a fresh listener, then
 * connected (blocking, so established on return). */
static void connect_registered(int *cl, int *sv, uintptr_t key, UINT16 filter, UINT8 trig)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port);

        *cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_uint_eq(reg(P, *cl, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
        sa.sin_port = port;
        ck_assert_int_eq(connect(*cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
        *sv = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        ck_assert_int_ge(*sv, 0);
        close(l);
}

/* Fills fd's send buffer (fd non-blocking) until send fails with WSAEWOULDBLOCK. */
static void fill(int fd)
{
        static char buf[65536];

        for (;;) {
                if (send(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0) {
                        ck_assert_int_eq(WSAGetLastError(), WSAEWOULDBLOCK);
                        return;
                }
        }
}

/* Replaces the fixture's daemon with one started with args; WSAStartup done, P open. */
static void restart_daemon(const char *const *args)
{
        WSADATA w;

        ck_assert(CloseHandle(P));
        WSACleanup();
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        test_daemon_start(&D, args);
        setenv("SOCKNOTIFY_SOCKET", D.path, 1);
        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &w), 0);
        P = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_nonnull(P);
}

/* ---- item: EDGE reports transitions (rule 15) ------------------------------------------ */

void conf_case_edge_fin(int _i)
{
        int cl, sv;

        /* The peer's FIN: IN and HANGUP start to hold; OUT held before and is not reported. */
        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_OUT | F_HUP, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 100);
        shutdown(cl, SHUT_WR);
        ck_assert_uint_eq(collect(P, 1, E_IN | E_HUP, 1000), E_IN | E_HUP);
        none(P, 100);
        closesocket(sv);
        close(cl);
}

void conf_case_edge_out(int _i)
{
        int cl, sv;
        char buf[65536];

        /* Buffer space freeing after a full send buffer: OUT alone, no IN. */
        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_OUT | F_HUP, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 100);
        fill(sv);
        none(P, 100);
        while (recv(cl, buf, sizeof(buf), MSG_DONTWAIT) > 0)
                ;
        ck_assert_uint_eq(collect(P, 1, E_OUT, 2000), E_OUT);
        closesocket(sv);
        close(cl);
}

void conf_case_edge_connect(int _i)
{
        int cl, sv;

        /* Registered before connect: the connection completing is the OUT transition, and an
         * arrival afterwards is IN alone. */
        connect_registered(&cl, &sv, 7, F_IN | F_OUT | F_HUP, EDGE);
        ck_assert_uint_eq(one(P, 7), E_OUT);
        none(P, 100);
        ck_assert_int_eq(send(sv, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 7), E_IN);
        closesocket(cl);
        close(sv);
}

/* The daemon's descriptor count once it is steady (the lowest of a few samples: a daemon under
 * valgrind may hold a transient one). */
static int steady_fds(void)
{
        int n = test_daemon_fds(&D);

        for (int i = 0; i < 5; i++) {
                usleep(20000);
                n = SN_MIN(n, test_daemon_fds(&D));
        }
        return n;
}

void conf_case_edge_descriptors(int _i)
{
        int a, b, c, d, e, f, base;
        long s0;

        /* The cost: an EDGE registration with OUT and IN or HANGUP holds two descriptors in the
         * daemon, both counted as the user's sockets; LEVEL, and EDGE on one side, hold one. */
        udp_pair(&a, &b);
        udp_pair(&c, &d);
        udp_pair(&e, &f);
        base = steady_fds();
        s0 = daemon_count("sockets");
        ck_assert_uint_eq(reg(P, a, 1, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base + 1, 2000), base + 1);
        ck_assert_int_eq(daemon_count("sockets"), s0 + 1);
        ck_assert_uint_eq(reg(P, c, 2, F_IN, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base + 2, 2000), base + 2);
        ck_assert_int_eq(daemon_count("sockets"), s0 + 2);
        ck_assert_uint_eq(reg(P, e, 3, F_IN | F_OUT, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base + 4, 2000), base + 4);
        ck_assert_int_eq(daemon_count("sockets"), s0 + 4);
        /* Back to LEVEL: the duplicate goes. */
        ck_assert_uint_eq(reg(P, e, 3, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base + 3, 2000), base + 3);
        ck_assert_int_eq(daemon_count("sockets"), s0 + 3);
        closesocket(a);
        closesocket(c);
        closesocket(e);
        close(b);
        close(d);
        close(f);
}

void conf_case_edge_quota(int _i)
{
        int a, b, c, d, e, f;

        /* The EDGE duplicate counts against the user's socket quota (3 here): a LEVEL
         * registration holds one socket, an EDGE IN|OUT registration two; then the quota is
         * full and the next registration fails, with no descriptor left behind. */
        restart_daemon((const char *const[]){ "--max-posted=64", "--max-sockets-per-user=3",
                                              NULL });
        udp_pair(&a, &b);
        udp_pair(&c, &d);
        udp_pair(&e, &f);
        ck_assert_uint_eq(reg(P, a, 1, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, c, 2, F_IN | F_OUT, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, e, 3, F_IN, OP_ENABLE, LEVEL), ERROR_NOT_ENOUGH_QUOTA);
        /* Back to LEVEL frees the duplicate: room for one more. */
        ck_assert_uint_eq(reg(P, c, 2, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, e, 3, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        /* Full again: EDGE IN|OUT now cannot get its second descriptor, and the registration
         * stays as it was (LEVEL, enabled). */
        ck_assert_uint_eq(reg(P, a, 1, F_IN | F_OUT, OP_ENABLE, EDGE), ERROR_NOT_ENOUGH_QUOTA);
        ck_assert_uint_eq(collect(P, 1, E_OUT, 1000), E_OUT);
        closesocket(a);
        closesocket(c);
        closesocket(e);
        close(b);
        close(d);
        close(f);
}

/* ---- item: the first dequeue after connect sees OUT ------------------------------------- */

void conf_case_connect_zero_timeout(int _i)
{
        OVERLAPPED_ENTRY e[4];
        int cl, sv;

        connect_registered(&cl, &sv, 5, F_IN | F_OUT, LEVEL);
        /* The very next zero-timeout dequeue reports OUT. */
        ck_assert_uint_eq(deq(P, e, 4, 0), 1);
        ck_assert_uint_eq(e[0].lpCompletionKey, 5);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[0]), E_OUT);
        closesocket(cl);
        close(sv);
}

/* ---- item: closesocket on a non-socket ---------------------------------------------------- */

void conf_case_closesocket_not_socket(int _i)
{
        int p[2];

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(closesocket(p[0]), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAENOTSOCK);
        ck_assert_int_ge(fcntl(p[0], F_GETFD), 0); /* still open */
        close(p[0]);
        close(p[1]);
}

/* ---- item: no SIGPIPE ------------------------------------------------------------------- */

void conf_case_send_no_sigpipe(int _i)
{
        struct sigaction before, after;
        int cl, sv;

        signal(SIGPIPE, SIG_DFL); /* a broken connection would kill the process */
        sigaction(SIGPIPE, NULL, &before);
        tcp_pair(&cl, &sv);
        reset_peer(cl);
        usleep(50000);
        /* Every send fails with WSAECONNRESET, the first (Linux: ECONNRESET) and the later ones
         * (Linux: EPIPE), and the process lives. */
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(send(sv, "x", 1, 0), SOCKET_ERROR);
                ck_assert_int_eq(WSAGetLastError(), WSAECONNRESET);
        }
        ck_assert_int_eq(sendto(sv, "x", 1, 0, NULL, 0), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAECONNRESET);
        sigaction(SIGPIPE, NULL, &after);
        ck_assert_ptr_eq(after.sa_handler, before.sa_handler); /* disposition untouched */
        closesocket(sv);
}

/* ---- item: Winsock error codes from socket calls ------------------------------------------ */

void conf_case_so_error_winsock(int _i)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port), s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int err = 0, len = sizeof(err);

        close(l);
        ck_assert_uint_eq(reg(P, s, 1, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL | ONESHOT),
                          ERROR_SUCCESS);
        sa.sin_port = port;
        connect(s, (struct sockaddr *)&sa, sizeof(sa));
        ck_assert_uint_eq(one(P, 1) & E_ERR, E_ERR);
        /* getsockopt(SO_ERROR) gives the Winsock code, not the errno value. */
        ck_assert_int_eq(getsockopt(s, SOL_SOCKET, SO_ERROR, (char *)&err, &len), 0);
        ck_assert_int_eq(err, WSAECONNREFUSED);
        closesocket(s);
}

void conf_case_so_error_resets_last_error(int _i)
{
        int cl, sv, err = -1, len = sizeof(err);
        char c;

        /* Windows documents that a getsockopt(SO_ERROR) resets the thread's last error to 0,
         * whether the code came from a failed call (errno here)... */
        tcp_pair(&cl, &sv);
        ck_assert_int_eq(recv(sv, &c, 1, MSG_DONTWAIT), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEWOULDBLOCK);
        ck_assert_int_eq(getsockopt(sv, SOL_SOCKET, SO_ERROR, (char *)&err, &len), 0);
        ck_assert_int_eq(err, 0);
        ck_assert_int_eq(WSAGetLastError(), 0);
        ck_assert_uint_eq(GetLastError(), ERROR_SUCCESS);
        /* ...or from SetLastError, and whatever the socket's own error is. */
        WSASetLastError(WSAECONNRESET);
        reset_peer(cl);
        ck_assert_int_eq(getsockopt(sv, SOL_SOCKET, SO_ERROR, (char *)&err, &len), 0);
        ck_assert_int_eq(WSAGetLastError(), 0);
        closesocket(sv);
}

void conf_case_udp_port_unreachable(int _i)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof(sa);
        int closed = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        char c;

        /* A port nobody listens on any more. */
        ck_assert_int_eq(bind(closed, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(getsockname(closed, (struct sockaddr *)&sa, &sl), 0);
        close(closed);
        ck_assert_int_eq(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_uint_eq(reg(P, s, 1, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_int_eq(send(s, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 1) & E_ERR, E_ERR);
        /* Winsock reports an ICMP port unreachable as WSAECONNRESET, Linux as ECONNREFUSED. */
        ck_assert_int_eq(recv(s, &c, 1, 0), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAECONNRESET);
        closesocket(s);
}

/* ---- item: WSAStartup / WSACleanup ------------------------------------------------------- */

void conf_case_wsastartup_versions(int _i)
{
        static const struct {
                WORD asked, used;
        } v[] = { { MAKEWORD(1, 0), MAKEWORD(1, 0) }, { MAKEWORD(1, 1), MAKEWORD(1, 1) },
                  { MAKEWORD(2, 0), MAKEWORD(2, 0) }, { MAKEWORD(2, 1), MAKEWORD(2, 1) },
                  { MAKEWORD(2, 2), MAKEWORD(2, 2) }, { MAKEWORD(3, 0), MAKEWORD(2, 2) } };
        WSADATA w;

        for (size_t i = 0; i < SN_ARRAY_SIZE(v); i++) {
                ck_assert_int_eq(WSAStartup(v[i].asked, &w), 0);
                ck_assert_uint_eq(w.wVersion, v[i].used);
                ck_assert_uint_eq(w.wHighVersion, MAKEWORD(2, 2));
                ck_assert_int_eq(WSACleanup(), 0);
        }
        ck_assert_int_eq(WSAStartup(MAKEWORD(0, 9), &w), WSAVERNOTSUPPORTED);
        ck_assert_uint_eq(w.wHighVersion, MAKEWORD(2, 2));
}

void conf_case_wsacleanup_sockets(int _i)
{
        int cl, sv;
        char c;

        /* Divergence: Windows resets and frees the process's sockets at the last WSACleanup and
         * fails its blocked calls; here sockets belong to libc and stay as they are. */
        tcp_pair(&cl, &sv);
        ck_assert(CloseHandle(P));
        P = NULL;
        ck_assert_int_eq(WSACleanup(), 0);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        usleep(20000);
        ck_assert_int_eq(recv(sv, &c, 1, 0), 1);
        close(cl);
        close(sv);
        /* The fixture's own WSACleanup then fails harmlessly: balance it. */
        WSADATA w;
        ck_assert_int_eq(WSAStartup(WINSOCK_VERSION, &w), 0);
}

/* ---- item: a dequeue returns min(queued, requested) --------------------------------------- */

void conf_case_dequeue_many(int _i)
{
        enum { N = 12000 };
        OVERLAPPED_ENTRY *e = calloc(N + 1, sizeof(*e));
        ULONG got = 0;

        /* More than one reply message holds (about 5,460 entries): a daemon that allows them. */
        restart_daemon((const char *const[]){ "--max-posted=20000", NULL });
        for (ULONG i = 0; i < N; i++)
                ck_assert(PostQueuedCompletionStatus(P, i, 1, NULL));
        ck_assert(GetQueuedCompletionStatusEx(P, e, N + 1, &got, 0, FALSE));
        ck_assert_uint_eq(got, N);
        for (ULONG i = 0; i < N; i++)
                ck_assert_uint_eq(e[i].dwNumberOfBytesTransferred, i); /* in order, none lost */
        none(P, 0);
        free(e);
}

/* ---- registration arrays larger than one daemon call ------------------------------------ */

/* One byte waiting on sv, seen by poll (loopback delivery is not synchronous with send). */
static void make_readable(int cl, int sv)
{
        struct pollfd p = { .fd = sv, .events = POLLIN };

        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(poll(&p, 1, test_timeout_ms(1000)), 1);
}

/* One entry with filter IN and a result the call must overwrite. */
static SOCK_NOTIFY_REGISTRATION item(SOCKET s, uintptr_t key, UINT8 op, UINT8 trig)
{
        return (SOCK_NOTIFY_REGISTRATION){ .socket = s, .completionKey = (PVOID)key,
                                           .eventFilter = F_IN, .operation = op,
                                           .triggerFlags = trig, .registrationResult = 0xdead };
}

void conf_case_register_many(int _i)
{
        /* The daemon takes (max_message - 52) / 4 items in one call: 32,755 with the default
         * 131,072-byte messages.  The library sends the rest as further calls.  OP_NONE and
         * non-sockets never reach the daemon, so the filler is a DISABLE that does. */
        enum { N = 40000, CALL_MAX = (131072 - 52) / 4 };
        SOCK_NOTIFY_REGISTRATION *r = calloc(N, sizeof(*r));
        DWORD *want = calloc(N, sizeof(*want));
        int acl, a, bcl, b, ccl, c, dcl, d, ecl, e, file = open("/dev/null", O_RDONLY | O_CLOEXEC);
        OVERLAPPED_ENTRY ent[8];
        UINT32 got = 99, seen[6] = { 0 };

        ck_assert(r && want && file >= 0);
        tcp_pair(&acl, &a);
        tcp_pair(&bcl, &b);
        tcp_pair(&ccl, &c);
        tcp_pair(&dcl, &d);
        tcp_pair(&ecl, &e);
        make_readable(acl, a);
        make_readable(ccl, c);
        ck_assert_uint_eq(reg(P, b, 2, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        /* Mostly DISABLE of b, with a failing entry of each kind every 1000, in both calls. */
        for (UINT32 i = 0; i < N; i++) {
                r[i] = item(b, 0, OP_DISABLE, 0);
                want[i] = ERROR_SUCCESS;
                if (i % 1000 == 300) {
                        r[i] = item(b, 9, OP_ENABLE, LEVEL | EDGE); /* row 34 */
                        want[i] = WSAEINVAL;
                } else if (i % 1000 == 500) {
                        r[i] = item(b, 9, OP_ENABLE | OP_DISABLE, LEVEL); /* row 13 */
                        want[i] = WSAEINVAL;
                } else if (i % 1000 == 700) {
                        r[i] = item((SOCKET)file, 9, OP_ENABLE, LEVEL); /* row 9 */
                        want[i] = WSAENOTSOCK;
                } else if (i % 1000 == 900) {
                        r[i] = item(d, 0, OP_DISABLE, 0); /* never registered: row 30 */
                        want[i] = ERROR_NOT_FOUND;
                } else if (i % 1000 == 950) {
                        r[i] = item(b, 0, SOCK_NOTIFY_OP_NONE, 0); /* row 14 */
                }
        }
        /* a (readable) is enabled by the first entry, c (readable) by the last.  e (not
         * readable) is enabled by the last entry of the first daemon call and disabled by the
         * first of the second, which finds it only if the calls apply in order; then removed. */
        r[0] = item(a, 1, OP_ENABLE, LEVEL);
        r[CALL_MAX - 1] = item(e, 5, OP_ENABLE, LEVEL);
        r[CALL_MAX] = item(e, 0, OP_DISABLE, 0);
        r[N - 2] = item(e, 0, OP_REMOVE, 0);
        r[N - 1] = item(c, 3, OP_ENABLE, LEVEL);

        ck_assert_uint_eq(ProcessSocketNotifications(P, N, r, 1000, 8, ent, &got), ERROR_SUCCESS);
        for (UINT32 i = 0; i < N; i++)
                ck_assert_msg(r[i].registrationResult == want[i],
                              "entry %u: result %u, expected %u", i, r[i].registrationResult,
                              want[i]);
        /* The same call dequeues what its registrations caused (row 11); the rest follows.
         * b is disabled and not readable: nothing comes for it. */
        ck_assert_uint_ge(got, 1);
        ck_assert_uint_le(got, 3);
        for (long long end = now_ms() + test_timeout_ms(2000);;) {
                for (UINT32 i = 0; i < got; i++) {
                        ULONG_PTR k = ent[i].lpCompletionKey;

                        ck_assert_msg(k == 1 || k == 3 || k == 5, "unexpected key %lu",
                                      (unsigned long)k);
                        seen[k] |= SocketNotificationRetrieveEvents(&ent[i]);
                }
                if (seen[1] && seen[3] && seen[5] & E_REMOVE)
                        break;
                ck_assert_msg(now_ms() < end, "keys 1, 3, 5 saw %#x %#x %#x", seen[1], seen[3],
                              seen[5]);
                got = deq(P, ent, 8, 50);
        }
        ck_assert_uint_eq(seen[1], E_IN);
        ck_assert_uint_eq(seen[3], E_IN);
        ck_assert_uint_eq(seen[5], E_REMOVE); /* disabled before anything held, then removed */
        ck_assert_int_eq(daemon_count("registrations"), 3); /* a, b, c: failures made none */
        free(r);
        free(want);
        close(file);
        close(acl);
        close(bcl);
        close(ccl);
        close(dcl);
        close(ecl);
        closesocket(a);
        closesocket(b);
        closesocket(c);
        closesocket(d);
        closesocket(e);
}

/* ---- overlapped I/O on a port ----------------------------------------------------------- */

void conf_case_iocp_socket_handle(int _i)
{
        int cl, sv;

        /* Divergence: Windows associates a socket (or file) handle with a port for overlapped
         * I/O, making a new port when ExistingCompletionPort is NULL; socknotify has no I/O
         * completions and refuses, whatever the other arguments say, changing nothing. */
        tcp_pair(&cl, &sv);
        SetLastError(0);
        ck_assert_ptr_null(CreateIoCompletionPort((HANDLE)(uintptr_t)sv, NULL, 7, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_SUPPORTED);
        SetLastError(0);
        ck_assert_ptr_null(CreateIoCompletionPort((HANDLE)(uintptr_t)sv, P, 7, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_SUPPORTED);
        /* The port and the socket are as they were: no association, no packet. */
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100);
        ck_assert_uint_eq(reg(P, sv, 7, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 7), E_IN);
        close(cl);
        closesocket(sv);
}

/* ---- SO_EXCLUSIVEADDRUSE ---------------------------------------------------------------- */

/* A TCP socket, no option set. */
static int tcp_socket(void)
{
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(s, 0);
        return s;
}

/* Binds s to a loopback port and listens; *sa gets its address. */
static void bind_listen(int s, struct sockaddr_in *sa)
{
        socklen_t len = sizeof(*sa);

        *sa = (struct sockaddr_in){ .sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        ck_assert_int_eq(bind(s, (struct sockaddr *)sa, sizeof(*sa)), 0);
        ck_assert_int_eq(getsockname(s, (struct sockaddr *)sa, &len), 0);
        ck_assert_int_eq(listen(s, 1), 0);
}

void conf_case_exclusiveaddruse(int _i)
{
        BOOL on = TRUE, off = FALSE;
        struct sockaddr_in sa;
        int a = tcp_socket(), b = tcp_socket(), r = tcp_socket();
        int file = open("/dev/null", O_RDONLY | O_CLOEXEC);

        ck_assert_int_eq(SO_EXCLUSIVEADDRUSE, (int)(~SO_REUSEADDR)); /* Windows' definition */
        /* Set before bind, as Windows code does: it succeeds, and the address is a's alone. */
        ck_assert_int_eq(setsockopt(a, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&on,
                                    sizeof(on)),
                         0);
        bind_listen(a, &sa);
        ck_assert_int_eq(bind(b, (struct sockaddr *)&sa, sizeof(sa)), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEADDRINUSE);
        /* FALSE succeeds and changes nothing: Linux has no weaker binding to return to. */
        ck_assert_int_eq(setsockopt(a, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&off,
                                    sizeof(off)),
                         0);
        ck_assert_int_eq(bind(b, (struct sockaddr *)&sa, sizeof(sa)), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEADDRINUSE);
        /* A socket with SO_REUSEADDR: WSAEINVAL, as Windows refuses the two options together. */
        ck_assert_int_eq(setsockopt(r, SOL_SOCKET, SO_REUSEADDR, (const char *)&on, sizeof(on)),
                         0);
        WSASetLastError(0);
        ck_assert_int_eq(setsockopt(r, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&on,
                                    sizeof(on)),
                         SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEINVAL);
        /* An optlen too small, or negative for any option: WSAEFAULT; not a socket. */
        ck_assert_int_eq(setsockopt(b, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&on, 2),
                         SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEFAULT);
        ck_assert_int_eq(setsockopt(b, IPPROTO_TCP, TCP_NODELAY, (const char *)&on, -1),
                         SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEFAULT);
        ck_assert_int_eq(setsockopt(file, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&on,
                                    sizeof(on)),
                         SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAENOTSOCK);
        /* Other options reach the kernel unchanged. */
        ck_assert_int_eq(setsockopt(b, IPPROTO_TCP, TCP_NODELAY, (const char *)&on, sizeof(on)),
                         0);
        close(file);
        closesocket(a);
        closesocket(b);
        closesocket(r);
}

void conf_case_exclusiveaddruse_state(int _i)
{
        BOOL on = TRUE, v = 99;
        int len = (int)sizeof(v), s = tcp_socket(), x = tcp_socket(), t = tcp_socket();
        struct sockaddr_in sa;

        /* Divergence: no state is kept.  getsockopt says what a bind would do: exclusive on a
         * new socket (Windows: FALSE until set)... */
        ck_assert_int_eq(getsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (char *)&v, &len), 0);
        ck_assert_int_eq(len, sizeof(v));
        ck_assert_int_eq(v, TRUE);
        /* ...and after SO_EXCLUSIVEADDRUSE, SO_REUSEADDR is accepted (Windows: WSAEINVAL) and
         * makes the socket's binds shareable. */
        ck_assert_int_eq(setsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&on,
                                    sizeof(on)),
                         0);
        ck_assert_int_eq(setsockopt(s, SOL_SOCKET, SO_REUSEADDR, (const char *)&on, sizeof(on)),
                         0);
        ck_assert_int_eq(getsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (char *)&v, &len), 0);
        ck_assert_int_eq(v, FALSE);
        /* Another socket with SO_REUSEADDR binding an exclusive socket's address gets
         * WSAEADDRINUSE (Windows: WSAEACCES). */
        ck_assert_int_eq(setsockopt(x, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&on,
                                    sizeof(on)),
                         0);
        bind_listen(x, &sa);
        ck_assert_int_eq(setsockopt(t, SOL_SOCKET, SO_REUSEADDR, (const char *)&on, sizeof(on)),
                         0);
        ck_assert_int_eq(bind(t, (struct sockaddr *)&sa, sizeof(sa)), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEADDRINUSE);
        closesocket(s);
        closesocket(x);
        closesocket(t);
}

/* ---- limits a Windows program could meet ---------------------------------------------------- */

void conf_case_limit_ports(int _i)
{
        HANDLE h[64];

        /* Divergence: a process holds at most --max-ports ports (64 by default; the fixture's
         * port is the first); Windows has no such bound. */
        for (int i = 0; i < 63; i++) {
                h[i] = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
                ck_assert_ptr_nonnull(h[i]);
        }
        ck_assert_ptr_null(CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_ENOUGH_QUOTA);
        ck_assert(CloseHandle(h[0])); /* one closed: one more can be made */
        h[0] = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_ptr_nonnull(h[0]);
        for (int i = 0; i < 63; i++)
                ck_assert(CloseHandle(h[i]));
}

/* ---- WSASend / WSARecv and datagram truncation -------------------------------------------- */

void conf_case_wsasend_wsarecv(int _i)
{
        char a[] = "hello ", b[] = "world", in1[4], in2[16];
        WSABUF out[2] = { { 6, a }, { 5, b } }, rin[2] = { { 4, in1 }, { 16, in2 } };
        DWORD sent = 0, got = 0, flags = 0;
        WSAOVERLAPPED ov;
        int cl, sv;

        signal(SIGPIPE, SIG_DFL);
        tcp_pair(&cl, &sv);
        /* Gather on send, scatter on receive; no overlapped I/O. */
        ck_assert_int_eq(WSASend(cl, out, 2, &sent, 0, NULL, NULL), 0);
        ck_assert_uint_eq(sent, 11);
        usleep(20000);
        ck_assert_int_eq(WSARecv(sv, rin, 2, &got, &flags, NULL, NULL), 0);
        ck_assert_uint_eq(got, 11);
        ck_assert(!memcmp(in1, "hell", 4) && !memcmp(in2, "o world", 7));
        ZeroMemory(&ov, sizeof(ov));
        ck_assert_int_eq(WSASend(cl, out, 2, &sent, 0, &ov, NULL), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEOPNOTSUPP);
        /* A reset peer: WSAECONNRESET, no SIGPIPE. */
        reset_peer(sv);
        usleep(50000);
        for (int i = 0; i < 2; i++) {
                ck_assert_int_eq(WSASend(cl, out, 2, &sent, 0, NULL, NULL), SOCKET_ERROR);
                ck_assert_int_eq(WSAGetLastError(), WSAECONNRESET);
        }
        closesocket(cl);
}

void conf_case_recv_msgsize(int _i)
{
        char big[100] = "0123456789", small[4];
        WSABUF rin = { sizeof(small), small };
        DWORD got = 0, flags = 0;
        int a, b;

        /* A datagram larger than the buffer: WSAEMSGSIZE, the buffer filled, the rest gone. */
        udp_pair(&a, &b);
        ck_assert_int_eq(send(b, big, sizeof(big), 0), (int)sizeof(big));
        ck_assert_int_eq(send(b, big, sizeof(big), 0), (int)sizeof(big));
        usleep(20000);
        ck_assert_int_eq(recv(a, small, sizeof(small), 0), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEMSGSIZE);
        ck_assert(!memcmp(small, "0123", 4));
        ck_assert_int_eq(WSARecv(a, &rin, 1, &got, &flags, NULL, NULL), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAEMSGSIZE);
        ck_assert_uint_eq(got, sizeof(small));
        ck_assert_int_eq(recv(a, small, sizeof(small), 0), SOCKET_ERROR); /* nothing left */
        ck_assert_int_eq(WSAGetLastError(), WSAEWOULDBLOCK);
        closesocket(a);
        close(b);
}

void conf_case_limit_waits(int _i)
{
        struct gq g[2];
        pthread_t t[2];
        BOOL ok;
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov;

        /* Divergence: a process may have at most --max-waits calls waiting at once (1024 by
         * default, 2 here); the next waiting call fails with ERROR_NOT_ENOUGH_QUOTA. */
        restart_daemon((const char *const[]){ "--max-posted=64", "--max-waits=2", NULL });
        for (int i = 0; i < 2; i++) {
                g[i] = (struct gq){ .port = P, .ms = 5000 };
                pthread_create(&t[i], NULL, gq_thread, &g[i]);
        }
        wait_waiters(2);
        ok = GetQueuedCompletionStatus(P, &bytes, &key, &ov, 1000);
        ck_assert(!ok);
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_ENOUGH_QUOTA);
        /* ProcessSocketNotifications answers only WSAE* codes: WSAENOBUFS. */
        {
                OVERLAPPED_ENTRY e;
                UINT32 n = 77;

                ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 1000, 1, &e, &n),
                                  WSAENOBUFS);
                ck_assert_uint_eq(n, 77);
        }
        /* A zero timeout does not wait, so it is not refused. */
        ok = GetQueuedCompletionStatus(P, &bytes, &key, &ov, 0);
        ck_assert(!ok);
        ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
        for (int i = 0; i < 2; i++)
                ck_assert(PostQueuedCompletionStatus(P, 0, 9, NULL));
        for (int i = 0; i < 2; i++) {
                pthread_join(t[i], NULL);
                ck_assert(g[i].ok);
        }
}

/* ---- what remains of EDGE (docs/compatibility.md, rule 15) --------------------------------- */

void conf_case_edge_local_shutdown(int _i)
{
        int cl, sv;

        /* Divergence: a local shutdown(SD_SEND) is a key-less wake-up with no new hang-up bit,
         * so the OUT side takes it for buffer space freeing and reports OUT, which held
         * already. */
        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_OUT, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 100);
        ck_assert_int_eq(shutdown(sv, SD_SEND), 0);
        ck_assert_uint_eq(collect(P, 1, E_OUT, 1000), E_OUT);
        closesocket(sv);
        close(cl);
}

void conf_case_edge_reset_unread(int _i)
{
        int cl, sv;

        /* Divergence: a reset is a key-less wake-up; with unread data IN still holds and is
         * reported again with HANGUP and ERR, though it started to hold earlier. */
        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_OUT | F_HUP, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 1), E_IN);
        reset_peer(cl);
        ck_assert_uint_eq(collect(P, 1, E_IN | E_HUP | E_ERR, 1000), E_IN | E_HUP | E_ERR);
        closesocket(sv);
}

void conf_case_edge_reexec(int _i)
{
        int cl, sv, base;
        long before = daemon_count("reexecs");
        long long end = now_ms() + test_timeout_ms(5000);

        /* An EDGE registration's OUT side (its duplicate and state) survives a re-exec of the
         * daemon in place: it still reports transitions, and closing frees both descriptors.
         * Not under a wrapper such as valgrind: the new image would run without it, with other
         * descriptors than the fixture counted. */
        if (getenv("SN_TEST_DAEMON_WRAPPER") && *getenv("SN_TEST_DAEMON_WRAPPER"))
                return;
        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_OUT | F_HUP, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 100);
        base = steady_fds();
        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        while (daemon_count("reexecs") == before)
                ck_assert_msg(now_ms() < end, "the daemon did not re-exec");
        ck_assert_int_eq(test_daemon_wait_fds(&D, base, 3000), base);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 1), E_IN); /* IN alone: the OUT side still knows OUT held */
        shutdown(cl, SHUT_WR);
        ck_assert_uint_eq(collect(P, 1, E_IN | E_HUP, 1000), E_IN | E_HUP);
        ck_assert_int_eq(closesocket(sv), 0);
        ck_assert_int_eq(test_daemon_wait_fds(&D, base - 2, 3000), base - 2);
        close(cl);
}

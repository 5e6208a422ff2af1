/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * events.c - sections E, F and G of the spec: what events mean, coalescing and order, and the
 * lifetime guarantees of closesocket and REMOVE (rows 43-63).
 */
#include "tests/conformance/conformance.h"

void conf_row_43(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, (uintptr_t)&e, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        memset(&e, 0x5a, sizeof(e));
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.lpCompletionKey, (ULONG_PTR)&e);
        ck_assert_uint_eq(e.dwNumberOfBytesTransferred, E_OUT);
        ck_assert_ptr_null(e.lpOverlapped);
        ck_assert_uint_eq(e.Internal, 0);
        close(cl);
        closesocket(sv);
}

void conf_row_44(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        usleep(10000);
        /* Readable and writable; the filter says IN: only IN. */
        ck_assert_uint_eq(reg(P, sv, 44, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 44), E_IN);
        /* Filter OUT on a reset connection: ERR arrives though not asked for. */
        ck_assert_uint_eq(reg(P, sv, 44, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        reset_peer(cl);
        ck_assert_uint_eq(collect(P, 44, E_ERR, 2000) & E_ERR, E_ERR);
        closesocket(sv);
}

void conf_row_45(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 45, SOCK_NOTIFY_REGISTER_EVENT_NONE, OP_ENABLE, LEVEL),
                          ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100);
        reset_peer(cl);
        ck_assert_uint_eq(collect(P, 45, E_ERR, 2000), E_ERR);
        closesocket(sv);
}

void conf_row_46(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 46, 0x08, OP_ENABLE, LEVEL), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 46, 0x40, OP_ENABLE, LEVEL), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 46, 0x107, OP_ENABLE, LEVEL), WSAEINVAL);
        close(cl);
        closesocket(sv);
}

void conf_row_47(int _i)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port), c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_uint_eq(reg(P, l, 47, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        none(P, 50);
        sa.sin_port = port;
        ck_assert_int_eq(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_uint_eq(one(P, 47), E_IN);
        closesocket(l);
        close(c);
}

void conf_row_48(int _i)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port), s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int acc;
        char c;

        ck_assert_uint_eq(reg(P, s, 48, F_IN | F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        sa.sin_port = port;
        ck_assert(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS);
        ck_assert_uint_eq(collect(P, 48, E_OUT, 2000), E_OUT);
        ck_assert_int_eq(send(s, "y", 1, MSG_DONTWAIT), 1); /* OUT: send did not block */
        acc = accept(l, NULL, NULL);
        ck_assert_int_eq(send(acc, "z", 1, 0), 1);
        ck_assert_uint_eq(reg(P, s, 48, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 48), E_IN);
        ck_assert_int_eq(recv(s, &c, 1, MSG_DONTWAIT), 1); /* IN: recv did not block */
        close(acc);
        close(l);
        closesocket(s);
}

void conf_row_49(int _i)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        unsigned short port;
        int l = tcp_listener(&port), s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        UINT32 ev;

        close(l); /* nothing listens there now */
        ck_assert_uint_eq(reg(P, s, 49, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        sa.sin_port = port;
        connect(s, (struct sockaddr *)&sa, sizeof(sa));
        ev = one(P, 49);
        ck_assert_uint_eq(ev, E_ERR); /* ERR alone: no OUT, and no IN or HANGUP either */
        closesocket(s);
}

void conf_row_50(int _i)
{
        int cl, sv, cl2, sv2;

        tcp_pair(&cl, &sv);
        tcp_pair(&cl2, &sv2);
        ck_assert_uint_eq(reg(P, sv, 50, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv2, 51, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        none(P, 50);
        shutdown(cl, SHUT_WR); /* FIN */
        ck_assert_uint_eq(collect(P, 50, E_HUP, 2000) & E_HUP, E_HUP);
        reset_peer(cl2); /* RST */
        ck_assert_uint_eq(collect(P, 51, E_HUP, 2000) & E_HUP, E_HUP);
        close(cl);
        closesocket(sv);
        closesocket(sv2);
}

void conf_row_51(int _i)
{
        int a, b;
        UINT32 seen;

        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, a, 51, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(b, "x", 1, 0), 1);
        close(b);
        shutdown(a, SHUT_RDWR);
        seen = collect(P, 51, 0xff, 300);
        ck_assert_uint_ne(seen, 0);
        ck_assert_uint_eq(seen & E_HUP, 0);
        closesocket(a);
}

/* Row 50: registered with filter on port P under trig, socket sv shut down locally with how
 * reports no HANGUP; the peer's close that comes later does. */
static void local_shutdown(int how, UINT16 filter, UINT8 trig, uintptr_t key)
{
        int cl, sv;
        UINT32 seen;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
        ck_assert_int_eq(shutdown(sv, how), 0);
        seen = collect(P, key, E_HUP, 300);
        ck_assert_msg(!(seen & E_HUP), "shutdown(%d), filter %#x, trigger %#x: %#x", how,
                      (unsigned)filter, (unsigned)trig, seen);
        close(cl); /* the peer's FIN */
        seen = collect(P, key, E_HUP, 2000);
        ck_assert_msg(seen & E_HUP, "shutdown(%d), filter %#x, trigger %#x, then the peer's close: %#x",
                      how, (unsigned)filter, (unsigned)trig, seen);
        closesocket(sv);
}

void conf_case_shutdown_receive(int _i)
{
        int cl, sv;
        long t0;

        /* Servers that drop a connection on HANGUP must keep a half-open one: a local
         * shutdown(SD_RECEIVE) is not the peer's doing.  Every trigger mode agrees, and the
         * peer's close still reports HANGUP when it comes. */
        local_shutdown(SD_RECEIVE, F_HUP, LEVEL, 1);
        local_shutdown(SD_RECEIVE, F_HUP, LEVEL | ONESHOT, 2);
        local_shutdown(SD_RECEIVE, F_HUP, EDGE, 3);
        local_shutdown(SD_RECEIVE, F_HUP, EDGE | ONESHOT, 4);
        local_shutdown(SD_RECEIVE, F_IN | F_OUT | F_HUP, LEVEL, 5);
        local_shutdown(SD_RECEIVE, F_IN | F_OUT | F_HUP, EDGE, 6);

        /* A shut down socket with nothing to report leaves the daemon idle while a call
         * waits: re-arming its LEVEL+ONESHOT item would report it at once, again and again. */
        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 7, F_HUP, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_int_eq(shutdown(sv, SD_RECEIVE), 0);
        none(P, 50);
        t0 = test_daemon_cpu_ticks(&D);
        none(P, 500);
        ck_assert_int_le(test_daemon_cpu_ticks(&D) - t0, sysconf(_SC_CLK_TCK) / 10);
        close(cl);
        ck_assert_uint_eq(one(P, 7), E_HUP);
        none(P, 100); /* ONESHOT: that was the one entry */
        closesocket(sv);
}

void conf_case_shutdown_both(int _i)
{
        /* A local shutdown(SD_BOTH) sends a FIN but the peer has not ended anything: no
         * HANGUP until its own FIN comes. */
        local_shutdown(SD_BOTH, F_HUP, LEVEL, 1);
        local_shutdown(SD_BOTH, F_HUP, LEVEL | ONESHOT, 2);
        local_shutdown(SD_BOTH, F_HUP, EDGE, 3);
        local_shutdown(SD_BOTH, F_HUP, EDGE | ONESHOT, 4);
        local_shutdown(SD_BOTH, F_IN | F_OUT | F_HUP, LEVEL, 5);
}

/* OR of the events seen for key within ms, stopping once want is seen; a ONESHOT registration
 * (trig) of s is enabled again after each of its entries, as a server does. */
static UINT32 collect_rearm(SOCKET s, uintptr_t key, UINT16 filter, UINT8 trig, UINT32 want,
                            int ms)
{
        long long end = now_ms() + test_timeout_ms(ms);
        UINT32 seen = 0;

        while ((seen & want) != want && now_ms() < end) {
                OVERLAPPED_ENTRY e[8];
                ULONG n = deq(P, e, 8, 20);
                bool again = false;

                for (ULONG i = 0; i < n; i++)
                        if (e[i].lpCompletionKey == key) {
                                seen |= SocketNotificationRetrieveEvents(&e[i]);
                                again = true;
                        }
                if (again && trig & ONESHOT)
                        ck_assert_uint_eq(reg(P, s, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
        }
        return seen;
}

/* Row 50, the other ends of a local shutdown(how): registered with filter under trig, no
 * HANGUP, and after the peer's reset (rst) or close its HANGUP (and ERR for a reset) is
 * reported; with cycle, the registration is disabled and enabled again in between. */
static void shutdown_then(int how, bool rst, UINT16 filter, UINT8 trig, bool cycle, uintptr_t key)
{
        UINT32 seen, want = rst ? E_HUP | E_ERR : E_HUP;
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
        ck_assert_int_eq(shutdown(sv, how), 0);
        seen = collect_rearm(sv, key, filter, trig, E_HUP, 100);
        ck_assert_msg(!(seen & E_HUP), "shutdown(%d), filter %#x, trigger %#x: %#x", how,
                      (unsigned)filter, (unsigned)trig, seen);
        if (cycle) {
                ck_assert_uint_eq(reg(P, sv, key, filter, OP_DISABLE, trig), ERROR_SUCCESS);
                ck_assert_uint_eq(reg(P, sv, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
                seen = collect_rearm(sv, key, filter, trig, E_HUP, 50);
                ck_assert_msg(!(seen & E_HUP), "shutdown(%d), filter %#x, trigger %#x, enabled "
                              "again: %#x", how, (unsigned)filter, (unsigned)trig, seen);
        }
        if (rst)
                reset_peer(cl);
        else
                close(cl);
        seen = collect_rearm(sv, key, filter, trig, want, 2000);
        ck_assert_msg((seen & want) == want,
                      "shutdown(%d), filter %#x, trigger %#x, cycle %d, then the peer's %s: %#x",
                      how, (unsigned)filter, (unsigned)trig, cycle, rst ? "reset" : "close", seen);
        closesocket(sv);
}

void conf_case_shutdown_then_reset(int _i)
{
        static const UINT8 trigs[] = { LEVEL, LEVEL | ONESHOT, EDGE, EDGE | ONESHOT };
        static const UINT16 filters[] = { F_HUP, F_OUT | F_HUP, F_IN | F_OUT | F_HUP };
        uintptr_t key = 100;
        int cl[5], sv[5];
        long t0;

        /* Whatever the trigger, the filter and the local shutdown, the peer's close or reset
         * that follows is reported, also after DISABLE and ENABLE of the quiet registration. */
        for (int how = SD_RECEIVE; how <= SD_BOTH; how += SD_BOTH - SD_RECEIVE)
                for (int rst = 0; rst < 2; rst++)
                        for (size_t t = 0; t < SN_ARRAY_SIZE(trigs); t++)
                                for (size_t f = 0; f < SN_ARRAY_SIZE(filters); f++)
                                        shutdown_then(how, rst, filters[f], trigs[t],
                                                      (t + f + (size_t)rst) % 2, key++);

        /* Quiet LEVEL items leave the daemon idle while a call waits: filter HANGUP after
         * SD_RECEIVE and SD_BOTH, filter NONE after SD_BOTH (persistent and one-shot), and
         * filter HANGUP after SD_RECEIVE while the peer keeps sending. */
        for (int i = 0; i < 5; i++)
                tcp_pair(&cl[i], &sv[i]);
        ck_assert_uint_eq(reg(P, sv[0], 500, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv[1], 501, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv[2], 502, 0, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv[3], 503, 0, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv[4], 504, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(shutdown(sv[0], SD_RECEIVE), 0);
        for (int i = 1; i < 4; i++)
                ck_assert_int_eq(shutdown(sv[i], SD_BOTH), 0);
        ck_assert_int_eq(shutdown(sv[4], SD_RECEIVE), 0);
        none(P, 100);
        t0 = test_daemon_cpu_ticks(&D);
        for (int i = 0; i < 50; i++)
                ck_assert_int_eq(send(cl[4], "x", 1, 0), 1);
        none(P, 500);
        ck_assert_int_le(test_daemon_cpu_ticks(&D) - t0, sysconf(_SC_CLK_TCK) / 10);
        for (int i = 0; i < 5; i++)
                close(cl[i]);
        ck_assert_uint_eq(collect(P, 500, E_HUP, 2000) & E_HUP, E_HUP);
        ck_assert_uint_eq(collect(P, 501, E_HUP, 2000) & E_HUP, E_HUP);
        ck_assert_uint_eq(collect(P, 504, E_HUP, 2000) & E_HUP, E_HUP);
        for (int i = 0; i < 5; i++)
                closesocket(sv[i]);
}

void conf_case_shutdown_reexec(int _i)
{
        static const UINT8 trigs[] = { LEVEL, LEVEL | ONESHOT, EDGE, EDGE | ONESHOT, EDGE };
        static const UINT16 filters[] = { F_HUP, F_HUP, F_HUP, F_HUP, F_IN | F_OUT | F_HUP };
        int cl[5], sv[5], a, b, c, d;
        long before = daemon_count("reexecs"), t0;
        long long end = now_ms() + test_timeout_ms(5000);
        UINT32 seen;

        /* A quiet registration is not saved as such (docs/state.md): the new image reads the
         * sockets again, reports no HANGUP for the local shutdowns, stays idle, and reports
         * the peers' closes.  Not under a wrapper: the new image would run without it. */
        if (getenv("SN_TEST_DAEMON_WRAPPER") && *getenv("SN_TEST_DAEMON_WRAPPER"))
                return;
        for (int i = 0; i < 5; i++) {
                tcp_pair(&cl[i], &sv[i]);
                ck_assert_uint_eq(reg(P, sv[i], 10 + (uintptr_t)i, filters[i], OP_ENABLE, trigs[i]),
                                  ERROR_SUCCESS);
                ck_assert_int_eq(shutdown(sv[i], i == 4 ? SD_RECEIVE : SD_BOTH), 0);
        }
        collect(P, 0, 1, 200); /* whatever the local shutdowns report (IN for the last) */
        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        while (daemon_count("reexecs") == before)
                ck_assert_msg(now_ms() < end, "the daemon did not re-exec");
        for (int i = 0; i < 5; i++) {
                seen = collect(P, 10 + (uintptr_t)i, E_HUP, 100);
                ck_assert_msg(!(seen & E_HUP), "registration %d after the re-exec: %#x", i, seen);
        }
        t0 = test_daemon_cpu_ticks(&D);
        collect(P, 0, 1, 500);
        ck_assert_int_le(test_daemon_cpu_ticks(&D) - t0, sysconf(_SC_CLK_TCK) / 10);
        for (int i = 0; i < 5; i++) {
                close(cl[i]);
                seen = collect(P, 10 + (uintptr_t)i, E_HUP, 2000);
                ck_assert_msg(seen & E_HUP, "registration %d, the peer's close: %#x", i, seen);
                closesocket(sv[i]);
        }

        /* A quiet LEVEL item enabled again as EDGE, a quiet LEVEL+ONESHOT one as LEVEL. */
        tcp_pair(&a, &b);
        tcp_pair(&c, &d);
        ck_assert_uint_eq(reg(P, b, 30, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, d, 31, F_HUP, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_int_eq(shutdown(b, SD_RECEIVE), 0);
        ck_assert_int_eq(shutdown(d, SD_BOTH), 0);
        none(P, 200);
        ck_assert_uint_eq(reg(P, b, 30, F_HUP, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, d, 31, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        none(P, 200);
        close(a);
        close(c);
        ck_assert_uint_eq(collect(P, 30, E_HUP, 2000) & E_HUP, E_HUP);
        ck_assert_uint_eq(collect(P, 31, E_HUP, 2000) & E_HUP, E_HUP);
        closesocket(b);
        closesocket(d);
}

void conf_case_unix_shutdown_receive(int _i)
{
        int sv[2];

        /* Divergence: Linux records a local shutdown(SD_RECEIVE) of a Unix stream socket and
         * its peer's shutdown(SD_SEND) the same way on both sockets, so the daemon cannot tell
         * them apart and reports HANGUP. */
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_uint_eq(reg(P, sv[0], 1, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        none(P, 50);
        ck_assert_int_eq(shutdown(sv[0], SD_RECEIVE), 0);
        ck_assert_uint_eq(collect(P, 1, E_HUP, 1000), E_HUP);
        closesocket(sv[0]);
        close(sv[1]);
}

void conf_row_52(int _i)
{
        int cl, sv;
        char buf[4];

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 52, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        reset_peer(cl);
        ck_assert_uint_eq(collect(P, 52, E_ERR, 2000) & E_ERR, E_ERR);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), SOCKET_ERROR);
        ck_assert_int_eq(WSAGetLastError(), WSAECONNRESET);
        closesocket(sv);
}

void conf_row_53(int _i)
{
        OVERLAPPED_ENTRY e = { .dwNumberOfBytesTransferred = 0x12345678 };

        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e), 0x12345678);
        ck_assert(PostQueuedCompletionStatus(P, 0xfeed, 53, (LPOVERLAPPED)(uintptr_t)7));
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e), 0xfeed);
}

void conf_row_54(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e[8];

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(send(cl, "y", 1, 0), 1);
        usleep(10000);
        ck_assert_uint_eq(reg(P, sv, 54, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        /* Two arrivals and writability: one entry for the registration, carrying IN|OUT. */
        ck_assert_uint_eq(deq(P, e, 8, 1000), 1);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[0]), E_IN | E_OUT);
        ck_assert_uint_le(daemon_count("queued"), 1);
        close(cl);
        closesocket(sv);
}

void conf_row_55(int _i)
{
        OVERLAPPED_ENTRY e[8];

        for (uintptr_t k = 1; k <= 5; k++)
                ck_assert(PostQueuedCompletionStatus(P, 0, k, NULL));
        ck_assert_uint_eq(deq(P, e, 8, 1000), 5);
        for (ULONG i = 0; i < 5; i++)
                ck_assert_uint_eq(e[i].lpCompletionKey, i + 1);
}

void conf_row_56(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 56, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(collect(P, 56, E_REMOVE, 2000) & E_REMOVE, E_REMOVE);
        none(P, 100); /* nothing after the REMOVE, though the socket is still ready */
        close(cl);
        closesocket(sv);
}

void conf_row_57(int _i)
{
        int cl, sv, a, b;

        tcp_pair(&cl, &sv);
        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, sv, 57, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(send(b, "y", 1, 0), 1);
        usleep(10000);
        /* An EDGE enable of a ready socket harvests the port, which queues sv's IN packet;
         * the REMOVE then joins that packet. */
        ck_assert_uint_eq(reg(P, a, 571, F_IN, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 57), E_REMOVE | E_IN);
        remove_wait(P, a, 571);
        close(cl);
        closesocket(sv);
        closesocket(a);
        close(b);
}

void conf_row_58(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 58, F_IN | F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 58), E_OUT);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100);
        ck_assert_uint_eq(reg(P, sv, 58, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 58), E_IN);
        close(cl);
        closesocket(sv);
}

void conf_row_59(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 59, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(daemon_count("registrations"), 1);
        ck_assert_int_eq(closesocket(sv), 0);
        ck_assert_int_eq(daemon_count("registrations"), 0);
        none(P, 100);
        close(cl);
}

void conf_row_60(int _i)
{
        int cl, sv, a, b;

        tcp_pair(&cl, &sv);
        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, sv, 60, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_eq(send(b, "y", 1, 0), 1);
        usleep(10000);
        ck_assert_uint_eq(reg(P, a, 601, F_IN, OP_ENABLE, EDGE), ERROR_SUCCESS); /* queues sv's */
        ck_assert_int_eq(daemon_count("queued"), 1);
        ck_assert_int_eq(closesocket(sv), 0);
        ck_assert_int_eq(daemon_count("queued"), 0); /* discarded, not delivered */
        none(P, 50);
        remove_wait(P, a, 601);
        close(cl);
        closesocket(a);
        close(b);
}

void conf_row_61(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 61, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        remove_wait(P, sv, 61);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        shutdown(cl, SHUT_WR);
        none(P, 150);
        close(cl);
        closesocket(sv);
}

void conf_row_62(int _i)
{
        int cl, sv, dup1;

        tcp_pair(&cl, &sv);
        dup1 = dup(sv);
        ck_assert_uint_eq(reg(P, sv, 62, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(closesocket(dup1), 0);
        ck_assert_int_eq(daemon_count("registrations"), 1);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 62), E_IN);
        close(cl);
        closesocket(sv);
}

void conf_row_63(int _i)
{
        int cl, sv, cl2, sv2;

        tcp_pair(&cl, &sv);
        tcp_pair(&cl2, &sv2);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(reg(P, sv, 63, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        remove_wait(P, sv, 63);
        /* Key 63 again, on another socket that is not readable: nothing of the old one. */
        ck_assert_uint_eq(reg(P, sv2, 63, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        none(P, 100);
        ck_assert_int_eq(send(cl2, "y", 1, 0), 1);
        ck_assert_uint_eq(one(P, 63), E_IN);
        close(cl);
        close(cl2);
        closesocket(sv);
        closesocket(sv2);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * registrations.c - sections C and D of the spec: registration operations and trigger flags
 * (rows 24-42).
 */
#include "tests/conformance/conformance.h"

void conf_row_24(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 0x2424, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 0x2424), E_OUT);
        close(cl);
        closesocket(sv);
}

void conf_row_25(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 25, F_OUT, OP_ENABLE, LEVEL | PERSISTENT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 25), E_OUT);
        ck_assert_uint_eq(one(P, 25), E_OUT); /* persistent: again */
        /* Overwritten to IN, one-shot. */
        ck_assert_uint_eq(reg(P, sv, 25, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        none(P, 50);
        ck_assert_int_eq(send(cl, "ab", 2, 0), 2);
        ck_assert_uint_eq(one(P, 25), E_IN);
        none(P, 50); /* one-shot now */
        close(cl);
        closesocket(sv);
}

void conf_row_26(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 261, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 261), E_OUT);
        ck_assert_uint_eq(reg(P, sv, 262, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 261), E_OUT);
        close(cl);
        closesocket(sv);
}

void conf_row_27(int _i)
{
        int cl, sv;
        SOCK_NOTIFY_REGISTRATION r = { .completionKey = (PVOID)27, .eventFilter = F_IN,
                                       .operation = OP_ENABLE, .triggerFlags = LEVEL | ONESHOT };
        OVERLAPPED_ENTRY e;
        UINT32 n;

        tcp_pair(&cl, &sv);
        r.socket = sv;
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 1000, 1, &e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(e.lpCompletionKey, 27);
        none(P, 50); /* fired: disabled */
        /* Re-enabled while still readable: the same call returns the new packet. */
        ck_assert_uint_eq(ProcessSocketNotifications(P, 1, &r, 0, 1, &e, &n), ERROR_SUCCESS);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e), E_IN);
        close(cl);
        closesocket(sv);
}

void conf_row_28(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 28, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100);
        /* Kept: another port cannot take the socket, and ENABLE finds the same key. */
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        ck_assert_uint_eq(reg(b, sv, 99, F_IN, OP_ENABLE, LEVEL), ERROR_ALREADY_EXISTS);
        CloseHandle(b);
        ck_assert_uint_eq(reg(P, sv, 99, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 28), E_IN);
        close(cl);
        closesocket(sv);
}

void conf_row_29(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 29, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 50);
        ck_assert_uint_eq(reg(P, sv, 29, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 29), E_IN | E_OUT);
        close(cl);
        closesocket(sv);
}

void conf_row_30(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_NOT_FOUND);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        ck_assert_uint_eq(reg(P, sv, 30, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        remove_wait(P, sv, 30);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        none(P, 50); /* and no packet */
        close(cl);
        closesocket(sv);
}

void conf_row_31(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e[4];

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 31, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_SUCCESS); /* disabled: still */
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);  /* removable */
        ck_assert_uint_eq(deq(P, e, 4, 1000), 1);
        ck_assert_uint_eq(e[0].lpCompletionKey, 31);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[0]), E_REMOVE);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100);
        close(cl);
        closesocket(sv);
}

void conf_row_32(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 32, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0xff, OP_DISABLE, 0xff), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 32), E_REMOVE);
        close(cl);
        closesocket(sv);
}

void conf_row_33(int _i)
{
        int cl, sv;
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 331, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        remove_wait(P, sv, 331);
        ck_assert_uint_eq(reg(P, sv, 332, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 332), E_OUT);
        remove_wait(P, sv, 332);
        ck_assert_uint_eq(reg(b, sv, 333, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(b, 333), E_OUT);
        CloseHandle(b);
        close(cl);
        closesocket(sv);
}

void conf_row_34(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 34, F_IN, OP_ENABLE, LEVEL | EDGE), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 34, F_IN, OP_ENABLE, 0), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 34, F_IN, OP_ENABLE, ONESHOT), WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        close(cl);
        closesocket(sv);
}

void conf_row_35(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 35, F_IN, OP_ENABLE, LEVEL | ONESHOT | PERSISTENT),
                          WSAEINVAL);
        ck_assert_uint_eq(reg(P, sv, 35, F_IN, OP_ENABLE, EDGE | ONESHOT | PERSISTENT), WSAEINVAL);
        close(cl);
        closesocket(sv);
}

void conf_row_36(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 36, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        for (int i = 0; i < 3; i++)
                ck_assert_uint_eq(one(P, 36), E_OUT);
        close(cl);
        closesocket(sv);
}

void conf_row_37(int _i)
{
        int sp[2];
        char big[65536] = { 0 };

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
        ck_assert_uint_eq(reg(P, sp[0], 37, F_OUT, OP_ENABLE, LEVEL | PERSISTENT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 37), E_OUT);
        ck_assert_uint_eq(one(P, 37), E_OUT);
        while (send(sp[0], big, sizeof(big), MSG_DONTWAIT) > 0)
                ;
        ck_assert_int_eq(errno, EAGAIN); /* send would block: OUT no longer holds */
        none(P, 100);
        drain(sp[1]);
        ck_assert_uint_eq(one(P, 37), E_OUT);
        closesocket(sp[0]);
        close(sp[1]);
}

void conf_row_38(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 38, F_IN | F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 38), E_OUT);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100); /* IN is disabled too */
        ck_assert_uint_eq(reg(P, sv, 38, F_IN | F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 38), E_IN | E_OUT);
        close(cl);
        closesocket(sv);
}

void conf_row_39(int _i)
{
        int a, b, c, d;

        udp_pair(&a, &b);
        udp_pair(&c, &d);
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        usleep(10000);
        /* Already readable: not reported. */
        ck_assert_uint_eq(reg(P, a, 39, F_IN, OP_ENABLE, EDGE), ERROR_SUCCESS);
        /* Already writable: not reported. */
        ck_assert_uint_eq(reg(P, c, 391, F_OUT, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 100);
        /* A condition that starts to hold is. */
        drain(a);
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        ck_assert_uint_eq(one(P, 39), E_IN);
        closesocket(a);
        close(b);
        closesocket(c);
        close(d);
}

void conf_row_40(int _i)
{
        int a, b;

        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, a, 40, F_IN, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        ck_assert_uint_eq(one(P, 40), E_IN);
        /* Divergence: Windows reports nothing more until the socket was drained; Linux signals
         * every arrival, so this second datagram gives another IN. */
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        ck_assert_uint_eq(one(P, 40), E_IN);
        closesocket(a);
        close(b);
}

void conf_row_41(int _i)
{
        int a, b;

        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, a, 41, F_IN, OP_ENABLE, EDGE | ONESHOT), ERROR_SUCCESS);
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        ck_assert_uint_eq(one(P, 41), E_IN);
        drain(a);
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        none(P, 100); /* disabled after one packet */
        /* Re-enabled while readable: that holds already, so a new transition is needed. */
        ck_assert_uint_eq(reg(P, a, 41, F_IN, OP_ENABLE, EDGE | ONESHOT), ERROR_SUCCESS);
        none(P, 100);
        drain(a);
        ck_assert_int_eq(send(b, "3", 1, 0), 1);
        ck_assert_uint_eq(one(P, 41), E_IN);
        closesocket(a);
        close(b);
}

void conf_row_42(int _i)
{
        struct gq g[3];
        pthread_t t[3];
        int cl, sv, got = 0;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 42, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        for (int i = 0; i < 3; i++) {
                g[i] = (struct gq){ .port = P, .ms = 500 };
                pthread_create(&t[i], NULL, gq_thread, &g[i]);
        }
        wait_waiters(3);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        for (int i = 0; i < 3; i++) {
                pthread_join(t[i], NULL);
                got += g[i].ok && g[i].key == 42;
        }
        ck_assert_int_eq(got, 1);
        close(cl);
        closesocket(sv);
}

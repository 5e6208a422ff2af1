/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * rules.c - sections 3 and 4 of the spec (our rules, and what the daemon adds on Linux), and
 * the everyday cases users hit.
 */
#include "tests/conformance/conformance.h"

void conf_rule_01(int _i)
{
        OVERLAPPED_ENTRY e;
        UINT32 n;
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov;

        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 10, 1, &e, &n), 258);
        ck_assert(!GetQueuedCompletionStatus(P, &bytes, &key, &ov, 10));
        ck_assert_uint_eq(GetLastError(), 258);
        ck_assert_uint_ne(GetLastError(), ERROR_TIMEOUT);
}

void conf_rule_02(int _i)
{
        int cl, sv, a, b;

        tcp_pair(&cl, &sv);
        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, sv, 2, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 2), E_OUT);
        ck_assert_uint_eq(one(P, 2), E_OUT); /* not one-shot */
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, a, 21, F_IN, OP_ENABLE, EDGE), ERROR_SUCCESS);
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        ck_assert_uint_eq(one(P, 21), E_IN);
        drain(a);
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        ck_assert_uint_eq(one(P, 21), E_IN); /* not one-shot either */
        close(cl);
        closesocket(sv);
        closesocket(a);
        close(b);
}

void conf_rule_03(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e[8];

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 3, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_SUCCESS);
        none(P, 100); /* DISABLE queues no packet of its own */
        ck_assert_uint_eq(reg(P, sv, 3, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        shutdown(cl, SHUT_WR);
        for (int i = 0; i < 5; i++) {
                ULONG n = deq(P, e, 8, 200);
                for (ULONG k = 0; k < n; k++)
                        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e[k]) &
                                                  ~(UINT32)SOCK_NOTIFY_EVENTS_ALL,
                                          0);
        }
        close(cl);
        closesocket(sv);
}

void conf_rule_04(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 4, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 4), E_OUT);
        none(P, 50);
        ck_assert_uint_eq(reg(P, sv, 44, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 4), E_OUT); /* re-armed, first key kept */
        close(cl);
        closesocket(sv);
}

void conf_rule_05(int _i)
{
        int cl, sv;
        UINT32 seen;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 5, 0, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100); /* readable and writable, nothing reported */
        reset_peer(cl);
        seen = collect(P, 5, E_ERR, 2000);
        ck_assert_uint_eq(seen, E_ERR);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(collect(P, 5, E_REMOVE, 1000) & ~(UINT32)E_ERR, E_REMOVE);
        closesocket(sv);
}

void conf_rule_06(int _i)
{
        int cl, sv, a, b;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 6, F_IN | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        close(cl);
        ck_assert_uint_eq(collect(P, 6, E_IN | E_HUP, 2000), E_IN | E_HUP);
        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, a, 61, F_IN | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(b, "x", 1, 0), 1);
        close(b);
        ck_assert_uint_eq(collect(P, 61, E_IN | E_HUP, 300), E_IN);
        closesocket(sv);
        closesocket(a);
}

void conf_rule_07(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 7, F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        reset_peer(cl);
        ck_assert_uint_eq(collect(P, 7, E_ERR | E_HUP, 2000), E_ERR | E_HUP);
        /* The error has not been read: ERR and HANGUP again, after each dequeue. */
        for (int i = 0; i < 3; i++)
                ck_assert_uint_eq(one(P, 7) & (E_ERR | E_HUP), E_ERR | E_HUP);
        closesocket(sv);
}

void conf_rule_08(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e[4];

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 8, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(deq(P, e, 4, 1000), 1);
        none(P, 100);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_NOT_FOUND);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        close(cl);
        closesocket(sv);
}

void conf_rule_09(int _i)
{
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(b, sv, 9, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert(PostQueuedCompletionStatus(b, 0, 90, NULL));
        ck_assert(CloseHandle(b));
        ck_assert_int_eq(daemon_count("registrations"), 0); /* dropped */
        ck_assert_int_eq(daemon_count("queued"), 0);        /* discarded */
        ck_assert_uint_eq(reg(P, sv, 91, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS); /* released */
        none(P, 50); /* and no REMOVE anywhere */
        ck_assert(!PostQueuedCompletionStatus(b, 0, 0, NULL));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        close(cl);
        closesocket(sv);
}

void conf_rule_10(int _i)
{
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        int cl, sv, file = open("/dev/null", O_RDONLY | O_CLOEXEC);
        OVERLAPPED_ENTRY e;
        UINT32 n;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, file, 10, F_IN, OP_ENABLE, LEVEL), 10038);
        ck_assert_uint_eq(reg(P, sv, 10, 0x10, OP_ENABLE, LEVEL), 10022);
        ck_assert_uint_eq(reg(P, sv, 10, F_IN, OP_ENABLE, LEVEL), 0);
        ck_assert_uint_eq(reg(b, sv, 10, F_IN, OP_ENABLE, LEVEL), 183);
        ck_assert_uint_eq(reg(b, sv, 10, 0, OP_REMOVE, 0), 1168);
        /* Call codes are WSAE* (10022 = WSAEINVAL) for a bad port and bad arguments alike. */
        ck_assert_uint_eq(ProcessSocketNotifications(NULL, 0, NULL, 0, 1, &e, &n), 10022);
        ck_assert_uint_eq(ProcessSocketNotifications(P, 0, NULL, 1, 0, NULL, NULL), 10022);
        CloseHandle(b);
        close(file);
        close(cl);
        closesocket(sv);
}

void conf_rule_11(int _i)
{
        struct gq g[2] = { { .port = P, .ms = 400 }, { .port = P, .ms = 400 } };
        pthread_t t[2];
        int cl, sv, got = 0;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 11, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        for (int i = 0; i < 2; i++)
                pthread_create(&t[i], NULL, gq_thread, &g[i]);
        wait_waiters(2);
        ck_assert_int_eq(send(cl, "a", 1, 0), 1);
        usleep(50000);
        ck_assert_int_eq(send(cl, "b", 1, 0), 1); /* later data: not to the other thread */
        for (int i = 0; i < 2; i++) {
                pthread_join(t[i], NULL);
                got += g[i].ok;
        }
        ck_assert_int_eq(got, 1);
        close(cl);
        closesocket(sv);
}

void conf_rule_12(int _i)
{
        int fds[12], n = 0, file = open("/dev/null", O_RDONLY | O_CLOEXEC), cl, sv, a, b;
        unsigned short port;
        int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };

        tcp_pair(&cl, &sv);
        udp_pair(&a, &b);
        fds[n++] = sv;
        fds[n++] = a;
        fds[n++] = tcp_listener(&port);
        for (int i = 0; i < 3; i++) {
                int sp[2];
                ck_assert_int_eq(socketpair(AF_UNIX, types[i] | SOCK_CLOEXEC, 0, sp), 0);
                fds[n++] = sp[0];
                close(sp[1]);
        }
        fds[n++] = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        for (int i = 0; i < n; i++)
                ck_assert_uint_eq(reg(P, fds[i], 120 + (uintptr_t)i, F_IN, OP_ENABLE, LEVEL),
                                  ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, file, 12, F_IN, OP_ENABLE, LEVEL), WSAENOTSOCK);
        ck_assert_int_eq(daemon_count("registrations"), n);
        for (int i = 0; i < n; i++)
                closesocket(fds[i]);
        close(cl);
        close(b);
        close(file);
}

void conf_rule_13(int _i)
{
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 13, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(b, sv, 0, 0, OP_DISABLE, 0), ERROR_NOT_FOUND);
        ck_assert_uint_eq(reg(b, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        ck_assert_uint_eq(one(P, 13), E_OUT); /* untouched */
        CloseHandle(b);
        close(cl);
        closesocket(sv);
}

void conf_rule_14(int _i)
{
        int t = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int u = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

        ck_assert_uint_eq(reg(P, t, 14, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, u, 141, F_IN | F_OUT | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        none(P, 150); /* Linux polls both as OUT|HUP */
        closesocket(t);
        closesocket(u);
}

void conf_rule_15(int _i)
{
        int a, b;

        /* The exact rule (docs/compatibility.md): an EDGE registration reports nothing for what
         * holds when it is enabled; afterwards it reports a condition when the kernel signals
         * that condition: an arrival gives IN, not the OUT that held all along. */
        udp_pair(&a, &b);
        ck_assert_uint_eq(reg(P, a, 15, F_IN | F_OUT, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 100); /* writable at ENABLE: not reported */
        ck_assert_int_eq(send(b, "1", 1, 0), 1);
        ck_assert_uint_eq(one(P, 15), E_IN); /* IN started to hold; OUT did not change */
        none(P, 100);                        /* no wake-up, nothing */
        drain(a);
        ck_assert_int_eq(send(b, "2", 1, 0), 1);
        ck_assert_uint_eq(one(P, 15), E_IN); /* drained, then a new arrival: a new edge */
        closesocket(a);
        close(b);
}

/* What the peer of fin_then_zero_timeout() does before it closes. */
enum {
        DATA_NONE,  /* nothing */
        DATA_SENT,  /* sends a byte */
        DATA_TAKEN, /* sends a byte, whose IN is dequeued and which is read */
};

/* A TCP pair, sv registered with (filter, trig) under key, with a dequeue between the ENABLE and
 * the rest (looked) or not; the peer does what data says and closes.  Once sv itself polls as
 * hung up, the FIN began before the next call, so the very first zero-timeout dequeue, with
 * room for cc entries, must report IN|HANGUP (rule 16).  Returns whether it did, and prints
 * what it got otherwise. */
static bool fin_then_zero_timeout(uintptr_t key, UINT16 filter, UINT8 trig, int data,
                                  bool looked, ULONG cc)
{
        struct pollfd pfd;
        OVERLAPPED_ENTRY e[4];
        ULONG n;
        UINT32 ev = 0;
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
        if (looked) {
                /* LEVEL reports the OUT that holds; EDGE has nothing yet. */
                if (trig & LEVEL && filter & F_OUT)
                        ck_assert_uint_eq(collect(P, key, E_OUT, 1000), E_OUT);
                else
                        none(P, 0);
        }
        if (data)
                ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        if (data == DATA_TAKEN) {
                /* Its IN dequeued and the byte read, as a server does; a one-shot enabled again. */
                ck_assert_uint_eq(collect(P, key, E_IN, 1000) & E_IN, E_IN);
                drain(sv);
                if (trig & ONESHOT)
                        ck_assert_uint_eq(reg(P, sv, key, filter, OP_ENABLE, trig), ERROR_SUCCESS);
        }
        close(cl);
        pfd = (struct pollfd){ .fd = sv, .events = POLLRDHUP };
        ck_assert_int_eq(poll(&pfd, 1, test_timeout_ms(5000)), 1);
        ck_assert(pfd.revents & POLLRDHUP);
        n = deq(P, e, cc, 0);
        if (n == 1 && e[0].lpCompletionKey == key)
                ev = SocketNotificationRetrieveEvents(&e[0]);
        if ((ev & (E_IN | E_HUP)) != (E_IN | E_HUP))
                fprintf(stderr,
                        "filter %#x, trigger %#x, data %s, %s dequeue before, cc=%lu: the first "
                        "0 ms dequeue after the FIN returned %lu entries, events %#x\n",
                        (unsigned)filter, (unsigned)trig,
                        data == DATA_NONE ? "none" : data == DATA_SENT ? "sent" : "taken",
                        looked ? "a" : "no", (unsigned long)cc, (unsigned long)n, ev);
        closesocket(sv);
        return (ev & (E_IN | E_HUP)) == (E_IN | E_HUP);
}

void conf_rule_16(int _i)
{
        static const struct {
                UINT16 filter;
                UINT8 trig;
        } modes[] = {
                { F_IN | F_OUT | F_HUP, EDGE | PERSISTENT },
                { F_IN | F_OUT | F_HUP, EDGE | ONESHOT },
                { F_IN | F_HUP, EDGE | PERSISTENT },
                { F_IN | F_OUT | F_HUP, LEVEL | PERSISTENT },
                /* LEVEL+ONESHOT with OUT would fire at once on the OUT that holds. */
                { F_IN | F_HUP, LEVEL | ONESHOT },
        };
        uintptr_t key = 1;
        int runs = 0, missed = 0;

        for (ULONG cc = 1; cc <= 4; cc += 3) {
                for (int data = DATA_NONE; data <= DATA_TAKEN; data++) {
                        for (int looked = 0; looked < 2; looked++) {
                                for (size_t m = 0; m < SN_ARRAY_SIZE(modes); m++) {
                                        runs++;
                                        missed += !fin_then_zero_timeout(key++, modes[m].filter,
                                                                         modes[m].trig, data,
                                                                         looked, cc);
                                }
                        }
                }
        }
        ck_assert_msg(!missed, "%d of %d first zero-timeout dequeues missed the FIN", missed, runs);
}

void conf_L1(int _i)
{
        int cl, sv, cl2, sv2;

        tcp_pair(&cl, &sv);
        tcp_pair(&cl2, &sv2);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv2, 2, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(closesocket(sv), 0);
        ck_assert(peer_closed(cl, 2000)); /* as if no daemon existed */
        close(sv2);                       /* plain close: the daemon's copy keeps it open */
        ck_assert(!peer_closed(cl2, 200));
        ck_assert(CloseHandle(P)); /* until the port goes */
        P = NULL;
        ck_assert(peer_closed(cl2, 2000));
        close(cl);
        close(cl2);
}

void conf_L2(int _i)
{
        int cl, sv, cl2, sv2, num, d;

        tcp_pair(&cl, &sv);
        d = dup(sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, d, 2, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS); /* same one */
        ck_assert_int_eq(daemon_count("registrations"), 1);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 1), E_IN);
        /* A new socket in the old number is a new registration with its own key. */
        tcp_pair(&cl2, &sv2);
        num = sv;
        ck_assert_int_eq(closesocket(d), 0);
        ck_assert_int_eq(closesocket(sv), 0);
        ck_assert_int_eq(dup2(sv2, num), num);
        close(sv2);
        ck_assert_uint_eq(reg(P, num, 3, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl2, "y", 1, 0), 1);
        ck_assert_uint_eq(one(P, 3), E_IN);
        close(cl);
        close(cl2);
        closesocket(num);
}

void conf_L3(int _i)
{
        int cl, sv, pipefd[2], before;
        pid_t pid;
        char c;

        /* Settled first: the earlier cases' sockets may still be in the daemon's closer. */
        before = test_daemon_wait_fds(&D, -1, 0);
        tcp_pair(&cl, &sv);
        ck_assert_int_eq(pipe(pipefd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                WSADATA wsa;
                HANDLE p;
                DWORD bytes;
                ULONG_PTR key;
                LPOVERLAPPED ov;

                WSAStartup(WINSOCK_VERSION, &wsa);
                p = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
                SOCK_NOTIFY_REGISTRATION r = { .socket = (SOCKET)sv, .completionKey = (PVOID)1,
                                               .eventFilter = F_IN, .operation = OP_ENABLE,
                                               .triggerFlags = LEVEL };
                if (!p || ProcessSocketNotifications(p, 1, &r, 0, 0, NULL, NULL) ||
                    r.registrationResult)
                        _exit(1);
                close(sv);
                ck_assert_int_eq(write(pipefd[1], "r", 1), 1);
                GetQueuedCompletionStatus(p, &bytes, &key, &ov, INFINITE);
                _exit(2);
        }
        close(sv);
        ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
        wait_waiters(1);
        ck_assert(!peer_closed(cl, 50));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        ck_assert(peer_closed(cl, 2000));
        wait_waiters(0);
        ck_assert_int_eq(daemon_count("registrations"), 0);
        ck_assert_int_eq(test_daemon_wait_fds(&D, before, 2000), before);
        close(cl);
        close(pipefd[0]);
        close(pipefd[1]);
}

void conf_L4(int _i)
{
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 4, F_IN | F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        for (int i = 0; i < 50; i++)
                ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_int_le(daemon_count("queued"), 1); /* never more than one for it */
        /* Posted packets are bounded (64 here): the 65th fails with ERROR_NOT_ENOUGH_QUOTA. */
        for (int i = 0; i < 64; i++)
                ck_assert(PostQueuedCompletionStatus(P, 0, 40, NULL));
        ck_assert(!PostQueuedCompletionStatus(P, 0, 40, NULL));
        ck_assert_uint_eq(GetLastError(), ERROR_NOT_ENOUGH_QUOTA);
        close(cl);
        closesocket(sv);
}

void conf_L5(int _i)
{
        int cl, sv, pipefd[2], done[2];
        pid_t pid;
        char c;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(pipe(pipefd), 0);
        ck_assert_int_eq(pipe(done), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                WSADATA wsa;
                HANDLE p;

                WSAStartup(WINSOCK_VERSION, &wsa);
                p = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
                SOCK_NOTIFY_REGISTRATION r = { .socket = (SOCKET)sv, .completionKey = (PVOID)5,
                                               .eventFilter = F_IN, .operation = OP_ENABLE,
                                               .triggerFlags = LEVEL };
                if (!p || ProcessSocketNotifications(p, 1, &r, 0, 0, NULL, NULL) ||
                    r.registrationResult)
                        _exit(1);
                ck_assert_int_eq(write(pipefd[1], "r", 1), 1);
                ck_assert_int_eq(read(done[0], &c, 1), 1);
                /* Still registered, still delivering to its owner. */
                DWORD bytes;
                ULONG_PTR key;
                LPOVERLAPPED ov;
                _exit(GetQueuedCompletionStatus(p, &bytes, &key, &ov, 1000) && key == 5 ? 0 : 3);
        }
        ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
        /* Another client's registration can be neither taken nor changed nor removed. */
        ck_assert_uint_eq(reg(P, sv, 55, F_IN, OP_ENABLE, LEVEL), ERROR_ALREADY_EXISTS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_NOT_FOUND);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_NOT_FOUND);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 100);
        ck_assert_int_eq(write(done[1], "d", 1), 1);
        int st;
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(cl);
        close(sv);
        close(pipefd[0]);
        close(pipefd[1]);
        close(done[0]);
        close(done[1]);
}

void conf_L6(int _i)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        unsigned char garbage[40], reply[256];
        struct pollfd p = { .fd = fd, .events = POLLIN };
        OVERLAPPED_ENTRY e;

        ck_assert(PostQueuedCompletionStatus(P, 0, 6, NULL));
        strcpy(sa.sun_path, D.path);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        for (size_t i = 0; i < sizeof(garbage); i++)
                garbage[i] = (unsigned char)(i * 37 + 11);
        ck_assert_int_eq(send(fd, garbage, sizeof(garbage), 0), (ssize_t)sizeof(garbage));
        ck_assert_int_eq(poll(&p, 1, 2000), 1);
        ck_assert_int_gt(recv(fd, reply, sizeof(reply), 0), 0); /* an error reply */
        ck_assert_uint_eq(reply[4], 0xff);                      /* type ERROR */
        close(fd);
        /* This client lost nothing. */
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.lpCompletionKey, 6);
}

/*
 * L7: a named port with a linger time outlives its process, killed with SIGKILL: the daemon keeps
 * its sockets open and watched and queues what happens meanwhile; a process of the same user
 * opens the port, takes the sockets over with their keys and gets what was queued; a one-shot
 * entry the dead process had dequeued is not delivered again until the socket is re-enabled.
 */
void conf_L7(int _i)
{
        int cl1, sv1, cl2, sv2, pipefd[2];
        SN_TAKEN_SOCKET t[4], *t1 = NULL, *t2 = NULL;
        ULONG taken, remaining = 1, holders = 1, total = 0;
        HANDLE q;
        pid_t pid;
        char c;

        tcp_pair(&cl1, &sv1); /* LEVEL, key 71 */
        tcp_pair(&cl2, &sv2); /* LEVEL | ONESHOT, key 72, its entry dequeued by the child */
        ck_assert_int_eq(pipe(pipefd), 0);
        ck_assert_int_eq(send(cl2, "a", 1, 0), 1);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                SOCK_NOTIFY_REGISTRATION r[2] = {
                        { .socket = (SOCKET)sv1, .completionKey = (PVOID)71, .eventFilter = F_IN,
                          .operation = OP_ENABLE, .triggerFlags = LEVEL },
                        { .socket = (SOCKET)sv2, .completionKey = (PVOID)72, .eventFilter = F_IN,
                          .operation = OP_ENABLE, .triggerFlags = LEVEL | ONESHOT },
                };
                OVERLAPPED_ENTRY e;
                UINT32 got = 0;
                WSADATA wsa;
                HANDLE p;

                WSAStartup(WINSOCK_VERSION, &wsa);
                p = SnCreateNamedIoCompletionPortEx("conf-l7", 0, 10000);
                if (!p || ProcessSocketNotifications(p, 2, r, 1000, 1, &e, &got) ||
                    r[0].registrationResult || r[1].registrationResult || got != 1 ||
                    e.lpCompletionKey != 72)
                        _exit(1);
                close(sv1); /* plain close(): the daemon's copies stay */
                close(sv2);
                if (write(pipefd[1], "r", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(sv1);
        close(sv2);
        ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
        /* The process is gone, its port lingers: the connections stay open and watched. */
        ck_assert(!peer_closed(cl1, 100));
        ck_assert(!peer_closed(cl2, 0));
        ck_assert_int_eq(send(cl1, "b", 1, 0), 1);
        q = SnOpenIoCompletionPort("conf-l7");
        ck_assert_ptr_nonnull(q);
        /* Until the daemon has seen the child go, its registrations still have an owner. */
        for (int i = 0; i < 200 && (total < 2 || remaining || holders); i++) {
                ck_assert(SnTakeIoCompletionPortSockets(q, t + total, 4 - total, &taken,
                                                        &remaining, &holders));
                total += taken;
                if (!taken)
                        usleep(10 * 1000);
        }
        ck_assert_uint_eq(total, 2);
        ck_assert_uint_eq(remaining, 0);
        ck_assert_uint_eq(holders, 0);
        for (ULONG i = 0; i < total; i++) {
                ck_assert(t[i].socket != INVALID_SOCKET);
                ck_assert_uint_eq(t[i].eventFilter, F_IN);
                ck_assert(t[i].enabled);
                if ((uintptr_t)t[i].completionKey == 71)
                        t1 = &t[i];
                else if ((uintptr_t)t[i].completionKey == 72)
                        t2 = &t[i];
        }
        ck_assert(t1 && t2);
        ck_assert_uint_eq(t1->triggerFlags, LEVEL | PERSISTENT);
        ck_assert_uint_eq(t2->triggerFlags, LEVEL | ONESHOT);
        /* What was queued while nobody held the port is delivered to the successor. */
        ck_assert_uint_eq(one(q, 71), E_IN);
        ck_assert_int_eq(recv((int)t1->socket, &c, 1, 0), 1);
        ck_assert_int_eq(c, 'b');
        /* The one-shot entry went to the dead process: disarmed, nothing comes again... */
        none(q, 150);
        /* ...until the successor enables it again: same port, the key kept (rule 4). */
        ck_assert_uint_eq(reg(q, t2->socket, 999, F_IN, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(q, 72), E_IN);
        ck_assert_int_eq(recv((int)t2->socket, &c, 1, 0), 1);
        ck_assert_int_eq(c, 'a');
        /* A taken socket is the successor's own: closesocket() ends it for the peer (L1). */
        ck_assert_int_eq(closesocket(t1->socket), 0);
        ck_assert(peer_closed(cl1, 2000));
        ck_assert_int_eq(closesocket(t2->socket), 0);
        ck_assert(peer_closed(cl2, 2000));
        ck_assert(SnSetIoCompletionPortLinger(q, 0));
        ck_assert(CloseHandle(q));
        close(cl1);
        close(cl2);
        close(pipefd[0]);
        close(pipefd[1]);
}

void conf_case_unix(int _i)
{
        int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };

        for (int i = 0; i < 3; i++) {
                int sp[2];
                char c;

                ck_assert_int_eq(socketpair(AF_UNIX, types[i] | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp),
                                 0);
                ck_assert_uint_eq(reg(P, sp[0], 1, F_IN | F_HUP, OP_ENABLE, LEVEL), ERROR_SUCCESS);
                none(P, 30);
                ck_assert_int_eq(send(sp[1], "x", 1, 0), 1);
                ck_assert_uint_eq(one(P, 1), E_IN);
                ck_assert_int_eq(recv(sp[0], &c, 1, 0), 1);
                close(sp[1]);
                UINT32 ev = collect(P, 1, E_IN | E_HUP, 1000);
                /* Stream and seqpacket hang up; a datagram socket never reports HANGUP. */
                ck_assert_uint_eq(ev & E_HUP, types[i] == SOCK_DGRAM ? 0 : E_HUP);
                remove_wait(P, sp[0], 1);
                closesocket(sp[0]);
        }
}

void conf_case_peer_sends_and_closes(int _i)
{
        int cl, sv;
        char buf[16];

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_HUP, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "hello", 5, 0), 5);
        ck_assert_uint_eq(one(P, 1) & E_IN, E_IN);
        close(cl);
        usleep(20000);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN | F_HUP, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 1), E_IN | E_HUP);
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 5); /* the data is still there */
        ck_assert_int_eq(recv(sv, buf, sizeof(buf), 0), 0);
        closesocket(sv);
}

void conf_case_send_buffer(int _i)
{
        int cl, sv;
        static char big[1 << 16];
        long long end = now_ms() + test_timeout_ms(3000);

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_OUT, OP_ENABLE, EDGE), ERROR_SUCCESS);
        none(P, 50); /* writable at ENABLE: EDGE says nothing */
        while (send(sv, big, sizeof(big), MSG_DONTWAIT) > 0)
                ;
        ck_assert_int_eq(errno, EAGAIN);
        none(P, 50);
        /* The peer reads: space frees, OUT comes back as an edge. */
        while (collect(P, 1, E_OUT, 10) == 0) {
                drain(cl);
                ck_assert(now_ms() < end);
        }
        close(cl);
        closesocket(sv);
}

void conf_case_two_fds(int _i)
{
        int cl, sv, other;

        tcp_pair(&cl, &sv);
        other = dup(sv);
        ck_assert_uint_eq(reg(P, sv, 1, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, other, 2, F_IN, OP_DISABLE, 0), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        none(P, 50); /* disabled through the other descriptor */
        ck_assert_uint_eq(reg(P, other, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(one(P, 1), E_REMOVE); /* one registration, its key */
        close(cl);
        closesocket(other);
        closesocket(sv);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * ports.c - sections H, I and J of the spec: one port per socket, port scope, posted packets,
 * and the completion-port core (rows 64-80).
 */
#include "tests/conformance/conformance.h"

void conf_row_64(int _i)
{
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 64, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(b, sv, 640, F_IN, OP_ENABLE, LEVEL), ERROR_ALREADY_EXISTS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_DISABLE, 0), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(b, sv, 640, F_IN, OP_ENABLE, LEVEL), ERROR_ALREADY_EXISTS);
        ck_assert_uint_eq(reg(P, sv, 64, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(P, 64), E_IN); /* unchanged on the first port */
        none(b, 50);
        CloseHandle(b);
        close(cl);
        closesocket(sv);
}

void conf_row_65(int _i)
{
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 65, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(reg(P, sv, 0, 0, OP_REMOVE, 0), ERROR_SUCCESS);
        /* Before the REMOVE packet is dequeued the registration still exists. */
        ck_assert_uint_eq(reg(b, sv, 650, F_OUT, OP_ENABLE, LEVEL), ERROR_ALREADY_EXISTS);
        ck_assert_uint_eq(collect(P, 65, E_REMOVE, 1000) & E_REMOVE, E_REMOVE);
        ck_assert_uint_eq(reg(b, sv, 650, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_uint_eq(one(b, 650), E_OUT);
        CloseHandle(b);
        close(cl);
        closesocket(sv);
}

void conf_row_66(int _i)
{
        pid_t pid;
        int st;

        ck_assert(PostQueuedCompletionStatus(P, 1, 66, NULL));
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                OVERLAPPED_ENTRY e;
                UINT32 n;
                WSADATA wsa;
                DWORD r;

                WSAStartup(WINSOCK_VERSION, &wsa);
                /* The parent's port means nothing here, and its packet stays the parent's. */
                r = ProcessSocketNotifications(P, 0, NULL, 0, 1, &e, &n);
                _exit(r == WSAEINVAL && !PostQueuedCompletionStatus(P, 0, 0, NULL) &&
                                      GetLastError() == ERROR_INVALID_HANDLE
                              ? 0
                              : 1);
        }
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        OVERLAPPED_ENTRY e;
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.lpCompletionKey, 66);
}

struct worker {
        HANDLE port;
        int fd;
        uintptr_t key;
        int got_posts;
        bool own_ok;
};

static void *worker(void *arg)
{
        struct worker *w = arg;
        SOCK_NOTIFY_REGISTRATION r = { .socket = (SOCKET)w->fd, .completionKey = (PVOID)w->key,
                                       .eventFilter = F_OUT, .operation = OP_ENABLE,
                                       .triggerFlags = LEVEL | ONESHOT };
        OVERLAPPED_ENTRY e[4];
        UINT32 n;

        /* Each thread registers its own socket, then takes packets until an idle second. */
        w->own_ok = ProcessSocketNotifications(w->port, 1, &r, 0, 0, NULL, NULL) ==
                            ERROR_SUCCESS &&
                    r.registrationResult == ERROR_SUCCESS;
        while (ProcessSocketNotifications(w->port, 0, NULL, 300, 4, e, &n) == ERROR_SUCCESS)
                for (UINT32 i = 0; i < n; i++)
                        w->got_posts += e[i].lpCompletionKey == 1000;
        return NULL;
}

void conf_row_67(int _i)
{
        struct worker w[4];
        pthread_t t[4];
        int sp[4][2], total = 0;

        for (int i = 0; i < 4; i++) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
                w[i] = (struct worker){ .port = P, .fd = sp[i][0], .key = 670 + (uintptr_t)i };
                pthread_create(&t[i], NULL, worker, &w[i]);
        }
        for (int i = 0; i < 40; i++)
                ck_assert(PostQueuedCompletionStatus(P, 0, 1000, NULL));
        for (int i = 0; i < 4; i++) {
                pthread_join(t[i], NULL);
                ck_assert(w[i].own_ok);
                total += w[i].got_posts;
        }
        ck_assert_int_eq(total, 40); /* each exactly once */
        for (int i = 0; i < 4; i++) {
                closesocket(sp[i][0]);
                close(sp[i][1]);
        }
}

void conf_row_68(int _i)
{
        int cl, sv;
        OVERLAPPED_ENTRY e[4];
        int posted = 0, sockets = 0;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 68, F_OUT, OP_ENABLE, LEVEL | ONESHOT), ERROR_SUCCESS);
        ck_assert(PostQueuedCompletionStatus(P, 0xffffffff, (ULONG_PTR)-2,
                                             (LPOVERLAPPED)(uintptr_t)0xdeadbeef));
        ULONG n = deq(P, e, 4, 1000);
        for (ULONG i = 0; i < n; i++) {
                if (e[i].lpCompletionKey == (ULONG_PTR)-2) {
                        posted++;
                        ck_assert_uint_eq(e[i].dwNumberOfBytesTransferred, 0xffffffff);
                        ck_assert_ptr_eq(e[i].lpOverlapped, (LPOVERLAPPED)(uintptr_t)0xdeadbeef);
                } else {
                        sockets += e[i].lpCompletionKey == 68;
                }
        }
        ck_assert_int_eq(posted, 1);
        ck_assert_int_eq(sockets, 1);
        close(cl);
        closesocket(sv);
}

void conf_row_69(int _i)
{
        OVERLAPPED_ENTRY e;

        ck_assert(PostQueuedCompletionStatus(P, SOCK_NOTIFY_EVENT_REMOVE, 3, NULL));
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(SocketNotificationRetrieveEvents(&e), E_REMOVE);
        ck_assert_uint_eq(e.lpCompletionKey, 3);
}

void conf_row_70(int _i)
{
        int cl, sv;
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov = (LPOVERLAPPED)1;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 70, F_OUT, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert(GetQueuedCompletionStatus(P, &bytes, &key, &ov, 1000));
        ck_assert_uint_eq(bytes, E_OUT);
        ck_assert_uint_eq(key, 70);
        ck_assert_ptr_null(ov);
        close(cl);
        closesocket(sv);
}

void conf_row_71(int _i)
{
        HANDLE a = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 12345, 0);
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 3);

        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        ck_assert_ptr_ne(a, b);
        ck_assert_ptr_null(CreateIoCompletionPort(INVALID_HANDLE_VALUE, a, 0, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_PARAMETER);
        ck_assert(CloseHandle(a));
        ck_assert(CloseHandle(b));
}

struct runner_thread {
        HANDLE port;
        _Atomic int step;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        ULONG_PTR keys[2];
};

/* Takes one packet, then stays running (it spins: a thread that waits frees its slot) until
 * told to ask again. */
static void *running_thread(void *arg)
{
        struct runner_thread *r = arg;
        DWORD bytes;
        LPOVERLAPPED ov;

        GetQueuedCompletionStatus(r->port, &bytes, &r->keys[0], &ov, 3000);
        r->step = 1;
        while (r->step != 2)
                sched_yield();
        GetQueuedCompletionStatus(r->port, &bytes, &r->keys[1], &ov, 0);
        return NULL;
}

void conf_row_72(int _i)
{
        HANDLE c1 = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
        struct runner_thread r = { .port = c1 };
        struct gq late = { .port = c1, .ms = 300 };
        pthread_t t, t2;

        pthread_create(&t, NULL, running_thread, &r);
        wait_waiters(1);
        ck_assert(PostQueuedCompletionStatus(c1, 0, 1, NULL));
        while (r.step != 1)
                sched_yield();
        /* One thread runs (concurrency 1): a second waiter is not released though a packet is
         * queued for it... */
        pthread_create(&t2, NULL, gq_thread, &late);
        wait_waiters(1);
        ck_assert(PostQueuedCompletionStatus(c1, 0, 2, NULL));
        pthread_join(t2, NULL);
        ck_assert(!late.ok);
        ck_assert_uint_eq(late.error, WAIT_TIMEOUT);
        /* ...and the running thread, asking again, takes it at once. */
        r.step = 2;
        pthread_join(t, NULL);
        ck_assert_uint_eq(r.keys[0], 1);
        ck_assert_uint_eq(r.keys[1], 2);
        CloseHandle(c1);
}

/*
 * Row 72, its second half: a running thread that blocks elsewhere frees its slot.  Concurrency
 * 1; A takes packet 1, then blocks in pthread_cond_wait() until B, waiting on the same port, has
 * taken packet 2 (the worker that waits for work carried by another packet).  Then A runs again
 * and both spin: they count again, so a third waiter C is not given packet 3, nor B when it
 * asks again while A runs.
 */
struct slot_test {
        HANDLE port;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool a_took, b_done, stop;
        _Atomic int spinning;
        _Atomic int b_again; /* 1: B asks again (into b2), 2: it has returned */
        ULONG_PTR a_key;
        struct gq b, b2;
};

static void *slot_a(void *arg)
{
        struct slot_test *s = arg;
        DWORD bytes;
        LPOVERLAPPED ov;

        GetQueuedCompletionStatus(s->port, &bytes, &s->a_key, &ov, 3000);
        pthread_mutex_lock(&s->lock);
        s->a_took = true;
        pthread_cond_broadcast(&s->cond);
        while (!s->b_done) /* blocked: a waiting thread on Windows */
                pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        s->spinning++;
        while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
                sched_yield(); /* running, or runnable */
        return NULL;
}

static void *slot_b(void *arg)
{
        struct slot_test *s = arg;

        gq_thread(&s->b);
        pthread_mutex_lock(&s->lock);
        s->b_done = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        if (!s->b.ok)
                return NULL;
        s->spinning++;
        while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
                if (s->b_again == 1) {
                        gq_thread(&s->b2);
                        s->b_again = 2;
                }
                sched_yield();
        }
        return NULL;
}

/* A takes packet 1 and blocks; B waits, then packet 2 is posted; returns once A and B both run
 * again (B released), or B has given up. */
static void slot_start(struct slot_test *s, pthread_t *ta, pthread_t *tb)
{
        *s = (struct slot_test){ .port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1),
                                 .lock = PTHREAD_MUTEX_INITIALIZER,
                                 .cond = PTHREAD_COND_INITIALIZER };
        s->b = (struct gq){ .port = s->port, .ms = (DWORD)test_timeout_ms(3000) };
        pthread_create(ta, NULL, slot_a, s);
        wait_waiters(1);
        ck_assert(PostQueuedCompletionStatus(s->port, 0, 1, NULL));
        pthread_mutex_lock(&s->lock);
        while (!s->a_took)
                pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        pthread_create(tb, NULL, slot_b, s);
        wait_waiters(1);
        ck_assert(PostQueuedCompletionStatus(s->port, 0, 2, NULL));
        pthread_mutex_lock(&s->lock);
        while (!s->b_done)
                pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        while (s->b.ok && s->spinning < 2)
                sched_yield();
}

static void slot_stop(struct slot_test *s, pthread_t ta, pthread_t tb)
{
        __atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
        pthread_join(tb, NULL);
        pthread_join(ta, NULL);
}

void conf_case_blocked_thread_frees_slot(int _i)
{
        struct slot_test s;
        pthread_t ta, tb;

        slot_start(&s, &ta, &tb);
        slot_stop(&s, ta, tb);
        ck_assert_uint_eq(s.a_key, 1);
        /* Before: B waited out its timeout (WAIT_TIMEOUT) while A, blocked, held the slot. */
        ck_assert_msg(s.b.ok, "B was not released while A was blocked (error %u)",
                      (unsigned)s.b.error);
        ck_assert_uint_eq(s.b.key, 2);
        CloseHandle(s.port);
}

void conf_case_blocked_thread_counts_again(int _i)
{
        struct slot_test s;
        struct gq c;
        pthread_t ta, tb, tc;
        DWORD bytes;
        ULONG_PTR key = 0;
        LPOVERLAPPED ov;

        slot_start(&s, &ta, &tb);
        ck_assert_msg(s.b.ok, "B was not released while A was blocked");
        /* A and B both run (over the concurrency of 1, as on Windows): a third waiter gets
         * nothing, though a packet is queued for it. */
        c = (struct gq){ .port = s.port, .ms = 300 };
        pthread_create(&tc, NULL, gq_thread, &c);
        wait_waiters(1);
        ck_assert(PostQueuedCompletionStatus(s.port, 0, 3, NULL));
        pthread_join(tc, NULL);
        ck_assert_msg(!c.ok, "C was given packet %lu while A and B ran", (unsigned long)c.key);
        ck_assert_uint_eq(c.error, WAIT_TIMEOUT);
        /* B asks again: A alone runs now, and counts (its mark of blocked is gone), so B waits
         * too and does not get the packet. */
        s.b2 = (struct gq){ .port = s.port, .ms = 300 };
        s.b_again = 1;
        while (s.b_again != 2)
                sched_yield();
        ck_assert_msg(!s.b2.ok, "B was given packet %lu while A ran", (unsigned long)s.b2.key);
        ck_assert_uint_eq(s.b2.error, WAIT_TIMEOUT);
        /* A and B exit (they stop counting): the packet is still there. */
        slot_stop(&s, ta, tb);
        ck_assert(GetQueuedCompletionStatus(s.port, &bytes, &key, &ov,
                                            (DWORD)test_timeout_ms(1000)));
        ck_assert_uint_eq(key, 3);
        CloseHandle(s.port);
}

void conf_row_73(int _i)
{
        struct gq g[3];
        pthread_t t[3];
        OVERLAPPED_ENTRY e[8];

        for (int i = 0; i < 3; i++) {
                g[i] = (struct gq){ .port = P, .ms = 3000 };
                pthread_create(&t[i], NULL, gq_thread, &g[i]);
                wait_waiters(i + 1);
        }
        /* Three posts, oldest first; the most recent waiter gets the oldest packet. */
        for (uintptr_t k = 1; k <= 3; k++)
                ck_assert(PostQueuedCompletionStatus(P, 0, k, NULL));
        for (int i = 0; i < 3; i++)
                pthread_join(t[i], NULL);
        ck_assert_uint_eq(g[2].key, 1);
        ck_assert_uint_eq(g[1].key, 2);
        ck_assert_uint_eq(g[0].key, 3);
        /* One GQCSEx takes several at once. */
        for (uintptr_t k = 1; k <= 5; k++)
                ck_assert(PostQueuedCompletionStatus(P, 0, k, NULL));
        ck_assert_uint_eq(deq(P, e, 8, 1000), 5);
}

void conf_row_74(int _i)
{
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        OVERLAPPED_ENTRY e;

        ck_assert(PostQueuedCompletionStatus(P, 0, 1, NULL));
        ck_assert(PostQueuedCompletionStatus(b, 0, 2, NULL));
        ck_assert_uint_eq(deq(P, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.lpCompletionKey, 1);
        ck_assert_uint_eq(deq(b, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.lpCompletionKey, 2);
        CloseHandle(b);
}

void conf_row_75(int _i)
{
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov = (LPOVERLAPPED)1;

        ck_assert(!GetQueuedCompletionStatus(P, &bytes, &key, &ov, 20));
        ck_assert_ptr_null(ov);
        ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
        ck_assert(PostQueuedCompletionStatus(P, 0, 75, NULL));
        ov = (LPOVERLAPPED)1;
        ck_assert(GetQueuedCompletionStatus(P, &bytes, &key, &ov, 20));
        ck_assert_ptr_null(ov);
        ck_assert_uint_eq(key, 75);
}

void conf_row_76(int _i)
{
        struct sigaction sa = { .sa_handler = on_signal };
        OVERLAPPED_ENTRY e;
        ULONG removed = 9;
        pthread_t self = pthread_self(), t;

        ck_assert(!GetQueuedCompletionStatusEx(P, &e, 1, &removed, 20, FALSE));
        ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
        ck_assert_uint_eq(removed, 0);
        /* Divergence: no APCs on Linux.  An alertable wait interrupted by a signal still ends
         * with WAIT_TIMEOUT, never WAIT_IO_COMPLETION. */
        sigaction(SIGUSR1, &sa, NULL);
        pthread_create(&t, NULL, kick, &self);
        ck_assert(!GetQueuedCompletionStatusEx(P, &e, 1, &removed, 200, TRUE));
        ck_assert_uint_eq(GetLastError(), WAIT_TIMEOUT);
        pthread_join(t, NULL);
        ck_assert(PostQueuedCompletionStatus(P, 0, 76, NULL));
        ck_assert(GetQueuedCompletionStatusEx(P, &e, 1, &removed, 20, TRUE));
        ck_assert_uint_eq(removed, 1);
}

void conf_row_77(int _i)
{
        struct gq g[2] = { { .port = P, .ms = INFINITE }, { .port = P, .ms = INFINITE } };
        pthread_t t[2];
        DWORD bytes;
        ULONG_PTR key;
        LPOVERLAPPED ov;

        for (int i = 0; i < 2; i++)
                pthread_create(&t[i], NULL, gq_thread, &g[i]);
        wait_waiters(2);
        ck_assert(CloseHandle(P));
        for (int i = 0; i < 2; i++) {
                pthread_join(t[i], NULL);
                ck_assert(!g[i].ok);
                ck_assert_ptr_null(g[i].ov);
                ck_assert_uint_eq(g[i].error, ERROR_ABANDONED_WAIT_0);
        }
        ck_assert(!GetQueuedCompletionStatus(P, &bytes, &key, &ov, 0));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        P = NULL;
}

void conf_row_78(int _i)
{
        for (int i = 0; i < 5; i++)
                ck_assert(PostQueuedCompletionStatus(P, 0, 78, NULL));
        ck_assert_int_eq(daemon_count("queued"), 5);
        ck_assert(CloseHandle(P));
        P = NULL;
        ck_assert_int_eq(daemon_count("queued"), 0);
}

void conf_row_79(int _i)
{
        struct gq g = { .port = P, .ms = 3000 };
        pthread_t t;

        pthread_create(&t, NULL, gq_thread, &g);
        wait_waiters(1);
        ck_assert(PostQueuedCompletionStatus(P, 0, 79, NULL));
        pthread_join(t, NULL);
        ck_assert(g.ok);
        ck_assert_uint_eq(g.key, 79);
        ck_assert(CloseHandle(P));
        ck_assert(!PostQueuedCompletionStatus(P, 0, 79, NULL));
        ck_assert_uint_eq(GetLastError(), ERROR_INVALID_HANDLE);
        P = NULL;
}

struct psn {
        HANDLE port;
        DWORD ret;
};

static void *psn_thread(void *arg)
{
        struct psn *p = arg;
        OVERLAPPED_ENTRY e;
        UINT32 n;

        p->ret = ProcessSocketNotifications(p->port, 0, NULL, INFINITE, 1, &e, &n);
        return NULL;
}

void conf_row_80(int _i)
{
        struct psn w = { .port = P };
        HANDLE b = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
        pthread_t t;
        int cl, sv;

        tcp_pair(&cl, &sv);
        ck_assert_uint_eq(reg(P, sv, 80, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        pthread_create(&t, NULL, psn_thread, &w);
        wait_waiters(1);
        ck_assert(CloseHandle(P));
        pthread_join(t, NULL);
        /* GQCS says ERROR_ABANDONED_WAIT_0 (row 77); PSN answers only WSAE* codes. */
        ck_assert_uint_eq(w.ret, WSAEINTR);
        P = NULL;
        /* The socket is free at once, without a REMOVE. */
        ck_assert_uint_eq(reg(b, sv, 800, F_IN, OP_ENABLE, LEVEL), ERROR_SUCCESS);
        ck_assert_int_eq(send(cl, "x", 1, 0), 1);
        ck_assert_uint_eq(one(b, 800), E_IN);
        CloseHandle(b);
        close(cl);
        closesocket(sv);
}

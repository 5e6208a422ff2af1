/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * server.c - zd-server: a TCP echo server that hands its listening socket and every connection
 * over to the next instance of itself, without closing any of them (issue 14).
 *
 * It is written against the Win32-compatible API (<socknotify/winsock.h>) in the shape of
 * Microsoft's "Multi-threaded server" sample (examples/mt-server.c): --threads worker threads
 * wait in ProcessSocketNotifications() on one completion port; every socket is registered
 * ONESHOT|LEVEL, so a socket is held by at most one thread from the moment its notification is
 * dequeued until that thread re-arms it (the re-arm travels with the thread's next call).
 *
 * The port is named and lingers (SnCreateNamedIoCompletionPortEx with --linger ms): when this
 * process lets go of it (closes its handle, exits or is killed), the daemon keeps the port, the
 * registrations and its copies of the sockets.  The next instance (--takeover-from PID) opens
 * the port by name, sends SIGTERM to PID, takes the sockets with
 * SnTakeIoCompletionPortSockets() as the old instance lets go, re-arms those its predecessor
 * left disarmed, and serves.
 * The clients notice a pause, never a closed connection.
 *
 * Invariants that make the handoff lose and duplicate nothing:
 *  - A byte read from a connection is in that connection's pending output until it has been
 *    written back; a worker never leaves a byte it read anywhere else.  A connection with
 *    pending output is not read again until it is all written (it waits for OUT only), so a
 *    connection holds at most one read's worth (BUF_SIZE).
 *  - On SIGTERM no worker starts another wait, reads or accepts.  Each finishes the socket it
 *    was serving, writes what it can of the other sockets it had dequeued, re-arms them all,
 *    submits the re-arms and exits.  Then the main thread writes out every pending output
 *    (blocking, with a deadline), so that the process ends holding no byte: what it did not
 *    read is still in the kernel's socket buffers, where the successor reads it.  (A client
 *    that does not read therefore delays the handoff until what was read from it is written.)
 *  - Completion keys are connection ids, not pointers: a key outlives the process that chose
 *    it (the daemon keeps it; re-ENABLE cannot change it, rule 4), and the successor finds its
 *    own context for a key in a table.  Ids are random 64-bit numbers, unique in the table.
 *  - The old instance hands over by closing its port handle, sockets left open: letting go of a
 *    lingering port leaves its registrations on it without an owner, in the same step.  So when
 *    a take reports no other holder and nothing left, every socket has been taken.  (Exiting,
 *    or being killed, does the same.)
 *  - The successor dequeues only after it has taken and entered every socket in its table, so
 *    every key it dequeues is known, apart from wake-up packets (WAKE_KEY), which mean only
 *    "look at the stop flag", whoever posted them.
 *
 * SIGINT stops for good instead: linger 0, every socket closed, the port closed.
 * Writes "ready ADDRESS pid PID took N sockets in T ms (old gone at G ms)" to stdout once it
 * serves (T: from the SIGTERM to the old instance until every socket was re-armed here); a
 * summary line goes to stderr at exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <socknotify/winsock.h>

#define LISTENER_KEY ((ULONG_PTR)1)
#define WAKE_KEY ((ULONG_PTR)2)
#define DEQUEUE_COUNT 16
#define ACCEPT_BATCH 16
#define WAIT_MS 1000
#define BUF_SIZE 65536
#define TABLE_SIZE 4096
#define MAX_THREADS 64
#define TAKE_BATCH 256
#define TAKE_TIMEOUT_MS 30000
#define FLUSH_TIMEOUT_MS 10000

#define CONN_EVENTS (SOCK_NOTIFY_REGISTER_EVENT_IN | SOCK_NOTIFY_REGISTER_EVENT_HANGUP)
#define REARM (SOCK_NOTIFY_TRIGGER_ONESHOT | SOCK_NOTIFY_TRIGGER_LEVEL)

/* One socket: the listener or a connection.  Only the thread holding its notification touches
 * it (ONESHOT), or the main thread once the workers are gone. */
typedef struct CONN {
        struct CONN *next; /* hash chain, under g_tableLock */
        ULONG_PTR key;
        SOCKET socket;
        BOOL listener;
        BOOL eof;          /* the peer finished sending; close once len is 0 */
        atomic_int busy;   /* a check: set while a thread handles it */
        size_t len;        /* pending output: buf[0..len) read and not yet written back */
        unsigned char buf[];
} CONN;

static HANDLE g_port;
static atomic_bool g_stopping;
static atomic_int g_stopSignal; /* SIGTERM: hand over; SIGINT: stop for good */
static UINT32 g_threadCount = 4;
static int g_sndbuf; /* SO_SNDBUF of accepted connections; 0: the kernel's */

static pthread_mutex_t g_tableLock = PTHREAD_MUTEX_INITIALIZER;
static CONN *g_table[TABLE_SIZE];
static size_t g_tableCount;

static atomic_long g_accepted, g_closed, g_reset, g_echoed, g_partial, g_errors, g_stray, g_shared;

static void Fail(const char *what, DWORD code)
{
        fprintf(stderr, "zd-server[%d]: %s: error %u\n", (int)getpid(), what, (unsigned)code);
        atomic_fetch_add(&g_errors, 1);
}

static int64_t NowUs(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t NowMs(void)
{
        return NowUs() / 1000;
}

/* ---- the key -> connection table ------------------------------------------------------- */

static size_t Bucket(ULONG_PTR key)
{
        uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

        return (size_t)(h >> 52) % TABLE_SIZE;
}

static CONN *TableFindLocked(ULONG_PTR key)
{
        for (CONN *c = g_table[Bucket(key)]; c; c = c->next)
                if (c->key == key)
                        return c;
        return NULL;
}

static CONN *TableFind(ULONG_PTR key)
{
        CONN *c;

        pthread_mutex_lock(&g_tableLock);
        c = TableFindLocked(key);
        pthread_mutex_unlock(&g_tableLock);
        return c;
}

/* Enters c under its key; FALSE if the key is taken already. */
static BOOL TableInsert(CONN *c)
{
        size_t b = Bucket(c->key);

        pthread_mutex_lock(&g_tableLock);
        if (TableFindLocked(c->key)) {
                pthread_mutex_unlock(&g_tableLock);
                return FALSE;
        }
        c->next = g_table[b];
        g_table[b] = c;
        g_tableCount++;
        pthread_mutex_unlock(&g_tableLock);
        return TRUE;
}

static void TableRemove(CONN *c)
{
        pthread_mutex_lock(&g_tableLock);
        for (CONN **p = &g_table[Bucket(c->key)]; *p; p = &(*p)->next) {
                if (*p == c) {
                        *p = c->next;
                        g_tableCount--;
                        break;
                }
        }
        pthread_mutex_unlock(&g_tableLock);
}

static CONN *ConnNew(SOCKET s, ULONG_PTR key, BOOL listener)
{
        CONN *c = calloc(1, sizeof(*c) + (listener ? 0 : BUF_SIZE));

        if (!c)
                return NULL;
        c->socket = s;
        c->key = key;
        c->listener = listener;
        return c;
}

/* A new connection's context, entered in the table under a fresh random key. */
static CONN *ConnAdd(SOCKET s)
{
        CONN *c = ConnNew(s, 0, FALSE);
        uint64_t key;

        if (!c)
                return NULL;
        do {
                if (getrandom(&key, sizeof(key), 0) != sizeof(key))
                        key = ((uint64_t)rand() << 32) ^ (uint64_t)rand() ^ (uint64_t)NowMs();
                c->key = (ULONG_PTR)key;
        } while (c->key <= WAKE_KEY || !TableInsert(c));
        return c;
}

/* Closes a connection for good: rule L1 drops its registration with the socket. */
static void ConnClose(CONN *c)
{
        TableRemove(c);
        closesocket(c->socket);
        free(c);
        atomic_fetch_add(&g_closed, 1);
}

static void SetNonBlocking(SOCKET s)
{
        unsigned long one = 1;
        int yes = 1;

        ioctlsocket(s, FIONBIO, &one);
        setsockopt((int)s, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
}

static void AddRegistration(SOCK_NOTIFY_REGISTRATION *r, UINT32 *n, CONN *c, UINT16 filter)
{
        r[*n] = (SOCK_NOTIFY_REGISTRATION){
                .socket = c->socket,
                .completionKey = (PVOID)c->key,
                .eventFilter = filter,
                .operation = SOCK_NOTIFY_OP_ENABLE,
                .triggerFlags = REARM,
        };
        *n += 1;
}

/* ---- serving ----------------------------------------------------------------------------- */

/* Writes as much pending output as the socket takes now.  FALSE: the connection broke. */
static BOOL WriteSome(CONN *c)
{
        size_t off = 0;
        BOOL ok = TRUE;

        while (off < c->len) {
                ssize_t w = send(c->socket, c->buf + off, c->len - off, 0);

                if (w > 0) {
                        off += (size_t)w;
                        continue;
                }
                if (w < 0 && WSAGetLastError() == WSAEWOULDBLOCK)
                        break;
                ok = FALSE;
                break;
        }
        atomic_fetch_add(&g_echoed, (long)off);
        if (off < c->len)
                atomic_fetch_add(&g_partial, 1);
        memmove(c->buf, c->buf + off, c->len - off);
        c->len -= off;
        return ok;
}

/* Serves a connection's notification and appends its re-arm, or closes it.  Once the stop
 * has begun it reads nothing more: it only writes what it holds. */
static void ServeConnection(CONN *c, UINT32 events, BOOL stopping,
                            SOCK_NOTIFY_REGISTRATION *regs, UINT32 *n)
{
        BOOL ok = TRUE;
        UINT16 filter;

        if (!stopping && !c->eof && c->len == 0 &&
            (events & (SOCK_NOTIFY_EVENT_IN | SOCK_NOTIFY_EVENT_HANGUP | SOCK_NOTIFY_EVENT_ERR))) {
                /* Everything there is, up to the buffer: the budget keeps one busy connection
                 * from starving the others, and a level-triggered re-arm brings it back. */
                while (c->len < BUF_SIZE) {
                        ssize_t r = recv(c->socket, c->buf + c->len, BUF_SIZE - c->len, 0);

                        if (r > 0) {
                                c->len += (size_t)r;
                        } else if (r == 0) {
                                c->eof = TRUE;
                                break;
                        } else {
                                ok = WSAGetLastError() == WSAEWOULDBLOCK;
                                break;
                        }
                }
        }
        if (ok && c->len > 0)
                ok = WriteSome(c);
        if (!ok) {
                /* Reset by the peer: nothing can be delivered any more. */
                atomic_fetch_add(&g_reset, 1);
                ConnClose(c);
                return;
        }
        if (c->eof && c->len == 0) {
                ConnClose(c);
                return;
        }
        /* Output left over: wait for OUT only, and read nothing more until it is written (the
         * peer that does not read is slowed down, and what this process holds stays small:
         * the stop has to write it out).  Nothing left: wait for IN and HANGUP.  A connection
         * whose EOF was read has output left (else it is closed): HANGUP, which stays set
         * after the peer's FIN, is out of its filter. */
        filter = c->len > 0 ? SOCK_NOTIFY_REGISTER_EVENT_OUT : CONN_EVENTS;
        atomic_store(&c->busy, 0);
        AddRegistration(regs, n, c, filter);
}

/* Accepts what is waiting (up to ACCEPT_BATCH; nothing once the stop has begun: the successor
 * will), registers it, and re-arms the listener. */
static void ServeListener(CONN *l, BOOL stopping, SOCK_NOTIFY_REGISTRATION *regs, UINT32 *n)
{
        for (int i = 0; i < ACCEPT_BATCH && !stopping; i++) {
                SOCKET s = accept((int)l->socket, NULL, NULL);
                CONN *c;

                if (s == INVALID_SOCKET) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED)
                                Fail("accept", (DWORD)errno);
                        break;
                }
                SetNonBlocking(s);
                if (g_sndbuf > 0)
                        setsockopt((int)s, SOL_SOCKET, SO_SNDBUF, &g_sndbuf, sizeof(g_sndbuf));
                c = ConnAdd(s);
                if (!c) {
                        Fail("out of memory", ERROR_NOT_ENOUGH_MEMORY);
                        closesocket(s);
                        break;
                }
                atomic_fetch_add(&g_accepted, 1);
                AddRegistration(regs, n, c, CONN_EVENTS);
        }
        atomic_store(&l->busy, 0);
        AddRegistration(regs, n, l, SOCK_NOTIFY_REGISTER_EVENT_IN);
}

/* Checks the results of the registrations a call submitted; a socket whose registration failed
 * cannot be served and is closed. */
static void CheckRegistrations(SOCK_NOTIFY_REGISTRATION *regs, UINT32 n)
{
        for (UINT32 i = 0; i < n; i++) {
                CONN *c;

                if (regs[i].registrationResult == ERROR_SUCCESS)
                        continue;
                Fail("registration", regs[i].registrationResult);
                c = TableFind((ULONG_PTR)regs[i].completionKey);
                if (c && !c->listener)
                        ConnClose(c);
        }
}

static void *WorkerMain(void *arg)
{
        SOCK_NOTIFY_REGISTRATION regs[DEQUEUE_COUNT + ACCEPT_BATCH];
        OVERLAPPED_ENTRY entries[DEQUEUE_COUNT];
        UINT32 nregs = 0, got = 0;
        DWORD rc;

        (void)arg;
        for (;;) {
                BOOL stop = atomic_load(&g_stopping);

                /* Stopping: the re-arms of the sockets held so far go in, nothing is taken. */
                if (stop && nregs == 0)
                        break;
                if (stop)
                        rc = ProcessSocketNotifications(g_port, nregs, regs, 0, 0, NULL, NULL);
                else
                        rc = ProcessSocketNotifications(g_port, nregs, nregs ? regs : NULL,
                                                        WAIT_MS, DEQUEUE_COUNT, entries, &got);
                if (rc == WAIT_TIMEOUT) {
                        got = 0;
                        rc = ERROR_SUCCESS;
                }
                if (rc != ERROR_SUCCESS) {
                        Fail("ProcessSocketNotifications", rc);
                        break;
                }
                CheckRegistrations(regs, nregs);
                nregs = 0;
                if (stop)
                        break;
                /* Every entry taken is served: a dequeued ONESHOT socket is this thread's until
                 * it is re-armed.  When the stop came meanwhile, the sockets not begun yet are
                 * re-armed without reading (what is unread stays in the kernel for the
                 * successor); the one being served when it came has been finished. */
                for (UINT32 i = 0; i < got; i++) {
                        ULONG_PTR key = entries[i].lpCompletionKey;
                        CONN *c;

                        if (key == WAKE_KEY)
                                continue;
                        c = TableFind(key);
                        if (!c) {
                                atomic_fetch_add(&g_stray, 1);
                                continue;
                        }
                        if (atomic_exchange(&c->busy, 1))
                                atomic_fetch_add(&g_shared, 1);
                        stop = atomic_load(&g_stopping);
                        if (c->listener)
                                ServeListener(c, stop, regs, &nregs);
                        else
                                ServeConnection(c, SocketNotificationRetrieveEvents(&entries[i]),
                                                stop, regs, &nregs);
                }
        }
        /* Pass the wake-up on: a thread waiting may not have had one (another took two). */
        if (!PostQueuedCompletionStatus(g_port, 0, WAKE_KEY, NULL))
                Fail("PostQueuedCompletionStatus", GetLastError());
        return NULL;
}

/* Waits for SIGTERM or SIGINT, then stops the workers. */
static void *SignalMain(void *arg)
{
        sigset_t *set = arg;
        int sig = 0;

        while (sigwait(set, &sig) != 0 || (sig != SIGTERM && sig != SIGINT))
                ;
        atomic_store(&g_stopSignal, sig);
        atomic_store(&g_stopping, TRUE);
        /* One wake-up per thread, so that they stop side by side; the successor dequeues the
         * ones left over and ignores them. */
        for (UINT32 i = 0; i < g_threadCount; i++)
                if (!PostQueuedCompletionStatus(g_port, 0, WAKE_KEY, NULL))
                        Fail("PostQueuedCompletionStatus", GetLastError());
        return NULL;
}

/* ---- start: a new listener and port, or the ones of the previous instance --------------- */

static SOCKET Listen(const char *spec)
{
        char host[256], *colon;
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
        struct addrinfo *ai = NULL;
        SOCKET s = INVALID_SOCKET;
        int yes = 1;

        snprintf(host, sizeof(host), "%s", spec);
        colon = strrchr(host, ':');
        if (!colon) {
                fprintf(stderr, "zd-server: --listen wants HOST:PORT, not %s\n", spec);
                return INVALID_SOCKET;
        }
        *colon = '\0';
        if (host[0] == '[' && colon[-1] == ']') {
                colon[-1] = '\0';
                memmove(host, host + 1, strlen(host));
        }
        if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai) != 0 || !ai) {
                fprintf(stderr, "zd-server: cannot resolve %s\n", spec);
                return INVALID_SOCKET;
        }
        s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
        if (s == INVALID_SOCKET ||
            setsockopt((int)s, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes)) != 0 ||
            bind((int)s, ai->ai_addr, ai->ai_addrlen) != 0 || listen((int)s, SOMAXCONN) != 0) {
                fprintf(stderr, "zd-server: cannot listen on %s: %s\n", spec, strerror(errno));
                if (s != INVALID_SOCKET)
                        close((int)s);
                s = INVALID_SOCKET;
        }
        freeaddrinfo(ai);
        if (s != INVALID_SOCKET)
                SetNonBlocking(s);
        return s;
}

/* Registers regs[0..n) (no dequeue) and checks every result. */
static BOOL RegisterAll(SOCK_NOTIFY_REGISTRATION *regs, UINT32 n)
{
        DWORD rc = ProcessSocketNotifications(g_port, n, regs, 0, 0, NULL, NULL);

        if (rc != ERROR_SUCCESS) {
                Fail("ProcessSocketNotifications", rc);
                return FALSE;
        }
        for (UINT32 i = 0; i < n; i++) {
                if (regs[i].registrationResult != ERROR_SUCCESS) {
                        Fail("registration of a taken socket", regs[i].registrationResult);
                        return FALSE;
                }
        }
        return TRUE;
}

/*
 * The successor's half: the port is open; tell the old instance to stop, then take every
 * socket it leaves (they come free when it lets go of the port), enter them in the table and
 * re-arm them.
 * Returns the listener's context, or NULL.
 */
static CONN *TakeOver(pid_t predecessor, ULONG *ret_taken, int64_t *ret_us, int64_t *ret_gone_us)
{
        int64_t start = NowUs(), gone = 0;
        SN_TAKEN_SOCKET got[TAKE_BATCH];
        SOCK_NOTIFY_REGISTRATION regs[TAKE_BATCH];
        CONN *listener = NULL;
        ULONG total = 0;
        int64_t deadline = NowMs() + TAKE_TIMEOUT_MS;

        if (kill(predecessor, SIGTERM) != 0 && errno != ESRCH) {
                fprintf(stderr, "zd-server: cannot signal %d: %s\n", (int)predecessor,
                        strerror(errno));
                return NULL;
        }
        for (;;) {
                ULONG taken = 0, remaining = 0, holders = 0;
                UINT32 nregs = 0;

                if (!SnTakeIoCompletionPortSockets(g_port, got, TAKE_BATCH, &taken, &remaining,
                                                   &holders)) {
                        DWORD e = GetLastError();

                        if (e != ERROR_RETRY) { /* busy: nothing was taken, ask again */
                                Fail("SnTakeIoCompletionPortSockets", e);
                                return NULL;
                        }
                        taken = 0;
                        remaining = 1;
                        holders = 1;
                }
                if (!gone && holders == 0)
                        gone = NowUs() - start;
                for (ULONG i = 0; i < taken; i++) {
                        BOOL isListener = (ULONG_PTR)got[i].completionKey == LISTENER_KEY;
                        CONN *c;

                        if (got[i].socket == INVALID_SOCKET) {
                                Fail("a taken socket did not arrive", ERROR_NOT_ENOUGH_QUOTA);
                                return NULL;
                        }
                        c = ConnNew(got[i].socket, (ULONG_PTR)got[i].completionKey, isListener);
                        if (!c || !TableInsert(c)) {
                                Fail("a taken socket cannot be entered", ERROR_INVALID_DATA);
                                return NULL;
                        }
                        SetNonBlocking(c->socket);
                        if (isListener)
                                listener = c;
                        /* ONESHOT: the old instance may have dequeued its last entry (armed
                         * FALSE) or armed it with another filter (OUT while output waited):
                         * then it is enabled again, same key.  Armed as wanted, it is left
                         * alone, which keeps the handover short. */
                        UINT16 want = isListener ? SOCK_NOTIFY_REGISTER_EVENT_IN : CONN_EVENTS;

                        if (!got[i].armed || got[i].eventFilter != want)
                                AddRegistration(regs, &nregs, c, want);
                }
                if (nregs && !RegisterAll(regs, nregs))
                        return NULL;
                total += taken;
                if (remaining == 0 && holders == 0)
                        break;
                if (NowMs() > deadline) {
                        fprintf(stderr, "zd-server: the old instance (%d) did not let go in %d "
                                "ms (%lu sockets left, %lu holders)\n", (int)predecessor,
                                TAKE_TIMEOUT_MS, (unsigned long)remaining,
                                (unsigned long)holders);
                        return NULL;
                }
                if (taken == 0)
                        usleep(1000);
        }
        if (!listener)
                fprintf(stderr, "zd-server: no listening socket was handed over\n");
        *ret_taken = total;
        *ret_us = NowUs() - start;
        *ret_gone_us = gone;
        return listener;
}

/* ---- stop --------------------------------------------------------------------------------- */

/* With the workers gone: writes out every pending output, all connections at once (poll, one
 * deadline for all), and closes the connections whose peer had finished.  Returns the bytes
 * that could not be written; *ret_flushed: the bytes written. */
static long FlushAll(long *ret_flushed)
{
        int64_t deadline = NowMs() + FLUSH_TIMEOUT_MS;
        long lost = 0, flushed = 0;
        size_t n = 0, cap = 0;
        CONN **pending = NULL;
        struct pollfd *polls = NULL;

        for (size_t b = 0; b < TABLE_SIZE; b++)
                for (CONN *c = g_table[b]; c; c = c->next)
                        cap += !c->listener && c->len > 0;
        if (cap) {
                pending = calloc(cap, sizeof(*pending));
                polls = calloc(cap, sizeof(*polls));
                if (!pending || !polls) {
                        free(pending);
                        free(polls);
                        Fail("out of memory", ERROR_NOT_ENOUGH_MEMORY);
                        return -1;
                }
        }
        for (size_t b = 0; b < TABLE_SIZE; b++)
                for (CONN *c = g_table[b]; c; c = c->next)
                        if (!c->listener && c->len > 0)
                                pending[n++] = c;
        while (n > 0) {
                int64_t left = deadline - NowMs();
                int r;

                if (left <= 0)
                        break;
                for (size_t i = 0; i < n; i++)
                        polls[i] = (struct pollfd){ .fd = (int)pending[i]->socket,
                                                    .events = POLLOUT };
                r = poll(polls, (nfds_t)n, (int)left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        break;
                for (size_t i = n; i-- > 0;) {
                        CONN *c = pending[i];
                        size_t before = c->len;
                        BOOL ok;

                        if (!polls[i].revents)
                                continue;
                        ok = WriteSome(c);
                        flushed += (long)(before - c->len);
                        if (!ok)
                                lost += (long)c->len; /* the peer is gone */
                        if (!ok || c->len == 0)
                                pending[i] = pending[--n];
                }
        }
        for (size_t i = 0; i < n; i++)
                lost += (long)pending[i]->len;
        free(pending);
        free(polls);
        for (size_t b = 0; b < TABLE_SIZE; b++) {
                for (CONN *c = g_table[b], *next; c; c = next) {
                        next = c->next;
                        if (!c->listener && c->eof && c->len == 0)
                                ConnClose(c);
                }
        }
        *ret_flushed = flushed;
        return lost;
}

static void Usage(FILE *f)
{
        fprintf(f, "Usage: zd-server --port-name NAME --listen HOST:PORT [--threads N] "
                   "[--linger MS] [--sndbuf BYTES]\n"
                   "       zd-server --port-name NAME --takeover-from PID [--threads N] "
                   "[--sndbuf BYTES]\n"
                   "An echo server handed over between processes without closing a connection.\n"
                   "SIGTERM: stop and leave everything to a successor; SIGINT: stop for good.\n");
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "port-name", required_argument, NULL, 'n' },
                { "listen", required_argument, NULL, 'l' },
                { "threads", required_argument, NULL, 't' },
                { "linger", required_argument, NULL, 'g' },
                { "takeover-from", required_argument, NULL, 'p' },
                { "sndbuf", required_argument, NULL, 'b' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *name = NULL, *listenSpec = NULL;
        unsigned long lingerMs = 5000;
        pid_t predecessor = 0;
        pthread_t threads[MAX_THREADS], signalThread;
        sigset_t set;
        WSADATA wsa;
        CONN *listener;
        ULONG taken = 0;
        int64_t takeUs = 0, goneUs = 0;
        long flushed = 0, lost;
        char address[INET6_ADDRSTRLEN + 8] = "?";
        struct sockaddr_storage ss;
        socklen_t sslen = sizeof(ss);
        int opt, status = 0;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (opt) {
                case 'n': name = optarg; break;
                case 'l': listenSpec = optarg; break;
                case 't': g_threadCount = (UINT32)strtoul(optarg, NULL, 10); break;
                case 'g': lingerMs = strtoul(optarg, NULL, 10); break;
                case 'p': predecessor = (pid_t)strtol(optarg, NULL, 10); break;
                case 'b': g_sndbuf = atoi(optarg); break;
                case 'h': Usage(stdout); return 0;
                default: Usage(stderr); return 2;
                }
        }
        if (!name || (!listenSpec && predecessor <= 0) || g_threadCount < 1 ||
            g_threadCount > MAX_THREADS || optind != argc) {
                Usage(stderr);
                return 2;
        }

        /* Signals are taken by one thread (sigwait); every other thread, including the ones
         * the library may start, has them blocked. */
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);

        if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0) {
                fprintf(stderr, "zd-server: WSAStartup failed\n");
                return 1;
        }
        if (predecessor > 0) {
                g_port = SnOpenIoCompletionPort(name);
                if (!g_port) {
                        Fail("SnOpenIoCompletionPort", GetLastError());
                        return 1;
                }
                listener = TakeOver(predecessor, &taken, &takeUs, &goneUs);
                if (!listener)
                        return 1;
        } else {
                SOCKET s = Listen(listenSpec);
                SOCK_NOTIFY_REGISTRATION reg;
                UINT32 n = 0;

                if (s == INVALID_SOCKET)
                        return 1;
                g_port = SnCreateNamedIoCompletionPortEx(name, 0, (DWORD)lingerMs);
                if (!g_port) {
                        Fail("SnCreateNamedIoCompletionPortEx", GetLastError());
                        return 1;
                }
                listener = ConnNew(s, LISTENER_KEY, TRUE);
                if (!listener || !TableInsert(listener))
                        return 1;
                AddRegistration(&reg, &n, listener, SOCK_NOTIFY_REGISTER_EVENT_IN);
                if (!RegisterAll(&reg, n))
                        return 1;
        }

        if (pthread_create(&signalThread, NULL, SignalMain, &set) != 0)
                return 1;
        for (UINT32 i = 0; i < g_threadCount; i++) {
                if (pthread_create(&threads[i], NULL, WorkerMain, NULL) != 0) {
                        Fail("pthread_create", ERROR_NOT_ENOUGH_MEMORY);
                        return 1;
                }
        }
        if (getsockname((int)listener->socket, (struct sockaddr *)&ss, &sslen) == 0) {
                char host[INET6_ADDRSTRLEN] = "?";
                unsigned port = 0;

                if (ss.ss_family == AF_INET) {
                        struct sockaddr_in *a = (struct sockaddr_in *)&ss;

                        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
                        port = ntohs(a->sin_port);
                        snprintf(address, sizeof(address), "%s:%u", host, port);
                } else if (ss.ss_family == AF_INET6) {
                        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

                        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
                        port = ntohs(a->sin6_port);
                        snprintf(address, sizeof(address), "[%s]:%u", host, port);
                }
        }
        /* "took N sockets in T ms": from the SIGTERM to the old instance until every socket
         * was re-armed here, nobody serving in between; "(old gone at G ms)": when the first
         * take that found no other holder of the port returned (with its sockets). */
        printf("ready %s pid %d took %lu sockets in %.3f ms (old gone at %.3f ms)\n", address,
               (int)getpid(), (unsigned long)taken, (double)takeUs / 1000.0,
               (double)goneUs / 1000.0);
        fflush(stdout);

        for (UINT32 i = 0; i < g_threadCount; i++)
                pthread_join(threads[i], NULL);
        pthread_join(signalThread, NULL);

        lost = FlushAll(&flushed);
        if (lost) {
                fprintf(stderr, "zd-server[%d]: %ld bytes could not be written back\n",
                        (int)getpid(), lost);
                status = 1;
        }
        if (atomic_load(&g_errors) || atomic_load(&g_shared))
                status = 1;
        fprintf(stderr,
                "zd-server[%d]: %s: took %lu sockets, accepted %ld, closed %ld (%ld reset by "
                "the peer), echoed %ld bytes (%ld partial writes, %ld bytes flushed at the stop), "
                "%zu sockets left "
                "%s, %ld stray keys, %ld errors, %ld shared\n",
                (int)getpid(), atomic_load(&g_stopSignal) == SIGINT ? "stopped" : "handed over",
                (unsigned long)taken, atomic_load(&g_accepted), atomic_load(&g_closed),
                atomic_load(&g_reset), atomic_load(&g_echoed), atomic_load(&g_partial), flushed,
                g_tableCount,
                atomic_load(&g_stopSignal) == SIGINT ? "to close" : "to the successor",
                atomic_load(&g_stray), atomic_load(&g_errors), atomic_load(&g_shared));

        if (atomic_load(&g_stopSignal) == SIGINT) {
                /* For good: no linger, every socket closed (L1), then the port. */
                if (!SnSetIoCompletionPortLinger(g_port, 0))
                        Fail("SnSetIoCompletionPortLinger", GetLastError());
                for (size_t b = 0; b < TABLE_SIZE; b++) {
                        while (g_table[b])
                                ConnClose(g_table[b]);
                }
                CloseHandle(g_port);
                WSACleanup();
                return atomic_load(&g_errors) ? 1 : status;
        }
        /* Hand over: the sockets stay open (the daemon has its copies; ours close at exit), the
         * port handle goes, which leaves every registration on it to the port, for the
         * successor to take. */
        if (!CloseHandle(g_port)) {
                Fail("CloseHandle", GetLastError());
                status = 1;
        }
        WSACleanup();
        for (size_t b = 0; b < TABLE_SIZE; b++) {
                while (g_table[b]) {
                        CONN *c = g_table[b];

                        g_table[b] = c->next;
                        free(c);
                }
        }
        return status;
}

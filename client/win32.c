/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * win32.c - the Win32-compatible functions of <socknotify/winsock.h>, over the native API.
 *
 * The layer adds no semantics of its own: it validates arguments the way Windows does, maps
 * HANDLEs to native ports, converts structures, and turns native results into Windows return
 * values and last-error codes (errmap.c).  Everything else happens in the daemon.
 *
 * Handles.  A port HANDLE is an index into a table plus a generation, so a closed handle is
 * recognised (ERROR_INVALID_HANDLE) instead of being dereferenced.  A call looks its handle up
 * and takes a reference on the native port under the table lock; CloseHandle() removes the
 * entry and closes the port on the daemon at once (waiters wake with ERROR_ABANDONED_WAIT_0),
 * while the port object lives until the last call holding it returns.
 *
 * The process's connection to socknotifyd is opened by the first call that needs it.  After
 * fork() the child starts with no connection and no handles: its parent's port handles are
 * invalid in it, as completion ports are on Windows.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/win32.h"
#include "common/macro.h"

struct hentry {
        sn_port_t *port; /* NULL: free slot */
        uint32_t gen;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static sn_conn_t *g_conn;
static struct hentry *g_handles;
static uint32_t g_cap;
static uint32_t g_open;
static int g_startups;

#define H_INDEX_BITS 24
/* Generation bits that fit in a pointer above the index and the two low zero bits. */
#define H_GEN_MASK ((uint32_t)((UINTPTR_MAX >> (2 + H_INDEX_BITS)) & 0xffffffu))

static void atfork_prepare(void)
{
        pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
        pthread_mutex_unlock(&g_lock);
}

static void atfork_child(void)
{
        /* The parent's connection and ports are not the child's; their memory is left alone
         * because other threads of the parent may have held their locks at fork time. */
        g_conn = NULL;
        g_handles = NULL;
        g_cap = g_open = 0;
        pthread_mutex_unlock(&g_lock);
}

static void init_once(void)
{
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static HANDLE handle_of(uint32_t idx, uint32_t gen)
{
        uint64_t v = ((uint64_t)gen << H_INDEX_BITS | (idx + 1)) << 2;

        return (HANDLE)(uintptr_t)v;
}

/* Looks a handle up and returns its port with a reference, or NULL. */
static sn_port_t *port_get(HANDLE h)
{
        uint64_t v = (uint64_t)(uintptr_t)h;
        sn_port_t *port = NULL;
        uint32_t idx, gen;

        if (!h || h == INVALID_HANDLE_VALUE || v & 3)
                return NULL;
        v >>= 2;
        idx = (uint32_t)(v & ((1u << H_INDEX_BITS) - 1));
        gen = (uint32_t)(v >> H_INDEX_BITS);
        if (idx == 0)
                return NULL;
        idx--;
        pthread_mutex_lock(&g_lock);
        if (idx < g_cap && g_handles[idx].port && g_handles[idx].gen == gen)
                port = sn__port_ref(g_handles[idx].port);
        pthread_mutex_unlock(&g_lock);
        return port;
}

/* Returns the process's connection, opening it on first use.  Called with g_lock held. */
static int conn_get(sn_conn_t **ret)
{
        int r;

        /* The session was lost for good (no daemon came back in time, or another user's did;
         * docs/reconnect.md): with no handle left, a new connection starts afresh. */
        if (g_conn && sn__conn_usable(g_conn) < 0 && g_open == 0)
                g_conn = sn_conn_close(g_conn);
        if (!g_conn) {
                r = sn_conn_open(NULL, &g_conn);
                if (r < 0)
                        return r;
        }
        *ret = g_conn;
        return 0;
}

static BOOL fail(DWORD code)
{
        sn_w32_set_last_error(code);
        return FALSE;
}

enum port_how { PORT_NEW, PORT_NAMED, PORT_OPEN };

/* Makes a port (new, new and named, or opened by name) and a handle for it. */
static HANDLE port_handle_new(enum port_how how, const char *name, DWORD threads,
                              DWORD linger_ms)
{
        sn_port_options_t opt = { .concurrency = threads, .linger_ms = linger_ms };
        sn_conn_t *conn;
        sn_port_t *port;
        uint32_t idx;
        HANDLE h;
        int r;

        pthread_mutex_lock(&g_lock);
        r = conn_get(&conn);
        if (r < 0) {
                pthread_mutex_unlock(&g_lock);
                sn_w32_set_last_error(r == -ENOMEM   ? ERROR_NOT_ENOUGH_MEMORY
                                      : r == -EDQUOT ? ERROR_NOT_ENOUGH_QUOTA /* per user */
                                                     : WSASYSNOTREADY);
                return NULL;
        }
        for (idx = 0; idx < g_cap && g_handles[idx].port; idx++)
                ;
        if (idx == g_cap) {
                uint32_t cap = g_cap ? g_cap * 2 : 16;
                struct hentry *n = cap < (1u << H_INDEX_BITS) - 1
                                           ? realloc(g_handles, cap * sizeof(*n))
                                           : NULL;

                if (!n) {
                        pthread_mutex_unlock(&g_lock);
                        sn_w32_set_last_error(ERROR_NOT_ENOUGH_MEMORY);
                        return NULL;
                }
                memset(n + g_cap, 0, (cap - g_cap) * sizeof(*n));
                g_handles = n;
                g_cap = cap;
        }
        /* The daemon call happens under the lock: creation is rare and keeps slots simple. */
        r = how == PORT_NEW     ? sn_port_create(conn, threads, &port)
            : how == PORT_NAMED ? sn_port_create_named_ex(conn, name, &opt, &port)
                                : sn_port_open(conn, name, &port);
        if (r < 0) {
                pthread_mutex_unlock(&g_lock);
                sn_w32_set_last_error(sn__w32_map(r, SN_W32_CALL));
                return NULL;
        }
        g_handles[idx].port = port;
        g_handles[idx].gen = (g_handles[idx].gen + 1) & H_GEN_MASK;
        h = handle_of(idx, g_handles[idx].gen);
        g_open++;
        pthread_mutex_unlock(&g_lock);
        return h;
}

SN_EXPORT HANDLE sn_w32_create_io_completion_port(HANDLE file, HANDLE existing, ULONG_PTR key,
                                                  DWORD threads)
{
        pthread_once(&g_once, init_once);
        if (file != INVALID_HANDLE_VALUE) {
                /* Associating a file for overlapped I/O: socknotify delivers socket state
                 * notifications, not I/O completions. */
                sn_w32_set_last_error(ERROR_NOT_SUPPORTED);
                return NULL;
        }
        if (existing) {
                sn_w32_set_last_error(ERROR_INVALID_PARAMETER); /* row 71 */
                return NULL;
        }
        (void)key; /* ignored for a new port (row 71) */
        return port_handle_new(PORT_NEW, NULL, threads, 0);
}

SN_EXPORT HANDLE sn_w32_create_named_port(const char *name, DWORD threads)
{
        pthread_once(&g_once, init_once);
        if (!name || !*name || strlen(name) > 255) {
                sn_w32_set_last_error(ERROR_INVALID_PARAMETER);
                return NULL;
        }
        return port_handle_new(PORT_NAMED, name, threads, 0);
}

SN_EXPORT HANDLE sn_w32_create_named_port_ex(const char *name, DWORD threads, DWORD linger_ms)
{
        pthread_once(&g_once, init_once);
        if (!name || !*name || strlen(name) > 255) {
                sn_w32_set_last_error(ERROR_INVALID_PARAMETER);
                return NULL;
        }
        return port_handle_new(PORT_NAMED, name, threads, linger_ms);
}

SN_EXPORT BOOL sn_w32_set_port_linger(HANDLE h, DWORD linger_ms)
{
        sn_port_t *port = port_get(h);
        int r;

        if (!port)
                return fail(ERROR_INVALID_HANDLE);
        r = sn_port_set_linger(port, linger_ms);
        sn__port_unref(port);
        return r < 0 ? fail(sn__w32_map(r, SN_W32_CALL)) : TRUE;
}

SN_EXPORT BOOL sn_w32_take_port_sockets(HANDLE h, SN_TAKEN_SOCKET *sockets, ULONG count,
                                        PULONG taken, PULONG remaining, PULONG holders)
{
        sn_port_t *port = port_get(h);
        sn_taken_socket_t *t = NULL;
        sn_take_info_t info = { 0 };
        int r;

        if (!port)
                return fail(ERROR_INVALID_HANDLE);
        if (!taken || (count && !sockets) || count > INT32_MAX) {
                sn__port_unref(port);
                return fail(ERROR_INVALID_PARAMETER);
        }
        *taken = 0;
        if (count && !(t = calloc(count, sizeof(*t)))) {
                sn__port_unref(port);
                return fail(ERROR_NOT_ENOUGH_MEMORY);
        }
        r = sn_port_take_sockets(port, t, count, &info);
        sn__port_unref(port);
        if (r < 0) {
                free(t);
                return fail(sn__w32_map(r, SN_W32_CALL));
        }
        for (int i = 0; i < r; i++)
                sockets[i] = (SN_TAKEN_SOCKET){
                        .socket = t[i].fd >= 0 ? (SOCKET)t[i].fd : INVALID_SOCKET,
                        .previousSocket = t[i].previous_fd >= 0 ? (SOCKET)t[i].previous_fd
                                                                : INVALID_SOCKET,
                        .completionKey = (PVOID)(uintptr_t)t[i].key,
                        .eventFilter = t[i].filter,
                        .triggerFlags = t[i].trigger,
                        .enabled = t[i].enabled,
                        .armed = t[i].armed,
                };
        free(t);
        *taken = (ULONG)r;
        if (remaining)
                *remaining = info.remaining;
        if (holders)
                *holders = info.holders;
        return TRUE;
}

SN_EXPORT HANDLE sn_w32_open_port(const char *name)
{
        pthread_once(&g_once, init_once);
        if (!name || !*name || strlen(name) > 255) {
                sn_w32_set_last_error(ERROR_INVALID_PARAMETER);
                return NULL;
        }
        return port_handle_new(PORT_OPEN, name, 0, 0);
}

SN_EXPORT BOOL sn_w32_close_handle(HANDLE h)
{
        sn_port_t *port = port_get(h);
        uint64_t v = (uint64_t)(uintptr_t)h >> 2;
        uint32_t idx = (uint32_t)(v & ((1u << H_INDEX_BITS) - 1)) - 1;

        if (!port)
                return fail(ERROR_INVALID_HANDLE);
        pthread_mutex_lock(&g_lock);
        if (g_handles[idx].port != port) {
                /* Another thread closed it first. */
                pthread_mutex_unlock(&g_lock);
                sn__port_unref(port);
                return fail(ERROR_INVALID_HANDLE);
        }
        g_handles[idx].port = NULL;
        g_open--;
        pthread_mutex_unlock(&g_lock);
        /* Rule 9: closes on the daemon now (waiters get ECANCELED); drops the table's reference. */
        sn_port_close(port);
        sn__port_unref(port);
        return TRUE;
}

/* Fills Win32 entries from native ones. */
static void to_overlapped_entries(OVERLAPPED_ENTRY *out, const sn_entry_t *in, uint32_t n)
{
        for (uint32_t i = 0; i < n; i++) {
                out[i].lpCompletionKey = (ULONG_PTR)in[i].key;
                out[i].lpOverlapped = (LPOVERLAPPED)(uintptr_t)in[i].overlapped;
                out[i].Internal = 0;
                out[i].dwNumberOfBytesTransferred = in[i].events;
        }
}

static bool overlap(const void *a, size_t alen, const void *b, size_t blen)
{
        uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

        return alen && blen && x < y + blen && y < x + alen;
}

static DWORD process_notifications(HANDLE h, UINT32 count, SOCK_NOTIFY_REGISTRATION *infos,
                                   UINT32 timeout_ms, ULONG cc, OVERLAPPED_ENTRY *entries,
                                   UINT32 *received)
{
        sn_registration_t stack_regs[32], *regs = stack_regs;
        sn_entry_t stack_ents[64], *ents = stack_ents;
        sn_port_t *port;
        DWORD ret;
        int r;

        /* The reference page allows ERROR_SUCCESS, WAIT_TIMEOUT or a WSAE* code, and no last
         * error (row 23): every failure of the call as a whole is returned as a WSAE* code
         * (errmap.c says which and why).  WSANOTINITIALISED is what any Winsock function
         * answers before WSAStartup. */
        if (!g_startups)
                return WSANOTINITIALISED;
        /* Rows 2-5: argument combinations.  A failed call changes nothing (row 7).  The count
         * pointer is optional (_Out_opt_): without it the entries are still written and the
         * caller finds them by what it stored in the array beforehand (row 22). */
        if ((count == 0) != (infos == NULL))
                return WSAEINVAL;
        if (cc == 0 && (timeout_ms != 0 || entries || received))
                return WSAEINVAL;
        if (cc && !entries)
                return WSAEINVAL;
        if (overlap(infos, (size_t)count * sizeof(*infos), entries, (size_t)cc * sizeof(*entries)))
                return WSAEINVAL;
        port = port_get(h);
        if (!port)
                return WSAEINVAL; /* row 6 */

        if (count > SN_ARRAY_SIZE(stack_regs))
                regs = malloc((size_t)count * sizeof(*regs));
        if (cc > SN_ARRAY_SIZE(stack_ents))
                ents = malloc((size_t)cc * sizeof(*ents));
        if (!regs || !ents) {
                ret = WSAENOBUFS;
                goto out;
        }
        for (UINT32 i = 0; i < count; i++) {
                regs[i] = (sn_registration_t){
                        .fd = infos[i].socket > INT_MAX ? -1 : (int)infos[i].socket,
                        .key = (uint64_t)(uintptr_t)infos[i].completionKey,
                        .filter = infos[i].eventFilter,
                        .op = infos[i].operation,
                        .trigger = infos[i].triggerFlags,
                };
        }
        r = sn_port_process(port, regs, count, ents, cc, timeout_ms);
        if (r < 0 && r != -ETIMEDOUT) {
                ret = sn__w32_map(r, SN_W32_PSN);
                goto out;
        }
        /* Row 8: every result is written back after ERROR_SUCCESS or WAIT_TIMEOUT. */
        for (UINT32 i = 0; i < count; i++)
                infos[i].registrationResult = regs[i].result ? sn__w32_map(regs[i].result,
                                                                          SN_W32_ENTRY)
                                                             : ERROR_SUCCESS;
        if (cc) {
                uint32_t n = r > 0 ? (uint32_t)r : 0;

                to_overlapped_entries(entries, ents, n);
                if (received)
                        *received = n;
        }
        /* Rule 1 / row 17: WAIT_TIMEOUT, never ERROR_TIMEOUT.  Row 1: cc == 0 is a success. */
        ret = r == -ETIMEDOUT ? WAIT_TIMEOUT : ERROR_SUCCESS;
out:
        if (regs != stack_regs)
                free(regs);
        if (ents != stack_ents)
                free(ents);
        sn__port_unref(port);
        return ret;
}

SN_EXPORT DWORD sn_w32_process_socket_notifications(HANDLE h, UINT32 count,
                                                    SOCK_NOTIFY_REGISTRATION *infos,
                                                    UINT32 timeout_ms, ULONG cc,
                                                    OVERLAPPED_ENTRY *entries, UINT32 *received)
{
        /* The last error is errno or a mark in it (errmap.c), and a malloc() that fails or a
         * transport call that retries sets errno on its way: keep it, or the caller's last
         * error changes although the call promises to leave it alone (row 23). */
        int saved = errno;
        DWORD ret = process_notifications(h, count, infos, timeout_ms, cc, entries, received);

        errno = saved;
        return ret;
}

/* Dequeues up to n entries; returns the count or a Win32 failure code through *ret_code. */
static int dequeue(HANDLE h, sn_entry_t *ents, uint32_t n, DWORD ms, DWORD *ret_code)
{
        sn_port_t *port = port_get(h);
        int r;

        if (!port) {
                *ret_code = ERROR_INVALID_HANDLE;
                return -1;
        }
        r = sn_port_dequeue(port, ents, n, ms);
        sn__port_unref(port);
        if (r < 0) {
                *ret_code = sn__w32_map(r, SN_W32_CALL);
                return -1;
        }
        return r;
}

SN_EXPORT BOOL sn_w32_get_queued_completion_status(HANDLE h, LPDWORD bytes, PULONG_PTR key,
                                                   LPOVERLAPPED *overlapped, DWORD ms)
{
        sn_entry_t e;
        DWORD code;

        if (!bytes || !key || !overlapped)
                return fail(ERROR_INVALID_PARAMETER);
        if (dequeue(h, &e, 1, ms, &code) < 0) {
                /* Rows 75, 77: no packet: *lpOverlapped is NULL, the reason in GetLastError. */
                *overlapped = NULL;
                return fail(code);
        }
        *bytes = e.events;
        *key = (ULONG_PTR)e.key;
        *overlapped = (LPOVERLAPPED)(uintptr_t)e.overlapped;
        return TRUE;
}

SN_EXPORT BOOL sn_w32_get_queued_completion_status_ex(HANDLE h, LPOVERLAPPED_ENTRY entries,
                                                      ULONG count, PULONG removed, DWORD ms,
                                                      BOOL alertable)
{
        sn_entry_t stack_ents[64], *ents = stack_ents;
        DWORD code;
        int n;

        (void)alertable; /* no APCs on Linux: never WAIT_IO_COMPLETION */
        if (!entries || !count || !removed)
                return fail(ERROR_INVALID_PARAMETER);
        if (count > SN_ARRAY_SIZE(stack_ents)) {
                ents = malloc((size_t)count * sizeof(*ents));
                if (!ents)
                        return fail(ERROR_NOT_ENOUGH_MEMORY);
        }
        n = dequeue(h, ents, count, ms, &code);
        if (n < 0) {
                *removed = 0;
                if (ents != stack_ents)
                        free(ents);
                return fail(code);
        }
        to_overlapped_entries(entries, ents, (uint32_t)n);
        *removed = (ULONG)n;
        if (ents != stack_ents)
                free(ents);
        return TRUE;
}

SN_EXPORT BOOL sn_w32_post_queued_completion_status(HANDLE h, DWORD bytes, ULONG_PTR key,
                                                    LPOVERLAPPED overlapped)
{
        sn_port_t *port = port_get(h);
        int r;

        if (!port)
                return fail(ERROR_INVALID_HANDLE); /* row 79 */
        r = sn_port_post(port, key, bytes, (uint64_t)(uintptr_t)overlapped);
        sn__port_unref(port);
        if (r < 0)
                return fail(sn__w32_map(r, SN_W32_CALL)); /* L4: ERROR_NOT_ENOUGH_QUOTA */
        return TRUE;
}

SN_EXPORT int sn_w32_closesocket(SOCKET s)
{
        sn_conn_t *conn;
        struct stat st;
        int r;

        if (!g_startups) {
                sn_w32_set_last_error(WSANOTINITIALISED);
                return SOCKET_ERROR;
        }
        /* Only sockets: anything else stays open and the call fails, as on Windows. */
        if (s > INT_MAX || fstat((int)s, &st) < 0 || !S_ISSOCK(st.st_mode)) {
                sn_w32_set_last_error(WSAENOTSOCK);
                return SOCKET_ERROR;
        }
        pthread_mutex_lock(&g_lock);
        conn = g_conn;
        pthread_mutex_unlock(&g_lock);
        /* Rule L1: the daemon's copy goes first (no REMOVE packet), then ours. */
        r = sn_socket_close(conn, (int)s);
        if (r < 0) {
                sn_w32_set_last_error(WSAENOTSOCK);
                return SOCKET_ERROR;
        }
        return 0;
}

SN_EXPORT int sn_w32_wsa_startup(WORD version, LPWSADATA data)
{
        unsigned major = LOBYTE(version), minor = HIBYTE(version);

        pthread_once(&g_once, init_once);
        if (!data)
                return WSAEFAULT;
        memset(data, 0, sizeof(*data));
        /* Windows' Winsock 2.2 serves every version from 1.0 on: the one used is the lower of
         * the request and 2.2; below 1.0 nothing is supported. */
        data->wHighVersion = MAKEWORD(2, 2);
        data->wVersion = major > 2 || (major == 2 && minor >= 2) ? MAKEWORD(2, 2) : version;
        if (major < 2) {
                /* Only meaningful to 1.x callers, with the values Windows reports. */
                data->iMaxSockets = 32767;
                data->iMaxUdpDg = 65467;
        }
        snprintf(data->szDescription, sizeof(data->szDescription), "socknotify %s",
                 PACKAGE_VERSION);
        snprintf(data->szSystemStatus, sizeof(data->szSystemStatus), "Running");
        if (major < 1) {
                data->wVersion = MAKEWORD(2, 2);
                return WSAVERNOTSUPPORTED;
        }
        pthread_mutex_lock(&g_lock);
        g_startups++;
        pthread_mutex_unlock(&g_lock);
        return 0;
}

SN_EXPORT int sn_w32_wsa_cleanup(void)
{
        pthread_mutex_lock(&g_lock);
        if (!g_startups) {
                pthread_mutex_unlock(&g_lock);
                sn_w32_set_last_error(WSANOTINITIALISED);
                return SOCKET_ERROR;
        }
        /* The last cleanup closes the connection once no port handle is open. */
        if (--g_startups == 0 && g_open == 0 && g_conn)
                g_conn = sn_conn_close(g_conn);
        pthread_mutex_unlock(&g_lock);
        return 0;
}

SN_EXPORT int sn_w32_ioctlsocket(SOCKET s, long cmd, unsigned long *arg)
{
        int fd = s > INT_MAX ? -1 : (int)s;

        if (!g_startups) {
                sn_w32_set_last_error(WSANOTINITIALISED);
                return SOCKET_ERROR;
        }
        if (!arg) {
                sn_w32_set_last_error(WSAEFAULT);
                return SOCKET_ERROR;
        }
        if (cmd == (long)FIONBIO) {
                int fl = fcntl(fd, F_GETFL);

                if (fl < 0 || fcntl(fd, F_SETFL, *arg ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0) {
                        sn_w32_set_last_error(sn__w32_map(errno, SN_W32_SOCKET));
                        return SOCKET_ERROR;
                }
                return 0;
        }
        if (cmd == (long)FIONREAD) {
                int n = 0;

                if (ioctl(fd, FIONREAD, &n) < 0) {
                        sn_w32_set_last_error(sn__w32_map(errno, SN_W32_SOCKET));
                        return SOCKET_ERROR;
                }
                *arg = (unsigned long)n;
                return 0;
        }
        sn_w32_set_last_error(WSAEINVAL);
        return SOCKET_ERROR;
}

SN_EXPORT int sn_w32_wsa_poll(LPWSAPOLLFD fds, ULONG n, INT timeout)
{
        struct pollfd stack_p[64], *p = stack_p;
        int r;

        if (!g_startups) {
                sn_w32_set_last_error(WSANOTINITIALISED);
                return SOCKET_ERROR;
        }
        if (!fds || !n) {
                sn_w32_set_last_error(WSAEINVAL);
                return SOCKET_ERROR;
        }
        if (n > SN_ARRAY_SIZE(stack_p)) {
                p = malloc((size_t)n * sizeof(*p));
                if (!p) {
                        sn_w32_set_last_error(WSAENOBUFS);
                        return SOCKET_ERROR;
                }
        }
        for (ULONG i = 0; i < n; i++)
                p[i] = (struct pollfd){ .fd = fds[i].fd > INT_MAX ? -1 : (int)fds[i].fd,
                                        .events = fds[i].events };
        r = poll(p, n, timeout < 0 ? -1 : timeout);
        if (r >= 0)
                for (ULONG i = 0; i < n; i++)
                        fds[i].revents = p[i].revents;
        if (p != stack_p)
                free(p);
        if (r < 0) {
                sn_w32_set_last_error(sn__w32_map(errno, SN_W32_SOCKET));
                return SOCKET_ERROR;
        }
        return r;
}

/* The socket's SO_TYPE, or 0. */
static int sock_type(int fd)
{
        int type = 0;
        socklen_t len = sizeof(type);

        if ((getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return 0;
        return type;
}

/*
 * Gives errno Winsock's meaning after a failed socket call on fd:
 *  - a datagram socket's ECONNREFUSED (an ICMP port unreachable) is WSAECONNRESET on Windows;
 *  - EPIPE on a TCP socket the peer reset (state CLOSE) is WSAECONNRESET on Windows, where Linux
 *    reports ECONNRESET once and EPIPE afterwards.  EPIPE after a local shutdown(SD_SEND) of a
 *    connection that is still open stays EPIPE (WSAESHUTDOWN).
 */
static void winsock_errno(int fd)
{
        int err = errno;
        struct tcp_info ti;
        socklen_t len = sizeof(ti);

        if (err == ECONNREFUSED && sock_type(fd) == SOCK_DGRAM)
                err = ECONNRESET;
        else if (err == EPIPE && sock_type(fd) == SOCK_STREAM &&
                 (getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
                 ti.tcpi_state == TCP_CLOSE)
                err = ECONNRESET;
        errno = err;
}

static int sock_fd(SOCKET s)
{
        return s > INT_MAX ? -1 : (int)s;
}

SN_EXPORT ssize_t sn_w32_send(SOCKET s, const void *buf, size_t len, int flags)
{
        ssize_t r = (send)(sock_fd(s), buf, len, flags | MSG_NOSIGNAL);

        if (r < 0)
                winsock_errno(sock_fd(s));
        return r;
}

SN_EXPORT ssize_t sn_w32_sendto(SOCKET s, const void *buf, size_t len, int flags,
                                const struct sockaddr *to, socklen_t tolen)
{
        ssize_t r = (sendto)(sock_fd(s), buf, len, flags | MSG_NOSIGNAL, to, tolen);

        if (r < 0)
                winsock_errno(sock_fd(s));
        return r;
}

SN_EXPORT ssize_t sn_w32_sendmsg(SOCKET s, const struct msghdr *msg, int flags)
{
        ssize_t r = (sendmsg)(sock_fd(s), msg, flags | MSG_NOSIGNAL);

        if (r < 0)
                winsock_errno(sock_fd(s));
        return r;
}

/* recv/recvfrom through recvmsg, to see truncation: Windows fails a datagram larger than the
 * buffer with WSAEMSGSIZE (the rest discarded) where Linux returns the part that fit. */
static ssize_t recv_common(SOCKET s, void *buf, size_t len, int flags, struct sockaddr *from,
                           socklen_t *fromlen)
{
        struct iovec iov = { .iov_base = buf, .iov_len = len };
        struct msghdr msg = { .msg_name = from, .msg_namelen = from && fromlen ? *fromlen : 0,
                              .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t r = (recvmsg)(sock_fd(s), &msg, flags);

        if (r < 0) {
                winsock_errno(sock_fd(s));
                return r;
        }
        if (from && fromlen)
                *fromlen = msg.msg_namelen;
        if (msg.msg_flags & MSG_TRUNC && !(flags & MSG_TRUNC)) {
                errno = EMSGSIZE;
                return -1;
        }
        return r;
}

SN_EXPORT ssize_t sn_w32_recv(SOCKET s, void *buf, size_t len, int flags)
{
        return recv_common(s, buf, len, flags, NULL, NULL);
}

SN_EXPORT ssize_t sn_w32_recvfrom(SOCKET s, void *buf, size_t len, int flags,
                                  struct sockaddr *from, void *fromlen)
{
        return recv_common(s, buf, len, flags, from, (socklen_t *)fromlen);
}

/* 1 when fd has SO_REUSEADDR or SO_REUSEPORT set (a bind may share its address), 0 when its
 * binds are exclusive, -1 with errno (ENOTSOCK, EBADF) when it is not a socket. */
static int reuse_set(int fd)
{
        int addr = 0, port = 0, saved = errno;
        socklen_t len = sizeof(addr);

        if ((getsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &addr, &len) < 0)
                return -1;
        len = sizeof(port);
        if ((getsockopt)(fd, SOL_SOCKET, SO_REUSEPORT, &port, &len) < 0) {
                /* A socket family without it cannot share a port that way; errno, which
                 * GetLastError() reads, stays as the caller left it. */
                port = 0;
                errno = saved;
        }
        return addr || port;
}

/* SO_EXCLUSIVEADDRUSE, which Linux lacks, as a BOOL: what a bind of fd would do. */
static int get_exclusive(int fd, void *val, socklen_t *len)
{
        int r;

        if (!val || !len || *len < sizeof(int)) {
                errno = EFAULT; /* Windows: WSAEFAULT, optlen too small */
                return -1;
        }
        r = reuse_set(fd);
        if (r < 0)
                return -1;
        r = !r;
        memcpy(val, &r, sizeof(r));
        *len = sizeof(r);
        return 0;
}

SN_EXPORT int sn_w32_getsockopt(SOCKET s, int level, int name, void *val, void *len)
{
        int fd = sock_fd(s), r;

        if (level == SOL_SOCKET && name == SO_EXCLUSIVEADDRUSE)
                return get_exclusive(fd, val, (socklen_t *)len);
        r = (getsockopt)(fd, level, name, val, (socklen_t *)len);

        if (r < 0) {
                winsock_errno(fd);
                return r;
        }
        if (level == SOL_SOCKET && name == SO_ERROR && val && *(socklen_t *)len >= sizeof(int)) {
                int err;

                memcpy(&err, val, sizeof(err));
                if (err == ECONNREFUSED && sock_type(fd) == SOCK_DGRAM)
                        err = ECONNRESET;
                if (err)
                        err = (int)sn__w32_map(err, SN_W32_SOCKET);
                memcpy(val, &err, sizeof(err));
        }
        /* Windows documents that a getsockopt(SO_ERROR) resets the thread's last error (the
         * socket's own error is in the value); the only successful Winsock call it says so of. */
        if (level == SOL_SOCKET && name == SO_ERROR)
                sn_w32_set_last_error(ERROR_SUCCESS);
        return 0;
}

SN_EXPORT int sn_w32_setsockopt(SOCKET s, int level, int name, const void *val, int len)
{
        int fd = sock_fd(s), on, r;

        if (len < 0) {
                errno = EFAULT; /* Windows: WSAEFAULT; Linux would say EINVAL */
                return -1;
        }
        if (level == SOL_SOCKET && name == SO_EXCLUSIVEADDRUSE) {
                /* Linux binds exclusively unless SO_REUSEADDR or SO_REUSEPORT is set, so
                 * there is nothing to set: TRUE is refused where Windows refuses it (a socket
                 * with SO_REUSEADDR, WSAEINVAL) and accepted otherwise; FALSE changes nothing,
                 * Linux having no weaker default to return to. */
                if (!val || len < (int)sizeof(int)) {
                        errno = EFAULT;
                        return -1;
                }
                memcpy(&on, val, sizeof(on));
                r = reuse_set(fd);
                if (r < 0)
                        return -1;
                if (on && r) {
                        errno = EINVAL;
                        return -1;
                }
                return 0;
        }
        r = (setsockopt)(fd, level, name, val, (socklen_t)len);
        if (r < 0)
                winsock_errno(fd);
        return r;
}

/* Fills msg with an iovec array for bufs (stack space for up to 16).  Returns 0 or a code. */
static DWORD wsabuf_msg(struct msghdr *msg, struct iovec *stack_iov, LPWSABUF bufs, DWORD n)
{
        struct iovec *iov = stack_iov;

        if (n && !bufs)
                return WSAEFAULT;
        if (n > 16) {
                iov = malloc((size_t)n * sizeof(*iov));
                if (!iov)
                        return WSAENOBUFS;
        }
        for (DWORD i = 0; i < n; i++)
                iov[i] = (struct iovec){ .iov_base = bufs[i].buf, .iov_len = bufs[i].len };
        msg->msg_iov = iov;
        msg->msg_iovlen = n;
        return 0;
}

SN_EXPORT int sn_w32_wsa_send(SOCKET s, LPWSABUF bufs, DWORD n, LPDWORD sent, DWORD flags,
                              const struct sockaddr *to, int tolen, LPWSAOVERLAPPED ov,
                              LPWSAOVERLAPPED_COMPLETION_ROUTINE done)
{
        struct iovec stack_iov[16];
        struct msghdr msg = { .msg_name = (void *)to, .msg_namelen = to ? (socklen_t)tolen : 0 };
        DWORD code;
        ssize_t r;

        if (!g_startups)
                code = WSANOTINITIALISED;
        else if (ov || done)
                code = WSAEOPNOTSUPP; /* no overlapped I/O: notifications only */
        else if (!sent || (to && tolen <= 0))
                code = WSAEFAULT;
        else
                code = wsabuf_msg(&msg, stack_iov, bufs, n);
        if (code) {
                sn_w32_set_last_error(code);
                return SOCKET_ERROR;
        }
        r = (sendmsg)(sock_fd(s), &msg, (int)flags | MSG_NOSIGNAL);
        if (r < 0)
                winsock_errno(sock_fd(s));
        if (msg.msg_iov != stack_iov)
                free(msg.msg_iov);
        if (r < 0) {
                sn_w32_set_last_error(sn__w32_map(errno, SN_W32_SOCKET));
                return SOCKET_ERROR;
        }
        *sent = (DWORD)r;
        return 0;
}

SN_EXPORT int sn_w32_wsa_recv(SOCKET s, LPWSABUF bufs, DWORD n, LPDWORD received, LPDWORD flags,
                              struct sockaddr *from, LPINT fromlen, LPWSAOVERLAPPED ov,
                              LPWSAOVERLAPPED_COMPLETION_ROUTINE done)
{
        struct iovec stack_iov[16];
        struct msghdr msg = { .msg_name = from };
        DWORD code;
        ssize_t r;

        if (!g_startups)
                code = WSANOTINITIALISED;
        else if (ov || done)
                code = WSAEOPNOTSUPP;
        else if (!received || !flags || (from && (!fromlen || *fromlen <= 0)))
                code = WSAEFAULT;
        else
                code = wsabuf_msg(&msg, stack_iov, bufs, n);
        if (code) {
                sn_w32_set_last_error(code);
                return SOCKET_ERROR;
        }
        msg.msg_namelen = from ? (socklen_t)*fromlen : 0;
        r = (recvmsg)(sock_fd(s), &msg, (int)*flags);
        if (r < 0)
                winsock_errno(sock_fd(s));
        if (msg.msg_iov != stack_iov)
                free(msg.msg_iov);
        if (r < 0) {
                sn_w32_set_last_error(sn__w32_map(errno, SN_W32_SOCKET));
                return SOCKET_ERROR;
        }
        *received = (DWORD)r;
        *flags = 0;
        if (from)
                *fromlen = (INT)msg.msg_namelen;
        if (msg.msg_flags & MSG_TRUNC) {
                /* Windows: a datagram larger than the buffers fails, its rest discarded. */
                sn_w32_set_last_error(WSAEMSGSIZE);
                return SOCKET_ERROR;
        }
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotify.h - native C API of libsocknotify.
 *
 * socknotify brings Windows socket state notifications (ProcessSocketNotifications and I/O
 * completion ports) to Linux.  A process connects to the socknotifyd daemon, creates completion
 * ports there, registers its sockets on them and dequeues notifications.  The Win32 names live
 * in <socknotify/winsock.h>; this header is the native form, with negative errno results.
 *
 * Ownership rule (L1).  Registering a socket passes a copy of it to the daemon (SCM_RIGHTS): the
 * daemon then holds a second reference to the same open socket.  Closing your descriptor with
 * plain close() does NOT close the connection while the registration exists: the peer sees no
 * EOF until the registration is removed (OP_REMOVE and its REMOVE notification) or the port is
 * closed.  Close a registered socket with sn_socket_close(), which drops the daemon's copy
 * (without a REMOVE notification) and then closes yours.
 *
 * Threads: every function may be called from any thread.  Several threads may wait on one port
 * at once; each is a separate waiter, woken most-recent-first.  After fork() the child must not
 * use a connection of its parent: every call on it fails with -EBADFD; open a new one.
 * A thread waiting in sn_port_process() or sn_port_dequeue() may be cancelled (pthread_cancel):
 * the wait cleans up, and entries given to the abandoned wait are returned by the next dequeuing
 * call on the same port; other calls hold cancellation off until they return.
 *
 * Errors: functions return 0 (or a count) on success and a negative errno value on failure;
 * sn_strerror() describes them.  Nothing in this library prints.
 */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SN_EXPORT __attribute__((visibility("default")))
#else
#define SN_EXPORT
#endif

/* Version of this header, which is the version of the package (checked by make check).  The
 * library's version at run time is sn_version(); compare the two to detect a mismatch. */
#define SN_VERSION_MAJOR 0
#define SN_VERSION_MINOR 1
#define SN_VERSION_PATCH 0
/* The version as one number, (major << 16) | (minor << 8) | patch: what sn_version() returns. */
#define SN_VERSION_HEX ((SN_VERSION_MAJOR << 16) | (SN_VERSION_MINOR << 8) | SN_VERSION_PATCH)

/* Registration event filter (values of SOCK_NOTIFY_REGISTER_EVENT_*). */
#define SN_REGISTER_EVENT_NONE 0x00u
#define SN_REGISTER_EVENT_IN 0x01u
#define SN_REGISTER_EVENT_OUT 0x02u
#define SN_REGISTER_EVENT_HANGUP 0x04u
#define SN_REGISTER_EVENTS_ALL 0x07u

/* Notification event bits, in sn_entry.events (values of SOCK_NOTIFY_EVENT_*). */
#define SN_EVENT_IN 0x01u
#define SN_EVENT_OUT 0x02u
#define SN_EVENT_HANGUP 0x04u
#define SN_EVENT_ERR 0x40u
#define SN_EVENT_REMOVE 0x80u
#define SN_EVENTS_ALL 0xc7u

/* Operations (values of SOCK_NOTIFY_OP_*); exactly one per registration. */
#define SN_OP_NONE 0x00u
#define SN_OP_ENABLE 0x01u
#define SN_OP_DISABLE 0x02u
#define SN_OP_REMOVE 0x04u

/* Trigger flags (values of SOCK_NOTIFY_TRIGGER_*).  ENABLE needs LEVEL or EDGE; ONESHOT and
 * PERSISTENT exclude each other and PERSISTENT is the default. */
#define SN_TRIGGER_ONESHOT 0x01u
#define SN_TRIGGER_PERSISTENT 0x02u
#define SN_TRIGGER_LEVEL 0x04u
#define SN_TRIGGER_EDGE 0x08u
#define SN_TRIGGER_ALL 0x0fu

/* Timeout value that waits without limit. */
#define SN_INFINITE 0xffffffffu

/* sn_entry.kind */
#define SN_ENTRY_SOCKET 0u
#define SN_ENTRY_POSTED 1u

/* A connection to socknotifyd.  Opaque. */
typedef struct sn_conn sn_conn_t;
/* A completion port on the daemon.  Opaque; belongs to one connection. */
typedef struct sn_port sn_port_t;

/* One registration operation, the native SOCK_NOTIFY_REGISTRATION.  result is written back by
 * sn_port_process(): 0, or a negative errno for that entry alone:
 *   -ENOTSOCK  fd is not an open socket          -EINVAL   bad operation, filter or triggers
 *   -EEXIST    socket registered on another port (or its REMOVE notification is still queued)
 *   -ENOENT    DISABLE/REMOVE of a socket not registered on this port
 *   -EDQUOT    the port holds its maximum number of registrations, or the daemon holds its
 *              maximum number of sockets for this user (sn_limits_t.max_sockets) */
typedef struct sn_registration {
        int fd;
        uint16_t filter;
        uint8_t op;
        uint8_t trigger;
        uint64_t key;
        int32_t result;
} sn_registration_t;

/* One dequeued entry, the native OVERLAPPED_ENTRY.  For a socket notification events holds the
 * SN_EVENT_* bits and overlapped is 0; for a posted packet events and overlapped are the posted
 * byte count and overlapped value, unchanged. */
typedef struct sn_entry {
        uint64_t key;
        uint64_t overlapped;
        uint32_t events;
        uint32_t kind;
} sn_entry_t;

/*
 * Layout rules of the public structs (ABI).
 * sn_registration_t and sn_entry_t are passed in arrays: their layout is frozen and never grows;
 * a different layout would come with new functions.  sn_limits_t is append-only: fields are only
 * ever added at its end, never removed, reordered or resized, and a release that appends one
 * gives sn_conn_limits() a new symbol version, so a program built against an older header keeps
 * receiving exactly the struct it was compiled with.
 */

/* Daemon limits announced at connection time (append-only, see above). */
typedef struct sn_limits {
        uint32_t max_message;
        uint32_t max_fds;
        uint32_t max_ports;
        uint32_t max_registrations;
        uint32_t max_posted;
        uint32_t max_waits;
        uint32_t max_sockets; /* sockets the daemon holds for this user, all connections */
} sn_limits_t;

/*
 * Connects to socknotifyd at path.  path NULL means: $SOCKNOTIFY_SOCKET when set; else, for a
 * user other than root with $XDG_RUNTIME_DIR set, $XDG_RUNTIME_DIR/socknotify.sock and, when
 * no daemon listens there, the system socket /run/socknotify/socknotify.sock; else the system
 * socket.  Errors: -ENOENT or -ECONNREFUSED (no daemon), -EACCES (not allowed to connect),
 * -EPROTO (not a socknotifyd or no common protocol version), -ENAMETOOLONG, -ENOMEM;
 * sn_conn_open_error() then says which paths were tried and how to choose one.
 */
SN_EXPORT int sn_conn_open(const char *path, sn_conn_t **ret_conn);

/* Describes why the calling thread's most recent sn_conn_open() failed: each socket path tried
 * with its error, and what to do (start a daemon, or set SOCKNOTIFY_SOCKET).  Per thread; the
 * text stays valid until the thread calls sn_conn_open() again.  "" when that call succeeded or
 * failed only for lack of memory.  Never NULL. */
SN_EXPORT const char *sn_conn_open_error(void);

/* Closes the connection: the daemon closes every port of it (rule 9).  Accepts NULL; returns
 * NULL.  No call on the connection or its ports may be running or start afterwards. */
SN_EXPORT sn_conn_t *sn_conn_close(sn_conn_t *conn);

/* Copies the daemon's limits for this connection. */
SN_EXPORT int sn_conn_limits(sn_conn_t *conn, sn_limits_t *ret_limits);

/* Sends an operator's request (JSON text, as PROTOCOL.md's CONTROL describes) and returns the
 * answer (JSON, malloc'ed, the caller frees it).  On a refusal (-EPERM, -EINVAL, ...) the
 * answer, when the daemon gave one, is returned too and says why.  socknotifyctl(1) is built
 * on it. */
SN_EXPORT int sn_conn_control(sn_conn_t *conn, const char *request, char **ret_json);

/* Fetches the daemon's status document (JSON).  *ret_json is malloc'ed, NUL-terminated, and
 * the caller frees it. */
SN_EXPORT int sn_conn_status(sn_conn_t *conn, char **ret_json);

/* Creates a completion port.  concurrency is NumberOfConcurrentThreads (0: the number of
 * processors).  Errors: -EDQUOT (too many ports on this connection), -EBADFD, -ECONNRESET. */
SN_EXPORT int sn_port_create(sn_conn_t *conn, uint32_t concurrency, sn_port_t **ret_port);

/* Creates a named port that other processes of the same user may open with sn_port_open();
 * the port lives while any process holds it open.  name: 1..255 bytes.  Errors as
 * sn_port_create(), and -EEXIST when the name is taken, -EINVAL for a bad name. */
SN_EXPORT int sn_port_create_named(sn_conn_t *conn, const char *name, uint32_t concurrency,
                                   sn_port_t **ret_port);

/* Opens a named port of this user (names are per user, by SO_PEERCRED).  Entries are
 * distributed over the waiters of every process as over threads.  Errors: -ENOENT (this user
 * has no port of that name; another user's port is not visible, so the answer is the same),
 * -EEXIST (this connection has it open already), -EDQUOT. */
SN_EXPORT int sn_port_open(sn_conn_t *conn, const char *name, sn_port_t **ret_port);

/* Closes a port (rule 9): its registrations are dropped without REMOVE notifications, the
 * daemon's copies of their sockets are closed, queued entries are discarded, and every thread
 * waiting on it returns -ECANCELED.  Consumes the caller's reference: port must not be used
 * afterwards.  Accepts NULL.  For a named port this closes this connection's hold on it: the
 * port closes when the last process holding it closes it (waiters of this connection return
 * -ECANCELED at once). */
SN_EXPORT int sn_port_close(sn_port_t *port);

/*
 * The native ProcessSocketNotifications: applies nregs registrations in array order (each
 * result written back), then dequeues up to max_entries entries into entries, waiting up to
 * timeout_ms (0 polls; SN_INFINITE waits without limit).
 * Returns the number of entries dequeued (0 when max_entries is 0), -ETIMEDOUT when
 * max_entries > 0 and nothing arrived in time (registrations did take effect), or a call-level
 * error after which no registration took effect: -EINVAL (timeout without max_entries, NULL
 * arrays with nonzero counts), -EBADF (port closed), -ECANCELED (port closed while waiting),
 * -ESHUTDOWN (daemon stopping), -ECONNRESET (daemon gone), -EBADFD (used after fork).
 */
SN_EXPORT int sn_port_process(sn_port_t *port, sn_registration_t *regs, uint32_t nregs,
                              sn_entry_t *entries, uint32_t max_entries, uint32_t timeout_ms);

/* sn_port_process() without registrations. */
SN_EXPORT int sn_port_dequeue(sn_port_t *port, sn_entry_t *entries, uint32_t max_entries,
                              uint32_t timeout_ms);

/* ---- Registration handles: re-arming without a system call ------------------------------
 *
 * Every registration has a handle, issued by the daemon and delivered with each of its
 * entries.  An operation that names a registration by its handle needs no fstat() of the
 * descriptor in this process, which for a server re-arming one-shot registrations is most of
 * a re-arm's cost.  sn_registration_t and sn_entry_t are frozen (see below), so handles come
 * with their own types and function; the rules of sn_port_process() apply unchanged.
 */

/* sn_entry_t with the handle of the registration that made it.  handle is 0 for a posted
 * packet, a REMOVE notification (its registration is gone), and where the daemon gives no
 * handles (protocol versions 1 and 2, for example SOCKNOTIFY_NO_SHM with an older daemon). */
typedef struct sn_entry_ex {
        sn_entry_t entry;
        uint64_t handle;
} sn_entry_ex_t;

/* sn_registration_t naming its registration by handle.  handle 0: reg alone says what to do,
 * exactly as in sn_port_process().  Otherwise the operation (reg.op, with reg.filter and
 * reg.trigger for an ENABLE, whose key stays the registration's, rule 4) applies to the
 * registration the handle names, on this port, found by the daemon without the descriptor.
 * reg.fd should still be the socket's descriptor: the library uses it, without a system
 * call, to keep its record for a resume, and falls back on it when the handle is stale.  With
 * -1 the item still works, but the library cannot tell which of its records it changes: after
 * a resume on a daemon that lost the state (docs/reconnect.md) that registration comes back as
 * last recorded (a one-shot re-armed this way stays disarmed, for one).  A handle is stale once its registration ended (REMOVE dequeued, sn_socket_close(),
 * port closed): an ENABLE then goes by reg.fd as in sn_port_process(), a DISABLE or REMOVE
 * reports -ENOENT.  After a resume on a daemon that lost this one's state (docs/reconnect.md)
 * the old handles are not sent: every operation goes by reg.fd.  Without reg.fd a stale
 * handle gives -ESTALE (ENABLE) or -ENOENT.  A handle never reaches another registration: the
 * daemon checks a generation, and handles survive its re-exec and restarts with its state. */
typedef struct sn_registration_ex {
        sn_registration_t reg;
        uint64_t handle;
} sn_registration_ex_t;

/*
 * sn_port_process() with handles: applies regs[0..nregs) (each reg.result written back), then
 * dequeues up to max_entries entries with their handles.  Same returns and errors as
 * sn_port_process().  A one-shot server re-arms what it handled with its next dequeue:
 *     regs[i] = (sn_registration_ex_t){ .reg = { .fd = fd, .op = SN_OP_ENABLE,
 *                                                .filter = f, .trigger = t },
 *                                       .handle = entries[i].handle };
 */
SN_EXPORT int sn_port_process_ex(sn_port_t *port, sn_registration_ex_t *regs, uint32_t nregs,
                                 sn_entry_ex_t *entries, uint32_t max_entries,
                                 uint32_t timeout_ms);

/* Queues a packet (PostQueuedCompletionStatus); key, bytes and overlapped are delivered
 * unchanged and never interpreted.  Errors: -EDQUOT when the port holds its maximum number of
 * posted packets (L4), -EBADF. */
SN_EXPORT int sn_port_post(sn_port_t *port, uint64_t key, uint32_t bytes, uint64_t overlapped);

/*
 * Handoff: ports, sockets and registrations that outlive the process that made them.
 *
 * A named port may linger: when its last handle closes (sn_port_close(), sn_conn_close(), or
 * the process ends, even by SIGKILL), the port is kept linger_ms milliseconds with its
 * registrations, the daemon's copies of their sockets, its queued entries and posted packets.
 * Its sockets keep being watched and their notifications queue as always (one entry per
 * registration at most).  A process of the same user that opens it by name in that time gets
 * the port back, and sn_port_take_sockets() gives it the sockets.  With linger_ms 0 (the
 * default) the port closes with its last handle, as rule 9 says.
 *
 * On a lingering port, the registrations of a connection that ends are not dropped (rule L3):
 * they are kept by the port, without an owner, until a process takes them or the port closes.
 */

/* Options of sn_port_create_named_ex(). */
typedef struct sn_port_options {
        uint32_t concurrency; /* NumberOfConcurrentThreads; 0: the number of processors */
        uint32_t linger_ms;   /* kept this long after its last handle closes; 0: not at all */
} sn_port_options_t;

/* sn_port_create_named() with options (opt NULL: all 0).  Errors as sn_port_create_named(),
 * and -EDQUOT when linger_ms exceeds the daemon's --max-linger (nothing is created then). */
SN_EXPORT int sn_port_create_named_ex(sn_conn_t *conn, const char *name,
                                      const sn_port_options_t *opt, sn_port_t **ret_port);

/* Sets the linger time of a named port (any process holding it may); it applies from the next
 * time the port loses its last handle.  Errors: -EINVAL (a port without a name), -EDQUOT (over
 * the daemon's --max-linger), -EBADF (port closed), -ECONNRESET. */
SN_EXPORT int sn_port_set_linger(sn_port_t *port, uint32_t linger_ms);

/* One socket taken over from a port (sn_port_take_sockets). */
typedef struct sn_taken_socket {
        int fd;             /* the socket, a new descriptor of the caller; -1: not received */
        int previous_fd;    /* the descriptor number it had in the process that registered it */
        uint64_t key;       /* its completion key, unchanged */
        uint16_t filter;    /* SN_REGISTER_EVENT_* bits of its registration */
        uint8_t trigger;    /* SN_TRIGGER_* bits */
        uint8_t enabled;    /* 1: enabled, 0: disabled */
        uint8_t armed;      /* 1: it reports without a new ENABLE; 0: disabled, or a ONESHOT
                             * whose entry was dequeued (by the previous owner): ENABLE it */
} sn_taken_socket_t;

/* What is left on the port after sn_port_take_sockets(). */
typedef struct sn_take_info {
        uint32_t remaining; /* registrations without an owner still on the port */
        uint32_t holders;   /* other connections that hold the port open */
} sn_take_info_t;

/*
 * Takes over up to max registrations of port that have no owner (their creator's connection
 * ended while the port lingered or was held by others): each socket is sent to the caller as a
 * new descriptor (close-on-exec), and the registration becomes the caller's own, as if made by
 * it: it ends with the caller's connection (or is kept again if the port lingers), and
 * sn_socket_close() of the new descriptor drops it (rule L1).  Key, filter, triggers, state and
 * an entry already queued for it stay as they were.  A ONESHOT registration whose entry the
 * previous owner dequeued is disarmed (armed 0): ENABLE it again to hear of it.  Descriptors travel in
 * batches of at most sn_limits_t.max_fds; the call loops until max are taken or none is left.
 * Returns how many were taken (0: none without an owner), and info (may be NULL) says what is
 * left.  An entry whose fd is -1 is the caller's registration but its socket did not arrive
 * (the caller ran out of descriptors, EMFILE): the call stops after that batch; such a
 * registration ends with the port or the connection.  Errors: -EBADF (port closed),
 * -EOPNOTSUPP (a daemon older than protocol version 2), -EAGAIN (the daemon could not send for
 * a second), -ECONNRESET.
 */
SN_EXPORT int sn_port_take_sockets(sn_port_t *port, sn_taken_socket_t *out, uint32_t max,
                                   sn_take_info_t *info);

/*
 * Socket activation handoff.  sn_listen_fds_park() hands the sockets the service manager
 * passed (LISTEN_FDS for this process, LISTEN_PID) to the daemon in one call: it creates the
 * named port with linger_ms, registers each socket with key its index (0 for the first,
 * SD_LISTEN_FDS_START) on it, ONESHOT and LEVEL with SN_REGISTER_EVENT_IN, and returns the port
 * open (*ret_port; NULL to close it at once, leaving it to linger).  The descriptors stay open
 * in the caller.  All or nothing: when one socket is refused, the port is closed again.
 * Returns how many sockets were parked, or -ENOENT (no LISTEN_FDS for this process), -EINVAL
 * (LISTEN_FDS malformed, or linger_ms 0 with ret_port NULL: nothing would be kept), -EBADF or
 * -ENOTSOCK (a passed descriptor is closed or not a socket), -EEXIST (the name is taken), and
 * the errors of the calls above.
 * sn_listen_fds_take() is the later instance's half: it opens the named port, takes every
 * socket parked on it, and stores their descriptors in fds (at most max, in key order; sockets
 * beyond max stay parked).  Returns how many (0: none without an owner), or -ENOENT (no such
 * port), -EMFILE (out of descriptors: none is kept, nothing parked is lost).
 * A parked socket is registered on the port: registering it on another port fails with
 * -EEXIST while it is parked.  socknotify-handoff(1) does the same for a program, parking each
 * socket in a capsule (a Unix socket holding it in flight) so that the program may register it.
 */
SN_EXPORT int sn_listen_fds_park(sn_conn_t *conn, const char *name, uint32_t linger_ms,
                                 sn_port_t **ret_port);
SN_EXPORT int sn_listen_fds_take(sn_conn_t *conn, const char *name, int *fds, uint32_t max,
                                 sn_port_t **ret_port);

/*
 * Closes a socket that may be registered (rule L1, closesocket): when fd is the descriptor the
 * registration was made with, the daemon drops the registration without a REMOVE notification
 * and closes its copy; then fd itself is closed.  Notifications already dequeued stay valid;
 * ones not yet dequeued are discarded.  fd is consumed on every outcome.  Returns 0, or -EBADF
 * when fd is not open.
 */
SN_EXPORT int sn_socket_close(sn_conn_t *conn, int fd);

/* ---- Event loops: submitted calls and a pollable descriptor ------------------------------
 *
 * sn_port_submit() sends a PROCESS call and returns at once; its answer is collected later with
 * sn_conn_collect(), typically when the descriptor of sn_conn_fd() polls readable.  Nothing here
 * blocks, so a port can be driven from libevent, libuv, GLib, asyncio or any poll() loop.  A
 * submitted call that dequeues names its waiter: the identity the port's concurrency limit
 * counts (sn_port_process() uses the calling thread).  Green threads, coroutines and event-loop
 * tasks choose their own identities, at or above SN_WAITER_MIN, and report their end with
 * sn_conn_waiter_exit().
 */

/* A submitted call.  Opaque; belongs to its connection. */
typedef struct sn_call sn_call_t;

/* Lowest caller-chosen waiter identity: the values below it are thread ids (pid_max is at
 * most 2^22), which sn_port_process() uses. */
#define SN_WAITER_MIN 0x00400000u

/*
 * Returns a descriptor that polls readable (POLLIN, level-triggered) while a submitted call of
 * this connection can be collected or a reply waits to be read; call sn_conn_collect() then.
 * The connection owns it: do not read or close it.  It stays the same for the connection's
 * life.  Errors: -EBADFD (after fork), -ECONNRESET, -EMFILE/-ENFILE/-ENOMEM.
 */
SN_EXPORT int sn_conn_fd(sn_conn_t *conn);

/*
 * Submits a process call without waiting: applies nregs registrations (copied; the call's own
 * copies receive the results), then dequeues up to max_entries entries, waiting up to
 * timeout_ms on the daemon's side.  waiter: 0 for the calling thread, or a caller-chosen
 * identity >= SN_WAITER_MIN.  user is returned by sn_call_user().  On success *ret_call is the
 * call, to be collected with sn_conn_collect() and freed with sn_call_free().  An ENABLE
 * passes its descriptor when the daemon may not know the socket yet; a re-enable names it by
 * identity, and reports -ESTALE when the daemon no longer knows it (removed meanwhile through
 * another connection): submitting it again passes the descriptor.  With max_entries 0 this is
 * the re-enable without waiting: its results arrive with a later sn_conn_collect().  Errors
 * (nothing was sent): -EINVAL (timeout without max_entries, bad
 * waiter, NULL arrays with nonzero counts), -E2BIG (more than (max_message - 52) / 4
 * registrations: one daemon call; sn_port_process() splits such arrays, this call does not),
 * -ENOMEM, -EBADFD, -ECONNRESET.
 */
SN_EXPORT int sn_port_submit(sn_port_t *port, const sn_registration_t *regs, uint32_t nregs,
                             uint32_t max_entries, uint32_t timeout_ms, uint32_t waiter,
                             void *user, sn_call_t **ret_call);

/*
 * Reads the replies that have arrived, without blocking, and hands out one completed call:
 * returns 1 with *ret_call set, 0 when no call is complete, or a negative errno (-EBADFD after
 * fork; -ECONNRESET once the connection is lost and every call has been collected: calls
 * pending then complete with -ECONNRESET).  Call it until it returns 0 each time the
 * descriptor of sn_conn_fd() is readable.
 */
SN_EXPORT int sn_conn_collect(sn_conn_t *conn, sn_call_t **ret_call);

/*
 * The outcome of a collected call, as sn_port_process() would have returned it: the number of
 * entries, 0 (no entries asked for), -ETIMEDOUT, or a call-level error.  *ret_entries (when not
 * NULL) points at the entries and *ret_regs at the call's registrations with their results;
 * both live until sn_call_free().  -EINVAL for a call not yet collected.
 */
SN_EXPORT int sn_call_result(const sn_call_t *call, const sn_entry_t **ret_entries,
                             const sn_registration_t **ret_regs);

/*
 * sn_port_submit() with registration handles (see sn_port_process_ex()): each item may name
 * its registration by handle, without an fstat(); a stale handle is reported (-ESTALE for an
 * ENABLE, -ENOENT otherwise) instead of being retried by descriptor, so submit such an item
 * again with handle 0.  The call's registrations and entries come from sn_call_result() as
 * usual, the entries' handles from sn_call_handles().
 */
SN_EXPORT int sn_port_submit_ex(sn_port_t *port, const sn_registration_ex_t *regs,
                                uint32_t nregs, uint32_t max_entries, uint32_t timeout_ms,
                                uint32_t waiter, void *user, sn_call_t **ret_call);

/* The handles of a collected call's entries, in sn_call_result()'s order: returns their
 * number (*ret_handles valid until sn_call_free()), 0 for a call of sn_port_submit() or one
 * that dequeued nothing, -EINVAL for a call not yet collected. */
SN_EXPORT int sn_call_handles(const sn_call_t *call, const uint64_t **ret_handles);

/* The user pointer given to sn_port_submit(). */
SN_EXPORT void *sn_call_user(const sn_call_t *call);

/* Frees a call.  A call that has not completed yet is freed when its reply comes (the daemon
 * cannot be asked to forget a wait: post a packet or close the port to end it early).  Accepts
 * NULL; returns NULL.  sn_conn_close() frees every call of the connection not freed yet,
 * collected or not, completed or not: none may be passed here afterwards. */
SN_EXPORT sn_call_t *sn_call_free(sn_call_t *call);

/* Tells the daemon that caller-chosen waiter identity waiter (>= SN_WAITER_MIN) has ended: it
 * no longer counts as running on any port of this connection.  Never blocks.  Errors: -EINVAL,
 * -EBADFD, -ECONNRESET. */
SN_EXPORT int sn_conn_waiter_exit(sn_conn_t *conn, uint32_t waiter);

/* What a limit counts (sn_refusal_t.scope). */
#define SN_LIMIT_SCOPE_CONNECTION 1u   /* one connection */
#define SN_LIMIT_SCOPE_PORT 2u         /* one port */
#define SN_LIMIT_SCOPE_USER 3u         /* one user, all its connections */
#define SN_LIMIT_SCOPE_UNPRIVILEGED 4u /* all users but root and the daemon's own, together */
#define SN_LIMIT_SCOPE_DAEMON 5u       /* the whole daemon */
#define SN_LIMIT_SCOPE_REQUEST 6u      /* the value one request may ask for */
/* sn_refusal_t.item of a refusal of the call as a whole. */
#define SN_REFUSAL_CALL UINT32_MAX

/* Which of the daemon's limits refused a call (sn_conn_refusal()). */
typedef struct sn_refusal {
        char limit[32];  /* its name, the socknotifyd(8) option and configuration key
                          * ("max-waits-per-user"); "limit N" for one this library does not know */
        char text[160];  /* a sentence: "max-waits-per-user (4096) reached, for this user ..." */
        uint64_t value;  /* its value in force when it refused */
        uint32_t scope;  /* SN_LIMIT_SCOPE_*, 0 when the daemon did not say */
        uint32_t item;   /* the item asked for, or SN_REFUSAL_CALL */
} sn_refusal_t;

/* After a call of this thread on conn failed with -EDQUOT: which limit refused it, asked of the
 * daemon (one LIMIT_INFO request).  item SN_REFUSAL_CALL asks about the call itself; an index
 * into the regs of the thread's last sn_port_process() or sn_port_process_ex() on conn asks
 * about that registration, whose result was -EDQUOT.  The daemon keeps the newest 8 refusals
 * of each connection, and none across a restart.  A thread that made no such call on conn
 * gets the connection's newest refusal.  Errors: -ENOENT (nothing known of that call or item),
 * -EOPNOTSUPP (a daemon older than this request), -EINVAL, and those of any request. */
SN_EXPORT int sn_conn_refusal(sn_conn_t *conn, uint32_t item, sn_refusal_t *ret);

/* sn_conn_refusal()'s text for the calling thread's last call on conn that failed with -EDQUOT
 * (a call whose items alone were refused: its first such item's), or NULL when it cannot be
 * told.  Per thread; valid until the thread's next call of it. */
SN_EXPORT const char *sn_conn_error_detail(sn_conn_t *conn);

/* Describes an error returned by this library (negative errno).  Never NULL. */
SN_EXPORT const char *sn_strerror(int err);

/* The version of the library in use, as SN_VERSION_HEX: (major << 16) | (minor << 8) | patch. */
SN_EXPORT unsigned sn_version(void);

/* The version of the library in use as text, "major.minor.patch".  Static; never NULL. */
SN_EXPORT const char *sn_version_string(void);

#ifdef __cplusplus
}
#endif

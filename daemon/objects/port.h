/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * port.h - completion ports, the handles sessions hold on them, parked calls (waits) and
 * running threads (runners) (port.c).
 *
 * Ownership: a port lives while any handle to it exists, so a named port shared by several
 * processes outlives any one of them.  A wait belongs to its session and is linked on its
 * port; it is freed by whichever of answer, timeout, port close or session close comes
 * first, and unlinked from the other.  A runner records that a client thread took entries from
 * a port and has not come back to wait: it counts against the port's concurrency.
 *
 * Readiness comes from the kernel: each port has its own epoll instance holding its sockets,
 * watched by the libevent loop edge-triggered.  Entries are harvested from that epoll only when
 * a caller dequeues, and only as many as it can take, so nothing on any path scans the
 * registrations of a port.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/list.h"
#include "daemon/base/htable.h"
#include "daemon/objects/session.h"

struct reg;
struct server;
struct session;
struct user;

struct wait {
        struct sn_list port_link; /* in port->waiters, most recent first; empty once detached */
        struct sn_list conn_link; /* in session->waits */
        struct session *session;
        struct port *port;
        uint32_t id;
        uint32_t thread;
        uint32_t max_entries;
        struct event timer;
        bool timer_armed;
        bool detached;            /* its session died: off the port, no timer, never answered */
        bool ahead;               /* posted ahead by a running thread (SN_PROTO_PROCESS_AHEAD) */
        uint32_t timeout_ms;      /* as asked; SN_PROTO_INFINITE: none */
        struct timespec deadline; /* CLOCK_MONOTONIC, when timeout_ms is finite */
        size_t charge;            /* bytes counted against the user's output budget */
        uint32_t jr;              /* journal record (persist.c), 0 for none */
        uint32_t nresults;
        uint32_t results[]; /* per-registration results of the call, sent with the answer */
};

/* A session's hold on a port. */
struct handle {
        struct sn_list conn_link; /* in session->handles */
        struct sn_list port_link; /* in port->handles */
        struct session *session;
        struct port *port;
        uint32_t jr;              /* journal record (persist.c), 0 for none */
        struct htable_node node;  /* in server->handles, by (session, port) */
};

/* A client thread that took entries from a port and has not come back to wait.  While the
 * port is stalled (port_check_runners()) its scheduler state is read: a thread read as waiting
 * elsewhere (blocked) does not count against the concurrency until it is read as running. */
struct runner {
        struct sn_list port_link; /* in port->runners */
        struct sn_list conn_link; /* in session->runners */
        struct session *session;
        struct port *port;
        uint32_t thread;
        uint32_t jr;              /* journal record (persist.c), 0 for none */
        bool blocked;             /* last read as waiting; counted in port->nblocked */
        struct sn_list blocked_link; /* in port->blocked while blocked */
        uint64_t read_ns;         /* CLOCK_MONOTONIC of its last reading (blocked ones) */
        pid_t task;               /* its id in the daemon's PID namespace; 0: not looked up
                                   * yet; negative: none (it always counts, never read) */
        struct session_mark answer; /* session_answer_mark() when it was given its entries */
        bool answered;            /* the client has read them (session_answer_read()) */
        bool received;            /* ... on the socket: since received_at, and its thread? */
        struct timespec received_at;
};

struct port {
        struct server *srv;
        struct sn_list srv_link;  /* in server->ports */
        struct sn_list handles;   /* struct handle */
        uint32_t nhandles;
        char *name;               /* NULL: private to its creator */
        uid_t uid;                /* who may open it by name: names are per user */
        struct user *user;        /* charged for the port and its posted packets */
        uint32_t id;
        struct htable_node id_node;   /* in server->port_ids */
        struct htable_node name_node; /* in server->port_names when named, by (uid, name) */
        uint32_t concurrency;
        struct sn_list runners;   /* struct runner */
        uint32_t nrunning;        /* runners, blocked ones included */
        uint32_t nblocked;        /* runners last read as waiting elsewhere (not counted) */
        struct sn_list blocked;   /* those runners (their blocked_link), oldest reading first */
        /* Stalled (port_check_runners()): waiters, entries and no free slot.  The runners are
         * read again on this timer, every stall_ms, until it ends. */
        struct event stall_timer;
        bool stall_armed;
        uint32_t stall_ms;
        struct timespec checked;  /* CLOCK_MONOTONIC of the last read of the runners */
        int epfd;
        struct event ev;
        bool ev_added;
        struct sn_list queue;   /* struct packet, FIFO */
        uint32_t nqueued;
        uint32_t nposted;
        struct sn_list waiters; /* struct wait, LIFO */
        uint32_t nwaiters;
        struct sn_list regs;    /* struct reg */
        uint32_t nregs;
        uint64_t epoch;
        struct sn_list skips;   /* struct reg whose first EDGE report must be trimmed */
        uint32_t jr;            /* journal record (persist.c), 0 for none */
        uint32_t jr_name[3];    /* and those of a long name's rest */
        /* Handoff: a named port with linger_ms > 0 is kept that long once nhandles drops to
         * 0 (lingering, linger_timer armed, linger_deadline CLOCK_MONOTONIC).  Registrations
         * whose creator ended are kept on orphans (their conn_link) until taken (PORT_TAKE). */
        uint32_t linger_ms;
        bool lingering;
        struct event linger_timer;
        struct timespec linger_deadline;
        struct sn_list orphans; /* struct reg without a creator */
        uint32_t norphans;
};

/* Creates a port and session's handle to it; name NULL or empty for a private port.  Returns 0,
 * -EDQUOT (session holds max_ports handles), -EEXIST (name taken), -ENOMEM. */
int port_new(struct session *session, uint32_t concurrency, const char *name,
             struct port **ret_port);
/* Opens a named port for session.  Returns 0, -ENOENT, -EACCES (another user's), -EDQUOT. */
int port_open(struct session *session, const char *name, struct port **ret_port);
/* Gives session a handle to p.  Returns 0, -EDQUOT (max_ports) or -ENOMEM. */
int port_handle_add(struct session *session, struct port *p);
/* Re-exec: a port restored with its kernel epoll instance epfd (taken), charged to user uid. */
struct port *port_adopt(struct server *srv, uint32_t id, const char *name, uid_t uid,
                        uint32_t concurrency, int epfd, uint64_t epoch);
/* Re-exec: a posted packet appended to the queue.  Returns 0 or -ENOMEM. */
int port_adopt_posted(struct port *port, uint64_t key, uint64_t overlapped, uint32_t bytes,
                      uint64_t epoch);
/* Drops a session's handle; the last handle closes the port (rule 9).  The session's waits on
 * the port are answered with status; other sessions' waits only when the port closes. */
void port_close_handle(struct handle *h, uint32_t status);
/* Closes the port at once (rule 9): every wait answered with status. */
void port_free(struct port *port, uint32_t status);
/* Sets a named port's linger time.  Returns 0, -EINVAL (no name) or -EDQUOT (over max-linger,
 * logged for session). */
int port_set_linger(struct port *port, struct session *session, uint32_t linger_ms);
/* Re-exec and restore: a port restored with no handle lingers for ms more (at least 1). */
void port_linger_resume(struct port *port, uint32_t ms);
/* Milliseconds a lingering port has left (0 when it does not linger). */
uint32_t port_linger_left(const struct port *port);
/* Takes up to max ownerless registrations of port for session (encoded as registration items
 * into items, their sockets into fds); they are the session's once the caller has sent them: call
 * port_take_commit() then, with the same count.  Returns how many. */
uint32_t port_take_prepare(struct port *port, uint8_t *items, int *fds, uint32_t max);
void port_take_commit(struct port *port, struct session *session, uint32_t n);
/* The port id as session may use it, or NULL. */
struct port *port_find(struct session *session, uint32_t id);
struct handle *port_handle_of(struct session *session, uint32_t id);
/* Thread (session, thread) is back to wait, has exited, or its session went: it no longer
 * runs on any port.  Ports whose concurrency thereby frees up are dispatched. */
void runner_release(struct session *session, uint32_t thread, struct port *no_dispatch);
void runner_free(struct runner *r);
/* Queues a packet of registration reg (OR-ing into one already queued). */
void port_queue_reg(struct port *port, struct reg *reg, uint32_t events);
/* Posts n packets for session; all or none.  Returns 0 or -EDQUOT (a limit on the port, on the
 * port's user or on the unprivileged users' pool) or -ENOMEM. */
int port_post(struct port *port, struct session *session, const uint8_t *items, uint32_t n);
/* Harvests readiness for up to want new packets. */
void port_harvest(struct port *port, uint32_t want);
/* Consumes the initial reports of EDGE registrations enabled while ready (rule 15). */
void port_harvest_skips(struct port *port);
/* Moves up to max entries out of the queue into out (wire-encoded entries). */
uint32_t port_take(struct port *port, uint8_t *out, uint32_t max);
/* Hands queued entries to parked waiters, most recent first. */
void port_dispatch(struct port *port);
/* Whether session may park one more call with n results: 0, or -EDQUOT (logged) when a limit on
 * the session's waits or its user's (or the unprivileged pool's) waits or output budget
 * would be exceeded. */
int port_wait_check(struct session *session, uint32_t n);
/* Parks a PROCESS request; ahead: a dequeue posted ahead by a running thread (no timeout; it
 * keeps its thread's running place, and gets entries only when no thread that waits may take
 * them).  results (n) are copied.  Returns 0, -EDQUOT (max-waits, or the user's waits or
 * output budget) or -ENOMEM. */
int port_wait(struct port *port, struct session *session, uint32_t id, uint32_t thread,
              uint32_t max_entries, uint32_t timeout_ms, bool ahead, const uint32_t *results,
              uint32_t n);
/* The dequeue thread posted ahead on port, or NULL. */
struct wait *port_wait_ahead(struct port *port, struct session *session, uint32_t thread);
/* Whether a caller may take entries now: fewer than concurrency threads running, not counting
 * those last read as blocked. */
bool port_may_run(const struct port *port);
/*
 * At the limit (nrunning >= concurrency) with entries to hand out, reads the scheduler state of
 * the port's runners (at most what the port's user's budget of reads holds, at most one pass
 * per millisecond) and updates which of them are blocked.  Returns whether a caller may take entries now.  Never
 * reads anything while a slot is free.
 */
bool port_check_runners(struct port *port);
/* Entries were handed to (session, thread): it now runs on port.  A session has at most
 * max_waits threads recorded as running; beyond that they are not counted. */
void port_mark_running(struct port *port, struct session *session, uint32_t thread);
/* The same for a runner restored after a restart, whose answer was sent before it. */
void port_mark_restored(struct port *port, struct session *session, uint32_t thread);
/* Answers a wait with status and no entries, and frees it. */
void wait_cancel(struct wait *w, uint32_t status);
/* Frees a wait without answering it (detached or not). */
void wait_free(struct wait *w);
/* Takes a wait off its port and stops its timer; it stays on its session.  Idempotent. */
void wait_detach(struct wait *w);

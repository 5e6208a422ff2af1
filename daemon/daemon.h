/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * daemon.h - the objects of socknotifyd and how they own each other.
 *
 * Ownership: server -> port -> registration -> its queued packet, and port -> posted packets.
 * A connection holds handles to ports (struct handle); a port lives while any handle to it
 * exists, so a named port shared by several processes outlives any one of them.  Registrations
 * also remember the connection that made them: when it goes, they go (rule L3), on any port.
 * A wait (a PROCESS request parked until entries arrive) belongs to its connection and is linked
 * on its port; it is freed by whichever of answer, timeout, port close or connection close comes
 * first, and unlinked from the other.  A runner records that a client thread took entries from
 * a port and has not come back to wait: it counts against the port's concurrency.
 *
 * Readiness comes from the kernel: each port has its own epoll instance holding its sockets,
 * watched by the libevent loop edge-triggered.  Entries are harvested from that epoll only when
 * a caller dequeues, and only as many as it can take, so nothing on any path scans the
 * registrations of a port.
 *
 * Error convention: 0 success, negative errno failure passed up unchanged; positive values only
 * where a comment documents them for the direct caller.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/list.h"
#include "common/log.h"
#include "daemon/journal.h"
#include "daemon/restore.h"
#include "daemon/settings.h"
#include "proto/codec.h"

struct server;
struct ucred;
struct conn;
struct port;
struct reg;

#define SN_ERRNO_MAX 160
struct counters {
        uint64_t connections_total;
        uint64_t messages_in;
        uint64_t messages_out;
        uint64_t registrations_applied;
        uint64_t notifications;
        uint64_t posted_delivered;
        uint64_t protocol_violations;
        uint64_t reexecs;           /* re-executions in place since the first start */
        uint64_t call_errors[SN_ERRNO_MAX];  /* call-level failures by errno */
        uint64_t entry_errors[SN_ERRNO_MAX]; /* per-entry failures by errno */
};

/* ---- registry: kernel socket identity -> registration (registry.c) --------------------- */

struct registry {
        struct reg **buckets;
        size_t nbuckets; /* power of two */
        size_t count;
};

int registry_init(struct registry *r);
void registry_deinit(struct registry *r);
struct reg *registry_find(const struct registry *r, uint64_t dev, uint64_t ino);
/* Inserts reg (not yet present).  Returns 0 or -ENOMEM (then reg is not inserted). */
int registry_insert(struct registry *r, struct reg *reg);
void registry_remove(struct registry *r, struct reg *reg);

/* ---- packets, registrations (registration.c) ------------------------------------------ */

struct packet {
        struct sn_list link; /* in port->queue */
        uint64_t key;
        uint64_t overlapped;
        uint32_t events;
        uint32_t kind;  /* SN_PROTO_KIND_* */
        uint64_t epoch; /* port->epoch when harvested */
        uint64_t seq;   /* its place among every port's packets (live_packet_seq()) */
};

/* A posted packet, allocated on its own (a registration's packet is part of it). */
struct posted {
        struct packet pkt; /* first: a posted packet is freed through its pkt */
        uint32_t jr;       /* its journal record (live.c), 0 for none */
};

static inline struct posted *posted_of(struct packet *pkt)
{
        return (struct posted *)pkt; /* kind SN_PROTO_KIND_POSTED only */
}

enum reg_state {
        REG_ENABLED,
        REG_DISABLED,
        REG_REMOVING, /* REMOVE applied; freed when its packet is dequeued */
};

struct reg {
        struct reg *hnext;         /* registry chain */
        struct sn_list port_link;  /* in port->regs */
        struct sn_list skip_link;  /* in port->skips while edge_skip is set */
        struct sn_list conn_link;  /* in creator->regs */
        struct conn *creator;
        struct port *port;
        uint32_t slot;             /* index in server->slots: the epoll item's data */
        uint32_t jr;               /* journal record (live.c), 0 for none */
        uint64_t dev, ino;
        uint64_t key;
        int fd;                    /* the daemon's copy of the socket */
        uint32_t client_fd;        /* the client's descriptor number that created it */
        uint16_t filter;           /* SN_REGISTER_EVENT_* */
        uint8_t trigger;           /* normalized: ONESHOT or PERSISTENT, and LEVEL or EDGE */
        uint8_t state;             /* enum reg_state */
        uint8_t edge_skip;         /* EDGE: events that held at ENABLE, not to be reported */
        bool stream;               /* SOCK_STREAM or SOCK_SEQPACKET: HANGUP applies */
        bool fresh;                /* never-connected stream socket (rule 14) */
        bool in_epoll;
        bool parked;               /* hung up and nothing reportable: out of epoll */
        bool queued;               /* pkt is on port->queue */
        bool ownerless;            /* on port->orphans: its creator ended, the port keeps it */
        bool fired;                /* ONESHOT: its entry was dequeued since the last ENABLE */
        /* EDGE transitions (registration.c): the OUT side's own epoll item on a duplicate. */
        int out_fd;                /* EDGE with OUT and IN or HANGUP: duplicate of fd, or -1 */
        bool out_in_epoll;
        bool out_seen;             /* EDGE: OUT held at the OUT side's last look */
        uint8_t out_state;         /* EDGE: hang-up/error bits at that look (EDGE_ST_*) */
        bool hup_seen;             /* EDGE: HANGUP reported or held at ENABLE */
        struct box_ref box;        /* its socket in the live store's boxes */
        struct packet pkt;
};

/*
 * Applies one registration item of conn to port (rule order and codes of the spec, section 3).
 * fd is the descriptor received with the item or -1; it is consumed (kept by a new
 * registration or closed).  Returns 0 or a positive errno value for the entry's result.
 */
uint32_t reg_apply(struct port *port, struct conn *conn, const struct snw_registration *item,
                   int fd);
/* Re-exec: a registration restored from its saved fields (tmpl: fd, identity, key, client_fd,
 * filter, trigger, state, edge_skip, stream, fresh, in_epoll, parked, and the EDGE OUT side:
 * out_fd, out_in_epoll, out_seen, out_state, hup_seen) in slot; its kernel epoll items live on
 * in the port's kept epoll instance.  Takes tmpl->fd and tmpl->out_fd.  Returns NULL on failure
 * (fds closed). */
struct reg *reg_adopt(struct port *port, struct conn *creator, const struct reg *tmpl,
                      uint32_t slot);
/* Re-arms an enabled registration in epoll (after a ONESHOT packet was dropped unsent). */
void reg_rearm(struct reg *reg);
/* A restored one-shot that had fired: out of epoll until its next ENABLE. */
void reg_disarm(struct reg *reg);
/* Forgets the EDGE events recorded at ENABLE. */
void reg_skip_clear(struct reg *reg);
/* Takes a free slot for g (g->slot); returns 0 or -ENOMEM. */
int server_slot_take(struct server *srv, struct reg *g);
/* Puts g in the given slot (re-exec); returns 0, -EEXIST or -ENOMEM. */
int server_slot_put(struct server *srv, struct reg *g, uint32_t slot);
void server_slot_release(struct server *srv, struct reg *g);
/* Frees a registration: out of epoll, registry and port, its packet dequeued, fd closed. */
void reg_free(struct reg *reg);
/* The registration's creator is gone but its port keeps it (a lingering port): it goes on the
 * port's orphans, without a creator, until a PORT_TAKE gives it a new one. */
void reg_orphan(struct reg *reg);
/* Makes an ownerless registration conn's own (PORT_TAKE). */
void reg_adopt_owner(struct reg *reg, struct conn *conn);
/* Translates epoll readiness of one of the registration's epoll items (out_side: the EDGE OUT
 * item) into notification bits; handles rule 14 (fresh sockets), rule 15 (EDGE transitions) and
 * hung-up sockets.  0 means nothing to report. */
uint32_t reg_translate(struct reg *reg, uint32_t epoll_events, bool out_side);
/* The registration (NULL if none) and side an epoll item's data stands for. */
struct reg *reg_of_epoll(const struct server *srv, uint64_t data, bool *ret_out_side);
/* Re-reads readiness of a queued level-triggered packet that has waited past a dequeue; returns
 * the current bits (0: drop the packet). */
uint32_t reg_recheck(struct reg *reg);
/* Drops the registration of socket (dev, ino) if conn made it through its descriptor client_fd
 * (row 62), without a REMOVE packet (rule L1).  Returns 0 or -ENOENT. */
int reg_close_socket(struct conn *conn, uint64_t dev, uint64_t ino, uint32_t client_fd);

/* ---- ports and waits (port.c) ---------------------------------------------------------- */

struct wait {
        struct sn_list port_link; /* in port->waiters, most recent first; empty once detached */
        struct sn_list conn_link; /* in conn->waits */
        struct conn *conn;
        struct port *port;
        uint32_t id;
        uint32_t thread;
        uint32_t max_entries;
        struct event timer;
        bool timer_armed;
        bool detached;            /* its connection died: off the port, no timer, never answered */
        uint32_t timeout_ms;      /* as asked; SN_PROTO_INFINITE: none */
        struct timespec deadline; /* CLOCK_MONOTONIC, when timeout_ms is finite */
        size_t charge;            /* bytes counted against the user's output budget */
        uint32_t jr;              /* journal record (live.c), 0 for none */
        uint32_t nresults;
        uint32_t results[]; /* per-registration results of the call, sent with the answer */
};

/* A connection's hold on a port. */
struct handle {
        struct sn_list conn_link; /* in conn->handles */
        struct sn_list port_link; /* in port->handles */
        struct conn *conn;
        struct port *port;
        uint32_t jr;              /* journal record (live.c), 0 for none */
};

/* A client thread that took entries from a port and has not come back to wait. */
struct runner {
        struct sn_list port_link; /* in port->runners */
        struct sn_list conn_link; /* in conn->runners */
        struct conn *conn;
        struct port *port;
        uint32_t thread;
        uint32_t jr;              /* journal record (live.c), 0 for none */
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
        uint32_t concurrency;
        struct sn_list runners;   /* struct runner */
        uint32_t nrunning;
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
        uint32_t jr;            /* journal record (live.c), 0 for none */
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

/* Creates a port and conn's handle to it; name NULL or empty for a private port.  Returns 0,
 * -EDQUOT (conn holds max_ports handles), -EEXIST (name taken), -ENOMEM. */
int port_new(struct conn *conn, uint32_t concurrency, const char *name, struct port **ret_port);
/* Opens a named port for conn.  Returns 0, -ENOENT, -EACCES (another user's), -EDQUOT. */
int port_open(struct conn *conn, const char *name, struct port **ret_port);
/* Gives conn a handle to p.  Returns 0, -EDQUOT (max_ports) or -ENOMEM. */
int port_handle_add(struct conn *conn, struct port *p);
/* Re-exec: a port restored with its kernel epoll instance epfd (taken), charged to user uid. */
struct port *port_adopt(struct server *srv, uint32_t id, const char *name, uid_t uid,
                        uint32_t concurrency, int epfd, uint64_t epoch);
/* Re-exec: a posted packet appended to the queue.  Returns 0 or -ENOMEM. */
int port_adopt_posted(struct port *port, uint64_t key, uint64_t overlapped, uint32_t bytes,
                      uint64_t epoch);
/* Drops conn's handle; the last handle closes the port (rule 9).  conn's waits on the port are
 * answered with status; other connections' waits only when the port closes. */
void port_close_handle(struct handle *h, uint32_t status);
/* Closes the port at once (rule 9): every wait answered with status. */
void port_free(struct port *port, uint32_t status);
/* Sets a named port's linger time.  Returns 0, -EINVAL (no name) or -EDQUOT (over max-linger,
 * logged for conn). */
int port_set_linger(struct port *port, struct conn *conn, uint32_t linger_ms);
/* Re-exec and restore: a port restored with no handle lingers for ms more (at least 1). */
void port_linger_resume(struct port *port, uint32_t ms);
/* Milliseconds a lingering port has left (0 when it does not linger). */
uint32_t port_linger_left(const struct port *port);
/* Takes up to max ownerless registrations of port for conn (encoded as registration items into
 * items, their sockets into fds); they are conn's once the caller has sent them: call
 * port_take_commit() then, with the same count.  Returns how many. */
uint32_t port_take_prepare(struct port *port, uint8_t *items, int *fds, uint32_t max);
void port_take_commit(struct port *port, struct conn *conn, uint32_t n);
/* The port id as conn may use it, or NULL. */
struct port *port_find(struct conn *conn, uint32_t id);
struct handle *port_handle_of(struct conn *conn, uint32_t id);
/* Thread (conn, thread) is back to wait, has exited, or its connection went: it no longer
 * runs on any port.  Ports whose concurrency thereby frees up are dispatched. */
void runner_release(struct conn *conn, uint32_t thread, struct port *no_dispatch);
void runner_free(struct runner *r);
/* Queues a packet of registration reg (OR-ing into one already queued). */
void port_queue_reg(struct port *port, struct reg *reg, uint32_t events);
/* Posts n packets for conn; all or none.  Returns 0 or -EDQUOT (a limit on the port, on the
 * port's user or on the unprivileged users' pool) or -ENOMEM. */
int port_post(struct port *port, struct conn *conn, const uint8_t *items, uint32_t n);
/* Harvests readiness for up to want new packets. */
void port_harvest(struct port *port, uint32_t want);
/* Consumes the initial reports of EDGE registrations enabled while ready (rule 15). */
void port_harvest_skips(struct port *port);
/* Moves up to max entries out of the queue into out (wire-encoded entries). */
uint32_t port_take(struct port *port, uint8_t *out, uint32_t max);
/* Hands queued entries to parked waiters, most recent first. */
void port_dispatch(struct port *port);
/* Whether conn may park one more call with n results: 0, or -EDQUOT (logged) when a limit on
 * the connection's waits or its user's (or the unprivileged pool's) waits or output budget
 * would be exceeded. */
int port_wait_check(struct conn *conn, uint32_t n);
/* Parks a PROCESS request.  results (n) are copied.  Returns 0, -EDQUOT (max-waits, or the
 * user's waits or output budget) or -ENOMEM. */
int port_wait(struct port *port, struct conn *conn, uint32_t id, uint32_t thread,
              uint32_t max_entries, uint32_t timeout_ms, const uint32_t *results, uint32_t n);
/* Whether a caller may take entries now (fewer than concurrency threads running). */
bool port_may_run(const struct port *port);
/* Entries were handed to (conn, thread): it now runs on port.  A connection has at most
 * max_waits threads recorded as running; beyond that they are not counted. */
void port_mark_running(struct port *port, struct conn *conn, uint32_t thread);
/* Answers a wait with status and no entries, and frees it. */
void wait_cancel(struct wait *w, uint32_t status);
/* Frees a wait without answering it (detached or not). */
void wait_free(struct wait *w);
/* Takes a wait off its port and stops its timer; it stays on its connection.  Idempotent. */
void wait_detach(struct wait *w);

/* ---- connections (conn.c) -------------------------------------------------------------- */

struct outmsg {
        struct sn_list link;
        uint32_t jr; /* the first of its journal records (live.c), 0 for none */
        size_t len;
        size_t cost; /* bytes charged to the connection and its user */
        uint8_t data[];
};

struct stage {
        bool active;
        uint32_t id;
        uint32_t port;
        uint32_t error;
        uint8_t *items; /* wire-encoded registrations */
        uint32_t nitems, cap;
        int *fds;
        uint32_t nfds, fdcap;
        uint32_t held; /* fds counted in the user's quota */
        /* In the journal (live.c): the items' records, chained from jr_first, and each
         * descriptor's record and box (keep[i] for fds[i], made as they are journaled). */
        uint32_t jr_first, jr_last;
        struct stage_keep **keep;
};

struct stage_keep {
        uint32_t jr;
        struct box_ref box;
};

/*
 * What all unprivileged users together make the daemon hold: users other than root and the
 * daemon's own (privileged: they may use the reserve).  Bounded by the pools of struct limits:
 * limits_fd_pool(), limits_conn_pool() and the max_*_unprivileged limits.
 */
struct pool {
        uint64_t fds;    /* connections, ports' epoll instances, held sockets and duplicates */
        uint32_t conns;
        uint64_t output; /* bytes, as struct user's */
        uint64_t posted; /* the counts of struct user's nposted, nstaged and nwaits */
        uint64_t staged;
        uint64_t waits;
        uint64_t take;   /* descriptors in unread PORT_TAKE replies (conn.c, take_room()) */
};

/*
 * Per-uid accounting: one user can never take the descriptors or memory other users need.  The
 * record lives while any of its counts is not zero (user_release() frees it then).  Connections,
 * ports, sockets, waits, posted packets, staged items and output change only through the
 * user_charge_*() functions below, which keep
 * the unprivileged pool in step: every path, a re-exec's and a restore's included, goes through
 * them, so the pool never needs rebuilding.
 */
struct user {
        struct sn_list link; /* in server->users */
        uid_t uid;
        struct pool *pool;  /* the server's pool of unprivileged users; NULL when privileged */
        uint32_t nconns;
        uint32_t nports;
        uint32_t nsockets;  /* registrations whose socket the daemon holds, and staged fds */
        uint32_t nregs;
        uint32_t nwaits;
        uint32_t nposted;
        uint32_t nstaged;   /* registration items of unfinished multi-part calls */
        size_t output;      /* bytes of queued replies and parked calls' results */
        uint64_t refused;   /* requests refused by a per-user limit or the pool */
};

/* The user's record, made on first use (NULL when out of memory). */
struct user *user_get(struct server *srv, uid_t uid);
/* Frees u when nothing is charged to it any more. */
void user_release(struct user *u);

/* Connections (each a descriptor) of u change by delta. */
static inline void user_charge_conns(struct user *u, int32_t delta)
{
        u->nconns += (uint32_t)delta;
        if (u->pool) {
                u->pool->conns += (uint32_t)delta;
                u->pool->fds += (uint64_t)(int64_t)delta;
        }
}

/* Ports (each an epoll descriptor) of u change by delta. */
static inline void user_charge_ports(struct user *u, int32_t delta)
{
        u->nports += (uint32_t)delta;
        if (u->pool)
                u->pool->fds += (uint64_t)(int64_t)delta;
}

/* Sockets held for u (registrations, their EDGE duplicates, staged) change by delta. */
static inline void user_charge_sockets(struct user *u, int64_t delta)
{
        u->nsockets += (uint32_t)delta;
        if (u->pool)
                u->pool->fds += (uint64_t)delta;
}

/* Output bytes of u (queued replies, parked calls' results) change by delta. */
static inline void user_charge_output(struct user *u, int64_t delta)
{
        u->output += (size_t)delta;
        if (u->pool)
                u->pool->output += (uint64_t)delta;
}

/* Parked calls of u change by delta. */
static inline void user_charge_waits(struct user *u, int32_t delta)
{
        u->nwaits += (uint32_t)delta;
        if (u->pool)
                u->pool->waits += (uint64_t)(int64_t)delta;
}

/* Posted packets queued on the ports of u change by delta. */
static inline void user_charge_posted(struct user *u, int64_t delta)
{
        u->nposted += (uint32_t)delta;
        if (u->pool)
                u->pool->posted += (uint64_t)delta;
}

/* Registration items of u's unfinished multi-part calls change by delta. */
static inline void user_charge_staged(struct user *u, int64_t delta)
{
        u->nstaged += (uint32_t)delta;
        if (u->pool)
                u->pool->staged += (uint64_t)delta;
}

/* Whether u may make the daemon hold n more descriptors, for conn c (NULL: none yet): 0, or
 * -EDQUOT when u is unprivileged and all unprivileged users together, with the descriptors the
 * closer thread has still to close, would exceed the pool (logged as a refusal by
 * --reserve-fds, counted in u->refused).  Never refuses a restore. */
int user_check_fds(struct server *srv, struct user *u, const struct conn *c, uint64_t n);
/* The same for n more bytes of output: -EDQUOT past --max-output-unprivileged. */
int user_check_output(struct server *srv, struct user *u, const struct conn *c, uint64_t n);
/* The same for n more parked calls (--max-waits-unprivileged), posted packets
 * (--max-posted-unprivileged) and staged items (--max-staged-unprivileged). */
int user_check_waits(struct server *srv, struct user *u, const struct conn *c, uint64_t n);
int user_check_posted(struct server *srv, struct user *u, const struct conn *c, uint64_t n);
int user_check_staged(struct server *srv, struct user *u, const struct conn *c, uint64_t n);
/* How many descriptors one more message of u may carry before the pool is full, counting
 * those the closer thread has still to close (at most max_fds; privileged: max_fds). */
uint32_t user_fd_room(const struct server *srv, const struct user *u);

struct conn {
        struct sn_list link; /* in server->conns */
        struct user *user;
        struct server *srv;
        uint64_t serial;
        int fd;
        struct event ev;
        bool writing;
        pid_t pid;
        uid_t uid;
        gid_t gid;
        bool hello;
        bool dead;
        uint16_t version;         /* protocol version chosen at HELLO */
        struct sn_list handles;   /* struct handle */
        uint32_t nports;
        struct sn_list regs;      /* registrations this connection made */
        struct sn_list runners;   /* struct runner */
        uint32_t nrunners;        /* at most max_waits (port_mark_running) */
        struct sn_list waits;
        uint32_t nwaits;
        struct stage stage;
        struct sn_list outq;
        size_t outq_bytes;        /* real allocation held by outq, counted against limits */
        uint32_t violations;      /* protocol violations, for the per-connection log limit */
        bool passed_fds;          /* has sent descriptors: swept when its process is gone */
        bool discarding;          /* dropping the remaining parts of call discard_id */
        uint32_t discard_id;
        struct event hello_timer; /* handshake timeout, armed until HELLO */
        struct timespec started;  /* CLOCK_MONOTONIC at accept (or restore) */
        struct sn_list dead_link; /* in server->dead */
        uint32_t jr;              /* journal record (live.c), 0 for none */
        struct box_ref box;       /* its socket in the live store's boxes */
        /* Descriptors of its last PORT_TAKE reply, maybe still unread (in flight, charged to
         * the daemon's RLIMIT_NOFILE by the kernel); on server->take_unread while not 0. */
        uint32_t take_unread;
        struct sn_list take_link;
};

void conn_accept(struct server *srv, int fd);
/* Re-exec: a connection restored on fd with its identity (no handshake timer once hello). */
struct conn *conn_adopt(struct server *srv, int fd, const struct ucred *cred, uint64_t serial,
                        bool hello);
/* Re-exec: a reply that was queued, not yet sent.  Returns 0 or -ENOMEM. */
int conn_adopt_output(struct conn *c, const uint8_t *buf, size_t len);
/* Queues a reply to be sent later by the loop (or by the next image after a re-exec), or
 * NULL when out of memory; conn_defer_cancel() takes it back before it was sent. */
struct outmsg *conn_defer(struct conn *c, const uint8_t *buf, size_t len);
void conn_defer_cancel(struct conn *c, struct outmsg *m);
/* Re-exec: an unfinished multi-part call; takes fds.  Returns 0 or -EINVAL/-ENOMEM. */
int conn_adopt_stage(struct conn *c, uint32_t id, uint32_t port, uint32_t error,
                     const uint8_t *items, uint32_t nitems, int *fds, uint32_t nfds);
/* Sends ERROR with status (id 0) on a connection being refused, and closes fd. */
void conn_refuse(struct server *srv, int fd, uint32_t status);
void conn_free(struct conn *conn, uint32_t status);
/*
 * Marks the connection dead; the reaper frees it at the next turn of the loop.  Lifetime rule:
 * conn_kill() frees nothing, so it is safe from any depth (every send may call it).  It detaches
 * the connection's waits from their ports and stops their timers, so no other path can reach
 * them; they stay on conn->waits until conn_free() or their holder's wait_free().
 */
void conn_kill(struct conn *conn, const char *why);
/* Sends one encoded message (queued when the socket is full). */
void conn_send(struct conn *conn, const uint8_t *buf, size_t len);
/* Encodes and sends a PROCESS_REPLY. */
void conn_reply_process(struct conn *conn, uint32_t id, uint32_t status, const uint32_t *results,
                        uint32_t nresults, const uint8_t *entries, uint32_t nentries);

/* ---- operators' requests (control.c) -------------------------------------------------- */

/* Answers a CONTROL request of conn (JSON text of len bytes) with a CONTROL_REPLY. */
void control_handle(struct conn *conn, uint32_t id, const uint8_t *text, uint32_t len);
struct json_t;
/* Bytes a client chose (len of them, NULs allowed) as a new JSON value, never NULL: a string of
 * exactly those bytes when they are valid UTF-8, else an array of the byte values (null only
 * when out of memory).  The caller owns the reference. */
struct json_t *control_json_bytes(const void *bytes, size_t len);
/* Sends a reply of type with status and text (len bytes) as its byte array. */
void conn_reply_text(struct conn *conn, uint16_t type, uint32_t id, uint32_t status,
                     const char *text, size_t len);

/* ---- closing clients' descriptors off the loop (closer.c) ----------------------------- */

/* Starts (0 or a negative errno; without it descriptors are closed in place) and stops the
 * closer thread; stopping closes what is queued first. */
int closer_start(void);
void closer_stop(void);
/* Closes a descriptor a client gave the daemon, on the closer thread.  Ignores -1; returns -1
 * (for `fd = closer_close(fd)`). */
int closer_close(int fd);
void closer_close_all(const int *fds, unsigned n);
/* Descriptors queued or being closed, not closed yet (they still take room in the table). */
uint64_t closer_pending(void);

/* ---- server (server.c, status.c) ------------------------------------------------------- */

struct server {
        struct event_base *base;
        int listen_fd;
        struct sockaddr_un listen_addr; /* getsockname() of listen_fd */
        socklen_t listen_addrlen;
        struct event listen_ev;
        struct event sig_term, sig_int;
        struct event sig_ignored[3]; /* USR1, USR2, ALRM: logged, never fatal */
        bool stopping;               /* shutdown_cb ran: a repeated signal is only logged */
        struct event listen_pause;   /* re-enables accepting after running out of descriptors */
        int reserve_fd;              /* spare descriptor to refuse a client on EMFILE */
        struct sn_ratelimit refuse_log; /* refusals by a limit */
        struct sn_ratelimit violation_log; /* protocol violations, all connections */
        struct event reaper;
        struct event watchdog;  /* WATCHDOG=1 at half of WATCHDOG_USEC */
        struct event status_tick; /* STATUS= when the summary changes */
        struct event owner_sweep; /* ends connections whose process has exited */
        char last_status[320];
        char *path;
        bool owns_path;
        struct limits limits;
        struct counters counters;
        struct registry registry;
        /* Registrations by slot number: the epoll items' data, stable across a re-exec. */
        struct reg **slots;
        uint32_t nslots, free_slot; /* free slots chain through their entry (NULL-tagged) */
        uint32_t *slot_next;
        struct sn_list conns;
        uint32_t nconns;
        struct sn_list ports;
        struct sn_list users;
        struct pool unprivileged; /* what users other than root and ours hold together */
        struct sn_list dead;
        uint32_t next_port_id;       /* ports created; ids are a keyed permutation of it */
        uint32_t port_id_key[4];
        uint64_t next_conn_serial;
        uint32_t nports, nwaits;
        uint64_t nregs, nqueued;
        bool trace;
        char *config_path;
        bool config_named;      /* named with --config: its absence is an error */
        struct settings cmdline;
        struct settings file_settings; /* the file's settings in force: the last good ones */
        bool lastgood_stored;   /* they are kept in the descriptor store (lastgood.c) */
        char reload_note[160];  /* the outcome of the last reload or start, for STATUS= */
        struct event sig_hup, sig_usr2;
        struct event reexec_later; /* SIGUSR2's re-exec, after the signals of its loop pass */
        bool restoring;         /* a restore: holdings are restored past any limit */
        bool restoring_crash;   /* ... after a crash: edges that hold are reported again */
        char *exe;              /* our binary's path, executed again by a re-exec */
        char **argv;            /* our arguments, given again */
        struct timespec started;
        uint8_t *rbuf;  /* one received message */
        uint8_t *wbuf;  /* one reply being built */
        uint8_t *ebuf;  /* encoded entries being taken */
        struct epoll_event *evbuf;
        uint32_t evcap;
        uint64_t fd_capacity;
        uint64_t fd_own;         /* descriptors open before the first client: the daemon's own */
        uint32_t fdstore_max;    /* the service manager's descriptor store takes this many */
        struct journal *journal; /* the state, always current (live.c), NULL without one */
        uint32_t listen_jr;      /* the listening socket's journal record */
        struct box_ref listen_box;
        struct stage_keep *lent; /* live_stage_lend(): the staged descriptor being applied */
        int lent_fd;
        /* PORT_TAKE replies not known to be read, and their descriptors (bounded: see
         * handle_port_take in conn.c). */
        struct sn_list take_unread;
        uint64_t take_inflight;
        size_t freed_since_trim; /* bytes of client-made state freed since malloc_trim() */
};

struct server_options {
        const char *path;
        char *const *argv;        /* for a re-exec: the command line again */
        const char *config_path;  /* "" for none; read again on SIGHUP */
        bool config_named;        /* given with --config: it must exist */
        struct settings cmdline;  /* what the command line set: wins over the file */
        uint32_t mode;
        const char *group;
        struct limits limits;
        bool trace;
        int listen_fd; /* an adopted listening socket, or -1 */
};

int server_new(const struct server_options *opt, struct server **ret_srv);
/* Serves until SIGTERM/SIGINT.  Returns 0, or -EIO when the loop failed; either way with the
 * handled signals held (blocked) for the rest of the process: see server_hold_signals(). */
int server_run(struct server *srv);
void server_free(struct server *srv);
/* Blocks every signal the daemon handles (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM)
 * in the calling thread, for good: once the daemon stops, one arriving waits, pending, instead
 * of ending the process with its default action after server_free() removed its handler. */
void server_hold_signals(void);
/* Logs (notice) and discards the held signals that arrived meanwhile; the kernel keeps one
 * pending signal of each kind, so a kind sent several times is logged once. */
void server_note_held_signals(void);
/* Re-executes the daemon's binary in place keeping every client (SIGUSR2): the state goes
 * through a memfd, checked first by the new binary (--check-state).  Returns only on failure
 * (logged), with everything still served: a negative errno. */
int server_reexec(struct server *srv);
/* A re-exec asked for by conn's CONTROL request id: answer (JSON text) is queued to go out
 * from the new image.  Returns only on failure, with the answer taken back. */
int server_reexec_for(struct server *srv, struct conn *conn, uint32_t id, const char *answer);
/*
 * The service manager's descriptor store (fdstore.c).  fdstore_capacity: how many descriptors
 * it takes (FDSTORE, with NOTIFY_SOCKET set), 0 when there is none.  fdstore_take: at start,
 * takes what LISTEN_FDS passes: returns 1 with *ret_listen_fd an activated listening socket, 0
 * with none, or a negative errno (logged; the caller exits).  What a previous daemon left in
 * the store (its journal and boxes, after an orderly stop or a crash) is then had from
 * fdstore_previous(): true with *journal (size bytes) and the descriptors by record (the
 * caller's), false when there is none.  fdstore_next_gen: the generation for our own journal;
 * fdstore_forget_previous: removes the previous daemon's entries once ours are stored.
 */
uint32_t fdstore_capacity(void);
int fdstore_take(int *ret_listen_fd);
bool fdstore_previous(uint8_t **journal, size_t *size, struct restore_fds *fds);
/* A generation already used (a re-exec's predecessor): the next one is later. */
void fdstore_note_gen(uint32_t gen);
uint32_t fdstore_next_gen(void);
void fdstore_forget_previous(void);
/* Removes generation gen's journal and its nboxes boxes from the store (after a re-exec). */
void fdstore_forget_gen(uint32_t gen, uint32_t nboxes);
/* After fdstore_take: the previous daemon's last good settings (lastgood.c), a memfd that is
 * now the caller's, or -1 when the store held none. */
int fdstore_take_settings(void);
/*
 * The state, always current (live.c, on journal.c).  live_start: a new journal of generation
 * gen holding everything the server holds now, in the descriptor store when there is one (0 or
 * a negative errno, logged; then the daemon runs without it, and cannot re-exec).  live_stop:
 * ends it; forget also takes it out of the store.  live_flush: sends the descriptors added
 * since the last flush; runs at the end of every turn of the loop that added one, and before
 * any reply is sent.  live_leave: before a re-exec or an orderly stop: every port harvested (so
 * that no edge is reported twice), everything boxed, and the journal marked orderly.  The
 * hooks below record what they name and do nothing without a journal; *_gone before the
 * object is freed.
 */
int live_start(struct server *srv, uint32_t gen);
void live_stop(struct server *srv, bool forget);
void live_flush(struct server *srv);
int live_leave(struct server *srv);
/* How many entries of the store the journal and boxes take. */
uint32_t live_entries(const struct server *srv);
void live_everything(struct server *srv);
void live_listen(struct server *srv);
void live_conn(struct conn *c);
/* Its flags, protocol version or staged call changed. */
void live_conn_update(struct conn *c);
void live_conn_gone(struct conn *c);
/* Request id is being handled (begin) or was answered. */
void live_conn_request(struct conn *c, uint32_t id, bool begin);
/* A reply leaving for c (buf, len bytes): the request it answers is no longer in flight. */
void live_answered(struct conn *c, const uint8_t *buf, size_t len);
/* A reply queued (not taken by the kernel yet), and sent. */
void live_out(struct conn *c, struct outmsg *m);
void live_out_gone(struct conn *c, struct outmsg *m);
/* A part appended to c's staged call: n items at items, the stage's last nfds descriptors. */
void live_stage_part(struct conn *c, const uint8_t *items, uint32_t n, uint32_t nfds);
void live_stage_gone(struct conn *c);
/* Staged descriptor idx of c is about to become a registration's (live_reg() takes over its
 * record and box); idx past the stage: none. */
void live_stage_lend(struct conn *c, uint32_t idx);
void live_port(struct port *p);
void live_port_gone(struct port *p);
/* Its linger time or lingering state changed; its epoch changed. */
void live_port_linger(struct port *p);
void live_port_epoch(struct port *p);
void live_handle(struct handle *h);
void live_handle_gone(struct handle *h);
void live_runner(struct runner *r);
void live_runner_gone(struct runner *r);
void live_reg(struct reg *g);
void live_reg_gone(struct reg *g);
/* A one-shot fired (or was enabled again). */
void live_reg_fired(struct reg *g);
/* Its packet was queued, OR-ed into or taken off the queue. */
void live_reg_queued(struct reg *g);
/* The order of a packet queued now, among every port's packets. */
uint64_t live_packet_seq(struct server *srv);
void live_posted(struct port *p, struct packet *pkt);
void live_posted_gone(struct server *srv, struct packet *pkt);
void live_wait(struct wait *w);
void live_wait_gone(struct wait *w);
/* Sends ERROR with status for request id (restore.c, after a crash). */
void conn_reply_error(struct conn *c, uint32_t id, uint32_t status);
/* Sets or clears FD_CLOEXEC on every descriptor the journal names (live.c). */
void live_set_cloexec(struct server *srv, bool on);
/* Reads the configuration file again and applies it to new requests (SIGHUP, CONTROL reload,
 * systemctl reload).  Returns 0, or a negative errno when the file is bad: logged at err, err
 * holds "PATH:LINE: what, naming the key" (errsz bytes), and the running settings stay. */
int server_reload(struct server *srv, char *err, size_t errsz);
/* Sets the outcome shown after the counts on the STATUS= line: prefix and text, cut (if at all)
 * at a word boundary and marked with an ellipsis, never inside a word. */
void server_set_note(struct server *srv, const char *prefix, const char *text);
/*
 * The last good settings (lastgood.c).  lastgood_memfd: s as a sealed memfd (close-on-exec as
 * asked), or a negative errno.  lastgood_keep: makes file the settings in force
 * (srv->file_settings) and, when srv->lastgood_stored, replaces the copy in the descriptor
 * store; 0 or a negative errno (the caller logs it; the settings apply anyway).
 * lastgood_is_store_name: whether a descriptor store entry is that copy.
 */
int lastgood_memfd(const struct settings *s, bool cloexec);
int lastgood_keep(struct server *srv, const struct settings *file);
bool lastgood_is_store_name(const char *name);
/* Builds the status document as user uid may see it (root: everything; others: the daemon's
 * limits and their own figures only).  Returns malloc'ed JSON text or NULL. */
char *server_status_json(struct server *srv, uid_t uid);
/* True when fd (a SOCK_SEQPACKET socket) is a client end of a connection to this daemon. */
bool server_is_own_connection(const struct server *srv, int fd);
/* Rate-limited notice that a client was refused by limit (name as in socknotifyd(8)). */
void server_log_refusal(struct server *srv, const struct conn *c, uid_t uid, const char *limit);
/* Gives memory back to the system after much client-made state was freed. */
void server_note_freed(struct server *srv, size_t bytes);
void server_count_call_error(struct server *srv, uint32_t err);
void server_count_entry_error(struct server *srv, uint32_t err);

/* The registration of an epoll item's data, or NULL. */
static inline struct reg *server_slot_reg(const struct server *srv, uint64_t data)
{
        return data < srv->nslots ? srv->slots[data] : NULL;
}

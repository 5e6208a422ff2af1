/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * port.c - completion ports: the packet queue, harvesting readiness, and parked waiters.
 *
 * Invariants:
 *  - At most one queued packet per registration (row 54): a registration's packet is embedded
 *    in it and later readiness is OR-ed in.  Posted packets are counted against max_posted (L4).
 *  - Readiness is harvested from the port's epoll only for a caller that dequeues, and only as
 *    many entries as it can take; the kernel hands back only ready sockets, so the cost follows
 *    the entries delivered, never the number of registrations.
 *  - A level-triggered packet that has waited in the queue past an earlier dequeue is re-read
 *    with poll() before it is handed out, so no stale readiness is delivered.
 *  - Waiters are a stack: the most recent waiter is served first (row 73); packets leave FIFO.
 *  - Port names are per user: (uid, name) is the key, so no user can take or probe another
 *    user's names.  A port and its posted packets are charged to the user that created it.
 *  - Ports are found by id and by (uid, name), handles by (session, port), in the server's
 *    keyed hash tables (htable.h): no lookup, creation or restore walks every port.
 *  - Any answer may kill its session (session.h), which frees nothing: a wait being answered
 *    stays valid until its holder frees it, and a dead session's waits are off every port.
 *  - A runner's scheduler state is read only while its port is stalled: no free slot, a thread
 *    that waits and entries for it.  A runner read as blocked elsewhere does not count until
 *    it is read as running again; a release that depends on a reading older than 16 ms reads
 *    it once more first.  Every such read is charged to the port's user, whose budget of
 *    reads refills at a fixed rate: what reading costs is bounded in time per user.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/epctl.h"
#include "daemon/base/taskstate.h"
#include "daemon/objects/persist.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/session.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "proto/codec.h"
#include "socknotify.h"

/*
 * The loop watches a port's epoll instance only while a call waits on the port, and stops at
 * the first wake-up that finds none: readiness changes of a watched instance wake the loop's
 * own epoll through the kernel's nested wake-up chain, which cost the one-shot re-arm workload
 * about 12 % of the daemon's time for callers that never wait (they harvest by themselves).
 */
static void port_ready_cb(evutil_socket_t fd, short what, void *arg)
{
        struct port *port = arg;

        if (port->nwaiters) {
                port_dispatch(port);
        } else if (port->ev_added) {
                event_del(&port->ev);
                port->ev_added = false;
        }
}

static void port_stall_cb(evutil_socket_t fd, short what, void *arg);

static void port_watch(struct port *port)
{
        if (!port->ev_added && event_add(&port->ev, NULL) == 0)
                port->ev_added = true;
}

/* ---- the indexes: ports by (uid, name) and by id, handles by (session, port) ------------- */

static uint64_t name_hash(const struct server *srv, uid_t uid, const char *name)
{
        return htable_hash(&srv->port_names, uid, name, strlen(name));
}

static uint64_t id_hash(const struct server *srv, uint32_t id)
{
        return htable_hash(&srv->port_ids, id, NULL, 0);
}

static uint64_t handle_hash(const struct server *srv, const struct session *s,
                            const struct port *p)
{
        uint64_t x = (uint64_t)(uintptr_t)p;

        return htable_hash(&srv->handles, (uint64_t)(uintptr_t)s, &x, sizeof(x));
}

/* Puts p in the server's indexes (its id set; its name, if any). */
static void port_index(struct port *p)
{
        htable_add(&p->srv->port_ids, &p->id_node, id_hash(p->srv, p->id));
        if (p->name)
                htable_add(&p->srv->port_names, &p->name_node,
                           name_hash(p->srv, p->uid, p->name));
}

static void port_unindex(struct port *p)
{
        htable_del(&p->srv->port_ids, &p->id_node);
        if (p->name)
                htable_del(&p->srv->port_names, &p->name_node);
}

static struct port *port_by_name(struct server *srv, uid_t uid, const char *name)
{
        for (struct htable_node *n = htable_first(&srv->port_names, name_hash(srv, uid, name)); n;
             n = htable_next(n)) {
                struct port *p = SN_CONTAINER_OF(n, struct port, name_node);

                if (p->uid == uid && !strcmp(p->name, name))
                        return p;
        }
        return NULL;
}

static struct port *port_by_id(const struct server *srv, uint32_t id)
{
        for (struct htable_node *n = htable_first(&srv->port_ids, id_hash(srv, id)); n;
             n = htable_next(n)) {
                struct port *p = SN_CONTAINER_OF(n, struct port, id_node);

                if (p->id == id)
                        return p;
        }
        return NULL;
}

int port_handle_add(struct session *session, struct port *p)
{
        struct handle *h;

        if (session->nports >= session->srv->limits.max_ports && !session->srv->restoring) {
                server_log_refusal(session->srv, session, session->uid, "max-ports");
                return -EDQUOT;
        }
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->session = session;
        h->port = p;
        sn_list_add_head(&session->handles, &h->conn_link);
        sn_list_add_tail(&p->handles, &h->port_link);
        htable_add(&session->srv->handles, &h->node, handle_hash(session->srv, session, p));
        session->nports++;
        p->nhandles++;
        live_handle(h);
        if (p->lingering) {
                /* Opened again in time: it is held, no longer lingering. */
                evtimer_del(&p->linger_timer);
                p->lingering = false;
                live_port_linger(p);
        }
        return 0;
}

/* ---- handoff: lingering ports and taking registrations over ------------------------------- */

static void port_linger_cb(evutil_socket_t fd, short what, void *arg)
{
        struct port *p = arg;

        log_debug("port %u (\"%s\"): linger time over, closed", p->id, p->name);
        port_free(p, ECANCELED);
}

/* *d = CLOCK_MONOTONIC now + ms; returns the same delay as a timeval for libevent. */
static struct timeval deadline_in(struct timespec *d, uint32_t ms)
{
        clock_gettime(CLOCK_MONOTONIC, d);
        d->tv_sec += ms / 1000;
        d->tv_nsec += (long)(ms % 1000) * 1000000;
        if (d->tv_nsec >= 1000000000) {
                d->tv_sec++;
                d->tv_nsec -= 1000000000;
        }
        return (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
}

static void linger_arm(struct port *p, uint32_t ms)
{
        struct timeval tv = deadline_in(&p->linger_deadline, ms);

        p->lingering = true;
        /* evtimer_add() fails only for a bad timeval: the port then waits to be taken. */
        if (evtimer_add(&p->linger_timer, &tv) < 0)
                log_warning("port %u: the linger timer could not be armed", p->id);
        live_port_linger(p);
}

/* The last handle of a port with a linger time is gone: every registration on it is kept
 * without an owner, and the port waits linger_ms for a process to open it again. */
static void port_linger_begin(struct port *p)
{
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &p->regs) {
                struct reg *g = sn_list_entry(pos, struct reg, port_link);

                if (g->creator)
                        reg_orphan(g);
        }
        log_debug("port %u (\"%s\"): no handle left, lingers %u ms with %u registration(s)",
                  p->id, p->name, p->linger_ms, p->nregs);
        linger_arm(p, p->linger_ms);
}

void port_linger_resume(struct port *p, uint32_t ms)
{
        linger_arm(p, ms ? ms : 1);
}

uint32_t port_linger_left(const struct port *p)
{
        struct timespec now;
        int64_t ms;

        if (!p->lingering)
                return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        ms = (int64_t)(p->linger_deadline.tv_sec - now.tv_sec) * 1000 +
             (p->linger_deadline.tv_nsec - now.tv_nsec) / 1000000;
        return ms < 1 ? 1 : (uint32_t)SN_MIN(ms, (int64_t)UINT32_MAX);
}

int port_set_linger(struct port *p, struct session *session, uint32_t linger_ms)
{
        struct server *srv = p->srv;

        if (!p->name)
                return -EINVAL; /* nobody could open it again */
        if (linger_ms > srv->limits.max_linger_ms) {
                server_log_refusal(srv, session, session->uid, "max-linger");
                return -EDQUOT;
        }
        p->linger_ms = linger_ms;
        live_port_linger(p);
        return 0;
}

uint32_t port_take_prepare(struct port *p, uint8_t *items, int *fds, uint32_t max)
{
        struct sn_list *pos, *tmp;
        uint32_t n = 0;

        sn_list_foreach_safe(pos, tmp, &p->orphans) {
                struct reg *g = sn_list_entry(pos, struct reg, conn_link);
                struct snw_registration it;

                if (n == max)
                        break;
                it = (struct snw_registration){
                        .key = g->key, .dev = g->dev, .ino = g->ino, .filter = g->filter,
                        /* The state: ENABLE armed, DISABLE, or NONE for an enabled
                         * one-shot whose entry was dequeued (disarmed until enabled). */
                        .op = g->state != REG_ENABLED ? SN_OP_DISABLE
                              : g->fired && !g->queued ? SN_OP_NONE
                                                       : SN_OP_ENABLE,
                        .trigger = g->trigger, .fd_index = n, .client_fd = g->client_fd,
                };

                items = snw_registration_encode(items, &it);
                fds[n++] = g->fd;
        }
        return n;
}

void port_take_commit(struct port *p, struct session *session, uint32_t n)
{
        while (n-- && !sn_list_empty(&p->orphans))
                reg_adopt_owner(sn_list_first(&p->orphans, struct reg, conn_link), session);
}

/*
 * Port ids are unique while the daemon runs but tell nothing of other users' ports: the n-th
 * port created gets a keyed permutation of n (a four-round Feistel network on 16-bit halves,
 * keys drawn at start), not n itself, whose gaps would count everyone's port creations.
 */
static bool port_id_taken(const struct server *srv, uint32_t id)
{
        return port_by_id(srv, id) != NULL;
}

static uint32_t port_id_of(const struct server *srv, uint32_t n)
{
        uint16_t l = (uint16_t)(n >> 16), r = (uint16_t)n;

        for (int i = 0; i < 4; i++) {
                uint32_t f = (r ^ srv->port_id_key[i]) * 0x9e3779b1u;
                uint16_t t = r;

                r = (uint16_t)(l ^ (uint16_t)(f >> 16));
                l = t;
        }
        return (uint32_t)l << 16 | r;
}

int port_new(struct session *session, uint32_t concurrency, const char *name,
             struct port **ret_port)
{
        struct server *srv = session->srv;
        struct port *p;
        int r;

        if (session->nports >= srv->limits.max_ports) {
                server_log_refusal(srv, session, session->uid, "max-ports");
                return -EDQUOT;
        }
        if (session->user->nports >= srv->limits.max_ports_per_user) {
                session->user->refused++;
                server_log_refusal(srv, session, session->uid, "max-ports-per-user");
                return -EDQUOT;
        }
        r = user_check_fds(srv, session->user, session, 1); /* its epoll instance */
        if (r < 0)
                return r;
        if (name && *name && port_by_name(srv, session->uid, name))
                return -EEXIST;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        if (name && *name && !(p->name = strdup(name))) {
                free(p);
                return -ENOMEM;
        }
        p->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (p->epfd < 0) {
                r = -errno;
                free(p->name);
                free(p);
                return r;
        }
        p->srv = srv;
        p->uid = session->uid;
        p->user = session->user;
        sn_list_init(&p->handles);
        sn_list_init(&p->runners);
        sn_list_init(&p->blocked);
        sn_list_init(&p->queue);
        sn_list_init(&p->waiters);
        sn_list_init(&p->regs);
        sn_list_init(&p->skips);
        sn_list_init(&p->orphans);
        evtimer_assign(&p->linger_timer, srv->base, port_linger_cb, p);
        evtimer_assign(&p->stall_timer, srv->base, port_stall_cb, p);
        if (!concurrency) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                concurrency = n > 0 ? (uint32_t)n : 1;
        }
        p->concurrency = concurrency;
        /* Edge-triggered: the callback only needs to hear that something new became ready;
         * waiters arriving later harvest by themselves. */
        event_assign(&p->ev, srv->base, p->epfd, EV_READ | EV_PERSIST | EV_ET, port_ready_cb, p);
        if (port_handle_add(session, p) < 0) {
                close(p->epfd);
                free(p->name);
                free(p);
                return -ENOMEM;
        }
        /* After a re-exec the key is new while the count goes on: skip an id still in use. */
        do
                p->id = port_id_of(srv, ++srv->next_port_id);
        while (!p->id || port_id_taken(srv, p->id));
        sn_list_add_tail(&srv->ports, &p->srv_link);
        port_index(p);
        srv->nports++;
        user_charge_ports(p->user, 1);
        live_port(p);
        /* The handle was journaled before the port had its id. */
        if (srv->journal) {
                struct handle *h = sn_list_first(&p->handles, struct handle, port_link);

                live_handle_gone(h);
                live_handle(h);
        }
        *ret_port = p;
        return 0;
}

struct port *port_adopt(struct server *srv, uint32_t id, const char *name, uid_t uid,
                        uint32_t concurrency, int epfd, uint64_t epoch)
{
        struct port *p = calloc(1, sizeof(*p));

        if (!p)
                return NULL;
        p->user = user_get(srv, uid);
        if (!p->user || (name && !(p->name = strdup(name)))) {
                user_release(p->user);
                free(p);
                return NULL;
        }
        p->srv = srv;
        p->uid = uid;
        p->id = id;
        p->concurrency = concurrency ? concurrency : 1;
        p->epfd = epfd;
        p->epoch = epoch;
        sn_list_init(&p->handles);
        sn_list_init(&p->runners);
        sn_list_init(&p->blocked);
        sn_list_init(&p->queue);
        sn_list_init(&p->waiters);
        sn_list_init(&p->regs);
        sn_list_init(&p->skips);
        sn_list_init(&p->orphans);
        evtimer_assign(&p->linger_timer, srv->base, port_linger_cb, p);
        evtimer_assign(&p->stall_timer, srv->base, port_stall_cb, p);
        event_assign(&p->ev, srv->base, p->epfd, EV_READ | EV_PERSIST | EV_ET, port_ready_cb, p);
        sn_list_add_tail(&srv->ports, &p->srv_link);
        port_index(p);
        srv->nports++;
        user_charge_ports(p->user, 1);
        return p;
}

int port_adopt_posted(struct port *port, uint64_t key, uint64_t overlapped, uint32_t bytes,
                      uint64_t epoch)
{
        struct packet *pkt = malloc(sizeof(struct posted));

        if (!pkt)
                return -ENOMEM;
        posted_of(pkt)->jr = 0;
        pkt->seq = 0;
        pkt->key = key;
        pkt->overlapped = overlapped;
        pkt->events = bytes;
        pkt->kind = SN_PROTO_KIND_POSTED;
        pkt->epoch = epoch;
        sn_list_add_tail(&port->queue, &pkt->link);
        port->nposted++;
        user_charge_posted(port->user, 1);
        port->nqueued++;
        port->srv->nqueued++;
        return 0;
}

int port_open(struct session *session, const char *name, struct port **ret_port)
{
        /* Only the user that created it (SO_PEERCRED of both connections) finds it: another
         * user's port of that name is absent, which tells nothing about it. */
        struct port *p = name && *name ? port_by_name(session->srv, session->uid, name) : NULL;
        int r;

        if (!p)
                return -ENOENT;
        if (port_handle_of(session, p->id))
                return -EEXIST;
        r = port_handle_add(session, p);
        if (r < 0)
                return r;
        *ret_port = p;
        return 0;
}

void port_free(struct port *p, uint32_t status)
{
        struct server *srv;
        struct sn_list *pos, *tmp;

        if (!p)
                return;
        srv = p->srv;
        epctl_flush(srv->epctl); /* nothing queued may name the epoll instance closed below */
        while (!sn_list_empty(&p->waiters))
                wait_cancel(sn_list_first(&p->waiters, struct wait, port_link), status);
        while (!sn_list_empty(&p->runners))
                runner_free(sn_list_first(&p->runners, struct runner, port_link));
        while (!sn_list_empty(&p->handles)) {
                struct handle *h = sn_list_first(&p->handles, struct handle, port_link);

                sn_list_del(&h->port_link);
                sn_list_del(&h->conn_link);
                htable_del(&srv->handles, &h->node);
                h->session->nports--;
                live_handle_gone(h);
                free(h);
        }
        event_del(&p->ev);
        evtimer_del(&p->linger_timer);
        evtimer_del(&p->stall_timer);
        p->stall_armed = false;
        p->lingering = false;
        /* Closing the epoll instance first drops every item at once (rule 9). */
        p->epfd = sn_close(p->epfd);
        sn_list_foreach_safe(pos, tmp, &p->queue) {
                struct packet *pkt = sn_list_entry(pos, struct packet, link);

                if (pkt->kind == SN_PROTO_KIND_POSTED) {
                        sn_list_del(&pkt->link);
                        p->nqueued--;
                        srv->nqueued--;
                        live_posted_gone(srv, pkt);
                        free(pkt);
                }
        }
        user_charge_posted(p->user, -(int64_t)p->nposted);
        server_note_freed(srv, (size_t)p->nposted * sizeof(struct posted));
        p->nposted = 0;
        while (!sn_list_empty(&p->regs))
                reg_free(sn_list_first(&p->regs, struct reg, port_link));
        live_port_gone(p);
        sn_list_del(&p->srv_link);
        port_unindex(p);
        srv->nports--;
        user_charge_ports(p->user, -1);
        user_release(p->user);
        free(p->name);
        free(p);
}

void port_close_handle(struct handle *h, uint32_t status)
{
        struct port *p = h->port;
        struct session *session = h->session;
        struct sn_list *pos, *tmp;

        if (p->nhandles == 1 && !(p->name && p->linger_ms)) {
                port_free(p, status);
                return;
        }
        /* Others still hold the port: only this session's waits end.  Walked on the
         * session's list, not the port's: a cancellation's send may kill the session,
         * which takes its other waits off the port (the next element of a walk there) but
         * never off the session, and wait_cancel() frees only the wait it answers. */
        sn_list_foreach_safe(pos, tmp, &session->waits) {
                struct wait *w = sn_list_entry(pos, struct wait, conn_link);

                if (w->port == p && !w->detached)
                        wait_cancel(w, status);
        }
        sn_list_foreach_safe(pos, tmp, &p->runners) {
                struct runner *r = sn_list_entry(pos, struct runner, port_link);

                if (r->session == session)
                        runner_free(r);
        }
        /* On a port with a linger time, letting go of it hands the session's registrations
         * on it to the port, as ending the session would: a successor holding it takes them
         * over (a walk of the session's own registrations, bounded by its quota). */
        if (p->name && p->linger_ms) {
                sn_list_foreach_safe(pos, tmp, &session->regs) {
                        struct reg *g = sn_list_entry(pos, struct reg, conn_link);

                        if (g->port == p)
                                reg_orphan(g);
                }
        }
        sn_list_del(&h->port_link);
        sn_list_del(&h->conn_link);
        htable_del(&session->srv->handles, &h->node);
        session->nports--;
        p->nhandles--;
        live_handle_gone(h);
        free(h);
        if (!p->nhandles)
                port_linger_begin(p);
        else
                port_dispatch(p);
}

struct handle *port_handle_of(struct session *session, uint32_t id)
{
        struct server *srv = session->srv;
        struct port *p = port_by_id(srv, id);

        if (!p)
                return NULL;
        for (struct htable_node *n = htable_first(&srv->handles, handle_hash(srv, session, p)); n;
             n = htable_next(n)) {
                struct handle *h = SN_CONTAINER_OF(n, struct handle, node);

                if (h->session == session && h->port == p)
                        return h;
        }
        return NULL;
}

struct port *port_find(struct session *session, uint32_t id)
{
        struct handle *h = port_handle_of(session, id);

        return h ? h->port : NULL;
}

/* ---- concurrency ------------------------------------------------------------------------ */

#define RUNNERS_WALK 256u /* runners a pass visits, read or not */
static bool port_blocked_stale(const struct port *port);
static bool port_blocked_fresh(const struct port *port, uint32_t n);

bool port_may_run(const struct port *port)
{
        uint32_t need;

        if (port->nrunning - port->nblocked >= port->concurrency)
                return false;
        if (port->nrunning < port->concurrency)
                return true;
        /* A free slot that exists only by runners read as blocked: only by as many of them as
         * it needs whose readings hold, the youngest (port_blocked_fresh()); one lapsed reading
         * does not take the others' slots away.  Past RUNNERS_WALK of them, all must hold. */
        need = port->nrunning - port->concurrency + 1;
        if (need > RUNNERS_WALK)
                return !port_blocked_stale(port);
        return port_blocked_fresh(port, need);
}

/*
 * Threads that block elsewhere (issue 27; semantics row 72).  Windows stops counting a thread
 * against its port's concurrency the moment it enters a wait state, and counts it again when it
 * runs; the kernel tells it at once.  The daemon only sees /proc, so it reads the runners'
 * state when that can change a decision: the port has no free slot (nrunning >= concurrency),
 * a thread waits on it and entries are there for it (stalled).  Then:
 *  - a pass reads runners oldest read first (the pass moves each runner it visits to the
 *    tail), at most once per stall_ms; a runner read as blocked less than READ_FRESH_MS ago is
 *    not read again;
 *  - while the stall lasts the port's timer makes a pass every stall_ms, 1 ms at first,
 *    doubling after each pass that finds no blocked runner, up to STALL_MAX_MS: a thread that
 *    blocks while waiters are parked frees its slot within that much, where Windows frees it at
 *    once;
 *  - a release that would rely on a runner read as blocked more than READ_FRESH_MS ago reads
 *    that runner again first, and while the budget (below) does not let it, that reading is
 *    not relied on (port_may_run() counts only the readings that hold, youngest first, enough
 *    for the slot or none): a thread that runs again is left uncounted
 *    for at most READ_FRESH_MS, as one that blocks waits at most STALL_MAX_MS to be seen.
 *    Readings are renewed from READ_RENEW_MS on, before they lapse: renewed only as they
 *    lapse, one of many would nearly always be stale at the moment of a decision;
 *  - a thread given entries counts until its client has read that answer (session.h,
 *    answer_read): asleep in the library, it is only on its way to run.
 * Every /proc file read is charged to the port's user (issue 39): its bucket holds at most
 * TASK_READS_BURST reads and fills at TASK_READS_PER_MS a millisecond (task_budget_begin()), and
 * one call reads at most what the bucket holds.  Whatever thread ids and counts a client sends,
 * on however many ports and however often it calls, reading its threads costs the daemon at most
 * about 4 x 15 us a millisecond, and no more than 16 reads (and one thread id mapping) at a
 * time before another client is served.  It keeps about 48 blocked runners of a user read
 * (each every READ_RENEW_MS) with room to find more; a port whose free slot depends on more of
 * them may not get it.
 * A runner whose thread cannot be read counts as running, as before: an identity that is no
 * thread id (0, the event-loop identities), any identity of a session that schedules its own
 * threads (HELLO's SELF: a runtime that moves its tasks between threads, or parks a thread for
 * a moment, names no thread whose state means anything), a client in another PID namespace
 * whose thread is not found, /proc hidden from the daemon (hidepid), a thread gone.  Its state
 * is then never read again.  The thread ids are the client's numbers: they are only looked up
 * among the threads of the session's own process (taskstate.h).  runner_task() is the one place
 * that says whether a runner's thread is read at all.
 */
#define TASK_READS_PER_MS 4u /* a user's bucket of /proc reads fills at this rate ... */
/* ... up to this many, what one call may read: 4 ms' worth, as the loop's timers fire on
 * CLOCK_MONOTONIC_COARSE, one scheduler tick (4 ms at HZ=250) apart, whatever was asked */
#define TASK_READS_BURST 16u
#define STALL_FIRST_MS 1u
#define STALL_MAX_MS 16u
#define READ_FRESH_MS STALL_MAX_MS /* how long a reading of "blocked" is relied on */
#define READ_RENEW_MS 12u /* from this age it is read again, as far as the budget allows */
#define SOCKET_HANDOFF_MS 16 /* runner_answered() */
#define MAP_MIN_BUDGET 16u /* threads of a nested namespace's process a mapping may read */

/* CLOCK_MONOTONIC in nanoseconds. */
static uint64_t mono_ns(void)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* What one call may read of its port's runners (task_budget_begin()), and what it read. */
struct task_budget {
        unsigned left;  /* /proc files it may still read */
        unsigned spent; /* files read, charged to the port's user by task_budget_end() */
};

/* Fills the port's user's bucket for the time gone by (one read per 1/TASK_READS_PER_MS ms,
 * at most TASK_READS_BURST held) and grants one call what it holds. */
static struct task_budget task_budget_begin(struct port *port)
{
        const uint64_t per = 1000000u / TASK_READS_PER_MS; /* ns for one read */
        struct user *u = port->user;
        uint64_t now = mono_ns(), add;

        if (!u->task_stamp_ns) {
                u->task_tokens = TASK_READS_BURST;
                u->task_stamp_ns = now;
        } else if ((add = (now - u->task_stamp_ns) / per)) {
                int64_t t = (int64_t)u->task_tokens +
                            (int64_t)SN_MIN(add, (uint64_t)(TASK_READS_BURST + MAP_MIN_BUDGET));

                u->task_tokens = (int32_t)SN_MIN(t, (int64_t)TASK_READS_BURST);
                /* Full: the time beyond is not saved up. */
                u->task_stamp_ns = u->task_tokens == TASK_READS_BURST ? now
                                                                      : u->task_stamp_ns + add * per;
        }
        return (struct task_budget){ .left = u->task_tokens > 0 ? (unsigned)u->task_tokens : 0 };
}

static void task_spend(struct task_budget *b, unsigned n)
{
        b->spent += n;
        b->left -= SN_MIN(b->left, n);
}

/* Charges what the call read: a mapping may leave the bucket below 0 (at most
 * MAP_MIN_BUDGET), and nothing is read until it has filled above 0 again. */
static void task_budget_end(struct port *port, const struct task_budget *b)
{
        port->user->task_tokens -= (int32_t)b->spent;
        port->user->task_reads += b->spent;
        port->srv->counters.thread_reads += b->spent;
}

/* Whether r was read as blocked less than ms before now. */
static bool runner_read_within(const struct runner *r, uint64_t now, uint32_t ms)
{
        return r->blocked && (int64_t)(now - r->read_ns) < (int64_t)ms * 1000000;
}

static bool runner_fresh(const struct runner *r, uint64_t now)
{
        return runner_read_within(r, now, READ_FRESH_MS);
}

/* Whether the oldest reading of the port's blocked runners is too old to be relied on: the
 * list is in the order of the readings. */
static bool port_blocked_stale(const struct port *port)
{
        return !sn_list_empty(&port->blocked) &&
               !runner_fresh(sn_list_first(&port->blocked, struct runner, blocked_link), mono_ns());
}

/* Whether the n youngest readings of the port's blocked runners all hold: the list is in the
 * order of the readings, the youngest at its tail.  At most n entries are looked at. */
static bool port_blocked_fresh(const struct port *port, uint32_t n)
{
        uint64_t now = mono_ns();
        const struct sn_list *pos;

        for (pos = port->blocked.prev; n && pos != &port->blocked; pos = pos->prev, n--)
                if (!runner_fresh(sn_list_entry(pos, struct runner, blocked_link), now))
                        return false;
        return n == 0;
}

static void runner_set_blocked(struct runner *r, bool blocked)
{
        if (r->blocked == blocked)
                return;
        r->blocked = blocked;
        if (blocked) {
                sn_list_add_tail(&r->port->blocked, &r->blocked_link);
                r->port->nblocked++;
        } else {
                sn_list_del(&r->blocked_link);
                r->port->nblocked--;
        }
}

/* The runner's thread id in the daemon's namespace, looked up once (< 0: none, it is never
 * read).  A mapping reads the status of up to MAP_MIN_BUDGET of the process's threads, charged
 * to b; with nothing left in b the lookup waits for a later pass (0). */
static pid_t runner_task(struct runner *r, struct task_budget *b)
{
        struct session *s = r->session;
        unsigned map_budget = MAP_MIN_BUDGET;
        pid_t t;

        if (r->task)
                return r->task;
        if (s->self_scheduled || !r->thread || r->thread >= TASKSTATE_TID_LIMIT || s->pid <= 0)
                return r->task = -1;
        if (!s->pidns) {
                if (!b->left)
                        return 0;
                s->pidns = taskstate_ns(s->pid, s->uid);
                task_spend(b, 1);
        }
        if (s->pidns == TASKSTATE_NS_SAME)
                return r->task = (pid_t)r->thread;
        if (s->pidns != TASKSTATE_NS_NESTED)
                return r->task = -1;
        if (!b->left)
                return 0;
        t = taskstate_map(s->pid, s->uid, r->thread, &map_budget);
        task_spend(b, MAP_MIN_BUDGET - map_budget);
        return r->task = t > 0 ? t : -1;
}

/* Whole milliseconds since t (rounded down, also across a second's boundary). */
static int64_t mono_ms_since(const struct timespec *t)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return ((int64_t)(now.tv_sec - t->tv_sec) * 1000000000 + (now.tv_nsec - t->tv_nsec)) /
               1000000;
}

/* Whether r's thread has the answer with its entries.  On the rings the client says so.  On
 * the socket the daemon sees only that the process received it: the thread that read it may
 * still have to wake the one it is for, and may be kept from the CPU a while before it does
 * (a waiting thread read then would let one thread more run than the port allows).  So it
 * counts from SOCKET_HANDOFF_MS after the daemon first saw it received. */
static bool runner_answered(struct runner *r, int64_t *due_ms)
{
        int64_t since;

        switch (session_answer_read(r->session, &r->answer)) {
        case SESSION_TAKEN:
                return true;
        case SESSION_RECEIVED:
                if (!r->received) {
                        r->received = true;
                        clock_gettime(CLOCK_MONOTONIC, &r->received_at);
                }
                since = mono_ms_since(&r->received_at);
                if (since >= SOCKET_HANDOFF_MS)
                        return true;
                *due_ms = SN_MIN(*due_ms, SOCKET_HANDOFF_MS - since);
                return false;
        default:
                return false;
        }
}

/* Reads r's state (one /proc file) when it has a thread to read and b allows; otherwise r
 * counts as running.  Returns false when r has no thread to read, ever.  A runner read as
 * blocked goes to the tail of port->blocked, stamped.  *due_ms: lowered to when a reading
 * could find r blocked that this one could not. */
static bool runner_read(struct runner *r, struct task_budget *b, int64_t *due_ms)
{
        pid_t t = runner_task(r, b);
        int w;

        if (t <= 0 || !b->left) {
                runner_set_blocked(r, false);
                return t != -1;
        }
        task_spend(b, 1);
        /* Windows counts a released thread as running from its release.  Until the client has
         * read the answer with its entries, the thread is still on its way (asleep in the
         * library, or waiting for the thread that reads for it to wake it), not blocked.
         * Looked at before the state: a state read first could be the sleep before the answer,
         * with the answer read only after it. */
        if (!r->answered)
                r->answered = runner_answered(r, due_ms);
        w = taskstate_waits(r->session->pid, t, r->session->uid);
        if (w < 0)
                r->task = -1; /* gone, or hidden: it counts, as it always did */
        runner_set_blocked(r, w == 1 && r->answered);
        if (r->blocked) {
                r->read_ns = mono_ns();
                sn_list_del(&r->blocked_link);
                sn_list_add_tail(&r->port->blocked, &r->blocked_link);
        }
        return true;
}

/* A pass over the port's runners (bounded by RUNNERS_WALK and the user's budget); adjusts the
 * timer's period. */
static void port_read_runners(struct port *port)
{
        struct task_budget b = task_budget_begin(port);
        uint32_t left = SN_MIN(port->nrunning, RUNNERS_WALK), before = port->nblocked;
        uint64_t now = mono_ns();
        bool readable = false;
        int64_t due = INT64_MAX;

        clock_gettime(CLOCK_MONOTONIC, &port->checked);
        while (left && b.left) {
                struct runner *r = sn_list_first(&port->runners, struct runner, port_link);

                left--;
                sn_list_del(&r->port_link);
                sn_list_add_tail(&port->runners, &r->port_link);
                if (runner_fresh(r, now))
                        readable = true; /* read as blocked a moment ago: nothing new to learn */
                else
                        readable |= runner_read(r, &b, &due);
        }
        task_budget_end(port, &b);
        if (left)
                port->stall_ms = STALL_FIRST_MS; /* runners left for when the bucket fills */
        else if (!readable)
                port->stall_ms = STALL_MAX_MS; /* nothing can change: poll slowly */
        else if (port->nblocked > before || port->stall_ms < STALL_FIRST_MS)
                port->stall_ms = STALL_FIRST_MS;
        else
                port->stall_ms = SN_MIN(port->stall_ms * 2, STALL_MAX_MS);
        /* A hand-over on the socket ends at a known time: the next pass then (or when a timer
         * already set runs out, at most one period later). */
        if (due < (int64_t)port->stall_ms)
                port->stall_ms = due > STALL_FIRST_MS ? (uint32_t)due : STALL_FIRST_MS;
}

/* Reads again, oldest first and as far as the budget goes, the runners read as blocked
 * READ_RENEW_MS ago or more.  The list is in the order of the readings: the walk stops at the
 * first younger one.  Those left keep their mark; once one is older than READ_FRESH_MS,
 * port_may_run() does not rely on it until it is read again. */
static void port_confirm_blocked(struct port *port)
{
        struct task_budget b = task_budget_begin(port);
        uint32_t n = port->nblocked;
        uint64_t now = mono_ns();

        while (b.left && n-- && !sn_list_empty(&port->blocked)) {
                struct runner *r = sn_list_first(&port->blocked, struct runner, blocked_link);

                if (runner_read_within(r, now, READ_RENEW_MS))
                        break;
                runner_read(r, &b, &(int64_t){ 0 });
        }
        task_budget_end(port, &b);
}

/* A thread that really waits is parked on the port (not a dequeue posted ahead). */
static bool port_has_waiter(const struct port *port)
{
        const struct sn_list *pos;

        for (pos = port->waiters.next; pos != &port->waiters; pos = pos->next)
                if (!sn_list_entry(pos, struct wait, port_link)->ahead)
                        return true;
        return false;
}

/* Entries are there to hand out (readiness is harvested for one when none is queued). */
static bool port_has_work(struct port *port)
{
        if (!port->nqueued)
                port_harvest(port, 1);
        return port->nqueued > 0;
}

bool port_check_runners(struct port *port)
{
        if (port->nrunning < port->concurrency)
                return true;
        if (!port_has_work(port))
                return port_may_run(port);
        /* The readings relied on first, then a pass with what the budget has left. */
        if (port->nblocked)
                port_confirm_blocked(port);
        if (mono_ms_since(&port->checked) >= (int64_t)SN_MAX(port->stall_ms, STALL_FIRST_MS))
                port_read_runners(port);
        /* Readings relied on have lapsed and the budget did not renew them all: the next pass
         * soon, when the bucket has filled again, not at the slow period. */
        if (port_blocked_stale(port))
                port->stall_ms = STALL_FIRST_MS;
        return port_may_run(port);
}

/* Arms the stall timer while the port is stalled, stops it when not. */
static void port_stall_update(struct port *port)
{
        bool stalled = !port_may_run(port) && port->nqueued && port->nrunning &&
                       port_has_waiter(port);

        if (!stalled) {
                if (port->stall_armed)
                        evtimer_del(&port->stall_timer);
                port->stall_armed = false;
                if (!port->nwaiters || !port->nqueued)
                        port->stall_ms = STALL_FIRST_MS;
                return;
        }
        if (!port->stall_armed) {
                struct timeval tv = {
                        0, (suseconds_t)SN_MAX(port->stall_ms, STALL_FIRST_MS) * 1000
                };

                port->stall_armed = evtimer_add(&port->stall_timer, &tv) == 0;
        }
}

static void port_stall_cb(evutil_socket_t fd, short what, void *arg)
{
        struct port *port = arg;

        port->stall_armed = false;
        port->checked = (struct timespec){ 0 }; /* a pass is due */
        port_dispatch(port);
}

/* The runner of (session, thread) on port, made when new; NULL when it already ran there or
 * is not recorded (see port_mark_running()). */
static struct runner *runner_new(struct port *port, struct session *session, uint32_t thread)
{
        struct runner *r;
        struct sn_list *pos, *tmp;

        /* Looked up on the session, whose list is bounded below; the port's list grows
         * with every session holding the port. */
        sn_list_foreach_safe(pos, tmp, &session->runners) {
                r = sn_list_entry(pos, struct runner, conn_link);
                if (r->port == port && r->thread == thread)
                        return NULL;
        }
        /* Thread ids are the client's numbers and concurrency can be 2^32-1: a session
         * running more threads than it may park calls (max-waits) has the rest not recorded,
         * as when out of memory, so what it makes the daemon hold and scan stays bounded.
         * Only its own ports (per user) run more threads than asked. */
        if (session->nrunners >= session->srv->limits.max_waits)
                return NULL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return NULL; /* it then simply does not count: never blocks anyone */
        r->session = session;
        r->port = port;
        r->thread = thread;
        r->answer = session_answer_mark(session); /* its entries' answer is the next one */
        sn_list_add_tail(&port->runners, &r->port_link);
        sn_list_add_tail(&session->runners, &r->conn_link);
        session->nrunners++;
        port->nrunning++;
        live_runner(r);
        return r;
}

void port_mark_running(struct port *port, struct session *session, uint32_t thread)
{
        runner_new(port, session, thread);
}

void port_mark_restored(struct port *port, struct session *session, uint32_t thread)
{
        struct runner *r = runner_new(port, session, thread);

        /* Its answer went out before the restart: somewhere before the end of what was sent,
         * as for an answer that waited in the queue. */
        if (r)
                r->answer.queued = true;
}

void runner_free(struct runner *r)
{
        sn_list_del(&r->port_link);
        sn_list_del(&r->conn_link);
        live_runner_gone(r);
        runner_set_blocked(r, false);
        r->session->nrunners--;
        r->port->nrunning--;
        free(r);
}

void runner_release(struct session *session, uint32_t thread, struct port *no_dispatch)
{
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &session->runners) {
                struct runner *r = sn_list_entry(pos, struct runner, conn_link);
                struct port *p = r->port;

                if (r->thread != thread)
                        continue;
                runner_free(r);
                if (p->nwaiters && p != no_dispatch)
                        port_dispatch(p);
        }
}

void port_queue_reg(struct port *port, struct reg *g, uint32_t events)
{
        if (g->queued) {
                g->pkt.events |= events;
                live_reg_queued(g);
                return;
        }
        g->pkt.key = g->key;
        g->pkt.overlapped = 0;
        g->pkt.events = events;
        g->pkt.epoch = port->epoch;
        g->pkt.seq = live_packet_seq(port->srv);
        sn_list_add_tail(&port->queue, &g->pkt.link);
        g->queued = true;
        port->nqueued++;
        port->srv->nqueued++;
        live_reg_queued(g);
}

int port_post(struct port *port, struct session *session, const uint8_t *items, uint32_t n)
{
        struct server *srv = port->srv;
        struct user *u = port->user;
        struct sn_list batch = SN_LIST_INIT(batch);

        if (n > srv->limits.max_posted || port->nposted > srv->limits.max_posted - n) {
                server_log_refusal(srv, session, session->uid, "max-posted");
                return -EDQUOT;
        }
        if (n > srv->limits.max_posted_per_user || u->nposted > srv->limits.max_posted_per_user - n) {
                u->refused++;
                server_log_refusal(srv, session, session->uid, "max-posted-per-user");
                return -EDQUOT;
        }
        if (user_check_posted(srv, u, session, n) < 0)
                return -EDQUOT;
        for (uint32_t i = 0; i < n; i++) {
                struct snw_packet in;
                struct packet *pkt = malloc(sizeof(struct posted));

                if (!pkt) {
                        while (!sn_list_empty(&batch)) {
                                struct packet *q = sn_list_first(&batch, struct packet, link);
                                sn_list_del(&q->link);
                                free(q);
                        }
                        return -ENOMEM;
                }
                items = snw_packet_decode(items, &in);
                pkt->key = in.key;
                pkt->overlapped = in.overlapped;
                pkt->events = in.bytes;
                pkt->kind = SN_PROTO_KIND_POSTED;
                pkt->epoch = port->epoch;
                pkt->seq = 0;
                posted_of(pkt)->jr = 0;
                sn_list_add_tail(&batch, &pkt->link);
        }
        while (!sn_list_empty(&batch)) {
                struct sn_list *l = batch.next;
                sn_list_del(l);
                sn_list_add_tail(&port->queue, l);
                sn_list_entry(l, struct packet, link)->seq = live_packet_seq(srv);
                live_posted(port, sn_list_entry(l, struct packet, link));
        }
        port->nposted += n;
        user_charge_posted(u, n);
        port->nqueued += n;
        srv->nqueued += n;
        return 0;
}

/* One epoll_wait; returns how many events it returned and adds the new packets to *ret_new.
 * *ret_again counts registrations that left the fresh state (rule 14): the kernel re-polled
 * them and they are on the ready list again, to be read before the caller answers.
 * *ret_quiet counts events that reported nothing (an EDGE OUT side woken by a FIN while OUT
 * held, a condition already reported): they left the ready list, and what is behind them may
 * be new. */
static int harvest_once(struct port *port, uint32_t want, uint32_t *ret_new, uint32_t *ret_again,
                        uint32_t *ret_quiet)
{
        struct server *srv = port->srv;
        int n;

        /* What is queued must be in epoll before it is asked; the re-arms made while
         * translating go in one batch, done before the next epoll_wait. */
        epctl_flush(srv->epctl);
        n = epoll_wait(port->epfd, srv->evbuf, (int)SN_MIN(want, srv->evcap), 0);
        epctl_begin(srv->epctl);
        for (int i = 0; i < n; i++) {
                bool out_side, was_fresh;
                struct reg *g = reg_of_epoll(srv, srv->evbuf[i].data.u64, &out_side);
                uint32_t m;

                if (!g)
                        continue;
                was_fresh = g->fresh;
                m = reg_translate(g, srv->evbuf[i].events, out_side);
                if (was_fresh && !g->fresh)
                        (*ret_again)++;
                if (!m) {
                        (*ret_quiet)++;
                        continue;
                }
                if (!g->queued)
                        (*ret_new)++;
                port_queue_reg(port, g, m);
        }
        epctl_end(srv->epctl);
        return n;
}

/*
 * A zero-timeout dequeue is answered from what this harvest finds, so it must see every
 * condition that began before it (rule 16).  A round whose events all reported nothing is no
 * reason to stop: an EDGE registration with OUT and IN or HANGUP has two items, and the peer's
 * FIN wakes both, the OUT side (nothing new to say, OUT held) possibly ahead of the IN side
 * (IN|HANGUP) on the ready list; asked for one event, the harvest stopped on the OUT side and
 * the dequeue found nothing.  An item is on the ready list at most once, and one that reported
 * nothing has left it (edge-triggered, or made quiet or parked by reg_translate()); reading
 * past at most twice as many quiet events as the port has registrations (two items each)
 * reaches everything that was ready, and keeps an item that might come back from holding the
 * harvest.
 */
void port_harvest(struct port *port, uint32_t want)
{
        struct server *srv = port->srv;
        uint64_t quiet_left = 2 * (uint64_t)port->nregs;
        bool wide = false;

        while (want) {
                uint32_t fresh = 0, again = 0, quiet = 0;
                /* Past quiet events, a whole buffer at a time: one epoll_wait() per quiet event
                 * would let a client's registrations set the system calls a request costs. */
                uint32_t ask = wide ? srv->evcap : SN_MIN(want, srv->evcap);
                int n = harvest_once(port, ask, &fresh, &again, &quiet);
                bool read_on = quiet && quiet_left;

                wide = wide || read_on;
                quiet_left -= SN_MIN(quiet_left, quiet);
                /* Stop when the ready list is exhausted or only re-reported old packets, unless
                 * a registration just left the fresh state: what it reports now (a connect
                 * completing: OUT) belongs to this dequeue, not the next one; or unless some
                 * events reported nothing: what follows them may be new. */
                if ((n < (int)ask || (!fresh && !read_on)) && !again)
                        break;
                want -= SN_MIN(want, fresh);
        }
        if (!sn_list_empty(&port->skips))
                port_harvest_skips(port);
}

void port_harvest_skips(struct port *port)
{
        struct server *srv = port->srv;

        /* Each EDGE registration enabled while ready is on the ready list now; its report
         * is trimmed by reg_translate().  Level-triggered items come back round-robin, so a
         * bounded number of rounds reaches every item of the list. */
        for (unsigned round = 0; round < 64 && !sn_list_empty(&port->skips); round++) {
                uint32_t fresh = 0, again = 0, quiet = 0;

                if (harvest_once(port, srv->evcap, &fresh, &again, &quiet) < (int)srv->evcap &&
                    !again)
                        break;
        }
        /* An item not reported is no longer ready: its skip must not hide a later edge. */
        while (!sn_list_empty(&port->skips))
                reg_skip_clear(sn_list_first(&port->skips, struct reg, skip_link));
}

static uint8_t *put_entry(uint8_t *out, uint64_t key, uint64_t ov, uint32_t events, uint32_t kind)
{
        struct snw_entry e = { .key = key, .overlapped = ov, .events = events, .kind = kind };

        return snw_entry_encode(out, &e);
}

uint32_t port_take(struct port *port, uint8_t *out, uint32_t max)
{
        struct server *srv = port->srv;
        uint32_t n = 0;

        port->epoch++; /* packets harvested before this call are re-checked */
        live_port_epoch(port);
        if (max > port->nqueued)
                port_harvest(port, max - port->nqueued);
        while (n < max && !sn_list_empty(&port->queue)) {
                struct packet *pkt = sn_list_first(&port->queue, struct packet, link);

                sn_list_del(&pkt->link);
                port->nqueued--;
                srv->nqueued--;
                if (pkt->kind == SN_PROTO_KIND_POSTED) {
                        out = put_entry(out, pkt->key, pkt->overlapped, pkt->events,
                                        SN_PROTO_KIND_POSTED);
                        port->nposted--;
                        user_charge_posted(port->user, -1);
                        srv->counters.posted_delivered++;
                        live_posted_gone(srv, pkt);
                        free(pkt);
                        n++;
                        continue;
                }

                struct reg *g = SN_CONTAINER_OF(pkt, struct reg, pkt);
                uint32_t events = pkt->events;

                g->queued = false;
                live_reg_queued(g);
                if (g->state == REG_REMOVING) {
                        /* Row 61: the REMOVE packet is the last one for its key. */
                        out = put_entry(out, pkt->key, 0, events, SN_PROTO_KIND_SOCKET);
                        reg_free(g);
                        srv->counters.notifications++;
                        n++;
                        continue;
                }
                if (pkt->epoch != port->epoch && g->state == REG_ENABLED &&
                    !(g->trigger & SN_TRIGGER_EDGE)) {
                        events = reg_recheck(g);
                        if (!events) {
                                if (g->trigger & SN_TRIGGER_ONESHOT)
                                        reg_rearm(g);
                                continue;
                        }
                }
                out = put_entry(out, pkt->key, server_reg_handle(srv, g->slot), events,
                                SN_PROTO_KIND_SOCKET);
                /* A one-shot is disarmed from now until its next ENABLE (told by PORT_TAKE). */
                if (g->trigger & SN_TRIGGER_ONESHOT) {
                        g->fired = true;
                        live_reg_fired(g);
                }
                srv->counters.notifications++;
                n++;
        }
        return n;
}

static bool runs_on(const struct port *port, const struct session *session, uint32_t thread)
{
        const struct sn_list *pos;

        for (pos = session->runners.next; pos != &session->runners; pos = pos->next) {
                const struct runner *r = sn_list_entry(pos, struct runner, conn_link);

                if (r->port == port && r->thread == thread)
                        return true;
        }
        return false;
}

struct wait *port_wait_ahead(struct port *port, struct session *session, uint32_t thread)
{
        struct sn_list *pos;

        for (pos = session->waits.next; pos != &session->waits; pos = pos->next) {
                struct wait *w = sn_list_entry(pos, struct wait, conn_link);

                if (w->ahead && w->port == port && w->thread == thread && !w->detached)
                        return w;
        }
        return NULL;
}

/*
 * The waiter the next entries go to, or NULL.  A thread that waits comes first, the most recent
 * one, while fewer than concurrency threads run.  A dequeue posted ahead gets
 * entries only when no such waiter may take them: when nobody waits, or when concurrency is
 * reached and its thread is one of those running (it keeps its place, the count does not
 * change); so it takes nothing a waiting thread would have been given.  The scan is over the
 * port's waiting calls, never over its registrations.
 */
static struct wait *dispatch_pick(struct port *port)
{
        bool may_run = port_may_run(port);
        struct wait *ahead = NULL;
        struct sn_list *pos;

        for (pos = port->waiters.next; pos != &port->waiters; pos = pos->next) {
                struct wait *w = sn_list_entry(pos, struct wait, port_link);

                if (!w->ahead) {
                        if (may_run)
                                return w;
                } else if (!ahead && (may_run || runs_on(port, w->session, w->thread))) {
                        ahead = w;
                        if (!may_run)
                                return w;
                }
        }
        return ahead;
}

void port_dispatch(struct port *port)
{
        struct server *srv = port->srv;
        struct wait *w;

        /* No free slot: the runners' state may free one for a thread that waits. */
        if (port->nrunning >= port->concurrency && port->nwaiters && port_has_waiter(port))
                port_check_runners(port);
        /* A waiter's session is alive here: its kill takes dead ones off the list.  If the
         * answer's send kills it, the entries go with it, as with any waiter that dies. */
        while ((w = dispatch_pick(port))) {
                /* A call posted ahead while other threads run too takes its share only: what
                 * it holds waits for its one thread, while the others may be free first. */
                uint32_t max = w->ahead && port->nrunning > 1
                                       ? SN_MAX(w->max_entries / port->nrunning, 1u)
                                       : w->max_entries;
                uint32_t n = port_take(port, srv->ebuf, max);

                if (!n)
                        break;
                port_mark_running(port, w->session, w->thread);
                session_reply_process(w->session, w->id, 0, w->results, w->nresults, srv->ebuf, n);
                wait_free(w);
        }
        port_stall_update(port);
}

/*
 * A wait ends at or after its deadline, never before (row 20).  libevent times its events with
 * CLOCK_MONOTONIC_COARSE, which runs up to a scheduler tick (4 ms at HZ=250) behind the real
 * clock, and adds the delay to the time it cached when the loop woke; so its timer may fire a
 * few milliseconds before the deadline read from CLOCK_MONOTONIC when the request arrived.  The
 * deadline decides: a timer that fired early is armed again for what is left, rounded up to a
 * microsecond.
 */
static void wait_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
        struct wait *w = arg;
        struct timespec now;
        int64_t left;

        clock_gettime(CLOCK_MONOTONIC, &now);
        left = (int64_t)(w->deadline.tv_sec - now.tv_sec) * 1000000000 +
               (w->deadline.tv_nsec - now.tv_nsec);
        if (left > 0) {
                int64_t us = (left + 999) / 1000;
                struct timeval tv = { .tv_sec = (time_t)(us / 1000000),
                                      .tv_usec = (suseconds_t)(us % 1000000) };

                /* evtimer_add() fails only for a bad timeval: then the wait ends now. */
                if (evtimer_add(&w->timer, &tv) == 0)
                        return;
        }
        w->timer_armed = false;
        wait_cancel(w, ETIMEDOUT);
}

int port_wait_check(struct session *session, uint32_t n)
{
        struct server *srv = session->srv;
        struct user *u = session->user;
        size_t size = sizeof(struct wait) + (size_t)n * sizeof(uint32_t);
        const char *limit = NULL;

        if (srv->restoring)
                return 0;
        if (session->nwaits >= srv->limits.max_waits)
                limit = "max-waits";
        else if (u->nwaits >= srv->limits.max_waits_per_user)
                limit = "max-waits-per-user";
        else if (u->output + size > srv->limits.max_output_per_user)
                limit = "max-output-per-user";
        else if (user_check_waits(srv, u, session, 1) < 0)
                return -EDQUOT;
        else
                return user_check_output(srv, u, session, size);
        if (strstr(limit, "per-user"))
                u->refused++;
        server_log_refusal(srv, session, session->uid, limit);
        return -EDQUOT;
}

int port_wait(struct port *port, struct session *session, uint32_t id, uint32_t thread,
              uint32_t max_entries, uint32_t timeout_ms, bool ahead, const uint32_t *results,
              uint32_t n)
{
        size_t size = sizeof(struct wait) + (size_t)n * sizeof(uint32_t);
        size_t head = sn_msg_size(SN_MSG_PROCESS_REPLY, n, 0);
        struct wait *w;
        int r;

        if (session->dead)
                return -EPIPE; /* killed by a send earlier in this request: nobody to answer */
        /* Its answer is one message to this session: no more entries than that holds after
         * the results.  A wait the restore makes again was sized by the image that took it,
         * which may have let the session's messages be larger (a journal that did not keep
         * its connections' limits); the entries are taken into a buffer of this size. */
        if (head >= session->max_message)
                return -E2BIG;
        max_entries = (uint32_t)SN_MIN((size_t)max_entries,
                                       (session->max_message - head) / SN_WIRE_SIZE_entry);
        r = port_wait_check(session, n);
        if (r < 0)
                return r;
        w = malloc(size);
        if (!w)
                return -ENOMEM;
        w->detached = false;
        w->ahead = ahead;
        if (ahead)
                timeout_ms = SN_PROTO_INFINITE;
        w->jr = 0;
        w->charge = size;
        w->session = session;
        w->port = port;
        w->id = id;
        w->thread = thread;
        w->max_entries = max_entries;
        w->nresults = n;
        if (n)
                memcpy(w->results, results, (size_t)n * sizeof(uint32_t));
        w->timer_armed = false;
        w->timeout_ms = timeout_ms;
        if (timeout_ms != SN_PROTO_INFINITE) {
                struct timeval tv = deadline_in(&w->deadline, timeout_ms);

                evtimer_assign(&w->timer, session->srv->base, wait_timeout_cb, w);
                if (evtimer_add(&w->timer, &tv) < 0) {
                        free(w);
                        return -ENOMEM;
                }
                w->timer_armed = true;
        }
        sn_list_add_head(&port->waiters, &w->port_link);
        port->nwaiters++;
        port_watch(port);
        sn_list_add_tail(&session->waits, &w->conn_link);
        session->nwaits++;
        session->srv->nwaits++;
        user_charge_waits(session->user, 1);
        user_charge_output(session->user, (int64_t)w->charge);
        live_wait(w);
        return 0;
}

void wait_detach(struct wait *w)
{
        if (w->detached)
                return;
        if (w->timer_armed)
                evtimer_del(&w->timer);
        w->timer_armed = false;
        sn_list_del(&w->port_link);
        w->port->nwaiters--;
        w->detached = true;
}

void wait_free(struct wait *w)
{
        struct session *c;

        if (!w)
                return;
        c = w->session;
        live_wait_gone(w);
        wait_detach(w);
        sn_list_del(&w->conn_link);
        c->nwaits--;
        c->srv->nwaits--;
        user_charge_waits(c->user, -1);
        user_charge_output(c->user, -(int64_t)w->charge);
        free(w);
}

void wait_cancel(struct wait *w, uint32_t status)
{
        /* The send may kill the session; w stays ours to free (a kill frees nothing). */
        session_reply_process(w->session, w->id, status, w->results, w->nresults, NULL, 0);
        wait_free(w);
}

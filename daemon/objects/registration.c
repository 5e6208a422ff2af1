/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * registration.c - one registration: a socket on a port, its filter, triggers and state.
 *
 * The kernel does the readiness work.  Each registration is an item of its port's epoll set:
 * LEVEL maps to level-triggered epoll, EDGE to EPOLLET, LEVEL+ONESHOT to EPOLLONESHOT (disarmed
 * by the kernel when the packet is harvested, which is when it is queued: rule 11).  What epoll
 * does not express is handled here, where the events are translated:
 *
 *  - Rule 15 / row 39: EDGE must not report a condition that already holds at ENABLE, but
 *    EPOLL_CTL_ADD/MOD put an item that is ready on the ready list at once.  The events that hold
 *    at ENABLE are recorded in edge_skip and removed from the items' first reports, which the
 *    caller harvests before the request is answered (port.c), so no genuine edge can merge
 *    into it in between.  EDGE+ONESHOT is disarmed by leaving epoll, because re-arming a
 *    kernel ONESHOT item re-polls it and would report the old condition again.
 *  - Rule 15: EDGE reports a condition when it starts to hold, not every condition that holds
 *    when the socket wakes.  An edge-triggered epoll item is queued by the kernel only for
 *    wake-ups whose key meets its interest (or that carry no key: state changes), so an EDGE
 *    registration whose filter has OUT and IN or HANGUP gets two items: the IN/HANGUP side on
 *    fd, the OUT side on a duplicate (out_fd; epoll tells items apart by descriptor).  Data
 *    arriving then wakes only the IN side.  Key-less wake-ups (connect done, FIN, reset, local
 *    shutdown) still reach the OUT side: it reports OUT only if OUT did not hold at its last
 *    look (a connect completing, a full buffer seen) or if no new hang-up or error bit appeared
 *    (then the wake-up was buffer space freeing).  HANGUP is reported once per ENABLE.  The
 *    duplicate counts against the user's socket quota; LEVEL registrations never have one.
 *  - Rule 14: a never-connected stream socket polls as OUT|HUP on Linux.  Such a registration
 *    waits edge-triggered, reporting nothing, until the socket changes state (connect progress,
 *    an error, listen()); then it switches to its real mode, and the kernel's re-poll reports
 *    what holds.
 *  - Row 51 / rule 6: HANGUP only for stream sockets, from EPOLLRDHUP or EPOLLHUP.
 *  - Row 50: HANGUP means the peer ended the connection or it was torn down, but a local
 *    shutdown(SHUT_RD) gives EPOLLRDHUP and a local SHUT_RDWR EPOLLHUP as well.  When a report
 *    has either bit, the connection's state decides (common/hangup.h, one getsockopt paid only
 *    then); a hang-up that is only local is taken out of the report (peer_hangup()).  The
 *    peer's FIN that comes later wakes the socket again and is reported then.  A LEVEL item
 *    left with nothing to report would come back at every harvest, and a LEVEL+ONESHOT one
 *    re-armed would wake the loop at once, again and again: such an item waits
 *    edge-triggered (PARK_QUIET) until a wake-up reports something, then goes back to LEVEL
 *    (or, ONESHOT, leaves epoll as EDGE+ONESHOT does).
 *  - Row 49: a socket in error that is hung up (failed connect, reset) reports ERR without OUT.
 *  - A hung-up socket whose filter can report nothing (filter NONE) would come back from a
 *    level-triggered epoll forever: it is taken out of epoll ("parked") until enabled again.
 *
 * Inside a batch window (epctl_begin(), opened around a PROCESS's items and a harvest's
 * translations) the epoll_ctl of a registration's own item is queued, not made: the
 * registration is updated as if it succeeded, and reg_epoll_done() puts it back as a failed
 * call leaves it when the result says so.  A registration has at most one queued operation;
 * anything that needs it done (a second operation, freeing it, closing its descriptors) flushes
 * the batch first (reg_epq_settle()).  That flush may free a registration its ENABLE made, so a
 * caller that holds one with an operation queued settles it before any use (reg_apply()).  The
 * EDGE OUT side's item is always made at once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <linux/tcp.h>

#include "common/hangup.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/closer.h"
#include "daemon/base/epctl.h"
#include "daemon/objects/persist.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/registry.h"
#include "daemon/objects/session.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "proto/codec.h"
#include "socknotify.h"

/* From the kernel's include/net/tcp_states.h. */
#define SN_TCP_CLOSE 7
#define SN_TCP_LISTEN 10

/* The OUT side's epoll item carries its registration's slot with this bit (slots are 32-bit). */
#define EPOLL_OUT_SIDE ((uint64_t)1 << 32)

/* The OUT side's hang-up/error state bits. */
#define EDGE_ST_RDHUP 0x01
#define EDGE_ST_HUP 0x02
#define EDGE_ST_ERR 0x04
#define EDGE_ST_PEER 0x08 /* the hang-up is the peer's (row 50), not only a local shutdown */

/* What a queued epoll_ctl is for (reg->epq). */
enum {
        EPQ_NONE,
        EPQ_ENABLE, /* an ENABLE's ADD or MOD: failing, the registration ends DISABLED */
        EPQ_REARM,  /* a re-arm while translating: failing, only logged (as made at once) */
        EPQ_DEL,    /* leaving epoll: failing, only logged */
};

/* Whatever g has queued is done and its result applied. */
static void reg_epq_settle(struct reg *g)
{
        if (g->epq)
                epctl_flush(g->port->srv->epctl);
}

/* ev: epoll's bits; seen: the same after peer_hangup(). */
static uint8_t edge_state(uint32_t ev, uint32_t seen)
{
        return (uint8_t)((ev & EPOLLRDHUP ? EDGE_ST_RDHUP : 0) | (ev & EPOLLHUP ? EDGE_ST_HUP : 0) |
                         (ev & EPOLLERR ? EDGE_ST_ERR : 0) |
                         (seen & (EPOLLRDHUP | EPOLLHUP) ? EDGE_ST_PEER : 0));
}

/* EDGE with OUT and IN or HANGUP in the filter: the OUT side has its own epoll item. */
static bool reg_split(const struct reg *g)
{
        return !g->fresh && g->trigger & SN_TRIGGER_EDGE && g->filter & SN_REGISTER_EVENT_OUT &&
               g->filter & (SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP);
}

/* EDGE whose only item reports OUT (filter OUT, without IN and HANGUP). */
static bool reg_out_only(const struct reg *g)
{
        return !g->fresh && g->trigger & SN_TRIGGER_EDGE &&
               (g->filter & SN_REGISTER_EVENTS_ALL) == SN_REGISTER_EVENT_OUT;
}

static uint32_t epoll_interest(const struct reg *g, bool out_side)
{
        uint32_t ev = 0;

        if (out_side)
                /* RDHUP is never a wake-up key: it only shows the state in the report. */
                return EPOLLOUT | (g->stream ? EPOLLRDHUP : 0) | EPOLLET;
        if (g->filter & SN_REGISTER_EVENT_IN)
                ev |= EPOLLIN;
        if (g->filter & SN_REGISTER_EVENT_OUT && !reg_split(g))
                ev |= EPOLLOUT;
        if (g->stream && (g->filter & SN_REGISTER_EVENT_HANGUP || reg_out_only(g)))
                ev |= EPOLLRDHUP;
        if (g->fresh)
                return ev | EPOLLET;
        if (g->trigger & SN_TRIGGER_EDGE)
                ev |= EPOLLET;
        else if (g->parked == PARK_QUIET)
                /* Not ONESHOT: re-arming would re-poll it, and it would come back at once. */
                ev |= EPOLLET;
        else if (g->trigger & SN_TRIGGER_ONESHOT)
                ev |= EPOLLONESHOT;
        return ev;
}

struct reg *reg_of_epoll(const struct server *srv, uint64_t data, bool *ret_out_side)
{
        *ret_out_side = data & EPOLL_OUT_SIDE;
        return server_slot_reg(srv, data & ~EPOLL_OUT_SIDE);
}

static void reg_out_close(struct reg *g)
{
        if (g->out_fd < 0)
                return;
        if (g->out_in_epoll && g->port->epfd >= 0) {
                int r = epctl_now(g->port->srv->epctl, g->port->epfd, EPOLL_CTL_DEL, g->out_fd,
                                  NULL);

                if (r < 0)
                        log_warning("epoll_ctl(DEL) of a registration's OUT item failed: %s",
                                    strerror(-r));
        }
        g->out_in_epoll = false;
        g->out_fd = closer_close(g->out_fd);
        user_charge_sockets(g->port->user, -1);
}

/* Makes the OUT side's duplicate if there is none.  Returns 0, -EDQUOT or -EMFILE... */
static int reg_out_open(struct reg *g)
{
        struct server *srv = g->port->srv;

        if (g->out_fd >= 0)
                return 0;
        /* The duplicate is a socket the daemon holds for the user (quota, EMFILE). */
        if (g->port->user->nsockets >= srv->limits.max_sockets_per_user && !srv->restoring) {
                g->port->user->refused++;
                server_log_refusal(srv, g->creator, g->port->uid, "max-sockets-per-user");
                return -EDQUOT;
        }
        if (user_check_fds(srv, g->port->user, g->creator, 1) < 0)
                return -EDQUOT;
        g->out_fd = fcntl(g->fd, F_DUPFD_CLOEXEC, 0);
        if (g->out_fd < 0) {
                g->out_fd = -1;
                return -errno;
        }
        user_charge_sockets(g->port->user, 1);
        return 0;
}

/* Puts g's items in epoll as its filter and triggers say.  why (EPQ_ENABLE or EPQ_REARM) lets
 * the item on fd be queued in an open batch window when g has no OUT side; later is the result
 * an EPQ_ENABLE's failure sets.  Returns 0 (queued or done) or a negative errno. */
static int reg_epoll_update(struct reg *g, uint8_t why, uint32_t *later)
{
        struct epoll_event e = { .events = epoll_interest(g, false), .data.u64 = g->slot };
        int op, r;

        reg_epq_settle(g);
        if (reg_split(g)) {
                r = reg_out_open(g);
                if (r < 0)
                        return r;
        } else {
                reg_out_close(g);
        }
        op = g->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
        if (g->out_fd < 0 && why != EPQ_NONE) {
                r = epctl_ctl(g->port->srv->epctl, g->port->epfd, op, g->fd, &e, g->slot, later);
                if (r == 1) {
                        g->epq = why;
                        g->epq_add = op == EPOLL_CTL_ADD;
                        g->epq_parked = g->parked;
                        g->in_epoll = true;
                        if (g->parked == PARK_OUT)
                                g->parked = PARK_NONE;
                        return 0;
                }
        } else {
                r = epctl_now(g->port->srv->epctl, g->port->epfd, op, g->fd, &e);
        }
        if (r < 0)
                return r;
        g->in_epoll = true;
        if (g->parked == PARK_OUT)
                g->parked = PARK_NONE;
        if (g->out_fd >= 0) {
                e = (struct epoll_event){ .events = epoll_interest(g, true),
                                          .data.u64 = g->slot | EPOLL_OUT_SIDE };
                r = epctl_now(g->port->srv->epctl, g->port->epfd,
                              g->out_in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, g->out_fd, &e);
                if (r < 0)
                        return r;
                g->out_in_epoll = true;
        }
        return 0;
}

static void reg_epoll_remove(struct reg *g)
{
        int r;

        reg_epq_settle(g);
        if (g->out_in_epoll) {
                g->out_in_epoll = false;
                r = g->port->epfd >= 0 ? epctl_now(g->port->srv->epctl, g->port->epfd,
                                                   EPOLL_CTL_DEL, g->out_fd, NULL)
                                       : 0;
                if (r < 0)
                        log_warning("epoll_ctl(DEL) of a registration's OUT item failed: %s",
                                    strerror(-r));
        }
        if (!g->in_epoll)
                return;
        g->in_epoll = false;
        if (g->port->epfd < 0)
                return; /* the port's epoll instance is gone, and every item with it */
        r = epctl_ctl(g->port->srv->epctl, g->port->epfd, EPOLL_CTL_DEL, g->fd, NULL, g->slot,
                      NULL);
        if (r == 1)
                g->epq = EPQ_DEL;
        else if (r < 0)
                log_warning("epoll_ctl(DEL) of a registered socket failed: %s", strerror(-r));
}

void reg_epoll_done(void *ctx, uint64_t cookie, void *arg, int res)
{
        struct reg *g = server_slot_reg(ctx, cookie);
        uint32_t *later = arg;
        uint8_t why;
        bool made;

        if (!g || !g->epq)
                return; /* cannot happen: a registration is freed only after its result */
        why = g->epq;
        made = g->epq_new;
        g->epq = EPQ_NONE;
        g->epq_new = false;
        if (res >= 0)
                return;
        if (why == EPQ_DEL) {
                log_warning("epoll_ctl(DEL) of a registered socket failed: %s", strerror(-res));
                return;
        }
        /* As a call made at once that failed leaves it (reg_epoll_update()). */
        if (g->epq_add)
                g->in_epoll = false;
        g->parked = g->epq_parked;
        if (why == EPQ_REARM) {
                log_warning("epoll_ctl re-arming a registration failed: %s", strerror(-res));
                return;
        }
        /* A failed ENABLE (reg_configure()): DISABLED, its errno the item's result, and a
         * registration it made is gone again (reg_create()). */
        g->state = REG_DISABLED;
        reg_skip_clear(g);
        if (later)
                *later = (uint32_t)-res;
        if (made)
                reg_free(g);
        else
                live_reg(g);
}

void reg_disarm(struct reg *g)
{
        reg_epoll_remove(g);
        g->fired = true;
        live_reg_fired(g);
}

void reg_rearm(struct reg *g)
{
        int r = reg_epoll_update(g, EPQ_REARM, NULL);

        if (r < 0)
                log_warning("epoll_ctl re-arming a registration failed: %s", strerror(-r));
}

void reg_skip_clear(struct reg *g)
{
        g->edge_skip = 0;
        sn_list_del(&g->skip_link);
}

/* A TCP socket whose connect failed: closed, and at most one segment (the RST) ever came in,
 * where an established connection got at least the SYN-ACK before its end. */
static bool connect_failed(int fd)
{
        struct tcp_info ti;
        socklen_t len = sizeof(ti);

        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
            len < offsetof(struct tcp_info, tcpi_segs_in) + sizeof(ti.tcpi_segs_in))
                return false;
        return ti.tcpi_state == SN_TCP_CLOSE && ti.tcpi_segs_in <= 1;
}

/* Row 50: ev without its hang-up bits when they show only a local shutdown of a stream socket
 * (common/hangup.h); the getsockopt() is paid only when a hang-up bit is there. */
static uint32_t peer_hangup(const struct reg *g, uint32_t ev)
{
        if (!g->stream || !(ev & (EPOLLRDHUP | EPOLLHUP)) || sn__hangup_is_peers(g->fd))
                return ev;
        return ev & ~(uint32_t)(EPOLLRDHUP | EPOLLHUP);
}

/* Readiness bits as the registration reports them, without side effects; ev has been through
 * peer_hangup(). */
static uint32_t raw_bits(const struct reg *g, uint32_t ev)
{
        uint32_t m = 0;

        if (ev & EPOLLIN && g->filter & SN_REGISTER_EVENT_IN)
                m |= SN_EVENT_IN;
        if (ev & EPOLLOUT && g->filter & SN_REGISTER_EVENT_OUT)
                m |= SN_EVENT_OUT;
        if (g->stream && ev & (EPOLLRDHUP | EPOLLHUP) && g->filter & SN_REGISTER_EVENT_HANGUP)
                m |= SN_EVENT_HANGUP;
        if (ev & EPOLLERR) {
                m |= SN_EVENT_ERR;
                if (ev & EPOLLHUP)
                        m &= ~SN_EVENT_OUT;
                /* Row 49: a connect that failed reports ERR alone. */
                if (ev & EPOLLHUP && g->stream && connect_failed(g->fd))
                        m = SN_EVENT_ERR;
        }
        return m;
}

static uint32_t poll_now(const struct reg *g)
{
        struct pollfd p = { .fd = g->fd, .events = POLLIN | POLLOUT | POLLRDHUP };

        if (poll(&p, 1, 0) <= 0)
                return 0;
        return (uint32_t)p.revents;
}

/* Rule 14: a stream socket that has never started to connect, is not listening and has no
 * error.  TCP: TCP_INFO says CLOSE and no segment ever went either way.  Unix: no peer. */
static bool sock_is_fresh(int fd)
{
        struct sockaddr_storage ss;
        struct tcp_info ti;
        socklen_t len = sizeof(ss);
        int acc = 0;

        /* A connected socket (the usual case) answers getpeername at once, of any family. */
        if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0 || errno != ENOTCONN)
                return false;
        len = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
                return false;
        if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
                len = sizeof(ti);
                if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
                    len < offsetof(struct tcp_info, tcpi_segs_in) + sizeof(ti.tcpi_segs_in))
                        return false;
                return ti.tcpi_state == SN_TCP_CLOSE && ti.tcpi_segs_out == 0 &&
                       ti.tcpi_segs_in == 0;
        }
        if (ss.ss_family != AF_UNIX)
                return false;
        len = sizeof(acc);
        return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && !acc;
}

static uint32_t check_enable(uint16_t filter, uint8_t trigger, uint8_t *ret_norm)
{
        bool level = trigger & SN_TRIGGER_LEVEL, edge = trigger & SN_TRIGGER_EDGE;
        bool oneshot = trigger & SN_TRIGGER_ONESHOT, persistent = trigger & SN_TRIGGER_PERSISTENT;

        if (filter & ~SN_REGISTER_EVENTS_ALL || trigger & ~SN_TRIGGER_ALL)
                return EINVAL; /* rows 46 */
        if (level == edge)
                return EINVAL; /* row 34 */
        if (oneshot && persistent)
                return EINVAL; /* row 35 */
        /* Rule 2: LEVEL or EDGE alone means PERSISTENT. */
        *ret_norm = (uint8_t)((level ? SN_TRIGGER_LEVEL : SN_TRIGGER_EDGE) |
                              (oneshot ? SN_TRIGGER_ONESHOT : SN_TRIGGER_PERSISTENT));
        return 0;
}

/* (Re)arms an enabled registration.  Returns 0 or a positive errno; with later, the epoll_ctl
 * may be queued and its failure set *later (reg_epoll_update()). */
static uint32_t reg_configure(struct reg *g, uint16_t filter, uint8_t trigger, uint32_t *later)
{
        int r;
        uint32_t holding = 0;

        if (!g->fresh && trigger & SN_TRIGGER_EDGE && filter & SN_REGISTER_EVENT_OUT &&
            filter & (SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP)) {
                /* The duplicate first: without it the registration stays as it was. */
                r = reg_out_open(g);
                if (r < 0)
                        return (uint32_t)-r;
        }
        g->filter = filter;
        g->trigger = trigger;
        g->state = REG_ENABLED;
        g->fired = false;
        reg_skip_clear(g);
        g->hup_seen = false;
        g->out_seen = false;
        g->out_state = 0;
        g->parked = PARK_NONE;
        if (!g->fresh && trigger & SN_TRIGGER_EDGE) {
                uint32_t ev = poll_now(g), seen = peer_hangup(g, ev);

                holding = raw_bits(g, seen) & ~(uint32_t)SN_EVENT_ERR;
                /* After a re-exec or an orderly stop only what held when the last image left
                 * was harvested then: a condition that began in between is a new edge. */
                if (g->port->srv->restore_held_known)
                        holding &= g->port->srv->restore_held;
                g->hup_seen = holding & SN_EVENT_HANGUP;
                g->out_seen = ev & EPOLLOUT && !(ev & EPOLLERR && ev & EPOLLHUP);
                g->out_state = edge_state(ev, seen);
        }
        r = reg_epoll_update(g, later ? EPQ_ENABLE : EPQ_NONE, later);
        if (r < 0) {
                g->state = REG_DISABLED;
                return (uint32_t)-r;
        }
        /* A restore after a crash reports what holds: at least once, never lost.  After a
         * re-exec or an orderly stop what held was harvested into the queue before. */
        if (holding && !g->port->srv->restoring_crash) {
                g->edge_skip = (uint8_t)holding;
                sn_list_add_tail(&g->port->skips, &g->skip_link);
        }
        live_reg(g);
        return 0;
}

uint8_t reg_edge_held(const struct reg *g)
{
        if (g->state != REG_ENABLED || g->fresh || !(g->trigger & SN_TRIGGER_EDGE))
                return 0;
        return (uint8_t)(raw_bits(g, peer_hangup(g, poll_now(g))) & ~(uint32_t)SN_EVENT_ERR);
}

/* type: the socket's SO_TYPE, read by the caller (reg_apply); later as reg_apply's. */
static uint32_t reg_create(struct port *port, struct session *creator, uint64_t dev, uint64_t ino,
                           const struct snw_registration *it, uint16_t filter, uint8_t trigger,
                           int fd, int type, uint32_t *later)
{
        struct server *srv = port->srv;
        struct reg *g;
        uint32_t err;

        /* A client's own connection to this daemon (or another client's): holding it would keep
         * that connection open forever, since its end would never see the daemon's EOF. */
        if (type == SOCK_SEQPACKET && server_is_own_connection(srv, fd)) {
                closer_close(fd);
                return EINVAL;
        }
        g = calloc(1, sizeof(*g));
        if (!g) {
                closer_close(fd);
                return ENOMEM;
        }
        g->port = port;
        g->dev = dev;
        g->ino = ino;
        g->key = it->key;
        g->fd = fd;
        g->out_fd = -1;
        g->client_fd = it->client_fd;
        g->stream = type == SOCK_STREAM || type == SOCK_SEQPACKET;
        g->fresh = g->stream && sock_is_fresh(fd);
        g->state = REG_DISABLED;
        sn_list_init(&g->pkt.link);
        sn_list_init(&g->skip_link);
        sn_list_init(&g->conn_link);
        g->pkt.kind = SN_PROTO_KIND_SOCKET;
        if (server_slot_take(srv, g) < 0) {
                closer_close(fd);
                free(g);
                return ENOMEM;
        }
        if (registry_insert(&srv->registry, g) < 0) {
                server_slot_release(srv, g);
                closer_close(fd);
                free(g);
                return ENOMEM;
        }
        sn_list_add_tail(&port->regs, &g->port_link);
        /* Charged to the port's user: the same as the creator's (only the creator's user can
         * open a port), and still there once a lingering port keeps it without a creator. */
        user_charge_sockets(port->user, 1);
        port->user->nregs++;
        port->nregs++;
        if (creator) {
                g->creator = creator;
                sn_list_add_tail(&creator->regs, &g->conn_link);
        } else {
                reg_orphan(g); /* a crash restore of a registration kept without an owner */
        }
        srv->nregs++;
        err = reg_configure(g, filter, trigger, later);
        if (err)
                reg_free(g);
        else if (g->epq == EPQ_ENABLE)
                g->epq_new = true; /* its ADD is queued: freed again if that fails */
        return err;
}

/* The kernel's identity of a passed socket (never the client's word for it) and its type.
 * Returns 0 or ENOTSOCK. */
static uint32_t socket_identity(int fd, uint64_t *ret_dev, uint64_t *ret_ino, int *ret_type)
{
        struct stat st;
        int type = 0;

        /* SO_TYPE first: it fails at once on anything but a socket, where fstat() of a FUSE
         * file could wait for its server. */
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &(socklen_t){ sizeof(type) }) < 0 ||
            fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
                return ENOTSOCK;
        *ret_dev = st.st_dev;
        *ret_ino = st.st_ino;
        *ret_type = type;
        return 0;
}

/* ENABLE of socket (dev, ino), registered as g or not at all, with fd (or -1) of type: a new
 * registration or a changed one (rule 4).  Consumes fd; returns 0 or the entry's error. */
static uint32_t apply_enable(struct port *port, struct session *session,
                             const struct snw_registration *it, struct reg *g, uint64_t dev,
                             uint64_t ino, int fd, int type, uint32_t *later)
{
        struct server *srv = port->srv;
        uint8_t trigger = 0;
        uint32_t err;

        err = check_enable(it->filter, it->trigger, &trigger);
        if (err)
                goto out;
        if (g && g->port != port && fd < 0) {
                /* By identity only another port's socket is as unknown as an absent one: the
                 * answer must not tell whether others registered it. */
                err = ESTALE;
                goto out;
        }
        if (g) {
                if (g->port != port || g->state == REG_REMOVING) {
                        err = EEXIST; /* row 64, rule 10 */
                        goto out;
                }
                closer_close(fd);
                /* Rule 4: overwrite filter and triggers, keep the original key. */
                return reg_configure(g, it->filter, trigger, later);
        }
        if (fd < 0) {
                err = ESTALE; /* the client must pass the socket itself */
                goto out;
        }
        if (port->nregs >= srv->limits.max_registrations && !srv->restoring) {
                server_log_refusal(srv, session, session->uid, "max-registrations");
                err = EDQUOT;
                goto out;
        }
        if (port->user->nsockets >= srv->limits.max_sockets_per_user && !srv->restoring) {
                session->user->refused++;
                server_log_refusal(srv, session, session->uid, "max-sockets-per-user");
                err = EDQUOT;
                goto out;
        }
        if (user_check_fds(srv, port->user, session, 1) < 0) {
                err = EDQUOT;
                goto out;
        }
        return reg_create(port, session, dev, ino, it, it->filter, trigger, fd, type, later);
out:
        closer_close(fd);
        return err;
}

/* DISABLE of g (NULL: not registered): out of epoll, a packet already queued stays
 * deliverable (rule 3).  Returns 0 or ENOENT. */
static uint32_t apply_disable(struct port *port, struct reg *g)
{
        if (!g || g->port != port || g->state == REG_REMOVING)
                return ENOENT; /* rules 8, 13 */
        reg_epoll_remove(g);
        g->state = REG_DISABLED;
        reg_skip_clear(g);
        live_reg(g);
        return 0;
}

/* REMOVE of g (NULL: not registered): its REMOVE packet is queued, once (rule 8), and the
 * registration is freed when that packet is dequeued.  Returns 0 or ENOENT. */
static uint32_t apply_remove(struct port *port, struct reg *g)
{
        if (!g || g->port != port)
                return ENOENT;
        if (g->state == REG_REMOVING)
                return 0; /* rule 8: no second packet */
        reg_epoll_remove(g);
        reg_skip_clear(g);
        g->state = REG_REMOVING;
        if (g->ownerless) {
                sn_list_del(&g->conn_link);
                g->ownerless = false;
                port->norphans--;
        }
        live_reg(g);
        port_queue_reg(port, g, SN_EVENT_REMOVE);
        return 0;
}

uint32_t reg_apply(struct port *port, struct session *session, const struct snw_registration *it,
                   int fd, uint32_t *later)
{
        uint64_t dev = it->dev, ino = it->ino;
        struct reg *g;
        uint32_t err;
        int type = 0;

        port->srv->counters.registrations_applied++;
        if (it->op == SN_OP_NONE) {
                closer_close(fd); /* row 14: no change */
                return 0;
        }
        if (it->op != SN_OP_ENABLE && it->op != SN_OP_DISABLE && it->op != SN_OP_REMOVE) {
                closer_close(fd);
                return EINVAL; /* row 13 */
        }
        /* The identity of a passed socket is read here, never taken from the client. */
        if (fd >= 0 && socket_identity(fd, &dev, &ino, &type)) {
                closer_close(fd);
                return ENOTSOCK;
        }
        if (it->fd_index == SN_PROTO_BY_HANDLE) {
                /* Named by its handle: only through the slots, checked by generation; a handle
                 * of another port's registration is as unknown as a stale one (below). */
                if (ino)
                        return EINVAL;
                g = server_handle_reg(port->srv, dev);
                dev = g ? g->dev : 0;
                ino = g ? g->ino : 0;
        }
        g = registry_find(&port->srv->registry, dev, ino);
        if (g && g->epq) {
                /* An earlier item of this call queued g's epoll_ctl: its result first, since a
                 * failed ADD of the ENABLE that made g frees g (reg_epoll_done()), and the
                 * settle that any use of g makes would free it under this item. */
                reg_epq_settle(g);
                g = registry_find(&port->srv->registry, dev, ino);
        }
        if (it->op == SN_OP_ENABLE)
                return apply_enable(port, session, it, g, dev, ino, fd, type, later);
        err = it->op == SN_OP_DISABLE ? apply_disable(port, g) : apply_remove(port, g);
        closer_close(fd);
        return err;
}

void reg_free(struct reg *g)
{
        struct port *port;
        struct server *srv;

        if (!g)
                return;
        port = g->port;
        srv = port->srv;
        live_reg_gone(g);
        if (g->queued) {
                sn_list_del(&g->pkt.link);
                g->queued = false;
                port->nqueued--;
                srv->nqueued--;
        }
        reg_epoll_remove(g);
        reg_epq_settle(g); /* its descriptors are closed below */
        reg_out_close(g);
        reg_skip_clear(g);
        registry_remove(&srv->registry, g);
        server_slot_release(srv, g);
        sn_list_del(&g->port_link);
        sn_list_del(&g->conn_link);
        if (g->ownerless)
                port->norphans--;
        user_charge_sockets(port->user, -1);
        port->user->nregs--;
        port->nregs--;
        srv->nregs--;
        closer_close(g->fd);
        free(g);
}

/* EDGE: the bits of one side's report that started to hold (rule 15); updates its state.  ev
 * is epoll's report, seen the same after peer_hangup(). */
static uint32_t edge_bits(struct reg *g, uint32_t ev, uint32_t seen, uint32_t mask, bool out_side)
{
        if (out_side || reg_out_only(g)) {
                bool out = mask & SN_EVENT_OUT;
                uint8_t st = edge_state(ev, seen), appeared = (uint8_t)(st & ~g->out_state);
                uint32_t m = out && (!g->out_seen || !appeared) ? SN_EVENT_OUT : 0;

                g->out_seen = ev & EPOLLOUT && !(ev & EPOLLERR && ev & EPOLLHUP);
                g->out_state = st;
                return out_side ? m : m | (mask & SN_EVENT_ERR);
        }
        if (mask & SN_EVENT_HANGUP) {
                if (g->hup_seen)
                        mask &= ~(uint32_t)SN_EVENT_HANGUP;
                g->hup_seen = true;
        }
        return mask;
}

/* Moves g into or out of the quiet wait (PARK_QUIET) and re-arms it to match.  A MOD that
 * fails, now or when its batch is flushed, leaves g as it was, so the next report tries again
 * instead of finding g marked for a mode the kernel does not have. */
static void reg_set_quiet(struct reg *g, uint8_t parked)
{
        uint8_t was = g->parked;
        int r;

        g->parked = parked;
        r = reg_epoll_update(g, EPQ_REARM, NULL);
        if (r < 0) {
                g->parked = was;
                log_warning("epoll_ctl(MOD) re-arming a registration failed: %s", strerror(-r));
        } else if (g->epq) {
                g->epq_parked = was; /* queued: restored if the batch fails it */
        }
}

uint32_t reg_translate(struct reg *g, uint32_t ev, bool out_side)
{
        uint32_t mask, seen;
        int r;

        if (g->state != REG_ENABLED)
                return 0;
        if (g->fresh) {
                if (!(ev & EPOLLERR) && sock_is_fresh(g->fd))
                        return 0;
                /* Connect progress, an error or listen(): from now on the real mode; the
                 * kernel re-polls on MOD and reports what holds at the next harvest. */
                g->fresh = false;
                r = reg_epoll_update(g, EPQ_REARM, NULL);
                if (r < 0)
                        log_warning("epoll_ctl(MOD) leaving the fresh state failed: %s",
                                    strerror(-r));
                return 0;
        }
        seen = peer_hangup(g, ev);
        mask = raw_bits(g, seen);
        if (g->trigger & SN_TRIGGER_EDGE)
                mask = edge_bits(g, ev, seen, mask, out_side);
        if (g->edge_skip) {
                uint32_t side = out_side ? SN_EVENT_OUT
                                : reg_split(g) ? ~(uint32_t)SN_EVENT_OUT
                                               : ~(uint32_t)0;

                mask &= ~(uint32_t)g->edge_skip;
                g->edge_skip &= (uint8_t)~side;
                if (!g->edge_skip)
                        reg_skip_clear(g);
                if (!mask)
                        return 0;
        }
        if (!mask) {
                /* Only level-triggered items would come back forever; an EDGE side must not
                 * take its other side out of epoll before that one was harvested. */
                if (g->trigger & SN_TRIGGER_EDGE)
                        return 0;
                if ((ev ^ seen) & (EPOLLRDHUP | EPOLLHUP)) {
                        /* A local shutdown holds for good: wait for the next wake-up.  The
                         * MOD re-polls the item once, so nothing that came in between is
                         * lost; that report finds it quiet already. */
                        if (g->parked != PARK_QUIET)
                                reg_set_quiet(g, PARK_QUIET);
                } else if (ev & EPOLLHUP) {
                        reg_epoll_remove(g);
                        g->parked = PARK_OUT;
                } else if (g->trigger & SN_TRIGGER_ONESHOT || g->parked == PARK_QUIET) {
                        /* Nothing was delivered, so the kernel's ONESHOT disarm is undone; an
                         * item no longer shut down is level-triggered again. */
                        reg_set_quiet(g, PARK_NONE);
                }
                return 0;
        }
        if (g->parked == PARK_QUIET) {
                /* Something to report: LEVEL again, so that it repeats while it holds; a
                 * ONESHOT one is disarmed by leaving epoll, as the kernel does not. */
                if (g->trigger & SN_TRIGGER_ONESHOT) {
                        g->parked = PARK_NONE;
                        reg_epoll_remove(g);
                } else {
                        reg_set_quiet(g, PARK_NONE);
                }
        }
        if ((g->trigger & (SN_TRIGGER_EDGE | SN_TRIGGER_ONESHOT)) ==
            (SN_TRIGGER_EDGE | SN_TRIGGER_ONESHOT))
                reg_epoll_remove(g);
        return mask;
}

uint32_t reg_recheck(struct reg *g)
{
        return raw_bits(g, peer_hangup(g, poll_now(g)));
}

int reg_close_socket(struct session *session, uint64_t dev, uint64_t ino, uint32_t client_fd)
{
        struct reg *g = registry_find(&session->srv->registry, dev, ino);

        /* A registration taken over (PORT_TAKE) has no known descriptor number: any of its
         * new owner's will do. */
        if (!g || g->creator != session ||
            (g->client_fd != client_fd && g->client_fd != SN_PROTO_NO_FD))
                return -ENOENT;
        reg_free(g);
        return 0;
}

void reg_orphan(struct reg *g)
{
        struct port *p = g->port;

        sn_list_del(&g->conn_link);
        g->creator = NULL;
        /* One being removed only waits for its REMOVE entry: nothing to take over. */
        if (g->state != REG_REMOVING && !g->ownerless) {
                sn_list_add_tail(&p->orphans, &g->conn_link);
                g->ownerless = true;
                p->norphans++;
        }
        live_reg(g);
}

void reg_adopt_owner(struct reg *g, struct session *session)
{
        sn_list_del(&g->conn_link);
        if (g->ownerless)
                g->port->norphans--;
        g->ownerless = false;
        g->creator = session;
        g->client_fd = SN_PROTO_NO_FD;
        sn_list_add_tail(&session->regs, &g->conn_link);
        live_reg(g);
}

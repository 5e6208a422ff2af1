/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * conn.c - one client connection: reading and validating its messages, running its requests,
 * and sending its replies.
 *
 * Every message is checked (sn_msg_check) before any field is used, and every fd received
 * with it is either handed to exactly one registration item or closed, on every path.  A
 * request that cannot be decoded gets an ERROR reply carrying its id; the connection is only
 * dropped when it breaks the handshake or stops reading its replies.  A connection is never
 * freed from inside the processing of another: conn_kill() marks it and the reaper frees it
 * on the next turn of the loop, so no caller is left holding a freed pointer.
 *
 * Every number a client sends is checked against a limit before anything is sized from it,
 * and everything a connection makes the daemon hold is charged to its user (struct user): a
 * refusal is an error status naming the limit in the log, never a silent disconnect.
 *
 * Users other than root and the daemon's own are also charged together, to the unprivileged
 * pool (struct pool): their descriptors never exceed the capacity less --reserve-fds, their
 * connections max-connections less --reserve-connections, their output bytes, posted packets,
 * staged items and waiting calls the --max-*-unprivileged limits, however many of them there
 * are.  So root can always connect and work, and the daemon's memory stays bounded.
 * Descriptors a message carries are taken by the kernel before any check: the daemon
 * receives from an unprivileged connection only as many as the pool has room for
 * (user_fd_room()), and the kernel drops the rest.
 */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "common/fdmsg.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/closer.h"
#include "daemon/base/epctl.h"
#include "daemon/base/settings.h"
#include "daemon/objects/holdings.h"
#include "daemon/objects/persist.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "daemon/service/conn.h"
#include "daemon/service/control.h"
#include "daemon/service/monitor.h"
#include "daemon/service/persist.h"
#include "daemon/service/ring.h"
#include "daemon/service/server.h"
#include "proto/codec.h"
#include "socknotify.h"

static void conn_io_cb(evutil_socket_t fd, short what, void *arg);
static void violation(struct conn *c, uint32_t id, uint32_t status, const char *what);
static size_t outmsg_cost(size_t len);
static void conn_set_writing(struct conn *c, bool on);
static void take_charge(struct conn *c, int64_t delta);
static void stage_reset(struct conn *c);
static uint32_t stage_append(struct conn *c, const uint8_t *items, uint32_t n, int *fds,
                             uint32_t nfds);

void conn_refuse(struct server *srv, int fd, uint32_t status)
{
        uint8_t buf[64];
        int fds[SN_PROTO_MAX_FDS];
        unsigned nfds;

        /* The client's HELLO (or first read) finds this ERROR, then the end of the stream.
         * What it already sent is read first: closing a Unix socket with unread data would
         * reset the peer, and it might never see the reason. */
        for (int i = 0; i < 8; i++) {
                ssize_t n = sn__fdmsg_recv(fd, buf, sizeof(buf), fds, 0, &nfds, MSG_DONTWAIT);

                closer_close_all(fds, nfds);
                if (n == -EAGAIN || n == 0)
                        break;
        }
        sn_msg_begin(buf, SN_MSG_ERROR, 0, status, 0, 0, 0);
        (void)send(fd, buf, SN_HEADER_SIZE, MSG_DONTWAIT | MSG_NOSIGNAL);
        close(fd);
}

static void hello_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
        struct conn *c = arg;

        violation(c, 0, ETIMEDOUT, "no HELLO within the handshake timeout");
        conn_kill(c, "handshake timeout");
}

/* Builds a connection on fd for user u (already counted by the caller's check), with its
 * events armed; NULL when out of memory (fd and u untouched then). */
/* The session ops of a connection (objects/session.h): answers go out as messages on its
 * socket, through conn_send(), which ends the connection when it cannot take them. */
static void session_reply_process_cb(struct session *s, uint32_t id, uint32_t status,
                                     const uint32_t *results, uint32_t nresults,
                                     const uint8_t *entries, uint32_t nentries)
{
        conn_reply_process(conn_of_session(s), id, status, results, nresults, entries, nentries);
}

static void session_reply_error_cb(struct session *s, uint32_t id, uint32_t status)
{
        conn_reply_error(conn_of_session(s), id, status);
}

static void session_kill_cb(struct session *s, const char *why)
{
        conn_kill(conn_of_session(s), why);
}

/* On the rings, the completion ring's tail: the client has read an answer once its head has
 * passed the answer's start.  When replies wait in our queue, the answer goes into the ring
 * after them, where is not known yet (queued).  On the socket nothing tells one answer from
 * another: 0. */
static struct session_mark session_answer_mark_cb(struct session *s)
{
        struct conn *c = conn_of_session(s);

        return (struct session_mark){ .pos = c->ring ? c->ring->cq.tail : 0,
                                      .queued = !sn_list_empty(&c->outq) };
}

/* Whether the client has read past mark.  Nothing of it may still wait in the daemon's own
 * queue; on the rings the client's head (its word, any value) must be past mark; on the socket
 * the kernel must hold nothing unread (SIOCOUTQ, which for a Unix socket counts what the peer
 * has not yet taken), which also covers a ring's answers sent on the socket. */
static enum session_answer session_answer_read_cb(struct session *s, struct session_mark *mark)
{
        struct conn *c = conn_of_session(s);
        int unread = 0;

        if (!sn_list_empty(&c->outq))
                return SESSION_UNREAD;
        /* A queued answer is in the ring by now, before its tail: read once the client's head
         * has reached the tail (is past the record position just before it). */
        if (c->ring && mark->queued)
                *mark = (struct session_mark){ .pos = c->ring->cq.tail - 1 };
        if (c->ring && (int32_t)(sn_ring_load(c->ring->cq.phead) - mark->pos) <= 0)
                return SESSION_UNREAD;
        if (ioctl(c->fd, SIOCOUTQ, &unread) < 0 || unread)
                return SESSION_UNREAD;
        return c->ring ? SESSION_TAKEN : SESSION_RECEIVED;
}

static const struct session_ops conn_session_ops = {
        .reply_process = session_reply_process_cb,
        .reply_error = session_reply_error_cb,
        .kill = session_kill_cb,
        .answer_mark = session_answer_mark_cb,
        .answer_read = session_answer_read_cb,
};

static struct conn *conn_make(struct server *srv, struct user *u, int fd, const struct ucred *cred,
                              uint64_t serial, bool hello)
{
        struct timeval hello_tv = { .tv_sec = srv->limits.handshake_timeout_ms / 1000,
                                    .tv_usec = srv->limits.handshake_timeout_ms % 1000 * 1000 };
        struct conn *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        session_init(&c->session, &conn_session_ops);
        c->user = u;
        c->srv = srv;
        c->fd = fd;
        c->pid = cred->pid;
        c->uid = cred->uid;
        c->gid = cred->gid;
        c->serial = serial;
        c->hello = hello;
        /* The running image's until the handshake announces them (handle_hello()), or the
         * ones a restored connection was told (conn_adopt()). */
        c->max_message = srv->limits.max_message;
        c->max_fds = srv->limits.max_fds;
        clock_gettime(CLOCK_MONOTONIC, &c->started);
        sn_list_init(&c->outq);
        sn_list_init(&c->take_link);
        sn_list_init(&c->dead_link);
        event_assign(&c->ev, srv->base, fd, EV_READ | EV_PERSIST, conn_io_cb, c);
        evtimer_assign(&c->hello_timer, srv->base, hello_timeout_cb, c);
        if (event_add(&c->ev, NULL) < 0 || (!hello && evtimer_add(&c->hello_timer, &hello_tv) < 0)) {
                event_del(&c->ev);
                free(c);
                return NULL;
        }
        user_charge_conns(u, 1);
        sn_list_add_tail(&srv->conns, &c->link);
        srv->nconns++;
        return c;
}

struct conn *conn_adopt(struct server *srv, int fd, const struct ucred *cred, uint64_t serial,
                        bool hello, uint32_t max_message, uint32_t max_fds)
{
        struct user *u;
        struct conn *c;

        /* Its client sized its buffers by what its handshake announced: the daemon must not
         * send it more, nor refuse what those limits allow, so the buffers are grown first. */
        if (hello && max_message && server_fit_buffers(srv, max_message) < 0) {
                log_error("connection %llu: out of memory for its max-message of %u bytes",
                          (unsigned long long)serial, (unsigned)max_message);
                return NULL;
        }
        u = user_get(srv, cred->uid);
        c = u ? conn_make(srv, u, fd, cred, serial, hello) : NULL;
        if (!c) {
                user_release(u);
                return NULL;
        }
        if (hello && max_message)
                c->max_message = max_message;
        if (hello && max_fds)
                c->max_fds = max_fds;
        return c;
}

int conn_adopt_output(struct conn *c, const uint8_t *buf, size_t len)
{
        return conn_defer(c, buf, len) ? 0 : -ENOMEM;
}

void conn_defer_cancel(struct conn *c, struct outmsg *m)
{
        live_out_gone(c, m);
        sn_list_del(&m->link);
        c->outq_bytes -= m->cost;
        user_charge_output(c->user, -(int64_t)m->cost);
        free(m);
}

struct outmsg *conn_defer(struct conn *c, const uint8_t *buf, size_t len)
{
        struct outmsg *m = malloc(sizeof(*m) + len);

        if (!m)
                return NULL;
        m->len = len;
        m->jr = 0;
        m->cost = outmsg_cost(len);
        memcpy(m->data, buf, len);
        sn_list_add_tail(&c->outq, &m->link);
        c->outq_bytes += m->cost;
        user_charge_output(c->user, (int64_t)m->cost);
        conn_set_writing(c, true);
        live_out(c, m);
        return m;
}

int conn_adopt_stage(struct conn *c, uint32_t id, uint32_t port, uint32_t error,
                     const uint8_t *items, uint32_t nitems, int *fds, uint32_t nfds)
{
        struct conn_stage *st = &c->stage;

        st->active = true;
        st->id = id;
        st->port = port;
        st->error = error;
        if (!nitems && !nfds)
                return 0;
        if (stage_append(c, items, nitems, fds, nfds)) {
                stage_reset(c);
                return -EINVAL;
        }
        return 0;
}

void conn_accept(struct server *srv, int fd)
{
        struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
        struct user *u;
        struct conn *c;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &(socklen_t){ sizeof(cred) }) < 0) {
                close(fd);
                return;
        }
        if (srv->nconns >= srv->limits.max_connections) {
                server_log_refusal(srv, NULL, cred.uid, "max-connections");
                conn_refuse(srv, fd, EUSERS);
                return;
        }
        u = user_get(srv, cred.uid);
        if (!u) {
                log_error("out of memory accepting a connection");
                conn_refuse(srv, fd, ENOMEM);
                return;
        }
        if (u->nconns >= srv->limits.max_connections_per_user) {
                u->refused++;
                server_log_refusal(srv, NULL, cred.uid, "max-connections-per-user");
                conn_refuse(srv, fd, EDQUOT);
                user_release(u);
                return;
        }
        /* The reserve: what is left for root and the daemon's user once the others together
         * reach their pool.  Refused at once, so the descriptor accept() took is free again:
         * EUSERS past the connections (as max-connections), EMFILE past the descriptors (as
         * when the daemon is out of them). */
        if (u->pool && u->pool->conns >= limits_conn_pool(&srv->limits)) {
                u->refused++;
                server_log_refusal(srv, NULL, cred.uid, "reserve-connections");
                conn_refuse(srv, fd, EUSERS);
                user_release(u);
                return;
        }
        if (user_check_fds(srv, u, NULL, 1) < 0) {
                conn_refuse(srv, fd, EMFILE);
                user_release(u);
                return;
        }
        c = conn_make(srv, u, fd, &cred, ++srv->next_conn_serial, false);
        if (!c) {
                log_error("out of memory accepting a connection");
                conn_refuse(srv, fd, ENOMEM);
                user_release(u);
                return;
        }
        srv->counters.connections_total++;
        live_conn(c);
        log_debug("connection %llu: pid %d uid %u", (unsigned long long)c->serial, (int)c->pid,
                  (unsigned)c->uid);
}

static void stage_reset(struct conn *c)
{
        struct conn_stage *st = &c->stage;

        live_stage_gone(c);
        user_charge_sockets(c->user, -(int64_t)st->held);
        user_charge_staged(c->user, -(int64_t)st->nitems);
        closer_close_all(st->fds, st->nfds);
        if (st->cap)
                server_note_freed(c->srv, (size_t)st->cap * SN_WIRE_SIZE_registration);
        free(st->items);
        free(st->fds);
        for (uint32_t i = 0; st->keep && i < st->fdcap; i++)
                free(st->keep[i]);
        free(st->keep);
        memset(st, 0, sizeof(*st));
        live_conn_update(c);
}

void conn_free(struct conn *c, uint32_t status)
{
        if (!c)
                return;
        live_conn_gone(c);
        if (event_initialized(&c->hello_timer))
                evtimer_del(&c->hello_timer);
        holdings_release(&c->session, status);
        stage_reset(c);
        while (!sn_list_empty(&c->outq)) {
                struct outmsg *m = sn_list_first(&c->outq, struct outmsg, link);

                live_out_gone(c, m);
                sn_list_del(&m->link);
                free(m);
        }
        user_charge_output(c->user, -(int64_t)c->outq_bytes);
        server_note_freed(c->srv, c->outq_bytes);
        take_charge(c, -(int64_t)c->take_unread);
        sn_list_del(&c->take_link);
        monitor_detach(c);
        if (event_initialized(&c->ev))
                event_del(&c->ev);
        live_ring_gone(c);
        if (c->ring) {
                user_charge_rings(c->user, -1, SN_RING_FILE_SIZE);
                c->srv->nrings--;
        }
        ring_free(c->ring);
        sn_close(c->fd);
        sn_list_del(&c->dead_link);
        sn_list_del(&c->link);
        c->srv->nconns--;
        user_charge_conns(c->user, -1);
        user_release(c->user);
        log_debug("connection %llu closed", (unsigned long long)c->serial);
        free(c);
}

void conn_kill(struct conn *c, const char *why)
{
        if (c->dead)
                return;
        c->dead = true;
        log_debug("connection %llu (pid %d): %s", (unsigned long long)c->serial, (int)c->pid, why);
        event_del(&c->ev);
        evtimer_del(&c->hello_timer);
        if (c->ring && c->ring->ev_added) {
                event_del(&c->ring->ev);
                c->ring->ev_added = false;
        }
        if (c->ring && c->ring->muted) {
                event_del(&c->ring->mute_ev);
                c->ring->muted = false;
        }
        /* Off every port, so no dispatch hands them entries; freed later, never here. */
        holdings_detach_waits(&c->session);
        sn_list_add_tail(&c->srv->dead, &c->dead_link);
        event_active(&c->srv->reaper, 0, 0);
}

static void conn_set_writing(struct conn *c, bool on)
{
        if (c->writing == on || c->dead)
                return;
        event_del(&c->ev);
        event_assign(&c->ev, c->srv->base, c->fd, EV_READ | EV_PERSIST | (on ? EV_WRITE : 0),
                     conn_io_cb, c);
        event_add(&c->ev, NULL);
        c->writing = on;
}

bool conn_output_pending(const struct conn *c)
{
        return !sn_list_empty(&c->outq);
}

void conn_want_write(struct conn *c)
{
        conn_set_writing(c, true);
}

static void trace(struct conn *c, const char *dir, const uint8_t *buf, size_t len)
{
        char line[1024];

        sn_msg_trace(line, sizeof(line), buf, len, 8);
        log_info("conn %llu %s %s", (unsigned long long)c->serial, dir, line);
}

static size_t outmsg_cost(size_t len)
{
        /* glibc: 8 bytes of chunk header, 16-byte granules, 32 bytes at least. */
        size_t n = (sizeof(struct outmsg) + len + 8 + 15) & ~(size_t)15;

        return n < 32 ? 32 : n;
}

/*
 * Version 3: puts one reply into the completion ring, or, when it is larger than a record
 * carries, sends it on the socket and then puts the SOCKET record that announces it (socket
 * first: the record can be taken back, the datagram cannot).  When the ring is full the daemon
 * says so (daemon_blocked: the client rings the doorbell once it has made room) and looks once
 * more, since the client may have made room before it saw the flag.  Returns 0, -EAGAIN
 * (nothing sent: no room in the ring, or the socket is full and EV_WRITE is on), -EPROTO (the
 * client broke its ring) or -EPIPE.
 */
static int ring_put_reply(struct conn *c, const uint8_t *buf, size_t len)
{
        struct conn_ring *r = c->ring;
        bool on_socket = len > sn_ring_max_message(r->cq.size);
        uint32_t tail = r->cq.tail;
        int err;

        err = on_socket ? sn_ring_put(&r->cq, SN_RING_SOCKET, NULL, 0)
                        : sn_ring_put(&r->cq, SN_RING_MSG, buf, (uint32_t)len);
        if (err == -EAGAIN) {
                sn_ring_store(&r->hdr->daemon_blocked, 1);
                sn_ring_fence();
                err = on_socket ? sn_ring_put(&r->cq, SN_RING_SOCKET, NULL, 0)
                                : sn_ring_put(&r->cq, SN_RING_MSG, buf, (uint32_t)len);
                if (err == -EAGAIN) {
                        /* A client that keeps answers from us until their threads have them
                         * gives them back when we wait for room (PROTOCOL.md, section 4): one
                         * that polls for its replies, reading none, must learn it. */
                        r->bell_pending = true;
                        if (!r->in_turn)
                                ring_wake_client(r);
                }
                if (err)
                        return err;
                sn_ring_store(&r->hdr->daemon_blocked, 0);
        } else if (err) {
                return err;
        }
        if (on_socket) {
                ssize_t n = send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n != (ssize_t)len) {
                        r->cq.tail = tail; /* never published */
                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                                conn_set_writing(c, true);
                                return -EAGAIN;
                        }
                        return -EPIPE;
                }
        }
        sn_ring_tx_publish(&r->cq);
        r->bell_pending = true;
        return 0;
}

/* The client's doorbell rings at once, unless the client's own turn is running: its end
 * rings it once for everything the turn answered. */
static void ring_sent(struct conn *c)
{
        if (!c->ring->in_turn)
                ring_wake_client(c->ring);
}

/* Sends now, or returns false when it must be queued (the ring or the socket is full); false
 * with the connection dead when it failed. */
static bool send_now(struct conn *c, const uint8_t *buf, size_t len)
{
        if (c->ring) {
                int err = ring_put_reply(c, buf, len);

                if (!err) {
                        ring_sent(c);
                        return true;
                }
                if (err != -EAGAIN)
                        conn_kill(c, err == -EPROTO ? "broke its completion ring"
                                                    : "sending failed");
                return false;
        }
        ssize_t n = send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n == (ssize_t)len)
                return true;
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                conn_kill(c, "sending failed");
        else
                conn_set_writing(c, true);
        return false;
}

void conn_send(struct conn *c, const uint8_t *buf, size_t len)
{
        struct server *srv = c->srv;
        struct outmsg *m;

        if (c->dead)
                return;
        /* What the reply reports must be in the descriptor store before the client learns it. */
        live_flush(srv);
        srv->counters.messages_out++;
        if (srv->trace)
                trace(c, "->", buf, len);
        monitor_see(c, true, buf, len);
        /* The request counts as answered only once its reply is in the kernel (or the ring) or
         * queued (and journaled): a crash before that fails it with EIO, never leaves its
         * caller waiting. */
        if (sn_list_empty(&c->outq)) {
                if (send_now(c, buf, len)) {
                        live_answered(c, buf, len);
                        return;
                }
                if (c->dead)
                        return;
        }
        /* What a reply really holds: the allocation, rounded as malloc rounds it. */
        size_t cost = outmsg_cost(len);

        if (c->outq_bytes + cost > srv->limits.max_output ||
            c->user->output + cost > srv->limits.max_output_per_user ||
            user_check_output(srv, c->user, &c->session, cost) < 0) {
                if (c->outq_bytes + cost > srv->limits.max_output) {
                        server_log_refusal(srv, &c->session, c->uid, "max-output");
                } else if (c->user->output + cost > srv->limits.max_output_per_user) {
                        c->user->refused++;
                        server_log_refusal(srv, &c->session, c->uid, "max-output-per-user");
                }
                conn_kill(c, "does not read its replies");
                return;
        }
        m = malloc(sizeof(*m) + len);
        if (!m) {
                conn_kill(c, "out of memory queueing a reply");
                return;
        }
        m->len = len;
        m->jr = 0;
        m->cost = cost;
        memcpy(m->data, buf, len);
        sn_list_add_tail(&c->outq, &m->link);
        c->outq_bytes += cost;
        user_charge_output(c->user, (int64_t)cost);
        if (!c->ring)
                conn_set_writing(c, true);
        /* Not taken by the kernel yet: owed to the client across a re-exec or a crash. */
        live_out(c, m);
        live_answered(c, buf, len);
}

static void conn_flush(struct conn *c)
{
        while (!sn_list_empty(&c->outq)) {
                struct outmsg *m = sn_list_first(&c->outq, struct outmsg, link);

                if (c->ring) {
                        int err = ring_put_reply(c, m->data, m->len);

                        if (err == -EAGAIN)
                                return;
                        if (err) {
                                conn_kill(c, err == -EPROTO ? "broke its completion ring"
                                                            : "sending failed");
                                return;
                        }
                        ring_sent(c);
                } else {
                        ssize_t n = send(c->fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);

                        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                                return;
                        if (n != (ssize_t)m->len) {
                                conn_kill(c, "sending failed");
                                return;
                        }
                }
                live_out_gone(c, m);
                sn_list_del(&m->link);
                c->outq_bytes -= m->cost;
                user_charge_output(c->user, -(int64_t)m->cost);
                free(m);
        }
        if (!monitor_flush(c))
                return;
        conn_set_writing(c, false);
}

static void reply_simple(struct conn *c, uint16_t type, uint32_t id, uint32_t status)
{
        uint8_t *buf = c->srv->wbuf;
        uint8_t *p = sn_msg_begin(buf, type, id, status, 0, 0, 0);

        /* Bodies of these replies are all zero when the call failed. */
        memset(p, 0, sn_msg_size(type, 0, 0) - SN_HEADER_SIZE);
        conn_send(c, buf, sn_msg_size(type, 0, 0));
}

void conn_reply_error(struct conn *c, uint32_t id, uint32_t status)
{
        reply_simple(c, SN_MSG_ERROR, id, status);
}

static void violation(struct conn *c, uint32_t id, uint32_t status, const char *what)
{
        struct server *srv = c->srv;
        unsigned long long dropped = 0;

        srv->counters.protocol_violations++;
        server_count_call_error(srv, status);
        /* The first few of each connection reach the log, and never more than the daemon-wide
         * rate, so that many connections cannot flood it together. */
        if ((++c->violations <= 10 && sn_ratelimit_ok(&srv->violation_log, &dropped)) ||
            sn_log_enabled(LOG_DEBUG))
                log_notice("connection %llu (pid %d, uid %u): %s%s", (unsigned long long)c->serial,
                           (int)c->pid, (unsigned)c->uid, what,
                           c->violations == 10 ? " (no more logged for this connection)" : "");
        if (dropped)
                log_notice("%llu protocol violation line(s) suppressed", dropped);
        reply_simple(c, SN_MSG_ERROR, id, status);
}

void conn_reply_process(struct conn *c, uint32_t id, uint32_t status, const uint32_t *results,
                        uint32_t nresults, const uint8_t *entries, uint32_t nentries)
{
        uint8_t *buf = c->srv->wbuf;
        struct snw_process_reply body = { 0 };
        uint8_t *p;

        if (c->dead)
                return;
        p = sn_msg_begin(buf, SN_MSG_PROCESS_REPLY, id, status, 0, nresults, nentries);
        p = snw_process_reply_encode(p, &body);
        for (uint32_t i = 0; i < nresults; i++)
                p = sn_put_u32(p, results[i]);
        if (nentries) {
                memcpy(p, entries, (size_t)nentries * SN_WIRE_SIZE_entry);
                /* Before version 3 a socket entry's overlapped is 0, not its handle. */
                for (uint32_t i = 0; c->version < 3 && i < nentries; i++) {
                        uint8_t *e = p + (size_t)i * SN_WIRE_SIZE_entry;

                        if (sn_get_u32(e + SN_ENTRY_KIND_OFFSET) == SN_PROTO_KIND_SOCKET)
                                sn_put_u64(e + SN_ENTRY_OVERLAPPED_OFFSET, 0);
                }
                p += (size_t)nentries * SN_WIRE_SIZE_entry;
        }
        if (status && status != ETIMEDOUT)
                server_count_call_error(c->srv, status);
        conn_send(c, buf, (size_t)(p - buf));
}

/* ---- requests ---------------------------------------------------------------------------- */

static void conn_bell_cb(evutil_socket_t fd, short what, void *arg);

/*
 * Answers a HELLO that asked for the rings (version 3): makes them and sends HELLO_REPLY with
 * their three descriptors; from then on the connection's requests come through the SQ.  When
 * they cannot be made (the daemon is out of descriptors or memory) the connection keeps the
 * socket: the reply says transport 0, and the client goes on as with --no-shm.
 */
static void hello_ring(struct conn *c, uint32_t id, struct snw_hello_reply *out)
{
        struct server *srv = c->srv;
        struct conn_ring *r;
        size_t len = sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0);
        uint8_t *p;
        int err;

        /* The file's memory counts with the user's output bytes, its descriptors with the
         * user's sockets and in the pool; over a limit the connection keeps its socket. */
        if (c->user->nsockets + (uint64_t)RING_NFDS > srv->limits.max_sockets_per_user / 2) {
                /* Its descriptors count with the user's sockets, and take at most half of
                 * their quota: the sockets are what the user came for. */
                err = -EDQUOT;
        } else if (c->user->output + SN_RING_FILE_SIZE > srv->limits.max_output_per_user) {
                c->user->refused++;
                server_log_refusal(srv, &c->session, c->uid, "max-output-per-user");
                err = -EDQUOT;
        } else if (user_check_output(srv, c->user, &c->session, SN_RING_FILE_SIZE) < 0 ||
                   user_check_fds(srv, c->user, &c->session, RING_NFDS) < 0) {
                err = -EDQUOT;
        } else {
                err = ring_new(&r);
        }
        if (err) {
                log_info("connection %llu (pid %d): no rings (%s): it keeps its socket",
                         (unsigned long long)c->serial, (int)c->pid, strerror(-err));
                p = sn_msg_begin(srv->wbuf, SN_MSG_HELLO_REPLY, id, 0, 0, 0, 0);
                snw_hello_reply_encode(p, out);
                conn_send(c, srv->wbuf, len);
                return;
        }
        int fds[SN_PROTO_RING_NFDS] = { [SN_PROTO_RING_FD_FILE] = r->file,
                                        [SN_PROTO_RING_FD_DAEMON] = r->bell_in_peer,
                                        [SN_PROTO_RING_FD_CLIENT] = r->bell_peer };

        out->transport = SN_PROTO_TRANSPORT_RING;
        p = sn_msg_begin(srv->wbuf, SN_MSG_HELLO_REPLY, id, 0, SN_PROTO_RING_NFDS, 0, 0);
        snw_hello_reply_encode(p, out);
        live_flush(srv);
        srv->counters.messages_out++;
        if (srv->trace)
                trace(c, "->", srv->wbuf, len);
        monitor_see(c, true, srv->wbuf, len);
        /* The first reply of a connection: its socket buffer is empty, so it always fits. */
        err = sn__fdmsg_send(c->fd, srv->wbuf, len, fds, SN_PROTO_RING_NFDS, MSG_DONTWAIT);
        if (err < 0) {
                ring_free(r);
                conn_kill(c, "sending failed");
                return;
        }
        live_answered(c, srv->wbuf, len);
        close(r->bell_peer); /* the client's now */
        close(r->bell_in_peer);
        r->bell_peer = r->bell_in_peer = -1;
        c->ring = r;
        user_charge_rings(c->user, 1, SN_RING_FILE_SIZE);
        c->srv->nrings++;
        event_assign(&r->ev, srv->base, r->bell_in, EV_READ | EV_PERSIST, conn_bell_cb, c);
        event_add(&r->ev, NULL);
        r->ev_added = true;
        live_conn_update(c);
        live_ring(c);
}

int conn_adopt_ring(struct conn *c, int *fds, bool stalled)
{
        struct conn_ring *r;
        int err = ring_adopt(fds[RING_FILE], fds[RING_BELL_IN], fds[RING_BELL_OUT], &r);

        if (err) {
                log_warning("connection %llu (pid %d): its rings cannot be restored (%s)",
                            (unsigned long long)c->serial, (int)c->pid, strerror(-err));
                return err;
        }
        c->ring = r;
        user_charge_rings(c->user, 1, SN_RING_FILE_SIZE);
        c->srv->nrings++;
        r->stalled = stalled;
        r->stall_bell = false;
        event_assign(&r->ev, c->srv->base, r->bell_in, EV_READ | EV_PERSIST, conn_bell_cb, c);
        event_add(&r->ev, NULL);
        r->ev_added = true;
        /* What the client wrote while no daemon ran is read at the loop's first turn.  The
         * client is woken once whatever its flag says: a daemon that crashed between claiming
         * the client's wake-up (the flag back to 0) and ringing left it asleep with no one to
         * ring, and a wake-up for nothing costs it one look at the ring. */
        event_active(&r->ev, EV_READ, 0);
        ring_wake_force(r);
        live_conn_update(c);
        live_ring(c);
        return 0;
}

static void handle_hello(struct conn *c, const struct snw_header *h, const uint8_t *buf)
{
        struct server *srv = c->srv;
        struct snw_hello in;
        struct snw_hello_reply out = {
                .version = SN_PROTO_VERSION,
                .max_message = srv->limits.max_message,
                .max_fds = srv->limits.max_fds,
                .max_ports = srv->limits.max_ports,
                .max_registrations = srv->limits.max_registrations,
                .max_posted = srv->limits.max_posted,
                .max_waits = srv->limits.max_waits,
                .max_sockets = srv->limits.max_sockets_per_user,
                .daemon_pid = (uint32_t)getpid(),
        };
        uint8_t *p;

        snw_hello_decode(sn_msg_body(buf), &in);
        if (c->hello) {
                violation(c, h->id, EPROTO, "second HELLO");
                return;
        }
        /* RING needs version 3; SELF is known to every version this daemon speaks (an older
         * daemon refuses it, so a client never gets less than it asked for). */
        if (in.flags & ~(SN_PROTO_HELLO_RING | SN_PROTO_HELLO_SELF) ||
            (in.flags & SN_PROTO_HELLO_RING &&
             SN_MIN(in.version_max, (uint16_t)SN_PROTO_VERSION) < 3)) {
                violation(c, h->id, EINVAL, "HELLO with flags");
                conn_kill(c, "failed handshake");
                return;
        }
        if (in.magic != SN_PROTO_MAGIC || in.version_min > SN_PROTO_VERSION ||
            in.version_max < SN_PROTO_VERSION_MIN || in.version_min > in.version_max) {
                violation(c, h->id, EPROTONOSUPPORT, "no common protocol version");
                conn_kill(c, "failed handshake");
                return;
        }
        c->hello = true;
        c->self_scheduled = in.flags & SN_PROTO_HELLO_SELF;
        c->version = (uint16_t)SN_MIN(in.version_max, (uint16_t)SN_PROTO_VERSION);
        out.version = c->version;
        /* What the reply announces is the connection's for its whole life (session.h). */
        c->max_message = out.max_message;
        c->max_fds = out.max_fds;
        evtimer_del(&c->hello_timer);
        live_conn(c);
        live_conn_update(c);
        if (in.flags & SN_PROTO_HELLO_RING && !srv->no_shm) {
                hello_ring(c, h->id, &out);
                return;
        }
        p = sn_msg_begin(srv->wbuf, SN_MSG_HELLO_REPLY, h->id, 0, 0, 0, 0);
        snw_hello_reply_encode(p, &out);
        conn_send(c, srv->wbuf, sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0));
}

/* Copies a name from a message array: 1..255 bytes, no control characters (a name may reach
 * logs and tools' output).  Returns false if invalid. */
static bool copy_name(const uint8_t *p, uint32_t len, char *out)
{
        if (len == 0 || len > 255)
                return false;
        for (uint32_t i = 0; i < len; i++)
                if (p[i] < 0x20 || p[i] == 0x7f)
                        return false;
        memcpy(out, p, len);
        out[len] = 0;
        return true;
}

static void reply_port(struct conn *c, uint16_t type, uint32_t id, const struct port *port)
{
        struct snw_port_create_reply out = { .port = port->id, .concurrency = port->concurrency };

        snw_port_create_reply_encode(sn_msg_begin(c->srv->wbuf, type, id, 0, 0, 0, 0), &out);
        conn_send(c, c->srv->wbuf, sn_msg_size(type, 0, 0));
}

static void handle_port_create(struct conn *c, const struct snw_header *h, const uint8_t *buf,
                               const struct sn_msg_desc *d)
{
        struct snw_port_create in;
        struct port *port;
        char name[256] = "";
        int r;

        snw_port_create_decode(sn_msg_body(buf), &in);
        if (in.flags || (h->count && !copy_name(sn_msg_array(buf, d, 1), h->count, name))) {
                reply_simple(c, SN_MSG_PORT_CREATE_REPLY, h->id, EINVAL);
                return;
        }
        r = port_new(&c->session, in.concurrency, name, &port);
        if (r < 0) {
                server_count_call_error(c->srv, (uint32_t)-r);
                reply_simple(c, SN_MSG_PORT_CREATE_REPLY, h->id, (uint32_t)-r);
                return;
        }
        reply_port(c, SN_MSG_PORT_CREATE_REPLY, h->id, port);
}

static void handle_port_open(struct conn *c, const struct snw_header *h, const uint8_t *buf,
                             const struct sn_msg_desc *d)
{
        struct port *port;
        char name[256];
        int r;

        if (!copy_name(sn_msg_array(buf, d, 1), h->count, name)) {
                reply_simple(c, SN_MSG_PORT_OPEN_REPLY, h->id, EINVAL);
                return;
        }
        r = port_open(&c->session, name, &port);
        if (r < 0) {
                server_count_call_error(c->srv, (uint32_t)-r);
                reply_simple(c, SN_MSG_PORT_OPEN_REPLY, h->id, (uint32_t)-r);
                return;
        }
        reply_port(c, SN_MSG_PORT_OPEN_REPLY, h->id, port);
}

static void handle_port_close(struct conn *c, const struct snw_header *h, const uint8_t *buf)
{
        struct snw_port in;
        struct handle *hd;

        snw_port_decode(sn_msg_body(buf), &in);
        hd = port_handle_of(&c->session, in.port);
        if (!hd) {
                server_count_call_error(c->srv, EBADF);
                reply_simple(c, SN_MSG_PORT_CLOSE_REPLY, h->id, EBADF);
                return;
        }
        port_close_handle(hd, ECANCELED);
        reply_simple(c, SN_MSG_PORT_CLOSE_REPLY, h->id, 0);
}

static void handle_thread_exit(struct conn *c, const struct snw_header *h, const uint8_t *buf)
{
        struct snw_thread in;

        snw_thread_decode(sn_msg_body(buf), &in);
        /* Its dequeues posted ahead end with it. */
        for (struct sn_list *pos = c->waits.next, *tmp = pos->next; pos != &c->waits;
             pos = tmp, tmp = pos->next) {
                struct wait *w = sn_list_entry(pos, struct wait, conn_link);

                if (w->ahead && w->thread == in.thread && !w->detached)
                        wait_cancel(w, ECANCELED);
        }
        runner_release(&c->session, in.thread, NULL);
        reply_simple(c, SN_MSG_THREAD_EXIT_REPLY, h->id, 0);
}

static void handle_post(struct conn *c, const struct snw_header *h, const uint8_t *buf,
                        const struct sn_msg_desc *d)
{
        struct snw_post in;
        struct snw_post_reply out = { 0 };
        struct port *port;
        uint8_t *p;
        int r;

        snw_post_decode(sn_msg_body(buf), &in);
        port = port_find(&c->session, in.port);
        if (!port) {
                server_count_call_error(c->srv, EBADF);
                reply_simple(c, SN_MSG_POST_REPLY, h->id, EBADF);
                return;
        }
        /* A field that must be 0 is refused, never ignored (PROTOCOL.md, section 2). */
        for (uint32_t i = 0; i < h->count; i++) {
                struct snw_packet pk;

                snw_packet_decode(sn_msg_array(buf, d, 1) + (size_t)i * SN_WIRE_SIZE_packet, &pk);
                if (pk.reserved) {
                        server_count_call_error(c->srv, EINVAL);
                        reply_simple(c, SN_MSG_POST_REPLY, h->id, EINVAL);
                        return;
                }
        }
        r = port_post(port, &c->session, sn_msg_array(buf, d, 1), h->count);
        if (r < 0) {
                server_count_call_error(c->srv, (uint32_t)-r);
                reply_simple(c, SN_MSG_POST_REPLY, h->id, (uint32_t)-r);
                return;
        }
        out.queued = h->count;
        p = sn_msg_begin(c->srv->wbuf, SN_MSG_POST_REPLY, h->id, 0, 0, 0, 0);
        snw_post_reply_encode(p, &out);
        conn_send(c, c->srv->wbuf, sn_msg_size(SN_MSG_POST_REPLY, 0, 0));
        port_dispatch(port);
}

static void handle_port_linger(struct conn *c, const struct snw_header *h, const uint8_t *buf)
{
        struct snw_port_linger in;
        struct snw_port_linger_reply out;
        struct port *port;
        int r;

        snw_port_linger_decode(sn_msg_body(buf), &in);
        port = port_find(&c->session, in.port);
        r = port ? port_set_linger(port, &c->session, in.linger_ms) : -EBADF;
        if (r < 0) {
                server_count_call_error(c->srv, (uint32_t)-r);
                reply_simple(c, SN_MSG_PORT_LINGER_REPLY, h->id, (uint32_t)-r);
                return;
        }
        out.linger_ms = port->linger_ms;
        snw_port_linger_reply_encode(sn_msg_begin(c->srv->wbuf, SN_MSG_PORT_LINGER_REPLY, h->id,
                                                  0, 0, 0, 0), &out);
        conn_send(c, c->srv->wbuf, sn_msg_size(SN_MSG_PORT_LINGER_REPLY, 0, 0));
}

/* Descriptors in c's unread PORT_TAKE replies change by delta: the daemon's count and, for an
 * unprivileged user, the pool's. */
static void take_charge(struct conn *c, int64_t delta)
{
        c->srv->take_inflight += (uint64_t)delta;
        if (c->user->pool)
                c->user->pool->take += (uint64_t)delta;
}

/* Whether c has read its last PORT_TAKE reply: its socket holds nothing unread any more. */
static void take_refresh(struct conn *c)
{
        int q = 0;

        if (!c->take_unread || ioctl(c->fd, SIOCOUTQ, &q) < 0 || q > 0)
                return;
        take_charge(c, -(int64_t)c->take_unread);
        c->take_unread = 0;
        sn_list_del(&c->take_link);
}

/* Descriptors the daemon lets wait in PORT_TAKE replies not yet read, all clients together:
 * the kernel charges them to the daemon's RLIMIT_NOFILE (ETOOMANYREFS past it, without
 * CAP_SYS_RESOURCE), and the live store's boxes already hold one such reference of every
 * socket.  A quarter of the descriptor capacity, at least one full batch. */
static uint64_t take_budget(const struct server *srv)
{
        return SN_MAX(srv->fd_capacity / 4, (uint64_t)SN_PROTO_MAX_FDS);
}

/* How many more descriptors a PORT_TAKE reply of c may carry now: what the budget leaves, and
 * for an unprivileged user what three quarters of it leave to all unprivileged users together
 * (the last quarter is kept for root and the daemon's user, as the reserve is). */
static uint64_t take_room(const struct server *srv, const struct conn *c)
{
        uint64_t budget = take_budget(srv), room;

        room = srv->take_inflight >= budget ? 0 : budget - srv->take_inflight;
        if (c->user->pool) {
                uint64_t pool = budget - budget / 4, used = c->user->pool->take;

                room = SN_MIN(room, used >= pool ? 0 : pool - used);
        }
        return room;
}

/* Answers a PORT_TAKE with status err and nothing taken; why, when set, is logged (limited). */
static void take_refuse(struct conn *c, uint32_t id, uint32_t err, const char *why)
{
        struct server *srv = c->srv;
        unsigned long long dropped;

        if (why && sn_ratelimit_ok(&srv->refuse_log, &dropped))
                log_notice("connection %llu (pid %d): PORT_TAKE deferred: %s%s",
                           (unsigned long long)c->serial, (int)c->pid, why,
                           dropped ? " (messages suppressed)" : "");
        server_count_call_error(srv, err);
        reply_simple(c, SN_MSG_PORT_TAKE_REPLY, id, err);
}

/*
 * PORT_TAKE: the one reply that carries descriptors.  It is sent at once or not at all: a reply
 * queued behind others would have to keep its descriptors (and they would have to survive a
 * re-exec), so a connection with replies waiting, or whose socket is full, gets EAGAIN and
 * nothing changes hands.  The registrations become the caller's only once the kernel has taken
 * the message, so a failed send loses nothing.  Descriptors sent and not yet received count
 * against the daemon's RLIMIT_NOFILE, so a client that never reads cannot pile them up: one
 * such reply unread per connection, take_budget() for all of them, and three quarters of it
 * for all unprivileged users (take_room()).
 */
/* Sends a PORT_TAKE_REPLY with its descriptors: on the socket, announced in the completion ring
 * by a SOCKET record when the connection has rings (put first, published only once the
 * datagram left).  Returns 0 or a negative errno; -EAGAIN also when the ring is full. */
static int take_send(struct conn *c, const uint8_t *buf, size_t len, const int *fds, uint32_t n)
{
        struct conn_ring *ring = c->ring;
        uint32_t tail = ring ? ring->cq.tail : 0;
        int r;

        if (ring) {
                r = sn_ring_put(&ring->cq, SN_RING_SOCKET, NULL, 0);
                if (r)
                        return r;
        }
        r = sn__fdmsg_send(c->fd, buf, len, fds, n, MSG_DONTWAIT);
        if (ring && r < 0)
                ring->cq.tail = tail;
        if (ring && r >= 0) {
                sn_ring_tx_publish(&ring->cq);
                ring->bell_pending = true;
                ring_sent(c);
        }
        return r < 0 ? r : 0;
}

static void handle_port_take(struct conn *c, const struct snw_header *h, const uint8_t *buf)
{
        struct server *srv = c->srv;
        struct snw_port_take in;
        struct snw_port_take_reply out;
        int fds[SN_PROTO_MAX_FDS];
        uint8_t *body = srv->wbuf + SN_HEADER_SIZE;
        struct port *port;
        uint32_t max, n;
        size_t len;
        int r;

        snw_port_take_decode(sn_msg_body(buf), &in);
        port = port_find(&c->session, in.port);
        if (!port || in.flags) {
                take_refuse(c, h->id, port ? EINVAL : EBADF, NULL);
                return;
        }
        take_refresh(c);
        if (!sn_list_empty(&c->outq) || c->take_unread) {
                take_refuse(c, h->id, EAGAIN, NULL);
                return;
        }
        /* A batch: what the client asked, what one message may carry in descriptors and in
         * bytes (both limits the client learnt at HELLO), and what the budget of descriptors
         * in flight leaves (the replies read since are counted out first). */
        max = SN_MIN(in.max, c->max_fds);
        max = SN_MIN(max, (uint32_t)((c->max_message - SN_HEADER_SIZE -
                                      SN_WIRE_SIZE_port_take_reply) /
                                     SN_WIRE_SIZE_registration));
        if (max && port->norphans && max > take_room(srv, c)) {
                struct sn_list *pos, *tmp;

                sn_list_foreach_safe(pos, tmp, &srv->take_unread)
                        take_refresh(sn_list_entry(pos, struct conn, take_link));
                if (!take_room(srv, c)) {
                        take_refuse(c, h->id, EAGAIN, "too many descriptors in replies not yet "
                                                      "read");
                        return;
                }
                max = (uint32_t)SN_MIN((uint64_t)max, take_room(srv, c));
        }
        n = port_take_prepare(port, body + SN_WIRE_SIZE_port_take_reply, fds, max);
        out.remaining = port->norphans - n;
        out.holders = port->nhandles - 1;
        snw_port_take_reply_encode(body, &out);
        len = sn_msg_size(SN_MSG_PORT_TAKE_REPLY, n, 0);
        sn_msg_begin(srv->wbuf, SN_MSG_PORT_TAKE_REPLY, h->id, 0, (uint16_t)n, n, 0);
        if (srv->journal)
                live_flush(srv);
        r = take_send(c, srv->wbuf, len, fds, n);
        if (r == -EPROTO) {
                conn_kill(c, "broke its completion ring");
                return;
        }
        if (r == -EAGAIN || r == -EWOULDBLOCK || r == -ETOOMANYREFS) {
                /* ETOOMANYREFS: the daemon's user has more descriptors in flight than its
                 * RLIMIT_NOFILE (other clients' unread replies, the live store): this
                 * connection is not at fault and asks again, as when its socket is full. */
                take_refuse(c, h->id, EAGAIN,
                            r == -ETOOMANYREFS ? "too many descriptors in flight" : NULL);
                return;
        }
        if (r < 0) {
                conn_kill(c, "sending failed");
                return;
        }
        srv->counters.messages_out++;
        if (srv->trace)
                trace(c, "->", srv->wbuf, len);
        monitor_see(c, true, srv->wbuf, len);
        port_take_commit(port, &c->session, n);
        if (n) {
                c->take_unread = n;
                take_charge(c, n);
                sn_list_add_tail(&srv->take_unread, &c->take_link);
                log_debug("connection %llu (pid %d) took %u registration(s) of port %u",
                          (unsigned long long)c->serial, (int)c->pid, n, port->id);
        }
}

static void handle_socket_close(struct conn *c, const struct snw_header *h, const uint8_t *buf)
{
        struct snw_socket_close in;
        int r;

        snw_socket_close_decode(sn_msg_body(buf), &in);
        /* A field that must be 0 is refused, never ignored (PROTOCOL.md, section 2). */
        r = in.reserved ? -EINVAL : reg_close_socket(&c->session, in.dev, in.ino, in.client_fd);
        reply_simple(c, SN_MSG_SOCKET_CLOSE_REPLY, h->id, (uint32_t)-r);
}

void conn_reply_text(struct conn *c, uint16_t type, uint32_t id, uint32_t status,
                     const char *text, size_t len)
{
        struct server *srv = c->srv;
        uint8_t *p;

        if (!text || sn_msg_size(type, (uint32_t)len, 0) > c->max_message) {
                reply_simple(c, type, id, text ? E2BIG : ENOMEM);
                return;
        }
        p = sn_msg_begin(srv->wbuf, type, id, status, 0, (uint32_t)len, 0);
        memcpy(p, text, len);
        conn_send(c, srv->wbuf, sn_msg_size(type, (uint32_t)len, 0));
}

/* LIMIT_INFO: the connection's newest refusals by a limit, oldest first.  Any version: a daemon
 * without it answers ERROR/EOPNOTSUPP and the connection goes on, so a client may just ask. */
static void handle_limit_info(struct conn *c, const struct snw_header *h)
{
        struct server *srv = c->srv;
        uint32_t n = SN_MIN(c->nrefused, (uint32_t)SESSION_REFUSALS);
        struct snw_limit_info_reply out = { .refused = c->nrefused };
        uint8_t *p;

        p = sn_msg_begin(srv->wbuf, SN_MSG_LIMIT_INFO_REPLY, h->id, 0, 0, n, 0);
        p = snw_limit_info_reply_encode(p, &out);
        for (uint32_t i = c->nrefused - n; i != c->nrefused; i++) {
                const struct refusal *r = &c->refusals[i % SESSION_REFUSALS];
                struct snw_refusal it = {
                        .request = r->request,
                        .first = r->first,
                        .last = r->last,
                        .limit = r->limit,
                        .scope = r->scope,
                        .value = r->value,
                };

                p = snw_refusal_encode(p, &it);
        }
        conn_send(c, srv->wbuf, sn_msg_size(SN_MSG_LIMIT_INFO_REPLY, n, 0));
}

static void handle_status(struct conn *c, const struct snw_header *h)
{
        char *json = server_status_json(c->srv, c->uid);

        conn_reply_text(c, SN_MSG_STATUS_REPLY, h->id, 0, json, json ? strlen(json) : 0);
        free(json);
}

/* Checks that every fd of the message is named by exactly one registration item. */
static bool fds_consistent(const uint8_t *items, uint32_t n, uint32_t nfds)
{
        uint8_t used[SN_PROTO_MAX_FDS] = { 0 };
        uint32_t seen = 0;

        for (uint32_t i = 0; i < n; i++) {
                uint32_t idx = sn_get_u32(items + (size_t)i * SN_WIRE_SIZE_registration + SN_REG_FD_INDEX_OFFSET);


                if (idx == SN_PROTO_NO_FD || idx == SN_PROTO_BY_HANDLE)
                        continue;
                if (idx >= nfds || used[idx])
                        return false;
                used[idx] = 1;
                seen++;
        }
        return seen == nfds;
}

/* Appends a part to the connection's staged call; takes the fds. Returns 0 or positive errno. */
static uint32_t stage_append(struct conn *c, const uint8_t *items, uint32_t n, int *fds,
                             uint32_t nfds)
{
        struct server *srv = c->srv;
        struct conn_stage *st = &c->stage;
        size_t isz = SN_WIRE_SIZE_registration;
        uint32_t call_max = limits_call_items_of(c->max_message);

        if (srv->restoring)
                call_max = UINT32_MAX / 64; /* what was held before is held again */

        /* The whole call's reply must fit one message: one result per item. */
        if (st->nitems + (uint64_t)n > call_max) {
                closer_close_all(fds, nfds);
                return E2BIG;
        }
        if (c->user->nstaged + (uint64_t)n > srv->limits.max_staged_per_user && !srv->restoring) {
                closer_close_all(fds, nfds);
                c->user->refused++;
                server_log_refusal(srv, &c->session, c->uid, "max-staged-per-user");
                return EDQUOT;
        }
        if (user_check_staged(srv, c->user, &c->session, n) < 0) {
                closer_close_all(fds, nfds);
                return EDQUOT;
        }
        /* Held until the last part: a client's own connection to the daemon (rejected by
         * reg_create) must not be held here either, or its end never sees EOF. */
        for (uint32_t i = 0; i < nfds; i++) {
                int type = 0;

                if (getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type,
                               &(socklen_t){ sizeof(type) }) == 0 &&
                    type == SOCK_SEQPACKET && server_is_own_connection(srv, fds[i])) {
                        closer_close_all(fds, nfds);
                        return EINVAL;
                }
        }
        /* Staged descriptors are held too: they count against the user's quota. */
        if (c->user->nsockets + (uint64_t)nfds > srv->limits.max_sockets_per_user &&
            !srv->restoring) {
                closer_close_all(fds, nfds);
                c->user->refused++;
                server_log_refusal(srv, &c->session, c->uid, "max-sockets-per-user");
                return EDQUOT;
        }
        if (user_check_fds(srv, c->user, &c->session, nfds) < 0) {
                closer_close_all(fds, nfds);
                return EDQUOT;
        }
        if (st->nitems + n > st->cap) {
                uint32_t cap = SN_MIN(SN_MAX(st->cap * 2, st->nitems + n), call_max);
                uint8_t *ni = realloc(st->items, (size_t)cap * isz);

                if (!ni) {
                        closer_close_all(fds, nfds);
                        return ENOMEM;
                }
                st->items = ni;
                st->cap = cap;
        }
        if (st->nfds + nfds > st->fdcap) {
                uint32_t cap = SN_MIN(SN_MAX(st->fdcap * 2, st->nfds + nfds), call_max);
                int *nf = realloc(st->fds, (size_t)cap * sizeof(int));

                if (!nf) {
                        closer_close_all(fds, nfds);
                        return ENOMEM;
                }
                st->fds = nf;
                /* Only kept in a journal (live_stage_part() makes it when one starts). */
                if (st->keep) {
                        struct jr_keep **nk = realloc(st->keep, (size_t)cap * sizeof(*nk));

                        if (!nk) {
                                closer_close_all(fds, nfds);
                                return ENOMEM;
                        }
                        memset(nk + st->fdcap, 0, (size_t)(cap - st->fdcap) * sizeof(*nk));
                        st->keep = nk;
                }
                st->fdcap = cap;
        }
        for (uint32_t i = 0; i < n; i++) {
                uint8_t *dst = st->items + (size_t)(st->nitems + i) * isz;
                uint32_t idx;

                memcpy(dst, items + (size_t)i * isz, isz);
                idx = sn_get_u32(dst + SN_REG_FD_INDEX_OFFSET);
                if (idx != SN_PROTO_NO_FD && idx != SN_PROTO_BY_HANDLE)
                        sn_put_u32(dst + SN_REG_FD_INDEX_OFFSET, idx + st->nfds);
        }
        if (nfds)
                memcpy(st->fds + st->nfds, fds, nfds * sizeof(int));
        st->nitems += n;
        st->nfds += nfds;
        st->held += nfds;
        user_charge_staged(c->user, n);
        user_charge_sockets(c->user, nfds);
        /* A part may carry no items (descriptors only, or nothing): st->items may be NULL. */
        live_stage_part(c, n ? st->items + (size_t)(st->nitems - n) * isz : NULL, n, nfds);
        return 0;
}

/* A part of call id failed and was answered: when more parts follow (PART), they are dropped
 * up to the last one, so the call gets exactly one reply and nothing of it is applied. */
static void discard_rest(struct conn *c, uint32_t id, uint32_t flags)
{
        if (flags & SN_PROTO_PROCESS_PART) {
                c->discarding = true;
                c->discard_id = id;
                live_conn_update(c);
        }
}

/* A PROCESS part that is not run: the rest of a call already answered, descriptors that do not
 * match the items, a part of another call interleaved, unknown flags.  Discards or answers it,
 * closing fds; returns whether it was such a part. */
static bool process_refuse(struct conn *c, const struct snw_header *h, const struct snw_process *in,
                           const uint8_t *items, uint32_t nitems, int *fds, uint32_t nfds)
{
        struct conn_stage *st = &c->stage;

        if (c->discarding && h->id == c->discard_id) {
                /* The rest of a call already answered with its failure: read, its descriptors
                 * closed, never applied nor answered again. */
                closer_close_all(fds, nfds);
                if (!(in->flags & SN_PROTO_PROCESS_PART)) {
                        c->discarding = false;
                        live_conn_update(c);
                }
                return true;
        }
        if (!fds_consistent(items, nitems, nfds)) {
                closer_close_all(fds, nfds);
                if (st->active && st->id == h->id)
                        stage_reset(c);
                discard_rest(c, h->id, in->flags);
                violation(c, h->id, EBADMSG, "fds attached do not match the registrations");
                return true;
        }
        if (st->active && st->id != h->id) {
                closer_close_all(fds, nfds);
                discard_rest(c, h->id, in->flags);
                violation(c, h->id, EBUSY, "interleaved multi-part PROCESS calls");
                return true;
        }
        if (in->flags & ~(SN_PROTO_PROCESS_PART | SN_PROTO_PROCESS_AHEAD) ||
            (in->flags & SN_PROTO_PROCESS_AHEAD &&
             (c->version < 3 || in->flags & SN_PROTO_PROCESS_PART || nitems || st->active ||
              in->max_entries == 0))) {
                closer_close_all(fds, nfds);
                stage_reset(c);
                discard_rest(c, h->id, in->flags);
                reply_simple(c, SN_MSG_PROCESS_REPLY, h->id, EINVAL);
                return true;
        }
        return false;
}

/* The registration items of a PROCESS call and the descriptors they name. */
struct process_call {
        const uint8_t *items;
        uint32_t nitems;
        int *fds;
        uint32_t nfds;
};

/* A part of a multi-part call (every part but the last has SN_PROTO_PROCESS_PART) is staged.
 * Returns true when the call goes on in later parts; else the last part arrived, *call is the
 * whole call (the stage's items and descriptors) and *ret_status its failure, 0 for none. */
static bool process_stage(struct conn *c, const struct snw_header *h, const struct snw_process *in,
                          struct process_call *call, uint32_t *ret_status)
{
        struct conn_stage *st = &c->stage;
        uint32_t err;

        if (!st->active) {
                st->active = true;
                st->id = h->id;
                st->port = in->port;
                live_conn_update(c);
        }
        /* After a failure the rest of the call is only read, never held. */
        if (st->error) {
                closer_close_all(call->fds, call->nfds);
                err = 0;
        } else {
                err = stage_append(c, call->items, call->nitems, call->fds, call->nfds);
        }
        if (err && !st->error)
                st->error = err;
        if (st->port != in->port && !st->error)
                st->error = EINVAL;
        if (in->flags & SN_PROTO_PROCESS_PART)
                return true; /* answered with the last part */
        *ret_status = st->error;
        /* From here the items themselves are accounted (reg_apply). */
        user_charge_sockets(c->user, -(int64_t)st->held);
        st->held = 0;
        call->items = st->items;
        call->nitems = st->nitems;
        call->fds = st->fds;
        call->nfds = st->nfds;
        return false;
}

/* Whether a call of nitems items may run on port (NULL: not the connection's): 0 or the
 * failure it is answered with. */
static uint32_t process_check(struct conn *c, const struct snw_process *in, const struct port *port,
                              uint32_t nitems)
{
        if (!port)
                return EBADF;
        if (in->max_entries == 0 && in->timeout_ms != 0)
                return EINVAL; /* row 2 */
        if (in->max_entries && in->timeout_ms && port_wait_check(&c->session, nitems) < 0)
                return EDQUOT;
        if (sn_msg_size(SN_MSG_PROCESS_REPLY, nitems, in->max_entries ? 1 : 0) > c->max_message)
                return E2BIG; /* cannot happen within limits_call_items_of(); never overflow */
        return 0;
}

/* Applies the call's items to port in order, each taking its descriptor out of call->fds;
 * results[i] is the i-th item's status.  Their epoll_ctl calls go in one batch (epctl.c),
 * flushed before the results are read: a failure found then sets its item's result. */
static void process_apply(struct conn *c, struct port *port, const struct process_call *call,
                          uint32_t *results)
{
        epctl_begin(c->srv->epctl);
        for (uint32_t i = 0; i < call->nitems; i++) {
                struct snw_registration it;
                int fd = -1;

                snw_registration_decode(call->items + (size_t)i * SN_WIRE_SIZE_registration, &it);
                if (it.fd_index == SN_PROTO_BY_HANDLE && c->version < 3) {
                        results[i] = EINVAL; /* handles are version 3's */
                        continue;
                }
                if (it.fd_index != SN_PROTO_NO_FD && it.fd_index != SN_PROTO_BY_HANDLE) {
                        if (c->stage.active)
                                live_stage_lend(c, it.fd_index);
                        fd = call->fds[it.fd_index];
                        call->fds[it.fd_index] = -1;
                }
                c->req_item = i;
                results[i] = reg_apply(port, &c->session, &it, fd, &results[i]);
                c->srv->lent = NULL;
        }
        c->req_item = SESSION_NO_ITEM;
        epctl_end(c->srv->epctl);
        for (uint32_t i = 0; i < call->nitems; i++)
                if (results[i])
                        server_count_entry_error(c->srv, results[i]);
}

/* Answers call id, whose items were applied with results (nitems): at once when it asked for
 * no entries, found some or would not wait, else later, from a wait parked on port. */
static void process_answer(struct conn *c, uint32_t id, const struct snw_process *in,
                           struct port *port, const uint32_t *results, uint32_t nitems)
{
        struct server *srv = c->srv;
        uint32_t max, n;
        size_t room;

        if (in->max_entries == 0) {
                conn_reply_process(c, id, 0, results, nitems, NULL, 0);
                return;
        }
        room = c->max_message - sn_msg_size(SN_MSG_PROCESS_REPLY, nitems, 0);
        max = (uint32_t)SN_MIN((size_t)in->max_entries, room / SN_WIRE_SIZE_entry);
        if (in->flags & SN_PROTO_PROCESS_AHEAD) {
                /* Posted while its thread runs: it keeps its running place and waits, without
                 * a timeout, behind every thread that really waits (port_dispatch()). */
                int r = port_wait(port, &c->session, id, in->thread, max, SN_PROTO_INFINITE, true,
                                  NULL, 0);

                if (r < 0)
                        conn_reply_process(c, id, (uint32_t)-r, NULL, 0, NULL, 0);
                return;
        }
        /* The calling thread is back: it no longer runs anywhere (row 72), and it is first in
         * line for this port, before parked waiters. */
        runner_release(&c->session, in->thread, port);
        /* Row 11: this call's own registrations come first, then the dequeue. */
        n = max && port_check_runners(port) ? port_take(port, srv->ebuf, max) : 0;
        if (n)
                port_mark_running(port, &c->session, in->thread);
        if (n || in->timeout_ms == 0) {
                conn_reply_process(c, id, n ? 0 : ETIMEDOUT, results, nitems, srv->ebuf, n);
        } else {
                int r = port_wait(port, &c->session, id, in->thread, max, in->timeout_ms, false,
                                  results, nitems);

                if (r < 0)
                        conn_reply_process(c, id, (uint32_t)-r, results, nitems, NULL, 0);
        }
}

/*
 * A thread's dequeue on a port ends the dequeue it posted ahead there, which is answered first
 * (ECANCELED, no entries: it had found none, or its answer would already be on its way); a
 * second dequeue posted ahead while one is still posted is refused (EBUSY).  Returns 0 or the
 * status the call fails with.
 */
static uint32_t process_ahead(struct conn *c, const struct snw_process *in, struct port *port)
{
        struct wait *w;

        if (in->max_entries == 0)
                return 0; /* registrations only: the thread is still running */
        w = port_wait_ahead(port, &c->session, in->thread);
        if (!w)
                return 0;
        if (in->flags & SN_PROTO_PROCESS_AHEAD)
                return EBUSY;
        wait_cancel(w, ECANCELED);
        return 0;
}

static void handle_process(struct conn *c, const struct snw_header *h, const uint8_t *buf,
                           const struct sn_msg_desc *d, int *fds, uint32_t nfds)
{
        struct process_call call = { sn_msg_array(buf, d, 1), h->count, fds, nfds };
        uint32_t *results = NULL, stack_results[256];
        struct conn_stage *st = &c->stage;
        uint32_t status = 0;
        struct snw_process in;
        struct port *port;

        snw_process_decode(sn_msg_body(buf), &in);
        if (process_refuse(c, h, &in, call.items, call.nitems, fds, nfds))
                return;
        if ((in.flags & SN_PROTO_PROCESS_PART || st->active) &&
            process_stage(c, h, &in, &call, &status))
                return;
        port = port_find(&c->session, in.port);
        if (!status && port)
                status = process_ahead(c, &in, port);
        if (!status)
                status = process_check(c, &in, port, call.nitems);
        if (!status && call.nitems > SN_ARRAY_SIZE(stack_results)) {
                results = malloc((size_t)call.nitems * sizeof(uint32_t));
                if (!results)
                        status = ENOMEM;
        }
        if (status) {
                /* Row 7: a failed call changes nothing. */
                closer_close_all(call.fds, call.nfds);
                if (st->active)
                        st->nfds = 0, stage_reset(c);
                conn_reply_process(c, h->id, status, NULL, 0, NULL, 0);
                return;
        }
        if (!results)
                results = stack_results;
        process_apply(c, port, &call, results);
        if (st->active)
                st->nfds = 0, stage_reset(c); /* every fd was consumed above */
        if (!sn_list_empty(&port->skips))
                port_harvest_skips(port);
        process_answer(c, h->id, &in, port, results, call.nitems);
        if (port->nwaiters)
                port_dispatch(port);
        if (results != stack_results)
                free(results);
}

/*
 * A PROCESS call whose descriptors the pool had no room for (the kernel dropped those beyond
 * user_fd_room()): refused as a limit refuses it, with EDQUOT and nothing applied, the rest of
 * a multi-part call read and dropped.
 */
/* Why the kernel dropped descriptors a message carried. */
enum fds_cut {
        FDS_CUT_NONE,
        FDS_CUT_POOL,  /* no room for them in the unprivileged users' pool (EDQUOT) */
        FDS_CUT_TABLE, /* the daemon's descriptor table is full (EMFILE) */
};

static void refuse_fds(struct conn *c, const struct snw_header *h, const uint8_t *buf,
                       enum fds_cut cut)
{
        struct conn_stage *st = &c->stage;
        struct snw_process in;
        unsigned long long dropped;

        snw_process_decode(sn_msg_body(buf), &in);
        if (c->discarding && h->id == c->discard_id) {
                if (!(in.flags & SN_PROTO_PROCESS_PART)) {
                        c->discarding = false;
                        live_conn_update(c);
                }
                return;
        }
        if (st->active && st->id == h->id)
                stage_reset(c);
        c->user->refused++;
        c->req_id = h->id;
        c->req_item = SESSION_NO_ITEM;
        if (cut == FDS_CUT_POOL)
                server_log_refusal(c->srv, &c->session, c->uid, "reserve-fds");
        else if (sn_ratelimit_ok(&c->srv->refuse_log, &dropped))
                log_warning("connection %llu (pid %d, uid %u): its descriptors could not be "
                            "taken, the daemon is out of descriptors (RLIMIT_NOFILE %llu)",
                            (unsigned long long)c->serial, (int)c->pid, (unsigned)c->uid,
                            (unsigned long long)c->srv->fd_capacity);
        discard_rest(c, h->id, in.flags);
        conn_reply_process(c, h->id, cut == FDS_CUT_POOL ? EDQUOT : EMFILE, NULL, 0, NULL, 0);
}

/* Handles one message of len bytes and its nfds descriptors (taken); fds_cut: the kernel
 * dropped some it carried, and why. */
/* Checks a received message before any request runs: well formed, descriptors where a request
 * may carry them, HELLO first.  Returns whether it may run (*h and *d describe it); if not, it
 * was answered or the connection dropped, and fds are closed. */
static bool conn_admit(struct conn *c, const uint8_t *buf, size_t len, int *fds, uint32_t nfds,
                       enum fds_cut fds_cut, struct snw_header *h, const struct sn_msg_desc **d)
{
        int r;

        r = sn_msg_check(buf, len, h, d);
        if (r < 0) {
                closer_close_all(fds, nfds);
                violation(c, len >= SN_HEADER_SIZE ? sn_get_u32(buf + 8) : 0, (uint32_t)-r,
                          r == -EOPNOTSUPP ? "unknown message type" : "malformed message");
                return false;
        }
        if ((nfds || fds_cut) && !c->passed_fds) {
                c->passed_fds = true;
                live_conn_update(c);
        }
        if (fds_cut && h->type == SN_MSG_PROCESS && c->hello && !h->status) {
                closer_close_all(fds, nfds);
                refuse_fds(c, h, buf, fds_cut);
                return false;
        }
        if (h->nfds != nfds || h->status || (nfds && h->type != SN_MSG_PROCESS)) {
                closer_close_all(fds, nfds);
                violation(c, h->id, EBADMSG,
                          h->status ? "nonzero status in a request"
                                    : "file descriptors missing or not expected");
                return false;
        }
        if (!c->hello && h->type != SN_MSG_HELLO) {
                closer_close_all(fds, nfds); /* a PROCESS may carry some */
                violation(c, h->id, EPROTO, "request before HELLO");
                conn_kill(c, "request before HELLO");
                return false;
        }
        return true;
}

/* Runs one admitted request by its type. */
static void conn_run(struct conn *c, const struct snw_header *h, const uint8_t *buf,
                     const struct sn_msg_desc *d, int *fds, uint32_t nfds)
{
        switch (h->type) {
        case SN_MSG_HELLO:
                handle_hello(c, h, buf);
                break;
        case SN_MSG_PORT_CREATE:
                handle_port_create(c, h, buf, d);
                break;
        case SN_MSG_PORT_OPEN:
                handle_port_open(c, h, buf, d);
                break;
        case SN_MSG_THREAD_EXIT:
                handle_thread_exit(c, h, buf);
                break;
        case SN_MSG_PORT_CLOSE:
                handle_port_close(c, h, buf);
                break;
        case SN_MSG_PROCESS:
                handle_process(c, h, buf, d, fds, nfds);
                break;
        case SN_MSG_POST:
                handle_post(c, h, buf, d);
                break;
        case SN_MSG_SOCKET_CLOSE:
                handle_socket_close(c, h, buf);
                break;
        case SN_MSG_STATUS:
                handle_status(c, h);
                break;
        case SN_MSG_LIMIT_INFO:
                handle_limit_info(c, h);
                break;
        case SN_MSG_CONTROL:
                control_handle(c, h->id, sn_msg_array(buf, d, 1), h->count);
                break;
        case SN_MSG_PORT_LINGER:
        case SN_MSG_PORT_TAKE:
                if (c->version < 2) {
                        violation(c, h->id, EOPNOTSUPP, "a version 2 request on a version 1 "
                                                       "connection");
                        break;
                }
                if (h->type == SN_MSG_PORT_LINGER)
                        handle_port_linger(c, h, buf);
                else
                        handle_port_take(c, h, buf);
                break;
        default:
                violation(c, h->id, EPROTO, "a reply type sent as a request");
                break;
        }
}

static void conn_handle(struct conn *c, const uint8_t *buf, size_t len, int *fds, uint32_t nfds,
                        enum fds_cut fds_cut)
{
        const struct sn_msg_desc *d;
        struct snw_header h;

        c->srv->counters.messages_in++;
        if (c->srv->trace)
                trace(c, "<-", buf, len);
        if (c->mon) {
                /* A monitor only reads: anything it sends ends it. */
                closer_close_all(fds, nfds);
                conn_kill(c, "a monitor sent a message");
                return;
        }
        monitor_see(c, false, buf, len);
        if (!conn_admit(c, buf, len, fds, nfds, fds_cut, &h, &d))
                return;
        live_conn_request(c, h.id, true);
        c->req_id = h.id; /* a refusal names it (server_log_refusal) */
        c->req_item = SESSION_NO_ITEM;
        conn_run(c, &h, buf, d, fds, nfds);
        live_conn_request(c, 0, false);
}

/* Receives and handles one message from the socket.  Returns 1 when one was handled (or
 * refused), 0 when none is there, -1 when the connection ended. */
static int conn_read_one(struct conn *c)
{
        struct server *srv = c->srv;
        int fds[SN_PROTO_MAX_FDS];
        unsigned nfds = 0, room = user_fd_room(srv, c->user, c->max_fds);
        bool pooled = room < c->max_fds, cut = false;
        ssize_t n;

        /* An unprivileged user's descriptors beyond the pool never enter the table.
         * Otherwise there is room for the most a message can carry, so that more than
         * max_fds are seen (and refused) rather than cut off by the kernel. */
        n = sn__fdmsg_recv_room(c->fd, srv->rbuf, c->max_message, fds,
                                pooled ? room : SN_PROTO_MAX_FDS, &nfds, &cut, MSG_DONTWAIT);
        if (n == -EAGAIN || n == -EWOULDBLOCK)
                return 0;
        if (c->ring && c->ring->stalled) {
                /* The message a SOCKET record announced has left the socket: the journal must
                 * say so before it is handled, or a daemon restored after a crash while
                 * handling it would wait for it again and take the client's next message (its
                 * retry) for it, leaving that message's own record waiting forever. */
                c->ring->stalled = false;
                live_ring_update(c);
        }
        if (n == 0 && (nfds || cut)) {
                /* A zero-length datagram, not the end of the stream: the end carries no
                 * descriptors.  What came with it is closed like any bad message. */
                closer_close_all(fds, nfds);
                violation(c, 0, EBADMSG, "empty message with file descriptors");
                return 1;
        }
        if (n == 0) {
                conn_kill(c, "disconnected");
                return -1;
        }
        if (n == -EMSGSIZE || (n > 0 && nfds > c->max_fds)) {
                /* SOCK_SEQPACKET keeps boundaries: the next message is still sound.  The
                 * buffer holds the message's start (all of it, or max_message bytes): the
                 * request id is known when its header came. */
                size_t got = n > 0 ? (size_t)n : c->max_message;

                closer_close_all(fds, nfds);
                violation(c, got >= SN_HEADER_SIZE ? sn_get_u32(srv->rbuf + 8) : 0,
                          n == -EMSGSIZE ? EMSGSIZE : ETOOMANYREFS,
                          n == -EMSGSIZE ? "message larger than the limit"
                                         : "more fds than the limit");
                return 1;
        }
        if (n < 0) {
                conn_kill(c, "receive failed");
                return -1;
        }
        /* Cut although there was room for them all (MSG_CTRUNC): the kernel could not install
         * them, the daemon's own table is full.  The request is answered all the same
         * (EMFILE), never left without a reply. */
        conn_handle(c, srv->rbuf, (size_t)n, fds, nfds,
                    !cut ? FDS_CUT_NONE : pooled ? FDS_CUT_POOL : FDS_CUT_TABLE);
        return c->dead ? -1 : 1;
}

static void conn_ring_turn(struct conn *c, bool socket_ready);

static void conn_read(struct conn *c)
{
        for (int i = 0; i < 64 && !c->dead; i++) {
                if (c->ring) {
                        /* HELLO chose the rings: from here on the SQ says what comes. */
                        conn_ring_turn(c, true);
                        return;
                }
                if (conn_read_one(c) <= 0)
                        return;
        }
}

/*
 * With the rings, a message on the socket must have been announced by a SOCKET record in the
 * SQ, which the client publishes before it sends.  So once the SQ is empty and no record waits
 * for its message, the socket holds nothing: its end (EOF) ends the connection, and a message
 * there breaks the protocol (unless a record came meanwhile: then the turn goes on).  Returns
 * whether the turn must go on.
 */
static bool ring_socket_check(struct conn *c)
{
        char byte;
        ssize_t n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return false;
        if (n > 0 && sn_ring_rx_ready(&c->ring->sq))
                return true;
        if (n == 0)
                conn_kill(c, "disconnected");
        else if (n > 0)
                conn_kill(c, "sent a message on its socket that its ring did not announce");
        else
                conn_kill(c, "receive failed");
        return false;
}

/*
 * Runs what the client put in its submission ring: each record is copied out of the shared
 * memory before anything in it is looked at (sn_ring_get), its space given back at once, and
 * the copy handled exactly like a datagram of the socket.  A SOCKET record stops the ring until
 * its message has come on the socket.  At most 64 requests per turn, so that one client cannot
 * hold the loop; the rest waits for the next turn.  When the ring is empty the daemon announces
 * it sleeps (the client then rings the doorbell), and the client is woken once, at the end,
 * for every reply and all the room the turn made.  socket_ready: the loop saw the socket
 * readable, so it is looked at once the ring is empty (otherwise it costs no system call).
 */
static void conn_ring_turn(struct conn *c, bool socket_ready)
{
        struct conn_ring *r = c->ring;
        struct server *srv = c->srv;
        int budget = 64;

        r->in_turn = true;
        while (!c->dead) {
                uint32_t len, kind;
                int k;

                if (budget-- == 0) {
                        event_active(&r->ev, EV_READ, 0);
                        break;
                }
                if (r->stalled) {
                        /* conn_read_one() ends the stall as it takes the message. */
                        k = conn_read_one(c);
                        if (k <= 0)
                                break;
                        continue;
                }
                k = sn_ring_get(&r->sq, srv->rbuf, c->max_message, &len, &kind);
                if (k < 0) {
                        log_notice("connection %llu (pid %d): %s", (unsigned long long)c->serial,
                                   (int)c->pid,
                                   k == -EMSGSIZE ? "a request in its ring is larger than "
                                                    "max-message"
                                                  : "its submission ring is broken");
                        conn_kill(c, "broke its submission ring");
                        break;
                }
                if (k == 0) {
                        /* Replies first: the client may be waiting for them while we spin. */
                        ring_wake_client(r);
                        if (ring_spin(r) || !ring_try_sleep(r))
                                continue;
                        if (!socket_ready || !ring_socket_check(c))
                                break;
                        sn_ring_store(&r->hdr->daemon_sleeps, 0);
                        continue;
                }
                /* Copied: the space is the client's again.  A crash from here on must answer the
                 * request (EIO, restore.c): it is marked in flight before it leaves the ring. */
                if (kind == SN_RING_MSG && len >= SN_HEADER_SIZE)
                        live_conn_request(c, sn_get_u32(srv->rbuf + 8), true);
                if (kind == SN_RING_SOCKET) {
                        r->stalled = true;
                        r->stall_bell = false;
                        live_ring_update(c);
                }
                sn_ring_rx_publish(&r->sq);
                r->sq_freed = true;
                r->taken++;
                if (kind == SN_RING_SOCKET)
                        continue;
                conn_handle(c, srv->rbuf, len, NULL, 0, FDS_CUT_NONE);
        }
        r->in_turn = false;
        if (!c->dead)
                ring_wake_client(r);
}

/*
 * Doorbells that find no work.  A client rings the daemon's doorbell when it sees the daemon
 * announce that it sleeps, so a doorbell that finds nothing in the SQ, no reply waiting for
 * room and no socket message announced is rare (a race with the announcement) unless the client
 * rings for nothing on purpose, which would cost the daemon a wake-up each time.  Those are
 * counted against the user's max-doorbells-per-user a second (a bucket that holds one second's
 * worth); a connection that rings for nothing when its user's bucket is empty, and has itself
 * rung for nothing at least RING_MUTE_MIN times in its current second, has its doorbell muted
 * for RING_MUTE_MS: its SQ is then looked at when the mute ends, so it slows only itself.  The
 * second condition keeps a well-behaved connection (whose doorbell for nothing is a rare race)
 * from being muted because another process of its user emptied the bucket.
 */
#define RING_MUTE_MS 50
#define RING_MUTE_MIN 64

static void conn_unmute_cb(evutil_socket_t fd, short what, void *arg);

/* What a doorbell asks for: its datagrams taken, the replies that wait for room sent, the SQ
 * run. */
static void conn_ring_answer_bell(struct conn *c)
{
        ring_bell_drain(c->ring);
        if (!sn_list_empty(&c->outq))
                conn_flush(c);
        if (!c->dead)
                conn_ring_turn(c, false);
}

static bool bell_allowed(struct server *srv, struct user *u, uint64_t now)
{
        uint64_t rate = srv->limits.max_doorbells_per_user, elapsed;

        elapsed = now - u->bell_stamp_ns;
        if (elapsed >= 1000000000u || u->bell_stamp_ns == 0) {
                u->bell_tokens = (uint32_t)rate;
                u->bell_stamp_ns = now;
        } else if (elapsed * rate >= 1000000000u) {
                /* elapsed < 1 s and rate < 2^25: no overflow */
                u->bell_tokens = (uint32_t)SN_MIN(rate, u->bell_tokens +
                                                                elapsed * rate / 1000000000u);
                u->bell_stamp_ns = now;
        }
        if (u->bell_tokens == 0)
                return false;
        u->bell_tokens--;
        return true;
}

static void conn_bell_idle(struct conn *c)
{
        struct server *srv = c->srv;
        struct conn_ring *r = c->ring;
        const struct timeval mute = { 0, RING_MUTE_MS * 1000 };
        unsigned long long dropped;
        struct timespec ts;
        uint64_t now;
        bool allowed;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        if (now - r->idle_since_ns >= 1000000000u) {
                r->idle_since_ns = now;
                r->idle_bells = 0;
        }
        r->idle_bells++;
        allowed = bell_allowed(srv, c->user, now); /* charged to the user either way */
        if (allowed || r->idle_bells < RING_MUTE_MIN)
                return;
        if (r->ev_added) {
                event_del(&r->ev);
                r->ev_added = false;
        }
        evtimer_assign(&r->mute_ev, srv->base, conn_unmute_cb, c);
        evtimer_add(&r->mute_ev, &mute);
        r->muted = true;
        r->mutes++;
        srv->counters.doorbell_mutes++;
        c->user->bell_mutes++;
        if (sn_ratelimit_ok(&srv->refuse_log, &dropped))
                log_notice("connection %llu (pid %d, uid %u): rings its doorbell for nothing more "
                           "than max-doorbells-per-user (%u a second): muted for %d ms%s",
                           (unsigned long long)c->serial, (int)c->pid, (unsigned)c->uid,
                           (unsigned)srv->limits.max_doorbells_per_user, RING_MUTE_MS,
                           dropped ? " (similar messages suppressed)" : "");
}

/* The daemon's doorbell: the client put requests in the SQ, or made room in the CQ. */
static void conn_bell_cb(evutil_socket_t fd, short what, void *arg)
{
        struct conn *c = arg;
        struct conn_ring *r = c->ring;
        uint64_t taken = r->taken;
        size_t outq = c->outq_bytes;
        bool stalled = r->stalled;

        (void)fd;
        (void)what;
        c->srv->counters.doorbells++;
        conn_ring_answer_bell(c);
        /* Work is something taken from the SQ, a reply that left for the room the client made
         * in the CQ, or the announced socket message taken.  A doorbell that finds the daemon
         * still waiting for either is not: a client that never empties its CQ, or announces a
         * socket message and never sends it, would otherwise ring for nothing unmuted.  The
         * client rings after publishing a SOCKET record and before sending its message, so the
         * first doorbell of a stall may well come before the message: that one is free. */
        if (c->dead || r->taken != taken || c->outq_bytes < outq || r->stalled != stalled)
                return;
        if (r->stalled && !r->stall_bell) {
                r->stall_bell = true;
                return;
        }
        conn_bell_idle(c);
}

/* A mute ended: the doorbell is watched again, and what came meanwhile is run now. */
static void conn_unmute_cb(evutil_socket_t fd, short what, void *arg)
{
        struct conn *c = arg;
        struct conn_ring *r = c->ring;

        (void)fd;
        (void)what;
        r->muted = false;
        if (c->dead)
                return;
        if (event_add(&r->ev, NULL) == 0)
                r->ev_added = true;
        conn_ring_answer_bell(c);
}

static void conn_io_cb(evutil_socket_t fd, short what, void *arg)
{
        struct conn *c = arg;

        if (what & EV_WRITE)
                conn_flush(c);
        if (what & EV_READ && !c->dead)
                conn_read(c);
}

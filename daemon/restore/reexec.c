/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * reexec.c - the daemon's whole state, written to a memfd and read back by a new image of the
 * daemon after execve(): a re-exec in place keeps the PID, the listening socket, every client
 * connection, every held socket and every port's kernel epoll instance (so the kernel's
 * readiness, edge and one-shot state carry over exactly), and rebuilds everything else.
 *
 * The format (docs/reexec-state.md) is versioned; a reader refuses a version or a layout it
 * does not know.  reexec_load() runs twice: in a child of the old image as `socknotifyd
 * --check-state=FD` (srv NULL: everything is read and checked, nothing applied), and in the
 * new image (apply).  Every count read bounds what follows it by the bytes that remain, so a
 * corrupt state is refused, never trusted.
 *
 * Not carried: connections already dead (reaped first), the handshake timer (restarted in
 * full), the reserve descriptor and libevent's own descriptors (made again).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/counters.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "daemon/restore/reexec.h"
#include "daemon/service/conn.h"
#include "proto/codec.h"

#define STATE_MAGIC "SNSTATE\0"
#define STATE_END "SNSTEND\0"
#define STATE_VERSION 3u /* 2: a registration's EDGE OUT side (its duplicate and state);
                          * 3: a port's linger time and what is left of it */

/* ---- writing ------------------------------------------------------------------------------ */

struct wbuf {
        uint8_t *p;
        size_t len, cap;
        bool oom;
};

static void put(struct wbuf *b, const void *src, size_t n)
{
        if (b->oom || !n)
                return; /* n 0: src may be NULL (an absent string), which memcpy must not get */
        if (b->len + n > b->cap) {
                size_t cap = SN_MAX(b->cap * 2, b->len + n + 4096);
                uint8_t *p = realloc(b->p, cap);

                if (!p) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, src, n);
        b->len += n;
}

static void put_u8(struct wbuf *b, uint8_t v)
{
        put(b, &v, 1);
}

static void put_u16(struct wbuf *b, uint16_t v)
{
        uint8_t x[2];

        sn_put_u16(x, v);
        put(b, x, 2);
}

static void put_u32(struct wbuf *b, uint32_t v)
{
        uint8_t x[4];

        sn_put_u32(x, v);
        put(b, x, 4);
}

static void put_u64(struct wbuf *b, uint64_t v)
{
        uint8_t x[8];

        sn_put_u64(x, v);
        put(b, x, 8);
}

static void put_str(struct wbuf *b, const char *s)
{
        size_t n = s ? strlen(s) : 0;

        put_u32(b, s ? (uint32_t)n : UINT32_MAX);
        put(b, s, n);
}

static uint32_t remaining_ms(const struct wait *w)
{
        struct timespec now;
        int64_t ms;

        if (w->timeout_ms == SN_PROTO_INFINITE)
                return SN_PROTO_INFINITE;
        clock_gettime(CLOCK_MONOTONIC, &now);
        ms = (int64_t)(w->deadline.tv_sec - now.tv_sec) * 1000 +
             (w->deadline.tv_nsec - now.tv_nsec) / 1000000;
        return ms < 1 ? 1 : (uint32_t)SN_MIN(ms, (int64_t)0xfffffffe);
}

static void save_conn(struct wbuf *b, const struct conn *c)
{
        const struct stage *st = &c->stage;
        struct sn_list *pos, *tmp;
        uint32_t n = 0;

        put_u64(b, c->serial);
        put_u32(b, (uint32_t)c->fd);
        put_u32(b, (uint32_t)c->pid);
        put_u32(b, (uint32_t)c->uid);
        put_u32(b, (uint32_t)c->gid);
        put_u8(b, (uint8_t)(c->hello | c->passed_fds << 1 | (c->version & 0x3f) << 2));
        put_u32(b, c->violations);
        put_u8(b, st->active);
        if (st->active) {
                put_u32(b, st->id);
                put_u32(b, st->port);
                put_u32(b, st->error);
                put_u32(b, st->nitems);
                put(b, st->items, (size_t)st->nitems * SN_WIRE_SIZE_registration);
                put_u32(b, st->nfds);
                for (uint32_t i = 0; i < st->nfds; i++)
                        put_u32(b, (uint32_t)st->fds[i]);
        }
        sn_list_foreach_safe(pos, tmp, &c->outq)
                n++;
        put_u32(b, n);
        sn_list_foreach_safe(pos, tmp, &c->outq) {
                const struct outmsg *m = sn_list_entry(pos, struct outmsg, link);

                put_u32(b, (uint32_t)m->len);
                put(b, m->data, m->len);
        }
}

static void save_port(struct wbuf *b, const struct port *p)
{
        struct sn_list *pos, *tmp;

        put_u32(b, p->id);
        put_str(b, p->name);
        put_u32(b, (uint32_t)p->uid);
        put_u32(b, p->concurrency);
        put_u32(b, (uint32_t)p->epfd);
        put_u64(b, p->epoch);
        put_u32(b, p->linger_ms);
        put_u32(b, p->lingering ? port_linger_left(p) : 0);
        put_u32(b, p->nhandles);
        sn_list_foreach_safe(pos, tmp, &p->handles)
                put_u64(b, sn_list_entry(pos, struct handle, port_link)->conn->serial);
        put_u32(b, p->nregs);
        sn_list_foreach_safe(pos, tmp, &p->regs) {
                const struct reg *g = sn_list_entry(pos, struct reg, port_link);

                put_u32(b, g->slot);
                put_u32(b, (uint32_t)g->fd);
                put_u64(b, g->dev);
                put_u64(b, g->ino);
                put_u64(b, g->key);
                put_u32(b, g->client_fd);
                put_u16(b, g->filter);
                put_u8(b, g->trigger);
                put_u8(b, g->state);
                put_u8(b, g->edge_skip);
                put_u8(b, (uint8_t)(g->stream | g->fresh << 1 | g->in_epoll << 2 | g->parked << 3 |
                                    g->fired << 4));
                put_u64(b, g->creator ? g->creator->serial : 0);
                put_u32(b, g->out_fd >= 0 ? (uint32_t)g->out_fd : UINT32_MAX);
                put_u8(b, (uint8_t)(g->out_in_epoll | g->out_seen << 1 | g->hup_seen << 2));
                put_u8(b, g->out_state);
        }
        put_u32(b, p->nqueued);
        sn_list_foreach_safe(pos, tmp, &p->queue) {
                const struct packet *pkt = sn_list_entry(pos, struct packet, link);

                put_u8(b, (uint8_t)pkt->kind);
                if (pkt->kind == SN_PROTO_KIND_POSTED) {
                        put_u64(b, pkt->key);
                        put_u64(b, pkt->overlapped);
                        put_u32(b, pkt->events);
                } else {
                        put_u32(b, SN_CONTAINER_OF(pkt, struct reg, pkt)->slot);
                        put_u32(b, pkt->events);
                }
                put_u64(b, pkt->epoch);
        }
        put_u32(b, p->nrunning);
        sn_list_foreach_safe(pos, tmp, &p->runners) {
                const struct runner *r = sn_list_entry(pos, struct runner, port_link);

                put_u64(b, r->conn->serial);
                put_u32(b, r->thread);
        }
        put_u32(b, p->nwaiters);
        sn_list_foreach_safe(pos, tmp, &p->waiters) {
                const struct wait *w = sn_list_entry(pos, struct wait, port_link);

                put_u64(b, w->conn->serial);
                put_u32(b, w->id);
                put_u32(b, w->thread);
                put_u32(b, w->max_entries);
                put_u32(b, remaining_ms(w));
                put_u32(b, w->nresults);
                for (uint32_t i = 0; i < w->nresults; i++)
                        put_u32(b, w->results[i]);
        }
}

int reexec_save(struct server *srv, int fd)
{
        struct wbuf b = { 0 };
        struct sn_list *pos, *tmp;
        const struct counters *k = &srv->counters;
        uint32_t n = 0;
        size_t off = 0;

        put(&b, STATE_MAGIC, 8);
        put_u32(&b, STATE_VERSION);
        put_u32(&b, 0);
        put_u64(&b, srv->next_conn_serial);
        put_u32(&b, srv->next_port_id);
        put_u64(&b, k->connections_total);
        put_u64(&b, k->messages_in);
        put_u64(&b, k->messages_out);
        put_u64(&b, k->registrations_applied);
        put_u64(&b, k->notifications);
        put_u64(&b, k->posted_delivered);
        put_u64(&b, k->protocol_violations);
        put_u64(&b, k->reexecs + 1);
        for (int e = 0; e < SN_ERRNO_MAX; e++) {
                put_u64(&b, k->call_errors[e]);
                put_u64(&b, k->entry_errors[e]);
        }
        put_u32(&b, (uint32_t)srv->listen_fd);
        put_u8(&b, srv->owns_path);
        put_str(&b, srv->path);
        put_u32(&b, srv->nconns);
        sn_list_foreach_safe(pos, tmp, &srv->conns)
                save_conn(&b, sn_list_entry(pos, struct conn, link));
        sn_list_foreach_safe(pos, tmp, &srv->users)
                n++;
        put_u32(&b, n);
        sn_list_foreach_safe(pos, tmp, &srv->users) {
                const struct user *u = sn_list_entry(pos, struct user, link);

                put_u32(&b, (uint32_t)u->uid);
                put_u64(&b, u->refused);
        }
        put_u32(&b, srv->nports);
        sn_list_foreach_safe(pos, tmp, &srv->ports)
                save_port(&b, sn_list_entry(pos, struct port, srv_link));
        put(&b, STATE_END, 8);
        if (b.oom) {
                free(b.p);
                return -ENOMEM;
        }
        while (off < b.len) {
                ssize_t w = write(fd, b.p + off, b.len - off);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        free(b.p);
                        return w < 0 ? -errno : -EIO;
                }
                off += (size_t)w;
        }
        free(b.p);
        return lseek(fd, 0, SEEK_SET) < 0 ? -errno : 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

struct rbuf {
        const uint8_t *p;
        size_t len, off;
        uint32_t version; /* of the state being read */
        bool bad;
        const char *what; /* the first thing found wrong */
};

static const uint8_t *take(struct rbuf *b, size_t n)
{
        const uint8_t *p;

        if (b->bad || n > b->len - b->off) {
                b->bad = true;
                if (!b->what)
                        b->what = "truncated";
                return NULL;
        }
        p = b->p + b->off;
        b->off += n;
        return p;
}

static uint8_t get_u8(struct rbuf *b)
{
        const uint8_t *p = take(b, 1);

        return p ? *p : 0;
}

static uint16_t get_u16(struct rbuf *b)
{
        const uint8_t *p = take(b, 2);

        return p ? sn_get_u16(p) : 0;
}

static uint32_t get_u32(struct rbuf *b)
{
        const uint8_t *p = take(b, 4);

        return p ? sn_get_u32(p) : 0;
}

static uint64_t get_u64(struct rbuf *b)
{
        const uint8_t *p = take(b, 8);

        return p ? sn_get_u64(p) : 0;
}

/* A count of items of at least item_size bytes each: bounded by what remains. */
static uint32_t get_count(struct rbuf *b, size_t item_size)
{
        uint32_t n = get_u32(b);

        if (!b->bad && (uint64_t)n * item_size > b->len - b->off) {
                b->bad = true;
                b->what = "a count larger than the state";
                return 0;
        }
        return n;
}

static void fail(struct rbuf *b, const char *what)
{
        if (!b->bad)
                b->what = what;
        b->bad = true;
}

/* A descriptor the state names: open in this process (it was inherited). */
static int get_fd(struct rbuf *b)
{
        uint32_t v = get_u32(b);

        if (!b->bad && (v > INT32_MAX || fcntl((int)v, F_GETFD) < 0))
                fail(b, "a descriptor that is not open");
        return b->bad ? -1 : (int)v;
}

/* Reads a string into out (size 256); returns out, or NULL for an absent string. */
static const char *get_str(struct rbuf *b, char *out, size_t outsz)
{
        uint32_t n = get_u32(b);
        const uint8_t *p;

        if (n == UINT32_MAX)
                return NULL;
        if (n >= outsz) {
                fail(b, "a string too long");
                return NULL;
        }
        p = take(b, n);
        if (!p)
                return NULL;
        memcpy(out, p, n);
        out[n] = 0;
        return out;
}

struct loader {
        struct server *srv; /* NULL: check only */
        struct rbuf b;
        struct conn **conns; /* by serial, ascending */
        uint32_t nconns;
};

static struct conn *conn_by_serial(struct loader *l, uint64_t serial)
{
        uint32_t lo = 0, hi = l->nconns;

        if (!l->srv)
                return NULL;
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (l->conns[mid]->serial == serial)
                        return l->conns[mid];
                if (l->conns[mid]->serial < serial)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        fail(&l->b, "a connection that is not in the state");
        return NULL;
}

static void load_conn(struct loader *l, uint32_t index)
{
        struct rbuf *b = &l->b;
        struct ucred cred;
        uint64_t serial = get_u64(b);
        int fd = get_fd(b);
        struct conn *c = NULL;
        bool hello;
        uint8_t flags;
        uint32_t violations;

        cred.pid = (pid_t)get_u32(b);
        cred.uid = (uid_t)get_u32(b);
        cred.gid = (gid_t)get_u32(b);
        flags = get_u8(b);
        hello = flags & 1;
        violations = get_u32(b);
        if (index && l->srv && !b->bad && serial <= l->conns[index - 1]->serial)
                fail(b, "connections out of order");
        if (l->srv && !b->bad) {
                c = conn_adopt(l->srv, fd, &cred, serial, hello);
                if (!c) {
                        fail(b, "out of memory");
                } else {
                        /* States before version 3 had only version-1 connections. */
                        c->version = (uint16_t)SN_MAX(flags >> 2, 1);
                        l->conns[l->nconns++] = c;
                }
        }
        if (c) {
                c->violations = violations;
                c->passed_fds = flags & 2;
        }
        if (get_u8(b)) {
                uint32_t id = get_u32(b), port = get_u32(b), error = get_u32(b);
                uint32_t nitems = get_count(b, SN_WIRE_SIZE_registration);
                const uint8_t *items = take(b, (size_t)nitems * SN_WIRE_SIZE_registration);
                uint32_t nfds = get_count(b, 4);
                int *fds = calloc(SN_MAX(nfds, 1u), sizeof(int));

                if (!fds)
                        fail(b, "out of memory");
                for (uint32_t i = 0; fds && i < nfds; i++)
                        fds[i] = get_fd(b);
                if (c && !b->bad && conn_adopt_stage(c, id, port, error, items, nitems, fds, nfds))
                        fail(b, "a staged call that cannot be restored");
                free(fds);
        }
        for (uint32_t n = get_count(b, 4); n && !b->bad; n--) {
                uint32_t len = get_count(b, 1);
                const uint8_t *msg = take(b, len);

                if (c && !b->bad && conn_adopt_output(c, msg, len) < 0)
                        fail(b, "out of memory");
        }
}

static void load_port(struct loader *l)
{
        struct rbuf *b = &l->b;
        struct server *srv = l->srv;
        char namebuf[256];
        uint32_t id = get_u32(b);
        const char *name = get_str(b, namebuf, sizeof(namebuf));
        uid_t uid = (uid_t)get_u32(b);
        uint32_t concurrency = get_u32(b);
        int epfd = get_fd(b);
        uint64_t epoch = get_u64(b);
        uint32_t linger_ms = b->version >= 3 ? get_u32(b) : 0;
        uint32_t linger_left = b->version >= 3 ? get_u32(b) : 0;
        struct port *p = NULL;
        struct wait_rec {
                struct conn *conn;
                uint32_t id, thread, max_entries, timeout_ms, n;
                const uint8_t *results;
        } *waits = NULL;
        uint32_t nwaits;

        if (srv && !b->bad) {
                p = port_adopt(srv, id, name, uid, concurrency, epfd, epoch);
                if (!p)
                        fail(b, "out of memory");
                else if (name)
                        p->linger_ms = linger_ms;
        }
        for (uint32_t n = get_count(b, 8); n && !b->bad; n--) {
                struct conn *c = conn_by_serial(l, get_u64(b));

                if (p && c && port_handle_add(c, p) < 0)
                        fail(b, "out of memory");
        }
        for (uint32_t n = get_count(b, 50); n && !b->bad; n--) {
                struct reg t = { 0 };
                uint32_t slot = get_u32(b);
                uint8_t flags;
                uint64_t creator;

                t.fd = get_fd(b);
                t.dev = get_u64(b);
                t.ino = get_u64(b);
                t.key = get_u64(b);
                t.client_fd = get_u32(b);
                t.filter = get_u16(b);
                t.trigger = get_u8(b);
                t.state = get_u8(b);
                t.edge_skip = get_u8(b);
                flags = get_u8(b);
                creator = get_u64(b);
                t.stream = flags & 1;
                t.fresh = flags & 2;
                t.in_epoll = flags & 4;
                t.parked = flags & 8;
                t.fired = flags & 16;
                t.out_fd = -1;
                if (b->version >= 2) {
                        uint32_t out = get_u32(b);
                        uint8_t ef = get_u8(b);

                        if (out != UINT32_MAX) {
                                if (out > INT32_MAX || fcntl((int)out, F_GETFD) < 0)
                                        fail(b, "a descriptor that is not open");
                                else
                                        t.out_fd = (int)out;
                        }
                        t.out_in_epoll = ef & 1;
                        t.out_seen = ef & 2;
                        t.hup_seen = ef & 4;
                        t.out_state = get_u8(b);
                }
                if (t.state > REG_REMOVING || slot >= UINT32_MAX / 2)
                        fail(b, "a registration out of range");
                if (p && !b->bad) {
                        struct conn *c = creator ? conn_by_serial(l, creator) : NULL;

                        if (!b->bad && !reg_adopt(p, c, &t, slot))
                                fail(b, "a registration that cannot be restored");
                }
        }
        for (uint32_t n = get_count(b, 17); n && !b->bad; n--) {
                uint8_t kind = get_u8(b);

                if (kind == SN_PROTO_KIND_POSTED) {
                        uint64_t key = get_u64(b), ov = get_u64(b);
                        uint32_t bytes = get_u32(b);
                        uint64_t ep = get_u64(b);

                        if (p && !b->bad && port_adopt_posted(p, key, ov, bytes, ep) < 0)
                                fail(b, "out of memory");
                } else if (kind == SN_PROTO_KIND_SOCKET) {
                        uint32_t slot = get_u32(b), events = get_u32(b);
                        uint64_t ep = get_u64(b);
                        struct reg *g = p && !b->bad ? server_slot_reg(srv, slot) : NULL;

                        if (p && !b->bad && (!g || g->port != p || g->queued))
                                fail(b, "a queued packet of no registration");
                        if (g && !b->bad) {
                                port_queue_reg(p, g, events);
                                g->pkt.epoch = ep;
                        }
                } else {
                        fail(b, "a packet of unknown kind");
                }
        }
        for (uint32_t n = get_count(b, 12); n && !b->bad; n--) {
                struct conn *c = conn_by_serial(l, get_u64(b));
                uint32_t thread = get_u32(b);

                if (p && c && !b->bad)
                        port_mark_running(p, c, thread);
        }
        /* Waiters are saved most recent first; parking pushes in front, so park from the end. */
        nwaits = get_count(b, 28);
        if (nwaits && !(waits = calloc(nwaits, sizeof(*waits))))
                fail(b, "out of memory");
        for (uint32_t i = 0; i < nwaits && !b->bad; i++) {
                struct wait_rec *w = &waits[i];

                w->conn = conn_by_serial(l, get_u64(b));
                w->id = get_u32(b);
                w->thread = get_u32(b);
                w->max_entries = get_u32(b);
                w->timeout_ms = get_u32(b);
                w->n = get_count(b, 4);
                w->results = take(b, (size_t)w->n * 4);
                if (!w->max_entries)
                        fail(b, "a waiter that takes nothing");
        }
        for (uint32_t i = nwaits; p && i-- > 0 && !b->bad;) {
                struct wait_rec *w = &waits[i];
                uint32_t *res = malloc(SN_MAX(w->n, 1u) * sizeof(uint32_t));

                if (!res) {
                        fail(b, "out of memory");
                        break;
                }
                for (uint32_t k = 0; k < w->n; k++)
                        res[k] = sn_get_u32(w->results + (size_t)k * 4);
                if (port_wait(p, w->conn, w->id, w->thread, w->max_entries, w->timeout_ms, res,
                              w->n) < 0)
                        fail(b, "a waiter that cannot be parked again");
                free(res);
        }
        free(waits);
        /* A port nobody holds was lingering: it goes on for what was left of its time. */
        if (p && !b->bad && !p->nhandles)
                port_linger_resume(p, linger_left);
}

static void load_state(struct loader *l)
{
        struct rbuf *b = &l->b;
        struct server *srv = l->srv;
        struct counters k = { 0 };
        const uint8_t *magic = take(b, 8);
        uint32_t version, n;
        char pathbuf[256];

        if (!magic || memcmp(magic, STATE_MAGIC, 8)) {
                fail(b, "not a socknotifyd state");
                return;
        }
        version = get_u32(b);
        b->version = version;
        /* Version 1 (no EDGE OUT sides) is still read: an upgrade re-execs an older image's
         * state. */
        if (version < 1 || version > STATE_VERSION) {
                fail(b, "a state version this binary does not read");
                return;
        }
        if (get_u32(b))
                fail(b, "unknown state flags");
        uint64_t next_serial = get_u64(b);
        uint32_t next_port = get_u32(b);
        k.connections_total = get_u64(b);
        k.messages_in = get_u64(b);
        k.messages_out = get_u64(b);
        k.registrations_applied = get_u64(b);
        k.notifications = get_u64(b);
        k.posted_delivered = get_u64(b);
        k.protocol_violations = get_u64(b);
        k.reexecs = get_u64(b);
        for (int e = 0; e < SN_ERRNO_MAX; e++) {
                k.call_errors[e] = get_u64(b);
                k.entry_errors[e] = get_u64(b);
        }
        get_fd(b);   /* the listening socket: adopted by main() */
        get_u8(b);
        get_str(b, pathbuf, sizeof(pathbuf));
        n = get_count(b, 30);
        if (srv && !b->bad && !(l->conns = calloc(SN_MAX(n, 1u), sizeof(*l->conns))))
                fail(b, "out of memory");
        for (uint32_t i = 0; i < n && !b->bad; i++)
                load_conn(l, i);
        for (uint32_t users = get_count(b, 12); users && !b->bad; users--) {
                uid_t uid = (uid_t)get_u32(b);
                uint64_t refused = get_u64(b);
                struct user *u = srv && !b->bad ? user_get(srv, uid) : NULL;

                if (u) {
                        u->refused = refused;
                        user_release(u);
                }
        }
        for (n = get_count(b, 41); n && !b->bad; n--)
                load_port(l);
        magic = take(b, 8);
        if (!b->bad && (!magic || memcmp(magic, STATE_END, 8)))
                fail(b, "no end mark");
        if (!b->bad && b->off != b->len)
                fail(b, "bytes after the end mark");
        if (srv && !b->bad) {
                srv->counters = k;
                srv->next_conn_serial = next_serial;
                srv->next_port_id = next_port;
        }
}

/* Reads the whole memfd into a buffer. */
static uint8_t *read_all(int fd, size_t *ret_len)
{
        struct stat st;
        uint8_t *p;
        size_t off = 0;

        if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (1ll << 34))
                return NULL;
        p = malloc((size_t)st.st_size);
        if (!p)
                return NULL;
        while (off < (size_t)st.st_size) {
                ssize_t n = pread(fd, p + off, (size_t)st.st_size - off, (off_t)off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        free(p);
                        return NULL;
                }
                off += (size_t)n;
        }
        *ret_len = off;
        return p;
}

int reexec_load(struct server *srv, int fd)
{
        struct loader l = { .srv = srv };
        uint8_t *data = read_all(fd, &l.b.len);

        if (!data) {
                log_error("re-exec: cannot read the state");
                return -EIO;
        }
        l.b.p = data;
        if (srv)
                srv->restoring = true;
        load_state(&l);
        if (srv)
                srv->restoring = false;
        free(l.conns);
        free(data);
        if (l.b.bad) {
                log_error("re-exec: the state is not usable: %s (at byte %zu)", l.b.what,
                          l.b.off);
                return -EBADMSG;
        }
        return 0;
}

int reexec_listen(int fd, int *ret_listen_fd, char *path, size_t pathsz, bool *ret_owns_path)
{
        struct rbuf b = { 0 };
        uint8_t *data = read_all(fd, &b.len);
        const uint8_t *magic;
        int listen_fd;

        if (!data)
                return -EIO;
        b.p = data;
        magic = take(&b, 8);
        if (!magic || memcmp(magic, STATE_MAGIC, 8) ||
            ((b.version = get_u32(&b)) < 1 || b.version > STATE_VERSION)) {
                free(data);
                return -EBADMSG;
        }
        take(&b, 4 + 8 + 4 + 8 * 8 + SN_ERRNO_MAX * 16);
        listen_fd = get_fd(&b);
        *ret_owns_path = get_u8(&b);
        if (!get_str(&b, path, pathsz))
                fail(&b, "no path");
        free(data);
        if (b.bad)
                return -EBADMSG;
        *ret_listen_fd = listen_fd;
        return 0;
}

static void set_cloexec(int fd, bool on)
{
        int flags = fcntl(fd, F_GETFD);

        if (flags >= 0)
                fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}

void reexec_set_cloexec(struct server *srv, bool on)
{
        struct sn_list *pos, *tmp, *p2, *t2;

        set_cloexec(srv->listen_fd, on);
        sn_list_foreach_safe(pos, tmp, &srv->conns) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                set_cloexec(c->fd, on);
                for (uint32_t i = 0; i < c->stage.nfds; i++)
                        set_cloexec(c->stage.fds[i], on);
        }
        sn_list_foreach_safe(pos, tmp, &srv->ports) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                set_cloexec(p->epfd, on);
                sn_list_foreach_safe(p2, t2, &p->regs) {
                        const struct reg *g = sn_list_entry(p2, struct reg, port_link);

                        set_cloexec(g->fd, on);
                        if (g->out_fd >= 0)
                                set_cloexec(g->out_fd, on);
                }
        }
}

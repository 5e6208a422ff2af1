/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * live.c - what survives the daemon's death: while it runs under a service manager with a
 * descriptor store, the daemon keeps in that store, at every moment, enough to rebuild every
 * client's session after a crash, a kill -9, a watchdog or out-of-memory kill.
 *
 * Two things are kept, both written as the daemon goes, never in one piece at the end:
 *
 *   the journal  a memfd (store name "snjournal.G"), shared-mapped, of fixed 128-byte records:
 *                one per connection (its socket's identity, the request being handled), port
 *                (id, owner, concurrency, name), handle, registration (socket identity, port,
 *                creator, key, filter, trigger, state), posted packet and parked call (with its
 *                per-registration results).  A record is written with plain stores into the
 *                mapping; the kernel keeps the pages when the process dies, so nothing is lost
 *                and nothing costs a system call.  Record 0 is the header.
 *   the boxes    every client connection and every held socket, sent with SCM_RIGHTS into a
 *                Unix stream socket pair whose receiving end is in the store ("snlive.G.I"),
 *                at most 253 per box (one message's worth).  A descriptor in flight stays
 *                open while its box does.  Adding one is one sendmsg() into the open box, batched per turn of the loop
 *                and always before the reply that reports it; a box is stored once, when it
 *                gets its first descriptors.  A dropped socket must close at once (rule L1):
 *                its box is rebuilt without it (the survivors join the open box, a new one
 *                when the open box itself is rebuilt; then the old one is removed, which closes
 *                the dropped socket), drops of the last 2 ms at once.  So every box but the
 *                open one is full, and the store's entries follow the sockets held, never the
 *                drops; they are counted against FDSTORE= (FileDescriptorStoreMax=).
 *                Boxes of 64 cost the registration benchmark about 20 % (a store and a removal
 *                per 64 sockets); boxes of 253 cost it under 10 %, and a dropped socket costs
 *                one sendmsg() of up to 252 descriptors.
 *
 * G is a generation, one more at each start, so that a new daemon can build its own journal and
 * boxes before it removes its predecessor's.  A journal is filled before it is stored, and the
 * previous generation's boxes are only peeked at: a daemon that dies between the two leaves a
 * store from which the newest journal can still be restored.  After a crash fdstore.c hands the
 * newest journal and the descriptors of every generation's boxes to live_restore(), which
 * rebuilds the sessions:
 * connections by the identity of their sockets (clients keep their connection and see no
 * error), ports with new epoll instances, handles, registrations in their state (a socket's
 * readiness is read again from the kernel: a level-triggered condition is reported again, and
 * an edge or one-shot registration may report once more than it would have, never less),
 * posted packets in their order, parked calls with the time they had left.  A registration's
 * queued packet is journaled as its events (a few stores when it is queued, OR-ed into or
 * taken) and queued again; the order between queued socket and posted packets is not kept.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/fdmsg.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/settings.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/registry.h"
#include "daemon/objects/world.h"
#include "daemon/service/conn.h"
#include "daemon/state/live.h"
#include "proto/codec.h"
#include "socknotify.h"

#define JR_MAGIC "SNJRNL1\0"
#define JR_VERSION 1u
#define JR_RECORD 128u
#define JR_INITIAL 1024u
#define BOX_MAX 253u
#define DATA_SIZE 64u
/* Drops are gathered this long before boxes are rebuilt: the close a peer sees is that late at
 * most, and a client dropping sockets fast costs the service manager a few messages per box
 * and interval, not per socket. */
#define REBUILD_MS 2

enum jr_type {
        JR_FREE = 0,
        JR_CONN,
        JR_PORT,
        JR_NAME, /* part of a port's name beyond what its record holds */
        JR_HANDLE,
        JR_REG,
        JR_POSTED,
        JR_WAIT,
};

/* Host byte order: the journal is read only by the daemon of the same machine. */
struct jr_header {
        char magic[8];
        uint32_t version, record_size;
        uint32_t capacity;
        uint32_t gen;
        uint32_t next_port_id;
        uint32_t port_id_key[4];
        uint64_t next_conn_serial;
        uint64_t next_posted;
};

struct jr_record {
        uint8_t type;
        uint8_t u8a, u8b, u8c;
        uint32_t u32a, u32b, u32c, u32d, u32e;
        uint64_t serial;   /* the connection (CONN, HANDLE, REG's creator, WAIT) */
        uint64_t dev, ino; /* a socket's identity */
        uint64_t u64a, u64b;
        uint8_t data[DATA_SIZE]; /* names, results */
};
_Static_assert(sizeof(struct jr_record) == JR_RECORD, "journal record size");
_Static_assert(sizeof(struct jr_header) <= JR_RECORD, "journal header size");

/*
 * Fields by type:
 *   CONN    serial, dev, ino; u8a 1 while a request is handled, u32a its id; u8b 1 while a
 *           multi-part call is being received, u32b its id; u32c its protocol version (0: 1)
 *   PORT    u32a id, u32b uid, u32c concurrency, u32d name length (0: unnamed), u32e linger
 *           time (ms), u64a the linger deadline while it lingers (CLOCK_MONOTONIC ns; 0: it
 *           does not), data: the name's first bytes
 *   NAME    u32a port id, u32b offset, u32c length, data: those bytes
 *   HANDLE  serial, u32a port id
 *   REG     serial (creator; 0: kept without an owner by a lingering port), dev, ino, u64a
 *           key, u32a port id, u32b client_fd, u32c filter, u32d the events of its queued
 *           packet (0: none queued), u8a trigger, u8b state (enum reg_state)
 *   POSTED  u32a port id, u32b bytes, u64a key, u64b overlapped, u32c/u32d sequence (low, high)
 *   WAIT    serial, u32a port id, u32b request id, u32c thread, u32d max entries, u32e
 *           timeout_ms as asked, u64a deadline (CLOCK_MONOTONIC ns; 0: none), u64b: number of
 *           results (low 32 bits) and of non-zero results (high 32 bits, UINT32_MAX: more than
 *           data holds), data: up to 8 (index, error) pairs of u32
 */
#define WAIT_PAIRS (DATA_SIZE / 8)

struct box {
        struct sn_list link;        /* in live->boxes */
        struct sn_list send_link;   /* in live->to_send while members wait to be sent */
        struct sn_list rebuild_link; /* in live->to_rebuild while dropped members are in it */
        uint32_t id;
        int send_fd;          /* our end; -1 once the box is full */
        int recv_fd;          /* the stored end, held until it is stored */
        bool stored;
        uint32_t n, nsent, ndead;
        struct {
                int fd;               /* -1: dropped */
                struct box_ref *ref;  /* the owner's reference, moved when rebuilt */
        } m[BOX_MAX];
};
struct live {
        struct server *srv;
        int jfd;
        uint8_t *map;
        uint32_t capacity;
        uint32_t *free_idx; /* stack of free record numbers */
        uint32_t nfree;
        uint32_t gen;
        uint32_t next_box;
        struct sn_list boxes;
        struct box *open;
        struct sn_list to_send, to_rebuild;
        struct event flush_ev;   /* sends, at the end of the turn (or before a reply) */
        struct event rebuild_ev; /* rebuilds, REBUILD_MS after the first drop */
        bool flush_armed, rebuild_armed;
        bool failed; /* logged once */
};

static struct jr_header *header(struct live *l)
{
        return (struct jr_header *)l->map;
}

static struct jr_record *rec(struct live *l, uint32_t i)
{
        return (struct jr_record *)(l->map + (size_t)i * JR_RECORD);
}

static void fail(struct live *l, const char *what, int err)
{
        if (!l->failed)
                log_error("fd store: %s: %s; a crash now would lose sessions", what,
                          strerror(err));
        l->failed = true;
}

/* ---- journal records ---------------------------------------------------------------------- */

static int grow(struct live *l)
{
        uint32_t cap = l->capacity * 2;
        uint32_t *f = realloc(l->free_idx, cap * sizeof(*f));
        void *m;

        if (!f)
                return -ENOMEM;
        l->free_idx = f;
        if (ftruncate(l->jfd, (off_t)cap * JR_RECORD) < 0)
                return -errno;
        m = mremap(l->map, (size_t)l->capacity * JR_RECORD, (size_t)cap * JR_RECORD,
                   MREMAP_MAYMOVE);
        if (m == MAP_FAILED)
                return -errno;
        l->map = m;
        for (uint32_t i = cap - 1; i >= l->capacity; i--)
                l->free_idx[l->nfree++] = i;
        l->capacity = cap;
        header(l)->capacity = cap;
        return 0;
}

/* A new zeroed record of type; 0 when none could be had (logged). */
static uint32_t jr_new(struct live *l, uint8_t type)
{
        uint32_t i;
        int r;

        if (!l->nfree && (r = grow(l)) < 0) {
                fail(l, "growing the journal", -r);
                return 0;
        }
        i = l->free_idx[--l->nfree];
        memset(rec(l, i), 0, JR_RECORD);
        rec(l, i)->type = type;
        return i;
}

static void jr_free(struct live *l, uint32_t *idx)
{
        if (!*idx)
                return;
        rec(l, *idx)->type = JR_FREE;
        l->free_idx[l->nfree++] = *idx;
        *idx = 0;
}

/* ---- boxes -------------------------------------------------------------------------------- */

static void box_name(const struct live *l, const struct box *b, char *out, size_t n)
{
        snprintf(out, n, "snlive.%u.%u", l->gen, b->id);
}

static void forget(const char *name)
{
        char line[96];

        snprintf(line, sizeof(line), "FDSTOREREMOVE=1\nFDNAME=%s", name);
        sd_notify(0, line);
}

static int store(const char *name, int fd)
{
        char line[96];
        int r;

        snprintf(line, sizeof(line), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
        r = sd_pid_notify_with_fds(0, 0, line, &fd, 1);
        return r > 0 ? 0 : r < 0 ? r : -ENOTCONN;
}

static void schedule_send(struct live *l, struct box *b)
{
        if (sn_list_empty(&b->send_link))
                sn_list_add_tail(&l->to_send, &b->send_link);
        if (!l->flush_armed) {
                l->flush_armed = true;
                event_active(&l->flush_ev, 0, 0);
        }
}

static void schedule_rebuild(struct live *l, struct box *b)
{
        static const struct timeval tv = { 0, REBUILD_MS * 1000 };

        if (sn_list_empty(&b->rebuild_link))
                sn_list_add_tail(&l->to_rebuild, &b->rebuild_link);
        if (!l->rebuild_armed && evtimer_add(&l->rebuild_ev, &tv) == 0)
                l->rebuild_armed = true;
}

static struct box *box_new(struct live *l)
{
        struct box *b = calloc(1, sizeof(*b));
        int sv[2];

        if (!b)
                return NULL;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                free(b);
                return NULL;
        }
        b->id = l->next_box++;
        b->send_fd = sv[0];
        b->recv_fd = sv[1];
        sn_list_init(&b->send_link);
        sn_list_init(&b->rebuild_link);
        sn_list_add_tail(&l->boxes, &b->link);
        return b;
}

static void box_free(struct live *l, struct box *b)
{
        char name[64];

        if (b->stored) {
                box_name(l, b, name, sizeof(name));
                forget(name);
        }
        if (l->open == b)
                l->open = NULL;
        sn_close(b->send_fd);
        sn_close(b->recv_fd);
        for (uint32_t i = 0; i < b->n; i++)
                if (b->m[i].ref)
                        b->m[i].ref->box = NULL;
        sn_list_del(&b->link);
        sn_list_del(&b->send_link);
        sn_list_del(&b->rebuild_link);
        free(b);
}

/* Sends the members not sent yet; stores the box the first time.  0 or a negative errno. */
static int box_send(struct live *l, struct box *b)
{
        int fds[BOX_MAX];
        unsigned n = 0;
        uint8_t byte = 0;
        char name[64];
        int r;

        for (uint32_t i = b->nsent; i < b->n; i++)
                if (b->m[i].fd >= 0)
                        fds[n++] = b->m[i].fd;
        if (n) {
                if (b->send_fd < 0)
                        return -EBADF;
                r = sn__fdmsg_send(b->send_fd, &byte, 1, fds, n, MSG_DONTWAIT);
                if (r < 0)
                        return r;
        }
        b->nsent = b->n;
        /* Only the open box gets more: the others need no sending end. */
        if (b != l->open)
                b->send_fd = sn_close(b->send_fd);
        if (!b->stored && b->recv_fd >= 0) {
                /* The store refuses (and systemd only logs) what is beyond its size. */
                if (live_entries(l->srv) > l->srv->fdstore_max)
                        return -ENOSPC;
                box_name(l, b, name, sizeof(name));
                r = store(name, b->recv_fd);
                if (r < 0)
                        return r;
                b->stored = true;
                b->recv_fd = sn_close(b->recv_fd);
        }
        return 0;
}

/* Sends what waits to be sent; 0 or the last negative errno (logged). */
static int flush_all(struct live *l)
{
        int ret = 0;

        while (!sn_list_empty(&l->to_send)) {
                struct box *b = sn_list_first(&l->to_send, struct box, send_link);
                int r;

                sn_list_del(&b->send_link);
                sn_list_init(&b->send_link);
                r = box_send(l, b);
                if (r < 0) {
                        fail(l, "keeping sockets in the store", -r);
                        ret = r;
                }
        }
        return ret;
}

static void box_add(struct live *l, struct box_ref *ref, int fd);

/*
 * The box without its dropped members: the survivors join the open box (the open box itself is
 * replaced by a new one), which is sent at once, and the old box is removed from the store
 * (which closes the dropped sockets).  Survivors never get a box of their own: boxes stay full
 * but the open one, so their number follows the sockets held, not how many were dropped (a
 * client registering 254 sockets and dropping 253, again and again, would otherwise leave one
 * nearly empty box per round until FileDescriptorStoreMax= refused everybody's boxes).
 */
static int box_rebuild(struct live *l, struct box *old)
{
        int r;

        if (l->open == old) {
                if (old->send_fd >= 0)
                        old->send_fd = sn_close(old->send_fd);
                l->open = NULL;
        }
        for (uint32_t i = 0; i < old->n; i++)
                if (old->m[i].fd >= 0) {
                        struct box_ref *ref = old->m[i].ref;
                        int fd = old->m[i].fd;

                        old->m[i].ref = NULL;
                        old->m[i].fd = -1;
                        ref->box = NULL;
                        box_add(l, ref, fd);
                        if (!ref->box)
                                return -ENOMEM;
                }
        /* The survivors are in the store again before the old box goes. */
        r = flush_all(l);
        if (r < 0)
                return r;
        box_free(l, old);
        return 0;
}

void live_flush(struct server *srv)
{
        struct live *l = srv->live;

        if (!l)
                return;
        l->flush_armed = false;
        flush_all(l);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
        live_flush(arg);
}

static void rebuild_cb(evutil_socket_t fd, short what, void *arg)
{
        struct server *srv = arg;
        struct live *l = srv->live;

        l->rebuild_armed = false;
        live_flush(srv); /* members not sent yet go first: a rebuild sends them anyway */
        while (!sn_list_empty(&l->to_rebuild)) {
                struct box *b = sn_list_first(&l->to_rebuild, struct box, rebuild_link);
                int r;

                sn_list_del(&b->rebuild_link);
                sn_list_init(&b->rebuild_link);
                r = box_rebuild(l, b);
                if (r < 0)
                        fail(l, "taking a dropped socket out of the store", -r);
        }
}

static void box_add(struct live *l, struct box_ref *ref, int fd)
{
        struct box *b = l->open;

        if (!b || b->n == BOX_MAX) {
                if (b && b->nsent == b->n)
                        b->send_fd = sn_close(b->send_fd); /* full and sent */
                b = l->open = box_new(l);
                if (!b) {
                        fail(l, "making a box", ENOMEM);
                        return;
                }
        }
        b->m[b->n].fd = fd;
        b->m[b->n].ref = ref;
        ref->box = b;
        b->n++;
        schedule_send(l, b);
}

static void box_drop(struct live *l, struct box_ref *ref)
{
        struct box *b = ref->box;
        uint32_t i;

        if (!b)
                return;
        /* Found by its reference (at most 253 to look at): owners keep no slot number. */
        for (i = 0; i < b->n && b->m[i].ref != ref; i++)
                ;
        ref->box = NULL;
        if (i == b->n)
                return;
        b->m[i].fd = -1;
        b->m[i].ref = NULL;
        if (i < b->nsent) {
                /* In the box's queue: the box is rebuilt without it. */
                b->ndead++;
                schedule_rebuild(l, b);
        }
}

/* ---- hooks -------------------------------------------------------------------------------- */

void live_conn(struct conn *c)
{
        struct live *l = c->srv->live;
        struct jr_record *r;
        struct stat st;
        uint32_t i;

        if (!l || c->jr || fstat(c->fd, &st) < 0 || !(i = jr_new(l, JR_CONN)))
                return;
        c->jr = i;
        r = rec(l, i);
        r->serial = c->serial;
        r->u32c = c->version;
        header(l)->next_conn_serial = c->srv->next_conn_serial;
        r->dev = (uint64_t)st.st_dev;
        r->ino = (uint64_t)st.st_ino;
        box_add(l, &c->box, c->fd);
}

void live_conn_gone(struct conn *c)
{
        struct live *l = c->srv->live;

        if (!l)
                return;
        box_drop(l, &c->box);
        jr_free(l, &c->jr);
}

void live_conn_request(struct conn *c, uint32_t id, bool begin)
{
        struct live *l = c->srv->live;

        if (l && c->jr) {
                rec(l, c->jr)->u8a = begin;
                rec(l, c->jr)->u32a = id;
        }
}

void live_conn_stage(struct conn *c, uint32_t id, bool active)
{
        struct live *l = c->srv->live;

        if (l && c->jr) {
                rec(l, c->jr)->u8b = active;
                rec(l, c->jr)->u32b = id;
        }
}

void live_port(struct port *p)
{
        struct live *l = p->srv->live;
        struct jr_record *r;
        size_t len = p->name ? strlen(p->name) : 0, first;
        uint32_t i;

        if (!l || p->jr || !(i = jr_new(l, JR_PORT)))
                return;
        p->jr = i;
        r = rec(l, i);
        r->u32a = p->id;
        r->u32b = (uint32_t)p->uid;
        r->u32c = p->concurrency;
        r->u32d = (uint32_t)len;
        first = SN_MIN(len, sizeof(r->data));
        memcpy(r->data, p->name ? p->name : "", first);
        for (size_t off = first, k = 0; off < len && k < SN_ARRAY_SIZE(p->jr_name); k++) {
                size_t n = SN_MIN(len - off, sizeof(r->data));
                uint32_t j = jr_new(l, JR_NAME);

                if (!j)
                        return;
                p->jr_name[k] = j;
                r = rec(l, j);
                r->u32a = p->id;
                r->u32b = (uint32_t)off;
                r->u32c = (uint32_t)n;
                memcpy(r->data, p->name + off, n);
                off += n;
        }
        header(l)->next_port_id = p->srv->next_port_id;
        live_port_linger(p);
}

void live_port_linger(struct port *p)
{
        struct live *l = p->srv->live;
        struct jr_record *r;

        if (!l || !p->jr)
                return;
        r = rec(l, p->jr);
        r->u32e = p->linger_ms;
        r->u64a = p->lingering ? (uint64_t)p->linger_deadline.tv_sec * 1000000000u +
                                         (uint64_t)p->linger_deadline.tv_nsec
                               : 0;
}

void live_port_gone(struct port *p)
{
        struct live *l = p->srv->live;

        if (!l)
                return;
        jr_free(l, &p->jr);
        for (size_t k = 0; k < SN_ARRAY_SIZE(p->jr_name); k++)
                jr_free(l, &p->jr_name[k]);
}

void live_handle(struct handle *h)
{
        struct live *l = h->conn->srv->live;
        uint32_t i;

        if (!l || h->jr || !(i = jr_new(l, JR_HANDLE)))
                return;
        h->jr = i;
        rec(l, i)->serial = h->conn->serial;
        rec(l, i)->u32a = h->port->id;
}

void live_handle_gone(struct handle *h)
{
        struct live *l = h->conn->srv->live;

        if (l)
                jr_free(l, &h->jr);
}

void live_reg(struct reg *g)
{
        struct live *l = g->port->srv->live;
        struct jr_record *r;

        if (!l)
                return;
        if (!g->jr) {
                if (!(g->jr = jr_new(l, JR_REG)))
                        return;
                box_add(l, &g->box, g->fd);
        }
        r = rec(l, g->jr);
        r->serial = g->creator ? g->creator->serial : 0;
        r->dev = g->dev;
        r->ino = g->ino;
        r->u64a = g->key;
        r->u32a = g->port->id;
        r->u32b = g->client_fd;
        r->u32c = g->filter;
        r->u8a = g->trigger;
        r->u8b = g->state;
}

void live_reg_queued(struct reg *g)
{
        struct live *l = g->port->srv->live;

        if (l && g->jr)
                rec(l, g->jr)->u32d = g->queued ? g->pkt.events : 0;
}

void live_reg_gone(struct reg *g)
{
        struct live *l = g->port->srv->live;

        if (!l)
                return;
        box_drop(l, &g->box);
        jr_free(l, &g->jr);
}

void live_posted(struct port *p, struct packet *pkt)
{
        struct live *l = p->srv->live;
        struct jr_record *r;
        uint64_t seq;

        if (!l || !(posted_of(pkt)->jr = jr_new(l, JR_POSTED)))
                return;
        seq = header(l)->next_posted++;
        r = rec(l, posted_of(pkt)->jr);
        r->u32a = p->id;
        r->u32b = pkt->events;
        r->u64a = pkt->key;
        r->u64b = pkt->overlapped;
        r->u32c = (uint32_t)seq;
        r->u32d = (uint32_t)(seq >> 32);
}

void live_posted_gone(struct server *srv, struct packet *pkt)
{
        if (srv->live)
                jr_free(srv->live, &posted_of(pkt)->jr);
}

void live_wait(struct wait *w)
{
        struct live *l = w->conn->srv->live;
        struct jr_record *r;
        uint32_t nz = 0;

        if (!l || w->jr || !(w->jr = jr_new(l, JR_WAIT)))
                return;
        r = rec(l, w->jr);
        r->serial = w->conn->serial;
        r->u32a = w->port->id;
        r->u32b = w->id;
        r->u32c = w->thread;
        r->u32d = w->max_entries;
        r->u32e = w->timeout_ms;
        r->u64a = w->timeout_ms == SN_PROTO_INFINITE
                          ? 0
                          : (uint64_t)w->deadline.tv_sec * 1000000000u +
                                    (uint64_t)w->deadline.tv_nsec;
        for (uint32_t i = 0; i < w->nresults; i++) {
                if (!w->results[i])
                        continue;
                if (nz == WAIT_PAIRS) {
                        nz = UINT32_MAX;
                        break;
                }
                memcpy(r->data + nz * 8, &i, 4);
                memcpy(r->data + nz * 8 + 4, &w->results[i], 4);
                nz++;
        }
        r->u64b = w->nresults | (uint64_t)nz << 32;
}

void live_wait_gone(struct wait *w)
{
        struct live *l = w->conn->srv->live;

        if (l)
                jr_free(l, &w->jr);
}

/* ---- start, stop ------------------------------------------------------------------------- */

static void journal_everything(struct server *srv)
{
        struct sn_list *pos, *tmp, *p2, *t2;

        sn_list_foreach_safe(pos, tmp, &srv->conns) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                if (c->hello && !c->dead)
                        live_conn(c);
        }
        sn_list_foreach_safe(pos, tmp, &srv->ports) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                live_port(p);
                sn_list_foreach_safe(p2, t2, &p->handles)
                        live_handle(sn_list_entry(p2, struct handle, port_link));
                sn_list_foreach_safe(p2, t2, &p->regs)
                        live_reg(sn_list_entry(p2, struct reg, port_link));
                sn_list_foreach_safe(p2, t2, &p->queue) {
                        struct packet *pkt = sn_list_entry(p2, struct packet, link);

                        if (pkt->kind == SN_PROTO_KIND_POSTED)
                                live_posted(p, pkt);
                }
                sn_list_foreach_safe(p2, t2, &p->waiters)
                        live_wait(sn_list_entry(p2, struct wait, port_link));
        }
}

/* Every object's record numbers back to none (their boxes are cleared by box_free()): the
 * next live_start() journals them all again. */
static void forget_records(struct server *srv)
{
        struct sn_list *pos, *tmp, *p2, *t2;

        sn_list_foreach_safe(pos, tmp, &srv->conns)
                sn_list_entry(pos, struct conn, link)->jr = 0;
        sn_list_foreach_safe(pos, tmp, &srv->ports) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                p->jr = 0;
                memset(p->jr_name, 0, sizeof(p->jr_name));
                sn_list_foreach_safe(p2, t2, &p->handles)
                        sn_list_entry(p2, struct handle, port_link)->jr = 0;
                sn_list_foreach_safe(p2, t2, &p->regs)
                        sn_list_entry(p2, struct reg, port_link)->jr = 0;
                sn_list_foreach_safe(p2, t2, &p->queue) {
                        struct packet *pkt = sn_list_entry(p2, struct packet, link);

                        if (pkt->kind == SN_PROTO_KIND_POSTED)
                                posted_of(pkt)->jr = 0;
                }
                sn_list_foreach_safe(p2, t2, &p->waiters)
                        sn_list_entry(p2, struct wait, port_link)->jr = 0;
        }
}

int live_start(struct server *srv, uint32_t gen)
{
        struct live *l = calloc(1, sizeof(*l));
        char name[64];
        int r;

        if (!l)
                return -ENOMEM;
        l->srv = srv;
        l->gen = gen;
        l->capacity = JR_INITIAL;
        sn_list_init(&l->boxes);
        sn_list_init(&l->to_send);
        sn_list_init(&l->to_rebuild);
        l->free_idx = calloc(l->capacity, sizeof(*l->free_idx));
        l->jfd = memfd_create("socknotifyd-journal", MFD_CLOEXEC);
        r = !l->free_idx ? -ENOMEM : l->jfd < 0 ? -errno : 0;
        if (!r && ftruncate(l->jfd, (off_t)l->capacity * JR_RECORD) < 0)
                r = -errno;
        if (!r) {
                l->map = mmap(NULL, (size_t)l->capacity * JR_RECORD, PROT_READ | PROT_WRITE,
                              MAP_SHARED, l->jfd, 0);
                if (l->map == MAP_FAILED) {
                        l->map = NULL;
                        r = -errno;
                }
        }
        if (!r) {
                struct jr_header *h = header(l);

                memcpy(h->magic, JR_MAGIC, 8);
                h->version = JR_VERSION;
                h->record_size = JR_RECORD;
                h->capacity = l->capacity;
                h->gen = gen;
                h->next_port_id = srv->next_port_id;
                memcpy(h->port_id_key, srv->port_id_key, sizeof(h->port_id_key));
                h->next_conn_serial = srv->next_conn_serial;
                for (uint32_t i = l->capacity - 1; i >= 1; i--)
                        l->free_idx[l->nfree++] = i;
        }
        if (!r) {
                /* Filled before it is stored: a journal in the store is complete, so that the
                 * newest one there is the one to restore (fdstore.c), even if we die now. */
                event_assign(&l->flush_ev, srv->base, -1, 0, flush_cb, srv);
                evtimer_assign(&l->rebuild_ev, srv->base, rebuild_cb, srv);
                srv->live = l;
                journal_everything(srv);
                snprintf(name, sizeof(name), "snjournal.%u", gen);
                r = store(name, l->jfd);
                if (r < 0) {
                        log_error("fd store: cannot start the journal: %s; a crash would lose "
                                  "sessions", strerror(-r));
                        live_stop(srv, false);
                        return r;
                }
        }
        if (r < 0) {
                log_error("fd store: cannot start the journal: %s; a crash would lose sessions",
                          strerror(-r));
                if (l->map)
                        munmap(l->map, (size_t)l->capacity * JR_RECORD);
                sn_close(l->jfd);
                free(l->free_idx);
                free(l);
                return r;
        }
        live_flush(srv);
        log_info("fd store: sessions survive a crash (journal generation %u, %u box(es))", gen,
                 l->next_box);
        return 0;
}

uint32_t live_entries(const struct server *srv)
{
        const struct live *l = srv->live;
        const struct sn_list *pos;
        uint32_t n = 1;

        if (!l)
                return 0;
        for (pos = l->boxes.next; pos != &l->boxes; pos = pos->next)
                n++;
        return n;
}

void live_stop(struct server *srv, bool forget_all)
{
        struct live *l = srv->live;
        char name[64];

        if (!l)
                return;
        while (!sn_list_empty(&l->boxes)) {
                struct box *b = sn_list_first(&l->boxes, struct box, link);

                if (!forget_all)
                        b->stored = false; /* stays in the store */
                box_free(l, b);
        }
        if (forget_all) {
                snprintf(name, sizeof(name), "snjournal.%u", l->gen);
                forget(name);
        }
        event_del(&l->flush_ev);
        event_del(&l->rebuild_ev);
        forget_records(srv);
        munmap(l->map, (size_t)l->capacity * JR_RECORD);
        close(l->jfd);
        free(l->free_idx);
        free(l);
        srv->live = NULL;
}

/* ---- restore after a crash ------------------------------------------------------------------ */

struct sock_id {
        uint64_t dev, ino;
        int fd;
};

static int cmp_sock(const void *a, const void *b)
{
        const struct sock_id *x = a, *y = b;

        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Takes a descriptor of socket (dev, ino) out of the table; -1 if none is there.  The table may
 * hold several of one socket (boxes of two generations): any one not taken yet will do. */
static int take_sock(struct sock_id *t, size_t n, uint64_t dev, uint64_t ino)
{
        struct sock_id key = { dev, ino, -1 };
        struct sock_id *s = bsearch(&key, t, n, sizeof(*t), cmp_sock);
        int fd;

        if (!s)
                return -1;
        while (s > t && !cmp_sock(s - 1, &key))
                s--;
        for (; s < t + n && !cmp_sock(s, &key); s++)
                if (s->fd >= 0) {
                        fd = s->fd;
                        s->fd = -1;
                        return fd;
                }
        return -1;
}

/* Restored connections by serial and ports by id, sorted: a journal of a million registrations
 * looks each one's creator and port up without walking every connection and port. */
struct idx {
        uint64_t key;
        void *obj;
        size_t n; /* in element 0: how many follow it */
};

static int cmp_idx(const void *a, const void *b)
{
        const struct idx *x = a, *y = b;

        return x->key < y->key ? -1 : x->key > y->key;
}

/* An index of the server's connections (ports false) or ports; NULL when out of memory. */
static struct idx *index_of(struct server *srv, bool ports)
{
        struct sn_list *head = ports ? &srv->ports : &srv->conns, *pos;
        size_t n = 0;
        struct idx *v;

        for (pos = head->next; pos != head; pos = pos->next)
                n++;
        v = calloc(n + 1, sizeof(*v));
        if (!v)
                return NULL;
        v[0].n = n;
        n = 0;
        for (pos = head->next; pos != head; pos = pos->next, n++) {
                if (ports) {
                        struct port *p = sn_list_entry(pos, struct port, srv_link);

                        v[1 + n] = (struct idx){ .key = p->id, .obj = p };
                } else {
                        struct conn *c = sn_list_entry(pos, struct conn, link);

                        v[1 + n] = (struct idx){ .key = c->serial, .obj = c };
                }
        }
        qsort(v + 1, n, sizeof(*v), cmp_idx);
        return v;
}

static void *lookup(const struct idx *v, uint64_t key)
{
        struct idx k = { .key = key };
        const struct idx *hit = v ? bsearch(&k, v + 1, v[0].n, sizeof(*v), cmp_idx) : NULL;

        return hit ? hit->obj : NULL;
}

static struct port *port_of(struct server *srv, uint32_t id)
{
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &srv->ports) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->id == id)
                        return p;
        }
        return NULL;
}

static int cmp_posted(const void *a, const void *b)
{
        const struct jr_record *x = *(const struct jr_record *const *)a;
        const struct jr_record *y = *(const struct jr_record *const *)b;
        uint64_t sx = x->u32c | (uint64_t)x->u32d << 32, sy = y->u32c | (uint64_t)y->u32d << 32;

        return sx < sy ? -1 : sx > sy;
}

static void restore_port(struct server *srv, const struct jr_record *const *names,
                         uint32_t n, const struct jr_record *r, struct live_restored *out)
{
        char name[256];
        size_t len = SN_MIN(r->u32d, 255u);
        struct port *p;
        int epfd;

        memcpy(name, r->data, SN_MIN(len, sizeof(r->data)));
        for (uint32_t j = 0; j < n; j++) {
                const struct jr_record *x = names[j];

                if (x->u32a == r->u32a && x->u32b < len && x->u32c <= sizeof(x->data) &&
                    x->u32b + x->u32c <= len)
                        memcpy(name + x->u32b, x->data, x->u32c);
        }
        name[len] = 0;
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0 || port_of(srv, r->u32a) ||
            !(p = port_adopt(srv, r->u32a, len ? name : NULL, (uid_t)r->u32b, r->u32c, epfd,
                             0))) {
                sn_close(epfd);
                return;
        }
        if (len) {
                p->linger_ms = r->u32e;
                /* Whether it lingered, and until when: a handle restored ends it, and one
                 * without is armed again for what is left (live_restore). */
                p->lingering = r->u64a != 0;
                p->linger_deadline.tv_sec = (time_t)(r->u64a / 1000000000u);
                p->linger_deadline.tv_nsec = (long)(r->u64a % 1000000000u);
        }
        out->ports++;
}

int live_restore(struct server *srv, const uint8_t *journal, size_t size, const int *fds,
                 uint32_t nfds, struct live_restored *out)
{
        const struct jr_header *h = (const void *)journal;
        const struct jr_record *recs = (const void *)journal;
        struct sock_id *t = calloc(nfds ? nfds : 1, sizeof(*t));
        const struct jr_record **posted = NULL, **names;
        struct idx *conns = NULL, *ports = NULL;
        uint32_t nnames = 0;
        uint32_t n, nposted = 0;
        struct timespec now;

        memset(out, 0, sizeof(*out));
        if (!t || size < JR_RECORD || memcmp(h->magic, JR_MAGIC, 8) ||
            h->version != JR_VERSION || h->record_size != JR_RECORD) {
                free(t);
                sn__fds_close(fds, nfds);
                return -EBADMSG;
        }
        n = (uint32_t)SN_MIN((size_t)h->capacity, size / JR_RECORD);
        for (uint32_t i = 0; i < nfds; i++) {
                struct stat st;

                t[i].fd = fds[i];
                if (fstat(fds[i], &st) == 0) {
                        t[i].dev = (uint64_t)st.st_dev;
                        t[i].ino = (uint64_t)st.st_ino;
                }
        }
        qsort(t, nfds, sizeof(*t), cmp_sock);
        srv->restoring = true;
        srv->next_port_id = SN_MAX(srv->next_port_id, h->next_port_id);
        memcpy(srv->port_id_key, h->port_id_key, sizeof(srv->port_id_key));
        srv->next_conn_serial = SN_MAX(srv->next_conn_serial, h->next_conn_serial);
        clock_gettime(CLOCK_MONOTONIC, &now);

        for (uint32_t i = 1; i < n; i++) {
                const struct jr_record *r = &recs[i];
                struct ucred cred;
                socklen_t len = sizeof(cred);
                struct conn *c;
                int fd;

                if (r->type != JR_CONN)
                        continue;
                fd = take_sock(t, nfds, r->dev, r->ino);
                if (fd < 0)
                        continue;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
                    !(c = conn_adopt(srv, fd, &cred, r->serial, true))) {
                        close(fd);
                        continue;
                }
                c->passed_fds = true; /* swept when its process is gone */
                c->version = (uint16_t)SN_MIN(SN_MAX(r->u32c, 1u), (uint32_t)SN_PROTO_VERSION);
                srv->next_conn_serial = SN_MAX(srv->next_conn_serial, r->serial + 1);
                out->conns++;
                if (r->u8a) {
                        /* Its request was being handled when the daemon died: whether it took
                         * effect is unknown, so it fails rather than hang. */
                        conn_reply_error(c, r->u32a, EIO);
                        out->interrupted++;
                }
                if (r->u8b) {
                        /* A multi-part call half received: its parts were held, not applied.
                         * It fails (once), and the parts still to come are dropped. */
                        if (!(r->u8a && r->u32a == r->u32b)) {
                                conn_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                                out->interrupted++;
                        }
                        c->discarding = true;
                        c->discard_id = r->u32b;
                }
        }
        /* Long port names' other parts: only a few records, gathered once. */
        names = calloc(n, sizeof(*names));
        for (uint32_t i = 1; names && i < n; i++)
                if (recs[i].type == JR_NAME)
                        names[nnames++] = &recs[i];
        for (uint32_t i = 1; i < n; i++)
                if (recs[i].type == JR_PORT)
                        restore_port(srv, names, nnames, &recs[i], out);
        free(names);
        conns = index_of(srv, false);
        ports = index_of(srv, true);
        for (uint32_t i = 1; i < n; i++) {
                const struct jr_record *r = &recs[i];
                struct conn *c;
                struct port *p;

                if (r->type == JR_HANDLE && (c = lookup(conns, r->serial)) &&
                    (p = lookup(ports, r->u32a)) && !port_handle_of(c, p->id))
                        port_handle_add(c, p);
        }
        /* A port nobody holds any more went with its last handle, unless it lingers: then
         * it goes on for what was left of its time. */
        for (struct sn_list *pos = srv->ports.next, *tmp = pos->next; pos != &srv->ports;
             pos = tmp, tmp = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->nhandles)
                        continue;
                if (p->lingering) {
                        port_linger_resume(p, port_linger_left(p));
                        continue;
                }
                port_free(p, ECANCELED);
                out->ports--;
        }
        free(ports);
        ports = index_of(srv, true);
        for (uint32_t i = 1; i < n; i++) {
                const struct jr_record *r = &recs[i];
                struct snw_registration it = { 0 };
                struct conn *c;
                struct port *p;
                bool lingers;
                int fd;

                if (r->type != JR_REG)
                        continue;
                fd = take_sock(t, nfds, r->dev, r->ino);
                c = r->serial ? lookup(conns, r->serial) : NULL;
                p = lookup(ports, r->u32a);
                /* Without an owner (serial 0): kept by its port, which must have a name.  On a
                 * port with a linger time (rule L3 there) a creator need not hold the port (it
                 * closed its handle before the port had a linger time and lives on: its own, as
                 * a re-exec keeps it), and one that is gone left it ownerless. */
                lingers = p && p->name && p->linger_ms;
                if (fd < 0 || !p ||
                    (r->serial && !lingers && (!c || !port_handle_of(c, p->id))) ||
                    (!r->serial && !p->name)) {
                        sn_close(fd);
                        out->dropped++;
                        continue;
                }
                it.key = r->u64a;
                it.dev = r->dev;
                it.ino = r->ino;
                it.filter = (uint16_t)r->u32c;
                it.trigger = r->u8a;
                it.op = SN_OP_ENABLE;
                it.client_fd = r->u32b;
                if (reg_apply(p, c, &it, fd)) {
                        out->dropped++;
                        continue;
                }
                out->regs++;
                if (r->u8b == REG_DISABLED || r->u8b == REG_REMOVING) {
                        it.op = r->u8b == REG_DISABLED ? SN_OP_DISABLE : SN_OP_REMOVE;
                        reg_apply(p, c, &it, -1);
                }
                /* A packet it had queued is delivered (rule 3: also after a DISABLE); what the
                 * kernel reports again is OR-ed into it, never a second packet. */
                if (r->u32d & ~(uint32_t)SN_EVENT_REMOVE) {
                        struct reg *g = registry_find(&srv->registry, r->dev, r->ino);

                        if (g && g->port == p) {
                                port_queue_reg(p, g, r->u32d & ~(uint32_t)SN_EVENT_REMOVE);
                                out->queued++;
                        }
                }
        }
        posted = calloc(n, sizeof(*posted));
        for (uint32_t i = 1; posted && i < n; i++)
                if (recs[i].type == JR_POSTED)
                        posted[nposted++] = &recs[i];
        if (posted)
                qsort(posted, nposted, sizeof(*posted), cmp_posted);
        for (uint32_t i = 0; i < nposted; i++) {
                const struct jr_record *r = posted[i];
                struct port *p = lookup(ports, r->u32a);

                if (p && port_adopt_posted(p, r->u64a, r->u64b, r->u32b, p->epoch) == 0)
                        out->posted++;
        }
        free(posted);
        for (uint32_t i = 1; i < n; i++) {
                const struct jr_record *r = &recs[i];
                uint32_t nres = (uint32_t)r->u64b, nz = (uint32_t)(r->u64b >> 32), left;
                uint32_t *res;
                struct conn *c;
                struct port *p;

                if (r->type != JR_WAIT || !(c = lookup(conns, r->serial)))
                        continue;
                p = lookup(ports, r->u32a);
                if (!p || !port_handle_of(c, p->id) || nz == UINT32_MAX ||
                    nres > limits_call_items(&srv->limits) ||
                    !(res = calloc(nres ? nres : 1, sizeof(*res)))) {
                        /* Its per-registration results are not all known: it fails. */
                        conn_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                        out->interrupted++;
                        continue;
                }
                for (uint32_t k = 0; k < nz && k < WAIT_PAIRS; k++) {
                        uint32_t idx, err;

                        memcpy(&idx, r->data + k * 8, 4);
                        memcpy(&err, r->data + k * 8 + 4, 4);
                        if (idx < nres)
                                res[idx] = err;
                }
                left = SN_PROTO_INFINITE;
                if (r->u64a) {
                        int64_t ms = ((int64_t)r->u64a - ((int64_t)now.tv_sec * 1000000000 +
                                                          now.tv_nsec)) / 1000000;

                        left = ms < 1 ? 1 : (uint32_t)SN_MIN(ms, (int64_t)0xfffffffe);
                }
                if (port_wait(p, c, r->u32b, r->u32c, r->u32d, left, res, nres) < 0)
                        conn_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                else
                        out->waits++;
                free(res);
        }
        srv->restoring = false;
        free(conns);
        free(ports);
        for (struct sn_list *pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->nwaiters && p->nqueued)
                        port_dispatch(p);
        }
        for (uint32_t i = 0; i < nfds; i++)
                if (t[i].fd >= 0) {
                        close(t[i].fd);
                        out->unused++;
                }
        free(t);
        return 0;
}

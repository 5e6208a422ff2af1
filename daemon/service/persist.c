/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * persist.c - the connections' journal records, and the journal's life: made at start with
 * everything the daemon holds (live_start()), left in order before a re-exec or an orderly stop
 * (live_leave()), ended at a stop that keeps nothing (live_stop()).  The objects write their
 * own records (daemon/objects/persist.c); the format is in docs/state.md.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/objects/persist.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/world.h"
#include "daemon/restore/restore.h"
#include "daemon/service/conn.h"
#include "daemon/service/persist.h"
#include "daemon/service/ring.h"
#include "daemon/state/journal.h"
#include "proto/codec.h"

static uint64_t next_seq(struct journal *j)
{
        return journal_header(j)->next_seq++;
}

/* ---- connections ------------------------------------------------------------------------ */

void live_conn_update(struct conn *c)
{
        struct journal *j = c->srv->journal;
        struct jr_record *r;

        if (!j || !c->jr)
                return;
        r = journal_rec(j, c->jr);
        r->u8b = (uint8_t)((c->stage.active ? JR_CONN_STAGED : 0) |
                           (c->discarding ? JR_CONN_DISCARD : 0) | (c->hello ? JR_CONN_HELLO : 0) |
                           (c->passed_fds ? JR_CONN_PASSED : 0) | (c->ring ? JR_CONN_RING : 0) |
                           (c->self_scheduled ? JR_CONN_SELF : 0));
        r->u32b = c->stage.id;
        r->u32c = c->version;
        r->u32e = c->discard_id;
        r->u64a = c->stage.port | (uint64_t)c->stage.error << 32;
        if (c->hello) {
                /* What its handshake announced, which the next image keeps to. */
                memcpy(r->data + JR_CONN_LIMITS, &c->max_message, 4);
                memcpy(r->data + JR_CONN_LIMITS + 4, &c->max_fds, 4);
        }
}

void live_conn(struct conn *c)
{
        struct journal *j = c->srv->journal;
        struct jr_record *r;
        struct stat st;

        if (!j || c->jr || c->dead || !(c->jr = journal_new(j, JR_CONN)))
                return;
        r = journal_rec(j, c->jr);
        r->serial = c->serial;
        r->u32d = (uint32_t)c->fd;
        if (fstat(c->fd, &st) == 0) {
                r->dev = (uint64_t)st.st_dev;
                r->ino = (uint64_t)st.st_ino;
        }
        journal_header(j)->next_conn_serial = c->srv->next_conn_serial;
        live_conn_update(c);
        journal_keep(j, &c->box, c->fd, c->jr);
}

void live_conn_gone(struct conn *c)
{
        struct journal *j = c->srv->journal;

        journal_drop(j, &c->box);
        journal_free(j, &c->jr);
}

/* ---- rings -------------------------------------------------------------------------------- */

void live_ring(struct conn *c)
{
        struct journal *j = c->srv->journal;
        struct conn_ring *ring = c->ring;
        struct stat st;

        if (!j || !ring || !c->jr || c->dead)
                return;
        for (int i = 0; i < RING_NFDS; i++) {
                struct jr_record *r;

                if (ring->jr[i])
                        continue;
                if (!(ring->jr[i] = journal_new(j, JR_RING)))
                        return;
                r = journal_rec(j, ring->jr[i]);
                r->serial = c->serial;
                r->u8a = (uint8_t)i;
                r->u32d = (uint32_t)ring->fds[i];
                if (fstat(ring->fds[i], &st) == 0) {
                        r->dev = (uint64_t)st.st_dev;
                        r->ino = (uint64_t)st.st_ino;
                }
                journal_keep(j, &ring->box[i], ring->fds[i], ring->jr[i]);
        }
        live_ring_update(c);
}

void live_ring_update(struct conn *c)
{
        struct journal *j = c->srv->journal;

        if (j && c->ring && c->ring->jr[RING_FILE])
                journal_rec(j, c->ring->jr[RING_FILE])->u8b = c->ring->stalled;
}

void live_ring_gone(struct conn *c)
{
        struct journal *j = c->srv->journal;

        if (!c->ring)
                return;
        for (int i = 0; i < RING_NFDS; i++) {
                journal_drop(j, &c->ring->box[i]);
                journal_free(j, &c->ring->jr[i]);
        }
}

void live_conn_request(struct conn *c, uint32_t id, bool begin)
{
        struct journal *j = c->srv->journal;

        if (j && c->jr) {
                journal_rec(j, c->jr)->u8a = begin;
                journal_rec(j, c->jr)->u32a = id;
        }
}

void live_out(struct conn *c, struct outmsg *m)
{
        struct journal *j = c->srv->journal;

        if (j && c->jr && !m->jr)
                m->jr = journal_put_blobs(j, JR_OUT, c->serial, next_seq(j), m->data, m->len);
}

void live_out_gone(struct conn *c, struct outmsg *m)
{
        journal_free_blobs(c->srv->journal, &m->jr);
}

/* The items of a part just appended to the connection's staged call (n of them at items), and
 * its descriptors (the last nfds of the stage's). */
void live_stage_part(struct conn *c, const uint8_t *items, uint32_t n, uint32_t nfds)
{
        struct journal *j = c->srv->journal;
        struct conn_stage *st = &c->stage;

        if (!j || !c->jr)
                return;
        live_conn_update(c);
        if (n) {
                uint32_t first = journal_put_blobs(j, JR_STAGE, c->serial, next_seq(j), items,
                                                   (size_t)n * SN_WIRE_SIZE_registration);

                if (first && st->jr_last)
                        journal_blob(j, st->jr_last)->next = first;
                else if (first)
                        st->jr_first = first;
                while (first && journal_blob(j, first)->next)
                        first = journal_blob(j, first)->next;
                if (first)
                        st->jr_last = first;
        }
        if (nfds && !st->keep && !(st->keep = calloc(st->fdcap, sizeof(*st->keep))))
                return;
        for (uint32_t i = st->nfds - nfds; i < st->nfds; i++) {
                struct jr_keep *k = st->keep[i];
                struct jr_record *r;

                if (!k && !(k = st->keep[i] = calloc(1, sizeof(*k))))
                        continue;
                if (k->jr || !(k->jr = journal_new(j, JR_STAGED_FD)))
                        continue;
                r = journal_rec(j, k->jr);
                r->serial = c->serial;
                r->u32a = i;
                r->u32b = (uint32_t)st->fds[i];
                journal_keep(j, &k->box, st->fds[i], k->jr);
        }
        /* Each descriptor's identity, as the item naming it gives it (the client's word, but
         * only used to tell this descriptor from another that a box still holds for the same
         * record number; a socket that is not what its item says is refused when applied). */
        for (uint32_t i = 0; i < n; i++) {
                const uint8_t *it = items + (size_t)i * SN_WIRE_SIZE_registration;
                uint32_t idx = sn_get_u32(it + SN_REG_FD_INDEX_OFFSET);
                struct jr_record *r;

                if (!st->keep || idx >= st->nfds || !st->keep[idx] || !st->keep[idx]->jr)
                        continue;
                r = journal_rec(j, st->keep[idx]->jr);
                r->dev = sn_get_u64(it + 8);
                r->ino = sn_get_u64(it + 16);
        }
}

void live_stage_lend(struct conn *c, uint32_t idx)
{
        struct conn_stage *st = &c->stage;

        c->srv->lent = NULL;
        if (st->active && st->keep && idx < st->nfds && st->keep[idx]) {
                c->srv->lent = st->keep[idx];
                c->srv->lent_fd = st->fds[idx];
        }
}

void live_stage_gone(struct conn *c)
{
        struct journal *j = c->srv->journal;
        struct conn_stage *st = &c->stage;

        /* The chain of parts was linked into one, from jr_first. */
        journal_free_blobs(j, &st->jr_first);
        st->jr_last = 0;
        for (uint32_t i = 0; st->keep && i < st->nfds; i++) {
                if (!st->keep[i])
                        continue;
                journal_drop(j, &st->keep[i]->box);
                journal_free(j, &st->keep[i]->jr);
        }
        live_conn_update(c);
}

/* ---- the listening socket ----------------------------------------------------------------- */

void live_listen(struct server *srv)
{
        struct journal *j = srv->journal;
        struct jr_record *r;
        struct stat st;

        if (!j || srv->listen_jr || srv->listen_fd < 0 ||
            !(srv->listen_jr = journal_new(j, JR_LISTEN)))
                return;
        r = journal_rec(j, srv->listen_jr);
        r->u32a = (uint32_t)srv->listen_fd;
        r->u8a = srv->owns_path;
        if (fstat(srv->listen_fd, &st) == 0) {
                r->dev = (uint64_t)st.st_dev;
                r->ino = (uint64_t)st.st_ino;
        }
        journal_keep(j, &srv->listen_box, srv->listen_fd, srv->listen_jr);
}

static void journal_conn(struct conn *c)
{
        struct conn_stage *st = &c->stage;
        struct sn_list *pos;

        if (c->dead || c->mon)
                return; /* monitors are not carried (monitor.c) */
        live_conn(c);
        live_ring(c);
        for (pos = c->outq.next; pos != &c->outq; pos = pos->next)
                live_out(c, sn_list_entry(pos, struct outmsg, link));
        if (st->active && (st->nitems || st->nfds))
                live_stage_part(c, st->items, st->nitems, st->nfds);
        for (pos = c->runners.next; pos != &c->runners; pos = pos->next)
                live_runner(sn_list_entry(pos, struct runner, conn_link));
}

void live_everything(struct server *srv)
{
        struct jr_header *h = journal_header(srv->journal);
        struct sn_list *pos;

        h->next_port_id = srv->next_port_id;
        memcpy(h->port_id_key, srv->port_id_key, sizeof(h->port_id_key));
        h->next_conn_serial = srv->next_conn_serial;
        h->reexecs = srv->counters.reexecs;
        h->restores = srv->counters.restores;
        h->serving_since = srv->serving_since;
        h->max_message = srv->limits.max_message;
        h->max_fds = srv->limits.max_fds;
        live_listen(srv);
        for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next)
                journal_conn(sn_list_entry(pos, struct conn, link));
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next)
                live_port_everything(sn_list_entry(pos, struct port, srv_link));
}

/* A reply leaving for c: once it answers the request being handled, a crash no longer fails
 * that request (its answer is in the kernel or among the queued replies). */
void live_answered(struct conn *c, const uint8_t *buf, size_t len)
{
        struct journal *j = c->srv->journal;
        struct jr_record *r;
        struct snw_header h;

        if (!j || !c->jr || len < SN_HEADER_SIZE)
                return;
        r = journal_rec(j, c->jr);
        if (!r->u8a)
                return;
        snw_header_decode(buf, &h);
        if (h.id == r->u32a)
                r->u8a = 0;
}

/* ---- start, stop, leave ------------------------------------------------------------------- */

/* Every object's record numbers back to none (their boxes are cleared by journal_close()). */
static void forget_records(struct server *srv)
{
        struct sn_list *pos, *p2;

        srv->listen_jr = 0;
        for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                c->jr = 0;
                if (c->ring)
                        memset(c->ring->jr, 0, sizeof(c->ring->jr));
                c->stage.jr_first = c->stage.jr_last = 0;
                for (uint32_t i = 0; c->stage.keep && i < c->stage.nfds; i++)
                        if (c->stage.keep[i])
                                c->stage.keep[i]->jr = 0;
                for (p2 = c->outq.next; p2 != &c->outq; p2 = p2->next)
                        sn_list_entry(p2, struct outmsg, link)->jr = 0;
                for (p2 = c->runners.next; p2 != &c->runners; p2 = p2->next)
                        sn_list_entry(p2, struct runner, conn_link)->jr = 0;
        }
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next)
                live_port_forget(sn_list_entry(pos, struct port, srv_link));
}

int live_start(struct server *srv, uint32_t gen)
{
        bool store = srv->fdstore_max > 0;
        int r = journal_open(&srv->journal, srv->base, gen, store, srv->fdstore_max);

        if (r < 0) {
                log_error("state: cannot start the journal: %s; a crash or re-exec would lose "
                          "sessions", strerror(-r));
                return r;
        }
        live_everything(srv);
        r = journal_commit(srv->journal);
        if (r < 0) {
                log_error("state: cannot keep the journal in the descriptor store: %s; a crash "
                          "would lose sessions", strerror(-r));
                /* Still the state of a re-exec, kept in this process. */
                return r;
        }
        if (store)
                log_info("state: sessions survive a crash (journal generation %u, %u box(es))",
                         gen, journal_header(srv->journal)->boxes);
        return 0;
}

void live_stop(struct server *srv, bool forget)
{
        if (!srv->journal)
                return;
        journal_close(srv->journal, forget);
        srv->journal = NULL;
        forget_records(srv);
}

void live_flush(struct server *srv)
{
        journal_flush(srv->journal);
}

uint32_t live_entries(const struct server *srv)
{
        return journal_entries(srv->journal);
}

int live_leave(struct server *srv)
{
        struct journal *j = srv->journal;
        struct sn_list *pos;

        if (!j)
                return -ENOTSUP;
        /* What each EDGE registration's socket holds is read first, then the edges the
         * kernel saw and nobody harvested yet go into the queue, which is kept.  The next
         * image's new epoll instances report what holds again; it trims only what held here,
         * so a condition that begins after this read is reported, one that began between the
         * read and the harvest maybe twice, and none lost. */
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                for (struct sn_list *q = p->regs.next; q != &p->regs; q = q->next) {
                        struct reg *g = sn_list_entry(q, struct reg, port_link);

                        live_reg_held(g, reg_edge_held(g));
                }
        }
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->nregs)
                        port_harvest(p, p->nregs);
        }
        journal_flush(j);
        journal_header(j)->reexecs = srv->counters.reexecs;
        journal_header(j)->restores = srv->counters.restores;
        journal_header(j)->serving_since = srv->serving_since;
        journal_header(j)->orderly = 1;
        /* Only a stop needs the boxes (a re-exec keeps every descriptor): one that could not
         * be boxed drops its registration at the next start, the others go on. */
        return journal_failed(j) ? -EIO : 0;
}

static void set_cloexec(int fd, bool on)
{
        int f = fcntl(fd, F_GETFD);

        if (f >= 0)
                fcntl(fd, F_SETFD, on ? f | FD_CLOEXEC : f & ~FD_CLOEXEC);
}

void live_set_cloexec(struct server *srv, bool on)
{
        struct sn_list *pos, *p2;

        if (srv->journal)
                set_cloexec(journal_fd(srv->journal), on);
        if (srv->listen_fd >= 0)
                set_cloexec(srv->listen_fd, on);
        for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                /* A monitor is not carried: a re-exec closes it (monitor.c). */
                if (c->dead || c->mon)
                        continue;
                set_cloexec(c->fd, on);
                for (int i = 0; c->ring && i < RING_NFDS; i++)
                        set_cloexec(c->ring->fds[i], on);
                for (uint32_t i = 0; i < c->stage.nfds; i++)
                        set_cloexec(c->stage.fds[i], on);
        }
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                for (p2 = p->regs.next; p2 != &p->regs; p2 = p2->next)
                        set_cloexec(sn_list_entry(p2, struct reg, port_link)->fd, on);
        }
}


/* ---- what the reader asks of connections (restore.h) --------------------------------------- */

static struct session *restore_adopt(struct server *srv, int fd, const struct jr_record *r,
                                     uint32_t max_message, uint32_t max_fds)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct conn *c;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return NULL;
        c = conn_adopt(srv, fd, &cred, r->serial, r->u8b & JR_CONN_HELLO, max_message, max_fds);
        if (!c)
                return NULL;
        c->passed_fds = true; /* swept when its process is gone */
        c->self_scheduled = r->u8b & JR_CONN_SELF;
        c->version = (uint16_t)SN_MIN(SN_MAX(r->u32c, 1u), (uint32_t)SN_PROTO_VERSION);
        if (r->u8b & JR_CONN_DISCARD) {
                c->discarding = true;
                c->discard_id = r->u32e;
        }
        return &c->session;
}

static int restore_output(struct session *s, const uint8_t *buf, size_t len)
{
        return conn_adopt_output(conn_of_session(s), buf, len);
}

static bool restore_answered(const struct session *s, uint32_t id)
{
        const struct conn *c = conn_of_session((struct session *)s);
        const struct sn_list *pos;

        for (pos = c->outq.next; pos != &c->outq; pos = pos->next) {
                const struct outmsg *m = sn_list_entry(pos, struct outmsg, link);
                struct snw_header h;

                if (m->len < SN_HEADER_SIZE)
                        continue;
                snw_header_decode(m->data, &h);
                if (h.id == id)
                        return true;
        }
        return false;
}

static int restore_stage(struct session *s, uint32_t id, uint32_t port, uint32_t error,
                         const uint8_t *items, uint32_t nitems, int *fds, uint32_t nfds)
{
        return conn_adopt_stage(conn_of_session(s), id, port, error, items, nitems, fds, nfds);
}

static int restore_ring(struct session *s, int *fds, bool stalled)
{
        return conn_adopt_ring(conn_of_session(s), fds, stalled);
}

static void restore_discard(struct session *s, uint32_t id)
{
        struct conn *c = conn_of_session(s);

        c->discarding = true;
        c->discard_id = id;
}

const struct restore_conn_ops live_restore_ops = {
        .adopt = restore_adopt,
        .output = restore_output,
        .answered = restore_answered,
        .stage = restore_stage,
        .discard = restore_discard,
        .ring = restore_ring,
};

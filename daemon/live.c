/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * live.c - every object writes its journal record (journal.h) as it changes, so that the
 * journal is the daemon's whole state at every moment: a re-exec, an orderly stop and a crash
 * all leave the same thing behind, and restore.c rebuilds everything from it.
 *
 * Each hook records what it names and does nothing without a journal (srv->journal NULL: while
 * a restore runs, and when the journal could not be made); *_gone runs before the object is
 * freed.  journal_everything() writes every object at once, for a new journal.  The fields of
 * each record type are listed in docs/state.md; restore.c reads them.
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
#include "daemon/daemon.h"
#include "daemon/journal.h"

static uint64_t ns_of(const struct timespec *t)
{
        return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

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
        r->u8b = (uint8_t)(c->stage.active | c->discarding << 1 | c->hello << 2 |
                           c->passed_fds << 3);
        r->u32b = c->stage.id;
        r->u32c = c->version;
        r->u32e = c->discard_id;
        r->u64a = c->stage.port | (uint64_t)c->stage.error << 32;
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
        struct stage *st = &c->stage;
        struct stat sb;

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
        for (uint32_t i = st->nfds - nfds; i < st->nfds; i++) {
                struct stage_keep *k = st->keep[i];
                struct jr_record *r;

                if (!k && !(k = st->keep[i] = calloc(1, sizeof(*k))))
                        continue;
                if (k->jr || !(k->jr = journal_new(j, JR_STAGED_FD)))
                        continue;
                r = journal_rec(j, k->jr);
                r->serial = c->serial;
                r->u32a = i;
                r->u32b = (uint32_t)st->fds[i];
                if (fstat(st->fds[i], &sb) == 0) {
                        r->dev = (uint64_t)sb.st_dev;
                        r->ino = (uint64_t)sb.st_ino;
                }
                journal_keep(j, &k->box, st->fds[i], k->jr);
        }
}

void live_stage_lend(struct conn *c, uint32_t idx)
{
        struct stage *st = &c->stage;

        c->srv->lent = NULL;
        if (st->active && st->keep && idx < st->nfds && st->keep[idx]) {
                c->srv->lent = st->keep[idx];
                c->srv->lent_fd = st->fds[idx];
        }
}

void live_stage_gone(struct conn *c)
{
        struct journal *j = c->srv->journal;
        struct stage *st = &c->stage;

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

/* ---- ports, handles, runners ---------------------------------------------------------------- */

void live_port_linger(struct port *p)
{
        struct journal *j = p->srv->journal;
        struct jr_record *r;

        if (!j || !p->jr)
                return;
        r = journal_rec(j, p->jr);
        r->u32e = p->linger_ms;
        r->u64a = p->lingering ? ns_of(&p->linger_deadline) : 0;
}

void live_port_epoch(struct port *p)
{
        struct journal *j = p->srv->journal;

        if (j && p->jr)
                journal_rec(j, p->jr)->u64b = p->epoch;
}

void live_port(struct port *p)
{
        struct journal *j = p->srv->journal;
        struct jr_record *r;
        size_t len = p->name ? strlen(p->name) : 0, first;

        if (!j || p->jr || !(p->jr = journal_new(j, JR_PORT)))
                return;
        r = journal_rec(j, p->jr);
        r->u32a = p->id;
        r->u32b = (uint32_t)p->uid;
        r->u32c = p->concurrency;
        r->u32d = (uint32_t)len;
        first = SN_MIN(len, sizeof(r->data));
        memcpy(r->data, p->name ? p->name : "", first);
        for (size_t off = first, k = 0; off < len && k < SN_ARRAY_SIZE(p->jr_name); k++) {
                size_t n = SN_MIN(len - off, sizeof(r->data));
                uint32_t i = journal_new(j, JR_NAME);

                if (!i)
                        return;
                p->jr_name[k] = i;
                r = journal_rec(j, i);
                r->u32a = p->id;
                r->u32b = (uint32_t)off;
                r->u32c = (uint32_t)n;
                memcpy(r->data, p->name + off, n);
                off += n;
        }
        journal_header(j)->next_port_id = p->srv->next_port_id;
        live_port_linger(p);
        live_port_epoch(p);
}

void live_port_gone(struct port *p)
{
        struct journal *j = p->srv->journal;

        journal_free(j, &p->jr);
        for (size_t k = 0; k < SN_ARRAY_SIZE(p->jr_name); k++)
                journal_free(j, &p->jr_name[k]);
}

void live_handle(struct handle *h)
{
        struct journal *j = h->conn->srv->journal;

        if (!j || h->jr || !(h->jr = journal_new(j, JR_HANDLE)))
                return;
        journal_rec(j, h->jr)->serial = h->conn->serial;
        journal_rec(j, h->jr)->u32a = h->port->id;
}

void live_handle_gone(struct handle *h)
{
        journal_free(h->conn->srv->journal, &h->jr);
}

void live_runner(struct runner *rn)
{
        struct journal *j = rn->conn->srv->journal;

        if (!j || rn->jr || !(rn->jr = journal_new(j, JR_RUNNER)))
                return;
        journal_rec(j, rn->jr)->serial = rn->conn->serial;
        journal_rec(j, rn->jr)->u32a = rn->port->id;
        journal_rec(j, rn->jr)->u32b = rn->thread;
}

void live_runner_gone(struct runner *rn)
{
        journal_free(rn->conn->srv->journal, &rn->jr);
}

/* ---- registrations and packets ------------------------------------------------------------ */

void live_reg(struct reg *g)
{
        struct journal *j = g->port->srv->journal;
        struct stage_keep *lent = g->port->srv->lent;
        struct jr_record *r;

        if (!j)
                return;
        if (!g->jr && lent && lent->jr && g->port->srv->lent_fd == g->fd) {
                /* A descriptor of a multi-part call becomes this registration's: its record
                 * and its place in a box are taken over, so the descriptor is never in
                 * flight twice (the kernel limits how many are). */
                g->jr = lent->jr;
                lent->jr = 0;
                memset(journal_rec(j, g->jr), 0, JR_RECORD);
                journal_rec(j, g->jr)->type = JR_REG;
                journal_move(j, &lent->box, &g->box);
        }
        if (!g->jr) {
                if (!(g->jr = journal_new(j, JR_REG)))
                        return;
                journal_keep(j, &g->box, g->fd, g->jr);
        }
        r = journal_rec(j, g->jr);
        r->serial = g->creator ? g->creator->serial : 0;
        r->dev = g->dev;
        r->ino = g->ino;
        r->u64a = g->key;
        r->u32a = g->port->id;
        r->u32b = g->client_fd;
        r->u32c = g->filter;
        r->u32e = (uint32_t)g->fd;
        r->u8a = g->trigger;
        r->u8b = g->state;
        r->u8c = (uint8_t)(g->fired | g->fresh << 1);
}

void live_reg_fired(struct reg *g)
{
        struct journal *j = g->port->srv->journal;

        if (j && g->jr)
                journal_rec(j, g->jr)->u8c = (uint8_t)(g->fired | g->fresh << 1);
}

void live_reg_queued(struct reg *g)
{
        struct journal *j = g->port->srv->journal;
        struct jr_record *r;

        if (!j || !g->jr)
                return;
        r = journal_rec(j, g->jr);
        r->u32d = g->queued ? g->pkt.events : 0;
        r->u64b = g->pkt.seq;
        memcpy(r->data, &g->pkt.epoch, sizeof(g->pkt.epoch));
}

void live_reg_gone(struct reg *g)
{
        struct journal *j = g->port->srv->journal;

        journal_drop(j, &g->box);
        journal_free(j, &g->jr);
}

/* The order of a packet queued now, among every port's packets. */
uint64_t live_packet_seq(struct server *srv)
{
        return srv->journal ? next_seq(srv->journal) : 0;
}

void live_posted(struct port *p, struct packet *pkt)
{
        struct journal *j = p->srv->journal;
        struct jr_record *r;

        if (!j || !(posted_of(pkt)->jr = journal_new(j, JR_POSTED)))
                return;
        r = journal_rec(j, posted_of(pkt)->jr);
        r->serial = pkt->seq;
        r->u32a = p->id;
        r->u32b = pkt->events;
        r->u64a = pkt->key;
        r->u64b = pkt->overlapped;
        memcpy(r->data, &pkt->epoch, sizeof(pkt->epoch));
}

void live_posted_gone(struct server *srv, struct packet *pkt)
{
        journal_free(srv->journal, &posted_of(pkt)->jr);
}

/* ---- parked calls ----------------------------------------------------------------------- */

#define PAIRS (JR_DATA / 8)

/* Writes up to PAIRS (index, result) pairs of w's non-zero results from *from into data;
 * returns how many. */
static uint32_t put_pairs(const struct wait *w, uint32_t *from, uint8_t *data)
{
        uint32_t n = 0;

        for (; *from < w->nresults && n < PAIRS; (*from)++) {
                if (!w->results[*from])
                        continue;
                memcpy(data + n * 8, from, 4);
                memcpy(data + n * 8 + 4, &w->results[*from], 4);
                n++;
        }
        return n;
}

void live_wait(struct wait *w)
{
        struct journal *j = w->conn->srv->journal;
        struct jr_record *r;
        uint32_t from = 0, nz, prev;

        if (!j || w->jr || !(w->jr = journal_new(j, JR_WAIT)))
                return;
        r = journal_rec(j, w->jr);
        r->serial = w->conn->serial;
        r->u32a = w->port->id;
        r->u32b = w->id;
        r->u32c = w->thread;
        r->u32d = w->max_entries;
        r->u32e = w->timeout_ms;
        r->u64a = w->timeout_ms == SN_PROTO_INFINITE ? 0 : ns_of(&w->deadline);
        nz = put_pairs(w, &from, r->data);
        r->u64b = w->nresults | (uint64_t)nz << 32;
        /* The rest of the non-zero results, PAIRS to a record, chained from the wait's dev
         * through each one's u32e.  (journal_new() may move the mapping: records are looked
         * up again after it.) */
        prev = w->jr;
        for (;;) {
                uint32_t i;

                while (from < w->nresults && !w->results[from])
                        from++;
                if (from == w->nresults)
                        break;
                i = journal_new(j, JR_RESULTS);
                if (!i) {
                        /* Incomplete: the reader fails this call rather than guess. */
                        journal_rec(j, w->jr)->u8a = 1;
                        return;
                }
                journal_rec(j, i)->serial = w->conn->serial;
                journal_rec(j, i)->u32a = w->id;
                journal_rec(j, i)->u32c = put_pairs(w, &from, journal_rec(j, i)->data);
                if (prev == w->jr)
                        journal_rec(j, prev)->dev = i;
                else
                        journal_rec(j, prev)->u32e = i;
                prev = i;
        }
}

void live_wait_gone(struct wait *w)
{
        struct journal *j = w->conn->srv->journal;
        uint32_t i;

        if (!j || !w->jr)
                return;
        i = (uint32_t)journal_rec(j, w->jr)->dev;
        while (i) {
                uint32_t next = journal_rec(j, i)->u32e;

                journal_free(j, &i);
                i = next;
        }
        journal_free(j, &w->jr);
}

/* ---- a whole new journal ----------------------------------------------------------------- */

static void journal_conn(struct conn *c)
{
        struct stage *st = &c->stage;
        struct sn_list *pos;

        if (c->dead)
                return;
        live_conn(c);
        for (pos = c->outq.next; pos != &c->outq; pos = pos->next)
                live_out(c, sn_list_entry(pos, struct outmsg, link));
        if (st->active && (st->nitems || st->nfds))
                live_stage_part(c, st->items, st->nitems, st->nfds);
        for (pos = c->runners.next; pos != &c->runners; pos = pos->next)
                live_runner(sn_list_entry(pos, struct runner, conn_link));
}

static void journal_port(struct port *p)
{
        struct sn_list *pos;

        live_port(p);
        for (pos = p->handles.next; pos != &p->handles; pos = pos->next)
                live_handle(sn_list_entry(pos, struct handle, port_link));
        for (pos = p->regs.next; pos != &p->regs; pos = pos->next)
                live_reg(sn_list_entry(pos, struct reg, port_link));
        for (pos = p->queue.next; pos != &p->queue; pos = pos->next) {
                struct packet *pkt = sn_list_entry(pos, struct packet, link);

                /* Numbered again in the queue's order: a restore's packets had none. */
                pkt->seq = next_seq(p->srv->journal);
                if (pkt->kind == SN_PROTO_KIND_POSTED)
                        live_posted(p, pkt);
                else
                        live_reg_queued(SN_CONTAINER_OF(pkt, struct reg, pkt));
        }
        for (pos = p->waiters.next; pos != &p->waiters; pos = pos->next)
                live_wait(sn_list_entry(pos, struct wait, port_link));
}

void live_everything(struct server *srv)
{
        struct jr_header *h = journal_header(srv->journal);
        struct sn_list *pos;

        h->next_port_id = srv->next_port_id;
        memcpy(h->port_id_key, srv->port_id_key, sizeof(h->port_id_key));
        h->next_conn_serial = srv->next_conn_serial;
        h->reexecs = srv->counters.reexecs;
        live_listen(srv);
        for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next)
                journal_conn(sn_list_entry(pos, struct conn, link));
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next)
                journal_port(sn_list_entry(pos, struct port, srv_link));
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

/* Every object's record numbers back to none (their boxes are cleared by journal_close()). */
static void forget_records(struct server *srv)
{
        struct sn_list *pos, *p2;

        srv->listen_jr = 0;
        for (pos = srv->conns.next; pos != &srv->conns; pos = pos->next) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                c->jr = 0;
                c->stage.jr_first = c->stage.jr_last = 0;
                for (uint32_t i = 0; c->stage.keep && i < c->stage.nfds; i++)
                        if (c->stage.keep[i])
                                c->stage.keep[i]->jr = 0;
                for (p2 = c->outq.next; p2 != &c->outq; p2 = p2->next)
                        sn_list_entry(p2, struct outmsg, link)->jr = 0;
                for (p2 = c->runners.next; p2 != &c->runners; p2 = p2->next)
                        sn_list_entry(p2, struct runner, conn_link)->jr = 0;
        }
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                p->jr = 0;
                memset(p->jr_name, 0, sizeof(p->jr_name));
                for (p2 = p->handles.next; p2 != &p->handles; p2 = p2->next)
                        sn_list_entry(p2, struct handle, port_link)->jr = 0;
                for (p2 = p->regs.next; p2 != &p->regs; p2 = p2->next)
                        sn_list_entry(p2, struct reg, port_link)->jr = 0;
                for (p2 = p->queue.next; p2 != &p->queue; p2 = p2->next) {
                        struct packet *pkt = sn_list_entry(p2, struct packet, link);

                        if (pkt->kind == SN_PROTO_KIND_POSTED)
                                posted_of(pkt)->jr = 0;
                }
                for (p2 = p->waiters.next; p2 != &p->waiters; p2 = p2->next)
                        sn_list_entry(p2, struct wait, port_link)->jr = 0;
        }
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
        /* Edges the kernel saw and nobody harvested yet go into the queue, which is kept: the
         * next image's new epoll instances report only what happens after. */
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->nregs)
                        port_harvest(p, p->nregs);
        }
        journal_flush(j);
        journal_header(j)->reexecs = srv->counters.reexecs;
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

                if (c->dead)
                        continue;
                set_cloexec(c->fd, on);
                for (uint32_t i = 0; i < c->stage.nfds; i++)
                        set_cloexec(c->stage.fds[i], on);
        }
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                for (p2 = p->regs.next; p2 != &p->regs; p2 = p2->next)
                        set_cloexec(sn_list_entry(p2, struct reg, port_link)->fd, on);
        }
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * persist.c - every object writes its journal record (daemon/state/journal.h) as it changes:
 * ports (and the rest of a long name), handles, running threads, registrations with their
 * queued packet, posted packets and waiting calls.  Connections write theirs in the service
 * layer (daemon/service/persist.c), which also starts, leaves and stops the journal.  Each
 * hook does nothing without a journal (srv->journal NULL: while a restore runs, and when the
 * journal could not be made); *_gone runs before the object is freed.  The fields of each
 * record type are listed in docs/state.md; daemon/restore/restore.c reads them.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "common/macro.h"
#include "daemon/objects/persist.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/session.h"
#include "daemon/objects/world.h"
#include "daemon/state/journal.h"

static uint64_t ns_of(const struct timespec *t)
{
        return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t next_seq(struct journal *j)
{
        return journal_header(j)->next_seq++;
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
        struct journal *j = h->session->srv->journal;

        if (!j || h->jr || !(h->jr = journal_new(j, JR_HANDLE)))
                return;
        journal_rec(j, h->jr)->serial = h->session->serial;
        journal_rec(j, h->jr)->u32a = h->port->id;
}

void live_handle_gone(struct handle *h)
{
        journal_free(h->session->srv->journal, &h->jr);
}

void live_runner(struct runner *rn)
{
        struct journal *j = rn->session->srv->journal;

        if (!j || rn->jr || !(rn->jr = journal_new(j, JR_RUNNER)))
                return;
        journal_rec(j, rn->jr)->serial = rn->session->serial;
        journal_rec(j, rn->jr)->u32a = rn->port->id;
        journal_rec(j, rn->jr)->u32b = rn->thread;
}

void live_runner_gone(struct runner *rn)
{
        journal_free(rn->session->srv->journal, &rn->jr);
}

/* ---- registrations and packets ------------------------------------------------------------ */

void live_reg(struct reg *g)
{
        struct journal *j = g->port->srv->journal;
        struct jr_keep *lent = g->port->srv->lent;
        struct jr_record *r;
        uint64_t handle;

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
        handle = server_reg_handle(g->port->srv, g->slot);
        memcpy(r->data + 8, &handle, sizeof(handle));
}

void live_reg_fired(struct reg *g)
{
        struct journal *j = g->port->srv->journal;

        if (j && g->jr)
                journal_rec(j, g->jr)->u8c = (uint8_t)(g->fired | g->fresh << 1);
}

void live_reg_held(struct reg *g, uint8_t held)
{
        struct journal *j = g->port->srv->journal;
        struct jr_record *r;

        if (!j || !g->jr)
                return;
        r = journal_rec(j, g->jr);
        r->data[JR_REG_HELD] = held;
        r->data[JR_REG_HELD + 1] = 1; /* known: a journal left by an older image has 0 */
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
        struct journal *j = w->session->srv->journal;
        struct jr_record *r;
        uint32_t from = 0, nz, prev;

        if (!j || w->jr || !(w->jr = journal_new(j, JR_WAIT)))
                return;
        r = journal_rec(j, w->jr);
        r->serial = w->session->serial;
        r->u32a = w->port->id;
        r->u32b = w->id;
        r->u32c = w->thread;
        r->u32d = w->max_entries;
        r->u32e = w->timeout_ms;
        r->u8b = w->ahead;
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
                journal_rec(j, i)->serial = w->session->serial;
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
        struct journal *j = w->session->srv->journal;
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

void live_port_everything(struct port *p)
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


void live_port_forget(struct port *p)
{
        struct sn_list *p2;

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

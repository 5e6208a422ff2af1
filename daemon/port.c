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
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/daemon.h"
#include "socknotify.h"

static void port_ready_cb(evutil_socket_t fd, short what, void *arg)
{
        struct port *port = arg;

        if (port->nwaiters)
                port_dispatch(port);
}

int port_new(struct conn *owner, uint32_t concurrency, struct port **ret_port)
{
        struct server *srv = owner->srv;
        struct port *p;

        if (owner->nports >= srv->limits.max_ports)
                return -EDQUOT;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (p->epfd < 0) {
                int r = -errno;
                free(p);
                return r;
        }
        sn_list_init(&p->queue);
        sn_list_init(&p->waiters);
        sn_list_init(&p->regs);
        sn_list_init(&p->skips);
        p->owner = owner;
        if (!concurrency) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                concurrency = n > 0 ? (uint32_t)n : 1;
        }
        p->concurrency = concurrency;
        /* Edge-triggered: the callback only needs to hear that something new became ready;
         * waiters arriving later harvest by themselves. */
        event_assign(&p->ev, srv->base, p->epfd, EV_READ | EV_PERSIST | EV_ET, port_ready_cb, p);
        if (event_add(&p->ev, NULL) < 0) {
                close(p->epfd);
                free(p);
                return -ENOMEM;
        }
        if (++srv->next_port_id == 0)
                ++srv->next_port_id;
        p->id = srv->next_port_id;
        sn_list_add_head(&owner->ports, &p->conn_link);
        owner->nports++;
        srv->nports++;
        *ret_port = p;
        return 0;
}

void port_free(struct port *p, uint32_t status)
{
        struct server *srv;
        struct sn_list *pos, *tmp;

        if (!p)
                return;
        srv = p->owner->srv;
        while (!sn_list_empty(&p->waiters))
                wait_cancel(sn_list_first(&p->waiters, struct wait, port_link), status);
        event_del(&p->ev);
        /* Closing the epoll instance first drops every item at once (rule 9). */
        p->epfd = sn_close(p->epfd);
        sn_list_foreach_safe(pos, tmp, &p->queue) {
                struct packet *pkt = sn_list_entry(pos, struct packet, link);

                if (pkt->kind == SN_PROTO_KIND_POSTED) {
                        sn_list_del(&pkt->link);
                        p->nqueued--;
                        srv->nqueued--;
                        free(pkt);
                }
        }
        while (!sn_list_empty(&p->regs))
                reg_free(sn_list_first(&p->regs, struct reg, port_link));
        sn_list_del(&p->conn_link);
        p->owner->nports--;
        srv->nports--;
        free(p);
}

struct port *port_find(struct conn *conn, uint32_t id)
{
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &conn->ports) {
                struct port *p = sn_list_entry(pos, struct port, conn_link);

                if (p->id == id) {
                        if (pos != conn->ports.next) { /* most recently used first */
                                sn_list_del(pos);
                                sn_list_add_head(&conn->ports, pos);
                        }
                        return p;
                }
        }
        return NULL;
}

void port_queue_reg(struct port *port, struct reg *g, uint32_t events)
{
        if (g->queued) {
                g->pkt.events |= events;
                return;
        }
        g->pkt.key = g->key;
        g->pkt.overlapped = 0;
        g->pkt.events = events;
        g->pkt.epoch = port->epoch;
        sn_list_add_tail(&port->queue, &g->pkt.link);
        g->queued = true;
        port->nqueued++;
        port->owner->srv->nqueued++;
}

int port_post(struct port *port, const uint8_t *items, uint32_t n)
{
        struct server *srv = port->owner->srv;
        struct sn_list batch = SN_LIST_INIT(batch);

        if (n > srv->limits.max_posted || port->nposted > srv->limits.max_posted - n)
                return -EDQUOT;
        for (uint32_t i = 0; i < n; i++) {
                struct snw_packet in;
                struct packet *pkt = malloc(sizeof(*pkt));

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
                sn_list_add_tail(&batch, &pkt->link);
        }
        while (!sn_list_empty(&batch)) {
                struct sn_list *l = batch.next;
                sn_list_del(l);
                sn_list_add_tail(&port->queue, l);
        }
        port->nposted += n;
        port->nqueued += n;
        srv->nqueued += n;
        return 0;
}

/* One epoll_wait; returns how many events it returned and adds the new packets to *ret_new. */
static int harvest_once(struct port *port, uint32_t want, uint32_t *ret_new)
{
        struct server *srv = port->owner->srv;
        int n = epoll_wait(port->epfd, srv->evbuf, (int)SN_MIN(want, srv->evcap), 0);

        for (int i = 0; i < n; i++) {
                struct reg *g = srv->evbuf[i].data.ptr;
                uint32_t m = reg_translate(g, srv->evbuf[i].events);

                if (!m)
                        continue;
                if (!g->queued)
                        (*ret_new)++;
                port_queue_reg(port, g, m);
        }
        return n;
}

void port_harvest(struct port *port, uint32_t want)
{
        struct server *srv = port->owner->srv;

        while (want) {
                uint32_t fresh = 0;
                uint32_t ask = SN_MIN(want, srv->evcap);
                int n = harvest_once(port, ask, &fresh);

                /* Stop when the ready list is exhausted or only re-reported old packets. */
                if (n < (int)ask || !fresh)
                        break;
                want -= SN_MIN(want, fresh);
        }
        if (!sn_list_empty(&port->skips))
                port_harvest_skips(port);
}

void port_harvest_skips(struct port *port)
{
        struct server *srv = port->owner->srv;

        /* Each EDGE registration enabled while ready is on the ready list now; its report
         * is trimmed by reg_translate().  Level-triggered items come back round-robin, so a
         * bounded number of rounds reaches every item of the list. */
        for (unsigned round = 0; round < 64 && !sn_list_empty(&port->skips); round++) {
                uint32_t fresh = 0;

                if (harvest_once(port, srv->evcap, &fresh) < (int)srv->evcap)
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
        struct server *srv = port->owner->srv;
        uint32_t n = 0;

        port->epoch++; /* packets harvested before this call are re-checked */
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
                        srv->counters.posted_delivered++;
                        free(pkt);
                        n++;
                        continue;
                }

                struct reg *g = SN_CONTAINER_OF(pkt, struct reg, pkt);
                uint32_t events = pkt->events;

                g->queued = false;
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
                out = put_entry(out, pkt->key, 0, events, SN_PROTO_KIND_SOCKET);
                srv->counters.notifications++;
                n++;
        }
        return n;
}

void port_dispatch(struct port *port)
{
        struct server *srv = port->owner->srv;

        while (!sn_list_empty(&port->waiters)) {
                struct wait *w = sn_list_first(&port->waiters, struct wait, port_link);
                uint32_t n = port_take(port, srv->ebuf, w->max_entries);

                if (!n)
                        break;
                conn_reply_process(w->conn, w->id, 0, w->results, w->nresults, srv->ebuf, n);
                wait_free(w);
        }
}

static void wait_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
        struct wait *w = arg;

        w->timer_armed = false;
        wait_cancel(w, ETIMEDOUT);
}

int port_wait(struct port *port, struct conn *conn, uint32_t id, uint32_t max_entries,
              uint32_t timeout_ms, const uint32_t *results, uint32_t n)
{
        struct wait *w = malloc(sizeof(*w) + (size_t)n * sizeof(uint32_t));

        if (!w)
                return -ENOMEM;
        w->conn = conn;
        w->port = port;
        w->id = id;
        w->max_entries = max_entries;
        w->nresults = n;
        if (n)
                memcpy(w->results, results, (size_t)n * sizeof(uint32_t));
        w->timer_armed = false;
        if (timeout_ms != SN_PROTO_INFINITE) {
                struct timeval tv = { .tv_sec = timeout_ms / 1000,
                                      .tv_usec = (timeout_ms % 1000) * 1000 };

                evtimer_assign(&w->timer, conn->srv->base, wait_timeout_cb, w);
                if (evtimer_add(&w->timer, &tv) < 0) {
                        free(w);
                        return -ENOMEM;
                }
                w->timer_armed = true;
        }
        sn_list_add_head(&port->waiters, &w->port_link);
        port->nwaiters++;
        sn_list_add_tail(&conn->waits, &w->conn_link);
        conn->nwaits++;
        conn->srv->nwaits++;
        return 0;
}

void wait_free(struct wait *w)
{
        if (!w)
                return;
        if (w->timer_armed)
                evtimer_del(&w->timer);
        sn_list_del(&w->port_link);
        w->port->nwaiters--;
        sn_list_del(&w->conn_link);
        w->conn->nwaits--;
        w->conn->srv->nwaits--;
        free(w);
}

void wait_cancel(struct wait *w, uint32_t status)
{
        conn_reply_process(w->conn, w->id, status, w->results, w->nresults, NULL, 0);
        wait_free(w);
}

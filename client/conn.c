/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * conn.c - the connection to socknotifyd: handshake, request ids, the shared reader, and
 * resuming on a new daemon.  The transport, the lowest layer of the library: it calls the
 * layers above only through conn->hooks, which they set.
 *
 * Invariants: conn->lock guards the pending list, the reader role and the descriptor cache;
 * a pending request is on the list from before its first byte is sent until its reply has been
 * decoded (or the connection is lost, when every pending request fails).  Every message goes
 * out under send_lock.  The library never prints, except the messages a user asks for with
 * SOCKNOTIFY_TRACE=1.
 *
 * Resuming (docs/reconnect.md).  When the daemon ends (end of file or a reset on the socket),
 * the thread that notices it takes the reader role for a thread of its own (resume_behind()),
 * which takes send_lock, so that nobody else reads or sends, and connects again to the same
 * path until SOCKNOTIFY_RECONNECT_MS have passed; a handshake waits for its answer no longer.
 * Meanwhile a pure dequeue with a finite timeout waits for it at most that long and returns
 * -ETIMEDOUT (sn__send_lock_until(), sn__conn_recover_until()); every other call waits.  It sends nothing to the new daemon, not even HELLO, unless SO_PEERCRED says that it
 * runs as the user of the daemon that was lost or as root.  Then the replay hook makes the
 * process's ports and registrations again, and the waiting calls are woken: a pure dequeue
 * with SN__ASK_AGAIN (its caller asks the new daemon), any other call with -EIO (it may or may
 * not have taken effect; retry.c says which are sent again).  When no daemon came back in
 * time, every call fails with -ECONNRESET from then on; with -EACCES when another user's daemon
 * answered.
 *
 * Cancellation (pthread_cancel): a dequeuing call acts on it only where it blocks waiting for
 * its reply (asleep on its condition variable, or polling the socket as the reader), never while
 * it holds a message received for another thread or sends; other calls hold it off.  Its cleanup handler releases the lock and the
 * reader role, and leaves a heap copy of its request on the pending list: the late reply is
 * decoded into conn->orphans (entries it dequeued), which the next call on that port returns, so
 * that a cancelled wait neither deadlocks the connection nor loses what the daemon gave it.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "client/client.h"
#include "common/fdmsg.h"
#include "common/macro.h"
#include "common/path.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Open connections, so that a thread's exit handler only talks to live ones. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static sn_conn_t *live;
static volatile uint64_t fork_generation;

static void on_fork_child(void)
{
        fork_generation++;
}

static void install_fork_handler(void)
{
        pthread_atfork(NULL, NULL, on_fork_child);
}

int sn__conn_usable(sn_conn_t *c)
{
        if (!c)
                return -EINVAL;
        if (c->fork_gen != fork_generation)
                return -EBADFD;
        if (c->broken)
                return c->lost_err;
        return 0;
}

static int64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sn__mono_ms(void)
{
        return mono_ms();
}

/* The CLOCK_REALTIME instant (for pthread's timed waits) that lies as far ahead as deadline
 * (CLOCK_MONOTONIC, ms) does now.  A step of the wall clock meanwhile moves it; the callers
 * look at the monotonic clock again when it passes. */
static struct timespec realtime_at(int64_t deadline)
{
        int64_t left = SN_MAX(deadline - mono_ms(), (int64_t)0);
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(left / 1000);
        ts.tv_nsec += (long)(left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
        }
        return ts;
}

static void trace(sn_conn_t *c, const char *dir, const uint8_t *buf, size_t len)
{
        char line[1024];

        sn_msg_trace(line, sizeof(line), buf, len, 8);
        fprintf(stderr, "socknotify[%d] %s %s\n", (int)getpid(), dir, line);
}

int sn__send(sn_conn_t *c, const uint8_t *buf, size_t len, const int *fds, unsigned nfds)
{
        int cancel_state, r;

        /* Not a cancellation point: half a call must never go out, nor a lock stay taken. */
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        if (c->trace)
                trace(c, "->", buf, len);
        /* After a resume that failed there is no transport any more. */
        r = c->fd < 0 ? -ECONNRESET : sn__transport_send(c->fd, &c->ring, buf, len, fds, nfds);
        pthread_setcancelstate(cancel_state, NULL);
        return r;
}

#define CQ_HOLD_POLL_MS 10

/* With c->lock held: no reply is held any more (their threads find nothing to give back). */
static void cq_forget_holds(sn_conn_t *c)
{
        while (c->held) {
                c->held->held = false;
                c->held = c->held->held_next;
        }
}

/* Closes the transport: the socket and the rings (never touched again).  Returns -1, for
 * c->fd.  The caller holds c->lock, and send_lock unless the connection is not shared yet. */
static int transport_close(sn_conn_t *c)
{
        /* Replies held for their threads were in these rings: nothing to give back any more. */
        cq_forget_holds(c);
        c->cq_delivered = 0;
        sn__ring_detach(&c->ring);
        return sn_close(c->fd);
}

/*
 * The completion ring's space, and with it the daemon's knowledge that a reply was read, is
 * given back only up to the first reply still held for its thread (transport.h).  The daemon
 * counts a thread it gave entries to as running until that reply is read (PROTOCOL.md, section
 * 4); a thread asleep here while another thread reads its reply for it is on its way to run,
 * and must not be read as blocked elsewhere, which would let one more thread run than the port
 * allows.  So a reply to a call a thread waits for is held until that thread has it (leaves
 * sn__wait()).  With c->lock held; every reader sets cq_delivered before it gives back.
 */
static void cq_give_back(sn_conn_t *c)
{
        uint32_t to = c->cq_delivered;

        for (struct sn_pending *q = c->held; q; q = q->held_next)
                if ((int32_t)(to - q->cq_start) > 0)
                        to = q->cq_start;
        /* A thread that stays asleep long after it was woken (a signal handler that blocks)
         * must not keep the ring from the daemon and the other threads: once the daemon waits
         * for room, the replies held are given back, read or not (a reader waits at most
         * CQ_HOLD_POLL_MS at a time while any is held, to look). */
        if (to != c->cq_delivered && sn__transport_cq_wanted(&c->ring)) {
                cq_forget_holds(c);
                to = c->cq_delivered;
        }
        sn__transport_cq_release(&c->ring, to);
}

/* With c->lock held, by the thread of p once it has its reply (or leaves it). */
static void cq_unhold(sn_conn_t *c, struct sn_pending *p)
{
        if (!p->held)
                return;
        for (struct sn_pending **pp = &c->held; *pp; pp = &(*pp)->held_next) {
                if (*pp == p) {
                        *pp = p->held_next;
                        break;
                }
        }
        p->held = false;
        cq_give_back(c);
}

/* With c->lock held, by a reader that took a message from [start, end) of the completion ring
 * (nothing taken: start == end) and, if a thread waits for it, gave it to woken. */
static void cq_delivered(sn_conn_t *c, uint32_t start, uint32_t end, struct sn_pending *woken)
{
        if (!sn__ring_active(&c->ring))
                return;
        c->cq_delivered = end;
        if (woken && start != end && !woken->held) {
                woken->held = true;
                woken->cq_start = start;
                woken->held_next = c->held;
                c->held = woken;
        }
        cq_give_back(c);
}

/* Fire and forget (id 0 is never a pending request's): thread is gone on this connection. */
static void send_thread_exit(sn_conn_t *c, uint32_t thread)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_thread];
        struct snw_thread body = { .thread = thread };

        snw_thread_encode(sn_msg_begin(buf, SN_MSG_THREAD_EXIT, 0, 0, 0, 0, 0), &body);
        pthread_mutex_lock(&c->send_lock);
        sn__send(c, buf, sizeof(buf), NULL, 0);
        pthread_mutex_unlock(&c->send_lock);
}

/* With c->lock held: a stash of n entries for port, appended to conn->orphans (NULL when out of
 * memory: the entries are lost, as they would be with a dead process). */
static struct sn_orphans *orphans_new(sn_conn_t *c, const struct sn_pending *p, uint32_t n)
{
        struct sn_orphans *o = malloc(sizeof(*o) + (size_t)n * sizeof(sn_entry_t)), **pp;

        if (!o)
                return NULL;
        *o = (struct sn_orphans){ .port = p->port, .thread = p->thread, .gone = p->gone, .n = n };
        for (pp = &c->orphans; *pp; pp = &(*pp)->next)
                ;
        *pp = o;
        /* Wake the relay requests of that port: they return these entries. */
        for (struct sn_pending *q = c->pending; q; q = q->next)
                if (q->relay && q->port == p->port && q->waiting)
                        pthread_cond_signal(&q->cond);
        return o;
}

/* With c->lock held: whether entries are stashed for port. */
static bool orphans_for(sn_conn_t *c, uint32_t port)
{
        for (struct sn_orphans *o = c->orphans; o; o = o->next)
                if (o->port == port)
                        return true;
        return false;
}

/* With c->lock held: replaces p on the pending list with a heap copy whose reply is stashed
 * (without memory, the reply is discarded). */
static void leave_behind(sn_conn_t *c, struct sn_pending *p, bool gone);

/* The reply to a cancelled dequeue (under c->lock): keep its entries for the next caller. */
static void orphan_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                         const struct sn_msg_desc *d)
{
        const uint8_t *ent = sn_msg_array(buf, d, 2);
        struct sn_orphans *o;

        if (!h->count2 || !(o = orphans_new(p->ctx, p, h->count2)))
                return;
        for (uint32_t i = 0; i < h->count2; i++)
                ent = sn__entry_decode(p->ctx, ent, &o->e[i]);
}

uint32_t sn__orphans_take(sn_conn_t *c, uint32_t port, sn_entry_t *entries, uint32_t max)
{
        uint32_t n = 0, gone[8];
        unsigned ngone = 0;

        if (!max)
                return 0;
        pthread_mutex_lock(&c->lock);
        for (struct sn_orphans **pp = &c->orphans; *pp && n < max;) {
                struct sn_orphans *o = *pp;
                uint32_t k;

                if (o->port != port) {
                        pp = &o->next;
                        continue;
                }
                k = SN_MIN(max - n, o->n - o->first);
                memcpy(entries + n, o->e + o->first, (size_t)k * sizeof(*entries));
                n += k;
                o->first += k;
                if (o->first < o->n)
                        break;
                if (o->gone && ngone < SN_ARRAY_SIZE(gone))
                        gone[ngone++] = o->thread;
                *pp = o->next;
                free(o);
        }
        pthread_mutex_unlock(&c->lock);
        /* The daemon counted the cancelled thread as running on the port once it was given
         * entries (concurrency rule): it runs no more. */
        for (unsigned i = 0; i < ngone; i++)
                send_thread_exit(c, gone[i]);
        return n;
}

static void pending_add(sn_conn_t *c, struct sn_pending *p, uint16_t expect, sn_reply_fn fn,
                        void *ctx, bool call)
{
        p->done = false;
        p->waiting = false;
        p->async = call;
        p->sending = call;
        p->status = 0;
        p->expect = expect;
        p->on_reply = fn;
        p->ctx = ctx;
        p->port = p->thread = 0;
        p->salvage = NULL;
        p->relay = p->abandoned = p->gone = false;
        p->in_ring = false;
        p->fds = NULL;
        p->nfds = 0;
        p->fds_cut = false;
        p->held = false;
        p->held_next = NULL;
        pthread_cond_init(&p->cond, NULL);
        pthread_mutex_lock(&c->lock);
        if (++c->next_id == 0)
                ++c->next_id;
        p->id = c->next_id;
        p->next = c->pending;
        c->pending = p;
        pthread_mutex_unlock(&c->lock);
}

void sn__pending_add(sn_conn_t *c, struct sn_pending *p, uint16_t expect, sn_reply_fn fn,
                     void *ctx)
{
        pending_add(c, p, expect, fn, ctx, false);
}

void sn__pending_add_call(sn_conn_t *c, struct sn_pending *p, uint16_t expect, sn_reply_fn fn,
                          void *ctx)
{
        pending_add(c, p, expect, fn, ctx, true);
}

void sn__pending_unlink(sn_conn_t *c, struct sn_pending *p)
{
        for (struct sn_pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
                if (*pp == p) {
                        *pp = p->next;
                        return;
                }
        }
}

/* With c->lock held and nobody reading: wakes one thread that sleeps waiting for its reply so
 * that it takes over reading. */
static void hand_off(sn_conn_t *c)
{
        if (c->reader_active)
                return;
        for (struct sn_pending *q = c->pending; q; q = q->next) {
                if (q->waiting) {
                        pthread_cond_signal(&q->cond);
                        return;
                }
        }
}

void sn__pending_remove(sn_conn_t *c, struct sn_pending *p)
{
        pthread_mutex_lock(&c->lock);
        sn__pending_unlink(c, p);
        cq_unhold(c, p);
        hand_off(c);
        pthread_mutex_unlock(&c->lock);
        pthread_cond_destroy(&p->cond);
}

/* Called with c->lock held when the connection broke: every waiter learns it. */
static void conn_lost(sn_conn_t *c);
/* Called with c->lock held, by a thread that does not hold the reader role, when the daemon
 * ended: resumes on a new one, or loses the connection (see the top of the file). */
static void conn_ended(sn_conn_t *c);

/* Called with c->lock held: decodes one received reply into its pending request.  The
 * descriptors that came with it go to a request that expects some (p->fds); fds_cut: the
 * kernel dropped some (we ran out of descriptors).  Descriptors on any other reply (another
 * type, a status other than 0, no such request) break the protocol (PROTOCOL.md, "Descriptors
 * in replies"): they are closed, the request fails with -EBADMSG and the connection is lost. */
static struct sn_pending *deliver(sn_conn_t *c, const uint8_t *buf, size_t len, int *fds,
                                  unsigned nfds, bool fds_cut)
{
        const struct sn_msg_desc *d;
        struct snw_header h;
        struct sn_pending *p;
        bool unexpected;

        if (sn_msg_check(buf, len, &h, &d) < 0) {
                sn__fds_close(fds, nfds);
                return NULL; /* nothing in it can be trusted, not even its id */
        }
        for (p = c->pending; p; p = p->next)
                if (p->id == h.id)
                        break;
        unexpected = (nfds || fds_cut) && (!p || !p->fds || h.type != p->expect || h.status);
        if (unexpected || !p || !p->fds || h.type != p->expect) {
                sn__fds_close(fds, nfds);
                nfds = 0;
        }
        if (!p) {
                if (unexpected)
                        conn_lost(c);
                return NULL;
        }
        sn__pending_unlink(c, p);
        if (unexpected)
                conn_lost(c); /* after the unlink: p is answered below, not as lost */
        if (p->fds) {
                memcpy(p->fds, fds, nfds * sizeof(int));
                p->nfds = nfds;
                p->fds_cut = fds_cut && !unexpected;
        }
        if (unexpected) {
                p->status = -EBADMSG;
        } else if (h.type == SN_MSG_ERROR) {
                p->status = h.status ? -(int)h.status : -EPROTO;
        } else if (h.type != p->expect) {
                p->status = -EPROTO;
        } else {
                p->status = -(int)h.status;
                if (p->on_reply)
                        p->on_reply(p, buf, &h, d);
                /* The reply did not fit its request (see process_reply): the connection
                 * cannot be trusted any more. */
                if (p->status == -EBADMSG)
                        conn_lost(c);
        }
        p->done = true;
        if (p->abandoned) {
                pthread_cond_destroy(&p->cond);
                free(p);
                return NULL;
        }
        if (p->async) {
                /* Answered before its sender was done sending: completed by it (async.c). */
                if (!p->sending)
                        c->hooks.call_done(c, p); /* p may be gone now */
                return NULL;
        }
        pthread_cond_signal(&p->cond);
        /* Whoever read it, its thread has it only once it leaves sn__wait() (cq_delivered). */
        return p;
}

static void conn_lost(sn_conn_t *c)
{
        /* A thread blocked reading (waiting for a reply that may never come) sees the end of
         * the socket and returns; the daemon sees it too and lets the session go.  Not in a
         * child after fork(): the socket is its parent's too, and stays the parent's. */
        if (!c->broken && c->fd >= 0 && c->fork_gen == fork_generation)
                shutdown(c->fd, SHUT_RDWR);
        c->broken = true;
        if (!c->lost_err)
                c->lost_err = -ECONNRESET;
        if (c->hooks.calls_fail)
                c->hooks.calls_fail(c, c->lost_err);
        for (struct sn_pending *q = c->pending; q; q = q->next)
                pthread_cond_signal(&q->cond);
        pthread_cond_broadcast(&c->resumed);
}

void sn__conn_violation(sn_conn_t *c)
{
        pthread_mutex_lock(&c->lock);
        conn_lost(c);
        pthread_mutex_unlock(&c->lock);
}

/* With c->lock held: whether a submitted call (async.c) waits for its reply, which nobody may
 * be reading for: the application polls for it. */
static bool calls_waiting(sn_conn_t *c)
{
        for (struct sn_pending *q = c->pending; q; q = q->next)
                if (q->async)
                        return true;
        return false;
}

static void pump_locked(sn_conn_t *c);

/* With c->lock held, as a reader stops: when a submitted call's reply is still to come, the
 * daemon must ring the doorbell that the application's pollfd watches, and records already
 * there are read now (their calls complete, which makes pollfd readable).  Only while nobody
 * reads: a reader does the same when it stops.  Not before the application asked for pollfd
 * (sn_conn_fd, which arms it then): until then nobody polls, the next call that reads takes
 * the replies, and a re-enable submitted without waiting costs no doorbell. */
static void conn_idle(sn_conn_t *c)
{
        if (c->reader_active || c->fd < 0 || c->pollfd < 0 || !calls_waiting(c))
                return;
        if (sn__transport_idle(&c->ring, true))
                pump_locked(c);
        else if (c->held)
                cq_give_back(c); /* the daemon may wait for room already: it rang nobody */
}

void sn__conn_arm(sn_conn_t *c)
{
        pthread_mutex_lock(&c->lock);
        conn_idle(c);
        pthread_mutex_unlock(&c->lock);
}

struct wait_state {
        sn_conn_t *c;
        struct sn_pending *p;
        bool locked;  /* this thread holds c->lock */
        bool reading; /* this thread has the reader role */
};

/* Cleanup handler of a call cancelled in sn__wait (see the top of the file). */
static void wait_cancelled(void *arg)
{
        struct wait_state *w = arg;
        sn_conn_t *c = w->c;
        struct sn_pending *p = w->p;

        if (!w->locked)
                pthread_mutex_lock(&c->lock);
        if (w->reading)
                c->reader_active = false;
        p->waiting = false;
        cq_unhold(c, p);
        if (p->done) {
                /* The reply came just before: what it dequeued must not die with the caller. */
                sn_entry_t *e;
                uint32_t n = p->salvage && p->status == 0 ? p->salvage(p, &e) : 0;
                struct sn_orphans *o;

                p->gone = true;
                o = n ? orphans_new(c, p, n) : NULL;
                if (o)
                        memcpy(o->e, e, (size_t)n * sizeof(*e));
        } else {
                leave_behind(c, p, true);
        }
        hand_off(c);
        pthread_mutex_unlock(&c->lock);
        pthread_cond_destroy(&p->cond);
}

static void leave_behind(sn_conn_t *c, struct sn_pending *p, bool gone)
{
        struct sn_pending *a = malloc(sizeof(*a));

        sn__pending_unlink(c, p);
        if (!a)
                return;
        *a = (struct sn_pending){
                .id = p->id,
                .expect = p->expect,
                .on_reply = p->salvage ? orphan_reply : NULL,
                .ctx = c,
                .port = p->port,
                .thread = p->thread,
                .abandoned = true,
                .gone = gone,
        };
        pthread_cond_init(&a->cond, NULL);
        a->next = c->pending;
        c->pending = a;
}

int sn__wait(sn_conn_t *c, struct sn_pending *p)
{
        struct wait_state w = { .c = c, .p = p };
        int cancel_state, block_state;

        /* Cancellation acts only at the two places below where this thread blocks, and only
         * in a dequeue (which may wait long): other requests are short and run to the end. */
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        block_state = p->salvage ? cancel_state : PTHREAD_CANCEL_DISABLE;
        pthread_mutex_lock(&c->lock);
        w.locked = true;
        pthread_cleanup_push(wait_cancelled, &w);
        while (!p->done) {
                if (c->broken) {
                        sn__pending_unlink(c, p);
                        p->status = c->lost_err;
                        p->done = true;
                        break;
                }
                if (p->relay && orphans_for(c, p->port)) {
                        leave_behind(c, p, false);
                        p->status = -EINPROGRESS;
                        break;
                }
                if (c->reader_active) {
                        p->waiting = true;
                        pthread_setcancelstate(block_state, NULL);
                        pthread_cond_wait(&p->cond, &c->lock);
                        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
                        p->waiting = false;
                        continue;
                }
                /* While replies are held, the reader looks now and then whether the daemon
                 * waits for room (cq_give_back()). */
                int wait_ms = c->held ? CQ_HOLD_POLL_MS : -1;

                c->reader_active = true;
                w.reading = true;
                w.locked = false;
                pthread_mutex_unlock(&c->lock);

                int fds[SN_PROTO_MAX_FDS];
                unsigned nfds = 0;
                bool cut = false;
                /* The rings change only with the reader role, which this thread holds. */
                bool rings = sn__ring_active(&c->ring);
                uint32_t start = sn__transport_cq_taken(&c->ring);
                ssize_t n = 0;

                /* Wait in poll(), which consumes nothing, so that a cancellation never drops
                 * a reply already received; then read it with cancellation held off.  With
                 * the rings always: a doorbell may ring for nothing, so the receive does not
                 * block, and an empty ring means waiting again here. */
                if (block_state == PTHREAD_CANCEL_ENABLE || rings) {
                        int wr;

                        pthread_setcancelstate(block_state, NULL);
                        while ((wr = sn__transport_wait(c->fd, &c->ring, wait_ms)) == -EINTR)
                                ;
                        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
                        if (wr < 0)
                                n = wr; /* the transport is gone (a doorbell closed) */
                }
                if (n == 0)
                        n = sn__transport_recv(c->fd, &c->ring, c->rbuf, c->limits.max_message,
                                               fds, &nfds, &cut, rings ? MSG_DONTWAIT : 0);
                if (n > 0 && c->trace)
                        trace(c, "<-", c->rbuf, (size_t)n);
                uint32_t end = sn__transport_cq_taken(&c->ring);

                pthread_mutex_lock(&c->lock);
                w.locked = true;
                w.reading = false;
                c->reader_active = false;
                if (n <= 0) {
                        sn__fds_close(fds, nfds);
                        cq_delivered(c, start, end, NULL);
                }
                if (n == -EMSGSIZE || n == -EAGAIN || n == -EWOULDBLOCK)
                        continue;
                if (n == -EPROTO) {
                        conn_lost(c); /* the daemon broke the rings */
                        continue;
                }
                if (n <= 0) {
                        conn_ended(c);
                        continue;
                }
                cq_delivered(c, start, end, deliver(c, c->rbuf, (size_t)n, fds, nfds, cut));
        }
        pthread_cleanup_pop(0);
        cq_unhold(c, p);
        conn_idle(c);
        hand_off(c);
        pthread_mutex_unlock(&c->lock);
        pthread_cond_destroy(&p->cond);
        pthread_setcancelstate(cancel_state, NULL);
        return p->status;
}

/* With c->lock held (let go in between): reads, without blocking, every reply already received,
 * when no other thread is reading; with the rings, a submitted call still waiting leaves the
 * daemon asked to ring the doorbell the application polls. */
static void pump_locked(sn_conn_t *c)
{
        while (!c->broken && !c->reader_active) {
                int fds[SN_PROTO_MAX_FDS];
                unsigned nfds = 0;
                bool cut;
                ssize_t n;

                uint32_t start = sn__transport_cq_taken(&c->ring), end;

                c->reader_active = true;
                pthread_mutex_unlock(&c->lock);
                n = sn__transport_recv(c->fd, &c->ring, c->rbuf, c->limits.max_message, fds,
                                       &nfds, &cut, MSG_DONTWAIT);
                if (n > 0 && c->trace)
                        trace(c, "<-", c->rbuf, (size_t)n);
                end = sn__transport_cq_taken(&c->ring);
                pthread_mutex_lock(&c->lock);
                c->reader_active = false;
                if (n <= 0) {
                        sn__fds_close(fds, nfds);
                        cq_delivered(c, start, end, NULL);
                }
                if (n == -EAGAIN || n == -EWOULDBLOCK) {
                        /* Nothing more: the next reply must ring the doorbell the application
                         * polls (records that came meanwhile are read now). */
                        if (sn__transport_idle(&c->ring, calls_waiting(c)))
                                continue;
                        break;
                }
                if (n == -EMSGSIZE)
                        continue;
                if (n == -EPROTO) {
                        conn_lost(c);
                        continue;
                }
                if (n <= 0) {
                        conn_ended(c);
                        continue;
                }
                cq_delivered(c, start, end, deliver(c, c->rbuf, (size_t)n, fds, nfds, cut));
        }
}

int sn__conn_pump(sn_conn_t *c)
{
        int r;

        pthread_mutex_lock(&c->lock);
        pump_locked(c);
        if (c->broken && c->hooks.calls_fail)
                c->hooks.calls_fail(c, c->lost_err);
        hand_off(c);
        r = c->broken ? c->lost_err : 0;
        pthread_mutex_unlock(&c->lock);
        return r;
}

int sn__call_on(sn_conn_t *c, const uint32_t *port, const uint8_t *buf, size_t len,
                uint16_t expect, sn_reply_fn fn, void *ctx)
{
        struct sn_pending p;
        uint32_t done = 0;
        uint64_t gen;
        int r, eio = 0;
        bool again = false;

        for (;;) {
                pthread_mutex_lock(&c->send_lock);
                sn__pending_add(c, &p, expect, fn, ctx);
                gen = c->gen;
                /* The id is only known now: patch it into the header; the port's number is
                 * the one of the daemon it goes to. */
                sn_put_u32((uint8_t *)buf + 8, p.id);
                if (port)
                        sn_put_u32((uint8_t *)buf + SN_HEADER_SIZE, *port);
                r = sn__send(c, buf, len, NULL, 0);
                if (r == 0) {
                        /* Where its record ends (resuming needs it), while the rings cannot
                         * change (send_lock). */
                        pthread_mutex_lock(&c->lock);
                        if (!p.done && sn__ring_active(&c->ring)) {
                                p.in_ring = true;
                                p.sq_end = c->ring.sq.tail;
                        }
                        pthread_mutex_unlock(&c->lock);
                }
                pthread_mutex_unlock(&c->send_lock);
                if (r == 0) {
                        r = sn__wait(c, &p);
                        if (r == SN__SEND_AGAIN) {
                                /* Not taken, so not done: to the new daemon, once.  The resume
                                 * runs in a thread of its own, which may not have taken
                                 * send_lock yet: wait for it, or the copy would go into the
                                 * lost daemon's ring too. */
                                if (again)
                                        return -EIO;
                                again = true;
                                r = sn__conn_recover(c, gen, -ECONNRESET);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        /* The daemon died handling it (retry.c): again where that is safe. */
                        if (r == -EIO && eio < SN__RETRIES &&
                            sn__retry_safe(sn_get_u16(buf + 4), &done)) {
                                eio++;
                                continue;
                        }
                        r = eio && done && r == -(int)done ? 0 : r;
                        if (r == -EDQUOT)
                                sn__refusal_note(c, p.id, NULL, NULL, 0);
                        return r;
                }
                sn__pending_remove(c, &p);
                /* Not sent, so not done: the same request goes to the new daemon, once. */
                r = sn__conn_recover(c, gen, r);
                if (r < 0 || again)
                        return r == -EPIPE || r == 0 ? -ECONNRESET : r;
                again = true;
        }
}

int sn__call(sn_conn_t *c, const uint8_t *buf, size_t len, uint16_t expect, sn_reply_fn fn,
             void *ctx)
{
        return sn__call_on(c, NULL, buf, len, expect, fn, ctx);
}

/* ---- threads: the concurrency rule needs to know when a thread is gone ------------------- */

struct thread_info {
        uint32_t tid;
        unsigned n;
        sn_conn_t *conns[8];
};

static pthread_key_t thread_key;
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;

/* At thread exit: tell every live connection it waited on that it no longer runs. */
static void thread_exit(void *arg)
{
        struct thread_info *ti = arg;

        pthread_mutex_lock(&live_lock);
        for (unsigned i = 0; i < ti->n; i++)
                for (sn_conn_t *c = live; c; c = c->next_live)
                        if (c == ti->conns[i] && sn__conn_usable(c) == 0)
                                send_thread_exit(c, ti->tid);
        pthread_mutex_unlock(&live_lock);
        free(ti);
}

static void thread_key_init(void)
{
        pthread_key_create(&thread_key, thread_exit);
}

uint32_t sn__thread_id(sn_conn_t *c)
{
        struct thread_info *ti;

        pthread_once(&thread_once, thread_key_init);
        ti = pthread_getspecific(thread_key);
        if (!ti) {
                ti = calloc(1, sizeof(*ti));
                if (!ti)
                        return (uint32_t)gettid();
                ti->tid = (uint32_t)gettid();
                pthread_setspecific(thread_key, ti);
        }
        for (unsigned i = 0; i < ti->n; i++)
                if (ti->conns[i] == c)
                        return ti->tid;
        if (ti->n < SN_ARRAY_SIZE(ti->conns))
                ti->conns[ti->n++] = c;
        return ti->tid;
}

/* Each thread's message buffer is freed with the thread (pthread key destructor). */
struct msgbuf {
        size_t cap;
        uint8_t data[];
};

static pthread_key_t msgbuf_key;
static pthread_once_t msgbuf_once = PTHREAD_ONCE_INIT;

static void msgbuf_key_init(void)
{
        pthread_key_create(&msgbuf_key, free);
}

uint8_t *sn__msgbuf(size_t size)
{
        struct msgbuf *b;

        pthread_once(&msgbuf_once, msgbuf_key_init);
        b = pthread_getspecific(msgbuf_key);
        if (!b || b->cap < size) {
                size_t cap = b ? b->cap : 4096;

                while (cap < size)
                        cap *= 2;
                free(b);
                b = malloc(sizeof(*b) + cap);
                if (!b || pthread_setspecific(msgbuf_key, b) != 0) {
                        free(b);
                        pthread_setspecific(msgbuf_key, NULL);
                        return NULL;
                }
                b->cap = cap;
        }
        return b->data;
}

static int peer_uid(int fd, uid_t *ret_uid);

/* Waits until fd is readable (or hung up) or deadline (CLOCK_MONOTONIC, ms; -1: none) passes.
 * Returns 0, -ETIMEDOUT, or -ECANCELED once sn_conn_close() asks a resume to give up (looked
 * at every 100 ms). */
static int wait_readable(sn_conn_t *c, int fd, int64_t deadline)
{
        for (;;) {
                int64_t left = deadline < 0 ? 100 : deadline - mono_ms();
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n;

                if (__atomic_load_n(&c->closing, __ATOMIC_RELAXED))
                        return -ECANCELED;
                if (left <= 0)
                        return -ETIMEDOUT;
                n = poll(&p, 1, (int)SN_MIN(left, (int64_t)100));
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

/* deadline: when to stop waiting for the answer (CLOCK_MONOTONIC, ms; -1: never).  A resume
 * passes its own: a listener that accepts and never answers (a socket unit whose service is
 * down, another program) must not hold it past SOCKNOTIFY_RECONNECT_MS (-ETIMEDOUT). */
static int handshake_once(sn_conn_t *c, bool rings, int64_t deadline)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_hello_reply + 64];
        struct snw_hello hello = { .magic = SN_PROTO_MAGIC,
                                  .version_min = SN_PROTO_VERSION_MIN,
                                  .version_max = SN_PROTO_VERSION,
                                  .flags = (rings ? SN_PROTO_HELLO_RING : 0) |
                                           (c->self_scheduled ? SN_PROTO_HELLO_SELF : 0) };
        const struct sn_msg_desc *d;
        struct snw_hello_reply rep;
        struct snw_header h;
        int fds[SN_PROTO_RING_NFDS];
        unsigned nfds = 0;
        ssize_t n;
        int r;

        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 0, 0, 0, 0, 0), &hello);
        r = sn__send(c, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
        if (r < 0 && r != -EPIPE && r != -ECONNRESET)
                return r;
        /* The answer is waited for in poll(), which a deadline bounds, and then read without
         * blocking: recvmsg() itself has no deadline. */
        if (r == 0) {
                int wr = wait_readable(c, c->fd, deadline);

                if (wr < 0)
                        return wr;
        }
        /* A daemon that refuses the connection (a limit) sends ERROR and closes, maybe before
         * our HELLO arrived: its reason is still there to read. */
        n = sn__fdmsg_recv(c->fd, buf, sizeof(buf), fds, SN_PROTO_RING_NFDS, &nfds,
                           MSG_DONTWAIT);
        if (n == -ECONNRESET) {
                /* Reported before a reason queued behind it: read that too. */
                sn__fds_close(fds, nfds);
                n = sn__fdmsg_recv(c->fd, buf, sizeof(buf), fds, SN_PROTO_RING_NFDS, &nfds,
                                   MSG_DONTWAIT);
                if (n < 0)
                        n = -ECONNRESET;
        }
        if (r < 0 && n < 0) {
                sn__fds_close(fds, nfds);
                return r;
        }
        if (n > 0 && c->trace)
                trace(c, "<-", buf, (size_t)n);
        r = n == 0 ? -ECONNRESET
            /* Too large, or with more descriptors than the rings': not a daemon. */
            : n < 0 ? (n == -EMSGSIZE || n == -ETOOMANYREFS ? -EPROTO : (int)n)
            : sn_msg_check(buf, (size_t)n, &h, &d) < 0 ? -EPROTO
            : h.type == SN_MSG_ERROR ? (h.status ? -(int)h.status : -EPROTO)
            : h.type != SN_MSG_HELLO_REPLY || h.status ? -EPROTO
            : 0;
        if (r < 0) {
                sn__fds_close(fds, nfds);
                return r;
        }
        snw_hello_reply_decode(sn_msg_body(buf), &rep);
        if (rep.version < SN_PROTO_VERSION_MIN || rep.version > SN_PROTO_VERSION ||
            rep.max_message < 4096 || rep.max_fds == 0) {
                sn__fds_close(fds, nfds);
                return -EPROTO;
        }
        /* The rings only when asked for, in version 3, with exactly their descriptors (the
         * header's count and what came must agree); the socket with none.  What the daemon
         * passed is checked before anything else of it is used (transport.c). */
        if (rep.transport == SN_PROTO_TRANSPORT_RING && rings && rep.version >= 3 &&
            h.nfds == SN_PROTO_RING_NFDS && nfds == SN_PROTO_RING_NFDS) {
                r = sn__ring_attach(&c->ring, fds, nfds);
                if (r < 0)
                        return r == -EPROTO ? r : -EPROTO;
        } else {
                sn__fds_close(fds, nfds);
                if (rep.transport != SN_PROTO_TRANSPORT_SOCKET || nfds || h.nfds)
                        return -EPROTO;
        }
        c->version = rep.version;
        c->limits = (sn_limits_t){
                .max_message = rep.max_message,
                .max_fds = SN_MIN(rep.max_fds, (uint32_t)SN_PROTO_MAX_FDS),
                .max_ports = rep.max_ports,
                .max_registrations = rep.max_registrations,
                .max_posted = rep.max_posted,
                .max_waits = rep.max_waits,
                .max_sockets = rep.max_sockets,
        };
        return 0;
}

/*
 * HELLO, asking for the rings unless SOCKNOTIFY_NO_SHM.  A daemon older than protocol version 3
 * refuses HELLO's flags (EINVAL) and closes the connection: the library then asks once more,
 * on a new connection to the same address and the same daemon, without them.  Under
 * SOCKNOTIFY_SELF_SCHEDULED a refusal is -EOPNOTSUPP: a daemon that does not know SELF would
 * read the threads it cannot read rightly, and asking without it would hide that.  deadline:
 * as handshake_once()'s, for both.
 */
static int handshake(sn_conn_t *c, int64_t deadline)
{
        uid_t uid = (uid_t)-1;
        int r = handshake_once(c, !c->no_shm, deadline), fd;

        if (r == -EINVAL && c->self_scheduled)
                return -EOPNOTSUPP;
        if (r != -EINVAL || c->no_shm)
                return r;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return r;
        if (connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr)) < 0 ||
            peer_uid(fd, &uid) < 0 || (uid != c->daemon_uid && uid != 0)) {
                sn_close(fd);
                return r;
        }
        pthread_mutex_lock(&c->lock);
        sn_close(c->fd);
        c->fd = fd;
        pthread_mutex_unlock(&c->lock);
        return handshake_once(c, false, deadline);
}

/* Why the calling thread's last sn_conn_open() failed ("" after a success). */
static __thread char open_error[640];

static const char *source_name(enum sn_path_source s)
{
        switch (s) {
        case SN_PATH_EXPLICIT:
                return "the given path";
        case SN_PATH_ENV:
                return "$SOCKNOTIFY_SOCKET";
        case SN_PATH_USER:
                return "the per-user socket";
        case SN_PATH_SYSTEM:
                break;
        }
        return "the system socket";
}

/* Appends to open_error; the text is cut when it does not fit. */
static void open_error_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void open_error_add(const char *fmt, ...)
{
        size_t len = strlen(open_error);
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(open_error + len, sizeof(open_error) - len, fmt, ap);
        va_end(ap);
}

/* A connect() error that means "no daemon listens there": the next candidate may have one. */
static bool no_daemon(int err)
{
        return err == -ENOENT || err == -ECONNREFUSED || err == -ENOTDIR;
}

/* Connects c->fd to the first candidate with a listening daemon, recording every failure in
 * open_error; *ret_index receives the candidate connected to.  Returns 0, or the negative errno
 * of the last path tried. */
static int connect_candidates(sn_conn_t *c, const struct sn_socket_candidate *cand, int n,
                              int *ret_index)
{
        int r = -ENOENT;

        for (int i = 0; i < n; i++) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };

                memcpy(sa.sun_path, cand[i].path, sizeof(sa.sun_path));
                c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (c->fd < 0)
                        return -errno;
                if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
                        c->addr = sa;
                        *ret_index = i;
                        return 0;
                }
                r = -errno;
                c->fd = transport_close(c);
                open_error_add("%s%s %s (%s)", i ? "; " : "", source_name(cand[i].source),
                               cand[i].path, strerrordesc_np(-r));
                if (!no_daemon(r))
                        break;
        }
        return r;
}

/* ---- resuming on a new daemon (see the top of the file) ------------------------------------ */

/* SOCKNOTIFY_RECONNECT_MS: a decimal count of milliseconds; unset, empty or not a number is
 * the default. */
static uint32_t reconnect_ms_from_env(void)
{
        const char *s = getenv("SOCKNOTIFY_RECONNECT_MS");
        unsigned long long v;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return SN_RECONNECT_MS_DEFAULT;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (*end)
                return SN_RECONNECT_MS_DEFAULT;
        return errno || v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static int peer_uid(int fd, uid_t *ret_uid)
{
        struct ucred cr;
        socklen_t len = sizeof(cr);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
                return -errno;
        *ret_uid = cr.uid;
        return 0;
}

/* One attempt at the path the connection was opened on.  Returns 0 with c->fd connected and
 * the handshake done; 1 when no daemon answers there (yet), or its answer did not come before
 * deadline (the resume's, CLOCK_MONOTONIC ms); -EACCES when the one that answers runs as
 * another user than the daemon that was lost, and not as root: nothing was sent to it.  Called
 * with send_lock and the reader role held. */
static int reconnect_once(sn_conn_t *c, int64_t deadline)
{
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        uid_t uid = 0;
        int r;

        if (fd < 0)
                return errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                                       errno == ENOMEM
                               ? 1
                               : -errno;
        if (connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr)) < 0) {
                r = -errno;
                sn_close(fd);
                /* EAGAIN: the new daemon's backlog is full. */
                return no_daemon(r) || r == -EAGAIN ? 1 : r;
        }
        r = peer_uid(fd, &uid);
        if (r == 0 && uid != c->daemon_uid && uid != 0)
                r = -EACCES;
        if (r < 0) {
                sn_close(fd);
                return r;
        }
        pthread_mutex_lock(&c->lock);
        c->fd = fd;
        pthread_mutex_unlock(&c->lock);
        r = handshake(c, deadline);
        if (r < 0) {
                pthread_mutex_lock(&c->lock);
                c->fd = transport_close(c);
                pthread_mutex_unlock(&c->lock);
                /* A daemon that ends, or refuses us (a limit), during start-up: maybe the
                 * next one will not.  Who it is was checked above. */
                return 1;
        }
        return 0;
}

/* With c->lock held, when the daemon ended: no reply will come for any pending request. */
static void pending_fail_all(sn_conn_t *c)
{
        /* Read once, before the rings go: what the daemon never took from them never reached
         * it (a lie only harms this process's own requests). */
        uint32_t taken = sn__transport_sq_taken(&c->ring);

        struct sn_pending **pp = &c->pending;

        if (c->hooks.calls_fail)
                c->hooks.calls_fail(c, -EIO); /* takes the submitted calls off the list */
        while (*pp) {
                struct sn_pending *p = *pp;

                if (p->async) {
                        pp = &p->next; /* calls_fail() left only calls being sent: their senders' */
                        continue;
                }
                *pp = p->next;
                p->status = p->relay ? SN__ASK_AGAIN
                            : p->in_ring && (int32_t)(p->sq_end - taken) > 0 ? SN__SEND_AGAIN
                            : -EIO;
                p->done = true;
                if (p->abandoned) {
                        pthread_cond_destroy(&p->cond);
                        free(p);
                        continue;
                }
                pthread_cond_signal(&p->cond);
        }
}

/* The receive buffer for the new daemon's message size (it may have another configuration);
 * with c->lock held.  Without memory the old size stays: larger messages are then refused as
 * too large, which is safe. */
static void rbuf_fit(sn_conn_t *c, uint32_t old_max)
{
        uint8_t *n;

        if (c->limits.max_message <= old_max)
                return;
        n = realloc(c->rbuf, c->limits.max_message);
        if (n)
                c->rbuf = n;
        else
                c->limits.max_message = old_max;
}

/* With c->lock and the reader role held (both still held on return; c->lock is let go in
 * between): waits for a new daemon and replays to it, or loses the connection. */
static void conn_resume(sn_conn_t *c)
{
        int64_t deadline = mono_ms() + c->reconnect_ms;
        uint32_t delay = 2;
        int cancel_state, r;

        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        pending_fail_all(c);
        c->resuming = true;
        pthread_mutex_unlock(&c->lock);
        pthread_mutex_lock(&c->send_lock);
        pthread_mutex_lock(&c->lock);
        /* A thread that took send_lock before this one could send a request after the look
         * above: the rings take it without a word from a daemon that is gone, and no reply
         * will come.  Now that nobody else can send, such requests fail the same way. */
        pending_fail_all(c);
        c->fd = transport_close(c);
        pthread_mutex_unlock(&c->lock);
        for (;;) {
                uint32_t old_max = c->limits.max_message;
                int64_t now;

                if (__atomic_load_n(&c->closing, __ATOMIC_RELAXED)) {
                        r = -ECONNRESET; /* sn_conn_close() waits for this resume */
                        break;
                }
                r = reconnect_once(c, deadline);
                if (r == 0) {
                        pthread_mutex_lock(&c->lock);
                        rbuf_fit(c, old_max);
                        if (c->hooks.fd_changed)
                                c->hooks.fd_changed(c);
                        r = c->hooks.replay ? c->hooks.replay(c) : 0;
                        if (r < 0)
                                c->fd = transport_close(c);
                        pthread_mutex_unlock(&c->lock);
                        if (r == 0)
                                break;
                        r = 1; /* that daemon failed us: wait for another */
                }
                if (r < 0)
                        break;
                now = mono_ms();
                if (now >= deadline) {
                        r = -ECONNRESET;
                        break;
                }
                /* A short backoff, never past the deadline: a daemon started by hand or by a
                 * supervisor takes some milliseconds to listen. */
                delay = (uint32_t)SN_MIN((int64_t)delay, deadline - now);
                nanosleep(&(struct timespec){ .tv_sec = delay / 1000,
                                              .tv_nsec = (long)(delay % 1000) * 1000000 },
                          NULL);
                delay = SN_MIN(delay * 2, 100u);
        }
        pthread_mutex_lock(&c->lock);
        c->resuming = false;
        __atomic_store_n(&c->gen, c->gen + 1, __ATOMIC_RELAXED); /* read unlocked: port.c */
        if (r < 0) {
                c->fd = transport_close(c);
                c->lost_err = r;
                conn_lost(c);
        }
        pthread_cond_broadcast(&c->resumed);
        pthread_mutex_unlock(&c->send_lock);
        pthread_setcancelstate(cancel_state, NULL);
}

/* The thread of a resume started by resume_behind(): it has the reader role already. */
static void *resume_thread(void *arg)
{
        sn_conn_t *c = arg;

        pthread_mutex_lock(&c->lock);
        conn_resume(c);
        c->reader_active = false;
        c->behind = false;
        hand_off(c);
        conn_idle(c);
        pthread_cond_broadcast(&c->resumed); /* sn_conn_close() may wait for behind */
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

/*
 * With c->lock held and the reader role taken for the resume: starts it in a thread of its own,
 * so that the thread that noticed the end (often a dequeue with a short timeout) does not make
 * it: a wait with a finite timeout returns by its timeout while the daemon is away, and the
 * resume goes on behind it (docs/reconnect.md).  The thread blocks every signal (they are the
 * application's threads' to take) and is detached; sn_conn_close() makes it give up and waits
 * for it.  Returns false when no thread could be started: the caller resumes itself, as
 * before.
 */
static bool resume_behind(sn_conn_t *c)
{
        pthread_attr_t attr;
        sigset_t all, old;
        pthread_t t;
        int r;

        if (pthread_attr_init(&attr) != 0)
                return false;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        /* Set before the thread runs: every caller from now on sees a resume under way. */
        c->resuming = c->behind = true;
        r = pthread_create(&t, &attr, resume_thread, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (r != 0)
                c->resuming = c->behind = false;
        return r == 0;
}

static void conn_ended(sn_conn_t *c)
{
        if (!c->reconnect_ms || c->broken || c->fork_gen != fork_generation || c->closing) {
                conn_lost(c);
                return;
        }
        c->reader_active = true;
        if (resume_behind(c))
                return; /* the reader role is the resume's thread's now */
        conn_resume(c);
        c->reader_active = false;
}

int sn__send_lock_until(sn_conn_t *c, int64_t deadline)
{
        if (deadline < 0) {
                pthread_mutex_lock(&c->send_lock);
                return 0;
        }
        if (pthread_mutex_trylock(&c->send_lock) == 0)
                return 0;
        for (;;) {
                bool away;
                struct timespec at;

                pthread_mutex_lock(&c->lock);
                away = c->resuming;
                pthread_mutex_unlock(&c->lock);
                if (away && mono_ms() >= deadline)
                        return -ETIMEDOUT;
                /* While a resume holds it, until the deadline; while only other senders do, a
                 * moment at a time, to see a resume that starts meanwhile. */
                at = realtime_at(away ? deadline : mono_ms() + 10);
                if (pthread_mutex_timedlock(&c->send_lock, &at) == 0)
                        return 0;
        }
}

/* sn__conn_recover(), waiting for a resume at most until deadline (-1: no bound). */
static int recover(sn_conn_t *c, uint64_t gen, int err, int64_t deadline)
{
        int cancel_state, r;

        if (err == -EPROTO) {
                /* The daemon broke the rings: as a reply that cannot be trusted. */
                sn__conn_violation(c);
                return c->lost_err;
        }
        if (err != -EPIPE && err != -ECONNRESET && err != -ENOTCONN)
                return err;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        pthread_mutex_lock(&c->lock);
        for (;;) {
                if (c->broken) {
                        r = c->lost_err;
                        break;
                }
                if (c->gen != gen && !c->resuming) {
                        r = 0;
                        break;
                }
                if (!c->resuming && !c->reader_active) {
                        /* Nobody reads, so nobody else will notice: resume here. */
                        conn_ended(c);
                        hand_off(c);
                        continue;
                }
                /* The reader sees the end of file too (or already resumes). */
                if (deadline < 0) {
                        pthread_cond_wait(&c->resumed, &c->lock);
                } else if (mono_ms() >= deadline) {
                        r = -ETIMEDOUT; /* the resume goes on behind the caller */
                        break;
                } else {
                        struct timespec at = realtime_at(deadline);

                        pthread_cond_timedwait(&c->resumed, &c->lock, &at);
                }
        }
        pthread_mutex_unlock(&c->lock);
        pthread_setcancelstate(cancel_state, NULL);
        return r;
}

int sn__conn_recover(sn_conn_t *c, uint64_t gen, int err)
{
        return recover(c, gen, err, -1);
}

int sn__conn_recover_until(sn_conn_t *c, uint64_t gen, int err, int64_t deadline)
{
        return recover(c, gen, err, deadline);
}

int sn__conn_exchange(sn_conn_t *c, uint8_t *buf, size_t len, const int *fds, unsigned nfds,
                      uint16_t expect, struct snw_header *ret_h, const struct sn_msg_desc **ret_d,
                      const uint8_t **ret_buf, int *ret_status)
{
        int timeout = (int)SN_MIN(SN_MAX(c->reconnect_ms, 1000u), (uint32_t)INT32_MAX);
        uint32_t id;
        int r;

        if (++c->next_id == 0)
                ++c->next_id;
        id = c->next_id;
        sn_put_u32(buf + 8, id);
        r = sn__send(c, buf, len, fds, nfds);
        if (r < 0)
                return r == -EPIPE ? -ECONNRESET : r;
        for (;;) {
                int rfds[SN_PROTO_MAX_FDS];
                unsigned rnfds = 0;
                bool cut = false;
                ssize_t n;

                n = sn__transport_recv(c->fd, &c->ring, c->rbuf, c->limits.max_message, rfds,
                                       &rnfds, &cut, MSG_DONTWAIT);
                /* Read here by the thread that waits for it (under c->lock): given back. */
                cq_delivered(c, 0, sn__transport_cq_taken(&c->ring), NULL);
                if (n == -EAGAIN || n == -EWOULDBLOCK) {
                        /* A daemon that stops answering must not hold the resume for ever. */
                        r = sn__transport_wait(c->fd, &c->ring, timeout);
                        if (r == 0)
                                return -ETIMEDOUT;
                        if (r < 0 && r != -EINTR)
                                return r;
                        continue;
                }
                if (n > 0 && c->trace)
                        trace(c, "<-", c->rbuf, (size_t)n);
                if (n <= 0 || rnfds || cut) {
                        sn__fds_close(rfds, rnfds);
                        return n == 0 ? -ECONNRESET : n < 0 && n != -EMSGSIZE ? (int)n : -EBADMSG;
                }
                if (sn_msg_check(c->rbuf, (size_t)n, ret_h, ret_d) < 0)
                        return -EBADMSG;
                if (ret_h->id != id)
                        continue; /* the acknowledgement of a THREAD_EXIT (id 0) */
                if (ret_h->type == SN_MSG_ERROR) {
                        *ret_status = ret_h->status ? -(int)ret_h->status : -EPROTO;
                        return 0;
                }
                if (ret_h->type != expect)
                        return -EPROTO;
                *ret_buf = c->rbuf;
                *ret_status = -(int)ret_h->status;
                return 0;
        }
}

void sn__conn_renumber(sn_conn_t *c, const uint32_t (*map)[2], uint32_t n)
{
        for (struct sn_orphans *o = c->orphans; o; o = o->next) {
                uint32_t to = 0; /* a port that was not made again: nobody asks for these */

                for (uint32_t i = 0; i < n; i++)
                        if (map[i][0] == o->port)
                                to = map[i][1];
                o->port = to;
        }
}

SN_EXPORT const char *sn_conn_open_error(void)
{
        return open_error;
}

/* A switch in the environment: set, not empty and not "0". */
static bool env_set(const char *name)
{
        const char *v = getenv(name);

        return v && *v && strcmp(v, "0") != 0;
}

SN_EXPORT int sn_conn_open(const char *path, sn_conn_t **ret_conn)
{
        struct sn_socket_candidate cand[SN_SOCKET_CANDIDATES_MAX];
        sn_conn_t *c;
        int n, r, which = 0;

        open_error[0] = 0;
        if (!ret_conn) {
                open_error_add("sn_conn_open: ret_conn is NULL");
                return -EINVAL;
        }
        pthread_once(&fork_once, install_fork_handler);
        n = sn__socket_candidates(path, cand);
        if (n < 0) {
                open_error_add("socket path too long for a Unix socket address (%s)",
                               path && *path ? "the given path" : "$SOCKNOTIFY_SOCKET");
                return n;
        }
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = -1;
        sn__ring_init(&c->ring);
        c->no_shm = env_set("SOCKNOTIFY_NO_SHM");
        c->self_scheduled = env_set("SOCKNOTIFY_SELF_SCHEDULED");
        c->fork_gen = fork_generation;
        c->efd = c->pollfd = -1;
        c->trace = env_set("SOCKNOTIFY_TRACE");
        c->reconnect_ms = reconnect_ms_from_env();
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->send_lock, NULL);
        pthread_cond_init(&c->resumed, NULL);
        open_error_add("cannot connect to socknotifyd: tried ");
        r = connect_candidates(c, cand, n, &which);
        if (r < 0) {
                /* A socket that refused us belongs to a daemon that runs: the advice is the
                 * group, not to start one. */
                if (r == -EACCES || r == -EPERM)
                        open_error_add(". The system socket admits root and the members of "
                                       "group socknotify");
                else
                        open_error_add(". Start socknotifyd (systemctl start "
                                       "socknotifyd.socket, or systemctl --user start "
                                       "socknotifyd.socket), or set SOCKNOTIFY_SOCKET to the "
                                       "socket path of a running daemon");
                sn_conn_close(c);
                return r;
        }
        open_error[0] = 0;
        r = peer_uid(c->fd, &c->daemon_uid);
        if (r == 0)
                r = handshake(c, -1);
        if (r == 0) {
                c->rbuf = malloc(c->limits.max_message);
                if (!c->rbuf)
                        r = -ENOMEM;
        }
        if (r < 0) {
                open_error_add("handshake with the daemon at %s failed: %s", cand[which].path,
                               sn_strerror(r));
                if (r == -EOPNOTSUPP && c->self_scheduled)
                        open_error_add(" (SOCKNOTIFY_SELF_SCHEDULED is set, and this daemon "
                                       "does not know self-scheduled connections)");
                sn_conn_close(c);
                return r;
        }
        pthread_mutex_lock(&live_lock);
        c->next_live = live;
        live = c;
        pthread_mutex_unlock(&live_lock);
        *ret_conn = c;
        return 0;
}

SN_EXPORT sn_conn_t *sn_conn_close(sn_conn_t *c)
{
        if (!c)
                return NULL;
        pthread_mutex_lock(&live_lock);
        for (sn_conn_t **pp = &live; *pp; pp = &(*pp)->next_live) {
                if (*pp == c) {
                        *pp = c->next_live;
                        break;
                }
        }
        pthread_mutex_unlock(&live_lock);
        /* A resume running behind the application's calls gives up, and is waited for (not in
         * a child after fork(): that thread is the parent's). */
        pthread_mutex_lock(&c->lock);
        if (c->fork_gen == fork_generation) {
                __atomic_store_n(&c->closing, true, __ATOMIC_RELAXED);
                while (c->behind)
                        pthread_cond_wait(&c->resumed, &c->lock);
        }
        pthread_mutex_unlock(&c->lock);
        if (c->hooks.calls_release)
                c->hooks.calls_release(c);
        transport_close(c);
        /* Requests left by cancelled callers, and entries nobody took. */
        while (c->pending) {
                struct sn_pending *p = c->pending;

                c->pending = p->next;
                if (p->abandoned) {
                        pthread_cond_destroy(&p->cond);
                        free(p);
                }
        }
        while (c->orphans) {
                struct sn_orphans *o = c->orphans;

                c->orphans = o->next;
                free(o);
        }
        pthread_mutex_destroy(&c->lock);
        pthread_mutex_destroy(&c->send_lock);
        pthread_cond_destroy(&c->resumed);
        free(c->rbuf);
        free(c->cache);
        free(c);
        return NULL;
}

SN_EXPORT int sn_conn_limits(sn_conn_t *c, sn_limits_t *ret_limits)
{
        int r = sn__conn_usable(c);

        if (r < 0)
                return r;
        if (!ret_limits)
                return -EINVAL;
        *ret_limits = c->limits;
        return 0;
}

static void status_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                         const struct sn_msg_desc *d)
{
        char **out = p->ctx;

        if (h->status)
                return;
        *out = malloc((size_t)h->count + 1);
        if (!*out) {
                p->status = -ENOMEM;
                return;
        }
        memcpy(*out, sn_msg_array(buf, d, 1), h->count);
        (*out)[h->count] = 0;
}

static void control_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                          const struct sn_msg_desc *d)
{
        char **out = p->ctx;

        *out = malloc((size_t)h->count + 1);
        if (!*out) {
                p->status = -ENOMEM;
                return;
        }
        memcpy(*out, sn_msg_array(buf, d, 1), h->count);
        (*out)[h->count] = 0;
}

SN_EXPORT int sn_conn_control(sn_conn_t *c, const char *request, char **ret_json)
{
        size_t len = request ? strlen(request) : 0;
        char *json = NULL;
        uint8_t *buf;
        int r = sn__conn_usable(c);

        if (r < 0)
                return r;
        if (!request || !ret_json)
                return -EINVAL;
        if (sn_msg_size(SN_MSG_CONTROL, (uint32_t)len, 0) > c->limits.max_message)
                return -E2BIG;
        buf = sn__msgbuf(sn_msg_size(SN_MSG_CONTROL, (uint32_t)len, 0));
        if (!buf)
                return -ENOMEM;
        memcpy(sn_msg_begin(buf, SN_MSG_CONTROL, 0, 0, 0, (uint32_t)len, 0), request, len);
        /* The answer's text comes with a failure too: it says why. */
        r = sn__call(c, buf, sn_msg_size(SN_MSG_CONTROL, (uint32_t)len, 0), SN_MSG_CONTROL_REPLY,
                     control_reply, &json);
        if (r < 0 && !json)
                return r;
        *ret_json = json;
        return r;
}

SN_EXPORT int sn_conn_status(sn_conn_t *c, char **ret_json)
{
        uint8_t buf[SN_HEADER_SIZE];
        char *json = NULL;
        int r = sn__conn_usable(c);

        if (r < 0)
                return r;
        if (!ret_json)
                return -EINVAL;
        sn_msg_begin(buf, SN_MSG_STATUS, 0, 0, 0, 0, 0);
        r = sn__call(c, buf, sizeof(buf), SN_MSG_STATUS_REPLY, status_reply, &json);
        if (r < 0) {
                free(json);
                return r;
        }
        *ret_json = json;
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * port.c - completion ports: create, close, process (register + dequeue), dequeue, post.
 *
 * A process call is encoded as one PROCESS message, or as several when its registrations or
 * descriptors exceed one message (max_message bytes, max_fds descriptors): all parts but the
 * last carry the PART flag, go out back to back under send_lock, and the daemon applies the
 * whole call when the last part arrives, so a call failure still changes nothing (row 7).
 *
 * A descriptor is passed only when the daemon may not know its socket yet: an ENABLE of a
 * descriptor this connection has not registered on this port.  DISABLE, REMOVE and re-ENABLE
 * name the socket by identity (st_dev, st_ino), which costs one fstat() here instead of a
 * descriptor transfer; if the daemon answers ESTALE for such an entry, it is sent again with its
 * descriptor.  Nothing of the port object is touched once a call is waiting, so a port closed
 * by another thread meanwhile is safe.
 *
 * Resuming (docs/reconnect.md).  Every port on conn->ports keeps what it was made with (name,
 * concurrency, linger time) and its registrations (regtab.c), updated under conn->lock as each
 * reply is decoded, so that what a daemon accepted is known before anybody can notice that the
 * daemon ended.  The replay hook makes them again on a new daemon; a pure dequeue whose daemon
 * ended (SN__ASK_AGAIN), or was stopped (ESHUTDOWN), asks the new one for what is left of its
 * timeout.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "client/client.h"
#include "common/fdmsg.h"
#include "common/hangup.h"
#include "common/macro.h"

/* The entries owed to this port's next dequeue after a resume (at most max). */
static uint32_t owed_take(sn_port_t *port, sn_entry_t *entries, uint32_t max)
{
        uint32_t n;

        pthread_mutex_lock(&port->conn->lock);
        n = SN_MIN(max, port->nowed);
        if (n) {
                memcpy(entries, port->owed, (size_t)n * sizeof(*entries));
                memmove(port->owed, port->owed + n, (size_t)(port->nowed - n) * sizeof(*entries));
                port->nowed -= n;
        }
        pthread_mutex_unlock(&port->conn->lock);
        return n;
}

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The milliseconds left until deadline (now_ns()), rounded up: a wait sent again for what is
 * left of its timeout ends at or after the caller's deadline, never before (row 20).  0 once
 * the deadline has passed. */
static uint32_t ms_left(int64_t deadline)
{
        int64_t left = deadline - now_ns();

        return left > 0 ? (uint32_t)((left + 999999) / 1000000) : 0;
}

struct prep {
        uint64_t dev, ino; /* 0, 0: a handle item whose socket this process does not know */
        uint64_t handle;   /* nonzero: the item names its registration by this (wire) handle */
        bool attach;
};

struct process_ctx {
        sn_port_t *port;
        sn_registration_t *regs;
        const struct prep *prep;
        const uint32_t *sent_idx;
        uint32_t nsent;
        sn_entry_t *entries;
        uint32_t max_entries;
        uint32_t nentries;
};

bool sn__process_reply_valid(const struct snw_header *h, uint32_t nsent, uint32_t max_entries)
{
        bool results_due = h->status == 0 || h->status == ETIMEDOUT;

        if (h->count != nsent && (results_due || h->count != 0))
                return false;
        return h->count2 <= max_entries;
}

const uint8_t *sn__entry_decode(const sn_conn_t *c, const uint8_t *p, sn_entry_t *out)
{
        struct snw_entry e;

        p = snw_entry_decode(p, &e);
        if (e.kind == SN_ENTRY_SOCKET)
                e.overlapped = c->version < 3 || !(e.overlapped & SN_PROTO_HANDLE_MASK)
                                       ? 0
                                       : (e.overlapped & SN_PROTO_HANDLE_MASK) |
                                                 (uint64_t)(uint8_t)c->gen << 56;
        *out = (sn_entry_t){
                .key = e.key, .overlapped = e.overlapped, .events = e.events, .kind = e.kind
        };
        return p;
}

void sn__entries_public(sn_entry_t *e, uint32_t n)
{
        for (uint32_t i = 0; i < n; i++)
                if (e[i].kind == SN_ENTRY_SOCKET)
                        e[i].overlapped = 0;
}

uint32_t sn__process_entries(sn_port_t *port, const struct snw_header *h, const uint8_t *ent,
                             sn_entry_t *entries, uint32_t max)
{
        uint32_t n = SN_MIN(h->count2, max);

        for (uint32_t i = 0; i < n; i++)
                ent = sn__entry_decode(port->conn, ent, &entries[i]);
        if (port->listed)
                sn__regtab_fired(&port->regs, entries, n);
        return n;
}

/* A reply that does not fit the call fails it with -EBADMSG (deliver() then drops the
 * connection): results missing would read as successes, entries beyond max_entries be lost. */
static void process_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                          const struct sn_msg_desc *d)
{
        struct process_ctx *ctx = p->ctx;
        const uint8_t *res = sn_msg_array(buf, d, 1);
        const uint8_t *ent = sn_msg_array(buf, d, 2);

        if (!sn__process_reply_valid(h, ctx->nsent, ctx->max_entries)) {
                p->status = -EBADMSG;
                return;
        }
        if (h->count == ctx->nsent) {
                for (uint32_t i = 0; i < ctx->nsent; i++) {
                        sn_registration_t *g = &ctx->regs[ctx->sent_idx[i]];

                        g->result = -(int32_t)sn_get_u32(res + 4 * i);
                        /* Here, under conn->lock, not after the wait: a resume must find
                         * every registration the ended daemon accepted. */
                        if (g->result == 0 && ctx->port->listed &&
                            (ctx->prep[i].dev || ctx->prep[i].ino))
                                sn__regtab_apply(&ctx->port->regs, g, ctx->prep[i].dev,
                                                 ctx->prep[i].ino);
                }
        }
        ctx->nentries = sn__process_entries(ctx->port, h, ent, ctx->entries, ctx->max_entries);
}

/* A caller cancelled after its reply came: the entries it received (sn__wait). */
static uint32_t process_salvage(struct sn_pending *p, sn_entry_t **ret_entries)
{
        struct process_ctx *ctx = p->ctx;

        *ret_entries = ctx->entries;
        return ctx->nentries;
}

/* What a call cancelled while it waits (sn__wait) must give back. */
struct arrays {
        uint32_t **sent_idx, *stack_idx;
        struct prep **prep, *stack_prep;
};

static void arrays_cancelled(void *arg)
{
        struct arrays *a = arg;

        if (*a->sent_idx != a->stack_idx)
                free(*a->sent_idx);
        if (*a->prep != a->stack_prep)
                free(*a->prep);
}

static void port_cancelled(void *arg)
{
        sn__port_unref(arg);
}

/* sn__wait(), freeing a's arrays if the caller is cancelled.  (A function of its own: the
 * cleanup handler's setjmp must not see the caller's variables change.) */
static void wait_freeing(sn_conn_t *c, struct sn_pending *p, struct arrays *a, int *ret)
{
        pthread_cleanup_push(arrays_cancelled, a);
        *ret = sn__wait(c, p);
        pthread_cleanup_pop(0);
}

/* handles: NULL, or for each of regs its handle (0: none), as sn_registration_ex_t gives it. */
static int do_process(sn_port_t *port, sn_registration_t *regs, const uint64_t *handles,
                      uint32_t nregs, sn_entry_t *entries, uint32_t max_entries,
                      uint32_t timeout_ms, bool retry)
{
        sn_conn_t *c = port->conn;
        uint32_t port_id = port->id;
        const size_t isz = SN_WIRE_SIZE_registration;
        const size_t fixed = SN_HEADER_SIZE + SN_WIRE_SIZE_process;
        bool refused;
        uint32_t stack_idx[128];
        struct prep stack_prep[128];
        uint32_t *sent_idx = stack_idx;
        struct prep *prep = stack_prep;
        struct process_ctx ctx = { .port = port, .regs = regs, .prep = NULL, .entries = entries,
                                   .max_entries = max_entries };
        struct sn_pending pend;
        struct arrays arrays = { &sent_idx, stack_idx, &prep, stack_prep };
        uint32_t per_msg, nstale = 0;
        uint32_t thread = max_entries ? sn__thread_id(c) : 0;
        uint64_t gen;
        int64_t until = -1;
        uint8_t *buf;
        int r;

        if (nregs > SN_ARRAY_SIZE(stack_idx)) {
                sent_idx = malloc((size_t)nregs * sizeof(*sent_idx));
                prep = malloc((size_t)nregs * sizeof(*prep));
                if (!sent_idx || !prep) {
                        r = -ENOMEM;
                        goto out;
                }
        }

        /* Decide locally what the daemon need not see (rows 9, 14).  The identity of each
         * descriptor is read without the connection lock: other threads' replies are handed
         * out under it.  An item with a handle of the current daemon needs no fstat: the
         * daemon finds the registration by it (a stale one is sent again below, by fd). */
        for (uint32_t i = 0; i < nregs; i++) {
                sn_registration_t *g = &regs[i];
                struct stat st;

                g->result = 0;
                if (g->op == SN_OP_NONE)
                        continue;
                if (handles && sn__handle_current(c, handles[i])) {
                        prep[ctx.nsent] = (struct prep){ .handle = handles[i] &
                                                                   SN_PROTO_HANDLE_MASK };
                        sent_idx[ctx.nsent++] = i;
                        continue;
                }
                if (handles && handles[i] && g->fd < 0) {
                        /* A lost daemon's handle, and no descriptor to go by. */
                        g->result = g->op == SN_OP_ENABLE ? -ESTALE : -ENOENT;
                        continue;
                }
                if (g->fd < 0 || fstat(g->fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
                        g->result = -ENOTSOCK;
                        continue;
                }
                prep[ctx.nsent] = (struct prep){ .dev = st.st_dev, .ino = st.st_ino };
                sent_idx[ctx.nsent++] = i;
        }
        /* Which ENABLEs must pass the socket itself: those the daemon may not know yet.  A
         * handle item's socket, for this process's own records, is what the descriptor cache
         * says its fd names (none when this process did not register it on this port). */
        pthread_mutex_lock(&c->lock);
        gen = c->gen;
        for (uint32_t k = 0; k < ctx.nsent; k++) {
                const sn_registration_t *g = &regs[sent_idx[k]];
                const struct sn_fdcache *e = sn__cache_get(c, g->fd);

                if (prep[k].handle) {
                        if (e && e->port == port_id) {
                                prep[k].dev = e->dev;
                                prep[k].ino = e->ino;
                        }
                        continue;
                }
                prep[k].attach = g->op == SN_OP_ENABLE &&
                                 (retry || !e || e->port != port_id || e->dev != prep[k].dev ||
                                  e->ino != prep[k].ino);
        }
        pthread_mutex_unlock(&c->lock);
        ctx.sent_idx = sent_idx;
        ctx.prep = prep;

        /* Reply room: the daemon answers with nsent results plus the entries. */
        if (max_entries) {
                size_t room = c->limits.max_message -
                              sn_msg_size(SN_MSG_PROCESS_REPLY, ctx.nsent, 0);
                ctx.max_entries = max_entries =
                        (uint32_t)SN_MIN((size_t)max_entries, room / SN_WIRE_SIZE_entry);
                if (!max_entries) {
                        r = -E2BIG;
                        goto out;
                }
        }

        per_msg = (uint32_t)((c->limits.max_message - fixed) / isz);
        buf = sn__msgbuf(fixed + (size_t)SN_MIN(per_msg, ctx.nsent) * isz);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        /* A pure dequeue with a finite timeout returns by it while the daemon is away: it
         * waits for a resume (which holds send_lock) at most that long, and the resume goes on
         * behind it (docs/reconnect.md).  A call that registers waits for the new daemon: its
         * items must reach one. */
        if (max_entries && !ctx.nsent && timeout_ms != SN_INFINITE)
                until = sn__mono_ms() + timeout_ms;
        if (sn__send_lock_until(c, until) < 0) {
                r = -ETIMEDOUT;
                goto out;
        }
        if (c->gen != gen) {
                /* A resume came between: a new daemon, which knows no descriptor yet, and
                 * the port's new number (both read under send_lock). */
                for (uint32_t k = 0; k < ctx.nsent; k++)
                        prep[k].attach = regs[sent_idx[k]].op == SN_OP_ENABLE && !prep[k].handle;
                gen = c->gen;
        }
        port_id = port->id;
        if (max_entries && !ctx.nsent) {
                bool owed;

                /* A resume (which holds send_lock) may have left entries owed to this port:
                 * they are this pure dequeue's, taken by sn_port_process (-EINPROGRESS). */
                pthread_mutex_lock(&c->lock);
                owed = port->nowed != 0;
                pthread_mutex_unlock(&c->lock);
                if (owed) {
                        pthread_mutex_unlock(&c->send_lock);
                        r = -EINPROGRESS;
                        goto out;
                }
        }
        sn__pending_add(c, &pend, SN_MSG_PROCESS_REPLY, process_reply, &ctx);
        pend.port = port_id;
        pend.thread = thread;
        pend.salvage = max_entries ? process_salvage : NULL;
        pend.relay = max_entries && !ctx.nsent;
        r = 0;
        for (uint32_t first = 0;;) {
                int fds[SN_PROTO_MAX_FDS];
                uint32_t n = 0, nfds = 0;
                uint8_t *p = buf + fixed;
                bool last;

                while (first + n < ctx.nsent && n < per_msg) {
                        const struct prep *pr = &prep[first + n];
                        const sn_registration_t *g = &regs[sent_idx[first + n]];
                        struct snw_registration it = {
                                .key = g->key,
                                .dev = pr->handle ? pr->handle : pr->dev,
                                .ino = pr->handle ? 0 : pr->ino,
                                .filter = g->filter,
                                .op = g->op,
                                .trigger = g->trigger,
                                .fd_index = pr->handle ? SN_PROTO_BY_HANDLE : SN_PROTO_NO_FD,
                                .client_fd = (uint32_t)g->fd,
                        };

                        if (pr->attach) {
                                if (nfds == c->limits.max_fds)
                                        break;
                                it.fd_index = nfds;
                                fds[nfds++] = g->fd;
                        }
                        p = snw_registration_encode(p, &it);
                        n++;
                }
                last = first + n == ctx.nsent;
                struct snw_process body = {
                        .port = port_id,
                        .timeout_ms = timeout_ms,
                        .max_entries = max_entries,
                        .flags = last ? 0 : SN_PROTO_PROCESS_PART,
                        .thread = thread,
                };
                snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, pend.id, 0, (uint16_t)nfds, n,
                                               0),
                                  &body);
                r = sn__send(c, buf, (size_t)(p - buf), fds, nfds);
                if (r < 0 || last)
                        break;
                first += n;
        }
        pthread_mutex_unlock(&c->send_lock);
        if (r < 0) {
                int r2;

                sn__pending_remove(c, &pend);
                r2 = until < 0 ? sn__conn_recover(c, gen, r)
                               : sn__conn_recover_until(c, gen, r, until);
                if (r2 == -ETIMEDOUT && until >= 0) {
                        r = r2; /* nothing reached a daemon: an empty wait */
                        goto out;
                }
                if (r2 == 0 && !retry) {
                        /* The daemon ended: no part of the call took effect (a daemon applies
                         * a call at its last part).  The new daemon gets all of it, once. */
                        r = do_process(port, regs, handles, nregs, entries, max_entries,
                                       timeout_ms, true);
                        goto out;
                }
                /* A part may have gone out: the connection can no longer be trusted. */
                if (r2 == r)
                        sn__conn_violation(c);
                r = r2 < 0 && r2 != -EPIPE ? r2 : -ECONNRESET;
                goto out;
        }
        wait_freeing(c, &pend, &arrays, &r);
        /* A limit refused the call or some of its items: which one, sn_conn_refusal() asks. */
        refused = r == -EDQUOT;
        for (uint32_t i = 0; i < ctx.nsent && !refused; i++)
                refused = regs[sent_idx[i]].result == -EDQUOT;
        if (refused)
                sn__refusal_note(c, pend.id, regs, sent_idx, ctx.nsent);
        if (r < 0 && r != -ETIMEDOUT)
                goto out; /* -EINPROGRESS: entries were stashed meanwhile (sn_port_process) */

        /* Learn what the daemon now knows (L1, L2), and find entries that need their fd: an
         * ENABLE the daemon could not place by identity or handle, or an item whose handle was
         * a lost daemon's when it went out (a resume came between the look above and the
         * send: gen is the transport the call went to). */
        pthread_mutex_lock(&c->lock);
        for (uint32_t i = 0; i < ctx.nsent; i++) {
                sn_registration_t *g = &regs[sent_idx[i]];

                if (prep[i].handle && g->fd >= 0 &&
                    (g->op == SN_OP_ENABLE
                             ? g->result == -ESTALE
                             : g->result == -ENOENT &&
                                       handles[sent_idx[i]] >> 56 != (uint8_t)gen)) {
                        sent_idx[nstale++] = sent_idx[i];
                        continue;
                }
                if (prep[i].handle && !prep[i].dev && !prep[i].ino)
                        continue; /* not one this process registered on this port */
                if (g->op == SN_OP_ENABLE && g->result == 0) {
                        sn__cache_set(c, g->fd, prep[i].dev, prep[i].ino, port_id);
                } else if (g->op == SN_OP_ENABLE && g->result == -ESTALE) {
                        sent_idx[nstale++] = sent_idx[i];
                } else if (g->op == SN_OP_REMOVE) {
                        struct sn_fdcache *k = sn__cache_get(c, g->fd);

                        if (k && k->dev == prep[i].dev && k->ino == prep[i].ino)
                                k->port = 0;
                }
        }
        pthread_mutex_unlock(&c->lock);
        if (nstale && !retry) {
                /* The cache was out of date (another thread raced us): pass the sockets. */
                for (uint32_t i = 0; i < nstale; i++) {
                        sn_registration_t one = regs[sent_idx[i]];
                        int r2 = do_process(port, &one, NULL, 1, NULL, 0, 0, true);

                        regs[sent_idx[i]].result = r2 < 0 ? r2 : one.result;
                }
        }
        if (r == 0)
                r = max_entries ? (int)ctx.nentries : 0;
out:
        if (sent_idx != stack_idx)
                free(sent_idx);
        if (prep != stack_prep)
                free(prep);
        return r;
}

sn_port_t *sn__port_ref(sn_port_t *port)
{
        __atomic_add_fetch(&port->refs, 1, __ATOMIC_RELAXED);
        return port;
}

sn_port_t *sn__port_unref(sn_port_t *port)
{
        if (port && __atomic_sub_fetch(&port->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                sn__regtab_clear(&port->regs);
                free(port->owed);
                free(port->name);
                free(port);
        }
        return NULL;
}

static void process_calls(sn_port_t *port, sn_registration_t *regs, const uint64_t *handles,
                          uint32_t nregs, sn_entry_t *entries, uint32_t max_entries,
                          uint32_t timeout_ms, int *ret);

/* Whether every registration of a call may be applied twice with the same result (retry.c):
 * then a call whose daemon died while handling it (EIO) is sent again. */
static bool regs_repeatable(const sn_registration_t *regs, uint32_t nregs)
{
        for (uint32_t i = 0; i < nregs; i++)
                if (!sn__retry_op(regs[i].op))
                        return false;
        return true;
}

/* do_process() of registrations only, sent again after EIO where that is safe. */
static int register_only(sn_port_t *port, sn_registration_t *regs, const uint64_t *handles,
                         uint32_t nregs)
{
        for (int eio = 0;; eio++) {
                int r = do_process(port, regs, handles, nregs, NULL, 0, 0, false);

                if (r != -EIO || eio == SN__RETRIES || !regs_repeatable(regs, nregs))
                        return r;
        }
}

/*
 * One reply message holds at most (max_message - reply header and nregs results) / entry size
 * entries.  A call that got a full reply and has room left asks again without waiting, until
 * the array is full or the queue is empty, so that a caller gets min(queued, max_entries) as on
 * Windows.  Entries already received are never lost: a failing follow-up ends the loop.
 * Returns the total count.
 */
static int fetch_more(sn_port_t *port, sn_entry_t *entries, uint32_t max_entries, uint32_t got,
                      uint32_t nregs)
{
        size_t max_message = port->conn->limits.max_message;
        size_t first = sn_msg_size(SN_MSG_PROCESS_REPLY, nregs, 0);
        size_t later = sn_msg_size(SN_MSG_PROCESS_REPLY, 0, 0);
        uint32_t full = max_message > later ? (uint32_t)((max_message - later) / SN_WIRE_SIZE_entry)
                                            : 0;

        /* nregs results is the most the first reply carried: its cap was at least this. */
        if (max_message <= first || got < (max_message - first) / SN_WIRE_SIZE_entry)
                return (int)got;
        while (got < max_entries) {
                int r = do_process(port, NULL, NULL, 0, entries + got, max_entries - got, 0,
                                   false);

                if (r <= 0)
                        break;
                got += (uint32_t)r;
                if ((uint32_t)r < full)
                        break; /* not a full reply: the queue is empty */
        }
        return (int)got;
}

/* The checks of a process call's arguments that need no daemon: 0 or a negative errno. */
static int process_args(sn_port_t *port, bool regs_ok, bool entries_ok, uint32_t max_entries,
                        uint32_t timeout_ms)
{
        if (!port || !regs_ok || !entries_ok)
                return -EINVAL;
        if (!max_entries && timeout_ms)
                return -EINVAL; /* row 2 */
        return sn__conn_usable(port->conn);
}

SN_EXPORT int sn_port_process(sn_port_t *port, sn_registration_t *regs, uint32_t nregs,
                              sn_entry_t *entries, uint32_t max_entries, uint32_t timeout_ms)
{
        int r = process_args(port, regs || !nregs, entries || !max_entries, max_entries,
                             timeout_ms);

        if (r < 0)
                return r;
        sn__port_ref(port);
        pthread_cleanup_push(port_cancelled, port);
        process_calls(port, regs, NULL, nregs, entries, max_entries, timeout_ms, &r);
        pthread_cleanup_pop(1); /* drops the reference */
        if (r > 0)
                sn__entries_public(entries, (uint32_t)r);
        return r;
}

/* sn_port_process() with a reference on port: the calls the daemon needs (see below), and the
 * entries cancelled callers left.  The result goes to *ret. */
static void process_calls(sn_port_t *port, sn_registration_t *regs, const uint64_t *handles,
                          uint32_t nregs, sn_entry_t *entries, uint32_t max_entries,
                          uint32_t timeout_ms, int *ret)
{
        int64_t deadline = 0;
        uint32_t n;
        int r, eio = 0;

        /* The daemon takes at most call_max items in one call (its reply holds a result for
         * each): a larger array goes as several calls, registrations only, then the last one
         * with the dequeue.  A call-level failure of a later call leaves earlier ones applied. */
        for (uint32_t call_max = (port->conn->limits.max_message - 52) / 4; nregs > call_max;) {
                r = register_only(port, regs, handles, call_max);
                if (r < 0)
                        goto out;
                regs += call_max;
                handles = handles ? handles + call_max : NULL;
                nregs -= call_max;
        }
        if (timeout_ms != SN_INFINITE && timeout_ms)
                deadline = now_ns() + (int64_t)timeout_ms * 1000000;
        for (;;) {
                /* Entries that reached a cancelled caller (sn__wait) are this call's. */
                uint32_t nowed = max_entries ? owed_take(port, entries, max_entries) : 0;

                n = nowed;
                if (n < max_entries)
                        n += sn__orphans_take(port->conn, port->id, entries + n,
                                              max_entries - n);
                if (n) {
                        /* (An owed entry's ONESHOT registration was marked by the replay.) */
                        pthread_mutex_lock(&port->conn->lock);
                        if (port->listed)
                                sn__regtab_fired(&port->regs, entries + nowed, n - nowed);
                        pthread_mutex_unlock(&port->conn->lock);
                        r = nregs ? register_only(port, regs, handles, nregs) : 0;
                        r = r < 0 ? r : (int)n;
                        break;
                }
                r = do_process(port, regs, handles, nregs, entries, max_entries, timeout_ms,
                               false);
                if (r == -EIO && eio < SN__RETRIES && regs_repeatable(regs, nregs)) {
                        /* The daemon died handling it, and applying it again gives the same
                         * result (retry.c): the new daemon gets all of it, for what is left of
                         * the timeout. */
                        eio++;
                        if (deadline)
                                timeout_ms = ms_left(deadline);
                        continue;
                }
                if (r == SN__ASK_AGAIN ||
                    (r == -ESHUTDOWN && max_entries && port->conn->reconnect_ms)) {
                        /* The daemon ended (or stops) while this call waited; what it
                         * registered was applied (ESHUTDOWN) or is not known to have been
                         * (SN__ASK_AGAIN comes for pure dequeues only).  The wait goes on at
                         * the new daemon, once the session resumed. */
                        regs = NULL;
                        handles = NULL;
                        nregs = 0;
                        if (deadline)
                                timeout_ms = ms_left(deadline);
                        continue;
                }
                if (r != -EINPROGRESS)
                        break;
                /* Stashed entries arrived while this call waited: take them (another thread
                 * may have been quicker; then wait for what is left of the timeout). */
                if (deadline)
                        timeout_ms = ms_left(deadline);
        }
        if (r > 0 && (uint32_t)r < max_entries)
                r = fetch_more(port, entries, max_entries, (uint32_t)r, nregs);
out:
        *ret = r;
}

SN_EXPORT int sn_port_dequeue(sn_port_t *port, sn_entry_t *entries, uint32_t max_entries,
                              uint32_t timeout_ms)
{
        if (!max_entries)
                return -EINVAL;
        return sn_port_process(port, NULL, 0, entries, max_entries, timeout_ms);
}

/* sn_port_process_ex() works on sn_port_process()'s arrays: these, on the heap when large. */
struct ex_arrays {
        sn_registration_t *regs;
        uint64_t *handles;
        sn_entry_t *entries;
        bool heap_regs, heap_entries;
};

static void ex_arrays_free(void *arg)
{
        struct ex_arrays *a = arg;

        if (a->heap_regs) {
                free(a->regs);
                free(a->handles);
        }
        if (a->heap_entries)
                free(a->entries);
}

/* process_calls() with a reference on port, freeing a if the caller is cancelled. */
static void process_calls_ex(sn_port_t *port, struct ex_arrays *a, uint32_t nregs,
                             uint32_t max_entries, uint32_t timeout_ms, int *ret)
{
        sn__port_ref(port);
        pthread_cleanup_push(ex_arrays_free, a);
        pthread_cleanup_push(port_cancelled, port);
        process_calls(port, a->regs, a->handles, nregs, a->entries, max_entries, timeout_ms, ret);
        pthread_cleanup_pop(1);
        pthread_cleanup_pop(0);
}

SN_EXPORT int sn_port_process_ex(sn_port_t *port, sn_registration_ex_t *regs, uint32_t nregs,
                                 sn_entry_ex_t *entries, uint32_t max_entries,
                                 uint32_t timeout_ms)
{
        enum { STACK = 64 };
        sn_registration_t stack_regs[STACK], *r1 = stack_regs;
        uint64_t stack_handles[STACK], *h = stack_handles;
        sn_entry_t stack_ents[STACK], *e1 = stack_ents;
        struct ex_arrays a;
        int r = process_args(port, regs || !nregs, entries || !max_entries, max_entries,
                             timeout_ms);

        if (r < 0)
                return r;
        if (nregs > STACK) {
                r1 = malloc((size_t)nregs * sizeof(*r1));
                h = malloc((size_t)nregs * sizeof(*h));
        }
        if (max_entries > STACK)
                e1 = malloc((size_t)max_entries * sizeof(*e1));
        if (!r1 || !h || !e1) {
                r = -ENOMEM;
                goto out;
        }
        for (uint32_t i = 0; i < nregs; i++) {
                r1[i] = regs[i].reg;
                h[i] = regs[i].handle;
        }
        a = (struct ex_arrays){ .regs = r1, .handles = h, .entries = e1,
                                .heap_regs = r1 != stack_regs, .heap_entries = e1 != stack_ents };
        process_calls_ex(port, &a, nregs, max_entries, timeout_ms, &r);
        for (uint32_t i = 0; i < nregs; i++)
                regs[i].reg.result = r1[i].result;
        for (int i = 0; i < r; i++) {
                bool sock = e1[i].kind == SN_ENTRY_SOCKET;

                entries[i] = (sn_entry_ex_t){ .entry = e1[i], .handle = sock ? e1[i].overlapped : 0 };
                if (sock)
                        entries[i].entry.overlapped = 0;
        }
out:
        if (r1 != stack_regs)
                free(r1);
        if (h != stack_handles)
                free(h);
        if (e1 != stack_ents)
                free(e1);
        return r;
}

SN_EXPORT int sn_port_post(sn_port_t *port, uint64_t key, uint32_t bytes, uint64_t overlapped)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_post + SN_WIRE_SIZE_packet];
        struct snw_packet pk = { .key = key, .overlapped = overlapped, .bytes = bytes };
        struct snw_post body;
        uint8_t *p;
        int r;

        if (!port)
                return -EINVAL;
        r = sn__conn_usable(port->conn);
        if (r < 0)
                return r;
        body.port = port->id;
        p = snw_post_encode(sn_msg_begin(buf, SN_MSG_POST, 0, 0, 0, 1, 0), &body);
        snw_packet_encode(p, &pk);
        return sn__call_on(port->conn, &port->id, buf, sizeof(buf), SN_MSG_POST_REPLY, NULL,
                           NULL);
}

/* With conn->lock held: takes port off conn->ports (a resume no longer makes it again) and
 * forgets its registrations. */
static void port_unlist(sn_conn_t *c, sn_port_t *port)
{
        if (!port->listed)
                return;
        for (sn_port_t **pp = &c->ports; *pp; pp = &(*pp)->next) {
                if (*pp == port) {
                        *pp = port->next;
                        break;
                }
        }
        port->listed = false;
        sn__regtab_clear(&port->regs);
        port->nowed = 0;
}

/* Replay: makes port again on the new daemon (a named one is created, or opened when another
 * holder of the name resumed first) with its linger time; *ret_id is its number there, 0 when
 * the daemon refused it.  Returns 0 or a transport error. */
static int replay_port(sn_conn_t *c, const sn_port_t *port, uint32_t *ret_id)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_port_create + 256];
        struct snw_port_create body = { .concurrency = port->concurrency };
        uint32_t len = port->name ? (uint32_t)strlen(port->name) : 0;
        struct snw_port_create_reply rep;
        const struct sn_msg_desc *d;
        const uint8_t *rb;
        struct snw_header h;
        uint8_t *p;
        int r, st;

        *ret_id = 0;
        p = snw_port_create_encode(sn_msg_begin(buf, SN_MSG_PORT_CREATE, 0, 0, 0, len, 0), &body);
        memcpy(p, port->name ? port->name : "", len);
        r = sn__conn_exchange(c, buf, sn_msg_size(SN_MSG_PORT_CREATE, len, 0), NULL, 0,
                              SN_MSG_PORT_CREATE_REPLY, &h, &d, &rb, &st);
        if (r == 0 && st == -EEXIST && len) {
                memcpy(sn_msg_begin(buf, SN_MSG_PORT_OPEN, 0, 0, 0, len, 0), port->name, len);
                r = sn__conn_exchange(c, buf, sn_msg_size(SN_MSG_PORT_OPEN, len, 0), NULL, 0,
                                      SN_MSG_PORT_OPEN_REPLY, &h, &d, &rb, &st);
        }
        if (r < 0 || st < 0)
                return r;
        snw_port_create_reply_decode(sn_msg_body(rb), &rep);
        if (!rep.port)
                return -EPROTO;
        *ret_id = rep.port;
        if (port->linger_ms && c->version >= 2) {
                uint8_t lbuf[SN_HEADER_SIZE + SN_WIRE_SIZE_port_linger];
                struct snw_port_linger lb = { .port = rep.port, .linger_ms = port->linger_ms };

                snw_port_linger_encode(sn_msg_begin(lbuf, SN_MSG_PORT_LINGER, 0, 0, 0, 0, 0), &lb);
                /* Refused (another holder of the name set it): the port lingers as it does. */
                r = sn__conn_exchange(c, lbuf, sizeof(lbuf), NULL, 0, SN_MSG_PORT_LINGER_REPLY, &h,
                                      &d, &rb, &st);
        }
        return r;
}

/* The event bits socket fd reports now for filter, read with poll(): what an EDGE
 * registration made again on a new daemon owes (the daemon skips what holds at ENABLE,
 * rule 15).  The same rules as the daemon's: a stream socket never connected reports nothing
 * unless an error is pending (rule 14); a hang-up reports IN and HANGUP, unless only a local
 * shutdown is behind it (row 50: common/hangup.h). */
static uint32_t readiness(int fd, uint16_t filter)
{
        struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP };
        struct sockaddr_storage sa;
        socklen_t len = sizeof(int);
        int type = 0, listening = 0;
        bool stream;
        uint32_t bits = 0;
        short ev;

        if (poll(&pfd, 1, 0) < 0)
                return 0;
        ev = pfd.revents;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return 0;
        stream = type == SOCK_STREAM || type == SOCK_SEQPACKET;
        if (stream && ev & (POLLHUP | POLLRDHUP) && !sn__hangup_is_peers(fd))
                ev &= (short)~(POLLHUP | POLLRDHUP);
        len = sizeof(int);
        if (stream && (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 ||
                       !listening)) {
                len = sizeof(sa);
                if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0 &&
                    !(ev & (POLLERR | POLLIN)))
                        return 0;
        }
        if (filter & SN_REGISTER_EVENT_IN &&
            (ev & POLLIN || (stream && ev & (POLLHUP | POLLRDHUP))))
                bits |= SN_EVENT_IN;
        if (filter & SN_REGISTER_EVENT_OUT && ev & POLLOUT && (ev & (POLLHUP | POLLERR)) !=
                                                                      (POLLHUP | POLLERR))
                bits |= SN_EVENT_OUT;
        if (filter & SN_REGISTER_EVENT_HANGUP && stream && ev & (POLLHUP | POLLRDHUP))
                bits |= SN_EVENT_HANGUP;
        if (ev & POLLERR)
                bits |= SN_EVENT_ERR;
        return bits;
}

/* Replay: one PROCESS of n registration items (nfds descriptors) for port id; the items that
 * the daemon refused leave the table (their record numbers in which[]). */
static int replay_batch(sn_conn_t *c, struct sn_regtab *t, uint32_t id, uint8_t *buf,
                        uint8_t *end, const int *fds, uint32_t nfds, const uint32_t *which,
                        uint32_t n)
{
        struct snw_process body = { .port = id };
        const struct sn_msg_desc *d;
        const uint8_t *rb, *res;
        struct snw_header h;
        int r, st;

        snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 0, 0, (uint16_t)nfds, n, 0), &body);
        r = sn__conn_exchange(c, buf, (size_t)(end - buf), fds, nfds, SN_MSG_PROCESS_REPLY, &h, &d,
                              &rb, &st);
        if (r < 0)
                return r;
        if (st < 0 || h.count != n) {
                /* Refused as a whole (a limit): none of them is kept. */
                for (uint32_t i = 0; i < n; i++)
                        t->reg[which[i]].flags |= SN_REG_GONE;
        } else {
                res = sn_msg_array(rb, d, 1);
                for (uint32_t i = 0; i < n; i++)
                        if (sn_get_u32(res + 4 * i))
                                t->reg[which[i]].flags |= SN_REG_GONE;
        }
        return 0;
}

/* Replay: registers again on port id every registration of port whose descriptor still names
 * the socket registered (fstat: the application may have closed it, or reused the number for
 * another socket); the others leave the table.  An ENABLE passes the descriptor; a disabled
 * registration is disabled again in the same call, before anything can be dequeued. */
static int replay_regs(sn_conn_t *c, sn_port_t *port, uint32_t id)
{
        const size_t isz = SN_WIRE_SIZE_registration;
        const size_t fixed = SN_HEADER_SIZE + SN_WIRE_SIZE_process;
        uint32_t per_msg = (uint32_t)SN_MIN((c->limits.max_message - fixed) / isz,
                                            (c->limits.max_message - 52) / 4);
        struct sn_regtab *t = &port->regs;
        uint32_t *which = malloc((size_t)per_msg * sizeof(*which));
        uint8_t *buf = malloc(fixed + (size_t)per_msg * isz), *p = buf + fixed;
        int fds[SN_PROTO_MAX_FDS];
        uint32_t n = 0, nfds = 0;
        int r = 0;

        if (!which || !buf) {
                r = -ENOMEM;
                goto out;
        }
        for (uint32_t i = 0; i <= t->used && r == 0; i++) {
                struct sn_reg *s = i < t->used ? &t->reg[i] : NULL;
                uint64_t dev = s ? sn__regtab_dev(t, s) : 0;
                struct stat st;

                if (n && (!s || nfds == c->limits.max_fds || n + 2 > per_msg)) {
                        r = replay_batch(c, t, id, buf, p, fds, nfds, which, n);
                        p = buf + fixed;
                        n = nfds = 0;
                }
                if (!s || s->flags & SN_REG_GONE)
                        continue;
                if (fstat(s->fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
                    (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != s->ino) {
                        s->flags |= SN_REG_GONE;
                        continue;
                }
                /* A fired ONESHOT one is disabled too: its next ENABLE arms it (rule L7). */
                for (unsigned k = 0; k < (s->flags & (SN_REG_DISABLED | SN_REG_FIRED) ? 2u : 1u);
                     k++) {
                        struct snw_registration it = {
                                .key = s->key, .dev = dev, .ino = s->ino,
                                .filter = s->filter, .trigger = s->trigger,
                                .op = k ? SN_OP_DISABLE : SN_OP_ENABLE,
                                .fd_index = k ? SN_PROTO_NO_FD : nfds,
                                .client_fd = (uint32_t)s->fd,
                        };

                        if (!k)
                                fds[nfds++] = s->fd;
                        which[n++] = i;
                        p = snw_registration_encode(p, &it);
                }
        }
        /* EDGE registrations report what holds now: read after their ENABLE, so that nothing
         * that started to hold in between is lost, and owed to the next dequeue of this
         * process.  An armed ONESHOT one then counts as fired, and is disabled. */
        port->nowed = 0;
        n = 0;
        for (uint32_t i = 0; i < t->used && r == 0; i++) {
                struct sn_reg *s = &t->reg[i];
                uint32_t bits;

                if (!(s->trigger & SN_TRIGGER_EDGE) ||
                    s->flags & (SN_REG_GONE | SN_REG_DISABLED | SN_REG_FIRED) ||
                    !(bits = readiness(s->fd, s->filter)))
                        continue;
                if (!(port->nowed & (port->nowed - 1)) || !port->owed) {
                        /* Room doubles at each power of two. */
                        sn_entry_t *o = realloc(port->owed, (size_t)SN_MAX(8u, port->nowed * 2) *
                                                                    sizeof(*o));

                        if (!o)
                                break; /* not owed: at most once, like a lost packet */
                        port->owed = o;
                }
                port->owed[port->nowed++] = (sn_entry_t){ .key = s->key, .events = bits,
                                                           .kind = SN_ENTRY_SOCKET };
                if (s->trigger & SN_TRIGGER_ONESHOT) {
                        struct snw_registration it = {
                                .key = s->key, .dev = sn__regtab_dev(t, s), .ino = s->ino,
                                .op = SN_OP_DISABLE, .fd_index = SN_PROTO_NO_FD,
                                .client_fd = (uint32_t)s->fd,
                        };

                        s->flags |= SN_REG_FIRED;
                        if (n == per_msg) {
                                r = replay_batch(c, t, id, buf, p, fds, 0, which, n);
                                p = buf + fixed;
                                n = 0;
                        }
                        which[n++] = i;
                        p = snw_registration_encode(p, &it);
                }
        }
        if (n && r == 0)
                r = replay_batch(c, t, id, buf, p, fds, 0, which, n);
out:
        free(which);
        free(buf);
        /* Records marked gone above leave the table. */
        sn__regtab_sweep(t);
        return r;
}

/* The replay hook (struct sn_conn_hooks): with send_lock, conn->lock and the reader role held,
 * on a new daemon.  The ports' new numbers are taken only when every port was made again, so a
 * daemon that fails midway leaves everything for the next one. */
static int replay(sn_conn_t *c)
{
        uint32_t n = 0, i = 0, (*map)[2];
        int r = 0;

        for (sn_port_t *port = c->ports; port; port = port->next)
                n++;
        map = calloc(n ? n : 1, sizeof(*map));
        if (!map)
                return -ENOMEM;
        for (sn_port_t *port = c->ports; port && r == 0; port = port->next, i++) {
                map[i][0] = port->id;
                r = replay_port(c, port, &map[i][1]);
                if (r == 0 && map[i][1])
                        r = replay_regs(c, port, map[i][1]);
        }
        if (r == 0) {
                sn__cache_reset(c);
                i = 0;
                for (sn_port_t *port = c->ports; port; port = port->next, i++) {
                        /* A port the new daemon refused keeps number 0, which no daemon
                         * gives: its calls fail with EBADF. */
                        port->id = map[i][1];
                        for (uint32_t k = 0; k < port->regs.used; k++) {
                                const struct sn_reg *s = &port->regs.reg[k];

                                if (port->id)
                                        sn__cache_set(c, s->fd, sn__regtab_dev(&port->regs, s),
                                                      s->ino, port->id);
                        }
                }
                sn__conn_renumber(c, (const uint32_t(*)[2])map, n);
        }
        free(map);
        return r;
}

/* With conn->lock held (in deliver()): the port exists on the daemon from now on, so it goes on
 * conn->ports at once, where a resume that starts before its creator wakes finds it. */
static void create_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                         const struct sn_msg_desc *d)
{
        sn_port_t *port = p->ctx;
        struct snw_port_create_reply rep;

        if (h->status)
                return;
        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
        if (!rep.port) {
                p->status = -EPROTO; /* never a port's number */
                return;
        }
        port->id = rep.port;
        port->concurrency = rep.concurrency;
        port->listed = true;
        port->next = port->conn->ports;
        port->conn->ports = port;
        port->conn->hooks.replay = replay;
}

/* Creates (type PORT_CREATE) or opens (PORT_OPEN) a port; name may be NULL for create. */
static int port_get(sn_conn_t *c, uint16_t type, const char *name, uint32_t concurrency,
                    sn_port_t **ret_port)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_port_create + 256];
        struct snw_port_create body = { .concurrency = concurrency };
        size_t len = name ? strlen(name) : 0;
        sn_port_t *port;
        uint8_t *p;
        int r;

        if (!ret_port || len > 255 || (type == SN_MSG_PORT_OPEN && len == 0))
                return -EINVAL;
        r = sn__conn_usable(c);
        if (r < 0)
                return r;
        port = calloc(1, sizeof(*port));
        if (!port || (len && !(port->name = strndup(name, len)))) {
                free(port);
                return -ENOMEM;
        }
        port->conn = c;
        port->refs = 1;
        p = sn_msg_begin(buf, type, 0, 0, 0, (uint32_t)len, 0);
        if (type == SN_MSG_PORT_CREATE)
                p = snw_port_create_encode(p, &body);
        if (len)
                memcpy(p, name, len);
        r = sn__call(c, buf, sn_msg_size(type, (uint32_t)len, 0),
                     type == SN_MSG_PORT_CREATE ? SN_MSG_PORT_CREATE_REPLY : SN_MSG_PORT_OPEN_REPLY,
                     create_reply, port);
        if (r < 0) {
                /* Made but not ours after all (a reply that broke the protocol later): off the
                 * list, and the connection is lost anyway. */
                pthread_mutex_lock(&c->lock);
                port_unlist(c, port);
                pthread_mutex_unlock(&c->lock);
                sn__port_unref(port);
                return r;
        }
        *ret_port = port;
        return 0;
}

SN_EXPORT int sn_port_create(sn_conn_t *c, uint32_t concurrency, sn_port_t **ret_port)
{
        return port_get(c, SN_MSG_PORT_CREATE, NULL, concurrency, ret_port);
}

SN_EXPORT int sn_port_create_named(sn_conn_t *c, const char *name, uint32_t concurrency,
                                   sn_port_t **ret_port)
{
        if (!name || !*name)
                return -EINVAL;
        return port_get(c, SN_MSG_PORT_CREATE, name, concurrency, ret_port);
}

SN_EXPORT int sn_port_open(sn_conn_t *c, const char *name, sn_port_t **ret_port)
{
        return port_get(c, SN_MSG_PORT_OPEN, name, 0, ret_port);
}

SN_EXPORT int sn_port_close(sn_port_t *port)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_port];
        struct snw_port body;
        sn_conn_t *c;
        int r;

        if (!port)
                return 0;
        c = port->conn;
        r = sn__conn_usable(c);
        if (r == 0) {
                /* A daemon that ended during the call (EIO) is asked again (retry.c): after a
                 * resume the port was made again and is closed there. */
                body.port = 0; /* written as it is sent */
                snw_port_encode(sn_msg_begin(buf, SN_MSG_PORT_CLOSE, 0, 0, 0, 0, 0), &body);
                r = sn__call_on(c, &port->id, buf, sizeof(buf), SN_MSG_PORT_CLOSE_REPLY, NULL,
                                NULL);
        }
        if (r == 0 || r == -ECONNRESET || r == -EACCES) {
                pthread_mutex_lock(&c->lock);
                sn__cache_forget_port(c, port->id);
                port_unlist(c, port);
                pthread_mutex_unlock(&c->lock);
        }
        sn__port_unref(port);
        return r == -ECONNRESET || r == -EACCES ? 0 : r;
}

/* ---- handoff: linger times and taking sockets over ------------------------------------------ */

SN_EXPORT int sn_port_set_linger(sn_port_t *port, uint32_t linger_ms)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_port_linger];
        struct snw_port_linger body = { .linger_ms = linger_ms };
        int r;

        if (!port)
                return -EINVAL;
        r = sn__conn_usable(port->conn);
        if (r < 0)
                return r;
        if (port->conn->version < 2)
                return -EOPNOTSUPP;
        body.port = port->id;
        snw_port_linger_encode(sn_msg_begin(buf, SN_MSG_PORT_LINGER, 0, 0, 0, 0, 0), &body);
        r = sn__call_on(port->conn, &port->id, buf, sizeof(buf), SN_MSG_PORT_LINGER_REPLY, NULL,
                        NULL);
        if (r == 0)
                __atomic_store_n(&port->linger_ms, linger_ms, __ATOMIC_RELAXED);
        return r;
}

SN_EXPORT int sn_port_create_named_ex(sn_conn_t *c, const char *name,
                                      const sn_port_options_t *opt, sn_port_t **ret_port)
{
        sn_port_options_t o = opt ? *opt : (sn_port_options_t){ 0 };
        sn_port_t *port;
        int r;

        if (!name || !*name || !ret_port)
                return -EINVAL;
        r = sn__conn_usable(c);
        if (r < 0)
                return r;
        if (o.linger_ms && c->version < 2)
                return -EOPNOTSUPP;
        r = port_get(c, SN_MSG_PORT_CREATE, name, o.concurrency, &port);
        if (r < 0)
                return r;
        if (o.linger_ms) {
                r = sn_port_set_linger(port, o.linger_ms);
                if (r < 0) {
                        sn_port_close(port); /* linger 0 yet: it closes with our handle */
                        return r;
                }
        }
        *ret_port = port;
        return 0;
}

struct take_ctx {
        struct snw_port_take_reply rep;
        uint32_t count, nfds; /* the header's: items, and descriptors announced */
        uint32_t n;           /* items decoded (at most SN_PROTO_MAX_FDS) */
        struct snw_registration items[SN_PROTO_MAX_FDS];
};

static void take_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                       const struct sn_msg_desc *d)
{
        struct take_ctx *ctx = p->ctx;
        const uint8_t *it = sn_msg_array(buf, d, 1);

        snw_port_take_reply_decode(sn_msg_body(buf), &ctx->rep);
        ctx->count = h->count;
        ctx->nfds = h->nfds;
        ctx->n = SN_MIN(h->count, (uint32_t)SN_PROTO_MAX_FDS);
        for (uint32_t i = 0; i < ctx->n; i++)
                it = snw_registration_decode(it, &ctx->items[i]);
}

/*
 * Whether a PORT_TAKE_REPLY keeps the protocol (PROTOCOL.md, "Descriptors in replies"); the
 * reply is the daemon's word and is checked like any input: at most max items (and max_fds),
 * the header announcing one descriptor per item, item i naming descriptor i (so no two items
 * share one and none points past the message), exactly one descriptor per item, fewer only
 * when the kernel dropped some (MSG_CTRUNC: the first ones came), and each one a socket.
 */
static bool take_reply_valid(const sn_conn_t *c, const struct take_ctx *ctx, uint32_t max,
                             const int *fds, unsigned nfds, bool cut)
{
        if (ctx->count > max || ctx->count > c->limits.max_fds || ctx->nfds != ctx->count)
                return false;
        if (nfds > ctx->count || (nfds < ctx->count && !cut))
                return false;
        for (uint32_t i = 0; i < ctx->n; i++)
                if (ctx->items[i].fd_index != i)
                        return false;
        for (unsigned k = 0; k < nfds; k++) {
                struct stat st;

                if (fstat(fds[k], &st) < 0 || !S_ISSOCK(st.st_mode))
                        return false;
        }
        return true;
}

/* One PORT_TAKE round trip for at most max; fills out, returns how many (or a negative errno;
 * -EMFILE after filling out when descriptors were missing; -EBADMSG, out untouched, for a
 * reply that breaks the protocol: every descriptor it brought is closed and the connection is
 * lost). */
static int take_once(sn_port_t *port, sn_taken_socket_t *out, uint32_t max, struct take_ctx *ctx)
{
        sn_conn_t *c = port->conn;
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_port_take];
        struct snw_port_take body = { .port = port->id, .max = max };
        int fds[SN_PROTO_MAX_FDS];
        struct sn_pending p;
        uint64_t gen;
        int r;

        ctx->n = ctx->count = ctx->nfds = 0;
        pthread_mutex_lock(&c->send_lock);
        sn__pending_add(c, &p, SN_MSG_PORT_TAKE_REPLY, take_reply, ctx);
        p.fds = fds;
        body.port = port->id;
        gen = c->gen;
        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, p.id, 0, 0, 0, 0), &body);
        r = sn__send(c, buf, sizeof(buf), NULL, 0);
        pthread_mutex_unlock(&c->send_lock);
        if (r < 0) {
                sn__pending_remove(c, &p);
                /* After a resume the caller asks again (-EAGAIN), of the new daemon. */
                r = sn__conn_recover(c, gen, r);
                return r == 0 ? -EAGAIN : r == -EPIPE ? -ECONNRESET : r;
        }
        r = sn__wait(c, &p);
        if (r < 0) {
                sn__fds_close(fds, p.nfds);
                return r;
        }
        if (!take_reply_valid(c, ctx, max, fds, p.nfds, p.fds_cut)) {
                sn__fds_close(fds, p.nfds);
                sn__conn_violation(c);
                return -EBADMSG;
        }
        pthread_mutex_lock(&c->lock);
        for (uint32_t i = 0; i < ctx->n; i++) {
                const struct snw_registration *it = &ctx->items[i];
                int fd = i < p.nfds ? fds[i] : -1;
                struct stat st;

                /* The daemon's word on the identity is checked: the cache must never map a
                 * descriptor to another socket's registration. */
                if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == it->dev &&
                    (uint64_t)st.st_ino == it->ino) {
                        /* Now a registration of this process's, through fd. */
                        sn_registration_t g = { .fd = fd, .filter = it->filter, .op = SN_OP_ENABLE,
                                                .trigger = it->trigger, .key = it->key };

                        sn__cache_set(c, fd, it->dev, it->ino, port->id);
                        if (port->listed && sn__regtab_apply(&port->regs, &g, it->dev,
                                                             it->ino) == 0 &&
                            it->op == SN_OP_DISABLE) {
                                g.op = SN_OP_DISABLE;
                                sn__regtab_apply(&port->regs, &g, it->dev, it->ino);
                        }
                }
                out[i] = (sn_taken_socket_t){
                        .fd = fd,
                        .previous_fd = it->client_fd == SN_PROTO_NO_FD ? -1 : (int)it->client_fd,
                        .key = it->key,
                        .filter = it->filter,
                        .trigger = it->trigger,
                        .enabled = it->op != SN_OP_DISABLE,
                        .armed = it->op == SN_OP_ENABLE,
                };
        }
        pthread_mutex_unlock(&c->lock);
        if (p.nfds < ctx->n)
                return -EMFILE;
        return (int)ctx->n;
}

SN_EXPORT int sn_port_take_sockets(sn_port_t *port, sn_taken_socket_t *out, uint32_t max,
                                   sn_take_info_t *info)
{
        struct snw_port_take_reply rep = { 0 }; /* of the last batch taken */
        struct take_ctx *ctx;
        uint32_t taken = 0;
        int r, busy = 0;

        if (!port || (max && !out) || max > INT32_MAX)
                return -EINVAL;
        r = sn__conn_usable(port->conn);
        if (r < 0)
                return r;
        if (port->conn->version < 2)
                return -EOPNOTSUPP;
        ctx = malloc(sizeof(*ctx));
        if (!ctx)
                return -ENOMEM;
        for (;;) {
                uint32_t ask = SN_MIN(max - taken, port->conn->limits.max_fds);

                r = take_once(port, out + taken, ask, ctx);
                if (r == -EAGAIN && ++busy < 1000) {
                        /* Replies of other threads were still queued for us: they are being
                         * read; ask again shortly. */
                        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
                        continue;
                }
                if (r == -EMFILE) {
                        /* Entries with fd -1 tell the caller; no more rounds. */
                        taken += SN_MIN(ctx->n, ask);
                        rep = ctx->rep;
                        r = 0;
                        break;
                }
                if (r < 0)
                        break;
                taken += (uint32_t)r;
                rep = ctx->rep;
                if (!r || !ctx->rep.remaining || taken == max)
                        break;
        }
        /* A later batch that failed does not hide the earlier ones: they are the caller's. */
        if (r < 0 && taken)
                r = 0;
        if (info && r >= 0)
                *info = (sn_take_info_t){ .remaining = rep.remaining, .holders = rep.holders };
        free(ctx);
        return r < 0 ? r : (int)taken;
}

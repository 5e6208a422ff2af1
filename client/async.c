/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * async.c - submitted calls: the non-blocking, pollable form of sn_port_process().
 *
 * sn_port_submit() encodes and sends a PROCESS call (in parts when needed, as port.c does) and
 * returns at once with an sn_call_t that owns copies of the registrations and room for the
 * entries.  Its reply is decoded by whichever thread reads the connection: sn_conn_collect()
 * from the application's event loop (non-blocking), or a thread blocked in a synchronous call
 * on the same connection.  Completed calls wait on the connection's done list until
 * sn_conn_collect() hands them out.
 *
 * Invariants (conn->lock guards all of them): a call is on conn->calls from submission until
 * sn_call_free() or sn_conn_close(); it is on the done list exactly when it has completed and
 * was not yet collected; conn->efd holds a nonzero count exactly when the done list is not
 * empty, so conn->pollfd (an epoll instance of efd, the connection socket and, with the rings,
 * their client doorbell) is readable when a call can be collected or a reply is waiting to be
 * read.  With the rings, whoever stops reading while a call waits for its reply asks the
 * daemon to ring that doorbell for the next record (conn.c, conn_idle).  A call freed before
 * it completed is marked abandoned and freed when its reply comes.
 *
 * Ownership: this file alone frees a struct sn_call, and exactly once, by call_destroy() from
 * one of four places: sn_call_free() of a completed call (collected or not); call_done() for a
 * call the application freed before it completed (abandoned); sn_port_submit() when the call
 * never went out; calls_release() at sn_conn_close(), for every call still on conn->calls,
 * collected or not, completed or not.  The call's request (k->pend) is on conn's pending list
 * from its sending until its reply is decoded or calls_fail() takes it off (not while its
 * sender still sends it: call_send() deals with a loss meanwhile itself); conn.c never frees
 * an entry marked async, so whoever frees a call first takes its request off that list.
 *
 * An ENABLE passes its descriptor only when the daemon may not know its socket yet, as in
 * port.c: a re-enable of a socket this connection registered on this port names it by identity
 * and goes through the rings like any small request, so a submitted re-enable costs a store
 * into the submission ring, not a descriptor transfer.  Where port.c sends an entry the daemon
 * answers ESTALE again with its descriptor, a submitted call cannot wait to do so: the entry
 * reports -ESTALE (the socket's registration was removed meanwhile, by another thread or process
 * sharing the port) and the descriptor cache forgets the socket, so that submitting the ENABLE
 * again passes it.
 *
 * The connection (conn.c) reaches this file only through the hooks set by hooks_set(): a reply
 * decoded, every pending call failed (the daemon ended: -EIO when the session resumes, the
 * connection's error when it is lost), the connection closed, a new transport after a resume.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "common/macro.h"

struct sn_call {
        struct sn_pending pend; /* first: deliver() hands us this */
        sn_conn_t *conn;
        struct sn_call *next_done;
        struct sn_call *prev, *next; /* conn->calls */
        bool completed;
        bool collected;
        bool abandoned;
        bool sent;                   /* pend was initialized by sn__pending_add() */
        void *user;
        sn_port_t *port_obj;         /* a reference: the registrations it keeps are updated */
        uint32_t port;
        int result;                  /* what sn_port_process() would return */
        sn_registration_t *regs;     /* copies, results written back */
        uint32_t nregs;
        uint32_t *sent_idx;          /* which regs went to the daemon, in order */
        uint64_t (*ident)[2];        /* their (dev, ino); 0, 0: a handle item not ours */
        uint64_t *handle;            /* their wire handle (sn_port_submit_ex), 0: by identity */
        bool *attach;                /* whether each passes its descriptor */
        uint64_t gen;                /* the transport attach[] was decided for */
        uint32_t nsent;
        sn_entry_t *entries;
        uint64_t *entry_handles;     /* sn_port_submit_ex(): each entry's handle */
        uint32_t max_entries;
        uint32_t nentries;
};

static void call_destroy(struct sn_call *k)
{
        if (k->sent)
                pthread_cond_destroy(&k->pend.cond);
        free(k->regs);
        free(k->sent_idx);
        free(k->ident);
        free(k->attach);
        free(k->handle);
        free(k->entries);
        free(k->entry_handles);
        sn__port_unref(k->port_obj);
        free(k);
}

/* With conn->lock held. */
static void call_unlink(sn_conn_t *c, struct sn_call *k)
{
        if (k->prev)
                k->prev->next = k->next;
        else
                c->calls = k->next;
        if (k->next)
                k->next->prev = k->prev;
}

/* Runs in deliver(), conn->lock held: decodes the reply into the call. */
static void call_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                       const struct sn_msg_desc *d)
{
        struct sn_call *k = (struct sn_call *)p;
        const uint8_t *res = sn_msg_array(buf, d, 1);
        const uint8_t *ent = sn_msg_array(buf, d, 2);

        if (!sn__process_reply_valid(h, k->nsent, k->max_entries)) {
                p->status = -EBADMSG; /* deliver() drops the connection */
                return;
        }
        if (h->count == k->nsent) {
                for (uint32_t i = 0; i < k->nsent; i++) {
                        sn_registration_t *g = &k->regs[k->sent_idx[i]];

                        g->result = -(int32_t)sn_get_u32(res + 4 * i);
                        if (k->handle && k->handle[i] && !k->ident[i][0] && !k->ident[i][1])
                                continue; /* not a registration this process made here */
                        /* What a resume makes again. */
                        if (g->result == 0 && k->port_obj->listed)
                                sn__regtab_apply(&k->port_obj->regs, g, k->ident[i][0],
                                                 k->ident[i][1]);
                        /* What the daemon now holds (sn_socket_close needs it). */
                        if (g->op == SN_OP_ENABLE && g->result == 0) {
                                sn__cache_set(k->conn, g->fd, k->ident[i][0], k->ident[i][1],
                                              k->port);
                        } else if (g->op == SN_OP_ENABLE && g->result == -ESTALE &&
                                   !k->attach[i]) {
                                /* The daemon no longer knows it: pass it next time. */
                                struct sn_fdcache *e = sn__cache_get(k->conn, g->fd);

                                if (e && e->dev == k->ident[i][0] && e->ino == k->ident[i][1])
                                        e->port = 0;
                        } else if (g->op == SN_OP_REMOVE && g->result == 0) {
                                struct sn_fdcache *e = sn__cache_get(k->conn, g->fd);

                                if (e && e->dev == k->ident[i][0] && e->ino == k->ident[i][1])
                                        e->port = 0;
                        }
                }
        }
        k->nentries = sn__process_entries(k->port_obj, h, ent, k->entries, k->max_entries);
        for (uint32_t i = 0; k->entry_handles && i < k->nentries; i++)
                k->entry_handles[i] = k->entries[i].kind == SN_ENTRY_SOCKET
                                              ? k->entries[i].overlapped : 0;
        sn__entries_public(k->entries, k->nentries);
}

static void efd_signal(sn_conn_t *c)
{
        uint64_t one = 1;

        if (c->efd >= 0 && write(c->efd, &one, sizeof(one)) < 0) {
                /* EAGAIN only: the counter is already nonzero, which is all that matters. */
        }
}

static void efd_drain(sn_conn_t *c)
{
        uint64_t v;

        if (c->efd >= 0 && read(c->efd, &v, sizeof(v)) < 0) {
                /* EAGAIN: already zero. */
        }
}

/* Hook: p's reply was decoded (conn->lock held). */
static void call_done(sn_conn_t *c, struct sn_pending *p)
{
        struct sn_call *k = (struct sn_call *)p;
        int st = p->status;

        k->completed = true;
        if (st == 0)
                k->result = k->max_entries ? (int)k->nentries : 0;
        else
                k->result = st;
        if (k->abandoned) {
                call_unlink(c, k);
                call_destroy(k);
                return;
        }
        k->next_done = NULL;
        if (c->done_tail)
                c->done_tail->next_done = k;
        else
                c->done_head = k;
        c->done_tail = k;
        efd_signal(c);
}

/* Hook: no reply will come for any submitted call (conn->lock held). */
static void calls_fail(sn_conn_t *c, int status)
{
        struct sn_pending **pp = &c->pending;

        while (*pp) {
                struct sn_pending *p = *pp;

                if (!p->async || p->sending) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                p->status = status;
                p->done = true;
                call_done(c, p);
        }
}

/* Hook: the connection closes (every call is freed).  A call whose reply has not come still
 * has its request (k->pend, inside the call) on the pending list: it goes off that list before
 * the call is freed, or sn_conn_close() would walk freed memory (and free it again). */
static void calls_release(sn_conn_t *c)
{
        struct sn_pending **pp = &c->pending;

        while (*pp) {
                if ((*pp)->async)
                        *pp = (*pp)->next;
                else
                        pp = &(*pp)->next;
        }
        while (c->calls) {
                struct sn_call *k = c->calls;

                call_unlink(c, k);
                call_destroy(k);
        }
        c->done_head = c->done_tail = NULL;
        c->pollfd = sn_close(c->pollfd);
        c->efd = sn_close(c->efd);
}

/* Adds the connection's socket and, with the rings, their client doorbell (a reply in the
 * completion ring leaves the socket quiet) to pollfd; conn->lock held.  Returns 0 or -errno. */
static int poll_add_transport(sn_conn_t *c)
{
        struct epoll_event ev = { .events = EPOLLIN };
        int bell = sn__ring_bell_fd(&c->ring);

        if (epoll_ctl(c->pollfd, EPOLL_CTL_ADD, c->fd, &ev) < 0 ||
            (bell >= 0 && epoll_ctl(c->pollfd, EPOLL_CTL_ADD, bell, &ev) < 0))
                return -errno;
        return 0;
}

/* Hook: a resume replaced the connection's socket and rings (conn->lock held).  The old
 * descriptors left the epoll instance when they were closed; the application keeps polling
 * the same pollfd. */
static void fd_changed(sn_conn_t *c)
{
        if (c->pollfd >= 0 && poll_add_transport(c) < 0) {
                /* Without them a reply would wake nobody: treat pollfd as always readable. */
                efd_signal(c);
        }
}

/* Connects this layer to the connection's hooks (conn->lock held). */
static void hooks_set(sn_conn_t *c)
{
        c->hooks.call_done = call_done;
        c->hooks.calls_fail = calls_fail;
        c->hooks.calls_release = calls_release;
        c->hooks.fd_changed = fd_changed;
}

/* Calls submitted before pollfd existed were not armed (conn.c, conn_idle): the daemon is asked
 * to ring the doorbell for their replies, and a reply already in the ring makes pollfd
 * readable at once; conn->lock held. */
static void poll_arm(sn_conn_t *c)
{
        if (c->reader_active || c->fd < 0)
                return;
        for (struct sn_call *k = c->calls; k; k = k->next) {
                if (!k->completed) {
                        if (sn__transport_idle(&c->ring, true))
                                efd_signal(c);
                        return;
                }
        }
}

/* Creates efd and pollfd on first use; conn->lock held. */
static int poll_setup(sn_conn_t *c)
{
        struct epoll_event ev = { .events = EPOLLIN };

        hooks_set(c);
        if (c->pollfd >= 0)
                return 0;
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->efd < 0)
                return -errno;
        c->pollfd = epoll_create1(EPOLL_CLOEXEC);
        if (c->pollfd < 0 || epoll_ctl(c->pollfd, EPOLL_CTL_ADD, c->efd, &ev) < 0 ||
            poll_add_transport(c) < 0) {
                int r = -errno;

                c->pollfd = sn_close(c->pollfd);
                c->efd = sn_close(c->efd);
                return r;
        }
        if (c->done_head)
                efd_signal(c);
        poll_arm(c);
        return 0;
}

SN_EXPORT int sn_conn_fd(sn_conn_t *c)
{
        int r = sn__conn_usable(c);

        if (r < 0)
                return r;
        pthread_mutex_lock(&c->lock);
        r = poll_setup(c);
        if (r == 0)
                r = c->pollfd;
        pthread_mutex_unlock(&c->lock);
        return r;
}

SN_EXPORT int sn_conn_collect(sn_conn_t *c, sn_call_t **ret_call)
{
        struct sn_call *k;
        int r;

        if (!ret_call)
                return -EINVAL;
        *ret_call = NULL;
        if (!c)
                return -EINVAL;
        r = sn__conn_usable(c);
        if (r == -EBADFD)
                return r; /* after fork(): not this process's connection */
        r = sn__conn_pump(c);
        pthread_mutex_lock(&c->lock);
        k = c->done_head;
        if (k) {
                c->done_head = k->next_done;
                if (!c->done_head)
                        c->done_tail = NULL;
                k->collected = true;
        }
        if (!c->done_head)
                efd_drain(c);
        pthread_mutex_unlock(&c->lock);
        if (k) {
                *ret_call = k;
                return 1;
        }
        return r < 0 ? r : 0;
}

/* Sends k (its parts under send_lock) with a new request id; *ret_gen is the transport it
 * went to.  On failure k is off the pending list again. */
static int call_send(sn_conn_t *c, struct sn_call *k, sn_port_t *port, uint8_t *buf,
                     uint32_t per_msg, uint32_t timeout_ms, uint32_t waiter, uint64_t *ret_gen)
{
        const size_t fixed = SN_HEADER_SIZE + SN_WIRE_SIZE_process;
        int r = 0;

        pthread_mutex_lock(&c->send_lock);
        if (k->sent)
                pthread_cond_destroy(&k->pend.cond);
        sn__pending_add_call(c, &k->pend, SN_MSG_PROCESS_REPLY, call_reply, NULL);
        pthread_mutex_lock(&c->lock);
        *ret_gen = c->gen;
        k->port = port->id; /* read under send_lock: a resume renumbers ports */
        if (c->gen != k->gen) {
                /* A resume came between: the new daemon knows no descriptor yet. */
                for (uint32_t i = 0; i < k->nsent; i++)
                        k->attach[i] = k->regs[k->sent_idx[i]].op == SN_OP_ENABLE &&
                                       !(k->handle && k->handle[i]);
                k->gen = c->gen;
        }
        hooks_set(c);
        if (!k->sent) {
                k->sent = true;
                k->next = c->calls;
                if (c->calls)
                        c->calls->prev = k;
                c->calls = k;
        }
        pthread_mutex_unlock(&c->lock);
        for (uint32_t first = 0;;) {
                int fds[SN_PROTO_MAX_FDS];
                uint32_t n = 0, nfds = 0;
                uint8_t *p = buf + fixed;
                bool last;

                while (first + n < k->nsent && n < per_msg) {
                        const sn_registration_t *g = &k->regs[k->sent_idx[first + n]];
                        uint64_t hd = k->handle ? k->handle[first + n] : 0;
                        struct snw_registration it = {
                                .key = g->key,
                                .dev = hd ? hd : k->ident[first + n][0],
                                .ino = hd ? 0 : k->ident[first + n][1],
                                .filter = g->filter,
                                .op = g->op,
                                .trigger = g->trigger,
                                .fd_index = hd ? SN_PROTO_BY_HANDLE : SN_PROTO_NO_FD,
                                .client_fd = (uint32_t)g->fd,
                        };

                        if (k->attach[first + n]) {
                                if (nfds == c->limits.max_fds)
                                        break;
                                it.fd_index = nfds;
                                fds[nfds++] = g->fd;
                        }
                        p = snw_registration_encode(p, &it);
                        n++;
                }
                last = first + n == k->nsent;
                struct snw_process body = {
                        .port = k->port,
                        .timeout_ms = timeout_ms,
                        .max_entries = k->max_entries,
                        .flags = last ? 0 : SN_PROTO_PROCESS_PART,
                        .thread = waiter,
                };
                snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, k->pend.id, 0,
                                                (uint16_t)nfds, n, 0),
                                   &body);
                r = sn__send(c, buf, (size_t)(p - buf), fds, nfds);
                if (r < 0 || last)
                        break;
                first += n;
        }
        /* Before send_lock goes: a resume takes it before its last look at the pending
         * calls, so it either finds this one sent (and fails it over) or not on the list.
         * Until sending is cleared nobody completes the call, so it is still this thread's
         * to look at; once completed, another thread may collect and free it at once. */
        pthread_mutex_lock(&c->lock);
        k->pend.sending = false;
        if (k->pend.done) {
                /* Its reply came while it was being sent; the reader left it to this thread. */
                r = 0;
                call_done(c, &k->pend);
        } else {
                if (r == 0 && c->broken)
                        r = c->lost_err; /* lost meanwhile: the loss left it to its sender */
                if (r < 0)
                        sn__pending_unlink(c, &k->pend);
        }
        pthread_mutex_unlock(&c->lock);
        pthread_mutex_unlock(&c->send_lock);
        return r;
}

/* sn_port_submit() and sn_port_submit_ex(): handles NULL, or each item's handle (0: none). */
static int submit(sn_port_t *port, const sn_registration_t *regs, const uint64_t *handles,
                  uint32_t nregs, uint32_t max_entries, uint32_t timeout_ms, uint32_t waiter,
                  void *user, sn_call_t **ret_call)
{
        const size_t isz = SN_WIRE_SIZE_registration;
        const size_t fixed = SN_HEADER_SIZE + SN_WIRE_SIZE_process;
        struct sn_call *k;
        sn_conn_t *c;
        uint32_t per_msg;
        uint8_t *buf;
        int r;

        c = port->conn;
        r = sn__conn_usable(c);
        if (r < 0)
                return r;
        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->conn = c;
        k->user = user;
        k->port_obj = sn__port_ref(port);
        k->nregs = nregs;
        if (nregs) {
                k->regs = malloc((size_t)nregs * sizeof(*k->regs));
                k->sent_idx = malloc((size_t)nregs * sizeof(*k->sent_idx));
                k->ident = malloc((size_t)nregs * sizeof(*k->ident));
                k->attach = malloc((size_t)nregs * sizeof(*k->attach));
                k->handle = handles ? calloc(nregs, sizeof(*k->handle)) : NULL;
                if (!k->regs || !k->sent_idx || !k->ident || !k->attach ||
                    (handles && !k->handle))
                        goto nomem;
                memcpy(k->regs, regs, (size_t)nregs * sizeof(*k->regs));
        }
        for (uint32_t i = 0; i < nregs; i++) {
                sn_registration_t *g = &k->regs[i];
                struct stat st;

                g->result = 0;
                if (g->op == SN_OP_NONE)
                        continue;
                if (handles && sn__handle_current(c, handles[i])) {
                        /* By handle: no fstat (sn_port_process_ex()). */
                        k->handle[k->nsent] = handles[i] & SN_PROTO_HANDLE_MASK;
                        k->ident[k->nsent][0] = k->ident[k->nsent][1] = 0;
                        k->sent_idx[k->nsent++] = i;
                        continue;
                }
                if (handles && handles[i] && g->fd < 0) {
                        g->result = g->op == SN_OP_ENABLE ? -ESTALE : -ENOENT;
                        continue;
                }
                if (g->fd < 0 || fstat(g->fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
                        g->result = -ENOTSOCK;
                        continue;
                }
                k->ident[k->nsent][0] = st.st_dev;
                k->ident[k->nsent][1] = st.st_ino;
                k->sent_idx[k->nsent++] = i;
        }
        /* Which ENABLEs must pass the socket itself: those the daemon may not know yet. */
        pthread_mutex_lock(&c->lock);
        k->gen = c->gen;
        for (uint32_t i = 0; i < k->nsent; i++) {
                const sn_registration_t *g = &k->regs[k->sent_idx[i]];
                const struct sn_fdcache *e = sn__cache_get(c, g->fd);

                if (k->handle && k->handle[i]) {
                        /* Its socket, for this process's records: what the cache says. */
                        k->attach[i] = false;
                        if (e && e->port == port->id) {
                                k->ident[i][0] = e->dev;
                                k->ident[i][1] = e->ino;
                        }
                        continue;
                }
                k->attach[i] = g->op == SN_OP_ENABLE &&
                               (!e || e->port != port->id || e->dev != k->ident[i][0] ||
                                e->ino != k->ident[i][1]);
        }
        pthread_mutex_unlock(&c->lock);
        if (k->nsent > (c->limits.max_message - 52) / 4) {
                /* More than one daemon call takes (its reply holds a result for each). */
                call_destroy(k);
                return -E2BIG;
        }
        if (max_entries) {
                size_t room = c->limits.max_message -
                              sn_msg_size(SN_MSG_PROCESS_REPLY, k->nsent, 0);

                max_entries = (uint32_t)SN_MIN((size_t)max_entries, room / SN_WIRE_SIZE_entry);
                if (!max_entries) {
                        call_destroy(k);
                        return -E2BIG;
                }
                k->entries = malloc((size_t)max_entries * sizeof(*k->entries));
                if (handles)
                        k->entry_handles = malloc((size_t)max_entries *
                                                  sizeof(*k->entry_handles));
                if (!k->entries || (handles && !k->entry_handles))
                        goto nomem;
        }
        k->max_entries = max_entries;
        if (max_entries && !waiter)
                waiter = sn__thread_id(c);

        per_msg = (uint32_t)((c->limits.max_message - fixed) / isz);
        buf = sn__msgbuf(fixed + (size_t)SN_MIN(per_msg, k->nsent) * isz);
        if (!buf)
                goto nomem;

        for (bool again = false;; again = true) {
                uint64_t gen;

                r = call_send(c, k, port, buf, per_msg, timeout_ms, waiter, &gen);
                if (r == 0) {
                        /* Nobody may read when its reply comes: the application's poll of
                         * pollfd must see it. */
                        sn__conn_arm(c);
                        break;
                }
                /* A part may have gone out, but no daemon applies a call before its last
                 * part: after a resume the whole call goes to the new daemon, once. */
                int r2 = sn__conn_recover(c, gen, r);

                if (r2 == r)
                        sn__conn_violation(c); /* a part may be staged: no longer trusted */
                if (r2 < 0 || again) {
                        pthread_mutex_lock(&c->lock);
                        call_unlink(c, k);
                        pthread_mutex_unlock(&c->lock);
                        call_destroy(k);
                        return r2 == 0 || r2 == -EPIPE ? -ECONNRESET : r2;
                }
        }
        *ret_call = k;
        return 0;
nomem:
        call_destroy(k);
        return -ENOMEM;
}

SN_EXPORT int sn_port_submit(sn_port_t *port, const sn_registration_t *regs, uint32_t nregs,
                             uint32_t max_entries, uint32_t timeout_ms, uint32_t waiter,
                             void *user, sn_call_t **ret_call)
{
        if (!port || !ret_call || (nregs && !regs) || (!max_entries && timeout_ms) ||
            (waiter != 0 && waiter < SN_WAITER_MIN))
                return -EINVAL;
        return submit(port, regs, NULL, nregs, max_entries, timeout_ms, waiter, user, ret_call);
}

SN_EXPORT int sn_port_submit_ex(sn_port_t *port, const sn_registration_ex_t *regs,
                                uint32_t nregs, uint32_t max_entries, uint32_t timeout_ms,
                                uint32_t waiter, void *user, sn_call_t **ret_call)
{
        sn_registration_t *r1;
        uint64_t *h;
        int r;

        if (!port || !ret_call || (nregs && !regs) || (!max_entries && timeout_ms) ||
            (waiter != 0 && waiter < SN_WAITER_MIN))
                return -EINVAL;
        r1 = malloc(((size_t)nregs + 1) * sizeof(*r1));
        h = malloc(((size_t)nregs + 1) * sizeof(*h));
        if (!r1 || !h) {
                free(r1);
                free(h);
                return -ENOMEM;
        }
        for (uint32_t i = 0; i < nregs; i++) {
                r1[i] = regs[i].reg;
                h[i] = regs[i].handle;
        }
        r = submit(port, r1, h, nregs, max_entries, timeout_ms, waiter, user, ret_call);
        free(r1);
        free(h);
        return r;
}

SN_EXPORT int sn_call_handles(const sn_call_t *k, const uint64_t **ret_handles)
{
        if (!k || !k->collected || !ret_handles)
                return -EINVAL;
        *ret_handles = k->entry_handles;
        return k->result > 0 && k->entry_handles ? (int)k->nentries : 0;
}

SN_EXPORT int sn_call_result(const sn_call_t *k, const sn_entry_t **ret_entries,
                             const sn_registration_t **ret_regs)
{
        if (!k || !k->collected)
                return -EINVAL;
        if (ret_entries)
                *ret_entries = k->entries;
        if (ret_regs)
                *ret_regs = k->regs;
        return k->result;
}

SN_EXPORT void *sn_call_user(const sn_call_t *k)
{
        return k ? k->user : NULL;
}

SN_EXPORT sn_call_t *sn_call_free(sn_call_t *k)
{
        sn_conn_t *c;

        if (!k)
                return NULL;
        c = k->conn;
        pthread_mutex_lock(&c->lock);
        if (!k->completed) {
                k->abandoned = true; /* freed when its reply comes */
                pthread_mutex_unlock(&c->lock);
                return NULL;
        }
        if (!k->collected) {
                /* Completed but still on the done list: take it off. */
                struct sn_call *prev = NULL;

                for (struct sn_call *q = c->done_head; q; prev = q, q = q->next_done) {
                        if (q != k)
                                continue;
                        if (prev)
                                prev->next_done = q->next_done;
                        else
                                c->done_head = q->next_done;
                        if (c->done_tail == q)
                                c->done_tail = prev;
                        break;
                }
                if (!c->done_head)
                        efd_drain(c);
        }
        call_unlink(c, k);
        pthread_mutex_unlock(&c->lock);
        call_destroy(k);
        return NULL;
}

SN_EXPORT int sn_conn_waiter_exit(sn_conn_t *c, uint32_t waiter)
{
        uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_thread];
        struct snw_thread body = { .thread = waiter };
        int r = sn__conn_usable(c);

        if (r < 0)
                return r;
        if (waiter < SN_WAITER_MIN)
                return -EINVAL;
        /* Fire and forget, as the thread-exit handler does: id 0 is never a request's, so the
         * acknowledgement is dropped by whoever reads it, and no caller ever blocks here. */
        snw_thread_encode(sn_msg_begin(buf, SN_MSG_THREAD_EXIT, 0, 0, 0, 0, 0), &body);
        pthread_mutex_lock(&c->send_lock);
        r = sn__send(c, buf, sizeof(buf), NULL, 0);
        pthread_mutex_unlock(&c->send_lock);
        return r == -EPIPE ? -ECONNRESET : r;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * restore.c - the one reader of the daemon's state.  A re-exec, an orderly stop under a service
 * manager and a crash all leave a journal (journal.h) and the descriptors its records name;
 * this file rebuilds every session from them, the same way each time:
 *
 *   after a re-exec        the journal's memfd and every descriptor were kept across
 *                          execve(), at the numbers the records hold;
 *   after a stop or crash  the service manager hands back the journal and its boxes, whose
 *                          messages say which record names each descriptor (fdstore.c).
 *
 * Only where the descriptors come from differs (struct restore_fds).  The records are read in
 * one pass into per-type lists, and everything is found again through sorted indexes, so the
 * time grows with the number of records, never with a product of two of them.
 *
 * What a client was told or is owed comes back: connections with their queued replies, staged
 * multi-part calls and protocol version; ports with their linger time and what is left of it;
 * handles, registrations in their state (disabled, removing, a one-shot's disarm), the queue in
 * its order (socket and posted packets alike), the threads counted against concurrency, and
 * parked calls with the time they had left.  Readiness is read again from the kernel by new
 * epoll instances: a level condition is reported again as it would have been; an edge that
 * held when a re-exec or an orderly stop left (recorded then, JR_REG_HELD) was harvested before
 * (its packet is in the queue) and is not reported twice, one that began since is reported,
 * while after a crash an edge or one-shot registration may report once more
 * than it would have, never less.  The one request being handled at a crash fails with EIO,
 * unless its reply was already queued.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fdmsg.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/settings.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/registry.h"
#include "daemon/objects/session.h"
#include "daemon/objects/world.h"
#include "daemon/restore/restore.h"
#include "daemon/state/journal.h"
#include "proto/codec.h"
#include "socknotify.h"

/* ---- where the descriptors come from --------------------------------------------------- */

static bool same_file(int fd, uint64_t dev, uint64_t ino)
{
        struct stat st;

        if (!dev && !ino)
                return true;
        return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

void restore_fds_add(struct restore_fds *s, int fd, uint32_t tag)
{
        struct restore_fd *v;

        if (tag && tag < s->ntags && s->by_tag[tag] < 0) {
                s->by_tag[tag] = fd;
                return;
        }
        v = realloc(s->extra, (s->nextra + 1) * sizeof(*v));
        if (!v) {
                close(fd);
                return;
        }
        s->extra = v;
        s->extra[s->nextra++] = (struct restore_fd){ .tag = tag, .fd = fd };
        s->sorted = false;
}

static int cmp_fd_tag(const void *a, const void *b)
{
        const struct restore_fd *x = a, *y = b;

        return x->tag < y->tag ? -1 : x->tag > y->tag;
}

/* One of the other candidates for tag that is the file (dev, ino). */
static int take_extra(struct restore_fds *s, uint32_t tag, uint64_t dev, uint64_t ino)
{
        size_t lo = 0, hi = s->nextra;

        if (!s->sorted) {
                qsort(s->extra, s->nextra, sizeof(*s->extra), cmp_fd_tag);
                s->sorted = true;
        }
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s->extra[mid].tag < tag)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (; lo < s->nextra && s->extra[lo].tag == tag; lo++) {
                int fd = s->extra[lo].fd;

                if (fd >= 0 && same_file(fd, dev, ino)) {
                        s->extra[lo].fd = -1;
                        return fd;
                }
        }
        return -1;
}

int restore_fds_take(struct restore_fds *s, uint32_t tag, uint32_t number, uint64_t dev,
                     uint64_t ino)
{
        int fd;

        if (s->by_tag) {
                if (tag < s->ntags && s->by_tag[tag] >= 0 &&
                    same_file(s->by_tag[tag], dev, ino)) {
                        fd = s->by_tag[tag];
                        s->by_tag[tag] = -1;
                        return fd;
                }
                return s->nextra ? take_extra(s, tag, dev, ino) : -1;
        }
        /* Kept across execve() at its number: ours once, and never one of the daemon's own. */
        if (number > (uint32_t)INT32_MAX || (int)number < 3 || (int)number == s->keep_fd)
                return -1;
        /* The old image cleared close-on-exec on what it kept; all of ours have it. */
        fd = fcntl((int)number, F_GETFD);
        if (fd < 0 || fd & FD_CLOEXEC || !same_file((int)number, dev, ino))
                return -1;
        fd = (int)number;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
}

void restore_fds_done(struct restore_fds *s, uint32_t *ret_unused)
{
        uint32_t unused = 0;

        for (uint32_t i = 0; s->by_tag && i < s->ntags; i++)
                if (s->by_tag[i] >= 0) {
                        close(s->by_tag[i]);
                        unused++;
                }
        for (uint32_t i = 0; s->extra && i < s->nextra; i++)
                if (s->extra[i].fd >= 0) {
                        close(s->extra[i].fd);
                        unused++;
                }
        free(s->by_tag);
        free(s->extra);
        memset(s, 0, sizeof(*s));
        s->keep_fd = -1;
        if (ret_unused)
                *ret_unused += unused;
}

/* ---- the records, by type ----------------------------------------------------------------- */

struct reader {
        struct server *srv;
        const struct restore_conn_ops *ops;
        const struct jr_record *recs;
        uint32_t n; /* records, the header included */
        struct restore_fds *fds;
        struct restore_counts *out;
        bool orderly;
        uint32_t *of[JR_TYPES]; /* record numbers of each type */
        uint32_t count[JR_TYPES];
        struct idx *conns, *ports; /* sorted by serial, by id */
        uint32_t nconns, nports;
        struct timespec now;
};

struct idx {
        uint64_t key;
        uint64_t seq;
        void *obj;
        uint32_t rec;
};

static int cmp_idx(const void *a, const void *b)
{
        const struct idx *x = a, *y = b;

        if (x->key != y->key)
                return x->key < y->key ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void *lookup(const struct idx *v, uint32_t n, uint64_t key)
{
        struct idx k = { .key = key };
        const struct idx *hit;
        size_t lo = 0, hi = n;

        /* The first element of key (several may share one: blobs of a connection). */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (cmp_idx(&v[mid], &k) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        hit = lo < n && v[lo].key == key ? &v[lo] : NULL;
        return hit ? hit->obj : NULL;
}

static const struct jr_record *rec(const struct reader *rd, uint32_t i)
{
        return &rd->recs[i];
}

static int sort_records(struct reader *rd)
{
        for (uint32_t i = 1; i < rd->n; i++)
                if (rd->recs[i].type < JR_TYPES)
                        rd->count[rd->recs[i].type]++;
        for (int t = 1; t < JR_TYPES; t++) {
                rd->of[t] = calloc(rd->count[t] ? rd->count[t] : 1, sizeof(uint32_t));
                if (!rd->of[t])
                        return -ENOMEM;
                rd->count[t] = 0;
        }
        for (uint32_t i = 1; i < rd->n; i++) {
                uint8_t t = rd->recs[i].type;

                if (t && t < JR_TYPES)
                        rd->of[t][rd->count[t]++] = i;
        }
        return 0;
}

/* An index of the restored ports by id. */
static struct idx *index_ports(struct server *srv, uint32_t *ret_n)
{
        struct sn_list *pos;
        uint32_t n = 0;
        struct idx *v;

        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next)
                n++;
        v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return NULL;
        n = 0;
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next, n++) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                v[n] = (struct idx){ .key = p->id, .obj = p };
        }
        qsort(v, n, sizeof(*v), cmp_idx);
        *ret_n = n;
        return v;
}

static struct session *conn_of(const struct reader *rd, uint64_t serial)
{
        return lookup(rd->conns, rd->nconns, serial);
}

static struct port *port_of(const struct reader *rd, uint32_t id)
{
        return lookup(rd->ports, rd->nports, id);
}

/* ---- connections -------------------------------------------------------------------------- */

/* A limit as the journal holds it, if it is one a daemon could have announced (the ranges of
 * --max-message and --max-fds), else 0. */
static uint32_t journal_limit(const uint8_t *p, uint32_t min, uint32_t max)
{
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return v >= min && v <= max ? v : 0;
}

/*
 * The limits a connection's handshake announced, which its client sized its buffers by: as its
 * record holds them, else as the journal's header says the image that wrote it ran with (for a
 * connection whose record has none), else 0: the running image's apply, all a journal of a
 * daemon before they were recorded can give.
 */
static void conn_limits(const struct reader *rd, const struct jr_record *r,
                        uint32_t *ret_max_message, uint32_t *ret_max_fds)
{
        const struct jr_header *h = (const void *)rd->recs;
        const uint32_t lo = SETTINGS_MAX_MESSAGE_MIN, hi = SETTINGS_MAX_MESSAGE_MAX;
        uint32_t m = journal_limit(r->data + JR_CONN_LIMITS, lo, hi);
        uint32_t f = journal_limit(r->data + JR_CONN_LIMITS + 4, 1, SN_PROTO_MAX_FDS);

        *ret_max_message = m ? m : journal_limit((const uint8_t *)&h->max_message, lo, hi);
        *ret_max_fds = f ? f : journal_limit((const uint8_t *)&h->max_fds, 1, SN_PROTO_MAX_FDS);
}

/* Every connection, by the layer that owns connections (ops->adopt), indexed by serial. */
static int restore_conns(struct reader *rd)
{
        struct server *srv = rd->srv;

        rd->conns = calloc(rd->count[JR_CONN] + 1, sizeof(*rd->conns));
        if (!rd->conns)
                return -ENOMEM;
        for (uint32_t k = 0; k < rd->count[JR_CONN]; k++) {
                uint32_t i = rd->of[JR_CONN][k];
                const struct jr_record *r = rec(rd, i);
                struct session *c;
                uint32_t max_message, max_fds;
                int fd = restore_fds_take(rd->fds, i, r->u32d, r->dev, r->ino);

                if (fd < 0)
                        continue;
                conn_limits(rd, r, &max_message, &max_fds);
                c = rd->ops->adopt(srv, fd, r, max_message, max_fds);
                if (!c) {
                        close(fd);
                        continue;
                }
                rd->conns[rd->nconns++] = (struct idx){ .key = r->serial, .obj = c };
                srv->next_conn_serial = SN_MAX(srv->next_conn_serial, r->serial + 1);
                rd->out->conns++;
        }
        qsort(rd->conns, rd->nconns, sizeof(*rd->conns), cmp_idx);
        return 0;
}

/*
 * The rings of the connections that had them (version 3): three descriptors each, found by
 * the connection's serial.  A connection that used rings and cannot have them back is ended:
 * its client writes its requests into the SQ and would wait forever on a daemon that reads only
 * the socket; ended, it sees the end of its connection and makes a new one.
 */
static void restore_rings(struct reader *rd)
{
        uint32_t n = rd->count[JR_RING], k = 0;
        struct idx *v = calloc(n + 1, sizeof(*v));

        for (uint32_t i = 0; v && i < n; i++) {
                const struct jr_record *r = rec(rd, rd->of[JR_RING][i]);

                v[i] = (struct idx){ .key = r->serial, .seq = r->u8a, .rec = rd->of[JR_RING][i] };
        }
        if (v)
                qsort(v, n, sizeof(*v), cmp_idx);
        while (v && k < n) {
                struct session *c = conn_of(rd, v[k].key);
                int fds[3] = { -1, -1, -1 };
                bool stalled = false, whole = true;
                uint32_t e = k;

                while (e < n && v[e].key == v[k].key)
                        e++;
                for (uint32_t i = k; i < e; i++) {
                        const struct jr_record *r = rec(rd, v[i].rec);
                        int fd = restore_fds_take(rd->fds, v[i].rec, r->u32d, r->dev, r->ino);

                        if (fd >= 0 && r->u8a < 3 && fds[r->u8a] < 0) {
                                fds[r->u8a] = fd;
                                if (r->u8a == 0)
                                        stalled = r->u8b;
                        } else if (fd >= 0) {
                                close(fd);
                        }
                }
                for (int i = 0; i < 3; i++)
                        whole = whole && fds[i] >= 0;
                if (c && whole && rd->ops->ring(c, fds, stalled) == 0) {
                        v[k].obj = c;
                } else if (!whole || !c) {
                        for (int i = 0; i < 3; i++)
                                if (fds[i] >= 0)
                                        close(fds[i]);
                }
                k = e;
        }
        for (uint32_t i = 0; i < rd->count[JR_CONN]; i++) {
                const struct jr_record *r = rec(rd, rd->of[JR_CONN][i]);
                struct session *c = conn_of(rd, r->serial);

                if (c && r->u8b & JR_CONN_RING && !(v && lookup(v, n, r->serial)))
                        session_kill(c, "its rings could not be restored");
        }
        free(v);
}

/* Joins a chain of blobs from head into a new buffer (*ret_len bytes); NULL when the chain is
 * not whole (its lengths, offsets, owner or types disagree). */
static uint8_t *join_blobs(const struct reader *rd, uint32_t head, uint8_t type, size_t *ret_len)
{
        const struct jr_blob *b = (const struct jr_blob *)rec(rd, head);
        uint32_t len = b->len, off = 0, i = head;
        uint64_t serial = b->serial;
        bool whole = false;
        uint8_t *buf;

        if (len > (64u << 20) || !(buf = malloc(len ? len : 1)))
                return NULL;
        for (uint32_t steps = 0; i && i < rd->n && steps <= len / JR_BLOB_DATA + 1; steps++) {
                b = (const struct jr_blob *)rec(rd, i);
                if (b->type != type || b->serial != serial || b->off != off ||
                    b->n > JR_BLOB_DATA || b->n > len - off)
                        break;
                memcpy(buf + off, b->data, b->n);
                off += b->n;
                if (b->last) {
                        whole = off == len;
                        break;
                }
                i = b->next;
        }
        /* Only a chain that ends, checked record by record, where its length says. */
        if (!whole) {
                free(buf);
                return NULL;
        }
        *ret_len = len;
        return buf;
}

/* The heads of the chains of type (off 0, first of their message), by serial and seq. */
static struct idx *blob_heads(struct reader *rd, uint8_t type, uint32_t *ret_n)
{
        struct idx *v = calloc(rd->count[type] ? rd->count[type] : 1, sizeof(*v));
        uint32_t n = 0;

        if (!v)
                return NULL;
        for (uint32_t k = 0; k < rd->count[type]; k++) {
                uint32_t i = rd->of[type][k];
                const struct jr_blob *b = (const struct jr_blob *)rec(rd, i);

                if (b->off == 0)
                        v[n++] = (struct idx){ .key = b->serial, .seq = b->seq, .rec = i };
        }
        qsort(v, n, sizeof(*v), cmp_idx);
        *ret_n = n;
        return v;
}

/* Queued replies, each connection's in their order. */
static void restore_output(struct reader *rd)
{
        uint32_t n;
        struct idx *v = blob_heads(rd, JR_OUT, &n);

        for (uint32_t k = 0; v && k < n; k++) {
                struct session *c = conn_of(rd, v[k].key);
                size_t len;
                uint8_t *buf = c ? join_blobs(rd, v[k].rec, JR_OUT, &len) : NULL;

                if (!buf)
                        continue;
                if (len >= SN_HEADER_SIZE && rd->ops->output(c, buf, len) == 0)
                        rd->out->replies++;
                free(buf);
        }
        free(v);
}

/* A connection's multi-part call, as far as it was received. */
static void restore_stage(struct reader *rd, struct session *c, const struct jr_record *r,
                          const struct idx *heads, uint32_t nheads, const struct idx *sfds,
                          uint32_t nsfds)
{
        uint8_t *items = NULL;
        size_t size = 0;
        int *fds = NULL;
        uint32_t nfds = 0, nitems;
        size_t lo = 0;
        bool whole = true;

        /* Its parts' items, in the order they came. */
        while (lo < nheads && heads[lo].key < r->serial)
                lo++;
        for (; lo < nheads && heads[lo].key == r->serial && whole; lo++) {
                size_t len;
                uint8_t *part = join_blobs(rd, heads[lo].rec, JR_STAGE, &len), *grown;

                grown = part ? realloc(items, size + len + 1) : NULL;
                if (!grown) {
                        whole = false;
                        free(part);
                        break;
                }
                items = grown;
                memcpy(items + size, part, len);
                size += len;
                free(part);
        }
        /* Its descriptors, by index; a missing one leaves the call incomplete. */
        for (lo = 0; lo < nsfds && sfds[lo].key < r->serial; lo++)
                ;
        for (size_t k = lo; k < nsfds && sfds[k].key == r->serial; k++)
                nfds++;
        fds = calloc(nfds ? nfds : 1, sizeof(*fds));
        if (!fds)
                whole = false;
        for (uint32_t k = 0; k < nfds && fds; k++) {
                const struct jr_record *x = rec(rd, sfds[lo + k].rec);

                fds[k] = x->u32a == k ? restore_fds_take(rd->fds, sfds[lo + k].rec, x->u32b,
                                                         x->dev, x->ino)
                                      : -1;
                if (fds[k] < 0)
                        whole = false;
        }
        nitems = (uint32_t)(size / SN_WIRE_SIZE_registration);
        if (!whole || size % SN_WIRE_SIZE_registration ||
            rd->ops->stage(c, r->u32b, (uint32_t)r->u64a, (uint32_t)(r->u64a >> 32), items,
                           nitems, fds, nfds) < 0) {
                /* Taken by ops->stage() on success, which closes what it was given when it
                 * fails; closed here when the call was not whole. */
                if (!whole)
                        for (uint32_t k = 0; fds && k < nfds; k++)
                                sn_close(fds[k]);
                session_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                rd->ops->discard(c, r->u32b);
                rd->out->interrupted++;
        } else {
                rd->out->staged++;
        }
        free(items);
        free(fds);
}

/* Multi-part calls, and the one request being handled when the daemon died. */
static void restore_calls(struct reader *rd)
{
        uint32_t nheads = 0, nsfds = 0;
        struct idx *heads = blob_heads(rd, JR_STAGE, &nheads);
        struct idx *sfds = calloc(rd->count[JR_STAGED_FD] + 1, sizeof(*sfds));

        for (uint32_t k = 0; sfds && k < rd->count[JR_STAGED_FD]; k++) {
                uint32_t i = rd->of[JR_STAGED_FD][k];

                sfds[nsfds++] = (struct idx){ .key = rec(rd, i)->serial,
                                              .seq = rec(rd, i)->u32a, .rec = i };
        }
        if (sfds)
                qsort(sfds, nsfds, sizeof(*sfds), cmp_idx);
        for (uint32_t k = 0; k < rd->count[JR_CONN]; k++) {
                const struct jr_record *r = rec(rd, rd->of[JR_CONN][k]);
                struct session *c = conn_of(rd, r->serial);
                bool staged = r->u8b & JR_CONN_STAGED;

                if (!c)
                        continue;
                if (r->u8a && (!staged || r->u32a != r->u32b) && !rd->ops->answered(c, r->u32a)) {
                        /* Its request was being handled when the daemon died: whether it
                         * took effect is unknown, so it fails rather than hang. */
                        session_reply_error(c, r->u32a, EIO);
                        rd->out->interrupted++;
                }
                if (!staged)
                        continue;
                if (r->u8a && r->u32a == r->u32b) {
                        /* A part of it was being received: the parts were held, not applied;
                         * the call fails once and its remaining parts are dropped. */
                        session_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                        rd->ops->discard(c, r->u32b);
                        rd->out->interrupted++;
                        continue;
                }
                if (heads && sfds)
                        restore_stage(rd, c, r, heads, nheads, sfds, nsfds);
        }
        free(heads);
        free(sfds);
}

/* ---- ports and handles -------------------------------------------------------------------- */

static void restore_port(struct reader *rd, const struct jr_record *r, const struct idx *names,
                         uint32_t nnames)
{
        struct server *srv = rd->srv;
        char name[256];
        size_t len = SN_MIN(r->u32d, 255u), lo = 0;
        struct port *p;
        int epfd;

        memcpy(name, r->data, SN_MIN(len, sizeof(r->data)));
        /* The port's name records: the first of its id in the sorted index, by bisection (a
         * walk from the start for every port made a restore quadratic in named ports). */
        for (size_t hi = nnames; lo < hi;) {
                size_t mid = lo + (hi - lo) / 2;

                if (names[mid].key < r->u32a)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (; lo < nnames && names[lo].key == r->u32a; lo++) {
                const struct jr_record *x = rec(rd, names[lo].rec);

                if (x->u32b < len && x->u32c <= sizeof(x->data) && x->u32b + x->u32c <= len)
                        memcpy(name + x->u32b, x->data, x->u32c);
        }
        name[len] = 0;
        if (len != strlen(name))
                return; /* a name with a hole: not one the daemon could have written */
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0 || !(p = port_adopt(srv, r->u32a, len ? name : NULL, (uid_t)r->u32b,
                                         r->u32c, epfd, r->u64b))) {
                sn_close(epfd);
                return;
        }
        if (len) {
                p->linger_ms = r->u32e;
                /* Whether it lingered, and until when: a handle restored ends it, and one
                 * without is armed again for what is left. */
                p->lingering = r->u64a != 0;
                p->linger_deadline.tv_sec = (time_t)(r->u64a / 1000000000u);
                p->linger_deadline.tv_nsec = (long)(r->u64a % 1000000000u);
        }
        rd->out->ports++;
}

static int restore_ports(struct reader *rd)
{
        struct idx *names = calloc(rd->count[JR_NAME] + 1, sizeof(*names));
        struct idx *seen = calloc(rd->count[JR_PORT] + 1, sizeof(*seen));
        uint32_t nnames = 0;

        if (!names || !seen) {
                free(names);
                free(seen);
                return -ENOMEM;
        }
        for (uint32_t k = 0; k < rd->count[JR_NAME]; k++) {
                uint32_t i = rd->of[JR_NAME][k];

                names[nnames++] = (struct idx){ .key = rec(rd, i)->u32a, .rec = i };
        }
        qsort(names, nnames, sizeof(*names), cmp_idx);
        /* Ports by id, so that a duplicate id is seen without a walk over the ports. */
        for (uint32_t k = 0; k < rd->count[JR_PORT]; k++) {
                uint32_t i = rd->of[JR_PORT][k];

                seen[k] = (struct idx){ .key = rec(rd, i)->u32a, .seq = k, .rec = i };
        }
        qsort(seen, rd->count[JR_PORT], sizeof(*seen), cmp_idx);
        for (uint32_t k = 0; k < rd->count[JR_PORT]; k++)
                if (!k || seen[k].key != seen[k - 1].key)
                        restore_port(rd, rec(rd, seen[k].rec), names, nnames);
        free(names);
        free(seen);
        rd->ports = index_ports(rd->srv, &rd->nports);
        return rd->ports ? 0 : -ENOMEM;
}

static void restore_handles(struct reader *rd)
{
        struct server *srv = rd->srv;

        for (uint32_t k = 0; k < rd->count[JR_HANDLE]; k++) {
                const struct jr_record *r = rec(rd, rd->of[JR_HANDLE][k]);
                struct session *c = conn_of(rd, r->serial);
                struct port *p = port_of(rd, r->u32a);

                if (c && p && !port_handle_of(c, p->id))
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
                rd->out->ports--;
        }
        free(rd->ports);
        rd->ports = index_ports(srv, &rd->nports);
}

/* ---- registrations, the queue, runners ---------------------------------------------------- */

/* One registration in its state; its queued packet and a REMOVE wait for the queue's turn. */
static struct reg *restore_reg(struct reader *rd, uint32_t i)
{
        const struct jr_record *r = rec(rd, i);
        struct snw_registration it = { 0 };
        struct session *c = r->serial ? conn_of(rd, r->serial) : NULL;
        struct port *p = port_of(rd, r->u32a);
        struct reg *g;
        bool lingers = p && p->name && p->linger_ms;
        int fd = restore_fds_take(rd->fds, i, r->u32e, r->dev, r->ino);
        uint64_t handle;
        uint32_t err;

        /* Without an owner (serial 0): kept by its port, which must have a name.  On a port
         * with a linger time a creator need not hold the port (it closed its handle before the
         * port had a linger time and lives on), and one that is gone left it ownerless. */
        if (fd < 0 || !p || (r->serial && !lingers && (!c || !port_handle_of(c, p->id))) ||
            (!r->serial && !p->name)) {
                sn_close(fd);
                rd->out->dropped++;
                return NULL;
        }
        it.key = r->u64a;
        it.dev = r->dev;
        it.ino = r->ino;
        it.filter = (uint16_t)r->u32c;
        it.trigger = r->u8a;
        it.op = SN_OP_ENABLE;
        it.client_fd = r->u32b;
        /* It keeps its handle (clients hold it), unless its slot lies far beyond what the
         * journal's registrations can have used. */
        memcpy(&handle, r->data + 8, sizeof(handle));
        if ((uint32_t)handle < 2 * rd->count[JR_REG] + 4096)
                rd->srv->claim_handle = handle;
        /* After a re-exec or an orderly stop, what held then was harvested into the queue:
         * only that is trimmed from the first reports (reg_configure()).  A journal left by an
         * image that did not record it trims all that holds, as before. */
        rd->srv->restore_held_known = rd->orderly && r->data[JR_REG_HELD + 1];
        rd->srv->restore_held = r->data[JR_REG_HELD];
        err = reg_apply(p, c, &it, fd, NULL);
        rd->srv->claim_handle = 0;
        rd->srv->restore_held_known = false;
        if (err) {
                rd->out->dropped++;
                return NULL;
        }
        g = registry_find(&rd->srv->registry, r->dev, r->ino);
        if (!g || g->port != p)
                return NULL;
        rd->out->regs++;
        if (r->u8b == REG_DISABLED) {
                it.op = SN_OP_DISABLE;
                reg_apply(p, c, &it, -1, NULL);
        } else if (r->u8b == REG_ENABLED && r->u8c & 1 && g->trigger & SN_TRIGGER_ONESHOT) {
                /* A one-shot that fired stays disarmed until its next ENABLE. */
                reg_disarm(g);
        }
        return g;
}

struct queued {
        uint64_t seq;
        uint32_t rec;
        struct reg *reg; /* NULL: a posted packet */
};

static int cmp_queued(const void *a, const void *b)
{
        const struct queued *x = a, *y = b;

        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void restore_queue(struct reader *rd, struct queued *q, uint32_t nq)
{
        qsort(q, nq, sizeof(*q), cmp_queued);
        for (uint32_t k = 0; k < nq; k++) {
                const struct jr_record *r = rec(rd, q[k].rec);
                uint64_t epoch;
                struct port *p;

                memcpy(&epoch, r->data, sizeof(epoch));
                if (!q[k].reg) {
                        p = port_of(rd, r->u32a);
                        if (p && port_adopt_posted(p, r->u64a, r->u64b, r->u32b, epoch) == 0)
                                rd->out->posted++;
                        continue;
                }
                struct reg *g = q[k].reg;
                struct snw_registration it = { .key = g->key, .dev = g->dev, .ino = g->ino,
                                               .op = SN_OP_REMOVE };
                uint32_t ev = r->u32d & ~(uint32_t)SN_EVENT_REMOVE;

                if (r->u8b == REG_REMOVING) {
                        /* Its REMOVE packet, in its place: the last one for its key. */
                        reg_apply(g->port, g->creator, &it, -1, NULL);
                        if (ev)
                                port_queue_reg(g->port, g, ev);
                } else if (ev) {
                        port_queue_reg(g->port, g, ev);
                        g->pkt.epoch = epoch;
                        rd->out->queued++;
                }
        }
}

static int restore_regs(struct reader *rd)
{
        uint32_t nreg = rd->count[JR_REG], nq = 0;
        struct queued *q = calloc((size_t)nreg + rd->count[JR_POSTED] + 1, sizeof(*q));

        if (!q)
                return -ENOMEM;
        for (uint32_t k = 0; k < nreg; k++) {
                uint32_t i = rd->of[JR_REG][k];
                const struct jr_record *r = rec(rd, i);
                struct reg *g = restore_reg(rd, i);

                if (g && (r->u32d || r->u8b == REG_REMOVING))
                        q[nq++] = (struct queued){ .seq = r->u64b, .rec = i, .reg = g };
        }
        for (uint32_t k = 0; k < rd->count[JR_POSTED]; k++) {
                uint32_t i = rd->of[JR_POSTED][k];

                q[nq++] = (struct queued){ .seq = rec(rd, i)->serial, .rec = i };
        }
        restore_queue(rd, q, nq);
        free(q);
        for (uint32_t k = 0; k < rd->count[JR_RUNNER]; k++) {
                const struct jr_record *r = rec(rd, rd->of[JR_RUNNER][k]);
                struct session *c = conn_of(rd, r->serial);
                struct port *p = port_of(rd, r->u32a);

                if (c && p && port_handle_of(c, p->id))
                        port_mark_restored(p, c, r->u32b);
        }
        return 0;
}

/* ---- parked calls ----------------------------------------------------------------------- */

/* Fills res (nres) from a wait's record and its chain of further results; false if the chain
 * is not whole. */
static bool wait_results(const struct reader *rd, const struct jr_record *r, uint32_t *res,
                         uint32_t nres)
{
        uint32_t nz = (uint32_t)(r->u64b >> 32), i = (uint32_t)r->dev, steps = 0;

        for (;;) {
                for (uint32_t k = 0; k < nz && k < JR_DATA / 8; k++) {
                        uint32_t idx, err;

                        memcpy(&idx, r->data + k * 8, 4);
                        memcpy(&err, r->data + k * 8 + 4, 4);
                        if (idx >= nres)
                                return false;
                        res[idx] = err;
                }
                if (!i)
                        return true;
                if (i >= rd->n || ++steps > nres || rd->recs[i].type != JR_RESULTS)
                        return false;
                r = rec(rd, i);
                nz = r->u32c;
                i = r->u32e;
        }
}

static void restore_waits(struct reader *rd)
{
        for (uint32_t k = 0; k < rd->count[JR_WAIT]; k++) {
                const struct jr_record *r = rec(rd, rd->of[JR_WAIT][k]);
                uint32_t nres = (uint32_t)r->u64b, left = SN_PROTO_INFINITE, *res = NULL;
                struct session *c = conn_of(rd, r->serial);
                struct port *p = port_of(rd, r->u32a);

                if (!c)
                        continue;
                if (!p || !port_handle_of(c, p->id) || r->u8a ||
                    nres > limits_call_items_of(c->max_message) ||
                    !(res = calloc(nres ? nres : 1, sizeof(*res))) ||
                    !wait_results(rd, r, res, nres)) {
                        /* Its per-registration results are not all known: it fails. */
                        session_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                        rd->out->interrupted++;
                        free(res);
                        continue;
                }
                if (r->u64a) {
                        /* What is left of its timeout, rounded up: the new image times it
                         * from now, and a wait never ends before its deadline (row 20). */
                        int64_t ms = ((int64_t)r->u64a - ((int64_t)rd->now.tv_sec * 1000000000 +
                                                          rd->now.tv_nsec) + 999999) / 1000000;

                        left = ms < 1 ? 1 : (uint32_t)SN_MIN(ms, (int64_t)0xfffffffe);
                }
                if (port_wait(p, c, r->u32b, r->u32c, r->u32d, left, r->u8b, res, nres) < 0)
                        session_reply_process(c, r->u32b, EIO, NULL, 0, NULL, 0);
                else
                        rd->out->waits++;
                free(res);
        }
}

/* ---- the whole ---------------------------------------------------------------------------- */

int restore_check(const uint8_t *journal, size_t size)
{
        const struct jr_header *h = (const void *)journal;

        if (size < JR_RECORD || memcmp(h->magic, JR_MAGIC, 8) ||
            h->version < JR_VERSION_OLDEST || h->version > JR_VERSION ||
            h->record_size != JR_RECORD || h->capacity < 1)
                return -EBADMSG;
        return 0;
}

int restore_listen(const uint8_t *journal, size_t size, struct restore_fds *fds,
                   bool *ret_owns_path)
{
        const struct jr_record *recs = (const void *)journal;
        uint32_t n;

        if (restore_check(journal, size) < 0)
                return -EBADMSG;
        n = (uint32_t)SN_MIN((size_t)((const struct jr_header *)journal)->capacity,
                             size / JR_RECORD);
        for (uint32_t i = 1; i < n; i++)
                if (recs[i].type == JR_LISTEN) {
                        int fd = restore_fds_take(fds, i, recs[i].u32a, recs[i].dev,
                                                  recs[i].ino);

                        if (fd < 0)
                                continue;
                        *ret_owns_path = recs[i].u8a;
                        return fd;
                }
        return -ENOENT;
}

int restore_state(struct server *srv, const struct restore_conn_ops *ops,
                  const uint8_t *journal, size_t size, struct restore_fds *fds,
                  struct restore_counts *out)
{
        const struct jr_header *h = (const void *)journal;
        struct reader rd = { .srv = srv, .ops = ops, .recs = (const void *)journal, .fds = fds,
                             .out = out };
        int r;

        memset(out, 0, sizeof(*out));
        if (restore_check(journal, size) < 0)
                return -EBADMSG;
        rd.n = (uint32_t)SN_MIN((size_t)h->capacity, size / JR_RECORD);
        rd.orderly = h->orderly;
        out->orderly = h->orderly;
        clock_gettime(CLOCK_MONOTONIC, &rd.now);
        r = sort_records(&rd);
        if (r < 0)
                goto out;
        srv->restoring = true;
        /* After a crash, edges that hold are reported again (at least once); after a re-exec
         * or an orderly stop they were harvested into the queue first. */
        srv->restoring_crash = !rd.orderly;
        srv->next_port_id = SN_MAX(srv->next_port_id, h->next_port_id);
        memcpy(srv->port_id_key, h->port_id_key, sizeof(srv->port_id_key));
        srv->next_conn_serial = SN_MAX(srv->next_conn_serial, h->next_conn_serial);
        /* The caller counts this start as a re-exec or a restore. */
        srv->counters.reexecs = h->reexecs;
        srv->counters.restores = h->restores;
        if (h->serving_since > 0)
                srv->serving_since = h->serving_since;
        r = restore_conns(&rd);
        if (r < 0)
                goto out;
        restore_rings(&rd);
        /* Replies owed first: whatever is sent from here on comes after them. */
        restore_output(&rd);
        restore_calls(&rd);
        r = restore_ports(&rd);
        if (r < 0)
                goto out;
        restore_handles(&rd);
        r = rd.ports ? restore_regs(&rd) : -ENOMEM;
        if (r < 0)
                goto out;
        restore_waits(&rd);
out:
        srv->restoring = false;
        srv->restoring_crash = false;
        for (int t = 0; t < JR_TYPES; t++)
                free(rd.of[t]);
        free(rd.conns);
        free(rd.ports);
        for (struct sn_list *pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->nwaiters && p->nqueued)
                        port_dispatch(p);
        }
        return r;
}

void restore_sweep(const uint8_t *journal, size_t size, struct restore_fds *fds,
                   uint32_t *ret_unused)
{
        const struct jr_record *recs = (const void *)journal;
        uint32_t n;

        if (fds->by_tag || restore_check(journal, size) < 0)
                return;
        n = (uint32_t)SN_MIN((size_t)((const struct jr_header *)journal)->capacity,
                             size / JR_RECORD);
        for (uint32_t i = 1; i < n; i++) {
                const struct jr_record *r = &recs[i];
                uint32_t num = r->type == JR_CONN       ? r->u32d
                               : r->type == JR_REG      ? r->u32e
                               : r->type == JR_STAGED_FD ? r->u32b
                               : r->type == JR_LISTEN   ? r->u32a
                               : r->type == JR_RING     ? r->u32d
                                                        : UINT32_MAX;
                int fd = restore_fds_take(fds, i, num, 0, 0);

                /* Taken here means no object took it: it was kept for nothing. */
                if (fd >= 0) {
                        close(fd);
                        if (ret_unused)
                                (*ret_unused)++;
                }
        }
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * journal.c - the daemon's state (always current under a descriptor store, written for a
 * re-exec without one): records in a shared memfd, descriptors in
 * boxes.  Nothing here knows what a record means (the persist.c files write them, restore.c
 * reads them).
 *
 * The journal  a memfd, shared-mapped, of fixed 128-byte records; record 0 is the header.  A
 *              record is written with plain stores into the mapping: nothing costs a system
 *              call, and when the process dies the kernel keeps the pages for whoever holds the
 *              memfd (the service manager's store, or the next image after execve()).
 * The boxes    only with a descriptor store: every descriptor a record names is sent with
 *              SCM_RIGHTS into a Unix stream socket pair whose receiving end is stored
 *              ("snlive.GEN.K"), at most 253 per message, each message carrying the numbers of
 *              the records that name them (the tags).  A descriptor in flight stays open while
 *              its box does.  Sends are batched per turn of the loop and always made before the
 *              reply that reports them.  A dropped descriptor must close at once (rule L1): its
 *              box is rebuilt without it (the survivors join the open box, then the old box is
 *              removed from the store, which closes the dropped one), drops of the last 2 ms at
 *              once.  So every box but the open one is full, and the store's entries follow the
 *              descriptors held, never the drops.
 *
 * Without a store there are no boxes: the descriptors are this process's, and a re-exec keeps
 * them across execve() by their numbers, which the records hold too.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/fdmsg.h"
#include "common/list.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/state/journal.h"

#define JR_INITIAL 1024u
/* Drops are gathered this long before boxes are rebuilt: the close a peer sees is that late at
 * most, and a client dropping sockets fast costs the service manager a few messages per box
 * and interval, not per socket. */
#define REBUILD_MS 2

struct box {
        struct sn_list link;         /* in journal->boxes */
        struct sn_list send_link;    /* in journal->to_send while members wait to be sent */
        struct sn_list rebuild_link; /* in journal->to_rebuild while dropped members are in it */
        uint32_t id;
        int send_fd; /* our end; -1 once the box is full */
        int recv_fd; /* the stored end, held until it is stored */
        bool stored;
        uint32_t n, nsent;
        struct {
                int fd;              /* -1: dropped */
                uint32_t tag;        /* the record naming it */
                struct box_ref *ref; /* the owner's reference, moved when rebuilt */
        } m[JR_BOX_MAX];
};

struct journal {
        int fd;
        uint8_t *map;
        uint32_t capacity;
        uint32_t *free_idx; /* stack of free record numbers */
        uint32_t nfree;
        uint32_t gen;
        bool store;          /* boxes, and everything kept in the descriptor store */
        bool committed;      /* the journal itself is in the store */
        uint32_t store_max;
        struct sn_list boxes;
        uint32_t nboxes;
        struct box *open;
        struct sn_list to_send, to_rebuild;
        struct event *flush_ev;   /* sends, at the end of the turn (or before a reply) */
        struct event *rebuild_ev; /* rebuilds, REBUILD_MS after the first drop */
        bool flush_armed, rebuild_armed;
        bool failed; /* logged once */
};

static void fail(struct journal *j, const char *what, int err)
{
        if (!j->failed)
                log_error("state: %s: %s; a crash now would lose sessions", what, strerror(err));
        j->failed = true;
}

bool journal_failed(const struct journal *j)
{
        return j && j->failed;
}

struct jr_header *journal_header(struct journal *j)
{
        return (struct jr_header *)j->map;
}

struct jr_record *journal_rec(struct journal *j, uint32_t i)
{
        return (struct jr_record *)(j->map + (size_t)i * JR_RECORD);
}

struct jr_blob *journal_blob(struct journal *j, uint32_t i)
{
        return (struct jr_blob *)(j->map + (size_t)i * JR_RECORD);
}

int journal_fd(const struct journal *j)
{
        return j->fd;
}

bool journal_stored(const struct journal *j)
{
        return j->store;
}

/* ---- records ------------------------------------------------------------------------------ */

static int grow(struct journal *j)
{
        uint32_t cap = j->capacity * 2;
        uint32_t *f;
        void *m;

        if (cap <= j->capacity || cap > UINT32_MAX / 2)
                return -ENOSPC;
        f = realloc(j->free_idx, cap * sizeof(*f));
        if (!f)
                return -ENOMEM;
        j->free_idx = f;
        if (ftruncate(j->fd, (off_t)cap * JR_RECORD) < 0)
                return -errno;
        m = mremap(j->map, (size_t)j->capacity * JR_RECORD, (size_t)cap * JR_RECORD,
                   MREMAP_MAYMOVE);
        if (m == MAP_FAILED)
                return -errno;
        j->map = m;
        for (uint32_t i = cap - 1; i >= j->capacity; i--)
                j->free_idx[j->nfree++] = i;
        j->capacity = cap;
        journal_header(j)->capacity = cap;
        return 0;
}

uint32_t journal_new(struct journal *j, uint8_t type)
{
        uint32_t i;
        int r;

        if (!j)
                return 0;
        if (!j->nfree && (r = grow(j)) < 0) {
                fail(j, "growing the journal", -r);
                return 0;
        }
        i = j->free_idx[--j->nfree];
        memset(journal_rec(j, i), 0, JR_RECORD);
        journal_rec(j, i)->type = type;
        return i;
}

void journal_free(struct journal *j, uint32_t *i)
{
        if (!j || !*i)
                return;
        journal_rec(j, *i)->type = JR_FREE;
        j->free_idx[j->nfree++] = *i;
        *i = 0;
}

void journal_free_blobs(struct journal *j, uint32_t *i)
{
        uint32_t k = *i;

        while (j && k) {
                uint32_t next = journal_blob(j, k)->next;

                journal_free(j, &k);
                k = next;
        }
        *i = 0;
}

uint32_t journal_put_blobs(struct journal *j, uint8_t type, uint64_t serial, uint64_t seq,
                           const uint8_t *p, size_t len)
{
        uint32_t first = 0, prev = 0;
        size_t off = 0;

        if (!j)
                return 0;
        do {
                size_t n = SN_MIN(len - off, (size_t)JR_BLOB_DATA);
                uint32_t i = journal_new(j, type);
                struct jr_blob *b;

                if (!i) {
                        journal_free_blobs(j, &first);
                        return 0;
                }
                b = journal_blob(j, i);
                b->serial = serial;
                b->seq = seq;
                b->len = (uint32_t)len;
                b->off = (uint32_t)off;
                b->n = (uint16_t)n;
                memcpy(b->data, p + off, n);
                off += n;
                b->last = off == len;
                if (prev)
                        journal_blob(j, prev)->next = i;
                else
                        first = i;
                prev = i;
        } while (off < len);
        return first;
}

/* ---- boxes -------------------------------------------------------------------------------- */

static void box_name(const struct journal *j, const struct box *b, char *out, size_t n)
{
        snprintf(out, n, "snlive.%u.%u", j->gen, b->id);
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

static void schedule_send(struct journal *j, struct box *b)
{
        if (sn_list_empty(&b->send_link))
                sn_list_add_tail(&j->to_send, &b->send_link);
        if (!j->flush_armed) {
                j->flush_armed = true;
                event_active(j->flush_ev, 0, 0);
        }
}

static void schedule_rebuild(struct journal *j, struct box *b)
{
        static const struct timeval tv = { 0, REBUILD_MS * 1000 };

        if (sn_list_empty(&b->rebuild_link))
                sn_list_add_tail(&j->to_rebuild, &b->rebuild_link);
        if (!j->rebuild_armed && evtimer_add(j->rebuild_ev, &tv) == 0)
                j->rebuild_armed = true;
}

static struct box *box_new(struct journal *j)
{
        struct box *b = calloc(1, sizeof(*b));
        int sv[2];

        if (!b)
                return NULL;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                free(b);
                return NULL;
        }
        b->id = j->nboxes++;
        journal_header(j)->boxes = j->nboxes;
        b->send_fd = sv[0];
        b->recv_fd = sv[1];
        sn_list_init(&b->send_link);
        sn_list_init(&b->rebuild_link);
        sn_list_add_tail(&j->boxes, &b->link);
        return b;
}

static void box_free(struct journal *j, struct box *b, bool forget_it)
{
        char name[64];

        if (b->stored && forget_it) {
                box_name(j, b, name, sizeof(name));
                forget(name);
        }
        if (j->open == b)
                j->open = NULL;
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

/* Sends the members not sent yet, with their tags; stores the box the first time. */
static int box_send(struct journal *j, struct box *b)
{
        int fds[JR_BOX_MAX];
        uint32_t tags[JR_BOX_MAX + 1];
        unsigned n = 0;
        char name[64];
        int r;

        for (uint32_t i = b->nsent; i < b->n; i++)
                if (b->m[i].fd >= 0) {
                        tags[1 + n] = b->m[i].tag;
                        fds[n++] = b->m[i].fd;
                }
        if (n) {
                if (b->send_fd < 0)
                        return -EBADF;
                tags[0] = n;
                r = sn__fdmsg_send(b->send_fd, tags, (1 + n) * sizeof(uint32_t), fds, n,
                                   MSG_DONTWAIT);
                if (r < 0)
                        return r;
        }
        b->nsent = b->n;
        /* Only the open box gets more: the others need no sending end. */
        if (b != j->open)
                b->send_fd = sn_close(b->send_fd);
        if (!b->stored && b->recv_fd >= 0) {
                /* The store refuses (and systemd only logs) what is beyond its size. */
                if (journal_entries(j) > j->store_max)
                        return -ENOSPC;
                box_name(j, b, name, sizeof(name));
                r = store(name, b->recv_fd);
                if (r < 0)
                        return r;
                b->stored = true;
                b->recv_fd = sn_close(b->recv_fd);
        }
        return 0;
}

/* Sends what waits to be sent.  A box that could not be sent (the kernel refuses more
 * descriptors in flight than RLIMIT_NOFILE: ETOOMANYREFS) is tried again at the next flush,
 * which comes with the next reply or the next descriptor kept. */
static int flush_all(struct journal *j)
{
        struct sn_list again = SN_LIST_INIT(again);
        int ret = 0;

        while (!sn_list_empty(&j->to_send)) {
                struct box *b = sn_list_first(&j->to_send, struct box, send_link);
                int r;

                sn_list_del(&b->send_link);
                sn_list_init(&b->send_link);
                r = box_send(j, b);
                if (r < 0) {
                        fail(j, "keeping descriptors in the store", -r);
                        sn_list_add_tail(&again, &b->send_link);
                        ret = r;
                }
        }
        while (!sn_list_empty(&again)) {
                struct sn_list *l = again.next;

                sn_list_del(l);
                sn_list_add_tail(&j->to_send, l);
        }
        return ret;
}

static void box_add(struct journal *j, struct box_ref *ref, int fd, uint32_t tag)
{
        struct box *b = j->open;

        if (!b || b->n == JR_BOX_MAX) {
                if (b && b->nsent == b->n)
                        b->send_fd = sn_close(b->send_fd); /* full and sent */
                b = j->open = box_new(j);
                if (!b) {
                        fail(j, "making a box", ENOMEM);
                        return;
                }
        }
        b->m[b->n].fd = fd;
        b->m[b->n].tag = tag;
        b->m[b->n].ref = ref;
        ref->box = b;
        b->n++;
        schedule_send(j, b);
}

/*
 * The box without its dropped members: the survivors join the open box (the open box itself is
 * replaced by a new one), which is sent at once, and the old box is removed from the store
 * (which closes the dropped descriptors).  Survivors never get a box of their own: boxes stay
 * full but the open one, so their number follows the descriptors held, not how many were
 * dropped.
 */
static int box_rebuild(struct journal *j, struct box *old)
{
        int r;

        if (j->open == old) {
                if (old->send_fd >= 0)
                        old->send_fd = sn_close(old->send_fd);
                j->open = NULL;
        }
        for (uint32_t i = 0; i < old->n; i++)
                if (old->m[i].fd >= 0) {
                        struct box_ref *ref = old->m[i].ref;

                        old->m[i].ref = NULL;
                        ref->box = NULL;
                        box_add(j, ref, old->m[i].fd, old->m[i].tag);
                        old->m[i].fd = -1;
                        if (!ref->box)
                                return -ENOMEM;
                }
        /* The survivors are in the store again before the old box goes. */
        r = flush_all(j);
        if (r < 0)
                return r;
        box_free(j, old, true);
        return 0;
}

void journal_flush(struct journal *j)
{
        if (!j || !j->store)
                return;
        j->flush_armed = false;
        flush_all(j);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
        journal_flush(arg);
}

static void rebuild_cb(evutil_socket_t fd, short what, void *arg)
{
        struct journal *j = arg;

        j->rebuild_armed = false;
        journal_flush(j); /* members not sent yet go first: a rebuild sends them anyway */
        while (!sn_list_empty(&j->to_rebuild)) {
                struct box *b = sn_list_first(&j->to_rebuild, struct box, rebuild_link);
                int r;

                sn_list_del(&b->rebuild_link);
                sn_list_init(&b->rebuild_link);
                r = box_rebuild(j, b);
                if (r < 0)
                        fail(j, "taking a dropped descriptor out of the store", -r);
        }
}

void journal_keep(struct journal *j, struct box_ref *ref, int fd, uint32_t tag)
{
        if (j && j->store && fd >= 0 && tag && !ref->box)
                box_add(j, ref, fd, tag);
}

void journal_move(struct journal *j, struct box_ref *from, struct box_ref *to)
{
        struct box *b = from->box;

        if (!j || !b)
                return;
        for (uint32_t i = 0; i < b->n; i++)
                if (b->m[i].ref == from) {
                        b->m[i].ref = to;
                        to->box = b;
                        break;
                }
        from->box = NULL;
}

void journal_drop(struct journal *j, struct box_ref *ref)
{
        struct box *b = ref->box;
        uint32_t i;

        if (!j || !b)
                return;
        /* Found by its reference (at most 253 to look at): owners keep no slot number. */
        for (i = 0; i < b->n && b->m[i].ref != ref; i++)
                ;
        ref->box = NULL;
        if (i == b->n)
                return;
        b->m[i].fd = -1;
        b->m[i].ref = NULL;
        /* In the box's queue: the box is rebuilt without it. */
        if (i < b->nsent)
                schedule_rebuild(j, b);
}

uint32_t journal_entries(const struct journal *j)
{
        const struct sn_list *pos;
        uint32_t n = 1;

        if (!j || !j->store)
                return 0;
        for (pos = j->boxes.next; pos != &j->boxes; pos = pos->next)
                n++;
        return n;
}

/* ---- opening, closing --------------------------------------------------------------------- */

int journal_open(struct journal **ret, struct event_base *base, uint32_t gen, bool store,
                 uint32_t store_max)
{
        struct journal *j = calloc(1, sizeof(*j));
        struct jr_header *h;
        int r = 0;

        *ret = NULL;
        if (!j)
                return -ENOMEM;
        j->gen = gen;
        j->store = store;
        j->store_max = store_max;
        j->capacity = JR_INITIAL;
        sn_list_init(&j->boxes);
        sn_list_init(&j->to_send);
        sn_list_init(&j->to_rebuild);
        j->map = MAP_FAILED;
        j->free_idx = calloc(j->capacity, sizeof(*j->free_idx));
        j->fd = memfd_create("socknotifyd-journal", MFD_CLOEXEC);
        j->flush_ev = event_new(base, -1, 0, flush_cb, j);
        j->rebuild_ev = evtimer_new(base, rebuild_cb, j);
        if (!j->free_idx || !j->flush_ev || !j->rebuild_ev)
                r = -ENOMEM;
        else if (j->fd < 0 || ftruncate(j->fd, (off_t)j->capacity * JR_RECORD) < 0)
                r = -errno;
        if (!r) {
                j->map = mmap(NULL, (size_t)j->capacity * JR_RECORD, PROT_READ | PROT_WRITE,
                              MAP_SHARED, j->fd, 0);
                if (j->map == MAP_FAILED)
                        r = -errno;
        }
        if (r < 0) {
                j->map = j->map == MAP_FAILED ? NULL : j->map;
                journal_close(j, false);
                return r;
        }
        h = journal_header(j);
        memcpy(h->magic, JR_MAGIC, 8);
        h->version = JR_VERSION;
        h->record_size = JR_RECORD;
        h->capacity = j->capacity;
        h->gen = gen;
        for (uint32_t i = j->capacity - 1; i >= 1; i--)
                j->free_idx[j->nfree++] = i;
        *ret = j;
        return 0;
}

int journal_commit(struct journal *j)
{
        char name[64];
        int r;

        if (!j->store || j->committed)
                return 0;
        /* The boxes first: a journal in the store names nothing that is not there. */
        r = flush_all(j);
        if (r < 0)
                return r;
        snprintf(name, sizeof(name), "snjournal.%u", j->gen);
        r = store(name, j->fd);
        if (r < 0)
                return r;
        j->committed = true;
        return 0;
}

void journal_close(struct journal *j, bool forget_it)
{
        char name[64];

        if (!j)
                return;
        while (!sn_list_empty(&j->boxes))
                box_free(j, sn_list_first(&j->boxes, struct box, link), forget_it);
        if (forget_it && j->committed) {
                snprintf(name, sizeof(name), "snjournal.%u", j->gen);
                forget(name);
        }
        if (j->flush_ev)
                event_free(j->flush_ev);
        if (j->rebuild_ev)
                event_free(j->rebuild_ev);
        if (j->map)
                munmap(j->map, (size_t)j->capacity * JR_RECORD);
        sn_close(j->fd);
        free(j->free_idx);
        free(j);
}

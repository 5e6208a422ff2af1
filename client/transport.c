/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * transport.c - the two verbs "send one message" and "receive the next one, or sleep", over
 * the connection socket or over the shared-memory rings of protocol version 3 (common/ring.h,
 * PROTOCOL.md).  The lowest layer of the library: it includes nothing of client/ but its own
 * header, and conn.c alone calls it.
 *
 * Everything in the ring file is the daemon's to write at any time, so it is input like a
 * socket message: the header's first block is copied and checked once when the rings are
 * attached and never read again; so are the positions we start from, our own two of which we
 * never read from the file again (positions_ok()); the daemon's positions and records are read
 * once each by common/ring.h's verbs, which reject what cannot be.  The file is sealed against
 * shrinking (checked), so a mapped page never disappears under us (no SIGBUS).  Nothing here
 * waits without bound on the daemon's memory: a sleeping side waits in poll() on its doorbell
 * and on the socket, whose hang-up says the daemon is gone.
 *
 * Order of the two paths: a message that carries descriptors, or is larger than a record,
 * travels on the socket, announced by a SOCKET record in the same ring; the announcement is
 * published before the socket message is sent (the daemon's rule), and a SOCKET record we
 * take means that the daemon's next message is already on the socket.  A socket message with
 * no record before it, or a record whose message does not come, is waited for at most
 * SN_RING_LATE_MS, then the daemon is taken as broken (-EPROTO).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/transport.h"
#include "common/fdmsg.h"
#include "proto/codec.h"

/* How long a socket message and its SOCKET record may be apart (see the top of the file). */
#define SN_RING_LATE_MS 2000
/* A ring file larger than this is not one we map: the layout needs SN_RING_FILE_SIZE. */
#define SN_RING_MAP_MAX (16u * 1024 * 1024)
/* The smallest ring we accept (a record of the largest message needs half of it). */
#define SN_RING_MIN_SIZE 4096u
/* The longest a reader spins for a reply before it sleeps, while the daemon runs on another
 * CPU: a sleep and its wake-up cost about 23 us each way on this kind of machine. */
#define SN_RING_SPIN_NS 30000
#define SN_RING_SPIN_CREDIT 8

static int64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void bell_ring(int fd)
{
        uint64_t one = 1;

        if (write(fd, &one, sizeof(one)) < 0) {
                /* EAGAIN: the counter is full, so the other side has a wake-up waiting. */
        }
}

/* Our doorbell is a datagram socket the daemon sends one byte on per wake-up (PROTOCOL.md):
 * takes what is there, never blocking, and at most a bounded number (the daemon sends one per
 * sleep we announce, so more is a misbehaving daemon, whose later ones are taken next time). */
static void bell_reset(int fd)
{
        char b[8];

        for (int i = 0; i < 64; i++)
                if (recv(fd, b, sizeof(b), MSG_DONTWAIT) < 0)
                        return; /* EAGAIN: nobody rang (more) */
}

void sn__ring_init(struct sn_ring *r)
{
        *r = (struct sn_ring){ .daemon_bell = -1, .client_bell = -1,
                               .spin_credit = SN_RING_SPIN_CREDIT };
}

void sn__ring_detach(struct sn_ring *r)
{
        /* Not in a forked child: the range is not mapped there (MADV_DONTFORK), and may hold
         * another mapping of the child's by now. */
        if (r->map && r->owner == getpid())
                munmap(r->map, r->map_size);
        if (r->daemon_bell >= 0)
                close(r->daemon_bell);
        if (r->client_bell >= 0)
                close(r->client_bell);
        sn__ring_init(r);
}

static bool pow2(uint32_t v)
{
        return v && !(v & (v - 1));
}

/*
 * Whether the rings can start from our positions sq_tail and cq_head, the copies we go on from
 * (first: the checked layout).  The daemon wrote them, and the verbs never look at the shared
 * words of our own positions again, so they are checked here: each a multiple of 8 (a record
 * header at an unaligned offset could reach past the ring's end, and a ring may end the file),
 * and the daemon's positions, read once here, at most one ring from ours on the side they can
 * be, as the daemon's ring_adopt() checks the client's.  The verbs check the daemon's again at
 * each batch.
 */
static bool positions_ok(const struct sn_ring_header *h, const struct sn_ring_header *first,
                         uint32_t sq_tail, uint32_t cq_head)
{
        uint32_t sq_head = sn_ring_load(&h->sq_head), cq_tail = sn_ring_load(&h->cq_tail);

        return (sq_tail | sq_head | cq_head | cq_tail) % 8 == 0 &&
               sq_tail - sq_head <= first->sq_size && cq_tail - cq_head <= first->cq_size;
}

/* Whether [off, off + size) lies in a file of file_size bytes, after the header block. */
static bool span_ok(uint32_t off, uint32_t size, size_t file_size)
{
        return off >= sizeof(struct sn_ring_header) && off % 8 == 0 && pow2(size) &&
               size >= SN_RING_MIN_SIZE && (uint64_t)off + size <= file_size;
}

static int nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);

        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -EPROTO;
        return 0;
}

/*
 * The mapping keeps the memory, so the file's descriptor goes; the doorbell with the highest
 * number takes its number, so that ours leave no hole below them: a program that closes every
 * descriptor above its lowest free one (close_range) must not close the doorbells.
 */
static void keep_compact(struct sn_ring *r, int file)
{
        int *hi = r->daemon_bell > r->client_bell ? &r->daemon_bell : &r->client_bell;

        if (*hi > file && dup3(*hi, file, O_CLOEXEC) == file) {
                close(*hi);
                *hi = file;
                return;
        }
        close(file);
}

int sn__ring_attach(struct sn_ring *r, const int *fds, unsigned nfds)
{
        struct sn_ring_header first;
        struct stat st;
        void *map;
        int seals, rc = -EPROTO;

        sn__ring_init(r);
        if (nfds != SN_PROTO_RING_NFDS)
                goto fail;
        /* A regular file (a memfd is one) of a sane size that cannot shrink under the mapping:
         * a shrunk file would turn our reads of the rings into SIGBUS. */
        if (fstat(fds[SN_PROTO_RING_FD_FILE], &st) < 0 || !S_ISREG(st.st_mode) ||
            st.st_size < (off_t)SN_RING_FILE_SIZE || st.st_size > (off_t)SN_RING_MAP_MAX)
                goto fail;
        seals = fcntl(fds[SN_PROTO_RING_FD_FILE], F_GET_SEALS);
        if (seals < 0 || !(seals & F_SEAL_SHRINK))
                goto fail;
        /* We write the daemon's doorbell and read ours without ever blocking, whatever the
         * daemon made them with: a full counter must not stop a sender. */
        if (nonblock(fds[SN_PROTO_RING_FD_DAEMON]) < 0 ||
            nonblock(fds[SN_PROTO_RING_FD_CLIENT]) < 0)
                goto fail;
        map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fds[SN_PROTO_RING_FD_FILE], 0);
        if (map == MAP_FAILED) {
                rc = -errno;
                goto fail;
        }
        /* A forked child never sees the parent's rings (its connection is unusable anyway):
         * nothing it does can write into them. */
        (void)madvise(map, (size_t)st.st_size, MADV_DONTFORK);
        /* The first block, once: only this copy is used from here on. */
        memcpy(&first, map, offsetof(struct sn_ring_header, pad0));
        if (first.magic != SN_RING_MAGIC || first.layout != SN_RING_LAYOUT ||
            !span_ok(first.sq_offset, first.sq_size, (size_t)st.st_size) ||
            !span_ok(first.cq_offset, first.cq_size, (size_t)st.st_size) ||
            !((uint64_t)first.sq_offset + first.sq_size <= first.cq_offset ||
              (uint64_t)first.cq_offset + first.cq_size <= first.sq_offset)) {
                munmap(map, (size_t)st.st_size);
                goto fail;
        }
        r->map = map;
        r->map_size = (size_t)st.st_size;
        r->owner = getpid();
        r->hdr = map;
        r->sq = (struct sn_ring_tx){
                .data = r->map + first.sq_offset,
                .size = first.sq_size,
                .ptail = &r->hdr->sq_tail,
                .phead = &r->hdr->sq_head,
        };
        r->cq = (struct sn_ring_rx){
                .data = r->map + first.cq_offset,
                .size = first.cq_size,
                .phead = &r->hdr->cq_head,
                .ptail = &r->hdr->cq_tail,
        };
        /* Where we go on from: the daemon's words, once each, checked before they are ours. */
        r->sq.tail = sn_ring_load(&r->hdr->sq_tail);
        r->cq.head = sn_ring_load(&r->hdr->cq_head);
        if (!positions_ok(r->hdr, &first, r->sq.tail, r->cq.head)) {
                munmap(map, (size_t)st.st_size);
                sn__ring_init(r);
                goto fail;
        }
        r->daemon_bell = fds[SN_PROTO_RING_FD_DAEMON];
        r->client_bell = fds[SN_PROTO_RING_FD_CLIENT];
        keep_compact(r, fds[SN_PROTO_RING_FD_FILE]);
        r->cq_given = r->cq.head;
        return 0;
fail:
        sn__fds_close(fds, nfds);
        return rc;
}

/* The submission ring is full: the daemon must run to make room.  Waits a moment on our
 * doorbell (the daemon rings it when it frees room and we said we sleep) and watches the
 * socket for the daemon's end.  Returns 0, or -ECONNRESET when the daemon is gone. */
static int sq_nap(int sock, struct sn_ring *r)
{
        struct pollfd p[2] = {
                { .fd = r->client_bell, .events = POLLIN },
                { .fd = sock, .events = 0 }, /* hang-up and errors only */
        };
        int n = poll(p, 2, 1);

        if (n > 0 && p[1].revents & (POLLHUP | POLLERR | POLLNVAL))
                return -ECONNRESET;
        if (n > 0 && p[0].revents & POLLIN) {
                /* Rung, maybe for a record: that wake-up is the reader's to take (reading it
                 * here could leave the reader asleep), so only pause instead of spinning. */
                nanosleep(&(struct timespec){ .tv_nsec = 50000 }, NULL);
        }
        return 0;
}

/* Appends one record to the submission ring and publishes it, waking the daemon when it
 * sleeps.  Returns 0, -ECONNRESET (the daemon is gone) or -EPROTO (it broke the ring). */
static int sq_put(int sock, struct sn_ring *r, uint32_t kind, const void *msg, uint32_t len)
{
        int e;

        for (;;) {
                e = sn_ring_put(&r->sq, kind, msg, len);
                if (e != -EAGAIN)
                        break;
                bell_ring(r->daemon_bell);
                sn_ring_store(&r->hdr->client_sq_full, 1);
                sn_ring_fence();
                e = sn_ring_put(&r->sq, kind, msg, len);
                if (e != -EAGAIN)
                        break;
                e = sq_nap(sock, r);
                if (e < 0)
                        return e;
        }
        if (e < 0)
                return -EPROTO; /* -EMSGSIZE cannot be: larger messages go on the socket */
        /* Where we run: the daemon spins for our next request only while we run elsewhere. */
        __atomic_store_n(&r->hdr->client_cpu, (uint32_t)(sched_getcpu() + 1), __ATOMIC_RELAXED);
        sn_ring_tx_publish(&r->sq);
        sn_ring_fence();
        if (sn_ring_claim_wake(&r->hdr->daemon_sleeps))
                bell_ring(r->daemon_bell);
        return 0;
}

static int send_one(int sock, struct sn_ring *r, const void *buf, size_t len, const int *fds,
                    unsigned nfds)
{
        int e;

        if (!r->map)
                return sn__fdmsg_send(sock, buf, len, fds, nfds, 0);
        if (!nfds && len <= sn_ring_max_message(r->sq.size))
                return sq_put(sock, r, SN_RING_MSG, buf, (uint32_t)len);
        /* The announcement first, published: the daemon takes a socket message only when its
         * SOCKET record came before it. */
        e = sq_put(sock, r, SN_RING_SOCKET, NULL, 0);
        if (e < 0)
                return e;
        return sn__fdmsg_send(sock, buf, len, fds, nfds, 0);
}

/* Waiting for the two halves of a socket message (see the top of the file): -EAGAIN for a
 * while, then -EPROTO. */
static ssize_t late(struct sn_ring *r)
{
        int64_t now = mono_ms();

        if (!r->stray_since) {
                r->stray_since = now ? now : 1;
                return -EAGAIN;
        }
        return now - r->stray_since > SN_RING_LATE_MS ? -EPROTO : -EAGAIN;
}

/* What the socket says while the completion ring is empty and no socket message is due:
 * 0 the daemon is gone, -EAGAIN nothing (or a message whose record is still to come). */
static ssize_t sock_check(int sock, struct sn_ring *r)
{
        struct pollfd p = { .fd = sock, .events = POLLIN | POLLRDHUP };
        char c;
        ssize_t n;

        if (poll(&p, 1, 0) <= 0)
                return -EAGAIN;
        if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
                return 0;
        /* End of file (the daemon shut its side) reads as 0, a message as its length. */
        n = recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC);
        if (n == 0)
                return 0;
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : 0;
        return late(r);
}

/* One attempt at the next message, never blocking. */
static ssize_t ring_take(int sock, struct sn_ring *r, void *buf, size_t cap, int *fds,
                         unsigned *ret_nfds, bool *ret_cut)
{
        uint32_t len, kind;
        ssize_t n;
        int e;

        for (;;) {
                if (!r->socket_next) {
                        e = sn_ring_get(&r->cq, buf, (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap),
                                        &len, &kind);
                        if (e < 0)
                                return -EPROTO;
                        if (e > 0) {
                                /* Taken, not yet given back: sn__transport_cq_release(). */
                                if (kind == SN_RING_MSG)
                                        return len;
                                r->socket_next = true;
                                r->stray_since = 0;
                        }
                }
                if (r->socket_next) {
                        r->sock_quiet = false;
                        n = sn__fdmsg_recv_any(sock, buf, cap, fds, ret_nfds, ret_cut,
                                               MSG_DONTWAIT);
                        if (n != -EAGAIN && n != -EWOULDBLOCK) {
                                r->socket_next = false;
                                r->stray_since = 0;
                                return n;
                        }
                        n = sock_check(sock, r);
                        return n == 0 ? 0 : late(r);
                }
                /* The socket is asked only when the last wait saw something on it (or nobody
                 * waited): an empty ring between two waits costs no system call. */
                if (r->sock_quiet)
                        return -EAGAIN;
                n = sock_check(sock, r);
                if (n == -EAGAIN)
                        return -EAGAIN;
                /* Gone (or broken): what it published before it went is still to be taken. */
                if (n == 0 && sn_ring_rx_ready(&r->cq))
                        continue;
                return n;
        }
}

static int64_t mono_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The completion ring is empty: spins up to SN_RING_SPIN_NS for a record instead of sleeping,
 * when that is likely to pay: the daemon last ran on another CPU (on ours, spinning would only
 * keep it from running), and spinning caught a reply lately (after misses it stops, and tries
 * again once in a while).  Returns whether a record came.  The daemon's hint is only a hint:
 * whatever it says, the spin is bounded.
 */
static bool reply_spin(struct sn_ring *r)
{
        uint32_t daemon_cpu = __atomic_load_n(&r->hdr->daemon_cpu, __ATOMIC_RELAXED);
        int cpu = sched_getcpu();
        int64_t end;

        if (r->socket_next || r->stray_since)
                return false;
        if (r->spin_credit <= 0) {
                if (++r->spin_skipped < 64)
                        return false;
                r->spin_skipped = 0;
                r->spin_credit = 1;
        }
        if (cpu < 0 || daemon_cpu == 0 || daemon_cpu == (uint32_t)cpu + 1)
                return false;
        sn_ring_store(&r->hdr->client_sleeps, 0);
        end = mono_ns() + SN_RING_SPIN_NS;
        do {
                if (sn_ring_rx_ready(&r->cq)) {
                        if (r->spin_credit < SN_RING_SPIN_CREDIT)
                                r->spin_credit++;
                        return true;
                }
                sn_ring_cpu_relax();
        } while (mono_ns() < end);
        r->spin_credit -= 2;
        return false;
}

static int wait_ring(int sock, struct sn_ring *r, int timeout_ms);

static ssize_t recv_one(int sock, struct sn_ring *r, void *buf, size_t cap, int *fds,
                        unsigned *ret_nfds, bool *ret_cut, int flags)
{
        *ret_nfds = 0;
        *ret_cut = false;
        if (!r->map)
                return sn__fdmsg_recv_any(sock, buf, cap, fds, ret_nfds, ret_cut, flags);
        r->sock_quiet = false;
        for (;;) {
                ssize_t n = ring_take(sock, r, buf, cap, fds, ret_nfds, ret_cut);
                int w;

                if (n != -EAGAIN || (flags & MSG_DONTWAIT)) {
                        r->sock_quiet = false;
                        return n;
                }
                w = wait_ring(sock, r, -1);
                if (w < 0 && w != -EINTR) {
                        r->sock_quiet = false;
                        return w;
                }
        }
}

static int wait_ring(int sock, struct sn_ring *r, int timeout_ms)
{
        struct pollfd p[2] = { { .fd = sock, .events = POLLIN } };
        int n;

        if (!r->map) {
                n = poll(p, 1, timeout_ms);
                return n < 0 ? -errno : n > 0;
        }
        /* A reply due in a few microseconds is cheaper to wait for awake. */
        if (timeout_ms && reply_spin(r))
                return 1;
        /* Announce the sleep, then look again: a record published before the announcement is
         * seen here, one published after it rings the doorbell (common/ring.h). */
        sn_ring_store(&r->hdr->client_sleeps, 1);
        sn_ring_fence();
        if (sn_ring_rx_ready(&r->cq))
                return 1;
        if (r->stray_since && !r->socket_next) {
                /* A socket message waits for its record, which rings the doorbell: the socket
                 * only for its hang-up, and look again now and then for the time limit. */
                p[0].events = 0;
                if (timeout_ms < 0 || timeout_ms > 10)
                        timeout_ms = 10;
        } else if (r->stray_since && (timeout_ms < 0 || timeout_ms > 10)) {
                timeout_ms = 10;
        }
        p[1] = (struct pollfd){ .fd = r->client_bell, .events = POLLIN };
        n = poll(p, 2, timeout_ms);
        /* Awake: the daemon need not ring for us (a wake-up already claimed is taken below). */
        sn_ring_store(&r->hdr->client_sleeps, 0);
        if (n < 0)
                return -errno;
        r->sock_quiet = p[0].revents == 0;
        /* The program closed our doorbell: nothing would wake us any more. */
        if (p[1].revents & POLLNVAL)
                return -EBADF;
        if (p[1].revents & POLLIN)
                bell_reset(r->client_bell);
        return n > 0 || r->stray_since;
}

static bool idle(struct sn_ring *r, bool want_wake)
{
        if (!r->map)
                return false;
        bell_reset(r->client_bell);
        if (!want_wake)
                return false;
        sn_ring_store(&r->hdr->client_sleeps, 1);
        sn_ring_fence();
        return sn_ring_rx_ready(&r->cq) || r->socket_next;
}

void sn__transport_cq_release(struct sn_ring *r, uint32_t pos)
{
        if (!r->map)
                return;
        /* Forward only (pos is never past what was taken: the caller's word, since the
         * receiving thread may be taking more meanwhile).  Our own copy, not the shared word,
         * which the daemon could overwrite. */
        if ((int32_t)(pos - r->cq_given) <= 0)
                return;
        r->cq_given = pos;
        sn_ring_store(r->cq.phead, pos);
        sn_ring_fence();
        if (sn_ring_claim_wake(&r->hdr->daemon_blocked))
                bell_ring(r->daemon_bell);
}

/*
 * The verbs leave errno as they found it: the library's callers read it afterwards (the Win32
 * layer keeps its last error there), and a doorbell found empty (EAGAIN) is no error of theirs.
 */
int sn__transport_send(int sock, struct sn_ring *r, const void *buf, size_t len, const int *fds,
                       unsigned nfds)
{
        int saved = errno, ret = send_one(sock, r, buf, len, fds, nfds);

        errno = saved;
        return ret;
}

ssize_t sn__transport_recv(int sock, struct sn_ring *r, void *buf, size_t cap, int *fds,
                           unsigned *ret_nfds, bool *ret_cut, int flags)
{
        int saved = errno;
        ssize_t ret = recv_one(sock, r, buf, cap, fds, ret_nfds, ret_cut, flags);

        errno = saved;
        return ret;
}

int sn__transport_wait(int sock, struct sn_ring *r, int timeout_ms)
{
        int saved = errno, ret = wait_ring(sock, r, timeout_ms);

        errno = saved;
        return ret;
}

bool sn__transport_idle(struct sn_ring *r, bool want_wake)
{
        int saved = errno;
        bool ret = idle(r, want_wake);

        errno = saved;
        return ret;
}

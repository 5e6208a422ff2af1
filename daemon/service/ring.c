/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * ring.c - making, adopting and freeing a connection's rings, and the doorbells.
 *
 * What the requests and replies do with the rings is conn.c's: this file only owns the
 * memory and the descriptors.  The seals (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL) are what
 * make a shared mapping safe for the daemon: without them a client could truncate the file
 * and the daemon's next write into it would end the daemon with SIGBUS.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/macro.h"
#include "daemon/service/ring.h"

#define RING_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/* The longest the daemon waits for a request without sleeping: a cross-CPU wake-up costs about
 * 23 us here each way, a client's next request after a reply comes within a few. */
#define RING_SPIN_NS 8000
#define RING_SPIN_CREDIT 8

static void ring_bind(struct conn_ring *r)
{
        struct sn_ring_header *h = r->hdr;

        r->sq = (struct sn_ring_rx){ .data = r->map + SN_RING_HEADER_SIZE,
                                     .size = SN_RING_SQ_SIZE,
                                     .phead = &h->sq_head,
                                     .ptail = &h->sq_tail };
        r->cq = (struct sn_ring_tx){ .data = r->map + SN_RING_HEADER_SIZE + SN_RING_SQ_SIZE,
                                     .size = SN_RING_CQ_SIZE,
                                     .ptail = &h->cq_tail,
                                     .phead = &h->cq_head };
}

static int ring_map(struct conn_ring *r)
{
        void *m = mmap(NULL, SN_RING_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, r->file, 0);

        if (m == MAP_FAILED)
                return -errno;
        r->map = m;
        r->hdr = m;
        ring_bind(r);
        return 0;
}

static struct conn_ring *ring_alloc(void)
{
        struct conn_ring *r = calloc(1, sizeof(*r));

        if (r) {
                r->file = r->bell_in = r->bell_out = r->bell_peer = r->bell_in_peer = -1;
                r->spin_credit = RING_SPIN_CREDIT;
        }
        return r;
}

int ring_new(struct conn_ring **ret)
{
        struct conn_ring *r = ring_alloc();
        int err;

        if (!r)
                return -ENOMEM;
        r->file = memfd_create("socknotify-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (r->file < 0 || ftruncate(r->file, SN_RING_FILE_SIZE) < 0 ||
            fcntl(r->file, F_ADD_SEALS, RING_SEALS) < 0)
                goto fail_errno;
        {
                int in[2], out[2];

                /* Datagram socket pairs, not eventfds: a socket's end has an identity of its
                 * own (its inode), by which the restore tells one connection's doorbell from
                 * another's (every eventfd has the same), and the daemon reads and writes its
                 * ends with MSG_DONTWAIT, whatever flags the client sets on its own. */
                if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, in) < 0)
                        goto fail_errno;
                r->bell_in = in[0];
                r->bell_in_peer = in[1];
                if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, out) < 0)
                        goto fail_errno;
                r->bell_out = out[0];
                r->bell_peer = out[1];
                /* One way each: what the client would send to the daemon's end of its own
                 * doorbell is refused (EPIPE), never queued in memory nobody reads. */
                shutdown(out[0], SHUT_RD);
                shutdown(in[0], SHUT_WR);
        }
        err = ring_map(r);
        if (err)
                goto fail;
        /* A new file reads as zeros: only the layout needs writing. */
        *r->hdr = (struct sn_ring_header){ .magic = SN_RING_MAGIC,
                                           .layout = SN_RING_LAYOUT,
                                           .sq_offset = SN_RING_HEADER_SIZE,
                                           .sq_size = SN_RING_SQ_SIZE,
                                           .cq_offset = SN_RING_HEADER_SIZE + SN_RING_SQ_SIZE,
                                           .cq_size = SN_RING_CQ_SIZE };
        *ret = r;
        return 0;
fail_errno:
        err = -errno;
fail:
        ring_free(r);
        return err;
}

int ring_adopt(int file, int bell_in, int bell_out, struct conn_ring **ret)
{
        struct conn_ring *r = ring_alloc();
        struct stat st;
        uint32_t v;
        int err = -EINVAL;

        if (!r) {
                close(file);
                close(bell_in);
                close(bell_out);
                return -ENOMEM;
        }
        r->file = file;
        r->bell_in = bell_in;
        r->bell_out = bell_out;
        if (fstat(file, &st) < 0 || st.st_size != SN_RING_FILE_SIZE ||
            (fcntl(file, F_GET_SEALS) & RING_SEALS) != RING_SEALS ||
            fstat(bell_out, &st) < 0 || !S_ISSOCK(st.st_mode) || fstat(bell_in, &st) < 0 ||
            !S_ISSOCK(st.st_mode))
                goto fail;
        err = ring_map(r);
        if (err)
                goto fail;
        /* The positions the daemon published are the ones to go on from; they sit in memory
         * the client can write, so they are checked like anything else read from it: the CQ
         * tail at most one ring ahead of the client's head, the SQ head at most at its tail. */
        r->sq.head = __atomic_load_n(&r->hdr->sq_head, __ATOMIC_ACQUIRE);
        r->cq.tail = __atomic_load_n(&r->hdr->cq_tail, __ATOMIC_ACQUIRE);
        v = __atomic_load_n(&r->hdr->cq_head, __ATOMIC_ACQUIRE);
        if (r->cq.tail % 8 || r->sq.head % 8 || r->cq.tail - v > SN_RING_CQ_SIZE ||
            __atomic_load_n(&r->hdr->sq_tail, __ATOMIC_ACQUIRE) - r->sq.head > SN_RING_SQ_SIZE) {
                err = -EPROTO;
                goto fail;
        }
        *ret = r;
        return 0;
fail:
        ring_free(r);
        return err;
}

void ring_free(struct conn_ring *r)
{
        if (!r)
                return;
        if (r->ev_added)
                event_del(&r->ev);
        if (r->muted)
                event_del(&r->mute_ev);
        if (r->map)
                munmap(r->map, SN_RING_FILE_SIZE);
        if (r->file >= 0)
                close(r->file);
        if (r->bell_in >= 0)
                close(r->bell_in);
        if (r->bell_out >= 0)
                close(r->bell_out);
        if (r->bell_peer >= 0)
                close(r->bell_peer);
        if (r->bell_in_peer >= 0)
                close(r->bell_in_peer);
        free(r);
}

void ring_wake_client(struct conn_ring *r)
{
        static const char wake = 1;

        bool ring;

        if (!r->bell_pending && !r->sq_freed)
                return;
        sn_ring_fence();
        /* Replies wake a client that sleeps; room in the SQ only one that waits for it (a
         * wake-up for nothing would make the application's poller return for nothing). */
        ring = (r->bell_pending && sn_ring_claim_wake(&r->hdr->client_sleeps)) |
               (r->sq_freed && sn_ring_claim_wake(&r->hdr->client_sq_full));
        r->bell_pending = r->sq_freed = false;
        /* Never blocks, whatever the client did to its end; fails (EAGAIN) only when the
         * client let many wake-ups pile up unread: then it has one to read already. */
        if (ring)
                (void)!send(r->bell_out, &wake, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool ring_spin(struct conn_ring *r)
{
        int cpu = sched_getcpu();
        uint32_t client_cpu = __atomic_load_n(&r->hdr->client_cpu, __ATOMIC_RELAXED);
        int64_t end;

        __atomic_store_n(&r->hdr->daemon_cpu, (uint32_t)(cpu + 1), __ATOMIC_RELAXED);
        /* Adaptive: after misses it stops, and tries again once in a while. */
        if (r->spin_credit <= 0) {
                if (++r->spin_skipped < 64)
                        return false;
                r->spin_skipped = 0;
                r->spin_credit = 1;
        }
        /* Only while the client runs, on another CPU: on the same one, spinning would only
         * keep it from running. */
        if (cpu < 0 || client_cpu == 0 || client_cpu == (uint32_t)cpu + 1 ||
            __atomic_load_n(&r->hdr->client_sleeps, __ATOMIC_RELAXED))
                return false;
        end = now_ns() + RING_SPIN_NS;
        do {
                if (sn_ring_rx_ready(&r->sq)) {
                        r->spin_credit = SN_MIN(r->spin_credit + 1, RING_SPIN_CREDIT);
                        return true;
                }
                sn_ring_cpu_relax();
        } while (now_ns() < end);
        r->spin_credit -= 2;
        return false;
}

void ring_bell_drain(struct conn_ring *r)
{
        char b[16];

        /* The client sends one datagram per sleep it sees announced; more is its own flood,
         * bounded here per wake-up (the loop comes back while more are there). */
        for (int i = 0; i < 64; i++)
                if (recv(r->bell_in, b, sizeof(b), MSG_DONTWAIT) < 0)
                        return;
}

void ring_wake_force(struct conn_ring *r)
{
        static const char wake = 1;

        sn_ring_store(&r->hdr->client_sleeps, 0);
        (void)!send(r->bell_out, &wake, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool ring_try_sleep(struct conn_ring *r)
{
        sn_ring_rx_publish(&r->sq);
        sn_ring_store(&r->hdr->daemon_sleeps, 1);
        sn_ring_fence();
        if (!sn_ring_rx_ready(&r->sq))
                return true;
        sn_ring_store(&r->hdr->daemon_sleeps, 0);
        return false;
}

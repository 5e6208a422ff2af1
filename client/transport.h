/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * transport.h - how one message gets to the daemon and back: over the connection socket, or
 * (protocol version 3) through the shared-memory rings the daemon passed at HELLO.  The lowest
 * layer of the library: it knows sockets, rings and doorbells, nothing of requests, replies or
 * connections, and includes no other header of client/.
 *
 * Callers serialize: one thread sends at a time (conn.c's send_lock), one thread receives at a
 * time (conn.c's reader role); the socket descriptor is the caller's and only borrowed here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ring.h"

/* The rings of one connection; all zero but the descriptors (-1) while the socket carries
 * everything.  The header's first block and the positions to start from are copied and checked
 * once at sn__ring_attach(): only the copy in sq and cq is used afterwards. */
struct sn_ring {
        uint8_t *map; /* NULL: the socket transport */
        size_t map_size;
        pid_t owner; /* the process that mapped it: a forked child has no such mapping */
        struct sn_ring_header *hdr;
        int daemon_bell; /* eventfd: written to wake the daemon */
        int client_bell; /* datagram socket: the daemon sends on it to wake us */
        struct sn_ring_tx sq;
        struct sn_ring_rx cq;
        uint32_t cq_given;  /* the completion head last published (sn__transport_cq_release) */
        bool socket_next;   /* a SOCKET record was taken: the next reply is on the socket */
        bool sock_quiet;    /* the last wait saw nothing on the socket: an empty ring need not
                             * ask it whether the daemon is still there */
        int spin_credit;    /* > 0 while spinning for replies has paid off lately */
        uint32_t spin_skipped;
        int64_t stray_since; /* ms: when we started waiting for a socket message's record, or for
                              * the socket message of a SOCKET record (0: not waiting) */
};

/* No rings: the socket carries everything. */
void sn__ring_init(struct sn_ring *r);
/* Maps and checks the rings of a HELLO_REPLY whose transport is the rings: fds in the order
 * of SN_PROTO_RING_FD_*, consumed on every outcome.  Returns 0, or -EPROTO when what the daemon
 * passed is not a ring file and two doorbells as PROTOCOL.md describes them (its layout, or a
 * position to start from that cannot be; -ENOMEM and the like when mapping fails); r is then
 * without rings and nothing is mapped. */
int sn__ring_attach(struct sn_ring *r, const int *fds, unsigned nfds);
/* Unmaps and closes; r is without rings afterwards (accepts one without). */
void sn__ring_detach(struct sn_ring *r);
/* Whether r carries the messages (else the socket does). */
static inline bool sn__ring_active(const struct sn_ring *r)
{
        return r->map != NULL;
}
/* The descriptor that becomes readable when the daemon wants us to look at the rings (-1
 * without rings): a poller of the connection polls it too. */
static inline int sn__ring_bell_fd(const struct sn_ring *r)
{
        return r->map ? r->client_bell : -1;
}

/*
 * Sends one message with nfds descriptors (borrowed) on sock, or through the rings when r has
 * them (a message with descriptors, or too large for a record, still goes on sock, announced
 * by a SOCKET record first).  Blocks while the submission ring is full.  Returns 0, or a
 * negative errno: the socket's (-EPIPE, -ECONNRESET: the daemon is gone), -EPROTO when the
 * daemon broke the rings.
 */
int sn__transport_send(int sock, struct sn_ring *r, const void *buf, size_t len, const int *fds,
                       unsigned nfds);

/*
 * Receives the next message into buf (cap bytes) and its descriptors into fds (room for
 * SN_PROTO_MAX_FDS; the caller owns those returned in *ret_nfds on every outcome, *ret_cut says
 * the kernel dropped some).  flags is 0 to block until one comes, MSG_DONTWAIT not to.
 * Returns the length; 0 when the daemon ended (end of file, hang-up); -EAGAIN (MSG_DONTWAIT)
 * when none is there; -EMSGSIZE for a socket message larger than cap (dropped); -EPROTO when
 * the daemon broke the rings (a record that cannot be, a message longer than cap in a ring, a
 * socket message whose SOCKET record never came, or the reverse, within one second); another
 * negative errno of the socket.
 */
ssize_t sn__transport_recv(int sock, struct sn_ring *r, void *buf, size_t cap, int *fds,
                           unsigned *ret_nfds, bool *ret_cut, int flags);

/*
 * The completion ring's records stay the daemon's space until given back: a message received
 * from the rings is taken (sn__transport_cq_taken(), the position after it, read by the
 * receiving thread) but its space is given back, and the daemon told it is read, only by
 * sn__transport_cq_release(pos), which moves the published head forward to pos (never back,
 * never past what was taken) and wakes the daemon if it waits for room.  The caller chooses
 * when: the daemon reads a thread handed entries as possibly blocked only once its answer is
 * given back (PROTOCOL.md, section 4), so conn.c gives an answer back only once the thread it
 * is for has it.  Calls to release are serialized by the caller
 * (conn.c's lock); without rings both do nothing (taken is 0).
 */
static inline uint32_t sn__transport_cq_taken(const struct sn_ring *r)
{
        return r->map ? r->cq.head : 0;
}
/* Whether the daemon waits for room in the completion ring (its word: a hint). */
static inline bool sn__transport_cq_wanted(const struct sn_ring *r)
{
        return r->map && sn_ring_load(&r->hdr->daemon_blocked) != 0;
}
void sn__transport_cq_release(struct sn_ring *r, uint32_t pos);

/*
 * Waits up to timeout_ms (-1: no limit) until sn__transport_recv() may have something.
 * Returns 1 (look), 0 on timeout, -EINTR.  A cancellation point (poll) where the caller
 * allows it; it consumes no message.
 */
int sn__transport_wait(int sock, struct sn_ring *r, int timeout_ms);

/*
 * When the receiver stops looking: clears the client doorbell (a poller of it is woken for
 * what comes next only), and with want_wake, because replies are still to come while nobody
 * waits for them (submitted calls, which the application polls for), asks the daemon to ring
 * it for the next record.  Returns true when want_wake and records are already there (look
 * again, or let a poller know).  false without rings.  Only while no other thread receives.
 */
bool sn__transport_idle(struct sn_ring *r, bool want_wake);

/* The daemon's position in the submission ring (one load; 0 without rings): a record that
 * ends after it was never taken. */
static inline uint32_t sn__transport_sq_taken(const struct sn_ring *r)
{
        return r->map ? sn_ring_load(r->sq.phead) : 0;
}


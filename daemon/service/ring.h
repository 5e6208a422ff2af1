/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * ring.h - a connection's shared-memory rings, as the daemon holds them (ring.c).
 *
 * The daemon makes the ring file (a sealed memfd: the client can neither shrink nor grow it, so
 * no write of the daemon into it can fault) and both doorbells, maps the file, and passes the
 * three descriptors to the client with HELLO_REPLY.  Nothing the client does to the descriptors
 * it shares can make the daemon block: both doorbells are datagram socket pairs whose ends the
 * daemon reads and writes with MSG_DONTWAIT (a client can clear O_NONBLOCK on a descriptor it
 * shares with the daemon, as it could on an eventfd, and a read or write of the daemon would
 * then block).  Its own positions (the SQ head, the CQ
 * tail) are kept here, privately; nothing of the daemon's state lives in the shared memory, and
 * every word read from it is checked by common/ring.h before it is used.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/ring.h"
#include "daemon/state/journal.h"

/* A ring's descriptors, in the order HELLO_REPLY carries them. */
enum { RING_FILE, RING_BELL_IN, RING_BELL_OUT, RING_NFDS };

struct conn_ring {
        struct sn_ring_header *hdr;
        uint8_t *map;
        union {
                struct {
                        int file;     /* the ring file (memfd) */
                        int bell_in;  /* the daemon's doorbell: its end of a datagram socket
                                       * pair, the client sends on the other */
                        int bell_out; /* the client's doorbell: the daemon's end of a datagram
                                       * socket pair, the client polls the other */
                };
                int fds[RING_NFDS];
        };
        int bell_peer; /* the client's end of that pair, until HELLO_REPLY carried it (-1 after) */
        int bell_in_peer; /* the client's end of the daemon's doorbell, likewise */
        struct sn_ring_rx sq;
        struct sn_ring_tx cq;
        struct event ev; /* on bell_in */
        bool ev_added;
        struct event mute_ev; /* a timer: the end of a mute (conn.c), assigned when muted */
        bool muted;           /* bell_in not watched: the client rang it for nothing too often */
        uint32_t mutes;       /* times it was muted (socknotifyctl clients) */
        uint32_t idle_bells;  /* doorbells for nothing since idle_since_ns (conn.c) */
        uint64_t idle_since_ns;
        uint64_t taken;       /* requests taken from the SQ */
        bool stalled; /* at a SOCKET record: the next request is on the socket */
        bool stall_bell; /* a doorbell found this stall: the next one is counted (conn.c) */
        bool bell_pending; /* records published since the last wake-up */
        bool sq_freed;     /* SQ room made since the last wake-up */
        bool in_turn;      /* conn.c is running the requests of the SQ */
        int spin_credit;   /* ring_spin(): > 0 while spinning has paid off lately */
        uint32_t spin_skipped;
        /* In the journal (service/persist.c): a record and a box for each descriptor. */
        uint32_t jr[RING_NFDS];
        struct box_ref box[RING_NFDS];
};

/* Makes rings: the file sealed and mapped, the doorbells.  Returns 0 or a negative errno
 * (-EMFILE, -ENOMEM, ...); *ret only on success. */
int ring_new(struct conn_ring **ret);
/* Adopts a ring file and doorbells (descriptors taken, closed on failure) after a re-exec or a
 * restore: the file is checked (size, seals) and mapped, the positions are read back from it
 * and checked.  Returns 0 or a negative errno. */
int ring_adopt(int file, int bell_in, int bell_out, struct conn_ring **ret);
/* Stops watching, unmaps, closes the descriptors.  Accepts NULL. */
void ring_free(struct conn_ring *r);
/* Wakes the client if it sleeps and records were published since it last looked. */
void ring_wake_client(struct conn_ring *r);
/* Takes the datagrams of the daemon's doorbell (never blocking). */
void ring_bell_drain(struct conn_ring *r);
/* Wakes the client whatever its flag says (after a restore). */
void ring_wake_force(struct conn_ring *r);
/*
 * The SQ is empty: waits a few microseconds for the client's next request instead of sleeping,
 * when that is likely to pay (the client runs, on another CPU, and spinning caught a request
 * lately).  Returns whether a request came.  Bounded (RING_SPIN_NS), whatever the client writes.
 */
bool ring_spin(struct conn_ring *r);
/* Publishes what was consumed from the SQ, and says whether the daemon may sleep: it announces
 * it sleeps, then looks again; false when records arrived meanwhile (then it does not sleep). */
bool ring_try_sleep(struct conn_ring *r);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * ring.h - the shared-memory rings of protocol version 3: their layout and the two verbs of
 * each side, used alike by the daemon and the library.
 *
 * One memory file per connection, made, sized and sealed by the daemon, holds a header page and
 * two byte rings: the submission ring (SQ, client -> daemon) and the completion ring (CQ,
 * daemon -> client).  Each ring carries records of 8-byte-aligned size: an 8-byte record
 * header (length, kind) and, for SN_RING_MSG, one protocol message exactly as it would travel
 * on the socket.  A record never straddles the end of its ring: a SN_RING_WRAP record fills
 * the rest and the next one starts at offset 0.  SN_RING_SOCKET says "the next message of
 * this direction is on the socket" (it carries descriptors, or is too large for the ring), so
 * the ring alone orders everything either side sends.
 *
 * Positions are free-running 32-bit byte counts, masked by the ring size (a power of two).
 * Each side keeps its own position privately and only publishes it; the other side's position
 * is read once per batch (acquire), checked, and never trusted: a consumer rejects a tail that
 * is more than the ring size ahead of its head, a producer a head that is behind the tail it
 * published by more than the ring size, or ahead of it.  A record is copied out before any of
 * it is checked, and only the copy is used.  The memory may change under the reader at any
 * time; nothing here reads a word of it twice.
 *
 * A side's own position starts from the shared memory too (the daemon's after a restart, the
 * library's when it attaches): whoever seeds it checks it there (ring_adopt(),
 * sn__ring_attach()).  The verbs refuse a private position that is not a multiple of 8 as well,
 * since only a seeded one can be: from one, a record header would reach past the ring's end.
 *
 * Sleep and wake-up: a side that will sleep sets its flag (sleeping), then re-checks the ring;
 * the other side, after publishing, rings that side's doorbell (an eventfd) only when it can
 * swap the flag from 1 to 0, so there is at most one wake-up per sleep.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define SN_RING_MAGIC 0x47524e53u /* "SNRG" */
#define SN_RING_LAYOUT 1u
#define SN_RING_HEADER_SIZE 4096u
#define SN_RING_SQ_SIZE (32u * 1024)
#define SN_RING_CQ_SIZE (64u * 1024)
#define SN_RING_FILE_SIZE (SN_RING_HEADER_SIZE + SN_RING_SQ_SIZE + SN_RING_CQ_SIZE)

/* Record kinds. */
#define SN_RING_MSG 1u    /* a protocol message follows, len bytes */
#define SN_RING_SOCKET 2u /* the next message is on the socket (len 0) */
#define SN_RING_WRAP 3u   /* the rest of the ring is unused; go on at offset 0 (len 0) */

#define SN_RING_RECORD_HEADER 8u

/*
 * The header page.  The daemon writes the first block once, before it passes the file; the
 * positions and flags live on cache lines of their own, each written by one side only (a
 * sleeping flag is set by its owner and cleared by whoever wakes it).
 */
struct sn_ring_header {
        uint32_t magic;     /* SN_RING_MAGIC */
        uint32_t layout;    /* SN_RING_LAYOUT */
        uint32_t sq_offset; /* from the start of the file */
        uint32_t sq_size;
        uint32_t cq_offset;
        uint32_t cq_size;
        uint8_t pad0[64 - 24];
        uint32_t sq_tail; /* client: bytes written into the SQ */
        uint8_t pad1[60];
        uint32_t sq_head;        /* daemon: bytes consumed from the SQ */
        uint32_t daemon_sleeps;  /* daemon sets 1 before it waits for its doorbell */
        uint32_t daemon_cpu;     /* daemon: 1 + the CPU it last ran on (a hint for spinning) */
        uint8_t pad2[52];
        uint32_t cq_tail; /* daemon: bytes written into the CQ */
        uint8_t pad3[60];
        uint32_t cq_head;        /* client: bytes consumed from the CQ */
        uint32_t client_sleeps;  /* client sets 1 before it waits for its doorbell */
        uint32_t daemon_blocked; /* daemon sets 1 when a reply waits for CQ space */
        uint32_t client_cpu;     /* client: 1 + the CPU it last ran on (a hint for spinning) */
        uint32_t client_sq_full; /* client sets 1 when it waits for room in the SQ */
        uint8_t pad4[44];
};

_Static_assert(sizeof(struct sn_ring_header) == 5 * 64, "ring header layout");

static inline uint32_t sn_ring_align(uint32_t len)
{
        return (len + 7u) & ~7u;
}

/* The largest message a ring of size carries in a record; a larger one goes on the socket. */
static inline uint32_t sn_ring_max_message(uint32_t size)
{
        return size / 2 - SN_RING_RECORD_HEADER;
}

static inline uint32_t sn_ring_load(const uint32_t *p)
{
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void sn_ring_store(uint32_t *p, uint32_t v)
{
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Between publishing (or setting a sleeping flag) and reading the other side's flag (or
 * position): without it each side could miss the other's last store and both would sleep. */
static inline void sn_ring_fence(void)
{
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* One step of a spin: tells the CPU the loop waits for another one (and costs no system call). */
static inline void sn_ring_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
}

/* Claims the wake-up of a side that announced it sleeps: true exactly once per announcement. */
static inline bool sn_ring_claim_wake(uint32_t *flag)
{
        return __atomic_load_n(flag, __ATOMIC_RELAXED) &&
               __atomic_exchange_n(flag, 0, __ATOMIC_ACQ_REL) == 1;
}

/* One direction as its producer sees it: tail is private, head is the consumer's word. */
struct sn_ring_tx {
        uint8_t *data;
        uint32_t size; /* power of two */
        uint32_t tail; /* private; published to *ptail */
        uint32_t *ptail;
        const uint32_t *phead;
};

/* One direction as its consumer sees it: head is private, tail is the producer's word. */
struct sn_ring_rx {
        const uint8_t *data;
        uint32_t size;
        uint32_t head;  /* private; published to *phead by sn_ring_rx_publish() */
        uint32_t avail; /* bytes known to be readable from head (read once per batch) */
        uint32_t *phead;
        const uint32_t *ptail;
};

/*
 * Appends one record of kind with len bytes of msg (NULL when len is 0).  Returns 0; -EAGAIN
 * when it does not fit now (nothing written); -EMSGSIZE when it never fits; -EPROTO when the
 * consumer's head, or the tail it was seeded with, is impossible (the peer broke the ring;
 * nothing written).  The record is visible to the consumer only after sn_ring_tx_publish().
 */
static inline int sn_ring_put(struct sn_ring_tx *tx, uint32_t kind, const void *msg, uint32_t len)
{
        uint32_t head = sn_ring_load(tx->phead), used = tx->tail - head;
        uint32_t need = SN_RING_RECORD_HEADER + sn_ring_align(len);
        uint32_t off = tx->tail & (tx->size - 1), room = tx->size - off;
        uint32_t hdr[2] = { len, kind };

        if (len > sn_ring_max_message(tx->size))
                return -EMSGSIZE;
        if (used > tx->size || (used | tx->tail) % 8)
                return -EPROTO;
        if (room < need) {
                /* The rest of the ring, then the record from offset 0. */
                if (tx->size - used < room + need)
                        return -EAGAIN;
                hdr[0] = 0;
                hdr[1] = SN_RING_WRAP;
                memcpy(tx->data + off, hdr, sizeof(hdr));
                tx->tail += room;
                off = 0;
                hdr[0] = len;
                hdr[1] = kind;
        } else if (tx->size - used < need) {
                return -EAGAIN;
        }
        memcpy(tx->data + off, hdr, sizeof(hdr));
        if (len)
                memcpy(tx->data + off + SN_RING_RECORD_HEADER, msg, len);
        tx->tail += need;
        return 0;
}

/* Makes what sn_ring_put() appended visible to the consumer. */
static inline void sn_ring_tx_publish(struct sn_ring_tx *tx)
{
        sn_ring_store(tx->ptail, tx->tail);
}

/* Whether anything published is still unread by the consumer. */
static inline bool sn_ring_tx_pending(const struct sn_ring_tx *tx)
{
        return sn_ring_load(tx->phead) != tx->tail;
}

/*
 * Takes the next record: copies its message (at most max bytes) to out, its length to
 * *ret_len and its kind to *ret_kind.  Wrap records are skipped here.  Returns 1 for a record,
 * 0 when the ring is empty, -EPROTO when the producer broke the ring (a position or a record
 * that cannot be; the caller drops the peer), -EMSGSIZE when a message is larger than max
 * (also a broken peer: max is the protocol's limit).  Consumed space returns to the producer
 * only with sn_ring_rx_publish().
 */
static inline int sn_ring_get(struct sn_ring_rx *rx, void *out, uint32_t max, uint32_t *ret_len,
                              uint32_t *ret_kind)
{
        for (;;) {
                uint32_t hdr[2], off, need;

                if (rx->avail == 0) {
                        uint32_t tail = sn_ring_load(rx->ptail), n = tail - rx->head;

                        if (n > rx->size || (n | rx->head) % 8)
                                return -EPROTO;
                        if (n == 0)
                                return 0;
                        rx->avail = n;
                }
                off = rx->head & (rx->size - 1);
                memcpy(hdr, rx->data + off, sizeof(hdr));
                if (hdr[1] == SN_RING_WRAP) {
                        need = rx->size - off;
                        if (hdr[0] != 0 || need > rx->avail || off == 0)
                                return -EPROTO;
                        rx->head += need;
                        rx->avail -= need;
                        continue;
                }
                if (hdr[1] != SN_RING_MSG && hdr[1] != SN_RING_SOCKET)
                        return -EPROTO;
                if (hdr[1] == SN_RING_SOCKET && hdr[0] != 0)
                        return -EPROTO;
                if (hdr[0] > sn_ring_max_message(rx->size))
                        return -EPROTO;
                need = SN_RING_RECORD_HEADER + sn_ring_align(hdr[0]);
                if (need > rx->avail || need > rx->size - off)
                        return -EPROTO;
                if (hdr[0] > max)
                        return -EMSGSIZE;
                if (hdr[0])
                        memcpy(out, rx->data + off + SN_RING_RECORD_HEADER, hdr[0]);
                rx->head += need;
                rx->avail -= need;
                *ret_len = hdr[0];
                *ret_kind = hdr[1];
                return 1;
        }
}

/* Gives the space of the records taken back to the producer. */
static inline void sn_ring_rx_publish(struct sn_ring_rx *rx)
{
        sn_ring_store(rx->phead, rx->head);
}

/* Whether the producer has published more than the consumer took (one read, may be stale). */
static inline bool sn_ring_rx_ready(const struct sn_ring_rx *rx)
{
        return rx->avail || sn_ring_load(rx->ptail) != rx->head;
}

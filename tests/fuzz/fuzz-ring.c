/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fuzz-ring.c - libFuzzer target for the shared-memory rings (common/ring.h), both verbs of
 * both sides, driven by a peer that writes whatever it likes into the shared memory.
 *
 * One input is a ring and a script.  The ring's size (16 bytes to 64 KiB) and the consumer's
 * start position come from the first bytes; its memory starts as the input itself, repeated;
 * then each operation of the script either writes the shared memory as a hostile peer would
 * (bytes anywhere in the ring, a record header where the consumer will look, the producer's
 * tail, the consumer's published head), or runs a verb: sn_ring_get() (repeatedly),
 * sn_ring_rx_publish(), sn_ring_put() + sn_ring_tx_publish().  Writes between the calls model
 * a peer that changes the ring while the other side works through it.
 *
 * Invariants checked (a violation aborts, so libFuzzer reports it):
 *  - sn_ring_get() answers 1, 0, -EPROTO or -EMSGSIZE only; never copies more than max bytes
 *    (a canary after the output, and ASan on the exact-size buffers); its head never passes
 *    the tail it accepted (the one it read, or head + avail from an earlier call, or, once
 *    those bytes are used up behind a WRAP, the tail read again), stays 8-aligned, and
 *    head + avail is that tail; a record it returns is a MSG or a SOCKET of
 *    length 0, no longer than the ring's largest message, lay wholly inside the ring between
 *    the old head and the new one, and the bytes returned are the ring's bytes there; an
 *    impossible tail is refused with nothing taken; 0 only when the head reached the tail;
 *  - sn_ring_put() answers 0, -EAGAIN, -EMSGSIZE or -EPROTO only; on an error nothing in the
 *    ring changed and the tail stayed; on success the head it read was possible, the new tail
 *    is at most one ring ahead of that head (no unread byte overwritten), only the bytes
 *    between the old and the new tail changed, and a consumer reading from the old tail takes
 *    back exactly the record put;
 *  - every call returns (a loop without end is a libFuzzer timeout).
 * The ring is allocated at its exact size, so ASan reports any access outside it.
 *
 * Built twice: with clang -fsanitize=fuzzer by `make fuzz`, and with the project's compiler and
 * tests/fuzz/driver.c as a regression driver that `make check` runs over tests/fuzz/regressions/.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ring.h"
#include "tests/fuzz/fuzz.h"

#define FAIL(...)                                                                                  \
        do {                                                                                       \
                fprintf(stderr, "fuzz-ring: invariant violated: " __VA_ARGS__);                    \
                fputc('\n', stderr);                                                               \
                abort();                                                                           \
        } while (0)

/* Script operations (the low 3 bits of an operation byte); see tests/fuzz/README.md. */
enum {
        OP_TAIL_REL = 0, /* s16: the producer's tail := consumer head + value */
        OP_TAIL_ABS = 1, /* u32: the producer's tail := value */
        OP_WRITE = 2,    /* u16 offset, u8 n, n bytes: into the ring at offset (masked) */
        OP_GET = 3,      /* u8 n: sn_ring_get() up to n + 1 times, until it answers <= 0 */
        OP_PUBLISH = 4,  /* sn_ring_rx_publish() */
        OP_PUT = 5,      /* u16 len, u8 kind: sn_ring_put() (kind & 1: SOCKET) and publish */
        OP_HEAD = 6,     /* u32: the consumer's published head := value */
        OP_RECORD = 7,   /* u32 len, u32 kind: a record header at the consumer's head */
};

#define CANARY 32

struct input {
        const uint8_t *p, *end;
};

static bool take(struct input *in, void *out, size_t n)
{
        if ((size_t)(in->end - in->p) < n)
                return false;
        memcpy(out, in->p, n);
        in->p += n;
        return true;
}

struct state {
        uint8_t *ring; /* exactly size bytes */
        uint32_t size, max;
        struct sn_ring_header *hdr;
        struct sn_ring_rx rx;
        struct sn_ring_tx tx;
        uint8_t *out;  /* max + CANARY bytes */
        uint8_t *snap; /* size bytes */
        uint8_t *msg;  /* the largest message of the ring */
};

static void check_canary(const struct state *s)
{
        for (uint32_t i = 0; i < CANARY; i++)
                if (s->out[s->max + i] != 0xcc)
                        FAIL("sn_ring_get wrote past its %u-byte output", s->max);
}

/* One sn_ring_get(); returns its answer. */
static int do_get(struct state *s)
{
        struct sn_ring_rx *rx = &s->rx;
        uint32_t oh = rx->head, oa = rx->avail, tail = sn_ring_load(&s->hdr->sq_tail);
        uint32_t len = 0xdeadbeef, kind = 0xdeadbeef, accepted;
        bool tail_ok;
        int r;

        /* What the consumer may accept: what it kept from before, else the tail now. */
        if (oa) {
                accepted = oh + oa;
                tail_ok = true;
        } else {
                accepted = tail;
                tail_ok = tail - oh <= s->size && (tail - oh) % 8 == 0;
        }
        r = sn_ring_get(rx, s->out, s->max, &len, &kind);
        check_canary(s);
        if (r != 1 && r != 0 && r != -EPROTO && r != -EMSGSIZE)
                FAIL("sn_ring_get returned %d", r);
        if (rx->head % 8)
                FAIL("head %u not 8-aligned", rx->head);
        if (!tail_ok) {
                if (r != -EPROTO || rx->head != oh || rx->avail != 0)
                        FAIL("impossible tail %u at head %u: returned %d, head %u", tail, oh, r,
                             rx->head);
                return r;
        }
        /* Kept bytes used up behind a WRAP, the consumer reads the tail again: it may then
         * accept the tail of now, when that is possible from where the kept bytes ended. */
        if (oa && rx->head + rx->avail != accepted && tail - accepted <= s->size &&
            (tail - accepted) % 8 == 0)
                accepted = tail;
        if (rx->head - oh > accepted - oh)
                FAIL("head %u passed the accepted tail %u (from %u)", rx->head, accepted, oh);
        if (rx->head + rx->avail != accepted)
                FAIL("head %u + avail %u is not the accepted tail %u", rx->head, rx->avail,
                     accepted);
        if (r == 0 && (rx->head != accepted || rx->avail != 0))
                FAIL("empty with head %u before the tail %u", rx->head, accepted);
        if (r != 1) {
                if (len != 0xdeadbeef || kind != 0xdeadbeef)
                        FAIL("sn_ring_get returned %d but set the length or kind", r);
                return r;
        }
        {
                uint32_t need = SN_RING_RECORD_HEADER + sn_ring_align(len);
                uint32_t start = rx->head - need, off = start & (s->size - 1), h[2];

                if (len > s->max)
                        FAIL("a %u-byte message taken into %u bytes", len, s->max);
                if (len > sn_ring_max_message(s->size))
                        FAIL("a %u-byte message from a ring of %u", len, s->size);
                if (kind != SN_RING_MSG && kind != SN_RING_SOCKET)
                        FAIL("record of kind %u returned", kind);
                if (kind == SN_RING_SOCKET && len != 0)
                        FAIL("SOCKET record with length %u returned", len);
                if (start - oh > rx->head - oh)
                        FAIL("record at %u starts before the old head %u", start, oh);
                if (off + need > s->size)
                        FAIL("record at offset %u of %u bytes straddles the end", off, need);
                memcpy(h, s->ring + off, sizeof(h));
                if (h[0] != len || h[1] != kind)
                        FAIL("returned {%u, %u}, the ring holds {%u, %u}", len, kind, h[0], h[1]);
                if (memcmp(s->out, s->ring + off + SN_RING_RECORD_HEADER, len))
                        FAIL("returned bytes are not the record's");
        }
        return r;
}

static void do_put(struct state *s, uint32_t len, uint32_t kind)
{
        struct sn_ring_tx *tx = &s->tx;
        uint32_t head = sn_ring_load(&s->hdr->sq_head), ot = tx->tail, used = ot - head;
        uint32_t mask = s->size - 1;
        int r;

        for (uint32_t i = 0; i < len && i <= sn_ring_max_message(s->size); i++)
                s->msg[i] = (uint8_t)(ot + i * 13);
        memcpy(s->snap, s->ring, s->size);
        r = sn_ring_put(tx, kind, len ? s->msg : NULL, len);
        if (r != 0 && r != -EAGAIN && r != -EMSGSIZE && r != -EPROTO)
                FAIL("sn_ring_put returned %d", r);
        if (r != 0) {
                if (tx->tail != ot || memcmp(s->snap, s->ring, s->size))
                        FAIL("sn_ring_put returned %d but wrote", r);
                if (r == -EPROTO && used <= s->size && used % 8 == 0)
                        FAIL("sn_ring_put refused the possible head %u (tail %u)", head, ot);
                if (r == -EMSGSIZE && len <= sn_ring_max_message(s->size))
                        FAIL("sn_ring_put refused %u bytes as too large", len);
                return;
        }
        if (used > s->size || used % 8)
                FAIL("sn_ring_put accepted the impossible head %u (tail %u)", head, ot);
        if (tx->tail - head > s->size || tx->tail - ot > s->size)
                FAIL("sn_ring_put wrote to %u, past the head %u", tx->tail, head);
        /* Only the bytes between the old and the new tail changed. */
        for (uint32_t p = tx->tail; p != ot + s->size; p++)
                if (s->ring[p & mask] != s->snap[p & mask])
                        FAIL("sn_ring_put changed byte %u outside %u..%u", p & mask, ot,
                             tx->tail);
        /* Read back from the old tail by a consumer of its own. */
        {
                uint32_t t = tx->tail, rlen, rkind;
                struct sn_ring_rx back = { .data = s->ring, .size = s->size, .head = ot,
                                           .ptail = &t, .phead = &t };
                int g = sn_ring_get(&back, s->out, s->max, &rlen, &rkind);

                if (len > s->max) {
                        if (g != -EMSGSIZE)
                                FAIL("read back of %u bytes into %u: %d", len, s->max, g);
                } else if (g != 1 || rlen != len || rkind != kind || back.head != t ||
                           memcmp(s->out, s->msg, len)) {
                        FAIL("the record put is not what is read back (%d)", g);
                }
                check_canary(s);
        }
        sn_ring_tx_publish(tx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct input in = { data, data + size };
        struct state s = { 0 };
        uint8_t sel;
        uint16_t max;
        uint32_t head;

        if (!take(&in, &sel, 1) || !take(&in, &head, 4) || !take(&in, &max, 2))
                return 0;
        s.size = 1u << (4 + sel % 13);
        s.max = max % (s.size + 1);
        head &= ~7u;
        s.ring = malloc(s.size);
        s.snap = malloc(s.size);
        s.msg = malloc(s.size);
        s.out = malloc(s.max + CANARY);
        s.hdr = calloc(1, sizeof(*s.hdr));
        if (!s.ring || !s.snap || !s.msg || !s.out || !s.hdr)
                goto out;
        for (uint32_t i = 0; i < s.size; i++)
                s.ring[i] = data[i % size];
        memset(s.out + s.max, 0xcc, CANARY);
        s.hdr->sq_head = head;
        s.hdr->sq_tail = head;
        s.rx = (struct sn_ring_rx){ .data = s.ring, .size = s.size, .head = head,
                                    .phead = &s.hdr->sq_head, .ptail = &s.hdr->sq_tail };
        s.tx = (struct sn_ring_tx){ .data = s.ring, .size = s.size, .tail = head,
                                    .ptail = &s.hdr->sq_tail, .phead = &s.hdr->sq_head };

        for (uint8_t op; take(&in, &op, 1);) {
                switch (op & 7) {
                case OP_TAIL_REL: {
                        int16_t d;

                        if (!take(&in, &d, 2))
                                goto out;
                        sn_ring_store(&s.hdr->sq_tail, s.rx.head + (uint32_t)(int32_t)d);
                        break;
                }
                case OP_TAIL_ABS:
                case OP_HEAD: {
                        uint32_t v;

                        if (!take(&in, &v, 4))
                                goto out;
                        sn_ring_store((op & 7) == OP_HEAD ? &s.hdr->sq_head : &s.hdr->sq_tail, v);
                        break;
                }
                case OP_WRITE: {
                        uint16_t off;
                        uint8_t n, b;

                        if (!take(&in, &off, 2) || !take(&in, &n, 1))
                                goto out;
                        for (uint32_t i = 0; i < n && take(&in, &b, 1); i++)
                                s.ring[(off + i) & (s.size - 1)] = b;
                        break;
                }
                case OP_GET: {
                        uint8_t n;

                        if (!take(&in, &n, 1))
                                goto out;
                        for (unsigned i = 0; i <= n; i++)
                                if (do_get(&s) <= 0)
                                        break;
                        break;
                }
                case OP_PUBLISH:
                        sn_ring_rx_publish(&s.rx);
                        if (sn_ring_load(&s.hdr->sq_head) != s.rx.head)
                                FAIL("published head is not the consumer's");
                        break;
                case OP_PUT: {
                        uint16_t len;
                        uint8_t kind;

                        if (!take(&in, &len, 2) || !take(&in, &kind, 1))
                                goto out;
                        do_put(&s, kind & 1 ? 0 : len, kind & 1 ? SN_RING_SOCKET : SN_RING_MSG);
                        break;
                }
                case OP_RECORD: {
                        uint32_t h[2];

                        if (!take(&in, h, sizeof(h)))
                                goto out;
                        memcpy(s.ring + (s.rx.head & (s.size - 1)), h, sizeof(h));
                        break;
                }
                }
        }
out:
        free(s.ring);
        free(s.snap);
        free(s.msg);
        free(s.out);
        free(s.hdr);
        return 0;
}

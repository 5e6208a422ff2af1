/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fuzz-decoder.c - libFuzzer target for the wire codec (proto/codec.c and the decoders that
 * proto/messages.def generates in proto/codec.h).
 *
 * One input is one received datagram.  The target runs it through what the daemon and the
 * client library do with bytes from the other side: sn_msg_check(), the tracer sn_msg_trace()
 * (with a roomy and with a tiny output buffer), and, when the check accepts it, the body and
 * every array item through their generated decoders.  Invariants checked (a violation aborts,
 * so libFuzzer reports it):
 *  - an accepted message has exactly the size its type and counts give (sn_msg_size());
 *  - decoding the body and every item, then encoding them again, gives back the input bytes
 *    (nothing is read outside the message, nothing is lost or invented);
 *  - the tracer's output is always terminated inside its buffer.
 * The input buffer given by libFuzzer is exactly as long as the input, so ASan reports any
 * read past the message.
 *
 * Built twice: with clang -fsanitize=fuzzer by `make fuzz`, and with the project's compiler and
 * tests/fuzz/driver.c as a regression driver that `make check` runs over tests/fuzz/regressions/.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/codec.h"
#include "tests/fuzz/fuzz.h"

#define FAIL(...)                                                                                  \
        do {                                                                                       \
                fprintf(stderr, "fuzz-decoder: invariant violated: " __VA_ARGS__);                 \
                fputc('\n', stderr);                                                               \
                abort();                                                                           \
        } while (0)

/* Re-encodes a decoded value of wire type NAME at q from the bytes at p; returns both ends. */
#define ROUND_TRIP(NAME, p, q)                                                                     \
        do {                                                                                       \
                struct snw_##NAME v_;                                                              \
                const uint8_t *e_ = snw_##NAME##_decode((p), &v_);                                 \
                uint8_t *f_ = snw_##NAME##_encode((q), &v_);                                       \
                if (e_ - (p) != SN_WIRE_SIZE_##NAME || f_ - (q) != SN_WIRE_SIZE_##NAME)            \
                        FAIL("%s decoder/encoder size mismatch", #NAME);                           \
                (p) = e_;                                                                          \
                (q) = f_;                                                                          \
        } while (0)

typedef void (*rt_fn)(const uint8_t **p, uint8_t **q);
#define SN__RT_FN(NAME)                                                                            \
        static void rt_##NAME(const uint8_t **p, uint8_t **q)                                      \
        {                                                                                          \
                ROUND_TRIP(NAME, *p, *q);                                                          \
        }
#define SN__RT_ITEM_FN(NAME, doc) SN__RT_FN(NAME)
SN_ITEMS(SN__RT_ITEM_FN)
SN_BODIES(SN__RT_FN)

/* The round-trip functions of a message type's body and arrays, from messages.def. */
static int rt_for(uint16_t type, rt_fn *body, rt_fn *item1, rt_fn *item2)
{
        switch (type) {
#define SN__RT_CASE(NAME, code, b, i1, i2, doc)                                                   \
        case code:                                                                                 \
                *body = rt_##b;                                                            \
                *item1 = rt_##i1;                                                          \
                *item2 = rt_##i2;                                                          \
                return 0;
                SN_MESSAGES(SN__RT_CASE)
#undef SN__RT_CASE
        }
        return -1;
}

static void check_round_trip(const uint8_t *data, size_t size, const struct snw_header *h,
                             const struct sn_msg_desc *d)
{
        rt_fn body, item1, item2;
        const uint8_t *p = data;
        uint8_t *out, *q;

        if (rt_for(h->type, &body, &item1, &item2) < 0)
                FAIL("type 0x%x accepted by sn_msg_check but not in messages.def", h->type);
        out = malloc(size);
        if (!out)
                return;
        q = out;
        ROUND_TRIP(header, p, q);
        body(&p, &q);
        if (p != sn_msg_array(data, d, 1))
                FAIL("%s: first array not where sn_msg_array() says", d->name);
        for (uint32_t i = 0; i < h->count; i++)
                item1(&p, &q);
        if (p != sn_msg_array(data, d, 2))
                FAIL("%s: second array not where sn_msg_array() says", d->name);
        for (uint32_t i = 0; i < h->count2; i++)
                item2(&p, &q);
        if ((size_t)(p - data) != size || (size_t)(q - out) != size)
                FAIL("%s: decoded %zu of %zu bytes", d->name, (size_t)(p - data), size);
        if (memcmp(out, data, size))
                FAIL("%s: re-encoding differs from the input", d->name);
        free(out);
}

static void check_trace(const uint8_t *data, size_t size, size_t outsz, unsigned max_items)
{
        char *line = malloc(outsz ? outsz : 1);

        if (!line)
                return;
        sn_msg_trace(line, outsz, data, size, max_items);
        if (outsz && !memchr(line, 0, outsz))
                FAIL("trace output not terminated in %zu bytes", outsz);
        free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const struct sn_msg_desc *d = NULL;
        struct snw_header h;
        int r;

        r = sn_msg_check(data, size, &h, &d);
        if (r == 0) {
                if (!d || sn_msg_size(h.type, h.count, h.count2) != size || h.size != size)
                        FAIL("accepted message of %zu bytes has another computed size", size);
                if (sn_msg_desc(h.type) != d)
                        FAIL("sn_msg_check and sn_msg_desc disagree on type 0x%x", h.type);
                check_round_trip(data, size, &h, d);
        } else if (r != -EBADMSG && r != -EOPNOTSUPP) {
                FAIL("sn_msg_check returned %d", r);
        }
        check_trace(data, size, 1024, 8);
        check_trace(data, size, 0, 8);
        /* A small buffer, its size chosen by the input: truncation must stay inside it. */
        check_trace(data, size, size ? 1 + data[size - 1] % 48 : 1, size ? data[0] % 4 : 0);
        return 0;
}

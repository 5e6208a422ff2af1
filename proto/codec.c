/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * codec.c - message table lookup, validation and tracing, generated from messages.def.
 *
 * Invariant: every function that reads message bytes is called only after sn_msg_check()
 * accepted the message, except sn_msg_check() itself and sn_msg_trace(), which checks first.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "proto/codec.h"

static const struct sn_msg_desc descs[] = {
#define SN__DESC(NAME, code, body, i1, i2, doc)                                                    \
        { code, #NAME, #body, #i1, #i2, SN_WIRE_SIZE_##body, SN_WIRE_SIZE_##i1, SN_WIRE_SIZE_##i2,  \
          doc },
        SN_MESSAGES(SN__DESC)
#undef SN__DESC
};

const struct sn_msg_desc *sn_msg_desc(uint16_t type)
{
        for (size_t i = 0; i < sizeof(descs) / sizeof(descs[0]); i++)
                if (descs[i].type == type)
                        return &descs[i];
        return NULL;
}

static uint64_t desc_size(const struct sn_msg_desc *d, uint64_t count, uint64_t count2)
{
        if ((d->item1_size == 0 && count) || (d->item2_size == 0 && count2))
                return 0;
        return (uint64_t)SN_HEADER_SIZE + d->body_size + count * d->item1_size +
               count2 * d->item2_size;
}

size_t sn_msg_size(uint16_t type, uint32_t count, uint32_t count2)
{
        const struct sn_msg_desc *d = sn_msg_desc(type);
        uint64_t n;

        if (!d)
                return 0;
        n = desc_size(d, count, count2);
        return n > SIZE_MAX ? 0 : (size_t)n;
}

int sn_msg_check(const uint8_t *buf, size_t len, struct snw_header *ret_hdr,
                 const struct sn_msg_desc **ret_desc)
{
        struct snw_header h;
        const struct sn_msg_desc *d;

        if (len < SN_HEADER_SIZE)
                return -EBADMSG;
        snw_header_decode(buf, &h);
        if (h.size != len)
                return -EBADMSG;
        d = sn_msg_desc(h.type);
        if (!d)
                return -EOPNOTSUPP;
        if (desc_size(d, h.count, h.count2) != len)
                return -EBADMSG;
        *ret_hdr = h;
        *ret_desc = d;
        return 0;
}

const uint8_t *sn_msg_array(const uint8_t *buf, const struct sn_msg_desc *d, int which)
{
        const uint8_t *p = buf + SN_HEADER_SIZE + d->body_size;

        if (which == 2)
                p += (size_t)sn_get_u32(buf + 16) * d->item1_size;
        return p;
}

uint8_t *sn_msg_begin(uint8_t *buf, uint16_t type, uint32_t id, uint32_t status, uint16_t nfds,
                      uint32_t count, uint32_t count2)
{
        struct snw_header h = {
                .size = (uint32_t)sn_msg_size(type, count, count2),
                .type = type,
                .nfds = nfds,
                .id = id,
                .status = status,
                .count = count,
                .count2 = count2,
        };
        return snw_header_encode(buf, &h);
}

/* ---- tracing --------------------------------------------------------------------------- */

struct out {
        char *p;
        size_t left;
        int full;
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (o->full)
                return;
        va_start(ap, fmt);
        n = vsnprintf(o->p, o->left, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= o->left) {
                o->full = 1;
                return;
        }
        o->p += n;
        o->left -= (size_t)n;
}

#define SN__TRACE_FIELD(t, n, d) outf(o, " " #n "=%" PRIu64, (uint64_t)s.n);
#define SN__TRACE_FN(name)                                                                         \
        static const uint8_t *trace_##name(struct out *o, const uint8_t *p)                        \
        {                                                                                          \
                struct snw_##name s;                                                                \
                p = snw_##name##_decode(p, &s);                                                     \
                SN_FIELDS_##name(SN__TRACE_FIELD) return p;                                        \
        }
#define SN__TRACE_ITEM_FN(name, doc) SN__TRACE_FN(name)
SN_ITEMS(SN__TRACE_ITEM_FN)
SN_BODIES(SN__TRACE_FN)

typedef const uint8_t *(*trace_fn)(struct out *, const uint8_t *);

static trace_fn trace_for(const char *name)
{
#define SN__TRACE_LOOKUP(n)                                                                        \
        if (!strcmp(name, #n))                                                                     \
                return trace_##n;
#define SN__TRACE_LOOKUP_ITEM(n, doc) SN__TRACE_LOOKUP(n)
        SN_ITEMS(SN__TRACE_LOOKUP_ITEM)
        SN_BODIES(SN__TRACE_LOOKUP)
#undef SN__TRACE_LOOKUP
        return NULL;
}

static void trace_array(struct out *o, const uint8_t *p, const char *item, uint32_t n,
                        uint32_t size, unsigned max_items)
{
        trace_fn fn = trace_for(item);

        if (!n || !fn)
                return;
        if (!strcmp(item, "byte")) {
                /* Client text goes to a log: control characters and quotes are escaped. */
                outf(o, " \"");
                for (uint32_t i = 0; i < n && i < 200; i++)
                        if (p[i] < 0x20 || p[i] == 0x7f || p[i] == '"' || p[i] == '\\')
                                outf(o, "\\x%02x", p[i]);
                        else
                                outf(o, "%c", p[i]);
                outf(o, "%s\"", n > 200 ? "..." : "");
                return;
        }
        for (uint32_t i = 0; i < n && i < max_items; i++) {
                outf(o, " [%s", item);
                fn(o, p + (size_t)i * size);
                outf(o, " ]");
        }
        if (n > max_items)
                outf(o, " (+%" PRIu32 " more)", n - max_items);
}

void sn_msg_trace(char *out, size_t outsz, const uint8_t *buf, size_t len, unsigned max_items)
{
        struct out o = { out, outsz, 0 };
        struct snw_header h;
        const struct sn_msg_desc *d;
        int r;

        if (!outsz)
                return;
        out[0] = 0;
        r = sn_msg_check(buf, len, &h, &d);
        if (r < 0) {
                outf(&o, "<undecodable message of %zu bytes: %s>", len,
                     r == -EOPNOTSUPP ? "unknown type" : "bad size");
        } else {
                outf(&o, "%s id=%" PRIu32, d->name, h.id);
                if (h.status)
                        outf(&o, " status=%" PRIu32, h.status);
                if (h.nfds)
                        outf(&o, " nfds=%" PRIu16, h.nfds);
                trace_for(d->body)(&o, sn_msg_body(buf));
                trace_array(&o, sn_msg_array(buf, d, 1), d->item1, h.count, d->item1_size,
                            max_items);
                trace_array(&o, sn_msg_array(buf, d, 2), d->item2, h.count2, d->item2_size,
                            max_items);
        }
        if (o.full && outsz > 4)
                memcpy(out + outsz - 4, "...", 4);
}

/* ---- field walk ------------------------------------------------------------------------ */

#define SN__WALK_FIELD(t, n, d) fn(ctx, section, index, #n, SN_WSIZE_##t * 8, (uint64_t)s.n);
#define SN__WALK_FN(name)                                                                          \
        static void walk_##name(const uint8_t *p, int section, uint32_t index, sn_msg_field_fn fn, \
                                void *ctx)                                                         \
        {                                                                                          \
                struct snw_##name s;                                                                \
                (void)section, (void)index, (void)fn, (void)ctx;                                   \
                snw_##name##_decode(p, &s);                                                         \
                SN_FIELDS_##name(SN__WALK_FIELD)                                                   \
        }
#define SN__WALK_ITEM_FN(name, doc) SN__WALK_FN(name)
SN_ITEMS(SN__WALK_ITEM_FN)
SN_BODIES(SN__WALK_FN)

typedef void (*walk_fn)(const uint8_t *, int, uint32_t, sn_msg_field_fn, void *);

static walk_fn walk_for(const char *name)
{
#define SN__WALK_LOOKUP(n)                                                                         \
        if (!strcmp(name, #n))                                                                     \
                return walk_##n;
#define SN__WALK_LOOKUP_ITEM(n, doc) SN__WALK_LOOKUP(n)
        SN_ITEMS(SN__WALK_LOOKUP_ITEM)
        SN_BODIES(SN__WALK_LOOKUP)
#undef SN__WALK_LOOKUP
        return NULL;
}

void sn_msg_fields(const uint8_t *buf, const struct sn_msg_desc *d, const struct snw_header *h,
                   sn_msg_field_fn fn, void *ctx)
{
        const char *items[2] = { d->item1, d->item2 };
        uint32_t counts[2] = { h->count, h->count2 };
        uint32_t sizes[2] = { d->item1_size, d->item2_size };

        walk_for(d->body)(sn_msg_body(buf), 0, 0, fn, ctx);
        for (int a = 0; a < 2; a++) {
                walk_fn w = walk_for(items[a]);
                const uint8_t *p = sn_msg_array(buf, d, a + 1);

                if (!w || !strcmp(items[a], "byte"))
                        continue;
                for (uint32_t i = 0; i < counts[a]; i++)
                        w(p + (size_t)i * sizes[a], a + 1, i, fn, ctx);
        }
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * vector-json.c - renders messages as the decoded form of the test vectors (vector-json.h).
 *
 * Invariant: the arrays of a message are read only after sn_msg_check() accepted it, so every
 * byte rendered is inside the message.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "proto/vector-json.h"

static json_t *jnum_u8(uint8_t v)
{
        return json_integer(v);
}
static json_t *jnum_u16(uint16_t v)
{
        return json_integer(v);
}
static json_t *jnum_u32(uint32_t v)
{
        return json_integer(v);
}
/* A u64 as a decimal string: keys, overlapped values and handles use all 64 bits, and a JSON
 * number above 2^53 is rounded by JavaScript and by any reader that parses doubles. */
static json_t *jnum_u64(uint64_t v)
{
        char s[24];

        snprintf(s, sizeof(s), "%" PRIu64, v);
        return json_string(s);
}

#define SNV__FIELD(t, n, d) json_object_set_new(o, #n, jnum_##t(s->n));
#define SNV__DEFINE(name)                                                                          \
        json_t *snv_json_##name(const struct snw_##name *s)                                        \
        {                                                                                          \
                json_t *o = json_object();                                                         \
                (void)s;                                                                           \
                SN_FIELDS_##name(SNV__FIELD) return o;                                             \
        }
#define SNV__DEFINE_ITEM(name, doc) SNV__DEFINE(name)
SNV__DEFINE(header)
SN_ITEMS(SNV__DEFINE_ITEM)
SN_BODIES(SNV__DEFINE)

typedef json_t *(*render_fn)(const uint8_t *p);

#define SNV__RENDER(name)                                                                          \
        static json_t *render_##name(const uint8_t *p)                                             \
        {                                                                                          \
                struct snw_##name s;                                                               \
                snw_##name##_decode(p, &s);                                                        \
                return snv_json_##name(&s);                                                        \
        }
#define SNV__RENDER_ITEM(name, doc) SNV__RENDER(name)
SN_ITEMS(SNV__RENDER_ITEM)
SN_BODIES(SNV__RENDER)

static render_fn render_for(const char *name)
{
#define SNV__LOOKUP(n)                                                                             \
        if (!strcmp(name, #n))                                                                     \
                return render_##n;
#define SNV__LOOKUP_ITEM(n, doc) SNV__LOOKUP(n)
        SN_ITEMS(SNV__LOOKUP_ITEM)
        SN_BODIES(SNV__LOOKUP)
#undef SNV__LOOKUP
#undef SNV__LOOKUP_ITEM
        return NULL;
}

/* One array of a checked message: a list of objects, or for byte arrays one string. */
static json_t *render_array(const uint8_t *p, const char *item, uint32_t n, uint32_t size)
{
        render_fn fn = render_for(item);
        json_t *a;

        if (!strcmp(item, "byte"))
                return json_stringn((const char *)p, n);
        a = json_array();
        for (uint32_t i = 0; a && i < n; i++)
                json_array_append_new(a, fn(p + (size_t)i * size));
        return a;
}

json_t *snv_decode(const uint8_t *buf, size_t len, int *ret_check)
{
        const struct sn_msg_desc *d;
        struct snw_header h;
        json_t *o = json_object(), *a;

        *ret_check = sn_msg_check(buf, len, &h, &d);
        if (!o || len < SN_HEADER_SIZE)
                return o;
        snw_header_decode(buf, &h);
        json_object_set_new(o, "header", snv_json_header(&h));
        if (*ret_check < 0)
                return o;
        json_object_set_new(o, "body", render_for(d->body)(sn_msg_body(buf)));
        if (strcmp(d->item1, "none")) {
                a = render_array(sn_msg_array(buf, d, 1), d->item1, h.count, d->item1_size);
                if (!a)
                        goto fail;
                json_object_set_new(o, "array1", a);
        }
        if (strcmp(d->item2, "none")) {
                a = render_array(sn_msg_array(buf, d, 2), d->item2, h.count2, d->item2_size);
                if (!a)
                        goto fail;
                json_object_set_new(o, "array2", a);
        }
        return o;
fail:
        json_decref(o);
        return NULL;
}

static const struct {
        uint32_t value;
        const char *name;
} errnos[] = {
#define E(x) { x, #x }
        E(ENOENT), E(EIO), E(E2BIG), E(EBADF), E(EAGAIN), E(ENOMEM), E(EACCES), E(EBUSY),
        E(EEXIST), E(EINVAL), E(EMFILE), E(EPROTO), E(EBADMSG), E(EUSERS), E(ENOTSOCK),
        E(EMSGSIZE), E(EPROTONOSUPPORT), E(EOPNOTSUPP), E(ESHUTDOWN), E(ETOOMANYREFS),
        E(ETIMEDOUT), E(ESTALE), E(EDQUOT), E(ECANCELED), E(EPERM),
#undef E
};

const char *snv_errno_name(uint32_t status)
{
        for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                if (errnos[i].value == status)
                        return errnos[i].name;
        return NULL;
}

uint32_t snv_errno_value(const char *name)
{
        for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                if (!strcmp(errnos[i].name, name))
                        return errnos[i].value;
        return 0;
}

void snv_hex(char *out, const uint8_t *buf, size_t len)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[buf[i] >> 4];
                out[2 * i + 1] = digits[buf[i] & 15];
        }
        out[2 * len] = 0;
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

long snv_unhex(uint8_t *buf, size_t cap, const char *hex)
{
        size_t n = strlen(hex);

        if (n % 2 || n / 2 > cap)
                return -1;
        for (size_t i = 0; i < n / 2; i++) {
                int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -1;
                buf[i] = (uint8_t)(hi << 4 | lo);
        }
        return (long)(n / 2);
}

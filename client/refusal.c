/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * refusal.c - which of the daemon's limits refused a call: sn_conn_refusal() and
 * sn_conn_error_detail().
 *
 * Nothing here runs unless a call failed with -EDQUOT: the call only notes, per thread, its
 * request id and which of its items went out as which (sn__refusal_note); the daemon keeps its
 * newest refusals per connection, and LIMIT_INFO asks for them when the caller wants to know.
 * Their numbers are the daemon's: an id this library does not know prints as a number, and a
 * record only ever names its request and items, which are matched, never used as indexes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "proto/codec.h"
#include "proto/limits.h"
#include "socknotify.h"

/* Refused items of the noted call that are kept (the first ones, in call order). */
#define NOTE_ITEMS 64
/* Records of a LIMIT_INFO_REPLY that are read (the newest; the daemon sends at most 8). */
#define READ_RECORDS 16

static __thread struct {
        const sn_conn_t *conn;
        uint32_t request;
        bool process;         /* a PROCESS call: items may have been refused */
        uint32_t n;           /* of user/wire */
        uint32_t user[NOTE_ITEMS], wire[NOTE_ITEMS];
} note;

void sn__refusal_note(sn_conn_t *c, uint32_t id, const sn_registration_t *regs,
                      const uint32_t *sent, uint32_t nsent)
{
        note.conn = c;
        note.request = id;
        note.process = regs != NULL;
        note.n = 0;
        for (uint32_t k = 0; k < nsent && note.n < NOTE_ITEMS; k++) {
                if (regs[sent[k]].result != -EDQUOT)
                        continue;
                note.user[note.n] = sent[k];
                note.wire[note.n] = k;
                note.n++;
        }
}

struct info {
        struct snw_refusal rec[READ_RECORDS];
        uint32_t n;
};

static void info_reply(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                       const struct sn_msg_desc *d)
{
        struct info *in = p->ctx;
        const uint8_t *it = sn_msg_array(buf, d, 1);
        uint32_t skip = h->count > READ_RECORDS ? h->count - READ_RECORDS : 0;

        if (h->status)
                return;
        /* sn_msg_check() proved count items are inside the message. */
        for (uint32_t i = skip; i < h->count; i++)
                snw_refusal_decode(it + (size_t)i * SN_WIRE_SIZE_refusal, &in->rec[in->n++]);
}

static void describe(const struct snw_refusal *r, uint32_t item, sn_refusal_t *out)
{
        const char *name = sn_limit_name_of(r->limit);
        const char *where;

        memset(out, 0, sizeof(*out));
        if (name)
                snprintf(out->limit, sizeof(out->limit), "%s", name);
        else
                snprintf(out->limit, sizeof(out->limit), "limit %u", (unsigned)r->limit);
        out->value = r->value;
        out->scope = r->scope;
        out->item = item;
        switch (r->scope) {
        case SN_PROTO_LIMIT_SCOPE_CONNECTION:
                where = ", for this connection";
                break;
        case SN_PROTO_LIMIT_SCOPE_PORT:
                where = ", on this port";
                break;
        case SN_PROTO_LIMIT_SCOPE_USER:
                where = ", for this user (all its connections)";
                break;
        case SN_PROTO_LIMIT_SCOPE_UNPRIVILEGED:
                where = ", for all users other than root and the daemon's together";
                break;
        case SN_PROTO_LIMIT_SCOPE_DAEMON:
                where = ", for the whole daemon";
                break;
        case SN_PROTO_LIMIT_SCOPE_REQUEST:
                where = ", the most a request may ask for";
                break;
        default:
                where = "";
                break;
        }
        if (name && !strncmp(name, "reserve-", 8))
                snprintf(out->text, sizeof(out->text),
                         "%s (%llu) reached: what it leaves to users other than root and the "
                         "daemon's is in use",
                         out->limit, (unsigned long long)r->value);
        else
                snprintf(out->text, sizeof(out->text), "%s (%llu) reached%s", out->limit,
                         (unsigned long long)r->value, where);
}

SN_EXPORT int sn_conn_refusal(sn_conn_t *c, uint32_t item, sn_refusal_t *ret)
{
        uint8_t buf[SN_HEADER_SIZE];
        struct info in = { .n = 0 };
        bool mine = note.conn == c;
        uint32_t wire = SN_REFUSAL_CALL;
        int r = sn__conn_usable(c);

        if (r < 0)
                return r;
        if (!ret)
                return -EINVAL;
        if (item != SN_REFUSAL_CALL) {
                if (!mine || !note.process)
                        return -ENOENT;
                for (uint32_t k = 0; k < note.n && wire == SN_REFUSAL_CALL; k++)
                        if (note.user[k] == item)
                                wire = note.wire[k];
                if (wire == SN_REFUSAL_CALL)
                        return -ENOENT;
        }
        sn_msg_begin(buf, SN_MSG_LIMIT_INFO, 0, 0, 0, 0, 0);
        r = sn__call(c, buf, sizeof(buf), SN_MSG_LIMIT_INFO_REPLY, info_reply, &in);
        if (r < 0)
                return r;
        /* Newest first: a request's records are in item order, and the same request id can
         * only come again after 2^32 requests. */
        for (uint32_t i = in.n; i-- > 0;) {
                const struct snw_refusal *rec = &in.rec[i];

                if (!mine) {
                        describe(rec, SN_REFUSAL_CALL, ret); /* no call noted: the newest */
                        return 0;
                }
                if (rec->request != note.request)
                        continue;
                if (item == SN_REFUSAL_CALL ? rec->first == SN_REFUSAL_CALL
                                            : rec->first != SN_REFUSAL_CALL &&
                                                      rec->first <= wire && wire <= rec->last) {
                        describe(rec, item, ret);
                        return 0;
                }
        }
        return -ENOENT;
}

SN_EXPORT const char *sn_conn_error_detail(sn_conn_t *c)
{
        static __thread sn_refusal_t last;
        int r = sn_conn_refusal(c, SN_REFUSAL_CALL, &last);

        /* A call whose items were refused, not the call itself: its first such item's. */
        if (r == -ENOENT && note.conn == c && note.process && note.n)
                r = sn_conn_refusal(c, note.user[0], &last);
        return r == 0 ? last.text : NULL;
}

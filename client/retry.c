/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * retry.c - which requests the library sends again when the daemon died while handling them.
 *
 * A request fails with EIO when its daemon ended before answering it: the daemon restored from
 * its journal under a service manager answers it so (status EIO, proto/PROTOCOL.md), and a
 * session that resumed on a new daemon without one fails it so (conn.c).  Whether it took
 * effect is unknown.  A request whose second application leaves the same state and gets the
 * same answer as the first is sent again, at most SN__RETRIES times, so that a call that keeps
 * crashing the daemon still ends (with EIO).  Every other request fails with EIO, as documented
 * (socknotify(3), docs/reconnect.md).  The Python binding keeps the same table (_client.py,
 * _AGAIN_AFTER_EIO): a change here is a change there.
 *
 * For each type, the reason, read from the protocol (proto/messages.def, PROTOCOL.md).
 */
#include "config.h"

#include <errno.h>

#include "client/client.h"
#include "common/macro.h"

static const struct {
        uint16_t type;
        bool again;
        uint32_t done; /* an answer to a second attempt that says the first took effect */
} rules[] = {
        /* A second port (or handle) would stay with the connection, unknown to the caller. */
        { SN_MSG_PORT_CREATE, false, 0 },
        /* A second open of the same port is refused (EEXIST), and its number is not in it. */
        { SN_MSG_PORT_OPEN, false, 0 },
        /* Closing a handle that is closed changes nothing: EBADF then says the first closed
         * it.  (After a resume the port was made again and is closed there.) */
        { SN_MSG_PORT_CLOSE, true, EBADF },
        /* By its items (sn__retry_op); a pure dequeue takes what is queued now. */
        { SN_MSG_PROCESS, true, 0 },
        /* Each POST queues its packets again: they would be delivered twice. */
        { SN_MSG_POST, false, 0 },
        /* Dropping a registration that is gone changes nothing: ENOENT then says the first
         * dropped it and closed the daemon's copy of the socket. */
        { SN_MSG_SOCKET_CLOSE, true, ENOENT },
        /* A read. */
        { SN_MSG_STATUS, true, 0 },
        /* Sets how long the port lingers: the same value twice is the same state; the reply
         * carries the time in force. */
        { SN_MSG_PORT_LINGER, true, 0 },
        /* The sockets taken by the first attempt went out with a reply nobody read: a second
         * one would take the rest, and those would be lost. */
        { SN_MSG_PORT_TAKE, false, 0 },
        /* An operator's request may be a re-exec or a reload; the library does not read it. */
        { SN_MSG_CONTROL, false, 0 },
};

bool sn__retry_safe(uint16_t type, uint32_t *ret_done)
{
        for (size_t i = 0; i < SN_ARRAY_SIZE(rules); i++) {
                if (rules[i].type == type) {
                        if (ret_done)
                                *ret_done = rules[i].done;
                        return rules[i].again;
                }
        }
        return false;
}

bool sn__retry_op(uint8_t op)
{
        switch (op) {
        case SN_OP_NONE:
                return true; /* not sent at all */
        case SN_OP_ENABLE:
                /* Sets key, filter and trigger and arms the registration: a second ENABLE with
                 * the same values leaves the same registration (one the first made is found
                 * by its socket and set again).  Readiness is read again, as after any crash:
                 * a notification may come once more, never less. */
                return true;
        case SN_OP_DISABLE:
                /* Disabled is disabled: the second answers 0 as the first. */
                return true;
        default:
                /* REMOVE: the second answers ENOENT once the first one's REMOVE entry was
                 * dequeued; unknown ops are the daemon's to refuse. */
                return false;
        }
}

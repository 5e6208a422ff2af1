/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * error.c - sn_strerror().
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "socknotify.h"

SN_EXPORT const char *sn_strerror(int err)
{
        const char *s;

        switch (err) {
        case 0:
                return "success";
        case -EBADFD:
                return "connection inherited across fork(); open a new one in this process";
        case -EPROTO:
                return "protocol error: not a socknotifyd, or no common protocol version";
        case -ECANCELED:
                return "the completion port was closed while waiting";
        case -ESHUTDOWN:
                return "socknotifyd is shutting down";
        case -ECONNRESET:
                return "session lost: the connection to socknotifyd ended (the daemon stopped "
                       "or crashed) and no daemon answered on its path again within "
                       "SOCKNOTIFY_RECONNECT_MS; its ports and registrations are gone; open a "
                       "new connection";
        case -EIO:
                return "socknotifyd ended while this call was in progress: it may or may not "
                       "have taken effect; the session was resumed on a new daemon";
        case -EACCES:
                return "permission denied; or the daemon now serving the socket path runs as "
                       "another user than the one that was lost, and the session was not "
                       "resumed there";
        case -EBADMSG:
                return "the daemon's reply broke the protocol (the descriptors it brought were "
                       "closed); the connection is lost";
        case -EDQUOT:
                return "refused by a socknotifyd limit (sn_conn_error_detail() names it and "
                       "its value)";
        case -ETIMEDOUT:
                return "timed out with nothing dequeued";
        case -ENOTSOCK:
                return "not a socket";
        case -EEXIST:
                return "socket already registered on another port, or its removal is pending";
        case -ENOENT:
                return "no such registration on this port";
        }
        s = err < 0 ? strerrordesc_np(-err) : NULL;
        return s ? s : "unknown error";
}

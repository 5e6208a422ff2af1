/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * hangup.h - whether a stream socket that polls as hung up was ended by its peer.
 *
 * HANGUP means that the peer ended the connection (its FIN or its close) or that the
 * connection was torn down (a reset, an error).  Linux marks the receive side shut down in
 * both cases and after a local shutdown(SHUT_RD) too, so POLLRDHUP alone cannot tell them
 * apart, and a local shutdown(SHUT_RDWR) gives POLLHUP as the peer's close does.  For TCP the
 * connection's state can: the states below are those in which no FIN came from the peer and
 * the connection is not closed, so a hang-up seen in them is a local shutdown.
 *
 * A Unix stream or seqpacket socket records a local shutdown(SHUT_RD) and its peer's
 * shutdown(SHUT_WR) the same way on both sockets (the kernel mirrors each shutdown on the
 * peer), so nothing can tell them apart: there the hang-up counts as the peer's, as it did
 * before (docs/compatibility.md).
 *
 * Used by the daemon when it translates readiness and by the library when it works out what
 * an EDGE registration owes after a resume; it costs one getsockopt(), so callers ask only
 * when the poll bits show a hang-up.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <sys/socket.h>

/* From the kernel's include/net/tcp_states.h. */
enum {
        SN__TCP_ESTABLISHED = 1,
        SN__TCP_SYN_SENT = 2,
        SN__TCP_SYN_RECV = 3,
        SN__TCP_FIN_WAIT1 = 4,
        SN__TCP_FIN_WAIT2 = 5,
};

/* fd (borrowed) polls with POLLRDHUP or POLLHUP: true when that is the peer's doing or a torn
 * down connection, false when only a local shutdown is behind it (TCP).  Any socket whose
 * state cannot be read (not TCP) answers true. */
static inline bool sn__hangup_is_peers(int fd)
{
        struct tcp_info ti;
        socklen_t len = sizeof(ti);

        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
            len < offsetof(struct tcp_info, tcpi_state) + sizeof(ti.tcpi_state))
                return true;
        switch (ti.tcpi_state) {
        case SN__TCP_ESTABLISHED:
        case SN__TCP_SYN_SENT:
        case SN__TCP_SYN_RECV:
        case SN__TCP_FIN_WAIT1: /* our FIN went out, none came in */
        case SN__TCP_FIN_WAIT2:
                return false;
        default: /* CLOSE_WAIT, LAST_ACK, CLOSING, TIME_WAIT: the peer's FIN came; CLOSE */
                return true;
        }
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fdmsg.h - sending and receiving one SOCK_SEQPACKET message with attached file descriptors.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * Sends one message of len bytes with nfds descriptors (borrowed: the caller still owns them).
 * flags are passed to sendmsg (MSG_NOSIGNAL is always added).  Returns 0 on success or a
 * negative errno; -EMSGSIZE when the message cannot go out as one datagram.
 */
int sn__fdmsg_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfds,
                   int flags);

/*
 * Receives one message into buf (cap bytes) and up to max_fds descriptors into fds, all
 * close-on-exec.  The caller owns the descriptors returned in *ret_nfds, on every outcome.
 * Returns the message length, 0 at end of stream, or a negative errno: -EMSGSIZE when the
 * message was larger than cap (truncated), -ETOOMANYREFS when the control data was truncated
 * (more fds than max_fds: all received fds are returned so they can be closed).
 */
ssize_t sn__fdmsg_recv(int sock, void *buf, size_t cap, int *fds, unsigned max_fds,
                       unsigned *ret_nfds, int flags);

/* sn__fdmsg_recv() taking every descriptor that came (fds holds SN_PROTO_MAX_FDS), and saying
 * in *ret_ctrunc whether the kernel dropped some (the receiver ran out of descriptors); the
 * message itself is returned all the same. */
ssize_t sn__fdmsg_recv_any(int sock, void *buf, size_t cap, int *fds, unsigned *ret_nfds,
                           bool *ret_ctrunc, int flags);

/* sn__fdmsg_recv_any() installing at most room descriptors (room < SN_PROTO_MAX_FDS): the
 * kernel drops any more the message carried, before they take room in the caller's table, and
 * *ret_ctrunc says so.  A room of 0 receives none. */
ssize_t sn__fdmsg_recv_room(int sock, void *buf, size_t cap, int *fds, unsigned room,
                            unsigned *ret_nfds, bool *ret_ctrunc, int flags);

/* Closes n descriptors of an array. */
void sn__fds_close(const int *fds, unsigned n);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * restore.h - the one reader of the daemon's state (restore.c): after a re-exec, an orderly stop
 * or a crash, the sessions come back from the journal and the descriptors its records name.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jr_record;
struct server;
struct session;

/*
 * What the reader asks of the transport that owns connections (daemon/service/, above it):
 * restore.c knows a client only as its session (daemon/objects/session.h), and answers it
 * through the session's ops.
 *
 *   adopt     a session on fd (its socket to the client) as record r describes it (serial,
 *             protocol version, flags), keeping the max_message and max_fds its handshake
 *             announced (0: unknown, the running image's apply); NULL when it cannot be made
 *             (fd stays the caller's)
 *   output    a reply that was queued and not taken by the kernel, queued again (0 or -ENOMEM)
 *   answered  whether a reply to request id is among s's queued replies
 *   stage     a multi-part call received as far as items and fds (taken, closed on failure);
 *             0 or a negative errno
 *   discard   the rest of call id's parts, still to come, are dropped
 */
struct restore_conn_ops {
        struct session *(*adopt)(struct server *srv, int fd, const struct jr_record *r,
                                 uint32_t max_message, uint32_t max_fds);
        int (*output)(struct session *s, const uint8_t *buf, size_t len);
        bool (*answered)(const struct session *s, uint32_t id);
        int (*stage)(struct session *s, uint32_t id, uint32_t port, uint32_t error,
                     const uint8_t *items, uint32_t nitems, int *fds, uint32_t nfds);
        void (*discard)(struct session *s, uint32_t id);
        /* The session's rings (version 3): fds in HELLO_REPLY's order (taken, closed on
         * failure); stalled: its SQ waits for a message of the socket.  Returns 0 or a negative
         * errno (the session is then ended: its client cannot go on without them). */
        int (*ring)(struct session *s, int *fds, bool stalled);
};

/*
 * Where the descriptors come from.  After a stop or a crash: by_tag[record number] is the
 * descriptor the boxes gave for that record (-1: none), and extra the others with their tags
 * (a record number is used again once its descriptor was dropped, and the box that still held
 * the dropped one may not have been rebuilt yet: the taker tells them apart by the socket's
 * identity).  After a re-exec (by_tag NULL): each record's own number, kept across execve()
 * with close-on-exec cleared; keep_fd is never taken.
 */
struct restore_fd {
        uint32_t tag;
        int fd;
};

struct restore_fds {
        int *by_tag;
        uint32_t ntags;
        struct restore_fd *extra;
        uint32_t nextra;
        bool sorted;
        int keep_fd;
};

struct restore_counts {
        uint32_t conns, ports, regs, posted, waits;
        uint32_t queued;      /* socket notifications that were queued, queued again */
        uint32_t replies;     /* replies that were queued, not yet taken by the kernel */
        uint32_t staged;      /* multi-part calls half received, going on */
        uint32_t interrupted; /* calls failed with EIO: in progress at a crash */
        uint32_t dropped;     /* registrations whose socket, port or creator was not found */
        uint32_t unused;      /* descriptors no record named (dropped just before a crash) */
        bool orderly;         /* left by a re-exec or an orderly stop */
};

/* Takes the descriptor record tag names (number: its number in the old process), which must be
 * the file (dev, ino) unless both are 0; -1 if none is. */
int restore_fds_take(struct restore_fds *s, uint32_t tag, uint32_t number, uint64_t dev,
                     uint64_t ino);
/* Keeps fd as a candidate for record tag (fdstore.c). */
void restore_fds_add(struct restore_fds *s, int fd, uint32_t tag);
/* Closes what was not taken (counted in *ret_unused when not NULL) and frees s's arrays. */
void restore_fds_done(struct restore_fds *s, uint32_t *ret_unused);
/* Whether journal (size bytes) is one this daemon can read: 0 or -EBADMSG. */
int restore_check(const uint8_t *journal, size_t size);
/* The listening socket the journal names (and whether the daemon made its path): a descriptor,
 * or a negative errno (-ENOENT: none). */
int restore_listen(const uint8_t *journal, size_t size, struct restore_fds *fds,
                   bool *ret_owns_path);
/* Rebuilds srv's sessions from journal, its connections through ops; 0 or a negative errno
 * (what was restored stays). */
int restore_state(struct server *srv, const struct restore_conn_ops *ops,
                  const uint8_t *journal, size_t size, struct restore_fds *fds,
                  struct restore_counts *out);
/* After a re-exec: closes the descriptors the journal named that no object took. */
void restore_sweep(const uint8_t *journal, size_t size, struct restore_fds *fds,
                   uint32_t *ret_unused);

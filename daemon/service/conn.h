/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * conn.h - one client connection (conn.c): its messages, requests and replies.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/list.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/session.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "daemon/state/journal.h"

struct conn_ring;
struct monitor;
struct server;
struct ucred;
struct user;

struct outmsg {
        struct sn_list link;
        uint32_t jr; /* the first of its journal records (persist.c), 0 for none */
        size_t len;
        size_t cost; /* bytes charged to the connection and its user */
        uint8_t data[];
};

struct conn_stage {
        bool active;
        uint32_t id;
        uint32_t port;
        uint32_t error;
        uint8_t *items; /* wire-encoded registrations */
        uint32_t nitems, cap;
        int *fds;
        uint32_t nfds, fdcap;
        uint32_t held; /* fds counted in the user's quota */
        /* In the journal (persist.c): the items' records, chained from jr_first, and each
         * descriptor's record and box (keep[i] for fds[i], made as they are journaled). */
        uint32_t jr_first, jr_last;
        struct jr_keep **keep;
};


struct conn {
        /* What the objects see of it, as struct session (&c->session, the ops filled in by
         * conn.c) and, overlaid, as members of its own (c->uid): the two name the same
         * memory, as members of a union with identical declarations may (C11 6.5.2.3). */
        union {
                struct session session;
                struct {
                        SN_SESSION_MEMBERS
                };
        };
        struct sn_list link; /* in server->conns */
        int fd;
        struct event ev;
        bool writing;
        bool hello;
        uint16_t version;         /* protocol version chosen at HELLO */
        struct conn_ring *ring;   /* its shared-memory rings (version 3), or NULL: the socket */
        struct conn_stage stage;
        struct sn_list outq;
        size_t outq_bytes;        /* real allocation held by outq, counted against limits */
        uint32_t violations;      /* protocol violations, for the per-connection log limit */
        bool passed_fds;          /* has sent descriptors: swept when its process is gone */
        bool discarding;          /* dropping the remaining parts of call discard_id */
        uint32_t discard_id;
        struct event hello_timer; /* handshake timeout, armed until HELLO */
        struct timespec started;  /* CLOCK_MONOTONIC at accept (or restore) */
        struct sn_list dead_link; /* in server->dead */
        uint32_t jr;              /* journal record (persist.c), 0 for none */
        struct box_ref box;       /* its socket in the journal's boxes */
        /* Descriptors of its last PORT_TAKE reply, maybe still unread (in flight, charged to
         * the daemon's RLIMIT_NOFILE by the kernel); on server->take_unread while not 0. */
        uint32_t take_unread;
        struct sn_list take_link;
        struct monitor *mon; /* when it monitors the others (monitor.c), else NULL */
};

/* The connection whose session s is (every session is a connection's today). */
static inline struct conn *conn_of_session(struct session *s)
{
        return s ? sn_list_entry(s, struct conn, session) : NULL;
}

void conn_accept(struct server *srv, int fd);
/* Re-exec: a connection restored on fd with its identity (no handshake timer once hello) and,
 * once hello, the max_message and max_fds its handshake announced (0: the running image's).
 * NULL when it cannot be made (out of memory). */
struct conn *conn_adopt(struct server *srv, int fd, const struct ucred *cred, uint64_t serial,
                        bool hello, uint32_t max_message, uint32_t max_fds);
/* Re-exec: a reply that was queued, not yet sent.  Returns 0 or -ENOMEM. */
int conn_adopt_output(struct conn *c, const uint8_t *buf, size_t len);
/* Queues a reply to be sent later by the loop (or by the next image after a re-exec), or
 * NULL when out of memory; conn_defer_cancel() takes it back before it was sent. */
struct outmsg *conn_defer(struct conn *c, const uint8_t *buf, size_t len);
void conn_defer_cancel(struct conn *c, struct outmsg *m);
/* Re-exec: an unfinished multi-part call; takes fds.  Returns 0 or -EINVAL/-ENOMEM. */
int conn_adopt_stage(struct conn *c, uint32_t id, uint32_t port, uint32_t error,
                     const uint8_t *items, uint32_t nitems, int *fds, uint32_t nfds);
/* Restore: the connection's rings, from their descriptors (fds in HELLO_REPLY's order, taken);
 * stalled: its SQ waits for a message of the socket.  Returns 0 or a negative errno. */
int conn_adopt_ring(struct conn *c, int *fds, bool stalled);
/* Sends ERROR with status (id 0) on a connection being refused, and closes fd. */
void conn_refuse(struct server *srv, int fd, uint32_t status);
void conn_free(struct conn *conn, uint32_t status);
/*
 * Marks the connection dead; the reaper frees it at the next turn of the loop.  Lifetime rule:
 * conn_kill() frees nothing, so it is safe from any depth (every send may call it).  It detaches
 * the connection's waits from their ports and stops their timers, so no other path can reach
 * them; they stay on conn->waits until conn_free() or their holder's wait_free().
 */
void conn_kill(struct conn *conn, const char *why);
/* Replies are queued for it (sent before anything else goes out on its socket). */
bool conn_output_pending(const struct conn *conn);
/* Wakes the loop when its socket has room again (conn_flush(), then monitor_flush()). */
void conn_want_write(struct conn *conn);
/* Sends one encoded message (queued when the socket is full). */
void conn_send(struct conn *conn, const uint8_t *buf, size_t len);
/* Encodes and sends a PROCESS_REPLY. */
void conn_reply_process(struct conn *conn, uint32_t id, uint32_t status, const uint32_t *results,
                        uint32_t nresults, const uint8_t *entries, uint32_t nentries);
/* Sends ERROR with status for request id. */
void conn_reply_error(struct conn *c, uint32_t id, uint32_t status);
/* Sends a reply of type with status and text (len bytes) as its byte array. */
void conn_reply_text(struct conn *conn, uint16_t type, uint32_t id, uint32_t status,
                     const char *text, size_t len);

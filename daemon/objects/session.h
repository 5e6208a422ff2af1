/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * session.h - a client as the objects see it, and the way their answers leave.
 *
 * Ports, registrations, waits, runners and the users' accounting never know how a client
 * reaches the daemon.  They hold a struct session: who the client is (serial, credentials,
 * its user), what it holds (handles, registrations, runners, parked calls, and their counts),
 * and ops, through which an answer goes out.  A transport embeds a session and fills in the
 * ops: today a connection on the daemon's socket (service/conn.c).  A shared-memory transport
 * is one more implementation of the same ops, writing the answer into its ring instead of a
 * socket; nothing below it changes.  Waits, handles and runners point to their session, a
 * registration to the session that made it (its creator, NULL once it is an orphan).
 *
 * What every implementation of the ops keeps, because the objects rely on it:
 *  - An op runs at any depth, inside any object's function, and frees nothing: no object, no
 *    session.  When a client cannot take an answer (its transport is full past its limit),
 *    the op ends the session the way kill does, and returns normally.
 *  - kill marks the session dead and detaches its waits (wait_detach()), so no object path
 *    reaches them or answers them again (holdings_detach_waits()); the session and what it
 *    holds are freed later, off every object's stack, by the transport (holdings_release()).
 *  - reply_process and reply_error copy what they need before they return: results and
 *    entries point into the caller's buffers.
 *  - An answer to a dead session goes nowhere and is no error: a kill deeper in the same call
 *    may have come first.  A dead session's waits are off their ports, so no dispatch picks
 *    them; its other objects stay linked until the transport frees them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/list.h"

struct server;
struct session;
struct user;

/* One request refused by a limit, as LIMIT_INFO_REPLY gives it (PROTOCOL.md, section 7a):
 * refusals in a row of the same request by the same limit share one record. */
struct refusal {
        uint32_t request;
        uint32_t first, last;   /* its registration items; SESSION_NO_ITEM: the request itself */
        uint16_t limit, scope;  /* proto/limits.h */
        uint64_t value;
};

/* The newest refusals a session keeps, and the item number of a request as a whole. */
#define SESSION_REFUSALS 8
#define SESSION_NO_ITEM 0xffffffffu

/* Whether the client has read an answer (session_answer_read()).  On the rings the client
 * gives an answer's space back once the thread it is for has it (PROTOCOL.md, section 4):
 * TAKEN.  On the socket the daemon only sees that the process received it, maybe by another
 * thread that is still to wake the one it is for: RECEIVED. */
enum session_answer {
        SESSION_UNREAD,
        SESSION_TAKEN,
        SESSION_RECEIVED,
};

/* Where an answer goes in the client's stream: on the rings the completion ring's position it
 * starts at, unless the daemon's own queue held other answers before it (queued): then it is
 * only known to come after them, and answer_read() fixes pos when the queue is empty. */
struct session_mark {
        uint32_t pos;
        bool queued;
};

struct session_ops {
        /* Answers call id (a PROCESS request) with status, the per-registration results of the
         * call (nresults) and nentries wire-encoded entries (SN_WIRE_SIZE_entry each). */
        void (*reply_process)(struct session *s, uint32_t id, uint32_t status,
                              const uint32_t *results, uint32_t nresults, const uint8_t *entries,
                              uint32_t nentries);
        /* Answers call id with an ERROR of status. */
        void (*reply_error)(struct session *s, uint32_t id, uint32_t status);
        /* Ends the session (why: for the log), by the rules above. */
        void (*kill)(struct session *s, const char *why);
        /* A mark of where the next answer goes in the client's stream, and whether the client
         * has read past mark (SESSION_UNREAD when it cannot be told: conservative).  Read from
         * memory the client writes, so only ever used to decide about the client's own
         * threads. */
        struct session_mark (*answer_mark)(struct session *s);
        enum session_answer (*answer_read)(struct session *s, struct session_mark *mark);
};

/*
 * The members of a session, declared once here so that a transport can also name them
 * directly (service/conn.h: struct conn holds them as struct session and, overlaid in a union,
 * as its own members).  Keep the two views identical: only ever change this list.
 */
#define SN_SESSION_MEMBERS                                                                         \
        const struct session_ops *ops;                                                             \
        struct server *srv;                                                                        \
        struct user *user;       /* charged for all the session holds */                          \
        uint64_t serial;         /* unique for the daemon's life, kept across a re-exec */        \
        pid_t pid;               /* credentials of the peer (SO_PEERCRED) */                      \
        uid_t uid;                                                                                 \
        gid_t gid;                                                                                 \
        bool dead;               /* killed: answers no more, freed soon */                        \
        /* The message size and descriptors per message its handshake announced (HELLO_REPLY):     \
         * the client sized its buffers by them, so they hold for the session's whole life,        \
         * across reloads, re-execs and restarts, whatever the running image's are. */             \
        uint32_t max_message;                                                                      \
        uint32_t max_fds;                                                                          \
        struct sn_list handles;  /* struct handle */                                               \
        uint32_t nports;                                                                           \
        struct sn_list regs;     /* struct reg it made (their conn_link) */                       \
        struct sn_list runners;  /* struct runner */                                               \
        uint32_t nrunners;       /* at most max_waits (port_mark_running) */                      \
        int pidns;               /* 0 not read yet, else taskstate_ns() of pid (port.c) */        \
        /* HELLO's SELF: the client schedules its threads itself (Go, virtual threads, Tokio);  \
         * its waiters' states are never read, so each counts as running until it calls again. */ \
        bool self_scheduled;                                                                       \
        struct sn_list waits;    /* struct wait */                                                 \
        uint32_t nwaits;                                                                           \
        uint32_t req_id;         /* the request being handled, or the last one */                 \
        uint32_t req_item;       /* its registration item being applied, or SESSION_NO_ITEM */   \
        uint32_t nrefused;       /* refusal records made so far (a ring by this count) */      \
        struct refusal refusals[SESSION_REFUSALS];

struct session {
        SN_SESSION_MEMBERS
};

static inline void session_reply_process(struct session *s, uint32_t id, uint32_t status,
                                         const uint32_t *results, uint32_t nresults,
                                         const uint8_t *entries, uint32_t nentries)
{
        s->ops->reply_process(s, id, status, results, nresults, entries, nentries);
}

static inline void session_reply_error(struct session *s, uint32_t id, uint32_t status)
{
        s->ops->reply_error(s, id, status);
}

static inline void session_kill(struct session *s, const char *why)
{
        s->ops->kill(s, why);
}

static inline struct session_mark session_answer_mark(struct session *s)
{
        return s->ops->answer_mark(s);
}

static inline enum session_answer session_answer_read(struct session *s,
                                                      struct session_mark *mark)
{
        return s->ops->answer_read(s, mark);
}

/* Starts s with ops and nothing held; the caller sets who it is (srv, user, serial, pid, uid,
 * gid) and charges its user. */
static inline void session_init(struct session *s, const struct session_ops *ops)
{
        s->ops = ops;
        sn_list_init(&s->handles);
        sn_list_init(&s->regs);
        sn_list_init(&s->runners);
        sn_list_init(&s->waits);
}

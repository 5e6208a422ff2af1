/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * client.h - internals of libsocknotify shared by its files.  Non-static names use the sn__
 * prefix so that static linking cannot collide with the application.
 *
 * Threads and replies: one connection carries the requests of every thread.  Each request is
 * a struct sn_pending on its caller's stack, found by request id.  Whichever waiting thread
 * finds nobody reading becomes the reader: it receives one reply, decodes it into the arrays
 * of the caller it belongs to (under the lock), wakes that caller, and either keeps reading
 * (its own reply has not come) or hands the role to another waiting thread.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/codec.h"
#include "socknotify.h"

struct sn_pending;
typedef void (*sn_reply_fn)(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                            const struct sn_msg_desc *d);

struct sn_pending {
        struct sn_pending *next;
        uint32_t id;
        uint16_t expect;  /* reply type */
        bool done;
        bool waiting;     /* asleep on cond, waiting for the reader */
        bool async;       /* belongs to a submitted call (async.c): completed, not signalled */
        int status;       /* 0 or negative errno, from the reply header or the transport */
        pthread_cond_t cond;
        sn_reply_fn on_reply;
        void *ctx;
        /* Cancellation (sn__wait): a dequeuing PROCESS names its port and thread, and how to
         * take back the entries already decoded into the cancelled caller's arrays. */
        uint32_t port, thread;
        uint32_t (*salvage)(struct sn_pending *p, sn_entry_t **ret_entries);
        bool relay;     /* a pure dequeue: it may return stashed entries instead (-EINPROGRESS) */
        bool abandoned; /* heap copy left by its caller: its reply is stashed */
        bool gone;      /* ... by a cancelled caller, whose thread is gone */
        /* A reply that brings descriptors (PORT_TAKE): they are moved to fds (room for
         * SN_PROTO_MAX_FDS), their number to nfds; fds_cut when the kernel dropped some. */
        int *fds;
        unsigned nfds;
        bool fds_cut;
};

/* Entries that reached a cancelled sn_port_dequeue(): the next call on the port returns them
 * (conn.c). */
struct sn_orphans {
        struct sn_orphans *next;
        uint32_t port;
        uint32_t thread; /* the thread they were given to, */
        bool gone;       /* cancelled: reported gone (THREAD_EXIT) when they are taken */
        uint32_t n, first;
        sn_entry_t e[];
};

/* What the library remembers of a descriptor it registered (rule L1, L2). */
struct sn_fdcache {
        uint64_t dev, ino;
        uint32_t port; /* 0: no registration made through this descriptor */
};

struct sn_conn {
        struct sn_conn *next_live; /* in the list of open connections (conn.c) */
        int fd;
        uint64_t fork_gen;
        bool trace;
        pthread_mutex_t lock;      /* everything below */
        pthread_mutex_t send_lock; /* keeps the parts of one call together */
        bool reader_active;
        bool broken;
        struct sn_pending *pending;
        uint32_t next_id;
        uint8_t *rbuf;
        sn_limits_t limits;
        uint16_t version; /* protocol version of the connection */
        struct sn_fdcache *cache;
        uint32_t cache_cap;
        struct sn_orphans *orphans; /* oldest first */
        /* Submitted calls (async.c), under lock: completed ones wait in done_head..done_tail
         * until collected; efd is readable while that list is not empty, and pollfd (an epoll
         * instance of efd and fd) is what the application polls.  -1 until first used. */
        int efd, pollfd;
        struct sn_call *done_head, *done_tail;
        struct sn_call *calls; /* every call not yet freed (for sn_conn_close) */
};

/* A port object lives while its creator's reference or any call in progress holds it;
 * sn_port_close() closes it on the daemon at once and drops the creator's reference. */
struct sn_port {
        sn_conn_t *conn;
        uint32_t id;
        int refs; /* atomic */
};

sn_port_t *sn__port_ref(sn_port_t *port);
sn_port_t *sn__port_unref(sn_port_t *port);

/* Checks that conn may be used by this process: -EBADFD after fork, -ECONNRESET once lost. */
int sn__conn_usable(sn_conn_t *conn);
/* Whether a PROCESS_REPLY (header h) fits the call it answers: nsent results when its status
 * is 0 or ETIMEDOUT (else none or nsent), and at most max_entries entries. */
bool sn__process_reply_valid(const struct snw_header *h, uint32_t nsent, uint32_t max_entries);
/* The daemon broke the protocol (a reply that cannot be trusted): the connection is lost, as
 * when the daemon goes away; every waiting and later call fails with -ECONNRESET.  Takes
 * conn->lock. */
void sn__conn_violation(sn_conn_t *conn);
/* Registers p (id assigned) before its request is sent. */
void sn__pending_add(sn_conn_t *conn, struct sn_pending *p, uint16_t expect, sn_reply_fn fn,
                     void *ctx);
/* Removes p if it is still waiting (after a failed send). */
void sn__pending_remove(sn_conn_t *conn, struct sn_pending *p);
/* Sends one message (caller holds send_lock when a call has several parts). */
int sn__send(sn_conn_t *conn, const uint8_t *buf, size_t len, const int *fds, unsigned nfds);
/* Waits for p's reply; returns p->status.  For a dequeue (p->salvage set), a cancellation
 * point (pthread_cancel) while it blocks: the cancelled caller's request is left to a heap copy that stashes the entries of its
 * late reply for the next call on the port (see sn__orphans_take); the connection stays usable.
 * A relay request (pure dequeue) returns -EINPROGRESS when entries were stashed for its port
 * meanwhile: its own request is left behind the same way, and the caller takes the stash. */
int sn__wait(sn_conn_t *conn, struct sn_pending *p);
/* Moves up to max entries stashed for port (by cancelled callers) to entries; returns how many
 * (0: none).  Reports the cancelled threads gone to the daemon (THREAD_EXIT). */
uint32_t sn__orphans_take(sn_conn_t *conn, uint32_t port, sn_entry_t *entries, uint32_t max);
/* One request with a body-only reply: sends, waits, returns status. */
int sn__call(sn_conn_t *conn, const uint8_t *buf, size_t len, uint16_t expect, sn_reply_fn fn,
             void *ctx);
/* The calling thread's id for the concurrency rule; remembers that this thread waited on conn,
 * so that its exit is reported to the daemon (THREAD_EXIT). */
uint32_t sn__thread_id(sn_conn_t *conn);
/* A per-thread buffer of at least size bytes, valid until the thread's next call. */
uint8_t *sn__msgbuf(size_t size);

/* Reads, without blocking, every reply already received, when no other thread is reading
 * (conn.c).  Returns 0, or -ECONNRESET once the connection is lost. */
int sn__conn_pump(sn_conn_t *conn);
/* Submitted calls (async.c), called with conn->lock held: p's reply was decoded; the
 * connection is lost (every submitted call still pending completes with -ECONNRESET); the
 * connection closes (every call is freed). */
void sn__async_done(sn_conn_t *conn, struct sn_pending *p);
void sn__async_lost(sn_conn_t *conn);
void sn__async_release(sn_conn_t *conn);

/* Descriptor cache (socket.c); callers hold conn->lock. */
struct sn_fdcache *sn__cache_get(sn_conn_t *conn, int fd);
int sn__cache_set(sn_conn_t *conn, int fd, uint64_t dev, uint64_t ino, uint32_t port);
void sn__cache_forget_port(sn_conn_t *conn, uint32_t port);

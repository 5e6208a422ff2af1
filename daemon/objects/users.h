/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * users.h - per-uid accounting and the unprivileged users' pool (users.c).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/list.h"
#include "daemon/base/htable.h"

struct session;
struct server;

/*
 * What all unprivileged users together make the daemon hold: users other than root and the
 * daemon's own (privileged: they may use the reserve).  Bounded by the pools of struct limits:
 * limits_fd_pool(), limits_conn_pool() and the max_*_unprivileged limits.
 */
struct pool {
        uint64_t fds;    /* connections, ports' epoll instances, held sockets and duplicates */
        uint32_t conns;
        uint64_t output; /* bytes, as struct user's */
        uint64_t posted; /* the counts of struct user's nposted, nstaged and nwaits */
        uint64_t staged;
        uint64_t waits;
        uint64_t take;   /* descriptors in unread PORT_TAKE replies (conn.c, take_room()) */
};

/*
 * Per-uid accounting: one user can never take the descriptors or memory other users need.  The
 * record lives while any of its counts is not zero (user_release() frees it then).  Connections,
 * ports, sockets, waits, posted packets, staged items and output change only through the
 * user_charge_*() functions below, which keep
 * the unprivileged pool in step: every path, a re-exec's and a restore's included, goes through
 * them, so the pool never needs rebuilding.
 */
struct user {
        struct sn_list link; /* in server->users */
        struct htable_node node; /* in server->users_by_uid */
        struct htable *table;    /* that table, to leave it */
        uid_t uid;
        struct pool *pool;  /* the server's pool of unprivileged users; NULL when privileged */
        uint32_t nconns;
        uint32_t nrings;    /* connections with shared-memory rings (version 3) */
        uint32_t nports;
        uint32_t nsockets;  /* registrations whose socket the daemon holds, and staged fds */
        uint32_t nregs;
        uint32_t nwaits;
        uint32_t nposted;
        uint32_t nstaged;   /* registration items of unfinished multi-part calls */
        size_t output;      /* bytes of queued replies and parked calls' results */
        uint64_t refused;   /* requests refused by a per-user limit or the pool */
        /* Ring doorbells that found no work (service/conn.c): a bucket that fills at
         * max_doorbells_per_user a second, up to that many. */
        uint64_t bell_stamp_ns;
        uint32_t bell_tokens;
        uint64_t bell_mutes; /* times one of its connections' doorbells was muted */
        /* Reads of its threads' scheduler states from /proc (port.c): a bucket that fills at
         * TASK_READS_PER_MS a millisecond up to TASK_READS_BURST; a thread id mapping may take
         * it below 0, and nothing is read until it is above 0 again. */
        uint64_t task_stamp_ns;
        int32_t task_tokens;
        uint64_t task_reads; /* /proc files read for its threads, in all */
};

/* The user's record, made on first use (NULL when out of memory). */
struct user *user_get(struct server *srv, uid_t uid);
/* Frees u when nothing is charged to it any more. */
void user_release(struct user *u);

/* Connections (each a descriptor) of u change by delta. */
static inline void user_charge_conns(struct user *u, int32_t delta)
{
        u->nconns += (uint32_t)delta;
        if (u->pool) {
                u->pool->conns += (uint32_t)delta;
                u->pool->fds += (uint64_t)(int64_t)delta;
        }
}

/* Ports (each an epoll descriptor) of u change by delta. */
static inline void user_charge_ports(struct user *u, int32_t delta)
{
        u->nports += (uint32_t)delta;
        if (u->pool)
                u->pool->fds += (uint64_t)(int64_t)delta;
}

/* Sockets held for u (registrations, their EDGE duplicates, staged) change by delta. */
static inline void user_charge_sockets(struct user *u, int64_t delta)
{
        u->nsockets += (uint32_t)delta;
        if (u->pool)
                u->pool->fds += (uint64_t)delta;
}

/* Output bytes of u (queued replies, parked calls' results) change by delta. */
static inline void user_charge_output(struct user *u, int64_t delta)
{
        u->output += (size_t)delta;
        if (u->pool)
                u->pool->output += (uint64_t)delta;
}

/* Parked calls of u change by delta. */
static inline void user_charge_waits(struct user *u, int32_t delta)
{
        u->nwaits += (uint32_t)delta;
        if (u->pool)
                u->pool->waits += (uint64_t)(int64_t)delta;
}

/* Posted packets queued on the ports of u change by delta. */
static inline void user_charge_posted(struct user *u, int64_t delta)
{
        u->nposted += (uint32_t)delta;
        if (u->pool)
                u->pool->posted += (uint64_t)delta;
}

/* u's connections with rings change by delta: each holds 3 descriptors, counted with u's
 * sockets (so within --max-sockets-per-user: a user's share of the pool stays what the
 * per-user limits give it), and bytes of memory, counted with the output bytes. */
static inline void user_charge_rings(struct user *u, int32_t delta, uint64_t bytes)
{
        u->nrings += (uint32_t)delta;
        user_charge_sockets(u, 3 * (int64_t)delta);
        u->output += (size_t)((int64_t)delta * (int64_t)bytes);
        if (u->pool)
                u->pool->output += (uint64_t)((int64_t)delta * (int64_t)bytes);
}

/* Registration items of u's unfinished multi-part calls change by delta. */
static inline void user_charge_staged(struct user *u, int64_t delta)
{
        u->nstaged += (uint32_t)delta;
        if (u->pool)
                u->pool->staged += (uint64_t)delta;
}

/* Whether u may make the daemon hold n more descriptors, for session s (NULL: none yet): 0, or
 * -EDQUOT when u is unprivileged and all unprivileged users together, with the descriptors the
 * closer thread has still to close, would exceed the pool (logged as a refusal by
 * --reserve-fds, counted in u->refused).  Never refuses a restore. */
int user_check_fds(struct server *srv, struct user *u, struct session *s, uint64_t n);
/* The same for n more bytes of output: -EDQUOT past --max-output-unprivileged. */
int user_check_output(struct server *srv, struct user *u, struct session *s, uint64_t n);
/* The same for n more parked calls (--max-waits-unprivileged), posted packets
 * (--max-posted-unprivileged) and staged items (--max-staged-unprivileged). */
int user_check_waits(struct server *srv, struct user *u, struct session *s, uint64_t n);
int user_check_posted(struct server *srv, struct user *u, struct session *s, uint64_t n);
int user_check_staged(struct server *srv, struct user *u, struct session *s, uint64_t n);
/* How many descriptors one more message of u may carry before the pool is full, counting
 * those the closer thread has still to close (at most max_fds, the connection's own limit;
 * privileged: max_fds). */
uint32_t user_fd_room(const struct server *srv, const struct user *u, uint32_t max_fds);

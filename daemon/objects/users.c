/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * users.c - per-uid accounting: what each user makes the daemon hold, and the pool all
 * unprivileged users share (struct user, struct pool in users.h).
 *
 * Users other than root and the daemon's own are charged together to the unprivileged pool:
 * their descriptors never exceed the capacity less --reserve-fds, their output bytes, posted
 * packets, staged items and waiting calls the --max-*-unprivileged limits, however many of
 * them there are.  A refusal is counted on the user and logged (rate-limited) as a refusal by
 * the limit's name; a restore is never refused.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/list.h"
#include "common/macro.h"
#include "daemon/base/closer.h"
#include "daemon/base/settings.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"

struct user *user_get(struct server *srv, uid_t uid)
{
        uint64_t hash = htable_hash(&srv->users_by_uid, uid, NULL, 0);
        struct user *u;

        /* By uid in a table: a restore of connections of many users costs each the same. */
        for (struct htable_node *n = htable_first(&srv->users_by_uid, hash); n;
             n = htable_next(n)) {
                u = SN_CONTAINER_OF(n, struct user, node);
                if (u->uid == uid)
                        return u;
        }
        u = calloc(1, sizeof(*u));
        if (!u)
                return NULL;
        u->uid = uid;
        u->table = &srv->users_by_uid;
        htable_add(u->table, &u->node, hash);
        /* Privileged: root and the user the daemon runs as (the owner of a per-user daemon). */
        u->pool = uid == 0 || uid == geteuid() ? NULL : &srv->unprivileged;
        sn_list_add_tail(&srv->users, &u->link);
        return u;
}

int user_check_fds(struct server *srv, struct user *u, struct session *s, uint64_t n)
{
        /* The closer thread's backlog is still in the table (as in user_fd_room()): a close()
         * that blocks (SO_LINGER) must not let what the daemon makes itself (connections,
         * epoll instances, EDGE duplicates) take root's reserve. */
        if (!u->pool || srv->restoring ||
            u->pool->fds + closer_pending() + n <=
                    limits_fd_pool(&srv->limits, srv->fd_capacity))
                return 0;
        u->refused++;
        server_log_refusal(srv, s, u->uid, "reserve-fds");
        return -EDQUOT;
}

/* Whether the pool's count used may grow by n within max; else the refusal, named by limit. */
static int pool_check(struct server *srv, struct user *u, struct session *s, uint64_t used,
                      uint64_t n, uint64_t max, const char *limit)
{
        if (!u->pool || srv->restoring || used + n <= max)
                return 0;
        u->refused++;
        server_log_refusal(srv, s, u->uid, limit);
        return -EDQUOT;
}

int user_check_output(struct server *srv, struct user *u, struct session *s, uint64_t n)
{
        return pool_check(srv, u, s, u->pool ? u->pool->output : 0, n,
                          srv->limits.max_output_unprivileged, "max-output-unprivileged");
}

int user_check_waits(struct server *srv, struct user *u, struct session *s, uint64_t n)
{
        return pool_check(srv, u, s, u->pool ? u->pool->waits : 0, n,
                          srv->limits.max_waits_unprivileged, "max-waits-unprivileged");
}

int user_check_posted(struct server *srv, struct user *u, struct session *s, uint64_t n)
{
        return pool_check(srv, u, s, u->pool ? u->pool->posted : 0, n,
                          srv->limits.max_posted_unprivileged, "max-posted-unprivileged");
}

int user_check_staged(struct server *srv, struct user *u, struct session *s, uint64_t n)
{
        return pool_check(srv, u, s, u->pool ? u->pool->staged : 0, n,
                          srv->limits.max_staged_unprivileged, "max-staged-unprivileged");
}

uint32_t user_fd_room(const struct server *srv, const struct user *u, uint32_t max_fds)
{
        uint64_t pool = limits_fd_pool(&srv->limits, srv->fd_capacity);
        uint64_t used;

        if (!u->pool)
                return max_fds;
        used = u->pool->fds + closer_pending();
        return used >= pool ? 0 : (uint32_t)SN_MIN(pool - used, (uint64_t)max_fds);
}

void user_release(struct user *u)
{
        if (u && !u->nconns && !u->nports && !u->nsockets && !u->nregs && !u->nwaits &&
            !u->nposted && !u->nstaged && !u->output) {
                sn_list_del(&u->link);
                htable_del(u->table, &u->node);
                free(u);
        }
}

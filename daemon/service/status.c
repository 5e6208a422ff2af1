/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * status.c - the status document, built with jansson.  Never on the notification path: it is
 * made only when a client sends STATUS.  Root sees the whole daemon with every user's usage;
 * any other user sees the limits and its own usage only (never another user's figures).  The
 * reserve (what only root and the daemon's user may use) and the pool left to all other users
 * are shown to everyone; how much of the pool is used, to root only.
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon/base/closer.h"
#include "daemon/base/counters.h"
#include "daemon/base/epctl.h"
#include "daemon/base/settings.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "daemon/service/control.h"
#include "daemon/service/server.h"
#include "proto/codec.h"

static json_t *errors_object(const uint64_t *counts)
{
        json_t *o = json_object();

        for (int e = 1; e < SN_ERRNO_MAX; e++) {
                const char *name;

                if (!counts[e])
                        continue;
                name = strerrorname_np(e);
                json_object_set_new(o, name ? name : "unknown", json_integer((json_int_t)counts[e]));
        }
        return o;
}

static json_t *limits_object(const struct limits *l)
{
        return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i,"
                         " s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I}",
                         "max_message", (int)l->max_message,
                         "max_fds", (int)l->max_fds,
                         "max_call_items", (int)limits_call_items(l),
                         "max_ports", (int)l->max_ports,
                         "max_registrations", (int)l->max_registrations,
                         "max_posted", (int)l->max_posted,
                         "max_waits", (int)l->max_waits,
                         "max_connections", (int)l->max_connections,
                         "max_output", (int)l->max_output,
                         "max_sockets_per_user", (int)l->max_sockets_per_user,
                         "max_connections_per_user", (int)l->max_connections_per_user,
                         "max_ports_per_user", (int)l->max_ports_per_user,
                         "max_waits_per_user", (int)l->max_waits_per_user,
                         "max_posted_per_user", (int)l->max_posted_per_user,
                         "max_staged_per_user", (int)l->max_staged_per_user,
                         "max_output_per_user", (int)l->max_output_per_user,
                         "max_doorbells_per_user", (int)l->max_doorbells_per_user,
                         "handshake_timeout_ms", (int)l->handshake_timeout_ms,
                         "max_linger_ms", (int)l->max_linger_ms,
                         "reserve_fds", (int)l->reserve_fds,
                         "reserve_connections", (int)l->reserve_connections,
                         "max_output_unprivileged", (json_int_t)l->max_output_unprivileged,
                         "max_posted_unprivileged", (json_int_t)l->max_posted_unprivileged,
                         "max_staged_unprivileged", (json_int_t)l->max_staged_unprivileged,
                         "max_waits_unprivileged", (json_int_t)l->max_waits_unprivileged);
}

/* The reserve and the pool of users other than root and the daemon's own; with used, how much
 * of the pool they hold now. */
static json_t *reserve_object(const struct server *srv, bool used)
{
        const struct limits *l = &srv->limits;
        json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
                              "uid", (json_int_t)geteuid(),
                              "fds", (json_int_t)l->reserve_fds,
                              "own_fds", (json_int_t)srv->fd_own,
                              "connections", (json_int_t)l->reserve_connections,
                              "pool",
                              "fds", (json_int_t)limits_fd_pool(l, srv->fd_capacity),
                              "connections", (json_int_t)limits_conn_pool(l),
                              "output_bytes", (json_int_t)l->max_output_unprivileged,
                              "posted", (json_int_t)l->max_posted_unprivileged,
                              "staged", (json_int_t)l->max_staged_unprivileged,
                              "waits", (json_int_t)l->max_waits_unprivileged);

        if (o && used)
                json_object_set_new(o, "unprivileged",
                                    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                              "fds", (json_int_t)srv->unprivileged.fds,
                                              "connections",
                                              (json_int_t)srv->unprivileged.conns,
                                              "output_bytes",
                                              (json_int_t)srv->unprivileged.output,
                                              "posted", (json_int_t)srv->unprivileged.posted,
                                              "staged", (json_int_t)srv->unprivileged.staged,
                                              "waits", (json_int_t)srv->unprivileged.waits,
                                              "take_fds", (json_int_t)srv->unprivileged.take,
                                              "closing", (json_int_t)closer_pending()));
        return o;
}

/* How the daemon makes its epoll_ctl calls (epctl.c); with counts, how many went which way. */
static json_t *epctl_object(const struct epctl *e, bool counts)
{
        const struct epctl_stats *st = epctl_stats(e);
        const char *why = epctl_plain_name(epctl_plain_reason(e));
        /* No reason on the io_uring path: null, as every absent value in these documents. */
        json_t *o = json_pack("{s:s, s:o}", "path", epctl_path_name(e), "plain_reason",
                              *why ? json_string(why) : json_null());

        if (o && counts) {
                json_object_set_new(o, "batches", json_integer((json_int_t)st->batches));
                json_object_set_new(o, "operations", json_integer((json_int_t)st->ops));
                json_object_set_new(o, "plain_operations",
                                    json_integer((json_int_t)st->plain_ops));
                json_object_set_new(o, "fallbacks", json_integer((json_int_t)st->fallbacks));
        }
        return o;
}

static json_t *user_object(const struct user *u, uid_t uid)
{
        return json_pack("{s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I}",
                         "uid", (json_int_t)uid,
                         "connections", u ? (int)u->nconns : 0,
                         "rings", u ? (int)u->nrings : 0,
                         "ports", u ? (int)u->nports : 0,
                         "sockets", u ? (int)u->nsockets : 0,
                         "registrations", u ? (int)u->nregs : 0,
                         "waits", u ? (int)u->nwaits : 0,
                         "posted", u ? (int)u->nposted : 0,
                         "staged", u ? (int)u->nstaged : 0,
                         "output_bytes", u ? (json_int_t)u->output : 0,
                         "refused", u ? (json_int_t)u->refused : 0,
                         "doorbell_mutes", u ? (json_int_t)u->bell_mutes : 0,
                         "thread_reads", u ? (json_int_t)u->task_reads : 0);
}

/* The requests each limit refused, by the limit's option name; only the limits that did. */
static json_t *refusals_object(const uint64_t *counts)
{
        json_t *o = json_object();

        for (size_t i = 0; i < settings_nlimit_options && i < SN_COUNTED_LIMITS; i++)
                if (counts[i])
                        json_object_set_new(o, settings_limit_options[i].name,
                                            json_integer((json_int_t)counts[i]));
        return o;
}

/* Which configuration the daemon runs on: the file's path (null: none), where the settings in
 * force came from, when this image read them (null: it did not, or they are not the file's),
 * and the last reload's time and outcome (null before the first). */
static json_t *config_object(const struct server *srv)
{
        const char *path = srv->config_path;
        json_t *reload = json_null();

        if (srv->reload_at)
                reload = json_pack("{s:I, s:s, s:o}", "at", (json_int_t)srv->reload_at,
                                   "result", srv->reload_error[0] ? "failed" : "ok", "error",
                                   srv->reload_error[0]
                                           ? control_json_bytes(srv->reload_error,
                                                                strlen(srv->reload_error))
                                           : json_null());
        return json_pack("{s:o, s:s, s:o, s:o}", "path",
                         *path ? control_json_bytes(path, strlen(path)) : json_null(), "state",
                         server_config_state_name(srv->config_state), "read_at",
                         srv->config_read_at ? json_integer((json_int_t)srv->config_read_at)
                                             : json_null(),
                         "last_reload", reload ? reload : json_null());
}

static const struct user *user_find(struct server *srv, uid_t uid)
{
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &srv->users) {
                const struct user *u = sn_list_entry(pos, struct user, link);

                if (u->uid == uid)
                        return u;
        }
        return NULL;
}

char *server_status_json(struct server *srv, uid_t uid)
{
        const struct user *me = user_find(srv, uid);
        struct timespec now;
        json_t *doc;
        char *text;

        clock_gettime(CLOCK_MONOTONIC, &now);
        doc = json_pack("{s:s, s:i, s:i, s:i, s:f, s:o?, s:I, s:I, s:o, s:o}",
                        "version", PACKAGE_VERSION,
                        "protocol", SN_PROTO_VERSION,
                        "protocol_min", SN_PROTO_VERSION_MIN,
                        "pid", (int)getpid(),
                        "uptime_seconds",
                        control_seconds((double)(now.tv_sec - srv->started.tv_sec) +
                                        (double)(now.tv_nsec - srv->started.tv_nsec) / 1e9),
                        "socket",
                        srv->path ? control_json_bytes(srv->path, strlen(srv->path)) : NULL,
                        "fd_capacity", (json_int_t)srv->fd_capacity,
                        "reexecs", (json_int_t)srv->counters.reexecs,
                        "limits", limits_object(&srv->limits),
                        "user", user_object(me, uid));
        if (!doc)
                return NULL;
        json_object_set_new(doc, "restores", json_integer((json_int_t)srv->counters.restores));
        json_object_set_new(doc, "serving_since", json_integer((json_int_t)srv->serving_since));
        json_object_set_new(doc, "configuration", config_object(srv));
        json_object_set_new(doc, "reserve", reserve_object(srv, uid == 0));
        json_object_set_new(doc, "epoll_ctl", epctl_object(srv->epctl, uid == 0));
        if (uid != 0) {
                /* Another user's figures are not this user's business: only its own. */
                json_object_set_new(doc, "scope", json_string("user"));
                json_object_set_new(doc, "connections", json_integer(me ? me->nconns : 0));
                json_object_set_new(doc, "ports", json_integer(me ? me->nports : 0));
                json_object_set_new(doc, "registrations", json_integer(me ? me->nregs : 0));
                json_object_set_new(doc, "waiters", json_integer(me ? me->nwaits : 0));
                json_object_set_new(doc, "posted", json_integer(me ? me->nposted : 0));
        } else {
                struct sn_list *pos, *tmp;
                json_t *users = json_array();

                size_t nusers = 0;

                /* Bounded, so the document fits a message however many users connect. */
                sn_list_foreach_safe(pos, tmp, &srv->users) {
                        const struct user *u = sn_list_entry(pos, struct user, link);

                        if (nusers++ < 256)
                                json_array_append_new(users, user_object(u, u->uid));
                }
                json_object_set_new(doc, "users_total", json_integer((json_int_t)nusers));
                json_object_set_new(doc, "scope", json_string("daemon"));
                json_object_set_new(doc, "users", users);
                json_object_set_new(doc, "connections", json_integer(srv->nconns));
                json_object_set_new(doc, "rings", json_integer(srv->nrings));
                json_object_set_new(doc, "ports", json_integer(srv->nports));
                json_object_set_new(doc, "registrations", json_integer((json_int_t)srv->nregs));
                json_object_set_new(doc, "queued", json_integer((json_int_t)srv->nqueued));
                json_object_set_new(doc, "waiters", json_integer(srv->nwaits));
                json_object_set_new(
                        doc, "counters",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                  "connections_total", (json_int_t)srv->counters.connections_total,
                                  "messages_in", (json_int_t)srv->counters.messages_in,
                                  "doorbells", (json_int_t)srv->counters.doorbells,
                                  "doorbell_mutes", (json_int_t)srv->counters.doorbell_mutes,
                                  "messages_out", (json_int_t)srv->counters.messages_out,
                                  "registrations_applied",
                                  (json_int_t)srv->counters.registrations_applied,
                                  "notifications", (json_int_t)srv->counters.notifications,
                                  "posted_delivered", (json_int_t)srv->counters.posted_delivered,
                                  "protocol_violations",
                                  (json_int_t)srv->counters.protocol_violations,
                                  "thread_reads", (json_int_t)srv->counters.thread_reads));
                json_object_set_new(doc, "refusals", refusals_object(srv->counters.refusals));
                json_object_set_new(doc, "errors",
                                    json_pack("{s:o, s:o}",
                                              "call", errors_object(srv->counters.call_errors),
                                              "entry", errors_object(srv->counters.entry_errors)));
        }
        text = json_dumps(doc, CONTROL_JSON_FLAGS | JSON_SORT_KEYS);
        json_decref(doc);
        return text;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * status.c - the status document, built with jansson.  Never on the notification path: it is
 * made only when a client sends STATUS.
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon/daemon.h"

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

char *server_status_json(struct server *srv)
{
        struct timespec now;
        json_t *doc;
        char *text;

        clock_gettime(CLOCK_MONOTONIC, &now);
        doc = json_pack("{s:s, s:i, s:i, s:f, s:s?, s:I,"
                        " s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i},"
                        " s:i, s:i, s:I, s:I, s:i,"
                        " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
                        " s:{s:o, s:o}}",
                        "version", PACKAGE_VERSION,
                        "protocol", SN_PROTO_VERSION,
                        "pid", (int)getpid(),
                        "uptime_seconds", (double)(now.tv_sec - srv->started.tv_sec) +
                                (double)(now.tv_nsec - srv->started.tv_nsec) / 1e9,
                        "socket", srv->path,
                        "fd_capacity", (json_int_t)srv->fd_capacity,
                        "limits",
                        "max_message", (int)srv->limits.max_message,
                        "max_fds", (int)srv->limits.max_fds,
                        "max_ports", (int)srv->limits.max_ports,
                        "max_registrations", (int)srv->limits.max_registrations,
                        "max_posted", (int)srv->limits.max_posted,
                        "max_waits", (int)srv->limits.max_waits,
                        "max_connections", (int)srv->limits.max_connections,
                        "max_output", (int)srv->limits.max_output,
                        "max_sockets_per_user", (int)srv->limits.max_sockets_per_user,
                        "connections", (int)srv->nconns,
                        "ports", (int)srv->nports,
                        "registrations", (json_int_t)srv->nregs,
                        "queued", (json_int_t)srv->nqueued,
                        "waiters", (int)srv->nwaits,
                        "counters",
                        "connections_total", (json_int_t)srv->counters.connections_total,
                        "messages_in", (json_int_t)srv->counters.messages_in,
                        "messages_out", (json_int_t)srv->counters.messages_out,
                        "registrations_applied", (json_int_t)srv->counters.registrations_applied,
                        "notifications", (json_int_t)srv->counters.notifications,
                        "posted_delivered", (json_int_t)srv->counters.posted_delivered,
                        "protocol_violations", (json_int_t)srv->counters.protocol_violations,
                        "errors",
                        "call", errors_object(srv->counters.call_errors),
                        "entry", errors_object(srv->counters.entry_errors));
        if (!doc)
                return NULL;
        text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(doc);
        return text;
}

void server_count_call_error(struct server *srv, uint32_t err)
{
        srv->counters.call_errors[err < SN_ERRNO_MAX ? err : 0]++;
}

void server_count_entry_error(struct server *srv, uint32_t err)
{
        srv->counters.entry_errors[err < SN_ERRNO_MAX ? err : 0]++;
}

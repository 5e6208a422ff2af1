/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * control.c - operators' requests (CONTROL): what socknotifyctl shows and what it steers.
 *
 * A request is a JSON object {"verb": ..., ...}; the answer is a JSON object.  Listings answer
 * in pages that fit one message: "items" from "offset", and "next" (the offset to ask for next)
 * when more remain.  Never on the notification path: jansson is fine here.
 *
 * Access: root and the user the daemon runs as (the owner of a per-user daemon) see everything
 * and may steer (log-level, reload, reexec); any other user sees only its own connections,
 * ports and registrations (by SO_PEERCRED uid), and steering answers EPERM.  What the daemon
 * shows of a client comes from the kernel (pid and uid from SO_PEERCRED, the command name from
 * /proc), never from the client's word.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/settings.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/world.h"
#include "daemon/service/conn.h"
#include "daemon/service/control.h"
#include "daemon/service/monitor.h"
#include "daemon/service/ring.h"
#include "daemon/service/server.h"
#include "socknotify.h"

static bool is_admin(const struct conn *c)
{
        return c->uid == 0 || c->uid == geteuid();
}

static bool may_see(const struct conn *c, uid_t owner)
{
        return is_admin(c) || owner == c->uid;
}

/*
 * Client-chosen bytes (a command name, a port name, a socket path) as a JSON value, never NULL:
 * the listings must show every client and port whatever its name.  Text that is valid UTF-8 is
 * a JSON string of exactly those bytes (jansson escapes the control characters, \u001b and so
 * on).  Anything else is an array of the byte values, 0 to 255, the convention of journald's
 * JSON output: lossless, and a JSON string always means exactly its bytes, whereas a string
 * with U+FFFD in place of the bad bytes would make two different names look alike to a
 * program and would need a second field to say what they were.  socknotifyctl(1) documents it.
 */
json_t *control_json_bytes(const void *bytes, size_t len)
{
        const uint8_t *b = bytes;
        json_t *v = json_stringn((const char *)b, len), *a;

        if (v)
                return v;
        a = json_array();
        for (size_t i = 0; a && i < len; i++)
                if (json_array_append_new(a, json_integer(b[i])) < 0) {
                        json_decref(a);
                        a = NULL;
                }
        /* Out of memory only: null, so that the item is still listed. */
        return a ? a : json_null();
}

/* The command name of pid, as the kernel keeps it (any bytes but NUL, up to 15 of them): the
 * text of /proc/PID/comm without the newline the kernel adds.  Returns its length; 0 when it
 * cannot be read (the process is gone), which the listing shows as null. */
static size_t comm_of(pid_t pid, char *out, size_t size)
{
        char path[64];
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        n = fd < 0 ? -1 : read(fd, out, size);
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return 0;
        if (out[n - 1] == '\n')
                n--;
        return (size_t)n;
}

/* An address as text: "host:port", "[host6]:port", a Unix path, "@" and an abstract name (its
 * bytes as they are, NULs included).  Unix names are the binder's choice: any bytes.  Returns
 * the length of out (which is not NUL-terminated); 0 when there is no name to show (an unnamed
 * Unix socket, another family), which the listing shows as null. */
static size_t format_addr(const struct sockaddr_storage *ss, socklen_t len, char *out,
                          size_t size)
{
        char host[INET6_ADDRSTRLEN];
        int n = 0;

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const void *)ss;

                inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
                n = snprintf(out, size, "%s:%u", host, ntohs(in->sin_port));
        } else if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const void *)ss;

                inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
                n = snprintf(out, size, "[%s]:%u", host, ntohs(in6->sin6_port));
        } else if (ss->ss_family == AF_UNIX) {
                const struct sockaddr_un *un = (const void *)ss;
                size_t k = len > offsetof(struct sockaddr_un, sun_path)
                                   ? SN_MIN(len - offsetof(struct sockaddr_un, sun_path),
                                            sizeof(un->sun_path))
                                   : 0;

                if (k == 0)
                        return 0;
                if (un->sun_path[0] == 0) {
                        k = SN_MIN(k - 1, size - 1);
                        out[0] = '@';
                        memcpy(out + 1, un->sun_path + 1, k);
                        return k + 1;
                }
                k = SN_MIN(strnlen(un->sun_path, k), size);
                memcpy(out, un->sun_path, k);
                return k;
        }
        return n > 0 ? SN_MIN((size_t)n, size - 1) : 0;
}

/* What kind of socket: "tcp", "tcp6", "udp", "udp6", "unix-stream", "unix-dgram", ... */
static json_t *socket_object(int fd)
{
        struct sockaddr_storage ss;
        socklen_t len;
        int domain = 0, type = 0, listening = 0;
        const char *kind;
        char local[160], peer[160];
        size_t nlocal = 0, npeer = 0;

        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &(socklen_t){ sizeof(domain) });
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &(socklen_t){ sizeof(type) });
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &(socklen_t){ sizeof(listening) });
        if (domain == AF_INET || domain == AF_INET6) {
                bool six = domain == AF_INET6;

                kind = type == SOCK_STREAM  ? (six ? "tcp6" : "tcp")
                       : type == SOCK_DGRAM ? (six ? "udp6" : "udp")
                                            : (six ? "inet6-other" : "inet-other");
        } else if (domain == AF_UNIX) {
                kind = type == SOCK_STREAM      ? "unix-stream"
                       : type == SOCK_DGRAM     ? "unix-dgram"
                       : type == SOCK_SEQPACKET ? "unix-seqpacket"
                                                : "unix-other";
        } else {
                kind = "other";
        }
        len = sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
                nlocal = format_addr(&ss, len, local, sizeof(local));
        len = sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
                npeer = format_addr(&ss, len, peer, sizeof(peer));
        return json_pack("{s:s, s:b, s:o, s:o}", "kind", kind, "listening", listening != 0,
                         "local", nlocal ? control_json_bytes(local, nlocal) : json_null(),
                         "peer", npeer ? control_json_bytes(peer, npeer) : json_null());
}

static json_t *client_object(const struct conn *c, const struct timespec *now)
{
        char comm[64];
        struct sn_list *pos, *tmp;
        uint32_t nregs = 0;
        size_t ncomm = comm_of(c->pid, comm, sizeof(comm));

        sn_list_foreach_safe(pos, tmp, &c->regs)
                nregs++;
        return json_pack("{s:I, s:i, s:I, s:I, s:o, s:b, s:s, s:b, s:I, s:I, s:I, s:i, s:i, "
                         "s:i, s:I, s:f}",
                         "id", (json_int_t)c->serial, "pid", (int)c->pid,
                         "uid", (json_int_t)c->uid, "gid", (json_int_t)c->gid, "command",
                         ncomm ? control_json_bytes(comm, ncomm) : json_null(),
                         "handshake", c->hello, "transport", c->ring ? "rings" : "socket",
                         "self_scheduled", c->self_scheduled,
                         "max_message", (json_int_t)c->max_message,
                         "max_fds", (json_int_t)c->max_fds,
                         "doorbell_mutes", (json_int_t)(c->ring ? c->ring->mutes : 0),
                         "ports", (int)c->nports,
                         "registrations", (int)nregs, "waits", (int)c->nwaits,
                         "queued_bytes", (json_int_t)c->outq_bytes, "age_seconds",
                         control_seconds((double)(now->tv_sec - c->started.tv_sec) +
                                         (double)(now->tv_nsec - c->started.tv_nsec) / 1e9));
}

static json_t *port_object(const struct port *p)
{
        return json_pack("{s:I, s:o, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:i}",
                         "id", (json_int_t)p->id, "name",
                         p->name ? control_json_bytes(p->name, strlen(p->name)) : json_null(),
                         "uid", (json_int_t)p->uid,
                         "handles", (int)p->nhandles, "concurrency", (int)p->concurrency,
                         "running", (int)p->nrunning, "blocked", (int)p->nblocked,
                         "registrations", (int)p->nregs,
                         "queued", (int)p->nqueued, "posted", (int)p->nposted,
                         "waiters", (int)p->nwaiters, "linger_ms", (json_int_t)p->linger_ms,
                         "linger_left_ms", (json_int_t)port_linger_left(p),
                         "ownerless", (int)p->norphans);
}

static json_t *bits(uint32_t v, const char *const *names, const uint32_t *values, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++)
                if (v & values[i])
                        json_array_append_new(a, json_string(names[i]));
        return a;
}

/* A completion key: an opaque 64-bit value, as the string "0x" and its lowercase hex digits.
 * Not a JSON number: jansson's are signed (a key above 2^63 would come out negative), and most
 * readers (jq, JavaScript) keep only 53 bits of a number, so a string is the one form that
 * every reader gets exactly.  Hex, as the tables show keys and as Windows programmers see the
 * pointers they often are. */
static json_t *key_json(uint64_t key)
{
        char text[24];

        snprintf(text, sizeof(text), "0x%" PRIx64, key);
        return json_string(text);
}

static json_t *reg_object(const struct reg *g)
{
        static const char *const fnames[] = { "in", "out", "hangup" };
        static const uint32_t fvalues[] = { SN_REGISTER_EVENT_IN, SN_REGISTER_EVENT_OUT,
                                            SN_REGISTER_EVENT_HANGUP };
        /* A one-shot is "armed" until its entry is dequeued and "disarmed" from then until
         * its next ENABLE, as PORT_TAKE tells its op (port.c); a queued entry still counts
         * as armed: the owner has not seen it yet. */
        bool oneshot = g->trigger & SN_TRIGGER_ONESHOT;
        const char *state = g->state == REG_REMOVING          ? "removing"
                            : g->state == REG_DISABLED        ? "disabled"
                            : oneshot && g->fired && !g->queued ? "disarmed"
                            : g->parked == PARK_OUT           ? "hung-up"
                            : oneshot                         ? "armed"
                                                              : "enabled";

        /* Both sets of flags are arrays of names, as the filter always was: the trigger names
         * its two choices, level or edge and oneshot or persistent.  An ownerless
         * registration (on a lingering port) has no pid: null, as every absent value. */
        return json_pack("{s:I, s:o, s:o, s:o, s:o, s:[s,s], s:s, s:b}", "port",
                         (json_int_t)g->port->id, "key", key_json(g->key), "pid",
                         g->creator ? json_integer(g->creator->pid) : json_null(), "socket", socket_object(g->fd),
                         "filter", bits(g->filter, fnames, fvalues, 3), "trigger",
                         g->trigger & SN_TRIGGER_EDGE ? "edge" : "level",
                         g->trigger & SN_TRIGGER_ONESHOT ? "oneshot" : "persistent", "state",
                         state, "queued", g->queued);
}

/* Appends items to the answer while it fits one message; sets "next" when some remain. */
struct pager {
        json_t *items;
        size_t budget, used;
        uint64_t offset, index;
        bool full;
};

/* Whether the next visible item goes on this page: 1 build it, 0 skip it (before the offset,
 * counted without being built), -1 the page is full (stop walking). */
static int page_next(struct pager *pg)
{
        if (pg->full)
                return -1;
        if (pg->index < pg->offset) {
                pg->index++;
                return 0;
        }
        return 1;
}

static void page_add(struct pager *pg, json_t *item)
{
        size_t n;

        if (!item)
                return;
        n = json_dumpb(item, NULL, 0, CONTROL_JSON_FLAGS) + 1;
        if (pg->used + n > pg->budget) {
                pg->full = true;
                json_decref(item);
                return;
        }
        pg->index++;
        pg->used += n;
        json_array_append_new(pg->items, item);
}

static json_t *list(struct conn *c, const char *verb, json_t *req)
{
        struct server *srv = c->srv;
        struct pager pg = { .items = json_array(),
                            .budget = c->max_message - SN_HEADER_SIZE - 256 };
        json_int_t want_port = json_integer_value(json_object_get(req, "port"));
        json_int_t want_pid = json_integer_value(json_object_get(req, "pid"));
        struct sn_list *pos, *tmp, *p2, *t2;
        struct timespec now;
        json_t *ans;
        int want;

        pg.offset = (uint64_t)SN_MAX(json_integer_value(json_object_get(req, "offset")), 0);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!strcmp(verb, "clients")) {
                sn_list_foreach_safe(pos, tmp, &srv->conns) {
                        struct conn *k = sn_list_entry(pos, struct conn, link);

                        if (!may_see(c, k->uid) || k->dead)
                                continue;
                        if ((want = page_next(&pg)) < 0)
                                break;
                        if (want)
                                page_add(&pg, client_object(k, &now));
                }
        } else if (!strcmp(verb, "ports")) {
                sn_list_foreach_safe(pos, tmp, &srv->ports) {
                        struct port *p = sn_list_entry(pos, struct port, srv_link);

                        if (!may_see(c, p->uid))
                                continue;
                        if ((want = page_next(&pg)) < 0)
                                break;
                        if (want)
                                page_add(&pg, port_object(p));
                }
        } else {
                sn_list_foreach_safe(pos, tmp, &srv->ports) {
                        struct port *p = sn_list_entry(pos, struct port, srv_link);

                        if (!may_see(c, p->uid) || (want_port && p->id != want_port))
                                continue;
                        sn_list_foreach_safe(p2, t2, &p->regs) {
                                struct reg *g = sn_list_entry(p2, struct reg, port_link);

                                if (want_pid && (!g->creator || g->creator->pid != want_pid))
                                        continue;
                                if ((want = page_next(&pg)) < 0)
                                        goto done;
                                if (want)
                                        page_add(&pg, reg_object(g));
                        }
                }
        }
done:
        ans = json_pack("{s:o}", "items", pg.items);
        if (pg.full)
                json_object_set_new(ans, "next", json_integer((json_int_t)pg.index));
        return ans;
}

/* A filter of "monitor": absent or null is 0 (any), else an integer from 1 to 2^32 - 1. */
static bool filter_value(json_t *req, const char *name, uint32_t *ret)
{
        json_t *v = json_object_get(req, name);
        json_int_t n;

        *ret = 0;
        if (!v || json_is_null(v))
                return true;
        n = json_is_integer(v) ? json_integer_value(v) : -1;
        if (n < 0 || n > UINT32_MAX)
                return false;
        *ret = (uint32_t)n;
        return true;
}

/* The verb "monitor": the answer, then the connection carries MONITOR_FRAMEs (monitor.c). */
static void control_monitor(struct conn *c, uint32_t id, json_t *req)
{
        uint32_t pid, port, status = 0;
        json_t *ans;
        char *out;
        int r;

        if (!filter_value(req, "client", &pid) || !filter_value(req, "port", &port)) {
                status = EINVAL;
                ans = json_pack("{s:s}", "error", "client and port: a pid or a port id");
        } else if ((r = monitor_check(c)) < 0) {
                status = (uint32_t)-r;
                char why[128];

                if (r == -EBUSY)
                        snprintf(why, sizeof(why), "a monitor's connection holds no port, waits "
                                                   "for nothing and has no rings");
                else
                        snprintf(why, sizeof(why), "too many monitors: at most %d in all, %d "
                                 "for a user other than root and the daemon's, %d for all "
                                 "such users",
                                 MONITOR_MAX, MONITOR_MAX_PER_USER, MONITOR_MAX_UNPRIVILEGED);
                ans = json_pack("{s:s}", "error", why);
        } else {
                ans = json_pack("{s:s, s:b, s:i, s:i, s:I}", "result", "monitoring", "all",
                                c->uid == 0 || c->uid == geteuid(), "client", (int)pid, "port",
                                (int)port, "buffer_bytes", (json_int_t)MONITOR_BUFFER);
        }
        out = ans ? json_dumps(ans, CONTROL_JSON_FLAGS) : NULL;
        conn_reply_text(c, SN_MSG_CONTROL_REPLY, id, status, out, out ? strlen(out) : 0);
        free(out);
        json_decref(ans);
        if (status || c->dead)
                return;
        r = monitor_attach(c, pid, port);
        if (r < 0)
                conn_kill(c, "could not start monitoring");
}

void control_handle(struct conn *c, uint32_t id, const uint8_t *text, uint32_t len)
{
        struct server *srv = c->srv;
        json_error_t je;
        json_t *req = json_loadb((const char *)text, len, 0, &je), *ans = NULL;
        const char *verb = json_string_value(json_object_get(req, "verb"));
        uint32_t status = 0;
        char *out;

        if (!verb) {
                ans = json_pack("{s:s}", "error", "a JSON object with a \"verb\" is expected");
                status = EINVAL;
        } else if (!strcmp(verb, "clients") || !strcmp(verb, "ports") ||
                   !strcmp(verb, "registrations")) {
                ans = list(c, verb, req);
        } else if (!strcmp(verb, "monitor")) {
                control_monitor(c, id, req);
                json_decref(req);
                return;
        } else if (strcmp(verb, "log-level") && strcmp(verb, "reload") && strcmp(verb, "reexec") &&
                   strcmp(verb, "check-config")) {
                ans = json_pack("{s:s}", "error", "unknown verb");
                status = EINVAL;
        } else if (!is_admin(c)) {
                ans = json_pack("{s:s}", "error", "only root or the daemon's own user may");
                status = EPERM;
        } else if (!strcmp(verb, "log-level")) {
                const char *name = json_string_value(json_object_get(req, "level"));
                int level = name ? settings_parse_log_level(name) : -EINVAL;

                if (level < 0) {
                        ans = json_pack("{s:s}", "error",
                                        "level: error, warning, notice, info or debug");
                        status = EINVAL;
                } else {
                        sn_log_set_level(level);
                        log_notice("log level set to %s by pid %d (uid %u)", name, (int)c->pid,
                                   (unsigned)c->uid);
                        ans = json_pack("{s:s}", "log_level", name);
                }
        } else if (!strcmp(verb, "check-config")) {
                char err[512];
                const char *path = srv->config_path;
                json_t *p = *path ? control_json_bytes(path, strlen(path)) : json_null();
                int r = server_check_config(srv, err, sizeof(err));

                /* The daemon's own file, parser and checks, as a reload would read it; nothing
                 * is applied and nothing is logged (the asker gets the whole error). */
                if (r < 0) {
                        status = EINVAL;
                        ans = json_pack("{s:o, s:o}", "error", control_json_bytes(err,
                                                                                  strlen(err)),
                                        "path", p);
                } else {
                        ans = json_pack("{s:s, s:o}", "result",
                                        !*path ? "none" : r == 1 ? "absent" : "good", "path", p);
                }
        } else if (!strcmp(verb, "reload")) {
                char err[512], why[600];

                /* The whole error, never the status line's short form: whoever asked (systemctl
                 * reload through ExecReload=) sees the file, the line and the key. */
                status = server_reload(srv, err, sizeof(err)) < 0 ? EINVAL : 0;
                snprintf(why, sizeof(why), "%s; the daemon keeps its running settings", err);
                ans = json_pack("{s:s}", status ? "error" : "result",
                                status ? why : "configuration reloaded");
                /* A key cut inside a UTF-8 sequence by the error's bound is no JSON string. */
                if (!ans)
                        ans = json_pack("{s:s}", "error", "the configuration file is bad (see "
                                        "the daemon's log); it keeps its running settings");
        } else {
                /* The answer travels in the state and the new image sends it. */
                ans = json_pack("{s:s}", "result", "re-executed");
                out = json_dumps(ans, CONTROL_JSON_FLAGS);
                json_decref(ans);
                ans = NULL;
                if (server_reexec_for(srv, c, id, out) < 0) {
                        ans = json_pack("{s:s}", "error",
                                        "the daemon could not re-execute itself (see its log)");
                        status = EPROTO;
                }
                free(out);
                if (!ans) {
                        json_decref(req);
                        return;
                }
        }
        out = ans ? json_dumps(ans, CONTROL_JSON_FLAGS) : NULL;
        conn_reply_text(c, SN_MSG_CONTROL_REPLY, id, status, out, out ? strlen(out) : 0);
        free(out);
        json_decref(ans);
        json_decref(req);
}

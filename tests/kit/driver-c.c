/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * driver-c.c - the binding kit's driver for libsocknotify, the reference implementation: it
 * reads the kit's line protocol on stdin (docs/bindings.md, "The driver's commands"), runs each
 * command through the native C API and answers one line on stdout.  It owns every socket and
 * port it makes; the runner names them by the handles this program hands out (s1, s2, ... and
 * p1, p2, ...), never by descriptor numbers.
 *
 * "spawn T CMD" runs CMD on the OS thread named T (made on first use, kept until the end, so
 * that a name is one waiter for the daemon) and answers once T has taken it; "join T" gives
 * that command's answer.  Tables are
 * under one mutex; library calls run outside it so that a wait in one thread does not hold up
 * a post in another.  Outside the source tree (it is installed as an example under
 * $(pkgdatadir)/protocol/kit/drivers):
 *     cc -o driver-c driver-c.c $(pkg-config --cflags --libs socknotify) -pthread
 */
#define _GNU_SOURCE /* strerrorname_np, accept4, pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "socknotify.h"

#define MAX_OBJECTS 4096
#define MAX_THREADS 16
#define ANSWER_SIZE 65536
#define MAX_ENTRIES 1024

static sn_conn_t *conn;
static sn_port_t *ports[MAX_OBJECTS]; /* index = handle number; 0 unused */
static unsigned nports;
static int socks[MAX_OBJECTS];
/* Closed by "close" or "socket_close": socks[] keeps the number it had, which "register",
 * "disable" and "remove" still pass, as a program that uses a descriptor after closing it
 * would. */
static bool sock_closed[MAX_OBJECTS];
static unsigned nsocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct worker {
        char name[32];
        pthread_t tid;
        pthread_mutex_t mu;
        pthread_cond_t cv;
        char *cmd;    /* set by spawn, taken by the worker */
        char *answer; /* set by the worker, taken by join */
        bool busy;
};
static struct worker workers[MAX_THREADS];
static unsigned nworkers;

static void run(char *line, char *out, size_t outsz);

/* "err ENAME" for a negative errno value. */
static void answer_err(char *out, size_t outsz, int r) {
        const char *name = strerrorname_np(-r);
        if (name)
                snprintf(out, outsz, "err %s", name);
        else
                snprintf(out, outsz, "err %d", -r);
}

static int new_sock(int fd) {
        pthread_mutex_lock(&lock);
        if (nsocks + 1 >= MAX_OBJECTS) {
                pthread_mutex_unlock(&lock);
                close(fd);
                return -1;
        }
        int h = (int)++nsocks;
        socks[h] = fd;
        pthread_mutex_unlock(&lock);
        return h;
}

/* The descriptor a handle "sN" names, or -1; with closed_too, also the number an open
 * descriptor had before "close" closed it. */
static int sock_lookup(const char *h, bool closed_too) {
        if (!h || h[0] != 's')
                return -1;
        char *end;
        unsigned long n = strtoul(h + 1, &end, 10);
        int fd = -1;
        pthread_mutex_lock(&lock);
        if (*end == '\0' && n >= 1 && n <= nsocks && (closed_too || !sock_closed[n]))
                fd = socks[n];
        pthread_mutex_unlock(&lock);
        return fd;
}

static int sock_of(const char *h) {
        return sock_lookup(h, false);
}

static void sock_forget(const char *h) {
        unsigned long n = strtoul(h + 1, NULL, 10);
        pthread_mutex_lock(&lock);
        if (n >= 1 && n <= nsocks)
                sock_closed[n] = true;
        pthread_mutex_unlock(&lock);
}

static sn_port_t *port_of(const char *h) {
        if (!h || h[0] != 'p')
                return NULL;
        char *end;
        unsigned long n = strtoul(h + 1, &end, 10);
        sn_port_t *p = NULL;
        pthread_mutex_lock(&lock);
        if (*end == '\0' && n >= 1 && n <= nports)
                p = ports[n];
        pthread_mutex_unlock(&lock);
        return p;
}

static int new_port(sn_port_t *p) {
        pthread_mutex_lock(&lock);
        int h = (int)++nports;
        ports[h] = p;
        pthread_mutex_unlock(&lock);
        return h;
}

/* "in,out,hup" (or "all", "none") to SN_REGISTER_EVENT_* bits; -1 for an unknown word. */
static int parse_filter(const char *s) {
        int bits = 0;
        char buf[64];
        snprintf(buf, sizeof(buf), "%s", s);
        for (char *save, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (!strcmp(w, "in"))
                        bits |= SN_REGISTER_EVENT_IN;
                else if (!strcmp(w, "out"))
                        bits |= SN_REGISTER_EVENT_OUT;
                else if (!strcmp(w, "hup"))
                        bits |= SN_REGISTER_EVENT_HANGUP;
                else if (!strcmp(w, "all"))
                        bits |= SN_REGISTER_EVENTS_ALL;
                else if (strcmp(w, "none"))
                        return -1;
        }
        return bits;
}

static int parse_trigger(const char *s) {
        int bits = 0;
        char buf[64];
        snprintf(buf, sizeof(buf), "%s", s);
        for (char *save, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (!strcmp(w, "level"))
                        bits |= SN_TRIGGER_LEVEL;
                else if (!strcmp(w, "edge"))
                        bits |= SN_TRIGGER_EDGE;
                else if (!strcmp(w, "oneshot"))
                        bits |= SN_TRIGGER_ONESHOT;
                else if (!strcmp(w, "persistent"))
                        bits |= SN_TRIGGER_PERSISTENT;
                else if (strcmp(w, "none"))
                        return -1;
        }
        return bits;
}

/* Appends " sock:KEY:EVENTS" or " post:KEY:BYTES:OVERLAPPED" for each entry. */
static void format_entries(char *out, size_t outsz, const sn_entry_t *e, int n) {
        size_t len = strlen(out);
        for (int i = 0; i < n && len < outsz; i++) {
                if (e[i].kind == SN_ENTRY_POSTED) {
                        len += (size_t)snprintf(out + len, outsz - len,
                                                " post:%" PRIu64 ":%" PRIu32 ":%" PRIu64,
                                                e[i].key, e[i].events, e[i].overlapped);
                        continue;
                }
                static const struct {
                        uint32_t bit;
                        const char *name;
                } names[] = { { SN_EVENT_IN, "in" },     { SN_EVENT_OUT, "out" },
                              { SN_EVENT_HANGUP, "hup" }, { SN_EVENT_ERR, "err" },
                              { SN_EVENT_REMOVE, "remove" } };
                char ev[64] = "";
                uint32_t rest = e[i].events;
                for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
                        if (!(rest & names[k].bit))
                                continue;
                        rest &= ~names[k].bit;
                        size_t l = strlen(ev);
                        snprintf(ev + l, sizeof(ev) - l, "%s%s", l ? "," : "", names[k].name);
                }
                if (rest) {
                        size_t l = strlen(ev);
                        snprintf(ev + l, sizeof(ev) - l, "%s0x%x", l ? "," : "", rest);
                }
                len += (size_t)snprintf(out + len, outsz - len, " sock:%" PRIu64 ":%s", e[i].key,
                                        ev[0] ? ev : "none");
        }
}

static int make_pair(int domain, int type, int fds[2]) {
        if (domain == AF_UNIX)
                return socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) < 0 ? -errno : 0;
        /* Loopback: a listener (TCP) or a bound socket (UDP) that the other connects to. */
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof(sa);
        int r = 0, l = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        int c = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            getsockname(l, (struct sockaddr *)&sa, &sl) < 0) {
                r = -errno;
                goto fail;
        }
        if (type == SOCK_STREAM) {
                if (listen(l, 1) < 0 || connect(c, (struct sockaddr *)&sa, sl) < 0) {
                        r = -errno;
                        goto fail;
                }
                int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
                if (a < 0) {
                        r = -errno;
                        goto fail;
                }
                close(l);
                fds[0] = a;
                fds[1] = c;
                return 0;
        }
        struct sockaddr_in sc;
        socklen_t scl = sizeof(sc);
        if (connect(c, (struct sockaddr *)&sa, sl) < 0 ||
            getsockname(c, (struct sockaddr *)&sc, &scl) < 0 ||
            connect(l, (struct sockaddr *)&sc, scl) < 0) {
                r = -errno;
                goto fail;
        }
        fds[0] = l;
        fds[1] = c;
        return 0;
fail:
        if (l >= 0)
                close(l);
        if (c >= 0)
                close(c);
        return r;
}

static void cmd_pair(char **argv, int argc, char *out, size_t outsz) {
        int domain = AF_UNIX, type = SOCK_STREAM, fds[2];
        if (!strcmp(argv[0], "tcp_pair"))
                domain = AF_INET;
        else if (!strcmp(argv[0], "udp_pair"))
                domain = AF_INET, type = SOCK_DGRAM;
        else if (argc > 1 && !strcmp(argv[1], "dgram"))
                type = SOCK_DGRAM;
        else if (argc > 1 && !strcmp(argv[1], "seqpacket"))
                type = SOCK_SEQPACKET;
        int r = make_pair(domain, type, fds);
        if (r < 0) {
                answer_err(out, outsz, r);
                return;
        }
        int a = new_sock(fds[0]), b = new_sock(fds[1]);
        snprintf(out, outsz, "ok a=s%d b=s%d", a, b);
}

/* PROCESS with at most one registration item. */
static void do_process(sn_port_t *p, sn_registration_t *reg, uint32_t timeout_ms,
                       uint32_t max, char *out, size_t outsz) {
        static __thread sn_entry_t entries[MAX_ENTRIES];
        if (max > MAX_ENTRIES)
                max = MAX_ENTRIES;
        int r = sn_port_process(p, reg, reg ? 1 : 0, entries, max, timeout_ms);
        if (r == -ETIMEDOUT) {
                snprintf(out, outsz, "timeout");
                return;
        }
        if (r < 0) {
                answer_err(out, outsz, r);
                return;
        }
        if (reg) {
                /* The item's own result: "ok 0", or "ok ENAME" for a refused item. */
                const char *name = reg->result ? strerrorname_np(-reg->result) : "0";
                snprintf(out, outsz, "ok %s", name ? name : "?");
                return;
        }
        snprintf(out, outsz, "ok");
        format_entries(out, outsz, entries, r);
}

/* Makes n Unix stream pairs and registers the first socket of each (key = its index, from
 * 0) in ONE call, which a binding must split over the daemon's max_fds descriptors per
 * message.  Answers "ok R0 R1 ..." (each item's result). */
static void cmd_register_all(sn_port_t *p, uint16_t filter, uint8_t trigger, unsigned n,
                             char *out, size_t outsz) {
        sn_registration_t *regs = calloc(n, sizeof(*regs));
        int *hs = calloc(2 * (size_t)n, sizeof(int));
        if (!regs || !hs) {
                free(regs);
                free(hs);
                snprintf(out, outsz, "err ENOMEM");
                return;
        }
        for (unsigned i = 0; i < n; i++) {
                int fds[2];
                int r = make_pair(AF_UNIX, SOCK_STREAM, fds);
                if (r < 0) {
                        answer_err(out, outsz, r);
                        goto out;
                }
                hs[2 * i] = new_sock(fds[0]);
                hs[2 * i + 1] = new_sock(fds[1]);
                regs[i] = (sn_registration_t){ .fd = fds[0], .op = SN_OP_ENABLE, .key = i,
                                               .filter = filter, .trigger = trigger };
        }
        sn_entry_t e;
        int r = sn_port_process(p, regs, n, &e, 0, 0);
        if (r < 0) {
                answer_err(out, outsz, r);
                goto out;
        }
        size_t len = (size_t)snprintf(out, outsz, "ok");
        for (unsigned i = 0; i < n && len < outsz; i++) {
                const char *name = regs[i].result ? strerrorname_np(-regs[i].result) : "0";
                len += (size_t)snprintf(out + len, outsz - len, " %s", name ? name : "?");
        }
out:
        free(regs);
        free(hs);
}

static struct worker *worker_get(const char *name);
static bool num(const char *s, uint64_t *ret);

/* One PROCESS with the items ITEM... in order and no entries: "enable:S:KEY:FILTER:TRIGGER",
 * "disable:S" or "remove:S" (S may be a closed handle, as for "register").  Answers
 * "ok R1 R2 ..." (each item's result), or "err ENOSYS" for an item it cannot read. */
static void cmd_items(sn_port_t *p, char **items, int n, char *out, size_t outsz) {
        sn_registration_t regs[16];
        for (int i = 0; i < n; i++) {
                char *save, *f[6];
                int nf = 0;
                uint64_t key = 0;
                for (char *w = strtok_r(items[i], ":", &save); w && nf < 6;
                     w = strtok_r(NULL, ":", &save))
                        f[nf++] = w;
                int fd = nf >= 2 ? sock_lookup(f[1], true) : -1;
                if (fd >= 0 && nf == 5 && !strcmp(f[0], "enable") && num(f[2], &key) &&
                    parse_filter(f[3]) >= 0 && parse_trigger(f[4]) >= 0) {
                        regs[i] = (sn_registration_t){ .fd = fd,
                                                       .op = SN_OP_ENABLE,
                                                       .key = key,
                                                       .filter = (uint16_t)parse_filter(f[3]),
                                                       .trigger = (uint8_t)parse_trigger(f[4]) };
                } else if (fd >= 0 && nf == 2 &&
                           (!strcmp(f[0], "disable") || !strcmp(f[0], "remove"))) {
                        regs[i] = (sn_registration_t){
                                .fd = fd, .op = f[0][0] == 'd' ? SN_OP_DISABLE : SN_OP_REMOVE
                        };
                } else {
                        snprintf(out, outsz, "err ENOSYS");
                        return;
                }
        }
        sn_entry_t e;
        int r = sn_port_process(p, regs, (uint32_t)n, &e, 0, 0);
        if (r < 0) {
                answer_err(out, outsz, r);
                return;
        }
        size_t len = (size_t)snprintf(out, outsz, "ok");
        for (int i = 0; i < n && len < outsz; i++) {
                const char *name = regs[i].result ? strerrorname_np(-regs[i].result) : "0";
                len += (size_t)snprintf(out + len, outsz - len, " %s", name ? name : "?");
        }
}


static void cmd_spawn(char *name, char *rest, char *out, size_t outsz) {
        struct worker *w = worker_get(name);
        if (!w) {
                snprintf(out, outsz, "err ENOMEM");
                return;
        }
        pthread_mutex_lock(&w->mu);
        if (w->busy) {
                pthread_mutex_unlock(&w->mu);
                snprintf(out, outsz, "err EBUSY");
                return;
        }
        free(w->answer);
        w->answer = NULL;
        w->cmd = strdup(rest);
        w->busy = true;
        pthread_cond_broadcast(&w->cv);
        /* Answered once the thread has taken the command: it is awake and running then, so
         * a "busy" it was given holds the port's slot before the runner's next command. */
        while (w->cmd)
                pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        snprintf(out, outsz, "ok");
}

static void cmd_join(const char *name, char *out, size_t outsz) {
        struct worker *w = NULL;
        for (unsigned i = 0; i < nworkers; i++)
                if (!strcmp(workers[i].name, name))
                        w = &workers[i];
        if (!w) {
                snprintf(out, outsz, "err ESRCH");
                return;
        }
        pthread_mutex_lock(&w->mu);
        while (w->busy || !w->answer)
                pthread_cond_wait(&w->cv, &w->mu);
        snprintf(out, outsz, "%s", w->answer);
        free(w->answer);
        w->answer = NULL;
        pthread_mutex_unlock(&w->mu);
}

static void *worker_main(void *arg) {
        struct worker *w = arg;
        char *out = malloc(ANSWER_SIZE);
        if (!out)
                abort();
        for (;;) {
                pthread_mutex_lock(&w->mu);
                while (!w->cmd)
                        pthread_cond_wait(&w->cv, &w->mu);
                char *cmd = w->cmd;
                w->cmd = NULL;
                pthread_cond_broadcast(&w->cv);
                pthread_mutex_unlock(&w->mu);
                run(cmd, out, ANSWER_SIZE);
                free(cmd);
                pthread_mutex_lock(&w->mu);
                w->answer = strdup(out);
                w->busy = false;
                pthread_cond_broadcast(&w->cv);
                pthread_mutex_unlock(&w->mu);
        }
        return NULL;
}

/* The worker named name, started on first use (the main thread alone calls this). */
static struct worker *worker_get(const char *name) {
        for (unsigned i = 0; i < nworkers; i++)
                if (!strcmp(workers[i].name, name))
                        return &workers[i];
        if (nworkers == MAX_THREADS)
                return NULL;
        struct worker *w = &workers[nworkers];
        snprintf(w->name, sizeof(w->name), "%s", name);
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0)
                return NULL;
        nworkers++;
        return w;
}

static bool num(const char *s, uint64_t *ret) {
        if (!s || !*s)
                return false;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (errno || *end || s[0] == '-')
                return false;
        *ret = v;
        return true;
}

/* Runs one command line (modified in place) and writes its one-line answer to out. */
static void run(char *line, char *out, size_t outsz) {
        char *argv[16];
        int argc = 0;
        char *save = NULL;
        char *rest_of_spawn = NULL;
        /* "spawn T" keeps the rest of the line whole: it is the command T runs. */
        for (char *w = strtok_r(line, " \t", &save); w && argc < 16;
             w = strtok_r(NULL, " \t", &save)) {
                argv[argc++] = w;
                if (argc == 2 && !strcmp(argv[0], "spawn")) {
                        rest_of_spawn = save;
                        break;
                }
        }
        if (argc == 0) {
                snprintf(out, outsz, "err ENOSYS");
                return;
        }
        const char *c = argv[0];
        uint64_t a1 = 0, a2 = 0, a3 = 0;
        sn_port_t *p = argc > 1 ? port_of(argv[1]) : NULL;
        int fd;

        if (!strcmp(c, "spawn") && argc == 2 && rest_of_spawn) {
                cmd_spawn(argv[1], rest_of_spawn, out, outsz);
        } else if (!strcmp(c, "join") && argc == 2) {
                cmd_join(argv[1], out, outsz);
        } else if (!strcmp(c, "connect") &&
                   (argc == 1 || (argc == 2 && !strcmp(argv[1], "self")))) {
                /* libsocknotify reads SOCKNOTIFY_SELF_SCHEDULED when it opens a connection.
                 * The driver's other threads only run the commands this thread gives them,
                 * and none runs now: nothing reads the environment meanwhile. */
                if (argc == 2)
                        setenv("SOCKNOTIFY_SELF_SCHEDULED", "1", 1);
                int r = sn_conn_open(NULL, &conn);
                if (argc == 2)
                        unsetenv("SOCKNOTIFY_SELF_SCHEDULED");
                if (r < 0) {
                        answer_err(out, outsz, r);
                        return;
                }
                sn_limits_t lim;
                r = sn_conn_limits(conn, &lim);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok max_fds=%" PRIu32, lim.max_fds);
        } else if (!conn) {
                snprintf(out, outsz, "err ENOTCONN");
        } else if (!strcmp(c, "port_create") && (argc == 2 || argc == 3) && num(argv[1], &a1)) {
                sn_port_t *np;
                int r = argc == 3 ? sn_port_create_named(conn, argv[2], (uint32_t)a1, &np)
                                  : sn_port_create(conn, (uint32_t)a1, &np);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok port=p%d", new_port(np));
        } else if (!strcmp(c, "port_open") && argc == 2) {
                sn_port_t *np;
                int r = sn_port_open(conn, argv[1], &np);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok port=p%d", new_port(np));
        } else if (!strcmp(c, "port_close") && argc == 2 && p) {
                /* The handle stays in the table: a command naming it later is the caller's
                 * mistake, so this driver refuses it (below) rather than touch freed memory. */
                pthread_mutex_lock(&lock);
                ports[strtoul(argv[1] + 1, NULL, 10)] = NULL;
                pthread_mutex_unlock(&lock);
                int r = sn_port_close(p);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok");
        } else if (!strcmp(c, "linger") && argc == 3 && p && num(argv[2], &a1)) {
                int r = sn_port_set_linger(p, (uint32_t)a1);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok");
        } else if ((!strcmp(c, "tcp_pair") || !strcmp(c, "udp_pair") ||
                    !strcmp(c, "unix_pair")) && argc <= 2) {
                cmd_pair(argv, argc, out, outsz);
        } else if (!strcmp(c, "pipe") && argc == 1) {
                int pfd[2];
                if (pipe2(pfd, O_CLOEXEC) < 0) {
                        answer_err(out, outsz, -errno);
                        return;
                }
                int r = new_sock(pfd[0]), w = new_sock(pfd[1]);
                snprintf(out, outsz, "ok r=s%d w=s%d", r, w);
        } else if (!strcmp(c, "register") && argc == 6 && p &&
                   (fd = sock_lookup(argv[2], true)) >= 0 &&
                   num(argv[3], &a1) && parse_filter(argv[4]) >= 0 &&
                   parse_trigger(argv[5]) >= 0) {
                sn_registration_t reg = { .fd = fd,
                                          .op = SN_OP_ENABLE,
                                          .key = a1,
                                          .filter = (uint16_t)parse_filter(argv[4]),
                                          .trigger = (uint8_t)parse_trigger(argv[5]) };
                do_process(p, &reg, 0, 0, out, outsz);
        } else if (!strcmp(c, "register_all") && argc == 5 && p &&
                   parse_filter(argv[2]) >= 0 && parse_trigger(argv[3]) >= 0 &&
                   num(argv[4], &a1) && a1 >= 1 && a1 <= MAX_OBJECTS) {
                cmd_register_all(p, (uint16_t)parse_filter(argv[2]),
                                 (uint8_t)parse_trigger(argv[3]), (unsigned)a1, out, outsz);
        } else if (!strcmp(c, "items") && argc >= 3 && p) {
                cmd_items(p, argv + 2, argc - 2, out, outsz);
        } else if (!strcmp(c, "status") && argc == 2) {
                /* A top-level number of the status document ("waiters", "connections"): the
                 * document is scanned at depth 1 only, nested objects have keys of the same
                 * names. */
                char *json = NULL;
                int r = sn_conn_status(conn, &json);
                if (r < 0) {
                        answer_err(out, outsz, r);
                        return;
                }
                snprintf(out, outsz, "err ENOENT");
                size_t klen = strlen(argv[1]);
                int depth = 0;
                bool in_str = false;
                for (const char *q = json; *q; q++) {
                        if (in_str) {
                                if (*q == '\\' && q[1])
                                        q++;
                                else if (*q == '"')
                                        in_str = false;
                                continue;
                        }
                        if (*q == '{' || *q == '[')
                                depth++;
                        else if (*q == '}' || *q == ']')
                                depth--;
                        else if (*q == '"') {
                                const char *v = q + 1 + klen;
                                if (depth == 1 && !strncmp(q + 1, argv[1], klen) && *v == '"') {
                                        v += strspn(v + 1, " ") + 1;
                                        if (*v == ':') {
                                                snprintf(out, outsz, "ok %lld",
                                                         strtoll(v + 1, NULL, 10));
                                                break;
                                        }
                                }
                                in_str = true;
                        }
                }
                free(json);
        } else if (!strcmp(c, "busy") && argc == 2 && num(argv[1], &a1)) {
                /* Runs (on the CPU) for a1 ms: a thread the daemon sees as running. */
                struct timespec t0, t;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                do
                        clock_gettime(CLOCK_MONOTONIC, &t);
                while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000 +
                               (uint64_t)((t.tv_nsec - t0.tv_nsec) / 1000000) <
                       a1);
                snprintf(out, outsz, "ok");
        } else if (!strcmp(c, "sleep") && argc == 2 && num(argv[1], &a1)) {
                /* Asleep in the kernel for a1 ms: a thread the daemon reads as blocked. */
                struct timespec ts = { (time_t)(a1 / 1000), (long)(a1 % 1000) * 1000000 };
                while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
                snprintf(out, outsz, "ok");
        } else if ((!strcmp(c, "disable") || !strcmp(c, "remove")) && argc == 3 && p &&
                   (fd = sock_lookup(argv[2], true)) >= 0) {
                sn_registration_t reg = { .fd = fd,
                                          .op = c[0] == 'd' ? SN_OP_DISABLE : SN_OP_REMOVE };
                do_process(p, &reg, 0, 0, out, outsz);
        } else if (!strcmp(c, "process") && argc == 4 && p && num(argv[2], &a1) &&
                   num(argv[3], &a2)) {
                do_process(p, NULL, a1 == UINT32_MAX ? SN_INFINITE : (uint32_t)a1, (uint32_t)a2,
                           out, outsz);
        } else if (!strcmp(c, "post") && argc == 5 && p && num(argv[2], &a1) &&
                   num(argv[3], &a2) && num(argv[4], &a3)) {
                int r = sn_port_post(p, a1, (uint32_t)a2, a3);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok");
        } else if (!strcmp(c, "take") && argc == 3 && p && num(argv[2], &a1) && a1 <= 256) {
                sn_taken_socket_t taken[256];
                sn_take_info_t info;
                int r = sn_port_take_sockets(p, taken, (uint32_t)a1, &info);
                if (r < 0) {
                        answer_err(out, outsz, r);
                        return;
                }
                /* In key order, as the kit asks. */
                for (int i = 1; i < r; i++)
                        for (int j = i; j > 0 && taken[j - 1].key > taken[j].key; j--) {
                                sn_taken_socket_t t = taken[j];
                                taken[j] = taken[j - 1];
                                taken[j - 1] = t;
                        }
                size_t len = (size_t)snprintf(out, outsz, "ok taken=%d remaining=%" PRIu32, r,
                                              info.remaining);
                /* A socket whose descriptor did not arrive (this process ran out of them) has
                 * no handle: -1, as docs/bindings.md says. */
                for (int i = 0; i < r && len < outsz; i++) {
                        char name[16] = "-1";

                        if (taken[i].fd >= 0)
                                snprintf(name, sizeof(name), "s%d", new_sock(taken[i].fd));
                        len += (size_t)snprintf(out + len, outsz - len, " %" PRIu64 "=%s%s",
                                                taken[i].key, name,
                                                taken[i].armed ? "" : ":disarmed");
                }
        } else if (!strcmp(c, "send") && argc == 3 && (fd = sock_of(argv[1])) >= 0 &&
                   num(argv[2], &a1) && a1 <= 65536) {
                static char zeros[65536];
                ssize_t n = send(fd, zeros, (size_t)a1, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                        answer_err(out, outsz, -errno);
                else
                        snprintf(out, outsz, "ok %zd", n);
        } else if (!strcmp(c, "recv") && argc == 3 && (fd = sock_of(argv[1])) >= 0 &&
                   num(argv[2], &a1) && a1 <= 65536) {
                static char buf[65536];
                ssize_t n = recv(fd, buf, (size_t)a1, MSG_DONTWAIT);
                if (n < 0)
                        answer_err(out, outsz, -errno);
                else
                        snprintf(out, outsz, "ok %zd", n);
        } else if (!strcmp(c, "shutdown") && argc == 3 && (fd = sock_of(argv[1])) >= 0) {
                int how = !strcmp(argv[2], "rd") ? SHUT_RD
                          : !strcmp(argv[2], "wr") ? SHUT_WR
                                                   : SHUT_RDWR;
                if (shutdown(fd, how) < 0)
                        answer_err(out, outsz, -errno);
                else
                        snprintf(out, outsz, "ok");
        } else if (!strcmp(c, "close") && argc == 2 && (fd = sock_of(argv[1])) >= 0) {
                sock_forget(argv[1]);
                close(fd);
                snprintf(out, outsz, "ok");
        } else if (!strcmp(c, "socket_close") && argc == 2 && (fd = sock_of(argv[1])) >= 0) {
                sock_forget(argv[1]);
                int r = sn_socket_close(conn, fd);
                if (r < 0)
                        answer_err(out, outsz, r);
                else
                        snprintf(out, outsz, "ok");
        } else {
                /* Not a command of the kit, or arguments this driver cannot read. */
                snprintf(out, outsz, "err ENOSYS");
        }
}

int main(void) {
        static char line[8192], out[ANSWER_SIZE];
        for (int i = 0; i < MAX_OBJECTS; i++)
                socks[i] = -1;
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\r\n")] = '\0';
                if (!strcmp(line, "quit"))
                        break;
                run(line, out, sizeof(out));
                printf("%s\n", out);
                fflush(stdout);
        }
        /* Threads may be parked in a wait: end the process without joining them. */
        fflush(stdout);
        _exit(0);
}

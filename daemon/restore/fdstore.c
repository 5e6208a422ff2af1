/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fdstore.c - a stop that loses nothing: the daemon's holdings kept in the service manager's
 * file-descriptor store (systemd's FDSTORE=1) while no daemon runs, and taken back by the next
 * one.
 *
 * On SIGTERM or SIGINT, when the service manager keeps a store for us (NOTIFY_SOCKET set and
 * FDSTORE naming its size, as systemd >= 254 sets it and our units set it for older ones), the
 * daemon does not close anything.  It writes its whole state exactly as a re-exec does
 * (reexec.c) and hands the manager every descriptor that state names: the listening socket,
 * every client connection, every port's kernel epoll instance, every held socket.  Then it
 * exits at once, without any of the usual teardown: that teardown would answer parked calls,
 * take sockets out of the kept epoll instances and unlink the socket path.
 *
 * The descriptors do not go into the store one by one.  systemd 252 compares every descriptor
 * stored with every one it holds (to drop duplicates), which is quadratic: 5,000 sockets took
 * it longer than 5 s.  Instead they travel as SCM_RIGHTS messages (253 each) into a Unix
 * stream socket pair, the "box", whose receiving end alone goes into the store: descriptors in
 * flight in a socket's queue stay open as long as the socket does.  A box holds what its send
 * buffer takes; when it is full the next one is started.  The store then holds a handful of
 * entries, named:
 *
 *   snbox.K       box K (0, 1, ...), its descriptors in the map's order; its sending end is
 *                 closed, so reading it ends with EOF
 *   snmap         the map: "SNFDMAP\0", u32 version (2), u32 count, count x u32: the number
 *                 each descriptor had, in the order of the boxes; little-endian
 *   snstate       the state (docs/reexec-state.md), stored last: without it nothing is used
 *
 * Not part of the handover, and kept in the store at all times: "snlive.settings", the last
 * good settings (lastgood.c), set aside at start for main.c and replaced by the new daemon (not
 * one of the live store's entries despite its name); the live journal and boxes (live.c),
 * "snjournal.G" and "snlive.G.I".
 *
 * The state names descriptors by their numbers in the old process, and a port's epoll instance
 * knows its sockets by (file, number) too, so the next daemon puts each descriptor back at its
 * old number before it reads the state; from there on a restore is a re-exec's restore.  After
 * that everything is removed from the store (FDSTOREREMOVE=1); entries left in the store
 * without a state (a stop that did not finish) are closed and removed at start.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/fdmsg.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/world.h"
#include "daemon/restore/fdstore.h"
#include "daemon/restore/reexec.h"
#include "daemon/service/conn.h"
#include "daemon/service/lastgood.h"
#include "daemon/state/live.h"

#define MAP_MAGIC "SNFDMAP\0"
#define MAP_VERSION 2u
#define BATCH 253u
#define MAX_BOXES 4096u
#define BOX_SNDBUF (64 << 20) /* asked for; the kernel caps it at twice wmem_max */
#define BARRIER_USEC (10u * 1000000u)

uint32_t fdstore_capacity(void)
{
        const char *notify = getenv("NOTIFY_SOCKET"), *env = getenv("FDSTORE");
        char *end;
        unsigned long v;

        if (!notify || !*notify || !env || !*env)
                return 0;
        errno = 0;
        v = strtoul(env, &end, 10);
        if (errno || *end || v > UINT32_MAX)
                return 0;
        return (uint32_t)v;
}

/* ---- handing over ------------------------------------------------------------------------- */

struct held {
        int *fds; /* every descriptor the state names, in the order they are boxed */
        uint32_t n, cap;
        bool oom;
};

static void hold(struct held *h, int fd)
{
        if (fd < 0 || h->oom)
                return;
        if (h->n == h->cap) {
                uint32_t c = h->cap ? h->cap * 2 : 256;
                int *p = realloc(h->fds, c * sizeof(*p));

                if (!p) {
                        h->oom = true;
                        return;
                }
                h->fds = p;
                h->cap = c;
        }
        h->fds[h->n++] = fd;
}

static void collect(struct server *srv, struct held *h)
{
        struct sn_list *pos, *tmp, *p2, *t2;

        hold(h, srv->listen_fd);
        sn_list_foreach_safe(pos, tmp, &srv->conns) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                hold(h, c->fd);
                for (uint32_t i = 0; i < c->stage.nfds; i++)
                        hold(h, c->stage.fds[i]);
        }
        sn_list_foreach_safe(pos, tmp, &srv->ports) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                hold(h, p->epfd);
                sn_list_foreach_safe(p2, t2, &p->regs) {
                        const struct reg *g = sn_list_entry(p2, struct reg, port_link);

                        hold(h, g->fd);
                        hold(h, g->out_fd);
                }
        }
}

static int write_all(int fd, const void *buf, size_t len)
{
        const uint8_t *p = buf;

        while (len) {
                ssize_t w = write(fd, p, len);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return w < 0 ? -errno : -EIO;
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

/* The map memfd for h, or a negative errno. */
static int write_map(const struct held *h)
{
        size_t len = 16 + (size_t)h->n * 4;
        uint8_t *buf = calloc(1, len);
        int fd, r;

        if (!buf)
                return -ENOMEM;
        memcpy(buf, MAP_MAGIC, 8);
        sn_put_u32(buf + 8, MAP_VERSION);
        sn_put_u32(buf + 12, h->n);
        for (uint32_t i = 0; i < h->n; i++)
                sn_put_u32(buf + 16 + (size_t)i * 4, (uint32_t)h->fds[i]);
        fd = memfd_create("socknotifyd-fdmap", MFD_CLOEXEC);
        r = fd < 0 ? -errno : write_all(fd, buf, len);
        free(buf);
        if (r < 0 && fd >= 0)
                close(fd);
        return r < 0 ? r : fd;
}

static int store(const char *name, int fd)
{
        char line[96];
        int r;

        snprintf(line, sizeof(line), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
        r = sd_pid_notify_with_fds(0, 0, line, &fd, 1);
        return r > 0 ? 0 : r < 0 ? r : -ENOTCONN;
}

/*
 * Boxes h's descriptors (see the top of the file); the receiving ends go to boxes, *ret_n of
 * them.  Returns 0 or a negative errno (the boxes made are still returned, to be closed).
 */
static int box_all(const struct held *h, int *boxes, uint32_t *ret_n)
{
        /* Tests make boxes small to see several (SOCKNOTIFY_FDSTORE_BOX_MESSAGES). */
        const char *env = getenv("SOCKNOTIFY_FDSTORE_BOX_MESSAGES");
        uint32_t per_box = env ? (uint32_t)strtoul(env, NULL, 10) : 0, in_box = 0;
        int sv[2] = { -1, -1 }, r = 0;
        uint32_t i = 0, nboxes = 0;
        uint8_t byte = 0;

        while (i < h->n && !r) {
                unsigned n = SN_MIN(BATCH, h->n - i);

                if (sv[0] < 0) {
                        int size = BOX_SNDBUF;

                        if (nboxes == MAX_BOXES) {
                                r = -ENOSPC;
                                break;
                        }
                        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                                r = -errno;
                                break;
                        }
                        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
                        boxes[nboxes++] = sv[1];
                        in_box = 0;
                }
                r = per_box && in_box == per_box ? -EAGAIN :
                    sn__fdmsg_send(sv[0], &byte, 1, h->fds + i, n, MSG_DONTWAIT);
                if (r == -EAGAIN && in_box) {
                        /* This box is full: the next batch starts the next one. */
                        close(sv[0]);
                        sv[0] = -1;
                        in_box = 0;
                        r = 0;
                        continue;
                }
                in_box++;
                i += n;
        }
        if (sv[0] >= 0)
                close(sv[0]);
        *ret_n = nboxes;
        return r;
}

int fdstore_handover(struct server *srv, uint32_t capacity)
{
        struct held h = { 0 };
        int map = -1, state = -1, r, *boxes = NULL;
        uint32_t nboxes = 0;
        char name[32];

        collect(srv, &h);
        r = h.oom ? -ENOMEM : 0;
        if (!r) {
                boxes = calloc(MAX_BOXES, sizeof(*boxes));
                r = boxes ? box_all(&h, boxes, &nboxes) : -ENOMEM;
        }
        if (!r && nboxes + 2 + live_entries(srv) > capacity) {
                log_warning("fd store: %u entries to keep but the store takes %u "
                            "(FileDescriptorStoreMax=)", nboxes + 2 + live_entries(srv),
                            capacity);
                r = -ENOSPC;
        }
        if (!r) {
                map = write_map(&h);
                r = map < 0 ? map : 0;
        }
        if (!r) {
                state = memfd_create("socknotifyd-state", MFD_CLOEXEC);
                r = state < 0 ? -errno : reexec_save(srv, state);
        }
        for (uint32_t k = 0; !r && k < nboxes; k++) {
                snprintf(name, sizeof(name), "snbox.%u", k);
                r = store(name, boxes[k]);
        }
        if (!r)
                r = store("snmap", map);
        /* Last: a state in the store means everything it names is there too. */
        if (!r)
                r = store("snstate", state);
        /* Wait until the manager has taken all of it, before exiting closes our copies. */
        if (!r) {
                r = sd_notify_barrier(0, BARRIER_USEC);
                r = r < 0 ? r : 0;
        }
        if (r < 0) {
                log_error("fd store: handing over failed: %s; stopping without it",
                          strerror(-r));
                fdstore_forget(nboxes);
        } else {
                log_info("fd store: kept %u connection(s), %u port(s), %llu registration(s) "
                         "(%u descriptor(s) in %u box(es)) for the next start (a restart)",
                         srv->nconns, srv->nports, (unsigned long long)srv->nregs, h.n, nboxes);
        }
        for (uint32_t k = 0; k < nboxes; k++)
                close(boxes[k]);
        if (map >= 0)
                close(map);
        if (state >= 0)
                close(state);
        free(boxes);
        free(h.fds);
        return r;
}

void fdstore_forget(uint32_t nboxes)
{
        char line[96];

        sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=snstate");
        sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=snmap");
        for (uint32_t k = 0; k < nboxes; k++) {
                snprintf(line, sizeof(line), "FDSTOREREMOVE=1\nFDNAME=snbox.%u", k);
                sd_notify(0, line);
        }
}

/* ---- taking back -------------------------------------------------------------------------- */

struct got {
        int fd;
        int box;      /* snbox.K: K; else -1 */
        bool sn;      /* one of ours */
        bool state, map;
        bool live;    /* snjournal.G or snlive.G.I: kept while the previous daemon ran */
        bool journal;
        bool settings; /* snlive.settings: the last good settings (lastgood.c) */
        uint32_t gen; /* snjournal.G: G */
};

/* What the previous daemon kept as it ran (live.c): its journal and the descriptors of its
 * boxes, for a restore after a crash, and the names to remove once ours are stored. */
static struct {
        uint8_t *journal;
        size_t size;
        int *fds;
        uint32_t nfds, cap;
        char **names;
        uint32_t nnames;
        uint32_t gen;
        bool crashed;
        int settings_fd; /* snlive.settings, or -1 */
} prev = { .settings_fd = -1 };

/* Copies of the descriptors of a box of the previous daemon, added to prev.fds.  They are
 * peeked, not taken: the box in the store keeps them until our own journal and boxes are stored
 * and the previous daemon's entries removed, so that a crash of ours before that (in the
 * restore, an OOM kill at start) leaves the store as it found it. */
static int prev_take_box(int box)
{
        int zero = 0;

        if (setsockopt(box, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
                return -errno;
        for (;;) {
                int fds[BATCH];
                unsigned nfds = 0;
                uint8_t byte;
                ssize_t n = sn__fdmsg_recv(box, &byte, 1, fds, BATCH, &nfds,
                                           MSG_DONTWAIT | MSG_PEEK);

                if (n <= 0 && !nfds)
                        return n == 0 || n == -EAGAIN ? 0 : (int)n;
                if (prev.nfds + nfds > prev.cap) {
                        uint32_t cap = SN_MAX(prev.cap * 2, prev.nfds + nfds + 256);
                        int *p = realloc(prev.fds, cap * sizeof(*p));

                        if (!p) {
                                sn__fds_close(fds, nfds);
                                return -ENOMEM;
                        }
                        prev.fds = p;
                        prev.cap = cap;
                }
                memcpy(prev.fds + prev.nfds, fds, nfds * sizeof(int));
                prev.nfds += nfds;
        }
}

static uint8_t *read_whole(int fd, size_t *ret_size)
{
        struct stat st;
        uint8_t *p;

        if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (1ll << 32))
                return NULL;
        p = malloc((size_t)st.st_size);
        if (p && pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
                free(p);
                return NULL;
        }
        *ret_size = (size_t)st.st_size;
        return p;
}

bool fdstore_crashed(const uint8_t **journal, size_t *size, int **fds, uint32_t *nfds)
{
        if (!prev.crashed)
                return false;
        *journal = prev.journal;
        *size = prev.size;
        *fds = prev.fds;
        *nfds = prev.nfds;
        prev.fds = NULL;
        prev.nfds = prev.cap = 0;
        prev.crashed = false;
        return true;
}

uint32_t fdstore_next_gen(void)
{
        uint32_t t = (uint32_t)time(NULL);

        return prev.gen && prev.gen + 1 > t ? prev.gen + 1 : SN_MAX(t, prev.gen + 1);
}

void fdstore_forget_previous(void)
{
        char line[96];

        for (uint32_t i = 0; i < prev.nnames; i++) {
                snprintf(line, sizeof(line), "FDSTOREREMOVE=1\nFDNAME=%s", prev.names[i]);
                sd_notify(0, line);
                free(prev.names[i]);
        }
        free(prev.names);
        prev.names = NULL;
        prev.nnames = 0;
        free(prev.journal);
        prev.journal = NULL;
        sn__fds_close(prev.fds, prev.nfds);
        free(prev.fds);
        prev.fds = NULL;
        prev.nfds = prev.cap = 0;
}

static void prev_name(const char *name)
{
        char **v = realloc(prev.names, (prev.nnames + 1) * sizeof(*v));

        if (v && (v[prev.nnames] = strdup(name)))
                prev.nnames++;
        if (v)
                prev.names = v;
}

static uint32_t parse_gen(const char *name)
{
        const char *p = strchr(name, '.');

        return p ? (uint32_t)strtoul(p + 1, NULL, 10) : 0;
}

static void free_names(char **names)
{
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
}

static int parse_box_name(const char *name)
{
        char *end;
        long v;

        if (strncmp(name, "snbox.", 6) || !name[6])
                return -1;
        errno = 0;
        v = strtol(name + 6, &end, 10);
        return errno || *end || v < 0 || v >= (long)MAX_BOXES ? -1 : (int)v;
}

/* The old numbers of the map at fd (*ret_n of them), or NULL when it is not a map. */
static uint32_t *read_map(int fd, uint32_t *ret_n)
{
        struct stat st;
        uint8_t *p;
        uint32_t n, *old = NULL;

        if (fstat(fd, &st) < 0 || st.st_size < 16 || st.st_size > (1 << 28))
                return NULL;
        p = malloc((size_t)st.st_size);
        if (!p)
                return NULL;
        if (pread(fd, p, (size_t)st.st_size, 0) == st.st_size && !memcmp(p, MAP_MAGIC, 8) &&
            sn_get_u32(p + 8) == MAP_VERSION && (n = sn_get_u32(p + 12)) &&
            (size_t)st.st_size == 16 + (size_t)n * 4 && (old = calloc(n, sizeof(*old)))) {
                for (uint32_t i = 0; i < n; i++) {
                        old[i] = sn_get_u32(p + 16 + (size_t)i * 4);
                        if (old[i] < 3 || old[i] >= INT32_MAX) {
                                free(old);
                                old = NULL;
                                break;
                        }
                }
                *ret_n = n;
        }
        free(p);
        return old;
}

/*
 * Takes the descriptors out of one box, in order, and puts each at its old number
 * (old[*next], ...).  Every descriptor received is first moved to hi or above, out of the way
 * of the numbers still to fill.  Returns 0 at the box's end or a negative errno (logged).
 */
static int unbox(int box, const uint32_t *old, uint32_t nmap, uint32_t *next, int hi)
{
        for (;;) {
                int fds[BATCH];
                unsigned nfds = 0;
                uint8_t byte;
                ssize_t n = sn__fdmsg_recv(box, &byte, 1, fds, BATCH, &nfds, MSG_DONTWAIT);
                int r = 0;

                if (n == 0 && nfds == 0)
                        return 0;
                if (n < 0) {
                        sn__fds_close(fds, nfds);
                        log_error("fd store: reading a box: %s", strerror((int)-n));
                        return (int)n;
                }
                for (unsigned i = 0; i < nfds; i++) {
                        int fd = r ? -1 : fcntl(fds[i], F_DUPFD_CLOEXEC, hi);

                        if (!r && fd < 0)
                                r = -errno;
                        close(fds[i]);
                        fds[i] = fd;
                }
                for (unsigned i = 0; i < nfds; i++) {
                        if (!r && *next >= nmap)
                                r = -EBADMSG;
                        if (!r && dup2(fds[i], (int)old[*next]) < 0)
                                r = -errno;
                        if (!r)
                                (*next)++;
                        if (fds[i] >= 0)
                                close(fds[i]);
                }
                if (r) {
                        log_error("fd store: putting descriptors back: %s", strerror(-r));
                        return r;
                }
        }
}

int fdstore_take_settings(void)
{
        int fd = prev.settings_fd;

        prev.settings_fd = -1;
        return fd;
}

int fdstore_take(int *ret_listen_fd, int *ret_state_fd)
{
        char **names = NULL;
        struct got *g = NULL;
        int n, nlisten = 0, listen_fd = 0, state = -1, map_fd = -1, settings = -1, r = 0;
        uint32_t *old = NULL, nmap = 0, next = 0, nboxes = 0;
        bool have_ours = false;

        *ret_listen_fd = 0;
        *ret_state_fd = -1;
        n = sd_listen_fds_with_names(1, &names);
        if (n <= 0) {
                free_names(names);
                if (n < 0)
                        log_error("LISTEN_FDS: %s", strerror(-n));
                return n;
        }
        g = calloc((size_t)n, sizeof(*g));
        if (!g) {
                free_names(names);
                return -ENOMEM;
        }
        for (int k = 0; k < n; k++) {
                const char *name = names && names[k] ? names[k] : "";

                g[k].fd = SD_LISTEN_FDS_START + k;
                g[k].box = parse_box_name(name);
                g[k].state = !strcmp(name, "snstate");
                g[k].map = !strcmp(name, "snmap");
                g[k].journal = !strncmp(name, "snjournal.", 10);
                g[k].settings = lastgood_is_store_name(name);
                g[k].live = (g[k].journal || !strncmp(name, "snlive.", 7)) && !g[k].settings;
                g[k].sn = g[k].box >= 0 || g[k].state || g[k].map || g[k].live ||
                          g[k].settings;
                have_ours |= g[k].box >= 0 || g[k].state || g[k].map;
                if (g[k].live) {
                        prev_name(name);
                        if (g[k].journal) {
                                g[k].gen = parse_gen(name);
                                prev.gen = SN_MAX(prev.gen, g[k].gen);
                        }
                }
                if (g[k].box >= 0)
                        nboxes = SN_MAX(nboxes, (uint32_t)g[k].box + 1);
                if (g[k].state && state < 0)
                        state = g[k].fd;
                if (g[k].map && map_fd < 0)
                        map_fd = g[k].fd;
                if (g[k].settings && settings < 0)
                        settings = g[k].fd;
                if (!g[k].sn) {
                        nlisten++;
                        listen_fd = g[k].fd;
                }
        }
        if (state >= 0) {
                int hi = SD_LISTEN_FDS_START + n;

                old = map_fd >= 0 ? read_map(map_fd, &nmap) : NULL;
                if (!old) {
                        log_error("fd store: a state without a usable descriptor map");
                        r = -EBADMSG;
                }
                for (uint32_t i = 0; old && i < nmap; i++)
                        hi = SN_MAX(hi, (int)old[i] + 1);
                /* Out of the way of every old number first. */
                for (int k = 0; !r && k < n; k++) {
                        int fd = fcntl(g[k].fd, F_DUPFD_CLOEXEC, hi);

                        if (fd < 0) {
                                r = -errno;
                                log_error("fd store: moving descriptors above %d: %s", hi,
                                          strerror(-r));
                                break;
                        }
                        close(g[k].fd);
                        if (g[k].fd == state)
                                state = fd;
                        if (g[k].fd == settings)
                                settings = fd;
                        g[k].fd = fd;
                }
                for (uint32_t b = 0; !r && b < nboxes; b++) {
                        int k;

                        for (k = 0; k < n && g[k].box != (int)b; k++)
                                ;
                        if (k == n) {
                                log_error("fd store: box %u is missing", b);
                                r = -ENOENT;
                                break;
                        }
                        r = unbox(g[k].fd, old, nmap, &next, hi);
                }
                if (!r && next != nmap) {
                        log_error("fd store: %u descriptor(s) of %u came back", next, nmap);
                        r = -ENOENT;
                }
                if (!r)
                        log_info("fd store: took back %u descriptor(s) from %u box(es)", nmap,
                                 nboxes);
        } else if (have_ours) {
                log_warning("fd store: discarding entries left without a state (a stop that "
                            "did not finish)");
        }
        if (state < 0 && !r) {
                /* No orderly stop: what the previous daemon kept as it ran is a crash's.  Two
                 * generations are there when a daemon died between storing its own and
                 * removing its predecessor's: the newest journal is the truth (it is complete
                 * before it is stored), and sockets are looked for in the boxes of both (its
                 * own boxes may not all be stored yet; what the journal does not name is
                 * closed). */
                for (int k = 0; k < n; k++) {
                        if (g[k].journal && !prev.journal && g[k].gen == prev.gen) {
                                prev.journal = read_whole(g[k].fd, &prev.size);
                                prev.crashed = prev.journal != NULL;
                        } else if (g[k].live && !g[k].journal) {
                                int e = prev_take_box(g[k].fd);

                                if (e < 0)
                                        log_error("fd store: reading a box of the previous "
                                                  "daemon: %s", strerror(-e));
                        }
                }
        }
        /* Ours from here on (or discarded): the store keeps no copy.  A state that then fails
         * to load is not tried again by the next start. */
        if (have_ours)
                fdstore_forget(nboxes);
        /* Close what was received, but the state, the last good settings (replaced by ours
         * in the store, see lastgood.c), and the activated listening socket when no state is
         * taken (a state names its own). */
        for (int k = 0; k < n; k++) {
                bool keep = (g[k].fd == state && !r) || (state < 0 && !g[k].sn && nlisten == 1) ||
                            (g[k].fd == settings && !r);

                if (!keep)
                        close(g[k].fd);
        }
        if (!r && settings >= 0)
                prev.settings_fd = settings;
        free(old);
        free(g);
        free_names(names);
        if (r < 0) {
                /* The numbers already put back are closed when this process exits. */
                log_error("fd store: the kept state cannot be taken back; exiting, so that "
                          "the next start begins afresh (its clients lose their sessions)");
                return r;
        }
        if (state >= 0) {
                *ret_state_fd = state;
                return 1;
        }
        if (nlisten > 1) {
                log_error("socket activation passed %d sockets; socknotifyd takes exactly one",
                          nlisten);
                return -EINVAL;
        }
        *ret_listen_fd = listen_fd;
        return nlisten;
}

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
 * The next daemon receives the descriptors with LISTEN_FDS, in an order and at numbers of the
 * manager's choosing.  The state names descriptors by their numbers in the old process, and a
 * port's epoll instance knows its sockets by (file, number) too, so each descriptor is put back
 * at its old number before the state is read; from there on a restore is a re-exec's restore.
 * Which received descriptor had which number: one message of the protocol names all the
 * descriptors it carries alike (FDNAME=), so names cannot tell sockets apart in a batch.  A
 * second memfd, the map, lists every old number with the identity (st_dev, st_ino) of the
 * socket or file at it, unique while it is open.  Epoll instances all share one anonymous
 * inode, so each goes in its own message named "snep.OLDNUMBER".  Names:
 *
 *   snfd          sockets (connections, held sockets, the listening socket), batches of 253
 *   snep.N        the epoll instance of one port, which had number N
 *   snmap         the map: "SNFDMAP\0", u32 version, u32 count, count x {u32 number, u32 0,
 *                 u64 dev, u64 ino}, little-endian
 *   snstate       the state (docs/reexec-state.md), sent last: without it nothing is used
 *
 * The manager keeps only one copy of a descriptor it already holds (same open file), so a
 * socket the daemon had at two numbers (a registration's EDGE duplicate) comes back once and
 * is put at both.  After a restore everything is removed from the store again
 * (FDSTOREREMOVE=1); descriptors left in the store without a state (a stop that did not
 * finish) are closed and removed at start.  A daemon that holds more descriptors than the
 * store takes stops as before, closing every connection, and says so in its log.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/daemon.h"

#define MAP_MAGIC "SNFDMAP\0"
#define MAP_VERSION 1u
#define MAP_ENTRY 24u
#define BATCH 253u
#define BARRIER_USEC (5u * 1000000u)

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
        int *fds; /* sockets and memfds, one entry per number */
        uint32_t n, cap;
        int *eps; /* epoll instances */
        uint32_t neps, epcap;
        bool oom;
};

static void hold(int **v, uint32_t *n, uint32_t *cap, bool *oom, int fd)
{
        if (fd < 0 || *oom)
                return;
        if (*n == *cap) {
                uint32_t c = *cap ? *cap * 2 : 256;
                int *p = realloc(*v, c * sizeof(*p));

                if (!p) {
                        *oom = true;
                        return;
                }
                *v = p;
                *cap = c;
        }
        (*v)[(*n)++] = fd;
}

static void collect(struct server *srv, struct held *h)
{
        struct sn_list *pos, *tmp, *p2, *t2;

        hold(&h->fds, &h->n, &h->cap, &h->oom, srv->listen_fd);
        sn_list_foreach_safe(pos, tmp, &srv->conns) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                hold(&h->fds, &h->n, &h->cap, &h->oom, c->fd);
                for (uint32_t i = 0; i < c->stage.nfds; i++)
                        hold(&h->fds, &h->n, &h->cap, &h->oom, c->stage.fds[i]);
        }
        sn_list_foreach_safe(pos, tmp, &srv->ports) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                hold(&h->eps, &h->neps, &h->epcap, &h->oom, p->epfd);
                sn_list_foreach_safe(p2, t2, &p->regs) {
                        const struct reg *g = sn_list_entry(p2, struct reg, port_link);

                        hold(&h->fds, &h->n, &h->cap, &h->oom, g->fd);
                        hold(&h->fds, &h->n, &h->cap, &h->oom, g->out_fd);
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

/* The map memfd for the numbers in h->fds, or a negative errno. */
static int write_map(const struct held *h)
{
        size_t len = 16 + (size_t)h->n * MAP_ENTRY;
        uint8_t *buf = calloc(1, len);
        int fd, r = 0;

        if (!buf)
                return -ENOMEM;
        memcpy(buf, MAP_MAGIC, 8);
        sn_put_u32(buf + 8, MAP_VERSION);
        sn_put_u32(buf + 12, h->n);
        for (uint32_t i = 0; i < h->n && !r; i++) {
                uint8_t *e = buf + 16 + (size_t)i * MAP_ENTRY;
                struct stat st;

                if (fstat(h->fds[i], &st) < 0) {
                        r = -errno;
                        break;
                }
                sn_put_u32(e, (uint32_t)h->fds[i]);
                sn_put_u64(e + 8, (uint64_t)st.st_dev);
                sn_put_u64(e + 16, (uint64_t)st.st_ino);
        }
        fd = r ? -1 : memfd_create("socknotifyd-fdmap", MFD_CLOEXEC);
        if (!r && fd < 0)
                r = -errno;
        if (!r)
                r = write_all(fd, buf, len);
        free(buf);
        if (r) {
                if (fd >= 0)
                        close(fd);
                return r;
        }
        return fd;
}

static int store(const char *name, const int *fds, unsigned n)
{
        char line[96];
        int r;

        snprintf(line, sizeof(line), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
        r = sd_pid_notify_with_fds(0, 0, line, fds, n);
        return r > 0 ? 0 : r < 0 ? r : -ENOTCONN;
}

int fdstore_handover(struct server *srv, uint32_t capacity)
{
        struct held h = { 0 };
        int map = -1, state = -1, r;
        char name[32];
        uint32_t total;

        collect(srv, &h);
        r = h.oom ? -ENOMEM : 0;
        total = h.n + h.neps + 2;
        if (!r && total > capacity) {
                log_warning("fd store: %u descriptor(s) to keep but the store takes %u "
                            "(FileDescriptorStoreMax=); stopping without it",
                            total, capacity);
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
        for (uint32_t i = 0; !r && i < h.neps; i++) {
                snprintf(name, sizeof(name), "snep.%d", h.eps[i]);
                r = store(name, &h.eps[i], 1);
        }
        for (uint32_t i = 0; !r && i < h.n; i += BATCH)
                r = store("snfd", h.fds + i, SN_MIN(BATCH, h.n - i));
        if (!r)
                r = store("snmap", &map, 1);
        /* Last: a state in the store means everything it names is there too. */
        if (!r)
                r = store("snstate", &state, 1);
        /* Wait until the manager has taken all of it, before exiting closes our copies. */
        if (!r) {
                r = sd_notify_barrier(0, BARRIER_USEC);
                r = r < 0 ? r : 0;
        }
        if (r < 0 && r != -ENOSPC) {
                log_error("fd store: handing over failed: %s; stopping without it",
                          strerror(-r));
                fdstore_forget(h.eps, h.neps);
        }
        if (!r)
                log_info("fd store: kept %u connection(s), %u port(s), %llu registration(s) "
                         "(%u descriptor(s)) for the next start (a restart)",
                         srv->nconns, srv->nports, (unsigned long long)srv->nregs, total);
        if (map >= 0)
                close(map);
        if (state >= 0)
                close(state);
        free(h.fds);
        free(h.eps);
        return r;
}

static void forget_epoll(int number)
{
        char line[96];

        snprintf(line, sizeof(line), "FDSTOREREMOVE=1\nFDNAME=snep.%d", number);
        sd_notify(0, line);
}

void fdstore_forget(const int *epoll_numbers, uint32_t n)
{
        static const char *const names[] = { "snstate", "snmap", "snfd" };
        char line[96];

        for (size_t i = 0; i < SN_ARRAY_SIZE(names); i++) {
                snprintf(line, sizeof(line), "FDSTOREREMOVE=1\nFDNAME=%s", names[i]);
                sd_notify(0, line);
        }
        for (uint32_t i = 0; i < n; i++)
                forget_epoll(epoll_numbers[i]);
}

/* ---- taking back -------------------------------------------------------------------------- */

struct got {
        int fd;       /* at a high number while relocating */
        uint64_t dev, ino;
        int ep_old;   /* snep.N: N; else -1 */
        bool sn;      /* one of ours (name starting "sn") */
        bool state, map;
        bool used;
};

static void free_names(char **names)
{
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
}

static bool is_ours(const char *name)
{
        return !strcmp(name, "snfd") || !strcmp(name, "snmap") || !strcmp(name, "snstate") ||
               !strncmp(name, "snep.", 5);
}

static int parse_epoll_name(const char *name)
{
        char *end;
        long v;

        if (strncmp(name, "snep.", 5))
                return -1;
        errno = 0;
        v = strtol(name + 5, &end, 10);
        return errno || *end || v < 3 || v > INT32_MAX ? -1 : (int)v;
}

static uint8_t *read_map(int fd, uint32_t *ret_n)
{
        struct stat st;
        uint8_t *p;
        uint32_t n;

        if (fstat(fd, &st) < 0 || st.st_size < 16 || st.st_size > (1 << 28))
                return NULL;
        p = malloc((size_t)st.st_size);
        if (!p)
                return NULL;
        if (pread(fd, p, (size_t)st.st_size, 0) != st.st_size || memcmp(p, MAP_MAGIC, 8) ||
            sn_get_u32(p + 8) != MAP_VERSION ||
            (n = sn_get_u32(p + 12)) != ((size_t)st.st_size - 16) / MAP_ENTRY ||
            (size_t)st.st_size != 16 + (size_t)n * MAP_ENTRY) {
                free(p);
                return NULL;
        }
        *ret_n = n;
        return p;
}

/*
 * Puts every old number of the map back, each at the descriptor with the same identity, and
 * each epoll instance at the number its name gives.  Returns 0 or a negative errno (logged).
 */
static int relocate(struct got *g, int n, const uint8_t *map, uint32_t nmap)
{
        for (uint32_t i = 0; i < nmap; i++) {
                const uint8_t *e = map + 16 + (size_t)i * MAP_ENTRY;
                uint32_t old = sn_get_u32(e);
                uint64_t dev = sn_get_u64(e + 8), ino = sn_get_u64(e + 16);
                int k;

                for (k = 0; k < n; k++)
                        if (!g[k].state && !g[k].map && g[k].ep_old < 0 && g[k].dev == dev &&
                            g[k].ino == ino)
                                break;
                if (k == n) {
                        log_error("fd store: descriptor %u of the state is missing", old);
                        return -ENOENT;
                }
                if (old < 3 || old > INT32_MAX || dup2(g[k].fd, (int)old) < 0) {
                        log_error("fd store: cannot put back descriptor %u: %s", old,
                                  old < 3 ? "bad number" : strerror(errno));
                        return -EBADF;
                }
                g[k].used = true;
        }
        for (int k = 0; k < n; k++)
                if (g[k].ep_old >= 0) {
                        if (dup2(g[k].fd, g[k].ep_old) < 0) {
                                log_error("fd store: cannot put back epoll %d: %s",
                                          g[k].ep_old, strerror(errno));
                                return -EBADF;
                        }
                        g[k].used = true;
                }
        return 0;
}

int fdstore_take(int *ret_listen_fd, int *ret_state_fd)
{
        char **names = NULL;
        struct got *g = NULL;
        int n, hi = 3, nlisten = 0, listen_fd = 0, state = -1, r = 0;
        uint8_t *map = NULL;
        uint32_t nmap = 0;
        bool have_state = false, have_ours = false;

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
                g[k].ep_old = parse_epoll_name(name);
                g[k].sn = is_ours(name);
                g[k].state = !strcmp(name, "snstate");
                g[k].map = !strcmp(name, "snmap");
                have_state |= g[k].state;
                have_ours |= g[k].sn;
                if (!g[k].sn) {
                        nlisten++;
                        listen_fd = g[k].fd;
                }
        }
        /* Out of the way of every old number first, then each at its old number. */
        if (have_state) {
                hi = SD_LISTEN_FDS_START + n;
                for (int k = 0; k < n; k++)
                        if (g[k].ep_old >= hi)
                                hi = g[k].ep_old + 1;
                for (int k = 0; k < n; k++)
                        if (g[k].map && !map)
                                map = read_map(g[k].fd, &nmap);
                for (uint32_t i = 0; map && i < nmap; i++)
                        hi = SN_MAX(hi, (int)SN_MIN(sn_get_u32(map + 16 + (size_t)i * MAP_ENTRY),
                                                    (uint32_t)INT32_MAX - 1) + 1);
                if (!map) {
                        log_error("fd store: a state without a usable descriptor map");
                        r = -EBADMSG;
                }
                for (int k = 0; !r && k < n; k++) {
                        struct stat st;
                        int fd = fcntl(g[k].fd, F_DUPFD_CLOEXEC, hi);

                        if (fd < 0) {
                                r = -errno;
                                log_error("fd store: moving descriptors: %s", strerror(-r));
                                break;
                        }
                        close(g[k].fd);
                        g[k].fd = fd;
                        if (fstat(fd, &st) == 0) {
                                g[k].dev = (uint64_t)st.st_dev;
                                g[k].ino = (uint64_t)st.st_ino;
                        }
                }
                if (!r)
                        r = relocate(g, n, map, nmap);
        }
        if (have_state && !r) {
                for (int k = 0; k < n; k++)
                        if (g[k].state && state < 0) {
                                state = g[k].fd;
                                g[k].fd = -1;
                        }
                log_info("fd store: taking back what the previous daemon kept (%d "
                         "descriptor(s))", n);
        } else if (have_ours && !have_state) {
                log_warning("fd store: discarding %d descriptor(s) left without a state (a "
                            "stop that did not finish)", n - nlisten);
        }
        /* Ours from here on (or discarded): the store keeps no copy.  A state that then fails
         * to load is not tried again by the next start. */
        if (have_ours) {
                fdstore_forget(NULL, 0);
                for (int k = 0; k < n; k++)
                        if (g[k].ep_old >= 0)
                                forget_epoll(g[k].ep_old);
        }
        /* What was not put back at an old number is closed; the listening socket the manager
         * passed stays unless a state is taken (the state names its own). */
        for (int k = 0; k < n; k++) {
                bool keep = !have_state && !g[k].sn && nlisten == 1;

                if (g[k].fd >= 0 && !keep)
                        close(g[k].fd);
        }
        free(map);
        free(g);
        free_names(names);
        if (r < 0) {
                /* The store is emptied above: the next start is a fresh one.  The numbers
                 * already put back are closed when this process exits. */
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

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fuzz-daemon.c - libFuzzer target for socknotifyd's request handling, in process.
 *
 * The real daemon core (libsndaemon: server, connections, ports, registrations, status) runs in
 * this process on a temporary socket path, created once.  One input is the life of one client
 * connection (and, when the input asks, of a second "victim" connection of the same user): the
 * harness connects a SOCK_SEQPACKET socket to the daemon's listening socket and lets the
 * daemon's listener accept it, sends the input's messages with real descriptors attached
 * (SCM_RIGHTS), turns the daemon's libevent loop without blocking until it is quiet, reads the
 * replies, and finally closes its ends.  After every input the daemon must be back where it
 * started; anything else aborts (libFuzzer reports it as a crash):
 *  - no connection left (a client that is gone must not be kept alive), none waiting to be
 *    reaped;
 *  - no port, registration, parked wait, queued packet, per-user record or registry entry;
 *  - the process holds exactly as many descriptors, and the loop exactly as many registered
 *    events (a timer or watch left behind would fire on freed state), as before the input.
 * Memory errors are left to ASan/UBSan, leaks to LeakSanitizer.
 *
 * Input format: a sequence of records, each starting with a control byte
 *     bit 7     the record is for the victim connection (opened at its first use)
 *     bits 0-2  operation:
 *       0, 5-7  MESSAGE   u16 len, u8 nfds, u8 kind[min(nfds, 8)], payload[len]
 *                         with bit 4 (REPEAT): then u16 reps, u8 itemlen before the payload:
 *                         the payload's last itemlen bytes are repeated reps more times.
 *                         Unless bit 3 (RAW) is set, the header is fixed up: size = length,
 *                         nfds = descriptors attached, count += reps.  nfds descriptors are
 *                         attached; descriptor i < 8 is made as kind[i] says (make_fd()),
 *                         the others are duplicates of descriptor i % 8.
 *       1       RUN       u8 ms: when calls are parked, run the loop for ms % 32 milliseconds
 *                         (their timers fire); at most 64 ms per input
 *       2       SHUT      u8 how: 0 shutdown(SHUT_RD), 1 shutdown(SHUT_WR), other: close the
 *                         client end now
 *       3       NOREAD    stop (or resume) reading the connection's replies
 *       4       POKE      u8 arg: on kept peer arg % 16 (the other ends of passed socketpairs):
 *                         arg>>4 & 3 = 0 write a byte, 1 read what is there, 2 shutdown(SHUT_WR),
 *                         3 close it
 * A truncated last record is ignored.  Port ids restart at 1 for every input (the harness resets
 * the counter, which is sound because no port survives an input), so an input always means
 * the same thing.
 *
 * Environment: SN_FUZZ_NO_SELF=1 never passes a connection's own client end as a descriptor
 * (the daemon then keeps the connection alive through its copy: defect 4b of issue 11), so
 * that fuzzing can go past that finding; SN_FUZZ_LOG=1 lets the daemon log (at debug level).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "common/fdmsg.h"
#include "common/log.h"
#include "daemon/base/settings.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/world.h"
#include "daemon/service/conn.h"
#include "daemon/service/server.h"
#include "tests/fuzz/fuzz.h"

#define FAIL(...)                                                                                  \
        do {                                                                                       \
                fprintf(stderr, "fuzz-daemon: invariant violated: " __VA_ARGS__);                  \
                fputc('\n', stderr);                                                               \
                abort();                                                                           \
        } while (0)

enum { OP_MESSAGE, OP_RUN, OP_SHUT, OP_NOREAD, OP_POKE };
#define CTL_VICTIM 0x80
#define CTL_REPEAT 0x10
#define CTL_RAW 0x08
#define MAX_MESSAGE_OUT (256u << 10) /* larger than max_message, to test EMSGSIZE */
#define NPEERS 16
#define RUN_BUDGET_MS 64

/* One client connection of the current input. */
struct client {
        int fd;          /* our end, -1 when closed */
        uint64_t serial; /* the daemon's conn serial, 0 when refused */
        bool opened;     /* connected in this input (not again after a close) */
        bool noread;
};

static struct server *srv;
static char dir[64];
static char sock_path[108]; /* sizeof(sun_path) */
static bool no_self;
static uint8_t *msgbuf, *rxbuf;

/* State of the current input. */
static struct client cl[2];
static int peers[NPEERS];
static unsigned run_ms;

/* socknotifyd's defaults, the per-user ones as on a system with 1024 descriptors. */
static struct limits fuzz_limits(void)
{
        struct settings none;
        struct limits l;
        int level;

        settings_init(&none);
        settings_resolve(&none, &none, 1024, &l, &level);
        return l;
}

static void remove_socket(void)
{
        unlink(sock_path);
        rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        struct server_options opt = { .mode = 0600, .listen_fd = -1 };
        const char *v;
        int r;

        sn_log_init(getenv("SN_FUZZ_LOG") ? LOG_DEBUG : LOG_CRIT);
        v = getenv("SN_FUZZ_NO_SELF");
        no_self = v && *v && strcmp(v, "0");
        snprintf(dir, sizeof(dir), "/tmp/sn-fuzz-XXXXXX");
        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                abort();
        }
        snprintf(sock_path, sizeof(sock_path), "%s/socknotify.sock", dir);
        opt.path = sock_path;
        opt.limits = fuzz_limits();
        r = server_new(&opt, &srv);
        if (r < 0) {
                fprintf(stderr, "server_new: %s\n", strerror(-r));
                abort();
        }
        msgbuf = malloc(MAX_MESSAGE_OUT);
        rxbuf = malloc(MAX_MESSAGE_OUT);
        if (!msgbuf || !rxbuf)
                abort();
        atexit(remove_socket);
        return 0;
}

static unsigned count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        unsigned n = 0;

        if (!d)
                abort();
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

static bool drain(struct client *c)
{
        bool got = false;

        if (c->fd < 0 || c->noread)
                return false;
        for (;;) {
                ssize_t n = recv(c->fd, rxbuf, MAX_MESSAGE_OUT, MSG_DONTWAIT);

                if (n <= 0)
                        break; /* 0: end of stream (the daemon never sends empty messages) */
                got = true;
        }
        return got;
}

/* Bytes sent on a client end that the daemon has not consumed yet. */
static int unread_by_daemon(const struct client *c)
{
        int n = 0;

        if (c->fd < 0 || ioctl(c->fd, SIOCOUTQ, &n) < 0)
                return 0;
        return n;
}

/* Turns the loop without blocking until the daemon has read everything and is quiet. */
static void pump(void)
{
        for (int i = 0; i < 256; i++) {
                bool busy;

                event_base_loop(srv->base, EVLOOP_NONBLOCK);
                busy = drain(&cl[0]);
                busy |= drain(&cl[1]);
                if (!busy && i > 0 && sn_list_empty(&srv->dead) && !unread_by_daemon(&cl[0]) &&
                    !unread_by_daemon(&cl[1]))
                        return;
        }
}

/* Connects a client to the daemon's listening socket, as a real client does (the peer address
 * of the client end is what the daemon recognizes its own connections by), and lets the
 * daemon's listener accept it. */
static void client_open(struct client *c)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint64_t before = srv->next_conn_serial;

        if (c->opened)
                return; /* once per input */
        c->opened = true;
        c->noread = false;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
                abort();
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(c->fd);
                c->fd = -1;
                return;
        }
        for (int i = 0; i < 16 && srv->next_conn_serial == before; i++)
                event_base_loop(srv->base, EVLOOP_NONBLOCK);
        c->serial = srv->next_conn_serial != before ? srv->next_conn_serial : 0;
}

static void client_close(struct client *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
}

static void keep_peer(int fd)
{
        for (int i = 0; i < NPEERS; i++)
                if (peers[i] < 0) {
                        peers[i] = fd;
                        return;
                }
        close(fd);
}

/* Makes descriptor i of a message, of the given kind.  Returns the fd (owned by the caller,
 * *ret_borrowed set when it must not be closed after sending) or -1. */
static int make_fd(uint8_t kind, struct client *self, struct client *other, const int *made,
                   unsigned i, bool *ret_borrowed)
{
        int sv[2], fd = -1;

        *ret_borrowed = false;
        switch (kind % 10) {
        case 0: /* a connected Unix stream socket; its peer is kept for POKE */
        case 1: /* the same, datagram */
                if (socketpair(AF_UNIX, (kind % 10 ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0,
                               sv) < 0)
                        return -1;
                keep_peer(sv[1]);
                return sv[0];
        case 2:
                return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        case 3: /* never connected: rule 14 */
                return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        case 4: /* not a socket */
                if (pipe2(sv, O_CLOEXEC) < 0)
                        return -1;
                close(sv[1]);
                return sv[0];
        case 5:
                return open("/dev/null", O_RDWR | O_CLOEXEC);
        case 6: /* the connection's own client end */
                if (!no_self && self->fd >= 0) {
                        *ret_borrowed = true;
                        return self->fd;
                }
                return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        case 7: /* the other connection's client end */
                if (!no_self) {
                        client_open(other);
                        if (other->fd >= 0) {
                                *ret_borrowed = true;
                                return other->fd;
                        }
                }
                return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        case 8: /* the same socket as the previous descriptor of this message */
                if (i > 0 && made[i - 1] >= 0)
                        return fcntl(made[i - 1], F_DUPFD_CLOEXEC, 0);
                return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        default: { /* a listening Unix socket, autobound in the abstract namespace */
                struct sockaddr_un sa = { .sun_family = AF_UNIX };

                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof(sa_family_t)) < 0 ||
                                listen(fd, 4) < 0)) {
                        close(fd);
                        return -1;
                }
                return fd;
        }
        }
}

static void send_message(struct client *c, struct client *other, const uint8_t *buf, size_t len,
                         const uint8_t *kinds, unsigned nkinds, unsigned nfds)
{
        int fds[SN_PROTO_MAX_FDS];
        bool borrowed[SN_PROTO_MAX_FDS];
        int first[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
        unsigned n = 0;

        for (unsigned i = 0; i < nfds; i++) {
                int fd;

                /* Past the eighth, descriptors are duplicates of the first eight (the same
                 * sockets again): making hundreds of sockets per message would slow fuzzing
                 * down to a crawl, and a message of 253 descriptors is still tested. */
                if (i >= 8) {
                        fd = first[i % 8] >= 0 ? fcntl(first[i % 8], F_DUPFD_CLOEXEC, 0) : -1;
                        borrowed[n] = false;
                } else {
                        fd = make_fd(kinds[i], c, other, fds, n, &borrowed[n]);
                        first[i] = fd;
                }
                if (fd >= 0)
                        fds[n++] = fd;
        }
        if (c->fd >= 0) {
                for (int tries = 0; tries < 64; tries++) {
                        int r = sn__fdmsg_send(c->fd, buf, len, fds, n, MSG_DONTWAIT);

                        if (r != -EAGAIN)
                                break;
                        pump();
                }
        }
        for (unsigned i = 0; i < n; i++)
                if (!borrowed[i])
                        close(fds[i]);
        pump();
}

/* Parses and performs one MESSAGE record; returns the bytes it used or 0 when truncated. */
static size_t do_message(uint8_t ctl, const uint8_t *p, size_t left, struct client *c,
                         struct client *other)
{
        const uint8_t *start = p, *kinds, *payload;
        unsigned nfds, nkinds, reps = 0, itemlen = 0;
        size_t len, total;

        if (left < 3)
                return 0;
        len = (size_t)p[0] | (size_t)p[1] << 8;
        nfds = p[2] > SN_PROTO_MAX_FDS ? SN_PROTO_MAX_FDS : p[2];
        nkinds = nfds < 8 ? nfds : 8;
        p += 3;
        left -= 3;
        if (left < nkinds)
                return 0;
        kinds = p;
        p += nkinds;
        left -= nkinds;
        if (ctl & CTL_REPEAT) {
                if (left < 3)
                        return 0;
                reps = (unsigned)p[0] | (unsigned)p[1] << 8;
                itemlen = p[2];
                p += 3;
                left -= 3;
        }
        if (left < len)
                return 0;
        payload = p;
        p += len;
        if (itemlen > len)
                itemlen = (unsigned)len;
        if (!itemlen)
                reps = 0;
        if (len + (size_t)reps * itemlen > MAX_MESSAGE_OUT)
                reps = (unsigned)((MAX_MESSAGE_OUT - len) / itemlen);
        memcpy(msgbuf, payload, len);
        total = len;
        for (unsigned i = 0; i < reps; i++, total += itemlen)
                memcpy(msgbuf + total, payload + len - itemlen, itemlen);
        if (!(ctl & CTL_RAW) && total >= SN_HEADER_SIZE) {
                sn_put_u32(msgbuf, (uint32_t)total);
                sn_put_u16(msgbuf + 6, (uint16_t)nfds);
                sn_put_u32(msgbuf + 16, sn_get_u32(msgbuf + 16) + reps);
        }
        client_open(c);
        send_message(c, other, msgbuf, total, kinds, nkinds, nfds);
        return (size_t)(p - start);
}

static void run_loop_for(unsigned ms)
{
        struct timeval tv = { 0, (suseconds_t)ms * 1000 };

        if (!srv->nwaits)
                return; /* only wait timers matter here; nothing else fires this soon */
        if (run_ms + ms > RUN_BUDGET_MS)
                ms = RUN_BUDGET_MS - run_ms;
        run_ms += ms;
        tv.tv_usec = (suseconds_t)ms * 1000;
        event_base_loopexit(srv->base, &tv);
        event_base_dispatch(srv->base);
        pump();
}

static void poke(uint8_t arg)
{
        int *fd = &peers[arg % NPEERS];
        char b[512];

        if (*fd < 0)
                return;
        switch (arg >> 4 & 3) {
        case 0:
                (void)!send(*fd, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
                break;
        case 1:
                while (recv(*fd, b, sizeof(b), MSG_DONTWAIT) > 0)
                        ;
                break;
        case 2:
                shutdown(*fd, SHUT_WR);
                break;
        default:
                close(*fd);
                *fd = -1;
                break;
        }
        pump();
}

static void check_clean(unsigned fds_before, int events_before)
{
        int events_after = event_base_get_num_events(srv->base, EVENT_BASE_COUNT_ADDED);
        unsigned fds_after;

        if (srv->nconns || !sn_list_empty(&srv->conns))
                FAIL("%u connection(s) outlived their clients", srv->nconns);
        if (!sn_list_empty(&srv->dead))
                FAIL("dead connections not reaped");
        if (srv->nports || !sn_list_empty(&srv->ports))
                FAIL("%u port(s) left", srv->nports);
        if (srv->nregs || srv->registry.count)
                FAIL("%llu registration(s) left, %zu in the registry",
                     (unsigned long long)srv->nregs, srv->registry.count);
        if (srv->nwaits)
                FAIL("%u wait(s) left", srv->nwaits);
        if (srv->nqueued)
                FAIL("%llu packet(s) left queued", (unsigned long long)srv->nqueued);
        if (!sn_list_empty(&srv->users))
                FAIL("per-user records left (a quota count did not go back to 0)");
        if (events_after != events_before)
                FAIL("%d event(s) left registered in the loop (%d before the input)",
                     events_after, events_before);
        fds_after = count_fds();
        if (fds_after != fds_before)
                FAIL("the process holds %d descriptor(s) more than before the input",
                     (int)fds_after - (int)fds_before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *p = data;
        size_t left = size;
        unsigned fds_before;
        int events_before;

        if (!srv)
                LLVMFuzzerInitialize(NULL, NULL);
        fds_before = count_fds();
        events_before = event_base_get_num_events(srv->base, EVENT_BASE_COUNT_ADDED);
        /* No port survives an input (checked below): ids may restart, inputs replay exactly.
         * Port ids are a keyed permutation of the creation count (port.c): with the keys the
         * daemon draws at random, no input could name a port it created.  Zero keys make the
         * n-th port's id the one gen-corpus.c computes (port_id_of_zero_keys). */
        srv->next_port_id = 0;
        memset(srv->port_id_key, 0, sizeof(srv->port_id_key));
        /* Registration handles likewise: a fresh slot table whose generations start from a
         * zero seed, so that the first registration's handle is 1 << 32 (gen-corpus.c). */
        free(srv->slots);
        free(srv->slot_next);
        free(srv->slot_gen);
        srv->slots = NULL;
        srv->slot_next = srv->slot_gen = NULL;
        srv->nslots = 0;
        srv->free_slot = UINT32_MAX;
        srv->slot_gen_seed = 0;
        memset(&srv->counters, 0, sizeof(srv->counters));
        for (int i = 0; i < 2; i++)
                cl[i] = (struct client){ .fd = -1 };
        for (int i = 0; i < NPEERS; i++)
                peers[i] = -1;
        run_ms = 0;

        while (left > 0) {
                uint8_t ctl = *p++;
                struct client *c = &cl[ctl & CTL_VICTIM ? 1 : 0];
                struct client *other = &cl[ctl & CTL_VICTIM ? 0 : 1];
                size_t used = 0;

                left--;
                switch (ctl & 7) {
                case OP_RUN:
                        if (left >= 1) {
                                run_loop_for(p[0] % 32);
                                used = 1;
                        }
                        break;
                case OP_SHUT:
                        if (left >= 1) {
                                if (c->fd >= 0 && p[0] < 2)
                                        shutdown(c->fd, p[0] ? SHUT_WR : SHUT_RD);
                                else
                                        client_close(c);
                                pump();
                                used = 1;
                        }
                        break;
                case OP_NOREAD:
                        c->noread = !c->noread;
                        pump();
                        break;
                case OP_POKE:
                        if (left >= 1) {
                                poke(p[0]);
                                used = 1;
                        }
                        break;
                default:
                        used = do_message(ctl, p, left, c, other);
                        break;
                }
                if (!used && (ctl & 7) != OP_NOREAD)
                        break;
                p += used;
                left -= used;
        }

        /* The clients go away: everything they made the daemon hold must go with them. */
        for (int i = 0; i < NPEERS; i++)
                if (peers[i] >= 0)
                        close(peers[i]);
        client_close(&cl[0]);
        client_close(&cl[1]);
        for (int i = 0; i < 64 && (srv->nconns || !sn_list_empty(&srv->dead)); i++)
                event_base_loop(srv->base, EVLOOP_NONBLOCK);
        /* Ports left lingering (handoff) hold what they kept until their timer: expire them
         * now, as the timer would, and everything must be gone then too. */
        for (struct sn_list *pos = srv->ports.next, *tmp = pos->next; pos != &srv->ports;
             pos = tmp, tmp = pos->next) {
                struct port *pt = sn_list_entry(pos, struct port, srv_link);

                if (pt->lingering)
                        port_free(pt, ECANCELED);
        }
        check_clean(fds_before, events_before);
        return 0;
}

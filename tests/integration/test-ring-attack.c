/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-ring-attack.c - hostile clients of the shared-memory rings (protocol version 3).
 *
 * Every byte of a ring file is writable by its client, and the doorbells are shared descriptors:
 * a client can only spoil its own notifications.  A raw ring client (written here with
 * common/ring.h and the codec, as a client library would be) first shows that it speaks the
 * protocol (a request through the SQ, its reply from the CQ).  Then the attacks: a scribbler
 * that writes random bytes over its SQ, its CQ and every word of the header, rings the daemon's
 * doorbell as fast as it can, mixes valid requests in and now and then sends a message on its
 * socket that no SOCKET record announced, reconnecting each time it is dropped, while a
 * well-behaved libsocknotify client on the same daemon registers sockets and must receive every
 * notification it should, exactly; a client that tries to shrink, grow or re-seal its ring
 * file; and a client that turns the doorbells it shares with the daemon into blocking ones,
 * fills them and takes what the daemon would read.  Each test ends with the daemon serving,
 * back to its descriptor baseline, and exiting 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "common/fdmsg.h"
#include "common/ring.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

static struct test_daemon D;
static int baseline;

static void start(void)
{
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}

/* ---- a raw ring client --------------------------------------------------------------- */

struct rclient {
        int fd;   /* the connection's socket */
        int file; /* the ring file */
        int bell_daemon, bell_client;
        uint8_t *map;
        struct sn_ring_header *hdr;
        struct sn_ring_tx sq;
        struct sn_ring_rx cq;
};

/*
 * Connects to path and asks for the rings.  Returns 0 with *rc set up; a negative errno when
 * the connection or the handshake failed, -EPROTO when the daemon answered anything but a
 * version 3 HELLO_REPLY with the rings and a ring file of the right size and layout.  Never
 * fails the running test: the scribbler thread calls it.
 */
static int rclient_open(const char *path, struct rclient *rc)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct snw_hello hello = { .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 3,
                                   .flags = SN_PROTO_HELLO_RING };
        struct pollfd p = { .events = POLLIN };
        struct snw_hello_reply rep;
        const struct sn_msg_desc *d;
        struct snw_header h;
        uint8_t buf[256];
        int fds[SN_PROTO_RING_NFDS];
        unsigned nfds = 0;
        struct stat st;
        ssize_t n;
        void *m;

        *rc = (struct rclient){ .fd = -1, .file = -1, .bell_daemon = -1, .bell_client = -1 };
        rc->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (rc->fd < 0)
                return -errno;
        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        if (connect(rc->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &hello);
        if (sn__fdmsg_send(rc->fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0, 0) < 0)
                return -EPIPE;
        p.fd = rc->fd;
        if (poll(&p, 1, test_timeout_ms(5000)) != 1)
                return -ETIMEDOUT;
        n = sn__fdmsg_recv(rc->fd, buf, sizeof(buf), fds, SN_PROTO_RING_NFDS, &nfds, 0);
        if (n <= 0)
                return n < 0 ? (int)n : -ECONNRESET;
        if (nfds == SN_PROTO_RING_NFDS) {
                rc->file = fds[SN_PROTO_RING_FD_FILE];
                rc->bell_daemon = fds[SN_PROTO_RING_FD_DAEMON];
                rc->bell_client = fds[SN_PROTO_RING_FD_CLIENT];
        } else {
                for (unsigned i = 0; i < nfds; i++)
                        close(fds[i]);
                return -EPROTO;
        }
        if (sn_msg_check(buf, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_HELLO_REPLY ||
            h.status != 0)
                return -EPROTO;
        snw_hello_reply_decode(sn_msg_body(buf), &rep);
        if (rep.version != 3 || rep.transport != SN_PROTO_TRANSPORT_RING)
                return -EPROTO;
        if (fstat(rc->file, &st) < 0 || st.st_size != SN_RING_FILE_SIZE)
                return -EPROTO;
        m = mmap(NULL, SN_RING_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, rc->file, 0);
        if (m == MAP_FAILED)
                return -errno;
        rc->map = m;
        rc->hdr = m;
        if (rc->hdr->magic != SN_RING_MAGIC || rc->hdr->layout != SN_RING_LAYOUT ||
            rc->hdr->sq_offset != SN_RING_HEADER_SIZE || rc->hdr->sq_size != SN_RING_SQ_SIZE ||
            rc->hdr->cq_offset != SN_RING_HEADER_SIZE + SN_RING_SQ_SIZE ||
            rc->hdr->cq_size != SN_RING_CQ_SIZE)
                return -EPROTO;
        rc->sq = (struct sn_ring_tx){ .data = rc->map + SN_RING_HEADER_SIZE,
                                      .size = SN_RING_SQ_SIZE,
                                      .tail = sn_ring_load(&rc->hdr->sq_tail),
                                      .ptail = &rc->hdr->sq_tail,
                                      .phead = &rc->hdr->sq_head };
        rc->cq = (struct sn_ring_rx){ .data = rc->map + SN_RING_HEADER_SIZE + SN_RING_SQ_SIZE,
                                      .size = SN_RING_CQ_SIZE,
                                      .head = sn_ring_load(&rc->hdr->cq_head),
                                      .phead = &rc->hdr->cq_head,
                                      .ptail = &rc->hdr->cq_tail };
        return 0;
}

static void rclient_close(struct rclient *rc)
{
        if (rc->map)
                munmap(rc->map, SN_RING_FILE_SIZE);
        if (rc->fd >= 0)
                close(rc->fd);
        if (rc->file >= 0)
                close(rc->file);
        if (rc->bell_daemon >= 0)
                close(rc->bell_daemon);
        if (rc->bell_client >= 0)
                close(rc->bell_client);
        *rc = (struct rclient){ .fd = -1, .file = -1, .bell_daemon = -1, .bell_client = -1 };
}

/* Rings the daemon's doorbell (one end of a datagram socket pair: any datagram will do). */
static void bell(int fd, uint64_t v)
{
        (void)!write(fd, &v, sizeof(v));
}

/* Empties the client's doorbell (the client's end of a datagram socket pair), without waiting
 * whatever its O_NONBLOCK says. */
static void bell_drain(int fd)
{
        char b[64];

        while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
                ;
}

/* Publishes the SQ and rings the daemon's doorbell if it sleeps, as the library does. */
static void rclient_publish(struct rclient *rc)
{
        sn_ring_tx_publish(&rc->sq);
        sn_ring_fence();
        if (sn_ring_claim_wake(&rc->hdr->daemon_sleeps))
                bell(rc->bell_daemon, 1);
}

/* Puts one request into the SQ and publishes it; returns sn_ring_put(). */
static int rclient_send(struct rclient *rc, const uint8_t *msg, size_t len)
{
        int r = sn_ring_put(&rc->sq, SN_RING_MSG, msg, (uint32_t)len);

        if (r == 0)
                rclient_publish(rc);
        return r;
}

/* Takes the next reply from the CQ (or, after a SOCKET record, from the socket) within the
 * time bound; returns its length, or fails the test. */
static size_t rclient_recv(struct rclient *rc, uint8_t *buf, size_t cap)
{
        long long until = now_ms() + test_timeout_ms(5000);

        for (;;) {
                struct pollfd p[2] = { { .fd = rc->fd, .events = POLLIN },
                                       { .fd = rc->bell_client, .events = POLLIN } };
                uint32_t len, kind;
                int r = sn_ring_get(&rc->cq, buf, (uint32_t)cap, &len, &kind);

                ck_assert_int_ge(r, 0);
                if (r == 1) {
                        sn_ring_rx_publish(&rc->cq);
                        sn_ring_fence();
                        if (sn_ring_claim_wake(&rc->hdr->daemon_blocked))
                                bell(rc->bell_daemon, 1);
                        if (kind == SN_RING_MSG)
                                return len;
                        return (size_t)raw_recv(rc->fd, buf, cap);
                }
                sn_ring_store(&rc->hdr->client_sleeps, 1);
                sn_ring_fence();
                if (sn_ring_rx_ready(&rc->cq))
                        continue;
                ck_assert_msg(now_ms() < until, "no reply in the completion ring");
                ck_assert_int_ge(poll(p, 2, 100), 0);
                if (p[1].revents & POLLIN)
                        bell_drain(rc->bell_client);
        }
}

/* STATUS through the rings is answered through them. */
static void rclient_status(struct rclient *rc, uint32_t id)
{
        uint8_t buf[64 * 1024];
        const struct sn_msg_desc *d;
        struct snw_header h;
        size_t n;

        sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
        ck_assert_int_eq(rclient_send(rc, buf, SN_HEADER_SIZE), 0);
        n = rclient_recv(rc, buf, sizeof(buf));
        ck_assert_int_eq(sn_msg_check(buf, n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_STATUS_REPLY);
        ck_assert_uint_eq(h.id, id);
        ck_assert_uint_eq(h.status, 0);
}

/* The daemon ended the connection within timeout_ms (scaled): its socket reads as closed, or
 * reset when what the client sent was never read. */
static bool dropped(int fd, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char c;
        ssize_t n;

        if (poll(&p, 1, test_timeout_ms(timeout_ms)) <= 0)
                return false;
        n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
        return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* A fresh socket client is served. */
static void others_served(void)
{
        int fd = raw_hello(D.path);

        status_works(fd, 7);
        close(fd);
}

/* The raw ring client works: without this, the attacks below would prove nothing. */
START_TEST(test_ring_client_works)
{
        struct rclient rc;

        start();
        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        for (uint32_t id = 2; id < 200; id++)
                rclient_status(&rc, id);
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* A message on the socket that no SOCKET record announced ends that connection only. */
START_TEST(test_unannounced_socket_message)
{
        struct rclient rc, other;
        uint8_t buf[SN_HEADER_SIZE];

        start();
        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        ck_assert_int_eq(rclient_open(D.path, &other), 0);
        rclient_status(&rc, 2);
        sn_msg_begin(buf, SN_MSG_STATUS, 3, 0, 0, 0, 0);
        raw_send(rc.fd, buf, sizeof(buf), NULL, 0);
        bell(rc.bell_daemon, 1);
        ck_assert(dropped(rc.fd, 5000));
        rclient_status(&other, 4);
        rclient_close(&rc);
        rclient_close(&other);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* The ring file cannot be shrunk, grown or given more seals; the daemon goes on. */
START_TEST(test_ring_file_sealed)
{
        struct rclient rc;
        int seals;

        start();
        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        seals = fcntl(rc.file, F_GET_SEALS);
        ck_assert_int_ge(seals, 0);
        ck_assert_int_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
                         F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
        errno = 0;
        ck_assert_int_eq(ftruncate(rc.file, 0), -1);
        ck_assert_int_eq(errno, EPERM);
        errno = 0;
        ck_assert_int_eq(ftruncate(rc.file, SN_RING_FILE_SIZE - 4096), -1);
        ck_assert_int_eq(errno, EPERM);
        errno = 0;
        ck_assert_int_eq(ftruncate(rc.file, SN_RING_FILE_SIZE * 2), -1);
        ck_assert_int_eq(errno, EPERM);
        errno = 0;
        ck_assert_int_eq(fallocate(rc.file, 0, 0, SN_RING_FILE_SIZE * 2), -1);
        ck_assert_int_eq(errno, EPERM);
        /* Punching a hole does not change the size: it only zeroes the client's own ring. */
        (void)fallocate(rc.file, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                        SN_RING_FILE_SIZE);
        /* A write seal would stop the daemon from mapping the file again after a re-exec. */
        errno = 0;
        ck_assert_int_eq(fcntl(rc.file, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
        ck_assert_int_eq(errno, EPERM);
        /* The client's view lost the header the hole punched: its ring is broken, the daemon
         * must survive what it then reads, and serve others. */
        bell(rc.bell_daemon, 1);
        {
                struct rclient other;

                ck_assert_int_eq(rclient_open(D.path, &other), 0);
                rclient_status(&other, 2);
                rclient_close(&other);
        }
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * The client shares its doorbells with the daemon: the daemon's is an eventfd, the same open
 * file on both sides, so the same O_NONBLOCK flag; the client's is its end of a datagram socket
 * pair.  A client that makes them blocking, never reads its own until the daemon's wake-ups
 * fill it, sends on it, brings the eventfd's count to its maximum (a write of 1 would then
 * wait) or takes the count the daemon would read, must not stop the daemon serving others.
 */
START_TEST(test_doorbell_full_and_blocking)
{
        struct rclient rc, other;
        uint8_t buf[SN_HEADER_SIZE];

        start();
        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        ck_assert_int_eq(fcntl(rc.bell_client, F_SETFL, 0), 0);
        ck_assert_int_eq(fcntl(rc.bell_daemon, F_SETFL, 0), 0);
        /* 0xfffffffffffffffe is the most an eventfd holds: a write of 1 would wait. */
        bell(rc.bell_daemon, 0xfffffffffffffffeull);
        /* A datagram on its own doorbell (refused); where that doorbell is an eventfd, as daemons
         * before the socket pair passed, its count at the maximum. */
        if (send(rc.bell_client, buf, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == ENOTSOCK)
                bell(rc.bell_client, 0xfffffffffffffffeull);
        /* Requests whose replies must wake the client, which announces that it sleeps. */
        for (uint32_t id = 2; id < 10; id++) {
                sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
                ck_assert_int_eq(sn_ring_put(&rc.sq, SN_RING_MSG, buf, sizeof(buf)), 0);
        }
        sn_ring_store(&rc.hdr->client_sleeps, 1);
        /* Published without the doorbell: this client's own write of 1 would wait now. */
        sn_ring_tx_publish(&rc.sq);
        /* The eventfd is full: the daemon learns of the requests from its own look at the
         * ring, or not at all; either way only this client's replies are at stake. */
        ck_assert_int_eq(rclient_open(D.path, &other), 0);
        for (uint32_t id = 2; id < 2000; id++) {
                /* Asleep again at every turn: every reply of the other's turn wakes it. */
                sn_ring_store(&rc.hdr->client_sleeps, 1);
                if (id % 8 == 0) {
                        sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
                        if (sn_ring_put(&rc.sq, SN_RING_MSG, buf, sizeof(buf)) == 0)
                                sn_ring_tx_publish(&rc.sq);
                }
                rclient_status(&other, id);
        }
        rclient_close(&other);
        others_served();
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

struct thief {
        int fd;
        volatile bool stop, done;
};

static void *steal_bells(void *arg)
{
        struct thief *t = arg;
        uint64_t v;

        while (!t->stop) {
                struct pollfd p = { .fd = t->fd, .events = POLLIN };

                if (poll(&p, 1, 0) == 1 && read(t->fd, &v, sizeof(v)) < 0 && errno != EINTR &&
                    errno != EAGAIN)
                        break;
        }
        t->done = true;
        return NULL;
}

/* Stops the thief: it may wait in read() when the daemon took the count first. */
static void thief_stop(struct thief *t, pthread_t th)
{
        t->stop = true;
        while (!t->done) {
                bell(t->fd, 1);
                sched_yield();
        }
        pthread_join(th, NULL);
}

START_TEST(test_doorbell_stolen)
{
        struct rclient rc, other;
        struct thief t;
        pthread_t th;

        start();
        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        ck_assert_int_eq(fcntl(rc.bell_daemon, F_SETFL, 0), 0);
        /* (A daemon that read its doorbell would then wait in read().)  A thread of the client
         * spins on the daemon's doorbell and takes the count as soon as
         * it is there: now and then between the daemon's epoll_wait() and its read(). */
        t = (struct thief){ .fd = rc.bell_daemon };
        ck_assert_int_eq(pthread_create(&th, NULL, steal_bells, &t), 0);
        for (int i = 0; i < 500; i++) {
                bell(rc.bell_daemon, 1);
                sched_yield();
        }
        ck_assert_int_eq(rclient_open(D.path, &other), 0);
        for (uint32_t id = 2; id < 50; id++)
                rclient_status(&other, id);
        rclient_close(&other);
        others_served();
        thief_stop(&t, th);
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* ---- the scribbler ------------------------------------------------------------------- */

struct scribbler {
        volatile bool stop;
        uint64_t rng;
        unsigned connections, drops, replies, iterations;
        char error[256];
};

static uint64_t rnd(struct scribbler *s)
{
        s->rng ^= s->rng << 13;
        s->rng ^= s->rng >> 7;
        s->rng ^= s->rng << 17;
        return s->rng;
}

/* A reply the scribbler may get (from the CQ or its socket): a well-formed reply that carries
 * no notification, since it registered no socket and posted nothing. */
static void scribbler_check_reply(struct scribbler *s, const uint8_t *buf, size_t n,
                                  unsigned nfds)
{
        const struct sn_msg_desc *d;
        struct snw_header h;

        s->replies++;
        if (nfds)
                snprintf(s->error, sizeof(s->error), "a reply carried %u descriptors", nfds);
        if (sn_msg_check(buf, n, &h, &d) < 0)
                return; /* bytes it wrote into its own CQ itself */
        if (h.type == SN_MSG_PROCESS_REPLY && h.count2 > 0)
                snprintf(s->error, sizeof(s->error), "a PROCESS_REPLY gave it %u entries",
                         h.count2);
}

/* One valid request: STATUS, or a PROCESS on a port it does not hold. */
static void scribbler_request(struct scribbler *s, struct rclient *rc)
{
        uint8_t buf[128];
        size_t len = SN_HEADER_SIZE;
        uint32_t id = (uint32_t)rnd(s);

        if (rnd(s) & 1) {
                sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
        } else {
                struct snw_process body = { .port = (uint32_t)rnd(s) % 8, .timeout_ms = 0,
                                            .max_entries = 16, .thread = 1 };

                len = (size_t)(snw_process_encode(
                                       sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0), &body) -
                               buf);
        }
        if (sn_ring_put(&rc->sq, SN_RING_MSG, buf, (uint32_t)len) == -EPROTO)
                rc->sq.tail = sn_ring_load(rc->sq.phead); /* it broke its own head */
        rclient_publish(rc);
}

static void scribbler_drain_cq(struct scribbler *s, struct rclient *rc)
{
        static uint8_t buf[SN_RING_CQ_SIZE];

        for (int i = 0; i < 16; i++) {
                uint32_t len, kind;
                int r = sn_ring_get(&rc->cq, buf, sizeof(buf), &len, &kind);

                if (r < 0) {
                        /* Its own doing: start again from where the daemon's tail is. */
                        rc->cq.head = sn_ring_load(rc->cq.ptail) & ~7u;
                        rc->cq.avail = 0;
                        break;
                }
                if (r == 0)
                        break;
                if (kind == SN_RING_MSG)
                        scribbler_check_reply(s, buf, len, 0);
        }
        sn_ring_rx_publish(&rc->cq);
        sn_ring_fence();
        if (sn_ring_claim_wake(&rc->hdr->daemon_blocked))
                bell(rc->bell_daemon, 1);
}

/* Reads what came on the socket; false once the daemon dropped the connection. */
static bool scribbler_socket(struct scribbler *s, struct rclient *rc)
{
        static uint8_t buf[256 * 1024];
        int fds[SN_PROTO_MAX_FDS];

        for (;;) {
                unsigned nfds = 0;
                ssize_t n = sn__fdmsg_recv(rc->fd, buf, sizeof(buf), fds, SN_PROTO_MAX_FDS,
                                           &nfds, MSG_DONTWAIT);

                for (unsigned i = 0; i < nfds; i++)
                        close(fds[i]);
                if (n == -EAGAIN)
                        return true;
                if (n <= 0)
                        return false;
                scribbler_check_reply(s, buf, (size_t)n, nfds);
        }
}

/*
 * One hostile act.  Connections take turns in three manners, so that the daemon also meets
 * rings that stay plausible for a while: 0 anything, 1 mostly valid requests and replies taken
 * (one act in 64 is anything), 2 the header's positions and flags, doorbells and requests.
 */
static void scribble(struct scribbler *s, struct rclient *rc, unsigned manner)
{
        static const unsigned header_acts[] = { 6, 9, 12, 14, 15 };
        uint64_t r = rnd(s);
        uint32_t *words = (uint32_t *)rc->map;
        unsigned act = (unsigned)(r % 16);

        if (manner == 1 && r % 64 != 0)
                act = (r >> 8) & 1 ? 9 : 12;
        else if (manner == 2)
                act = header_acts[(r >> 4) % 5];
        switch (act) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4:
        case 5: {
                /* Bytes over the SQ (0-3) or the CQ (4-5). */
                uint32_t base = r % 16 < 4 ? SN_RING_HEADER_SIZE
                                           : SN_RING_HEADER_SIZE + SN_RING_SQ_SIZE;
                uint32_t size = r % 16 < 4 ? SN_RING_SQ_SIZE : SN_RING_CQ_SIZE;
                uint32_t off = (uint32_t)(r >> 8) % size, n = 1 + (uint32_t)(r >> 40) % 64;

                for (uint32_t i = 0; i < n && off + i < size; i++)
                        rc->map[base + off + i] = (uint8_t)rnd(s);
                break;
        }
        case 6:
        case 7: {
                /* A position or flag of the header: near its value, or anything. */
                static const size_t fields[] = {
                        offsetof(struct sn_ring_header, sq_tail),
                        offsetof(struct sn_ring_header, sq_head),
                        offsetof(struct sn_ring_header, daemon_sleeps),
                        offsetof(struct sn_ring_header, cq_tail),
                        offsetof(struct sn_ring_header, cq_head),
                        offsetof(struct sn_ring_header, client_sleeps),
                        offsetof(struct sn_ring_header, daemon_blocked),
                };
                uint32_t *w = (uint32_t *)(rc->map + fields[(r >> 8) % 7]);
                uint32_t v = (r >> 16) & 1 ? (uint32_t)(r >> 32)
                                           : *w + (uint32_t)((int32_t)((r >> 20) % 65) - 32) * 8;

                __atomic_store_n(w, v, __ATOMIC_RELEASE);
                break;
        }
        case 8:
                /* The layout block the daemon wrote. */
                words[(r >> 8) % 6] = (uint32_t)(r >> 32);
                break;
        case 9:
        case 10:
        case 11:
                scribbler_request(s, rc);
                break;
        case 12:
                scribbler_drain_cq(s, rc);
                break;
        case 13:
                if ((r >> 8) % 64 == 0) {
                        /* A message the SQ did not announce: the daemon drops the connection. */
                        uint8_t buf[SN_HEADER_SIZE];

                        sn_msg_begin(buf, SN_MSG_STATUS, 1, 0, 0, 0, 0);
                        (void)sn__fdmsg_send(rc->fd, buf, sizeof(buf), NULL, 0, MSG_DONTWAIT);
                } else if ((r >> 8) % 4 == 1) {
                        /* An announced one, as a client with descriptors does. */
                        uint8_t buf[SN_HEADER_SIZE];

                        if (sn_ring_put(&rc->sq, SN_RING_SOCKET, NULL, 0) == 0) {
                                rclient_publish(rc);
                                sn_msg_begin(buf, SN_MSG_STATUS, 1, 0, 0, 0, 0);
                                (void)sn__fdmsg_send(rc->fd, buf, sizeof(buf), NULL, 0,
                                                     MSG_DONTWAIT);
                        }
                }
                break;
        case 14:
                /* The daemon's doorbell at the eventfd's maximum or emptied, a datagram sent on
                 * the client's, or the client's emptied. */
                switch ((r >> 8) % 4) {
                case 0:
                        bell(rc->bell_daemon, 0xfffffffffffffffeull);
                        break;
                case 1: {
                        uint64_t v;

                        (void)!read(rc->bell_daemon, &v, sizeof(v));
                        break;
                }
                case 2:
                        (void)!send(rc->bell_client, &r, sizeof(r), MSG_DONTWAIT | MSG_NOSIGNAL);
                        break;
                default:
                        bell_drain(rc->bell_client);
                        break;
                }
                break;
        case 15:
                /* The client announces it sleeps. */
                sn_ring_store(&rc->hdr->client_sleeps, 1);
                break;
        }
}

static void *scribbler_run(void *arg)
{
        struct scribbler *s = arg;
        struct rclient rc = { .fd = -1, .file = -1, .bell_daemon = -1, .bell_client = -1 };

        while (!s->stop && !s->error[0]) {
                if (rc.fd < 0) {
                        int err = rclient_open(D.path, &rc);

                        if (err) {
                                snprintf(s->error, sizeof(s->error),
                                         "connection %u: no rings (%s)", s->connections + 1,
                                         strerror(-err));
                                break;
                        }
                        s->connections++;
                }
                for (int i = 0; i < 16; i++)
                        scribble(s, &rc, s->connections % 3);
                s->iterations += 16;
                /* The daemon's doorbell, as fast as it goes. */
                bell(rc.bell_daemon, 1);
                if (!scribbler_socket(s, &rc)) {
                        s->drops++;
                        rclient_close(&rc);
                }
        }
        rclient_close(&rc);
        return NULL;
}

#define GOOD_SOCKETS 16
#define GOOD_ROUNDS 300

/*
 * The good client: GOOD_SOCKETS sockets registered one-shot for input; each round writes to
 * a chosen set of them, and every one of those, and nothing else, must be notified, once,
 * with its key; each is read and re-enabled.
 */
static void good_client(unsigned rounds)
{
        int ours[GOOD_SOCKETS], peers[GOOD_SOCKETS];
        sn_registration_t regs[GOOD_SOCKETS];
        sn_conn_t *conn;
        sn_port_t *port;

        ck_assert_int_eq(sn_conn_open(D.path, &conn), 0);
        ck_assert_int_eq(sn_port_create(conn, 0, &port), 0);
        for (int i = 0; i < GOOD_SOCKETS; i++) {
                int sv[2];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
                ours[i] = sv[0];
                peers[i] = sv[1];
                regs[i] = (sn_registration_t){ .fd = ours[i], .filter = SN_REGISTER_EVENT_IN,
                                               .op = SN_OP_ENABLE,
                                               .trigger = SN_TRIGGER_ONESHOT | SN_TRIGGER_LEVEL,
                                               .key = 1000 + (uint64_t)i };
        }
        ck_assert_int_eq(sn_port_process(port, regs, GOOD_SOCKETS, NULL, 0, 0), 0);
        for (int i = 0; i < GOOD_SOCKETS; i++)
                ck_assert_int_eq(regs[i].result, 0);

        for (unsigned round = 0; round < rounds; round++) {
                bool want[GOOD_SOCKETS] = { false }, seen[GOOD_SOCKETS] = { false };
                sn_registration_t rearm[GOOD_SOCKETS];
                unsigned nwant = 0, nseen = 0, nrearm = 0;
                long long until = now_ms() + test_timeout_ms(10000);

                for (int i = 0; i < GOOD_SOCKETS; i++) {
                        if ((round * 7 + (unsigned)i * 3) % 5 < 2 || (unsigned)i == round % 16) {
                                want[i] = true;
                                nwant++;
                                ck_assert_int_eq(write(peers[i], "x", 1), 1);
                        }
                }
                while (nseen < nwant) {
                        sn_entry_t e[GOOD_SOCKETS];
                        int n = sn_port_dequeue(port, e, GOOD_SOCKETS, 1000);

                        ck_assert_msg(n > 0 || n == -ETIMEDOUT, "dequeue: %s", sn_strerror(n));
                        ck_assert_msg(now_ms() < until, "round %u: %u of %u notifications",
                                      round, nseen, nwant);
                        for (int k = 0; k < n; k++) {
                                uint64_t i = e[k].key - 1000;
                                char c;

                                ck_assert_uint_lt(i, GOOD_SOCKETS);
                                ck_assert_msg(want[i] && !seen[i],
                                              "round %u: socket %u notified unasked", round,
                                              (unsigned)i);
                                ck_assert_uint_eq(e[k].kind, SN_ENTRY_SOCKET);
                                ck_assert(e[k].events & SN_EVENT_IN);
                                seen[i] = true;
                                nseen++;
                                ck_assert_int_eq(read(ours[i], &c, 1), 1);
                                rearm[nrearm] = regs[i];
                                rearm[nrearm++].result = -1;
                        }
                }
                ck_assert_int_eq(sn_port_process(port, rearm, nrearm, NULL, 0, 0), 0);
                for (unsigned k = 0; k < nrearm; k++)
                        ck_assert_int_eq(rearm[k].result, 0);
        }
        /* Nothing more is queued. */
        {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(port, &e, 1, 0), -ETIMEDOUT);
        }
        sn_port_close(port);
        sn_conn_close(conn);
        for (int i = 0; i < GOOD_SOCKETS; i++) {
                close(ours[i]);
                close(peers[i]);
        }
}

/* Mappings of a ring file in this process (/proc/self/maps names the daemon's memfd). */
static int ring_mappings(void)
{
        FILE *f = fopen("/proc/self/maps", "r");
        char line[512];
        int n = 0;

        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                n += strstr(line, "socknotify-ring") != NULL;
        fclose(f);
        return n;
}

START_TEST(test_scribbler)
{
        struct scribbler s = { .rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)now_ms() };
        pthread_t th;

        start();
        /* The good client takes the rings, unless told to keep to the socket. */
        {
                const char *no_shm = getenv("SOCKNOTIFY_NO_SHM");
                bool rings = !(no_shm && *no_shm && strcmp(no_shm, "0"));
                int before = ring_mappings();
                sn_conn_t *conn;

                ck_assert_int_eq(sn_conn_open(D.path, &conn), 0);
                ck_assert_int_eq(ring_mappings() - before, rings ? 1 : 0);
                sn_conn_close(conn);
                fprintf(stderr, "test_scribbler: the good client uses the %s\n",
                        rings ? "rings" : "socket");
        }
        fprintf(stderr, "test_scribbler: seed %#llx\n", (unsigned long long)s.rng);
        ck_assert_int_eq(pthread_create(&th, NULL, scribbler_run, &s), 0);
        good_client(GOOD_ROUNDS);
        s.stop = true;
        pthread_join(th, NULL);
        fprintf(stderr, "test_scribbler: %u scribbles over %u connections, %u dropped, "
                        "%u replies\n", s.iterations, s.connections, s.drops, s.replies);
        ck_assert_msg(!s.error[0], "scribbler: %s", s.error);
        ck_assert_uint_ge(s.connections, 1);
        ck_assert_uint_ge(s.drops, 1);
        test_daemon_finish(&D, baseline);
}
END_TEST


/* ---- a client that rings for nothing ------------------------------------------------------ */

struct flooder {
        int bell;
        volatile bool stop;
        unsigned long long sent;
};

static void *flood(void *arg)
{
        struct flooder *f = arg;
        uint64_t v = 1;

        while (!f->stop)
                if (send(f->bell, &v, sizeof(v), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
                        f->sent++;
        return NULL;
}

/* This user's "doorbell_mutes" in STATUS, asked by a well-behaved client. */
static long long mutes_of_user(sn_conn_t *conn)
{
        char *text = NULL;
        json_t *doc, *v;
        long long n;

        ck_assert_int_eq(sn_conn_status(conn, &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        v = json_object_get(json_object_get(doc, "user"), "doorbell_mutes");
        ck_assert_msg(json_is_integer(v), "STATUS has no user.doorbell_mutes");
        n = json_integer_value(v);
        json_decref(doc);
        return n;
}

/* Starts a daemon that mutes the doorbells of a user past 200 a second that find no work, and
 * returns a well-behaved client of it (for STATUS and the list of clients). */
static sn_conn_t *start_bell_limited(void)
{
        static const char *const args[] = { "--max-doorbells-per-user=200", NULL };
        sn_conn_t *conn;

        test_daemon_start(&D, args);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &conn), 0);
        return conn;
}

/* Rings bell from a thread as fast as it can until this user's mutes have grown by at least
 * more (within the scaled time bound), then stops; fails the test, naming what floods, when
 * they never do. */
static void flood_until_muted(sn_conn_t *conn, int bell, long long more, const char *what)
{
        long long until = now_ms() + test_timeout_ms(5000), m0 = mutes_of_user(conn);
        struct flooder f = { .bell = bell };
        pthread_t th;

        ck_assert_int_eq(pthread_create(&th, NULL, flood, &f), 0);
        while (mutes_of_user(conn) < m0 + more && now_ms() < until)
                poll(NULL, 0, 20);
        f.stop = true;
        pthread_join(th, NULL);
        ck_assert_msg(mutes_of_user(conn) >= m0 + more, "%s's flood was never muted (%llu "
                      "doorbells)", what, f.sent);
}

/*
 * A client rings the daemon's doorbell as fast as it can with nothing in its SQ.  Each ring
 * would cost the daemon a wake-up; past its user's max-doorbells-per-user a second the
 * doorbell is muted for a while, so the daemon spends little CPU on it (at most half of one
 * core here, where it would spend one whole core), the flooder's own requests are still
 * answered, and another client is served throughout.
 */
START_TEST(test_doorbell_flood)
{
        struct flooder f = { .bell = -1 };
        long long t0, t1, c0, c1, m0, m;
        long long until = now_ms() + test_timeout_ms(20000);
        long hz = sysconf(_SC_CLK_TCK);
        struct rclient rc;
        sn_conn_t *conn;
        pthread_t th;

        conn = start_bell_limited();
        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        rclient_status(&rc, 1);
        ck_assert_int_eq(mutes_of_user(conn), 0);
        f.bell = rc.bell_daemon;
        ck_assert_int_eq(pthread_create(&th, NULL, flood, &f), 0);
        /* The first mutes: the flood is noticed. */
        while ((m0 = mutes_of_user(conn)) < 2) {
                ck_assert_msg(now_ms() < until, "the flood was never muted (%llu doorbells)",
                              f.sent);
                poll(NULL, 0, 20);
        }
        /* Then, over the next ten mutes (half a second at least), what it costs the daemon. */
        t0 = now_ms();
        c0 = test_daemon_cpu_ticks(&D);
        while ((m = mutes_of_user(conn)) < m0 + 10) {
                ck_assert_msg(now_ms() < until, "the flood stopped being muted (%lld mutes)", m);
                others_served();
                poll(NULL, 0, 50);
        }
        t1 = now_ms();
        c1 = test_daemon_cpu_ticks(&D);
        f.stop = true;
        pthread_join(th, NULL);
        fprintf(stderr, "test_doorbell_flood: %llu doorbells, %lld mutes; the daemon used "
                        "%lld ms of CPU in %lld ms\n",
                f.sent, m, (c1 - c0) * 1000 / hz, t1 - t0);
        if (!getenv("SN_TEST_DAEMON_WRAPPER"))
                ck_assert_msg((c1 - c0) * 1000 / hz * 2 < t1 - t0,
                              "the daemon spent %lld ms of CPU in %lld ms on the flood",
                              (c1 - c0) * 1000 / hz, t1 - t0);
        /* The flooder is still served (once its mute ends), and so is everybody else. */
        rclient_status(&rc, 2);
        others_served();
        sn_conn_close(conn);
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * The same flood from a client whose ring waits for a socket message: it announced one (a
 * SOCKET record) and never sends it.  Each doorbell finds the daemon still waiting, which is
 * no work either: the doorbell is muted as the one above.  Before, a doorbell that found the
 * ring stalled (or replies waiting for room in the CQ) was never counted, so this client kept
 * the daemon waking up for nothing as fast as it could ring.
 */
START_TEST(test_doorbell_flood_stalled)
{
        sn_conn_t *conn = start_bell_limited();
        struct rclient rc;

        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        rclient_status(&rc, 1);
        ck_assert_int_eq(sn_ring_put(&rc.sq, SN_RING_SOCKET, NULL, 0), 0);
        rclient_publish(&rc);
        flood_until_muted(conn, rc.bell_daemon, 2, "a stalled ring");
        others_served();
        /* The announced message comes at last: the stall ends and the client is served. */
        {
                uint8_t buf[SN_HEADER_SIZE];

                sn_msg_begin(buf, SN_MSG_STATUS, 2, 0, 0, 0, 0);
                raw_send(rc.fd, buf, sizeof(buf), NULL, 0);
                ck_assert_uint_gt(rclient_recv(&rc, (uint8_t[64 * 1024]){ 0 }, 64 * 1024), 0);
        }
        rclient_status(&rc, 3);
        sn_conn_close(conn);
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * The flood from a client that leaves its completion ring full: its replies wait in the
 * daemon for room that never comes, and each doorbell finds nothing to do.  Before, a doorbell
 * that found replies waiting was never counted.  Once the client takes its replies, every one
 * of them comes, in order.
 */
START_TEST(test_doorbell_flood_cq_full)
{
        enum { NREQ = 200 };
        long long until = now_ms() + test_timeout_ms(5000);
        sn_conn_t *conn = start_bell_limited();
        static uint8_t buf[64 * 1024];
        struct rclient rc;
        uint32_t sent = 0;

        ck_assert_int_eq(rclient_open(D.path, &rc), 0);
        /* STATUS replies (a few KB each) until the CQ is full and the daemon keeps the rest. */
        while (sent < NREQ) {
                sn_msg_begin(buf, SN_MSG_STATUS, 100 + sent, 0, 0, 0, 0);
                if (rclient_send(&rc, buf, SN_HEADER_SIZE) == 0) {
                        sent++;
                        continue;
                }
                ck_assert_msg(now_ms() < until, "the SQ never had room");
                poll(NULL, 0, 5);
        }
        while (sn_ring_load(&rc.hdr->sq_head) != rc.sq.tail) {
                ck_assert_msg(now_ms() < until, "the daemon never took the requests");
                poll(NULL, 0, 5);
        }
        ck_assert_uint_eq(sn_ring_load(&rc.hdr->daemon_blocked), 1);
        flood_until_muted(conn, rc.bell_daemon, 2, "a full CQ");
        others_served();
        for (uint32_t i = 0; i < NREQ; i++) {
                const struct sn_msg_desc *d;
                struct snw_header h;
                size_t n = rclient_recv(&rc, buf, sizeof(buf));

                ck_assert_int_eq(sn_msg_check(buf, n, &h, &d), 0);
                ck_assert_uint_eq(h.type, SN_MSG_STATUS_REPLY);
                ck_assert_uint_eq(h.id, 100 + i);
        }
        rclient_status(&rc, 1);
        sn_conn_close(conn);
        rclient_close(&rc);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* The doorbell_mutes of the daemon's connections, oldest first (by connection id), from the
 * operator's list of clients; returns how many (at most max). */
static int connection_mutes(sn_conn_t *conn, long long *mutes, int max)
{
        long long ids[64];
        json_t *doc, *items, *it;
        char *text = NULL;
        size_t i;
        int n = 0;

        ck_assert_int_le(max, 64);
        ck_assert_int_eq(sn_conn_control(conn, "{\"verb\":\"clients\"}", &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        items = json_object_get(doc, "items");
        ck_assert(json_is_array(items));
        json_array_foreach(items, i, it) {
                json_t *v = json_object_get(it, "doorbell_mutes");
                long long id = json_integer_value(json_object_get(it, "id"));
                int k;

                ck_assert_msg(json_is_integer(v), "clients has no doorbell_mutes");
                ck_assert_int_lt(n, max);
                for (k = n; k > 0 && ids[k - 1] > id; k--) {
                        ids[k] = ids[k - 1];
                        mutes[k] = mutes[k - 1];
                }
                ids[k] = id;
                mutes[k] = json_integer_value(v);
                n++;
        }
        json_decref(doc);
        return n;
}

/*
 * Another connection of the same user that rings for nothing now and then (20 times a second,
 * as a doorbell racing the daemon's announcement might, only more often) is not muted while
 * flooders keep their user's bucket empty (six of them: while one is muted, the others ring):
 * muting needs the connection's own 64 doorbells for nothing in its second.  Before, it was
 * muted with them, as the bucket is shared.
 */
START_TEST(test_doorbell_flood_spares_others)
{
        enum { NFLOOD = 6 };
        struct flooder f[NFLOOD];
        long long until = now_ms() + test_timeout_ms(10000), m0;
        struct rclient flooder[NFLOOD], quiet;
        unsigned long long sent = 0;
        long long mutes[2 + NFLOOD];
        pthread_t th[NFLOOD];
        sn_conn_t *conn;
        int rings = 0, nconn, nmuted = 0;

        conn = start_bell_limited();
        ck_assert_int_eq(rclient_open(D.path, &quiet), 0); /* before the flooders */
        rclient_status(&quiet, 1);
        m0 = mutes_of_user(conn);
        for (int i = 0; i < NFLOOD; i++) {
                ck_assert_int_eq(rclient_open(D.path, &flooder[i]), 0);
                f[i] = (struct flooder){ .bell = flooder[i].bell_daemon };
                ck_assert_int_eq(pthread_create(&th[i], NULL, flood, &f[i]), 0);
        }
        /* Two seconds of the flood at least, and some of its mutes, with the quiet client's
         * doorbells for nothing in between. */
        for (long long t0 = now_ms(); now_ms() - t0 < 2000 || mutes_of_user(conn) < m0 + 4;) {
                ck_assert_msg(now_ms() < until, "the flood was never muted");
                bell(quiet.bell_daemon, 1);
                rings++;
                poll(NULL, 0, 50);
        }
        for (int i = 0; i < NFLOOD; i++) {
                f[i].stop = true;
                pthread_join(th[i], NULL);
                sent += f[i].sent;
        }
        nconn = connection_mutes(conn, mutes, 2 + NFLOOD);
        for (int i = 0; i < nconn; i++)
                nmuted += mutes[i] > 0;
        fprintf(stderr, "test_doorbell_flood_spares_others: %llu doorbells of %d flooders, %d of "
                        "the quiet client, %d connection(s) muted\n",
                sent, NFLOOD, rings, nmuted);
        /* Only flooders were muted: never the two oldest connections, the well-behaved client
         * and the quiet one. */
        ck_assert_int_eq(nconn, 2 + NFLOOD);
        ck_assert_int_eq(mutes[0], 0);
        ck_assert_int_eq(mutes[1], 0);
        ck_assert_int_ge(nmuted, 1);
        rclient_status(&quiet, 2);
        for (int i = 0; i < NFLOOD; i++) {
                rclient_status(&flooder[i], 3);
                rclient_close(&flooder[i]);
        }
        sn_conn_close(conn);
        rclient_close(&quiet);
        test_daemon_finish(&D, baseline);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("ring-attack");
        TCase *tc = tcase_create("ring-attack");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_ring_client_works);
        tcase_add_test(tc, test_unannounced_socket_message);
        tcase_add_test(tc, test_ring_file_sealed);
        tcase_add_test(tc, test_doorbell_full_and_blocking);
        tcase_add_test(tc, test_doorbell_stolen);
        tcase_add_test(tc, test_doorbell_flood);
        tcase_add_test(tc, test_doorbell_flood_stalled);
        tcase_add_test(tc, test_doorbell_flood_cq_full);
        tcase_add_test(tc, test_doorbell_flood_spares_others);
        tcase_add_test(tc, test_scribbler);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-hostile-rings.c - the library checks the ring file a daemon passes as it checks any
 * input: its layout, and every position the daemon wrote into it, when it attaches the rings
 * and at each batch afterwards.
 *
 * socknotifyd cannot be made to pass a hostile ring file, so here, as in test-hostile-replies,
 * a fake peer plays the daemon's side: a forked child listening on a real SOCK_SEQPACKET
 * socket answers HELLO with protocol version 3 and the rings, passing a real sealed memfd and
 * two real datagram doorbells (SCM_RIGHTS), and serves PORT_CREATE through the rings with
 * common/ring.h's verbs.  It is the only way to test the library's checks of what a daemon
 * writes.
 *
 * The ring file's last ring ends the file, so a record header read or written at the ring's
 * last 4 bytes reaches past the end of the library's mapping.  Before it connects, the test
 * leaves a hole of exactly the file's size in its address space with a page of its own right
 * after it, where the kernel puts the library's mapping (the highest hole that fits: holes
 * above that would fit are filled first, and a smaller one above takes other mappings made
 * meanwhile); where the library attaches, the test looks whether it did and says so if not.
 * That page is a canary (filled, compared) where the library would write, and PROT_NONE (a
 * read faults: SIGSEGV fails the case) where it would read.  Each case checks
 * that the library refuses: sn_conn_open() fails with -EPROTO when the positions it would start
 * from are impossible; a record or a tail that is impossible later loses the connection (the
 * call and every later one fail with -ECONNRESET, as for any reply that breaks the protocol).
 * Nothing past the mapping is touched, and the process's descriptors and mappings are back to
 * what they were.  One valid ring file, laid out the same way, checks the fake peer and the
 * placement of the mapping.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fdmsg.h"
#include "common/ring.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"

#define RING_NAME "hostile-ring"
#define MAX_FILLERS 64

enum scenario {
        VALID,            /* a valid file with the SQ last: PORT_CREATE through the rings */
        SQ_TAIL_UNALIGNED, /* SQ last, sq_tail = sq_head = sq_size - 4: a put would write past */
        CQ_HEAD_UNALIGNED, /* CQ last, cq_head = cq_size - 4, 8 bytes published: a get reads past */
        SQ_TAIL_ODD,      /* sq_tail = sq_head = 4, in the middle of the SQ */
        CQ_HEAD_ODD,      /* cq_head = cq_tail = 12 */
        SQ_HEAD_AHEAD,    /* sq_head 8 bytes ahead of sq_tail */
        SQ_HEAD_BEHIND,   /* sq_head more than the SQ's size behind sq_tail */
        CQ_TAIL_FAR,      /* cq_tail a ring and 8 bytes ahead of cq_head */
        CQ_TAIL_BEHIND,   /* cq_tail 8 bytes behind cq_head */
        LATE_RECORD_PAST, /* valid at attach (CQ at its last 8 bytes); the reply's record
                           * then runs past the end of the CQ */
        LATE_TAIL_ODD,    /* valid at attach; the reply is published with an unaligned tail */
        NSCENARIOS,
};

static const char *const names[] = { "valid",          "sq-tail-unaligned", "cq-head-unaligned",
                                     "sq-tail-odd",    "cq-head-odd",       "sq-head-ahead",
                                     "sq-head-behind", "cq-tail-far",       "cq-tail-behind",
                                     "late-record-past", "late-tail-odd" };

/* Refused when the library attaches the rings (the others attach). */
static bool refused_at_attach(enum scenario sc)
{
        return sc != VALID && sc != LATE_RECORD_PAST && sc != LATE_TAIL_ODD;
}

/* Whether the SQ is the file's last ring (else the CQ is). */
static bool sq_last(enum scenario sc)
{
        return sc == VALID || sc == SQ_TAIL_UNALIGNED || sc == SQ_TAIL_ODD ||
               sc == SQ_HEAD_AHEAD || sc == SQ_HEAD_BEHIND;
}

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        int n = 0;

        ck_assert_ptr_nonnull(d);
        while ((e = readdir(d)))
                n += e->d_name[0] != '.';
        closedir(d);
        return n - 1; /* the directory's own */
}

/* Where the ring file is mapped in this process: 0 when it is not. */
static uintptr_t ring_mapping(uintptr_t *ret_end)
{
        FILE *f = fopen("/proc/self/maps", "re");
        char line[512];
        uintptr_t start = 0;

        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f)) {
                unsigned long s, e;

                if (strstr(line, "memfd:" RING_NAME) && sscanf(line, "%lx-%lx", &s, &e) == 2) {
                        start = s;
                        *ret_end = e;
                        break;
                }
        }
        fclose(f);
        return start;
}

static void put_header(uint8_t *map, enum scenario sc)
{
        struct sn_ring_header *h = (struct sn_ring_header *)map;
        uint32_t first = SN_RING_HEADER_SIZE;

        h->magic = SN_RING_MAGIC;
        h->layout = SN_RING_LAYOUT;
        h->sq_size = SN_RING_SQ_SIZE;
        h->cq_size = SN_RING_CQ_SIZE;
        h->sq_offset = sq_last(sc) ? first + SN_RING_CQ_SIZE : first;
        h->cq_offset = sq_last(sc) ? first : first + SN_RING_SQ_SIZE;
        switch (sc) {
        case SQ_TAIL_UNALIGNED:
                h->sq_tail = h->sq_head = SN_RING_SQ_SIZE - 4;
                break;
        case CQ_HEAD_UNALIGNED:
                h->cq_head = SN_RING_CQ_SIZE - 4;
                h->cq_tail = SN_RING_CQ_SIZE - 4 + 8;
                break;
        case SQ_TAIL_ODD:
                h->sq_tail = h->sq_head = 4;
                break;
        case CQ_HEAD_ODD:
                h->cq_head = h->cq_tail = 12;
                break;
        case SQ_HEAD_AHEAD:
                h->sq_head = 8;
                break;
        case SQ_HEAD_BEHIND:
                h->sq_tail = SN_RING_SQ_SIZE + 8;
                break;
        case CQ_TAIL_FAR:
                h->cq_tail = SN_RING_CQ_SIZE + 8;
                break;
        case CQ_TAIL_BEHIND:
                h->cq_head = 16;
                h->cq_tail = 8;
                break;
        case LATE_RECORD_PAST:
        case LATE_TAIL_ODD:
                h->cq_head = h->cq_tail = SN_RING_CQ_SIZE - 8;
                break;
        default:
                break;
        }
}

/* The answer to one request taken from the SQ, into the CQ (published by the caller). */
static int answer(enum scenario sc, struct sn_ring_tx *cq, const uint8_t *in, uint32_t len)
{
        uint8_t out[256];
        struct snw_header h;
        const struct sn_msg_desc *d;

        if (sn_msg_check(in, len, &h, &d) < 0)
                return -1;
        if (h.type == SN_MSG_PORT_CREATE && sc == LATE_RECORD_PAST) {
                /* A record of 64 bytes at the CQ's last 8: past the ring's end. */
                uint32_t rec[2] = { 64, SN_RING_MSG };

                memcpy(cq->data + (cq->tail & (cq->size - 1)), rec, sizeof(rec));
                cq->tail += SN_RING_RECORD_HEADER + 64;
                return 0;
        }
        if (h.type == SN_MSG_PORT_CREATE) {
                struct snw_port_create_reply pr = { .port = 7, .concurrency = 1 };

                snw_port_create_reply_encode(sn_msg_begin(out, SN_MSG_PORT_CREATE_REPLY, h.id,
                                                          0, 0, 0, 0),
                                             &pr);
                if (sn_ring_put(cq, SN_RING_MSG, out,
                                (uint32_t)sn_msg_size(SN_MSG_PORT_CREATE_REPLY, 0, 0)) < 0)
                        return -1;
                if (sc == LATE_TAIL_ODD)
                        cq->tail -= 4;
                return 0;
        }
        sn_msg_begin(out, SN_MSG_ERROR, h.id, EPROTO, 0, 0, 0);
        return sn_ring_put(cq, SN_RING_MSG, out, (uint32_t)sn_msg_size(SN_MSG_ERROR, 0, 0)) < 0
                       ? -1
                       : 0;
}

/* The fake daemon (in the child: no Check assertions, an exit status instead).  In a scenario
 * refused at attach it only watches: once the library publishes anything into the SQ (which a
 * refusing library never does) it closes the connection, so that the library's call ends. */
static int fake_daemon(int lfd, enum scenario sc)
{
        static uint8_t in[SN_RING_SQ_SIZE];
        struct sn_ring_header *h;
        struct sn_ring_rx sq;
        struct sn_ring_tx cq;
        struct snw_header hh;
        const struct sn_msg_desc *d;
        uint8_t out[256];
        uint32_t first_tail;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), file, dbell[2], cbell[2], fds[3];
        uint8_t *map;
        ssize_t n;

        if (c < 0)
                return 10;
        n = recv(c, in, sizeof(in), 0);
        if (n <= 0 || sn_msg_check(in, (size_t)n, &hh, &d) < 0 || hh.type != SN_MSG_HELLO)
                return 11;
        file = memfd_create(RING_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (file < 0 || ftruncate(file, SN_RING_FILE_SIZE) < 0 ||
            fcntl(file, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
            socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, dbell) < 0 ||
            socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, cbell) < 0)
                return 12;
        map = mmap(NULL, SN_RING_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
        if (map == MAP_FAILED)
                return 13;
        h = (struct sn_ring_header *)map;
        put_header(map, sc);
        sq = (struct sn_ring_rx){ .data = map + h->sq_offset, .size = h->sq_size,
                                  .head = h->sq_head, .phead = &h->sq_head, .ptail = &h->sq_tail };
        cq = (struct sn_ring_tx){ .data = map + h->cq_offset, .size = h->cq_size,
                                  .tail = h->cq_tail, .ptail = &h->cq_tail, .phead = &h->cq_head };
        first_tail = h->sq_tail;
        struct snw_hello_reply hr = { .version = 3, .transport = SN_PROTO_TRANSPORT_RING,
                                      .max_message = 65536, .max_fds = 253, .max_ports = 64,
                                      .max_registrations = 1000, .max_posted = 1000,
                                      .max_waits = 64, .max_sockets = 1000,
                                      .daemon_pid = (uint32_t)getpid() };
        snw_hello_reply_encode(sn_msg_begin(out, SN_MSG_HELLO_REPLY, hh.id, 0,
                                            SN_PROTO_RING_NFDS, 0, 0),
                               &hr);
        fds[SN_PROTO_RING_FD_FILE] = file;
        fds[SN_PROTO_RING_FD_DAEMON] = dbell[1];
        fds[SN_PROTO_RING_FD_CLIENT] = cbell[1];
        if (sn__fdmsg_send(c, out, sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0), fds,
                           SN_PROTO_RING_NFDS, 0) < 0)
                return 14;
        close(file);
        close(dbell[1]);
        close(cbell[1]);
        for (;;) {
                struct pollfd p[2] = { { .fd = c, .events = POLLIN }, { .fd = dbell[0],
                                                                         .events = POLLIN } };
                char b[16];
                uint32_t len, kind;
                int k;

                if (poll(p, 2, 10) < 0)
                        return 15;
                if (p[0].revents) {
                        /* The library sends nothing on the socket here: its end, or a
                         * violation. */
                        n = recv(c, in, sizeof(in), MSG_DONTWAIT);
                        if (n == 0 || (n < 0 && errno != EAGAIN))
                                return 0;
                        if (n > 0)
                                return 16;
                }
                while (recv(dbell[0], b, sizeof(b), MSG_DONTWAIT) > 0)
                        ;
                if (refused_at_attach(sc)) {
                        if (sn_ring_load(&h->sq_tail) != first_tail)
                                return 0; /* it used the rings: the test has seen it */
                        continue;
                }
                while ((k = sn_ring_get(&sq, in, sizeof(in), &len, &kind)) > 0)
                        if (kind != SN_RING_MSG || answer(sc, &cq, in, len) < 0)
                                return 17;
                if (k < 0)
                        return 18;
                sn_ring_rx_publish(&sq);
                if (cq.tail != sn_ring_load(cq.ptail)) {
                        sn_ring_tx_publish(&cq);
                        sn_ring_fence();
                        if (sn_ring_claim_wake(&h->client_sleeps))
                                (void)!send(cbell[0], "", 1, MSG_DONTWAIT);
                }
        }
}

START_TEST(test_hostile_ring)
{
        enum scenario sc = (enum scenario)_i;
        char dir[] = "/tmp/sn-hostile-ring-XXXXXX";
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t page = (size_t)sysconf(_SC_PAGESIZE), size = SN_RING_FILE_SIZE;
        bool canary = sq_last(sc); /* where a put would write, else where a get would read */
        uintptr_t start, end = 0;
        uint8_t *hole, *guard, *filler, *fillers[MAX_FILLERS];
        int nfillers = 0;
        sn_conn_t *c = NULL;
        sn_port_t *port = NULL;
        int lfd, base, r, st, changed = 0;
        pid_t pid;

        unsetenv("SOCKNOTIFY_NO_SHM");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/fake.sock", dir);
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(lfd, 0);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(lfd, 1), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(fake_daemon(lfd, sc));
        close(lfd);

        base = count_fds();
        /* The hole for the library's mapping, the page after it, and above them a smaller
         * hole that takes what else is mapped meanwhile (the kernel fills the highest hole
         * that fits): a sanitizer's allocator, say, maps a few pages of its own.  Holes above
         * that the ring file would fit in are filled first (a sanitizer leaves some). */
        for (;;) {
                hole = mmap(NULL, 2 * size + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                            0);
                ck_assert_ptr_ne(hole, MAP_FAILED);
                filler = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                ck_assert_ptr_ne(filler, MAP_FAILED);
                if (filler < hole || nfillers == MAX_FILLERS) {
                        munmap(filler, size);
                        break;
                }
                fillers[nfillers++] = filler;
                munmap(hole, 2 * size + page);
        }
        guard = hole + size;
        ck_assert_int_eq(munmap(hole, size), 0);
        ck_assert_int_eq(munmap(guard + page, size - 2 * page), 0);
        if (canary) {
                ck_assert_int_eq(mprotect(guard, page, PROT_READ | PROT_WRITE), 0);
                memset(guard, 0x5a, page);
        }

        r = sn_conn_open(sa.sun_path, &c);
        if (refused_at_attach(sc) && r == 0) {
                /* Accepted: show what the library then does to the memory past its mapping. */
                start = ring_mapping(&end);
                r = sn_port_create(c, 1, &port);
                for (size_t i = 0; canary && i < page; i++)
                        changed += guard[i] != 0x5a;
                ck_abort_msg("%s: sn_conn_open accepted the ring file (mapped at %#lx-%#lx, %s "
                             "the test's page); then sn_port_create %d, and %d bytes of the "
                             "page after the mapping changed",
                             names[sc], (unsigned long)start, (unsigned long)end,
                             end == (uintptr_t)guard ? "right before" : "not before", r,
                             changed);
        }
        if (refused_at_attach(sc)) {
                ck_assert_msg(r == -EPROTO, "%s: sn_conn_open %d (%s)", names[sc], r,
                              sn_strerror(r));
                ck_assert_msg(strstr(sn_conn_open_error(), "handshake"), "%s: \"%s\"",
                              names[sc], sn_conn_open_error());
        } else {
                ck_assert_msg(r == 0, "%s: sn_conn_open %d (%s)", names[sc], r, sn_strerror(r));
                start = ring_mapping(&end);
                ck_assert_msg(start, "%s: the ring file is not mapped", names[sc]);
                /* Without the page after the mapping the case still checks the refusal, but
                 * not that nothing past the mapping was read: say so. */
                if (end != (uintptr_t)guard)
                        fprintf(stderr, "%s: the ring file is mapped at %#lx-%#lx, not before "
                                "the test's page at %p\n",
                                names[sc], (unsigned long)start, (unsigned long)end,
                                (void *)guard);
                r = sn_port_create(c, 1, &port);
                if (sc == VALID) {
                        ck_assert_msg(r == 0, "%s: sn_port_create %d (%s)", names[sc], r,
                                      sn_strerror(r));
                        sn_port_close(port);
                } else {
                        /* The connection is lost (the library shut its socket: the fake daemon
                         * exits 0 only on that), this call and every later one with it. */
                        ck_assert_msg(r == -ECONNRESET, "%s: sn_port_create %d (%s)", names[sc],
                                      r, sn_strerror(r));
                        r = sn_port_create(c, 1, &port);
                        ck_assert_msg(r == -ECONNRESET, "%s: a second sn_port_create %d (%s)",
                                      names[sc], r, sn_strerror(r));
                }
                sn_conn_close(c);
        }
        for (size_t i = 0; canary && i < page; i++)
                changed += guard[i] != 0x5a;
        ck_assert_msg(changed == 0, "%s: %d bytes after the mapping changed", names[sc], changed);
        ck_assert_msg(count_fds() == base, "%s: %d descriptors, %d before", names[sc],
                      count_fds(), base);
        ck_assert_msg(ring_mapping(&end) == 0, "%s: the ring file is still mapped", names[sc]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: fake daemon status %d",
                      names[sc], st);
        munmap(guard, page);
        munmap(guard + size - page, 2 * page); /* what is left of the reservation above */
        while (nfillers)
                munmap(fillers[--nfillers], size);
        unlink(sa.sun_path);
        rmdir(dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("hostile-rings");
        TCase *tc = tcase_create("hostile-rings");

        tcase_set_timeout(tc, 30);
        tcase_add_loop_test(tc, test_hostile_ring, 0, NSCENARIOS);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

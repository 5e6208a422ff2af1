/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-linger-attack.c - the handoff (lingering named ports, ownerless registrations, PORT_TAKE)
 * against a real daemon, driven the way a hostile or buggy client would: raw PORT_TAKE with
 * odd counts, a client that never reads its replies, a client out of descriptors, linger times
 * changed under other holders, REMOVE and SOCKET_CLOSE of registrations it does not own, and
 * the daemon stopped, re-executed or crashed while ports linger.  Every case checks that the
 * daemon answers, loses nothing, and is back to its baseline of descriptors and quota counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/ring.h"
#include "common/fdmsg.h"
#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/handoff.h"
#include "tests/helpers/manager.h"
#include "tests/helpers/raw.h"

static struct test_daemon D;

static void setup(void)
{
        test_daemon_start(&D, (const char *const[]){ "--max-linger=60000", NULL });
}

static void teardown(void)
{
        if (D.pid > 0)
                ck_assert_int_eq(test_daemon_stop(&D), 0);
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* A predecessor (tests/helpers/handoff.h) that posts nothing. */
static void predecessor(const char *name, uint32_t linger_ms, const int *fds, int n,
                        uint64_t base, uint16_t filter, uint8_t trigger)
{
        handoff_predecessor(D.path, name, linger_ms, fds, n, base, filter, trigger, false);
}

static void socket_pairs(int *a, int *b, int n)
{
        for (int i = 0; i < n; i++) {
                int pair[2];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
                a[i] = pair[0];
                b[i] = pair[1];
        }
}

static int own_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;

        ck_assert_ptr_nonnull(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n - 3; /* ".", ".." and the directory's own descriptor */
}

/* A number of the status document's "user" object (the caller's own counts). */
static long long user_number(const char *key)
{
        char *text = NULL;
        json_t *doc;
        long long v;
        sn_conn_t *c;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_status(c, &text), 0);
        sn_conn_close(c);
        doc = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        v = json_integer_value(json_object_get(json_object_get(doc, "user"), key));
        /* What this file counts is replies and the sockets of registrations: the rings of the
         * user's connections (the one asking, too) count with its output bytes (the file's
         * memory) and its sockets (3 descriptors each), and are taken out here. */
        if (!strcmp(key, "output_bytes"))
                v -= json_integer_value(json_object_get(json_object_get(doc, "user"), "rings")) *
                     SN_RING_FILE_SIZE;
        else if (!strcmp(key, "sockets"))
                v -= 3 * json_integer_value(json_object_get(json_object_get(doc, "user"), "rings"));
        json_decref(doc);
        free(text);
        return v;
}

/* The daemon holds nothing for us any more: no port, socket or registration counted. */
static void expect_user_clean(void)
{
        long long t0 = now_ms();

        while ((user_number("ports") || user_number("sockets") || user_number("registrations")) &&
               now_ms() - t0 < test_timeout_ms(3000))
                usleep(10 * 1000);
        ck_assert_int_eq(user_number("ports"), 0);
        ck_assert_int_eq(user_number("sockets"), 0);
        ck_assert_int_eq(user_number("registrations"), 0);
}

static void raw_take_send(int fd, uint32_t id, uint32_t port, uint32_t max)
{
        uint8_t buf[64];
        struct snw_port_take tk = { .port = port, .max = max };

        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, id, 0, 0, 0, 0), &tk);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
}

struct take_answer {
        struct snw_header h;
        struct snw_port_take_reply rep;
        struct snw_registration items[SN_PROTO_MAX_FDS];
        int fds[SN_PROTO_MAX_FDS];
        unsigned nfds;
        bool cut;
};

/* Receives one message (within 2 s) with whatever descriptors came; returns its type. */
static uint16_t raw_recv_any(int fd, uint8_t *buf, size_t cap, struct take_answer *a)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        const struct sn_msg_desc *d;
        ssize_t n;

        ck_assert_int_eq(poll(&p, 1, 2000), 1);
        n = sn__fdmsg_recv_any(fd, buf, cap, a->fds, &a->nfds, &a->cut, 0);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &a->h, &d), 0);
        if (a->h.type == SN_MSG_PORT_TAKE_REPLY) {
                const uint8_t *it = sn_msg_array(buf, d, 1);

                snw_port_take_reply_decode(sn_msg_body(buf), &a->rep);
                ck_assert_uint_le(a->h.count, SN_PROTO_MAX_FDS);
                for (uint32_t i = 0; i < a->h.count; i++)
                        it = snw_registration_decode(it, &a->items[i]);
        }
        return a->h.type;
}

/* ---- stopping the daemon while a port lingers ------------------------------------------- */

/*
 * A plain stop (SIGTERM, no descriptor store) while a port lingers: the lingering port has no
 * connection left to close it, so it must be freed with the rest.  Before the fix it was not:
 * port, registrations and their sockets were leaked at exit (LeakSanitizer and valgrind fail
 * the stop; this test's status check is what they turn red).
 */
START_TEST(test_stop_while_lingering_frees_everything)
{
        int cl[2], sv[2];

        socket_pairs(cl, sv, 2);
        predecessor("stop", 30000, sv, 2, 1,
                    SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT | SN_REGISTER_EVENT_HANGUP,
                    SN_TRIGGER_EDGE);
        close(sv[0]);
        close(sv[1]);
        ck_assert(!peer_closed(cl[0], 50));
        ck_assert_int_eq(user_number("ports"), 1);
        ck_assert_int_eq(user_number("registrations"), 2);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        D.pid = 0;
        ck_assert(peer_closed(cl[0], 2000));
        ck_assert(peer_closed(cl[1], 2000));
        close(cl[0]);
        close(cl[1]);
}
END_TEST

/* ---- PORT_TAKE with odd counts ------------------------------------------------------------ */

START_TEST(test_take_huge_and_zero_max)
{
        enum { N = 300 };
        static int cl[N], sv[N];
        static bool seen[N];
        uint8_t *buf = malloc(1 << 17);
        static struct take_answer a;
        int baseline = test_daemon_fds(&D), fd, got = 0;
        uint32_t port;

        ck_assert_ptr_nonnull(buf);
        socket_pairs(cl, sv, N);
        predecessor("huge", 30000, sv, N, 100, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        fd = raw_hello2(D.path);
        port = raw_port_open(fd, 2, "huge");
        /* max 0 only reports. */
        raw_take_send(fd, 3, port, 0);
        ck_assert_uint_eq(raw_recv_any(fd, buf, 1 << 17, &a), SN_MSG_PORT_TAKE_REPLY);
        ck_assert_uint_eq(a.h.status, 0);
        ck_assert_uint_eq(a.h.count, 0);
        ck_assert_uint_eq(a.nfds, 0);
        ck_assert_uint_eq(a.rep.remaining, N);
        ck_assert_uint_eq(a.rep.holders, 0);
        /* max 2^32-1: at most one message's worth, descriptors matching items one to one. */
        for (uint32_t id = 4; got < N; id++) {
                raw_take_send(fd, id, port, UINT32_MAX);
                ck_assert_uint_eq(raw_recv_any(fd, buf, 1 << 17, &a), SN_MSG_PORT_TAKE_REPLY);
                ck_assert_uint_eq(a.h.status, 0);
                ck_assert_uint_gt(a.h.count, 0);
                ck_assert_uint_le(a.h.count, SN_PROTO_MAX_FDS);
                ck_assert_uint_eq(a.h.nfds, a.h.count);
                ck_assert_uint_eq(a.nfds, a.h.count);
                ck_assert(!a.cut);
                for (uint32_t i = 0; i < a.h.count; i++) {
                        uint64_t k = a.items[i].key - 100;
                        struct stat st;

                        ck_assert_uint_eq(a.items[i].fd_index, i);
                        ck_assert(k < N && !seen[k]);
                        seen[k] = true;
                        ck_assert_int_eq(a.items[i].client_fd, sv[k]);
                        ck_assert_int_eq(fstat(a.fds[i], &st), 0);
                        ck_assert_uint_eq(st.st_ino, a.items[i].ino);
                        close(a.fds[i]);
                }
                got += (int)a.h.count;
                ck_assert_uint_eq(a.rep.remaining, (uint32_t)(N - got));
        }
        for (int i = 0; i < N; i++)
                close(sv[i]);
        /* The raw connection ends: on a lingering port its registrations are ownerless again,
         * and a successor gets all of them. */
        close(fd);
        usleep(50 * 1000);
        {
                static sn_taken_socket_t t[N + 1];
                sn_take_info_t info;
                sn_conn_t *c;
                sn_port_t *p;

                ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
                ck_assert_int_eq(sn_port_open(c, "huge", &p), 0);
                ck_assert_int_eq(sn_port_take_sockets(p, t, N + 1, &info), N);
                ck_assert_uint_eq(info.remaining, 0);
                ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
                for (int i = 0; i < N; i++)
                        close(t[i].fd);
                sn_port_close(p);
                sn_conn_close(c);
        }
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
        free(buf);
}
END_TEST

/* ---- a successor out of descriptors ------------------------------------------------------- */

/*
 * The successor's descriptor table is nearly full (RLIMIT_NOFILE): the kernel installs what
 * fits and drops the rest (MSG_CTRUNC).  The library must hand out every descriptor that came,
 * mark the others -1, keep nothing it was not given, and the daemon must lose nothing: once the
 * successor goes, a second one takes every registration with its socket.
 */
START_TEST(test_take_with_a_full_descriptor_table)
{
        enum { N = 20, ROOM = 6 };
        int cl[N], sv[N], pipefd[2], st, baseline = test_daemon_fds(&D);
        int res[4];
        pid_t pid;

        socket_pairs(cl, sv, N);
        predecessor("nofile", 30000, sv, N, 500, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        ck_assert_int_eq(pipe(pipefd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_taken_socket_t t[N];
                sn_take_info_t info;
                sn_conn_t *c;
                sn_port_t *p;
                int out[4] = { 0 }, before, valid = 0;
                struct rlimit rl;

                if (sn_conn_open(D.path, &c) < 0 || sn_port_open(c, "nofile", &p) < 0)
                        _exit(2);
                getrlimit(RLIMIT_NOFILE, &rl);
                /* Room for ROOM more: the gaps below the highest descriptor are filled first
                 * (the kernel takes the lowest free number). */
                {
                        int hi = 0, x;
                        DIR *d = opendir("/proc/self/fd");
                        struct dirent *e;

                        while (d && (e = readdir(d)))
                                hi = SN_MAX(hi, atoi(e->d_name));
                        if (d)
                                closedir(d);
                        while ((x = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0 && x < hi)
                                ;
                        if (x >= 0)
                                close(x);
                        rl.rlim_cur = (rlim_t)hi + 1 + ROOM;
                }
                before = own_fds();
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(3);
                out[0] = sn_port_take_sockets(p, t, N, &info);
                for (int i = 0; i < out[0] && i < N; i++) {
                        if (t[i].fd >= 0) {
                                struct stat s;

                                if (fstat(t[i].fd, &s) == 0 && S_ISSOCK(s.st_mode))
                                        valid++;
                                close(t[i].fd);
                        }
                }
                out[1] = valid;
                out[2] = own_fds() - before; /* descriptors the library kept: none */
                out[3] = (int)info.remaining;
                if (write(pipefd[1], out, sizeof(out)) != sizeof(out))
                        _exit(4);
                _exit(0); /* the connection ends: the registrations are ownerless again */
        }
        close(pipefd[1]);
        ck_assert_int_eq(read(pipefd[0], res, sizeof(res)), (ssize_t)sizeof(res));
        close(pipefd[0]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        /* Some came, some did not; nothing the library received stayed open behind it. */
        ck_assert_int_ge(res[0], 1);
        ck_assert_int_ge(res[1], 1);
        ck_assert_int_lt(res[1], N);
        ck_assert_int_eq(res[2], 0);
        usleep(50 * 1000);
        {
                sn_taken_socket_t t[N + 1];
                sn_take_info_t info;
                sn_conn_t *c;
                sn_port_t *p;

                ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
                ck_assert_int_eq(sn_port_open(c, "nofile", &p), 0);
                ck_assert_int_eq(sn_port_take_sockets(p, t, N + 1, &info), N);
                ck_assert_uint_eq(info.remaining, 0);
                for (int i = 0; i < N; i++) {
                        ck_assert_int_ge(t[i].fd, 0);
                        close(t[i].fd);
                }
                ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
                sn_port_close(p);
                sn_conn_close(c);
        }
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
}
END_TEST

/* ---- linger times changed under other holders -------------------------------------------- */

/* A port lingers, a second process opens it, sets linger 0 and closes: the port really closes
 * (its sockets with it) and the name is free again. */
START_TEST(test_linger_zero_after_reopen_closes)
{
        int cl, sv, baseline = test_daemon_fds(&D);
        sn_conn_t *c;
        sn_port_t *p;

        tcp_pair(&cl, &sv);
        predecessor("zero", 30000, &sv, 1, 1, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        close(sv);
        ck_assert(!peer_closed(cl, 50));
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "zero", &p), 0);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        ck_assert(peer_closed(cl, 2000));
        ck_assert_int_eq(sn_port_open(c, "zero", &p), -ENOENT);
        sn_conn_close(c);
        close(cl);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
}
END_TEST

/* The creator is alive, a second holder sets linger 0: rule L3 applies again when the creator
 * goes (its registrations dropped, not kept), while the second holder keeps the port. */
START_TEST(test_linger_zero_by_second_holder)
{
        int cl, sv;
        sn_port_options_t o = { .linger_ms = 30000 };
        sn_registration_t r;
        sn_taken_socket_t t;
        sn_take_info_t info;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pb;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &b), 0);
        ck_assert_int_eq(sn_port_create_named_ex(a, "second", &o, &pa), 0);
        r = (sn_registration_t){ .fd = sv, .key = 9, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(pa, &r, 1, NULL, 0, 0), 0);
        close(sv);
        ck_assert_int_eq(sn_port_open(b, "second", &pb), 0);
        ck_assert_int_eq(sn_port_set_linger(pb, 0), 0);
        sn_port_close(pa); /* b still holds it: a's registration stays a's */
        sn_conn_close(a);
        ck_assert(peer_closed(cl, 2000));
        ck_assert_int_eq(sn_port_take_sockets(pb, &t, 1, &info), 0);
        ck_assert_uint_eq(info.remaining, 0);
        ck_assert_uint_eq(info.holders, 0);
        sn_port_close(pb);
        sn_conn_close(b);
        close(cl);
        expect_user_clean();
}
END_TEST

/* ---- registrations the caller does not own ----------------------------------------------- */

/* Another holder REMOVEs an ownerless registration: it is no longer takeable, its REMOVE entry
 * comes, and the daemon's copy goes with that entry. */
START_TEST(test_remove_ownerless_by_other_holder)
{
        int cl, sv, baseline = test_daemon_fds(&D);
        sn_registration_t r;
        sn_taken_socket_t t;
        sn_take_info_t info;
        sn_entry_t e;
        sn_conn_t *c;
        sn_port_t *p;

        tcp_pair(&cl, &sv);
        predecessor("rm", 30000, &sv, 1, 77, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "rm", &p), 0);
        ck_assert_int_eq(sn_port_take_sockets(p, NULL, 0, &info), 0);
        ck_assert_uint_eq(info.remaining, 1);
        r = (sn_registration_t){ .fd = sv, .op = SN_OP_REMOVE };
        ck_assert_int_eq(sn_port_process(p, &r, 1, &e, 1, 2000), 1);
        ck_assert_int_eq(r.result, 0);
        ck_assert_uint_eq(e.key, 77);
        ck_assert_uint_eq(e.events, SN_EVENT_REMOVE);
        ck_assert_int_eq(sn_port_take_sockets(p, &t, 1, &info), 0);
        ck_assert_uint_eq(info.remaining, 0);
        close(sv);
        ck_assert(peer_closed(cl, 2000));
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
}
END_TEST

/* SOCKET_CLOSE of an ownerless registration by a holder that did not take it: refused, kept.
 * After a take, the taker's SOCKET_CLOSE works with the new descriptor; the identity of a
 * registration taken by someone else is refused to a third connection. */
START_TEST(test_socket_close_of_others_registrations)
{
        int cl, sv, fd;
        struct stat st;
        uint8_t buf[128];
        sn_taken_socket_t t;
        sn_conn_t *c;
        sn_port_t *p;

        tcp_pair(&cl, &sv);
        ck_assert_int_eq(fstat(sv, &st), 0);
        predecessor("sc", 30000, &sv, 1, 5, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        fd = raw_hello2(D.path);
        (void)raw_port_open(fd, 2, "sc");
        {
                struct snw_socket_close body = { .dev = st.st_dev, .ino = st.st_ino,
                                                 .client_fd = (uint32_t)sv };

                snw_socket_close_encode(sn_msg_begin(buf, SN_MSG_SOCKET_CLOSE, 3, 0, 0, 0, 0),
                                        &body);
                raw_send(fd, buf, sn_msg_size(SN_MSG_SOCKET_CLOSE, 0, 0), NULL, 0);
                expect_reply(fd, SN_MSG_SOCKET_CLOSE_REPLY, 3, ENOENT);
                body.client_fd = SN_PROTO_NO_FD;
                snw_socket_close_encode(sn_msg_begin(buf, SN_MSG_SOCKET_CLOSE, 4, 0, 0, 0, 0),
                                        &body);
                raw_send(fd, buf, sn_msg_size(SN_MSG_SOCKET_CLOSE, 0, 0), NULL, 0);
                expect_reply(fd, SN_MSG_SOCKET_CLOSE_REPLY, 4, ENOENT);
        }
        close(sv);
        ck_assert(!peer_closed(cl, 50));
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "sc", &p), 0);
        ck_assert_int_eq(sn_port_take_sockets(p, &t, 1, NULL), 1);
        {
                struct snw_socket_close body = { .dev = st.st_dev, .ino = st.st_ino,
                                                 .client_fd = SN_PROTO_NO_FD };

                snw_socket_close_encode(sn_msg_begin(buf, SN_MSG_SOCKET_CLOSE, 5, 0, 0, 0, 0),
                                        &body);
                raw_send(fd, buf, sn_msg_size(SN_MSG_SOCKET_CLOSE, 0, 0), NULL, 0);
                expect_reply(fd, SN_MSG_SOCKET_CLOSE_REPLY, 5, ENOENT);
        }
        close(fd);
        ck_assert(!peer_closed(cl, 50));
        /* Re-registering the taken socket on another port is refused (it is this port's). */
        {
                sn_port_t *q;
                sn_registration_t r = { .fd = t.fd, .key = 1, .op = SN_OP_ENABLE,
                                        .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL };

                ck_assert_int_eq(sn_port_create(c, 0, &q), 0);
                ck_assert_int_eq(sn_port_process(q, &r, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(r.result, -EEXIST);
                sn_port_close(q);
                /* On its own port: rule 4, the key stays. */
                r.key = 1000;
                ck_assert_int_eq(sn_port_process(p, &r, 1, NULL, 0, 0), 0);
                ck_assert_int_eq(r.result, 0);
        }
        ck_assert_int_eq(sn_socket_close(c, t.fd), 0);
        ck_assert(peer_closed(cl, 2000));
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
        expect_user_clean();
}
END_TEST

/* ---- a successor that does not read its replies ----------------------------------------- */

/* Sends n requests that are answered at once with a small reply of fixed size (a SOCKET_CLOSE
 * of no registration: ENOENT), without reading anything. */
static void raw_flood(int fd, uint32_t first_id, int n)
{
        uint8_t buf[64];
        struct snw_socket_close body = { .dev = 1, .ino = 1, .client_fd = 3 };

        for (int i = 0; i < n; i++) {
                snw_socket_close_encode(sn_msg_begin(buf, SN_MSG_SOCKET_CLOSE,
                                                     first_id + (uint32_t)i, 0, 0, 0, 0),
                                        &body);
                raw_send(fd, buf, sn_msg_size(SN_MSG_SOCKET_CLOSE, 0, 0), NULL, 0);
        }
}

/* Waits until the user's queued output (replies the daemon could not send yet) is stable;
 * returns it. */
static long long settled_output(void)
{
        long long v = -1, w;

        for (int i = 0; i < 100; i++) {
                usleep(20 * 1000);
                w = user_number("output_bytes");
                if (w == v)
                        return v;
                v = w;
        }
        return v;
}

/* Reads every message of a raw connection until it is quiet; checks that none carried a
 * descriptor; returns the status of the PORT_TAKE_REPLY with id, which must be there. */
static uint32_t drain_for_take(int fd, uint32_t id, int *ret_count)
{
        uint8_t *buf = malloc(1 << 17);
        static struct take_answer a;
        uint32_t status = UINT32_MAX;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = 0;

        ck_assert_ptr_nonnull(buf);
        while (poll(&p, 1, 300) == 1) {
                raw_recv_any(fd, buf, 1 << 17, &a);
                ck_assert_uint_eq(a.nfds, 0);
                if (a.h.type == SN_MSG_PORT_TAKE_REPLY && a.h.id == id)
                        status = a.h.status;
                n++;
        }
        free(buf);
        if (ret_count)
                *ret_count = n;
        return status;
}

/* Rounds of a successor whose replies pile up: PORT_TAKE answers EAGAIN, nothing changes
 * hands, and once it reads, a new PORT_TAKE gets everything. */
START_TEST(test_take_when_replies_are_queued)
{
        enum { N = 5, FLOOD = 3000 };
        int cl[N], sv[N], fd, n, baseline = test_daemon_fds(&D);
        uint8_t *buf = malloc(1 << 17);
        static struct take_answer a;
        sn_take_info_t info;
        sn_conn_t *c;
        sn_port_t *p;
        uint32_t port;

        ck_assert_ptr_nonnull(buf);
        socket_pairs(cl, sv, N);
        predecessor("queued", 30000, sv, N, 1, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        fd = raw_hello2(D.path);
        port = raw_port_open(fd, 2, "queued");
        raw_flood(fd, 100, FLOOD);
        ck_assert_int_gt(settled_output(), 0); /* replies are queued in the daemon */
        raw_take_send(fd, 50, port, 253);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "queued", &p), 0);
        ck_assert_int_eq(sn_port_take_sockets(p, NULL, 0, &info), 0);
        ck_assert_uint_eq(info.remaining, N);
        ck_assert_uint_eq(info.holders, 1);
        ck_assert_uint_eq(drain_for_take(fd, 50, &n), EAGAIN);
        ck_assert_int_eq(n, FLOOD + 1);
        raw_take_send(fd, 51, port, 253);
        ck_assert_uint_eq(raw_recv_any(fd, buf, 1 << 17, &a), SN_MSG_PORT_TAKE_REPLY);
        ck_assert_uint_eq(a.h.status, 0);
        ck_assert_uint_eq(a.h.count, N);
        ck_assert_uint_eq(a.nfds, N);
        sn__fds_close(a.fds, a.nfds);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        close(fd);
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
        free(buf);
}
END_TEST

/*
 * The other EAGAIN: no reply queued, but the connection's socket is full (the last reply that
 * went out filled it).  A first connection measures how many small replies fit; a second one
 * receives exactly that many, then asks PORT_TAKE: the reply with descriptors cannot go out,
 * so the daemon queues EAGAIN instead, and nothing changes hands.
 */
START_TEST(test_take_when_socket_is_full)
{
        enum { N = 3, FLOOD = 3000 };
        int cl[N], sv[N], fd, n, baseline = test_daemon_fds(&D);
        long long out, cost, before;
        uint32_t port;
        sn_take_info_t info;
        sn_conn_t *c;
        sn_port_t *p;
        int fit;

        socket_pairs(cl, sv, N);
        predecessor("full", 30000, sv, N, 1, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        /* Measure: FLOOD replies, of which out / cost were queued. */
        fd = raw_hello2(D.path);
        raw_flood(fd, 100, FLOOD);
        out = settled_output();
        raw_flood(fd, 100 + FLOOD, 1);
        cost = settled_output() - out;
        ck_assert_int_gt(cost, 0);
        fit = FLOOD - (int)(out / cost);
        ck_assert_int_gt(fit, 0);
        drain_for_take(fd, 0, NULL);
        close(fd);
        ck_assert_int_eq(settled_output(), 0);
        /* Fill a second connection's socket exactly. */
        fd = raw_hello2(D.path);
        port = raw_port_open(fd, 2, "full");
        raw_flood(fd, 100, fit);
        before = settled_output();
        ck_assert_int_eq(before, 0); /* nothing queued: all in the socket */
        raw_take_send(fd, 50, port, 253);
        ck_assert_int_gt(settled_output(), 0); /* the take's answer had to be queued */
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "full", &p), 0);
        ck_assert_int_eq(sn_port_take_sockets(p, NULL, 0, &info), 0);
        ck_assert_uint_eq(info.remaining, N);
        ck_assert_uint_eq(drain_for_take(fd, 50, &n), EAGAIN);
        ck_assert_int_eq(n, fit + 1);
        close(fd);
        {
                sn_taken_socket_t t[N];

                ck_assert_int_eq(sn_port_take_sockets(p, t, N, &info), N);
                for (int i = 0; i < N; i++)
                        close(t[i].fd);
        }
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
}
END_TEST

/* ---- re-exec and crash while ports linger ------------------------------------------------ */

static long long status_reexecs(void)
{
        char *text = NULL;
        json_t *doc;
        long long v;
        sn_conn_t *c;

        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_status(c, &text), 0);
        sn_conn_close(c);
        doc = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        v = json_integer_value(json_object_get(doc, "reexecs"));
        json_decref(doc);
        free(text);
        return v;
}

static void reexec_daemon(void)
{
        long long before = status_reexecs(), t0 = now_ms();

        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        while (status_reexecs() == before) {
                ck_assert(now_ms() - t0 < test_timeout_ms(5000));
                usleep(5000);
        }
}

/* Kills the daemon (SIGKILL) and starts it again from the fake manager's store. */
static void crash_daemon(struct manager *m)
{
        int st;

        manager_sync(m); /* the journal and its boxes are stored (the last call answered) */
        ck_assert_int_eq(kill(D.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        manager_start_daemon(m, &D, NULL);
}

/*
 * EDGE registrations with OUT and IN (each holds a duplicate of its socket, counted against
 * the user's socket quota) left ownerless, carried through a re-exec, taken, re-armed, left
 * ownerless again by the taker's end, and expired: the user's counts come back to zero, never
 * below.
 */
START_TEST(test_edge_duplicates_accounted_through_reexec)
{
        enum { N = 4 };
        int cl[N], sv[N], baseline = test_daemon_fds(&D);
        const uint16_t filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT |
                                SN_REGISTER_EVENT_HANGUP;

        socket_pairs(cl, sv, N);
        predecessor("edge", 30000, sv, N, 10, filter, SN_TRIGGER_EDGE);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        ck_assert_int_eq(user_number("registrations"), N);
        ck_assert_int_eq(user_number("sockets"), 2 * N);
        reexec_daemon();
        ck_assert_int_eq(user_number("registrations"), N);
        ck_assert_int_eq(user_number("sockets"), 2 * N);
        {
                sn_taken_socket_t t[N];
                sn_registration_t r[N];
                sn_conn_t *c;
                sn_port_t *p;

                ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
                ck_assert_int_eq(sn_port_open(c, "edge", &p), 0);
                ck_assert_int_eq(sn_port_take_sockets(p, t, N, NULL), N);
                for (int i = 0; i < N; i++)
                        r[i] = (sn_registration_t){ .fd = t[i].fd, .key = t[i].key,
                                                    .op = SN_OP_ENABLE, .filter = t[i].filter,
                                                    .trigger = t[i].trigger };
                ck_assert_int_eq(sn_port_process(p, r, N, NULL, 0, 0), 0);
                for (int i = 0; i < N; i++) {
                        ck_assert_int_eq(r[i].result, 0);
                        close(t[i].fd);
                }
                ck_assert_int_eq(user_number("sockets"), 2 * N);
                /* The taker goes: ownerless again. */
                sn_port_close(p);
                sn_conn_close(c);
        }
        usleep(50 * 1000);
        reexec_daemon();
        ck_assert_int_eq(user_number("registrations"), N);
        ck_assert_int_eq(user_number("sockets"), 2 * N);
        {
                sn_taken_socket_t t[N];
                sn_conn_t *c;
                sn_port_t *p;

                ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
                ck_assert_int_eq(sn_port_open(c, "edge", &p), 0);
                ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
                ck_assert_int_eq(sn_port_take_sockets(p, t, N, NULL), N);
                for (int i = 0; i < N; i++)
                        ck_assert_int_eq(sn_socket_close(c, t[i].fd), 0);
                ck_assert_int_eq(user_number("registrations"), 0);
                ck_assert_int_eq(user_number("sockets"), 0);
                sn_port_close(p);
                sn_conn_close(c);
        }
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        /* Under a wrapper (valgrind) a re-exec changes the wrapper's own descriptors. */
        if (!getenv("SN_TEST_DAEMON_WRAPPER"))
                ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
}
END_TEST

/* The same through a crash (live journal): the duplicates are made again, counted once. */
START_TEST(test_edge_duplicates_accounted_through_crash)
{
        enum { N = 3 };
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        const uint16_t filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT |
                                SN_REGISTER_EVENT_HANGUP;
        struct manager m;
        int cl[N], sv[N];

        test_daemon_stop(&D);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&D, NULL);
        socket_pairs(cl, sv, N);
        predecessor("edgecrash", 30000, sv, N, 10, filter, SN_TRIGGER_EDGE);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        ck_assert_int_eq(user_number("sockets"), 2 * N);
        crash_daemon(&m);
        ck_assert_int_eq(user_number("registrations"), N);
        ck_assert_int_eq(user_number("sockets"), 2 * N);
        {
                sn_taken_socket_t t[N];
                sn_conn_t *c;
                sn_port_t *p;

                ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
                ck_assert_int_eq(sn_port_open(c, "edgecrash", &p), 0);
                ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
                ck_assert_int_eq(sn_port_take_sockets(p, t, N, NULL), N);
                for (int i = 0; i < N; i++)
                        ck_assert_int_eq(sn_socket_close(c, t[i].fd), 0);
                sn_port_close(p);
                sn_conn_close(c);
        }
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        expect_user_clean();
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        manager_stop(&m);
        test_daemon_start(&D, NULL); /* for the fixture */
}
END_TEST

/*
 * A creator that closed its handle while the port had no linger time (its registrations stay
 * its own then), and lives on; another holder then gives the port a linger time.  Its
 * registrations stay its own until it ends, then become ownerless for the successor.  A
 * re-exec keeps them so; a crash must too (the live restore dropped them: it wanted every
 * creator to hold the port).
 */
static void handleless_creator(bool crash)
{
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        sn_port_options_t o = { .linger_ms = 30000 };
        struct manager m;
        sn_registration_t r;
        sn_taken_socket_t t;
        sn_take_info_t info;
        sn_conn_t *a, *b;
        sn_port_t *pa, *pb;
        int cl, sv;

        if (crash) {
                test_daemon_stop(&D);
                ck_assert_ptr_nonnull(mkdtemp(mdir));
                manager_start(&m, mdir, 64);
                test_daemon_start(&D, NULL);
        }
        tcp_pair(&cl, &sv);
        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &b), 0);
        ck_assert_int_eq(sn_port_create_named(a, "handover", 0, &pa), 0);
        r = (sn_registration_t){ .fd = sv, .key = 31, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(pa, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        close(sv);
        ck_assert_int_eq(sn_port_open(b, "handover", &pb), 0);
        sn_port_close(pa); /* a is still connected; b holds the port */
        ck_assert_int_eq(sn_port_set_linger(pb, o.linger_ms), 0);
        ck_assert_int_eq(sn_port_take_sockets(pb, &t, 1, &info), 0); /* still a's */
        if (crash)
                crash_daemon(&m);
        else
                reexec_daemon();
        ck_assert_msg(!peer_closed(cl, 100), "the daemon dropped the registration");
        ck_assert_int_eq(sn_port_take_sockets(pb, &t, 1, &info), 0);
        sn_conn_close(a); /* now it ends: ownerless, for b */
        usleep(100 * 1000);
        ck_assert_int_eq(sn_port_take_sockets(pb, &t, 1, &info), 1);
        ck_assert_uint_eq(t.key, 31);
        ck_assert_int_eq(sn_port_set_linger(pb, 0), 0);
        ck_assert_int_eq(sn_socket_close(b, t.fd), 0);
        ck_assert(peer_closed(cl, 2000));
        sn_port_close(pb);
        sn_conn_close(b);
        close(cl);
        expect_user_clean();
        if (crash) {
                ck_assert_int_eq(test_daemon_stop(&D), 0);
                manager_stop(&m);
                test_daemon_start(&D, NULL); /* for the fixture */
        }
}

START_TEST(test_handleless_creator_through_reexec)
{
        handleless_creator(false);
}
END_TEST

START_TEST(test_handleless_creator_through_crash)
{
        handleless_creator(true);
}
END_TEST

/* The "ownerless" count of the caller's port name, from the control "ports" listing. */
static long long ownerless_of(sn_conn_t *c, const char *name)
{
        char *text = NULL;
        json_t *doc, *items;
        long long v = -1;
        size_t i;
        json_t *it;

        ck_assert_int_eq(sn_conn_control(c, "{\"verb\":\"ports\"}", &text), 0);
        doc = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        items = json_object_get(doc, "items");
        json_array_foreach(items, i, it) {
                const char *n = json_string_value(json_object_get(it, "name"));

                if (n && !strcmp(n, name))
                        v = json_integer_value(json_object_get(it, "ownerless"));
        }
        json_decref(doc);
        free(text);
        return v;
}

/* ---- descriptors in flight ---------------------------------------------------------------- */

/*
 * Restarts the fixture's daemon like the packaged one, without capabilities and with
 * RLIMIT_NOFILE 300, and as a uid of its own: the kernel's budget of descriptors in flight is
 * per user (ETOOMANYREFS past the sender's RLIMIT_NOFILE), and every other process of the
 * test's user on the machine (other tests, a package build) would share it and make these
 * cases fail or pass by chance.  m: a descriptor store (in mdir) the daemon must reach, or
 * NULL.  Returns false, having printed why, when that cannot be arranged: the case is skipped.
 */
static bool start_packaged_daemon_alone(const char *const *args, const char *mdir,
                                        const struct manager *m)
{
        char why[160];
        uid_t uid;

        if (!test_private_uid(&uid, why, sizeof(why))) {
                fprintf(stderr, "SKIP: test-linger-attack: case skipped: %s\n", why);
                return false;
        }
        test_daemon_stop(&D);
        if (m) {
                ck_assert_int_eq(chown(mdir, uid, (gid_t)-1), 0);
                ck_assert_int_eq(chown(m->path, uid, (gid_t)-1), 0);
        }
        setenv("SN_TEST_DAEMON_WRAPPER", "prlimit --nofile=300:300", 1);
        test_daemon_start_as(&D, args, uid);
        unsetenv("SN_TEST_DAEMON_WRAPPER");
        return true;
}

/* Asks the daemon to create a port named name on the raw connection fd (whose replies are
 * never read) and waits until client c can open it: the daemon then handled every request sent
 * on fd before. */
static void raw_mark(int fd, sn_conn_t *c, uint32_t id, const char *name)
{
        uint8_t buf[512];
        struct snw_port_create body = { 0 };
        size_t len = strlen(name);
        uint8_t *q = snw_port_create_encode(
                sn_msg_begin(buf, SN_MSG_PORT_CREATE, id, 0, 0, (uint32_t)len, 0), &body);
        long long deadline = now_ms() + test_timeout_ms(5000);
        sn_port_t *mark;

        memcpy(q, name, len);
        raw_send(fd, buf, (size_t)(q - buf) + len, NULL, 0);
        while (sn_port_open(c, name, &mark) < 0) {
                ck_assert_msg(now_ms() < deadline, "the daemon did not handle %s", name);
                usleep(5 * 1000);
        }
        sn_port_close(mark);
}

/*
 * The kernel refuses to send descriptors (ETOOMANYREFS) while the sending user has more in
 * flight (sent, not yet received by anyone) than its RLIMIT_NOFILE, unless it has
 * CAP_SYS_RESOURCE: the packaged daemon runs without capabilities.  A hostile client can put
 * the daemon there by asking PORT_TAKE again and again without ever reading the replies.
 * Another client's PORT_TAKE must then fail (and be retried) without its connection being
 * killed: killing it would drop every registration it has elsewhere (rule L3).
 */
START_TEST(test_take_while_descriptors_are_hoarded)
{
        enum { N = 100, ROUNDS = 4 };
        static int cl[N], sv[N];
        int vcl, vsv, h, res;
        sn_registration_t r;
        sn_port_options_t o = { .linger_ms = 30000 };
        sn_taken_socket_t t;
        sn_conn_t *v, *w;
        sn_port_t *pv, *pw, *keep;
        uint32_t port;

        /* A daemon like the packaged one: no capabilities, a small descriptor limit. */
        if (!start_packaged_daemon_alone(NULL, NULL, NULL))
                return;

        /* The victim: a successor with a registration of its own on a port without linger,
         * and one ownerless registration to take on a lingering port. */
        tcp_pair(&vcl, &vsv);
        predecessor("victim", 30000, &vsv, 1, 1, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        close(vsv);
        ck_assert_int_eq(sn_conn_open(D.path, &v), 0);
        ck_assert_int_eq(sn_port_create(v, 0, &keep), 0);
        tcp_pair(&h, &res);
        r = (sn_registration_t){ .fd = res, .key = 5, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(keep, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        close(res);
        ck_assert_int_eq(sn_port_open(v, "victim", &pv), 0);

        /* The hoarder: its own lingering port, taken over and over, never read. */
        socket_pairs(cl, sv, N);
        ck_assert_int_eq(sn_conn_open(D.path, &w), 0);
        ck_assert_int_eq(sn_port_create_named_ex(w, "hoard", &o, &pw), 0);
        {
                static sn_registration_t rr[N];

                for (int i = 0; i < N; i++)
                        rr[i] = (sn_registration_t){ .fd = sv[i], .key = (uint64_t)i,
                                                     .op = SN_OP_ENABLE,
                                                     .filter = SN_REGISTER_EVENT_IN,
                                                     .trigger = SN_TRIGGER_LEVEL };
                ck_assert_int_eq(sn_port_process(pw, rr, N, NULL, 0, 0), 0);
                for (int i = 0; i < N; i++)
                        close(sv[i]);
        }
        sn_port_close(pw);
        sn_conn_close(w); /* ownerless now */
        {
                int fd = raw_hello2(D.path);

                port = raw_port_open(fd, 10, "hoard");
                /* Take, let go (the taken ones are ownerless again), open again, take again:
                 * no reply is ever read.  Only the first take may go through: a connection
                 * gets no second reply with descriptors while one is unread (EAGAIN). */
                for (uint32_t i = 0, id = 11; i < ROUNDS; i++) {
                        uint8_t buf[512];
                        struct snw_port port_body = { .port = port };
                        long long t0 = now_ms();
                        char name[16];
                        uint8_t *q;

                        raw_take_send(fd, id++, port, N);
                        /* Once the mark exists the take was handled: taken, or refused. */
                        snprintf(name, sizeof(name), "mark%u", i);
                        raw_mark(fd, v, id++, name);
                        ck_assert_int_eq(ownerless_of(v, "hoard"), i == 0 ? 0 : N);
                        snw_port_encode(sn_msg_begin(buf, SN_MSG_PORT_CLOSE, id++, 0, 0, 0, 0),
                                        &port_body);
                        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_CLOSE, 0, 0), NULL, 0);
                        q = sn_msg_begin(buf, SN_MSG_PORT_OPEN, id++, 0, 0, 5, 0);
                        memcpy(q, "hoard", 5);
                        raw_send(fd, buf, (size_t)(q - buf) + 5, NULL, 0);
                        while (ownerless_of(v, "hoard") != N)
                                ck_assert(now_ms() - t0 < test_timeout_ms(5000));
                }
                /* A mark after them: once it exists, the daemon has handled every round. */
                raw_mark(fd, v, 99, "done");
                /* N descriptors in flight to fd, which is never read: not more. */

                res = sn_port_take_sockets(pv, &t, 1, NULL);
                ck_assert_msg(sn_port_take_sockets(pv, NULL, 0, NULL) != -ECONNRESET,
                              "the victim's connection was killed (take returned %d)", res);
                /* The hoard stayed small: the victim's take went through. */
                ck_assert_int_eq(res, 1);
                close(t.fd);
                /* Its other registration lives on. */
                ck_assert_msg(!peer_closed(h, 100), "the victim lost its other registration");
                close(fd); /* the hoard is released */
        }
        sn_port_close(pv);
        sn_port_close(keep);
        sn_conn_close(v);
        for (int i = 0; i < N; i++)
                close(cl[i]);
        close(vcl);
        close(h);
}
END_TEST

/*
 * The old instance still holds the port when the daemon goes down (a stop into the descriptor
 * store, or a crash), and dies while no daemon runs.  The next daemon finds its connection
 * dead: its registrations become ownerless (the port lingers), and the successor takes them.
 */
static pid_t holder(const char *name, uint32_t linger_ms, int fd, uint64_t key)
{
        int pipefd[2];
        pid_t pid;
        char c;

        ck_assert_int_eq(pipe(pipefd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                sn_port_options_t o = { .linger_ms = linger_ms };
                sn_registration_t r = { .fd = fd, .key = key, .op = SN_OP_ENABLE,
                                        .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL };
                sn_conn_t *conn;
                sn_port_t *p;

                if (sn_conn_open(D.path, &conn) < 0 ||
                    sn_port_create_named_ex(conn, name, &o, &p) < 0 ||
                    sn_port_process(p, &r, 1, NULL, 0, 0) != 0 || r.result ||
                    write(pipefd[1], "k", 1) != 1)
                        _exit(2);
                pause();
                _exit(0);
        }
        close(pipefd[1]);
        ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
        close(pipefd[0]);
        return pid;
}

static void holder_dies_while_daemon_down(bool crash)
{
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        struct manager m;
        sn_taken_socket_t t;
        sn_take_info_t info;
        sn_conn_t *c;
        sn_port_t *p;
        int cl, sv, st;
        pid_t pid;
        char b;

        test_daemon_stop(&D);
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        test_daemon_start(&D, NULL);
        tcp_pair(&cl, &sv);
        pid = holder("down", 30000, sv, 41);
        close(sv);
        manager_sync(&m); /* the holder's registration is stored (its call was answered) */
        ck_assert_int_eq(kill(D.pid, crash ? SIGKILL : SIGTERM), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        /* The old instance dies now, while no daemon runs. */
        ck_assert_int_eq(kill(pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        manager_start_daemon(&m, &D, NULL);
        ck_assert_int_eq(send(cl, "d", 1, 0), 1);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "down", &p), 0);
        /* The dead connection is found and swept; then its registration is ownerless. */
        for (long long t0 = now_ms();; usleep(20 * 1000)) {
                ck_assert_int_ge(sn_port_take_sockets(p, NULL, 0, &info), 0);
                if (info.holders == 0 || now_ms() - t0 > test_timeout_ms(5000))
                        break;
        }
        ck_assert_uint_eq(info.holders, 0);
        ck_assert_msg(!peer_closed(cl, 50), "the registration was dropped");
        ck_assert_int_eq(sn_port_take_sockets(p, &t, 1, &info), 1);
        ck_assert_uint_eq(t.key, 41);
        ck_assert_int_eq(recv(t.fd, &b, 1, 0), 1);
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        ck_assert_int_eq(sn_socket_close(c, t.fd), 0);
        ck_assert(peer_closed(cl, 2000));
        sn_port_close(p);
        sn_conn_close(c);
        close(cl);
        expect_user_clean();
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        manager_stop(&m);
        test_daemon_start(&D, NULL); /* for the fixture */
}

START_TEST(test_holder_dies_during_a_store_restart)
{
        holder_dies_while_daemon_down(false);
}
END_TEST

START_TEST(test_holder_dies_during_a_crash)
{
        holder_dies_while_daemon_down(true);
}
END_TEST

/* ---- malformed and misplaced requests ----------------------------------------------------- */

static void raw_linger(int fd, uint32_t id, uint32_t port, uint32_t ms, uint16_t want_type,
                       uint32_t want_status)
{
        uint8_t buf[64];
        struct snw_port_linger lg = { .port = port, .linger_ms = ms };

        snw_port_linger_encode(sn_msg_begin(buf, SN_MSG_PORT_LINGER, id, 0, 0, 0, 0), &lg);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_LINGER, 0, 0), NULL, 0);
        expect_reply(fd, want_type, id, want_status);
}

/* Handshakes: the version is the highest both speak; none in common is refused. */
static void hello_version(uint16_t vmin, uint16_t vmax, int want)
{
        struct snw_hello h = { .magic = SN_PROTO_MAGIC, .version_min = vmin, .version_max = vmax };
        struct snw_hello_reply rep;
        const struct sn_msg_desc *d;
        struct snw_header hd;
        uint8_t buf[256];
        int fd = raw_connect(D.path);
        ssize_t n;

        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &h);
        raw_send(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &hd, &d), 0);
        if (want < 0) {
                ck_assert_uint_eq(hd.type, SN_MSG_ERROR);
                ck_assert_uint_eq(hd.status, EPROTONOSUPPORT);
        } else {
                ck_assert_uint_eq(hd.type, SN_MSG_HELLO_REPLY);
                snw_hello_reply_decode(sn_msg_body(buf), &rep);
                ck_assert_int_eq(rep.version, want);
        }
        close(fd);
}

START_TEST(test_malformed_handoff_requests)
{
        int baseline = test_daemon_fds(&D), fd, v1, other, pair[2];
        uint32_t named, priv, foreign;
        uint8_t buf[64];

        hello_version(1, 2, 2);
        hello_version(2, 2, 2);
        hello_version(1, 1, 1);
        hello_version(2, 9, 3);
        hello_version(3, 9, 3);
        hello_version(4, 9, -1);
        hello_version(2, 1, -1);
        hello_version(0, 0, -1);

        fd = raw_hello2(D.path);
        named = raw_port_create(fd, 2, "mal");
        priv = raw_port_create(fd, 3, NULL);
        other = raw_hello2(D.path);
        foreign = raw_port_create(other, 2, NULL);
        /* Linger: a private port cannot, an unknown or another connection's port is EBADF, over
         * the limit EDQUOT; the time in force is unchanged by a refusal. */
        raw_linger(fd, 4, priv, 10, SN_MSG_PORT_LINGER_REPLY, EINVAL);
        raw_linger(fd, 5, foreign, 10, SN_MSG_PORT_LINGER_REPLY, EBADF);
        raw_linger(fd, 6, named, UINT32_MAX, SN_MSG_PORT_LINGER_REPLY, EDQUOT);
        raw_linger(fd, 7, named, 0, SN_MSG_PORT_LINGER_REPLY, 0);
        /* Take: another connection's port is EBADF. */
        raw_take_send(fd, 8, foreign, 1);
        expect_reply(fd, SN_MSG_PORT_TAKE_REPLY, 8, EBADF);
        /* A PORT_TAKE carrying descriptors: refused, the descriptors closed, no reply with any. */
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
        {
                struct snw_port_take tk = { .port = named, .max = 1 };

                snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, 9, 0, 2, 0, 0), &tk);
                raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), pair, 2);
                expect_reply(fd, SN_MSG_ERROR, 9, EBADMSG);
        }
        close(pair[0]);
        close(pair[1]);
        status_works(fd, 10);
        /* Version 1: neither request exists; the connection goes on. */
        v1 = raw_hello(D.path);
        raw_linger(v1, 2, 1, 10, SN_MSG_ERROR, EOPNOTSUPP);
        status_works(v1, 3);
        close(v1);
        close(other);
        close(fd);
        test_daemon_finish(&D, baseline);
        D.pid = 0;
}
END_TEST

/* ---- concurrent takes on one connection --------------------------------------------------- */

struct taker {
        sn_port_t *port;
        sn_taken_socket_t t[64];
        int n;
};

static void *take_thread(void *arg)
{
        struct taker *k = arg;
        int r;

        /* Small batches, so that the threads' replies (with descriptors) interleave. */
        while ((r = sn_port_take_sockets(k->port, k->t + k->n, SN_MIN(3, 64 - k->n), NULL)) > 0)
                k->n += r;
        return r < 0 ? (void *)1 : NULL;
}

/* Several threads take from one port over one connection while another dequeues: each
 * descriptor reaches the thread whose request it answers, every registration is taken once,
 * and none is left open in the process afterwards. */
START_TEST(test_concurrent_takes_one_connection)
{
        enum { N = 60, T = 4 };
        int cl[N], sv[N], before, baseline = test_daemon_fds(&D);
        static struct taker k[T];
        static bool seen[N];
        pthread_t th[T];
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_t e[8];
        int total = 0;

        socket_pairs(cl, sv, N);
        predecessor("many-threads", 30000, sv, N, 0, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL);
        for (int i = 0; i < N; i++)
                close(sv[i]);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_open(c, "many-threads", &p), 0);
        before = own_fds();
        for (int i = 0; i < T; i++) {
                k[i] = (struct taker){ .port = p };
                ck_assert_int_eq(pthread_create(&th[i], NULL, take_thread, &k[i]), 0);
        }
        for (int i = 0; i < 20; i++)
                ck_assert_int_ge(sn_port_dequeue(p, e, 8, 0), -ETIMEDOUT);
        for (int i = 0; i < T; i++) {
                void *ret;

                ck_assert_int_eq(pthread_join(th[i], &ret), 0);
                ck_assert_ptr_null(ret);
                for (int j = 0; j < k[i].n; j++) {
                        struct stat st;
                        uint64_t key = k[i].t[j].key;

                        ck_assert(key < N && !seen[key]);
                        seen[key] = true;
                        ck_assert_int_eq(fstat(k[i].t[j].fd, &st), 0);
                        ck_assert_int_eq(k[i].t[j].previous_fd, sv[key]);
                        ck_assert_int_eq(sn_socket_close(c, k[i].t[j].fd), 0);
                }
                total += k[i].n;
        }
        ck_assert_int_eq(total, N);
        ck_assert_int_eq(own_fds(), before);
        for (int i = 0; i < N; i++) {
                ck_assert(peer_closed(cl[i], 2000));
                close(cl[i]);
        }
        ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 3000), baseline);
        expect_user_clean();
}
END_TEST

/*
 * The same hoard against a daemon that keeps its sessions in the descriptor store: the live
 * journal keeps every held socket in flight in its boxes, and a stop hands every descriptor
 * over the same way.  Descriptors a client hoards in flight (PORT_TAKE replies it never reads:
 * the one way a client can make the daemon's descriptors wait in a queue) count against the
 * same limit, so they can make the stop's handover fail: then every client of every user loses
 * its session at the restart, which the store is there to prevent.
 */
START_TEST(test_hoard_breaks_the_store_stop)
{
        enum { N = 100 };
        static int cl[N], sv[N];
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        sn_port_options_t o = { .linger_ms = 30000 };
        struct manager m;
        sn_registration_t r;
        sn_conn_t *v, *w;
        sn_port_t *pv, *pw;
        int vcl, vsv, fd, st, hoarded = 0;
        uint32_t port;
        unsigned states;

        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        if (!start_packaged_daemon_alone(NULL, mdir, &m)) {
                manager_stop(&m);
                rmdir(mdir);
                return;
        }

        /* Another user's session that the restart must keep. */
        tcp_pair(&vcl, &vsv);
        ck_assert_int_eq(sn_conn_open(D.path, &v), 0);
        ck_assert_int_eq(sn_port_create(v, 0, &pv), 0);
        r = (sn_registration_t){ .fd = vsv, .key = 5, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(pv, &r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r.result, 0);
        close(vsv);

        /* The hoarder, as above, until the daemon can send no more descriptors. */
        socket_pairs(cl, sv, N);
        ck_assert_int_eq(sn_conn_open(D.path, &w), 0);
        ck_assert_int_eq(sn_port_create_named_ex(w, "hoard", &o, &pw), 0);
        {
                static sn_registration_t rr[N];

                for (int i = 0; i < N; i++)
                        rr[i] = (sn_registration_t){ .fd = sv[i], .key = (uint64_t)i,
                                                     .op = SN_OP_ENABLE,
                                                     .filter = SN_REGISTER_EVENT_IN,
                                                     .trigger = SN_TRIGGER_LEVEL };
                ck_assert_int_eq(sn_port_process(pw, rr, N, NULL, 0, 0), 0);
                for (int i = 0; i < N; i++)
                        close(sv[i]);
        }
        sn_port_close(pw);
        sn_conn_close(w);
        fd = raw_hello2(D.path);
        port = raw_port_open(fd, 10, "hoard");
        for (uint32_t id = 11; hoarded < 8;) {
                uint8_t buf[512];
                struct snw_port port_body = { .port = port };
                long long t0 = now_ms();
                char name[16];
                uint8_t *q;

                raw_take_send(fd, id++, port, N);
                snprintf(name, sizeof(name), "mark%d", hoarded);
                raw_mark(fd, v, id++, name); /* the take was handled */
                if (ownerless_of(v, "hoard") != 0)
                        break; /* refused: the daemon is at its limit */
                hoarded++;
                snw_port_encode(sn_msg_begin(buf, SN_MSG_PORT_CLOSE, id++, 0, 0, 0, 0),
                                &port_body);
                raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_CLOSE, 0, 0), NULL, 0);
                q = sn_msg_begin(buf, SN_MSG_PORT_OPEN, id++, 0, 0, 5, 0);
                memcpy(q, "hoard", 5);
                raw_send(fd, buf, (size_t)(q - buf) + 5, NULL, 0);
                while (ownerless_of(v, "hoard") != N)
                        ck_assert(now_ms() - t0 < test_timeout_ms(5000));
        }
        ck_assert_int_ge(hoarded, 1);

        /* The stop: everything must go to the store. */
        ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        states = manager_count(&m, "snstate");
        manager_start_daemon(&m, &D, NULL);
        close(fd);
        /* The handover itself may fail (the kernel refuses more descriptors in flight): then
         * the daemon leaves its live store, complete, and the next start restores from it as
         * after a crash.  Either way the other user's session goes on. */
        if (states != 1)
                fprintf(stderr, "test-linger-attack: the stop left the live store (no state)\n");
        ck_assert_int_eq(send(vcl, "s", 1, 0), 1);
        {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(pv, &e, 1, 2000), 1);
                ck_assert_uint_eq(e.key, 5);
        }
        sn_port_close(pv);
        sn_conn_close(v);
        for (int i = 0; i < N; i++)
                close(cl[i]);
        close(vcl);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        manager_stop(&m);
        test_daemon_start(&D, NULL); /* for the fixture */
}
END_TEST

/*
 * Without any hoard: a daemon without CAP_SYS_RESOURCE (as packaged) that holds more than about
 * half of its RLIMIT_NOFILE in descriptors (several users' sockets).  The live journal keeps
 * them all in flight in its boxes, and the stop's handover sends them all again, 253 at a
 * time: twice the held descriptors in flight, over the limit after the first batch, and the
 * handover fails (the same ETOOMANYREFS).  Not a handoff bug (issue 13's store), found on the
 * way: the hoard above only gets there with fewer sockets.  The daemon then leaves its live
 * store for the next start, and no session may be lost.
 */
START_TEST(test_store_stop_with_half_the_limit_held)
{
        enum { N = 260 };
        static int cl[N], sv[N];
        static sn_registration_t rr[N];
        char mdir[] = "/tmp/sn-manager-XXXXXX";
        struct manager m;
        sn_conn_t *v;
        sn_port_t *pv;
        unsigned states;
        int st;

        ck_assert_ptr_nonnull(mkdtemp(mdir));
        manager_start(&m, mdir, 64);
        /* The per-user socket quota (half the capacity by default) stands in for several
         * users that together hold more than half of the descriptor limit. */
        if (!start_packaged_daemon_alone(
                    (const char *const[]){ "--max-sockets-per-user=290", NULL }, mdir, &m)) {
                manager_stop(&m);
                rmdir(mdir);
                return;
        }
        socket_pairs(cl, sv, N);
        ck_assert_int_eq(sn_conn_open(D.path, &v), 0);
        ck_assert_int_eq(sn_port_create(v, 0, &pv), 0);
        for (int i = 0; i < N; i++)
                rr[i] = (sn_registration_t){ .fd = sv[i], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                             .filter = SN_REGISTER_EVENT_IN,
                                             .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(pv, rr, N, NULL, 0, 0), 0);
        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(rr[i].result, 0);
                close(sv[i]);
        }
        usleep(200 * 1000);
        ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
        states = manager_count(&m, "snstate");
        manager_start_daemon(&m, &D, NULL);
        /* As above: a handover or the live store, and every registration goes on. */
        if (states != 1)
                fprintf(stderr, "test-linger-attack: the stop left the live store (no state)\n");
        {
                static bool seen[N];
                int want = 0;

                for (int i = 0; i < N; i += 37, want++)
                        ck_assert_int_eq(send(cl[i], "s", 1, 0), 1);
                /* Level-triggered and unread: each reports until all were seen. */
                for (int round = 0; want && round < 4 * N; round++) {
                        sn_entry_t e[16];
                        int n = sn_port_dequeue(pv, e, 16, 2000);

                        ck_assert_int_gt(n, 0);
                        for (int k = 0; k < n; k++) {
                                ck_assert(e[k].key < N && e[k].key % 37 == 0);
                                if (!seen[e[k].key]) {
                                        seen[e[k].key] = true;
                                        want--;
                                }
                        }
                }
                ck_assert_int_eq(want, 0);
        }
        ck_assert(!peer_closed(cl[N - 1], 50));
        sn_port_close(pv);
        sn_conn_close(v);
        for (int i = 0; i < N; i++)
                close(cl[i]);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        manager_stop(&m);
        test_daemon_start(&D, NULL); /* for the fixture */
}
END_TEST

int main(void)
{
        Suite *s = suite_create("linger-attack");
        TCase *tc = tcase_create("attack");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_stop_while_lingering_frees_everything);
        tcase_add_test(tc, test_take_huge_and_zero_max);
        tcase_add_test(tc, test_take_with_a_full_descriptor_table);
        tcase_add_test(tc, test_linger_zero_after_reopen_closes);
        tcase_add_test(tc, test_linger_zero_by_second_holder);
        tcase_add_test(tc, test_remove_ownerless_by_other_holder);
        tcase_add_test(tc, test_socket_close_of_others_registrations);
        tcase_add_test(tc, test_take_when_replies_are_queued);
        tcase_add_test(tc, test_take_when_socket_is_full);
        tcase_add_test(tc, test_edge_duplicates_accounted_through_reexec);
        tcase_add_test(tc, test_edge_duplicates_accounted_through_crash);
        tcase_add_test(tc, test_handleless_creator_through_reexec);
        tcase_add_test(tc, test_handleless_creator_through_crash);
        tcase_add_test(tc, test_take_while_descriptors_are_hoarded);
        tcase_add_test(tc, test_holder_dies_during_a_store_restart);
        tcase_add_test(tc, test_holder_dies_during_a_crash);
        tcase_add_test(tc, test_malformed_handoff_requests);
        tcase_add_test(tc, test_concurrent_takes_one_connection);
        tcase_add_test(tc, test_hoard_breaks_the_store_stop);
        tcase_add_test(tc, test_store_stop_with_half_the_limit_held);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * raw.c - the raw protocol client of the integration tests (see raw.h).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <check.h>

#include "common/fdmsg.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

int raw_connect(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return fd;
}

void raw_send(int fd, const uint8_t *buf, size_t len, const int *fds, unsigned nfds)
{
        ck_assert_int_eq(sn__fdmsg_send(fd, buf, len, fds, nfds, 0), 0);
}

ssize_t raw_recv(int fd, uint8_t *buf, size_t cap)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int fds[SN_PROTO_MAX_FDS];
        unsigned nfds;
        ssize_t n;

        /* 2 s, longer on a slow machine or under valgrind (CK_TIMEOUT_MULTIPLIER). */
        ck_assert_int_eq(poll(&p, 1, (int)test_timeout_ms(2000)), 1);
        n = sn__fdmsg_recv(fd, buf, cap, fds, 0, &nfds, 0);
        ck_assert_uint_eq(nfds, 0);
        return n;
}

void expect_reply(int fd, uint16_t type, uint32_t id, uint32_t status)
{
        uint8_t buf[4096];
        ssize_t n = raw_recv(fd, buf, sizeof(buf));
        const struct sn_msg_desc *d;
        struct snw_header h;

        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, type);
        ck_assert_uint_eq(h.id, id);
        ck_assert_uint_eq(h.status, status);
}

int raw_hello(const char *path)
{
        int fd = raw_connect(path);
        uint8_t buf[64];
        struct snw_hello hello = { .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 1 };

        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &hello);
        raw_send(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
        expect_reply(fd, SN_MSG_HELLO_REPLY, 1, 0);
        return fd;
}

void status_works(int fd, uint32_t id)
{
        uint8_t buf[SN_HEADER_SIZE];

        sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
        raw_send(fd, buf, sizeof(buf), NULL, 0);
        expect_reply(fd, SN_MSG_STATUS_REPLY, id, 0);
}

uint32_t raw_port_create(int fd, uint32_t id, const char *name)
{
        return raw_port_create_ex(fd, id, name, 0);
}

uint32_t raw_port_create_ex(int fd, uint32_t id, const char *name, uint32_t concurrency)
{
        uint8_t buf[512];
        size_t len = name ? strlen(name) : 0;
        struct snw_port_create body = { .concurrency = concurrency };
        struct snw_port_create_reply rep;
        const struct sn_msg_desc *d;
        struct snw_header h;
        uint8_t *p = snw_port_create_encode(
                sn_msg_begin(buf, SN_MSG_PORT_CREATE, id, 0, 0, (uint32_t)len, 0), &body);
        ssize_t n;

        memcpy(p, name ? name : "", len);
        raw_send(fd, buf, (size_t)(p - buf) + len, NULL, 0);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PORT_CREATE_REPLY);
        ck_assert_uint_eq(h.id, id);
        ck_assert_uint_eq(h.status, 0);
        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
        if (concurrency)
                ck_assert_uint_eq(rep.concurrency, concurrency);
        return rep.port;
}

uint32_t raw_port_open(int fd, uint32_t id, const char *name)
{
        uint8_t buf[512];
        size_t len = strlen(name);
        struct snw_port_create_reply rep;
        const struct sn_msg_desc *d;
        struct snw_header h;
        uint8_t *p = sn_msg_begin(buf, SN_MSG_PORT_OPEN, id, 0, 0, (uint32_t)len, 0);
        ssize_t n;

        memcpy(p, name, len);
        raw_send(fd, buf, (size_t)(p - buf) + len, NULL, 0);
        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PORT_OPEN_REPLY);
        ck_assert_uint_eq(h.status, 0);
        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
        return rep.port;
}

uint32_t raw_port_take(int fd, uint32_t id, uint32_t port, uint32_t max, int *fds, uint64_t *keys,
                       uint32_t *ret_remaining)
{
        uint8_t buf[16384];
        struct snw_port_take in = { .port = port, .max = max };
        struct snw_port_take_reply rep;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        const struct sn_msg_desc *d;
        struct snw_header h;
        const uint8_t *it;
        unsigned nfds = 0;
        ssize_t n;

        snw_port_take_encode(sn_msg_begin(buf, SN_MSG_PORT_TAKE, id, 0, 0, 0, 0), &in);
        raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_TAKE, 0, 0), NULL, 0);
        ck_assert_int_eq(poll(&p, 1, (int)test_timeout_ms(2000)), 1);
        n = sn__fdmsg_recv(fd, buf, sizeof(buf), fds, SN_PROTO_MAX_FDS, &nfds, 0);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PORT_TAKE_REPLY);
        ck_assert_uint_eq(h.id, id);
        ck_assert_uint_eq(h.status, 0);
        ck_assert_uint_eq(h.count, nfds);
        ck_assert_uint_eq(h.nfds, nfds);
        it = snw_port_take_reply_decode(sn_msg_body(buf), &rep);
        for (uint32_t i = 0; i < h.count; i++) {
                struct snw_registration r;

                it = snw_registration_decode(it, &r);
                ck_assert_uint_eq(r.fd_index, i);
                keys[i] = r.key;
        }
        *ret_remaining = rep.remaining;
        return h.count;
}

int raw_hello_version(const char *path, uint16_t version)
{
        struct snw_hello h = { .magic = SN_PROTO_MAGIC, .version_min = 1,
                               .version_max = version };
        struct snw_hello_reply rep;
        uint8_t buf[256];
        int fd = raw_connect(path);

        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &h);
        raw_send(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
        ck_assert_int_eq(raw_recv(fd, buf, sizeof(buf)), sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0));
        snw_hello_reply_decode(sn_msg_body(buf), &rep);
        ck_assert_uint_eq(rep.version, version);
        ck_assert_uint_eq(rep.transport, SN_PROTO_TRANSPORT_SOCKET);
        return fd;
}

int raw_hello2(const char *path)
{
        return raw_hello_version(path, 2);
}

void test_daemon_finish(struct test_daemon *d, int baseline)
{
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_t e;

        /* Everything the test closed is gone first (the daemon notices closes in its loop). */
        ck_assert_int_eq(test_daemon_wait_fds(d, baseline, 3000), baseline);
        ck_assert_int_eq(sn_conn_open(d->path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(sn_port_post(p, 9, 1, 2), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.key, 9);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_wait_fds(d, baseline, 3000), baseline);
        ck_assert_int_eq(test_daemon_stop(d), 0);
}

void raw_send_enables(int fd, uint32_t id, uint32_t port, const int *socks, unsigned n)
{
        uint8_t buf[512];
        struct snw_process body = { .port = port };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, (uint16_t)n,
                                                     (uint16_t)n, 0),
                                        &body);

        ck_assert_uint_le(SN_HEADER_SIZE + SN_WIRE_SIZE_process +
                          (size_t)n * SN_WIRE_SIZE_registration, sizeof(buf));
        for (unsigned i = 0; i < n; i++) {
                struct snw_registration r = { .key = 7 + i, .op = SN_OP_ENABLE,
                                              .filter = SN_REGISTER_EVENT_IN,
                                              .trigger = SN_TRIGGER_LEVEL, .fd_index = i };

                p = snw_registration_encode(p, &r);
        }
        raw_send(fd, buf, (size_t)(p - buf), socks, n);
}

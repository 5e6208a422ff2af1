/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-epctl.c - the daemon's epoll_ctl calls, batched through io_uring or made one by one,
 * give a client the same results, against a real socknotifyd in three modes: the default
 * (io_uring on this machine), --no-io-uring, and io_uring refused at run time (started under
 * tests/helpers/no-io-uring, whose seccomp filter fails io_uring_setup with EPERM, as a
 * systemd unit's SystemCallFilter= may).  Each case runs in every mode: STATUS names the path
 * in use; registration, one-shot re-enable, disable, remove, the ENABLE errors, several
 * operations on one socket in one call, and EDGE's rule 15 behave alike.  The configuration
 * file's "no-io-uring" key chooses the plain path too.  Each case ends with
 * the daemon's descriptor count back to its baseline and a clean exit.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>
#include <linux/io_uring.h>

#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"

enum mode { MODE_DEFAULT, MODE_NO_IO_URING, MODE_REFUSED, NMODES };

#define NSOCK 64

static struct test_daemon D;
static sn_conn_t *C;
static sn_port_t *P;
static int baseline;
static int pairs[NSOCK][2]; /* [0]: registered, [1]: its peer, written to */

static void start(enum mode m)
{
        static const char *const no_uring[] = { "--no-io-uring", NULL };
        char wrapper[1024];

        if (m == MODE_REFUSED) {
                const char *builddir = getenv("SN_BUILDDIR");
                const char *outer = getenv("SN_TEST_DAEMON_WRAPPER");

                /* The filter goes first: a wrapper (valgrind) runs under it too. */
                snprintf(wrapper, sizeof(wrapper), "%s/tests/helpers/no-io-uring%s%s",
                         builddir ? builddir : SN_BUILDDIR, outer ? " " : "", outer ? outer : "");
                ck_assert_int_eq(setenv("SN_TEST_DAEMON_WRAPPER", wrapper, 1), 0);
        }
        test_daemon_start(&D, m == MODE_NO_IO_URING ? no_uring : NULL);
        baseline = test_daemon_fds(&D);
        ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &P), 0);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]), 0);
}

static void finish(void)
{
        ck_assert_int_eq(sn_port_close(P), 0);
        P = NULL;
        C = sn_conn_close(C);
        for (int i = 0; i < NSOCK; i++) {
                close(pairs[i][0]);
                close(pairs[i][1]);
        }
        ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 2000), baseline);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}

/* The status document's epoll_ctl object (the caller decrefs it). */
static json_t *epctl_status(void)
{
        char *text = NULL;
        json_t *doc, *o;

        ck_assert_int_eq(sn_conn_status(C, &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        o = json_object_get(doc, "epoll_ctl");
        ck_assert_ptr_nonnull(o);
        json_incref(o);
        json_decref(doc);
        return o;
}

static long long num(json_t *o, const char *key)
{
        return json_integer_value(json_object_get(o, key));
}

static sn_registration_t reg(int fd, uint8_t op, uint16_t filter, uint8_t trigger, uint64_t key)
{
        return (sn_registration_t){ .fd = fd, .op = op, .filter = filter, .trigger = trigger,
                                    .key = key, .result = 12345 };
}

/* Applies n registrations in one call, taking no entries; every result must be want[i]. */
static void apply(sn_registration_t *r, uint32_t n, const int *want)
{
        ck_assert_int_eq(sn_port_process(P, r, n, NULL, 0, 0), 0);
        for (uint32_t i = 0; i < n; i++)
                ck_assert_msg(r[i].result == (want ? want[i] : 0), "item %u: result %d, want %d",
                              i, r[i].result, want ? want[i] : 0);
}

/* Dequeues until want entries arrived (each key of mask once, with events ev), then checks that
 * nothing more is there. */
static void expect_keys(const bool *mask, int want, uint32_t ev)
{
        sn_entry_t e[NSOCK + 1];
        bool seen[NSOCK] = { 0 };
        long long deadline = now_ms() + test_timeout_ms(5000);
        int got = 0;

        while (got < want) {
                int n = sn_port_dequeue(P, e, NSOCK + 1, 200);

                ck_assert_msg(n > 0 || n == -ETIMEDOUT, "dequeue: %d", n);
                for (int i = 0; i < n; i++) {
                        ck_assert_uint_lt(e[i].key, NSOCK);
                        ck_assert_msg(mask[e[i].key], "key %llu reported",
                                      (unsigned long long)e[i].key);
                        ck_assert_msg(!seen[e[i].key], "key %llu twice",
                                      (unsigned long long)e[i].key);
                        ck_assert_uint_eq(e[i].events, ev);
                        seen[e[i].key] = true;
                        got++;
                }
                ck_assert_msg(now_ms() < deadline, "%d of %d entries", got, want);
        }
        ck_assert_int_eq(sn_port_dequeue(P, e, NSOCK + 1, 0), -ETIMEDOUT);
}

static void register_all(uint8_t trigger)
{
        sn_registration_t r[NSOCK];

        for (int i = 0; i < NSOCK; i++)
                r[i] = reg(pairs[i][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, trigger,
                           (uint64_t)i);
        apply(r, NSOCK, NULL);
}

static void make_readable(int i)
{
        ck_assert_int_eq(write(pairs[i][1], "x", 1), 1);
}

/* Why the default daemon of this build on this machine makes its calls one by one: "" when it
 * batches (built with liburing, and the kernel lets this process make an io_uring). */
static const char *default_plain_reason(void)
{
#ifdef HAVE_LIBURING
        struct io_uring_params p = { 0 };
        long fd = syscall(__NR_io_uring_setup, 4, &p);

        if (fd < 0)
                return "refused";
        close((int)fd);
        return "";
#else
        return "not-built";
#endif
}

/* STATUS names the path of the mode, and a call's registrations are counted on it. */
START_TEST(test_status_path)
{
        json_t *o;

        start((enum mode)_i);
        register_all(SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT);
        o = epctl_status();
        switch (_i) {
        case MODE_DEFAULT:
                /* Where the kernel allows io_uring (kernel.io_uring_disabled = 0, no seccomp
                 * filter), a build with liburing uses it. */
                /* null on the io_uring path: no reason. */
                if (*default_plain_reason()) {
                        ck_assert_str_eq(json_string_value(json_object_get(o, "plain_reason")),
                                         default_plain_reason());
                        break;
                }
                ck_assert(json_is_null(json_object_get(o, "plain_reason")));
                ck_assert_str_eq(json_string_value(json_object_get(o, "path")), "io_uring");
                if (json_object_get(o, "batches")) { /* root only */
                        ck_assert_int_ge(num(o, "batches"), 1);
                        ck_assert_int_ge(num(o, "operations"), NSOCK);
                        ck_assert_int_eq(num(o, "fallbacks"), 0);
                }
                break;
        case MODE_NO_IO_URING:
        case MODE_REFUSED:
                ck_assert_str_eq(json_string_value(json_object_get(o, "path")), "epoll_ctl");
                ck_assert_str_eq(json_string_value(json_object_get(o, "plain_reason")),
                                 _i == MODE_REFUSED ? "refused" : "disabled");
                if (json_object_get(o, "batches")) {
                        ck_assert_int_eq(num(o, "batches"), 0);
                        ck_assert_int_eq(num(o, "operations"), 0);
                        ck_assert_int_ge(num(o, "plain_operations"), NSOCK);
                }
                break;
        }
        json_decref(o);
        finish();
}
END_TEST

/* ONESHOT: reported once, silent until re-enabled, then reported again as the socket is still
 * readable: every re-enable of one call took effect before the call returned. */
START_TEST(test_oneshot_reenable)
{
        bool all[NSOCK];
        sn_registration_t r[NSOCK];

        start((enum mode)_i);
        for (int i = 0; i < NSOCK; i++)
                all[i] = true;
        register_all(SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT);
        for (int i = 0; i < NSOCK; i++)
                make_readable(i);
        expect_keys(all, NSOCK, SN_EVENT_IN);
        for (int round = 0; round < 3; round++) {
                for (int i = 0; i < NSOCK; i++)
                        r[i] = reg(pairs[i][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN,
                                   SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, (uint64_t)i);
                apply(r, NSOCK, NULL);
                expect_keys(all, NSOCK, SN_EVENT_IN);
        }
        finish();
}
END_TEST

/* DISABLE takes a registration out (nothing reported), REMOVE queues its REMOVE entry once,
 * and both in one call with others. */
START_TEST(test_disable_remove)
{
        bool half[NSOCK], none[NSOCK] = { 0 };
        sn_registration_t r[NSOCK];
        int want[NSOCK];

        start((enum mode)_i);
        register_all(SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT);
        for (int i = 0; i < NSOCK; i++) {
                half[i] = i % 2 == 0;
                r[i] = reg(pairs[i][0], i % 2 ? SN_OP_DISABLE : SN_OP_NONE, 0, 0, (uint64_t)i);
        }
        apply(r, NSOCK, NULL);
        for (int i = 0; i < NSOCK; i++)
                make_readable(i);
        expect_keys(half, NSOCK / 2, SN_EVENT_IN);
        /* Remove every socket: the enabled and the disabled ones alike get their entry. */
        for (int i = 0; i < NSOCK; i++)
                r[i] = reg(pairs[i][0], SN_OP_REMOVE, 0, 0, (uint64_t)i);
        apply(r, NSOCK, NULL);
        {
                bool all[NSOCK];

                for (int i = 0; i < NSOCK; i++)
                        all[i] = true;
                expect_keys(all, NSOCK, SN_EVENT_REMOVE);
        }
        /* Gone: DISABLE and REMOVE find nothing. */
        for (int i = 0; i < NSOCK; i++) {
                r[i] = reg(pairs[i][0], i % 2 ? SN_OP_DISABLE : SN_OP_REMOVE, 0, 0, (uint64_t)i);
                want[i] = -ENOENT;
        }
        apply(r, NSOCK, want);
        expect_keys(none, 0, 0);
        finish();
}
END_TEST

/* The ENABLE errors, among good items of the same call, and the good ones still work. */
START_TEST(test_enable_errors)
{
        sn_port_t *other = NULL;
        int pipefd[2];
        sn_registration_t r[6];
        bool mask[NSOCK] = { 0 };
        int want[6] = { 0, -EINVAL, -ENOTSOCK, -EEXIST, -ENOENT, 0 };

        start((enum mode)_i);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        ck_assert_int_eq(sn_port_create(C, 0, &other), 0);
        r[0] = reg(pairs[3][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL, 3);
        ck_assert_int_eq(sn_port_process(other, r, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(r[0].result, 0);

        r[0] = reg(pairs[0][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN,
                   SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, 0);
        r[1] = reg(pairs[1][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN,
                   SN_TRIGGER_LEVEL | SN_TRIGGER_EDGE, 1); /* row 34 */
        r[2] = reg(pipefd[0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL, 2);
        r[3] = reg(pairs[3][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, SN_TRIGGER_LEVEL, 3);
        r[4] = reg(pairs[4][0], SN_OP_DISABLE, 0, 0, 4);
        r[5] = reg(pairs[5][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN,
                   SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, 5);
        apply(r, 6, want);
        mask[0] = mask[5] = true;
        make_readable(0);
        make_readable(1);
        make_readable(4);
        make_readable(5);
        expect_keys(mask, 2, SN_EVENT_IN);
        ck_assert_int_eq(sn_port_close(other), 0);
        close(pipefd[0]);
        close(pipefd[1]);
        finish();
}
END_TEST

/* Several operations on one socket in one call (each after the one before: the batch is
 * flushed before a registration's second epoll_ctl): the last one holds. */
START_TEST(test_same_socket_twice)
{
        const uint8_t once = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT;
        sn_registration_t r[9];
        bool mask[NSOCK] = { 0 };
        int want[9] = { 0, 0, 0, 0, 0, 0, 0, 0, 0 };

        start((enum mode)_i);
        for (int i = 0; i < 4; i++)
                make_readable(i);
        /* 0: enabled, disabled, enabled again: reported. */
        r[0] = reg(pairs[0][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 0);
        r[1] = reg(pairs[0][0], SN_OP_DISABLE, 0, 0, 0);
        r[2] = reg(pairs[0][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 0);
        /* 1: enabled for OUT only, then for IN (rule 4: the last filter, the first key). */
        r[3] = reg(pairs[1][0], SN_OP_ENABLE, SN_REGISTER_EVENT_OUT, once, 1);
        r[4] = reg(pairs[1][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 9);
        /* 2: enabled, then disabled: silent. */
        r[5] = reg(pairs[2][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 2);
        r[6] = reg(pairs[2][0], SN_OP_DISABLE, 0, 0, 2);
        /* 3: enabled persistent and for OUT, re-enabled as an IN one-shot. */
        r[7] = reg(pairs[3][0], SN_OP_ENABLE, SN_REGISTER_EVENT_OUT, SN_TRIGGER_LEVEL, 3);
        r[8] = reg(pairs[3][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 3);
        apply(r, 9, want);
        mask[0] = mask[1] = mask[3] = true;
        expect_keys(mask, 3, SN_EVENT_IN);
        finish();
}
END_TEST

/* EDGE (rule 15): what holds at ENABLE is not reported, a new arrival is, also when the ADD
 * was queued. */
START_TEST(test_edge_enable)
{
        bool all[NSOCK];

        start((enum mode)_i);
        for (int i = 0; i < NSOCK; i++) {
                all[i] = true;
                make_readable(i);
        }
        register_all(SN_TRIGGER_EDGE);
        expect_keys(all, 0, 0);
        for (int i = 0; i < NSOCK; i++)
                make_readable(i);
        expect_keys(all, NSOCK, SN_EVENT_IN);
        finish();
}
END_TEST

/* Fills the kernel's budget of wake-up paths of the socket fd (fs/eventpoll.c: at most 500 of
 * depth 2): epoll instances that each watch fd, all of them watched by one more.  The daemon's
 * EPOLL_CTL_ADD of the same socket (its copy is the same open file) would be path 501, through
 * the port's epoll instance and the daemon's loop, which watches it: the kernel refuses it
 * with EINVAL.  Returns how many descriptors it opened into fds (the last one is the outer). */
static int fill_paths(int fd, int *fds, int max)
{
        struct epoll_event ev = { .events = EPOLLIN };
        int outer = epoll_create1(EPOLL_CLOEXEC), n = 0;

        ck_assert_int_ge(outer, 0);
        while (n < max - 1) {
                int in = epoll_create1(EPOLL_CLOEXEC);

                ck_assert_int_ge(in, 0);
                ck_assert_int_eq(epoll_ctl(in, EPOLL_CTL_ADD, fd, &ev), 0);
                if (epoll_ctl(outer, EPOLL_CTL_ADD, in, &ev) < 0) {
                        ck_assert_int_eq(errno, EINVAL); /* the budget is full */
                        close(in);
                        break;
                }
                fds[n++] = in;
        }
        ck_assert_int_lt(n, max - 1);
        fds[n++] = outer;
        return n;
}

struct waiter {
        pthread_t thread;
        sn_entry_t e;
        int n;
};

static void *wait_one(void *arg)
{
        struct waiter *w = arg;

        w->n = sn_port_dequeue(P, &w->e, 1, (uint32_t)test_timeout_ms(60000));
        return NULL;
}

/* Starts w's dequeue on P and returns once the daemon has parked it: the daemon's loop then
 * watches the port's epoll instance, which makes the kernel count the paths at each ADD on it
 * (a nested instance). */
static void park_waiter(struct waiter *w)
{
        long long deadline = now_ms() + test_timeout_ms(5000);

        ck_assert_int_eq(pthread_create(&w->thread, NULL, wait_one, w), 0);
        while (test_status_number(C, "waiters") < 1) {
                ck_assert_msg(now_ms() < deadline, "the dequeue never parked");
                usleep(2000);
        }
}

/* An ENABLE whose epoll_ctl the kernel refuses, for real (fill_paths()): the item's result is
 * that errno, queued or not; a registration that existed is left DISABLED (a DISABLE finds it),
 * one the ENABLE would have made is gone (a DISABLE does not); the other items of the call are
 * applied; once the paths are freed the same ENABLE succeeds and reports. */
START_TEST(test_enable_refused_by_kernel)
{
        const uint8_t once = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT;
        static int fds[1024];
        struct waiter w = { 0 };
        sn_registration_t r[3];
        bool mask[NSOCK] = { 0 };
        int n, want[3] = { -EINVAL, 0, -EINVAL };

        start((enum mode)_i);
        /* 0: registered, then disabled (out of epoll: its next ENABLE is an ADD). */
        r[0] = reg(pairs[0][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 0);
        apply(r, 1, NULL);
        r[0] = reg(pairs[0][0], SN_OP_DISABLE, 0, 0, 0);
        apply(r, 1, NULL);
        n = fill_paths(pairs[0][0], fds, 1024);
        /* 2: never registered, its budget filled too. */
        n += fill_paths(pairs[2][0], fds + n, 1024 - n);
        park_waiter(&w);
        r[0] = reg(pairs[0][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 0);
        r[1] = reg(pairs[1][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 1);
        r[2] = reg(pairs[2][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 2);
        apply(r, 3, want);
        /* The waiter goes with a posted packet. */
        ck_assert_int_eq(sn_port_post(P, 777, 1, 2), 0);
        ck_assert_int_eq(pthread_join(w.thread, NULL), 0);
        ck_assert_int_eq(w.n, 1);
        ck_assert_uint_eq(w.e.kind, SN_ENTRY_POSTED);
        ck_assert_uint_eq(w.e.key, 777);
        make_readable(0);
        make_readable(1);
        make_readable(2);
        mask[1] = true;
        expect_keys(mask, 1, SN_EVENT_IN);
        {
                int gone[2] = { 0, -ENOENT };

                r[0] = reg(pairs[0][0], SN_OP_DISABLE, 0, 0, 0); /* left DISABLED: found */
                r[1] = reg(pairs[2][0], SN_OP_DISABLE, 0, 0, 2); /* never made: not found */
                apply(r, 2, gone);
        }
        for (int i = 0; i < n; i++)
                close(fds[i]);
        r[0] = reg(pairs[0][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 0);
        r[1] = reg(pairs[2][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 2);
        apply(r, 2, NULL);
        mask[1] = false;
        mask[0] = mask[2] = true;
        expect_keys(mask, 2, SN_EVENT_IN);
        finish();
}
END_TEST

/* A refused ENABLE that would make a registration, then more items on the same socket in the
 * same call: each of them finds the socket unregistered, as it is once the ENABLE failed.  With
 * the ENABLE queued, the next item settled the batch on the registration it had looked up
 * before, which the failed ADD then freed under it (a use after free in the daemon: the DISABLE
 * answered 0 from freed memory). */
START_TEST(test_refused_enable_then_same_socket)
{
        const uint8_t once = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT;
        static int fds[1024];
        struct waiter w = { 0 };
        sn_registration_t r[5];
        int n, want[5] = { -EINVAL, -ENOENT, -EINVAL, -ENOENT, 0 };

        start((enum mode)_i);
        n = fill_paths(pairs[2][0], fds, 1024);
        park_waiter(&w);
        r[0] = reg(pairs[2][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 2);
        r[1] = reg(pairs[2][0], SN_OP_DISABLE, 0, 0, 2);
        r[2] = reg(pairs[2][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 2);
        r[3] = reg(pairs[2][0], SN_OP_REMOVE, 0, 0, 2);
        r[4] = reg(pairs[1][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 1);
        apply(r, 5, want);
        ck_assert_int_eq(sn_port_post(P, 777, 1, 2), 0);
        ck_assert_int_eq(pthread_join(w.thread, NULL), 0);
        ck_assert_int_eq(w.n, 1);
        ck_assert_uint_eq(w.e.key, 777);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        /* The daemon still serves, and the socket registers now. */
        r[0] = reg(pairs[2][0], SN_OP_ENABLE, SN_REGISTER_EVENT_IN, once, 2);
        apply(r, 1, NULL);
        {
                bool mask[NSOCK] = { 0 };

                make_readable(1);
                make_readable(2);
                mask[1] = mask[2] = true;
                expect_keys(mask, 2, SN_EVENT_IN);
        }
        finish();
}
END_TEST

/* The configuration file's "no-io-uring": true chooses the plain path as the option does, and a
 * value that is not a boolean is refused (--check-config exits 1). */
START_TEST(test_config_key)
{
        char conf[128], dir[] = "/tmp/test-epctl.XXXXXX";
        const char *args[] = { "--config", conf, NULL };
        json_t *o;
        FILE *f;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(conf, sizeof(conf), "%s/socknotifyd.json", dir);
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fputs(_i ? "{ \"no-io-uring\": 1 }\n" : "{ \"no-io-uring\": true }\n", f);
        ck_assert_int_eq(fclose(f), 0);
        if (_i) {
                char cmd[1024];
                const char *builddir = getenv("SN_BUILDDIR");

                snprintf(cmd, sizeof(cmd),
                         "%s/daemon/socknotifyd --check-config --config %s >/dev/null 2>&1",
                         builddir ? builddir : SN_BUILDDIR, conf);
                ck_assert_int_eq(WEXITSTATUS(system(cmd)), 1);
        } else {
                test_daemon_start(&D, args);
                baseline = test_daemon_fds(&D);
                ck_assert_int_eq(sn_conn_open(D.path, &C), 0);
                o = epctl_status();
                ck_assert_str_eq(json_string_value(json_object_get(o, "path")), "epoll_ctl");
                ck_assert_str_eq(json_string_value(json_object_get(o, "plain_reason")),
                                 "disabled");
                json_decref(o);
                C = sn_conn_close(C);
                ck_assert_int_eq(test_daemon_wait_fds(&D, baseline, 2000), baseline);
                ck_assert_int_eq(test_daemon_stop(&D), 0);
        }
        unlink(conf);
        rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("epctl");
        TCase *tc = tcase_create("modes");

        tcase_set_timeout(tc, 60);
        tcase_add_loop_test(tc, test_status_path, 0, NMODES);
        tcase_add_loop_test(tc, test_oneshot_reenable, 0, NMODES);
        tcase_add_loop_test(tc, test_disable_remove, 0, NMODES);
        tcase_add_loop_test(tc, test_enable_errors, 0, NMODES);
        tcase_add_loop_test(tc, test_same_socket_twice, 0, NMODES);
        tcase_add_loop_test(tc, test_edge_enable, 0, NMODES);
        tcase_add_loop_test(tc, test_enable_refused_by_kernel, 0, NMODES);
        tcase_add_loop_test(tc, test_refused_enable_then_same_socket, 0, NMODES);
        tcase_add_loop_test(tc, test_config_key, 0, 2);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return test_run_suite(suite());
}

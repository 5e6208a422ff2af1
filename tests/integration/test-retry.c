/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-retry.c - the one request a crash interrupts (issue 25): the daemon, restored from its
 * journal under a descriptor store (tests/helpers/manager.h), answers it with EIO, and the
 * library sends it again when applying it twice gives the same result.
 *
 * The daemon is crashed in the middle of a request by tests/helpers/crash-reply.c, preloaded
 * into it: SIGKILL just before the reply of one type leaves, so the request took effect and was
 * not answered.  The daemon that restores runs without it (the crash happens once), or with it
 * (every attempt crashes the daemon: the caller gets EIO after the bounded retries).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/manager.h"

static struct test_daemon D;
static struct manager M;
static char mdir[32];

/* The preload, and the reply type it crashes at (0: none) for the daemons started next. */
static void crash_env(unsigned type)
{
        const char *builddir = getenv("SN_BUILDDIR");
        char v[600];

        if (!type) {
                unsetenv("LD_PRELOAD");
                unsetenv("SN_TEST_CRASH_REPLY");
                return;
        }
        snprintf(v, sizeof(v), "%s/tests/helpers/.libs/libsncrash.so",
                 builddir ? builddir : SN_BUILDDIR);
        ck_assert_msg(access(v, R_OK) == 0, "%s is not built", v);
        setenv("LD_PRELOAD", v, 1);
        snprintf(v, sizeof(v), "%u", type);
        setenv("SN_TEST_CRASH_REPLY", v, 1);
        /* A daemon built with ASan wants libasan first; the preload comes before it. */
        if (!getenv("ASAN_OPTIONS") || !strstr(getenv("ASAN_OPTIONS"), "verify_asan_link_order")) {
                snprintf(v, sizeof(v), "%s%sverify_asan_link_order=0",
                         getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "",
                         getenv("ASAN_OPTIONS") ? ":" : "");
                setenv("ASAN_OPTIONS", v, 1);
        }
}

/* Whether these tests can run here: a daemon under a wrapper (valgrind) is not preloaded. */
static bool runnable(void)
{
        if (getenv("SN_TEST_DAEMON_WRAPPER")) {
                printf("SKIP: test-retry preloads libsncrash.so into socknotifyd, which a "
                       "wrapper ($SN_TEST_DAEMON_WRAPPER) would run instead\n");
                return false;
        }
        return true;
}

/* A daemon under the store that crashes at reply type `type`. */
static void start(unsigned type)
{
        snprintf(mdir, sizeof(mdir), "/tmp/sn-manager-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(mdir));
        setenv("FDSTORE", "64", 1);
        manager_start(&M, mdir, 64);
        crash_env(type);
        test_daemon_start(&D, NULL);
}

static void stop(void)
{
        crash_env(0);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        manager_stop(&M);
        rmdir(mdir);
        unsetenv("FDSTORE");
}

/* Until the manager has read every message the daemon sent it. */
static void store_drain(void)
{
        long long t0 = now_ms();

        for (;;) {
                int queued = 0;

                ck_assert_int_eq(ioctl(M.sock, FIONREAD, &queued), 0);
                if (!queued)
                        break;
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "the store is not read");
                usleep(1000);
        }
        pthread_mutex_lock(&M.lock);
        pthread_mutex_unlock(&M.lock);
}

/* The daemon is dead (reaped): the next one restores from the store, crashing at type (0:
 * never). */
static void restart(unsigned type)
{
        store_drain();
        crash_env(type);
        manager_start_daemon(&M, &D, NULL);
}

/* ---- a call made on a thread of its own while this one restarts the daemon --------------- */

struct call {
        int (*fn)(struct call *k);
        sn_conn_t *c;
        sn_port_t *p;
        sn_registration_t reg;
        int result;
        int done[2]; /* a pipe, written once the call returned */
};

static void *call_thread(void *arg)
{
        struct call *k = arg;

        k->result = k->fn(k);
        ck_assert_int_eq(write(k->done[1], "x", 1), 1);
        return NULL;
}

/*
 * Runs k->fn on a thread; each time the daemon dies meanwhile, starts the next one from the
 * store (crashing again at again_type, 0: never).  Returns how many times the daemon died.
 */
static int run_through_crashes(struct call *k, unsigned again_type)
{
        pthread_t t;
        int crashes = 0;
        int pidfd;

        ck_assert_int_eq(pipe2(k->done, O_CLOEXEC), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, call_thread, k), 0);
        for (;;) {
                struct pollfd pf[2] = { { .fd = k->done[0], .events = POLLIN },
                                        { .fd = -1, .events = POLLIN } };
                int st;

                /* The daemon's end as an event; valgrind knows no pidfd_open (ENOSYS): then
                 * its end is looked for every 10 ms. */
                pidfd = (int)syscall(SYS_pidfd_open, D.pid, 0);
                pf[1].fd = pidfd;
                if (pidfd >= 0) {
                        ck_assert_int_gt(poll(pf, 2, test_timeout_ms(20000)), 0);
                        close(pidfd);
                        if (pf[0].revents)
                                break;
                        ck_assert_int_eq(waitpid(D.pid, &st, 0), D.pid);
                } else {
                        long long end = now_ms() + test_timeout_ms(20000);
                        pid_t w = 0;

                        while (!w && poll(pf, 1, 10) <= 0) {
                                w = waitpid(D.pid, &st, WNOHANG);
                                ck_assert_msg(now_ms() < end, "neither an end nor a crash");
                        }
                        if (!w)
                                break;
                        ck_assert_int_eq(w, D.pid);
                }
                ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
                crashes++;
                ck_assert_int_le(crashes, 5);
                restart(again_type);
        }
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        close(k->done[0]);
        close(k->done[1]);
        return crashes;
}

static int do_linger(struct call *k)
{
        return sn_port_set_linger(k->p, 60000);
}

static int do_enable(struct call *k)
{
        int r = sn_port_process(k->p, &k->reg, 1, NULL, 0, 0);

        return r < 0 ? r : k->reg.result;
}

static int do_post(struct call *k)
{
        return sn_port_post(k->p, 77, 5, 99);
}

static int do_status(struct call *k)
{
        char *json = NULL;
        int r = sn_conn_status(k->c, &json);

        free(json);
        return r;
}

static void open_port(struct call *k)
{
        memset(k, 0, sizeof(*k));
        ck_assert_int_eq(sn_conn_open(D.path, &k->c), 0);
        ck_assert_int_eq(sn_port_create_named(k->c, "retry", 0, &k->p), 0);
}

static void close_port(struct call *k)
{
        ck_assert_int_eq(sn_port_close(k->p), 0);
        sn_conn_close(k->c);
}

/* ---- safe calls: the caller never sees the crash ------------------------------------------ */

START_TEST(test_linger_through_crash)
{
        struct call k;

        if (!runnable())
                return;
        start(SN_MSG_PORT_LINGER_REPLY);
        open_port(&k);
        k.fn = do_linger;
        ck_assert_int_eq(run_through_crashes(&k, 0), 1);
        ck_assert_int_eq(k.result, 0);
        /* In force on the restored daemon: the port outlives its last handle. */
        close_port(&k);
        {
                sn_conn_t *c;
                sn_port_t *p;

                ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
                ck_assert_int_eq(sn_port_open(c, "retry", &p), 0);
                ck_assert_int_eq(sn_port_set_linger(p, 0), 0);
                ck_assert_int_eq(sn_port_close(p), 0);
                sn_conn_close(c);
        }
        stop();
}
END_TEST

START_TEST(test_enable_through_crash)
{
        struct call k;
        sn_entry_t e;
        int cl, sv;

        if (!runnable())
                return;
        start(SN_MSG_PROCESS_REPLY);
        open_port(&k);
        tcp_pair(&cl, &sv);
        k.reg = (sn_registration_t){ .fd = sv, .key = 42, .op = SN_OP_ENABLE,
                                     .filter = SN_REGISTER_EVENT_IN,
                                     .trigger = SN_TRIGGER_LEVEL };
        k.fn = do_enable;
        ck_assert_int_eq(run_through_crashes(&k, 0), 1);
        ck_assert_int_eq(k.result, 0);
        /* The registration is in force on the restored daemon, and nothing else is queued. */
        ck_assert_int_eq(write(cl, "x", 1), 1);
        ck_assert_int_eq(sn_port_dequeue(k.p, &e, 1, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e.key, 42);
        ck_assert_uint_eq(e.events & SN_EVENT_IN, SN_EVENT_IN);
        {
                char b;

                ck_assert_int_eq(read(sv, &b, 1), 1);
        }
        ck_assert_int_eq(sn_port_dequeue(k.p, &e, 1, 0), -ETIMEDOUT);
        ck_assert_int_eq(sn_socket_close(k.c, sv), 0);
        close(cl);
        close_port(&k);
        stop();
}
END_TEST

START_TEST(test_status_through_crash)
{
        struct call k;

        if (!runnable())
                return;
        start(SN_MSG_STATUS_REPLY);
        open_port(&k);
        k.fn = do_status;
        ck_assert_int_eq(run_through_crashes(&k, 0), 1);
        ck_assert_int_eq(k.result, 0);
        close_port(&k);
        stop();
}
END_TEST

/* ---- a call that must not be applied twice still fails -------------------------------------- */

START_TEST(test_post_fails_once)
{
        struct call k;
        sn_entry_t e[2];

        if (!runnable())
                return;
        start(SN_MSG_POST_REPLY);
        open_port(&k);
        k.fn = do_post;
        ck_assert_int_eq(run_through_crashes(&k, 0), 1);
        ck_assert_int_eq(k.result, -EIO);
        /* It was queued before the crash, and only once. */
        ck_assert_int_eq(sn_port_dequeue(k.p, e, 2, (uint32_t)test_timeout_ms(5000)), 1);
        ck_assert_uint_eq(e[0].key, 77);
        ck_assert_uint_eq(e[0].overlapped, 99);
        ck_assert_int_eq(sn_port_dequeue(k.p, e, 2, 0), -ETIMEDOUT);
        close_port(&k);
        stop();
}
END_TEST

/* ---- a call that crashes every daemon ends ------------------------------------------------- */

START_TEST(test_crash_every_time_ends_with_eio)
{
        struct call k;

        if (!runnable())
                return;
        start(SN_MSG_PORT_LINGER_REPLY);
        open_port(&k);
        k.fn = do_linger;
        /* The retry may reach a new daemon before a start's HELLO probe, and end it. */
        D.no_probe = true;
        /* The first attempt and two retries, each a crash. */
        ck_assert_int_eq(run_through_crashes(&k, SN_MSG_PORT_LINGER_REPLY), 3);
        ck_assert_int_eq(k.result, -EIO);
        /* The daemon that answered the last EIO serves on. */
        k.fn = do_status;
        ck_assert_int_eq(do_status(&k), 0);
        close_port(&k);
        stop();
}
END_TEST

int main(void)
{
        Suite *s = suite_create("retry");
        TCase *tc = tcase_create("retry after a crash");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_linger_through_crash);
        tcase_add_test(tc, test_enable_through_crash);
        tcase_add_test(tc, test_status_through_crash);
        tcase_add_test(tc, test_post_fails_once);
        tcase_add_test(tc, test_crash_every_time_ends_with_eio);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

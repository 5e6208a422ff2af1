/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-reexec.c - a re-exec in place (SIGUSR2) against a real daemon: clients mid-wait, mid
 * multi-part call, with queued posted packets and a queued REMOVE, registrations of every kind,
 * each in the state that matters (armed, one-shot already delivered, disabled).  After the
 * re-exec every client gets exactly the notifications it would have got without it, no loss,
 * no duplicate, and the daemon holds the same descriptors.  A new binary that cannot read the
 * state leaves the old image serving.  A re-exec into other max-message and max-fds values
 * keeps, for each connection it carries, the ones its handshake announced.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"
#include "tests/helpers/raw.h"

static struct test_daemon D;

/* SIGUSR2, then waits until the daemon (same PID) answers from its new image. */
static void reexec(sn_conn_t *c, pid_t pid)
{
        long long before = test_status_number(c, "reexecs");
        long long t0 = now_ms();

        ck_assert_int_eq(kill(pid, SIGUSR2), 0);
        while (test_status_number(c, "reexecs") == before) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "no re-exec within 5 s");
                usleep(5000);
        }
}

static void expect_entry(sn_port_t *p, uint64_t key, uint32_t events)
{
        sn_entry_t e;

        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.key, key);
        ck_assert_uint_eq(e.events, events);
}

static void expect_nothing(sn_port_t *p, int ms)
{
        sn_entry_t e;
        int n = sn_port_dequeue(p, &e, 1, (uint32_t)ms);

        ck_assert_msg(n == -ETIMEDOUT, "expected nothing, got %d (key %llu events %#x)", n,
                      n > 0 ? (unsigned long long)e.key : 0ull, n > 0 ? e.events : 0u);
}

struct waiter {
        sn_port_t *port;
        sn_entry_t e;
        int n;
};

static void *wait_thread(void *arg)
{
        struct waiter *w = arg;

        w->n = sn_port_dequeue(w->port, &w->e, 1, SN_INFINITE);
        return NULL;
}

START_TEST(test_reexec_keeps_everything)
{
        enum { LEVEL, ONESHOT, EDGE, EDGE_ONESHOT, DISABLED, REMOVED, NSOCK };
        static const uint8_t triggers[NSOCK] = {
                SN_TRIGGER_LEVEL, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, SN_TRIGGER_EDGE,
                SN_TRIGGER_EDGE | SN_TRIGGER_ONESHOT, SN_TRIGGER_LEVEL, SN_TRIGGER_LEVEL,
        };
        int cl[NSOCK], sv[NSOCK], fds_before, raw;
        sn_conn_t *c, *wc;
        sn_port_t *p, *wp;
        sn_registration_t r[NSOCK];
        struct waiter w;
        pthread_t th;
        char b;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create_named(c, "keep", 0, &p), 0);
        for (int i = 0; i < NSOCK; i++) {
                tcp_pair(&cl[i], &sv[i]);
                r[i] = (sn_registration_t){ .fd = sv[i], .key = 100 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = triggers[i] };
        }
        ck_assert_int_eq(sn_port_process(p, r, NSOCK, NULL, 0, 0), 0);
        for (int i = 0; i < NSOCK; i++)
                ck_assert_int_eq(r[i].result, 0);
        /* Before: the one-shots and the edge fire once and are taken. */
        for (int i = ONESHOT; i <= EDGE_ONESHOT; i++)
                ck_assert_int_eq(send(cl[i], "a", 1, 0), 1);
        for (int k = 0; k < 3; k++) {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
                ck_assert(e.key >= 100 + ONESHOT && e.key <= 100 + EDGE_ONESHOT);
        }
        expect_nothing(p, 50);
        r[DISABLED].op = SN_OP_DISABLE;
        r[REMOVED].op = SN_OP_REMOVE;
        ck_assert_int_eq(sn_port_process(p, &r[DISABLED], 2, NULL, 0, 0), 0);
        /* Queued at the re-exec: the REMOVE packet, then three posted packets. */
        for (uint64_t k = 1; k <= 3; k++)
                ck_assert_int_eq(sn_port_post(p, k, (uint32_t)k * 10, 0xab), 0);
        ck_assert_int_eq(send(cl[DISABLED], "d", 1, 0), 1);

        /* Another client is parked in a wait without limit, on its own port. */
        ck_assert_int_eq(sn_conn_open(D.path, &wc), 0);
        ck_assert_int_eq(sn_port_create(wc, 0, &wp), 0);
        /* It waits for a socket of its port: readiness that arrives after the re-exec must
         * reach a call parked before it. */
        int wcl, wsv;
        tcp_pair(&wcl, &wsv);
        sn_registration_t wr = { .fd = wsv, .key = 77, .op = SN_OP_ENABLE,
                                 .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(wp, &wr, 1, NULL, 0, 0), 0);
        ck_assert_int_eq(wr.result, 0);
        w = (struct waiter){ .port = wp };
        ck_assert_int_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
        /* A raw client is in the middle of a multi-part call. */
        raw = raw_hello(D.path);
        uint32_t rport = raw_port_create(raw, 2, NULL);
        {
                uint8_t buf[256];
                struct snw_process body = { .port = rport, .flags = SN_PROTO_PROCESS_PART };
                struct snw_registration it = { .key = 9, .op = SN_OP_NONE,
                                               .fd_index = SN_PROTO_NO_FD };
                uint8_t *q = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 0, 1, 0),
                                                &body);
                q = snw_registration_encode(q, &it);
                raw_send(raw, buf, (size_t)(q - buf), NULL, 0);
        }
        usleep(100 * 1000);
        fds_before = test_daemon_fds(&D);

        reexec(c, D.pid);
        ck_assert_int_eq(test_daemon_fds(&D), fds_before);

        /* The queue, in its order, exactly once. */
        expect_entry(p, 100 + REMOVED, SN_EVENT_REMOVE);
        for (uint64_t k = 1; k <= 3; k++) {
                sn_entry_t e;

                ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
                ck_assert_uint_eq(e.key, k);
                ck_assert_uint_eq(e.events, k * 10);
                ck_assert_uint_eq(e.overlapped, 0xab);
        }
        /* Nothing else: the one-shots stay disarmed, the edge is not reported again, the
         * disabled one stays silent though its data waits. */
        expect_nothing(p, 100);
        /* Level-triggered readiness is reported as before. */
        ck_assert_int_eq(send(cl[LEVEL], "l", 1, 0), 1);
        expect_entry(p, 100 + LEVEL, SN_EVENT_IN);
        ck_assert_int_eq(recv(sv[LEVEL], &b, 1, 0), 1);
        expect_nothing(p, 50);
        /* A new edge after the re-exec is one notification. */
        ck_assert_int_eq(recv(sv[EDGE], &b, 1, 0), 1);
        ck_assert_int_eq(send(cl[EDGE], "e", 1, 0), 1);
        expect_entry(p, 100 + EDGE, SN_EVENT_IN);
        expect_nothing(p, 50);
        /* Re-enabling a one-shot reports what holds, as it would have. */
        r[ONESHOT].op = SN_OP_ENABLE;
        ck_assert_int_eq(sn_port_process(p, &r[ONESHOT], 1, NULL, 0, 0), 0);
        expect_entry(p, 100 + ONESHOT, SN_EVENT_IN);
        expect_nothing(p, 50);
        /* The parked wait just goes on, and completes normally. */
        ck_assert_int_eq(w.n, 0);
        ck_assert_int_eq(send(wcl, "w", 1, 0), 1);
        pthread_join(th, NULL);
        ck_assert_int_eq(w.n, 1);
        ck_assert_uint_eq(w.e.key, 77);
        ck_assert_uint_eq(w.e.events, SN_EVENT_IN);
        sn_socket_close(wc, wsv);
        close(wcl);
        /* The multi-part call is finished after the re-exec: one result per item of both. */
        {
                uint8_t buf[256];
                struct snw_process body = { .port = rport };
                struct snw_registration it = { .key = 10, .op = SN_OP_NONE,
                                               .fd_index = SN_PROTO_NO_FD };
                const struct sn_msg_desc *d;
                struct snw_header h;
                uint8_t *q = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, 3, 0, 0, 1, 0),
                                                &body);
                q = snw_registration_encode(q, &it);
                raw_send(raw, buf, (size_t)(q - buf), NULL, 0);
                ck_assert_int_gt(raw_recv(raw, buf, sizeof(buf)), 0);
                ck_assert_int_eq(sn_msg_check(buf, sn_get_u32(buf), &h, &d), 0);
                ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
                ck_assert_uint_eq(h.id, 3);
                ck_assert_uint_eq(h.status, 0);
                ck_assert_uint_eq(h.count, 2);
        }
        /* The named port is still found by name, and a second re-exec works as well. */
        sn_port_t *again;
        ck_assert_int_eq(sn_port_open(c, "keep", &again), -EEXIST); /* already open here */
        reexec(c, D.pid);
        ck_assert_int_eq(sn_port_post(p, 5, 0, 0), 0);
        expect_entry(p, 5, 0);
        /* The same descriptors, less the copies of the removed socket (closed with its packet) and
         * of the waiter's socket (sn_socket_close). */
        ck_assert_int_eq(test_daemon_wait_fds(&D, fds_before - 2, 2000), fds_before - 2);

        close(raw);
        for (int i = 0; i < NSOCK; i++) {
                if (i != REMOVED)
                        sn_socket_close(c, sv[i]);
                else
                        close(sv[i]);
                close(cl[i]);
        }
        sn_port_close(wp);
        sn_conn_close(wc);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* A new binary that cannot take the state: the daemon says so and goes on serving. */
START_TEST(test_reexec_refused_keeps_serving)
{
        char dir[] = "/tmp/sn-reexec-XXXXXX", bin[128], sock[128], cmd[1024];
        sn_conn_t *c;
        sn_port_t *p;
        sn_entry_t e;
        pid_t pid;
        int st;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(bin, sizeof(bin), "%s/socknotifyd", dir);
        snprintf(sock, sizeof(sock), "%s/s.sock", dir);
        snprintf(cmd, sizeof(cmd), "cp %s/daemon/socknotifyd %s", SN_BUILDDIR, bin);
        ck_assert_int_eq(system(cmd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(bin, bin, "--socket", sock, (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 200 && sn_conn_open(sock, &c) < 0; i++)
                usleep(10000);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        ck_assert_int_eq(sn_port_post(p, 1, 0, 0), 0);
        /* "Upgrade" to a binary that rejects every state (as an older or broken one would). */
        FILE *f;
        ck_assert_int_eq(unlink(bin), 0);
        f = fopen(bin, "w");
        ck_assert_ptr_nonnull(f);
        fputs("#!/bin/sh\necho 'no such state version' >&2\nexit 3\n", f);
        fclose(f);
        ck_assert_int_eq(chmod(bin, 0755), 0);
        ck_assert_int_eq(kill(pid, SIGUSR2), 0);
        usleep(300 * 1000);
        /* The same image still serves everything it held. */
        ck_assert_int_eq(waitpid(pid, &st, WNOHANG), 0);
        ck_assert_int_eq(test_status_number(c, "reexecs"), 0);
        ck_assert_int_eq(sn_port_dequeue(p, &e, 1, 1000), 1);
        ck_assert_uint_eq(e.key, 1);
        sn_port_close(p);
        sn_conn_close(c);
        kill(pid, SIGTERM);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/*
 * A SIGTERM while a re-exec is under way is not lost (issue 24 item 5): the old image blocks the
 * handled signals from the start of the re-exec, the signal stays pending across execv(), and
 * the new image stops on it.  The new binary is a script that makes the check (--check-state)
 * take a second and marks when it began: the SIGTERM is sent then, while the old image waits
 * for the check.  Before, libevent caught it there and the old image's execv() dropped it: the
 * new image served on.
 */
START_TEST(test_sigterm_during_reexec)
{
        char dir[] = "/tmp/sn-reexec-XXXXXX", bin[128], sock[128], mark[128], cmd[1024];
        long long deadline;
        sn_conn_t *c;
        pid_t pid;
        int st = 0;
        FILE *f;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(bin, sizeof(bin), "%s/socknotifyd", dir);
        snprintf(sock, sizeof(sock), "%s/s.sock", dir);
        snprintf(mark, sizeof(mark), "%s/checking", dir);
        snprintf(cmd, sizeof(cmd), "cp %s/daemon/socknotifyd %s && cp %s %s.real", SN_BUILDDIR,
                 bin, bin, bin);
        ck_assert_int_eq(system(cmd), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(bin, bin, "--socket", sock, (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 200 && sn_conn_open(sock, &c) < 0; i++)
                usleep(10000);
        ck_assert_int_eq(test_status_number(c, "reexecs"), 0);
        sn_conn_close(c);
        ck_assert_int_eq(unlink(bin), 0);
        f = fopen(bin, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "#!/bin/sh\ncase \"$*\" in *--check-state=*) touch %s; sleep 1;; esac\n"
                   "exec %s.real \"$@\"\n", mark, bin);
        fclose(f);
        ck_assert_int_eq(chmod(bin, 0755), 0);

        ck_assert_int_eq(kill(pid, SIGUSR2), 0);
        deadline = now_ms() + test_timeout_ms(10000);
        while (access(mark, F_OK) != 0) {
                ck_assert_msg(now_ms() < deadline, "the re-exec did not start its check");
                usleep(2000);
        }
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        deadline = now_ms() + test_timeout_ms(20000);
        while (waitpid(pid, &st, WNOHANG) == 0) {
                if (now_ms() > deadline) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &st, 0);
                        ck_abort_msg("the SIGTERM sent during the re-exec was lost: the daemon "
                                     "served on");
                }
                usleep(10000);
        }
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the daemon ended with status %d",
                      st);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/*
 * A SIGTERM that arrives with a SIGUSR2 is not lost either.  Both are caught in one loop
 * iteration (the daemon is stopped while they are sent): before, libevent ran the SIGUSR2
 * callback first (lower signal number) and the re-exec replaced the image with the SIGTERM
 * still waiting in the old one's queue: the daemon served on, and systemd's stop ran into its
 * timeout.  The stop signals now run first (libevent priority 0), a re-exec asked for by
 * SIGUSR2 waits for the next loop pass, and a re-exec asked for while stopping is not done.
 */
START_TEST(test_sigterm_with_sigusr2)
{
        long long deadline;
        sn_conn_t *c;
        int st = 0;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(test_status_number(c, "reexecs"), 0);
        ck_assert_int_eq(kill(D.pid, SIGSTOP), 0);
        ck_assert_int_eq(waitpid(D.pid, &st, WUNTRACED), D.pid);
        ck_assert(WIFSTOPPED(st));
        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        ck_assert_int_eq(kill(D.pid, SIGTERM), 0);
        ck_assert_int_eq(kill(D.pid, SIGCONT), 0);
        deadline = now_ms() + test_timeout_ms(10000);
        while (waitpid(D.pid, &st, WNOHANG) == 0) {
                if (now_ms() > deadline) {
                        kill(D.pid, SIGKILL);
                        waitpid(D.pid, &st, 0);
                        ck_abort_msg("the SIGTERM sent with a SIGUSR2 was lost: the daemon "
                                     "served on");
                }
                usleep(10000);
        }
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the daemon ended with status %d",
                      st);
        sn_conn_close(c);
        D.pid = 0;
        unlink(D.path);
        rmdir(D.dir);
}
END_TEST

/* The daemon's pause during a re-exec with 1, 1,000 and 15,000 registrations (1,000 at most
 * under a wrapper such as valgrind): printed for the record, not judged; what is judged is
 * that every registration is there after it. */
START_TEST(test_reexec_pause)
{
        static const int sizes[] = { 1, 1000, 15000 };
        bool wrapped = getenv("SN_TEST_DAEMON_WRAPPER") != NULL;
        int total = 0, *peers = calloc(15000, sizeof(int));
        sn_conn_t *c;
        sn_port_t *p;

        struct rlimit rl;

        /* Our copies of 15,000 peers need more than the usual soft limit of 1,024. */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
        rl.rlim_cur = rl.rlim_max;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
        if (rl.rlim_cur < 16500)
                wrapped = true; /* too few descriptors here for the largest size */
        test_daemon_start(&D, (const char *const[]){ "--max-sockets-per-user=16000", NULL });
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                long long t0, worst = 0;

                if (wrapped && sizes[s] > 1000)
                        break;
                /* In batches, our copies closed as we go: the daemon holds them now, and our
                 * own descriptor limit would not hold both ends of 15,000 pairs. */
                while (total < sizes[s]) {
                        int n = SN_MIN(sizes[s] - total, 1000);
                        sn_registration_t r[1000];

                        for (int i = 0; i < n; i++) {
                                int sp[2];

                                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
                                                            0, sp),
                                                 0);
                                peers[total + i] = sp[0];
                                r[i] = (sn_registration_t){
                                        .fd = sp[1], .key = (uint64_t)(total + i),
                                        .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL
                                };
                        }
                        ck_assert_int_eq(sn_port_process(p, r, (uint32_t)n, NULL, 0, 0), 0);
                        for (int i = 0; i < n; i++) {
                                ck_assert_int_eq(r[i].result, 0);
                                close(r[i].fd);
                        }
                        total += n;
                }
                /* Longest gap between two answered requests around the re-exec. */
                long long before = test_status_number(c, "reexecs");
                ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
                t0 = now_ms();
                for (long long last = t0;;) {
                        long long v = test_status_number(c, "reexecs"), now = now_ms();

                        worst = SN_MAX(worst, now - last);
                        last = now;
                        if (v != before)
                                break;
                        ck_assert_msg(now - t0 < test_timeout_ms(10000), "no re-exec within 10 s");
                }
                printf("re-exec with %d registration(s): done after %lld ms, longest unanswered "
                       "request %lld ms\n", total, now_ms() - t0, worst);
                ck_assert_int_eq(test_status_number(c, "registrations"), total);
        }
        for (int i = 0; i < total; i++)
                close(peers[i]);
        free(peers);
        sn_port_close(p);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

/* ---- the limits a connection was told at its handshake, across a re-exec ------------------ */

/*
 * HELLO_REPLY tells a client max_message and max_fds, and the client sizes its buffers and splits
 * its calls by them.  A re-exec into a configuration that changes them keeps, for every
 * connection it carries, the values that connection was told; only new connections get the
 * new ones.  (The new image used to apply its own to every connection: more descriptors or
 * bytes in a reply than the client takes, or its valid calls refused.)
 */

static char conf_dir[32], conf_path[64];

static void write_conf(const char *text)
{
        FILE *f = fopen(conf_path, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

/* Starts the daemon on a configuration file holding text. */
static void start_with_conf(const char *text)
{
        char arg[96];

        snprintf(conf_dir, sizeof(conf_dir), "/tmp/sn-limits-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(conf_dir));
        snprintf(conf_path, sizeof(conf_path), "%s/conf.json", conf_dir);
        write_conf(text);
        snprintf(arg, sizeof(arg), "--config=%s", conf_path);
        test_daemon_start(&D, (const char *const[]){ arg, NULL });
}

static void stop_with_conf(void)
{
        ck_assert_int_eq(test_daemon_stop(&D), 0);
        unlink(conf_path);
        rmdir(conf_dir);
}

/* Re-executes the daemon into the configuration text; c is a client kept across it. */
static void reexec_into(sn_conn_t *c, const char *text)
{
        write_conf(text);
        reexec(c, D.pid);
}

/* A named port that lingers with n registrations whose creator is gone (keys key0 and on),
 * seen so by a PORT_TAKE of 0 on raw (version 2), which opened it as *ret_port.  peers[i]
 * receives the other end of the socket with key key0 + i. */
static void lingering_orphans(int raw, const char *name, int n, uint64_t key0, int *peers,
                              uint32_t *ret_port)
{
        sn_registration_t r[16];
        int fds[SN_PROTO_MAX_FDS];
        uint64_t keys[SN_PROTO_MAX_FDS];
        uint32_t remaining = 0;
        long long t0 = now_ms();
        sn_conn_t *a;
        sn_port_t *pa;

        ck_assert_int_le(n, 16);
        ck_assert_int_eq(sn_conn_open(D.path, &a), 0);
        ck_assert_int_eq(sn_port_create_named(a, name, 0, &pa), 0);
        ck_assert_int_eq(sn_port_set_linger(pa, 60000), 0);
        for (int i = 0; i < n; i++) {
                int sp[2];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
                peers[i] = sp[1];
                r[i] = (sn_registration_t){ .fd = sp[0], .key = key0 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        }
        ck_assert_int_eq(sn_port_process(pa, r, (uint32_t)n, NULL, 0, 0), 0);
        for (int i = 0; i < n; i++) {
                ck_assert_int_eq(r[i].result, 0);
                close(r[i].fd); /* the daemon holds its own copy */
        }
        *ret_port = raw_port_open(raw, 90, name);
        ck_assert_int_eq(sn_port_close(pa), 0);
        sn_conn_close(a);
        /* Orphans once the daemon has seen the creator's connection end. */
        while (remaining != (uint32_t)n) {
                ck_assert_uint_eq(raw_port_take(raw, 91, *ret_port, 0, fds, keys, &remaining), 0);
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "no orphans within 5 s");
                if (remaining != (uint32_t)n)
                        usleep(2000);
        }
}

/* fd is the socket whose other end is peer. */
static void same_pair(int fd, int peer)
{
        char b = 0;

        ck_assert_int_eq(send(fd, "k", 1, MSG_NOSIGNAL), 1);
        ck_assert_int_eq(recv(peer, &b, 1, 0), 1);
        ck_assert_int_eq(b, 'k');
}

/* How many of the daemon's connections CONTROL "clients" lists with max_fds and max_message
 * as given (what each one's handshake announced). */
static unsigned clients_told(sn_conn_t *c, uint32_t max_fds, uint32_t max_message)
{
        char *text = NULL;
        json_t *doc, *it;
        unsigned n = 0;
        size_t i;

        ck_assert_int_eq(sn_conn_control(c, "{\"verb\":\"clients\"}", &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        json_array_foreach(json_object_get(doc, "items"), i, it)
                if (json_integer_value(json_object_get(it, "max_fds")) == max_fds &&
                    json_integer_value(json_object_get(it, "max_message")) == max_message)
                        n++;
        json_decref(doc);
        return n;
}

/* max-fds 2, then 253: a kept connection that asks for six sockets in one PORT_TAKE gets them
 * all, in replies of at most two descriptors (the library, which never asks for more than it
 * was told, gets them too); a new connection is told 253. */
START_TEST(test_reexec_keeps_max_fds_larger)
{
        int raw, rpeers[6], lpeers[6], fds[SN_PROTO_MAX_FDS];
        uint64_t keys[SN_PROTO_MAX_FDS];
        uint32_t rport, lport, remaining = 1, got = 0, id = 10, seen = 0;
        sn_taken_socket_t taken[6];
        sn_take_info_t info;
        sn_conn_t *c, *fresh;
        sn_port_t *pb;
        sn_limits_t l;

        start_with_conf("{ \"max-fds\": 2 }\n");
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        ck_assert_uint_eq(l.max_fds, 2);
        raw = raw_hello2(D.path);
        lingering_orphans(raw, "take-raw", 6, 100, rpeers, &rport);
        lingering_orphans(raw, "take-lib", 6, 200, lpeers, &lport);
        ck_assert_int_eq(sn_port_open(c, "take-lib", &pb), 0);
        reexec_into(c, "{ \"max-fds\": 253 }\n");

        while (remaining) {
                uint32_t n = raw_port_take(raw, id++, rport, 6, fds, keys, &remaining);

                ck_assert_msg(n <= 2, "a PORT_TAKE_REPLY carried %u descriptors to a connection "
                                      "told max_fds 2", n);
                ck_assert_uint_gt(n, 0);
                for (uint32_t i = 0; i < n; i++) {
                        ck_assert(keys[i] >= 100 && keys[i] < 106);
                        ck_assert(!(seen & 1u << (keys[i] - 100)));
                        seen |= 1u << (keys[i] - 100);
                        same_pair(fds[i], rpeers[keys[i] - 100]);
                        close(fds[i]);
                }
                got += n;
        }
        ck_assert_uint_eq(got, 6);
        ck_assert_uint_eq(seen, 0x3f);
        ck_assert_int_eq(sn_port_take_sockets(pb, taken, 6, &info), 6);
        ck_assert_uint_eq(info.remaining, 0);
        seen = 0;
        for (int i = 0; i < 6; i++) {
                ck_assert(taken[i].key >= 200 && taken[i].key < 206);
                seen |= 1u << (taken[i].key - 200);
                same_pair(taken[i].fd, lpeers[taken[i].key - 200]);
                ck_assert_int_eq(sn_socket_close(c, taken[i].fd), 0);
        }
        ck_assert_uint_eq(seen, 0x3f);
        ck_assert_int_eq(sn_conn_open(D.path, &fresh), 0);
        ck_assert_int_eq(sn_conn_limits(fresh, &l), 0);
        ck_assert_uint_eq(l.max_fds, 253);
        /* The operator sees who was told what: the two kept connections 2, the new one 253. */
        ck_assert_uint_eq(clients_told(fresh, 2, l.max_message), 2);
        ck_assert_uint_eq(clients_told(fresh, 253, l.max_message), 1);

        sn_conn_close(fresh);
        close(raw);
        sn_port_close(pb);
        sn_conn_close(c);
        for (int i = 0; i < 6; i++) {
                close(rpeers[i]);
                close(lpeers[i]);
        }
        stop_with_conf();
}
END_TEST

/* max-fds 8, then 1: a kept connection's PROCESS with six new sockets (one message, as 8
 * allows) succeeds and they report; a new connection is told 1 and held to it. */
START_TEST(test_reexec_keeps_max_fds_smaller)
{
        int raw, fresh_raw, sp[8][2];
        uint32_t rport, fport, seen = 0;
        sn_registration_t r[6];
        sn_entry_t e[6];
        sn_conn_t *c, *fresh;
        sn_port_t *p;
        sn_limits_t l;

        start_with_conf("{ \"max-fds\": 8 }\n");
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        ck_assert_uint_eq(l.max_fds, 8);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        raw = raw_hello(D.path);
        rport = raw_port_create(raw, 2, NULL);
        for (int i = 0; i < 8; i++)
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]), 0);
        reexec_into(c, "{ \"max-fds\": 1 }\n");

        for (int i = 0; i < 6; i++)
                r[i] = (sn_registration_t){ .fd = sp[i][0], .key = 300 + (uint64_t)i,
                                            .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        ck_assert_int_eq(sn_port_process(p, r, 6, NULL, 0, 0), 0);
        for (int i = 0; i < 6; i++) {
                ck_assert_int_eq(r[i].result, 0);
                ck_assert_int_eq(send(sp[i][1], "x", 1, 0), 1);
        }
        while (seen != 0x3f) {
                int n = sn_port_dequeue(p, e, 6, (uint32_t)test_timeout_ms(5000));

                ck_assert_int_gt(n, 0);
                for (int i = 0; i < n; i++) {
                        ck_assert(e[i].key >= 300 && e[i].key < 306);
                        seen |= 1u << (e[i].key - 300);
                }
        }
        /* The raw connection, told 8 as well, passes two descriptors in one message. */
        raw_send_enables(raw, 3, rport, (const int[]){ sp[6][0], sp[7][0] }, 2);
        expect_reply(raw, SN_MSG_PROCESS_REPLY, 3, 0);
        /* A new connection is told 1, and two descriptors in one message are refused. */
        ck_assert_int_eq(sn_conn_open(D.path, &fresh), 0);
        ck_assert_int_eq(sn_conn_limits(fresh, &l), 0);
        ck_assert_uint_eq(l.max_fds, 1);
        fresh_raw = raw_hello(D.path);
        fport = raw_port_create(fresh_raw, 2, NULL);
        raw_send_enables(fresh_raw, 3, fport, (const int[]){ sp[6][0], sp[7][0] }, 2);
        expect_reply(fresh_raw, SN_MSG_ERROR, 3, ETOOMANYREFS);
        status_works(fresh_raw, 4);

        close(fresh_raw);
        sn_conn_close(fresh);
        close(raw);
        for (int i = 0; i < 6; i++)
                ck_assert_int_eq(sn_socket_close(c, sp[i][0]), 0);
        sn_port_close(p);
        sn_conn_close(c);
        for (int i = 0; i < 8; i++) {
                if (i >= 6)
                        close(sp[i][0]);
                close(sp[i][1]);
        }
        stop_with_conf();
}
END_TEST

/* Posts keys 1..n on p, then takes them all back with one dequeue call, in their order. */
static void post_n(sn_port_t *p, uint32_t n)
{
        for (uint32_t k = 1; k <= n; k++)
                ck_assert_int_eq(sn_port_post(p, k, k, 0), 0);
}

static void dequeue_all(sn_port_t *p, uint32_t n)
{
        sn_entry_t *e = calloc(n, sizeof(*e));
        int got;

        ck_assert_ptr_nonnull(e);
        got = sn_port_dequeue(p, e, n, (uint32_t)test_timeout_ms(2000));
        ck_assert_msg(got == (int)n, "one dequeue of %u queued entries returned %d", n, got);
        for (uint32_t i = 0; i < n; i++)
                ck_assert_uint_eq(e[i].key, i + 1);
        free(e);
}

/* max-message 4096, then 65536: a kept connection that asks for 400 queued entries (more than
 * 4096 bytes hold) in one PROCESS gets replies of at most 4096 bytes, and its next calls get the
 * rest (the library, which never asks for more than it was told fits, gets them all in one
 * dequeue call); a new connection is told 65536. */
START_TEST(test_reexec_keeps_max_message_larger)
{
        uint8_t *buf = malloc(65536);
        uint32_t rport, got = 0, id = 10;
        sn_conn_t *c, *fresh;
        sn_port_t *p, *pn;
        sn_limits_t l;
        int raw;

        ck_assert_ptr_nonnull(buf);
        start_with_conf("{ \"max-message\": 4096 }\n");
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        ck_assert_uint_eq(l.max_message, 4096);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        post_n(p, 400);
        ck_assert_int_eq(sn_port_create_named(c, "big", 0, &pn), 0);
        post_n(pn, 400);
        raw = raw_hello(D.path);
        rport = raw_port_open(raw, 2, "big");
        reexec_into(c, "{ \"max-message\": 65536 }\n");

        while (got < 400) {
                struct snw_process body = { .port = rport, .max_entries = 400 };
                const struct sn_msg_desc *d;
                struct snw_header h;
                const uint8_t *it;
                ssize_t n;

                snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0), &body);
                raw_send(raw, buf, sn_msg_size(SN_MSG_PROCESS, 0, 0), NULL, 0);
                n = raw_recv(raw, buf, 65536);
                ck_assert_msg(n <= 4096, "a reply of %zd bytes to a connection told max_message "
                                         "4096", n);
                ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
                ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
                ck_assert_uint_eq(h.id, id++);
                ck_assert_uint_eq(h.status, 0);
                ck_assert_uint_gt(h.count2, 0);
                it = sn_msg_body(buf) + SN_WIRE_SIZE_process_reply;
                for (uint32_t i = 0; i < h.count2; i++) {
                        struct snw_entry e;

                        it = snw_entry_decode(it, &e);
                        ck_assert_uint_eq(e.key, ++got);
                }
        }
        ck_assert_uint_eq(got, 400);
        close(raw);
        free(buf);
        sn_port_close(pn);
        dequeue_all(p, 400);
        ck_assert_int_eq(test_status_number(c, "reexecs"), 1);
        ck_assert_int_eq(sn_conn_open(D.path, &fresh), 0);
        ck_assert_int_eq(sn_conn_limits(fresh, &l), 0);
        ck_assert_uint_eq(l.max_message, 65536);

        sn_conn_close(fresh);
        sn_port_close(p);
        sn_conn_close(c);
        stop_with_conf();
}
END_TEST

/* A PROCESS of n items without descriptors (op NONE) on port, about 36 bytes each. */
static size_t encode_nones(uint8_t *buf, uint32_t id, uint32_t port, uint32_t n)
{
        struct snw_process body = { .port = port };
        uint8_t *q = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, n, 0), &body);

        for (uint32_t i = 0; i < n; i++) {
                struct snw_registration it = { .key = 9 + i, .op = SN_OP_NONE,
                                               .fd_index = SN_PROTO_NO_FD };

                q = snw_registration_encode(q, &it);
        }
        return (size_t)(q - buf);
}

/* max-message 16384, then 4096: a kept connection's dequeue of 400 entries still gets them all
 * with one call (its library counts a reply as full by 16384 bytes), and its requests of up to
 * 16384 bytes are served; a new connection is told 4096 and held to it. */
START_TEST(test_reexec_keeps_max_message_smaller)
{
        const struct sn_msg_desc *d;
        struct snw_header h;
        uint8_t *buf = malloc(16384);
        uint32_t rport, fport;
        int raw, fresh_raw;
        size_t len;
        ssize_t n;
        sn_conn_t *c, *fresh;
        sn_port_t *p;
        sn_limits_t l;

        ck_assert_ptr_nonnull(buf);
        start_with_conf("{ \"max-message\": 16384 }\n");
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_conn_limits(c, &l), 0);
        ck_assert_uint_eq(l.max_message, 16384);
        ck_assert_int_eq(sn_port_create(c, 0, &p), 0);
        post_n(p, 400);
        raw = raw_hello(D.path);
        rport = raw_port_create(raw, 2, NULL);
        reexec_into(c, "{ \"max-message\": 4096 }\n");

        dequeue_all(p, 400);
        /* 300 items: about 10,900 bytes, within the 16384 the raw connection was told. */
        len = encode_nones(buf, 3, rport, 300);
        ck_assert_uint_gt(len, 4096);
        raw_send(raw, buf, len, NULL, 0);
        n = raw_recv(raw, buf, 16384);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)n, &h, &d), 0);
        ck_assert_msg(h.type == SN_MSG_PROCESS_REPLY && h.status == 0,
                      "a 300-item PROCESS of a connection told 16384 bytes: type %#x status %u",
                      h.type, h.status);
        ck_assert_uint_eq(h.id, 3);
        ck_assert_uint_eq(h.count, 300);
        /* A new connection is told 4096, and the same request is too large for it. */
        ck_assert_int_eq(sn_conn_open(D.path, &fresh), 0);
        ck_assert_int_eq(sn_conn_limits(fresh, &l), 0);
        ck_assert_uint_eq(l.max_message, 4096);
        fresh_raw = raw_hello(D.path);
        fport = raw_port_create(fresh_raw, 2, NULL);
        raw_send(fresh_raw, buf, encode_nones(buf, 3, fport, 300), NULL, 0);
        expect_reply(fresh_raw, SN_MSG_ERROR, 3, EMSGSIZE);
        status_works(fresh_raw, 4);

        close(fresh_raw);
        sn_conn_close(fresh);
        close(raw);
        free(buf);
        sn_port_close(p);
        sn_conn_close(c);
        stop_with_conf();
}
END_TEST

/* How many of the daemon's connections CONTROL "clients" lists as self-scheduled. */
static unsigned clients_self_scheduled(sn_conn_t *c)
{
        char *text = NULL;
        json_t *doc, *it;
        unsigned n = 0;
        size_t i;

        ck_assert_int_eq(sn_conn_control(c, "{\"verb\":\"clients\"}", &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        json_array_foreach(json_object_get(doc, "items"), i, it)
                n += json_is_true(json_object_get(it, "self_scheduled"));
        json_decref(doc);
        return n;
}

struct blocker {
        sn_port_t *port;
        int pipe[2];
        pid_t tid;
        int got; /* the dequeue's result */
        sn_entry_t e;
};

/* Dequeues one entry, then blocks elsewhere (a read of a pipe) while it runs on the port. */
static void *blocker_main(void *arg)
{
        struct blocker *b = arg;
        char c;

        __atomic_store_n(&b->tid, gettid(), __ATOMIC_RELEASE);
        b->got = sn_port_dequeue(b->port, &b->e, 1, 60000);
        if (read(b->pipe[0], &c, 1) != 1)
                b->got = -EIO;
        return NULL;
}

/* A connection opened with SOCKNOTIFY_SELF_SCHEDULED stays self-scheduled across a re-exec
 * (its journal record says so): a thread running on a port of concurrency 1 that blocks in a
 * read keeps its slot, and another thread's dequeue times out, before and after. */
START_TEST(test_reexec_keeps_self_scheduled)
{
        struct blocker b = { 0 };
        long long t0 = now_ms();
        sn_conn_t *c, *plain;
        pthread_t th;
        sn_entry_t e;
        pid_t tid;

        test_daemon_start(&D, NULL);
        ck_assert_int_eq(setenv("SOCKNOTIFY_SELF_SCHEDULED", "1", 1), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(unsetenv("SOCKNOTIFY_SELF_SCHEDULED"), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &plain), 0);
        ck_assert_uint_eq(clients_self_scheduled(plain), 1);
        ck_assert_int_eq(sn_port_create(c, 1, &b.port), 0);
        ck_assert_int_eq(pipe(b.pipe), 0);
        ck_assert_int_eq(sn_port_post(b.port, 1, 0, 0), 0);
        ck_assert_int_eq(pthread_create(&th, NULL, blocker_main, &b), 0);
        /* Until it sleeps in read(): the daemon would read it as blocked from then on. */
        while (!(tid = __atomic_load_n(&b.tid, __ATOMIC_ACQUIRE)) ||
               test_thread_syscall(tid) != SYS_read) {
                ck_assert_msg(now_ms() - t0 < test_timeout_ms(5000), "not blocked within 5 s");
                usleep(1000);
        }
        ck_assert_int_eq(b.got, 1);
        ck_assert_uint_eq(b.e.key, 1);
        ck_assert_int_eq(sn_port_post(b.port, 2, 0, 0), 0);
        expect_nothing(b.port, 300);
        reexec(plain, D.pid);
        ck_assert_uint_eq(clients_self_scheduled(plain), 1);
        expect_nothing(b.port, 300);
        /* Its thread's end (THREAD_EXIT, from the library's exit handler) frees the slot. */
        ck_assert_int_eq(write(b.pipe[1], "x", 1), 1);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
        ck_assert_int_eq(sn_port_dequeue(b.port, &e, 1, 5000), 1);
        ck_assert_uint_eq(e.key, 2);

        close(b.pipe[0]);
        close(b.pipe[1]);
        sn_port_close(b.port);
        sn_conn_close(plain);
        sn_conn_close(c);
        ck_assert_int_eq(test_daemon_stop(&D), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("reexec");
        TCase *tc = tcase_create("reexec");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_reexec_keeps_everything);
        tcase_add_test(tc, test_reexec_refused_keeps_serving);
        tcase_add_test(tc, test_sigterm_during_reexec);
        tcase_add_test(tc, test_sigterm_with_sigusr2);
        tcase_add_test(tc, test_reexec_pause);
        tcase_add_test(tc, test_reexec_keeps_max_fds_larger);
        tcase_add_test(tc, test_reexec_keeps_max_fds_smaller);
        tcase_add_test(tc, test_reexec_keeps_max_message_larger);
        tcase_add_test(tc, test_reexec_keeps_max_message_smaller);
        tcase_add_test(tc, test_reexec_keeps_self_scheduled);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

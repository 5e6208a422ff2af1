/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-hostile-replies.c - the library checks the daemon's replies as it checks any input.
 *
 * socknotifyd cannot be made to send a malformed reply, so here, and only here, a fake peer
 * plays the daemon's side: a forked child listening on a real SOCK_SEQPACKET socket, which
 * answers HELLO and PORT_CREATE as the daemon does and then sends one crafted reply with real
 * descriptors (SCM_RIGHTS).  This is not a mock of the daemon's behaviour (the guide forbids
 * those): it is the only way to test the library's validation of hostile replies.  Each case
 * checks that the call fails with -EBADMSG, that no element of the caller's array was written
 * (no two share a descriptor), that the connection is then lost (-ECONNRESET), and that the
 * process's descriptors are back to what they were: every received one closed, and an
 * unrelated descriptor opened before still open and still the same file.  One well-formed
 * reply checks the fake peer itself.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/fdmsg.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"

enum scenario {
        DUP_INDEX,      /* two items name descriptor 0 */
        INDEX_PAST,     /* an item names descriptor 5 of a message with 2 */
        REGULAR_FILE,   /* the second descriptor is a regular file */
        PIPE,           /* the only descriptor is a pipe */
        MORE_FDS,       /* 3 descriptors for 1 item */
        FEWER_FDS,      /* 1 descriptor for 2 items, and no MSG_CTRUNC */
        MORE_ITEMS,     /* 3 items when 2 were asked for */
        FDS_ON_ERROR,   /* PORT_TAKE_REPLY with status EAGAIN, and a descriptor */
        FDS_ON_CREATE,  /* PORT_CREATE_REPLY with a descriptor */
        SHORT_RESULTS,  /* PROCESS_REPLY of status 0 without the registration's result */
        EXTRA_ENTRIES,  /* PROCESS_REPLY with 3 entries for a dequeue of 1 */
        VALID,          /* a well-formed reply: checks the fake peer itself */
        WAITER,         /* DUP_INDEX while another thread waits without end, reading */
        NSCENARIOS,
};

static const char *const names[] = { "dup-index",   "index-past", "regular-file",
                                     "pipe",        "more-fds",   "fewer-fds",
                                     "more-items",  "fds-on-error", "fds-on-create",
                                     "short-results", "extra-entries", "valid", "waiter" };

/* The number of open descriptors of this process. */
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

static ssize_t recv_msg(int fd, uint8_t *buf, size_t cap)
{
        ssize_t n;

        do
                n = recv(fd, buf, cap, 0);
        while (n < 0 && errno == EINTR);
        return n;
}

/* The fake daemon (in the child: no Check assertions, an exit status instead).  In WAITER it
 * takes a PROCESS before the PORT_TAKE and never answers it, and writes a byte to told when
 * that PROCESS has come. */
static int fake_daemon(int lfd, enum scenario sc, int told)
{
        uint8_t in[4096], out[4096];
        struct snw_header h;
        const struct sn_msg_desc *d;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), fds[3], pipefd[2], sp[2];
        unsigned nfds = 0;
        uint32_t count = 0, status = 0;
        ssize_t n;

        if (c < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
            pipe2(pipefd, O_CLOEXEC) < 0)
                return 10;
        /* HELLO -> HELLO_REPLY, version 2. */
        n = recv_msg(c, in, sizeof(in));
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_HELLO)
                return 11;
        struct snw_hello_reply hr = { .version = 2, .max_message = 65536, .max_fds = 253,
                                      .max_ports = 64, .max_registrations = 1000,
                                      .max_posted = 1000, .max_waits = 64, .max_sockets = 1000,
                                      .daemon_pid = (uint32_t)getpid() };
        snw_hello_reply_encode(sn_msg_begin(out, SN_MSG_HELLO_REPLY, h.id, 0, 0, 0, 0), &hr);
        if (sn__fdmsg_send(c, out, sn_msg_size(SN_MSG_HELLO_REPLY, 0, 0), NULL, 0, 0) < 0)
                return 12;
        /* PORT_CREATE -> PORT_CREATE_REPLY (with a descriptor in FDS_ON_CREATE). */
        n = recv_msg(c, in, sizeof(in));
        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 || h.type != SN_MSG_PORT_CREATE)
                return 13;
        struct snw_port_create_reply pr = { .port = 7, .concurrency = 1 };
        snw_port_create_reply_encode(sn_msg_begin(out, SN_MSG_PORT_CREATE_REPLY, h.id, 0,
                                                  sc == FDS_ON_CREATE, 0, 0),
                                     &pr);
        if (sn__fdmsg_send(c, out, sn_msg_size(SN_MSG_PORT_CREATE_REPLY, 0, 0), sp,
                           sc == FDS_ON_CREATE, 0) < 0)
                return 14;
        if (sc == SHORT_RESULTS || sc == EXTRA_ENTRIES) {
                /* PROCESS -> a PROCESS_REPLY that does not fit it (its descriptor, if any,
                 * is discarded by recv()). */
                uint8_t *p;

                n = recv_msg(c, in, sizeof(in));
                if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 ||
                    h.type != SN_MSG_PROCESS)
                        return 20;
                count = sc == EXTRA_ENTRIES ? 3 : 0;
                p = sn_msg_begin(out, SN_MSG_PROCESS_REPLY, h.id, 0, 0, 0, count);
                p = snw_process_reply_encode(p, &(struct snw_process_reply){ 0 });
                for (uint32_t i = 0; i < count; i++)
                        p = snw_entry_encode(p, &(struct snw_entry){ .key = 200 + i });
                if (sn__fdmsg_send(c, out, (size_t)(p - out), NULL, 0, 0) < 0)
                        return 21;
        } else if (sc != FDS_ON_CREATE) {
                /* PORT_TAKE -> the crafted PORT_TAKE_REPLY. */
                struct snw_registration it[3] = { 0 };
                uint8_t *p;

                if (sc == WAITER) {
                        /* The other thread's wait, never answered. */
                        n = recv_msg(c, in, sizeof(in));
                        if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 ||
                            h.type != SN_MSG_PROCESS || write(told, "w", 1) != 1)
                                return 22;
                }
                n = recv_msg(c, in, sizeof(in));
                if (n <= 0 || sn_msg_check(in, (size_t)n, &h, &d) < 0 ||
                    h.type != SN_MSG_PORT_TAKE)
                        return 15;
                fds[0] = sp[0];
                fds[1] = sp[1];
                fds[2] = pipefd[0];
                count = 2;
                nfds = 2;
                switch (sc) {
                case DUP_INDEX:
                case WAITER:
                        break; /* items below: both name 0 */
                case INDEX_PAST:
                        break;
                case REGULAR_FILE:
                        fds[1] = memfd_create("not-a-socket", MFD_CLOEXEC);
                        break;
                case PIPE:
                        fds[0] = pipefd[1];
                        count = nfds = 1;
                        break;
                case MORE_FDS:
                        count = 1;
                        nfds = 3;
                        break;
                case FEWER_FDS:
                        nfds = 1;
                        break;
                case MORE_ITEMS:
                        count = 3;
                        nfds = 3;
                        fds[2] = dup(sp[0]);
                        break;
                case FDS_ON_ERROR:
                        count = 0;
                        nfds = 1;
                        status = EAGAIN;
                        break;
                case VALID:
                        break;
                default:
                        return 16;
                }
                for (uint32_t i = 0; i < count; i++) {
                        struct stat st;

                        fstat(fds[i < nfds ? i : 0], &st);
                        it[i] = (struct snw_registration){
                                .key = 100 + i, .dev = (uint64_t)st.st_dev,
                                .ino = (uint64_t)st.st_ino, .filter = SN_REGISTER_EVENT_IN,
                                .op = SN_OP_ENABLE,
                                .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT,
                                .fd_index = i, .client_fd = 3 + i,
                        };
                }
                if (sc == DUP_INDEX || sc == WAITER)
                        it[1].fd_index = 0;
                if (sc == INDEX_PAST)
                        it[1].fd_index = 5;
                /* The header announces one descriptor per item when more or fewer come. */
                p = sn_msg_begin(out, SN_MSG_PORT_TAKE_REPLY, h.id, status,
                                 (uint16_t)(sc == MORE_FDS || sc == FEWER_FDS ? count : nfds),
                                 count, 0);
                p = snw_port_take_reply_encode(p, &(struct snw_port_take_reply){ 0 });
                for (uint32_t i = 0; i < count; i++)
                        p = snw_registration_encode(p, &it[i]);
                if (sn__fdmsg_send(c, out, (size_t)(p - out), fds, nfds, 0) < 0)
                        return 17;
        }
        /* Until the client is done; a request after the reply (PORT_CLOSE after the valid
         * one; none after a bad one) is refused rather than left waiting. */
        while ((n = recv_msg(c, in, sizeof(in))) > 0) {
                if (sn_msg_check(in, (size_t)n, &h, &d) < 0)
                        return 18;
                sn_msg_begin(out, SN_MSG_ERROR, h.id, EPROTO, 0, 0, 0);
                if (sn__fdmsg_send(c, out, sn_msg_size(SN_MSG_ERROR, 0, 0), NULL, 0, 0) < 0)
                        return 19;
        }
        return 0;
}

struct waiter {
        sn_port_t *port;
        int r;
};

static void *wait_without_end(void *arg)
{
        struct waiter *w = arg;
        sn_entry_t e;

        w->r = sn_port_dequeue(w->port, &e, 1, SN_INFINITE);
        return NULL;
}

START_TEST(test_hostile_reply)
{
        enum scenario sc = (enum scenario)_i;
        char dir[] = "/tmp/sn-hostile-XXXXXX";
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        sn_taken_socket_t out[4];
        struct stat before, after;
        sn_conn_t *c;
        sn_port_t *port = NULL;
        int lfd, unrelated, base, r, st, told[2];
        pid_t pid;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/fake.sock", dir);
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(lfd, 0);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(lfd, 1), 0);
        ck_assert_int_eq(pipe2(told, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(fake_daemon(lfd, sc, told[1]));
        close(lfd);
        close(told[1]);

        ck_assert_int_eq(sn_conn_open(sa.sun_path, &c), 0);
        unrelated = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(unrelated, 0);
        ck_assert_int_eq(fstat(unrelated, &before), 0);
        base = count_fds();
        for (int i = 0; i < 4; i++)
                out[i] = (sn_taken_socket_t){ .fd = -2 };

        if (sc == VALID) {
                struct stat s0, s1;

                ck_assert_int_eq(sn_port_create(c, 1, &port), 0);
                ck_assert_int_eq(sn_port_take_sockets(port, out, 2, NULL), 2);
                ck_assert_int_ne(out[0].fd, out[1].fd);
                ck_assert_int_eq(fstat(out[0].fd, &s0), 0);
                ck_assert_int_eq(fstat(out[1].fd, &s1), 0);
                ck_assert(S_ISSOCK(s0.st_mode) && S_ISSOCK(s1.st_mode));
                ck_assert(out[0].key == 100 && out[1].key == 101);
                ck_assert_int_eq(count_fds(), base + 2);
                close(out[0].fd);
                close(out[1].fd);
        } else if (sc == SHORT_RESULTS || sc == EXTRA_ENTRIES) {
                int sp[2];
                sn_entry_t e[4];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
                base += 2;
                ck_assert_int_eq(sn_port_create(c, 1, &port), 0);
                sn_registration_t reg = { .fd = sp[0], .key = 1, .op = SN_OP_ENABLE,
                                          .filter = SN_REGISTER_EVENT_IN,
                                          .trigger = SN_TRIGGER_LEVEL };
                r = sc == SHORT_RESULTS ? sn_port_process(port, &reg, 1, NULL, 0, 0)
                                        : sn_port_dequeue(port, e, 1, 0);
                ck_assert_msg(r == -EBADMSG, "%s: %d (%s)", names[sc], r,
                              r < 0 ? sn_strerror(r) : "no error");
                ck_assert_int_eq(sn_port_take_sockets(port, out, 2, NULL), -ECONNRESET);
                close(sp[0]);
                close(sp[1]);
                base -= 2;
        } else if (sc == FDS_ON_CREATE) {
                r = sn_port_create(c, 1, &port);
                ck_assert_msg(r == -EBADMSG, "%s: sn_port_create: %d", names[sc], r);
        } else if (sc == WAITER) {
                /* Another thread waits without end, the one reading the connection; this one's
                 * reply is hostile: the loss ends that wait too, at once. */
                struct waiter w = { .r = 1 };
                struct timespec until;
                pthread_t th;
                char b;

                ck_assert_int_eq(sn_port_create(c, 1, &port), 0);
                w.port = port;
                ck_assert_int_eq(pthread_create(&th, NULL, wait_without_end, &w), 0);
                ck_assert_int_eq(read(told[0], &b, 1), 1);
                r = sn_port_take_sockets(port, out, 2, NULL);
                ck_assert_msg(r == -EBADMSG, "%s: sn_port_take_sockets: %d", names[sc], r);
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += test_timeout_ms(5000) / 1000;
                ck_assert_msg(pthread_timedjoin_np(th, NULL, &until) == 0,
                              "%s: the other thread's wait did not end", names[sc]);
                ck_assert_int_eq(w.r, -ECONNRESET);
        } else {
                ck_assert_int_eq(sn_port_create(c, 1, &port), 0);
                r = sn_port_take_sockets(port, out, 2, NULL);
                ck_assert_msg(r == -EBADMSG, "%s: sn_port_take_sockets: %d (%s)", names[sc], r,
                              r < 0 ? sn_strerror(r) : "no error");
                for (int i = 0; i < 4; i++)
                        ck_assert_msg(out[i].fd == -2, "%s: out[%d] written", names[sc], i);
                /* The connection cannot be trusted any more. */
                ck_assert_int_eq(sn_port_take_sockets(port, out, 2, NULL), -ECONNRESET);
        }
        ck_assert_msg(count_fds() == base, "%s: %d descriptors, %d before", names[sc],
                      count_fds(), base);
        ck_assert_int_eq(fstat(unrelated, &after), 0);
        ck_assert(before.st_dev == after.st_dev && before.st_ino == after.st_ino);
        ck_assert_int_eq(fcntl(unrelated, F_GETFD), FD_CLOEXEC);

        if (port)
                sn_port_close(port);
        sn_conn_close(c);
        close(unrelated);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: fake daemon status %d",
                      names[sc], st);
        close(told[0]);
        unlink(sa.sun_path);
        rmdir(dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("hostile-replies");
        TCase *tc = tcase_create("hostile-replies");

        tcase_set_timeout(tc, 30);
        tcase_add_loop_test(tc, test_hostile_reply, 0, NSCENARIOS);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-blocked.c - a running thread that blocks elsewhere frees its concurrency slot (issue 27,
 * semantics row 72), read by the daemon from /proc, against a real daemon:
 *  - a client in a child PID namespace (its gettid() numbers are its namespace's) is seen: the
 *    daemon maps its thread ids through NSpid;
 *  - a thread id the daemon cannot read counts as running, as it always did: no such thread,
 *    another process's blocked thread (never read as the client's), 0, an event-loop identity,
 *    the daemon's own pid; a blocked thread of the client's own is the control;
 *  - a thread handed its entries by another thread that read them for it, but not yet awake,
 *    is on its way to run, not blocked: with the rings it counts until it has them, on the
 *    socket (where the daemon cannot tell) for 16 ms after the daemon saw them read; held
 *    for good, it does not stop the replies of the connection's other threads.
 * Posted packets are the entries; each case ends with the daemon at its baseline descriptors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <semaphore.h>
#include <sys/syscall.h>

#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"
#include "tests/helpers/status.h"

static struct test_daemon D;
static int baseline;

static void start(void)
{
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
}

static void stop(void)
{
        test_daemon_stop_if_running(&D);
}

/* ---- through the library: A takes packet 1 and blocks until B, waiting, takes packet 2 ---- */

struct scene {
        sn_port_t *port;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool a_took, b_done;
        int a_res, b_res;
        uint64_t b_key;
};

static void *scene_a(void *arg)
{
        struct scene *s = arg;
        sn_entry_t e;
        int r = sn_port_dequeue(s->port, &e, 1, (uint32_t)test_timeout_ms(3000));

        pthread_mutex_lock(&s->lock);
        s->a_res = r;
        s->a_took = true;
        pthread_cond_broadcast(&s->cond);
        while (!s->b_done)
                pthread_cond_wait(&s->cond, &s->lock); /* blocked elsewhere */
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void *scene_b(void *arg)
{
        struct scene *s = arg;
        sn_entry_t e = { 0 };
        int r = sn_port_dequeue(s->port, &e, 1, (uint32_t)test_timeout_ms(3000));

        pthread_mutex_lock(&s->lock);
        s->b_res = r;
        s->b_key = e.key;
        s->b_done = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* Runs the scene on a port of concurrency 1 of the daemon at path, without Check (it also runs
 * in a process of another PID namespace).  Returns 0 when B was released with packet 2, else a
 * small number saying what went wrong. */
static int scene_run(const char *path)
{
        struct scene s = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        sn_conn_t *c;
        pthread_t ta, tb;
        int ret;

        if (sn_conn_open(path, &c) < 0)
                return 10;
        if (sn_port_create(c, 1, &s.port) < 0)
                return 11;
        if (sn_port_post(s.port, 1, 0, 0) < 0)
                return 12;
        pthread_create(&ta, NULL, scene_a, &s);
        pthread_mutex_lock(&s.lock);
        while (!s.a_took)
                pthread_cond_wait(&s.cond, &s.lock);
        pthread_mutex_unlock(&s.lock);
        pthread_create(&tb, NULL, scene_b, &s);
        if (sn_port_post(s.port, 2, 0, 0) < 0)
                return 13;
        pthread_join(tb, NULL);
        pthread_join(ta, NULL);
        ret = s.a_res != 1 ? 14 : s.b_res == -ETIMEDOUT ? 1 : s.b_res != 1 || s.b_key != 2 ? 15 : 0;
        sn_port_close(s.port);
        sn_conn_close(c);
        return ret;
}

START_TEST(test_same_namespace)
{
        start();
        ck_assert_int_eq(scene_run(D.path), 0);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * The client in a new user and PID namespace (its first process is its pid 1, its threads 2
 * and 3): the daemon finds the threads by their ids in the client's namespace (NSpid).  Without
 * the mapping the thread ids would not be found, A would count as running and B would wait out
 * its timeout (1).
 */
START_TEST(test_child_pid_namespace)
{
        pid_t child;
        int st;

        start();
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                pid_t inner;

                if (unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0)
                        _exit(77);
                inner = fork();
                if (inner < 0)
                        _exit(20);
                if (inner == 0)
                        _exit(getpid() == 1 ? scene_run(D.path) : 21);
                while (waitpid(inner, &st, 0) < 0 && errno == EINTR)
                        ;
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 22);
        }
        while (waitpid(child, &st, 0) < 0 && errno == EINTR)
                ;
        ck_assert(WIFEXITED(st));
        if (WEXITSTATUS(st) == 77) {
                fprintf(stderr, "test_child_pid_namespace: SKIP: unshare(CLONE_NEWUSER | "
                                "CLONE_NEWPID) refused here\n");
        } else {
                ck_assert_msg(WEXITSTATUS(st) == 0, "the client in a child PID namespace: %d%s",
                              WEXITSTATUS(st),
                              WEXITSTATUS(st) == 1 ? " (B was not released)" : "");
        }
        test_daemon_finish(&D, baseline);
}
END_TEST

/* ---- raw: thread ids a client chooses ------------------------------------------------------ */

static void process(int fd, uint32_t id, uint32_t port, uint32_t timeout_ms, uint32_t thread)
{
        struct snw_process body = { .port = port, .timeout_ms = timeout_ms, .max_entries = 1,
                                    .thread = thread };
        uint8_t buf[256];
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0, 0, 0, 0), &body);

        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
}

static void post(int fd, uint32_t id, uint32_t port, uint64_t key)
{
        struct snw_post body = { .port = port };
        struct snw_packet pk = { .key = key };
        uint8_t buf[256];
        uint8_t *p = snw_post_encode(sn_msg_begin(buf, SN_MSG_POST, id, 0, 0, 1, 0), &body);

        p = snw_packet_encode(p, &pk);
        raw_send(fd, buf, (size_t)(p - buf), NULL, 0);
        expect_reply(fd, SN_MSG_POST_REPLY, id, 0);
}

/* The next message answers PROCESS call id with status and, when status is 0, one entry key. */
static void expect_process(int fd, uint32_t id, uint32_t status, uint64_t key)
{
        uint8_t buf[1024];
        const struct sn_msg_desc *d;
        struct snw_header h;
        struct snw_entry e;
        ssize_t len = raw_recv(fd, buf, sizeof(buf));

        ck_assert_int_gt(len, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)len, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_uint_eq(h.id, id);
        ck_assert_msg(h.status == status, "call %u: status %u, expected %u", id, h.status, status);
        ck_assert_uint_eq(h.count2, status ? 0 : 1);
        if (!status) {
                snw_entry_decode(sn_msg_array(buf, d, 2), &e);
                ck_assert_uint_eq(e.key, key);
        }
}

/* Thread `thread` takes packet 1 of a port of concurrency 1; a waiter (an id no thread has)
 * parks for 300 ms; packet 2 is posted.  Returns whether the waiter was given it. */
static bool released_beside(int fd, uint32_t *id, uint32_t thread)
{
        uint32_t port = raw_port_create_ex(fd, (*id)++, NULL, 1), w;
        uint8_t buf[256];
        const struct sn_msg_desc *d;
        struct snw_header h;
        ssize_t len;
        bool released;

        post(fd, (*id)++, port, 1);
        process(fd, *id, port, 0, thread);
        expect_process(fd, (*id)++, 0, 1);
        w = (*id)++;
        process(fd, w, port, 300, 0x7fffffffu);
        post(fd, (*id)++, port, 2);
        len = raw_recv(fd, buf, sizeof(buf));
        ck_assert_int_gt(len, 0);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)len, &h, &d), 0);
        ck_assert_uint_eq(h.type, SN_MSG_PROCESS_REPLY);
        ck_assert_uint_eq(h.id, w);
        released = h.status == 0;
        ck_assert_uint_eq(h.status, released ? 0 : ETIMEDOUT);
        /* The port closes with its runner and what is left. */
        {
                struct snw_port body = { .port = port };

                snw_port_encode(sn_msg_begin(buf, SN_MSG_PORT_CLOSE, *id, 0, 0, 0, 0), &body);
                raw_send(fd, buf, sn_msg_size(SN_MSG_PORT_CLOSE, 0, 0), NULL, 0);
                expect_reply(fd, SN_MSG_PORT_CLOSE_REPLY, (*id)++, 0);
        }
        return released;
}

struct sleeper {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pid_t tid;
        bool done;
};

static void *sleeper_thread(void *arg)
{
        struct sleeper *s = arg;

        pthread_mutex_lock(&s->lock);
        s->tid = gettid();
        pthread_cond_broadcast(&s->cond);
        while (!s->done)
                pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

START_TEST(test_unreadable_threads_count)
{
        struct sleeper s = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        pid_t other;
        pthread_t t;
        uint32_t id = 2;
        int fd;

        start();
        fd = raw_hello(D.path);
        pthread_create(&t, NULL, sleeper_thread, &s);
        pthread_mutex_lock(&s.lock);
        while (!s.tid)
                pthread_cond_wait(&s.cond, &s.lock);
        pthread_mutex_unlock(&s.lock);
        other = fork(); /* another process, blocked: never read as one of ours */
        ck_assert_int_ge(other, 0);
        if (other == 0) {
                pause();
                _exit(0);
        }
        {
                const uint32_t unreadable[] = {
                        0x3fffff,           /* no such thread (above this machine's pid_max) */
                        (uint32_t)other,    /* another process's thread, blocked */
                        (uint32_t)D.pid,    /* the daemon itself, blocked in its loop */
                        0,                  /* any number is an identity on the wire */
                        0x00400000,         /* the library's event-loop identities */
                        0xffffffffu,
                };

                for (size_t i = 0; i < SN_ARRAY_SIZE(unreadable); i++)
                        ck_assert_msg(!released_beside(fd, &id, unreadable[i]),
                                      "thread %#x was read as blocked", unreadable[i]);
        }
        /* The control: a blocked thread of the client's own process frees the slot. */
        ck_assert_msg(released_beside(fd, &id, (uint32_t)s.tid),
                      "the client's own blocked thread did not free its slot");
        kill(other, SIGKILL);
        waitpid(other, NULL, 0);
        pthread_mutex_lock(&s.lock);
        s.done = true;
        pthread_cond_broadcast(&s.cond);
        pthread_mutex_unlock(&s.lock);
        pthread_join(t, NULL);
        close(fd);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* ---- through the library: a thread whose entries another thread read for it ------------- */

struct handed {
        sn_port_t *port;
        pid_t tid;
        int res;
        uint64_t key;
        long long done_ms;
        _Atomic bool done;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool let_go; /* the second thread, back with its entry, then blocks until this */
};

static sem_t in_handler;
static int leave_handler[2]; /* a pipe: read() may block in a signal handler, sem_wait() may not */

/* Holds the second thread inside its dequeue, asleep, as a scheduler would that kept it from
 * the CPU after it was woken. */
static void hold_thread(int sig)
{
        int saved = errno;
        char ch;

        (void)sig;
        sem_post(&in_handler);
        while (read(leave_handler[0], &ch, 1) < 0 && errno == EINTR)
                ;
        errno = saved;
}

static void *handed_wait(void *arg)
{
        struct handed *h = arg;
        sn_entry_t e = { 0 };

        __atomic_store_n(&h->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
        h->res = sn_port_dequeue(h->port, &e, 1, (uint32_t)test_timeout_ms(20000));
        h->key = e.key;
        h->done_ms = now_ms();
        atomic_store(&h->done, true);
        pthread_mutex_lock(&h->lock);
        while (!h->let_go)
                pthread_cond_wait(&h->cond, &h->lock); /* blocked elsewhere */
        pthread_mutex_unlock(&h->lock);
        return NULL;
}

/*
 * On a new connection to the test daemon with a port of concurrency: A waits first (and so
 * reads for the connection), B waits behind it, asleep in the library, and is then held in
 * its signal handler.  The caller restores *old and lets B go (leave_handler).
 */
static sn_conn_t *hold_b_behind_a(uint32_t concurrency, struct handed *a, struct handed *b,
                                  pthread_t *ta, pthread_t *tb, struct sigaction *old)
{
        struct sigaction sa = { .sa_handler = hold_thread };
        long long deadline;
        sn_conn_t *c;

        sem_init(&in_handler, 0, 0);
        if (leave_handler[0] <= 0)
                ck_assert_int_eq(pipe2(leave_handler, O_CLOEXEC), 0);
        ck_assert_int_eq(sigaction(SIGUSR1, &sa, old), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        ck_assert_int_eq(sn_port_create(c, concurrency, &a->port), 0);
        b->port = a->port;
        pthread_create(ta, NULL, handed_wait, a);
        test_status_wait_at_least(c, "waiters", 1, 5000, "A's wait never parked");
        pthread_create(tb, NULL, handed_wait, b);
        test_status_wait_at_least(c, "waiters", 2, 5000, "B's wait never parked");
        /* B asleep in the library (futex: its condition variable), A reading. */
        deadline = now_ms() + test_timeout_ms(5000);
        while (!__atomic_load_n(&b->tid, __ATOMIC_ACQUIRE) ||
               test_thread_syscall(b->tid) != SYS_futex) {
                ck_assert_msg(now_ms() < deadline, "B never slept");
                usleep(1000);
        }
        pthread_kill(*tb, SIGUSR1);
        while (sem_wait(&in_handler) < 0)
                ;
        return c;
}

/*
 * A reads for the connection (the first to wait); B waits behind it, asleep in the library,
 * and is held there by a signal handler.  Packet 1 goes to B (the most recent waiter); A reads
 * it for B and wakes it, but B does not run.  Packet 2 then waits for the one slot: B is not
 * blocked elsewhere, only not yet back, so A must not get it while B is held (with the rings,
 * which give B's answer back only once B has it).  On the socket the daemon cannot tell, and
 * counts B as running for 16 ms after it first saw the answer read.
 */
static void handed_scene(bool rings)
{
        struct handed a = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER },
                      b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        struct sigaction old;
        sn_conn_t *c;
        pthread_t ta, tb;
        long long deadline, posted;

        start();
        if (rings)
                unsetenv("SOCKNOTIFY_NO_SHM");
        else
                setenv("SOCKNOTIFY_NO_SHM", "1", 1);
        c = hold_b_behind_a(1, &a, &b, &ta, &tb, &old);
        ck_assert_int_eq(sn_port_post(a.port, 1, 0, 0), 0);
        posted = now_ms();
        ck_assert_int_eq(sn_port_post(a.port, 2, 0, 0), 0);
        if (rings) {
                /* The daemon reads B at once, after 1 ms, then at intervals doubling to 16 ms:
                 * a few dozen readings, and B, asleep, counts in all of them. */
                while (now_ms() < posted + 300) {
                        ck_assert_msg(!atomic_load(&a.done),
                                      "A was given packet %llu while B had not woken",
                                      (unsigned long long)a.key);
                        usleep(5000);
                }
                /* B held for good must not hold the ring's space for good: the replies after
                 * its answer still flow (4,000 posts are about twice the completion ring). */
                for (int i = 0; i < 4000; i++)
                        ck_assert_int_eq(sn_port_post(a.port, 100 + (uint64_t)i, 0, 0), 0);
        } else {
                deadline = now_ms() + test_timeout_ms(5000);
                while (!atomic_load(&a.done)) {
                        ck_assert_msg(now_ms() < deadline, "A never got packet 2");
                        usleep(1000);
                }
                ck_assert_int_eq(a.res, 1);
                ck_assert_uint_eq(a.key, 2);
                ck_assert_msg(a.done_ms >= posted + 16, "A released %lld ms after the post",
                              a.done_ms - posted);
        }
        /* B wakes with packet 1 and blocks elsewhere: now A gets packet 2 (with the rings). */
        ck_assert_int_eq(write(leave_handler[1], "g", 1), 1);
        deadline = now_ms() + test_timeout_ms(5000);
        while (!atomic_load(&a.done) || !atomic_load(&b.done)) {
                ck_assert_msg(now_ms() < deadline, "A %d, B %d", a.done, b.done);
                usleep(1000);
        }
        ck_assert_int_eq(b.res, 1);
        ck_assert_uint_eq(b.key, 1);
        ck_assert_int_eq(a.res, 1);
        ck_assert_uint_eq(a.key, 2);
        pthread_mutex_lock(&a.lock);
        a.let_go = true;
        pthread_cond_signal(&a.cond);
        pthread_mutex_unlock(&a.lock);
        pthread_mutex_lock(&b.lock);
        b.let_go = true;
        pthread_cond_signal(&b.cond);
        pthread_mutex_unlock(&b.lock);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        sigaction(SIGUSR1, &old, NULL);
        sn_port_close(a.port);
        sn_conn_close(c);
        unsetenv("SOCKNOTIFY_NO_SHM");
        test_daemon_finish(&D, baseline);
}

/* Lets a handed_wait() thread that came back go. */
static void handed_let_go(struct handed *h, pthread_t t)
{
        pthread_mutex_lock(&h->lock);
        h->let_go = true;
        pthread_cond_signal(&h->cond);
        pthread_mutex_unlock(&h->lock);
        pthread_join(t, NULL);
}

/*
 * B's answer held for good (B in its signal handler), and then no thread reads for the
 * connection: the application submits calls and polls sn_conn_fd() for their answers.  Once
 * the answers behind B's fill the ring, the daemon must ring the application's doorbell, and
 * the library give everything back when the application collects: 4,000 calls are about twice
 * the completion ring.
 */
START_TEST(test_held_answer_with_polled_calls)
{
        struct handed a = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER },
                      b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        struct sigaction old;
        long long deadline;
        sn_conn_t *c;
        pthread_t ta, tb;
        int fd, collected = 0;

        start();
        unsetenv("SOCKNOTIFY_NO_SHM");
        c = hold_b_behind_a(2, &a, &b, &ta, &tb, &old);
        /* Packet 1 to B (held), packet 2 to A, which comes back and blocks elsewhere. */
        ck_assert_int_eq(sn_port_post(a.port, 1, 0, 0), 0);
        ck_assert_int_eq(sn_port_post(a.port, 2, 0, 0), 0);
        deadline = now_ms() + test_timeout_ms(5000);
        while (!atomic_load(&a.done)) {
                ck_assert_msg(now_ms() < deadline, "A never got a packet");
                usleep(1000);
        }
        fd = sn_conn_fd(c);
        ck_assert_int_ge(fd, 0);
        for (int i = 0; i < 4000; i++) {
                sn_call_t *call;
                struct pollfd pfd = { .fd = fd, .events = POLLIN };

                ck_assert_int_eq(sn_port_submit(a.port, NULL, 0, 1, 0, SN_WAITER_MIN + 1, NULL,
                                                &call), 0);
                while (collected <= i) {
                        ck_assert_msg(poll(&pfd, 1, test_timeout_ms(5000)) == 1,
                                      "%d of %d calls answered", collected, i + 1);
                        while (sn_conn_collect(c, &call) == 1) {
                                ck_assert_int_eq(sn_call_result(call, NULL, NULL), -ETIMEDOUT);
                                sn_call_free(call);
                                collected++;
                        }
                }
        }
        ck_assert_int_eq(write(leave_handler[1], "g", 1), 1);
        deadline = now_ms() + test_timeout_ms(5000);
        while (!atomic_load(&b.done)) {
                ck_assert_msg(now_ms() < deadline, "B never came back");
                usleep(1000);
        }
        ck_assert_int_eq(b.res, 1);
        ck_assert_int_eq(a.res, 1);
        ck_assert_uint_eq(a.key + b.key, 3);
        handed_let_go(&a, ta);
        handed_let_go(&b, tb);
        sigaction(SIGUSR1, &old, NULL);
        sn_port_close(a.port);
        sn_conn_close(c);
        test_daemon_finish(&D, baseline);
}
END_TEST

/*
 * A runner restored by a re-exec: B took packet 1 on c1 and blocked elsewhere; the daemon
 * re-executes; A waits on c2 and packet 2 comes.  B's answer went out before the re-exec and
 * was read: A must be released, though c1 gets no reply any more that would pass a mark set
 * after the restart.
 */
START_TEST(test_restored_runner_blocks)
{
        struct handed a = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER },
                      b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        long long deadline, before;
        sn_conn_t *c1, *c2;
        pthread_t ta, tb;

        start();
        unsetenv("SOCKNOTIFY_NO_SHM");
        ck_assert_int_eq(sn_conn_open(D.path, &c1), 0);
        ck_assert_int_eq(sn_conn_open(D.path, &c2), 0);
        ck_assert_int_eq(sn_port_create_named(c1, "restored-runner", 1, &b.port), 0);
        ck_assert_int_eq(sn_port_open(c2, "restored-runner", &a.port), 0);
        pthread_create(&tb, NULL, handed_wait, &b);
        test_status_wait_at_least(c2, "waiters", 1, 5000, "B's wait never parked");
        ck_assert_int_eq(sn_port_post(a.port, 1, 0, 0), 0);
        deadline = now_ms() + test_timeout_ms(5000);
        while (!atomic_load(&b.done)) {
                ck_assert_msg(now_ms() < deadline, "B never got packet 1");
                usleep(1000);
        }
        before = test_status_number(c2, "reexecs");
        ck_assert_int_eq(kill(D.pid, SIGUSR2), 0);
        test_status_wait_at_least(c2, "reexecs", before + 1, 10000, "the daemon never re-executed");
        pthread_create(&ta, NULL, handed_wait, &a);
        test_status_wait_at_least(c2, "waiters", 1, 5000, "A's wait never parked");
        ck_assert_int_eq(sn_port_post(a.port, 2, 0, 0), 0);
        deadline = now_ms() + test_timeout_ms(5000);
        while (!atomic_load(&a.done)) {
                ck_assert_msg(now_ms() < deadline,
                              "A was never released: B, restored, counts as running for good");
                usleep(1000);
        }
        ck_assert_int_eq(a.res, 1);
        ck_assert_uint_eq(a.key, 2);
        handed_let_go(&a, ta);
        handed_let_go(&b, tb);
        sn_port_close(a.port);
        sn_port_close(b.port);
        sn_conn_close(c2);
        sn_conn_close(c1);
        test_daemon_finish(&D, baseline);
}
END_TEST

/* ---- through the library: what reading the runners costs (issue 39) ---------------------- */

enum { READ_PORTS = 1, READ_SLEEPERS = 32, READ_DEQUEUES = 400, READ_BURST = 16 };

struct read_scene {
        sn_port_t *ports[READ_PORTS];
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int taken;
        bool done;
};

struct read_sleeper {
        struct read_scene *s;
        sn_port_t *port;
};

/* Takes one entry, then sleeps until the scene is done: a runner that is blocked elsewhere. */
static void *read_sleeper(void *arg)
{
        struct read_sleeper *rs = arg;
        struct read_scene *s = rs->s;
        sn_entry_t e;
        int r = sn_port_dequeue(rs->port, &e, 1, (uint32_t)test_timeout_ms(20000));

        pthread_mutex_lock(&s->lock);
        if (r == 1)
                s->taken++;
        pthread_cond_broadcast(&s->cond);
        while (!s->done)
                pthread_cond_wait(&s->cond, &s->lock);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/*
 * The attack of issue 39: 32 sleeping threads of the client run on a port of concurrency 1, so
 * every one-entry dequeue of another thread relies on all of them being blocked.  The daemon
 * read all 32 /proc files again for each dequeue (about 15 us each).  Now a reading of
 * "blocked" holds for 16 ms, and the user's reads come from a bucket of 16 that fills at 4 a
 * millisecond, one call reading at most what it holds: counted in the status document
 * (user.thread_reads), per dequeue and per millisecond.  The sleepers still free the slot:
 * the dequeues get entries.
 */
START_TEST(test_thread_reads_bounded)
{
        struct read_scene s = { .lock = PTHREAD_MUTEX_INITIALIZER,
                                .cond = PTHREAD_COND_INITIALIZER };
        struct read_sleeper rs[READ_SLEEPERS];
        pthread_t t[READ_SLEEPERS];
        long long deadline, reads, t0, elapsed;
        int got = 0;
        sn_conn_t *c;

        start();
        ck_assert_int_eq(sn_conn_open(D.path, &c), 0);
        for (int i = 0; i < READ_PORTS; i++)
                ck_assert_int_eq(sn_port_create(c, 1, &s.ports[i]), 0);
        for (int i = 0; i < READ_SLEEPERS; i++) {
                rs[i] = (struct read_sleeper){ &s, s.ports[i % READ_PORTS] };
                pthread_create(&t[i], NULL, read_sleeper, &rs[i]);
                ck_assert_int_eq(sn_port_post(rs[i].port, (uint64_t)i, 0, 0), 0);
        }
        /* Each sleeper is released once the ones before it on its port are read as blocked. */
        deadline = now_ms() + test_timeout_ms(20000);
        pthread_mutex_lock(&s.lock);
        while (s.taken < READ_SLEEPERS) {
                ck_assert_msg(now_ms() < deadline, "%d of %d sleepers took an entry", s.taken,
                              READ_SLEEPERS);
                pthread_mutex_unlock(&s.lock);
                usleep(1000);
                pthread_mutex_lock(&s.lock);
        }
        pthread_mutex_unlock(&s.lock);
        /* The last sleeper is read as blocked once it has its answer (on the socket, 16 ms
         * after the daemon saw it read): from then on a dequeue of this thread gets entries. */
        ck_assert_int_eq(sn_port_post(s.ports[0], 999, 0, 0), 0);
        deadline = now_ms() + test_timeout_ms(5000);
        for (;;) {
                sn_entry_t e;
                int r = sn_port_dequeue(s.ports[0], &e, 1, 0);

                if (r == 1)
                        break;
                ck_assert_msg(r == -ETIMEDOUT, "dequeue: %d", r);
                ck_assert_msg(now_ms() < deadline, "the sleepers never freed the slot");
                usleep(1000);
        }
        reads = test_status_number(c, "user.thread_reads");
        /* The slot was freed by reading the sleepers: the count counts what the daemon read. */
        ck_assert_msg(reads >= 1, "the slot was freed with %lld thread-state reads counted",
                      reads);
        t0 = now_ms();
        for (int i = 0; i < READ_DEQUEUES; i++) {
                sn_port_t *p = s.ports[i % READ_PORTS];
                sn_entry_t e;
                int r;

                ck_assert_int_eq(sn_port_post(p, 1000 + (uint64_t)i, 0, 0), 0);
                r = sn_port_dequeue(p, &e, 1, 0);
                ck_assert_msg(r == 1 || r == -ETIMEDOUT, "dequeue %d: %d", i, r);
                got += r == 1;
        }
        reads = test_status_number(c, "user.thread_reads") - reads;
        elapsed = now_ms() - t0 + 1;
        ck_assert_msg(reads <= (long long)READ_BURST * READ_DEQUEUES,
                      "%lld thread-state reads for %d dequeues (%.1f a dequeue, at most %d)",
                      reads, READ_DEQUEUES, (double)reads / READ_DEQUEUES, READ_BURST);
        ck_assert_msg(reads <= READ_BURST + 4 * elapsed,
                      "%lld thread-state reads in %lld ms (at most %d + 4 a millisecond)", reads,
                      elapsed, READ_BURST);
        ck_assert_msg(got > 0, "no dequeue of %d got an entry: the sleepers' slots stayed taken",
                      READ_DEQUEUES);
        pthread_mutex_lock(&s.lock);
        s.done = true;
        pthread_cond_broadcast(&s.cond);
        pthread_mutex_unlock(&s.lock);
        for (int i = 0; i < READ_SLEEPERS; i++)
                pthread_join(t[i], NULL);
        for (int i = 0; i < READ_PORTS; i++)
                sn_port_close(s.ports[i]);
        sn_conn_close(c);
        test_daemon_finish(&D, baseline);
}
END_TEST

START_TEST(test_handed_entries_rings)
{
        handed_scene(true);
}
END_TEST

START_TEST(test_handed_entries_socket)
{
        handed_scene(false);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("blocked");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, NULL, stop);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_same_namespace);
        tcase_add_test(tc, test_child_pid_namespace);
        tcase_add_test(tc, test_unreadable_threads_count);
        tcase_add_test(tc, test_handed_entries_rings);
        tcase_add_test(tc, test_handed_entries_socket);
        tcase_add_test(tc, test_held_answer_with_polled_calls);
        tcase_add_test(tc, test_restored_runner_blocks);
        tcase_add_test(tc, test_thread_reads_bounded);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * sd-client.c - the client the live systemd tests (tests/systemd/) run inside an instance.
 *
 * It connects to socknotifyd the way any program does (sn_conn_open(NULL): SOCKNOTIFY_SOCKET,
 * else the per-user or system default path), creates a completion port, posts one packet
 * carrying a value unique to this run and dequeues it again: a round trip through the daemon,
 * which proves the daemon accepted the connection, answered the handshake and served calls.
 *
 *   sd-client serve        one round trip; prints "served" and the time it took; exit 0
 *   sd-client hold FILE    one round trip, prints "ready", then waits (at most 120 s) until
 *                          FILE exists and tries a second round trip on the same connection and
 *                          port; prints "after: ok" or "after: <call> -> <ERRNO NAME> (<text>)"
 *                          and exits 0 for ok, 3 when the call failed
 *   sd-client wait FILE    as hold, but before "ready" it also registers one end of a socket
 *                          pair (LEVEL, IN) and parks a dequeue in a second thread; when FILE
 *                          exists it writes to the other end: the dequeue parked before must
 *                          return that socket's IN ("after: ok"), then the second round trip
 *   sd-client blocked      a port of concurrency 1: thread A takes a posted packet and then
 *                          blocks until thread B, waiting on the same port, has taken a second
 *                          one, which it gets only if the daemon sees A blocked and frees its
 *                          slot (/proc); prints "blocked: ok in N ms" and exits 0, or says what
 *                          B got and exits 5
 *
 * Any failure of the first round trip prints the step and the error and exits 1.  Every wait
 * is bounded: the dequeue by 20 s, the FILE wait by 300 s (exit 4); the parked dequeue of
 * "wait" has no limit of its own (the script's timeout bounds the process).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <socknotify.h>

struct parked {
        sn_port_t *port;
        sn_entry_t e;
        int n;
};

static double now_ms(void);

/* "blocked": A runs on the port's only slot and blocks (a condition variable) until B has
 * its packet. */
static struct {
        sn_port_t *port;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool a_runs, b_got;
        int a, b;
} bl = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *blocked_a(void *arg)
{
        sn_entry_t e;
        struct timespec until;

        (void)arg;
        bl.a = sn_port_dequeue(bl.port, &e, 1, 20000);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 40;
        pthread_mutex_lock(&bl.lock);
        bl.a_runs = true;
        pthread_cond_broadcast(&bl.cond);
        while (bl.a == 1 && !bl.b_got)
                if (pthread_cond_timedwait(&bl.cond, &bl.lock, &until) != 0)
                        break;
        pthread_mutex_unlock(&bl.lock);
        return NULL;
}

static void *blocked_b(void *arg)
{
        sn_entry_t e;

        (void)arg;
        bl.b = sn_port_dequeue(bl.port, &e, 1, 20000);
        pthread_mutex_lock(&bl.lock);
        bl.b_got = bl.b == 1 && e.key == 2;
        pthread_cond_broadcast(&bl.cond);
        pthread_mutex_unlock(&bl.lock);
        return NULL;
}

static int blocked(sn_conn_t *conn)
{
        pthread_t a, b;
        double t;
        int r = sn_port_create(conn, 1, &bl.port);

        if (r < 0 || pthread_create(&a, NULL, blocked_a, NULL))
                return 1;
        r = sn_port_post(bl.port, 1, 0, 0);
        pthread_mutex_lock(&bl.lock);
        while (!bl.a_runs)
                pthread_cond_wait(&bl.cond, &bl.lock);
        pthread_mutex_unlock(&bl.lock);
        if (r < 0 || bl.a != 1 || pthread_create(&b, NULL, blocked_b, NULL))
                return 1;
        usleep(100000); /* B parks its dequeue: A holds the slot, nothing is queued */
        t = now_ms();
        if (sn_port_post(bl.port, 2, 0, 0) < 0)
                return 1;
        pthread_join(b, NULL);
        t = now_ms() - t;
        pthread_join(a, NULL);
        sn_port_close(bl.port);
        if (!bl.b_got) {
                printf("blocked: B got %d (%s) in %.0f ms\n", bl.b,
                       bl.b < 0 ? strerror(-bl.b) : "a packet", t);
                return 5;
        }
        printf("blocked: ok in %.1f ms\n", t);
        return 0;
}

static void *park(void *arg)
{
        struct parked *w = arg;

        /* Without a limit: the test may take minutes on a loaded machine between parking
         * this and ringing it, and a lost wait fails it all the same (the process is bounded by
         * the script's timeout, and prints nothing for the dequeue then). */
        w->n = sn_port_dequeue(w->port, &w->e, 1, SN_INFINITE);
        return NULL;
}

#define WAIT_MS 20000u

static double now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *errname(int err)
{
        const char *n = strerrorname_np(-err);

        return n ? n : "?";
}

/* Posts one packet and dequeues it.  Returns 0, or the failing call's negative errno with
 * *ret_call naming the call.  -EIO when a different packet came back. */
static int round_trip(sn_port_t *port, uint64_t key, const char **ret_call)
{
        sn_entry_t e;
        int r;

        *ret_call = "sn_port_post";
        r = sn_port_post(port, key, 7, ~key);
        if (r < 0)
                return r;
        *ret_call = "sn_port_dequeue";
        r = sn_port_dequeue(port, &e, 1, WAIT_MS);
        if (r < 0)
                return r;
        if (r != 1 || e.kind != SN_ENTRY_POSTED || e.key != key || e.events != 7 ||
            e.overlapped != ~key)
                return -EIO;
        return 0;
}

int main(int argc, char **argv)
{
        const char *call = "sn_conn_open";
        uint64_t key = ((uint64_t)getpid() << 32) | (uint64_t)time(NULL);
        sn_conn_t *conn = NULL;
        sn_port_t *port = NULL;
        double t0 = now_ms();
        int r;

        bool waiting = argc == 3 && !strcmp(argv[1], "wait");
        struct parked w = { 0 };
        sn_port_t *wport = NULL;
        pthread_t th;
        int sp[2] = { -1, -1 };

        if (argc < 2 ||
            (strcmp(argv[1], "serve") && strcmp(argv[1], "blocked") &&
             ((strcmp(argv[1], "hold") && !waiting) || argc != 3))) {
                fprintf(stderr, "usage: sd-client serve | sd-client hold FILE | "
                                "sd-client wait FILE | sd-client blocked\n");
                return 2;
        }
        r = sn_conn_open(NULL, &conn);
        if (r >= 0) {
                call = "sn_port_create";
                r = sn_port_create(conn, 1, &port);
        }
        if (r >= 0)
                r = round_trip(port, key, &call);
        if (r < 0) {
                printf("failed: %s -> %s (%s)\n", call, errname(r), sn_strerror(r));
                return 1;
        }
        printf("served in %.1f ms\n", now_ms() - t0);
        fflush(stdout);
        if (!strcmp(argv[1], "blocked")) {
                r = blocked(conn);
                sn_port_close(port);
                sn_conn_close(conn);
                return r;
        }
        if (waiting) {
                sn_registration_t reg = { .key = 42, .op = SN_OP_ENABLE,
                                          .filter = SN_REGISTER_EVENT_IN,
                                          .trigger = SN_TRIGGER_LEVEL };

                call = "register";
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                        return 1;
                reg.fd = sp[1];
                /* A port of its own: this thread runs on the first one (concurrency 1). */
                r = sn_port_create(conn, 1, &wport);
                if (r >= 0)
                        r = sn_port_process(wport, &reg, 1, NULL, 0, 0);
                if (r < 0 || reg.result < 0) {
                        printf("failed: %s -> %s\n", call, errname(r < 0 ? r : reg.result));
                        return 1;
                }
                w.port = wport;
                if (pthread_create(&th, NULL, park, &w))
                        return 1;
                usleep(200000); /* the dequeue is parked in the daemon */
        }
        if (!strcmp(argv[1], "hold") || waiting) {
                printf("ready\n");
                fflush(stdout);
                for (int i = 0; access(argv[2], F_OK) < 0; i++) {
                        if (i == 3000) {
                                printf("gave up waiting for %s\n", argv[2]);
                                return 4;
                        }
                        usleep(100000);
                }
                if (waiting) {
                        if (write(sp[0], "x", 1) != 1)
                                return 1;
                        pthread_join(th, NULL);
                        if (w.n != 1 || w.e.key != 42 || !(w.e.events & SN_EVENT_IN)) {
                                printf("after: the parked dequeue -> %s\n",
                                       w.n < 0 ? errname(w.n) : "wrong entry");
                                fflush(stdout);
                                sn_port_close(wport);
                                sn_port_close(port);
                                sn_conn_close(conn);
                                return 3;
                        }
                        printf("parked dequeue: ok\n");
                        sn_socket_close(conn, sp[1]);
                        close(sp[0]);
                        sn_port_close(wport);
                }
                r = round_trip(port, key + 1, &call);
                if (r < 0) {
                        printf("after: %s -> %s (%s)\n", call, errname(r), sn_strerror(r));
                        fflush(stdout);
                        sn_port_close(port);
                        sn_conn_close(conn);
                        return 3;
                }
                printf("after: ok\n");
        }
        sn_port_close(port);
        sn_conn_close(conn);
        return 0;
}

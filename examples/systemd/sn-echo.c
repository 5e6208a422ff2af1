/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * sn-echo - a TCP echo server run as a systemd service next to socknotifyd: the program of
 * socknotify-echo.service and .socket (README.md here), and of tests/systemd/test-client-units.sh.
 *
 * It takes its listening socket from systemd (LISTEN_FDS, LISTEN_PID: one socket, descriptor
 * 3), or listens on 127.0.0.1:PORT given as its argument.  One completion port holds the
 * listener and every connection, level-triggered and persistent; one worker thread dequeues,
 * accepts, echoes what it reads and closes a connection at its end of file.
 *
 * SIGTERM stops it as a service should: the listener is closed (no new connection), the open
 * connections are served until their clients close them (at most SN_ECHO_DRAIN_MS
 * milliseconds, 30000 by default), then a posted packet ends the worker and everything is
 * closed in order.  This is where the order of units matters: draining needs the daemon, so
 * the unit says After=socknotifyd.service, and at a shutdown systemd stops this service first
 * and the daemon only once it has ended.
 *
 * Prints "sn-echo: serving" once it serves and, at the end, "sn-echo: stopped: N
 * connection(s) drained, M cut"; exits 0 when every call to the daemon succeeded and no
 * connection had to be cut, 1 otherwise (with the call and its error).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <socknotify.h>

#define LISTEN_KEY 1u
#define STOP_KEY 2u
#define MAX_CONNS 1024

static sn_conn_t *conn;
static sn_port_t *port;
static int listener = -1;
static int conns[MAX_CONNS]; /* the open connections; key: index + 16 */
static atomic_int nopen, drained, failures;
static atomic_bool draining;

static void failed(const char *what, int r)
{
        fprintf(stderr, "sn-echo: %s: %s\n", what, sn_strerror(r));
        failures++;
}

static long long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void add_conn(int fd)
{
        int i;

        for (i = 0; i < MAX_CONNS && conns[i] >= 0; i++)
                ;
        if (i == MAX_CONNS) {
                close(fd);
                return;
        }
        sn_registration_t r = { .fd = fd, .key = (uint64_t)i + 16, .op = SN_OP_ENABLE,
                                .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        int e = sn_port_process(port, &r, 1, NULL, 0, 0);

        if (e < 0 || r.result < 0) {
                failed("register a connection", e < 0 ? e : r.result);
                close(fd);
                return;
        }
        conns[i] = fd;
        nopen++;
}

static void end_conn(int i)
{
        int e = sn_socket_close(conn, conns[i]);

        if (e < 0)
                failed("close a connection", e);
        conns[i] = -1;
        nopen--;
        if (atomic_load(&draining))
                drained++;
}

static void *worker(void *arg)
{
        (void)arg;
        for (;;) {
                sn_entry_t e[16];
                int n = sn_port_dequeue(port, e, 16, SN_INFINITE);

                if (n < 0) {
                        failed("dequeue", n);
                        return NULL;
                }
                for (int k = 0; k < n; k++) {
                        if (e[k].kind == SN_ENTRY_POSTED && e[k].key == STOP_KEY)
                                return NULL;
                        if (e[k].key == LISTEN_KEY) {
                                int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);

                                if (fd >= 0)
                                        add_conn(fd);
                                continue;
                        }
                        if (e[k].key < 16 || e[k].key >= 16 + MAX_CONNS || conns[e[k].key - 16] < 0)
                                continue;
                        int i = (int)(e[k].key - 16);
                        char buf[4096];
                        ssize_t got = recv(conns[i], buf, sizeof(buf), MSG_DONTWAIT);

                        if (got > 0)
                                (void)!send(conns[i], buf, (size_t)got, MSG_NOSIGNAL);
                        else if (got == 0 || (errno != EAGAIN && errno != EINTR))
                                end_conn(i);
                }
        }
}

/* The listening socket systemd passed (descriptor 3), or one on 127.0.0.1:arg. */
static int take_listener(const char *arg)
{
        const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd;

        if (pid && fds && atol(pid) == (long)getpid() && atoi(fds) == 1) {
                unsetenv("LISTEN_PID");
                unsetenv("LISTEN_FDS");
                unsetenv("LISTEN_FDNAMES");
                return 3;
        }
        if (!arg) {
                fprintf(stderr, "sn-echo: no socket from systemd; give a port to listen on\n");
                return -1;
        }
        sa.sin_port = htons((uint16_t)atoi(arg));
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
                perror("sn-echo: listen");
                return -1;
        }
        return fd;
}

int main(int argc, char **argv)
{
        const char *d = getenv("SN_ECHO_DRAIN_MS");
        long long drain_ms = d ? atoll(d) : 30000, deadline;
        pthread_t th;
        sigset_t set;
        int sig, e, cut = 0;

        for (int i = 0; i < MAX_CONNS; i++)
                conns[i] = -1;
        listener = take_listener(argc > 1 ? argv[1] : NULL);
        if (listener < 0)
                return 1;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        if ((e = sn_conn_open(NULL, &conn)) < 0) {
                fprintf(stderr, "sn-echo: %s\n", sn_conn_open_error());
                return 1;
        }
        if ((e = sn_port_create(conn, 1, &port)) < 0) {
                failed("create a port", e);
                return 1;
        }
        sn_registration_t r = { .fd = listener, .key = LISTEN_KEY, .op = SN_OP_ENABLE,
                                .filter = SN_REGISTER_EVENT_IN, .trigger = SN_TRIGGER_LEVEL };
        e = sn_port_process(port, &r, 1, NULL, 0, 0);
        if (e < 0 || r.result < 0) {
                failed("register the listener", e < 0 ? e : r.result);
                return 1;
        }
        pthread_create(&th, NULL, worker, NULL);
        printf("sn-echo: serving\n");
        fflush(stdout);
        while (sigwait(&set, &sig) != 0)
                ;
        /* No new connection; the open ones are served until their clients close them. */
        atomic_store(&draining, true);
        printf("sn-echo: stopping: %d connection(s) open\n", nopen);
        fflush(stdout);
        if ((e = sn_socket_close(conn, listener)) < 0)
                failed("close the listener", e);
        deadline = now_ms() + drain_ms;
        while (nopen > 0 && now_ms() < deadline && !failures)
                usleep(10000);
        if ((e = sn_port_post(port, STOP_KEY, 0, 0)) < 0) {
                failed("post the stop", e);
                pthread_cancel(th);
        }
        pthread_join(th, NULL);
        for (int i = 0; i < MAX_CONNS; i++)
                if (conns[i] >= 0) {
                        cut++;
                        sn_socket_close(conn, conns[i]);
                }
        if ((e = sn_port_close(port)) < 0)
                failed("close the port", e);
        sn_conn_close(conn);
        printf("sn-echo: stopped: %d connection(s) drained, %d cut\n", drained, cut);
        return failures || cut ? 1 : 0;
}

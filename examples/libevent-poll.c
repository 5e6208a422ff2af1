/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * libevent-poll.c - the "Simple replacement for polling" scenario driven by a libevent loop.
 *
 * The same scenario as poll-replacement.c (one accepted TCP connection, a persistent
 * level-triggered IN | HANGUP registration, a client thread that sends CLIENT_LOOP_COUNT 4-byte
 * payloads and disconnects), but nothing blocks: every ProcessSocketNotifications call is
 * submitted with sn_port_submit(), and libevent watches the connection's descriptor
 * (sn_conn_fd()) and collects the answers with sn_conn_collect().  The loop is one task with
 * its own waiter identity (SN_WAITER_MIN), not an OS thread.  At hang-up it removes the
 * registration and waits for the REMOVE notification, still from the loop.  Exit status 0 when
 * all data arrived, the registration was gone before the port closed, and every context and
 * thread is gone.
 */
#include "examples/common.h"

#include <errno.h>
#include <stdbool.h>
#include <event2/event.h>

#define WAITER SN_WAITER_MIN

struct loop_state {
        struct event_base *base;
        sn_conn_t *conn;
        sn_port_t *port;
        int sock;
        bool removing;
        int error; /* 0, or the negative errno that stopped the loop */
        long timeouts;
};

static void fail(struct loop_state *st, int err)
{
        fprintf(stderr, "libevent-poll: %s\n", sn_strerror(err));
        st->error = err;
        event_base_loopexit(st->base, NULL);
}

/* Submits the next call: the registration change (if any) and a dequeue of one entry. */
static void submit(struct loop_state *st, const sn_registration_t *reg)
{
        sn_call_t *call;
        int r = sn_port_submit(st->port, reg, reg ? 1 : 0, 1, MAX_TIMEOUT, WAITER, NULL, &call);

        if (r < 0)
                fail(st, r);
}

/* One completed call: handle its entry, submit the next one. */
static void on_call(struct loop_state *st, sn_call_t *call)
{
        const sn_registration_t *regs;
        const sn_entry_t *entry;
        sn_registration_t removal = { .fd = st->sock, .op = SN_OP_REMOVE };
        char data[512];
        int n = sn_call_result(call, &entry, &regs);

        if (regs && regs[0].result < 0) {
                fail(st, regs[0].result);
                return;
        }
        if (n == -ETIMEDOUT) {
                st->timeouts++;
                submit(st, NULL);
                return;
        }
        if (n < 0) {
                fail(st, n);
                return;
        }
        if (st->removing) {
                /* Only the REMOVE notification ends the registration; others are dropped. */
                if (entry[0].events & SN_EVENT_REMOVE)
                        event_base_loopexit(st->base, NULL);
                else
                        submit(st, NULL);
                return;
        }
        if (entry[0].events & SN_EVENT_IN) {
                ssize_t got = recv((int)entry[0].key, data, sizeof(data), 0);

                if (got < 0 && errno != EAGAIN) {
                        fail(st, -errno);
                        return;
                }
                if (got > 0) {
                        atomic_fetch_add(&g_bytesReceived, got);
                        printf("Received client data.\n");
                }
        }
        if (entry[0].events & (SN_EVENT_HANGUP | SN_EVENT_ERR)) {
                printf("Client hung up: removing the registration.\n");
                st->removing = true;
                submit(st, &removal);
                return;
        }
        submit(st, NULL);
}

static void on_port_readable(evutil_socket_t fd, short what, void *arg)
{
        struct loop_state *st = arg;
        sn_call_t *call;
        int r;

        while ((r = sn_conn_collect(st->conn, &call)) == 1) {
                on_call(st, call);
                sn_call_free(call);
        }
        if (r < 0)
                fail(st, r);
}

static void on_guard(evutil_socket_t fd, short what, void *arg)
{
        fail(arg, -ETIMEDOUT);
}

static int run(void)
{
        struct loop_state st = { .sock = -1 };
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = SERVER_ADDRESS };
        socklen_t alen = sizeof(addr);
        struct event *ev = NULL, *guard = NULL;
        struct timeval ten = { .tv_sec = 10 };
        sn_registration_t reg;
        int listener = -1, r;

        r = sn_conn_open(NULL, &st.conn);
        if (r < 0) {
                fprintf(stderr, "libevent-poll: %s\n",
                        *sn_conn_open_error() ? sn_conn_open_error() : sn_strerror(r));
                return r;
        }
        r = sn_port_create(st.conn, 1, &st.port);
        if (r < 0)
                goto out;
        listener = socket(AF_INET, SOCK_STREAM, 0);
        if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
            getsockname(listener, (struct sockaddr *)&addr, &alen) < 0 ||
            listen(listener, SOMAXCONN) < 0) {
                r = -errno;
                goto out;
        }
        g_serverPort = addr.sin_port;
        if (CreateClientThread(CLIENT_LOOP_COUNT) != ERROR_SUCCESS) {
                r = -ENOMEM;
                goto out;
        }
        st.sock = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (st.sock < 0) {
                r = -errno;
                goto out;
        }

        st.base = event_base_new();
        r = sn_conn_fd(st.conn);
        if (!st.base || r < 0) {
                r = r < 0 ? r : -ENOMEM;
                goto out;
        }
        ev = event_new(st.base, r, EV_READ | EV_PERSIST, on_port_readable, &st);
        guard = evtimer_new(st.base, on_guard, &st);
        if (!ev || !guard || event_add(ev, NULL) < 0 || evtimer_add(guard, &ten) < 0) {
                r = -ENOMEM;
                goto out;
        }
        /* Register and wait in one call, the way ProcessSocketNotifications is meant to be. */
        reg = (sn_registration_t){ .fd = st.sock,
                                   .key = (uint64_t)st.sock,
                                   .filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP,
                                   .op = SN_OP_ENABLE,
                                   .trigger = SN_TRIGGER_LEVEL };
        submit(&st, &reg);
        printf("Waiting for client action (libevent loop)...\n");
        event_base_dispatch(st.base);
        r = st.error;
out:
        if (r < 0)
                fprintf(stderr, "libevent-poll: %s\n", sn_strerror(r));
        if (ev)
                event_free(ev);
        if (guard)
                event_free(guard);
        if (st.base)
                event_base_free(st.base);
        if (st.port)
                g_registrationsLeft = ExampleDaemonRegistrations();
        if (st.sock >= 0)
                sn_socket_close(st.conn, st.sock);
        if (listener >= 0)
                close(listener);
        if (st.conn)
                sn_conn_waiter_exit(st.conn, WAITER);
        sn_port_close(st.port);
        sn_conn_close(st.conn);
        JoinClientThreads();
        return r;
}

int main(void)
{
        int r = run();
        int status = ExampleReport("libevent-poll", CLIENT_LOOP_COUNT * 4);

        return r == 0 ? status : 1;
}

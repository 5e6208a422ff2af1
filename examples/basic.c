/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * basic.c - a tour of the native API against a running socknotifyd.
 *
 * Connects (SOCKNOTIFY_SOCKET or the default path), makes a TCP connection over loopback,
 * registers the server side for IN|HANGUP (level-triggered, persistent), and prints every step:
 * data arriving, a posted packet, the peer hanging up, the REMOVE notification, and a line of
 * the daemon's status document (socknotifyctl status shows all of it).  Exits 0 when every
 * step behaved as documented, 1 otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <socknotify.h>

#define KEY_SERVER 0x5e77e7u
#define KEY_WAKEUP 0xfeedu

static int fail(const char *what, int err)
{
        fprintf(stderr, "basic: %s: %s\n", what, sn_strerror(err));
        return 1;
}

static void show(const sn_entry_t *e)
{
        if (e->kind == SN_ENTRY_POSTED) {
                printf("  posted packet: key=%#llx bytes=%u overlapped=%#llx\n",
                       (unsigned long long)e->key, e->events,
                       (unsigned long long)e->overlapped);
                return;
        }
        printf("  notification: key=%#llx events=%s%s%s%s%s\n", (unsigned long long)e->key,
               e->events & SN_EVENT_IN ? " IN" : "", e->events & SN_EVENT_OUT ? " OUT" : "",
               e->events & SN_EVENT_HANGUP ? " HANGUP" : "", e->events & SN_EVENT_ERR ? " ERR" : "",
               e->events & SN_EVENT_REMOVE ? " REMOVE" : "");
}

/* A connected TCP pair over loopback: *client and *server. */
static int tcp_pair(int *client, int *server)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
            getsockname(l, (struct sockaddr *)&sa, &len) < 0)
                return -errno;
        *client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (*client < 0 || connect(*client, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        *server = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        close(l);
        return *server < 0 ? -errno : 0;
}

/* The value of the first "key" of a status document (compact JSON text): a number, or a
 * string's characters; "?" when the document has no such key (a user other than root sees no
 * counters).  A full program would use a JSON parser; this example links only libsocknotify. */
static const char *status_field(const char *doc, const char *key, char *out, size_t size)
{
        char pattern[64];
        const char *p;
        size_t n;

        snprintf(pattern, sizeof(pattern), "\"%s\":", key);
        p = strstr(doc, pattern);
        if (!p)
                return "?";
        p += strlen(pattern);
        if (*p == '"')
                p++;
        n = strcspn(p, "\",}");
        snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
        return out;
}

int main(void)
{
        sn_conn_t *conn = NULL;
        sn_port_t *port = NULL;
        sn_entry_t e[4];
        char buf[64], *status;
        int client = -1, server = -1, r, ok = 1;

        r = sn_conn_open(NULL, &conn);
        if (r < 0) {
                /* It names every socket path tried, each one's error, and what to do. */
                fprintf(stderr, "basic: %s\n",
                        *sn_conn_open_error() ? sn_conn_open_error() : sn_strerror(r));
                return 1;
        }
        printf("connected to socknotifyd\n");
        r = sn_port_create(conn, 0, &port);
        if (r < 0)
                return fail("creating a completion port", r);
        r = tcp_pair(&client, &server);
        if (r < 0)
                return fail("making a TCP connection", r);

        sn_registration_t reg = {
                .fd = server,
                .key = KEY_SERVER,
                .filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_HANGUP,
                .op = SN_OP_ENABLE,
                .trigger = SN_TRIGGER_LEVEL,
        };
        r = sn_port_process(port, &reg, 1, NULL, 0, 0);
        if (r < 0 || reg.result < 0)
                return fail("registering the socket", r < 0 ? r : reg.result);
        printf("registered the server socket for IN|HANGUP, level-triggered\n");

        r = sn_port_dequeue(port, e, 4, 0);
        printf("nothing sent yet, poll: %s\n", r == -ETIMEDOUT ? "timed out, as expected" : "?");
        ok &= r == -ETIMEDOUT;

        printf("client sends 5 bytes\n");
        ok &= send(client, "hello", 5, 0) == 5;
        r = sn_port_dequeue(port, e, 4, 1000);
        ok &= r == 1 && e[0].key == KEY_SERVER && (e[0].events & SN_EVENT_IN);
        for (int i = 0; i < r; i++)
                show(&e[i]);
        ok &= recv(server, buf, sizeof(buf), 0) == 5;
        printf("server read the 5 bytes; level-triggered readiness is gone: %s\n",
               sn_port_dequeue(port, e, 4, 0) == -ETIMEDOUT ? "yes" : "no");

        printf("posting a packet to wake a waiter\n");
        ok &= sn_port_post(port, KEY_WAKEUP, 42, 0x1234) == 0;
        r = sn_port_dequeue(port, e, 4, 1000);
        ok &= r == 1 && e[0].kind == SN_ENTRY_POSTED && e[0].key == KEY_WAKEUP;
        for (int i = 0; i < r; i++)
                show(&e[i]);

        printf("client closes its end\n");
        close(client);
        r = sn_port_dequeue(port, e, 4, 1000);
        ok &= r >= 1 && (e[0].events & SN_EVENT_HANGUP);
        for (int i = 0; i < r; i++)
                show(&e[i]);

        printf("removing the registration and waiting for its REMOVE notification\n");
        reg.op = SN_OP_REMOVE;
        for (;;) {
                r = sn_port_process(port, &reg, 1, e, 1, 1000);
                reg.op = SN_OP_NONE;
                if (r < 0) {
                        ok = 0;
                        break;
                }
                show(&e[0]);
                if (e[0].events & SN_EVENT_REMOVE)
                        break;
        }
        sn_socket_close(conn, server);

        /* The status document is JSON for programs (PROTOCOL.md, STATUS); a person reads a
         * line of it, and socknotifyctl status for the rest. */
        if (sn_conn_status(conn, &status) == 0) {
                char version[32], pid[16], notes[24];

                printf("daemon: socknotifyd %s, pid %s, %s notification(s) delivered so far "
                       "(socknotifyctl status shows the rest)\n",
                       status_field(status, "version", version, sizeof(version)),
                       status_field(status, "pid", pid, sizeof(pid)),
                       status_field(status, "notifications", notes, sizeof(notes)));
                free(status);
        }
        sn_port_close(port);
        sn_conn_close(conn);
        printf("%s\n", ok ? "all steps behaved as documented" : "SOMETHING WENT WRONG");
        return ok ? 0 : 1;
}

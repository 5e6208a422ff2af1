/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * listen-sn - a socket-activated program that waits for its listeners with socknotify, for
 * test-handoff-tool.sh: what a user of socknotify runs under socknotify-handoff(1).
 *
 *   listen-sn serve COUNT   takes its sockets as sd_listen_fds(3) does (LISTEN_PID must be its
 *                           pid), registers each on a port of its own (ENABLE, input, LEVEL,
 *                           PERSISTENT, key its index), prints "pid PID fds N ports P1 P2 ..."
 *                           once every registration succeeded, then serves COUNT connections
 *                           (0: until killed) as listen-echo does: reads one line, answers
 *                           "PID PORT LINE" and closes
 *
 * A refused registration (EEXIST: the listener is registered on another port) is printed on
 * stderr as "listen-sn: register fd N: ..." with exit status 3, as a real program would die.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socknotify.h"

#define MAX_LISTENERS 16

static unsigned local_port(int fd)
{
        struct sockaddr_in a;
        socklen_t len = sizeof(a);

        if (getsockname(fd, (struct sockaddr *)&a, &len) < 0 || a.sin_family != AF_INET)
                return 0;
        return ntohs(a.sin_port);
}

/* Reads one line from c and answers "PID PORT LINE"; closes c. */
static void answer(int c, unsigned port)
{
        char line[256], out[320];
        ssize_t got = 0, k;

        while (got < (ssize_t)sizeof(line) - 1 &&
               (k = read(c, line + got, sizeof(line) - 1 - (size_t)got)) > 0) {
                got += k;
                if (memchr(line, '\n', (size_t)got))
                        break;
        }
        line[got] = 0;
        snprintf(out, sizeof(out), "%ld %u %s", (long)getpid(), port, line);
        if (!strchr(out, '\n'))
                strcat(out, "\n");
        if (write(c, out, strlen(out)) < 0)
                fprintf(stderr, "listen-sn: write: %s\n", strerror(errno));
        close(c);
}

static int serve(int count)
{
        const char *pid = getenv("LISTEN_PID"), *nfds = getenv("LISTEN_FDS");
        sn_registration_t regs[MAX_LISTENERS];
        sn_conn_t *conn;
        sn_port_t *port;
        int n, r;

        if (!pid || atol(pid) != (long)getpid()) {
                fprintf(stderr, "listen-sn: LISTEN_PID=%s is not my pid %ld\n",
                        pid ? pid : "(unset)", (long)getpid());
                return 3;
        }
        n = nfds ? atoi(nfds) : 0;
        if (n < 1 || n > MAX_LISTENERS) {
                fprintf(stderr, "listen-sn: LISTEN_FDS=%s\n", nfds ? nfds : "(unset)");
                return 3;
        }
        r = sn_conn_open(NULL, &conn);
        if (r < 0) {
                fprintf(stderr, "listen-sn: %s\n", sn_conn_open_error());
                return 3;
        }
        r = sn_port_create(conn, 1, &port);
        if (r < 0) {
                fprintf(stderr, "listen-sn: create a port: %s\n", sn_strerror(r));
                return 3;
        }
        for (int i = 0; i < n; i++)
                regs[i] = (sn_registration_t){ .fd = 3 + i, .op = SN_OP_ENABLE,
                                               .filter = SN_REGISTER_EVENT_IN,
                                               .trigger = SN_TRIGGER_LEVEL |
                                                          SN_TRIGGER_PERSISTENT,
                                               .key = (uint64_t)i };
        r = sn_port_process(port, regs, (uint32_t)n, NULL, 0, 0);
        if (r < 0) {
                fprintf(stderr, "listen-sn: register: %s\n", sn_strerror(r));
                return 3;
        }
        for (int i = 0; i < n; i++)
                if (regs[i].result) {
                        fprintf(stderr, "listen-sn: register fd %d: %s\n", 3 + i,
                                sn_strerror(regs[i].result));
                        return 3;
                }
        printf("pid %ld fds %d ports", (long)getpid(), n);
        for (int i = 0; i < n; i++)
                printf(" %u", local_port(3 + i));
        printf("\n");
        fflush(stdout);
        for (int served = 0; count == 0 || served < count;) {
                sn_entry_t e;
                int c;

                r = sn_port_dequeue(port, &e, 1, SN_INFINITE);
                if (r < 0) {
                        fprintf(stderr, "listen-sn: dequeue: %s\n", sn_strerror(r));
                        return 3;
                }
                if (r == 0 || e.key >= (uint64_t)n)
                        continue;
                c = accept(3 + (int)e.key, NULL, NULL);
                if (c < 0)
                        continue; /* another look at the listener: taken already */
                answer(c, local_port(3 + (int)e.key));
                served++;
        }
        sn_port_close(port);
        sn_conn_close(conn);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && !strcmp(argv[1], "serve"))
                return serve(atoi(argv[2]));
        fprintf(stderr, "usage: listen-sn serve COUNT\n");
        return 2;
}

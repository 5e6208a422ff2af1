/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * listen-echo - a socket-activated program and its client, for test-handoff-tool.sh.
 *
 *   listen-echo free-port           prints a TCP port of 127.0.0.1 free at the moment
 *   listen-echo serve COUNT         takes its sockets as sd_listen_fds(3) does (LISTEN_PID must
 *                                   be its pid), prints "pid PID fds N ports P1 P2 ... names
 *                                   NAMES" (the local port of fds 3, 4, ...), then serves COUNT
 *                                   connections on any of them: reads one line, answers
 *                                   "PID PORT LINE" (PORT: the listener's) and closes; exits 0
 *   listen-echo connect PORT TEXT   connects to 127.0.0.1:PORT, says "connected" on stderr,
 *                                   sends TEXT, prints the answer; exits 1 when refused, 2
 *                                   without an answer in 30 s
 *
 * Nothing here knows socknotify: it sees only what a service manager would give it.  Every
 * failure is printed on stderr with a nonzero status; serve and connect give up after 60 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *what)
{
        fprintf(stderr, "listen-echo: %s: %s\n", what, strerror(errno));
        return 3;
}

static unsigned local_port(int fd)
{
        struct sockaddr_in a;
        socklen_t len = sizeof(a);

        if (getsockname(fd, (struct sockaddr *)&a, &len) < 0 || a.sin_family != AF_INET)
                return 0;
        return ntohs(a.sin_port);
}

static int free_port(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                return fail("bind");
        printf("%u\n", local_port(fd));
        close(fd);
        return 0;
}

static int serve(int count)
{
        const char *pid = getenv("LISTEN_PID"), *nfds = getenv("LISTEN_FDS");
        const char *names = getenv("LISTEN_FDNAMES");
        struct pollfd pfd[16];
        int n;

        if (!pid || atol(pid) != (long)getpid()) {
                fprintf(stderr, "listen-echo: LISTEN_PID=%s is not my pid %ld\n",
                        pid ? pid : "(unset)", (long)getpid());
                return 3;
        }
        n = nfds ? atoi(nfds) : 0;
        if (n < 1 || n > 16) {
                fprintf(stderr, "listen-echo: LISTEN_FDS=%s\n", nfds ? nfds : "(unset)");
                return 3;
        }
        printf("pid %ld fds %d ports", (long)getpid(), n);
        for (int i = 0; i < n; i++) {
                int on = 0;
                socklen_t len = sizeof(on);

                if (getsockopt(3 + i, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || !on) {
                        fprintf(stderr, "listen-echo: fd %d is not a listening socket\n", 3 + i);
                        return 3;
                }
                pfd[i] = (struct pollfd){ .fd = 3 + i, .events = POLLIN };
                printf(" %u", local_port(3 + i));
        }
        printf(" names %s\n", names ? names : "-");
        fflush(stdout);
        alarm(60);
        while (count-- > 0) {
                char line[256], out[320];
                ssize_t got = 0, k;
                int c = -1;

                if (poll(pfd, (nfds_t)n, -1) < 0)
                        return fail("poll");
                for (int i = 0; i < n && c < 0; i++)
                        if (pfd[i].revents & POLLIN) {
                                c = accept(pfd[i].fd, NULL, NULL);
                                if (c < 0)
                                        return fail("accept");
                                snprintf(out, sizeof(out), "%ld %u ", (long)getpid(),
                                         local_port(pfd[i].fd));
                        }
                if (c < 0) {
                        count++;
                        continue;
                }
                while (got < (ssize_t)sizeof(line) - 1 &&
                       (k = read(c, line + got, sizeof(line) - 1 - (size_t)got)) > 0) {
                        got += k;
                        if (memchr(line, '\n', (size_t)got))
                                break;
                }
                line[got] = 0;
                strncat(out, line, sizeof(out) - strlen(out) - 2);
                if (!strchr(out, '\n'))
                        strcat(out, "\n");
                if (write(c, out, strlen(out)) < 0)
                        return fail("write");
                close(c);
        }
        return 0;
}

static int connect_to(const char *port, const char *text)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct pollfd p;
        char buf[512];
        ssize_t got = 0, k;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        if (fd < 0)
                return fail("socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                fprintf(stderr, "listen-echo: connect to port %s: %s\n", port, strerror(errno));
                return 1;
        }
        fprintf(stderr, "connected\n");
        snprintf(buf, sizeof(buf), "%s\n", text);
        if (write(fd, buf, strlen(buf)) < 0)
                return fail("write");
        p = (struct pollfd){ .fd = fd, .events = POLLIN };
        while (got < (ssize_t)sizeof(buf) - 1) {
                if (poll(&p, 1, 30000) <= 0) {
                        fprintf(stderr, "listen-echo: no answer on port %s in 30 s\n", port);
                        return 2;
                }
                k = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got);
                if (k <= 0)
                        break;
                got += k;
        }
        buf[got] = 0;
        fputs(buf, stdout);
        close(fd);
        return got > 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
        if (argc == 2 && !strcmp(argv[1], "free-port"))
                return free_port();
        if (argc == 3 && !strcmp(argv[1], "serve"))
                return serve(atoi(argv[2]));
        if (argc == 4 && !strcmp(argv[1], "connect"))
                return connect_to(argv[2], argv[3]);
        fprintf(stderr, "usage: listen-echo free-port | serve COUNT | connect PORT TEXT\n");
        return 2;
}

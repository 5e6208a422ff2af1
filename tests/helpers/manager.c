/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * manager.c - test helper: a service manager's descriptor store (manager.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <check.h>

#include "tests/helpers/daemon.h"
#include "tests/helpers/manager.h"

static const char *field(const char *text, const char *key, char *out, size_t outsz)
{
        size_t k = strlen(key);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (!strncmp(p, key, k)) {
                        size_t n = strcspn(p + k, "\n");

                        snprintf(out, outsz, "%.*s", (int)n, p + k);
                        return out;
                }
        return NULL;
}

static void *manager_loop(void *arg)
{
        struct manager *m = arg;

        for (;;) {
                char text[4096], name[64], cbuf[CMSG_SPACE(sizeof(int) * 16)];
                struct iovec iov = { text, sizeof(text) - 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                int fds[16];
                unsigned nfds = 0;
                ssize_t n = recvmsg(m->sock, &mh, MSG_CMSG_CLOEXEC);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return NULL;
                text[n] = 0;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                                unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                                memcpy(fds + nfds, CMSG_DATA(c), k * sizeof(int));
                                nfds += k;
                        }
                pthread_mutex_lock(&m->lock);
                if (!strcmp(text, "EXIT")) {
                        pthread_mutex_unlock(&m->lock);
                        return NULL;
                }
                if (strstr(text, "BARRIER=1")) {
                        m->barriers++; /* closing the descriptor is the answer */
                } else if (strstr(text, "FDSTORE=1")) {
                        m->stores++;
                        if (!strstr(text, "FDPOLL=0") ||
                            !field(text, "FDNAME=", name, sizeof(name))) {
                                m->bad++;
                                snprintf(name, sizeof(name), "?");
                        }
                        for (unsigned i = 0; i < nfds; i++) {
                                /* systemd: "Hit fd store limit", the descriptor is closed. */
                                if (m->n >= m->cap || m->n >= MAXSTORED) {
                                        m->refused++;
                                        continue;
                                }
                                m->fds[m->n] = fds[i];
                                fds[i] = -1;
                                snprintf(m->names[m->n++], sizeof(m->names[0]), "%s", name);
                        }
                } else if (strstr(text, "FDSTOREREMOVE=1") &&
                           field(text, "FDNAME=", name, sizeof(name)) &&
                           !(m->keep[0] && strstr(name, m->keep))) {
                        m->removed++;
                        for (unsigned i = 0; i < m->n;)
                                if (!strcmp(m->names[i], name)) {
                                        close(m->fds[i]);
                                        m->fds[i] = m->fds[m->n - 1];
                                        memcpy(m->names[i], m->names[m->n - 1],
                                               sizeof(m->names[0]));
                                        m->n--;
                                } else {
                                        i++;
                                }
                }
                pthread_mutex_unlock(&m->lock);
                for (unsigned i = 0; i < nfds; i++)
                        if (fds[i] >= 0)
                                close(fds[i]);
        }
}

void manager_start(struct manager *m, const char *dir, unsigned cap)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char v[16];
        int one = 1;

        memset(m, 0, sizeof(*m));
        m->cap = cap;
        pthread_mutex_init(&m->lock, NULL);
        snprintf(m->path, sizeof(m->path), "%s/notify", dir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->path);
        m->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(m->sock, 0);
        ck_assert_int_eq(bind(m->sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
        setsockopt(m->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
        ck_assert_int_eq(pthread_create(&m->thread, NULL, manager_loop, m), 0);
        /* The thread runs and waits for messages before any daemon is started. */
        manager_sync(m);
        setenv("NOTIFY_SOCKET", m->path, 1);
        snprintf(v, sizeof(v), "%u", cap);
        setenv("FDSTORE", v, 1);
}

void manager_sync(struct manager *m)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char text[] = "BARRIER=1", cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { .iov_base = text, .iov_len = sizeof(text) - 1 };
        struct msghdr mh = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov,
                             .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *cm;
        struct pollfd p;
        int s, pipefd[2];

        memset(cbuf, 0, sizeof(cbuf));
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->path);
        ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
        memcpy(CMSG_DATA(cm), &pipefd[1], sizeof(int));
        s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(s, 0);
        ck_assert_int_eq(sendmsg(s, &mh, 0), (ssize_t)iov.iov_len);
        close(s);
        close(pipefd[1]);
        /* The datagrams of every sender wait in one queue, in order: once the manager closed
         * our descriptor, it has handled everything before it. */
        p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
        ck_assert_msg(poll(&p, 1, test_timeout_ms(5000)) == 1, "the manager did not answer");
        close(pipefd[0]);
}

void manager_start_daemon(struct manager *m, struct test_daemon *d, const char *const *args)
{
        char *names = malloc(MAXSTORED * 64);
        int *fds = malloc(MAXSTORED * sizeof(int));
        unsigned n;

        ck_assert_ptr_nonnull(names);
        ck_assert_ptr_nonnull(fds);
        pthread_mutex_lock(&m->lock);
        manager_names_locked(m, names, MAXSTORED * 64);
        for (n = 0; n < m->n; n++)
                ck_assert_int_ge(fds[n] = fcntl(m->fds[n], F_DUPFD_CLOEXEC, 3), 0);
        pthread_mutex_unlock(&m->lock);
        /* Not under the lock: the daemon stores its own entries while it starts, and a store
         * that cannot take them (a full queue) would stop it before it listens. */
        test_daemon_start_with_fds(d, args, fds, n, names);
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
        free(fds);
        free(names);
}

void manager_stop(struct manager *m)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->path);
        sendto(s, "EXIT", 4, 0, (struct sockaddr *)&sa, sizeof(sa));
        close(s);
        pthread_join(m->thread, NULL);
        for (unsigned i = 0; i < m->n; i++)
                close(m->fds[i]);
        close(m->sock);
        unlink(m->path);
        unsetenv("NOTIFY_SOCKET");
        unsetenv("FDSTORE");
}

unsigned manager_count_locked(const struct manager *m, const char *prefix)
{
        unsigned k = 0;

        for (unsigned i = 0; i < m->n; i++)
                k += !strncmp(m->names[i], prefix, strlen(prefix));
        return k;
}

unsigned manager_count(struct manager *m, const char *prefix)
{
        unsigned k;

        pthread_mutex_lock(&m->lock);
        k = manager_count_locked(m, prefix);
        pthread_mutex_unlock(&m->lock);
        return k;
}

void manager_names_locked(const struct manager *m, char *out, size_t outsz)
{
        size_t off = 0;

        out[0] = 0;
        for (unsigned i = 0; i < m->n && off < outsz; i++)
                off += (size_t)snprintf(out + off, outsz - off, "%s%s", i ? ":" : "",
                                        m->names[i]);
}

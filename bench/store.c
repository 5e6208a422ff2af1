/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * store.c - the benchmarks' descriptor store (see store.h): what systemd does with the
 * sd_notify() messages of a service that has FileDescriptorStoreMax= set, and no more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench/store.h"

struct bench_store store = { .sock = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

/* Drops every entry named name (up to the end of its line) from the store; under the lock. */
static void remove_named_locked(const char *name)
{
        size_t k = strcspn(name, "\n");

        for (unsigned i = 0; i < store.n;) {
                if (strncmp(store.names[i], name, k) || store.names[i][k]) {
                        i++;
                        continue;
                }
                close(store.fds[i]);
                store.fds[i] = store.fds[--store.n];
                memcpy(store.names[i], store.names[store.n], sizeof(store.names[0]));
        }
}

static void *store_loop(void *arg)
{
        (void)arg;
        for (;;) {
                char text[1024], cbuf[CMSG_SPACE(sizeof(int) * 16)];
                struct iovec iov = { text, sizeof(text) - 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                ssize_t len = recvmsg(store.sock, &mh, MSG_CMSG_CLOEXEC);
                const char *name;
                int fds[16];
                unsigned nfds = 0;

                if (len < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;
                }
                text[len] = 0;
                store.messages++;
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                                unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                                /* At most 16 fit the buffer; a truncated rest is never
                                 * received (MSG_CTRUNC), as with systemd's own buffer. */
                                for (unsigned i = 0; i < k && nfds < 16; i++)
                                        memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int),
                                               sizeof(int));
                        }
                name = strstr(text, "FDNAME=");
                name = name ? name + 7 : "";
                pthread_mutex_lock(&store.lock);
                if (strstr(text, "FDSTORE=1")) {
                        for (unsigned i = 0; i < nfds; i++) {
                                if (store.n == BENCH_STORE_MAX) {
                                        close(fds[i]); /* full: refused, as systemd does */
                                        continue;
                                }
                                store.fds[store.n] = fds[i];
                                snprintf(store.names[store.n++], sizeof(store.names[0]), "%.*s",
                                         (int)strcspn(name, "\n"), name);
                        }
                        nfds = 0;
                } else if (strstr(text, "FDSTOREREMOVE=1")) {
                        remove_named_locked(name);
                }
                pthread_mutex_unlock(&store.lock);
                for (unsigned i = 0; i < nfds; i++)
                        close(fds[i]);
        }
}

void store_start(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        pthread_t th;

        snprintf(store.path, sizeof(store.path), "/tmp/sn-bench-notify-%d", (int)getpid());
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", store.path);
        unlink(store.path);
        store.sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (store.sock < 0 || bind(store.sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                fprintf(stderr, "bench: notify socket %s: %s\n", store.path, strerror(errno));
                exit(1);
        }
        if (pthread_create(&th, NULL, store_loop, NULL)) {
                fprintf(stderr, "bench: pthread_create failed\n");
                exit(1);
        }
        pthread_detach(th);
}

int store_sync(int timeout_ms)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char text[] = "BARRIER=1";
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } cbuf = { { 0 } };
        struct iovec iov = { text, sizeof(text) - 1 };
        struct msghdr mh = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov,
                             .msg_iovlen = 1, .msg_control = cbuf.buf,
                             .msg_controllen = sizeof(cbuf.buf) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        struct pollfd pfd;
        int p[2], fd, r;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", store.path);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &p[1], sizeof(int));
        r = fd >= 0 && sendmsg(fd, &mh, 0) >= 0 ? 0 : -errno;
        if (fd >= 0)
                close(fd);
        close(p[1]);
        if (r == 0) {
                /* The read end sees the hang-up once the thread has closed its copy. */
                pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
                r = poll(&pfd, 1, timeout_ms);
                r = r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
        }
        close(p[0]);
        return r;
}

void store_clear(void)
{
        pthread_mutex_lock(&store.lock);
        for (unsigned i = 0; i < store.n; i++)
                close(store.fds[i]);
        store.n = 0;
        pthread_mutex_unlock(&store.lock);
}

void store_names_locked(char *out, size_t outsz)
{
        size_t len = 0;

        out[0] = 0;
        for (unsigned i = 0; i < store.n && len + 1 < outsz; i++)
                len += (size_t)snprintf(out + len, outsz - len, "%s%s", i ? ":" : "",
                                        store.names[i]);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fdmsg.c - SCM_RIGHTS plumbing.
 *
 * Kernel corner cases handled here: a message whose control data does not fit (MSG_CTRUNC)
 * still installs the descriptors that did fit, so they are returned to the caller for closing;
 * MSG_CMSG_CLOEXEC makes every received descriptor close-on-exec atomically.  A receiver may
 * take fewer than were sent (sn__fdmsg_recv_room): the kernel drops the others without ever
 * putting them in the receiver's table.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "common/fdmsg.h"
#include "common/macro.h"
#include "proto/codec.h"

int sn__fdmsg_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfds,
                   int flags)
{
        union {
                char buf[CMSG_SPACE(sizeof(int) * SN_PROTO_MAX_FDS)];
                struct cmsghdr align;
        } control;
        struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (nfds > SN_PROTO_MAX_FDS)
                return -EINVAL;
        if (nfds) {
                struct cmsghdr *c;

                memset(&control, 0, sizeof(control));
                mh.msg_control = control.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        do
                n = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t)n != len)
                return -EMSGSIZE;
        return 0;
}

ssize_t sn__fdmsg_recv(int sock, void *buf, size_t cap, int *fds, unsigned max_fds,
                       unsigned *ret_nfds, int flags)
{
        bool ctrunc;
        ssize_t n = sn__fdmsg_recv_any(sock, buf, cap, fds, ret_nfds, &ctrunc, flags);

        if (n > 0 && (ctrunc || *ret_nfds > max_fds))
                return -ETOOMANYREFS;
        return n;
}

ssize_t sn__fdmsg_recv_any(int sock, void *buf, size_t cap, int *fds, unsigned *ret_nfds,
                           bool *ret_ctrunc, int flags)
{
        /* Room for the most a message may carry, so that unexpected ones are seen (and closed
         * by the caller) rather than cut off by the kernel. */
        return sn__fdmsg_recv_room(sock, buf, cap, fds, SN_PROTO_MAX_FDS, ret_nfds, ret_ctrunc,
                                   flags);
}

ssize_t sn__fdmsg_recv_room(int sock, void *buf, size_t cap, int *fds, unsigned room,
                            unsigned *ret_nfds, bool *ret_ctrunc, int flags)
{
        union {
                char buf[CMSG_SPACE(sizeof(int) * SN_PROTO_MAX_FDS)];
                struct cmsghdr align;
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = cap };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                /* CMSG_LEN, not CMSG_SPACE: the kernel installs as many descriptors as the
                 * length holds, and CMSG_SPACE rounds an odd count up by one. */
                .msg_controllen = room >= SN_PROTO_MAX_FDS
                                          ? CMSG_SPACE(sizeof(int) * SN_PROTO_MAX_FDS)
                                          : CMSG_LEN(sizeof(int) * room),
        };
        unsigned got = 0;
        ssize_t n;

        *ret_nfds = 0;
        *ret_ctrunc = false;
        do
                n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;

        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                size_t k;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (got < SN_PROTO_MAX_FDS)
                                fds[got++] = fd;
                        else
                                close(fd);
                }
        }
        *ret_nfds = got;
        *ret_ctrunc = mh.msg_flags & MSG_CTRUNC;
        if (mh.msg_flags & MSG_TRUNC)
                return -EMSGSIZE;
        return n;
}

void sn__fds_close(const int *fds, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                sn_close(fds[i]);
}

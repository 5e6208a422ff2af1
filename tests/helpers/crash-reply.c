/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * crash-reply.c - a preload library for tests only (libsncrash.so, never installed): it makes
 * socknotifyd die by SIGKILL just before a reply of one type leaves, so that a test can crash
 * the daemon in the middle of a request without a hook in the daemon.  A reply leaves by
 * send() or sendmsg() on the socket, or is copied (memcpy) into a connection's completion ring
 * before it is published: all three are caught.  The request took effect
 * and is in the journal as begun and not answered: the daemon restored from it answers EIO.
 *
 * SN_TEST_CRASH_REPLY=<type> (a number, 0x.. accepted) names the reply type (with bit 0x80,
 * e.g. 0x8b for PORT_LINGER_REPLY).  Only messages that look like a whole protocol message
 * (size field equal to the length sent, at least a header) count, so the daemon's datagrams to
 * its service manager (text) never match.  Under ASan the daemon must be started with
 * ASAN_OPTIONS=verify_asan_link_order=0, as this library then comes before libasan.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>

#define HEADER_SIZE 24
/* The tree builds with -fvisibility=hidden: the wrappers must be seen to interpose. */
#define EXPORT __attribute__((visibility("default")))

static int wanted(void)
{
        static int type = -2; /* -2: not read yet, -1: off */
        const char *v;

        if (type == -2) {
                v = getenv("SN_TEST_CRASH_REPLY");
                type = v && *v ? (int)strtol(v, NULL, 0) : -1;
        }
        return type;
}

/* Dies when buf (len bytes) is a whole message of the wanted reply type. */
static void check(const void *buf, size_t len)
{
        const uint8_t *b = buf;
        uint32_t size;
        int type = wanted();

        if (type < 0 || !b || len < HEADER_SIZE)
                return;
        size = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (size == len && ((int)b[4] | (int)b[5] << 8) == type)
                raise(SIGKILL);
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
        static ssize_t (*next)(int, const void *, size_t, int);

        if (!next)
                next = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
        check(buf, len);
        return next(fd, buf, len, flags);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
        static ssize_t (*next)(int, const struct msghdr *, int);

        if (!next)
                next = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
        if (mh && mh->msg_iovlen == 1)
                check(mh->msg_iov[0].iov_base, mh->msg_iov[0].iov_len);
        return next(fd, mh, flags);
}

/* The copy into a completion ring (common/ring.h, sn_ring_put).  dlsym() may copy memory itself
 * while the next memcpy is looked up: that copy is made here, byte by byte (volatile, so that
 * the compiler does not turn the loop back into a call of memcpy). */
EXPORT void *memcpy(void *dst, const void *src, size_t n);

EXPORT void *memcpy(void *dst, const void *src, size_t n)
{
        static void *(*next)(void *, const void *, size_t);
        static int resolving;

        if (!next && !resolving) {
                resolving = 1;
                next = (void *(*)(void *, const void *, size_t))dlsym(RTLD_NEXT, "memcpy");
                resolving = 0;
        }
        if (!next) {
                volatile unsigned char *d = dst;
                const volatile unsigned char *s = src;

                for (size_t i = 0; i < n; i++)
                        d[i] = s[i];
                return dst;
        }
        check(src, n);
        return next(dst, src, n);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * macro.h - small helpers shared by the daemon, the client library and the tests.
 */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define SN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SN_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SN_LIKELY(x) __builtin_expect(!!(x), 1)
#define SN_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Closes fd if valid, preserving errno; returns -1 so callers can write `fd = sn_close(fd)`. */
static inline int sn_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

static inline void sn_closep(int *fd)
{
        *fd = sn_close(*fd);
}

static inline void sn_freep(void *p)
{
        free(*(void **)p);
}

#define sn_cleanup(f) __attribute__((cleanup(f)))
#define _sn_cleanup_close_ sn_cleanup(sn_closep)
#define _sn_cleanup_free_ sn_cleanup(sn_freep)

/* Hands ownership out of a cleanup-managed variable. */
#define SN_TAKE_PTR(p)                                                                             \
        ({                                                                                         \
                __typeof__(p) _t = (p);                                                            \
                (p) = NULL;                                                                        \
                _t;                                                                                \
        })
#define SN_TAKE_FD(fd)                                                                             \
        ({                                                                                         \
                int _t = (fd);                                                                     \
                (fd) = -1;                                                                         \
                _t;                                                                                \
        })

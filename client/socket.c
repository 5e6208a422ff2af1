/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socket.c - the descriptor cache and sn_socket_close() (rule L1).
 *
 * The cache is indexed by descriptor number and remembers which socket (st_dev, st_ino) was
 * registered through that descriptor, and on which port.  It is a hint: a descriptor closed
 * with plain close() and reused for another socket no longer matches its identity and is
 * treated as unknown.  Memory: 24 bytes per descriptor number up to the highest one registered.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "common/macro.h"

struct sn_fdcache *sn__cache_get(sn_conn_t *c, int fd)
{
        if (fd < 0 || (uint32_t)fd >= c->cache_cap || !c->cache[fd].port)
                return NULL;
        return &c->cache[fd];
}

int sn__cache_set(sn_conn_t *c, int fd, uint64_t dev, uint64_t ino, uint32_t port)
{
        if (fd < 0)
                return -EBADF;
        if (dev > UINT32_MAX) {
                /* Never on Linux (the kernel's dev_t has 32 bits); 16 bytes a descriptor are
                 * worth not caching such a socket (a missed optimization, as below). */
                if ((uint32_t)fd < c->cache_cap)
                        c->cache[fd].port = 0;
                return -EOVERFLOW;
        }
        if ((uint32_t)fd >= c->cache_cap) {
                uint32_t cap = SN_MAX(64u, c->cache_cap);
                struct sn_fdcache *n;

                while (cap <= (uint32_t)fd)
                        cap *= 2;
                n = realloc(c->cache, (size_t)cap * sizeof(*n));
                if (!n)
                        return -ENOMEM; /* only a missed optimization */
                memset(n + c->cache_cap, 0, (size_t)(cap - c->cache_cap) * sizeof(*n));
                c->cache = n;
                c->cache_cap = cap;
        }
        c->cache[fd] = (struct sn_fdcache){ .ino = ino, .dev = (uint32_t)dev, .port = port };
        return 0;
}

void sn__cache_forget_port(sn_conn_t *c, uint32_t port)
{
        for (uint32_t i = 0; i < c->cache_cap; i++)
                if (c->cache[i].port == port)
                        c->cache[i].port = 0;
}

void sn__cache_reset(sn_conn_t *c)
{
        for (uint32_t i = 0; i < c->cache_cap; i++)
                c->cache[i].port = 0;
}

SN_EXPORT int sn_socket_close(sn_conn_t *c, int fd)
{
        struct sn_fdcache *k;
        struct stat st;
        uint64_t dev = 0, ino = 0;
        bool known = false;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -EBADF;
        if (c && sn__conn_usable(c) == 0) {
                pthread_mutex_lock(&c->lock);
                k = sn__cache_get(c, fd);
                if (k && k->dev == st.st_dev && k->ino == st.st_ino) {
                        known = true;
                        dev = k->dev;
                        ino = k->ino;
                        k->port = 0;
                }
                /* The daemon drops the socket's registrations on every port: so does the
                 * record a resume replays. */
                for (sn_port_t *port = c->ports; port; port = port->next)
                        sn__regtab_remove(&port->regs, st.st_dev, st.st_ino);
                pthread_mutex_unlock(&c->lock);
        }
        if (known) {
                uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_socket_close];
                struct snw_socket_close body = { .dev = dev, .ino = ino, .client_fd = (uint32_t)fd };

                snw_socket_close_encode(sn_msg_begin(buf, SN_MSG_SOCKET_CLOSE, 0, 0, 0, 0, 0),
                                       &body);
                /* -ENOENT: already removed; either way the daemon holds no copy now. */
                sn__call(c, buf, sizeof(buf), SN_MSG_SOCKET_CLOSE_REPLY, NULL, NULL);
        }
        close(fd);
        return 0;
}

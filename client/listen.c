/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * listen.c - socket activation handoff: park the listening sockets a service manager passed
 * (LISTEN_FDS) on a lingering named port, and take them back in a later instance.
 *
 * Built on the public API only (sn_port_create_named_ex, sn_port_process, sn_port_set_linger,
 * sn_port_open, sn_port_take_sockets, sn_port_close): nothing here speaks the protocol.
 *
 * Invariants.  sn_listen_fds_park() never changes the caller's descriptors or environment: the
 * daemon receives copies of fds 3..3+n-1, registered with key = index (0 for fd 3), ONESHOT |
 * LEVEL, SN_REGISTER_EVENT_IN.  Either every socket is parked or none is: on any failure after
 * the port was created, its linger is set to 0 and it is closed, which drops whatever was
 * registered.  sn_listen_fds_take() returns descriptors sorted by key; a descriptor it does not
 * return (beyond max, or on an error) is closed with close(), which leaves the daemon's copy
 * and so the registration on the port: nothing parked is lost by a failed or short take.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "socknotify.h"

/* The first descriptor a service manager passes (SD_LISTEN_FDS_START). */
#define LISTEN_FDS_START 3

/* Parses a decimal number without sign, spaces or trailing text into *ret (at most max).
 * Returns 0, or -EINVAL. */
static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
        unsigned long v = 0;

        if (!s || !*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                if (v > (max - (unsigned long)(*s - '0')) / 10)
                        return -EINVAL;
                v = v * 10 + (unsigned long)(*s - '0');
        }
        *ret = v;
        return 0;
}

/* How many sockets the service manager passed to this process: LISTEN_PID must be our pid and
 * LISTEN_FDS a positive count of open sockets at 3... Returns the count, -ENOENT (none for
 * this process), -EINVAL (LISTEN_FDS or LISTEN_PID malformed), -EBADF (a descriptor of the
 * range is not open), -ENOTSOCK (one is not a socket). */
static int listen_fds_count(void)
{
        const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
        unsigned long pid, n;
        int r;

        if (!pid_s || !fds_s)
                return -ENOENT;
        r = parse_uint(pid_s, (unsigned long)INT_MAX, &pid);
        if (r < 0)
                return r;
        if (pid != (unsigned long)getpid())
                return -ENOENT;
        r = parse_uint(fds_s, (unsigned long)(INT_MAX - LISTEN_FDS_START), &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -ENOENT;
        for (unsigned long i = 0; i < n; i++) {
                struct stat st;

                if (fstat(LISTEN_FDS_START + (int)i, &st) < 0)
                        return -EBADF;
                if (!S_ISSOCK(st.st_mode))
                        return -ENOTSOCK;
        }
        return (int)n;
}

/*
 * Parks this process's LISTEN_FDS on a new named port (see socknotify.h).  conn and name are
 * borrowed; the descriptors stay the caller's, the daemon holds copies.  linger_ms 0 is only
 * accepted with ret_port (the caller keeps the port open; otherwise the port would close at
 * once with the sockets).  Returns the number parked, or -EINVAL (bad arguments, malformed
 * LISTEN_FDS/LISTEN_PID), -ENOENT (nothing passed to this process), -EBADF/-ENOTSOCK (a
 * descriptor of LISTEN_FDS is not an open socket), -EEXIST (name taken), -ENOMEM, -EDQUOT,
 * the registration error of the first socket refused, or the errors of the port calls.
 * *ret_port is written on success only.
 */
SN_EXPORT int sn_listen_fds_park(sn_conn_t *conn, const char *name, uint32_t linger_ms,
                                 sn_port_t **ret_port)
{
        sn_port_options_t opt = { .concurrency = 0, .linger_ms = linger_ms };
        sn_registration_t *regs;
        sn_port_t *port;
        int n, r;

        if (!conn || !name || !*name || strlen(name) > 255 || (linger_ms == 0 && !ret_port))
                return -EINVAL;
        n = listen_fds_count();
        if (n < 0)
                return n;
        regs = calloc((size_t)n, sizeof(*regs));
        if (!regs)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                regs[i] = (sn_registration_t){
                        .fd = LISTEN_FDS_START + i,
                        .filter = SN_REGISTER_EVENT_IN,
                        .op = SN_OP_ENABLE,
                        .trigger = SN_TRIGGER_ONESHOT | SN_TRIGGER_LEVEL,
                        .key = (uint64_t)i,
                };

        r = sn_port_create_named_ex(conn, name, &opt, &port);
        if (r < 0) {
                free(regs);
                return r;
        }
        r = sn_port_process(port, regs, (uint32_t)n, NULL, 0, 0);
        for (int i = 0; r >= 0 && i < n; i++)
                if (regs[i].result < 0)
                        r = regs[i].result;
        free(regs);
        if (r < 0) {
                /* All or nothing: with linger 0 the close drops what was registered, and the
                 * daemon's copies, at once.  The linger call fails only if the connection
                 * broke, which closes the port anyway. */
                (void)sn_port_set_linger(port, 0);
                sn_port_close(port);
                return r;
        }
        if (ret_port)
                *ret_port = port;
        else
                sn_port_close(port);
        return n;
}

static int taken_cmp(const void *a, const void *b)
{
        const sn_taken_socket_t *x = a, *y = b;

        if (x->key != y->key)
                return x->key < y->key ? -1 : 1;
        return x->previous_fd < y->previous_fd ? -1 : x->previous_fd > y->previous_fd;
}

/* Closes the descriptors of taken[from..n): the daemon keeps its copies, so their
 * registrations stay on the port (ownerless again when this connection or port handle ends). */
static void close_taken(sn_taken_socket_t *taken, uint32_t from, uint32_t n)
{
        for (uint32_t i = from; i < n; i++)
                if (taken[i].fd >= 0) {
                        close(taken[i].fd);
                        taken[i].fd = -1;
                }
}

/*
 * Opens the named port and takes every socket without an owner on it (see socknotify.h).  On
 * success fds[0..ret) receives new descriptors (close-on-exec, the caller's) sorted by key;
 * sockets beyond max are not returned and stay registered on the port.  ret_port NULL closes
 * the port handle (a lingering port then keeps the sockets again once this connection ends
 * or drops them).  Returns how many descriptors were stored (0: none parked), or -EINVAL (bad
 * arguments), -ENOENT (no such port), -EACCES, -EEXIST (this connection holds the port
 * already), -ENOMEM, -EMFILE, and the errors of sn_port_take_sockets().  On an error no
 * descriptor is left to the caller and nothing is lost on the port.
 */
SN_EXPORT int sn_listen_fds_take(sn_conn_t *conn, const char *name, int *fds, uint32_t max,
                                 sn_port_t **ret_port)
{
        sn_taken_socket_t *taken = NULL;
        uint32_t n = 0, cap = 0, ret;
        sn_port_t *port;
        int r;

        if (!conn || !name || !*name || strlen(name) > 255 || !fds || max == 0 || max > INT_MAX)
                return -EINVAL;
        r = sn_port_open(conn, name, &port);
        if (r < 0)
                return r;
        for (;;) {
                sn_take_info_t info = { 0, 0 };

                if (n == cap) {
                        uint32_t ncap = cap ? cap * 2 : 16;
                        sn_taken_socket_t *t;

                        if (ncap < cap || ncap > INT_MAX / sizeof(*t)) {
                                r = -ENOMEM;
                                break;
                        }
                        t = realloc(taken, (size_t)ncap * sizeof(*t));
                        if (!t) {
                                r = -ENOMEM;
                                break;
                        }
                        taken = t;
                        cap = ncap;
                }
                /* On an error (-EMFILE) some entries may hold descriptors already: every
                 * entry starts at -1 so that the cleanup below finds exactly those. */
                for (uint32_t i = n; i < cap; i++)
                        taken[i].fd = -1;
                r = sn_port_take_sockets(port, taken + n, cap - n, &info);
                if (r < 0)
                        break;
                n += (uint32_t)r;
                /* Out of descriptors: the library may report it as entries with fd -1 (their
                 * registrations are ours, their sockets did not arrive) rather than -EMFILE. */
                for (uint32_t i = n - (uint32_t)r; i < n; i++)
                        if (taken[i].fd < 0)
                                r = -EMFILE;
                if (r <= 0 || info.remaining == 0)
                        break;
        }
        if (r < 0) {
                close_taken(taken, 0, cap);
                free(taken);
                sn_port_close(port);
                return r;
        }

        qsort(taken, n, sizeof(*taken), taken_cmp);
        ret = n < max ? n : max;
        for (uint32_t i = 0; i < ret; i++)
                fds[i] = taken[i].fd;
        close_taken(taken, ret, n);
        free(taken);
        if (ret_port)
                *ret_port = port;
        else
                sn_port_close(port);
        return (int)ret;
}

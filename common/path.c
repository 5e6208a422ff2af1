/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * path.c - resolution of the daemon socket path.
 *
 * A daemon listens at one path (sn__socket_path).  A client given no path looks in the same
 * places, but a non-root user's client also falls back to the system daemon when no per-user
 * daemon runs (sn__socket_candidates): a user session need not run its own daemon.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/path.h"

int sn__socket_path(const char *explicit_path, char *buf, size_t size)
{
        const char *env = getenv("SOCKNOTIFY_SOCKET");
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        int n;

        if (explicit_path && *explicit_path)
                n = snprintf(buf, size, "%s", explicit_path);
        else if (env && *env)
                n = snprintf(buf, size, "%s", env);
        else if (geteuid() != 0 && xdg && *xdg == '/')
                n = snprintf(buf, size, "%s/socknotify.sock", xdg);
        else
                n = snprintf(buf, size, SN_SYSTEM_SOCKET_PATH);
        if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
                return -ENAMETOOLONG;
        return 0;
}

_Static_assert(SN_SOCKET_PATH_SIZE == sizeof(((struct sockaddr_un *)0)->sun_path),
               "SN_SOCKET_PATH_SIZE must be the size of sun_path");

static int set_candidate(struct sn_socket_candidate *c, enum sn_path_source source,
                         const char *dir, const char *name)
{
        int n = snprintf(c->path, sizeof(c->path), "%s%s", dir, name);

        if (n < 0 || (size_t)n >= sizeof(c->path))
                return -ENAMETOOLONG;
        c->source = source;
        return 0;
}

int sn__socket_candidates(const char *explicit_path,
                          struct sn_socket_candidate ret[SN_SOCKET_CANDIDATES_MAX])
{
        const char *env = getenv("SOCKNOTIFY_SOCKET");
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        int n = 0, r;

        if (explicit_path && *explicit_path) {
                r = set_candidate(&ret[0], SN_PATH_EXPLICIT, explicit_path, "");
                return r < 0 ? r : 1;
        }
        if (env && *env) {
                r = set_candidate(&ret[0], SN_PATH_ENV, env, "");
                return r < 0 ? r : 1;
        }
        if (geteuid() != 0 && xdg && *xdg == '/' &&
            set_candidate(&ret[n], SN_PATH_USER, xdg, "/socknotify.sock") == 0)
                n++;
        set_candidate(&ret[n++], SN_PATH_SYSTEM, SN_SYSTEM_SOCKET_PATH, "");
        return n;
}

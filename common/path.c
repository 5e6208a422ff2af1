/*
 * path.c - resolution of the daemon socket path.
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
                n = snprintf(buf, size, "/run/socknotify/socknotify.sock");
        if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
                return -ENAMETOOLONG;
        return 0;
}

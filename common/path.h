/*
 * path.h - where the daemon's socket is, by the same rules for daemon and clients.
 */
#pragma once

#include <stddef.h>

/* Writes the socket path: explicit (if not NULL), else $SOCKNOTIFY_SOCKET, else
 * $XDG_RUNTIME_DIR/socknotify.sock for a non-root user, else /run/socknotify/socknotify.sock.
 * Returns 0 or -ENAMETOOLONG (the path does not fit in sockaddr_un). */
int sn__socket_path(const char *explicit_path, char *buf, size_t size);

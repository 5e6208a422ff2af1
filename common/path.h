/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * path.h - where the daemon's socket is: where a daemon listens, and where a client looks.
 */
#pragma once

#include <stddef.h>

/* Writes the socket path: explicit (if not NULL), else $SOCKNOTIFY_SOCKET, else
 * $XDG_RUNTIME_DIR/socknotify.sock for a non-root user, else /run/socknotify/socknotify.sock.
 * Returns 0 or -ENAMETOOLONG (the path does not fit in sockaddr_un). */
int sn__socket_path(const char *explicit_path, char *buf, size_t size);

/* The system daemon's socket (systemd/socknotifyd.socket). */
#define SN_SYSTEM_SOCKET_PATH "/run/socknotify/socknotify.sock"
/* Room for one path: sizeof(sockaddr_un.sun_path). */
#define SN_SOCKET_PATH_SIZE 108
#define SN_SOCKET_CANDIDATES_MAX 2

/* Where the client's path came from, for error messages. */
enum sn_path_source {
        SN_PATH_EXPLICIT, /* given to sn_conn_open() */
        SN_PATH_ENV,      /* $SOCKNOTIFY_SOCKET */
        SN_PATH_USER,     /* $XDG_RUNTIME_DIR/socknotify.sock */
        SN_PATH_SYSTEM,   /* SN_SYSTEM_SOCKET_PATH */
};

struct sn_socket_candidate {
        enum sn_path_source source;
        char path[SN_SOCKET_PATH_SIZE];
};

/*
 * The socket paths a client tries, in order: the explicit path alone, else $SOCKNOTIFY_SOCKET
 * alone, else (for a user other than root with $XDG_RUNTIME_DIR set to an absolute path)
 * $XDG_RUNTIME_DIR/socknotify.sock and then the system socket, else the system socket.  A
 * per-user path too long for a socket address is left out.  Fills ret[] and returns the number
 * of candidates (1..SN_SOCKET_CANDIDATES_MAX), or -ENAMETOOLONG when the explicit or
 * environment path does not fit.
 */
int sn__socket_candidates(const char *explicit_path,
                          struct sn_socket_candidate ret[SN_SOCKET_CANDIDATES_MAX]);

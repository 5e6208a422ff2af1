/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * reexec.h - the re-exec state (reexec.c): everything the daemon holds, written to a memfd
 * before execve() and read back by the new image.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct server;

/* The re-exec state (reexec.c).  reexec_save writes srv's state to fd; reexec_load reads it
 * from fd into srv (apply) or only checks it (srv NULL): 0 or a negative errno (logged).
 * reexec_listen reads the listening socket and path recorded in the state. */
int reexec_save(struct server *srv, int fd);
int reexec_load(struct server *srv, int fd);
int reexec_listen(int fd, int *ret_listen_fd, char *path, size_t pathsz, bool *ret_owns_path);
/* Sets or clears FD_CLOEXEC on every descriptor the state names. */
void reexec_set_cloexec(struct server *srv, bool on);

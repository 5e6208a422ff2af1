/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fdstore.h - the service manager's descriptor store at a stop and at a start (fdstore.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct server;

/*
 * The service manager's descriptor store (fdstore.c).  fdstore_capacity: how many descriptors
 * it takes (FDSTORE, with NOTIFY_SOCKET set), 0 when there is none.  fdstore_handover: on a
 * stop, hands every descriptor and the state to the store; 0 when all of it was taken (the
 * caller must then exit without closing or answering anything), or a negative errno (logged,
 * the store emptied again: stop as usual).  fdstore_take: at start, takes what LISTEN_FDS
 * passes: returns 1 with *ret_state_fd a state to restore (every descriptor it names already
 * at its old number), 1 or 0 with *ret_listen_fd an activated listening socket or 0, or a
 * negative errno (logged; the store is emptied, the caller exits).  fdstore_forget: empties
 * the store of what fdstore_handover put in it (nboxes: how many boxes).
 */
uint32_t fdstore_capacity(void);
int fdstore_handover(struct server *srv, uint32_t capacity);
int fdstore_take(int *ret_listen_fd, int *ret_state_fd);
void fdstore_forget(uint32_t nboxes);
/* After fdstore_take: whether the previous daemon crashed leaving a journal and descriptors
 * (then *journal and *fds are the caller's, for live_restore()); the generation for our own
 * journal; and removing the previous daemon's entries once ours are stored. */
bool fdstore_crashed(const uint8_t **journal, size_t *size, int **fds, uint32_t *nfds);
uint32_t fdstore_next_gen(void);
void fdstore_forget_previous(void);
/* After fdstore_take: the previous daemon's last good settings (lastgood.c), a memfd that is
 * now the caller's, or -1 when the store held none. */
int fdstore_take_settings(void);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * fdstore.h - what a previous daemon left in the service manager's descriptor store (fdstore.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct restore_fds;

/* The store entry that keeps the last good settings (service/lastgood.c writes it; fdstore_take
 * sets it aside for fdstore_take_settings). */
#define FDSTORE_SETTINGS_NAME "snlive.settings"

/*
 * fdstore_capacity: how many descriptors the service manager's store takes (FDSTORE, with
 * NOTIFY_SOCKET set), 0 when there is none.  fdstore_take: at start, takes what LISTEN_FDS
 * passes: returns 1 with *ret_listen_fd an activated listening socket, 0 with none, or a
 * negative errno (logged; the caller exits).  What a previous daemon left in the store (its
 * journal and boxes, after an orderly stop or a crash) is then had from fdstore_previous():
 * true with *journal (size bytes) and the descriptors by record (the caller's), false when
 * there is none.  fdstore_next_gen: the generation for our own journal; fdstore_forget_previous:
 * removes the previous daemon's entries once ours are stored.
 */
uint32_t fdstore_capacity(void);
int fdstore_take(int *ret_listen_fd);
bool fdstore_previous(uint8_t **journal, size_t *size, struct restore_fds *fds);
/* A generation already used (a re-exec's predecessor): the next one is later. */
void fdstore_note_gen(uint32_t gen);
uint32_t fdstore_next_gen(void);
void fdstore_forget_previous(void);
/* Removes generation gen's journal and its nboxes boxes from the store (after a re-exec). */
void fdstore_forget_gen(uint32_t gen, uint32_t nboxes);
/* After fdstore_take: the previous daemon's last good settings (lastgood.c), a memfd that is
 * now the caller's, or -1 when the store held none. */
int fdstore_take_settings(void);

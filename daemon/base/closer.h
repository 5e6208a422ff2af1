/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * closer.h - closing clients' descriptors off the loop (closer.c): a close() that blocks
 * (SO_LINGER) must not stall every client.
 */
#pragma once

#include <stdint.h>

/* Starts (0 or a negative errno; without it descriptors are closed in place) and stops the
 * closer thread; stopping closes what is queued first. */
int closer_start(void);
void closer_stop(void);
/* Closes a descriptor a client gave the daemon, on the closer thread.  Ignores -1; returns -1
 * (for `fd = closer_close(fd)`). */
int closer_close(int fd);
void closer_close_all(const int *fds, unsigned n);
/* Descriptors queued or being closed, not closed yet (they still take room in the table). */
uint64_t closer_pending(void);

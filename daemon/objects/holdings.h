/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * holdings.h - letting go of what a session holds (holdings.c), for every transport.
 */
#pragma once

#include <stdint.h>

struct session;

/* Takes the waits of s off their ports and stops their timers (a kill): they stay on s. */
void holdings_detach_waits(struct session *s);
/* Lets go of all s holds: its runners, then its registrations (orphaned on a port that
 * lingers, else freed), its handles (the last one closes a port: its waits are answered with
 * status) and its waits.  The transport frees s itself afterwards. */
void holdings_release(struct session *s, uint32_t status);

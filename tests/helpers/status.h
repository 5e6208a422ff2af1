/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * status.h - test helper: one number of the daemon's status document.
 */
#pragma once

#include "socknotify.h"

/* The integer at key of the status document that c gets (sn_conn_status(): everything for root,
 * the user's own otherwise); 0 when the key is absent.  Dots in key name members of nested
 * objects: "user.thread_reads".  Fails the running test when the call
 * fails or the document is not JSON. */
long long test_status_number(sn_conn_t *c, const char *key);

/* Waits up to timeout_ms (scaled, test_timeout_ms()) until that number is at least want;
 * fails the running test with what as its message when it never is. */
void test_status_wait_at_least(sn_conn_t *c, const char *key, long long want, int timeout_ms,
                               const char *what);

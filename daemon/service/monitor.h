/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * monitor.h - live copies of the messages clients send and are sent, for the connections that
 * asked for them (CONTROL verb "monitor", socknotifyctl monitor): monitor.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/service/conn.h"

/* Most monitors of the daemon, and of one user who is not an administrator (root or the
 * daemon's user): each may hold MONITOR_BUFFER bytes of frames not yet read. */
#define MONITOR_MAX 16
#define MONITOR_MAX_PER_USER 4
/* Most monitors of all such users together: the rest are kept for an administrator, who
 * would otherwise find every monitor taken by four users when it needs one most. */
#define MONITOR_MAX_UNPRIVILEGED 12
#define MONITOR_BUFFER (1024 * 1024)

struct monitor;

/*
 * Makes conn a monitor (after its CONTROL_REPLY was sent): from now on it is sent a
 * MONITOR_FRAME for every message that a connection it may see sends or is sent, and it may send
 * nothing more.  pid and port filter (0: any).  Returns 0, -EDQUOT (MONITOR_MAX or
 * MONITOR_MAX_PER_USER reached), -EBUSY (the connection holds ports or waits, or has rings) or
 * -ENOMEM.  monitor_check() says the same without changing anything.
 */
int monitor_check(struct conn *conn);
int monitor_attach(struct conn *conn, uint32_t pid, uint32_t port);
/* Unlinks and frees conn's monitor (conn_free()); accepts a connection without one. */
void monitor_detach(struct conn *conn);
/* Sends what the monitor has queued while its socket takes it (the connection's EV_WRITE).
 * Returns true when everything went out (EV_WRITE may be turned off). */
bool monitor_flush(struct conn *conn);
/* The copy itself: conn sent (reply false) or is sent (reply true) the message buf of len
 * bytes.  Call it through monitor_see(). */
void monitor_copy(struct conn *conn, bool reply, const uint8_t *buf, size_t len);

/* The hook on the message paths: one test of a counter when no monitor is attached. */
static inline void monitor_see(struct conn *conn, bool reply, const uint8_t *buf, size_t len)
{
        if (__builtin_expect(conn->srv->nmonitors != 0, 0))
                monitor_copy(conn, reply, buf, len);
}

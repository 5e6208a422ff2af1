/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * control.h - operators' requests (control.c): CONTROL messages from socknotifyctl.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct conn;
/* Answers a CONTROL request of conn (JSON text of len bytes) with a CONTROL_REPLY. */
void control_handle(struct conn *conn, uint32_t id, const uint8_t *text, uint32_t len);
struct json_t;
/* Bytes a client chose (len of them, NULs allowed) as a new JSON value, never NULL: a string of
 * exactly those bytes when they are valid UTF-8, else an array of the byte values (null only
 * when out of memory).  The caller owns the reference. */
struct json_t *control_json_bytes(const void *bytes, size_t len);
/* How the daemon writes its JSON documents (STATUS, CONTROL): compact, and reals with at most
 * 15 significant digits, so that a time rounded to the millisecond (control_seconds()) reads
 * 12.345, not the 17 digits of its nearest double, 12.345000000000001. */
#define CONTROL_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))
/* Seconds (not negative) rounded to the millisecond. */
static inline double control_seconds(double s)
{
        return s > 0 ? (double)(long long)(s * 1000 + 0.5) / 1000 : 0;
}

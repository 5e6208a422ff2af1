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

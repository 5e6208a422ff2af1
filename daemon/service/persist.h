/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * persist.h - the state (persist.c, on daemon/state/journal.h): always current under a
 * descriptor store, written at a re-exec without one.
 *
 * live_start: a new journal of generation gen holding everything the server holds now, in the
 * descriptor store when there is one (0 or a negative errno, logged; then the daemon runs
 * without it).  live_stop: ends it; forget also takes it out of the store.
 * live_flush: sends the descriptors added since the last flush; runs at the end of every turn
 * of the loop that added one, and before any reply is sent.  live_leave: before a re-exec or an
 * orderly stop: every port harvested (so that no edge is reported twice), everything boxed,
 * and the journal marked orderly; -EIO when a descriptor could not be boxed (a stop then
 * loses its registration), 0 otherwise.  The connection hooks record what they name and do
 * nothing without a journal; *_gone before the object is freed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct outmsg;
struct restore_conn_ops;
struct server;

int live_start(struct server *srv, uint32_t gen);
void live_stop(struct server *srv, bool forget);
void live_flush(struct server *srv);
int live_leave(struct server *srv);
/* How many entries of the store the journal and boxes take. */
uint32_t live_entries(const struct server *srv);
/* Writes every record of a new journal. */
void live_everything(struct server *srv);
void live_listen(struct server *srv);
void live_conn(struct conn *c);
/* Its flags, protocol version or staged call changed. */
void live_conn_update(struct conn *c);
void live_conn_gone(struct conn *c);
/* The connection's rings: records and boxes for their descriptors; the record of the ring file
 * also says whether the SQ waits for a message of the socket (stalled). */
void live_ring(struct conn *c);
void live_ring_update(struct conn *c);
void live_ring_gone(struct conn *c);
/* Request id is being handled (begin) or was answered. */
void live_conn_request(struct conn *c, uint32_t id, bool begin);
/* A reply leaving for c (buf, len bytes): the request it answers is no longer in flight. */
void live_answered(struct conn *c, const uint8_t *buf, size_t len);
/* A reply queued (not taken by the kernel yet), and sent. */
void live_out(struct conn *c, struct outmsg *m);
void live_out_gone(struct conn *c, struct outmsg *m);
/* A part appended to c's staged call: n items at items, the stage's last nfds descriptors. */
void live_stage_part(struct conn *c, const uint8_t *items, uint32_t n, uint32_t nfds);
void live_stage_gone(struct conn *c);
/* Staged descriptor idx of c is about to become a registration's (live_reg() takes over its
 * record and box). */
void live_stage_lend(struct conn *c, uint32_t idx);
/* How the reader (daemon/restore/restore.h) makes connections again. */
extern const struct restore_conn_ops live_restore_ops;
/* Sets or clears FD_CLOEXEC on every descriptor the journal names. */
void live_set_cloexec(struct server *srv, bool on);

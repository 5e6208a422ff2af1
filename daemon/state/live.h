/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * live.h - what survives a crash (live.c): the journal of every session's objects and the
 * boxes holding their descriptors, kept in the service manager's descriptor store.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct box;
struct conn;
struct handle;
struct packet;
struct port;
struct reg;
struct server;
struct wait;

/* Which of the live store's boxes holds a descriptor (live.c); NULL: none. */
struct box_ref {
        struct box *box;
};

/*
 * What survives a crash (live.c): a journal of every session's objects and the descriptors in
 * "boxes", both kept in the descriptor store as the daemon runs.  live_start: begins it with
 * generation gen for everything the server holds now (0 or a negative errno, logged; then the
 * daemon runs without it).  live_stop: ends it; forget_all also takes it out of the store
 * (before a re-exec, which starts its own).  The hooks below record what they name and do
 * nothing without a live store; *_gone before the object is freed.  live_flush: sends the
 * descriptors added since the last flush and rebuilds boxes with dropped ones; runs at the end
 * of every turn of the loop that changed something, and before any reply is sent.
 * live_restore: rebuilds the sessions of a journal (size bytes) and its boxes' descriptors
 * (all taken), counting what it did in *out.
 */
struct live_restored {
        uint32_t conns, ports, regs, posted, waits;
        uint32_t queued;      /* socket notifications that were queued, queued again */
        uint32_t interrupted; /* calls failed with EIO: in progress at the crash */
        uint32_t dropped;     /* registrations whose socket, port or creator was not found */
        uint32_t unused;      /* descriptors no record named (dropped just before the crash) */
};
int live_start(struct server *srv, uint32_t gen);
void live_stop(struct server *srv, bool forget_all);
void live_flush(struct server *srv);
/* How many entries of the store the live journal and boxes take. */
uint32_t live_entries(const struct server *srv);
int live_restore(struct server *srv, const uint8_t *journal, size_t size, const int *fds,
                 uint32_t nfds, struct live_restored *out);
void live_conn(struct conn *c);
void live_conn_gone(struct conn *c);
void live_conn_request(struct conn *c, uint32_t id, bool begin);
void live_conn_stage(struct conn *c, uint32_t id, bool active);
void live_port(struct port *p);
void live_port_gone(struct port *p);
/* Its linger time or lingering state changed. */
void live_port_linger(struct port *p);
void live_handle(struct handle *h);
void live_handle_gone(struct handle *h);
void live_reg(struct reg *g);
void live_reg_gone(struct reg *g);
/* Its packet was queued, OR-ed into or taken off the queue. */
void live_reg_queued(struct reg *g);
void live_posted(struct port *p, struct packet *pkt);
void live_posted_gone(struct server *srv, struct packet *pkt);
void live_wait(struct wait *w);
void live_wait_gone(struct wait *w);

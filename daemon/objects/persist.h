/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * persist.h - the objects' journal records (persist.c): each hook records what it names, and
 * does nothing without a journal; *_gone before the object is freed.
 */
#pragma once

#include <stdint.h>

struct handle;
struct packet;
struct port;
struct reg;
struct runner;
struct server;
struct wait;

void live_port(struct port *p);
void live_port_gone(struct port *p);
/* Its linger time or lingering state changed; its epoch changed. */
void live_port_linger(struct port *p);
void live_port_epoch(struct port *p);
void live_handle(struct handle *h);
void live_handle_gone(struct handle *h);
void live_runner(struct runner *r);
void live_runner_gone(struct runner *r);
void live_reg(struct reg *g);
void live_reg_gone(struct reg *g);
/* A one-shot fired (or was enabled again). */
void live_reg_fired(struct reg *g);
/* The EDGE conditions that held when this image left (reg_edge_held()). */
void live_reg_held(struct reg *g, uint8_t held);
/* Its packet was queued, OR-ed into or taken off the queue. */
void live_reg_queued(struct reg *g);
/* The order of a packet queued now, among every port's packets. */
uint64_t live_packet_seq(struct server *srv);
void live_posted(struct port *p, struct packet *pkt);
void live_posted_gone(struct server *srv, struct packet *pkt);
void live_wait(struct wait *w);
void live_wait_gone(struct wait *w);
/* A new journal: the port and everything on it, its queue numbered again in its order. */
void live_port_everything(struct port *p);
/* The journal is gone: the port's and its objects' record numbers back to none. */
void live_port_forget(struct port *p);

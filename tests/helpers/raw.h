/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * raw.h - a raw protocol client for tests: messages written by hand with the codec, so that
 * every malformation and every hostile sequence can be produced.  Each helper fails the running
 * Check test when the daemon does not behave as asked.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Connects a SOCK_SEQPACKET socket to the daemon at path (no HELLO). */
int raw_connect(const char *path);
/* Connects and completes the handshake (HELLO with id 1). */
int raw_hello(const char *path);
void raw_send(int fd, const uint8_t *buf, size_t len, const int *fds, unsigned nfds);
/* Receives one message within 2 s; returns its length, 0 at EOF.  Fails on descriptors. */
ssize_t raw_recv(int fd, uint8_t *buf, size_t cap);
/* Receives one message and checks its type, id and status. */
void expect_reply(int fd, uint16_t type, uint32_t id, uint32_t status);
/* STATUS with id is answered (the connection is served). */
void status_works(int fd, uint32_t id);
/* Creates a port (optionally named); returns its id. */
uint32_t raw_port_create(int fd, uint32_t id, const char *name);
/* The same with a concurrency value (0: the number of processors). */
uint32_t raw_port_create_ex(int fd, uint32_t id, const char *name, uint32_t concurrency);
/* Opens a named port (PORT_OPEN must succeed); returns its id. */
uint32_t raw_port_open(int fd, uint32_t id, const char *name);
/* PORT_TAKE of at most max registrations of port (request id): the reply must succeed and carry
 * one descriptor per item, item i naming descriptor i.  fds (room for SN_PROTO_MAX_FDS) and
 * keys receive them, *ret_remaining what the port has left; returns how many came. */
uint32_t raw_port_take(int fd, uint32_t id, uint32_t port, uint32_t max, int *fds, uint64_t *keys,
                       uint32_t *ret_remaining);
/* Sends PROCESS (request id) with n ENABLE items of port: keys 7, 8, ..., filter IN, LEVEL,
 * descriptor socks[i] for item i, all in one message.  The reply is the caller's to read. */
void raw_send_enables(int fd, uint32_t id, uint32_t port, const int *socks, unsigned n);
/* Connects and completes a handshake offering versions 1 to 2; version 2 must be chosen. */
int raw_hello2(const char *path);
/* A connection that offered versions 1 to version (HELLO flags 0: the socket transport) and
 * got version. */
int raw_hello_version(const char *path, uint16_t version);

struct test_daemon;
/* The daemon serves a fresh client, is back to baseline descriptors, and stops with status 0
 * (under the sanitizer build: no leak).  Fails the running test otherwise. */
void test_daemon_finish(struct test_daemon *d, int baseline);

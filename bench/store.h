/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * store.h - a service manager's descriptor store for the benchmarks (socknotify-bench's
 * registration_store, sn-restore's restarts under a store), on a thread of its own as systemd
 * is another process on another core.
 *
 * store_start() binds a datagram socket at store.path; a daemon started with NOTIFY_SOCKET set
 * to it and FDSTORE=<cap> keeps its journal and descriptor boxes here.  FDSTORE=1 keeps the
 * descriptors under their FDNAME=, FDSTOREREMOVE=1 closes every descriptor of that name,
 * anything else (BARRIER=1 among them) has its descriptors closed.  Fields change under
 * store.lock; messages only counts.
 */
#pragma once

#include <pthread.h>
#include <stddef.h>

#define BENCH_STORE_MAX 4096

struct bench_store {
        int sock;
        char path[108];
        pthread_mutex_t lock;
        int fds[BENCH_STORE_MAX];
        char names[BENCH_STORE_MAX][48];
        unsigned n;
        unsigned long messages;
};

extern struct bench_store store;

/* Binds /tmp/sn-bench-notify-<pid> and starts the thread; exits the program on failure. */
void store_start(void);
/* Returns once every message queued to the store before this call has been handled (a
 * BARRIER=1 of our own, whose descriptor the thread closes), or after timeout_ms; 0 or
 * -ETIMEDOUT. */
int store_sync(int timeout_ms);
/* Closes everything stored (a service manager forgetting the service). */
void store_clear(void);
/* The names of what is stored, joined by ':' (for LISTEN_FDNAMES); the caller holds
 * store.lock. */
void store_names_locked(char *out, size_t outsz);

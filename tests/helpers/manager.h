/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * manager.h - test helper: a service manager's descriptor store, as systemd keeps it, for tests
 * that run socknotifyd without root and without systemd (tests/integration/test-fdstore*.c).
 *
 * manager_start() binds a datagram socket in dir, points NOTIFY_SOCKET at it and sets FDSTORE
 * to cap (so daemons started afterwards use it), and answers on a thread of its own:
 * FDSTORE=1 keeps the descriptors under their FDNAME= (beyond cap they are refused and closed,
 * as systemd does), FDSTOREREMOVE=1 closes every descriptor of that name (unless the name
 * contains keep: a removal that never arrived), BARRIER=1 is answered by closing its
 * descriptor.  Fields are read under lock.
 */
#pragma once

#include <pthread.h>
#include <stddef.h>

#define MAXSTORED 4096

struct manager {
        int sock;
        char path[108];
        pthread_t thread;
        pthread_mutex_t lock;
        unsigned cap; /* FileDescriptorStoreMax= */
        int fds[MAXSTORED];
        char names[MAXSTORED][64];
        unsigned n;
        unsigned stores;   /* FDSTORE=1 messages */
        unsigned refused;  /* of them, refused: the store was full */
        unsigned removed;  /* FDSTOREREMOVE=1 messages */
        unsigned barriers; /* BARRIER=1 messages */
        unsigned bad;      /* FDSTORE=1 without FDPOLL=0 or without a name */
        char keep[48]; /* FDSTOREREMOVE=1 of names holding this ignored: the sender died first */
};

void manager_start(struct manager *m, const char *dir, unsigned cap);
/* Starts socknotifyd on d->path (test_daemon_start_with_fds) with copies of every descriptor
 * stored and their names, as systemd starts a service that has a store. */
struct test_daemon;
void manager_start_daemon(struct manager *m, struct test_daemon *d, const char *const *args);
/* Stops the thread, closes what is stored, unsets NOTIFY_SOCKET and FDSTORE. */
void manager_stop(struct manager *m);
/* Returns once the manager has handled every message queued to it before this call (a
 * BARRIER=1 of its own, answered by closing its descriptor, waited for up to 5 s times
 * CK_TIMEOUT_MULTIPLIER).  What a daemon stored before a reply the test has received is then
 * in the store: the daemon flushes its live store before each reply (daemon/state/live.c). */
void manager_sync(struct manager *m);
/* Entries whose name starts with prefix; _locked: the caller holds m->lock. */
unsigned manager_count(struct manager *m, const char *prefix);
unsigned manager_count_locked(const struct manager *m, const char *prefix);
/* The names of what is stored, joined by ':' (for LISTEN_FDNAMES); the caller holds m->lock. */
void manager_names_locked(const struct manager *m, char *out, size_t outsz);

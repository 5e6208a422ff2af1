/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * closer.c - descriptors that clients gave the daemon are closed off the event loop.
 *
 * close() of the last reference to a socket can block: a TCP socket with SO_LINGER set and
 * unsent data behind a zero window waits out its linger time, and a file of a FUSE filesystem
 * flushes through its server.  A client chooses both, and can change SO_LINGER through its own
 * copy at any moment, so no check before close() is enough.  Every descriptor that came from a
 * client is therefore handed to one closer thread, which does nothing else: a blocked close()
 * delays only the closes queued behind it, never the loop that serves everyone.  The caller
 * takes the descriptor out of epoll first (the kernel drops an epoll item only at the last
 * close, which may now come later).
 *
 * The daemon's own descriptors (epoll instances, the listening socket, client connections,
 * whose Unix sockets do not linger) are closed in place.  Descriptors queued here still take
 * room in the daemon's table until closed: closer_pending() counts them, and the pool of
 * unprivileged users (conn.c) leaves them out of what a client may send, so a close that
 * blocks cannot make room run out for root.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/base/closer.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static bool running, stopping;
static int *queue;
static size_t nqueued, cap;
/* Queued or in the thread's batch: still in the descriptor table (closer_pending()). */
static _Atomic uint64_t pending;

static void *closer_main(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&lock);
        for (;;) {
                int *batch;
                size_t n;

                while (!nqueued && !stopping)
                        pthread_cond_wait(&wake, &lock);
                if (!nqueued && stopping)
                        break;
                batch = queue;
                n = nqueued;
                queue = NULL;
                nqueued = cap = 0;
                pthread_mutex_unlock(&lock);
                for (size_t i = 0; i < n; i++) {
                        close(batch[i]);
                        pending--;
                }
                free(batch);
                pthread_mutex_lock(&lock);
        }
        pthread_mutex_unlock(&lock);
        return NULL;
}

int closer_start(void)
{
        sigset_t all, old;
        int r;

        /* The thread takes no signal: libevent handles them in the loop's thread. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r = pthread_create(&thread, NULL, closer_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r)
                return -r;
        running = true;
        return 0;
}

void closer_stop(void)
{
        if (!running)
                return;
        pthread_mutex_lock(&lock);
        stopping = true;
        pthread_cond_signal(&wake);
        pthread_mutex_unlock(&lock);
        pthread_join(thread, NULL);
        running = stopping = false;
}

int closer_close(int fd)
{
        if (fd < 0)
                return -1;
        if (!running) {
                close(fd);
                return -1;
        }
        pthread_mutex_lock(&lock);
        if (nqueued == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                int *q = realloc(queue, ncap * sizeof(int));

                if (!q) {
                        /* Out of memory: closed here, as before this module existed. */
                        pthread_mutex_unlock(&lock);
                        close(fd);
                        return -1;
                }
                queue = q;
                cap = ncap;
        }
        queue[nqueued++] = fd;
        pending++;
        pthread_cond_signal(&wake);
        pthread_mutex_unlock(&lock);
        return -1;
}

uint64_t closer_pending(void)
{
        return pending;
}

void closer_close_all(const int *fds, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                closer_close(fds[i]);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * epctl.h - the daemon's epoll_ctl calls, batched through one io_uring where the kernel allows
 * it, else made one by one (epctl.c).  Knows no daemon object: an operation carries an opaque
 * cookie, and its result goes to the handler given at epctl_new().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct epctl;

/* Called once per queued operation when its batch is flushed, in the order they were queued,
 * with the operation's cookie and arg: res is 0 or the negative errno epoll_ctl would have
 * returned.  It may call epctl_ctl() again (the operation is then made at once, without
 * io_uring). */
typedef void (*epctl_done_fn)(void *ctx, uint64_t cookie, void *arg, int res);

/* Why the plain path is in use (epctl_plain_reason()). */
enum epctl_plain {
        EPCTL_PLAIN_NONE,        /* io_uring is in use */
        EPCTL_PLAIN_NOT_BUILT,   /* built without liburing */
        EPCTL_PLAIN_DISABLED,    /* --no-io-uring */
        EPCTL_PLAIN_REFUSED,     /* io_uring_setup failed: kernel, sysctl or seccomp */
        EPCTL_PLAIN_UNSUPPORTED, /* the kernel has io_uring without IORING_OP_EPOLL_CTL */
        EPCTL_PLAIN_FAILED,      /* a submission failed as a whole */
};

struct epctl_stats {
        uint64_t batches;   /* io_uring submissions (each waits for all its completions) */
        uint64_t ops;       /* operations made through io_uring */
        uint64_t plain_ops; /* operations made by a plain epoll_ctl */
        uint64_t fallbacks; /* switches to the plain path at run time (0 or 1) */
};

/*
 * Makes the batcher.  With use_uring it tries to set up its io_uring (close-on-exec, as every
 * io_uring descriptor); any refusal leaves the plain path, logged once at info level.  done
 * and ctx receive the results of queued operations.  Returns 0 or -ENOMEM.
 */
int epctl_new(bool use_uring, epctl_done_fn done, void *ctx, struct epctl **ret_epctl);
/* Frees the batcher after flushing it; accepts NULL, returns NULL. */
struct epctl *epctl_free(struct epctl *e);

/* Opens a window in which epctl_ctl() may queue (windows nest); epctl_end() closes it, and the
 * outermost one flushes. */
void epctl_begin(struct epctl *e);
void epctl_end(struct epctl *e);

/*
 * epoll_ctl(epfd, op, fd, event) with cookie and arg for its result (kept in the batch, so that
 * what a caller needs only while an operation is queued costs nothing elsewhere).  Inside a
 * window on the io_uring path the operation is queued and 1 returned: its result goes to the
 * handler at the next flush (made first when the batch is full).  Otherwise it is made at once: 0 or a negative
 * errno.  event is copied.  The caller must flush before it queues a second operation on the
 * same (epfd, fd), before it closes fd or epfd, and before an epoll_wait on epfd: the kernel
 * may run a batch's operations in any order.  e may be NULL (plain path).
 */
int epctl_ctl(struct epctl *e, int epfd, int op, int fd, const struct epoll_event *event,
              uint64_t cookie, void *arg);
/* epoll_ctl(epfd, op, fd, event) made at once, whatever the window (counted with the plain
 * operations): 0 or a negative errno.  e may be NULL. */
int epctl_now(struct epctl *e, int epfd, int op, int fd, const struct epoll_event *event);
/* Submits what is queued, waits for every completion and hands each result to the handler.
 * Does nothing when nothing is queued; e may be NULL. */
void epctl_flush(struct epctl *e);
/* Operations queued and not flushed yet. */
unsigned epctl_queued(const struct epctl *e);

enum epctl_plain epctl_plain_reason(const struct epctl *e);
/* "io_uring" or "epoll_ctl" */
const char *epctl_path_name(const struct epctl *e);
/* Why the plain path is in use, in a word ("" on the io_uring path). */
const char *epctl_plain_name(enum epctl_plain why);
const struct epctl_stats *epctl_stats(const struct epctl *e);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * epctl.c - the daemon's epoll_ctl calls, batched.  A PROCESS that re-enables 256 one-shot
 * registrations makes 256 EPOLL_CTL_MOD calls; queued here and submitted with one
 * io_uring_submit_and_wait (IORING_OP_EPOLL_CTL) they cost one system call.
 *
 * Invariants:
 *  - One io_uring per daemon, made at start (and again by the image a re-exec starts: its
 *    descriptor is close-on-exec by nature and never part of the saved state).  Nothing is in
 *    flight between loop turns: a flush submits and waits for every completion.
 *  - Every SQE is built here from the caller's arguments: descriptors the daemon owns and an
 *    event it made (the data is a registration's slot).  Nothing a client wrote goes in.  The
 *    kernel copies each epoll_event when it takes the SQE, during the submission, so the
 *    events live in this module's array until then.
 *  - Results are handed over in queue order, whatever order the completions came in.  The
 *    kernel may run a batch's operations out of order (one that finds the epoll instance's
 *    mutex taken, by the closer thread's close() for one, is punted to a worker), which is why
 *    the caller never queues two operations on one descriptor of one epoll instance.
 *  - Any refusal (io_uring_setup failing with ENOSYS, EPERM from seccomp or
 *    kernel.io_uring_disabled, a probe without IORING_OP_EPOLL_CTL, a submission failing as a
 *    whole) leaves the plain path for the rest of the daemon's life, logged once at info level.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#include "common/log.h"
#include "daemon/base/epctl.h"

/* The most operations in one batch: a full batch is flushed before the next is queued. */
#define EPCTL_BATCH 256

struct epctl_op {
        uint64_t cookie;
        void *arg;
        struct epoll_event event;
        int epfd, op, fd;
        int res;
};

struct epctl {
        epctl_done_fn done;
        void *ctx;
        enum epctl_plain plain;
        unsigned depth;   /* open windows */
        unsigned n;       /* queued operations */
        bool dispatching; /* handing results over: new operations are made at once */
        struct epctl_stats stats;
        struct epctl_op ops[EPCTL_BATCH];
#ifdef HAVE_LIBURING
        struct io_uring ring;
#endif
};

const char *epctl_plain_name(enum epctl_plain why)
{
        switch (why) {
        case EPCTL_PLAIN_NONE:
                return "";
        case EPCTL_PLAIN_NOT_BUILT:
                return "not-built";
        case EPCTL_PLAIN_DISABLED:
                return "disabled";
        case EPCTL_PLAIN_REFUSED:
                return "refused";
        case EPCTL_PLAIN_UNSUPPORTED:
                return "unsupported";
        case EPCTL_PLAIN_FAILED:
                return "failed";
        }
        return "?";
}

#ifdef HAVE_LIBURING
/* Sets up the ring; returns 0, or the reason for the plain path (logged). */
static enum epctl_plain ring_setup(struct epctl *e)
{
        struct io_uring_probe *probe;
        bool epoll_ok;
        int r;

        /* SUBMIT_ALL (5.18): an SQE that fails to start does not stop the rest of the batch. */
        r = io_uring_queue_init(EPCTL_BATCH, &e->ring, IORING_SETUP_SUBMIT_ALL);
        if (r == -EINVAL)
                r = io_uring_queue_init(EPCTL_BATCH, &e->ring, 0);
        if (r < 0) {
                log_info("io_uring refused (%s): epoll_ctl is called once per operation",
                         strerror(-r));
                return EPCTL_PLAIN_REFUSED;
        }
        probe = io_uring_get_probe_ring(&e->ring);
        epoll_ok = probe && io_uring_opcode_supported(probe, IORING_OP_EPOLL_CTL);
        if (probe)
                io_uring_free_probe(probe);
        if (!epoll_ok) {
                io_uring_queue_exit(&e->ring);
                log_info("io_uring has no IORING_OP_EPOLL_CTL here: epoll_ctl is called once "
                         "per operation");
                return EPCTL_PLAIN_UNSUPPORTED;
        }
        return EPCTL_PLAIN_NONE;
}
#endif

int epctl_new(bool use_uring, epctl_done_fn done, void *ctx, struct epctl **ret_epctl)
{
        struct epctl *e = calloc(1, sizeof(*e));

        if (!e)
                return -ENOMEM;
        e->done = done;
        e->ctx = ctx;
#ifdef HAVE_LIBURING
        e->plain = use_uring ? ring_setup(e) : EPCTL_PLAIN_DISABLED;
#else
        e->plain = use_uring ? EPCTL_PLAIN_NOT_BUILT : EPCTL_PLAIN_DISABLED;
#endif
        *ret_epctl = e;
        return 0;
}

struct epctl *epctl_free(struct epctl *e)
{
        if (!e)
                return NULL;
        epctl_flush(e);
#ifdef HAVE_LIBURING
        if (e->plain == EPCTL_PLAIN_NONE)
                io_uring_queue_exit(&e->ring);
#endif
        free(e);
        return NULL;
}

void epctl_begin(struct epctl *e)
{
        if (e)
                e->depth++;
}

void epctl_end(struct epctl *e)
{
        if (!e || !e->depth)
                return;
        if (--e->depth == 0)
                epctl_flush(e);
}

static int plain_ctl(struct epctl *e, int epfd, int op, int fd, struct epoll_event *event)
{
        if (e)
                e->stats.plain_ops++;
        return epoll_ctl(epfd, op, fd, event) < 0 ? -errno : 0;
}

#ifdef HAVE_LIBURING
/* Submits the queued SQEs and reaps their completions into ops[].res.  *ret_submitted tells
 * how many the kernel took: those have their result (-EIO if it could not be read).  Returns 0,
 * or a negative errno when a submission failed as a whole. */
static int ring_run(struct epctl *e, unsigned *ret_submitted)
{
        unsigned submitted = 0, reaped = 0;
        int r = 0;

        while (submitted < e->n) {
                r = io_uring_submit(&e->ring);
                if (r == -EINTR)
                        continue;
                if (r <= 0)
                        break;
                submitted += (unsigned)r;
                r = 0;
        }
        if (r == 0 && submitted < e->n)
                r = -EIO; /* the kernel took none of what was left */
        *ret_submitted = submitted;
        while (reaped < submitted) {
                struct io_uring_cqe *cqe;
                int w = io_uring_wait_cqe(&e->ring, &cqe);

                if (w == -EINTR)
                        continue;
                if (w < 0)
                        return w; /* the ring is unusable: the unread ones keep -EIO */
                /* user_data is the index this module gave the SQE, checked all the same. */
                if (cqe->user_data < e->n)
                        e->ops[cqe->user_data].res = cqe->res;
                io_uring_cqe_seen(&e->ring, cqe);
                reaped++;
        }
        return r;
}
#endif

void epctl_flush(struct epctl *e)
{
        unsigned n;

        if (!e || !e->n || e->dispatching)
                return;
        n = e->n;
#ifdef HAVE_LIBURING
        {
                unsigned submitted = 0;
                int r = ring_run(e, &submitted);

                if (submitted) {
                        e->stats.batches++;
                        e->stats.ops += submitted;
                }
                if (r < 0) {
                        /* What the kernel did not take is made one by one. */
                        log_info("io_uring submission failed (%s): epoll_ctl is called once "
                                 "per operation from now on",
                                 strerror(-r));
                        io_uring_queue_exit(&e->ring);
                        e->plain = EPCTL_PLAIN_FAILED;
                        e->stats.fallbacks++;
                        for (unsigned i = submitted; i < n; i++) {
                                struct epctl_op *o = &e->ops[i];

                                o->res = plain_ctl(e, o->epfd, o->op, o->fd, &o->event);
                        }
                }
        }
#endif
        e->n = 0;
        e->dispatching = true;
        for (unsigned i = 0; i < n; i++)
                e->done(e->ctx, e->ops[i].cookie, e->ops[i].arg, e->ops[i].res);
        e->dispatching = false;
}

int epctl_ctl(struct epctl *e, int epfd, int op, int fd, const struct epoll_event *event,
              uint64_t cookie, void *arg)
{
        struct epoll_event copy = { 0 };

        if (event)
                copy = *event;
        if (!e || e->plain != EPCTL_PLAIN_NONE || !e->depth || e->dispatching)
                return plain_ctl(e, epfd, op, fd, event ? &copy : NULL);
#ifdef HAVE_LIBURING
        {
                struct io_uring_sqe *sqe;
                struct epctl_op *o;

                if (e->n == EPCTL_BATCH)
                        epctl_flush(e);
                if (e->plain != EPCTL_PLAIN_NONE) /* that flush failed as a whole */
                        return plain_ctl(e, epfd, op, fd, event ? &copy : NULL);
                sqe = io_uring_get_sqe(&e->ring);
                if (!sqe) /* cannot happen: the ring has EPCTL_BATCH entries, all free */
                        return plain_ctl(e, epfd, op, fd, event ? &copy : NULL);
                o = &e->ops[e->n];
                *o = (struct epctl_op){ .cookie = cookie, .arg = arg, .event = copy, .epfd = epfd,
                                        .op = op, .fd = fd, .res = -EIO };
                io_uring_prep_epoll_ctl(sqe, epfd, fd, op, event ? &o->event : NULL);
                io_uring_sqe_set_data64(sqe, e->n);
                e->n++;
                return 1;
        }
#else
        (void)cookie; /* never queued */
        (void)arg;
        return plain_ctl(e, epfd, op, fd, event ? &copy : NULL);
#endif
}

int epctl_now(struct epctl *e, int epfd, int op, int fd, const struct epoll_event *event)
{
        struct epoll_event copy = { 0 };

        if (event)
                copy = *event;
        return plain_ctl(e, epfd, op, fd, event ? &copy : NULL);
}

unsigned epctl_queued(const struct epctl *e)
{
        return e ? e->n : 0;
}

enum epctl_plain epctl_plain_reason(const struct epctl *e)
{
        return e ? e->plain : EPCTL_PLAIN_DISABLED;
}

const char *epctl_path_name(const struct epctl *e)
{
        return epctl_plain_reason(e) == EPCTL_PLAIN_NONE ? "io_uring" : "epoll_ctl";
}

const struct epctl_stats *epctl_stats(const struct epctl *e)
{
        return &e->stats;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * taskstate.h - what the kernel says of a client's thread: whether it runs or waits, read from
 * /proc (taskstate.c).  Knows no daemon object: a thread is named by its process (as
 * SO_PEERCRED gave it, in the daemon's PID namespace) and a thread id.
 *
 * Every thread id comes from a client and is hostile: it is only ever looked up below
 * /proc/PID/task/, where the kernel lists the threads of that one process, so a number that is
 * not one of its threads is not found (never another process's thread).  A file is read only
 * when it belongs to owner, the client's uid: should the client's process be gone and its pid
 * reused (the connection lives on in a child or another process it was passed to), a process
 * of another user is never read.  (A process that is not dumpable has its /proc files owned by
 * root: it is not read either.)
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* Thread ids above every possible one (PID_MAX_LIMIT, 2^22): the C library's identities for
 * tasks of an event loop start there (PROTOCOL.md, section 4). */
#define TASKSTATE_TID_LIMIT 0x00400000u

/* What taskstate_ns() tells of a process. */
enum taskstate_ns {
        TASKSTATE_NS_SAME = 1,   /* in the daemon's PID namespace: its thread ids are ours */
        TASKSTATE_NS_NESTED = 2, /* in a descendant namespace: its ids must be mapped */
};

/*
 * Whether thread tid (an id in the daemon's namespace) of process pid is in a wait state.  The
 * state letter is the field after the command name of /proc/PID/task/TID/stat: R (running or
 * runnable) runs; S and D (waiting, interruptible or not), T and t (stopped: Windows counts a
 * suspended thread as waiting too), Z and X (gone), I and P wait.  Returns 1 (waits), 0 (runs)
 * or a negative errno: -ENOENT or -ESRCH (no such thread of pid), -EACCES (hidepid, or not
 * owner's), -EINVAL
 * (pid or tid out of range, or a line that cannot be read).
 */
int taskstate_waits(pid_t pid, pid_t tid, uid_t owner);

/*
 * In which PID namespace process pid lives, from the NSpid line of /proc/PID/status (one id:
 * ours; more: a descendant's, the last being the process's own).  Returns
 * TASKSTATE_NS_SAME, TASKSTATE_NS_NESTED or a negative errno (-ENOENT, -EACCES, -ENOTSUP when
 * the daemon's own /proc is not of its namespace, -EINVAL).
 */
int taskstate_ns(pid_t pid, uid_t owner);

/*
 * The id, in the daemon's namespace, of the thread of process pid whose id in its own
 * namespace is inner: the NSpid lines of /proc/PID/task/ * /status, one file read per thread
 * taken from *budget, none once it is 0.  Returns the id (> 0), -ENOENT (not among the threads
 * read), or another negative errno.
 */
pid_t taskstate_map(pid_t pid, uid_t owner, uint32_t inner, unsigned *budget);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * daemon.h - test helpers: start the real socknotifyd on a private socket, count its open
 * descriptors, and make real socket pairs.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct test_daemon {
        pid_t pid;
        char dir[64];
        char path[96];
        /* Set by a test whose daemon may die as soon as it serves (tests/helpers/crash-reply.c),
         * for the starts again on the same path (test_daemon_start_with_fds): they then wait
         * until it accepts connections, not for a HELLO to be answered.  A new start clears it. */
        bool no_probe;
};

/* Starts daemon/socknotifyd from the build tree on DIR/socknotify.sock with extra arguments
 * (NULL-terminated, may be NULL) and waits until it accepts connections.  The daemon dies with
 * the calling process (PR_SET_PDEATHSIG).  $SN_TEST_DAEMON_WRAPPER (for example
 * "valgrind --error-exitcode=99 --leak-check=full") is put in front of the command, and the words
 * of $SN_TEST_DAEMON_ARGS (for example "--no-io-uring") after the arguments.  Aborts the test on
 * failure. */
void test_daemon_start(struct test_daemon *d, const char *const *args);
/* test_daemon_start() with the daemon's RLIMIT_NOFILE set to nofile, soft and hard: its
 * descriptor capacity. */
void test_daemon_start_nofile(struct test_daemon *d, const char *const *args, unsigned nofile);
/* A uid that no process on this machine runs as and no account has: for a daemon whose
 * per-user kernel budgets (descriptors in flight: ETOOMANYREFS) must be its own, not shared with
 * whatever else the test's user runs.  Returns true with *ret_uid; false, with the reason in
 * why, when this process cannot switch to another uid (not root). */
bool test_private_uid(uid_t *ret_uid, char *why, size_t whysz);
/* test_daemon_start() with the daemon running as uid (and gid uid, no supplementary groups, so
 * without capabilities); its directory belongs to uid.  The wrapper runs as uid too. */
void test_daemon_start_as(struct test_daemon *d, const char *const *args, uid_t uid);
/* Starts it again on the same path (after it stopped), passing fds (nfds at most 256; names
 * joined by ':') with LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID as systemd does. */
void test_daemon_start_with_fds(struct test_daemon *d, const char *const *args, const int *fds,
                                unsigned nfds, const char *names);
/* SIGTERM, wait, remove the directory; returns the daemon's exit status (-1 if killed). */
int test_daemon_stop(struct test_daemon *d);
/* Waits for a daemon that was told to stop; returns its exit status as test_daemon_stop(). */
int test_daemon_reap(struct test_daemon *d);
/* The descriptors a daemon holds for one library connection of this process: its socket, and
 * with the shared-memory rings (protocol version 3, unless SOCKNOTIFY_NO_SHM is set) the ring
 * file and the two doorbells. */
int test_conn_fds(void);
/* test_daemon_start() with no arguments, and the library's default connection pointed at it
 * (SOCKNOTIFY_SOCKET), with a resume window long enough for a slow machine to start another
 * daemon on the same path (SOCKNOTIFY_RECONNECT_MS=60000; a test may set its own after). */
void test_daemon_start_resumable(struct test_daemon *d);
/* Stops d if it runs (a teardown after a test that may have stopped it itself). */
void test_daemon_stop_if_running(struct test_daemon *d);
/* Open descriptors of the daemon (/proc/PID/fd). */
int test_daemon_fds(const struct test_daemon *d);
/* The daemon's CPU time so far (user + system), in clock ticks (/proc/PID/stat). */
long test_daemon_cpu_ticks(const struct test_daemon *d);
/* Waits up to timeout_ms (scaled: test_timeout_ms()) for the daemon's descriptor count to equal
 * want; returns the count. */
int test_daemon_wait_fds(const struct test_daemon *d, int want, int timeout_ms);

/* Connected loopback TCP pair; the server side is non-blocking. */
void tcp_pair(int *client, int *server);
/* A listening loopback TCP socket; *port receives its port (network order). */
int tcp_listener(unsigned short *port);
/* Connected UDP pair over loopback. */
void udp_pair(int *a, int *b);
/* Runs a Check suite (fork mode, every case isolated) and returns the process exit status. */
struct Suite;
int test_run_suite(struct Suite *s);
/* Milliseconds on the monotonic clock. */
long long now_ms(void);
/* A time bound of a wait, ms scaled by $CK_TIMEOUT_MULTIPLIER (as Check scales a case's
 * timeout; 1 when unset or not a positive number): slow, busy and sanitizer machines get as much
 * more time for a wait as for the whole case. */
int test_timeout_ms(int ms);
/* True when fd's peer has closed (recv returns 0) within timeout_ms, scaled as
 * test_timeout_ms(). */
bool peer_closed(int fd, int timeout_ms);
/* The number of the system call that thread tid of this process is blocked in (-1 when it
 * runs or cannot be read). */
long test_thread_syscall(pid_t tid);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * server.h - the daemon's loop, signals, re-exec and reload (server.c) and its status
 * document (status.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/base/settings.h"

struct conn;
struct server;

/* Where the file's settings in force came from (srv->config_state; the status document's
 * configuration.state, server_config_state_name()). */
enum config_state {
        CONFIG_NONE,      /* no file (--config=''): the defaults and the options */
        CONFIG_FILE,      /* the file, read without error */
        CONFIG_ABSENT,    /* the file does not exist: the defaults and the options */
        CONFIG_LAST_GOOD, /* the file was bad at start: the previous daemon's last good ones */
        CONFIG_DEFAULTS,  /* the file was bad at start and none were kept: the defaults */
};
const char *server_config_state_name(int state);

struct server_options {
        const char *path;
        char *const *argv;        /* for a re-exec: the command line again */
        const char *config_path;  /* "" for none; read again on SIGHUP */
        bool config_named;        /* given with --config: it must exist */
        struct settings cmdline;  /* what the command line set: wins over the file */
        uint32_t mode;
        const char *group;
        struct limits limits;
        bool trace;
        bool no_shm; /* offer no rings (--no-shm) */
        bool no_io_uring; /* epoll_ctl one call at a time (--no-io-uring) */
        int listen_fd; /* an adopted listening socket, or -1 */
};

int server_new(const struct server_options *opt, struct server **ret_srv);
/* Serves until SIGTERM/SIGINT.  Returns 0, or -EIO when the loop failed; either way with the
 * handled signals held (blocked) for the rest of the process: see server_hold_signals(). */
int server_run(struct server *srv);
void server_free(struct server *srv);
/* Blocks every signal the daemon handles (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM)
 * in the calling thread, for good: once the daemon stops, one arriving waits, pending, instead
 * of ending the process with its default action after server_free() removed its handler. */
void server_hold_signals(void);
/* Logs (notice) and discards the held signals that arrived meanwhile; the kernel keeps one
 * pending signal of each kind, so a kind sent several times is logged once. */
void server_note_held_signals(void);
/* Re-executes the daemon's binary in place keeping every client (SIGUSR2): the state goes
 * through a memfd, checked first by the new binary (--check-state).  Returns only on failure
 * (logged), with everything still served: a negative errno. */
int server_reexec(struct server *srv);
/* A re-exec asked for by conn's CONTROL request id: answer (JSON text) is queued to go out
 * from the new image.  Returns only on failure, with the answer taken back. */
int server_reexec_for(struct server *srv, struct conn *conn, uint32_t id, const char *answer);
/* Reads the configuration file again and applies it to new requests (SIGHUP, CONTROL reload,
 * systemctl reload).  Returns 0, or a negative errno when the file is bad: logged at err, err
 * holds "PATH:LINE: what, naming the key" (errsz bytes), and the running settings stay. */
int server_reload(struct server *srv, char *err, size_t errsz);
/* Reads the configuration file as server_reload() would, with the same parser and checks, and
 * applies nothing (CONTROL check-config).  Returns 0 (good), 1 (no file: none is configured,
 * or it is absent and need not exist), or a negative errno with err as server_reload()'s. */
int server_check_config(struct server *srv, char *err, size_t errsz);
/* Grows the daemon's message buffers to hold max_message bytes: a restored connection keeps the
 * limit its handshake announced, which may exceed the running one.  0 or -ENOMEM (bufsize
 * unchanged: every buffer holds at least that). */
int server_fit_buffers(struct server *srv, uint32_t max_message);
/* Sets the outcome shown after the counts on the STATUS= line: prefix and text, cut (if at all)
 * at a word boundary and marked with an ellipsis, never inside a word. */
void server_set_note(struct server *srv, const char *prefix, const char *text);
/* Builds the status document as user uid may see it (root: everything; others: the daemon's
 * limits and their own figures only).  Returns malloc'ed JSON text or NULL. */
char *server_status_json(struct server *srv, uid_t uid);

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * settings.h - limits and log level from defaults, the command line and the configuration file
 * (settings.c).  Precedence, rising: defaults, file, command line.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every resource a client can make the daemon hold has a limit, and every one that costs a
 * descriptor or memory has a limit per user (uid from SO_PEERCRED), so that one user can never
 * take what others need.  socknotifyd(8) lists them; defaults are in main.c.
 */
/* The range of max-message (bytes): a journal's recorded values outside it are not taken. */
#define SETTINGS_MAX_MESSAGE_MIN 4096u
#define SETTINGS_MAX_MESSAGE_MAX (1u << 20)

struct limits {
        uint32_t max_message;
        uint32_t max_fds;
        uint32_t max_ports;         /* handles per connection */
        uint32_t max_registrations; /* per port */
        uint32_t max_posted;        /* queued posted packets per port */
        uint32_t max_waits;         /* parked calls per connection */
        uint32_t max_connections;   /* daemon-wide */
        uint32_t max_output;        /* bytes of replies held for one connection */
        uint32_t max_sockets_per_user;     /* sockets held (registered or staged) per uid */
        uint32_t max_connections_per_user;
        uint32_t max_ports_per_user;       /* ports created (each costs an epoll descriptor) */
        uint32_t max_waits_per_user;
        uint32_t max_posted_per_user;
        uint32_t max_staged_per_user;      /* items of unfinished multi-part calls */
        uint32_t max_output_per_user;      /* bytes: queued replies and parked calls' results */
        uint32_t max_doorbells_per_user;   /* ring doorbells a second that find no work */
        uint32_t handshake_timeout_ms;     /* HELLO must come within this */
        uint32_t max_linger_ms;            /* longest linger time of a named port */
        /* What only root and the daemon's own user may use (privileged users); every other
         * user together holds at most the rest, the pool (limits_fd_pool() and so on). */
        uint32_t reserve_fds;              /* descriptors, the daemon's own among them */
        uint32_t reserve_connections;      /* of max_connections */
        uint32_t max_output_unprivileged;  /* bytes: output of all unprivileged users */
        uint32_t max_posted_unprivileged;  /* posted packets of all unprivileged users */
        uint32_t max_staged_unprivileged;  /* staged items of all unprivileged users */
        uint32_t max_waits_unprivileged;   /* parked calls of all unprivileged users */
};

/* The most registration items one PROCESS call may carry, all parts together: its reply (header,
 * body, one result per item) must leave room for at least one entry in max_message bytes (the
 * connection's own, limits_call_items_of(); the running image's, limits_call_items()). */
static inline uint32_t limits_call_items_of(uint32_t max_message)
{
        return (max_message - 24 - 4 - 24) / 4;
}

static inline uint32_t limits_call_items(const struct limits *l)
{
        return limits_call_items_of(l->max_message);
}

/* The descriptors all unprivileged users together may make the daemon hold: the capacity
 * (RLIMIT_NOFILE) less the reserve.  The per-user defaults are fractions of it. */
static inline uint64_t limits_fd_pool(const struct limits *l, uint64_t capacity)
{
        return capacity > l->reserve_fds ? capacity - l->reserve_fds : 0;
}

/* The connections all unprivileged users together may open. */
static inline uint32_t limits_conn_pool(const struct limits *l)
{
        return l->max_connections > l->reserve_connections
                       ? l->max_connections - l->reserve_connections
                       : 0;
}

/* A numeric option: sets one field of struct limits, within [min, max]. */
struct limit_option {
        const char *name; /* the long option and the configuration key */
        size_t offset;
        uint32_t min, max;
        const char *help;
        const char *computed; /* where a default of 0 comes from, for --help */
};

extern const struct limits settings_default_limits;
extern const struct limit_option settings_limit_options[];
extern const size_t settings_nlimit_options;

/* What one source (command line or file) sets. */
struct settings {
        struct limits limits; /* the fields whose bit is in set */
        uint32_t set;         /* bit i: settings_limit_options[i] */
        int log_level;        /* LOG_* or -1 when not set */
        int no_io_uring;      /* "no-io-uring": 1 or 0, -1 when not set (read at start) */
};

void settings_init(struct settings *s);
uint32_t *settings_limit_field(struct limits *l, const struct limit_option *o);
/* Sets limit i; returns 0 or -ERANGE outside its range. */
int settings_set_limit(struct settings *s, size_t i, uint64_t value);
/* "error", "warning", "notice", "info", "debug" -> LOG_*, or -EINVAL. */
int settings_parse_log_level(const char *name);
const char *settings_log_level_name(int level);
/* The largest configuration file read, in bytes. */
#define SETTINGS_FILE_MAX (1u << 20)

/*
 * Reads the configuration file at path into *ret.  Returns 0; 1 when the file does not exist
 * and must_exist is false (then *ret sets nothing); or a negative errno with err holding
 * "PATH:LINE: what is wrong, naming the key" or "PATH: why it cannot be read" (then *ret is
 * untouched).  Refuses anything but a regular file of at most SETTINGS_FILE_MAX bytes; never
 * blocks (a FIFO is opened non-blocking and refused).
 */
int settings_load_file(const char *path, bool must_exist, struct settings *ret, char *err,
                       size_t errsz);
/* As settings_load_file(), from a descriptor it borrows (read with pread from offset 0); name
 * stands for the file in err. */
int settings_read_fd(int fd, const char *name, struct settings *ret, char *err, size_t errsz);
/*
 * The one check of a setting, for the file and the command line alike: sets the option called
 * key (a configuration key, the long option's name) in *s from the file's JSON value (value)
 * or, when value is NULL, the command line's text (arg: a decimal number for a limit, a level's
 * name for "log-level").  Returns 0; -ENOENT for a key that is no setting; -EINVAL for a value
 * of the wrong type or out of its range (settings_limit_options[]).  On error what holds what
 * is wrong, naming the key ("key \"max-ports\": an integer from 1 to 1048576"); the caller
 * says where (the file and line, or the option as given).
 */
struct json_t;
int settings_take(struct settings *s, const char *key, const struct json_t *value,
                  const char *arg, char *what, size_t whatsz);
/* Parses a configuration text of len bytes (text[len] must be 0) named name; returns 0 or
 * -EINVAL with err as settings_load_file(). */
int settings_parse(const char *name, const char *text, size_t len, struct settings *ret,
                   char *err, size_t errsz);
/* s as a configuration text that settings_parse() reads back to s (malloc'd, the caller frees
 * it), or NULL when out of memory. */
char *settings_format(const struct settings *s);
/* Merges defaults, file and command line; fills the defaults that follow the descriptor
 * capacity: the reserve (max(64, capacity / 16)), and the per-user limits on sockets (half the
 * pool), connections and ports (an eighth of it, at most 1024), where the pool is the capacity
 * less the reserve; and the reserved connections (max_connections / 16, from 4 to half). */
void settings_resolve(const struct settings *cmdline, const struct settings *file,
                      uint64_t capacity, struct limits *ret_limits, int *ret_log_level);

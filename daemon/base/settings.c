/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * settings.c - the daemon's limits and log level: defaults, the command line, and the
 * configuration file (JSON, read with jansson), merged in that order of rising precedence.
 *
 * The file is a flat JSON object whose keys are the long option names of socknotifyd(8):
 * { "log-level": "debug", "max-waits": 2048 }.  Every key and every option is checked by one
 * function, settings_take(), against the same table and ranges, so a file can express exactly
 * what options can, and both say what is wrong in the same words.  A bad file is refused whole,
 * with its path, the line and the key; what the daemon then does (a fresh start exits, a start
 * that takes sessions over and a reload go on) is main.c's and server.c's business.  Only a
 * regular file of at most SETTINGS_FILE_MAX bytes is read, opened without blocking (a FIFO),
 * into one bounded buffer (a device such as /dev/zero is refused, never read without end).
 *
 * "no-io-uring" (true or false, as the option) is read at start: the daemon's io_uring is made
 * once.  Limits whose value clients were told in HELLO_REPLY and sized their messages by
 * (max-message, max-fds) apply only to connections made after the next start or re-exec (a
 * connection keeps what it was told); every other limit applies to the next request that
 * allocates, and nothing held above a lowered limit is taken away.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/settings.h"
#include "proto/codec.h"

const struct limits settings_default_limits = {
        .max_message = 131072,
        .max_fds = SN_PROTO_MAX_FDS,
        .max_ports = 64,
        .max_registrations = 65536,
        .max_posted = 65536,
        .max_waits = 1024,
        .max_connections = 4096,
        .max_output = 8u << 20,
        .max_sockets_per_user = 0,     /* 0: half the descriptor pool */
        .max_connections_per_user = 0, /* 0: an eighth of it, at most 1024 */
        .max_ports_per_user = 0,       /* 0: an eighth of it, at most 1024 */
        .max_waits_per_user = 4096,
        .max_posted_per_user = 262144,
        .max_staged_per_user = 131072,
        .max_output_per_user = 64u << 20,
        .max_doorbells_per_user = 4096,
        .handshake_timeout_ms = 10000,
        .max_linger_ms = 600000,
        .reserve_fds = 0,         /* 0: a sixteenth of the descriptor capacity, at least 64 */
        .reserve_connections = 0, /* 0: a sixteenth of max_connections, 4 to half of it */
        .max_output_unprivileged = 256u << 20,
        /* Four users at their per-user defaults: socknotifyd(8), "The reserve", has the bytes. */
        .max_posted_unprivileged = 4 * 262144,
        .max_staged_unprivileged = 4 * 131072,
        .max_waits_unprivileged = 4 * 4096,
};

#define LIMIT(n, field, lo, hi, h) { n, offsetof(struct limits, field), lo, hi, h, NULL }
#define LIMIT_COMPUTED(n, field, lo, hi, h, from) \
        { n, offsetof(struct limits, field), lo, hi, h, from }
const struct limit_option settings_limit_options[] = {
        LIMIT("max-message", max_message, SETTINGS_MAX_MESSAGE_MIN, SETTINGS_MAX_MESSAGE_MAX,
              "largest message in bytes"),
        /* Below the kernel's SCM_MAX_FD only to test clients: a binding's split calls and its
         * ETOOMANYREFS path are reached with a few sockets (socknotifyd(8)). */
        LIMIT("max-fds", max_fds, 1, SN_PROTO_MAX_FDS, "descriptors in one message"),
        LIMIT("max-ports", max_ports, 1, 1u << 20, "port handles per connection"),
        LIMIT("max-registrations", max_registrations, 1, 1u << 24, "registrations per port"),
        LIMIT("max-posted", max_posted, 1, 1u << 24, "queued posted packets per port"),
        LIMIT("max-waits", max_waits, 1, 1u << 20, "waiting calls per connection"),
        LIMIT("max-connections", max_connections, 1, 1u << 20, "connections at once"),
        LIMIT("max-output", max_output, 65536, 1u << 30,
              "bytes of replies held for one connection"),
        LIMIT_COMPUTED("max-sockets-per-user", max_sockets_per_user, 1, 1u << 30,
                       "sockets held for one user", "half the descriptor pool"),
        LIMIT_COMPUTED("max-connections-per-user", max_connections_per_user, 1, 1u << 20,
                       "connections of one user", "an eighth of the pool, at most 1024"),
        LIMIT_COMPUTED("max-ports-per-user", max_ports_per_user, 1, 1u << 20,
                       "ports of one user", "an eighth of the pool, at most 1024"),
        LIMIT("max-waits-per-user", max_waits_per_user, 1, 1u << 24,
              "waiting calls of one user"),
        LIMIT("max-posted-per-user", max_posted_per_user, 1, 1u << 26,
              "queued posted packets of one user"),
        LIMIT("max-staged-per-user", max_staged_per_user, 1, 1u << 26,
              "items of unfinished multi-part calls of one user"),
        LIMIT("max-output-per-user", max_output_per_user, 65536, 1u << 31,
              "bytes of replies and waiting calls of one user"),
        LIMIT("max-doorbells-per-user", max_doorbells_per_user, 16, 1u << 24,
              "ring doorbells a second that find no work, of one user"),
        LIMIT("handshake-timeout", handshake_timeout_ms, 10, 3600000,
              "milliseconds a new connection has to send HELLO"),
        LIMIT("max-linger", max_linger_ms, 0, 86400000,
              "milliseconds a named port may be kept after its last handle closes"),
        LIMIT_COMPUTED("reserve-fds", reserve_fds, 16, 1u << 30,
                       "descriptors only root and the daemon's user may use",
                       "capacity/16, at least 64"),
        LIMIT_COMPUTED("reserve-connections", reserve_connections, 1, 1u << 20,
                       "connections only root and the daemon's user may use",
                       "max-connections/16, 4 to half"),
        LIMIT("max-output-unprivileged", max_output_unprivileged, 65536, 1u << 31,
              "bytes of replies and waiting calls of all other users together"),
        LIMIT("max-posted-unprivileged", max_posted_unprivileged, 1, 1u << 28,
              "queued posted packets of all other users together"),
        LIMIT("max-staged-unprivileged", max_staged_unprivileged, 1, 1u << 28,
              "items of unfinished multi-part calls of all other users together"),
        LIMIT("max-waits-unprivileged", max_waits_unprivileged, 1, 1u << 26,
              "waiting calls of all other users together"),
};
#undef LIMIT_COMPUTED
#undef LIMIT
const size_t settings_nlimit_options = SN_ARRAY_SIZE(settings_limit_options);

static const char *const level_names[] = {
        [LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

uint32_t *settings_limit_field(struct limits *l, const struct limit_option *o)
{
        return (uint32_t *)((char *)l + o->offset);
}

void settings_init(struct settings *c)
{
        memset(c, 0, sizeof(*c));
        c->log_level = -1;
        c->no_io_uring = -1;
}

int settings_parse_log_level(const char *s)
{
        for (size_t i = 0; i < SN_ARRAY_SIZE(level_names); i++)
                if (level_names[i] && !strcmp(s, level_names[i]))
                        return (int)i;
        return -EINVAL;
}

const char *settings_log_level_name(int level)
{
        return level >= 0 && (size_t)level < SN_ARRAY_SIZE(level_names) && level_names[level]
                       ? level_names[level]
                       : "?";
}

int settings_set_limit(struct settings *c, size_t i, uint64_t value)
{
        const struct limit_option *o = &settings_limit_options[i];

        if (value < o->min || value > o->max)
                return -ERANGE;
        *settings_limit_field(&c->limits, o) = (uint32_t)value;
        c->set |= 1u << i;
        return 0;
}

/* "NAME:LINE" of the first occurrence of "key" (quoted, as a key is written) in the len bytes of
 * text, or "NAME" alone when it is not found as written (a key spelled with JSON escapes). */
static void key_place(char *out, size_t outsz, const char *name, const char *text, size_t len,
                      const char *key)
{
        size_t k = strlen(key);

        for (const char *p = text; p && (size_t)(p - text) < len;) {
                p = memmem(p, len - (size_t)(p - text), key, k);
                if (!p)
                        break;
                if (p > text && p[-1] == '"' && (size_t)(p - text) + k < len && p[k] == '"') {
                        int line = 1;

                        for (const char *q = text; q < p; q++)
                                line += *q == '\n';
                        snprintf(out, outsz, "%s:%d", name, line);
                        return;
                }
                p++;
        }
        snprintf(out, outsz, "%s", name);
}

/* Why jansson refused the text, in our words: its own ("'[' or '{' expected near '\xef'")
 * quote the file's bytes raw and name the parser's grammar, not what to fix. */
static const char *json_error_words(const json_error_t *je)
{
        switch (json_error_code(je)) {
        case json_error_invalid_utf8:
                return "not valid UTF-8 text";
        case json_error_premature_end_of_input:
                return "the text ends inside the JSON object (a closing '}', ']' or '\"' missing)";
        case json_error_end_of_input_expected:
                return "more text after the end of the JSON object";
        case json_error_null_character:
        case json_error_null_byte_in_key:
                return "a NUL byte in the text";
        case json_error_duplicate_key:
                return "a key given twice";
        case json_error_numeric_overflow:
                return "a number too large";
        case json_error_stack_overflow:
                return "nested too deeply";
        case json_error_out_of_memory:
                return "out of memory";
        default:
                return "not valid JSON here (a missing comma, colon or quote, a trailing comma, "
                       "or a value JSON does not have)";
        }
}

/* A key of the file (any UTF-8, control characters too) as a message may show it: printable
 * ASCII and UTF-8 as they are, '"', '\\' and every other byte as \xNN. */
static void key_shown(const char *key, char *out, size_t size)
{
        size_t n = 0;

        for (const unsigned char *k = (const unsigned char *)key; *k && n + 5 < size; k++) {
                if (*k >= 0x20 && *k != 0x7f && *k != '"' && *k != '\\')
                        out[n++] = (char)*k;
                else
                        n += (size_t)snprintf(out + n, size - n, "\\x%02x", *k);
        }
        out[n] = 0;
}

/* What option i accepts, as both sources say it. */
static void expect_limit(char *what, size_t whatsz, size_t i)
{
        snprintf(what, whatsz, "key \"%s\": an integer from %u to %u",
                 settings_limit_options[i].name, settings_limit_options[i].min,
                 settings_limit_options[i].max);
}

/* A decimal number with nothing around it ("", "-1", "0x10", "1 " are not). */
static bool parse_decimal(const char *s, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (!s || *s < '0' || *s > '9')
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end)
                return false;
        *ret = v;
        return true;
}

int settings_take(struct settings *c, const char *key, const json_t *value, const char *arg,
                  char *what, size_t whatsz)
{
        uint64_t v = 0;
        bool number;
        size_t i;

        if (!strcmp(key, "log-level")) {
                const char *s = value ? json_string_value(value) : arg;
                int level = s ? settings_parse_log_level(s) : -EINVAL;

                if (level < 0) {
                        snprintf(what, whatsz, "key \"log-level\": one of \"error\", "
                                 "\"warning\", \"notice\", \"info\", \"debug\"");
                        return -EINVAL;
                }
                c->log_level = level;
                return 0;
        }
        if (!strcmp(key, "no-io-uring")) {
                if (!value || !json_is_boolean(value)) {
                        snprintf(what, whatsz, "key \"no-io-uring\": true or false");
                        return -EINVAL;
                }
                c->no_io_uring = json_is_true(value);
                return 0;
        }
        for (i = 0; i < settings_nlimit_options; i++)
                if (!strcmp(key, settings_limit_options[i].name))
                        break;
        if (i == settings_nlimit_options) {
                char k[256];

                key_shown(key, k, sizeof(k));
                snprintf(what, whatsz, "unknown key \"%s\"", k);
                return -ENOENT;
        }
        if (value) {
                number = json_is_integer(value) && json_integer_value(value) >= 0;
                if (number)
                        v = (uint64_t)json_integer_value(value);
        } else {
                number = parse_decimal(arg, &v);
        }
        if (!number || settings_set_limit(c, i, v) < 0) {
                expect_limit(what, whatsz, i);
                return -EINVAL;
        }
        return 0;
}

int settings_parse(const char *name, const char *text, size_t len, struct settings *ret,
                   char *err, size_t errsz)
{
        struct settings c;
        char at[1024]; /* "PATH:LINE" of a bad key */
        char what[256];
        json_error_t je;
        json_t *doc, *value;
        const char *key;
        int r = 0;

        settings_init(&c);
        /* RFC 8259 lets a parser take a byte-order mark; jansson does not, and its message
         * would quote the three bytes raw.  It is refused, named. */
        if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
                snprintf(err, errsz, "%s:1: the file begins with a byte-order mark (the bytes EF "
                         "BB BF): save it as UTF-8 without one", name);
                return -EINVAL;
        }
        doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!doc) {
                snprintf(err, errsz, "%s:%d: %s (column %d)", name, je.line,
                         json_error_words(&je), je.column);
                return -EINVAL;
        }
        if (!json_is_object(doc)) {
                snprintf(err, errsz, "%s:1: the configuration must be a JSON object", name);
                r = -EINVAL;
                goto out;
        }
        json_object_foreach(doc, key, value) {
                if (settings_take(&c, key, value, NULL, what, sizeof(what)) < 0) {
                        key_place(at, sizeof(at), name, text, len, key);
                        snprintf(err, errsz, "%s: %s", at, what);
                        r = -EINVAL;
                        goto out;
                }
        }
        *ret = c;
out:
        json_decref(doc);
        return r;
}

int settings_read_fd(int fd, const char *name, struct settings *ret, char *err, size_t errsz)
{
        struct stat st;
        char *text;
        size_t len = 0;
        int r;

        if (fstat(fd, &st) < 0) {
                r = -errno;
                snprintf(err, errsz, "%s: %s", name, strerror(errno));
                return r;
        }
        /* A FIFO would block the loop, a device (/dev/zero) never ends, a directory is no
         * text: only a regular file is read. */
        if (!S_ISREG(st.st_mode)) {
                snprintf(err, errsz, "%s: not a regular file", name);
                return -EINVAL;
        }
        if (st.st_size > SETTINGS_FILE_MAX) {
                snprintf(err, errsz, "%s: larger than %u bytes", name, SETTINGS_FILE_MAX);
                return -EFBIG;
        }
        /* Whole and bounded: the text is needed again to name the line of a bad key, and a
         * file that grows while it is read stops at one byte past the cap. */
        text = malloc(SETTINGS_FILE_MAX + 1);
        if (!text) {
                snprintf(err, errsz, "%s: out of memory", name);
                return -ENOMEM;
        }
        while (len < SETTINGS_FILE_MAX + 1) {
                ssize_t n = pread(fd, text + len, SETTINGS_FILE_MAX + 1 - len, (off_t)len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        snprintf(err, errsz, "%s: %s", name, strerror(errno));
                        free(text);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (len > SETTINGS_FILE_MAX) {
                snprintf(err, errsz, "%s: larger than %u bytes", name, SETTINGS_FILE_MAX);
                free(text);
                return -EFBIG;
        }
        text[len] = 0;
        r = settings_parse(name, text, len, ret, err, errsz);
        free(text);
        return r;
}

int settings_load_file(const char *path, bool must_exist, struct settings *ret, char *err,
                       size_t errsz)
{
        int fd, r;

        /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just after). */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT && !must_exist) {
                        settings_init(ret);
                        return 1;
                }
                r = -errno;
                snprintf(err, errsz, "%s: %s", path, strerror(errno));
                return r;
        }
        r = settings_read_fd(fd, path, ret, err, errsz);
        close(fd);
        return r;
}

char *settings_format(const struct settings *s)
{
        json_t *doc = json_object();
        char *text;

        if (!doc)
                return NULL;
        if (s->log_level >= 0)
                json_object_set_new(doc, "log-level",
                                    json_string(settings_log_level_name(s->log_level)));
        if (s->no_io_uring >= 0)
                json_object_set_new(doc, "no-io-uring", json_boolean(s->no_io_uring));
        for (size_t i = 0; i < settings_nlimit_options; i++)
                if (s->set & (1u << i))
                        json_object_set_new(
                                doc, settings_limit_options[i].name,
                                json_integer(*settings_limit_field(
                                        (struct limits *)&s->limits, &settings_limit_options[i])));
        text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        return text;
}

void settings_resolve(const struct settings *cmdline, const struct settings *file, uint64_t capacity,
                    struct limits *ret_limits, int *ret_log_level)
{
        struct limits l = settings_default_limits;
        uint64_t pool;

        for (size_t i = 0; i < settings_nlimit_options; i++) {
                const struct limit_option *o = &settings_limit_options[i];
                const struct settings *from = cmdline->set & (1u << i) ? cmdline
                                            : file->set & (1u << i)  ? file
                                                                     : NULL;

                if (from)
                        *settings_limit_field(&l, o) =
                                *settings_limit_field((struct limits *)&from->limits, o);
        }
        /* The reserve: descriptors and connections that users other than root and the
         * daemon's own are never given (conn.c checks the pool of all of them together). */
        if (!l.reserve_fds)
                l.reserve_fds = (uint32_t)SN_MIN(SN_MAX(capacity / 16, (uint64_t)64),
                                                 (uint64_t)(1u << 30));
        if (!l.reserve_connections)
                l.reserve_connections =
                        SN_MIN(SN_MAX(l.max_connections / 16, 4u), l.max_connections / 2);
        /* Per-user defaults from the pool left by the reserve: one user's sockets, connections
         * and ports together stay under three quarters of it, so other users find some too;
         * the pool itself bounds all of them together. */
        pool = limits_fd_pool(&l, capacity);
        if (!l.max_sockets_per_user)
                l.max_sockets_per_user = (uint32_t)SN_MIN(SN_MAX(pool / 2, (uint64_t)1),
                                                          (uint64_t)(1u << 30));
        if (!l.max_connections_per_user)
                l.max_connections_per_user =
                        (uint32_t)SN_MAX(SN_MIN(pool / 8, (uint64_t)1024), (uint64_t)1);
        if (!l.max_ports_per_user)
                l.max_ports_per_user =
                        (uint32_t)SN_MAX(SN_MIN(pool / 8, (uint64_t)1024), (uint64_t)1);
        *ret_limits = l;
        *ret_log_level = cmdline->log_level >= 0 ? cmdline->log_level
                         : file->log_level >= 0  ? file->log_level
                                                 : LOG_INFO;
}

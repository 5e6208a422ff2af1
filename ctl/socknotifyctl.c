/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotifyctl - look into a running socknotifyd and steer it.
 *
 * Every verb is one or more requests on an ordinary client connection (STATUS, CONTROL; see
 * PROTOCOL.md): the daemon decides what this user may see and do.  Output is a table for
 * people (sizes and rates humanised, colour only on a terminal), printed by libsmartcols as
 * lsblk's are (-o, --raw, --noheadings), or, with --json, the daemon's documented JSON for
 * programs, passed on as it is.  Exit status: 0 done, 1 the daemon refused or failed the
 * request, 2 bad usage, 3 no daemon reachable.
 *
 * What clients choose (command names, port names, socket paths: any bytes) reaches the
 * operator's terminal only through shown(), which escapes every control character, so that no
 * client can send escape sequences to root's terminal; --json output is ASCII (non-ASCII
 * characters as \uXXXX), for the same reason.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libsmartcols.h>

#include "common/macro.h"
#include "ctl/escape.h"
#include "ctl/monitor.h"
#include "socknotify.h"

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_NODAEMON = 3 };

static bool opt_json, opt_color;
/* How JSON is printed: indented, ASCII only, and reals with at most 15 digits (the daemon
 * rounds its times to the millisecond; 17 digits would show that double's binary noise). */
#define JSON_FLAGS (JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15))
static const char *opt_socket;

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: socknotifyctl [OPTION]... VERB [ARG]...\n"
                "Look into a running socknotifyd and steer it.\n"
                "\n"
                "Verbs:\n"
                "  status                       version, uptime, limits, totals, rates, usage\n"
                "  clients                      connections: pid, user, command, what they hold\n"
                "  ports                        completion ports and what they hold\n"
                "  registrations [--port=ID] [--client=PID]\n"
                "                               registered sockets: kind, addresses, state\n"
                "  log-level LEVEL              error, warning, notice, info or debug\n"
                "  reload                       read the configuration file again\n"
                "  check-config                 have the daemon check its configuration file\n"
                "                               (its own path and parser), applying nothing\n"
                "  metrics [--format=FORMAT]    counts for scrapers: openmetrics (default) or\n"
                "                               prometheus (text format 0.0.4)\n"
                "  reexec                       re-execute the daemon in place (upgrade)\n"
                "  watch [--interval=MS] [--count=N]\n"
                "                               a live view, one line per port\n"
                "  monitor [--client=PID] [--port=ID]\n"
                "                               requests and replies as they pass, decoded\n"
                "\n"
                "Options:\n"
                "  -s, --socket=PATH            the daemon's socket (default: $SOCKNOTIFY_SOCKET,\n"
                "                               else the per-user or the system socket)\n"
                "  -j, --json                   JSON output for programs (the daemon's documents)\n"
                "  -o, --output=LIST            the columns to print, comma-separated (+LIST:\n"
                "                               added to the default ones); see the manual page\n"
                "  -r, --raw                    raw table: one space between columns, no padding\n"
                "  -n, --noheadings             no column headings\n"
                "      --no-legend              no headings, nor watch's summary line\n"
                "      --color=WHEN             auto (default), always or never\n"
                "  -h, --help                   show this help and exit\n"
                "  -V, --version                show the version and exit\n"
                "\n"
                "Exit status: 0 done, 1 refused or failed by the daemon, 2 bad usage,\n"
                "3 no daemon reachable.\n");
}

/* A usage error: the reason, then the pointer to --help that systemd's and util-linux's tools
 * print (never the whole usage). */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
        va_list ap;

        if (fmt) {
                fputs("socknotifyctl: ", stderr);
                va_start(ap, fmt);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                fputc('\n', stderr);
        }
        fputs("Try 'socknotifyctl --help' for more information.\n", stderr);
        return EXIT_USAGE;
}

/* ---- formatting ------------------------------------------------------------------------- */

static void human_size(double v, char *out, size_t size)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        int u = 0;

        while (v >= 1024 && u < 4) {
                v /= 1024;
                u++;
        }
        snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void human_count(double v, char *out, size_t size)
{
        if (v >= 1e9)
                snprintf(out, size, "%.1fG", v / 1e9);
        else if (v >= 1e6)
                snprintf(out, size, "%.1fM", v / 1e6);
        else if (v >= 1e4)
                snprintf(out, size, "%.1fk", v / 1e3);
        else
                snprintf(out, size, "%.0f", v);
}

static void human_age(double s, char *out, size_t size)
{
        long t = (long)s;

        if (t >= 86400)
                snprintf(out, size, "%ldd%02ldh", t / 86400, t % 86400 / 3600);
        else if (t >= 3600)
                snprintf(out, size, "%ldh%02ldm", t / 3600, t % 3600 / 60);
        else if (t >= 60)
                snprintf(out, size, "%ldm%02lds", t / 60, t % 60);
        else
                snprintf(out, size, "%lds", t);
}

static char *xstrdup(const char *s)
{
        char *d = strdup(s);

        if (!d) {
                perror("socknotifyctl");
                exit(EXIT_REFUSED);
        }
        return d;
}

/* ctl_escape() of client-chosen bytes; out of memory ends the tool. */
static char *escape_bytes(const uint8_t *b, size_t n)
{
        char *out = ctl_escape(b, n, NULL);

        if (!out) {
                perror("socknotifyctl");
                exit(EXIT_REFUSED);
        }
        return out;
}

/* A client-chosen value of the daemon's JSON as printable text (malloc'd): a string's bytes,
 * or the byte values of an array (the form of names that are not valid UTF-8, see
 * socknotifyctl(1)), escaped by escape_bytes(); missing for null or an absent key. */
static char *shown(json_t *v, const char *missing)
{
        uint8_t *b;
        char *out;
        size_t i;
        json_t *x;

        if (json_is_string(v))
                return escape_bytes((const uint8_t *)json_string_value(v), json_string_length(v));
        if (!json_is_array(v))
                return escape_bytes((const uint8_t *)missing, strlen(missing));
        b = malloc(json_array_size(v) + 1);
        if (!b) {
                perror("socknotifyctl");
                exit(EXIT_REFUSED);
        }
        json_array_foreach(v, i, x)
                b[i] = (uint8_t)json_integer_value(x);
        out = escape_bytes(b, json_array_size(v));
        free(b);
        return out;
}

/* ---- tables ------------------------------------------------------------------------------ */

/* A column of a table: its name (the heading, and the word -o takes), whether only -o shows it,
 * and how libsmartcols lays it out (SCOLS_FL_RIGHT for numbers, SCOLS_FL_TRUNC for the text
 * that may be cut when the terminal is too narrow; whint, the share of the width it asks).
 * Every text column may be cut on a narrow terminal, the long ones (COL_CUT) first: a column
 * that may not be cut makes libsmartcols continue the row on the next line instead. */
struct column {
        const char *name;
        bool extra;
        double whint;
        int flags;
};

#define COL_NUM(n) { n, false, 1, SCOLS_FL_RIGHT }
#define COL_TEXT(n) { n, false, 0.1, SCOLS_FL_TRUNC }
#define COL_CUT(n) { n, false, 0.2, SCOLS_FL_TRUNC }
#define MAXCOLS 16

/* A table: rows of cells, one per column, printed by libsmartcols with the columns chosen. */
struct table {
        const struct column *cols;
        int ncols;
        char **cells; /* nrows * ncols */
        size_t nrows, cap;
};

/* The columns -o chose (NULL: the defaults), and the table options. */
static const char *opt_output;
static bool opt_raw, opt_noheadings, opt_nolegend;

/* The index of the column called name (n bytes, case ignored) in cols, or -1. */
static int column_index(const struct column *cols, int ncols, const char *name, size_t n)
{
        for (int i = 0; i < ncols; i++)
                if (strlen(cols[i].name) == n && !strncasecmp(cols[i].name, name, n))
                        return i;
        return -1;
}

/* Which columns to print, in order, into pick: the defaults, or -o's list ("+LIST" adds to
 * the defaults, as in lsblk).  Returns their number, or -1 (with a message) when the list
 * names a column the table does not have or names too many. */
static int columns_chosen(const struct column *cols, int ncols, int pick[MAXCOLS])
{
        const char *s = opt_output;
        int n = 0;

        if (!s || *s == '+') {
                for (int i = 0; i < ncols; i++)
                        if (!cols[i].extra)
                                pick[n++] = i;
                if (!s)
                        return n;
                s++;
        }
        while (*s) {
                size_t len = strcspn(s, ",");
                int i = column_index(cols, ncols, s, len);

                if (i < 0 || n == MAXCOLS) {
                        fprintf(stderr, "socknotifyctl: %s '%.*s'; the columns are:",
                                i < 0 ? "unknown column" : "too many columns at", (int)len, s);
                        for (int k = 0; k < ncols; k++)
                                fprintf(stderr, "%s%s", k ? "," : " ", cols[k].name);
                        fputc('\n', stderr);
                        return -1;
                }
                pick[n++] = i;
                s += len + (s[len] == ',');
        }
        if (n == 0) {
                fprintf(stderr, "socknotifyctl: -o names no column\n");
                return -1;
        }
        return n;
}

static void table_add(struct table *t, ...)
{
        va_list ap;

        if (t->nrows == t->cap) {
                t->cap = t->cap ? t->cap * 2 : 16;
                t->cells = realloc(t->cells, t->cap * (size_t)t->ncols * sizeof(char *));
                if (!t->cells) {
                        perror("socknotifyctl");
                        exit(EXIT_REFUSED);
                }
        }
        va_start(ap, t);
        for (int i = 0; i < t->ncols; i++)
                t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = xstrdup(va_arg(ap, const char *));
        va_end(ap);
        t->nrows++;
}

/* Prints the table through libsmartcols and empties it.  Every cell is already escaped
 * (shown(), escape_bytes()): the backslash is marked safe, so that libsmartcols, which would
 * write the backslash of "\x" as \x5c, leaves the escapes as they are; it still encodes what
 * the locale cannot print.  Width: on a terminal the table fits its width, text columns cut
 * first; into a pipe nothing is cut. */
static void table_print(struct table *t)
{
        struct libscols_table *tb = scols_new_table();
        int pick[MAXCOLS], n = columns_chosen(t->cols, t->ncols, pick);

        if (!tb || n < 0) {
                if (tb)
                        perror("socknotifyctl");
                exit(n < 0 ? EXIT_USAGE : EXIT_REFUSED);
        }
        scols_table_enable_raw(tb, opt_raw);
        scols_table_enable_noheadings(tb, opt_noheadings || opt_nolegend);
        scols_table_enable_colors(tb, opt_color);
        for (int i = 0; i < n; i++) {
                const struct column *col = &t->cols[pick[i]];
                struct libscols_column *cl =
                        scols_table_new_column(tb, col->name, col->whint, col->flags);

                if (!cl) {
                        perror("socknotifyctl");
                        exit(EXIT_REFUSED);
                }
                scols_column_set_safechars(cl, "\\");
                if (opt_color)
                        scols_cell_set_color(scols_column_get_header(cl), "bold");
        }
        for (size_t r = 0; r < t->nrows; r++) {
                struct libscols_line *ln = scols_table_new_line(tb, NULL);
                char **row = t->cells + r * (size_t)t->ncols;

                for (int i = 0; ln && i < n; i++)
                        if (scols_line_set_data(ln, (size_t)i, row[pick[i]]) < 0)
                                ln = NULL;
                if (!ln) {
                        perror("socknotifyctl");
                        exit(EXIT_REFUSED);
                }
        }
        scols_print_table(tb);
        scols_unref_table(tb);
        for (size_t k = 0; k < t->nrows * (size_t)t->ncols; k++)
                free(t->cells[k]);
        free(t->cells);
        t->cells = NULL;
        t->nrows = t->cap = 0;
}

/* An integer of the daemon's JSON as text; "-" when it is null or absent. */
static const char *num(json_t *o, const char *key, char *buf, size_t size)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_integer(v))
                return "-";
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        return buf;
}

/* A completion key as the table shows it (malloc'd): unsigned hex, 0x and its digits.  The
 * daemon sends the string "0x..." (PROTOCOL.md, CONTROL), shown escaped as any text it sends;
 * a number (older daemons, which sent keys above 2^63 negative) is read back as its 64 bits. */
static char *key_text(json_t *v)
{
        char buf[24];

        if (!json_is_integer(v))
                return shown(v, "-");
        snprintf(buf, sizeof(buf), "0x%" PRIx64, (uint64_t)json_integer_value(v));
        return xstrdup(buf);
}

/* The user name of uid (malloc'd, escaped: a name service may hold any bytes), or its number
 * when the user database has none. */
static char *user_name(json_t *uid)
{
        struct passwd pw, *found = NULL;
        char buf[4096], num_buf[24];

        if (!json_is_integer(uid))
                return xstrdup("-");
        if (json_integer_value(uid) >= 0 && json_integer_value(uid) < UINT32_MAX &&
            getpwuid_r((uid_t)json_integer_value(uid), &pw, buf, sizeof(buf), &found) == 0 &&
            found)
                return escape_bytes((const uint8_t *)found->pw_name, strlen(found->pw_name));
        snprintf(num_buf, sizeof(num_buf), "%lld", (long long)json_integer_value(uid));
        return xstrdup(num_buf);
}

/* ---- talking to the daemon -------------------------------------------------------------- */

static sn_conn_t *connect_daemon(void)
{
        const char *why;
        sn_conn_t *c;
        int r;

        r = sn_conn_open(opt_socket, &c);
        if (r == 0)
                return c;
        /* The library's account names every path tried with its error, and the socknotify
         * group when one refused us; a daemon that is not running is the wrong guess then. */
        why = sn_conn_open_error();
        if (*why)
                fprintf(stderr, "socknotifyctl: %s.\n", why);
        else
                fprintf(stderr, "socknotifyctl: cannot connect to socknotifyd: %s.\n",
                        strerrordesc_np(-r) ? strerrordesc_np(-r) : "unknown error");
        if (r != -EACCES && r != -EPERM)
                fprintf(stderr, "  -s PATH chooses another socket.\n");
        exit(EXIT_NODAEMON);
}

/* What a failed request's errno says: sn_strerror()'s words, but for the two codes whose words
 * there are about other calls (a registration, the library's open) the system's own, and for a
 * limit the daemon's account of which one and its value (sn_conn_error_detail()). */
static const char *error_text(sn_conn_t *c, int r)
{
        const char *detail = r == -EDQUOT ? sn_conn_error_detail(c) : NULL;

        if (detail)
                return detail;
        if (r == -ENOENT || r == -EACCES)
                return strerrordesc_np(-r);
        return sn_strerror(r);
}

static json_t *parse(const char *text)
{
        json_error_t je;
        json_t *doc = json_loads(text ? text : "", 0, &je);

        if (!doc) {
                fprintf(stderr, "socknotifyctl: the daemon's answer is not JSON: %s\n", je.text);
                exit(EXIT_REFUSED);
        }
        return doc;
}

/* A request the daemon refused or failed (r, a negative errno; why, its reason or NULL): the
 * reason on stderr and, with --json, as a document on stdout, {"verb", "error", "errno"}, so
 * that a program reading stdout learns it failed and why.  Exits with EXIT_REFUSED. */
static _Noreturn void refused(sn_conn_t *c, const char *verb, int r, const char *why)
{
        fprintf(stderr, "socknotifyctl: %s: %s\n", verb, why ? why : error_text(c, r));
        if (r == -EPERM)
                fprintf(stderr, "  Run it as root or as the user the daemon runs as.\n");
        if (opt_json) {
                const char *name = strerrorname_np(-r);

                json_t *doc = json_pack("{s:s, s:s, s:s}", "verb", verb, "error",
                                        why ? why : error_text(c, r), "errno", name ? name : "?");

                json_dumpf(doc, stdout, JSON_FLAGS);
                putchar('\n');
                json_decref(doc);
        }
        if (c)
                sn_conn_close(c);
        exit(EXIT_REFUSED);
}

static json_t *status_doc(sn_conn_t *c)
{
        char *text = NULL;
        int r = sn_conn_status(c, &text);
        json_t *doc;

        if (r < 0)
                refused(c, "status", r, NULL);
        doc = parse(text);
        free(text);
        return doc;
}

/* One CONTROL request; exits with the daemon's reason on a refusal.  The reason is the
 * daemon's words when it gave some (an errno's description would be about other calls: EPROTO
 * is "not a socknotifyd" to the library), else the errno's. */
static json_t *control(sn_conn_t *c, json_t *req)
{
        char *text = json_dumps(req, JSON_COMPACT), *ans = NULL;
        int r = sn_conn_control(c, text, &ans);
        json_t *doc;

        free(text);
        if (r < 0) {
                json_t *why = ans ? json_loads(ans, 0, NULL) : NULL;
                char *s = shown(json_object_get(why, "error"), ""), reason[1024], verb[64];

                /* Copied: refused() does not return, and what is freed here is not leaked. */
                snprintf(reason, sizeof(reason), "%s", s);
                snprintf(verb, sizeof(verb), "%s",
                         json_string_value(json_object_get(req, "verb")) ?: "control");
                free(s);
                json_decref(why);
                free(ans);
                refused(c, verb, r, *reason ? reason : NULL);
        }
        doc = parse(ans);
        free(ans);
        return doc;
}

/* Every page of a listing, as one array. */
static json_t *list_all(sn_conn_t *c, const char *verb, json_int_t port, json_int_t pid)
{
        json_t *all = json_array();
        json_int_t offset = 0;

        for (;;) {
                json_t *req = json_pack("{s:s, s:I}", "verb", verb, "offset", offset), *ans;

                if (port)
                        json_object_set_new(req, "port", json_integer(port));
                if (pid)
                        json_object_set_new(req, "pid", json_integer(pid));
                ans = control(c, req);
                json_decref(req);
                json_array_extend(all, json_object_get(ans, "items"));
                if (!json_is_integer(json_object_get(ans, "next"))) {
                        json_decref(ans);
                        return all;
                }
                offset = json_integer_value(json_object_get(ans, "next"));
                json_decref(ans);
        }
}

/* Prints doc and drops it. */
static void print_json(json_t *doc)
{
        json_dumpf(doc, stdout, JSON_FLAGS);
        putchar('\n');
        json_decref(doc);
}

/* ---- verbs -------------------------------------------------------------------------------- */

static const char *const usage_keys[][2] = {
        { "connections", "max_connections_per_user" }, { "ports", "max_ports_per_user" },
        { "sockets", "max_sockets_per_user" },         { "waits", "max_waits_per_user" },
        { "posted", "max_posted_per_user" },           { "staged", "max_staged_per_user" },
};

static const struct column usage_cols[] = {
        COL_NUM("UID"),   COL_TEXT("USER"),   COL_NUM("CONNECTIONS"), COL_NUM("PORTS"),
        COL_NUM("SOCKETS"), COL_NUM("WAITS"), COL_NUM("POSTED"),      COL_NUM("STAGED"),
        COL_NUM("OUTPUT"), COL_NUM("REFUSED"),
};

static void print_usage_table(json_t *limits, json_t *users)
{
        struct table t = { .cols = usage_cols, .ncols = (int)SN_ARRAY_SIZE(usage_cols) };
        size_t i;
        json_t *u;

        json_array_foreach(users, i, u) {
                char cell[6][48], out[24], lim[24], total[48], uid[24], refused[24];
                char *user = user_name(json_object_get(u, "uid"));

                for (size_t k = 0; k < 6; k++)
                        snprintf(cell[k], sizeof(cell[k]), "%lld/%lld",
                                 (long long)json_integer_value(json_object_get(u, usage_keys[k][0])),
                                 (long long)json_integer_value(
                                         json_object_get(limits, usage_keys[k][1])));
                human_size((double)json_integer_value(json_object_get(u, "output_bytes")), out,
                           sizeof(out));
                human_size((double)json_integer_value(json_object_get(limits,
                                                                      "max_output_per_user")),
                           lim, sizeof(lim));
                snprintf(total, sizeof(total), "%s/%s", out, lim);
                table_add(&t, num(u, "uid", uid, sizeof(uid)), user, cell[0], cell[1], cell[2],
                          cell[3], cell[4], cell[5], total, num(u, "refused", refused,
                                                                sizeof(refused)));
                free(user);
        }
        table_print(&t);
}

/* The reserve for root and the daemon's user, and what the other users hold of the rest. */
static void print_reserve(json_t *r)
{
        json_t *pool = json_object_get(r, "pool"), *used = json_object_get(r, "unprivileged");
        char out[24], used_out[24];

        if (!r)
                return;
        human_size((double)json_integer_value(json_object_get(pool, "output_bytes")), out,
                   sizeof(out));
        printf("reserve: %lld descriptor(s) (%lld the daemon's own) and %lld connection(s) for "
               "root and uid %lld\n",
               (long long)json_integer_value(json_object_get(r, "fds")),
               (long long)json_integer_value(json_object_get(r, "own_fds")),
               (long long)json_integer_value(json_object_get(r, "connections")),
               (long long)json_integer_value(json_object_get(r, "uid")));
        if (!used) {
                printf("other users together: at most %lld descriptor(s), %lld connection(s), "
                       "%s of output\n",
                       (long long)json_integer_value(json_object_get(pool, "fds")),
                       (long long)json_integer_value(json_object_get(pool, "connections")), out);
                if (json_object_get(pool, "posted"))
                        printf("other users together: at most %lld posted packet(s), %lld staged "
                               "item(s), %lld waiting call(s)\n",
                               (long long)json_integer_value(json_object_get(pool, "posted")),
                               (long long)json_integer_value(json_object_get(pool, "staged")),
                               (long long)json_integer_value(json_object_get(pool, "waits")));
                return;
        }
        human_size((double)json_integer_value(json_object_get(used, "output_bytes")), used_out,
                   sizeof(used_out));
        printf("other users together hold %lld of %lld descriptor(s), %lld of %lld "
               "connection(s), %s of %s of output\n",
               (long long)json_integer_value(json_object_get(used, "fds")),
               (long long)json_integer_value(json_object_get(pool, "fds")),
               (long long)json_integer_value(json_object_get(used, "connections")),
               (long long)json_integer_value(json_object_get(pool, "connections")), used_out,
               out);
        if (json_object_get(pool, "posted"))
                printf("other users together hold %lld of %lld posted packet(s), %lld of %lld "
                       "staged item(s), %lld of %lld waiting call(s)\n",
                       (long long)json_integer_value(json_object_get(used, "posted")),
                       (long long)json_integer_value(json_object_get(pool, "posted")),
                       (long long)json_integer_value(json_object_get(used, "staged")),
                       (long long)json_integer_value(json_object_get(pool, "staged")),
                       (long long)json_integer_value(json_object_get(used, "waits")),
                       (long long)json_integer_value(json_object_get(pool, "waits")));
}

/* How the daemon makes its epoll_ctl calls: batched through io_uring, or one by one and why. */
static void print_epoll_ctl(json_t *o)
{
        const char *path = json_string_value(json_object_get(o, "path"));
        const char *why = json_string_value(json_object_get(o, "plain_reason"));

        static const char *const known[] = { "not-built", "disabled", "refused", "unsupported",
                                             "failed" };
        const char *shown_why = "?";

        if (!path)
                return; /* a daemon older than this field */
        if (!strcmp(path, "io_uring")) {
                printf("epoll_ctl: batched through io_uring\n");
                return;
        }
        /* Only words this tool knows are printed: the document is the daemon's to write. */
        for (size_t i = 0; why && i < sizeof(known) / sizeof(known[0]); i++)
                if (!strcmp(why, known[i]))
                        shown_why = known[i];
        printf("epoll_ctl: one call at a time (io_uring %s)\n", shown_why);
}

/* A Unix time as the tables show it: UTC, to the second. */
static void utc_text(json_int_t t, char *out, size_t size)
{
        time_t tt = (time_t)t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%d %H:%M:%S UTC", &tm))
                snprintf(out, size, "%lld", (long long)t);
}

/* How long this image has run, and since when the daemon has served its clients: a re-exec
 * (an upgrade) and a restore (a restart or a crash, through the descriptor store) each start a
 * new image and keep the clients. */
static void print_lifetime(json_t *doc, const char *age)
{
        json_t *since = json_object_get(doc, "serving_since");
        long long reexecs = (long long)json_integer_value(json_object_get(doc, "reexecs"));
        char when[64], span[32];

        if (!json_is_integer(since) || !json_is_integer(json_object_get(doc, "restores"))) {
                /* A daemon older than these fields counted both as re-executions. */
                printf("up %s, %lld re-execution(s) or restore(s)\n", age, reexecs);
                return;
        }
        utc_text(json_integer_value(since), when, sizeof(when));
        human_age((double)(time(NULL) - (time_t)json_integer_value(since)), span, sizeof(span));
        printf("this image up %s; serving clients since %s (%s), through %lld re-exec(s) and "
               "%lld restore(s)\n",
               age, when, span, reexecs,
               (long long)json_integer_value(json_object_get(doc, "restores")));
}

/* Which configuration the daemon runs on, and the last reload. */
static void print_configuration(json_t *conf)
{
        static const char *const states[][2] = {
                { "file", "read from the file" },
                { "absent", "the file is absent: the defaults and the options" },
                { "last-good", "the file was bad at start: the last good settings" },
                { "defaults", "the file was bad at start: the defaults and the options" },
                { "none", "no file: the defaults and the options" },
        };
        const char *state = json_string_value(json_object_get(conf, "state"));
        json_t *reload = json_object_get(conf, "last_reload");
        const char *said = "?";
        char *path, when[64];

        if (!conf)
                return; /* a daemon older than this field */
        for (size_t i = 0; state && i < SN_ARRAY_SIZE(states); i++)
                if (!strcmp(state, states[i][0]))
                        said = states[i][1];
        path = shown(json_object_get(conf, "path"), "none");
        printf("configuration %s: %s", path, said);
        if (json_is_integer(json_object_get(conf, "read_at"))) {
                utc_text(json_integer_value(json_object_get(conf, "read_at")), when,
                         sizeof(when));
                printf(", read %s", when);
        }
        putchar('\n');
        free(path);
        if (json_is_object(reload)) {
                const char *result = json_string_value(json_object_get(reload, "result"));
                char *err = shown(json_object_get(reload, "error"), "");

                utc_text(json_integer_value(json_object_get(reload, "at")), when, sizeof(when));
                if (result && !strcmp(result, "ok"))
                        printf("last reload %s: ok\n", when);
                else
                        printf("last reload %s: failed, running settings kept: %s\n", when, err);
                free(err);
        }
}

static int verb_status(sn_conn_t *c)
{
        json_t *doc = status_doc(c), *limits = json_object_get(doc, "limits");
        json_t *counters = json_object_get(doc, "counters"), *users;
        json_t *epctl = json_object_get(doc, "epoll_ctl");
        double up = json_real_value(json_object_get(doc, "uptime_seconds"));
        char age[32], a[32], b[32], *sock;
        const char *key;
        json_t *v;

        if (opt_json) {
                print_json(doc);
                return 0;
        }
        human_age(up, age, sizeof(age));
        printf("socknotifyd %s (protocol %lld), pid %lld\n",
               json_string_value(json_object_get(doc, "version")),
               (long long)json_integer_value(json_object_get(doc, "protocol")),
               (long long)json_integer_value(json_object_get(doc, "pid")));
        print_lifetime(doc, age);
        print_configuration(json_object_get(doc, "configuration"));
        sock = shown(json_object_get(doc, "socket"), "-");
        printf("socket %s, descriptor capacity %lld\n", sock,
               (long long)json_integer_value(json_object_get(doc, "fd_capacity")));
        free(sock);
        print_reserve(json_object_get(doc, "reserve"));
        printf("%s: %lld connection(s), %lld port(s), %lld registration(s), %lld waiting "
               "call(s)\n",
               counters ? "daemon" : "yours",
               (long long)json_integer_value(json_object_get(doc, "connections")),
               (long long)json_integer_value(json_object_get(doc, "ports")),
               (long long)json_integer_value(json_object_get(doc, "registrations")),
               (long long)json_integer_value(json_object_get(doc, "waiters")));
        print_epoll_ctl(epctl);
        if (counters) {
                static const struct column cols[] = { COL_TEXT("TOTAL"), COL_NUM("COUNT"),
                                                      COL_NUM("RATE") };
                struct table t = { .cols = cols, .ncols = (int)SN_ARRAY_SIZE(cols) };
                /* The epoll_ctl counts (an older daemon has none) go with the others. */
                static const char *const epctl_rows[][2] = {
                        { "batches", "epoll_ctl_batches" },
                        { "operations", "epoll_ctl_batched" },
                        { "plain_operations", "epoll_ctl_plain" },
                        { "fallbacks", "epoll_ctl_fallbacks" },
                };

                putchar('\n');
                json_object_foreach(counters, key, v) {
                        char rate[40], *name = escape_bytes((const uint8_t *)key, strlen(key));

                        human_count((double)json_integer_value(v), a, sizeof(a));
                        human_count(up > 0 ? (double)json_integer_value(v) / up : 0, b,
                                    sizeof(b));
                        snprintf(rate, sizeof(rate), "%s/s", b);
                        table_add(&t, name, a, rate);
                        free(name);
                }
                for (size_t i = 0; i < sizeof(epctl_rows) / sizeof(epctl_rows[0]); i++) {
                        char rate[40];

                        v = json_object_get(epctl, epctl_rows[i][0]);
                        if (!json_is_integer(v))
                                continue;
                        human_count((double)json_integer_value(v), a, sizeof(a));
                        human_count(up > 0 ? (double)json_integer_value(v) / up : 0, b,
                                    sizeof(b));
                        snprintf(rate, sizeof(rate), "%s/s", b);
                        table_add(&t, epctl_rows[i][1], a, rate);
                }
                table_print(&t);
                json_t *errs = json_object_get(doc, "errors");
                const char *kind;
                json_t *byname;

                /* The names are the daemon's words: escaped like all it sends. */
                json_object_foreach(errs, kind, byname) {
                        char *k = escape_bytes((const uint8_t *)kind, strlen(kind));

                        json_object_foreach(byname, key, v) {
                                char *e = escape_bytes((const uint8_t *)key, strlen(key));

                                printf("errors (%s): %s %lld\n", k, e,
                                       (long long)json_integer_value(v));
                                free(e);
                        }
                        free(k);
                }
        }
        putchar('\n');
        {
                static const struct column cols[] = { COL_TEXT("LIMIT"), COL_NUM("VALUE") };
                struct table t = { .cols = cols, .ncols = (int)SN_ARRAY_SIZE(cols) };

                json_object_foreach(limits, key, v) {
                        char *name = escape_bytes((const uint8_t *)key, strlen(key));

                        table_add(&t, name, num(limits, key, a, sizeof(a)));
                        free(name);
                }
                table_print(&t);
        }
        putchar('\n');
        users = json_object_get(doc, "users");
        if (users) {
                print_usage_table(limits, users);
        } else {
                json_t *one = json_array();

                json_array_append(one, json_object_get(doc, "user"));
                print_usage_table(limits, one);
                json_decref(one);
        }
        json_decref(doc);
        return 0;
}

/* The columns of each listing, in their default order; extra ones only when -o names them. */
static const struct column clients_cols[] = {
        COL_NUM("PID"),   COL_NUM("UID"),    COL_TEXT("USER"),  COL_CUT("COMMAND"),
        COL_NUM("PORTS"), COL_NUM("REGISTRATIONS"), COL_NUM("WAITS"), COL_NUM("QUEUED"),
        COL_NUM("AGE"),   COL_NUM("ID"),
        { "GID", true, 1, SCOLS_FL_RIGHT }, { "TRANSPORT", true, 0.1, 0 },
        { "MAX-MESSAGE", true, 1, SCOLS_FL_RIGHT }, { "MAX-FDS", true, 1, SCOLS_FL_RIGHT },
};

static const struct column ports_cols[] = {
        COL_NUM("ID"),      COL_CUT("NAME"),     COL_NUM("UID"),   COL_TEXT("USER"),
        COL_NUM("HANDLES"), COL_NUM("CONCURRENCY"), COL_NUM("RUNNING"), COL_NUM("REGISTRATIONS"),
        COL_NUM("QUEUED"),  COL_NUM("POSTED"),   COL_NUM("WAITERS"), COL_CUT("LINGER"),
        { "BLOCKED", true, 1, SCOLS_FL_RIGHT },
};

static const struct column registrations_cols[] = {
        COL_NUM("PORT"),   COL_NUM("KEY"),     COL_NUM("PID"),     COL_TEXT("KIND"),
        COL_CUT("LOCAL"),  COL_CUT("PEER"),    COL_TEXT("FILTER"), COL_TEXT("TRIGGER"),
        COL_TEXT("STATE"), COL_TEXT("QUEUED"),
};

static int verb_clients(sn_conn_t *c)
{
        json_t *items = list_all(c, "clients", 0, 0), *it;
        struct table t = { .cols = clients_cols, .ncols = (int)SN_ARRAY_SIZE(clients_cols) };
        size_t i;

        if (opt_json) {
                print_json(json_pack("{s:o}", "items", items));
                return 0;
        }
        json_array_foreach(items, i, it) {
                char pid[24], uid[24], gid[24], ports[24], regs[24], waits[24], q[24], age[24];
                char id[24], maxmsg[24], maxfds[24];
                char *command = shown(json_object_get(it, "command"), "-");
                char *user = user_name(json_object_get(it, "uid"));
                char *transport = shown(json_object_get(it, "transport"), "-");

                human_size((double)json_integer_value(json_object_get(it, "queued_bytes")), q,
                           sizeof(q));
                human_age(json_real_value(json_object_get(it, "age_seconds")), age, sizeof(age));
                table_add(&t, num(it, "pid", pid, sizeof(pid)), num(it, "uid", uid, sizeof(uid)),
                          user, command, num(it, "ports", ports, sizeof(ports)),
                          num(it, "registrations", regs, sizeof(regs)),
                          num(it, "waits", waits, sizeof(waits)), q, age,
                          num(it, "id", id, sizeof(id)), num(it, "gid", gid, sizeof(gid)),
                          transport, num(it, "max_message", maxmsg, sizeof(maxmsg)),
                          num(it, "max_fds", maxfds, sizeof(maxfds)));
                free(command);
                free(user);
                free(transport);
        }
        table_print(&t);
        json_decref(items);
        return 0;
}

static void ports_table(json_t *items)
{
        struct table t = { .cols = ports_cols, .ncols = (int)SN_ARRAY_SIZE(ports_cols) };
        size_t i;
        json_t *it;

        json_array_foreach(items, i, it) {
                char f[10][24], linger[80] = "-";
                char *name = shown(json_object_get(it, "name"), "-");
                char *user = user_name(json_object_get(it, "uid"));
                json_int_t ms = json_integer_value(json_object_get(it, "linger_ms"));
                json_int_t left = json_integer_value(json_object_get(it, "linger_left_ms"));
                json_int_t own = json_integer_value(json_object_get(it, "ownerless"));

                /* The linger time; while it lingers, what is left and what it keeps. */
                if (left)
                        snprintf(linger, sizeof(linger), "%lldms, %lldms left, %lld ownerless",
                                 (long long)ms, (long long)left, (long long)own);
                else if (ms)
                        snprintf(linger, sizeof(linger), own ? "%lldms, %lld ownerless" : "%lldms",
                                 (long long)ms, (long long)own);
                table_add(&t, num(it, "id", f[0], 24), name, num(it, "uid", f[1], 24), user,
                          num(it, "handles", f[2], 24), num(it, "concurrency", f[3], 24),
                          num(it, "running", f[4], 24), num(it, "registrations", f[5], 24),
                          num(it, "queued", f[6], 24), num(it, "posted", f[7], 24),
                          num(it, "waiters", f[8], 24), linger, num(it, "blocked", f[9], 24));
                free(name);
                free(user);
        }
        table_print(&t);
}

static int verb_ports(sn_conn_t *c)
{
        json_t *items = list_all(c, "ports", 0, 0);

        if (opt_json) {
                print_json(json_pack("{s:o}", "items", items));
                return 0;
        }
        ports_table(items);
        json_decref(items);
        return 0;
}

/* The names of an array of names (the daemon's filter and trigger), comma-separated and
 * escaped (malloc'd); "-" for none. */
static char *names_text(json_t *names)
{
        char *out = NULL;
        size_t i, len;
        json_t *v;
        FILE *f;

        if (!json_array_size(names))
                return xstrdup("-");
        f = open_memstream(&out, &len);
        if (!f) {
                perror("socknotifyctl");
                exit(EXIT_REFUSED);
        }
        json_array_foreach(names, i, v) {
                char *name = shown(v, "?");

                fprintf(f, "%s%s", i ? "," : "", name);
                free(name);
        }
        if (fclose(f) != 0) {
                perror("socknotifyctl");
                exit(EXIT_REFUSED);
        }
        return out;
}

static int verb_registrations(sn_conn_t *c, json_int_t port, json_int_t pid)
{
        json_t *items, *it;
        struct table t = { .cols = registrations_cols,
                           .ncols = (int)SN_ARRAY_SIZE(registrations_cols) };
        size_t i;

        /* A port that does not exist (or is another user's) is an error, not an empty list:
         * an operator who mistyped its id must not read "no registrations" into it. */
        if (port) {
                json_t *ports = list_all(c, "ports", 0, 0);
                bool found = false;

                json_array_foreach(ports, i, it)
                        found |= json_integer_value(json_object_get(it, "id")) == port;
                json_decref(ports);
                if (!found) {
                        char why[160];

                        snprintf(why, sizeof(why), "no port %lld (socknotifyctl ports lists the "
                                 "ports you may see)", (long long)port);
                        refused(c, "registrations", -ENOENT, why);
                }
        }
        items = list_all(c, "registrations", port, pid);

        if (opt_json) {
                print_json(json_pack("{s:o}", "items", items));
                return 0;
        }
        json_array_foreach(items, i, it) {
                json_t *sock = json_object_get(it, "socket");
                char p[24], pidb[24], kind[96];
                char *local = shown(json_object_get(sock, "local"), "-");
                char *peer = shown(json_object_get(sock, "peer"), "-");
                char *kind_s = shown(json_object_get(sock, "kind"), "-");
                char *key = key_text(json_object_get(it, "key"));
                char *filter = names_text(json_object_get(it, "filter"));
                char *trigger = names_text(json_object_get(it, "trigger"));
                char *state = shown(json_object_get(it, "state"), "-");

                snprintf(kind, sizeof(kind), "%s%s", kind_s,
                         json_is_true(json_object_get(sock, "listening")) ? " (listening)" : "");
                table_add(&t, num(it, "port", p, sizeof(p)), key,
                          num(it, "pid", pidb, sizeof(pidb)), kind, local, peer, filter, trigger,
                          state, json_is_true(json_object_get(it, "queued")) ? "yes" : "no");
                free(local);
                free(peer);
                free(kind_s);
                free(key);
                free(filter);
                free(trigger);
                free(state);
        }
        table_print(&t);
        json_decref(items);
        return 0;
}

static int verb_simple(sn_conn_t *c, json_t *req)
{
        json_t *ans = control(c, req);

        if (opt_json) {
                print_json(json_incref(ans));
        } else {
                const char *key;
                json_t *v;

                json_object_foreach(ans, key, v) {
                        char *text = json_is_string(v) ? shown(v, "") : NULL;

                        printf("%s\n", text ? text : key);
                        free(text);
                }
        }
        json_decref(ans);
        json_decref(req);
        return 0;
}

/* Whether name is a log level the daemon takes (socknotifyd(8), --log-level). */
static bool level_known(const char *name)
{
        static const char *const levels[] = { "error", "warning", "notice", "info", "debug" };

        for (size_t i = 0; i < SN_ARRAY_SIZE(levels); i++)
                if (!strcmp(name, levels[i]))
                        return true;
        return false;
}

/* The daemon reads its own configuration file with its own parser and checks, as a reload
 * would, and applies nothing: the file of the service that runs, whatever socknotifyd is first
 * in this PATH (socknotifyd --check-config reads the file that binary would). */
static int verb_check_config(sn_conn_t *c)
{
        json_t *req = json_pack("{s:s}", "verb", "check-config"), *ans = control(c, req);
        const char *result = json_string_value(json_object_get(ans, "result"));
        char *path = shown(json_object_get(ans, "path"), "");

        json_decref(req);
        if (opt_json) {
                print_json(ans);
                free(path);
                return 0;
        }
        if (result && !strcmp(result, "good"))
                printf("%s: good (nothing applied; socknotifyctl reload applies it)\n", path);
        else if (result && !strcmp(result, "absent"))
                printf("%s: absent: a reload would run on the defaults and the options\n", path);
        else
                printf("no configuration file (--config=''): the defaults and the options apply\n");
        free(path);
        json_decref(ans);
        return 0;
}

/* ---- metrics ------------------------------------------------------------------------------ */

/* The text for scrapers: OpenMetrics 1.0 (om) or Prometheus' text format 0.0.4 (for
 * node_exporter's textfile collector, which reads only that).  They differ in three places: a
 * counter's family is named without "_total" in OpenMetrics and with it in 0.0.4 (its samples
 * end in "_total" in both), OpenMetrics ends with "# EOF", and 0.0.4 has no "info" type (the
 * build's labels are a gauge of 1 in both). */
struct metrics {
        bool om;
        const char *family; /* the family whose samples follow, NULL before the first */
};

/* Starts a family (once: a family's samples must be together). */
static void metric_family(struct metrics *m, const char *name, const char *type, const char *help)
{
        bool counter = !strcmp(type, "counter");

        if (m->family && !strcmp(m->family, name))
                return;
        m->family = name;
        printf("# TYPE socknotify_%s%s %s\n", name, counter && !m->om ? "_total" : "", type);
        printf("# HELP socknotify_%s%s %s\n", name, counter && !m->om ? "_total" : "", help);
}

/* A label value as both formats write it: backslash, double quote and newline escaped.  The
 * text is shown()'s already (control characters as \xNN), so it is one line of ASCII or UTF-8. */
static void label_value(const char *v)
{
        for (; *v; v++) {
                if (*v == '\\' || *v == '"')
                        putchar('\\');
                if (*v == '\n') {
                        fputs("\\n", stdout);
                        continue;
                }
                putchar(*v);
        }
}

/* One sample: name (with "_total" for a counter), at most one label, and an integer value; a
 * value that is not an integer in the document (an older daemon's) is left out. */
static void metric(struct metrics *m, const char *name, const char *type, const char *help,
                   const char *label, const char *label_text, json_t *value)
{
        if (!json_is_integer(value))
                return;
        metric_family(m, name, type, help);
        printf("socknotify_%s%s", name, !strcmp(type, "counter") ? "_total" : "");
        if (label) {
                printf("{%s=\"", label);
                label_value(label_text);
                fputs("\"}", stdout);
        }
        printf(" %lld\n", (long long)json_integer_value(value));
}

/* As metric(), for a value of the tool's own (no label). */
static void metric_own(struct metrics *m, const char *name, const char *type, const char *help,
                       json_int_t value)
{
        json_t *v = json_integer(value);

        metric(m, name, type, help, NULL, NULL, v);
        json_decref(v);
}

/* The usage figures of each user of users (an array of the status document's user objects). */
static void metrics_users(struct metrics *m, json_t *users)
{
        static const char *const gauges[][3] = {
                { "connections", "user_connections", "Connections of the user." },
                { "rings", "user_rings", "Connections of the user with shared-memory rings." },
                { "ports", "user_ports", "Completion ports of the user." },
                { "sockets", "user_sockets", "Sockets held for the user." },
                { "registrations", "user_registrations", "Registrations of the user." },
                { "waits", "user_waits", "Calls of the user waiting in the daemon." },
                { "posted", "user_posted", "Posted packets of the user not yet dequeued." },
                { "staged", "user_staged", "Items of the user's unfinished multi-part calls." },
                { "output_bytes", "user_output_bytes", "Bytes of replies held for the user." },
        };
        static const char *const counters[][3] = {
                { "refused", "user_refusals", "Requests of the user refused by a limit." },
                { "doorbell_mutes", "user_doorbell_mutes",
                  "Times a ring doorbell of the user was muted." },
        };
        size_t i;
        json_t *u;

        for (size_t k = 0; k < SN_ARRAY_SIZE(gauges); k++)
                json_array_foreach(users, i, u) {
                        char uid[24];

                        snprintf(uid, sizeof(uid), "%lld",
                                 (long long)json_integer_value(json_object_get(u, "uid")));
                        metric(m, gauges[k][1], "gauge", gauges[k][2], "uid", uid,
                               json_object_get(u, gauges[k][0]));
                }
        for (size_t k = 0; k < SN_ARRAY_SIZE(counters); k++)
                json_array_foreach(users, i, u) {
                        char uid[24];

                        snprintf(uid, sizeof(uid), "%lld",
                                 (long long)json_integer_value(json_object_get(u, "uid")));
                        metric(m, counters[k][1], "counter", counters[k][2], "uid", uid,
                               json_object_get(u, counters[k][0]));
                }
}

/* Every pair of an object of counts (refusals by limit, errors by errno) as one family. */
static void metrics_by_name(struct metrics *m, json_t *o, const char *name, const char *label,
                            const char *help)
{
        const char *key;
        json_t *v;

        json_object_foreach(o, key, v) {
                char *k = escape_bytes((const uint8_t *)key, strlen(key));

                metric(m, name, "counter", help, label, k, v);
                free(k);
        }
}

static int verb_metrics(sn_conn_t *c, bool om)
{
        static const char *const totals[][3] = {
                { "connections_total", "accepted_connections", "Connections accepted." },
                { "messages_in", "messages_received", "Messages received from clients." },
                { "messages_out", "messages_sent", "Messages sent to clients." },
                { "doorbells", "doorbells", "Wake-ups by a client's ring doorbell." },
                { "doorbell_mutes", "doorbell_mutes", "Ring doorbells muted for ringing for "
                                                      "nothing." },
                { "registrations_applied", "registrations_applied",
                  "Registration items applied." },
                { "notifications", "notifications", "Notifications delivered." },
                { "posted_delivered", "posted_delivered", "Posted packets delivered." },
                { "protocol_violations", "protocol_violations",
                  "Connections dropped for breaking the protocol." },
        };
        static const char *const gauges[][3] = {
                { "connections", "connections", "Client connections open." },
                { "rings", "rings", "Connections with shared-memory rings." },
                { "ports", "ports", "Completion ports." },
                { "registrations", "registrations", "Registered sockets." },
                { "queued", "queued", "Notifications queued, not yet dequeued." },
                { "waiters", "waiting_calls", "Calls waiting in the daemon." },
                { "posted", "posted", "Posted packets not yet dequeued (the user's own)." },
                { "fd_capacity", "fd_capacity", "Descriptors the daemon may hold." },
        };
        struct metrics m = { .om = om };
        json_t *doc = status_doc(c), *counters = json_object_get(doc, "counters");
        json_t *limits = json_object_get(doc, "limits"), *users = json_object_get(doc, "users");
        json_t *conf = json_object_get(doc, "configuration");
        json_t *reload = json_object_get(conf, "last_reload"), *v, *one = NULL;
        const char *key, *scope = json_string_value(json_object_get(doc, "scope"));
        char *version = shown(json_object_get(doc, "version"), "?");
        char *state = shown(json_object_get(conf, "state"), "?");
        double up = json_number_value(json_object_get(doc, "uptime_seconds"));
        time_t now = time(NULL);

        metric_family(&m, "build_info", "gauge",
                      "The daemon's version and scope of these figures (always 1).");
        printf("socknotify_build_info{version=\"");
        label_value(version);
        printf("\",protocol=\"%lld\",scope=\"%s\"} 1\n",
               (long long)json_integer_value(json_object_get(doc, "protocol")),
               scope && !strcmp(scope, "daemon") ? "daemon" : "user");
        metric_own(&m, "start_time_seconds", "gauge",
                   "When this process image started (Unix time): a re-exec or a restore starts "
                   "a new one.", (json_int_t)(now - (time_t)up));
        metric(&m, "serving_since_seconds", "gauge",
               "When the first daemon whose clients this one still serves started (Unix time).",
               NULL, NULL, json_object_get(doc, "serving_since"));
        metric(&m, "reexecs", "counter", "Re-executions in place (upgrades).", NULL, NULL,
               json_object_get(doc, "reexecs"));
        metric(&m, "restores", "counter",
               "Restores of clients after a restart or a crash (the descriptor store).", NULL,
               NULL, json_object_get(doc, "restores"));
        metric_family(&m, "configuration_info", "gauge",
                      "Where the settings in force came from (always 1).");
        printf("socknotify_configuration_info{state=\"");
        label_value(state);
        printf("\"} 1\n");
        metric(&m, "configuration_read_time_seconds", "gauge",
               "When the daemon last read its configuration file without error (Unix time).",
               NULL, NULL, json_object_get(conf, "read_at"));
        if (json_is_object(reload)) {
                metric(&m, "configuration_last_reload_time_seconds", "gauge",
                       "When the configuration was last reloaded (Unix time).", NULL, NULL,
                       json_object_get(reload, "at"));
                const char *result = json_string_value(json_object_get(reload, "result"));

                metric_own(&m, "configuration_last_reload_success", "gauge",
                           "Whether the last reload succeeded (1) or failed (0).",
                           result && !strcmp(result, "ok"));
        }
        for (size_t k = 0; k < SN_ARRAY_SIZE(gauges); k++)
                metric(&m, gauges[k][1], "gauge", gauges[k][2], NULL, NULL,
                       json_object_get(doc, gauges[k][0]));
        for (size_t k = 0; k < SN_ARRAY_SIZE(totals); k++)
                metric(&m, totals[k][1], "counter", totals[k][2], NULL, NULL,
                       json_object_get(counters, totals[k][0]));
        metrics_by_name(&m, json_object_get(doc, "refusals"), "refusals", "limit",
                        "Requests refused by each limit (socknotifyd(8)).");
        metrics_by_name(&m, json_object_get(json_object_get(doc, "errors"), "call"),
                        "call_errors", "errno", "Calls that failed, by errno.");
        metrics_by_name(&m, json_object_get(json_object_get(doc, "errors"), "entry"),
                        "entry_errors", "errno", "Items of calls that failed, by errno.");
        json_object_foreach(limits, key, v) {
                char *k = escape_bytes((const uint8_t *)key, strlen(key));

                metric(&m, "limit", "gauge", "The daemon's limits, by name (socknotifyd(8)).",
                       "name", k, v);
                free(k);
        }
        /* Root sees every user; anyone else only itself. */
        if (!users) {
                one = json_array();
                json_array_append(one, json_object_get(doc, "user"));
                users = one;
        }
        metrics_users(&m, users);
        if (om)
                printf("# EOF\n");
        fflush(stdout);
        json_decref(one);
        json_decref(doc);
        free(version);
        free(state);
        return ferror(stdout) ? EXIT_REFUSED : 0;
}

/* The table options, taken before or after the verb; whether o was one of them. */
static bool table_option(int o)
{
        switch (o) {
        case 'o':
                opt_output = optarg;
                return true;
        case 'r':
                opt_raw = true;
                return true;
        case 'n':
                opt_noheadings = true;
                return true;
        case 'L':
                opt_nolegend = true;
                return true;
        }
        return false;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
        (void)sig;
        stop = 1;
}

static int verb_watch(sn_conn_t *c, long interval_ms, long count)
{
        double last_up = 0, last_n = 0;
        /* On a terminal the view is redrawn in place; into a pipe or a file, as systemd-cgtop
         * does, the frames follow each other as plain text, a blank line between them, so that
         * a log or a program reads them without screen codes. */
        bool redraw = isatty(STDOUT_FILENO) && !opt_json;

        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        for (long frame = 0; !stop && (count <= 0 || frame < count); frame++) {
                json_t *doc = status_doc(c), *items = list_all(c, "ports", 0, 0);
                json_t *counters = json_object_get(doc, "counters");
                double up = json_real_value(json_object_get(doc, "uptime_seconds"));
                double n = (double)json_integer_value(json_object_get(counters, "notifications"));
                char rate[32] = "-", clock_s[16];
                time_t now = time(NULL);

                if (frame && up > last_up && counters)
                        human_count((n - last_n) / (up - last_up), rate, sizeof(rate));
                last_up = up;
                last_n = n;
                strftime(clock_s, sizeof(clock_s), "%H:%M:%S", localtime(&now));
                if (opt_json) {
                        /* One frame a line (JSON Lines): the time, the status document and the
                         * ports, each as the verbs of their own print them. */
                        json_t *f = json_pack("{s:I, s:O, s:O}", "time", (json_int_t)now,
                                              "status", doc, "items", items);

                        json_dumpf(f, stdout, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII |
                                                      JSON_REAL_PRECISION(15));
                        putchar('\n');
                        json_decref(f);
                } else if (redraw)
                        fputs("\033[H\033[2J", stdout); /* home and clear */
                else if (frame)
                        putchar('\n');
                if (!opt_nolegend && !opt_json)
                        printf("socknotifyd pid %lld  %s  connections %lld  ports %lld  "
                               "registrations %lld  waiters %lld  notifications %s/s\n\n",
                               (long long)json_integer_value(json_object_get(doc, "pid")),
                               clock_s,
                               (long long)json_integer_value(json_object_get(doc, "connections")),
                               (long long)json_integer_value(json_object_get(doc, "ports")),
                               (long long)json_integer_value(json_object_get(doc,
                                                                             "registrations")),
                               (long long)json_integer_value(json_object_get(doc, "waiters")),
                               rate);
                if (!opt_json)
                        ports_table(items);
                fflush(stdout);
                json_decref(items);
                json_decref(doc);
                if (count <= 0 || frame + 1 < count)
                        usleep((useconds_t)interval_ms * 1000);
        }
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "color", required_argument, NULL, 'C' },
                { "port", required_argument, NULL, 'p' },
                { "client", required_argument, NULL, 'c' },
                { "interval", required_argument, NULL, 'i' },
                { "count", required_argument, NULL, 'N' },
                { "format", required_argument, NULL, 'F' },
                { "output", required_argument, NULL, 'o' },
                { "raw", no_argument, NULL, 'r' },
                { "noheadings", no_argument, NULL, 'n' },
                { "no-legend", no_argument, NULL, 'L' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        const char *color = "auto", *verb, *format = "openmetrics";
        long port = 0, pid = 0, interval = 1000, count = 0;
        const struct column *cols = NULL;
        int o, r, ncols = 0, pick[MAXCOLS];
        sn_conn_t *c;

        /* The character classes, for libsmartcols to measure and encode text by: the rest of
         * the locale (numbers, dates) stays C, so that the output reads the same everywhere. */
        setlocale(LC_CTYPE, "");
        /* getopt's messages name the tool as a person typed it, not libtool's wrapper path. */
        argv[0] = (char *)"socknotifyctl";
        while ((o = getopt_long(argc, argv, "+s:jo:rnhV", options, NULL)) >= 0) {
                if (table_option(o))
                        continue;
                switch (o) {
                case 's':
                        opt_socket = optarg;
                        break;
                case 'j':
                        opt_json = true;
                        break;
                case 'C':
                        color = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("socknotifyctl %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        return bad_usage(NULL); /* getopt said what was wrong */
                }
        }
        if (optind >= argc)
                return bad_usage("no verb given");
        verb = argv[optind];
        if (!strcmp(verb, "monitor"))
                return ctl_monitor(argc - optind, argv + optind, opt_socket, opt_json);
        /* Options of the verb follow it. */
        optind++;
        while ((o = getopt_long(argc, argv, "+s:jo:rn", options, NULL)) >= 0) {
                char *end = NULL;
                long *dst = o == 'p' ? &port : o == 'c' ? &pid : o == 'i' ? &interval
                                                                : o == 'N' ? &count : NULL;
                const char *name = o == 'p' ? "port" : o == 'c' ? "client" : o == 'i' ? "interval"
                                                                : "count";
                /* Which verb takes the option (monitor parses its own). */
                const char *takes = o == 'p' || o == 'c' ? "registrations"
                                    : o == 'F'           ? "metrics"
                                                         : "watch";

                if (table_option(o))
                        continue;
                if (o == 's') {
                        opt_socket = optarg;
                        continue;
                }
                if (o == 'j') {
                        opt_json = true;
                        continue;
                }
                if (o != 'p' && o != 'c' && o != 'i' && o != 'N' && o != 'F')
                        return bad_usage(NULL); /* getopt said what was wrong */
                if (strcmp(verb, takes))
                        return bad_usage("--%s applies to %s, not to %s",
                                         o == 'F' ? "format" : name, takes, verb);
                if (o == 'F') {
                        if (strcmp(optarg, "openmetrics") && strcmp(optarg, "prometheus"))
                                return bad_usage("--format: '%s' is not a format: openmetrics "
                                                 "or prometheus", optarg);
                        format = optarg;
                        continue;
                }
                errno = 0;
                *dst = strtol(optarg, &end, 10);
                if (!*optarg || *end || errno || *dst < 0 ||
                    ((o == 'p' || o == 'c') && *dst > UINT32_MAX))
                        return bad_usage("--%s: '%s' is not %s", name, optarg,
                                         o == 'p' ? "a port id (socknotifyctl ports lists them)"
                                         : o == 'c' ? "a process id"
                                         : o == 'i' ? "a number of milliseconds"
                                                    : "a number of frames");
        }
        if (!strcmp(color, "always"))
                opt_color = true;
        else if (!strcmp(color, "auto"))
                opt_color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
        else if (strcmp(color, "never"))
                return bad_usage("--color: '%s' is not auto, always or never", color);
        if (opt_json)
                opt_color = false;
        bool needs_arg = !strcmp(verb, "log-level");
        if (strcmp(verb, "status") && strcmp(verb, "clients") && strcmp(verb, "ports") &&
            strcmp(verb, "registrations") && strcmp(verb, "log-level") && strcmp(verb, "reload") &&
            strcmp(verb, "reexec") && strcmp(verb, "watch") && strcmp(verb, "check-config") &&
            strcmp(verb, "metrics"))
                return bad_usage("unknown verb '%s'", verb);
        if ((needs_arg && optind + 1 != argc) || (!needs_arg && optind != argc))
                return bad_usage(needs_arg ? "%s takes one argument" : "%s takes no argument",
                                 verb);
        /* A level the daemon would refuse is bad usage, known before asking. */
        if (needs_arg && !level_known(argv[optind]))
                return bad_usage("log-level: '%s' is not a level: error, warning, notice, info "
                                 "or debug", argv[optind]);
        if (opt_json && !strcmp(verb, "metrics"))
                return bad_usage("--json does not apply to metrics (--format chooses its text)");
        /* The columns -o names must be the verb's, before the daemon is asked anything. */
        if (!strcmp(verb, "clients")) {
                cols = clients_cols;
                ncols = (int)SN_ARRAY_SIZE(clients_cols);
        } else if (!strcmp(verb, "ports") || !strcmp(verb, "watch")) {
                cols = ports_cols;
                ncols = (int)SN_ARRAY_SIZE(ports_cols);
        } else if (!strcmp(verb, "registrations")) {
                cols = registrations_cols;
                ncols = (int)SN_ARRAY_SIZE(registrations_cols);
        }
        if (opt_output && !cols)
                return bad_usage("-o applies to clients, ports, registrations and watch");
        if (cols && columns_chosen(cols, ncols, pick) < 0)
                return EXIT_USAGE;
        c = connect_daemon();
        if (!strcmp(verb, "status"))
                r = verb_status(c);
        else if (!strcmp(verb, "clients"))
                r = verb_clients(c);
        else if (!strcmp(verb, "ports"))
                r = verb_ports(c);
        else if (!strcmp(verb, "registrations"))
                r = verb_registrations(c, port, pid);
        else if (!strcmp(verb, "log-level"))
                r = verb_simple(c, json_pack("{s:s, s:s}", "verb", verb, "level", argv[optind]));
        else if (!strcmp(verb, "watch"))
                r = verb_watch(c, interval ? interval : 1000, count);
        else if (!strcmp(verb, "check-config"))
                r = verb_check_config(c);
        else if (!strcmp(verb, "metrics"))
                r = verb_metrics(c, !strcmp(format, "openmetrics"));
        else
                r = verb_simple(c, json_pack("{s:s}", "verb", verb));
        sn_conn_close(c);
        return r;
}

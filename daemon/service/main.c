/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * main.c - socknotifyd: command line, resource limits, and the server's lifetime.
 *
 * The daemon runs in the foreground and never forks; a supervisor (systemd, a shell, a test)
 * owns its lifetime.  Exit status: 0 after SIGTERM/SIGINT, 1 when start-up fails, 2 on bad usage.
 *
 * A bad configuration file (socknotifyd(8), CONFIGURATION) never stops a daemon that takes
 * over a previous one's sessions: the error is logged at err, with the file, the line and the
 * key, and it runs on the last good settings the previous daemon left (lastgood.c: in the
 * descriptor store after a restart or a crash, SOCKNOTIFY_SETTINGS_FD after a re-exec), else
 * on the defaults and the command line.  A fresh start (nothing to take over) with a bad or
 * missing named file exits 1 with the error at err, as an invalid option exits 2: neither
 * serves on settings the administrator did not write.  The file and the command line are
 * checked by one function (settings_take()).  `socknotifyd --check-config` is how an
 * operator checks a file first (exit 0 or 1).
 */
#include "config.h"
#include "sn-paths.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/log.h"
#include "common/macro.h"
#include "common/path.h"
#include "daemon/base/closer.h"
#include "daemon/base/settings.h"
#include "daemon/objects/users.h"
#include "daemon/objects/world.h"
#include "daemon/restore/fdstore.h"
#include "daemon/restore/restore.h"
#include "daemon/service/lastgood.h"
#include "daemon/service/persist.h"
#include "daemon/service/server.h"
#include "daemon/state/journal.h"
#include "proto/codec.h"

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: socknotifyd [OPTION]...\n"
                "Serve Windows-style socket state notifications and completion ports to local\n"
                "clients over a Unix SOCK_SEQPACKET socket.\n"
                "\n"
                "  -s, --socket=PATH            listen on PATH (default: $SOCKNOTIFY_SOCKET, else\n"
                "                               $XDG_RUNTIME_DIR/socknotify.sock for non-root,\n"
                "                               else /run/socknotify/socknotify.sock)\n"
                "      --socket-mode=MODE       octal file mode of the socket (default 0660)\n"
                "      --socket-group=GROUP     group owning the socket file\n"
                "  -c, --config=PATH            configuration file (default %s;\n"
                "                               $SOCKNOTIFY_CONFIG overrides it; the default\n"
                "                               may be absent, a named file must exist; an\n"
                "                               empty PATH reads none)\n"
                "      --check-config           check the configuration file and the options,\n"
                "                               print 'PATH: OK' or the error; exit 0 or 1\n"
                "      --log-level=LEVEL        error, warning, notice, info (default), debug\n"
                "  -v, --verbose                log debug messages (--log-level=debug)\n"
                "      --trace                  log every message sent and received\n"
                "      --no-shm                 serve every client on its socket only: offer no\n"
                "                               shared-memory rings (protocol version 3)\n"
                "      --no-io-uring            make the daemon's epoll_ctl calls one by one,\n"
                "                               never batched through io_uring\n"
                "  -h, --help                   show this help and exit\n"
                "  -V, --version                show the version and exit\n"
                "\n"
                "Limits (a refused request gets an error status; see socknotifyd(8)):\n",
                SN_DEFAULT_CONFIG);
        for (size_t i = 0; i < settings_nlimit_options; i++) {
                const struct limit_option *o = &settings_limit_options[i];
                uint32_t def = *settings_limit_field((struct limits *)&settings_default_limits, o);
                char name[64];

                snprintf(name, sizeof(name), "--%s=N", o->name);
                if (def)
                        fprintf(f, "      %-28s %s (default %u)\n", name, o->help, def);
                else
                        fprintf(f, "      %-28s %s (default: %s)\n", name, o->help,
                                o->computed ? o->computed : "computed");
        }
        fprintf(f, "\nReport bugs at " PACKAGE_BUGREPORT "\n");
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, int base, uint32_t *ret)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, base);
        if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
                return -EINVAL;
        *ret = (uint32_t)v;
        return 0;
}

/*
 * Socket activation: adopts the one listening socket passed with LISTEN_FDS/LISTEN_PID (the
 * variables are unset afterwards, so children do not see them); what a previous daemon left in
 * the descriptor store is set aside by fdstore_take() for later.  Returns the listening
 * descriptor, 0 when none was passed, or -1 (logged) when what was passed is not one listening
 * Unix SOCK_SEQPACKET socket.
 */
static int adopt_listen_fd(void)
{
        int fd, n = fdstore_take(&fd);

        if (n < 0)
                return -1;
        if (n == 0)
                return 0;
        if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
                log_error("the activated socket is not a listening Unix SOCK_SEQPACKET socket");
                return -1;
        }
        return fd;
}

/* The path a listening socket is bound to, for logs and the status document. */
static void socket_path_of(int fd, char *path, size_t size)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);

        memset(&sa, 0, sizeof(sa));
        if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sun_path[0])
                snprintf(path, size, "%.*s", (int)sizeof(sa.sun_path), sa.sun_path);
        else
                snprintf(path, size, "(activated socket)");
}

/* A previous state to restore: the journal of the image before a re-exec (from its memfd), or
 * what the descriptor store kept of the daemon before (an orderly stop or a crash). */
struct previous {
        uint8_t *journal;
        size_t size;
        bool mapped;   /* journal is a mapping of restore_fd (a re-exec) */
        struct restore_fds fds;
        uint32_t gen, boxes;
};

static int map_journal(int fd, struct previous *pv)
{
        struct stat st;
        void *m;

        if (fstat(fd, &st) < 0 || st.st_size < JR_RECORD || st.st_size > (1ll << 36))
                return -EBADMSG;
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        pv->journal = m;
        pv->size = (size_t)st.st_size;
        pv->mapped = true;
        if (restore_check(pv->journal, pv->size) < 0)
                return -EBADMSG;
        pv->gen = ((const struct jr_header *)m)->gen;
        pv->boxes = ((const struct jr_header *)m)->boxes;
        return 0;
}

static void previous_free(struct previous *pv, uint32_t *ret_unused)
{
        restore_fds_done(&pv->fds, ret_unused);
        if (pv->mapped && pv->journal)
                munmap(pv->journal, pv->size);
        else
                free(pv->journal);
        pv->journal = NULL;
}

/* Rebuilds every session from the previous state (restore.c), and says what came back. */
static void restore_previous(struct server *srv, struct previous *pv, bool reexec)
{
        struct restore_counts out;
        struct timespec t0, t1;
        int r;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        r = restore_state(srv, &live_restore_ops, pv->journal, pv->size, &pv->fds, &out);
        /* Counted apart: a re-exec is an operator's upgrade, a restore a restart or a crash. */
        if (reexec)
                srv->counters.reexecs++;
        else
                srv->counters.restores++;
        if (reexec)
                restore_sweep(pv->journal, pv->size, &pv->fds, &out.unused);
        previous_free(pv, &out.unused);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (r < 0)
                log_error("%s: the state was not wholly restored (%s); what could be is served",
                          reexec ? "re-exec" : "fd store", strerror(-r));
        log_info("%s: restored %u connection(s), %u port(s), %u registration(s), %u posted "
                 "packet(s), %u parked call(s), %u queued notification(s), %u queued reply(ies), "
                 "%u multi-part call(s) in %ld us; %u call(s) in progress failed with EIO, %u "
                 "registration(s) and %u descriptor(s) dropped",
                 reexec ? "re-exec" : out.orderly ? "fd store, after an orderly stop"
                                                  : "fd store, after a crash",
                 out.conns, out.ports, out.regs, out.posted, out.waits, out.queued, out.replies,
                 out.staged,
                 (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000),
                 out.interrupted, out.dropped, out.unused);
}

/* --check-state: run by a daemon about to re-execute this binary: can it read the journal? */
static int check_state(int fd)
{
        struct previous pv = { .fds = { .keep_fd = -1 } };
        int r = map_journal(fd, &pv);
        uint32_t n;

        if (r < 0) {
                log_error("re-exec check: the journal on descriptor %d is not one this binary "
                          "reads (%s)", fd, strerror(-r));
                previous_free(&pv, NULL);
                return 1;
        }
        n = (uint32_t)SN_MIN(pv.size / JR_RECORD,
                             (size_t)((const struct jr_header *)pv.journal)->capacity);
        for (uint32_t i = 1; i < n; i++)
                if (((const struct jr_record *)pv.journal)[i].type >= JR_TYPES) {
                        log_error("re-exec check: record %u has a type (%u) this binary does "
                                  "not know", i, ((const struct jr_record *)pv.journal)[i].type);
                        previous_free(&pv, NULL);
                        return 1;
                }
        previous_free(&pv, NULL);
        return 0;
}

/* --check-config: reads the file as a start would and says what it found; starts nothing. */
static int check_config(const char *path, bool named)
{
        struct settings file;
        char err[512];
        int r;

        if (!*path) {
                printf("no configuration file (--config=''): the defaults and the options apply\n");
                return 0;
        }
        r = settings_load_file(path, named, &file, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
        }
        if (r == 1)
                printf("%s: absent: the defaults and the options apply\n", path);
        else
                printf("%s: OK\n", path);
        return 0;
}

/*
 * The file's settings at start, into *ret.  A start that takes over a previous daemon's state
 * (keeps: a re-exec, a restart or a restore after a crash through the descriptor store) never
 * stops for a bad file: the error is logged at err (file, line, key) and the last good
 * settings (carried_fd: a memfd of lastgood.c, -1 for none; closed here) are used instead,
 * else none (the defaults and the command line apply); the outcome for STATUS= goes to note
 * ("" when the file was fine).  A fresh start has no session to keep and no settings its
 * clients were served under (no last good settings either): it refuses, as the file is bad,
 * with the error logged at err.
 * Returns 0, or -1 when the daemon must not start.
 */
static int start_settings(const char *path, bool named, int carried_fd, bool keeps,
                          struct settings *ret, char *note, size_t notesz, int *ret_state)
{
        struct settings carried;
        char err[512], cerr[512];
        int r = 1, rc = -ENOENT;

        settings_init(ret);
        note[0] = 0;
        *ret_state = CONFIG_NONE;
        if (*path) {
                r = settings_load_file(path, named, ret, err, sizeof(err));
                *ret_state = r == 0 ? CONFIG_FILE : CONFIG_ABSENT;
        }
        if (carried_fd >= 0) {
                rc = settings_read_fd(carried_fd, "the last good settings", &carried, cerr,
                                      sizeof(cerr));
                close(carried_fd);
                if (rc < 0 && keeps)
                        log_warning("%s: not used", cerr);
        }
        /* Last good settings from the descriptor store are a running service's, even when its
         * journal could not be taken over (an upgrade that cannot read it, a damaged one): a
         * restart keeps the service up on them, as for a restart that keeps its sessions. */
        if (rc == 0)
                keeps = true;
        if (r >= 0)
                return 0;
        settings_init(ret);
        if (!keeps) {
                log_error("configuration: %s; not starting: no session to keep (a fresh start); "
                          "check the file with socknotifyd --check-config", err);
                return -1;
        }
        *ret_state = rc == 0 ? CONFIG_LAST_GOOD : CONFIG_DEFAULTS;
        if (rc == 0) {
                *ret = carried;
                log_error("configuration: %s; running on the last good settings, kept by the "
                          "previous daemon", err);
                snprintf(note, notesz, "; configuration error: running on the last good "
                         "settings (see the log)");
        } else {
                log_error("configuration: %s; running on the defaults and the command line",
                          err);
                snprintf(note, notesz, "; configuration error: running on the defaults (see "
                         "the log)");
        }
        return 0;
}

/* Descriptors open in this process now (0 when /proc is not there). */
static uint64_t count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        uint64_t n = 0;

        if (!d)
                return 0;
        while ((e = readdir(d)))
                n += e->d_name[0] != '.';
        closedir(d);
        return n ? n - 1 : 0; /* not the directory's own */
}

/* Raises the soft RLIMIT_NOFILE to the hard limit; returns the resulting soft limit. */
static uint64_t raise_nofile(void)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 0;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        getrlimit(RLIMIT_NOFILE, &rl);
        }
        return (uint64_t)rl.rlim_cur;
}

/* Everything a start gathers before the server exists. */
struct start {
        struct server_options opt;
        struct settings file;
        const char *path_arg;
        char path[108], note[160];
        int restore_fd, check_fd, settings_fd;
        bool owns_path, check_only;
        int config_state; /* enum config_state */
        uint64_t cap;
        struct previous pv;
        bool have_prev;
};

enum {
        OPT_MODE = 0x100,
        OPT_GROUP,
        OPT_TRACE,
        OPT_NO_SHM,
        OPT_NO_IO_URING,
        OPT_LOG_LEVEL,
        OPT_RESTORE,
        OPT_CHECK_STATE,
        OPT_CHECK_CONFIG,
        OPT_LIMIT, /* OPT_LIMIT + i: settings_limit_options[i] */
};

/* One option of the command line into st: 0, a negative errno (an invalid value; what is
 * wrong in what, or "" when the value is only not one the option takes), or 1 when it is not
 * one of ours.  A setting the file may hold too is checked by settings_take(), as in the
 * file. */
static int take_option(struct start *st, int c, const char *arg, char *what, size_t whatsz)
{
        uint32_t v;
        int r = 0;

        switch (c) {
        case 's':
                st->path_arg = arg;
                break;
        case 'c':
                st->opt.config_path = arg;
                st->opt.config_named = true;
                break;
        case OPT_CHECK_CONFIG:
                st->check_only = true;
                break;
        case OPT_MODE:
                r = parse_u32(arg, 0, 0777, 8, &st->opt.mode);
                break;
        case OPT_GROUP:
                st->opt.group = arg;
                break;
        case OPT_LOG_LEVEL:
                r = settings_take(&st->opt.cmdline, "log-level", NULL, arg, what, whatsz);
                break;
        case 'v':
                st->opt.cmdline.log_level = LOG_DEBUG;
                break;
        case OPT_RESTORE:
        case OPT_CHECK_STATE:
                r = parse_u32(arg, 0, INT32_MAX, 10, &v);
                *(c == OPT_RESTORE ? &st->restore_fd : &st->check_fd) = (int)v;
                break;
        case OPT_TRACE:
                st->opt.trace = true;
                break;
        case OPT_NO_SHM:
                st->opt.no_shm = true;
                break;
        case OPT_NO_IO_URING:
                st->opt.no_io_uring = true;
                break;
        default:
                if (c < OPT_LIMIT || c >= OPT_LIMIT + (int)settings_nlimit_options)
                        return 1;
                r = settings_take(&st->opt.cmdline, settings_limit_options[c - OPT_LIMIT].name,
                                  NULL, arg, what, whatsz);
                break;
        }
        return r < 0 ? r : 0;
}

/* The command line into st: -1 to go on, else the exit status (help, version, bad usage). */
static int parse_args(int argc, char **argv, struct start *st)
{
        static const struct option base_options[] = {
                { "socket", required_argument, NULL, 's' },
                { "socket-mode", required_argument, NULL, OPT_MODE },
                { "socket-group", required_argument, NULL, OPT_GROUP },
                { "config", required_argument, NULL, 'c' },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "verbose", no_argument, NULL, 'v' },
                { "trace", no_argument, NULL, OPT_TRACE },
                { "no-shm", no_argument, NULL, OPT_NO_SHM },
                { "no-io-uring", no_argument, NULL, OPT_NO_IO_URING },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "restore-fd", required_argument, NULL, OPT_RESTORE },
                { "check-state", required_argument, NULL, OPT_CHECK_STATE },
                { "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
        };
        struct option options[SN_ARRAY_SIZE(base_options) + 32 + 1];
        size_t nopt = 0;
        int c, index = -1;

        for (size_t i = 0; i < SN_ARRAY_SIZE(base_options); i++)
                options[nopt++] = base_options[i];
        for (size_t i = 0; i < settings_nlimit_options && i < 32; i++)
                options[nopt++] = (struct option){ settings_limit_options[i].name,
                                                   required_argument, NULL, OPT_LIMIT + (int)i };
        options[nopt] = (struct option){ 0 };
        while ((c = getopt_long(argc, argv, "s:c:vhV", options, &index)) >= 0) {
                char what[256] = "";
                int r;

                if (c == 'h') {
                        usage(stdout);
                        return 0;
                }
                if (c == 'V') {
                        printf("socknotifyd %s (protocol %d)\n", PACKAGE_VERSION,
                               SN_PROTO_VERSION);
                        return 0;
                }
                r = take_option(st, c, optarg, what, sizeof(what));
                if (r > 0) {
                        usage(stderr);
                        return 2;
                }
                /* A setting says what is wrong as the file's check does, the option as given
                 * standing for the file and the line. */
                if (r < 0 && what[0]) {
                        fprintf(stderr, "socknotifyd: --%s=%s: %s\n",
                                index >= 0 ? options[index].name : "?", optarg, what);
                        return 2;
                }
                if (r < 0) {
                        fprintf(stderr, "socknotifyd: invalid value for --%s: '%s'\n",
                                index >= 0 ? options[index].name : "?", optarg);
                        return 2;
                }
                index = -1;
        }
        if (optind < argc) {
                fprintf(stderr, "socknotifyd: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        /* A re-exec's last good settings (lastgood.c); nothing of ours sees the variable after
         * this.  Only with --restore-fd or --check-state: otherwise it is not ours to trust. */
        {
                const char *e = getenv("SOCKNOTIFY_SETTINGS_FD");
                uint32_t v;

                if (e && (st->restore_fd >= 0 || st->check_fd >= 0) &&
                    parse_u32(e, 3, INT32_MAX, 10, &v) == 0)
                        st->settings_fd = (int)v;
                unsetenv("SOCKNOTIFY_SETTINGS_FD");
        }
        /* Not named: the default, which may be absent (the user unit sets SOCKNOTIFY_CONFIG). */
        if (!st->opt.config_named && getenv("SOCKNOTIFY_CONFIG") && *getenv("SOCKNOTIFY_CONFIG"))
                st->opt.config_path = getenv("SOCKNOTIFY_CONFIG");
        return -1;
}

/* --check-state: run by a daemon about to re-execute this binary: can it take the state, and
 * read the settings it passes along? */
static int check_reexec(struct start *st)
{
        struct settings carried;
        char err[512];

        sn_log_init(LOG_INFO);
        if (st->settings_fd >= 0 &&
            settings_read_fd(st->settings_fd, "the last good settings", &carried, err,
                             sizeof(err)) < 0) {
                log_error("re-exec check: %s", err);
                return 1;
        }
        return check_state(st->check_fd);
}

/* What came before this start: the journal of a re-exec (and every descriptor it names), or
 * the socket the service manager activated and what a previous daemon left in its store.
 * 0, or -1 (logged) when the daemon cannot start. */
static int find_previous(struct start *st)
{
        struct previous *pv = &st->pv;
        int r;

        if (st->restore_fd >= 0) {
                /* A re-exec: the journal, the listening socket and every client are ours. */
                r = map_journal(st->restore_fd, pv);
                if (r < 0) {
                        log_error("re-exec: no usable state on descriptor %d: %s; not serving",
                                  st->restore_fd, strerror(-r));
                        return -1;
                }
                pv->fds.keep_fd = st->restore_fd;
                fdstore_note_gen(pv->gen);
                st->have_prev = true;
                return 0;
        }
        r = adopt_listen_fd();
        if (r < 0)
                return -1;
        if (r > 0) {
                st->opt.listen_fd = r;
                socket_path_of(r, st->path, sizeof(st->path));
                if (st->path_arg)
                        log_warning("--socket ignored: using the socket passed by the service "
                                    "manager");
        }
        st->have_prev = fdstore_previous(&pv->journal, &pv->size, &pv->fds);
        if (st->have_prev) {
                pv->gen = ((const struct jr_header *)pv->journal)->gen;
                pv->boxes = ((const struct jr_header *)pv->journal)->boxes;
        }
        return 0;
}

/* The socket to listen on: the previous daemon's (unless one was activated), else the path.
 * 0, or -1 (logged). */
static int choose_socket(struct start *st)
{
        if (st->have_prev) {
                int fd = restore_listen(st->pv.journal, st->pv.size, &st->pv.fds,
                                        &st->owns_path);

                if (fd >= 0 && st->opt.listen_fd < 0) {
                        st->opt.listen_fd = fd;
                        socket_path_of(fd, st->path, sizeof(st->path));
                } else {
                        sn_close(fd);
                        st->owns_path = false;
                }
                if (st->restore_fd >= 0 && st->opt.listen_fd < 0) {
                        log_error("re-exec: the state names no listening socket; not serving");
                        return -1;
                }
        }
        if (st->opt.listen_fd < 0 &&
            sn__socket_path(st->path_arg, st->path, sizeof(st->path)) < 0) {
                log_error("socket path too long");
                return -1;
        }
        st->opt.path = st->path;
        return 0;
}

/* What the daemon holds for itself, out of the reserve: all that is open but what restored
 * clients hold. */
static void count_own_fds(struct server *srv)
{
        struct sn_list *pos, *tmp;
        uint64_t held = 0, open_now = count_fds();

        sn_list_foreach_safe(pos, tmp, &srv->users) {
                const struct user *u = sn_list_entry(pos, struct user, link);

                held += (uint64_t)u->nconns + u->nports + u->nsockets;
        }
        srv->fd_own = open_now > held ? open_now - held : 0;
}

static void log_started(const struct start *st, const struct server *srv)
{
        log_info("socknotifyd %s listening on %s (mode %04o), fd capacity %llu", PACKAGE_VERSION,
                 st->path, (unsigned)st->opt.mode, (unsigned long long)st->cap);
        log_info("reserve: %u descriptor(s) (%llu the daemon's own) and %u connection(s) for "
                 "root and uid %u; other users together: %llu descriptor(s), %u connection(s)",
                 (unsigned)srv->limits.reserve_fds, (unsigned long long)srv->fd_own,
                 (unsigned)srv->limits.reserve_connections, (unsigned)geteuid(),
                 (unsigned long long)limits_fd_pool(&srv->limits, st->cap),
                 (unsigned)limits_conn_pool(&srv->limits));
        if (srv->limits.reserve_fds < srv->fd_own + 16)
                log_warning("--reserve-fds=%u leaves root fewer than 16 descriptors beyond the "
                            "daemon's own %llu", (unsigned)srv->limits.reserve_fds,
                            (unsigned long long)srv->fd_own);
}

/* The server, with what came before restored, its own journal started, until it stops. */
static int serve(struct start *st)
{
        struct server *srv;
        int r = server_new(&st->opt, &srv);

        if (r < 0)
                return 1;
        srv->fd_capacity = st->cap;
        srv->fdstore_max = fdstore_capacity();
        /* One entry of the store keeps the last good settings (lastgood.c). */
        if (srv->fdstore_max > 1) {
                srv->fdstore_max--;
                srv->lastgood_stored = true;
        }
        r = lastgood_keep(srv, &st->file);
        if (r < 0)
                log_warning("fd store: the last good settings are not kept: %s", strerror(-r));
        if (st->note[0])
                server_set_note(srv, st->note, "");
        srv->config_state = st->config_state;
        srv->config_read_at = st->config_state == CONFIG_FILE || st->config_state == CONFIG_ABSENT
                                      ? (int64_t)time(NULL)
                                      : 0;
        srv->serving_since = (int64_t)time(NULL); /* a restore takes its predecessor's */
        if (st->have_prev) {
                srv->owns_path = st->owns_path;
                restore_previous(srv, &st->pv, st->restore_fd >= 0);
        }
        if (st->restore_fd >= 0)
                close(st->restore_fd);
        count_own_fds(srv);
        /* Under a store the journal is kept at all times: a stop or a crash restores from it.
         * Without one it is written when a re-exec needs it (server.c), and costs nothing. */
        if (srv->fdstore_max)
                live_start(srv, fdstore_next_gen());
        /* Ours are stored (or there is no store): the previous daemon's entries can go. */
        if (st->restore_fd >= 0 && srv->fdstore_max)
                fdstore_forget_gen(st->pv.gen, st->pv.boxes);
        fdstore_forget_previous();
        log_started(st, srv);
        if (closer_start() < 0)
                log_warning("no closer thread: clients' descriptors are closed in the loop");
        r = server_run(srv);
        server_free(srv);
        closer_stop();
        server_note_held_signals();
        log_info("stopped");
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
        static struct start st = {
                .opt = { .mode = 0660, .listen_fd = -1, .config_path = SN_DEFAULT_CONFIG },
                .restore_fd = -1,
                .check_fd = -1,
                .settings_fd = -1,
                .pv = { .fds = { .keep_fd = -1 } },
        };
        int level, r;

        /* Until server_new() has the loop's handlers in place, a SIGTERM (a supervisor that
         * stops the daemon as soon as its socket accepts) waits instead of killing it. */
        server_hold_signals();
        settings_init(&st.opt.cmdline);
        r = parse_args(argc, argv, &st);
        if (r >= 0)
                return r;
        if (st.check_fd >= 0)
                return check_reexec(&st);
        if (st.check_only)
                return check_config(st.opt.config_path, st.opt.config_named);
        st.cap = raise_nofile();
        /* Until the file is read: the command line's level, else the default. */
        sn_log_init(st.opt.cmdline.log_level >= 0 ? st.opt.cmdline.log_level : LOG_INFO);
        if (find_previous(&st) < 0)
                return 1;
        if (st.settings_fd < 0)
                st.settings_fd = fdstore_take_settings();
        if (start_settings(st.opt.config_path, st.opt.config_named, st.settings_fd,
                           st.have_prev, &st.file, st.note, sizeof(st.note),
                           &st.config_state) < 0)
                return 1;
        settings_resolve(&st.opt.cmdline, &st.file, st.cap, &st.opt.limits, &level);
        sn_log_set_level(level);
        /* The option wins; without it the file's "no-io-uring" decides. */
        if (!st.opt.no_io_uring && st.file.no_io_uring == 1)
                st.opt.no_io_uring = true;
        if (choose_socket(&st) < 0)
                return 1;
        st.opt.argv = argv;
        return serve(&st);
}

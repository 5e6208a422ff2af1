/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotify-handoff - keep a program's listening sockets in socknotifyd between its runs.
 *
 * Started by a service manager with sockets (LISTEN_FDS, LISTEN_PID = our pid), it parks them
 * on a lingering named port (sn_listen_fds_park) and execs the program with the same
 * descriptors and environment.  Started without them, it takes the sockets back from the port
 * (sn_listen_fds_take), puts them at 3, 4, ... in key order (the order they were passed in),
 * sets LISTEN_FDS and LISTEN_PID as a service manager does, and execs the program.  Either way
 * the daemon keeps its copies: the connection of this tool ends with the exec (or just before
 * it), the port lingers, its registrations become ownerless, and the next run finds them.
 *
 * A port of that name that exists already when sockets are passed is an earlier run's: the
 * sockets passed now replace the ones parked there (the service manager's are authoritative),
 * unless another process holds the port open.
 *
 * Exit status (only when the program was not executed): 1 the daemon refused or failed,
 * 2 bad usage, 3 no daemon reachable, 4 nothing parked under that name, 126 the program could
 * not be executed, 127 the program was not found.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "socknotify.h"

enum {
        EXIT_FAILED = 1,
        EXIT_USAGE = 2,
        EXIT_NODAEMON = 3,
        EXIT_NOTHING = 4,
        EXIT_CANNOT_EXEC = 126,
        EXIT_NOT_FOUND = 127,
};

#define LISTEN_FDS_START 3
#define DEFAULT_LINGER_MS 60000u
#define MAX_LINGER_MS 86400000u /* the daemon's own ceiling for --max-linger */

static const char *opt_socket, *opt_name;
static uint32_t opt_linger = DEFAULT_LINGER_MS;
static bool opt_linger_set, opt_verbose;

/* What die() releases: the connection, the port handle in use, the descriptor array. */
static sn_conn_t *g_conn;
static sn_port_t *g_port;
static int *g_fds;

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: socknotify-handoff [OPTION]... --name=NAME [--] PROGRAM [ARG]...\n"
                "Keep PROGRAM's listening sockets in socknotifyd between its runs.\n"
                "\n"
                "With sockets from the service manager (LISTEN_FDS, LISTEN_PID of this process):\n"
                "park them on the lingering port NAME (replacing what an earlier run parked\n"
                "there), then run PROGRAM with them.  Without: take them back from port NAME,\n"
                "pass them to PROGRAM at descriptors 3, 4, ... with LISTEN_FDS and LISTEN_PID.\n"
                "\n"
                "Options:\n"
                "  -n, --name=NAME              the port's name (required; 1 to 255 bytes)\n"
                "  -l, --linger=MS              keep the port MS milliseconds after PROGRAM ends\n"
                "                               (default %u when parking; when taking back,\n"
                "                               the port's time is changed only if given)\n"
                "  -s, --socket=PATH            the daemon's socket (default: $SOCKNOTIFY_SOCKET,\n"
                "                               else the per-user or the system socket)\n"
                "  -v, --verbose                say on stderr what was parked or taken\n"
                "  -h, --help                   show this help and exit\n"
                "  -V, --version                show the version and exit\n"
                "\n"
                "Exit status (when PROGRAM was not run): 1 refused or failed by the daemon,\n"
                "2 bad usage, 3 no daemon reachable, 4 nothing parked under NAME,\n"
                "126 PROGRAM could not be executed, 127 PROGRAM not found.\n",
                DEFAULT_LINGER_MS);
}

static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int status, const char *fmt, ...)
{
        va_list ap;

        fputs("socknotify-handoff: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        /* Nothing is lost by leaving: what was taken is ownerless again on the lingering port
         * once the connection is closed. */
        sn_port_close(g_port);
        sn_conn_close(g_conn);
        free(g_fds);
        exit(status);
}

/* Parses a decimal number (no sign, no trailing text) up to max; false when it is not one. */
static bool parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
        unsigned long v = 0;

        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || v > (max - (unsigned long)(*s - '0')) / 10)
                        return false;
                v = v * 10 + (unsigned long)(*s - '0');
        }
        *ret = v;
        return true;
}

/* True when the service manager passed sockets to this very process (sd_listen_fds(3)'s test:
 * a LISTEN_PID for another process, or none, means the variables are not ours). */
static bool activated(void)
{
        const char *pid = getenv("LISTEN_PID");
        unsigned long v;

        return getenv("LISTEN_FDS") && pid && parse_uint(pid, INT_MAX, &v) &&
               v == (unsigned long)getpid();
}

static sn_conn_t *connect_daemon(void)
{
        sn_conn_t *c;
        int r = sn_conn_open(opt_socket, &c);

        if (r == 0)
                return g_conn = c;
        /* sn_conn_open_error() names the paths tried and what to do. */
        fprintf(stderr, "socknotify-handoff: cannot talk to socknotifyd: %s\n",
                *sn_conn_open_error() ? sn_conn_open_error() : sn_strerror(r));
        exit(EXIT_NODAEMON);
}

/* Explains an error of the daemon or the library and exits with EXIT_FAILED. */
static void __attribute__((noreturn)) fail(const char *what, int r)
{
        const char *hint = "";

        if (r == -EDQUOT)
                hint = "\n  Over a limit of the daemon: the linger time above its --max-linger, "
                       "or this user's quota of ports or sockets (see socknotifyd(8)).";
        else if (r == -EOPNOTSUPP)
                hint = "\n  The daemon is too old for lingering ports (it speaks protocol 1).";
        else if (r == -EACCES)
                hint = "\n  The port belongs to another user.";
        else if (r == -ECONNRESET)
                hint = "\n  The daemon went away.";
        die(EXIT_FAILED, "%s: %s%s", what, sn_strerror(r), hint);
}

/*
 * The port exists although sockets were passed: an earlier run parked its sockets there.
 * Drops them from the daemon (sn_socket_close: registration and daemon copy; a socket that is
 * also one of ours stays open through our descriptor) and closes the port for good (linger 0)
 * so that the name is free to park again.  Refuses when another process holds the port: that
 * is a running instance, not a leftover.
 */
static void replace_parked(sn_conn_t *c)
{
        sn_taken_socket_t taken[64];
        sn_take_info_t info;
        sn_port_t *port;
        unsigned dropped = 0;
        int r;

        r = sn_port_open(c, opt_name, &port);
        if (r == -ENOENT)
                return; /* closed meanwhile (its linger ran out): the name is free */
        if (r < 0)
                fail("open the existing port", r);
        g_port = port;
        do {
                r = sn_port_take_sockets(port, taken, 64, &info);
                if (r < 0)
                        fail("take the sockets parked earlier", r);
                if (info.holders > 0) {
                        /* Ours again when this connection ends (the port lingers). */
                        for (int i = 0; i < r; i++)
                                close(taken[i].fd);
                        die(EXIT_FAILED,
                            "port %s exists and %u other process(es) hold it open: "
                            "another instance is running; not replacing its sockets",
                            opt_name, info.holders);
                }
                for (int i = 0; i < r; i++)
                        if (sn_socket_close(c, taken[i].fd) == 0)
                                dropped++;
        } while (r > 0 && info.remaining > 0);
        r = sn_port_set_linger(port, 0);
        if (r < 0)
                fail("close the existing port", r);
        g_port = NULL;
        sn_port_close(port);
        fprintf(stderr,
                "socknotify-handoff: port %s held %u socket(s) parked by an earlier run; "
                "the sockets passed now replace them\n",
                opt_name, dropped);
}

/* Checks what LISTEN_FDS names before anything is opened here: a descriptor number that is
 * not open would otherwise be taken by the daemon connection itself.  Returns the count (0:
 * none passed); exits when LISTEN_FDS is not a count or names a descriptor that is not an open
 * socket. */
static int check_listen_fds(void)
{
        const char *s = getenv("LISTEN_FDS");
        unsigned long n;

        if (!parse_uint(s, INT_MAX - LISTEN_FDS_START, &n))
                die(EXIT_FAILED, "LISTEN_FDS=%s: not a count of descriptors", s);
        for (unsigned long i = 0; i < n; i++) {
                struct stat st;
                int fd = LISTEN_FDS_START + (int)i;

                if (fstat(fd, &st) < 0)
                        die(EXIT_FAILED, "LISTEN_FDS=%s, but descriptor %d is not open", s, fd);
                if (!S_ISSOCK(st.st_mode))
                        die(EXIT_FAILED, "LISTEN_FDS=%s, but descriptor %d is not a socket", s,
                            fd);
        }
        return (int)n;
}

/* Parks the sockets passed to this process and returns how many, or -ENOENT when none were
 * (LISTEN_FDS=0); exits on every other error. */
static int park(void)
{
        sn_conn_t *c;
        int r;

        if (check_listen_fds() == 0)
                return -ENOENT; /* as sd_listen_fds(3) sees it: nothing was passed */
        c = connect_daemon();

        r = sn_listen_fds_park(c, opt_name, opt_linger, NULL);
        if (r == -EEXIST) {
                replace_parked(c);
                r = sn_listen_fds_park(c, opt_name, opt_linger, NULL);
        }
        if (r == -EEXIST)
                die(EXIT_FAILED, "park the sockets: %s: port %s exists still (another instance "
                    "starting?), or a socket of LISTEN_FDS is registered on another port "
                    "(parked under another name?)", sn_strerror(r), opt_name);
        if (r == -EINVAL)
                die(EXIT_FAILED, "park the sockets: %s (the daemon refused one of the "
                    "descriptors of LISTEN_FDS)", sn_strerror(r));
        if (r < 0)
                fail("park the sockets", r);
        if (opt_verbose)
                fprintf(stderr, "socknotify-handoff: parked %d socket(s) on port %s "
                        "(linger %u ms)\n", r, opt_name, opt_linger);
        /* The port lingers from here: our descriptors, LISTEN_FDS, LISTEN_PID (ours, so the
         * program's after exec) and LISTEN_FDNAMES go to the program unchanged. */
        g_conn = sn_conn_close(c);
        return r;
}

/* Puts fds[0..n) at LISTEN_FDS_START.. without close-on-exec, whatever numbers they have and
 * whatever holds those numbers now. */
static void move_fds(int *fds, int n)
{
        for (int i = 0; i < n; i++) {
                int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, LISTEN_FDS_START + n);

                if (hi < 0)
                        die(EXIT_FAILED, "move the sockets: %s", strerror(errno));
                close(fds[i]);
                fds[i] = hi;
        }
        for (int i = 0; i < n; i++) {
                if (dup2(fds[i], LISTEN_FDS_START + i) < 0 ||
                    fcntl(LISTEN_FDS_START + i, F_SETFD, 0) < 0)
                        die(EXIT_FAILED, "move the sockets: %s", strerror(errno));
                close(fds[i]);
        }
}

/* Takes the sockets back, moves them to 3.. and sets LISTEN_FDS and LISTEN_PID; returns how
 * many; exits on every error. */
static int take(void)
{
        sn_conn_t *c = connect_daemon();
        long open_max = sysconf(_SC_OPEN_MAX);
        uint32_t max = open_max > 0 && open_max < 65536 ? (uint32_t)open_max : 65536;
        sn_port_t *port;
        char buf[32];
        int *fds, n, r;

        g_fds = fds = calloc(max, sizeof(*fds));
        if (!fds)
                die(EXIT_FAILED, "%s", strerror(ENOMEM));
        port = NULL;
        n = sn_listen_fds_take(c, opt_name, fds, max, &port);
        g_port = port;
        if (n == -ENOENT)
                die(EXIT_NOTHING, "no port %s: nothing is parked under that name (start the "
                    "program once with socket activation; or the port's linger time ran out)",
                    opt_name);
        if (n < 0)
                fail("take the parked sockets", n);
        if (n == 0)
                die(EXIT_NOTHING, "port %s has no parked sockets (another instance may hold "
                    "them)", opt_name);
        if (opt_linger_set) {
                r = sn_port_set_linger(port, opt_linger);
                if (r < 0)
                        fail("set the port's linger time", r); /* the sockets stay parked */
        }
        if (opt_verbose)
                fprintf(stderr, "socknotify-handoff: took %d socket(s) back from port %s\n", n,
                        opt_name);
        /* The port lingers again from here, with the sockets (and our registrations become
         * ownerless), so the next run finds them; the numbers this connection used are free
         * for the move. */
        g_port = NULL;
        sn_port_close(port);
        g_conn = sn_conn_close(c);
        move_fds(fds, n);
        g_fds = NULL;
        free(fds);

        snprintf(buf, sizeof(buf), "%d", n);
        if (setenv("LISTEN_FDS", buf, 1) < 0)
                die(EXIT_FAILED, "setenv: %s", strerror(errno));
        snprintf(buf, sizeof(buf), "%ld", (long)getpid());
        if (setenv("LISTEN_PID", buf, 1) < 0)
                die(EXIT_FAILED, "setenv: %s", strerror(errno));
        unsetenv("LISTEN_FDNAMES"); /* names are not kept on the port */
        return n;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
                { "name", required_argument, NULL, 'n' },
                { "linger", required_argument, NULL, 'l' },
                { "socket", required_argument, NULL, 's' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        unsigned long v;
        int o;

        while ((o = getopt_long(argc, argv, "+n:l:s:vhV", options, NULL)) >= 0) {
                switch (o) {
                case 'n':
                        opt_name = optarg;
                        break;
                case 'l':
                        if (!parse_uint(optarg, MAX_LINGER_MS, &v) || v == 0)
                                die(EXIT_USAGE, "--linger: not a time from 1 to %u ms: %s",
                                    MAX_LINGER_MS, optarg);
                        opt_linger = (uint32_t)v;
                        opt_linger_set = true;
                        break;
                case 's':
                        opt_socket = optarg;
                        break;
                case 'v':
                        opt_verbose = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("socknotify-handoff %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return EXIT_USAGE;
                }
        }
        if (!opt_name)
                die(EXIT_USAGE, "--name=NAME is required (see --help)");
        if (!*opt_name || strlen(opt_name) > 255)
                die(EXIT_USAGE, "--name: 1 to 255 bytes");
        if (optind >= argc)
                die(EXIT_USAGE, "no PROGRAM to run (see --help)");

        if (!activated() || park() == -ENOENT)
                take();

        fflush(NULL);
        execvp(argv[optind], argv + optind);
        o = errno;
        /* The sockets stay parked: the next run finds them. */
        die(o == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC, "cannot run %s: %s", argv[optind],
            strerror(o));
}

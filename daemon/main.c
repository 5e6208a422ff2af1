/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * main.c - socknotifyd: command line, resource limits, and the server's lifetime.
 *
 * The daemon runs in the foreground and never forks; a supervisor (systemd, a shell, a test)
 * owns its lifetime.  Exit status: 0 after SIGTERM/SIGINT, 1 when start-up fails, 2 on bad usage.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/log.h"
#include "common/macro.h"
#include "common/path.h"
#include "daemon/daemon.h"

static const struct limits default_limits = {
        .max_message = 131072,
        .max_fds = SN_PROTO_MAX_FDS,
        .max_ports = 64,
        .max_registrations = 65536,
        .max_posted = 65536,
        .max_waits = 1024,
        .max_connections = 4096,
        .max_output = 8u << 20,
        .max_sockets_per_user = 0, /* 0: half the descriptor capacity, set in main() */
};

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
                "      --max-message=BYTES      largest message (default %u, 4096..1048576)\n"
                "      --max-ports=N            ports per connection (default %u)\n"
                "      --max-registrations=N    registrations per port (default %u)\n"
                "      --max-posted=N           queued posted packets per port (default %u)\n"
                "      --max-waits=N            waiting calls per connection (default %u)\n"
                "      --max-connections=N      connections at once (default %u)\n"
                "      --max-sockets-per-user=N sockets held for one user, all its connections\n"
                "                               (default: half the descriptor capacity)\n"
                "  -v, --verbose                log debug messages\n"
                "      --trace                  log every message sent and received\n"
                "  -h, --help                   show this help and exit\n"
                "  -V, --version                show the version and exit\n"
                "\nReport bugs at " PACKAGE_BUGREPORT "\n",
                default_limits.max_message, default_limits.max_ports,
                default_limits.max_registrations, default_limits.max_posted,
                default_limits.max_waits, default_limits.max_connections);
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
 * variables are unset afterwards, so children do not see them).  Returns the descriptor, 0 when
 * none was passed, or -1 (logged) when what was passed is not one listening Unix
 * SOCK_SEQPACKET socket.  Writes the socket's path (for logs and the status document) to path.
 */
static int adopt_listen_fd(char *path, size_t size)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        int n = sd_listen_fds(1);

        if (n <= 0)
                return n < 0 ? (log_error("LISTEN_FDS: %s", strerror(-n)), -1) : 0;
        if (n != 1) {
                log_error("socket activation passed %d sockets; socknotifyd takes exactly one", n);
                return -1;
        }
        if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
                log_error("the activated socket is not a listening Unix SOCK_SEQPACKET socket");
                return -1;
        }
        memset(&sa, 0, sizeof(sa));
        if (getsockname(SD_LISTEN_FDS_START, (struct sockaddr *)&sa, &len) == 0 &&
            sa.sun_path[0])
                snprintf(path, size, "%.*s", (int)sizeof(sa.sun_path), sa.sun_path);
        else
                snprintf(path, size, "(activated socket)");
        return SD_LISTEN_FDS_START;
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

int main(int argc, char **argv)
{
        enum {
                OPT_MODE = 0x100,
                OPT_GROUP,
                OPT_MAX_MESSAGE,
                OPT_MAX_PORTS,
                OPT_MAX_REGS,
                OPT_MAX_POSTED,
                OPT_MAX_WAITS,
                OPT_MAX_CONNS,
                OPT_MAX_SOCKETS,
                OPT_TRACE,
        };
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "socket-mode", required_argument, NULL, OPT_MODE },
                { "socket-group", required_argument, NULL, OPT_GROUP },
                { "max-message", required_argument, NULL, OPT_MAX_MESSAGE },
                { "max-ports", required_argument, NULL, OPT_MAX_PORTS },
                { "max-registrations", required_argument, NULL, OPT_MAX_REGS },
                { "max-posted", required_argument, NULL, OPT_MAX_POSTED },
                { "max-waits", required_argument, NULL, OPT_MAX_WAITS },
                { "max-connections", required_argument, NULL, OPT_MAX_CONNS },
                { "max-sockets-per-user", required_argument, NULL, OPT_MAX_SOCKETS },
                { "verbose", no_argument, NULL, 'v' },
                { "trace", no_argument, NULL, OPT_TRACE },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        struct server_options opt = {
                .mode = 0660,
                .limits = default_limits,
                .listen_fd = -1,
        };
        const char *path_arg = NULL;
        char path[108];
        struct server *srv;
        int verbose = 0, c, r, index = -1;

        while ((c = getopt_long(argc, argv, "s:vhV", options, &index)) >= 0) {
                r = 0;
                switch (c) {
                case 's':
                        path_arg = optarg;
                        break;
                case OPT_MODE:
                        r = parse_u32(optarg, 0, 0777, 8, &opt.mode);
                        break;
                case OPT_GROUP:
                        opt.group = optarg;
                        break;
                case OPT_MAX_MESSAGE:
                        r = parse_u32(optarg, 4096, 1u << 20, 10, &opt.limits.max_message);
                        break;
                case OPT_MAX_PORTS:
                        r = parse_u32(optarg, 1, 1u << 20, 10, &opt.limits.max_ports);
                        break;
                case OPT_MAX_REGS:
                        r = parse_u32(optarg, 1, 1u << 24, 10, &opt.limits.max_registrations);
                        break;
                case OPT_MAX_POSTED:
                        r = parse_u32(optarg, 1, 1u << 24, 10, &opt.limits.max_posted);
                        break;
                case OPT_MAX_WAITS:
                        r = parse_u32(optarg, 1, 1u << 20, 10, &opt.limits.max_waits);
                        break;
                case OPT_MAX_CONNS:
                        r = parse_u32(optarg, 1, 1u << 20, 10, &opt.limits.max_connections);
                        break;
                case OPT_MAX_SOCKETS:
                        r = parse_u32(optarg, 1, 1u << 30, 10, &opt.limits.max_sockets_per_user);
                        break;
                case 'v':
                        verbose = 1;
                        break;
                case OPT_TRACE:
                        opt.trace = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("socknotifyd %s (protocol %d)\n", PACKAGE_VERSION,
                               SN_PROTO_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
                if (r < 0) {
                        fprintf(stderr, "socknotifyd: invalid value for --%s: '%s'\n",
                                index >= 0 ? options[index].name : "?", optarg);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "socknotifyd: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        sn_log_init(verbose ? LOG_DEBUG : LOG_INFO);
        r = adopt_listen_fd(path, sizeof(path));
        if (r < 0)
                return 1;
        if (r > 0) {
                opt.listen_fd = r;
                if (path_arg)
                        log_warning("--socket ignored: using the socket passed by the service "
                                    "manager");
        } else if (sn__socket_path(path_arg, path, sizeof(path)) < 0) {
                log_error("socket path too long");
                return 1;
        }
        opt.path = path;

        uint64_t cap = raise_nofile();
        if (!opt.limits.max_sockets_per_user)
                opt.limits.max_sockets_per_user = (uint32_t)SN_MAX(cap / 2, (uint64_t)64);
        r = server_new(&opt, &srv);
        if (r < 0)
                return 1;
        srv->fd_capacity = cap;
        log_info("socknotifyd %s listening on %s (mode %04o), fd capacity %llu", PACKAGE_VERSION,
                 path, (unsigned)opt.mode, (unsigned long long)cap);
        r = server_run(srv);
        server_free(srv);
        log_info("stopped");
        return r < 0 ? 1 : 0;
}

/*
 * server.c - the listening socket, the event loop, signals and the reaper of dead connections.
 *
 * Start-up refuses to steal the socket path from a live daemon (a connect() succeeds) and only
 * replaces a stale socket file (connect() refused, and the file is a socket).  SIGTERM/SIGINT
 * answer every pending call with ESHUTDOWN, close every port and held socket, and leave the
 * loop; server_free() then unlinks the socket file.  SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM are
 * caught, logged and otherwise ignored: a stray signal never takes everyone's sockets away.
 *
 * Out of descriptors (EMFILE/ENFILE), the listener gives up a spare descriptor to accept one
 * waiting client and refuse it with ERROR/EMFILE, then stops accepting for 100 ms on a timer
 * (re-adding a ready read event would fire at once and spin).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/daemon.h"

static void reaper_cb(evutil_socket_t fd, short what, void *arg)
{
        struct server *srv = arg;

        while (!sn_list_empty(&srv->dead))
                conn_free(sn_list_first(&srv->dead, struct conn, dead_link), ECANCELED);
        /* Much of what clients made was freed (posted packets, replies, staged calls): give
         * the memory back, or a client that came and went leaves the daemon large. */
        if (srv->freed_since_trim >= (4u << 20)) {
                malloc_trim(0);
                srv->freed_since_trim = 0;
        }
}

static void listen_resume_cb(evutil_socket_t fd, short what, void *arg)
{
        struct server *srv = arg;

        if (srv->reserve_fd < 0)
                srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        event_add(&srv->listen_ev, NULL);
}

static void listen_cb(evutil_socket_t fd, short what, void *arg)
{
        static const struct timeval pause = { 0, 100000 };
        struct server *srv = arg;
        unsigned long long dropped;

        for (int i = 0; i < 64; i++) {
                int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (c >= 0) {
                        conn_accept(srv, c);
                        continue;
                }
                if (errno == EINTR || errno == ECONNABORTED)
                        continue;
                if (errno != EMFILE && errno != ENFILE)
                        return;
                if (sn_ratelimit_ok(&srv->refuse_log, &dropped))
                        log_warning("accept: %s; refusing clients for 100 ms%s",
                                    strerror(errno), dropped ? " (messages suppressed)" : "");
                /* The spare descriptor lets one waiting client hear why. */
                srv->reserve_fd = sn_close(srv->reserve_fd);
                c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (c >= 0)
                        conn_refuse(srv, c, EMFILE);
                event_del(&srv->listen_ev);
                evtimer_add(&srv->listen_pause, &pause);
                return;
        }
}

bool server_is_own_connection(const struct server *srv, int fd)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);

        memset(&sa, 0, sizeof(sa));
        if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX)
                return false;
        return srv->listen_addrlen > sizeof(sa_family_t) && len == srv->listen_addrlen &&
               !memcmp(&sa, &srv->listen_addr, len);
}

void server_log_refusal(struct server *srv, const struct conn *c, uid_t uid, const char *limit)
{
        unsigned long long dropped;

        if (!sn_ratelimit_ok(&srv->refuse_log, &dropped))
                return;
        if (c)
                log_notice("connection %llu (pid %d, uid %u): refused by --%s",
                           (unsigned long long)c->serial, (int)c->pid, (unsigned)uid, limit);
        else
                log_notice("refused a connection of uid %u: --%s", (unsigned)uid, limit);
        if (dropped)
                log_notice("%llu refusal line(s) suppressed", dropped);
}

void server_note_freed(struct server *srv, size_t bytes)
{
        srv->freed_since_trim += bytes;
}

static void signal_ignored_cb(evutil_socket_t sig, short what, void *arg)
{
        log_notice("signal %d (%s) ignored", (int)sig, strsignal((int)sig));
}

static void watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
        sd_notify(0, "WATCHDOG=1");
}

/* Sends STATUS= to the service manager when the one-line summary changed. */
static void status_tick_cb(evutil_socket_t fd, short what, void *arg)
{
        struct server *srv = arg;
        char line[128];

        snprintf(line, sizeof(line), "STATUS=%u connection(s), %u port(s), %llu registration(s)",
                 srv->nconns, srv->nports, (unsigned long long)srv->nregs);
        if (strcmp(line, srv->last_status)) {
                sd_notify(0, line);
                memcpy(srv->last_status, line, sizeof(line));
        }
}

static void shutdown_cb(evutil_socket_t sig, short what, void *arg)
{
        struct server *srv = arg;

        sd_notify(0, "STOPPING=1");
        log_info("signal %d: shutting down, %u connection(s) open", (int)sig, srv->nconns);
        while (!sn_list_empty(&srv->conns))
                conn_free(sn_list_first(&srv->conns, struct conn, link), ESHUTDOWN);
        event_base_loopbreak(srv->base);
}

/* Makes the listening socket at srv->path.  Returns 0 or a negative errno (logged). */
static int listen_on_path(struct server *srv, uint32_t mode, const char *group)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        _sn_cleanup_close_ int fd = -1;
        mode_t old;
        int r;

        strncpy(sa.sun_path, srv->path, sizeof(sa.sun_path) - 1);
        if (lstat(srv->path, &st) == 0) {
                _sn_cleanup_close_ int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

                if (!S_ISSOCK(st.st_mode)) {
                        log_error("%s exists and is not a socket; not replacing it", srv->path);
                        return -EEXIST;
                }
                if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
                        log_error("another socknotifyd is serving %s", srv->path);
                        return -EADDRINUSE;
                }
                if (errno != ECONNREFUSED) {
                        r = -errno;
                        log_error("cannot probe %s: %s", srv->path, strerror(-r));
                        return r;
                }
                log_info("replacing stale socket %s", srv->path);
                unlink(srv->path);
        } else if (!strcmp(srv->path, "/run/socknotify/socknotify.sock")) {
                mkdir("/run/socknotify", 0755);
        }

        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                r = -errno;
                log_error("socket: %s", strerror(-r));
                return r;
        }
        old = umask((mode_t)(~mode & 0777));
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0) {
                r = -errno;
                log_error("bind %s: %s", srv->path, strerror(-r));
                return r;
        }
        srv->owns_path = true;
        if (group) {
                struct group *g = getgrnam(group);

                if (!g || chown(srv->path, (uid_t)-1, g->gr_gid) < 0) {
                        log_error("cannot give %s to group %s: %s", srv->path, group,
                                  g ? strerror(errno) : "no such group");
                        return -EINVAL;
                }
        }
        if (chmod(srv->path, (mode_t)mode) < 0 || listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                log_error("setting up %s: %s", srv->path, strerror(-r));
                return r;
        }
        srv->listen_fd = SN_TAKE_FD(fd);
        return 0;
}

static const int ignored_signals[] = { SIGHUP, SIGUSR1, SIGUSR2, SIGALRM };

/*
 * A SOCK_SEQPACKET message larger than its sender's buffer less 32 bytes cannot be sent at all
 * (EMSGSIZE), and a new Unix socket's buffer is net.core.wmem_default: a max_message above it
 * would make the daemon's larger replies, and clients' larger requests, fail and end their
 * connection.  Such a max_message is lowered to what a socket carries (and announced so).
 */
static void clamp_max_message(struct limits *l)
{
        int sp[2], sndbuf = 0;
        socklen_t len = sizeof(sndbuf);
        uint32_t carry;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return;
        if (getsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) < 0)
                sndbuf = 0;
        close(sp[0]);
        close(sp[1]);
        if (sndbuf < 4096 + 32)
                return; /* never below the smallest max_message */
        carry = ((uint32_t)sndbuf - 32) & ~(uint32_t)7;
        if (l->max_message > carry) {
                log_warning("--max-message=%u exceeds what a socket carries "
                            "(net.core.wmem_default %d); using %u",
                            (unsigned)l->max_message, sndbuf, (unsigned)carry);
                l->max_message = carry;
        }
}

int server_new(const struct server_options *opt, struct server **ret_srv)
{
        struct event_config *cfg;
        struct server *srv;
        int r;

        srv = calloc(1, sizeof(*srv));
        if (!srv)
                return -ENOMEM;
        srv->listen_fd = -1;
        srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        srv->refuse_log = (struct sn_ratelimit)SN_RATELIMIT_INIT(5000, 20);
        srv->violation_log = (struct sn_ratelimit)SN_RATELIMIT_INIT(5000, 50);
        srv->limits = opt->limits;
        srv->trace = opt->trace;
        clamp_max_message(&srv->limits);
        sn_list_init(&srv->conns);
        sn_list_init(&srv->ports);
        sn_list_init(&srv->users);
        sn_list_init(&srv->dead);
        clock_gettime(CLOCK_MONOTONIC, &srv->started);
        if (getrandom(srv->port_id_key, sizeof(srv->port_id_key), 0) !=
            (ssize_t)sizeof(srv->port_id_key)) {
                /* Still unique ids; only their order is then guessable. */
                srv->port_id_key[0] = (uint32_t)getpid() * 2654435761u;
                srv->port_id_key[1] = (uint32_t)srv->started.tv_nsec;
        }
        srv->path = strdup(opt->path);
        srv->evcap = 1024;
        srv->evbuf = calloc(srv->evcap, sizeof(*srv->evbuf));
        srv->rbuf = malloc(srv->limits.max_message);
        srv->wbuf = malloc(srv->limits.max_message);
        srv->ebuf = malloc(srv->limits.max_message);
        if (!srv->path || !srv->evbuf || !srv->rbuf || !srv->wbuf || !srv->ebuf ||
            registry_init(&srv->registry) < 0) {
                server_free(srv);
                return -ENOMEM;
        }
        cfg = event_config_new();
        if (cfg)
                event_config_require_features(cfg, EV_FEATURE_ET | EV_FEATURE_O1);
        srv->base = cfg ? event_base_new_with_config(cfg) : NULL;
        if (cfg)
                event_config_free(cfg);
        if (!srv->base) {
                log_error("libevent has no edge-triggered O(1) backend (epoll) here");
                server_free(srv);
                return -ENOTSUP;
        }

        if (opt->listen_fd >= 0) {
                srv->listen_fd = opt->listen_fd;
                evutil_make_socket_nonblocking(srv->listen_fd);
        } else {
                r = listen_on_path(srv, opt->mode, opt->group);
                if (r < 0) {
                        server_free(srv);
                        return r;
                }
        }
        srv->listen_addrlen = sizeof(srv->listen_addr);
        if (getsockname(srv->listen_fd, (struct sockaddr *)&srv->listen_addr,
                        &srv->listen_addrlen) < 0)
                srv->listen_addrlen = 0;
        event_assign(&srv->listen_ev, srv->base, srv->listen_fd, EV_READ | EV_PERSIST, listen_cb,
                     srv);
        evtimer_assign(&srv->listen_pause, srv->base, listen_resume_cb, srv);
        evsignal_assign(&srv->sig_term, srv->base, SIGTERM, shutdown_cb, srv);
        evsignal_assign(&srv->sig_int, srv->base, SIGINT, shutdown_cb, srv);
        event_assign(&srv->reaper, srv->base, -1, 0, reaper_cb, srv);
        if (event_add(&srv->listen_ev, NULL) < 0 || evsignal_add(&srv->sig_term, NULL) < 0 ||
            evsignal_add(&srv->sig_int, NULL) < 0) {
                server_free(srv);
                return -ENOMEM;
        }
        for (size_t i = 0; i < SN_ARRAY_SIZE(ignored_signals); i++) {
                evsignal_assign(&srv->sig_ignored[i], srv->base, ignored_signals[i],
                                signal_ignored_cb, srv);
                if (evsignal_add(&srv->sig_ignored[i], NULL) < 0) {
                        server_free(srv);
                        return -ENOMEM;
                }
        }
        signal(SIGPIPE, SIG_IGN);
        *ret_srv = srv;
        return 0;
}

int server_run(struct server *srv)
{
        static const struct timeval status_every = { 1, 0 };
        uint64_t usec = 0;

        event_assign(&srv->status_tick, srv->base, -1, EV_PERSIST, status_tick_cb, srv);
        event_add(&srv->status_tick, &status_every);
        if (sd_watchdog_enabled(0, &usec) > 0 && usec) {
                struct timeval half = { (time_t)(usec / 2 / 1000000),
                                        (suseconds_t)(usec / 2 % 1000000) };

                event_assign(&srv->watchdog, srv->base, -1, EV_PERSIST, watchdog_cb, srv);
                event_add(&srv->watchdog, &half);
                log_info("watchdog: WATCHDOG=1 every %llu ms", (unsigned long long)usec / 2000);
        }
        /* Serving from here on: the listening socket is open and the loop starts. */
        status_tick_cb(-1, 0, srv);
        sd_notify(0, "READY=1");
        return event_base_dispatch(srv->base) < 0 ? -EIO : 0;
}

void server_free(struct server *srv)
{
        if (!srv)
                return;
        while (!sn_list_empty(&srv->conns))
                conn_free(sn_list_first(&srv->conns, struct conn, link), ESHUTDOWN);
        if (srv->base) {
                if (event_initialized(&srv->listen_ev))
                        event_del(&srv->listen_ev);
                if (event_initialized(&srv->sig_term))
                        event_del(&srv->sig_term);
                if (event_initialized(&srv->sig_int))
                        event_del(&srv->sig_int);
                if (event_initialized(&srv->reaper))
                        event_del(&srv->reaper);
                if (event_initialized(&srv->watchdog))
                        event_del(&srv->watchdog);
                if (event_initialized(&srv->status_tick))
                        event_del(&srv->status_tick);
                if (event_initialized(&srv->listen_pause))
                        event_del(&srv->listen_pause);
                for (size_t i = 0; i < SN_ARRAY_SIZE(srv->sig_ignored); i++)
                        if (event_initialized(&srv->sig_ignored[i]))
                                event_del(&srv->sig_ignored[i]);
                event_base_free(srv->base);
        }
        sn_close(srv->listen_fd);
        sn_close(srv->reserve_fd);
        if (srv->owns_path)
                unlink(srv->path);
        registry_deinit(&srv->registry);
        free(srv->evbuf);
        free(srv->rbuf);
        free(srv->wbuf);
        free(srv->ebuf);
        free(srv->path);
        free(srv);
}

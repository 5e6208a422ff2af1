/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * server.c - the listening socket, the event loop, signals and the reaper of dead connections.
 *
 * Start-up refuses to steal the socket path from a live daemon (a connect() succeeds) and only
 * replaces a stale socket file (connect() refused, and the file is a socket).  SIGTERM/SIGINT
 * answer every pending call with ESHUTDOWN, close every port and held socket, and leave the
 * loop; server_free() then unlinks the socket file.  SIGHUP reloads the configuration file
 * (settings.c).  SIGUSR1 and SIGALRM are caught, logged and otherwise ignored: a stray signal
 * never takes everyone's sockets away; SIGUSR2 re-executes the daemon in place.  From the first
 * SIGTERM/SIGINT until the process exits these signals are blocked, never back to their default
 * action: one sent again during the teardown is logged and the shutdown goes on.
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
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "common/macro.h"
#include "daemon/base/closer.h"
#include "daemon/base/epctl.h"
#include "daemon/base/settings.h"
#include "daemon/objects/port.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/registry.h"
#include "daemon/objects/world.h"
#include "daemon/restore/fdstore.h"
#include "daemon/service/conn.h"
#include "daemon/service/lastgood.h"
#include "daemon/service/persist.h"
#include "daemon/service/server.h"
#include "daemon/state/journal.h"
#include "proto/codec.h"

/*
 * Every signal the daemon handles.  libevent restores a signal's previous (default) action when
 * its event is deleted, and the default action of each of these ends the process: so from the
 * first SIGTERM/SIGINT on they are blocked instead, until the process exits, and a repeated
 * SIGTERM (systemd's stop, a user pressing ^C twice) never cuts the teardown short.
 */
static const int handled_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM };

static void handled_sigset(sigset_t *set)
{
        sigemptyset(set);
        for (size_t i = 0; i < SN_ARRAY_SIZE(handled_signals); i++)
                sigaddset(set, handled_signals[i]);
}

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

static void status_tick_cb(evutil_socket_t fd, short what, void *arg);

void server_set_note(struct server *srv, const char *prefix, const char *text)
{
        static const char ellipsis[] = " \u2026"; /* " …" in UTF-8 */
        char *note = srv->reload_note;
        size_t size = sizeof(srv->reload_note), len;

        snprintf(note, size, "%s%s", prefix, text);
        len = strlen(prefix) + strlen(text);
        if (len < size)
                return;
        /* Too long: cut at the last space that leaves room for the ellipsis. */
        len = size - sizeof(ellipsis);
        while (len > 0 && note[len] != ' ')
                len--;
        while (len > 0 && note[len - 1] == ' ')
                len--;
        memcpy(note + len, ellipsis, sizeof(ellipsis));
}

/* A bad file keeps the running settings and says so: at err in the log (file, line, key), on
 * the STATUS= line (cut only between words) and in err for a CONTROL reload (socknotifyctl
 * reload, the units' ExecReload=, so that `systemctl reload` fails too). */
int server_reload(struct server *srv, char *err, size_t errsz)
{
        struct settings file;
        struct limits l;
        const char *shown;
        size_t plen = strlen(srv->config_path);
        int r, kept, level;

        sd_notify(0, "RELOADING=1");
        settings_init(&file);
        err[0] = 0;
        r = *srv->config_path ? settings_load_file(srv->config_path, srv->config_named, &file,
                                                   err, errsz)
                              : 1;
        srv->reload_at = (int64_t)time(NULL);
        snprintf(srv->reload_error, sizeof(srv->reload_error), "%s", r < 0 ? err : "");
        if (r < 0) {
                log_error("reload: %s; keeping the running settings", err);
                /* The status line names the file by its base name; the log has the path. */
                shown = err;
                if (plen && !strncmp(err, srv->config_path, plen) && strrchr(srv->config_path, '/'))
                        shown = err + (strrchr(srv->config_path, '/') - srv->config_path) + 1;
                server_set_note(srv, "; reload failed, running settings kept: ", shown);
                goto out;
        }
        settings_resolve(&srv->cmdline, &file, srv->fd_capacity, &l, &level);
        /* Clients sized their buffers from these (HELLO_REPLY): each connection keeps the
         * values it was told for its whole life, and connections made after the next start or
         * re-exec are told the file's. */
        if (l.max_message != srv->limits.max_message)
                log_notice("reload: max-message applies to connections made after the next "
                           "start or re-exec");
        if (l.max_fds != srv->limits.max_fds)
                log_notice("reload: max-fds applies to connections made after the next "
                           "start or re-exec");
        if (file.no_io_uring != srv->file_settings.no_io_uring)
                log_notice("reload: no-io-uring takes effect at the next start or re-exec");
        l.max_message = srv->limits.max_message;
        l.max_fds = srv->limits.max_fds;
        srv->limits = l;
        sn_log_set_level(level);
        kept = lastgood_keep(srv, &file);
        if (kept < 0)
                log_warning("reload: the last good settings are not kept in the fd store: %s",
                            strerror(-kept));
        log_info("reload: configuration %s%s, log level %s",
                 r == 1 ? "file absent: defaults and options" : "read from ",
                 r == 1 ? "" : srv->config_path, settings_log_level_name(level));
        server_set_note(srv, "; configuration reloaded", "");
        srv->config_state = !*srv->config_path ? CONFIG_NONE : r == 1 ? CONFIG_ABSENT
                                                                      : CONFIG_FILE;
        srv->config_read_at = srv->reload_at;
        r = 0;
out:
        srv->last_status[0] = 0; /* the next tick sends STATUS= again */
        status_tick_cb(-1, 0, srv);
        sd_notify(0, "READY=1");
        return r;
}

int server_check_config(struct server *srv, char *err, size_t errsz)
{
        struct settings file;

        err[0] = 0;
        if (!*srv->config_path)
                return 1;
        return settings_load_file(srv->config_path, srv->config_named, &file, err, errsz);
}

const char *server_config_state_name(int state)
{
        switch (state) {
        case CONFIG_FILE:
                return "file";
        case CONFIG_ABSENT:
                return "absent";
        case CONFIG_LAST_GOOD:
                return "last-good";
        case CONFIG_DEFAULTS:
                return "defaults";
        default:
                return "none";
        }
}

/* Runs `exe --check-state=FD` and waits for it (bounded); returns its exit status or -1. */
static int run_check(const char *exe, int fd)
{
        char arg[48];
        pid_t pid;
        int st;

        snprintf(arg, sizeof(arg), "--check-state=%d", fd);
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                execl(exe, exe, arg, (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 1000; i++) {
                pid_t r = waitpid(pid, &st, WNOHANG);

                if (r == pid)
                        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                if (r < 0 && errno != EINTR)
                        return -1;
                usleep(10000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
}

/* A re-exec that did not happen: everything as it was, still served. */
static void reexec_undo(struct server *srv, int settings_fd)
{
        struct sn_list *pos;

        live_set_cloexec(srv, true);
        unsetenv("SOCKNOTIFY_SETTINGS_FD");
        sn_close(settings_fd);
        if (srv->journal)
                journal_header(srv->journal)->orderly = 0;
        /* Without a store a journal is only kept for a re-exec. */
        if (!srv->fdstore_max)
                live_stop(srv, false);
        /* What live_leave() harvested goes to those who wait for it. */
        for (pos = srv->ports.next; pos != &srv->ports; pos = pos->next) {
                struct port *p = sn_list_entry(pos, struct port, srv_link);

                if (p->nwaiters && p->nqueued)
                        port_dispatch(p);
        }
}

/* The command line of the new image: ours, with --restore-fd=fd in place of any earlier one. */
static char **reexec_argv(struct server *srv, char *fdarg)
{
        size_t n = 0;
        char **argv;

        while (srv->argv[n])
                n++;
        argv = calloc(n + 2, sizeof(*argv));
        if (!argv)
                return NULL;
        n = 0;
        argv[n++] = srv->exe;
        for (size_t i = 1; srv->argv[i]; i++)
                if (strncmp(srv->argv[i], "--restore-fd=", 13))
                        argv[n++] = srv->argv[i];
        argv[n++] = fdarg;
        argv[n] = NULL;
        return argv;
}

/*
 * The journal is the state: nothing is written for a re-exec.  Every port is harvested and
 * every descriptor boxed (live_leave()), the journal's memfd and every descriptor it names are
 * kept across execve(), and the new image restores from them as it would after a crash
 * (restore.c).  The binary is asked first whether it reads this journal (--check-state).
 */
static int reexec_in_place(struct server *srv)
{
        struct timespec t0, t1;
        char fdarg[48], setarg[48];
        char **argv;
        int fd, settings_fd, r;

        if (!srv->exe || !srv->argv) {
                log_error("re-exec: the daemon's own path is unknown; still serving");
                return -ENOTSUP;
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        /* Dead connections go first: nothing of them is carried over. */
        reaper_cb(-1, 0, srv);
        /* Without a descriptor store the journal is written now, by the same hooks that keep
         * it current under one (live_start() records every object). */
        if (!srv->journal && live_start(srv, fdstore_next_gen()) < 0) {
                log_error("re-exec: no journal could be written; still serving");
                return -ENOMEM;
        }
        live_leave(srv); /* the boxes do not matter here: every descriptor is kept */
        fd = journal_fd(srv->journal);
        /* The settings in force go along: the new image runs on them if the file is bad. */
        settings_fd = lastgood_memfd(&srv->file_settings, false);
        if (settings_fd < 0)
                log_warning("re-exec: the last good settings stay behind: %s",
                            strerror(-settings_fd));
        /* In the environment, not on the command line: an older binary ignores it. */
        snprintf(setarg, sizeof(setarg), "%d", settings_fd);
        if (settings_fd >= 0)
                setenv("SOCKNOTIFY_SETTINGS_FD", setarg, 1);
        live_set_cloexec(srv, false);
        /* The new binary reads the journal (and the settings) first: if it cannot, we go on
         * serving. */
        r = run_check(srv->exe, fd);
        if (r != 0) {
                log_error("re-exec: %s cannot take over the state (check exited %d); "
                          "still serving", srv->exe, r);
                reexec_undo(srv, settings_fd);
                return -EPROTO;
        }
        snprintf(fdarg, sizeof(fdarg), "--restore-fd=%d", fd);
        argv = reexec_argv(srv, fdarg);
        if (!argv) {
                reexec_undo(srv, settings_fd);
                return -ENOMEM;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        log_info("re-exec: %s with %u connection(s), %u port(s), %llu registration(s); "
                 "journal checked in %ld us",
                 srv->exe, srv->nconns, srv->nports, (unsigned long long)srv->nregs,
                 (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
        if (event_initialized(&srv->watchdog))
                sd_notify(0, "WATCHDOG=1"); /* the new image's start counts from here */
        execv(srv->exe, argv);
        r = -errno;
        log_error("re-exec: execv %s: %s; still serving", srv->exe, strerror(-r));
        free(argv);
        reexec_undo(srv, settings_fd);
        return r;
}

int server_fit_buffers(struct server *srv, uint32_t max_message)
{
        uint8_t **bufs[] = { &srv->rbuf, &srv->wbuf, &srv->ebuf };

        if (max_message <= srv->bufsize)
                return 0;
        /* Each one grown in turn: one that could not be leaves the others larger, harmless,
         * and bufsize still the size all three have. */
        for (size_t i = 0; i < SN_ARRAY_SIZE(bufs); i++) {
                uint8_t *n = realloc(*bufs[i], max_message);

                if (!n)
                        return -ENOMEM;
                *bufs[i] = n;
        }
        srv->bufsize = max_message;
        return 0;
}

int server_reexec(struct server *srv)
{
        sigset_t held, unheld;
        int r;

        if (srv->stopping) {
                log_notice("re-exec not done: the daemon is stopping");
                return -ESHUTDOWN;
        }
        /* The handled signals are blocked throughout.  One caught by libevent here would be
         * lost with the old image (its event never runs), and between execv() and the new
         * image's handlers one would take its default action and end the daemon with every
         * client.  Blocked, it stays pending, across execv() too, until server_new() of the
         * new image unblocks it, or until the re-exec failed and this one goes on serving. */
        handled_sigset(&held);
        pthread_sigmask(SIG_BLOCK, &held, &unheld);
        r = reexec_in_place(srv);
        pthread_sigmask(SIG_SETMASK, &unheld, NULL);
        return r;
}

int server_reexec_for(struct server *srv, struct conn *c, uint32_t id, const char *answer)
{
        size_t len = strlen(answer);
        struct outmsg *m;
        int r;

        if (sn_msg_size(SN_MSG_CONTROL_REPLY, (uint32_t)len, 0) > c->max_message)
                return -E2BIG;
        memcpy(sn_msg_begin(srv->wbuf, SN_MSG_CONTROL_REPLY, id, 0, 0, (uint32_t)len, 0), answer,
               len);
        m = conn_defer(c, srv->wbuf, sn_msg_size(SN_MSG_CONTROL_REPLY, (uint32_t)len, 0));
        if (!m)
                return -ENOMEM;
        r = server_reexec(srv);
        conn_defer_cancel(c, m);
        return r;
}

static void reexec_later_cb(evutil_socket_t fd, short what, void *arg)
{
        struct server *srv = arg;

        if (srv->stopping)
                log_notice("SIGUSR2: no re-exec, the daemon is stopping");
        else
                server_reexec(srv);
}

/* The re-exec runs from a zero timer, in the next loop pass: libevent runs the callbacks of the
 * signals caught together in the order of their numbers, and a SIGTERM that came with this
 * SIGUSR2 would otherwise be lost with the old image.  Its callback runs first now and stops. */
static void sigusr2_cb(evutil_socket_t sig, short what, void *arg)
{
        static const struct timeval now = { 0, 0 };
        struct server *srv = arg;

        evtimer_add(&srv->reexec_later, &now);
}

static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
        char err[512];

        server_reload(arg, err, sizeof(err));
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
        char line[sizeof(srv->last_status)];

        snprintf(line, sizeof(line),
                 "STATUS=%u connection(s), %u port(s), %llu registration(s)%s", srv->nconns,
                 srv->nports, (unsigned long long)srv->nregs, srv->reload_note);
        if (strcmp(line, srv->last_status)) {
                sd_notify(0, line);
                memcpy(srv->last_status, line, sizeof(line));
        }
}

/*
 * A connection belongs to the process that opened it (SO_PEERCRED pid).  Normally its end is
 * seen as EOF; but a client can pass its own end (or a socket whose queue holds it) to the
 * daemon, which then never sees EOF.  So connections that ever sent descriptors are ended once
 * their process no longer exists.  kill(pid, 0) only asks: EPERM means it exists.
 */
static void owner_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
        struct server *srv = arg;
        struct sn_list *pos, *tmp;

        sn_list_foreach_safe(pos, tmp, &srv->conns) {
                struct conn *c = sn_list_entry(pos, struct conn, link);

                if (c->passed_fds && !c->dead && c->pid > 0 && kill(c->pid, 0) < 0 &&
                    errno == ESRCH)
                        conn_kill(c, "its process has exited");
        }
}

void server_hold_signals(void)
{
        sigset_t set;

        /* The closer thread blocks every signal (closer.c): a blocked process-directed signal
         * stays pending for the process, and this thread collects it with sigtimedwait(). */
        handled_sigset(&set);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void server_note_held_signals(void)
{
        static const struct timespec now = { 0, 0 };
        sigset_t set;
        int sig;

        handled_sigset(&set);
        while ((sig = sigtimedwait(&set, NULL, &now)) > 0)
                log_notice("signal %d (%s)%s during shutdown: ignored, shutdown continues", sig,
                           strsignal(sig), sig == SIGTERM || sig == SIGINT ? " again" : "");
}

static void shutdown_cb(evutil_socket_t sig, short what, void *arg)
{
        struct server *srv = arg;

        /* Already stopping: libevent may have caught this one before the signals were held,
         * and calls it after the first (SIGINT and SIGTERM in one loop iteration). */
        if (srv->stopping) {
                log_notice("signal %d (%s) again during shutdown: ignored, shutdown continues",
                           (int)sig, strsignal((int)sig));
                return;
        }
        srv->stopping = true;
        server_hold_signals();
        sd_notify(0, "STOPPING=1");
        if (srv->fdstore_max && srv->journal && live_entries(srv)) {
                /* Everything stays in the service manager's store, as it is at every moment:
                 * the journal is marked as left in order, and the next start restores it. */
                reaper_cb(-1, 0, srv);
                if (live_leave(srv) < 0)
                        log_warning("signal %d: some descriptors could not be kept in the "
                                    "store (the kernel refused more in flight); their "
                                    "registrations end at the next start", (int)sig);
                log_info("stopped (signal %d): %u connection(s) kept in the descriptor store",
                         (int)sig, srv->nconns);
                closer_stop();
                server_note_held_signals();
                _exit(0);
        }
        /* Nothing of this daemon is to survive it: clients are told it stops. */
        live_stop(srv, true);
        log_info("signal %d: shutting down, %u connection(s) open", (int)sig, srv->nconns);
        while (!sn_list_empty(&srv->conns))
                conn_free(sn_list_first(&srv->conns, struct conn, link), ESHUTDOWN);
        server_note_held_signals();
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

static const int ignored_signals[] = { SIGUSR1, SIGALRM };

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

/* Our binary's path, not its inode: an upgrade replaces the file there. */
static char *own_exe(void)
{
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        if (n <= 0)
                return NULL;
        exe[n] = 0;
        if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
                exe[n - 10] = 0;
        return strdup(exe);
}

/* The server's own memory and settings, before any loop or socket; NULL when out of memory. */
static struct server *server_alloc(const struct server_options *opt)
{
        struct server *srv = calloc(1, sizeof(*srv));

        if (!srv)
                return NULL;
        srv->listen_fd = -1;
        srv->free_slot = UINT32_MAX;
        srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        srv->refuse_log = (struct sn_ratelimit)SN_RATELIMIT_INIT(5000, 20);
        srv->violation_log = (struct sn_ratelimit)SN_RATELIMIT_INIT(5000, 50);
        srv->limits = opt->limits;
        srv->cmdline = opt->cmdline;
        srv->config_path = strdup(opt->config_path ? opt->config_path : "");
        srv->config_named = opt->config_named;
        settings_init(&srv->file_settings);
        srv->argv = (char **)opt->argv;
        srv->exe = own_exe();
        srv->trace = opt->trace;
        srv->no_shm = opt->no_shm;
        /* A ring that cannot be had leaves the plain path (logged there), never an error. */
        if (epctl_new(!opt->no_io_uring, reg_epoll_done, srv, &srv->epctl) < 0) {
                server_free(srv);
                return NULL;
        }
        clamp_max_message(&srv->limits);
        sn_list_init(&srv->conns);
        sn_list_init(&srv->ports);
        htable_init(&srv->port_ids);
        htable_init(&srv->port_names);
        htable_init(&srv->handles);
        sn_list_init(&srv->users);
        htable_init(&srv->users_by_uid);
        sn_list_init(&srv->dead);
        sn_list_init(&srv->take_unread);
        sn_list_init(&srv->monitors);
        clock_gettime(CLOCK_MONOTONIC, &srv->started);
        if (getrandom(srv->port_id_key, sizeof(srv->port_id_key), 0) !=
            (ssize_t)sizeof(srv->port_id_key)) {
                /* Still unique ids; only their order is then guessable. */
                srv->port_id_key[0] = (uint32_t)getpid() * 2654435761u;
                srv->port_id_key[1] = (uint32_t)srv->started.tv_nsec;
        }
        /* Handles of another daemon on the same slots are stale here (but for chance). */
        if (getrandom(&srv->slot_gen_seed, sizeof(srv->slot_gen_seed), 0) !=
            (ssize_t)sizeof(srv->slot_gen_seed))
                srv->slot_gen_seed = (uint32_t)srv->started.tv_nsec ^ (uint32_t)getpid() << 8;
        srv->path = strdup(opt->path);
        srv->evcap = 1024;
        srv->evbuf = calloc(srv->evcap, sizeof(*srv->evbuf));
        srv->bufsize = srv->limits.max_message;
        srv->rbuf = malloc(srv->bufsize);
        srv->wbuf = malloc(srv->bufsize);
        srv->ebuf = malloc(srv->bufsize);
        if (!srv->path || !srv->config_path || !srv->evbuf || !srv->rbuf || !srv->wbuf ||
            !srv->ebuf || registry_init(&srv->registry) < 0) {
                server_free(srv);
                return NULL;
        }
        return srv;
}

/* The event loop: epoll, edge-triggered, and two priorities.  0 or a negative errno. */
static int server_loop_new(struct server *srv)
{
        struct event_config *cfg = event_config_new();

        if (cfg)
                event_config_require_features(cfg, EV_FEATURE_ET | EV_FEATURE_O1);
        srv->base = cfg ? event_base_new_with_config(cfg) : NULL;
        if (cfg)
                event_config_free(cfg);
        if (!srv->base) {
                log_error("libevent has no edge-triggered O(1) backend (epoll) here");
                return -ENOTSUP;
        }
        /* Two priorities: SIGTERM and SIGINT (0) run before everything else (1) that became
         * active in the same loop iteration, so that a re-exec (SIGUSR2, socknotifyctl reexec)
         * never replaces the image while a stop signal libevent already caught waits behind it:
         * that signal would be lost with the old image. */
        return event_base_priority_init(srv->base, 2) < 0 ? -ENOMEM : 0;
}

/* The listening socket's and the signals' events.  0 or -ENOMEM. */
static int server_events_add(struct server *srv)
{
        event_assign(&srv->listen_ev, srv->base, srv->listen_fd, EV_READ | EV_PERSIST, listen_cb,
                     srv);
        evtimer_assign(&srv->listen_pause, srv->base, listen_resume_cb, srv);
        evsignal_assign(&srv->sig_term, srv->base, SIGTERM, shutdown_cb, srv);
        evsignal_assign(&srv->sig_int, srv->base, SIGINT, shutdown_cb, srv);
        event_priority_set(&srv->sig_term, 0);
        event_priority_set(&srv->sig_int, 0);
        evsignal_assign(&srv->sig_hup, srv->base, SIGHUP, sighup_cb, srv);
        evsignal_assign(&srv->sig_usr2, srv->base, SIGUSR2, sigusr2_cb, srv);
        evtimer_assign(&srv->reexec_later, srv->base, reexec_later_cb, srv);
        event_assign(&srv->reaper, srv->base, -1, 0, reaper_cb, srv);
        if (event_add(&srv->listen_ev, NULL) < 0 || evsignal_add(&srv->sig_term, NULL) < 0 ||
            evsignal_add(&srv->sig_int, NULL) < 0 || evsignal_add(&srv->sig_hup, NULL) < 0 ||
            evsignal_add(&srv->sig_usr2, NULL) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < SN_ARRAY_SIZE(ignored_signals); i++) {
                evsignal_assign(&srv->sig_ignored[i], srv->base, ignored_signals[i],
                                signal_ignored_cb, srv);
                if (evsignal_add(&srv->sig_ignored[i], NULL) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int server_new(const struct server_options *opt, struct server **ret_srv)
{
        struct server *srv = server_alloc(opt);
        sigset_t set;
        int r;

        if (!srv)
                return -ENOMEM;
        r = server_loop_new(srv);
        if (r < 0) {
                server_free(srv);
                return r;
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
        r = server_events_add(srv);
        if (r < 0) {
                server_free(srv);
                return r;
        }
        signal(SIGPIPE, SIG_IGN);
        /* Handled from here on, even when inherited blocked: a re-exec blocks them across
         * execv() (server_reexec), so one sent meanwhile waits for this. */
        handled_sigset(&set);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        *ret_srv = srv;
        return 0;
}

int server_run(struct server *srv)
{
        static const struct timeval status_every = { 1, 0 };
        uint64_t usec = 0;
        int r;

        event_assign(&srv->status_tick, srv->base, -1, EV_PERSIST, status_tick_cb, srv);
        event_add(&srv->status_tick, &status_every);
        event_assign(&srv->owner_sweep, srv->base, -1, EV_PERSIST, owner_sweep_cb, srv);
        event_add(&srv->owner_sweep, &status_every);
        if (sd_watchdog_enabled(0, &usec) > 0 && usec) {
                struct timeval half = { (time_t)(usec / 2 / 1000000),
                                        (suseconds_t)(usec / 2 % 1000000) };

                event_assign(&srv->watchdog, srv->base, -1, EV_PERSIST, watchdog_cb, srv);
                event_add(&srv->watchdog, &half);
                log_info("watchdog: WATCHDOG=1 every %llu ms", (unsigned long long)usec / 2000);
                /* Now, not half a period later: after a re-exec or a slow start the last ping
                 * (of the previous image) may be most of a period old. */
                watchdog_cb(-1, 0, srv);
        }
        /* Serving from here on: the listening socket is open and the loop starts. */
        status_tick_cb(-1, 0, srv);
        sd_notify(0, "READY=1");
        r = event_base_dispatch(srv->base) < 0 ? -EIO : 0;
        /* Before server_free() deletes the signal events (shutdown_cb held them already,
         * unless the loop ended otherwise). */
        server_hold_signals();
        return r;
}

void server_free(struct server *srv)
{
        if (!srv)
                return;
        live_stop(srv, false);
        while (!sn_list_empty(&srv->conns))
                conn_free(sn_list_first(&srv->conns, struct conn, link), ESHUTDOWN);
        /* Lingering ports: nobody holds them, and the daemon stops. */
        while (!sn_list_empty(&srv->ports))
                port_free(sn_list_first(&srv->ports, struct port, srv_link), ESHUTDOWN);
        if (srv->base) {
                if (event_initialized(&srv->listen_ev))
                        event_del(&srv->listen_ev);
                if (event_initialized(&srv->sig_term))
                        event_del(&srv->sig_term);
                if (event_initialized(&srv->sig_int))
                        event_del(&srv->sig_int);
                if (event_initialized(&srv->sig_hup))
                        event_del(&srv->sig_hup);
                if (event_initialized(&srv->sig_usr2))
                        event_del(&srv->sig_usr2);
                if (event_initialized(&srv->reexec_later))
                        event_del(&srv->reexec_later);
                if (event_initialized(&srv->reaper))
                        event_del(&srv->reaper);
                if (event_initialized(&srv->watchdog))
                        event_del(&srv->watchdog);
                if (event_initialized(&srv->status_tick))
                        event_del(&srv->status_tick);
                if (event_initialized(&srv->owner_sweep))
                        event_del(&srv->owner_sweep);
                if (event_initialized(&srv->listen_pause))
                        event_del(&srv->listen_pause);
                for (size_t i = 0; i < SN_ARRAY_SIZE(srv->sig_ignored); i++)
                        if (event_initialized(&srv->sig_ignored[i]))
                                event_del(&srv->sig_ignored[i]);
                event_base_free(srv->base);
        }
        sn_close(srv->listen_fd);
        sn_close(srv->reserve_fd);
        srv->epctl = epctl_free(srv->epctl);
        if (srv->owns_path)
                unlink(srv->path);
        registry_deinit(&srv->registry);
        htable_deinit(&srv->port_ids);
        htable_deinit(&srv->port_names);
        htable_deinit(&srv->handles);
        htable_deinit(&srv->users_by_uid);
        free(srv->slots);
        free(srv->slot_next);
        free(srv->slot_gen);
        free(srv->evbuf);
        free(srv->rbuf);
        free(srv->wbuf);
        free(srv->ebuf);
        free(srv->path);
        free(srv->config_path);
        free(srv->exe);
        free(srv);
}

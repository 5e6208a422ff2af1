/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotify-supervise - run socknotifyd (or any sd_notify(3) service) as a child and keep its
 * descriptor store, as systemd does for a unit with FileDescriptorStoreMax=, so that a restart
 * or a crash of the daemon loses no client without systemd: in a container, under runit or
 * s6, or in a binding's test suite.
 *
 * The notification socket is a datagram socket in a private directory (mode 0700); the child
 * gets NOTIFY_SOCKET pointing at it and FDSTORE=N (what systemd 254 and later set, and our
 * units set for older ones).  Only messages of the child (SCM_CREDENTIALS pid, as
 * NotifyAccess=main) are read:
 *
 *   FDSTORE=1        the descriptors that come with it are kept under FDNAME= ("stored"
 *                    without one), up to N in all; beyond that, or with a bad name, they are
 *                    closed (systemd: "Hit fd store limit").  Kept descriptors are never
 *                    polled: every one behaves as with FDPOLL=0.
 *   FDSTOREREMOVE=1  every kept descriptor named FDNAME= is closed.
 *   READY=1, STOPPING=1, RELOADING=1, STATUS=, WATCHDOG=1   noted (logged with --verbose).
 *   anything else    ignored; descriptors that came with a message that stores nothing are
 *                    closed, which is also the answer to BARRIER=1.
 *
 * When the child ends, for whatever reason (kill -9 included), it is started again after
 * --restart-delay with every kept descriptor at 3, 4, ... and LISTEN_FDS, LISTEN_FDNAMES
 * (the names joined by ':') and LISTEN_PID (the new child's pid) set, as sd_listen_fds(3)
 * reads them.  SIGUSR1 restarts it now (SIGTERM to it, then a start at once); SIGHUP is passed
 * on (a reload); SIGTERM or SIGINT stops it (SIGTERM) and then this program, which closes the
 * store, as `systemctl stop` empties it.  A child that ends five times in a row before it
 * said READY=1 is not started again: exit 1.
 *
 * Exit status: the stopped child's (0 when it exited 0), 1 on a failure, 2 bad usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FDS_START 3
#define NAME_MAX_LEN 255   /* systemd's limit for FDNAME= */
#define MAX_FDS_PER_MSG 253 /* SCM_MAX_FD */
#define MAX_EARLY_EXITS 5

struct stored {
        int fd;
        char name[NAME_MAX_LEN + 1];
};

static struct stored *store;
static unsigned nstore, store_max = 65536;
static unsigned restart_delay_ms = 100;
static bool verbose;
static char notify_dir[64], notify_path[96];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
        va_list ap;

        fputs("socknotify-supervise: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: socknotify-supervise [OPTION]... [--] PROGRAM [ARG]...\n"
                "Run PROGRAM (socknotifyd) as a child, keep the descriptors it stores (sd_notify\n"
                "FDSTORE=1) and start it again with them whenever it ends.\n"
                "\n"
                "      --fdstore-max=N       descriptors kept at most (default 65536)\n"
                "      --restart-delay=MS    wait before a start again (default 100)\n"
                "  -v, --verbose             log every notification of the child\n"
                "  -h, --help                show this help and exit\n"
                "  -V, --version             show the version and exit\n"
                "\n"
                "Signals: SIGUSR1 restarts the child now, SIGHUP is passed on, SIGTERM and SIGINT\n"
                "stop the child and then this program.  See socknotify-supervise(1).\n");
}

/* systemd's rule for FDNAME=: 1 to 255 printable ASCII characters, no ':'. */
static bool good_name(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > NAME_MAX_LEN)
                return false;
        for (; *s; s++)
                if (*s < 0x21 || *s > 0x7e || *s == ':')
                        return false;
        return true;
}

/* The value of field key ("FDNAME=") in the newline-separated text, or NULL. */
static const char *field(const char *text, const char *key, char *out, size_t outsz)
{
        size_t k = strlen(key);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (!strncmp(p, key, k)) {
                        size_t n = strcspn(p + k, "\n");

                        if (n >= outsz)
                                n = outsz - 1;
                        memcpy(out, p + k, n);
                        out[n] = 0;
                        return out;
                }
        return NULL;
}

/* Whether the text holds the line "line" exactly. */
static bool has_line(const char *text, const char *line)
{
        size_t k = strlen(line);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (!strncmp(p, line, k) && (p[k] == '\n' || p[k] == 0))
                        return true;
        return false;
}

static void store_remove(const char *name)
{
        unsigned closed = 0;

        for (unsigned i = 0; i < nstore;) {
                if (!strcmp(store[i].name, name)) {
                        close(store[i].fd);
                        store[i] = store[--nstore];
                        closed++;
                } else {
                        i++;
                }
        }
        if (verbose)
                say("removed %u descriptor(s) named %s", closed, name);
}

/* Keeps fds under name; each one taken is set to -1 in fds. */
static void store_add(int *fds, unsigned nfds, const char *name)
{
        unsigned refused = 0;

        for (unsigned i = 0; i < nfds; i++) {
                if (nstore >= store_max) {
                        refused++;
                        continue;
                }
                store[nstore].fd = fds[i];
                snprintf(store[nstore].name, sizeof(store[nstore].name), "%s", name);
                nstore++;
                fds[i] = -1;
        }
        if (refused)
                say("the store is full (%u): %u descriptor(s) named %s closed", store_max,
                    refused, name);
}

/* Reads and handles one notification datagram.  *ready is set on READY=1. */
static void notify_read(int sock, pid_t child, bool *ready)
{
        char text[4096], name[NAME_MAX_LEN + 2], status[256];
        char cbuf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * MAX_FDS_PER_MSG)];
        struct iovec iov = { text, sizeof(text) - 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                             .msg_controllen = sizeof(cbuf) };
        struct ucred cred = { .pid = 0 };
        int fds[MAX_FDS_PER_MSG];
        unsigned nfds = 0;
        ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

        if (n < 0)
                return;
        text[n] = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET)
                        continue;
                if (c->cmsg_type == SCM_RIGHTS) {
                        unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                        if (k > MAX_FDS_PER_MSG - nfds)
                                k = MAX_FDS_PER_MSG - nfds;
                        memcpy(fds + nfds, CMSG_DATA(c), k * sizeof(int));
                        nfds += k;
                } else if (c->cmsg_type == SCM_CREDENTIALS &&
                           c->cmsg_len >= CMSG_LEN(sizeof(cred))) {
                        memcpy(&cred, CMSG_DATA(c), sizeof(cred));
                }
        }
        if (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) {
                say("a notification was cut short (%s): ignored",
                    mh.msg_flags & MSG_TRUNC ? "text" : "descriptors");
        } else if (child <= 0 || cred.pid != child) {
                /* NotifyAccess=main: another process may not fill or empty the store. */
                if (verbose)
                        say("a notification of pid %d, not the child's: ignored", (int)cred.pid);
        } else if (has_line(text, "FDSTORE=1")) {
                if (!field(text, "FDNAME=", name, sizeof(name)))
                        snprintf(name, sizeof(name), "stored");
                if (!good_name(name))
                        say("FDSTORE=1 with a bad FDNAME=: %u descriptor(s) closed", nfds);
                else
                        store_add(fds, nfds, name);
                if (verbose)
                        say("stored %u descriptor(s) named %s (%u kept)", nfds, name, nstore);
        } else if (has_line(text, "FDSTOREREMOVE=1")) {
                if (field(text, "FDNAME=", name, sizeof(name)) && good_name(name))
                        store_remove(name);
        }
        if (child > 0 && cred.pid == child && !(mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
                if (has_line(text, "READY=1")) {
                        *ready = true;
                        if (verbose)
                                say("the child is ready");
                }
                if (verbose && field(text, "STATUS=", status, sizeof(status)))
                        say("status: %s", status);
                if (verbose && has_line(text, "STOPPING=1"))
                        say("the child is stopping");
                if (verbose && has_line(text, "RELOADING=1"))
                        say("the child is reloading");
        }
        /* What was not kept is closed: BARRIER=1 is answered so. */
        for (unsigned i = 0; i < nfds; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

/* In the child: the kept descriptors at 3, 4, ... with the LISTEN_* variables, then exec. */
static void child_exec(char **argv, const sigset_t *oldmask)
{
        char value[32];
        size_t len = 1;
        char *names;

        prctl(PR_SET_PDEATHSIG, SIGTERM);
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        for (unsigned i = 0; i < nstore; i++)
                len += strlen(store[i].name) + 1;
        names = malloc(len);
        if (!names)
                _exit(1);
        names[0] = 0;
        /* Out of the way first: a kept descriptor may sit where another one must go. */
        for (unsigned i = 0; i < nstore; i++) {
                int fd = fcntl(store[i].fd, F_DUPFD_CLOEXEC, (int)(FDS_START + nstore));

                if (fd < 0)
                        _exit(1);
                store[i].fd = fd;
        }
        for (unsigned i = 0; i < nstore; i++) {
                /* dup2 leaves close-on-exec off: these are the child's to keep. */
                if (dup2(store[i].fd, (int)(FDS_START + i)) < 0)
                        _exit(1);
                if (i)
                        strcat(names, ":");
                strcat(names, store[i].name);
        }
        setenv("NOTIFY_SOCKET", notify_path, 1);
        snprintf(value, sizeof(value), "%u", store_max);
        setenv("FDSTORE", value, 1);
        if (nstore) {
                snprintf(value, sizeof(value), "%u", nstore);
                setenv("LISTEN_FDS", value, 1);
                setenv("LISTEN_FDNAMES", names, 1);
                snprintf(value, sizeof(value), "%d", (int)getpid());
                setenv("LISTEN_PID", value, 1);
        } else {
                unsetenv("LISTEN_FDS");
                unsetenv("LISTEN_FDNAMES");
                unsetenv("LISTEN_PID");
        }
        execvp(argv[0], argv);
        fprintf(stderr, "socknotify-supervise: %s: %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
}

static pid_t child_start(char **argv, const sigset_t *oldmask)
{
        pid_t pid = fork();

        if (pid < 0) {
                say("fork: %s", strerror(errno));
                return -1;
        }
        if (pid == 0)
                child_exec(argv, oldmask);
        say("started %s (pid %d) with %u kept descriptor(s)", argv[0], (int)pid, nstore);
        return pid;
}

static int notify_open(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *tmp = getenv("TMPDIR");
        int one = 1, s;

        snprintf(notify_dir, sizeof(notify_dir), "%s/socknotify-supervise.XXXXXX",
                 tmp && *tmp && strlen(tmp) < 24 ? tmp : "/tmp");
        if (!mkdtemp(notify_dir)) {
                say("%s: %s", notify_dir, strerror(errno));
                return -1;
        }
        snprintf(notify_path, sizeof(notify_path), "%s/notify", notify_dir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify_path);
        s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            setsockopt(s, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
                say("%s: %s", notify_path, strerror(errno));
                if (s >= 0)
                        close(s);
                rmdir(notify_dir);
                return -1;
        }
        return s;
}

static bool parse_uint(const char *s, unsigned max, unsigned *ret)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || v > max)
                return false;
        *ret = (unsigned)v;
        return true;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
                { "fdstore-max", required_argument, NULL, 'm' },
                { "restart-delay", required_argument, NULL, 'd' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { 0 },
        };
        struct rlimit rl;
        sigset_t mask, oldmask;
        bool ready = false, stopping = false, restart_now = false;
        unsigned early = 0;
        long long restart_at = -1;
        int c, sock, sfd, rc = 0;
        pid_t child;

        /* Blocked from the start, read from the signalfd: a SIGTERM sent as soon as this
         * process exists still stops the child it is about to start. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGUSR1);
        sigprocmask(SIG_BLOCK, &mask, &oldmask);
        while ((c = getopt_long(argc, argv, "+vhV", options, NULL)) >= 0) {
                switch (c) {
                case 'm':
                        if (!parse_uint(optarg, 1u << 20, &store_max) || !store_max) {
                                say("--fdstore-max: a number from 1 to %u", 1u << 20);
                                return 2;
                        }
                        break;
                case 'd':
                        if (!parse_uint(optarg, 3600000, &restart_delay_ms)) {
                                say("--restart-delay: milliseconds, at most 3600000");
                                return 2;
                        }
                        break;
                case 'v':
                        verbose = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("socknotify-supervise %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        argv += optind;
        /* The store holds up to store_max descriptors besides our own few. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        store = calloc(store_max, sizeof(*store));
        if (!store) {
                say("out of memory");
                return 1;
        }
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        sock = notify_open();
        if (sfd < 0 || sock < 0) {
                if (sfd < 0)
                        say("signalfd: %s", strerror(errno));
                return 1;
        }
        child = child_start(argv, &oldmask);
        if (child < 0)
                rc = 1;
        while (child > 0 || restart_at >= 0) {
                struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
                                       { .fd = sfd, .events = POLLIN } };
                struct timespec ts;
                long long now;
                int timeout = -1;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
                if (restart_at >= 0) {
                        if (now >= restart_at) {
                                restart_at = -1;
                                ready = false;
                                child = child_start(argv, &oldmask);
                                if (child < 0) {
                                        rc = 1;
                                        break;
                                }
                                continue;
                        }
                        timeout = (int)(restart_at - now);
                }
                if (poll(p, 2, timeout) < 0 && errno != EINTR) {
                        say("poll: %s", strerror(errno));
                        rc = 1;
                        break;
                }
                if (p[0].revents & POLLIN)
                        notify_read(sock, child, &ready);
                if (!(p[1].revents & POLLIN))
                        continue;
                for (;;) {
                        struct signalfd_siginfo si;
                        int st;

                        if (read(sfd, &si, sizeof(si)) != sizeof(si))
                                break;
                        switch (si.ssi_signo) {
                        case SIGTERM:
                        case SIGINT:
                                stopping = true;
                                restart_at = -1;
                                if (child > 0)
                                        kill(child, SIGTERM);
                                break;
                        case SIGHUP:
                                if (child > 0)
                                        kill(child, SIGHUP);
                                break;
                        case SIGUSR1:
                                if (child > 0 && !stopping) {
                                        restart_now = true;
                                        kill(child, SIGTERM);
                                }
                                break;
                        case SIGCHLD:
                                if (child <= 0 || waitpid(child, &st, WNOHANG) != child)
                                        break;
                                /* Notifications it sent before it ended are read first: what
                                 * it stored last must be passed to the next one. */
                                while (poll(p, 1, 0) == 1 && p[0].revents & POLLIN)
                                        notify_read(sock, child, &ready);
                                child = 0;
                                if (WIFEXITED(st))
                                        say("the child exited with status %d", WEXITSTATUS(st));
                                else
                                        say("the child was killed by signal %d (%s)",
                                            WTERMSIG(st), strsignal(WTERMSIG(st)));
                                if (stopping) {
                                        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
                                        break;
                                }
                                early = ready || restart_now ? 0 : early + 1;
                                if (early >= MAX_EARLY_EXITS) {
                                        say("the child ended %u times before it was ready: "
                                            "not started again",
                                            early);
                                        rc = 1;
                                        break;
                                }
                                clock_gettime(CLOCK_MONOTONIC, &ts);
                                restart_at = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 +
                                             (restart_now ? 0 : restart_delay_ms);
                                restart_now = false;
                                break;
                        }
                }
        }
        for (unsigned i = 0; i < nstore; i++)
                close(store[i].fd);
        free(store);
        close(sfd);
        close(sock);
        unlink(notify_path);
        rmdir(notify_dir);
        return rc;
}

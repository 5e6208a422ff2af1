/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotify-handoff - keep a program's listening sockets in socknotifyd between its runs.
 *
 * Started by a service manager with sockets (LISTEN_FDS, LISTEN_PID = our pid), it parks them
 * on a lingering named port and execs the program with the same descriptors and environment.
 * Started without them, it takes the sockets back from the port, puts them at 3, 4, ... in key
 * order (the order they were passed in), sets LISTEN_FDS and LISTEN_PID as a service manager
 * does, and execs the program.
 *
 * Each socket is parked in a capsule: a Unix datagram socket whose receive queue holds one
 * message carrying the socket (SCM_RIGHTS), registered on the port (key CAPSULE_KEY | index)
 * in place of the socket itself.  The daemon's copy of the capsule keeps the socket open, in
 * flight, for as long as the port keeps the capsule; the socket itself is registered nowhere,
 * so the program may register it on a port of its own (a socket is on one port at most: the
 * program of a parked listener got EEXIST).  A take peeks the message (MSG_PEEK: the kernel
 * hands out new descriptors and leaves the message queued), so the capsule still holds the
 * socket while the program runs.  Sockets parked plainly (by sn_listen_fds_park(), or by an
 * earlier version of this tool) are put in capsules by the take.
 *
 * The tool's connection to the daemon is not closed before the exec: its socket stays open in
 * the program (the first free descriptor from 3 + LISTEN_FDS on), so the port is held, and
 * does not count its linger time, while the program runs, however long; when the program ends,
 * even killed, the kernel closes that socket, the capsules become ownerless, the port lingers,
 * and the next run finds them.
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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
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
/* A capsule's key: this bit and the index of its socket.  sn_listen_fds_park() keys a plain
 * parked socket by its index alone. */
#define CAPSULE_KEY UINT64_C(0x8000000000000000)
/* What a capsule's message says (its bytes; the socket travels beside them). */
#define CAPSULE_TAG "socknotify-handoff capsule 1"
/* How long a run waits for another process to let go of the port: the run before, killed a
 * moment ago, may not have been seen ending by the daemon yet. */
#define HOLDERS_WAIT_MS 5000

static const char *opt_socket, *opt_name;
static uint32_t opt_linger = DEFAULT_LINGER_MS;
static bool opt_linger_set, opt_verbose;

/* What die() releases: the connection, the port handle in use, the descriptor array. */
static sn_conn_t *g_conn;
static sn_port_t *g_port;
static int *g_fds;
/* The socket of g_conn (found by connect_daemon()), which the program inherits. */
static int g_conn_fd = -1;

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
                "PROGRAM may register them with socknotify itself.  The port is held while\n"
                "PROGRAM runs (it inherits this tool's connection) and lingers when it ends.\n"
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

/* Whether descriptor fd is a Unix SOCK_SEQPACKET socket: what sn_conn_open() connects. */
static bool is_seqpacket(int fd)
{
        int type = 0, domain = 0;
        socklen_t len = sizeof(type);

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return false;
        len = sizeof(domain);
        return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX &&
               type == SOCK_SEQPACKET;
}

/* Calls fn(fd, arg) for each open descriptor but the listing's own (/proc/self/fd); returns 0
 * or -errno. */
static int each_fd(void (*fn)(int fd, void *arg), void *arg)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;

        if (!d)
                return -errno;
        while ((e = readdir(d))) {
                unsigned long v;

                if (parse_uint(e->d_name, INT_MAX, &v) && (int)v != dirfd(d))
                        fn((int)v, arg);
        }
        closedir(d);
        return 0;
}

struct fd_set_list {
        int *fds;
        size_t n, cap;
        bool failed;
};

static void note_fd(int fd, void *arg)
{
        struct fd_set_list *l = arg;

        if (l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 64;
                int *f = realloc(l->fds, cap * sizeof(*f));

                if (!f) {
                        l->failed = true;
                        return;
                }
                l->fds = f;
                l->cap = cap;
        }
        l->fds[l->n++] = fd;
}

struct new_socket {
        const struct fd_set_list *before;
        int found, count;
};

static void find_new_socket(int fd, void *arg)
{
        struct new_socket *ns = arg;

        for (size_t i = 0; i < ns->before->n; i++)
                if (ns->before->fds[i] == fd)
                        return;
        if (is_seqpacket(fd)) {
                ns->found = fd;
                ns->count++;
        }
}

/*
 * Connects to the daemon on the socket transport (SOCKNOTIFY_NO_SHM for this connection only:
 * after the exec nobody maps a ring) and finds the connection's socket: the one Unix
 * SOCK_SEQPACKET descriptor sn_conn_open() added (the library does not hand it out).  g_conn_fd
 * stays -1 when it cannot be told, and then the port lingers from the exec on (see
 * hold_for_program()).  Exits when no daemon is reachable.
 */
static sn_conn_t *connect_daemon(void)
{
        const char *no_shm = getenv("SOCKNOTIFY_NO_SHM");
        char *saved = no_shm ? strdup(no_shm) : NULL;
        struct fd_set_list before = { 0 };
        struct new_socket ns = { .before = &before, .found = -1 };
        sn_conn_t *c;
        int r;

        if ((no_shm && !saved) || each_fd(note_fd, &before) < 0 || before.failed)
                before.failed = true;
        setenv("SOCKNOTIFY_NO_SHM", "1", 1);
        r = sn_conn_open(opt_socket, &c);
        if (saved)
                setenv("SOCKNOTIFY_NO_SHM", saved, 1);
        else
                unsetenv("SOCKNOTIFY_NO_SHM");
        free(saved);
        if (r == 0) {
                if (!before.failed && each_fd(find_new_socket, &ns) == 0 && ns.count == 1)
                        g_conn_fd = ns.found;
                free(before.fds);
                return g_conn = c;
        }
        free(before.fds);
        /* sn_conn_open_error() names the paths tried and what to do. */
        fprintf(stderr, "socknotify-handoff: cannot talk to socknotifyd: %s\n",
                *sn_conn_open_error() ? sn_conn_open_error() : sn_strerror(r));
        exit(EXIT_NODAEMON);
}

/*
 * Keeps the connection, and with it the port handle and the registrations it holds, open in
 * the program: its socket moves to the first free descriptor from first_free on (above the
 * program's sockets), without close-on-exec.  The library's own descriptor of it goes with
 * the exec (or with the moves that follow).  Without the socket (not found) the connection
 * ends with the exec, as before: the port then lingers from the exec, not from the program's
 * end, which is said on stderr.
 */
static void hold_for_program(int first_free)
{
        int fd;

        if (g_conn_fd < 0) {
                fprintf(stderr, "socknotify-handoff: the connection's socket was not found: port "
                        "%s lingers from now on, not from the end of the program\n", opt_name);
                return;
        }
        fd = fcntl(g_conn_fd, F_DUPFD, first_free);
        if (fd < 0)
                die(EXIT_FAILED, "keep the connection: %s", strerror(errno));
        g_conn_fd = fd;
}

/* Names the held connection's descriptor to the program (SOCKNOTIFY_HANDOFF_FD), so that it
 * can keep it from its own children (FD_CLOEXEC): a child that outlives the program would
 * hold the port, and the next activated run would find it held.  Unset when none is held. */
static void name_held_fd(void)
{
        char buf[16];

        if (g_conn_fd < 0) {
                unsetenv("SOCKNOTIFY_HANDOFF_FD");
                return;
        }
        snprintf(buf, sizeof(buf), "%d", g_conn_fd);
        if (setenv("SOCKNOTIFY_HANDOFF_FD", buf, 1) < 0)
                die(EXIT_FAILED, "setenv: %s", strerror(errno));
}

/* Sleeps ms milliseconds (a wait for another process, see HOLDERS_WAIT_MS). */
static void pause_ms(long ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
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

/* ---- capsules ------------------------------------------------------------------------- */

/* Makes a capsule holding socket fd (which stays the caller's): *ret is a Unix datagram socket
 * (close-on-exec) with one message queued, CAPSULE_TAG and fd.  Returns 0 or -errno. */
static int capsule_make(int fd, int *ret)
{
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u;
        struct iovec iov = { .iov_base = (void *)CAPSULE_TAG, .iov_len = sizeof(CAPSULE_TAG) - 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                            .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *cm;
        int sv[2], r = 0;

        memset(&u, 0, sizeof(u));
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        if (sendmsg(sv[0], &m, MSG_NOSIGNAL) < 0)
                r = -errno; /* ETOOMANYREFS: this user has too many descriptors in flight */
        close(sv[0]); /* the message stays queued on sv[1] */
        if (r < 0) {
                close(sv[1]);
                return r;
        }
        *ret = sv[1];
        return 0;
}

/* The socket a capsule holds, as a new descriptor (close-on-exec) in *ret, leaving it held
 * (MSG_PEEK).  The capsule comes from a port anyone of this user may reach: it is checked, not
 * trusted.  Returns 0, or -EBADMSG (not a capsule of this tool) or -errno. */
static int capsule_open(int capsule, int *ret)
{
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(2 * sizeof(int))];
        } u;
        char tag[sizeof(CAPSULE_TAG) + 1];
        struct iovec iov = { .iov_base = tag, .iov_len = sizeof(tag) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                            .msg_controllen = sizeof(u.buf) };
        int fds[2], nfds = 0, r = 0;
        struct cmsghdr *cm;
        struct stat st;
        ssize_t got;

        got = recvmsg(capsule, &m, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (got < 0)
                return errno == EAGAIN ? -EBADMSG : -errno;
        for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                        for (size_t i = 0; i < k; i++) {
                                int fd;

                                memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                                if (nfds < 2)
                                        fds[nfds++] = fd;
                                else
                                        close(fd);
                        }
                }
        if ((m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || nfds != 1 ||
            got != (ssize_t)sizeof(CAPSULE_TAG) - 1 || memcmp(tag, CAPSULE_TAG, (size_t)got) ||
            fstat(fds[0], &st) < 0 || !S_ISSOCK(st.st_mode))
                r = -EBADMSG;
        if (r < 0) {
                for (int i = 0; i < nfds; i++)
                        close(fds[i]);
                return r;
        }
        *ret = fds[0];
        return 0;
}

/* Registers capsules caps[0..n) on port with keys CAPSULE_KEY | keys[i] (one-shot, for input:
 * nobody dequeues them).  Returns 0 or the first error (an item's or the call's); some may be
 * registered then. */
static int capsules_register(sn_port_t *port, const int *caps, const uint64_t *keys, int n)
{
        sn_registration_t *regs = calloc((size_t)n, sizeof(*regs));
        int r;

        if (!regs)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                regs[i] = (sn_registration_t){ .fd = caps[i], .op = SN_OP_ENABLE,
                                               .filter = SN_REGISTER_EVENT_IN,
                                               .trigger = SN_TRIGGER_ONESHOT | SN_TRIGGER_LEVEL,
                                               .key = CAPSULE_KEY | keys[i] };
        r = sn_port_process(port, regs, (uint32_t)n, NULL, 0, 0);
        for (int i = 0; r >= 0 && i < n; i++)
                if (regs[i].result < 0)
                        r = regs[i].result;
        free(regs);
        return r > 0 ? 0 : r;
}

/* ---- taking what a port holds ------------------------------------------------------------ */

struct taken_list {
        sn_taken_socket_t *t;
        uint32_t n, cap;
};

static void taken_free(struct taken_list *l)
{
        for (uint32_t i = 0; i < l->n; i++)
                if (l->t[i].fd >= 0)
                        close(l->t[i].fd);
        free(l->t);
        *l = (struct taken_list){ 0 };
}

/* Takes every ownerless registration of port into l (appended).  When none is left to take but
 * other processes hold the port (info->holders), it looks again, every 10 ms for up to
 * HOLDERS_WAIT_MS (until_free) or only while nothing was taken (!until_free): a run that has
 * just ended, even killed, may not have been seen ending by the daemon yet, and its
 * registrations become ownerless once it is.  Exits on errors. */
static void take_all(sn_port_t *port, struct taken_list *l, bool until_free,
                     sn_take_info_t *info)
{
        for (long waited = 0;; waited += 10) {
                int r;

                for (;;) {
                        if (l->n == l->cap) {
                                uint32_t cap = l->cap ? 2 * l->cap : 16;
                                sn_taken_socket_t *t = realloc(l->t, cap * sizeof(*t));

                                if (!t)
                                        die(EXIT_FAILED, "%s", strerror(ENOMEM));
                                l->t = t;
                                l->cap = cap;
                        }
                        for (uint32_t i = l->n; i < l->cap; i++)
                                l->t[i].fd = -1;
                        r = sn_port_take_sockets(port, l->t + l->n, l->cap - l->n, info);
                        if (r < 0)
                                fail("take the parked sockets", r);
                        l->n += (uint32_t)r;
                        for (uint32_t i = l->n - (uint32_t)r; i < l->n; i++)
                                if (l->t[i].fd < 0)
                                        fail("take the parked sockets", -EMFILE);
                        if (r == 0 || info->remaining == 0)
                                break;
                }
                if (info->holders == 0 || (!until_free && l->n > 0) || waited >= HOLDERS_WAIT_MS)
                        return;
                pause_ms(10);
        }
}

static int taken_cmp(const void *a, const void *b)
{
        const sn_taken_socket_t *x = a, *y = b;

        return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * The port exists although sockets were passed: an earlier run parked its sockets there.
 * Drops them from the daemon (sn_socket_close: registration and daemon copy; a capsule's
 * socket goes with the capsule, and a socket that is also one of ours stays open through our
 * descriptor) and closes the port for good (linger 0) so that the name is free to park again.
 * Refuses when another process holds the port (after HOLDERS_WAIT_MS for a run that has just
 * ended): that is a running instance, not a leftover.
 */
static void replace_parked(sn_conn_t *c)
{
        struct taken_list l = { 0 };
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
        take_all(port, &l, true, &info);
        if (info.holders > 0) {
                /* Ours: ownerless again when this connection ends (the port lingers). */
                taken_free(&l);
                die(EXIT_FAILED,
                    "port %s exists and %u other process(es) hold it open: "
                    "another instance is running; not replacing its sockets",
                    opt_name, info.holders);
        }
        for (uint32_t i = 0; i < l.n; i++) {
                if (sn_socket_close(c, l.t[i].fd) == 0)
                        dropped++;
                l.t[i].fd = -1;
        }
        taken_free(&l);
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

/* Parks the sockets passed to this process, each in a capsule, on a new port (all or none),
 * and keeps the connection for the program; returns how many, or -ENOENT when none were passed
 * (LISTEN_FDS=0); exits on every other error. */
static int park(void)
{
        sn_port_options_t opt = { .linger_ms = opt_linger };
        uint64_t *keys;
        sn_port_t *port;
        sn_conn_t *c;
        int *caps, n, r;

        n = check_listen_fds();
        if (n == 0)
                return -ENOENT; /* as sd_listen_fds(3) sees it: nothing was passed */
        c = connect_daemon();
        g_fds = caps = calloc((size_t)n, sizeof(*caps));
        keys = calloc((size_t)n, sizeof(*keys));
        if (!caps || !keys)
                die(EXIT_FAILED, "%s", strerror(ENOMEM));
        for (int i = 0; i < n; i++)
                caps[i] = -1;
        for (int i = 0; i < n; i++) {
                r = capsule_make(LISTEN_FDS_START + i, &caps[i]);
                if (r < 0)
                        die(EXIT_FAILED, "park the sockets: descriptor %d: %s",
                            LISTEN_FDS_START + i, strerror(-r));
                keys[i] = (uint64_t)i;
        }

        r = sn_port_create_named_ex(c, opt_name, &opt, &port);
        if (r == -EEXIST) {
                replace_parked(c);
                r = sn_port_create_named_ex(c, opt_name, &opt, &port);
        }
        if (r == -EEXIST)
                die(EXIT_FAILED, "park the sockets: %s: port %s exists still (another instance "
                    "starting?)", sn_strerror(r), opt_name);
        if (r < 0)
                fail("park the sockets", r);
        g_port = port;
        r = capsules_register(port, caps, keys, n);
        if (r < 0) {
                /* All or nothing: with linger 0 the close drops what was registered. */
                (void)sn_port_set_linger(port, 0);
                fail("park the sockets", r);
        }
        for (int i = 0; i < n; i++)
                close(caps[i]); /* the daemon holds its copies */
        g_fds = NULL;
        free(caps);
        free(keys);
        if (opt_verbose)
                fprintf(stderr, "socknotify-handoff: parked %d socket(s) on port %s "
                        "(linger %u ms)\n", n, opt_name, opt_linger);
        /* Our descriptors, LISTEN_FDS, LISTEN_PID (ours, so the program's after exec) and
         * LISTEN_FDNAMES go to the program unchanged; the port stays held by the connection
         * the program inherits. */
        hold_for_program(LISTEN_FDS_START + n);
        g_port = NULL;
        g_conn = NULL;
        return n;
}

/* Puts fds[0..n) at LISTEN_FDS_START.. without close-on-exec, whatever numbers they have and
 * whatever holds those numbers now (never g_conn_fd, which is moved above them first). */
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

/* The socket of taken registration t (its descriptor consumed) as a new descriptor of ours.
 * A capsule gives the socket it holds and stays registered.  A socket parked plainly is put in
 * a capsule registered in its place, then its own registration is dropped, so that the program
 * can register it; if that fails it stays parked as it was (the program may then not register
 * it: said on stderr).  Exits on errors. */
static int taken_socket(sn_conn_t *c, sn_port_t *port, sn_taken_socket_t *t)
{
        int fd = -1, cap = -1, r;

        if (t->key & CAPSULE_KEY) {
                r = capsule_open(t->fd, &fd);
                if (r < 0)
                        die(EXIT_FAILED, "port %s holds a socket with key %#llx that is not a "
                            "socket parked by socknotify-handoff: %s", opt_name,
                            (unsigned long long)t->key, strerror(-r));
                close(t->fd);
                t->fd = -1;
                return fd;
        }
        fd = fcntl(t->fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
                die(EXIT_FAILED, "take the parked sockets: %s", strerror(errno));
        r = capsule_make(t->fd, &cap);
        if (r == 0) {
                r = capsules_register(port, &cap, &t->key, 1);
                close(cap);
        }
        if (r < 0) {
                fprintf(stderr, "socknotify-handoff: the socket with key %llu stays parked "
                        "plainly (%s): the program cannot register it itself\n",
                        (unsigned long long)t->key, sn_strerror(r));
                close(t->fd);
        } else {
                (void)sn_socket_close(c, t->fd); /* the capsule holds it now */
        }
        t->fd = -1;
        return fd;
}

/* Takes the sockets back, moves them to 3.. and sets LISTEN_FDS and LISTEN_PID; keeps the
 * connection for the program; returns how many; exits on every error. */
static int take(void)
{
        sn_conn_t *c = connect_daemon();
        struct taken_list l = { 0 };
        sn_take_info_t info;
        sn_port_t *port;
        char buf[32];
        int *fds, n, r;

        r = sn_port_open(c, opt_name, &port);
        if (r == -ENOENT)
                die(EXIT_NOTHING, "no port %s: nothing is parked under that name (start the "
                    "program once with socket activation; or the port's linger time ran out)",
                    opt_name);
        if (r < 0)
                fail("take the parked sockets", r);
        g_port = port;
        take_all(port, &l, false, &info);
        if (l.n == 0)
                die(EXIT_NOTHING, "port %s has no parked sockets (another instance may hold "
                    "them)", opt_name);
        if (l.n > INT_MAX - LISTEN_FDS_START)
                die(EXIT_FAILED, "port %s holds too many sockets", opt_name);
        n = (int)l.n;
        qsort(l.t, l.n, sizeof(*l.t), taken_cmp);
        g_fds = fds = calloc((size_t)n, sizeof(*fds));
        if (!fds)
                die(EXIT_FAILED, "%s", strerror(ENOMEM));
        for (int i = 0; i < n; i++)
                fds[i] = taken_socket(c, port, &l.t[i]);
        taken_free(&l);
        if (opt_linger_set) {
                r = sn_port_set_linger(port, opt_linger);
                if (r < 0)
                        fail("set the port's linger time", r); /* the sockets stay parked */
        }
        if (opt_verbose)
                fprintf(stderr, "socknotify-handoff: took %d socket(s) back from port %s\n", n,
                        opt_name);
        /* The connection, its port handle and the capsules it took stay the program's; the
         * library's descriptors are not used again (a move may take their numbers). */
        hold_for_program(LISTEN_FDS_START + n);
        g_port = NULL;
        g_conn = NULL;
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
        name_held_fd();
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

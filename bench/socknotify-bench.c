/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * socknotify-bench - what routing notifications through socknotifyd costs, against doing the
 * same work in-process with epoll (the baseline), measured in the same run.
 *
 * Each workload runs through socknotify and through its baseline alternately, several rounds,
 * and the median of each side is kept.  One JSON line per workload goes to stdout:
 *   {"workload": NAME, "unit": UNIT, "socknotify": X, "baseline": Y, "ratio": R,
 *    "target": T, "met": true|false, ...}
 * and a table to stderr.  Never run by make check: timings are not tests.
 *
 *   socknotify-bench [--quick | --smoke] [--only NAME] [--socket PATH] [--csv-dir DIR]
 *
 * --smoke runs every workload once, briefly, and judges no target ("met": null): it proves
 * that the benchmark still runs (CI runs it), not how fast anything is.  Any failure exits 1
 * with the error actually returned.
 *
 * Without --socket it starts daemon/socknotifyd of the build tree on a private socket, with a
 * per-user socket quota as large as the descriptor limit (the daemon's default, half its
 * descriptor capacity, would refuse the scale and memory workloads).  Those two workloads size
 * themselves to the descriptor limit: up to 15,000 idle sockets, fewer on a smaller limit.
 * --csv-dir writes the latency samples and the delivery rate per batch size for the plots
 * (bench/plot.sh).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "socknotify.h"
#include "socknotify/winsock.h"

static bool quick;
static bool smoke;
static int idle_max; /* sockets the scale and memory workloads may open (fd limit) */
static const char *only;
static const char *csv_dir;
static char sock_path[256];
static pid_t daemon_pid;
static int rounds;
static double seconds_per_run;

#define SN_BENCH_MIN(a, b) ((a) < (b) ? (a) : (b))

/* ---- utilities ------------------------------------------------------------------------------ */

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
        int e = err < 0 ? -err : err;
        const char *name = strerrorname_np(e);

        fprintf(stderr, "socknotify-bench: %s: %s (%s)\n", what,
                err < 0 ? sn_strerror(err) : strerror(err), name ? name : "?");
        exit(1);
}

/* For the Win32 calls: their own error code, as returned or from GetLastError(). */
static void die_win32(const char *what, unsigned long code)
{
        fprintf(stderr, "socknotify-bench: %s: Win32 error %lu\n", what, code);
        exit(1);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bool selected(const char *name)
{
        return !only || !strcmp(only, name) || (!strncmp(only, name, strlen(only)) &&
                                                 name[strlen(only)] == '_');
}

/* Reports one workload: JSON on stdout, a row on stderr.  higher: ratio = x/y (rates),
 * otherwise ratio = x/y too but the target is a maximum (times, bytes). */
static void report(const char *name, const char *unit, double x, double y, double target,
                   bool higher_is_better, const char *extra)
{
        double ratio = x / y;
        bool met = higher_is_better ? ratio >= target : ratio <= target;

        printf("{\"workload\": \"%s\", \"unit\": \"%s\", \"socknotify\": %.6g, \"baseline\": %.6g, "
               "\"ratio\": %.3f, \"target\": %.2f, \"met\": %s%s%s%s}\n",
               name, unit, x, y, ratio, target, smoke ? "null" : met ? "true" : "false",
               smoke ? ", \"smoke\": true" : "", extra ? ", " : "", extra ? extra : "");
        fflush(stdout);
        fprintf(stderr, "%-18s %14.6g %14.6g %-12s ratio %6.3f  target %s%.2f  %s\n", name, x, y,
                unit, ratio, higher_is_better ? ">=" : "<=", target,
                smoke ? "(smoke: not judged)" : met ? "met" : "MISSED");
}

/* ---- a service manager's descriptor store, for registration_store -------------------------- */

/* What systemd does with FDSTORE=1 / FDSTOREREMOVE=1 messages, on a thread of its own (systemd
 * is another process on another core): keeps the descriptors by name, closes them on removal,
 * answers BARRIER=1 by closing its descriptor. */
static struct {
        int sock;
        char path[108];
        int fds[4096];
        char names[4096][48];
        unsigned n;
        unsigned long messages;
} store;

static void *store_loop(void *arg)
{
        (void)arg;
        for (;;) {
                char text[1024], cbuf[CMSG_SPACE(sizeof(int) * 16)];
                struct iovec iov = { text, sizeof(text) - 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                     .msg_controllen = sizeof(cbuf) };
                ssize_t len = recvmsg(store.sock, &mh, MSG_CMSG_CLOEXEC);
                const char *name;
                int fds[16];
                unsigned nfds = 0;

                if (len < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;
                }
                text[len] = 0;
                store.messages++;
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                                unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                                memcpy(fds + nfds, CMSG_DATA(cm), k * sizeof(int));
                                nfds += k;
                        }
                name = strstr(text, "FDNAME=");
                name = name ? name + 7 : "";
                if (strstr(text, "FDSTORE=1")) {
                        for (unsigned i = 0; i < nfds && store.n < 4096; i++) {
                                store.fds[store.n] = fds[i];
                                snprintf(store.names[store.n++], sizeof(store.names[0]), "%.*s",
                                         (int)strcspn(name, "\n"), name);
                        }
                        continue;
                }
                if (strstr(text, "FDSTOREREMOVE=1")) {
                        size_t k = strcspn(name, "\n");

                        for (unsigned i = 0; i < store.n;) {
                                if (strncmp(store.names[i], name, k) || store.names[i][k]) {
                                        i++;
                                        continue;
                                }
                                close(store.fds[i]);
                                store.fds[i] = store.fds[--store.n];
                                memcpy(store.names[i], store.names[store.n],
                                       sizeof(store.names[0]));
                        }
                }
                for (unsigned i = 0; i < nfds; i++)
                        close(fds[i]);
        }
}

static void store_start(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        pthread_t th;

        snprintf(store.path, sizeof(store.path), "/tmp/sn-bench-notify-%d", (int)getpid());
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", store.path);
        store.sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (store.sock < 0 || bind(store.sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                die("notify socket", errno);
        if (pthread_create(&th, NULL, store_loop, NULL))
                die("pthread_create", EAGAIN);
        pthread_detach(th);
}

/* Starts socknotifyd on a new private path (written to path); with_store: under our store. */
static pid_t spawn_daemon(const char *argv0, unsigned long nofile, char *path, size_t pathsz,
                          bool with_store)
{
        char bin[512], dir[128], quota[64];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        double end;
        pid_t pid;

        snprintf(dir, sizeof(dir), "%s", argv0);
        /* bench/ of the build tree, or bench/.libs/ when run through libtool's wrapper. */
        snprintf(bin, sizeof(bin), "%s/../daemon/socknotifyd", dirname(dir));
        if (access(bin, X_OK) != 0) {
                snprintf(dir, sizeof(dir), "%s", argv0);
                snprintf(bin, sizeof(bin), "%s/../../daemon/socknotifyd", dirname(dir));
        }
        if (access(bin, X_OK) != 0) {
                fprintf(stderr, "socknotify-bench: %s not found; pass --socket\n", bin);
                exit(1);
        }
        snprintf(dir, sizeof(dir), "/tmp/sn-bench-XXXXXX");
        if (!mkdtemp(dir))
                die("mkdtemp", errno);
        snprintf(path, pathsz, "%s/socknotify.sock", dir);
        /* Every socket this process can open may be registered at once. */
        snprintf(quota, sizeof(quota), "--max-sockets-per-user=%lu", nofile < 64 ? 64 : nofile);
        pid = fork();
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (!freopen("/dev/null", "w", stderr))
                        _exit(126);
                if (with_store) {
                        setenv("NOTIFY_SOCKET", store.path, 1);
                        setenv("FDSTORE", "4096", 1);
                }
                execl(bin, bin, "--socket", path, "--max-registrations=20000", quota,
                      (char *)NULL);
                _exit(127);
        }
        strcpy(sa.sun_path, path);
        for (end = now() + 10;; usleep(10000)) {
                int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                int ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

                close(fd);
                if (ok)
                        break;
                if (now() > end)
                        die("daemon did not start", ETIMEDOUT);
        }
        return pid;
}

static void start_daemon(const char *argv0, unsigned long nofile)
{
        daemon_pid = spawn_daemon(argv0, nofile, sock_path, sizeof(sock_path), false);
}

static void stop_daemon(void)
{
        if (daemon_pid > 0) {
                kill(daemon_pid, SIGTERM);
                waitpid(daemon_pid, NULL, 0);
                unlink(sock_path);
                *strrchr(sock_path, '/') = 0;
                rmdir(sock_path);
        }
}

static void connect_port(sn_conn_t **c, sn_port_t **p)
{
        int r = sn_conn_open(sock_path, c);

        if (r < 0)
                die("connect", r);
        r = sn_port_create(*c, 0, p);
        if (r < 0)
                die("port", r);
}

/* n socket pairs; [i][0] is registered and readable (one byte waiting, never read). */
static int (*readable_pairs(int n))[2]
{
        int (*sp)[2] = calloc((size_t)n, sizeof(*sp));

        for (int i = 0; i < n; i++) {
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]) < 0)
                        die("socketpair", errno);
                if (send(sp[i][1], "x", 1, 0) != 1)
                        die("send", errno);
        }
        return sp;
}

static void close_pairs(int (*sp)[2], int n)
{
        for (int i = 0; i < n; i++) {
                close(sp[i][0]);
                close(sp[i][1]);
        }
        free(sp);
}

/* Applies n registrations; returns the call's error, else the first entry's error, else 0
 * (negative errno: what the library actually returned, for the message). */
static int register_many(sn_port_t *p, sn_registration_t *r, uint32_t n)
{
        int err = sn_port_process(p, r, n, NULL, 0, 0);

        for (uint32_t i = 0; i < n && err == 0; i++)
                if (r[i].result)
                        err = r[i].result;
        return err;
}

static int register_all(sn_port_t *p, int (*sp)[2], int n, uint8_t trigger)
{
        sn_registration_t *r = calloc((size_t)n, sizeof(*r));
        int err;

        for (int i = 0; i < n; i++)
                r[i] = (sn_registration_t){ .fd = sp[i][0], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                            .filter = SN_REGISTER_EVENT_IN, .trigger = trigger };
        err = register_many(p, r, (uint32_t)n);
        free(r);
        return err;
}

static long libevent_hits;

static void count_cb(evutil_socket_t fd, short what, void *arg)
{
        libevent_hits++;
}

/* ---- 1. delivery (and 6. scale) ------------------------------------------------------------- */

static double sn_delivery_rate(sn_port_t *p, uint32_t batch)
{
        sn_entry_t *e = malloc(sizeof(*e) * batch);
        double t0 = now(), t;
        long n = 0;

        do {
                int k = sn_port_dequeue(p, e, batch, 1000);

                if (k < 0)
                        die("dequeue", k);
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        free(e);
        return (double)n / (t - t0);
}

static double epoll_delivery_rate(int ep, int batch)
{
        struct epoll_event *ev = malloc(sizeof(*ev) * (size_t)batch);
        double t0 = now(), t;
        long n = 0;

        do {
                int k = epoll_wait(ep, ev, batch, 1000);

                if (k < 0)
                        die("epoll_wait", errno);
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        free(ev);
        return (double)n / (t - t0);
}

static int epoll_of(int (*sp)[2], int n, uint32_t events)
{
        int ep = epoll_create1(EPOLL_CLOEXEC);

        for (int i = 0; i < n; i++) {
                struct epoll_event e = { .events = events, .data.u64 = (uint64_t)i };
                epoll_ctl(ep, EPOLL_CTL_ADD, sp[i][0], &e);
        }
        return ep;
}

static void bench_delivery(void)
{
        const int N = 1000;
        const uint32_t batches[] = { 1, 16, 256 };
        double sn[3], base[3];
        int (*sp)[2] = readable_pairs(N);
        sn_conn_t *c;
        sn_port_t *p;
        int ep = epoll_of(sp, N, EPOLLIN);
        FILE *csv = NULL;
        char extra[256];
        int err;

        connect_port(&c, &p);
        err = register_all(p, sp, N, SN_TRIGGER_LEVEL);
        if (err)
                die("register", err);
        if (csv_dir) {
                char path[512];
                snprintf(path, sizeof(path), "%s/delivery.csv", csv_dir);
                csv = fopen(path, "w");
        }
        for (int b = 0; b < 3; b++) {
                double xs[16], ys[16];

                for (int r = 0; r < rounds; r++) {
                        xs[r] = sn_delivery_rate(p, batches[b]);
                        ys[r] = epoll_delivery_rate(ep, (int)batches[b]);
                }
                sn[b] = median(xs, rounds);
                base[b] = median(ys, rounds);
                if (csv)
                        fprintf(csv, "%u %.0f %.0f\n", batches[b], sn[b], base[b]);
        }
        if (csv)
                fclose(csv);
        snprintf(extra, sizeof(extra),
                 "\"batch\": 256, \"socknotify_b1\": %.0f, \"baseline_b1\": %.0f, "
                 "\"socknotify_b16\": %.0f, \"baseline_b16\": %.0f",
                 sn[0], base[0], sn[1], base[1]);
        if (selected("delivery"))
                report("delivery", "entries/s", sn[2], base[2], 0.30, true, extra);

        /* 6. scale: the same with 15,000 idle registrations on the port. */
        if (selected("scale")) {
                const int IDLE = idle_max;
                int *idle = malloc(sizeof(int) * (size_t)IDLE);
                sn_registration_t *r = calloc((size_t)IDLE, sizeof(*r));
                double with[16], without[16];
                char note[64];

                for (int i = 0; i < IDLE; i++) {
                        idle[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                        if (idle[i] < 0)
                                die("socket (raise the fd limit)", errno);
                        r[i] = (sn_registration_t){ .fd = idle[i], .key = 100000 + (uint64_t)i,
                                                    .op = SN_OP_ENABLE,
                                                    .filter = SN_REGISTER_EVENT_IN,
                                                    .trigger = SN_TRIGGER_LEVEL };
                }
                for (int k = 0; k < rounds; k++) {
                        for (int i = 0; i < IDLE; i++)
                                r[i].op = SN_OP_ENABLE;
                        err = register_many(p, r, (uint32_t)IDLE);
                        if (err)
                                die("register idle", err);
                        with[k] = sn_delivery_rate(p, 256);
                        for (int i = 0; i < IDLE; i++)
                                r[i].op = SN_OP_REMOVE;
                        err = register_many(p, r, (uint32_t)IDLE);
                        if (err)
                                die("remove idle", err);
                        /* Drain the REMOVE packets (and readiness) before the next side. */
                        sn_entry_t e[1024];
                        int removed = 0;
                        while (removed < IDLE) {
                                int n = sn_port_dequeue(p, e, 1024, 1000);
                                if (n <= 0)
                                        die("drain", n ? n : -EIO);
                                for (int i = 0; i < n; i++)
                                        removed += !!(e[i].events & SN_EVENT_REMOVE);
                        }
                        without[k] = sn_delivery_rate(p, 256);
                }
                snprintf(note, sizeof(note), "\"idle_registrations\": %d", IDLE);
                report("scale", "entries/s", median(with, rounds), median(without, rounds), 0.90,
                       true, note);
                for (int i = 0; i < IDLE; i++)
                        close(idle[i]);
                free(idle);
                free(r);
        }

        /* libevent's rate for the same sockets, informational: what many users would pick
         * in-process instead. */
        if (selected("libevent_delivery")) {
                struct event_base *evbase = event_base_new();
                struct event **evs = calloc((size_t)N, sizeof(*evs));
                double xs[16];

                for (int i = 0; i < N; i++) {
                        evs[i] = event_new(evbase, sp[i][0], EV_READ | EV_PERSIST, count_cb, NULL);
                        event_add(evs[i], NULL);
                }
                for (int r = 0; r < rounds; r++) {
                        double t0 = now(), t;

                        libevent_hits = 0;
                        do
                                event_base_loop(evbase, EVLOOP_ONCE | EVLOOP_NONBLOCK);
                        while ((t = now()) - t0 < seconds_per_run);
                        xs[r] = (double)libevent_hits / (t - t0);
                }
                for (int i = 0; i < N; i++)
                        event_free(evs[i]);
                free(evs);
                event_base_free(evbase);
                printf("{\"workload\": \"libevent_delivery\", \"unit\": \"entries/s\", "
                       "\"socknotify\": %.0f, \"baseline\": %.0f, \"ratio\": %.3f, "
                       "\"target\": null, \"met\": null, \"informational\": true, "
                       "\"note\": \"socknotify = delivery at batch 256, baseline = libevent\"}\n",
                       sn[2], median(xs, rounds), sn[2] / median(xs, rounds));
                fprintf(stderr, "%-18s %14.6g %14.6g %-12s ratio %6.3f  (informational)\n",
                        "libevent_delivery", sn[2], median(xs, rounds), "entries/s",
                        sn[2] / median(xs, rounds));
        }
        sn_port_close(p);
        sn_conn_close(c);
        close(ep);
        close_pairs(sp, N);
}

/* ---- 2. one-shot re-arm ------------------------------------------------------------------- */

static double sn_oneshot_rate(sn_port_t *p, int (*sp)[2])
{
        enum { BATCH = 256 };
        sn_registration_t r[BATCH];
        sn_entry_t e[BATCH];
        uint32_t nr = 0;
        double t0 = now(), t;
        long n = 0;

        do {
                int k = sn_port_process(p, nr ? r : NULL, nr, e, BATCH, 1000);

                if (k < 0)
                        die("process", k);
                for (int i = 0; i < k; i++)
                        r[i] = (sn_registration_t){ .fd = sp[e[i].key][0], .key = e[i].key,
                                                    .op = SN_OP_ENABLE,
                                                    .filter = SN_REGISTER_EVENT_IN,
                                                    .trigger = SN_TRIGGER_LEVEL |
                                                               SN_TRIGGER_ONESHOT };
                nr = (uint32_t)k;
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        /* Leave every registration armed for the next round. */
        sn_port_process(p, nr ? r : NULL, nr, NULL, 0, 0);
        return (double)n / (t - t0);
}

static double epoll_oneshot_rate(int ep, int (*sp)[2])
{
        struct epoll_event ev[256];
        double t0 = now(), t;
        long n = 0;

        do {
                int k = epoll_wait(ep, ev, 256, 1000);

                for (int i = 0; i < k; i++) {
                        struct epoll_event re = { .events = EPOLLIN | EPOLLONESHOT,
                                                  .data = ev[i].data };
                        epoll_ctl(ep, EPOLL_CTL_MOD, sp[ev[i].data.u64][0], &re);
                }
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        return (double)n / (t - t0);
}

static void bench_oneshot(void)
{
        const int N = 1000;
        int (*sp)[2] = readable_pairs(N);
        int ep = epoll_of(sp, N, EPOLLIN | EPOLLONESHOT);
        sn_conn_t *c;
        sn_port_t *p;
        double xs[16], ys[16];
        int err;

        connect_port(&c, &p);
        err = register_all(p, sp, N, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT);
        if (err)
                die("register", err);
        for (int r = 0; r < rounds; r++) {
                xs[r] = sn_oneshot_rate(p, sp);
                ys[r] = epoll_oneshot_rate(ep, sp);
        }
        report("oneshot_rearm", "entries/s", median(xs, rounds), median(ys, rounds), 0.60, true,
               NULL);
        sn_port_close(p);
        sn_conn_close(c);
        close(ep);
        close_pairs(sp, N);
}

/* ---- 3. latency ---------------------------------------------------------------------------- */

struct echo {
        int in;   /* the waiter reads a byte here */
        int out;  /* and answers here */
        int ep;   /* baseline: epoll over in */
        sn_port_t *port;
        int samples;
};

static void *echo_sn(void *arg)
{
        struct echo *x = arg;
        sn_entry_t e;
        char c;

        for (int i = 0; i < x->samples; i++) {
                int k = sn_port_dequeue(x->port, &e, 1, SN_INFINITE);

                if (k != 1)
                        die("dequeue", k < 0 ? k : -EIO);
                if (recv(x->in, &c, 1, 0) != 1 || send(x->out, &c, 1, 0) != 1)
                        die("echo", errno);
        }
        return NULL;
}

static void *echo_epoll(void *arg)
{
        struct echo *x = arg;
        struct epoll_event ev;
        char c;

        for (int i = 0; i < x->samples; i++) {
                if (epoll_wait(x->ep, &ev, 1, -1) != 1)
                        die("epoll_wait", errno);
                if (recv(x->in, &c, 1, 0) != 1 || send(x->out, &c, 1, 0) != 1)
                        die("echo", errno);
        }
        return NULL;
}

/* Round-trip times in microseconds, sorted. */
static double *measure_rtt(bool sn, int samples)
{
        int a[2], b[2];
        struct echo x = { .samples = samples };
        double *rtt = malloc(sizeof(double) * (size_t)samples);
        sn_conn_t *c = NULL;
        pthread_t t;
        char ch = 'x';

        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a);
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b);
        x.in = a[1];
        x.out = b[1];
        if (sn) {
                sn_registration_t r = { .fd = a[1], .key = 1, .op = SN_OP_ENABLE,
                                        .filter = SN_REGISTER_EVENT_IN,
                                        .trigger = SN_TRIGGER_LEVEL };
                connect_port(&c, &x.port);
                sn_port_process(x.port, &r, 1, NULL, 0, 0);
        } else {
                struct epoll_event e = { .events = EPOLLIN };
                x.ep = epoll_create1(EPOLL_CLOEXEC);
                epoll_ctl(x.ep, EPOLL_CTL_ADD, a[1], &e);
        }
        pthread_create(&t, NULL, sn ? echo_sn : echo_epoll, &x);
        for (int i = 0; i < samples; i++) {
                double t0 = now();

                if (send(a[0], &ch, 1, 0) != 1 || recv(b[0], &ch, 1, 0) != 1)
                        die("ping", errno);
                rtt[i] = (now() - t0) * 1e6;
        }
        pthread_join(t, NULL);
        if (sn) {
                sn_socket_close(c, a[1]);
                sn_port_close(x.port);
                sn_conn_close(c);
        } else {
                close(a[1]);
                close(x.ep);
        }
        close(a[0]);
        close(b[0]);
        close(b[1]);
        qsort(rtt, (size_t)samples, sizeof(double), cmp_double);
        return rtt;
}

static void bench_latency(void)
{
        int samples = smoke ? 400 : quick ? 4000 : 40000, half = samples / 2;
        double *s1, *s2, *b1, *b2, *sn = malloc(sizeof(double) * (size_t)samples),
                                     *base = malloc(sizeof(double) * (size_t)samples);
        char extra[160];

        /* Alternate: half the samples of each side, twice. */
        s1 = measure_rtt(true, half);
        b1 = measure_rtt(false, half);
        s2 = measure_rtt(true, half);
        b2 = measure_rtt(false, half);
        memcpy(sn, s1, sizeof(double) * (size_t)half);
        memcpy(sn + half, s2, sizeof(double) * (size_t)half);
        memcpy(base, b1, sizeof(double) * (size_t)half);
        memcpy(base + half, b2, sizeof(double) * (size_t)half);
        qsort(sn, (size_t)samples, sizeof(double), cmp_double);
        qsort(base, (size_t)samples, sizeof(double), cmp_double);
#define PCT(v, p) (v)[(int)((double)(samples - 1) * (p))]
        snprintf(extra, sizeof(extra), "\"socknotify_p999\": %.2f, \"baseline_p999\": %.2f",
                 PCT(sn, 0.999), PCT(base, 0.999));
        report("latency_p50", "us", PCT(sn, 0.50), PCT(base, 0.50), 1.7, false, NULL);
        report("latency_p99", "us", PCT(sn, 0.99), PCT(base, 0.99), 2.5, false, extra);
        if (csv_dir) {
                char path[512];
                FILE *f;

                snprintf(path, sizeof(path), "%s/latency.csv", csv_dir);
                f = fopen(path, "w");
                for (int i = 0; f && i < samples; i++)
                        fprintf(f, "%.3f %.3f %.5f\n", sn[i], base[i], (double)(i + 1) / samples);
                if (f)
                        fclose(f);
        }
        free(s1);
        free(s2);
        free(b1);
        free(b2);
        free(sn);
        free(base);
}

/* ---- 4. registration ---------------------------------------------------------------------- */

static double sn_registration_rate(sn_port_t *p, int (*sp)[2], int n)
{
        sn_registration_t *r = calloc((size_t)n, sizeof(*r));
        sn_entry_t *e = malloc(sizeof(*e) * (size_t)n);
        double t0 = now(), t;
        long done = 0;
        int err;

        do {
                int removed = 0;

                for (int i = 0; i < n; i++)
                        r[i] = (sn_registration_t){ .fd = sp[i][0], .key = (uint64_t)i,
                                                    .op = SN_OP_ENABLE,
                                                    .filter = SN_REGISTER_EVENT_IN,
                                                    .trigger = SN_TRIGGER_LEVEL };
                err = register_many(p, r, (uint32_t)n);
                if (err)
                        die("register", err);
                for (int i = 0; i < n; i++)
                        r[i].op = SN_OP_REMOVE;
                err = register_many(p, r, (uint32_t)n);
                if (err)
                        die("remove", err);
                while (removed < n) {
                        int k = sn_port_dequeue(p, e, (uint32_t)n, 1000);
                        if (k <= 0)
                                die("drain", k ? k : -EIO);
                        for (int i = 0; i < k; i++)
                                removed += !!(e[i].events & SN_EVENT_REMOVE);
                }
                done += n;
        } while ((t = now()) - t0 < seconds_per_run);
        free(r);
        free(e);
        return (double)done / (t - t0);
}

static double epoll_registration_rate(int (*sp)[2], int n)
{
        int ep = epoll_create1(EPOLL_CLOEXEC);
        double t0 = now(), t;
        long done = 0;

        do {
                for (int i = 0; i < n; i++) {
                        struct epoll_event e = { .events = EPOLLIN, .data.u64 = (uint64_t)i };
                        epoll_ctl(ep, EPOLL_CTL_ADD, sp[i][0], &e);
                }
                for (int i = 0; i < n; i++)
                        epoll_ctl(ep, EPOLL_CTL_DEL, sp[i][0], NULL);
                done += n;
        } while ((t = now()) - t0 < seconds_per_run);
        close(ep);
        return (double)done / (t - t0);
}

static void bench_registration(void)
{
        const int N = 1000;
        int (*sp)[2] = calloc(N, sizeof(*sp));

        /* Idle connected sockets: registering them queues nothing, on either side. */
        for (int i = 0; i < N; i++)
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]) < 0)
                        die("socketpair", errno);
        sn_conn_t *c;
        sn_port_t *p;
        double xs[16], ys[16];

        connect_port(&c, &p);
        for (int r = 0; r < rounds; r++) {
                xs[r] = sn_registration_rate(p, sp, N);
                ys[r] = epoll_registration_rate(sp, N);
        }
        report("registration", "sockets/s", median(xs, rounds), median(ys, rounds), 0.40, true,
               "\"per_round\": 1000, \"fds_per_message\": 253");
        sn_port_close(p);
        sn_conn_close(c);
        close_pairs(sp, N);
}

/* ---- 4b. registration with the descriptor store ------------------------------------------ */

static const char *bench_argv0;
static unsigned long bench_nofile;

/* The registration workload against a daemon that keeps its journal and boxes in a store (as
 * under systemd with FileDescriptorStoreMax=), and against the plain one, same run: the cost
 * of surviving a crash. */
static void bench_registration_store(void)
{
        const int N = 1000;
        int (*sp)[2] = calloc(N, sizeof(*sp));
        char path2[256], note[96];
        sn_conn_t *c1, *c2;
        sn_port_t *p1, *p2;
        double xs[16], ys[16];
        pid_t pid2;
        int r;

        if (daemon_pid <= 0) {
                fprintf(stderr, "registration_store: needs daemons of its own (no --socket)\n");
                free(sp);
                return;
        }
        for (int i = 0; i < N; i++)
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]) < 0)
                        die("socketpair", errno);
        store_start();
        pid2 = spawn_daemon(bench_argv0, bench_nofile, path2, sizeof(path2), true);
        connect_port(&c1, &p1);
        if ((r = sn_conn_open(path2, &c2)) < 0 || (r = sn_port_create(c2, 0, &p2)) < 0)
                die("connect (store)", r);
        for (int k = 0; k < rounds; k++) {
                xs[k] = sn_registration_rate(p2, sp, N);
                ys[k] = sn_registration_rate(p1, sp, N);
        }
        snprintf(note, sizeof(note), "\"per_round\": 1000, \"store_messages\": %lu",
                 store.messages);
        report("registration_store", "sockets/s", median(xs, rounds), median(ys, rounds), 0.80,
               true, note);
        sn_port_close(p2);
        sn_conn_close(c2);
        sn_port_close(p1);
        sn_conn_close(c1);
        kill(pid2, SIGKILL); /* a stop would hand everything to the store */
        waitpid(pid2, NULL, 0);
        unlink(path2);
        *strrchr(path2, '/') = 0;
        rmdir(path2);
        unlink(store.path);
        close_pairs(sp, N);
}

/* ---- 5. memory ------------------------------------------------------------------------------ */

static long rss_bytes(pid_t pid)
{
        char path[64], line[256];
        long kb = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "r");
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                        break;
        if (f)
                fclose(f);
        return kb * 1024;
}

static pid_t daemon_pid_of(sn_conn_t *c)
{
        char *json, *p;
        pid_t pid = -1;

        if (sn_conn_status(c, &json) == 0) {
                p = strstr(json, "\"pid\":");
                if (p)
                        pid = (pid_t)atoi(p + 6);
                free(json);
        }
        return pid;
}

static void bench_memory(void)
{
        const int N = idle_max;
        int *fds = malloc(sizeof(int) * (size_t)N);
        sn_registration_t *r = calloc((size_t)N, sizeof(*r));
        sn_conn_t *c;
        sn_port_t *p;
        long d0, d1;
        size_t h0, h1;
        pid_t dpid;
        char extra[128];
        int err;

        for (int i = 0; i < N; i++) {
                /* UDP sockets need no peers: nothing else competes for the fd budget. */
                fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (fds[i] < 0)
                        die("socket (raise the fd limit)", errno);
                r[i] = (sn_registration_t){ .fd = fds[i], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                            .filter = SN_REGISTER_EVENT_IN,
                                            .trigger = SN_TRIGGER_LEVEL };
        }
        connect_port(&c, &p);
        dpid = daemon_pid_of(c);
        /* Warm up both sides' buffers with one small batch, then measure the rest. */
        err = register_many(p, r, 16);
        if (err)
                die("register", err);
        d0 = rss_bytes(dpid);
        h0 = mallinfo2().uordblks;
        err = register_many(p, r + 16, (uint32_t)N - 16);
        if (err)
                die("register", err);
        d1 = rss_bytes(dpid);
        h1 = mallinfo2().uordblks;
        snprintf(extra, sizeof(extra), "\"registrations\": %d", N - 16);
        report("memory_daemon", "bytes", (double)(d1 - d0) / (N - 16), 256, 1.0, false, extra);
        report("memory_client", "bytes", (double)(h1 - h0) / (N - 16), 64, 1.0, false, extra);
        sn_port_close(p);
        sn_conn_close(c);
        for (int i = 0; i < N; i++)
                close(fds[i]);
        free(fds);
        free(r);
}

/* ---- 7. the multi-threaded server ----------------------------------------------------------- */

enum { MT_SERVERS = 16, MT_CLIENTS = 100, MT_MESSAGES = 10 };
#define EXIT_KEY ((ULONG_PTR)-1)

struct mt {
        int listener;
        unsigned short port;
        HANDLE iocp;
        int ep;
        atomic_int removed;
        atomic_long bytes;
};

static void *mt_client(void *arg)
{
        struct mt *m = arg;
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = m->port,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        uint32_t payload = 0xdeadbeef;

        if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                die("connect", errno);
        for (int i = 0; i < MT_MESSAGES; i++)
                send(s, &payload, sizeof(payload), 0);
        shutdown(s, SHUT_RDWR);
        close(s);
        return NULL;
}

/* The reference's server thread, over the Win32 API (one-shot level, 3 entries a call). */
static void *mt_server_sn(void *arg)
{
        struct mt *m = arg;
        SOCK_NOTIFY_REGISTRATION regs[6];
        OVERLAPPED_ENTRY e[3];
        UINT32 nregs = 0, n;
        char buf[512];

        for (;;) {
                DWORD r = ProcessSocketNotifications(m->iocp, nregs, nregs ? regs : NULL, 1000, 3,
                                                     e, &n);
                if (r == WAIT_TIMEOUT)
                        n = 0;
                else if (r != ERROR_SUCCESS)
                        die_win32("ProcessSocketNotifications", r);
                nregs = 0;
                for (UINT32 i = 0; i < n; i++) {
                        ULONG_PTR key = e[i].lpCompletionKey;
                        UINT32 ev = SocketNotificationRetrieveEvents(&e[i]);

                        if (key == EXIT_KEY) {
                                PostQueuedCompletionStatus(m->iocp, 0, EXIT_KEY, NULL);
                                return NULL;
                        }
                        if (key == (ULONG_PTR)m->listener) {
                                int s = accept4(m->listener, NULL, NULL, SOCK_CLOEXEC);
                                if (s >= 0)
                                        regs[nregs++] = (SOCK_NOTIFY_REGISTRATION){
                                                .socket = (SOCKET)s, .completionKey = (PVOID)(uintptr_t)s,
                                                .eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN |
                                                               SOCK_NOTIFY_REGISTER_EVENT_HANGUP,
                                                .operation = SOCK_NOTIFY_OP_ENABLE,
                                                .triggerFlags = SOCK_NOTIFY_TRIGGER_ONESHOT |
                                                                SOCK_NOTIFY_TRIGGER_LEVEL };
                                regs[nregs++] = (SOCK_NOTIFY_REGISTRATION){
                                        .socket = (SOCKET)m->listener, .completionKey = (PVOID)key,
                                        .eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN,
                                        .operation = SOCK_NOTIFY_OP_ENABLE,
                                        .triggerFlags = SOCK_NOTIFY_TRIGGER_ONESHOT |
                                                        SOCK_NOTIFY_TRIGGER_LEVEL };
                                continue;
                        }
                        int s = (int)key;
                        if (ev & SOCK_NOTIFY_EVENT_REMOVE) {
                                closesocket((SOCKET)s);
                                if (atomic_fetch_add(&m->removed, 1) + 1 == MT_CLIENTS)
                                        PostQueuedCompletionStatus(m->iocp, 0, EXIT_KEY, NULL);
                                continue;
                        }
                        SOCK_NOTIFY_REGISTRATION *g = &regs[nregs++];
                        *g = (SOCK_NOTIFY_REGISTRATION){ .socket = (SOCKET)s,
                                                         .completionKey = (PVOID)key,
                                                         .operation = SOCK_NOTIFY_OP_REMOVE };
                        if (!(ev & SOCK_NOTIFY_EVENT_HANGUP) && ev & SOCK_NOTIFY_EVENT_IN) {
                                ssize_t k = recv(s, buf, sizeof(buf), 0);
                                if (k > 0) {
                                        atomic_fetch_add(&m->bytes, k);
                                        g->operation = SOCK_NOTIFY_OP_ENABLE;
                                        g->eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN |
                                                         SOCK_NOTIFY_REGISTER_EVENT_HANGUP;
                                        g->triggerFlags = SOCK_NOTIFY_TRIGGER_ONESHOT |
                                                          SOCK_NOTIFY_TRIGGER_LEVEL;
                                }
                        } else if (ev & SOCK_NOTIFY_EVENT_IN) {
                                ssize_t k;
                                while ((k = recv(s, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
                                        atomic_fetch_add(&m->bytes, k);
                        }
                }
        }
}

/* The same server with EPOLLONESHOT in-process. */
static void *mt_server_epoll(void *arg)
{
        struct mt *m = arg;
        struct epoll_event ev[3];
        char buf[512];

        for (;;) {
                int n = epoll_wait(m->ep, ev, 3, 1000);

                for (int i = 0; i < n; i++) {
                        int s = (int)ev[i].data.u64;

                        if (ev[i].data.u64 == (uint64_t)-1) {
                                return NULL; /* the exit eventfd stays readable for everyone */
                        }
                        if (s == m->listener) {
                                int a = accept4(m->listener, NULL, NULL, SOCK_CLOEXEC);
                                if (a >= 0) {
                                        struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP |
                                                                           EPOLLONESHOT,
                                                                 .data.u64 = (uint64_t)a };
                                        epoll_ctl(m->ep, EPOLL_CTL_ADD, a, &e);
                                }
                                struct epoll_event e = { .events = EPOLLIN | EPOLLONESHOT,
                                                         .data.u64 = (uint64_t)s };
                                epoll_ctl(m->ep, EPOLL_CTL_MOD, s, &e);
                                continue;
                        }
                        ssize_t k = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
                        if (k > 0) {
                                atomic_fetch_add(&m->bytes, k);
                                struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP |
                                                                   EPOLLONESHOT,
                                                         .data.u64 = (uint64_t)s };
                                epoll_ctl(m->ep, EPOLL_CTL_MOD, s, &e);
                        } else {
                                epoll_ctl(m->ep, EPOLL_CTL_DEL, s, NULL);
                                close(s);
                                if (atomic_fetch_add(&m->removed, 1) + 1 == MT_CLIENTS) {
                                        int efd = eventfd(1, EFD_CLOEXEC);
                                        struct epoll_event e = { .events = EPOLLIN,
                                                                 .data.u64 = (uint64_t)-1 };
                                        epoll_ctl(m->ep, EPOLL_CTL_ADD, efd, &e);
                                }
                        }
                }
        }
}

static double mt_run(bool sn)
{
        struct mt m = { 0 };
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        pthread_t servers[MT_SERVERS], clients[MT_CLIENTS];
        double t0;

        m.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bind(m.listener, (struct sockaddr *)&sa, sizeof(sa));
        listen(m.listener, SOMAXCONN);
        getsockname(m.listener, (struct sockaddr *)&sa, &len);
        m.port = sa.sin_port;
        t0 = now();
        if (sn) {
                m.iocp = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 0);
                SOCK_NOTIFY_REGISTRATION r = { .socket = (SOCKET)m.listener,
                                               .completionKey = (PVOID)(uintptr_t)m.listener,
                                               .eventFilter = SOCK_NOTIFY_REGISTER_EVENT_IN,
                                               .operation = SOCK_NOTIFY_OP_ENABLE,
                                               .triggerFlags = SOCK_NOTIFY_TRIGGER_LEVEL |
                                                               SOCK_NOTIFY_TRIGGER_ONESHOT };
                if (!m.iocp)
                        die_win32("CreateIoCompletionPort", GetLastError());
                DWORD err = ProcessSocketNotifications(m.iocp, 1, &r, 0, 0, NULL, NULL);
                if (err)
                        die_win32("mt setup", err);
        } else {
                struct epoll_event e = { .events = EPOLLIN | EPOLLONESHOT,
                                         .data.u64 = (uint64_t)m.listener };
                m.ep = epoll_create1(EPOLL_CLOEXEC);
                epoll_ctl(m.ep, EPOLL_CTL_ADD, m.listener, &e);
        }
        for (int i = 0; i < MT_SERVERS; i++)
                pthread_create(&servers[i], NULL, sn ? mt_server_sn : mt_server_epoll, &m);
        for (int i = 0; i < MT_CLIENTS; i++)
                pthread_create(&clients[i], NULL, mt_client, &m);
        for (int i = 0; i < MT_CLIENTS; i++)
                pthread_join(clients[i], NULL);
        for (int i = 0; i < MT_SERVERS; i++)
                pthread_join(servers[i], NULL);
        double t = now() - t0;
        if (atomic_load(&m.bytes) != MT_CLIENTS * MT_MESSAGES * 4)
                die("mt_server lost data", EIO);
        if (sn) {
                closesocket((SOCKET)m.listener);
                CloseHandle(m.iocp);
        } else {
                close(m.listener);
                close(m.ep);
        }
        return t * 1e3;
}

static void bench_mt_server(void)
{
        WSADATA wsa;
        double xs[16], ys[16];

        setenv("SOCKNOTIFY_SOCKET", sock_path, 1);
        WSAStartup(WINSOCK_VERSION, &wsa);
        for (int r = 0; r < rounds; r++) {
                xs[r] = mt_run(true);
                ys[r] = mt_run(false);
        }
        report("mt_server", "ms", median(xs, rounds), median(ys, rounds), 2.0, false,
               "\"threads\": 16, \"clients\": 100, \"messages\": 10");
        WSACleanup();
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "quick", no_argument, NULL, 'q' },
                { "smoke", no_argument, NULL, 'S' },
                { "only", required_argument, NULL, 'o' },
                { "socket", required_argument, NULL, 's' },
                { "csv-dir", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct rlimit rl;
        int c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'q':
                        quick = true;
                        break;
                case 'S':
                        smoke = true;
                        break;
                case 'o':
                        only = optarg;
                        break;
                case 's':
                        snprintf(sock_path, sizeof(sock_path), "%s", optarg);
                        break;
                case 'c':
                        csv_dir = optarg;
                        break;
                default:
                        fprintf(c == 'h' ? stdout : stderr,
                                "Usage: socknotify-bench [--quick | --smoke] [--only NAME] "
                                "[--socket PATH] "
                                "[--csv-dir DIR]\nworkloads: delivery oneshot_rearm latency "
                                "registration registration_store memory scale mt_server\n"
                                "Report bugs at https://github.com/socknotify/socknotify/issues\n");
                        return c == 'h' ? 0 : 2;
                }
        }
        rounds = smoke ? 1 : quick ? 3 : 7;
        seconds_per_run = smoke ? 0.1 : quick ? 0.4 : 1.5;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                rl.rlim_cur = 1 << 20;
        /* The scale workload holds its idle sockets next to the delivery workload's 1,000
         * pairs (and the daemon a copy of each): keep 3,000 descriptors for everything else. */
        idle_max = (int)SN_BENCH_MIN((rlim_t)15000,
                                     rl.rlim_cur > 4000 ? rl.rlim_cur - 3000 : (rlim_t)1000);
        signal(SIGPIPE, SIG_IGN);
        bench_argv0 = argv[0];
        bench_nofile = (unsigned long)rl.rlim_cur;
        if (!sock_path[0])
                start_daemon(argv[0], (unsigned long)rl.rlim_cur);
        fprintf(stderr, "%-18s %14s %14s %-12s\n", "workload", "socknotify", "baseline", "unit");
        if (selected("delivery") || selected("scale"))
                bench_delivery();
        if (selected("oneshot_rearm"))
                bench_oneshot();
        if (selected("latency"))
                bench_latency();
        if (selected("registration"))
                bench_registration();
        if (selected("registration_store"))
                bench_registration_store();
        if (selected("memory"))
                bench_memory();
        if (selected("mt_server"))
                bench_mt_server();
        stop_daemon();
        return 0;
}

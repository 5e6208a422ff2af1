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
 *                    [--transport both|rings|socket]
 *
 * By default each workload runs first over the socket transport, then over the shared-memory
 * rings (protocol version 3); the rings' rows carry the socket's figures beside them, and
 * every row says which transport it used ("transport").
 *
 * --smoke runs every workload once, briefly, and judges no target ("met": null): it proves
 * that the benchmark still runs (CI runs it), not how fast anything is.  Any failure exits 1
 * with the error actually returned.
 *
 * Without --socket it starts daemon/socknotifyd of the build tree on a private socket, with a
 * per-user socket quota as large as the descriptor limit (the daemon's default, half its
 * descriptor capacity, would refuse the scale and memory workloads).  Those two workloads size
 * themselves to the descriptor limit: up to 15,000 idle sockets, fewer on a smaller limit.
 * --csv-dir writes the latency samples, the delivery rate per batch size and the scale
 * matrix for the plots (bench/plot.sh).
 *
 * --daemon-arg ARG (repeatable) passes ARG to the daemon it starts: --daemon-arg=--no-io-uring
 * measures the daemon's epoll_ctl made one by one against the default batches.
 *
 * --only NAME runs the workloads called NAME or NAME_something (--only latency: latency_p50
 * and latency_p99).  The scale matrix (registrations 1,000 to 15,000 over 1, 10 and 100
 * connections, each cell on a fresh daemon) takes minutes: a full or --quick run leaves it
 * out, --only scale_matrix runs it, --smoke runs it briefly with everything else.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
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

#include "bench/store.h"
#include "common/ring.h"

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
#define SN_BENCH_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

/* CPU time of every thread of process pid so far, in seconds; -1 when it cannot be read. */
static double cpu_seconds(pid_t pid)
{
        struct timespec ts;
        clockid_t clk;

        if (clock_getcpuclockid(pid, &clk) || clock_gettime(clk, &ts))
                return -1;
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool selected(const char *name)
{
        return !only || !strcmp(only, name) || (!strncmp(only, name, strlen(only)) &&
                                                 name[strlen(only)] == '_');
}

/*
 * Transports.  By default every workload runs twice: first with the socket transport
 * (SOCKNOTIFY_NO_SHM=1 for the library), whose figures are kept, then with the shared-memory
 * rings, whose rows are printed with the socket's figures beside them ("socket",
 * "socket_baseline", "socket_ratio").  Each side's ratio is against the baseline measured in
 * its own pass.  --transport=rings or --transport=socket runs one pass only.
 */
enum transport { TRANSPORT_BOTH, TRANSPORT_RINGS, TRANSPORT_SOCKET };
static enum transport transport_opt = TRANSPORT_BOTH;
static bool socket_pass;          /* this pass uses the socket, and prints nothing */
static const char *pass_name = "rings";
static struct socket_row {
        char name[32];
        double x, y;
} socket_rows[32];
static int nsocket_rows;

static const struct socket_row *socket_row_of(const char *name)
{
        for (int i = 0; i < nsocket_rows; i++)
                if (!strcmp(socket_rows[i].name, name))
                        return &socket_rows[i];
        return NULL;
}

/* Reports one workload: JSON on stdout, a row on stderr.  higher: ratio = x/y (rates),
 * otherwise ratio = x/y too but the target is a maximum (times, bytes).  In the socket pass of
 * a run of both transports the figures are kept for the rings' row instead. */
static void report(const char *name, const char *unit, double x, double y, double target,
                   bool higher_is_better, const char *extra)
{
        double ratio = x / y;
        bool met = higher_is_better ? ratio >= target : ratio <= target;
        const struct socket_row *s;
        char beside[160] = "";

        if (socket_pass && transport_opt == TRANSPORT_BOTH) {
                if (nsocket_rows < (int)SN_BENCH_ARRAY_SIZE(socket_rows)) {
                        struct socket_row *r = &socket_rows[nsocket_rows++];

                        snprintf(r->name, sizeof(r->name), "%s", name);
                        r->x = x;
                        r->y = y;
                }
                fprintf(stderr, "%-18s %14.6g %14.6g %-12s ratio %6.3f  (socket)\n", name, x, y,
                        unit, ratio);
                return;
        }
        s = socket_row_of(name);
        if (s)
                snprintf(beside, sizeof(beside),
                         ", \"socket\": %.6g, \"socket_baseline\": %.6g, \"socket_ratio\": %.3f",
                         s->x, s->y, s->x / s->y);
        printf("{\"workload\": \"%s\", \"unit\": \"%s\", \"transport\": \"%s\", "
               "\"socknotify\": %.6g, \"baseline\": %.6g, "
               "\"ratio\": %.3f, \"target\": %.2f, \"met\": %s%s%s%s%s}\n",
               name, unit, pass_name, x, y, ratio, target,
               smoke ? "null" : met ? "true" : "false", smoke ? ", \"smoke\": true" : "", beside,
               extra ? ", " : "", extra ? extra : "");
        fflush(stdout);
        fprintf(stderr, "%-18s %14.6g %14.6g %-12s ratio %6.3f  target %s%.2f  %s", name, x, y,
                unit, ratio, higher_is_better ? ">=" : "<=", target,
                smoke ? "(smoke: not judged)" : met ? "met" : "MISSED");
        if (s)
                fprintf(stderr, "  (socket %.3f)", s->x / s->y);
        fprintf(stderr, "  [%s]\n", pass_name);
}

/* ---- a service manager's descriptor store, for registration_store: bench/store.c ---------- */

/* --daemon-arg: more arguments for every daemon this program starts. */
#define BENCH_DAEMON_ARGS 8
static const char *daemon_args[BENCH_DAEMON_ARGS];
static int ndaemon_args;

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
                const char *av[8 + BENCH_DAEMON_ARGS] = { bin, "--socket", path,
                                                           "--max-registrations=20000", quota };
                int k = 5;

                for (int i = 0; i < ndaemon_args; i++)
                        av[k++] = daemon_args[i];
                av[k] = NULL;
                execv(bin, (char *const *)av);
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

/* The fixed cost of one call: the mean time of a dequeue that finds nothing (timeout 0) on an
 * empty port of the same connection, a round trip to the daemon with no entry in it;
 * microseconds. */
static double empty_call_us(sn_conn_t *c)
{
        sn_port_t *empty;
        sn_entry_t e[16];
        double t0, t;
        long n = 0;
        int r = sn_port_create(c, 0, &empty);

        if (r < 0)
                die("port", r);
        t0 = now();
        do {
                r = sn_port_dequeue(empty, e, 16, 0);
                if (r != -ETIMEDOUT)
                        die("empty dequeue", r < 0 ? r : -EIO);
                n++;
        } while ((t = now()) - t0 < seconds_per_run / 4);
        sn_port_close(empty);
        return (t - t0) * 1e6 / (double)n;
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
                report("delivery", "entries/s", sn[2], base[2], 0.70, true, extra);
        /* Most servers dequeue small batches: batches 16 and 1 have targets of their own. */
        if (selected("delivery_1"))
                report("delivery_1", "entries/s", sn[0], base[0], 0.25, true, "\"batch\": 1");
        if (selected("delivery_16")) {
                snprintf(extra, sizeof(extra), "\"batch\": 16, \"empty_call_us\": %.2f",
                         empty_call_us(c));
                report("delivery_16", "entries/s", sn[1], base[1], 0.50, true, extra);
        }

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
        if (selected("libevent_delivery") && !socket_pass) {
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

/* The bench's one-shot server: re-arms what one dequeue gave with its next dequeue, by the
 * registration handle each entry carried (sn_port_process_ex: no fstat() per re-arm in the
 * client), or by descriptor (handle 0: as sn_port_process does, an fstat each). */
static double sn_oneshot_rate(sn_port_t *p, int (*sp)[2], bool by_handle)
{
        enum { BATCH = 256 };
        sn_registration_ex_t r[BATCH];
        sn_entry_ex_t e[BATCH];
        uint32_t nr = 0;
        double t0 = now(), t;
        long n = 0;

        do {
                int k = sn_port_process_ex(p, nr ? r : NULL, nr, e, BATCH, 1000);

                if (k < 0)
                        die("process", k);
                for (uint32_t i = 0; i < nr; i++)
                        if (r[i].reg.result)
                                die("re-arm", r[i].reg.result);
                for (int i = 0; i < k; i++)
                        r[i] = (sn_registration_ex_t){
                                .reg = { .fd = sp[e[i].entry.key][0], .key = e[i].entry.key,
                                         .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                         .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT },
                                .handle = by_handle ? e[i].handle : 0,
                        };
                nr = (uint32_t)k;
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        /* Leave every registration armed for the next round. */
        sn_port_process_ex(p, nr ? r : NULL, nr, NULL, 0, 0);
        return (double)n / (t - t0);
}

/* In-process: epoll_wait of up to batch (at most 256) entries, EPOLL_CTL_MOD of each. */
static double epoll_oneshot_rate(int ep, int (*sp)[2], int batch)
{
        struct epoll_event ev[256];
        double t0 = now(), t;
        long n = 0;

        do {
                int k = epoll_wait(ep, ev, SN_BENCH_MIN(batch, 256), 1000);

                for (int i = 0; i < k; i++) {
                        struct epoll_event re = { .events = EPOLLIN | EPOLLONESHOT,
                                                  .data = ev[i].data };
                        epoll_ctl(ep, EPOLL_CTL_MOD, sp[ev[i].data.u64][0], &re);
                }
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        return (double)n / (t - t0);
}

/* 1000 readable socket pairs registered LEVEL | ONESHOT on a port and in an epoll instance. */
struct oneshot_set {
        int (*sp)[2];
        int ep;
        sn_conn_t *c;
        sn_port_t *p;
};
enum { ONESHOT_PAIRS = 1000 };

static void oneshot_open(struct oneshot_set *o)
{
        int err;

        o->sp = readable_pairs(ONESHOT_PAIRS);
        o->ep = epoll_of(o->sp, ONESHOT_PAIRS, EPOLLIN | EPOLLONESHOT);
        connect_port(&o->c, &o->p);
        err = register_all(o->p, o->sp, ONESHOT_PAIRS, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT);
        if (err)
                die("register", err);
}

static void oneshot_close(struct oneshot_set *o)
{
        sn_port_close(o->p);
        sn_conn_close(o->c);
        close(o->ep);
        close_pairs(o->sp, ONESHOT_PAIRS);
}

static void bench_oneshot(void)
{
        struct oneshot_set o;
        double xs[16], fs[16], ys[16], f, y;
        char extra[160];

        oneshot_open(&o);
        for (int r = 0; r < rounds; r++) {
                xs[r] = sn_oneshot_rate(o.p, o.sp, true);
                fs[r] = sn_oneshot_rate(o.p, o.sp, false);
                ys[r] = epoll_oneshot_rate(o.ep, o.sp, 256);
        }
        f = median(fs, rounds);
        y = median(ys, rounds);
        /* The ratio is the handles' (sn_port_process_ex); re-arming by descriptor
         * (sn_port_process: an fstat per re-arm) is shown beside it. */
        snprintf(extra, sizeof(extra), "\"by_fd\": %.6g, \"by_fd_ratio\": %.3f", f, f / y);
        report("oneshot_rearm", "entries/s", median(xs, rounds), y, 0.80, true, extra);
        if (!socket_pass || transport_opt != TRANSPORT_BOTH)
                fprintf(stderr, "%-18s %14.6g %14.6g %-12s ratio %6.3f  (informational: by fd, "
                                "sn_port_process)  [%s]\n",
                        "oneshot_by_fd", f, y, "entries/s", f / y, pass_name);
        oneshot_close(&o);
}

/*
 * Re-enables made one by one, each a call of its own that asks for no entries, as a server that
 * re-arms a socket as soon as it has handled it does (ProcessSocketNotifications with one
 * registration and no completions): waiting for each answer (sn_port_process) or not
 * (sn_port_submit, the re-enable without waiting; the answers are collected before the next
 * dequeue, as an event loop would).  Baseline: epoll_ctl(EPOLL_CTL_MOD) per entry.
 */
/* How sn_rearm_rate() re-enables: waiting for each answer, or not, by descriptor or by the
 * registration handle the entry carried (sn_port_submit_ex: no fstat). */
enum rearm_mode { REARM_WAIT, REARM_NOWAIT, REARM_NOWAIT_HANDLE };

static double sn_rearm_rate(sn_port_t *p, int (*sp)[2], enum rearm_mode mode)
{
        enum { BATCH = 16 };
        sn_entry_ex_t e[BATCH];
        double t0 = now(), t;
        long n = 0;

        do {
                int k = sn_port_process_ex(p, NULL, 0, e, BATCH, 1000);
                sn_call_t *call;

                if (k < 0)
                        die("dequeue", k);
                for (int i = 0; i < k; i++) {
                        sn_registration_ex_t r = {
                                .reg = { .fd = sp[e[i].entry.key][0], .key = e[i].entry.key,
                                         .op = SN_OP_ENABLE, .filter = SN_REGISTER_EVENT_IN,
                                         .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT },
                                .handle = mode == REARM_NOWAIT_HANDLE ? e[i].handle : 0,
                        };
                        int err = mode == REARM_WAIT
                                          ? sn_port_process(p, &r.reg, 1, NULL, 0, 0)
                                          : sn_port_submit_ex(p, &r, 1, 0, 0, 0, NULL, &call);

                        if (err < 0 || r.reg.result < 0)
                                die("re-enable", err < 0 ? err : r.reg.result);
                        if (mode != REARM_WAIT)
                                sn_call_free(call); /* its reply is dropped when it comes */
                }
                n += k;
        } while ((t = now()) - t0 < seconds_per_run);
        return (double)n / (t - t0);
}

static void bench_rearm_nowait(void)
{
        struct oneshot_set o;
        double xs[16], hs[16], ws[16], ys[16];

        oneshot_open(&o);
        for (int r = 0; r < rounds; r++) {
                xs[r] = sn_rearm_rate(o.p, o.sp, REARM_NOWAIT);
                hs[r] = sn_rearm_rate(o.p, o.sp, REARM_NOWAIT_HANDLE);
                ws[r] = sn_rearm_rate(o.p, o.sp, REARM_WAIT);
                ys[r] = epoll_oneshot_rate(o.ep, o.sp, 16);
        }
        {
                double x = median(xs, rounds), h = median(hs, rounds), w = median(ws, rounds),
                       y = median(ys, rounds);

                printf("{\"workload\": \"rearm_nowait\", \"unit\": \"entries/s\", "
                       "\"transport\": \"%s\", \"socknotify\": %.0f, \"baseline\": %.0f, "
                       "\"ratio\": %.3f, \"by_handle\": %.0f, \"by_handle_ratio\": %.3f, "
                       "\"waiting\": %.0f, \"waiting_ratio\": %.3f, "
                       "\"target\": null, \"met\": null, \"informational\": true, "
                       "\"note\": \"one re-enable per call, batch 16: sn_port_submit without "
                       "waiting; by_handle = sn_port_submit_ex by registration handle; "
                       "waiting = sn_port_process\"}\n",
                       pass_name, x, y, x / y, h, h / y, w, w / y);
                fflush(stdout);
                fprintf(stderr, "%-18s %14.6g %14.6g %-12s ratio %6.3f  (informational; "
                                "by handle: %.3f; waiting for each: %.3f)  [%s]\n",
                        "rearm_nowait", x, y, "entries/s", x / y, h / y, w / y, pass_name);
        }
        oneshot_close(&o);
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
        report("latency_p50", "us", PCT(sn, 0.50), PCT(base, 0.50), 1.50, false, NULL);
        report("latency_p99", "us", PCT(sn, 0.99), PCT(base, 0.99), 2.0, false, extra);
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
        report("registration", "sockets/s", median(xs, rounds), median(ys, rounds), 0.45, true,
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

/* The client's heap in use: arena blocks and mmap()ed blocks (a large array goes to mmap and
 * would be missed by uordblks alone; freeing one there made the difference negative). */
static size_t heap_bytes(void)
{
        struct mallinfo2 m = mallinfo2();

        return m.uordblks + m.hblkhd;
}

/* What the rings cost the daemon per connection, apart from registrations: the memory of 16
 * connections that each made a port and dequeued once (the ring file is 100 KiB, but only the
 * pages written are memory).  Informational: printed, no target. */
static void ring_memory(pid_t dpid)
{
        enum { CONNS = 16 };
        sn_conn_t *c[CONNS];
        sn_port_t *p[CONNS];
        sn_entry_t e;
        long r0, r1;

        r0 = rss_bytes(dpid);
        for (int i = 0; i < CONNS; i++) {
                connect_port(&c[i], &p[i]);
                (void)sn_port_dequeue(p[i], &e, 1, 0);
        }
        r1 = rss_bytes(dpid);
        for (int i = 0; i < CONNS; i++) {
                sn_port_close(p[i]);
                sn_conn_close(c[i]);
        }
        printf("{\"workload\": \"memory_ring\", \"unit\": \"bytes/connection\", "
               "\"transport\": \"%s\", \"socknotify\": %.0f, \"baseline\": null, "
               "\"ratio\": null, \"target\": null, \"met\": null, \"informational\": true, "
               "\"ring_file_bytes\": %u, \"note\": \"daemon memory per connection (rings "
               "and connection together), beside memory per registration\"}\n",
               pass_name, (double)(r1 - r0) / CONNS, SN_RING_FILE_SIZE);
        fflush(stdout);
        fprintf(stderr, "%-18s %14.0f %14s %-12s (informational: ring file %u bytes)\n",
                "memory_ring", (double)(r1 - r0) / CONNS, "-", "bytes/conn", SN_RING_FILE_SIZE);
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
        h0 = heap_bytes();
        err = register_many(p, r + 16, (uint32_t)N - 16);
        if (err)
                die("register", err);
        d1 = rss_bytes(dpid);
        h1 = heap_bytes();
        snprintf(extra, sizeof(extra), "\"registrations\": %d", N - 16);
        report("memory_daemon", "bytes", (double)(d1 - d0) / (N - 16), 256, 1.0, false, extra);
        report("memory_client", "bytes", ((double)h1 - (double)h0) / (N - 16), 64, 1.0, false,
               extra);
        if (!socket_pass)
                ring_memory(dpid);
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
        report("mt_server", "ms", median(xs, rounds), median(ys, rounds), 1.5, false,
               "\"threads\": 16, \"clients\": 100, \"messages\": 10");
        WSACleanup();
}

/* ---- 9. churn: the short-lived-connection server -------------------------------------------- */

/* Client threads open connections one after another until the deadline: connect, send a
 * 16-byte request, read the 16-byte reply, close.  One server thread accepts on the listener's
 * notification (level-triggered one-shot, re-armed after each accept batch), registers each
 * connection (IN, level-triggered one-shot: it expects one request), and on its notification
 * reads the request, writes the reply and closes it through the library.  Baseline: the same
 * server with one epoll instance, EPOLLONESHOT, close().  Rate: connections completed by the
 * clients per second of wall time. */
enum { CHURN_CLIENTS = 2, CHURN_BATCH = 16, CHURN_ACCEPT = 64, CHURN_MSG = 16 };
#define CHURN_LISTEN_KEY ((uint64_t)-2)
#define CHURN_EXIT_KEY ((uint64_t)-1)

struct churn {
        int listener;
        unsigned short port; /* network order */
        double deadline;
        atomic_long done;
        sn_conn_t *conn;
        sn_port_t *sn_port;
        int ep;
};

static void *churn_client(void *arg)
{
        struct churn *ch = arg;
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = ch->port,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        char req[CHURN_MSG] = "GET /churn 1.0\n", rep[CHURN_MSG];

        while (now() < ch->deadline) {
                int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                size_t got = 0;

                if (s < 0)
                        die("churn: socket", errno);
                if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                        die("churn: connect", errno);
                if (send(s, req, sizeof(req), 0) != (ssize_t)sizeof(req))
                        die("churn: send", errno);
                while (got < sizeof(rep)) {
                        ssize_t k = recv(s, rep + got, sizeof(rep) - got, 0);

                        if (k <= 0)
                                die("churn: no reply", k ? errno : ECONNRESET);
                        got += (size_t)k;
                }
                close(s);
                atomic_fetch_add(&ch->done, 1);
        }
        return NULL;
}

/* Reads a connection's request and answers it; false when it has nothing to read yet. */
static bool churn_answer(int s)
{
        static const char reply[CHURN_MSG] = "HTTP/1.0 200\n\n";
        char buf[256];
        ssize_t k = recv(s, buf, sizeof(buf), MSG_DONTWAIT);

        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return false;
        if (k > 0 && send(s, reply, sizeof(reply), MSG_NOSIGNAL) != (ssize_t)sizeof(reply))
                die("churn: reply", errno);
        return true;
}

static sn_registration_t churn_reg(int fd, uint64_t key)
{
        return (sn_registration_t){ .fd = fd, .key = key, .op = SN_OP_ENABLE,
                                    .filter = SN_REGISTER_EVENT_IN,
                                    .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };
}

static void *churn_server_sn(void *arg)
{
        struct churn *ch = arg;
        sn_registration_t r[CHURN_ACCEPT + CHURN_BATCH + 1];
        sn_entry_t e[CHURN_BATCH];
        uint32_t nr = 0;

        for (;;) {
                int k = sn_port_process(ch->sn_port, nr ? r : NULL, nr, e, CHURN_BATCH, 1000);

                if (k == -ETIMEDOUT)
                        k = 0;
                if (k < 0)
                        die("churn: process", k);
                for (uint32_t i = 0; i < nr; i++)
                        if (r[i].result)
                                die("churn: register", r[i].result);
                nr = 0;
                for (int i = 0; i < k; i++) {
                        int s = (int)e[i].key;

                        if (e[i].key == CHURN_EXIT_KEY)
                                return NULL;
                        if (e[i].key == CHURN_LISTEN_KEY) {
                                int a;

                                while (nr < CHURN_ACCEPT &&
                                       (a = accept4(ch->listener, NULL, NULL, SOCK_CLOEXEC)) >= 0)
                                        r[nr++] = churn_reg(a, (uint64_t)a);
                                r[nr++] = churn_reg(ch->listener, CHURN_LISTEN_KEY);
                                continue;
                        }
                        if (churn_answer(s))
                                sn_socket_close(ch->conn, s);
                        else
                                r[nr++] = churn_reg(s, (uint64_t)s);
                }
        }
}

static void *churn_server_epoll(void *arg)
{
        struct churn *ch = arg;
        struct epoll_event ev[CHURN_BATCH];

        for (;;) {
                int k = epoll_wait(ch->ep, ev, CHURN_BATCH, 1000);

                if (k < 0 && errno != EINTR)
                        die("churn: epoll_wait", errno);
                for (int i = 0; i < k; i++) {
                        int s = (int)ev[i].data.u64;

                        if (ev[i].data.u64 == CHURN_EXIT_KEY)
                                return NULL;
                        if (ev[i].data.u64 == CHURN_LISTEN_KEY) {
                                struct epoll_event le = { .events = EPOLLIN | EPOLLONESHOT,
                                                          .data.u64 = CHURN_LISTEN_KEY };
                                int a;

                                for (int n = 0; n < CHURN_ACCEPT &&
                                                (a = accept4(ch->listener, NULL, NULL,
                                                             SOCK_CLOEXEC)) >= 0;
                                     n++) {
                                        struct epoll_event ce = { .events = EPOLLIN | EPOLLONESHOT,
                                                                  .data.u64 = (uint64_t)a };

                                        if (epoll_ctl(ch->ep, EPOLL_CTL_ADD, a, &ce) < 0)
                                                die("churn: epoll_ctl", errno);
                                }
                                epoll_ctl(ch->ep, EPOLL_CTL_MOD, ch->listener, &le);
                                continue;
                        }
                        if (churn_answer(s)) {
                                close(s);
                        } else {
                                struct epoll_event ce = { .events = EPOLLIN | EPOLLONESHOT,
                                                          .data.u64 = (uint64_t)s };

                                epoll_ctl(ch->ep, EPOLL_CTL_MOD, s, &ce);
                        }
                }
        }
}

/* One run of the server (socknotify or epoll) under the client load; connections per second.
 * For socknotify, adds the daemon's CPU time and the connections to *cpu and *conns. */
static double churn_run(bool sn, double *cpu, long *conns)
{
        struct churn ch = { .ep = -1 };
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        pthread_t server, clients[CHURN_CLIENTS];
        int efd = -1;
        double t0, t, cpu0 = daemon_pid > 0 ? cpu_seconds(daemon_pid) : -1;

        ch.listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (ch.listener < 0 || bind(ch.listener, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            listen(ch.listener, SOMAXCONN) < 0 ||
            getsockname(ch.listener, (struct sockaddr *)&sa, &len) < 0)
                die("churn: listener", errno);
        ch.port = sa.sin_port;
        if (sn) {
                sn_registration_t r = churn_reg(ch.listener, CHURN_LISTEN_KEY);
                int err;

                connect_port(&ch.conn, &ch.sn_port);
                err = register_many(ch.sn_port, &r, 1);
                if (err)
                        die("churn: register listener", err);
        } else {
                struct epoll_event le = { .events = EPOLLIN | EPOLLONESHOT,
                                          .data.u64 = CHURN_LISTEN_KEY };

                ch.ep = epoll_create1(EPOLL_CLOEXEC);
                if (ch.ep < 0 || epoll_ctl(ch.ep, EPOLL_CTL_ADD, ch.listener, &le) < 0)
                        die("churn: epoll", errno);
        }
        if (pthread_create(&server, NULL, sn ? churn_server_sn : churn_server_epoll, &ch))
                die("pthread_create", EAGAIN);
        t0 = now();
        ch.deadline = t0 + seconds_per_run;
        for (int i = 0; i < CHURN_CLIENTS; i++)
                if (pthread_create(&clients[i], NULL, churn_client, &ch))
                        die("pthread_create", EAGAIN);
        for (int i = 0; i < CHURN_CLIENTS; i++)
                pthread_join(clients[i], NULL);
        t = now() - t0;
        /* Every connection was answered, hence closed: only the server is left to stop. */
        if (sn) {
                int err = sn_port_post(ch.sn_port, CHURN_EXIT_KEY, 0, 0);

                if (err)
                        die("churn: post", err);
        } else {
                struct epoll_event xe = { .events = EPOLLIN, .data.u64 = CHURN_EXIT_KEY };

                efd = eventfd(1, EFD_CLOEXEC);
                if (efd < 0 || epoll_ctl(ch.ep, EPOLL_CTL_ADD, efd, &xe) < 0)
                        die("churn: eventfd", errno);
        }
        pthread_join(server, NULL);
        if (sn && cpu0 >= 0) {
                *cpu += cpu_seconds(daemon_pid) - cpu0;
                *conns += atomic_load(&ch.done);
        }
        if (sn) {
                sn_socket_close(ch.conn, ch.listener);
                sn_port_close(ch.sn_port);
                sn_conn_close(ch.conn);
        } else {
                close(ch.listener);
                close(efd);
                close(ch.ep);
        }
        return (double)atomic_load(&ch.done) / t;
}

static void bench_churn(void)
{
        double xs[16], ys[16], cpu = 0;
        long conns = 0;
        char extra[256];

        for (int r = 0; r < rounds; r++) {
                xs[r] = churn_run(true, &cpu, &conns);
                ys[r] = churn_run(false, NULL, NULL);
        }
        /* The daemon's CPU time per connection: what caps one daemon's connection rate. */
        snprintf(extra, sizeof(extra),
                 "\"client_threads\": %d, \"server_threads\": 1, \"batch\": %d, "
                 "\"request_bytes\": %d, \"reply_bytes\": %d, \"daemon_cpu_us_per_conn\": %.2f",
                 CHURN_CLIENTS, CHURN_BATCH, CHURN_MSG, CHURN_MSG,
                 conns ? cpu * 1e6 / (double)conns : -1.0);
        report("churn", "conns/s", median(xs, rounds), median(ys, rounds), 0.70, true, extra);
}

/* ---- 11. idle: what waiting costs ---------------------------------------------------------- */

/*
 * 1000 registrations of quiet sockets and one thread waiting in sn_port_dequeue(): over a
 * window (10 s, 3 s with --quick), the CPU time of the daemon and of the waiting thread, in
 * percent of one core.  Target: each under 1 % (the spins of the rings follow activity only).
 */
#define IDLE_EXIT_KEY ((uint64_t)-1)

struct idle_waiter {
        sn_port_t *port;
        long entries;
};

static void *idle_wait(void *arg)
{
        struct idle_waiter *w = arg;
        sn_entry_t e[16];

        for (;;) {
                int k = sn_port_dequeue(w->port, e, 16, SN_INFINITE);

                if (k < 0)
                        die("idle dequeue", k);
                for (int i = 0; i < k; i++)
                        if (e[i].key == IDLE_EXIT_KEY)
                                return NULL;
                w->entries += k;
        }
}

static void bench_idle(void)
{
        const int N = 1000;
        double window = smoke ? 0.3 : quick ? 3.0 : 10.0, d0, d1, c0, c1, t0, t1, dp, cp;
        int (*sp)[2] = calloc((size_t)N, sizeof(*sp));
        struct idle_waiter w = { 0 };
        struct timespec ts;
        clockid_t clk;
        pthread_t th;
        sn_conn_t *c;
        pid_t dpid;
        int err;

        for (int i = 0; i < N; i++)
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[i]) < 0)
                        die("socketpair", errno);
        connect_port(&c, &w.port);
        err = register_all(w.port, sp, N, SN_TRIGGER_LEVEL);
        if (err)
                die("register", err);
        dpid = daemon_pid > 0 ? daemon_pid : daemon_pid_of(c);
        pthread_create(&th, NULL, idle_wait, &w);
        if (pthread_getcpuclockid(th, &clk))
                die("pthread_getcpuclockid", EINVAL);
        usleep(200000); /* the spins of the calls above die down */
        clock_gettime(clk, &ts);
        c0 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        d0 = cpu_seconds(dpid);
        t0 = now();
        usleep((useconds_t)(window * 1e6));
        t1 = now();
        d1 = cpu_seconds(dpid);
        clock_gettime(clk, &ts);
        c1 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        err = sn_port_post(w.port, IDLE_EXIT_KEY, 0, 0);
        if (err)
                die("post", err);
        pthread_join(th, NULL);
        if (w.entries)
                die("idle: quiet sockets reported", EPROTO);
        dp = d0 < 0 || d1 < 0 ? -1 : 100 * (d1 - d0) / (t1 - t0);
        cp = 100 * (c1 - c0) / (t1 - t0);
        printf("{\"workload\": \"idle_cpu\", \"unit\": \"%% of a core\", \"transport\": \"%s\", "
               "\"daemon\": %.3f, \"client\": %.3f, \"registrations\": %d, \"seconds\": %.1f, "
               "\"target\": 1.0, \"met\": %s}\n",
               pass_name, dp, cp, N, t1 - t0,
               smoke || dp < 0 ? "null" : dp < 1.0 && cp < 1.0 ? "true" : "false");
        fflush(stdout);
        fprintf(stderr, "%-18s daemon %.3f %%, waiting client %.3f %% of a core over %.1f s  "
                        "target <1 each  %s  [%s]\n",
                "idle_cpu", dp, cp, t1 - t0,
                smoke ? "(smoke: not judged)" : dp >= 0 && dp < 1.0 && cp < 1.0 ? "met"
                                                                              : "MISSED",
                pass_name);
        sn_port_close(w.port);
        sn_conn_close(c);
        close_pairs(sp, N);
}

/* ---- 10. scale matrix: registrations 1,000 to 15,000 over 1, 10 and 100 connections -------- */

/* For each cell (N registrations spread over C connections, one port each, socket i on port
 * i % C), on a fresh daemon: the wall time and the daemon's CPU time to register all N (each
 * connection registers its share in one call, all connections at once), the daemon's RSS and
 * descriptor count before and after, the kernel's epoll items (slab eventpoll_epi, when
 * readable), then the delivery rate of a fixed active set of 1,000 sockets (a byte waiting,
 * level-triggered persistent, as in delivery) while the other N - 1,000 sit idle, dequeued by
 * one thread per connection in batches of 256.  Baseline: C threads, one epoll instance each
 * over the same sockets (epoll_ctl ADD, then epoll_wait).  Idle sockets are unbound UDP
 * sockets (no peer: one descriptor each on the client's side); active ones are socket pairs.
 * Opt-in (--only scale_matrix) except under --smoke: a full run takes about six minutes. */
enum { SM_ACTIVE = 1000 };

struct sm_worker {
        pthread_barrier_t *go;
        sn_port_t *port;
        int ep;
        sn_registration_t *regs;
        int n;
        bool use_sn;
        int phase; /* 0: register, 1: deliver */
        double deadline;
        double start, end; /* when this worker began and ended its phase */
        long entries;
        int err;
};

static void *sm_work(void *arg)
{
        struct sm_worker *w = arg;

        pthread_barrier_wait(w->go);
        w->start = now();
        if (w->phase == 0) {
                if (w->use_sn) {
                        w->err = register_many(w->port, w->regs, (uint32_t)w->n);
                } else {
                        for (int i = 0; i < w->n && !w->err; i++) {
                                struct epoll_event e = { .events = EPOLLIN,
                                                         .data.u64 = w->regs[i].key };

                                if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->regs[i].fd, &e) < 0)
                                        w->err = -errno;
                        }
                }
                w->end = now();
                return NULL;
        }
        w->entries = 0;
        if (w->use_sn) {
                sn_entry_t e[256];

                while (now() < w->deadline) {
                        int k = sn_port_dequeue(w->port, e, 256, 100);

                        if (k == -ETIMEDOUT)
                                continue;
                        if (k < 0) {
                                w->err = k;
                                break;
                        }
                        w->entries += k;
                }
        } else {
                struct epoll_event e[256];

                while (now() < w->deadline) {
                        int k = epoll_wait(w->ep, e, 256, 100);

                        if (k < 0 && errno != EINTR) {
                                w->err = -errno;
                                break;
                        }
                        w->entries += k > 0 ? k : 0;
                }
        }
        w->end = now();
        return NULL;
}

/* Runs one phase on C workers released at once; returns the wall time from the first one's
 * start to the last one's end (seconds), and the sum of their entries in *entries. */
static double sm_phase(struct sm_worker *w, int C, int phase, bool use_sn, long *entries)
{
        pthread_barrier_t go;
        pthread_t *th = calloc((size_t)C, sizeof(*th));
        double t0, first = 1e300, last = 0;

        pthread_barrier_init(&go, NULL, (unsigned)C + 1);
        for (int j = 0; j < C; j++) {
                w[j].go = &go;
                w[j].phase = phase;
                w[j].use_sn = use_sn;
                w[j].err = 0;
                if (pthread_create(&th[j], NULL, sm_work, &w[j]))
                        die("pthread_create", EAGAIN);
        }
        t0 = now();
        for (int j = 0; j < C; j++)
                w[j].deadline = t0 + seconds_per_run;
        pthread_barrier_wait(&go);
        if (entries)
                *entries = 0;
        for (int j = 0; j < C; j++) {
                pthread_join(th[j], NULL);
                if (w[j].err)
                        die(phase ? "scale_matrix: deliver" : "scale_matrix: register",
                            w[j].err);
                if (entries)
                        *entries += w[j].entries;
                first = SN_BENCH_MIN(first, w[j].start);
                last = w[j].end > last ? w[j].end : last;
        }
        pthread_barrier_destroy(&go);
        free(th);
        return last - first;
}

static int count_fds(pid_t pid)
{
        char path[64];
        struct dirent *d;
        DIR *dir;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        dir = opendir(path);
        if (!dir)
                return -1;
        while ((d = readdir(dir)))
                n += d->d_name[0] != '.';
        closedir(dir);
        return n;
}

/* Active objects of the kernel's epoll item cache, machine-wide (-1 when unreadable). */
static long slab_epitems(void)
{
        char line[512];
        long n = -1;
        FILE *f = fopen("/proc/slabinfo", "r");

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "eventpoll_epi %ld", &n) == 1)
                        break;
        if (f)
                fclose(f);
        return n;
}

static void scale_cell(int N, int C, FILE *csv)
{
        int (*act)[2] = readable_pairs(SM_ACTIVE);
        int *fds = malloc(sizeof(int) * (size_t)N);
        sn_registration_t *regs = calloc((size_t)N, sizeof(*regs));
        struct sm_worker *w = calloc((size_t)C, sizeof(*w));
        sn_conn_t **conns = calloc((size_t)C, sizeof(*conns));
        char path[256];
        double reg_wall, reg_cpu, ep_wall, cpu0, xs[16], ys[16], sn_rate, base_rate;
        long rss0, rss1, epi0, epi1, entries;
        int fd0, fd1, at = 0;
        pid_t pid = spawn_daemon(bench_argv0, bench_nofile, path, sizeof(path), false);

        for (int i = 0; i < N; i++) {
                fds[i] = i < SM_ACTIVE ? act[i][0] : socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (fds[i] < 0)
                        die("scale_matrix: socket (raise the fd limit)", errno);
        }
        /* Connection j's share is contiguous in regs: sockets j, j + C, j + 2C, ... */
        for (int j = 0; j < C; j++) {
                int r = sn_conn_open(path, &conns[j]);

                if (r < 0 || (r = sn_port_create(conns[j], 0, &w[j].port)) < 0)
                        die("scale_matrix: connect", r);
                w[j].regs = regs + at;
                for (int i = j; i < N; i += C)
                        regs[at++] = (sn_registration_t){ .fd = fds[i], .key = (uint64_t)i,
                                                          .op = SN_OP_ENABLE,
                                                          .filter = SN_REGISTER_EVENT_IN,
                                                          .trigger = SN_TRIGGER_LEVEL };
                w[j].n = (int)(regs + at - w[j].regs);
                w[j].ep = epoll_create1(EPOLL_CLOEXEC);
                if (w[j].ep < 0)
                        die("scale_matrix: epoll_create1", errno);
        }
        rss0 = rss_bytes(pid);
        fd0 = count_fds(pid);
        epi0 = slab_epitems();
        cpu0 = cpu_seconds(pid);
        reg_wall = sm_phase(w, C, 0, true, NULL);
        reg_cpu = cpu_seconds(pid) - cpu0;
        rss1 = rss_bytes(pid);
        fd1 = count_fds(pid);
        epi1 = slab_epitems();
        ep_wall = sm_phase(w, C, 0, false, NULL);
        for (int r = 0; r < rounds; r++) {
                double t = sm_phase(w, C, 1, true, &entries);

                xs[r] = (double)entries / t;
                t = sm_phase(w, C, 1, false, &entries);
                ys[r] = (double)entries / t;
        }
        sn_rate = median(xs, rounds);
        base_rate = median(ys, rounds);
        printf("{\"workload\": \"scale_matrix\", \"unit\": \"entries/s\", \"socknotify\": %.0f, "
               "\"baseline\": %.0f, \"ratio\": %.3f, \"target\": null, \"met\": null, "
               "\"informational\": true%s, \"registrations\": %d, \"clients\": %d, "
               "\"active\": %d, \"register_us\": %.3f, \"register_daemon_cpu_us\": %.3f, "
               "\"register_epoll_us\": %.3f, \"daemon_rss_before\": %ld, "
               "\"daemon_rss_after\": %ld, \"rss_per_registration\": %.1f, "
               "\"daemon_fds_before\": %d, \"daemon_fds_after\": %d, \"epoll_items_added\": %ld}\n",
               sn_rate, base_rate, sn_rate / base_rate, smoke ? ", \"smoke\": true" : "", N, C,
               SM_ACTIVE, reg_wall * 1e6 / N, reg_cpu * 1e6 / N, ep_wall * 1e6 / N, rss0, rss1,
               (double)(rss1 - rss0) / N, fd0, fd1, epi0 < 0 || epi1 < 0 ? -1 : epi1 - epi0);
        fflush(stdout);
        fprintf(stderr, "%-13s %6d %4d %8.2f %8.2f %8.2f %11.0f %11.0f %6.3f %8.0f %7d %9ld\n",
                "scale_matrix", N, C, reg_wall * 1e6 / N, reg_cpu * 1e6 / N, ep_wall * 1e6 / N,
                sn_rate, base_rate, sn_rate / base_rate, (double)(rss1 - rss0) / N, fd1,
                epi0 < 0 || epi1 < 0 ? -1 : epi1 - epi0);
        if (csv)
                fprintf(csv, "%d %d %.3f %.3f %.3f %.0f %.0f %.1f %ld %d %d %ld\n", N, C,
                        reg_wall * 1e6 / N, reg_cpu * 1e6 / N, ep_wall * 1e6 / N, sn_rate,
                        base_rate, (double)(rss1 - rss0) / N, rss1, fd0, fd1,
                        epi0 < 0 || epi1 < 0 ? -1 : epi1 - epi0);
        for (int j = 0; j < C; j++) {
                sn_port_close(w[j].port);
                sn_conn_close(conns[j]);
                close(w[j].ep);
        }
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        unlink(path);
        *strrchr(path, '/') = 0;
        rmdir(path);
        for (int i = SM_ACTIVE; i < N; i++)
                close(fds[i]);
        close_pairs(act, SM_ACTIVE);
        free(fds);
        free(regs);
        free(w);
        free(conns);
}

static void bench_scale_matrix(void)
{
        static const int Ns[] = { 1000, 2000, 5000, 10000, 15000 }, Cs[] = { 1, 10, 100 };
        FILE *csv = NULL;
        int cells = 0;

        if (daemon_pid <= 0) {
                fprintf(stderr, "scale_matrix: needs daemons of its own (no --socket)\n");
                return;
        }
        if (csv_dir) {
                char path[512];

                snprintf(path, sizeof(path), "%s/scale.csv", csv_dir);
                csv = fopen(path, "w");
                if (csv)
                        fprintf(csv, "# registrations clients register_us register_daemon_cpu_us "
                                     "register_epoll_us delivery baseline rss_per_registration "
                                     "daemon_rss daemon_fds_before daemon_fds_after "
                                     "epoll_items_added\n");
        }
        fprintf(stderr, "%-13s %6s %4s %8s %8s %8s %11s %11s %6s %8s %7s %9s\n", "scale_matrix",
                "N", "C", "reg_us", "dmn_us", "epoll_us", "deliver/s", "epoll/s", "ratio",
                "rss/reg", "dmn_fds", "epitems");
        for (size_t c = 0; c < sizeof(Cs) / sizeof(Cs[0]); c++)
                for (size_t n = 0; n < sizeof(Ns) / sizeof(Ns[0]); n++) {
                        /* This process: N registered sockets, the active set's other ends, a
                         * connection and an epoll instance per client; the daemon: N copies
                         * and its connections.  Both stay under the descriptor limit. */
                        if ((unsigned long)Ns[n] + SM_ACTIVE + 3ul * (unsigned long)Cs[c] + 100 >
                            bench_nofile)
                                continue;
                        scale_cell(Ns[n], Cs[c], csv);
                        cells++;
                }
        if (!cells)
                fprintf(stderr, "scale_matrix: descriptor limit %lu too small for any cell\n",
                        bench_nofile);
        if (csv)
                fclose(csv);
}

static void run_workloads(void);

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "quick", no_argument, NULL, 'q' },
                { "smoke", no_argument, NULL, 'S' },
                { "only", required_argument, NULL, 'o' },
                { "socket", required_argument, NULL, 's' },
                { "csv-dir", required_argument, NULL, 'c' },
                { "transport", required_argument, NULL, 't' },
                { "daemon-arg", required_argument, NULL, 'd' },
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
                case 'd':
                        if (ndaemon_args == BENCH_DAEMON_ARGS) {
                                fprintf(stderr, "socknotify-bench: at most %d --daemon-arg\n",
                                        BENCH_DAEMON_ARGS);
                                return 2;
                        }
                        daemon_args[ndaemon_args++] = optarg;
                        break;
                case 't':
                        if (!strcmp(optarg, "both"))
                                transport_opt = TRANSPORT_BOTH;
                        else if (!strcmp(optarg, "rings"))
                                transport_opt = TRANSPORT_RINGS;
                        else if (!strcmp(optarg, "socket"))
                                transport_opt = TRANSPORT_SOCKET;
                        else {
                                fprintf(stderr, "socknotify-bench: --transport: both, rings "
                                                "or socket\n");
                                return 2;
                        }
                        break;
                default:
                        fprintf(c == 'h' ? stdout : stderr,
                                "Usage: socknotify-bench [--quick | --smoke] [--only NAME] "
                                "[--socket PATH] "
                                "[--csv-dir DIR]\n       [--transport both|rings|socket] "
                                "[--daemon-arg ARG]..."
                                "\nworkloads (--only NAME): delivery "
                                "delivery_16 delivery_1 libevent_delivery oneshot_rearm\n"
                                "  rearm_nowait idle_cpu latency (latency_p50, latency_p99) "
                                "registration registration_store\n  memory (memory_daemon, "
                                "memory_client) scale mt_server churn; scale_matrix runs\n"
                                "  only by name or under --smoke\n"
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
        if (transport_opt != TRANSPORT_RINGS) {
                /* The library reads it at each connection's handshake. */
                setenv("SOCKNOTIFY_NO_SHM", "1", 1);
                socket_pass = true;
                pass_name = "socket";
                run_workloads();
                unsetenv("SOCKNOTIFY_NO_SHM");
                socket_pass = false;
                pass_name = "rings";
        }
        if (transport_opt != TRANSPORT_SOCKET)
                run_workloads();
        /* Six minutes at full length: only when asked for by name, or briefly under --smoke. */
        if ((only && selected("scale_matrix")) || (!only && smoke))
                bench_scale_matrix();
        stop_daemon();
        return 0;
}

static void run_workloads(void)
{
        if (selected("delivery") || selected("delivery_16") || selected("delivery_1") ||
            selected("scale") || selected("libevent_delivery"))
                bench_delivery();
        if (selected("oneshot_rearm"))
                bench_oneshot();
        if (selected("rearm_nowait"))
                bench_rearm_nowait();
        if (selected("idle_cpu"))
                bench_idle();
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
        if (selected("churn"))
                bench_churn();
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * sn-restore - how long the daemon takes to serve again after a re-exec, a crash and an
 * orderly restart, for 1,000 / 10,000 / 100,000 items of each kind a daemon keeps, and what a
 * registration costs in the daemon's memory.  Never run by make check: timings are not tests.
 *
 *   bench/sn-restore                      everything, 3 runs a point (a quarter of an hour)
 *   bench/sn-restore --quick              1,000 items, one run a point (20 seconds)
 *   bench/sn-restore [--kinds connections,ports,named-ports,registrations,posted,waits]
 *                    [--sizes 1000,10000,100000] [--scenarios reexec,crash,stop,nostore]
 *                    [--runs N] [--no-memory] [--daemon PATH]
 *
 * Kinds: N client connections; N ports on one connection; N named ports on one connection
 * (each name 255 bytes, the longest, all alike but their last 11); N registrations (idle UDP
 * sockets) on one port; N posted packets queued on one port and not dequeued; N dequeues
 * parked on one port (submitted with sn_port_submit, each its own waiter).  Connections, ports (one epoll
 * descriptor each in the daemon) and registrations hold descriptors: they stop at the
 * descriptor limit less 2,000, and the row says "capped".
 *
 * Scenarios, each on a fresh daemon started by this program (daemon/socknotifyd of the build
 * tree), the time running from the event to the first call answered on the connection that
 * holds the items (the status call, sn_conn_status):
 *   reexec   SIGUSR2; answered by the new image (its "reexecs" count is one higher; without
 *            that count in the status document, once the log says it listens again);
 *   crash    the daemon keeps its state in a descriptor store this program plays
 *            (NOTIFY_SOCKET, FDSTORE; bench/store.c); kill -9, and the next daemon starts at
 *            once with the stored descriptors (LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID);
 *   stop     the same store; SIGTERM, the daemon exits, the next one starts with the store;
 *   nostore  a daemon started by hand; kill -9, the next one starts at once on the same path.
 *            Calls are retried for a second once it accepts connections; a client that is
 *            never served again is reported as "sessions lost" with the error its calls got.
 * The daemon's own restore time is read from its log ("restored ... in N us") when it writes
 * one.  After the restore the status document's counts of this user (connections, ports,
 * registrations, waits, posted) are compared with those before: "exact" says whether they
 * match.
 *
 * Output: one JSON line per point on stdout, the median of the runs and each run, the restore
 * time per item (us_per_item: the daemon's own time, else until served, over the items) and
 * its ratio to the previous size of the same kind (ratio_to_previous: 2.0 for a linear
 * restore of twice the items), with the load average; the same per point on stderr, and a
 * markdown table at the end (docs/performance.md, "Restore time").  Restore linearity:
 *   bench/sn-restore --kinds connections,ports,named-ports,registrations \
 *                    --sizes 4000,8000,16000 --scenarios crash --no-memory
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socknotify.h"

#include "bench/store.h"

extern char **environ;

enum kind { K_CONNECTIONS, K_PORTS, K_NAMED_PORTS, K_REGISTRATIONS, K_POSTED, K_WAITS, K_MAX };
enum scenario { S_REEXEC, S_CRASH, S_STOP, S_NOSTORE, S_MAX };

static const char *const kind_names[K_MAX] = { "connections", "ports", "named-ports",
                                               "registrations", "posted", "waits" };
static const char *const scenario_names[S_MAX] = { "reexec", "crash", "stop", "nostore" };
static const char *const scenario_titles[S_MAX] = {
        "re-exec (SIGUSR2)", "kill -9, store", "SIGTERM, store", "kill -9, no store"
};

#define MAX_RUNS 9
#define MAX_SIZES 8

static char daemon_bin[512];
static int runs = 3;
static int fd_cap; /* items that hold descriptors: the limit less 2,000 */
static int timeout_s = 60;

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

        fprintf(stderr, "sn-restore: %s: %s\n", what, err < 0 ? sn_strerror(err) : strerror(e));
        exit(1);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* The median of the n values of v that are >= 0 (a failed run is -1); -1 when there is none. */
static double median(const double *v, int n)
{
        double s[MAX_RUNS];
        int k = 0;

        for (int i = 0; i < n; i++)
                if (v[i] >= 0)
                        s[k++] = v[i];
        if (!k)
                return -1;
        qsort(s, (size_t)k, sizeof(*s), cmp_double);
        return k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

static double loadavg(void)
{
        double l = -1;
        FILE *f = fopen("/proc/loadavg", "r");

        if (f) {
                if (fscanf(f, "%lf", &l) != 1)
                        l = -1;
                fclose(f);
        }
        return l;
}

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

/* The number after "key": in json, searched from from (NULL: the start); -1 when absent. */
static long long json_number(const char *json, const char *from, const char *key)
{
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\"%s\":", key);
        p = strstr(from ? from : json, pat);
        return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* ---- the daemon ----------------------------------------------------------------------------- */

struct daemon {
        pid_t pid;
        char dir[64];
        char path[96];
        char log[96];
        bool store; /* started under the store */
};

/* The daemon of the build tree: beside bench/ (or bench/.libs/ under libtool's wrapper). */
static void find_daemon(const char *argv0)
{
        char dir[512];

        if (daemon_bin[0])
                return;
        snprintf(dir, sizeof(dir), "%s", argv0);
        snprintf(daemon_bin, sizeof(daemon_bin), "%s/../daemon/socknotifyd", dirname(dir));
        if (access(daemon_bin, X_OK) != 0) {
                snprintf(dir, sizeof(dir), "%s", argv0);
                snprintf(daemon_bin, sizeof(daemon_bin), "%s/../../daemon/socknotifyd",
                         dirname(dir));
        }
        if (access(daemon_bin, X_OK) != 0) {
                fprintf(stderr, "sn-restore: %s not found; pass --daemon\n", daemon_bin);
                exit(1);
        }
}

/* Writes v in decimal at the end of buf's "NAME=" text, with no library call (after fork). */
static void put_decimal(char *buf, long v)
{
        char tmp[24];
        int n = 0;
        char *end = buf + strlen(buf);

        do
                tmp[n++] = (char)('0' + v % 10);
        while ((v /= 10) > 0);
        while (n)
                *end++ = tmp[--n];
        *end = 0;
}

/* Starts the daemon on d->path, its log appended to d->log.  store: under the store, and with
 * fds (n, names joined by ':') passed as systemd passes a store.  wait: returns once it accepts
 * connections (else at once: the clients' first call measures when it serves). */
static void daemon_spawn(struct daemon *d, bool store_on, const int *fds, unsigned n,
                         const char *names, bool wait)
{
        static char fdsvar[32], pidvar[48], notify[160], cap[32];
        char *namesvar = NULL, **envp;
        const char *argv[24];
        size_t ne = 0, k = 0;
        int logfd;

        for (char **e = environ; *e; e++)
                ne++;
        envp = calloc(ne + 8, sizeof(*envp));
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "LISTEN_", 7) && strncmp(*e, "NOTIFY_SOCKET=", 14) &&
                    strncmp(*e, "FDSTORE=", 8))
                        envp[k++] = *e;
        if (store_on) {
                snprintf(notify, sizeof(notify), "NOTIFY_SOCKET=%s", store.path);
                snprintf(cap, sizeof(cap), "FDSTORE=%d", BENCH_STORE_MAX);
                envp[k++] = notify;
                envp[k++] = cap;
        }
        if (n) {
                snprintf(fdsvar, sizeof(fdsvar), "LISTEN_FDS=%u", n);
                if (asprintf(&namesvar, "LISTEN_FDNAMES=%s", names) < 0)
                        die("asprintf", ENOMEM);
                snprintf(pidvar, sizeof(pidvar), "LISTEN_PID=");
                envp[k++] = fdsvar;
                envp[k++] = namesvar;
                envp[k++] = pidvar;
        }
        envp[k] = NULL;
        k = 0;
        argv[k++] = daemon_bin;
        argv[k++] = "--socket";
        argv[k++] = d->path;
        /* Every kind at 100,000 and more fits. */
        argv[k++] = "--max-connections=200000";
        argv[k++] = "--max-connections-per-user=200000";
        argv[k++] = "--max-ports=200000";
        argv[k++] = "--max-ports-per-user=200000";
        argv[k++] = "--max-registrations=200000";
        argv[k++] = "--max-sockets-per-user=200000";
        argv[k++] = "--max-posted=200000";
        argv[k++] = "--max-posted-per-user=400000";
        argv[k++] = "--max-waits=200000";
        argv[k++] = "--max-waits-per-user=200000";
        argv[k++] = "--max-output=1073741824";
        argv[k++] = "--max-output-per-user=1073741824";
        argv[k] = NULL;
        logfd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (logfd < 0)
                die("daemon log", errno);
        d->store = store_on;
        d->pid = fork();
        if (d->pid < 0)
                die("fork", errno);
        if (d->pid == 0) {
                int moved[BENCH_STORE_MAX];

                /* Before the passed descriptors take 3..3+n, where logfd may be. */
                if (dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
                        _exit(126);
                /* Out of the way of 3..3+n first: above every target, never over another. */
                for (unsigned i = 0; i < n; i++)
                        if ((moved[i] = fcntl(fds[i], F_DUPFD, (int)(3 + n))) < 0)
                                _exit(126);
                for (unsigned i = 0; i < n; i++)
                        if (dup2(moved[i], 3 + (int)i) < 0)
                                _exit(126);
                /* Dies with us, also after it re-execs itself. */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close_range(3 + n, ~0u, 0);
                if (n)
                        put_decimal(pidvar, (long)getpid());
                execve(daemon_bin, (char *const *)argv, envp);
                _exit(127);
        }
        close(logfd);
        free(namesvar);
        free(envp);
        if (!wait)
                return;
        for (double end = now() + timeout_s;; usleep(2000)) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                bool ok;

                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->path);
                ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
                close(fd);
                if (ok)
                        return;
                if (now() > end || waitpid(d->pid, NULL, WNOHANG) == d->pid)
                        die("the daemon did not start (see its log)", ETIMEDOUT);
        }
}

static void daemon_start(struct daemon *d, bool store_on)
{
        snprintf(d->dir, sizeof(d->dir), "/tmp/sn-restore-XXXXXX");
        if (!mkdtemp(d->dir))
                die("mkdtemp", errno);
        snprintf(d->path, sizeof(d->path), "%s/socknotify.sock", d->dir);
        snprintf(d->log, sizeof(d->log), "%s/daemon.log", d->dir);
        daemon_spawn(d, store_on, NULL, 0, NULL, true);
}

/* Ends the daemon (SIGKILL: a SIGTERM would hand everything to the store) and forgets it. */
static void daemon_end(struct daemon *d, bool keep_log)
{
        if (d->pid > 0) {
                kill(d->pid, SIGKILL);
                waitpid(d->pid, NULL, 0);
                d->pid = 0;
        }
        if (d->store)
                store_clear();
        unlink(d->path);
        if (!keep_log) {
                unlink(d->log);
                rmdir(d->dir);
        }
}

static off_t file_size(const char *path)
{
        struct stat st;

        return stat(path, &st) == 0 ? st.st_size : 0;
}

/* The daemon's own restore time in seconds, from the last line of its log after offset that
 * says "restored" and "in N us" (or ms); -1 when there is none. */
static double logged_restore(const char *log, off_t offset)
{
        char line[2048];
        double t = -1;
        FILE *f = fopen(log, "r");

        if (!f)
                return -1;
        fseeko(f, offset, SEEK_SET);
        while (fgets(line, sizeof(line), f)) {
                const char *p = strstr(line, "restored");
                char unit[3];
                double v;

                if (!p)
                        continue;
                for (p = strstr(p, " in "); p; p = strstr(p + 1, " in "))
                        if (sscanf(p, " in %lf %2[mu]s", &v, unit) == 2)
                                t = v / (unit[0] == 'u' ? 1e6 : 1e3);
        }
        fclose(f);
        return t;
}

/* True when the daemon's log holds a line with what after offset. */
static bool log_has(const char *log, off_t offset, const char *what)
{
        char line[2048];
        bool found = false;
        FILE *f = fopen(log, "r");

        if (!f)
                return false;
        fseeko(f, offset, SEEK_SET);
        while (!found && fgets(line, sizeof(line), f))
                found = strstr(line, what) != NULL;
        fclose(f);
        return found;
}

/* ---- the items ------------------------------------------------------------------------------ */

struct items {
        enum kind kind;
        int n;
        sn_conn_t *conn;  /* holds the items; the status call goes here */
        sn_port_t *port;  /* the port of registrations, posted packets and waits */
        sn_conn_t **conns; /* connections: conns[0] is conn */
        sn_port_t **ports;
        int *socks;
        sn_call_t **calls; /* the parked waits */
        char before[512]; /* this user's counts in the status document */
};

/* The longest name a port may have (PROTOCOL.md): the journal keeps it in four records. */
#define NAME_LEN 255

/* Named port i's name: NAME_LEN bytes that differ only at the end, as names of one service
 * often do (a common prefix makes every comparison read most of the name). */
static void port_name(char *name, int i)
{
        memset(name, 'p', NAME_LEN);
        snprintf(name + NAME_LEN - 11, 12, "-%010d", i);
}

static int open_conn(const char *path, sn_conn_t **ret)
{
        int r = sn_conn_open(path, ret);

        if (r < 0)
                fprintf(stderr, "sn-restore: connect: %s\n", sn_conn_open_error());
        return r;
}

static void items_create(struct items *it, const char *path)
{
        sn_registration_t *r;
        int err = 0;

        if ((err = open_conn(path, &it->conn)) < 0)
                die("connect", err);
        switch (it->kind) {
        case K_CONNECTIONS:
                it->conns = calloc(it->n > 1 ? (size_t)it->n : 1, sizeof(*it->conns));
                it->conns[0] = it->conn;
                for (int i = 1; i < it->n; i++)
                        if ((err = open_conn(path, &it->conns[i])) < 0)
                                die("connect", err);
                break;
        case K_PORTS:
                it->ports = calloc((size_t)it->n, sizeof(*it->ports));
                for (int i = 0; i < it->n; i++)
                        if ((err = sn_port_create(it->conn, 0, &it->ports[i])) < 0)
                                die("port", err);
                break;
        case K_NAMED_PORTS:
                it->ports = calloc((size_t)it->n, sizeof(*it->ports));
                for (int i = 0; i < it->n; i++) {
                        char name[NAME_LEN + 1];

                        port_name(name, i);
                        if ((err = sn_port_create_named(it->conn, name, 0, &it->ports[i])) < 0)
                                die("named port", err);
                }
                break;
        case K_REGISTRATIONS:
                if ((err = sn_port_create(it->conn, 0, &it->port)) < 0)
                        die("port", err);
                it->socks = malloc(sizeof(int) * (size_t)it->n);
                r = calloc((size_t)it->n, sizeof(*r));
                for (int i = 0; i < it->n; i++) {
                        /* Idle and unbound: nothing is queued for them, on either side. */
                        it->socks[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                        if (it->socks[i] < 0)
                                die("socket", errno);
                        r[i] = (sn_registration_t){ .fd = it->socks[i], .key = (uint64_t)i,
                                                    .op = SN_OP_ENABLE,
                                                    .filter = SN_REGISTER_EVENT_IN,
                                                    .trigger = SN_TRIGGER_LEVEL };
                }
                err = sn_port_process(it->port, r, (uint32_t)it->n, NULL, 0, 0);
                for (int i = 0; i < it->n && !err; i++)
                        err = r[i].result;
                free(r);
                if (err)
                        die("register", err);
                break;
        case K_POSTED:
                if ((err = sn_port_create(it->conn, 0, &it->port)) < 0)
                        die("port", err);
                for (int i = 0; i < it->n; i++)
                        if ((err = sn_port_post(it->port, (uint64_t)i, (uint32_t)i, 0)) < 0)
                                die("post", err);
                break;
        case K_WAITS:
                if ((err = sn_port_create(it->conn, 0, &it->port)) < 0)
                        die("port", err);
                it->calls = calloc((size_t)it->n, sizeof(*it->calls));
                for (int i = 0; i < it->n; i++) {
                        /* Each its own waiter, never answered until the port closes. */
                        err = sn_port_submit(it->port, NULL, 0, 1, SN_INFINITE,
                                             SN_WAITER_MIN + (uint32_t)i, NULL, &it->calls[i]);
                        if (err < 0)
                                die("submit", err);
                }
                break;
        default:
                abort();
        }
}

/* Ends the parked waits and frees their calls: closing the port answers them (-ECANCELED), a
 * lost connection completes them (-ECONNRESET).  Returns false when some never completed.
 * (sn_conn_close() with submitted calls not yet completed reads freed memory in this
 * version of the library: they are all collected first.) */
static bool waits_end(struct items *it)
{
        int left = it->n, pfd = sn_conn_fd(it->conn), r = 0;
        double end = now() + timeout_s;

        sn_port_close(it->port);
        it->port = NULL;
        while (left > 0 && now() < end) {
                sn_call_t *k;
                struct pollfd p = { .fd = pfd, .events = POLLIN };

                r = sn_conn_collect(it->conn, &k);
                if (r == 1) {
                        sn_call_free(k);
                        left--;
                        continue;
                }
                if (r < 0 || pfd < 0)
                        break;
                poll(&p, 1, 100);
        }
        if (left > 0 && r >= 0) {
                fprintf(stderr, "sn-restore: %d parked wait(s) never ended; their connection "
                        "is left open\n", left);
                return false;
        }
        return true;
}

static void items_free(struct items *it)
{
        if (it->calls && !waits_end(it))
                it->conn = NULL;
        free(it->calls);
        /* Their handles are ours to free, before the connection. */
        sn_port_close(it->port);
        if (it->ports && it->conn)
                for (int i = 0; i < it->n; i++)
                        sn_port_close(it->ports[i]);
        if (it->conns)
                for (int i = it->n - 1; i > 0; i--)
                        sn_conn_close(it->conns[i]);
        /* Closing the connection closes its ports and frees its calls. */
        sn_conn_close(it->conn);
        if (it->socks)
                for (int i = 0; i < it->n; i++)
                        close(it->socks[i]);
        free(it->conns);
        free(it->ports);
        free(it->socks);
        *it = (struct items){ 0 };
}

/* This user's counts from a status document, as one comparable text. */
static void user_counts(const char *json, char *out, size_t outsz)
{
        static const char *const keys[] = { "connections", "ports", "registrations", "waits",
                                            "posted" };
        const char *u = strstr(json, "\"user\":");
        size_t len = 0;

        out[0] = 0;
        if (!u)
                return;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && len < outsz; i++)
                len += (size_t)snprintf(out + len, outsz - len, "%s%s %lld", i ? ", " : "",
                                        keys[i], json_number(json, u, keys[i]));
}

/* One status call on it->conn: 0 with the document's "reexecs" in *reexecs and the counts in
 * counts (when not NULL), or the call's error. */
static int status_call(struct items *it, long long *reexecs, char *counts, size_t countsz)
{
        char *json = NULL;
        int r = sn_conn_status(it->conn, &json);

        if (r < 0) {
                free(json);
                return r;
        }
        if (reexecs)
                *reexecs = json_number(json, NULL, "reexecs");
        if (counts)
                user_counts(json, counts, countsz);
        free(json);
        return 0;
}

/* ---- one measurement ----------------------------------------------------------------------- */

struct outcome {
        double served; /* seconds from the event to the first call answered; -1: never */
        double all_served; /* connections without a store: every connection answered */
        double restore; /* the daemon's own, from its log; -1: not logged */
        bool exact;
        int error; /* the calls' last error when never served */
        char after[512];
};

/* A watchdog for calls that would wait for ever on a daemon that never serves: after the
 * deadline, or when the daemon exits, its descriptors are let go (the store's copies closed,
 * the daemon killed), so the clients' calls fail instead. */
struct watchdog {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool done;
        pid_t pid;
        double deadline;
};

static void *watchdog_loop(void *arg)
{
        struct watchdog *w = arg;
        bool fired = false;

        pthread_mutex_lock(&w->lock);
        while (!w->done) {
                struct timespec ts;
                siginfo_t si = { 0 };

                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 20 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                pthread_cond_timedwait(&w->cond, &w->lock, &ts);
                if (w->done)
                        break;
                /* WNOWAIT: the daemon is reaped by whoever ends it. */
                if ((waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                     si.si_pid == w->pid) || now() > w->deadline) {
                        fired = true;
                        break;
                }
        }
        pthread_mutex_unlock(&w->lock);
        if (fired) {
                fprintf(stderr, "sn-restore: the daemon did not serve again (it exited, or "
                        "%d s passed); letting its clients go\n", timeout_s);
                kill(w->pid, SIGKILL);
                store_clear();
        }
        return NULL;
}

static void watchdog_start(struct watchdog *w, pid_t pid)
{
        *w = (struct watchdog){ .pid = pid, .deadline = now() + timeout_s };
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        if (pthread_create(&w->thread, NULL, watchdog_loop, w))
                die("pthread_create", EAGAIN);
}

static void watchdog_stop(struct watchdog *w)
{
        pthread_mutex_lock(&w->lock);
        w->done = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
}

/* Starts the next daemon with what the store holds. */
static void spawn_from_store(struct daemon *d)
{
        static char names[BENCH_STORE_MAX * 49];
        static int fds[BENCH_STORE_MAX];
        unsigned n;

        pthread_mutex_lock(&store.lock);
        n = store.n;
        memcpy(fds, store.fds, sizeof(int) * n);
        store_names_locked(names, sizeof(names));
        daemon_spawn(d, true, fds, n, names, false);
        pthread_mutex_unlock(&store.lock);
}

static struct outcome measure(enum kind kind, int n, enum scenario sc)
{
        struct outcome o = { .served = -1, .all_served = -1, .restore = -1 };
        struct items it = { .kind = kind, .n = n };
        struct daemon d = { 0 };
        struct watchdog w;
        long long reexecs = -1, re;
        double t0, deadline;
        off_t log_at;
        int r, st;

        daemon_start(&d, sc == S_CRASH || sc == S_STOP);
        items_create(&it, d.path);
        /* Answered after every earlier request of it->conn: the items are all in place (and,
         * under a store, flushed to it before this reply). */
        r = status_call(&it, &reexecs, it.before, sizeof(it.before));
        /* The connection that found the daemon ready may not be gone yet: counts that hold
         * still for 10 ms. */
        for (int i = 0; i < 50 && r == 0; i++) {
                char again[sizeof(it.before)];

                usleep(10000);
                r = status_call(&it, &reexecs, again, sizeof(again));
                if (!strcmp(again, it.before))
                        break;
                memcpy(it.before, again, sizeof(again));
        }
        if (r < 0)
                die("status", r);
        if (d.store && (r = store_sync(10000)) < 0)
                die("store sync", r);
        log_at = file_size(d.log);

        t0 = now();
        switch (sc) {
        case S_REEXEC:
                kill(d.pid, SIGUSR2);
                watchdog_start(&w, d.pid);
                /* The old image may still answer before it execs: the new one counts one more
                 * re-exec.  A status document without the count: the new image has logged that
                 * it listens. */
                while ((r = status_call(&it, &re, NULL, 0)) == 0 &&
                       !(reexecs >= 0 ? re > reexecs : log_has(d.log, log_at, "listening on")))
                        ;
                o.served = r == 0 ? now() - t0 : -1;
                watchdog_stop(&w);
                break;
        case S_CRASH:
        case S_STOP:
                kill(d.pid, sc == S_CRASH ? SIGKILL : SIGTERM);
                waitpid(d.pid, &st, 0);
                /* Everything the old daemon sent before it ended is in the store. */
                if ((r = store_sync(10000)) < 0)
                        die("store sync", r);
                spawn_from_store(&d);
                watchdog_start(&w, d.pid);
                r = status_call(&it, NULL, NULL, 0);
                o.served = r == 0 ? now() - t0 : -1;
                watchdog_stop(&w);
                break;
        case S_NOSTORE:
                kill(d.pid, SIGKILL);
                waitpid(d.pid, &st, 0);
                unlink(d.path); /* what a stale socket file does to the next start is not
                                   measured here */
                /* Started at once, as a supervisor would; the calls go once it accepts
                 * connections and are retried for a second (a library that resumes may fail
                 * the first call of a lost connection). */
                daemon_spawn(&d, false, NULL, 0, NULL, true);
                watchdog_start(&w, d.pid);
                deadline = now() + 1;
                while ((r = status_call(&it, NULL, NULL, 0)) < 0 && now() < deadline)
                        usleep(1000);
                o.served = r == 0 ? now() - t0 : -1;
                if (r == 0 && it.conns) {
                        for (int i = 1; i < n && r == 0; i++) {
                                char *json = NULL;

                                r = sn_conn_status(it.conns[i], &json);
                                free(json);
                        }
                        o.all_served = r == 0 ? now() - t0 : -1;
                }
                watchdog_stop(&w);
                break;
        default:
                abort();
        }
        o.error = r;
        if (r == 0 && o.served >= 0) {
                status_call(&it, NULL, o.after, sizeof(o.after));
                o.exact = !strcmp(it.before, o.after);
                if (!o.exact)
                        fprintf(stderr, "sn-restore: %s %d %s: before {%s}, after {%s}\n",
                                kind_names[kind], n, scenario_names[sc], it.before, o.after);
        }
        o.restore = logged_restore(d.log, log_at);
        items_free(&it);
        daemon_end(&d, false);
        return o;
}

/* ---- memory per registration ----------------------------------------------------------- */

/* The daemon's RSS growth over n registrations on one port, per registration, bytes. */
static double memory_per_registration(int n)
{
        struct items it = { .kind = K_REGISTRATIONS, .n = 16 };
        struct items more = { .kind = K_REGISTRATIONS, .n = n };
        struct daemon d = { 0 };
        long before, after;
        int r;

        daemon_start(&d, false);
        /* Warms up both sides' buffers with one small batch, as socknotify-bench does. */
        items_create(&it, d.path);
        if ((r = status_call(&it, NULL, NULL, 0)) < 0)
                die("status", r);
        before = rss_bytes(d.pid);
        items_create(&more, d.path);
        if ((r = status_call(&more, NULL, NULL, 0)) < 0)
                die("status", r);
        after = rss_bytes(d.pid);
        items_free(&more);
        items_free(&it);
        daemon_end(&d, false);
        return (double)(after - before) / n;
}

/* ---- output --------------------------------------------------------------------------------- */

struct point {
        enum kind kind;
        int asked, n;
        double served[S_MAX], restore[S_MAX], all_served[S_MAX];
        bool done[S_MAX], lost[S_MAX], inexact[S_MAX];
        int error[S_MAX];
};

static void print_runs(const char *name, const double *v, int n)
{
        printf(", \"%s\": [", name);
        for (int i = 0; i < n; i++)
                printf(v[i] >= 0 ? "%s%.6f" : "%snull", i ? ", " : "", v[i]);
        printf("]");
}

static void print_number(const char *name, double v)
{
        printf(v >= 0 ? ", \"%s\": %.6f" : ", \"%s\": null", name, v);
}

/* The time a point took to restore: the daemon's own when it logged it, else until served. */
static double restore_time(const struct point *pt, enum scenario sc)
{
        return pt->restore[sc] >= 0 ? pt->restore[sc] : pt->served[sc];
}

/* Measures pt in scenario sc; prev is the point of the same kind with fewer items before it
 * (NULL for the first), against which the growth of the restore time is given. */
static void run_point(struct point *pt, const struct point *prev, enum scenario sc)
{
        double t, tp;
        double served[MAX_RUNS], restore[MAX_RUNS], all[MAX_RUNS], load = loadavg();
        struct outcome o = { 0 };
        bool exact = true;
        int lost = 0;

        for (int i = 0; i < runs; i++) {
                o = measure(pt->kind, pt->n, sc);
                served[i] = o.served;
                restore[i] = o.restore;
                all[i] = o.all_served;
                lost += o.served < 0;
                exact = exact && (o.served < 0 || o.exact);
                if (o.served < 0)
                        pt->error[sc] = o.error;
        }
        pt->served[sc] = median(served, runs);
        pt->restore[sc] = median(restore, runs);
        pt->all_served[sc] = median(all, runs);
        pt->done[sc] = true;
        pt->lost[sc] = lost == runs;
        pt->inexact[sc] = !exact;
        printf("{\"kind\": \"%s\", \"items\": %d, \"asked\": %d, \"capped\": %s, "
               "\"scenario\": \"%s\", \"runs\": %d",
               kind_names[pt->kind], pt->n, pt->asked, pt->n < pt->asked ? "true" : "false",
               scenario_names[sc], runs);
        print_number("served_s", pt->served[sc]);
        print_number("restore_s", pt->restore[sc]);
        if (pt->kind == K_CONNECTIONS && sc == S_NOSTORE)
                print_number("all_served_s", pt->all_served[sc]);
        print_runs("served_runs", served, runs);
        print_runs("restore_runs", restore, runs);
        printf(", \"failed_runs\": %d", lost);
        if (lost)
                printf(", \"errno\": \"%s\", \"error\": \"%s\"",
                       strerrorname_np(-pt->error[sc]) ? strerrorname_np(-pt->error[sc]) : "?",
                       sn_strerror(pt->error[sc]));
        /* Linear restores take time in proportion to the items: the time per item, and the
         * ratio of the time to that of the previous size (2 for twice the items, if linear). */
        t = restore_time(pt, sc);
        tp = prev && prev->done[sc] && !prev->lost[sc] ? restore_time(prev, sc) : -1;
        print_number("us_per_item", t >= 0 && pt->n ? t * 1e6 / pt->n : -1);
        if (tp > 0 && t >= 0) {
                print_number("ratio_to_previous", t / tp);
                printf(", \"previous_items\": %d", prev->n);
        }
        printf(", \"exact\": %s, \"load\": %.2f}\n",
               lost == runs ? "null" : exact ? "true" : "false", load);
        fflush(stdout);
        if (t >= 0 && pt->n) {
                fprintf(stderr, "sn-restore: %s %d %s: restore %.3f s, %.1f us per item",
                        kind_names[pt->kind], pt->n, scenario_names[sc], t, t * 1e6 / pt->n);
                if (tp > 0)
                        fprintf(stderr, ", %.2fx the time of %d", t / tp, prev->n);
                fprintf(stderr, "\n");
        }
}

static void cell(char *buf, size_t sz, double v)
{
        if (v < 0)
                snprintf(buf, sz, "–");
        else if (v < 1)
                snprintf(buf, sz, "%.1f ms", v * 1e3);
        else
                snprintf(buf, sz, "%.2f s", v);
}

static void print_table(const struct point *pts, int npts, const bool *want)
{
        fprintf(stderr, "\n| kind | items |");
        for (int s = 0; s < S_MAX; s++)
                if (want[s])
                        fprintf(stderr, " %s: served (restore) |", scenario_titles[s]);
        fprintf(stderr, "\n|---|---:|");
        for (int s = 0; s < S_MAX; s++)
                if (want[s])
                        fprintf(stderr, "---|");
        fprintf(stderr, "\n");
        for (int i = 0; i < npts; i++) {
                const struct point *p = &pts[i];

                fprintf(stderr, "| %s | %d%s |", kind_names[p->kind], p->n,
                        p->n < p->asked ? " (capped: fd limit)" : "");
                for (int s = 0; s < S_MAX; s++) {
                        char a[32], b[32];

                        if (!want[s])
                                continue;
                        if (!p->done[s]) {
                                fprintf(stderr, " |");
                                continue;
                        }
                        if (p->lost[s]) {
                                fprintf(stderr, " %s (%s) |",
                                        s == S_NOSTORE ? "sessions lost" : "FAILED",
                                        strerrorname_np(-p->error[s]) ?
                                                strerrorname_np(-p->error[s]) : "?");
                                continue;
                        }
                        cell(a, sizeof(a), p->served[s]);
                        cell(b, sizeof(b), p->restore[s]);
                        fprintf(stderr, " %s (%s)%s |", a, b, p->inexact[s] ? " not exact" : "");
                }
                fprintf(stderr, "\n");
        }
}

/* ---- main ----------------------------------------------------------------------------------- */

static int parse_list(const char *arg, const char *const *names, int nnames, bool *want)
{
        char *copy = strdup(arg), *save = NULL;

        for (int i = 0; i < nnames; i++)
                want[i] = false;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int i = 0;

                while (i < nnames && strcmp(t, names[i]))
                        i++;
                if (i == nnames) {
                        fprintf(stderr, "sn-restore: unknown name %s\n", t);
                        free(copy);
                        return -1;
                }
                want[i] = true;
        }
        free(copy);
        return 0;
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: sn-restore [--quick] [--kinds LIST] [--sizes LIST] [--scenarios LIST]\n"
                   "                  [--runs N] [--no-memory] [--daemon PATH]\n"
                   "kinds: connections ports named-ports registrations posted waits\n"
                   "scenarios: reexec crash stop nostore\n");
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "quick", no_argument, NULL, 'q' },
                { "kinds", required_argument, NULL, 'k' },
                { "sizes", required_argument, NULL, 'n' },
                { "scenarios", required_argument, NULL, 's' },
                { "runs", required_argument, NULL, 'r' },
                { "no-memory", no_argument, NULL, 'm' },
                { "daemon", required_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool want_kind[K_MAX], want_sc[S_MAX], memory = true;
        int sizes[MAX_SIZES] = { 1000, 10000, 100000 }, nsizes = 3, npts = 0, c;
        struct point pts[K_MAX * MAX_SIZES];
        struct rlimit rl;

        memset(want_kind, 1, sizeof(want_kind));
        memset(want_sc, 1, sizeof(want_sc));
        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'q':
                        nsizes = 1;
                        runs = 1;
                        break;
                case 'k':
                        if (parse_list(optarg, kind_names, K_MAX, want_kind) < 0)
                                return 2;
                        break;
                case 's':
                        if (parse_list(optarg, scenario_names, S_MAX, want_sc) < 0)
                                return 2;
                        break;
                case 'n': {
                        char *save = NULL, *copy = strdup(optarg);

                        nsizes = 0;
                        for (char *t = strtok_r(copy, ",", &save); t && nsizes < MAX_SIZES;
                             t = strtok_r(NULL, ",", &save))
                                if ((sizes[nsizes++] = atoi(t)) < 0) {
                                        usage(stderr);
                                        return 2;
                                }
                        free(copy);
                        break;
                }
                case 'r':
                        runs = atoi(optarg);
                        if (runs < 1 || runs > MAX_RUNS) {
                                fprintf(stderr, "sn-restore: --runs 1 to %d\n", MAX_RUNS);
                                return 2;
                        }
                        break;
                case 'm':
                        memory = false;
                        break;
                case 'd':
                        snprintf(daemon_bin, sizeof(daemon_bin), "%s", optarg);
                        break;
                default:
                        usage(c == 'h' ? stdout : stderr);
                        return c == 'h' ? 0 : 2;
                }
        }
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                rl.rlim_cur = 1 << 20;
        /* Room for everything else: the store's boxes, the daemon's own, ours. */
        fd_cap = rl.rlim_cur > 3000 ? (int)(rl.rlim_cur - 2000) / 1000 * 1000 : 1000;
        signal(SIGPIPE, SIG_IGN);
        find_daemon(argv[0]);
        store_start();
        fprintf(stderr, "sn-restore: %s, %d run(s) a point, descriptor limit %lu, items holding "
                "descriptors capped at %d; load %.2f\n", daemon_bin, runs,
                (unsigned long)rl.rlim_cur, fd_cap, loadavg());
        if (memory) {
                double v[MAX_RUNS], load = loadavg();
                int n = 10000 < fd_cap ? 10000 : fd_cap;

                for (int i = 0; i < runs; i++)
                        v[i] = memory_per_registration(n);
                printf("{\"measure\": \"memory_per_registration\", \"registrations\": %d, "
                       "\"bytes\": %.1f", n, median(v, runs));
                print_runs("runs", v, runs);
                printf(", \"load\": %.2f}\n", load);
                fflush(stdout);
                fprintf(stderr, "daemon memory per registration (%d): %.1f bytes\n", n,
                        median(v, runs));
        }
        for (int k = 0; k < K_MAX; k++) {
                if (!want_kind[k])
                        continue;
                for (int i = 0; i < nsizes; i++) {
                        struct point *pt = &pts[npts++];
                        bool fds = k == K_CONNECTIONS || k == K_PORTS || k == K_NAMED_PORTS ||
                                   k == K_REGISTRATIONS;

                        *pt = (struct point){ .kind = (enum kind)k, .asked = sizes[i],
                                              .n = fds && sizes[i] > fd_cap ? fd_cap : sizes[i] };
                        for (int s = 0; s < S_MAX; s++)
                                if (want_sc[s])
                                        run_point(pt, i ? pt - 1 : NULL, (enum scenario)s);
                }
        }
        print_table(pts, npts, want_sc);
        unlink(store.path);
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * sn-thread-reads - what reading client threads' scheduler states costs the daemon (issue 39),
 * and what it costs another user.  Never run by make check: timings are not tests.
 *
 *   bench/sn-thread-reads [--daemon PATH] [--dequeues N] [--runners N] [--samples N]
 *                         [--runs N] [--other-uid UID] [--socket] [--gap-us N]
 *
 * On a fresh daemon (daemon/socknotifyd of the build tree, socket mode 0666) each run measures:
 *   idle      another user (a child process running as --other-uid, 65534 by default; without
 *             root, the same uid, said in the output) posts one packet and takes it back with a
 *             one-entry dequeue (timeout 0), --samples times, 100 us apart: the dequeues' p50
 *             and p99;
 *   baseline  the attacking client's loop alone: a post (when its last packet was taken) and a
 *             one-entry dequeue, --dequeues times,
 *             on a port of concurrency 1 that no other thread runs on; the daemon's CPU
 *             (utime + stime of /proc/PID/stat) per dequeue;
 *   attack    the same loop once --runners threads of the client (32) have each taken one entry
 *             of that port and sleep on a condition variable: every dequeue relies on all of
 *             them being blocked elsewhere.  The daemon's CPU per dequeue, the ratio to the
 *             baseline, the thread-state reads per dequeue (the status document's
 *             counters.thread_reads, when the daemon has it) and how many dequeues got their
 *             entry;
 *   loaded    the other user's dequeues while the baseline loop runs;
 *   attacked  the other user's dequeues while the attack loop runs: p50, p99 and the ratio of
 *             the p99 to the idle one.
 * --gap-us N: the attacking loop sleeps N us between its dequeues while the other user
 * measures (loaded, attacked), so that its own CPU competes less with the other user's.
 * --socket: both clients on the socket transport (SOCKNOTIFY_NO_SHM=1), else the rings.
 * Output: one line of "key value" pairs per run on stdout; the medians on stderr at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socknotify.h"

#define MAX_RUNS 9

static char daemon_bin[512];
static unsigned n_dequeues = 30000, n_runners = 32, n_samples = 5000, n_runs = 3;
static unsigned gap_us;
static uid_t other_uid = 65534;
static char dir[48], sock_path[96];
static pid_t daemon_pid;

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
        fprintf(stderr, "sn-thread-reads: %s: %s\n", what, strerror(err));
        if (daemon_pid > 0)
                kill(daemon_pid, SIGKILL);
        exit(1);
}

static void find_daemon(const char *argv0)
{
        char self[512];

        if (daemon_bin[0])
                return;
        snprintf(self, sizeof(self), "%s", argv0);
        snprintf(daemon_bin, sizeof(daemon_bin), "%s/../daemon/socknotifyd", dirname(self));
        if (access(daemon_bin, X_OK) != 0) {
                snprintf(self, sizeof(self), "%s", argv0);
                snprintf(daemon_bin, sizeof(daemon_bin), "%s/../../daemon/socknotifyd",
                         dirname(self));
        }
        if (access(daemon_bin, X_OK) != 0) {
                fprintf(stderr, "sn-thread-reads: %s not found; pass --daemon\n", daemon_bin);
                exit(2);
        }
}

static void daemon_start(void)
{
        char log[160];

        snprintf(dir, sizeof(dir), "/tmp/sn-thread-reads-XXXXXX");
        if (!mkdtemp(dir))
                die("mkdtemp", errno);
        chmod(dir, 0755); /* the other user reaches the socket */
        snprintf(sock_path, sizeof(sock_path), "%s/socknotify.sock", dir);
        snprintf(log, sizeof(log), "%s/daemon.log", dir);
        daemon_pid = fork();
        if (daemon_pid < 0)
                die("fork", errno);
        if (daemon_pid == 0) {
                FILE *f = fopen(log, "a");

                if (!f || dup2(fileno(f), 1) < 0 || dup2(fileno(f), 2) < 0)
                        _exit(126);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(daemon_bin, daemon_bin, "--socket", sock_path, "--socket-mode=0666",
                      "--max-posted-per-user=400000", (char *)NULL);
                _exit(127);
        }
        for (double end = now_s() + 10;; usleep(2000)) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                bool ok;

                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
                ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
                close(fd);
                if (ok)
                        return;
                if (now_s() > end || waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid)
                        die("the daemon did not start (see its log)", ETIMEDOUT);
        }
}

static void daemon_end(void)
{
        char log[160];

        kill(daemon_pid, SIGKILL);
        waitpid(daemon_pid, NULL, 0);
        daemon_pid = 0;
        snprintf(log, sizeof(log), "%s/daemon.log", dir);
        unlink(log);
        unlink(sock_path);
        rmdir(dir);
}

/* The daemon's utime + stime, in seconds. */
static double daemon_cpu(void)
{
        char path[64], buf[1024], *p;
        unsigned long ut = 0, st = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)daemon_pid);
        f = fopen(path, "r");
        if (!f || !fgets(buf, sizeof(buf), f))
                die("the daemon's stat", errno);
        fclose(f);
        p = strrchr(buf, ')');
        /* After ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
         * utime stime: utime is the 12th field from there. */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
                         &st) != 2)
                die("the daemon's stat", EINVAL);
        return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* counters.thread_reads of the status document; -1 when the daemon does not count them. */
static long long thread_reads(sn_conn_t *c)
{
        char *text = NULL, *p;
        long long v = -1;

        if (sn_conn_status(c, &text) < 0)
                die("status", EIO);
        p = strstr(text, "\"counters\":");
        if (p && (p = strstr(p, "\"thread_reads\":")))
                v = strtoll(p + strlen("\"thread_reads\":"), NULL, 10);
        free(text);
        return v;
}

/* ---- the attacking client ---------------------------------------------------------------- */

struct attacker {
        sn_conn_t *conn;
        sn_port_t *port;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned taken;
        bool done;
        pthread_t *threads;
        _Atomic bool stop; /* the background loop ends */
        unsigned got;      /* dequeues of the last loop that had their entry */
        uint64_t key;
        bool queued;       /* a packet of the loop waits on the port */
};

static void *sleeper(void *arg)
{
        struct attacker *a = arg;
        sn_entry_t e;
        int r = sn_port_dequeue(a->port, &e, 1, 60000);

        pthread_mutex_lock(&a->lock);
        if (r == 1)
                a->taken++;
        pthread_cond_broadcast(&a->cond);
        while (!a->done)
                pthread_cond_wait(&a->cond, &a->lock);
        pthread_mutex_unlock(&a->lock);
        return NULL;
}

static void attacker_open(struct attacker *a)
{
        *a = (struct attacker){ .lock = PTHREAD_MUTEX_INITIALIZER,
                                .cond = PTHREAD_COND_INITIALIZER };
        if (sn_conn_open(sock_path, &a->conn) < 0 || sn_port_create(a->conn, 1, &a->port) < 0)
                die("the attacker's connection", EIO);
}

/* Makes n_runners threads of the client runners of its port, asleep. */
static void attacker_arm(struct attacker *a)
{
        double end = now_s() + 60;

        a->threads = calloc(n_runners, sizeof(*a->threads));
        for (unsigned i = 0; i < n_runners; i++) {
                pthread_create(&a->threads[i], NULL, sleeper, a);
                if (sn_port_post(a->port, a->key++, 0, 0) < 0)
                        die("post", EIO);
        }
        pthread_mutex_lock(&a->lock);
        while (a->taken < n_runners) {
                struct timespec ts;

                if (now_s() > end)
                        die("the sleepers never all took an entry", ETIMEDOUT);
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 1;
                pthread_cond_timedwait(&a->cond, &a->lock, &ts);
        }
        pthread_mutex_unlock(&a->lock);
}

/* n one-entry dequeues, each after a post when none is queued (n 0: until a->stop). */
static void attacker_loop(struct attacker *a, unsigned n)
{
        a->got = 0;
        for (unsigned i = 0; n ? i < n : !atomic_load(&a->stop); i++) {
                sn_entry_t e;

                if (!a->queued && sn_port_post(a->port, a->key++, 0, 0) < 0)
                        die("post", EIO);
                a->queued = sn_port_dequeue(a->port, &e, 1, 0) != 1;
                if (!a->queued)
                        a->got++;
                if (!n && gap_us)
                        usleep(gap_us);
        }
}

static void *attacker_background(void *arg)
{
        attacker_loop(arg, 0);
        return NULL;
}

static void attacker_close(struct attacker *a)
{
        pthread_mutex_lock(&a->lock);
        a->done = true;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        for (unsigned i = 0; a->threads && i < n_runners; i++)
                pthread_join(a->threads[i], NULL);
        free(a->threads);
        sn_port_close(a->port);
        sn_conn_close(a->conn);
}

/* ---- the other user ------------------------------------------------------------------------ */

static int cmp_double(const void *x, const void *y)
{
        double a = *(const double *)x, b = *(const double *)y;

        return a < b ? -1 : a > b;
}

/* In a child process as other_uid, once a byte comes on go: n_samples dequeues; writes p50
 * and p99 (ms) to fd. */
static void other_child(int go, int fd)
{
        double *lat = calloc(n_samples, sizeof(*lat)), res[2];
        sn_conn_t *c;
        sn_port_t *p;
        char ch;

        if (getuid() == 0 && (setgid(other_uid) < 0 || setuid(other_uid) < 0))
                _exit(3);
        if (sn_conn_open(sock_path, &c) < 0 || sn_port_create(c, 1, &p) < 0)
                _exit(4);
        if (read(go, &ch, 1) != 1)
                _exit(8);
        for (unsigned i = 0; i < n_samples; i++) {
                sn_entry_t e;
                double t0;

                if (sn_port_post(p, i, 0, 0) < 0)
                        _exit(5);
                t0 = now_s();
                if (sn_port_dequeue(p, &e, 1, 0) != 1)
                        _exit(6);
                lat[i] = (now_s() - t0) * 1e3;
                usleep(100);
        }
        qsort(lat, n_samples, sizeof(*lat), cmp_double);
        res[0] = lat[n_samples / 2];
        res[1] = lat[(size_t)((double)n_samples * 0.99)];
        if (write(fd, res, sizeof(res)) != (ssize_t)sizeof(res))
                _exit(7);
        _exit(0);
}

/* The other user's p50 and p99 (ms), while a (when not NULL) loops in the background. */
static void other_measure(struct attacker *a, double *ret_p50, double *ret_p99)
{
        double res[2] = { 0, 0 };
        pthread_t bg;
        int pfd[2], go[2], st;
        pid_t pid;

        /* Forked before the background loop starts: the child shares no lock it may hold. */
        if (pipe2(pfd, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
                die("pipe", errno);
        pid = fork();
        if (pid < 0)
                die("fork", errno);
        if (pid == 0)
                other_child(go[0], pfd[1]);
        close(pfd[1]);
        close(go[0]);
        if (a) {
                atomic_store(&a->stop, false);
                pthread_create(&bg, NULL, attacker_background, a);
        }
        if (write(go[1], "g", 1) != 1)
                die("pipe", errno);
        close(go[1]);
        if (read(pfd[0], res, sizeof(res)) != (ssize_t)sizeof(res))
                res[0] = res[1] = -1;
        close(pfd[0]);
        waitpid(pid, &st, 0);
        if (a) {
                atomic_store(&a->stop, true);
                pthread_join(bg, NULL);
        }
        if (res[1] < 0)
                die("the other user's client failed", WIFEXITED(st) ? WEXITSTATUS(st) : EIO);
        *ret_p50 = res[0];
        *ret_p99 = res[1];
}

/* ---- runs ------------------------------------------------------------------------------- */

struct result {
        double cpu_base_us, cpu_attack_us, reads_per_dq, got_share;
        double idle_p50, idle_p99, loaded_p99, attacked_p50, attacked_p99;
};

static double cpu_per_dequeue(struct attacker *a, long long *reads)
{
        long long r0 = thread_reads(a->conn);
        double c0 = daemon_cpu(), c1;

        attacker_loop(a, n_dequeues);
        c1 = daemon_cpu();
        if (reads)
                *reads = r0 < 0 ? -1 : thread_reads(a->conn) - r0;
        return (c1 - c0) / n_dequeues * 1e6;
}

static void run_once(struct result *r)
{
        struct attacker a;
        long long reads;

        daemon_start();
        other_measure(NULL, &r->idle_p50, &r->idle_p99);
        attacker_open(&a);
        r->cpu_base_us = cpu_per_dequeue(&a, NULL);
        other_measure(&a, &(double){ 0 }, &r->loaded_p99);
        attacker_arm(&a);
        r->cpu_attack_us = cpu_per_dequeue(&a, &reads);
        r->reads_per_dq = reads < 0 ? -1 : (double)reads / n_dequeues;
        r->got_share = (double)a.got / n_dequeues;
        other_measure(&a, &r->attacked_p50, &r->attacked_p99);
        attacker_close(&a);
        daemon_end();
}

static double median(double *v, unsigned n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "daemon", required_argument, NULL, 'd' },
                { "dequeues", required_argument, NULL, 'n' },
                { "runners", required_argument, NULL, 'r' },
                { "samples", required_argument, NULL, 's' },
                { "runs", required_argument, NULL, 'R' },
                { "other-uid", required_argument, NULL, 'u' },
                { "socket", no_argument, NULL, 'S' },
                { "gap-us", required_argument, NULL, 'g' },
                { NULL, 0, NULL, 0 },
        };
        struct result res[MAX_RUNS];
        double col[MAX_RUNS];
        int o;

        while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (o) {
                case 'd': snprintf(daemon_bin, sizeof(daemon_bin), "%s", optarg); break;
                case 'n': n_dequeues = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'r': n_runners = (unsigned)strtoul(optarg, NULL, 10); break;
                case 's': n_samples = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'R': n_runs = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'u': other_uid = (uid_t)strtoul(optarg, NULL, 10); break;
                case 'S': setenv("SOCKNOTIFY_NO_SHM", "1", 1); break;
                case 'g': gap_us = (unsigned)strtoul(optarg, NULL, 10); break;
                default:
                        fprintf(stderr, "usage: %s [--daemon PATH] [--dequeues N] [--runners N] "
                                        "[--samples N] [--runs N] [--other-uid UID] [--socket] [--gap-us N]\n",
                                argv[0]);
                        return 2;
                }
        }
        if (!n_dequeues || !n_samples || !n_runs || n_runs > MAX_RUNS) {
                fprintf(stderr, "sn-thread-reads: --dequeues, --samples > 0, --runs 1 to %d\n",
                        MAX_RUNS);
                return 2;
        }
        find_daemon(argv[0]);
        if (getuid() != 0)
                other_uid = getuid();
        printf("# daemon %s, %s, %u dequeues, %u runners, %u samples, gap %u us, other user "
               "uid %u%s\n",
               daemon_bin, getenv("SOCKNOTIFY_NO_SHM") ? "socket" : "rings", n_dequeues,
               n_runners, n_samples, gap_us, (unsigned)other_uid,
               other_uid == getuid() ? " (the same user: not root)" : "");
        for (unsigned i = 0; i < n_runs; i++) {
                struct result *r = &res[i];
                double load[3] = { 0, 0, 0 };

                run_once(r);
                getloadavg(load, 3);
                printf("run %u cpu_base_us %.2f cpu_attack_us %.2f cpu_ratio %.2f "
                       "reads_per_dequeue %.3f dequeues_served %.3f idle_p50_ms %.3f "
                       "idle_p99_ms %.3f loaded_p99_ms %.3f attacked_p50_ms %.3f "
                       "attacked_p99_ms %.3f p99_ratio %.2f loadavg %.2f\n",
                       i + 1, r->cpu_base_us, r->cpu_attack_us, r->cpu_attack_us / r->cpu_base_us,
                       r->reads_per_dq, r->got_share, r->idle_p50, r->idle_p99, r->loaded_p99,
                       r->attacked_p50, r->attacked_p99, r->attacked_p99 / r->idle_p99, load[0]);
                fflush(stdout);
        }
#define MED(field) (({                                                                         \
        for (unsigned i = 0; i < n_runs; i++)                                                  \
                col[i] = res[i].field;                                                         \
        median(col, n_runs);                                                                   \
}))
        {
                double base = MED(cpu_base_us), attack = MED(cpu_attack_us);
                double idle = MED(idle_p99), loaded = MED(loaded_p99), hit = MED(attacked_p99);

                fprintf(stderr,
                        "medians of %u run(s): daemon CPU per dequeue %.2f us (baseline) -> "
                        "%.2f us (attack, %u runners), %.2fx; thread-state reads per dequeue "
                        "%.3f; another user's dequeue p99 %.3f ms idle, %.3f ms beside the "
                        "baseline loop, %.3f ms beside the attack (%.2fx idle)\n",
                        n_runs, base, attack, n_runners, attack / base, MED(reads_per_dq), idle,
                        loaded, hit, hit / idle);
        }
        return 0;
}

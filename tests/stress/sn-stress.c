/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * sn-stress.c - faults and load against a real socknotifyd: nothing lost, nothing left behind.
 *
 * Starts daemon/socknotifyd of the build tree on a private socket (it dies with this program:
 * PR_SET_PDEATHSIG) and runs, within a bounded time:
 *
 *   rounds     each round forks --clients processes, every one with its own connection(s):
 *              survivors     register real sockets (TCP pairs over 127.0.0.1, a UDP pair, a Unix
 *                            stream pair; LEVEL+ONESHOT re-armed, EDGE, LEVEL), send themselves
 *                            data through them and post themselves numbered packets, and must
 *                            see an IN for every socket, read every byte and dequeue every
 *                            packet exactly once; some are SIGSTOPped for a while, then SIGCONT;
 *              shared        processes sharing a named port (opened by several processes) post
 *                            numbered packets and dequeue each other's: no packet twice, and
 *                            after the faults every packet of a final batch arrives exactly once;
 *              victims       killed with SIGKILL at a random moment: threads parked in waits
 *                            (own port, or the shared port while others post), a multi-part call
 *                            half sent (raw protocol: the first PART with 253 descriptors, then
 *                            nothing), large calls through the library (several parts, killed
 *                            wherever they are), entries held (ONESHOT, never re-armed), some
 *                            SIGSTOPped first; clients that stop reading their replies (dequeues,
 *                            timed waits and STATUS requests piled up past the output bound, or
 *                            filled to just under it and then left with timed waits parked);
 *                            clients that park waits and then shutdown(SHUT_RD) their end.
 *              At the end of each round the daemon must be alive, its descriptor count
 *              (/proc/PID/fd) and its STATUS figures (connections, ports, registrations, waiters,
 *              queued) back to their baseline; its RSS is recorded per round, and the last
 *              round may not exceed the highest before it by more than 16 MiB or 25 %.
 *   soak       200 connections x 20 UDP sockets (10 processes) with churn: sockets closed
 *              through the library and new ones registered, datagrams sent to random sockets,
 *              every one notified and read; the daemon's descriptors and RSS sampled throughout.
 *   kill loop  many processes killed with SIGKILL a random few milliseconds into their life
 *              (connecting, registering 300 sockets in several parts, waiting): nothing left.
 *
 * Usage: tests/stress/sn-stress [--rounds N] [--clients N] [--seconds S] [--soak-seconds S]
 *            [--kill-loop N] [--scenarios LIST] [--daemon PATH] [--daemon-arg ARG]...
 *   --seconds bounds the whole run (default 60): the rounds get about 55 % of it, the soak 25 %
 *   (unless --soak-seconds), the kill loop the rest (it also stops after --kill-loop kills).
 *   --scenarios: comma-separated subset of survivor,stop,shared,parked,shared-parked,multipart,
 *   libmulti,holder,nonreader,shutrd,soak,killloop (default: all), to find which one hurts.
 *   $SN_BUILDDIR selects the build tree (default: the one this program was built in); run it
 *   against a sanitizer build by building that tree with --enable-sanitizers.
 * Exit status 0 when every check held; 1 when a check failed; 2 when the daemon died (its log
 * is printed).  Never run by make check (timings and machine load); .ci/run runs it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fdmsg.h"
#include "common/macro.h"
#include "proto/codec.h"
#include "socknotify.h"

/* In a sanitizer build this program and its clients are instrumented too: they leave on
 * purpose without freeing (killed, _exit), which is not what is under test. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
        return "detect_leaks=0";
}

/* ---- options and shared state ------------------------------------------------------------- */

static int opt_rounds = 3, opt_clients = 120, opt_kill_loop = 1000;
static double opt_seconds = 60, opt_soak_seconds = -1;
static const char *opt_scenarios, *opt_daemon;
static const char *daemon_args[32];
static int ndaemon_args;

enum { MAX_GROUPS = 8, MAX_POSTERS = 4, MAX_SEQ = 4096, TAIL_N = 64, TAIL_BASE = 1 << 20 };
enum { PHASE_RUN, PHASE_TAIL };

/* Shared with every child (MAP_SHARED): phase, packet bookkeeping, counters, first failure. */
struct shm {
        int phase;
        int round;
        uint8_t seen[MAX_GROUPS][MAX_POSTERS][MAX_SEQ];
        uint8_t tail_seen[MAX_GROUPS][MAX_POSTERS][TAIL_N];
        int posted[MAX_GROUPS][MAX_POSTERS];
        int tail_got[MAX_GROUPS];
        int tail_want[MAX_GROUPS];
        long notifications; /* entries checked by survivors (socket IN + posted) */
        long bytes;
        long output_kills;  /* non-readers disconnected by the daemon's output bound */
        long failures;
        char first_failure[512];
};
static struct shm *S;

static struct {
        char dir[64], path[96], log[128];
        pid_t pid;
} D;

/* Every client process started and not yet reaped, so that a fatal error ends exactly them. */
static pid_t live[8192];
static int nlive;

static void track(pid_t pid)
{
        if (pid > 0 && nlive < (int)SN_ARRAY_SIZE(live))
                live[nlive++] = pid;
}

static void untrack(pid_t pid)
{
        for (int i = 0; i < nlive; i++)
                if (live[i] == pid) {
                        live[i] = live[--nlive];
                        return;
                }
}

static long long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool enabled(const char *name)
{
        const char *p = opt_scenarios;
        size_t n = strlen(name);

        if (!p)
                return true;
        while ((p = strstr(p, name))) {
                if ((p == opt_scenarios || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
                        return true;
                p += n;
        }
        return false;
}

/* Records a failed check (first message kept) and, in a child, exits 1. */
static void fail(bool in_child, const char *fmt, ...)
{
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "sn-stress[%d]: FAIL: %s\n", (int)getpid(), msg);
        if (__atomic_fetch_add(&S->failures, 1, __ATOMIC_SEQ_CST) == 0)
                snprintf(S->first_failure, sizeof(S->first_failure), "%s", msg);
        if (in_child)
                _exit(1);
}

#define CHILD_FAIL(...) fail(true, __VA_ARGS__)

static void child_init(void)
{
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGPIPE, SIG_IGN);
        srand((unsigned)getpid() ^ (unsigned)now_ms());
}

static int rnd(int lo, int hi) /* [lo, hi] */
{
        return lo + rand() % (hi - lo + 1);
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* ---- the daemon ---------------------------------------------------------------------------- */

static int daemon_fds(void)
{
        char p[64];
        DIR *dir;
        struct dirent *e;
        int n = 0;

        snprintf(p, sizeof(p), "/proc/%d/fd", (int)D.pid);
        dir = opendir(p);
        if (!dir)
                return -1;
        while ((e = readdir(dir)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(dir);
        return n;
}

static long daemon_rss_kb(void)
{
        char path[64], line[256];
        long kb = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)D.pid);
        f = fopen(path, "r");
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                        break;
        if (f)
                fclose(f);
        return kb;
}

static void print_daemon_log(void)
{
        char cmd[256];

        fprintf(stderr, "---- last lines of the daemon's log (%s)\n", D.log);
        snprintf(cmd, sizeof(cmd), "tail -n 60 '%s' >&2", D.log);
        if (system(cmd) != 0)
                fprintf(stderr, "(could not print it)\n");
}

static const char *current_stage = "start-up";

/* Exits 2 if the daemon has died (prints how, and its log). */
static void check_daemon_alive(void)
{
        int st;

        if (waitpid(D.pid, &st, WNOHANG) != D.pid)
                return;
        fprintf(stderr, "sn-stress: DAEMON DIED during %s: %s %d\n", current_stage,
                WIFSIGNALED(st) ? "signal" : "exit status",
                WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        print_daemon_log();
        for (int i = 0; i < nlive; i++)
                kill(live[i], SIGKILL);
        _exit(2);
}

static bool can_connect(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        bool ok;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", D.path);
        ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
                close(fd);
        return ok;
}

static void daemon_start(unsigned long nofile)
{
        const char *builddir = getenv("SN_BUILDDIR");
        char bin[512], quota[64];
        long long deadline;

        if (opt_daemon)
                snprintf(bin, sizeof(bin), "%s", opt_daemon);
        else
                snprintf(bin, sizeof(bin), "%s/daemon/socknotifyd", builddir ? builddir : SN_BUILDDIR);
        snprintf(D.dir, sizeof(D.dir), "/tmp/sn-stress-XXXXXX");
        if (!mkdtemp(D.dir)) {
                perror("mkdtemp");
                exit(1);
        }
        snprintf(D.path, sizeof(D.path), "%s/socknotify.sock", D.dir);
        snprintf(D.log, sizeof(D.log), "%s/daemon.log", D.dir);
        snprintf(quota, sizeof(quota), "--max-sockets-per-user=%lu", nofile);
        D.pid = fork();
        if (D.pid == 0) {
                const char *argv[48];
                int n = 0, fd = open(D.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (fd >= 0)
                        dup2(fd, 2);
                /* Under ASan: leaks reported at SIGTERM, and a small quarantine so that RSS
                 * reaches its plateau early (these are the daemon's, not ours). */
                setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:quarantine_size_mb=16", 1);
                setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1", 1);
                argv[n++] = bin;
                argv[n++] = "--socket";
                argv[n++] = D.path;
                argv[n++] = quota;
                for (int i = 0; i < ndaemon_args; i++)
                        argv[n++] = daemon_args[i];
                argv[n] = NULL;
                execv(bin, (char *const *)argv);
                fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
                _exit(127);
        }
        deadline = now_ms() + 20000;
        while (!can_connect()) {
                check_daemon_alive();
                if (now_ms() > deadline) {
                        fprintf(stderr, "sn-stress: %s did not start\n", bin);
                        exit(1);
                }
                sleep_ms(10);
        }
}

/* The STATUS figures that must come back to their baseline. */
struct figures {
        long connections, ports, registrations, waiters, queued;
};

static sn_conn_t *monitor;

static int get_figures(struct figures *f)
{
        char *doc = NULL;
        json_t *j;
        int r = sn_conn_status(monitor, &doc);

        if (r < 0)
                return r;
        j = json_loads(doc, 0, NULL);
        free(doc);
        if (!j)
                return -EPROTO;
#define FIG(name) f->name = (long)json_integer_value(json_object_get(j, #name))
        FIG(connections);
        FIG(ports);
        FIG(registrations);
        FIG(waiters);
        FIG(queued);
#undef FIG
        json_decref(j);
        return 0;
}

static bool figures_eq(const struct figures *a, const struct figures *b)
{
        return a->connections == b->connections && a->ports == b->ports &&
               a->registrations == b->registrations && a->waiters == b->waiters &&
               a->queued == b->queued;
}

static int base_fds;
static struct figures base_fig;

/* Waits up to 15 s for descriptors and STATUS figures to come back to the baseline; a failure
 * is recorded with the figures seen.  Returns the descriptor count. */
static int check_baseline(const char *when)
{
        long long deadline = now_ms() + 15000;
        struct figures f = { 0 };
        int fds, r;

        for (;;) {
                check_daemon_alive();
                fds = daemon_fds();
                r = get_figures(&f);
                if (r < 0) {
                        fail(false, "%s: STATUS failed: %s", when, sn_strerror(r));
                        return fds;
                }
                if (fds == base_fds && figures_eq(&f, &base_fig))
                        return fds;
                if (now_ms() > deadline)
                        break;
                sleep_ms(50);
        }
        fail(false,
             "%s: not back to baseline: fds %d (baseline %d), connections %ld (%ld), ports %ld "
             "(%ld), registrations %ld (%ld), waiters %ld (%ld), queued %ld (%ld)",
             when, fds, base_fds, f.connections, base_fig.connections, f.ports, base_fig.ports,
             f.registrations, base_fig.registrations, f.waiters, base_fig.waiters, f.queued,
             base_fig.queued);
        return fds;
}

/* ---- sockets ------------------------------------------------------------------------------- */

static int tcp_listener(struct sockaddr_in *sa)
{
        socklen_t len = sizeof(*sa);
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        *sa = (struct sockaddr_in){ .sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (l < 0 || bind(l, (struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(l, 64) < 0 ||
            getsockname(l, (struct sockaddr *)sa, &len) < 0)
                CHILD_FAIL("tcp listener: %s", strerror(errno));
        return l;
}

/* [0] the sending end, [1] the registered (receiving, non-blocking) end. */
static void tcp_pair(int l, const struct sockaddr_in *sa, int sp[2])
{
        sp[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sp[0] < 0 || connect(sp[0], (const struct sockaddr *)sa, sizeof(*sa)) < 0)
                CHILD_FAIL("tcp connect: %s", strerror(errno));
        sp[1] = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (sp[1] < 0)
                CHILD_FAIL("accept: %s", strerror(errno));
}

static int udp_bound(void)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                CHILD_FAIL("udp socket: %s", strerror(errno));
        return fd;
}

static void udp_pair(int sp[2])
{
        struct sockaddr_in a, b;
        socklen_t len = sizeof(a);

        sp[0] = udp_bound();
        sp[1] = udp_bound();
        getsockname(sp[0], (struct sockaddr *)&a, &len);
        len = sizeof(b);
        getsockname(sp[1], (struct sockaddr *)&b, &len);
        if (connect(sp[0], (struct sockaddr *)&b, sizeof(b)) < 0 ||
            connect(sp[1], (struct sockaddr *)&a, sizeof(a)) < 0)
                CHILD_FAIL("udp connect: %s", strerror(errno));
}

static void unix_pair(int sp[2])
{
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                CHILD_FAIL("socketpair: %s", strerror(errno));
        fcntl(sp[1], F_SETFL, O_NONBLOCK);
}

static void open_conn(sn_conn_t **c)
{
        int r;

        for (int tries = 0;; tries++) {
                r = sn_conn_open(D.path, c);
                if (r == 0)
                        return;
                /* The listener may be busy accepting hundreds of clients at once. */
                if (tries > 50 || (r != -EAGAIN && r != -ECONNREFUSED))
                        CHILD_FAIL("sn_conn_open: %s", sn_strerror(r));
                sleep_ms(20);
        }
}

/* ---- survivors: private port, real traffic, every notification checked ------------------- */

enum { NTCP = 4, NSOCK = NTCP + 2 };

static int ready_fd = -1; /* write end of the round's readiness pipe */

static void say_ready(char c)
{
        if (write(ready_fd, &c, 1) != 1)
                _exit(1);
}

static void run_survivor(void)
{
        sn_conn_t *c;
        sn_port_t *p;
        struct sockaddr_in lsa;
        int l = tcp_listener(&lsa), sp[NSOCK][2];
        long expect[NSOCK] = { 0 }, got[NSOCK] = { 0 };
        sn_registration_t regs[NSOCK], rearm[NSOCK];
        uint32_t nrearm = 0;
        uint64_t seq = 0;
        bool last = false;
        int r;

        open_conn(&c);
        r = sn_port_create(c, 0, &p);
        if (r < 0)
                CHILD_FAIL("survivor port: %s", sn_strerror(r));
        for (int i = 0; i < NTCP; i++)
                tcp_pair(l, &lsa, sp[i]);
        udp_pair(sp[NTCP]);
        unix_pair(sp[NTCP + 1]);
        for (int i = 0; i < NSOCK; i++)
                regs[i] = (sn_registration_t){
                        .fd = sp[i][1], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                        .filter = SN_REGISTER_EVENT_IN,
                        .trigger = i < NTCP ? SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT :
                                   i == NTCP ? SN_TRIGGER_EDGE : SN_TRIGGER_LEVEL,
                };
        r = sn_port_process(p, regs, NSOCK, NULL, 0, 0);
        for (int i = 0; i < NSOCK && r == 0; i++)
                r = regs[i].result;
        if (r < 0)
                CHILD_FAIL("survivor register: %s", sn_strerror(r));
        say_ready('R');

        while (!last) {
                uint64_t first_post = seq;
                int nposts = rnd(1, 8), posts_seen = 0;
                bool post_seen[8] = { false };
                long long stall = now_ms() + 30000;

                last = __atomic_load_n(&S->phase, __ATOMIC_ACQUIRE) != PHASE_RUN;
                for (int i = 0; i < NSOCK; i++) {
                        char buf[2048];
                        int k = rnd(1, (int)sizeof(buf));

                        memset(buf, 'a' + i, (size_t)k);
                        if (send(sp[i][0], buf, (size_t)k, 0) != k)
                                CHILD_FAIL("send: %s", strerror(errno));
                        expect[i] += k;
                }
                for (int i = 0; i < nposts; i++) {
                        r = sn_port_post(p, 0x5000000000000000ull | seq, (uint32_t)seq, ~seq);
                        if (r < 0)
                                CHILD_FAIL("post: %s", sn_strerror(r));
                        seq++;
                }
                for (;;) {
                        sn_entry_t e[16];
                        bool done = posts_seen == nposts;

                        for (int i = 0; i < NSOCK && done; i++)
                                done = got[i] == expect[i];
                        if (done)
                                break;
                        if (now_ms() > stall) {
                                char what[256];
                                int o = snprintf(what, sizeof(what), "posts %d/%d", posts_seen,
                                                 nposts);
                                for (int i = 0; i < NSOCK; i++)
                                        o += snprintf(what + o, sizeof(what) - (size_t)o,
                                                      ", sock%d %ld/%ld", i, got[i], expect[i]);
                                CHILD_FAIL("survivor: notifications owed never came (%s)", what);
                        }
                        r = sn_port_process(p, nrearm ? rearm : NULL, nrearm, e, 16, 1000);
                        for (uint32_t i = 0; i < nrearm && r >= 0; i++)
                                if (rearm[i].result)
                                        CHILD_FAIL("re-arm: %s", sn_strerror(rearm[i].result));
                        nrearm = 0;
                        if (r == -ETIMEDOUT)
                                continue;
                        if (r < 0)
                                CHILD_FAIL("survivor dequeue: %s", sn_strerror(r));
                        for (int k = 0; k < r; k++) {
                                if (e[k].kind == SN_ENTRY_POSTED) {
                                        uint64_t s = e[k].key & 0xffffffffull;

                                        if ((e[k].key >> 32) != 0x50000000u ||
                                            e[k].overlapped != ~s || e[k].events != (uint32_t)s ||
                                            s < first_post || s >= first_post + (uint64_t)nposts)
                                                CHILD_FAIL("posted packet corrupted or from an "
                                                           "earlier batch: key %llx",
                                                           (unsigned long long)e[k].key);
                                        if (post_seen[s - first_post])
                                                CHILD_FAIL("posted packet %llu twice",
                                                           (unsigned long long)s);
                                        post_seen[s - first_post] = true;
                                        posts_seen++;
                                        __atomic_fetch_add(&S->notifications, 1, __ATOMIC_RELAXED);
                                        continue;
                                }
                                if (e[k].key >= NSOCK || !(e[k].events & SN_EVENT_IN))
                                        CHILD_FAIL("unexpected entry key %llu events %#x",
                                                   (unsigned long long)e[k].key, e[k].events);
                                int i = (int)e[k].key;
                                char buf[8192];
                                ssize_t n;

                                while ((n = recv(sp[i][1], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
                                        got[i] += n;
                                if (n == 0)
                                        CHILD_FAIL("socket %d: unexpected EOF", i);
                                if (got[i] > expect[i])
                                        CHILD_FAIL("socket %d: %ld bytes read, %ld sent", i,
                                                   got[i], expect[i]);
                                __atomic_fetch_add(&S->notifications, 1, __ATOMIC_RELAXED);
                                if (i < NTCP) /* ONESHOT: re-arm with the next call */
                                        rearm[nrearm++] = regs[i];
                        }
                }
        }
        for (int i = 0; i < NSOCK; i++)
                __atomic_fetch_add(&S->bytes, got[i], __ATOMIC_RELAXED);
        for (int i = 0; i < NSOCK; i++) {
                r = sn_socket_close(c, sp[i][1]);
                if (r < 0)
                        CHILD_FAIL("sn_socket_close: %s", sn_strerror(r));
                close(sp[i][0]);
        }
        close(l);
        r = sn_port_close(p);
        if (r < 0)
                CHILD_FAIL("sn_port_close: %s", sn_strerror(r));
        sn_conn_close(c);
        _exit(0);
}

/* ---- shared named ports: numbered packets from several processes, exactly once ------------- */

static char group_name[MAX_GROUPS][64];

static void record_packet(const sn_entry_t *e)
{
        unsigned g = (unsigned)(e->key >> 48) & 0xff, poster = (unsigned)(e->key >> 32) & 0xff;
        uint32_t s = (uint32_t)e->key;

        if ((e->key >> 56) != 0x7a || g >= MAX_GROUPS || poster >= MAX_POSTERS ||
            e->overlapped != ~e->key || e->events != s)
                CHILD_FAIL("shared port: corrupted packet key %llx", (unsigned long long)e->key);
        if (s >= TAIL_BASE) {
                if (s - TAIL_BASE >= TAIL_N)
                        CHILD_FAIL("shared port: bad tail sequence %u", s);
                if (__atomic_fetch_add(&S->tail_seen[g][poster][s - TAIL_BASE], 1,
                                       __ATOMIC_RELAXED))
                        CHILD_FAIL("shared port: tail packet %u of poster %u twice", s, poster);
                __atomic_fetch_add(&S->tail_got[g], 1, __ATOMIC_RELEASE);
        } else {
                if (s >= MAX_SEQ)
                        CHILD_FAIL("shared port: bad sequence %u", s);
                if (__atomic_fetch_add(&S->seen[g][poster][s], 1, __ATOMIC_RELAXED))
                        CHILD_FAIL("shared port: packet %u of poster %u twice", s, poster);
        }
}

static uint64_t shared_key(int g, int poster, uint32_t s)
{
        return 0x7a00000000000000ull | (uint64_t)g << 48 | (uint64_t)poster << 32 | s;
}

static void run_shared(int g, int poster)
{
        sn_conn_t *c;
        sn_port_t *p;
        uint32_t s = 0;
        int r;

        open_conn(&c);
        r = sn_port_open(c, group_name[g], &p);
        if (r < 0)
                CHILD_FAIL("sn_port_open %s: %s", group_name[g], sn_strerror(r));
        say_ready('R');
        while (__atomic_load_n(&S->phase, __ATOMIC_ACQUIRE) == PHASE_RUN) {
                sn_entry_t e[8];

                if (s < MAX_SEQ) {
                        uint64_t k = shared_key(g, poster, s);

                        r = sn_port_post(p, k, s, ~k);
                        if (r < 0)
                                CHILD_FAIL("shared post: %s", sn_strerror(r));
                        __atomic_store_n(&S->posted[g][poster], (int)++s, __ATOMIC_RELEASE);
                }
                r = sn_port_dequeue(p, e, 8, (uint32_t)rnd(0, 20));
                if (r < 0 && r != -ETIMEDOUT)
                        CHILD_FAIL("shared dequeue: %s", sn_strerror(r));
                for (int i = 0; i < r; i++)
                        record_packet(&e[i]);
                __atomic_fetch_add(&S->notifications, r > 0 ? r : 0, __ATOMIC_RELAXED);
        }
        /* Tail: every victim is gone; each of these must arrive exactly once. */
        for (uint32_t i = 0; i < TAIL_N; i++) {
                uint64_t k = shared_key(g, poster, TAIL_BASE + i);

                r = sn_port_post(p, k, TAIL_BASE + i, ~k);
                if (r < 0)
                        CHILD_FAIL("shared tail post: %s", sn_strerror(r));
        }
        for (long long deadline = now_ms() + 30000;;) {
                sn_entry_t e[8];

                if (__atomic_load_n(&S->tail_got[g], __ATOMIC_ACQUIRE) >= S->tail_want[g])
                        break;
                if (now_ms() > deadline)
                        CHILD_FAIL("shared port %d: %d of %d final packets arrived", g,
                                   S->tail_got[g], S->tail_want[g]);
                r = sn_port_dequeue(p, e, 8, 100);
                if (r < 0 && r != -ETIMEDOUT)
                        CHILD_FAIL("shared dequeue: %s", sn_strerror(r));
                for (int i = 0; i < r; i++)
                        record_packet(&e[i]);
                __atomic_fetch_add(&S->notifications, r > 0 ? r : 0, __ATOMIC_RELAXED);
        }
        r = sn_port_close(p);
        if (r < 0)
                CHILD_FAIL("shared close: %s", sn_strerror(r));
        sn_conn_close(c);
        _exit(0);
}

/* ---- victims (killed by the parent; they never exit on their own) ------------------------- */

struct parked {
        sn_port_t *port;
        bool record; /* shared port: record what arrives (honest consumer until killed) */
};

static void *parked_thread(void *arg)
{
        struct parked *pk = arg;

        for (;;) {
                sn_entry_t e[4];
                int r = sn_port_dequeue(pk->port, e, 4, rnd(0, 3) ? SN_INFINITE : 200);

                if (r < 0 && r != -ETIMEDOUT)
                        pause();
                for (int i = 0; pk->record && i < r; i++)
                        record_packet(&e[i]);
        }
        return NULL;
}

/* Threads parked in waits, on a private port (main thread posts and writes) or a shared one. */
static void run_parked(int g)
{
        sn_conn_t *c;
        struct parked pk = { .record = g >= 0 };
        pthread_t t;
        int sp[2][2], r;

        open_conn(&c);
        r = g >= 0 ? sn_port_open(c, group_name[g], &pk.port) : sn_port_create(c, 0, &pk.port);
        if (r < 0)
                CHILD_FAIL("parked port: %s", sn_strerror(r));
        for (int i = 0; i < 2 && g < 0; i++) {
                sn_registration_t reg;

                unix_pair(sp[i]);
                reg = (sn_registration_t){ .fd = sp[i][1], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                           .filter = SN_REGISTER_EVENT_IN,
                                           .trigger = SN_TRIGGER_EDGE };
                sn_port_process(pk.port, &reg, 1, NULL, 0, 0);
        }
        for (int i = 0; i < 4; i++)
                pthread_create(&t, NULL, parked_thread, &pk);
        say_ready('R');
        for (uint64_t k = 0;; k++) {
                if (g < 0) {
                        sn_port_post(pk.port, k, 1, k);
                        if (send(sp[k % 2][0], "x", 1, MSG_DONTWAIT) < 0 && errno != EAGAIN)
                                pause();
                }
                sleep_ms(rnd(1, 5));
        }
}

/* Raw protocol, for what the library never does. */
struct raw {
        int fd;
        uint32_t id;
        uint32_t port;
};

static int raw_send(struct raw *w, const uint8_t *buf, size_t len, const int *fds, unsigned nfds)
{
        return sn__fdmsg_send(w->fd, buf, len, fds, nfds, 0);
}

/* Reads messages until the reply to id; returns its status (negative errno on transport). */
static int raw_reply(struct raw *w, uint32_t id, uint8_t *buf, size_t cap)
{
        for (;;) {
                int fds[SN_PROTO_MAX_FDS];
                unsigned nfds = 0;
                struct snw_header h;
                const struct sn_msg_desc *d;
                ssize_t n = sn__fdmsg_recv(w->fd, buf, cap, fds, 0, &nfds, 0);

                sn__fds_close(fds, nfds);
                if (n <= 0)
                        return n == 0 ? -ECONNRESET : (int)n;
                if (sn_msg_check(buf, (size_t)n, &h, &d) == 0 && h.id == id)
                        return -(int)h.status;
        }
}

static int raw_port_create(struct raw *w, uint32_t *ret_port)
{
        uint8_t buf[512];
        struct snw_port_create pc = { 0 };
        struct snw_port_create_reply rep;
        uint32_t id = 0x40000000u + ++w->id; /* apart from the callers' own ids */
        int r;

        snw_port_create_encode(sn_msg_begin(buf, SN_MSG_PORT_CREATE, id, 0, 0, 0, 0), &pc);
        r = raw_send(w, buf, sn_msg_size(SN_MSG_PORT_CREATE, 0, 0), NULL, 0);
        if (r == 0)
                r = raw_reply(w, id, buf, sizeof(buf));
        if (r < 0)
                return r;
        snw_port_create_reply_decode(sn_msg_body(buf), &rep);
        *ret_port = rep.port;
        return 0;
}

static int raw_open(struct raw *w, bool create_port)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint8_t buf[512];
        struct snw_hello hello = { .magic = SN_PROTO_MAGIC, .version_min = SN_PROTO_VERSION,
                                   .version_max = SN_PROTO_VERSION };
        int r;

        w->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", D.path);
        if (w->fd < 0 || connect(w->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 0, 0, 0, 0, 0), &hello);
        r = raw_send(w, buf, sn_msg_size(SN_MSG_HELLO, 0, 0), NULL, 0);
        if (r == 0)
                r = raw_reply(w, 0, buf, sizeof(buf));
        w->id = 1;
        if (r < 0 || !create_port)
                return r;
        return raw_port_create(w, &w->port);
}

/* Encodes one PROCESS message of n ENABLE items, item i passing fds[i] when fds is not NULL. */
static size_t raw_process(uint8_t *buf, uint32_t id, uint32_t port, const int *fds, uint32_t n,
                          uint32_t flags, uint32_t max_entries, uint32_t timeout_ms)
{
        struct snw_process body = { .port = port, .timeout_ms = timeout_ms,
                                    .max_entries = max_entries, .flags = flags,
                                    .thread = (uint32_t)gettid() };
        uint8_t *p = snw_process_encode(sn_msg_begin(buf, SN_MSG_PROCESS, id, 0,
                                                     (uint16_t)(fds ? n : 0), n, 0),
                                       &body);

        for (uint32_t i = 0; i < n; i++) {
                struct stat st;
                struct snw_registration it = { .key = i, .filter = SN_REGISTER_EVENT_IN,
                                               .op = SN_OP_ENABLE,
                                               .trigger = SN_TRIGGER_LEVEL,
                                               .fd_index = fds ? i : SN_PROTO_NO_FD,
                                               .client_fd = fds ? (uint32_t)fds[i] : 0 };

                if (fds && fstat(fds[i], &st) == 0) {
                        it.dev = st.st_dev;
                        it.ino = st.st_ino;
                }
                p = snw_registration_encode(p, &it);
        }
        return (size_t)(p - buf);
}

/* The first part of a 300-item call (253 descriptors), then nothing: killed between parts. */
static void run_multipart(void)
{
        static uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_process + 253 * SN_WIRE_SIZE_registration];
        struct raw w;
        int fds[253], r = raw_open(&w, true);

        if (r < 0)
                CHILD_FAIL("multipart raw open: %s", sn_strerror(r));
        for (int i = 0; i < 253; i++)
                fds[i] = udp_bound();
        r = raw_send(&w, buf, raw_process(buf, 2, w.port, fds, 253, SN_PROTO_PROCESS_PART, 0, 0),
                     fds, 253);
        if (r < 0)
                CHILD_FAIL("multipart first part: %s", sn_strerror(r));
        say_ready('R');
        for (;;)
                pause();
}

/* Library calls of 300 registrations (two parts each), over and over, killed anywhere. */
static void *libmulti_waiter(void *arg)
{
        for (;;) {
                sn_entry_t e[64];

                if (sn_port_dequeue(arg, e, 64, SN_INFINITE) < 0)
                        pause();
        }
        return NULL;
}

static void run_libmulti(bool ready)
{
        enum { N = 300 };
        sn_conn_t *c;
        sn_port_t *p;
        sn_registration_t regs[N];
        pthread_t t;
        int r;

        open_conn(&c);
        r = sn_port_create(c, 0, &p);
        if (r < 0)
                CHILD_FAIL("libmulti port: %s", sn_strerror(r));
        for (int i = 0; i < N; i++)
                regs[i] = (sn_registration_t){ .fd = udp_bound(), .key = (uint64_t)i,
                                               .filter = SN_REGISTER_EVENT_HANGUP,
                                               .trigger = SN_TRIGGER_LEVEL };
        pthread_create(&t, NULL, libmulti_waiter, p);
        if (ready)
                say_ready('R');
        for (;;) {
                for (int i = 0; i < N; i++)
                        regs[i].op = SN_OP_ENABLE;
                sn_port_process(p, regs, N, NULL, 0, 0);
                sn_port_post(p, 1, 1, 1);
                for (int i = 0; i < N; i++)
                        regs[i].op = SN_OP_REMOVE;
                sn_port_process(p, regs, N, NULL, 0, 0);
        }
}

/* Entries dequeued and held: ONESHOT registrations stay disarmed while this process lives. */
static void run_holder(void)
{
        sn_conn_t *c;
        sn_port_t *p;
        int sp[8][2], r, held = 0;

        open_conn(&c);
        r = sn_port_create(c, 0, &p);
        if (r < 0)
                CHILD_FAIL("holder port: %s", sn_strerror(r));
        for (int i = 0; i < 8; i++) {
                sn_registration_t reg;

                unix_pair(sp[i]);
                if (send(sp[i][0], "hold", 4, 0) != 4)
                        CHILD_FAIL("holder send: %s", strerror(errno));
                reg = (sn_registration_t){ .fd = sp[i][1], .key = (uint64_t)i, .op = SN_OP_ENABLE,
                                           .filter = SN_REGISTER_EVENTS_ALL,
                                           .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT };
                sn_port_process(p, &reg, 1, NULL, 0, 0);
        }
        sn_port_post(p, 99, 0, 0);
        for (long long deadline = now_ms() + 5000; held < 9 && now_ms() < deadline;) {
                sn_entry_t e[16];

                r = sn_port_dequeue(p, e, 16, 500);
                held += r > 0 ? r : 0;
        }
        say_ready('R');
        for (;;)
                pause();
}

/* Never reads its replies: dequeues answered at once, timed waits, STATUS documents, until the
 * daemon's output bound drops the connection; then again on a new one. */
static void run_nonreader(void)
{
        static uint8_t buf[65536];
        bool said = false;

        for (;;) {
                struct raw w;
                uint32_t empty;
                int sp[64][2], fds[64], r = raw_open(&w, true);

                if (r < 0) {
                        if (!said)
                                CHILD_FAIL("nonreader open: %s", sn_strerror(r));
                        sleep_ms(50);
                        continue;
                }
                for (int i = 0; i < 64; i++) {
                        unix_pair(sp[i]);
                        if (send(sp[i][0], "readable", 8, 0) != 8)
                                CHILD_FAIL("nonreader send: %s", strerror(errno));
                        fds[i] = sp[i][1];
                }
                r = raw_send(&w, buf, raw_process(buf, 2, w.port, fds, 64, 0, 0, 0), fds, 64);
                if (r == 0)
                        r = raw_reply(&w, 2, buf, sizeof(buf));
                if (r < 0)
                        CHILD_FAIL("nonreader register: %s", sn_strerror(r));
                r = raw_port_create(&w, &empty);
                if (r < 0)
                        CHILD_FAIL("nonreader second port: %s", sn_strerror(r));
                if (!said)
                        say_ready('R');
                said = true;
                fcntl(w.fd, F_SETFL, O_NONBLOCK);
                for (uint32_t id = 3;; id++) {
                        size_t len;

                        if (id % 7 == 0) {
                                len = SN_HEADER_SIZE;
                                sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
                        } else if (id % 31 == 0) {
                                /* Parked on the empty port, answered when its timer fires (a
                                 * few at a time: waits are limited per user, and the other
                                 * clients of this user need theirs). */
                                len = raw_process(buf, id, empty, NULL, 0, 0, 1,
                                                  (uint32_t)rnd(5, 300));
                        } else {
                                /* Answered at once with 64 entries. */
                                len = raw_process(buf, id, w.port, NULL, 0, 0, 64, 0);
                        }
                        r = raw_send(&w, buf, len, NULL, 0);
                        if (r == -EAGAIN) {
                                sleep_ms(1);
                                continue;
                        }
                        if (r < 0)
                                break;
                }
                /* Dropped by the daemon (output bound) or refused: count it, start again. */
                __atomic_fetch_add(&S->output_kills, 1, __ATOMIC_RELAXED);
                close(w.fd);
                for (int i = 0; i < 64; i++) {
                        close(sp[i][0]);
                        close(sp[i][1]);
                }
        }
}

/* Fills its queue of unread answers to just under the daemon's output bound (8 MiB by default)
 * with answered dequeues, then parks timed waits and goes silent: the answer that crosses the
 * bound is then a timeout's, sent from inside the wait's own timer.  Again and again, with the
 * fill level drawn at random (the kernel's socket buffer holds an unknown part of it). */
static void run_filler(void)
{
        static uint8_t buf[SN_HEADER_SIZE + SN_WIRE_SIZE_process + 8 * SN_WIRE_SIZE_registration];
        const long reply = (long)sn_msg_size(SN_MSG_PROCESS_REPLY, 0, 8);
        bool said = false;

        for (;;) {
                struct raw w;
                uint32_t empty, id = 3;
                int sp[8][2], fds[8], r = raw_open(&w, true);
                long target = (8L << 20) - 48 * 1024 + rnd(0, 128 * 1024);
                long long deadline = now_ms() + 3000;

                if (r == 0) {
                        for (int i = 0; i < 8; i++) {
                                unix_pair(sp[i]);
                                if (send(sp[i][0], "readable", 8, 0) != 8)
                                        CHILD_FAIL("filler send: %s", strerror(errno));
                                fds[i] = sp[i][1];
                        }
                        r = raw_send(&w, buf, raw_process(buf, 2, w.port, fds, 8, 0, 0, 0), fds,
                                     8);
                        if (r == 0)
                                r = raw_reply(&w, 2, buf, sizeof(buf));
                        if (r == 0)
                                r = raw_port_create(&w, &empty);
                        for (int i = 0; i < 8; i++)
                                close(sp[i][0]);
                }
                if (r < 0 && !said)
                        CHILD_FAIL("filler setup: %s", sn_strerror(r));
                if (!said)
                        say_ready('R');
                said = true;
                fcntl(w.fd, F_SETFL, O_NONBLOCK);
                for (long queued = 0; r == 0 && queued < target && now_ms() < deadline;) {
                        r = raw_send(&w, buf, raw_process(buf, id, w.port, NULL, 0, 0, 8, 0), NULL,
                                     0);
                        if (r == -EAGAIN) {
                                r = 0;
                                sleep_ms(1);
                                continue;
                        }
                        queued += reply;
                        id++;
                }
                for (int i = 0; r == 0 && i < 600; i++)
                        r = raw_send(&w, buf,
                                     raw_process(buf, id++, empty, NULL, 0, 0, 1,
                                                 (uint32_t)rnd(1, 40)),
                                     NULL, 0);
                sleep_ms(100);
                __atomic_fetch_add(&S->output_kills, r < 0, __ATOMIC_RELAXED);
                close(w.fd);
                for (int i = 0; i < 8; i++)
                        close(sp[i][1]);
        }
}

/* Parks two timed waits, then shuts its reading side: the daemon's sends start failing. */
static void run_shutrd(void)
{
        uint8_t buf[256];
        bool said = false;

        for (;;) {
                struct raw w;
                int r = raw_open(&w, true);

                if (r < 0 && !said)
                        CHILD_FAIL("shutrd open: %s", sn_strerror(r));
                if (r == 0) {
                        for (uint32_t id = 2; id < 4; id++)
                                raw_send(&w, buf,
                                         raw_process(buf, id, w.port, NULL, 0, 0, 1,
                                                     (uint32_t)rnd(1, 60)),
                                         NULL, 0);
                        shutdown(w.fd, SHUT_RD);
                        /* More requests whose answers cannot be delivered. */
                        for (uint32_t id = 4; id < 8; id++) {
                                sn_msg_begin(buf, SN_MSG_STATUS, id, 0, 0, 0, 0);
                                raw_send(&w, buf, SN_HEADER_SIZE, NULL, 0);
                        }
                }
                if (!said)
                        say_ready('R');
                said = true;
                sleep_ms(rnd(20, 120));
                close(w.fd);
        }
}

/* ---- a round ------------------------------------------------------------------------------- */

enum role {
        R_SURVIVOR,
        R_SURVIVOR_STOP, /* SIGSTOPped for a while, then SIGCONT: must still get everything */
        R_SHARED,
        R_PARKED,
        R_SHARED_PARKED,
        R_SHARED_PARKED_STOP, /* stopped with its waits parked while others post, then killed */
        R_MULTIPART,
        R_LIBMULTI,
        R_HOLDER,
        R_HOLDER_STOP,
        R_NONREADER,
        R_FILLER, /* nonreader that goes silent just under the output bound, waits parked */
        R_SHUTRD,
};

static const char *role_name[] = {
        "survivor", "survivor-stopped", "shared", "parked", "shared-parked",
        "shared-parked-stopped", "multipart", "libmulti", "holder", "holder-stopped", "nonreader", "filler",
        "shutrd",
};

struct child {
        pid_t pid;
        enum role role;
        int group, poster;
        long long t_stop, t_cont, t_kill; /* ms into the fault phase; 0: never */
        bool stopped, dead, reaped;
        int status;
};

static struct {
        long started, killed, stopped, survivors, survivors_ok, setup_failed;
        long lost_to_killed, packets_posted;
        long rss_kb[64];
        int fds_after[64];
        int nrounds;
} T;

static bool survivor_role(enum role r)
{
        return r == R_SURVIVOR || r == R_SURVIVOR_STOP || r == R_SHARED;
}

static void run_child(struct child *ch)
{
        child_init();
        switch (ch->role) {
        case R_SURVIVOR:
        case R_SURVIVOR_STOP:
                run_survivor();
                break;
        case R_SHARED:
                run_shared(ch->group, ch->poster);
                break;
        case R_PARKED:
                run_parked(-1);
                break;
        case R_SHARED_PARKED:
        case R_SHARED_PARKED_STOP:
                run_parked(ch->group);
                break;
        case R_MULTIPART:
                run_multipart();
                break;
        case R_LIBMULTI:
                run_libmulti(true);
                break;
        case R_HOLDER:
        case R_HOLDER_STOP:
                run_holder();
                break;
        case R_NONREADER:
                run_nonreader();
                break;
        case R_FILLER:
                run_filler();
                break;
        case R_SHUTRD:
                run_shutrd();
                break;
        }
        _exit(0);
}

/* Picks the roles of a round's n clients. */
static int plan_round(struct child *ch, int n, int *ngroups)
{
        static const struct {
                enum role role;
                const char *scenario;
                int per_100;
        } mix[] = {
                { R_SURVIVOR, "survivor", 34 },     { R_SURVIVOR_STOP, "stop", 8 },
                { R_PARKED, "parked", 12 },         { R_SHARED_PARKED, "shared-parked", 8 },
                { R_SHARED_PARKED_STOP, "stop", 4 }, { R_MULTIPART, "multipart", 3 },
                { R_LIBMULTI, "libmulti", 3 },      { R_HOLDER, "holder", 5 },
                { R_HOLDER_STOP, "stop", 4 },       { R_NONREADER, "nonreader", 3 },
                { R_FILLER, "nonreader", 3 },
                { R_SHUTRD, "shutrd", 4 },
        };
        int k = 0, g;

        /* Shared groups first: 3 posting and consuming survivors each. */
        *ngroups = enabled("shared") ? SN_MIN(MAX_GROUPS, SN_MAX(1, n / 40)) : 0;
        for (g = 0; g < *ngroups; g++)
                for (int p = 0; p < 3 && k < n; p++)
                        ch[k++] = (struct child){ .role = R_SHARED, .group = g, .poster = p };
        for (size_t m = 0; m < SN_ARRAY_SIZE(mix); m++) {
                bool shared = mix[m].role == R_SHARED_PARKED || mix[m].role == R_SHARED_PARKED_STOP;
                int want = SN_MAX(1, (n - *ngroups * 3) * mix[m].per_100 / 100);

                if (!enabled(mix[m].scenario) || (shared && !enabled("shared-parked")) ||
                    (shared && !*ngroups) ||
                    ((mix[m].role == R_HOLDER_STOP) && !enabled("holder")))
                        continue;
                for (int i = 0; i < want && k < n; i++)
                        ch[k++] = (struct child){ .role = mix[m].role,
                                                  .group = shared ? i % *ngroups : -1 };
        }
        /* The rest: plain survivors (if enabled), else more of the victims picked. */
        for (int i = 0; k < n && enabled("survivor"); i++)
                ch[k++] = (struct child){ .role = R_SURVIVOR, .group = -1 };
        return k;
}

static void reap(struct child *ch, bool block)
{
        int st;

        if (ch->reaped || ch->pid <= 0)
                return;
        if (waitpid(ch->pid, &st, block ? 0 : WNOHANG) == ch->pid) {
                untrack(ch->pid);
                ch->reaped = true;
                ch->status = st;
        }
}

static void run_round(int round, double seconds)
{
        struct child *ch = calloc((size_t)opt_clients, sizeof(*ch));
        sn_port_t *gport[MAX_GROUPS] = { NULL };
        int n, ngroups, pipefd[2], ready = 0, nvictims = 0;
        long long fault_ms = (long long)(seconds * 600), t0, deadline;
        char stage[64];

        memset(S->seen, 0, sizeof(S->seen));
        memset(S->tail_seen, 0, sizeof(S->tail_seen));
        memset(S->posted, 0, sizeof(S->posted));
        memset(S->tail_got, 0, sizeof(S->tail_got));
        S->phase = PHASE_RUN;
        S->round = round;
        n = plan_round(ch, opt_clients, &ngroups);
        for (int g = 0; g < ngroups; g++) {
                int r;

                snprintf(group_name[g], sizeof(group_name[g]), "sn-stress-%d-r%d-g%d",
                         (int)getpid(), round, g);
                r = sn_port_create_named(monitor, group_name[g], 0, &gport[g]);
                if (r < 0) {
                        fail(false, "named port: %s", sn_strerror(r));
                        return;
                }
                S->tail_want[g] = 3 * TAIL_N;
        }
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                perror("pipe");
                exit(1);
        }
        ready_fd = pipefd[1];
        snprintf(stage, sizeof(stage), "round %d (start-up of %d clients)", round + 1, n);
        current_stage = stage;
        for (int i = 0; i < n; i++) {
                ch[i].pid = fork();
                if (ch[i].pid == 0) {
                        close(pipefd[0]);
                        run_child(&ch[i]);
                }
                if (ch[i].pid < 0) {
                        fail(false, "fork: %s", strerror(errno));
                        n = i;
                        break;
                }
                track(ch[i].pid);
                T.started++;
                if (!survivor_role(ch[i].role))
                        nvictims++;
                else
                        T.survivors++;
                if (i % 16 == 15)
                        check_daemon_alive();
        }
        close(pipefd[1]);
        deadline = now_ms() + 30000;
        while (ready < n && now_ms() < deadline) {
                struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
                char buf[256];

                check_daemon_alive();
                if (poll(&pfd, 1, 100) > 0) {
                        ssize_t k = read(pipefd[0], buf, sizeof(buf));

                        if (k <= 0)
                                break; /* every child wrote or died */
                        ready += (int)k;
                }
        }
        close(pipefd[0]);
        if (ready < n)
                fprintf(stderr, "sn-stress: round %d: only %d of %d clients got ready\n",
                        round + 1, ready, n);

        /* Faults: plan every victim's fate and the survivors' pauses. */
        for (int i = 0; i < n; i++) {
                struct child *c = &ch[i];

                switch (c->role) {
                case R_SURVIVOR_STOP:
                        c->t_stop = rnd(1, (int)fault_ms / 2);
                        c->t_cont = c->t_stop + rnd(200, 1500);
                        break;
                case R_SHARED_PARKED_STOP:
                case R_HOLDER_STOP:
                        c->t_stop = rnd(1, (int)fault_ms / 2);
                        c->t_kill = c->t_stop + rnd(100, (int)fault_ms / 2);
                        if (rnd(0, 1))
                                c->t_cont = c->t_stop + rnd(50, (int)(c->t_kill - c->t_stop));
                        break;
                case R_SURVIVOR:
                case R_SHARED:
                        break;
                default:
                        c->t_kill = rnd(1, (int)fault_ms);
                        break;
                }
        }
        snprintf(stage, sizeof(stage), "round %d (faults)", round + 1);
        for (t0 = now_ms();;) {
                long long t = now_ms() - t0;
                bool pending = false;

                check_daemon_alive();
                for (int i = 0; i < n; i++) {
                        struct child *c = &ch[i];

                        reap(c, false);
                        if (c->reaped && !c->dead && !survivor_role(c->role)) {
                                c->dead = true; /* a victim that failed on its own */
                                T.setup_failed++;
                        }
                        if (c->dead || c->reaped)
                                continue;
                        if (c->t_stop && !c->stopped && t >= c->t_stop &&
                            (!c->t_cont || t < c->t_cont)) {
                                kill(c->pid, SIGSTOP);
                                c->stopped = true;
                                T.stopped++;
                        }
                        if (c->t_cont && c->stopped && t >= c->t_cont) {
                                kill(c->pid, SIGCONT);
                                c->stopped = false;
                                c->t_stop = 0;
                        }
                        if (c->t_kill && t >= c->t_kill) {
                                kill(c->pid, SIGKILL);
                                c->dead = true;
                                T.killed++;
                        }
                        pending |= (c->t_kill && !c->dead) || c->stopped;
                }
                if (!pending && t >= fault_ms)
                        break;
                sleep_ms(5);
        }
        for (int i = 0; i < n; i++)
                if (!survivor_role(ch[i].role)) {
                        if (!ch[i].dead && !ch[i].reaped) {
                                kill(ch[i].pid, SIGKILL);
                                T.killed++;
                        }
                        ch[i].dead = true;
                        reap(&ch[i], true);
                }

        /* The daemon must have seen every victim go before the final batch is posted. */
        snprintf(stage, sizeof(stage), "round %d (after the kills)", round + 1);
        for (deadline = now_ms() + 10000;;) {
                struct figures f;
                int alive = 0;

                for (int i = 0; i < n; i++) {
                        reap(&ch[i], false);
                        alive += survivor_role(ch[i].role) && !ch[i].reaped;
                }
                check_daemon_alive();
                if (get_figures(&f) == 0 && f.connections <= base_fig.connections + alive)
                        break;
                if (now_ms() > deadline) {
                        fail(false, "round %d: connections of killed clients still open (%ld)",
                             round + 1, f.connections);
                        break;
                }
                sleep_ms(20);
        }
        __atomic_store_n(&S->phase, PHASE_TAIL, __ATOMIC_RELEASE);

        snprintf(stage, sizeof(stage), "round %d (survivors finishing)", round + 1);
        for (deadline = now_ms() + 60000;;) {
                bool all = true;

                check_daemon_alive();
                for (int i = 0; i < n; i++) {
                        reap(&ch[i], false);
                        all &= ch[i].reaped;
                }
                if (all)
                        break;
                if (now_ms() > deadline) {
                        for (int i = 0; i < n; i++)
                                if (!ch[i].reaped) {
                                        fail(false, "round %d: %s client %d hung", round + 1,
                                             role_name[ch[i].role], (int)ch[i].pid);
                                        kill(ch[i].pid, SIGKILL);
                                        reap(&ch[i], true);
                                }
                        break;
                }
                sleep_ms(20);
        }
        for (int i = 0; i < n; i++) {
                if (!survivor_role(ch[i].role))
                        continue;
                if (WIFEXITED(ch[i].status) && WEXITSTATUS(ch[i].status) == 0)
                        T.survivors_ok++;
                else if (!S->failures)
                        fail(false, "round %d: %s client %d ended with status %#x", round + 1,
                             role_name[ch[i].role], (int)ch[i].pid, ch[i].status);
        }

        /* Shared ports: no packet twice (checked as they came), every final one exactly once;
         * earlier ones may only be missing if they went to a waiter that was killed. */
        for (int g = 0; g < ngroups; g++) {
                bool had_victims = false;

                for (int i = 0; i < n; i++)
                        had_victims |= ch[i].group == g && !survivor_role(ch[i].role);
                for (int p = 0; p < 3; p++) {
                        int posted = S->posted[g][p], missing = 0;

                        T.packets_posted += posted + TAIL_N;
                        for (int s = 0; s < posted; s++)
                                missing += !S->seen[g][p][s];
                        for (int s = 0; s < TAIL_N; s++)
                                if (S->tail_seen[g][p][s] != 1)
                                        fail(false, "round %d group %d: final packet %d of "
                                             "poster %d arrived %d times", round + 1, g, s, p,
                                             S->tail_seen[g][p][s]);
                        if (missing && !had_victims)
                                fail(false, "round %d group %d: %d packets of poster %d lost "
                                     "with no client killed", round + 1, g, missing, p);
                        T.lost_to_killed += missing;
                }
                sn_port_close(gport[g]);
        }
        snprintf(stage, sizeof(stage), "round %d (end)", round + 1);
        T.fds_after[T.nrounds] = check_baseline(stage);
        T.rss_kb[T.nrounds++] = daemon_rss_kb();
        printf("round %d: %d clients (%d victims), daemon fds %d (baseline %d), RSS %ld kB, "
               "failures so far %ld\n",
               round + 1, n, nvictims, T.fds_after[T.nrounds - 1], base_fds,
               T.rss_kb[T.nrounds - 1], S->failures);
        fflush(stdout);
        free(ch);
}

/* ---- soak: 200 connections x 20 sockets with churn ----------------------------------------- */

enum { SOAK_PROCS = 10, SOAK_CONNS = 20, SOAK_SOCKS = 20 };

static void soak_child(double seconds)
{
        struct sconn {
                sn_conn_t *c;
                sn_port_t *p;
                int fd[SOAK_SOCKS];
                struct sockaddr_in addr[SOAK_SOCKS];
        } *sc = calloc(SOAK_CONNS, sizeof(*sc));
        int sender = udp_bound();
        long long end;
        uint64_t gen = 0;
        int r;

        child_init();
        for (int k = 0; k < SOAK_CONNS; k++) {
                open_conn(&sc[k].c);
                r = sn_port_create(sc[k].c, 0, &sc[k].p);
                if (r < 0)
                        CHILD_FAIL("soak port: %s", sn_strerror(r));
                for (int i = 0; i < SOAK_SOCKS; i++)
                        sc[k].fd[i] = -1;
        }
        say_ready('R');
        end = now_ms() + (long long)(seconds * 1000);
        while (now_ms() < end) {
                for (int k = 0; k < SOAK_CONNS; k++) {
                        struct sconn *s = &sc[k];
                        int pick[4];
                        bool seen[4] = { false };
                        int nseen = 0;

                        /* Churn: two sockets closed through the library, new ones registered
                         * (every socket on the first pass). */
                        for (int j = 0; j < SOAK_SOCKS; j++) {
                                sn_registration_t reg;
                                socklen_t len = sizeof(s->addr[j]);

                                if (s->fd[j] >= 0 && j != rnd(0, SOAK_SOCKS - 1) && j % 10 != 0)
                                        continue;
                                if (s->fd[j] >= 0 && (r = sn_socket_close(s->c, s->fd[j])) < 0)
                                        CHILD_FAIL("soak close: %s", sn_strerror(r));
                                s->fd[j] = udp_bound();
                                getsockname(s->fd[j], (struct sockaddr *)&s->addr[j], &len);
                                reg = (sn_registration_t){ .fd = s->fd[j],
                                                           .key = gen << 8 | (uint64_t)j,
                                                           .op = SN_OP_ENABLE,
                                                           .filter = SN_REGISTER_EVENT_IN,
                                                           .trigger = SN_TRIGGER_EDGE };
                                r = sn_port_process(s->p, &reg, 1, NULL, 0, 0);
                                if (r < 0 || reg.result < 0)
                                        CHILD_FAIL("soak register: %s",
                                                   sn_strerror(r < 0 ? r : reg.result));
                        }
                        gen++;
                        /* Traffic: one datagram to each of 4 distinct sockets, all notified. */
                        for (int i = 0; i < 4; i++) {
                                pick[i] = (k + i * 5 + rnd(0, 4)) % SOAK_SOCKS;
                                if (sendto(sender, &pick[i], sizeof(int), 0,
                                           (struct sockaddr *)&s->addr[pick[i]],
                                           sizeof(s->addr[0])) != sizeof(int))
                                        CHILD_FAIL("soak sendto: %s", strerror(errno));
                        }
                        for (long long stall = now_ms() + 20000; nseen < 4;) {
                                sn_entry_t e[8];

                                if (now_ms() > stall)
                                        CHILD_FAIL("soak: %d of 4 notifications came", nseen);
                                r = sn_port_dequeue(s->p, e, 8, 1000);
                                if (r == -ETIMEDOUT)
                                        continue;
                                if (r < 0)
                                        CHILD_FAIL("soak dequeue: %s", sn_strerror(r));
                                for (int x = 0; x < r; x++) {
                                        int j = (int)(e[x].key & 0xff), v;

                                        if (j >= SOAK_SOCKS || !(e[x].events & SN_EVENT_IN))
                                                CHILD_FAIL("soak: unexpected entry");
                                        while (recv(s->fd[j], &v, sizeof(v), MSG_DONTWAIT) > 0)
                                                for (int i = 0; i < 4; i++)
                                                        if (pick[i] == j && v == j && !seen[i]) {
                                                                seen[i] = true;
                                                                nseen++;
                                                                break;
                                                        }
                                }
                        }
                        __atomic_fetch_add(&S->notifications, 4, __ATOMIC_RELAXED);
                }
        }
        for (int k = 0; k < SOAK_CONNS; k++) {
                for (int j = 0; j < SOAK_SOCKS; j++)
                        if (sc[k].fd[j] >= 0)
                                sn_socket_close(sc[k].c, sc[k].fd[j]);
                sn_port_close(sc[k].p);
                sn_conn_close(sc[k].c);
        }
        _exit(0);
}

static void run_soak(double seconds)
{
        pid_t pids[SOAK_PROCS];
        int pipefd[2], ready = 0, fmin = 1 << 30, fmax = 0, nsamples = 0;
        int fsample[256];
        long rss_first = -1, rss_last = -1, rss_max = 0;
        long long t0, end;

        current_stage = "soak";
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                exit(1);
        ready_fd = pipefd[1];
        for (int i = 0; i < SOAK_PROCS; i++) {
                pids[i] = fork();
                if (pids[i] == 0) {
                        close(pipefd[0]);
                        soak_child(seconds);
                }
                track(pids[i]);
                T.started++;
        }
        close(pipefd[1]);
        while (ready < SOAK_PROCS) {
                char c;

                check_daemon_alive();
                if (read(pipefd[0], &c, 1) != 1)
                        break;
                ready++;
        }
        close(pipefd[0]);
        /* Sample after a warm-up second, while the churn runs. */
        t0 = now_ms();
        end = t0 + (long long)(seconds * 1000);
        sleep_ms(2000);
        while (now_ms() < end - 500) {
                int f = daemon_fds();
                long rss = daemon_rss_kb();

                check_daemon_alive();
                fmin = SN_MIN(fmin, f);
                fmax = SN_MAX(fmax, f);
                if (nsamples < (int)SN_ARRAY_SIZE(fsample))
                        fsample[nsamples] = f;
                /* RSS is judged from 40 % of the way on: allocator caches (and a sanitizer's
                 * quarantine) fill first; a leak keeps growing after that. */
                if (rss_first < 0 && now_ms() >= t0 + (end - t0) * 2 / 5)
                        rss_first = rss;
                rss_last = rss;
                rss_max = SN_MAX(rss_max, rss);
                nsamples++;
                sleep_ms(500);
        }
        for (int i = 0; i < SOAK_PROCS; i++) {
                int st = 0;

                for (long long deadline = now_ms() + 60000;;) {
                        check_daemon_alive();
                        if (waitpid(pids[i], &st, WNOHANG) == pids[i])
                                break;
                        if (now_ms() > deadline) {
                                fail(false, "soak client %d hung", (int)pids[i]);
                                kill(pids[i], SIGKILL);
                                waitpid(pids[i], &st, 0);
                                break;
                        }
                        sleep_ms(20);
                }
                untrack(pids[i]);
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        fail(false, "soak client %d failed (status %#x)", (int)pids[i], st);
        }
        int after = check_baseline("after the soak");
        printf("soak: %d connections x %d sockets, %.0f s: daemon fds during churn %d..%d "
               "(%d samples), after %d (baseline %d); RSS at 40 %% %ld kB, last %ld kB, max %ld kB\n",
               SOAK_PROCS * SOAK_CONNS, SOAK_SOCKS, seconds, fmin, fmax, nsamples, after,
               base_fds, rss_first, rss_last, rss_max);
        /* Flat: the connection and socket counts do not change, so neither may the floor of
         * the daemon's descriptors.  A sample sits above the floor by up to one socket per
         * connection (closed, its successor not yet registered), by what the closer thread has
         * not closed yet, and by what changed while /proc was read: so the width of the band
         * proves nothing, and failed once at 207 on a busy machine with 200 allowed.  A leak
         * that lasts as long as its connection raises the floor: the lowest count of the
         * second half of the samples against the lowest of the first half. */
        if (nsamples >= 4) {
                int n = SN_MIN(nsamples, (int)SN_ARRAY_SIZE(fsample)), lo1 = 1 << 30,
                    lo2 = 1 << 30;

                for (int i = 0; i < n; i++) {
                        if (i < n / 2)
                                lo1 = SN_MIN(lo1, fsample[i]);
                        else
                                lo2 = SN_MIN(lo2, fsample[i]);
                }
                printf("soak: lowest descriptor count %d in the first half of the samples, "
                       "%d in the second\n", lo1, lo2);
                if (lo2 - lo1 > SOAK_PROCS * SOAK_CONNS)
                        fail(false, "soak: daemon descriptors drifted: lowest %d, then %d",
                             lo1, lo2);
        }
        if (nsamples > 2 && rss_first > 0 && rss_last - rss_first > SN_MAX(8192, rss_first / 4))
                fail(false, "soak: daemon RSS grew from %ld to %ld kB", rss_first, rss_last);
}

/* ---- kill loop: SIGKILL a few milliseconds into the life of a client ----------------------- */

static void kill_loop(double seconds)
{
        enum { PAR = 6 };
        pid_t pids[PAR] = { 0 };
        long long end = now_ms() + (long long)(seconds * 1000), kill_at[PAR] = { 0 };
        int done = 0;

        current_stage = "kill loop";
        ready_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        for (;;) {
                bool any = false;

                for (int i = 0; i < PAR; i++) {
                        if (pids[i] && now_ms() >= kill_at[i]) {
                                kill(pids[i], SIGKILL);
                                waitpid(pids[i], NULL, 0);
                                untrack(pids[i]);
                                pids[i] = 0;
                                T.killed++;
                                done++;
                        }
                        if (!pids[i] && done + PAR <= opt_kill_loop && now_ms() < end) {
                                pids[i] = fork();
                                if (pids[i] == 0) {
                                        child_init();
                                        run_libmulti(false);
                                }
                                track(pids[i]);
                                T.started++;
                                kill_at[i] = now_ms() + rnd(1, 40);
                        }
                        any |= pids[i] != 0;
                }
                check_daemon_alive();
                if (!any)
                        break;
                sleep_ms(1);
        }
        close(ready_fd);
        int after = check_baseline("after the kill loop");
        printf("kill loop: %d clients killed mid-call, daemon fds after %d (baseline %d)\n", done,
               after, base_fds);
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
        fprintf(f, "Usage: sn-stress [--rounds N] [--clients N] [--seconds S] [--soak-seconds S] "
                   "[--kill-loop N]\n                 [--scenarios LIST] [--daemon PATH] "
                   "[--daemon-arg ARG]...\n");
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "rounds", required_argument, NULL, 'r' },
                { "clients", required_argument, NULL, 'c' },
                { "seconds", required_argument, NULL, 's' },
                { "soak-seconds", required_argument, NULL, 'k' },
                { "kill-loop", required_argument, NULL, 'K' },
                { "scenarios", required_argument, NULL, 'S' },
                { "daemon", required_argument, NULL, 'd' },
                { "daemon-arg", required_argument, NULL, 'a' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct rlimit rl;
        long long t_start = now_ms();
        double round_seconds, soak_seconds, loop_seconds;
        int c, st;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'r':
                        opt_rounds = SN_MAX(1, SN_MIN(atoi(optarg), 60));
                        break;
                case 'c':
                        opt_clients = SN_MAX(4, SN_MIN(atoi(optarg), 600));
                        break;
                case 's':
                        opt_seconds = SN_MAX(5.0, atof(optarg));
                        break;
                case 'k':
                        opt_soak_seconds = atof(optarg);
                        break;
                case 'K':
                        opt_kill_loop = SN_MAX(0, atoi(optarg));
                        break;
                case 'S':
                        opt_scenarios = optarg;
                        break;
                case 'd':
                        opt_daemon = optarg;
                        break;
                case 'a':
                        if (ndaemon_args < (int)SN_ARRAY_SIZE(daemon_args) - 1)
                                daemon_args[ndaemon_args++] = optarg;
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
        signal(SIGPIPE, SIG_IGN);
        S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (S == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        soak_seconds = !enabled("soak") ? 0 : opt_soak_seconds >= 0 ? opt_soak_seconds :
                                                                      opt_seconds * 0.25;
        loop_seconds = enabled("killloop") && opt_kill_loop ? opt_seconds * 0.15 : 0;
        round_seconds = SN_MAX(2.0, (opt_seconds - soak_seconds - loop_seconds) * 0.8 / opt_rounds);

        daemon_start(rl.rlim_cur > 1 << 20 ? 1 << 20 : rl.rlim_cur);
        if (sn_conn_open(D.path, &monitor) < 0) {
                fprintf(stderr, "sn-stress: cannot connect to the daemon\n");
                return 1;
        }
        usleep(100000);
        base_fds = daemon_fds();
        if (get_figures(&base_fig) < 0) {
                fprintf(stderr, "sn-stress: STATUS failed\n");
                return 1;
        }
        long rss0 = daemon_rss_kb();
        printf("sn-stress: daemon %d on %s: baseline fds %d, connections %ld, registrations %ld, "
               "RSS %ld kB; %d rounds of %d clients (%.1f s of faults each), soak %.0f s, "
               "kill loop up to %d (%.0f s)\n",
               (int)D.pid, D.path, base_fds, base_fig.connections, base_fig.registrations, rss0,
               opt_rounds, opt_clients, round_seconds * 0.6, soak_seconds, opt_kill_loop,
               loop_seconds);
        fflush(stdout);

        for (int r = 0; r < opt_rounds; r++)
                run_round(r, round_seconds);
        if (soak_seconds > 0)
                run_soak(soak_seconds);
        if (loop_seconds > 0)
                kill_loop(loop_seconds);

        /* RSS flat across rounds: the last round may not exceed the highest of the rounds
         * before it by more than 16 MiB or 25 % (the fillers alone make the daemon hold 8 MiB
         * each for a moment, and a sanitizer's quarantine keeps freed memory).  The first round
         * counts too: under ASan one round's peak varies by about 20 MiB from one round to the
         * next (CI: about 73, 66, then 84 MiB, with a flat soak after it), so comparing with the
         * second round alone failed on noise; memory that grows with every round still fails. */
        if (T.nrounds >= 3) {
                long warm = 0, last = T.rss_kb[T.nrounds - 1];

                for (int r = 0; r < T.nrounds - 1; r++)
                        warm = SN_MAX(warm, T.rss_kb[r]);
                if (last - warm > SN_MAX(16384, warm / 4))
                        fail(false, "daemon RSS grew across rounds: at most %ld kB after rounds "
                             "1..%d, %ld kB after round %d", warm, T.nrounds - 1, last, T.nrounds);
        }
        current_stage = "the end";
        check_daemon_alive();
        struct figures f = { 0 };
        get_figures(&f);
        int fds_end = daemon_fds();
        sn_conn_close(monitor);

        printf("\n==== sn-stress summary (%.0f s) ====\n", (double)(now_ms() - t_start) / 1000);
        printf("clients started     %ld (rounds, soak processes, kill loop)\n", T.started);
        printf("killed (SIGKILL)    %ld\n", T.killed);
        printf("stopped (SIGSTOP)   %ld\n", T.stopped);
        printf("survivors           %ld, of which passed every check %ld\n", T.survivors,
               T.survivors_ok);
        printf("victims failed before their kill %ld\n", T.setup_failed);
        printf("notifications checked %ld (socket IN and posted packets), bytes checked %ld\n",
               S->notifications, S->bytes);
        printf("shared-port packets %ld posted, %ld went to killed clients, none twice\n",
               T.packets_posted, T.lost_to_killed);
        printf("output-bound disconnects of non-readers %ld\n", S->output_kills);
        printf("daemon fds          before %d, after %d\n", base_fds, fds_end);
        printf("registrations       before %ld, after %ld (connections %ld/%ld, ports %ld/%ld, "
               "waiters %ld/%ld, queued %ld/%ld)\n",
               base_fig.registrations, f.registrations, base_fig.connections, f.connections,
               base_fig.ports, f.ports, base_fig.waiters, f.waiters, base_fig.queued, f.queued);
        printf("RSS per round (kB)  start %ld:", rss0);
        for (int r = 0; r < T.nrounds; r++)
                printf(" %ld", T.rss_kb[r]);
        printf("; end %ld\n", daemon_rss_kb());

        kill(D.pid, SIGTERM);
        while (waitpid(D.pid, &st, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fail(false, "daemon did not exit cleanly on SIGTERM (status %#x)", st);
                print_daemon_log();
        }
        printf("daemon exit         %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "clean (0)" :
                                                                                 "NOT clean");
        printf("failures            %ld%s%s\n", S->failures, S->failures ? ": first: " : "",
               S->failures ? S->first_failure : "");
        unlink(D.log);
        unlink(D.path);
        rmdir(D.dir);
        return S->failures ? 1 : 0;
}

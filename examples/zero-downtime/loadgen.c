/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * loadgen.c - zd-loadgen: keeps N echo connections busy and proves that nothing was lost,
 * duplicated or reordered while the server behind them was replaced, and how long deliveries
 * paused each time.
 *
 * One thread, epoll.  Each connection sends chunks of random size (1..--max-chunk bytes) at
 * random intervals around --interval-ms, and checks every byte it receives against what it
 * sent: the byte at offset k of connection i's stream is a function of (seed_i, k) (GenFill),
 * so the echo is compared byte by byte, incrementally, without keeping a copy of it.  A
 * running FNV-1a 64 checksum and a byte count of both directions are kept per connection.
 *
 * Restart windows come from the script: SIGUSR1 opens one (a restart begins), SIGUSR2 says the
 * new server is ready; the window closes when every connection has received something since
 * SIGUSR2 (or after --settle-timeout seconds, an error).  For each window it records the
 * longest time in which no connection received anything (the delivery pause) and the longest
 * gap between two receptions of any one connection (the worst connection stall).  Gaps outside
 * the windows are the baseline.  It also times each send's echo (the longest a byte took to
 * come back).
 *
 * --slow K: the first K connections have a small receive buffer, read a little at a time and
 * send more than the others, so that the server has output it cannot write yet (partial
 * writes, OUT registrations, a flush at its stop).  They are left out of the timings.
 *
 * SIGTERM or SIGINT (or --duration) stops it: no new chunks; each connection sends what is
 * scheduled, shuts down its sending side and reads until the server closes; then it prints a
 * report as plain text and as one JSON line.  Exit status 0 only when every connection was
 * still open at the stop and drained cleanly, every byte came back exactly once and in order,
 * and no error happened.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IO_SIZE 65536
#define MAX_WINDOWS 4096
#define SIGNAL_TAG UINT32_MAX
#define MAX_BACKLOG (256 * 1024)
#define SLOW_RCVBUF 4096   /* a slow reader's receive buffer */
#define SLOW_BITE 512      /* what it reads at a time, */
#define SLOW_EVERY_MS 10   /* and how often */
#define SLOW_CHUNK_FACTOR 8 /* it sends this much more than the others: the server must wait */

typedef struct lconn {
        int fd;
        uint32_t idx;
        uint64_t seed;
        uint64_t sent;     /* bytes the kernel accepted */
        uint64_t target;   /* bytes scheduled so far */
        uint64_t received; /* bytes received and found equal to what was sent */
        uint64_t fnvSent, fnvReceived;
        int64_t nextDue;   /* ns: when the next chunk is scheduled */
        int64_t lastRx;    /* ns: last reception (or the connect) */
        struct sendmark {  /* sends not yet echoed in full: stream end, time (ns) */
                uint64_t end;
                int64_t when;
        } *marks;
        uint32_t markHead, markCount, markCap; /* a ring */
        int64_t nextRead;  /* ns: a slow reader's next bite */
        bool slow;         /* reads less than it sends, in small bites, until the stop */
        bool wantOut;      /* EPOLLOUT armed */
        bool shutWr, eof, dead, resumed;
} lconn_t;

typedef struct window {
        int64_t t0, t1;          /* SIGUSR1, SIGUSR2 (0: not yet) */
        int64_t pause, connStall; /* ns */
        int64_t delay;           /* ns: the longest a byte took to come back */
        uint32_t unresumed;
        bool closed, timedOut;
} window_t;

static struct {
        const char *connect;
        uint32_t connections, slow;
        double duration, drainTimeout, settleTimeout;
        uint32_t intervalMs, maxChunk;
        uint64_t seed;
} opt = {
        .connections = 200, .drainTimeout = 30, .settleTimeout = 10, .intervalMs = 50,
        .maxChunk = 4096,
};

static lconn_t *g_conns;
static int g_epoll;
static uint64_t g_rng;
static int64_t g_lastRx;
static int64_t g_baselinePause, g_baselineStall, g_baselineDelay;
static window_t g_windows[MAX_WINDOWS];
static uint32_t g_nwindows;
static uint64_t g_errors, g_duplicated, g_corrupt;
static bool g_stopping;

static int64_t Now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t SplitMix(uint64_t x)
{
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
}

static uint64_t Random(void)
{
        g_rng ^= g_rng << 13;
        g_rng ^= g_rng >> 7;
        g_rng ^= g_rng << 17;
        return g_rng;
}

/* The bytes off..off+len of a connection's stream. */
static void GenFill(uint64_t seed, uint64_t off, unsigned char *out, size_t len)
{
        size_t i = 0;

        while (i < len) {
                uint64_t word = SplitMix(seed ^ ((off + i) >> 3) * 0xd1342543de82ef95ull);

                for (unsigned b = (unsigned)((off + i) & 7); b < 8 && i < len; b++)
                        out[i++] = (unsigned char)(word >> (b * 8));
        }
}

static uint64_t Fnv(uint64_t h, const unsigned char *p, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= 0x100000001b3ull;
        }
        return h;
}

static void Error(lconn_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void Error(lconn_t *c, const char *fmt, ...)
{
        va_list ap;

        if (g_errors++ < 20) {
                fprintf(stderr, "zd-loadgen: ");
                if (c)
                        fprintf(stderr, "connection %u: ", c->idx);
                va_start(ap, fmt);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                fputc('\n', stderr);
        }
}

static void Drop(lconn_t *c)
{
        if (c->fd >= 0) {
                epoll_ctl(g_epoll, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
        }
        c->fd = -1;
        c->dead = true;
}

/* The epoll events a connection waits for: a slow reader reads on its own clock until the
 * stop. */
static void Watch(lconn_t *c)
{
        struct epoll_event ev = {
                .events = (c->slow && !g_stopping ? 0 : EPOLLIN) | (c->wantOut ? EPOLLOUT : 0),
                .data.u32 = c->idx,
        };

        if (c->fd >= 0)
                epoll_ctl(g_epoll, EPOLL_CTL_MOD, c->fd, &ev);
}

static void WantOut(lconn_t *c, bool on)
{
        if (c->wantOut == on || c->fd < 0)
                return;
        c->wantOut = on;
        Watch(c);
}

/* A connection that will receive nothing more leaves the open window's count. */
static void Resumed(lconn_t *c)
{
        window_t *w = g_nwindows ? &g_windows[g_nwindows - 1] : NULL;

        if (c->resumed)
                return;
        c->resumed = true;
        if (w && !w->closed && w->t1 && w->unresumed && --w->unresumed == 0)
                w->closed = true;
}

/* Remembers when the stream up to end was sent, to time its echo. */
static void Mark(lconn_t *c, uint64_t end, int64_t when)
{
        if (c->markCount == c->markCap) {
                uint32_t cap = c->markCap ? c->markCap * 2 : 64;
                struct sendmark *m = malloc(cap * sizeof(*m));

                if (!m) {
                        Error(c, "out of memory");
                        return;
                }
                for (uint32_t i = 0; i < c->markCount; i++)
                        m[i] = c->marks[(c->markHead + i) % c->markCap];
                free(c->marks);
                c->marks = m;
                c->markHead = 0;
                c->markCap = cap;
        }
        c->marks[(c->markHead + c->markCount) % c->markCap] = (struct sendmark){ end, when };
        c->markCount++;
}

/* The longest a byte sent took to come back, among the sends now echoed in full. */
static int64_t Echoed(lconn_t *c, int64_t now)
{
        int64_t delay = 0;

        while (c->markCount && c->marks[c->markHead].end <= c->received) {
                if (now - c->marks[c->markHead].when > delay)
                        delay = now - c->marks[c->markHead].when;
                c->markHead = (c->markHead + 1) % c->markCap;
                c->markCount--;
        }
        return delay;
}

/* Sends what is scheduled, as far as the kernel takes it. */
static void SendSome(lconn_t *c)
{
        unsigned char buf[IO_SIZE];

        while (!c->dead && c->sent < c->target) {
                size_t n = c->target - c->sent > IO_SIZE ? IO_SIZE : (size_t)(c->target - c->sent);
                ssize_t w;

                GenFill(c->seed, c->sent, buf, n);
                w = send(c->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        WantOut(c, true);
                        return;
                }
                if (w <= 0) {
                        Error(c, "send: %s", strerror(errno));
                        Drop(c);
                        return;
                }
                c->fnvSent = Fnv(c->fnvSent, buf, (size_t)w);
                c->sent += (uint64_t)w;
                Mark(c, c->sent, Now());
        }
        WantOut(c, false);
        if (g_stopping && !c->dead && !c->shutWr && c->sent == c->target) {
                if (shutdown(c->fd, SHUT_WR) != 0) {
                        Error(c, "shutdown: %s", strerror(errno));
                        Drop(c);
                        return;
                }
                c->shutWr = true;
        }
}

static void Received(lconn_t *c, int64_t now)
{
        window_t *w = g_nwindows ? &g_windows[g_nwindows - 1] : NULL;
        int64_t gap = now - c->lastRx, pause = now - g_lastRx;

        if (c->slow) {
                /* Its gaps are its own slowness, not the server's. */
                if (w && !w->closed && w->t1)
                        Resumed(c);
                return;
        }
        c->lastRx = now;
        g_lastRx = now;
        if (w && !w->closed) {
                if (pause > w->pause)
                        w->pause = pause;
                if (gap > w->connStall)
                        w->connStall = gap;
                if (w->t1)
                        Resumed(c);
        } else {
                if (pause > g_baselinePause)
                        g_baselinePause = pause;
                if (gap > g_baselineStall)
                        g_baselineStall = gap;
        }
}

static void Delayed(int64_t delay)
{
        window_t *w = g_nwindows ? &g_windows[g_nwindows - 1] : NULL;

        if (w && !w->closed) {
                if (delay > w->delay)
                        w->delay = delay;
        } else if (delay > g_baselineDelay) {
                g_baselineDelay = delay;
        }
}

/* Reads everything there is (at most limit bytes, 0: no limit) and checks it against the
 * stream sent. */
static void ReadSome(lconn_t *c, size_t limit)
{
        unsigned char buf[IO_SIZE], want[IO_SIZE];
        size_t total = 0;

        while (!c->dead && !c->eof && (!limit || total < limit)) {
                size_t ask = limit && limit - total < sizeof(buf) ? limit - total : sizeof(buf);
                ssize_t r = recv(c->fd, buf, ask, MSG_DONTWAIT);
                size_t n;

                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (r < 0) {
                        Error(c, "recv: %s", strerror(errno));
                        Drop(c);
                        return;
                }
                if (r == 0) {
                        c->eof = true;
                        Resumed(c);
                        if (!c->shutWr)
                                Error(c, "closed by the server while sending");
                        else if (c->received != c->sent)
                                Error(c, "closed by the server with %" PRIu64 " bytes missing",
                                      c->sent - c->received);
                        Drop(c);
                        c->dead = !c->shutWr || c->received != c->sent;
                        return;
                }
                n = (size_t)r;
                total += n;
                Received(c, Now());
                if (c->received + n > c->sent) {
                        /* More than was sent: something was echoed twice. */
                        g_duplicated += c->received + n - c->sent;
                        Error(c, "%" PRIu64 " bytes received beyond the %" PRIu64 " sent",
                              c->received + n - c->sent, c->sent);
                        n = (size_t)(c->sent - c->received);
                }
                GenFill(c->seed, c->received, want, n);
                if (memcmp(buf, want, n) != 0) {
                        size_t i = 0;

                        while (buf[i] == want[i])
                                i++;
                        g_corrupt++;
                        Error(c, "the echo differs from what was sent at byte %" PRIu64,
                              c->received + i);
                        c->received += i;
                        Drop(c);
                        return;
                }
                c->fnvReceived = Fnv(c->fnvReceived, buf, n);
                c->received += n;
                if (c->slow)
                        Echoed(c, Now());
                else
                        Delayed(Echoed(c, Now()));
                if (n < (size_t)r) {
                        Drop(c);
                        return;
                }
        }
}

static int ConnectAll(int64_t now)
{
        char host[256], *colon;
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
        int yes = 1;

        snprintf(host, sizeof(host), "%s", opt.connect);
        colon = strrchr(host, ':');
        if (!colon) {
                fprintf(stderr, "zd-loadgen: --connect wants HOST:PORT\n");
                return -1;
        }
        *colon = '\0';
        if (host[0] == '[' && colon[-1] == ']') {
                colon[-1] = '\0';
                memmove(host, host + 1, strlen(host));
        }
        if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
                fprintf(stderr, "zd-loadgen: cannot resolve %s\n", opt.connect);
                return -1;
        }
        for (uint32_t i = 0; i < opt.connections; i++) {
                lconn_t *c = &g_conns[i];
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

                c->idx = i;
                c->seed = SplitMix(opt.seed + i);
                c->fnvSent = c->fnvReceived = 0xcbf29ce484222325ull;
                c->slow = i < opt.slow;
                c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
                if (c->slow && c->fd >= 0) {
                        int size = SLOW_RCVBUF;

                        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
                        ev.events = 0;
                }
                if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
                        fprintf(stderr, "zd-loadgen: connection %u: connect: %s\n", i,
                                strerror(errno));
                        freeaddrinfo(ai);
                        return -1;
                }
                setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
                epoll_ctl(g_epoll, EPOLL_CTL_ADD, c->fd, &ev);
                c->lastRx = now;
                c->nextDue = now + (int64_t)(Random() % (opt.intervalMs + 1)) * 1000000;
        }
        freeaddrinfo(ai);
        g_lastRx = now;
        return 0;
}

/* SIGUSR1: a restart begins; SIGUSR2: it is done (the new server is ready). */
static void OnSignal(int sig, int64_t now)
{
        window_t *w = g_nwindows ? &g_windows[g_nwindows - 1] : NULL;

        if (sig == SIGUSR1) {
                if (w && !w->closed) {
                        w->closed = true; /* a new restart before this one settled */
                        w->timedOut = true;
                        Error(NULL, "restart %u had not settled when the next began", g_nwindows);
                }
                if (g_nwindows == MAX_WINDOWS) {
                        Error(NULL, "too many restarts");
                        return;
                }
                w = &g_windows[g_nwindows++];
                memset(w, 0, sizeof(*w));
                w->t0 = now;
                /* The pause that is going on counts from its start. */
                w->pause = now - g_lastRx;
        } else if (sig == SIGUSR2) {
                if (!w || w->closed || w->t1) {
                        Error(NULL, "SIGUSR2 without a restart going on");
                        return;
                }
                w->t1 = now;
                for (uint32_t i = 0; i < opt.connections; i++) {
                        lconn_t *c = &g_conns[i];

                        c->resumed = c->dead || c->eof;
                        if (!c->resumed)
                                w->unresumed++;
                }
                if (!w->unresumed)
                        w->closed = true;
        } else {
                g_stopping = true;
        }
}

static int CompareI64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of v[0..n) (sorted here), in ms. */
static double Percentile(int64_t *v, uint32_t n, double p)
{
        uint32_t rank;

        if (!n)
                return 0;
        qsort(v, n, sizeof(*v), CompareI64);
        rank = (uint32_t)(p / 100.0 * n + 0.999999);
        if (rank < 1)
                rank = 1;
        if (rank > n)
                rank = n;
        return (double)v[rank - 1] / 1e6;
}

static void Usage(FILE *f)
{
        fprintf(f, "Usage: zd-loadgen --connect HOST:PORT [--connections N] [--slow K]\n"
                   "       [--duration SEC]\n"
                   "       [--interval-ms MS] [--max-chunk BYTES] [--seed N]\n"
                   "       [--drain-timeout SEC] [--settle-timeout SEC]\n"
                   "SIGUSR1: a restart begins; SIGUSR2: it is done; SIGTERM/SIGINT: drain, "
                   "report, exit.\n");
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "connect", required_argument, NULL, 'c' },
                { "connections", required_argument, NULL, 'n' },
                { "slow", required_argument, NULL, 'w' },
                { "duration", required_argument, NULL, 'd' },
                { "interval-ms", required_argument, NULL, 'i' },
                { "max-chunk", required_argument, NULL, 'm' },
                { "seed", required_argument, NULL, 's' },
                { "drain-timeout", required_argument, NULL, 'D' },
                { "settle-timeout", required_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct epoll_event evs[256];
        sigset_t set;
        int sfd, o;
        int64_t start, stopAt = 0, drainEnd = 0, now;
        uint64_t sent = 0, received = 0, lost = 0, fnvSent = 0xcbf29ce484222325ull,
                 fnvReceived = 0xcbf29ce484222325ull;
        uint32_t openAtStop = 0, clean = 0, settled = 0;
        int64_t pauses[MAX_WINDOWS], stalls[MAX_WINDOWS], delays[MAX_WINDOWS], maxPause = 0,
                maxStall = 0, maxDelay = 0;
        bool ok;

        opt.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (o) {
                case 'c': opt.connect = optarg; break;
                case 'n': opt.connections = (uint32_t)strtoul(optarg, NULL, 10); break;
                case 'w': opt.slow = (uint32_t)strtoul(optarg, NULL, 10); break;
                case 'd': opt.duration = strtod(optarg, NULL); break;
                case 'i': opt.intervalMs = (uint32_t)strtoul(optarg, NULL, 10); break;
                case 'm': opt.maxChunk = (uint32_t)strtoul(optarg, NULL, 10); break;
                case 's': opt.seed = strtoull(optarg, NULL, 0); break;
                case 'D': opt.drainTimeout = strtod(optarg, NULL); break;
                case 'S': opt.settleTimeout = strtod(optarg, NULL); break;
                case 'h': Usage(stdout); return 0;
                default: Usage(stderr); return 2;
                }
        }
        if (!opt.connect || opt.connections == 0 || opt.maxChunk == 0 ||
            opt.slow > opt.connections || optind != argc) {
                Usage(stderr);
                return 2;
        }
        g_rng = SplitMix(opt.seed) | 1;

        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigaddset(&set, SIGUSR2);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        g_epoll = epoll_create1(EPOLL_CLOEXEC);
        g_conns = calloc(opt.connections, sizeof(*g_conns));
        if (sfd < 0 || g_epoll < 0 || !g_conns) {
                perror("zd-loadgen");
                return 1;
        }
        {
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = SIGNAL_TAG };

                epoll_ctl(g_epoll, EPOLL_CTL_ADD, sfd, &ev);
        }
        start = Now();
        if (ConnectAll(start) < 0)
                return 1;
        if (opt.duration > 0)
                stopAt = start + (int64_t)(opt.duration * 1e9);
        printf("connected %u\n", opt.connections);
        fflush(stdout);

        for (;;) {
                int64_t next;
                int n, timeoutMs;
                uint32_t busy = 0;
                window_t *w;

                now = Now();
                next = now + 100000000; /* look around at least every 100 ms */
                if (!g_stopping) {
                        for (uint32_t i = 0; i < opt.connections; i++) {
                                lconn_t *c = &g_conns[i];

                                if (!c->dead && c->nextDue < next)
                                        next = c->nextDue;
                                if (!c->dead && c->slow && c->nextRead < next)
                                        next = c->nextRead;
                        }
                }
                timeoutMs = next > now ? (int)((next - now + 999999) / 1000000) : 0;
                n = epoll_wait(g_epoll, evs, 256, timeoutMs);
                if (n < 0 && errno != EINTR) {
                        perror("zd-loadgen: epoll_wait");
                        return 1;
                }
                now = Now();
                for (int k = 0; k < n; k++) {
                        lconn_t *c;

                        if (evs[k].data.u32 == SIGNAL_TAG) {
                                struct signalfd_siginfo si;

                                while (read(sfd, &si, sizeof(si)) == sizeof(si))
                                        OnSignal((int)si.ssi_signo, now);
                                continue;
                        }
                        c = &g_conns[evs[k].data.u32];
                        if (evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                                ReadSome(c, 0);
                        if (!c->dead && (evs[k].events & EPOLLOUT))
                                SendSome(c);
                }
                if (stopAt && now >= stopAt)
                        g_stopping = true;
                if (g_stopping && !drainEnd) {
                        drainEnd = now + (int64_t)(opt.drainTimeout * 1e9);
                        for (uint32_t i = 0; i < opt.connections; i++) {
                                openAtStop += !g_conns[i].dead;
                                if (g_conns[i].slow) {
                                        Watch(&g_conns[i]); /* read at full speed now */
                                        ReadSome(&g_conns[i], 0);
                                }
                        }
                }
                for (uint32_t i = 0; i < opt.connections; i++) {
                        lconn_t *c = &g_conns[i];

                        if (c->dead)
                                continue;
                        if (c->slow && !g_stopping && c->nextRead <= now) {
                                ReadSome(c, SLOW_BITE);
                                c->nextRead = now + SLOW_EVERY_MS * 1000000;
                                if (c->dead)
                                        continue;
                        }
                        if (!g_stopping && c->nextDue <= now) {
                                uint32_t spread = opt.intervalMs + 1;

                                /* A connection the server does not read from piles up no more
                                 * than MAX_BACKLOG to send. */
                                if (c->target - c->sent < MAX_BACKLOG)
                                        c->target += 1 + Random() % ((uint64_t)opt.maxChunk *
                                                                     (c->slow ? SLOW_CHUNK_FACTOR
                                                                              : 1));
                                c->nextDue = now + (int64_t)(opt.intervalMs / 2 +
                                                             Random() % spread) * 1000000;
                        }
                        if (!c->wantOut && (c->sent < c->target || (g_stopping && !c->shutWr)))
                                SendSome(c);
                        busy += !c->dead && !c->eof;
                }
                w = g_nwindows ? &g_windows[g_nwindows - 1] : NULL;
                if (w && !w->closed && w->t1 && now - w->t1 > (int64_t)(opt.settleTimeout * 1e9)) {
                        w->closed = true;
                        w->timedOut = true;
                        Error(NULL, "restart %u: %u connections received nothing in %.0f s after "
                              "the server was ready", g_nwindows, w->unresumed,
                              opt.settleTimeout);
                }
                if (g_stopping && busy == 0)
                        break;
                if (drainEnd && now > drainEnd) {
                        Error(NULL, "%u connections not drained in %.0f s", busy,
                              opt.drainTimeout);
                        break;
                }
        }

        for (uint32_t i = 0; i < opt.connections; i++) {
                lconn_t *c = &g_conns[i];

                sent += c->sent;
                received += c->received;
                if (c->sent > c->received)
                        lost += c->sent - c->received;
                clean += c->eof && !c->dead;
                if (!(c->eof && !c->dead) && c->fd >= 0)
                        Drop(c);
                fnvSent = Fnv(fnvSent, (const unsigned char *)&c->fnvSent, sizeof(c->fnvSent));
                fnvReceived = Fnv(fnvReceived, (const unsigned char *)&c->fnvReceived,
                                  sizeof(c->fnvReceived));
        }
        for (uint32_t k = 0; k < g_nwindows; k++) {
                pauses[k] = g_windows[k].pause;
                stalls[k] = g_windows[k].connStall;
                delays[k] = g_windows[k].delay;
                if (delays[k] > maxDelay)
                        maxDelay = delays[k];
                settled += g_windows[k].closed && !g_windows[k].timedOut;
                if (pauses[k] > maxPause)
                        maxPause = pauses[k];
                if (stalls[k] > maxStall)
                        maxStall = stalls[k];
        }
        if (openAtStop != opt.connections)
                Error(NULL, "%u of %u connections were lost before the stop",
                      opt.connections - openAtStop, opt.connections);
        ok = g_errors == 0 && lost == 0 && g_duplicated == 0 && g_corrupt == 0 &&
             openAtStop == opt.connections && clean == opt.connections;

        printf("zd-loadgen: connections: %u opened, %u open at the stop, %u drained cleanly\n",
               opt.connections, openAtStop, clean);
        printf("zd-loadgen: bytes: %" PRIu64 " sent, %" PRIu64 " received, %" PRIu64
               " lost, %" PRIu64 " duplicated, %" PRIu64 " streams corrupt\n",
               sent, received, lost, g_duplicated, g_corrupt);
        printf("zd-loadgen: checksums (FNV-1a 64 of the per-connection FNV-1a 64): sent %016"
               PRIx64 ", received %016" PRIx64 "%s\n", fnvSent, fnvReceived,
               fnvSent == fnvReceived ? " (equal)" : " (DIFFERENT)");
        printf("zd-loadgen: restarts: %u (%u settled)\n", g_nwindows, settled);
        printf("zd-loadgen: delivery pause per restart (no connection received anything): "
               "p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
               Percentile(pauses, g_nwindows, 50), Percentile(pauses, g_nwindows, 99),
               (double)maxPause / 1e6);
        printf("zd-loadgen: worst connection stall per restart: p50 %.1f ms, p99 %.1f ms, "
               "max %.1f ms\n",
               Percentile(stalls, g_nwindows, 50), Percentile(stalls, g_nwindows, 99),
               (double)maxStall / 1e6);
        printf("zd-loadgen: longest echo delay of a byte per restart: p50 %.1f ms, p99 %.1f ms, "
               "max %.1f ms\n",
               Percentile(delays, g_nwindows, 50), Percentile(delays, g_nwindows, 99),
               (double)maxDelay / 1e6);
        printf("zd-loadgen: outside restarts: longest pause %.1f ms, longest connection stall "
               "%.1f ms (chunks every ~%u ms per connection), longest echo delay %.1f ms\n",
               (double)g_baselinePause / 1e6, (double)g_baselineStall / 1e6, opt.intervalMs,
               (double)g_baselineDelay / 1e6);
        printf("zd-loadgen: errors: %" PRIu64 " => %s\n", g_errors, ok ? "OK" : "FAILED");
        printf("{\"connections\":%u,\"open_at_stop\":%u,\"drained\":%u,\"errors\":%" PRIu64
               ",\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64 ",\"bytes_lost\":%"
               PRIu64 ",\"bytes_duplicated\":%" PRIu64 ",\"streams_corrupt\":%" PRIu64
               ",\"checksum_sent\":\"%016" PRIx64 "\",\"checksum_received\":\"%016" PRIx64
               "\",\"restarts\":%u,\"restarts_settled\":%u,"
               "\"pause_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
               "\"connection_stall_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
               "\"echo_delay_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
               "\"baseline_pause_ms\":%.3f,\"baseline_connection_stall_ms\":%.3f,"
               "\"baseline_echo_delay_ms\":%.3f,\"interval_ms\":%u,\"ok\":%s}\n",
               opt.connections, openAtStop, clean, g_errors, sent, received, lost,
               g_duplicated, g_corrupt, fnvSent, fnvReceived, g_nwindows, settled,
               Percentile(pauses, g_nwindows, 50), Percentile(pauses, g_nwindows, 99),
               (double)maxPause / 1e6, Percentile(stalls, g_nwindows, 50),
               Percentile(stalls, g_nwindows, 99), (double)maxStall / 1e6,
               Percentile(delays, g_nwindows, 50), Percentile(delays, g_nwindows, 99),
               (double)maxDelay / 1e6, (double)g_baselinePause / 1e6,
               (double)g_baselineStall / 1e6, (double)g_baselineDelay / 1e6, opt.intervalMs,
               ok ? "true" : "false");
        for (uint32_t i = 0; i < opt.connections; i++) {
                if (g_conns[i].fd >= 0)
                        close(g_conns[i].fd);
                free(g_conns[i].marks);
        }
        free(g_conns);
        close(g_epoll);
        close(sfd);
        return ok ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * sd-traffic.c - a busy client for the live restart tests (tests/systemd/test-restart-traffic.sh): it
 * keeps real traffic flowing through registrations of every kind while socknotifyd is
 * restarted, killed or hung, and proves afterwards that no notification was lost.
 *
 *   sd-traffic [-i MS] [-t SECONDS] FILE
 *
 * It connects with sn_conn_open(NULL), creates one port served by NDEQ dequeuing threads and
 * sets up, in this process, the pairs of sockets below.  For each a writer thread sends
 * numbered chunks (an 8-byte header: sequence number and length, then 1..MAX_CHUNK bytes) every
 * -i MS (default 10), keeping a running FNV-1a hash of every byte it sent; the receiving end is
 * read ONLY when a notification says so, until EAGAIN, with the hash kept on that side too:
 *
 *   tcp-oneshot   TCP on 127.0.0.1, receiver LEVEL|ONESHOT IN, re-armed after each drain
 *                 (the multi-threaded server pattern of the Windows samples);
 *   tcp-level     TCP, receiver LEVEL (persistent) IN;
 *   tcp-edge      TCP, both ends EDGE IN|OUT: the receiver reads on IN; the writer is
 *                 non-blocking with a small send buffer, writes bursts until EAGAIN and then
 *                 waits for its own OUT edge before writing again;
 *   udp           a connected UDP pair, receiver EDGE IN; one chunk per datagram, at most
 *                 UDP_WINDOW datagrams in flight (loopback UDP drops what does not fit in the
 *                 receive buffer, and that must not pass for a lost notification);
 *   unix          a Unix stream socketpair, receiver LEVEL|ONESHOT IN, re-armed after each drain.
 *
 * Besides: the TCP listener is registered LEVEL|ONESHOT IN and accepts on its notifications
 * (the three TCP pairs come through it, then a churn thread connects every CHURN_MS); a poster
 * thread posts a packet every POST_MS whose key, byte count and overlapped value carry its
 * sequence number.
 *
 * Why this detects a lost notification: data is only ever read because a notification came.
 * A lost IN on a ONESHOT registration leaves it disarmed for good, a lost IN at the end of an
 * EDGE or LEVEL stream leaves the last bytes unread, a lost OUT edge leaves the edge writer
 * waiting, a lost listener notification leaves connections unaccepted, a lost posted packet is
 * missing from the sequence: at the end, sent and received no longer match.
 *
 * Run: prints "ready: ..." once traffic flows, then "pause: ..." for every gap of
 * PAUSE_REPORT_MS or more between two consecutive deliveries (the restart's pause, with its
 * start and end in CLOCK_REALTIME seconds, which the test compares with the time of its
 * kill), and "stall: ..." when a stream has had bytes unread with no progress for STALL_MS
 * (a hint of which event lost a notification; the check at the end decides).  When FILE
 * exists it keeps the traffic going AFTER_FILE_MS more, stops the writers,
 * the poster and the churn, waits (at most DRAIN_MS) until everything sent has been received,
 * then prints one line per stream, the posted packets, the accepts, the longest pause, its own
 * descriptor count at the start of traffic and at the end (entries of /proc/self/fd), and
 *
 *   traffic: streams=N bytes=B posted=P spurious=S lost=L errors=E
 *
 * spurious counts IN notifications that found nothing to read (a LEVEL registration reported
 * again before the reader drained, or a duplicate after a restart: allowed, at least once).
 * lost counts what never arrived; errors counts calls that failed and anything received that
 * was not sent (a chunk out of sequence, a hash mismatch, a posted packet altered or dequeued
 * twice: posted packets are delivered exactly once).
 *
 * Exit status: 0 when lost=0 and errors=0; 3 otherwise, after a "failed: CALL -> ERRNO (text)"
 * line for the first failing call (the client then stops at once: a restart that resets its
 * connection ends it with the error the caller saw) and a "lost: ..." line per loss; 4 when
 * FILE did not appear within -t SECONDS (default 600); 2 for bad usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <socknotify.h>

#define NDEQ 3                /* dequeuing threads on the port */
#define DEQ_TIMEOUT_MS 500u   /* each dequeue's wait; a timeout is normal and loops */
#define MAX_ENTRIES 8         /* entries per dequeue */
#define MAX_CHUNK 4096u       /* payload bytes of one chunk, at most */
#define HDR 8u                /* chunk header: sequence number, length (host order) */
#define UDP_WINDOW 32         /* datagrams sent but not yet read, at most */
#define EDGE_BURST_EVERY 25   /* the edge writer bursts until EAGAIN every that many chunks */
#define EDGE_BURST_MAX (4u << 20)
#define POST_MS 20
#define CHURN_MS 250
#define PAUSE_REPORT_MS 50.0
#define STALL_MS 4000
#define AFTER_FILE_MS 1500
#define DRAIN_MS 10000
#define SETUP_MS 10000
#define MAX_POSTS (1u << 20)
#define POST_MAGIC 0x5eed5eed00000000ull

/* Completion keys: the top byte says what the entry is for, the rest is an index. */
#define KEY_RECV (1ull << 56)   /* | stream index: its receiving end */
#define KEY_SEND (2ull << 56)   /* | stream index: the edge stream's sending end (OUT) */
#define KEY_LISTEN (3ull << 56) /* the TCP listener */
#define KEY_POSTED (0x80ull << 56) /* | sequence number: a posted packet */
#define KEY_TAG(k) ((k) >> 56)
#define KEY_INDEX(k) ((k) & ((1ull << 56) - 1))

enum { TCP_ONESHOT, TCP_LEVEL, TCP_EDGE, UDP, UNIX_ONESHOT, NSTREAMS };
#define NTCP 3 /* the first three streams are TCP pairs from the listener */

struct stream {
        const char *name;
        const char *how; /* its registration, for the report */
        uint8_t trigger;
        uint16_t filter;
        bool datagram;
        bool edge_writer; /* the writer is non-blocking and waits for OUT edges */
        int wfd, rfd;
        pthread_t writer;
        bool writer_started;

        /* Writer side: the counters are read by other threads, the hash after the join. */
        _Atomic uint64_t sent_bytes, sent_chunks;
        uint64_t sent_hash;
        atomic_bool writer_done;
        /* OUT edges of the sending end (edge stream): out_gen counts them. */
        pthread_mutex_t out_lock;
        pthread_cond_t out_cond;
        uint64_t out_gen;
        _Atomic uint64_t out_waits;
        _Atomic double out_wait_since; /* monotonic ms, 0 when not waiting */

        /* Receiver side, under rd_lock (several dequeuing threads may be told to read). */
        pthread_mutex_t rd_lock;
        _Atomic uint64_t recv_bytes, recv_chunks;
        uint64_t recv_hash;
        uint32_t next_seq;
        uint8_t hdr[HDR];
        uint32_t hdr_have, body_left;
        _Atomic uint64_t notes, spurious;
};

static struct stream streams[NSTREAMS] = {
        [TCP_ONESHOT] = { .name = "tcp-oneshot", .how = "LEVEL|ONESHOT IN, re-armed",
                          .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT,
                          .filter = SN_REGISTER_EVENT_IN },
        [TCP_LEVEL] = { .name = "tcp-level", .how = "LEVEL|PERSISTENT IN",
                        .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_PERSISTENT,
                        .filter = SN_REGISTER_EVENT_IN },
        [TCP_EDGE] = { .name = "tcp-edge", .how = "EDGE IN|OUT, both ends",
                       .trigger = SN_TRIGGER_EDGE,
                       .filter = SN_REGISTER_EVENT_IN | SN_REGISTER_EVENT_OUT,
                       .edge_writer = true },
        [UDP] = { .name = "udp", .how = "EDGE IN", .trigger = SN_TRIGGER_EDGE,
                  .filter = SN_REGISTER_EVENT_IN, .datagram = true },
        [UNIX_ONESHOT] = { .name = "unix", .how = "LEVEL|ONESHOT IN, re-armed",
                           .trigger = SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT,
                           .filter = SN_REGISTER_EVENT_IN },
};

static sn_conn_t *conn;
static sn_port_t *port;
static int interval_ms = 10;

static atomic_bool stop;     /* writers, poster and churn stop */
static atomic_bool dq_stop;  /* dequeuers stop */
static atomic_bool failed;   /* a call failed: everything stops, the report follows */
static _Atomic uint64_t errors;

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_failure[256];

/* The listener, its accepts and the churn connections. */
static int lfd = -1;
static struct sockaddr_in laddr;
static pthread_mutex_t accept_lock = PTHREAD_MUTEX_INITIALIZER;
static int accepted_fds[NTCP];
static _Atomic uint64_t accepts, connects, listen_notes;

/* Posted packets: how many were posted, and how often each was dequeued. */
static _Atomic uint64_t posted;
static _Atomic uint8_t *post_seen;
static _Atomic uint64_t post_dups;

/* Deliveries: the gap between consecutive ones, measured while traffic_on. */
static pthread_mutex_t gap_lock = PTHREAD_MUTEX_INITIALIZER;
static bool traffic_on;
static double last_mono, last_real, max_gap, max_gap_end;
static uint64_t deliveries;

static double mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double real_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static const char *errname(int err)
{
        const char *n = strerrorname_np(err < 0 ? -err : err);

        return n ? n : "?";
}

/* Records a failed call (err: negative errno) and makes every thread stop; the first one is
 * reported. */
static void fail_call(const char *call, int err)
{
        pthread_mutex_lock(&report_lock);
        if (!first_failure[0])
                snprintf(first_failure, sizeof(first_failure), "%s -> %s (%s)", call,
                         errname(err), strncmp(call, "sn_", 3) ? strerror(-err) : sn_strerror(err));
        pthread_mutex_unlock(&report_lock);
        atomic_fetch_add(&errors, 1);
        atomic_store(&failed, true);
}

/* Records something received that was never sent (a protocol violation, not a failed call);
 * stops everything like a failed call. */
static void fail_data(const char *fmt, ...)
{
        va_list ap;

        pthread_mutex_lock(&report_lock);
        if (!first_failure[0]) {
                va_start(ap, fmt);
                vsnprintf(first_failure, sizeof(first_failure), fmt, ap);
                va_end(ap);
        }
        pthread_mutex_unlock(&report_lock);
        atomic_fetch_add(&errors, 1);
        atomic_store(&failed, true);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
        for (size_t i = 0; i < n; i++)
                h = (h ^ p[i]) * 0x100000001b3ull;
        return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

static uint32_t rnd(uint32_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

/* The descriptors this process has open (the directory's own excluded). */
static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        int n = 0;

        if (!d)
                return -1;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
                        n++;
        closedir(d);
        return n;
}

/* One delivery (a dequeue that returned entries): the longest gap, and a "pause:" line for a
 * long one. */
static void note_delivery(void)
{
        double m = mono_ms(), r = real_s();

        pthread_mutex_lock(&gap_lock);
        if (traffic_on && deliveries > 0) {
                double gap = m - last_mono;

                if (gap > max_gap) {
                        max_gap = gap;
                        max_gap_end = r;
                }
                if (gap >= PAUSE_REPORT_MS)
                        printf("pause: %.1f ms from %.6f to %.6f\n", gap, last_real, r);
        }
        deliveries++;
        last_mono = m;
        last_real = r;
        pthread_mutex_unlock(&gap_lock);
}

/* ---- registrations -------------------------------------------------------------------- */

static int enable(int fd, uint64_t key, uint8_t trigger, uint16_t filter, const char *what)
{
        sn_registration_t reg = { .fd = fd, .key = key, .op = SN_OP_ENABLE, .filter = filter,
                                  .trigger = trigger };
        int r = sn_port_process(port, &reg, 1, NULL, 0, 0);

        if (r < 0 || reg.result < 0) {
                char call[96];

                snprintf(call, sizeof(call), "sn_port_process(ENABLE %s)", what);
                fail_call(call, r < 0 ? r : reg.result);
                return -1;
        }
        return 0;
}

/* ---- receiving ------------------------------------------------------------------------ */

/* Takes n bytes read from a stream's receiving end: hashes them and checks the chunk
 * sequence.  Under rd_lock. */
static void consume(struct stream *st, const uint8_t *p, size_t n)
{
        st->recv_hash = fnv(st->recv_hash, p, n);
        atomic_fetch_add(&st->recv_bytes, n);
        while (n > 0) {
                if (st->body_left > 0) {
                        uint32_t take = n < st->body_left ? (uint32_t)n : st->body_left;

                        st->body_left -= take;
                        p += take;
                        n -= take;
                        if (st->body_left == 0)
                                atomic_fetch_add(&st->recv_chunks, 1);
                        continue;
                }
                while (n > 0 && st->hdr_have < HDR) {
                        st->hdr[st->hdr_have++] = *p++;
                        n--;
                }
                if (st->hdr_have < HDR)
                        return;
                uint32_t seq, len;

                memcpy(&seq, st->hdr, 4);
                memcpy(&len, st->hdr + 4, 4);
                st->hdr_have = 0;
                if (seq != st->next_seq || len == 0 || len > MAX_CHUNK) {
                        fail_data("stream %s: chunk %u of %u bytes where chunk %u was due",
                                  st->name, seq, len, st->next_seq);
                        return;
                }
                st->next_seq++;
                st->body_left = len;
        }
}

/* An IN notification for a stream: reads until EAGAIN, then re-arms a ONESHOT registration
 * (LEVEL: what arrived since the last read is reported at once). */
static void on_in(struct stream *st)
{
        uint8_t buf[HDR + MAX_CHUNK];
        uint64_t got = 0;

        atomic_fetch_add(&st->notes, 1);
        pthread_mutex_lock(&st->rd_lock);
        for (;;) {
                ssize_t n = recv(st->rfd, buf, sizeof(buf), 0);

                if (n > 0) {
                        if (st->datagram && (size_t)n < HDR) {
                                fail_data("stream %s: a datagram of %zd bytes", st->name, n);
                                break;
                        }
                        consume(st, buf, (size_t)n);
                        got += (uint64_t)n;
                        if (st->datagram && st->body_left != 0) {
                                fail_data("stream %s: a datagram shorter than its chunk",
                                          st->name);
                                break;
                        }
                        continue;
                }
                if (n == 0) {
                        fail_data("stream %s: end of stream while the writer runs", st->name);
                        break;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        fail_call("recv", -errno);
                break;
        }
        if (got == 0)
                atomic_fetch_add(&st->spurious, 1);
        pthread_mutex_unlock(&st->rd_lock);
        if (st->trigger & SN_TRIGGER_ONESHOT)
                enable(st->rfd, KEY_RECV | (uint64_t)(st - streams), st->trigger, st->filter,
                       st->name);
}

/* An OUT edge of the edge stream's sending end: wakes its writer if it waits. */
static void on_out(struct stream *st)
{
        pthread_mutex_lock(&st->out_lock);
        st->out_gen++;
        pthread_cond_broadcast(&st->out_cond);
        pthread_mutex_unlock(&st->out_lock);
}

/* The listener's notification: accepts until EAGAIN (the first NTCP connections become the
 * TCP streams' receiving ends, later ones are the churn's and are closed), then re-arms. */
static void on_listen(void)
{
        atomic_fetch_add(&listen_notes, 1);
        pthread_mutex_lock(&accept_lock);
        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN)
                                fail_call("accept4", -errno);
                        break;
                }
                uint64_t n = atomic_fetch_add(&accepts, 1);

                if (n < NTCP)
                        accepted_fds[n] = fd;
                else
                        close(fd);
        }
        pthread_mutex_unlock(&accept_lock);
        enable(lfd, KEY_LISTEN, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, SN_REGISTER_EVENT_IN,
               "listener");
}

static void on_posted(const sn_entry_t *e)
{
        uint64_t seq = KEY_INDEX(e->key);

        if (e->kind != SN_ENTRY_POSTED || seq >= atomic_load(&posted) ||
            e->events != (uint32_t)(seq * 2654435761u) || e->overlapped != (seq ^ POST_MAGIC)) {
                fail_data("posted packet %llu came back altered (kind %u, bytes %u)",
                          (unsigned long long)seq, e->kind, e->events);
                return;
        }
        if (atomic_fetch_add(&post_seen[seq], 1) != 0) {
                atomic_fetch_add(&post_dups, 1);
                fail_data("posted packet %llu dequeued twice", (unsigned long long)seq);
        }
}

static void dispatch(const sn_entry_t *e)
{
        uint64_t tag = KEY_TAG(e->key), i = KEY_INDEX(e->key);

        if (tag == KEY_TAG(KEY_POSTED)) {
                on_posted(e);
                return;
        }
        if (e->kind != SN_ENTRY_SOCKET ||
            e->events & (SN_EVENT_ERR | SN_EVENT_HANGUP | SN_EVENT_REMOVE)) {
                fail_data("unexpected entry: key %#llx, kind %u, events %#x",
                          (unsigned long long)e->key, e->kind, e->events);
                return;
        }
        if (tag == KEY_TAG(KEY_LISTEN) && i == 0) {
                on_listen();
        } else if (tag == KEY_TAG(KEY_RECV) && i < NSTREAMS) {
                /* The edge receiver's filter has OUT too: it never writes, an OUT is noise. */
                if (e->events & SN_EVENT_IN)
                        on_in(&streams[i]);
        } else if (tag == KEY_TAG(KEY_SEND) && i == TCP_EDGE) {
                if (e->events & SN_EVENT_OUT)
                        on_out(&streams[i]);
        } else {
                fail_data("entry with an unknown key %#llx", (unsigned long long)e->key);
        }
}

static void *dequeuer(void *arg)
{
        sn_entry_t e[MAX_ENTRIES];

        (void)arg;
        while (!atomic_load(&dq_stop) && !atomic_load(&failed)) {
                int n = sn_port_dequeue(port, e, MAX_ENTRIES, DEQ_TIMEOUT_MS);

                if (n == -ETIMEDOUT)
                        continue;
                if (n < 0) {
                        fail_call("sn_port_dequeue", n);
                        break;
                }
                note_delivery();
                for (int i = 0; i < n; i++)
                        dispatch(&e[i]);
        }
        return NULL;
}

/* ---- sending -------------------------------------------------------------------------- */

/* Builds chunk seq of a random length into buf; returns its size. */
static size_t make_chunk(uint8_t *buf, uint32_t seq, uint32_t *rs)
{
        uint32_t len = 1 + rnd(rs) % MAX_CHUNK;

        memcpy(buf, &seq, 4);
        memcpy(buf + 4, &len, 4);
        for (uint32_t j = 0; j < len; j++)
                buf[HDR + j] = (uint8_t)(seq * 31u + j);
        return HDR + len;
}

static void sent(struct stream *st, const uint8_t *p, size_t n)
{
        st->sent_hash = fnv(st->sent_hash, p, n);
        atomic_fetch_add(&st->sent_bytes, n);
}

/* Waits for an OUT edge after out_gen was g0.  false when everything stops meanwhile. */
static bool wait_out(struct stream *st, uint64_t g0)
{
        bool ok = true;

        atomic_fetch_add(&st->out_waits, 1);
        atomic_store(&st->out_wait_since, mono_ms());
        pthread_mutex_lock(&st->out_lock);
        while (st->out_gen == g0) {
                struct timespec ts;

                if (atomic_load(&failed)) {
                        ok = false;
                        break;
                }
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 100000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&st->out_cond, &st->out_lock, &ts);
        }
        pthread_mutex_unlock(&st->out_lock);
        atomic_store(&st->out_wait_since, 0.0);
        return ok;
}

/*
 * A stream's writer.  It always finishes the chunk it started, so that the reader's chunk
 * count matches; after stop it starts no new chunk.  Blocking writers (SO_SNDTIMEO keeps them
 * responsive) simply block while the reader lags; the edge writer is non-blocking and, on
 * EAGAIN, waits for the OUT edge its registration must report once the reader has drained.
 */
static void *writer(void *arg)
{
        struct stream *st = arg;
        uint8_t buf[HDR + MAX_CHUNK];
        uint32_t rs = (uint32_t)getpid() * 2654435761u + (uint32_t)(st - streams) * 40503u + 1;
        uint64_t burst = 0;
        bool bursting = false;

        st->sent_hash = FNV_INIT;
        while (!atomic_load(&stop) && !atomic_load(&failed)) {
                uint32_t seq = (uint32_t)atomic_load(&st->sent_chunks);
                size_t len = make_chunk(buf, seq, &rs), off = 0;

                if (st->datagram)
                        while (seq - atomic_load(&st->recv_chunks) >= UDP_WINDOW &&
                               !atomic_load(&failed))
                                sleep_ms(1);
                while (off < len && !atomic_load(&failed)) {
                        uint64_t g0 = 0;

                        if (st->edge_writer) {
                                pthread_mutex_lock(&st->out_lock);
                                g0 = st->out_gen;
                                pthread_mutex_unlock(&st->out_lock);
                        }
                        ssize_t n = send(st->wfd, buf + off, len - off, MSG_NOSIGNAL);

                        if (n > 0) {
                                if (st->datagram && (size_t)n != len) {
                                        fail_data("stream %s: a datagram sent in part",
                                                  st->name);
                                        break;
                                }
                                sent(st, buf + off, (size_t)n);
                                off += (size_t)n;
                                burst += (uint64_t)n;
                                continue;
                        }
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0 && errno == EAGAIN) {
                                if (st->edge_writer) {
                                        bursting = false;
                                        if (!wait_out(st, g0))
                                                break;
                                }
                                continue; /* blocking writers: SO_SNDTIMEO expired */
                        }
                        fail_call("send", n < 0 ? -errno : -EIO);
                        break;
                }
                if (off < len)
                        break;
                atomic_fetch_add(&st->sent_chunks, 1);
                if (st->edge_writer && !bursting && (seq + 1) % EDGE_BURST_EVERY == 0) {
                        bursting = true;
                        burst = 0;
                }
                if (bursting && burst < EDGE_BURST_MAX)
                        continue;
                bursting = false;
                sleep_ms(interval_ms);
        }
        atomic_store(&st->writer_done, true);
        return NULL;
}

/*
 * Watches the streams for a stall while the traffic runs: bytes sent but not read, with no
 * progress for STALL_MS.  Prints one "stall:" line per episode.  A report only (a restart's
 * pause is far shorter, but a loaded machine may be slow): the verdict is the check at the
 * end; this line tells which event a loss followed.
 */
static void *stall_watch(void *arg)
{
        uint64_t last[NSTREAMS] = { 0 };
        double since[NSTREAMS] = { 0 };
        bool told[NSTREAMS] = { false };

        (void)arg;
        for (int i = 0; i < NSTREAMS; i++)
                since[i] = mono_ms();
        while (!atomic_load(&stop) && !atomic_load(&failed)) {
                double now = mono_ms();

                for (int i = 0; i < NSTREAMS; i++) {
                        struct stream *st = &streams[i];
                        uint64_t rb = atomic_load(&st->recv_bytes);

                        if (rb != last[i] || rb == atomic_load(&st->sent_bytes)) {
                                last[i] = rb;
                                since[i] = now;
                                told[i] = false;
                        } else if (!told[i] && now - since[i] >= STALL_MS) {
                                printf("stall: stream %s: %llu bytes unread, no progress for "
                                       "%.1f s (since %.6f)\n", st->name,
                                       (unsigned long long)(atomic_load(&st->sent_bytes) - rb),
                                       (now - since[i]) / 1e3,
                                       real_s() - (now - since[i]) / 1e3);
                                told[i] = true;
                        }
                }
                sleep_ms(200);
        }
        return NULL;
}

static void *poster(void *arg)
{
        (void)arg;
        for (uint64_t seq = 0; seq < MAX_POSTS && !atomic_load(&stop) && !atomic_load(&failed);
             seq++) {
                /* Counted before the call: the packet may be dequeued before it returns. */
                atomic_store(&posted, seq + 1);
                int r = sn_port_post(port, KEY_POSTED | seq, (uint32_t)(seq * 2654435761u),
                                     seq ^ POST_MAGIC);

                if (r < 0) {
                        fail_call("sn_port_post", r);
                        break;
                }
                sleep_ms(POST_MS);
        }
        return NULL;
}

/* Connects to the listener and closes again, every CHURN_MS: each must be accepted. */
static void *churn(void *arg)
{
        (void)arg;
        while (!atomic_load(&stop) && !atomic_load(&failed)) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

                if (fd < 0 || connect(fd, (struct sockaddr *)&laddr, sizeof(laddr)) < 0) {
                        fail_call("churn socket/connect", -errno);
                        if (fd >= 0)
                                close(fd);
                        break;
                }
                atomic_fetch_add(&connects, 1);
                close(fd);
                sleep_ms(CHURN_MS);
        }
        return NULL;
}

/* ---- setup ---------------------------------------------------------------------------- */

static int set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);

        return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A blocking writer's send gives up after 200 ms (EAGAIN), so it can notice a failure. */
static int set_sndtimeo(int fd)
{
        struct timeval tv = { 0, 200000 };

        return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

#define TRY(call, what)                                          \
        do {                                                     \
                if ((call) < 0) {                                \
                        fail_call(what, -errno);                 \
                        return -1;                               \
                }                                                \
        } while (0)

/* The listener, registered; the three TCP pairs connected through it and accepted on its
 * notifications. */
static int setup_tcp(void)
{
        socklen_t alen = sizeof(laddr);
        int one = 1;

        TRY(lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), "socket");
        laddr.sin_family = AF_INET;
        laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        TRY(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), "setsockopt");
        TRY(bind(lfd, (struct sockaddr *)&laddr, sizeof(laddr)), "bind");
        TRY(getsockname(lfd, (struct sockaddr *)&laddr, &alen), "getsockname");
        TRY(listen(lfd, 128), "listen");
        if (enable(lfd, KEY_LISTEN, SN_TRIGGER_LEVEL | SN_TRIGGER_ONESHOT, SN_REGISTER_EVENT_IN,
                   "listener") < 0)
                return -1;
        for (int i = 0; i < NTCP; i++) {
                struct stream *st = &streams[i];

                TRY(st->wfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
                TRY(connect(st->wfd, (struct sockaddr *)&laddr, sizeof(laddr)), "connect");
                atomic_fetch_add(&connects, 1);
                /* accept() hands connections out in the order they completed. */
                for (double t0 = mono_ms(); atomic_load(&accepts) <= (uint64_t)i;) {
                        if (atomic_load(&failed))
                                return -1;
                        if (mono_ms() - t0 > SETUP_MS) {
                                fail_data("setup: connection %d not accepted in %d ms (no "
                                          "listener notification)", i, SETUP_MS);
                                return -1;
                        }
                        sleep_ms(5);
                }
                pthread_mutex_lock(&accept_lock);
                st->rfd = accepted_fds[i];
                pthread_mutex_unlock(&accept_lock);
        }
        /* The edge pair: small buffers, so that its bursts meet EAGAIN soon. */
        struct stream *e = &streams[TCP_EDGE];
        int small = 16384;

        TRY(setsockopt(e->wfd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), "setsockopt");
        TRY(setsockopt(e->rfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), "setsockopt");
        TRY(set_nonblock(e->wfd), "fcntl");
        TRY(set_sndtimeo(streams[TCP_ONESHOT].wfd), "setsockopt");
        TRY(set_sndtimeo(streams[TCP_LEVEL].wfd), "setsockopt");
        return 0;
}

static int setup_udp_unix(void)
{
        struct stream *u = &streams[UDP], *x = &streams[UNIX_ONESHOT];
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
                           b = a;
        socklen_t alen = sizeof(a);
        int sp[2];

        TRY(u->wfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), "socket");
        TRY(u->rfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), "socket");
        TRY(bind(u->wfd, (struct sockaddr *)&a, sizeof(a)), "bind");
        TRY(bind(u->rfd, (struct sockaddr *)&b, sizeof(b)), "bind");
        TRY(getsockname(u->wfd, (struct sockaddr *)&a, &alen), "getsockname");
        alen = sizeof(b);
        TRY(getsockname(u->rfd, (struct sockaddr *)&b, &alen), "getsockname");
        TRY(connect(u->wfd, (struct sockaddr *)&b, sizeof(b)), "connect");
        TRY(connect(u->rfd, (struct sockaddr *)&a, sizeof(a)), "connect");
        TRY(set_sndtimeo(u->wfd), "setsockopt");
        TRY(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), "socketpair");
        x->wfd = sp[0];
        x->rfd = sp[1];
        TRY(set_nonblock(x->rfd), "fcntl");
        TRY(set_sndtimeo(x->wfd), "setsockopt");
        return 0;
}

static int setup_registrations(void)
{
        for (int i = 0; i < NSTREAMS; i++) {
                struct stream *st = &streams[i];

                st->recv_hash = FNV_INIT;
                if (enable(st->rfd, KEY_RECV | (uint64_t)i, st->trigger, st->filter, st->name) < 0)
                        return -1;
                if (st->edge_writer &&
                    enable(st->wfd, KEY_SEND | (uint64_t)i, st->trigger, st->filter, st->name) < 0)
                        return -1;
        }
        return 0;
}

/* ---- the end -------------------------------------------------------------------------- */

/* Everything sent has been received: the writers are done and each reader has all bytes,
 * every posted packet was dequeued, every churn connection accepted. */
static bool drained(void)
{
        for (int i = 0; i < NSTREAMS; i++)
                if (!atomic_load(&streams[i].writer_done) ||
                    atomic_load(&streams[i].recv_bytes) != atomic_load(&streams[i].sent_bytes))
                        return false;
        for (uint64_t s = 0; s < atomic_load(&posted); s++)
                if (!atomic_load(&post_seen[s]))
                        return false;
        return atomic_load(&accepts) == atomic_load(&connects);
}

/* Prints the report; returns the number of losses.  final: after the drain (otherwise the
 * client stopped on a failure, and what was in flight then is not counted as lost). */
static uint64_t report(int fds_start, int fds_end, bool final)
{
        uint64_t lost = 0, bytes = 0, spurious = 0, missing = 0, np = atomic_load(&posted);

        for (int i = 0; i < NSTREAMS; i++) {
                struct stream *st = &streams[i];
                uint64_t sb = atomic_load(&st->sent_bytes), rb = atomic_load(&st->recv_bytes);
                bool done = atomic_load(&st->writer_done);
                double since = atomic_load(&st->out_wait_since);

                printf("stream %s (%s): sent %llu bytes in %llu chunks, received %llu bytes in "
                       "%llu chunks, hash %s, %llu notifications, %llu spurious",
                       st->name, st->how, (unsigned long long)sb,
                       (unsigned long long)atomic_load(&st->sent_chunks), (unsigned long long)rb,
                       (unsigned long long)atomic_load(&st->recv_chunks),
                       !done || rb != sb ? "not compared (in flight)"
                       : st->sent_hash == st->recv_hash ? "equal" : "DIFFERS",
                       (unsigned long long)atomic_load(&st->notes),
                       (unsigned long long)atomic_load(&st->spurious));
                if (st->edge_writer)
                        printf(", %llu waits for OUT",
                               (unsigned long long)atomic_load(&st->out_waits));
                printf("\n");
                bytes += rb;
                spurious += atomic_load(&st->spurious);
                if (!final)
                        continue;
                if (rb < sb) {
                        printf("lost: stream %s: %llu bytes sent were never read (no IN "
                               "notification came for them)\n",
                               st->name, (unsigned long long)(sb - rb));
                        lost++;
                } else if (!done && since > 0) {
                        printf("lost: stream %s: its writer has waited %.0f ms for an OUT edge\n",
                               st->name, mono_ms() - since);
                        lost++;
                } else if (!done) {
                        fail_data("stream %s: its writer did not finish", st->name);
                } else if (st->sent_hash != st->recv_hash) {
                        fail_data("stream %s: the bytes received differ from those sent "
                                  "(hash)", st->name);
                }
        }
        for (uint64_t s = 0; final && s < np; s++)
                if (!atomic_load(&post_seen[s]))
                        missing++;
        if (final)
                printf("posted: %llu posted, %llu dequeued once, %llu missing, %llu dequeued "
                       "twice\n", (unsigned long long)np, (unsigned long long)(np - missing),
                       (unsigned long long)missing, (unsigned long long)atomic_load(&post_dups));
        else
                printf("posted: %llu posted (not checked: stopped on a failure)\n",
                       (unsigned long long)np);
        if (missing) {
                printf("lost: %llu posted packets never dequeued\n", (unsigned long long)missing);
                lost += missing;
        }
        printf("listener (LEVEL|ONESHOT IN, re-armed): %llu connections, %llu accepted, %llu "
               "notifications\n", (unsigned long long)atomic_load(&connects),
               (unsigned long long)atomic_load(&accepts),
               (unsigned long long)atomic_load(&listen_notes));
        if (final && atomic_load(&accepts) < atomic_load(&connects)) {
                printf("lost: %llu connections never accepted (no listener notification)\n",
                       (unsigned long long)(atomic_load(&connects) - atomic_load(&accepts)));
                lost++;
        }
        pthread_mutex_lock(&gap_lock);
        printf("max-pause: %.1f ms, ended at %.6f (%llu deliveries)\n", max_gap, max_gap_end,
               (unsigned long long)deliveries);
        pthread_mutex_unlock(&gap_lock);
        printf("fds: start=%d end=%d\n", fds_start, fds_end);
        printf("traffic: streams=%d bytes=%llu posted=%llu spurious=%llu lost=%llu errors=%llu\n",
               NSTREAMS, (unsigned long long)bytes, (unsigned long long)np,
               (unsigned long long)spurious, (unsigned long long)lost,
               (unsigned long long)atomic_load(&errors));
        if (first_failure[0])
                printf("failed: %s\n", first_failure);
        fflush(stdout);
        return lost;
}

/* Ends the process without joining threads that may be blocked in a call. */
static void quit(int status)
{
        fflush(stdout);
        _exit(status);
}

/* Joins t, waiting at most ms.  false when it did not end. */
static bool join_within(pthread_t t, int ms)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

int main(int argc, char **argv)
{
        pthread_t dq[NDEQ], post_th, churn_th, watch_th;
        int hold_s = 600, opt, r, fds_start, fds_end;
        const char *file;

        while ((opt = getopt(argc, argv, "i:t:")) != -1) {
                if (opt == 'i')
                        interval_ms = atoi(optarg);
                else if (opt == 't')
                        hold_s = atoi(optarg);
                else
                        goto usage;
        }
        if (optind != argc - 1 || interval_ms < 0 || hold_s <= 0) {
usage:
                fprintf(stderr, "usage: sd-traffic [-i MS] [-t SECONDS] FILE\n");
                return 2;
        }
        file = argv[optind];
        setvbuf(stdout, NULL, _IOLBF, 0);
        post_seen = calloc(MAX_POSTS, 1);
        if (!post_seen)
                return 1;
        for (int i = 0; i < NSTREAMS; i++) {
                pthread_mutex_init(&streams[i].rd_lock, NULL);
                pthread_mutex_init(&streams[i].out_lock, NULL);
                pthread_cond_init(&streams[i].out_cond, NULL);
                streams[i].wfd = streams[i].rfd = -1;
        }

        r = sn_conn_open(NULL, &conn);
        if (r < 0) {
                fail_call("sn_conn_open", r);
                printf("failed: %s\n%s\n", first_failure, sn_conn_open_error());
                quit(3);
        }
        r = sn_port_create(conn, NDEQ, &port);
        if (r < 0) {
                fail_call("sn_port_create", r);
                printf("failed: %s\n", first_failure);
                quit(3);
        }
        for (int i = 0; i < NDEQ; i++)
                if (pthread_create(&dq[i], NULL, dequeuer, NULL))
                        return 1;
        if (setup_tcp() < 0 || setup_udp_unix() < 0 || setup_registrations() < 0) {
                printf("failed: setup: %s\n", first_failure);
                quit(3);
        }

        /* Traffic starts. */
        fds_start = count_fds();
        pthread_mutex_lock(&gap_lock);
        traffic_on = true;
        deliveries = 0;
        pthread_mutex_unlock(&gap_lock);
        for (int i = 0; i < NSTREAMS; i++) {
                if (pthread_create(&streams[i].writer, NULL, writer, &streams[i]))
                        return 1;
                streams[i].writer_started = true;
        }
        if (pthread_create(&post_th, NULL, poster, NULL) ||
            pthread_create(&churn_th, NULL, churn, NULL) ||
            pthread_create(&watch_th, NULL, stall_watch, NULL))
                return 1;
        printf("ready: %d streams, %d dequeuing threads, %d descriptors open, pid %d\n",
               NSTREAMS, NDEQ, fds_start, (int)getpid());

        /* Until FILE appears, then AFTER_FILE_MS more. */
        for (double t0 = mono_ms(); access(file, F_OK) < 0;) {
                if (atomic_load(&failed)) {
                        report(fds_start, count_fds(), false);
                        quit(3);
                }
                if (mono_ms() - t0 > hold_s * 1e3) {
                        printf("gave up waiting for %s after %d s\n", file, hold_s);
                        quit(4);
                }
                sleep_ms(100);
        }
        for (int i = 0; i < AFTER_FILE_MS / 100 && !atomic_load(&failed); i++)
                sleep_ms(100);

        /* Stop sending, then wait until everything sent has been received. */
        atomic_store(&stop, true);
        pthread_mutex_lock(&gap_lock);
        traffic_on = false;
        pthread_mutex_unlock(&gap_lock);
        for (double t0 = mono_ms(); !drained() && !atomic_load(&failed);) {
                if (mono_ms() - t0 > DRAIN_MS)
                        break;
                sleep_ms(10);
        }
        bool joined = join_within(post_th, 1000) && join_within(churn_th, 1000) &&
                      join_within(watch_th, 1000);

        for (int i = 0; i < NSTREAMS; i++)
                if (atomic_load(&streams[i].writer_done))
                        joined = join_within(streams[i].writer, 1000) && joined;
                else
                        joined = false;
        fds_end = count_fds();
        atomic_store(&dq_stop, true);
        for (int i = 0; i < NDEQ; i++)
                if (!join_within(dq[i], 2 * DEQ_TIMEOUT_MS + 1000)) {
                        fail_data("a dequeuing thread did not return from its %u ms wait",
                                  DEQ_TIMEOUT_MS);
                        joined = false;
                }

        uint64_t lost = report(fds_start, fds_end, true);

        if (lost || atomic_load(&errors) || !joined)
                quit(3);
        /* The registered ends through sn_socket_close() (rule L1), the others plainly. */
        for (int i = 0; i < NSTREAMS; i++) {
                r = sn_socket_close(conn, streams[i].rfd);
                if (r >= 0)
                        r = streams[i].edge_writer ? sn_socket_close(conn, streams[i].wfd)
                                                   : (close(streams[i].wfd) < 0 ? -errno : 0);
                if (r < 0) {
                        printf("failed: closing stream %s -> %s\n", streams[i].name,
                               errname(r));
                        quit(3);
                }
        }
        sn_socket_close(conn, lfd);
        sn_port_close(port);
        sn_conn_close(conn);
        free((void *)post_seen);
        return 0;
}

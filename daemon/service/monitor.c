/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * monitor.c - live copies of requests and replies for monitors (socknotifyctl monitor).
 *
 * A connection becomes a monitor with the CONTROL verb "monitor" (control.c).  From then on
 * every message another connection sends or is sent, over the socket or through the
 * shared-memory rings, is copied to it as a MONITOR_FRAME: a small header (time, connection,
 * pid, uid, direction) and the message's bytes, cut to what one frame carries.  Descriptors are
 * never copied: the frame's copy of the header says how many came (nfds).
 *
 * A monitor never slows the daemon or a client: a frame goes out with one non-blocking send();
 * when the monitor's socket is full it waits in the monitor's own queue, bounded by
 * MONITOR_BUFFER bytes, and past that the frame is dropped and counted.  The next frame that
 * is kept carries the count of those lost just before it ("lost"), and when the queue drains
 * with losses not yet told a frame with only that count (flag LOST) is sent.  So every message
 * a monitor may see is either shown or counted, exactly once.  With no monitor attached the
 * message paths test one counter (monitor_see()).
 *
 * Who sees what: root and the daemon's user see every connection; any other user only the
 * connections of its own uid (SO_PEERCRED).  The filters (pid, port) are applied here.  A port
 * filter shows requests whose body names the port, the replies to them (matched by connection
 * and id) and the PORT_CREATE_REPLY or PORT_OPEN_REPLY that gives it.
 *
 * Monitors are not part of the state a re-exec or a restore carries (persist.c leaves them
 * out): their socket is closed, and socknotifyctl says that the monitor ended.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/list.h"
#include "common/log.h"
#include "common/macro.h"
#include "daemon/service/conn.h"
#include "daemon/service/monitor.h"
#include "daemon/service/persist.h"
#include "proto/codec.h"

/* Requests shown under a port filter whose replies are still to come: the most remembered. */
#define MONITOR_PENDING 256
/* Where a frame's lost count is: after time_ns, conn, pid and uid. */
#define FRAME_LOST_AT (SN_HEADER_SIZE + 24)

struct frame {
        struct sn_list link;
        size_t len;
        uint8_t data[];
};

struct monitor {
        struct sn_list link; /* in srv->monitors */
        struct conn *conn;
        bool admin;
        uint32_t pid, port; /* filters, 0: any */
        size_t max_frame;   /* max_message when it attached: its scratch buffer's size */
        uint8_t *scratch;   /* one frame being built */
        struct sn_list queue;
        size_t queued;      /* bytes of frames in queue */
        uint64_t lost;      /* dropped since the last frame kept */
        struct {
                uint64_t conn;
                uint32_t id;
        } pending[MONITOR_PENDING];
        uint32_t npending, next_pending;
};

static bool is_admin(const struct conn *c)
{
        return c->uid == 0 || c->uid == geteuid();
}

/* The monitors of uid, and (*ret_unprivileged) those of every user not an administrator. */
static uint32_t user_monitors(const struct server *srv, uid_t uid, uint32_t *ret_unprivileged)
{
        const struct sn_list *pos;
        uint32_t n = 0;

        *ret_unprivileged = 0;
        for (pos = srv->monitors.next; pos != &srv->monitors; pos = pos->next) {
                const struct monitor *m = sn_list_entry(pos, struct monitor, link);

                n += m->conn->uid == uid;
                *ret_unprivileged += !m->admin;
        }
        return n;
}

int monitor_check(struct conn *c)
{
        struct server *srv = c->srv;
        uint32_t unprivileged;

        if (c->ring || c->nports || c->nwaits || c->stage.active || c->mon)
                return -EBUSY;
        if (srv->nmonitors >= MONITOR_MAX)
                return -EDQUOT;
        if (!is_admin(c) && (user_monitors(srv, c->uid, &unprivileged) >= MONITOR_MAX_PER_USER ||
                             unprivileged >= MONITOR_MAX_UNPRIVILEGED))
                return -EDQUOT;
        return 0;
}

int monitor_attach(struct conn *c, uint32_t pid, uint32_t port)
{
        struct server *srv = c->srv;
        struct monitor *m;
        int r = monitor_check(c);

        if (r < 0)
                return r;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->max_frame = c->max_message; /* what its client can receive */
        m->scratch = malloc(m->max_frame);
        if (!m->scratch) {
                free(m);
                return -ENOMEM;
        }
        m->conn = c;
        m->admin = is_admin(c);
        m->pid = pid;
        m->port = port;
        sn_list_init(&m->queue);
        sn_list_add_tail(&srv->monitors, &m->link);
        srv->nmonitors++;
        c->mon = m;
        /* Not carried across a re-exec or a restore: its socket is then closed. */
        live_conn_gone(c);
        log_info("connection %llu (pid %d, uid %u) monitors%s", (unsigned long long)c->serial,
                 (int)c->pid, (unsigned)c->uid, m->admin ? " every connection" : " its user's");
        return 0;
}

void monitor_detach(struct conn *c)
{
        struct monitor *m = c ? c->mon : NULL;

        if (!m)
                return;
        while (!sn_list_empty(&m->queue)) {
                struct frame *f = sn_list_first(&m->queue, struct frame, link);

                sn_list_del(&f->link);
                free(f);
        }
        sn_list_del(&m->link);
        c->srv->nmonitors--;
        free(m->scratch);
        free(m);
        c->mon = NULL;
}

/* Sends one frame now.  Returns 1 sent, 0 the socket is full, -1 the connection failed. */
static int frame_send(struct monitor *m, const uint8_t *buf, size_t len)
{
        ssize_t n = send(m->conn->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n == (ssize_t)len)
                return 1;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return 0;
        conn_kill(m->conn, "sending failed");
        return -1;
}

/* Builds the frame of a message (or of lost frames alone, buf NULL) in the scratch buffer;
 * returns its length. */
static size_t frame_build(struct monitor *m, const struct conn *c, bool reply, const uint8_t *buf,
                          size_t len, uint64_t time_ns)
{
        size_t head = sn_msg_size(SN_MSG_MONITOR_FRAME, 0, 0);
        uint32_t n = (uint32_t)SN_MIN(len, m->max_frame - head);
        struct snw_monitor body = {
                .time_ns = time_ns,
                .conn = c ? c->serial : 0,
                .pid = c ? (uint32_t)c->pid : 0,
                .uid = c ? (uint32_t)c->uid : 0,
                .lost = (uint32_t)SN_MIN(m->lost, UINT32_MAX),
                .length = (uint32_t)len,
                .flags = (reply ? SN_PROTO_MONITOR_REPLY : 0) |
                         (c && c->ring ? SN_PROTO_MONITOR_RING : 0) |
                         (buf ? 0 : SN_PROTO_MONITOR_LOST),
        };
        uint8_t *p = sn_msg_begin(m->scratch, SN_MSG_MONITOR_FRAME, 0, 0, 0, n, 0);

        p = snw_monitor_encode(p, &body);
        if (n)
                memcpy(p, buf, n);
        m->lost -= body.lost;
        return head + n;
}

/* Queues the frame in the scratch buffer; false when out of memory. */
static bool frame_queue(struct monitor *m, size_t len)
{
        struct frame *f = malloc(sizeof(*f) + len);

        if (!f)
                return false;
        f->len = len;
        memcpy(f->data, m->scratch, len);
        sn_list_add_tail(&m->queue, &f->link);
        m->queued += len;
        conn_want_write(m->conn);
        return true;
}

bool monitor_flush(struct conn *c)
{
        struct monitor *m = c->mon;
        struct timespec now;

        if (!m)
                return true;
        while (!sn_list_empty(&m->queue)) {
                struct frame *f = sn_list_first(&m->queue, struct frame, link);
                int r = frame_send(m, f->data, f->len);

                if (r <= 0)
                        return false;
                sn_list_del(&f->link);
                m->queued -= f->len;
                free(f);
        }
        if (m->lost) {
                /* Losses that no later frame told: say them now. */
                clock_gettime(CLOCK_REALTIME, &now);
                size_t len = frame_build(m, NULL, false, NULL, 0,
                                         (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
                int r = frame_send(m, m->scratch, len);

                if (r < 0)
                        return false;
                if (r == 0) {
                        /* Taken back: the count is told once the socket has room. */
                        m->lost += sn_get_u32(m->scratch + FRAME_LOST_AT);
                        return false;
                }
        }
        return true;
}

/* Whether a message of c passes m's port filter. */
static bool port_match(struct monitor *m, const struct conn *c, bool reply, const uint8_t *buf,
                       size_t len)
{
        uint16_t type;
        uint32_t id;

        if (len < SN_HEADER_SIZE)
                return false;
        type = sn_get_u16(buf + 4);
        id = sn_get_u32(buf + 8);
        if (!reply) {
                /* Requests whose body starts with the port id. */
                bool names_port = type == SN_MSG_PORT_CLOSE || type == SN_MSG_PROCESS ||
                                  type == SN_MSG_POST || type == SN_MSG_PORT_LINGER ||
                                  type == SN_MSG_PORT_TAKE;

                if (!names_port || len < SN_HEADER_SIZE + 4 ||
                    sn_get_u32(buf + SN_HEADER_SIZE) != m->port)
                        return false;
                for (uint32_t i = 0; i < m->npending; i++)
                        if (m->pending[i].conn == c->serial && m->pending[i].id == id)
                                return true; /* a part of a call already remembered */
                /* Remembered until its reply; when too many wait, the oldest is forgotten. */
                uint32_t slot = m->npending < MONITOR_PENDING ? m->npending++ : m->next_pending++;

                m->next_pending %= MONITOR_PENDING;
                m->pending[slot].conn = c->serial;
                m->pending[slot].id = id;
                return true;
        }
        if ((type == SN_MSG_PORT_CREATE_REPLY || type == SN_MSG_PORT_OPEN_REPLY) &&
            len >= SN_HEADER_SIZE + 4 && sn_get_u32(buf + SN_HEADER_SIZE) == m->port)
                return true;
        for (uint32_t i = 0; i < m->npending; i++) {
                if (m->pending[i].conn != c->serial || m->pending[i].id != id)
                        continue;
                m->pending[i] = m->pending[--m->npending];
                if (m->next_pending > m->npending)
                        m->next_pending = 0;
                return true;
        }
        return false;
}

void monitor_copy(struct conn *c, bool reply, const uint8_t *buf, size_t len)
{
        struct server *srv = c->srv;
        struct sn_list *pos, *tmp;
        uint64_t time_ns = 0;

        if (c->mon)
                return; /* a monitor's own messages are not shown */
        sn_list_foreach_safe(pos, tmp, &srv->monitors) {
                struct monitor *m = sn_list_entry(pos, struct monitor, link);
                size_t flen;
                int r;

                if (m->conn->dead || (!m->admin && c->uid != m->conn->uid) ||
                    (m->pid && (uint32_t)c->pid != m->pid) ||
                    (m->port && !port_match(m, c, reply, buf, len)))
                        continue;
                flen = sn_msg_size(SN_MSG_MONITOR_FRAME,
                                   (uint32_t)SN_MIN(len, m->max_frame - SN_HEADER_SIZE -
                                                                 SN_WIRE_SIZE_monitor),
                                   0);
                if (m->queued + flen > MONITOR_BUFFER) {
                        m->lost++;
                        continue;
                }
                if (!time_ns) {
                        struct timespec now;

                        clock_gettime(CLOCK_REALTIME, &now);
                        time_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
                }
                flen = frame_build(m, c, reply, buf, len, time_ns);
                r = sn_list_empty(&m->queue) && !conn_output_pending(m->conn)
                            ? frame_send(m, m->scratch, flen)
                            : 0;
                if (r == 0 && !frame_queue(m, flen))
                        m->lost += 1 + sn_get_u32(m->scratch + FRAME_LOST_AT);
        }
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * registration.h - a socket registered on a port and its packet (registration.c); posted
 * packets.  A registration is owned by its port and remembers the session that made it
 * (its creator): when that goes, the registration goes too (rule L3), or waits on the port's
 * orphans when the port lingers.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/list.h"
#include "daemon/state/journal.h"
#include "proto/codec.h"

struct port;
struct server;
struct session;

struct packet {
        struct sn_list link; /* in port->queue */
        uint64_t key;
        uint64_t overlapped;
        uint32_t events;
        uint32_t kind;  /* SN_PROTO_KIND_* */
        uint64_t epoch; /* port->epoch when harvested */
        uint64_t seq;   /* its place among every port's packets (live_packet_seq()) */
};

/* A posted packet, allocated on its own (a registration's packet is part of it). */
struct posted {
        struct packet pkt; /* first: a posted packet is freed through its pkt */
        uint32_t jr;       /* its journal record (persist.c), 0 for none */
};

static inline struct posted *posted_of(struct packet *pkt)
{
        return (struct posted *)pkt; /* kind SN_PROTO_KIND_POSTED only */
}

/* What a registration whose socket hung up does in epoll (reg->parked). */
enum reg_park {
        PARK_NONE,
        PARK_OUT,   /* hung up and nothing reportable: out of epoll */
        PARK_QUIET, /* LEVEL, only a local shutdown holds and nothing reportable: its item is
                     * edge-triggered until a wake-up shows a change (the peer's FIN) */
};

enum reg_state {
        REG_ENABLED,
        REG_DISABLED,
        REG_REMOVING, /* REMOVE applied; freed when its packet is dequeued */
};

struct reg {
        struct reg *hnext;         /* registry chain */
        struct sn_list port_link;  /* in port->regs */
        struct sn_list skip_link;  /* in port->skips while edge_skip is set */
        struct sn_list conn_link;  /* in creator->regs */
        struct session *creator;   /* the session that made it; NULL: an orphan */
        struct port *port;
        uint32_t slot;             /* index in server->slots: the epoll item's data */
        uint32_t jr;               /* journal record (persist.c), 0 for none */
        uint64_t dev, ino;
        uint64_t key;
        int fd;                    /* the daemon's copy of the socket */
        uint32_t client_fd;        /* the client's descriptor number that created it */
        uint16_t filter;           /* SN_REGISTER_EVENT_* */
        uint8_t trigger;           /* normalized: ONESHOT or PERSISTENT, and LEVEL or EDGE */
        uint8_t state;             /* enum reg_state */
        uint8_t edge_skip;         /* EDGE: events that held at ENABLE, not to be reported */
        bool stream;               /* SOCK_STREAM or SOCK_SEQPACKET: HANGUP applies */
        bool fresh;                /* never-connected stream socket (rule 14) */
        bool in_epoll;
        uint8_t parked;            /* enum reg_park */
        bool queued;               /* pkt is on port->queue */
        bool ownerless;            /* on port->orphans: its creator ended, the port keeps it */
        bool fired;                /* ONESHOT: its entry was dequeued since the last ENABLE */
        /* EDGE transitions (registration.c): the OUT side's own epoll item on a duplicate. */
        int out_fd;                /* EDGE with OUT and IN or HANGUP: duplicate of fd, or -1 */
        bool out_in_epoll;
        bool out_seen;             /* EDGE: OUT held at the OUT side's last look */
        uint8_t out_state;         /* EDGE: hang-up/error bits at that look (EDGE_ST_*) */
        bool hup_seen;             /* EDGE: HANGUP reported or held at ENABLE */
        /* An epoll_ctl of fd queued in the server's batch (epctl.c), its result not known yet:
         * at most one per registration, so that the kernel cannot run two out of order. */
        uint8_t epq;               /* what it is for (EPQ_* in registration.c), 0: none */
        bool epq_add;              /* it is an EPOLL_CTL_ADD */
        uint8_t epq_parked;        /* parked before it */
        bool epq_new;              /* made by the ENABLE it belongs to: freed if it fails.  The
                                    * PROCESS item's result that its failure sets travels with
                                    * the queued operation (epctl's arg), not here: these four
                                    * bytes fill padding, a pointer would cost every
                                    * registration 16 bytes of heap */
        struct box_ref box;        /* its socket in the journal's boxes */
        struct packet pkt;
};

/*
 * Applies one registration item of session to port (rule order and codes of the spec,
 * section 3).
 * fd is the descriptor received with the item or -1; it is consumed (kept by a new
 * registration or closed).  Returns 0 or a positive errno value for the entry's result.
 * later, when not NULL, lets an ENABLE queue its epoll_ctl in an open epctl window
 * (epctl_begin()): its failure then sets *later (and the registration ends as a failed ENABLE
 * leaves it) when the batch is flushed, which the caller does before *later is read.
 */
uint32_t reg_apply(struct port *port, struct session *session, const struct snw_registration *item,
                   int fd, uint32_t *later);
/* The result of a queued epoll_ctl (epctl_done_fn; ctx is the server, cookie the slot, arg the
 * item's result to set when an ENABLE fails, or NULL). */
void reg_epoll_done(void *ctx, uint64_t cookie, void *arg, int res);
/* Re-arms an enabled registration in epoll (after a ONESHOT packet was dropped unsent). */
void reg_rearm(struct reg *reg);
/* A restored one-shot that had fired: out of epoll until its next ENABLE. */
void reg_disarm(struct reg *reg);
/* Forgets the EDGE events recorded at ENABLE. */
void reg_skip_clear(struct reg *reg);
/* EDGE, enabled: the conditions that hold now as it reports them (no ERR), read from the socket;
 * 0 for any other registration.  What a re-exec or an orderly stop records before its last
 * harvest, so that the next image trims only those from its first reports. */
uint8_t reg_edge_held(const struct reg *reg);
/* Frees a registration: out of epoll, registry and port, its packet dequeued, fd closed. */
void reg_free(struct reg *reg);
/* The registration's creator is gone but its port keeps it (a lingering port): it goes on the
 * port's orphans, without a creator, until a PORT_TAKE gives it a new one. */
void reg_orphan(struct reg *reg);
/* Makes an ownerless registration session's own (PORT_TAKE). */
void reg_adopt_owner(struct reg *reg, struct session *session);
/* Translates epoll readiness of one of the registration's epoll items (out_side: the EDGE OUT
 * item) into notification bits; handles rule 14 (fresh sockets), rule 15 (EDGE transitions) and
 * hung-up sockets.  0 means nothing to report. */
uint32_t reg_translate(struct reg *reg, uint32_t epoll_events, bool out_side);
/* The registration (NULL if none) and side an epoll item's data stands for. */
struct reg *reg_of_epoll(const struct server *srv, uint64_t data, bool *ret_out_side);
/* Re-reads readiness of a queued level-triggered packet that has waited past a dequeue; returns
 * the current bits (0: drop the packet). */
uint32_t reg_recheck(struct reg *reg);
/* Drops the registration of socket (dev, ino) if session made it through its descriptor
 * client_fd (row 62), without a REMOVE packet (rule L1).  Returns 0 or -ENOENT. */
int reg_close_socket(struct session *session, uint64_t dev, uint64_t ino, uint32_t client_fd);

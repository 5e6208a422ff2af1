/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * world.h - struct server as the objects see it: the shared context that holds the registry,
 * the ports, the registrations' slots, the limits, the counters and the users.  Objects include
 * this, never a header of the service layer above them.
 *
 * Error convention of the daemon: 0 success, negative errno failure passed up unchanged;
 * positive values only where a comment documents them for the direct caller.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "common/list.h"
#include "common/log.h"
#include "daemon/base/counters.h"
#include "daemon/base/epctl.h"
#include "daemon/base/htable.h"
#include "daemon/base/settings.h"
#include "daemon/objects/registry.h"
#include "daemon/objects/users.h"
#include "daemon/state/journal.h"

struct session;
struct epoll_event;
struct journal;
struct jr_keep;
struct reg;

struct server {
        struct event_base *base;
        int listen_fd;
        struct sockaddr_un listen_addr; /* getsockname() of listen_fd */
        socklen_t listen_addrlen;
        struct event listen_ev;
        struct event sig_term, sig_int;
        struct event sig_ignored[3]; /* USR1, USR2, ALRM: logged, never fatal */
        bool stopping;               /* shutdown_cb ran: a repeated signal is only logged */
        struct event listen_pause;   /* re-enables accepting after running out of descriptors */
        int reserve_fd;              /* spare descriptor to refuse a client on EMFILE */
        struct sn_ratelimit refuse_log; /* refusals by a limit */
        struct sn_ratelimit violation_log; /* protocol violations, all connections */
        struct event reaper;
        struct event watchdog;  /* WATCHDOG=1 at half of WATCHDOG_USEC */
        struct event status_tick; /* STATUS= when the summary changes */
        struct event owner_sweep; /* ends connections whose process has exited */
        char last_status[320];
        char *path;
        bool owns_path;
        struct limits limits;
        struct counters counters;
        struct registry registry;
        /* Registrations by slot number: the epoll items' data, stable across a re-exec. */
        struct reg **slots;
        uint32_t nslots, free_slot; /* free slots chain through their entry (NULL-tagged) */
        uint32_t *slot_next;
        /* Each slot's generation (24 bits, never 0), one more each time it is freed: with the
         * slot, a registration's handle (server_reg_handle()). */
        uint32_t *slot_gen;
        uint32_t slot_gen_seed;      /* first generation of a new slot: random per daemon */
        uint64_t claim_handle;       /* restore: the handle the next new registration keeps */
        /* Restore after a re-exec or an orderly stop: the EDGE conditions that held for the
         * next new registration when the last image left (reg_edge_held()). */
        bool restore_held_known;
        uint8_t restore_held;
        struct sn_list conns;
        uint32_t nconns;
        uint32_t nrings;             /* connections with shared-memory rings */
        struct sn_list ports;
        /* The ports by id and by (uid, name), the handles by (session, port) (port.c): a
         * lookup, a creation and a restore cost the same whatever the number of ports. */
        struct htable port_ids, port_names, handles;
        struct sn_list users;
        struct htable users_by_uid;
        struct pool unprivileged; /* what users other than root and ours hold together */
        struct sn_list dead;
        uint32_t next_port_id;       /* ports created; ids are a keyed permutation of it */
        uint32_t port_id_key[4];
        uint64_t next_conn_serial;
        uint32_t nports, nwaits;
        /* Connections that monitor the others (service/monitor.c): tested on every message. */
        struct sn_list monitors;
        uint32_t nmonitors;
        uint64_t nregs, nqueued;
        bool trace;
        bool no_shm; /* offer no shared-memory rings (--no-shm) */
        /* The epoll_ctl calls of registrations, batched through io_uring where it is allowed
         * (epctl.c; registration.c queues, the callers of reg_apply() and the harvest flush). */
        struct epctl *epctl;
        char *config_path;
        bool config_named;      /* named with --config: its absence is an error */
        struct settings cmdline;
        struct settings file_settings; /* the file's settings in force: the last good ones */
        bool lastgood_stored;   /* they are kept in the descriptor store (lastgood.c) */
        char reload_note[160];  /* the outcome of the last reload or start, for STATUS= */
        /* Which settings of the file are in force, for the status document: where they came
         * from (server.h, enum config_state), when they were read (CLOCK_REALTIME seconds; 0:
         * not by this image), and the last reload (time 0: none yet; its error, "" when it
         * succeeded). */
        int config_state;
        int64_t config_read_at;
        int64_t reload_at;
        char reload_error[512];
        /* CLOCK_REALTIME seconds of the first start whose clients this daemon still serves:
         * carried through re-execs and restores (the journal), unlike started. */
        int64_t serving_since;
        struct event sig_hup, sig_usr2;
        struct event reexec_later; /* SIGUSR2's re-exec, after the signals of its loop pass */
        bool restoring;         /* a restore: holdings are restored past any limit */
        bool restoring_crash;   /* ... after a crash: edges that hold are reported again */
        char *exe;              /* our binary's path, executed again by a re-exec */
        char **argv;            /* our arguments, given again */
        struct timespec started;
        uint8_t *rbuf;  /* one received message */
        uint8_t *wbuf;  /* one reply being built */
        uint8_t *ebuf;  /* encoded entries being taken */
        size_t bufsize; /* of each of the three: the largest max_message a session holds */
        struct epoll_event *evbuf;
        uint32_t evcap;
        uint64_t fd_capacity;
        uint64_t fd_own;         /* descriptors open before the first client: the daemon's own */
        uint32_t fdstore_max;    /* the service manager's descriptor store takes this many */
        struct journal *journal; /* the state, always current (persist.c), NULL without one */
        uint32_t listen_jr;      /* the listening socket's journal record */
        struct box_ref listen_box;
        struct jr_keep *lent; /* live_stage_lend(): the staged descriptor being applied */
        int lent_fd;
        /* PORT_TAKE replies not known to be read, and their descriptors (bounded: see
         * handle_port_take in conn.c). */
        struct sn_list take_unread;
        uint64_t take_inflight;
        size_t freed_since_trim; /* bytes of client-made state freed since malloc_trim() */
};

/* ---- what objects may ask of the context (world.c) ---- */

/* Takes a free slot for g (g->slot); returns 0 or -ENOMEM. */
int server_slot_take(struct server *srv, struct reg *g);
void server_slot_release(struct server *srv, struct reg *g);
/* Rate-limited notice that a client was refused by limit (name as in socknotifyd(8)); with a
 * session (s), also the refusal its LIMIT_INFO names: its current request and item, the
 * limit's number and its value in force. */
void server_log_refusal(struct server *srv, struct session *s, uid_t uid, const char *limit);
/* Gives memory back to the system after much client-made state was freed. */
void server_note_freed(struct server *srv, size_t bytes);
/* True when fd (a SOCK_SEQPACKET socket) is a client end of a connection to this daemon. */
bool server_is_own_connection(const struct server *srv, int fd);
/* Counts a failed call or entry by errno. */
void server_count_call_error(struct server *srv, uint32_t err);
void server_count_entry_error(struct server *srv, uint32_t err);

/* A registration's handle: its slot and the slot's generation (PROTOCOL.md, handles). */
static inline uint64_t server_reg_handle(const struct server *srv, uint32_t slot)
{
        return (uint64_t)srv->slot_gen[slot] << 32 | slot;
}

/* The registration a client's handle names, or NULL: any 64-bit value is safe here. */
static inline struct reg *server_handle_reg(const struct server *srv, uint64_t handle)
{
        uint32_t slot = (uint32_t)handle;

        if (handle >> 56 || slot >= srv->nslots || srv->slot_gen[slot] != (uint32_t)(handle >> 32))
                return NULL;
        return srv->slots[slot];
}

/* The registration of an epoll item's data, or NULL. */
static inline struct reg *server_slot_reg(const struct server *srv, uint64_t data)
{
        return data < srv->nslots ? srv->slots[data] : NULL;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * client.h - internals of libsocknotify shared by its files.  Non-static names use the sn__
 * prefix so that static linking cannot collide with the application.
 *
 * Threads and replies: one connection carries the requests of every thread.  Each request is
 * a struct sn_pending on its caller's stack, found by request id.  Whichever waiting thread
 * finds nobody reading becomes the reader: it receives one reply, decodes it into the arrays
 * of the caller it belongs to (under the lock), wakes that caller, and either keeps reading
 * (its own reply has not come) or hands the role to another waiting thread.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "client/transport.h"
#include "proto/codec.h"
#include "socknotify.h"

struct sn_pending;
typedef void (*sn_reply_fn)(struct sn_pending *p, const uint8_t *buf, const struct snw_header *h,
                            const struct sn_msg_desc *d);

struct sn_pending {
        struct sn_pending *next;
        uint32_t id;
        uint16_t expect;  /* reply type */
        bool done;
        bool waiting;     /* asleep on cond, waiting for the reader */
        bool async;       /* belongs to a submitted call (async.c): completed, not signalled */
        /* A submitted call whose thread is sending it (under send_lock): a loss or resume in
         * the meantime leaves it to that thread, and so does its reply if it comes first (the
         * reader marks it done without completing it).  That thread clears this under
         * conn->lock before it lets send_lock go, then completes the call if it was answered,
         * takes it off the list if its send failed, or leaves it to the resume's second pass
         * (conn_resume()), which fails it. */
        bool sending;
        int status;       /* 0 or negative errno, from the reply header or the transport */
        pthread_cond_t cond;
        sn_reply_fn on_reply;
        void *ctx;
        /* Cancellation (sn__wait): a dequeuing PROCESS names its port and thread, and how to
         * take back the entries already decoded into the cancelled caller's arrays. */
        uint32_t port, thread;
        uint32_t (*salvage)(struct sn_pending *p, sn_entry_t **ret_entries);
        bool relay;     /* a pure dequeue: it may return stashed entries instead (-EINPROGRESS) */
        /* Sent through the rings (sn__call_on): the submission ring's position after its
         * record, to tell at a resume whether the daemon that ended ever took it. */
        bool in_ring;
        uint32_t sq_end;
        bool abandoned; /* heap copy left by its caller: its reply is stashed */
        bool gone;      /* ... by a cancelled caller, whose thread is gone */
        /* A reply that brings descriptors (PORT_TAKE): they are moved to fds (room for
         * SN_PROTO_MAX_FDS), their number to nfds; fds_cut when the kernel dropped some. */
        int *fds;
        unsigned nfds;
        bool fds_cut;
        /* This call's reply, taken from the completion ring by whichever thread reads: its
         * space (from cq_start) is given back, which tells the daemon it was read, only once
         * the call's own thread has it (conn.c, cq_give_back()).  In conn->held while so. */
        bool held;
        uint32_t cq_start;
        struct sn_pending *held_next;
};

/* Entries that reached a cancelled sn_port_dequeue(): the next call on the port returns them
 * (conn.c). */
struct sn_orphans {
        struct sn_orphans *next;
        uint32_t port;
        uint32_t thread; /* the thread they were given to, */
        bool gone;       /* cancelled: reported gone (THREAD_EXIT) when they are taken */
        uint32_t n, first;
        sn_entry_t e[];
};

/* A pure dequeue whose daemon ended while it waited (conn.c, resuming): its caller asks the new
 * daemon again.  Never returned to the application. */
#define SN__ASK_AGAIN (-ERESTART)
/* A request put in the rings of a daemon that ended before it took it from there (conn.c,
 * resuming): it never reached a daemon, as one whose send failed, and goes to the new one. */
#define SN__SEND_AGAIN (-ERESTART - 4096)
/* How many times a request whose daemon died while handling it (EIO) is sent again, when that
 * is safe (retry.c): a request that crashes every daemon still ends. */
#define SN__RETRIES 2
/* Whether a request of this type may be sent again after EIO (retry.c); PROCESS also by each
 * item's op (sn__retry_op).  *ret_done: a status that, answering a second attempt, means the
 * first took effect (0: none). */
bool sn__retry_safe(uint16_t type, uint32_t *ret_done);
bool sn__retry_op(uint8_t op);
/* SOCKNOTIFY_RECONNECT_MS when unset (docs/reconnect.md). */
#define SN_RECONNECT_MS_DEFAULT 10000u

/* What the library remembers of a descriptor it registered (rule L1, L2). */
struct sn_fdcache {
        uint64_t ino;
        uint32_t dev;  /* st_dev; a descriptor whose st_dev does not fit is not cached */
        uint32_t port; /* 0: no registration made through this descriptor */
};

/*
 * What the layers above the transport (conn.c) ask it to call: conn.c includes no other file of
 * the library, so everything it must tell them goes through these.  Each is set once, by the
 * first use of its layer, under conn->lock; NULL until then.
 */
struct sn_conn_hooks {
        /* async.c, with conn->lock held: p (a submitted call) completed; every submitted call
         * still pending completes with status; the connection closes; the transport changed
         * (conn->fd is another descriptor). */
        void (*call_done)(sn_conn_t *conn, struct sn_pending *p);
        void (*calls_fail)(sn_conn_t *conn, int status);
        void (*calls_release)(sn_conn_t *conn);
        void (*fd_changed)(sn_conn_t *conn);
        /* port.c, with send_lock, conn->lock and the reader role held, on a new connection to
         * a new daemon: make again what this process owned (ports, registrations), through
         * sn__conn_exchange().  Returns 0, or a negative errno (the transport failed: the
         * resume tries another connection). */
        int (*replay)(sn_conn_t *conn);
};

struct sn_conn {
        struct sn_conn *next_live; /* in the list of open connections (conn.c) */
        int fd;
        /* The rings of protocol version 3 when the daemon passed them (transport.h); replaced
         * with fd, under send_lock and lock.  no_shm: SOCKNOTIFY_NO_SHM, never ask for them. */
        struct sn_ring ring;
        bool no_shm;
        /* SOCKNOTIFY_SELF_SCHEDULED: HELLO says SELF (the daemon never reads a waiter's thread
         * as blocked elsewhere), on every handshake, resumes included. */
        bool self_scheduled;
        uint64_t fork_gen;
        bool trace;
        /* Resuming (docs/reconnect.md): where the connection was opened, who served it then,
         * and how long to wait for a new daemon after it ends (0: fail at once). */
        struct sockaddr_un addr;
        uid_t daemon_uid;
        uint32_t reconnect_ms;
        pthread_mutex_t lock;      /* everything below */
        pthread_mutex_t send_lock; /* keeps the parts of one call together; held while sending,
                                    * and by a resume while it replaces fd */
        bool reader_active;
        bool broken;
        bool resuming;
        /* A resume runs in a thread of its own (conn.c, resume_behind()) while behind is set;
         * closing asks it to give up (sn_conn_close() waits for it on resumed). */
        bool behind;
        bool closing;
        int lost_err;              /* what calls fail with once broken (-ECONNRESET, -EACCES) */
        uint64_t gen;              /* transports so far: 0 is the first; changes under both locks */
        pthread_cond_t resumed;    /* broadcast when a resume ends */
        struct sn_conn_hooks hooks;
        struct sn_port *ports;     /* ports to replay (port.c) */
        struct sn_pending *pending;
        /* The completion ring (transport.h): replies delivered up to cq_delivered; the calls
         * whose replies are kept from the daemon until their threads have them. */
        uint32_t cq_delivered;
        struct sn_pending *held;
        uint32_t next_id;
        uint8_t *rbuf;
        sn_limits_t limits;
        uint16_t version; /* protocol version of the connection */
        struct sn_fdcache *cache;
        uint32_t cache_cap;
        struct sn_orphans *orphans; /* oldest first */
        /* Submitted calls (async.c), under lock: completed ones wait in done_head..done_tail
         * until collected; efd is readable while that list is not empty, and pollfd (an epoll
         * instance of efd and fd) is what the application polls.  -1 until first used. */
        int efd, pollfd;
        struct sn_call *done_head, *done_tail;
        struct sn_call *calls; /* every call not yet freed (for sn_conn_close) */
};

/* One registration as this process made it, kept to make it again on a new daemon: 24 bytes,
 * as what every registration costs (regtab.c).  trigger holds what the daemon accepted
 * (SN_TRIGGER_ALL, four bits). */
struct sn_reg {
        uint64_t ino;      /* the socket (its identity, with dev) */
        uint64_t key;
        int32_t fd;        /* the descriptor it was last registered through */
        uint16_t filter;
        uint8_t trigger : 4;
        uint8_t flags : 4; /* SN_REG_* */
        uint8_t dev;       /* its st_dev: a number in the table's devs[] */
};
#define SN_REG_USED 0x01u
#define SN_REG_MAX_DEVS 256u  /* distinct st_dev values a table can name */
#define SN_REG_GONE 0x02u     /* to be dropped by sn__regtab_sweep() */
#define SN_REG_DISABLED 0x04u
#define SN_REG_FIRED 0x08u    /* ONESHOT, its entry was dequeued: disarmed until enabled again */

/* The registrations of one port (regtab.c): reg[0..used) dense, found by socket identity
 * through the open-addressed index ix; callers hold conn->lock. */
struct sn_regtab {
        struct sn_reg *reg;
        uint32_t *ix;
        uint64_t *devs; /* the distinct st_dev values the records name (SN_REG_MAX_DEVS) */
        uint32_t used, regcap, ixcap, gone, ndevs; /* ixcap: 0 or a power of two */
        uint32_t noneshot; /* records with SN_TRIGGER_ONESHOT */
        /* The records by key, for marking fired ONESHOT registrations: made at the first
         * entry of a port that holds one (NULL until then, or when memory ran out). */
        uint32_t *kix;
        uint32_t kixcap, kgone;
};

/* Applies one registration item that the daemon accepted (op ENABLE, DISABLE or REMOVE of the
 * socket dev/ino through fd).  Returns 0 or -ENOMEM (the registration is then not replayed). */
int sn__regtab_apply(struct sn_regtab *t, const sn_registration_t *g, uint64_t dev,
                     uint64_t ino);
/* Drops the registration of a socket (no-op when absent). */
void sn__regtab_remove(struct sn_regtab *t, uint64_t dev, uint64_t ino);
/* Notes the entries a dequeue returned: an entry of a ONESHOT registration marks it fired
 * (SN_REG_FIRED), as the daemon disarmed it. */
void sn__regtab_fired(struct sn_regtab *t, const sn_entry_t *e, uint32_t n);
/* Drops every record flagged SN_REG_GONE (record numbers change). */
void sn__regtab_sweep(struct sn_regtab *t);
/* The st_dev of record s. */
uint64_t sn__regtab_dev(const struct sn_regtab *t, const struct sn_reg *s);
/* Frees everything; t is empty afterwards. */
void sn__regtab_clear(struct sn_regtab *t);
/* Bytes held by t. */
size_t sn__regtab_bytes(const struct sn_regtab *t);

/* A port object lives while its creator's reference or any call in progress holds it;
 * sn_port_close() closes it on the daemon at once and drops the creator's reference.  Until
 * then it is on conn->ports, and what it was made with is kept for a resume; id changes (under
 * send_lock and conn->lock) when a new daemon made it again. */
struct sn_port {
        sn_conn_t *conn;
        uint32_t id;
        int refs; /* atomic */
        struct sn_port *next; /* conn->ports, under conn->lock */
        bool listed;
        char *name;           /* NULL: unnamed */
        uint32_t concurrency; /* the daemon's effective value */
        uint32_t linger_ms;
        struct sn_regtab regs;
        /* Entries owed to the next dequeue after a resume (EDGE registrations whose condition
         * held, port.c), under conn->lock. */
        sn_entry_t *owed;
        uint32_t nowed;
};

sn_port_t *sn__port_ref(sn_port_t *port);
sn_port_t *sn__port_unref(sn_port_t *port);

/* Checks that conn may be used by this process: -EBADFD after fork, conn->lost_err
 * (-ECONNRESET, -EACCES) once lost for good. */
int sn__conn_usable(sn_conn_t *conn);
/* Whether a PROCESS_REPLY (header h) fits the call it answers: nsent results when its status
 * is 0 or ETIMEDOUT (else none or nsent), and at most max_entries entries. */
bool sn__process_reply_valid(const struct snw_header *h, uint32_t nsent, uint32_t max_entries);
/* Decodes the entries of a PROCESS reply h (checked by sn__process_reply_valid) at ent into
 * entries (room for max), and marks the ONESHOT registrations they disarmed in port's table, so
 * that a resume does not arm them again (rule L7); conn->lock held.  Returns how many. */
uint32_t sn__process_entries(sn_port_t *port, const struct snw_header *h, const uint8_t *ent,
                             sn_entry_t *entries, uint32_t max);
/* Decodes the entry at p into *out; returns the position after it.  Inside the library a
 * socket entry's overlapped holds its registration's handle (version 3; else 0), its top byte
 * the transport it came through (conn->gen), so that a handle from a lost daemon is known
 * stale; conn->lock held.  Every entry leaves through sn__entries_public() or
 * sn_port_process_ex(). */
const uint8_t *sn__entry_decode(const sn_conn_t *conn, const uint8_t *p, sn_entry_t *out);
/* Gives socket entries the overlapped value of the API: 0. */
void sn__entries_public(sn_entry_t *e, uint32_t n);

/* Whether handle h (from an entry, tagged by sn__entry_decode()) was issued by the daemon of
 * the current transport: then an item goes by handle.  Without a lock: a resume that comes
 * after this look makes the handle stale, which the daemon answers as for any stale one. */
static inline bool sn__handle_current(const sn_conn_t *c, uint64_t h)
{
        return h & SN_PROTO_HANDLE_MASK &&
               h >> 56 == (uint8_t)__atomic_load_n(&c->gen, __ATOMIC_RELAXED);
}
/* The daemon broke the protocol (a reply that cannot be trusted): the connection is lost, as
 * when the daemon goes away; every waiting and later call fails with -ECONNRESET.  Takes
 * conn->lock. */
void sn__conn_violation(sn_conn_t *conn);
/* Registers p (id assigned) before its request is sent. */
void sn__pending_add(sn_conn_t *conn, struct sn_pending *p, uint16_t expect, sn_reply_fn fn,
                     void *ctx);
/* The same for a submitted call's request (async and sending set before p is on the list). */
void sn__pending_add_call(sn_conn_t *conn, struct sn_pending *p, uint16_t expect,
                          sn_reply_fn fn, void *ctx);
/* Removes p if it is still waiting (after a failed send). */
void sn__pending_remove(sn_conn_t *conn, struct sn_pending *p);
/* Takes p off conn's pending list, if it is there (conn->lock held). */
void sn__pending_unlink(sn_conn_t *conn, struct sn_pending *p);
/* Sends one message; the caller holds send_lock (and read conn->gen under it, for
 * sn__conn_recover). */
int sn__send(sn_conn_t *conn, const uint8_t *buf, size_t len, const int *fds, unsigned nfds);
/* After sending on transport gen failed with err: when the daemon went away, waits for the
 * resume (making it if nobody reads).  Returns 0 when a new transport is in place (the message
 * never reached a daemon: send it again), else a negative errno for the call. */
int sn__conn_recover(sn_conn_t *conn, uint64_t gen, int err);
/* As sn__conn_recover, for a dequeue with a finite timeout: waits for the resume at most until
 * deadline (CLOCK_MONOTONIC, ms), then returns -ETIMEDOUT; the resume goes on behind it. */
int sn__conn_recover_until(sn_conn_t *conn, uint64_t gen, int err, int64_t deadline);
/* Takes send_lock, waiting at most until deadline (CLOCK_MONOTONIC, ms; -1: no bound) while a
 * resume holds it.  Returns 0 with send_lock held, or -ETIMEDOUT (the resume goes on). */
int sn__send_lock_until(sn_conn_t *conn, int64_t deadline);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t sn__mono_ms(void);
/* During a replay (see struct sn_conn_hooks): sends one request (its id is set here) with nfds
 * descriptors (borrowed) and reads its reply into conn's receive buffer.  Returns 0 when the
 * daemon answered: *ret_status is its status as a negative errno (0: success), and when the
 * reply is of type expect *ret_h, *ret_d and *ret_buf describe it (valid until the next
 * exchange).  A transport failure, or a reply that breaks the protocol, is a negative errno
 * (-ECONNRESET, -EBADMSG, -EPROTO, -ETIMEDOUT). */
int sn__conn_exchange(sn_conn_t *conn, uint8_t *buf, size_t len, const int *fds, unsigned nfds,
                      uint16_t expect, struct snw_header *ret_h, const struct sn_msg_desc **ret_d,
                      const uint8_t **ret_buf, int *ret_status);
/* During a replay: the ports numbered map[i][0] are now map[i][1] (entries stashed for them). */
void sn__conn_renumber(sn_conn_t *conn, const uint32_t (*map)[2], uint32_t n);
/* Waits for p's reply; returns p->status.  For a dequeue (p->salvage set), a cancellation
 * point (pthread_cancel) while it blocks: the cancelled caller's request is left to a heap copy that stashes the entries of its
 * late reply for the next call on the port (see sn__orphans_take); the connection stays usable.
 * A relay request (pure dequeue) returns -EINPROGRESS when entries were stashed for its port
 * meanwhile: its own request is left behind the same way, and the caller takes the stash. */
int sn__wait(sn_conn_t *conn, struct sn_pending *p);
/* Moves up to max entries stashed for port (by cancelled callers) to entries; returns how many
 * (0: none).  Reports the cancelled threads gone to the daemon (THREAD_EXIT). */
uint32_t sn__orphans_take(sn_conn_t *conn, uint32_t port, sn_entry_t *entries, uint32_t max);
/* One request with a body-only reply: sends, waits, returns status.  When the daemon ended
 * before the request reached it, it goes to the new one after a resume. */
int sn__call(sn_conn_t *conn, const uint8_t *buf, size_t len, uint16_t expect, sn_reply_fn fn,
             void *ctx);
/* A call of this thread on conn, request id, failed with -EDQUOT or had items refused with it:
 * kept (per thread) for sn_conn_refusal().  regs[sent[k]] went as the request's item k
 * (nsent of them; NULL, 0: a call without items). */
void sn__refusal_note(sn_conn_t *conn, uint32_t id, const sn_registration_t *regs,
                      const uint32_t *sent, uint32_t nsent);
/* sn__call() of a request whose body starts with a port's number: *port (a struct sn_port's
 * id, which a resume changes under send_lock) is written there as it is sent. */
int sn__call_on(sn_conn_t *conn, const uint32_t *port, const uint8_t *buf, size_t len,
                uint16_t expect, sn_reply_fn fn, void *ctx);
/* The calling thread's id for the concurrency rule; remembers that this thread waited on conn,
 * so that its exit is reported to the daemon (THREAD_EXIT). */
uint32_t sn__thread_id(sn_conn_t *conn);
/* A per-thread buffer of at least size bytes, valid until the thread's next call. */
uint8_t *sn__msgbuf(size_t size);

/* After a submitted call went out (async.c): makes sure the daemon rings the doorbell that
 * conn's pollfd watches when its reply comes, as nobody may be reading then. */
void sn__conn_arm(sn_conn_t *conn);
/* Reads, without blocking, every reply already received, when no other thread is reading
 * (conn.c).  Returns 0, or -ECONNRESET once the connection is lost. */
int sn__conn_pump(sn_conn_t *conn);
/* Descriptor cache (socket.c); callers hold conn->lock. */
struct sn_fdcache *sn__cache_get(sn_conn_t *conn, int fd);
int sn__cache_set(sn_conn_t *conn, int fd, uint64_t dev, uint64_t ino, uint32_t port);
void sn__cache_forget_port(sn_conn_t *conn, uint32_t port);
/* Forgets every descriptor (a resume renumbers the ports; port.c sets them again). */
void sn__cache_reset(sn_conn_t *conn);

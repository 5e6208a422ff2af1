/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * journal.h - the daemon's state as it runs: fixed-size records in a shared memfd, and the
 * descriptors they name kept in "boxes" (journal.c).  This layer knows records and descriptors,
 * nothing of what they mean: each object writes its own record (objects/persist.c, service/persist.c), one reader rebuilds
 * them all (restore.c).  The format is documented in docs/state.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#define JR_MAGIC "SNJRNL2\0"
/* 3: connection records and the header hold the limits handshakes announced (JR_CONN_LIMITS).
 * A daemon reads journals from JR_VERSION_OLDEST to JR_VERSION (a 2 has those fields zero);
 * one that reads only 2 refuses a 3, since it would hold kept connections to its own limits. */
#define JR_VERSION 3u
#define JR_VERSION_OLDEST 2u
#define JR_RECORD 128u
#define JR_DATA 64u
#define JR_BLOB_DATA 96u
/* At most this many descriptors travel in one box message (the kernel's SCM_MAX_FD is 253). */
#define JR_BOX_MAX 253u

enum jr_type {
        JR_FREE = 0,
        JR_CONN,
        JR_PORT,
        JR_NAME,   /* part of a port's name beyond what its record holds */
        JR_HANDLE,
        JR_REG,
        JR_POSTED,
        JR_WAIT,
        JR_LISTEN, /* the listening socket */
        JR_RUNNER, /* a thread that took entries and has not come back to wait */
        JR_RESULTS, /* a parked call's per-registration results beyond its record's */
        JR_OUT,    /* a part of a reply queued for a connection (struct jr_blob) */
        JR_STAGE,  /* a part of a multi-part call's items received so far (struct jr_blob) */
        JR_STAGED_FD, /* a descriptor received with a multi-part call's part */
        JR_RING,   /* one of a connection's ring descriptors (version 3) */
        JR_TYPES
};

/* A connection record's flags (u8b). */
enum {
        JR_CONN_STAGED = 1,  /* a multi-part call is being received */
        JR_CONN_DISCARD = 2, /* the remaining parts of call u32e are dropped */
        JR_CONN_HELLO = 4,   /* its handshake is done */
        JR_CONN_PASSED = 8,  /* it passed descriptors */
        JR_CONN_RING = 16,   /* it uses rings (JR_RING records, version 3) */
        JR_CONN_SELF = 32,   /* its HELLO had SELF: its threads are never read (port.c) */
};

/* Host byte order: the journal is read only by a daemon of the same machine. */
struct jr_header {
        char magic[8];
        uint32_t version, record_size;
        uint32_t capacity;
        uint32_t gen;          /* generation: one more at every start or re-exec */
        uint32_t next_port_id;
        uint32_t port_id_key[4];
        uint32_t pad;
        uint64_t next_conn_serial;
        uint64_t next_seq;     /* queue order of packets, and order of queued replies */
        uint32_t boxes;        /* boxes this generation made (snlive.GEN.0 ..) */
        uint32_t orderly;      /* 1: written by a re-exec or an orderly stop, nothing in flight */
        uint64_t reexecs;      /* re-executions since the first start (in journals of
                                * daemons before restores was kept: and restores) */
        /* The max_message and max_fds the image that wrote it ran with (0: not recorded, a
         * journal of a daemon before they were kept per connection). */
        uint32_t max_message, max_fds;
        uint64_t restores;       /* restores through the descriptor store since the first start */
        int64_t serving_since;   /* CLOCK_REALTIME seconds of that first start (0: not recorded) */
        uint8_t reserved[24];
};

struct jr_record {
        uint8_t type;
        uint8_t u8a, u8b, u8c;
        uint32_t u32a, u32b, u32c, u32d, u32e;
        uint64_t serial;   /* the connection (CONN, HANDLE, REG's creator, WAIT, ...) */
        uint64_t dev, ino; /* a socket's identity */
        uint64_t u64a, u64b;
        uint8_t data[JR_DATA];
};

/* A registration record's data: its packet's epoch at 0, its handle at 8, and at JR_REG_HELD
 * the EDGE conditions that held when the image left (a re-exec or an orderly stop), with 1 in
 * the byte after it when they were recorded. */
#define JR_REG_HELD 16u

/* A connection record's data: at JR_CONN_LIMITS the max_message and at JR_CONN_LIMITS + 4 the
 * max_fds its handshake announced (u32 each; 0: not recorded, before the handshake or in journals
 * of daemons before they were kept per connection). */
#define JR_CONN_LIMITS 0u

/* Bytes of a reply or a multi-part call, JR_BLOB_DATA at a time, chained by next. */
struct jr_blob {
        uint8_t type;
        uint8_t last; /* the last record of its message */
        uint16_t n;   /* bytes of data used */
        uint32_t next; /* the record holding the following bytes, 0: none */
        uint64_t serial;
        uint64_t seq; /* order among the connection's replies (JR_OUT) */
        uint32_t len; /* of the whole message */
        uint32_t off; /* of this record's data in it: 0 for the first */
        uint8_t data[JR_BLOB_DATA];
};

_Static_assert(sizeof(struct jr_record) == JR_RECORD, "journal record size");
_Static_assert(sizeof(struct jr_blob) == JR_RECORD, "journal blob size");
_Static_assert(sizeof(struct jr_header) == JR_RECORD, "journal header size");

struct journal;
struct box;

/* Which box holds an object's descriptor; the box moves it when it is rebuilt. */
struct box_ref {
        struct box *box;
};

/* A descriptor kept under a record of its own (one of a multi-part call's, until it becomes a
 * registration's: the registration then takes the record and the box over). */
struct jr_keep {
        uint32_t jr;
        struct box_ref box;
};

/*
 * journal_open: a new journal of generation gen, with boxes and kept in the service manager's
 * descriptor store when store is set (at most store_max entries), else in this process only.
 * 0 or a negative errno (logged by the caller).  journal_commit: stores the journal itself (after
 * its first records and boxes, so that a stored journal is complete).  journal_close: ends it;
 * forget also removes its entries from the store.
 */
int journal_open(struct journal **ret, struct event_base *base, uint32_t gen, bool store,
                 uint32_t store_max);
int journal_commit(struct journal *j);
void journal_close(struct journal *j, bool forget);
int journal_fd(const struct journal *j);
bool journal_stored(const struct journal *j);
struct jr_header *journal_header(struct journal *j);
/* A new zeroed record of type (its number), or 0 when none could be had (logged once). */
uint32_t journal_new(struct journal *j, uint8_t type);
struct jr_record *journal_rec(struct journal *j, uint32_t i);
struct jr_blob *journal_blob(struct journal *j, uint32_t i);
/* Frees record *i (and sets it to 0); nothing for 0. */
void journal_free(struct journal *j, uint32_t *i);
/* Frees a chain of blobs from *i. */
void journal_free_blobs(struct journal *j, uint32_t *i);
/* Writes len bytes as a chain of blobs of type for serial; returns its first record or 0. */
uint32_t journal_put_blobs(struct journal *j, uint8_t type, uint64_t serial, uint64_t seq,
                           const uint8_t *p, size_t len);
/* Keeps fd (named by record tag) in a box until journal_drop(ref). */
void journal_keep(struct journal *j, struct box_ref *ref, int fd, uint32_t tag);
void journal_drop(struct journal *j, struct box_ref *ref);
/* The descriptor of from is now to's, in the same box under the same tag. */
void journal_move(struct journal *j, struct box_ref *from, struct box_ref *to);
/* Sends what waits to be boxed; before any reply that reports a descriptor. */
void journal_flush(struct journal *j);
/* Entries of the store it takes. */
uint32_t journal_entries(const struct journal *j);
/* Whether it failed to keep something (a crash then loses sessions). */
bool journal_failed(const struct journal *j);

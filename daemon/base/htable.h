/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * htable.h - an intrusive chained hash table with keyed hashes (htable.c), for the daemon's
 * indexes whose keys clients choose (port names, port ids, handles).
 *
 * The table holds nodes embedded in the caller's objects, each with its full hash; it never
 * compares keys, the caller does while walking the nodes of one hash (htable_first(),
 * htable_next()).  Adding never fails: a table that cannot grow (out of memory) keeps its
 * buckets and its chains grow longer.  Hashes are SipHash-2-4 under a key drawn per table at
 * htable_init(), so no client can choose names that collide.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct htable_node {
        struct htable_node *next;
        uint64_t hash;
};

struct htable {
        /* mask + 1 chains; &one until the first growth (so a table is never moved) */
        struct htable_node **buckets;
        struct htable_node *one;
        uint64_t mask;
        uint64_t count;
        uint64_t key[2];
};

/* An empty table with a fresh key.  Never fails (without getrandom() the key is weaker). */
void htable_init(struct htable *t);
/* Frees the buckets; the nodes are the caller's and must be out of the table. */
void htable_deinit(struct htable *t);
/* The table's hash of len bytes of data, with a 64-bit value mixed in (a uid, a pointer). */
uint64_t htable_hash(const struct htable *t, uint64_t extra, const void *data, size_t len);
/* Adds n (not in the table) under hash (htable_hash() of its key). */
void htable_add(struct htable *t, struct htable_node *n, uint64_t hash);
/* Takes n (in the table) out. */
void htable_del(struct htable *t, struct htable_node *n);

/* The first node of hash, NULL for none; then htable_next() for the others of that hash. */
static inline struct htable_node *htable_first(const struct htable *t, uint64_t hash)
{
        struct htable_node *n = t->buckets[hash & t->mask];

        while (n && n->hash != hash)
                n = n->next;
        return n;
}

static inline struct htable_node *htable_next(const struct htable_node *n)
{
        uint64_t hash = n->hash;

        for (n = n->next; n && n->hash != hash; n = n->next)
                ;
        return (struct htable_node *)n;
}

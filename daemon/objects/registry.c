/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * registry.c - the daemon-wide map from a kernel socket (st_dev, st_ino) to its registration.
 *
 * A registration belongs to the socket, not to a descriptor number (rule L2): every copy of a
 * socket, however it reached the daemon, has the same identity, so "one port per socket" and
 * "re-register overwrites" are decided here.  Chained hashing with a power-of-two table that
 * doubles at load factor 1; lookups cost O(1) whatever the number of registrations.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/objects/registration.h"
#include "daemon/objects/registry.h"

static size_t bucket_of(const struct registry *r, uint64_t dev, uint64_t ino)
{
        uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ dev * 0xc2b2ae3d27d4eb4full;

        h ^= h >> 29;
        return (size_t)h & (r->nbuckets - 1);
}

int registry_init(struct registry *r)
{
        r->nbuckets = 64;
        r->count = 0;
        r->buckets = calloc(r->nbuckets, sizeof(*r->buckets));
        return r->buckets ? 0 : -ENOMEM;
}

void registry_deinit(struct registry *r)
{
        free(r->buckets);
        r->buckets = NULL;
        r->nbuckets = r->count = 0;
}

struct reg *registry_find(const struct registry *r, uint64_t dev, uint64_t ino)
{
        for (struct reg *g = r->buckets[bucket_of(r, dev, ino)]; g; g = g->hnext)
                if (g->ino == ino && g->dev == dev)
                        return g;
        return NULL;
}

static int grow(struct registry *r)
{
        struct registry n = { .nbuckets = r->nbuckets * 2, .count = r->count };

        n.buckets = calloc(n.nbuckets, sizeof(*n.buckets));
        if (!n.buckets)
                return -ENOMEM;
        for (size_t i = 0; i < r->nbuckets; i++) {
                struct reg *g = r->buckets[i], *next;

                for (; g; g = next) {
                        size_t b = bucket_of(&n, g->dev, g->ino);

                        next = g->hnext;
                        g->hnext = n.buckets[b];
                        n.buckets[b] = g;
                }
        }
        free(r->buckets);
        *r = n;
        return 0;
}

int registry_insert(struct registry *r, struct reg *reg)
{
        size_t b;

        /* A failed grow keeps the table valid, only longer chains. */
        if (r->count >= r->nbuckets && grow(r) < 0 && r->count >= r->nbuckets * 8)
                return -ENOMEM;
        b = bucket_of(r, reg->dev, reg->ino);
        reg->hnext = r->buckets[b];
        r->buckets[b] = reg;
        r->count++;
        return 0;
}

void registry_remove(struct registry *r, struct reg *reg)
{
        struct reg **pp = &r->buckets[bucket_of(r, reg->dev, reg->ino)];

        for (; *pp; pp = &(*pp)->hnext) {
                if (*pp == reg) {
                        *pp = reg->hnext;
                        reg->hnext = NULL;
                        r->count--;
                        return;
                }
        }
}

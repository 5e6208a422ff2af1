/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * regtab.c - the registrations of one port, as this process made them, so that a resume can
 * make them again on a new daemon (docs/reconnect.md).
 *
 * An open-addressed hash table keyed by the socket's identity (st_dev, st_ino), as the daemon
 * keys its registrations: registering the same socket through another descriptor modifies the
 * one registration.  Linear probing; a removed slot becomes a tombstone so that later keys of
 * its probe sequence stay reachable, and the table is rebuilt when tombstones and used slots
 * fill more than half of it.  Callers hold conn->lock.  Memory: 40 bytes a slot, between two
 * and four slots per registration.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "client/client.h"

static uint32_t slot_of(uint64_t dev, uint64_t ino, uint32_t cap)
{
        uint64_t h = (ino ^ (dev << 32 | dev >> 32)) * 0x9e3779b97f4a7c15ull;

        return (uint32_t)(h >> 32) & (cap - 1);
}

/* The slot of dev/ino, or NULL. */
static struct sn_reg *find(const struct sn_regtab *t, uint64_t dev, uint64_t ino)
{
        if (!t->cap)
                return NULL;
        for (uint32_t i = slot_of(dev, ino, t->cap);; i = (i + 1) & (t->cap - 1)) {
                struct sn_reg *s = &t->slot[i];

                if (!s->flags)
                        return NULL;
                if (s->flags & SN_REG_USED && s->dev == dev && s->ino == ino)
                        return s;
        }
}

/* Rehashes into cap slots (dropping tombstones). */
static int resize(struct sn_regtab *t, uint32_t cap)
{
        struct sn_reg *n = calloc(cap, sizeof(*n));

        if (!n)
                return -ENOMEM;
        for (uint32_t k = 0; k < t->cap; k++) {
                const struct sn_reg *s = &t->slot[k];
                uint32_t i;

                if (!(s->flags & SN_REG_USED))
                        continue;
                for (i = slot_of(s->dev, s->ino, cap); n[i].flags; i = (i + 1) & (cap - 1))
                        ;
                n[i] = *s;
        }
        free(t->slot);
        t->slot = n;
        t->cap = cap;
        t->gone = 0;
        return 0;
}

/* A slot for a new dev/ino (not in the table). */
static struct sn_reg *insert(struct sn_regtab *t, uint64_t dev, uint64_t ino)
{
        uint32_t i;

        if ((t->used + t->gone + 1) * 2 > t->cap) {
                uint32_t cap = t->cap ? t->cap : 8;

                while ((t->used + 1) * 2 > cap)
                        cap *= 2;
                if (resize(t, cap) < 0)
                        return NULL;
        }
        for (i = slot_of(dev, ino, t->cap); t->slot[i].flags & SN_REG_USED;
             i = (i + 1) & (t->cap - 1))
                ;
        if (t->slot[i].flags & SN_REG_GONE)
                t->gone--;
        t->used++;
        t->slot[i] = (struct sn_reg){ .dev = dev, .ino = ino, .flags = SN_REG_USED };
        return &t->slot[i];
}

void sn__regtab_remove(struct sn_regtab *t, uint64_t dev, uint64_t ino)
{
        struct sn_reg *s = find(t, dev, ino);

        if (!s)
                return;
        s->flags = SN_REG_GONE;
        t->used--;
        t->gone++;
}

int sn__regtab_apply(struct sn_regtab *t, const sn_registration_t *g, uint64_t dev,
                     uint64_t ino)
{
        struct sn_reg *s = find(t, dev, ino);

        switch (g->op) {
        case SN_OP_ENABLE:
                /* New, or modified: the daemon keeps one registration per socket and port,
                 * enabled again with the key, filter and trigger of the latest ENABLE. */
                if (!s && !(s = insert(t, dev, ino)))
                        return -ENOMEM;
                s->key = g->key;
                s->fd = g->fd;
                s->filter = g->filter;
                s->trigger = g->trigger;
                s->flags = SN_REG_USED;
                break;
        case SN_OP_DISABLE:
                if (s)
                        s->flags |= SN_REG_DISABLED;
                break;
        case SN_OP_REMOVE:
                sn__regtab_remove(t, dev, ino);
                break;
        }
        return 0;
}

void sn__regtab_clear(struct sn_regtab *t)
{
        free(t->slot);
        *t = (struct sn_regtab){ 0 };
}

size_t sn__regtab_bytes(const struct sn_regtab *t)
{
        return (size_t)t->cap * sizeof(struct sn_reg);
}

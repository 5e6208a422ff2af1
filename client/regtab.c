/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * regtab.c - the registrations of one port, as this process made them, so that a resume can
 * make them again on a new daemon (docs/reconnect.md).
 *
 * Keyed by the socket's identity (st_dev, st_ino), as the daemon keys its registrations:
 * registering the same socket through another descriptor modifies the one registration.
 *
 * Memory is what a registration costs a process that never resumes, so the layout is dense:
 * the records sit in one array (24 bytes each, removal moves the last one into the hole),
 * and an open-addressed index of 4-byte slots (record number + 1; linear probing, at most
 * half full counting tombstones) finds them.  A record names its device by a one-byte number
 * in the table's list of distinct devices rather than by the 8-byte st_dev: sockets all live
 * on the one sockfs device, but the list keeps any other st_dev exact instead of assuming it
 * (up to SN_REG_MAX_DEVS of them in one port; a registration beyond is not kept, as when
 * memory runs out).  The record array grows by a quarter, not double, for the same reason.
 * Callers hold conn->lock.  At 15000 registrations: 24 bytes of record and 9 of index each
 * (the bench's memory_client, with the descriptor cache and buffers: 61 bytes).
 *
 * A port that holds ONESHOT registrations also gets an index by key (kix, built at its first
 * entry, another 4-byte slot per record at most half full), since each entry it dequeues marks
 * its registration fired by key: without the index that was a scan of the whole table per
 * entry, which at 8000 one-shot registrations cost a re-arming server four fifths of its rate.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "client/client.h"

_Static_assert(SN_TRIGGER_ALL < 1u << 4, "struct sn_reg keeps the trigger in four bits");

#define IX_EMPTY 0u
#define IX_GONE UINT32_MAX

static uint32_t slot_of(uint64_t dev, uint64_t ino, uint32_t cap)
{
        uint64_t h = (ino ^ (dev << 32 | dev >> 32)) * 0x9e3779b97f4a7c15ull;

        return (uint32_t)(h >> 32) & (cap - 1);
}

uint64_t sn__regtab_dev(const struct sn_regtab *t, const struct sn_reg *s)
{
        return t->devs[s->dev];
}

/* The number of dev in t->devs, added when new; -ENOMEM. */
static int64_t dev_number(struct sn_regtab *t, uint64_t dev, bool add)
{
        uint64_t *n;

        for (uint32_t i = 0; i < t->ndevs; i++)
                if (t->devs[i] == dev)
                        return i;
        if (!add)
                return -ENOENT;
        if (t->ndevs == SN_REG_MAX_DEVS)
                return -ENOMEM;
        n = realloc(t->devs, ((size_t)t->ndevs + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        t->devs = n;
        t->devs[t->ndevs] = dev;
        return t->ndevs++;
}

/* The index slot that holds the record of dev/ino, or NULL. */
static uint32_t *find_slot(const struct sn_regtab *t, uint64_t dev, uint64_t ino)
{
        int64_t dn;

        if (!t->ixcap)
                return NULL;
        for (dn = 0; dn < t->ndevs && t->devs[dn] != dev; dn++)
                ;
        if (dn == t->ndevs)
                return NULL;
        for (uint32_t i = slot_of(dev, ino, t->ixcap);; i = (i + 1) & (t->ixcap - 1)) {
                uint32_t v = t->ix[i];
                const struct sn_reg *s;

                if (v == IX_EMPTY)
                        return NULL;
                if (v == IX_GONE)
                        continue;
                s = &t->reg[v - 1];
                if (s->ino == ino && s->dev == dn)
                        return &t->ix[i];
        }
}

/* Rebuilds the index with cap slots (dropping tombstones). */
static int reindex(struct sn_regtab *t, uint32_t cap)
{
        uint32_t *n = calloc(cap, sizeof(*n));

        if (!n)
                return -ENOMEM;
        for (uint32_t k = 0; k < t->used; k++) {
                const struct sn_reg *s = &t->reg[k];
                uint32_t i;

                for (i = slot_of(t->devs[s->dev], s->ino, cap); n[i] != IX_EMPTY;
                     i = (i + 1) & (cap - 1))
                        ;
                n[i] = k + 1;
        }
        free(t->ix);
        t->ix = n;
        t->ixcap = cap;
        t->gone = 0;
        return 0;
}

static uint32_t key_slot(uint64_t key, uint32_t cap)
{
        return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* Rebuilds the key index with cap slots; without memory it is dropped (sn__regtab_fired()
 * then scans, and makes it again). */
static void kreindex(struct sn_regtab *t, uint32_t cap)
{
        uint32_t *n = calloc(cap, sizeof(*n));

        free(t->kix);
        t->kix = n;
        t->kixcap = n ? cap : 0;
        t->kgone = 0;
        for (uint32_t k = 0; n && k < t->used; k++) {
                uint32_t i;

                for (i = key_slot(t->reg[k].key, cap); n[i] != IX_EMPTY; i = (i + 1) & (cap - 1))
                        ;
                n[i] = k + 1;
        }
}

/* Adds record k (its key set) to the key index, if there is one. */
static void kix_add(struct sn_regtab *t, uint32_t k)
{
        uint32_t i;

        if (!t->kix)
                return;
        if ((t->used + t->kgone) * 2 > t->kixcap) {
                uint32_t cap = t->kixcap;

                while (t->used * 2 > cap)
                        cap *= 2;
                kreindex(t, cap); /* record k is in t->used: indexed there */
                return;
        }
        for (i = key_slot(t->reg[k].key, t->kixcap); t->kix[i] != IX_EMPTY && t->kix[i] != IX_GONE;
             i = (i + 1) & (t->kixcap - 1))
                ;
        if (t->kix[i] == IX_GONE)
                t->kgone--;
        t->kix[i] = k + 1;
}

/* The key index's slot of record k (NULL without an index). */
static uint32_t *kix_of(struct sn_regtab *t, uint32_t k)
{
        if (!t->kix)
                return NULL;
        for (uint32_t i = key_slot(t->reg[k].key, t->kixcap);; i = (i + 1) & (t->kixcap - 1)) {
                if (t->kix[i] == k + 1)
                        return &t->kix[i];
                if (t->kix[i] == IX_EMPTY)
                        return NULL; /* cannot happen: every record is indexed */
        }
}

/* A record for a new dev/ino (not in the table). */
static struct sn_reg *insert(struct sn_regtab *t, uint64_t dev, uint64_t ino)
{
        int64_t dn = dev_number(t, dev, true);
        uint32_t i;

        if (dn < 0)
                return NULL;
        if (t->used == t->regcap) {
                uint32_t cap = t->regcap + t->regcap / 4 + 8;
                struct sn_reg *n;

                if (cap < t->regcap || (uint64_t)cap * 2 > UINT32_MAX)
                        return NULL;
                n = realloc(t->reg, (size_t)cap * sizeof(*n));
                if (!n)
                        return NULL;
                t->reg = n;
                t->regcap = cap;
        }
        if ((t->used + t->gone + 1) * 2 > t->ixcap) {
                uint32_t cap = t->ixcap ? t->ixcap : 16;

                while ((t->used + 1) * 2 > cap)
                        cap *= 2;
                if (reindex(t, cap) < 0)
                        return NULL;
        }
        for (i = slot_of(dev, ino, t->ixcap); t->ix[i] != IX_EMPTY && t->ix[i] != IX_GONE;
             i = (i + 1) & (t->ixcap - 1))
                ;
        if (t->ix[i] == IX_GONE)
                t->gone--;
        t->ix[i] = t->used + 1;
        t->reg[t->used] = (struct sn_reg){ .dev = (uint8_t)dn, .ino = ino, .flags = SN_REG_USED };
        return &t->reg[t->used++];
}

/* Takes the record that *slot names out: the last record moves into its place. */
static void take_out(struct sn_regtab *t, uint32_t *slot)
{
        uint32_t k = *slot - 1, last = t->used - 1;
        uint32_t *ks = kix_of(t, k);

        *slot = IX_GONE;
        t->gone++;
        if (ks) {
                *ks = IX_GONE;
                t->kgone++;
        }
        if (k != last) {
                struct sn_reg *m = &t->reg[last];
                uint32_t *ms = find_slot(t, t->devs[m->dev], m->ino);

                *ms = k + 1;
                if ((ks = kix_of(t, last)))
                        *ks = k + 1;
                t->reg[k] = *m;
        }
        t->used--;
}

/* Before take_out() (the record of *slot). */
static void forget_oneshot(struct sn_regtab *t, const uint32_t *slot)
{
        if (t->reg[*slot - 1].trigger & SN_TRIGGER_ONESHOT)
                t->noneshot--;
}

void sn__regtab_remove(struct sn_regtab *t, uint64_t dev, uint64_t ino)
{
        uint32_t *slot = find_slot(t, dev, ino);

        if (slot) {
                forget_oneshot(t, slot);
                take_out(t, slot);
        }
}

void sn__regtab_sweep(struct sn_regtab *t)
{
        /* From the end: a record moved into a hole has been looked at already. */
        for (uint32_t k = t->used; k-- > 0;) {
                const struct sn_reg *s = &t->reg[k];

                if (s->flags & SN_REG_GONE) {
                        uint32_t *slot = find_slot(t, t->devs[s->dev], s->ino);

                        forget_oneshot(t, slot);
                        take_out(t, slot);
                }
        }
}

int sn__regtab_apply(struct sn_regtab *t, const sn_registration_t *g, uint64_t dev,
                     uint64_t ino)
{
        uint32_t *slot = find_slot(t, dev, ino);
        struct sn_reg *s = slot ? &t->reg[*slot - 1] : NULL;

        switch (g->op) {
        case SN_OP_ENABLE:
                /* New, or modified: the daemon keeps one registration per socket and port,
                 * enabled again with the filter and trigger of the latest ENABLE and the key of
                 * the first (docs/semantics.md, rule 4: a later key is ignored). */
                if (!s) {
                        if (!(s = insert(t, dev, ino)))
                                return -ENOMEM;
                        s->key = g->key;
                        kix_add(t, (uint32_t)(s - t->reg));
                } else if (s->trigger & SN_TRIGGER_ONESHOT) {
                        t->noneshot--;
                }
                if (g->trigger & SN_TRIGGER_ONESHOT)
                        t->noneshot++;
                s->fd = g->fd;
                s->filter = g->filter;
                s->trigger = g->trigger;
                s->flags = SN_REG_USED; /* armed: neither disabled nor fired */
                break;
        case SN_OP_DISABLE:
                if (s)
                        s->flags |= SN_REG_DISABLED;
                break;
        case SN_OP_REMOVE:
                if (slot) {
                        forget_oneshot(t, slot);
                        take_out(t, slot);
                }
                break;
        }
        return 0;
}

void sn__regtab_fired(struct sn_regtab *t, const sn_entry_t *e, uint32_t n)
{
        if (!t->noneshot || !t->used)
                return;
        if (!t->kix) {
                uint32_t cap = 16;

                while (t->used * 2 > cap)
                        cap *= 2;
                kreindex(t, cap);
        }
        for (uint32_t i = 0; i < n; i++) {
                struct sn_reg *hit = NULL;
                uint32_t seen = 0;

                if (e[i].kind != SN_ENTRY_SOCKET || e[i].events & SN_EVENT_REMOVE)
                        continue;
                /* An entry names its registration by key alone.  With several armed ONESHOT
                 * registrations of one key it cannot be told which fired: they stay armed (a
                 * resume then reports them once more: at least once). */
                for (uint32_t k = 0, j = t->kix ? key_slot(e[i].key, t->kixcap) : 0;
                     seen < 2 && (t->kix ? t->kix[j] != IX_EMPTY : k < t->used);
                     k++, j = t->kix ? (j + 1) & (t->kixcap - 1) : 0) {
                        uint32_t v = t->kix ? t->kix[j] : k + 1;
                        struct sn_reg *s;

                        if (v == IX_GONE)
                                continue;
                        s = &t->reg[v - 1];
                        if (s->key == e[i].key && s->trigger & SN_TRIGGER_ONESHOT &&
                            !(s->flags & (SN_REG_DISABLED | SN_REG_FIRED))) {
                                hit = s;
                                seen++;
                        }
                }
                if (seen == 1)
                        hit->flags |= SN_REG_FIRED;
        }
}

void sn__regtab_clear(struct sn_regtab *t)
{
        free(t->reg);
        free(t->ix);
        free(t->devs);
        free(t->kix);
        *t = (struct sn_regtab){ 0 };
}

size_t sn__regtab_bytes(const struct sn_regtab *t)
{
        return (size_t)t->regcap * sizeof(struct sn_reg) +
               ((size_t)t->ixcap + t->kixcap) * sizeof(uint32_t) +
               (size_t)t->ndevs * sizeof(uint64_t);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * htable.c - the intrusive hash table of htable.h: a power-of-two array of chains that doubles
 * at load factor 1, and SipHash-2-4 (Aumasson and Bernstein) as its keyed hash.
 *
 * A doubling moves every node once, so n additions cost O(n) all together; a lookup walks
 * one chain, about one node.  A growth that finds no memory is skipped and tried again at the
 * next doubling point: the table stays correct, only slower.
 */
#include "config.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/htable.h"

void htable_init(struct htable *t)
{
        memset(t, 0, sizeof(*t));
        t->buckets = &t->one;
        if (getrandom(t->key, sizeof(t->key), GRND_NONBLOCK) != (ssize_t)sizeof(t->key)) {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                t->key[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
                t->key[1] = (uint64_t)(uintptr_t)t ^ (uint64_t)ts.tv_sec << 32;
        }
}

void htable_deinit(struct htable *t)
{
        if (t->buckets != &t->one)
                free(t->buckets);
        t->buckets = &t->one;
        t->one = NULL;
        t->mask = t->count = 0;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
        do {                                                                                       \
                v0 += v1;                                                                          \
                v1 = ROTL(v1, 13);                                                                 \
                v1 ^= v0;                                                                          \
                v0 = ROTL(v0, 32);                                                                 \
                v2 += v3;                                                                          \
                v3 = ROTL(v3, 16);                                                                 \
                v3 ^= v2;                                                                          \
                v0 += v3;                                                                          \
                v3 = ROTL(v3, 21);                                                                 \
                v3 ^= v0;                                                                          \
                v2 += v1;                                                                          \
                v1 = ROTL(v1, 17);                                                                 \
                v1 ^= v2;                                                                          \
                v2 = ROTL(v2, 32);                                                                 \
        } while (0)

/* SipHash-2-4 of the 8 bytes of extra followed by len bytes of data. */
uint64_t htable_hash(const struct htable *t, uint64_t extra, const void *data, size_t len)
{
        uint64_t v0 = 0x736f6d6570736575ull ^ t->key[0], v1 = 0x646f72616e646f6dull ^ t->key[1];
        uint64_t v2 = 0x6c7967656e657261ull ^ t->key[0], v3 = 0x7465646279746573ull ^ t->key[1];
        const uint8_t *p = data;
        uint64_t total = 8 + (uint64_t)len, m, last;
        size_t i;

        /* The first word is extra itself. */
        v3 ^= extra;
        SIPROUND;
        SIPROUND;
        v0 ^= extra;
        for (i = 0; i + 8 <= len; i += 8) {
                memcpy(&m, p + i, 8);
                m = le64toh(m);
                v3 ^= m;
                SIPROUND;
                SIPROUND;
                v0 ^= m;
        }
        last = total << 56;
        for (size_t k = 0; i + k < len; k++)
                last |= (uint64_t)p[i + k] << (8 * k);
        v3 ^= last;
        SIPROUND;
        SIPROUND;
        v0 ^= last;
        v2 ^= 0xff;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        return v0 ^ v1 ^ v2 ^ v3;
}

/* Doubles the buckets when the nodes outnumber them; skipped when out of memory. */
static void grow(struct htable *t)
{
        uint64_t n = (t->mask + 1) * 2;
        struct htable_node **b;

        if (n > (UINT64_C(1) << 40) || !(b = calloc((size_t)n, sizeof(*b))))
                return;
        for (uint64_t i = 0; i <= t->mask; i++)
                for (struct htable_node *x = t->buckets[i], *next; x; x = next) {
                        next = x->next;
                        x->next = b[x->hash & (n - 1)];
                        b[x->hash & (n - 1)] = x;
                }
        if (t->buckets != &t->one)
                free(t->buckets);
        t->buckets = b;
        t->mask = n - 1;
}

void htable_add(struct htable *t, struct htable_node *n, uint64_t hash)
{
        struct htable_node **head;

        if (t->count >= t->mask + 1)
                grow(t);
        head = &t->buckets[hash & t->mask];
        n->hash = hash;
        n->next = *head;
        *head = n;
        t->count++;
}

void htable_del(struct htable *t, struct htable_node *n)
{
        struct htable_node **pp = &t->buckets[n->hash & t->mask];

        while (*pp && *pp != n)
                pp = &(*pp)->next;
        if (*pp) {
                *pp = n->next;
                t->count--;
        }
        n->next = NULL;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * world.c - what the objects ask of their shared context (struct server, world.h): the slots
 * that name registrations in epoll items, the refusal log, the counters, the memory-trim
 * account, and whether a socket is a connection to this daemon.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/log.h"
#include "daemon/base/counters.h"
#include "daemon/objects/registration.h"
#include "daemon/objects/session.h"
#include "daemon/objects/world.h"
#include "proto/limits.h"

bool server_is_own_connection(const struct server *srv, int fd)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);

        memset(&sa, 0, sizeof(sa));
        if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX)
                return false;
        return srv->listen_addrlen > sizeof(sa_family_t) && len == srv->listen_addrlen &&
               !memcmp(&sa, &srv->listen_addr, len);
}

/* The value of the limit called name in force (its option's field), 0 when it has none. */
static uint64_t limit_value(struct server *srv, const char *name)
{
        for (size_t i = 0; i < settings_nlimit_options; i++)
                if (!strcmp(settings_limit_options[i].name, name))
                        return *settings_limit_field(&srv->limits, &settings_limit_options[i]);
        return 0;
}

/* Keeps s's refusal by limit for LIMIT_INFO: a refusal of the same request by the same limit
 * as the newest record extends it when its item is the record's last one plus one (a run of
 * items of a PROCESS call, all refused), else it takes the ring's next record.  Cheap: a
 * refusal is rare and already logged. */
static void session_note_refusal(struct server *srv, struct session *s, const char *limit)
{
        uint16_t n = sn_limit_number(limit);
        struct refusal *r = s->nrefused ? &s->refusals[(s->nrefused - 1) % SESSION_REFUSALS]
                                        : NULL;

        if (r && r->request == s->req_id && r->limit == n && s->req_item != SESSION_NO_ITEM &&
            r->first != SESSION_NO_ITEM && s->req_item == r->last + 1) {
                r->last = s->req_item;
        } else {
                r = &s->refusals[s->nrefused % SESSION_REFUSALS];
                r->request = s->req_id;
                r->first = r->last = s->req_item;
                r->limit = n;
                r->scope = sn_limit_scope_of(n);
                r->value = limit_value(srv, limit);
                if (++s->nrefused == 0)
                        s->nrefused = SESSION_REFUSALS; /* wrapped: still "all kept were made" */
        }
}

void server_log_refusal(struct server *srv, struct session *s, uid_t uid, const char *limit)
{
        unsigned long long dropped;

        /* Counted by the limit's index in the option table; every name is an option's. */
        for (size_t i = 0; i < settings_nlimit_options && i < SN_COUNTED_LIMITS; i++)
                if (!strcmp(settings_limit_options[i].name, limit)) {
                        srv->counters.refusals[i]++;
                        break;
                }
        if (s)
                session_note_refusal(srv, s, limit);
        if (!sn_ratelimit_ok(&srv->refuse_log, &dropped))
                return;
        if (s)
                log_notice("connection %llu (pid %d, uid %u): refused by --%s",
                           (unsigned long long)s->serial, (int)s->pid, (unsigned)uid, limit);
        else
                log_notice("refused a connection of uid %u: --%s", (unsigned)uid, limit);
        if (dropped)
                log_notice("%llu refusal line(s) suppressed", dropped);
}

/* Slot generations run from 1 to this (24 bits), then wrap to 1. */
#define SLOT_GEN_LIMIT 0xffffffu
/* slot_next of a slot that is not on the free chain (taken from it).  A slot claimed by a
 * restore stays on the chain, taken, until the chain reaches it: freeing it before must not
 * put it on the chain a second time, which would close the chain into a loop. */
#define SLOT_OFF_CHAIN 0xfffffffeu
/* Slots a restore may claim: far below where slots_grow() would overflow or reach
 * SLOT_OFF_CHAIN. */
#define SLOT_CLAIM_LIMIT 0x40000000u

static int slots_grow(struct server *srv, uint32_t want)
{
        uint32_t n = srv->nslots ? srv->nslots : 256;
        struct reg **slots;
        uint32_t *next, *gen;

        while (n < want)
                n *= 2;
        slots = realloc(srv->slots, n * sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        srv->slots = slots;
        next = realloc(srv->slot_next, n * sizeof(*next));
        if (!next)
                return -ENOMEM;
        srv->slot_next = next;
        gen = realloc(srv->slot_gen, n * sizeof(*gen));
        if (!gen)
                return -ENOMEM;
        srv->slot_gen = gen;
        /* New slots go on the free chain, lowest first. */
        for (uint32_t i = n; i-- > srv->nslots;) {
                slots[i] = NULL;
                gen[i] = (srv->slot_gen_seed + i) % SLOT_GEN_LIMIT + 1;
                next[i] = srv->free_slot;
                srv->free_slot = i;
        }
        srv->nslots = n;
        return 0;
}

/* Takes slot i for g when the restore asked for it (srv->claim_handle) and it is free: the
 * handles a client holds stay valid.  A slot claimed this way may still be on the free chain;
 * server_slot_take() passes over the taken slots it finds there. */
static bool slot_claim(struct server *srv, struct reg *g)
{
        uint64_t h = srv->claim_handle;
        uint32_t i = (uint32_t)h, gen = (uint32_t)(h >> 32);

        srv->claim_handle = 0;
        if (!h || h >> 56 || !gen || gen > SLOT_GEN_LIMIT || i >= SLOT_CLAIM_LIMIT)
                return false;
        if (i >= srv->nslots && slots_grow(srv, i + 1) < 0)
                return false;
        if (srv->slots[i])
                return false;
        srv->slots[i] = g;
        srv->slot_gen[i] = gen;
        g->slot = i;
        return true;
}

int server_slot_take(struct server *srv, struct reg *g)
{
        uint32_t i;

        if (srv->claim_handle && slot_claim(srv, g))
                return 0;
        do {
                if (srv->free_slot == UINT32_MAX && slots_grow(srv, srv->nslots + 1) < 0)
                        return -ENOMEM;
                i = srv->free_slot;
                srv->free_slot = srv->slot_next[i];
                srv->slot_next[i] = SLOT_OFF_CHAIN;
        } while (srv->slots[i]);
        srv->slots[i] = g;
        g->slot = i;
        return 0;
}

void server_slot_release(struct server *srv, struct reg *g)
{
        srv->slots[g->slot] = NULL;
        /* Handles of the registration that held it are stale from now on. */
        srv->slot_gen[g->slot] = srv->slot_gen[g->slot] % SLOT_GEN_LIMIT + 1;
        if (srv->slot_next[g->slot] != SLOT_OFF_CHAIN)
                return; /* claimed by a restore, and still on the chain: found there */
        srv->slot_next[g->slot] = srv->free_slot;
        srv->free_slot = g->slot;
}

void server_note_freed(struct server *srv, size_t bytes)
{
        srv->freed_since_trim += bytes;
}

void server_count_call_error(struct server *srv, uint32_t err)
{
        srv->counters.call_errors[err < SN_ERRNO_MAX ? err : 0]++;
}

void server_count_entry_error(struct server *srv, uint32_t err)
{
        srv->counters.entry_errors[err < SN_ERRNO_MAX ? err : 0]++;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-slots.c - the daemon's registration slots (world.c): the free chain, the generations
 * that make handles, and the slots a restore claims back (srv->claim_handle).  Whatever mix of
 * claims, takes and releases: a slot holds one registration at a time, the free chain holds
 * each free slot once and ends, and a handle names its registration until it is released,
 * never after.
 */
#include <stdlib.h>

#include <check.h>

#include "tests/helpers/daemon.h"

#include "daemon/objects/registration.h"
#include "daemon/objects/world.h"

static struct server *slots_new(uint32_t seed)
{
        struct server *srv = calloc(1, sizeof(*srv));

        ck_assert_ptr_nonnull(srv);
        srv->free_slot = UINT32_MAX;
        srv->slot_gen_seed = seed;
        return srv;
}

static void slots_free(struct server *srv)
{
        free(srv->slots);
        free(srv->slot_next);
        free(srv->slot_gen);
        free(srv);
}

/* The free chain ends within nslots steps, holds only free slots, each once, and every free
 * slot: else it loops, or a slot is lost or given twice. */
static void check_chain(const struct server *srv)
{
        uint8_t *seen = calloc(srv->nslots ? srv->nslots : 1, 1);
        uint32_t nfree = 0, nchain = 0;

        ck_assert_ptr_nonnull(seen);
        for (uint32_t i = srv->free_slot; i != UINT32_MAX; i = srv->slot_next[i]) {
                ck_assert_uint_lt(i, srv->nslots);
                ck_assert_msg(!seen[i], "slot %u is on the free chain twice", i);
                seen[i] = 1;
                ck_assert_uint_le(++nchain, srv->nslots);
        }
        /* A slot claimed by a restore may be on the chain while taken; a free one must be. */
        for (uint32_t i = 0; i < srv->nslots; i++)
                if (!srv->slots[i]) {
                        nfree++;
                        ck_assert_msg(seen[i], "free slot %u is not on the free chain", i);
                }
        ck_assert_uint_ge(nchain, nfree);
        free(seen);
}

static uint64_t take(struct server *srv, struct reg *g, uint64_t claim)
{
        srv->claim_handle = claim;
        ck_assert_int_eq(server_slot_take(srv, g), 0);
        ck_assert_uint_eq(srv->claim_handle, 0);
        ck_assert_ptr_eq(srv->slots[g->slot], g);
        ck_assert_ptr_eq(server_handle_reg(srv, server_reg_handle(srv, g->slot)), g);
        return server_reg_handle(srv, g->slot);
}

/* A restore's claims, then registrations coming and going: the slots claimed back are freed
 * while still on the chain, and taken again. */
START_TEST(test_claims_then_churn)
{
        enum { N = 600, ROUNDS = 20000 };
        struct server *srv = slots_new(12345);
        struct reg *g = calloc(N, sizeof(*g));
        uint64_t *h = calloc(N, sizeof(*h));
        bool *live = calloc(N, sizeof(*live));
        uint32_t rnd = 1;

        ck_assert(g && h && live);
        /* Claimed slots scattered over three times what the chain first holds, in no order. */
        for (uint32_t k = 0; k < N / 2; k++) {
                uint32_t slot = (k * 389u) % 1000u;
                uint64_t claim = (uint64_t)(k % 0xffffffu + 1) << 32 | slot;

                h[k] = take(srv, &g[k], claim);
                ck_assert_uint_eq(h[k], claim);
                live[k] = true;
        }
        check_chain(srv);
        for (uint32_t round = 0; round < ROUNDS; round++) {
                uint32_t k;

                rnd = rnd * 1103515245u + 12345u;
                k = (rnd >> 8) % N;
                if (live[k]) {
                        server_slot_release(srv, &g[k]);
                        ck_assert_ptr_null(server_handle_reg(srv, h[k]));
                        live[k] = false;
                } else {
                        h[k] = take(srv, &g[k], 0);
                        live[k] = true;
                }
                if (round % 97 == 0)
                        check_chain(srv);
        }
        check_chain(srv);
        /* Every live handle still names its own registration, and no two are the same. */
        for (uint32_t k = 0; k < N; k++) {
                if (!live[k])
                        continue;
                ck_assert_ptr_eq(server_handle_reg(srv, h[k]), &g[k]);
                for (uint32_t j = 0; j < k; j++)
                        ck_assert(!live[j] || h[j] != h[k]);
        }
        free(live);
        free(h);
        free(g);
        slots_free(srv);
}
END_TEST

/* The journal's word is not trusted: a handle claimed twice, a generation of 0 or beyond 24
 * bits, a top byte, a slot far out: each registration still gets a slot of its own. */
START_TEST(test_bad_claims)
{
        struct server *srv = slots_new(0);
        struct reg g[8];
        const uint64_t claims[8] = {
                1ull << 32 | 5, 1ull << 32 | 5, 5, 0x1000000ull << 32 | 6,
                1ull << 56 | 1ull << 32 | 7, 1ull << 32 | 0x40000000u, 1ull << 32 | 0xfffffffeu,
                1ull << 32 | UINT32_MAX,
        };

        for (int i = 0; i < 8; i++) {
                take(srv, &g[i], claims[i]);
                for (int j = 0; j < i; j++)
                        ck_assert_uint_ne(g[i].slot, g[j].slot);
        }
        ck_assert_uint_eq(g[0].slot, 5);
        ck_assert_uint_lt(srv->nslots, 1u << 20);
        check_chain(srv);
        for (int i = 0; i < 8; i++)
                server_slot_release(srv, &g[i]);
        check_chain(srv);
        slots_free(srv);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("slots");
        TCase *tc = tcase_create("slots");

        tcase_set_timeout(tc, 20);
        tcase_add_test(tc, test_claims_then_churn);
        tcase_add_test(tc, test_bad_claims);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

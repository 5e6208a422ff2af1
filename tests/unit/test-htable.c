/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-htable.c - the daemon's intrusive hash table (daemon/base/htable.c): the hash is
 * SipHash-2-4 (the reference vectors of its paper, key 00..0f), lookups by hash after growth,
 * removal from chains, nodes of equal hash all found, and a table whose key the caller did not
 * choose spreads names that differ only at their end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "tests/helpers/daemon.h"

#include "daemon/base/htable.h"

struct item {
        struct htable_node node;
        int value;
};

/* A table under the paper's key: bytes 00..0f. */
static void reference_key(struct htable *t)
{
        htable_init(t);
        t->key[0] = 0x0706050403020100ull;
        t->key[1] = 0x0f0e0d0c0b0a0908ull;
}

START_TEST(test_siphash_vectors)
{
        static const uint8_t msg[15] = { 8, 9, 10, 11, 12, 13, 14 };
        struct htable t;

        reference_key(&t);
        /* The 8-byte word first: message 00..07, then 00..0e (msg holds bytes 08..0e). */
        ck_assert_uint_eq(htable_hash(&t, 0x0706050403020100ull, NULL, 0), 0x93f5f5799a932462ull);
        ck_assert_uint_eq(htable_hash(&t, 0x0706050403020100ull, msg, 7), 0xa129ca6149be45e5ull);
        /* Another key, another hash. */
        t.key[1] ^= 1;
        ck_assert_uint_ne(htable_hash(&t, 0x0706050403020100ull, msg, 7), 0xa129ca6149be45e5ull);
        htable_deinit(&t);
}
END_TEST

static struct item *find(const struct htable *t, uint64_t hash, int value)
{
        for (struct htable_node *n = htable_first(t, hash); n; n = htable_next(n)) {
                struct item *it = (struct item *)n;

                if (it->value == value)
                        return it;
        }
        return NULL;
}

START_TEST(test_add_find_del)
{
        enum { N = 20000 };
        struct item *v = calloc(N, sizeof(*v));
        struct htable t;

        htable_init(&t);
        for (int i = 0; i < N; i++) {
                v[i].value = i;
                htable_add(&t, &v[i].node, htable_hash(&t, (uint64_t)i, NULL, 0));
        }
        ck_assert_uint_eq(t.count, N);
        ck_assert_uint_ge(t.mask + 1, N / 2); /* grew with the load */
        for (int i = 0; i < N; i++)
                ck_assert_ptr_eq(find(&t, htable_hash(&t, (uint64_t)i, NULL, 0), i), &v[i]);
        for (int i = 0; i < N; i += 2)
                htable_del(&t, &v[i].node);
        ck_assert_uint_eq(t.count, N / 2);
        for (int i = 0; i < N; i++)
                ck_assert_ptr_eq(find(&t, htable_hash(&t, (uint64_t)i, NULL, 0), i),
                                 i % 2 ? &v[i] : NULL);
        for (int i = 1; i < N; i += 2)
                htable_del(&t, &v[i].node);
        ck_assert_uint_eq(t.count, 0);
        htable_deinit(&t);
        free(v);
}
END_TEST

/* Nodes under one hash (as two keys that collide would be): each is found, in any order, and
 * each can go. */
START_TEST(test_equal_hashes)
{
        enum { N = 50 };
        struct item v[N];
        struct htable t;

        htable_init(&t);
        for (int i = 0; i < N; i++) {
                v[i].value = i;
                htable_add(&t, &v[i].node, 42);
        }
        for (int i = 0; i < N; i++)
                ck_assert_ptr_eq(find(&t, 42, i), &v[i]);
        htable_del(&t, &v[N / 2].node);
        ck_assert_ptr_null(find(&t, 42, N / 2));
        for (int i = 0; i < N; i++)
                if (i != N / 2)
                        ck_assert_ptr_eq(find(&t, 42, i), &v[i]);
        ck_assert_ptr_null(htable_first(&t, 43));
        htable_deinit(&t);
}
END_TEST

/* 16,000 names of 255 bytes alike but for their last 11, as sn-restore makes them: no chain
 * is long. */
START_TEST(test_long_names_spread)
{
        enum { N = 16000 };
        struct item *v = calloc(N, sizeof(*v));
        uint64_t longest = 0;
        struct htable t;
        char name[256];

        htable_init(&t);
        memset(name, 'p', 255);
        name[255] = 0;
        for (int i = 0; i < N; i++) {
                snprintf(name + 244, 12, "-%010d", i);
                v[i].value = i;
                htable_add(&t, &v[i].node, htable_hash(&t, 1000, name, 255));
        }
        for (uint64_t b = 0; b <= t.mask; b++) {
                uint64_t len = 0;

                for (struct htable_node *n = t.buckets[b]; n; n = n->next)
                        len++;
                if (len > longest)
                        longest = len;
        }
        ck_assert_uint_le(longest, 16);
        htable_deinit(&t);
        free(v);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("htable");
        TCase *tc = tcase_create("htable");

        tcase_add_test(tc, test_siphash_vectors);
        tcase_add_test(tc, test_add_find_del);
        tcase_add_test(tc, test_equal_hashes);
        tcase_add_test(tc, test_long_names_spread);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-registry.c - the daemon's socket-identity table: lookups by (st_dev, st_ino), growth,
 * removal from long chains, and that lookups stay correct across resizes.
 */
#include <stdlib.h>

#include <check.h>

#include "tests/helpers/daemon.h"

#include "daemon/objects/registration.h"
#include "daemon/objects/registry.h"

START_TEST(test_insert_find_remove)
{
        enum { N = 5000 };
        struct registry r;
        struct reg *g = calloc(N, sizeof(*g));

        ck_assert_int_eq(registry_init(&r), 0);
        for (int i = 0; i < N; i++) {
                g[i].dev = (uint64_t)(i % 3);
                g[i].ino = (uint64_t)i * 7919;
                ck_assert_int_eq(registry_insert(&r, &g[i]), 0);
        }
        ck_assert_uint_eq(r.count, N);
        ck_assert_uint_ge(r.nbuckets, N); /* grew with the load */
        for (int i = 0; i < N; i++)
                ck_assert_ptr_eq(registry_find(&r, g[i].dev, g[i].ino), &g[i]);
        /* Same inode, other device: a different socket. */
        ck_assert_ptr_null(registry_find(&r, 5, g[1].ino));
        for (int i = 0; i < N; i += 2)
                registry_remove(&r, &g[i]);
        ck_assert_uint_eq(r.count, N / 2);
        for (int i = 0; i < N; i++)
                ck_assert_ptr_eq(registry_find(&r, g[i].dev, g[i].ino), i % 2 ? &g[i] : NULL);
        /* Removing something absent changes nothing. */
        registry_remove(&r, &g[0]);
        ck_assert_uint_eq(r.count, N / 2);
        registry_deinit(&r);
        free(g);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("registry");
        TCase *tc = tcase_create("registry");

        tcase_add_test(tc, test_insert_find_remove);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

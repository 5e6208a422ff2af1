/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * status.c - one number of the daemon's status document (see status.h).
 */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"

long long test_status_number(sn_conn_t *c, const char *key)
{
        char *text = NULL;
        json_t *doc;
        long long v;

        ck_assert_int_eq(sn_conn_status(c, &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        v = json_integer_value(json_object_get(doc, key));
        json_decref(doc);
        return v;
}

void test_status_wait_at_least(sn_conn_t *c, const char *key, long long want, int timeout_ms,
                               const char *what)
{
        long long deadline = now_ms() + test_timeout_ms(timeout_ms);

        while (test_status_number(c, key) < want) {
                ck_assert_msg(now_ms() < deadline, "%s", what);
                usleep(1000);
        }
}

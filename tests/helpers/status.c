/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * status.c - one number of the daemon's status document (see status.h).
 */
#include <jansson.h>
#include <stdlib.h>

#include <check.h>

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

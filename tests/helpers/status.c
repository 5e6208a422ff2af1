/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * status.c - one number of the daemon's status document (see status.h).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "tests/helpers/daemon.h"
#include "tests/helpers/status.h"

/* The value at key, whose dots name members of nested objects ("user.refused"); NULL when
 * absent. */
static json_t *status_at(json_t *doc, const char *key)
{
        char name[128];
        const char *dot;

        while ((dot = strchr(key, '.')) && doc) {
                size_t len = (size_t)(dot - key);

                if (len >= sizeof(name))
                        return NULL;
                memcpy(name, key, len);
                name[len] = '\0';
                doc = json_object_get(doc, name);
                key = dot + 1;
        }
        return doc ? json_object_get(doc, key) : NULL;
}

long long test_status_number(sn_conn_t *c, const char *key)
{
        char *text = NULL;
        json_t *doc;
        long long v;

        ck_assert_int_eq(sn_conn_status(c, &text), 0);
        doc = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        v = json_integer_value(status_at(doc, key));
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

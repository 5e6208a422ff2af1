/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-vectors.c - the protocol test vectors (proto/vectors/) that say what the daemon answers
 * are sent to a real daemon, and the answer is checked: the reply's type, id and status, the
 * body fields the vector names, and whether the connection is then closed or still served.
 *
 * Each vector runs as its own loop iteration against a daemon of its own, sent as its exact
 * bytes with as many descriptors as it says travel with it, after the handshake it names; the
 * daemon ends back at its baseline of descriptors.  The list is read from the checked-in files
 * before the suite is built, so a vector added there is replayed without a change here.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "proto/codec.h"
#include "proto/vector-json.h"
#include "tests/helpers/daemon.h"
#include "tests/helpers/raw.h"

#define VECTORS_DIR SN_SRCDIR "/proto/vectors"

static json_t *replayed; /* the vectors with an "expect", in file and array order */

static void load(void)
{
        struct dirent **names;
        int n = scandir(VECTORS_DIR, &names, NULL, alphasort);

        replayed = json_array();
        if (n < 0) {
                perror(VECTORS_DIR);
                exit(1);
        }
        for (int i = 0; i < n; i++) {
                size_t len = strlen(names[i]->d_name);
                char path[4096];
                json_error_t err;
                json_t *doc, *v;
                size_t j;

                if (len > 5 && !strcmp(names[i]->d_name + len - 5, ".json")) {
                        snprintf(path, sizeof(path), "%s/%s", VECTORS_DIR, names[i]->d_name);
                        doc = json_load_file(path, 0, &err);
                        if (!doc) {
                                fprintf(stderr, "%s: %s\n", path, err.text);
                                exit(1);
                        }
                        json_array_foreach(json_object_get(doc, "vectors"), j, v)
                                if (json_object_get(v, "expect"))
                                        json_array_append(replayed, v);
                        json_decref(doc);
                }
                free(names[i]);
        }
        free(names);
}

static int connect_after(const char *path, const char *after)
{
        if (!strcmp(after, "nothing"))
                return raw_connect(path);
        if (!strcmp(after, "hello"))
                return raw_hello_version(path, 3);
        ck_assert_str_eq(after, "hello-v1");
        return raw_hello_version(path, 1);
}

START_TEST(test_vector_replay)
{
        json_t *v = json_array_get(replayed, (size_t)_i), *e = json_object_get(v, "expect");
        const char *name = json_string_value(json_object_get(v, "name"));
        json_t *want_body = json_object_get(e, "body"), *got, *val;
        unsigned nfds = (unsigned)json_integer_value(json_object_get(v, "nfds"));
        int fds[SN_PROTO_MAX_FDS], peers[SN_PROTO_MAX_FDS];
        const struct sn_msg_desc *d;
        static uint8_t buf[1 << 17];
        struct test_daemon D;
        struct snw_header h;
        const char *key;
        int fd, baseline, check;
        ssize_t n;
        long len;

        printf("vector %s\n", name);
        fflush(stdout);
        len = snv_unhex(buf, sizeof(buf), json_string_value(json_object_get(v, "hex")));
        ck_assert_int_ge(len, 0);
        ck_assert_uint_le(nfds, SN_PROTO_MAX_FDS);
        test_daemon_start(&D, NULL);
        baseline = test_daemon_fds(&D);
        fd = connect_after(D.path, json_string_value(json_object_get(e, "after")));
        /* The descriptors a vector says come with it: sockets of this test. */
        for (unsigned i = 0; i < nfds; i++) {
                int sp[2];

                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
                fds[i] = sp[0];
                peers[i] = sp[1];
        }
        raw_send(fd, buf, (size_t)len, fds, nfds);
        for (unsigned i = 0; i < nfds; i++) {
                close(fds[i]);
                close(peers[i]);
        }

        n = raw_recv(fd, buf, sizeof(buf));
        ck_assert_msg(n > 0, "%s: no reply", name);
        ck_assert_msg(sn_msg_check(buf, (size_t)n, &h, &d) == 0, "%s: reply malformed", name);
        ck_assert_msg(!strcmp(d->name, json_string_value(json_object_get(e, "reply"))),
                      "%s: reply %s, the vector says %s", name, d->name,
                      json_string_value(json_object_get(e, "reply")));
        ck_assert_msg(h.id == json_integer_value(json_object_get(e, "id")), "%s: reply id %u",
                      name, h.id);
        ck_assert_msg(h.status == json_integer_value(json_object_get(e, "status")),
                      "%s: reply status %u, the vector says %lld", name, h.status,
                      (long long)json_integer_value(json_object_get(e, "status")));
        got = snv_decode(buf, (size_t)n, &check);
        ck_assert_ptr_nonnull(got);
        json_object_foreach(want_body, key, val)
                ck_assert_msg(json_equal(json_object_get(json_object_get(got, "body"), key), val),
                              "%s: reply body field %s differs", name, key);
        json_decref(got);

        if (json_is_true(json_object_get(e, "closed")))
                ck_assert_msg(raw_recv(fd, buf, sizeof(buf)) == 0,
                              "%s: the connection was not closed", name);
        else if (strcmp(json_string_value(json_object_get(e, "after")), "nothing") ||
                 h.type == SN_MSG_HELLO_REPLY)
                status_works(fd, 99);
        close(fd);
        test_daemon_finish(&D, baseline);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("vectors");
        TCase *tc = tcase_create("replay");
        int r;

        load();
        tcase_set_timeout(tc, 30);
        tcase_add_loop_test(tc, test_vector_replay, 0, (int)json_array_size(replayed));
        suite_add_tcase(s, tc);
        printf("%zu vectors to replay\n", json_array_size(replayed));
        r = test_run_suite(s);
        json_decref(replayed);
        return r;
}

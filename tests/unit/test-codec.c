/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-codec.c - the wire codec: round trips, and rejection of truncated, oversized and
 * inconsistent messages before any field is used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "tests/helpers/daemon.h"

#include "proto/codec.h"

START_TEST(test_sizes_are_fixed)
{
        /* These sizes are part of the protocol (PROTOCOL.md); changing one is a new version. */
        ck_assert_int_eq(SN_HEADER_SIZE, 24);
        ck_assert_int_eq(SN_WIRE_SIZE_registration, 36);
        ck_assert_int_eq(SN_WIRE_SIZE_entry, 24);
        ck_assert_int_eq(SN_WIRE_SIZE_packet, 24);
        ck_assert_int_eq(SN_WIRE_SIZE_result, 4);
        ck_assert_int_eq(SN_WIRE_SIZE_process, 20);
        ck_assert_int_eq(sn_msg_size(SN_MSG_PROCESS, 2, 0), 24 + 20 + 72);
        ck_assert_int_eq(sn_msg_size(SN_MSG_PROCESS_REPLY, 3, 2), 24 + 4 + 12 + 48);
        ck_assert_int_eq(sn_msg_size(SN_MSG_HELLO, 1, 0), 0); /* HELLO has no array */
        ck_assert_int_eq(sn_msg_size(0x7f, 0, 0), 0);
}
END_TEST

START_TEST(test_little_endian)
{
        uint8_t b[8];

        sn_put_u32(b, 0x01020304);
        ck_assert_int_eq(b[0], 4);
        ck_assert_int_eq(b[3], 1);
        sn_put_u64(b, 0x0102030405060708ull);
        ck_assert_int_eq(b[0], 8);
        ck_assert_int_eq(b[7], 1);
        ck_assert_uint_eq(sn_get_u64(b), 0x0102030405060708ull);
        sn_put_u16(b, 0xabcd);
        ck_assert_int_eq(b[0], 0xcd);
        ck_assert_uint_eq(sn_get_u16(b), 0xabcd);
}
END_TEST

static size_t build_process(uint8_t *buf, uint32_t n)
{
        struct snw_process body = { .port = 7, .timeout_ms = 100, .max_entries = 4 };
        uint8_t *p = sn_msg_begin(buf, SN_MSG_PROCESS, 42, 0, 1, n, 0);

        p = snw_process_encode(p, &body);
        for (uint32_t i = 0; i < n; i++) {
                struct snw_registration r = { .key = 0x1122334455667788ull + i, .dev = 9, .ino = 10 + i,
                                              .filter = 7, .op = 1, .trigger = 6,
                                              .fd_index = i ? SN_PROTO_NO_FD : 0, .client_fd = 5 };
                p = snw_registration_encode(p, &r);
        }
        return (size_t)(p - buf);
}

START_TEST(test_round_trip)
{
        uint8_t buf[512];
        size_t len = build_process(buf, 3);
        const struct sn_msg_desc *d;
        struct snw_header h;
        struct snw_process body;
        struct snw_registration r;

        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), 0);
        ck_assert_str_eq(d->name, "PROCESS");
        ck_assert_uint_eq(h.id, 42);
        ck_assert_uint_eq(h.nfds, 1);
        ck_assert_uint_eq(h.count, 3);
        snw_process_decode(sn_msg_body(buf), &body);
        ck_assert_uint_eq(body.port, 7);
        ck_assert_uint_eq(body.timeout_ms, 100);
        snw_registration_decode(sn_msg_array(buf, d, 1) + 2 * SN_WIRE_SIZE_registration, &r);
        ck_assert_uint_eq(r.key, 0x1122334455667788ull + 2);
        ck_assert_uint_eq(r.ino, 12);
        ck_assert_uint_eq(r.filter, 7);
        ck_assert_uint_eq(r.trigger, 6);
        ck_assert_uint_eq(r.fd_index, SN_PROTO_NO_FD);
        ck_assert_uint_eq(r.client_fd, 5);
        ck_assert_uint_eq(sn_get_u32(sn_msg_array(buf, d, 1) + SN_REG_FD_INDEX_OFFSET), 0);
}
END_TEST

START_TEST(test_second_array)
{
        uint8_t buf[512];
        const struct sn_msg_desc *d;
        struct snw_header h;
        struct snw_process_reply body = { 0 };
        struct snw_entry e = { .key = 5, .overlapped = 6, .events = 0x81, .kind = 0 }, out;
        uint8_t *p = sn_msg_begin(buf, SN_MSG_PROCESS_REPLY, 1, 0, 0, 2, 1);

        p = snw_process_reply_encode(p, &body);
        p = sn_put_u32(p, 0);
        p = sn_put_u32(p, ENOTSOCK);
        p = snw_entry_encode(p, &e);
        ck_assert_int_eq(sn_msg_check(buf, (size_t)(p - buf), &h, &d), 0);
        ck_assert_uint_eq(sn_get_u32(sn_msg_array(buf, d, 1) + 4), ENOTSOCK);
        snw_entry_decode(sn_msg_array(buf, d, 2), &out);
        ck_assert_uint_eq(out.key, 5);
        ck_assert_uint_eq(out.overlapped, 6);
        ck_assert_uint_eq(out.events, 0x81);
}
END_TEST

START_TEST(test_rejects_bad_messages)
{
        uint8_t buf[512];
        size_t len = build_process(buf, 2);
        const struct sn_msg_desc *d = NULL;
        struct snw_header h;

        /* Truncated anywhere: header, body, last item. */
        for (size_t cut = 0; cut < len; cut++)
                ck_assert_int_eq(sn_msg_check(buf, cut, &h, &d), -EBADMSG);
        /* Longer than it says. */
        ck_assert_int_eq(sn_msg_check(buf, len + 1, &h, &d), -EBADMSG);
        /* Size field disagrees with the datagram. */
        sn_put_u32(buf, (uint32_t)len - 1);
        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), -EBADMSG);
        sn_put_u32(buf, (uint32_t)len);
        /* Count disagrees with the size (including an overflowing count). */
        sn_put_u32(buf + 16, 3);
        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), -EBADMSG);
        sn_put_u32(buf + 16, 0xffffffffu);
        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), -EBADMSG);
        sn_put_u32(buf + 16, 2);
        /* A second array on a type that has none. */
        sn_put_u32(buf + 20, 1);
        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), -EBADMSG);
        sn_put_u32(buf + 20, 0);
        /* Unknown type. */
        sn_put_u16(buf + 4, 0x42);
        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), -EOPNOTSUPP);
        sn_put_u16(buf + 4, SN_MSG_PROCESS);
        ck_assert_int_eq(sn_msg_check(buf, len, &h, &d), 0);
        ck_assert_ptr_nonnull(d);
}
END_TEST

START_TEST(test_fuzz_never_reads_outside)
{
        /* Random bytes and random mutations of a valid message: whatever sn_msg_check accepts
         * must have a size that matches its description exactly.  Run under ASan in CI. */
        uint8_t good[512], buf[512];
        size_t glen = build_process(good, 3);
        unsigned seed = 12345;

        for (int i = 0; i < 200000; i++) {
                size_t len = (size_t)(rand_r(&seed) % (glen + 8));
                const struct sn_msg_desc *d;
                struct snw_header h;
                char line[256];
                uint8_t *copy;

                memcpy(buf, good, sizeof(buf));
                for (int k = rand_r(&seed) % 4; k >= 0; k--)
                        buf[rand_r(&seed) % (glen + 8)] = (uint8_t)rand_r(&seed);
                copy = malloc(len ? len : 1); /* exact size so ASan sees any over-read */
                memcpy(copy, buf, len);
                if (sn_msg_check(copy, len, &h, &d) == 0)
                        ck_assert_uint_eq(sn_msg_size(h.type, h.count, h.count2), len);
                sn_msg_trace(line, sizeof(line), copy, len, 4);
                free(copy);
        }
}
END_TEST

START_TEST(test_trace)
{
        uint8_t buf[512];
        size_t len = build_process(buf, 3);
        char line[512], tiny[16];

        sn_msg_trace(line, sizeof(line), buf, len, 1);
        ck_assert_ptr_nonnull(strstr(line, "PROCESS id=42"));
        ck_assert_ptr_nonnull(strstr(line, "timeout_ms=100"));
        ck_assert_ptr_nonnull(strstr(line, "(+2 more)"));
        sn_msg_trace(tiny, sizeof(tiny), buf, len, 1);
        ck_assert_int_eq(strlen(tiny), sizeof(tiny) - 1);
        ck_assert_str_eq(tiny + sizeof(tiny) - 4, "...");
        sn_msg_trace(line, sizeof(line), buf, 3, 1);
        ck_assert_ptr_nonnull(strstr(line, "undecodable"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("codec");
        TCase *tc = tcase_create("codec");

        tcase_add_test(tc, test_sizes_are_fixed);
        tcase_add_test(tc, test_little_endian);
        tcase_add_test(tc, test_round_trip);
        tcase_add_test(tc, test_second_array);
        tcase_add_test(tc, test_rejects_bad_messages);
        tcase_add_test(tc, test_fuzz_never_reads_outside);
        tcase_add_test(tc, test_trace);
        tcase_set_timeout(tc, 60);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

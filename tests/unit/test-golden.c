/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-golden.c - protocol version 1 is frozen: the exact bytes of every message type.
 *
 * For each message type of proto/messages.def the test encodes one message with known field
 * values (header, body, one item of each array) through the generated encoders and compares the
 * bytes with a hex string written down here.  Any change of a field's width, order or presence,
 * of a type code, or of the header fails the test: such a change needs a new protocol version,
 * not an edit of this file.  The list of types comes from the generated table (SN_MESSAGES), so
 * a type added to messages.def without a golden entry fails too, as does a golden entry whose
 * type no longer exists.
 *
 * The field values are distinct per field (no two fields of one struct share a byte pattern),
 * so two fields of equal width trading places changes the bytes as well.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "tests/helpers/daemon.h"

#include "proto/codec.h"

/* The header of every golden message: id 0x0a0b0c0d; status 0 in requests, 0x16 (EINVAL) in
 * replies; nfds 1 for a message carrying registrations, else 0. */
#define GOLDEN_ID 0x0a0b0c0du
#define GOLDEN_REPLY_STATUS 0x16u

struct golden {
        const char *name;
        const char *hex;
};

/* clang-format off */
static const struct golden goldens[] = {
        { "HELLO",
          "24000000" "0100" "0000" "0d0c0b0a" "00000000" "00000000" "00000000"
          "534e5446" "0100" "0100" "00000000" },
        { "HELLO_REPLY",
          "3c000000" "8100" "0000" "0d0c0b0a" "16000000" "00000000" "00000000"
          "0100" "0000" "00000100" "fd000000" "40000000" "00000100" "00000100" "00040000"
          "00200000" "39300000" },
        { "PORT_CREATE",
          "23000000" "0200" "0000" "0d0c0b0a" "00000000" "03000000" "00000000"
          "04000000" "00000000" "616263" },
        { "PORT_CREATE_REPLY",
          "20000000" "8200" "0000" "0d0c0b0a" "16000000" "00000000" "00000000"
          "11000000" "02000000" },
        { "PORT_CLOSE",
          "1c000000" "0300" "0000" "0d0c0b0a" "00000000" "00000000" "00000000"
          "21000000" },
        { "PORT_CLOSE_REPLY",
          "18000000" "8300" "0000" "0d0c0b0a" "16000000" "00000000" "00000000" },
        { "PROCESS",
          "50000000" "0400" "0100" "0d0c0b0a" "00000000" "01000000" "00000000"
          "31000000" "e8030000" "08000000" "01000000" "d2040000"
          "8877665544332211" "0900000000000000" "0a00000000000000" "0700" "01" "06" "00000000"
          "05000000" },
        { "PROCESS_REPLY",
          "38000000" "8400" "0000" "0d0c0b0a" "16000000" "01000000" "01000000"
          "00000000"
          "11000000"
          "8877665544332211" "f0debc9a78563412" "05000000" "01000000" },
        { "POST",
          "34000000" "0500" "0000" "0d0c0b0a" "00000000" "01000000" "00000000"
          "41000000"
          "efcdab8967452301" "1032547698badcfe" "2a000000" "00000000" },
        { "POST_REPLY",
          "1c000000" "8500" "0000" "0d0c0b0a" "16000000" "00000000" "00000000"
          "03000000" },
        { "SOCKET_CLOSE",
          "30000000" "0600" "0000" "0d0c0b0a" "00000000" "00000000" "00000000"
          "0900000000000000" "0a00000000000000" "05000000" "00000000" },
        { "SOCKET_CLOSE_REPLY",
          "18000000" "8600" "0000" "0d0c0b0a" "16000000" "00000000" "00000000" },
        { "STATUS",
          "18000000" "0700" "0000" "0d0c0b0a" "00000000" "00000000" "00000000" },
        { "PORT_OPEN",
          "1b000000" "0800" "0000" "0d0c0b0a" "00000000" "03000000" "00000000"
          "616263" },
        { "PORT_OPEN_REPLY",
          "20000000" "8800" "0000" "0d0c0b0a" "16000000" "00000000" "00000000"
          "11000000" "02000000" },
        { "THREAD_EXIT",
          "1c000000" "0900" "0000" "0d0c0b0a" "00000000" "00000000" "00000000"
          "d2040000" },
        { "THREAD_EXIT_REPLY",
          "18000000" "8900" "0000" "0d0c0b0a" "16000000" "00000000" "00000000" },
        { "STATUS_REPLY",
          "1b000000" "8700" "0000" "0d0c0b0a" "16000000" "03000000" "00000000"
          "616263" },
        { "CONTROL",
          "1b000000" "0a00" "0000" "0d0c0b0a" "00000000" "03000000" "00000000"
          "616263" },
        { "CONTROL_REPLY",
          "1b000000" "8a00" "0000" "0d0c0b0a" "16000000" "03000000" "00000000"
          "616263" },
        { "ERROR",
          "18000000" "ff00" "0000" "0d0c0b0a" "16000000" "00000000" "00000000" },
        /* Protocol version 2 added these; nothing above changed. */
        { "PORT_LINGER",
          "20000000" "0b00" "0000" "0d0c0b0a" "00000000" "00000000" "00000000"
          "21000000" "88130000" },
        { "PORT_LINGER_REPLY",
          "1c000000" "8b00" "0000" "0d0c0b0a" "16000000" "00000000" "00000000"
          "88130000" },
        { "PORT_TAKE",
          "24000000" "0c00" "0000" "0d0c0b0a" "00000000" "00000000" "00000000"
          "21000000" "fd000000" "00000000" },
        { "PORT_TAKE_REPLY",
          "44000000" "8c00" "0100" "0d0c0b0a" "16000000" "01000000" "00000000"
          "02000000" "01000000"
          "8877665544332211" "0900000000000000" "0a00000000000000" "0700" "01" "06" "00000000"
          "05000000" },
        /* Issue 29 added these to every version; nothing above changed. */
        { "LIMIT_INFO",
          "18000000" "0d00" "0000" "0d0c0b0a" "00000000" "00000000" "00000000" },
        { "LIMIT_INFO_REPLY",
          "34000000" "8d00" "0000" "0d0c0b0a" "16000000" "01000000" "00000000"
          "03000000"
          "31000000" "02000000" "04000000" "0a00" "0300" "0010000000000000" },
        /* Sent only to monitors (CONTROL monitor); nothing above changed. */
        { "MONITOR_FRAME",
          "3f000000" "fe00" "0000" "0d0c0b0a" "16000000" "03000000" "00000000"
          "0807060504030201" "1817161514131211" "21000000" "22000000" "23000000" "24000000"
          "01000000" "616263" },
};
/* clang-format on */

/* Every message type of the generated table, with its name. */
static const struct {
        uint16_t type;
        const char *name;
} types[] = {
#define GOLDEN_TYPE(NAME, code, body, i1, i2, doc) { code, #NAME },
        SN_MESSAGES(GOLDEN_TYPE)
#undef GOLDEN_TYPE
};

/* Body encoders with known values, one per body struct of messages.def. */
static uint8_t *body_empty(uint8_t *p)
{
        return p;
}
static uint8_t *body_hello(uint8_t *p)
{
        struct snw_hello b = { .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 1 };
        return snw_hello_encode(p, &b);
}
static uint8_t *body_hello_reply(uint8_t *p)
{
        struct snw_hello_reply b = { .version = 1, .max_message = 65536, .max_fds = 253,
                                     .max_ports = 64, .max_registrations = 65536,
                                     .max_posted = 65536, .max_waits = 1024,
                                     .max_sockets = 8192, .daemon_pid = 12345 };
        return snw_hello_reply_encode(p, &b);
}
static uint8_t *body_port_create(uint8_t *p)
{
        struct snw_port_create b = { .concurrency = 4, .flags = 0 };
        return snw_port_create_encode(p, &b);
}
static uint8_t *body_port_create_reply(uint8_t *p)
{
        struct snw_port_create_reply b = { .port = 0x11, .concurrency = 2 };
        return snw_port_create_reply_encode(p, &b);
}
static uint8_t *body_port(uint8_t *p)
{
        struct snw_port b = { .port = 0x21 };
        return snw_port_encode(p, &b);
}
static uint8_t *body_process(uint8_t *p)
{
        struct snw_process b = { .port = 0x31, .timeout_ms = 1000, .max_entries = 8,
                                 .flags = SN_PROTO_PROCESS_PART, .thread = 1234 };
        return snw_process_encode(p, &b);
}
static uint8_t *body_process_reply(uint8_t *p)
{
        struct snw_process_reply b = { .reserved = 0 };
        return snw_process_reply_encode(p, &b);
}
static uint8_t *body_post(uint8_t *p)
{
        struct snw_post b = { .port = 0x41 };
        return snw_post_encode(p, &b);
}
static uint8_t *body_post_reply(uint8_t *p)
{
        struct snw_post_reply b = { .queued = 3 };
        return snw_post_reply_encode(p, &b);
}
static uint8_t *body_socket_close(uint8_t *p)
{
        struct snw_socket_close b = { .dev = 9, .ino = 10, .client_fd = 5 };
        return snw_socket_close_encode(p, &b);
}
static uint8_t *body_thread(uint8_t *p)
{
        struct snw_thread b = { .thread = 1234 };
        return snw_thread_encode(p, &b);
}

static uint8_t *body_port_linger(uint8_t *p)
{
        struct snw_port_linger b = { .port = 0x21, .linger_ms = 5000 };
        return snw_port_linger_encode(p, &b);
}
static uint8_t *body_port_linger_reply(uint8_t *p)
{
        struct snw_port_linger_reply b = { .linger_ms = 5000 };
        return snw_port_linger_reply_encode(p, &b);
}
static uint8_t *body_port_take(uint8_t *p)
{
        struct snw_port_take b = { .port = 0x21, .max = 253, .flags = 0 };
        return snw_port_take_encode(p, &b);
}
static uint8_t *body_monitor(uint8_t *p)
{
        struct snw_monitor b = { .time_ns = 0x0102030405060708ull,
                                 .conn = 0x1112131415161718ull,
                                 .pid = 0x21,
                                 .uid = 0x22,
                                 .lost = 0x23,
                                 .length = 0x24,
                                 .flags = 1 };
        return snw_monitor_encode(p, &b);
}

static uint8_t *body_port_take_reply(uint8_t *p)
{
        struct snw_port_take_reply b = { .remaining = 2, .holders = 1 };
        return snw_port_take_reply_encode(p, &b);
}

static uint8_t *body_limit_info_reply(uint8_t *p)
{
        struct snw_limit_info_reply b = { .refused = 3 };
        return snw_limit_info_reply_encode(p, &b);
}

static const struct {
        const char *name;
        uint8_t *(*encode)(uint8_t *p);
} bodies[] = {
        { "monitor", body_monitor },
        { "limit_info_reply", body_limit_info_reply },
        { "port_linger", body_port_linger },
        { "port_linger_reply", body_port_linger_reply },
        { "port_take", body_port_take },
        { "port_take_reply", body_port_take_reply },
        { "empty", body_empty },
        { "hello", body_hello },
        { "hello_reply", body_hello_reply },
        { "port_create", body_port_create },
        { "port_create_reply", body_port_create_reply },
        { "port", body_port },
        { "process", body_process },
        { "process_reply", body_process_reply },
        { "post", body_post },
        { "post_reply", body_post_reply },
        { "socket_close", body_socket_close },
        { "thread", body_thread },
};

/* Writes one item of an array type, or returns NULL for an item type the test does not know. */
static uint8_t *item_encode(const char *item, uint8_t *p)
{
        if (strcmp(item, "registration") == 0) {
                struct snw_registration r = { .key = 0x1122334455667788ull, .dev = 9, .ino = 10,
                                              .filter = 7, .op = 1, .trigger = 6, .fd_index = 0,
                                              .client_fd = 5 };
                return snw_registration_encode(p, &r);
        }
        if (strcmp(item, "result") == 0) {
                struct snw_result r = { .error = 0x11 };
                return snw_result_encode(p, &r);
        }
        if (strcmp(item, "entry") == 0) {
                struct snw_entry e = { .key = 0x1122334455667788ull,
                                       .overlapped = 0x123456789abcdef0ull, .events = 5,
                                       .kind = SN_PROTO_KIND_POSTED };
                return snw_entry_encode(p, &e);
        }
        if (strcmp(item, "packet") == 0) {
                struct snw_packet k = { .key = 0x0123456789abcdefull,
                                        .overlapped = 0xfedcba9876543210ull, .bytes = 42 };
                return snw_packet_encode(p, &k);
        }
        if (strcmp(item, "refusal") == 0) {
                struct snw_refusal r = { .request = 0x31, .first = 2, .last = 4, .limit = 10,
                                         .scope = 3, .value = 0x1000 };
                return snw_refusal_encode(p, &r);
        }
        if (strcmp(item, "byte") == 0) {
                /* An array of bytes holds "abc". */
                for (const char *s = "abc"; *s; s++) {
                        struct snw_byte b = { .value = (uint8_t)*s };
                        p = snw_byte_encode(p, &b);
                }
                return p;
        }
        return NULL;
}

static uint32_t item_count(const char *item)
{
        if (strcmp(item, "none") == 0)
                return 0;
        return strcmp(item, "byte") == 0 ? 3 : 1;
}

/* Encodes the golden message of a type into buf (at least 512 bytes); returns its length, or 0
 * when the test lacks an encoder for its body or items (reported by the caller). */
static size_t golden_encode(const struct sn_msg_desc *d, uint8_t *buf)
{
        uint32_t n1 = item_count(d->item1), n2 = item_count(d->item2);
        int reply = (d->type & SN_PROTO_REPLY_BIT) != 0;
        uint16_t nfds = strcmp(d->item1, "registration") == 0 ? 1 : 0;
        uint8_t *(*encode)(uint8_t *) = NULL;
        uint8_t *p;

        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
                if (strcmp(bodies[i].name, d->body) == 0)
                        encode = bodies[i].encode;
        if (!encode || sn_msg_size(d->type, n1, n2) == 0 || sn_msg_size(d->type, n1, n2) > 512)
                return 0;
        p = sn_msg_begin(buf, d->type, GOLDEN_ID, reply ? GOLDEN_REPLY_STATUS : 0, nfds, n1, n2);
        p = encode(p);
        if (n1 && !(p = item_encode(d->item1, p)))
                return 0;
        if (n2 && !(p = item_encode(d->item2, p)))
                return 0;
        return (size_t)(p - buf);
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", b[i]);
        out[2 * n] = 0;
}

START_TEST(test_every_type_has_golden_bytes)
{
        int failures = 0;

        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
                const struct sn_msg_desc *d = sn_msg_desc(types[t].type);
                const struct golden *g = NULL;
                uint8_t buf[512];
                char hex[1025];
                size_t n;

                ck_assert_ptr_nonnull(d);
                for (size_t i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++)
                        if (strcmp(goldens[i].name, types[t].name) == 0)
                                g = &goldens[i];
                if (!g) {
                        fprintf(stderr, "%s (0x%02x): no golden encoding in test-golden.c; a new "
                                "message type is a protocol change\n", types[t].name, types[t].type);
                        failures++;
                        continue;
                }
                n = golden_encode(d, buf);
                if (n == 0) {
                        fprintf(stderr, "%s: body '%s' or items '%s'/'%s' unknown to the test\n",
                                types[t].name, d->body, d->item1, d->item2);
                        failures++;
                        continue;
                }
                to_hex(buf, n, hex);
                if (strcmp(hex, g->hex) != 0) {
                        fprintf(stderr, "%s: encoding changed\n  frozen:  %s\n  encoded: %s\n",
                                types[t].name, g->hex, hex);
                        failures++;
                        continue;
                }
                /* The golden bytes are also a valid message that decodes to the same header. */
                {
                        struct snw_header h;
                        const struct sn_msg_desc *dd;

                        ck_assert_int_eq(sn_msg_check(buf, n, &h, &dd), 0);
                        ck_assert_ptr_eq(dd, d);
                        ck_assert_uint_eq(h.id, GOLDEN_ID);
                        ck_assert_uint_eq(h.size, n);
                }
        }
        ck_assert_msg(failures == 0, "%d message type(s) differ from their frozen encoding", failures);
}
END_TEST

START_TEST(test_every_golden_names_a_type)
{
        for (size_t i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
                int found = 0;

                for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
                        found |= strcmp(goldens[i].name, types[t].name) == 0;
                ck_assert_msg(found, "golden entry %s names no message type: a type was removed "
                              "or renamed (a protocol change)", goldens[i].name);
        }
        ck_assert_uint_eq(sizeof(goldens) / sizeof(goldens[0]), sizeof(types) / sizeof(types[0]));
}
END_TEST

START_TEST(test_version_is_one)
{
        /* Version 2 only added messages (PORT_LINGER and PORT_TAKE), version 3 only gave meaning
         * to two fields that were 0 (HELLO's flags, HELLO_REPLY's transport); every version-1
         * byte above is unchanged, and a daemon still speaks version 1 (SN_PROTO_VERSION_MIN).
         * Changing a byte above would take a new version and a second table here, never an
         * edit. */
        ck_assert_int_eq(SN_PROTO_VERSION, 3);
        ck_assert_int_eq(SN_PROTO_VERSION_MIN, 1);
        ck_assert_uint_eq(SN_PROTO_MAGIC, 0x46544e53u);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("golden");
        TCase *tc = tcase_create("v1");

        tcase_add_test(tc, test_every_type_has_golden_bytes);
        tcase_add_test(tc, test_every_golden_names_a_type);
        tcase_add_test(tc, test_version_is_one);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

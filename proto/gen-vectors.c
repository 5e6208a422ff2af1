/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * gen-vectors.c - writes and checks the protocol test vectors of proto/vectors/.
 *
 *   gen-vectors --write DIR   builds every vector as host structs, encodes them with the codec
 *                             and writes one file per message type (and invalid.json) to DIR;
 *   gen-vectors --check DIR   decodes the bytes of every vector in DIR with the codec and
 *                             compares the result with the vector's "decoded" form.
 *
 * The checked-in files are the reference.  `make check` writes them again and compares the
 * bytes (a change of the generator or of the encoders shows), and checks the checked-in bytes
 * against the decoders (a change of the wire shows even when the generator changed with it).
 * The format is described in proto/vectors/README.md.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto/vector-json.h"

/* ---- building vectors ---------------------------------------------------------------------- */

struct vec {
        uint8_t buf[4096];
        uint8_t *p;
        json_t *obj, *decoded, *array1, *array2;
        const char *text;
        uint32_t count, count2;
        /* Invalid vectors: the header's size field and counts as written (0 and -1: computed),
         * the bytes sent (0: all), and the codec's verdict when it refuses the framing. */
        uint32_t size_field;
        int64_t count_field;
        size_t cut;
        const char *framing;
        int attached; /* descriptors sent with it, when not the header's nfds */
};

static struct vec V;
static json_t *files; /* file name -> array of vectors */

static void vbegin(const char *name, const char *direction, unsigned version, const char *doc)
{
        json_decref(V.array1);
        json_decref(V.array2);
        memset(&V, 0, sizeof(V));
        V.p = V.buf + SN_HEADER_SIZE;
        V.count_field = -1;
        V.attached = -1;
        V.obj = json_object();
        V.decoded = json_object();
        V.array1 = json_array();
        V.array2 = json_array();
        json_object_set_new(V.obj, "name", json_string(name));
        json_object_set_new(V.obj, "description", json_string(doc));
        json_object_set_new(V.obj, "direction", json_string(direction));
        json_object_set_new(V.obj, "version", json_integer(version));
}

#define VBODY(name, ...)                                                                           \
        do {                                                                                       \
                struct snw_##name b_ = { __VA_ARGS__ };                                            \
                V.p = snw_##name##_encode(V.p, &b_);                                               \
                json_object_set_new(V.decoded, "body", snv_json_##name(&b_));                      \
        } while (0)

#define VITEM1(name, ...)                                                                          \
        do {                                                                                       \
                struct snw_##name i_ = { __VA_ARGS__ };                                            \
                V.p = snw_##name##_encode(V.p, &i_);                                               \
                json_array_append_new(V.array1, snv_json_##name(&i_));                             \
                V.count++;                                                                         \
        } while (0)

#define VITEM2(name, ...)                                                                          \
        do {                                                                                       \
                struct snw_##name i_ = { __VA_ARGS__ };                                            \
                V.p = snw_##name##_encode(V.p, &i_);                                               \
                json_array_append_new(V.array2, snv_json_##name(&i_));                             \
                V.count2++;                                                                        \
        } while (0)

/* A first array of bytes: a name or a JSON text. */
static void vtext(const char *s)
{
        size_t n = strlen(s);

        memcpy(V.p, s, n);
        V.p += n;
        V.count = (uint32_t)n;
        V.text = s;
}

/* What the daemon answers when the vector is sent to it: after "nothing" (a new connection),
 * "hello" (one that chose version 3) or "hello-v1"; the reply's type, id and status, and
 * whether the connection is then closed. */
static void vexpect(const char *after, uint16_t reply, uint32_t id, uint32_t status, bool closed,
                    json_t *body)
{
        json_t *e = json_object();

        json_object_set_new(e, "after", json_string(after));
        json_object_set_new(e, "framing", json_string(V.framing ? V.framing : "ok"));
        json_object_set_new(e, "reply", json_string(sn_msg_desc(reply)->name));
        json_object_set_new(e, "id", json_integer(id));
        json_object_set_new(e, "status", json_integer(status));
        json_object_set_new(e, "status_name", status ? json_string(snv_errno_name(status))
                                                     : json_null());
        json_object_set_new(e, "closed", json_boolean(closed));
        if (body)
                json_object_set_new(e, "body", body);
        json_object_set_new(V.obj, "expect", e);
}

/* Writes the header and files the vector under file.  Arrays of the type appear in "decoded"
 * even when empty, so that a reader finds every field of the type. */
static void vend(const char *file, uint16_t type, uint32_t id, uint32_t status, uint16_t nfds)
{
        const struct sn_msg_desc *d = sn_msg_desc(type);
        struct snw_header h = {
                .size = (uint32_t)(V.p - V.buf),
                .type = type,
                .nfds = nfds,
                .id = id,
                .status = status,
                .count = V.count,
                .count2 = V.count2,
        };
        size_t len = (size_t)(V.p - V.buf);
        char hex[sizeof(V.buf) * 2 + 1];
        json_t *list, *dec;

        if (V.size_field)
                h.size = V.size_field;
        if (V.count_field >= 0)
                h.count = (uint32_t)V.count_field;
        snw_header_encode(V.buf, &h);
        if (V.cut)
                len = V.cut;
        snv_hex(hex, V.buf, len);
        json_object_set_new(V.obj, "message",
                            d && !V.framing ? json_string(d->name) : json_null());
        json_object_set_new(V.obj, "hex", json_string(hex));
        json_object_set_new(V.obj, "nfds", json_integer(V.attached >= 0 ? V.attached : nfds));
        /* A message the codec refuses is decoded as far as its header (when it has one). */
        dec = json_object();
        if (len >= SN_HEADER_SIZE)
                json_object_set_new(dec, "header", snv_json_header(&h));
        if (!V.framing && d) {
                json_t *body = json_object_get(V.decoded, "body");

                json_object_set_new(dec, "body", body ? json_incref(body) : json_object());
                if (!strcmp(d->item1, "byte"))
                        json_object_set_new(dec, "array1", json_string(V.text ? V.text : ""));
                else if (strcmp(d->item1, "none"))
                        json_object_set(dec, "array1", V.array1);
                if (strcmp(d->item2, "none"))
                        json_object_set(dec, "array2", V.array2);
        }
        json_object_set_new(V.obj, "decoded", dec);
        /* The key order of the file: the expectation last. */
        if (json_object_get(V.obj, "expect")) {
                json_t *e = json_incref(json_object_get(V.obj, "expect"));

                json_object_del(V.obj, "expect");
                json_object_set_new(V.obj, "expect", e);
        }
        list = json_object_get(files, file);
        if (!list) {
                list = json_array();
                json_object_set_new(files, file, list);
        }
        json_array_append_new(list, V.obj);
        json_decref(V.decoded);
        V.obj = V.decoded = NULL;
}

/* ---- the vectors ----------------------------------------------------------------------------- */

/* Values used throughout: a port id as the daemon hands them out (random-looking, never 0), a
 * socket's identity, keys and overlapped values that use all 64 bits. */
#define PORT 0x5a3c19e7u
#define DEV 0x803u
#define INO 4026532103u
#define KEY_BIG 0xfedcba9876543210ull
#define OVL_BIG 0x8000000000000001ull
#define HANDLE 0x0000010000000007ull
#define THREAD 4242u

static void hello_reply(unsigned version, bool ring)
{
        VBODY(hello_reply, .version = (uint16_t)version,
              .transport = ring ? SN_PROTO_TRANSPORT_RING : SN_PROTO_TRANSPORT_SOCKET,
              .max_message = 131072, .max_fds = 253, .max_ports = 64, .max_registrations = 65536,
              .max_posted = 65536, .max_waits = 1024, .max_sockets = 262144,
              .daemon_pid = 4321);
}

static void session(void)
{
        vbegin("hello-v1", "request", 1, "HELLO offering version 1 only; the daemon chooses 1");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 1);
        vexpect("nothing", SN_MSG_HELLO_REPLY, 1, 0, false,
                json_pack("{s:i,s:i}", "version", 1, "transport", 0));
        vend("HELLO", SN_MSG_HELLO, 1, 0, 0);

        vbegin("hello-v2", "request", 1, "HELLO offering versions 1 to 2; the daemon chooses 2");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 2);
        vexpect("nothing", SN_MSG_HELLO_REPLY, 1, 0, false,
                json_pack("{s:i,s:i}", "version", 2, "transport", 0));
        vend("HELLO", SN_MSG_HELLO, 1, 0, 0);

        vbegin("hello-v3", "request", 1, "HELLO offering versions 1 to 3; the daemon chooses 3");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 3);
        vexpect("nothing", SN_MSG_HELLO_REPLY, 1, 0, false,
                json_pack("{s:i,s:i}", "version", 3, "transport", 0));
        vend("HELLO", SN_MSG_HELLO, 1, 0, 0);

        vbegin("hello-v3-ring", "request", 3,
               "HELLO offering versions 1 to 3 with flag RING: the shared-memory rings (section 8)");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 3,
              .flags = SN_PROTO_HELLO_RING);
        vend("HELLO", SN_MSG_HELLO, 1, 0, 0);

        vbegin("hello-self", "request", 1,
               "HELLO offering versions 1 to 3 with flag SELF (bit 1, known to every version): "
               "the client schedules its own threads; the daemon chooses 3");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 3,
              .flags = SN_PROTO_HELLO_SELF);
        vexpect("nothing", SN_MSG_HELLO_REPLY, 1, 0, false,
                json_pack("{s:i,s:i}", "version", 3, "transport", 0));
        vend("HELLO", SN_MSG_HELLO, 1, 0, 0);

        vbegin("hello-reply-v1", "reply", 1, "version 1 chosen, with the daemon's limits");
        hello_reply(1, false);
        vend("HELLO_REPLY", SN_MSG_HELLO_REPLY, 1, 0, 0);
        vbegin("hello-reply-v2", "reply", 2, "version 2 chosen");
        hello_reply(2, false);
        vend("HELLO_REPLY", SN_MSG_HELLO_REPLY, 1, 0, 0);
        vbegin("hello-reply-v3", "reply", 3, "version 3 chosen, the socket transport");
        hello_reply(3, false);
        vend("HELLO_REPLY", SN_MSG_HELLO_REPLY, 1, 0, 0);
        vbegin("hello-reply-v3-ring", "reply", 3,
               "version 3 with the rings: three descriptors come with it, in the order ring "
               "file, daemon's doorbell, client's doorbell");
        hello_reply(3, true);
        vend("HELLO_REPLY", SN_MSG_HELLO_REPLY, 1, 0, SN_PROTO_RING_NFDS);

        vbegin("error-ebadmsg", "reply", 1,
               "a request whose header could not be read (sizes inconsistent): id 0");
        vend("ERROR", SN_MSG_ERROR, 0, EBADMSG, 0);
        vbegin("error-eproto", "reply", 1, "a second HELLO, with that request's id");
        vend("ERROR", SN_MSG_ERROR, 9, EPROTO, 0);
        vbegin("error-eprotonosupport", "reply", 1,
               "no common version (or a wrong magic); the connection is then closed");
        vend("ERROR", SN_MSG_ERROR, 1, EPROTONOSUPPORT, 0);
        vbegin("error-etimedout", "reply", 1,
               "no HELLO within the handshake timeout; id 0, the connection is then closed");
        vend("ERROR", SN_MSG_ERROR, 0, ETIMEDOUT, 0);
        vbegin("error-eusers", "reply", 1,
               "a connection refused at once: the daemon serves --max-connections; id 0");
        vend("ERROR", SN_MSG_ERROR, 0, EUSERS, 0);
        vbegin("error-eio", "reply", 1,
               "a request that was in progress when the daemon crashed, answered by the daemon "
               "that restored the state; whether it took effect is unknown");
        vend("ERROR", SN_MSG_ERROR, 12, EIO, 0);
}

static void ports(void)
{
        vbegin("port-create", "request", 1, "a private port, concurrency 0 (the processors)");
        VBODY(port_create, .concurrency = 0, .flags = 0);
        vend("PORT_CREATE", SN_MSG_PORT_CREATE, 2, 0, 0);

        vbegin("port-create-named", "request", 1,
               "a named port (the array holds its name, not terminated), concurrency 2");
        VBODY(port_create, .concurrency = 2, .flags = 0);
        vtext("vectors-demo");
        vexpect("hello", SN_MSG_PORT_CREATE_REPLY, 3, 0, false,
                json_pack("{s:i}", "concurrency", 2));
        vend("PORT_CREATE", SN_MSG_PORT_CREATE, 3, 0, 0);

        vbegin("port-create-reply", "reply", 1, "the new port's id and its concurrency");
        VBODY(port_create_reply, .port = PORT, .concurrency = 2);
        vend("PORT_CREATE_REPLY", SN_MSG_PORT_CREATE_REPLY, 3, 0, 0);
        vbegin("port-create-reply-eexist", "reply", 1,
               "the name is in use: the body of a failed reply is all 0");
        VBODY(port_create_reply, .port = 0);
        vend("PORT_CREATE_REPLY", SN_MSG_PORT_CREATE_REPLY, 3, EEXIST, 0);

        vbegin("port-open", "request", 1,
               "open a named port of the same user; sent alone, the name is unknown: ENOENT");
        vtext("vectors-demo");
        vexpect("hello", SN_MSG_PORT_OPEN_REPLY, 4, ENOENT, false, NULL);
        vend("PORT_OPEN", SN_MSG_PORT_OPEN, 4, 0, 0);
        vbegin("port-open-reply", "reply", 1, "the opened port (its id is the creator's)");
        VBODY(port_create_reply, .port = PORT, .concurrency = 2);
        vend("PORT_OPEN_REPLY", SN_MSG_PORT_OPEN_REPLY, 4, 0, 0);
        vbegin("port-open-reply-enoent", "reply", 1, "no port of this user has the name");
        VBODY(port_create_reply, .port = 0);
        vend("PORT_OPEN_REPLY", SN_MSG_PORT_OPEN_REPLY, 4, ENOENT, 0);

        vbegin("port-close", "request", 1,
               "close a port; sent alone, the connection holds no such port: EBADF");
        VBODY(port, .port = PORT);
        vexpect("hello", SN_MSG_PORT_CLOSE_REPLY, 5, EBADF, false, NULL);
        vend("PORT_CLOSE", SN_MSG_PORT_CLOSE, 5, 0, 0);
        vbegin("port-close-reply", "reply", 1, "port closed");
        vend("PORT_CLOSE_REPLY", SN_MSG_PORT_CLOSE_REPLY, 5, 0, 0);
        vbegin("port-close-reply-ebadf", "reply", 1, "not a port of this connection");
        vend("PORT_CLOSE_REPLY", SN_MSG_PORT_CLOSE_REPLY, 5, EBADF, 0);

        vbegin("thread-exit", "request", 1,
               "a client thread exited; id 0, as the C library sends it (its reply is dropped)");
        VBODY(thread, .thread = THREAD);
        vexpect("hello", SN_MSG_THREAD_EXIT_REPLY, 0, 0, false, NULL);
        vend("THREAD_EXIT", SN_MSG_THREAD_EXIT, 0, 0, 0);
        vbegin("thread-exit-reply", "reply", 1, "acknowledged (it never fails)");
        vend("THREAD_EXIT_REPLY", SN_MSG_THREAD_EXIT_REPLY, 0, 0, 0);
}

static void process(void)
{
        vbegin("process-dequeue", "request", 1,
               "dequeue up to 16 entries, waiting up to 100 ms, no registrations; sent alone, "
               "the port is not this connection's: EBADF (a call-level failure, not ERROR)");
        VBODY(process, .port = PORT, .timeout_ms = 100, .max_entries = 16, .thread = THREAD);
        vexpect("hello", SN_MSG_PROCESS_REPLY, 6, EBADF, false, NULL);
        vend("PROCESS", SN_MSG_PROCESS, 6, 0, 0);

        vbegin("process-registrations", "request", 1,
               "three registration items: ENABLE level IN|OUT passing descriptor 0, ENABLE "
               "edge one-shot IN passing descriptor 1 (a key above 2^53), DISABLE by identity "
               "(no descriptor); nfds 2, then poll for 8 entries");
        VBODY(process, .port = PORT, .timeout_ms = 0, .max_entries = 8, .thread = THREAD);
        VITEM1(registration, .key = 1, .dev = DEV, .ino = INO, .filter = 0x03, .op = 1,
               .trigger = 0x04, .fd_index = 0, .client_fd = 7);
        VITEM1(registration, .key = KEY_BIG, .dev = DEV, .ino = INO + 1, .filter = 0x01, .op = 1,
               .trigger = 0x08 | 0x01, .fd_index = 1, .client_fd = 8);
        VITEM1(registration, .key = 3, .dev = DEV, .ino = INO + 2, .op = 2,
               .fd_index = SN_PROTO_NO_FD, .client_fd = 9);
        vend("PROCESS", SN_MSG_PROCESS, 7, 0, 2);

        vbegin("process-part-1", "request", 1,
               "first part of a multi-part call (flag PART): no reply; its fd_index values "
               "refer to its own two descriptors");
        VBODY(process, .port = PORT, .flags = SN_PROTO_PROCESS_PART, .thread = THREAD);
        VITEM1(registration, .key = 10, .dev = DEV, .ino = INO + 10, .filter = 0x01, .op = 1,
               .trigger = 0x04, .fd_index = 0, .client_fd = 20);
        VITEM1(registration, .key = 11, .dev = DEV, .ino = INO + 11, .filter = 0x01, .op = 1,
               .trigger = 0x04, .fd_index = 1, .client_fd = 21);
        vend("PROCESS", SN_MSG_PROCESS, 8, 0, 2);
        vbegin("process-part-2", "request", 1,
               "last part of the same call (same id, no PART): its one descriptor is index 0 "
               "again; timeout_ms, max_entries and thread are taken from this part");
        VBODY(process, .port = PORT, .timeout_ms = SN_PROTO_INFINITE, .max_entries = 4,
              .thread = THREAD);
        VITEM1(registration, .key = 12, .dev = DEV, .ino = INO + 12, .filter = 0x07, .op = 1,
               .trigger = 0x04, .fd_index = 0, .client_fd = 22);
        vend("PROCESS", SN_MSG_PROCESS, 8, 0, 1);

        vbegin("process-by-handle", "request", 3,
               "version 3: REMOVE naming its registration by handle (fd_index 0xfffffffe, the "
               "handle in dev, ino 0)");
        VBODY(process, .port = PORT, .max_entries = 0, .thread = THREAD);
        VITEM1(registration, .key = 1, .dev = HANDLE, .ino = 0, .op = 4,
               .fd_index = SN_PROTO_BY_HANDLE, .client_fd = 7);
        vend("PROCESS", SN_MSG_PROCESS, 9, 0, 0);

        vbegin("process-ahead", "request", 3,
               "version 3: the thread's next dequeue sent ahead (flag AHEAD, no items)");
        VBODY(process, .port = PORT, .timeout_ms = SN_PROTO_INFINITE, .max_entries = 1,
              .flags = SN_PROTO_PROCESS_AHEAD, .thread = THREAD);
        vend("PROCESS", SN_MSG_PROCESS, 10, 0, 0);

        vbegin("process-reply", "reply", 1,
               "results of the three items of process-registrations (the second ESTALE: send "
               "its descriptor), then two entries: a socket notification IN|OUT and a posted "
               "packet (kind 1: key, byte count and overlapped as posted)");
        VBODY(process_reply, .reserved = 0);
        VITEM1(result, .error = 0);
        VITEM1(result, .error = ESTALE);
        VITEM1(result, .error = 0);
        VITEM2(entry, .key = 1, .overlapped = 0, .events = 0x03, .kind = SN_PROTO_KIND_SOCKET);
        VITEM2(entry, .key = KEY_BIG, .overlapped = OVL_BIG, .events = 512,
               .kind = SN_PROTO_KIND_POSTED);
        vend("PROCESS_REPLY", SN_MSG_PROCESS_REPLY, 7, 0, 0);

        vbegin("process-reply-v3", "reply", 3,
               "version 3: a socket entry carries its registration's handle in overlapped; "
               "the REMOVE entry carries 0 there (IN|REMOVE: 0x81)");
        VBODY(process_reply, .reserved = 0);
        VITEM2(entry, .key = 1, .overlapped = HANDLE, .events = 0x01,
               .kind = SN_PROTO_KIND_SOCKET);
        VITEM2(entry, .key = 2, .overlapped = 0, .events = 0x81, .kind = SN_PROTO_KIND_SOCKET);
        vend("PROCESS_REPLY", SN_MSG_PROCESS_REPLY, 10, 0, 0);

        vbegin("process-reply-etimedout", "reply", 1,
               "nothing arrived in time: status ETIMEDOUT, yet the items were applied and "
               "their results are present");
        VBODY(process_reply, .reserved = 0);
        VITEM1(result, .error = 0);
        vend("PROCESS_REPLY", SN_MSG_PROCESS_REPLY, 11, ETIMEDOUT, 0);

        vbegin("process-reply-ebadf", "reply", 1,
               "a call-level failure: nothing applied, count 0 and count2 0");
        VBODY(process_reply, .reserved = 0);
        vend("PROCESS_REPLY", SN_MSG_PROCESS_REPLY, 6, EBADF, 0);

        vbegin("process-reply-eio", "reply", 1,
               "from a daemon that restored the state of one that crashed during the call: "
               "count 0, whether it took effect is unknown");
        VBODY(process_reply, .reserved = 0);
        vend("PROCESS_REPLY", SN_MSG_PROCESS_REPLY, 12, EIO, 0);
}

static void post_close_status(void)
{
        vbegin("post", "request", 1,
               "post two packets; sent alone, the port is not this connection's: EBADF");
        VBODY(post, .port = PORT);
        VITEM1(packet, .key = 7, .overlapped = 0x1000, .bytes = 512);
        VITEM1(packet, .key = KEY_BIG, .overlapped = OVL_BIG, .bytes = 0xffffffffu);
        vexpect("hello", SN_MSG_POST_REPLY, 13, EBADF, false, NULL);
        vend("POST", SN_MSG_POST, 13, 0, 0);
        vbegin("post-reply", "reply", 1, "both packets queued");
        VBODY(post_reply, .queued = 2);
        vend("POST_REPLY", SN_MSG_POST_REPLY, 13, 0, 0);
        vbegin("post-reply-edquot", "reply", 1,
               "the port would hold more than max_posted packets: none queued");
        VBODY(post_reply, .queued = 0);
        vend("POST_REPLY", SN_MSG_POST_REPLY, 13, EDQUOT, 0);

        vbegin("socket-close", "request", 1,
               "drop the registration made through descriptor 7; sent alone, there is none: "
               "ENOENT");
        VBODY(socket_close, .dev = DEV, .ino = INO, .client_fd = 7);
        vexpect("hello", SN_MSG_SOCKET_CLOSE_REPLY, 14, ENOENT, false, NULL);
        vend("SOCKET_CLOSE", SN_MSG_SOCKET_CLOSE, 14, 0, 0);
        vbegin("socket-close-reply", "reply", 1, "registration dropped");
        vend("SOCKET_CLOSE_REPLY", SN_MSG_SOCKET_CLOSE_REPLY, 14, 0, 0);
        vbegin("socket-close-reply-enoent", "reply", 1,
               "no registration of this connection made through that descriptor");
        vend("SOCKET_CLOSE_REPLY", SN_MSG_SOCKET_CLOSE_REPLY, 14, ENOENT, 0);

        vbegin("status", "request", 1, "ask for the status document");
        vexpect("hello", SN_MSG_STATUS_REPLY, 15, 0, false, NULL);
        vend("STATUS", SN_MSG_STATUS, 15, 0, 0);
        vbegin("status-reply", "reply", 1,
               "the status document, JSON text, not terminated (shortened here)");
        vtext("{\"version\":\"0.9\",\"pid\":4321,\"connections\":1,\"ports\":0}");
        vend("STATUS_REPLY", SN_MSG_STATUS_REPLY, 15, 0, 0);
        vbegin("status-reply-e2big", "reply", 1,
               "the document would not fit in one message: no text");
        vend("STATUS_REPLY", SN_MSG_STATUS_REPLY, 15, E2BIG, 0);

        vbegin("control", "request", 1, "an operator's request: the list of ports");
        vtext("{\"verb\":\"ports\"}");
        vexpect("hello", SN_MSG_CONTROL_REPLY, 16, 0, false, NULL);
        vend("CONTROL", SN_MSG_CONTROL, 16, 0, 0);
        vbegin("control-unknown-verb", "request", 1, "a verb the daemon does not know: EINVAL");
        vtext("{\"verb\":\"no-such-verb\"}");
        vexpect("hello", SN_MSG_CONTROL_REPLY, 17, EINVAL, false, NULL);
        vend("CONTROL", SN_MSG_CONTROL, 17, 0, 0);
        vbegin("control-reply", "reply", 1, "the answer to control: no ports");
        vtext("{\"items\":[]}");
        vend("CONTROL_REPLY", SN_MSG_CONTROL_REPLY, 16, 0, 0);
        vbegin("control-reply-einval", "reply", 1,
               "a failed CONTROL still carries a JSON object, with an error key");
        vtext("{\"error\":\"unknown verb\"}");
        vend("CONTROL_REPLY", SN_MSG_CONTROL_REPLY, 17, EINVAL, 0);
}

static void handoff(void)
{
        vbegin("port-linger", "request", 2,
               "keep a named port 5 s after its last handle closes; sent alone, the port is "
               "not this connection's: EBADF");
        VBODY(port_linger, .port = PORT, .linger_ms = 5000);
        vexpect("hello", SN_MSG_PORT_LINGER_REPLY, 18, EBADF, false, NULL);
        vend("PORT_LINGER", SN_MSG_PORT_LINGER, 18, 0, 0);
        vbegin("port-linger-reply", "reply", 2, "the linger time now in force");
        VBODY(port_linger_reply, .linger_ms = 5000);
        vend("PORT_LINGER_REPLY", SN_MSG_PORT_LINGER_REPLY, 18, 0, 0);
        vbegin("port-linger-reply-einval", "reply", 2, "the port has no name");
        VBODY(port_linger_reply, .linger_ms = 0);
        vend("PORT_LINGER_REPLY", SN_MSG_PORT_LINGER_REPLY, 18, EINVAL, 0);

        vbegin("port-take", "request", 2,
               "take up to 16 registrations without an owner; sent alone: EBADF");
        VBODY(port_take, .port = PORT, .max = 16, .flags = 0);
        vexpect("hello", SN_MSG_PORT_TAKE_REPLY, 19, EBADF, false, NULL);
        vend("PORT_TAKE", SN_MSG_PORT_TAKE, 19, 0, 0);
        vbegin("port-take-reply", "reply", 2,
               "two registrations taken, their sockets attached (nfds 2) and named by fd_index; "
               "the second a disarmed one-shot (op 0); one more left, one other holder");
        VBODY(port_take_reply, .remaining = 1, .holders = 1);
        VITEM1(registration, .key = 1, .dev = DEV, .ino = INO, .filter = 0x03, .op = 1,
               .trigger = 0x04, .fd_index = 0, .client_fd = 7);
        VITEM1(registration, .key = KEY_BIG, .dev = DEV, .ino = INO + 1, .filter = 0x01,
               .op = 0, .trigger = 0x09, .fd_index = 1, .client_fd = 8);
        vend("PORT_TAKE_REPLY", SN_MSG_PORT_TAKE_REPLY, 19, 0, 2);
        vbegin("port-take-reply-eagain", "reply", 2,
               "the reply could not be sent at once: nothing was taken, ask again");
        VBODY(port_take_reply, .remaining = 0);
        vend("PORT_TAKE_REPLY", SN_MSG_PORT_TAKE_REPLY, 19, EAGAIN, 0);
}

/* Added with the first release's later messages: LIMIT_INFO and the monitor's frames. */
static void later(void)
{
        vbegin("limit-info", "request", 1,
               "which limits refused this connection's latest requests; on a new connection "
               "none: refused 0, no items");
        vexpect("hello", SN_MSG_LIMIT_INFO_REPLY, 20, 0, false, NULL);
        vend("LIMIT_INFO", SN_MSG_LIMIT_INFO, 20, 0, 0);
        vbegin("limit-info-reply", "reply", 1,
               "three refusals so far; the two newest kept here: request 9 as a whole by "
               "max-waits-per-user (limit 10, scope user, 4096), and items 2 to 5 of request 12 "
               "by max-registrations (limit 2, scope port, 65536)");
        VBODY(limit_info_reply, .refused = 3);
        VITEM1(refusal, .request = 9, .first = 0xffffffffu, .last = 0xffffffffu, .limit = 10,
               .scope = 3, .value = 4096);
        VITEM1(refusal, .request = 12, .first = 2, .last = 5, .limit = 2, .scope = 2,
               .value = 65536);
        vend("LIMIT_INFO_REPLY", SN_MSG_LIMIT_INFO_REPLY, 20, 0, 0);

        vbegin("monitor-frame-lost", "reply", 1,
               "to a monitor only (CONTROL verb monitor), id 0: a frame with flag LOST (bit 2) "
               "and no message, telling that 17 frames were dropped while the monitor's queue "
               "was full");
        VBODY(monitor, .time_ns = 1764193500123456789ull, .conn = 5, .pid = 4321, .uid = 1000,
              .lost = 17, .length = 0, .flags = 4);
        vend("MONITOR_FRAME", SN_MSG_MONITOR_FRAME, 0, 0, 0);
}

static void invalid(void)
{
        vbegin("truncated-header", "request", 1,
               "10 bytes, shorter than a header: ERROR/EBADMSG with id 0, connection kept");
        V.framing = "EBADMSG";
        V.cut = 10;
        vexpect("hello", SN_MSG_ERROR, 0, EBADMSG, false, NULL);
        vend("invalid", SN_MSG_STATUS, 40, 0, 0);

        vbegin("size-field-disagrees", "request", 1,
               "a STATUS of 24 bytes whose size field says 28: ERROR/EBADMSG with its id");
        V.framing = "EBADMSG";
        V.size_field = 28;
        vexpect("hello", SN_MSG_ERROR, 41, EBADMSG, false, NULL);
        vend("invalid", SN_MSG_STATUS, 41, 0, 0);

        vbegin("count-too-large", "request", 1,
               "a PORT_CREATE whose count says 100 name bytes where 4 came (size field and "
               "length agree, the computed size does not): ERROR/EBADMSG");
        V.framing = "EBADMSG";
        VBODY(port_create, .concurrency = 0);
        vtext("name");
        V.count_field = 100;
        vexpect("hello", SN_MSG_ERROR, 42, EBADMSG, false, NULL);
        vend("invalid", SN_MSG_PORT_CREATE, 42, 0, 0);

        vbegin("count-without-array", "request", 1,
               "a STATUS (no array) with count 1 and one byte more: ERROR/EBADMSG");
        V.framing = "EBADMSG";
        *V.p++ = 0x7b;
        V.count_field = 1;
        vexpect("hello", SN_MSG_ERROR, 43, EBADMSG, false, NULL);
        vend("invalid", SN_MSG_STATUS, 43, 0, 0);

        vbegin("unknown-type", "request", 1,
               "type 0x42 is no message: ERROR/EOPNOTSUPP, connection kept");
        V.framing = "EOPNOTSUPP";
        vexpect("hello", SN_MSG_ERROR, 44, EOPNOTSUPP, false, NULL);
        vend("invalid", 0x42, 44, 0, 0);

        vbegin("reply-type-as-request", "request", 1,
               "a PORT_CLOSE_REPLY sent to the daemon: ERROR/EPROTO, connection kept");
        vexpect("hello", SN_MSG_ERROR, 45, EPROTO, false, NULL);
        vend("invalid", SN_MSG_PORT_CLOSE_REPLY, 45, 0, 0);

        vbegin("status-in-request", "request", 1,
               "a must-be-0 header field set: a request's status (EINVAL here): ERROR/EBADMSG, "
               "connection kept");
        vexpect("hello", SN_MSG_ERROR, 46, EBADMSG, false, NULL);
        vend("invalid", SN_MSG_STATUS, 46, EINVAL, 0);

        vbegin("nfds-without-descriptors", "request", 1,
               "a STATUS whose nfds says 1 but carries no descriptor: ERROR/EBADMSG");
        V.attached = 0;
        vexpect("hello", SN_MSG_ERROR, 47, EBADMSG, false, NULL);
        vend("invalid", SN_MSG_STATUS, 47, 0, 1);

        vbegin("port-create-flags", "request", 1,
               "a must-be-0 body field set: PORT_CREATE flags 1: EINVAL in its own reply");
        VBODY(port_create, .concurrency = 0, .flags = 1);
        vexpect("hello", SN_MSG_PORT_CREATE_REPLY, 48, EINVAL, false, NULL);
        vend("invalid", SN_MSG_PORT_CREATE, 48, 0, 0);

        vbegin("socket-close-reserved", "request", 1,
               "a must-be-0 body field set: SOCKET_CLOSE reserved 1: EINVAL in its own reply");
        VBODY(socket_close, .dev = DEV, .ino = INO, .client_fd = 7, .reserved = 1);
        vexpect("hello", SN_MSG_SOCKET_CLOSE_REPLY, 49, EINVAL, false, NULL);
        vend("invalid", SN_MSG_SOCKET_CLOSE, 49, 0, 0);

        vbegin("process-unknown-flags", "request", 1,
               "PROCESS with flags bit 2 (unknown): PROCESS_REPLY/EINVAL, nothing applied");
        VBODY(process, .port = PORT, .max_entries = 1, .flags = 0x4, .thread = THREAD);
        vexpect("hello", SN_MSG_PROCESS_REPLY, 50, EINVAL, false, NULL);
        vend("invalid", SN_MSG_PROCESS, 50, 0, 0);

        vbegin("request-before-hello", "request", 1,
               "a STATUS as the first message: ERROR/EPROTO, and the connection is closed");
        vexpect("nothing", SN_MSG_ERROR, 51, EPROTO, true, NULL);
        vend("invalid", SN_MSG_STATUS, 51, 0, 0);

        vbegin("second-hello", "request", 1,
               "HELLO on a connection that has one: ERROR/EPROTO, the connection keeps the "
               "limits of the first");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 3);
        vexpect("hello", SN_MSG_ERROR, 52, EPROTO, false, NULL);
        vend("invalid", SN_MSG_HELLO, 52, 0, 0);

        vbegin("hello-flags", "request", 1,
               "HELLO with flags bit 2 (undefined): ERROR/EINVAL, and the connection is closed");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 3, .flags = 4);
        vexpect("nothing", SN_MSG_ERROR, 53, EINVAL, true, NULL);
        vend("invalid", SN_MSG_HELLO, 53, 0, 0);

        vbegin("hello-ring-v2", "request", 1,
               "HELLO asking for the rings but offering at most version 2: ERROR/EINVAL, closed");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 1, .version_max = 2,
              .flags = SN_PROTO_HELLO_RING);
        vexpect("nothing", SN_MSG_ERROR, 54, EINVAL, true, NULL);
        vend("invalid", SN_MSG_HELLO, 54, 0, 0);

        vbegin("hello-min-above-max", "request", 1,
               "HELLO with version_min 3 above version_max 1: names no version, "
               "ERROR/EPROTONOSUPPORT, closed");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 3, .version_max = 1);
        vexpect("nothing", SN_MSG_ERROR, 55, EPROTONOSUPPORT, true, NULL);
        vend("invalid", SN_MSG_HELLO, 55, 0, 0);

        vbegin("hello-bad-magic", "request", 1,
               "HELLO with a wrong magic: ERROR/EPROTONOSUPPORT, closed");
        VBODY(hello, .magic = 0x53544e46u, .version_min = 1, .version_max = 3);
        vexpect("nothing", SN_MSG_ERROR, 56, EPROTONOSUPPORT, true, NULL);
        vend("invalid", SN_MSG_HELLO, 56, 0, 0);

        vbegin("hello-future-only", "request", 1,
               "HELLO offering only versions 4 to 5: ERROR/EPROTONOSUPPORT, closed");
        VBODY(hello, .magic = SN_PROTO_MAGIC, .version_min = 4, .version_max = 5);
        vexpect("nothing", SN_MSG_ERROR, 57, EPROTONOSUPPORT, true, NULL);
        vend("invalid", SN_MSG_HELLO, 57, 0, 0);

        vbegin("port-linger-on-v1", "request", 1,
               "PORT_LINGER on a connection that chose version 1: ERROR/EOPNOTSUPP, kept");
        VBODY(port_linger, .port = PORT, .linger_ms = 5000);
        vexpect("hello-v1", SN_MSG_ERROR, 58, EOPNOTSUPP, false, NULL);
        vend("invalid", SN_MSG_PORT_LINGER, 58, 0, 0);
}

/* ---- writing --------------------------------------------------------------------------------- */

static int write_all(const char *dir)
{
        const char *file;
        json_t *list;

        json_object_foreach(files, file, list)
        {
                json_t *doc = json_pack("{s:s,s:O}", "file", file, "vectors", list);
                char path[4096];
                FILE *f;
                int r;

                snprintf(path, sizeof(path), "%s/%s.json", dir, file);
                f = fopen(path, "we");
                if (!f) {
                        fprintf(stderr, "gen-vectors: %s: %m\n", path);
                        return 1;
                }
                r = json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                fputc('\n', f);
                json_decref(doc);
                if (r < 0 || fclose(f)) {
                        fprintf(stderr, "gen-vectors: %s: write failed\n", path);
                        return 1;
                }
        }
        return 0;
}

/* ---- checking ------------------------------------------------------------------------------- */

static bool type_seen[65536];

/* Checks one vector: its bytes decode to its "decoded" form, and the codec accepts or refuses
 * the framing as "expect" says.  Returns the number of failures (0 or 1). */
static int check_vector(const char *file, json_t *v)
{
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *hex = json_string_value(json_object_get(v, "hex"));
        json_t *expect = json_object_get(v, "expect"), *got;
        const char *framing = "ok", *verdict;
        static uint8_t buf[1 << 20];
        char *a, *b;
        long len;
        int check;

        if (!name || !hex || !json_is_integer(json_object_get(v, "nfds")) ||
            !json_is_object(json_object_get(v, "decoded"))) {
                printf("FAIL %s: a vector without name, hex, nfds or decoded\n", file);
                return 1;
        }
        len = snv_unhex(buf, sizeof(buf), hex);
        if (len < 0) {
                printf("FAIL %s/%s: hex is not hex\n", file, name);
                return 1;
        }
        if (expect && json_string_value(json_object_get(expect, "framing")))
                framing = json_string_value(json_object_get(expect, "framing"));
        got = snv_decode(buf, (size_t)len, &check);
        verdict = check == 0 ? "ok" : check == -EOPNOTSUPP ? "EOPNOTSUPP" : "EBADMSG";
        if (strcmp(verdict, framing)) {
                printf("FAIL %s/%s: the codec's framing check says %s, the vector %s\n", file,
                       name, verdict, framing);
                json_decref(got);
                return 1;
        }
        if (check == 0 && strcmp(file, "invalid"))
                type_seen[sn_get_u16(buf + 4)] = true;
        if (!got || !json_equal(got, json_object_get(v, "decoded"))) {
                a = json_dumps(json_object_get(v, "decoded"), JSON_PRESERVE_ORDER);
                b = got ? json_dumps(got, JSON_PRESERVE_ORDER) : NULL;
                printf("FAIL %s/%s: decoded differs\n  vector: %s\n  codec:  %s\n", file, name,
                       a ? a : "?", b ? b : "(not decodable)");
                free(a);
                free(b);
                json_decref(got);
                return 1;
        }
        if (check == 0 && strcmp(file, "invalid")) {
                const struct sn_msg_desc *d = sn_msg_desc(sn_get_u16(buf + 4));

                if (strcmp(d->name, file)) {
                        printf("FAIL %s/%s: a message of another type in this file\n", file,
                               name);
                        json_decref(got);
                        return 1;
                }
        }
        json_decref(got);
        return 0;
}

static int check_dir(const char *dir)
{
        struct dirent **names;
        int n, failed = 0, vectors = 0;

        n = scandir(dir, &names, NULL, alphasort);
        if (n < 0) {
                fprintf(stderr, "gen-vectors: %s: %m\n", dir);
                return 1;
        }
        for (int i = 0; i < n; i++) {
                const char *fn = names[i]->d_name;
                size_t len = strlen(fn);
                char path[4096], file[256];
                json_error_t err;
                json_t *doc, *v;
                size_t j;

                if (len < 6 || strcmp(fn + len - 5, ".json") || len - 5 >= sizeof(file)) {
                        free(names[i]);
                        continue;
                }
                snprintf(file, sizeof(file), "%.*s", (int)(len - 5), fn);
                snprintf(path, sizeof(path), "%s/%s", dir, fn);
                free(names[i]);
                doc = json_load_file(path, 0, &err);
                if (!doc || !json_is_array(json_object_get(doc, "vectors"))) {
                        printf("FAIL %s: %s\n", path, doc ? "no vectors array" : err.text);
                        json_decref(doc);
                        failed++;
                        continue;
                }
                json_array_foreach(json_object_get(doc, "vectors"), j, v)
                {
                        failed += check_vector(file, v);
                        vectors++;
                }
                json_decref(doc);
        }
        free(names);
        /* Every message type has at least one valid example. */
#define SEEN(NAME, code, body, i1, i2, doc)                                                        \
        if (!type_seen[code]) {                                                                    \
                printf("FAIL no valid vector of %s\n", #NAME);                                     \
                failed++;                                                                          \
        }
        SN_MESSAGES(SEEN)
#undef SEEN
        printf("%d vectors checked, %d failures\n", vectors, failed);
        return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
        int r;

        if (argc != 3 || (strcmp(argv[1], "--write") && strcmp(argv[1], "--check"))) {
                fprintf(stderr, "usage: gen-vectors --write DIR | --check DIR\n");
                return 2;
        }
        if (!strcmp(argv[1], "--check"))
                return check_dir(argv[2]);
        files = json_object();
        session();
        ports();
        process();
        post_close_status();
        handoff();
        later();
        invalid();
        json_decref(V.array1);
        json_decref(V.array2);
        r = write_all(argv[2]);
        json_decref(files);
        return r;
}

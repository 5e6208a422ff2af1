/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * monitor.c - socknotifyctl monitor: the requests and replies of the daemon's clients, live.
 *
 * The tool opens its own connection (the socket transport, no library: it speaks the protocol
 * with proto/codec), asks CONTROL {"verb": "monitor"} and from then on only reads
 * MONITOR_FRAMEs, each one message a client sent or was sent, decoded with the same walk over
 * messages.def as the daemon's tracer.  The daemon decides what this user may see, applies the
 * filters, and drops frames (and counts them) when the tool reads too slowly; the tool prints
 * the count where they were lost.
 *
 * Everything in a frame is the daemon's word about a client's bytes: hostile.  A frame is
 * checked by sn_msg_check() before any field is used, the message inside it again, and client
 * text reaches the terminal only escaped (no control character), --json output as ASCII.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/macro.h"
#include "common/path.h"
#include "ctl/escape.h"
#include "ctl/monitor.h"
#include "proto/codec.h"

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_NODAEMON = 3 };

/* Most items of one array printed on a text line; --json prints them all. */
#define TEXT_ITEMS 16

static bool opt_json;

/* ---- talking to the daemon ---------------------------------------------------------------- */

static int connect_to(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int e = errno;

                close(fd);
                return -e;
        }
        return fd;
}

/* Connects to the first socket that answers; on failure says, for every path tried, why. */
static int connect_daemon(const char *explicit_path)
{
        struct sn_socket_candidate cand[SN_SOCKET_CANDIDATES_MAX];
        int n = sn__socket_candidates(explicit_path, cand), err[SN_SOCKET_CANDIDATES_MAX];
        bool denied = false;

        if (n < 0) {
                fprintf(stderr, "socknotifyctl: the socket path is too long for a socket "
                                "address\n");
                exit(EXIT_USAGE);
        }
        for (int i = 0; i < n; i++) {
                int fd = connect_to(cand[i].path);

                if (fd >= 0)
                        return fd;
                err[i] = -fd;
                denied |= err[i] == EACCES || err[i] == EPERM;
        }
        fprintf(stderr, "socknotifyctl: cannot reach socknotifyd:\n");
        for (int i = 0; i < n; i++)
                fprintf(stderr, "  %s: %s\n", cand[i].path, strerror(err[i]));
        if (denied)
                fprintf(stderr, "  Permission denied: the system daemon's socket is for the "
                                "members of its group (socknotify).\n");
        else
                fprintf(stderr, "  Is the daemon running? Choose another socket with -s PATH or "
                                "SOCKNOTIFY_SOCKET=PATH.\n");
        exit(EXIT_NODAEMON);
}

static void send_msg(int fd, const uint8_t *buf, size_t len)
{
        if (send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
                fprintf(stderr, "socknotifyctl: sending to the daemon failed: %s\n",
                        strerror(errno));
                exit(EXIT_NODAEMON);
        }
}

/* Receives one whole, well-formed message of the expected type; exits otherwise. */
static size_t recv_reply(int fd, uint8_t *buf, size_t cap, uint16_t type, struct snw_header *h,
                         const struct sn_msg_desc **d)
{
        ssize_t n = recv(fd, buf, cap, MSG_TRUNC);

        if (n <= 0 || (size_t)n > cap || sn_msg_check(buf, (size_t)n, h, d) < 0 ||
            (h->type != type && h->type != SN_MSG_ERROR)) {
                fprintf(stderr, "socknotifyctl: %s\n",
                        n == 0  ? "the daemon closed the connection"
                        : n < 0 ? strerror(errno)
                                : "the daemon's answer is not what the protocol says");
                exit(EXIT_NODAEMON);
        }
        return (size_t)n;
}

/* HELLO (the socket transport), then CONTROL monitor.  Returns the largest message. */
static size_t start(int fd, uint32_t pid, uint32_t port)
{
        uint8_t buf[4096];
        struct snw_hello hello = { .magic = SN_PROTO_MAGIC,
                                   .version_min = SN_PROTO_VERSION_MIN,
                                   .version_max = SN_PROTO_VERSION };
        struct snw_hello_reply hr;
        const struct sn_msg_desc *d;
        struct snw_header h;
        json_t *req, *ans;
        json_error_t je;
        char *text;
        size_t len;

        snw_hello_encode(sn_msg_begin(buf, SN_MSG_HELLO, 1, 0, 0, 0, 0), &hello);
        send_msg(fd, buf, sn_msg_size(SN_MSG_HELLO, 0, 0));
        recv_reply(fd, buf, sizeof(buf), SN_MSG_HELLO_REPLY, &h, &d);
        if (h.type != SN_MSG_HELLO_REPLY || h.status) {
                fprintf(stderr, "socknotifyctl: the daemon refused the connection: %s\n",
                        strerror((int)SN_MIN(h.status, 4095u)));
                exit(EXIT_REFUSED);
        }
        snw_hello_reply_decode(sn_msg_body(buf), &hr);
        req = json_pack("{s:s}", "verb", "monitor");
        if (pid)
                json_object_set_new(req, "client", json_integer(pid));
        if (port)
                json_object_set_new(req, "port", json_integer(port));
        text = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        len = strlen(text);
        memcpy(sn_msg_begin(buf, SN_MSG_CONTROL, 2, 0, 0, (uint32_t)len, 0), text, len);
        free(text);
        send_msg(fd, buf, sn_msg_size(SN_MSG_CONTROL, (uint32_t)len, 0));
        len = recv_reply(fd, buf, sizeof(buf), SN_MSG_CONTROL_REPLY, &h, &d);
        if (h.status) {
                const char *why = NULL;

                ans = h.type == SN_MSG_CONTROL_REPLY
                              ? json_loadb((const char *)sn_msg_array(buf, d, 1), h.count, 0, &je)
                              : NULL;
                why = json_string_value(json_object_get(ans, "error"));
                fprintf(stderr, "socknotifyctl: monitor refused: %s%s%s\n",
                        strerrorname_np((int)SN_MIN(h.status, 4095u))
                                ? strerrorname_np((int)h.status)
                                : "error",
                        why ? ": " : "", why ? why : "");
                json_decref(ans);
                exit(EXIT_REFUSED);
        }
        /* Hostile too: a frame is never larger than the daemon's max_message. */
        return SN_MAX(SN_MIN((size_t)hr.max_message, (size_t)64 << 20), (size_t)4096);
}

/* ---- decoding ------------------------------------------------------------------------------ */

/* Bytes as JSON: a string when valid UTF-8, else an array of the byte values (as CONTROL). */
static json_t *json_bytes(const uint8_t *b, size_t n)
{
        json_t *v = json_stringn((const char *)b, n);

        if (v)
                return v;
        v = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(v, json_integer(b[i]));
        return v;
}

static const char *status_name(uint32_t status)
{
        const char *n = status < 4096 ? strerrorname_np((int)status) : NULL;

        return n ? n : "E?";
}

/* Text of one message's fields, built by the walk. */
struct text_out {
        char *p;
        size_t left;
        int section;
        uint32_t index, shown[3], total[3];
        const char *item[3];
};

static void text_add(struct text_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct text_out *o, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(o->p, o->left, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= o->left) {
                o->p += o->left ? o->left - 1 : 0;
                o->left = o->left ? 1 : 0;
                return;
        }
        o->p += n;
        o->left -= (size_t)n;
}

static void text_field(void *ctx, int section, uint32_t index, const char *name, unsigned bits,
                       uint64_t value)
{
        struct text_out *o = ctx;

        if (section && index >= TEXT_ITEMS)
                return;
        if (section != o->section || index != o->index) {
                if (o->section)
                        text_add(o, "]");
                text_add(o, " [%s", o->item[section]);
                o->section = section;
                o->index = index;
        }
        /* 64-bit values are keys, overlapped values and socket identities: opaque, in hex
         * as Windows programmers see pointers. */
        if (bits == 64)
                text_add(o, " %s=0x%" PRIx64, name, value);
        else
                text_add(o, " %s=%" PRIu64, name, value);
}

/* JSON of one message's fields: "body" and one array per item type. */
struct json_out {
        json_t *msg, *cur;
        int section;
        uint32_t index;
        const char *item[3];
};

static void json_field(void *ctx, int section, uint32_t index, const char *name, unsigned bits,
                       uint64_t value)
{
        struct json_out *o = ctx;
        char hex[24];

        if (section != o->section || index != o->index || !o->cur) {
                json_t *arr;

                o->cur = json_object();
                if (section == 0) {
                        json_object_set_new(o->msg, "body", o->cur);
                } else {
                        arr = json_object_get(o->msg, o->item[section]);
                        if (!arr) {
                                arr = json_array();
                                json_object_set_new(o->msg, o->item[section], arr);
                        }
                        json_array_append_new(arr, o->cur);
                }
                o->section = section;
                o->index = index;
        }
        /* 64-bit values exactly, as strings: JSON numbers lose them past 2^53. */
        if (bits == 64) {
                snprintf(hex, sizeof(hex), "0x%" PRIx64, value);
                json_object_set_new(o->cur, name, json_string(hex));
        } else {
                json_object_set_new(o->cur, name, json_integer((json_int_t)value));
        }
}

/* The byte array of a message (PORT_CREATE's name, STATUS and CONTROL text). */
static const uint8_t *text_array(const uint8_t *msg, const struct sn_msg_desc *d,
                                 const struct snw_header *h, uint32_t *n)
{
        if (!strcmp(d->item1, "byte")) {
                *n = h->count;
                return sn_msg_array(msg, d, 1);
        }
        return NULL;
}

static void print_lost(uint64_t lost)
{
        if (opt_json)
                printf("{\"lost\":%" PRIu64 "}\n", lost);
        else
                printf("%" PRIu64 " frame%s lost\n", lost, lost == 1 ? "" : "s");
}

/* One frame: its message, decoded when whole and well-formed. */
static void print_frame(const struct snw_monitor *f, const uint8_t *msg, uint32_t n)
{
        bool reply = f->flags & SN_PROTO_MONITOR_REPLY;
        bool whole = n == f->length;
        const struct sn_msg_desc *d = NULL;
        struct snw_header h = { 0 };
        bool ok = whole && sn_msg_check(msg, n, &h, &d) == 0;
        time_t sec = (time_t)(f->time_ns / 1000000000u);
        long nsec = (long)(f->time_ns % 1000000000u);
        struct tm tm;
        char when[64];

        if (!ok && n >= SN_HEADER_SIZE) {
                /* A cut or malformed message: its header says what it was. */
                snw_header_decode(msg, &h);
                d = sn_msg_desc(h.type);
        }
        if (opt_json) {
                json_t *o = json_object();
                char *text;

                gmtime_r(&sec, &tm);
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
                snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%09ldZ", nsec);
                json_object_set_new(o, "time", json_string(when));
                json_object_set_new(o, "conn", json_integer((json_int_t)f->conn));
                json_object_set_new(o, "pid", json_integer(f->pid));
                json_object_set_new(o, "uid", json_integer(f->uid));
                json_object_set_new(o, "direction", json_string(reply ? "reply" : "request"));
                json_object_set_new(o, "transport",
                                    json_string(f->flags & SN_PROTO_MONITOR_RING ? "rings"
                                                                                : "socket"));
                json_object_set_new(o, "length", json_integer(f->length));
                json_object_set_new(o, "truncated", json_boolean(!whole));
                if (n >= SN_HEADER_SIZE) {
                        json_object_set_new(o, "type", d ? json_string(d->name) : json_null());
                        json_object_set_new(o, "type_code", json_integer(h.type));
                        json_object_set_new(o, "id", json_integer(h.id));
                        json_object_set_new(o, "status", json_integer(h.status));
                        json_object_set_new(o, "status_name",
                                            h.status ? json_string(status_name(h.status))
                                                     : json_null());
                        json_object_set_new(o, "nfds", json_integer(h.nfds));
                }
                json_object_set_new(o, "decoded", json_boolean(ok));
                if (ok) {
                        struct json_out jo = { .msg = o, .section = -1,
                                               .item = { d->body, d->item1, d->item2 } };
                        uint32_t tn = 0;
                        const uint8_t *t = text_array(msg, d, &h, &tn);

                        sn_msg_fields(msg, d, &h, json_field, &jo);
                        if (t)
                                json_object_set_new(o, "text", json_bytes(t, tn));
                }
                text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
                if (text)
                        puts(text);
                free(text);
                json_decref(o);
                return;
        }
        char line[4096], *name = NULL;
        struct text_out to = { .p = line, .left = sizeof(line), .section = 0, .index = 0 };

        localtime_r(&sec, &tm);
        strftime(when, sizeof(when), "%H:%M:%S", &tm);
        line[0] = 0;
        if (n < SN_HEADER_SIZE) {
                text_add(&to, " <%" PRIu32 " bytes: no message header>", f->length);
        } else {
                if (!d) {
                        text_add(&to, " type 0x%04x", h.type);
                } else {
                        name = ctl_escape((const uint8_t *)d->name, strlen(d->name), "\"");
                        text_add(&to, " %s", name ? name : "?");
                }
                text_add(&to, " id=%" PRIu32, h.id);
                if (h.status)
                        text_add(&to, " %s", status_name(h.status));
                if (h.nfds)
                        text_add(&to, " nfds=%" PRIu16, h.nfds);
                if (ok) {
                        uint32_t tn = 0;
                        const uint8_t *t = text_array(msg, d, &h, &tn);

                        to.item[1] = d->item1;
                        to.item[2] = d->item2;
                        sn_msg_fields(msg, d, &h, text_field, &to);
                        if (to.section)
                                text_add(&to, "]");
                        if (h.count > TEXT_ITEMS && !t)
                                text_add(&to, " (%" PRIu32 " %s)", h.count, d->item1);
                        if (h.count2 > TEXT_ITEMS)
                                text_add(&to, " (%" PRIu32 " %s)", h.count2, d->item2);
                        if (t) {
                                char *s = ctl_escape(t, SN_MIN(tn, 512u), "\"");

                                text_add(&to, " \"%s\"%s", s ? s : "", tn > 512 ? "..." : "");
                                free(s);
                        }
                } else if (!whole) {
                        text_add(&to, " (cut: %" PRIu32 " of %" PRIu32 " bytes)", n, f->length);
                } else {
                        text_add(&to, " (malformed)");
                }
        }
        printf("%s.%06ld %" PRIu32 " %s%s%s\n", when, nsec / 1000, f->pid, reply ? "<-" : "->",
               line, f->flags & SN_PROTO_MONITOR_RING ? " (rings)" : "");
        free(name);
}

/* ---- the verb ------------------------------------------------------------------------------ */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
        (void)sig;
        stop = 1;
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: socknotifyctl monitor [--client=PID] [--port=ID] [--json]\n"
                   "Show the requests and replies of the daemon's clients as they pass; Ctrl-C "
                   "ends.\n");
}

static bool parse_u32(const char *s, uint32_t *ret)
{
        char *end = NULL;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || !end || *end || *s == '-' || !*s || v == 0 || v > UINT32_MAX)
                return false;
        *ret = (uint32_t)v;
        return true;
}

int ctl_monitor(int argc, char **argv, const char *socket_path, bool json)
{
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "client", required_argument, NULL, 'c' },
                { "port", required_argument, NULL, 'p' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint32_t pid = 0, port = 0;
        uint64_t shown = 0, lost = 0;
        sigset_t stop_set, old_set;
        uint8_t *buf;
        size_t cap;
        int o, fd, status = 0;

        opt_json = json;
        optind = 1;
        while ((o = getopt_long(argc, argv, "+s:jh", options, NULL)) >= 0) {
                switch (o) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'j':
                        opt_json = true;
                        break;
                case 'c':
                case 'p':
                        if (!parse_u32(optarg, o == 'c' ? &pid : &port)) {
                                fprintf(stderr, "socknotifyctl: --%s: a number from 1 to "
                                                "4294967295\n",
                                        o == 'c' ? "client" : "port");
                                return EXIT_USAGE;
                        }
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return EXIT_USAGE;
                }
        }
        if (optind != argc) {
                usage(stderr);
                return EXIT_USAGE;
        }
        /* Ctrl-C ends the view: the signals are taken only while waiting (ppoll), so none is
         * lost between the test of the flag and the wait. */
        sigemptyset(&stop_set);
        sigaddset(&stop_set, SIGINT);
        sigaddset(&stop_set, SIGTERM);
        sigaction(SIGINT, &(struct sigaction){ .sa_handler = on_stop }, NULL);
        sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_stop }, NULL);
        fd = connect_daemon(socket_path);
        cap = start(fd, pid, port);
        buf = malloc(cap);
        if (!buf) {
                perror("socknotifyctl");
                return EXIT_REFUSED;
        }
        /* One line per frame, at once, also into a pipe. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        sigprocmask(SIG_BLOCK, &stop_set, &old_set);
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                const struct sn_msg_desc *d;
                struct snw_monitor f;
                struct snw_header h;
                ssize_t n;

                if (stop)
                        break;
                if (ppoll(&p, 1, NULL, &old_set) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                n = recv(fd, buf, cap, MSG_TRUNC | MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0) {
                        fprintf(stderr, "socknotifyctl: the daemon ended the monitor (it "
                                        "stopped, re-executed or restarted)\n");
                        status = EXIT_NODAEMON;
                        break;
                }
                if ((size_t)n > cap || sn_msg_check(buf, (size_t)n, &h, &d) < 0 ||
                    h.type != SN_MSG_MONITOR_FRAME) {
                        fprintf(stderr, "socknotifyctl: the daemon sent something other than a "
                                        "monitor frame; ignored\n");
                        continue;
                }
                snw_monitor_decode(sn_msg_body(buf), &f);
                if (f.lost) {
                        lost += f.lost;
                        print_lost(f.lost);
                }
                if (f.flags & SN_PROTO_MONITOR_LOST)
                        continue;
                shown++;
                print_frame(&f, sn_msg_array(buf, d, 1), SN_MIN(h.count, f.length));
        }
        sigprocmask(SIG_SETMASK, &old_set, NULL);
        fflush(stdout);
        fprintf(stderr, "socknotifyctl: %" PRIu64 " frame%s shown, %" PRIu64 " lost\n", shown,
                shown == 1 ? "" : "s", lost);
        free(buf);
        close(fd);
        return status;
}

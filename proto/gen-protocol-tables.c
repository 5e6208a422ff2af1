/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * gen-protocol-tables.c - prints the field tables of PROTOCOL.md from messages.def.
 *
 * With --man it prints the same tables as tbl(7) input for socknotify-protocol(7).  With
 * --statuses (--man-statuses) it prints the status matrix of proto/statuses.def for PROTOCOL.md
 * (the man page), with --status-list the same as lines of words for tests/check-errors.sh, and
 * with --json the whole declaration as messages.json (its schema: proto/messages.schema.json).
 *
 * `make check` compares this output with the block between the GENERATED markers in
 * proto/PROTOCOL.md, so the document cannot drift from the code.  To refresh the document:
 *   proto/gen-protocol-tables > tables.md  and paste it between the markers.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proto/codec.h"

static unsigned offset;
static int man;

static void table_begin(void)
{
        if (man)
                printf(".TS\nallbox;\nl l l lx.\noffset\ttype\tfield\tmeaning\n");
        else
                printf("| offset | type | field | meaning |\n|---|---|---|---|\n");
}

static void table_row(unsigned off, const char *type, const char *name, const char *doc)
{
        if (man)
                printf("%u\t%s\t%s\tT{\n%s\nT}\n", off, type, name, doc);
        else
                printf("| %u | %s | `%s` | %s |\n", off, type, name, doc);
}

static void table_end(int size)
{
        if (man)
                printf(".TE\n.PP\nSize: %d bytes.\n", size);
        else
                printf("\nSize: %d bytes.\n\n", size);
}

static void heading(int level, const char *text)
{
        if (man) {
                printf(".SS ");
                for (; *text; text++)
                        if (*text != '`')
                                putchar(*text);
                putchar('\n');
        } else
                printf("%s %s\n\n", level == 3 ? "###" : "####", text);
}

#define ROW(t, n, d)                                                                               \
        table_row(offset, #t, #n, d);                                                              \
        offset += SN_WSIZE_##t;

#define TABLE(name)                                                                                \
        static void table_##name(void)                                                             \
        {                                                                                          \
                offset = 0;                                                                        \
                table_begin();                                                                     \
                SN_FIELDS_##name(ROW) table_end(SN_WIRE_SIZE_##name);                              \
        }
#define TABLE_ITEM(name, doc) TABLE(name)
TABLE(header)
SN_ITEMS(TABLE_ITEM)
SN_BODIES(TABLE)

/* ---- statuses ---------------------------------------------------------------------------- */

struct status_row {
        const char *request;
        const char *status;
        int value;
        const char *reply;
        int closed;
        const char *meaning;
};

static const struct status_row status_rows[] = {
#define STATUS_ROW(R, E, K, C, D) { #R, #E, E, #K, C, D },
        SN_STATUSES(STATUS_ROW)
#undef STATUS_ROW
};

#define NSTATUS (sizeof(status_rows) / sizeof(status_rows[0]))

/* What a REPLY value means for request r, in the words of the matrix. */
static const char *reply_words(const struct status_row *r)
{
        static char buf[64];

        if (!strcmp(r->reply, "ERROR"))
                return "ERROR";
        if (!strcmp(r->reply, "RESULTS"))
                return "PROCESS_REPLY, results present";
        if (!strcmp(r->reply, "ITEM"))
                return "item result";
        if (!strcmp(r->request, "PROCESS"))
                return "PROCESS_REPLY, count 0";
        snprintf(buf, sizeof(buf), "%s_REPLY", r->request);
        return buf;
}

/* Markdown: one table.  Man: a table per request under its own heading, with the reply type in a
 * word, so that it fits 80 columns. */
static void print_statuses(int as_man)
{
        const char *last = "";

        if (!as_man)
                printf("| request | status | reply | closed | meaning |\n|---|---|---|---|---|\n");
        for (size_t i = 0; i < NSTATUS; i++) {
                const struct status_row *r = &status_rows[i];

                if (!as_man) {
                        printf("| %s | `%s` | %s | %s | %s |\n", r->request, r->status,
                               reply_words(r), r->closed ? "yes" : "no", r->meaning);
                        continue;
                }
                if (strcmp(last, r->request)) {
                        printf("%s.SS %s\n.TS\nallbox;\nl l l lx.\nstatus\treply\tclosed\tmeaning\n",
                               *last ? ".TE\n" : "", r->request);
                        last = r->request;
                }
                printf("%s\t%s\t%s\tT{\n%s\nT}\n", r->status,
                       !strcmp(r->reply, "ERROR") ? "ERROR" : !strcmp(r->reply, "RESULTS") ? "results"
                       : !strcmp(r->reply, "ITEM") ? "item" : "own",
                       r->closed ? "yes" : "no", r->meaning);
        }
        printf(as_man ? ".TE\n" : "\n");
}

/* ---- messages.json ------------------------------------------------------------------------- */

static json_t *fields_json;
static unsigned json_offset;
static const char *json_body;

static int field_version(const char *body, const char *field, int dflt)
{
#define FIELD_VERSION(b, f, v, d)                                                                  \
        if (!strcmp(body, #b) && !strcmp(field, #f))                                               \
                return v;
        SN_FIELD_VERSIONS(FIELD_VERSION)
#undef FIELD_VERSION
        return dflt;
}

static int json_version;

#define JSON_FIELD(t, n, d)                                                                        \
        json_array_append_new(fields_json,                                                         \
                              json_pack("{s:s,s:s,s:i,s:i,s:s,s:i}", "name", #n, "type", #t,      \
                                        "offset", (int)json_offset, "size", SN_WSIZE_##t,          \
                                        "meaning", d, "version",                                   \
                                        field_version(json_body, #n, json_version)));              \
        json_offset += SN_WSIZE_##t;

#define JSON_LAYOUT(name)                                                                          \
        static json_t *layout_##name(int version)                                                  \
        {                                                                                          \
                fields_json = json_array();                                                        \
                json_offset = 0;                                                                   \
                json_body = #name;                                                                 \
                json_version = version;                                                            \
                SN_FIELDS_##name(JSON_FIELD) return json_pack("{s:s,s:i,s:o}", "name", #name,      \
                                                              "size", SN_WIRE_SIZE_##name,         \
                                                              "fields", fields_json);              \
        }
#define JSON_LAYOUT_ITEM(name, doc) JSON_LAYOUT(name)
JSON_LAYOUT(header)
SN_ITEMS(JSON_LAYOUT_ITEM)
SN_BODIES(JSON_LAYOUT)

static int message_version(const char *name)
{
#define MESSAGE_VERSION(N, v)                                                                      \
        if (!strcmp(name, #N))                                                                     \
                return v;
        SN_MESSAGE_VERSIONS(MESSAGE_VERSION)
#undef MESSAGE_VERSION
        return 0;
}

/* The statuses of one request (CONNECT and ANY included) as an array of objects. */
static json_t *statuses_json(const char *request)
{
        json_t *a = json_array();

        for (size_t i = 0; i < NSTATUS; i++) {
                const struct status_row *r = &status_rows[i];

                if (strcmp(r->request, request))
                        continue;
                json_array_append_new(a, json_pack("{s:s,s:i,s:s,s:b,s:s}", "status", r->status,
                                                   "value", r->value, "reply",
                                                   r->reply, "closed", r->closed, "meaning",
                                                   r->meaning));
        }
        return a;
}

static int print_json(void)
{
        json_t *root = json_object(), *msgs = json_array(), *bodies = json_object(),
               *items = json_object(), *st = json_object(), *limits = json_array();
        char *text;

#define JSON_ITEM(name, doc)                                                                       \
        if (SN_WIRE_SIZE_##name) {                                                                 \
                json_t *it = layout_##name(1);                                                     \
                json_object_set_new(it, "meaning", json_string(doc));                              \
                json_object_set_new(items, #name, it);                                             \
        }
        SN_ITEMS(JSON_ITEM)
#define JSON_MSG(NAME, code, body, i1, i2, doc)                                                    \
        {                                                                                          \
                int v = message_version(#NAME);                                                    \
                json_t *m = json_pack("{s:s,s:i,s:s,s:i,s:s,s:o,s:o,s:s,s:i}", "name", #NAME,      \
                                      "code", code, "direction",                                   \
                                      code & SN_PROTO_REPLY_BIT ? "reply" : "request", "version",  \
                                      v, "body", #body, "item1",                                   \
                                      strcmp(#i1, "none") ? json_string(#i1) : json_null(),        \
                                      "item2",                                                     \
                                      strcmp(#i2, "none") ? json_string(#i2) : json_null(),        \
                                      "meaning", doc, "fixed_size",                                \
                                      (int)(SN_HEADER_SIZE + SN_WIRE_SIZE_##body));                \
                json_array_append_new(msgs, m);                                                    \
                if (!json_object_get(bodies, #body))                                               \
                        json_object_set_new(bodies, #body, layout_##body(v));                      \
                if (!(code & SN_PROTO_REPLY_BIT))                                                  \
                        json_object_set_new(st, #NAME, statuses_json(#NAME));                      \
        }
        SN_MESSAGES(JSON_MSG)
#define JSON_LIMIT(t, n, d)                                                                        \
        if (strncmp(#n, "max_", 4) == 0)                                                           \
                json_array_append_new(limits, json_pack("{s:s,s:s}", "name", #n, "meaning", d));
        SN_FIELDS_hello_reply(JSON_LIMIT)

        json_object_set_new(root, "format", json_integer(1));
        json_object_set_new(root, "magic", json_integer(SN_PROTO_MAGIC));
        json_object_set_new(root, "versions", json_pack("{s:i,s:i}", "min", SN_PROTO_VERSION_MIN,
                                                        "max", SN_PROTO_VERSION));
        json_object_set_new(root, "reply_bit", json_integer(SN_PROTO_REPLY_BIT));
        json_object_set_new(root, "byte_order", json_string("little-endian"));
        json_object_set_new(root, "header", layout_header(1));
        json_object_set_new(root, "messages", msgs);
        json_object_set_new(root, "bodies", bodies);
        json_object_set_new(root, "items", items);
        json_object_set_new(root, "statuses", st);
        json_object_set_new(root, "connection_statuses", statuses_json("CONNECT"));
        json_object_set_new(root, "any_request_statuses", statuses_json("ANY"));
        json_object_set_new(root, "limits", limits);
        text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(root);
        if (!text)
                return 1;
        puts(text);
        free(text);
        return 0;
}

/* Every status line as words: request status value reply closed. */
static void print_status_list(void)
{
        for (size_t i = 0; i < NSTATUS; i++)
                printf("%s %s %d %s %d\n", status_rows[i].request, status_rows[i].status,
                       status_rows[i].value, status_rows[i].reply, status_rows[i].closed);
}

int main(int argc, char **argv)
{
        const char *mode = argc > 1 ? argv[1] : "";

        if (!strcmp(mode, "--json"))
                return print_json();
        if (!strcmp(mode, "--statuses") || !strcmp(mode, "--man-statuses")) {
                print_statuses(!strcmp(mode, "--man-statuses"));
                return 0;
        }
        if (!strcmp(mode, "--status-list")) {
                print_status_list();
                return 0;
        }
        man = !strcmp(mode, "--man");
        heading(3, "Header");
        table_header();

        heading(3, "Messages");
        if (man)
                printf(".TS\nallbox;\nl l l lx.\ntype\tname\tbody; arrays\tpurpose\n");
        else
                printf("| type | name | body | first array | second array | purpose |\n"
                       "|---|---|---|---|---|---|\n");
#define MSG_ROW(NAME, code, body, i1, i2, doc)                                                     \
        if (man)                                                                                   \
                printf("0x%02x\t%s\tT{\n%s%s%s%s%s\nT}\tT{\n%s\nT}\n", code, #NAME, #body,            \
                       strcmp(#i1, "none") ? "; " : "", strcmp(#i1, "none") ? #i1 : "",            \
                       strcmp(#i2, "none") ? ", " : "", strcmp(#i2, "none") ? #i2 : "", doc);     \
        else                                                                                       \
                printf("| 0x%02x | %s | %s | %s | %s | %s |\n", code, #NAME, #body, #i1, #i2, doc);
        SN_MESSAGES(MSG_ROW)
        printf(man ? ".TE\n" : "\n");

        if (!man)
                printf("### Bodies\n\n");
#define BODY(name)                                                                                 \
        heading(4, "body `" #name "`");                                                        \
        if (SN_WIRE_SIZE_##name)                                                                   \
                table_##name();                                                                    \
        else                                                                                       \
                printf(man ? "No fields (0 bytes).\n" : "No fields (0 bytes).\n\n");
        SN_BODIES(BODY)

        if (!man)
                printf("### Array items\n\n");
#define ITEM(name, doc)                                                                            \
        if (SN_WIRE_SIZE_##name) {                                                                 \
                heading(4, "item `" #name "`: " doc);                                             \
                table_##name();                                                                    \
        }
        SN_ITEMS(ITEM)
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * test-messages-json.c - the installed description, proto/messages.json, agrees with the codec.
 *
 * messages.json is printed by proto/gen-protocol-tables from the same macros as the codec, so it
 * could only disagree through the generator: this reads the generated file back and checks every
 * message's code, name, body and item sizes against sn_msg_desc() and the wire sizes, every
 * field offset against its predecessors, and that no codec type is missing from the file.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proto/codec.h"

static int failures;

#define FAIL(...)                                                                                  \
        do {                                                                                       \
                printf("FAIL: " __VA_ARGS__);                                                      \
                putchar('\n');                                                                     \
                failures++;                                                                        \
        } while (0)

/* The size a layout of the file declares, after checking that its fields follow each other. */
static long layout_size(json_t *layouts, const char *name)
{
        json_t *l = json_object_get(layouts, name), *f;
        long off = 0;
        size_t i;

        if (!l) {
                FAIL("layout %s missing", name);
                return -1;
        }
        json_array_foreach(json_object_get(l, "fields"), i, f)
        {
                if (json_integer_value(json_object_get(f, "offset")) != off)
                        FAIL("%s.%s at offset %lld, expected %ld", name,
                             json_string_value(json_object_get(f, "name")),
                             json_integer_value(json_object_get(f, "offset")), off);
                off += (long)json_integer_value(json_object_get(f, "size"));
        }
        if (json_integer_value(json_object_get(l, "size")) != off)
                FAIL("%s: size %lld, fields add up to %ld", name,
                     json_integer_value(json_object_get(l, "size")), off);
        return off;
}

static long item_size(json_t *root, json_t *item)
{
        return json_is_string(item) ? layout_size(json_object_get(root, "items"),
                                                  json_string_value(item))
                                    : 0;
}

int main(void)
{
        const char *dir = getenv("SN_BUILDDIR") ? getenv("SN_BUILDDIR") : SN_BUILDDIR;
        char path[4096];
        json_error_t je;
        json_t *root, *m;
        unsigned seen[256] = { 0 };
        size_t i;

        snprintf(path, sizeof(path), "%s/proto/messages.json", dir);
        root = json_load_file(path, 0, &je);
        if (!root) {
                printf("FAIL: %s: %s (line %d)\n", path, je.text, je.line);
                return 1;
        }
        if (json_integer_value(json_object_get(root, "magic")) != SN_PROTO_MAGIC)
                FAIL("magic");
        if (layout_size(json_object_get(root, "bodies"), "empty") != 0 ||
            json_integer_value(json_object_get(json_object_get(root, "header"), "size")) !=
                    SN_HEADER_SIZE)
                FAIL("header size");
        json_array_foreach(json_object_get(root, "messages"), i, m)
        {
                long code = (long)json_integer_value(json_object_get(m, "code"));
                const char *name = json_string_value(json_object_get(m, "name"));
                const struct sn_msg_desc *d = code >= 0 && code < 256
                                                      ? sn_msg_desc((uint16_t)code) : NULL;
                long body = layout_size(json_object_get(root, "bodies"),
                                        json_string_value(json_object_get(m, "body")));

                if (!d || !name || strcmp(d->name, name)) {
                        FAIL("message %s: code 0x%02lx is %s in codec.h", name ? name : "?", code,
                             d ? d->name : "no type");
                        continue;
                }
                seen[code]++;
                if (body != (long)d->body_size)
                        FAIL("%s: body %ld bytes, codec %u", name, body, d->body_size);
                if (item_size(root, json_object_get(m, "item1")) != (long)d->item1_size ||
                    item_size(root, json_object_get(m, "item2")) != (long)d->item2_size)
                        FAIL("%s: array items differ from the codec", name);
                if (json_integer_value(json_object_get(m, "fixed_size")) !=
                    (long)sn_msg_size(d->type, 0, 0))
                        FAIL("%s: fixed_size differs from sn_msg_size()", name);
                if (!!(code & SN_PROTO_REPLY_BIT) !=
                    !strcmp(json_string_value(json_object_get(m, "direction")), "reply"))
                        FAIL("%s: direction", name);
        }
        for (unsigned t = 0; t < 256; t++) {
                if (sn_msg_desc((uint16_t)t) && seen[t] != 1)
                        FAIL("codec type 0x%02x (%s) appears %u times in messages.json", t,
                             sn_msg_desc((uint16_t)t)->name, seen[t]);
        }
        json_decref(root);
        if (!failures)
                printf("PASS: every message of messages.json matches codec.h\n");
        return failures ? 1 : 0;
}

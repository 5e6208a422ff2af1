/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * gen-protocol-tables.c - prints the field tables of PROTOCOL.md from messages.def.
 *
 * With --man it prints the same tables as tbl(7) input for socknotify-protocol(7).
 *
 * `make check` compares this output with the block between the GENERATED markers in
 * proto/PROTOCOL.md, so the document cannot drift from the code.  To refresh the document:
 *   proto/gen-protocol-tables > tables.md  and paste it between the markers.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv)
{
        man = argc > 1 && !strcmp(argv[1], "--man");
        heading(3, "Header");
        table_header();

        heading(3, "Messages");
        if (man)
                printf(".TS\nallbox;\nl l l l l lx.\ntype\tname\tbody\tfirst array\tsecond array\tpurpose\n");
        else
                printf("| type | name | body | first array | second array | purpose |\n"
                       "|---|---|---|---|---|---|\n");
#define MSG_ROW(NAME, code, body, i1, i2, doc)                                                     \
        printf(man ? "0x%02x\t%s\t%s\t%s\t%s\tT{\n%s\nT}\n" : "| 0x%02x | %s | %s | %s | %s | %s |\n", \
               code, #NAME, #body, #i1, #i2, doc);
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

/*
 * gen-protocol-tables.c - prints the field tables of PROTOCOL.md from messages.def.
 *
 * `make check` compares this output with the block between the GENERATED markers in
 * proto/PROTOCOL.md, so the document cannot drift from the code.  To refresh the document:
 *   proto/gen-protocol-tables > tables.md  and paste it between the markers.
 */
#include "config.h"

#include <stdio.h>

#include "proto/codec.h"

static unsigned offset;

#define ROW(t, n, d)                                                                               \
        printf("| %u | %s | `%s` | %s |\n", offset, #t, #n, d);                                    \
        offset += SN_WSIZE_##t;

#define TABLE(name)                                                                                \
        static void table_##name(void)                                                             \
        {                                                                                          \
                offset = 0;                                                                        \
                printf("| offset | type | field | meaning |\n|---|---|---|---|\n");                \
                SN_FIELDS_##name(ROW) printf("\nSize: %d bytes.\n\n", SN_WIRE_SIZE_##name);        \
        }
#define TABLE_ITEM(name, doc) TABLE(name)
TABLE(header)
SN_ITEMS(TABLE_ITEM)
SN_BODIES(TABLE)

int main(void)
{
        printf("### Header\n\n");
        table_header();

        printf("### Messages\n\n| type | name | body | first array | second array | purpose |\n");
        printf("|---|---|---|---|---|---|\n");
#define MSG_ROW(NAME, code, body, i1, i2, doc)                                                     \
        printf("| 0x%02x | %s | %s | %s | %s | %s |\n", code, #NAME, #body, #i1, #i2, doc);
        SN_MESSAGES(MSG_ROW)

        printf("\n### Bodies\n\n");
#define BODY(name)                                                                                 \
        if (SN_WIRE_SIZE_##name) {                                                                 \
                printf("#### body `%s`\n\n", #name);                                               \
                table_##name();                                                                    \
        } else {                                                                                   \
                printf("#### body `%s`\n\nNo fields (0 bytes).\n\n", #name);                      \
        }
        SN_BODIES(BODY)

        printf("### Array items\n\n");
#define ITEM(name, doc)                                                                            \
        if (SN_WIRE_SIZE_##name) {                                                                 \
                printf("#### item `%s`: %s\n\n", #name, doc);                                      \
                table_##name();                                                                    \
        }
        SN_ITEMS(ITEM)
        return 0;
}

/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 The socknotify authors */
/*
 * vector-json.h - the decoded form of a message as JSON, for the test vectors (proto/vectors/).
 *
 * One rendering, generated from messages.def like the codec: the generator (proto/gen-vectors)
 * renders the host structs it encodes, and the checks render what the codec decodes from a
 * vector's bytes, so that the two can be compared.  The format is described in
 * proto/vectors/README.md: fields by their messages.def names, u64 fields as decimal strings
 * (a JSON number above 2^53 loses precision in many languages), byte arrays as one string.
 */
#pragma once

#include <jansson.h>

#include "proto/codec.h"

#define SNV__DECLARE(name) json_t *snv_json_##name(const struct snw_##name *s);
#define SNV__DECLARE_ITEM(name, doc) SNV__DECLARE(name)
SNV__DECLARE(header)
SN_ITEMS(SNV__DECLARE_ITEM)
SN_BODIES(SNV__DECLARE)
#undef SNV__DECLARE
#undef SNV__DECLARE_ITEM

/*
 * Decodes a message of len bytes with the codec into its decoded form: "header", and when
 * sn_msg_check() accepts it "body", "array1" and "array2" (the arrays the type has).  A message
 * the codec refuses yields its header alone (nothing when shorter than a header).  Stores the
 * codec's verdict (0, -EBADMSG, -EOPNOTSUPP) in *ret_check.  Returns a new reference, NULL when
 * out of memory or when a byte array is not valid UTF-8.
 */
json_t *snv_decode(const uint8_t *buf, size_t len, int *ret_check);

/* The symbolic name of a status the protocol uses ("EBADMSG"), NULL for 0 or an unknown one;
 * and the value of such a name, 0 when unknown. */
const char *snv_errno_name(uint32_t status);
uint32_t snv_errno_value(const char *name);

/* Hex text of bytes (lower case, no separators) into out (2 * len + 1 bytes). */
void snv_hex(char *out, const uint8_t *buf, size_t len);
/* Parses hex text into buf (cap bytes); returns the length, -1 when malformed or too long. */
long snv_unhex(uint8_t *buf, size_t cap, const char *hex);

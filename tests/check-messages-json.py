#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Validates proto/messages.json against proto/messages.schema.json.

A validator for the part of JSON Schema (2020-12) that the schema uses: type (one or a list),
enum, minimum, maximum, required, properties, additionalProperties (false or a schema), items
and local $ref.  A keyword outside that part fails the check, so the schema cannot silently use
more than is checked.  Usage: check-messages-json.py SCHEMA JSON
"""
import json
import sys

KNOWN = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "enum", "minimum",
         "maximum", "required", "properties", "additionalProperties", "items"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(root, ref):
    if not ref.startswith("#/"):
        raise ValueError("only local references are supported: " + ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def validate(root, schema, value, path, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        errors.append("%s: schema keywords not supported: %s" % (path, sorted(unknown)))
        return
    if "$ref" in schema:
        validate(root, resolve(root, schema["$ref"]), value, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            errors.append("%s: %r is not of type %s" % (path, value, types))
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r not one of %r" % (path, value, schema["enum"]))
    if "minimum" in schema and value < schema["minimum"]:
        errors.append("%s: %r below %r" % (path, value, schema["minimum"]))
    if "maximum" in schema and value > schema["maximum"]:
        errors.append("%s: %r above %r" % (path, value, schema["maximum"]))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append("%s: %s missing" % (path, key))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, sub in value.items():
            if key in props:
                validate(root, props[key], sub, path + "." + key, errors)
            elif extra is False:
                errors.append("%s: unexpected key %s" % (path, key))
            elif isinstance(extra, dict):
                validate(root, extra, sub, path + "." + key, errors)
    if isinstance(value, list) and "items" in schema:
        for i, sub in enumerate(value):
            validate(root, schema["items"], sub, "%s[%d]" % (path, i), errors)


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        doc = json.load(f)
    errors = []
    validate(schema, schema, doc, "$", errors)
    for e in errors[:50]:
        print("FAIL:", e)
    if errors:
        return 1
    print("PASS: %s is valid against %s" % (sys.argv[2], sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

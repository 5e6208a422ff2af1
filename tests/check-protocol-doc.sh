#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Fails when the tables of proto/PROTOCOL.md differ from what messages.def generates.
set -eu
doc="${SN_SRCDIR:-.}/proto/PROTOCOL.md"
gen="${SN_BUILDDIR:-.}/proto/gen-protocol-tables"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed -n '/^<!-- GENERATED/,/^<!-- END GENERATED/p' "$doc" | sed '1d;$d' > "$tmp"
if "$gen" | diff -u "$tmp" -; then
        echo "PASS: PROTOCOL.md tables match messages.def"
else
        echo "FAIL: PROTOCOL.md tables differ from messages.def (regenerate with $gen)"
        exit 1
fi

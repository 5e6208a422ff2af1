#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The generated proto/messages.json is valid against the installed schema.
set -eu
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
exec python3 "${SN_SRCDIR:-.}/tests/check-messages-json.py" \
        "${SN_SRCDIR:-.}/proto/messages.schema.json" "${SN_BUILDDIR:-.}/proto/messages.json"

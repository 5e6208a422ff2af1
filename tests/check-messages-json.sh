#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The generated proto/messages.json is valid against the installed schema.
set -eu
exec python3 "${SN_SRCDIR:-.}/tests/check-messages-json.py" \
        "${SN_SRCDIR:-.}/proto/messages.schema.json" "${SN_BUILDDIR:-.}/proto/messages.json"

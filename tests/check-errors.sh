#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The error lists of PROTOCOL.md, the man pages and docs/semantics.md agree with statuses.def.
set -eu
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
exec python3 "${SN_SRCDIR:-.}/tests/check-errors.py" "${SN_SRCDIR:-.}" \
        "${SN_BUILDDIR:-.}/proto/gen-protocol-tables"

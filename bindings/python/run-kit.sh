#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# make check: the Python binding through the binding kit (tests/kit/socknotify-binding-kit,
# docs/bindings.md) with its driver tests/kit/driver-python.py, against the socknotifyd of this
# build tree.  Skipped (exit 77) without python3 (>= 3.9).
set -u
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
. "$src/tests/kit/find-python.sh"
PYTHONPATH="$src/bindings/python"
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
exec "$py" "$src/tests/kit/socknotify-binding-kit" --daemon "$build/daemon/socknotifyd" \
        --supervisor "$build/ctl/socknotify-supervise" \
        --cases "$src/tests/kit/cases" -- "$py" "$src/tests/kit/driver-python.py"

#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# make check: the binding kit (tests/kit/socknotify-binding-kit) against libsocknotify, the
# reference implementation, through tests/kit/driver-c and the socknotifyd of this build tree.
# Skipped (exit 77) without python3 (>= 3.9), which the runner needs.
set -u
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
. "$src/tests/kit/find-python.sh"
exec "$py" "$src/tests/kit/socknotify-binding-kit" --daemon "$build/daemon/socknotifyd" \
        --supervisor "$build/ctl/socknotify-supervise" \
        --cases "$src/tests/kit/cases" -- "$build/tests/kit/driver-c"

#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# test-epctl-modes.sh - test-core, the integration test of every request, with the daemon making
# its epoll_ctl calls one by one: once told so (--no-io-uring, through SN_TEST_DAEMON_ARGS), once
# with io_uring refused at run time (started under tests/helpers/no-io-uring, whose seccomp
# filter fails io_uring_setup with EPERM).  The default run of make check covers io_uring; a
# client must see no difference.  test-epctl checks that STATUS reports each mode.
set -u
build=${SN_BUILDDIR:-.}
fail=0

run() { # run NAME, with the environment set by the caller
        if "$build/tests/integration/test-core" >"$tmp" 2>&1; then
                echo "PASS: test-core $1"
        else
                echo "FAIL: test-core $1"; tail -n 40 "$tmp"; return 1
        fi
}

tmp=$(mktemp /tmp/test-epctl-modes.XXXXXX)
trap 'rm -f "$tmp"' EXIT
(
        export SN_TEST_DAEMON_ARGS="--no-io-uring${SN_TEST_DAEMON_ARGS:+ $SN_TEST_DAEMON_ARGS}"
        run "--no-io-uring"
) || fail=1
(
        w="$build/tests/helpers/no-io-uring"
        export SN_TEST_DAEMON_WRAPPER="$w${SN_TEST_DAEMON_WRAPPER:+ $SN_TEST_DAEMON_WRAPPER}"
        run "with io_uring refused by seccomp"
) || fail=1
exit $fail

#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# test-zero-downtime.sh - the zero-downtime handoff example (examples/zero-downtime) under load,
# small: a real socknotifyd of this build on a private socket, zd-server replaced 3 times
# (--takeover-from) while zd-loadgen keeps 20 connections sending, 2 of them reading slower than
# they send against a small server send buffer, so that servers hold output when they are told
# to stop (partial writes, OUT registrations, the flush before the exit).
#
# Two runs of examples/zero-downtime/run.sh:
#   1. the handoff: must exit 0, and its report must show 20 connections open at the stop and
#      drained, 0 errors, 0 bytes lost, 0 duplicated, 0 corrupt streams, equal checksums, every
#      restart settled, the servers' partial writes, and no port left in the daemon;
#   2. the same with LINGER=0 (the port is not kept when the old server exits): the clients'
#      connections must break, and zd-loadgen and run.sh must say so and fail, which shows
#      that run 1 could fail.
# Prints PASS:/FAIL: per check and "N passed, M failed".  Nothing here is skipped: the
# programs are built by make, and a missing one is a failure.
set -u
src=${SN_SRCDIR:-.}
build=${SN_BUILDDIR:-.}
pass=0
fail=0
tmp=$(mktemp -d /tmp/test-zd.XXXXXX)
unset SOCKNOTIFY_SOCKET # run.sh starts its own daemon
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION-RESULT
        if [ "$2" -eq 0 ]; then
                echo "PASS: $1"
                pass=$((pass + 1))
        else
                echo "FAIL: $1"
                fail=$((fail + 1))
        fi
}

for p in "$build/daemon/socknotifyd" "$build/examples/zero-downtime/zd-server" \
         "$build/examples/zero-downtime/zd-loadgen"; do
        if [ ! -x "$p" ]; then
                echo "FAIL: $p is not built"
                echo "0 passed, 1 failed"
                exit 1
        fi
done
if ! command -v bash >/dev/null 2>&1; then
        echo "FAIL: run.sh needs bash"
        echo "0 passed, 1 failed"
        exit 1
fi

# ---- 1: the handoff ---------------------------------------------------------------------------
SN_BUILDDIR="$build" N=20 M=3 EVERY=0.5 SLOW=2 SNDBUF=8192 \
        bash "$src/examples/zero-downtime/run.sh" >"$tmp/run1" 2>&1
rc=$?
sed 's/^/  | /' "$tmp/run1"
check "run.sh exits 0 after 3 handoffs under 20 connections (status $rc)" "$rc"
json=$(grep '^{"connections"' "$tmp/run1" | tail -n 1)
has() { case "$json" in *"$1"*) return 0 ;; *) return 1 ;; esac; }
has '"connections":20,"open_at_stop":20,"drained":20,"errors":0,'
check "every connection stayed open and drained cleanly, no error" $?
has '"bytes_lost":0,"bytes_duplicated":0,"streams_corrupt":0,'
check "no byte lost, duplicated or out of order" $?
sent=$(echo "$json" | sed -n 's/.*"bytes_sent":\([0-9]*\),.*/\1/p')
received=$(echo "$json" | sed -n 's/.*"bytes_received":\([0-9]*\),.*/\1/p')
[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$sent" = "$received" ]
check "bytes received = bytes sent > 0 (${sent:-?} / ${received:-?})" $?
cs=$(echo "$json" | sed -n 's/.*"checksum_sent":"\([0-9a-f]*\)".*/\1/p')
cr=$(echo "$json" | sed -n 's/.*"checksum_received":"\([0-9a-f]*\)".*/\1/p')
[ -n "$cs" ] && [ "$cs" = "$cr" ]
check "checksums of both directions equal ($cs / $cr)" $?
has '"restarts":3,"restarts_settled":3,'
check "3 restarts, each settled (every connection served again)" $?
grep -q 'run.sh: restart 3: .* 21 sockets taken over' "$tmp/run1"
check "the last successor took 21 sockets (20 connections and the listener)" $?
partial=$(sed -n 's/^run.sh: [0-9]* servers: \([0-9]*\) partial writes.*/\1/p' "$tmp/run1")
[ -n "$partial" ] && [ "$partial" -gt 0 ]
check "the servers' writes were partial at times (${partial:-?}): pending output was exercised" $?

# ---- 2: the same without linger must fail ----------------------------------------------------
SN_BUILDDIR="$build" N=20 M=1 EVERY=0.5 LINGER=0 \
        bash "$src/examples/zero-downtime/run.sh" >"$tmp/run2" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q '^FAIL: ' "$tmp/run2" && grep -q '"ok":false' "$tmp/run2" &&
        grep -q 'closed by the server\|reset by peer' "$tmp/run2"
check "without linger the connections break, zd-loadgen and run.sh fail (status $rc)" $?
sed 's/^/  2| /' "$tmp/run2" | tail -n 40

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# run.sh - replaces a running echo server M times under the load of N connections, and fails
# unless every connection stayed open and every byte came back exactly once, in order.
#
#   1. a socknotifyd on a temporary socket (or the one of $SOCKNOTIFY_SOCKET);
#   2. zd-server on 127.0.0.1, a free port, with a lingering named port;
#   3. zd-loadgen with N connections sending all the time;
#   4. M times, EVERY seconds apart: a new zd-server --takeover-from the running one (SIGUSR1
#      to the load generator first: a restart begins); once it prints "ready" and the old one
#      has exited with status 0, SIGUSR2 (the restart is done);
#   5. SIGTERM to the load generator: it drains every connection and prints its report;
#      SIGINT to the last server: it stops for good, and the daemon must hold none of its
#      ports afterwards (and, when the script started it: no port, no registration, and as
#      many descriptors as at its start).
#
# Environment (all optional):
#   N            connections (200)
#   M            restarts (20)
#   EVERY        seconds between restarts (1)
#   THREADS      worker threads per server (4)
#   LINGER       the port's linger time, ms (5000)
#   INTERVAL_MS  each connection sends a chunk about this often (50)
#   MAX_CHUNK    the largest chunk, bytes (4096)
#   SLOW         connections that read slower than they send, so that the server has output
#                waiting when it is replaced (0; zd-loadgen --slow)
#   SNDBUF       the servers' SO_SNDBUF per connection (0: the kernel's); small, with SLOW,
#                makes their writes partial
#   CRASH        1: kill -9 each server instead of letting its successor stop it; the bytes a
#                killed server had read and not yet written back are lost, and zd-loadgen
#                says so
#   SOCKNOTIFY_SOCKET  use this daemon instead of starting one
#   SOCKNOTIFYD  the daemon to start (default: daemon/socknotifyd of the build tree)
#   SN_BUILDDIR  the build tree (default: two levels up from this script)
#   ZD_BIN       where zd-server and zd-loadgen are (default: in the build tree)
#   SN_TEST_DAEMON_WRAPPER, ZD_SERVER_WRAPPER  a command the daemon, the servers run under
#                (valgrind; it must keep the process, as valgrind does, for --takeover-from)
# Exit status 0 when everything held; the reason of a failure is printed as "FAIL: ...".
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${SN_BUILDDIR:-$here/../..}
bin=${ZD_BIN:-$build/examples/zero-downtime}
N=${N:-200}
M=${M:-20}
EVERY=${EVERY:-1}
THREADS=${THREADS:-4}
LINGER=${LINGER:-5000}
INTERVAL_MS=${INTERVAL_MS:-50}
MAX_CHUNK=${MAX_CHUNK:-4096}
SLOW=${SLOW:-0}
SNDBUF=${SNDBUF:-0}
CRASH=${CRASH:-0}
server=$bin/zd-server
loadgen=$bin/zd-loadgen
ctl=$build/ctl/socknotifyctl

tmp=$(mktemp -d /tmp/zd-run.XXXXXX)
name=zd-$$-$RANDOM
dpid=""
lg=""
srv=""
new=""
failed=0

say() { echo "run.sh: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

# shellcheck disable=SC2317 # run by the EXIT trap
finish() {
        local rc=$?
        trap - EXIT INT TERM
        if [ -n "$lg" ]; then
                # Its report says what the clients saw of the failure.
                kill -TERM "$lg" 2>/dev/null
                wait "$lg" 2>/dev/null
                cat "$tmp/loadgen.out"
        fi
        [ -n "$srv" ] && kill -INT "$srv" 2>/dev/null
        [ -n "$new" ] && kill -INT "$new" 2>/dev/null
        [ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null
        wait 2>/dev/null
        if [ "$failed" -ne 0 ] || [ "$rc" -ne 0 ]; then
                for f in "$tmp"/server.err "$tmp"/loadgen.err "$tmp"/daemon.log; do
                        [ -s "$f" ] || continue
                        echo "---- ${f##*/} (last 40 lines)"
                        tail -n 40 "$f"
                done
        fi
        rm -rf "$tmp"
        [ "$failed" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
        exit 1
}
trap finish EXIT
trap 'fail "interrupted"; exit 1' INT TERM

for p in "$server" "$loadgen"; do
        [ -x "$p" ] || { fail "$p is not built (make)"; exit 1; }
done

# Waits until process $1 prints its "ready" line into file $2 (30 s at most).
wait_ready() {
        local i=0 st
        while [ $i -lt 3000 ]; do
                if READY=$(grep -m1 '^ready ' "$2" 2>/dev/null); then
                        return 0
                fi
                st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
                if [ -z "$st" ] || [ "$st" = Z ]; then
                        return 1
                fi
                sleep 0.01
                i=$((i + 1))
        done
        return 1
}

# The number of descriptors process $1 holds.
nfds() {
        set -- "/proc/$1/fd/"*
        echo $#
}

# ---- the daemon -----------------------------------------------------------------------------
if [ -z "${SOCKNOTIFY_SOCKET:-}" ]; then
        SOCKNOTIFY_SOCKET=$tmp/socknotify.sock
        # shellcheck disable=SC2086 # the wrapper is a command line
        ${SN_TEST_DAEMON_WRAPPER:-} "${SOCKNOTIFYD:-$build/daemon/socknotifyd}" \
                --socket "$SOCKNOTIFY_SOCKET" 2>"$tmp/daemon.log" &
        dpid=$!
        i=0
        while [ ! -S "$SOCKNOTIFY_SOCKET" ] && [ $i -lt 600 ]; do
                sleep 0.05
                i=$((i + 1))
        done
        [ -S "$SOCKNOTIFY_SOCKET" ] || { fail "socknotifyd did not start"; exit 1; }
        # The socket exists from bind() on, before the daemon has finished starting: its count
        # is taken once it answers, and once the connection that asked is closed again (the
        # daemon closes clients' descriptors on a thread of its own) and the count is steady.
        i=0
        until "$ctl" -s "$SOCKNOTIFY_SOCKET" status >/dev/null 2>&1 || [ $i -ge 600 ]; do
                sleep 0.05
                i=$((i + 1))
        done
        dfds=$(nfds "$dpid")
        i=0
        while [ $i -lt 100 ]; do
                sleep 0.1
                n=$(nfds "$dpid")
                [ "$n" -eq "$dfds" ] && break
                dfds=$n
                i=$((i + 1))
        done
        say "socknotifyd (pid $dpid) on $SOCKNOTIFY_SOCKET ($dfds descriptors)"
else
        say "using the socknotifyd of $SOCKNOTIFY_SOCKET"
fi
export SOCKNOTIFY_SOCKET

# ---- the first server and the load ----------------------------------------------------------
# shellcheck disable=SC2086 # the wrapper is a command line
${ZD_SERVER_WRAPPER:-} "$server" --port-name "$name" --listen 127.0.0.1:0 --threads "$THREADS" \
        --linger "$LINGER" --sndbuf "$SNDBUF" >"$tmp/server.0.out" 2>>"$tmp/server.err" &
srv=$!
wait_ready "$srv" "$tmp/server.0.out" || { fail "zd-server did not start"; exit 1; }
addr=$(echo "$READY" | awk '{ print $2 }')
say "zd-server (pid $srv) serves $addr through port \"$name\" (linger $LINGER ms)"

"$loadgen" --connect "$addr" --connections "$N" --interval-ms "$INTERVAL_MS" \
        --max-chunk "$MAX_CHUNK" --slow "$SLOW" --drain-timeout 10 \
        >"$tmp/loadgen.out" 2>"$tmp/loadgen.err" &
lg=$!
i=0
until grep -q '^connected ' "$tmp/loadgen.out" 2>/dev/null; do
        if ! kill -0 "$lg" 2>/dev/null || [ $i -ge 600 ]; then
                fail "zd-loadgen did not connect"
                exit 1
        fi
        sleep 0.05
        i=$((i + 1))
done
say "zd-loadgen (pid $lg): $N connections"

# ---- the restarts ---------------------------------------------------------------------------
for k in $(seq 1 "$M"); do
        sleep "$EVERY"
        kill -USR1 "$lg"
        if [ "$CRASH" = 1 ]; then
                # The old server dies on the spot; the port keeps its sockets for LINGER ms.
                kill -KILL "$srv"
                wait "$srv"
        fi
        # shellcheck disable=SC2086
        ${ZD_SERVER_WRAPPER:-} "$server" --port-name "$name" --takeover-from "$srv" \
                --threads "$THREADS" --sndbuf "$SNDBUF" >"$tmp/server.$k.out" \
                2>>"$tmp/server.err" &
        new=$!
        if ! wait_ready "$new" "$tmp/server.$k.out"; then
                fail "restart $k: the new server (pid $new) did not become ready"
                exit 1
        fi
        rc=0
        [ "$CRASH" = 1 ] || { wait "$srv"; rc=$?; }
        if [ "$rc" -ne 0 ]; then
                fail "restart $k: the old server (pid $srv) exited with status $rc"
                srv=$new
                new=""
                exit 1
        fi
        kill -USR2 "$lg"
        took=$(echo "$READY" | awk '{ print $6 }')
        ms=$(echo "$READY" | awk '{ print $9 }')
        gone=$(echo "$READY" | awk '{ print $14 }')
        echo "$ms" >>"$tmp/handoff.ms"
        echo "$gone" >>"$tmp/gone.ms"
        say "restart $k: pid $srv -> $new: $took sockets taken over in $ms ms (the old one gone" \
            "at $gone ms)"
        srv=$new
        new=""
done

# ---- the end --------------------------------------------------------------------------------
sleep "$EVERY"
kill -TERM "$lg"
wait "$lg"
lgrc=$?
lg=""
cat "$tmp/loadgen.out"
# Server side, over the restarts (nearest-rank percentiles): from the SIGTERM to the old
# instance until the new one had re-armed every socket (nobody served in between), and the part
# of it until the old instance was gone.
percentiles() { # FILE WHAT
        [ -s "$1" ] || return 0
        sort -n "$1" | awk -v what="$2" '{ v[NR] = $1 }
                function rank(p) { r = int(p / 100 * NR + 0.999999); return v[r < 1 ? 1 : r] }
                END { printf "run.sh: %s: p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d " \
                      "restarts\n", what, rank(50), rank(99), v[NR], NR }'
}
percentiles "$tmp/handoff.ms" \
        "handoff (SIGTERM to the old server until every socket is re-armed in the new one)"
percentiles "$tmp/gone.ms" "of which until the old server was gone (no other holder of the port)"
[ -s "$tmp/loadgen.err" ] && sed 's/^/  /' "$tmp/loadgen.err"
[ "$lgrc" -eq 0 ] || fail "zd-loadgen exited with status $lgrc"

kill -INT "$srv"
wait "$srv"
rc=$?
srv=""
[ "$rc" -eq 0 ] || fail "the last server exited with status $rc"
grep -h 'zd-server' "$tmp/server.err" | tail -n 1 | sed 's/^/  /'
# What the servers held when they were told to stop, and wrote out before exiting.
sed -n 's/.* (\([0-9]*\) partial writes, \([0-9]*\) bytes flushed at the stop).*/\1 \2/p' \
        "$tmp/server.err" | awk '{ p += $1; f += $2; n += ($2 > 0); s++ }
        END { printf "run.sh: %d servers: %d partial writes; %d bytes of output pending at " \
              "a stop (in %d servers), written out before the exit\n", s, p, f, n }'
bad=$(grep -e 'error' -e 'could not' -e 'did not' -e 'cannot' "$tmp/server.err" |
        grep -v ', 0 errors, 0 shared$')
if [ -n "$bad" ]; then
        fail "a server reported an error:"
        echo "$bad" | head -n 10
fi

# The port was closed for good: the daemon holds nothing of it any more.
if [ -x "$ctl" ]; then
        if "$ctl" -s "$SOCKNOTIFY_SOCKET" --json ports 2>/dev/null | grep -q "\"$name\""; then
                fail "the daemon still holds port \"$name\" after the final stop"
        fi
fi
if [ -n "$dpid" ]; then
        # Our own daemon: it holds nothing more than when it started.
        st=$("$ctl" -s "$SOCKNOTIFY_SOCKET" --json status 2>/dev/null)
        for key in ports registrations; do
                if ! echo "$st" | grep -q "^  \"$key\": 0,"; then
                        fail "the daemon still holds $key after the final stop:" \
                             "$(echo "$st" | grep "^  \"$key\"")"
                fi
        done
        i=0
        while [ "$(nfds "$dpid")" -ne "$dfds" ] && [ $i -lt 100 ]; do
                sleep 0.05
                i=$((i + 1))
        done
        n=$(nfds "$dpid")
        [ "$n" -eq "$dfds" ] || fail "the daemon holds $n descriptors, $dfds at its start"
        kill -TERM "$dpid"
        wait "$dpid"
        rc=$?
        dpid=""
        [ "$rc" -eq 0 ] || fail "socknotifyd exited with status $rc"
fi
[ "$failed" -eq 0 ] && say "OK: $M restarts under $N connections, nothing lost"
exit "$failed"

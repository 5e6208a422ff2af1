#!/bin/bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# test-examples-restart.sh - the reference's three scenarios (examples/poll-replacement,
# udp-edge, mt-server, on the Win32 header) run across a restart of socknotifyd made in their
# middle, under a real systemd 252 (tests/systemd/harness.sh).  Root only: otherwise, or without
# namespaces, cgroup2 or overlayfs, it prints "SKIP: <why>" and exits 77.
#
# Each example runs with SOCKNOTIFY_EXAMPLE_PAUSE: its client threads stop halfway through their
# messages, while its server threads wait in the daemon with their registrations armed (the
# test waits until the daemon's status shows every one of them parked; their waits are bounded
# by SOCKNOTIFY_EXAMPLE_TIMEOUT_MS, 60 s times CK_TIMEOUT_MULTIPLIER, not 1 s).  Then
# the daemon goes away, once by `systemctl restart` (the state handed to the descriptor store)
# and once by `kill -9` (rebuilt from the journal and descriptors it kept in the store as it
# ran, Restart=on-failure), and a new daemon (a new MainPID) takes over.  The clients go on; the
# example must end as it does without any restart: every byte received, every context freed,
# every thread exited, no registration left, exit status 0.  The daemon's descriptor count
# after the run is what it was before it.  Prints TIME: lines (the event to the example's
# end) and PASS:/FAIL: per check; exits 1 when a check failed.
set -u
src=${SN_SRCDIR:-.}
build=${SN_BUILDDIR:-.}
. "$src/tests/systemd/harness.sh"
sdh_prereq || exit $?

bdir=$(cd "$build" && pwd)
name=sn-examples-$$
tmp=$(mktemp -d /tmp/sn-examples.XXXXXX)
chmod 0755 "$tmp"
sock=/run/socknotify/socknotify.sock
pass=0
fail=0

finish() {
        local rc=$?
        trap - EXIT INT TERM
        if [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
                echo "---- journal of the instance (last 80 lines)"
                sdh_exec "$name" journalctl --no-pager -o short-precise -n 80 2>&1 || true
        fi
        sdh_stop "$name" || echo "FAIL: the instance was not removed cleanly"
        rm -rf "$tmp"
        echo "$pass passed, $fail failed"
        [ "$fail" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
        exit 1
}
trap finish EXIT
trap 'exit 1' INT TERM

ok() { echo "PASS: $*"; pass=$((pass + 1)); }
ko() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@" > "$tmp/check.out" 2>&1; then ok "$what"; else
        ko "$what: $(head -c 400 "$tmp/check.out")"; fi; }
inside() { sdh_exec "$name" "$@"; }
prop() { sdh_prop "$name" "$@"; }
now() { date +%s%N; }
ms_since() { echo $((($(now) - $1) / 1000000)); }
dfds() { inside sh -c "ls /proc/$(prop socknotifyd.service MainPID)/fd | wc -l"; }
# Calls of root's parked in the daemon right now (its status document), or nothing.
waits() { inside env SOCKNOTIFY_SOCKET=$sock "$bdir/ctl/socknotifyctl" -j status 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["user"]["waits"])' 2>/dev/null; }
# The scenario is at rest when every client thread is paused (the data before the midpoint is
# sent) and every server thread waits in the daemon, on two looks 0.2 s apart (a notification
# still on its way would take one of them out).
at_rest() {
        grep -qs "^paused $2\$" "$1" && [ "$(waits)" = "$3" ] && sleep 0.2 &&
                [ "$(waits)" = "$3" ]
}
# The scenario's client and server threads (examples/*.c: CLIENT_THREAD_COUNT, one or
# SERVER_THREAD_COUNT server threads, each waiting in one call).
declare -A clients=([poll-replacement]=1 [udp-edge]=1 [mt-server]=100)
declare -A servers=([poll-replacement]=1 [udp-edge]=1 [mt-server]=16)
# A server thread's wait spans the restart: the reference's one second (MAX_TIMEOUT) is less
# than a restart takes on a busy machine, and than the wait for the new daemon below allows.
extimeout=$(($(sdh_scale 60) * 1000))

check "the instance boots" sdh_start "$name"
check "install: daemon and units" sdh_install "$name" "$build" "$src"
# Six restarts in a row are more than systemd's default start limit (5 in 10 s) allows.
check "drop-in: no start limit" sdh_dropin "$name" socknotifyd.service nolimit \
        "$(printf '[Unit]\nStartLimitIntervalSec=0')"
check "systemctl start socknotifyd.socket" inside systemctl start socknotifyd.socket
# The service starts with the first client; one round trip makes it run before counting.
inside env SOCKNOTIFY_SOCKET=$sock timeout 60 "$bdir/tests/systemd/sd-client" serve \
        > /dev/null 2>&1

for event in restart kill; do
        for ex in poll-replacement udp-edge mt-server; do
                go=$tmp/$ex-$event.go
                out=$tmp/$ex-$event.out
                rm -f "$go"
                before=$(dfds)
                inside env SOCKNOTIFY_SOCKET=$sock SOCKNOTIFY_EXAMPLE_PAUSE="$go" \
                        SOCKNOTIFY_EXAMPLE_TIMEOUT_MS=$extimeout \
                        timeout $(sdh_scale 120) "$bdir/examples/$ex" > "$out" 2>&1 &
                expid=$!
                if ! sdh_wait 30 at_rest "$out" "${clients[$ex]}" "${servers[$ex]}"; then
                        ko "$ex: reached the middle of its scenario, at rest ($(grep -c \
                            '^paused' "$out") client(s) paused, $(waits) wait(s) parked;" \
                            "$(tail -3 "$out"))"
                        touch "$go"
                        wait "$expid"
                        continue
                fi
                pid=$(prop socknotifyd.service MainPID)
                t=$(now)
                if [ $event = restart ]; then
                        inside systemctl restart socknotifyd.service
                else
                        inside kill -9 "$pid"
                fi
                if sdh_wait 20 eval '[ "$(prop socknotifyd.service ActiveState)" = active ] &&
                        p=$(prop socknotifyd.service MainPID) && [ "$p" != 0 ] &&
                        [ "$p" != "$pid" ]'; then
                        ok "$ex, $event in its middle: a new daemon is active"
                else
                        ko "$ex, $event in its middle: a new daemon is active"
                fi
                touch "$go"
                if wait "$expid"; then
                        ok "$ex, $event in its middle: $(tail -1 "$out")"
                        echo "TIME: $ex, $event -> scenario complete: $(ms_since "$t") ms"
                else
                        ko "$ex, $event in its middle: exit status not 0: $(tail -3 "$out")"
                fi
                if sdh_wait 10 eval '[ "$(dfds)" = "$before" ]'; then
                        ok "$ex, $event: the daemon holds as many descriptors as before ($before)"
                else
                        ko "$ex, $event: the daemon holds $(dfds) descriptors, $before before"
                fi
        done
done

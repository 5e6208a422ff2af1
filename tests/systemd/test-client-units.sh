#!/bin/bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# test-client-units.sh - a service that uses socknotifyd, declared as socknotifyd(8) says
# (examples/systemd/socknotify-echo.service: Wants=socknotifyd.socket, After= the socket and
# the service), stopped together with the daemon under a real systemd 252
# (tests/systemd/harness.sh), as a shutdown stops them (issue 41 item 1).  Root only:
# otherwise, or without namespaces, cgroup2 or overlayfs, it prints "SKIP: <why>" and exits 77.
#
# The echo server (examples/systemd/sn-echo) serves one connection of a client inside the
# instance; then `systemctl stop` of the echo service, the daemon and both sockets, in one
# transaction.  On SIGTERM the server drains: it serves its open connection until the client
# closes it, which the test makes happen a second after the server said it was stopping (a
# sleep that gives the daemon time to stop if it is going to).  With the recommended units the
# daemon waits for the server: the stop ends within 20 s (scaled), the server exits 0 with
# "1 connection(s) drained, 0 cut", and the daemon exits after it.  The same with the natural
# guess (Requires= and After= the socket only) must fail, the daemon stopping at once under the
# draining server: the test shows it does, so that it can tell the two apart.  Prints PASS:/
# FAIL: per check; exits 1 when a check failed.
set -u
src=${SN_SRCDIR:-.}
build=${SN_BUILDDIR:-.}
. "$src/tests/systemd/harness.sh"
sdh_prereq || exit $?

bdir=$(cd "$build" && pwd)
sdir=$(cd "$src" && pwd)
name=sn-clientunits-$$
tmp=$(mktemp -d /tmp/sn-clientunits.XXXXXX)
chmod 0755 "$tmp"
pass=0
fail=0

finish() {
        local rc=$?
        trap - EXIT INT TERM
        if [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
                echo "---- journal of the instance (last 60 lines)"
                sdh_exec "$name" journalctl --no-pager -o short-precise -n 60 2>&1 || true
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

# The client: one connection, one echo, then it holds the connection until $1 exists.
holder() {
        inside python3 -c '
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", 7007), timeout=60)
s.sendall(b"hello\n")
assert s.recv(100) == b"hello\n"
print("echoed", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
s.close()
print("closed", flush=True)
' "$1"
}

# One run with the unit file $2 (a path on the host); $1 names it.  Returns 0 when the stop
# was quick and clean, 1 when it was not, 2 when the server did not even serve (the scenario
# did not happen); the reasons are in $tmp/$1.why.
scenario() {
        local what=$1 unit=$2 go=$tmp/$1.go out=$tmp/$1.holder why=$tmp/$1.why hpid spid t
        local stopped since e_exit d_exit
        : > "$why"
        root=/proc/$(cat "$SDH_DIR/socknotify-sdh.$name/pid1")/root
        install -m 0644 "$unit" "$root/etc/systemd/system/socknotify-echo.service"
        install -m 0644 "$sdir/examples/systemd/socknotify-echo.socket" \
                "$root/etc/systemd/system/socknotify-echo.socket"
        inside systemctl daemon-reload
        inside systemctl reset-failed > /dev/null 2>&1
        inside systemctl start socknotifyd.socket socknotify-echo.socket || {
                echo "sockets did not start" >> "$why"; return 2; }
        since=$(date +%s)
        rm -f "$go"
        holder "$go" > "$out" 2>&1 &
        hpid=$!
        if ! sdh_wait 30 grep -qx echoed "$out"; then
                echo "no echo: $(tail -3 "$out")" >> "$why"
                touch "$go"; wait "$hpid"; return 2
        fi
        t=$(now)
        inside timeout "$(sdh_scale 120)" systemctl stop socknotify-echo.service \
                socknotifyd.service socknotifyd.socket socknotify-echo.socket \
                > "$tmp/$what.stop" 2>&1 &
        spid=$!
        if ! sdh_wait 20 eval 'sdh_journal "$name" socknotify-echo.service --since=@$since |
                        grep -q "sn-echo: stopping: 1 connection(s) open"'; then
                echo "the server never said it was stopping" >> "$why"
        fi
        sleep 1
        touch "$go"
        wait "$hpid"
        if ! wait "$spid"; then
                echo "systemctl stop failed: $(head -c 300 "$tmp/$what.stop")" >> "$why"
        fi
        stopped=$((($(now) - t) / 1000000))
        echo "TIME: $what: the stop took $stopped ms"
        [ "$stopped" -le $(($(sdh_scale 20) * 1000)) ] ||
                echo "the stop took $stopped ms" >> "$why"
        [ "$(prop socknotify-echo.service Result)" = success ] ||
                echo "the server's result: $(prop socknotify-echo.service Result)" >> "$why"
        [ "$(prop socknotify-echo.service ExecMainStatus)" = 0 ] ||
                echo "the server exited $(prop socknotify-echo.service ExecMainStatus)" >> "$why"
        sdh_journal "$name" socknotify-echo.service --since=@"$since" |
                grep -q "sn-echo: stopped: 1 connection(s) drained, 0 cut" ||
                echo "the server did not drain: $(sdh_journal "$name" socknotify-echo.service \
                        --since=@"$since" | grep -E 'sn-echo' | tail -3 | tr '\n' ' ')" >> "$why"
        [ "$(prop socknotifyd.service Result)" = success ] ||
                echo "the daemon's result: $(prop socknotifyd.service Result)" >> "$why"
        e_exit=$(prop socknotify-echo.service ExecMainExitTimestampMonotonic)
        d_exit=$(prop socknotifyd.service ExecMainExitTimestampMonotonic)
        [ "${d_exit:-0}" -ge "${e_exit:-0}" ] ||
                echo "the daemon ended before the server ($d_exit < $e_exit us)" >> "$why"
        [ ! -s "$why" ] || return 1
}

check "the instance boots" sdh_start "$name"
check "install: daemon and units" sdh_install "$name" "$build" "$src"
# The example's program where its unit looks for it: the service runs with DynamicUser=, so
# with a private /tmp, where a build tree under /tmp is not to be seen (the library is the
# one sdh_install put in /usr/local/lib).
check "install: sn-echo as /usr/local/bin/sn-echo" install -D -m 0755 \
        "$bdir/examples/systemd/sn-echo" \
        "/proc/$(cat "$SDH_DIR/socknotify-sdh.$name/pid1")/root/usr/local/bin/sn-echo"

if scenario recommended "$sdir/examples/systemd/socknotify-echo.service"; then
        ok "recommended units: stopped together, the server drained its connection and ended" \
           "first, both cleanly"
else
        ko "recommended units: $(tr '\n' ';' < "$tmp/recommended.why")"
fi
# The natural guess, which the issue found wanting: it must fail here.
sed -e 's/^Wants=socknotifyd.socket$/Requires=socknotifyd.socket/' \
    -e 's/^After=socknotifyd.socket socknotifyd.service$/After=socknotifyd.socket/' \
    "$sdir/examples/systemd/socknotify-echo.service" > "$tmp/natural.service"
if grep -q '^[A-Za-z]*=.*socknotifyd.service' "$tmp/natural.service"; then
        ko "the natural guess's unit still names socknotifyd.service"
else
        scenario natural "$tmp/natural.service"
        case $? in
        0) ko "Requires=/After=socknotifyd.socket alone also stopped cleanly: this test" \
              "cannot tell the recommended units from it" ;;
        1) ok "Requires=/After=socknotifyd.socket alone fails as expected:" \
              "$(tr '\n' ';' < "$tmp/natural.why")" ;;
        *) ko "the natural guess's run did not happen: $(tr '\n' ';' < "$tmp/natural.why")" ;;
        esac
fi

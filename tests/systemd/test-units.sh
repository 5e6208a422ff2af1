#!/bin/bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# test-units.sh - socknotifyd's installed units under a real systemd 252 (tests/systemd/
# harness.sh boots one as PID 1 of private namespaces).  Root only: otherwise, or without
# namespaces, cgroup2 or overlayfs, it prints "SKIP: <why>" and exits 77.
#
# One instance, the units installed as `make install` would (system and user), then:
#   1  socket activation: socknotifyd.socket listens at /run/socknotify/socknotify.sock
#      (0660 root:socknotify, the group made by systemd-sysusers from our snippet); the first
#      client starts the Type=notify service, which becomes active (READY=1), runs as a
#      dynamic user without capabilities, refuses users outside the group and serves its
#      members on the default path, and publishes its STATUS= line, seen in `systemctl status`
#      and following the clients' holdings; under the unit's system call filter the daemon
#      batches its epoll_ctl through io_uring (socknotifyctl status);
#   2  the watchdog: with WatchdogSec=2s (a drop-in) the daemon's pings keep it alive; after
#      SIGSTOP systemd kills it (result 'watchdog') and restarts it (Restart=on-failure), the
#      socket file stays the same socket, a client that connected while the daemon was hung is
#      served by the new one, and a client that held a registration and a parked dequeue
#      across the kill gets its notification and goes on with no error (the journal and
#      descriptors kept in the store);
#   3  SIGHUP and `systemctl reload` reload (the second one reads a configuration file at the
#      daemon's default path), SIGUSR2 re-executes in place while a client holds a port (the
#      client carries on), SIGUSR1 and SIGALRM are logged as ignored: each time the same
#      MainPID, no restart, still serving;
#   4  `systemctl stop`: the daemon exits 0 and leaves only the socket unit's socket file;
#      `systemctl restart`: the daemon hands every connection and what it holds to systemd's
#      descriptor store and the new daemon takes them back, so a client's parked dequeue and
#      its next call succeed with no error; `systemctl stop` empties the store (systemd 252):
#      a client's parked dequeue fails with ECONNRESET; with io_uring_setup denied by a
#      drop-in the daemon says io_uring was refused and still serves; stopping the socket unit
#      removes the file;
#   5  the user units under `systemd --user` of an unprivileged user: activation at
#      $XDG_RUNTIME_DIR/socknotify.sock (0600, the user's), found by the client's default path,
#      the daemon running as that user.
# Prints TIME: lines (socket start to first client served; watchdog kill to new daemon ready
# and to client served again), PASS:/FAIL: per check and "N passed, M failed"; exits 1 when a
# check failed.  On a failure the instance's journal is printed before the instance is removed.
set -u
src=${SN_SRCDIR:-.}
build=${SN_BUILDDIR:-.}
. "$src/tests/systemd/harness.sh"
sdh_prereq || exit $?

client=$(cd "$build" && pwd)/tests/systemd/sd-client
ctl=$(cd "$build" && pwd)/ctl/socknotifyctl
[ -x "$client" ] || { echo "FAIL: $client not built"; exit 1; }
name=sn-units-$$
tmp=$(mktemp -d /tmp/sn-units.XXXXXX)
chmod 0755 "$tmp"
sock=/run/socknotify/socknotify.sock
pass=0
fail=0
clients=()         # background clients (pids), killed at exit
declare -A held    # hold NAME -> pid

finish() {
        local rc=$?
        trap - EXIT INT TERM
        if [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
                echo "---- journal of the instance (last 120 lines)"
                sdh_exec "$name" journalctl --no-pager -o short-precise -n 120 2>&1 || true
        fi
        [ ${#clients[@]} -eq 0 ] || kill "${clients[@]}" 2>/dev/null
        sdh_stop "$name" || echo "FAIL: the instance was not removed cleanly"
        rm -rf "$tmp"
        echo "$pass passed, $fail failed"
        [ "$fail" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
        exit 1
}
trap finish EXIT
trap 'echo "interrupted"; exit 130' INT TERM

ok() { echo "PASS: $*"; pass=$((pass + 1)); }
ko() { echo "FAIL: $*"; fail=$((fail + 1)); }
# check DESCRIPTION CMD...: one check, PASS when CMD succeeds.
check() {
        local what=$1
        shift
        if "$@"; then ok "$what"; else ko "$what"; fi
}
# expect DESCRIPTION ACTUAL WANTED: PASS when equal, else shows both.
expect() {
        if [ "$2" = "$3" ]; then ok "$1"; else ko "$1 (got '$2', want '$3')"; fi
}
inside() { sdh_exec "$name" "$@"; }
prop() { sdh_prop "$name" "$1" "$2"; }
# props UNIT PROPERTY...: the values joined by "/"; uprops: the same from sntest's manager.
props() {
        local unit=$1 out="" p
        shift
        for p; do out=${out:+$out/}$(prop "$unit" "$p"); done
        echo "$out"
}
uprops() {
        local unit=$1 out="" p
        shift
        for p; do out=${out:+$out/}$(asuser systemctl --user show -P "$p" "$unit"); done
        echo "$out"
}
# jwait REGEX [TIMEOUT]: waits for a line of socknotifyd.service's journal.
jwait() { sdh_wait_journal "$name" socknotifyd.service "$1" "${2:-10}"; }
# ms_between A B: milliseconds from A to B, both in seconds (with decimals).
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
now() { date +%s%N; }
ms_since() { echo $((($(now) - $1) / 1000000)); }
# Runs the client once against the system socket; its output is in $tmp/client.out.
serve() {
        inside env SOCKNOTIFY_SOCKET=$sock timeout 60 "$client" serve > "$tmp/client.out" 2>&1
}
# Starts a client that holds its connection until $tmp/$1.go exists; output in $tmp/$1.out.
hold() {
        rm -f "$tmp/$1.go"
        inside env SOCKNOTIFY_SOCKET=$sock timeout 330 "$client" "${2:-hold}" "$tmp/$1.go" \
                > "$tmp/$1.out" 2>&1 &
        held[$1]=$!
        clients+=("$!")
        sdh_wait 30 grep -qs '^ready' "$tmp/$1.out"
}
# Lets it make its second call and waits for it to exit.
release() {
        touch "$tmp/$1.go"
        wait "${held[$1]}"
}
status_line() { inside systemctl status --no-pager -n 0 "$@" | sed -n 's/^ *Status: //p'; }
status_matches() { status_line "$1" | grep -Eq -- "$2"; }

version=$(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
echo "# booting systemd $version as PID 1 of instance $name"
t=$(now)
sdh_start "$name" || { ko "the instance boots"; exit 1; }
echo "# instance up in $(ms_since "$t") ms"
check "install: daemon, system and user units, sysusers snippet; systemd-sysusers; reload" \
        sdh_install "$name" "$build" "$src"
expect "systemd-sysusers made the group socknotify" \
        "$(inside getent group socknotify | cut -d: -f1)" socknotify
# An unprivileged user for the socket's permissions and the user units.  Its home is in the
# instance's /run: `systemctl --user enable` writes below it.
check "systemd-sysusers makes a user sntest" \
        inside systemd-sysusers --inline 'u sntest - "socknotify test user" /run/sntest'
uid=$(inside id -u sntest)
gid=$(inside id -g sntest)
check "its home /run/sntest" inside install -d -m 0700 -o sntest -g sntest /run/sntest
# Runs the client as sntest with the default path (no SOCKNOTIFY_SOCKET, no XDG_RUNTIME_DIR:
# the system socket), with the supplementary groups given in $1 ("" for none).
serve_as_sntest() {
        local groups=${1:+--groups=$1}
        inside setpriv --reuid="$uid" --regid="$gid" "${groups:---clear-groups}" \
                timeout 60 "$client" serve > "$tmp/client.out" 2>&1
}

# ---- 1. socket activation -----------------------------------------------------------------
echo "# 1. socket activation of the system units"
check "systemctl enable socknotifyd.socket" inside systemctl enable --quiet socknotifyd.socket
t=$(now)
check "systemctl start socknotifyd.socket" inside systemctl start socknotifyd.socket
expect "the socket unit is listening" "$(prop socknotifyd.socket SubState)" listening
expect "$sock: a socket, 0660, root:socknotify" "$(inside stat -c '%F %a %U:%G' $sock)" \
        "socket 660 root:socknotify"
expect "the service is not started before a client comes" \
        "$(prop socknotifyd.service ActiveState)" inactive
if serve; then
        elapsed=$(ms_since "$t")
        ok "the first client is served ($(cat "$tmp/client.out"))"
        echo "TIME: systemctl start socknotifyd.socket -> first client served: $elapsed ms"
else
        ko "the first client is served: $(cat "$tmp/client.out")"
fi
expect "the service was activated and is active" "$(prop socknotifyd.service ActiveState)" active
expect "Type=notify" "$(prop socknotifyd.service Type)" notify
pid=$(prop socknotifyd.service MainPID)
expect "it runs /usr/local/sbin/socknotifyd" \
        "$(inside readlink "/proc/$pid/exe")" /usr/local/sbin/socknotifyd
user=$(inside ps -o user= -p "$pid")
check "as a dynamic user ($user), not root" test -n "$user" -a "$user" != root
expect "without capabilities (CapEff)" \
        "$(inside sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$pid/status")" 0000000000000000
serve_as_sntest ""
expect "a user outside the group socknotify is refused by the socket's mode 0660" \
        "$(sed -n 's/^failed: \(sn_conn_open -> [A-Z]*\).*/\1/p' "$tmp/client.out")" \
        "sn_conn_open -> EACCES"
check "a member of socknotify is served (default path, no SOCKNOTIFY_SOCKET)" \
        serve_as_sntest "$(inside getent group socknotify | cut -d: -f3)"
check "the daemon logged that it serves $sock" \
        jwait "socknotifyd\[[0-9]+\]: .*listening on $sock"
check "systemd got READY=1 (it logs 'Started' for Type=notify only then)" \
        sdh_wait_journal "$name" socknotifyd.service "systemd\[1\]: Started socknotifyd.service" 10
check "a client holds a connection and a port" hold h1
check "STATUS= follows it: systemctl status shows '1 connection(s), 1 port(s)'" \
        sdh_wait 10 status_matches socknotifyd.service \
        '^"1 connection\(s\), 1 port\(s\), 0 registration\(s\)"$'
echo "#    systemctl status: Status: $(status_line socknotifyd.service)"
release h1
check "the holding client's second round trip works" grep -qx 'after: ok' "$tmp/h1.out"
check "STATUS= back to '0 connection(s), 0 port(s)'" \
        sdh_wait 10 status_matches socknotifyd.service '^"0 connection\(s\), 0 port\(s\)'
# systemd 252's @system-service takes in @aio, and with it io_uring_setup, _enter and _register:
# the unit lets the daemon batch its epoll_ctl calls (socknotifyd(8), EPOLL_CTL BATCHING).
if grep -q '^#define HAVE_LIBURING 1' "$build/config.h"; then
        expect "under the unit's SystemCallFilter= the daemon batches epoll_ctl through io_uring" \
                "$(inside "$ctl" --socket=$sock status | sed -n 's/^epoll_ctl: //p')" \
                "batched through io_uring"
fi
# Row 72: the unit lets the daemon read its clients' threads (ProtectProc=default, not
# invisible), so a running thread of another user that blocks frees its port's only slot for a
# waiting thread (sd-client blocked; with ProtectProc=invisible the waiter times out).
blocked_as_sntest() {
        inside setpriv --reuid="$uid" --regid="$gid" \
                --groups="$(inside getent group socknotify | cut -d: -f3)" \
                timeout 60 "$client" blocked > "$tmp/blocked.out" 2>&1
}
if blocked_as_sntest; then
        ok "a blocked running thread of user sntest frees its slot ($(tail -1 "$tmp/blocked.out"))"
else
        ko "a blocked running thread of user sntest frees its slot: $(cat "$tmp/blocked.out")"
fi

# ---- 2. watchdog ----------------------------------------------------------------------------
echo "# 2. watchdog (WatchdogSec=2s by a drop-in)"
check "drop-in WatchdogSec=2s" sdh_dropin "$name" socknotifyd.service watchdog \
        "$(printf '[Service]\nWatchdogSec=2s')"
check "systemctl restart socknotifyd.service" inside systemctl restart socknotifyd.service
pid=$(prop socknotifyd.service MainPID)
check "the daemon pings every 1000 ms (half of WatchdogSec)" sdh_wait_journal "$name" \
        socknotifyd.service "socknotifyd\[$pid\]: watchdog: WATCHDOG=1 every 1000 ms" 10
sleep 5
expect "its pings keep it alive for 5 s (2.5 x WatchdogSec): same MainPID" \
        "$(prop socknotifyd.service MainPID)/$(prop socknotifyd.service ActiveState)" "$pid/active"
inode=$(inside stat -c %i $sock)
restarts=$(prop socknotifyd.service NRestarts)
check "a client holds a connection, a port, a registration and a parked dequeue" hold wd2 wait
check "SIGSTOP to the daemon" inside kill -STOP "$pid"
stopped=$(date +%s.%N)
# This client connects while the daemon is hung: the connection waits in the listening
# socket's backlog, which systemd keeps, so the next daemon accepts it.
inside env SOCKNOTIFY_SOCKET=$sock timeout 60 "$client" serve > "$tmp/wd.out" 2>&1 &
wdclient=$!
clients+=("$wdclient")
check "systemd logs the watchdog timeout" \
        sdh_wait_journal "$name" socknotifyd.service "Watchdog timeout \(limit 2s\)" 15
check "the daemon was killed with result 'watchdog'" \
        jwait "socknotifyd.service: Failed with result 'watchdog'" 15
check "systemd restarted it (Restart=on-failure): active with a new MainPID" eval \
        'sdh_wait_state "$name" socknotifyd.service active 20 &&
         [ "$(prop socknotifyd.service MainPID)" != "$pid" ]'
expect "NRestarts went up by one" "$(prop socknotifyd.service NRestarts)" $((restarts + 1))
newpid=$(prop socknotifyd.service MainPID)
check "the new daemon rebuilt the sessions the killed one kept in the store" \
        jwait "socknotifyd\[$newpid\]: fd store, after a crash: restored 1 connection\(s\), 2 port\(s\), 1 reg"
release wd2
check "the client held across the watchdog kill: its parked dequeue returned the IN" \
        grep -q '^parked dequeue: ok' "$tmp/wd2.out"
check "and its next call on the same connection succeeded (no error at all)" \
        grep -q '^after: ok' "$tmp/wd2.out"
if wait "$wdclient"; then
        served=$(date +%s.%N)
        ok "the client that connected during the hang was served by the new daemon" \
                "($(cat "$tmp/wd.out"))"
else
        served=""
        ko "the client that connected during the hang was served: $(cat "$tmp/wd.out")"
fi
killed=$(sdh_journal "$name" socknotifyd.service | grep -m1 'Watchdog timeout' | cut -d' ' -f1)
if [ -n "$served" ] && [ -n "$killed" ]; then
        echo "TIME: SIGSTOP -> watchdog kill: $(ms_between "$stopped" "$killed") ms" \
                "(WatchdogSec=2s counts from the last ping)"
        started=$(sdh_journal "$name" socknotifyd.service | awk -v k="$killed" \
                '$1 > k && /systemd\[1\]: Started socknotifyd.service/ { print $1; exit }')
        [ -z "$started" ] || echo "TIME: watchdog kill -> new daemon ready (systemd logs" \
                "'Started'): $(ms_between "$killed" "$started") ms (RestartSec=100ms default)"
        echo "TIME: watchdog kill -> waiting client served again:" \
                "$(ms_between "$killed" "$served") ms"
fi
expect "the socket unit stayed active (running: its service runs)" \
        "$(prop socknotifyd.socket ActiveState)/$(prop socknotifyd.socket SubState)" active/running
expect "the socket file is the same socket (inode)" "$(inside stat -c %i $sock)" "$inode"
t=$(now)
if serve; then
        ok "a new client is served ($(cat "$tmp/client.out"));" \
                "$(ms_since "$t") ms from connect to served"
else
        ko "a new client is served: $(cat "$tmp/client.out")"
fi

# ---- 3. signals -----------------------------------------------------------------------------
echo "# 3. SIGHUP and systemctl reload reload, SIGUSR2 re-executes in place," \
        "SIGUSR1 and SIGALRM are ignored"
pid=$(prop socknotifyd.service MainPID)
restarts=$(prop socknotifyd.service NRestarts)
same() {
        expect "$1: still active, same MainPID, no restart" \
                "$(props socknotifyd.service ActiveState MainPID NRestarts)" \
                "active/$pid/$restarts"
}
check "kill -HUP" inside kill -s HUP "$pid"
check "the journal shows the reload (no configuration file yet)" sdh_wait_journal "$name" \
        socknotifyd.service "socknotifyd\[$pid\]: reload: configuration file absent" 10
same "after SIGHUP"
check "STATUS= says so" sdh_wait 10 status_matches socknotifyd.service 'configuration reloaded"$'
conf=$(inside /usr/local/sbin/socknotifyd --help |
        sed -n 's/.*configuration file (default \([^;]*\);.*/\1/p')
case $conf in
/tmp/* | /var/tmp/*)
        # make distcheck's prefix: the unit's PrivateTmp= gives the daemon another /tmp.
        echo "#    SKIP: the default configuration path $conf is in /tmp, which the unit's" \
                "PrivateTmp= hides from the daemon"
        check "systemctl reload socknotifyd.service" \
                inside timeout 30 systemctl reload socknotifyd.service
        ;;
*)
        check "a configuration file at the daemon's default path ${conf:-(none in --help)}" \
                inside sh -c "mkdir -p '${conf%/*}' && echo '{ \"log-level\": \"debug\" }' > '$conf'"
        check "systemctl reload socknotifyd.service" \
                inside timeout 30 systemctl reload socknotifyd.service
        check "the journal shows the file read and the new log level" sdh_wait_journal "$name" \
                socknotifyd.service \
                "socknotifyd\[$pid\]: reload: configuration read from $conf, log level debug" 10
        ;;
esac
same "after systemctl reload"
for s in USR1:10:'User defined signal 1' ALRM:14:'Alarm clock'; do
        IFS=: read -r sig num text <<< "$s"
        check "kill -$sig" inside kill -s "$sig" "$pid"
        check "the journal shows 'signal $num ($text) ignored'" sdh_wait_journal "$name" \
                socknotifyd.service "socknotifyd\[$pid\]: signal $num \($text\) ignored" 10
done
same "after SIGUSR1 and SIGALRM"
check "a client holds a connection, a port, a registration and a parked dequeue" \
        hold h3 wait
check "kill -USR2 (re-exec in place)" inside kill -s USR2 "$pid"
check "the journal shows the new image restored the state" sdh_wait_journal "$name" \
        socknotifyd.service \
        "socknotifyd\[$pid\]: re-exec: restored 1 connection\(s\), 2 port\(s\)" 15
sdh_journal "$name" socknotifyd.service | awk -v p="socknotifyd[$pid]: re-exec: " '
        index($0, p) && / with / && !a { a = $1 }
        index($0, p "restored") && a {
                printf "TIME: re-exec (SIGUSR2), journal lines \"with\" -> \"restored\": %d ms\n",
                        ($1 - a) * 1000
                exit
        }'
release h3
echo "#    the client connected before the re-exec, on its next call:" \
        "$(grep '^after:' "$tmp/h3.out")"
check "its dequeue parked before the re-exec returned the IN it was owed" \
        grep -qx 'parked dequeue: ok' "$tmp/h3.out"
check "that client's connection and port still work" grep -qx 'after: ok' "$tmp/h3.out"
sleep 3
same "after the re-exec and 3 s (1.5 x WatchdogSec: the new image pings)"
check "and a new client is served" serve
inside rm -f "$conf"

# ---- 4. stop and restart --------------------------------------------------------------------
echo "# 4. systemctl stop / restart"
check "systemctl stop socknotifyd.service" inside systemctl stop socknotifyd.service
expect "the daemon exited 0 (ExecMainCode=1 exited, status 0, Result=success)" \
        "$(props socknotifyd.service ExecMainCode ExecMainStatus Result)" \
        "1/0/success"
expect "the service is inactive, not failed" "$(prop socknotifyd.service ActiveState)" inactive
check "the daemon logged 'stopped'" jwait "socknotifyd\[$pid\]: stopped"
expect "only the socket unit's socket is left in /run/socknotify" \
        "$(inside ls -A /run/socknotify | tr '\n' ' ')" "socknotify.sock "
expect "and it is the same socket (inode), still listening" \
        "$(inside stat -c %i $sock)/$(prop socknotifyd.socket SubState)" "$inode/listening"
check "a client activates the service again" serve
check "a client holds a connection, a port, a registration and a parked dequeue" hold h2 wait
pid=$(prop socknotifyd.service MainPID)
t=$(now)
check "systemctl restart socknotifyd.service" inside systemctl restart socknotifyd.service
echo "TIME: systemctl restart with a client (stop, hand over, start, restore): $(ms_since "$t") ms"
newpid=$(prop socknotifyd.service MainPID)
expect "active again with a new MainPID" \
        "$(prop socknotifyd.service ActiveState)/$([ "$newpid" != "$pid" ] && echo new)" active/new
check "the old daemon left its holdings in the descriptor store" \
        jwait "socknotifyd\[$pid\]: stopped \(signal 15\): 1 connection\(s\) kept in the descriptor store"
check "the new daemon took them back" \
        jwait "socknotifyd\[$newpid\]: fd store, after an orderly stop: restored 1 connection\(s\), 2 port\(s\), 1 reg"
release h2
echo "#    the client connected before the restart: $(grep -h '^after\|^parked' "$tmp/h2.out" |
        tr '\n' ' ')"
check "its dequeue parked across the restart returned the socket's IN" \
        grep -q '^parked dequeue: ok' "$tmp/h2.out"
check "and its next call on the same connection and port succeeded (no error at all)" \
        grep -q '^after: ok' "$tmp/h2.out"
check "a client holds a connection across a stop" hold h3 wait
check "systemctl stop socknotifyd.service (systemd 252 empties the store on a stop)" \
        inside systemctl stop socknotifyd.service
release h3
# The connection ended with the store; the socket unit started a daemon again on the same
# path, and the library resumed the session there (docs/reconnect.md).
check "its parked dequeue resumed on the daemon the socket started again" \
        grep -qx 'parked dequeue: ok' "$tmp/h3.out"
check "and that client's connection and port still work" grep -qx 'after: ok' "$tmp/h3.out"
check "a new client is served by the new daemon" serve
# A host whose policy denies io_uring (a drop-in, as an administrator might write one): the
# daemon makes its epoll_ctl calls one by one and serves as before.
check "drop-in SystemCallFilter=~io_uring_setup" sdh_dropin "$name" socknotifyd.service \
        nouring "$(printf '[Service]\nSystemCallFilter=~io_uring_setup')"
check "systemctl restart socknotifyd.service" inside systemctl restart socknotifyd.service
if grep -q '^#define HAVE_LIBURING 1' "$build/config.h"; then
        expect "the daemon says io_uring was refused" \
                "$(inside "$ctl" --socket=$sock status | sed -n 's/^epoll_ctl: //p')" \
                "one call at a time (io_uring refused)"
        check "and logged it once, at info" jwait "socknotifyd\[[0-9]+\]: io_uring refused"
fi
check "a client is served by it" serve
check "systemctl stop socknotifyd.socket socknotifyd.service" \
        inside systemctl stop socknotifyd.socket socknotifyd.service
check "no socket file is left (RemoveOnStop=yes)" inside test ! -e $sock

# ---- 5. user units --------------------------------------------------------------------------
echo "# 5. the user units under systemd --user"
rt=/run/user/$uid
asuser() { sdh_user_exec "$name" sntest "$@"; }
check "user@$uid.service starts: systemd --user of sntest is running" sdh_user_start "$name" sntest
check "systemctl --user enable --now socknotifyd.socket" \
        asuser systemctl --user enable --quiet --now socknotifyd.socket
expect "$rt/socknotify.sock: a socket, 0600, sntest's" \
        "$(inside stat -c '%F %a %U' "$rt/socknotify.sock")" "socket 600 sntest"
t=$(now)
if asuser timeout 60 "$client" serve > "$tmp/client.out" 2>&1; then
        ok "a client of sntest with no SOCKNOTIFY_SOCKET (the default path) is served"
        echo "TIME: user unit: first client served $(ms_since "$t") ms after connecting"
else
        ko "a client of sntest with no SOCKNOTIFY_SOCKET is served: $(cat "$tmp/client.out")"
fi
expect "the user service is active, Type=notify" \
        "$(uprops socknotifyd.service ActiveState Type)" \
        active/notify
upid=$(asuser systemctl --user show -P MainPID socknotifyd.service)
expect "the daemon runs as sntest" "$(inside ps -o user= -p "${upid:-0}")" sntest
check "its STATUS= line shows in systemctl --user status" sdh_wait 10 eval \
        'asuser systemctl --user status --no-pager -n 0 socknotifyd.service |
         grep -Eq "Status: \"[0-9]+ connection\(s\)"'
check "systemctl --user stop socknotifyd.service" asuser systemctl --user stop socknotifyd.service
expect "the daemon it ran exited 0 (ExecMainPID/ExecMainCode/ExecMainStatus/Result)" \
        "$(uprops socknotifyd.service ExecMainPID ExecMainCode ExecMainStatus Result)" \
        "${upid:-?}/1/0/success"
check "systemctl stop user@$uid.service" inside timeout 30 systemctl stop "user@$uid.service"

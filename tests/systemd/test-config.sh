#!/bin/bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# test-config.sh - a bad configuration file never takes a running service down, and never
# starts a fresh one, under a real systemd 252 (tests/systemd/harness.sh).  Root only:
# otherwise, or without namespaces, cgroup2 or overlayfs, it prints "SKIP: <why>" and exits 77.
#
# The installed units, with a drop-in that names a configuration file (--config=, so it must
# exist).  First, a fresh start (as after a reboot: no session to keep, no last good settings):
#   0  the file with a trailing comma, then missing: `systemctl start` fails, the service ends
#      failed (never active), the journal has the error at err naming file and line and
#      saying it did not start.
# Then the file good, setting max-waits=77, and started; a client holds a connection, a port,
# a registration and a parked dequeue through all of it.  Then, the file bad (an unknown key
# on line 3):
#   1  `socknotifyd --check-config` exits 1 naming file, line and key; `systemctl reload`
#      (ExecReload= runs socknotifyctl reload) fails, the service stays active with the same
#      MainPID and max-waits 77, the journal has the error at priority err, and STATUS= says
#      the reload failed;
#   2  `systemctl restart`: the service is active, the new daemon took the sessions back from
#      the descriptor store, runs on the last good settings (max-waits 77), and logged the error
#      at err naming file, line and key; STATUS= says so;
#   3  kill -9 of the daemon: systemd restarts it, it restores the sessions from the live store,
#      same settings, same err line; neither unit ends failed;
#   4  the client's parked dequeue returns its IN and its next call works: no session was lost;
#   5  the file fixed (max-waits=88): `systemctl reload` succeeds and applies it.
# Prints PASS:/FAIL: per check and "N passed, M failed"; exits 1 when a check failed.
set -u
src=${SN_SRCDIR:-.}
build=${SN_BUILDDIR:-.}
. "$src/tests/systemd/harness.sh"
sdh_prereq || exit $?

client=$(cd "$build" && pwd)/tests/systemd/sd-client
[ -x "$client" ] || { echo "FAIL: $client not built"; exit 1; }
name=sn-config-$$
tmp=$(mktemp -d /tmp/sn-config.XXXXXX)
chmod 0755 "$tmp"
sock=/run/socknotify/socknotify.sock
conf=/etc/socknotify/test-config.json
unit=socknotifyd.service
pass=0
fail=0
holder=""

finish() {
        local rc=$?
        trap - EXIT INT TERM
        if [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
                echo "---- journal of the instance (last 120 lines)"
                sdh_exec "$name" journalctl --no-pager -o short-precise -n 120 2>&1 || true
        fi
        [ -z "$holder" ] || kill "$holder" 2>/dev/null
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
check() {
        local what=$1
        shift
        if "$@" > "$tmp/check.out" 2>&1; then ok "$what"; else
                ko "$what: $(head -c 600 "$tmp/check.out")"; fi
}
expect() {
        if [ "$2" = "$3" ]; then ok "$1"; else ko "$1 (got '$2', want '$3')"; fi
}
inside() { sdh_exec "$name" "$@"; }
prop() { sdh_prop "$name" "$1" "$2"; }
props() {
        local u=$1 out="" p
        shift
        for p; do out=${out:+$out/}$(prop "$u" "$p"); done
        echo "$out"
}
# write_conf TEXT: the configuration file's new content (a printf format: \n for new lines).
write_conf() { inside sh -c "mkdir -p /etc/socknotify && printf '$1' > $conf.new &&
        mv $conf.new $conf"; }
# The daemon's max-waits, as socknotifyctl status shows it.
max_waits() {
        inside /usr/local/bin/socknotifyctl --socket=$sock --json status | tr -d ' \n' |
                sed -n 's/.*"max_waits":\([0-9]*\).*/\1/p'
}
# errline PID: the journal has the daemon PID's start error at priority err (or more urgent).
errline() {
        inside journalctl --no-pager -u $unit -p err -o cat _PID="$1" |
                grep -F "configuration: $conf:3: unknown key \"max-wiats\"; running on the last good settings"
}
# reload_err PID: the reload error at err in the journal of the daemon PID.
reload_err() {
        inside journalctl --no-pager -u $unit -p err -o cat _PID="$1" |
                grep -F "reload: $conf:3: unknown key \"max-wiats\""
}
# ctl_err: socknotifyctl's whole error (ExecReload=) in the unit's journal.
ctl_err() {
        inside journalctl --no-pager -u $unit -o cat | grep -F 'socknotifyctl: reload: ' |
                grep -F "$conf:3: unknown key"
}
status_line() { inside systemctl status --no-pager -n 0 $unit | sed -n 's/^ *Status: //p'; }
status_has() { status_line | grep -qF -- "$1"; }
new_active_pid() {
        [ "$(prop $unit ActiveState)" = active ] && [ "$(prop $unit MainPID)" != "$1" ] &&
                [ "$(prop $unit MainPID)" != 0 ]
}

version=$(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
echo "# booting systemd $version as PID 1 of instance $name"
sdh_start "$name" || { ko "the instance boots"; exit 1; }
check "install: daemon, socknotifyctl, units, sysusers snippet" \
        sdh_install "$name" "$build" "$src"
check "drop-in: the daemon reads $conf (named: it must exist)" sdh_dropin "$name" $unit config \
        "$(printf '[Service]\nExecStart=\nExecStart=/usr/local/sbin/socknotifyd --config=%s' \
        "$conf")"

# ---- 0. a fresh start ------------------------------------------------------------------------
echo "# 0. a fresh start with a broken, then a missing file"
# fresh_err PATTERN: the journal of the service has a refused start naming PATTERN at err.
fresh_err() {
        inside journalctl --no-pager -u $unit -p err -o cat | grep -F "configuration: $1" |
                grep -qF "; not starting: no session to keep"
}
# fresh_refused WHAT PATTERN: systemctl start fails, the service ends failed, never active.
fresh_refused() {
        local rc
        inside timeout 60 systemctl start socknotifyd.socket $unit > "$tmp/start.out" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ]; then ok "$1: systemctl start fails (exit $rc)"
        else ko "$1: systemctl start fails (it exited 0; the service is $(prop $unit ActiveState))"; fi
        check "$1: the service ends failed" sdh_wait_state "$name" $unit failed 30
        check "$1: the journal has the error at err, and that it did not start" \
                sdh_wait 10 fresh_err "$2"
        inside systemctl stop socknotifyd.socket > /dev/null 2>&1
        inside systemctl reset-failed $unit socknotifyd.socket > /dev/null 2>&1
}
check "a broken file: per-user ports 8, and a trailing comma" \
        write_conf '{\n  "max-ports-per-user": 8,\n}\n'
fresh_refused "broken file" "$conf:3: "
check "the file is removed" inside rm -f $conf
fresh_refused "missing file" "$conf: No such file or directory"

check "a good file: max-waits 77" write_conf '{ "max-waits": 77 }\n'
check "socknotifyd --check-config: exit 0" inside /usr/local/sbin/socknotifyd --check-config \
        --config=$conf
check "systemctl start socknotifyd.socket socknotifyd.service" \
        inside timeout 60 systemctl start socknotifyd.socket $unit
expect "max-waits is 77" "$(max_waits)" 77
rm -f "$tmp/h.go"
inside env SOCKNOTIFY_SOCKET=$sock timeout 330 "$client" wait "$tmp/h.go" > "$tmp/h.out" 2>&1 &
holder=$!
check "a client holds a connection, a port, a registration and a parked dequeue" \
        sdh_wait 30 grep -qs '^ready' "$tmp/h.out"
pid=$(prop $unit MainPID)
restarts=$(prop $unit NRestarts)

# ---- 1. reload -------------------------------------------------------------------------------
echo "# 1. systemctl reload with a bad file"
check "the file goes bad (line 3: max-wiats)" \
        write_conf '{\n  "max-waits": 99,\n  "max-wiats": 5\n}\n'
inside /usr/local/sbin/socknotifyd --check-config --config=$conf > "$tmp/cc.out" 2>&1
expect "socknotifyd --check-config: exit 1" "$?" 1
check "and it names file, line and key" \
        grep -qF "$conf:3: unknown key \"max-wiats\"" "$tmp/cc.out"
inside timeout 30 systemctl reload $unit > "$tmp/reload.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then ok "systemctl reload fails (exit $rc: $(head -1 "$tmp/reload.out"))"
else ko "systemctl reload fails (it exited 0)"; fi
expect "the service is still active, same MainPID, no restart" \
        "$(props $unit ActiveState MainPID NRestarts)" "active/$pid/$restarts"
expect "the running settings stay: max-waits 77" "$(max_waits)" 77
check "the journal has the reload error at priority err, naming file, line and key" \
        sdh_wait 10 reload_err "$pid"
check "socknotifyctl's whole error is in the unit's journal (ExecReload=)" sdh_wait 10 ctl_err
check "STATUS= says the reload failed (words whole)" \
        sdh_wait 10 status_has "reload failed, running settings kept: test-config.json:3:"
echo "#    systemctl status: Status: $(status_line)"

# ---- 2. restart -----------------------------------------------------------------------------
echo "# 2. systemctl restart with the bad file"
check "systemctl restart succeeds" inside timeout 60 systemctl restart $unit
check "the service is active with a new MainPID" sdh_wait 20 new_active_pid "$pid"
pid2=$(prop $unit MainPID)
check "the new daemon took the sessions back from the descriptor store" \
        sdh_wait_journal "$name" $unit "socknotifyd\[$pid2\]: fd store, after an orderly stop: restored 1 connection" 10
check "it logged the error at err with file, line and key, on the last good settings" \
        sdh_wait 10 errline "$pid2"
expect "the last good settings are in force: max-waits 77" "$(max_waits)" 77
check "STATUS= says so" \
        sdh_wait 10 status_has "configuration error: running on the last good settings"
echo "#    systemctl status: Status: $(status_line)"

# ---- 3. kill -9 -----------------------------------------------------------------------------
echo "# 3. kill -9 of the daemon with the bad file"
if [ -n "$pid2" ] && [ "$pid2" != 0 ]; then check "kill -9 $pid2" inside kill -9 "$pid2"
else ko "kill -9: no daemon runs"; fi
check "systemd restarts it: active with a new MainPID" sdh_wait 30 new_active_pid "$pid2"
pid3=$(prop $unit MainPID)
check "it restored the sessions from the live store" sdh_wait_journal "$name" $unit \
        "socknotifyd\[$pid3\]: fd store, after a crash: restored 1 connection" 10
check "it logged the error at err with file, line and key" sdh_wait 10 errline "$pid3"
expect "the last good settings are in force: max-waits 77" "$(max_waits)" 77
expect "neither unit is failed" \
        "$(prop $unit ActiveState)/$(prop socknotifyd.socket ActiveState)" active/active

# ---- 4. the client -------------------------------------------------------------------------
echo "# 4. the client that held its session through all of it"
touch "$tmp/h.go"
wait "$holder"
holder=""
echo "#    client: $(tr '\n' ' ' < "$tmp/h.out")"
check "its dequeue parked before the reload, restart and kill -9 returned its IN" \
        grep -q '^parked dequeue: ok' "$tmp/h.out"
check "and its next call on the same connection succeeded" grep -q '^after: ok' "$tmp/h.out"

# ---- 5. fixed --------------------------------------------------------------------------------
echo "# 5. the file fixed"
check "a good file: max-waits 88" write_conf '{ "max-waits": 88 }\n'
check "systemctl reload succeeds" inside timeout 30 systemctl reload $unit
expect "max-waits is 88" "$(max_waits)" 88
check "STATUS= says the configuration was reloaded" \
        sdh_wait 10 status_has "configuration reloaded"
expect "same MainPID, active" "$(props $unit ActiveState MainPID)" "active/$pid3"

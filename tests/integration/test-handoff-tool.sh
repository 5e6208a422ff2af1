#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# socknotify-handoff(1) with real parts: a real socknotifyd on a temporary socket,
# systemd-socket-activate(1) passing real TCP listeners, and tests/helpers/listen-echo as the
# program (it serves on what LISTEN_FDS gives it and says which listener answered).
#
#   1. activated run: the tool parks 2 listeners on port "web" and runs the program, which
#      serves a client; the port lingers with both sockets after the program has ended
#   2. a client connects while no instance runs (the daemon's copy keeps the listener)
#   3. a run without activation gets the same listeners back at 3 and 4, in order, serves the
#      queued client and a new one
#   4. LISTEN_PID of another process is ignored (taken back, not parked); LISTEN_FDNAMES is
#      not passed on a take
#   5. errors: unknown name (4), no daemon (3), bad usage (2), program not found (127, and
#      the sockets stay parked)
#   6. an activated run while the port holds an earlier run's sockets replaces them: the old
#      listener is closed, the new one parked; but not while another process holds the port
#      open (refused, and the parked sockets are still there for the replacement)
#   7. --linger on a take: the port goes when it has passed
#   8. a manager that keeps its sockets (a socket unit) passes the same listener on each start:
#      the replacement by itself loses nothing
#   9. a program that knows nothing of socknotify (listen-echo), and programs that use
#      socknotify for their listener (tests/helpers/listen-sn in C, an asyncio server on
#      socknotify.Selector in Python), which register the inherited listener on a port of their
#      own: each serves, outlives the port's 500 ms linger time (the tool's connection, inherited,
#      holds the port while the program runs), is killed with SIGKILL, and the next start
#      without activation finds the listener parked, with the client that connected meanwhile;
#      at the end the daemon holds no more descriptors than before the test
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
if ! command -v systemd-socket-activate >/dev/null 2>&1; then
        echo "SKIP: systemd-socket-activate not installed (package systemd)"; exit 77
fi
tool="$build/ctl/socknotify-handoff"
ctl="$build/ctl/socknotifyctl"
echo_="$build/tests/helpers/listen-echo"
listen_sn="$build/tests/helpers/listen-sn"
tmp=$(mktemp -d /tmp/sn-handoff-XXXXXX)
dpid=
cleanup() {
        for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
        [ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }
check() { # check DESCRIPTION COMMAND...
        d=$1; shift
        if "$@"; then pass "$d"; else flunk "$d"; fi
}
# wait_for SECONDS COMMAND...: until COMMAND succeeds (SECONDS times CK_TIMEOUT_MULTIPLIER)
wait_for() {
        n=$(awk -v s="$1" -v m="${CK_TIMEOUT_MULTIPLIER:-1}" \
                'BEGIN { if (!(m + 0 > 0)) m = 1; print int(s * m * 20 + 0.5) }'); shift
        while ! "$@" 2>/dev/null; do
                n=$((n - 1)); [ $n -gt 0 ] || return 1
                sleep 0.05
        done
}
has() { grep -q -- "$2" "$1"; }
fdcount() { ls "/proc/$dpid/fd" | wc -l; }

export SOCKNOTIFY_SOCKET="$tmp/socknotify.sock"
# shellcheck disable=SC2086 # the wrapper is a command line
${SN_TEST_DAEMON_WRAPPER:-} "$build/daemon/socknotifyd" --socket "$SOCKNOTIFY_SOCKET" --config "" \
        > "$tmp/daemon.log" 2>&1 &
dpid=$!
wait_for 20 "$ctl" status >/dev/null || { echo "FAIL: socknotifyd did not start"; cat "$tmp/daemon.log"; exit 1; }
sleep 0.2
fds0=$(fdcount)

p1=$("$echo_" free-port)
p2=$("$echo_" free-port)
while [ "$p2" = "$p1" ]; do p2=$("$echo_" free-port); done

# ---- 1. activated run -------------------------------------------------------------------------
timeout 60 systemd-socket-activate -l "127.0.0.1:$p1" -l "127.0.0.1:$p2" --fdname=one:two \
        "$tool" --socket "$SOCKNOTIFY_SOCKET" --verbose --name web --linger 60000 -- "$echo_" serve 1 \
        > "$tmp/run1.out" 2> "$tmp/run1.err" &
run1=$!
wait_for 10 has "$tmp/run1.err" "Listening on 127.0.0.1:$p2" || flunk "systemd-socket-activate did not listen"
ans=$("$echo_" connect "$p1" hello-1 2>> "$tmp/clients.err") || true
pid1=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/run1.out")
check "activated run: the program got LISTEN_FDS=2 with names, in order" \
        grep -qx "pid $pid1 fds 2 ports $p1 $p2 names one:two" "$tmp/run1.out"
check "activated run: the program answered (\"$ans\")" test "$ans" = "$pid1 $p1 hello-1"
st=0; wait "$run1" || st=$?
check "activated run: the program exited 0" test $st -eq 0
check "activated run: the tool said it parked 2 sockets" has "$tmp/run1.err" "parked 2 socket(s) on port web"
# The program held the port through the tool's connection: once the daemon has seen that
# end, the port lingers.
lingers_web() {
        "$ctl" --json ports > "$tmp/ports1" &&
                grep -q '"name": "web"' "$tmp/ports1" && grep -q '"handles": 0,' "$tmp/ports1" &&
                grep -q '"ownerless": 2,' "$tmp/ports1" && grep -q '"linger_ms": 60000,' "$tmp/ports1"
}
check "the port lingers with the program gone: no handle, 2 ownerless sockets, 60000 ms" \
        wait_for 10 lingers_web

# ---- 2. a client while no instance runs --------------------------------------------------------
"$echo_" connect "$p2" queued > "$tmp/queued.out" 2> "$tmp/queued.err" &
queued=$!
# connect(2) returns once the listener's backlog took the connection.
wait_for 10 has "$tmp/queued.err" connected ||
        flunk "the client could not connect while no instance ran: $(cat "$tmp/queued.err")"

# ---- 3. run without activation ------------------------------------------------------------------
timeout 60 "$tool" -v --name web -- "$echo_" serve 2 > "$tmp/run2.out" 2> "$tmp/run2.err" &
run2=$!
wait_for 10 test -s "$tmp/run2.out" || flunk "the second run did not start: $(cat "$tmp/run2.err")"
pid2=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/run2.out")
check "second run: same listeners at 3 and 4 in order, LISTEN_PID its own" \
        grep -qx "pid $pid2 fds 2 ports $p1 $p2 names -" "$tmp/run2.out"
check "second run: a different process" test "$pid2" != "$pid1"
st=0; wait "$queued" || st=$?
check "the client queued in the backlog was served by the second run ($(cat "$tmp/queued.out"))" \
        test $st -eq 0 -a "$(cat "$tmp/queued.out")" = "$pid2 $p2 queued"
ans=$("$echo_" connect "$p1" hello-2 2>> "$tmp/clients.err") || true
check "second run: a new client on the first listener is served (\"$ans\")" test "$ans" = "$pid2 $p1 hello-2"
st=0; wait "$run2" || st=$?
check "second run: exited 0" test $st -eq 0
check "second run: the tool said it took 2 sockets" has "$tmp/run2.err" "took 2 socket(s) back from port web"

# ---- 4. LISTEN_PID of another process --------------------------------------------------------
LISTEN_FDS=2 LISTEN_PID=1 LISTEN_FDNAMES=bogus timeout 60 "$tool" --name web -- "$echo_" serve 1 \
        > "$tmp/run3.out" 2> "$tmp/run3.err" &
run3=$!
wait_for 10 test -s "$tmp/run3.out" || flunk "the third run did not start: $(cat "$tmp/run3.err")"
pid3=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/run3.out")
check "LISTEN_PID of another process is ignored: the sockets are taken back" \
        grep -qx "pid $pid3 fds 2 ports $p1 $p2 names -" "$tmp/run3.out"
ans=$("$echo_" connect "$p2" hello-3 2>> "$tmp/clients.err") || true
check "third run serves (\"$ans\")" test "$ans" = "$pid3 $p2 hello-3"
st=0; wait "$run3" || st=$?
check "third run: exited 0" test $st -eq 0

# ---- 5. errors ------------------------------------------------------------------------------
st=0; "$tool" --name nosuch -- true 2> "$tmp/err" || st=$?
check "unknown name: exit 4" test $st -eq 4
check "unknown name: says so" has "$tmp/err" "no port nosuch"
st=0; "$tool" --socket "$tmp/none.sock" --name web -- true 2> "$tmp/err" || st=$?
check "no daemon: exit 3" test $st -eq 3
check "no daemon: says so" has "$tmp/err" "cannot talk to socknotifyd"
st=0; "$tool" -- true 2> "$tmp/err" || st=$?
check "no --name: exit 2" test $st -eq 2
st=0; "$tool" --name web --linger soon -- true 2> "$tmp/err" || st=$?
check "bad --linger: exit 2" test $st -eq 2
st=0; "$tool" --name web 2> "$tmp/err" || st=$?
check "no program: exit 2" test $st -eq 2
st=0; "$tool" --name web -- "$tmp/no-such-program" 2> "$tmp/err" || st=$?
check "program not found: exit 127" test $st -eq 127
check "program not found: says so" has "$tmp/err" "cannot run"
timeout 60 "$tool" --name web -- "$echo_" serve 1 > "$tmp/run4.out" 2> "$tmp/run4.err" &
run4=$!
wait_for 10 test -s "$tmp/run4.out" || flunk "the fourth run did not start: $(cat "$tmp/run4.err")"
pid4=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/run4.out")
ans=$("$echo_" connect "$p1" hello-4 2>> "$tmp/clients.err") || true
check "after a failed exec the sockets are still parked (\"$ans\")" test "$ans" = "$pid4 $p1 hello-4"
wait "$run4" || flunk "fourth run failed"
st=0; sh -c 'exec 3</dev/null; LISTEN_PID=$$ LISTEN_FDS=1 exec "$1" --name web -- true' sh "$tool" \
        2> "$tmp/err" || st=$?
check "activated with a descriptor that is not a socket: exit 1, says which" \
        sh -c "[ $st -eq 1 ] && grep -q 'descriptor 3 is not a socket' '$tmp/err'"
st=0; sh -c 'exec 3<&- 4<&-; LISTEN_PID=$$ LISTEN_FDS=2 exec "$1" --name web -- true' sh "$tool" \
        2> "$tmp/err" || st=$?
check "activated with a descriptor that is not open: exit 1, says which" \
        sh -c "[ $st -eq 1 ] && grep -q 'descriptor 3 is not open' '$tmp/err'"
st=0; LISTEN_PID=$$ LISTEN_FDS=two sh -c 'LISTEN_PID=$$ exec "$1" --name web -- true' sh "$tool" \
        2> "$tmp/err" || st=$?
check "activated with a LISTEN_FDS that is not a count: exit 1" \
        sh -c "[ $st -eq 1 ] && grep -q 'LISTEN_FDS=two: not a count' '$tmp/err'"
check "--help exits 0" sh -c "'$tool' --help > /dev/null"
check "--version names the tool" sh -c "'$tool' --version | grep -q '^socknotify-handoff '"

# ---- 6a. activated while another process holds the port: refused, nothing lost -------------------
# The holder is a client of the Python binding (pure Python); without python3 this part is left out.
if command -v python3 >/dev/null 2>&1; then
        PYTHONPATH="$src/bindings/python" python3 -c '
import sys, time, socknotify
c = socknotify.Connection(sys.argv[1])
p = c.open_port("web")
print("held", flush=True)
time.sleep(60)' "$SOCKNOTIFY_SOCKET" > "$tmp/holder.out" 2>&1 &
        holder=$!
        wait_for 10 has "$tmp/holder.out" held || flunk "the holder did not open the port: $(cat "$tmp/holder.out")"
        p4=$("$echo_" free-port)
        timeout 60 systemd-socket-activate -l "127.0.0.1:$p4" -E SOCKNOTIFY_SOCKET \
                "$tool" --name web -- "$echo_" serve 1 > "$tmp/run7.out" 2> "$tmp/run7.err" &
        run7=$!
        wait_for 10 has "$tmp/run7.err" "Listening on 127.0.0.1:$p4" || flunk "systemd-socket-activate did not listen"
        "$echo_" connect "$p4" nobody > /dev/null 2>&1 || true
        st=0; wait "$run7" || st=$?
        check "activated while another process holds the port: exit 1" test $st -eq 1
        check "activated while another process holds the port: says so" \
                has "$tmp/run7.err" "other process(es) hold it open"
        kill "$holder"; wait "$holder" 2>/dev/null || true
fi

# ---- 6. activated again: the new sockets replace the parked ones ---------------------------------
p3=$("$echo_" free-port)
while [ "$p3" = "$p1" ] || [ "$p3" = "$p2" ]; do p3=$("$echo_" free-port); done
timeout 60 systemd-socket-activate -l "127.0.0.1:$p3" \
        -E SOCKNOTIFY_SOCKET "$tool" --name web --linger 60000 -- "$echo_" serve 1 \
        > "$tmp/run5.out" 2> "$tmp/run5.err" &
run5=$!
wait_for 10 has "$tmp/run5.err" "Listening on 127.0.0.1:$p3" || flunk "systemd-socket-activate did not listen"
ans=$("$echo_" connect "$p3" hello-5 2>> "$tmp/clients.err") || true
pid5=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/run5.out")
check "re-activated run serves on its new listener (\"$ans\")" test "$ans" = "$pid5 $p3 hello-5"
st=0; wait "$run5" || st=$?
check "re-activated run: exited 0" test $st -eq 0
check "re-activated run: the tool said it replaced 2 parked sockets" \
        has "$tmp/run5.err" "port web held 2 socket(s) parked by an earlier run"
check "the replaced listeners are closed (connection refused)" \
        sh -c "! '$echo_' connect '$p1' nobody 2>/dev/null && ! '$echo_' connect '$p2' nobody 2>/dev/null"

# ---- 7. --linger on a take ------------------------------------------------------------------
timeout 60 "$tool" --name web --linger 500 -- "$echo_" serve 1 > "$tmp/run6.out" 2> "$tmp/run6.err" &
run6=$!
wait_for 10 test -s "$tmp/run6.out" || flunk "the last run did not start: $(cat "$tmp/run6.err")"
check "last run: only the new listener" sh -c "grep -q ' fds 1 ports $p3 names -\$' '$tmp/run6.out'"
"$echo_" connect "$p3" hello-6 > /dev/null 2>> "$tmp/clients.err" || flunk "last run did not serve"
wait "$run6" || flunk "last run failed"
# The 500 ms linger expires (on a busy machine later than a fixed sleep allowed): the port is
# gone from the daemon's list.  Only then is a take tried (a take would hold the port again).
web_gone() { "$ctl" --json ports > "$tmp/ports7" && ! grep -q '"name": "web"' "$tmp/ports7"; }
wait_for 10 web_gone || flunk "the port web outlived its 500 ms linger: $(cat "$tmp/ports7")"
st=0; "$tool" --name web -- true 2> "$tmp/err" || st=$?
check "after the shorter linger the port is gone (exit 4)" test $st -eq 4
check "the listener went with the port (connection refused)" \
        sh -c "! '$echo_' connect '$p3' nobody 2>/dev/null"

# ---- 8. a service manager that keeps its sockets (a socket unit) passes the same one each start --
if command -v python3 >/dev/null 2>&1; then
        timeout 60 python3 -c '
import os, socket, sys
tool, prog, path = sys.argv[1:4]
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(16)
port = l.getsockname()[1]
print("port", port, flush=True)
for i in range(2):
    pid = os.fork()
    if pid == 0:
        if l.fileno() != 3:
            os.dup2(l.fileno(), 3)
        os.set_inheritable(3, True)
        os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
        os.execv(tool, [tool, "--socket", path, "-v", "--name", "unit", "--", prog, "serve", "1"])
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(b"start%d\n" % i)
    print("answer", c.recv(200).decode().strip(), flush=True)
    print("exit", os.waitpid(pid, 0)[1], flush=True)
' "$tool" "$echo_" "$SOCKNOTIFY_SOCKET" > "$tmp/unit.out" 2>&1 || true
        p5=$(sed -n 's/^port //p' "$tmp/unit.out")
        check "socket unit: both starts served and exited 0" \
                sh -c "grep -q '^answer [0-9]* $p5 start0\$' '$tmp/unit.out' &&
                       grep -q '^answer [0-9]* $p5 start1\$' '$tmp/unit.out' &&
                       [ \$(grep -c '^exit 0\$' '$tmp/unit.out') -eq 2 ]"
        check "socket unit: the second start replaced the same socket" \
                has "$tmp/unit.out" "port unit held 1 socket(s) parked by an earlier run"
        # The manager is gone; the daemon's copy is the listener's last reference.
        timeout 60 "$tool" --name unit -- "$echo_" serve 1 > "$tmp/run8.out" 2> "$tmp/run8.err" &
        run8=$!
        wait_for 10 test -s "$tmp/run8.out" || flunk "the run after the unit did not start: $(cat "$tmp/run8.err")"
        pid8=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/run8.out")
        ans=$("$echo_" connect "$p5" after-unit 2>> "$tmp/clients.err") || true
        check "socket unit: the listener is still parked after a replacement by itself (\"$ans\")" \
                test "$ans" = "$pid8 $p5 after-unit"
        wait "$run8" || flunk "the run after the unit failed"
        "$tool" --name unit --linger 1 -- true || flunk "could not shorten the unit port's linger"
fi

# ---- 9. a program that uses socknotify for its listener, killed and started again -------------
# run_killed NAME PROGRAM...: an activated run under the tool with a 500 ms linger, served once,
# kept running past that linger, killed; a client connects while nothing runs; a second run
# without activation must serve it and a new client.
run_killed() {
        nm=$1; shift
        pk=$("$echo_" free-port)
        timeout 60 systemd-socket-activate -l "127.0.0.1:$pk" -E SOCKNOTIFY_SOCKET -E PYTHONPATH \
                "$tool" -v --name "$nm" --linger 500 -- "$@" > "$tmp/$nm.1.out" 2> "$tmp/$nm.1.err" &
        k1=$!
        wait_for 10 has "$tmp/$nm.1.err" "Listening on 127.0.0.1:$pk" || flunk "$nm: systemd-socket-activate did not listen"
        ans=$("$echo_" connect "$pk" one 2>> "$tmp/clients.err") || true
        kpid=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/$nm.1.out")
        check "$nm: the activated program served (\"$ans\"; listen-sn and the Python one registered the listener themselves)" \
                test -n "$kpid" -a "$ans" = "$kpid $pk one"
        # The linger time must not run while the program runs: give it time to (wrongly) pass.
        sleep 1
        "$ctl" --json ports > "$tmp/$nm.ports" || true
        check "$nm: the port is held while the program runs, past its 500 ms linger" \
                sh -c "grep -q '\"name\": \"$nm\"' '$tmp/$nm.ports'"
        [ -n "$kpid" ] && kill -9 "$kpid"
        wait "$k1" 2>/dev/null || true
        "$echo_" connect "$pk" queued > "$tmp/$nm.queued.out" 2> "$tmp/$nm.queued.err" &
        kq=$!
        wait_for 10 has "$tmp/$nm.queued.err" connected ||
                flunk "$nm: no listener after the kill: $(cat "$tmp/$nm.queued.err")"
        timeout 60 "$tool" -v --name "$nm" -- "$@" > "$tmp/$nm.2.out" 2> "$tmp/$nm.2.err" &
        k2=$!
        wait_for 10 test -s "$tmp/$nm.2.out" ||
                flunk "$nm: the run after the kill did not start: $(cat "$tmp/$nm.2.err")"
        kpid2=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$tmp/$nm.2.out")
        st=0; wait "$kq" || st=$?
        check "$nm: the run after the kill took the listener and served the client queued meanwhile ($(cat "$tmp/$nm.queued.out"))" \
                test $st -eq 0 -a -n "$kpid2" -a "$(cat "$tmp/$nm.queued.out")" = "$kpid2 $pk queued"
        ans=$("$echo_" connect "$pk" two 2>> "$tmp/clients.err") || true
        check "$nm: and a new client (\"$ans\")" test "$ans" = "$kpid2 $pk two"
        [ -n "$kpid2" ] && kill -9 "$kpid2"
        wait "$k2" 2>/dev/null || true
        # Done: the port goes (linger 1 ms), with the listener.  That last run's environment
        # names the connection it holds for the program.
        "$tool" --name "$nm" --linger 1 -- sh -c 'readlink "/proc/$$/fd/$SOCKNOTIFY_HANDOFF_FD"' \
                > "$tmp/$nm.hfd" 2>&1 || flunk "$nm: could not shorten the port's linger"
        check "$nm: SOCKNOTIFY_HANDOFF_FD names the connection held for the program ($(cat "$tmp/$nm.hfd"))" \
                grep -q '^socket:' "$tmp/$nm.hfd"
        gone() { "$ctl" --json ports > "$tmp/$nm.ports" && ! grep -q "\"name\": \"$nm\"" "$tmp/$nm.ports"; }
        wait_for 10 gone || flunk "$nm: the port outlived its 1 ms linger"
}
run_killed plain-program "$echo_" serve 100
run_killed c-program "$listen_sn" serve 0
if command -v python3 >/dev/null 2>&1; then
        export PYTHONPATH="$src/bindings/python"
        run_killed py-program python3 -c '
import asyncio, os, socket, socknotify
async def main():
    ls = socket.socket(fileno=3)
    port = ls.getsockname()[1]
    async def handle(r, w):
        line = await r.readline()
        w.write(b"%d %d %s" % (os.getpid(), port, line))
        await w.drain()
        w.close()
    await asyncio.start_server(handle, sock=ls)
    sel = asyncio.get_running_loop()._selector
    await asyncio.sleep(0)  # the listener registration goes with this select()
    if sel.refusal(ls) is not None:
        raise SystemExit(f"register the listener: {sel.refusal(ls)}")
    print("pid", os.getpid(), "fds", os.environ["LISTEN_FDS"], "ports", port, flush=True)
    await asyncio.Event().wait()
asyncio.SelectorEventLoop(socknotify.Selector()).run_until_complete(main())'
fi

check "the daemon holds as many descriptors as before the test ($fds0)" \
        wait_for 5 sh -c "[ \$(ls /proc/$dpid/fd | wc -l) -eq $fds0 ]"
kill "$dpid"
st=0; wait "$dpid" || st=$?
dpid=
check "socknotifyd exited cleanly" test $st -eq 0
[ $fail -eq 0 ] || { echo "--- daemon log"; cat "$tmp/daemon.log"; }
exit $fail

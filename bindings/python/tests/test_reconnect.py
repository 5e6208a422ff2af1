# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Resuming without a service manager: a hand-started daemon is killed (SIGKILL) or stopped
(SIGTERM) and a new one is started on the same path; the connection makes its ports and
registrations again on it, and a thread parked in a dequeue keeps waiting and gets what
arrives.  Also: the bound of SOCKNOTIFY_RECONNECT_MS, a closed socket (or a descriptor number
that now names another socket) is not made again, registration states survive, asyncio keeps
running, and a daemon of another user on the path is refused without receiving a socket."""

from __future__ import annotations

import asyncio
import errno
import os
import queue
import shutil
import socket
import tempfile
import threading
import time

import pytest

import socknotify as sn
from conftest import Daemon, scaled
from socknotify import Event, Filter, Registration as R, Trigger

NREGS = 50


@pytest.fixture
def place():
    """A directory for daemons that follow each other on one socket path; every daemon
    started there is stopped after the test."""
    d = tempfile.mkdtemp(prefix="sn-py-re-")
    started: list[Daemon] = []

    def start(**kw) -> Daemon:
        dm = Daemon(path=os.path.join(d, "socknotify.sock"), **kw)
        started.append(dm)
        return dm

    start.path = os.path.join(d, "socknotify.sock")
    start.dir = d
    yield start
    try:
        for dm in started:
            if dm.proc.poll() is None:
                assert dm.stop() == 0, "socknotifyd did not exit cleanly"
            else:
                dm.proc.stderr.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def wait_for(what: str, cond, timeout: float = 10.0) -> None:
    """Waits until cond() is true (polls: the event happens in another process)."""
    deadline = time.monotonic() + scaled(timeout)
    while not cond():
        assert time.monotonic() < deadline, f"{what}: not within {scaled(timeout):.1f} s"
        time.sleep(0.005)


def status_of(path: str) -> dict:
    with sn.Connection(path) as c:
        return c.status()


def end(d: Daemon, how: str) -> None:
    if how == "kill":
        d.kill()
    else:
        assert d.stop() == 0


@pytest.mark.parametrize("how", ["kill", "term"])
def test_resume_50_registrations_and_a_parked_wait(place, monkeypatch, how):
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    pairs = [socket.socketpair() for _ in range(NREGS)]
    assert port.register([R.enable(a, 1000 + i, Filter.IN, Trigger.LEVEL)
                          for i, (a, _) in enumerate(pairs)]) == [0] * NREGS
    got: set[int] = set()
    errors: list[BaseException] = []

    def parked() -> None:
        deadline = time.monotonic() + scaled(60)
        try:
            while len(got) < NREGS and time.monotonic() < deadline:
                for e in port.dequeue(64, timeout=None):
                    got.add(e.key)
                    pairs[e.key - 1000][0].recv(16)  # level: drain, or it comes again
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=parked)
    t.start()
    wait_for("the dequeue parked", lambda: status_of(place.path)["waiters"] == 1)
    end(d1, how)
    d2 = place()
    # The parked call is made again on the new daemon, after the 50 registrations.
    wait_for("the resumed wait parked", lambda: status_of(place.path)["waiters"] == 1
             or errors)
    assert not errors, errors
    st = status_of(place.path)
    assert (st["ports"], st["registrations"]) == (1, NREGS)
    assert st["pid"] == d2.proc.pid
    for _, b in pairs:
        b.send(b"x")
    t.join(scaled(60))
    assert not t.is_alive() and not errors, errors
    assert got == set(range(1000, 1000 + NREGS))
    # The same objects go on working: post, dequeue, close a socket through the library.
    port.post(7, 70)
    assert [(e.key, e.bytes) for e in port.dequeue(4, timeout=scaled(5))] == [(7, 70)]
    conn.close_socket(pairs[0][0])
    pairs[0][1].settimeout(scaled(5))
    assert pairs[0][1].recv(1) == b""
    wait_for("the registration dropped",
             lambda: status_of(place.path)["registrations"] == NREGS - 1)
    conn.close()
    for a, b in pairs:
        a.close()
        b.close()


def test_bound_expires_with_a_clear_error(place, monkeypatch):
    bound = 0.3
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(bound * 1000)))
    d = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    errors: list[BaseException] = []
    ended = []

    def parked() -> None:
        try:
            port.dequeue(1, timeout=None)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        ended.append(time.monotonic())

    t = threading.Thread(target=parked)
    t.start()
    wait_for("the dequeue parked", lambda: status_of(place.path)["waiters"] == 1)
    killed = time.monotonic()
    d.kill()
    t.join(scaled(20))
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], sn.SocknotifyError)
    e = errors[0]
    assert e.errno == errno.ECONNRESET and e.winerror == 6
    assert "within 300 ms" in str(e)
    assert bound <= ended[0] - killed <= bound + scaled(5)
    # Every later call fails at once, also when a daemon is back: the bound has passed.
    place()
    t0 = time.monotonic()
    for call in (lambda: port.dequeue(1, timeout=0), conn.status, lambda: port.post(1)):
        with pytest.raises(sn.SocknotifyError) as ei:
            call()
        assert ei.value.errno == errno.ECONNRESET
    assert time.monotonic() - t0 < scaled(1)
    conn.close()


def test_closed_or_replaced_socket_is_not_made_again(place, monkeypatch):
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    kept, closed, replaced = (socket.socketpair() for _ in range(3))
    assert port.register([R.enable(kept[0], 1, Filter.IN), R.enable(closed[0], 2, Filter.IN),
                          R.enable(replaced[0], 3, Filter.IN)]) == [0, 0, 0]
    closed_fd = closed[0].detach()
    os.close(closed_fd)                 # a plain close: the registration stays on d1
    newcomer, peer = socket.socketpair()
    num = replaced[0].detach()
    os.dup2(newcomer.fileno(), num)     # the number now names another socket
    newcomer.close()
    d1.kill()
    place()
    peer.send(b"x")
    kept[1].send(b"x")
    # The first call after the end resumes; only "kept" is made again.
    got = [e.key for e in port.dequeue(8, timeout=scaled(10))]
    assert got == [1]
    st = status_of(place.path)
    assert st["registrations"] == 1
    os.close(num)
    for s in (*kept, closed[1], replaced[1], peer):
        s.close()
    conn.close()


def test_states_survive(place, monkeypatch):
    """DISABLE stays disabled; a ONESHOT whose entry was dequeued stays disarmed and an armed
    one reports; an EDGE whose condition started while no daemon ran reports it; keys and
    the first key of a re-enabled registration are kept; a named port keeps its name."""
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port(name="py-resume", concurrency=2)
    old_id = port.id
    disabled, fired, armed, edge, rekeyed = (socket.socketpair() for _ in range(5))
    assert port.register([
        R.enable(disabled[0], 10, Filter.IN),
        R.enable(fired[0], 11, Filter.IN, Trigger.LEVEL | Trigger.ONESHOT),
        R.enable(armed[0], 12, Filter.IN, Trigger.LEVEL | Trigger.ONESHOT),
        R.enable(edge[0], 13, Filter.IN, Trigger.EDGE),
        R.enable(rekeyed[0], 14, Filter.IN),
        R.enable(rekeyed[0], 99, Filter.IN | Filter.HANGUP),   # keeps key 14
        R.disable(disabled[0]),
    ]) == [0] * 7
    fired[1].send(b"x")
    assert [e.key for e in port.dequeue(8, timeout=scaled(5))] == [11]
    d1.kill()
    for s in (disabled, fired, armed, edge, rekeyed):
        s[1].send(b"y")
    place()
    got = {}
    deadline = time.monotonic() + scaled(10)
    while len(got) < 3 and time.monotonic() < deadline:
        for e in port.dequeue(8, timeout=scaled(0.5)):
            got.setdefault(e.key, Event(e.events))
    assert sorted(got) == [12, 13, 14]
    assert got[13] & Event.IN and got[14] & Event.IN
    assert port.name == "py-resume" and port.concurrency == 2 and port.id != 0
    del old_id  # (a new daemon may give the port the same id or another)
    with sn.Connection(place.path) as other:
        shared = other.open_port("py-resume")  # the name was made again
        shared.close()
    # Enabled again, the disabled and the disarmed report (their keys unchanged).
    assert port.register([R.enable(disabled[0], 50, Filter.IN),
                          R.enable(fired[0], 51, Filter.IN,
                                   Trigger.LEVEL | Trigger.ONESHOT)]) == [0, 0]
    got2 = set()
    deadline = time.monotonic() + scaled(10)
    while got2 != {10, 11} and time.monotonic() < deadline:
        got2 |= {e.key for e in port.dequeue(8, timeout=scaled(0.5))} & {10, 11}
    assert got2 == {10, 11}
    conn.close()
    for s in (disabled, fired, armed, edge, rekeyed):
        s[0].close()
        s[1].close()


def test_edge_local_shutdown_is_not_a_hangup(place, monkeypatch):
    """A TCP socket shut down locally for reading while no daemon runs: after the resume its EDGE
    registration reports IN (a receive returns at once) without HANGUP, as the daemon would;
    the peer's close afterwards reports HANGUP (row 50)."""
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    with socket.create_server(("127.0.0.1", 0)) as lst:
        peer = socket.create_connection(lst.getsockname())
        mine, _ = lst.accept()
    assert port.register([R.enable(mine, 21, Filter.IN | Filter.HANGUP, Trigger.EDGE)]) == [0]
    d1.kill()
    mine.shutdown(socket.SHUT_RD)
    place()
    got = port.dequeue(8, timeout=scaled(10))
    assert [(e.key, Event(e.events)) for e in got] == [(21, Event.IN)]
    peer.close()
    got = port.dequeue(8, timeout=scaled(10))
    assert [e.key for e in got] == [21] and got[0].events & Event.HANGUP
    conn.close()
    mine.close()


def test_asyncio_selector_runs_across_a_resume(place, monkeypatch):
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d1 = place()
    sel = sn.Selector(path=place.path)
    loop = asyncio.SelectorEventLoop(sel)
    restarted = threading.Event()

    async def handle(reader, writer):
        data = await reader.read(100)
        writer.write(data.upper())
        await writer.drain()
        writer.close()

    async def main() -> list[bytes]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        addr = server.sockets[0].getsockname()

        async def echo(msg: bytes) -> bytes:
            r, w = await asyncio.open_connection(*addr)
            w.write(msg)
            out = await r.read(100)
            w.close()
            return out

        first = await echo(b"before")
        # The loop sits in select() while the daemon is replaced.
        await asyncio.wait_for(loop.run_in_executor(None, restarted.wait), scaled(30))
        second = await asyncio.wait_for(echo(b"after"), scaled(20))
        server.close()
        await server.wait_closed()
        return [first, second]

    def restart() -> None:
        wait_for("the loop parked", lambda: status_of(place.path)["waiters"] >= 1)
        d1.kill()
        place()
        restarted.set()

    t = threading.Thread(target=restart)
    t.start()
    try:
        assert loop.run_until_complete(main()) == [b"BEFORE", b"AFTER"]
    finally:
        t.join(scaled(30))
        loop.close()
    assert sel.connection.resumes == 1


def _free_uid() -> int | None:
    import pwd

    for i in range(16):
        uid = 1900000000 + os.getpid() % 4194304 + i * 4194304
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    return None


def test_daemon_of_another_user_is_refused(place, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root to run a daemon as another uid")
    uid = _free_uid()
    if uid is None:
        pytest.skip("found no free uid")
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    a, b = socket.socketpair()
    assert port.register([R.enable(a, 1, Filter.IN)]) == [0]
    d1.kill()
    os.unlink(place.path)
    os.chown(place.dir, uid, uid)
    try:
        intruder = place(user=uid)
    except RuntimeError as e:
        pytest.skip(f"another uid cannot run the daemon from this build tree: {e}")
    base = intruder.fds()
    # A wait of 0 s returns at once (empty) while the resumption looks behind it; then the
    # session is lost.
    deadline = time.monotonic() + scaled(5)
    with pytest.raises(sn.SocknotifyError) as ei:
        while port.dequeue(1, timeout=0) == []:
            assert time.monotonic() < deadline, "never refused"
    assert ei.value.errno == errno.EACCES and ei.value.winerror == 5
    assert f"uid {uid}" in str(ei.value)
    # Nothing reached it: no connection left, no socket held, every later call refused.
    assert intruder.wait_fds(base) <= base
    with sn.Connection(place.path) as peek:
        st = peek.status()
    assert (st["registrations"], st["ports"]) == (0, 0)
    with pytest.raises(sn.SocknotifyError) as ei:
        port.register([R.enable(b, 2, Filter.IN)])
    assert ei.value.errno == errno.EACCES
    conn.close()
    a.close()
    b.close()


def test_threads_calling_through_resumptions(place, monkeypatch):
    """Four threads register, drop, post and dequeue on an unnamed and a named port while the
    daemon is replaced three times: no call fails but POSTs whose fate was unknown (EIO), and
    at the end the new daemon holds exactly the registrations the ports' tables hold."""
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    d = place()
    conn = sn.Connection(place.path)
    ports = [conn.create_port(), conn.create_port(name="py-threads")]
    stop = threading.Event()
    errors: list[str] = []
    ops = [0] * 4
    by_key: dict[int, socket.socket] = {}  # key -> the registered end (keys n * 100 + i)
    all_pairs: list[tuple[socket.socket, socket.socket]] = []

    def worker(n: int) -> None:
        port = ports[n % 2]
        pairs = [socket.socketpair() for _ in range(16)]
        all_pairs.extend(pairs)
        by_key.update((n * 100 + i, a) for i, (a, _) in enumerate(pairs))
        i = 0
        try:
            while not stop.is_set():
                a, b = pairs[(i * 7 + n) % len(pairs)]
                step = i % 5
                if step == 0:
                    res = port.register([R.enable(a, n * 100 + (i * 7 + n) % 16, Filter.IN)])
                    assert res == [0], res
                elif step == 1:
                    b.send(b"x")
                elif step == 2:
                    for e in port.dequeue(16, timeout=0.01):
                        if not e.posted:
                            try:  # level: drain, or it comes again
                                by_key[e.key].recv(64, socket.MSG_DONTWAIT)
                            except BlockingIOError:
                                pass  # drained by the entry before (at least once)
                elif step == 3:
                    try:
                        port.post(1)
                    except sn.SocknotifyError as e:
                        assert e.errno == errno.EIO, e
                else:
                    conn.drop_registration(a)
                i += 1
                ops[n] += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(f"thread {n}: {e!r}")
        finally:
            stop.set()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        for k in range(3):
            mark = sum(ops)
            wait_for("the threads made calls", lambda: sum(ops) > mark + 200 or stop.is_set(),
                     30)
            end(d, "kill" if k % 2 else "term")
            d = place()
            wait_for("resumed", lambda: conn.resumes == k + 1 or stop.is_set(), 30)
        mark = sum(ops)
        wait_for("the threads made calls", lambda: sum(ops) > mark + 200 or stop.is_set(), 30)
    finally:
        stop.set()
        for t in threads:
            t.join(scaled(30))
    assert not errors, errors
    assert conn.resumes == 3
    with conn._table_lock:
        held = sum(len(p._regs) for p in ports)
    st = status_of(place.path)
    assert (st["ports"], st["registrations"]) == (2, held)
    conn.close()
    for a, b in all_pairs:
        a.close()
        b.close()


def test_silent_listener_ends_the_resumption_in_time(place, monkeypatch):
    """The path gets a listener that never accepts (as the shipped socket unit while its
    service is down): connect() succeeds from the backlog and HELLO is never answered.  With
    SOCKNOTIFY_RECONNECT_MS=500 a wait without end raises ECONNRESET soon after 500 ms
    (before: _handshake() stayed blocked in recvmsg())."""
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", "500")
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    got: list[BaseException | list] = []

    def wait() -> None:
        try:
            got.append(port.dequeue(1, timeout=None))
        except BaseException as e:  # noqa: B036 - reported below
            got.append(e)

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    wait_for("the wait parked", lambda: status_of(place.path)["waiters"] >= 1)
    t0 = time.monotonic()
    d1.kill()
    os.unlink(place.path)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    silent.bind(place.path)
    silent.listen(16)
    t.join(scaled(3.5))
    took = time.monotonic() - t0
    try:
        assert not t.is_alive(), f"the resumption still waited for the silent listener " \
                                 f"after {took:.1f} s"
        assert isinstance(got[0], sn.SocknotifyError), got
        assert got[0].errno == errno.ECONNRESET, got
        assert took < scaled(3.5)
    finally:
        silent.close()
        conn.close()


def test_waits_keep_their_timeouts_while_the_daemon_is_away(place, monkeypatch):
    """A daemon killed and started again 2.5 s later (no service manager): 100 ms dequeues
    return empty by their timeout all along (before: the first one made the resumption itself
    and returned when the daemon was back), and the next one after the resumption gets the
    entry of a socket that became readable meanwhile."""
    monkeypatch.setenv("SOCKNOTIFY_RECONNECT_MS", str(int(scaled(30) * 1000)))
    slack = scaled(0.4)
    away = 2.5 + 2 * slack
    d1 = place()
    conn = sn.Connection(place.path)
    port = conn.create_port()
    a, b = socket.socketpair()
    assert port.register([R.enable(a, 1, Filter.IN, Trigger.LEVEL | Trigger.PERSISTENT)]) == [0]
    back: list[float] = []

    def start_later() -> None:
        time.sleep(away)  # how long the daemon is away: what the test is about
        place()
        back.append(time.monotonic())

    b.send(b"x")
    killed = time.monotonic()
    d1.kill()
    starter = threading.Thread(target=start_later)
    starter.start()
    worst, timeouts = 0.0, 0
    try:
        while True:
            t = time.monotonic()
            got = port.dequeue(1, timeout=0.1)
            gap = time.monotonic() - t
            assert gap < 0.1 + slack, f"a 100 ms wait returned after {gap * 1000:.0f} ms " \
                                      f"({timeouts} returned by their timeout before it)"
            if got:
                assert back, "an entry while no daemon ran"
                assert got[0].key == 1
                break
            timeouts += 1
            worst = max(worst, gap)
            assert not back or time.monotonic() - back[0] < scaled(10), "no entry"
    finally:
        starter.join()
    print(f"TIME: daemon away {(back[0] - killed) * 1000:.0f} ms: {timeouts} waits of 100 ms "
          f"returned empty, worst {worst * 1000:.0f} ms")
    assert timeouts >= 10
    conn.close()
    a.close()
    b.close()


_ASYNCIO_SERVICE = r"""
import asyncio, signal, sys, time
import socknotify as sn

sel = sn.Selector(path=sys.argv[1])
loop = asyncio.SelectorEventLoop(sel)

async def main():
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    async def ticker():
        while True:
            print("tick", time.monotonic(), flush=True)
            await asyncio.sleep(0.1)

    t = asyncio.ensure_future(ticker())
    print("ready", flush=True)
    await stop.wait()
    t.cancel()

loop.run_until_complete(main())
loop.close()
print("bye", flush=True)
"""


def test_asyncio_timers_and_sigterm_while_the_daemon_is_away(place, monkeypatch):
    """An asyncio service on socknotify.Selector whose daemon is killed and not started
    again: its 100 ms timer keeps ticking, and SIGTERM (whose handler needs the loop) stops it
    cleanly at once, with no traceback (before: no tick for the whole resumption window, and
    SIGTERM was handled only when it ended, with a traceback)."""
    import subprocess
    import sys

    slack = scaled(0.4)
    d1 = place()
    env = dict(os.environ, SOCKNOTIFY_RECONNECT_MS=str(int(scaled(30) * 1000)),
               PYTHONPATH=os.path.dirname(os.path.dirname(sn.__file__)))
    proc = subprocess.Popen([sys.executable, "-c", _ASYNCIO_SERVICE, place.path], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True)
    reader.start()
    try:
        assert lines.get(timeout=scaled(10)) == "ready\n"
        wait_for("the loop parked", lambda: status_of(place.path)["waiters"] >= 1)
        d1.kill()
        ticks: list[float] = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            try:
                line = lines.get(timeout=0.1 + slack)
            except queue.Empty:
                raise AssertionError(f"no tick for {(0.1 + slack) * 1000:.0f} ms with the "
                                     f"daemon away ({len(ticks)} ticks before)") from None
            assert line.startswith("tick"), line
            ticks.append(time.monotonic())
        sent = time.monotonic()
        proc.send_signal(15)
        try:
            proc.wait(timeout=scaled(2))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {scaled(2):.1f} s after SIGTERM, with the "
                                 f"daemon away") from None
        took = time.monotonic() - sent
        reader.join(scaled(5))
        err = proc.stderr.read()
        out = "".join(lines.queue)
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        assert out.rstrip().endswith("bye"), out
        assert took < scaled(2), f"SIGTERM took {took:.1f} s"
        print(f"TIME: daemon away: {len(ticks)} ticks in 1.5 s, SIGTERM to exit "
              f"{took * 1000:.0f} ms")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

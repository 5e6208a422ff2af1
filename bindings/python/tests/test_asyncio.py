# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""asyncio on socknotify.Selector: the same workloads on the default selector and on a
socknotify port must give the same results (echo servers with hundreds of clients, large
writes, timeouts, cancellation, UDP, Unix sockets, wake-ups from other threads)."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import selectors
import socket
import sys
import tempfile
import threading
import time

import pytest
from conftest import scaled, wait_waiters

import socknotify as sn


def run(kind: str, daemon, coro_fn):
    """Runs coro_fn() on a loop of the given kind and returns its result."""
    if kind == "default":
        loop = asyncio.SelectorEventLoop(selectors.DefaultSelector())
    else:
        loop = asyncio.SelectorEventLoop(sn.Selector(path=daemon.path))
    try:
        return loop.run_until_complete(asyncio.wait_for(coro_fn(), 120))
    finally:
        loop.close()


def both(daemon, coro_fn):
    """Runs the workload on both selectors; asserts equal results; returns them."""
    ref = run("default", daemon, coro_fn)
    got = run("socknotify", daemon, coro_fn)
    assert got == ref
    return got


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


def test_selector_is_a_base_selector(daemon, pair):
    a, b = pair
    with sn.Selector(path=daemon.path) as sel:
        assert isinstance(sel, selectors.BaseSelector)
        key = sel.register(a, selectors.EVENT_READ, "data")
        assert sel.get_key(a) is key and len(sel.get_map()) == 1
        assert sel.select(0) == []
        b.send(b"x")
        assert sel.select(5) == [(key, selectors.EVENT_READ)]
        key2 = sel.modify(a, selectors.EVENT_READ | selectors.EVENT_WRITE, "d2")
        got = sel.select(5)
        assert got == [(key2, selectors.EVENT_READ | selectors.EVENT_WRITE)]
        with pytest.raises(KeyError):
            sel.register(a, selectors.EVENT_READ)
        with pytest.raises(ValueError):
            sel.register(b, 0)
        with tempfile.TemporaryFile() as f, pytest.raises(OSError):
            sel.register(f, selectors.EVENT_READ)  # epoll refuses files, as DefaultSelector
        sel.unregister(a)
        assert sel.select(0.05) == [] and len(sel.get_map()) == 0
        with pytest.raises(KeyError):
            sel.unregister(a)
        t = time.monotonic()
        assert sel.select(0.2) == []
        assert time.monotonic() - t >= 0.19


def test_unregister_releases_the_daemon_copy(daemon):
    """asyncio closes a socket right after unregistering it: the peer must see EOF."""
    with sn.Selector(path=daemon.path) as sel:
        a, b = socket.socketpair()
        sel.register(a, selectors.EVENT_READ)
        sel.select(0)  # the registration reaches the daemon
        sel.unregister(a)
        a.close()
        b.settimeout(5)
        assert b.recv(1) == b""
        b.close()


def test_echo_hundreds_of_clients(daemon):
    nclients = 300

    async def workload():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0, backlog=nclients)
        port = server.sockets[0].getsockname()[1]

        async def client(i: int) -> tuple[int, str]:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            digest = hashlib.sha256()
            total = 0
            for j in range(5):
                msg = (b"%d:%d;" % (i, j)) * (1 + (i * 37 + j) % 50)
                writer.write(msg)
                await writer.drain()
                got = await reader.readexactly(len(msg))
                assert got == msg
                digest.update(got)
                total += len(got)
            writer.close()
            await writer.wait_closed()
            return total, digest.hexdigest()

        results = await asyncio.gather(*(client(i) for i in range(nclients)))
        server.close()
        await server.wait_closed()
        return results

    before = sn.Connection(daemon.path)
    applied = before.status()["counters"]["registrations_applied"]
    res = both(daemon, workload)
    assert len(res) == nclients
    st = before.status()
    assert st["counters"]["registrations_applied"] > applied + nclients  # really on the port
    before.close()


def test_large_transfers_use_write_readiness(daemon):
    size = 4 << 20

    async def workload():
        server = await asyncio.start_server(_echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        async def client(seed: int) -> str:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            blob = hashlib.sha256(b"%d" % seed).digest() * (size // 32)

            async def send() -> None:
                writer.write(blob)  # far more than the socket buffers: waits for OUT
                await writer.drain()
                writer.write_eof()

            sender = asyncio.create_task(send())
            got = await reader.read(-1)
            await sender
            writer.close()
            return hashlib.sha256(got).hexdigest() if got == blob else "mismatch"

        out = await asyncio.gather(*(client(i) for i in range(4)))
        server.close()
        await server.wait_closed()
        return out

    res = both(daemon, workload)
    assert "mismatch" not in res


def test_timeouts(daemon):
    async def workload():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)  # never answers
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        out = []
        for tmo in (0.05, 0.1, 0.2):
            t = time.monotonic()
            try:
                await asyncio.wait_for(reader.read(10), tmo)
                out.append("data")
            except asyncio.TimeoutError:
                out.append(time.monotonic() - t >= tmo * 0.95)
        order = []
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        for d in (0.15, 0.05, 0.1):
            loop.call_later(d, order.append, d)
        loop.call_later(0.2, done.set_result, None)
        await done
        out.append(order)
        writer.close()
        server.close()
        await server.wait_closed()
        return out

    assert both(daemon, workload) == [True, True, True, [0.05, 0.1, 0.15]]


def test_cancellation(daemon):
    n = 100

    async def workload():
        closed = 0
        all_closed = asyncio.Event()

        async def handler(reader, writer):
            nonlocal closed
            try:
                await reader.read()  # until EOF
            except ConnectionError:
                pass
            writer.close()
            closed += 1
            if closed == n:
                all_closed.set()

        server = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=n)
        port = server.sockets[0].getsockname()[1]
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(n)]
        readers = [asyncio.create_task(r.read(100)) for r, _ in conns]
        await asyncio.sleep(0.05)
        for t in readers[::2]:
            t.cancel()
        await asyncio.sleep(0.05)
        for _, w in conns:
            w.close()  # the other readers end with EOF
        res = await asyncio.gather(*readers, return_exceptions=True)
        cancelled = sum(isinstance(x, asyncio.CancelledError) for x in res)
        assert all(x == b"" for x in res[1::2])
        await asyncio.wait_for(all_closed.wait(), 30)
        server.close()
        await server.wait_closed()
        return cancelled, closed

    assert both(daemon, workload) == (n // 2, n)


def test_udp_and_unix_and_low_level(daemon):
    async def workload():
        loop = asyncio.get_running_loop()
        out = []

        class Echo(asyncio.DatagramProtocol):
            def connection_made(self, transport):
                self.t = transport

            def datagram_received(self, data, addr):
                self.t.sendto(data.upper(), addr)

        class Client(asyncio.DatagramProtocol):
            def __init__(self):
                self.got = loop.create_future()

            def datagram_received(self, data, addr):
                self.got.set_result(data)

        st, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        ct, cp = await loop.create_datagram_endpoint(
            Client, remote_addr=st.get_extra_info("sockname"))
        ct.sendto(b"ping")
        out.append(await cp.got)
        ct.close()
        st.close()

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s")
            server = await asyncio.start_unix_server(_echo, path)
            r, w = await asyncio.open_unix_connection(path)
            w.write(b"unix")
            out.append(await r.readexactly(4))
            w.close()
            server.close()
            await server.wait_closed()

        lsock = socket.create_server(("127.0.0.1", 0))
        lsock.setblocking(False)
        csock = socket.socket()
        csock.setblocking(False)
        await loop.sock_connect(csock, lsock.getsockname())
        asock, _ = await loop.sock_accept(lsock)
        await loop.sock_sendall(csock, b"low-level")
        out.append(await loop.sock_recv(asock, 100))
        for s in (lsock, csock, asock):
            s.close()

        fut = loop.create_future()
        threading.Timer(0.1, loop.call_soon_threadsafe, (fut.set_result, "woken")).start()
        out.append(await fut)
        return out

    assert both(daemon, workload) == [b"PING", b"unix", b"low-level", "woken"]


def test_no_registrations_left_behind(daemon):
    """After a loop closes, the daemon holds none of its sockets."""
    with sn.Connection(daemon.path) as c:
        base = c.status()["registrations"]

        async def workload():
            server = await asyncio.start_server(_echo, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(b"x")
            await r.readexactly(1)
            w.close()
            await w.wait_closed()
            server.close()
            await server.wait_closed()
            return True

        assert run("socknotify", daemon, workload)
        deadline = time.monotonic() + 5
        while c.status()["registrations"] != base and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.status()["registrations"] == base


def test_subprocess_pipes(daemon):
    """asyncio's subprocesses talk through pipes, which the daemon does not watch: the selector
    watches them itself.  (They hung for ever: the pipes were refused inside a callback.)"""
    child = ("import sys\n"
             "data = sys.stdin.buffer.read()\n"
             "sys.stdout.buffer.write(data.upper() * 4000)\n"
             "sys.stderr.write(str(len(data)))\n"
             "sys.exit(3)\n")

    async def workload():
        out = []
        for n in (1, 3):
            p = await asyncio.create_subprocess_exec(
                sys.executable, "-c", child, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            o, e = await p.communicate(b"socknotify" * n)
            out.append((hashlib.sha256(o).hexdigest(), len(o), e, p.returncode))
        p = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        out.append(await p.wait())
        return out

    def run_bounded(kind):
        sel = selectors.DefaultSelector() if kind == "default" else sn.Selector(path=daemon.path)
        loop = asyncio.SelectorEventLoop(sel)
        try:
            return loop.run_until_complete(asyncio.wait_for(workload(), scaled(30)))
        finally:
            loop.close()

    ref = run_bounded("default")
    assert ref[0][1] == 40000 and ref[0][2:] == (b"10", 3) and ref[2] == 0
    assert run_bounded("socknotify") == ref


def test_pipe_wakes_a_waiting_select(daemon):
    """A pipe written while select() waits in the daemon ends the wait (the helper thread's
    wake-up packet); the pipe is reported, sockets still are, and close() ends the thread.
    Threads are compared as sets: a thread an earlier test left (an event loop's executor
    worker) may end while this one runs, which a count would take for a change."""
    threads = set(threading.enumerate())
    r, w = os.pipe()
    a, b = socket.socketpair()
    try:
        with sn.Selector(path=daemon.path) as sel:
            kr = sel.register(r, selectors.EVENT_READ, "pipe")
            ka = sel.register(a, selectors.EVENT_READ, "sock")
            assert sel.select(0) == []
            for _ in range(3):
                timer = threading.Timer(0.1, os.write, (w, b"x"))
                timer.start()
                t = time.monotonic()
                assert sel.select(scaled(10)) == [(kr, selectors.EVENT_READ)]
                assert time.monotonic() - t < scaled(5)
                timer.join()
                assert os.read(r, 1) == b"x"
            b.send(b"y")
            assert sel.select(scaled(5)) == [(ka, selectors.EVENT_READ)]
            a.recv(1)
            kr2 = sel.modify(r, selectors.EVENT_READ, "pipe2")
            os.write(w, b"z")
            assert sel.select(scaled(5)) == [(kr2, selectors.EVENT_READ)]
            sel.unregister(r)
            assert sel.select(0.05) == []
        assert set(threading.enumerate()) - threads == set()
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()


def test_refused_registration_is_an_event_of_its_key(make_daemon):
    """A registration the daemon refuses (--max-registrations=2, scope port) is reported on its
    own key: select() does not raise, the socket is shut down (its peer reads the end), the
    others stay watched, and refusal() names the limit.  Before, select() raised
    "[Errno 122] Disk quota exceeded (registering descriptor N)"."""
    d = make_daemon("--max-registrations=2")
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        with sn.Selector(path=d.path) as sel:
            keys = [sel.register(a, selectors.EVENT_READ, i) for i, (a, _b) in enumerate(pairs)]
            got = sel.select(0)
            assert got == [(keys[2], selectors.EVENT_READ)]
            e = sel.refusal(pairs[2][0])
            assert isinstance(e, sn.LimitError) and e.errno == errno.EDQUOT
            assert (e.limit, e.value, e.scope) == ("max-registrations", 2, "port")
            assert f"registering descriptor {pairs[2][0].fileno()}" in str(e)
            assert sel.refusal(pairs[0][0]) is None
            pairs[2][1].settimeout(scaled(5))
            assert pairs[2][1].recv(1) == b""  # shut down: its peer sees the end
            assert pairs[2][0].recv(1) == b""  # and so does its transport
            assert sel.select(0) == []  # reported once, not at every select()
            key = sel.modify(pairs[2][0], selectors.EVENT_READ | selectors.EVENT_WRITE, "w")
            assert sel.select(0) == [(key, selectors.EVENT_READ | selectors.EVENT_WRITE)]
            pairs[1][1].send(b"x")
            assert sel.select(scaled(5)) == [(keys[1], selectors.EVENT_READ)]
            assert pairs[1][0].recv(1) == b"x"
            sel.unregister(pairs[2][0])
            assert sel.refusal(pairs[2][0]) is None
            # The refused socket never held a registration: the others' limit is unchanged.
            pairs[0][1].send(b"y")
            assert sel.select(scaled(5)) == [(keys[0], selectors.EVENT_READ)]
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_refused_listener_is_not_shut_down(make_daemon):
    """A refused listening socket is reported and refusal() names the limit, but it is not shut
    down: another holder of the same listener (a socket unit, a parked copy) still accepts on
    it.  A shutdown would have stopped it listening for all of them (connect refused)."""
    d = make_daemon("--max-registrations=1")
    a, b = socket.socketpair()
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    lst.setblocking(False)
    other = lst.dup()  # the other holder
    try:
        with sn.Selector(path=d.path) as sel:
            sel.register(a, selectors.EVENT_READ, "pair")
            key = sel.register(lst, selectors.EVENT_READ, "listener")
            assert sel.select(0) == [(key, selectors.EVENT_READ)]
            e = sel.refusal(lst)
            assert isinstance(e, sn.LimitError) and e.limit == "max-registrations"
            with socket.create_connection(lst.getsockname(), timeout=scaled(5)):
                other.settimeout(scaled(5))
                conn, _ = other.accept()
                conn.close()
    finally:
        for s in (a, b, lst, other):
            s.close()


def test_select_refused_as_a_whole_keeps_its_registrations(make_daemon):
    """A select() whose PROCESS call is refused as a whole (--max-waits-per-user=1 while another
    connection of the user waits) raises the LimitError, and the registrations it carried go
    with the next select(): the socket is watched.  Before, they were dropped with the call and
    the socket was never watched."""
    d = make_daemon("--max-waits-per-user=1")
    a, b = socket.socketpair()
    with d.connect() as other, other.create_port() as op:
        t = threading.Thread(target=op.dequeue, args=(1, scaled(30)))
        t.start()
        try:
            wait_waiters(other, 1)
            with sn.Selector(path=d.path) as sel:
                key = sel.register(a, selectors.EVENT_READ)
                b.send(b"x")
                with pytest.raises(sn.LimitError) as ei:
                    sel.select(scaled(5))
                assert ei.value.limit == "max-waits-per-user"
                op.post(0)  # the other wait ends
                t.join(scaled(10))
                assert sel.select(scaled(5)) == [(key, selectors.EVENT_READ)]
        finally:
            op.post(0)
            t.join(scaled(10))
            a.close()
            b.close()


@pytest.mark.parametrize("limit", ["--max-registrations=12", "--max-sockets-per-user=12"])
def test_service_over_a_limit_loses_only_the_refused_client(make_daemon, limit):
    """An asyncio echo service on socknotify.Selector under a limit of 12 (the loop's own
    socket pair, the listener and 10 clients): the 11th client's connection is ended (end of
    file or reset), the 10 others go on being served, and once one of them has gone a new
    client is served.  Before, the refusal ended the loop and every connection with it."""
    d = make_daemon(limit)
    ready = threading.Event()
    closed = threading.Semaphore(0)
    box: dict[str, object] = {}

    def serve() -> None:
        loop = asyncio.SelectorEventLoop(sn.Selector(path=d.path))

        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(100):
                    w.write(data)
                    await w.drain()
            except ConnectionError:
                pass
            finally:
                w.close()
                try:
                    await w.wait_closed()
                except ConnectionError:
                    pass
                closed.release()

        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            box["port"] = server.sockets[0].getsockname()[1]
            box["stop"] = asyncio.Event()
            ready.set()
            await box["stop"].wait()  # type: ignore[union-attr]
            server.close()

        box["loop"] = loop
        try:
            loop.run_until_complete(main())
        except BaseException as e:  # the test reads it
            box["error"] = e
            ready.set()
        finally:
            loop.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    assert ready.wait(scaled(30)) and "error" not in box, box.get("error")

    def client() -> socket.socket:
        c = socket.create_connection(("127.0.0.1", box["port"]))  # type: ignore[arg-type]
        c.settimeout(scaled(20))
        return c

    def echo(c: socket.socket, text: bytes) -> bytes:
        c.sendall(text)
        try:
            return c.recv(100)
        except ConnectionResetError:
            return b""

    clients = [client() for _ in range(10)]
    try:
        for i, c in enumerate(clients):
            assert echo(c, b"hello %d" % i) == b"hello %d" % i
        over = client()
        assert echo(over, b"over") == b"", "the 11th client was served over the limit"
        over.close()
        assert closed.acquire(timeout=scaled(20)), "the refused connection was not closed"
        assert "error" not in box and t.is_alive(), f"the loop ended: {box.get('error')!r}"
        for i, c in enumerate(clients):
            assert echo(c, b"again %d" % i) == b"again %d" % i
        clients.pop(0).close()
        assert closed.acquire(timeout=scaled(20)), "the first client's end was not seen"
        late = client()
        clients.append(late)
        assert echo(late, b"late") == b"late"
        for c in clients:
            c.close()
        for _ in clients:
            assert closed.acquire(timeout=scaled(20)), "a client's end was not seen"
        clients.clear()
    finally:
        for c in clients:
            c.close()
        loop = box.get("loop")
        if isinstance(loop, asyncio.AbstractEventLoop) and not loop.is_closed():
            loop.call_soon_threadsafe(box["stop"].set)  # type: ignore[union-attr]
        t.join(scaled(30))
    assert "error" not in box, box.get("error")

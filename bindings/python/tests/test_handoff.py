# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Handoff from Python (protocol version 2): a lingering named port outlives a process killed
with SIGKILL, and a successor takes its sockets back over the wire, descriptors and all."""

from __future__ import annotations

import errno
import os
import signal
import socket
import time

import pytest

import socknotify as sn
from socknotify import Filter, Registration as R, Trigger


def _predecessor(path: str, name: str, socks: list[socket.socket], linger: float) -> None:
    """Registers socks (keys 100+i) on a lingering port in a child process, then the child is
    killed without closing anything."""
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            conn = sn.Connection(path)
            port = conn.create_port(name=name, linger=linger)
            res = port.register([R.enable(s, key=100 + i, filter=Filter.IN,
                                          trigger=Trigger.LEVEL) for i, s in enumerate(socks)])
            port.post(7, 70)
            os.write(wfd, b"k" if res == [0] * len(socks) else b"x")
            time.sleep(60)
        finally:
            os._exit(1)
    os.close(wfd)
    assert os.read(r, 1) == b"k"
    os.close(r)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    time.sleep(0.05)


def test_take_over_after_sigkill(daemon):
    pairs = [socket.socketpair() for _ in range(3)]
    _predecessor(daemon.path, "py-handoff", [b for _, b in pairs], 5.0)
    for _, b in pairs:
        b.close()  # only the daemon holds these ends now
    pairs[1][0].send(b"meanwhile")
    with daemon.connect() as conn:
        assert conn.version == 2
        port = conn.open_port("py-handoff")
        res = port.take_sockets()
        assert (res.remaining, res.holders) == (0, 0)
        assert sorted(t.key for t in res.sockets) == [100, 101, 102]
        for t in res.sockets:
            assert t.sock is not None and t.enabled and t.armed and t.filter == Filter.IN
            assert t.trigger == Trigger.LEVEL | Trigger.PERSISTENT
        # What was owed: the posted packet, then the data's notification.
        got = port.dequeue(4, timeout=2.0)
        assert got[0].key == 7 and got[0].posted and got[0].bytes == 70
        assert [e.key for e in got[1:]] == [101]
        by_key = {t.key: t.sock for t in res.sockets}
        assert by_key[101].recv(64) == b"meanwhile"
        by_key[100].send(b"x")
        assert pairs[0][0].recv(1) == b"x"
        # Nothing left; closing a taken socket through the library ends it for its peer.
        assert port.take_sockets().sockets == []
        for t in res.sockets:
            conn.close_socket(t.sock)
        for a, _ in pairs:
            a.settimeout(2)
            assert a.recv(1) == b""
            a.close()
        port.set_linger(0)
        port.close()


def test_linger_limits(make_daemon):
    d = make_daemon("--max-linger=1000")
    with d.connect() as conn:
        with pytest.raises(sn.SocknotifyError) as ei:
            conn.create_port(name="toolong", linger=1.001)
        assert ei.value.errno == errno.EDQUOT
        with conn.create_port(name="toolong", linger=1.0) as port:  # the name stayed free
            with pytest.raises(sn.SocknotifyError) as ei:
                port.set_linger(2)
            assert ei.value.errno == errno.EDQUOT
            port.set_linger(0)
        with conn.create_port() as private:
            with pytest.raises(sn.SocknotifyError) as ei:
                private.set_linger(1)
            assert ei.value.errno == errno.EINVAL

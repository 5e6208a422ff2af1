# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Errors that say what happened (issue 29): a failed connection names every socket path
tried with its error (and the socknotify group on EACCES), and a call refused by a limit names
the limit and its value (LIMIT_INFO), per registration item too."""

import errno
import os
import socket
import subprocess
import sys
import tempfile
import threading

import pytest

import socknotify
import socknotify._client as client
from conftest import scaled, wait_waiters

HERE = os.path.dirname(os.path.abspath(__file__))


def test_connect_error_names_every_path(monkeypatch):
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.sock"), os.path.join(d, "b.sock")
        monkeypatch.setattr(client, "default_paths", lambda: [a, b])
        with pytest.raises(FileNotFoundError) as ei:
            socknotify.Connection()
    e = ei.value
    assert isinstance(e, socknotify.ConnectError)
    assert isinstance(e, socknotify.SocknotifyError)
    assert e.errno == errno.ENOENT
    assert e.tried == [(a, errno.ENOENT), (b, errno.ENOENT)]
    text = str(e)
    assert f"{a} (No such file or directory)" in text
    assert f"{b} (No such file or directory)" in text
    assert "SOCKNOTIFY_SOCKET" in text
    assert "group socknotify" not in text


def test_connect_refused_is_connection_refused_error():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(path)
        s.close()  # the path stays, nobody listens
        with pytest.raises(ConnectionRefusedError) as ei:
            socknotify.Connection(path)
    assert isinstance(ei.value, socknotify.ConnectError)
    assert f"{path} (Connection refused)" in str(ei.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_connect_permission_names_the_group(daemon):
    # The daemon's socket, reached by a user that may not: PermissionError with the hint.
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        path = os.path.join(d, "s.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(path)
        s.listen()
        code = (
            "import os, sys, socknotify\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "try:\n"
            "    socknotify.Connection(sys.argv[1])\n"
            "except PermissionError as e:\n"
            "    assert isinstance(e, socknotify.ConnectError), type(e)\n"
            "    print(e)\n"
            "    sys.exit(0)\n"
            "sys.exit(3)\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True,
                           text=True, timeout=scaled(30))
        s.close()
    assert r.returncode == 0, r.stderr
    assert f"{path} (Permission denied)" in r.stdout
    assert "members of group socknotify" in r.stdout


def test_waits_per_user(make_daemon):
    d = make_daemon("--max-waits-per-user=2")
    with d.connect() as conn, conn.create_port() as port:
        got = []
        threads = [threading.Thread(target=lambda: got.append(port.dequeue(1, None)))
                   for _ in range(2)]
        for t in threads:
            t.start()
        wait_waiters(conn, 2)
        with pytest.raises(socknotify.LimitError) as ei:
            port.dequeue(1, scaled(10))
        e = ei.value
        assert e.errno == errno.EDQUOT
        assert (e.limit, e.value, e.scope) == ("max-waits-per-user", 2, "user")
        assert "max-waits-per-user (2) reached" in str(e)
        for i in range(2):
            port.post(i)
        for t in threads:
            t.join(scaled(10))
        assert len(got) == 2


def test_registrations_per_port_per_item(make_daemon):
    d = make_daemon("--max-registrations=2")
    socks = [socket.socketpair() for _ in range(4)]
    try:
        with d.connect() as conn, conn.create_port() as port:
            regs = [socknotify.Registration.enable(a, key=i) for i, (a, _b) in enumerate(socks)]
            assert port.register(regs) == [0, 0, errno.EDQUOT, errno.EDQUOT]
            assert regs[0].error is None
            for r in regs[2:]:
                e = r.error
                assert isinstance(e, socknotify.LimitError)
                assert (e.limit, e.value, e.scope) == ("max-registrations", 2, "port")
                assert "max-registrations (2) reached, on this port" in str(e)
    finally:
        for a, b in socks:
            a.close()
            b.close()


def test_ports_and_posted(make_daemon):
    d = make_daemon("--max-ports=2", "--max-posted=3")
    with d.connect() as conn, conn.create_port() as p1, conn.create_port() as p2:
        with pytest.raises(socknotify.LimitError) as ei:
            conn.create_port()
        assert (ei.value.limit, ei.value.value, ei.value.scope) == ("max-ports", 2,
                                                                    "connection")
        for i in range(3):
            p2.post(i)
        with pytest.raises(socknotify.LimitError) as ei:
            p2.post(9)
        assert (ei.value.limit, ei.value.value, ei.value.scope) == ("max-posted", 3, "port")
        assert "max-posted (3) reached" in str(ei.value)
        assert p1


def test_sockets_per_user(make_daemon):
    d = make_daemon("--max-sockets-per-user=2")
    socks = [socket.socketpair() for _ in range(3)]
    try:
        with d.connect() as c1, d.connect() as c2, c1.create_port() as p1, \
                c2.create_port() as p2:
            assert p2.register([socknotify.Registration.enable(socks[0][0], 1)]) == [0]
            regs = [socknotify.Registration.enable(socks[1][0], 2),
                    socknotify.Registration.enable(socks[2][0], 3)]
            assert p1.register(regs) == [0, errno.EDQUOT]
            e = regs[1].error
            assert (e.limit, e.value, e.scope) == ("max-sockets-per-user", 2, "user")
    finally:
        for a, b in socks:
            a.close()
            b.close()


def test_unknown_limit_number_prints_as_number():
    # Hostile or newer daemons: a number the binding does not know is shown as a number.
    e = socknotify.LimitError._from_record((1, 0xFFFFFFFF, 0xFFFFFFFF, 999, 77, 5), "POST")
    assert e.limit == "limit 999" and e.value == 5 and e.scope is None
    assert "limit 999 (5) reached" in str(e)

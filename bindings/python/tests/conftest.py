# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Fixtures: a real socknotifyd, started from the build tree on a temporary socket.

The daemon binary is $SN_DAEMON, else $SN_BUILDDIR/daemon/socknotifyd, else the one of the
source tree this file lives in.  $SN_TEST_DAEMON_WRAPPER (for example a valgrind command line)
is put in front of it, as the C test suites do.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import socknotify  # noqa: E402


def scaled(seconds: float) -> float:
    """A wait's bound times CK_TIMEOUT_MULTIPLIER, as the C tests scale theirs (busy or slow
    machines, sanitizer builds)."""
    try:
        m = float(os.environ.get("CK_TIMEOUT_MULTIPLIER", "1"))
    except ValueError:
        m = 1.0
    return seconds * (m if m > 0 else 1.0)


def wait_waiters(conn: socknotify.Connection, want: int, timeout: float = 5.0) -> None:
    """Waits until the daemon reports want calls parked (its status "waiters")."""
    deadline = time.monotonic() + scaled(timeout)
    while conn.status()["waiters"] != want:
        assert time.monotonic() < deadline, f"{want} waits never parked"
        time.sleep(0.005)


def daemon_binary() -> str:
    if os.environ.get("SN_DAEMON"):
        return os.environ["SN_DAEMON"]
    build = os.environ.get("SN_BUILDDIR") or str(HERE.parent.parent.parent)
    return os.path.join(build, "daemon", "socknotifyd")


class Daemon:
    """A socknotifyd process on its own socket; stop() ends it and checks its exit status.

    ``path``: a socket path to use instead of a new temporary directory's (the caller owns
    that directory: a daemon started again where another one ran).  ``user``: a uid to run
    the daemon as (root only)."""

    def __init__(self, *args: str, path: str | None = None, user: int | None = None):
        self.dir = None if path else tempfile.mkdtemp(prefix="sn-py-")
        self.path = path or os.path.join(self.dir, "socknotify.sock")
        wrapper = shlex.split(os.environ.get("SN_TEST_DAEMON_WRAPPER", ""))
        cmd = wrapper + [daemon_binary(), "--socket", self.path, *args]
        extra = {} if user is None else {"user": user, "group": user, "extra_groups": []}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     **extra)
        deadline = time.monotonic() + scaled(20)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"socknotifyd exited at start-up: {self.proc.stderr.read()!r}")
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                    s.connect(self.path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("socknotifyd did not start") from None
                time.sleep(0.01)

    def connect(self) -> socknotify.Connection:
        return socknotify.Connection(self.path)

    def fds(self) -> int:
        """Descriptors the daemon holds (to see its copies of sockets come and go)."""
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def wait_fds(self, want: int, timeout: float = 2.0) -> int:
        """The daemon's descriptor count once it equals want, or after timeout: the daemon
        closes clients' descriptors on a separate thread, just after its answer."""
        end = time.monotonic() + scaled(timeout)
        while (n := self.fds()) != want and time.monotonic() < end:
            time.sleep(0.01)
        return n

    def quiet_fds(self, timeout: float = 2.0) -> int:
        """The daemon's descriptor count once it has stopped changing (read the same five
        times, 20 ms apart): what an earlier test closed may still be on the daemon's closing
        thread when the next one begins."""
        end = time.monotonic() + scaled(timeout)
        n, same = self.fds(), 0
        while same < 5 and time.monotonic() < end:
            time.sleep(0.02)
            m = self.fds()
            same = same + 1 if m == n else 0
            n = m
        return n

    def kill(self) -> None:
        """Ends the daemon with SIGKILL (its socket file stays behind) and reaps it."""
        self.proc.kill()
        self.proc.wait(60)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            rc = self.proc.wait(60)
        finally:
            self.proc.stderr.close()
            if self.dir:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
                os.rmdir(self.dir)
        return rc


@pytest.fixture(scope="module")
def daemon():
    d = Daemon()
    yield d
    assert d.stop() == 0, "socknotifyd did not exit cleanly"


@pytest.fixture
def make_daemon():
    """Starts daemons with options; each is stopped (and must exit 0) after the test."""
    started: list[Daemon] = []

    def make(*args: str) -> Daemon:
        d = Daemon(*args)
        started.append(d)
        return d

    yield make
    for d in started:
        assert d.stop() == 0


@pytest.fixture
def conn(daemon):
    with daemon.connect() as c:
        yield c


@pytest.fixture
def port(conn):
    with conn.create_port() as p:
        yield p


@pytest.fixture
def pair():
    """A connected Unix stream socket pair, closed after the test."""
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()

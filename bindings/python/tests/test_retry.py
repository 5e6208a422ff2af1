# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""The one request a crash interrupts (issue 25): the daemon, restored from its journal under
a descriptor store, answers it EIO, and the binding sends it again where applying it twice
gives the same result (_AGAIN_AFTER_EIO), as libsocknotify does (tests/integration/
test-retry.c).  The daemon is crashed just before a chosen reply by libsncrash.so, a preload
built for the tests (tests/helpers/crash-reply.c); this file plays the service manager's
descriptor store, as tests/helpers/manager.c does for the C tests."""

from __future__ import annotations

import array
import errno
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from conftest import daemon_binary, scaled

import socknotify
from socknotify import _wire as w

BUILD = os.environ.get("SN_BUILDDIR") or os.path.dirname(os.path.dirname(daemon_binary()))
PRELOAD = os.path.join(BUILD, "tests", "helpers", ".libs", "libsncrash.so")

pytestmark = [
    pytest.mark.skipif(bool(os.environ.get("SN_TEST_DAEMON_WRAPPER")),
                       reason="libsncrash.so is preloaded into socknotifyd, which a wrapper "
                              "($SN_TEST_DAEMON_WRAPPER) would run instead"),
    pytest.mark.skipif(not os.path.exists(PRELOAD),
                       reason=f"{PRELOAD} is not built (make check builds it)"),
]

# Started in a helper process that puts the stored descriptors at 3, 4, ... and execs the
# daemon, so that LISTEN_PID is the daemon's own pid.
_EXEC = """
import os, sys
fds = [int(x) for x in sys.argv[1].split(",") if x]
high = [os.dup2(f, 1000 + i) for i, f in enumerate(fds)]  # above every number used below
for i, f in enumerate(high):
    os.dup2(f, 3 + i)
os.closerange(3 + len(fds), 1 << 16)
if fds:
    os.environ["LISTEN_FDS"] = str(len(fds))
    os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.argv[2], sys.argv[2:])
"""


class Store:
    """A service manager's descriptor store (FDSTORE=1, FDSTOREREMOVE=1, BARRIER=1) on a
    datagram socket of its own, and the daemon it serves."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sn-py-store-")
        self.path = os.path.join(self.dir, "socknotify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(self.dir, "notify"))
        self.fds: list[tuple[str, int]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.proc: subprocess.Popen | None = None

    def _serve(self) -> None:
        while True:
            try:
                text, fds, _flags, _addr = socket.recv_fds(self.sock, 4096, 64)
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in text.decode().splitlines()
                          if "=" in line)
            with self.lock:
                if fields.get("FDSTORE") == "1":
                    self.fds += [(fields.get("FDNAME", "?"), fd) for fd in fds]
                    fds = []
                elif fields.get("FDSTOREREMOVE") == "1":
                    for name, fd in [x for x in self.fds if x[0] == fields.get("FDNAME")]:
                        os.close(fd)
                        self.fds.remove((name, fd))
            for fd in fds:
                os.close(fd)  # BARRIER=1: the close is the answer

    def sync(self) -> None:
        """Returns once every message sent to the store before it was handled."""
        r, wfd = os.pipe()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendmsg([b"BARRIER=1"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                        array.array("i", [wfd]))],
                      0, os.path.join(self.dir, "notify"))
        os.close(wfd)
        os.read(r, 1)  # end of file once the store closed its copy
        os.close(r)

    def start(self, crash_reply: int | None) -> None:
        env = dict(os.environ, NOTIFY_SOCKET=os.path.join(self.dir, "notify"), FDSTORE="64")
        if crash_reply is not None:
            env.update(LD_PRELOAD=PRELOAD, SN_TEST_CRASH_REPLY=str(crash_reply))
            env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS"),
                                                      "verify_asan_link_order=0") if x)
        with self.lock:
            fds = [fd for _n, fd in self.fds]
            if fds:
                env["LISTEN_FDNAMES"] = ":".join(n for n, _fd in self.fds)
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _EXEC, ",".join(map(str, fds)), daemon_binary(),
                 "--socket", self.path], env=env, pass_fds=fds, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + scaled(20)
        while True:
            assert self.proc.poll() is None, "socknotifyd exited at start-up"
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                    s.connect(self.path)
                return
            except OSError:
                assert time.monotonic() < deadline, "socknotifyd did not start"
                time.sleep(0.01)

    def run_through_crashes(self, fn, again: int | None) -> tuple[int, object]:
        """Runs fn on a thread; each time the daemon dies meanwhile, starts the next one from
        the store (crashing again at reply type `again`).  Returns (crashes, fn's result or
        the exception it raised)."""
        out: list = []

        def call() -> None:
            try:
                out.append(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the test
                out.append(e)

        t = threading.Thread(target=call)
        t.start()
        crashes = 0
        while True:
            try:
                self.proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                if not t.is_alive():
                    break
                continue
            assert self.proc.returncode == -9, self.proc.returncode
            crashes += 1
            assert crashes <= 5
            self.sync()
            self.start(again)
        t.join(scaled(20))
        assert not t.is_alive()
        return crashes, out[0]

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(scaled(20))
        self.sock.close()
        with self.lock:
            for _n, fd in self.fds:
                os.close(fd)
            self.fds = []


@pytest.fixture
def store():
    s = Store()
    yield s
    s.stop()


def test_linger_sent_again_through_a_crash(store):
    store.start(w.PORT_LINGER | w.REPLY_BIT)
    with socknotify.Connection(store.path) as conn:
        port = conn.create_port(name="retry")
        crashes, res = store.run_through_crashes(lambda: port.set_linger(60), None)
        assert crashes == 1
        assert res is None, res
        assert isinstance(conn.status(), dict)  # the restored daemon serves on
        port.set_linger(0)


def test_post_is_not_sent_again(store):
    store.start(w.POST | w.REPLY_BIT)
    with socknotify.Connection(store.path) as conn:
        port = conn.create_port()
        crashes, res = store.run_through_crashes(lambda: port.post(77, 5, 99), None)
        assert crashes == 1
        assert isinstance(res, OSError) and res.errno == errno.EIO, res
        got = port.dequeue(4, timeout=scaled(5))
        assert [(e.key, e.overlapped) for e in got] == [(77, 99)]
        assert port.dequeue(4, timeout=0) == []


def test_a_call_that_crashes_every_daemon_ends(store):
    store.start(w.PORT_LINGER | w.REPLY_BIT)
    with socknotify.Connection(store.path) as conn:
        port = conn.create_port(name="retry")
        crashes, res = store.run_through_crashes(lambda: port.set_linger(60),
                                                 w.PORT_LINGER | w.REPLY_BIT)
        assert crashes == 3  # the first attempt and two more
        assert isinstance(res, OSError) and res.errno == errno.EIO, res
        assert isinstance(conn.status(), dict)  # the restored daemon serves on

# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""The binding checks the daemon's replies as it checks any input.

socknotifyd cannot be made to send a malformed reply, so here, and only here, a fake peer plays
the daemon's side: a forked child listening on a real SOCK_SEQPACKET socket answers HELLO and
PORT_CREATE as the daemon does, then sends one crafted reply with real descriptors
(SCM_RIGHTS).  This is not a mock of the daemon's behaviour (the test guide forbids those); it
is the only way to test the validation of hostile replies.  Each case checks that the call
raises SocknotifyError EBADMSG (not a raw OSError), that no socket object is handed out, that
the connection is then lost (ECONNRESET), and that the process's descriptors are back to what
they were: every received one closed, an unrelated descriptor opened before still open and
still the same file.  One well-formed reply checks the fake peer itself.

The binding maps no shared memory: it never asks for the rings of protocol version 3, and a
daemon that offers them anyway (its HELLO_REPLY carrying a ring file whose positions would make
a client that trusted them write past its mapping, and two doorbells) is refused with EPROTO,
every descriptor closed and nothing mapped.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import struct
import tempfile

import pytest

import socknotify as sn
from socknotify import _wire as w

SCENARIOS = ["dup-index", "index-past", "regular-file", "pipe", "more-fds", "fewer-fds",
             "more-items", "fds-on-error", "fds-on-create", "short-results", "extra-entries"]


def _count_fds() -> int:
    return len(os.listdir("/proc/self/fd")) - 1  # the listing's own


def _reply(mtype: int, msg_id: int, body: bytes, array: bytes = b"", count: int = 0,
           nfds: int = 0, status: int = 0) -> bytes:
    size = w.HEADER.size + len(body) + len(array)
    return w.HEADER.pack(size, mtype, nfds, msg_id, status, count, 0) + body + array


def _fake_daemon(lsock: socket.socket, scenario: str) -> None:
    """Child side: HELLO, PORT_CREATE, then the crafted reply (none for "valid": a
    well-formed one); waits for the client's end."""
    c, _ = lsock.accept()
    sp = socket.socketpair()
    pr, pw = os.pipe()
    m = w.decode(c.recv(4096))
    assert m.type == w.HELLO
    c.send(_reply(w.HELLO | w.REPLY_BIT, m.id,
                  w.HELLO_REPLY_BODY.pack(2, 0, 65536, 253, 64, 1000, 1000, 64, 1000,
                                          os.getpid())))
    m = w.decode(c.recv(4096))
    assert m.type == w.PORT_CREATE
    body = w.PORT_REPLY_BODY.pack(7, 1)
    if scenario == "fds-on-create":
        socket.send_fds(c, [_reply(w.PORT_CREATE | w.REPLY_BIT, m.id, body, nfds=1)],
                        [sp[0].fileno()])
    elif scenario in ("short-results", "extra-entries"):
        # PROCESS (its descriptor, if any, discarded by recv()) -> a reply that does not fit:
        # no result for the registration, or 3 entries for a dequeue of 1.
        c.send(_reply(w.PORT_CREATE | w.REPLY_BIT, m.id, body))
        m = w.decode(c.recv(4096))
        assert m.type == w.PROCESS
        n = 3 if scenario == "extra-entries" else 0
        entries = b"".join(w.ENTRY.pack(200 + i, 0, 1, 0) for i in range(n))
        size = w.HEADER.size + w.PROCESS_REPLY_BODY.size + len(entries)
        c.send(w.HEADER.pack(size, w.PROCESS | w.REPLY_BIT, 0, m.id, 0, 0, n) +
               w.PROCESS_REPLY_BODY.pack(0) + entries)
    else:
        c.send(_reply(w.PORT_CREATE | w.REPLY_BIT, m.id, body))
        m = w.decode(c.recv(4096))
        assert m.type == w.PORT_TAKE
        fds = [sp[0].fileno(), sp[1].fileno()]
        count, status, index = 2, 0, [0, 1]
        announced = None
        if scenario == "dup-index":
            index = [0, 0]
        elif scenario == "index-past":
            index = [0, 5]
        elif scenario == "regular-file":
            fds[1] = os.memfd_create("not-a-socket")
        elif scenario == "pipe":
            fds, count, index = [pw], 1, [0]
        elif scenario == "more-fds":
            fds, count, index, announced = fds + [pr], 1, [0], 1
        elif scenario == "fewer-fds":
            fds, announced = fds[:1], 2
        elif scenario == "more-items":
            fds, count, index = fds + [os.dup(sp[0].fileno())], 3, [0, 1, 2]
        elif scenario == "fds-on-error":
            fds, count, index, status = fds[:1], 0, [], errno.EAGAIN
        items = b""
        for i in range(count):
            st = os.fstat(fds[min(i, len(fds) - 1)])
            items += w.REGISTRATION.pack(100 + i, st.st_dev, st.st_ino, 1, 1, 0x06, index[i],
                                         3 + i)
        data = _reply(w.PORT_TAKE | w.REPLY_BIT, m.id, w.PORT_TAKE_REPLY_BODY.pack(0, 0), items,
                      count, len(fds) if announced is None else announced, status)
        socket.send_fds(c, [data], fds)
    # Until the client is done; a client that asks again (it should not) is refused rather than
    # left waiting.
    while data := c.recv(4096):
        m = w.decode(data)
        c.send(_reply(w.ERROR, m.id, b"", status=errno.EPROTO))


def _serve(scenario: str):
    """Forks the fake daemon; returns (socket path, child pid, temporary directory)."""
    tmp = tempfile.mkdtemp(prefix="sn-py-hostile-")
    path = os.path.join(tmp, "fake.sock")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lsock.bind(path)
    lsock.listen(1)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            _fake_daemon(lsock, scenario)
            status = 0
        finally:
            os._exit(status)
    lsock.close()
    return path, pid, tmp


def _finish(pid: int, tmp: str) -> None:
    _, st = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0, "the fake daemon failed"
    os.unlink(os.path.join(tmp, "fake.sock"))
    os.rmdir(tmp)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_hostile_reply(scenario: str) -> None:
    path, pid, tmp = _serve(scenario)
    conn = sn.Connection(path)
    unrelated = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    before = os.fstat(unrelated)
    port = None
    try:
        base = _count_fds()
        if scenario == "fds-on-create":
            with pytest.raises(sn.SocknotifyError) as exc:
                conn.create_port(1)
        elif scenario in ("short-results", "extra-entries"):
            port = conn.create_port(1)
            a, b = socket.socketpair()
            with a, b, pytest.raises(sn.SocknotifyError) as exc:
                if scenario == "short-results":
                    port.register([sn.Registration.enable(a, key=1, filter=sn.Filter.IN)])
                else:
                    port.dequeue(1, timeout=0)
        else:
            port = conn.create_port(1)
            with pytest.raises(sn.SocknotifyError) as exc:
                port.take_sockets(2)
        assert exc.value.errno == errno.EBADMSG, exc.value
        assert _count_fds() == base, f"{scenario}: descriptors leaked or closed"
        after = os.fstat(unrelated)
        assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
        # The connection cannot be trusted any more.
        with pytest.raises(sn.SocknotifyError) as exc:
            conn.status()
        assert exc.value.errno == errno.ECONNRESET
    finally:
        conn.close()
        os.close(unrelated)
    _finish(pid, tmp)


def test_wellformed_reply() -> None:
    """The fake peer's well-formed reply gives two sockets of their own descriptors."""
    path, pid, tmp = _serve("valid")
    conn = sn.Connection(path)
    try:
        base = _count_fds()
        got = conn.create_port(1).take_sockets(2)
        fds = [t.sock.fileno() for t in got.sockets]
        assert len(fds) == 2 and fds[0] != fds[1]
        assert all(stat.S_ISSOCK(os.fstat(fd).st_mode) for fd in fds)
        assert [t.key for t in got.sockets] == [100, 101]
        assert _count_fds() == base + 2
        for t in got.sockets:
            t.sock.close()
        assert _count_fds() == base
    finally:
        conn.close()
    _finish(pid, tmp)


# ---- a daemon that offers the shared-memory rings --------------------------------------------

RING_NAME = "hostile-ring"
RING_OFFERS = ["v3-rings", "v2-rings", "socket-with-fds"]


def _ring_file() -> int:
    """A ring file as a hostile daemon would pass it (PROTOCOL.md section 8): sealed, the
    layout valid with the SQ last in the file, and sq_tail = sq_head = sq_size - 4, where a
    client that took them would write its first record header 4 bytes past the file."""
    fd = os.memfd_create(RING_NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 102400)
    os.pwrite(fd, struct.pack("<6I", 0x47524E53, 1, 4096 + 65536, 32768, 4096, 65536), 0)
    os.pwrite(fd, struct.pack("<I", 32768 - 4), 64)  # sq_tail
    os.pwrite(fd, struct.pack("<I", 32768 - 4), 128)  # sq_head
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def _ring_daemon(lsock: socket.socket, offer: str) -> None:
    """Child side: checks that HELLO does not ask for the rings, answers with them anyway
    (version 3 and transport 1, the same at version 2, or transport 0 with the descriptors),
    then waits for the client's end."""
    c, _ = lsock.accept()
    m = w.decode(c.recv(4096))
    assert m.type == w.HELLO
    _magic, _vmin, vmax, flags = w.HELLO_BODY.unpack(m.body)
    assert flags & 1 == 0 and vmax < 3, "the binding asked for the rings"
    version, transport = {"v3-rings": (3, 1), "v2-rings": (2, 1), "socket-with-fds": (2, 0)}[offer]
    bell_daemon = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    bell_client = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    fds = [_ring_file(), bell_daemon[1].fileno(), bell_client[1].fileno()]
    body = w.HELLO_REPLY_BODY.pack(version, transport, 65536, 253, 64, 1000, 1000, 64, 1000,
                                   os.getpid())
    socket.send_fds(c, [_reply(w.HELLO | w.REPLY_BIT, m.id, body, nfds=3)], fds)
    while c.recv(4096):
        pass


def _ring_mapped() -> bool:
    with open("/proc/self/maps", encoding="ascii", errors="replace") as f:
        return any("memfd:" + RING_NAME in line for line in f)


@pytest.mark.parametrize("offer", RING_OFFERS)
def test_ring_offer_refused(offer: str) -> None:
    tmp = tempfile.mkdtemp(prefix="sn-py-hostile-")
    path = os.path.join(tmp, "fake.sock")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lsock.bind(path)
    lsock.listen(1)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            _ring_daemon(lsock, offer)
            status = 0
        finally:
            os._exit(status)
    lsock.close()
    base = _count_fds()
    with pytest.raises(sn.SocknotifyError) as exc:
        sn.Connection(path, reconnect_ms=0)
    assert exc.value.errno == errno.EPROTO, exc.value
    assert _count_fds() == base, f"{offer}: {_count_fds()} descriptors, {base} before"
    assert not _ring_mapped(), f"{offer}: the ring file is mapped"
    _finish(pid, tmp)

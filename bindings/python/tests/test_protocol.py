# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Protocol details PROTOCOL.md states, checked on the wire with raw messages: which failures
come as ERROR and which as a PROCESS_REPLY with a status, what multi-part calls take from
which part, and what a second HELLO does."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from socknotify import _wire as w


class Raw:
    """A connection that sends hand-built messages and returns the raw replies."""

    def __init__(self, path: str):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.connect(path)
        self.s.settimeout(10)
        rep = self.call(w.HELLO, 0, w.HELLO_BODY.pack(w.MAGIC, 1, 1, 0))
        assert rep.type == w.HELLO | w.REPLY_BIT

    def send(self, mtype: int, msg_id: int, body: bytes = b"", array: bytes = b"",
             count: int = 0, fds: list[int] | None = None) -> None:
        data = w.encode(mtype, msg_id, body, array, count, len(fds or []))
        if fds:
            socket.send_fds(self.s, [data], fds)
        else:
            self.s.send(data)

    def recv(self) -> w.Message:
        return w.decode(self.s.recv(1 << 20))

    def call(self, *args, **kw) -> w.Message:
        self.send(*args, **kw)
        return self.recv()

    def port(self) -> int:
        rep = self.call(w.PORT_CREATE, 5, w.PORT_CREATE_BODY.pack(1, 0))
        return w.PORT_REPLY_BODY.unpack(rep.body)[0]

    def close(self) -> None:
        self.s.close()


@pytest.fixture
def raw(daemon):
    r = Raw(daemon.path)
    yield r
    r.close()


def reg_item(sock: socket.socket, key: int, op: int = 1, fd_index: int = w.NO_FD,
             filt: int = 1, trig: int = 4) -> bytes:
    st = os.fstat(sock.fileno())
    return w.REGISTRATION.pack(key, st.st_dev, st.st_ino, filt, op, trig, fd_index,
                               sock.fileno())


def process(port: int, timeout: int = 0, max_entries: int = 0, flags: int = 0,
            thread: int = 0) -> bytes:
    return w.PROCESS_BODY.pack(port, timeout, max_entries, flags, thread)


def test_call_failures_are_process_replies(raw):
    rep = raw.call(w.PROCESS, 11, process(0xDEAD, 0, 1))
    assert (rep.type, rep.id, rep.status, rep.count, rep.count2) == (
        w.PROCESS | w.REPLY_BIT, 11, errno.EBADF, 0, 0)
    port = raw.port()
    rep = raw.call(w.PROCESS, 12, process(port, 100, 0))
    assert (rep.type, rep.status, rep.count) == (w.PROCESS | w.REPLY_BIT, errno.EINVAL, 0)
    rep = raw.call(w.PROCESS, 13, process(port, 0, 1, flags=0x10))
    assert (rep.type, rep.status) == (w.PROCESS | w.REPLY_BIT, errno.EINVAL)


def test_descriptor_mismatch_is_error(raw, pair):
    a, _ = pair
    port = raw.port()
    # An item names descriptor 0 but none is attached.
    rep = raw.call(w.PROCESS, 21, process(port), reg_item(a, 1, fd_index=0), 1)
    assert (rep.type, rep.id, rep.status) == (w.ERROR, 21, errno.EBADMSG)
    # A descriptor attached that no item names.
    rep = raw.call(w.PROCESS, 22, process(port), reg_item(a, 1), 1, fds=[a.fileno()])
    assert (rep.type, rep.id, rep.status) == (w.ERROR, 22, errno.EBADMSG)
    # The connection stays usable.
    rep = raw.call(w.PROCESS, 23, process(port), reg_item(a, 1, fd_index=0), 1,
                   fds=[a.fileno()])
    assert (rep.type, rep.status, rep.count) == (w.PROCESS | w.REPLY_BIT, 0, 1)
    assert w.RESULT.unpack(rep.array1) == (0,)


def test_second_hello_is_eproto_and_connection_stays(raw):
    rep = raw.call(w.HELLO, 31, w.HELLO_BODY.pack(w.MAGIC, 1, 1, 0))
    assert (rep.type, rep.id, rep.status) == (w.ERROR, 31, errno.EPROTO)
    rep = raw.call(w.STATUS, 32)
    assert (rep.type, rep.status) == (w.STATUS | w.REPLY_BIT, 0)


def test_request_before_hello_closes(daemon):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(daemon.path)
    s.settimeout(10)
    s.send(w.encode(w.STATUS, 41))
    rep = w.decode(s.recv(4096))
    assert (rep.type, rep.id, rep.status) == (w.ERROR, 41, errno.EPROTO)
    assert s.recv(4096) == b""
    s.close()


def test_parts_last_part_decides_and_must_agree_on_port(raw, pair):
    a, b = pair
    c, d = socket.socketpair()
    try:
        port = raw.port()
        other = raw.port()
        b.send(b"x")
        # The first part asks for nothing; the last part's timeout and max_entries count.
        raw.send(w.PROCESS, 51, process(port, 0, 0, flags=w.PROCESS_PART),
                 reg_item(a, 7, fd_index=0), 1, fds=[a.fileno()])
        rep = raw.call(w.PROCESS, 51, process(port, 5000, 4), reg_item(c, 8, fd_index=0), 1,
                       fds=[c.fileno()])
        assert (rep.type, rep.status, rep.count, rep.count2) == (
            w.PROCESS | w.REPLY_BIT, 0, 2, 1)
        assert w.ENTRY.unpack(rep.array2)[0] == 7
        # Parts that name different ports: EINVAL, and nothing was applied.
        raw.send(w.PROCESS, 52, process(port, flags=w.PROCESS_PART),
                 reg_item(d, 9, fd_index=0), 1, fds=[d.fileno()])
        rep = raw.call(w.PROCESS, 52, process(other), b"", 0)
        assert (rep.type, rep.status, rep.count) == (w.PROCESS | w.REPLY_BIT, errno.EINVAL, 0)
        rep = raw.call(w.PROCESS, 53, process(port), reg_item(d, 9, op=4), 1)
        assert w.RESULT.unpack(rep.array1) == (errno.ENOENT,)
        # Another id while a call is staged: ERROR/EBUSY, the staged call goes on.
        raw.send(w.PROCESS, 54, process(port, flags=w.PROCESS_PART),
                 reg_item(d, 10, fd_index=0), 1, fds=[d.fileno()])
        rep = raw.call(w.PROCESS, 55, process(port))
        assert (rep.type, rep.id, rep.status) == (w.ERROR, 55, errno.EBUSY)
        rep = raw.call(w.PROCESS, 54, process(port))
        assert (rep.type, rep.id, rep.status, rep.count) == (w.PROCESS | w.REPLY_BIT, 54, 0, 1)
    finally:
        c.close()
        d.close()


def test_thread_is_not_checked(raw):
    port = raw.port()
    for thread in (0, 1, 0xFFFFFFFF):
        raw.call(w.POST, 60, w.PORT_BODY.pack(port), w.PACKET.pack(thread, 0, 0, 0), 1)
        rep = raw.call(w.PROCESS, 61, process(port, 0, 1, thread=thread))
        assert (rep.status, rep.count2) == (0, 1)
        # Each identity stays running (concurrency 1) until THREAD_EXIT names it.
        raw.call(w.THREAD_EXIT, 62, w.THREAD_BODY.pack(thread))


def test_status_limits_keys(raw):
    import json

    rep = raw.call(w.STATUS, 70)
    doc = json.loads(rep.array1)
    for k in ("version", "protocol", "pid", "uptime_seconds", "socket", "fd_capacity", "limits",
              "connections", "ports", "registrations", "queued", "waiters", "counters",
              "errors"):
        assert k in doc
    for k in ("max_message", "max_fds", "max_ports", "max_registrations", "max_posted",
              "max_waits", "max_connections", "max_output", "max_sockets_per_user"):
        assert k in doc["limits"]


def test_items_per_call_limit(conn, pair):
    """One call (all its parts) carries at most (max_message - 52) / 4 items: E2BIG beyond,
    answered as a PROCESS_REPLY after the last part, with nothing applied."""
    import socknotify as sn

    a, _ = pair
    call_max = (conn.limits.max_message - 52) // 4
    with conn.create_port() as port:
        res = port.process([sn.Registration.disable(a)] * call_max)
        assert res.results == [errno.ENOENT] * call_max
        with pytest.raises(sn.SocknotifyError) as ei:
            port.process([sn.Registration.disable(a)] * (call_max + 1))
        assert ei.value.errno == errno.E2BIG
        assert conn.status()["protocol"] >= 1  # the connection goes on


def test_failed_part_poisons_the_rest_of_its_call(raw, pair):
    """What a client sending parts back to back needs: one reply for the call, nothing applied."""
    a, _ = pair
    c, d = socket.socketpair()
    try:
        port = raw.port()
        raw.send(w.PROCESS, 81, process(port, flags=w.PROCESS_PART), reg_item(a, 1, fd_index=0),
                 1, fds=[a.fileno()])
        raw.send(w.PROCESS, 81, process(port, flags=w.PROCESS_PART), reg_item(c, 2, fd_index=0),
                 1)  # its descriptor is missing: ERROR/EBADMSG
        raw.send(w.PROCESS, 81, process(port), reg_item(c, 3, fd_index=0), 1, fds=[c.fileno()])
        rep = raw.recv()
        assert (rep.type, rep.id, rep.status) == (w.ERROR, 81, errno.EBADMSG)
        rep = raw.call(w.STATUS, 82)  # the next reply must be this one's
        assert (rep.type, rep.id) == (w.STATUS | w.REPLY_BIT, 82)
        rep = raw.call(w.PROCESS, 83, process(port), reg_item(c, 0, op=2), 1)
        assert w.RESULT.unpack(rep.array1) == (errno.ENOENT,)  # c was never registered
    finally:
        c.close()
        d.close()

# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Encoding and decoding of socknotify protocol messages (proto/PROTOCOL.md, versions 1 and 2).

Everything here is pure: bytes in, values out.  Integers are little-endian and unaligned, with
no padding; a message is the 24-byte header, the fixed body of its type, then ``count`` items of
its first array and ``count2`` items of its second.  The layouts are written out by hand from
the protocol document, not generated from the C sources, so that this module is an independent
reading of that document.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = 0x46544E53
VERSION = 2  # the newest version spoken; handoff (PORT_LINGER, PORT_TAKE) needs it
VERSION_MIN = 1
REPLY_BIT = 0x80
NO_FD = 0xFFFFFFFF
INFINITE = 0xFFFFFFFF
PROCESS_PART = 0x1
MAX_FDS = 253  # SCM_MAX_FD

KIND_SOCKET = 0
KIND_POSTED = 1

# Message types.
HELLO = 0x01
PORT_CREATE = 0x02
PORT_CLOSE = 0x03
PROCESS = 0x04
POST = 0x05
SOCKET_CLOSE = 0x06
STATUS = 0x07
PORT_OPEN = 0x08
THREAD_EXIT = 0x09
PORT_LINGER = 0x0B
PORT_TAKE = 0x0C
LIMIT_INFO = 0x0D
ERROR = 0xFF

HEADER = struct.Struct("<IHHIIII")
HELLO_BODY = struct.Struct("<IHHI")
HELLO_SELF = 0x2  # HELLO flags bit 1: the client schedules its own threads (any version)
HELLO_REPLY_BODY = struct.Struct("<HHIIIIIIII")
PORT_CREATE_BODY = struct.Struct("<II")
PORT_REPLY_BODY = struct.Struct("<II")
PORT_BODY = struct.Struct("<I")
PROCESS_BODY = struct.Struct("<IIIII")
PROCESS_REPLY_BODY = struct.Struct("<I")
POST_REPLY_BODY = struct.Struct("<I")
SOCKET_CLOSE_BODY = struct.Struct("<QQII")
THREAD_BODY = struct.Struct("<I")
REGISTRATION = struct.Struct("<QQQHBBII")
RESULT = struct.Struct("<I")
ENTRY = struct.Struct("<QQII")
PACKET = struct.Struct("<QQII")
PORT_LINGER_BODY = struct.Struct("<II")
PORT_LINGER_REPLY_BODY = struct.Struct("<I")
PORT_TAKE_BODY = struct.Struct("<III")
PORT_TAKE_REPLY_BODY = struct.Struct("<II")
LIMIT_INFO_REPLY_BODY = struct.Struct("<I")
REFUSAL = struct.Struct("<IIIHHQ")  # request, first, last item, limit, scope, value
NO_ITEM = 0xFFFFFFFF  # a refusal of the request as a whole

# LIMIT_INFO's limit numbers (PROTOCOL.md, 7a): the daemon's option names, and their scopes.
LIMIT_NAMES = {
    1: "max-ports", 2: "max-registrations", 3: "max-posted", 4: "max-waits",
    5: "max-connections", 6: "max-output", 7: "max-sockets-per-user",
    8: "max-connections-per-user", 9: "max-ports-per-user", 10: "max-waits-per-user",
    11: "max-posted-per-user", 12: "max-staged-per-user", 13: "max-output-per-user",
    14: "max-linger", 15: "reserve-fds", 16: "reserve-connections",
    17: "max-output-unprivileged", 18: "max-posted-unprivileged", 19: "max-staged-unprivileged",
    20: "max-waits-unprivileged",
}
SCOPES = {1: "connection", 2: "port", 3: "user", 4: "unprivileged", 5: "daemon", 6: "request"}

# type -> (body size, first item size, second item size); None: the type has no such array.
LAYOUT: dict[int, tuple[int, int | None, int | None]] = {
    HELLO: (HELLO_BODY.size, None, None),
    HELLO | REPLY_BIT: (HELLO_REPLY_BODY.size, None, None),
    PORT_CREATE: (PORT_CREATE_BODY.size, 1, None),
    PORT_CREATE | REPLY_BIT: (PORT_REPLY_BODY.size, None, None),
    PORT_CLOSE: (PORT_BODY.size, None, None),
    PORT_CLOSE | REPLY_BIT: (0, None, None),
    PROCESS: (PROCESS_BODY.size, REGISTRATION.size, None),
    PROCESS | REPLY_BIT: (PROCESS_REPLY_BODY.size, RESULT.size, ENTRY.size),
    POST: (PORT_BODY.size, PACKET.size, None),
    POST | REPLY_BIT: (POST_REPLY_BODY.size, None, None),
    SOCKET_CLOSE: (SOCKET_CLOSE_BODY.size, None, None),
    SOCKET_CLOSE | REPLY_BIT: (0, None, None),
    STATUS: (0, None, None),
    STATUS | REPLY_BIT: (0, 1, None),
    PORT_OPEN: (0, 1, None),
    PORT_OPEN | REPLY_BIT: (PORT_REPLY_BODY.size, None, None),
    THREAD_EXIT: (THREAD_BODY.size, None, None),
    THREAD_EXIT | REPLY_BIT: (0, None, None),
    PORT_LINGER: (PORT_LINGER_BODY.size, None, None),
    PORT_LINGER | REPLY_BIT: (PORT_LINGER_REPLY_BODY.size, None, None),
    PORT_TAKE: (PORT_TAKE_BODY.size, None, None),
    PORT_TAKE | REPLY_BIT: (PORT_TAKE_REPLY_BODY.size, REGISTRATION.size, None),
    LIMIT_INFO: (0, None, None),
    LIMIT_INFO | REPLY_BIT: (LIMIT_INFO_REPLY_BODY.size, REFUSAL.size, None),
    ERROR: (0, None, None),
}


class WireError(ValueError):
    """A received message is malformed: its sizes disagree or its type is unknown."""


@dataclass(frozen=True)
class Message:
    """A decoded message: header fields and the raw body and arrays."""

    type: int
    id: int
    status: int
    nfds: int
    body: bytes
    array1: bytes
    array2: bytes
    count: int
    count2: int


def message_size(mtype: int, count: int = 0, count2: int = 0) -> int:
    """Wire size of a message of this type with these array counts."""
    body, i1, i2 = LAYOUT[mtype]
    return HEADER.size + body + count * (i1 or 0) + count2 * (i2 or 0)


def encode(mtype: int, msg_id: int, body: bytes = b"", array1: bytes = b"", count: int = 0,
           nfds: int = 0) -> bytes:
    """Builds a request: header (size computed, status 0), body, first array of count items."""
    size = HEADER.size + len(body) + len(array1)
    return HEADER.pack(size, mtype, nfds, msg_id, 0, count, 0) + body + array1


def decode(data: bytes) -> Message:
    """Checks and splits one received datagram; raises WireError when it is inconsistent."""
    if len(data) < HEADER.size:
        raise WireError(f"message of {len(data)} bytes is shorter than the header")
    size, mtype, nfds, msg_id, status, count, count2 = HEADER.unpack_from(data)
    if size != len(data):
        raise WireError(f"size field {size} but {len(data)} bytes received")
    layout = LAYOUT.get(mtype)
    if layout is None:
        raise WireError(f"unknown message type 0x{mtype:02x}")
    body, i1, i2 = layout
    if (i1 is None and count) or (i2 is None and count2):
        raise WireError(f"message type 0x{mtype:02x} cannot carry arrays")
    end1 = HEADER.size + body + count * (i1 or 0)
    end2 = end1 + count2 * (i2 or 0)
    if end2 != size:
        raise WireError(f"message type 0x{mtype:02x}: computed size {end2}, size field {size}")
    return Message(mtype, msg_id, status, nfds, data[HEADER.size:HEADER.size + body],
                   data[HEADER.size + body:end1], data[end1:end2], count, count2)

# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""socknotify: Windows socket state notifications and completion ports on Linux, from Python.

A pure-Python client of the socknotifyd daemon's wire protocol (no C extension, standard
library only).  The native calls map one to one onto the protocol::

    import socket, socknotify

    a, b = socket.socketpair()
    with socknotify.Connection() as conn, conn.create_port() as port:
        reg = socknotify.Registration.enable(a, key=1, filter=socknotify.Filter.IN)
        port.register([reg])              # [0]: one result per registration
        b.send(b"x")
        port.dequeue(timeout=1.0)          # [Entry(key=1, overlapped=0, events=1, kind=0)]
        conn.close_socket(a)               # drops the daemon's copy, then closes

and ``socknotify.Selector`` is a ``selectors.BaseSelector`` built on a port, so asyncio runs on
it unchanged::

    loop = asyncio.SelectorEventLoop(socknotify.Selector())

Errors are :class:`SocknotifyError` (an ``OSError`` with ``errno`` and ``winerror``).  The
daemon is found at ``$SOCKNOTIFY_SOCKET``, else ``$XDG_RUNTIME_DIR/socknotify.sock`` (not for
root), else ``/run/socknotify/socknotify.sock`` (also when no daemon listens at the user's).

When the daemon ends and a new one starts on the same path within
``$SOCKNOTIFY_RECONNECT_MS`` milliseconds (default 10000; 0: never), a connection resumes on
it: ports, registrations of sockets still held and waiting calls are made again, and port
objects and keys stay valid (delivery is then at least once).  The new daemon must run as the
same user as the one lost, or as root (``EACCES`` otherwise).  See :class:`Connection`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._client import (INFINITE, RECONNECT_MS_DEFAULT, ConnectError, Connection, Entry, Event,
                      Filter, LimitError, Limits, Op, Port, ProcessResult, Registration,
                      SocknotifyError, TakenSocket,
                      TakeResult, Trigger, default_path, default_paths, reconnect_ms_from_env,
                      win32_code)
try:
    from ._version import __version__  # written by configure: the C library's version
except ImportError:  # pragma: no cover - a source tree configured elsewhere (VPATH build)
    __version__ = "unknown"
from .selector import Selector

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "INFINITE", "RECONNECT_MS_DEFAULT", "ConnectError", "Connection", "LimitError", "Entry", "Event", "Filter", "Limits", "Op", "Port",
    "ProcessResult", "Registration", "Selector", "SocknotifyError", "TakenSocket", "TakeResult",
    "Trigger", "default_path",
    "default_paths",
    "__version__", "new_event_loop", "reconnect_ms_from_env", "win32_code",
]


def new_event_loop(path: str | None = None) -> asyncio.SelectorEventLoop:
    """An ``asyncio.SelectorEventLoop`` on a new :class:`Selector` (for ``asyncio.run``'s
    ``loop_factory`` or ``asyncio.set_event_loop``)."""
    import asyncio

    return asyncio.SelectorEventLoop(Selector(path=path))

# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""socknotify.Selector: a ``selectors.BaseSelector`` whose readiness comes from a socknotify
completion port, so that ``asyncio.SelectorEventLoop(socknotify.Selector())`` runs unchanged
asyncio code on socknotify.

Each registered file object is one LEVEL, PERSISTENT registration whose completion key is its
descriptor number.  ``register()`` and ``modify()`` only record what to change; the changes
travel in the PROCESS call of the next ``select()``, which applies them and then dequeues, so a
loop iteration costs one round trip to the daemon however many sockets it registered.
``unregister()`` drops the registration at once (SOCKET_CLOSE), because asyncio closes the
socket right after it and the daemon's copy must not keep the peer from seeing that close.

Only sockets can be registered (``OSError(ENOTSOCK)`` otherwise): asyncio's own wake-up channel
is a socket pair, so everything but subprocess pipes works.

When the connection resumes on a new daemon (see ``Connection``) the selector's port and
registrations come back with it and a ``select()`` under way goes on waiting; nothing here
needs to know.  Only a ``wakeup()`` packet still queued in the daemon that ended is lost.
"""

from __future__ import annotations

import errno
import os
import selectors
import stat
from typing import Any, Iterator, Mapping

from ._client import (Connection, Event, Filter, Op, Port, Registration, SocknotifyError,
                      Trigger)

EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE
_READ_BITS = int(Event.IN | Event.HANGUP | Event.ERR)
_WRITE_BITS = int(Event.OUT | Event.HANGUP | Event.ERR)


def _filter_of(events: int) -> Filter:
    f = Filter.HANGUP
    if events & EVENT_READ:
        f |= Filter.IN
    if events & EVENT_WRITE:
        f |= Filter.OUT
    return f


class _Map(Mapping[Any, selectors.SelectorKey]):
    def __init__(self, keys: dict[int, selectors.SelectorKey]):
        self._keys = keys

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, fileobj: Any) -> selectors.SelectorKey:
        fd = selectors._fileobj_to_fd(fileobj)  # type: ignore[attr-defined]
        return self._keys[fd]

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys)


class Selector(selectors.BaseSelector):
    """A selector on a socknotify completion port.

    ``connection``: a :class:`Connection` to use (default: a new one to the default socket,
    closed with the selector).  ``path``: the daemon's socket for that new connection.
    ``max_events``: most entries one ``select()`` dequeues.
    """

    def __init__(self, connection: Connection | None = None, *, path: str | None = None,
                 max_events: int = 1024):
        self._own = connection is None
        self.connection = connection or Connection(path)
        try:
            self.port: Port = self.connection.create_port(1)
        except BaseException:
            if self._own:
                self.connection.close()
            raise
        self._keys: dict[int, selectors.SelectorKey] = {}
        # fd -> (st_dev, st_ino) of the registration the daemon holds for it.
        self._registered: dict[int, tuple[int, int]] = {}
        self._changes: dict[int, int] = {}  # fd -> events to ENABLE at the next select()
        self._map = _Map(self._keys)
        self._max_events = max_events

    # -- BaseSelector -----------------------------------------------------------------------

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        if not events or events & ~(EVENT_READ | EVENT_WRITE):
            raise ValueError(f"Invalid events: {events!r}")
        fd = selectors._fileobj_to_fd(fileobj)  # type: ignore[attr-defined]
        if fd in self._keys:
            raise KeyError(f"{fileobj!r} (FD {fd}) is already registered")
        st = os.fstat(fd)
        if not stat.S_ISSOCK(st.st_mode):
            raise OSError(errno.ENOTSOCK, "socknotify.Selector only watches sockets", fileobj)
        key = selectors.SelectorKey(fileobj, fd, events, data)
        self._keys[fd] = key
        self._changes[fd] = events
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        try:
            fd = selectors._fileobj_to_fd(fileobj)  # type: ignore[attr-defined]
            key = self._keys.pop(fd)
        except (KeyError, ValueError):
            # A closed file object: find it by identity, as the standard selectors do.
            for fd, key in self._keys.items():
                if key.fileobj is fileobj:
                    del self._keys[fd]
                    break
            else:
                raise KeyError(f"{fileobj!r} is not registered") from None
        self._changes.pop(fd, None)
        ident = self._registered.pop(fd, None)
        if ident is not None and not self.connection.closed:
            self.connection.drop_registration(fd, identity=ident, fd=fd)
        return key

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        if not events or events & ~(EVENT_READ | EVENT_WRITE):
            raise ValueError(f"Invalid events: {events!r}")
        fd = selectors._fileobj_to_fd(fileobj)  # type: ignore[attr-defined]
        try:
            old = self._keys[fd]
        except KeyError:
            raise KeyError(f"{fileobj!r} is not registered") from None
        key = old._replace(events=events, data=data)
        self._keys[fd] = key
        if events != old.events:
            self._changes[fd] = events
        return key

    def _flush(self) -> list[Registration]:
        regs = []
        for fd, events in self._changes.items():
            regs.append(Registration(fd, fd, Op.ENABLE, _filter_of(events),
                                     Trigger.LEVEL | Trigger.PERSISTENT))
        self._changes.clear()
        return regs

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        regs = self._flush()
        if timeout is not None and timeout < 0:
            timeout = 0
        entries, _ = self.port._process_raw(regs, self._max_events, timeout, None)
        failed = None
        for reg in regs:
            fd = reg.sock
            assert isinstance(fd, int)
            if reg.result == 0:
                try:
                    st = os.fstat(fd)
                    self._registered[fd] = (st.st_dev, st.st_ino)
                except OSError:
                    pass
            elif fd in self._keys and failed is None:
                failed = (fd, reg.result)
        if failed is not None:
            # The file object stays in the map (as asyncio expects of a registered one) but the
            # daemon does not watch it: report it rather than let it hang.
            fd, err = failed
            raise SocknotifyError(err or errno.EIO, f"registering descriptor {fd}", entry=True)
        return self._ready(entries)

    def _ready(self, entries: list[tuple[int, int, int, int]]
               ) -> list[tuple[selectors.SelectorKey, int]]:
        ready = []
        keys = self._keys
        for key_id, _ov, events, kind in entries:
            if kind:
                continue  # a posted packet: a wake-up (see wakeup())
            key = keys.get(key_id)
            if key is None:
                continue
            ev = 0
            if events & _READ_BITS:
                ev = EVENT_READ
            if events & _WRITE_BITS:
                ev |= EVENT_WRITE
            ev &= key.events
            if ev:
                ready.append((key, ev))
        return ready

    def wakeup(self) -> None:
        """Makes a ``select()`` waiting in another thread return (posts a packet)."""
        self.port.post(0)

    def close(self) -> None:
        """Closes the port (dropping every registration) and, if owned, the connection."""
        self._keys.clear()
        self._registered.clear()
        self._changes.clear()
        try:
            if not self.connection.closed:
                self.port.close()
        finally:
            if self._own:
                self.connection.close()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._map

    def fileno(self) -> int:
        """The connection's socket (not pollable for readiness; provided for completeness)."""
        return self.connection.fileno()

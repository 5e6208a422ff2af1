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

The daemon watches sockets only.  Anything else epoll accepts (the pipes of asyncio's
subprocesses, a terminal, an eventfd) is watched here, in an epoll set of the selector's own:
``select()`` reads what holds there first, and while it waits in the daemon a helper thread
waits on that set and posts a wake-up packet to the port when something in it becomes ready.
Without this, asyncio's ``create_subprocess_exec`` hung for ever: ``register()`` refused the
pipes inside a callback, asyncio only logged that, and the child's output was never read.
Files epoll refuses (regular files) raise ``PermissionError`` as with the default selector.

A registration the daemon refuses (a limit such as ``--max-registrations`` or
``--max-sockets-per-user``, or any other error of its item) ends that socket alone, never the
loop: ``select()`` does not raise, it shuts the socket down (``SHUT_RDWR``: its peer sees the
end) and reports it ready with the events it was registered for, once, so that asyncio's
transport reads the end of file (or fails to write) and closes; ``refusal()`` gives the error
(a ``LimitError`` naming the limit).  A datagram socket cannot be made to fail that way: it
is reported, and stays silent.  A listening socket is reported and never shut down (it may
be shared with a socket unit or another process, for which it would stop listening): the
server's ``accept()`` finds nothing, and ``refusal()`` says why it is not served.

When the connection resumes on a new daemon (see ``Connection``) the selector's port and
registrations come back with it.  While no daemon answers, ``select()`` keeps its timeout and
reports what the registered sockets' own ``poll()`` says (level-triggered, as the daemon
would), so that asyncio's timers run and its signal handlers (whose wake-up socket is one of
them) are woken; changes registered meanwhile go to the new daemon at the first ``select()``
after the resumption, and ``close()`` does not wait for it.  A ``wakeup()`` packet still queued
in the daemon that ended is lost.
"""

from __future__ import annotations

import errno
import os
import selectors
import select
import socket
import stat
import threading
import time
from typing import Any, Iterator, Mapping

from ._client import (Connection, Event, Filter, Op, Port, Registration, SocknotifyError,
                      Trigger, _Away)

EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE
_READ_BITS = int(Event.IN | Event.HANGUP | Event.ERR)
_WRITE_BITS = int(Event.OUT | Event.HANGUP | Event.ERR)
# While the connection resumes: how long select() waits for it before it watches the sockets
# itself, and how often it looks again whether the resumption is over.
_AWAY_LOOK = 0.05


def _filter_of(events: int) -> Filter:
    f = Filter.HANGUP
    if events & EVENT_READ:
        f |= Filter.IN
    if events & EVENT_WRITE:
        f |= Filter.OUT
    return f


def _epoll_bits(events: int) -> int:
    bits = 0
    if events & EVENT_READ:
        bits |= select.EPOLLIN
    if events & EVENT_WRITE:
        bits |= select.EPOLLOUT
    return bits


class _LocalSet:
    """The selector's own epoll set, for descriptors that are not sockets, and the thread
    that turns its readiness into a wake-up packet on the port while ``select()`` waits in
    the daemon.

    ``arm()`` before a wait lets the thread poll the set once more: when the set is ready it
    posts one packet and waits to be armed again, so it never spins on a level-triggered set
    nobody reads.  A packet posted after the wait ended only makes a later ``select()``
    return early, with what holds then."""

    def __init__(self, port: Port):
        self.epoll = select.epoll()
        self.fds: set[int] = set()
        self._port = port
        self._cond = threading.Condition()
        self._armed = False
        self._closing = False
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name="socknotify-selector-local",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.epoll.fileno(), select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            with self._cond:
                while not self._armed and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                self._armed = False
            ready = dict(poller.poll())
            if self._stop_r in ready:
                return
            while True:
                try:
                    self._port.post(0)
                    break
                except OSError as e:
                    # EIO (the daemon ended while it posted, resumed since) and EDQUOT
                    # (max-posted reached) pass: the waiting select() must still be woken.
                    # Anything else means the port or its connection is gone.
                    if e.errno not in (errno.EIO, errno.EDQUOT) or self._closing:
                        return
                time.sleep(0.01)

    def arm(self) -> None:
        with self._cond:
            self._armed = True
            self._cond.notify()

    def ready(self) -> list[tuple[int, int]]:
        """(fd, selectors events) of what holds now, without waiting."""
        out = []
        for fd, bits in self.epoll.poll(0):
            ev = 0
            if bits & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR):
                ev |= EVENT_READ
            if bits & (select.EPOLLOUT | select.EPOLLHUP | select.EPOLLERR):
                ev |= EVENT_WRITE
            out.append((fd, ev))
        return out

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        os.write(self._stop_w, b"x")
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.epoll.close()
        os.close(self._stop_r)
        os.close(self._stop_w)


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
        # fd -> the error its registration was refused with; _report: those to report ready at
        # the next select() (once after the refusal, and again after each modify()).
        self._refused: dict[int, SocknotifyError] = {}
        self._report: set[int] = set()
        self._map = _Map(self._keys)
        self._max_events = max_events
        self._local: _LocalSet | None = None  # made for the first descriptor not a socket

    # -- BaseSelector -----------------------------------------------------------------------

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        if not events or events & ~(EVENT_READ | EVENT_WRITE):
            raise ValueError(f"Invalid events: {events!r}")
        fd = selectors._fileobj_to_fd(fileobj)  # type: ignore[attr-defined]
        if fd in self._keys:
            raise KeyError(f"{fileobj!r} (FD {fd}) is already registered")
        st = os.fstat(fd)
        key = selectors.SelectorKey(fileobj, fd, events, data)
        if not stat.S_ISSOCK(st.st_mode):
            if self._local is None:
                self._local = _LocalSet(self.port)
            self._local.epoll.register(fd, _epoll_bits(events))  # PermissionError: a file
            self._local.fds.add(fd)
            self._keys[fd] = key
            return key
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
        self._refused.pop(fd, None)
        self._report.discard(fd)
        if self._local is not None and fd in self._local.fds:
            self._local.fds.discard(fd)
            try:
                self._local.epoll.unregister(fd)
            except (OSError, ValueError):
                pass  # closed before it was unregistered: epoll forgot it by itself
            return key
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
        if self._local is not None and fd in self._local.fds:
            if events != old.events:
                self._local.epoll.modify(fd, _epoll_bits(events))
            return key
        if fd in self._refused:
            self._report.add(fd)  # ended: what it is now asked to wait for fails at once
        elif events != old.events:
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
        if timeout is not None and timeout < 0:
            timeout = 0
        if self.connection._away:
            return self._select_away(timeout)
        changes = dict(self._changes)
        regs = self._flush()
        if self._report:
            timeout = 0  # refused sockets to report: collect the daemon's without waiting
        local = self._local if self._local is not None and self._local.fds else None
        held: list[tuple[int, int]] = []
        if local is not None:
            held = local.ready()
            if held:
                timeout = 0  # something holds already: collect the daemon's without waiting
            elif timeout != 0:
                local.arm()
        try:
            # A resumption under way is waited for briefly at most: then see _select_away.
            entries, _ = self.port._process_raw(
                regs, self._max_events, timeout, None,
                away=time.monotonic() + min(_AWAY_LOOK, _AWAY_LOOK if timeout is None
                                            else timeout))
        except _Away:
            # Nothing of this call reached a daemon that stays: its changes go to the new one.
            for cfd, events in changes.items():
                if cfd in self._keys:
                    self._changes.setdefault(cfd, events)
            return self._select_away(timeout)
        except BaseException:
            # The call failed as a whole (a limit on waits, the connection lost): nothing was
            # applied, so the changes wait for the next select() (newer ones win).
            for cfd, events in changes.items():
                if cfd in self._keys:
                    self._changes.setdefault(cfd, events)
            raise
        if local is not None and not held:
            held = local.ready()
        for reg in regs:
            fd = reg.sock
            assert isinstance(fd, int)
            if reg.result == 0:
                try:
                    st = os.fstat(fd)
                    self._registered[fd] = (st.st_dev, st.st_ino)
                except OSError:
                    pass
            elif fd in self._keys:
                self._refuse(fd, reg)
        ready = self._ready(entries)
        if self._report:
            reported = {key.fd for key, _ev in ready}
            for fd in self._report:
                key = self._keys.get(fd)
                if key is not None and fd not in reported:
                    ready.append((key, key.events))
            self._report.clear()
        for fd, ev in held:
            key = self._keys.get(fd)
            if key is not None and ev & key.events:
                ready.append((key, ev & key.events))
        return ready

    def _refuse(self, fd: int, reg: Registration) -> None:
        """The daemon refused fd's registration: the file object stays in the map (as asyncio
        expects of a registered one) but nobody watches it, so it is ended rather than left to
        hang: shut down, reported ready by this select(), its error kept for refusal()."""
        err = reg.error or SocknotifyError(errno.EIO, "registration", entry=True)
        err.strerror = f"{err.strerror} (registering descriptor {fd})"
        err.args = (err.errno, err.strerror)
        self._refused[fd] = err
        self._report.add(fd)
        try:
            dup = os.dup(fd)
        except OSError:
            return  # closed already: reported all the same
        try:
            s = socket.socket(fileno=dup)  # owns dup from here
        except OSError:
            os.close(dup)
            return  # not a socket any more: reported all the same
        with s:
            try:
                # A listener is often one open socket with other holders (a socket unit, a
                # port's parked copy, another loop): shut down, it would stop listening for
                # all of them.  It is reported and left as it is.
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    return
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # not connected (a datagram socket): reported all the same

    def refusal(self, fileobj: Any) -> SocknotifyError | None:
        """The error with which the daemon refused ``fileobj``'s registration (a
        :class:`LimitError` naming the limit when a limit refused it), or None.  Such a socket
        was shut down and reported ready once; it stays in the map until unregistered."""
        fd = selectors._fileobj_to_fd(fileobj)  # type: ignore[attr-defined]
        return self._refused.get(fd)

    def _select_away(self, timeout: float | None
                     ) -> list[tuple[selectors.SelectorKey, int]]:
        """select() while the connection resumes and no daemon answers: what poll() says of
        the registered sockets (and the local set), a moment at a time, until timeout passes,
        something is ready, or the resumption is over (then select() for the rest)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        local = self._local if self._local is not None and self._local.fds else None
        while True:
            poller = select.poll()
            for kfd, k in self._keys.items():
                if local is None or kfd not in local.fds:
                    poller.register(kfd, (select.POLLIN if k.events & EVENT_READ else 0) |
                                    (select.POLLOUT if k.events & EVENT_WRITE else 0))
            if local is not None:
                poller.register(local.epoll.fileno(), select.POLLIN)
            left = _AWAY_LOOK if deadline is None else min(_AWAY_LOOK,
                                                           deadline - time.monotonic())
            ready: list[tuple[selectors.SelectorKey, int]] = []
            for pfd, bits in poller.poll(max(0, int(left * 1000 + 0.999))):
                pk = self._keys.get(pfd)
                if pk is None or bits & select.POLLNVAL:
                    continue  # the local set's epoll: read below
                ev = 0
                if bits & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    ev |= EVENT_READ
                if bits & (select.POLLOUT | select.POLLHUP | select.POLLERR):
                    ev |= EVENT_WRITE
                if ev & pk.events:
                    ready.append((pk, ev & pk.events))
            if local is not None:
                for lfd, ev in local.ready():
                    lk = self._keys.get(lfd)
                    if lk is not None and ev & lk.events:
                        ready.append((lk, ev & lk.events))
            if ready:
                return ready
            if self.connection._resumer is None:
                # Resumed (or lost for good, which select() raises): ask the daemon.
                return self.select(None if deadline is None
                                   else max(0.0, deadline - time.monotonic()))
            if deadline is not None and time.monotonic() >= deadline:
                return []

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
        self._refused.clear()
        self._report.clear()
        if self._local is not None:
            self._local.close()
            self._local = None
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

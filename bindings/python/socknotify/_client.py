# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Connection, Port and the values they exchange with socknotifyd.

A :class:`Connection` is one ``AF_UNIX``/``SOCK_SEQPACKET`` socket to the daemon.  Every request
carries an id chosen here; replies are matched by id, so several threads may use one connection
at once: whichever waiting thread finds nobody reading becomes the reader, stores each reply it
receives for its owner and wakes the others.  Nothing here prints or logs.

Descriptors are passed with ``socket.send_fds`` (``SCM_RIGHTS``).  An ENABLE always passes its
socket (the daemon keeps the copy when it creates a registration and closes it otherwise), so
the daemon never answers ESTALE to this client; DISABLE and REMOVE name the socket by its
identity (``st_dev``, ``st_ino``) alone.

Resuming (see :class:`Connection`): a connection has a generation, one more each time it
resumes on a new daemon.  A request is encoded and sent under the send lock after checking
that its generation is still the current one, and the thread that resumes holds that lock
throughout, so no request packed with a lost daemon's port ids reaches the new one.  Each Port
keeps a table of the registrations this connection made on it; it is changed under the table
lock only when the reply came from the current generation and no resumption has begun, so the
table a resumption copies holds every change this process saw the lost daemon apply (a call
that loses that race is sent again on the new daemon).
"""

from __future__ import annotations

import enum
import errno as _errno
import json
import os
import select
import socket
import stat
import struct
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Protocol, Sequence, Union

from . import _wire as w

FileLike = Union[int, "socket.socket", "HasFileno"]


class HasFileno(Protocol):  # pragma: no cover - typing helper only
    """Anything with a ``fileno()`` method."""

    def fileno(self) -> int: ...


INFINITE = None
"""Pass as ``timeout`` to wait without limit."""


class Filter(enum.IntFlag):
    """Registration filter bits (SOCK_NOTIFY_REGISTER_EVENT_*)."""

    NONE = 0x00
    IN = 0x01
    OUT = 0x02
    HANGUP = 0x04
    ALL = 0x07


class Event(enum.IntFlag):
    """Event bits of a socket notification (SOCK_NOTIFY_EVENT_*)."""

    NONE = 0x00
    IN = 0x01
    OUT = 0x02
    HANGUP = 0x04
    ERR = 0x40
    REMOVE = 0x80


class Op(enum.IntEnum):
    """Registration operation (SOCK_NOTIFY_OP_*)."""

    NONE = 0
    ENABLE = 1
    DISABLE = 2
    REMOVE = 4


class Trigger(enum.IntFlag):
    """Trigger flags (SOCK_NOTIFY_TRIGGER_*).  ENABLE needs exactly one of LEVEL and EDGE."""

    NONE = 0x00
    ONESHOT = 0x01
    PERSISTENT = 0x02
    LEVEL = 0x04
    EDGE = 0x08


# errno -> (Win32 code after a failed call, Win32 code of a failed registration entry); the
# same table the C library's Win32 layer uses (client/errmap.c).
_WIN32 = {
    0: (0, 0),
    _errno.EBADF: (6, 10038), _errno.ENOTSOCK: (6, 10038), _errno.EBADFD: (6, 10038),
    _errno.EINVAL: (87, 10022), _errno.E2BIG: (87, 10022), _errno.EACCES: (5, 10013),
    _errno.ENOMEM: (8, 8), _errno.EDQUOT: (1816, 1816), _errno.EEXIST: (183, 183),
    _errno.ENOENT: (1168, 1168), _errno.ETIMEDOUT: (258, 31), _errno.ECANCELED: (735, 31),
    _errno.ESHUTDOWN: (735, 31), _errno.ECONNRESET: (6, 31), _errno.ECONNREFUSED: (10091, 31),
    _errno.EPROTO: (10091, 31), _errno.EOPNOTSUPP: (50, 10045), _errno.EMSGSIZE: (87, 31),
}


def win32_code(err: int, entry: bool = False) -> int:
    """The Win32 error code the Win32 API reports for errno value ``err``.

    ``entry`` selects the code of a failed registration entry (``SOCK_NOTIFY_REGISTRATION``'s
    ``result``) instead of the ``GetLastError()`` value after a failed call.  Unknown values map
    to ERROR_GEN_FAILURE (31).
    """
    codes = _WIN32.get(abs(err))
    return codes[1 if entry else 0] if codes else 31


class SocknotifyError(OSError):
    """An error reported by socknotifyd (or the loss of the connection to it).

    ``errno`` is the Linux errno value, ``strerror`` its text, and ``winerror`` the code the
    Win32 API of socknotify would report for it (``GetLastError()`` after the failed call).
    """

    _gen: int  # set by Connection._call_gen: the generation of the connection that answered

    def __init__(self, err: int, what: str = "", entry: bool = False):
        msg = os.strerror(err) + (f" ({what})" if what else "")
        super().__init__(err, msg)
        self.winerror = win32_code(err, entry)


def _error(err: int, what: str = "") -> SocknotifyError:
    return SocknotifyError(err, what)


_SCOPE_TEXT = {
    "connection": ", for this connection", "port": ", on this port",
    "user": ", for this user (all its connections)",
    "unprivileged": ", for all users other than root and the daemon's together",
    "daemon": ", for the whole daemon", "request": ", the most a request may ask for",
}


class LimitError(SocknotifyError):
    """``EDQUOT``: a limit of the daemon refused the call or a registration.

    ``limit`` is its name, the daemon's option and configuration key (``"max-waits-per-user"``;
    ``"limit N"`` for a number this binding does not know), ``value`` its value in force then,
    ``scope`` what it counts (``"connection"``, ``"port"``, ``"user"``, ``"unprivileged"``,
    ``"daemon"``, ``"request"``).  All three are None when the daemon could not tell (one
    older than LIMIT_INFO, or a refusal it no longer keeps).
    """

    def __init__(self, what: str = "", limit: str | None = None, value: int | None = None,
                 scope: str | None = None, entry: bool = False):
        super().__init__(_errno.EDQUOT, what, entry)
        self.limit, self.value, self.scope = limit, value, scope
        if limit is not None:
            if limit.startswith("reserve-"):
                detail = (f"{limit} ({value}) reached: what it leaves to users other than "
                          "root and the daemon's is in use")
            else:
                detail = f"{limit} ({value}) reached{_SCOPE_TEXT.get(scope or '', '')}"
            self.strerror = f"{detail} ({what})" if what else detail
            self.args = (_errno.EDQUOT, self.strerror)

    @classmethod
    def _from_record(cls, rec: tuple[int, ...] | None, what: str,
                     entry: bool = False) -> "LimitError":
        if rec is None:
            return cls(what, entry=entry)
        _req, _first, _last, num, scope, value = rec
        return cls(what, w.LIMIT_NAMES.get(num, f"limit {num}"), value,
                   w.SCOPES.get(scope), entry)


class ConnectError(SocknotifyError):
    """The connection to socknotifyd could not be made.  Raised as a subclass of the
    ``OSError`` that matches its errno too (``FileNotFoundError``, ``PermissionError``,
    ``ConnectionRefusedError``, ...), so that ``except FileNotFoundError`` still catches it.
    The message names every socket path tried with its error and what to do; ``tried`` holds
    them as ``(path, errno)`` pairs."""

    tried: list[tuple[str, int]]


_CONNECT_CLASSES: dict[type, type[ConnectError]] = {}


def _connect_error(tried: list[tuple[str, int]]) -> ConnectError:
    """The ConnectError for these attempts (the last one's errno), as the C library's
    sn_conn_open_error() words it."""
    err = tried[-1][1]
    base = type(OSError(err, ""))
    cls: type[ConnectError] = ConnectError
    if base is not OSError:
        found = _CONNECT_CLASSES.get(base)
        if found is None:
            found = type(base.__name__ + "ConnectError", (ConnectError, base), {})
            _CONNECT_CLASSES[base] = found
        cls = found
    text = "cannot connect to socknotifyd: tried " + ", ".join(
        f"{path} ({os.strerror(e)})" for path, e in tried)
    if any(e in (_errno.EACCES, _errno.EPERM) for _p, e in tried):
        text += ". The system socket admits root and the members of group socknotify"
    text += (". Start socknotifyd (systemctl start socknotifyd.socket, or systemctl --user "
             "start socknotifyd.socket), or set SOCKNOTIFY_SOCKET to the socket path of a "
             "running daemon")
    e = cls(err)
    OSError.__init__(e, err, text)
    e.winerror = win32_code(err)
    e.tried = list(tried)
    return e


@dataclass(frozen=True)
class Limits:
    """The limits the daemon announced in HELLO_REPLY for this connection."""

    max_message: int
    max_fds: int
    max_ports: int
    max_registrations: int
    max_posted: int
    max_waits: int
    max_sockets: int
    daemon_pid: int

    @property
    def max_items(self) -> int:
        """Most registration items that fit in one PROCESS message."""
        return (self.max_message - w.HEADER.size - w.PROCESS_BODY.size) // w.REGISTRATION.size


@dataclass
class Registration:
    """One registration operation, the native SOCK_NOTIFY_REGISTRATION.

    ``sock`` is a socket object or a descriptor number.  After :meth:`Port.process`, ``result``
    is 0 or the positive errno value that failed this entry alone (``ENOTSOCK``, ``EINVAL``,
    ``EEXIST``, ``ENOENT``, ``EDQUOT``, ...); :attr:`error` gives it as an exception.
    """

    sock: FileLike
    key: int = 0
    op: Op | int = Op.ENABLE
    filter: Filter = Filter.IN
    trigger: Trigger = Trigger.LEVEL
    result: int | None = field(default=None, compare=False)
    # The LimitError that names the limit of a result EDQUOT (asked of the daemon), or None.
    _refusal: "LimitError | None" = field(default=None, init=False, compare=False, repr=False)

    @classmethod
    def enable(cls, sock: FileLike, key: int, filter: Filter = Filter.IN,
               trigger: Trigger = Trigger.LEVEL) -> "Registration":
        """An ENABLE item (creates the registration, or updates it keeping its first key)."""
        return cls(sock, key, Op.ENABLE, Filter(filter), Trigger(trigger))

    @classmethod
    def disable(cls, sock: FileLike) -> "Registration":
        """A DISABLE item: no new notifications until enabled again."""
        return cls(sock, 0, Op.DISABLE, Filter.NONE, Trigger.NONE)

    @classmethod
    def remove(cls, sock: FileLike) -> "Registration":
        """A REMOVE item: one last notification with Event.REMOVE, then the registration ends."""
        return cls(sock, 0, Op.REMOVE, Filter.NONE, Trigger.NONE)

    @property
    def error(self) -> SocknotifyError | None:
        """The entry's failure as an exception (``winerror`` is the entry code), or None."""
        if not self.result:
            return None
        if self.result == _errno.EDQUOT and self._refusal is not None:
            return self._refusal  # a LimitError naming the limit
        return SocknotifyError(self.result, "registration", entry=True)


@dataclass(frozen=True)
class Entry:
    """One dequeued entry, the native OVERLAPPED_ENTRY.

    For a socket notification ``events`` holds :class:`Event` bits and ``overlapped`` is 0;
    for a posted packet ``events`` is the posted byte count and ``overlapped`` the posted value.
    """

    key: int
    overlapped: int
    events: int
    kind: int

    @property
    def posted(self) -> bool:
        """True for a packet queued with :meth:`Port.post`."""
        return self.kind == w.KIND_POSTED

    @property
    def bytes(self) -> int:
        """The posted byte count (same value as ``events``)."""
        return self.events


@dataclass
class TakenSocket:
    """A socket taken over from a port (:meth:`Port.take_sockets`)."""

    sock: socket.socket | None  #: the socket, now ours; None: its descriptor did not arrive
    key: int                    #: its completion key, unchanged
    filter: Filter
    trigger: Trigger
    enabled: bool
    previous_fd: int | None     #: its descriptor number in the process that registered it
    armed: bool = True          #: False: disabled, or a ONESHOT whose entry was dequeued


@dataclass(frozen=True)
class TakeResult:
    """What :meth:`Port.take_sockets` took, and what is left on the port."""

    sockets: list[TakenSocket]
    remaining: int  #: registrations without an owner still on the port
    holders: int    #: other connections holding the port


@dataclass(frozen=True)
class ProcessResult:
    """What :meth:`Port.process` returns: per-registration results and the dequeued entries.

    ``timed_out`` is True when entries were asked for and none arrived in time.
    """

    results: list[int]
    entries: list[Entry]
    timed_out: bool = False


def _fileno(sock: FileLike) -> int:
    if isinstance(sock, int):
        return sock
    return sock.fileno()


def _take_reply_problem(m: w.Message, items: list[Any], asked: int, max_fds: int,
                        fds: Sequence[int], cut: bool) -> str:
    """What is wrong with a PORT_TAKE_REPLY of status 0 and the descriptors that came with it
    (PROTOCOL.md, "Descriptors in replies"), or "" when nothing is."""
    if m.count > asked or m.count > max_fds:
        return f"{m.count} items for {asked} asked"
    if m.nfds != m.count:
        return f"{m.count} items but {m.nfds} descriptors announced"
    if len(fds) > m.count or (len(fds) < m.count and not cut):
        return f"{len(fds)} descriptors for {m.count} items"
    for i, item in enumerate(items):
        if item[6] != i:
            return f"item {i} names descriptor {item[6]}"
    for fd in fds:
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            mode = 0
        if not stat.S_ISSOCK(mode):
            return "a descriptor that is not a socket"
    return ""


def _timeout_ms(timeout: float | None) -> int:
    if timeout is None:
        return w.INFINITE
    if timeout <= 0:
        return 0
    ms = int(timeout * 1000)
    if ms < timeout * 1000:
        ms += 1  # never return before the requested time
    return min(ms, w.INFINITE - 1)


def default_paths() -> list[str]:
    """The socket paths a client tries when given none, in order (as the C library does):
    ``$SOCKNOTIFY_SOCKET`` alone when set; else ``$XDG_RUNTIME_DIR/socknotify.sock`` for a
    user other than root, then the system socket ``/run/socknotify/socknotify.sock``."""
    env = os.environ.get("SOCKNOTIFY_SOCKET")
    if env:
        return [env]
    paths = []
    rt = os.environ.get("XDG_RUNTIME_DIR")
    if os.geteuid() != 0 and rt and rt.startswith("/"):
        paths.append(os.path.join(rt, "socknotify.sock"))
    paths.append("/run/socknotify/socknotify.sock")
    return paths


def default_path() -> str:
    """The first of :func:`default_paths`."""
    return default_paths()[0]


class _Lost(Exception):
    """Internal: the connection a request was sent on ended before its reply came."""


class _Away(Exception):
    """Internal: a wait with a deadline met a resumption still under way when it passed (the
    resumption goes on in its own thread; the wait returns as timed out)."""


class _Reg:
    """What the binding remembers of one registration it made, to make it again on a new
    daemon (see Connection, "Resuming").  Slots and plain ints: one per registration."""

    __slots__ = ("fd", "key", "filter", "trigger", "enabled", "armed")

    def __init__(self, fd: int, key: int, filt: int, trigger: int, enabled: bool = True,
                 armed: bool = True):
        self.fd = fd            # the descriptor it was created through (the daemon's client_fd)
        self.key = key          # its first key: a later ENABLE keeps it (rule 4)
        self.filter = filt
        self.trigger = trigger
        self.enabled = enabled  # False after DISABLE
        self.armed = armed      # False: a ONESHOT whose entry this process dequeued


_OP_ENABLE, _OP_DISABLE, _OP_REMOVE = int(Op.ENABLE), int(Op.DISABLE), int(Op.REMOVE)

# A request whose daemon died while handling it is answered EIO (PROTOCOL.md): it may or may
# not have taken effect.  These are sent again, at most _EIO_RETRIES times (a request that
# crashes every daemon still ends), because a second application leaves the same state and
# answers as the first; the value is the status that, answering a second attempt, says the
# first took effect.  Every other request raises EIO.  The C library keeps the same table
# with the reasons (client/retry.c): PORT_CREATE, PORT_OPEN (a second port or handle), POST
# (packets queued twice), PORT_TAKE (taken sockets lost) and CONTROL (a re-exec or a reload)
# are not sent again; PROCESS is, when every item is repeatable (_REPEATABLE_OPS: ENABLE sets
# the same registration again, DISABLE leaves it disabled; a REMOVE answers ENOENT once its
# entry was dequeued).
_AGAIN_AFTER_EIO = {
    w.PORT_CLOSE: _errno.EBADF,
    w.SOCKET_CLOSE: _errno.ENOENT,
    w.STATUS: 0,
    w.PORT_LINGER: 0,
    w.PROCESS: 0,
}
_EIO_RETRIES = 2
_REPEATABLE_OPS = {int(Op.NONE), _OP_ENABLE, _OP_DISABLE}
_ONESHOT = int(Trigger.ONESHOT)
_EV_REMOVE = int(Event.REMOVE)


RECONNECT_MS_DEFAULT = 10000
"""How long a connection waits for a new daemon when ``SOCKNOTIFY_RECONNECT_MS`` is unset."""


def reconnect_ms_from_env() -> int:
    """``SOCKNOTIFY_RECONNECT_MS`` as a number of milliseconds (0: do not resume).

    Unset, empty or not a decimal number of at most 10 digits: :data:`RECONNECT_MS_DEFAULT`."""
    raw = os.environ.get("SOCKNOTIFY_RECONNECT_MS", "")
    if raw.isascii() and raw.isdigit() and len(raw) <= 10:
        return int(raw)
    return RECONNECT_MS_DEFAULT


def self_scheduled_from_env() -> bool:
    """``SOCKNOTIFY_SELF_SCHEDULED`` set, not empty and not ``0``, as libsocknotify reads it."""
    raw = os.environ.get("SOCKNOTIFY_SELF_SCHEDULED", "")
    return raw not in ("", "0")


def _peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket (SO_PEERCRED)."""
    cred = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", cred)[1]
    return uid & 0xFFFFFFFF


_POLLRDHUP = getattr(select, "POLLRDHUP", 0x2000)  # Linux's value where not exported
# TCP states in which no FIN came from the peer and the connection is not closed: ESTABLISHED,
# SYN_SENT, SYN_RECV, FIN_WAIT1, FIN_WAIT2 (the kernel's include/net/tcp_states.h).
_TCP_PEER_OPEN = frozenset((1, 2, 3, 4, 5))
_TCP_INFO = getattr(socket, "TCP_INFO", 11)


def _hangup_is_peers(sock: socket.socket) -> bool:
    """Whether a stream socket that polls as hung up was ended by its peer or torn down (the
    daemon's rule, common/hangup.h): a local shutdown alone makes TCP poll the same way, and
    then the connection's state tells.  A socket whose state cannot be read (not TCP) counts
    as ended by its peer."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 8)
    except OSError:
        return True
    return not info or info[0] not in _TCP_PEER_OPEN


def _readiness(fd: int, filt: int) -> int:
    """The event bits a socket reports now for this filter, read with poll() (an EDGE
    registration made again on a new daemon reports what holds: see _resume)."""
    p = select.poll()
    p.register(fd, select.POLLIN | select.POLLOUT | _POLLRDHUP)
    got = p.poll(0)
    ev = got[0][1] if got else 0
    try:
        stream = socket.socket(fileno=os.dup(fd))
    except OSError:
        return 0
    with stream:
        kind = stream.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
        is_stream = kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET)
        if is_stream and not stream.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            try:
                stream.getpeername()
            except OSError:
                # Never connected (rule 14: reports nothing) unless an error is pending.
                if not ev & select.POLLERR and not ev & select.POLLIN:
                    return 0
        hup = is_stream and ev & (select.POLLHUP | _POLLRDHUP) and _hangup_is_peers(stream)
    bits = 0
    if filt & Filter.IN and (ev & select.POLLIN or hup):
        bits |= Event.IN
    if filt & Filter.OUT and ev & select.POLLOUT and not (ev & select.POLLHUP and
                                                          ev & select.POLLERR):
        bits |= Event.OUT
    if filt & Filter.HANGUP and hup:
        bits |= Event.HANGUP
    if ev & select.POLLERR:
        bits |= Event.ERR
    return bits


class Connection:
    """A connection to socknotifyd.  Use it as a context manager, or call :meth:`close`.

    ``path`` defaults to the first of :func:`default_paths` where a daemon listens.  The
    handshake happens in the constructor; the daemon's limits are in :attr:`limits`.  Raises
    :class:`SocknotifyError` (``EPROTO``: not a socknotifyd or no common version;
    ``EUSERS``/``EDQUOT``: the daemon refused the connection) or the ``OSError`` of
    ``connect()`` (``FileNotFoundError``, ``ConnectionRefusedError``).

    **Resuming.**  When the connection ends (the daemon was stopped or killed and nothing kept
    the connection for it), the connection waits up to ``reconnect_ms`` milliseconds (default
    ``$SOCKNOTIFY_RECONNECT_MS``, else 10000; 0: fail at once) for a new daemon on the same
    path, and makes again what this process holds: its ports (same objects, new ids), the
    registrations of sockets it still holds, and the calls that were waiting.  The new daemon
    must run as the user of the daemon that was lost, or as root: otherwise nothing is sent to
    it and every call raises ``EACCES``.  When no daemon answers in time every call raises
    ``ECONNRESET``, as without resuming.  :attr:`resumes` counts the resumptions.

    **Self-scheduled.**  ``self_scheduled=True`` (default ``$SOCKNOTIFY_SELF_SCHEDULED``)
    declares in ``HELLO`` that the program schedules its own threads (``SELF``): the daemon
    then never reads a waiter's thread as blocked elsewhere, so a waiter given entries keeps
    its place in the port's concurrency until it calls again or :meth:`thread_exit` names it,
    whatever its thread does meanwhile, and ``thread`` may be any value the program keeps for
    one waiter.  A daemon that does not know ``SELF`` refuses the handshake: ``EOPNOTSUPP``.

    A connection belongs to the process that opened it; after ``fork()`` open a new one.
    """

    def __init__(self, path: str | None = None, *, reconnect_ms: int | None = None,
                 self_scheduled: bool | None = None):
        candidates = [path] if path else default_paths()
        self.path = candidates[0]
        #: whether HELLO declared SELF (the daemon never reads this connection's threads)
        self.self_scheduled = (self_scheduled_from_env() if self_scheduled is None
                               else bool(self_scheduled))
        self.reconnect_ms = (reconnect_ms_from_env() if reconnect_ms is None
                             else max(0, int(reconnect_ms)))
        self.resumes = 0  #: how many times the connection resumed on a new daemon
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lock = threading.Lock()  # guards everything below
        self._cond = threading.Condition(self._lock)
        # Keeps the parts of one call together; held for a whole resumption, so that nothing
        # encoded with a lost daemon's port ids reaches the new one.
        self._send_lock = threading.Lock()
        # Guards the ports' registration tables and self._ports against a resumption's copy.
        self._table_lock = threading.Lock()
        self._replies: dict[int, w.Message] = {}
        self._reply_fds: dict[int, tuple[list[int], bool]] = {}  # PORT_TAKE's descriptors
        self.version = 0  # the protocol version of the connection
        self._pending: set[int] = set()
        self._reading = False
        self._broken: int = 0        # the current socket ended (errno)
        self._failed: tuple[int, str] | None = None  # lost for good: every call raises this
        self._closed = False
        self._gen = 0                # which socket: one more at each resumption
        self._resumer: int | None = None  # the thread making the connection again
        self._next_id = 0
        self._pid = os.getpid()
        self._ports: dict[int, Port] = {}
        try:
            tried: list[tuple[str, int]] = []
            for i, cand in enumerate(candidates):
                try:
                    self._sock.connect(cand)
                    self.path = cand
                    break
                except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as e:
                    tried.append((cand, e.errno))
                    if i == len(candidates) - 1:
                        # No daemon at any of them: every path with its error.
                        raise _connect_error(tried) from None
                except OSError as e:
                    tried.append((cand, e.errno or _errno.EIO))
                    raise _connect_error(tried) from None
            self._daemon_uid = _peer_uid(self._sock)
            self.limits = self._handshake()
        except BaseException:
            self._sock.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------

    def _handshake(self, deadline: float | None = None) -> Limits:
        """HELLO and its reply.  deadline (time.monotonic()): when to stop waiting for the
        reply (ETIMEDOUT); a resumption passes its own, so that a listener that accepts and
        never answers (a socket unit whose service is down) cannot hold it past
        reconnect_ms.  The reply is waited for in poll(), then read without blocking."""
        flags = w.HELLO_SELF if self.self_scheduled else 0
        body = w.HELLO_BODY.pack(w.MAGIC, w.VERSION_MIN, w.VERSION, flags)
        # A daemon that refuses the connection (a limit) sends ERROR and closes, maybe before
        # our HELLO arrived, and the kernel may report the reset before the reason queued
        # behind it: read that reason whenever it is there.
        sent = True
        try:
            self._sock.sendall(w.encode(w.HELLO, 0, body))
        except (ConnectionResetError, BrokenPipeError):
            sent = False
        if sent:
            self._wait_readable(deadline)
        try:
            data = self._recv(4096, socket.MSG_DONTWAIT)
        except ConnectionResetError:
            try:
                data = self._recv(4096, socket.MSG_DONTWAIT)
            except (ConnectionResetError, BlockingIOError):
                data = b""
        except BlockingIOError:
            data = b""
        if not data:
            raise _error(_errno.ECONNRESET, "the daemon closed the connection")
        try:
            m = w.decode(data)
        except w.WireError as e:
            raise _error(_errno.EPROTO, str(e)) from None
        if m.type == w.ERROR:
            # Refusals (connection limits) carry their reason; anything else is a protocol
            # mismatch.  EINVAL to SELF: a daemon that does not know it.
            if m.status == _errno.EINVAL and flags:
                raise _error(_errno.EOPNOTSUPP, "the daemon does not know self-scheduled "
                             "connections (HELLO's SELF)")
            raise _error(m.status or _errno.EPROTO, "handshake refused")
        if m.type != (w.HELLO | w.REPLY_BIT) or m.status:
            raise _error(_errno.EPROTO, "unexpected handshake reply")
        (version, _r, max_message, max_fds, max_ports, max_regs, max_posted, max_waits,
         max_sockets, pid) = w.HELLO_REPLY_BODY.unpack(m.body)
        if not w.VERSION_MIN <= version <= w.VERSION or max_message < 4096 or max_fds == 0:
            raise _error(_errno.EPROTO, "unsupported limits in HELLO_REPLY")
        self.version = version
        return Limits(max_message, min(max_fds, w.MAX_FDS), max_ports, max_regs, max_posted,
                      max_waits, max_sockets, pid)

    def _wait_readable(self, deadline: float | None) -> None:
        """Waits until the socket is readable (or hung up); ETIMEDOUT once deadline passed,
        EBADF once the connection is closed (looked at every 100 ms)."""
        poller = select.poll()
        poller.register(self._sock.fileno(), select.POLLIN)
        while True:
            if self._closed:
                raise _error(_errno.EBADF, "connection closed")
            left = 0.1 if deadline is None else min(deadline - time.monotonic(), 0.1)
            if left <= 0:
                raise _error(_errno.ETIMEDOUT, "the daemon did not answer HELLO in time")
            if poller.poll(max(1, int(left * 1000))):
                return

    def _recv(self, size: int, flags: int = 0) -> bytes:
        """One message of the handshake, which carries no descriptor (EPROTO if it does)."""
        data, fds, cut = self._recv_fds(size, flags)
        for fd in fds:  # only PORT_TAKE_REPLY brings descriptors (see _store)
            os.close(fd)
        if fds or cut:
            raise _error(_errno.EPROTO, "descriptors with the handshake reply")
        return data

    def _recv_fds(self, size: int, flags: int = 0) -> tuple[bytes, list[int], bool]:
        """One message and the descriptors that came with it (close-on-exec), and whether the
        kernel dropped some (we ran out of descriptors: MSG_CTRUNC)."""
        data, anc, mflags, _ = self._sock.recvmsg(size, socket.CMSG_SPACE(w.MAX_FDS * 4),
                                                  flags | socket.MSG_CMSG_CLOEXEC)
        fds: list[int] = []
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += [int.from_bytes(payload[4 * i:4 * i + 4], "little")
                        for i in range(len(payload) // 4)]
        if mflags & socket.MSG_TRUNC:
            for fd in fds:
                os.close(fd)
            raise w.WireError("message larger than max_message")
        return data, fds, bool(mflags & socket.MSG_CTRUNC)

    def _usable(self) -> None:
        if self._closed:
            raise _error(_errno.EBADF, "connection closed")
        if os.getpid() != self._pid:
            raise _error(_errno.EBADFD, "connection used after fork()")
        if self._failed:
            raise _error(*self._failed)

    def _enter(self, until: float | None = None) -> int:
        """Checks that the connection can be used and returns its generation, waiting while
        another thread resumes it; raises _Away when until (time.monotonic()) passes first."""
        self._usable()
        with self._cond:
            while self._resumer is not None and self._resumer != threading.get_ident():
                self._wait_resumed(until)
            self._usable()
            return self._gen

    def _wait_resumed(self, until: float | None) -> None:
        """With _cond held: one wait for a resumption's news, at most until until."""
        if until is None:
            self._cond.wait()
            return
        left = until - time.monotonic()
        if left <= 0:
            raise _Away()
        self._cond.wait(left)

    @property
    def _away(self) -> bool:
        """Whether a resumption is under way and no new daemon answered yet."""
        return self._resumer is not None and bool(self._broken)

    def _send_lock_until(self, until: float | None) -> None:
        """Takes the send lock, which a resumption holds while it runs: at most until until
        while one is under way (_Away), a moment at a time otherwise (to see one start)."""
        if until is None:
            self._send_lock.acquire()
            return
        while not self._send_lock.acquire(timeout=0.01):
            if self._resumer is not None and time.monotonic() >= until:
                raise _Away()

    def _new_id(self) -> int:
        with self._lock:
            self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1
            self._pending.add(self._next_id)
            return self._next_id

    def _send(self, data: bytes, fds: Sequence[int] = (), gen: int | None = None) -> None:
        """Sends one message on the connection of generation gen (raises _Lost when that
        one ended or was replaced); the caller holds _send_lock when gen is given."""
        if gen is not None and (gen != self._gen or self._broken):
            raise _Lost()
        try:
            if fds:
                socket.send_fds(self._sock, [data], list(fds))
            else:
                self._sock.send(data)
        except OSError as e:
            if fds and e.errno == _errno.EBADF and self._resumer != threading.get_ident():
                # A descriptor of the call was closed after its check (by another thread):
                # the daemon did not end, so resuming would only send the same call to it
                # again, for ever.  As libsocknotify does, the call fails with EBADF and the
                # connection is lost for good: a part of the call may have gone out already.
                # (A resume's replay drops such a socket at its next check instead: it goes
                # on below as a lost connection.)  A thread reading the socket is woken.
                with self._lock:
                    self._broken = _errno.ECONNRESET
                    self._failed = (_errno.ECONNRESET,
                                    "a descriptor was closed while a call passed it")
                    self._cond.notify_all()
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                raise _error(_errno.EBADF, "a descriptor of the call was closed") from None
            with self._lock:
                if not self._broken:
                    self._broken = _errno.ECONNRESET
                self._cond.notify_all()
            if gen is not None:
                raise _Lost() from None
            raise _error(_errno.ECONNRESET, f"sending to socknotifyd: {e.strerror}") from None

    def _wait(self, msg_id: int | None, gen: int) -> w.Message:
        """Waits for the reply to msg_id, reading for every thread while nobody else does.
        Raises _Lost when the connection of generation gen ends first; msg_id None waits for
        that end (after ESHUTDOWN: the daemon stops and closes)."""
        with self._cond:
            try:
                while msg_id is None or msg_id not in self._replies:
                    if self._gen != gen or self._broken or (
                            self._resumer not in (None, threading.get_ident())):
                        raise _Lost()
                    if self._reading:
                        self._cond.wait()
                        continue
                    self._reading = True
                    self._lock.release()
                    data: bytes | None = None
                    fds: list[int] = []
                    cut = False
                    try:
                        data, fds, cut = self._recv_fds(self.limits.max_message)
                    except w.WireError:
                        data = None  # oversize: SOCK_SEQPACKET keeps the next one sound
                    except OSError:
                        data = b""
                    except BaseException:
                        # Interrupted (KeyboardInterrupt...): another waiter must read.
                        self._lock.acquire()
                        self._reading = False
                        self._cond.notify_all()
                        raise
                    self._lock.acquire()
                    self._reading = False
                    if data == b"":
                        if not self._broken:
                            self._broken = _errno.ECONNRESET
                    elif data is not None:
                        self._store(data, fds, cut)
                    self._cond.notify_all()
                return self._replies.pop(msg_id)
            finally:
                if msg_id is not None:
                    self._pending.discard(msg_id)

    def _store(self, data: bytes, fds: Sequence[int] = (), cut: bool = False) -> None:
        """With the lock held: files a received reply for its waiter.  Descriptors go with a
        PORT_TAKE_REPLY of status 0; on any other reply (or one for no request) they break the
        protocol (PROTOCOL.md, "Descriptors in replies"): they are closed, the request fails
        with EBADMSG and the connection is lost."""
        try:
            m = w.decode(data)
        except w.WireError:
            m = None  # nothing in it can be trusted, not even its id
        takes = m is not None and m.type == w.PORT_TAKE | w.REPLY_BIT and not m.status
        if (fds or cut) and not (takes and m is not None and m.id in self._pending):
            for fd in fds:
                os.close(fd)
            self._broken = _errno.ECONNRESET
            self._failed = (_errno.ECONNRESET, "socknotifyd broke the protocol")
            if m is not None and m.id in self._pending:
                self._replies[m.id] = replace(m, type=w.ERROR, status=_errno.EBADMSG)
            return
        if m is not None and m.id in self._pending:
            self._replies[m.id] = m
            if takes:
                self._reply_fds[m.id] = (list(fds), cut)
                return
        for fd in fds:
            os.close(fd)

    def _violation(self, fds: Sequence[int], what: str) -> SocknotifyError:
        """A reply broke the protocol: closes the descriptors it brought, loses the connection
        for good (every waiting and later call raises ECONNRESET; a daemon that breaks the
        protocol is not resumed on) and returns the EBADMSG to raise."""
        for fd in fds:
            os.close(fd)
        with self._lock:
            self._broken = _errno.ECONNRESET
            self._failed = (_errno.ECONNRESET, "socknotifyd broke the protocol")
            self._cond.notify_all()
        return _error(_errno.EBADMSG, what)

    def _call(self, mtype: int, body: bytes | Callable[[], bytes] = b"", array: bytes = b"",
              count: int = 0,
              what: str = "", retry: bool | None = True) -> w.Message:
        """One request, one reply; raises SocknotifyError for ERROR or a nonzero status.
        See _call_gen."""
        return self._call_gen(mtype, body, array, count, what, retry)[0]

    def _call_gen(self, mtype: int, body: bytes | Callable[[], bytes] = b"", array: bytes = b"",
                  count: int = 0,
                  what: str = "", retry: bool | None = True) -> tuple[w.Message, int]:
        """One request, one reply, and the generation of the connection that answered it;
        raises SocknotifyError (with that generation in ``_gen``) for ERROR or a nonzero
        status.

        ``body`` is bytes or a function returning them, called under the send lock so that
        the port ids it packs are those of the daemon it goes to.  When the connection ends
        before the reply and resumes, the request is sent again (``retry`` True), fails with
        EIO (False: it must not be applied twice and its fate is unknown), or counts as done
        (None: the lost daemon took what it would change with it; returns (None, gen)).
        A request the daemon died handling (EIO) is sent again where _AGAIN_AFTER_EIO says
        that is safe."""
        eio = 0
        while True:
            gen = self._enter()
            msg_id = self._new_id()
            sent = False
            try:
                with self._send_lock:
                    raw = body() if callable(body) else body
                    self._send(w.encode(mtype, msg_id, raw, array, count), gen=gen)
                    sent = True
                m = self._wait(msg_id, gen)
                if m.status == _errno.ESHUTDOWN and self.reconnect_ms:
                    self._wait(None, gen)  # the daemon stops: wait for the end, resume
            except _Lost:
                with self._lock:
                    self._pending.discard(msg_id)
                self._recover(gen)
                if retry is None:
                    return None, self._gen  # type: ignore[return-value]
                if not retry and sent:
                    raise _error(_errno.EIO, f"{what}: the daemon ended before it answered")
                continue  # (a request that never left is sent once, to the new daemon)
            except BaseException:
                with self._lock:
                    self._pending.discard(msg_id)
                raise
            err = 0
            if m.type == w.ERROR:
                err, text = m.status or _errno.EPROTO, what
            elif m.type != (mtype | w.REPLY_BIT):
                err, text = _errno.EPROTO, f"{what}: reply of type 0x{m.type:02x}"
            elif m.status:
                err, text = m.status, what
            if err == _errno.EIO and mtype in _AGAIN_AFTER_EIO and eio < _EIO_RETRIES:
                eio += 1
                continue
            if err and eio and err == _AGAIN_AFTER_EIO.get(mtype):
                return m, gen  # the attempt the daemon died handling took effect
            if err == _errno.EDQUOT and mtype != w.LIMIT_INFO:
                # (LIMIT_INFO itself is not asked about: a daemon refusing it with EDQUOT
                # would otherwise be asked again, without end.)
                le = self._limit_error(msg_id, None, text)
                le._gen = gen
                raise le
            if err:
                e = _error(err, text)
                e._gen = gen
                raise e
            return m, gen

    def _refusals(self) -> list[tuple[int, ...]]:
        """LIMIT_INFO: the connection's newest refusals by a limit, oldest first, as
        (request, first, last, limit, scope, value); [] from a daemon without it."""
        try:
            m = self._call(w.LIMIT_INFO, b"", what="LIMIT_INFO", retry=False)
        except SocknotifyError:
            return []
        return list(w.REFUSAL.iter_unpack(m.array1))

    def _limit_error(self, msg_id: int, item: int | None, what: str,
                     recs: list[tuple[int, ...]] | None = None) -> LimitError:
        """The LimitError of request msg_id (item None: the request itself; else the index of
        its registration item on the wire), asking the daemon which limit refused it."""
        if recs is None:
            recs = self._refusals()
        for rec in reversed(recs):
            req, first, last = rec[0], rec[1], rec[2]
            if req != msg_id:
                continue
            if item is None and first == w.NO_ITEM or (
                    item is not None and first != w.NO_ITEM and first <= item <= last):
                return LimitError._from_record(rec, what, entry=item is not None)
        return LimitError(what, entry=item is not None)

    # -- resuming ---------------------------------------------------------------------------

    def _recover(self, gen: int, until: float | None = None) -> None:
        """The connection of generation gen ended: resumes it on a new daemon (in a thread of
        its own; every caller waits for it), or raises the error every call now gets.  until
        (time.monotonic()): a wait with a deadline stops waiting then (_Away), and the
        resumption goes on behind it."""
        with self._cond:
            while True:
                self._usable()
                if self._gen != gen and self._resumer is None:
                    return  # resumed already
                if self._resumer is not None:
                    self._wait_resumed(until)
                    continue
                if not self._broken:
                    self._broken = _errno.ECONNRESET
                if self.reconnect_ms <= 0:
                    self._failed = (self._broken, "connection to socknotifyd lost")
                    self._cond.notify_all()
                    raise _error(*self._failed)
                if self._reading:
                    # A reader still blocked on the old socket (a send saw the end first).
                    try:
                        self._sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    self._wait_resumed(until)
                    continue
                # Nobody resumes: a thread of its own does, so that no caller's timeout waits
                # for it.  Until it runs, _resumer names nobody (-1): every caller waits.
                self._resumer = -1
                try:
                    threading.Thread(target=self._resume_thread, name="socknotify-resume",
                                     daemon=True).start()
                except RuntimeError:
                    break  # no thread to be had: resume here, as before
        self._resume_thread()
        with self._cond:
            self._usable()

    def _resume_thread(self) -> None:
        """Makes the resumption (see _recover): connects to a new daemon and replays, with the
        send lock held; wakes every waiter when done."""
        with self._cond:
            self._resumer = threading.get_ident()
        failed: tuple[int, str] | None = (_errno.ECONNRESET, "resuming interrupted")
        try:
            with self._send_lock:
                failed = self._resume()
        finally:
            with self._cond:
                self._resumer = None
                if self._closed:
                    self._sock.close()  # closed meanwhile: the new socket goes too
                for fds, _cut in self._reply_fds.values():
                    for fd in fds:
                        os.close(fd)
                self._reply_fds.clear()
                self._replies.clear()
                if failed:
                    self._failed = self._failed or failed
                else:
                    self.resumes += 1
                self._cond.notify_all()

    def _resume(self) -> tuple[int, str] | None:
        """Connects to a new daemon on self.path within reconnect_ms, checks its user and
        makes this process's ports and registrations again.  Runs in one thread with the send
        lock held; returns None, or the (errno, text) every call fails with from now on."""
        deadline = time.monotonic() + self.reconnect_ms / 1000
        while True:
            failed = self._connect_again(deadline)
            if failed:
                return failed
            try:
                with self._table_lock:
                    for port in list(self._ports.values()):
                        try:
                            self._replay_port(port)
                        except SocknotifyError as e:
                            if e.errno in (_errno.EBADMSG, _errno.EPROTO):
                                raise
                            # The new daemon would not make it (a limit, a name taken by a
                            # port that cannot be opened): its calls raise EBADF from now on.
                            port._closed = True
                    self._ports = {p.id: p for p in self._ports.values() if not p._closed}
                return None
            except _Lost:
                continue  # the new daemon ended too: wait for the next one
            except SocknotifyError as e:
                return (e.errno, f"the new daemon's reply: {e.strerror}")

    def _connect_again(self, deadline: float) -> tuple[int, str] | None:
        """Replaces the ended socket with a connection to a new daemon, retrying with a
        backoff (2 ms doubling to 100 ms) until deadline; checks the daemon's uid before
        anything is sent.  Returns None, or the (errno, text) to fail with."""
        delay = 0.002
        old = self._sock
        while True:
            if self._closed:
                return (_errno.EBADF, "connection closed")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                sock.connect(self.path)
                uid = _peer_uid(sock)
                if uid != self._daemon_uid and uid != 0:
                    # Someone else's daemon took the path: not one descriptor goes to it.
                    sock.close()
                    return (_errno.EACCES, f"the daemon now at {self.path} runs as uid {uid}, "
                            f"not as uid {self._daemon_uid} (the daemon lost) or root")
                self._sock = sock
                limits = self._handshake(deadline)
                break
            except (OSError, SocknotifyError):
                # No daemon yet (ENOENT, ECONNREFUSED), or one starting or refusing us.
                self._sock = old
                sock.close()
            left = deadline - time.monotonic()
            if left <= 0:
                return (_errno.ECONNRESET, f"connection to socknotifyd lost; no daemon "
                        f"answered at {self.path} within {self.reconnect_ms} ms")
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.1)
        old.close()
        with self._lock:
            self._gen += 1
            self._broken = 0
            self.limits = limits
        return None

    def _replay_call(self, mtype: int, body: bytes, array: bytes = b"",
                     count: int = 0) -> w.Message:
        """During a resumption (no other thread sends or reads): one request and its reply
        on the new socket (ERROR or the request's reply type, else EPROTO)."""
        gen = self._gen
        msg_id = self._new_id()
        self._send(w.encode(mtype, msg_id, body, array, count), gen=gen)
        m = self._wait(msg_id, gen)
        if m.type not in (w.ERROR, mtype | w.REPLY_BIT):
            raise _error(_errno.EPROTO, f"reply of type 0x{m.type:02x}")
        return m

    def _replay_port(self, port: "Port") -> None:
        """Makes port again on the new daemon (table lock held): the port itself, its linger
        time, then its registrations whose sockets this process still holds."""
        if port._closed:
            return
        raw = port.name.encode() if port.name else b""
        for _attempt in range(8):
            m = self._replay_call(w.PORT_CREATE, w.PORT_CREATE_BODY.pack(port.concurrency, 0), raw,
                                  len(raw))
            if raw and m.status == _errno.EEXIST:
                # Another process of this user made the named port again first: share it.
                m = self._replay_call(w.PORT_OPEN, b"", raw, len(raw))
                if m.status == _errno.ENOENT:
                    continue  # it closed it meanwhile: create it after all
            break
        if m.type == w.ERROR or m.status:
            raise _error(m.status or _errno.EPROTO, "PORT_CREATE")
        port.id, port.concurrency = w.PORT_REPLY_BODY.unpack(m.body)
        if port._linger_ms and self.version >= 2:
            m = self._replay_call(w.PORT_LINGER, w.PORT_LINGER_BODY.pack(port.id,
                                                                          port._linger_ms))
            # A daemon with a lower --max-linger: the port stays, without a linger time.
        port._replay_registrations()

    # -- public API -------------------------------------------------------------------------

    def fileno(self) -> int:
        """The connection's own socket (for diagnostics; do not read from it).  A new one
        after each resumption."""
        return self._sock.fileno()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def _add_port(self, m: w.Message, gen: int, name: str | None) -> "Port | None":
        """The Port of a PORT_CREATE/PORT_OPEN reply received on generation gen, or None when
        the connection resumed since (the port was made on the lost daemon: make it again)."""
        port_id, conc = w.PORT_REPLY_BODY.unpack(m.body)
        with self._table_lock:
            if gen != self._gen or self._resumer is not None:
                return None
            return Port(self, port_id, conc, name)

    def create_port(self, concurrency: int = 0, name: str | None = None,
                    linger: float = 0) -> "Port":
        """Creates a completion port (``concurrency`` 0: the number of processors).

        With ``name`` the port is shared: other connections of the same user may open it with
        :meth:`open_port`.  With ``linger`` (seconds, needs a name) it outlives its last
        handle that long, sockets and registrations included, for a successor to take over
        (:meth:`Port.take_sockets`).  Errors: ``EDQUOT`` (too many ports, or a linger time
        over the daemon's ``--max-linger``: nothing is created), ``EEXIST`` (name taken),
        ``EINVAL`` (bad name: 1 to 255 bytes of UTF-8 without NUL).
        """
        raw = name.encode() if name else b""
        if linger and not name:
            raise _error(_errno.EINVAL, "only a named port can linger")
        port = None
        while port is None:
            m, gen = self._call_gen(w.PORT_CREATE, w.PORT_CREATE_BODY.pack(concurrency, 0), raw,
                                    len(raw), "PORT_CREATE")
            port = self._add_port(m, gen, name)
        if linger:
            try:
                port.set_linger(linger)
            except BaseException:
                port.close()  # linger 0 yet: it closes with our handle
                raise
        return port

    def open_port(self, name: str) -> "Port":
        """Opens a named port of the same user.  Errors: ``ENOENT`` (none of that name for this
        user; another user's port is not visible), ``EEXIST`` (already open here)."""
        raw = name.encode()
        port = None
        while port is None:
            m, gen = self._call_gen(w.PORT_OPEN, b"", raw, len(raw), "PORT_OPEN")
            port = self._add_port(m, gen, name)
        return port

    def status(self) -> dict[str, Any]:
        """The daemon's status document, parsed from its JSON text."""
        m = self._call(w.STATUS, what="STATUS")
        doc: dict[str, Any] = json.loads(m.array1.decode())
        return doc

    def thread_exit(self, thread: int) -> None:
        """Tells the daemon that waiter identity ``thread`` is gone (THREAD_EXIT).

        It then no longer counts as running on any port of this connection.  Use it when a
        green thread or task that passed its own ``thread`` to :meth:`Port.process` ends.
        """
        # A daemon that ended took the waiter's state with it: nothing to tell the new one.
        self._call(w.THREAD_EXIT, w.THREAD_BODY.pack(thread & 0xFFFFFFFF), what="THREAD_EXIT",
                   retry=None)

    def drop_registration(self, sock: FileLike, *, identity: tuple[int, int] | None = None,
                          fd: int | None = None) -> bool:
        """Drops the registration made through descriptor ``sock`` (SOCKET_CLOSE).

        No REMOVE notification is queued; a notification not yet dequeued is discarded; the
        daemon's copy of the socket is closed.  The caller's descriptor stays open.  Returns
        False when there was no such registration (``ENOENT``).  ``identity`` (``st_dev``,
        ``st_ino``) and ``fd`` may be given for a descriptor that is already closed.
        """
        fdn = _fileno(sock) if fd is None else fd
        if identity is None:
            st = os.fstat(fdn)
            identity = (st.st_dev, st.st_ino)
        body = w.SOCKET_CLOSE_BODY.pack(identity[0], identity[1], fdn & 0xFFFFFFFF, 0)
        if self._away:
            # No daemon has it now: forgotten here, so that the resumption does not make it
            # again (it replays under the table lock, once a new daemon answered), and no
            # wait for the resumption (asyncio unregisters as it closes).
            with self._table_lock:
                if self._away:
                    for port in self._ports.values():
                        port._forget(identity, fdn)
                    return True
        while True:
            try:
                _m, gen = self._call_gen(w.SOCKET_CLOSE, body, what="SOCKET_CLOSE")
                found = True
            except SocknotifyError as e:
                if e.errno != _errno.ENOENT:
                    raise
                gen, found = e._gen, False
            with self._table_lock:
                if gen != self._gen or self._resumer is not None:
                    continue  # a resumption made it again meanwhile: drop it there too
                for port in self._ports.values():
                    port._forget(identity, fdn)
            return found

    def close_socket(self, sock: int | socket.socket) -> None:
        """Closes a socket that may be registered (closesocket, rule L1 of PROTOCOL.md).

        Drops the daemon's copy first, so that the peer sees the close at once, then closes
        ``sock`` (a socket object or a descriptor number).
        """
        try:
            if not self.closed and not self._failed:
                self.drop_registration(sock)
        finally:
            if isinstance(sock, int):
                os.close(sock)
            else:
                sock.close()

    def close(self) -> None:
        """Closes the connection: the daemon closes every port of it.  Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        with self._table_lock:
            for port in list(self._ports.values()):
                port._closed = True
            self._ports.clear()
        self._sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<socknotify.Connection {self.path!r}{' closed' if self.closed else ''}>"


class Port:
    """A completion port on the daemon; made by :meth:`Connection.create_port` or
    :meth:`Connection.open_port`.  Use it as a context manager, or call :meth:`close`.

    The object stays valid when its connection resumes on a new daemon: :attr:`id` then
    changes to the new daemon's id.  To make its registrations again the port keeps a table
    of them (socket identity, descriptor, key, filter, triggers, state), updated by every
    successful call."""

    def __init__(self, conn: Connection, port_id: int, concurrency: int, name: str | None):
        self.connection = conn
        self.id = port_id
        self.concurrency = concurrency
        self.name = name
        self._closed = False
        self._linger_ms = 0
        # (st_dev, st_ino) -> _Reg: the registrations this connection made on the port.
        self._regs: dict[tuple[int, int], _Reg] = {}
        self._oneshots: set[tuple[int, int]] = set()  # those with ONESHOT
        # Entries owed after a resumption (EDGE registrations whose condition held).
        self._owed: list[tuple[int, int, int, int]] = []
        conn._ports[port_id] = self

    def process(self, registrations: Sequence[Registration] = (), max_entries: int = 0,
                timeout: float | None = 0, thread: int | None = None) -> ProcessResult:
        """The native ProcessSocketNotifications.

        Applies ``registrations`` in order (each item's ``result`` is set), then dequeues up to
        ``max_entries`` entries, waiting up to ``timeout`` seconds (0: do not wait; None:
        without limit).  ``thread`` is the waiter identity the concurrency limit counts
        (default: the calling OS thread, ``threading.get_native_id()``).

        Call-level failures raise :class:`SocknotifyError` and change nothing: ``EBADF``,
        ``EINVAL`` (a timeout without ``max_entries``), ``EDQUOT`` (too many waiting calls),
        ``E2BIG``, ``ECANCELED`` (port closed while waiting), ``ESHUTDOWN``.  A timeout is not
        an error: the result has no entries and ``timed_out`` set.

        A call under way when the connection resumes on a new daemon is made again there (the
        registrations are applied again, the wait goes on for what is left of ``timeout``).
        """
        # A pure dequeue with a timeout returns by it while the daemon is away (empty, timed
        # out); the resumption goes on behind it.  A call that registers waits for the new
        # daemon: its items must reach one.
        away = None
        if not registrations and max_entries and timeout is not None:
            away = time.monotonic() + max(timeout, 0)
        try:
            raw, timed_out = self._process_raw(registrations, max_entries, timeout, thread,
                                               away=away)
        except _Away:
            raw, timed_out = [], True
        return ProcessResult([r.result or 0 for r in registrations], [Entry(*e) for e in raw],
                             timed_out)

    def _process_raw(self, registrations: Sequence[Registration], max_entries: int,
                     timeout: float | None, thread: int | None, away: float | None = None
                     ) -> tuple[list[tuple[int, int, int, int]], bool]:
        """process() without wrapping: returns ([(key, overlapped, events, kind)...],
        timed_out); sets each registration's result.  away (time.monotonic()): while a
        resumption is under way, wait for it at most until then, and raise _Away (nothing of
        this call reached a daemon that stays)."""
        conn = self.connection
        conn._usable()
        if self._closed:
            raise _error(_errno.EBADF, "port closed")
        if max_entries < 0 or (max_entries == 0 and timeout != 0):
            raise _error(_errno.EINVAL, "a timeout needs max_entries > 0")
        deadline = None
        if max_entries and timeout is not None and timeout > 0:
            deadline = time.monotonic() + timeout
        if thread is None:
            thread = threading.get_native_id() if max_entries else 0

        # Items to send: every item naming a socket; the daemon checks the rest.  notes: what
        # the port's table learns from each item sent, once it is applied.
        items: list[tuple[bytes, int | None]] = []
        notes: list[tuple[tuple[int, int], int, int, int, int, int]] = []
        for reg in registrations:
            reg.result = None
            fd = _fileno(reg.sock)
            try:
                st = os.fstat(fd)
            except OSError:
                st = None
            if st is None or not stat.S_ISSOCK(st.st_mode):
                if reg.op == Op.NONE:
                    reg.result = 0
                else:
                    reg.result = _errno.ENOTSOCK
                continue
            attach = fd if reg.op == Op.ENABLE else None
            key, filt, trig = reg.key & 0xFFFFFFFFFFFFFFFF, int(reg.filter) & 0xFFFF, \
                int(reg.trigger) & 0xFF
            items.append((w.REGISTRATION.pack(key, st.st_dev, st.st_ino, filt, int(reg.op),
                                              trig, 0, fd), attach))
            notes.append(((st.st_dev, st.st_ino), int(reg.op), key, filt, trig, fd))
        sent = [r for r in registrations if r.result is None]

        # Entries dequeued from a daemon that ended before this call's items could be recorded
        # for a resumption: they are delivered, and the items are sent again without waiting.
        carried: list[tuple[int, int, int, int]] = []
        eio = 0
        repeatable = all(int(r.op) in _REPEATABLE_OPS for r in registrations)
        while True:
            gen = conn._enter(away)
            if self._closed:
                raise _error(_errno.EBADF, "port closed")
            owed = min(len(self._owed), max_entries - len(carried))
            ask = max_entries - len(carried) - owed
            if owed or carried or not max_entries:
                tmo = 0
            elif timeout is None:
                tmo = w.INFINITE
            else:
                tmo = _timeout_ms(deadline - time.monotonic() if deadline else 0) or 0
            room = conn.limits.max_message - w.message_size(w.PROCESS | w.REPLY_BIT, len(items))
            ask = min(ask, max(room, 0) // w.ENTRY.size)
            m = None
            if items or ask:
                msg_id = conn._new_id()
                try:
                    conn._send_lock_until(away)
                    try:
                        self._send_parts(msg_id, items, ask, tmo, thread, gen)
                    finally:
                        conn._send_lock.release()
                    m = conn._wait(msg_id, gen)
                    if (m.type == w.PROCESS | w.REPLY_BIT and m.status == _errno.ESHUTDOWN and
                            conn.reconnect_ms):
                        conn._wait(None, gen)  # the daemon stops: wait for the end, resume
                except _Lost:
                    with conn._lock:
                        conn._pending.discard(msg_id)
                    conn._recover(gen, away)
                    continue
                except BaseException:
                    with conn._lock:
                        conn._pending.discard(msg_id)
                    raise
                if (m.status == _errno.EIO and m.type in (w.ERROR, w.PROCESS | w.REPLY_BIT)
                        and repeatable and eio < _EIO_RETRIES):
                    # The daemon died handling it; applied again it gives the same result
                    # (_AGAIN_AFTER_EIO): all of it again, for what is left of the timeout.
                    eio += 1
                    continue
                if m.type == w.ERROR:
                    raise _error(m.status or _errno.EPROTO, "PROCESS")
                if m.type != (w.PROCESS | w.REPLY_BIT):
                    raise _error(_errno.EPROTO, "PROCESS: unexpected reply")
                if m.status == _errno.EDQUOT:
                    raise conn._limit_error(msg_id, None, "PROCESS")
                if m.status and m.status != _errno.ETIMEDOUT:
                    raise _error(m.status, "PROCESS")
                results = [r[0] for r in w.RESULT.iter_unpack(m.array1)]
                if len(results) != len(sent) or m.count2 > ask:
                    # Missing results would read as successes, extra entries be lost: the
                    # reply does not answer this call.
                    raise conn._violation((), "PROCESS_REPLY does not fit its request")
                entries: list[tuple[int, int, int, int]] = list(
                    w.ENTRY.iter_unpack(m.array2))  # type: ignore[arg-type]
            else:
                results, entries = [], []
            with conn._table_lock:
                if gen != conn._gen or conn._resumer is not None:
                    # Resumed since: the new daemon has not seen these items.
                    carried += entries
                    continue
                self._note(notes, results, entries)
                if owed:
                    entries = self._owed[:owed] + entries
                    del self._owed[:owed]
            entries = carried + entries
            for reg, res in zip(sent, results):
                reg.result = res
                reg._refusal = None
            if m is not None and _errno.EDQUOT in results:
                # Which limit refused each such item: asked once, only now.
                recs = conn._refusals()
                for k, (reg, res) in enumerate(zip(sent, results)):
                    if res == _errno.EDQUOT:
                        reg._refusal = conn._limit_error(m.id, k, "registration", recs)
            if owed and not entries and max_entries and (
                    deadline is None and timeout is None or
                    deadline is not None and time.monotonic() < deadline):
                # Another thread took the owed entries: wait after all, the items applied.
                items, notes, sent = [], [], []
                continue
            return entries, bool(not entries and m is not None and
                                 m.status == _errno.ETIMEDOUT)

    def _note(self, notes: list[tuple[tuple[int, int], int, int, int, int, int]],
              results: list[int], entries: list[tuple[int, int, int, int]]) -> None:
        """With the table lock held: records in the port's table what the daemon applied
        (results, in the order of notes) and ONESHOT registrations that fired (entries)."""
        regs = self._regs
        oneshots = self._oneshots
        for (ident, op, key, filt, trig, fd), res in zip(notes, results):
            if res:
                continue
            if op == _OP_ENABLE:
                r = regs.get(ident)
                if r is None:
                    regs[ident] = _Reg(fd, key, filt, trig)
                else:  # rule 4: the first key stays
                    r.filter, r.trigger, r.enabled, r.armed = filt, trig, True, True
                if trig & _ONESHOT:
                    oneshots.add(ident)
                elif oneshots:
                    oneshots.discard(ident)
            elif op == _OP_DISABLE:
                r = regs.get(ident)
                if r is not None:
                    r.enabled = False
            elif op == _OP_REMOVE:
                if regs.pop(ident, None) is not None and oneshots:
                    oneshots.discard(ident)
        if oneshots:
            for key, _ov, events, kind in entries:
                if kind != w.KIND_SOCKET or events & _EV_REMOVE:
                    continue
                fired = [regs[i] for i in oneshots if regs[i].key == key and
                         regs[i].armed and regs[i].enabled]
                if len(fired) == 1:
                    # Disarmed until enabled again.  With several ONESHOT registrations of
                    # one key it cannot be told which: they stay armed (at least once).
                    fired[0].armed = False

    def _forget(self, ident: tuple[int, int], fd: int) -> None:
        """With the table lock held: SOCKET_CLOSE dropped the registration of ident made
        through fd (or the daemon had none)."""
        r = self._regs.get(ident)
        if r is not None and r.fd == fd:
            del self._regs[ident]
            self._oneshots.discard(ident)

    def _replay_registrations(self) -> None:
        """During a resumption, on the new port: makes again the registrations whose socket is
        still open under the descriptor that made it (same st_dev, st_ino), with their key,
        filter, triggers and state; forgets the others.  Level conditions are read again by
        the daemon; an enabled EDGE registration reports what holds now (an entry owed to the
        next dequeue of this process), an armed ONESHOT one then counts as fired."""
        items: list[tuple[bytes, int | None]] = []
        idents: list[tuple[int, int]] = []
        edges: list[tuple[int, int]] = []
        self._owed.clear()
        r: _Reg | None
        for ident, r in list(self._regs.items()):
            try:
                st = os.fstat(r.fd)
            except OSError:
                st = None
            if st is None or not stat.S_ISSOCK(st.st_mode) or (st.st_dev, st.st_ino) != ident:
                # Closed, or the number now names another socket: never replay it.
                del self._regs[ident]
                self._oneshots.discard(ident)
                continue
            items.append((w.REGISTRATION.pack(r.key, ident[0], ident[1], r.filter,
                                              int(Op.ENABLE), r.trigger, 0, r.fd), r.fd))
            idents.append(ident)
            if not (r.enabled and r.armed):
                items.append((w.REGISTRATION.pack(r.key, ident[0], ident[1], 0,
                                                  int(Op.DISABLE), 0, 0, r.fd), None))
                idents.append(ident)
            elif r.trigger & Trigger.EDGE:
                edges.append(ident)
        if not items:
            return
        failed = self._replay_process(items, idents)
        # EDGE skips what holds at ENABLE (rule 15): read it now, after the ENABLE, so that
        # nothing that started to hold in between is lost.
        disarm = []
        for ident in edges:
            r = self._regs.get(ident)
            if r is None or ident in failed:
                continue
            bits = _readiness(r.fd, r.filter)
            if bits:
                self._owed.append((r.key, 0, bits, w.KIND_SOCKET))
                if r.trigger & Trigger.ONESHOT:
                    r.armed = False
                    disarm.append(ident)
        if disarm:
            self._replay_process([(w.REGISTRATION.pack(self._regs[i].key, i[0], i[1], 0,
                                                       int(Op.DISABLE), 0, 0,
                                                       self._regs[i].fd), None)
                                  for i in disarm], disarm)

    def _replay_process(self, items: list[tuple[bytes, int | None]],
                        idents: list[tuple[int, int]]) -> set[tuple[int, int]]:
        """During a resumption: one PROCESS of items (no dequeue); forgets the registrations
        the new daemon refused and returns their identities."""
        conn = self.connection
        gen = conn._gen
        msg_id = conn._new_id()
        self._send_parts(msg_id, items, 0, 0, 0, gen)
        m = conn._wait(msg_id, gen)
        if m.type != w.PROCESS | w.REPLY_BIT or m.status or m.count != len(items) or m.count2:
            raise _error(m.status if m.type == w.ERROR and m.status else _errno.EPROTO,
                         "PROCESS (making registrations again)")
        failed = set()
        for ident, (res,) in zip(idents, w.RESULT.iter_unpack(m.array1)):
            if res:
                failed.add(ident)
                self._regs.pop(ident, None)
                self._oneshots.discard(ident)
        return failed

    def _send_parts(self, msg_id: int, items: list[tuple[bytes, int | None]], max_entries: int,
                    tmo: int, thread: int, gen: int) -> None:
        """Sends a PROCESS call in as many parts as the limits need (send lock held), on the
        connection of generation gen (_Lost otherwise)."""
        conn = self.connection
        lim = conn.limits
        per_msg = lim.max_items
        first = 0
        while True:
            chunk: list[bytes] = []
            fds: list[int] = []
            while first + len(chunk) < len(items) and len(chunk) < per_msg:
                raw, fd = items[first + len(chunk)]
                if fd is not None:
                    if len(fds) == lim.max_fds:
                        break
                    idx = len(fds)
                    fds.append(fd)
                else:
                    idx = w.NO_FD
                chunk.append(raw[:28] + idx.to_bytes(4, "little") + raw[32:])
            last = first + len(chunk) == len(items)
            body = w.PROCESS_BODY.pack(self.id, tmo, max_entries, 0 if last else w.PROCESS_PART,
                                       thread & 0xFFFFFFFF)
            conn._send(w.encode(w.PROCESS, msg_id, body, b"".join(chunk), len(chunk), len(fds)),
                       fds, gen=gen)
            if last:
                return
            first += len(chunk)

    def register(self, registrations: Iterable[Registration]) -> list[int]:
        """Applies registrations without dequeuing; returns their results (0 or errno)."""
        regs = list(registrations)
        return self.process(regs).results

    def dequeue(self, max_entries: int = 64, timeout: float | None = None,
                thread: int | None = None) -> list[Entry]:
        """Dequeues up to ``max_entries`` entries, waiting up to ``timeout`` seconds (None:
        without limit).  Returns an empty list when nothing arrived in time."""
        if max_entries <= 0:
            raise _error(_errno.EINVAL, "max_entries must be positive")
        return self.process((), max_entries, timeout, thread).entries

    def set_linger(self, seconds: float) -> None:
        """Sets how long this named port is kept after its last handle closes (0: not at all;
        millisecond resolution).  Errors: ``EINVAL`` (a private port), ``EDQUOT`` (over the
        daemon's ``--max-linger``), ``EOPNOTSUPP`` (a daemon older than protocol version 2)."""
        conn = self.connection
        conn._usable()
        if self._closed:
            raise _error(_errno.EBADF, "port closed")
        if conn.version < 2:
            raise _error(_errno.EOPNOTSUPP, "the daemon speaks protocol version 1")
        ms = round(seconds * 1000)
        if not 0 <= ms <= 0xFFFFFFFF:
            raise _error(_errno.EINVAL, "linger time out of range")
        before, self._linger_ms = self._linger_ms, ms  # a resumption under way sets it too
        try:
            conn._call(w.PORT_LINGER, lambda: w.PORT_LINGER_BODY.pack(self.id, ms),
                       what="PORT_LINGER")
        except SocknotifyError:
            self._linger_ms = before
            raise

    def take_sockets(self, max_sockets: int = 1 << 20) -> TakeResult:
        """Takes over the port's registrations that have no owner (their process ended while
        the port lingered or was held by others), up to ``max_sockets``.

        Each comes back as a :class:`TakenSocket` whose ``sock`` is a new ``socket.socket``
        of the same kernel socket; the registration (key, filter, triggers, state, a queued
        entry) is unchanged and now this connection's.  Re-enable those with ``armed`` False:
        ONESHOT ones whose entry the predecessor dequeued.  ``sock`` is None when the descriptor did
        not arrive (this process ran out of descriptors); the call then stops.

        The daemon's reply is checked: at most the number asked for, item i naming descriptor
        i, one descriptor per item (fewer only when the kernel dropped some), each a socket.
        A reply that breaks these rules raises :class:`SocknotifyError` ``EBADMSG`` (unless
        earlier batches were taken: they are returned); every descriptor it brought is closed
        and the connection is lost (later calls raise ``ECONNRESET``).
        """
        conn = self.connection
        conn._usable()
        if self._closed:
            raise _error(_errno.EBADF, "port closed")
        if conn.version < 2:
            raise _error(_errno.EOPNOTSUPP, "the daemon speaks protocol version 1")
        taken: list[TakenSocket] = []
        remaining = holders = 0
        busy = 0
        while True:
            ask = min(max_sockets - len(taken), conn.limits.max_fds)
            gen = conn._enter()
            msg_id = conn._new_id()
            sent = False
            try:
                with conn._send_lock:
                    conn._send(w.encode(w.PORT_TAKE, msg_id,
                                        w.PORT_TAKE_BODY.pack(self.id, ask, 0)), gen=gen)
                    sent = True
                m = conn._wait(msg_id, gen)
            except _Lost:
                # What the lost daemon handed over may be lost with it: never taken twice.
                with conn._lock:
                    conn._pending.discard(msg_id)
                conn._recover(gen)
                if not sent and not taken:
                    continue  # it never left: ask the new daemon
                if taken:
                    break
                raise _error(_errno.EIO, "PORT_TAKE: the daemon ended before it answered")
            with conn._lock:
                fds, cut = conn._reply_fds.pop(msg_id, ([], False))
            if m.type == w.PORT_TAKE | w.REPLY_BIT and m.status == _errno.EAGAIN and busy < 1000:
                busy += 1  # replies of other threads were still queued: ask again
                time.sleep(0.001)
                continue
            if m.type != w.PORT_TAKE | w.REPLY_BIT or m.status:
                for fd in fds:
                    os.close(fd)
                if taken:
                    break  # earlier batches are ours: return them (as the C library does)
                raise _error(m.status or _errno.EPROTO, "PORT_TAKE")
            items = list(w.REGISTRATION.iter_unpack(m.array1))
            problem = _take_reply_problem(m, items, ask, conn.limits.max_fds, fds, cut)
            if problem:
                err = conn._violation(fds, f"PORT_TAKE_REPLY: {problem}")
                if taken:
                    break  # earlier batches are ours: return them (as the C library does)
                raise err
            remaining, holders = w.PORT_TAKE_REPLY_BODY.unpack(m.body)
            batch: list[TakenSocket] = []
            socks: list[socket.socket] = []  # owning fds[:len(socks)]
            try:
                for i, (key, dev, ino, filt, op, trig, _index, prev) in enumerate(items):
                    sock = None
                    if i < len(fds):
                        sock = socket.socket(fileno=fds[i])
                        socks.append(sock)
                        st = os.fstat(sock.fileno())
                        if (st.st_dev, st.st_ino) != (dev, ino):
                            sock.close()  # not the socket the item names: never trust it
                            sock = None
                    batch.append(TakenSocket(sock, key, Filter(filt), Trigger(trig),
                                             op != int(Op.DISABLE),
                                             None if prev == w.NO_FD else prev,
                                             op == int(Op.ENABLE)))
            except OSError as e:
                # A socket the kernel would not wrap: the batch is not usable.
                for sk in socks:
                    sk.close()
                err = conn._violation(fds[len(socks):], f"PORT_TAKE_REPLY: {e.strerror}")
                if taken:
                    break
                raise err from None
            taken += batch
            with conn._table_lock:
                if gen == conn._gen and conn._resumer is None:
                    for ts in batch:
                        if ts.sock is not None:
                            self._adopt(ts)
            if cut or any(t.sock is None for t in batch):
                break
            if not m.count or not remaining or len(taken) >= max_sockets:
                break
        return TakeResult(taken, remaining, holders)

    def post(self, key: int, bytes: int = 0, overlapped: int = 0) -> None:
        """Queues a packet (PostQueuedCompletionStatus); its values come back unchanged."""
        self.post_many([(key, bytes, overlapped)])

    def post_many(self, packets: Sequence[tuple[int, int, int]]) -> int:
        """Queues several (key, bytes, overlapped) packets, all or none (``EDQUOT``)."""
        arr = b"".join(w.PACKET.pack(k & 0xFFFFFFFFFFFFFFFF, o & 0xFFFFFFFFFFFFFFFF,
                                     b & 0xFFFFFFFF, 0) for k, b, o in packets)
        if self._closed:
            raise _error(_errno.EBADF, "port closed")
        # Sent again after a resumption, a POST might be queued twice: EIO instead.
        m = self.connection._call(w.POST, lambda: w.PORT_BODY.pack(self.id), arr, len(packets),
                                  "POST", retry=False)
        posted: int = w.POST_REPLY_BODY.unpack(m.body)[0]
        return posted

    def _adopt(self, ts: TakenSocket) -> None:
        """With the table lock held: a registration taken over (PORT_TAKE) is now ours."""
        assert ts.sock is not None  # only sockets that arrived are adopted
        st = os.fstat(ts.sock.fileno())
        ident = (st.st_dev, st.st_ino)
        self._regs[ident] = _Reg(ts.sock.fileno(), ts.key, int(ts.filter), int(ts.trigger),
                                 ts.enabled, ts.armed or not ts.enabled)
        if ts.trigger & Trigger.ONESHOT:
            self._oneshots.add(ident)

    def close(self) -> None:
        """Closes this connection's handle to the port (idempotent).

        When it was the last handle the port closes: its registrations are dropped without
        REMOVE notifications, queued entries are discarded and waiting calls raise
        ``ECANCELED``.
        """
        if self._closed:
            return
        conn = self.connection
        with conn._table_lock:
            # From here a resumption does not make the port again (an ending daemon closes it).
            self._closed = True
            conn._ports.pop(self.id, None)
            self._regs.clear()
            self._oneshots.clear()
            self._owed.clear()
        if conn.closed or conn._failed:
            return
        if conn._away:
            return  # no daemon has it now, and the resumption does not make it again
        conn._call(w.PORT_CLOSE, lambda: w.PORT_BODY.pack(self.id), what="PORT_CLOSE",
                   retry=None)

    @property
    def closed(self) -> bool:
        """True once the port was closed through this object or its connection."""
        return self._closed

    def __enter__(self) -> "Port":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        name = f" {self.name!r}" if self.name else ""
        return f"<socknotify.Port {self.id}{name} concurrency={self.concurrency}>"

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""The binding kit's driver for the Python binding.

socknotify-binding-kit starts this program with SOCKNOTIFY_SOCKET set, writes one command a
line on its stdin and reads one answer a line on its stdout (docs/bindings.md, "The driver's
commands").  Every command goes through the public API of the socknotify package; the sockets
and ports it makes are named by handles (s1, s2, ... and p1, p2, ...), never by descriptor
numbers.  "spawn T CMD" runs CMD on the OS thread named T (one thread per name, kept to the
end, so that each name is one waiter for the daemon) and answers once T has taken it; "join T"
answers with its result.

    PYTHONPATH=bindings/python python3 tests/kit/driver-python.py
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import socket
import sys
import threading
import time

import socknotify as sn

FILTERS = {"in": sn.Filter.IN, "out": sn.Filter.OUT, "hup": sn.Filter.HANGUP,
           "all": sn.Filter.ALL, "none": sn.Filter.NONE}
TRIGGERS = {"level": sn.Trigger.LEVEL, "edge": sn.Trigger.EDGE,
            "oneshot": sn.Trigger.ONESHOT, "persistent": sn.Trigger.PERSISTENT,
            "none": sn.Trigger.NONE}
EVENTS = [(sn.Event.IN, "in"), (sn.Event.OUT, "out"), (sn.Event.HANGUP, "hup"),
          (sn.Event.ERR, "err"), (sn.Event.REMOVE, "remove")]


def pbkdf2_rate() -> float:
    """pbkdf2_hmac iterations a second on this machine (for "busy")."""
    t0 = time.monotonic()
    hashlib.pbkdf2_hmac("sha256", b"kit", b"busy", 20000)
    return 20000 / max(time.monotonic() - t0, 1e-6)


PBKDF2_RATE = pbkdf2_rate()


class Usage(Exception):
    """A command this driver does not know or cannot read: answered "err ENOSYS"."""


def ename(err: int) -> str:
    return errno.errorcode.get(err, str(err))


def flags(word: str, table: dict) -> int:
    bits = 0
    for w in word.split(","):
        if w not in table:
            raise Usage(word)
        bits |= table[w]
    return bits


def entry_word(e: sn.Entry) -> str:
    if e.posted:
        return f"post:{e.key}:{e.bytes}:{e.overlapped}"
    names = [n for bit, n in EVENTS if e.events & bit]
    rest = e.events & ~sum(int(b) for b, _ in EVENTS)
    if rest:
        names.append(hex(rest))
    return f"sock:{e.key}:{','.join(names) or 'none'}"


class Worker:
    """One OS thread that runs the commands spawned on it, one at a time."""

    def __init__(self, driver: "Driver"):
        self.driver = driver
        self.todo: queue.Queue = queue.Queue()
        self.taken = threading.Semaphore(0)
        self.done: queue.Queue = queue.Queue()
        threading.Thread(target=self.main, daemon=True).start()

    def give(self, line: str) -> None:
        """Returns once the thread has taken the command: it is awake and running then."""
        self.todo.put(line)
        self.taken.acquire()

    def main(self) -> None:
        while True:
            line = self.todo.get()
            self.taken.release()
            self.done.put(self.driver.run(line))


class Driver:
    def __init__(self) -> None:
        self.conn: sn.Connection | None = None
        self.ports: dict[str, sn.Port] = {}
        self.socks: dict[str, socket.socket] = {}
        # Closed by "close" or "socket_close": "register", "disable" and "remove" still pass
        # them (a socket object's fileno() is -1 then), as a program that uses a socket after
        # closing it would.
        self.closed: dict[str, socket.socket] = {}
        self.workers: dict[str, Worker] = {}
        self.lock = threading.Lock()
        self.count = 0

    def new(self, table: dict, prefix: str, obj) -> str:
        with self.lock:
            self.count += 1
            h = f"{prefix}{self.count}"
            table[h] = obj
            return h

    def port(self, h: str) -> sn.Port:
        with self.lock:
            if h not in self.ports:
                raise Usage(h)
            return self.ports[h]

    def sock(self, h: str) -> socket.socket:
        with self.lock:
            if h not in self.socks:
                raise Usage(h)
            return self.socks[h]

    def sock_or_closed(self, h: str) -> socket.socket:
        with self.lock:
            if h in self.closed:
                return self.closed[h]
        return self.sock(h)

    def pair(self, kind: str, arg: str | None) -> str:
        if kind == "unix_pair":
            types = {None: socket.SOCK_STREAM, "stream": socket.SOCK_STREAM,
                     "dgram": socket.SOCK_DGRAM, "seqpacket": socket.SOCK_SEQPACKET}
            if arg not in types:
                raise Usage(arg)
            a, b = socket.socketpair(socket.AF_UNIX, types[arg])
        elif kind == "tcp_pair":
            with socket.create_server(("127.0.0.1", 0)) as lst:
                b = socket.create_connection(lst.getsockname())
                a, _ = lst.accept()
        else:
            a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            a.bind(("127.0.0.1", 0))
            b.connect(a.getsockname())
            a.connect(b.getsockname())
        return f"ok a={self.new(self.socks, 's', a)} b={self.new(self.socks, 's', b)}"

    def one(self, port: sn.Port, reg: sn.Registration) -> str:
        res = port.register([reg])
        return f"ok {ename(res[0]) if res[0] else 0}"

    def run(self, line: str) -> str:
        try:
            return self.dispatch(line)
        except (Usage, ValueError, KeyError, IndexError):
            return "err ENOSYS"
        except OSError as e:
            return f"err {ename(e.errno) if e.errno else 'EIO'}"

    def dispatch(self, line: str) -> str:
        w = line.split()
        if not w:
            raise Usage(line)
        c, n = w[0], len(w)
        if c == "spawn" and n >= 3:
            if w[1] not in self.workers:
                self.workers[w[1]] = Worker(self)
            self.workers[w[1]].give(line.split(None, 2)[2])
            return "ok"
        if c == "join" and n == 2:
            if w[1] not in self.workers:
                return "err ESRCH"
            return self.workers[w[1]].done.get()
        if c == "connect" and (n == 1 or (n == 2 and w[1] == "self")):
            self.conn = sn.Connection(self_scheduled=n == 2)
            return f"ok max_fds={self.conn.limits.max_fds}"
        if c == "sleep" and n == 2:
            time.sleep(int(w[1]) / 1000)  # asleep in the kernel: read as blocked elsewhere
            return "ok"
        if c == "busy" and n == 2:
            # The daemon must read this thread as running all along.  A loop of Python code
            # would wait for the GIL (asleep, for /proc) whenever another thread of this
            # driver runs or is preempted while holding it: pbkdf2_hmac computes without the
            # GIL, in rounds of up to half a second, so that the GIL is taken only a few times.
            # Each round is sized at the rate the last one ran: on a machine busier than at
            # start, rounds sized at the first rate would overrun the time asked by seconds.
            end = time.monotonic() + int(w[1]) / 1000
            rate = PBKDF2_RATE
            while (left := end - time.monotonic()) > 0:
                n = max(1, int(min(left, 0.5) * rate))
                t0 = time.monotonic()
                hashlib.pbkdf2_hmac("sha256", b"kit", b"busy", n)
                rate = n / max(time.monotonic() - t0, 1e-6)
            return "ok"
        if c in ("tcp_pair", "udp_pair", "unix_pair") and n <= 2:
            return self.pair(c, w[1] if n == 2 else None)
        if c == "pipe" and n == 1:
            r, wr = os.pipe()
            return f"ok r={self.new(self.socks, 's', r)} w={self.new(self.socks, 's', wr)}"
        if c == "send" and n == 3:
            return f"ok {self.sock(w[1]).send(bytes(int(w[2])), socket.MSG_DONTWAIT)}"
        if c == "recv" and n == 3:
            return f"ok {len(self.sock(w[1]).recv(int(w[2]), socket.MSG_DONTWAIT))}"
        if c == "shutdown" and n == 3:
            how = {"rd": socket.SHUT_RD, "wr": socket.SHUT_WR, "rdwr": socket.SHUT_RDWR}
            self.sock(w[1]).shutdown(how[w[2]])
            return "ok"
        if c == "close" and n == 2:
            s = self.sock(w[1])
            with self.lock:
                self.closed[w[1]] = self.socks.pop(w[1])
            os.close(s) if isinstance(s, int) else s.close()
            return "ok"
        if self.conn is None:
            return "err ENOTCONN"
        if c == "status" and n == 2:
            doc = self.conn.status()
            return f"ok {doc[w[1]]}" if w[1] in doc else "err ENOENT"
        if c == "socket_close" and n == 2:
            s = self.sock(w[1])
            with self.lock:
                self.closed[w[1]] = self.socks.pop(w[1])
            self.conn.close_socket(s)
            return "ok"
        if c == "port_create" and n in (2, 3):
            p = self.conn.create_port(concurrency=int(w[1]), name=w[2] if n == 3 else None)
            return f"ok port={self.new(self.ports, 'p', p)}"
        if c == "port_open" and n == 2:
            return f"ok port={self.new(self.ports, 'p', self.conn.open_port(w[1]))}"
        if c == "port_close" and n == 2:
            self.port(w[1]).close()
            return "ok"
        if c == "linger" and n == 3:
            self.port(w[1]).set_linger(int(w[2]) / 1000)
            return "ok"
        if c == "post" and n == 5:
            self.port(w[1]).post(int(w[2]), int(w[3]), int(w[4]))
            return "ok"
        if c == "register" and n == 6:
            reg = sn.Registration.enable(self.sock_or_closed(w[2]), int(w[3]), flags(w[4], FILTERS),
                                         flags(w[5], TRIGGERS))
            return self.one(self.port(w[1]), reg)
        if c in ("disable", "remove") and n == 3:
            make = sn.Registration.disable if c == "disable" else sn.Registration.remove
            return self.one(self.port(w[1]), make(self.sock_or_closed(w[2])))
        if c == "items" and n >= 3:
            regs = []
            for item in w[2:]:
                f = item.split(":")
                if f[0] == "enable" and len(f) == 5:
                    regs.append(sn.Registration.enable(self.sock_or_closed(f[1]), int(f[2]),
                                                       flags(f[3], FILTERS),
                                                       flags(f[4], TRIGGERS)))
                elif f[0] in ("disable", "remove") and len(f) == 2:
                    make = sn.Registration.disable if f[0] == "disable" else \
                        sn.Registration.remove
                    regs.append(make(self.sock_or_closed(f[1])))
                else:
                    raise Usage(item)
            res = self.port(w[1]).register(regs)
            return "ok " + " ".join(ename(r) if r else "0" for r in res)
        if c == "register_all" and n == 5:
            filt, trig = flags(w[2], FILTERS), flags(w[3], TRIGGERS)
            regs = []
            for i in range(int(w[4])):
                a, b = socket.socketpair()
                self.new(self.socks, "s", a)
                self.new(self.socks, "s", b)
                regs.append(sn.Registration.enable(a, i, filt, trig))
            res = self.port(w[1]).register(regs)
            return "ok " + " ".join(ename(r) if r else "0" for r in res)
        if c == "process" and n == 4:
            ms, mx = int(w[2]), int(w[3])
            timeout = None if ms == 0xFFFFFFFF else ms / 1000
            res = self.port(w[1]).process((), max_entries=mx, timeout=timeout)
            if res.timed_out:
                return "timeout"
            return " ".join(["ok"] + [entry_word(e) for e in res.entries])
        if c == "take" and n == 3:
            res = self.port(w[1]).take_sockets(int(w[2]))
            words = [f"ok taken={len(res.sockets)} remaining={res.remaining}"]
            for t in sorted(res.sockets, key=lambda t: t.key):
                h = self.new(self.socks, "s", t.sock) if t.sock is not None else "-1"
                words.append(f"{t.key}={h}" + ("" if t.armed else ":disarmed"))
            return " ".join(words)
        raise Usage(line)


def main() -> int:
    d = Driver()
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            break
        print(d.run(line), flush=True)
    sys.stdout.flush()
    # Worker threads may be parked in a wait: leave without joining them.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

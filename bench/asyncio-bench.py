#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""asyncio-bench: the asyncio echo workload on socknotify.Selector against asyncio's default
selector (EpollSelector on Linux), in the same run, alternating, with the ratio.

    bench/asyncio-bench.py [--clients N] [--rounds R] [--size B] [--repeat K] [--socket PATH]

Without --socket it starts the socknotifyd of this build tree on a temporary socket.  Each
repetition runs the workload once per selector (order alternating): one asyncio echo server and
N clients on the same loop, each doing R request/reply round trips of B bytes.  Reported: round
trips per second for each selector (best and median of the repetitions), the mean number of
ready events one select() returned (a slower select() lets more readiness pile up per loop
iteration, which saves Python work), the CPU time per round trip
(this process, plus the daemon's for socknotify, when this script started it), and the ratios
socknotify / default of the medians.  Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import socknotify  # noqa: E402


async def workload(clients: int, rounds: int, size: int) -> float:
    handlers: list[asyncio.Task] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, backlog=clients)
    port = server.sockets[0].getsockname()[1]
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(clients)]
    msg = b"x" * size

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(rounds):
            writer.write(msg)
            await reader.readexactly(size)

    t = time.perf_counter()
    await asyncio.gather(*(client(r, w) for r, w in conns))
    elapsed = time.perf_counter() - t
    for _, w in conns:
        w.close()
    await asyncio.gather(*(w.wait_closed() for _, w in conns), *handlers)
    server.close()
    await server.wait_closed()
    return clients * rounds / elapsed


def counting(base: type) -> type:
    """base with a count of select() calls and of the events they returned."""

    class Counting(base):  # type: ignore[misc, valid-type]
        calls = 0
        events = 0

        def select(self, timeout=None):
            ready = super().select(timeout)
            type(self).calls += 1
            type(self).events += len(ready)
            return ready

    return Counting


def daemon_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) the daemon has used so far; 0 when not known."""
    if not pid:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def run_once(kind: str, path: str, args: argparse.Namespace,
             pid: int | None) -> tuple[float, float, float]:
    """Round trips per second, events per select() call, and CPU microseconds per round trip
    (this process, plus the daemon for socknotify)."""
    if kind == "socknotify":
        cls = counting(socknotify.Selector)
        sel = cls(path=path)
    else:
        cls = counting(type(selectors.DefaultSelector()))
        sel = cls()
    loop = asyncio.SelectorEventLoop(sel)
    cpu0 = time.process_time() + (daemon_cpu(pid) if kind == "socknotify" else 0.0)
    try:
        rate = loop.run_until_complete(workload(args.clients, args.rounds, args.size))
    finally:
        loop.close()
    cpu = time.process_time() + (daemon_cpu(pid) if kind == "socknotify" else 0.0) - cpu0
    return rate, cls.events / max(cls.calls, 1), cpu * 1e6 / (args.clients * args.rounds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--socket", help="an already running daemon's socket")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    proc = None
    tmp = None
    path = args.socket
    if not path:
        tmp = tempfile.mkdtemp(prefix="sn-bench-")
        path = os.path.join(tmp, "socknotify.sock")
        daemon = os.environ.get("SN_DAEMON") or os.path.join(HERE, "..", "daemon", "socknotifyd")
        proc = subprocess.Popen([daemon, "--socket", path], stderr=subprocess.DEVNULL)
        for _ in range(2000):
            if os.path.exists(path):
                break
            time.sleep(0.01)
    try:
        rates: dict[str, list[float]] = {"default": [], "socknotify": []}
        batch: dict[str, list[float]] = {"default": [], "socknotify": []}
        cpu: dict[str, list[float]] = {"default": [], "socknotify": []}
        for kind in ("default", "socknotify"):  # warm-up, not counted
            run_once(kind, path, args, None)
        for i in range(args.repeat):
            order = ("default", "socknotify") if i % 2 == 0 else ("socknotify", "default")
            for kind in order:
                rate, per_select, us = run_once(kind, path, args, proc.pid if proc else None)
                rates[kind].append(rate)
                batch[kind].append(per_select)
                cpu[kind].append(us)
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        if tmp:
            try:
                os.unlink(path)
            except OSError:
                pass
            os.rmdir(tmp)

    default_name = type(selectors.DefaultSelector()).__name__
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratio = med["socknotify"] / med["default"]
    if args.json:
        print(json.dumps({"workload": vars(args), "round_trips_per_s": rates,
                          "events_per_select": batch, "cpu_us_per_round_trip": cpu,
                          "median": med, "ratio": ratio,
                          "default_selector": default_name}))
        return 0
    print(f"asyncio echo: {args.clients} clients x {args.rounds} round trips of {args.size} B, "
          f"{args.repeat} repetitions, alternating")
    print(f"{'selector':<22} {'best rt/s':>12} {'median rt/s':>12} {'events/select':>14} "
          f"{'CPU us/rt':>10}")
    for kind, label in (("default", default_name), ("socknotify", "socknotify.Selector")):
        print(f"{label:<22} {max(rates[kind]):>12.0f} {med[kind]:>12.0f} "
              f"{statistics.median(batch[kind]):>14.1f} {statistics.median(cpu[kind]):>10.1f}")
    cpu_ratio = statistics.median(cpu["socknotify"]) / statistics.median(cpu["default"])
    print(f"ratio socknotify/default (median round trips per second): {ratio:.2f}")
    print(f"ratio socknotify/default (median CPU per round trip, daemon included): "
          f"{cpu_ratio:.2f}")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        print(f"note: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: a loaded "
              "machine favours the two-process socknotify setup in wall-clock terms; the CPU "
              "ratio is the steadier figure")
    return 0


if __name__ == "__main__":
    sys.exit(main())

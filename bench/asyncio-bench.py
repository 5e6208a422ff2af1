#!/usr/bin/env python3
"""asyncio-bench: the asyncio echo workload on socknotify.Selector against asyncio's default
selector (EpollSelector on Linux), in the same run, alternating, with the ratio.

    bench/asyncio-bench.py [--clients N] [--rounds R] [--size B] [--repeat K] [--socket PATH]

Without --socket it starts the socknotifyd of this build tree on a temporary socket.  Each
repetition runs the workload once per selector (order alternating): one asyncio echo server and
N clients on the same loop, each doing R request/reply round trips of B bytes.  Reported: round
trips per second for each selector (best and median of the repetitions) and the ratio
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


def run_once(kind: str, path: str, args: argparse.Namespace) -> float:
    sel = socknotify.Selector(path=path) if kind == "socknotify" else selectors.DefaultSelector()
    loop = asyncio.SelectorEventLoop(sel)
    try:
        return loop.run_until_complete(workload(args.clients, args.rounds, args.size))
    finally:
        loop.close()


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
        for i in range(args.repeat):
            order = ("default", "socknotify") if i % 2 == 0 else ("socknotify", "default")
            for kind in order:
                rates[kind].append(run_once(kind, path, args))
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
                          "median": med, "ratio": ratio, "default_selector": default_name}))
        return 0
    print(f"asyncio echo: {args.clients} clients x {args.rounds} round trips of {args.size} B, "
          f"{args.repeat} repetitions, alternating")
    print(f"{'selector':<22} {'best rt/s':>12} {'median rt/s':>12}")
    for kind, label in (("default", default_name), ("socknotify", "socknotify.Selector")):
        print(f"{label:<22} {max(rates[kind]):>12.0f} {med[kind]:>12.0f}")
    print(f"ratio socknotify/default (median): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What one worker's isolate holds, read through the runtime workerd's V8 inspector: the wasm instance's linear
memory and the V8 heap after a full garbage collection. The soak samples these beside the processes' resident
memory, so that growth of the worker's own memory can be told from growth of the local runtime around it
(workerd's D1 object, wrangler's proxy, the inspector's own buffers).

Each reading is one short DevTools Protocol session through wrangler's inspector proxy (`--inspector-port`):
`HeapProfiler.collectGarbage`, `Runtime.getHeapUsage`, and `Runtime.queryObjects` on `WebAssembly.Memory.prototype`
summed over `buffer.byteLength`.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import requests
import websocket  # websocket-client (tests/requirements.txt)

MIB = 1024 * 1024


@dataclass
class IsolateReading:
    heap_used_mib: float  # V8 heap in use after a full GC
    wasm_mib: float  # every WebAssembly.Memory's byteLength (0 for a JavaScript worker)


def inspector_url(wrangler_pids: list[int]) -> str:
    """The DevTools WebSocket of the worker that this `wrangler dev` runs: wrangler's inspector proxy (its
    `--inspector-port`), which forwards to the user worker's isolate in the runtime workerd. (The runtime's own
    ports are not probed: one of them is its debug port, whose RPC an HTTP request would break.)"""
    for pid in wrangler_pids:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"--inspector-port" in args:
            port = int(args[args.index(b"--inspector-port") + 1])
            return requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()[0]["webSocketDebuggerUrl"]
    raise RuntimeError(f"no --inspector-port on wrangler {wrangler_pids}")


class _Session:
    def __init__(self, url: str, deadline: float):
        self.deadline = deadline
        self.ws = websocket.create_connection(url, timeout=max(1.0, deadline - time.monotonic()))
        self.n = 0
        self.events: list[dict] = []

    def call(self, method: str, **params) -> dict:
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while time.monotonic() < self.deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            if msg.get("method") == "Runtime.executionContextCreated":
                self.events.append(msg)
        raise TimeoutError(f"{method}: no answer in time")

    def close(self):
        self.ws.close()


def read(url: str, poke: Callable[[], object], timeout: float = 30.0) -> IsolateReading:
    """One reading. workerd serves the inspector between the isolate's own work: a GC asked of an idle worker
    would wait for its next request, so `poke` (a cheap request to the worker) is sent every 50 ms meanwhile."""
    done = threading.Event()

    def keep_busy():
        while not done.wait(0.05):
            try:
                poke()
            except OSError:
                pass
    threading.Thread(target=keep_busy, daemon=True).start()
    s = _Session(url, time.monotonic() + timeout)
    try:
        s.call("HeapProfiler.collectGarbage")
        heap = s.call("Runtime.getHeapUsage")["usedSize"]
        s.call("Runtime.enable")  # announces the worker's execution context, which evaluation needs
        [context] = [e["params"]["context"]["id"] for e in s.events][-1:]
        proto = s.call("Runtime.evaluate", expression="WebAssembly.Memory.prototype", contextId=context)["result"]["objectId"]
        found = s.call("Runtime.queryObjects", prototypeObjectId=proto)["objects"]["objectId"]
        total = s.call("Runtime.callFunctionOn", objectId=found, returnByValue=True,
                       functionDeclaration="function () { return this.reduce((n, m) => n + m.buffer.byteLength, 0); }")
        s.call("Runtime.disable")
        return IsolateReading(heap / MIB, total["result"]["value"] / MIB)
    finally:
        done.set()
        s.close()

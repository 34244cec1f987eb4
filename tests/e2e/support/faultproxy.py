"""A small HTTP proxy on 127.0.0.1 between the worker and AWS (moto) that injects faults: HTTP 500,
ThrottlingException, ExpiredTokenException ("expired", only when scripted), connection reset, or a 5 s stall — none of them forwarded, so each fault is a callback
that did not happen. It counts what it forwarded per task token (duplicate detection). Mode "slow" forwards
everything, each request `slow_seconds` late (a slow, not a broken, endpoint); "lost" forwards the request
and then resets the worker's connection (delivered, but the answer never arrives). `script`: modes for the
next requests, one each, before `mode` applies again."""
from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
import threading
from collections import Counter

FAULTS = ("ok", "500", "throttle", "reset", "stall")


class FaultProxy:
    def __init__(self, upstream_port: int, seed: int = 7, weights=(50, 12, 13, 12, 13)):
        self.upstream_port = upstream_port
        self.rng = random.Random(seed)
        self.weights = weights
        self.mode = "mix"  # "mix" (weighted random), one of FAULTS, "hold" (never answer), "slow" or "lost"
        self.script: list[str] = []
        self.slow_seconds = 10.0
        self.forwarded: Counter = Counter()  # task token -> callbacks that reached Step Functions
        self.attempts: Counter = Counter()  # task token -> callbacks forwarded, whatever Step Functions answered
        self.injected: Counter = Counter()
        self.received = threading.Event()  # set whenever a request arrives
        self._loop = asyncio.new_event_loop()
        self._server = None
        self.port = 0

    def start(self) -> "FaultProxy":
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        async def shutdown():
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)

    def _pick(self) -> str:
        if self.script:
            return self.script.pop(0)
        if self.mode == "mix":
            return self.rng.choices(FAULTS, weights=self.weights)[0]
        return self.mode

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length)
            self.received.set()
            fault = self._pick()
            self.injected[fault] += 1
            if fault == "hold":
                await asyncio.sleep(3600)
            elif fault == "slow":
                await asyncio.sleep(self.slow_seconds)
                await self._forward(head, body, writer)
            elif fault == "lost":
                await self._forward(head, body, None)
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            elif fault == "500":
                await self._reply(writer, 500, b"upstream exploded")
            elif fault == "expired":
                # Temporary credentials Step Functions no longer accepts (they ran out before the worker thought).
                await self._reply(writer, 400, json.dumps({"__type": "ExpiredTokenException",
                                                           "message": "The security token included in the request is expired"}).encode())
            elif fault == "throttle":
                await self._reply(writer, 400, json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"}).encode())
            elif fault == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            elif fault == "stall":
                await asyncio.sleep(5)
                writer.transport.abort()
                return
            else:
                await self._forward(head, body, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if not writer.is_closing():
                writer.close()
            if asyncio.current_task().cancelling():
                raise asyncio.CancelledError

    async def _reply(self, writer, status: int, body: bytes):
        writer.write(b"HTTP/1.1 %d X\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % (status, len(body)) + body)
        await writer.drain()

    async def _forward(self, head: bytes, body: bytes, writer):
        try:
            token = json.loads(body).get("taskToken")
        except ValueError:
            token = None
        # `connection` is not a signed header: forcing close keeps this proxy one-request-per-connection.
        lines = [ln for ln in head.rstrip(b"\r\n").split(b"\r\n") if not ln.lower().startswith(b"connection:")]
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        up_w.write(b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n" + body)
        await up_w.drain()
        response = await up_r.read()
        up_w.close()
        if token:
            self.attempts[token] += 1
        if token and b" 200 " in response.split(b"\r\n", 1)[0]:
            self.forwarded[token] += 1
        elif token:
            self.forwarded[token] += 0
            self.injected["upstream-error"] += 1
        if writer is not None:
            writer.write(response)
            await writer.drain()

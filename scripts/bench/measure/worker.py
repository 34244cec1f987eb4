"""The worker alone: CPU and latency per request type, JWT verification under concurrent load, cold start."""
from __future__ import annotations

import json
import os
import statistics
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

from common import Client, WorkerProcs, start_boottime
from harness import bearer, launch_worker, log, register_inbox, worker_cpu, worker_procs
from ringi_stack import free_port
from results import ColdRun, ColdStart, Endpoint, Latency, RequestType, RequestTypes, Throughput

VERIFY = "verify (JWT → 404, no D1)"
VIEW = "view (GET one approval)"


def request_types(stack, wp: WorkerProcs, n: int, rounds: int) -> RequestTypes:
    c = Client(stack.ports.worker)
    inbox_ids = register_inbox(c, stack.api_key)
    kinds = {
        "healthz": lambda i: ("GET", "/healthz", None, {}, 200),
        VERIFY: lambda i: ("GET", "/api/v1/approvals/x", None, bearer(tokens[i]), 404),
        VIEW: lambda i: ("GET", f"/api/v1/approvals/{inbox_ids[i % 30]}", None, bearer(tokens[i]), 200),
        "inbox (25 of 30 pending)": lambda i: ("GET", "/api/v1/approvals?status=pending", None, bearer(tokens[i]), 200),
        "register (API key)": lambda i: ("POST", "/api/v1/approvals", {
            "taskToken": f"bench-synthetic-{uuid.uuid4()}", "approvers": [{"sub": "bench-reg"}],
            "title": "Deploy", "summary": "bench", "timeoutSeconds": 3600}, bearer(stack.api_key), 201),
    }
    out = {}
    for kind, make in kinds.items():
        lat, cpus = [], []
        for _ in range(rounds):
            tokens = [stack.mint("bench-inbox", groups=["ops"]) for _ in range(n)]
            reqs = [make(i) for i in range(n)]
            for m, p, b, h, want in reqs[:10]:  # warm-up
                c.request(m, p, b, h)
            reqs = [make(i) for i in range(n)]
            meter = worker_cpu(wp)
            deadline = time.monotonic() + 120
            count = 0
            with meter:
                for m, p, b, h, want in reqs:
                    st, data, t = c.request(m, p, b, h)
                    assert st == want, (kind, st, data[:200])
                    lat.append(t)
                    count += 1
                    if time.monotonic() > deadline:
                        break
            cpus.append({k: v / count * 1000 for k, v in meter.result.items()})
        out[kind] = RequestType(latency=Latency.of(lat), cpu_ms_rounds=cpus)
        log(f"{kind}: median {out[kind].latency.median_ms:.2f} ms, workerd runtime CPU "
            f"{out[kind].cpu_ms['runtime']:.2f} ms/request")
    c.close()
    return RequestTypes(types=out, inbox_ids=inbox_ids)


def throughput(stack, wp: WorkerProcs, concurrency: int, max_requests: int, max_seconds: float,
               rounds: int = 4) -> Throughput:
    """`rounds` alternating rounds per endpoint (healthz, verify, healthz, verify, …), each at most
    max_requests/rounds requests or max_seconds/rounds seconds, so that load changes hit both alike."""
    tokens = [stack.mint("bench-throughput") for _ in range(500)]
    kinds = [("healthz", "/healthz", False, 200), ("verify", "/api/v1/approvals/x", True, 404)]
    per_round = {k[0]: [] for k in kinds}
    for _ in range(rounds):
        for kind, path, auth, want in kinds:
            counter = iter(range(max_requests // rounds))
            lock = threading.Lock()
            deadline = time.monotonic() + max_seconds / rounds
            errors = []

            def hammer(_):
                c, done = Client(stack.ports.worker), 0
                while time.monotonic() < deadline:
                    with lock:
                        i = next(counter, None)
                    if i is None:
                        break
                    st, _, _ = c.request("GET", path, headers=bearer(tokens[i % len(tokens)]) if auth else {})
                    if st != want:
                        errors.append(st)
                    done += 1
                c.close()
                return done

            meter = worker_cpu(wp)
            client_before = os.times()
            with meter:
                t0 = time.perf_counter()
                with ThreadPoolExecutor(concurrency) as ex:
                    total = sum(ex.map(hammer, range(concurrency)))
                elapsed = time.perf_counter() - t0
            client_after = os.times()
            assert not errors, errors[:5]
            per_round[kind].append({"requests": total, "seconds": elapsed, "cpu_s": meter.result,
                                    "client_cpu_s": (client_after.user + client_after.system)
                                    - (client_before.user + client_before.system)})
    out = {}
    for kind, rs in per_round.items():
        n = sum(x["requests"] for x in rs)
        out[kind] = Endpoint(
            requests=n, seconds=sum(x["seconds"] for x in rs),
            req_per_s_rounds=[x["requests"] / x["seconds"] for x in rs],
            cpu_ms_per_request={k: sum(x["cpu_s"][k] for x in rs) / n * 1000 for k in rs[0]["cpu_s"]},
            runtime_cpu_ms_rounds=[x["cpu_s"]["runtime"] / x["requests"] * 1000 for x in rs],
            client_cpu_ms_per_request=sum(x["client_cpu_s"] for x in rs) / n * 1000)
        log(f"{kind}: {out[kind].req_per_s:.0f} req/s over {n} requests, runtime CPU "
            f"{out[kind].cpu_ms_per_request['runtime']:.3f} ms/request (rounds: "
            f"{', '.join('%.2f' % v for v in out[kind].runtime_cpu_ms_rounds)})")
    return Throughput(**out)


def cold_starts(stack, runs: int) -> ColdStart:
    results = []
    for i in range(runs):
        name, port = f"worker-cold{i}", free_port()
        seen = {}
        orig_spawn = stack._spawn

        def spawn(*a, **kw):
            seen["spawn"] = time.monotonic()
            return orig_spawn(*a, **kw)

        stop = threading.Event()

        def poll():
            # wrangler's proxy accepts connections early and holds them until the runtime answers: one
            # blocked request is fine, its answer is the first 200.
            deadline = time.monotonic() + 180
            while not stop.is_set() and time.monotonic() < deadline:
                if "spawn" in seen:
                    try:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=60) as r:
                            if r.status == 200:
                                seen["healthz"] = time.monotonic()
                                seen["healthz_boot"] = time.clock_gettime(time.CLOCK_BOOTTIME)
                                return
                    except Exception:
                        pass
                time.sleep(0.01)

        t = threading.Thread(target=poll, daemon=True)
        stack._spawn = spawn
        try:
            t.start()
            launch_worker(stack, name, port)
            t.join(timeout=30)
        finally:
            del stack._spawn
            stop.set()
        runtime = worker_procs(stack, name, port).runtime
        # The runtime workerd's start, from /proc starttime (10 ms ticks) on CLOCK_BOOTTIME.
        workerd_start = seen["healthz_boot"] - start_boottime(runtime[0]) if len(runtime) == 1 else None
        # First requests: the first authenticated one fetches the JWKS and imports the key.
        c = Client(port)
        token = stack.mint("cold-user")
        st, _, first = c.request("GET", "/api/v1/approvals?status=pending", headers=bearer(token))
        assert st == 200, st
        warm = [c.request("GET", "/api/v1/approvals?status=pending", headers=bearer(stack.mint("cold-user")))[2]
                for _ in range(20)]
        hz = [c.request("GET", "/healthz")[2] for _ in range(20)]
        c.close()
        r = ColdRun(spawn_to_healthz_s=seen["healthz"] - seen["spawn"], first_inbox_ms=first * 1000,
                    warm_inbox_median_ms=statistics.median(warm) * 1000,
                    warm_healthz_median_ms=statistics.median(hz) * 1000, workerd_start_to_healthz_s=workerd_start)
        log(f"cold start {i + 1}/{runs}: "
            f"{json.dumps({k: round(v, 3) for k, v in r.__dict__.items() if v is not None})}")
        results.append(r)
        stack.stop_component(name)
    return ColdStart(runs=results)

"""The latency model: every request type through the real code path with each remote round trip delayed by a
stated RTT (the worker's dev/bench switch INJECT_LATENCY, per request `x-ringi-latency`; the reference server's
boto3 hook), for three placements. The hop between the caller and the serving side is added to each measured
time (not slept: a constant). Everything else — verification, D1 statements, SigV4, moto — runs for real."""
from __future__ import annotations

import json
import subprocess
import sys
import time

from common import Client
from harness import HERE, Paused, bearer, log, seed_dir, setup_seed
from ringi_stack import REGION, free_port
from results import Latency, Placements

APPROVER_EDGE_MS = 10
EDGE_REGION_MS = (80, 150)
IN_REGION_MS = 3
TYPES = ("view", "inbox", "register", "decision approve", "decision reject", "quorum vote (not final)",
         "quorum vote (final)")


def ringi_requests(stack, c: Client, paused: Paused, n: int, delays: str) -> tuple[dict, dict]:
    """n requests of each type with `delays` before each round trip: seconds per type, and the round trips the
    worker counted (the same for every request of a type)."""
    hdr = {"x-ringi-latency": delays}
    times = {t: [] for t in TYPES}
    trips = {}

    def timed(kind, method, path, body, headers, want):
        st, data, t = c.request(method, path, body, {**headers, **hdr})
        assert st == want, (kind, st, data[:300])
        times[kind].append(t)
        trips[kind] = c.last_headers.get("x-ringi-round-trips", "?")
        return json.loads(data) if data else None

    def register(token, approvers, quorum="any", kind=None):
        body = {"taskToken": token, "approvers": approvers, "quorum": quorum, "title": "Deploy", "summary": "bench",
                "timeoutSeconds": 3600}
        if kind:
            return timed(kind, "POST", "/api/v1/approvals", body, bearer(stack.api_key), 201)["id"]
        st, data, _ = c.request("POST", "/api/v1/approvals", body, bearer(stack.api_key))
        assert st == 201, (st, data)
        return json.loads(data)["id"]

    tokens = paused.start(3 * n)
    viewed = register(f"bench-synthetic-view-{time.time_ns()}", [{"sub": "bench-place"}, {"group": "ops"}])
    for i in range(n):
        timed("view", "GET", f"/api/v1/approvals/{viewed}", None, bearer(stack.mint("bench-place", groups=["ops"])), 200)
        timed("inbox", "GET", "/api/v1/approvals?status=pending", None,
              bearer(stack.mint("bench-place", groups=["ops"])), 200)
        single = register(tokens[3 * i], [{"sub": "bench-place"}], kind="register")
        timed("decision approve", "POST", f"/api/v1/approvals/{single}/decision", {"decision": "approve"},
              bearer(stack.mint("bench-place")), 200)
        rejected = register(tokens[3 * i + 1], [{"sub": "bench-place"}])
        timed("decision reject", "POST", f"/api/v1/approvals/{rejected}/decision", {"decision": "reject"},
              bearer(stack.mint("bench-place")), 200)
        both = register(tokens[3 * i + 2], [{"sub": "bench-place"}, {"sub": "bench-place-2"}], quorum="all")
        timed("quorum vote (not final)", "POST", f"/api/v1/approvals/{both}/decision", {"decision": "approve"},
              bearer(stack.mint("bench-place")), 200)
        timed("quorum vote (final)", "POST", f"/api/v1/approvals/{both}/decision", {"decision": "approve"},
              bearer(stack.mint("bench-place-2")), 200)
    return times, trips


def reference_decisions(stack, paused: Paused, n: int, port: int) -> tuple[list, list]:
    """n decisions (and n token saves) through the reference design's handlers, in-region delays on."""
    import secrets
    c = Client(port)
    saves, decisions = [], []
    for token in paused.start(n):
        aid = secrets.token_urlsafe(16)
        st, data, t = c.request("POST", "/save", {"approvalId": aid, "approverUserId": "bench-place", "taskToken": token})
        assert st == 200, (st, data)
        saves.append(t)
        st, data, t = c.request("POST", f"/approvals/{aid}/decision", {"decision": "approve"},
                                bearer(stack.mint("bench-place")))
        assert st == 200, (st, data)
        decisions.append(t)
    c.close()
    return saves, decisions


def lambda_init(stack, runs: int) -> list[float]:
    """A cold Lambda's own part, measured: a fresh Python interpreter importing boto3, loading the reference
    handlers (their module-level clients) and making its first DynamoDB call. Lambda's sandbox start comes on top."""
    code = ("import sys, time; import seed_server, boto3; "
            "m = seed_server.load(__import__('pathlib').Path(sys.argv[1]), 'seed_approve'); "
            "m.table.get_item(Key={'approvalId': 'cold'})")
    key = stack.aws("iam").create_access_key(UserName="seed-placement-lambda")["AccessKey"]
    env = {"AWS_ENDPOINT_URL": stack.moto_url, "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
           "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"], "TABLE_NAME": "seed-placement", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(HERE)}
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, str(seed_dir())], env=env, capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the cold Lambda stand-in failed: {done.stderr[-2000:]}")
        out.append((time.perf_counter() - t0) * 1000)
    return out


def placements(stack, n: int, cold_runs: int) -> Placements:
    port = free_port()
    url = stack._launch_worker("worker-placement", port, {**stack.worker_vars(), "PUBLIC_BASE_URL":
                                                          f"http://127.0.0.1:{port}", "INJECT_LATENCY": "header"})
    log(f"latency model: worker with INJECT_LATENCY=header at {url}")
    paused = Paused(stack)
    c = Client(port)
    # Warm-up: JWKS, the isolate, the statements.
    ringi_requests(stack, c, paused, 3, "d1=0,aws=0")
    measured, trips = {}, {}
    for delays in (f"d1={IN_REGION_MS},aws={IN_REGION_MS}", *(f"d1={r},aws={r}" for r in EDGE_REGION_MS),
                   *(f"d1={APPROVER_EDGE_MS},aws={r}" for r in EDGE_REGION_MS), "d1=0,aws=0"):
        t0 = time.monotonic()
        times, trips = ringi_requests(stack, c, paused, n, delays)
        measured[delays] = {k: Latency.of(v) for k, v in times.items()}
        log(f"  {delays}: " + ", ".join(f"{k} {measured[delays][k].median_ms:.0f}" for k in TYPES)
            + f" ms (median; {time.monotonic() - t0:.0f} s)")
    c.close()
    stack.stop_component("worker-placement")
    seed_port = free_port()
    setup_seed(stack, table="seed-placement", port=seed_port, inject_ms=IN_REGION_MS, name="seed-placement")
    reference_decisions(stack, paused, 3, seed_port)  # warm-up
    saves, decisions = reference_decisions(stack, paused, n, seed_port)
    stack.stop_component("seed-placement")
    init = lambda_init(stack, cold_runs)
    log(f"  reference (in-region {IN_REGION_MS} ms): decision {Latency.of(decisions).median_ms:.0f} ms, save "
        f"{Latency.of(saves).median_ms:.0f} ms (median); Lambda init {sorted(init)[len(init) // 2]:.0f} ms")
    return Placements(n=n, approver_edge_ms=APPROVER_EDGE_MS, edge_region_ms=list(EDGE_REGION_MS),
                      in_region_ms=IN_REGION_MS, round_trips=trips, measured=measured,
                      reference_decision=Latency.of(decisions), reference_save=Latency.of(saves),
                      lambda_init_ms=init)

"""D1 vs DynamoDB (`STORAGE=dynamodb`): the same worker build twice on the bench stack — one on its local D1, one on
the approvals table in moto — registering, viewing and deciding real paused executions, interleaved (the order
alternates each round). Latency per request type and the round trips each makes, as the worker counts them
(`x-ringi-round-trips`, sent because both run with the latency switch on and no delay asked for)."""
from __future__ import annotations

import json

from common import Client
from harness import APPROVER, Paused, bearer
from results import Latency

KINDS = ("register", "view", "decide")
BACKENDS = ("d1", "dynamodb")


def _trips(headers: dict) -> dict:
    raw = {k.lower(): v for k, v in headers.items()}.get("x-ringi-round-trips", "")
    return {k: int(v) for k, v in (p.split("=") for p in raw.split(";") if "=" in p)}


def storage_backends(stack, paused: Paused, n: int, warmup: int) -> dict:
    """{backend: {kind: {"latency": Latency, "round_trips": {...}}}} over n measured rounds after warmup."""
    extra = {"INJECT_LATENCY": "header", "REGISTER_RATE_PER_MINUTE": "100000"}
    ports = {"d1": int(stack.extra_worker("bench-d1", extra).rsplit(":", 1)[1]),
             "dynamodb": int(stack.extra_worker("bench-ddb", {**stack.dynamodb_vars("ringi-bench-approvals"),
                                                              **extra}).rsplit(":", 1)[1])}
    clients = {b: Client(p) for b, p in ports.items()}
    total = n + warmup
    tokens = paused.start(2 * total)
    jwts = [stack.mint(APPROVER) for _ in range(4 * total)]
    lat = {b: {k: [] for k in KINDS} for b in BACKENDS}
    trips = {b: {} for b in BACKENDS}

    def one(backend: str, i: int, token: str) -> None:
        c = clients[backend]
        st, data, t_reg = c.request("POST", "/api/v1/approvals", {
            "taskToken": token, "approvers": [{"sub": APPROVER}], "title": "Deploy payments-api v2.41.0",
            "summary": "bench", "timeoutSeconds": 3600}, bearer(stack.api_key))
        assert st == 201, (backend, st, data)
        r_reg = _trips(c.last_headers)
        aid = json.loads(data)["id"]
        st, data, t_view = c.request("GET", f"/api/v1/approvals/{aid}", None, bearer(jwts[2 * i]))
        assert st == 200, (backend, st, data)
        r_view = _trips(c.last_headers)
        st, data, t_dec = c.request("POST", f"/api/v1/approvals/{aid}/decision", {"decision": "approve"},
                                    bearer(jwts[2 * i + 1]))
        assert st == 200 and json.loads(data)["status"] == "approved", (backend, st, data)
        r_dec = _trips(c.last_headers)
        if i >= warmup:
            for kind, t, r in (("register", t_reg, r_reg), ("view", t_view, r_view), ("decide", t_dec, r_dec)):
                lat[backend][kind].append(t)
                trips[backend][kind] = r

    for i in range(total):
        order = BACKENDS if i % 2 == 0 else BACKENDS[::-1]
        for backend in order:
            one(backend, i, tokens[2 * i + (backend == "dynamodb")])
    for c in clients.values():
        c.close()
    assert paused.succeeded(paused.started) == paused.started, "every decided execution resumed"
    return {b: {k: {"latency": Latency.of(lat[b][k]), "round_trips": trips[b][k]} for k in KINDS} for b in BACKENDS}


def markdown(result: dict, n: int, warmup: int, when: str, machine: str, command: str) -> str:
    rows = []
    for kind in KINDS:
        for b in BACKENDS:
            x = result[b][kind]
            lt, rt = x["latency"], x["round_trips"]
            storage = rt.get("ddb", 0) if b == "dynamodb" else rt.get("d1", 0)
            rows.append(f"| {kind} | {b} | {lt.median_ms:.1f} | {lt.p99_ms:.1f} | {lt.mean_ms:.1f} | {storage} | "
                        f"{rt.get('sfn', 0)} |")
    return "\n".join([
        "## 10. Storage backends: D1 vs DynamoDB",
        "",
        f"Measured {when} on {machine} with `{command}`: the same worker build twice on the bench stack, one on its "
        "local D1 (workerd's SQLite), one on the approvals table in moto (`STORAGE=dynamodb`, signed with SigV4, over "
        f"loopback HTTP); {n} rounds after {warmup} warm-up rounds, each round register → view → approve of a real "
        "paused execution on both, interleaved. No RTT is modeled: both stores are local, so the numbers compare the "
        "work per request (round trips, signing, serialization), not a placement; with a real region every "
        "storage round trip adds its RTT (the round-trip column), which is where the backends differ.",
        "",
        "| request | backend | median ms | p99 ms | mean ms | storage round trips | Step Functions calls |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ])

"""Decision round trips side by side: ringi against the reference design's server (or a second worker), on real
paused executions of the same moto, interleaved."""
from __future__ import annotations

import contextlib
import json
import secrets

from common import Client, CpuMeter, WorkerProcs
from harness import APPROVER, Paused, bearer, worker_cpu
from results import Latency, SideBySide


def side_by_side(stack, paused: Paused, n: int, warmup: int, base_port: int, cpu_of_worker: WorkerProcs,
                 other_port: int | None = None, other_kind: str = "seed", other_cpu=None) -> SideBySide:
    """n + warmup decisions through ringi (worker on base_port) and through the other side (the reference design's
    server or a second worker), interleaved (the order alternates each round): latencies and CPU per decision."""
    total = n + warmup
    tokens = paused.start(2 * total)
    ringi_tokens, other_tokens = tokens[:total], tokens[total:]
    rc, oc = Client(base_port), Client(other_port)
    ringi_ids, other_ids, reg_ringi, reg_other = [], [], [], []
    cpu_reg = worker_cpu(cpu_of_worker)
    body = lambda tok: {"taskToken": tok, "approvers": [{"sub": APPROVER}], "title": "Deploy payments-api v2.41.0",  # noqa: E731
                        "summary": "bench", "timeoutSeconds": 3600}
    with cpu_reg:
        for i in range(total):
            st, data, t = rc.request("POST", "/api/v1/approvals", body(ringi_tokens[i]), bearer(stack.api_key))
            assert st == 201, (st, data)
            ringi_ids.append(json.loads(data)["id"])
            reg_ringi.append(t)
    for i in range(total):
        if other_kind == "seed":
            aid = secrets.token_urlsafe(16)
            st, data, t = oc.request("POST", "/save", {"approvalId": aid, "approverUserId": APPROVER,
                                                       "taskToken": other_tokens[i]})
            assert st == 200, (st, data)
        else:
            st, data, t = oc.request("POST", "/api/v1/approvals", body(other_tokens[i]), bearer(stack.api_key))
            assert st == 201, (st, data)
            aid = json.loads(data)["id"]
        other_ids.append(aid)
        reg_other.append(t)
    jwts = [stack.mint(APPROVER) for _ in range(2 * total)]
    ringi_path = lambda aid: f"/api/v1/approvals/{aid}/decision"  # noqa: E731
    other_path = (lambda aid: f"/approvals/{aid}/decision") if other_kind == "seed" else ringi_path
    lat = {"ringi": [], "other": []}

    def one(side: str, i: int):
        c, path, ids = (rc, ringi_path, ringi_ids) if side == "ringi" else (oc, other_path, other_ids)
        st, data, t = c.request("POST", path(ids[i]), {"decision": "approve"},
                                bearer(jwts[2 * i + (side != "ringi")]))
        assert st == 200, (side, st, data)
        return t

    for i in range(warmup):
        one("ringi", i), one("other", i)
    cpu_w = worker_cpu(cpu_of_worker)
    cpu_o = CpuMeter(other_cpu) if other_cpu else None
    with cpu_w, (cpu_o or contextlib.nullcontext()):
        for i in range(warmup, total):
            order = ("ringi", "other") if i % 2 == 0 else ("other", "ringi")
            for side in order:
                lat[side].append(one(side, i))
    rc.close(), oc.close()
    return SideBySide(
        n=n, warmup=warmup, executions_succeeded=paused.succeeded(paused.started), executions_started=paused.started,
        ringi=Latency.of(lat["ringi"]), other=Latency.of(lat["other"]),
        ringi_register=Latency.of(reg_ringi[warmup:]), other_register=Latency.of(reg_other[warmup:]),
        ringi_cpu_per_decision_ms={k: v / n * 1000 for k, v in cpu_w.result.items()},
        ringi_cpu_per_register_ms={k: v / total * 1000 for k, v in cpu_reg.result.items()},
        other_cpu_per_decision_ms={k: v / n * 1000 for k, v in cpu_o.result.items()} if cpu_o else None)

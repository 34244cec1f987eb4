"""Bounded loopback load on the inbox and the decision endpoints (decisions against a fresh pool of
real paused executions): no errors, no claim left behind. Duration: RINGI_LOAD_SECONDS (default 8: this is the
suite's check that the paths hold under concurrency; sustained load and its numbers are `make bench`'s load
section)."""
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from support.api import d1

SECONDS = float(os.environ.get("RINGI_LOAD_SECONDS", "8"))
POOL = 100
WORKERS = 8


def test_bounded_load_on_inbox_and_decisions(stack, api, workflows):
    user = "loader"
    runs = workflows.start_many(POOL)
    pool = []
    for arn, token in runs:
        r = api.register(token, approvers=[{"sub": user}])
        assert r.status_code == 201
        pool.append(r.json()["id"])
    headers = {"authorization": f"Bearer {stack.mint(user)}"}
    lock = threading.Lock()
    todo = list(pool)
    results = []  # (kind, status, seconds)
    deadline = time.monotonic() + SECONDS

    def worker(n):
        s = requests.Session()
        while time.monotonic() < deadline:
            with lock:
                approval_id = todo.pop() if todo and n % 2 == 0 else None
            t0 = time.monotonic()
            if approval_id:
                r = s.post(f"{stack.base_url}/api/v1/approvals/{approval_id}/decision", json={"decision": "approve"},
                           headers=headers, timeout=30)
                kind = "decision"
            else:
                r = s.get(f"{stack.base_url}/api/v1/approvals", params={"status": "pending"}, headers=headers, timeout=30)
                kind = "inbox"
            with lock:
                results.append((kind, r.status_code, time.monotonic() - t0))

    with ThreadPoolExecutor(max_workers=WORKERS) as ex:
        list(ex.map(worker, range(WORKERS)))
    errors = [(k, s) for k, s, _ in results if s != 200]
    for kind in ("inbox", "decision"):
        lat = sorted(t for k, _, t in results if k == kind)
        if lat:
            print(f"load {kind}: n={len(lat)} rps={len(lat) / SECONDS:.0f} median={statistics.median(lat) * 1000:.1f}ms "
                  f"p99={lat[int(len(lat) * 0.99) - 1] * 1000:.1f}ms")
    assert not errors, errors[:10]
    assert sum(1 for k, _, _ in results if k == "decision") == POOL - len(todo)
    assert sum(1 for k, _, _ in results if k == "inbox") > 50
    # No claim leaked and every decided approval really is decided.
    assert d1(stack, "SELECT COUNT(*) AS n FROM approvals WHERE status = 'claimed'") == [{"n": 0}]
    decided = [i for i in pool if i not in todo]
    rows = d1(stack, "SELECT status, COUNT(*) AS n FROM approvals WHERE id IN (%s) GROUP BY status"
              % ",".join(f"'{i}'" for i in decided))
    assert rows == [{"status": "approved", "n": len(decided)}]

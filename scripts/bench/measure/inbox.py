"""The inbox at scale: approvals bulk-loaded into the worker's local D1 file, then the first page through the
worker and the same SQL straight on the file."""
from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import time
from pathlib import Path

from common import Client
from harness import ROOT, bearer, launch_worker, log, worker_cpu, worker_procs
from ringi_stack import d1_file, free_port
from results import InboxScale, InboxSize, Latency


def sql_literal(sql: str, args: list) -> str:
    def lit(v):
        return str(v) if isinstance(v, int) else "'" + str(v).replace("'", "''") + "'"
    return re.sub(r"\?(\d+)", lambda m: lit(args[int(m.group(1)) - 1]), sql)


def inbox_sql(principals: int) -> str:
    out = subprocess.run(["cargo", "run", "-q", "-p", "ringi-core", "--example", "inbox_sql", "--", str(principals),
                          "pending"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def load_rows(db: Path, user_from: int, user_to: int, now_ms: int, rng: random.Random) -> None:
    """Approvals user_from..user_to-1 for the inbox user (half by sub, half by group, every 10th by both) and as
    many for 1,000 other users."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        ap, pr = [], []
        for i in range(user_from, user_to):
            for who in ("me", "other"):
                aid = f"{who[0]}{i:021d}"
                exp = now_ms + rng.randint(3600_000, 30 * 86400_000)
                # token_sha256 is unique (one approval per task): distinct per row.
                token_sha = f"{2 * i + (who == 'other'):064x}"
                ap.append((aid, f"synthetic-token-{aid}", token_sha, "pending", f"Deploy #{i}",
                           "A change to review.", 1, '{"executionArn":"arn:aws:states:us-east-1:1:execution:x:y"}',
                           now_ms, exp))
                if who == "me":
                    keys = [("sub", "inbox-user")] if i % 2 == 0 else [("group", "ops-team")]
                    if i % 10 == 0:
                        keys = [("sub", "inbox-user"), ("group", "ops-team")]
                else:
                    keys = [("sub", f"user-{i % 1000}")]
                for kind, value in keys:
                    pr.append((aid, kind, value, f"{kind}:{value}", 1, exp))
        con.executemany("INSERT INTO approvals (id, task_token, token_sha256, status, title, summary, approver_count, "
                        "context_json, created_at, expires_at) VALUES (?,?,?,?,?,?,?,?,?,?)", ap)
        con.executemany("INSERT INTO approval_principals (approval_id, kind, value, pkey, open, sort_at) "
                        "VALUES (?,?,?,?,?,?)", pr)
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def wrangler_d1(persist: Path, sql: str) -> list:
    out = subprocess.run(["wrangler", "d1", "execute", "DB", "--local", "--persist-to", str(persist), "--json",
                          "--command", sql], cwd=ROOT / "edge", env={**os.environ, "CI": "true"},
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"wrangler d1 execute failed: {out.stdout}\n{out.stderr}")
    return json.loads(out.stdout)[0]["results"]


def inbox_scale(stack, sizes: list[int], n: int, sql: str) -> InboxScale:
    name, port = "worker-inbox", free_port()
    persist = stack.state / f"{name}-d1"
    launch_worker(stack, name, port)
    db = d1_file(persist)
    rng = random.Random(7)
    now = int(time.time() * 1000)
    loaded, out = 0, InboxScale(sql=sql)
    for size in sizes:
        stack.stop_component(name)
        t0 = time.monotonic()
        load_rows(db, loaded, size, now, rng)
        loaded = size
        load_s = time.monotonic() - t0
        # The same SQL straight on the file (python's SQLite; the worker is stopped).
        con = sqlite3.connect(db)
        args = ["sub:inbox-user", "group:ops-team", int(time.time() * 1000), -(2 ** 62), "", 26]
        direct = []
        for _ in range(min(n, 50)):
            t = time.perf_counter()
            rows = con.execute(sql, args).fetchall()
            direct.append(time.perf_counter() - t)
        assert len(rows) == 26, len(rows)
        python_plan = [r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql, args)]
        counts = con.execute("SELECT (SELECT COUNT(*) FROM approvals), (SELECT COUNT(*) FROM approval_principals)"
                             ).fetchone()
        con.close()
        d1_plan = None
        if size == sizes[-1]:
            d1_plan = [r["detail"] for r in wrangler_d1(persist, "EXPLAIN QUERY PLAN " + sql_literal(sql, args))]
        launch_worker(stack, name, port)
        wp = worker_procs(stack, name, port)
        c = Client(port)
        tokens = [stack.mint("inbox-user", groups=["ops-team"]) for _ in range(n + 10)]
        for i in range(10):
            st, data, _ = c.request("GET", "/api/v1/approvals?status=pending", headers=bearer(tokens[i]))
            assert st == 200, (st, data[:200])
        assert len(json.loads(data)["items"]) == 25
        lat = []
        deadline = time.monotonic() + 120
        meter = worker_cpu(wp)
        with meter:
            for i in range(10, n + 10):
                st, data, t = c.request("GET", "/api/v1/approvals?status=pending", headers=bearer(tokens[i]))
                assert st == 200, st
                lat.append(t)
                if time.monotonic() > deadline:
                    break
        c.close()
        d = out.sizes[size] = InboxSize(
            load_s=load_s, rows={"approvals": counts[0], "approval_principals": counts[1]}, latency=Latency.of(lat),
            cpu_ms={k: v / len(lat) * 1000 for k, v in meter.result.items()},
            python_sqlite_ms=statistics.median(direct) * 1000, python_plan=python_plan, d1_plan=d1_plan)
        log(f"inbox at {size}: median {d.latency.median_ms:.1f} ms, p99 {d.latency.p99_ms:.1f} ms, runtime CPU "
            f"{d.cpu_ms['runtime']:.1f} ms, SQL alone {d.python_sqlite_ms:.1f} ms")
    stack.stop_component(name)
    return out

#!/usr/bin/env python3
"""`make bench`: ringi's benchmarks on its own local stack, written to docs/benchmarks.md.

    cd /work/main && . scripts/env.sh && python scripts/bench/run.py            # everything but opt levels
    BENCH_OPT_LEVELS=1 python scripts/bench/run.py                              # + opt-level "s" builds (~6+ min)
    BENCH_TWIGGY=1 python scripts/bench/run.py                                  # + what the SPA wasm is made of
    python scripts/bench/run.py --quick --no-write                              # small counts, smoke run
    python scripts/bench/run.py --only spa                                      # SPA sizes + first load (`make
                                                                                # bench BENCH_ONLY=spa`), ~2 min

Starts its own stack with scripts/ringi_stack.Stack (worker 8887, moto 5410, IdP 9410; state in .ringi/bench),
then measures:
  1. decision round trip, ringi vs the seed design (article 000's Lambda behind a local API-Gateway-like server,
     scripts/bench/seed_server.py), same moto, same run, real paused executions, interleaved;
  2. workerd CPU per request type (from /proc), cold start, bundle size;
  3. SPA transfer size and time to interactive on a deep link under 4x CPU + Slow 4G;
  4. the inbox at 1k/10k/100k pending approvals of one user (bulk-loaded into the local D1 SQLite file);
  5. JWT verification throughput;
  6. (BENCH_OPT_LEVELS=1) opt-level "s" vs "z" for both wasm artefacts.
Every loop is bounded in count and time; everything listens on 127.0.0.1; everything started is stopped.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import re
import secrets
import shlex
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(HERE))

import ringi_stack  # noqa: E402
from ringi_stack import REGION, Ports, Stack, free_port, fresh_state, http_ok  # noqa: E402

from common import (Client, CpuMeter, WorkerProcs, br_sizes, cpu_ticks, gz, machine, start_boottime,  # noqa: E402
                    summary, versions)

PORTS = Ports(worker=8887, moto=5410, idp=9410, mailbox=8045)
SEED_PORT = 8890
STATE = ROOT / ".ringi" / "bench"
DOC = ROOT / "docs" / "benchmarks.md"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # as tests/e2e/test_smoke.py
# Chromium DevTools' "Slow 4G" preset, exactly: `Slow4GConditions` in devtools-frontend
# front_end/core/sdk/NetworkManager.ts (the preset called "Fast 3G" before May 2024; a devtools-frontend unit test
# asserts these numbers): download 1.6 Mb/s × 0.9 = 180,000 B/s, upload 750 kb/s × 0.9 = 84,375 B/s, latency
# 150 ms × 3.75 = 562.5 ms (added once per request; bandwidth shared by parallel requests; no TCP/TLS handshakes).
SLOW_4G = {"offline": False, "latency": 150 * 3.75, "downloadThroughput": 1.6 * 1000 * 1000 / 8 * 0.9,
           "uploadThroughput": 750 * 1000 / 8 * 0.9, "connectionType": "cellular4g"}
assert (SLOW_4G["downloadThroughput"], SLOW_4G["uploadThroughput"], SLOW_4G["latency"]) == (180_000, 84_375, 562.5)
# (key, throttled, signed in as, warm HTTP cache), each measured on /a/{id} (see spa_tti).
SPA_CONDITIONS = [("throttled", True, None, False), ("signed_in_throttled", True, "bench-inbox", False),
                  ("throttled_warm", True, None, True), ("signed_in_warm_throttled", True, "bench-inbox", True),
                  ("unthrottled", False, None, False), ("signed_in_unthrottled", False, "bench-inbox", False)]
SPA_LABELS = {"throttled": "signed out, cold, 4× CPU + Slow 4G", "signed_in_throttled": "signed in, cold, 4× CPU + Slow 4G",
              "throttled_warm": "signed out, warm cache, 4× CPU + Slow 4G",
              "signed_in_warm_throttled": "signed in, warm cache, 4× CPU + Slow 4G",
              "unthrottled": "signed out, cold, no throttling (local)",
              "signed_in_unthrottled": "signed in, cold, no throttling (local)"}
APPROVER = "bench-approver"
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[bench {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def seed_dir() -> Path:
    return Path(os.environ.get("RINGI_SEED_DIR", ROOT.parent / "shared" / "bench")).resolve()


def bearer(token: str) -> dict:
    return {"authorization": f"Bearer {token}"}


# ============================================================================================ worker processes
def find_proc(stack: Stack, name: str):
    return next(p for p in stack.procs if p.name == name)


def stop_proc(stack: Stack, name: str) -> None:
    stack.stop_component(name)


def worker_procs(stack: Stack, name: str, port: int) -> WorkerProcs:
    return WorkerProcs(find_proc(stack, name).popen.pid, port)


def worker_cpu(wp: WorkerProcs) -> CpuMeter:
    return CpuMeter(wp.ticks)


def worker_vars(stack: Stack, port: int) -> dict:
    return {**stack.worker_vars(), "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}


@contextlib.contextmanager
def other_root(root: Path):
    """Launch a worker from another tree (edge/ with its own build, dist/): the stack launcher runs wrangler in
    ROOT/edge, so point ROOT elsewhere for the duration of the launch."""
    saved = ringi_stack.ROOT
    ringi_stack.ROOT = root
    try:
        yield
    finally:
        ringi_stack.ROOT = saved


def make_tree(tree: Path, edge_build: Path, dist: Path) -> Path:
    """A tree `wrangler dev` can run in (edge/ with wrangler.toml, migrations and a build; dist/ beside it), made of
    copies: other people rebuilding edge/build or dist/ (wrangler dev reloads on change) cannot touch it."""
    import shutil
    if tree.exists():
        shutil.rmtree(tree)
    (tree / "edge").mkdir(parents=True)
    shutil.copytree(edge_build, tree / "edge" / "build")
    shutil.copytree(dist, tree / "dist", ignore=shutil.ignore_patterns(".stage"))
    shutil.copytree(ROOT / "edge" / "migrations", tree / "edge" / "migrations")
    shutil.copy2(ROOT / "edge" / "wrangler.toml", tree / "edge" / "wrangler.toml")
    html = (tree / "dist" / "index.html").read_text()
    missing = [ref for ref in re.findall(r'(?:src|href|content)="/([^"]+)"', html) if not (tree / "dist" / ref).exists()]
    if missing or not (tree / "edge" / "build" / "worker" / "shim.mjs").exists():
        raise RuntimeError(f"{dist} or {edge_build} is incomplete (a build in progress?): missing {missing}")
    return tree


def run_workers_from(stack: Stack, tree: Path) -> None:
    """From now on the stack's workers run from `tree` (see make_tree); `stack.bench_tree` may be changed."""
    stack.bench_tree = tree

    def launch(name, port, variables):
        with other_root(stack.bench_tree):
            return Stack._launch_worker(stack, name, port, variables)

    stack._launch_worker = launch


@contextlib.contextmanager
def tree_for(stack: Stack, tree: Path):
    saved, stack.bench_tree = stack.bench_tree, tree
    try:
        yield
    finally:
        stack.bench_tree = saved


# ============================================================================================ AWS side
def definition(timeout: int = 3600) -> str:
    """A Standard workflow paused on an SQS `.waitForTaskToken` task (as tests/e2e/conftest.py), so that the
    benchmark can collect the task tokens from one queue."""
    return json.dumps({
        "StartAt": "RequestApproval",
        "States": {
            "RequestApproval": {
                "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl.$": "$.queueUrl",
                               "MessageBody": {"taskToken.$": "$$.Task.Token", "request.$": "$.request"}},
                "TimeoutSeconds": timeout, "ResultPath": "$.approval",
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Failed"}],
                "Next": "Approved"},
            "Approved": {"Type": "Pass", "End": True},
            "Failed": {"Type": "Pass", "End": True},
        }})


class Paused:
    """Real paused moto executions and their task tokens."""

    def __init__(self, stack: Stack):
        self.sfn, self.sqs = stack.aws("stepfunctions"), stack.aws("sqs")
        self.arn = self.sfn.create_state_machine(name=f"ringi-bench-{uuid.uuid4().hex[:6]}", definition=definition(),
                                                 roleArn="arn:aws:iam::123456789012:role/ringi-bench")["stateMachineArn"]
        self.queue = self.sqs.create_queue(QueueName=f"ringi-bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        self.started = 0

    def start(self, n: int, timeout: float = 300) -> list[str]:
        """Starts n executions and returns their n task tokens once all are paused."""
        names = set()
        for _ in range(n):
            name = f"r{self.started:05d}-{uuid.uuid4().hex[:6]}"
            self.sfn.start_execution(stateMachineArn=self.arn, name=name,
                                     input=json.dumps({"queueUrl": self.queue, "request": name}))
            names.add(name)
            self.started += 1
        tokens = {}
        deadline = time.monotonic() + timeout
        while len(tokens) < n and time.monotonic() < deadline:
            msgs = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for m in msgs.get("Messages", []):
                body = json.loads(m["Body"])
                if body["request"] in names:
                    tokens[body["request"]] = body["taskToken"]
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=m["ReceiptHandle"])
        if len(tokens) < n:
            raise RuntimeError(f"only {len(tokens)} of {n} executions paused within {timeout:.0f}s")
        return list(tokens.values())

    def succeeded(self, expect: int, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while True:
            count = 0
            for page in self.sfn.get_paginator("list_executions").paginate(stateMachineArn=self.arn,
                                                                           statusFilter="SUCCEEDED"):
                count += len(page["executions"])
            if count >= expect or time.monotonic() > deadline:
                return count
            time.sleep(0.5)


def setup_seed(stack: Stack, table: str = "seed-approvals"):
    """The seed design's AWS side: its DynamoDB table and an IAM user for its Lambdas; then the server."""
    stack.aws("dynamodb").create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                                       KeySchema=[{"AttributeName": "approvalId", "KeyType": "HASH"}],
                                       AttributeDefinitions=[{"AttributeName": "approvalId", "AttributeType": "S"}])
    iam = stack.aws("iam")
    iam.create_user(UserName="seed-lambda")
    iam.put_user_policy(UserName="seed-lambda", PolicyName="seed-lambda", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Resource": "*", "Action": [
            "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem",
            "states:SendTaskSuccess", "states:SendTaskFailure"]}]}))
    key = iam.create_access_key(UserName="seed-lambda")["AccessKey"]
    proc = stack._spawn("seed", [sys.executable, str(HERE / "seed_server.py"), "--port", str(SEED_PORT),
                                 "--issuer", stack.issuer, "--client-id", stack.client_id, "--seed-dir", str(seed_dir())],
                        env={"AWS_ENDPOINT_URL": stack.moto_url, "AWS_DEFAULT_REGION": REGION,
                             "AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                             "TABLE_NAME": table, "PYTHONUNBUFFERED": "1"},
                        drop=("AWS_",))
    stack._wait(proc, lambda: http_ok(f"http://127.0.0.1:{SEED_PORT}/healthz"), 30)
    return proc


# ============================================================================================ 0. sizes
def bundle_sizes(edge_build: Path, dist: Path) -> dict:
    worker = {}
    for f in ("index_bg.wasm", "index.js"):
        data = (edge_build / f).read_bytes()
        worker[f] = {"raw": len(data), "gzip": gz(data)}
    worker["total"] = {k: sum(v[k] for v in worker.values()) for k in ("raw", "gzip")}
    return {"worker": worker, "spa": spa_sizes(dist)}


def spa_sizes(dist: Path) -> dict:
    """Everything dist/index.html makes the browser load: itself, boot.js, CSS, the app JS (modulepreload) and
    wasm (preload), favicon and manifest."""
    html = (dist / "index.html").read_text()
    refs = re.findall(r'(?:src|href|content)="(/[^"]+)"', html)
    files = {"index.html": (dist / "index.html").read_bytes()}
    for ref in refs:
        p = dist / ref.lstrip("/")
        if p.is_file():
            files[ref.lstrip("/")] = p.read_bytes()
    brs = br_sizes(list(files.values()))
    out = {name: {"raw": len(b), "gzip": gz(b), "br": n} for (name, b), n in zip(files.items(), brs)}
    wasm = next(k for k in out if k.endswith(".wasm"))
    return {"files": out, "total": {k: sum(v[k] for v in out.values()) for k in ("raw", "gzip", "br")},
            "wasm": out[wasm]}


# ============================================================================================ 1. cold start
def cold_starts(stack: Stack, runs: int) -> dict:
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
            stack._launch_worker(name, port, worker_vars(stack, port))
            t.join(timeout=30)
        finally:
            del stack._spawn
            stop.set()
        r = {"spawn_to_healthz_s": seen["healthz"] - seen["spawn"]}
        runtime = worker_procs(stack, name, port).runtime
        if len(runtime) == 1:
            # The runtime workerd's start, from /proc starttime (10 ms ticks) on CLOCK_BOOTTIME.
            r["workerd_start_to_healthz_s"] = seen["healthz_boot"] - start_boottime(runtime[0])
        # First requests: the first authenticated one fetches the JWKS and imports the key.
        c = Client(port)
        token = stack.mint("cold-user")
        st, _, first = c.request("GET", "/api/v1/approvals?status=pending", headers=bearer(token))
        assert st == 200, st
        warm = [c.request("GET", "/api/v1/approvals?status=pending", headers=bearer(stack.mint("cold-user")))[2]
                for _ in range(20)]
        hz = [c.request("GET", "/healthz")[2] for _ in range(20)]
        c.close()
        r.update(first_inbox_ms=first * 1000, warm_inbox_median_ms=statistics.median(warm) * 1000,
                 warm_healthz_median_ms=statistics.median(hz) * 1000)
        log(f"cold start {i + 1}/{runs}: {json.dumps({k: round(v, 3) for k, v in r.items()})}")
        results.append(r)
        stop_proc(stack, name)
    keys = results[0].keys()
    return {"runs": results, "median": {k: statistics.median(r[k] for r in results if k in r) for k in keys}}


# ============================================================================================ 2. side by side
def side_by_side(stack: Stack, paused: Paused, n: int, warmup: int, base_port: int, cpu_of_worker,
                 other_port: int | None = None, other_kind: str = "seed", other_cpu=None) -> dict:
    """n + warmup decisions through ringi (worker on base_port) and through the other side (the seed server or a
    second worker), interleaved (the order alternates each round). Returns latencies and CPU per decision."""
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
    done = paused.succeeded(paused.started)
    out = {
        "n": n, "warmup": warmup, "executions_succeeded": done, "executions_started": paused.started,
        "ringi": summary(lat["ringi"]), "other": summary(lat["other"]),
        "ringi_register": summary(reg_ringi[warmup:]), "other_register": summary(reg_other[warmup:]),
        "ringi_cpu_per_decision_ms": {k: v / n * 1000 for k, v in cpu_w.result.items()},
        "ringi_cpu_per_register_ms": {k: v / total * 1000 for k, v in cpu_reg.result.items()},
    }
    if cpu_o:
        out["other_cpu_per_decision_ms"] = {k: v / n * 1000 for k, v in cpu_o.result.items()}
    out["ratio_median"] = out["ringi"]["median_ms"] / out["other"]["median_ms"]
    out["ratio_p99"] = out["ringi"]["p99_ms"] / out["other"]["p99_ms"]
    return out


# ============================================================================================ 3. request types
def request_types(stack: Stack, wp: WorkerProcs, n: int, rounds: int) -> dict:
    c = Client(stack.ports.worker)
    inbox_ids = []
    for i in range(30):
        st, data, _ = c.request("POST", "/api/v1/approvals", {
            "taskToken": f"bench-synthetic-{uuid.uuid4()}", "approvers": [{"sub": "bench-inbox"}, {"group": "ops"}],
            "title": f"Deploy #{i}", "summary": "A change to review. " * 8, "timeoutSeconds": 86400 + i * 60,
            "context": {"executionArn": f"arn:aws:states:us-east-1:123456789012:execution:demo:{i}"}},
            bearer(stack.api_key))
        assert st == 201, (st, data)
        inbox_ids.append(json.loads(data)["id"])
    kinds = {
        "healthz": lambda i: ("GET", "/healthz", None, {}, 200),
        "verify (JWT → 404, no D1)": lambda i: ("GET", "/api/v1/approvals/x", None, bearer(tokens[i]), 404),
        "view (GET one approval)": lambda i: ("GET", f"/api/v1/approvals/{inbox_ids[i % 30]}", None,
                                              bearer(tokens[i]), 200),
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
        out[kind] = {"latency": summary(lat), "cpu_ms_rounds": cpus,
                     "cpu_ms": {k: statistics.median(r[k] for r in cpus) for k in cpus[0]}}
        log(f"{kind}: median {out[kind]['latency']['median_ms']:.2f} ms, workerd runtime CPU "
            f"{out[kind]['cpu_ms']['runtime']:.2f} ms/request")
    c.close()
    return {"types": out, "inbox_ids": inbox_ids}


# ============================================================================================ 4. JWT throughput
def throughput(stack: Stack, wp: WorkerProcs, concurrency: int, max_requests: int, max_seconds: float,
               rounds: int = 4) -> dict:
    """`rounds` alternating rounds per endpoint (healthz, verify, healthz, verify, …), each at most
    max_requests/rounds requests or max_seconds/rounds seconds, so that load changes hit both alike."""
    tokens = [stack.mint("bench-throughput") for _ in range(500)]
    kinds = [("healthz (no auth)", "/healthz", False, 200), ("JWT verify → 404", "/api/v1/approvals/x", True, 404)]
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
        n, secs = sum(x["requests"] for x in rs), sum(x["seconds"] for x in rs)
        out[kind] = {"requests": n, "seconds": secs, "req_per_s": n / secs,
                     "req_per_s_rounds": [x["requests"] / x["seconds"] for x in rs],
                     "cpu_ms_per_request": {k: sum(x["cpu_s"][k] for x in rs) / n * 1000 for k in rs[0]["cpu_s"]},
                     "runtime_cpu_ms_rounds": [x["cpu_s"]["runtime"] / x["requests"] * 1000 for x in rs],
                     "client_cpu_ms_per_request": sum(x["client_cpu_s"] for x in rs) / n * 1000}
        log(f"{kind}: {out[kind]['req_per_s']:.0f} req/s over {n} requests, runtime CPU "
            f"{out[kind]['cpu_ms_per_request']['runtime']:.3f} ms/request (rounds: "
            f"{', '.join('%.2f' % v for v in out[kind]['runtime_cpu_ms_rounds'])})")
    a, b = out["JWT verify → 404"], out["healthz (no auth)"]
    # Paired rounds (each verify round against the healthz round just before it), then the median.
    out["verify_cpu_ms_rounds"] = [x - y for x, y in zip(a["runtime_cpu_ms_rounds"], b["runtime_cpu_ms_rounds"])]
    out["verify_cpu_ms"] = statistics.median(out["verify_cpu_ms_rounds"])
    out["verifications_per_cpu_second"] = 1000 / a["cpu_ms_per_request"]["runtime"]
    return out


# ============================================================================================ 5. inbox at scale
def d1_file(persist: Path) -> Path:
    files = [p for p in (persist / "v3" / "d1").glob("*/*.sqlite") if p.name != "metadata.sqlite"]
    if len(files) != 1:
        raise RuntimeError(f"expected one D1 database under {persist}, found {files}")
    return files[0]


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


def inbox_scale(stack: Stack, sizes: list[int], n: int, sql: str) -> dict:
    name, port = "worker-inbox", free_port()
    persist = stack.state / f"{name}-d1"
    stack._launch_worker(name, port, worker_vars(stack, port))
    db = d1_file(persist)
    rng = random.Random(7)
    now = int(time.time() * 1000)
    loaded, out = 0, {"sizes": {}, "sql": sql}
    for size in sizes:
        stop_proc(stack, name)
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
        stack._launch_worker(name, port, worker_vars(stack, port))
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
        out["sizes"][size] = {"load_s": load_s, "rows": {"approvals": counts[0], "approval_principals": counts[1]},
                              "latency": summary(lat), "cpu_ms": {k: v / len(lat) * 1000 for k, v in meter.result.items()},
                              "python_sqlite_ms": statistics.median(direct) * 1000, "python_plan": python_plan}
        if d1_plan:
            out["sizes"][size]["d1_plan"] = d1_plan
        log(f"inbox at {size}: median {out['sizes'][size]['latency']['median_ms']:.1f} ms, "
            f"p99 {out['sizes'][size]['latency']['p99_ms']:.1f} ms, runtime CPU "
            f"{out['sizes'][size]['cpu_ms']['runtime']:.1f} ms, SQL alone {statistics.median(direct) * 1000:.1f} ms")
    stop_proc(stack, name)
    return out


# ============================================================================================ 6. SPA
# In the page, before any script: when the app shell first appears, when the measured view appears, when the
# page starts leaving for the Hosted UI, and when WebAssembly compilation/instantiation starts and resolves.
SPA_PROBE = """(() => {
  const selector = %s;
  const mark = () => {
    if (window.__ringiShell === undefined && document.querySelector('.app'))
      window.__ringiShell = performance.now();
    if (window.__ringiReady === undefined && document.querySelector(selector))
      window.__ringiReady = performance.now();
  };
  new MutationObserver(mark).observe(document, {subtree: true, childList: true, attributes: true,
                                                attributeFilter: ['data-testid']});
  window.addEventListener('beforeunload', () => { window.__ringiLeave ??= performance.now(); });
  window.__ringiWasm = [];
  for (const name of ['instantiateStreaming', 'instantiate', 'compileStreaming', 'compile']) {
    const original = WebAssembly[name];
    if (typeof original !== 'function') continue;
    WebAssembly[name] = function (...args) {
      const entry = {name, start: performance.now()};
      window.__ringiWasm.push(entry);
      const result = original.apply(this, args);
      result.then(() => { entry.end = performance.now(); }, () => { entry.end = performance.now(); entry.failed = true; });
      return result;
    };
  }
})();"""

SPA_STATS = """() => {
  const nav = performance.getEntriesByType('navigation')[0] || {};
  const res = performance.getEntriesByType('resource').map(e => ({
    name: new URL(e.name).pathname, start: e.startTime, response_start: e.responseStart, end: e.responseEnd,
    transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize, duration: e.duration,
    initiator: e.initiatorType}));
  return {ready: window.__ringiReady, leave: window.__ringiLeave, shell: window.__ringiShell,
          fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
          html: {response_start: nav.responseStart, end: nav.responseEnd, transfer: nav.transferSize,
                 encoded: nav.encodedBodySize, decoded: nav.decodedBodySize},
          wasm: window.__ringiWasm || [], resources: res};
}"""


def spa_steps(stats: dict, end_ms: float) -> dict:
    """One run's load, step by step (ms from navigation start): the HTML, each request with its bytes, the
    WebAssembly compile+instantiate, the first render of the app shell and the end (view shown or redirect)."""
    reqs = [r for r in stats["resources"] if r["start"] < end_ms]
    wasm_res = next((r for r in reqs if r["name"].endswith(".wasm")), None)
    inst = next((w for w in stats["wasm"] if w.get("end") and w["name"].startswith("instantiate")), None)
    # Requests that happen one after another: a request starts a new wave when it starts after every request of
    # the previous wave has ended (DevTools throttling adds the latency once per request).
    waves, wave_end = 1, stats["html"]["end"] or 0
    for r in sorted((r for r in reqs if r["transfer"]), key=lambda r: r["start"]):  # not the ones from the HTTP cache
        if r["start"] >= wave_end - 1:
            waves += 1
        wave_end = max(wave_end, r["end"]) if r["start"] >= wave_end - 1 else wave_end
    return {
        "end_ms": end_ms, "shell_ms": stats.get("shell"), "fcp_ms": stats.get("fcp"), "html": stats["html"],
        "requests": [{k: r[k] for k in ("name", "start", "end", "transfer", "encoded", "decoded")} for r in reqs],
        "bytes_before_end": (stats["html"].get("transfer") or 0) + sum(r["transfer"] or 0 for r in reqs),
        "serial_waves": waves,
        "wasm_instantiate": {"start": inst["start"], "end": inst["end"],
                             "after_last_byte": inst["end"] - wasm_res["end"] if wasm_res else None} if inst else None,
    }


def spa_tti(stack: Stack, base_url: str, approval_id: str, runs: int, throttle: bool,
            signed_in_as: str | None = None, warm: bool = False) -> dict:
    """Median time to interactive of the deep link /a/{approval_id}, a fresh browser context per run.
    Signed out: until the page starts leaving for the Hosted UI (else `[data-testid=app-ready]`).
    Signed in (a session put into sessionStorage the way the SPA keeps it): until the approval's title is
    rendered (`[data-testid=approval-title]`). Cold: HTTP cache disabled. Warm: the same link loaded once in the
    context first (HTTP cache on, as a phone opening the link a second time), then measured.
    All times are `performance.now()` in the page (origin = navigation start)."""
    from playwright.sync_api import sync_playwright
    selector = "[data-testid=approval-title]" if signed_in_as else "[data-testid=app-ready]"
    results = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            for _ in range(runs):
                context = browser.new_context()
                page = context.new_page()
                page.add_init_script(SPA_PROBE % json.dumps(selector))
                if signed_in_as:
                    # The shape of app/src/auth.rs `Session` (sessionStorage['ringi.session']).
                    now_ms = int(time.time() * 1000)
                    session = {"bearer": stack.mint(signed_in_as), "expiresAt": now_ms + 3600_000,
                               "obtainedAt": now_ms, "viaReauth": False}
                    page.add_init_script("if (location.origin === %s) sessionStorage.setItem('ringi.session', %s);"
                                         % (json.dumps(base_url), json.dumps(json.dumps(session))))
                redirected = {}
                cdp = context.new_cdp_session(page)

                def to_idp(event):
                    # Aborted: the navigation is dropped and the SPA's document stays, so its timings can be read.
                    # (CDP's Fetch domain, not Playwright's routing, which would turn the HTTP cache off.)
                    redirected.setdefault("t", time.monotonic())
                    cdp.send("Fetch.failRequest", {"requestId": event["requestId"], "errorReason": "Aborted"})

                cdp.on("Fetch.requestPaused", to_idp)
                cdp.send("Fetch.enable", {"patterns": [{"urlPattern": f"{stack.idp_url}/*"}]})
                cdp.send("Network.enable")
                cdp.send("Network.setCacheDisabled", {"cacheDisabled": not warm})
                if throttle:
                    cdp.send("Network.emulateNetworkConditions", SLOW_4G)
                    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})

                def load():
                    redirected.clear()
                    page.goto(f"{base_url}/a/{approval_id}", wait_until="commit", timeout=120_000)
                    deadline, ready_at = time.monotonic() + 120, None
                    while time.monotonic() < deadline:
                        ready, leave = page.evaluate("[window.__ringiReady, window.__ringiLeave]")
                        if leave is not None and "t" in redirected:
                            break
                        if ready is not None:
                            # Signed out, the app is ready the moment it starts the sign-in: wait for the redirect.
                            ready_at = ready_at or time.monotonic()
                            if signed_in_as or time.monotonic() - ready_at > 3:
                                break
                        time.sleep(0.05)
                    else:
                        raise RuntimeError(f"the SPA never showed {selector} nor redirected to sign in")
                    time.sleep(0.1)
                    return page.evaluate(SPA_STATS)

                if warm:
                    load()
                stats = load()
                leave, ready = stats.get("leave"), stats.get("ready")
                if signed_in_as and ready is not None:
                    r = {"tti_ms": ready, "ended_by": "approval rendered"}
                elif leave is not None:
                    r = {"tti_ms": leave, "ended_by": "sign-in redirect"}
                else:
                    r = {"tti_ms": ready, "ended_by": "app-ready"}
                r.update(spa_steps(stats, r["tti_ms"]))
                r["fcp_ms"] = stats.get("fcp")
                r["resources"] = [{"name": x["name"], "transfer": x["transfer"], "encoded": x["encoded"],
                                   "decoded": x["decoded"], "duration": x["duration"]} for x in stats["resources"]]
                results.append(r)
                context.close()
        finally:
            browser.close()
    fcps = [r["fcp_ms"] for r in results if r.get("fcp_ms")]
    return {"runs": results, "median_tti_ms": statistics.median(r["tti_ms"] for r in results),
            "min_tti_ms": min(r["tti_ms"] for r in results), "max_tti_ms": max(r["tti_ms"] for r in results),
            "median_fcp_ms": statistics.median(fcps) if fcps else None,
            "ended_by": sorted({r["ended_by"] for r in results}), "steps": median_steps(results)}


def median_steps(results: list[dict]) -> list[tuple[str, float | None, float | None, int | None]]:
    """(step, median start ms, median end ms, median bytes) over runs, in the order of a typical run."""
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    rows = [("HTML (navigation → last byte)", 0.0, med([r["html"]["end"] for r in results if r["html"].get("end")]),
             med([r["html"]["transfer"] for r in results if r["html"].get("transfer") is not None]))]
    names = []
    for r in results:
        for q in r["requests"]:
            key = re.sub(r"-[0-9a-f]{8,16}(?=[._])", "-…", q["name"])
            key = re.sub(r"^/api/v1/approvals/[^/]+$", "/api/v1/approvals/{id}", key)
            if key not in names:
                names.append(key)
    for key in names:
        hits = []
        for r in results:
            for q in r["requests"]:
                k = re.sub(r"-[0-9a-f]{8,16}(?=[._])", "-…", q["name"])
                k = re.sub(r"^/api/v1/approvals/[^/]+$", "/api/v1/approvals/{id}", k)
                if k == key:
                    hits.append(q)
                    break
        rows.append((f"GET {key}", med([q["start"] for q in hits]), med([q["end"] for q in hits]),
                     med([q["transfer"] for q in hits])))
    inst = [r["wasm_instantiate"] for r in results if r.get("wasm_instantiate")]
    if inst:
        rows.append(("wasm compile + instantiate (streaming; resolves after the last byte by "
                     f"{med([i['after_last_byte'] for i in inst if i['after_last_byte'] is not None]) or 0:.0f} ms)",
                     med([i["start"] for i in inst]), med([i["end"] for i in inst]), None))
    rows.append(("first render of the app shell", None, med([r["shell_ms"] for r in results if r.get("shell_ms")]),
                 None))
    rows.append(("end: " + "/".join(sorted({r["ended_by"] for r in results})), None,
                 med([r["tti_ms"] for r in results]), med([r["bytes_before_end"] for r in results])))
    rows.append((f"serial request waves (HTML included): {med([r['serial_waves'] for r in results]):.0f}", None, None,
                 None))
    return rows


# ============================================================================================ 7. opt levels
def build_opt_levels() -> dict:
    """Both wasm artefacts at opt-level "z" (the workspace profile; default target dir, so incremental after `make
    build`) and "s" (CARGO_PROFILE_RELEASE_OPT_LEVEL=s, CARGO_TARGET_DIR=target/opt-s), from the same sources, into
    target/opt-{z,s}/ — never touching edge/build or dist/."""
    out = {}
    for level in ("z", "s"):
        base = ROOT / "target" / f"opt-{level}"
        base.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        if level == "s":
            env.update(CARGO_TARGET_DIR=str(base), CARGO_PROFILE_RELEASE_OPT_LEVEL="s")
        times = {}
        for what, cmd, cwd in [
            ("worker", ["../scripts/wasm-env.sh", "worker-build", "--release", "--out-dir", f"../target/opt-{level}/edge-build"],
             ROOT / "edge"),
            ("spa", ["scripts/wasm-env.sh", "trunk", "build", "--release", "--dist", str(base / "dist")], ROOT)]:
            t0 = time.monotonic()
            done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            times[what] = time.monotonic() - t0
        log(f"opt-level {level} built: {times}")
        out[level] = {"times": times, "edge_build": base / "edge-build", "dist": base / "dist",
                      "tree": make_tree(base / "tree", base / "edge-build", base / "dist")}
    return out


def opt_levels(stack: Stack, b: dict, n: int, warmup: int, tti_runs: int, approval_id_for) -> dict:
    sizes = {lvl: bundle_sizes(b[lvl]["edge_build"], b[lvl]["dist"]) for lvl in ("z", "s")}
    ports, wps = {}, {}
    try:
        for lvl in ("z", "s"):
            ports[lvl] = free_port()
            with tree_for(stack, b[lvl]["tree"]):
                stack._launch_worker(f"worker-opt{lvl}", ports[lvl], worker_vars(stack, ports[lvl]))
            wps[lvl] = worker_procs(stack, f"worker-opt{lvl}", ports[lvl])
        # "ringi" = opt-level z, "other" = opt-level s.
        dec = side_by_side(stack, Paused(stack), n, warmup, ports["z"], wps["z"], other_port=ports["s"],
                           other_kind="ringi", other_cpu=wps["s"].ticks)
        tti = {lvl: spa_tti(stack, f"http://127.0.0.1:{ports[lvl]}", approval_id_for(ports[lvl]), tti_runs, True)
               for lvl in ("z", "s")}
    finally:
        for lvl in ports:
            if any(p.name == f"worker-opt{lvl}" for p in stack.procs):
                stop_proc(stack, f"worker-opt{lvl}")
    return {"build_times": {lvl: b[lvl]["times"] for lvl in b}, "sizes": sizes, "decision": dec, "tti": tti}


# ============================================================================================ report
def fmt_bytes(n: int) -> str:
    return f"{n:,} B ({n / 1024:.1f} KiB)"


def report(r: dict) -> tuple[str, str]:
    """(summary table for the terminal, the markdown document)."""
    m, v = r["machine"], r["versions"]
    sbs = r.get("side_by_side")
    lines = []
    summary_rows = []

    def row(what, value, note=""):
        summary_rows.append((what, value, note))

    if sbs:
        row("decision round trip, ringi (median / p99)", f"{sbs['ringi']['median_ms']:.1f} / {sbs['ringi']['p99_ms']:.1f} ms",
            f"n={sbs['n']}")
        row("decision round trip, seed design (median / p99)",
            f"{sbs['other']['median_ms']:.1f} / {sbs['other']['p99_ms']:.1f} ms", f"n={sbs['n']}")
        row("ratio ringi / seed (median, p99)", f"{sbs['ratio_median']:.2f}×, {sbs['ratio_p99']:.2f}×", "")
        row("workerd CPU per decision", f"{sbs['ringi_cpu_per_decision_ms']['runtime']:.2f} ms",
            f"+ proxy workerd {sbs['ringi_cpu_per_decision_ms']['proxy']:.2f} ms")
        row("seed server CPU per decision", f"{sbs['other_cpu_per_decision_ms']['seed']:.2f} ms", "Python: PyJWT + boto3")
    rt = r.get("request_types")
    if rt:
        for kind, d in rt["types"].items():
            row(f"workerd CPU per request: {kind}", f"{d['cpu_ms']['runtime']:.2f} ms",
                f"latency median {d['latency']['median_ms']:.2f} ms")
    cs = r.get("cold_start")
    if cs:
        row("cold start: spawn `wrangler dev` → first /healthz 200", f"{cs['median']['spawn_to_healthz_s']:.2f} s",
            f"median of {len(cs['runs'])}")
        if "workerd_start_to_healthz_s" in cs["median"]:
            row("cold start: runtime workerd start → first /healthz 200",
                f"{cs['median']['workerd_start_to_healthz_s']:.2f} s", "")
        row("first authenticated request after start", f"{cs['median']['first_inbox_ms']:.1f} ms",
            f"warm: {cs['median']['warm_inbox_median_ms']:.1f} ms")
    sz = r.get("sizes")
    if sz:
        w = sz["worker"]["total"]
        row("worker bundle (wasm + JS)", f"{w['raw'] / 1024:.1f} KiB raw, {w['gzip'] / 1024:.1f} KiB gzip", "")
        s = sz["spa"]
        row("SPA transfer (all files, gzip -9)", f"{s['total']['gzip'] / 1024:.1f} KiB",
            f"wasm {s['wasm']['gzip'] / 1024:.1f} KiB gzip of {s['wasm']['raw'] / 1024:.1f} KiB")
        row("SPA transfer (all files, brotli -q 11)", f"{s['total']['br'] / 1024:.1f} KiB",
            f"wasm {s['wasm']['br'] / 1024:.1f} KiB brotli")
    tti = r.get("tti")
    if tti:
        row("SPA TTI /a/{id} signed out, 4× CPU + Slow 4G (median)", f"{tti['throttled']['median_tti_ms']:.0f} ms",
            f"ends: {', '.join(tti['throttled']['ended_by'])}; of {len(tti['throttled']['runs'])}; unthrottled "
            f"{tti['unthrottled']['median_tti_ms']:.0f} ms")
        row("SPA TTI /a/{id} signed in, 4× CPU + Slow 4G (median)",
            f"{tti['signed_in_throttled']['median_tti_ms']:.0f} ms",
            f"ends: {', '.join(tti['signed_in_throttled']['ended_by'])}; unthrottled "
            f"{tti['signed_in_unthrottled']['median_tti_ms']:.0f} ms")
        if tti.get("signed_in_warm_throttled"):
            row("SPA TTI /a/{id} signed in, warm cache, 4× CPU + Slow 4G (median)",
                f"{tti['signed_in_warm_throttled']['median_tti_ms']:.0f} ms",
                f"signed out warm: {tti['throttled_warm']['median_tti_ms']:.0f} ms")
    ib = r.get("inbox")
    if ib:
        for size, d in ib["sizes"].items():
            row(f"inbox, {int(size):,} pending (median / p99)",
                f"{d['latency']['median_ms']:.1f} / {d['latency']['p99_ms']:.1f} ms",
                f"workerd CPU {d['cpu_ms']['runtime']:.1f} ms/request")
    tp = r.get("throughput")
    if tp:
        a = tp["JWT verify → 404"]
        row("JWT verifications/s (concurrency %d)" % r["params"]["concurrency"], f"{a['req_per_s']:.0f} /s",
            f"healthz {tp['healthz (no auth)']['req_per_s']:.0f} /s")
        row("workerd CPU per verification (verify − healthz, median of paired rounds)", f"{tp['verify_cpu_ms']:.2f} ms",
            "noisy: see §5")
    width = max(len(x[0]) for x in summary_rows) if summary_rows else 10
    vwidth = max(len(x[1]) for x in summary_rows) if summary_rows else 10
    term = "\n".join(f"{a:<{width}}  {b:<{vwidth}}  {c}" for a, b, c in summary_rows)

    # ------------------------------------------------------------------ markdown
    L = lines.append
    L("# Benchmarks")
    L("")
    L("Generated by `make bench` (`scripts/bench/run.py`); do not edit by hand — re-run it. The numbers are from one "
      "run on the machine below, a **2-core machine shared with other builds and test runs**: treat them as "
      "indicative, compare ratios within one run rather than absolute values across runs, and re-run before "
      "quoting. Each measurement repeats many requests (counts below) and reports median and p99 (nearest rank).")
    L("")
    L("## Machine and run")
    L("")
    L("| | |")
    L("|---|---|")
    L(f"| date | {r['date']} |")
    L(f"| CPU | {m['cpu']} × {m['nproc']} (`nproc` = {m['nproc']}) |")
    L(f"| RAM | {m['ram_gib']} GiB |")
    L(f"| OS / kernel | {m['os']} / {m['kernel']} |")
    L(f"| load average (1/5/15 min) at start | {', '.join(f'{x:.2f}' for x in m['loadavg_at_start'])} |")
    L(f"| load average at end | {', '.join(f'{x:.2f}' for x in r['loadavg_at_end'])} |")
    L(f"| duration | {r['duration_s']:.0f} s |")
    L(f"| command | `{r['command']}` |")
    L("")
    L("Exact commands: `make bench` = `scripts/bootstrap.sh`, `make build` (`scripts/wasm-env.sh trunk build --release`; "
      "`cd edge && ../scripts/wasm-env.sh worker-build --release`), then "
      "`. scripts/env.sh && python scripts/bench/run.py` (with `BENCH_OPT_LEVELS=1` for the opt-level section). The "
      "stack is `scripts/ringi_stack.Stack` on ports worker 8887, moto 5410, IdP 9410 (state in `.ringi/bench/`); the "
      f"seed design's server listens on {SEED_PORT}. The workers run from a copy of `edge/build` and `dist/` taken "
      "at the start (`.ringi/bench/tree/`), so a rebuild during the run cannot reload them.")
    L("")
    L("Versions:")
    L("")
    L("| tool | version |")
    L("|---|---|")
    for k, val in v.items():
        L(f"| {k} | {val} |")
    L("")
    L("## Summary")
    L("")
    L("| measurement | value | note |")
    L("|---|---|---|")
    for a, b, c in summary_rows:
        L(f"| {a} | {b} | {c} |")
    L("")

    if sbs:
        L("## 1. Decision round trip: ringi vs the seed design")
        L("")
        L("Both sides decide **real paused executions** of the same moto Step Functions (a Standard state machine "
          "paused on `sqs:sendMessage.waitForTaskToken`; tokens collected from the queue), in the same run, with "
          "the same user JWT shape (RS256 access token from the stack's Cognito-shaped IdP, fresh token per request):")
        L("")
        L("- **ringi**: `POST /api/v1/approvals/{id}/decision` on the worker (workerd via `wrangler dev`, local D1): "
          "WebCrypto RS256 verify → D1 read (approval + principals) → conditional-UPDATE claim → `SendTaskSuccess` "
          "(SigV4, IAM user `ringi-edge`) → D1 batch (final status, audit row, inbox rows).")
        L("- **seed design** (article 000): `seed_approve.handler` and `seed_save_task_token.handler`, loaded with "
          "importlib from `/work/shared/bench` at bench time (not copied into the project), behind "
          "`scripts/bench/seed_server.py` — a threaded stdlib HTTP/1.1 server doing what API Gateway's JWT "
          "authorizer does (PyJWT: RS256 against the IdP's JWKS, `iss`, `exp`, `token_use=access`, `client_id`) and "
          "building the API Gateway v2 event (with `TCP_NODELAY`, else Nagle + delayed ACK add ~40 ms per response). The handler: DynamoDB `GetItem` → `SendTaskSuccess` → `DeleteItem`, "
          "boto3 signed with a moto IAM user (`seed-lambda`: DynamoDB item actions + states callbacks). Its items "
          "were written by `seed_save_task_token.handler` (`POST /save`).")
        L("")
        L(f"{sbs['n']} decisions each after {sbs['warmup']} warm-up decisions each, one client, keep-alive "
          "connections, requests interleaved (ringi, seed, seed, ringi, …) so that noise hits both alike. "
          f"Executions SUCCEEDED afterwards: {sbs['executions_succeeded']} of {sbs['executions_started']}.")
        L("")
        L("| | median | p99 | mean | min | max |")
        L("|---|---|---|---|---|---|")
        for label, key in [("ringi decision", "ringi"), ("seed decision", "other"),
                           ("ringi register (`POST /api/v1/approvals`, API key)", "ringi_register"),
                           ("seed save (`seed_save_task_token`: `PutItem`)", "other_register")]:
            d = sbs[key]
            L(f"| {label} | {d['median_ms']:.2f} ms | {d['p99_ms']:.2f} ms | {d['mean_ms']:.2f} ms | "
              f"{d['min_ms']:.2f} ms | {d['max_ms']:.2f} ms |")
        L("")
        L(f"Ratio ringi / seed: **{sbs['ratio_median']:.2f}×** at the median, **{sbs['ratio_p99']:.2f}×** at p99. "
          f"CPU per decision: workerd runtime {sbs['ringi_cpu_per_decision_ms']['runtime']:.2f} ms "
          f"(+ proxy workerd {sbs['ringi_cpu_per_decision_ms']['proxy']:.2f} ms, wrangler's node "
          f"{sbs['ringi_cpu_per_decision_ms']['node']:.2f} ms), seed server "
          f"{sbs['other_cpu_per_decision_ms']['seed']:.2f} ms (Python; moto's CPU, shared by both, not counted).")
        L("")
        L("What the comparison is and is not: both talk to the same local moto, so the AWS side costs the same; the "
          "difference is the request path on the serving side. ringi does more per decision than the seed handler "
          "(claim before the callback so two approvers cannot both answer, audit row, inbox update, quorum, "
          "idempotency, structured output) — the seed handler has no concurrency guard (two simultaneous approvals "
          "both call `SendTaskSuccess`). In production the seed path adds API Gateway + Lambda (cold starts of a "
          "Python Lambda with boto3 are typically hundreds of ms) and DynamoDB in the region; ringi adds D1 "
          "(a remote call from the edge location unless D1 read replication/placement is close) and the edge → "
          "regional Step Functions hop. Neither is modelled here.")
        L("")

    if rt or cs or sz:
        L("## 2. Worker CPU per request type, cold start, bundle size")
        L("")
    if rt:
        L("workerd's clock does not advance during execution, so the worker's own time cannot be measured from inside. "
          "Instead: CPU time (utime + stime from `/proc/<pid>/stat`, all threads, 10 ms ticks) of the workerd "
          "processes that `wrangler dev` started, read before and after a batch of requests of one type, divided by "
          "the count. I/O waits (D1 is synchronous SQLite in-process, but Step Functions/JWKS fetches are waits) do "
          "not count. It **includes workerd's own HTTP handling, the V8 ↔ wasm glue, console logging to wrangler's "
          "inspector, and local D1 (SQLite inside workerd)**: an upper bound on the worker's CPU, not Cloudflare's "
          "billed CPU time. `wrangler dev` runs two workerd processes: the *runtime* one (runs the worker, D1) and a "
          "*proxy* one (wrangler's proxy worker listening on the public port, forwarding every request) — the table "
          "gives the runtime one and the proxy one separately; only the runtime one corresponds to production.")
        L("")
        n, rounds = r["params"]["requests"], r["params"]["rounds"]
        L(f"{rounds} rounds × {n} sequential requests per type (after 10 warm-up requests per round), fresh JWT per "
          "request; the CPU column is the median over rounds (each round: per-request average).")
        L("")
        L("| request type | workerd runtime CPU/request | proxy workerd CPU/request | latency median | latency p99 |")
        L("|---|---|---|---|---|")
        if sbs:
            d = sbs["ringi_cpu_per_decision_ms"]
            L(f"| decision (approve, real paused execution; §1) | {d['runtime']:.2f} ms | {d['proxy']:.2f} ms | "
              f"{sbs['ringi']['median_ms']:.2f} ms | {sbs['ringi']['p99_ms']:.2f} ms |")
            d = sbs["ringi_cpu_per_register_ms"]
            L(f"| register (real task token; §1) | {d['runtime']:.2f} ms | {d['proxy']:.2f} ms | "
              f"{sbs['ringi_register']['median_ms']:.2f} ms | {sbs['ringi_register']['p99_ms']:.2f} ms |")
        for kind, d in rt["types"].items():
            L(f"| {kind} | {d['cpu_ms']['runtime']:.2f} ms | {d['cpu_ms']['proxy']:.2f} ms | "
              f"{d['latency']['median_ms']:.2f} ms | {d['latency']['p99_ms']:.2f} ms |")
        L("")
        L("Per-round runtime CPU (ms/request), to show the spread: " + "; ".join(
            k + ": " + ", ".join("%.2f" % x["runtime"] for x in d["cpu_ms_rounds"]) for k, d in rt["types"].items()) + ".")
        L("")
        t = rt["types"]
        hz, ver, view = (t[k]["cpu_ms"]["runtime"] for k in ("healthz", "verify (JWT → 404, no D1)",
                                                              "view (GET one approval)"))
        lhz, lver, lview = (t[k]["latency"]["median_ms"] for k in ("healthz", "verify (JWT → 404, no D1)",
                                                                    "view (GET one approval)"))
        L(f"Reading the table: every request pays a fixed local cost (`healthz`: {hz:.2f} ms — workerd's HTTP "
          "handling, wrangler's per-request instrumentation, the JS ↔ wasm entry); verifying a JWT adds "
          f"≈ {ver - hz:.2f} ms CPU (verify − healthz); one local D1 query costs ≈ {(view - ver) / 3:.2f} ms of "
          "workerd CPU ((view − verify) / 3 queries) — local D1 is a Durable Object with a JS wrapper around "
          "SQLite, whose CPU is counted here but which in production runs in D1's own process, not in the "
          "worker's CPU time. In wall time (medians): verification adds "
          f"≈ {lver - lhz:.1f} ms, one local D1 query ≈ {(lview - lver) / 3:.1f} ms. A decision = verify + one "
          "3-statement D1 read batch + the claim + a 3-statement D1 write batch + SigV4 signing + one outbound `SendTaskSuccess` to moto; "
          "the seed handler does a PyJWT verify and three moto calls.")
        L("")
        L("`verify` is `GET /api/v1/approvals/x` with a valid JWT: the JWT is verified first, then `x` is not a valid "
          "approval ID → 404 without touching D1, so its cost over `healthz` is the verification. `view` reads an "
          "approval, its principals and decisions (3 D1 queries). `inbox` returns a 25-item page of 30 pending "
          "approvals (sub + group principals).")
        L("")
    if cs:
        L(f"**Cold start** ({len(cs['runs'])} runs, each a new `wrangler dev` with its own fresh D1, migrations applied "
          "before the spawn and not counted):")
        L("")
        L("| run | spawn `wrangler dev` → first `/healthz` 200 | runtime workerd process start → first 200 | "
          "first authenticated request (inbox; JWKS fetch + key import) | next 20: median | `/healthz` warm median |")
        L("|---|---|---|---|---|---|")
        for i, x in enumerate(cs["runs"], 1):
            L(f"| {i} | {x['spawn_to_healthz_s']:.2f} s | {x.get('workerd_start_to_healthz_s', float('nan')):.2f} s | "
              f"{x['first_inbox_ms']:.1f} ms | {x['warm_inbox_median_ms']:.1f} ms | {x['warm_healthz_median_ms']:.2f} ms |")
        L("")
        L("The spawn → 200 time is mostly wrangler (node start-up, bundling the shim with esbuild, starting two "
          "workerd processes); \"runtime workerd start\" comes from `/proc/<pid>/stat` starttime (10 ms resolution) "
          "and covers workerd start-up, wasm compilation/instantiation of the worker and the first request. On "
          "Cloudflare the isolate start is what matters: it scales with the wasm size below.")
        L("")
    if sz:
        L("**Worker bundle** (`edge/build/` as copied at the start, what wrangler uploads; gzip -9 sizes; Cloudflare's limit applies to the "
          "compressed size):")
        L("")
        L("| file | raw | gzip -9 |")
        L("|---|---|---|")
        for f, d in sz["worker"].items():
            L(f"| {f} | {fmt_bytes(d['raw'])} | {fmt_bytes(d['gzip'])} |")
        L("")

    if sz or tti:
        L("## 3. SPA: transfer size and time to interactive")
        L("")
    if sz:
        L("Everything `dist/index.html` makes the browser load (gzip -9 and brotli quality 11 of each file). What a "
          "browser receives: brotli over HTTPS (Chrome advertises `br` only on secure origins), gzip over plain HTTP — "
          "so the local bench on `http://127.0.0.1` sees the gzip column, a phone on the deployed site the brotli one.")
        L("")
        L("| file | raw | gzip -9 | brotli 11 |")
        L("|---|---|---|---|")
        for f, d in sz["spa"]["files"].items():
            L(f"| {f} | {fmt_bytes(d['raw'])} | {fmt_bytes(d['gzip'])} | {fmt_bytes(d['br'])} |")
        t = sz["spa"]["total"]
        L(f"| **total** | {fmt_bytes(t['raw'])} | **{fmt_bytes(t['gzip'])}** | **{fmt_bytes(t['br'])}** |")
        L("")
    if tti:
        L(f"**Time to interactive on a deep link** `/a/{{id}}` (a real pending approval), a fresh browser "
          f"context each run, Chromium {v['chromium'].split()[1]} headless via Playwright with the args of "
          "`tests/e2e/test_smoke.py`, CDP `Emulation.setCPUThrottlingRate {rate: 4}` and "
          "`Network.emulateNetworkConditions` = Chromium DevTools' \"Slow 4G\" preset exactly (`Slow4GConditions` "
          "in devtools-frontend `NetworkManager.ts`: download 180,000 B/s, upload 84,375 B/s, latency 562.5 ms, "
          "added once per request). **Cold**: HTTP cache disabled. **Warm**: the same link loaded once in the "
          "context first with the HTTP cache on, then measured (a second open of the link on the same phone).")
        L("")
        L("**Definition**: all times are `performance.now()` in the page (origin = navigation start), recorded by "
          "a probe installed before any script. Signed out: until the page starts leaving for the Hosted UI "
          "(`beforeunload`; the request to the IdP is failed through CDP's `Fetch` domain so that the page's timings "
          "can be read and the HTTP cache stays on), else the app's root carrying `data-testid=app-ready`. Signed in (a session put into "
          "`sessionStorage['ringi.session']` the way the SPA keeps it, before any script runs): until the "
          "approval's title (`[data-testid=approval-title]`) is rendered — config, `GET /api/v1/approvals/{id}` "
          "and render done.")
        L("")
        L("| condition | ended by | median TTI | min | max | median first contentful paint | runs (ms) |")
        L("|---|---|---|---|---|---|---|")
        for key, label in SPA_LABELS.items():
            d = tti.get(key)
            if not d:
                continue
            fcp = f"{d['median_fcp_ms']:.0f} ms" if d.get("median_fcp_ms") else "—"
            L(f"| {label} | {', '.join(d['ended_by'])} | **{d['median_tti_ms']:.0f} ms** | {d['min_tti_ms']:.0f} ms | "
              f"{d['max_tti_ms']:.0f} ms | {fcp} | " + ", ".join("%.0f" % x["tti_ms"] for x in d["runs"]) + " |")
        L("")
        L("Step by step (medians over the runs; ms from navigation start; bytes = `transferSize`, i.e. as received, "
          "0 when served from the HTTP cache without a request). A \"serial wave\" is a group of requests that "
          "starts only after the previous ones ended: each costs at least one 562.5 ms latency under Slow 4G.")
        L("")
        for key in ("throttled", "signed_in_throttled", "throttled_warm", "signed_in_warm_throttled"):
            d = tti.get(key)
            if not d or not d.get("steps"):
                continue
            L(f"*{SPA_LABELS[key]}*")
            L("")
            L("| step | start | end | bytes |")
            L("|---|---|---|---|")
            for step, start, end, nbytes in d["steps"]:
                f = lambda x: "" if x is None else f"{x:.0f} ms"  # noqa: E731
                L(f"| {step} | {f(start)} | {f(end)} | {'' if nbytes is None else f'{nbytes:,.0f}'} |")
            L("")
        th = tti.get("signed_in_throttled") or tti["throttled"]
        res = th["runs"][0].get("resources") or []
        wasm = next((x for x in res if x["name"].endswith(".wasm")), None)
        if wasm:
            enc = "compressed" if wasm["encoded"] < wasm["decoded"] else "**uncompressed**"
            L(f"As served by the local worker the wasm arrived {enc} (encoded {wasm['encoded']:,} B, decoded "
              f"{wasm['decoded']:,} B, {wasm['duration']:.0f} ms under throttling).")
            L("")

    if ib:
        L("## 4. The inbox at 1k / 10k / 100k pending approvals")
        L("")
        L("Rows are bulk-loaded **straight into the worker's local D1 SQLite file** "
          "(`.ringi/bench/worker-inbox-d1/v3/d1/miniflare-D1DatabaseObject/<hash>.sqlite`): the worker "
          "(`wrangler dev`) is stopped, python `sqlite3` inserts the rows (schema of `edge/migrations`), checkpoints "
          "the WAL, the worker is started again on the same persist dir. The inbox user (`sub` inbox-user, group "
          "ops-team) gets N pending approvals — half through the sub, half through the group, every 10th through "
          "both (the query de-duplicates) — and 1,000 other users get another N in total, so the tables hold 2N "
          "approvals. No `ANALYZE` (as deployed). Then "
          f"{r['params']['requests']} × `GET /api/v1/approvals?status=pending` (first page, 25 items; fresh JWT each, "
          "after 10 warm-up requests), and the same SQL straight on the file with python's SQLite for comparison.")
        L("")
        L("| pending for the user | rows (approvals / principals) | load time | median | p99 | workerd CPU/request | "
          "SQL alone (python sqlite3, median) |")
        L("|---|---|---|---|---|---|---|")
        for size, d in ib["sizes"].items():
            L(f"| {int(size):,} | {d['rows']['approvals']:,} / {d['rows']['approval_principals']:,} | {d['load_s']:.1f} s | "
              f"{d['latency']['median_ms']:.1f} ms | {d['latency']['p99_ms']:.1f} ms | {d['cpu_ms']['runtime']:.1f} ms | "
              f"{d['python_sqlite_ms']:.2f} ms |")
        L("")
        L("The query (`core::inbox::inbox_sql(2, pending)`, printed by `cargo run -q -p ringi-core --example inbox_sql -- "
          "2 pending`; `?1`,`?2` = `sub:inbox-user`, `group:ops-team`):")
        L("")
        L("```sql")
        L(ib["sql"])
        L("```")
        L("")
        last = list(ib["sizes"].values())[-1]
        if last.get("d1_plan"):
            L(f"`EXPLAIN QUERY PLAN` by D1 itself (`wrangler d1 execute DB --local --persist-to … --command "
              f"\"EXPLAIN QUERY PLAN …\"`, parameters inlined as literals), "
              f"at {int(list(ib['sizes'])[-1]):,}:")
            L("")
            L("```")
            L("\n".join(last["d1_plan"]))
            L("```")
            L("")
        L(f"Python's SQLite {v['sqlite (python sqlite3)']} (the \"SQL alone\" column) plans it alike:")
        L("")
        L("```")
        L("\n".join(list(ib["sizes"].values())[0]["python_plan"]))
        L("```")
        L("")
        first, last_size = list(ib["sizes"].items())[0], list(ib["sizes"].items())[-1]
        grow = lambda key: last_size[1][key] / first[1][key] if first[1][key] else float("nan")  # noqa: E731
        L(f"How the cost grows: from {int(first[0]):,} to {int(last_size[0]):,} pending approvals "
          f"({int(last_size[0]) // int(first[0])}× the rows) the median inbox latency grew "
          f"{last_size[1]['latency']['median_ms'] / first[1]['latency']['median_ms']:.1f}×, the workerd CPU per "
          f"request {last_size[1]['cpu_ms']['runtime'] / first[1]['cpu_ms']['runtime']:.1f}× and the SQL alone "
          f"{grow('python_sqlite_ms'):.0f}×. The index `approval_principals_inbox (pkey, open, sort_at, approval_id)` "
          "is read as one ordered range per principal key, each stopped after one page (`LIMIT`), and the ranges "
          "are merged with `UNION` (an approval reachable through sub *and* group has the same `sort_at` on both "
          "rows, so UNION removes the duplicate). *Other users'* approvals are never touched and the caller's own "
          "are read only up to one page per principal: a page costs O(principals × page size), independent of "
          "how many approvals are pending (core/tests/inbox_plan.rs asserts the same VM step count at 1,000 and "
          "20,000 pending). What remains is the fixed per-request cost of local workerd.")
        L("")

    if tp:
        L("## 5. JWT verification throughput")
        L("")
        L(f"{r['params']['concurrency']} client threads with keep-alive connections hammer the worker for at most "
          f"{r['params']['throughput_seconds']:.0f} s / {r['params']['throughput_requests']} requests per endpoint, "
          "in 4 alternating rounds (healthz, verify, healthz, verify, …); "
          "500 distinct fresh JWTs in rotation (the worker caches the JWKS and the imported key, not verification "
          "results). The client (Python) shares the 2 cores with workerd, so req/s is a floor; CPU per request "
          "from `/proc` is the more robust number.")
        L("")
        L("| endpoint | requests | req/s | workerd runtime CPU/request | proxy workerd CPU/request | client CPU/request |")
        L("|---|---|---|---|---|---|")
        for kind in ("healthz (no auth)", "JWT verify → 404"):
            d = tp[kind]
            L(f"| {kind} | {d['requests']} | {d['req_per_s']:.0f} | {d['cpu_ms_per_request']['runtime']:.3f} ms | "
              f"{d['cpu_ms_per_request']['proxy']:.3f} ms | {d['client_cpu_ms_per_request']:.3f} ms |")
        L("")
        per = tp["verify_cpu_ms"]
        seq = None
        if rt:
            t = rt["types"]
            seq = t["verify (JWT → 404, no D1)"]["cpu_ms"]["runtime"] - t["healthz"]["cpu_ms"]["runtime"]
        L(f"Per-round req/s — healthz: {', '.join('%.0f' % x for x in tp['healthz (no auth)']['req_per_s_rounds'])}; "
          f"verify: {', '.join('%.0f' % x for x in tp['JWT verify → 404']['req_per_s_rounds'])}. CPU per "
          "verification (runtime workerd, verify − healthz, paired rounds: "
          f"{', '.join('%.2f' % x for x in tp['verify_cpu_ms_rounds'])} ms): median **{per:.2f} ms**"
          + (f"; from the sequential batches of §2: **{seq:.2f} ms**" if seq is not None else "") + ". "
          "The difference between two ~2 ms per-request totals at 10 ms tick resolution on a loaded machine is "
          "noisy; the verification itself (WebCrypto RSASSA-PKCS1-v1_5 / SHA-256 with a 2048-bit key, plus "
          "base64/JSON parsing and the claim checks in Rust/wasm) is well under 1 ms of CPU, i.e. on the order of "
          "a thousand or more verifications per CPU-second; what limits req/s here is the fixed per-request cost "
          f"of local workerd + wrangler's proxy (a full authenticated request: "
          f"{tp['verifications_per_cpu_second']:.0f} per runtime-CPU-second) and the Python client sharing the "
          "two cores.")
        L("")
    # Sections measured only on request: this run's numbers, else the previous document's, else how to get them.
    for begin, end, fresh, previous, placeholder in (
        (OPT_BEGIN, OPT_END, r.get("opt_levels") and opt_section(r["opt_levels"], r["date"]),
         r.get("previous_opt_section"),
         "## 6. opt-level \"z\" vs \"s\"\n\nNot measured yet: run `BENCH_OPT_LEVELS=1 make bench`.\n"),
        (TWIGGY_BEGIN, TWIGGY_END, r.get("twiggy") and twiggy_section(r["twiggy"], r["date"]),
         r.get("previous_twiggy_section"),
         "## 7. What the SPA wasm is made of (twiggy)\n\nNot measured yet: run `BENCH_TWIGGY=1 make bench` "
         "(needs `cargo install twiggy --locked --root ~/.cache/ringi/cargo`).\n"),
    ):
        L(begin)
        L(fresh or previous or placeholder)
        L(end)
    return term, "\n".join(lines) + "\n"


OPT_BEGIN = "<!-- opt-levels:begin (kept across runs without BENCH_OPT_LEVELS=1) -->"
OPT_END = "<!-- opt-levels:end -->"


def opt_section(o: dict, date: str) -> str:
    out = ["## 6. opt-level \"z\" vs \"s\"", "",
           f"Measured {date} with `BENCH_OPT_LEVELS=1` (expensive: extra release builds; this section is kept "
           "as is by runs without it). Both levels are built by the benchmark from the same sources: \"z\" is the "
           "workspace's `[profile.release]` (`cd edge && ../scripts/wasm-env.sh worker-build --release --out-dir "
           "../target/opt-z/edge-build`; `scripts/wasm-env.sh trunk build --release --dist target/opt-z/dist`), \"s\" "
           "the same commands with `CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_TARGET_DIR=target/opt-s` and "
           "`opt-s` output directories (build times in that run, incremental where the target dir was warm: worker "
           f"{o['build_times']['s']['worker']:.0f} s, SPA {o['build_times']['s']['spa']:.0f} s). The wasm-opt passes "
           "stay as configured (worker: `-Oz` from `edge/Cargo.toml`; SPA: Trunk's release default), so only "
           "rustc/LLVM's level differs.", "",
           "| artefact | z raw | z gzip | s raw | s gzip | s vs z (gzip) |", "|---|---|---|---|---|---|"]
    z, s = o["sizes"]["z"], o["sizes"]["s"]
    for label, a, b in [("worker wasm", z["worker"]["index_bg.wasm"], s["worker"]["index_bg.wasm"]),
                        ("worker JS", z["worker"]["index.js"], s["worker"]["index.js"]),
                        ("SPA wasm", z["spa"]["wasm"], s["spa"]["wasm"]),
                        ("SPA total transfer", z["spa"]["total"], s["spa"]["total"])]:
        out.append(f"| {label} | {a['raw']:,} | {a['gzip']:,} | {b['raw']:,} | {b['gzip']:,} | "
                   f"{(b['gzip'] - a['gzip']) / a['gzip'] * 100:+.1f}% |")
    d = o["decision"]
    out += ["", f"Decisions ({d['n']} each after {d['warmup']} warm-up, real paused executions, interleaved, two "
                "workers (one per level) side by side on the same moto):", "",
            "| worker | decision median | p99 | workerd runtime CPU/decision |", "|---|---|---|---|",
            f"| opt-level z | {d['ringi']['median_ms']:.2f} ms | {d['ringi']['p99_ms']:.2f} ms | "
            f"{d['ringi_cpu_per_decision_ms']['runtime']:.2f} ms |",
            f"| opt-level s | {d['other']['median_ms']:.2f} ms | {d['other']['p99_ms']:.2f} ms | "
            f"{d['other_cpu_per_decision_ms']['runtime']:.2f} ms |", ""]
    t = o["tti"]
    out += [f"SPA TTI on `/a/{{id}}`, signed out, under 4× CPU + Slow 4G (median of {len(t['z']['runs'])}; ends by "
            f"{', '.join(t['z']['ended_by'])}): z {t['z']['median_tti_ms']:.0f} ms, s {t['s']['median_tti_ms']:.0f} ms.", ""]
    return "\n".join(out)


def previous_section(begin: str, end: str) -> str | None:
    """A section of the current docs/benchmarks.md between its markers, kept when this run did not measure it."""
    if not DOC.exists():
        return None
    text = DOC.read_text()
    if begin in text and end in text:
        body = text.split(begin, 1)[1].split(end, 1)[0].strip("\n")
        return body if "Not measured yet" not in body else None
    return None


# ============================================================================================ 8. what the SPA wasm is made of
TWIGGY_BEGIN = "<!-- twiggy:begin (kept across runs without BENCH_TWIGGY=1) -->"
TWIGGY_END = "<!-- twiggy:end -->"


def twiggy_bin() -> Path:
    return Path(os.environ.get("RINGI_HOME", Path.home() / ".cache" / "ringi")) / "cargo" / "bin" / "twiggy"


def build_named_spa_wasm() -> tuple[Path, dict]:
    """The SPA wasm as shipped (same sources, release profile, wasm-bindgen, wasm-opt -Oz with index.html's feature
    flags) but with its name section kept (`strip = false`, `wasm-opt -g`), so that twiggy can name the code.
    Own target dir (target/twiggy): dist/ and the shared target/ are not touched."""
    base = ROOT / "target" / "twiggy"
    env = dict(os.environ, CARGO_TARGET_DIR=str(base), CARGO_PROFILE_RELEASE_STRIP="false")
    times = {}
    t0 = time.monotonic()
    cmd = ["scripts/wasm-env.sh", "cargo", "build", "--release", "--target", "wasm32-unknown-unknown", "-p", "ringi-app",
           "--bin", "ringi-app"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    times["cargo"] = time.monotonic() - t0
    raw = base / "wasm32-unknown-unknown" / "release" / "ringi-app.wasm"
    out = base / "bindgen"
    subprocess.run([os.environ.get("WASM_BINDGEN_BIN", "wasm-bindgen"), "--target", "web", "--out-dir", str(out),
                    str(raw)], check=True, capture_output=True)
    params = re.search(r'data-wasm-opt-params="([^"]*)"', (ROOT / "index.html").read_text()).group(1).split()
    named = out / "ringi-app_bg.named.wasm"
    subprocess.run([os.environ.get("WASM_OPT_BIN", "wasm-opt"), "-Oz", "-g", *params, str(out / "ringi-app_bg.wasm"),
                    "-o", str(named)], check=True, capture_output=True)
    times["total"] = time.monotonic() - t0
    return named, times


def crate_of(name: str) -> str:
    """The crate a twiggy item belongs to, from its demangled name (`url::host::…`, `core[…]::fmt::…`,
    `<T as tachys::view::Render>::build` → the trait's crate when the type is a bare generic or primitive)."""
    if name.startswith("data segment"):
        return "(data segments: strings, tables)"
    if name.startswith(("code[", "type[", "import ", "export ", "table[", "elem[", "global[", "memory[", "func[")):
        return "(unnamed: " + re.split(r"[\[ ]", name, maxsplit=1)[0] + ")"
    m = re.match(r"<(&?(?:mut |dyn )?)([A-Za-z_][\w\[\]]*)(?: as ([^>]+))?>", name)
    if m:
        own, trait = m.group(2), m.group(3)
        path = trait if (trait and "::" not in own and not re.search(r"\[[0-9a-f]+\]", own)) else own
        if own in ("str", "char", "f32", "f64", "u8", "u16", "u32", "u64", "usize", "i32", "i64", "bool") and not trait:
            return "core"
        name = path
    m = re.match(r"([A-Za-z_]\w*)(?:\[[0-9a-f]+\])?::", name.lstrip("<&* "))
    return m.group(1) if m else "(other)"


def twiggy(wasm_bytes: int) -> dict:
    tw = twiggy_bin()
    if not tw.exists():
        raise RuntimeError(f"twiggy is not installed at {tw}: cargo install twiggy --locked --root {tw.parents[1]}")
    named, times = build_named_spa_wasm()
    run = lambda *a: json.loads(subprocess.run([str(tw), *a, str(named), "-f", "json"], check=True,  # noqa: E731
                                               capture_output=True, text=True).stdout)
    # The name section itself is not shipped (strip = true): only code and data count.
    top = [i for i in run("top", "-n", "1000000") if "subsection" not in i["name"] and "custom section" not in i["name"]
           and not i["name"].startswith('"')]
    crates: dict[str, int] = {}
    for item in top:
        crates[crate_of(item["name"])] = crates.get(crate_of(item["name"]), 0) + item["shallow_size"]
    total = sum(crates.values())
    version = subprocess.run([str(tw), "--version"], capture_output=True, text=True).stdout.strip()
    return {"version": version, "times": times, "named_bytes": named.stat().st_size, "shipped_bytes": wasm_bytes,
            "top": top[:25], "crates": sorted(crates.items(), key=lambda kv: -kv[1])[:30], "total": total}


def twiggy_section(t: dict, date: str) -> str:
    out = ["## 7. What the SPA wasm is made of (twiggy)", "",
           f"Measured {date} with `BENCH_TWIGGY=1` ({t['version']}; this section is kept as is by runs without it). "
           "twiggy needs the function names, which the shipped wasm does not carry (`strip = true`), so the benchmark "
           "builds the same SPA once more into `target/twiggy` with `CARGO_PROFILE_RELEASE_STRIP=false`, runs "
           "wasm-bindgen and `wasm-opt -Oz -g` (names kept) with the feature flags of `index.html` "
           f"({t['times']['total']:.0f} s). The items are those of the shipped file up to what `-g` keeps wasm-opt "
           f"from doing ({t['shipped_bytes']:,} B shipped, {t['named_bytes']:,} B with the name section, of which "
           f"{t['total']:,} B code and data: the shares below are of that); sizes are raw bytes before compression.", "",
           "By crate (sum of shallow sizes, from the demangled names; generic code counts for the crate that "
           "names it — e.g. Leptos views instantiated for ringi's components appear under `tachys`, serde code for "
           "ringi's types under `serde_core`/`serde_json` or `ringi_app`):", "",
           "| crate | bytes | share |", "|---|---|---|"]
    for name, n in t["crates"]:
        out.append(f"| `{name}` | {n:,} | {100 * n / t['total']:.1f} % |")
    out += ["", "Largest items (`twiggy top`):", "", "| item | shallow bytes | share |", "|---|---|---|"]
    for item in t["top"]:
        name = item["name"].replace("|", "\\|")
        name = name if len(name) <= 110 else name[:107] + "…"
        out.append(f"| `{name}` | {item['shallow_size']:,} | {100 * item['shallow_size'] / t['total']:.2f} % |")
    out.append("")
    return "\n".join(out)


# ============================================================================================ main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts (a smoke run of the benchmark itself)")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/benchmarks.md")
    ap.add_argument("--only", default="", help="comma-separated sections: sizes,cold,decision,types,throughput,inbox,"
                                               "spa,opt")
    ap.add_argument("--opt-levels", action="store_true", default=os.environ.get("BENCH_OPT_LEVELS") == "1")
    ap.add_argument("--twiggy", action="store_true", default=os.environ.get("BENCH_TWIGGY") == "1",
                    help="what the SPA wasm is made of (an extra names-kept build into target/twiggy; needs twiggy)")
    args = ap.parse_args()
    # `make` or a CI runner stopping us with SIGTERM must still run the `finally` that stops the stack.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    q = args.quick
    params = {"decisions": 20 if q else 200, "warmup": 5 if q else 10, "requests": 30 if q else 200,
              "rounds": 2 if q else 3, "cold_runs": 1 if q else 3, "inbox_sizes": [100, 1000] if q else [1000, 10000, 100000],
              "tti_runs": 2 if q else 5, "concurrency": 8, "throughput_requests": 500 if q else 4000,
              "throughput_seconds": 5.0 if q else 20.0, "opt_decisions": 20 if q else 100}
    sections = set(filter(None, args.only.split(","))) or {"sizes", "cold", "decision", "types", "throughput", "inbox",
                                                           "spa"}
    if args.opt_levels:
        sections.add("opt")
    if not (seed_dir() / "seed_approve.py").exists() and "decision" in sections:
        sys.exit(f"the seed design's handlers are not at {seed_dir()} (set RINGI_SEED_DIR)")
    command = " ".join(shlex.quote(a) for a in ["python", "scripts/bench/run.py", *sys.argv[1:]])
    if args.opt_levels:
        command = "BENCH_OPT_LEVELS=1 " + command
    if args.twiggy:
        command = "BENCH_TWIGGY=1 " + command
    r = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(),
         "versions": versions(), "params": params, "command": command}
    log(f"machine: {r['machine']}")
    if "inbox" in sections:
        log("inbox SQL: cargo run -q -p ringi-core --example inbox_sql -- 2 pending")
        sql = inbox_sql(2)  # before the stack: cargo may wait for another build's lock on target/
    if args.twiggy:
        log("twiggy: building the SPA wasm with names into target/twiggy …")
        html = (ROOT / "dist" / "index.html").read_text()
        shipped = ROOT / "dist" / re.search(r'name="ringi-wasm" content="/([^"]+)"', html).group(1)
        r["twiggy"] = twiggy(shipped.stat().st_size)
    if "opt" in sections:
        log("building both wasm artefacts at opt-level z and s into target/opt-{z,s}, before the stack starts …")
        opt_build = build_opt_levels()
    # The benchmark registers thousands of approvals a minute with one API key: lift the per-credential limit
    # (REGISTER_RATE_PER_MINUTE, default 600) to its maximum.
    stack = Stack(state=fresh_state(STATE), ports=PORTS, claim_lease_seconds=30, say=lambda m: log(m.strip()),
                  extra_vars={"REGISTER_RATE_PER_MINUTE": "100000"})
    tree = make_tree(STATE / "tree", ROOT / "edge" / "build", ROOT / "dist")
    run_workers_from(stack, tree)
    if "sizes" in sections or "spa" in sections:
        r["sizes"] = bundle_sizes(tree / "edge" / "build", tree / "dist")
    stack.start()
    try:
        wp = worker_procs(stack, "worker", stack.ports.worker)
        log(f"worker processes: runtime workerd {wp.runtime}, proxy workerd {wp.proxy}, node {wp.node}")
        if "decision" in sections:
            seed = setup_seed(stack)
            seed_cpu = lambda: {"seed": cpu_ticks(seed.popen.pid)}  # noqa: E731
            log(f"side by side: {params['decisions']} decisions each …")
            r["side_by_side"] = side_by_side(stack, Paused(stack), params["decisions"], params["warmup"],
                                             stack.ports.worker, wp, other_port=SEED_PORT, other_cpu=seed_cpu)
            s = r["side_by_side"]
            log(f"ringi {s['ringi']['median_ms']:.1f}/{s['ringi']['p99_ms']:.1f} ms, seed "
                f"{s['other']['median_ms']:.1f}/{s['other']['p99_ms']:.1f} ms (median/p99)")
            stop_proc(stack, "seed")
        inbox_ids = None
        if "types" in sections or "spa" in sections:
            log("request types …")
            rt = request_types(stack, wp, params["requests"] if "types" in sections else 1,
                               params["rounds"] if "types" in sections else 1)
            inbox_ids = rt["inbox_ids"]
            if "types" in sections:
                r["request_types"] = rt
        if "throughput" in sections:
            log("JWT verification throughput …")
            r["throughput"] = throughput(stack, wp, params["concurrency"], params["throughput_requests"],
                                         params["throughput_seconds"])
        if "spa" in sections:
            log("SPA time to interactive …")
            r["tti"] = {}
            for key, throttle, user, warm in SPA_CONDITIONS:
                r["tti"][key] = spa_tti(stack, stack.base_url, inbox_ids[0], params["tti_runs"], throttle, user, warm)
                log(f"TTI {key}: median {r['tti'][key]['median_tti_ms']:.0f} ms (ended by "
                    f"{', '.join(r['tti'][key]['ended_by'])})")
        if "cold" in sections:
            log("cold starts …")
            r["cold_start"] = cold_starts(stack, params["cold_runs"])
        if "inbox" in sections:
            log("inbox at scale …")
            r["inbox"] = inbox_scale(stack, params["inbox_sizes"], params["requests"], sql)
        if "opt" in sections:
            def approval_for(port):
                c = Client(port)
                st, data, _ = c.request("POST", "/api/v1/approvals", {
                    "taskToken": f"bench-synthetic-{uuid.uuid4()}", "approvers": [{"sub": "bench-tti"}],
                    "title": "TTI", "timeoutSeconds": 3600}, bearer(stack.api_key))
                c.close()
                assert st == 201, (st, data)
                return json.loads(data)["id"]
            r["opt_levels"] = opt_levels(stack, opt_build, params["opt_decisions"], params["warmup"], params["tti_runs"],
                                         approval_for)
    finally:
        stack.stop()
    r["duration_s"] = time.monotonic() - T0
    r["loadavg_at_end"] = os.getloadavg()
    r["previous_opt_section"] = previous_section(OPT_BEGIN, OPT_END)
    r["previous_twiggy_section"] = previous_section(TWIGGY_BEGIN, TWIGGY_END)
    out_dir = STATE
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(r, indent=1, default=str))
    term, doc = report(r)
    print("\n" + term + "\n")
    if "tti" in r:
        for key, d in r["tti"].items():
            print(f"\n{SPA_LABELS[key]}: median {d['median_tti_ms']:.0f} ms, runs "
                  + ", ".join("%.0f" % x["tti_ms"] for x in d["runs"]))
            for step, start, end, nbytes in d.get("steps", []):
                f = lambda x: "" if x is None else f"{x:.0f}"  # noqa: E731
                print(f"  {step:<90} {f(start):>6} → {f(end):>6} ms  {'' if nbytes is None else f'{nbytes:,.0f} B'}")
    # A partial run (--only) would drop the other sections from docs/benchmarks.md: preview only.
    if not args.no_write and not q and not args.only:
        DOC.write_text(doc)
        print(f"written: {DOC.relative_to(ROOT)} (raw results: {(out_dir / 'results.json').relative_to(ROOT)})")
    else:
        (out_dir / "benchmarks.md").write_text(doc)
        print(f"not written to docs/ ({'--quick' if q else '--only' if args.only else '--no-write'}); preview: "
              f"{(out_dir / 'benchmarks.md').relative_to(ROOT)}")


if __name__ == "__main__":
    main()

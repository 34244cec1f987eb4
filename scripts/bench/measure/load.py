"""Sustained load: many signed-in approvers and a steady stream of registrations against one serving side (ringi on
D1, ringi on DynamoDB, the reference design's server), then what the run left behind checked against moto's real
executions; and a longer soak at a lower rate with the worker's memory sampled.

The load, the same on every side (seeded, so each side gets the same sequence of approvals):
- `approvers` people, each signed in once (one access token for the whole phase, as the SPA keeps its session),
  sub `load-NNN`, member of one of ten groups `load-team-N`;
- registrations at a steady `rate` for `seconds`, open loop (each one sent at its scheduled time by a pool of
  senders, whatever the answers take), each for a real paused execution started before the phase;
- the approvals: most for one approver; some for three with a quorum of two; some for a group, which five of its
  members decide at the same moment (concurrent clicks on one approval); a few decided with a double click (two
  requests at once by one person); one in ten verdicts a rejection;
- each approver looks at their inbox every few seconds, opens what is new, reads it a moment and decides
  (the reference design has neither inbox nor read API: its approvers get their links handed to them, as its mail
  would, and decide);
- after the registrations the approvers go on until every approval is decided or the drain time is over;
- a 429 or 503 with Retry-After is retried after that many seconds (at most three tries); every answer counts.
Then: every approval's decision as the answers said, the store, and moto's execution compared; callbacks per task
token counted by a proxy in front of Step Functions (tests/e2e/support/faultproxy.py, forwarding everything)."""
from __future__ import annotations

import json
import os
import random
import secrets
import statistics
import threading
import time
from collections import Counter, defaultdict, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests

from common import Client, WorkerProcs, cpu_ticks, rss_kib
from harness import e2e_support, log, setup_seed, worker_procs
from measure import isolate
from ringi_stack import free_port, http_ok
from results import pct

GROUPS = 10
# 409s that are the right answer to someone who acted at the same moment as someone else.
RACE_CODES = {"already_decided", "in_progress", "already_voted", "already_satisfied"}
DECIDED = {"approved", "rejected"}
# A registration not sent within this many seconds of its scheduled time is given up (and counted).
LATE_S = 30.0
# The soak's control worker's request rate: about what the soak's 100 approvers make of 5 registrations/s (inbox
# looks, opens, decisions, registrations), so that both runtimes see a similar number of requests.
CONTROL_RATE = 40.0
TASK_TIMEOUT = 3600  # the paused executions' TimeoutSeconds, and the registrations' timeoutSeconds


def approver_sub(i: int) -> str:
    return f"load-{i:03d}"


def team(i: int) -> str:
    return f"load-team-{i % GROUPS}"


# ------------------------------------------------------------------------------------------------ the plan
@dataclass
class Planned:
    """One approval of the load: who is asked, how it is decided."""
    kind: str  # "single", "quorum" (2 of 3) or "group" (five members click at once)
    approvers: list[int]
    verdicts: dict[int, str]  # approver → "approve" | "reject"
    double_click: bool = False
    group: int | None = None

    def body(self, token: str) -> dict:
        approvers = ([{"group": f"load-team-{self.group}"}] if self.kind == "group"
                     else [{"sub": approver_sub(i)} for i in self.approvers])
        return {"taskToken": token, "approvers": approvers, "quorum": 2 if self.kind == "quorum" else "any",
                "title": f"Deploy payments-api ({self.kind})", "summary": "A change to review. " * 6,
                "timeoutSeconds": TASK_TIMEOUT}


def plan(n: int, approvers: int, seed: int = 31) -> list[Planned]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        roll = rng.random()
        verdict = lambda: "reject" if rng.random() < 0.1 else "approve"  # noqa: E731
        if roll < 0.7:
            a = rng.randrange(approvers)
            out.append(Planned("single", [a], {a: verdict()}, double_click=rng.random() < 0.07))
        elif roll < 0.9:
            people = rng.sample(range(approvers), 3)
            out.append(Planned("quorum", people, {a: verdict() for a in people}))
        else:
            g = rng.randrange(GROUPS)
            members = [i for i in range(approvers) if i % GROUPS == g]
            out.append(Planned("group", members, {a: verdict() for a in members}, group=g))
    return out


# ------------------------------------------------------------------------------------------------ results
@dataclass
class Answer:
    kind: str  # register, inbox, view, decide, click (one of several at once)
    status: int
    code: str | None
    retry_after: bool
    seconds: float
    shared: bool = False  # a decision on an approval others may decide at the same time (a quorum's)


@dataclass
class MemorySeries:
    """RSS samples (MiB) of one process over a phase: every `every_s` seconds."""
    every_s: float
    samples: list[float]

    @property
    def start(self) -> float:
        return self.samples[0]

    @property
    def end(self) -> float:
        return self.samples[-1]

    @property
    def slope_mib_per_min(self) -> float:
        """Least-squares slope over the whole series."""
        n = len(self.samples)
        if n < 2:
            return 0.0
        xs = [i * self.every_s / 60 for i in range(n)]
        mx, my = statistics.fmean(xs), statistics.fmean(self.samples)
        return sum((x - mx) * (y - my) for x, y in zip(xs, self.samples)) / sum((x - mx) ** 2 for x in xs)

    def window_mean(self, first: bool, seconds: float = 60) -> float:
        k = max(1, int(seconds / self.every_s))
        part = self.samples[:k] if first else self.samples[-k:]
        return statistics.fmean(part)


@dataclass
class LoadRun:
    side: str  # "ringi, D1", "ringi, DynamoDB", "reference design"
    rate: float
    seconds: float
    approvers: int
    registered: int
    offered: int
    register_seconds: float  # from the first scheduled registration to the last answer
    lag_p99_ms: float  # how late the last-percentile registration was sent against its schedule
    drain_seconds: float
    latency: dict[str, dict[str, float]]  # kind → n, p50, p95, p99, max (ms)
    answers: dict[str, int]  # "kind status code" → count
    unacceptable: dict[str, int]  # what is neither a success, a race's 409 nor a 429/503 with Retry-After
    throttled: dict[str, int]  # 429/503 with Retry-After
    races: dict[str, int]  # 409s answering concurrent clicks
    decisions: dict[str, int]  # approved / rejected / unconfirmed / undecided
    checks: dict[str, int]
    cpu_s_per_s: dict[str, float]  # process → CPU seconds per second of the phase
    rss_mib: dict[str, tuple[float, float]]  # process → (start, end)
    memory: dict[str, MemorySeries] = field(default_factory=dict)  # the soak's series
    unsent: int = 0  # registrations given up: not sent within LATE_S of their time
    control: dict = field(default_factory=dict)  # the soak's control worker: rate, requests, errors
    plan_counts: dict[str, int] = field(default_factory=dict)

    @property
    def achieved_rate(self) -> float:
        return self.registered / self.register_seconds if self.register_seconds else 0.0

    @property
    def sustained(self) -> bool:
        return self.registered >= 0.98 * self.offered and self.achieved_rate >= 0.95 * self.rate \
            and self.lag_p99_ms < 1000


# ------------------------------------------------------------------------------------------------ one side
class Side:
    """How the load reaches one serving side: ringi's API, or the reference design's server."""

    def __init__(self, stack, name: str, port: int, reference: bool = False):
        self.stack, self.name, self.port, self.reference = stack, name, port, reference

    def register(self, c: Client, p: Planned, token: str) -> tuple[Answer, str | None]:
        if self.reference:
            aid = secrets.token_urlsafe(16)
            st, data, t = c.request("POST", "/save", {"approvalId": aid, "approverUserId": approver_sub(p.approvers[0]),
                                                      "taskToken": token})
            return Answer("register", st, None, False, t), aid if st == 200 else None
        st, data, t = c.request("POST", "/api/v1/approvals", p.body(token),
                                {"authorization": f"Bearer {self.stack.api_key}"})
        a = _answer("register", st, data, c, t)
        return a, json.loads(data)["id"] if st == 201 else None

    def decision_path(self, aid: str) -> str:
        return f"/approvals/{aid}/decision" if self.reference else f"/api/v1/approvals/{aid}/decision"


def _answer(kind: str, st: int, data: bytes, c: Client, t: float) -> Answer:
    code = None
    if st >= 300:
        try:
            code = json.loads(data).get("error", {}).get("code")
        except (ValueError, AttributeError):
            code = None
    return Answer(kind, st, code, "retry-after" in c.last_headers, t)


class Phase:
    """One phase of the load on one side (see the module's docstring)."""

    def __init__(self, side: Side, rate: float, seconds: float, approvers: int, drain: float, poll: tuple,
                 runs: list, plans: list[Planned], senders: int = 32):
        self.side, self.rate, self.seconds, self.n_approvers = side, rate, seconds, approvers
        self.drain, self.poll, self.runs, self.plans, self.senders = drain, poll, runs, plans, senders
        self.lock = threading.Lock()
        self.answers: list[Answer] = []
        self.ids: dict[str, int] = {}  # approval id → plan index
        self.final: dict[str, str] = {}  # approval id → status the deciding answer said
        self.unconfirmed: dict[str, str] = {}  # approval id → the verdict ringi could not confirm
        self.handed: dict[int, deque] = defaultdict(deque)  # the reference design's links, per approver
        self.claimed_bursts: set[str] = set()
        self.lags: list[float] = []
        self.unsent = 0
        self.registering = True
        self.stop = threading.Event()

    def record(self, a: Answer) -> None:
        with self.lock:
            self.answers.append(a)

    # ---------------------------------------------------------------- registrations
    def sender(self, start: float, counter, tokens) -> None:
        c = Client(self.side.port)
        while True:
            with self.lock:
                i = None if self.stop.is_set() else next(counter, None)
            if i is None:
                break
            due = start + i / self.rate
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
            lag = time.monotonic() - due
            if lag > LATE_S:  # every sender stuck on slow answers: counted as not sent, the phase stays bounded
                with self.lock:
                    self.lags.append(lag)
                    self.unsent += 1
                continue
            p = self.plans[i]
            for _ in range(3):
                a, aid = self.side.register(c, p, tokens[i])
                self.record(a)
                if not (a.status in (429, 503) and a.retry_after):
                    break
                time.sleep(_retry_after(c))
            with self.lock:
                self.lags.append(lag)
                if aid:
                    self.ids[aid] = i
                    if self.side.reference:
                        self.handed[p.approvers[0]].append(aid)
        c.close()

    # ---------------------------------------------------------------- approvers
    def approver(self, me: int) -> None:
        rng = random.Random(1000 + me)
        c = Client(self.side.port)
        stack = self.side.stack
        token = stack.mint(approver_sub(me), groups=[team(me)])
        auth = {"authorization": f"Bearer {token}"}
        seen: set[str] = set()
        time.sleep(rng.uniform(0, self.poll[1]))
        while not self.stop.is_set():
            if self.side.reference:
                with self.lock:
                    new = list(self.handed[me])
                    self.handed[me].clear()
            else:
                st, data, t = c.request("GET", "/api/v1/approvals?status=pending", None, auth)
                self.record(_answer("inbox", st, data, c, t))
                new = [x["id"] for x in json.loads(data)["items"] if x["id"] not in seen] if st == 200 else []
            for aid in new:
                with self.lock:
                    i = self.ids.get(aid)
                if i is None:  # listed before its registration's answer was read: next time
                    continue
                seen.add(aid)
                p = self.plans[i]
                if not self.side.reference:
                    st, data, t = c.request("GET", f"/api/v1/approvals/{aid}", None, auth)
                    self.record(_answer("view", st, data, c, t))
                    if st != 200 or not json.loads(data).get("canDecide"):
                        continue
                time.sleep(rng.uniform(0.1, 0.4))  # reading it
                self.decide(c, me, aid, p, auth)
                if self.stop.is_set():
                    break
            self.stop.wait(rng.uniform(*self.poll))
        c.close()

    def decide(self, c: Client, me: int, aid: str, p: Planned, auth: dict) -> None:
        verdict = p.verdicts.get(me, "approve")
        if p.kind == "group" or p.double_click:
            with self.lock:
                if aid in self.claimed_bursts:
                    return
                self.claimed_bursts.add(aid)
            # Five members of the group at once (the reference design: its one approver, five times), or one
            # person's double click.
            if p.kind == "group":
                others = [a for a in p.approvers if a != me][:4]
                clickers = [me] + (others if not self.side.reference else [me] * 4)
            else:
                clickers = [me, me]
            stack = self.side.stack
            heads = [auth if who == me else {"authorization": f"Bearer {stack.mint(approver_sub(who), groups=[team(who)])}"}
                     for who in clickers]
            barrier = threading.Barrier(len(clickers))

            def click(k):
                cc = Client(self.side.port)
                barrier.wait(10)
                self.one_decision(cc, aid, p.verdicts.get(clickers[k], "approve"), heads[k], "click")
                cc.close()

            threads = [threading.Thread(target=click, args=(k,)) for k in range(len(clickers))]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            return
        self.one_decision(c, aid, verdict, auth, "decide", shared=p.kind == "quorum")

    def one_decision(self, c: Client, aid: str, verdict: str, auth: dict, kind: str, shared: bool = False) -> None:
        for _ in range(3):
            st, data, t = c.request("POST", self.side.decision_path(aid), {"decision": verdict}, auth)
            a = _answer(kind, st, data, c, t)
            a.shared = shared
            self.record(a)
            if st in (429, 503) and a.retry_after:
                time.sleep(_retry_after(c))
                continue
            break
        if st != 200:
            return
        with self.lock:
            if self.side.reference:
                self.final[aid] = "approved" if verdict == "approve" else "rejected"
                return
            status = json.loads(data).get("status")
            if status in DECIDED:
                self.final[aid] = status
            elif status == "decided_unconfirmed":
                self.unconfirmed[aid] = "approved" if json.loads(data).get("verdict") == "approve" else "rejected"

    # ---------------------------------------------------------------- the phase
    def run(self, tokens: list[str], meters) -> dict:
        n = len(tokens)
        counter = iter(range(n))
        start = time.monotonic() + 1.0
        before = meters()
        people = [threading.Thread(target=self.approver, args=(i,), daemon=True) for i in range(self.n_approvers)]
        for th in people:
            th.start()
        pool = ThreadPoolExecutor(self.senders)
        try:
            list(pool.map(lambda _: self.sender(start, counter, tokens), range(self.senders)))
            registered_at = time.monotonic()
            deadline = registered_at + self.drain
            while time.monotonic() < deadline:
                with self.lock:
                    left = len(self.ids) - len(self.final) - len(self.unconfirmed)
                if left <= 0:
                    break
                time.sleep(0.5)
        finally:
            self.stop.set()  # also when stopped from outside (SIGTERM): the senders and approvers end
            pool.shutdown(wait=True)
        for th in people:
            th.join(120)
        end = time.monotonic()
        after = meters()
        return {"start": start, "registered_at": registered_at, "end": end, "before": before, "after": after}


def _retry_after(c: Client) -> float:
    try:
        return min(float(c.last_headers.get("retry-after", "1")), 10.0)
    except ValueError:
        return 1.0


# ------------------------------------------------------------------------------------------------ measuring
def _latency(answers: list[Answer]) -> dict[str, dict[str, float]]:
    out = {}
    by = defaultdict(list)
    for a in answers:
        by[a.kind].append(a.seconds * 1000)
    for kind in ("register", "inbox", "view", "decide", "click"):
        if xs := by.get(kind):
            out[kind] = {"n": len(xs), "p50": pct(xs, 50), "p95": pct(xs, 95), "p99": pct(xs, 99), "max": max(xs)}
    return out


def _classify(answers: list[Answer]) -> tuple[dict, dict, dict, dict]:
    every, bad, throttled, races = Counter(), Counter(), Counter(), Counter()
    for a in answers:
        key = f"{a.kind} {a.status}" + (f" {a.code}" if a.code else "")
        every[key] += 1
        if a.status < 300:
            continue
        if a.status in (429, 503) and a.retry_after:
            throttled[key] += 1
        elif a.kind == "click" and a.status == 409 and (a.code in RACE_CODES or a.code is None):
            races[key] += 1  # the reference design's loser: 409 "already closed or expired", no code
        elif a.kind == "click" and a.status == 404 and a.code is None:
            races[key] += 1  # the reference design's loser after the winner deleted the item
        elif a.kind == "decide" and a.shared and a.status == 409 and a.code in RACE_CODES:
            races[key] += 1  # another approver of a quorum approval decided between this one's view and click
        else:
            bad[key] += 1
    return dict(every), dict(bad), dict(throttled), dict(races)


def _meters(stack, worker_name: str | None, port: int | None, extra: dict):
    """A function reading CPU ticks of the serving side's processes, moto's and this process's."""
    import os
    moto = next(p for p in stack.procs if p.name == "moto").popen.pid
    wp = worker_procs(stack, worker_name, port) if worker_name else None

    def read():
        t = os.times()
        out = {"moto": cpu_ticks(moto), "load generator": int((t.user + t.system) * os.sysconf("SC_CLK_TCK"))}
        if wp:
            out.update({f"workerd {k}" if k != "node" else "wrangler (node)": v for k, v in wp.ticks().items()})
        for name, pid in extra.items():
            out[name] = cpu_ticks(pid)
        return out
    return read, wp


CONTROL = Path(__file__).resolve().parents[1] / "control"


class Control:
    """The soak's control (scripts/bench/control): a trivial JavaScript worker with a D1 write and a D1 read per
    request, under its own `wrangler dev` of the same version, driven at `rate` requests/s by four keep-alive
    clients for as long as the soak runs. What its runtime's memory does per request is the local runtime's share;
    what ringi's does beyond that is ringi's."""

    NAME = "soak-control"

    def __init__(self, stack, rate: float):
        self.stack, self.rate = stack, rate
        self.requests = self.errors = 0
        self.counting = threading.Lock()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> "Control":
        port = free_port()
        proc = self.stack._spawn(self.NAME, [
            "wrangler", "dev", "--local", "--ip", "127.0.0.1", "--port", str(port), "--inspector-port",
            str(free_port()), "--config", str(CONTROL / "wrangler.json"), "--persist-to",
            str(self.stack.state / self.NAME), "--show-interactive-dev-session=false", "--log-level", "log"],
            cwd=CONTROL)
        self.stack._wait(proc, lambda: http_ok(f"http://127.0.0.1:{port}/"), 60)
        self.port, self.wp = port, WorkerProcs(proc.popen.pid, port)
        self.inspector = isolate.inspector_url(self.wp.node)
        clients = 4
        for i in range(clients):
            t = threading.Thread(target=self._drive, args=(clients / self.rate, i / self.rate), daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def _drive(self, every: float, offset: float) -> None:
        c = Client(self.port, timeout=30)
        due = time.monotonic() + offset
        while not self.stopping.wait(max(0.0, due - time.monotonic())):
            due += every
            try:
                status, _, _ = c.request("GET", "/")
            except OSError:
                status = 0
            with self.counting:  # four driving threads: `+=` is not atomic
                self.requests += 1
                self.errors += status != 200
        c.close()

    def readings(self) -> dict[str, float]:
        r = isolate.read(self.inspector, lambda: requests.get(f"http://127.0.0.1:{self.port}/ping", timeout=10))
        return {"control: workerd runtime": sum(map(rss_kib, self.wp.runtime)) / 1024,
                "control: workerd proxy": sum(map(rss_kib, self.wp.proxy)) / 1024,
                "control: V8 heap after GC": r.heap_used_mib}

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=35)
        self.stack.stop_component(self.NAME)


def _isolate(wp) -> "Callable[[], dict[str, float]]":
    """Readings of ringi's isolate (wasm memory, V8 heap after GC) through wrangler's inspector."""
    url = isolate.inspector_url(wp.node)

    def read() -> dict[str, float]:
        r = isolate.read(url, lambda: requests.get(f"http://127.0.0.1:{wp.port}/healthz", timeout=10))
        return {"ringi: wasm linear memory": r.wasm_mib, "ringi: V8 heap after GC": r.heap_used_mib}
    return read


def _rss(stack, wp, extra: dict) -> dict[str, float]:
    moto = next(p for p in stack.procs if p.name == "moto").popen.pid
    out = {"moto": rss_kib(moto) / 1024}
    if wp:
        out["workerd runtime"] = sum(map(rss_kib, wp.runtime)) / 1024
        out["workerd proxy"] = sum(map(rss_kib, wp.proxy)) / 1024
    for name, pid in extra.items():
        out[name] = rss_kib(pid) / 1024
    return out


def run_side(stack, side: Side, backend_name: str | None, worker_name: str | None, proxy, workflows, rate: float,
             seconds: float, approvers: int, drain: float, poll: tuple, sample_every: float | None = None,
             extra_procs: dict | None = None, control: Control | None = None) -> LoadRun:
    """One phase on one side, then its checks. With `sample_every`, memory is sampled through the phase: the
    processes' resident memory, ringi's isolate, and the `control` worker running beside it."""
    e2e_support()  # support.backends is imported by verify
    extra = extra_procs or {}
    n = int(rate * seconds)
    plans = plan(n, approvers)
    log(f"load {side.name}: starting {n} paused executions …")
    t0 = time.monotonic()
    runs = workflows.start_many(n, timeout=TASK_TIMEOUT)
    log(f"load {side.name}: {n} executions paused in {time.monotonic() - t0:.0f} s; {rate:g}/s for {seconds:g} s, "
        f"{approvers} approvers")
    tokens = [tok for _, tok in runs]
    meters, wp = _meters(stack, worker_name, side.port, extra)
    rss_start = _rss(stack, wp, extra)
    series: dict[str, list[float]] = defaultdict(list)
    sampling = threading.Event()
    probes = [_isolate(wp)] if sample_every and wp else []
    if control:
        control.start()
        probes.append(control.readings)

    def take(first: dict | None = None):
        reading = dict(first or _rss(stack, wp, extra))
        for probe in probes:
            reading.update(probe())
        for k, v in reading.items():
            series[k].append(v)

    if sample_every:
        take(rss_start)

        def sample():
            while not sampling.wait(sample_every):
                take()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    ph = Phase(side, rate, seconds, approvers, drain, poll, runs, plans)
    try:
        t = ph.run(tokens, meters)
    finally:
        sampling.set()
        if sample_every:
            sampler.join(timeout=60)  # its last reading is taken while the control still runs
        if control:
            control.stop()
    rss_end = _rss(stack, wp, extra)
    elapsed = t["end"] - t["start"]
    cpu = {k: (t["after"][k] - t["before"][k]) / os.sysconf("SC_CLK_TCK") / elapsed for k in t["after"]}
    every, bad, throttled, races = _classify(ph.answers)
    registered = len(ph.ids)
    checks = verify(stack, side, backend_name, worker_name, proxy, workflows, ph, runs)
    decided = Counter(ph.final.values())
    run = LoadRun(
        side=side.name, rate=rate, seconds=seconds, approvers=approvers, registered=registered, offered=n,
        register_seconds=t["registered_at"] - t["start"], lag_p99_ms=pct(ph.lags, 99) * 1000 if ph.lags else 0.0,
        drain_seconds=t["end"] - t["registered_at"], latency=_latency(ph.answers), answers=every, unacceptable=bad,
        throttled=throttled, races=races,
        decisions={"approved": decided.get("approved", 0), "rejected": decided.get("rejected", 0),
                   "decided, unconfirmed": len(ph.unconfirmed),
                   "undecided at the end": registered - len(ph.final) - len(ph.unconfirmed)},
        checks=checks, cpu_s_per_s=cpu, rss_mib={k: (rss_start[k], rss_end.get(k, 0.0)) for k in rss_start},
        memory={k: MemorySeries(sample_every, v) for k, v in series.items()} if sample_every else {},
        unsent=ph.unsent, plan_counts=dict(Counter(p.kind for p in plans)) | {"double click": sum(p.double_click for p in plans)},
        control=({"rate": control.rate, "requests": control.requests, "errors": control.errors} if control else {}))
    log(f"load {side.name}: {registered}/{n} registered in {run.register_seconds:.1f} s "
        f"({run.achieved_rate:.1f}/s, p99 lag {run.lag_p99_ms:.0f} ms), decisions {run.decisions}, "
        f"unacceptable {bad or 'none'}, checks {checks}")
    return run


def verify(stack, side: Side, backend_name, worker_name, proxy, workflows, ph: Phase, runs) -> dict:
    """What the phase left behind: each approval's answer against its store and its execution in moto."""
    sfn = workflows.sfn
    by_index = {i: aid for aid, i in ph.ids.items()}
    backend = None
    if backend_name:
        from support.backends import Backend
        backend = Backend(backend_name, stack, f"http://127.0.0.1:{side.port}", workflows)
    lost = unconfirmed_resumed = wrong_state = dup_sent = dup_accepted = resumed_undecided = store_mismatch = 0
    claimed: list[str] = []
    kw = {"worker": worker_name.removeprefix("worker-")} if backend_name == "d1" else {}
    for i, (arn, token) in enumerate(runs):
        aid = by_index.get(i)
        n_sent, n_ok = proxy.attempts.get(token, 0), proxy.forwarded.get(token, 0)
        dup_sent += max(0, n_sent - 1)
        dup_accepted += max(0, n_ok - 1)
        d = sfn.describe_execution(executionArn=arn)
        out = json.loads(d.get("output") or "{}")
        resumed = "approved" if "approval" in out else "rejected" if "rejection" in out else None
        status = None
        if backend and aid:
            status = backend.stored(aid, "status", **kw)["status"]
            if status == "claimed":
                claimed.append(aid)
        said = ph.final.get(aid) if aid else None
        if said:
            if d["status"] != "SUCCEEDED" or resumed != said:
                lost += 1
            if backend and status != said:
                store_mismatch += 1
        elif aid in ph.unconfirmed:
            if d["status"] == "SUCCEEDED" and resumed == ph.unconfirmed[aid]:
                unconfirmed_resumed += 1
            elif d["status"] != "RUNNING":
                lost += 1  # resumed, but not as the decision said
        else:
            if d["status"] != "RUNNING":
                resumed_undecided += 1
            if backend and aid and status not in ("pending",):
                wrong_state += 1
    held = _held_after_lease(stack, backend, side, claimed, kw)
    return {"decisions lost (answered, execution not resumed so)": lost,
            "store not as answered": store_mismatch,
            "executions resumed without a decision answered": resumed_undecided,
            "undecided approvals not pending in the store": wrong_state,
            "claims at the end of the phase (a lease still running, or one that ran out)": len(claimed) if backend else -1,
            "claims still held after the lease and a cron run": held if backend else -1,
            "decided, unconfirmed, yet the workflow resumed so": unconfirmed_resumed,
            "duplicate callbacks sent to Step Functions": dup_sent,
            "duplicate callbacks accepted by Step Functions": dup_accepted}


def _held_after_lease(stack, backend, side: Side, claimed: list[str], kw: dict) -> int:
    """Of the approvals still claimed when the phase ended, how many are held once every lease has run out and the
    cron has run: a claim whose request died (or whose release failed) is not a stuck approval unless it outlives
    its lease. D1's cron puts them back to pending; on DynamoDB a claim past its lease is claimable as it is."""
    if not claimed:
        return 0
    time.sleep(stack.claim_lease_seconds + 1)
    stack.run_cron(f"http://127.0.0.1:{side.port}")
    now_ms = time.time() * 1000
    held = 0
    for aid in claimed:
        row = backend.stored(aid, "status", "claimed_until", **kw)
        held += row["status"] == "claimed" and int(row["claimed_until"] or 0) > now_ms
    return held


def load_benchmark(stack, rate: float, seconds: float, approvers: int, drain: float, poll: tuple,
                   soak_rate: float, soak_seconds: float, dynamodb_rate: float | None = None,
                   sample_every: float = 10.0) -> dict:
    """ringi on DynamoDB at `dynamodb_rate` (default `rate`), ringi on D1 and the reference design at `rate`, each for
    `seconds`; the soak (D1) at `soak_rate` for `soak_seconds`: {"runs": [LoadRun…], "soak": LoadRun | None}."""
    e2e_support()
    from support.api import Workflows
    from support.faultproxy import FaultProxy
    from harness import SEED_PORT
    dynamodb_rate = dynamodb_rate or rate
    proxy = FaultProxy(stack.ports.moto).start()
    proxy.mode = "ok"
    sfn = f"http://127.0.0.1:{proxy.port}"
    out = {"runs": [], "soak": None}

    def fresh_moto():
        """Each phase on a moto of its own: moto keeps every execution and item in one Python process, and what
        the earlier sections and phases left there slows every later Step Functions and DynamoDB call."""
        stack.restart_moto()
        return Workflows(stack, timeouts=(TASK_TIMEOUT,))

    def ringi(label: str, name: str, backend: str, at: float, length: float, **kw) -> LoadRun:
        """One phase on a worker of its own and a fresh moto, the worker stopped afterwards."""
        workflows = fresh_moto()
        extra = {**stack.dynamodb_vars(), "SFN_ENDPOINT": sfn} if backend == "dynamodb" else {"SFN_ENDPOINT": sfn}
        url = stack.extra_worker(name, extra)
        try:
            return run_side(stack, Side(stack, label, _port(url)), backend, f"worker-{name}", proxy, workflows, at,
                            length, approvers, drain, poll, **kw)
        finally:
            stack.stop_component(f"worker-{name}")

    try:
        out["runs"].append(ringi("ringi, DynamoDB", "load-ddb", "dynamodb", dynamodb_rate, seconds))
        out["runs"].append(ringi("ringi, D1", "load-d1", "d1", rate, seconds))
        workflows = fresh_moto()
        seed = setup_seed(stack, table="seed-load", port=SEED_PORT, name="seed-load", sfn_endpoint=sfn)
        try:
            out["runs"].append(run_side(stack, Side(stack, "reference design", SEED_PORT, reference=True), None, None,
                                        proxy, workflows, rate, seconds, approvers, drain, poll,
                                        extra_procs={"reference server": seed.popen.pid}))
        finally:
            stack.stop_component("seed-load")
        if soak_seconds > 0:
            out["soak"] = ringi("ringi, D1 (soak)", "soak-d1", "d1", soak_rate, soak_seconds, sample_every=sample_every,
                                control=Control(stack, CONTROL_RATE))
    finally:
        proxy.stop()
    return out


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# ------------------------------------------------------------------------------------------------ the section
def _counts(d: dict) -> str:
    return "; ".join(f"`{k}` × {v}" for k, v in sorted(d.items())) or "none"


def markdown(result: dict, when: str, machine: str, command: str) -> str:
    runs, soak = result["runs"], result.get("soak")
    first = runs[0] if runs else soak
    sides = runs + ([soak] if soak else [])
    kinds = ("register", "inbox", "view", "decide", "click")
    names = {"register": "register", "inbox": "inbox (pending)", "view": "open an approval",
             "decide": "decide (one request)", "click": "decide (one of concurrent clicks)"}
    out = [
        f"## 11. Load: {first.approvers} approvers and registrations at a steady rate for {first.seconds:g} s, and a soak",
        "",
        f"Measured {when} on {machine} with `{command}`. **Everything on the same 2 cores**: the load generator "
        "(Python threads, one keep-alive connection per approver), workerd and wrangler (`wrangler dev`, local D1), "
        "moto (Step Functions executing the paused state machines, DynamoDB), the IdP stand-in and the reference "
        "design's server; the numbers are what this machine sustains with all of them, not a server's capacity.",
        "",
        f"The load (`scripts/bench/measure/load.py`), the same on every side: {first.approvers} approvers, each "
        "signed in once (one access token for the phase, as the SPA keeps its session), sub `load-NNN` in one of ten "
        f"groups; registrations **open loop at a steady rate for {first.seconds:g} s** (the rate column below; sent "
        "at their scheduled times by 32 senders, whatever the answers take), each for a real paused "
        "execution (a Standard state machine paused on `sqs:sendMessage.waitForTaskToken`, started before the "
        "phase); the approvals (seeded, the same sequence on every side): "
        + ", ".join(f"{k} {v}" for k, v in first.plan_counts.items())
        + " — *single*: one approver; *quorum*: three approvers, two needed; *group*: a group's approval that five of "
        "its members decide at the same moment; *double click*: two requests at once by the one approver. One "
        "verdict in ten is a rejection. Each approver looks at their inbox every 3–7 s, opens what is new, reads it "
        "0.1–0.4 s and decides; after the registrations they go on until every approval is decided (at most the "
        "drain time). A 429/503 with `Retry-After` is retried after it (three tries at most). The **reference "
        "design** (API Gateway + Lambda + DynamoDB, §1) has no inbox, no read API, no quorum and no groups: its "
        "approvers get each link handed over (as its mail would), decide it without opening it, and its group "
        "approvals are one approver clicking five times at once. The sides run one after another on the same "
        "stack, each on a worker of its own (ringi) or the reference server and on a fresh moto (restarted before "
        "each phase: what earlier sections and phases leave in moto's one process slows it down); a proxy in front of moto counts every "
        "Step Functions callback per task token (`tests/e2e/support/faultproxy.py`, forwarding everything).",
        "",
        "| side | rate | registered / offered | achieved rate | p99 send lag | sustained | drain | approved | rejected | "
        "decided, unconfirmed | undecided at the end |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sides:
        d = r.decisions
        unsent = f" ({r.unsent} not sent: over {LATE_S:.0f} s late)" if r.unsent else ""
        out.append(f"| {r.side} | {r.rate:g}/s | {r.registered} / {r.offered}{unsent} | {r.achieved_rate:.1f}/s | {r.lag_p99_ms:.0f} ms | "
                   f"{'yes' if r.sustained else '**no**'} | {r.drain_seconds:.0f} s | {d['approved']} | {d['rejected']} | "
                   f"{d['decided, unconfirmed']} | {d['undecided at the end']} |")
    for r in sides:
        if r.side.startswith("ringi, DynamoDB") and not r.sustained:
            moto = r.rss_mib.get("moto", (0.0, 0.0))
            out += ["", f"**{r.side} did not sustain {r.rate:g}/s**, although on a fresh moto: the "
                    "DynamoDB here is moto's, which serves one operation at a time (the stand-in's lock, "
                    "standins/moto_server.py §8) and copies every table for each transaction; its resident memory "
                    f"grew from {moto[0]:.0f} to {moto[1]:.0f} MiB in the phase while it used "
                    f"{r.cpu_s_per_s.get('moto', 0):.2f} of a core. The worker's DynamoDB calls timed out and it "
                    "answered 503 `storage_unavailable` with `Retry-After` (below). These figures measure the "
                    "stand-in under this load, not DynamoDB; the checks after the phase are what holds for ringi "
                    "on a store that stalls."]
    out += ["", "Latency per request type, ms (p50 / p95 / p99 / max; n):", "",
            "| request | " + " | ".join(r.side for r in sides) + " |",
            "|---|" + "---|" * len(sides)]
    for k in kinds:
        cells = []
        for r in sides:
            x = r.latency.get(k)
            cells.append("—" if not x else f"{x['p50']:.0f} / {x['p95']:.0f} / {x['p99']:.0f} / {x['max']:.0f}; "
                                           f"{x['n']:.0f}")
        out.append(f"| {names[k]} | " + " | ".join(cells) + " |")
    total = lambda r: sum(x["n"] for x in r.latency.values())  # noqa: E731
    out.append("| **all requests per second** | " + " | ".join(
        f"{total(r) / (r.register_seconds + r.drain_seconds):.1f}" for r in sides) + " |")
    out += ["", "Answers other than 2xx, by request, status and code:", "",
            "| side | 429/503 with Retry-After | 409/404 to the losers of concurrent clicks (correct answers) | "
            "anything else (findings) |", "|---|---|---|---|"]
    for r in sides:
        out.append(f"| {r.side} | {_counts(r.throttled)} | {_counts(r.races)} | "
                   f"{'**' + _counts(r.unacceptable) + '**' if r.unacceptable else 'none'} |")
    checks = list(first.checks)
    out += ["", "After each phase, every approval's answer against its store and its execution in moto "
            "(`describe_execution`: the output says which branch the workflow took):", "",
            "| check | " + " | ".join(r.side for r in sides) + " |", "|---|" + "---|" * len(sides)]
    for c in checks:
        out.append(f"| {c} | " + " | ".join("—" if r.checks[c] < 0 else
                                            (f"**{r.checks[c]}**" if r.checks[c] else "0") for r in sides) + " |")
    procs = sorted({k for r in sides for k in r.cpu_s_per_s})
    out += ["", "CPU (seconds per second of the phase, 2.0 = both cores) and resident memory at the start → end of "
            "each phase, MiB:", "",
            "| process | " + " | ".join(r.side for r in sides) + " |", "|---|" + "---|" * len(sides)]
    for p in procs:
        cells = []
        for r in sides:
            cpu = r.cpu_s_per_s.get(p)
            rss = r.rss_mib.get(p)
            cells.append(("—" if cpu is None else f"{cpu:.2f}") + (f"; {rss[0]:.0f} → {rss[1]:.0f}" if rss else ""))
        out.append(f"| {p} | " + " | ".join(cells) + " |")
    if soak and soak.memory:
        m = soak.memory
        out += ["", f"**Soak**: {soak.rate:g}/s for {soak.seconds:g} s on D1 (the last column above), resident "
                f"memory sampled every {m[next(iter(m))].every_s:g} s:", "",
                "| process | start | end | min | max | first minute (mean) | last minute (mean) | slope |",
                "|---|---|---|---|---|---|---|---|"]
        for p, s in m.items():
            f = "{:.0f}" if s.end >= 20 else "{:.2f}"  # the isolate's few MiB need the decimals
            cells = [s.start, s.end, min(s.samples), max(s.samples), s.window_mean(True), s.window_mean(False)]
            out.append(f"| {p} | " + " | ".join(map(f.format, cells)) + f" | {s.slope_mib_per_min:+.2f} MiB/min |")
        rt = m.get("workerd runtime")
        if rt:
            per_min = max(1, int(60 / rt.every_s))
            out += ["", "workerd runtime, one sample a minute (MiB): "
                    + ", ".join(f"{x:.0f}" for x in rt.samples[::per_min]) + "."]
        out += ["", "*ringi: wasm linear memory* and *V8 heap after GC* are read inside the worker's isolate through "
                "the runtime workerd's inspector (`scripts/bench/measure/isolate.py`: a full GC, then "
                "`Runtime.getHeapUsage` and every `WebAssembly.Memory`'s size): the worker's own memory. The rows "
                "*control: …* are the control worker beside the soak (`scripts/bench/control/`: plain JavaScript, "
                "one D1 write, one D1 read and a log line per request, its own `wrangler dev`), driven at a steady "
                "rate for the same time: what the local runtime's processes grow by when the code they run keeps nothing."]
        c = soak.control
        ringi_requests = sum(x["n"] for x in soak.latency.values())
        growth = lambda k: m[k].end - m[k].start if k in m else None  # noqa: E731
        if c and ringi_requests and c["requests"]:
            rows = [("ringi (soak)", ringi_requests, 0, growth("workerd runtime"), growth("workerd proxy")),
                    ("control", c["requests"], c["errors"], growth("control: workerd runtime"),
                     growth("control: workerd proxy"))]
            out += ["", "Resident memory growth per 1,000 requests over the soak:", "",
                    "| worker | requests | errors | workerd runtime | workerd proxy |", "|---|---|---|---|---|"]
            for name, n, errors, rt_g, px_g in rows:
                per = lambda g: "—" if g is None else f"{g / n * 1000:+.1f} MiB"  # noqa: E731
                out.append(f"| {name} | {n} | {errors} | {per(rt_g)} | {per(px_g)} |")
    out.append("")
    return "\n".join(out)

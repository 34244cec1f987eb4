#!/usr/bin/env python3
"""`make bench`: ringi's benchmarks on its own local stack, written to docs/benchmarks.md.

    . scripts/build/env.sh && python scripts/bench/run.py                             # everything but opt levels
    BENCH_OPT_LEVELS=1 python scripts/bench/run.py                              # + opt-level "s" builds (~6+ min)
    BENCH_TWIGGY=1 python scripts/bench/run.py                                  # + what the SPA wasm is made of
    python scripts/bench/run.py --quick --no-write                              # small counts, smoke run
    python scripts/bench/run.py --only spa                                      # SPA sizes + first load (`make
                                                                                # bench BENCH_ONLY=spa`), ~2 min
    python scripts/bench/run.py --only lighthouse                               # Lighthouse alone, ~3 min

Starts its own stack with ringi_stack.Stack (stack/ringi_stack/) (worker 8887, moto 5410, IdP 9410; state in .ringi/bench),
then measures (one module of measure/ each, typed results in results.py, the document from report.md.j2):
  1. decision round trip, ringi vs the reference design (API Gateway + Lambda + DynamoDB, from the article ringi
     improves on: its Lambda handlers behind a local API-Gateway-like server, scripts/bench/seed_server.py), same
     moto, same run, real paused executions, interleaved (measure/decision.py);
  2. workerd CPU per request type, cold start, bundle size (measure/worker.py, measure/sizes.py);
  3. SPA transfer size and time to interactive on a deep link under 4x CPU + Slow 4G (measure/spa.py);
  4. the inbox at 1k/10k/100k pending approvals of one user, bulk-loaded into the local D1 SQLite file
     (measure/inbox.py);
  5. JWT verification throughput (measure/worker.py);
  6. (BENCH_OPT_LEVELS=1) opt-level "s" vs "z" for both wasm artefacts (measure/opt_levels.py);
  7. (BENCH_TWIGGY=1) what the SPA wasm is made of (measure/twiggy.py);
  8. the latency model: every request type with each remote round trip delayed by a stated RTT, for three
     placements (the worker near the approver, Smart Placement, the reference design) (measure/placement.py);
  10. D1 vs DynamoDB (`STORAGE=dynamodb`): register / view / decide latency and round trips (measure/storage.py);
  11. load (`--only load`): 100 signed-in approvers and registrations at a steady rate for 60 s (20/s) against ringi
     on DynamoDB (5/s: moto's DynamoDB is the limit there), on D1 and the reference design, each on a fresh moto,
     one after another, each checked afterwards against moto's executions (nothing lost, no duplicate callback, no
     claim left); then a soak on D1 at a lower rate with memory sampled (`--soak-seconds`, default 600; `make bench
     BENCH_ONLY=load BENCH_SOAK_SECONDS=60` for a short preview) (measure/load.py);
  9. Lighthouse (mobile preset) on the approval page and the inbox, signed in (measure/lighthouse.py; Lighthouse is
     installed into $RINGI_HOME/lighthouse at bench time; without it the previous document's section is kept).
  and the first-load baseline: the commit the first-load targets were set against, built once into target/baseline
     and measured in the same run (cold loads, sizes, Lighthouse) beside this build (measure/baseline.py).
Every loop is bounded in count and time; everything listens on 127.0.0.1; everything started is stopped.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import re
import shlex
import signal
import sys
import time

from harness import (DOC, PORTS, ROOT, SEED_PORT, STATE, T0, Paused, log, make_tree,
                     register_synthetic, run_workers_from, seed_dir, setup_seed, worker_procs)
from common import Client, cpu_ticks, machine, versions
from ringi_stack import Stack, fresh_state

from measure.baseline import REV as BASELINE_REV, build_baseline, measure_baseline
from measure.decision import side_by_side
from measure.inbox import inbox_scale, inbox_sql
from measure.lighthouse import ensure_installed, lighthouse
from measure.load import load_benchmark
from measure.opt_levels import build_opt_levels, opt_levels
from measure.placement import placements
from measure.sizes import bundle_sizes
from measure.spa import NEW_TAB_CONDITIONS, SPA_CONDITIONS, SPA_LABELS, spa_new_tab, spa_tti
from measure.storage import storage_backends
from measure.twiggy import twiggy
from measure.worker import cold_starts, request_types, throughput
from report import (LIGHTHOUSE_BEGIN, LIGHTHOUSE_END, LOAD_BEGIN, LOAD_END, OPT_BEGIN, OPT_END, STORAGE_BEGIN,
                    STORAGE_END, TWIGGY_BEGIN, TWIGGY_END, load_text, placement_text, previous_section, replace_section,
                    report, storage_text)
from results import Params, Results

SECTIONS = ("sizes", "cold", "decision", "placement", "types", "throughput", "inbox", "spa", "lighthouse", "storage",
            "baseline", "load")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts (a smoke run of the benchmark itself)")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/benchmarks.md")
    ap.add_argument("--only", default="", help="comma-separated sections: " + ",".join(SECTIONS) + ",opt")
    ap.add_argument("--opt-levels", action="store_true", default=os.environ.get("BENCH_OPT_LEVELS") == "1")
    ap.add_argument("--twiggy", action="store_true", default=os.environ.get("BENCH_TWIGGY") == "1",
                    help="what the SPA wasm is made of (an extra names-kept build into target/twiggy; needs twiggy)")
    ap.add_argument("--soak-seconds", type=float, default=None,
                    help="the load section's soak length (default 600; 0: no soak)")
    ap.add_argument("--load-rate", type=float, default=None, help="the load section's registrations per second")
    ap.add_argument("--load-rate-dynamodb", type=float, default=None, help="the same on DynamoDB (default 5)")
    ap.add_argument("--write-section", action="store_true",
                    help="with --only load: write that one section into docs/benchmarks.md, the rest kept as it is")
    args = ap.parse_args()
    # `make` or a CI runner stopping us with SIGTERM must still run the `finally` that stops the stack.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    q = args.quick
    params = Params.quick() if q else Params()
    if args.soak_seconds is not None:
        params.soak_seconds = args.soak_seconds
    if args.load_rate is not None:
        params.load_rate = args.load_rate
    if args.load_rate_dynamodb is not None:
        params.load_rate_dynamodb = args.load_rate_dynamodb
    sections = set(filter(None, args.only.split(","))) or set(SECTIONS)
    if args.opt_levels:
        sections.add("opt")
    if args.write_section and sections != {"load"}:
        sys.exit("--write-section writes the load section alone: use it with --only load")
    if not (seed_dir() / "seed_approve.py").exists() and sections & {"decision", "load"}:
        sys.exit(f"the reference design's handlers are not at {seed_dir()} (set RINGI_SEED_DIR)")
    command = " ".join(shlex.quote(a) for a in ["python", "scripts/bench/run.py", *sys.argv[1:]])
    if args.opt_levels:
        command = "BENCH_OPT_LEVELS=1 " + command
    if args.twiggy:
        command = "BENCH_TWIGGY=1 " + command
    r = Results(date=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), machine=machine(),
                versions=versions(), params=params, command=command)
    log(f"machine: {r.machine}")
    if "inbox" in sections:
        log("inbox SQL: cargo run -q -p ringi-core --example inbox_sql -- 2 pending")
        sql = inbox_sql(2)  # before the stack: cargo may wait for another build's lock on target/
    if args.twiggy:
        log("twiggy: building the SPA wasm with names into target/twiggy …")
        html = (ROOT / "dist" / "index.html").read_text()
        shipped = ROOT / "dist" / re.search(r'name="ringi-wasm" content="/([^"]+)"', html).group(1)
        r.twiggy = twiggy(shipped.stat().st_size)
    if "lighthouse" in sections:
        t = time.monotonic()
        r.lighthouse_missing = ensure_installed(log)  # before the stack: an npm install may take a while
        lighthouse_setup_s = time.monotonic() - t
        if r.lighthouse_missing:
            log(f"lighthouse: not measured ({r.lighthouse_missing})")
            if args.only:
                sys.exit(f"lighthouse is not available: {r.lighthouse_missing}")
    if "opt" in sections:
        log("building both wasm artefacts at opt-level z and s into target/opt-{z,s}, before the stack starts …")
        opt_build = build_opt_levels()
    if "baseline" in sections:
        log(f"baseline: building {BASELINE_REV[:7]} into target/baseline (once per commit), before the stack starts …")
        baseline_build = build_baseline()
    # The benchmark registers thousands of approvals a minute with one API key: lift the per-credential limit
    # (REGISTER_RATE_PER_MINUTE, default 600) to its maximum.
    stack = Stack(state=fresh_state(STATE), ports=PORTS, claim_lease_seconds=30, say=lambda m: log(m.strip()),
                  extra_vars={"REGISTER_RATE_PER_MINUTE": "100000"})
    tree = make_tree(STATE / "tree", ROOT / "edge" / "build", ROOT / "dist")
    run_workers_from(stack, tree)
    if "sizes" in sections or "spa" in sections:
        r.sizes = bundle_sizes(tree / "edge" / "build", tree / "dist")
    stack.start()
    try:
        wp = worker_procs(stack, "worker", stack.ports.worker)
        log(f"worker processes: runtime workerd {wp.runtime}, proxy workerd {wp.proxy}, node {wp.node}")
        if "decision" in sections:
            seed = setup_seed(stack)
            log(f"side by side: {params.decisions} decisions each …")
            s = r.side_by_side = side_by_side(stack, Paused(stack), params.decisions, params.warmup, stack.ports.worker,
                                              wp, other_port=SEED_PORT, other_cpu=lambda: {"seed": cpu_ticks(seed.popen.pid)})
            log(f"ringi {s.ringi.median_ms:.1f}/{s.ringi.p99_ms:.1f} ms, reference "
                f"{s.other.median_ms:.1f}/{s.other.p99_ms:.1f} ms (median/p99)")
            stack.stop_component("seed")
        if "placement" in sections:
            log(f"latency model: {params.placement_requests} requests per type and placement …")
            r.placements = placements(stack, params.placement_requests, params.cold_runs)
        inbox_ids = None
        if "types" in sections or "spa" in sections or "lighthouse" in sections:
            log("request types …")
            rt = request_types(stack, wp, params.requests if "types" in sections else 1,
                               params.rounds if "types" in sections else 1)
            inbox_ids = rt.inbox_ids
            if "types" in sections:
                r.request_types = rt
        if "throughput" in sections:
            log("JWT verification throughput …")
            r.throughput = throughput(stack, wp, params.concurrency, params.throughput_requests,
                                      params.throughput_seconds)
        if "spa" in sections:
            log("SPA time to interactive …")
            for key, throttle, user, warm, sw, encoding in SPA_CONDITIONS:
                d = r.tti[key] = spa_tti(stack, stack.base_url, inbox_ids[0], params.tti_runs, throttle, user, warm, sw,
                                         encoding)
                log(f"TTI {key}: median {d.median_tti_ms:.0f} ms (ended by {', '.join(d.ended_by)})")
            demo_user = json.loads((ROOT / "standins/oidc/users.json").read_text())[0]
            for key, cold in NEW_TAB_CONDITIONS:
                d = r.tti[key] = spa_new_tab(stack, stack.base_url, demo_user, params.tti_runs, cold)
                log(f"new tab {key}: decision usable {d.median_usable_ms:.0f} ms, form interactive {d.median_tti_ms:.0f} ms")
        if "cold" in sections:
            log("cold starts …")
            r.cold_start = cold_starts(stack, params.cold_runs)
        if "inbox" in sections:
            log("inbox at scale …")
            r.inbox = inbox_scale(stack, params.inbox_sizes, params.requests, sql)
        if "opt" in sections:
            def approval_for(port):
                c = Client(port)
                try:
                    return register_synthetic(c, stack.api_key, [{"sub": "bench-tti"}], "TTI")
                finally:
                    c.close()
            r.opt_levels = opt_levels(stack, opt_build, params.opt_decisions, params.warmup, params.tti_runs,
                                      approval_for)
        if "storage" in sections:
            log(f"storage backends: {params.storage_rounds} rounds each on D1 and DynamoDB …")
            r.storage = storage_backends(stack, Paused(stack), params.storage_rounds, params.warmup)
        if "load" in sections:
            log(f"load: {params.load_approvers} approvers, {params.load_rate:g} registrations/s for "
                f"{params.load_seconds:g} s on D1 and the reference design, {params.load_rate_dynamodb:g}/s on DynamoDB; "
                f"soak {params.soak_rate:g}/s for {params.soak_seconds:g} s …")
            r.load = load_benchmark(stack, params.load_rate, params.load_seconds, params.load_approvers,
                                    params.load_drain_seconds, (3.0, 7.0), params.soak_rate, params.soak_seconds,
                                    dynamodb_rate=params.load_rate_dynamodb)
        if "lighthouse" in sections and not r.lighthouse_missing:
            log(f"Lighthouse, mobile preset: {params.lighthouse_runs} runs per page …")
            lh = r.lighthouse = lighthouse(stack, stack.base_url, inbox_ids[0], "bench-inbox", params.lighthouse_runs)
            lh.setup_seconds = lighthouse_setup_s
            for page in lh.pages.values():
                log(f"Lighthouse {page.label}: " + ", ".join(f"{c} {s:.0f}" for c, s in page.scores.items()))
        if "baseline" in sections:
            lh_runs = params.lighthouse_runs if "lighthouse" in sections and not r.lighthouse_missing else None
            log(f"baseline {BASELINE_REV[:7]}: first loads{' and Lighthouse' if lh_runs else ''} …")
            r.baseline = measure_baseline(stack, baseline_build, params.tti_runs, lh_runs)
    finally:
        stack.stop()
    r.duration_s = time.monotonic() - T0
    r.loadavg_at_end = os.getloadavg()
    r.previous_opt_section = previous_section(OPT_BEGIN, OPT_END)
    r.previous_twiggy_section = previous_section(TWIGGY_BEGIN, TWIGGY_END)
    r.previous_lighthouse_section = previous_section(LIGHTHOUSE_BEGIN, LIGHTHOUSE_END)
    r.previous_storage_section = previous_section(STORAGE_BEGIN, STORAGE_END)
    r.previous_load_section = previous_section(LOAD_BEGIN, LOAD_END)
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / "results.json").write_text(json.dumps(dataclasses.asdict(r), indent=1, default=str))
    term, doc = report(r)
    print("\n" + term + "\n")
    print(placement_text(doc))
    for key, d in r.tti.items():
        print(f"\n{SPA_LABELS[key]}: median {d.median_tti_ms:.0f} ms, runs " + ", ".join("%.0f" % x.tti_ms for x in d.runs))
        for s in d.steps:
            f = lambda x: "" if x is None else f"{x:.0f}"  # noqa: E731
            print(f"  {s.label:<90} {f(s.start):>6} → {f(s.end):>6} ms  {'' if s.bytes is None else f'{s.bytes:,.0f} B'}")
    if bl := r.baseline:
        for key, d in bl.tti.items():
            print(f"\nbaseline {bl.rev[:7]}, {SPA_LABELS[key]}: median {d.median_tti_ms:.0f} ms, runs "
                  + ", ".join("%.0f" % x.tti_ms for x in d.runs))
    if r.storage:
        print("\n" + storage_text(r))
    if r.load:
        print("\n" + load_text(r))
    if lh := r.lighthouse:
        print(f"\nLighthouse {lh.version}, {lh.settings['formFactor']}, {lh.settings['throttlingMethod']} throttling; "
              f"median of {lh.runs} per page ({lh.seconds:.0f} s, + {lh.setup_seconds:.0f} s install check)")
        for page in lh.pages.values():
            print(f"  {page.label}: " + ", ".join(f"{c} {s:.0f}" for c, s in page.scores.items()) + "; "
                  + ", ".join(f"{m} {v:.3f}" if m == "cumulative-layout-shift" else f"{m} {v:.0f} ms"
                              for m, v in page.metrics.items()))
            print("    runs: " + "; ".join(str(x["scores"]) for x in page.runs))
            print("    LCP element: " + " | ".join(page.lcp_elements))
            print("    LCP phases per run: " + "; ".join(str(x.get("lcp_phases")) for x in page.runs))
            for a in page.failing:
                print(f"    failing [{a['category']}] {a['id']} (weight {a['weight']}, {a['runs']}/{lh.runs} runs, "
                      f"score {a['scores']}) {a['display']}")
            for w in page.warnings:
                print(f"    warning: {w}")
    # A partial run (--only) would drop the other sections from docs/benchmarks.md: preview only, except the load
    # section alone on request (its run is long; the rest of the document stays as its own run wrote it).
    if args.write_section and r.load and not args.no_write and not q:
        DOC.write_text(replace_section(DOC.read_text(), LOAD_BEGIN, LOAD_END, load_text(r)))
        print(f"written: the load section of {DOC.relative_to(ROOT)} (raw results: "
              f"{(STATE / 'results.json').relative_to(ROOT)})")
    elif not args.no_write and not q and not args.only:
        DOC.write_text(doc)
        print(f"written: {DOC.relative_to(ROOT)} (raw results: {(STATE / 'results.json').relative_to(ROOT)})")
    else:
        (STATE / "benchmarks.md").write_text(doc)
        print(f"not written to docs/ ({'--quick' if q else '--only' if args.only else '--no-write'}); preview: "
              f"{(STATE / 'benchmarks.md').relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""The first load's baseline, measured in the same run as this build: the commit the first-load targets were set
against (docs/benchmarks.md "First load on a phone"), built from `git archive` into target/baseline/ and served by
a worker of this run's stack, so that both builds meet the same machine, load, browser and throttling."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

from common import Client
from harness import ROOT, launch_worker, log, make_tree, register_inbox, tree_for
from ringi_stack import free_port
from results import Baseline

from measure.lighthouse import lighthouse
from measure.sizes import bundle_sizes
from measure.spa import SPA_CONDITIONS, spa_tti

# The commit whose first load the targets were set against (385.6 KiB gzip, 4.66 s / 5.32 s): one bundle, the
# sign-in and the config fetch inside the wasm, no precompression, no service worker.
REV = "46b4a80c2c2d00b8eb43ece10c58ce9903657618"
# Its cold loads, the ones the targets speak of (keys of measure/spa.py's SPA_CONDITIONS).
CONDITIONS = ("throttled", "signed_in_throttled", "throttled_br", "signed_in_throttled_br")
BASE = ROOT / "target" / "baseline"


def build_baseline(rev: str = REV) -> dict:
    """The baseline's worker and SPA, built by its own scripts (its `make build` without its Makefile) into
    target/baseline/src, with a target dir of its own so that this tree's build stays incremental. Built once per
    commit: a later run reuses the build."""
    src, done_mark = BASE / "src", BASE / "src" / ".built"
    times = {}
    if done_mark.exists() and done_mark.read_text() == rev:
        log(f"baseline {rev[:7]}: reusing the build in {src}")
    else:
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
        # Its tools are this tree's (same pinned versions): its env.sh looks for them under its own root.
        (src / "node_modules").symlink_to(ROOT / "node_modules")
        env = {k: v for k, v in os.environ.items() if k != "RINGI_ROOT"}
        env.update(RINGI_ROOT=str(src), CARGO_TARGET_DIR=str(BASE / "target"))
        # Its own wasm-env.sh, wherever its scripts kept it then.
        wasm_env = next(str(f) for f in (src / "scripts" / "build" / "wasm-env.sh", src / "scripts" / "wasm-env.sh")
                        if f.exists())
        for what, cmd, cwd in [("worker", [wasm_env, "worker-build", "--release"], src / "edge"),
                               ("spa", [wasm_env, "trunk", "build", "--release"], src)]:
            t0 = time.monotonic()
            run = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"baseline {what}: {' '.join(cmd)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
            times[what] = time.monotonic() - t0
        done_mark.write_text(rev)
        log(f"baseline {rev[:7]} built: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    subject = subprocess.run(["git", "log", "-1", "--format=%h %cs %s", rev], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
    return {"rev": rev, "subject": subject, "times": times, "edge_build": src / "edge" / "build",
            "dist": src / "dist", "tree": make_tree(BASE / "tree", src / "edge" / "build", src / "dist", src / "edge")}


def measure_baseline(stack, b: dict, tti_runs: int, lighthouse_runs: int | None) -> Baseline:
    """The baseline's bundle sizes, its cold first loads (as measure/spa.py measures this build's) and, when
    `lighthouse_runs`, its Lighthouse scores, on a worker of its own (own D1) beside this run's."""
    port, name = free_port(), "worker-baseline"
    try:
        with tree_for(stack, b["tree"]):
            launch_worker(stack, name, port)
        c = Client(port)
        try:
            approval = register_inbox(c, stack.api_key)[0]
        finally:
            c.close()
        url = f"http://127.0.0.1:{port}"
        tti = {}
        for key, throttle, user, warm, sw, encoding in SPA_CONDITIONS:
            if key in CONDITIONS:
                d = tti[key] = spa_tti(stack, url, approval, tti_runs, throttle, user, warm, sw, encoding)
                log(f"baseline TTI {key}: median {d.median_tti_ms:.0f} ms (ended by {', '.join(d.ended_by)})")
        lh = lighthouse(stack, url, approval, "bench-inbox", lighthouse_runs) if lighthouse_runs else None
    finally:
        if any(p.name == name for p in stack.procs):
            stack.stop_component(name)
    return Baseline(rev=b["rev"], subject=b["subject"], build_times=b["times"],
                    sizes=bundle_sizes(b["edge_build"], b["dist"]), tti=tti, lighthouse=lh)

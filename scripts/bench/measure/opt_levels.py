"""opt-level "z" vs "s" (on request, BENCH_OPT_LEVELS=1): both wasm artefacts built at each level from the same
sources, then their sizes, decisions side by side and the SPA's first load."""
from __future__ import annotations

import os
import subprocess
import time

from harness import ROOT, Paused, launch_worker, log, make_tree, tree_for, worker_procs
from ringi_stack import free_port
from results import OptLevels

from measure.decision import side_by_side
from measure.sizes import bundle_sizes
from measure.spa import spa_tti


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
            ("worker", ["../scripts/build/wasm-env.sh", "worker-build", "--release", "--out-dir", f"../target/opt-{level}/edge-build"],
             ROOT / "edge"),
            ("spa", ["scripts/build/wasm-env.sh", "--spa", "trunk", "build", "--release", "--dist", str(base / "dist")], ROOT)]:
            t0 = time.monotonic()
            done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            times[what] = time.monotonic() - t0
        log(f"opt-level {level} built: {times}")
        out[level] = {"times": times, "edge_build": base / "edge-build", "dist": base / "dist",
                      "tree": make_tree(base / "tree", base / "edge-build", base / "dist")}
    return out


def opt_levels(stack, b: dict, n: int, warmup: int, tti_runs: int, approval_id_for) -> OptLevels:
    sizes = {lvl: bundle_sizes(b[lvl]["edge_build"], b[lvl]["dist"]) for lvl in ("z", "s")}
    ports, wps = {}, {}
    try:
        for lvl in ("z", "s"):
            ports[lvl] = free_port()
            with tree_for(stack, b[lvl]["tree"]):
                launch_worker(stack, f"worker-opt{lvl}", ports[lvl])
            wps[lvl] = worker_procs(stack, f"worker-opt{lvl}", ports[lvl])
        # "ringi" = opt-level z, "other" = opt-level s.
        dec = side_by_side(stack, Paused(stack), n, warmup, ports["z"], wps["z"], other_port=ports["s"],
                           other_kind="ringi", other_cpu=wps["s"].ticks)
        tti = {lvl: spa_tti(stack, f"http://127.0.0.1:{ports[lvl]}", approval_id_for(ports[lvl]), tti_runs, True)
               for lvl in ("z", "s")}
    finally:
        for lvl in ports:
            if any(p.name == f"worker-opt{lvl}" for p in stack.procs):
                stack.stop_component(f"worker-opt{lvl}")
    return OptLevels(build_times={lvl: b[lvl]["times"] for lvl in b}, sizes=sizes, decision=dec, tti=tti)

"""Lighthouse on the SPA signed in (the approval page /a/{id} and the inbox /), Lighthouse's mobile preset: scores,
key metrics and the audits that keep a score below 100, median of a few runs. Lighthouse (npm, pinned) is installed at
bench time into $RINGI_HOME/lighthouse, not into the project's package.json (CI's `npm ci` stays lean)."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from ringi_stack import chromium
from common import session_record
from harness import HERE
from measure.spa import BROTLI_FIRST
from results import Lighthouse, LighthousePage

VERSION = "12.2.3"
CATEGORIES = ["performance", "accessibility", "best-practices"]
# (key, label, path, Accept-Encoding or None): the pages measured, each signed in as the inbox user of
# measure/worker.py's request types; each as served locally (gzip) and as over HTTPS (brotli: see measure/spa.py).
PAGES = [("approval", "approval page `/a/{id}`", "/a/{id}", None), ("inbox", "inbox `/`", "/", None),
         ("approval_br", "approval page `/a/{id}`, brotli (as over HTTPS)", "/a/{id}", BROTLI_FIRST),
         ("inbox_br", "inbox `/`, brotli (as over HTTPS)", "/", BROTLI_FIRST)]
INSTALL_HINT = (f"`npm install --no-save --prefix ~/.cache/ringi/lighthouse lighthouse@{VERSION}` (the benchmark does it "
                "itself when the npm registry is reachable)")


def lighthouse_dir() -> Path:
    return Path(os.environ.get("RINGI_HOME", Path.home() / ".cache" / "ringi")) / "lighthouse"


def installed() -> bool:
    pkg = lighthouse_dir() / "node_modules" / "lighthouse" / "package.json"
    return pkg.exists() and json.loads(pkg.read_text()).get("version") == VERSION


def ensure_installed(log) -> str | None:
    """Installs the pinned Lighthouse unless it is there; None when ready, else why not (the section says so)."""
    if installed():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH"
    log(f"installing lighthouse@{VERSION} into {lighthouse_dir()} …")
    done = subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(lighthouse_dir()),
                           f"lighthouse@{VERSION}"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not installed():
        return f"`npm install lighthouse@{VERSION}` failed: {(done.stderr or done.stdout).strip()[-300:]}"
    return None


def lighthouse(stack, base_url: str, approval_id: str, signed_in_as: str, runs: int) -> Lighthouse:
    """`runs` Lighthouse runs per page (each in a fresh browser: cold cache), signed in as `signed_in_as`."""
    script = lighthouse_dir() / "ringi-lighthouse.mjs"
    shutil.copy2(HERE / "measure" / "lighthouse.mjs", script)  # beside its node_modules, so its imports resolve
    session = session_record(stack.mint(signed_in_as, groups=["ops"], ttl=7200), 7200_000)
    job = {"chromium": chromium.EXECUTABLE, "args": ["--headless=new", *chromium.ARGS], "runs": runs,
           "setup_url": base_url + "/healthz", "session": session, "categories": CATEGORIES,
           "pages": [{"key": key, "url": base_url + path.replace("{id}", approval_id),
                      "headers": {"Accept-Encoding": encoding} if encoding else None} for key, _, path, encoding in PAGES]}
    t0 = time.monotonic()
    # The job holds a bearer token: on stdin, never on a command line.
    done = subprocess.run(["node", str(script)], input=json.dumps(job), cwd=lighthouse_dir(), capture_output=True,
                          text=True, timeout=300 * runs * len(PAGES))
    if done.returncode != 0:
        raise RuntimeError(f"lighthouse failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    left = {r["final_url"] for rs in out["pages"].values() for r in rs if not r["final_url"].startswith(base_url + "/")}
    if left:
        raise RuntimeError(f"signed in, yet Lighthouse ended elsewhere (the session was not taken?): {sorted(left)}")
    pages = {}
    for key, label, path, _ in PAGES:
        rs = out["pages"][key]
        failing: dict[str, dict] = {}
        for r in rs:
            for a in r["failing"]:
                f = failing.setdefault(a["id"], {**a, "runs": 0, "scores": []})
                f["runs"] += 1
                f["scores"].append(a["score"])
        url = base_url + path.replace("{id}", approval_id)
        pages[key] = LighthousePage(
            label=label, path=path, redirected_to=sorted({r["final_url"] for r in rs if r["final_url"] != url}),
            scores={c: statistics.median(r["scores"][c] for r in rs) for c in CATEGORIES},
            metrics={m: statistics.median(r["metrics"][m] for r in rs) for m in rs[0]["metrics"]},
            runs=[{"scores": r["scores"], "metrics": r["metrics"], "lcp_phases": r.get("lcp_phases", {})} for r in rs],
            failing=sorted(failing.values(), key=lambda a: (CATEGORIES.index(a["category"]), -a["weight"], a["id"])),
            warnings=sorted({w for r in rs for w in r["warnings"]}),
            lcp_elements=sorted({r["lcp_element"] for r in rs if r["lcp_element"]}))
    return Lighthouse(version=out["lighthouse"], browser=out["browser"], settings=out["settings"], runs=runs,
                      seconds=time.monotonic() - t0, pages=pages)

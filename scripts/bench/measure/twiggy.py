"""What the SPA wasm is made of (on request, BENCH_TWIGGY=1): the same SPA built once more with its names kept,
then twiggy's items summed by crate."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

from harness import ROOT
from results import Twiggy


def twiggy_bin() -> Path:
    return Path(os.environ.get("RINGI_HOME", Path.home() / ".cache" / "ringi")) / "cargo" / "bin" / "twiggy"


def build_named_spa_wasm() -> tuple[Path, dict]:
    """The SPA's main wasm module as shipped (same sources, release profile, split, wasm-bindgen, wasm-opt -Oz with
    index.html's feature flags) but with its name section kept (`strip = false`, `wasm-opt -g`), so that twiggy can name the code.
    Own target dir (target/twiggy): dist/ and the shared target/ are not touched."""
    base = ROOT / "target" / "twiggy"
    env = dict(os.environ, CARGO_TARGET_DIR=str(base), CARGO_PROFILE_RELEASE_STRIP="false")
    times = {}
    t0 = time.monotonic()
    cmd = ["scripts/build/wasm-env.sh", "--spa", "cargo", "build", "--release", "--target", "wasm32-unknown-unknown", "-p", "ringi-app",
           "--bin", "ringi-app"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    times["cargo"] = time.monotonic() - t0
    raw = base / "wasm32-unknown-unknown" / "release" / "ringi-app.wasm"
    # The main module, as scripts/build/split.mjs ships it: the parts on demand split off first.
    split = base / "split"
    subprocess.run(["wasm-split-cli", str(raw), str(split)], check=True, capture_output=True)
    out = base / "bindgen"
    subprocess.run([os.environ.get("WASM_BINDGEN_BIN", "wasm-bindgen"), "--target", "web", "--keep-lld-exports",
                    "--out-dir", str(out), "--out-name", "ringi-app", str(split / "main.wasm")],
                   check=True, capture_output=True)
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


def twiggy(wasm_bytes: int) -> Twiggy:
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
    return Twiggy(version=version, times=times, named_bytes=named.stat().st_size, shipped_bytes=wasm_bytes,
                  top=top[:25], crates=sorted(crates.items(), key=lambda kv: -kv[1])[:30], total=total)

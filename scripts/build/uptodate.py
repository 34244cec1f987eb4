#!/usr/bin/env python3
"""Skips a wasm build whose inputs have not changed since it last succeeded, so that a no-change `make dev` starts
the stack at once instead of re-running Trunk's and worker-build's whole pipelines (cargo alone would be quick;
wasm-bindgen, wasm-opt, minifying and precompressing are not).

    uptodate.py spa|worker          exit 0: up to date (stamp matches, outputs there); 1: build it
    uptodate.py spa|worker --done   after a successful build: the inputs as they were when it started count

The inputs are the files git knows (tracked, or untracked and not ignored) under the build's paths, read from
disk, and the toolchain's version. A digest taken before the build is what `--done` records, so an edit made
while it ran is built next time."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(os.environ.get("RINGI_ROOT") or Path(__file__).resolve().parents[2])
STAMPS = ROOT / "target" / "stamps"
COMMON = ["Cargo.toml", "Cargo.lock", "core", "scripts/build", "package-lock.json"]
BUILDS = {
    # name: (its own input paths, the outputs that must exist)
    "spa": (["app", "sign-in", "Trunk.toml", "index.html", "style", "public"], ["dist/index.html", "dist/admin.html"]),
    "worker": (["edge/src", "edge/Cargo.toml"], ["edge/build/worker/shim.mjs", "edge/build/index_bg.wasm"]),
}


def inputs(name: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                          *COMMON, *BUILDS[name][0]], cwd=ROOT, capture_output=True, check=True).stdout
    return sorted({f for f in out.decode().split("\0") if f})


def digest(name: str) -> str:
    h = hashlib.sha256(subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.encode())
    for f in inputs(name):
        p = ROOT / f
        h.update(f.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"<gone>") + b"\0")
    return h.hexdigest()


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or argv[0] not in BUILDS or argv[1:] not in ([], ["--done"]):
        raise SystemExit(f"usage: uptodate.py {'|'.join(BUILDS)} [--done]")
    name = argv[0]
    stamp, pending = STAMPS / f"{name}.sha256", STAMPS / f"{name}.pending"
    if argv[1:] == ["--done"]:
        pending.replace(stamp)
        return 0
    now = digest(name)
    if all((ROOT / o).exists() for o in BUILDS[name][1]) and stamp.is_file() and stamp.read_text() == now:
        return 0
    STAMPS.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)  # a build that fails leaves no stamp behind
    pending.write_text(now)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Sizes of what is shipped: the worker bundle and everything the SPA's index.html makes the browser load."""
from __future__ import annotations

import re
from pathlib import Path

from common import br_sizes, gz
from results import BundleSizes, Size, SpaFile, SpaSizes


def bundle_sizes(edge_build: Path, dist: Path) -> BundleSizes:
    worker = {}
    for f in ("index_bg.wasm", "index.js"):
        data = (edge_build / f).read_bytes()
        worker[f] = Size(raw=len(data), gzip=gz(data))
    worker["total"] = Size(**{k: sum(getattr(v, k) for v in worker.values()) for k in ("raw", "gzip")})
    return BundleSizes(worker=worker, spa=spa_sizes(dist))


def spa_sizes(dist: Path) -> SpaSizes:
    """Everything dist/index.html makes the browser load on an approval page's first open: itself, boot.js, CSS, the
    app JS (modulepreload) and wasm (preload), favicon and manifest. The parts on demand (`<meta name="ringi-chunk">`,
    scripts/build/split.mjs) and the sign-in's module (`<meta name="ringi-sign-in-…">`, scripts/build/sign-in.mjs)
    apart: each is fetched only by the page that shows it (the module by the sign-in's callback)."""
    html = (dist / "index.html").read_text()
    chunks = dict((path.lstrip("/"), parts) for parts, path in
                  re.findall(r'<meta name="ringi-chunk" data-parts="([^"]*)" content="(/[^"]+)"', html))
    chunks |= {path.lstrip("/"): "the sign-in's module, /auth/callback" for path in
               re.findall(r'<meta name="ringi-sign-in-(?:js|wasm)" content="(/[^"]+)"', html)}
    refs = re.findall(r'(?:src|href|content)="(/[^"]+)"', html)
    files = {"index.html": (dist / "index.html").read_bytes()}
    for ref in refs:
        p = dist / ref.lstrip("/")
        if p.is_file() and ref.lstrip("/") not in chunks:
            files[ref.lstrip("/")] = p.read_bytes()
    brs = br_sizes(list(files.values()))
    out = {name: SpaFile(raw=len(b), gzip=gz(b), br=n) for (name, b), n in zip(files.items(), brs)}
    wasm = next(k for k in out if k.endswith(".wasm"))
    total = SpaFile(**{k: sum(getattr(v, k) for v in out.values()) for k in ("raw", "gzip", "br")})
    datas = [(dist / name).read_bytes() for name in chunks]
    parts = {f"{name} ({chunks[name]})": SpaFile(raw=len(b), gzip=gz(b), br=n)
             for name, b, n in zip(chunks, datas, br_sizes(datas))}
    return SpaSizes(files=out, total=total, wasm=out[wasm], parts=parts)

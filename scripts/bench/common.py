"""Helpers of `make bench`: a keep-alive HTTP client, compressed sizes, per-process CPU time from /proc, the
machine and tool versions."""
from __future__ import annotations

import gzip
import http.client
import json
import os
import platform
import re
import subprocess
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parents[2]


def session_record(bearer: str, ttl_ms: int) -> dict:
    """A signed-in tab's session as the SPA keeps it (sessionStorage['ringi.session'], app/src/infra/auth.rs
    `Session`), put there by the benchmark instead of a sign-in. `accessToken` is the bearer's name in the builds
    before OpenID Connect (the first-load baseline, measure/baseline.py): each build reads its own and ignores the
    other."""
    now_ms = int(time.time() * 1000)
    return {"bearer": bearer, "accessToken": bearer, "expiresAt": now_ms + ttl_ms, "obtainedAt": now_ms,
            "viaReauth": False}


# --------------------------------------------------------------------------------------------- HTTP
class Client:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1:port (http.client: little client-side overhead)."""

    def __init__(self, port: int, timeout: float = 60):
        self.port, self.timeout = port, timeout
        self.conn = None
        self.last_headers: dict[str, str] = {}

    def request(self, method: str, path: str, body=None, headers=None) -> tuple[int, bytes, float]:
        """(status, body, seconds) — seconds from sending the request to the last byte of the response."""
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            headers = {"content-type": "application/json", **(headers or {})}
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
                dt = time.perf_counter() - t0
                self.last_headers = {k.lower(): v for k, v in resp.getheaders()}
                if resp.getheader("connection", "").lower() == "close":
                    self.close()
                return resp.status, data, dt
            except (http.client.HTTPException, ConnectionError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# --------------------------------------------------------------------------------------------- sizes
def gz(data: bytes) -> int:
    """Size after gzip -9 (gzip.compress at level 9 writes the same deflate stream and header size)."""
    return len(gzip.compress(data, compresslevel=9, mtime=0))


def br_sizes(blobs: list[bytes]) -> list[int]:
    """Sizes after brotli quality 11 (Node's built-in zlib brotli, the encoder of scripts/build/precompress.mjs)."""
    import base64
    script = ("const z=require('zlib');let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{"
              "const out=JSON.parse(s).map(b=>{const buf=Buffer.from(b,'base64');return z.brotliCompressSync(buf,"
              "{params:{[z.constants.BROTLI_PARAM_QUALITY]:11,[z.constants.BROTLI_PARAM_SIZE_HINT]:buf.length}})"
              ".length});process.stdout.write(JSON.stringify(out));});")
    done = subprocess.run(["node", "-e", script], input=json.dumps([base64.b64encode(b).decode() for b in blobs]),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# --------------------------------------------------------------------------------------------- /proc
def _stat(pid: int) -> tuple[str, list[str]] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rp = raw.rindex(")")
    return raw[raw.index("(") + 1:rp], raw[rp + 2:].split()  # fields[0] is field 3 (state) of proc(5)


def cpu_ticks(pid: int) -> int:
    s = _stat(pid)
    return int(s[1][11]) + int(s[1][12]) if s else 0  # utime + stime, all threads


def rss_kib(pid: int) -> int:
    """A process's resident set (VmRSS), KiB; 0 once it is gone."""
    try:
        m = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0
    return int(m.group(1)) if m else 0


def start_boottime(pid: int) -> float | None:
    """When the process started, in seconds of CLOCK_BOOTTIME (proc(5) starttime)."""
    s = _stat(pid)
    return int(s[1][19]) / CLK_TCK if s else None


def group_procs(pgid: int) -> dict[int, str]:
    """pid → comm of every process in a process group (a `wrangler dev` and its workerd children)."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = _stat(int(d))
            if s and int(s[1][2]) == pgid:
                out[int(d)] = s[0]
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class WorkerProcs:
    """The processes of one `wrangler dev`: node (wrangler), the proxy workerd that listens on the public port
    and the runtime workerd that runs the worker (listens on a random port, has the inspector)."""

    def __init__(self, wrangler_pid: int, port: int):
        self.wrangler_pid, self.port = wrangler_pid, port
        self.refresh()

    def refresh(self):
        procs = group_procs(self.wrangler_pid)
        self.runtime, self.proxy, self.node = [], [], []
        for pid, comm in procs.items():
            if comm == "workerd":
                (self.proxy if f"entry=127.0.0.1:{self.port} " in cmdline(pid) + " " else self.runtime).append(pid)
            elif pid == self.wrangler_pid or comm.startswith("node"):
                self.node.append(pid)
        return self

    def ticks(self) -> dict:
        before = (self.runtime, self.proxy)
        if (self.runtime, self.proxy) != before or (self.refresh().runtime, self.proxy) != before:
            raise RuntimeError(f"the workerd processes of the worker on port {self.port} changed (a reload?): "
                               f"{before} → {(self.runtime, self.proxy)}")
        return {"runtime": sum(map(cpu_ticks, self.runtime)), "proxy": sum(map(cpu_ticks, self.proxy)),
                "node": sum(map(cpu_ticks, self.node))}


class CpuMeter:
    """CPU seconds used by some processes between start() and stop() (utime+stime; I/O waits do not count)."""

    def __init__(self, read):
        self.read = read

    def __enter__(self):
        self.before = self.read()
        self.result = None
        return self

    def __exit__(self, *exc):
        after = self.read()
        self.result = {k: (after[k] - self.before[k]) / CLK_TCK for k in after}


# --------------------------------------------------------------------------------------------- machine, versions
def _run(cmd, cwd=ROOT) -> str:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else "?"
    except Exception as e:  # a missing tool is reported, not fatal
        return f"? ({e.__class__.__name__})"


def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    mem_kb = int(re.search(r"^MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text(), re.M).group(1))
    return {"nproc": os.cpu_count(), "cpu": model.group(1) if model else "?", "ram_gib": round(mem_kb / 1024 ** 2, 1),
            "kernel": platform.release(), "os": _os_name(), "loadavg_at_start": os.getloadavg()}


def _os_name() -> str:
    try:
        return re.search(r'^PRETTY_NAME="?([^"\n]*)', Path("/etc/os-release").read_text(), re.M).group(1)
    except Exception:
        return platform.platform()


def lock_version(crate: str) -> str:
    m = re.search(rf'^name = "{re.escape(crate)}"\nversion = "([^"]+)"', (ROOT / "Cargo.lock").read_text(), re.M)
    return m.group(1) if m else "?"


def versions() -> dict:
    import importlib.metadata as md
    py = {p: md.version(p) for p in ("moto", "boto3", "botocore", "PyJWT", "cryptography", "playwright")}
    workerd = next(ROOT.glob("node_modules/@cloudflare/workerd-linux-64/bin/workerd"), None)
    return {
        "rustc": _run(["rustc", "--version"]),
        "cargo": _run(["cargo", "--version"]),
        "worker (crate)": lock_version("worker"),
        "leptos (crate)": lock_version("leptos"),
        "wasm-bindgen": lock_version("wasm-bindgen"),
        "worker-build": _run(["worker-build", "--version"]),
        "trunk": _run(["trunk", "--version"]),
        "wasm-opt": _run(["wasm-opt", "--version"]),
        "wrangler": _run(["wrangler", "--version"]),
        "workerd": _run([str(workerd), "--version"]) if workerd else "?",
        "node": _run(["node", "--version"]),
        "python": platform.python_version(),
        **py,
        "chromium": _run(["/usr/bin/chromium", "--version"]),
        "sqlite (python sqlite3)": __import__("sqlite3").sqlite_version,
    }

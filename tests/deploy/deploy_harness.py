"""What the deploy tests share: deploy/deploy.py run against the `aws` and `wrangler` stand-ins
(standins/cli/) on a scratch copy of the files it reads, and a fake worker for its health check.
The fixtures are in conftest.py; tests import from here (a module named `conftest` would be the e2e suite's
when both directories are collected together).

Nothing here talks to AWS or Cloudflare, and no test writes into the checkout: each deployment works in its own
copy (edge/wrangler.toml, edge/migrations/, a stub deploy/aws/render.py that returns deploy/aws/ringi.yaml of
the copy), selected with deploy.py's hidden --root option.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "deploy.py"
STANDINS = ROOT / "standins" / "cli"
CLOUDFLARE_ACCOUNT = "0123456789abcdef0123456789abcdef"  # the wrangler stand-in's account
STUB_RENDER = ('from pathlib import Path\n\n\ndef render(root):\n'
               '    return (Path(root) / "deploy/aws/ringi.yaml").read_text()\n')
STUB_TEMPLATE = 'AWSTemplateFormatVersion: "2010-09-09"\nDescription: stand-in template\nResources: {}\n'
SETTINGS = {"RINGI_NAME": "ringi", "AWS_REGION": "eu-central-1", "PUBLIC_HOST": "approvals.example.com",
            "COGNITO_DOMAIN_PREFIX": "example-approvals", "MAIL_FROM": "ringi@example.com"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def load_deploy_module():
    """deploy/deploy.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("ringi_deploy", DEPLOY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module



class FakeWorker:
    """Answers /healthz and /config.json from what the wrangler stand-in deployed, like the real worker would.
    mode: "ok"; "down" (503); "stale" (an old client id); "late" (503 for the first `late` requests)."""

    def __init__(self, state_path: Path):
        self.state_path, self.mode, self.late, self.requests = state_path, "ok", 0, 0
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                status, body = worker.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, path: str) -> tuple[int, dict]:
        self.requests += 1
        if self.mode == "down" or (self.mode == "late" and self.requests <= self.late):
            return 503, {"error": {"code": "internal", "message": "not yet"}}
        if path == "/healthz":
            return 200, {"status": "ok"}
        workers = json.loads(self.state_path.read_text())["cloudflare"]["workers"]
        v = next(w["deployed"] for w in workers.values() if w["deployed"])["vars"]
        return 200, {"cognitoDomain": v["COGNITO_DOMAIN"], "issuer": v.get("OIDC_ISSUER") or v["COGNITO_ISSUER"],
                     "clientId": "stale-client" if self.mode == "stale" else
                     v.get("OIDC_CLIENT_ID") or v["COGNITO_CLIENT_ID"],
                     "redirectUri": f"{v['PUBLIC_BASE_URL']}/auth/callback", "defaultLocale": v["DEFAULT_LOCALE"],
                     "version": "0.1.0"}


@dataclass
class Deployer:
    """One simulated AWS + Cloudflare account and one checkout copy; `run` is one `make deploy`."""

    root: Path
    state_path: Path
    log_path: Path
    worker: FakeWorker
    settings: dict = field(default_factory=lambda: dict(SETTINGS))
    outputs: list[str] = field(default_factory=list)  # stdout + stderr of every run, for the leak checks

    def write_settings(self, **changes: str) -> None:
        self.settings.update(changes)
        text = "".join(f"{k}={v}\n" for k, v in self.settings.items())
        (self.root / "deploy" / "ringi.env").write_text(text)

    def run(self, *flags: str, fail: str | None = None, check_timeout: float = 3) -> subprocess.CompletedProcess:
        self.write_settings()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CLOUDFLARE_", "RINGI_STANDIN"))}
        # The stand-ins' `#!/usr/bin/env python3` finds this interpreter first (not a slow pyenv shim).
        path = os.pathsep.join([str(STANDINS), str(Path(sys.executable).parent), os.environ["PATH"]])
        env.update(PATH=path, RINGI_STANDIN_LOG=str(self.log_path),
                   RINGI_STANDIN_STATE=str(self.state_path), CLOUDFLARE_API_TOKEN="cf-token-standin",
                   CLOUDFLARE_ACCOUNT_ID=CLOUDFLARE_ACCOUNT)
        if fail:
            env["RINGI_STANDIN_FAIL"] = fail
        argv = [sys.executable, str(DEPLOY), "--root", str(self.root),
                "--settings", str(self.root / "deploy/ringi.env"),
                "--skip-build", "--check-base", self.worker.url, "--check-timeout", str(check_timeout),
                "--key-grace-seconds", "0", *flags]
        proc = subprocess.run(argv, env=env, cwd=self.root, capture_output=True, text=True, timeout=120)
        self.outputs.append(proc.stdout + proc.stderr)
        return proc

    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def calls(self) -> list[dict]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]


def new_deployer(tmp_path: Path) -> Deployer:
    """A fresh simulated account pair and a scratch checkout: edge/wrangler.toml and edge/migrations/ copied,
    deploy/aws/render.py a stub that returns the copy's deploy/aws/ringi.yaml (a small template tests edit)."""
    root = tmp_path / "checkout"
    (root / "deploy" / "aws").mkdir(parents=True)
    (root / "edge").mkdir()
    shutil.copy(ROOT / "edge" / "wrangler.toml", root / "edge" / "wrangler.toml")
    shutil.copytree(ROOT / "edge" / "migrations", root / "edge" / "migrations")
    (root / "deploy" / "aws" / "render.py").write_text(STUB_RENDER)
    (root / "deploy" / "aws" / "ringi.yaml").write_text(STUB_TEMPLATE)
    shutil.copy(ROOT / "deploy" / "aws" / "member.yaml", root / "deploy" / "aws" / "member.yaml")
    state = tmp_path / "standin-state.json"
    return Deployer(root=root, state_path=state, log_path=tmp_path / "standin-calls.jsonl", worker=FakeWorker(state))

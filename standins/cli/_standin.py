"""What the `aws` and `wrangler` stand-ins share: the call log, the simulated account, injected failures.

    RINGI_STANDIN_LOG    JSON lines, one per call: program, argv, stdin, cwd and the *names* of the env vars
    RINGI_STANDIN_STATE  JSON file: the simulated AWS account and Cloudflare account (see aws / wrangler)
    RINGI_STANDIN_FAIL   "PROGRAM WORD…[#N]": the Nth call (default 1st) whose argv starts with WORD… fails,
                         e.g. "wrangler secret bulk" or "wrangler secret bulk#2" (counted over the state's
                         lifetime: a spec fails once per state file)

Secret values are kept in the state where the real service would keep them (a stack parameter, an IAM key),
so that tests can look for them everywhere else; worker secrets are kept as SHA-256 digests, names visible.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Call:
    """One invocation of a stand-in: logs itself, holds the state, saves it on `done`."""

    def __init__(self, program: str):
        self.program = program
        self.argv = sys.argv[1:]
        self.env_names = sorted(os.environ)
        self.stdin = sys.stdin.read() if not sys.stdin.isatty() else ""
        self.state_path = Path(os.environ["RINGI_STANDIN_STATE"])
        self.state = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        with open(os.environ["RINGI_STANDIN_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps({"program": program, "argv": self.argv, "stdin": self.stdin, "cwd": os.getcwd(),
                                  "env": self.env_names}) + "\n")

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.argv[self.argv.index(name) + 1] if name in self.argv else default

    def should_fail(self) -> bool:
        spec = os.environ.get("RINGI_STANDIN_FAIL", "")
        program, _, rest = spec.partition(" ")
        words, _, nth = rest.partition("#")
        if program != self.program or self.argv[:len(words.split())] != words.split():
            return False
        counts = self.state.setdefault("fail_counts", {})
        counts[spec] = counts.get(spec, 0) + 1
        self.save()
        return counts[spec] == int(nth or 1)

    def save(self) -> None:
        self.state_path.write_text(json.dumps(self.state, indent=1, sort_keys=True))

    def done(self, out: object = None, code: int = 0, err: str = "") -> None:
        self.save()
        if out is not None:
            sys.stdout.write(out if isinstance(out, str) else json.dumps(out, indent=4) + "\n")
        if err:
            sys.stderr.write(err.rstrip("\n") + "\n")
        sys.exit(code)


"""The leak check: no task token, JWT, API key, AWS secret, chat webhook URL, webhook signing secret, VAPID
private key or push subscription endpoint that the suite handled appears in any worker response or in any log
line of ringi's own processes (worker instances, relay, mailbox, the chat and push stand-ins).

conftest.py records what the suite handles in `SEEN` and runs `check` once, when the session ends (after every
test, whatever ran and in whichever order), failing the run on a leak."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import requests

JWT_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}")


@dataclass
class Seen:
    """Everything secret the suite handled and every worker response it got."""
    task_tokens: set = field(default_factory=set)
    jwts: set = field(default_factory=set)
    responses: list = field(default_factory=list)  # (method, url, status, body)
    # Push subscriptions' endpoints (capabilities: whoever has one can post to the device).
    push_endpoints: set = field(default_factory=set)


SEEN = Seen()


def record_responses():
    """Records every response from 127.0.0.1 that `requests` receives; returns the undo."""
    original = requests.Session.send

    def send(self, request, **kwargs):
        response = original(self, request, **kwargs)
        if request.url.startswith("http://127.0.0.1:"):
            SEEN.responses.append((request.method, request.url, response.status_code, response.text))
        return response

    requests.Session.send = send
    return lambda: setattr(requests.Session, "send", original)


def recording_mints(stack) -> None:
    """Every JWT the stack mints from now on is remembered as a secret."""
    mint = stack.mint

    def recording_mint(*args, **kwargs):
        token = mint(*args, **kwargs)
        SEEN.jwts.add(token)
        return token

    stack.mint = recording_mint


def ours(path: Path) -> bool:
    return path.name.startswith(("worker", "relay", "mailbox", "chatbox", "pushbox")) and path.suffix == ".log"


def secrets_of(stack, seen: Seen) -> dict[str, str]:
    return {
        **{f"task token {t[:8]}…": t for t in seen.task_tokens},
        **{f"JWT signature {j[-8:]}": j.split(".")[2] for j in seen.jwts
           if j.count(".") == 2 and len(j.split(".")[2]) > 20},
        "registration API key": stack.api_key,
        "AWS secret access key": stack.edge_key[1],
        "the key ring's private key": stack.signing_key["d"],
        # A chat channel's URL is a credential (Slack's and Teams' carry their token in the path): the whole URL,
        # its secret path, and a webhook's signing secret.
        **{f"chat channel {name} URL": ch["url"] for name, ch in getattr(stack, "chat_channels", {}).items()},
        **{f"chat channel {name} URL path": ch["url"].rsplit("/", 1)[1]
           for name, ch in getattr(stack, "chat_channels", {}).items()},
        **{f"chat channel {name} secret": ch["secret"] for name, ch in getattr(stack, "chat_channels", {}).items()
           if ch.get("secret")},
        **({"the VAPID private key": stack._vapid_key["d"]} if getattr(stack, "_vapid_key", None) else {}),
        **{f"push endpoint {e[-6:]}": e.rsplit("/", 1)[1] for e in seen.push_endpoints},
    }


def scan(logs: dict[str, str], responses: list, secrets: dict[str, str]) -> list[str]:
    """Every place a secret (or, in a log, anything shaped like a JWT) shows up."""
    leaks = []
    for name, secret in secrets.items():
        for log_name, text in logs.items():
            if secret in text:
                leaks.append(f"{name} in {log_name}")
        for method, url, status, body in responses:
            if secret in body:
                leaks.append(f"{name} in the response to {method} {url} ({status})")
    leaks += [f"a JWT-shaped string in {log_name}" for log_name, text in logs.items() if JWT_SHAPE.search(text)]
    return leaks


def check(stack, seen: Seen = SEEN) -> str:
    """Scans the stack's logs and the recorded responses; raises AssertionError on a leak, else says what it read."""
    logs = {p.name: p.read_text(errors="replace") for p in stack.state.iterdir() if ours(p)}
    assert "worker.log" in logs, f"no worker.log in {stack.state}"
    secrets = secrets_of(stack, seen)
    leaks = scan(logs, seen.responses, secrets)
    assert not leaks, leaks
    return f"leak check: {len(secrets)} secrets × {len(logs)} logs + {len(seen.responses)} responses, none leaked"

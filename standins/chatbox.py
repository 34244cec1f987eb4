#!/usr/bin/env python3
"""ringi's local chat stand-in: receives what the worker posts to its chat channels (Slack / Microsoft Teams
incoming webhooks, generic signed webhooks) and lists it, next to the mailbox.

    RINGI_CHATBOX_CHANNELS='{"deploys": {"kind": "slack", "url": "http://127.0.0.1:8026/hooks/deploys/…"}}' \\
        python standins/chatbox.py --port 8026

The channels are the worker's CHAT_CHANNELS (a secret: it comes in the environment, never on the command line).
POST to a configured channel's URL path: the JSON body is kept with the channel's name and kind; a webhook
channel's `Ringi-Signature: t=…,v1=…` is verified (HMAC-SHA256 over `t.body` with the channel's secret, `t`
within 5 minutes), and the outcome kept with the message. Any other POST path: 404.
GET / : the messages, newest first (escaped text, the links found in them); GET /messages.json : the same as
JSON ({channel, kind, receivedAt, body, signature, raw, signatureHeader}); GET /healthz : "ok".
POST /control/fail {"count": N} : the next N deliveries are answered 500 (a failing receiver, for tests).
Neither the channels' URLs nor their secrets are ever shown or logged. Listens on 127.0.0.1 only; a Host that is
not this loopback address gets 421.
"""
from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import sys
import threading
import time
import urllib.parse

from boxserver import STYLE, BoxHandler, handler_for, page  # beside it: the page and HTTP side it shares with the push stand-in
from mailbox import esc, serve  # beside it: escaping and serving

MAX_BODY = 256 * 1024
KEEP = 500
TOLERANCE_SECONDS = 300
SIGNATURE = re.compile(r"^t=(\d{1,12}),v1=([0-9a-f]{64})$")
URL = re.compile(r"https?://[^\s\"'<>|]+")


def verify(secret: str, header: str | None, body: bytes, now: float) -> dict:
    """The documented recipe: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, f"{t}.{raw body}")>`."""
    if not header:
        return {"present": False, "verified": False, "error": "no Ringi-Signature header"}
    m = SIGNATURE.match(header.strip())
    if not m:
        return {"present": True, "verified": False, "error": "malformed Ringi-Signature"}
    t, v1 = m.group(1), m.group(2)
    want = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, v1):
        return {"present": True, "verified": False, "error": "signature mismatch"}
    if abs(now - int(t)) > TOLERANCE_SECONDS:
        return {"present": True, "verified": False, "error": "timestamp outside the tolerance"}
    return {"present": True, "verified": True, "timestamp": int(t)}


def channels_by_path(raw: str) -> dict[str, tuple[str, dict]]:
    """URL path → (name, channel) of every channel that points at this stand-in."""
    out = {}
    for name, ch in (json.loads(raw or "{}") or {}).items():
        out[urllib.parse.urlsplit(ch["url"]).path] = (name, ch)
    return out


def links_in(body) -> list[str]:
    seen: list[str] = []
    for url in URL.findall(json.dumps(body, ensure_ascii=False)):
        if url not in seen:
            seen.append(url)
    return seen


def render(messages: list) -> str:
    articles = []
    for n, m in enumerate(reversed(messages)):
        sig = m["signature"]
        rows = [("Channel", f"{m['channel']} ({m['kind']})"), ("Received", m["receivedAt"]),
                ("Signature", "not signed" if sig is None else ("verified" if sig["verified"] else sig["error"]))]
        parts = [f"<article aria-labelledby=c{n}><h2 id=c{n}>{esc(m['channel'])}</h2><dl>"]
        parts.extend(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
        parts.append("</dl><ul>")
        parts.extend(f"<li><a href=\"{esc(u)}\" target=_blank rel='noopener noreferrer'>{esc(u)}</a></li>"
                     for u in links_in(m["body"]))
        parts.append(f"</ul><pre>{esc(json.dumps(m['body'], indent=2, ensure_ascii=False))}</pre></article>")
        articles.append("".join(parts))
    return page("chat", STYLE, len(messages), f"{len(messages)} message(s) posted to the local chat channels, "
                "newest first.", "No message yet. Register an approval whose notify names a channel, e.g. "
                "<code>{\"channel\": \"deploys\"}</code>.", articles)


class Box:
    def __init__(self, channels: dict):
        self.channels = channels
        self.messages: list = []
        self.fail = 0
        self.refused = 0
        self.lock = threading.Lock()

    def receive(self, path: str, headers, body: bytes) -> tuple[int, str]:
        found = self.channels.get(path)
        if found is None:
            return 404, "no such channel\n"
        name, ch = found
        with self.lock:
            if self.fail > 0:
                self.fail -= 1
                self.refused += 1
                return 500, "failing on purpose\n"
        try:
            parsed = json.loads(body)
        except ValueError:
            return 400, "not JSON\n"
        sig = verify(ch["secret"], headers.get("Ringi-Signature"), body, time.time()) if ch["kind"] == "webhook" else None
        if sig is not None and not sig["verified"]:
            return 401, f"{sig['error']}\n"
        with self.lock:
            self.messages.append({"channel": name, "kind": ch["kind"],
                                  "receivedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                  "contentType": headers.get("Content-Type"), "body": parsed, "signature": sig,
                                  # As received, for a receiver's own check of the recipe.
                                  "raw": body.decode("utf-8", "replace"),
                                  "signatureHeader": headers.get("Ringi-Signature")})
            del self.messages[:-KEEP]
        return 200, "ok"


class ChatHandler(BoxHandler):
    server_version = "ringi-chatbox"

    def post(self, path: str, body: bytes) -> None:
        box = self.box
        if path == "/control/fail":
            try:
                count = int(json.loads(body or b"{}").get("count", 0))
            except (ValueError, AttributeError):
                return self._send(400, "{\"count\": N}\n")
            with box.lock:
                box.fail = max(0, count)
            return self._send(200, "ok\n")
        status, text = box.receive(path, self.headers, body)
        # The path is the channel's secret URL: only its name is logged.
        self.log_post(f"channel={box.channels.get(path, ('?',))[0]} -> {status}")
        self._send(status, text)


def make_handler(box: Box, port: int):
    return handler_for(ChatHandler, box, port, render, MAX_BODY)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8026)
    args = ap.parse_args(argv)
    box = Box(channels_by_path(os.environ.get("RINGI_CHATBOX_CHANNELS", "{}")))
    names = ", ".join(sorted(n for n, _ in box.channels.values())) or "none"
    return serve(args.port, make_handler(box, args.port),
                 f"ringi chat stand-in on http://127.0.0.1:{args.port}/ (channels: {names})")


if __name__ == "__main__":
    sys.exit(main())

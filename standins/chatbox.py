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
from http.server import BaseHTTPRequestHandler

from mailbox import STYLE as MAILBOX_STYLE, esc, serve  # beside it: the page style, escaping and serving it shares

MAX_BODY = 256 * 1024
KEEP = 500
TOLERANCE_SECONDS = 300
SIGNATURE = re.compile(r"^t=(\d{1,12}),v1=([0-9a-f]{64})$")
URL = re.compile(r"https?://[^\s\"'<>|]+")
CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
STYLE = MAILBOX_STYLE + "pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8rem;max-height:20rem;overflow:auto}\n"


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
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8>"
             f"<meta name=viewport content='width=device-width,initial-scale=1'>"
             f"<meta name=referrer content=no-referrer><title>ringi chat ({len(messages)})</title>"
             f"<style>{STYLE}</style></head><body><header><h1>ringi chat</h1>"
             f"<p>{len(messages)} message(s) posted to the local chat channels, newest first. "
             f"<a href='/'>Reload</a> · <a href='/messages.json'>JSON</a></p></header><main>"]
    if not messages:
        parts.append("<p class=empty>No message yet. Register an approval whose notify names a channel, e.g. "
                     "<code>{\"channel\": \"deploys\"}</code>.</p>")
    for n, m in enumerate(reversed(messages)):
        sig = m["signature"]
        rows = [("Channel", f"{m['channel']} ({m['kind']})"), ("Received", m["receivedAt"]),
                ("Signature", "not signed" if sig is None else ("verified" if sig["verified"] else sig["error"]))]
        parts.append(f"<article aria-labelledby=c{n}><h2 id=c{n}>{esc(m['channel'])}</h2><dl>")
        parts.extend(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
        parts.append("</dl><ul>")
        parts.extend(f"<li><a href=\"{esc(u)}\" target=_blank rel='noopener noreferrer'>{esc(u)}</a></li>"
                     for u in links_in(m["body"]))
        parts.append(f"</ul><pre>{esc(json.dumps(m['body'], indent=2, ensure_ascii=False))}</pre></article>")
    parts.append("</main></body></html>")
    return "".join(parts)


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


def make_handler(box: Box, port: int):
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    class Handler(BaseHTTPRequestHandler):
        server_version = "ringi-chatbox"
        sys_version = ""

        def _send(self, status: int, body: str, ctype: str = "text/plain; charset=utf-8") -> None:
            data = body.encode()
            self.send_response(status)
            for k, v in (("Content-Type", ctype), ("Content-Length", str(len(data))),
                         ("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                         ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
                         ("Cache-Control", "no-store")):
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _host_ok(self) -> bool:
            if (self.headers.get("Host") or "").lower() in allowed_hosts:
                return True
            self._send(421, "wrong host\n")
            return False

        def do_GET(self):
            if not self._host_ok():
                return
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                return self._send(200, "ok\n")
            with box.lock:
                messages = list(box.messages)
            if path == "/messages.json":
                return self._send(200, json.dumps({"messages": messages, "refused": box.refused}),
                                  "application/json")
            if path == "/":
                return self._send(200, render(messages), "text/html; charset=utf-8")
            self._send(404, "not found\n")

        do_HEAD = do_GET

        def do_POST(self):
            if not self._host_ok():
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._send(413, "too large\n")
            body = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            if path == "/control/fail":
                try:
                    count = int(json.loads(body or b"{}").get("count", 0))
                except (ValueError, AttributeError):
                    return self._send(400, "{\"count\": N}\n")
                with box.lock:
                    box.fail = max(0, count)
                return self._send(200, "ok\n")
            status, text = box.receive(path, self.headers, body)
            name = box.channels.get(path, ("?",))[0]
            # The path is the channel's secret URL: only its name is logged.
            sys.stdout.write(f"{self.log_date_time_string()} POST channel={name} -> {status}\n")
            sys.stdout.flush()
            self._send(status, text)

        def log_message(self, fmt, *args):
            # Requests are logged by the handlers above, without paths (a channel's path is a secret).
            if self.command != "POST":
                path = self.path.split("?", 1)[0]
                shown = path if path in ("/", "/healthz", "/messages.json") else "(another path)"
                sys.stdout.write(f"{self.log_date_time_string()} {self.command} {shown}\n")
                sys.stdout.flush()

    return Handler


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

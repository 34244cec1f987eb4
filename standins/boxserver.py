"""The HTTP side the chat and push stand-ins share: answers only on their own loopback Host, shows their page
and their messages as JSON, reads a bounded POST body and hands it to the stand-in's `post`. A POST's path is a
secret (a chat channel's URL, a push subscription's capability): it is never logged here."""
from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler

from mailbox import STYLE as MAILBOX_STYLE  # beside it: the mailbox's page style

# The mailbox's page style, with room for a message's JSON.
STYLE = MAILBOX_STYLE + "pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8rem;max-height:20rem;overflow:auto}\n"
CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


class BoxHandler(BaseHTTPRequestHandler):
    """Subclassed per stand-in (`handler_for`): `box` (with `lock`, `messages`, `refused`), `render(messages)`,
    `max_body`, and `post(path, body)`."""
    sys_version = ""
    box = None
    allowed_hosts: set = set()
    max_body = 0

    @staticmethod
    def render(messages: list) -> str:
        raise NotImplementedError

    def post(self, path: str, body: bytes) -> None:
        raise NotImplementedError

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
        if (self.headers.get("Host") or "").lower() in self.allowed_hosts:
            return True
        self._send(421, "wrong host\n")
        return False

    def do_GET(self):
        if not self._host_ok():
            return
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            return self._send(200, "ok\n")
        with self.box.lock:
            messages = list(self.box.messages)
        if path == "/messages.json":
            return self._send(200, json.dumps({"messages": messages, "refused": self.box.refused}), "application/json")
        if path == "/":
            return self._send(200, self.render(messages), "text/html; charset=utf-8")
        self._send(404, "not found\n")

    do_HEAD = do_GET

    def do_POST(self):
        if not self._host_ok():
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.max_body:
            return self._send(413, "too large\n")
        self.post(self.path.split("?", 1)[0], self.rfile.read(length))

    def log_post(self, what: str) -> None:
        """One POST's line, naming what the stand-in says it was (never its path)."""
        sys.stdout.write(f"{self.log_date_time_string()} POST {what}\n")
        sys.stdout.flush()

    def log_message(self, fmt, *args):
        # POSTs are logged by the stand-ins themselves (`log_post`), without their paths.
        if self.command != "POST":
            path = self.path.split("?", 1)[0]
            shown = path if path in ("/", "/healthz", "/messages.json") else "(another path)"
            sys.stdout.write(f"{self.log_date_time_string()} {self.command} {shown}\n")
            sys.stdout.flush()


def page(name: str, style: str, count: int, intro: str, empty: str, articles: list[str]) -> str:
    """A stand-in's page: its messages (`articles`, newest first), or `empty` when there are none."""
    head = (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<meta name=referrer content=no-referrer><title>ringi {name} ({count})</title>"
            f"<style>{style}</style></head><body><header><h1>ringi {name}</h1>"
            f"<p>{intro} <a href='/'>Reload</a> · <a href='/messages.json'>JSON</a></p></header><main>")
    return head + ("".join(articles) if articles else f"<p class=empty>{empty}</p>") + "</main></body></html>"


def handler_for(base: type, box, port: int, render, max_body: int) -> type:
    """`base` (a BoxHandler with the stand-in's `post`) bound to its box, its page and its port."""
    return type(base.__name__, (base,), {"box": box, "render": staticmethod(render), "max_body": max_body,
                                         "allowed_hosts": {f"127.0.0.1:{port}", f"localhost:{port}"}})

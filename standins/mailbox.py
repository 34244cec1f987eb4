#!/usr/bin/env python3
"""ringi's local "mailbox": a read-only page listing every email the local SES (moto) accepted, newest first.

    python standins/mailbox.py --port 8025 --moto http://127.0.0.1:5000

GET / reads {moto}/moto-api/ringi/ses-messages.json ({source, destinations, subject, body (HTML)}) on every
request and renders each mail: headers as escaped text, the HTML body inside a fully sandboxed iframe (no
scripts, no forms, no navigation of this page, an opaque origin) fed through an escaped `srcdoc`, and the
http(s) links found in the body listed as ordinary links (the short link `…/a/{id}` opens the app).
GET /healthz answers "ok". Nothing else: other methods get 405, other paths 404, a Host that is not this
loopback address gets 421 (no DNS rebinding). No state, no side effects. Listens on 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import html
import json
import re
import signal
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HREF = re.compile(r"""href\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-src 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
STYLE = """
:root{color-scheme:light dark;font-family:system-ui,sans-serif;line-height:1.45}
body{max-width:60rem;margin:0 auto;padding:1rem}
header p{color:GrayText;margin:.2rem 0 1rem}
article{border:1px solid GrayText;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
h2{font-size:1.05rem;margin:0 0 .4rem;overflow-wrap:anywhere}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .75rem;margin:0 0 .5rem;font-size:.9rem}
dt{color:GrayText}dd{margin:0;overflow-wrap:anywhere}
ul.links{margin:.25rem 0 .6rem;padding-left:1.2rem;overflow-wrap:anywhere}
iframe{width:100%;height:22rem;border:1px solid GrayText;border-radius:.25rem;background:#fff}
.empty{color:GrayText}
"""


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def links_in(body: str) -> list[str]:
    """The http(s) link targets of an HTML body, unescaped, in order, once each."""
    seen: list[str] = []
    for m in HREF.finditer(body or ""):
        url = html.unescape(m.group(1) if m.group(1) is not None else m.group(2)).strip()
        if re.match(r"https?://", url, re.IGNORECASE) and not any(c in url for c in "\r\n\t") and url not in seen:
            seen.append(url)
    return seen


def addresses(destinations) -> list[tuple[str, str]]:
    out = []
    if isinstance(destinations, dict):
        for key, label in (("ToAddresses", "To"), ("CcAddresses", "Cc"), ("BccAddresses", "Bcc")):
            if destinations.get(key):
                out.append((label, ", ".join(map(str, destinations[key]))))
    elif destinations:
        out.append(("To", str(destinations)))
    return out


def render(messages: list, moto_url: str) -> str:
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8>"
             f"<meta name=viewport content='width=device-width,initial-scale=1'>"
             f"<meta name=referrer content=no-referrer><title>ringi mailbox ({len(messages)})</title>"
             f"<style>{STYLE}</style></head><body><header><h1>ringi mailbox</h1>"
             f"<p>{len(messages)} email(s) accepted by the local SES at {esc(moto_url)}, newest first. "
             f"<a href='/'>Reload</a></p></header><main>"]
    if not messages:
        parts.append("<p class=empty>No mail yet. Start a workflow (<code>make demo</code>) or register an approval.</p>")
    for n, m in enumerate(reversed(messages)):
        m = m if isinstance(m, dict) else {}
        body = m.get("body") if isinstance(m.get("body"), str) else ""
        rows = [("From", m.get("source"))] + addresses(m.get("destinations")) + [("Message ID", m.get("id"))]
        parts.append(f"<article aria-labelledby=m{n}><h2 id=m{n}>{esc(m.get('subject') or '(no subject)')}</h2><dl>")
        parts.extend(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows if v)
        parts.append("</dl>")
        links = links_in(body)
        if links:
            parts.append("<ul class=links>")
            parts.extend(f"<li><a href=\"{esc(u)}\" target=_blank rel='noopener noreferrer'>{esc(u)}</a></li>"
                         for u in links)
            parts.append("</ul>")
        parts.append(f"<iframe sandbox srcdoc=\"{esc(body)}\" title=\"mail body\" referrerpolicy=no-referrer "
                     f"loading=lazy></iframe></article>")
    parts.append("</main></body></html>")
    return "".join(parts)


def fetch_messages(moto_url: str) -> list:
    # standins/moto_server.py's list of the mail SES accepted (moto's data.json would serialise all its state).
    with urllib.request.urlopen(f"{moto_url}/moto-api/ringi/ses-messages.json", timeout=10) as r:
        msgs = json.load(r).get("messages") or []
    return msgs if isinstance(msgs, list) else []


def make_handler(moto_url: str, port: int):
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    class Handler(BaseHTTPRequestHandler):
        server_version = "ringi-mailbox"
        sys_version = ""

        def _send(self, status: int, body: str, ctype: str = "text/html; charset=utf-8", extra=()) -> None:
            data = body.encode()
            self.send_response(status)
            for k, v in (("Content-Type", ctype), ("Content-Length", str(len(data))),
                         ("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                         ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
                         ("Cache-Control", "no-store"), *extra):
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def do_GET(self):
            if (self.headers.get("Host") or "").lower() not in allowed_hosts:
                return self._send(421, "wrong host\n", "text/plain; charset=utf-8")
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                return self._send(200, "ok\n", "text/plain; charset=utf-8")
            if path != "/":
                return self._send(404, "not found\n", "text/plain; charset=utf-8")
            try:
                messages = fetch_messages(moto_url)
            except Exception as e:  # moto down: say so, escaped
                return self._send(502, f"<!doctype html><meta charset=utf-8><title>ringi mailbox</title>"
                                       f"<p>Cannot read {esc(moto_url)}/moto-api/ringi/ses-messages.json: {esc(e)}</p>")
            self._send(200, render(messages, moto_url))

        do_HEAD = do_GET

        def _refuse(self):
            self._send(405, "only GET\n", "text/plain; charset=utf-8", extra=(("Allow", "GET, HEAD"),))

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

        def log_message(self, fmt, *args):
            sys.stdout.write("%s %s\n" % (self.log_date_time_string(), fmt % args))
            sys.stdout.flush()

    return Handler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8025)
    ap.add_argument("--moto", default="http://127.0.0.1:5000", help="moto server URL")
    args = ap.parse_args(argv)
    return serve(args.port, make_handler(args.moto.rstrip("/"), args.port),
                 f"ringi mailbox on http://127.0.0.1:{args.port}/ (mail from {args.moto})")


def serve(port: int, handler, banner: str) -> int:
    """Serves `handler` on 127.0.0.1:`port` until SIGTERM or Ctrl-C (the mailbox and the chat stand-in)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(banner, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

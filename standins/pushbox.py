#!/usr/bin/env python3
"""ringi's local Web Push stand-in: plays a browser's push service for test subscriptions, checks what the worker
sends as a real one would, decrypts it with a reference implementation and lists it, next to the mailbox.

    python standins/pushbox.py --port 8027

POST /subscriptions : a new test subscription, `{"endpoint", "keys": {"p256dh", "auth"}}` (what a browser's
`PushSubscription.toJSON()` gives). The stand-in keeps its private key and auth secret: it plays the browser too.
POST /push/<id> : the push service. The worker's request must carry RFC 8292 VAPID — `Authorization: vapid t=<JWT>,
k=<key>`, the JWT ES256-signed by `k`, `aud` this origin, `exp` in the future and at most 24 h ahead, `sub` a mailto:
or https: URI (401 otherwise) —, `Content-Encoding: aes128gcm` and a `TTL`; the body is decrypted with `http_ece`
(RFC 8188/8291; 400 if it does not decrypt). Then 201, the message kept with its headers (TTL, Urgency, Topic), the
JWT's claims and the decrypted payload. An unknown subscription: 404.
GET / : the messages, newest first; GET /messages.json : the same as JSON; GET /healthz : "ok".
POST /control/fail {"count": N, "status": 500} : the next N deliveries are answered `status` (a failing service).
POST /control/gone {"endpoint": …} : that subscription is gone: 410 from now on (the browser unsubscribed).
Endpoints are capabilities: logged by subscription number only. Listens on 127.0.0.1 only; another Host gets 421.
"""
from __future__ import annotations

import argparse
import base64
import json
import secrets
import sys
import threading
import time
import urllib.parse

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from boxserver import STYLE, BoxHandler, handler_for, page  # beside it: the page and HTTP side it shares with the chat stand-in
from mailbox import esc, serve  # beside it: escaping and serving

MAX_BODY = 8 * 1024
KEEP = 500
MAX_EXP_SECONDS = 24 * 3600


def b64d(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def check_vapid(header: str | None, origin: str, now: float) -> dict:
    """RFC 8292 §3: `vapid t=<JWT>, k=<public key>`; the JWT ES256 under `k`, `aud` = this push service's origin,
    `exp` in the future and within 24 h, `sub` mailto: or https:. `{"verified": True, "claims", "k"}` or an error."""
    if not header or not header.lower().startswith("vapid "):
        return {"verified": False, "error": "no Authorization: vapid header"}
    params = {}
    for part in header[6:].split(","):
        k, _, v = part.strip().partition("=")
        params[k.strip()] = v.strip()
    t, k = params.get("t"), params.get("k")
    if not t or not k:
        return {"verified": False, "error": "vapid header without t= and k="}
    try:
        h64, c64, s64 = t.split(".")
        jose, claims, sig = json.loads(b64d(h64)), json.loads(b64d(c64)), b64d(s64)
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(k))
    except (ValueError, TypeError):
        return {"verified": False, "error": "malformed JWT or key"}
    if jose.get("alg") != "ES256" or len(sig) != 64:
        return {"verified": False, "error": "not an ES256 JWT"}
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    try:
        key.verify(der, f"{h64}.{c64}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return {"verified": False, "error": "signature does not verify under k"}
    if claims.get("aud") != origin:
        return {"verified": False, "error": f"aud is {claims.get('aud')!r}, not {origin!r}"}
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp <= now or exp > now + MAX_EXP_SECONDS:
        return {"verified": False, "error": "exp is not within the next 24 h"}
    if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
        return {"verified": False, "error": "sub is not a mailto: or https: URI"}
    return {"verified": True, "claims": claims, "k": k}


class Box:
    def __init__(self, origin: str):
        self.origin = origin
        self.subscriptions: dict[str, dict] = {}  # id → {n, private, auth, gone}
        self.messages: list = []
        self.fail = (0, 500)
        self.refused = 0
        self.lock = threading.Lock()

    def subscribe(self) -> dict:
        private = ec.generate_private_key(ec.SECP256R1())
        public = private.public_key().public_bytes(serialization.Encoding.X962,
                                                   serialization.PublicFormat.UncompressedPoint)
        auth = secrets.token_bytes(16)
        sid = secrets.token_urlsafe(24)
        with self.lock:
            self.subscriptions[sid] = {"n": len(self.subscriptions) + 1, "private": private, "auth": auth,
                                       "gone": False}
        return {"endpoint": f"{self.origin}/push/{sid}", "expirationTime": None,
                "keys": {"p256dh": b64e(public), "auth": b64e(auth)}}

    def gone(self, endpoint: str) -> bool:
        sid = urllib.parse.urlsplit(endpoint).path.rsplit("/", 1)[-1]
        with self.lock:
            s = self.subscriptions.get(sid)
            if s:
                s["gone"] = True
            return s is not None

    def receive(self, sid: str, headers, body: bytes) -> tuple[int, str, int]:
        with self.lock:
            s = self.subscriptions.get(sid)
            if s is None:
                return 404, "no such subscription\n", 0
            if s["gone"]:
                return 410, "unsubscribed\n", s["n"]
            if self.fail[0] > 0:
                self.fail = (self.fail[0] - 1, self.fail[1])
                self.refused += 1
                return self.fail[1], "failing on purpose\n", s["n"]
        vapid = check_vapid(headers.get("Authorization"), self.origin, time.time())
        if not vapid["verified"]:
            return 401, vapid["error"] + "\n", s["n"]
        if (headers.get("Content-Encoding") or "").lower() != "aes128gcm":
            return 415, "Content-Encoding must be aes128gcm\n", s["n"]
        if headers.get("TTL") is None:
            return 400, "TTL is required\n", s["n"]
        try:
            plain = http_ece.decrypt(body, private_key=s["private"], auth_secret=s["auth"], version="aes128gcm")
            payload = json.loads(plain)
        except Exception as e:  # noqa: BLE001 — any failure to decrypt is the sender's
            return 400, f"payload does not decrypt: {type(e).__name__}\n", s["n"]
        with self.lock:
            self.messages.append({
                "subscription": s["n"], "endpoint": f"{self.origin}/push/{sid}",
                "receivedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "ttl": headers.get("TTL"), "urgency": headers.get("Urgency"), "topic": headers.get("Topic"),
                "vapid": {"claims": vapid["claims"], "k": vapid["k"]}, "payload": payload,
                "plaintext": plain.decode("utf-8", "replace"), "bytes": len(body)})
            del self.messages[:-KEEP]
        return 201, "", s["n"]


def render(messages: list) -> str:
    articles = []
    for n, m in enumerate(reversed(messages)):
        p = m["payload"]
        rows = [("Title", p.get("title")), ("Requested by", p.get("requester")), ("Deadline", p.get("deadline")),
                ("Device", f"test subscription {m['subscription']}"), ("Received", m["receivedAt"]),
                ("TTL / Urgency / Topic", f"{m['ttl']} / {m['urgency']} / {m['topic']}"),
                ("VAPID", f"verified, sub {m['vapid']['claims'].get('sub')}")]
        parts = [f"<article aria-labelledby=p{n}><h2 id=p{n}>{esc(p.get('title'))}</h2><dl>"]
        parts.extend(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
        url = str(p.get("url", ""))
        if url.startswith(("http://", "https://")):
            parts.append(f"</dl><p><a href=\"{esc(url)}\" target=_blank rel='noopener noreferrer'>{esc(url)}</a></p>")
        else:
            parts.append("</dl>")
        parts.append(f"<pre>{esc(json.dumps(p, indent=2, ensure_ascii=False))}</pre></article>")
        articles.append("".join(parts))
    return page("push", STYLE, len(messages), f"{len(messages)} push message(s) the worker sent to test "
                "subscriptions, VAPID checked and decrypted, newest first.",
                "No message yet. Turn notifications on in Settings, then register an approval naming you.", articles)


class PushHandler(BoxHandler):
    server_version = "ringi-pushbox"

    def post(self, path: str, body: bytes) -> None:
        box = self.box
        try:
            control = json.loads(body or b"{}") if path.startswith(("/control/", "/subscriptions")) else None
        except ValueError:
            return self._send(400, "not JSON\n")
        if path == "/subscriptions":
            return self._send(201, json.dumps(box.subscribe()), "application/json")
        if path == "/control/fail":
            with box.lock:
                box.fail = (max(0, int(control.get("count", 0))), int(control.get("status", 500)))
            return self._send(200, "ok\n")
        if path == "/control/gone":
            return self._send(200 if box.gone(str(control.get("endpoint", ""))) else 404, "ok\n")
        if path.startswith("/push/"):
            status, text, n = box.receive(path[len("/push/"):], self.headers, body)
            # The path is the subscription's capability: only its number is logged.
            self.log_post(f"push subscription={n} -> {status} {text.strip()}")
            return self._send(status, text)
        self._send(404, "not found\n")


def make_handler(box: Box, port: int):
    return handler_for(PushHandler, box, port, render, MAX_BODY)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8027)
    args = ap.parse_args(argv)
    box = Box(f"http://127.0.0.1:{args.port}")
    return serve(args.port, make_handler(box, args.port), f"ringi push stand-in on http://127.0.0.1:{args.port}/")


if __name__ == "__main__":
    sys.exit(main())

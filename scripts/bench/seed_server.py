#!/usr/bin/env python3
"""The reference design ringi improves on (API Gateway + Lambda + DynamoDB, from the article that describes it)
behind HTTP, for the side-by-side benchmark of `make bench`.

    python scripts/bench/seed_server.py --port 8890 --issuer http://127.0.0.1:9410/local_RingiPool1 \
        --client-id ringi-local-client --seed-dir ../shared/bench

What API Gateway (HTTP API, JWT authorizer) + Lambda would do, in one stdlib threaded HTTP server:
  POST /approvals/{approvalId}/decision   verify the bearer JWT (RS256 against the issuer's JWKS, `iss`, `exp`,
                                          `token_use=access`, `client_id`), build the API Gateway v2 event
                                          {pathParameters, requestContext.authorizer.jwt.claims, body} and call
                                          seed_approve.handler (DynamoDB GetItem + SendTaskSuccess + DeleteItem)
  POST /save                              seed_save_task_token.handler (DynamoDB PutItem): the token writer the
                                          state machine would invoke; body {approvalId, approverUserId, taskToken}
  GET  /healthz                           liveness

The reference design's two handlers (seed_*.py) are loaded with importlib from --seed-dir at start: they are
never copied into this project. Their boto3 reads endpoint, region and credentials from the environment (AWS_ENDPOINT_URL,
AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and the table from TABLE_NAME, as in Lambda.
`--inject-ms N` waits N ms before each AWS call of the handlers (a boto3 `before-send` hook): the latency model of
`make bench` puts the Lambda's DynamoDB and Step Functions calls in-region that way.
Listens on 127.0.0.1 only; stops on SIGTERM/SIGINT.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt


def load(seed_dir: Path, name: str):
    path = seed_dir / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"seed_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Authorizer:
    """API Gateway's JWT authorizer, as configured for a Cognito user pool's access tokens."""

    def __init__(self, issuer: str, client_id: str):
        self.issuer, self.client_id = issuer, client_id
        self.jwks = jwt.PyJWKClient(f"{issuer}/.well-known/jwks.json", cache_keys=True, lifespan=3600)

    def claims(self, header: str | None) -> dict | None:
        if not header or not header.lower().startswith("bearer "):
            return None
        token = header[7:].strip()
        try:
            key = self.jwks.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], issuer=self.issuer, leeway=60,
                                options={"require": ["exp", "iat", "iss", "sub"], "verify_aud": False})
        except jwt.PyJWTError:
            return None
        if claims.get("token_use") != "access" or claims.get("client_id") != self.client_id:
            return None
        return claims


def make_handler(authorizer: Authorizer, approve, save):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the worker
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle + the client's delayed ACK would add
        # ~40 ms to every response (a server artefact, not the reference design's cost).
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def send(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self) -> str:
            return self.rfile.read(int(self.headers.get("content-length") or 0)).decode()

        def do_GET(self):
            if self.path == "/healthz":
                return self.send(200, '{"status":"ok"}')
            self.send(404, '{"message":"Not Found"}')

        def do_POST(self):
            parts = self.path.strip("/").split("/")
            body = self.body()
            if parts == ["save"]:
                save.handler(json.loads(body), None)
                return self.send(200, '{"message":"saved"}')
            if len(parts) == 3 and parts[0] == "approvals" and parts[2] == "decision":
                claims = authorizer.claims(self.headers.get("authorization"))
                if claims is None:
                    return self.send(401, '{"message":"Unauthorized"}')
                event = {
                    "version": "2.0",
                    "routeKey": "POST /approvals/{approvalId}/decision",
                    "rawPath": self.path,
                    "pathParameters": {"approvalId": parts[1]},
                    # API Gateway hands the claims to Lambda as strings (lists flattened): close enough here.
                    "requestContext": {"authorizer": {"jwt": {"claims": claims, "scopes": None}}},
                    "body": body,
                    "isBase64Encoded": False,
                }
                try:
                    result = approve.handler(event, None)
                except Exception as e:  # Lambda would answer 500 and log the traceback
                    print(f"seed handler error: {e!r}", file=sys.stderr, flush=True)
                    return self.send(500, '{"message":"Internal Server Error"}')
                return self.send(result["statusCode"], result["body"])
            self.send(404, '{"message":"Not Found"}')

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--issuer", required=True)
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--seed-dir", type=Path, required=True)
    ap.add_argument("--inject-ms", type=float, default=0.0, help="delay before each AWS call (latency model)")
    args = ap.parse_args()
    if args.inject_ms > 0:
        # Registered on the default session before the handlers create their clients, which copy its hooks.
        import boto3
        boto3.setup_default_session()
        boto3.DEFAULT_SESSION.events.register("before-send", lambda **_: time.sleep(args.inject_ms / 1000))
    approve = load(args.seed_dir, "seed_approve")
    save = load(args.seed_dir, "seed_save_task_token")
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(Authorizer(args.issuer, args.client_id),
                                                                         approve, save))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(json.dumps({"event": "started", "port": args.port}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    server.server_close()


if __name__ == "__main__":
    main()

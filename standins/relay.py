#!/usr/bin/env python3
"""ringi's local stand-in for "EventBridge rule → API destination": moto delivers the rule's matches to an
SQS queue (moto has no working API-destination target: it sends no body), and this relay long-polls that
queue and POSTs each event, unmodified, to ringi like an API destination with an API-key connection would:

    POST {target}  Authorization: Bearer <api key>  Content-Type: application/json  body = the event envelope

    RINGI_RELAY_API_KEY=… AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… \
      python standins/relay.py --endpoint http://127.0.0.1:5000 --queue-url … --target http://127.0.0.1:8787/api/v1/approvals

Delivery is modelled on an API destination's (docs/workflow/README.md): 2xx → delivered, message deleted;
401, 407, 408, 429, 5xx, connection errors and timeouts → retried with exponential backoff (the message
becomes visible again after 1, 2, 4 … 60 s, for up to --max-attempts receives); any other 4xx (400
validation, 403, 404, 413, and ringi's 409 "approvalId reused with another token", which EventBridge would
retry but which never heals) → not retried: logged and deleted, like an API destination without a
dead-letter queue (the execution then waits until its TimeoutSeconds). Every outcome is one JSON log line on
stdout, without the task token or the API key. SIGTERM/SIGINT stop it (exit 0).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

RETRY_STATUSES = {401, 407, 408, 429}  # as EventBridge API destinations (plus every 5xx)
BACKOFF_MAX = 60


def log(event: str, **fields) -> None:
    print(json.dumps({"t": time.strftime("%H:%M:%S"), "event": event, **fields}, ensure_ascii=False), flush=True)


def post(target: str, api_key: str, body: bytes, timeout: float) -> tuple[int | None, str]:
    """(status, short reason); status None for a connection error or timeout."""
    req = urllib.request.Request(target, data=body, method="POST", headers={
        "authorization": f"Bearer {api_key}", "content-type": "application/json",
        "user-agent": "ringi-relay (local EventBridge API destination)"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(2000).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read(2000).decode(errors="replace")
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        return None, str(getattr(e, "reason", e))


def retryable(status: int | None) -> bool:
    return status is None or status >= 500 or status in RETRY_STATUSES


def describe(body: bytes) -> dict:
    """What to log about an event: ids, never the task token."""
    try:
        ev = json.loads(body)
        detail = ev.get("detail") if isinstance(ev, dict) else None
        ctx = detail.get("context") if isinstance(detail, dict) else None
        return {"eventId": ev.get("id"), "detailType": ev.get("detail-type"),
                "executionArn": ctx.get("executionArn") if isinstance(ctx, dict) else None}
    except (ValueError, AttributeError):
        return {"eventId": None}


def handle(sqs, queue_url: str, msg: dict, target: str, api_key: str, max_attempts: int, timeout: float) -> str:
    body = msg["Body"].encode()
    attempt = int(msg.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
    status, reason = post(target, api_key, body, timeout)
    about = describe(body)
    if status is not None and 200 <= status < 300:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"])
        try:
            registered = json.loads(reason)
        except ValueError:
            registered = None
        registered = registered if isinstance(registered, dict) else {}
        log("delivered", status=status, attempt=attempt, approvalId=registered.get("id"), url=registered.get("url"), **about)
        return "delivered"
    if retryable(status) and attempt < max_attempts:
        delay = min(2 ** (attempt - 1), BACKOFF_MAX)
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"], VisibilityTimeout=delay)
        log("retry", status=status, attempt=attempt, retryIn=delay, reason=reason[:300], **about)
        return "retry"
    # Not retryable (a validation error: fix the state machine), or out of attempts: like an API
    # destination without a dead-letter queue, the event is dropped and the execution waits until its timeout.
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"])
    log("dropped", status=status, attempt=attempt, reason=reason[:300], **about)
    return "dropped"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", required=True, help="SQS endpoint (moto)")
    ap.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))
    ap.add_argument("--queue-url", required=True)
    ap.add_argument("--target", required=True, help="ringi's POST /api/v1/approvals URL")
    ap.add_argument("--wait", type=int, default=2, help="long-poll seconds per ReceiveMessage")
    ap.add_argument("--max-attempts", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=30.0, help="HTTP timeout (API destinations: 5 s)")
    args = ap.parse_args(argv)
    api_key = os.environ.get("RINGI_RELAY_API_KEY")
    if not api_key:
        ap.error("RINGI_RELAY_API_KEY is not set")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    import boto3
    sqs = boto3.client("sqs", endpoint_url=args.endpoint, region_name=args.region)
    log("started", queue=args.queue_url, target=args.target)
    try:
        while True:
            try:
                msgs = sqs.receive_message(QueueUrl=args.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=args.wait,
                                           AttributeNames=["ApproximateReceiveCount"]).get("Messages", [])
            except Exception as e:  # moto restarting or unreachable: keep polling, like a real consumer
                log("receive_failed", reason=str(e)[:300])
                time.sleep(1)
                continue
            for m in msgs:
                try:
                    handle(sqs, args.queue_url, m, args.target, api_key, args.max_attempts, args.timeout)
                except Exception as e:  # SQS call failed: the message becomes visible again by itself
                    log("handle_failed", reason=str(e)[:300])
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The operators' audit export as the tests read it (test_audit.py on D1, test_dynamodb.py on DynamoDB): the
operators' group, a bearer in it, the export's request, one approval's events, waiting for an event to appear."""
from __future__ import annotations

import time

import requests

# The operators' group (ADMIN_GROUP of the session's workers); the Hosted UI stand-in's `dave` is in it.
OPS = "admin"


def operator(stack, **claims):
    return {"authorization": f"Bearer {stack.mint('ops-1', groups=[OPS], **claims)}"}


def export(stack, url, headers=None, **params):
    return requests.get(f"{url}/api/v1/audit", params=params, headers=headers if headers is not None else operator(stack),
                        timeout=30)


def events_of(stack, url, approval_id):
    """The approval's events as the operators' export has them (reading them records nothing)."""
    r = export(stack, url, limit=1000)
    assert r.status_code == 200, r.text
    return [e for e in r.json()["items"] if e["approvalId"] == approval_id]


def kinds_of(stack, url, approval_id):
    return [e["kind"] for e in events_of(stack, url, approval_id)]


def wait_for_kind(stack, url, approval_id, kind, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if kind in kinds_of(stack, url, approval_id):
            return
        time.sleep(0.3)
    raise AssertionError(f"no {kind} event for {approval_id}: {events_of(stack, url, approval_id)}")


def _verifier():
    """deploy/verify_audit.py, the operators' checker, as a module."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[3] / "deploy" / "verify_audit.py"
    spec = importlib.util.spec_from_file_location("verify_audit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


verify_audit = _verifier()


def chained_events(stack, url, approval_id, count: int | None = None, timeout=20.0):
    """The approval's exported events once every one of them (`count` at least) is sealed into its chain: each
    request seals what it wrote right after its response."""
    deadline = time.monotonic() + timeout
    while True:
        events = events_of(stack, url, approval_id)
        if events and all(e.get("chain") for e in events) and (count is None or len(events) >= count):
            return events
        if time.monotonic() > deadline:
            raise AssertionError(f"events of {approval_id} not all chained: {events}")
        time.sleep(0.2)

#!/usr/bin/env python3
"""Checks the hash chains of a ringi audit export (`GET /api/v1/audit`; design.md §6 "The audit hash chain") and
names the first broken link of each approval: an event removed, edited, or moved to another place.

    python deploy/verify_audit.py EXPORT.json         an export saved as JSON: one page ({"items": [...]}), a list of
                                                      pages, or a list of events
    python deploy/verify_audit.py --url https://approvals.example.com [--from T] [--to T]
                                                      fetches every page itself, with an operator's bearer token
                                                      from RINGI_AUDIT_TOKEN or, without it, from stdin (never argv)

Each event's `chain` holds its place `n` in its approval's chain, the digest of event `n - 1` (`prevDigest`; the
chain's genesis value for the first) and its own `digest`, the SHA-256 of its canonical JSON. Events written
before the chain began carry none: they are reported as unchained, not as tampering. A chain whose first events
fall before the export's range starts at a later `n` (reported, not a break). Exit 0 when every chain holds,
1 with the first broken link of each approval that does not, 2 when the export cannot be read."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request

CHAIN_VERSION = 1


def canonical(value) -> str:
    """The bytes both sides hash: keys sorted at every level, no whitespace, UTF-8 as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def genesis(approval_id: str) -> str:
    return sha256(canonical({"v": CHAIN_VERSION, "genesis": approval_id}))


def digest(event: dict, n: int, prev: str) -> str:
    return sha256(canonical({"v": CHAIN_VERSION, "approvalId": event["approvalId"], "n": n, "at": event["at"],
                             "kind": event["kind"], "actor": event["actor"], "detail": event.get("detail", {}),
                             "prev": prev}))


def name(event: dict) -> str:
    n = (event.get("chain") or {}).get("n")
    place = f"#{n} " if n is not None else ""
    return f"event {place}{event['kind']} at {event['at']}"


def check_approval(approval_id: str, events: list[dict]) -> dict:
    """One approval's events (as exported) → {"ok", "events", "chained", "unchained_before", "starts_at", "broken"}:
    `broken` is the first broken link (None when the chain holds)."""
    chained = [e for e in events if e.get("chain")]
    unchained = [e for e in events if not e.get("chain")]
    out = {"ok": True, "events": len(events), "chained": len(chained), "unchained_before": None, "starts_at": None,
           "broken": None}

    def broken(message: str) -> dict:
        out.update(ok=False, broken=message)
        return out

    first_at = min((e["at"] for e in chained), default=None)
    for e in unchained:
        if first_at is not None and e["at"] >= first_at:
            return broken(f"{name(e)} carries no chain link, though the approval's chain had begun at {first_at}")
    if unchained:
        out["unchained_before"] = first_at or "(no chained event)"
    chained.sort(key=lambda e: e["chain"]["n"])
    previous = None
    for e in chained:
        link = e["chain"]
        n, prev = link.get("n"), link.get("prevDigest")
        if not isinstance(n, int) or n < 1:
            return broken(f"{name(e)} has no valid place in the chain ({n!r})")
        if previous is not None and n == previous["chain"]["n"]:
            return broken(f"two events claim place #{n}: {name(previous)} and {name(e)}")
        if digest(e, n, prev) != link.get("digest"):
            return broken(f"{name(e)} was altered or moved: its digest does not match its content and place")
        if previous is None:
            if n == 1 and prev != genesis(approval_id):
                return broken(f"{name(e)} is first in the chain but does not start from the approval's genesis value")
            if n > 1:
                out["starts_at"] = n
        else:
            expected = previous["chain"]["n"] + 1
            if n != expected:
                missing = f"#{expected}" if n == expected + 1 else f"#{expected}-#{n - 1}"
                return broken(f"event {missing} is missing (removed) between {name(previous)} and {name(e)}")
            if prev != previous["chain"]["digest"]:
                return broken(f"{name(e)} does not follow {name(previous)}: its prevDigest is not that event's digest")
        previous = e
    return out


def check(events: list[dict]) -> dict:
    """Every approval's result, by approval ID (in the order the export first names them)."""
    by_approval: dict[str, list[dict]] = {}
    for e in events:
        by_approval.setdefault(e["approvalId"], []).append(e)
    return {a: check_approval(a, evs) for a, evs in by_approval.items()}


def events_of(export) -> list[dict]:
    """The events of a saved export: one page, a list of pages, or a list of events."""
    if isinstance(export, dict):
        return list(export["items"])
    if isinstance(export, list) and all(isinstance(p, dict) and "items" in p for p in export):
        return [e for page in export for e in page["items"]]
    if isinstance(export, list):
        return export
    raise ValueError("not an audit export")


def fetch(base_url: str, token: str, frm: str | None, to: str | None) -> list[dict]:
    """Every page of the range, following `nextCursor`."""
    events, cursor = [], None
    while True:
        params = {k: v for k, v in {"from": frm, "to": to, "limit": "1000", "cursor": cursor}.items() if v}
        req = urllib.request.Request(f"{base_url.rstrip('/')}/api/v1/audit?{urllib.parse.urlencode(params)}",
                                     headers={"authorization": f"Bearer {token}", "accept": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            page = json.load(r)
        events.extend(page["items"])
        cursor = page.get("nextCursor")
        if not cursor:
            return events


def report(results: dict, out=sys.stdout) -> int:
    bad = 0
    for approval_id, r in results.items():
        notes = []
        if r["unchained_before"]:
            notes.append(f"{r['events'] - r['chained']} unchained before {r['unchained_before']}")
        if r["starts_at"]:
            notes.append(f"chain starts at #{r['starts_at']} (earlier events outside the export)")
        extra = f" ({'; '.join(notes)})" if notes else ""
        if r["ok"]:
            print(f"ok      {approval_id}: {r['chained']} chained{extra}", file=out)
        else:
            bad += 1
            print(f"BROKEN  {approval_id}: {r['broken']}{extra}", file=out)
    print(f"{len(results)} approvals, {bad} broken", file=out)
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("export", nargs="?", help="a saved JSON export")
    ap.add_argument("--url", help="ringi's public origin: fetch the export (token: RINGI_AUDIT_TOKEN or stdin)")
    ap.add_argument("--from", dest="frm", help="the range's start (RFC 3339), with --url")
    ap.add_argument("--to", help="the range's end (RFC 3339), with --url")
    args = ap.parse_args(argv)
    if bool(args.export) == bool(args.url):
        ap.error("name an export file or --url, one of them")
    try:
        if args.url:
            token = os.environ.get("RINGI_AUDIT_TOKEN") or sys.stdin.readline().strip()
            if not token:
                ap.error("an operator's bearer token in RINGI_AUDIT_TOKEN or on stdin")
            events = fetch(args.url, token, args.frm, args.to)
        else:
            with open(args.export, encoding="utf-8") as f:
                events = events_of(json.load(f))
    except (OSError, ValueError, KeyError) as e:
        print(f"audit: cannot read the export: {e}", file=sys.stderr)
        return 2
    return report(check(events))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""deploy/verify_audit.py offline: it hashes exactly as the worker does (the vector core's tests check too), holds
for an intact export, and names the first broken link of an approval whose export was edited, cut or reordered;
events from before the chain are reported as unchained, not as tampering. Against the real worker:
tests/e2e/test_audit.py."""
from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys

import pytest
from deploy_harness import ROOT

SCRIPT = ROOT / "deploy" / "verify_audit.py"
spec = importlib.util.spec_from_file_location("verify_audit", SCRIPT)
va = importlib.util.module_from_spec(spec)
spec.loader.exec_module(va)

A = "abcdefghijklmnopqrstuv"
USER = {"type": "user", "sub": "u-1", "display": "Ann \"A\" <ann@example.com>"}


def test_digests_match_the_vector_the_worker_is_tested_with():
    event = {"approvalId": A, "at": "2026-12-01T12:00:00.000Z", "kind": "voted", "actor": USER,
             "detail": {"verdict": "approve", "comment": "ok ✓"}}
    # core/src/domain/audit_chain.rs: digests_match_the_published_vector
    assert va.digest(event, 1, va.genesis(A)) == "b9eb3d077d852e24f23edd875ddcce511dc38b4f9b11e6e549871221e35822be"


def chain(approval_id=A, kinds=("registered", "mailed", "viewed", "voted", "decided")) -> list[dict]:
    events, prev = [], va.genesis(approval_id)
    for n, kind in enumerate(kinds, 1):
        e = {"approvalId": approval_id, "at": f"2026-12-01T12:00:0{n}.000Z", "kind": kind,
             "actor": USER if kind in ("viewed", "voted") else {"type": "system"}, "detail": {"n": n}}
        d = va.digest(e, n, prev)
        e["chain"] = {"n": n, "prevDigest": prev, "digest": d}
        events.append(e)
        prev = d
    return events


def test_an_intact_export_holds_in_any_line_order_and_with_other_approvals_between():
    events = chain() + chain("bbbbbbbbbbbbbbbbbbbbbb", ("registered",))
    events = [events[5], *events[:5][::-1]]
    results = va.check(events)
    assert all(r["ok"] for r in results.values()), results
    assert results[A]["chained"] == 5


def swap_places(events, i, j):
    """Reordered: events i and j exchange their places in the chain, each keeping its own content."""
    events[i]["chain"], events[j]["chain"] = events[j]["chain"], events[i]["chain"]


@pytest.mark.parametrize("tamper, named", [
    (lambda ev: ev[2]["detail"].update(n=99), "event #3 viewed at 2026-12-01T12:00:03.000Z was altered"),
    (lambda ev: ev[3].update(actor={"type": "system"}), "event #4 voted"),
    (lambda ev: ev.pop(2), "event #3 is missing (removed) between event #2 mailed"),
    (lambda ev: [ev.pop(1), ev.pop(1)], "event #2-#3 is missing"),
    # Reordered: the viewed and voted events swap places (each keeps its content, takes the other's place).
    (lambda ev: swap_places(ev, 2, 3), "event #3 voted at 2026-12-01T12:00:04.000Z was altered or moved"),
    (lambda ev: ev[1].pop("chain"), "event mailed at 2026-12-01T12:00:02.000Z carries no chain link"),
    (lambda ev: ev.append(copy.deepcopy(ev[4])), "two events claim place #5"),
    (lambda ev: ev[0]["chain"].update(prevDigest="0" * 64), "event #1 registered"),
])
def test_a_tampered_export_names_the_first_broken_link(tamper, named):
    events = chain()
    tamper(events)
    r = va.check(events)[A]
    assert not r["ok"] and named in r["broken"], r


def test_a_rewritten_link_is_caught_by_the_next_event():
    events = chain()
    events[2]["detail"]["n"] = 99
    events[2]["chain"]["digest"] = va.digest(events[2], 3, events[2]["chain"]["prevDigest"])
    r = va.check(events)[A]
    assert not r["ok"] and "event #4 voted" in r["broken"] and "does not follow event #3" in r["broken"], r


def test_events_from_before_the_chain_are_unchained_not_tampered_and_a_cut_range_starts_later():
    old = [{"approvalId": A, "at": "2026-11-30T00:00:00.000Z", "kind": "registered", "actor": {"type": "system"},
            "detail": {}}]
    r = va.check(old + chain())[A]
    assert r["ok"] and r["unchained_before"] == "2026-12-01T12:00:01.000Z", r
    r = va.check(chain()[2:])[A]
    assert r["ok"] and r["starts_at"] == 3, r


def test_the_command_reads_a_saved_export_and_exits_by_the_result(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"items": chain(), "nextCursor": None}))
    events = chain()
    del events[1]
    bad.write_text(json.dumps([{"items": events[:2]}, {"items": events[2:]}]))
    ok = subprocess.run([sys.executable, SCRIPT, good], capture_output=True, text=True)
    assert ok.returncode == 0 and f"ok      {A}: 5 chained" in ok.stdout, ok
    broken = subprocess.run([sys.executable, SCRIPT, bad], capture_output=True, text=True)
    assert broken.returncode == 1 and "event #2 is missing" in broken.stdout, broken
    neither = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    assert neither.returncode == 2

"""Signed decision receipts, on both backends (`backend`: D1, then DynamoDB): every decision's callback output
carries a compact JWS that ringi signed with its key ring, checked here with PyJWT (a JOSE library the worker does
not use) against the keys ringi publishes at /.well-known/jwks.json — who decided (and whose approvals made up the
quorum), the verdict, the time, the quorum progress, and the digests of the registration and of the task token;
ringi's own outcome on expiry carries one too, decided by ringi. A receipt altered in any part no longer verifies."""
import base64
import hashlib
import json
import subprocess
import sys

import jwt
import pytest
import requests

from support import ROOT

RECEIPT_TYP = "ringi-receipt+jwt"


def verify(base_url: str, receipt: str, leeway: int = 0) -> dict:
    """The receipt's claims, once its signature checks against the published key its header names (`leeway`: a
    receipt signed on the test clock, ahead of this host's, is issued that much in the future)."""
    header = jwt.get_unverified_header(receipt)
    assert header["typ"] == RECEIPT_TYP and header["alg"] == "ES256", header
    keys = requests.get(f"{base_url}/.well-known/jwks.json", timeout=10).json()["keys"]
    [key] = [k for k in keys if k["kid"] == header["kid"]]
    return jwt.decode(receipt, jwt.PyJWK(key).key, algorithms=["ES256"], options={"require": ["iss", "iat", "sub"]},
                      leeway=leeway)


def workflow_check():
    """docs/workflow/verify_receipt.py, the Lambda a workflow checks a receipt with."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("verify_receipt_lambda", ROOT / "docs/workflow/verify_receipt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def registration_digest(body: dict) -> str:
    """What ringi hashes: the registration's JSON as it read it (keys sorted, no whitespace)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def test_a_quorum_decision_carries_a_receipt_that_names_both_approvers(backend, workflows):
    api = backend.api
    arn, token = workflows.start_paused()
    body = {"taskToken": token, "approvers": [{"sub": "alice"}, {"sub": "bob"}], "title": "Deploy v2 to production",
            "timeoutSeconds": 600, "quorum": "all"}
    r = api.register(token, approvers=body["approvers"], quorum="all")
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    assert api.decide(approval_id, as_user="alice").status_code == 200
    assert api.decide(approval_id, as_user="bob").json()["status"] == "approved"
    out = json.loads(workflows.wait_done(arn)["output"])["approval"]  # the state's ResultPath

    claims = verify(backend.url, out["receipt"])
    assert claims["iss"] == backend.url and claims["sub"] == claims["approvalId"] == approval_id
    assert claims["decision"] == "approved" and claims["decidedBy"]["sub"] == "bob"
    assert [a["sub"] for a in claims["approvals"]] == ["alice"]
    assert claims["quorum"] == {"approvals": 2, "required": 2}
    assert claims["decidedAt"] == out["decidedAt"]
    assert claims["taskTokenSha256"] == hashlib.sha256(token.encode()).hexdigest()
    assert claims["registrationSha256"] == registration_digest(body)
    assert token not in json.dumps(claims)

    # The operator's command (deploy/verify_receipt.py) says the same, and refuses another task token.
    command = [sys.executable, str(ROOT / "deploy/verify_receipt.py"), "--issuer", backend.url, out["receipt"]]
    checked = subprocess.run([*command, "--task-token-sha256", claims["taskTokenSha256"]], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0 and json.loads(checked.stdout) == claims, checked.stderr
    other = subprocess.run([*command, "--task-token-sha256", "0" * 64], capture_output=True, text=True, timeout=60)
    assert other.returncode == 1 and "another task token" in other.stderr
    # The Lambda of docs/workflow's checked workflow accepts the state's $.approval as it is, and no other.
    check = workflow_check()
    assert check.handler({"issuer": backend.url, "approval": out}) == claims
    with pytest.raises(check.ReceiptRefused):
        check.handler({"issuer": backend.url, "approval": {**out, "approvalId": "z" * 22}})


def test_a_rejection_carries_a_receipt_and_tampering_is_detected(backend, workflows, tmp_path):
    api = backend.api
    approval_id, arn = backend.paused()
    assert api.decide(approval_id, decision="reject", as_user="alice").status_code == 200
    done = workflows.wait_done(arn)
    cause = json.loads(json.loads(done["output"])["rejection"]["Cause"])
    receipt = cause["receipt"]
    claims = verify(backend.url, receipt)
    assert claims["decision"] == "rejected" and claims["decidedBy"]["sub"] == "alice"
    assert claims["quorum"] == {"approvals": 0, "required": 1}

    head, payload, sig = receipt.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged["decision"] = "approved"
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    flipped = sig[:-2] + ("A" if sig[-2] != "A" else "B") + sig[-1]
    for altered in (f"{head}.{forged_payload}.{sig}", f"{head}.{payload}.{flipped}"):
        with pytest.raises(jwt.InvalidSignatureError):
            verify(backend.url, altered)
        refused = subprocess.run([sys.executable, str(ROOT / "deploy/verify_receipt.py"), "--issuer", backend.url],
                                 input=altered, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and "Signature verification failed" in refused.stderr, refused.stderr
    # Checked against keys that are not the signer's, it is refused.
    (tmp_path / "other.json").write_text(json.dumps({"keys": []}))
    wrong = subprocess.run([sys.executable, str(ROOT / "deploy/verify_receipt.py"), "--issuer", backend.url,
                            "--jwks", str(tmp_path / "other.json"), receipt], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 1 and "no published key" in wrong.stderr


def test_ringis_own_outcome_on_expiry_carries_a_receipt_signed_by_ringi(backend, workflows, clock):
    """Nobody completes the quorum in time: at the approvers' deadline (the test clock moved past it) the cron
    answers the task itself, and the output carries ringi's receipt — the same claims as a person's, decided by
    ringi's issuer for the reason `expiry`, with the quorum as far as it got."""
    api = backend.api
    arn, token = workflows.start_paused()
    approvers = [{"sub": "alice"}, {"sub": "bob"}]
    r = api.register(token, approvers=approvers, quorum="all", onExpiry="approve")
    assert r.status_code == 201, r.text
    approval_id = r.json()["id"]
    assert api.decide(approval_id, as_user="alice").json()["status"] == "pending"
    # timeoutSeconds 600: the approvers' deadline is half-way (the lead would take more), the task's at 600 s.
    clock.advance(400)
    backend.run_cron()
    done = workflows.wait_done(arn)
    assert done["status"] == "SUCCEEDED", done
    out = json.loads(done["output"])["approval"]
    assert (out["decision"], out["onExpiry"]) == ("expired", "approve")

    claims = verify(backend.url, out["receipt"], leeway=clock.seconds + 60)
    assert claims["iss"] == backend.url and claims["sub"] == claims["approvalId"] == approval_id
    assert claims["decidedBy"] == {"sub": backend.url, "email": None, "username": None}
    assert (claims["reason"], claims["decision"]) == ("expiry", "approved")
    assert claims["quorum"] == {"approvals": 1, "required": 2}
    assert claims["decidedAt"] == out["decidedAt"]
    assert claims["taskTokenSha256"] == hashlib.sha256(token.encode()).hexdigest()
    body = {"taskToken": token, "approvers": approvers, "title": "Deploy v2 to production", "timeoutSeconds": 600,
            "quorum": "all", "onExpiry": "approve"}
    assert claims["registrationSha256"] == registration_digest(body)
